"""The S3 gateway (API.md "S3 gateway", docs/s3.md): cofferd --s3-listen, driven by boto3
and the AWS CLI. Buckets are volumes, keys are paths; every request is SigV4-signed by a
key's id with the key as secret; writes are changes of the volume seen by the HTTP API."""

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

import harness
from harness import check, contains, eq, expect, sha256

SERVER_OPTS = {"args": ["--s3-listen", "127.0.0.1:0"]}


def _boto():
    try:
        import boto3
        import botocore
        from botocore.config import Config
    except ImportError:
        harness.skip("boto3 is not installed (Debian: python3-boto3; scripts/deps --test)")
    return boto3, botocore, Config


def _endpoint(srv):
    m = re.findall(r"cofferd S3 gateway on (http://127\.0\.0\.1:\d+)", srv.log())
    check(m, "the S3 address is printed:\n" + srv.log()[-2000:])
    return m[-1]


def _key_id(key):
    return "k_" + hashlib.sha256(key.encode()).hexdigest()[:16]


def _client(srv, key=None, key_id=None):
    boto3, _, Config = _boto()
    key = key or srv.key
    return boto3.client("s3", endpoint_url=_endpoint(srv), region_name="us-east-1",
                        aws_access_key_id=key_id or _key_id(key), aws_secret_access_key=key,
                        config=Config(signature_version="s3v4",
                                      s3={"addressing_style": "path"},
                                      retries={"max_attempts": 1}))


def _code(fn, *a, **kw):
    """The S3 error code fn raises (asserts that it raises one)."""
    _, botocore, _ = _boto()
    try:
        fn(*a, **kw)
    except botocore.exceptions.ClientError as e:
        return e.response["Error"]["Code"]
    raise AssertionError("%s did not fail" % getattr(fn, "__name__", fn))


def _bucket(srv, s3, name):
    s3.create_bucket(Bucket=name)
    vols = expect(srv.get("/v1/volumes", query={"prefix": name}), 200).json()["volumes"]
    named = [v for v in vols if v["name"] == name]
    eq(len(named), 1, "CreateBucket made one volume named %s" % name)
    return named[0]["id"]


def test_put_get_list_delete(srv):
    s3 = _client(srv)
    vid = _bucket(srv, s3, "round-trip")
    names = [b["Name"] for b in s3.list_buckets()["Buckets"]]
    contains(names, "round-trip", "ListBuckets")
    put = s3.put_object(Bucket="round-trip", Key="docs/a.txt", Body=b"hello s3",
                        ContentType="text/plain")
    eq(put["ETag"], '"%s"' % hashlib.md5(b"hello s3").hexdigest(), "ETag is the body's MD5")
    big = os.urandom(300 * 1024)
    s3.put_object(Bucket="round-trip", Key="docs/big.bin", Body=big)
    s3.put_object(Bucket="round-trip", Key="top.txt", Body=b"top")
    ch = expect(srv.get("/v1/volumes/%s/changes" % vid), 200).json()["changes"]
    eq(ch[-1]["by"], {"keyId": _key_id(srv.key), "via": "s3"}, "a PutObject's by")
    got = s3.get_object(Bucket="round-trip", Key="docs/a.txt")
    eq(got["Body"].read(), b"hello s3", "GetObject body")
    eq(got["ContentType"], "text/plain", "Content-Type kept")
    eq(got["VersionId"], str(put["VersionId"]), "x-amz-version-id")
    eq(s3.get_object(Bucket="round-trip", Key="docs/big.bin")["Body"].read(), big,
       "a blob-sized object")
    head = s3.head_object(Bucket="round-trip", Key="docs/big.bin")
    eq(head["ContentLength"], len(big), "HeadObject size")
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket="round-trip")["Contents"]]
    eq(keys, ["docs/a.txt", "docs/big.bin", "top.txt"], "ListObjectsV2 keys, sorted")
    r = s3.list_objects_v2(Bucket="round-trip", Delimiter="/")
    eq([o["Key"] for o in r["Contents"]], ["top.txt"], "keys beside the common prefix")
    eq(r["CommonPrefixes"], [{"Prefix": "docs/"}], "CommonPrefixes")
    r = s3.list_objects_v2(Bucket="round-trip", Prefix="docs/b")
    eq([o["Key"] for o in r["Contents"]], ["docs/big.bin"], "a prefix ending mid-name")
    r = s3.list_objects_v2(Bucket="round-trip", Prefix="top.txt")
    eq([o["Key"] for o in r["Contents"]], ["top.txt"], "a prefix that is a whole key")
    eq(_code(s3.put_object, Bucket="round-trip", Key="top.txt/under", Body=b"x"),
       "OperationAborted", "a key under a key (folders are implicit)")
    # pages: max-keys and the continuation token, V2 and V1
    seen, token = [], None
    while True:
        kw = {"ContinuationToken": token} if token else {}
        r = s3.list_objects_v2(Bucket="round-trip", MaxKeys=1, **kw)
        seen += [o["Key"] for o in r.get("Contents", [])]
        if not r["IsTruncated"]:
            break
        token = r["NextContinuationToken"]
    eq(seen, keys, "V2 pages of one key")
    r = s3.list_objects(Bucket="round-trip", MaxKeys=2)
    eq(([o["Key"] for o in r["Contents"]], r["IsTruncated"]), (keys[:2], True), "V1 page")
    r = s3.list_objects(Bucket="round-trip", Marker=keys[1])
    eq([o["Key"] for o in r["Contents"]], keys[2:], "V1 after the marker")
    s3.delete_object(Bucket="round-trip", Key="top.txt")
    eq(_code(s3.get_object, Bucket="round-trip", Key="top.txt"), "NoSuchKey", "deleted")
    s3.delete_object(Bucket="round-trip", Key="never-there")   # 204, as S3
    r = s3.delete_objects(Bucket="round-trip", Delete={"Objects": [
        {"Key": "docs/a.txt"}, {"Key": "docs/big.bin"}, {"Key": "absent"}]})
    eq(sorted(d["Key"] for d in r["Deleted"]), ["absent", "docs/a.txt", "docs/big.bin"],
       "DeleteObjects")
    eq(s3.list_objects_v2(Bucket="round-trip")["KeyCount"], 0, "empty now")
    eq(expect(srv.get("/v1/volumes/%s" % vid), 200).json()["files"], 0, "the volume too")
    s3.delete_bucket(Bucket="round-trip")
    eq(_code(s3.head_bucket, Bucket="round-trip"), "404", "DeleteBucket")
    expect(srv.get("/v1/volumes/%s" % vid), 404)


