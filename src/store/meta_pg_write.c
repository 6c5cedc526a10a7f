/*
 * meta_pg_write.c — changes (the one write primitive) and snapshots, on PostgreSQL.
 *
 * A change holds the volume's row lock (FOR UPDATE) from loading the volume to
 * COMMIT. READ COMMITTED gives each later statement a fresh snapshot, so once
 * the lock is held every read of the change (cof_txn_get, the conditions the
 * volume layer checks) sees the last committed change of every node, and the
 * seq it writes is exactly one past it: racing conditional writes on
 * different nodes have one winner.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "store/meta_pg.h"
#include "store/notify.h"

#define PGT(tx) ((pg_txn *)(void *)(tx))

#define SQL_CLOSE_LIVE "UPDATE entries SET to_seq = $1, closed_at = $2 WHERE vno = $3 AND" \
	" path = $4 AND to_seq IS NULL RETURNING " PG_ENTRY_COLS
#define SQL_DROP_OWN "DELETE FROM entries WHERE vno = $1 AND path = $2 AND from_seq = $3"
#define SQL_ENTRY_ADD "INSERT INTO entries(vno, path, from_seq, to_seq, version, size," \
	" sha256, ctype, updated_at, s3meta) VALUES($1,$2,$3,NULL,$3,$4,$5,$6,$7,$8)"
/* Inline content goes as bytea: it need not be text. The row naming it now
 * protects it: the pending mark of the write that stored it ends. */
#define SQL_BLOB_REF "INSERT INTO blobs(sha256, size, orphan_since, data) VALUES($1,$2," \
	"NULL,$3) ON CONFLICT(sha256) DO UPDATE SET orphan_since = NULL, claimed_at =" \
	" NULL, pending_at = NULL, data = coalesce(blobs.data, excluded.data)"
#define SQL_CHANGE_ADD "INSERT INTO changes(vno, seq, path, removed, version, size," \
	" sha256, at, who, s3meta) VALUES($1,$2,$3,$4,$5,$6,$7,$8,$9,$10) ON CONFLICT(vno, seq," \
	" path) DO UPDATE SET removed = excluded.removed, version = excluded.version, size =" \
	" excluded.size, sha256 = excluded.sha256, at = excluded.at, who = excluded.who," \
	" s3meta = excluded.s3meta"


/* ------------------------------------------------------------- changes */

static int pg_change(cof_meta *m, int64_t vno, cof_txn_fn fn, void *ctx, int64_t *seq,
		  cof_err *err)
{
	pg_txn tx = {.base.m = m, .now = cof_now()};
	cof_pg_stmt end[3] = {{0}, {0}, {.what = "COMMIT"}};
	char note[256];
	int rc;

	if (!(tx.c = cof_pg_get(m, err)))
		return -1;
	/* Round trips are what a change costs here, under the volume's lock:
	 * BEGIN with the lock, and the update, the notification and COMMIT,
	 * go as one pipeline each (bench/nodes.py). */
	rc = cof_pg_volume_lock_begin(tx.c, vno, &tx.vol, err);
	if (!rc) {
		tx.vol.seq++;
		rc = fn((cof_txn *)(void *)&tx, ctx, err);
	}
	if (!rc && tx.ops == 0) {
		*seq = tx.vol.seq - 1;
		cof_pg_put(m, tx.c); /* nothing to store: rolled back */
		return 0;
	}
	/* Every node's waiters on this volume wake when it commits (notify_pg.c). */
	cof_topic t = cof_topic_volume(tx.vol.org, tx.vol.id);
	cof_notify_pg_payload(&t, note, sizeof note);
	if (!rc &&
	    !(rc = cof_pg_stmt_set(&end[0], "UPDATE volumes SET seq = $1, files = $2, bytes = $3,"
				   " capacity = $4 WHERE vno = $5", "updating the volume", err,
				   "iiiii", tx.vol.seq, tx.vol.files, tx.vol.bytes, tx.vol.capacity,
				   vno)) &&
	    !(rc = cof_pg_stmt_set(&end[1], "SELECT pg_notify('coffer', $1)", "notifying", err,
				   "s", note)) &&
	    !(rc = cof_pg_pipeline(tx.c, end, 3, err)))
		for (int i = 0; i < 3; i++)
			PQclear(end[i].res);
	cof_pg_put(m, tx.c); /* rolls back what is still open */
	if (rc)
		return -1;
	*seq = tx.vol.seq;
	return 0;
}

