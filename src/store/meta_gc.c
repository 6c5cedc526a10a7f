/*
 * meta_gc.c — what the garbage collector (volume/gc.c), fsck and the
 * content reads ask of the metadata, written once above the SQL seam
 * (store/sql.h): history pruning, orphan marks, the claims of content
 * across nodes, inline content and the kept history.
 *
 * Where the drivers differ is what orders a write against the collector
 * (docs/design.md, "Garbage collection across nodes"). On a store whose
 * driver says `claims` (PostgreSQL: processes on several nodes, no lock
 * file in common) a write records the content it is about to name
 * (blobs.pending_at) and the collector claims a row (blobs.claimed_at) before
 * it deletes the bytes, each in one statement whose row lock orders it with
 * the other. Otherwise (SQLite: one data dir) the store's gc_lock does
 * (store/lock.c): the collector forgets a row at once and the rest is
 * nothing; that schema has no pending_at or claimed_at.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "store/meta.h"
#include "store/sql.h"

/* How long a write's pending mark keeps its content from the collector, and
 * after how long a collector's claim is stale (its collector died) and may
 * be taken over; a claim's delete takes milliseconds. */
#define COF_GC_PENDING_SECONDS 600
#define COF_GC_CLAIM_SECONDS 30

#define GC "collecting garbage"

/* History rows of ?1 closed before it that neither a snapshot nor a fork
 * (which reads its parent's rows at its base seq, as a snapshot does) covers. */
#define DROPPED "to_seq IS NOT NULL AND closed_at < ?1 AND NOT EXISTS (SELECT 1 FROM" \
	" snapshots s WHERE s.src_vno = entries.vno AND s.seq >= entries.from_seq AND" \
	" s.seq < entries.to_seq) AND NOT EXISTS (SELECT 1 FROM volumes f WHERE" \
	" f.base_vno = entries.vno AND f.base_seq >= entries.from_seq AND" \
	" f.base_seq < entries.to_seq)"
/* Nothing names the blob: no row, no pin (content an agent was shown or sent,
 * or held: cof_meta_hold). */
#define UNNAMED "NOT EXISTS (SELECT 1 FROM entries e WHERE e.sha256 = blobs.sha256) AND" \
	" NOT EXISTS (SELECT 1 FROM pins p WHERE p.sha256 = blobs.sha256)"

/* ------------------------------------------------------------ the sweep */

int cof_meta_gc_prune(cof_meta *m, int64_t closed_before, int64_t changes_before,
		      int64_t *pruned, cof_err *err)
{
	cof_sql_tx tx;
	int rc;

	*pruned = 0;
	if (cof_sql_begin(m, COF_SQL_WRITE, &tx, err) < 0)
		return -1;
	/* Content of history dropped now has been unreferenced since its row was
	 * closed, over a grace period ago: it may go in this same sweep (the mark
	 * step un-marks what other rows still name). */
	rc = cof_sql_exec(&tx, NULL, "UPDATE blobs SET orphan_since = ?1 WHERE orphan_since IS"
			  " NULL AND sha256 IN (SELECT sha256 FROM entries WHERE " DROPPED ")", GC,
			  err, "i", closed_before);
	if (!rc)
		rc = cof_sql_exec(&tx, pruned, "DELETE FROM entries WHERE " DROPPED, GC, err, "i",
				  closed_before);
	/* The changes feed keeps at least its history window; the oldest seq still
	 * answered is remembered per volume so older `since` values get 410. */
	if (!rc)
		rc = cof_sql_exec(&tx, NULL, "UPDATE volumes SET history_from = (SELECT max(seq)"
				  " FROM changes WHERE changes.vno = volumes.vno AND at < ?1) WHERE"
				  " EXISTS (SELECT 1 FROM changes WHERE changes.vno = volumes.vno AND"
				  " at < ?1)", GC, err, "i", changes_before);
	if (!rc)
		rc = cof_sql_exec(&tx, NULL, "DELETE FROM changes WHERE at < ?1", GC, err, "i",
				  changes_before);
	return cof_sql_end(&tx, rc, err) < 0 ? -1 : 0;
}

int cof_meta_gc_mark(cof_meta *m, int64_t now, cof_err *err)
{
	cof_sql_tx tx;
	int rc;

	if (cof_sql_begin(m, COF_SQL_WRITE, &tx, err) < 0)
		return -1;
	rc = cof_sql_exec(&tx, NULL, "UPDATE blobs SET orphan_since = ?1 WHERE orphan_since IS"
			  " NULL AND " UNNAMED, GC, err, "i", now);
	if (!rc)
		rc = cof_sql_exec(&tx, NULL, "UPDATE blobs SET orphan_since = NULL WHERE"
				  " orphan_since IS NOT NULL AND (EXISTS (SELECT 1 FROM entries e"
				  " WHERE e.sha256 = blobs.sha256) OR EXISTS (SELECT 1 FROM pins p"
				  " WHERE p.sha256 = blobs.sha256))", GC, err, "");
	return cof_sql_end(&tx, rc, err) < 0 ? -1 : 0;
}

