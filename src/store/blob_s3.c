/*
 * blob_s3.c — the blob store in an S3 bucket (`--blobs s3://BUCKET/PREFIX?...`).
 *
 * Keys: PREFIX/<first 2 hex>/<remaining 62 hex>, as the local layout. A writer
 * must know the hash before the key, so it spools the body to DATA/tmp (never
 * the whole body in memory), hashing it whole and in parts as it goes; commit
 * asks whether that content is stored (HEAD: the same content is stored once),
 * else PUTs it — one request up to PART_SIZE, a multipart upload of PART_SIZE
 * parts above, each part signed with its own hash — and returns only once S3
 * acknowledged it, so metadata that names it may commit afterwards.
 *
 * Reads are ranged GETs. A reader keeps a read-ahead buffer that doubles while
 * reads are sequential (up to AHEAD_MAX), so streaming a blob in small pieces
 * is not one request per piece.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <openssl/evp.h>
#include "store/blob.h"
#include "store/blob_s3.h"
#include "store/s3.h"

#define PART_SIZE ((int64_t)16 << 20)  /* S3 wants >= 5 MiB but for the last */
#define AHEAD_MIN ((size_t)256 << 10)
#define AHEAD_MAX ((size_t)8 << 20)
#define LIST_BODY_MAX ((size_t)8 << 20)
#define SPOOL_PREFIX "s3up_"

typedef struct s3_store {
	cof_blobstore base;
	cof_s3 *s3;
	cof_s3_url u;
	char *tmpdir;  /* DATA/tmp: spool files of uploads under way */
} s3_store;

struct cof_blob_writer {
	s3_store *st;
	int fd;
	int64_t size;
	EVP_MD_CTX *md;    /* the whole body: its key */
	EVP_MD_CTX *pmd;   /* the current part: what its PUT is signed with */
	int64_t pfill;
	char (*parts)[65];
	size_t nparts, cap;
	char tmp[4200];
};

/* The object key of content `sha`. */
static void key_of(const s3_store *st, const char *sha, char *out, size_t outsz)
{
	snprintf(out, outsz, "%s%s%.2s/%s", st->u.prefix, st->u.prefix[0] ? "/" : "", sha,
		 sha + 2);
}

/* ---------------------------------------------------------------- writing */

static int s3_begin(cof_blobstore *bs, cof_blob_writer **out, cof_err *err)
{
	s3_store *st = (s3_store *)bs;
	cof_blob_writer *w = cof_calloc(1, sizeof *w);
	char id[40];

	w->st = st;
	cof_id_new(SPOOL_PREFIX, id, sizeof id);
	snprintf(w->tmp, sizeof w->tmp, "%s/%s", st->tmpdir, id);
	w->fd = cof_blob_tmp_create(w->tmp, O_RDWR);
	w->md = EVP_MD_CTX_new();
	w->pmd = EVP_MD_CTX_new();
	if (w->fd < 0 || !w->md || !w->pmd || !EVP_DigestInit_ex(w->md, EVP_sha256(), NULL) ||
	    !EVP_DigestInit_ex(w->pmd, EVP_sha256(), NULL)) {
		int e = errno;
		if (w->fd >= 0) {
			close(w->fd);
			unlink(w->tmp);
		}
		EVP_MD_CTX_free(w->md);
		EVP_MD_CTX_free(w->pmd);
		free(w);
		return cof_blob_io_error(err, e, "storing the upload");
	}
	*out = w;
	return 0;
}

/* Ends the current part: its hash is kept for the part's signed PUT. */
static void part_end(cof_blob_writer *w)
{
	unsigned char md[32];
	unsigned int mdlen = 0;

	if (w->nparts == w->cap) {
		w->cap = w->cap ? w->cap * 2 : 8;
		w->parts = cof_realloc(w->parts, w->cap * sizeof *w->parts);
	}
	EVP_DigestFinal_ex(w->pmd, md, &mdlen);
	cof_hex(md, 32, w->parts[w->nparts++]);
	EVP_DigestInit_ex(w->pmd, EVP_sha256(), NULL);
	w->pfill = 0;
}

