/*
 * resolve.c — seed 001's tool inputs: a tool of a definition's sources takes
 * the agent's files as {"$file": path}. POST /v1/agents/{id}/resolve walks
 * any JSON and replaces each such object (exactly one member, "$file", a
 * string) with the file it names: {path, name, contentType, size, sha256,
 * data} (base64; at most RESOLVE_BYTES_MAX of file bytes in all) or, with
 * `as: "url"`, {..., url} (a signed GET link made as the agent's links are).
 * The paths are the agent's (with its subject's /user and /attachments when
 * it acts for one); a file it cannot read is 404 naming the path, whatever
 * the reason (absent, excluded, outside every mount).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "agent/agent.h"
#include "coffer.h"

#define RESOLVE_BYTES_MAX (16LL << 20) /* file bytes sent as base64, in all */
#define RESOLVE_FILES_MAX 100          /* {"$file"} objects in one input */
#define RESOLVE_DEPTH_MAX 64           /* nesting of the input */

typedef struct rctx {
	cof_store *st;
	const char *org, *id, *subject, *maker, *base;
	int url;                 /* as: "url" */
	int64_t bytes;           /* file bytes given as base64 so far */
	int files;
} rctx;

static int unreadable(const char *path, cof_err *why, cof_err *err)
{
	int code = why->code;

	if (code != COF_ENOTFOUND && code != COF_EFORBIDDEN && code != COF_EVALIDATION) {
		*err = *why; /* the store failing: said as it is */
		return -1;
	}
	cof_err_clear(why);
	return cof_error(err, COF_ENOTFOUND, "$file '%.300s': the agent cannot read it", path);
}

/* The object {"$file": path} replaced by what it names: 0 with *out. */
static int one_file(rctx *r, const char *path, json_t **out, cof_err *err)
{
	cof_file f = {0};
	cof_err e = {0};
	const char *slash = strrchr(path, '/');
	json_t *o;

	if (++r->files > RESOLVE_FILES_MAX)
		return cof_error(err, COF_EVALIDATION, "input names more than %d $file objects; the "
				 "limit is %d", RESOLVE_FILES_MAX, RESOLVE_FILES_MAX);
	if (cof_agent_file_open(r->st, r->org, r->id, r->subject, path, &f, &e))
		return unreadable(path, &e, err);
	o = json_pack("{s:s, s:s, s:s, s:I, s:s}", "path", path, "name", slash ? slash + 1 : path,
		      "contentType", f.content_type, "size", (json_int_t)f.size, "sha256",
		      f.sha256);
	if (r->url) {
		json_t *lb = json_pack("{s:s, s:s}", "path", path, "method", "GET"), *lo = NULL;
		int rc = cof_agent_link_create(r->st, r->org, r->id, r->subject, lb, NULL, r->maker,
					       &lo, err);
		json_decref(lb);
		if (!rc) {
			char url[4400];
			snprintf(url, sizeof url, "%s%s", r->base,
				 json_string_value(json_object_get(lo, "url")));
			json_object_set_new(o, "url", json_string(url));
			json_object_set(o, "expiresAt", json_object_get(lo, "expiresAt"));
		}
		json_decref(lo);
		cof_file_close(&f);
		if (rc) {
			json_decref(o);
			return -1;
		}
		*out = o;
		return 0;
	}
	if (r->bytes + f.size > RESOLVE_BYTES_MAX) {
		cof_file_close(&f);
		json_decref(o);
		return cof_error(err, COF_ETOOLARGE, "$file '%.300s' brings the files given as "
				 "base64 to %lld bytes; the limit is %lld (16 MiB) in all: ask "
				 "with as: \"url\" for links instead", path,
				 (long long)(r->bytes + f.size), RESOLVE_BYTES_MAX);
	}
	unsigned char *buf = cof_malloc((size_t)f.size + 1);
	int64_t off = 0;
	while (off < f.size) {
		size_t got = 0;
		if (cof_file_read_at(&f, off, buf + off, (size_t)(f.size - off), &got, err) ||
		    got == 0)
			break;
		off += (int64_t)got;
	}
	cof_file_close(&f);
	if (off != f.size) {
		free(buf);
		json_decref(o);
		return err->code ? -1 : cof_error(err, COF_EINTERNAL, "$file '%.300s' was cut "
						  "short while read", path);
	}
	r->bytes += f.size;
	size_t elen = 0;
	char *b64 = cof_base64_encode(buf, (size_t)f.size, &elen);
	free(buf);
	json_object_set_new(o, "data", json_stringn(b64, elen));
	free(b64);
	*out = o;
	return 0;
}

/* The input `in` with every {"$file"} replaced: a new value in *out. */
static int walk(rctx *r, json_t *in, int depth, json_t **out, cof_err *err)
{
	*out = NULL;
	if (depth > RESOLVE_DEPTH_MAX)
		return cof_error(err, COF_EVALIDATION, "input is nested deeper than %d levels",
				 RESOLVE_DEPTH_MAX);
	if (json_is_object(in)) {
		json_t *ref = json_object_get(in, "$file");
		if (ref && json_object_size(in) == 1) {
			if (!json_is_string(ref))
				return cof_error(err, COF_EVALIDATION, "a $file must be a path (a "
						 "string)");
			return one_file(r, json_string_value(ref), out, err);
		}
		json_t *o = json_object(), *v, *nv;
		const char *k;
		json_object_foreach(in, k, v) {
			if (walk(r, v, depth + 1, &nv, err)) {
				json_decref(o);
				return -1;
			}
			json_object_set_new(o, k, nv);
		}
		*out = o;
		return 0;
	}
	if (json_is_array(in)) {
		json_t *a = json_array(), *v, *nv;
		size_t i;
		json_array_foreach(in, i, v) {
			if (walk(r, v, depth + 1, &nv, err)) {
				json_decref(a);
				return -1;
			}
			json_array_append_new(a, nv);
		}
		*out = a;
		return 0;
	}
	*out = json_incref(in);
	return 0;
}

int cof_agent_resolve_input(cof_store *st, const char *org, const char *id,
			    const char *subject, json_t *body, const char *maker,
			    const char *base, json_t **out, cof_err *err)
{
	static const cof_jfield fields[] = {
		{"input", COF_JANY, 1}, {"as", COF_JSTR, 0}, {NULL, 0, 0}};
	rctx r = {st, org, id, subject, maker, base ? base : "", 0, 0, 0};
	const char *as;
	json_t *res = NULL;

	*out = NULL;
	if (!body || cof_json_check(body, fields, err))
		return body ? -1 : cof_error(err, COF_EVALIDATION, "'input' is required");
	as = cof_json_str(body, "as");
	if (as && strcmp(as, "base64") && strcmp(as, "url"))
		return cof_error(err, COF_EVALIDATION, "'as' must be \"base64\" or \"url\"");
	r.url = as && !strcmp(as, "url");
	if (walk(&r, json_object_get(body, "input"), 0, &res, err))
		return -1;
	*out = json_pack("{s:o}", "input", res);
	return 0;
}
