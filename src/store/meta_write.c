/*
 * meta_write.c — the write path, written once above the SQL seam (sql.h): a
 * change to one volume (cof_meta_change) and what its callback does inside
 * it (cof_txn_volume, cof_txn_get, cof_txn_list, cof_txn_write, cof_txn_remove).
 *
 * A change is a member of its driver's group commit (sql.h change_begin /
 * change_end): SQLite's batch under the one writer, each change under a
 * savepoint of its own (meta_sqlite_commit.c); PostgreSQL's batch of one
 * volume's changes on this node, under the volume's row lock, a savepoint
 * taken before the change's first write (meta_pg_group.c). Either way a
 * refused change rolls back alone, seqs stay dense and in order (each change
 * takes the next seq of the volume as the batch left it), and nothing is
 * acknowledged before the COMMIT that holds it.
 *
 * On PostgreSQL every statement costs a round trip, so the statements whose
 * rows the change does not need go through cof_sql_send: SQLite runs them at
 * once, PostgreSQL queues them into the batch's pipeline, sent with its next
 * statement that needs rows or with the COMMIT. The row lock is held from the
 * volume's load ({for_update}) to COMMIT and READ COMMITTED gives each later
 * statement a fresh snapshot, so the reads of a change (the conditions the
 * volume layer checks) see the last committed change of every node and the
 * seq it writes is one past it: racing conditional writes on different nodes
 * have one winner.
 */
#include <stdlib.h>
#include <string.h>
#include "store/meta_volume.h"
#include "store/sql.h"
#include "util/metrics.h"

#define ENTRY_COLS "path, version, size, sha256, ctype, updated_at"

/* A write's checks read the path's entry, then each ancestor (not a file),
 * then whether the path is a folder (cof_volume_path_free): a statement each
 * under the volume's lock. Where a statement costs a round trip, the
 * change's first cof_txn_get of a path in a volume that is not a fork reads
 * them all in one statement, and the answers that say "none" (the usual
 * ones) are kept here for the reads that follow; any other answer is read
 * again when asked for. They hold until the change writes: nothing else
 * changes the volume meanwhile (its row lock is the batch's, and the
 * batch's members run one at a time). */
#define CHECK_ANCESTORS 6
typedef struct checks {
	char *path;                   /* in mem, with the ancestors, under and upper */
	char *mem;                    /* the block they are cut in (one malloc) */
	size_t len;
	int64_t old_size;             /* the path's live file's (old_file 1) */
	int old_file;
	size_t ends[CHECK_ANCESTORS]; /* the length of each ancestor read */
	int nanc;
	unsigned absent;              /* bit i: ancestor i is not a file */
	int no_children;              /* nothing lives under path + "/" */
	cof_entry *out;               /* the path's row, while reading */
	const char *under, *upper;
} checks;

/* The change, on cof_meta_change's stack: what a cof_txn is. */
typedef struct wtxn {
	cof_txn base;                 /* first (meta.h) */
	cof_sql_tx sql;
	cof_volrow vol;               /* the volume as it will be after the change so far */
	int ops;                      /* rows of changes written */
	int checked;                  /* the checks were read (or not to be) */
	int64_t now;
	checks *checks;               /* &chk once read */
	checks chk;
} wtxn;

#define WT(tx) ((wtxn *)(void *)(tx))

/* The live rows of a path and its ancestors (?2..?8, NULL when fewer), then
 * the first live file under the path (the range [?9, ?10)): a branch each,
 * so that each is one lookup of the live rows' index (a list `path IN (...)`
 * was planned as a filter over every live row of the volume on PostgreSQL). */
#define CHECK_ONE(n) "SELECT " ENTRY_COLS " FROM entries WHERE vno = ?1 AND path = ?" #n \
	" AND to_seq IS NULL UNION ALL "
static const char SQL_CHECKS[] =
	CHECK_ONE(2) CHECK_ONE(3) CHECK_ONE(4) CHECK_ONE(5) CHECK_ONE(6) CHECK_ONE(7) CHECK_ONE(8)
	"SELECT * FROM (SELECT " ENTRY_COLS " FROM entries WHERE vno = ?1 AND path >= ?9 AND"
	" path < ?10 AND to_seq IS NULL AND sha256 <> '' ORDER BY path LIMIT 1) AS u";
/* Closes the live row of a path at this change's seq: with the row when the
 * change needs it, without when its checks told it already. */
