/*
 * meta_sqlite_read.c — the changes feed on SQLite (meta.h); reading files is
 * written once (meta_read.c).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "store/meta_sqlite.h"

/* A caller's cof_change_fn, its context and the row it is given (on the
 * heap: a path is large), for change_row. */
typedef struct {
	cof_change_fn fn;
	void *ctx;
	cof_change_row *ch;
} change_each;

/* cof_sqlite_row_fn: gives a row of the changes feed to the caller's fn. */
static int change_row(void *ctx, sqlite3_stmt *st, cof_err *err)
{
	change_each *e = ctx;
	cof_change_row *ch = e->ch;

	(void)err;
	ch->seq = sqlite3_column_int64(st, 0);
	cof_sqlite_col_copy(st, 1, ch->path, sizeof ch->path);
	ch->removed = sqlite3_column_int(st, 2);
	ch->version = sqlite3_column_int64(st, 3);
	ch->size = sqlite3_column_int64(st, 4);
	cof_sqlite_col_copy(st, 5, ch->sha256, sizeof ch->sha256);
	ch->by = (const char *)sqlite3_column_text(st, 6);
	ch->at = sqlite3_column_int64(st, 7);
	return e->fn(e->ctx, ch) ? 1 : 0;
}

#define CHANGE_COLS "SELECT seq, path, removed, version, size, sha256, who, at FROM changes"

static int sq_changes(cof_meta *m, int64_t vno, int64_t since, const char *prefix,
		      const cof_change_filter *f, int64_t limit, cof_change_fn fn, void *ctx,
		      cof_err *err)
{
	change_each e = { fn, ctx, cof_malloc(sizeof *e.ch) };
	cof_change_filter none = {0};
	cof_buf upper = COF_BUF_INIT;
	const char *hi;
	int rc;

	if (!e.ch)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	if (!f)
		f = &none;
	hi = cof_sqlite_upper(&prefix, &upper, err);
	/* a run's or a call's changes by their index (changes_run, changes_call):
	 * the test is written out only when it is asked, as the index's
	 * expression; one literal per form (statements are cached by address) */
#define SQ_CHANGES(run, call)                                                            \
	CHANGE_COLS " WHERE vno = ?1 AND " run " AND " call " AND seq > ?2 AND path >= ?3"  \
	" AND path < ?4 AND (?8 IS NULL OR json_extract(who, '$.agent') = ?8) AND (?9 IS"   \
	" NULL OR json_extract(who, '$.keyId') = ?9) ORDER BY seq, path LIMIT ?5"
#define SQ_RUN "json_extract(who, '$.runId') = ?6"
#define SQ_CALL "json_extract(who, '$.callId') = ?7"
	static const char *const forms[4] = {
		SQ_CHANGES("?6 IS NULL", "?7 IS NULL"), SQ_CHANGES(SQ_RUN, "?7 IS NULL"),
		SQ_CHANGES("?6 IS NULL", SQ_CALL), SQ_CHANGES(SQ_RUN, SQ_CALL)};
	const char *sql = forms[!!f->run_id + 2 * !!f->call_id];
	rc = !hi ? -1 : cof_sqlite_read(m, sql, "reading changes",
					change_row, &e, err, "iississss", vno, since, prefix, hi,
					limit, f->run_id, f->call_id, f->agent, f->key_id);
	cof_buf_release(&upper);
	free(e.ch);
	return rc < 0 ? -1 : 0;
}

static int sq_history(cof_meta *m, int64_t vno, const char *path, int64_t before,
		      int64_t limit, cof_change_fn fn, void *ctx, cof_err *err)
{
	change_each e = { fn, ctx, cof_malloc(sizeof *e.ch) };
	int rc;

	if (!e.ch)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	rc = cof_sqlite_read(m, CHANGE_COLS " WHERE vno = ?1 AND path = ?2 AND seq < ?3"
			     " ORDER BY seq DESC LIMIT ?4", "reading a path's history",
			     change_row, &e, err, "isii", vno, path,
			     before > 0 ? before : INT64_MAX, limit);
	free(e.ch);
	return rc < 0 ? -1 : 0;
}

/* Fills the members of the SQLite backend this file implements. */
void cof_sqlite_ops_read(cof_meta_ops *o)
{
	o->changes = sq_changes;
	o->history = sq_history;
}
