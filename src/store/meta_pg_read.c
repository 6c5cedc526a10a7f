/*
 * meta_pg_read.c — reading files and the changes feed on PostgreSQL.
 *
 * Listings are fetched in pages (keyset on path) inside one REPEATABLE READ
 * transaction: a long walk sees one state of the database, as SQLite's read
 * transaction gives, without holding a whole volume's rows in memory.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "store/meta_pg.h"

#define LIST_PAGE 512

/* A fork's own row answers; with none, its parent's at the fork's base seq,
 * and so on up the chain (docs/design.md, "Forks"): one query, the lowest
 * level first. A whiteout (sha256 "") is a file removed in the fork. */
#define LEVEL_ROW "(SELECT * FROM entries e WHERE e.vno = c.vno AND e.path = $2 AND" \
	" e.from_seq <= c.at AND (e.to_seq IS NULL OR e.to_seq > c.at) LIMIT 1)"

/* cof_pg_row_fn: a PG_ENTRY_COLS row into ctx (a cof_entry). */
static int entry_one(void *ctx, PGresult *r, int i, cof_err *err)
{
	(void)err;
	cof_pg_row_entry(r, i, ctx);
	return 1;
}

int cof_pg_entry_get(pgconn *c, int64_t vno, const char *path, int64_t at_seq,
		     cof_entry *out, cof_err *err)
{
	int found = cof_pg_rows_on(c, PG_CHAIN("$1", "$3") "SELECT e.path, e.version, e.size,"
				   " e.sha256, e.ctype, e.updated_at FROM chain c CROSS JOIN"
				   " LATERAL " LEVEL_ROW " e ORDER BY c.depth LIMIT 1",
				   "reading a file", entry_one, out, err, "isi", vno, path,
				   at_seq < 0 ? (int64_t)PG_LIVE : at_seq);

	return found < 0 ? -1 : found > 0 && out->sha256[0];
}

static int pg_entry_get(cof_meta *m, int64_t vno, const char *path, int64_t at_seq,
			  cof_entry *out, cof_err *err)
{
	pgconn *c = cof_pg_get(m, err);
	int rc;

	if (!c)
		return -1;
	rc = cof_pg_entry_get(c, vno, path, at_seq, out, err);
	cof_pg_put(m, c);
	return rc;
}

/* cof_pg_row_fn: (sha256, s3meta) into ctx (char **: NULL for a whiteout's
 * and a row with none). */
static int s3meta_one(void *ctx, PGresult *r, int i, cof_err *err)
{
	char **out = ctx;

	if (PQgetisnull(r, i, 1) || !*PQgetvalue(r, i, 0))
		return 1;
	if (!(*out = cof_strdup(PQgetvalue(r, i, 1))))
		return cof_error(err, COF_EINTERNAL, "out of memory");
	return 1;
}

static int pg_entry_s3meta(cof_meta *m, int64_t vno, const char *path, int64_t at_seq,
			   char **out, cof_err *err)
{
	pgconn *c = cof_pg_get(m, err);
	int found;

	if (!c)
		return -1;
	found = cof_pg_rows_on(c, PG_CHAIN("$1", "$3") "SELECT e.sha256, e.s3meta FROM chain c"
			       " CROSS JOIN LATERAL " LEVEL_ROW " e ORDER BY c.depth LIMIT 1",
			       "reading a file's S3 metadata", s3meta_one, out, err, "isi", vno,
			       path, at_seq < 0 ? (int64_t)PG_LIVE : at_seq);
	cof_pg_put(m, c);
	return found < 0 ? -1 : found > 0;
}

typedef struct {
	cof_s3meta_fn fn;
	void *ctx;
} s3meta_each;

/* cof_pg_row_fn: (path, s3meta) to the caller's fn. */
static int s3meta_row(void *ctx, PGresult *r, int i, cof_err *err)
{
	s3meta_each *e = ctx;

	(void)err;
	return e->fn(e->ctx, PQgetvalue(r, i, 0), PQgetvalue(r, i, 1)) ? 1 : 0;
}