static int s3_write(cof_blob_writer *w, const void *data, size_t len, cof_err *err)
{
	const char *p;
	size_t left;

	if (cof_write_full(w->fd, data, len) < 0)
		return cof_blob_io_error(err, errno, "storing the upload");
	EVP_DigestUpdate(w->md, data, len);
	for (p = data, left = len; left;) {
		size_t n = (size_t)(PART_SIZE - w->pfill) < left ? (size_t)(PART_SIZE - w->pfill)
								   : left;
		EVP_DigestUpdate(w->pmd, p, n);
		w->pfill += (int64_t)n;
		p += n, left -= n;
		if (w->pfill == PART_SIZE)
			part_end(w);
	}
	w->size += (int64_t)len;
	return 0;
}

static void writer_free(cof_blob_writer *w)
{
	close(w->fd);
	unlink(w->tmp);
	EVP_MD_CTX_free(w->md);
	EVP_MD_CTX_free(w->pmd);
	free(w->parts);
	free(w);
}

static void s3_abort(cof_blob_writer *w)
{
	if (w)
		writer_free(w);
}

/* Gives up a multipart upload, so S3 keeps none of its parts. */
static void upload_abort(s3_store *st, const char *key, const char *id)
{
	cof_buf q = COF_BUF_INIT;
	cof_s3_req r = {.method = "DELETE", .key = key};
	cof_err e = {0};

	cof_buf_adds(&q, "uploadId=");
	cof_s3_escape(&q, id, 0);
	r.query = q.data;
	cof_s3_do(st->s3, &r, "abandoning an upload", &e);
	cof_err_clear(&e);
	cof_buf_release(&q);
}

/* PUTs each part from the spool file and completes the upload. */
static int put_parts(cof_blob_writer *w, const char *key, const char *id,
		     const char *doing, cof_err *err)
{
	cof_buf q = COF_BUF_INIT, xml = COF_BUF_INIT, ans = {NULL, 0, 0, 65536};
	char (*etags)[80] = cof_calloc(w->nparts, sizeof *etags);
	char sha[65];
	int rc = -1;

	for (size_t i = 0; i < w->nparts; i++) {
		int64_t off = (int64_t)i * PART_SIZE;
		cof_s3_req r = {.method = "PUT", .key = key, .payload_sha = w->parts[i],
				.up_fd = w->fd, .up_off = off, .bulk = 1,
				.up_len = w->size - off < PART_SIZE ? w->size - off : PART_SIZE};
		cof_buf_reset(&q);
		cof_buf_addf(&q, "partNumber=%zu&uploadId=", i + 1);
		cof_s3_escape(&q, id, 0);
		r.query = q.data;
		if (cof_s3_do(w->st->s3, &r, doing, err))
			goto out;
		if (r.status == 404 || !r.etag[0]) {
			cof_error(err, COF_EINTERNAL, "%s answered %ld without an ETag to part "
				  "%zu (%s)", cof_s3_name(w->st->s3), r.status, i + 1, doing);
			goto out;
		}
		memcpy(etags[i], r.etag, sizeof r.etag);
	}
	cof_buf_adds(&xml, "<CompleteMultipartUpload>");
	for (size_t i = 0; i < w->nparts; i++)
		cof_buf_addf(&xml, "<Part><PartNumber>%zu</PartNumber><ETag>%s</ETag></Part>",
			     i + 1, etags[i]);
	cof_buf_adds(&xml, "</CompleteMultipartUpload>");
	cof_sha256_hex(xml.data, xml.len, sha);
	cof_buf_reset(&q);
	cof_buf_adds(&q, "uploadId=");
	cof_s3_escape(&q, id, 0);
	/* S3 assembles the object before it answers: minutes for a large one (AWS
	 * sends whitespace meanwhile; a peer such as s3rver is silent), so the
	 * stall allowed grows with the parts, 10 s each, at least the usual 30 s. */
	cof_s3_req c = {.method = "POST", .key = key, .query = q.data, .payload_sha = sha,
			.up_mem = xml.data, .up_mem_len = xml.len, .body = &ans, .bulk = 1,
			.ctype = "application/xml",
			.stall_seconds = 30 + 10 * (long)w->nparts};
	if (cof_s3_do(w->st->s3, &c, doing, err))
		goto out;
	/* S3 may answer 200 and then an error in the body. */
	if (c.status != 200 || !ans.data || strstr(ans.data, "<Error>")) {
		cof_error(err, COF_EUNAVAILABLE, "%s did not complete the upload (%s): %s",
			  cof_s3_name(w->st->s3), doing, ans.data ? ans.data : "no answer");
		goto out;
	}
	rc = 0;
out:
	free(etags);
	cof_buf_release(&q);
	cof_buf_release(&xml);
	cof_buf_release(&ans);
	return rc;
}

