/*
 * meta_volume.h — the volumes family's primitives inside a transaction,
 * written once above the SQL seam (meta_volume.c), for the other families
 * written there: snapshots (meta_snapshot.c) and forks (meta_fork.c).
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

#endif