def test_bucket_rules(srv):
    s3 = _client(srv)
    vid = _bucket(srv, s3, "rules-b")
    eq(_code(s3.create_bucket, Bucket="rules-b"), "BucketAlreadyOwnedByYou", "again")
    eq(_code(s3.create_bucket, Bucket="Bad_Name"), "InvalidBucketName", "a bad name")
    eq(_code(s3.list_objects_v2, Bucket="no-such-bucket"), "NoSuchBucket", "unknown")
    s3.put_object(Bucket="rules-b", Key="x", Body=b"x")
    eq(_code(s3.delete_bucket, Bucket="rules-b"), "BucketNotEmpty", "not empty")
    # a volume whose name is no bucket name is reached by its id
    other = srv.create_volume(name="Not A Bucket")["id"]
    s3.put_object(Bucket=other, Key="k", Body=b"by id")
    eq(srv.get_file(other, "k").body, b"by id", "bucket = volume id")
    contains([b["Name"] for b in s3.list_buckets()["Buckets"]], other, "listed by id")
    eq(s3.get_bucket_versioning(Bucket="rules-b")["Status"], "Enabled", "versioning")
    expect(srv.get("/v1/volumes/%s" % vid), 200)


def test_bad_signature_and_keys(srv):
    s3 = _client(srv)
    _bucket(srv, s3, "sig-b")
    bad = _client(srv, key=srv.key + "0", key_id=_key_id(srv.key))
    eq(_code(bad.list_buckets), "SignatureDoesNotMatch", "a wrong secret")
    eq(_code(bad.put_object, Bucket="sig-b", Key="x", Body=b"x"), "SignatureDoesNotMatch",
       "a wrong secret on a PUT")
    unknown = _client(srv, key="ck_" + "0" * 48)
    eq(_code(unknown.list_buckets), "InvalidAccessKeyId", "an unknown key id")
    # unsigned: S3's XML error, from a plain HTTP client
    try:
        urllib.request.urlopen(_endpoint(srv) + "/sig-b/x", timeout=30)
        raise AssertionError("an unsigned GET was served")
    except urllib.error.HTTPError as e:
        eq(e.code, 403, "unsigned")
        body = e.read().decode()
        contains(body, "<Code>AccessDenied</Code>", "the S3 error")
    # a minted key works at once; revoked, it does not
    k = expect(srv.post("/v1/keys", json={"name": "s3"}), 201).json()
    mine = _client(srv, key=k["key"], key_id=k["id"])
    mine.put_object(Bucket="sig-b", Key="minted", Body=b"m")
    expect(srv.delete("/v1/keys/%s" % k["id"]), 200, 204)
    eq(_code(mine.list_buckets), "InvalidAccessKeyId", "a revoked key")


def test_key_from_before_the_gateway():
    # a key minted before the S3 gateway existed has no sealed secret: S3 says what to
    # do, and its first HTTP use seals it (store/s3keys.c)
    if harness.ENGINE != "embedded":
        harness.skip("edits the SQLite metadata directly (the embedded engine only)")
    import sqlite3
    with harness.server(args=["--s3-listen", "127.0.0.1:0"]) as s:
        k = expect(s.post("/v1/keys", json={"name": "old"}), 201).json()
        s.stop()
        db = sqlite3.connect(os.path.join(s.data, "meta.db"))
        n = db.execute("DELETE FROM state WHERE kind = 's3key' AND id = ?",
                       (k["id"],)).rowcount
        db.commit()
        db.close()
        eq(n, 1, "the key was sealed when minted")
        s.start()
        old = _client(s, key=k["key"], key_id=k["id"])
        _, botocore, _ = _boto()
        try:
            old.list_buckets()
            raise AssertionError("an unsealed key was served")
        except botocore.exceptions.ClientError as e:
            eq(e.response["Error"]["Code"], "InvalidAccessKeyId", "not sealed yet")
            contains(e.response["Error"]["Message"], "use it once with the HTTP API",
                     "what to do")
        expect(s.get("/v1/volumes", key=k["key"]), 200)
        eq(old.list_buckets()["Buckets"], [], "sealed by its first HTTP use")
        _client(s).list_buckets()   # the admin key: sealed when the store opened