static const char SQL_CLOSE[] = "UPDATE{or_fail} entries SET to_seq = ?1, closed_at = ?2"
	" WHERE vno = ?3 AND path = ?4 AND to_seq IS NULL";
static const char SQL_CLOSE_ROW[] = "UPDATE entries SET to_seq = ?1, closed_at = ?2 WHERE"
	" vno = ?3 AND path = ?4 AND to_seq IS NULL RETURNING " ENTRY_COLS;
/* SQLite's way of SQL_CLOSE_ROW: the row read, then closed. A RETURNING
 * statement keeps a statement journal (OR FAIL or not), which SQLite walks
 * from its start as the statement ends: 16,000 removes in one change took
 * 7.8 s, 2.5 s with {or_fail}, 1.0-1.6 s this way. In process the read
 * costs no round trip; PostgreSQL keeps the one statement. */
static const char SQL_LIVE_ROW[] = "SELECT " ENTRY_COLS " FROM entries WHERE vno = ?1 AND"
	" path = ?2 AND to_seq IS NULL";
/* The row of the path this same change wrote: replaced, not kept as history. */
static const char SQL_DROP_OWN[] = "DELETE FROM entries WHERE vno = ?1 AND path = ?2 AND"
	" from_seq = ?3";
static const char SQL_ENTRY_ADD[] = "INSERT{or_fail} INTO entries(vno, path, from_seq,"
	" to_seq, version, size, sha256, ctype, updated_at, s3meta)"
	" VALUES(?1, ?2, ?3, NULL, ?3, ?4, ?5, ?6, ?7, ?8)";
static const char SQL_WHITEOUT[] = "INSERT{or_fail} INTO entries(vno, path, from_seq,"
	" to_seq, version, size, sha256, ctype, updated_at)"
	" VALUES(?1, ?2, ?3, NULL, ?4, 0, '', '', ?5)";
/* The content's row (inline content as a blob: it need not be text); the
 * row naming it now protects it. Where the driver keeps claims (meta_gc.c),
 * the pending mark of the write that stored it ends, and a collector's claim. */
static const char SQL_BLOB_REF[] = "INSERT{or_fail} INTO blobs(sha256, size, orphan_since, data)"
	" VALUES(?1, ?2, NULL, ?3) ON CONFLICT(sha256) DO UPDATE SET orphan_since = NULL,"
	" data = coalesce(blobs.data, excluded.data)";
static const char SQL_BLOB_REF_CLAIMS[] = "INSERT{or_fail} INTO blobs(sha256, size,"
	" orphan_since, data) VALUES(?1, ?2, NULL, ?3) ON CONFLICT(sha256) DO UPDATE SET"
	" orphan_since = NULL, claimed_at = NULL, pending_at = NULL,"
	" data = coalesce(blobs.data, excluded.data)";
static const char SQL_CHANGE_ADD[] = "INSERT{or_fail} INTO changes(vno, seq, path, removed,"
	" version, size, sha256, at, who, s3meta) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"
	" ON CONFLICT(vno, seq, path) DO UPDATE SET removed = excluded.removed, version ="
	" excluded.version, size = excluded.size, sha256 = excluded.sha256, at = excluded.at,"
	" who = excluded.who, s3meta = excluded.s3meta";
static const char SQL_VOLUME_SET[] = "UPDATE{or_fail} volumes SET seq = ?1, files = ?2,"
	" bytes = ?3, capacity = ?4 WHERE vno = ?5";

/* ------------------------------------------------------------- checks */

static void checks_free(checks *k)
{
	if (k)
		free(k->mem);
}

/* A row of SQL_CHECKS: the path's (into k->out), an ancestor's, or the first
 * one under the path. */
static int checks_row(void *ctx, const cof_sql_row *r, cof_err *err)
{
	checks *k = ctx;
	size_t len;
	const char *p = r->d->text(r, 0, &len);
	int file = !cof_sql_isnull(r, 3) && cof_sql_str(r, 3)[0];

	(void)err;
	if (len == k->len && !memcmp(p, k->path, len)) {
		cof_meta_entry_row(r, k->out);
		k->old_file = file;
		k->old_size = file ? k->out->size : 0;
		return 0;
	}
	for (int i = 0; i < k->nanc; i++)
		if (len == k->ends[i] && !memcmp(p, k->path, len)) {
			if (file)
				k->absent &= ~(1u << i);
			return 0;
		}
	if (len > k->len)   /* a file under the path */
		k->no_children = 0;
	return 0;
}

