/*
 * request.c — reading a request: headers, decoded query args, owned strings.
 *
 * MHD is told not to unescape anything (http_unescape_none), so every value
 * here is decoded once, by http_decode, which refuses `%00` instead of letting
 * it cut a path short. MHD has already turned `+` into a space in query args
 * (form encoding); a literal `+` in a query value is sent as `%2B`.
 */
#include <errno.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "http/http.h"
#include "store/notify.h"

size_t http_unescape_none(void *cls, struct MHD_Connection *conn, char *s)
{
	(void)cls;
	(void)conn;
	return strlen(s);
}

/* Remembers `s` to be freed with the request. 0, or -1 (s freed) when out of memory. */
static int own_ptr(http_req *req, char *s)
{
	if (req->nowned == req->capowned) {
		size_t cap = req->capowned ? req->capowned * 2 : 8;
		char **p = cof_realloc(req->owned, cap * sizeof(*p));
		req->owned = p;
		req->capowned = cap;
	}
	req->owned[req->nowned++] = s;
	return 0;
}

char *http_own(http_req *req, const char *s, size_t len)
{
	char *c = cof_malloc(len + 1);

	if (c == NULL)
		return NULL;
	memcpy(c, s, len);
	c[len] = '\0';
	return own_ptr(req, c) ? NULL : c;
}

