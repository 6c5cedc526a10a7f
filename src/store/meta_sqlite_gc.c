/*
 * meta_sqlite_gc.c — what the garbage collector and fsck ask of the SQLite store.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "store/meta_sqlite.h"

/* ------------------------------------------------------ garbage collection */

static int step_all(conn *c, sqlite3_stmt *st, int64_t *changes, cof_err *err)
{
	if (!st)
		return -1;
	if (sqlite3_step(st) != SQLITE_DONE)
		return cof_sqlite_db_error(err, c->db, "collecting garbage");
	if (changes)
		*changes += sqlite3_changes(c->db);
	return 0;
}

/* A fork reads its parent's rows at its base seq, as a snapshot does. */
#define NOT_FORKED "NOT EXISTS (SELECT 1 FROM volumes f WHERE f.base_vno = entries.vno" \
		   " AND f.base_seq >= entries.from_seq AND f.base_seq < entries.to_seq)"

static int sq_gc_prune(cof_meta *m, int64_t closed_before, int64_t changes_before,
		       int64_t *pruned, cof_err *err)
{
	conn *c = cof_sqlite_writer_begin(m, err);
	sqlite3_stmt *st;
	int rc;

	*pruned = 0;
	if (!c)
		return -1;
	/* Content of history dropped now has been unreferenced since its row was
	 * closed, over a grace period ago: it may go in this same sweep (the mark
	 * step un-marks what other rows still name). */
	st = cof_sqlite_q(c, "UPDATE blobs SET orphan_since = ?1 WHERE orphan_since IS NULL AND sha256 IN"
	       " (SELECT sha256 FROM entries WHERE to_seq IS NOT NULL AND closed_at < ?1 AND NOT"
	       " EXISTS (SELECT 1 FROM snapshots s WHERE s.src_vno = entries.vno AND"
	       " s.seq >= entries.from_seq AND s.seq < entries.to_seq) AND " NOT_FORKED ")", err);
	if (st)
		sqlite3_bind_int64(st, 1, closed_before);
	rc = step_all(c, st, NULL, err);
	if (!rc && (st = cof_sqlite_q(c, "DELETE FROM entries WHERE to_seq IS NOT NULL AND closed_at < ?"
			   " AND NOT EXISTS (SELECT 1 FROM snapshots s WHERE s.src_vno ="
			   " entries.vno AND s.seq >= entries.from_seq AND s.seq < entries.to_seq)"
			   " AND " NOT_FORKED, err))) {
		sqlite3_bind_int64(st, 1, closed_before);
		rc = step_all(c, st, pruned, err);
	} else if (!rc) {
		rc = -1;
	}
	/* The changes feed keeps at least its history window; the oldest seq still
	 * answered is remembered per volume so older `since` values get 410. */
	if (!rc && (st = cof_sqlite_q(c, "UPDATE volumes SET history_from = (SELECT max(seq) FROM changes"
			   " WHERE changes.vno = volumes.vno AND at < ?1) WHERE EXISTS (SELECT 1"
			   " FROM changes WHERE changes.vno = volumes.vno AND at < ?1)", err))) {
		sqlite3_bind_int64(st, 1, changes_before);
		rc = step_all(c, st, NULL, err);
	} else if (!rc) {
		rc = -1;
	}
	if (!rc && (st = cof_sqlite_q(c, "DELETE FROM changes WHERE at < ?", err))) {
		sqlite3_bind_int64(st, 1, changes_before);
		rc = step_all(c, st, NULL, err);
	} else if (!rc) {
		rc = -1;
	}
	return cof_sqlite_writer_end(m, rc, err);
}

static int sq_gc_mark(cof_meta *m, int64_t now, cof_err *err)
{
	conn *c = cof_sqlite_writer_begin(m, err);
	sqlite3_stmt *st;
	int rc;

	if (!c)
		return -1;
	/* A pin (content an agent was shown or sent) counts as a reference. */
	st = cof_sqlite_q(c, "UPDATE blobs SET orphan_since = ? WHERE orphan_since IS NULL AND NOT EXISTS"
	       " (SELECT 1 FROM entries e WHERE e.sha256 = blobs.sha256) AND NOT EXISTS"
	       " (SELECT 1 FROM pins p WHERE p.sha256 = blobs.sha256)", err);
	if (st)
		sqlite3_bind_int64(st, 1, now);
	rc = step_all(c, st, NULL, err);
	if (!rc)
		rc = step_all(c, cof_sqlite_q(c, "UPDATE blobs SET orphan_since = NULL WHERE orphan_since IS"
				   " NOT NULL AND (EXISTS (SELECT 1 FROM entries e WHERE"
				   " e.sha256 = blobs.sha256) OR EXISTS (SELECT 1 FROM pins p WHERE"
				   " p.sha256 = blobs.sha256))", err), NULL, err);
	return cof_sqlite_writer_end(m, rc, err);
}