/* The checks of `path` in one statement (its entry into *out): 1 found, 0
 * not, -1 error; tx->checks holds the answers after it. Its texts (the path,
 * each ancestor, the range under it) are cut in one block. */
static int checks_read(wtxn *tx, const char *path, cof_entry *out, cof_err *err)
{
	checks *k = &tx->chk;
	char *anc[CHECK_ANCESTORS] = {0}, *p;
	size_t need;

	memset(k, 0, sizeof *k);
	k->len = strlen(path);
	need = 3 * (k->len + 2);      /* the path, under and upper */
	for (size_t i = 0; i < k->len && k->nanc < CHECK_ANCESTORS; i++)
		if (path[i] == '/') {
			k->ends[k->nanc++] = i;
			need += i + 1;
		}
	if (!(k->mem = p = cof_malloc(need)))
		return cof_error(err, COF_EINTERNAL, "out of memory");
	k->path = p;
	memcpy(p, path, k->len + 1);
	p += k->len + 1;
	for (int i = 0; i < k->nanc; i++) {
		anc[i] = p;
		memcpy(p, path, k->ends[i]);
		p[k->ends[i]] = '\0';
		p += k->ends[i] + 1;
	}
	/* [path "/", path "0"): what lives under the path ('0' follows '/'; as
	 * cof_prefix_upper says, text that is not UTF-8 has no upper bound but
	 * itself: an empty range) */
	k->under = p;
	memcpy(p, path, k->len);
	memcpy(p + k->len, "/", 2);
	p += k->len + 2;
	k->upper = p;
	memcpy(p, k->under, k->len + 2);
	if (cof_utf8_valid(path, k->len))
		p[k->len] = '0';
	k->absent = (1u << k->nanc) - 1;
	k->no_children = 1;
	k->out = out;
	memset(out, 0, sizeof *out);
	if (cof_sql_query(&tx->sql, SQL_CHECKS, "reading a file", checks_row, k, err,
			  "isssssssss", tx->vol.vno, path, anc[0], anc[1], anc[2], anc[3], anc[4],
			  anc[5], k->under, k->upper) < 0) {
		checks_free(k);
		k->mem = NULL;
		return -1;
	}
	k->out = NULL;
	tx->checks = k;
	return k->old_file;
}

/* The old row a write closes, known without the statement's row: its checks
 * read it and the change has written nothing since. 1 (*file, *size) or 0. */
static int old_known(wtxn *tx, const char *path, int *file, int64_t *size)
{
	checks *k = tx->checks;

	if (!k || tx->ops || strcmp(k->path, path))
		return 0;
	*file = k->old_file;
	*size = k->old_size;
	return 1;
}

/* ------------------------------------------------------------- the change */

cof_volrow *cof_txn_volume(cof_txn *tx)
{
	return &WT(tx)->vol;
}

int cof_txn_get(cof_txn *t, const char *path, cof_entry *out, cof_err *err)
{
	wtxn *tx = WT(t);
	checks *k = tx->checks;
	size_t len = strlen(path);

	if (k && tx->ops == 0)
		for (int i = 0; i < k->nanc; i++)
			if (k->ends[i] == len && (k->absent >> i & 1) && !strncmp(k->path, path, len))
				return 0;
	if (!tx->checked && !tx->vol.base_vno && !tx->sql.d->local) {
		tx->checked = 1;
		return checks_read(tx, path, out, err);
	}
	return cof_meta_entry_get_tx(&tx->sql, tx->vol.vno, path, -1, out, err);
}

int cof_txn_list(cof_txn *t, const char *prefix, cof_entry_fn fn, void *ctx, cof_err *err)
{
	wtxn *tx = WT(t);
	checks *k = tx->checks;

	if (k && tx->ops == 0 && k->no_children && strlen(prefix) == k->len + 1 &&
	    prefix[k->len] == '/' && !strncmp(prefix, k->path, k->len))
		return 0;
	return cof_meta_list_tx(&tx->sql, tx->vol.vno, tx->vol.base_vno != 0, -1, prefix, NULL,
				fn, ctx, err);
}

/* Closes the live row of `path` (if any) at this change's seq, returning it
 * into *old: 1 closed a file, 0 none, -1 error. In a fork the closed row may
 * be a whiteout (the file was removed: none), or there is none of its own and
 * the parent's row is the live one (nothing of the fork's own to close). */
