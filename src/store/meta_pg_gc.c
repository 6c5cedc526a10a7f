/*
 * meta_pg_gc.c — what the garbage collector and fsck ask of the PostgreSQL store.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "store/meta_pg.h"

/* A fork reads its parent's rows at its base seq, as a snapshot does. */
#define NOT_FORKED "NOT EXISTS (SELECT 1 FROM volumes f WHERE f.base_vno = entries.vno" \
		   " AND f.base_seq >= entries.from_seq AND f.base_seq < entries.to_seq)"

static int pg_gc_prune(cof_meta *m, int64_t closed_before, int64_t changes_before,
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
		       " entries.vno AND s.seq >= entries.from_seq AND s.seq < entries.to_seq)"
		       " AND " NOT_FORKED ")",
		       "collecting garbage", NULL, err, "i", closed_before);
	if (!rc)
		rc = cof_pg_do(c, "DELETE FROM entries WHERE to_seq IS NOT NULL AND closed_at < $1"
			       " AND NOT EXISTS (SELECT 1 FROM snapshots s WHERE s.src_vno ="
			       " entries.vno AND s.seq >= entries.from_seq AND s.seq < entries.to_seq)"
			       " AND " NOT_FORKED, "collecting garbage", pruned, err, "i", closed_before);
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

static int pg_gc_mark(cof_meta *m, int64_t now, cof_err *err)
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

/* A caller's cof_sha_fn and its context, for sha_row. */
typedef struct {
	cof_sha_fn fn;
	void *ctx;
} sha_each;

/* cof_pg_row_fn: gives a (sha256, size) row to the caller's fn. */
static int sha_row(void *ctx, PGresult *r, int i, cof_err *err)
{
	sha_each *e = ctx;

	(void)err;
	return e->fn(e->ctx, PQgetvalue(r, i, 0), cof_pg_int(r, i, 1)) ? 1 : 0;
}

static int pg_gc_orphans(cof_meta *m, int64_t before, cof_sha_fn fn, void *ctx, cof_err *err)
{
	sha_each e = { fn, ctx };

	/* Content a write said it is about to name is no orphan for a while;
	 * content a collector claimed is its own (until the claim goes stale). */
	return cof_pg_rows(m, "SELECT sha256, size FROM blobs WHERE orphan_since <= $1 AND"
			   " (pending_at IS NULL OR pending_at < $2) AND (claimed_at IS NULL OR"
			   " claimed_at < $3)", "reading blobs", sha_row, &e, err, "iii", before,
			   cof_now() - COF_PG_PENDING_SECONDS,
			   cof_now() - COF_PG_CLAIM_SECONDS) < 0 ? -1 : 0;
}

/* The collector's claim on an orphan: 1 = claimed (delete its bytes, then
 * cof_pg_blob_forgotten), 0 = named again, or pending. One statement: the row
 * lock it takes orders it with a write's cof_pg_blob_pending, which sets
 * pending_at on the same row, so exactly one of the two goes first and the
 * other sees what it did. A claim left by a collector that died is taken over
 * after COF_PG_CLAIM_SECONDS. */
static int pg_blob_forget(cof_meta *m, const char *sha, cof_err *err)
{
	int64_t n = 0, now = cof_now();

	if (cof_pg_one(m, "UPDATE blobs SET claimed_at = $2 WHERE sha256 = $1 AND orphan_since IS"
		       " NOT NULL AND (claimed_at IS NULL OR claimed_at < $3) AND (pending_at IS"
		       " NULL OR pending_at < $4) AND NOT EXISTS (SELECT 1 FROM entries e WHERE"
		       " e.sha256 = blobs.sha256) AND NOT EXISTS (SELECT 1 FROM pins p WHERE"
		       " p.sha256 = blobs.sha256)", "collecting garbage", &n, err, "siii", sha, now,
		       now - COF_PG_CLAIM_SECONDS, now - COF_PG_PENDING_SECONDS))
		return -1;
	return n > 0;
}

/* The claimed content's bytes are deleted: the row goes. */
static int pg_blob_forgotten(cof_meta *m, const char *sha, cof_err *err)
{
	/* Unless a write named it meanwhile (inline content needs no bytes). */
	return cof_pg_one(m, "DELETE FROM blobs WHERE sha256 = $1 AND claimed_at IS NOT NULL AND"
			  " orphan_since IS NOT NULL AND NOT EXISTS (SELECT 1 FROM entries e WHERE"
			  " e.sha256 = blobs.sha256) AND NOT EXISTS (SELECT 1 FROM pins p WHERE"
			  " p.sha256 = blobs.sha256)", "collecting garbage", NULL, err, "s", sha);
}

