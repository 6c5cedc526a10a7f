/*
 * s3_multipart.c — the S3 gateway's multipart uploads: create, upload part,
 * complete, abort, list parts, list uploads.
 *
 * An upload lives in the metadata store, so every node serves it (docs/s3.md):
 * a state record of kind "s3upload" (id: the upload id; org, volume, key,
 * content type, initiated, the user metadata sent: s3_meta.c), and one of
 * kind "s3part" per part (id "UPLOAD.NNNNN": size, MD5, SHA-256). A part's
 * bytes are content of the shared blob store, stored as they stream in
 * (cof_upload_hold) on whichever node gets them, and kept from the collector
 * by pins of holder "s3:UPLOAD" until the upload is completed or aborted;
 * then the pins go and the collector takes the parts after its grace period.
 * Complete streams the parts, in the order the client lists them, from the
 * blob store into one cof_upload and lands it with cof_file_put: one change,
 * ceiling and conditions as any PutObject. Its ETag is S3's: the MD5 of the
 * parts' MD5s, "-N". Uploads neither completed nor aborted are removed after
 * a week, when the next one is created.
 *
 * A completed upload leaves a state record in the store (kind "s3parts", one
 * per volume and key, replaced by the next completion): the object's version
 * and ETag, a hash of the parts list, and the parts' sizes. It answers a
 * second Complete of the same upload (S3 answers the object again) and
 * GetObject ?partNumber=N (that part's bytes, PartsCount), on every node.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "http/s3_int.h"
#include "store/meta.h"
#include "store/store.h"
#include "util/s3xml.h"

#define UPLOAD_TTL (7 * 24 * 3600)
#define PART_MAX (5LL << 30)
#define PARTS_KIND "s3parts"
#define UPLOAD_KIND "s3upload"
#define PART_KIND "s3part"

/* An upload id: 32 lowercase hex digits (what we make; anything else is not one). */
static int id_ok(const char *id)
{
	return id && strlen(id) == 32 && strspn(id, "0123456789abcdef") == 32;
}

/* The name its parts are held under (cof_upload_hold). */
static void holder_of(const char *id, char out[48])
{
	snprintf(out, 48, "s3:%s", id);
}

/* Upload `id`'s record when it is this request's (same organization, volume
 * and key): 0 with *info (owned), 1 when there is none, -1 (failed: the
 * store could not be read). */
static int upload_find(s3req *r, const char *id, json_t **info)
{
	cof_staterow row;
	cof_err err = {0};
	int got;

	*info = NULL;
	if (!id_ok(id))
		return 1;
	if ((got = cof_meta_state_get(s3srv->st->meta, UPLOAD_KIND, id, &row, &err)) < 0) {
		s3_fail_err(r, &err, NULL);
		return -1;
	}
	if (!got)
		return 1;
	json_t *j = strcmp(row.org, r->who.org) ? NULL : json_loads(row.body ?: "", 0, NULL);
	free(row.body);
	const char *vol = json_string_value(json_object_get(j, "vol"));
	const char *key = json_string_value(json_object_get(j, "key"));
	if (vol && key && !strcmp(vol, r->vol) && r->key && !strcmp(key, r->key)) {
		*info = j;
		return 0;
	}
	json_decref(j);
	return 1;
}

/* upload_find, failing the request (NoSuchUpload) when it is not there. */
static int upload_load(s3req *r, const char *id, json_t **info)
{
	int f = upload_find(r, id, info);

	if (f > 0)
		s3_fail(r, 404, "NoSuchUpload", "The specified upload does not exist (or was "
			"completed or aborted)");
	return f ? -1 : 0;
}

/* A part as its record says. */
typedef struct part {
	int n;
	int64_t size, at;
	char md5[33], sha[65];
} part;

typedef struct parts {
	part *v;
	size_t n;
	int failed;
} parts;

/* cof_state_fn: one "s3part" record into a parts list (ids sort by number). */
static int part_row(void *ctx, const cof_staterow *row)
{
	parts *p = ctx;
	json_t *j = json_loads(row->body ? row->body : "", 0, NULL);
	const char *md5 = json_string_value(json_object_get(j, "md5"));
	const char *sha = json_string_value(json_object_get(j, "sha256"));
	const char *dot = strchr(row->id, '.');

	if (md5 && sha && dot && strlen(md5) == 32 && strlen(sha) == 64 &&
	    p->n < COF_S3_PARTS_MAX) {
		part *q = &p->v[p->n++];
		q->n = atoi(dot + 1);
		q->size = json_integer_value(json_object_get(j, "size"));
		q->at = json_integer_value(json_object_get(j, "at"));
		memcpy(q->md5, md5, 33);
		memcpy(q->sha, sha, 65);
	}
	json_decref(j);
	return 0;
}

