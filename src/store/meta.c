/*
 * meta.c — the metadata store's front: picks a backend from a URL and
 * dispatches the cof_meta_x calls still in its cof_meta_ops (the changes feed,
 * a path's history, ...); the families written once above the SQL seam
 * (store/sql.h) are their own functions. The contracts are in meta.h; nothing here knows a backend's insides.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/metrics.h"
#include "store/contents.h"
#include "store/meta.h"

/* Opens the backend `url` names: "postgres://" / "postgresql://" is
 * PostgreSQL (a libpq URL), "sqlite:PATH" or a plain PATH is SQLite. */
int cof_meta_open(const char *url, cof_meta **out, cof_err *err)
{
	*out = NULL;
	if (!strncmp(url, "postgres://", 11) || !strncmp(url, "postgresql://", 13))
		return cof_meta_pg_open(url, out, err);
	if (!strncmp(url, "sqlite:", 7))
		url += 7;
	if (!*url)
		return cof_error(err, COF_EVALIDATION, "--meta: the sqlite database path is empty");
	if (strstr(url, "://"))
		return cof_error(err, COF_EVALIDATION,
				 "--meta '%s': unknown metadata backend (a path, sqlite:PATH or "
				 "postgres://...)", url);
	return cof_meta_sqlite_open(url, out, err);
}

/* ---- dispatch: one function per member of cof_meta_ops */

void cof_meta_close(cof_meta *m)
{
	if (m) {
		cof_contents_free(m->contents);
		m->contents = NULL;
		m->ops->close(m);
	}
}

void cof_meta_keep_contents(cof_meta *m, int64_t budget)
{
	if (budget > 0 && !m->contents)
		m->contents = cof_contents_new(budget);
}

/* cof_contents_fn of cof_meta_blob_inline: a malloc'd copy (NULL when out
 * of memory: then read from the backend). */
typedef struct kept_copy {
	unsigned char *data;
	size_t len;
} kept_copy;

static void copy_kept(void *ctx, const unsigned char *data, size_t len)
{
	kept_copy *k = ctx;

	if ((k->data = malloc(len + 1))) {
		memcpy(k->data, data, len);
		k->data[len] = '\0';
		k->len = len;
	}
}

int cof_meta_blob_inline(cof_meta *m, const char *sha256, unsigned char **data,
		size_t *len, cof_err *err)
{
	kept_copy k = { NULL, 0 };
	int rc;

	if (cof_contents_get(m->contents, sha256, copy_kept, &k) && k.data) {
		*data = k.data;
		*len = k.len;
		return 1;
	}
	rc = cof_meta_blob_inline_read(m, sha256, data, len, err);
	if (rc == 1)
		cof_contents_put(m->contents, sha256, *data, *len);
	return rc;
}

/* A batch of cof_meta_blob_inline_many: the caller's fn and ctx; at[j] is
 * the caller's index of the j-th sha asked of the backend. */
typedef struct many {
	cof_meta *m;
	const char *const *shas;
	cof_inline_fn fn;
	void *ctx;
	const size_t *at;
	size_t i;
	int stop;
} many;

static void give_kept(void *ctx, const unsigned char *data, size_t len)
{
	many *b = ctx;

	b->stop = b->fn(b->ctx, b->i, data, len);
}

/* A content read from the backend, given as it is (not kept). */
static int give_read(void *ctx, size_t j, const unsigned char *data, size_t len)
{
	many *b = ctx;

	return b->fn(b->ctx, b->at[j], data, len);
}

static int take_read(void *ctx, size_t j, const unsigned char *data, size_t len)
{
	many *b = ctx;
	size_t i = b->at[j];

	cof_contents_put(b->m->contents, b->shas[i], data, len);
	return b->fn(b->ctx, i, data, len);
}

/* The kept contents first, then one read of the backend for the rest,
 * kept when `keep`. */
static int inline_many(cof_meta *m, const char *const *shas, size_t n, int keep,
		cof_inline_fn fn, void *ctx, cof_err *err)
{
	size_t at_buf[128], *at = at_buf, k = 0;
	const char *ask_buf[128], **ask = ask_buf;
	many b = { m, shas, fn, ctx, NULL, 0, 0 };
	int rc = 0;

	if (!m->contents)
		return cof_meta_blob_inline_read_many(m, shas, n, fn, ctx, err);
	if (n > 128 && (!(at = malloc(n * sizeof *at)) || !(ask = malloc(n * sizeof *ask)))) {
		free(at != at_buf ? at : NULL);
		return cof_meta_blob_inline_read_many(m, shas, n, fn, ctx, err);
	}
	for (size_t i = 0; i < n && !b.stop; i++) {
		b.i = i;
		if (!cof_contents_get(m->contents, shas[i], give_kept, &b)) {
			at[k] = i;
			ask[k++] = shas[i];
		}
	}
	b.at = at;
	if (k && !b.stop)
		rc = cof_meta_blob_inline_read_many(m, ask, k, keep ? take_read : give_read, &b, err);
	if (at != at_buf) {
		free(at);
		free(ask);
	}
	return rc;
}

int cof_meta_blob_inline_many(cof_meta *m, const char *const *shas, size_t n,
		cof_inline_fn fn, void *ctx, cof_err *err)
{
	return inline_many(m, shas, n, 1, fn, ctx, err);
}

int cof_meta_blob_inline_scan(cof_meta *m, const char *const *shas, size_t n,
		cof_inline_fn fn, void *ctx, cof_err *err)
{
	return inline_many(m, shas, n, 0, fn, ctx, err);
}
