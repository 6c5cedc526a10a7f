/*
 * s3.c — cofferd --s3-listen: the volumes through the S3 API (API.md "S3
 * gateway"; docs/s3.md says what is served and what is not).
 *
 * A daemon of its own (MHD, a thread per connection: every call may wait on
 * the store), path-style requests only: /BUCKET/KEY. A bucket is a volume
 * (by name when exactly one volume of the organization has it, else by id),
 * a key is a path. Every request is SigV4-signed (header or presigned
 * query, util/sigv4.c) by a key's id with the key as its secret
 * (store/s3keys.c); the key's rules hold as on the HTTP API: read-only keys
 * only read, keys bound to an agent are refused, the rate limits count.
 * Writes go through the library's file calls (cof_file_put, cof_file_remove,
 * cof_file_copy: cof_land), so each is one change of the volume, counted
 * against its ceiling and seen at once by the HTTP API.
 *
 * The answer's ETag is the MD5 a version written here keeps (s3_meta.c, with
 * its user metadata), else the content's SHA-256 (a version written through
 * the HTTP API: 64 hex digits, so no client takes it for an MD5); its
 * x-amz-version-id the file's coffer version.
 */
#include <ctype.h>
#include <inttypes.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <openssl/evp.h>
#include "http/http.h"
#include "util/range.h"
#include "util/s3xml.h"
#include "util/sigv4.h"
#include "http/s3_int.h"

#define S3_SKEW 900                  /* seconds of clock skew allowed */
#define S3_OBJECT_MAX (5LL << 30)    /* PutObject's limit, as S3's */
#define S3_XML_MAX ((size_t)1 << 20) /* XML request bodies */
#define S3_DROP_MAX ((int64_t)1 << 20) /* a refused body up to this is read, then answered */
#define S3_KEYS_MAX 1000             /* max-keys */

#define S3_BLOCK (64 * 1024)
#define MAXCHAR "\xf4\x8f\xbf\xbf"     /* U+10FFFF: after every key under a prefix */

static struct MHD_Daemon *s3d;
http_server *s3srv;


/* ------------------------------------------------------------- answers */

void s3_xml_esc(cof_buf *b, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<': cof_buf_adds(b, "&lt;"); break;
		case '>': cof_buf_adds(b, "&gt;"); break;
		case '&': cof_buf_adds(b, "&amp;"); break;
		case '"': cof_buf_adds(b, "&quot;"); break;
		case '\'': cof_buf_adds(b, "&apos;"); break;
		default:
			if ((unsigned char)*s < 0x20 && *s != '\t' && *s != '\n' && *s != '\r')
				cof_buf_addf(b, "&#x%X;", (unsigned char)*s);
			else
				cof_buf_add(b, s, 1);
		}
	}
}

/* <Tag>escaped text</Tag> */
void s3_xml_el(cof_buf *b, const char *tag, const char *text)
{
	cof_buf_addf(b, "<%s>", tag);
	s3_xml_esc(b, text);
	cof_buf_addf(b, "</%s>", tag);
}

void s3_fail(s3req *r, unsigned status, const char *code, const char *fmt, ...)
{
	va_list ap;

	if (r->failed)
		return;
	r->failed = 1;
	r->e.status = status;
	r->e.code = code;
	va_start(ap, fmt);
	vsnprintf(r->e.msg, sizeof r->e.msg, fmt, ap);
	va_end(ap);
}

/* A library error as S3's: the code by what it means there. */
void s3_fail_err(s3req *r, cof_err *err, const char *notfound)
{
	static const struct { cof_code c; unsigned st; const char *code; } map[] = {
		{COF_EVALIDATION, 400, "InvalidArgument"},
		{COF_EUNAUTHORIZED, 403, "InvalidAccessKeyId"},
		{COF_EFORBIDDEN, 403, "AccessDenied"},
		{COF_ENOTFOUND, 404, "NoSuchKey"},
		{COF_ECONFLICT, 409, "OperationAborted"},
		{COF_EGONE, 404, "NoSuchKey"},
		{COF_EPRECONDITION, 412, "PreconditionFailed"},
		{COF_ETOOLARGE, 400, "EntityTooLarge"},
		{COF_EMEDIATYPE, 400, "InvalidArgument"},
		{COF_ERANGE, 416, "InvalidRange"},
		{COF_EBLOCKED, 403, "AccessDenied"},
		{COF_ELOCKED, 409, "OperationAborted"},
		{COF_ERATELIMIT, 503, "SlowDown"},
		{COF_EUNAVAILABLE, 503, "ServiceUnavailable"},
	};
	unsigned st = 500;
	const char *code = "InternalError";

	for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
		if (map[i].c == err->code)
			st = map[i].st, code = map[i].code;
	if (err->code == COF_ENOTFOUND && notfound)
		code = notfound;
	/* a write past the ceiling: S3's word for a body too big for where it goes */
	if (err->code == COF_EVALIDATION && json_object_get(err->extra, "ceiling"))
		code = "EntityTooLarge";
	s3_fail(r, st, code, "%s", err->msg);
	cof_err_clear(err);
}

/* The request's id (16 hex digits), the same in its header and its error. */
static const char *request_id(s3req *r)
{
	unsigned char rnd[8];

	if (!r->reqid[0]) {
		cof_random(rnd, sizeof rnd);
		cof_hex(rnd, sizeof rnd, r->reqid);
	}
	return r->reqid;
}

static void common_headers(s3req *r, struct MHD_Response *resp)
{
	MHD_add_response_header(resp, "x-amz-request-id", request_id(r));
	MHD_add_response_header(resp, "Server", "coffer");
}

enum MHD_Result s3_queue(s3req *r, unsigned status, struct MHD_Response *resp)
{
	enum MHD_Result rc;

	if (!resp)
		return MHD_NO;
	common_headers(r, resp);
	rc = MHD_queue_response(r->conn, status, resp);
	MHD_destroy_response(resp);
	return rc;
}

enum MHD_Result s3_send_xml(s3req *r, unsigned status, cof_buf *b)
{
	struct MHD_Response *resp;
	size_t len;
	char *data = cof_buf_detach(b, &len);

	resp = MHD_create_response_from_buffer(len, data, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(data);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/xml");
	return s3_queue(r, status, resp);
}

enum MHD_Result s3_send_empty(s3req *r, unsigned status, struct MHD_Response **out)
{
	struct MHD_Response *resp = MHD_create_response_from_buffer(0, NULL,
								   MHD_RESPMEM_PERSISTENT);
	if (out) {
		*out = resp;
		return MHD_YES;
	}
	return s3_queue(r, status, resp);
}

enum MHD_Result s3_send_error(s3req *r)
{
	cof_buf b = COF_BUF_INIT;
	struct MHD_Response *resp;

