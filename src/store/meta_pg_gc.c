/*
 * meta_pg_gc.c — what the garbage collector and fsck ask of the PostgreSQL store.
 */
#include <stdlib.h>
#include <string.h>
#include "store/meta_pg.h"

int cof_pg_gc_prune(cof_meta *m, int64_t closed_before, int64_t changes_before,
		    int64_t *pruned, cof_err *err)
{
	pgconn *c = cof_pg_begin(m, NULL, err);
	int rc;

	*pruned = 0;
	if (!c)
		return -1;
	/* As in meta_sqlite_gc.c: content of history dropped now has been
	 * unreferenced since its row was closed, over a grace period ago. */
	rc = cof_pg_do(c, "UPDATE blobs SET orphan_since = $1 WHERE orphan_since IS NULL AND"
		       " sha256 IN (SELECT sha256 FROM entries WHERE to_seq IS NOT NULL AND"
		       " closed_at < $1 AND NOT EXISTS (SELECT 1 FROM snapshots s WHERE s.src_vno ="
		       " entries.vno AND s.seq >= entries.from_seq AND s.seq < entries.to_seq))",
		       "collecting garbage", NULL, err, "i", closed_before);
	if (!rc)
		rc = cof_pg_do(c, "DELETE FROM entries WHERE to_seq IS NOT NULL AND closed_at < $1"
			       " AND NOT EXISTS (SELECT 1 FROM snapshots s WHERE s.src_vno ="
			       " entries.vno AND s.seq >= entries.from_seq AND s.seq < entries.to_seq)",
			       "collecting garbage", pruned, err, "i", closed_before);
	/* The oldest seq the changes feed still answers, per volume (older: 410). */
	if (!rc)
		rc = cof_pg_do(c, "UPDATE volumes SET history_from = (SELECT max(seq) FROM changes"
			       " WHERE changes.vno = volumes.vno AND at < $1) WHERE EXISTS (SELECT 1"
			       " FROM changes WHERE changes.vno = volumes.vno AND at < $1)",
			       "collecting garbage", NULL, err, "i", changes_before);
	if (!rc)
		rc = cof_pg_do(c, "DELETE FROM changes WHERE at < $1", "collecting garbage", NULL,
			       err, "i", changes_before);
	return cof_pg_end(m, c, rc, err);
}

int cof_pg_gc_mark(cof_meta *m, int64_t now, cof_err *err)
{
	pgconn *c = cof_pg_begin(m, NULL, err);
	int rc;

	if (!c)
		return -1;
	/* A pin (content an agent was shown or sent) counts as a reference. */
	rc = cof_pg_do(c, "UPDATE blobs SET orphan_since = $1 WHERE orphan_since IS NULL AND NOT"
		       " EXISTS (SELECT 1 FROM entries e WHERE e.sha256 = blobs.sha256) AND NOT"
		       " EXISTS (SELECT 1 FROM pins p WHERE p.sha256 = blobs.sha256)",
		       "collecting garbage", NULL, err, "i", now);
	if (!rc)
		rc = cof_pg_do(c, "UPDATE blobs SET orphan_since = NULL WHERE orphan_since IS NOT"
			       " NULL AND (EXISTS (SELECT 1 FROM entries e WHERE e.sha256 ="
			       " blobs.sha256) OR EXISTS (SELECT 1 FROM pins p WHERE p.sha256 ="
			       " blobs.sha256))", "collecting garbage", NULL, err, "");
	return cof_pg_end(m, c, rc, err);
}

/* Calls fn for each (sha256, size) row of `r`. */
static void each_sha(PGresult *r, cof_sha_fn fn, void *ctx)
{
	for (int i = 0; i < PQntuples(r); i++)
		if (fn(ctx, PQgetvalue(r, i, 0), cof_pg_int(r, i, 1)))
			break;
}

int cof_pg_gc_orphans(cof_meta *m, int64_t before, cof_sha_fn fn, void *ctx, cof_err *err)
{
	pgconn *c = cof_pg_get(m, err);
	PGresult *r;
	int rc = -1;

	if (!c)
		return -1;
	if ((r = cof_pg_q(c, "SELECT sha256, size FROM blobs WHERE orphan_since <= $1",
			  "reading blobs", err, "i", before))) {
		each_sha(r, fn, ctx);
		PQclear(r);
		rc = 0;
	}
	cof_pg_put(m, c);
	return rc;
}

int cof_pg_blob_forget(cof_meta *m, const char *sha, cof_err *err)
{
	pgconn *c = cof_pg_get(m, err);
	int64_t n = 0;
	int rc;

	if (!c)
		return -1;
	/* One statement: the row lock it takes makes a write that names the
	 * content at this moment (clearing orphan_since) either win or wait. */
	rc = cof_pg_do(c, "DELETE FROM blobs WHERE sha256 = $1 AND orphan_since IS NOT NULL AND"
		       " NOT EXISTS (SELECT 1 FROM entries e WHERE e.sha256 = blobs.sha256) AND NOT"
		       " EXISTS (SELECT 1 FROM pins p WHERE p.sha256 = blobs.sha256)",
		       "collecting garbage", &n, err, "s", sha);
	cof_pg_put(m, c);
	return rc ? -1 : n > 0;
}

int cof_pg_blob_known(cof_meta *m, const char *sha, cof_err *err)
{
	pgconn *c = cof_pg_get(m, err);
	PGresult *r;
	int rc = -1;

	if (!c)
		return -1;
	if ((r = cof_pg_q(c, "SELECT 1 FROM blobs WHERE sha256 = $1", "blobs", err, "s", sha))) {
		rc = PQntuples(r) > 0;
		PQclear(r);
	}
	cof_pg_put(m, c);
	return rc;
}

int cof_pg_blob_inline(cof_meta *m, const char *sha, unsigned char **data, size_t *len,
		       cof_err *err)
{
	pgconn *c = cof_pg_get(m, err);
	PGresult *r;
	int rc = -1;

	*data = NULL;
	if (!c)
		return -1;
	if ((r = cof_pg_q(c, "SELECT data FROM blobs WHERE sha256 = $1 AND data IS NOT NULL",
			  "reading content", err, "s", sha))) {
		rc = PQntuples(r) ? cof_pg_bytea(r, 0, 0, data, len) : 0;
		if (rc < 0)
			cof_error(err, COF_EINTERNAL, "out of memory");
		PQclear(r);
	}
	cof_pg_put(m, c);
	return rc;
}

int cof_pg_referenced(cof_meta *m, cof_sha_fn fn, void *ctx, cof_err *err)
{
	pgconn *c = cof_pg_begin(m, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", err);
	PGresult *r;
	int rc = -1;

	if (!c)
		return -1;
	if ((r = cof_pg_q(c, "SELECT sha256, max(size) FROM entries GROUP BY sha256 UNION"
			  " SELECT p.sha256, b.size FROM pins p JOIN blobs b ON b.sha256 = p.sha256",
			  "reading blobs", err, ""))) {
		each_sha(r, fn, ctx);
		PQclear(r);
		rc = 0;
	}
	return cof_pg_end(m, c, rc, err);
}