static int each_sha(conn *c, sqlite3_stmt *st, cof_sha_fn fn, void *ctx, cof_err *err)
{
	int r;

	while ((r = sqlite3_step(st)) == SQLITE_ROW)
		if (fn(ctx, (const char *)sqlite3_column_text(st, 0), sqlite3_column_int64(st, 1)))
			break;
	sqlite3_reset(st);
	return (r == SQLITE_ROW || r == SQLITE_DONE) ? 0 : cof_sqlite_db_error(err, c->db, "reading blobs");
}

static int sq_gc_orphans(cof_meta *m, int64_t before, cof_sha_fn fn, void *ctx,
			 cof_err *err)
{
	conn *c = cof_sqlite_reader_get(m, err);
	sqlite3_stmt *st;
	int rc = -1;

	if (!c)
		return -1;
	if ((st = cof_sqlite_q(c, "SELECT sha256, size FROM blobs WHERE orphan_since <= ?", err))) {
		sqlite3_bind_int64(st, 1, before);
		rc = each_sha(c, st, fn, ctx, err);
	}
	cof_sqlite_reader_put(m, c);
	return rc;
}

static int sq_blob_forget(cof_meta *m, const char *sha, cof_err *err)
{
	conn *c = cof_sqlite_writer_begin(m, err);
	sqlite3_stmt *st;
	int64_t n = 0;
	int rc;

	if (!c)
		return -1;
	st = cof_sqlite_q(c, "DELETE FROM blobs WHERE sha256 = ? AND orphan_since IS NOT NULL AND NOT EXISTS"
	       " (SELECT 1 FROM entries e WHERE e.sha256 = blobs.sha256) AND NOT EXISTS"
	       " (SELECT 1 FROM pins p WHERE p.sha256 = blobs.sha256)", err);
	if (st)
		cof_sqlite_bind_text(st, 1, sha);
	rc = step_all(c, st, &n, err);
	if (cof_sqlite_writer_end(m, rc, err))
		return -1;
	return n > 0;
}

static int sq_blob_known(cof_meta *m, const char *sha, cof_err *err)
{
	conn *c = cof_sqlite_reader_get(m, err);
	sqlite3_stmt *st;
	int rc = -1;

	if (!c)
		return -1;
	if ((st = cof_sqlite_q(c, "SELECT 1 FROM blobs WHERE sha256 = ?", err))) {
		cof_sqlite_bind_text(st, 1, sha);
		int r = sqlite3_step(st);
		rc = r == SQLITE_ROW ? 1 : r == SQLITE_DONE ? 0 : cof_sqlite_db_error(err, c->db, "blobs");
		sqlite3_reset(st);
	}
	cof_sqlite_reader_put(m, c);
	return rc;
}

static int sq_blob_inline(cof_meta *m, const char *sha, unsigned char **data,
			  size_t *len, cof_err *err)
{
	conn *c = cof_sqlite_reader_get(m, err);
	sqlite3_stmt *st;
	int rc = -1;

	if (!c)
		return -1;
	if ((st = cof_sqlite_q(c, "SELECT data FROM blobs WHERE sha256 = ? AND data IS NOT NULL", err))) {
		cof_sqlite_bind_text(st, 1, sha);
		int r = sqlite3_step(st);
		if (r == SQLITE_ROW) {
			size_t n = (size_t)sqlite3_column_bytes(st, 0);
			*data = cof_malloc(n + 1);
			if (*data) {
				if (n)
					memcpy(*data, sqlite3_column_blob(st, 0), n);
				*len = n;
				rc = 1;
			} else {
				rc = cof_error(err, COF_EINTERNAL, "out of memory");
			}
		} else {
			rc = r == SQLITE_DONE ? 0 : cof_sqlite_db_error(err, c->db, "reading content");
		}
		sqlite3_reset(st);
	}
	cof_sqlite_reader_put(m, c);
	return rc;
}

/* One read transaction for the batch: the WAL read lock is taken once, not
 * once a file (read-all's inline files). */