def test_read_only_key_refused(srv):
    s3 = _client(srv)
    vid = _bucket(srv, s3, "ro-b")
    s3.put_object(Bucket="ro-b", Key="r.txt", Body=b"read me")
    k = expect(srv.post("/v1/keys", json={"readOnly": True}), 201).json()
    ro = _client(srv, key=k["key"], key_id=k["id"])
    eq(ro.get_object(Bucket="ro-b", Key="r.txt")["Body"].read(), b"read me", "reads")
    eq(_code(ro.put_object, Bucket="ro-b", Key="w.txt", Body=b"no"), "AccessDenied", "PUT")
    eq(_code(ro.delete_object, Bucket="ro-b", Key="r.txt"), "AccessDenied", "DELETE")
    eq(_code(ro.create_bucket, Bucket="ro-new"), "AccessDenied", "CreateBucket")
    eq(srv.seq(vid), 1, "nothing changed")


def test_presigned_get(srv):
    s3 = _client(srv)
    _bucket(srv, s3, "pre-b")
    s3.put_object(Bucket="pre-b", Key="dir/p q.txt", Body=b"presigned")
    url = s3.generate_presigned_url("get_object", Params={"Bucket": "pre-b",
                                                          "Key": "dir/p q.txt"}, ExpiresIn=300)
    eq(urllib.request.urlopen(url, timeout=30).read(), b"presigned", "presigned GET")
    forged = re.sub(r"X-Amz-Signature=([0-9a-f])", lambda m: "X-Amz-Signature=" +
                    ("0" if m.group(1) != "0" else "1"), url)
    try:
        urllib.request.urlopen(forged, timeout=30)
        raise AssertionError("a forged presigned URL was served")
    except urllib.error.HTTPError as e:
        eq(e.code, 403, "forged")
        contains(e.read().decode(), "SignatureDoesNotMatch", "forged signature")


def test_range_and_conditions(srv):
    s3 = _client(srv)
    _bucket(srv, s3, "range-b")
    data = bytes(range(256)) * 100
    put = s3.put_object(Bucket="range-b", Key="r.bin", Body=data)
    r = s3.get_object(Bucket="range-b", Key="r.bin", Range="bytes=10-19")
    eq(r["Body"].read(), data[10:20], "Range")
    eq(r["ContentRange"], "bytes 10-19/%d" % len(data), "Content-Range")
    eq(s3.get_object(Bucket="range-b", Key="r.bin", Range="bytes=-5")["Body"].read(),
       data[-5:], "a suffix range")
    eq(_code(s3.get_object, Bucket="range-b", Key="r.bin", Range="bytes=999999-"),
       "InvalidRange", "past the end")
    eq(s3.get_object(Bucket="range-b", Key="r.bin", IfMatch=put["ETag"])["Body"].read(),
       data, "If-Match the ETag")
    eq(_code(s3.get_object, Bucket="range-b", Key="r.bin", IfMatch='"0"'),
       "PreconditionFailed", "If-Match another")
    eq(_code(s3.get_object, Bucket="range-b", Key="r.bin", IfNoneMatch=put["ETag"]),
       "304", "If-None-Match the ETag")
    # conditional PUT: If-None-Match * refuses an existing key
    req = {"Bucket": "range-b", "Key": "r.bin", "Body": b"over"}

    def add_header(request, **kw):
        request.headers["If-None-Match"] = "*"
    s3.meta.events.register("before-sign.s3.PutObject", add_header)
    try:
        eq(_code(s3.put_object, **req), "PreconditionFailed", "If-None-Match: * on a key")
        s3.put_object(Bucket="range-b", Key="fresh", Body=b"new")
    finally:
        s3.meta.events.unregister("before-sign.s3.PutObject", add_header)
    eq(s3.get_object(Bucket="range-b", Key="r.bin")["Body"].read(), data, "not replaced")
    # an old version by its versionId
    v1 = put["VersionId"]
    s3.put_object(Bucket="range-b", Key="r.bin", Body=b"second")
    eq(s3.get_object(Bucket="range-b", Key="r.bin", VersionId=v1)["Body"].read(), data,
       "versionId = coffer version")


def test_versions_listing_and_delete(srv):
    # what s3-tests' cleanup does: list versions, delete each by its versionId
    s3 = _client(srv)
    _bucket(srv, s3, "vers-b")
    for k in ("a", "b/c", "d"):
        s3.put_object(Bucket="vers-b", Key=k, Body=k.encode())
    s3.put_object(Bucket="vers-b", Key="a", Body=b"a2")
    r = s3.list_object_versions(Bucket="vers-b")
    got = [(v["Key"], v["VersionId"], v["IsLatest"]) for v in r["Versions"]]
    eq(got, [("a", "4", True), ("b/c", "2", True), ("d", "3", True)], "current versions")
    r = s3.list_object_versions(Bucket="vers-b", Delimiter="/", MaxKeys=1)
    eq(([v["Key"] for v in r.get("Versions", [])], r["IsTruncated"], r["NextKeyMarker"]),
       (["a"], True, "a"), "a page of versions")
    eq(_code(s3.delete_object, Bucket="vers-b", Key="a", VersionId="1"), "NotImplemented",
       "an old version stays")
    s3.delete_object(Bucket="vers-b", Key="a", VersionId="4")
    s3.delete_objects(Bucket="vers-b", Delete={"Objects": [
        {"Key": "b/c", "VersionId": "2"}, {"Key": "d", "VersionId": "3"}], "Quiet": True})
    eq(s3.list_object_versions(Bucket="vers-b").get("Versions", []), [], "all gone")
    s3.delete_bucket(Bucket="vers-b")


