"""What the S3 gateway keeps with each version it writes (docs/s3.md, "Metadata and
ETags"): user metadata (x-amz-meta-*) and the headers S3 answers as sent, per version,
copied or replaced by CopyObject; ETags that are MD5s as S3's (a multipart upload's
"-N"), Content-MD5 checked; versions written through the HTTP API keep their SHA-256
ETag. Driven by boto3, on both engines; multipart uploads across the nodes of a pg
cluster in the pg pass."""

import base64
import hashlib
import os

import harness
from harness import check, eq, expect, sha256
import test_s3 as s3t

SERVER_OPTS = {"args": ["--s3-listen", "127.0.0.1:0"]}


def _md5(b):
    return '"%s"' % hashlib.md5(b).hexdigest()


def _mp_etag(parts):
    return '"%s-%d"' % (hashlib.md5(b"".join(hashlib.md5(p).digest() for p in parts))
                        .hexdigest(), len(parts))


def test_metadata_round_trip_and_versions(srv):
    s3 = s3t._client(srv)
    s3t._bucket(srv, s3, "meta-b")
    v1 = s3.put_object(Bucket="meta-b", Key="m.txt", Body=b"one", ContentType="text/x-one",
                       Metadata={"Color": "blue", "owner": "ana e"},
                       CacheControl="max-age=60", ContentDisposition="inline",
                       ContentLanguage="fr", ContentEncoding="identity")
    h = s3.head_object(Bucket="meta-b", Key="m.txt")
    eq(h["Metadata"], {"color": "blue", "owner": "ana e"}, "HEAD: names lowercased")
    eq((h["ContentType"], h["CacheControl"], h["ContentDisposition"], h["ContentLanguage"],
        h["ContentEncoding"]), ("text/x-one", "max-age=60", "inline", "fr", "identity"),
       "the kept headers")
    g = s3.get_object(Bucket="meta-b", Key="m.txt")
    eq((g["Body"].read(), g["Metadata"], g["ETag"]), (b"one", h["Metadata"], _md5(b"one")),
       "GET: body, metadata, MD5 ETag")
    v2 = s3.put_object(Bucket="meta-b", Key="m.txt", Body=b"two", Metadata={"color": "red"})
    eq(s3.head_object(Bucket="meta-b", Key="m.txt")["Metadata"], {"color": "red"},
       "a new version has its own metadata")
    old = s3.get_object(Bucket="meta-b", Key="m.txt", VersionId=v1["VersionId"])
    eq((old["Body"].read(), old["Metadata"], old["ETag"], old["CacheControl"]),
       (b"one", {"color": "blue", "owner": "ana e"}, _md5(b"one"), "max-age=60"),
       "GET ?versionId of the older version answers its own metadata and ETag")
    eq(s3.head_object(Bucket="meta-b", Key="m.txt", VersionId=v2["VersionId"])["ETag"],
       _md5(b"two"), "HEAD ?versionId")
    s3.put_object(Bucket="meta-b", Key="none.txt", Body=b"x")
    eq(s3.head_object(Bucket="meta-b", Key="none.txt")["Metadata"], {}, "no metadata sent")


def test_copy_keeps_or_replaces_metadata(srv):
    s3 = s3t._client(srv)
    s3t._bucket(srv, s3, "copy-m")
    put = s3.put_object(Bucket="copy-m", Key="src", Body=b"source", ContentType="text/plain",
                        Metadata={"a": "1"})
    src = {"Bucket": "copy-m", "Key": "src"}
    c = s3.copy_object(Bucket="copy-m", Key="kept", CopySource=src)
    eq(c["CopyObjectResult"]["ETag"], put["ETag"], "a copy's ETag is its source's")
    h = s3.head_object(Bucket="copy-m", Key="kept")
    eq((h["Metadata"], h["ETag"], h["ContentType"]), ({"a": "1"}, put["ETag"], "text/plain"),
       "COPY (the default) keeps the metadata")
    s3.copy_object(Bucket="copy-m", Key="kept2", CopySource=src, MetadataDirective="COPY",
                   Metadata={"ignored": "yes"})
    eq(s3.head_object(Bucket="copy-m", Key="kept2")["Metadata"], {"a": "1"},
       "COPY ignores the request's metadata")
    s3.copy_object(Bucket="copy-m", Key="repl", CopySource=src, MetadataDirective="REPLACE",
                   Metadata={"b": "2"}, ContentType="text/x-new")
    h = s3.head_object(Bucket="copy-m", Key="repl")
    eq((h["Metadata"], h["ETag"], h["ContentType"]), ({"b": "2"}, put["ETag"], "text/x-new"),
       "REPLACE takes the request's metadata, the ETag stays")
    s3.copy_object(Bucket="copy-m", Key="src", CopySource=src, MetadataDirective="REPLACE",
                   Metadata={"c": "3"})
    eq(s3.head_object(Bucket="copy-m", Key="src")["Metadata"], {"c": "3"},
       "a copy onto itself with REPLACE changes only the metadata")