static cof_volrow *pg_txn_volume(cof_txn *tx)
{
	return &PGT(tx)->vol;
}

static int pg_txn_get(cof_txn *tx, const char *path, cof_entry *out, cof_err *err)
{
	return cof_pg_entry_get(PGT(tx)->c, PGT(tx)->vol.vno, path, -1, out, err);
}

static int pg_txn_list(cof_txn *tx, const char *prefix, cof_entry_fn fn, void *ctx,
		    cof_err *err)
{
	return cof_pg_entry_list_in(PGT(tx)->c, PGT(tx)->vol.vno, PGT(tx)->vol.base_vno != 0, -1,
				    prefix, NULL, fn, ctx, err);
}

/* Closes the live row of `path` (if any) at this change's seq, returning it
 * into *old: 1 closed, 0 none, -1 error. */
static int close_live(pg_txn *tx, const char *path, cof_entry *old, cof_err *err)
{
	PGresult *r = cof_pg_q(tx->c, SQL_CLOSE_LIVE, "writing a file", err, "iiis", tx->vol.seq,
			       tx->now, tx->vol.vno, path);
	int had;

	if (!r)
		return -1;
	had = PQntuples(r) > 0;
	if (had)
		cof_pg_row_entry(r, 0, old);
	PQclear(r);
	/* In a fork the closed row may be a whiteout (the file was removed), or
	 * there is none of its own and the parent's row is the live one. */
	if (had && !old->sha256[0])
		had = 0;
	else if (!had && tx->vol.base_vno &&
		 (had = cof_pg_entry_get(tx->c, tx->vol.vno, path, -1, old, err)) < 0)
		return -1;
	if (had) {
		tx->vol.files--;
		tx->vol.bytes -= old->size;
	}
	return had;
}

/* A fork's remove leaves a whiteout row (sha256 ""), live from this change:
 * it hides the parent's row of the path (docs/design.md, "Forks"). */
static int whiteout(pg_txn *tx, const char *path, const cof_entry *old, cof_err *err)
{
	if (cof_pg_do(tx->c, "DELETE FROM entries WHERE vno = $1 AND path = $2 AND from_seq = $3",
		      "removing a file", NULL, err, "isi", tx->vol.vno, path, tx->vol.seq))
		return -1;
	return cof_pg_do(tx->c, "INSERT INTO entries(vno, path, from_seq, to_seq, version, size,"
			 " sha256, ctype, updated_at) VALUES($1,$2,$3,NULL,$4,0,'','',$5)",
			 "removing a file", NULL, err, "isiii", tx->vol.vno, path, tx->vol.seq,
			 old->version, tx->now);
}

static int record_change(pg_txn *tx, const char *path, int removed, int64_t version,
			 int64_t size, const char *sha, const char *s3meta, cof_err *err)
{
	if (cof_pg_do(tx->c, SQL_CHANGE_ADD, "recording a change", NULL, err, "iisiiisiss",
		      tx->vol.vno, tx->vol.seq, path,
		      (int64_t)removed, version, size, sha, tx->now, tx->base.by, s3meta))
		return -1;
	tx->ops++;
	return 0;
}

/* A write to a volume that is not a fork: its five statements depend on
 * none of the others' results, so they go as one pipeline (one round trip
 * under the volume's lock instead of five). */
