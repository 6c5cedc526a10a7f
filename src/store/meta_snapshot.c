/*
 * meta_snapshot.c — snapshot rows, written once above the SQL seam
 * (store/sql.h): one write transaction on a volume's snapshots and the
 * small primitives used in it. The rules (the pinned limit, retention of
 * unpinned ones, their messages) are the volume layer's (volume/snapshot.c).
 *
 * A transaction locks the volume's row ({for_update}: PostgreSQL's row lock,
 * taken by every change to the volume; SQLite's writer already is the one
 * writer), so the counts a rule reads hold until its commit. Dropping a
 * snapshot may drop a files-snapshot's hidden volume (meta_volume.c).
 */
#include <stdlib.h>
#include <string.h>
#include "store/meta.h"
#include "store/meta_volume.h"

#define SNAP_COLS "id, vno, src_vno, seq, pinned, labels, files, bytes, created_at"

struct cof_snaptx {
	cof_sql_tx sql;
	int64_t vno;
};

static void row_snapshot(const cof_sql_row *r, cof_snaprow *s)
{
	cof_sql_text(r, 0, s->id, sizeof s->id);
	s->vno = cof_sql_int(r, 1);
	s->src_vno = cof_sql_int(r, 2);
	s->seq = cof_sql_int(r, 3);
	s->pinned = (int)cof_sql_int(r, 4);
	cof_sql_text(r, 5, s->labels, sizeof s->labels);
	s->files = cof_sql_int(r, 6);
	s->bytes = cof_sql_int(r, 7);
	s->created_at = cof_sql_int(r, 8);
}

/* cof_sql_row_fn: a SNAP_COLS row into ctx (a cof_snaprow). */
static int snap_one(void *ctx, const cof_sql_row *r, cof_err *err)
{
	(void)err;
	row_snapshot(r, ctx);
	return 1;
}

/* A caller's cof_snap_fn, its context and the row it is given (on the heap:
 * labels are large), for snap_row. */
typedef struct {
	cof_snap_fn fn;
	void *ctx;
	cof_snaprow *s;
} snap_each;

/* cof_sql_row_fn: gives a SNAP_COLS row to the caller's fn. */
static int snap_row(void *ctx, const cof_sql_row *r, cof_err *err)
{
	snap_each *e = ctx;

	(void)err;
	row_snapshot(r, e->s);
	return e->fn(e->ctx, e->s) ? 1 : 0;
}

/* 0, or COF_ENOTFOUND when sid is not a snapshot of vno. */
static int not_found(int found, const char *sid, cof_err *err)
{
	if (found < 0)
		return -1;
	return found ? 0 : cof_error(err, COF_ENOTFOUND, "snapshot '%.64s' not found", sid);
}

int cof_meta_snapshot_get(cof_meta *m, int64_t vno, const char *sid, cof_snaprow *out,
			  cof_err *err)
{
	return not_found(cof_sql_read(m, "SELECT " SNAP_COLS " FROM snapshots WHERE id = ?1 AND"
				      " vno = ?2", "reading a snapshot", snap_one, out, err, "si",
				      sid, vno), sid, err);
}

int cof_meta_snapshot_list(cof_meta *m, int64_t vno, cof_snap_fn fn, void *ctx,
			   cof_err *err)
{
	snap_each e = { fn, ctx, cof_malloc(sizeof *e.s) };
	int rc;

	if (!e.s)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	rc = cof_sql_read(m, "SELECT " SNAP_COLS " FROM snapshots WHERE vno = ?1 ORDER BY ord",
			  "listing snapshots", snap_row, &e, err, "i", vno);
	free(e.s);
	return rc < 0 ? -1 : 0;
}