def test_http_and_s3_see_each_other(srv):
    s3 = _client(srv)
    vid = _bucket(srv, s3, "both-b")
    srv.put_ok(vid, "from-http.txt", b"via http")
    eq(s3.get_object(Bucket="both-b", Key="from-http.txt")["Body"].read(), b"via http",
       "an HTTP write seen by S3")
    before = srv.seq(vid)
    s3.put_object(Bucket="both-b", Key="from-s3.txt", Body=b"via s3")
    eq(srv.get_file(vid, "from-s3.txt").body, b"via s3", "an S3 write seen by HTTP")
    s3.copy_object(Bucket="both-b", Key="copy.txt",
                   CopySource={"Bucket": "both-b", "Key": "from-s3.txt"})
    s3.delete_object(Bucket="both-b", Key="from-http.txt")
    ch = expect(srv.get("/v1/volumes/%s/changes" % vid, query={"since": before}),
                200).json()["changes"]
    eq([(c["op"], c["path"]) for c in ch],
       [("write", "from-s3.txt"), ("write", "copy.txt"), ("remove", "from-http.txt")],
       "one change per S3 write, in the changes feed")
    eq(ch[1]["sha256"], sha256(b"via s3"), "CopyObject names the same content")


def test_ceiling_counts(srv):
    s3 = _client(srv)
    vid = srv.create_volume(name="ceil-b", ceiling=65536)["id"]
    s3.put_object(Bucket="ceil-b", Key="fits", Body=b"x" * 1000)
    eq(_code(s3.put_object, Bucket="ceil-b", Key="big", Body=b"y" * (100 * 1024)),
       "EntityTooLarge", "past the volume's ceiling")
    eq(srv.volume(vid)["files"], 1, "nothing landed")


def test_bad_content_sha256(srv):
    s3 = _client(srv)
    _bucket(srv, s3, "sha-b")

    # the body changed after signing (same length): its SHA-256 is not the signed one
    def swap(request, **kw):
        request.body = b"THE BODY"
    s3.meta.events.register("before-send.s3.PutObject", swap)
    try:
        eq(_code(s3.put_object, Bucket="sha-b", Key="k", Body=b"the body"),
           "XAmzContentSHA256Mismatch", "a body that is not what was signed")
    finally:
        s3.meta.events.unregister("before-send.s3.PutObject", swap)
    eq(_code(s3.head_object, Bucket="sha-b", Key="k"), "404", "nothing stored")