static int write_piped(pg_txn *tx, const char *path, const char *sha, int64_t size,
		       const char *ctype, const void *inline_data, int64_t mtime, cof_err *err)
{
	cof_pg_stmt s[5];
	cof_entry old;
	int had;

	if (cof_pg_stmt_set(&s[0], SQL_CLOSE_LIVE, "writing a file", err, "iiis", tx->vol.seq,
			    tx->now, tx->vol.vno, path) ||
	    cof_pg_stmt_set(&s[1], SQL_DROP_OWN, "writing a file", err, "isi", tx->vol.vno,
			    path, tx->vol.seq) ||
	    cof_pg_stmt_set(&s[2], SQL_ENTRY_ADD, "writing a file", err, "isiissis", tx->vol.vno,
			    path, tx->vol.seq, size, sha, ctype, mtime > 0 ? mtime : tx->now,
			    tx->base.s3meta) ||
	    cof_pg_stmt_set(&s[3], SQL_BLOB_REF, "writing a file", err, "sib", sha, size,
			    inline_data, inline_data ? size : (int64_t)0) ||
	    cof_pg_stmt_set(&s[4], SQL_CHANGE_ADD, "recording a change", err, "iisiiisiss",
			    tx->vol.vno, tx->vol.seq, path, (int64_t)0, tx->vol.seq, size, sha,
			    tx->now, tx->base.by, tx->base.s3meta) ||
	    cof_pg_pipeline(tx->c, s, 5, err))
		return -1;
	had = PQntuples(s[0].res) > 0;
	if (had)
		cof_pg_row_entry(s[0].res, 0, &old);
	for (int i = 0; i < 5; i++)
		PQclear(s[i].res);
	if (had && old.sha256[0]) { /* a whiteout closed hides nothing */
		tx->vol.files--;
		tx->vol.bytes -= old.size;
	}
	tx->vol.files++;
	tx->vol.bytes += size;
	tx->ops++;
	return 0;
}

static int pg_txn_write(cof_txn *t, const char *path, const char *sha, int64_t size,
		     const char *ctype, const void *inline_data, int64_t mtime, cof_err *err)
{
	pg_txn *tx = PGT(t);
	cof_entry *old;
	int rc = -1;

	if (!tx->vol.base_vno)
		return write_piped(tx, path, sha, size, ctype, inline_data, mtime, err);
	/* a fork: closing may find the parent's row, read between the steps */
	if (!(old = cof_malloc(sizeof *old)))
		return cof_error(err, COF_EINTERNAL, "out of memory");
	if (close_live(tx, path, old, err) < 0)
		goto out;
	/* A row written earlier in this same change is replaced, not kept as history. */
	if (cof_pg_do(tx->c, SQL_DROP_OWN, "writing a file", NULL, err, "isi", tx->vol.vno, path,
		      tx->vol.seq) ||
	    cof_pg_do(tx->c, SQL_ENTRY_ADD, "writing a file", NULL, err, "isiissis", tx->vol.vno,
		      path, tx->vol.seq, size, sha, ctype, mtime > 0 ? mtime : tx->now,
		      tx->base.s3meta) ||
	    cof_pg_do(tx->c, SQL_BLOB_REF, "writing a file", NULL, err, "sib", sha, size,
		      inline_data, inline_data ? size : (int64_t)0))
		goto out;
	tx->vol.files++;
	tx->vol.bytes += size;
	rc = record_change(tx, path, 0, tx->vol.seq, size, sha, tx->base.s3meta, err);
out:
	free(old);
	return rc;
}

static int pg_txn_remove(cof_txn *t, const char *path, cof_err *err)
{
	pg_txn *tx = PGT(t);
	cof_entry *old = cof_malloc(sizeof *old);
	int had, rc = -1;

	if (!old)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	had = close_live(tx, path, old, err);
	if (had == 0)
		cof_error(err, COF_ENOTFOUND, "file '%.200s' not found", path);
	if (had > 0 && (!tx->vol.base_vno || !whiteout(tx, path, old, err)))
		rc = record_change(tx, path, 1, old->version, old->size, old->sha256, NULL, err);
	free(old);
	return rc;
}

/* ------------------------------------------------------------- snapshots */

#define SNAP_COLS "id, vno, src_vno, seq, pinned, labels, files, bytes, created_at"

static void row_snapshot(PGresult *r, int i, cof_snaprow *s)
{
	cof_pg_copy(r, i, 0, s->id, sizeof s->id);
	s->vno = cof_pg_int(r, i, 1);
	s->src_vno = cof_pg_int(r, i, 2);
	s->seq = cof_pg_int(r, i, 3);
	s->pinned = (int)cof_pg_int(r, i, 4);
	cof_pg_copy(r, i, 5, s->labels, sizeof s->labels);
	s->files = cof_pg_int(r, i, 6);
	s->bytes = cof_pg_int(r, i, 7);
	s->created_at = cof_pg_int(r, i, 8);
}