/* A write that marked `sha` pending names nothing after all: the row goes
 * unless something else has it (a row, a pin, inline content, a claim), so
 * its bytes are collected as a cut-off upload's are, a grace period after
 * they were stored. A concurrent write of the same content upserts the row
 * again when it commits; until then its fresh bytes' mtime keeps them. */
static int pg_blob_abandoned(cof_meta *m, const char *sha, cof_err *err)
{
	return cof_pg_one(m, "DELETE FROM blobs WHERE sha256 = $1 AND pending_at IS NOT NULL AND"
			  " claimed_at IS NULL AND data IS NULL AND NOT EXISTS (SELECT 1 FROM"
			  " entries e WHERE e.sha256 = blobs.sha256) AND NOT EXISTS (SELECT 1 FROM"
			  " pins p WHERE p.sha256 = blobs.sha256)", "abandoning content", NULL, err,
			  "s", sha);
}

/* Bytes the metadata does not know (a cut-off upload's): the collector claims
 * them by a row of their own, so a write that stores the same content now
 * waits (cof_pg_blob_pending). 1 = claimed, 0 = a row is there (a write
 * knows them: keep them). */
static int pg_blob_claim(cof_meta *m, const char *sha, cof_err *err)
{
	int64_t n = 0, now = cof_now();

	if (cof_pg_one(m, "INSERT INTO blobs(sha256, size, orphan_since, claimed_at)"
		       " VALUES($1, 0, $2, $2) ON CONFLICT DO NOTHING", "collecting garbage", &n,
		       err, "si", sha, now))
		return -1;
	return n > 0;
}

/* A write is about to name `sha` (its bytes are in the blob store): records
 * it, so no collector claims it for COF_PG_PENDING_SECONDS. 0 = safe to name;
 * 1 = a collector had claimed it and has now deleted its row: its bytes may
 * be gone, the caller checks them (and re-stores or refuses). Waits at most
 * COF_PG_CLAIM_SECONDS for a claim in progress (a delete takes milliseconds). */
static int pg_blob_pending(cof_meta *m, const char *sha, int64_t size, cof_err *err)
{
	int64_t t0 = cof_mono_ms();
	int was_claimed = 0;

	for (;;) {
		pgconn *c = cof_pg_get(m, err);
		int64_t now = cof_now();
		PGresult *r;
		if (!c)
			return -1;
		/* A new row is an orphan from now (a write that then fails leaves it
		 * to the collector); a claimed row stays claimed. */
		r = cof_pg_q(c, "INSERT INTO blobs(sha256, size, orphan_since, pending_at)"
			     " VALUES($1,$2,$3,$3) ON CONFLICT(sha256) DO UPDATE SET pending_at = $3"
			     " RETURNING claimed_at IS NOT NULL AND claimed_at >= $4",
			     "recording content about to be named", err, "siii", sha, size, now,
			     now - COF_PG_CLAIM_SECONDS);
		int claimed = r && !strcmp(PQgetvalue(r, 0, 0), "t");
		PQclear(r);
		cof_pg_put(m, c);
		if (!r)
			return -1;
		if (!claimed)
			return was_claimed;
		was_claimed = 1;
		if (cof_mono_ms() - t0 > COF_PG_CLAIM_SECONDS * 1000)
			return cof_error(err, COF_EUNAVAILABLE, "the content is being collected;"
					 " retry the write");
		usleep(20000);
	}
}

static int pg_blob_known(cof_meta *m, const char *sha, cof_err *err)
{
	int64_t one = 0;
	/* A claimed blob is being forgotten: it counts as gone already. */
	int rc = cof_pg_rows(m, "SELECT 1 FROM blobs WHERE sha256 = $1 AND claimed_at IS NULL",
			     "blobs", cof_pg_row_int, &one, err, "s", sha);

	return rc < 0 ? -1 : rc > 0;
}

/* As in meta_sqlite_gc.c: the oldest seq read exactly, over the fork chain. */
static int pg_history_kept(cof_meta *m, int64_t vno, int64_t closed_before, int64_t *oldest,
			   cof_err *err)
{
	*oldest = 0;
	return cof_pg_rows(m, "WITH RECURSIVE chain(vno, cap, depth) AS (SELECT $1::bigint,"
			   " $3::bigint, 0 UNION ALL SELECT v.base_vno, least(c.cap, v.base_seq),"
			   " c.depth + 1 FROM chain c JOIN volumes v ON v.vno = c.vno WHERE v.base_vno"
			   " IS NOT NULL AND c.depth < 64) SELECT coalesce(max(greatest(coalesce((SELECT"
			   " max(x.seq) FROM changes x WHERE x.vno = c.vno AND x.at < $2 AND x.seq <="
			   " c.cap), 0), coalesce((SELECT least(v.history_from, c.cap) FROM volumes v"
			   " WHERE v.vno = c.vno), 0))), 0) FROM chain c", "reading the kept history",
			   cof_pg_row_int, oldest, err, "iii", vno, closed_before,
			   (int64_t)INT64_MAX) < 0 ? -1 : 0;
}