static int sq_blob_inline_many(cof_meta *m, const char *const *shas, size_t n,
			       cof_inline_fn fn, void *ctx, cof_err *err)
{
	conn *c = cof_sqlite_reader_get(m, err);
	sqlite3_stmt *st;
	int rc = -1;

	if (!c)
		return -1;
	sqlite3_exec(c->db, "BEGIN", NULL, NULL, NULL);
	if ((st = cof_sqlite_q(c, "SELECT data FROM blobs WHERE sha256 = ? AND data IS NOT NULL", err))) {
		rc = 0;
		for (size_t i = 0; i < n && rc == 0; i++) {
			cof_sqlite_bind_text(st, 1, shas[i]);
			int r = sqlite3_step(st);
			if (r == SQLITE_ROW) {
				const void *d = sqlite3_column_blob(st, 0);
				size_t len = (size_t)sqlite3_column_bytes(st, 0);
				int stop = fn(ctx, i, d ? d : (const void *)"", len);
				sqlite3_reset(st);
				if (stop)
					break;
				continue;
			}
			if (r != SQLITE_DONE)
				rc = cof_sqlite_db_error(err, c->db, "reading content");
			sqlite3_reset(st);
		}
	}
	sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL);
	cof_sqlite_reader_put(m, c);
	return rc;
}

static int sq_referenced(cof_meta *m, cof_sha_fn fn, void *ctx, cof_err *err)
{
	conn *c = cof_sqlite_reader_get(m, err);
	sqlite3_stmt *st;
	int rc = -1;

	if (!c)
		return -1;
	sqlite3_exec(c->db, "BEGIN", NULL, NULL, NULL);
	if ((st = cof_sqlite_q(c, "SELECT sha256, max(size) FROM entries WHERE sha256 != '' GROUP BY sha256 UNION"
			" SELECT p.sha256, b.size FROM pins p JOIN blobs b ON b.sha256 = p.sha256", err)))
		rc = each_sha(c, st, fn, ctx, err);
	sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL);
	cof_sqlite_reader_put(m, c);
	return rc;
}

/* The fork chain of ?1 with each level's cap (the seq its child forked at),
 * and per level the seq below which a read may miss a dropped row. */
#define KEPT_SQL "WITH RECURSIVE chain(vno, cap, depth) AS (SELECT ?1, ?3, 0 UNION ALL" \
	" SELECT v.base_vno, min(c.cap, v.base_seq), c.depth + 1 FROM chain c JOIN volumes v" \
	" ON v.vno = c.vno WHERE v.base_vno IS NOT NULL AND c.depth < 64) SELECT" \
	" coalesce(max(max(coalesce((SELECT max(x.seq) FROM changes x WHERE x.vno = c.vno" \
	" AND x.at < ?2 AND x.seq <= c.cap), 0), coalesce((SELECT min(v.history_from, c.cap)" \
	" FROM volumes v WHERE v.vno = c.vno), 0))), 0) FROM chain c"

static int sq_history_kept(cof_meta *m, int64_t vno, int64_t closed_before, int64_t *oldest,
			   cof_err *err)
{
	conn *c = cof_sqlite_reader_get(m, err);
	sqlite3_stmt *st;
	int rc = -1;

	*oldest = 0;
	if (!c)
		return -1;
	if ((st = cof_sqlite_q(c, KEPT_SQL, err))) {
		sqlite3_bind_int64(st, 1, vno);
		sqlite3_bind_int64(st, 2, closed_before);
		sqlite3_bind_int64(st, 3, INT64_MAX);
		if (sqlite3_step(st) == SQLITE_ROW) {
			*oldest = sqlite3_column_int64(st, 0);
			rc = 0;
		} else {
			rc = cof_sqlite_db_error(err, c->db, "reading the kept history");
		}
		sqlite3_reset(st);
	}
	cof_sqlite_reader_put(m, c);
	return rc;
}

/* Fills the members of the SQLite backend this file implements. */
void cof_sqlite_ops_gc(cof_meta_ops *o)
{
	o->gc_prune = sq_gc_prune;
	o->gc_mark = sq_gc_mark;
	o->gc_orphans = sq_gc_orphans;
	o->blob_forget = sq_blob_forget;
	o->blob_known = sq_blob_known;
	o->blob_inline = sq_blob_inline;
	o->blob_inline_many = sq_blob_inline_many;
	o->referenced = sq_referenced;
	o->history_kept = sq_history_kept;
}
