/*
 * meta_sqlite_read.c — reading files on SQLite (meta.h): one entry, a listing
 * by prefix as of a seq, and the changes feed.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "store/meta_sqlite.h"

/* ---------------------------------------------------------- reading files */

/* The row of `path` in volume `vno` itself (a whiteout included): 1, 0, -1. */
static int own_get(conn *c, int64_t vno, const char *path, int64_t at_seq,
		   cof_entry *out, cof_err *err)
{
	sqlite3_stmt *st;
	int r;

	if (at_seq < 0)
		st = cof_sqlite_q(c, "SELECT path, version, size, sha256, ctype, updated_at FROM entries"
		       " WHERE vno = ? AND path = ? AND to_seq IS NULL", err);
	else
		st = cof_sqlite_q(c, "SELECT path, version, size, sha256, ctype, updated_at FROM entries"
		       " WHERE vno = ? AND path = ? AND from_seq <= ?3 AND"
		       " (to_seq IS NULL OR to_seq > ?3)", err);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, vno);
	cof_sqlite_bind_text(st, 2, path);
	if (at_seq >= 0)
		sqlite3_bind_int64(st, 3, at_seq);
	r = sqlite3_step(st);
	if (r == SQLITE_ROW)
		cof_sqlite_row_entry(st, out);
	sqlite3_reset(st);
	if (r != SQLITE_ROW && r != SQLITE_DONE)
		return cof_sqlite_db_error(err, c->db, "reading a file");
	return r == SQLITE_ROW;
}

/* A fork's own row answers; with none, its parent at the fork's base seq does,
 * and so on up the chain (docs/design.md, "Forks"). A whiteout (sha256 "") is
 * a file removed in the fork: absent. */
int cof_sqlite_entry_get(conn *c, int64_t vno, const char *path, int64_t at_seq,
			 cof_entry *out, cof_err *err)
{
	for (int depth = 0;; depth++) {
		int64_t base, base_seq;
		int r = own_get(c, vno, path, at_seq, out, err);
		if (r)
			return r < 0 ? -1 : out->sha256[0] != '\0';
		if (depth >= COF_FORK_DEPTH ||
		    (r = cof_sqlite_base(c, vno, &base, &base_seq, err)) <= 0)
			return r;
		vno = base;
		at_seq = cof_sqlite_level_seq(at_seq, base_seq);
	}
}

/* own_get with the inline content (*data, malloc'd) when there is some. */
static int own_read(conn *c, int64_t vno, const char *path, int64_t at_seq,
		    cof_entry *out, unsigned char **data, size_t *len, cof_err *err)
{
	sqlite3_stmt *st;
	int r, rc = -1;

	if (at_seq < 0)
		st = cof_sqlite_q(c, "SELECT e.path, e.version, e.size, e.sha256, e.ctype, e.updated_at,"
			    " b.data FROM entries e LEFT JOIN blobs b ON b.sha256 = e.sha256"
			    " WHERE e.vno = ? AND e.path = ? AND e.to_seq IS NULL", err);
	else
		st = cof_sqlite_q(c, "SELECT e.path, e.version, e.size, e.sha256, e.ctype, e.updated_at,"
			    " b.data FROM entries e LEFT JOIN blobs b ON b.sha256 = e.sha256"
			    " WHERE e.vno = ? AND e.path = ? AND e.from_seq <= ?3 AND"
			    " (e.to_seq IS NULL OR e.to_seq > ?3)", err);
	if (st) {
		sqlite3_bind_int64(st, 1, vno);
		cof_sqlite_bind_text(st, 2, path);
		if (at_seq >= 0)
			sqlite3_bind_int64(st, 3, at_seq);
		r = sqlite3_step(st);
		rc = r == SQLITE_ROW ? 1 : r == SQLITE_DONE ? 0 : cof_sqlite_db_error(err, c->db, "reading a file");
		if (r == SQLITE_ROW) {
			cof_sqlite_row_entry(st, out);
			if (sqlite3_column_type(st, 6) == SQLITE_BLOB) {
				size_t n = (size_t)sqlite3_column_bytes(st, 6);
				*len = n;
				if (!(*data = cof_malloc(n + 1)))
					rc = cof_error(err, COF_EINTERNAL, "out of memory");
				else {
					if (n) /* an empty blob's pointer is NULL */
						memcpy(*data, sqlite3_column_blob(st, 6), n);
					(*data)[n] = '\0';
				}
			}
		}
		sqlite3_reset(st);
	}
	return rc;
}

