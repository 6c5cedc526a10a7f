/*
 * meta_sqlite_gc.c — what the garbage collector and fsck ask of the SQLite store.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "store/meta_sqlite.h"

/* ------------------------------------------------------ garbage collection */

/* A fork reads its parent's rows at its base seq, as a snapshot does. */
#define NOT_FORKED "NOT EXISTS (SELECT 1 FROM volumes f WHERE f.base_vno = entries.vno" \
		   " AND f.base_seq >= entries.from_seq AND f.base_seq < entries.to_seq)"

#define GC "collecting garbage"

static int sq_gc_prune(cof_meta *m, int64_t closed_before, int64_t changes_before,
		       int64_t *pruned, cof_err *err)
{
	conn *c = cof_sqlite_writer_begin(m, err);
	int rc;

	*pruned = 0;
	if (!c)
		return -1;
	/* Content of history dropped now has been unreferenced since its row was
	 * closed, over a grace period ago: it may go in this same sweep (the mark
	 * step un-marks what other rows still name). */
	rc = cof_sqlite_run(c, NULL, "UPDATE blobs SET orphan_since = ?1 WHERE orphan_since IS NULL"
			    " AND sha256 IN (SELECT sha256 FROM entries WHERE to_seq IS NOT NULL AND"
			    " closed_at < ?1 AND NOT EXISTS (SELECT 1 FROM snapshots s WHERE"
			    " s.src_vno = entries.vno AND s.seq >= entries.from_seq AND s.seq <"
			    " entries.to_seq) AND " NOT_FORKED ")", GC, err, "i", closed_before);
	if (!rc)
		rc = cof_sqlite_run(c, pruned, "DELETE FROM entries WHERE to_seq IS NOT NULL AND"
				    " closed_at < ? AND NOT EXISTS (SELECT 1 FROM snapshots s WHERE"
				    " s.src_vno = entries.vno AND s.seq >= entries.from_seq AND s.seq <"
				    " entries.to_seq) AND " NOT_FORKED, GC, err, "i", closed_before);
	/* The changes feed keeps at least its history window; the oldest seq still
	 * answered is remembered per volume so older `since` values get 410. */
	if (!rc)
		rc = cof_sqlite_run(c, NULL, "UPDATE volumes SET history_from = (SELECT max(seq) FROM"
				    " changes WHERE changes.vno = volumes.vno AND at < ?1) WHERE EXISTS"
				    " (SELECT 1 FROM changes WHERE changes.vno = volumes.vno AND"
				    " at < ?1)", GC, err, "i", changes_before);
	if (!rc)
		rc = cof_sqlite_run(c, NULL, "DELETE FROM changes WHERE at < ?", GC, err, "i",
				    changes_before);
	return cof_sqlite_writer_end(m, rc, err);
}

static int sq_gc_mark(cof_meta *m, int64_t now, cof_err *err)
{
	conn *c = cof_sqlite_writer_begin(m, err);
	int rc;

	if (!c)
		return -1;
	/* A pin (content an agent was shown or sent) counts as a reference. */
	rc = cof_sqlite_run(c, NULL, "UPDATE blobs SET orphan_since = ? WHERE orphan_since IS NULL"
			    " AND NOT EXISTS (SELECT 1 FROM entries e WHERE e.sha256 = blobs.sha256)"
			    " AND NOT EXISTS (SELECT 1 FROM pins p WHERE p.sha256 = blobs.sha256)",
			    GC, err, "i", now);
	if (!rc)
		rc = cof_sqlite_run(c, NULL, "UPDATE blobs SET orphan_since = NULL WHERE orphan_since"
				    " IS NOT NULL AND (EXISTS (SELECT 1 FROM entries e WHERE"
				    " e.sha256 = blobs.sha256) OR EXISTS (SELECT 1 FROM pins p WHERE"
				    " p.sha256 = blobs.sha256))", GC, err, "");
	return cof_sqlite_writer_end(m, rc, err);
}

