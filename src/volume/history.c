/*
 * history.c — GET /v1/volumes/{id}/history: the versions of one path, newest
 * first, read from the changes feed (so as far back as it is kept), paged
 * by seq.
 */
#include <stdlib.h>
#include <string.h>
#include "volume/volume.h"

#define HISTORY_LIMIT_MAX 1000
#define HISTORY_LIMIT_DEFAULT 100

typedef struct hist_ctx {
	json_t *versions;
	int64_t n, last_seq;
} hist_ctx;

static int hist_add(void *arg, const cof_change_row *c)
{
	hist_ctx *h = arg;
	json_t *v = cof_change_json(c);

	json_object_del(v, "path");   /* the path asked for */
	json_array_append_new(h->versions, v);
	h->last_seq = c->seq;
	h->n++;
	return 0;
}

int cof_history(cof_store *st, const char *org, const char *vol, const char *path,
		const char *cursor, int64_t limit, json_t **out, cof_err *err)
{
	hist_ctx h = {0};
	cof_volrow v;
	const char *p;
	int64_t before = 0;

	if (!path)
		return cof_error(err, COF_EVALIDATION, "query parameter 'path' is required");
	if (cof_path_check(path, strlen(path), "'path'", &p, err))
		return -1;
	if (limit < 0 || limit > HISTORY_LIMIT_MAX)
		return cof_error(err, COF_EVALIDATION, "'limit' must be 1 to %d",
				 HISTORY_LIMIT_MAX);
	if (limit == 0)
		limit = HISTORY_LIMIT_DEFAULT;
	if (cursor && *cursor) {
		char *end;
		before = strtoll(cursor, &end, 10);
		if (*end || before <= 0 || end == cursor)
			return cof_error(err, COF_EVALIDATION,
					 "query parameter 'cursor' is not one this server gave");
	}
	if (cof_meta_volume_get(st->meta, org, vol, &v, err))
		return -1;
	h.versions = json_array();
	/* one more than asked: whether there is a next page */
	if (cof_meta_history(st->meta, v.vno, p, before, limit + 1, hist_add, &h, err)) {
		json_decref(h.versions);
		return -1;
	}
	*out = json_pack("{s:o}", "versions", h.versions);
	if (h.n > limit) {
		char c[24];
		json_t *last = json_array_get(h.versions, (size_t)limit - 1);
		json_array_remove(h.versions, (size_t)limit);
		snprintf(c, sizeof c, "%lld",
			 (long long)json_integer_value(json_object_get(last, "seq")));
		json_object_set_new(*out, "cursor", json_string(c));
	}
	return 0;
}