/* cof_pg_row_fn: a SNAP_COLS row into ctx (a cof_snaprow). */
static int snap_one(void *ctx, PGresult *r, int i, cof_err *err)
{
	(void)err;
	row_snapshot(r, i, ctx);
	return 1;
}

/* A caller's cof_snap_fn, its context and the row it is given (on the heap:
 * labels are large), for snap_row. */
typedef struct {
	cof_snap_fn fn;
	void *ctx;
	cof_snaprow *s;
} snap_each;

/* cof_pg_row_fn: gives a SNAP_COLS row to the caller's fn. */
static int snap_row(void *ctx, PGresult *r, int i, cof_err *err)
{
	snap_each *e = ctx;

	(void)err;
	row_snapshot(r, i, e->s);
	return e->fn(e->ctx, e->s) ? 1 : 0;
}

/* The volume's row lock: snapshot counts and retention of one volume are
 * decided by one node at a time. 0, or -1 (COF_ENOTFOUND when it is gone). */
static int lock_volume(pgconn *c, int64_t vno, cof_err *err)
{
	cof_volrow v;
	return cof_pg_volume_load(c, vno, NULL, NULL, 1, &v, err);
}

static int64_t snapshot_count(pgconn *c, int64_t vno, int pinned, cof_err *err)
{
	int64_t n = 0;

	if (cof_pg_rows_on(c, "SELECT count(*) FROM snapshots WHERE vno = $1 AND pinned = $2",
			   "counting snapshots", cof_pg_row_int, &n, err, "ii", vno,
			   (int64_t)pinned) < 0)
		return -1;
	return n;
}

static int pinned_room(pgconn *c, int64_t vno, int max_pinned, cof_err *err)
{
	int64_t n = snapshot_count(c, vno, 1, err);

	if (n < 0)
		return -1;
	if (n >= max_pinned)
		return cof_error(err, COF_ECONFLICT,
				 "the volume has %lld pinned snapshots; the limit is %d",
				 (long long)n, max_pinned);
	return 0;
}

/* Drops the oldest unpinned snapshots past `keep`; the last one dropped goes to
 * `dropped`. */
static int snapshot_retain(pgconn *c, int64_t vno, int keep, char dropped[48], cof_err *err)
{
	int64_t n = snapshot_count(c, vno, 0, err);

	while (n > keep) {
		PGresult *r = cof_pg_q(c, "SELECT id, src_vno FROM snapshots WHERE vno = $1 AND"
				       " pinned = 0 ORDER BY ord LIMIT 1", "retaining snapshots",
				       err, "i", vno);
		char id[48];
		int64_t src;
		if (!r)
			return -1;
		if (PQntuples(r) != 1) {
			PQclear(r);
			return cof_error(err, COF_EINTERNAL, "metadata store: retaining snapshots");
		}
		cof_pg_copy(r, 0, 0, id, sizeof id);
		src = cof_pg_int(r, 0, 1);
		PQclear(r);
		if (cof_pg_snapshot_drop(c, id, vno, src, err))
			return -1;
		memcpy(dropped, id, 48);
		n--;
	}
	return n < 0 ? -1 : 0;
}

static int pg_snapshot_add(cof_meta *m, cof_snaprow *s, int keep_unpinned, int max_pinned,
			char dropped[48], cof_err *err)
{
	pgconn *c = cof_pg_begin(m, NULL, err);
	int rc;

	dropped[0] = '\0';
	if (!c)
		return -1;
	rc = lock_volume(c, s->vno, err);
	if (!rc && s->pinned)
		rc = pinned_room(c, s->vno, max_pinned, err);
	if (!rc)
		rc = cof_pg_do(c, "INSERT INTO snapshots(" SNAP_COLS ") VALUES($1,$2,$3,$4,$5,$6,$7,"
			       "$8,$9)", "adding a snapshot", NULL, err, "siiiisiii", s->id, s->vno,
			       s->src_vno, s->seq, (int64_t)s->pinned, s->labels, s->files,
			       s->bytes, s->created_at);
	if (!rc)
		rc = snapshot_retain(c, s->vno, keep_unpinned, dropped, err);
	return cof_pg_end(m, c, rc, err);
}

