/*
 * meta_pg_write.c — changes (the one write primitive) and snapshots, on PostgreSQL.
 *
 * A change holds the volume's row lock (FOR UPDATE) from loading the volume to
 * COMMIT. READ COMMITTED gives each later statement a fresh snapshot, so once
 * the lock is held every read of the change (cof_txn_get, the conditions the
 * volume layer checks) sees the last committed change of every node, and the
 * seq it writes is exactly one past it: racing conditional writes on
 * different nodes have one winner. Changes of one volume on this node share
 * that transaction and its COMMIT (a batch, meta_pg_group.c), one at a time,
 * each under a savepoint of its own once it writes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "store/meta_pg.h"

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

static void checks_free(struct pg_checks *k);

/* A change is a member of its volume's batch on this node (meta_pg_group.c):
 * it runs on the batch's connection, takes the next seq of the volume as the
 * batch left it, and is answered once the batch's COMMIT is. */
static int pg_change(cof_meta *m, int64_t vno, cof_txn_fn fn, void *ctx, int64_t *seq,
		  cof_err *err)
{
	pg_txn tx = {.base.m = m, .now = cof_now()};
	int rc;

	if (!(tx.g = cof_pg_group_begin(m, vno, &tx.c, &tx.vol, err)))
		return -1;
	tx.vol.seq++;
	rc = fn((cof_txn *)(void *)&tx, ctx, err);
	checks_free(tx.checks);
	if (!rc)   /* nothing to store: the seq the volume is at */
		*seq = tx.ops ? tx.vol.seq : tx.vol.seq - 1;
	/* undone before its write was sent: nothing to roll back */
	if ((rc || !tx.ops) && cof_pg_group_drop_own(tx.g))
		tx.savepoint[0] = '\0';
	return cof_pg_group_end(m, tx.g, rc, tx.savepoint[0] ? tx.savepoint : NULL, &tx.vol,
				tx.ops, err);
}

/* Names the change's savepoint (before its first write): what undoes it alone
 * when it is refused after writing, its batch going on. */
static const char *savepoint_name(pg_txn *tx)
{
	if (!tx->savepoint[0])
		snprintf(tx->savepoint, sizeof tx->savepoint, "SAVEPOINT cof_m%d",
			 cof_pg_group_nth(tx->g));
	return tx->savepoint;
}

/* The savepoint taken on its own (a fork's write, a remove): 0 or -1. */
static int savepoint(pg_txn *tx, cof_err *err)
{
	if (tx->savepoint[0])
		return 0;
	savepoint_name(tx);
	return cof_pg_group_sync(tx->g, err) ? -1 : cof_pg_exec(tx->c, tx->savepoint, err);
}

static cof_volrow *pg_txn_volume(cof_txn *tx)
{
	return &PGT(tx)->vol;
}

/* ------------------------------------------------------------- checks */

/* A write's checks read the path's entry, then each ancestor (not a file),
 * then whether the path is a folder (cof_volume_path_free): one round trip
 * each under the volume's lock. The change's first cof_txn_get of a path in a
 * volume that is not a fork reads them all in one pipeline, and the answers
 * that say "none" (the usual ones) are kept here for the reads that follow;
 * any other answer is read again when asked for. They hold until the change
 * writes: nothing else changes the volume meanwhile (its row lock is the
 * batch's, and the batch's members run one at a time). */
#define CHECK_ANCESTORS 6
typedef struct pg_checks {
	char *path;
	int64_t old_size;             /* the path's live file's (old_file 1) */
	int old_file;
	size_t ends[CHECK_ANCESTORS]; /* the length of each ancestor read */
	int nanc;
	unsigned absent;              /* bit i: ancestor i is not a file */
	int no_children;              /* nothing lives under path + "/" */
} pg_checks;

#define SQL_LIVE_ONE "SELECT " PG_ENTRY_COLS " FROM entries WHERE vno = $1 AND path = $2" \
	" AND to_seq IS NULL"
#define SQL_LIVE_UNDER "SELECT " PG_ENTRY_COLS " FROM entries WHERE vno = $1 AND path >= $2" \
	" AND path < $3 AND to_seq IS NULL AND sha256 <> '' ORDER BY path LIMIT 1"