/* A multipart upload of the spool file under `key`. */
static int put_multipart(cof_blob_writer *w, const char *key, const char *doing,
			 cof_err *err)
{
	cof_buf ans = {NULL, 0, 0, 65536};
	/* the object's type: libcurl would send a form's for an empty POST */
	cof_s3_req r = {.method = "POST", .key = key, .query = "uploads=", .body = &ans,
			.ctype = "application/octet-stream"};
	const char *from = NULL;
	char id[1024];
	int rc;

	if (cof_s3_do(w->st->s3, &r, doing, err)) {
		cof_buf_release(&ans);
		return -1;
	}
	from = ans.data;
	if (r.status != 200 || !ans.data || cof_s3_xml_tag(ans.data, &from, "UploadId", id,
							    sizeof id) || !id[0]) {
		cof_error(err, COF_EINTERNAL, "%s did not start an upload (%s): answered %ld",
			  cof_s3_name(w->st->s3), doing, r.status);
		cof_buf_release(&ans);
		return -1;
	}
	cof_buf_release(&ans);
	rc = put_parts(w, key, id, doing, err);
	if (rc)
		upload_abort(w->st, key, id);
	return rc;
}

static int s3_commit(cof_blob_writer *w, char sha[65], int64_t *size, cof_err *err)
{
	unsigned char md[32];
	unsigned int mdlen = 0;
	char key[400], doing[64];
	int rc = -1;

	EVP_DigestFinal_ex(w->md, md, &mdlen);
	cof_hex(md, 32, sha);
	*size = w->size;
	if (w->pfill > 0 || w->nparts == 0)
		part_end(w);
	key_of(w->st, sha, key, sizeof key);
	snprintf(doing, sizeof doing, "storing content %.12s", sha);
	cof_s3_req head = {.method = "HEAD", .key = key};
	if (cof_s3_do(w->st->s3, &head, doing, err))
		goto out;
	if (head.status == 200) {
		rc = 0;  /* the same content is stored already: once is enough */
		goto out;
	}
	if (w->size <= PART_SIZE) {
		cof_s3_req put = {.method = "PUT", .key = key, .payload_sha = sha,
				  .up_fd = w->fd, .up_len = w->size, .bulk = 1};
		if (cof_s3_do(w->st->s3, &put, doing, err))
			goto out;
		if (put.status != 200) {
			cof_error(err, COF_EINTERNAL, "%s answered %ld (%s)",
				  cof_s3_name(w->st->s3), put.status, doing);
			goto out;
		}
		rc = 0;
	} else {
		rc = put_multipart(w, key, doing, err);
	}
out:
	writer_free(w);
	return rc;
}

/* ---------------------------------------------------------------- reading */

typedef struct s3_reader {
	cof_blob_reader base;  /* first: the interface's view of it */
	s3_store *st;
	char key[400];
	char sha[65];
	int64_t size;
	char *buf;          /* read-ahead: [boff, boff + blen) of the blob */
	size_t blen, ahead;
	int64_t boff;
	int64_t next;       /* where the last read ended: the next is sequential */
} s3_reader;

static const cof_blob_reader_ops s3_reader_ops;

/* Opens content `sha` for ranged reads; COF_ENOTFOUND if it is not stored.
 * One request: a GET of the first AHEAD_MIN bytes tells the size (its
 * Content-Range) and fills the read-ahead, so a small blob is read with it. */
