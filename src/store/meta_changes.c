/*
 * meta_changes.c — the changes feed and a path's history, written once above
 * the SQL seam (store/sql.h).
 *
 * The feed's run and call filters read an index each (changes_run,
 * changes_call: schema.c), and a database uses an expression index only when
 * the query's expression is the index's: `who{jsonb} ->> 'runId'` here and
 * there (SQLite >= 3.38 reads `->>` on its JSON text; PostgreSQL casts to
 * jsonb). The test is written out only when it is asked, one text per form
 * (statements are cached by the text's address).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "store/sql.h"

/* A caller's cof_change_fn, its context and the row it is given (on the
 * heap: a path is large), for change_row. */
typedef struct {
	cof_change_fn fn;
	void *ctx;
	cof_change_row *ch;
} change_each;

/* cof_sql_row_fn: gives a row of the changes feed to the caller's fn. */
static int change_row(void *ctx, const cof_sql_row *r, cof_err *err)
{
	change_each *e = ctx;
	cof_change_row *ch = e->ch;

	(void)err;
	ch->seq = cof_sql_int(r, 0);
	cof_sql_text(r, 1, ch->path, sizeof ch->path);
	ch->removed = (int)cof_sql_int(r, 2);
	ch->version = cof_sql_int(r, 3);
	ch->size = cof_sql_int(r, 4);
	cof_sql_text(r, 5, ch->sha256, sizeof ch->sha256);
	ch->by = cof_sql_isnull(r, 6) ? NULL : cof_sql_str(r, 6);
	ch->at = cof_sql_int(r, 7);
	return e->fn(e->ctx, ch) ? 1 : 0;
}

#define CHANGE_COLS "SELECT seq, path, removed, version, size, sha256, who, at FROM changes"
#define CHANGES(run, call)                                                                 \
	CHANGE_COLS " WHERE vno = ?1 AND " run " AND " call " AND seq > ?2 AND path >= ?3"    \
	" AND path < ?4 AND (CAST(?8 AS text) IS NULL OR who{jsonb} ->> 'agent' = ?8) AND"    \
	" (CAST(?9 AS text) IS NULL OR who{jsonb} ->> 'keyId' = ?9) ORDER BY seq, path LIMIT ?5"
#define ANY_RUN "CAST(?6 AS text) IS NULL"
#define ANY_CALL "CAST(?7 AS text) IS NULL"
/* the expressions of the indexes changes_run and changes_call (schema.c) */
#define RUN "who{jsonb} ->> 'runId' = ?6"
#define CALL "who{jsonb} ->> 'callId' = ?7"

/* The feed's forms: [run given + 2 * call given]. */
static const char *const changes_forms[4] = {
	CHANGES(ANY_RUN, ANY_CALL), CHANGES(RUN, ANY_CALL),
	CHANGES(ANY_RUN, CALL), CHANGES(RUN, CALL)};

const char *cof_meta_changes_sql(int run, int call)
{
	return changes_forms[!!run + 2 * !!call];
}

int cof_meta_changes_where(cof_meta *m, int64_t vno, int64_t since, const char *prefix,
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
	prefix = prefix ? prefix : "";
	rc = cof_prefix_upper(prefix, &upper) ? cof_error(err, COF_EINTERNAL, "out of memory")
		: cof_sql_read(m, cof_meta_changes_sql(!!f->run_id, !!f->call_id),
			       "reading changes", change_row, &e, err, "iississss", vno, since,
			       prefix, upper.data, limit, f->run_id, f->call_id, f->agent,
			       f->key_id);
	cof_buf_release(&upper);
	free(e.ch);
	return rc < 0 ? -1 : 0;
}

int cof_meta_changes(cof_meta *m, int64_t vno, int64_t since, const char *prefix,
		int64_t limit, cof_change_fn fn, void *ctx, cof_err *err)
{
	return cof_meta_changes_where(m, vno, since, prefix, NULL, limit, fn, ctx, err);
}

const char *const cof_meta_history_sql = CHANGE_COLS " WHERE vno = ?1 AND path = ?2 AND"
	" seq < ?3 ORDER BY seq DESC LIMIT ?4";

int cof_meta_history(cof_meta *m, int64_t vno, const char *path, int64_t before,
		int64_t limit, cof_change_fn fn, void *ctx, cof_err *err)
{
	change_each e = { fn, ctx, cof_malloc(sizeof *e.ch) };
	int rc;

	if (!e.ch)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	rc = cof_sql_read(m, cof_meta_history_sql, "reading a path's history", change_row, &e,
			  err, "isii", vno, path, before > 0 ? before : INT64_MAX, limit);
	free(e.ch);
	return rc < 0 ? -1 : 0;
}
