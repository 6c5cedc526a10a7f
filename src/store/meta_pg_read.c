/*
 * meta_pg_read.c — the changes feed on PostgreSQL; reading files is written
 * once (meta_read.c).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "store/meta_pg.h"

/* A caller's cof_change_fn, its context and the row it is given (on the
 * heap: a path is large), for change_row. */
typedef struct {
	cof_change_fn fn;
	void *ctx;
	cof_change_row *ch;
} change_each;

/* cof_pg_row_fn: gives a row of the changes feed to the caller's fn. */
static int change_row(void *ctx, PGresult *r, int i, cof_err *err)
{
	change_each *e = ctx;
	cof_change_row *ch = e->ch;

	(void)err;
	ch->seq = cof_pg_int(r, i, 0);
	cof_pg_copy(r, i, 1, ch->path, sizeof ch->path);
	ch->removed = (int)cof_pg_int(r, i, 2);
	ch->version = cof_pg_int(r, i, 3);
	ch->size = cof_pg_int(r, i, 4);
	cof_pg_copy(r, i, 5, ch->sha256, sizeof ch->sha256);
	ch->by = PQgetisnull(r, i, 6) ? NULL : PQgetvalue(r, i, 6);
	ch->at = cof_pg_int(r, i, 7);
	return e->fn(e->ctx, ch) ? 1 : 0;
}

#define CHANGE_COLS "SELECT seq, path, removed, version, size, sha256, who, at FROM changes"

static int pg_changes(cof_meta *m, int64_t vno, int64_t since, const char *prefix,
		   const cof_change_filter *f, int64_t limit, cof_change_fn fn, void *ctx,
		   cof_err *err)
{
	change_each e = { fn, ctx, cof_malloc(sizeof *e.ch) };
	cof_change_filter none = {0};
	cof_buf upper = COF_BUF_INIT;
	int rc;

	if (!e.ch)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	if (!f)
		f = &none;
	cof_prefix_upper(prefix ? prefix : "", &upper);
	/* a run's or a call's changes by their index (changes_run, changes_call):
	 * the test is written out only when it is asked, as the index's
	 * expression; one literal per form (statements are cached by address) */
#define PG_CHANGES(run, call)                                                             \
	CHANGE_COLS " WHERE vno = $1 AND " run " AND " call " AND seq > $2 AND path >= $3"   \
	" AND path < $4 AND ($8::text IS NULL OR who::jsonb ->> 'agent' = $8) AND"           \
	" ($9::text IS NULL OR who::jsonb ->> 'keyId' = $9) ORDER BY seq, path LIMIT $5"
#define PG_RUN "(who::jsonb ->> 'runId') = $6"
#define PG_CALL "(who::jsonb ->> 'callId') = $7"
	static const char *const forms[4] = {
		PG_CHANGES("$6::text IS NULL", "$7::text IS NULL"),
		PG_CHANGES(PG_RUN, "$7::text IS NULL"), PG_CHANGES("$6::text IS NULL", PG_CALL),
		PG_CHANGES(PG_RUN, PG_CALL)};
	const char *sql = forms[!!f->run_id + 2 * !!f->call_id];
	rc = cof_pg_rows(m, sql, "reading changes", change_row, &e, err, "iississss", vno, since,
			 prefix ? prefix : "", upper.data, limit, f->run_id, f->call_id, f->agent,
			 f->key_id);
	cof_buf_release(&upper);
	free(e.ch);
	return rc < 0 ? -1 : 0;
}

static int pg_history(cof_meta *m, int64_t vno, const char *path, int64_t before,
		      int64_t limit, cof_change_fn fn, void *ctx, cof_err *err)
{
	change_each e = { fn, ctx, cof_malloc(sizeof *e.ch) };
	int rc;

	if (!e.ch)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	rc = cof_pg_rows(m, CHANGE_COLS " WHERE vno = $1 AND path = $2 AND seq < $3"
			 " ORDER BY seq DESC LIMIT $4", "reading a path's history", change_row,
			 &e, err, "isii", vno, path, before > 0 ? before : INT64_MAX, limit);
	free(e.ch);
	return rc < 0 ? -1 : 0;
}

/* This file's members of the PostgreSQL backend's table. */
void cof_pg_ops_read(cof_meta_ops *o)
{
	o->changes = pg_changes;
	o->history = pg_history;
}