static int sq_entry_read(cof_meta *m, int64_t vno, const char *path, int64_t at_seq,
			 cof_entry *out, unsigned char **data, cof_err *err)
{
	const char *asked = path;
	int64_t asked_vno = vno, asked_seq = at_seq;
	cof_sqlite_mark mk;
	int kept = cof_sqlite_cache_begin(m, &mk);
	size_t len = 0;
	conn *c;
	int rc = 0;

	*data = NULL;
	if (kept && cof_sqlite_cached_entry(&mk, vno, path, at_seq, out, data))
		return 1;
	if (!(c = cof_sqlite_reader_get(m, err)))
		return -1;
	/* No read transaction: a parent's rows at a fork's base seq never change,
	 * so a read that goes up the chain sees the fork as it was at the miss. */
	for (int depth = 0; rc == 0; depth++) {
		int64_t base, base_seq;
		rc = own_read(c, vno, path, at_seq, out, data, &len, err);
		if (rc == 1 && out->sha256[0] == '\0') {
			free(*data);
			*data = NULL;
			rc = 0;   /* removed in the fork */
			break;
		}
		if (rc || depth >= COF_FORK_DEPTH ||
		    (rc = cof_sqlite_base(c, vno, &base, &base_seq, err)) <= 0)
			break;
		rc = 0;
		vno = base;
		at_seq = cof_sqlite_level_seq(at_seq, base_seq);
	}
	cof_sqlite_reader_put(m, c);
	if (kept && rc == 1)
		cof_sqlite_keep_entry(&mk, asked_vno, asked, asked_seq, out, *data, len);
	return rc;
}

static int sq_entry_get(cof_meta *m, int64_t vno, const char *path, int64_t at_seq,
			cof_entry *out, cof_err *err)
{
	conn *c = cof_sqlite_reader_get(m, err);
	int rc;

	if (!c)
		return -1;
	rc = cof_sqlite_entry_get(c, vno, path, at_seq, out, err);
	cof_sqlite_reader_put(m, c);
	return rc;
}

/* The s3meta of the row of `path` live at `at_seq` in `vno` itself: 1 (with
 * *out malloc'd, or NULL), 0 (no row), -1. `removed` says a whiteout. */
static int own_s3meta(conn *c, int64_t vno, const char *path, int64_t at_seq, char **out,
		      int *removed, cof_err *err)
{
	sqlite3_stmt *st = cof_sqlite_q(c, "SELECT sha256, s3meta FROM entries WHERE vno = ?"
					" AND path = ? AND from_seq <= ?3 AND"
					" (to_seq IS NULL OR to_seq > ?3)", err);
	int r, rc;

	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, vno);
	cof_sqlite_bind_text(st, 2, path);
	sqlite3_bind_int64(st, 3, at_seq < 0 ? INT64_MAX : at_seq);
	r = sqlite3_step(st);
	rc = r == SQLITE_ROW ? 1 : r == SQLITE_DONE ? 0 :
		cof_sqlite_db_error(err, c->db, "reading a file's S3 metadata");
	if (r == SQLITE_ROW) {
		const char *t = (const char *)sqlite3_column_text(st, 1);
		*removed = !sqlite3_column_text(st, 0) || !*sqlite3_column_text(st, 0);
		if (t && !(*out = cof_strdup(t)))
			rc = cof_error(err, COF_EINTERNAL, "out of memory");
	}
	sqlite3_reset(st);
	return rc;
}

/* Up a fork's chain as cof_sqlite_entry_get. */
static int sq_entry_s3meta(cof_meta *m, int64_t vno, const char *path, int64_t at_seq,
			   char **out, cof_err *err)
{
	conn *c = cof_sqlite_reader_get(m, err);
	int rc = 0, removed = 0;

	if (!c)
		return -1;
	for (int depth = 0;; depth++) {
		int64_t base, base_seq;
		if ((rc = own_s3meta(c, vno, path, at_seq, out, &removed, err)))
			break;
		if (depth >= COF_FORK_DEPTH || (rc = cof_sqlite_base(c, vno, &base, &base_seq, err)) <= 0)
			break;
		vno = base;
		at_seq = cof_sqlite_level_seq(at_seq, base_seq);
	}
	cof_sqlite_reader_put(m, c);
	return rc == 1 && removed ? 0 : rc;
}