/* The parts of upload `id`, in number order: 0 (p->v owned), or -1 (failed). */
static int parts_load(s3req *r, const char *id, parts *p)
{
	char prefix[40];
	cof_err err = {0};

	memset(p, 0, sizeof *p);
	if (!(p->v = cof_malloc(COF_S3_PARTS_MAX * sizeof *p->v))) {
		s3_fail(r, 500, "InternalError", "out of memory");
		return -1;
	}
	snprintf(prefix, sizeof prefix, "%s.", id);
	if (cof_meta_state_scan(s3srv->st->meta, PART_KIND, prefix, part_row, p, &err)) {
		free(p->v);
		p->v = NULL;
		s3_fail_err(r, &err, NULL);
		return -1;
	}
	return 0;
}

static const part *part_find(const parts *p, int n)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->v[i].n == n)
			return &p->v[i];
	return NULL;
}

/* Removes upload `id` of `org` from the store: its parts' pins (the collector
 * takes their bytes after its grace period), their records, its record. A
 * failure is said on stderr: the week's sweep removes it again. */
static void upload_drop(const char *org, const char *id)
{
	char holder[48], prefix[40], pid[48];
	cof_err err = {0};
	parts p = {0};
	cof_meta *m = s3srv->st->meta;

	holder_of(id, holder);
	snprintf(prefix, sizeof prefix, "%s.", id);
	if (!(p.v = cof_malloc(COF_S3_PARTS_MAX * sizeof *p.v)) ||
	    cof_held_release(s3srv->st, org, holder, &err) ||
	    cof_meta_state_scan(m, PART_KIND, prefix, part_row, &p, &err))
		goto out;
	for (size_t i = 0; i < p.n; i++) {
		snprintf(pid, sizeof pid, "%s.%05d", id, p.v[i].n);
		if (cof_meta_state_delete(m, PART_KIND, pid, &err))
			goto out;
	}
	cof_meta_state_delete(m, UPLOAD_KIND, id, &err);
out:
	if (err.code)
		fprintf(stderr, "cofferd: S3 multipart upload %s: cannot remove it: %s\n", id,
			err.msg);
	cof_err_clear(&err);
	free(p.v);
}

typedef struct stale {
	char (*ids)[33];
	char (*orgs)[48];
	size_t n;
} stale;

/* cof_state_fn: an upload initiated more than UPLOAD_TTL ago. */
static int stale_row(void *ctx, const cof_staterow *row)
{
	stale *s = ctx;
	json_t *j = json_loads(row->body ? row->body : "", 0, NULL);
	int64_t at = json_integer_value(json_object_get(j, "initiated"));

	json_decref(j);
	if (s->n < 64 && id_ok(row->id) && cof_now() - at > UPLOAD_TTL) {
		snprintf(s->ids[s->n], 33, "%s", row->id);
		snprintf(s->orgs[s->n++], 48, "%s", row->org);
	}
	return s->n >= 64;
}

/* Removes (some of the) uploads older than UPLOAD_TTL. */
static void sweep(void)
{
	char ids[64][33], orgs[64][48];
	stale s = {ids, orgs, 0};
	cof_err err = {0};

	if (cof_meta_state_scan(s3srv->st->meta, UPLOAD_KIND, "", stale_row, &s, &err))
		cof_err_clear(&err);
	for (size_t i = 0; i < s.n; i++)
		upload_drop(orgs[i], ids[i]);
}

/* The id of (vol, key)'s "s3parts" record: 40 hex digits of SHA-256(vol "/" key)
 * (a state record's id is short; volumes are unique, so keys of two
 * organizations never meet). */
static void parts_id(const char *vol, const char *key, char id[41])
{
	unsigned char h[32];
	char hex[65];
	cof_buf b = COF_BUF_INIT;

	cof_buf_addf(&b, "%s/%s", vol, key);
	EVP_Digest(b.data, b.len, h, NULL, EVP_sha256(), NULL);
	cof_buf_release(&b);
	cof_hex(h, 32, hex);
	memcpy(id, hex, 40);
	id[40] = '\0';
}