static int s3_open(cof_blobstore *bs, const char *sha, cof_blob_reader **out,
		   int64_t *size, cof_err *err)
{
	s3_store *st = (s3_store *)bs;
	s3_reader *r = cof_calloc(1, sizeof *r);
	char doing[64], range[48];

	r->st = st;
	memcpy(r->sha, sha, 64);
	key_of(st, sha, r->key, sizeof r->key);
	r->buf = cof_malloc(AHEAD_MIN);
	snprintf(doing, sizeof doing, "reading content %.12s", sha);
	snprintf(range, sizeof range, "bytes=0-%zu", AHEAD_MIN - 1);
	cof_s3_req g = {.method = "GET", .key = r->key, .range = range, .dst = r->buf,
			.dst_cap = AHEAD_MIN, .bulk = 1};
	if (cof_s3_do(st->s3, &g, doing, err))
		goto fail;
	if (g.status == 416) {
		/* no byte to give: an empty object (S3 refuses any range of it) */
		cof_s3_req head = {.method = "HEAD", .key = r->key};
		if (cof_s3_do(st->s3, &head, doing, err))
			goto fail;
		g.status = head.status, g.total = head.length, g.dst_got = 0;
	} else if (g.status == 200) {
		g.total = (int64_t)g.dst_got;  /* the whole object, the range ignored */
	}
	if (g.status == 404) {
		cof_error(err, COF_ENOTFOUND, "content %.12s is missing from the %s", sha,
			  cof_s3_name(st->s3));
		goto fail;
	}
	if (g.total < 0 || (int64_t)g.dst_got > g.total) {
		cof_error(err, COF_EINTERNAL, "%s answered %ld without the size of content %.12s",
			  cof_s3_name(st->s3), g.status, sha);
		goto fail;
	}
	r->base.ops = &s3_reader_ops;
	r->size = g.total;
	r->blen = g.dst_got, r->boff = 0;
	r->ahead = AHEAD_MIN;
	r->next = -1;
	*size = r->size;
	*out = &r->base;
	return 0;
fail:
	free(r->buf);
	free(r);
	return -1;
}

/* GETs exactly [off, off + len) of the blob into dst. */
static int get_range(s3_reader *r, int64_t off, size_t len, char *dst, cof_err *err)
{
	char range[64], doing[64];

	snprintf(range, sizeof range, "bytes=%lld-%lld", (long long)off,
		 (long long)(off + (int64_t)len - 1));
	snprintf(doing, sizeof doing, "reading content %.12s", r->sha);
	cof_s3_req g = {.method = "GET", .key = r->key, .range = range, .dst = dst,
			.dst_cap = len, .bulk = 1};
	if (cof_s3_do(r->st->s3, &g, doing, err))
		return -1;
	if (g.status == 404)
		return cof_error(err, COF_ENOTFOUND, "content %.12s is missing from the %s",
				 r->sha, cof_s3_name(r->st->s3));
	if (g.dst_got != len)
		return cof_error(err, COF_EINTERNAL, "content %.12s in the %s is shorter than "
				 "recorded", r->sha, cof_s3_name(r->st->s3));
	return 0;
}