/* A caller's cof_sha_fn and its context, for sha_row. */
typedef struct {
	cof_sha_fn fn;
	void *ctx;
} sha_each;

/* cof_sql_row_fn: gives a (sha256, size) row to the caller's fn. */
static int sha_row(void *ctx, const cof_sql_row *r, cof_err *err)
{
	sha_each *e = ctx;

	(void)err;
	return e->fn(e->ctx, cof_sql_str(r, 0), cof_sql_int(r, 1)) ? 1 : 0;
}

int cof_meta_gc_orphans(cof_meta *m, int64_t before, cof_sha_fn fn, void *ctx, cof_err *err)
{
	sha_each e = { fn, ctx };
	int64_t now = cof_now();

	if (!m->sql->claims)
		return cof_sql_read(m, "SELECT sha256, size FROM blobs WHERE orphan_since <= ?1",
				    "reading blobs", sha_row, &e, err, "i", before) < 0 ? -1 : 0;
	/* Content a write said it is about to name is no orphan for a while;
	 * content a collector claimed is its own (until the claim goes stale). */
	return cof_sql_read(m, "SELECT sha256, size FROM blobs WHERE orphan_since <= ?1 AND"
			    " (pending_at IS NULL OR pending_at < ?2) AND (claimed_at IS NULL OR"
			    " claimed_at < ?3)", "reading blobs", sha_row, &e, err, "iii", before,
			    now - COF_GC_PENDING_SECONDS,
			    now - COF_GC_CLAIM_SECONDS) < 0 ? -1 : 0;
}

/* ------------------------------------------------------ claims and marks */

/* Without claims: the row goes now (the collector holds the gc_lock). With
 * them: the collector's claim on an orphan, 1 = claimed (delete its bytes,
 * then cof_meta_blob_forgotten), 0 = named again, or pending. One statement:
 * the row lock it takes orders it with a write's cof_meta_blob_pending, which
 * sets pending_at on the same row, so exactly one of the two goes first and
 * the other sees what it did. A claim left by a collector that died is taken
 * over after COF_GC_CLAIM_SECONDS. */
int cof_meta_blob_forget(cof_meta *m, const char *sha, cof_err *err)
{
	int64_t n = 0, now = cof_now();
	int rc;

	if (!m->sql->claims)
		rc = cof_sql_write(m, &n, "DELETE FROM blobs WHERE sha256 = ?1 AND orphan_since IS"
				   " NOT NULL AND " UNNAMED, GC, err, "s", sha);
	else
		rc = cof_sql_write(m, &n, "UPDATE blobs SET claimed_at = ?2 WHERE sha256 = ?1 AND"
				   " orphan_since IS NOT NULL AND (claimed_at IS NULL OR claimed_at"
				   " < ?3) AND (pending_at IS NULL OR pending_at < ?4) AND " UNNAMED,
				   GC, err, "siii", sha, now, now - COF_GC_CLAIM_SECONDS,
				   now - COF_GC_PENDING_SECONDS);
	return rc < 0 ? -1 : n > 0;
}

/* The claimed content's bytes are deleted: the row goes, unless a write named
 * it meanwhile (inline content needs no bytes). */
int cof_meta_blob_forgotten(cof_meta *m, const char *sha, cof_err *err)
{
	if (!m->sql->claims)
		return 0;
	return cof_sql_write(m, NULL, "DELETE FROM blobs WHERE sha256 = ?1 AND claimed_at IS NOT"
			     " NULL AND orphan_since IS NOT NULL AND " UNNAMED, GC, err, "s",
			     sha) < 0 ? -1 : 0;
}

/* A write that marked `sha` pending names nothing after all: the row goes
 * unless something else has it (a row, a pin, inline content, a claim), so
 * its bytes are collected as a cut-off upload's are, a grace period after
 * they were stored. A concurrent write of the same content upserts the row
 * again when it commits; until then its fresh bytes' mtime keeps them. */
int cof_meta_blob_abandoned(cof_meta *m, const char *sha, cof_err *err)
{
	if (!m->sql->claims)
		return 0;
	return cof_sql_write(m, NULL, "DELETE FROM blobs WHERE sha256 = ?1 AND pending_at IS NOT"
			     " NULL AND claimed_at IS NULL AND data IS NULL AND " UNNAMED,
			     "abandoning content", err, "s", sha) < 0 ? -1 : 0;
}

