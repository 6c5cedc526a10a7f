/*
 * s3_multipart.c — the S3 gateway's multipart uploads: create, upload part,
 * complete, abort, list parts, list uploads.
 *
 * Parts are not content of any volume until the upload completes, so they
 * are kept outside the store, as files of this node: DATA/s3-uploads/ID/
 * holds `info` (JSON: org, volume, key, content type, initiated, the user
 * metadata sent: s3_meta.c) and one file per part (`P.part`, with its MD5,
 * its ETag, in `P.md5`). The object's ETag is S3's: the MD5 of the parts'
 * MD5s, "-N". Complete streams the
 * parts, in the order the client lists them, into one cof_upload and lands
 * it with cof_file_put: one change, ceiling and conditions as any PutObject.
 * An upload therefore belongs to the node that created it (docs/s3.md);
 * uploads left neither completed nor aborted are removed after a week, when
 * the next one is created.
 *
 * A completed upload leaves a state record in the store (kind "s3parts", one
 * per volume and key, replaced by the next completion): the object's version
 * and ETag, a hash of the parts list, and the parts' sizes. It answers a
 * second Complete of the same upload (S3 answers the object again) and
 * GetObject ?partNumber=N (that part's bytes, PartsCount), on every node.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "http/s3_int.h"
#include "store/meta.h"
#include "store/store.h"
#include "util/s3xml.h"

#define UPLOAD_TTL (7 * 24 * 3600)
#define PART_MAX (5LL << 30)
#define COPY_BLOCK (1 << 20)
#define PARTS_KIND "s3parts"

static void uploads_dir(char *out, size_t cap)
{
	snprintf(out, cap, "%s/s3-uploads", s3srv->st->dir);
}

/* An upload id: 32 lowercase hex digits (what we make; anything else is not one). */
static int id_ok(const char *id)
{
	return id && strlen(id) == 32 && strspn(id, "0123456789abcdef") == 32;
}

/* Upload `id`'s info when it is this request's (same organization, volume
 * and key): 0 with *info (owned), else -1. */
static int upload_find(s3req *r, const char *id, json_t **info, char *dir, size_t cap)
{
	char base[4200], path[4300];

	uploads_dir(base, sizeof base);
	if (!id_ok(id))
		return -1;
	snprintf(dir, cap, "%s/%s", base, id);
	snprintf(path, sizeof path, "%s/info", dir);
	json_t *j = json_load_file(path, 0, NULL);
	const char *org = json_string_value(json_object_get(j, "org"));
	const char *vol = json_string_value(json_object_get(j, "vol"));
	const char *key = json_string_value(json_object_get(j, "key"));
	if (org && vol && key && !strcmp(org, r->who.org) && !strcmp(vol, r->vol) && r->key &&
	    !strcmp(key, r->key)) {
		*info = j;
		return 0;
	}
	json_decref(j);
	return -1;
}