/* The record of (vol, key)'s last completed upload (owned), or NULL. */
static json_t *parts_record(const char *org, const char *vol, const char *key)
{
	char id[41];
	cof_staterow row;
	cof_err err = {0};
	json_t *j = NULL;

	parts_id(vol, key, id);
	if (cof_meta_state_get(s3srv->st->meta, PARTS_KIND, id, &row, &err) != 1) {
		cof_err_clear(&err);
		return NULL;
	}
	if (!strcmp(row.org, org) && row.body)
		j = json_loads(row.body, 0, NULL);
	free(row.body);
	const char *v = json_string_value(json_object_get(j, "vol"));
	const char *k = json_string_value(json_object_get(j, "key"));
	if (!v || !k || strcmp(v, vol) || strcmp(k, key)) {
		json_decref(j);
		return NULL;
	}
	return j;
}

int64_t s3mp_parts_of(const char *org, const char *vol, const char *key, int64_t version,
		      int64_t size, int64_t **sizes)
{
	json_t *j = parts_record(org, vol, key), *a = json_object_get(j, "parts");
	size_t n = json_array_size(a);
	int64_t sum = 0;

	*sizes = NULL;
	if (!j || json_integer_value(json_object_get(j, "version")) != version || !n ||
	    n > COF_S3_PARTS_MAX) {
		json_decref(j);
		return 0;
	}
	*sizes = cof_malloc(n * sizeof **sizes);
	for (size_t i = 0; i < n; i++)
		sum += (*sizes)[i] = json_integer_value(json_array_get(a, i));
	json_decref(j);
	if (sum != size) {      /* not this content: no parts to tell */
		free(*sizes);
		*sizes = NULL;
		return 0;
	}
	return (int64_t)n;
}

enum MHD_Result s3mp_create(s3req *r)
{
	char id[33];
	unsigned char rnd[16];
	const char *ct = s3_hdr(r, "Content-Type");
	cof_err err = {0};
	json_t *meta;

	if (s3_resolve(r) || !(meta = s3_meta_from_request(r)))
		return s3_send_error(r);
	if (cof_path_check(r->key, strlen(r->key), "key", &(const char *){NULL}, &err) ||
	    (ct && *ct && cof_media_type_check(ct, "Content-Type", &err))) {
		json_decref(meta);
		s3_fail_err(r, &err, NULL);
		return s3_send_error(r);
	}
	sweep();
	if (cof_random(rnd, sizeof rnd)) {
		json_decref(meta);
		s3_fail(r, 500, "InternalError", "no randomness available");
		return s3_send_error(r);
	}
	cof_hex(rnd, sizeof rnd, id);
	json_t *info = json_pack("{s:s, s:s, s:s, s:I, s:o}", "vol", r->vol, "key", r->key,
				 "contentType", ct && *ct ? ct : "", "initiated",
				 (json_int_t)cof_now(), "s3meta", meta);
	char *text = info ? json_dumps(info, JSON_COMPACT) : NULL;
	cof_staterow row = {.body = text};
	json_decref(info);
	snprintf(row.kind, sizeof row.kind, "%s", UPLOAD_KIND);
	snprintf(row.id, sizeof row.id, "%s", id);
	snprintf(row.org, sizeof row.org, "%s", r->who.org);
	if (!text || cof_meta_state_put(s3srv->st->meta, &row, &err)) {
		free(text);
		if (!text)
			s3_fail(r, 500, "InternalError", "out of memory");
		else
			s3_fail_err(r, &err, NULL);
		return s3_send_error(r);
	}
	free(text);
	cof_buf b = COF_BUF_INIT;
	cof_buf_adds(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<InitiateMultipartUploadResult "
		     "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">");
	s3_xml_el(&b, "Bucket", r->bucket);
	s3_xml_el(&b, "Key", r->key);
	s3_xml_el(&b, "UploadId", id);
	cof_buf_adds(&b, "</InitiateMultipartUploadResult>");
	return s3_send_xml(r, 200, &b);
}

int s3mp_part_number(s3req *r)
{
	char b[16];
	const char *p = s3_arg(r, "partNumber", b, sizeof b);
	char *end;
	long v = p ? strtol(p, &end, 10) : 0;

	if (!p || !*p || *end || v < 1 || v > COF_S3_PARTS_MAX) {
		s3_fail(r, 400, "InvalidArgument", "Part number must be an integer between 1 "
			"and 10000, inclusive");
		return -1;
	}
	return (int)v;
}

int s3mp_part_begin(s3req *r)
{
	char id[40];
	json_t *info = NULL;
	cof_err err = {0};
	const char *cl = s3_hdr(r, "Content-Length");
	int n;

	if (s3_resolve(r) || (n = s3mp_part_number(r)) < 0)
		return -1;
	if (cl && strtoll(cl, NULL, 10) > PART_MAX) {
		s3_fail(r, 400, "EntityTooLarge", "a part is at most 5 GiB");
		return -1;
	}
	if (!s3_arg(r, "uploadId", id, sizeof id))
		id[0] = '\0';
	if (upload_load(r, id, &info))
		return -1;
	json_decref(info);
	if (s3_md5_begin(r))
		return -1;
	/* the bytes go to the shared blob store as they come (no room check: a
	 * part is no content of the volume until Complete, which checks it) */
	if (cof_upload_begin(s3srv->st, PART_MAX, &r->up, &err)) {
		s3_fail_err(r, &err, NULL);
		return -1;
	}
	r->part = n;
	snprintf(r->part_upload, sizeof r->part_upload, "%s", id);
	return 0;
}

enum MHD_Result s3mp_part_end(s3req *r)
{
	char holder[48], sha[65], pid[48], etag[48];
	int64_t size = 0;
	cof_err err = {0};
	cof_upload *up = r->up;
	json_t *info = NULL;