	if (!strcmp(r->method, "HEAD")) /* no body: the status says it */
		return s3_send_empty(r, r->e.status, NULL);
	cof_buf_adds(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error>");
	s3_xml_el(&b, "Code", r->e.code);
	s3_xml_el(&b, "Message", r->e.msg);
	if (r->key) {
		s3_xml_el(&b, "Key", r->key);
	}
	if (r->bucket)
		s3_xml_el(&b, "BucketName", r->bucket);
	s3_xml_el(&b, "Resource", r->raw ? r->raw : "/");
	s3_xml_el(&b, "RequestId", request_id(r));
	cof_buf_adds(&b, "</Error>");
	size_t len;
	char *data = cof_buf_detach(&b, &len);
	resp = MHD_create_response_from_buffer(len, data, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(data);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/xml");
	if (r->e.status == 405)
		MHD_add_response_header(resp, "Allow", "GET, HEAD, PUT, POST, DELETE");
	return s3_queue(r, r->e.status, resp);
}

/* ------------------------------------------------------------- requests */

const char *s3_hdr(s3req *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

/* The decoded query argument `name` (NULL absent; "" with no value). */
const char *s3_arg(s3req *r, const char *name, char *buf, size_t bufsz)
{
	for (size_t i = 0; i < r->nargs; i++)
		if (!strcmp(r->args[i].name, name)) {
			const char *v = r->args[i].value ? r->args[i].value : "";
			size_t n = strlen(v);
			if (n >= bufsz || cof_sigv4_decode(v, n, buf) < 0)
				return NULL;
			return buf;
		}
	return NULL;
}

int s3_has_arg(s3req *r, const char *name)
{
	for (size_t i = 0; i < r->nargs; i++)
		if (!strcmp(r->args[i].name, name))
			return 1;
	return 0;
}

static enum MHD_Result collect_arg(void *cls, enum MHD_ValueKind kind, const char *key,
				   const char *value)
{
	s3req *r = cls;

	(void)kind;
	if (r->nargs == S3_ARGS_MAX) {
		s3_fail(r, 400, "InvalidArgument", "the query has more than %d arguments",
			S3_ARGS_MAX);
		return MHD_NO;
	}
	r->args[r->nargs].name = cof_strdup(key ? key : "");
	r->args[r->nargs].value = value ? cof_strdup(value) : NULL;
	r->nargs++;
	return MHD_YES;
}

/* The value of every header `name` joined by ',' (AWS's rule for repeated
 * headers), in `out`; NULL when absent. */
typedef struct hjoin {
	const char *name;
	cof_buf *out;
	int n;
} hjoin;

static enum MHD_Result join_header(void *cls, enum MHD_ValueKind kind, const char *key,
				   const char *value)
{
	hjoin *j = cls;

	(void)kind;
	if (key && !strcasecmp(key, j->name)) {
		if (j->n++)
			cof_buf_add(j->out, ",", 1);
		cof_buf_adds(j->out, value ? value : "");
	}
	return MHD_YES;
}

/* Splits the raw path into bucket and key (decoded). 0 or -1 (failed). */
static int split_path(s3req *r)
{
	const char *p = r->raw + 1, *slash;
	size_t n = strlen(r->raw);
	char *dec;

	if (r->raw[0] != '/') {
		s3_fail(r, 400, "InvalidURI", "the path must start with '/'");
		return -1;
	}
	if (!*p)
		return 0;
	slash = strchr(p, '/');
	size_t bl = slash ? (size_t)(slash - p) : strlen(p);
	dec = cof_malloc(n + 1);
	if (cof_sigv4_decode(p, bl, dec) < 0) {
		free(dec);
		s3_fail(r, 400, "InvalidURI", "the bucket name has a bad %%-escape or a NUL");
		return -1;
	}
	r->bucket = dec;
	if (slash && slash[1]) {
		dec = cof_malloc(n + 1);
		if (cof_sigv4_decode(slash + 1, strlen(slash + 1), dec) < 0) {
			free(dec);
			s3_fail(r, 400, "InvalidURI", "the key has a bad %%-escape or a NUL");
			return -1;
		}
		r->key = dec;
	}
	return 0;
}

/* --------------------------------------------------------------- SigV4 */

static int authenticate(s3req *r)
{
	cof_sigv4 a;
	const char *why = NULL, *auth = s3_hdr(r, "Authorization");
	const char *payload = s3_hdr(r, "x-amz-content-sha256");
	char secret[80], amz[17], sig[65];
	int64_t t, now = cof_now();
	cof_err err = {0};
	int q;

	if ((auth && !strncmp(auth, "AWS ", 4)) || s3_has_arg(r, "AWSAccessKeyId")) {
		s3_fail(r, 400, "InvalidRequest", "AWS Signature Version 2 is not served: sign "
			"with SigV4 (boto3: Config(signature_version='s3v4'))");
		return -1;
	}
	if (auth) {
		if (cof_sigv4_parse_header(auth, &a, &why)) {
			s3_fail(r, 400, "AuthorizationHeaderMalformed", "%s", why);
			return -1;
		}
		const char *d = s3_hdr(r, "x-amz-date");
		if (!d || cof_sigv4_time(d, &t)) {
			s3_fail(r, 403, "AccessDenied", "a signed request needs an x-amz-date "
				"header as YYYYMMDDTHHMMSSZ");
			return -1;
		}
		if (strncmp(d, a.date, 8)) {
			s3_fail(r, 400, "AuthorizationHeaderMalformed", "the Credential's date "
				"%s is not x-amz-date's day", a.date);
			return -1;
		}
		snprintf(amz, sizeof amz, "%s", d);
		if (t > now + S3_SKEW || t < now - S3_SKEW) {
			s3_fail(r, 403, "RequestTimeTooSkewed", "the request's time %s is more "
				"than 15 minutes from the server's", d);
			return -1;
		}
		if (!payload) {
			s3_fail(r, 400, "InvalidRequest", "a signed request needs the "
				"x-amz-content-sha256 header");
			return -1;
		}
	} else if ((q = cof_sigv4_parse_query(r->args, r->nargs, &a, &why)) == 0) {
		snprintf(amz, sizeof amz, "%s", a.amz_date);
		cof_sigv4_time(amz, &t);
		if (t > now + S3_SKEW) {
			s3_fail(r, 403, "RequestTimeTooSkewed", "the presigned URL's time %s is "
				"more than 15 minutes ahead of the server's", amz);
			return -1;
		}
		if (now > t + a.expires) {
			s3_fail(r, 403, "AccessDenied", "Request has expired (the presigned URL "
				"was valid for %" PRId64 " seconds from %s)", a.expires, amz);
			return -1;
		}
		if (!payload)
			payload = "UNSIGNED-PAYLOAD";
	} else if (q < 0) {
		s3_fail(r, 400, "AuthorizationQueryParametersError", "%s", why);
		return -1;
	} else {
		s3_fail(r, 403, "AccessDenied", "every request must be signed (AWS SigV4) by a "
			"key's id (k_..., GET /v1/keys) with the key as its secret");
		return -1;
	}
	if (strncmp(payload, "STREAMING-", 10) == 0) {
		s3_fail(r, 501, "NotImplemented", "x-amz-content-sha256 %s (aws-chunked "
			"bodies) is not served; send UNSIGNED-PAYLOAD or the body's SHA-256",
			payload);
		return -1;
	}
	if (strcmp(payload, "UNSIGNED-PAYLOAD") &&
	    (strlen(payload) != 64 || strspn(payload, "0123456789abcdef") != 64)) {
		s3_fail(r, 400, "InvalidArgument", "x-amz-content-sha256 must be "
			"UNSIGNED-PAYLOAD or 64 lowercase hex digits");
		return -1;
	}
	int signed_host = 0;
	for (int i = 0; i < a.nheaders; i++)
		signed_host |= !strcmp(a.headers[i], "host");
	if (!signed_host) {
		s3_fail(r, 400, "AuthorizationHeaderMalformed", "SignedHeaders must include host");
		return -1;
	}
	if (cof_key_s3_secret(s3srv->st, a.access, &r->who, secret, &err)) {
		if (err.code == COF_EUNAUTHORIZED) {
			s3_fail(r, 403, "InvalidAccessKeyId", "%s", err.msg);
			cof_err_clear(&err);
		} else {
			s3_fail_err(r, &err, NULL);
		}
		return -1;
	}
	/* the signed headers' values */
	cof_buf hv[COF_SIGV4_HEADERS];
	const char *vals[COF_SIGV4_HEADERS];
	for (int i = 0; i < a.nheaders; i++) {
		hjoin j = {a.headers[i], &hv[i], 0};
		hv[i] = (cof_buf)COF_BUF_INIT;
		MHD_get_connection_values(r->conn, MHD_HEADER_KIND, join_header, &j);
		vals[i] = j.n ? (hv[i].data ? hv[i].data : "") : NULL;
	}
	cof_buf canon = COF_BUF_INIT;
	int rc = cof_sigv4_canonical(&canon, r->method, r->raw, r->args, r->nargs, &a, vals,
				     payload, &why);
	for (int i = 0; i < a.nheaders; i++)
		cof_buf_release(&hv[i]);
	if (rc) {
		explicit_bzero(secret, sizeof secret);
		cof_buf_release(&canon);
		s3_fail(r, 400, "AuthorizationHeaderMalformed", "%s", why);
		return -1;
	}
	cof_sigv4_sign(secret, &a, amz, canon.data ? canon.data : "", canon.len, sig);
	explicit_bzero(secret, sizeof secret);
	cof_buf_release(&canon);
	if (!cof_sigv4_equal(sig, a.signature)) {
		s3_fail(r, 403, "SignatureDoesNotMatch", "The request signature we calculated "
			"does not match the signature you provided. Check your key and signing "
			"method.");
		return -1;
	}
	if (r->who.agent[0]) {
		s3_fail(r, 403, "AccessDenied", "a key bound to an agent cannot use the S3 "
			"gateway (it reaches volumes through its agent)");
		return -1;
	}
	int retry;
	if (http_rate_take(r->who.key_id, r->who.org, &err, &retry)) {
		s3_fail(r, 503, "SlowDown", "%s", err.msg);
		cof_err_clear(&err);
		return -1;
	}
	if (r->who.read_only && strcmp(r->method, "GET") && strcmp(r->method, "HEAD")) {
		s3_fail(r, 403, "AccessDenied", "the key %s is read-only: it may only GET and "
			"HEAD", r->who.key_id);
		return -1;
	}
	if (strcmp(payload, "UNSIGNED-PAYLOAD")) {
		snprintf(r->want_sha, sizeof r->want_sha, "%s", payload);
		r->sha = EVP_MD_CTX_new();
		if (!r->sha || EVP_DigestInit_ex(r->sha, EVP_sha256(), NULL) != 1) {
			s3_fail(r, 500, "InternalError", "out of memory");
			return -1;
		}
	}
	r->authed = 1;
	return 0;
}

/* ------------------------------------------------------------- buckets */

/* A valid S3 bucket name (the rules of CreateBucket): 3 to 63 of a-z, 0-9,
 * '.', '-', a letter or digit at each end, no "..", "-." or ".-", not an IPv4
 * address. */
static int bucket_name_ok(const char *b)
{
	size_t n = strlen(b);
	unsigned q[4];
	char tail;

	if (n < 3 || n > 63 || !isalnum((unsigned char)b[0]) ||
	    !isalnum((unsigned char)b[n - 1]))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!(islower((unsigned char)b[i]) || isdigit((unsigned char)b[i]) ||
		      b[i] == '.' || b[i] == '-'))
			return 0;
	if (sscanf(b, "%u.%u.%u.%u%c", &q[0], &q[1], &q[2], &q[3], &tail) == 4)
		return 0;
	return !strstr(b, "..") && !strstr(b, "-.") && !strstr(b, ".-");
}

/* Every volume of the organization whose name is `name` (json array of
 * volume objects, stolen by *out). */
static int volumes_named(s3req *r, const char *name, json_t **out, cof_err *err)
{
	json_t *all = json_array(), *page = NULL;
	char cursor[600] = "";

	for (;;) {
		if (cof_volume_list(s3srv->st, r->who.org, name, cursor[0] ? cursor : NULL, 1000,
				    &page, err)) {
			json_decref(all);
			return -1;
		}
		size_t i;
		json_t *v;
		json_array_foreach(json_object_get(page, "volumes"), i, v)
			if (!strcmp(json_string_value(json_object_get(v, "name")) ?: "", name))
				json_array_append(all, v);
		const char *c = json_string_value(json_object_get(page, "cursor"));
		if (!c || !*c || strlen(c) >= sizeof cursor) {
			json_decref(page);
			break;
		}
		snprintf(cursor, sizeof cursor, "%s", c);
		json_decref(page);
	}
	*out = all;
	return 0;
}

/* The volume id of r->bucket into r->vol. 0, or -1 (failed: NoSuchBucket). */
int s3_resolve(s3req *r)
{
	json_t *named = NULL, *v = NULL;
	cof_err err = {0};

	if (bucket_name_ok(r->bucket)) {
		if (volumes_named(r, r->bucket, &named, &err)) {
			s3_fail_err(r, &err, "NoSuchBucket");
			return -1;
		}
		if (json_array_size(named) == 1) {
			snprintf(r->vol, sizeof r->vol, "%s",
				 json_string_value(json_object_get(json_array_get(named, 0), "id")));
			json_decref(named);
			return 0;
		}
		json_decref(named);
	}
	if (strlen(r->bucket) < sizeof r->vol &&
	    !cof_volume_get(s3srv->st, r->who.org, r->bucket, &v, &err)) {
		snprintf(r->vol, sizeof r->vol, "%s", r->bucket);
		json_decref(v);
		return 0;
	}
	cof_err_clear(&err);
	s3_fail(r, 404, "NoSuchBucket", "The specified bucket does not exist (no volume of "
		"organization %s is named or has the id '%s')", r->who.org, r->bucket);
	return -1;
}

void s3_iso_time(int64_t t, char out[32])
{
	struct tm tm;
	time_t tt = (time_t)t;

	gmtime_r(&tt, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%S.000Z", &tm);
}

/* createdAt/updatedAt (RFC 3339) as S3's time. */
void s3_json_iso(json_t *v, char out[32])
{
	const char *s = json_string_value(v);
	struct tm tm = {0};

	if (s && strptime(s, "%Y-%m-%dT%H:%M:%S", &tm))
		s3_iso_time((int64_t)timegm(&tm), out);
	else
		s3_iso_time(0, out);
}

static enum MHD_Result list_buckets(s3req *r)
{
	cof_buf b = COF_BUF_INIT;
	char cursor[600] = "", when[32], mb[16], token[600], prefix[600];
	json_t *page = NULL;
	cof_err err = {0};
	const char *m = s3_arg(r, "max-buckets", mb, sizeof mb);
	const char *tok = s3_arg(r, "continuation-token", token, sizeof token);
	const char *pre = s3_arg(r, "prefix", prefix, sizeof prefix);
	char *end = NULL;
	long max = m ? strtol(m, &end, 10) : 10000;

	if (m && (!*m || *end || max < 1 || max > 10000)) {
		s3_fail(r, 400, "InvalidArgument", "max-buckets must be a whole number from 1 "
			"to 10000");
		return s3_send_error(r);
	}
	if (tok && !strchr(tok, ':')) {
		s3_fail(r, 400, "InvalidArgument", "the continuation-token is not one a "
			"ListBuckets of this gateway answered (ID:NAME)");
		return s3_send_error(r);
	}
	cof_buf_adds(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListAllMyBucketsResult "
		     "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Owner>");
	s3_xml_el(&b, "ID", r->who.org);
	s3_xml_el(&b, "DisplayName", r->who.org);
	cof_buf_adds(&b, "</Owner><Buckets>");
	json_t *all = json_array();
	for (;;) {
		if (cof_volume_list(s3srv->st, r->who.org, NULL, cursor[0] ? cursor : NULL, 1000,
				    &page, &err)) {
			json_decref(all);
			cof_buf_release(&b);
			s3_fail_err(r, &err, NULL);
			return s3_send_error(r);
		}
		size_t i;
		json_t *v;
		json_array_foreach(json_object_get(page, "volumes"), i, v)
			json_array_append(all, v);
		const char *c = json_string_value(json_object_get(page, "cursor"));
		if (!c || !*c || strlen(c) >= sizeof cursor) {
			json_decref(page);
			break;
		}
		snprintf(cursor, sizeof cursor, "%s", c);
		json_decref(page);
	}
	/* by name where that name is a valid bucket name and no other volume has
	 * it (they come sorted by name: a duplicate is a neighbour). A page
	 * (max-buckets) ends with a continuation-token "ID:NAME" of the last
	 * volume shown: the next page starts after that volume or, when it is
	 * gone, at the first volume named after NAME. */
	size_t n = json_array_size(all), from = 0;
	long shown = 0;
	int more = 0;
	const char *colon = tok ? strchr(tok, ':') : NULL;
	if (tok) {
		from = n;
		for (size_t i = 0; i < n && from == n; i++) {
			json_t *v = json_array_get(all, i);
			const char *id = json_string_value(json_object_get(v, "id")) ?: "";
			if (colon && strlen(id) == (size_t)(colon - tok) &&
			    !strncmp(id, tok, strlen(id)))
				from = i + 1;
		}
		for (size_t i = 0; i < n && from == n && colon; i++)
			if (strcmp(json_string_value(json_object_get(json_array_get(all, i),
								     "name")) ?: "", colon + 1) > 0)
				from = i;
	}
	for (size_t i = from; i < n && !more; i++) {
		json_t *v = json_array_get(all, i);
		const char *name = json_string_value(json_object_get(v, "name")) ?: "";
		const char *prev = i ? json_string_value(json_object_get(json_array_get(all, i - 1),
									 "name")) : NULL;
		const char *next = i + 1 < n ? json_string_value(json_object_get(
						       json_array_get(all, i + 1), "name")) : NULL;
		int unique = (!prev || strcmp(prev, name)) && (!next || strcmp(next, name));
		const char *shown_as = unique && bucket_name_ok(name) ? name :
			json_string_value(json_object_get(v, "id"));
		if (pre && strncmp(shown_as, pre, strlen(pre)))
			continue;
		if (shown == max) {
			more = 1;
			break;
		}
		cof_buf_adds(&b, "<Bucket>");
		s3_xml_el(&b, "Name", shown_as);
		s3_json_iso(json_object_get(v, "createdAt"), when);
		s3_xml_el(&b, "CreationDate", when);
		cof_buf_adds(&b, "</Bucket>");
		shown++;
		snprintf(token, sizeof token, "%s:%s",
			 json_string_value(json_object_get(v, "id")) ?: "", name);
	}
	json_decref(all);
	cof_buf_adds(&b, "</Buckets>");
	if (more)
		s3_xml_el(&b, "ContinuationToken", token);
	if (pre)
		s3_xml_el(&b, "Prefix", pre);
	cof_buf_adds(&b, "</ListAllMyBucketsResult>");
	return s3_send_xml(r, 200, &b);
}

static enum MHD_Result create_bucket(s3req *r)
{
	json_t *named = NULL, *out = NULL, *body;
	cof_err err = {0};
	int created = 0;

	if (!bucket_name_ok(r->bucket)) {
		s3_fail(r, 400, "InvalidBucketName", "The specified bucket is not valid: a "
			"name of 3 to 63 characters of a-z, 0-9, '.' and '-', starting and "
			"ending with a letter or digit, without '..', '-.' or '.-', and not an "
			"IP address");
		return s3_send_error(r);
	}
	if (volumes_named(r, r->bucket, &named, &err)) {
		s3_fail_err(r, &err, NULL);
		return s3_send_error(r);
	}
	size_t n = json_array_size(named);
	json_decref(named);
	if (n) {
		s3_fail(r, 409, "BucketAlreadyOwnedByYou", "Your previous request to create the "
			"named bucket succeeded and you already own it (a volume of that name)");
		return s3_send_error(r);
	}
	body = json_pack("{s:s}", "name", r->bucket);
	int rc = cof_volume_create(s3srv->st, r->who.org, body, NULL, &out, &created, &err);
	json_decref(body);
	if (rc) {
		s3_fail_err(r, &err, NULL);
		return s3_send_error(r);
	}
	json_decref(out);
	struct MHD_Response *resp;
	s3_send_empty(r, 200, &resp);
	if (resp) {
		char loc[80];
		snprintf(loc, sizeof loc, "/%s", r->bucket);
		MHD_add_response_header(resp, "Location", loc);
	}
	return s3_queue(r, 200, resp);
}

static enum MHD_Result delete_bucket(s3req *r)
{
	json_t *v = NULL;
	cof_err err = {0};

	if (s3_resolve(r))
		return s3_send_error(r);
	if (cof_volume_get(s3srv->st, r->who.org, r->vol, &v, &err)) {
		s3_fail_err(r, &err, "NoSuchBucket");
		return s3_send_error(r);
	}
	json_int_t files = json_integer_value(json_object_get(v, "files"));
	json_decref(v);
	if (files > 0) {
		s3_fail(r, 409, "BucketNotEmpty", "The bucket you tried to delete is not empty "
			"(%lld files)", (long long)files);
		return s3_send_error(r);
	}
	if (cof_volume_delete(s3srv->st, r->who.org, r->vol, &err)) {
		s3_fail_err(r, &err, "NoSuchBucket");
		return s3_send_error(r);
	}
	return s3_send_empty(r, 204, NULL);
}

/* ------------------------------------------------------------- listing */

/* ListObjects (v1), ListObjectsV2 and ListObjectVersions (mode 1, 2, 3):
 * prefix, delimiter (CommonPrefixes), max-keys, marker / start-after /
 * continuation-token / key-marker. The versions listed are the current
 * ones (coffer's history is the changes feed and GET ?versionId=N). The library's
 * cursor is the last path listed (base64url), so a page starts after any
 * key; a common prefix skips the keys under it in one step. */
static enum MHD_Result list_objects(s3req *r, int mode)
{
	int v2 = mode == 2, vers = mode == 3;
	char prefix[COF_PATH_MAX + 1], delim[64], after[COF_PATH_MAX + 8], tmp[COF_PATH_MAX + 8];
	char when[32], ibuf[32];
	const char *p, *d, *m;
	int64_t max = S3_KEYS_MAX;
	cof_err err = {0};
	int fetch_owner = 0, url_enc = 0;

	if (s3_resolve(r))
		return s3_send_error(r);
	p = s3_arg(r, "prefix", prefix, sizeof prefix);
	d = s3_arg(r, "delimiter", delim, sizeof delim);
	if ((s3_has_arg(r, "prefix") && !p) || (s3_has_arg(r, "delimiter") && !d)) {
		s3_fail(r, 400, "InvalidArgument", "prefix (at most %d bytes) or delimiter (at "
			"most 63 bytes) is too long or badly escaped", COF_PATH_MAX);
		return s3_send_error(r);
	}
	if (d && !*d)
		d = NULL;
	if ((m = s3_arg(r, "max-keys", ibuf, sizeof ibuf))) {
		char *end;
		long long v = strtoll(m, &end, 10);
		if (!*m || *end || v < 0) {
			s3_fail(r, 400, "InvalidArgument", "max-keys must be a whole number >= 0");
			return s3_send_error(r);
		}
		max = v > S3_KEYS_MAX ? S3_KEYS_MAX : v;
	}
	after[0] = '\0';
	if (v2) {
		const char *tok = s3_arg(r, "continuation-token", tmp, sizeof tmp);
		const char *sa = s3_arg(r, "start-after", after, sizeof after);
		if (tok) {
			unsigned char *dec = NULL;
			size_t dl = 0;
			if (cof_base64url_decode(tok, strlen(tok), &dec, &dl) || dl >= sizeof after ||
			    memchr(dec, 0, dl)) {
				free(dec);
				s3_fail(r, 400, "InvalidArgument", "The continuation token provided "
					"is incorrect");
				return s3_send_error(r);
			}
			memcpy(after, dec, dl);
			after[dl] = '\0';
			free(dec);
		} else if (!sa) {
			after[0] = '\0';
		}
		ibuf[0] = 0;
		const char *fo = s3_arg(r, "fetch-owner", ibuf, sizeof ibuf);
		fetch_owner = fo && !strcmp(fo, "true");
	} else if (!s3_arg(r, vers ? "key-marker" : "marker", after, sizeof after)) {
		after[0] = '\0';
	}
	const char *et = s3_arg(r, "encoding-type", ibuf, sizeof ibuf);
	if (et && strcmp(et, "url")) {
		s3_fail(r, 400, "InvalidArgument", "Invalid Encoding Method specified in "
			"Request (only url)");
		return s3_send_error(r);
	}
	url_enc = et != NULL;
	/* a marker that is a common prefix: past every key under it */
	if (d && after[0] && strlen(after) >= strlen(d) &&
	    !strcmp(after + strlen(after) - strlen(d), d) && strlen(after) + 4 < sizeof after)
		strcat(after, MAXCHAR);

	cof_buf items = COF_BUF_INIT, prefixes = COF_BUF_INIT;
	int64_t count = 0;
	int truncated = 0;
	char last[COF_PATH_MAX + 8] = "", lastcp[COF_PATH_MAX + 8] = "";
	char *cursor = NULL;
	while (!truncated && max > 0) {
		cof_list_opts o = {0};
		json_t *out = NULL;
		free(cursor);
		cursor = after[0] ? cof_base64url_encode(after, strlen(after)) : NULL;
		o.cursor = cursor;
		o.limit = 1000;
		o.prefix = p && *p ? p : NULL;
		if (cof_file_list(s3srv->st, r->who.org, r->vol, &o, &out, &err) ||
		    cof_file_s3metas(s3srv->st, r->who.org, r->vol,
				     json_object_get(out, "files"), &err)) {
			json_decref(out);
			free(cursor);
			cof_buf_release(&items);
			cof_buf_release(&prefixes);
			s3_fail_err(r, &err, "NoSuchBucket");
			return s3_send_error(r);
		}
		json_t *files = json_object_get(out, "files"), *f;
		size_t i, nf = json_array_size(files);
		int jumped = 0;
		json_array_foreach(files, i, f) {
			const char *path = json_string_value(json_object_get(f, "path"));
			snprintf(after, sizeof after, "%s", path);
			if (p && *p && strncmp(path, p, strlen(p))) {
				if (strcmp(path, p) > 0) { /* past the prefix: done */
					nf = 0;
					break;
				}
				continue;
			}
			const char *rest = path + (p ? strlen(p) : 0);
			const char *cut = d ? strstr(rest, d) : NULL;
			if (count == max) {
				truncated = 1;
				break;
			}
			if (cut) {
				size_t cl = (size_t)(cut - path) + strlen(d);
				if (strlen(lastcp) == cl && !strncmp(lastcp, path, cl)) {
					/* a key past the jump below (it holds U+10FFFF) */
					continue;
				}
				snprintf(lastcp, sizeof lastcp, "%.*s", (int)cl, path);
				cof_buf_adds(&prefixes, "<CommonPrefixes><Prefix>");
				if (url_enc)
					cof_sigv4_encode(&prefixes, lastcp, strlen(lastcp), 1);
				else
					s3_xml_esc(&prefixes, lastcp);
				cof_buf_adds(&prefixes, "</Prefix></CommonPrefixes>");
				count++;
				/* every key under it is skipped: the next page starts past
				 * it and its largest character (valid UTF-8, which
				 * PostgreSQL's text insists on) */
				snprintf(last, sizeof last, "%s%s", lastcp, MAXCHAR);
				snprintf(after, sizeof after, "%s", last);
				jumped = 1;
				break;
			}
			cof_buf_adds(&items, vers ? "<Version><Key>" : "<Contents><Key>");
			if (url_enc)
				cof_sigv4_encode(&items, path, strlen(path), 1);
			else
				s3_xml_esc(&items, path);
			cof_buf_adds(&items, "</Key>");
			if (vers)
				cof_buf_addf(&items, "<VersionId>%" JSON_INTEGER_FORMAT "</VersionId>"
					     "<IsLatest>true</IsLatest>",
					     json_integer_value(json_object_get(f, "version")));
			s3_json_iso(json_object_get(f, "updatedAt"), when);
			s3_xml_el(&items, "LastModified", when);
			json_t *sm = json_loads(json_string_value(json_object_get(f, "s3meta"))
						?: "{}", 0, NULL);
			const char *tag = json_string_value(json_object_get(sm, "etag"));
			cof_buf_addf(&items, "<ETag>&quot;%s&quot;</ETag><Size>%" JSON_INTEGER_FORMAT
				     "</Size><StorageClass>STANDARD</StorageClass>",
				     tag ? tag : json_string_value(json_object_get(f, "sha256")) ?: "",
				     json_integer_value(json_object_get(f, "size")));
			json_decref(sm);
			if (!v2 || fetch_owner) {
				cof_buf_adds(&items, "<Owner>");
				s3_xml_el(&items, "ID", r->who.org);
				s3_xml_el(&items, "DisplayName", r->who.org);
				cof_buf_adds(&items, "</Owner>");
			}
			cof_buf_adds(&items, vers ? "</Version>" : "</Contents>");
			count++;
			snprintf(last, sizeof last, "%s", path);
		}
		int more = json_object_get(out, "cursor") != NULL;
		json_decref(out);
		if (truncated || (!jumped && (!more || nf == 0)))
			break;
	}
	free(cursor);
	/* a listing that stopped exactly at max-keys is truncated when a key follows:
	 * the loop above only knows when it met one */
	cof_buf b = COF_BUF_INIT;
	cof_buf_addf(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<%s "
		     "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">",
		     vers ? "ListVersionsResult" : "ListBucketResult");
	s3_xml_el(&b, "Name", r->bucket);
	cof_buf_adds(&b, "<Prefix>");
	if (p) {
		if (url_enc)
			cof_sigv4_encode(&b, p, strlen(p), 1);
		else
			s3_xml_esc(&b, p);
	}
	cof_buf_adds(&b, "</Prefix>");
	if (v2) {
		char *tok = NULL;
		const char *given = s3_arg(r, "continuation-token", tmp, sizeof tmp);
		if (given)
			s3_xml_el(&b, "ContinuationToken", given);
		if (truncated && (tok = cof_base64url_encode(last, strlen(last))))
			s3_xml_el(&b, "NextContinuationToken", tok);
		free(tok);
		const char *sa = s3_arg(r, "start-after", tmp, sizeof tmp);
		if (sa)
			s3_xml_el(&b, "StartAfter", sa);
		cof_buf_addf(&b, "<KeyCount>%" PRId64 "</KeyCount>", count);
	} else if (vers) {
		const char *mk = s3_arg(r, "key-marker", tmp, sizeof tmp);
		cof_buf_adds(&b, "<KeyMarker>");
		s3_xml_esc(&b, mk ? mk : "");
		cof_buf_adds(&b, "</KeyMarker><VersionIdMarker></VersionIdMarker>");
		if (truncated) {
			s3_xml_el(&b, "NextKeyMarker", lastcp[0] && !strncmp(last, lastcp,
				  strlen(lastcp)) && strlen(last) == strlen(lastcp) + 4 ? lastcp : last);
			cof_buf_adds(&b, "<NextVersionIdMarker></NextVersionIdMarker>");
		}
	} else {
		const char *mk = s3_arg(r, "marker", tmp, sizeof tmp);
		cof_buf_adds(&b, "<Marker>");
		s3_xml_esc(&b, mk ? mk : "");
		cof_buf_adds(&b, "</Marker>");
		if (truncated && d)
			s3_xml_el(&b, "NextMarker", lastcp[0] && !strncmp(last, lastcp, strlen(lastcp)) &&
			       strlen(last) == strlen(lastcp) + 4 ? lastcp : last);
	}
	cof_buf_addf(&b, "<MaxKeys>%" PRId64 "</MaxKeys>", max);
	if (d) {
		cof_buf_adds(&b, "<Delimiter>");
		if (url_enc)
			cof_sigv4_encode(&b, d, strlen(d), 1);
		else
			s3_xml_esc(&b, d);
		cof_buf_adds(&b, "</Delimiter>");
	}
	if (url_enc)
		cof_buf_adds(&b, "<EncodingType>url</EncodingType>");
	cof_buf_addf(&b, "<IsTruncated>%s</IsTruncated>", truncated ? "true" : "false");
	if (items.data)
		cof_buf_add(&b, items.data, items.len);
	if (prefixes.data)
		cof_buf_add(&b, prefixes.data, prefixes.len);
	cof_buf_addf(&b, "</%s>", vers ? "ListVersionsResult" : "ListBucketResult");
	cof_buf_release(&items);
	cof_buf_release(&prefixes);
	return s3_send_xml(r, 200, &b);
}

/* ------------------------------------------------------------- objects */

/* `tag`: the ETag (s3_meta_of); `m` the kept metadata (NULL: none). */
static void object_headers(struct MHD_Response *resp, const cof_file *f, const char *tag,
			   json_t *m)
{
	char etag[S3_ETAG_MAX + 2], ver[32], date[64];
	struct tm tm;
	time_t t = (time_t)f->updated_at;

	snprintf(etag, sizeof etag, "\"%s\"", tag);
	snprintf(ver, sizeof ver, "%" PRId64, f->version);
	gmtime_r(&t, &tm);
	strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
	MHD_add_response_header(resp, "ETag", etag);
	MHD_add_response_header(resp, "Last-Modified", date);
	MHD_add_response_header(resp, "x-amz-version-id", ver);
	MHD_add_response_header(resp, "Accept-Ranges", "bytes");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
				f->content_type[0] ? f->content_type : "application/octet-stream");
	s3_meta_headers(resp, m);
}

/* Whether the ETag list `list` names `sha` (or is *). */
static int etag_match(const char *list, const char *sha)
{
	char want[80];

	snprintf(want, sizeof want, "\"%s\"", sha);
	for (const char *p = list; *p;) {
		while (*p == ' ' || *p == ',')
			p++;
		const char *e = p;
		while (*e && *e != ',')
			e++;
		size_t n = (size_t)(e - p);
		while (n && p[n - 1] == ' ')
			n--;
		if (n >= 2 && p[0] == 'W' && p[1] == '/')
			p += 2, n -= 2;
		if ((n == 1 && *p == '*') || (n == strlen(want) && !memcmp(p, want, n)) ||
		    (n == strlen(sha) && !memcmp(p, sha, n)))
			return 1;
		p = e;
	}
	return 0;
}

/* An HTTP date (RFC 7231) to Unix seconds; -1 when malformed. */
static int64_t http_time(const char *s)
{
	struct tm tm = {0};

	if (!s || !strptime(s, "%a, %d %b %Y %H:%M:%S GMT", &tm))
		return -1;
	return (int64_t)timegm(&tm);
}

/* S3's conditional reads: 412 or 304 into r (then 1), else 0. */
static int conditions(s3req *r, const cof_file *f, const char *etag)
{
	const char *im = s3_hdr(r, "If-Match"), *inm = s3_hdr(r, "If-None-Match");
	int64_t ims = http_time(s3_hdr(r, "If-Modified-Since"));
	int64_t ius = http_time(s3_hdr(r, "If-Unmodified-Since"));

	if (im && !etag_match(im, etag)) {
		s3_fail(r, 412, "PreconditionFailed", "At least one of the pre-conditions you "
			"specified did not hold (If-Match)");
		return 1;
	}
	if (!im && ius >= 0 && f->updated_at > ius) {
		s3_fail(r, 412, "PreconditionFailed", "At least one of the pre-conditions you "
			"specified did not hold (If-Unmodified-Since)");
		return 1;
	}
	if ((inm && etag_match(inm, etag)) || (!inm && ims >= 0 && f->updated_at <= ims)) {
		s3_fail(r, 304, "NotModified", "Not Modified");
		return 1;
	}
	return 0;
}

typedef struct reader {
	cof_file f;
	int64_t off, end;
} reader;

static ssize_t read_cb(void *cls, uint64_t pos, char *buf, size_t max)
{
	reader *rd = cls;
	int64_t at = rd->off + (int64_t)pos;
	size_t got = 0;
	cof_err err = {0};

	if (at >= rd->end)
		return MHD_CONTENT_READER_END_OF_STREAM;
	if ((int64_t)max > rd->end - at)
		max = (size_t)(rd->end - at);
	if (cof_file_read_at(&rd->f, at, buf, max, &got, &err) || got == 0) {
		cof_err_clear(&err);
		return MHD_CONTENT_READER_END_WITH_ERROR;
	}
	return (ssize_t)got;
}

static void read_free(void *cls)
{
	reader *rd = cls;

	cof_file_close(&rd->f);
	free(rd);
}

/* GetObject's response-* arguments: the answer's headers they set (S3's
 * names). */
static const char *const overrides[][2] = {
	{"response-content-type", MHD_HTTP_HEADER_CONTENT_TYPE},
	{"response-content-language", "Content-Language"},
	{"response-expires", "Expires"},
	{"response-cache-control", "Cache-Control"},
	{"response-content-disposition", "Content-Disposition"},
	{"response-content-encoding", "Content-Encoding"},
};

/* The response-* values are header values: 0, or -1 (failed: a control
 * character or too long). */
static int overrides_check(s3req *r)
{
	char v[1024];

	for (size_t i = 0; i < sizeof overrides / sizeof *overrides; i++) {
		if (!s3_has_arg(r, overrides[i][0]))
			continue;
		if (!s3_arg(r, overrides[i][0], v, sizeof v)) {
			s3_fail(r, 400, "InvalidArgument", "%s is longer than %zu bytes",
				overrides[i][0], sizeof v - 1);
			return -1;
		}
		for (const char *p = v; *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f) {
				s3_fail(r, 400, "InvalidArgument", "%s contains the control "
					"character 0x%02x", overrides[i][0], (unsigned char)*p);
				return -1;
			}
	}
	return 0;
}

static void overrides_apply(s3req *r, struct MHD_Response *resp)
{
	char v[1024];

	for (size_t i = 0; i < sizeof overrides / sizeof *overrides; i++)
		if (s3_arg(r, overrides[i][0], v, sizeof v)) {
			const char *old = MHD_get_response_header(resp, overrides[i][1]);
			if (old)
				MHD_del_response_header(resp, overrides[i][1], old);
			MHD_add_response_header(resp, overrides[i][1], v);
		}
}

/* GetObject and HeadObject (?versionId=N: the file at that version). */
static enum MHD_Result get_object(s3req *r)
{
	reader *rd;
	cof_err err = {0};
	char vbuf[32];
	const char *vid = s3_arg(r, "versionId", vbuf, sizeof vbuf);
	int64_t seq = -1;
	int head = !strcmp(r->method, "HEAD");

	if (s3_resolve(r) || overrides_check(r))
		return s3_send_error(r);
	if (vid && strcmp(vid, "null")) {
		char *end;
		seq = strtoll(vid, &end, 10);
		if (!*vid || *end || seq < 1) {
			s3_fail(r, 400, "InvalidArgument", "Invalid version id specified (a "
				"coffer version: a whole number >= 1)");
			return s3_send_error(r);
		}
	}
	rd = cof_calloc(1, sizeof *rd);
	if (cof_file_open_at(s3srv->st, r->who.org, r->vol, r->key, NULL, seq, &rd->f, &err)) {
		free(rd);
		if (seq >= 0 && err.code == COF_EVALIDATION) {
			cof_err_clear(&err);
			s3_fail(r, 404, "NoSuchVersion", "The specified version does not exist");
		} else {
			s3_fail_err(r, &err, "NoSuchKey");
		}
		return s3_send_error(r);
	}
	if (seq >= 0 && rd->f.version != seq) {
		read_free(rd);
		s3_fail(r, 404, "NoSuchVersion", "The specified version does not exist (the "
			"file was at version %s then only if it was written at that seq)", vid);
		return s3_send_error(r);
	}
	char etag[S3_ETAG_MAX];
	json_t *meta = NULL;
	if (s3_meta_of(r, r->vol, r->key, &rd->f, etag, &meta)) {
		read_free(rd);
		return s3_send_error(r);
	}
	if (conditions(r, &rd->f, etag)) {
		struct MHD_Response *resp;
		if (r->e.status != 304) {
			json_decref(meta);
			read_free(rd);
			return s3_send_error(r);
		}
		s3_send_empty(r, 304, &resp);
		if (resp)
			object_headers(resp, &rd->f, etag, NULL);
		json_decref(meta);
		read_free(rd);
		return s3_queue(r, 304, resp);
	}
	int64_t start = 0, len = rd->f.size, nparts = 0;
	unsigned status = 200;
	const char *range = s3_hdr(r, "Range");
	if (s3_has_arg(r, "partNumber")) {
		int pn = s3mp_part_number(r);
		if (pn > 0 && range)
			s3_fail(r, 400, "InvalidRequest", "Cannot specify both Range header and "
				"partNumber query parameter");
		if (r->failed) {
			read_free(rd);
			json_decref(meta);
			return s3_send_error(r);
		}
		int64_t *sizes = NULL;
		nparts = s3mp_parts_of(r->who.org, r->vol, r->key, rd->f.version, rd->f.size,
				       &sizes);
		if (pn > (nparts ? nparts : 1)) {
			free(sizes);
			read_free(rd);
			json_decref(meta);
			s3_fail(r, 400, "InvalidPart", "The requested partNumber is not "
				"satisfiable (the object has %" PRId64 " part%s)",
				nparts ? nparts : 1, nparts > 1 ? "s" : "");
			return s3_send_error(r);
		}
		if (nparts) {   /* the part's bytes, as a range of the whole */
			for (int i = 0; i < pn - 1; i++)
				start += sizes[i];
			len = sizes[pn - 1];
			status = 206;
		}
		free(sizes);
		range = NULL;
	}
	int rr = range ? cof_range_parse(range, rd->f.size, &start, &len) : 0;
	if (rr < 0) {
		int64_t size = rd->f.size;
		read_free(rd);
		json_decref(meta);
		s3_fail(r, 416, "InvalidRange", "The requested range is not satisfiable (the "
			"object is %" PRId64 " bytes)", size);
		return s3_send_error(r);
	}
	if (rr == 1)
		status = 206;
	else if (status != 206)
		start = 0, len = rd->f.size;
	/* whole small blobs are checked against their hash before any byte goes */
	if (status == 200 && !head && cof_file_verify(&rd->f, r->key, &err)) {
		read_free(rd);
		json_decref(meta);
		s3_fail_err(r, &err, NULL);
		return s3_send_error(r);
	}
	rd->off = start;
	rd->end = start + len;
	struct MHD_Response *resp =
		MHD_create_response_from_callback((uint64_t)len, S3_BLOCK, read_cb, rd, read_free);
	if (!resp) {
		read_free(rd);
		json_decref(meta);
		return MHD_NO;
	}
	object_headers(resp, &rd->f, etag, meta);
	json_decref(meta);
	overrides_apply(r, resp);
	if (status == 206) {
		char cr[96];
		snprintf(cr, sizeof cr, "bytes %" PRId64 "-%" PRId64 "/%" PRId64, start,
			 start + len - 1, rd->f.size);
		MHD_add_response_header(resp, "Content-Range", cr);
	}
	if (nparts) {
		char pc[24];
		snprintf(pc, sizeof pc, "%" PRId64, nparts);
		MHD_add_response_header(resp, "x-amz-mp-parts-count", pc);
	}
	return s3_queue(r, status, resp);
}

/* The precondition of a write from If-Match / If-None-Match (S3's
 * conditional PUT): a version condition on the file as it is now. 0, or -1
 * (failed). */
int s3_write_cond(s3req *r, cof_cond *c)
{
	const char *im = s3_hdr(r, "If-Match"), *inm = s3_hdr(r, "If-None-Match");
	cof_file f = {0};
	cof_err err = {0};

	*c = (cof_cond){.kind = COF_COND_NONE};
	if (inm) {
		if (strcmp(inm, "*")) {
			s3_fail(r, 501, "NotImplemented", "If-None-Match on a write takes only *");
			return -1;
		}
		c->kind = COF_COND_ABSENT;
	}
	if (im) {
		if (cof_file_open(s3srv->st, r->who.org, r->vol, r->key, NULL, &f, &err)) {
			if (err.code == COF_ENOTFOUND) {
				cof_err_clear(&err);
				s3_fail(r, 404, "NoSuchKey", "If-Match: the key does not exist");
			} else {
				s3_fail_err(r, &err, "NoSuchKey");
			}
			return -1;
		}
		char etag[S3_ETAG_MAX];
		if (s3_meta_of(r, r->vol, r->key, &f, etag, NULL)) {
			cof_file_close(&f);
			return -1;
		}
		int ok = etag_match(im, etag);
		c->kind = COF_COND_VERSION;
		c->version = f.version;
		cof_file_close(&f);
		if (!ok) {
			s3_fail(r, 412, "PreconditionFailed", "At least one of the pre-conditions "
				"you specified did not hold (If-Match)");
			return -1;
		}
	}
	return 0;
}

/* The answer of a write: ETag and x-amz-version-id from the library's JSON. */
enum MHD_Result s3_write_answer(s3req *r, json_t *out, cof_buf *xml)
{
	char etag[S3_ETAG_MAX + 2], ver[32];
	struct MHD_Response *resp;
	const char *tag = json_string_value(json_object_get(out, "etag"));

	snprintf(etag, sizeof etag, "\"%s\"",
		 tag ? tag : json_string_value(json_object_get(out, "sha256")) ?: "");
	snprintf(ver, sizeof ver, "%" JSON_INTEGER_FORMAT,
		 json_integer_value(json_object_get(out, "version")));
	if (xml) {
		size_t len;
		char *data = cof_buf_detach(xml, &len);
		resp = MHD_create_response_from_buffer(len, data, MHD_RESPMEM_MUST_FREE);
		if (!resp)
			free(data);
		else
			MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
						"application/xml");
	} else {
		s3_send_empty(r, 200, &resp);
	}
	if (resp) {
		MHD_add_response_header(resp, "ETag", etag);
		MHD_add_response_header(resp, "x-amz-version-id", ver);
	}
	json_decref(out);
	return s3_queue(r, 200, resp);
}

/* The first call of a PutObject: the volume, the room, the upload. */
static int put_begin(s3req *r)
{
	cof_err err = {0};
	const char *cl = s3_hdr(r, "Content-Length");
	int64_t declared = cl ? strtoll(cl, NULL, 10) : -1;

	if (s3_resolve(r))
		return -1;
	if (declared > S3_OBJECT_MAX) {
		s3_fail(r, 400, "EntityTooLarge", "Your proposed upload exceeds the maximum "
			"allowed object size (5 GiB in one PutObject)");
		return -1;
	}
	if (cof_upload_begin(s3srv->st, S3_OBJECT_MAX, &r->up, &err) ||
	    cof_upload_room(r->up, r->who.org, r->vol, r->key, declared, &err)) {
		s3_fail_err(r, &err, "NoSuchBucket");
		return -1;
	}
	if (s3_md5_begin(r))
		return -1;
	r->streaming = 1;
	return 0;
}

const cof_by *s3_by(s3req *r)
{
	r->by = (cof_by){.key_id = r->who.key_id, .agent = r->who.agent, .via = "s3"};
	return &r->by;
}

static enum MHD_Result put_object(s3req *r)
{
	cof_cond c;
	cof_err err = {0};
	json_t *out = NULL;
	int created;
	const char *ct = s3_hdr(r, "Content-Type");
	cof_upload *up = r->up;
	json_t *meta;
	char *text;

