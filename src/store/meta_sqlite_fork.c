/*
 * meta_sqlite_fork.c — reading forks on SQLite: a fork refers to its parent
 * at a seq instead of copying its rows (docs/design.md, "Forks"; forking,
 * retiring and releasing are written once: meta_fork.c, meta_volume.c).
 *
 * A fork's own rows (what it wrote, and a whiteout row, sha256 "", for each
 * file it removed) shadow its parent's rows at the fork's base seq, and so on
 * up a chain of at most COF_FORK_DEPTH parents. A read tries the fork's own
 * rows, then each parent's; a listing merges the levels in path order.
 */
#include <stdlib.h>
#include <string.h>
#include "store/meta_sqlite.h"

int cof_sqlite_base(conn *c, int64_t vno, int64_t *base_vno, int64_t *base_seq,
		    cof_err *err)
{
	sqlite3_stmt *st = cof_sqlite_q(c, "SELECT base_vno, base_seq FROM volumes WHERE vno = ?"
					" AND base_vno IS NOT NULL", err);
	int r;

	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, vno);
	r = sqlite3_step(st);
	if (r == SQLITE_ROW) {
		*base_vno = sqlite3_column_int64(st, 0);
		*base_seq = sqlite3_column_int64(st, 1);
	}
	sqlite3_reset(st);
	if (r != SQLITE_ROW && r != SQLITE_DONE)
		return cof_sqlite_db_error(err, c->db, "reading a fork's parent");
	return r == SQLITE_ROW;
}

int64_t cof_sqlite_level_seq(int64_t at, int64_t base_seq)
{
	return at < 0 || at > base_seq ? base_seq : at;
}

/* ---------------------------------------------------------------- listing */

/* One volume of the chain being merged: its statement and its current row. */
typedef struct level {
	sqlite3_stmt *st;
	int has;          /* st is on a row, copied into e */
	cof_entry e;
} level;

static int level_step(conn *c, level *l, cof_err *err)
{
	int r = sqlite3_step(l->st);

	l->has = r == SQLITE_ROW;
	if (l->has)
		cof_sqlite_row_entry(l->st, &l->e);
	else if (r != SQLITE_DONE)
		return cof_sqlite_db_error(err, c->db, "listing files");
	return 0;
}

/* Prepares level `l` of the merge: the rows of `vno` at `at` (< 0 = live) in
 * path order. Not cached: a chain has up to COF_FORK_DEPTH + 1 of them open. */
static int level_open(conn *c, level *l, int64_t vno, int64_t at, const char *prefix,
		      const cof_buf *upper, const char *after, cof_err *err)
{
	const char *sql = at < 0
		? "SELECT path, version, size, sha256, ctype, updated_at FROM entries"
		  " WHERE vno = ?1 AND path >= ?2 AND path < ?3 AND path > ?4"
		  " AND to_seq IS NULL ORDER BY path"
		: "SELECT path, version, size, sha256, ctype, updated_at FROM entries"
		  " WHERE vno = ?1 AND path >= ?2 AND path < ?3 AND path > ?4"
		  " AND from_seq <= ?5 AND (to_seq IS NULL OR to_seq > ?5) ORDER BY path";

	if (sqlite3_prepare_v2(c->db, sql, -1, &l->st, NULL) != SQLITE_OK)
		return cof_sqlite_db_error(err, c->db, "listing files");
	sqlite3_bind_int64(l->st, 1, vno);
	cof_sqlite_bind_text(l->st, 2, cof_sqlite_from(prefix, after));
	sqlite3_bind_text(l->st, 3, upper->data, (int)upper->len, SQLITE_STATIC);
	cof_sqlite_bind_text(l->st, 4, after ? after : "");
	if (at >= 0)
		sqlite3_bind_int64(l->st, 5, at);
	return level_step(c, l, err);
}

/* Emits the merged levels in path order: for each path the lowest level that
 * has it answers, and a whiteout there hides it. */
static int merge(conn *c, level *lv, int n, cof_entry_fn fn, void *ctx, cof_err *err)
{
	for (;;) {
		int win = -1;
		for (int i = 0; i < n; i++)
			if (lv[i].has && (win < 0 || strcmp(lv[i].e.path, lv[win].e.path) < 0))
				win = i;
		if (win < 0)
			return 0;
		if (lv[win].e.sha256[0] && fn(ctx, &lv[win].e))
			return 0;
		for (int i = n - 1; i >= win; i--)
			if (lv[i].has && (i == win || !strcmp(lv[i].e.path, lv[win].e.path)) &&
			    level_step(c, &lv[i], err))
				return -1;
	}
}

/* cof_sqlite_entry_list for a fork (`vno` has a parent). */
int cof_sqlite_chain_list(conn *c, int64_t vno, int64_t at, const char *prefix,
			  const char *after, cof_entry_fn fn, void *ctx, cof_err *err)
{
	level *lv = cof_calloc(COF_FORK_DEPTH + 1, sizeof *lv);
	cof_buf upper = COF_BUF_INIT;
	int n = 0, rc = 0;

	if (!lv || cof_prefix_upper(prefix ? prefix : "", &upper)) {
		free(lv);
		return cof_error(err, COF_EINTERNAL, "out of memory");
	}
	for (;;) {
		int64_t base, base_seq;
		int r;
		if ((rc = level_open(c, &lv[n++], vno, at, prefix, &upper, after, err)))
			break;
		if (n > COF_FORK_DEPTH || (r = cof_sqlite_base(c, vno, &base, &base_seq, err)) == 0)
			break;
		if (r < 0) {
			rc = -1;
			break;
		}
		vno = base;
		at = cof_sqlite_level_seq(at, base_seq);
	}
	if (!rc)
		rc = merge(c, lv, n, fn, ctx, err);
	for (int i = 0; i < n; i++)
		sqlite3_finalize(lv[i].st);
	cof_buf_release(&upper);
	free(lv);
	return rc;
}