def test_metadata_limit_at_the_edge(srv):
    s3 = s3t._client(srv)
    s3t._bucket(srv, s3, "edge-m")
    # names and values count, as S3's 2 KB: 2048 bytes pass, 2049 do not
    s3.put_object(Bucket="edge-m", Key="ok", Body=b"x", Metadata={"k": "v" * 2047})
    eq(len(s3.head_object(Bucket="edge-m", Key="ok")["Metadata"]["k"]), 2047, "2048 bytes kept")
    eq(s3t._code(s3.put_object, Bucket="edge-m", Key="big", Body=b"x",
                 Metadata={"k": "v" * 2048}), "MetadataTooLarge", "2049 bytes")
    eq(s3t._code(s3.put_object, Bucket="edge-m", Key="big", Body=b"x",
                 Metadata={"a" * 40: "b" * 1000, "c" * 40: "d" * 969}),
       "MetadataTooLarge", "2049 bytes over two names")
    eq(s3t._code(s3.create_multipart_upload, Bucket="edge-m", Key="big",
                 Metadata={"k": "v" * 2048}), "MetadataTooLarge", "CreateMultipartUpload")
    s3.put_object(Bucket="edge-m", Key="src", Body=b"x")
    eq(s3t._code(s3.copy_object, Bucket="edge-m", Key="big", MetadataDirective="REPLACE",
                 CopySource={"Bucket": "edge-m", "Key": "src"}, Metadata={"k": "v" * 2048}),
       "MetadataTooLarge", "CopyObject REPLACE")
    check(srv.get_file(expect(srv.get("/v1/volumes", query={"prefix": "edge-m"}), 200)
                       .json()["volumes"][0]["id"], "big").status == 404, "nothing written")


def test_md5_etags_and_digests(srv):
    s3 = s3t._client(srv)
    vid = s3t._bucket(srv, s3, "md5-b")
    body = os.urandom(100000)
    put = s3.put_object(Bucket="md5-b", Key="d.bin", Body=body)
    eq(put["ETag"], _md5(body), "PutObject's ETag is hashlib.md5 of the body")
    lst = s3.list_objects_v2(Bucket="md5-b")["Contents"]
    eq([(o["Key"], o["ETag"]) for o in lst], [("d.bin", _md5(body))], "the listing's ETag")
    eq(s3.get_object(Bucket="md5-b", Key="d.bin", IfMatch=_md5(body))["Body"].read(), body,
       "If-Match the MD5")
    eq(s3t._code(s3.get_object, Bucket="md5-b", Key="d.bin", IfNoneMatch=_md5(body)), "304",
       "If-None-Match the MD5")
    eq(s3t._code(s3.get_object, Bucket="md5-b", Key="d.bin", IfMatch='"%s"' % sha256(body)),
       "PreconditionFailed", "the SHA-256 is not this object's ETag")
    # If-Match on a PUT as a header: Debian 12's botocore (1.29) has no IfMatch parameter
    # for PutObject and refuses it before sending
    def if_match(request, **kw):
        request.headers["If-Match"] = _md5(body)
    s3.meta.events.register("before-sign.s3.PutObject", if_match)
    try:
        s3.put_object(Bucket="md5-b", Key="d.bin", Body=b"new")
        eq(s3t._code(s3.put_object, Bucket="md5-b", Key="d.bin", Body=b"newer"),
           "PreconditionFailed", "conditional PUT on the MD5")
    finally:
        s3.meta.events.unregister("before-sign.s3.PutObject", if_match)
    # Content-MD5: checked (boto3 sends what it is given)
    good = base64.b64encode(hashlib.md5(b"checked").digest()).decode()
    s3.put_object(Bucket="md5-b", Key="c.txt", Body=b"checked", ContentMD5=good)
    eq(s3t._code(s3.put_object, Bucket="md5-b", Key="c2.txt", Body=b"other", ContentMD5=good),
       "BadDigest", "a Content-MD5 of other bytes")
    eq(s3t._code(s3.put_object, Bucket="md5-b", Key="c2.txt", Body=b"other",
                 ContentMD5="not-base64!"), "InvalidDigest", "a malformed Content-MD5")
    # written through the HTTP API: no MD5 kept, the ETag is the SHA-256
    expect(srv.put_file(vid, "http.txt", b"via http"), 200, 201)
    eq(s3.head_object(Bucket="md5-b", Key="http.txt")["ETag"], '"%s"' % sha256(b"via http"),
       "an HTTP API write's ETag is its SHA-256")
    lst = {o["Key"]: o["ETag"] for o in s3.list_objects_v2(Bucket="md5-b")["Contents"]}
    eq((lst["http.txt"], lst["c.txt"]), ('"%s"' % sha256(b"via http"), _md5(b"checked")),
       "the listing answers each its own")