def test_multipart(srv):
    s3 = _client(srv)
    vid = _bucket(srv, s3, "mp-b")
    parts = [os.urandom(1024 * 1024 + 7), os.urandom(300000), b"tail"]
    up = s3.create_multipart_upload(Bucket="mp-b", Key="big/file.bin",
                                    ContentType="application/x-test")
    uid = up["UploadId"]
    etags = []
    for n, d in enumerate(parts, 1):
        etags.append(s3.upload_part(Bucket="mp-b", Key="big/file.bin", UploadId=uid,
                                    PartNumber=n, Body=d)["ETag"])
    eq(etags[0], '"%s"' % hashlib.md5(parts[0]).hexdigest(), "a part's ETag is its MD5")
    lp = s3.list_parts(Bucket="mp-b", Key="big/file.bin", UploadId=uid)
    eq([(p["PartNumber"], p["Size"]) for p in lp["Parts"]],
       [(i + 1, len(d)) for i, d in enumerate(parts)], "ListParts")
    ups = s3.list_multipart_uploads(Bucket="mp-b").get("Uploads", [])
    eq([(u["Key"], u["UploadId"]) for u in ups], [("big/file.bin", uid)],
       "ListMultipartUploads")
    check(srv.get_file(vid, "big/file.bin").status == 404, "nothing visible before Complete")
    bad = {"Parts": [{"PartNumber": 1, "ETag": etags[1]}]}
    eq(_code(s3.complete_multipart_upload, Bucket="mp-b", Key="big/file.bin",
             UploadId=uid, MultipartUpload=bad), "InvalidPart", "a wrong ETag")
    done = s3.complete_multipart_upload(
        Bucket="mp-b", Key="big/file.bin", UploadId=uid,
        MultipartUpload={"Parts": [{"PartNumber": i + 1, "ETag": e}
                                   for i, e in enumerate(etags)]})
    whole = b"".join(parts)
    eq(done["ETag"], '"%s-%d"' % (hashlib.md5(b"".join(hashlib.md5(d).digest() for d in parts))
                                 .hexdigest(), len(parts)), "the object's ETag: S3's -N form")
    got = srv.get_file(vid, "big/file.bin")
    eq(got.body, whole, "the parts joined, seen by HTTP")
    eq(got.header("Content-Type"), "application/x-test", "the upload's Content-Type")
    eq(srv.seq(vid), 1, "one change")
    eq(s3.list_multipart_uploads(Bucket="mp-b").get("Uploads", []), [], "completed")
    eq(_code(s3.list_parts, Bucket="mp-b", Key="big/file.bin", UploadId=uid),
       "NoSuchUpload", "gone once completed")
    # abort
    up2 = s3.create_multipart_upload(Bucket="mp-b", Key="aborted")["UploadId"]
    s3.upload_part(Bucket="mp-b", Key="aborted", UploadId=up2, PartNumber=1, Body=b"x")
    s3.abort_multipart_upload(Bucket="mp-b", Key="aborted", UploadId=up2)
    eq(_code(s3.upload_part, Bucket="mp-b", Key="aborted", UploadId=up2, PartNumber=2,
             Body=b"y"), "NoSuchUpload", "aborted")
    # boto3's own transfer manager, parts in parallel, both ways
    from boto3.s3.transfer import TransferConfig
    cfg = TransferConfig(multipart_threshold=1024 * 1024, multipart_chunksize=1024 * 1024,
                         max_concurrency=4)
    tmp = tempfile.mkdtemp(prefix="coffer-s3mp-")
    try:
        src, dst = os.path.join(tmp, "src"), os.path.join(tmp, "dst")
        data = os.urandom(3 * 1024 * 1024 + 12345)
        with open(src, "wb") as f:
            f.write(data)
        s3.upload_file(src, "mp-b", "tm/data.bin", Config=cfg)
        s3.download_file("mp-b", "tm/data.bin", dst, Config=cfg)
        with open(dst, "rb") as f:
            eq(sha256(f.read()), sha256(data), "upload_file / download_file")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_complete_twice_and_parts(srv):
    """A second CompleteMultipartUpload with the same parts answers the object again (as S3);
    GetObject/HeadObject ?partNumber=N answer part N's bytes and PartsCount."""
    s3 = _client(srv)
    vid = _bucket(srv, s3, "parts-b")
    parts = [os.urandom(1024 * 1024 + 3), os.urandom(200000), b"end"]
    uid = s3.create_multipart_upload(Bucket="parts-b", Key="p/obj")["UploadId"]
    listed = [{"PartNumber": n, "ETag": s3.upload_part(Bucket="parts-b", Key="p/obj",
                                                       UploadId=uid, PartNumber=n,
                                                       Body=d)["ETag"]}
              for n, d in enumerate(parts, 1)]
    first = s3.complete_multipart_upload(Bucket="parts-b", Key="p/obj", UploadId=uid,
                                         MultipartUpload={"Parts": listed})
    again = s3.complete_multipart_upload(Bucket="parts-b", Key="p/obj", UploadId=uid,
                                         MultipartUpload={"Parts": listed})
    eq(again["ETag"], first["ETag"], "the second Complete answers the object")
    eq(srv.seq(vid), 1, "the second Complete lands nothing")
    eq(_code(s3.complete_multipart_upload, Bucket="parts-b", Key="p/obj", UploadId=uid,
             MultipartUpload={"Parts": listed[:2]}), "InvalidPart",
       "a second Complete with other parts")
    eq(_code(s3.list_parts, Bucket="parts-b", Key="p/obj", UploadId=uid), "NoSuchUpload",
       "no parts are listed once completed")
    off = 0
    for n, d in enumerate(parts, 1):
        h = s3.head_object(Bucket="parts-b", Key="p/obj", PartNumber=n)
        eq(h["PartsCount"], 3, "HeadObject PartsCount")
        eq(h["ContentLength"], len(d), "HeadObject part %d's length" % n)
        g = s3.get_object(Bucket="parts-b", Key="p/obj", PartNumber=n)
        eq(g["PartsCount"], 3, "GetObject PartsCount")
        eq(g["ETag"], first["ETag"], "a part's read has the object's ETag")
        eq(g["ContentRange"], "bytes %d-%d/%d" % (off, off + len(d) - 1,
                                                  sum(map(len, parts))), "Content-Range")
        eq(g["Body"].read(), d, "part %d's bytes" % n)
        off += len(d)
    eq(_code(s3.get_object, Bucket="parts-b", Key="p/obj", PartNumber=4), "InvalidPart",
       "past the last part")
    eq(_code(s3.get_object, Bucket="parts-b", Key="p/obj", PartNumber=1, Range="bytes=0-1"),
       "InvalidRequest", "partNumber and Range together")
    # an object written whole has one part: 1 is all of it, 2 is none
    s3.put_object(Bucket="parts-b", Key="p/obj", Body=b"whole")
    g = s3.get_object(Bucket="parts-b", Key="p/obj", PartNumber=1)
    eq(g["Body"].read(), b"whole", "part 1 of an object written whole")
    check("PartsCount" not in g, "no PartsCount for an object written whole")
    eq(_code(s3.get_object, Bucket="parts-b", Key="p/obj", PartNumber=2), "InvalidPart",
       "part 2 of an object written whole")