/* A caller's cof_sha_fn and its context, for sha_row. */
typedef struct {
	cof_sha_fn fn;
	void *ctx;
} sha_each;

/* cof_sqlite_row_fn: gives a (sha256, size) row to the caller's fn. */
static int sha_row(void *ctx, sqlite3_stmt *st, cof_err *err)
{
	sha_each *e = ctx;

	(void)err;
	return e->fn(e->ctx, (const char *)sqlite3_column_text(st, 0),
		     sqlite3_column_int64(st, 1)) ? 1 : 0;
}

static int sq_gc_orphans(cof_meta *m, int64_t before, cof_sha_fn fn, void *ctx,
			 cof_err *err)
{
	sha_each e = { fn, ctx };

	return cof_sqlite_read(m, "SELECT sha256, size FROM blobs WHERE orphan_since <= ?",
			       "reading blobs", sha_row, &e, err, "i", before) < 0 ? -1 : 0;
}

static int sq_blob_forget(cof_meta *m, const char *sha, cof_err *err)
{
	conn *c = cof_sqlite_writer_begin(m, err);
	int64_t n = 0;
	int rc;

	if (!c)
		return -1;
	rc = cof_sqlite_run(c, &n, "DELETE FROM blobs WHERE sha256 = ? AND orphan_since IS NOT NULL"
			    " AND NOT EXISTS (SELECT 1 FROM entries e WHERE e.sha256 = blobs.sha256)"
			    " AND NOT EXISTS (SELECT 1 FROM pins p WHERE p.sha256 = blobs.sha256)",
			    GC, err, "s", sha);
	if (cof_sqlite_writer_end(m, rc, err))
		return -1;
	return n > 0;
}

static int sq_blob_known(cof_meta *m, const char *sha, cof_err *err)
{
	int64_t one = 0;
	int rc = cof_sqlite_read(m, "SELECT 1 FROM blobs WHERE sha256 = ?", "blobs",
				 cof_sqlite_row_int, &one, err, "s", sha);

	return rc < 0 ? -1 : rc > 0;
}

/* Where bytes_one puts a cell's bytes. */
typedef struct {
	unsigned char **data;
	size_t *len;
} inline_one;

/* cof_sqlite_row_fn: the blob in column 0 into ctx (an inline_one),
 * malloc'd with a byte to spare. */
static int bytes_one(void *ctx, sqlite3_stmt *st, cof_err *err)
{
	inline_one *o = ctx;
	size_t n = (size_t)sqlite3_column_bytes(st, 0);

	if (!(*o->data = cof_malloc(n + 1)))
		return cof_error(err, COF_EINTERNAL, "out of memory");
	if (n)
		memcpy(*o->data, sqlite3_column_blob(st, 0), n);
	*o->len = n;
	return 1;
}

static int sq_blob_inline(cof_meta *m, const char *sha, unsigned char **data,
			  size_t *len, cof_err *err)
{
	inline_one one = { data, len };
	int rc = cof_sqlite_read(m, "SELECT data FROM blobs WHERE sha256 = ? AND data IS NOT NULL",
				 "reading content", bytes_one, &one, err, "s", sha);

	return rc < 0 ? -1 : rc > 0;
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
	sha_each e = { fn, ctx };
	int rc;

	if (!c)
		return -1;
	sqlite3_exec(c->db, "BEGIN", NULL, NULL, NULL);
	rc = cof_sqlite_rows(c, "SELECT sha256, max(size) FROM entries WHERE sha256 != '' GROUP BY"
			     " sha256 UNION SELECT p.sha256, b.size FROM pins p JOIN blobs b ON"
			     " b.sha256 = p.sha256", "reading blobs", sha_row, &e, err, "");
	rc = rc < 0 ? -1 : 0;
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
	*oldest = 0;
	return cof_sqlite_read(m, KEPT_SQL, "reading the kept history", cof_sqlite_row_int, oldest,
			       err, "iii", vno, closed_before, (int64_t)INT64_MAX) < 0 ? -1 : 0;
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