int cof_meta_blob_known(cof_meta *m, const char *sha, cof_err *err)
{
	int64_t one = 0;
	int rc;

	if (!m->sql->claims)
		rc = cof_sql_read(m, "SELECT 1 FROM blobs WHERE sha256 = ?1", "blobs",
				  cof_sql_row_int, &one, err, "s", sha);
	else /* a claimed blob is being forgotten: it counts as gone already */
		rc = cof_sql_read(m, "SELECT 1 FROM blobs WHERE sha256 = ?1 AND claimed_at IS"
				  " NULL", "blobs", cof_sql_row_int, &one, err, "s", sha);
	return rc < 0 ? -1 : rc > 0;
}

/* Bytes the metadata does not know (a cut-off upload's). With claims, the
 * collector claims them by a row of their own, so a write that stores the
 * same content now waits (cof_meta_blob_pending): 1 = claimed, 0 = a row is
 * there (a write knows them: keep them). Without: the collector holds the
 * content lock, so no write is between its blob and its metadata; bytes
 * named since they were listed stay (the sweep lists before it takes the
 * lock). */
int cof_meta_blob_claim(cof_meta *m, const char *sha, cof_err *err)
{
	int64_t n = 0, now = cof_now();

	if (!m->sql->claims) {
		int known = cof_meta_blob_known(m, sha, err);
		return known < 0 ? -1 : !known;
	}
	if (cof_sql_write(m, &n, "INSERT INTO blobs(sha256, size, orphan_since, claimed_at)"
			  " VALUES(?1, 0, ?2, ?2) ON CONFLICT DO NOTHING", GC, err, "si", sha,
			  now) < 0)
		return -1;
	return n > 0;
}

/* Records a write's pending mark on `sha` (one statement): *claimed = 1 when
 * a collector's live claim is on the row (it stays claimed). */
static int pending_once(cof_meta *m, const char *sha, int64_t size, int64_t *claimed,
			cof_err *err)
{
	cof_sql_tx tx;
	int64_t now = cof_now();
	int rc;

	*claimed = 0;
	if (cof_sql_begin(m, COF_SQL_WRITE | COF_SQL_ONE, &tx, err) < 0)
		return -1;
	/* A new row is an orphan from now (a write that then fails leaves it to
	 * the collector). */
	rc = cof_sql_query(&tx, "INSERT INTO blobs(sha256, size, orphan_since, pending_at)"
			   " VALUES(?1, ?2, ?3, ?3) ON CONFLICT(sha256) DO UPDATE SET pending_at"
			   " = ?3 RETURNING CASE WHEN claimed_at IS NOT NULL AND claimed_at >= ?4"
			   " THEN 1 ELSE 0 END", "recording content about to be named",
			   cof_sql_row_int, claimed, err, "siii", sha, size, now,
			   now - COF_GC_CLAIM_SECONDS);
	return cof_sql_end(&tx, rc < 0 ? rc : 0, err) < 0 ? -1 : 0;
}

/* Without claims: nothing to record (0). With them: records it, so no
 * collector claims it for COF_GC_PENDING_SECONDS. 0 = safe to name; 1 = a
 * collector had claimed it and has now deleted its row: its bytes may be
 * gone, the caller checks them (and re-stores or refuses). Waits at most
 * COF_GC_CLAIM_SECONDS for a claim in progress. */
int cof_meta_blob_pending(cof_meta *m, const char *sha, int64_t size, cof_err *err)
{
	int64_t t0 = cof_mono_ms(), claimed = 0;
	int was_claimed = 0;

	if (!m->sql->claims)
		return 0;
	for (;;) {
		if (pending_once(m, sha, size, &claimed, err) < 0)
			return -1;
		if (!claimed)
			return was_claimed;
		was_claimed = 1;
		if (cof_mono_ms() - t0 > COF_GC_CLAIM_SECONDS * 1000)
			return cof_error(err, COF_EUNAVAILABLE, "the content is being collected;"
					 " retry the write");
		usleep(20000);
	}
}

/* ------------------------------------------------------- inline content */

/* Where bytes_one puts a cell's bytes. */
typedef struct {
	unsigned char **data;
	size_t *len;
} inline_one;

/* cof_sql_row_fn: the blob in column 0 into ctx (an inline_one), malloc'd. */
static int bytes_one(void *ctx, const cof_sql_row *r, cof_err *err)
{
	inline_one *o = ctx;

	if (cof_sql_blob(r, 0, o->data, o->len) < 0)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	return 1;
}

/* The store's read of cof_meta_blob_inline (meta.c keeps contents in memory
 * in front of it). */
int cof_meta_blob_inline_read(cof_meta *m, const char *sha, unsigned char **data, size_t *len,
			      cof_err *err)
{
	inline_one one = { data, len };
	int rc;

	*data = NULL;
	rc = cof_sql_read(m, "SELECT data FROM blobs WHERE sha256 = ?1 AND data IS NOT NULL",
			  "reading content", bytes_one, &one, err, "s", sha);
	return rc < 0 ? -1 : rc > 0;
}