def test_copy_range_and_presign_expiry(srv):
    """An improper x-amz-copy-source-range is 400 InvalidArgument (S3's answer, before
    UploadPartCopy's NotImplemented); a presigned URL's X-Amz-Expires outside 1..604800 is
    refused (AuthorizationQueryParametersError)."""
    _, botocore, _ = _boto()
    s3 = _client(srv)
    _bucket(srv, s3, "cr-b")
    s3.put_object(Bucket="cr-b", Key="src", Body=b"0123456789")
    uid = s3.create_multipart_upload(Bucket="cr-b", Key="dst")["UploadId"]
    for rng in ["0-2", "bytes=0", "bytes=hello-world", "bytes=0-bar", "bytes=hello-",
                "bytes=0-2,3-5", "bytes=5-2"]:
        try:
            s3.upload_part_copy(Bucket="cr-b", Key="dst", UploadId=uid, PartNumber=1,
                                CopySource={"Bucket": "cr-b", "Key": "src"},
                                CopySourceRange=rng)
            raise AssertionError("copy range %r was taken" % rng)
        except botocore.exceptions.ClientError as e:
            eq((e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"]["Code"]),
               (400, "InvalidArgument"), "copy range %r" % rng)
    # botocore's CRT signer (when python3-awscrt imports, as on a fresh Debian) refuses an
    # expiry of 0 or less itself: the URL is signed for 60 s and its X-Amz-Expires is then
    # changed, which the gateway must refuse for the range before it looks at the signature
    signed = s3.generate_presigned_url("get_object", Params={"Bucket": "cr-b", "Key": "src"},
                                       ExpiresIn=60)
    check("X-Amz-Expires=60&" in signed or signed.endswith("X-Amz-Expires=60"),
          "the URL carries X-Amz-Expires=60: " + signed)
    for exp in (0, -7, 604801):
        url = signed.replace("X-Amz-Expires=60", "X-Amz-Expires=%d" % exp)
        try:
            urllib.request.urlopen(url, timeout=30)
            raise AssertionError("X-Amz-Expires=%d was served" % exp)
        except urllib.error.HTTPError as e:
            body = e.read().decode()
            contains(body, "AuthorizationQueryParametersError", "X-Amz-Expires=%d" % exp)
            contains(body, "604800", "the limit is named")
    url = s3.generate_presigned_url("get_object", Params={"Bucket": "cr-b", "Key": "src"},
                                    ExpiresIn=604800)
    eq(urllib.request.urlopen(url, timeout=30).read(), b"0123456789", "a week is served")


def test_bucket_names_and_request_ids(srv):
    """CreateBucket refuses what S3 refuses ('-.', '.-', an IP address); an error's
    RequestId is its x-amz-request-id."""
    s3 = _client(srv)
    for bad in ("foo-.bar", "foo.-bar", "192.168.5.123"):
        eq(_code(s3.create_bucket, Bucket=bad), "InvalidBucketName", bad)
    _bucket(srv, s3, "ok.name-1")
    got = {}
    s3.meta.events.register("after-call.s3.GetObject",
                            lambda http_response, **kw: got.update(body=http_response.content))
    _, botocore, _ = _boto()
    try:
        s3.get_object(Bucket="ok.name-1", Key="absent")
        raise AssertionError("GetObject of an absent key answered")
    except botocore.exceptions.ClientError as e:
        rid = e.response["ResponseMetadata"]["RequestId"]
    check(re.fullmatch(r"[0-9a-f]{16}", rid or ""), "x-amz-request-id: %r" % rid)
    contains(got["body"].decode(), "<RequestId>%s</RequestId>" % rid, "the error's RequestId")


def test_copy_source_conditions_and_response_headers(srv):
    """CopyObject's x-amz-copy-source-if-* hold on the source (412 otherwise);
    GetObject's response-* arguments set the answer's headers."""
    s3 = _client(srv)
    vid = _bucket(srv, s3, "cc-b")
    etag = s3.put_object(Bucket="cc-b", Key="src", Body=b"source")["ETag"]
    src = {"Bucket": "cc-b", "Key": "src"}
    eq(_code(s3.copy_object, Bucket="cc-b", Key="d1", CopySource=src,
             CopySourceIfMatch='"%s"' % ("0" * 64)), "PreconditionFailed", "if-match")
    eq(_code(s3.copy_object, Bucket="cc-b", Key="d2", CopySource=src,
             CopySourceIfNoneMatch=etag), "PreconditionFailed", "if-none-match")
    import datetime
    future = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=1)
    eq(_code(s3.copy_object, Bucket="cc-b", Key="d3", CopySource=src,
             CopySourceIfModifiedSince=future), "PreconditionFailed", "if-modified-since")
    eq(srv.seq(vid), 1, "no copy was made")
    s3.copy_object(Bucket="cc-b", Key="d4", CopySource=src, CopySourceIfMatch=etag,
                   CopySourceIfUnmodifiedSince=future)
    eq(srv.get_file(vid, "d4").body, b"source", "copied when the conditions hold")
    g = s3.get_object(Bucket="cc-b", Key="src", ResponseContentType="foo/bar",
                      ResponseContentDisposition="attachment; filename=x.txt",
                      ResponseCacheControl="no-cache", ResponseContentLanguage="eo",
                      ResponseContentEncoding="identity", ResponseExpires="123")
    h = g["ResponseMetadata"]["HTTPHeaders"]
    eq((h["content-type"], h["content-disposition"], h["cache-control"],
        h["content-language"], h["content-encoding"], h["expires"]),
       ("foo/bar", "attachment; filename=x.txt", "no-cache", "eo", "identity",
        "Thu, 01 Jan 1970 00:02:03 GMT"),   # boto3 sends 123 as an HTTP date
       "response-* headers")
    eq(g["Body"].read(), b"source", "the body")