/* Reads up to `len` bytes at `off` (fewer only at the end of the blob). */
static int s3_read_at(cof_blob_reader *base, int64_t off, void *out, size_t len,
		      size_t *got, cof_err *err)
{
	s3_reader *r = (s3_reader *)base;
	char *dst = out;
	size_t done = 0;

	*got = 0;
	if (off < 0)
		return cof_error(err, COF_EINTERNAL, "read before the start of content %.12s",
				 r->sha);
	if (off >= r->size)
		return 0;
	if ((int64_t)len > r->size - off)
		len = (size_t)(r->size - off);
	while (done < len) {
		int64_t pos = off + (int64_t)done;
		size_t want = len - done;
		if (pos >= r->boff && pos < r->boff + (int64_t)r->blen) {
			size_t n = (size_t)(r->boff + (int64_t)r->blen - pos);
			n = n < want ? n : want;
			memcpy(dst + done, r->buf + (pos - r->boff), n);
			done += n;
			continue;
		}
		if (want >= r->ahead) {  /* a large read needs no buffer in between */
			if (get_range(r, pos, want, dst + done, err))
				return -1;
			done += want;
			continue;
		}
		if (pos == r->next && r->ahead < AHEAD_MAX)
			r->ahead *= 2;
		size_t n = r->size - pos < (int64_t)r->ahead ? (size_t)(r->size - pos) : r->ahead;
		r->buf = cof_realloc(r->buf, r->ahead);
		r->blen = 0;
		if (get_range(r, pos, n, r->buf, err))
			return -1;
		r->boff = pos, r->blen = n;
	}
	r->next = off + (int64_t)len;
	*got = len;
	return 0;
}

/* S3 has no local file: downloads go through read_at. */
static int s3_reader_fd(cof_blob_reader *r)
{
	(void)r;
	return -1;
}

static void s3_reader_close(cof_blob_reader *base)
{
	s3_reader *r = (s3_reader *)base;

	if (!r)
		return;
	free(r->buf);
	free(r);
}

static const cof_blob_reader_ops s3_reader_ops = {s3_read_at, s3_reader_fd, s3_reader_close};

/* ------------------------------------------------------------ the rest */

static int s3_remove(cof_blobstore *bs, const char *sha, cof_err *err)
{
	s3_store *st = (s3_store *)bs;
	char key[400], doing[64];

	key_of(st, sha, key, sizeof key);
	snprintf(doing, sizeof doing, "deleting content %.12s", sha);
	cof_s3_req r = {.method = "DELETE", .key = key};
	return cof_s3_do(st->s3, &r, doing, err);  /* 404: absent is not an error */
}