/* The batch of cof_meta_blob_inline_read_many and its caller's fn, for
 * inline_row. */
typedef struct {
	const char *const *shas;
	size_t n;
	cof_inline_fn fn;
	void *ctx;
} inline_batch;

/* cof_sql_row_fn: gives a (sha256, data) row to fn for each of the batch's
 * shas that it is; the bytes borrowed from the driver where it can. */
static int inline_row(void *ctx, const cof_sql_row *r, cof_err *err)
{
	inline_batch *b = ctx;
	const unsigned char *data = NULL;
	unsigned char *owned = NULL;
	size_t len = 0;
	int stop = 0;

	if (cof_sql_blob_ref(r, 1, &data, &len, &owned) < 0)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	const char *sha = cof_sql_str(r, 0);
	for (size_t i = 0; i < b->n && !stop; i++)
		if (!strcmp(b->shas[i], sha))
			stop = b->fn(b->ctx, i, data ? data : (const unsigned char *)"", len);
	free(owned);
	return stop ? 1 : 0;
}

/* One query for the batch (read-all's inline files): one read lock on
 * SQLite, one round trip on PostgreSQL, not one a file. The shas go as one
 * JSON array ({json_each} reads it; hex digits: nothing to quote). Content
 * shared by several of shas is given to each. */
int cof_meta_blob_inline_read_many(cof_meta *m, const char *const *shas, size_t n,
				   cof_inline_fn fn, void *ctx, cof_err *err)
{
	inline_batch b = { shas, n, fn, ctx };
	cof_buf list = COF_BUF_INIT;
	int rc;

	if (n == 0)
		return 0;
	cof_buf_add(&list, "[", 1);
	for (size_t i = 0; i < n; i++)
		cof_buf_addf(&list, "%s\"%s\"", i ? "," : "", shas[i]);
	cof_buf_add(&list, "]", 1);
	rc = cof_sql_read(m, "SELECT sha256, data FROM blobs WHERE sha256 IN (SELECT value FROM"
			  " {json_each}(?1)) AND data IS NOT NULL", "reading content", inline_row,
			  &b, err, "s", list.data);
	cof_buf_release(&list);
	return rc < 0 ? -1 : 0;
}

/* ------------------------------------------------------ fsck, history */

int cof_meta_referenced(cof_meta *m, cof_sha_fn fn, void *ctx, cof_err *err)
{
	sha_each e = { fn, ctx };
	cof_sql_tx tx;
	int rc;

	/* one snapshot: a row moved meanwhile is counted where it was */
	if (cof_sql_begin(m, COF_SQL_READ, &tx, err) < 0)
		return -1;
	rc = cof_sql_query(&tx, "SELECT sha256, max(size) FROM entries WHERE sha256 != '' GROUP"
			   " BY sha256 UNION SELECT p.sha256, b.size FROM pins p JOIN blobs b ON"
			   " b.sha256 = p.sha256", "reading blobs", sha_row, &e, err, "");
	return cof_sql_end(&tx, rc < 0 ? rc : 0, err) < 0 ? -1 : 0;
}

/* The fork chain of ?1 with each level's cap (the seq its child forked at),
 * and per level the seq below which a read may miss a dropped row: the
 * largest of the last change made before ?2 and history_from, each up to
 * the cap. (CASE, not SQLite's min/max of two or PostgreSQL's least and
 * greatest; both columns are NOT NULL.) */
#define KEPT_SQL "WITH RECURSIVE chain(vno, cap, depth) AS (SELECT CAST(?1 AS bigint)," \
	" CAST(?3 AS bigint), 0 UNION ALL SELECT v.base_vno, CASE WHEN v.base_seq < c.cap" \
	" THEN v.base_seq ELSE c.cap END, c.depth + 1 FROM chain c JOIN volumes v ON" \
	" v.vno = c.vno WHERE v.base_vno IS NOT NULL AND c.depth < 64), kept(at) AS (SELECT" \
	" coalesce((SELECT max(x.seq) FROM changes x WHERE x.vno = c.vno AND x.at < ?2 AND" \
	" x.seq <= c.cap), 0) FROM chain c UNION ALL SELECT CASE WHEN v.history_from < c.cap" \
	" THEN v.history_from ELSE c.cap END FROM chain c JOIN volumes v ON v.vno = c.vno)" \
	" SELECT coalesce(max(at), 0) FROM kept"

int cof_meta_history_kept(cof_meta *m, int64_t vno, int64_t closed_before, int64_t *oldest,
			  cof_err *err)
{
	*oldest = 0;
	return cof_sql_read(m, KEPT_SQL, "reading the kept history", cof_sql_row_int, oldest,
			    err, "iii", vno, closed_before, (int64_t)INT64_MAX) < 0 ? -1 : 0;
}