static int pg_s3meta_range(cof_meta *m, int64_t vno, const char *first, const char *last,
			   cof_s3meta_fn fn, void *ctx, cof_err *err)
{
	pgconn *c = cof_pg_get(m, err);
	s3meta_each e = {fn, ctx};
	int n;

	if (!c)
		return -1;
	n = cof_pg_rows_on(c, "SELECT path, s3meta FROM entries WHERE vno = $1 AND path >= $2"
			   " AND path <= $3 AND to_seq IS NULL AND s3meta IS NOT NULL ORDER BY path",
			   "reading files' S3 metadata", s3meta_row, &e, err, "iss", vno, first,
			   last);
	cof_pg_put(m, c);
	return n < 0 ? -1 : 0;
}

/* Where entry_data puts a file's row and its inline content. */
typedef struct {
	cof_entry *out;
	unsigned char **data;
} entry_read;

/* cof_pg_row_fn: a PG_ENTRY_COLS row and its inline data (column 6) into
 * ctx (an entry_read); no data for a whiteout. */
static int entry_data(void *ctx, PGresult *r, int i, cof_err *err)
{
	entry_read *e = ctx;

	cof_pg_row_entry(r, i, e->out);
	if (e->out->sha256[0] && cof_pg_bytea(r, i, 6, e->data, NULL) < 0)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	return 1;
}

static int pg_entry_read(cof_meta *m, int64_t vno, const char *path, int64_t at_seq,
		      cof_entry *out, unsigned char **data, cof_err *err)
{
	entry_read e = { out, data };
	int rc;

	*data = NULL;
	rc = cof_pg_rows(m, PG_CHAIN("$1", "$3") "SELECT e.path, e.version, e.size, e.sha256,"
			 " e.ctype, e.updated_at, b.data FROM chain c CROSS JOIN LATERAL "
			 LEVEL_ROW " e LEFT JOIN blobs b ON b.sha256 = e.sha256 ORDER BY c.depth"
			 " LIMIT 1", "reading a file", entry_data, &e, err, "isi", vno, path,
			 at_seq < 0 ? (int64_t)PG_LIVE : at_seq);
	if (rc < 0)
		return -1;
	return rc > 0 && out->sha256[0]; /* a whiteout: removed in the fork */
}

/* The volumes of the chain of `vno` read at `at` (< 0 = live), lowest level
 * first, as two bigint[] literals ("{v0,v1,...}", "{a0,a1,...}"): 1 = a fork,
 * 0 = not one (a chain of one), -1 = error. */
static int chain_load(pgconn *c, int64_t vno, int64_t at, cof_buf *vnos, cof_buf *ats,
		      cof_err *err)
{
	PGresult *r = cof_pg_q(c, PG_CHAIN("$1", "$2") "SELECT vno, at FROM chain ORDER BY"
			       " depth", "listing files", err, "ii", vno,
			       at < 0 ? (int64_t)PG_LIVE : at);
	int n;

	if (!r)
		return -1;
	n = PQntuples(r);
	cof_buf_add(vnos, "{", 1);
	cof_buf_add(ats, "{", 1);
	for (int i = 0; i < n; i++) {
		cof_buf_addf(vnos, "%s%s", i ? "," : "", PQgetvalue(r, i, 0));
		cof_buf_addf(ats, "%s%s", i ? "," : "", PQgetvalue(r, i, 1));
	}
	PQclear(r);
	if (cof_buf_add(vnos, "}", 1) || cof_buf_add(ats, "}", 1))
		return cof_error(err, COF_EINTERNAL, "out of memory");
	return n > 1;
}

/* One listing under way: what each page query needs. */
typedef struct lister {
	int64_t vno, at;
	const char *prefix, *upper;
	const char *vnos, *ats;   /* the chain of a fork, or NULL */
	char *cursor;             /* the last path seen */
	cof_entry *e;
	cof_entry_fn fn;
	void *ctx;
	int stop;
} lister;

/* One page of a listing after l->cursor; *n gets the rows seen (whiteouts
 * included), l->stop is set when fn stopped the walk. */