/* upload_find, failing the request (NoSuchUpload) when it is not there. */
static int upload_load(s3req *r, const char *id, json_t **info, char *dir, size_t cap)
{
	if (!upload_find(r, id, info, dir, cap))
		return 0;
	s3_fail(r, 404, "NoSuchUpload", "The specified upload does not exist (or was "
		"completed or aborted, or was made on another node)");
	return -1;
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

static void rm_upload(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[4400];

	if (d) {
		while ((e = readdir(d)))
			if (e->d_name[0] != '.') {
				snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
				unlink(path);
			}
		closedir(d);
	}
	rmdir(dir);
}

/* Removes uploads older than UPLOAD_TTL. */
static void sweep(void)
{
	char base[4200], dir[4300];
	DIR *d;
	struct dirent *e;
	struct stat sb;
	int64_t now = cof_now();

	uploads_dir(base, sizeof base);
	if (!(d = opendir(base)))
		return;
	while ((e = readdir(d)))
		if (id_ok(e->d_name)) {
			snprintf(dir, sizeof dir, "%s/%s", base, e->d_name);
			if (!stat(dir, &sb) && now - (int64_t)sb.st_mtime > UPLOAD_TTL)
				rm_upload(dir);
		}
	closedir(d);
}

enum MHD_Result s3mp_create(s3req *r)
{
	char base[4200], dir[4300], path[4400], id[33];
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
	uploads_dir(base, sizeof base);
	if (cof_random(rnd, sizeof rnd)) {
		json_decref(meta);
		s3_fail(r, 500, "InternalError", "no randomness available");
		return s3_send_error(r);
	}
	cof_hex(rnd, sizeof rnd, id);
	snprintf(dir, sizeof dir, "%s/%s", base, id);
	json_t *info = json_pack("{s:s, s:s, s:s, s:s, s:I, s:o}", "org", r->who.org, "vol",
				 r->vol, "key", r->key, "contentType", ct && *ct ? ct : "",
				 "initiated", (json_int_t)cof_now(), "s3meta", meta);
	snprintf(path, sizeof path, "%s/info", dir);
	if ((mkdir(base, 0700) && errno != EEXIST) || mkdir(dir, 0700) ||
	    json_dump_file(info, path, JSON_COMPACT)) {
		json_decref(info);
		s3_fail(r, 500, "InternalError", "cannot make the upload's folder '%s': %s", dir,
			strerror(errno));
		return s3_send_error(r);
	}
	json_decref(info);
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
	char id[40], dir[4300];
	json_t *info = NULL;
	const char *cl = s3_hdr(r, "Content-Length");
	int n;

	if (s3_resolve(r) || (n = s3mp_part_number(r)) < 0)
		return -1;
	if (cl && strtoll(cl, NULL, 10) > PART_MAX) {
		s3_fail(r, 400, "EntityTooLarge", "a part is at most 5 GiB");
		return -1;
	}
	if (!s3_arg(r, "uploadId", id, sizeof id) || upload_load(r, id, &info, dir, sizeof dir)) {
		s3_fail(r, 404, "NoSuchUpload", "The specified upload does not exist");
		return -1;
	}
	json_decref(info);
	if (s3_md5_begin(r))
		return -1;
	snprintf(r->part_tmp, sizeof r->part_tmp, "%s/%05d.tmp", dir, n);
	r->part_fd = open(r->part_tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (r->part_fd < 0) {
		s3_fail(r, 500, "InternalError", "cannot write the part '%s': %s", r->part_tmp,
			strerror(errno));
		return -1;
	}
	return 0;
}

int s3mp_part_write(s3req *r, const char *data, size_t n)
{
	struct stat sb;

	if (cof_write_full(r->part_fd, data, n) < 0) {
		s3_fail(r, 500, "InternalError", "cannot write the part: %s", strerror(errno));
		return -1;
	}
	if (!fstat(r->part_fd, &sb) && sb.st_size > PART_MAX) {
		s3_fail(r, 400, "EntityTooLarge", "a part is at most 5 GiB");
		return -1;
	}
	return 0;
}

void s3mp_part_drop(s3req *r)
{
	if (r->part_fd >= 0) {
		close(r->part_fd);
		unlink(r->part_tmp);
	}
	r->part_fd = -1;
}

enum MHD_Result s3mp_part_end(s3req *r)
{
	const char *hex = r->md5_hex;   /* body_checks made it */
	char final[4400], shap[4400], etag[80];
	size_t tl = strlen(r->part_tmp);

	/* "NNNNN.tmp" -> "NNNNN.part" and its MD5 beside it */
	snprintf(final, sizeof final, "%.*s.part", (int)(tl - 4), r->part_tmp);
	snprintf(shap, sizeof shap, "%.*s.md5", (int)(tl - 4), r->part_tmp);
	int fd = open(shap, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (strlen(hex) != 32 || fd < 0 || cof_write_full(fd, hex, 32) < 0 || close(fd) < 0 ||
	    close(r->part_fd) < 0 || rename(r->part_tmp, final) < 0) {
		s3_fail(r, 500, "InternalError", "cannot keep the part: %s", strerror(errno));
		s3mp_part_drop(r);
		return s3_send_error(r);
	}
	r->part_fd = -1;
	struct MHD_Response *resp;
	s3_send_empty(r, 200, &resp);
	snprintf(etag, sizeof etag, "\"%s\"", hex);
	if (resp)
		MHD_add_response_header(resp, "ETag", etag);
	return s3_queue(r, 200, resp);
}

/* The MD5 of part file `n` of `dir` (its .md5) into hex[65], and its size:
 * 0, or -1 when the part is not there. */
static int part_info(const char *dir, int n, char hex[65], int64_t *size, int64_t *mtime)
{
	char path[4400];
	struct stat sb;
	int fd;

	snprintf(path, sizeof path, "%s/%05d.md5", dir, n);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	ssize_t got = read(fd, hex, 32);
	close(fd);
	if (got != 32)
		return -1;
	hex[32] = '\0';
	snprintf(path, sizeof path, "%s/%05d.part", dir, n);
	if (stat(path, &sb))
		return -1;
	*size = (int64_t)sb.st_size;
	if (mtime)
		*mtime = (int64_t)sb.st_mtime;
	return 0;
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
	char id[40], dir[4300], path[4400], hex[65];
	json_t *info = NULL, *out = NULL;
	int *nums = NULL;
	char **etags = NULL;
	size_t n = 0;
	const char *why;
	cof_err err = {0};
	cof_upload *up = NULL;
	int64_t total = 0, size, *sizes = NULL;
	cof_cond c;
	int created;
	char mp_etag[S3_ETAG_MAX], *text = NULL;

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
	if (upload_find(r, id, &info, dir, sizeof dir)) {
		int again = completed_again(r, id, nums, etags, n, &out);
		free(nums);
		cof_s3xml_free(etags, n);
		if (again > 0)
			return complete_answer(r, out);
		if (!again)
			upload_load(r, id, &info, dir, sizeof dir);
		return s3_send_error(r);
	}
	sizes = cof_malloc((n ? n : 1) * sizeof *sizes);
	/* S3's ETag of the whole: the MD5 of the parts' binary MD5s, "-N" */
	EVP_MD_CTX *mm = EVP_MD_CTX_new();
	if (!mm || EVP_DigestInit_ex(mm, EVP_md5(), NULL) != 1) {
		EVP_MD_CTX_free(mm);
		s3_fail(r, 500, "InternalError", "out of memory");
		goto fail;
	}
	for (size_t i = 0; i < n; i++) {
		unsigned char bin[16];
		if (part_info(dir, nums[i], hex, &size, NULL) || !etag_is(etags[i], hex)) {
			EVP_MD_CTX_free(mm);
			s3_fail(r, 400, "InvalidPart", "One or more of the specified parts could "
				"not be found or its ETag did not match (part %d)", nums[i]);
			goto fail;
		}
		for (int k = 0; k < 16; k++)
			bin[k] = (unsigned char)strtoul((char[3]){hex[2 * k], hex[2 * k + 1], 0},
							NULL, 16);
		EVP_DigestUpdate(mm, bin, 16);
		sizes[i] = size;
		total += size;
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
		s3_fail_err(r, &err, "NoSuchBucket");
		goto fail;
	}
	char *buf = cof_malloc(COPY_BLOCK);
	for (size_t i = 0; i < n && !r->failed; i++) {
		snprintf(path, sizeof path, "%s/%05d.part", dir, nums[i]);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t got;
		if (fd < 0) {
			s3_fail(r, 400, "InvalidPart", "part %d is gone", nums[i]);
			break;
		}
		while ((got = read(fd, buf, COPY_BLOCK)) > 0)
			if (cof_upload_write(up, buf, (size_t)got, &err)) {
				s3_fail_err(r, &err, NULL);
				break;
			}
		if (got < 0)
			s3_fail(r, 500, "InternalError", "cannot read part %d: %s", nums[i],
				strerror(errno));
		close(fd);
	}
	free(buf);
	if (r->failed) {
		cof_upload_abort(up);
		goto fail;
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
	rm_upload(dir);
	free(text);
	json_decref(info);
	free(nums);
	free(sizes);
	cof_s3xml_free(etags, n);
	return complete_answer(r, out);
fail:
	free(text);
	json_decref(info);
	free(nums);
	free(sizes);
	cof_s3xml_free(etags, n);
	return s3_send_error(r);
}

enum MHD_Result s3mp_abort(s3req *r)
{
	char id[40], dir[4300];
	json_t *info = NULL;

	if (s3_resolve(r))
		return s3_send_error(r);
	if (!s3_arg(r, "uploadId", id, sizeof id) || upload_load(r, id, &info, dir, sizeof dir))
		return s3_send_error(r);
	json_decref(info);
	rm_upload(dir);
	return s3_send_empty(r, 204, NULL);
}

static int part_cmp(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

enum MHD_Result s3mp_list_parts(s3req *r)
{
	char id[40], dir[4300], hex[65], when[32], nb[16];
	json_t *info = NULL;
	int *nums;
	size_t n = 0;
	DIR *d;
	struct dirent *e;
	int64_t size, marker = 0, max = 1000;
	const char *m;

	if (s3_resolve(r))
		return s3_send_error(r);
	if (!s3_arg(r, "uploadId", id, sizeof id) || upload_load(r, id, &info, dir, sizeof dir))
		return s3_send_error(r);
	json_decref(info);
	if ((m = s3_arg(r, "part-number-marker", nb, sizeof nb)))
		marker = strtoll(m, NULL, 10);
	if ((m = s3_arg(r, "max-parts", nb, sizeof nb)))
		max = strtoll(m, NULL, 10);
	if (max < 0 || max > 1000)
		max = 1000;
	nums = cof_malloc(COF_S3_PARTS_MAX * sizeof *nums);
	if ((d = opendir(dir))) {
		while ((e = readdir(d)) && n < COF_S3_PARTS_MAX) {
			int v;
			char tail[8];
			if (sscanf(e->d_name, "%5d.%5s", &v, tail) == 2 && !strcmp(tail, "part") &&
			    v > marker)
				nums[n++] = v;
		}
		closedir(d);
	}
	qsort(nums, n, sizeof *nums, part_cmp);
	cof_buf b = COF_BUF_INIT;
	cof_buf_adds(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListPartsResult "
		     "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">");
	s3_xml_el(&b, "Bucket", r->bucket);
	s3_xml_el(&b, "Key", r->key);
	s3_xml_el(&b, "UploadId", id);
	cof_buf_addf(&b, "<PartNumberMarker>%" PRId64 "</PartNumberMarker>", marker);
	size_t shown = 0;
	int lastn = 0;
	for (size_t i = 0; i < n && (int64_t)shown < max; i++) {
		int64_t mt;
		if (part_info(dir, nums[i], hex, &size, &mt))
			continue;
		s3_iso_time(mt, when);
		cof_buf_addf(&b, "<Part><PartNumber>%d</PartNumber><LastModified>%s</LastModified>"
			     "<ETag>&quot;%s&quot;</ETag><Size>%" PRId64 "</Size></Part>", nums[i],
			     when, hex, size);
		shown++;
		lastn = nums[i];
	}
	int truncated = shown < n && (int64_t)shown == max;
	cof_buf_addf(&b, "<NextPartNumberMarker>%d</NextPartNumberMarker><MaxParts>%" PRId64
		     "</MaxParts><IsTruncated>%s</IsTruncated></ListPartsResult>", lastn, max,
		     truncated ? "true" : "false");
	free(nums);
	return s3_send_xml(r, 200, &b);
}

enum MHD_Result s3mp_list_uploads(s3req *r)
{
	char base[4200], path[4400], when[32];
	DIR *d;
	struct dirent *e;
	cof_buf b = COF_BUF_INIT;

	if (s3_resolve(r))
		return s3_send_error(r);
	uploads_dir(base, sizeof base);
	cof_buf_adds(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListMultipartUploadsResult "
		     "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">");
	s3_xml_el(&b, "Bucket", r->bucket);
	cof_buf_adds(&b, "<KeyMarker></KeyMarker><UploadIdMarker></UploadIdMarker>"
		     "<MaxUploads>1000</MaxUploads><IsTruncated>false</IsTruncated>");
	if ((d = opendir(base))) {
		int count = 0;
		while ((e = readdir(d)) && count < 1000) {
			if (!id_ok(e->d_name))
				continue;
			snprintf(path, sizeof path, "%s/%s/info", base, e->d_name);
			json_t *j = json_load_file(path, 0, NULL);
			const char *org = json_string_value(json_object_get(j, "org"));
			const char *vol = json_string_value(json_object_get(j, "vol"));
			const char *key = json_string_value(json_object_get(j, "key"));
			if (org && vol && key && !strcmp(org, r->who.org) && !strcmp(vol, r->vol)) {
				cof_buf_adds(&b, "<Upload>");
				s3_xml_el(&b, "Key", key);
				s3_xml_el(&b, "UploadId", e->d_name);
				s3_iso_time(json_integer_value(json_object_get(j, "initiated")), when);
				s3_xml_el(&b, "Initiated", when);
				cof_buf_adds(&b, "<StorageClass>STANDARD</StorageClass></Upload>");
				count++;
			}
			json_decref(j);
		}
		closedir(d);
	}
	cof_buf_adds(&b, "</ListMultipartUploadsResult>");
	return s3_send_xml(r, 200, &b);
}