static int close_live(wtxn *tx, const char *path, cof_entry *old, cof_err *err)
{
	int had;

	if (tx->sql.d->local) {
		had = cof_sql_query(&tx->sql, SQL_LIVE_ROW, "writing a file", cof_meta_entry_one,
				    old, err, "is", tx->vol.vno, path);
		if (had > 0 && cof_sql_exec(&tx->sql, NULL, SQL_CLOSE, "writing a file", err, "iiis",
					    tx->vol.seq, tx->now, tx->vol.vno, path) < 0)
			had = -1;
	} else {
		had = cof_sql_query(&tx->sql, SQL_CLOSE_ROW, "writing a file", cof_meta_entry_one,
				    old, err, "iiis", tx->vol.seq, tx->now, tx->vol.vno, path);
	}
	if (had < 0)
		return had;
	if (had && !old->sha256[0])
		had = 0;
	else if (!had && tx->vol.base_vno &&
		 (had = cof_meta_entry_get_tx(&tx->sql, tx->vol.vno, path, -1, old, err)) < 0)
		return had;
	if (had) {
		tx->vol.files--;
		tx->vol.bytes -= old->size;
	}
	return had;
}

static int record_change(wtxn *tx, const char *path, int removed, int64_t version,
			 int64_t size, const char *sha, const char *s3meta, cof_err *err)
{
	int rc = cof_sql_send(&tx->sql, SQL_CHANGE_ADD, "recording a change", err, "iisiiisiss",
			      tx->vol.vno, tx->vol.seq, path, (int64_t)removed, version, size,
			      sha, tx->now, tx->base.by, s3meta);

	if (rc < 0)
		return rc;
	tx->ops++;
	return 0;
}

/* A write's rows: none of them is needed, so on PostgreSQL they go with the
 * batch's next statement. When its checks told what the old row is, the
 * close is sent the same way: no round trip of the write's own. */
static int write_rows(wtxn *tx, const char *path, const char *sha, int64_t size,
		      const char *ctype, const void *inline_data, int64_t mtime, cof_err *err)
{
	cof_sql_tx *q = &tx->sql;
	int file = 0, rc;
	int64_t old_size = 0;

	if (old_known(tx, path, &file, &old_size)) {
		if ((rc = cof_sql_send(q, SQL_CLOSE, "writing a file", err, "iiis", tx->vol.seq,
				       tx->now, tx->vol.vno, path)) < 0)
			return rc;
		if (file) {
			tx->vol.files--;
			tx->vol.bytes -= old_size;
		}
	} else {
		cof_entry *old = cof_malloc(sizeof *old);
		if (!old)
			return cof_error(err, COF_EINTERNAL, "out of memory");
		rc = close_live(tx, path, old, err);
		free(old);
		if (rc < 0)
			return rc;
	}
	/* its first write has no row of its own to drop */
	if ((tx->ops && (rc = cof_sql_send(q, SQL_DROP_OWN, "writing a file", err, "isi",
					   tx->vol.vno, path, tx->vol.seq)) < 0) ||
	    (rc = cof_sql_send(q, SQL_ENTRY_ADD, "writing a file", err, "isiissis", tx->vol.vno,
			       path, tx->vol.seq, size, sha, ctype, mtime > 0 ? mtime : tx->now,
			       tx->base.s3meta)) < 0 ||
	    (rc = cof_sql_send(q, q->d->claims ? SQL_BLOB_REF_CLAIMS : SQL_BLOB_REF,
			       "writing a file", err, "sib", sha, size, inline_data,
			       inline_data ? size : (int64_t)0)) < 0)
		return rc;
	tx->vol.files++;
	tx->vol.bytes += size;
	return record_change(tx, path, 0, tx->vol.seq, size, sha, tx->base.s3meta, err);
}

static int txn_write(cof_txn *t, const char *path, const char *sha256, int64_t size,
		     const char *ctype, const void *inline_data, int64_t mtime, cof_err *err)
{
	int rc = write_rows(WT(t), path, sha256, size, ctype, inline_data, mtime, err);

	return rc < 0 ? -1 : 0;
}

int cof_txn_write(cof_txn *tx, const char *path, const char *sha256, int64_t size,
		  const char *ctype, const void *inline_data, cof_err *err)
{
	return txn_write(tx, path, sha256, size, ctype, inline_data, 0, err);
}