static int list_page(pgconn *c, lister *l, int *n, cof_err *err)
{
	PGresult *r;

	if (l->vnos)
		/* Each level gives its first page after the cursor: the first page
		 * of the merged paths is among them. The chain comes as arrays, so
		 * that a page is planned as plainly as a volume's. */
		r = cof_pg_q(c, "SELECT DISTINCT ON (e.path) e.path, e.version, e.size, e.sha256,"
			     " e.ctype, e.updated_at FROM unnest($1::bigint[], $2::bigint[]) WITH"
			     " ORDINALITY c(vno, at, depth) CROSS JOIN LATERAL (SELECT * FROM entries e"
			     " WHERE e.vno = c.vno AND e.path >= $3 AND e.path < $4 AND e.path > $5"
			     " AND e.from_seq <= c.at AND (e.to_seq IS NULL OR e.to_seq > c.at) ORDER BY"
			     " e.path LIMIT $6) e ORDER BY e.path, c.depth LIMIT $6", "listing files",
			     err, "sssssi", l->vnos, l->ats, l->prefix, l->upper, l->cursor,
			     (int64_t)LIST_PAGE);
	else if (l->at < 0)
		r = cof_pg_q(c, "SELECT " PG_ENTRY_COLS " FROM entries WHERE vno = $1 AND"
			     " path >= $2 AND path < $3 AND path > $4 AND"
			     " to_seq IS NULL ORDER BY path LIMIT $5", "listing files", err,
			     "isssi", l->vno, l->prefix, l->upper, l->cursor, (int64_t)LIST_PAGE);
	else
		r = cof_pg_q(c, "SELECT " PG_ENTRY_COLS " FROM entries WHERE vno = $1 AND"
			     " path >= $2 AND path < $3 AND path > $4 AND"
			     " from_seq <= $6 AND (to_seq IS NULL OR to_seq > $6) ORDER BY path"
			     " LIMIT $5", "listing files", err, "isssii", l->vno, l->prefix,
			     l->upper, l->cursor, (int64_t)LIST_PAGE, l->at);
	if (!r)
		return -1;
	*n = PQntuples(r);
	for (int i = 0; i < *n && !l->stop; i++) {
		cof_pg_row_entry(r, i, l->e);
		if (l->e->sha256[0] && l->fn(l->ctx, l->e))   /* a whiteout hides its path */
			l->stop = 1;
	}
	if (*n)
		cof_pg_copy(r, *n - 1, 0, l->cursor, COF_PATH_MAX + 1);
	PQclear(r);
	return 0;
}

int cof_pg_entry_list(pgconn *c, int64_t vno, int64_t at_seq, const char *prefix,
		      const char *after, cof_entry_fn fn, void *ctx, cof_err *err)
{
	return cof_pg_entry_list_in(c, vno, 1, at_seq, prefix, after, fn, ctx, err);
}

int cof_pg_entry_list_in(pgconn *c, int64_t vno, int fork, int64_t at_seq, const char *prefix,
			 const char *after, cof_entry_fn fn, void *ctx, cof_err *err)
{
	cof_buf upper = COF_BUF_INIT, vnos = COF_BUF_INIT, ats = COF_BUF_INIT;
	lister l = {.vno = vno, .at = at_seq, .prefix = prefix ? prefix : "", .fn = fn,
		    .ctx = ctx};
	int n = 0, rc;

	l.e = cof_malloc(sizeof *l.e);
	l.cursor = cof_malloc(COF_PATH_MAX + 1);
	rc = l.e && l.cursor && !cof_prefix_upper(l.prefix, &upper) ? 0
		: cof_error(err, COF_EINTERNAL, "out of memory");
	if (!rc && fork && (rc = chain_load(c, vno, at_seq, &vnos, &ats, err)) == 1) {
		l.vnos = vnos.data;
		l.ats = ats.data;
	}
	if (rc >= 0) {
		snprintf(l.cursor, COF_PATH_MAX + 1, "%s", after ? after : "");
		l.upper = upper.data;
		do
			rc = list_page(c, &l, &n, err);
		while (!rc && !l.stop && n == LIST_PAGE);
	}
	cof_buf_release(&upper);
	cof_buf_release(&vnos);
	cof_buf_release(&ats);
	free(l.cursor);
	free(l.e);
	return rc;
}

static int pg_list(cof_meta *m, int64_t vno, int64_t at_seq, const char *prefix,
		const char *after, cof_entry_fn fn, void *ctx, cof_err *err)
{
	pgconn *c = cof_pg_begin(m, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", err);
	int rc;

	if (!c)
		return -1;
	rc = cof_pg_entry_list(c, vno, at_seq, prefix, after, fn, ctx, err);
	return cof_pg_end(m, c, rc, err);
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
	o->entry_read = pg_entry_read;
	o->entry_s3meta = pg_entry_s3meta;
	o->s3meta_range = pg_s3meta_range;
	o->list = pg_list;
	o->changes = pg_changes;
	o->history = pg_history;
	o->entry_get = pg_entry_get;
}