int cof_meta_snapshot_change(cof_meta *m, int64_t vno, cof_snaptx_fn fn, void *ctx,
			     cof_err *err)
{
	cof_snaptx tx = { .vno = vno };
	int64_t found = 0;
	int rc;

	if (cof_sql_begin(m, COF_SQL_WRITE, &tx.sql, err) < 0)
		return -1;
	rc = cof_sql_query(&tx.sql, "SELECT vno FROM volumes WHERE vno = ?1{for_update}",
			   "locking a volume", cof_sql_row_int, &found, err, "i", vno);
	if (rc == 0)
		rc = cof_error(err, COF_ENOTFOUND, "volume not found");
	if (rc > 0)
		rc = fn(&tx, ctx, err);
	return cof_sql_end(&tx.sql, rc < 0 ? -1 : 0, err) < 0 ? -1 : 0;
}

int cof_meta_snapshot_count(cof_snaptx *tx, int pinned, int64_t *n, cof_err *err)
{
	*n = 0;
	return cof_sql_query(&tx->sql, "SELECT count(*) FROM snapshots WHERE vno = ?1 AND"
			     " pinned = ?2", "counting snapshots", cof_sql_row_int, n, err, "ii",
			     tx->vno, (int64_t)pinned) < 0 ? -1 : 0;
}

int cof_meta_snapshot_oldest(cof_snaptx *tx, cof_snaprow *out, cof_err *err)
{
	int rc = cof_sql_query(&tx->sql, "SELECT " SNAP_COLS " FROM snapshots WHERE vno = ?1 AND"
			       " pinned = 0 ORDER BY ord LIMIT 1", "retaining snapshots",
			       snap_one, out, err, "i", tx->vno);
	return rc < 0 ? -1 : rc > 0;
}

int cof_meta_snapshot_load(cof_snaptx *tx, const char *sid, cof_snaprow *out, cof_err *err)
{
	return not_found(cof_sql_query(&tx->sql, "SELECT " SNAP_COLS " FROM snapshots WHERE"
				       " id = ?1 AND vno = ?2", "reading a snapshot", snap_one,
				       out, err, "si", sid, tx->vno), sid, err);
}

/* ord orders a volume's snapshots as they were added (the volume's row is
 * locked: no other writer numbers them meanwhile). */
int cof_meta_snapshot_insert(cof_snaptx *tx, const cof_snaprow *s, cof_err *err)
{
	if (s->vno != tx->vno)
		return cof_error(err, COF_EINTERNAL, "a snapshot added under another volume");
	return cof_sql_exec(&tx->sql, NULL, "INSERT INTO snapshots(" SNAP_COLS ", ord)"
			    " VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9, (SELECT coalesce(max(ord), 0) + 1"
			    " FROM snapshots WHERE vno = ?2))", "adding a snapshot", err,
			    "siiiisiii", s->id, s->vno, s->src_vno, s->seq, (int64_t)s->pinned,
			    s->labels, s->files, s->bytes, s->created_at) < 0 ? -1 : 0;
}

int cof_meta_snapshot_set(cof_snaptx *tx, const char *sid, int pinned, const char *labels,
			  cof_err *err)
{
	return cof_sql_exec(&tx->sql, NULL, "UPDATE snapshots SET pinned = ?1, labels = ?2 WHERE"
			    " id = ?3 AND vno = ?4", "updating a snapshot", err, "issi",
			    (int64_t)pinned, labels, sid, tx->vno) < 0 ? -1 : 0;
}

int cof_meta_snapshot_drop(cof_snaptx *tx, const cof_snaprow *s, cof_err *err)
{
	return cof_meta_vol_snapshot_drop(&tx->sql, s->id, tx->vno, s->src_vno, err);
}

/* cof_snaptx_fn: drops the snapshot named by ctx. */
static int delete_one(cof_snaptx *tx, void *ctx, cof_err *err)
{
	cof_snaprow *s = cof_malloc(sizeof *s);
	int rc;

	if (!s)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	rc = cof_meta_snapshot_load(tx, ctx, s, err);
	if (!rc)
		rc = cof_meta_snapshot_drop(tx, s, err);
	free(s);
	return rc;
}

int cof_meta_snapshot_delete(cof_meta *m, int64_t vno, const char *sid, cof_err *err)
{
	return cof_meta_snapshot_change(m, vno, delete_one, (void *)sid, err);
}
