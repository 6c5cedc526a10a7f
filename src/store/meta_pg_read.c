/*
 * meta_pg_read.c — the changes feed on PostgreSQL, and a fork's listing (the
 * driver's fork_list, store/sql.h); the rest of reading files is written once
 * (meta_read.c).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "store/meta_pg.h"
#include "store/meta_volume.h"

/* ---------------------------------------------------------- a fork's listing */

#define LIST_PAGE 512

/* The chain as two bigint[] literals ("{v0,v1,...}", "{a0,a1,...}"). */
typedef struct {
	cof_buf vnos, ats;
	int n;
} chain_arrays;

/* cof_sql_row_fn: a level (vno, at) onto ctx (a chain_arrays). */
static int chain_row(void *ctx, const cof_sql_row *r, cof_err *err)
{
	chain_arrays *ch = ctx;
	const char *sep = ch->n++ ? "," : "{";

	if (cof_buf_addf(&ch->vnos, "%s%lld", sep, (long long)cof_sql_int(r, 0)) ||
	    cof_buf_addf(&ch->ats, "%s%lld", sep, (long long)cof_sql_int(r, 1)))
		return cof_error(err, COF_EINTERNAL, "out of memory");
	return 0;
}

/* One listing under way. */
typedef struct {
	cof_entry *e;
	char *cursor;            /* the last path seen */
	cof_entry_fn fn;
	void *ctx;
	int stop;
} fork_lister;

/* cof_sql_row_fn: a page's row to the caller's fn (a whiteout hides its path). */
static int fork_row(void *ctx, const cof_sql_row *r, cof_err *err)
{
	fork_lister *l = ctx;

	(void)err;
	cof_sql_text(r, 0, l->e->path, sizeof l->e->path);
	l->e->version = cof_sql_int(r, 1);
	l->e->size = cof_sql_int(r, 2);
	cof_sql_text(r, 3, l->e->sha256, sizeof l->e->sha256);
	cof_sql_text(r, 4, l->e->ctype, sizeof l->e->ctype);
	l->e->updated_at = cof_sql_int(r, 5);
	memcpy(l->cursor, l->e->path, strlen(l->e->path) + 1);
	if (l->e->sha256[0] && l->fn(l->ctx, l->e)) {
		l->stop = 1;
		return 1;
	}
	return 0;
}

/* Each level gives its first page after the cursor: the first page of the
 * merged paths is among them. The chain comes as arrays, so that a page is
 * planned as plainly as a volume's. */
int cof_pg_fork_list(cof_sql_tx *tx, int64_t vno, int64_t at_seq, const char *prefix,
		     const char *upper, const char *after, cof_entry_fn fn, void *ctx,
		     cof_err *err)
{
	chain_arrays ch = {COF_BUF_INIT, COF_BUF_INIT, 0};
	fork_lister l = {cof_malloc(sizeof *l.e), cof_malloc(COF_PATH_MAX + 1), fn, ctx, 0};
	int rc = l.e && l.cursor ? 0 : cof_error(err, COF_EINTERNAL, "out of memory");

	if (!rc)
		rc = cof_sql_query(tx, COF_META_CHAIN "SELECT vno, at FROM chain ORDER BY depth",
				   "listing files", chain_row, &ch, err, "ii", vno,
				   at_seq < 0 ? INT64_MAX : at_seq);
	if (rc >= 0 && (cof_buf_add(&ch.vnos, "}", 1) || cof_buf_add(&ch.ats, "}", 1)))
		rc = cof_error(err, COF_EINTERNAL, "out of memory");
	if (rc >= 0)
		snprintf(l.cursor, COF_PATH_MAX + 1, "%s", after ? after : "");
	while (rc >= 0 && !l.stop) {
		rc = cof_sql_query(tx, "SELECT DISTINCT ON (e.path) e.path, e.version, e.size,"
				   " e.sha256, e.ctype, e.updated_at FROM unnest(CAST(?1 AS bigint[]),"
				   " CAST(?2 AS bigint[])) WITH ORDINALITY c(vno, at, depth) CROSS JOIN"
				   " LATERAL (SELECT * FROM entries e WHERE e.vno = c.vno AND e.path >= ?3"
				   " AND e.path < ?4 AND e.path > ?5 AND e.from_seq <= c.at AND"
				   " (e.to_seq IS NULL OR e.to_seq > c.at) ORDER BY e.path LIMIT ?6) e"
				   " ORDER BY e.path, c.depth LIMIT ?6", "listing files", fork_row, &l,
				   err, "sssssi", ch.vnos.data, ch.ats.data, prefix, upper, l.cursor,
				   (int64_t)LIST_PAGE);
		if (rc < LIST_PAGE)
			break;
	}
	cof_buf_release(&ch.vnos);
	cof_buf_release(&ch.ats);
	free(l.cursor);
	free(l.e);
	return rc < 0 ? -1 : 0;
}

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