static int sq_s3meta_range(cof_meta *m, int64_t vno, const char *first, const char *last,
			   cof_s3meta_fn fn, void *ctx, cof_err *err)
{
	conn *c = cof_sqlite_reader_get(m, err);
	sqlite3_stmt *st;
	int r, rc = 0;

	if (!c)
		return -1;
	if (!(st = cof_sqlite_q(c, "SELECT path, s3meta FROM entries WHERE vno = ? AND"
				" path >= ? AND path <= ? AND to_seq IS NULL AND s3meta IS NOT NULL"
				" ORDER BY path", err))) {
		cof_sqlite_reader_put(m, c);
		return -1;
	}
	sqlite3_bind_int64(st, 1, vno);
	cof_sqlite_bind_text(st, 2, first);
	cof_sqlite_bind_text(st, 3, last);
	while ((r = sqlite3_step(st)) == SQLITE_ROW)
		if (fn(ctx, (const char *)sqlite3_column_text(st, 0),
		       (const char *)sqlite3_column_text(st, 1)))
			break;
	if (r != SQLITE_ROW && r != SQLITE_DONE)
		rc = cof_sqlite_db_error(err, c->db, "reading files' S3 metadata");
	sqlite3_reset(st);
	cof_sqlite_reader_put(m, c);
	return rc;
}

int cof_sqlite_entry_list(conn *c, int64_t vno, int64_t at_seq, const char *prefix,
		      const char *after, cof_entry_fn fn, void *ctx, cof_err *err)
{
	cof_buf upper = COF_BUF_INIT;
	sqlite3_stmt *st;
	cof_entry *e;
	int64_t base, base_seq;
	int r, rc = 0;

	if ((r = cof_sqlite_base(c, vno, &base, &base_seq, err)) != 0)
		return r < 0 ? -1 : cof_sqlite_chain_list(c, vno, at_seq, prefix, after, fn, ctx, err);
	if (at_seq < 0)
		st = cof_sqlite_q(c, "SELECT path, version, size, sha256, ctype, updated_at FROM entries"
		       " WHERE vno = ?1 AND path >= ?2 AND path < ?3 AND path > ?4"
		       " AND to_seq IS NULL ORDER BY path", err);
	else
		st = cof_sqlite_q(c, "SELECT path, version, size, sha256, ctype, updated_at FROM entries"
		       " WHERE vno = ?1 AND path >= ?2 AND path < ?3 AND path > ?4"
		       " AND from_seq <= ?5 AND (to_seq IS NULL OR to_seq > ?5) ORDER BY path", err);
	if (!st || !(e = cof_malloc(sizeof *e)))
		return st ? cof_error(err, COF_EINTERNAL, "out of memory") : -1;
	sqlite3_bind_int64(st, 1, vno);
	if (cof_sqlite_listing_bounds(st, prefix, after, &upper, err)) {
		cof_buf_release(&upper);
		free(e);
		return -1;
	}
	if (at_seq >= 0)
		sqlite3_bind_int64(st, 5, at_seq);
	while ((r = sqlite3_step(st)) == SQLITE_ROW) {
		cof_sqlite_row_entry(st, e);
		if (fn(ctx, e))
			break;
	}
	if (r != SQLITE_ROW && r != SQLITE_DONE)
		rc = cof_sqlite_db_error(err, c->db, "listing files");
	sqlite3_reset(st);
	cof_buf_release(&upper);
	free(e);
	return rc;
}

static int sq_list(cof_meta *m, int64_t vno, int64_t at_seq, const char *prefix,
		   const char *after, cof_entry_fn fn, void *ctx, cof_err *err)
{
	conn *c = cof_sqlite_reader_get(m, err);
	int rc;

	if (!c)
		return -1;
	/* One read transaction, so a long walk sees one state of the database. */
	sqlite3_exec(c->db, "BEGIN", NULL, NULL, NULL);
	rc = cof_sqlite_entry_list(c, vno, at_seq, prefix, after, fn, ctx, err);
	sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL);
	cof_sqlite_reader_put(m, c);
	return rc;
}

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
	o->entry_read = sq_entry_read;
	o->entry_get = sq_entry_get;
	o->entry_s3meta = sq_entry_s3meta;
	o->s3meta_range = sq_s3meta_range;
	o->list = sq_list;
	o->changes = sq_changes;
	o->history = sq_history;
}