static int snapshot_load(pgconn *c, int64_t vno, const char *sid, cof_snaprow *out,
			 cof_err *err)
{
	int found = cof_pg_rows_on(c, "SELECT " SNAP_COLS " FROM snapshots WHERE id = $1 AND"
				   " vno = $2", "reading a snapshot", snap_one, out, err, "si", sid,
				   vno);

	if (found < 0)
		return -1;
	return found ? 0 : cof_error(err, COF_ENOTFOUND, "snapshot '%.64s' not found", sid);
}

static int pg_snapshot_get(cof_meta *m, int64_t vno, const char *sid, cof_snaprow *out,
			cof_err *err)
{
	pgconn *c = cof_pg_get(m, err);
	int rc;

	if (!c)
		return -1;
	rc = snapshot_load(c, vno, sid, out, err);
	cof_pg_put(m, c);
	return rc;
}

static int pg_snapshot_list(cof_meta *m, int64_t vno, cof_snap_fn fn, void *ctx, cof_err *err)
{
	snap_each e = { fn, ctx, cof_malloc(sizeof *e.s) };
	int rc;

	if (!e.s)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	rc = cof_pg_rows(m, "SELECT " SNAP_COLS " FROM snapshots WHERE vno = $1 ORDER BY ord",
			 "listing snapshots", snap_row, &e, err, "i", vno);
	free(e.s);
	return rc < 0 ? -1 : 0;
}

/* A connection with BEGIN done, and in *s (malloc'd: free it) the snapshot
 * `sid` of `vno`: *rc 0, or -1 (err set) when it cannot be read. NULL
 * (nothing to end or free) when no connection can be had. */
static pgconn *snapshot_begin(cof_meta *m, int64_t vno, const char *sid, cof_snaprow **s,
			      int *rc, cof_err *err)
{
	pgconn *c = cof_pg_begin(m, NULL, err);

	*s = c ? cof_malloc(sizeof **s) : NULL;
	if (c)
		*rc = *s ? snapshot_load(c, vno, sid, *s, err)
			 : cof_error(err, COF_EINTERNAL, "out of memory");
	return c;
}

static int pg_snapshot_update(cof_meta *m, int64_t vno, const char *sid, int pinned,
			   const char *labels, int max_pinned, cof_err *err)
{
	cof_snaprow *s;
	int rc;
	pgconn *c = snapshot_begin(m, vno, sid, &s, &rc, err);

	if (!c)
		return -1;
	if (!rc)
		rc = lock_volume(c, vno, err);
	if (!rc && pinned == 1 && !s->pinned)
		rc = pinned_room(c, vno, max_pinned, err);
	if (!rc)
		rc = cof_pg_do(c, "UPDATE snapshots SET pinned = $1, labels = $2 WHERE id = $3",
			       "updating a snapshot", NULL, err, "iss",
			       (int64_t)(pinned < 0 ? s->pinned : pinned), labels ? labels : s->labels,
			       sid);
	free(s);
	return cof_pg_end(m, c, rc, err);
}

static int pg_snapshot_delete(cof_meta *m, int64_t vno, const char *sid, cof_err *err)
{
	cof_snaprow *s;
	int rc;
	pgconn *c = snapshot_begin(m, vno, sid, &s, &rc, err);

	if (!c)
		return -1;
	if (!rc)
		rc = cof_pg_snapshot_drop(c, sid, vno, s->src_vno, err);
	free(s);
	return cof_pg_end(m, c, rc, err);
}

/* This file's members of the PostgreSQL backend's table. */
void cof_pg_ops_write(cof_meta_ops *o)
{
	o->change = pg_change;
	o->txn_volume = pg_txn_volume;
	o->txn_get = pg_txn_get;
	o->txn_list = pg_txn_list;
	o->txn_write = pg_txn_write;
	o->txn_remove = pg_txn_remove;
	o->snapshot_add = pg_snapshot_add;
	o->snapshot_get = pg_snapshot_get;
	o->snapshot_list = pg_snapshot_list;
	o->snapshot_update = pg_snapshot_update;
	o->snapshot_delete = pg_snapshot_delete;
}
