/*
 * meta_sqlite_write.c — changes (the one write primitive) and snapshots, on SQLite.
 */
#include <stdlib.h>
#include <string.h>
#include "store/meta_sqlite.h"

/* ------------------------------------------------------------- changes */

static int sq_change(cof_meta *m, int64_t vno, cof_txn_fn fn, void *ctx,
		     int64_t *seq, cof_err *err)
{
	sq_txn tx = {.base.m = m, .now = cof_now()};
	sqlite3_stmt *st;
	int rc;

	if (!(tx.c = cof_sqlite_writer_begin(m, err)))
		return -1;
	rc = cof_sqlite_volume_load(tx.c, vno, NULL, NULL, &tx.vol, err);
	if (!rc) {
		tx.vol.seq++;
		rc = fn(&tx.base, ctx, err);
	}
	if (!rc && tx.ops == 0) {
		*seq = tx.vol.seq - 1;
		/* nothing to store: roll back; what it read commits with its batch */
		return cof_sqlite_writer_end(m, 1, err) < 0 ? -1 : 0;
	}
	if (!rc && !(st = cof_sqlite_q(tx.c, "UPDATE volumes SET seq = ?, files = ?, bytes = ?,"
			    " capacity = ? WHERE vno = ?", err)))
		rc = -1;
	if (!rc) {
		sqlite3_bind_int64(st, 1, tx.vol.seq);
		sqlite3_bind_int64(st, 2, tx.vol.files);
		sqlite3_bind_int64(st, 3, tx.vol.bytes);
		sqlite3_bind_int64(st, 4, tx.vol.capacity);
		sqlite3_bind_int64(st, 5, vno);
		if (sqlite3_step(st) != SQLITE_DONE)
			rc = cof_sqlite_db_error(err, tx.c->db, "updating the volume");
	}
	if (cof_sqlite_writer_end(m, rc, err))
		return -1;
	*seq = tx.vol.seq;
	return 0;
}

static cof_volrow *sq_txn_volume(cof_txn *tx)
{
	return &SQT(tx)->vol;
}

static int sq_txn_get(cof_txn *tx, const char *path, cof_entry *out, cof_err *err)
{
	return cof_sqlite_entry_get(SQT(tx)->c, SQT(tx)->vol.vno, path, -1, out, err);
}

static int sq_txn_list(cof_txn *tx, const char *prefix, cof_entry_fn fn, void *ctx,
		       cof_err *err)
{
	return cof_sqlite_entry_list(SQT(tx)->c, SQT(tx)->vol.vno, -1, prefix, NULL, fn, ctx, err);
}

/* Closes the live row of `path` (if any) at this change's seq; *old gets it. */
static int close_live(cof_txn *tx, const char *path, cof_entry *old, int *had,
		      cof_err *err)
{
	sqlite3_stmt *st;

	*had = cof_sqlite_entry_get(SQT(tx)->c, SQT(tx)->vol.vno, path, -1, old, err);
	/* In a fork the live row may be a whiteout (closed all the same) or the
	 * parent's (nothing of the fork's own to close). */
	if (*had < 0 || (*had == 0 && !SQT(tx)->vol.base_vno))
		return *had;
	st = cof_sqlite_q(SQT(tx)->c, "UPDATE entries SET to_seq = ?, closed_at = ? WHERE vno = ? AND path = ?"
	       " AND to_seq IS NULL", err);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, SQT(tx)->vol.seq);
	sqlite3_bind_int64(st, 2, SQT(tx)->now);
	sqlite3_bind_int64(st, 3, SQT(tx)->vol.vno);
	cof_sqlite_bind_text(st, 4, path);
	if (sqlite3_step(st) != SQLITE_DONE)
		return cof_sqlite_db_error(err, SQT(tx)->c->db, "writing a file");
	if (!*had)
		return 0;
	SQT(tx)->vol.files--;
	SQT(tx)->vol.bytes -= old->size;
	return 1;
}

/* Drops the row of `path` this same change wrote: it is replaced, not kept
 * as history. */
static int drop_own(cof_txn *tx, const char *path, cof_err *err)
{
	sqlite3_stmt *st = cof_sqlite_q(SQT(tx)->c, "DELETE FROM entries WHERE vno = ? AND path = ?"
					" AND from_seq = ?", err);

	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, SQT(tx)->vol.vno);
	cof_sqlite_bind_text(st, 2, path);
	sqlite3_bind_int64(st, 3, SQT(tx)->vol.seq);
	if (sqlite3_step(st) != SQLITE_DONE)
		return cof_sqlite_db_error(err, SQT(tx)->c->db, "writing a file");
	return 0;
}

/* A fork's remove leaves a whiteout row (sha256 ""), live from this change:
 * it hides the parent's row of the path (docs/design.md, "Forks"). */