const char *http_header(http_req *req, const char *name)
{
	return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

char *http_header_trim(http_req *req, const char *name)
{
	const char *v = http_header(req, name);
	size_t len;

	if (v == NULL)
		return NULL;
	while (*v == ' ' || *v == '\t')
		v++;
	len = strlen(v);
	while (len > 0 && (v[len - 1] == ' ' || v[len - 1] == '\t'))
		len--;
	return len ? http_own(req, v, len) : NULL;
}


char *http_decode(http_req *req, const char *in, size_t len, const char *what,
		  cof_err *err)
{
	char *out = cof_malloc(len + 1);
	size_t o = 0;

	if (out == NULL) {
		cof_error(err, COF_EINTERNAL, "out of memory decoding %s", what);
		return NULL;
	}
	for (size_t i = 0; i < len; i++) {
		if (in[i] != '%') {
			out[o++] = in[i];
			continue;
		}
		int hi = i + 1 < len ? cof_hex_value(in[i + 1]) : -1;
		int lo = i + 2 < len ? cof_hex_value(in[i + 2]) : -1;
		if (hi < 0 || lo < 0) {
			free(out);
			cof_error(err, COF_EVALIDATION,
				  "%s has a malformed percent escape", what);
			return NULL;
		}
		if (hi == 0 && lo == 0) {
			free(out);
			cof_error(err, COF_EVALIDATION, "%s contains NUL (%%00)", what);
			return NULL;
		}
		out[o++] = (char)(hi * 16 + lo);
		i += 2;
	}
	out[o] = '\0';
	if (!cof_utf8_valid(out, o)) {
		free(out);
		cof_error(err, COF_EVALIDATION, "%s is not valid UTF-8", what);
		return NULL;
	}
	if (own_ptr(req, out)) {
		cof_error(err, COF_EINTERNAL, "out of memory decoding %s", what);
		return NULL;
	}
	return out;
}

/* An arg given without `=` (`?force`) reads as the empty string. */
int http_query(http_req *req, const char *name, const char **out, cof_err *err)
{
	const char *raw = NULL;
	size_t rawlen = 0;
	char what[96];

	*out = NULL;
	if (MHD_lookup_connection_value_n(req->conn, MHD_GET_ARGUMENT_KIND, name,
					  strlen(name), &raw, &rawlen) != MHD_YES)
		return 0;
	if (raw == NULL)
		raw = ""; /* `?force` without `=`: present and empty */
	snprintf(what, sizeof(what), "query parameter '%s'", name);
	*out = http_decode(req, raw, strlen(raw), what, err);
	return *out ? 0 : -1;
}

int http_query_int(http_req *req, const char *name, int64_t min, int64_t max,
		   int64_t *out, cof_err *err)
{
	const char *v;
	char *end;
	long long n;

	if (http_query(req, name, &v, err))
		return -1;
	if (v == NULL)
		return 0;
	errno = 0;
	n = strtoll(v, &end, 10);
	if (*v < '0' || *v > '9' || *end != '\0' || errno == ERANGE)
		return cof_error(err, COF_EVALIDATION,
				 "query parameter '%s' must be a whole number from %lld to %lld",
				 name, (long long)min, (long long)max);
	if (n < min || n > max)
		return cof_error(err, COF_EVALIDATION,
				 "query parameter '%s' is %lld; it must be from %lld to %lld",
				 name, n, (long long)min, (long long)max);
	*out = n;
	return 0;
}

int http_query_bool(http_req *req, const char *name, int dflt, int *out,
		    cof_err *err)
{
	const char *v;

	if (http_query(req, name, &v, err))
		return -1;
	if (v == NULL)
		*out = dflt;
	else if (!strcasecmp(v, "true") || !strcmp(v, "1") || *v == '\0')
		*out = 1;
	else if (!strcasecmp(v, "false") || !strcmp(v, "0"))
		*out = 0;
	else
		return cof_error(err, COF_EVALIDATION,
				 "query parameter '%s' must be true or false", name);
	return 0;
}

/* Collector state for http_query_all's MHD iteration. */
typedef struct query_all {
	http_req *req;
	const char *name;
	const char **vals;
	size_t max, n;
	cof_err *err;
	int failed;
} query_all;

/* MHD_KeyValueIterator: decodes each value of the wanted arg. */
static enum MHD_Result query_all_one(void *cls, enum MHD_ValueKind kind,
				     const char *key, const char *value)
{
	query_all *q = cls;
	char what[96];

	(void)kind;
	if (strcmp(key, q->name) != 0)
		return MHD_YES;
	if (q->n == q->max) {
		q->failed = 1;
		cof_error(q->err, COF_EVALIDATION,
			  "too many '%s' query parameters; the limit is %zu",
			  q->name, q->max);
		return MHD_NO;
	}
	snprintf(what, sizeof(what), "query parameter '%s'", q->name);
	q->vals[q->n] = http_decode(q->req, value ? value : "",
				    value ? strlen(value) : 0, what, q->err);
	if (q->vals[q->n] == NULL) {
		q->failed = 1;
		return MHD_NO;
	}
	q->n++;
	return MHD_YES;
}

int http_query_all(http_req *req, const char *name, const char **vals,
		   size_t max, size_t *n, cof_err *err)
{
	query_all q = { req, name, vals, max, 0, err, 0 };

	MHD_get_connection_values(req->conn, MHD_GET_ARGUMENT_KIND, query_all_one, &q);
	*n = q.n;
	return q.failed ? -1 : 0;
}

int http_expects_continue(http_req *req)
{
	const char *v = http_header(req, MHD_HTTP_HEADER_EXPECT);
	return v != NULL && strcasecmp(v, "100-continue") == 0;
}

int64_t http_content_length(http_req *req)
{
	const char *v = http_header(req, MHD_HTTP_HEADER_CONTENT_LENGTH);
	char *end;
	long long n;

	if (v == NULL)
		return -1;
	errno = 0;
	n = strtoll(v, &end, 10);
	if (end == v || *end != '\0' || errno == ERANGE || n < 0)
		return -1;
	return n;
}

const cof_idem *http_idem(http_req *req, cof_idem *idem, char hash[65])
{
	cof_buf b = COF_BUF_INIT;
	char *text;
	int rc;

	idem->key = http_header_trim(req, "Idempotency-Key");
	idem->request = NULL;
	if (idem->key == NULL)
		return NULL;
	text = req->json ? json_dumps(req->json, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	rc = cof_buf_addf(&b, "%s\n%s\n%s", req->method, req->url ? req->url : "",
			  text ? text : "{}");
	free(text);
	/* without a hash the library hashes the operation and body itself */
	if (rc == 0 && cof_sha256_hex(b.data, b.len, hash) == 0)
		idem->request = hash;
	cof_buf_release(&b);
	return idem;
}

void http_req_release(http_req *req)
{
	req->nparams = 0;
	req->allow = NULL;
	for (size_t i = 0; i < req->nowned; i++)
		free(req->owned[i]);
	free(req->owned);
	req->owned = NULL;
	req->nowned = req->capowned = 0;
	cof_buf_release(&req->body);
	json_decref(req->json);
	req->json = NULL;
	cof_upload_abort(req->up);
	req->up = NULL;
	cof_err_clear(&req->err);
	cof_notify_unsubscribe(req->sub);
	req->sub = NULL;
	if (req->park_resp)
		MHD_destroy_response(req->park_resp);
	req->park_resp = NULL;
}

cof_upload *http_take_upload(http_req *req)
{
	cof_upload *up = req->up;

	req->up = NULL;
	return up;
}