/* Whether a live row in `r` is a file (a whiteout is none). */
static int live_file(PGresult *r)
{
	return PQntuples(r) > 0 && !PQgetisnull(r, 0, 3) && PQgetlength(r, 0, 3) > 0;
}

/* The pipeline of the checks of `path` (its entry into *out): 1 found, 0
 * not, -1 error; tx->checks holds the answers after it. */
static int checks_read(pg_txn *tx, const char *path, cof_entry *out, cof_err *err)
{
	cof_pg_stmt s[PG_PIPE_MAX];
	cof_buf under = COF_BUF_INIT, upper = COF_BUF_INIT;
	size_t len = strlen(path);
	pg_checks *k = cof_calloc(1, sizeof *k);
	char *copies = NULL;
	int n = 1, found = -1;

	for (size_t i = 0; k && i < len && k->nanc < CHECK_ANCESTORS; i++)
		if (path[i] == '/')
			k->ends[k->nanc++] = i;
	if (!k || !(k->path = cof_strdup(path)) ||
	    !(copies = cof_malloc((len + 1) * (size_t)(k->nanc + 1))) ||
	    cof_buf_adds(&under, path) || cof_buf_add(&under, "/", 1) ||
	    cof_prefix_upper(under.data, &upper)) {
		cof_error(err, COF_EINTERNAL, "out of memory");
		goto out;
	}
	if (cof_pg_stmt_set(&s[0], SQL_LIVE_ONE, "reading a file", err, "is", tx->vol.vno, path))
		goto out;
	for (int i = 0; i < k->nanc; i++) {
		char *a = copies + (size_t)i * (len + 1);
		memcpy(a, path, k->ends[i]);
		a[k->ends[i]] = '\0';
		if (cof_pg_stmt_set(&s[n++], SQL_LIVE_ONE, "reading a file", err, "is",
				    tx->vol.vno, a))
			goto out;
	}
	if (cof_pg_stmt_set(&s[n++], SQL_LIVE_UNDER, "listing files", err, "iss", tx->vol.vno,
			    under.data, upper.data) ||
	    cof_pg_group_pipeline(tx->g, s, n, err))
		goto out;
	found = live_file(s[0].res);
	if (PQntuples(s[0].res) > 0)
		cof_pg_row_entry(s[0].res, 0, out);
	k->old_file = found;
	k->old_size = found ? out->size : 0;
	for (int i = 0; i < k->nanc; i++)
		if (!live_file(s[1 + i].res))
			k->absent |= 1u << i;
	k->no_children = PQntuples(s[n - 1].res) == 0;
	for (int i = 0; i < n; i++)
		PQclear(s[i].res);
	tx->checks = k;
	k = NULL;
out:
	if (k)
		free(k->path);
	free(k);
	free(copies);
	cof_buf_release(&under);
	cof_buf_release(&upper);
	return found;
}

static void checks_free(pg_checks *k)
{
	if (k)
		free(k->path);
	free(k);
}

static int pg_txn_get(cof_txn *t, const char *path, cof_entry *out, cof_err *err)
{
	pg_txn *tx = PGT(t);
	pg_checks *k = tx->checks;
	size_t len = strlen(path);

	if (k && tx->ops == 0)
		for (int i = 0; i < k->nanc; i++)
			if (k->ends[i] == len && (k->absent >> i & 1) && !strncmp(k->path, path, len))
				return 0;
	if (!tx->checked && !tx->vol.base_vno) {
		tx->checked = 1;
		return checks_read(tx, path, out, err);
	}
	if (cof_pg_group_sync(tx->g, err))
		return -1;
	return cof_pg_entry_get(tx->c, tx->vol.vno, path, -1, out, err);
}