static int whiteout(cof_txn *tx, const char *path, const cof_entry *old, cof_err *err)
{
	sqlite3_stmt *st;

	if (drop_own(tx, path, err))
		return -1;
	if (!(st = cof_sqlite_q(SQT(tx)->c, "INSERT INTO entries(vno, path, from_seq, to_seq, version,"
				" size, sha256, ctype, updated_at) VALUES(?,?,?,NULL,?,0,'','',?)", err)))
		return -1;
	sqlite3_bind_int64(st, 1, SQT(tx)->vol.vno);
	cof_sqlite_bind_text(st, 2, path);
	sqlite3_bind_int64(st, 3, SQT(tx)->vol.seq);
	sqlite3_bind_int64(st, 4, old->version);
	sqlite3_bind_int64(st, 5, SQT(tx)->now);
	if (sqlite3_step(st) != SQLITE_DONE)
		return cof_sqlite_db_error(err, SQT(tx)->c->db, "removing a file");
	return 0;
}

static int record_change(cof_txn *tx, const char *path, int removed, int64_t version,
			 int64_t size, const char *sha, const char *s3meta, cof_err *err)
{
	sqlite3_stmt *st = cof_sqlite_q(SQT(tx)->c, "INSERT OR REPLACE INTO changes(vno, seq, path, removed,"
			     " version, size, sha256, at, who, s3meta) VALUES(?,?,?,?,?,?,?,?,?,?)", err);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, SQT(tx)->vol.vno);
	sqlite3_bind_int64(st, 2, SQT(tx)->vol.seq);
	cof_sqlite_bind_text(st, 3, path);
	sqlite3_bind_int(st, 4, removed);
	sqlite3_bind_int64(st, 5, version);
	sqlite3_bind_int64(st, 6, size);
	cof_sqlite_bind_text(st, 7, sha);
	sqlite3_bind_int64(st, 8, SQT(tx)->now);
	cof_sqlite_bind_text(st, 9, tx->by);
	cof_sqlite_bind_text(st, 10, s3meta);
	if (sqlite3_step(st) != SQLITE_DONE)
		return cof_sqlite_db_error(err, SQT(tx)->c->db, "recording a change");
	SQT(tx)->ops++;
	return 0;
}

static int sq_txn_write(cof_txn *tx, const char *path, const char *sha, int64_t size,
			const char *ctype, const void *inline_data, int64_t mtime, cof_err *err)
{
	cof_entry *old = cof_malloc(sizeof *old);
	sqlite3_stmt *st;
	int had, rc = -1;

	if (!old)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	if (close_live(tx, path, old, &had, err) < 0)
		goto out;
	if (drop_own(tx, path, err))
		goto out;
	st = cof_sqlite_q(SQT(tx)->c, "INSERT INTO entries(vno, path, from_seq, to_seq, version, size, sha256,"
	       " ctype, updated_at, s3meta) VALUES(?,?,?,NULL,?,?,?,?,?,?)", err);
	if (!st)
		goto out;
	sqlite3_bind_int64(st, 1, SQT(tx)->vol.vno);
	cof_sqlite_bind_text(st, 2, path);
	sqlite3_bind_int64(st, 3, SQT(tx)->vol.seq);
	sqlite3_bind_int64(st, 4, SQT(tx)->vol.seq);
	sqlite3_bind_int64(st, 5, size);
	cof_sqlite_bind_text(st, 6, sha);
	cof_sqlite_bind_text(st, 7, ctype);
	sqlite3_bind_int64(st, 8, mtime > 0 ? mtime : SQT(tx)->now);
	cof_sqlite_bind_text(st, 9, tx->s3meta);
	if (sqlite3_step(st) != SQLITE_DONE) {
		cof_sqlite_db_error(err, SQT(tx)->c->db, "writing a file");
		goto out;
	}
	st = cof_sqlite_q(SQT(tx)->c, "INSERT INTO blobs(sha256, size, orphan_since, data) VALUES(?,?,NULL,?)"
	       " ON CONFLICT(sha256) DO UPDATE SET orphan_since = NULL,"
	       " data = coalesce(data, excluded.data)", err);
	if (!st)
		goto out;
	cof_sqlite_bind_text(st, 1, sha);
	sqlite3_bind_int64(st, 2, size);
	if (inline_data)
		sqlite3_bind_blob(st, 3, inline_data, (int)size, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_DONE) {
		cof_sqlite_db_error(err, SQT(tx)->c->db, "writing a file");
		goto out;
	}
	SQT(tx)->vol.files++;
	SQT(tx)->vol.bytes += size;
	rc = record_change(tx, path, 0, SQT(tx)->vol.seq, size, sha, tx->s3meta, err);
out:
	free(old);
	return rc;
}

static int sq_txn_remove(cof_txn *tx, const char *path, cof_err *err)
{
	cof_entry *old = cof_malloc(sizeof *old);
	int had, rc = -1;

	if (!old)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	if (close_live(tx, path, old, &had, err) < 0)
		goto out;
	if (!had) {
		cof_error(err, COF_ENOTFOUND, "file '%.200s' not found", path);
		goto out;
	}
	if (SQT(tx)->vol.base_vno && whiteout(tx, path, old, err))
		goto out;
	rc = record_change(tx, path, 1, old->version, old->size, old->sha256, NULL, err);
out:
	free(old);
	return rc;
}

/* Fills the members of the SQLite backend this file implements. */
void cof_sqlite_ops_write(cof_meta_ops *o)
{
	o->change = sq_change;
	o->txn_volume = sq_txn_volume;
	o->txn_get = sq_txn_get;
	o->txn_list = sq_txn_list;
	o->txn_write = sq_txn_write;
	o->txn_remove = sq_txn_remove;
}