	r->up = NULL;
	holder_of(r->part_upload, holder);
	if (cof_upload_hold(up, r->who.org, holder, sha, &size, &err)) {
		s3_fail_err(r, &err, NULL);
		return s3_send_error(r);
	}
	json_t *b = json_pack("{s:I, s:s, s:s, s:I}", "size", (json_int_t)size, "md5",
			      r->md5_hex, "sha256", sha, "at", (json_int_t)cof_now());
	char *text = b ? json_dumps(b, JSON_COMPACT) : NULL;
	cof_staterow row = {.body = text};
	json_decref(b);
	snprintf(row.kind, sizeof row.kind, "%s", PART_KIND);
	snprintf(pid, sizeof pid, "%s.%05d", r->part_upload, r->part);
	snprintf(row.id, sizeof row.id, "%s", pid);
	snprintf(row.org, sizeof row.org, "%s", r->who.org);
	int rc = text ? cof_meta_state_put(s3srv->st->meta, &row, &err) : -1;
	free(text);
	if (rc) {
		if (text)
			s3_fail_err(r, &err, NULL);
		else
			s3_fail(r, 500, "InternalError", "out of memory");
		return s3_send_error(r);
	}
	/* completed or aborted meanwhile (on any node): this part is nobody's */
	if (upload_load(r, r->part_upload, &info)) {
		if (r->e.status == 404) {
			cof_held_release(s3srv->st, r->who.org, holder, &err);
			cof_meta_state_delete(s3srv->st->meta, PART_KIND, pid, &err);
			cof_err_clear(&err);
		}
		return s3_send_error(r);
	}
	json_decref(info);
	struct MHD_Response *resp;
	s3_send_empty(r, 200, &resp);
	snprintf(etag, sizeof etag, "\"%s\"", r->md5_hex);
	if (resp)
		MHD_add_response_header(resp, "ETag", etag);
	return s3_queue(r, 200, resp);
}

/* An ETag as a client lists it ("\"hex\"" or hex): where its hex starts, and
 * its length in *n. */
static const char *etag_trim(const char *given, size_t *n)
{
	*n = strlen(given);
	while (*n && (*given == '"' || *given == ' '))
		given++, (*n)--;
	while (*n && (given[*n - 1] == '"' || given[*n - 1] == ' '))
		(*n)--;
	return given;
}

static int etag_is(const char *given, const char *hex)
{
	size_t n;

	given = etag_trim(given, &n);
	return n == strlen(hex) && !strncasecmp(given, hex, n);
}

/* The SHA-256 of a Complete's parts list ("N hex\n" each, ETags lowercased),
 * to know a second Complete of the same parts. */
static void list_hash(const int *nums, char **etags, size_t n, char out[65])
{
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	unsigned char h[32];
	char line[96];

	EVP_DigestInit_ex(c, EVP_sha256(), NULL);
	for (size_t i = 0; i < n; i++) {
		size_t l;
		const char *e = etag_trim(etags[i], &l);
		int w = snprintf(line, sizeof line, "%d %.*s\n", nums[i], (int)(l > 64 ? 64 : l),
				 e);
		for (int k = 0; k < w; k++)
			line[k] = (char)tolower((unsigned char)line[k]);
		EVP_DigestUpdate(c, line, (size_t)w);
	}
	EVP_DigestFinal_ex(c, h, NULL);
	EVP_MD_CTX_free(c);
	cof_hex(h, 32, out);
}

/* A Complete of an upload that is no longer here: when the record of this
 * key's last completion is this upload's, with the same parts, the object is
 * answered again (1); otherwise 0 (NoSuchUpload). */
static int completed_again(s3req *r, const char *id, const int *nums, char **etags, size_t n,
			   json_t **out)
{
	char lh[65];
	json_t *j = parts_record(r->who.org, r->vol, r->key);
	const char *up = json_string_value(json_object_get(j, "upload"));
	const char *was = json_string_value(json_object_get(j, "list"));

	list_hash(nums, etags, n, lh);
	if (!up || strcmp(up, id)) {
		json_decref(j);
		return 0;
	}
	if (!was || strcmp(was, lh)) {
		json_decref(j);
		s3_fail(r, 400, "InvalidPart", "One or more of the specified parts could not be "
			"found: upload %s was completed with other parts", id);
		return -1;
	}
	*out = json_pack("{s:O?, s:O?, s:O?}", "sha256", json_object_get(j, "sha256"), "version",
			 json_object_get(j, "version"), "etag", json_object_get(j, "etag"));
	json_decref(j);
	return 1;
}

/* Keeps the completed upload's record (see the top of this file): a failure
 * is said on stderr, the object being landed already. */
static void parts_keep(s3req *r, const char *id, const int *nums, char **etags,
		       const int64_t *sizes, size_t n, json_t *out)
{
	char pid[41], lh[65];
	json_t *a = json_array();

	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_integer(sizes[i]));
	list_hash(nums, etags, n, lh);
	parts_id(r->vol, r->key, pid);
	json_t *b = json_pack("{s:s, s:s, s:s, s:O?, s:O?, s:O?, s:s, s:o}", "upload", id, "vol",
			      r->vol, "key", r->key, "version", json_object_get(out, "version"),
			      "sha256", json_object_get(out, "sha256"), "etag",
			      json_object_get(out, "etag"), "list", lh, "parts", a);
	cof_meta_state_save(s3srv->st->meta, PARTS_KIND, pid, r->who.org, "", 0, b,
			    "S3 multipart upload");
	json_decref(b);
}