static int pg_txn_list(cof_txn *t, const char *prefix, cof_entry_fn fn, void *ctx,
		    cof_err *err)
{
	pg_txn *tx = PGT(t);
	pg_checks *k = tx->checks;
	size_t len = k ? strlen(k->path) : 0;

	if (k && tx->ops == 0 && k->no_children && strlen(prefix) == len + 1 &&
	    prefix[len] == '/' && !strncmp(prefix, k->path, len))
		return 0;
	if (cof_pg_group_sync(tx->g, err))
		return -1;
	return cof_pg_entry_list_in(tx->c, tx->vol.vno, tx->vol.base_vno != 0, -1, prefix, NULL,
				    fn, ctx, err);
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

/* The old row a write closes, known without its result: its checks read it
 * and the change has written nothing since. 1 (*file, *size set) or 0. */
static int old_known(pg_txn *tx, const char *path, int *file, int64_t *size)
{
	pg_checks *k = tx->checks;

	if (!k || tx->ops || tx->savepoint[0] || strcmp(k->path, path))
		return 0;
	*file = k->old_file;
	*size = k->old_size;
	return 1;
}

/* A write to a volume that is not a fork: its statements depend on none of
 * the others' results, so they go as one pipeline (one round trip under the
 * volume's lock instead of five), after the change's savepoint when this is
 * its first write. A row this change wrote before for the path is dropped
 * (replaced, not kept as history); its first write has none to drop. When
 * the old row is known from the checks, nothing of the result is needed:
 * the write is held back to go with the batch's next statements
 * (cof_pg_group_defer), no round trip of its own. */
static int write_piped(pg_txn *tx, const char *path, const char *sha, int64_t size,
		       const char *ctype, const void *inline_data, int64_t mtime, cof_err *err)
{
	cof_pg_stmt s[6] = {{.what = NULL}};
	int n = 0, close, held, had = 0;
	int64_t old_size = 0;
	cof_entry old;

	held = old_known(tx, path, &had, &old_size);
	if (!tx->savepoint[0])
		s[n++].what = savepoint_name(tx);
	close = n;
	if (cof_pg_stmt_set(&s[n++], SQL_CLOSE_LIVE, "writing a file", err, "iiis", tx->vol.seq,
			    tx->now, tx->vol.vno, path) ||
	    (tx->ops && cof_pg_stmt_set(&s[n++], SQL_DROP_OWN, "writing a file", err, "isi",
					tx->vol.vno, path, tx->vol.seq)) ||
	    cof_pg_stmt_set(&s[n++], SQL_ENTRY_ADD, "writing a file", err, "isiissis", tx->vol.vno,
			    path, tx->vol.seq, size, sha, ctype, mtime > 0 ? mtime : tx->now,
			    tx->base.s3meta) ||
	    cof_pg_stmt_set(&s[n++], SQL_BLOB_REF, "writing a file", err, "sib", sha, size,
			    inline_data, inline_data ? size : (int64_t)0) ||
	    cof_pg_stmt_set(&s[n++], SQL_CHANGE_ADD, "recording a change", err, "iisiiisiss",
			    tx->vol.vno, tx->vol.seq, path, (int64_t)0, tx->vol.seq, size, sha,
			    tx->now, tx->base.by, tx->base.s3meta))
		return -1;
	if (held) {
		if (cof_pg_group_defer(tx->g, s, n, err))
			return -1;
	} else {
		if (cof_pg_group_pipeline(tx->g, s, n, err))
			return -1;
		had = PQntuples(s[close].res) > 0;
		if (had) {
			cof_pg_row_entry(s[close].res, 0, &old);
			had = old.sha256[0] != '\0'; /* a whiteout closed hides nothing */
			old_size = old.size;
		}
		for (int i = 0; i < n; i++)
			PQclear(s[i].res);
	}
	if (had) {
		tx->vol.files--;
		tx->vol.bytes -= old_size;
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
	if (savepoint(tx, err))
		return -1;
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
	had = savepoint(tx, err) ? -1 : close_live(tx, path, old, err);
	if (had == 0)
		cof_error(err, COF_ENOTFOUND, "file '%.200s' not found", path);
	if (had > 0 && (!tx->vol.base_vno || !whiteout(tx, path, old, err)))
		rc = record_change(tx, path, 1, old->version, old->size, old->sha256, NULL, err);
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