/* Where bytea_one puts a cell's bytes. */
typedef struct {
	unsigned char **data;
	size_t *len;
} inline_one;

/* cof_pg_row_fn: the bytea in column 0 into ctx (an inline_one), malloc'd. */
static int bytea_one(void *ctx, PGresult *r, int i, cof_err *err)
{
	inline_one *o = ctx;

	if (cof_pg_bytea(r, i, 0, o->data, o->len) < 0)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	return 1;
}

static int pg_blob_inline(cof_meta *m, const char *sha, unsigned char **data, size_t *len,
		       cof_err *err)
{
	inline_one one = { data, len };

	*data = NULL;
	int rc = cof_pg_rows(m, "SELECT data FROM blobs WHERE sha256 = $1 AND data IS NOT NULL",
			     "reading content", bytea_one, &one, err, "s", sha);

	return rc < 0 ? -1 : rc > 0;
}

/* The batch of pg_blob_inline_many and its caller's fn, for inline_row. */
typedef struct {
	const char *const *shas;
	size_t n;
	cof_inline_fn fn;
	void *ctx;
} inline_batch;

/* cof_pg_row_fn: gives a (sha256, data) row to fn for each of the batch's
 * shas that it is. */
static int inline_row(void *ctx, PGresult *r, int row, cof_err *err)
{
	inline_batch *b = ctx;
	unsigned char *data = NULL;
	size_t len = 0;
	int stop = 0;

	if (cof_pg_bytea(r, row, 1, &data, &len) < 0)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	const char *sha = PQgetvalue(r, row, 0);
	for (size_t i = 0; i < b->n && !stop; i++)
		if (!strcmp(b->shas[i], sha))
			stop = b->fn(b->ctx, i, data, len);
	free(data);
	return stop ? 1 : 0;
}

/* One query for the batch (read-all's inline files): a round trip per batch,
 * not per file. Content shared by several of shas is given to each. */
static int pg_blob_inline_many(cof_meta *m, const char *const *shas, size_t n,
			       cof_inline_fn fn, void *ctx, cof_err *err)
{
	inline_batch b = { shas, n, fn, ctx };
	cof_buf list = COF_BUF_INIT;
	int rc;

	if (n == 0)
		return 0;
	cof_buf_add(&list, "{", 1);
	for (size_t i = 0; i < n; i++) /* hex digits: nothing to quote */
		cof_buf_addf(&list, "%s%s", i ? "," : "", shas[i]);
	cof_buf_add(&list, "}", 1);
	rc = cof_pg_rows(m, "SELECT sha256, data FROM blobs WHERE sha256 = ANY($1) AND "
			 "data IS NOT NULL", "reading content", inline_row, &b, err, "s",
			 list.data);
	cof_buf_release(&list);
	return rc < 0 ? -1 : 0;
}

static int pg_referenced(cof_meta *m, cof_sha_fn fn, void *ctx, cof_err *err)
{
	pgconn *c = cof_pg_begin(m, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", err);
	sha_each e = { fn, ctx };
	int rc;

	if (!c)
		return -1;
	rc = cof_pg_rows_on(c, "SELECT sha256, max(size) FROM entries WHERE sha256 != '' GROUP BY"
			    " sha256 UNION SELECT p.sha256, b.size FROM pins p JOIN blobs b ON"
			    " b.sha256 = p.sha256", "reading blobs", sha_row, &e, err, "");
	return cof_pg_end(m, c, rc < 0 ? -1 : 0, err);
}

/* This file's members of the PostgreSQL backend's table. */
void cof_pg_ops_gc(cof_meta_ops *o)
{
	o->gc_prune = pg_gc_prune;
	o->gc_mark = pg_gc_mark;
	o->gc_orphans = pg_gc_orphans;
	o->blob_forget = pg_blob_forget;
	o->blob_known = pg_blob_known;
	o->blob_inline = pg_blob_inline;
	o->blob_inline_many = pg_blob_inline_many;
	o->referenced = pg_referenced;
	o->blob_pending = pg_blob_pending;
	o->blob_forgotten = pg_blob_forgotten;
	o->blob_abandoned = pg_blob_abandoned;
	o->blob_claim = pg_blob_claim;
	o->history_kept = pg_history_kept;
}