/* The Complete's answer: the object's Location, Bucket, Key and ETag. */
static enum MHD_Result complete_answer(s3req *r, json_t *out)
{
	cof_buf b = COF_BUF_INIT;

	cof_buf_adds(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		     "<CompleteMultipartUploadResult "
		     "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">");
	cof_buf_adds(&b, "<Location>/");
	s3_xml_esc(&b, r->bucket);
	cof_buf_adds(&b, "/");
	s3_xml_esc(&b, r->key);
	cof_buf_adds(&b, "</Location>");
	s3_xml_el(&b, "Bucket", r->bucket);
	s3_xml_el(&b, "Key", r->key);
	const char *tag = json_string_value(json_object_get(out, "etag"));
	cof_buf_addf(&b, "<ETag>&quot;%s&quot;</ETag></CompleteMultipartUploadResult>",
		     tag ? tag : json_string_value(json_object_get(out, "sha256")) ?: "");
	return s3_write_answer(r, out, &b);
}

enum MHD_Result s3mp_complete(s3req *r)
{
	char id[40], hex[65];
	json_t *info = NULL, *out = NULL;
	int *nums = NULL;
	char **etags = NULL;
	size_t n = 0;
	const char *why;
	cof_err err = {0};
	cof_upload *up = NULL;
	int64_t total = 0, *sizes = NULL;
	cof_cond c;
	int created;
	char mp_etag[S3_ETAG_MAX], *text = NULL;
	parts ps = {0};