def _signed_get(srv, path, query):
    """GET path?query signed with SigV4 by hand (for arguments Debian's boto3 does not
    send): (status, body text)."""
    _, botocore, _ = _boto()
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    url = _endpoint(srv) + path + "?" + urllib.parse.urlencode(query)
    req = AWSRequest(method="GET", url=url, headers={"x-amz-content-sha256": sha256(b"")})
    SigV4Auth(Credentials(_key_id(srv.key), srv.key), "s3", "us-east-1").add_auth(req)
    try:
        with urllib.request.urlopen(urllib.request.Request(
                url, headers=dict(req.headers.items())), timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_list_buckets_pages(srv):
    """ListBuckets takes max-buckets, continuation-token and prefix."""
    s3 = _client(srv)
    for name in ("lb-a", "lb-b", "lb-c", "other-d"):
        s3.create_bucket(Bucket=name)
    seen, token = [], None
    while True:
        q = {"max-buckets": "2", "prefix": "lb-"}
        if token:
            q["continuation-token"] = token
        status, body = _signed_get(srv, "/", q)
        eq(status, 200, "ListBuckets page: " + body)
        names = re.findall(r"<Name>([^<]*)</Name>", body)
        check(len(names) <= 2, "a page holds at most max-buckets: %s" % body)
        seen += names
        m = re.search(r"<ContinuationToken>([^<]*)</ContinuationToken>", body)
        token = m and m.group(1)
        if not token:
            break
    eq(seen, ["lb-a", "lb-b", "lb-c"], "the pages, in order, with the prefix")
    status, body = _signed_get(srv, "/", {"max-buckets": "2", "continuation-token": "x"})
    eq(status, 400, "a token this gateway did not make")
    contains(body, "InvalidArgument", "a token this gateway did not make")
    status, body = _signed_get(srv, "/", {"max-buckets": "0"})
    contains(body, "max-buckets", "max-buckets 0")


@harness.timeout(240)   # six CLI runs: each starts a Python; slow on a loaded machine
def test_aws_cli(srv):
    aws = shutil.which("aws")
    if not aws:
        harness.skip("the AWS CLI is not installed (Debian: awscli)")
    s3 = _client(srv)
    vid = _bucket(srv, s3, "cli-b")
    tmp = tempfile.mkdtemp(prefix="coffer-s3cli-")
    try:
        env = dict(os.environ, AWS_ACCESS_KEY_ID=_key_id(srv.key),
                   AWS_SECRET_ACCESS_KEY=srv.key, AWS_DEFAULT_REGION="us-east-1",
                   AWS_CONFIG_FILE=os.path.join(tmp, "none"),
                   AWS_SHARED_CREDENTIALS_FILE=os.path.join(tmp, "none"))
        src = os.path.join(tmp, "src")
        os.makedirs(os.path.join(src, "sub"))
        # big.bin: past the CLI's 8 MiB multipart threshold, so it goes in parts
        files = {"a.txt": b"alpha", "sub/b.bin": os.urandom(70000), "sub/c.txt": b"c",
                 "big.bin": os.urandom(9 * 1024 * 1024 + 5)}
        for p, d in files.items():
            with open(os.path.join(src, p), "wb") as f:
                f.write(d)
            # LastModified has whole seconds (as S3's), and sync re-sends a file whose
            # mtime is later: a file written in the second of its upload would go again
            # (CI's make asan saw it). Files a user syncs were written before.
            old = time.time() - 60
            os.utime(os.path.join(src, p), (old, old))

        def run(*args):
            p = subprocess.run([aws, "--endpoint-url", _endpoint(srv), "s3"] + list(args),
                               env=env, capture_output=True, timeout=120 * harness.SCALE)
            check(p.returncode == 0, "aws s3 %s: %s %s" % (" ".join(args), p.stdout.decode(),
                                                         p.stderr.decode()))
            return p.stdout.decode()
        run("sync", src, "s3://cli-b/tree")
        for p, d in files.items():
            eq(srv.get_file(vid, "tree/" + p).body, d, "synced " + p)
        out = run("ls", "s3://cli-b/tree/")
        contains(out, "a.txt", "aws s3 ls")
        contains(out, "PRE sub/", "aws s3 ls folders")
        dst = os.path.join(tmp, "dst")
        run("cp", "--recursive", "s3://cli-b/tree", dst)
        for p, d in files.items():
            with open(os.path.join(dst, p), "rb") as f:
                eq(f.read(), d, "copied back " + p)
        eq(run("sync", src, "s3://cli-b/tree").strip(), "", "a second sync copies nothing")
        run("rm", "s3://cli-b/tree/a.txt")
        expect(srv.get_file(vid, "tree/a.txt"), 404)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_bad_flag():
    exe = harness.Server(start=False).binary()
    p = subprocess.run([exe, "--data", "/nonexistent/x", "--s3-listen", "nope"],
                       capture_output=True, timeout=30)
    eq(p.returncode, 2, "exit code of a bad --s3-listen")
    contains(p.stderr.decode(), "--s3-listen", "message")


def _tree(root):
    """A small tree: 3 files, one in a subfolder, one past 8 MiB (so it goes in parts)."""
    files = {"a.txt": b"alpha\n", "sub/b.bin": os.urandom(70000),
             "big.bin": os.urandom(9 * 1024 * 1024 + 11)}
    for p, d in files.items():
        os.makedirs(os.path.dirname(os.path.join(root, p)), exist_ok=True)
        with open(os.path.join(root, p), "wb") as f:
            f.write(d)
    return files


@harness.timeout(300)
def test_rclone(srv):
    rclone = shutil.which("rclone")
    if not rclone:
        harness.skip("rclone is not installed (Debian: rclone; scripts/deps --test)")
    s3 = _client(srv)
    vid = _bucket(srv, s3, "rc-b")
    tmp = tempfile.mkdtemp(prefix="coffer-s3rc-")
    try:
        env = dict(os.environ, RCLONE_CONFIG=os.path.join(tmp, "none.conf"),
                   RCLONE_CONFIG_CF_TYPE="s3", RCLONE_CONFIG_CF_PROVIDER="Other",
                   RCLONE_CONFIG_CF_ENV_AUTH="false",
                   RCLONE_CONFIG_CF_ACCESS_KEY_ID=_key_id(srv.key),
                   RCLONE_CONFIG_CF_SECRET_ACCESS_KEY=srv.key,
                   RCLONE_CONFIG_CF_ENDPOINT=_endpoint(srv),
                   RCLONE_CONFIG_CF_REGION="us-east-1",
                   RCLONE_CONFIG_CF_FORCE_PATH_STYLE="true")
        env.pop("AWS_CA_BUNDLE", None)   # rclone refuses a CA bundle on plain http
        src, back = os.path.join(tmp, "src"), os.path.join(tmp, "back")
        files = _tree(src)

        def run(*args):
            # multipart from 5 MiB: the 9 MiB file goes in two parts
            p = subprocess.run([rclone, "--s3-upload-cutoff", "5M", "--s3-chunk-size", "5M",
                                "--low-level-retries", "1", "--retries", "1"] + list(args),
                               env=env, capture_output=True, timeout=240 * harness.SCALE)
            check(p.returncode == 0, "rclone %s: %s %s" % (" ".join(args), p.stdout.decode(),
                                                         p.stderr.decode()))
            return p.stdout.decode() + p.stderr.decode()
        run("copy", src, "cf:rc-b/tree")
        for p, d in files.items():
            eq(srv.get_file(vid, "tree/" + p).body, d, "rclone copied " + p)
        run("copy", "cf:rc-b/tree", back)
        for p, d in files.items():
            with open(os.path.join(back, p), "rb") as f:
                eq(sha256(f.read()), sha256(d), "rclone copied back " + p)
        out = run("check", src, "cf:rc-b/tree")
        contains(out, "0 differences found", "rclone check")
        contains(out, "3 matching files", "rclone check")
        # rclone reads MD5s: the ETags of single PUTs, and its own x-amz-meta-md5chksum
        # of the multipart 9 MiB file (kept as user metadata), so check compares them
        sums = dict(reversed(line.split(None, 1)) for line in
                    run("md5sum", "cf:rc-b/tree").splitlines() if re.match(r"[0-9a-f]{32} ", line))
        eq(sums, {p: hashlib.md5(d).hexdigest() for p, d in files.items()}, "rclone md5sum")
        # the same, bytes compared
        out = run("check", "--download", src, "cf:rc-b/tree")
        contains(out, "0 differences found", "rclone check --download")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@harness.timeout(300)
def test_s3fs(srv):
    s3fs = shutil.which("s3fs")
    if not s3fs:
        harness.skip("s3fs is not installed (Debian: s3fs; scripts/deps --test)")
    harness.needs_root("s3fs mounts with FUSE")
    if not os.path.exists("/dev/fuse"):
        harness.skip("no /dev/fuse: s3fs cannot mount here")
    s3 = _client(srv)
    vid = _bucket(srv, s3, "fs-b")
    srv.put_file(vid, "sub/from-http.txt", b"written by HTTP\n")
    tmp = tempfile.mkdtemp(prefix="coffer-s3fs-")
    mnt = os.path.join(tmp, "mnt")
    os.makedirs(mnt)
    pw = os.path.join(tmp, "passwd")
    with open(pw, "w") as f:
        f.write("%s:%s\n" % (_key_id(srv.key), srv.key))
    os.chmod(pw, 0o600)
    p = subprocess.run([s3fs, "fs-b", mnt, "-o", "url=" + _endpoint(srv), "-o",
                        "use_path_request_style", "-o", "passwd_file=" + pw, "-o",
                        "endpoint=us-east-1", "-o", "sigv4", "-o",
                        "retries=1", "-o", "logfile=" + os.path.join(tmp, "s3fs.log"),
                        "-o", "dbglevel=info"],
                       capture_output=True, timeout=60 * harness.SCALE)
    mounted = False
    try:
        check(p.returncode == 0, "s3fs: %s %s" % (p.stdout.decode(), p.stderr.decode()))
        harness.until(lambda: os.path.ismount(mnt), "s3fs mounted %s" % mnt)
        mounted = True
        with open(os.path.join(mnt, "sub", "from-http.txt"), "rb") as f:
            eq(f.read(), b"written by HTTP\n", "s3fs reads what HTTP wrote")
        data = os.urandom(300000)
        for p in ("w.bin", "sub/w.bin"):
            with open(os.path.join(mnt, p), "wb") as f:
                f.write(data)
            with open(os.path.join(mnt, p), "rb") as f:
                eq(f.read(), data, "s3fs reads back what it wrote to " + p)
            eq(srv.get_file(vid, p).body, data, "HTTP sees what s3fs wrote to " + p)
        eq(sorted(os.listdir(mnt)), ["sub", "w.bin"], "s3fs lists the bucket")
        eq(sorted(os.listdir(os.path.join(mnt, "sub"))), ["from-http.txt", "w.bin"],
           "s3fs lists a folder")
        os.unlink(os.path.join(mnt, "w.bin"))
        expect(srv.get_file(vid, "w.bin"), 404)
    finally:
        if mounted or os.path.ismount(mnt):
            subprocess.run(["fusermount", "-u", mnt], capture_output=True, timeout=60)
        log = os.path.join(tmp, "s3fs.log")
        if os.path.exists(log) and not mounted:
            print(open(log, errors="replace").read()[-3000:])
        shutil.rmtree(tmp, ignore_errors=True)
