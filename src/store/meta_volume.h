/*
 * meta_volume.h — the volumes family's primitives inside a transaction,
 * written once above the SQL seam (meta_volume.c), for the other families
 * written there: snapshots (meta_snapshot.c), forks (meta_fork.c) and reads
 * (meta_read.c).
 */
#ifndef COF_META_VOLUME_H
#define COF_META_VOLUME_H

#include "store/meta.h"
#include "store/sql.h"

/* The volume `vno` into *out, or COF_ENOTFOUND; `lock` takes its row lock to
 * the commit ({for_update}: a change's serialization point on PostgreSQL). */
int cof_meta_vol_load(cof_sql_tx *tx, int64_t vno, int lock, cof_volrow *out, cof_err *err);
/* Adds v's row; sets v->vno. */
int cof_meta_vol_insert(cof_sql_tx *tx, cof_volrow *v, cof_err *err);
/* Deletes one volume's rows; one forks refer to is retired instead (hidden,
 * its changes gone, the rows forks read kept), and a fork's retired parents
 * nothing refers to any more go after it, up the chain. */
int cof_meta_vol_drop(cof_sql_tx *tx, int64_t vno, cof_err *err);
/* Deletes a snapshot row and, for a files-snapshot (src_vno != vno), its
 * hidden volume; else restarts the grace of the history only it kept. */
int cof_meta_vol_snapshot_drop(cof_sql_tx *tx, const char *sid, int64_t vno,
			       int64_t src_vno, cof_err *err);

/* The chain of forks from volume ?1 read at ?2: a CTE chain(vno, at, depth),
 * depth 0 = the volume itself, each parent read at its child's base seq or
 * at ?2 when that is older (live: INT64_MAX). Forks (meta_fork.c) and reads
 * (meta_read.c) walk it. */
#define COF_META_CHAIN "WITH RECURSIVE chain(vno, at, depth) AS (SELECT CAST(?1 AS bigint)," \
	" CAST(?2 AS bigint), 0 UNION ALL SELECT v.base_vno, CASE WHEN c.at < v.base_seq" \
	" THEN c.at ELSE v.base_seq END, c.depth + 1 FROM chain c JOIN volumes v ON" \
	" v.vno = c.vno WHERE v.base_vno IS NOT NULL AND c.depth < 64) "
/* A file of volume `vno` (through its chain) and a listing, in a transaction
 * the caller holds: meta_read.c's, for cof_meta_entry_get / cof_meta_list
 * and the drivers' write paths (cof_txn_get, cof_txn_list). `fork`: 1 or 0
 * when the caller knows whether `vno` is a fork, -1 to look. */
/* An entry row's columns (path, version, size, sha256, ctype, updated_at, in
 * that order, as meta_read.c and meta_write.c select them) into *e. */
void cof_meta_entry_row(const cof_sql_row *r, cof_entry *e);
/* cof_sql_row_fn: one entry row into ctx (a cof_entry); stops the query. */
int cof_meta_entry_one(void *ctx, const cof_sql_row *r, cof_err *err);
int cof_meta_entry_get_tx(cof_sql_tx *tx, int64_t vno, const char *path, int64_t at_seq,
			  cof_entry *out, cof_err *err);
int cof_meta_list_tx(cof_sql_tx *tx, int64_t vno, int fork, int64_t at_seq, const char *prefix,
		     const char *after, cof_entry_fn fn, void *ctx, cof_err *err);

#endif