	r->up = NULL;
	if (!(meta = s3_meta_from_request(r)) || s3_write_cond(r, &c)) {
		json_decref(meta);
		cof_upload_abort(up);
		return s3_send_error(r);
	}
	text = s3_meta_text(meta, r->md5_hex);
	json_decref(meta);
	if (ct && !*ct)
		ct = NULL;
	c.by = s3_by(r);
	c.s3meta = text;
	if (cof_file_put(s3srv->st, r->who.org, r->vol, r->key, up, ct, c, &out, &created,
			 &err)) {
		free(text);
		s3_fail_err(r, &err, "NoSuchBucket");
		return s3_send_error(r);
	}
	free(text);
	json_object_set_new(out, "etag", json_string(r->md5_hex));
	return s3_write_answer(r, out, NULL);
}

/* CopyObject's x-amz-copy-source-if-* on the source as it is now: 0, or -1
 * (failed: PreconditionFailed, or the source is not there). If-Match holding
 * outweighs If-Unmodified-Since, If-None-Match If-Modified-Since, as S3. */
static int copy_source_conditions(s3req *r, const char *vol, const char *key)
{
	const char *im = s3_hdr(r, "x-amz-copy-source-if-match");
	const char *inm = s3_hdr(r, "x-amz-copy-source-if-none-match");
	const char *ims_h = s3_hdr(r, "x-amz-copy-source-if-modified-since");
	const char *ius_h = s3_hdr(r, "x-amz-copy-source-if-unmodified-since");
	cof_file f = {0};
	cof_err err = {0};
	const char *which = NULL;

	if (!im && !inm && !ims_h && !ius_h)
		return 0;
	if (cof_file_open(s3srv->st, r->who.org, vol, key, NULL, &f, &err)) {
		s3_fail_err(r, &err, "NoSuchKey");
		return -1;
	}
	int64_t ims = http_time(ims_h), ius = http_time(ius_h);
	char etag[S3_ETAG_MAX];
	if (s3_meta_of(r, vol, key, &f, etag, NULL)) {
		cof_file_close(&f);
		return -1;
	}
	if (im && !etag_match(im, etag))
		which = "x-amz-copy-source-if-match";
	else if (!im && ius >= 0 && f.updated_at > ius)
		which = "x-amz-copy-source-if-unmodified-since";
	else if (inm && etag_match(inm, etag))
		which = "x-amz-copy-source-if-none-match";
	else if (!inm && ims >= 0 && f.updated_at <= ims)
		which = "x-amz-copy-source-if-modified-since";
	cof_file_close(&f);
	if (which) {
		s3_fail(r, 412, "PreconditionFailed", "At least one of the pre-conditions you "
			"specified did not hold (%s)", which);
		return -1;
	}
	return 0;
}

/* CopyObject: x-amz-copy-source "/BUCKET/KEY" (or without the '/'), the same
 * content named again (cof_file_copy: no byte is read or written). */
static enum MHD_Result copy_object(s3req *r, const char *src)
{
	char *dec = cof_malloc(strlen(src) + 1), *key, srcvol[48], when[32];
	cof_err err = {0};
	cof_cond c;
	json_t *out = NULL;
	s3req sr = {0};