	if (s3_resolve(r))
		return s3_send_error(r);
	if (!s3_arg(r, "uploadId", id, sizeof id))
		id[0] = '\0';   /* NoSuchUpload below */
	if (cof_s3xml_complete(r->body.data ? r->body.data : "", r->body.len, &nums, &etags, &n,
			       &why)) {
		s3_fail(r, 400, "MalformedXML", "The XML you provided was not well-formed or did "
			"not validate against our published schema: %s", why);
		return s3_send_error(r);
	}
	int f = upload_find(r, id, &info);
	if (f) {
		int again = f > 0 ? completed_again(r, id, nums, etags, n, &out) : -1;
		free(nums);
		cof_s3xml_free(etags, n);
		if (again > 0)
			return complete_answer(r, out);
		if (!again)
			upload_load(r, id, &info);
		return s3_send_error(r);
	}
	if (parts_load(r, id, &ps))
		goto fail;
	sizes = cof_malloc((n ? n : 1) * sizeof *sizes);
	/* S3's ETag of the whole: the MD5 of the parts' binary MD5s, "-N" */
	EVP_MD_CTX *mm = EVP_MD_CTX_new();
	if (!sizes || !mm || EVP_DigestInit_ex(mm, EVP_md5(), NULL) != 1) {
		EVP_MD_CTX_free(mm);
		s3_fail(r, 500, "InternalError", "out of memory");
		goto fail;
	}
	for (size_t i = 0; i < n; i++) {
		unsigned char bin[16];
		const part *p = part_find(&ps, nums[i]);
		if (!p || !etag_is(etags[i], p->md5)) {
			EVP_MD_CTX_free(mm);
			s3_fail(r, 400, "InvalidPart", "One or more of the specified parts could "
				"not be found or its ETag did not match (part %d)", nums[i]);
			goto fail;
		}
		for (int k = 0; k < 16; k++)
			bin[k] = (unsigned char)strtoul((char[3]){p->md5[2 * k], p->md5[2 * k + 1], 0},
							NULL, 16);
		EVP_DigestUpdate(mm, bin, 16);
		sizes[i] = p->size;
		total += p->size;
	}
	unsigned char mh[16];
	EVP_DigestFinal_ex(mm, mh, NULL);
	EVP_MD_CTX_free(mm);
	cof_hex(mh, 16, hex);
	snprintf(mp_etag, sizeof mp_etag, "%s-%zu", hex, n);
	if (s3_write_cond(r, &c))
		goto fail;
	if (cof_upload_begin(s3srv->st, 0, &up, &err) ||
	    cof_upload_room(up, r->who.org, r->vol, r->key, total, &err)) {
		cof_upload_abort(up);
		s3_fail_err(r, &err, "NoSuchBucket");
		goto fail;
	}
	/* the parts from the shared blob store, streamed: wherever they were sent */
	for (size_t i = 0; i < n; i++) {
		const part *p = part_find(&ps, nums[i]);
		if (cof_held_append(s3srv->st, p->sha, p->size, up, &err)) {
			cof_upload_abort(up);
			s3_fail_err(r, &err, NULL);
			goto fail;
		}
	}
	const char *ct = json_string_value(json_object_get(info, "contentType"));
	c.by = s3_by(r);
	c.s3meta = text = s3_meta_text(json_object_get(info, "s3meta"), mp_etag);
	if (cof_file_put(s3srv->st, r->who.org, r->vol, r->key, up, ct && *ct ? ct : NULL, c,
			 &out, &created, &err)) {
		s3_fail_err(r, &err, "NoSuchBucket");
		goto fail;
	}
	json_object_set_new(out, "etag", json_string(mp_etag));
	parts_keep(r, id, nums, etags, sizes, n, out);
	upload_drop(r->who.org, id);
	free(text);
	free(ps.v);
	json_decref(info);
	free(nums);
	free(sizes);
	cof_s3xml_free(etags, n);
	return complete_answer(r, out);
fail:
	free(text);
	free(ps.v);
	json_decref(info);
	free(nums);
	free(sizes);
	cof_s3xml_free(etags, n);
	return s3_send_error(r);
}

enum MHD_Result s3mp_abort(s3req *r)
{
	char id[40];
	json_t *info = NULL;

	if (s3_resolve(r))
		return s3_send_error(r);
	if (!s3_arg(r, "uploadId", id, sizeof id))
		id[0] = '\0';
	if (upload_load(r, id, &info))
		return s3_send_error(r);
	json_decref(info);
	upload_drop(r->who.org, id);
	return s3_send_empty(r, 204, NULL);
}

enum MHD_Result s3mp_list_parts(s3req *r)
{
	char id[40], when[32], nb[16];
	json_t *info = NULL;
	int64_t marker = 0, max = 1000;
	const char *m;
	parts ps;

