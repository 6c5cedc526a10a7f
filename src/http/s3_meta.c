/*
 * s3_meta.c — what the S3 gateway keeps with each version it writes, beside
 * the bytes: user metadata (x-amz-meta-*), the headers S3 answers as sent
 * (Cache-Control, Content-Disposition, Content-Encoding, Content-Language,
 * Expires) and the ETag (the body's MD5, or a multipart upload's
 * MD5-of-MD5s "-N"). One JSON object text per version, opaque to the library
 * (cof_cond.s3meta, kept on the version's rows):
 *
 *     {"etag": "md5hex", "meta": {"name": "value"}, "headers": {"Cache-Control": "..."}}
 *
 * A version written through the HTTP API has none: its ETag is its SHA-256
 * (docs/s3.md), so no HTTP PUT pays for an MD5.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "http/s3_int.h"

#define META_PREFIX "x-amz-meta-"

/* The headers kept and answered as sent. */
static const char *const kept_headers[] = {
	"Cache-Control", "Content-Disposition", "Content-Encoding", "Content-Language",
	"Expires", NULL};

typedef struct collect {
	s3req *r;
	json_t *meta;
	size_t bytes;
} collect;

static enum MHD_Result collect_meta(void *cls, enum MHD_ValueKind kind, const char *key,
				    const char *value)
{
	collect *c = cls;
	size_t pl = strlen(META_PREFIX);
	char name[256];

	(void)kind;
	if (!key || strncasecmp(key, META_PREFIX, pl) || c->r->failed)
		return MHD_YES;
	value = value ? value : "";
	size_t nl = strlen(key + pl), vl = strlen(value);
	if (!nl || nl >= sizeof name) {
		s3_fail(c->r, 400, "InvalidArgument", "a user metadata name (x-amz-meta-NAME) is "
			"1 to %zu bytes", sizeof name - 1);
		return MHD_YES;
	}
	for (size_t i = 0; i <= nl; i++) /* S3 answers the names lowercased */
		name[i] = (char)(key[pl + i] >= 'A' && key[pl + i] <= 'Z' ? key[pl + i] + 32 :
				 key[pl + i]);
	if (!cof_utf8_valid(value, vl)) {
		s3_fail(c->r, 400, "InvalidArgument", "the value of x-amz-meta-%s is not UTF-8",
			name);
		return MHD_YES;
	}
	/* a name sent twice: its values joined, as HTTP joins them */
	const char *had = json_string_value(json_object_get(c->meta, name));
	if (had) {
		char *j = cof_malloc(strlen(had) + vl + 2);
		if (j) {
			sprintf(j, "%s,%s", had, value);
			json_object_set_new(c->meta, name, json_string(j));
			free(j);
		}
		c->bytes += vl + 1;
	} else {
		json_object_set_new(c->meta, name, json_string(value));
		c->bytes += nl + vl;
	}
	return MHD_YES;
}

json_t *s3_meta_from_request(s3req *r)
{
	collect c = {.r = r, .meta = json_object()};
	json_t *hs = json_object(), *out;

	MHD_get_connection_values(r->conn, MHD_HEADER_KIND, collect_meta, &c);
	if (r->failed) {
		json_decref(c.meta);
		json_decref(hs);
		return NULL;
	}
	if (c.bytes > S3_META_MAX) {
		json_decref(c.meta);
		json_decref(hs);
		s3_fail(r, 400, "MetadataTooLarge", "Your metadata headers exceed the maximum "
			"allowed metadata size (%zu bytes of names and values; the limit is %d)",
			c.bytes, S3_META_MAX);
		return NULL;
	}
	for (size_t i = 0; kept_headers[i]; i++) {
		const char *v = s3_hdr(r, kept_headers[i]);
		if (!v || !*v)
			continue;
		if (strlen(v) > S3_META_MAX || !cof_utf8_valid(v, strlen(v))) {
			json_decref(c.meta);
			json_decref(hs);
			s3_fail(r, 400, "InvalidArgument", "%s is not UTF-8 or longer than %d "
				"bytes", kept_headers[i], S3_META_MAX);
			return NULL;
		}
		json_object_set_new(hs, kept_headers[i], json_string(v));
	}
	out = json_object();
	if (json_object_size(c.meta))
		json_object_set_new(out, "meta", c.meta);
	else
		json_decref(c.meta);
	if (json_object_size(hs))
		json_object_set_new(out, "headers", hs);
	else
		json_decref(hs);
	return out;
}

char *s3_meta_text(json_t *m, const char *etag)
{
	json_t *j = m ? json_deep_copy(m) : json_object();
	char *t;

	if (!j)
		return NULL;
	json_object_del(j, "etag");
	if (etag && *etag)
		json_object_set_new(j, "etag", json_string(etag));
	t = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(j);
	return t;
}

int s3_meta_of(s3req *r, const char *vol, const char *key, const cof_file *f,
	       char etag[S3_ETAG_MAX], json_t **meta)
{
	char *t = NULL;
	cof_err err = {0};
	json_t *j = NULL;

	if (meta)
		*meta = NULL;
	if (cof_file_s3meta(s3srv->st, r->who.org, vol, key, f->version, &t, &err)) {
		s3_fail_err(r, &err, "NoSuchKey");
		return -1;
	}
	if (t)
		j = json_loads(t, 0, NULL);
	free(t);
	const char *e = json_string_value(json_object_get(j, "etag"));
	snprintf(etag, S3_ETAG_MAX, "%s", e && strlen(e) < S3_ETAG_MAX ? e : f->sha256);
	if (meta)
		*meta = j;
	else
		json_decref(j);
	return 0;
}

void s3_meta_headers(struct MHD_Response *resp, json_t *m)
{
	const char *k;
	json_t *v;
	char name[300];

	json_object_foreach(json_object_get(m, "meta"), k, v) {
		snprintf(name, sizeof name, META_PREFIX "%s", k);
		if (json_string_value(v))
			MHD_add_response_header(resp, name, json_string_value(v));
	}
	json_object_foreach(json_object_get(m, "headers"), k, v)
		if (json_string_value(v))
			MHD_add_response_header(resp, k, json_string_value(v));
}

/* Content-MD5: base64 of 16 bytes. */
int s3_md5_begin(s3req *r)
{
	const char *md5 = s3_hdr(r, "Content-MD5");

	if (md5) {
		unsigned char *d = NULL;
		size_t dl = 0;
		if (cof_base64_decode(md5, strlen(md5), &d, &dl) || dl != 16) {
			free(d);
			s3_fail(r, 400, "InvalidDigest", "The Content-MD5 you specified is not "
				"valid (base64 of 16 bytes)");
			return -1;
		}
		memcpy(r->want_md5, d, 16);
		free(d);
		r->check_md5 = 1;
	}
	r->md5 = EVP_MD_CTX_new();
	if (!r->md5 || EVP_DigestInit_ex(r->md5, EVP_md5(), NULL) != 1) {
		s3_fail(r, 500, "InternalError", "out of memory");
		return -1;
	}
	return 0;
}