	if (cof_sigv4_decode(src, strlen(src), dec) < 0) {
		free(dec);
		s3_fail(r, 400, "InvalidArgument", "x-amz-copy-source has a bad %%-escape");
		return s3_send_error(r);
	}
	char *s = dec + (dec[0] == '/');
	char *q = strstr(s, "?versionId=");
	if (q) {
		free(dec);
		s3_fail(r, 501, "NotImplemented", "x-amz-copy-source with a versionId is not "
			"served");
		return s3_send_error(r);
	}
	key = strchr(s, '/');
	if (!key || !key[1]) {
		free(dec);
		s3_fail(r, 400, "InvalidArgument", "x-amz-copy-source must be BUCKET/KEY");
		return s3_send_error(r);
	}
	*key++ = '\0';
	sr.conn = r->conn;
	sr.who = r->who;
	sr.bucket = s;
	sr.raw = r->raw;
	sr.method = r->method;
	if (s3_resolve(&sr)) {
		r->failed = 1;
		r->e = sr.e;
		free(dec);
		return s3_send_error(r);
	}
	snprintf(srcvol, sizeof srcvol, "%s", sr.vol);
	if (copy_source_conditions(r, srcvol, key) || s3_resolve(r) || s3_write_cond(r, &c)) {
		free(dec);
		return s3_send_error(r);
	}
	const char *directive = s3_hdr(r, "x-amz-metadata-directive");
	const char *ct = directive && !strcmp(directive, "REPLACE") ?
		s3_hdr(r, "Content-Type") : NULL;
	if (!strcmp(srcvol, r->vol) && !strcmp(key, r->key) &&
	    !(directive && !strcmp(directive, "REPLACE"))) {
		free(dec);
		s3_fail(r, 400, "InvalidRequest", "This copy request is illegal because it is "
			"trying to copy an object to itself without changing the object's "
			"metadata");
		return s3_send_error(r);
	}
	/* The source's ETag goes with its bytes. COPY: the library keeps the
	 * source version's text; REPLACE: this request's metadata with it (the
	 * source read just before the copy, as its conditions are). */
	char etag[S3_ETAG_MAX], *text = NULL;
	cof_file sf = {0};
	json_t *meta = NULL;
	int replace = directive && !strcmp(directive, "REPLACE");
	if (cof_file_open(s3srv->st, r->who.org, srcvol, key, NULL, &sf, &err)) {
		free(dec);
		s3_fail_err(r, &err, "NoSuchKey");
		return s3_send_error(r);
	}
	int bad = s3_meta_of(r, srcvol, key, &sf, etag, NULL) ||
		  (replace && !(meta = s3_meta_from_request(r)));
	cof_file_close(&sf);
	if (bad) {
		free(dec);
		return s3_send_error(r);
	}
	if (replace) {
		/* an ETag that is the SHA-256 is not kept: it is what answers anyway */
		text = s3_meta_text(meta, strlen(etag) == 64 ? NULL : etag);
		json_decref(meta);
	}
	c.by = s3_by(r);
	c.s3meta = text;
	if (cof_file_copy(s3srv->st, r->who.org, srcvol, key, r->vol, r->key, ct, c, &out,
			  &err)) {
		free(text);
		free(dec);
		s3_fail_err(r, &err, "NoSuchKey");
		return s3_send_error(r);
	}
	free(text);
	free(dec);
	json_object_set_new(out, "etag", json_string(etag));
	cof_buf b = COF_BUF_INIT;
	s3_iso_time(cof_now(), when);
	cof_buf_addf(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<CopyObjectResult>"
		     "<LastModified>%s</LastModified><ETag>&quot;%s&quot;</ETag>"
		     "</CopyObjectResult>", when, etag);
	return s3_write_answer(r, out, &b);
}

static enum MHD_Result delete_object(s3req *r)
{
	cof_err err = {0};
	json_t *out = NULL;
	cof_cond c = {0};