int cof_txn_write_at(cof_txn *tx, const char *path, const char *sha256, int64_t size,
		     const char *ctype, const void *inline_data, int64_t mtime, cof_err *err)
{
	return txn_write(tx, path, sha256, size, ctype, inline_data, mtime, err);
}

int cof_txn_write_s3(cof_txn *tx, const char *path, const char *sha256, int64_t size,
		     const char *ctype, const void *inline_data, const char *s3meta,
		     cof_err *err)
{
	int rc;

	tx->s3meta = s3meta;
	rc = txn_write(tx, path, sha256, size, ctype, inline_data, 0, err);
	tx->s3meta = NULL;
	return rc;
}

/* A fork's remove leaves a whiteout row (sha256 ""), live from this change:
 * it hides the parent's row of the path (docs/design.md, "Forks"). */
static int remove_rows(wtxn *tx, const char *path, cof_err *err)
{
	cof_entry *old = cof_malloc(sizeof *old);
	int had, rc = -1;

	if (!old)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	if ((had = close_live(tx, path, old, err)) < 0)
		goto out;
	if (!had) {
		cof_error(err, COF_ENOTFOUND, "file '%.200s' not found", path);
		goto out;
	}
	if (tx->vol.base_vno &&
	    (cof_sql_send(&tx->sql, SQL_DROP_OWN, "removing a file", err, "isi", tx->vol.vno,
			  path, tx->vol.seq) < 0 ||
	     cof_sql_send(&tx->sql, SQL_WHITEOUT, "removing a file", err, "isiii", tx->vol.vno,
			  path, tx->vol.seq, old->version, tx->now) < 0))
		goto out;
	rc = record_change(tx, path, 1, old->version, old->size, old->sha256, NULL, err);
out:
	free(old);
	return rc < 0 ? -1 : 0;
}

int cof_txn_remove(cof_txn *tx, const char *path, cof_err *err)
{
	return remove_rows(WT(tx), path, err);
}

/* The change: the driver's group commit around the volume's load, fn and the
 * volume's row. */
static int change_run(cof_meta *m, int64_t vno, size_t nwrites, cof_txn_fn fn, void *ctx,
		      int64_t *seq, cof_err *err)
{
	wtxn tx = {.base.m = m, .now = cof_now()};
	const cof_volrow *kept = NULL;
	int rc;

	tx.sql.m = m;
	tx.sql.d = m->sql;
	tx.sql.mode = COF_SQL_WRITE_OF(nwrites);
	if (m->sql->change_begin(&tx.sql, vno, &kept, err) < 0)
		return -1;
	/* the batch's earlier members left the volume as kept; the first loads
	 * it and takes its row lock */
	if (kept) {
		tx.vol = *kept;
		rc = 0;
	} else {
		rc = cof_meta_vol_load(&tx.sql, vno, 1, &tx.vol, err) < 0 ? -1 : 0;
	}
	if (!rc) {
		tx.vol.seq++;
		rc = fn(&tx.base, ctx, err);
	}
	if (!rc && tx.ops &&
	    cof_sql_send_last(&tx.sql, SQL_VOLUME_SET, "updating the volume", err, "iiiii",
			 tx.vol.seq, tx.vol.files, tx.vol.bytes, tx.vol.capacity, vno) < 0)
		rc = -1;
	checks_free(tx.checks);
	if (!rc)   /* nothing to store: the seq the volume is at */
		*seq = tx.ops ? tx.vol.seq : tx.vol.seq - 1;
	return m->sql->change_end(&tx.sql, rc, tx.ops > 0, &tx.vol, err);
}

/* Every change is counted and timed for /metrics: commits, failures, and the
 * time from begin to durable (coffer_store_commit_seconds). */
int cof_meta_change_many(cof_meta *m, int64_t vno, size_t nwrites, cof_txn_fn fn, void *ctx,
			 int64_t *seq, cof_err *err)
{
	int64_t t0 = cof_mono_us();
	int rc = change_run(m, vno, nwrites, fn, ctx, seq, err);

	cof_metric_add(rc ? COF_M_STORE_COMMIT_ERRORS : COF_M_STORE_COMMITS, 1);
	if (rc == 0)
		cof_metric_observe(COF_H_COMMIT, cof_mono_us() - t0);
	return rc;
}

int cof_meta_change(cof_meta *m, int64_t vno, cof_txn_fn fn, void *ctx, int64_t *seq,
		    cof_err *err)
{
	return cof_meta_change_many(m, vno, 0, fn, ctx, seq, err);
}
