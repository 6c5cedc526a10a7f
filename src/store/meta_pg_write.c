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
	" sha256, ctype, updated_at) VALUES($1,$2,$3,NULL,$3,$4,$5,$6,$7)"
/* Inline content goes as bytea: it need not be text. The row naming it now
 * protects it: the pending mark of the write that stored it ends. */
#define SQL_BLOB_REF "INSERT INTO blobs(sha256, size, orphan_since, data) VALUES($1,$2," \
	"NULL,$3) ON CONFLICT(sha256) DO UPDATE SET orphan_since = NULL, claimed_at =" \
	" NULL, pending_at = NULL, data = coalesce(blobs.data, excluded.data)"
#define SQL_CHANGE_ADD "INSERT INTO changes(vno, seq, path, removed, version, size," \
	" sha256, at, who) VALUES($1,$2,$3,$4,$5,$6,$7,$8,$9) ON CONFLICT(vno, seq, path) DO" \
	" UPDATE SET removed = excluded.removed, version = excluded.version, size =" \
	" excluded.size, sha256 = excluded.sha256, at = excluded.at, who = excluded.who"


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
			 int64_t size, const char *sha, cof_err *err)
{
	if (cof_pg_do(tx->c, SQL_CHANGE_ADD, "recording a change", NULL, err, "iisiiisis",
		      tx->vol.vno, tx->vol.seq, path,
		      (int64_t)removed, version, size, sha, tx->now, tx->base.by))
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
	    cof_pg_stmt_set(&s[2], SQL_ENTRY_ADD, "writing a file", err, "isiissi", tx->vol.vno,
			    path, tx->vol.seq, size, sha, ctype, mtime > 0 ? mtime : tx->now) ||
	    cof_pg_stmt_set(&s[3], SQL_BLOB_REF, "writing a file", err, "sib", sha, size,
			    inline_data, inline_data ? size : (int64_t)0) ||
	    cof_pg_stmt_set(&s[4], SQL_CHANGE_ADD, "recording a change", err, "iisiiisis",
			    tx->vol.vno, tx->vol.seq, path, (int64_t)0, tx->vol.seq, size, sha,
			    tx->now, tx->base.by) ||
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
	    cof_pg_do(tx->c, SQL_ENTRY_ADD, "writing a file", NULL, err, "isiissi", tx->vol.vno,
		      path, tx->vol.seq, size, sha, ctype, mtime > 0 ? mtime : tx->now) ||
	    cof_pg_do(tx->c, SQL_BLOB_REF, "writing a file", NULL, err, "sib", sha, size,
		      inline_data, inline_data ? size : (int64_t)0))
		goto out;
	tx->vol.files++;
	tx->vol.bytes += size;
	rc = record_change(tx, path, 0, tx->vol.seq, size, sha, err);
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
		rc = record_change(tx, path, 1, old->version, old->size, old->sha256, err);
	free(old);
	return rc;
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
}