	if (s3_resolve(r))
		return s3_send_error(r);
	char vb[32];
	const char *vid = s3_arg(r, "versionId", vb, sizeof vb);
	if (vid) {
		/* only the current version can go (as the key): history stays */
		cof_file f = {0};
		if (cof_file_open(s3srv->st, r->who.org, r->vol, r->key, NULL, &f, &err)) {
			cof_err_clear(&err);
			return s3_send_empty(r, 204, NULL);
		}
		char cur[32];
		snprintf(cur, sizeof cur, "%" PRId64, f.version);
		c.kind = COF_COND_VERSION;
		c.version = f.version;
		cof_file_close(&f);
		if (strcmp(cur, vid)) {
			s3_fail(r, 501, "NotImplemented", "only the current version (%s) of a key "
				"can be deleted; coffer keeps its history", cur);
			return s3_send_error(r);
		}
	}
	c.by = s3_by(r);
	if (cof_file_remove(s3srv->st, r->who.org, r->vol, r->key, c, &out, &err)) {
		if (err.code != COF_ENOTFOUND) {
			s3_fail_err(r, &err, "NoSuchKey");
			return s3_send_error(r);
		}
		cof_err_clear(&err); /* S3 answers 204 for a key that is not there */
	}
	json_decref(out);
	return s3_send_empty(r, 204, NULL);
}

static enum MHD_Result delete_objects(s3req *r)
{
	char **keys = NULL;
	size_t n = 0;
	int quiet = 0;
	const char *why = NULL;
	cof_buf b = COF_BUF_INIT;