def test_multipart_etag_metadata_and_part_digests(srv):
    s3 = s3t._client(srv)
    s3t._bucket(srv, s3, "mpm-b")
    up = s3.create_multipart_upload(Bucket="mpm-b", Key="o.bin", Metadata={"from": "create"},
                                    ContentType="application/x-mp")
    uid = up["UploadId"]
    parts = [os.urandom(200000), b"second part"]
    bad = base64.b64encode(hashlib.md5(b"nope").digest()).decode()
    eq(s3t._code(s3.upload_part, Bucket="mpm-b", Key="o.bin", UploadId=uid, PartNumber=1,
                 Body=parts[0], ContentMD5=bad), "BadDigest", "UploadPart's Content-MD5")
    etags = []
    for n, d in enumerate(parts, 1):
        md5 = base64.b64encode(hashlib.md5(d).digest()).decode()
        etags.append(s3.upload_part(Bucket="mpm-b", Key="o.bin", UploadId=uid, PartNumber=n,
                                    Body=d, ContentMD5=md5)["ETag"])
    eq(etags, [_md5(d) for d in parts], "UploadPart answers the part's MD5")
    lp = s3.list_parts(Bucket="mpm-b", Key="o.bin", UploadId=uid)["Parts"]
    eq([p["ETag"] for p in lp], etags, "ListParts' ETags")
    done = s3.complete_multipart_upload(
        Bucket="mpm-b", Key="o.bin", UploadId=uid,
        MultipartUpload={"Parts": [{"PartNumber": i + 1, "ETag": e}
                                   for i, e in enumerate(etags)]})
    eq(done["ETag"], _mp_etag(parts), "Complete: the MD5 of the parts' MD5s, -N")
    h = s3.head_object(Bucket="mpm-b", Key="o.bin")
    eq((h["ETag"], h["Metadata"], h["ContentType"]),
       (_mp_etag(parts), {"from": "create"}, "application/x-mp"),
       "Create's metadata lands with Complete")
    eq(s3.list_objects_v2(Bucket="mpm-b")["Contents"][0]["ETag"], _mp_etag(parts), "listed")
    again = s3.complete_multipart_upload(
        Bucket="mpm-b", Key="o.bin", UploadId=uid,
        MultipartUpload={"Parts": [{"PartNumber": i + 1, "ETag": e}
                                   for i, e in enumerate(etags)]})
    eq(again["ETag"], done["ETag"], "a second Complete answers the same ETag")


@harness.timeout(180)
def test_multipart_across_nodes():
    """Create on node 1, parts through nodes 2 and 3, ListParts and Complete on node 1."""
    url, nodes = harness.nodes(3, args=["--s3-listen", "127.0.0.1:0"])
    try:
        c = [s3t._client(n) for n in nodes]
        c[0].create_bucket(Bucket="nodes-mp")
        up = c[0].create_multipart_upload(Bucket="nodes-mp", Key="x/y.bin",
                                          Metadata={"made": "n0"})
        uid = up["UploadId"]
        parts = [os.urandom(300000), os.urandom(5000)]
        etags = [c[1].upload_part(Bucket="nodes-mp", Key="x/y.bin", UploadId=uid,
                                  PartNumber=1, Body=parts[0])["ETag"],
                 c[2].upload_part(Bucket="nodes-mp", Key="x/y.bin", UploadId=uid,
                                  PartNumber=2, Body=parts[1])["ETag"]]
        eq(etags, [_md5(d) for d in parts], "parts' ETags on nodes 2 and 3")
        for i in range(3):
            lp = c[i].list_parts(Bucket="nodes-mp", Key="x/y.bin", UploadId=uid)["Parts"]
            eq([(p["PartNumber"], p["Size"], p["ETag"]) for p in lp],
               [(1, len(parts[0]), etags[0]), (2, len(parts[1]), etags[1])],
               "ListParts on node %d" % (i + 1))
            ups = c[i].list_multipart_uploads(Bucket="nodes-mp").get("Uploads", [])
            eq([u["UploadId"] for u in ups], [uid], "ListMultipartUploads on node %d" % (i + 1))
        done = c[0].complete_multipart_upload(
            Bucket="nodes-mp", Key="x/y.bin", UploadId=uid,
            MultipartUpload={"Parts": [{"PartNumber": i + 1, "ETag": e}
                                       for i, e in enumerate(etags)]})
        eq(done["ETag"], _mp_etag(parts), "completed on node 1")
        for i in range(3):
            g = c[i].get_object(Bucket="nodes-mp", Key="x/y.bin")
            eq((g["Body"].read(), g["Metadata"], g["ETag"]),
               (b"".join(parts), {"made": "n0"}, _mp_etag(parts)), "read on node %d" % (i + 1))
        # an upload aborted on another node than its own is gone everywhere
        up2 = c[0].create_multipart_upload(Bucket="nodes-mp", Key="z.bin")["UploadId"]
        c[1].upload_part(Bucket="nodes-mp", Key="z.bin", UploadId=up2, PartNumber=1, Body=b"p")
        c[2].abort_multipart_upload(Bucket="nodes-mp", Key="z.bin", UploadId=up2)
        eq(s3t._code(c[0].list_parts, Bucket="nodes-mp", Key="z.bin", UploadId=up2),
           "NoSuchUpload", "aborted on node 3, gone on node 1")
    finally:
        harness.close_nodes(url, nodes)