static int hex_only(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

/* Calls fn for each object of one page of a listing that is a blob's key;
 * 1 when fn asked to stop. */
static int list_page(s3_store *st, const char *xml, cof_blob_each_fn fn, void *ctx)
{
	size_t plen = strlen(st->u.prefix) + (st->u.prefix[0] ? 1 : 0);
	const char *from = xml;
	char block[2048];

	while (!cof_s3_xml_tag(xml, &from, "Contents", block, sizeof block)) {
		const char *b = block;
		char key[400], size[32], when[64], sha[65];
		struct tm tm = {0};
		if (cof_s3_xml_tag(block, &b, "Key", key, sizeof key) ||
		    (b = block, cof_s3_xml_tag(block, &b, "Size", size, sizeof size)) ||
		    (b = block, cof_s3_xml_tag(block, &b, "LastModified", when, sizeof when)))
			continue;
		/* PREFIX/ab/<62 hex>: anything else in the bucket is not ours */
		const char *k = key + plen;
		if (strlen(key) != plen + 65 || k[2] != '/' || !hex_only(k, 2) ||
		    !hex_only(k + 3, 62))
			continue;
		snprintf(sha, sizeof sha, "%.2s%s", k, k + 3);
		int64_t mtime = strptime(when, "%Y-%m-%dT%H:%M:%S", &tm) ? (int64_t)timegm(&tm)
									  : 0;
		if (fn(ctx, sha, strtoll(size, NULL, 10), mtime))
			return 1;
	}
	return 0;
}

/* Lists the blobs with ListObjectsV2, a page at a time (continuation tokens). */
static int s3_each(cof_blobstore *bs, cof_blob_each_fn fn, void *ctx, cof_err *err)
{
	s3_store *st = (s3_store *)bs;
	cof_buf q = COF_BUF_INIT, ans = {NULL, 0, 0, LIST_BODY_MAX};
	char token[1024] = "", trunc[16];
	int rc = 0;

	for (;;) {
		cof_s3_req r = {.method = "GET", .body = &ans, .bulk = 1};
		const char *from;
		cof_buf_reset(&q);
		if (token[0]) {
			cof_buf_adds(&q, "continuation-token=");
			cof_s3_escape(&q, token, 0);
			cof_buf_adds(&q, "&");
		}
		cof_buf_adds(&q, "list-type=2");
		if (st->u.prefix[0]) {
			cof_buf_adds(&q, "&prefix=");
			cof_s3_escape(&q, st->u.prefix, 0);
			cof_buf_adds(&q, "%2F");
		}
		r.query = q.data;
		if ((rc = cof_s3_do(st->s3, &r, "listing the content", err)))
			break;
		if (r.status != 200 || !ans.data) {
			rc = cof_error(err, COF_EINTERNAL, "%s answered %ld to a listing (does the "
				       "bucket exist?)", cof_s3_name(st->s3), r.status);
			break;
		}
		if (list_page(st, ans.data, fn, ctx))
			break;
		from = ans.data;
		if (cof_s3_xml_tag(ans.data, &from, "IsTruncated", trunc, sizeof trunc) ||
		    strcmp(trunc, "true"))
			break;
		from = ans.data;
		if (cof_s3_xml_tag(ans.data, &from, "NextContinuationToken", token, sizeof token) ||
		    !token[0]) {
			rc = cof_error(err, COF_EINTERNAL, "%s cut a listing short without a "
				       "continuation token", cof_s3_name(st->s3));
			break;
		}
	}
	cof_buf_release(&q);
	cof_buf_release(&ans);
	return rc;
}

static void s3_close(cof_blobstore *bs)
{
	s3_store *st = (s3_store *)bs;

	if (!st)
		return;
	cof_s3_close(st->s3);
	free(st->tmpdir);
	free(st);
}

/* A listing of at most one key: the bucket exists and the key pair is accepted. */
static int probe(s3_store *st, cof_err *err)
{
	cof_buf ans = {NULL, 0, 0, 65536};
	cof_s3_req r = {.method = "GET", .query = "list-type=2&max-keys=1", .body = &ans};
	int rc = cof_s3_do(st->s3, &r, "checking the bucket", err);

	if (!rc && r.status == 404)
		rc = cof_error(err, COF_EVALIDATION, "%s: the bucket '%s' does not exist at %s",
			       cof_s3_name(st->s3), st->u.bucket, st->u.endpoint);
	cof_buf_release(&ans);
	return rc;
}

int cof_blobstore_s3_open(const char *url, const char *data_dir, cof_blobstore **out,
			  cof_err *err)
{
	const char *ak = getenv("AWS_ACCESS_KEY_ID"), *sk = getenv("AWS_SECRET_ACCESS_KEY");
	s3_store *st;
	cof_buf t = COF_BUF_INIT;
	cof_s3_url u;

	if (cof_s3_url_parse(url, &u, err))
		return -1;
	if (!ak || !*ak || !sk || !*sk)
		return cof_error(err, COF_EVALIDATION, "the blob store 's3://%s%s%s' needs "
				 "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment",
				 u.bucket, u.prefix[0] ? "/" : "", u.prefix);
	st = cof_calloc(1, sizeof *st);
	st->u = u;
	cof_buf_addf(&t, "%s/tmp", data_dir);
	st->tmpdir = cof_buf_detach(&t, NULL);
	if (mkdir(st->tmpdir, 0700) < 0 && errno != EEXIST) {
		int e = errno;
		s3_close(&st->base);
		return cof_error(err, COF_EINTERNAL, "cannot create '%s/tmp': %s", data_dir,
				 strerror(e));
	}
	cof_s3_open(&u, ak, sk, getenv("AWS_SESSION_TOKEN"), &st->s3, err);
	if (probe(st, err)) {
		s3_close(&st->base);
		return -1;
	}
	cof_blob_tmp_sweep(st->tmpdir, SPOOL_PREFIX);
	st->base.name = "s3";
	st->base.remote = 1;
	st->base.begin = s3_begin;
	st->base.write = s3_write;
	st->base.commit = s3_commit;
	st->base.abort = s3_abort;
	st->base.open = s3_open;
	st->base.remove = s3_remove;
	st->base.each = s3_each;
	st->base.close = s3_close;
	*out = &st->base;
	return 0;
}