	if (s3_resolve(r))
		return s3_send_error(r);
	if (cof_s3xml_delete(r->body.data ? r->body.data : "", r->body.len, &keys, &n, &quiet,
			     &why)) {
		s3_fail(r, 400, "MalformedXML", "The XML you provided was not well-formed or did "
			"not validate against our published schema: %s", why);
		return s3_send_error(r);
	}
	cof_buf_adds(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<DeleteResult "
		     "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">");
	for (size_t i = 0; i < n; i++) {
		cof_err err = {0};
		json_t *out = NULL;
		cof_cond c = {0};
		c.by = s3_by(r);
		if (!cof_file_remove(s3srv->st, r->who.org, r->vol, keys[i], c, &out, &err) ||
		    err.code == COF_ENOTFOUND) {
			json_decref(out);
			cof_err_clear(&err);
			if (!quiet) {
				cof_buf_adds(&b, "<Deleted>");
				s3_xml_el(&b, "Key", keys[i]);
				cof_buf_adds(&b, "</Deleted>");
			}
			continue;
		}
		s3req er = {0};
		er.method = r->method;
		s3_fail_err(&er, &err, "NoSuchKey");
		cof_buf_adds(&b, "<Error>");
		s3_xml_el(&b, "Key", keys[i]);
		s3_xml_el(&b, "Code", er.e.code);
		s3_xml_el(&b, "Message", er.e.msg);
		cof_buf_adds(&b, "</Error>");
	}
	cof_buf_adds(&b, "</DeleteResult>");
	cof_s3xml_free(keys, n);
	return s3_send_xml(r, 200, &b);
}

/* ------------------------------------------------------------ dispatch */

/* Subresources of a bucket or an object that are not served. */
static const char *const unserved[] = {
	"acl", "policy", "cors", "lifecycle", "tagging", "website", "logging",
	"notification", "replication", "encryption", "object-lock", "retention",
	"legal-hold", "requestPayment", "accelerate", "analytics", "inventory", "metrics",
	"intelligent-tiering", "ownershipControls", "publicAccessBlock", "torrent",
	"restore", "select", "attributes", NULL
};

static enum MHD_Result dispatch(s3req *r)
{
	const char *m = r->method;
	int get = !strcmp(m, "GET") || !strcmp(m, "HEAD");