	if (s3_resolve(r))
		return s3_send_error(r);
	if (!s3_arg(r, "uploadId", id, sizeof id))
		id[0] = '\0';
	if (upload_load(r, id, &info) || parts_load(r, id, &ps)) {
		json_decref(info);
		return s3_send_error(r);
	}
	json_decref(info);
	if ((m = s3_arg(r, "part-number-marker", nb, sizeof nb)))
		marker = strtoll(m, NULL, 10);
	if ((m = s3_arg(r, "max-parts", nb, sizeof nb)))
		max = strtoll(m, NULL, 10);
	if (max < 0 || max > 1000)
		max = 1000;
	cof_buf b = COF_BUF_INIT;
	cof_buf_adds(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListPartsResult "
		     "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">");
	s3_xml_el(&b, "Bucket", r->bucket);
	s3_xml_el(&b, "Key", r->key);
	s3_xml_el(&b, "UploadId", id);
	cof_buf_addf(&b, "<PartNumberMarker>%" PRId64 "</PartNumberMarker>", marker);
	int64_t shown = 0;
	int lastn = 0, truncated = 0;
	for (size_t i = 0; i < ps.n; i++) {
		const part *p = &ps.v[i];
		if (p->n <= marker)
			continue;
		if (shown == max) {
			truncated = 1;
			break;
		}
		s3_iso_time(p->at, when);
		cof_buf_addf(&b, "<Part><PartNumber>%d</PartNumber><LastModified>%s</LastModified>"
			     "<ETag>&quot;%s&quot;</ETag><Size>%" PRId64 "</Size></Part>", p->n,
			     when, p->md5, p->size);
		shown++;
		lastn = p->n;
	}
	free(ps.v);
	cof_buf_addf(&b, "<NextPartNumberMarker>%d</NextPartNumberMarker><MaxParts>%" PRId64
		     "</MaxParts><IsTruncated>%s</IsTruncated></ListPartsResult>", lastn, max,
		     truncated ? "true" : "false");
	return s3_send_xml(r, 200, &b);
}

typedef struct uploads_each {
	s3req *r;
	cof_buf *b;
	int count;
} uploads_each;

/* cof_state_fn: an upload of this request's bucket into the listing. */
static int upload_row(void *ctx, const cof_staterow *row)
{
	uploads_each *u = ctx;
	char when[32];

	if (strcmp(row->org, u->r->who.org))
		return 0;
	json_t *j = json_loads(row->body ? row->body : "", 0, NULL);
	const char *vol = json_string_value(json_object_get(j, "vol"));
	const char *key = json_string_value(json_object_get(j, "key"));
	if (vol && key && !strcmp(vol, u->r->vol)) {
		cof_buf_adds(u->b, "<Upload>");
		s3_xml_el(u->b, "Key", key);
		s3_xml_el(u->b, "UploadId", row->id);
		s3_iso_time(json_integer_value(json_object_get(j, "initiated")), when);
		s3_xml_el(u->b, "Initiated", when);
		cof_buf_adds(u->b, "<StorageClass>STANDARD</StorageClass></Upload>");
		u->count++;
	}
	json_decref(j);
	return u->count >= 1000;
}

enum MHD_Result s3mp_list_uploads(s3req *r)
{
	cof_buf b = COF_BUF_INIT;
	cof_err err = {0};
	uploads_each u = {r, &b, 0};

	if (s3_resolve(r))
		return s3_send_error(r);
	cof_buf_adds(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListMultipartUploadsResult "
		     "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">");
	s3_xml_el(&b, "Bucket", r->bucket);
	cof_buf_adds(&b, "<KeyMarker></KeyMarker><UploadIdMarker></UploadIdMarker>"
		     "<MaxUploads>1000</MaxUploads><IsTruncated>false</IsTruncated>");
	if (cof_meta_state_scan(s3srv->st->meta, UPLOAD_KIND, "", upload_row, &u, &err)) {
		cof_buf_release(&b);
		s3_fail_err(r, &err, NULL);
		return s3_send_error(r);
	}
	cof_buf_adds(&b, "</ListMultipartUploadsResult>");
	return s3_send_xml(r, 200, &b);
}