	for (size_t i = 0; unserved[i]; i++)
		if (s3_has_arg(r, unserved[i])) {
			s3_fail(r, 501, "NotImplemented", "the ?%s subresource is not served "
				"(docs/s3.md)", unserved[i]);
			return s3_send_error(r);
		}
	if (!r->bucket) {
		if (!strcmp(m, "GET"))
			return list_buckets(r);
		s3_fail(r, 405, "MethodNotAllowed", "The specified method is not allowed "
			"against this resource");
		return s3_send_error(r);
	}
	if (!r->key) {
		if (!strcmp(m, "HEAD")) {
			if (s3_resolve(r))
				return s3_send_error(r);
			return s3_send_empty(r, 200, NULL);
		}
		if (!strcmp(m, "GET")) {
			char b[16];
			if (s3_has_arg(r, "versioning")) {
				if (s3_resolve(r))
					return s3_send_error(r);
				cof_buf x = COF_BUF_INIT;
				cof_buf_adds(&x, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
					     "<VersioningConfiguration xmlns=\"http://s3.amazonaws."
					     "com/doc/2006-03-01/\"><Status>Enabled</Status>"
					     "</VersioningConfiguration>");
				return s3_send_xml(r, 200, &x);
			}
			if (s3_has_arg(r, "uploads"))
				return s3mp_list_uploads(r);
			if (s3_has_arg(r, "location")) {
				if (s3_resolve(r))
					return s3_send_error(r);
				cof_buf x = COF_BUF_INIT;
				cof_buf_adds(&x, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
					     "<LocationConstraint xmlns=\"http://s3.amazonaws.com/"
					     "doc/2006-03-01/\"/>");
				return s3_send_xml(r, 200, &x);
			}
			const char *lt = s3_arg(r, "list-type", b, sizeof b);
			if (lt && strcmp(lt, "2")) {
				s3_fail(r, 400, "InvalidArgument", "list-type must be 2");
				return s3_send_error(r);
			}
			if (s3_has_arg(r, "versions"))
				return list_objects(r, 3);
			return list_objects(r, lt != NULL ? 2 : 1);
		}
		if (!strcmp(m, "PUT")) {
			if (s3_has_arg(r, "versioning")) {
				s3_fail(r, 501, "NotImplemented", "versioning is always Enabled: "
					"every write is a new coffer version");
				return s3_send_error(r);
			}
			return create_bucket(r);
		}
		if (!strcmp(m, "DELETE"))
			return delete_bucket(r);
		if (!strcmp(m, "POST") && s3_has_arg(r, "delete"))
			return delete_objects(r);
		s3_fail(r, 405, "MethodNotAllowed", "The specified method is not allowed "
			"against this resource");
		return s3_send_error(r);
	}
	if (s3_has_arg(r, "uploadId")) {
		if (!strcmp(m, "PUT") && r->part)
			return s3mp_part_end(r);
		if (!strcmp(m, "PUT")) {
			const char *cr = s3_hdr(r, "x-amz-copy-source-range");
			int64_t first, last;
			if (cr && cof_copy_range_parse(cr, &first, &last))
				s3_fail(r, 400, "InvalidArgument", "The x-amz-copy-source-range "
					"value must be of the form bytes=first-last where first and "
					"last are the zero-based offsets of the first and last bytes "
					"to copy");
			else
				s3_fail(r, 501, "NotImplemented", "UploadPartCopy is not served");
			return s3_send_error(r);
		}
		if (!strcmp(m, "POST"))
			return s3mp_complete(r);
		if (!strcmp(m, "DELETE"))
			return s3mp_abort(r);
		if (!strcmp(m, "GET"))
			return s3mp_list_parts(r);
	}
	if (!strcmp(m, "POST") && s3_has_arg(r, "uploads"))
		return s3mp_create(r);
	if (get)
		return get_object(r);
	if (!strcmp(m, "PUT")) {
		const char *src = s3_hdr(r, "x-amz-copy-source");
		if (src)
			return copy_object(r, src);
		return put_object(r);
	}
	if (!strcmp(m, "DELETE"))
		return delete_object(r);
	s3_fail(r, 405, "MethodNotAllowed", "The specified method is not allowed against "
		"this resource");
	return s3_send_error(r);
}

/* Which requests carry a body the handler reads whole (XML). */
static int wants_xml_body(s3req *r)
{
	return !strcmp(r->method, "POST") || (!strcmp(r->method, "PUT") && !r->key);
}

static void s3req_free(s3req *r)
{
	if (!r)
		return;
	free(r->raw);
	free(r->bucket);
	free(r->key);
	for (size_t i = 0; i < r->nargs; i++) {
		free((char *)r->args[i].name);
		free((char *)r->args[i].value);
	}
	cof_upload_abort(r->up);
	cof_buf_release(&r->body);
	EVP_MD_CTX_free(r->sha);
	EVP_MD_CTX_free(r->md5);
	free(r);
}

/* At the body's end: the hashes the client gave hold. 0 or -1 (failed). */
static int body_checks(s3req *r)
{
	unsigned char h[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	char hex[65];

	if (r->sha) {
		EVP_DigestFinal_ex(r->sha, h, &n);
		cof_hex(h, 32, hex);
		if (strcmp(hex, r->want_sha)) {
			s3_fail(r, 400, "XAmzContentSHA256Mismatch", "The provided "
				"'x-amz-content-sha256' header does not match what was computed");
			return -1;
		}
	}
	if (r->md5) {
		EVP_DigestFinal_ex(r->md5, h, &n);
		cof_hex(h, 16, r->md5_hex);
		if (r->check_md5 && memcmp(h, r->want_md5, 16)) {
			s3_fail(r, 400, "BadDigest", "The Content-MD5 you specified did not match "
				"what we received");
			return -1;
		}
	}
	return 0;
}

static enum MHD_Result s3_access(void *cls, struct MHD_Connection *conn, const char *url,
				 const char *method, const char *version,
				 const char *upload, size_t *upload_size, void **con_cls)
{
	s3req *r = *con_cls;
	cof_err err = {0};

	(void)cls, (void)version;
	if (!r) {
		r = cof_calloc(1, sizeof *r);
		*con_cls = r;
		r->conn = conn;
		r->method = method;
		r->raw = cof_strdup(url);
		r->body.max = S3_XML_MAX;
		MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, collect_arg, r);
		if (!r->failed && !split_path(r) && !authenticate(r) && r->key &&
		    !strcmp(method, "PUT") && !s3_hdr(r, "x-amz-copy-source")) {
			int busy = 0;
			for (size_t i = 0; unserved[i]; i++)
				busy |= s3_has_arg(r, unserved[i]);
			if (s3_has_arg(r, "uploadId") && s3_has_arg(r, "partNumber"))
				s3mp_part_begin(r);
			else if (!busy)
				put_begin(r);
		}
		if (r->failed) {
			const char *cl = s3_hdr(r, "Content-Length");
			/* a small body is read and dropped so that the client reads the
			 * error; a big one is not waited for */
			if (cl && strtoll(cl, NULL, 10) > S3_DROP_MAX)
				return s3_send_error(r);
		}
		return MHD_YES;
	}
	if (*upload_size) {
		size_t n = *upload_size;
		*upload_size = 0;
		if (r->failed) {
			r->dropped += (int64_t)n;
			if (r->dropped > S3_DROP_MAX)
				return MHD_NO;
			return MHD_YES;
		}
		if (r->sha)
			EVP_DigestUpdate(r->sha, upload, n);
		if (r->md5)
			EVP_DigestUpdate(r->md5, upload, n);
		if (r->streaming || r->part) {
			if (cof_upload_write(r->up, upload, n, &err))
				s3_fail_err(r, &err, NULL);
		} else if (wants_xml_body(r)) {
			if (cof_buf_add(&r->body, upload, n))
				s3_fail(r, 400, "MaxMessageLengthExceeded", "the request body is "
					"longer than %zu bytes", S3_XML_MAX);
		}
		return MHD_YES;
	}
	if (r->failed || body_checks(r))
		return s3_send_error(r);
	return dispatch(r);
}

static void s3_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	(void)cls, (void)conn, (void)toe;
	s3req_free(*con_cls);
	*con_cls = NULL;
}

int http_s3_listen(http_server *srv, const char *host, const char *port)
{
	struct addrinfo *res = NULL;

	if (http_side_resolve("--s3-listen", host, port, &res))
		return -1;
	s3srv = srv;
	s3d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
			       MHD_USE_ERROR_LOG |
			       (res->ai_family == AF_INET6 ? MHD_USE_IPv6 : 0),
			       0, NULL, NULL, s3_access, srv,
			       MHD_OPTION_EXTERNAL_LOGGER, http_log_mhd, NULL, /* first */
			       MHD_OPTION_SOCK_ADDR, res->ai_addr,
			       MHD_OPTION_UNESCAPE_CALLBACK, http_unescape_none, NULL,
			       MHD_OPTION_NOTIFY_COMPLETED, s3_completed, NULL,
			       MHD_OPTION_CONNECTION_LIMIT, (unsigned)512,
			       MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(64 * 1024),
			       MHD_OPTION_THREAD_STACK_SIZE, (size_t)(1 << 20),
			       MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)300, MHD_OPTION_END);
	freeaddrinfo(res);
	return http_side_started(s3d, "--s3-listen", "S3 gateway", host, port, "");
}

void http_s3_stop(void)
{
	if (s3d)
		MHD_stop_daemon(s3d);
	s3d = NULL;
}
