/*
 * meta_volume.c — volumes, written once above the SQL seam (store/sql.h):
 * adding, reading (by id, through the row cache where the driver has one),
 * listing by name, deleting with its cascade (the hidden volumes of its
 * files-snapshots, its snapshots, and for forks: retiring a parent forks
 * still read, releasing a parent's rows when its last fork goes), and the
 * snapshot drop meta_snapshot.c uses.
 *
 * A delete locks the volume's row ({for_update}: on PostgreSQL it waits for a
 * change or a fork in flight on another node, and then sees the fork; SQLite's
 * writer already is the one writer). Times are the caller's clock (cof_now),
 * given as a parameter.
 */
#include <stdlib.h>
#include <string.h>
#include "store/meta_volume.h"

#define VOL_COLS "vno, id, org, name, seq, files, bytes, capacity, ceiling, created_at, " \
		 "hidden, history_from, coalesce(base_vno, 0), base_seq, depth"

static void row_volume(const cof_sql_row *r, cof_volrow *v)
{
	v->vno = cof_sql_int(r, 0);
	cof_sql_text(r, 1, v->id, sizeof v->id);
	cof_sql_text(r, 2, v->org, sizeof v->org);
	cof_sql_text(r, 3, v->name, sizeof v->name);
	v->seq = cof_sql_int(r, 4);
	v->files = cof_sql_int(r, 5);
	v->bytes = cof_sql_int(r, 6);
	v->capacity = cof_sql_int(r, 7);
	v->ceiling = cof_sql_int(r, 8);
	v->created_at = cof_sql_int(r, 9);
	v->hidden = (int)cof_sql_int(r, 10);
	v->history_from = cof_sql_int(r, 11);
	v->base_vno = cof_sql_int(r, 12);
	v->base_seq = cof_sql_int(r, 13);
	v->depth = (int)cof_sql_int(r, 14);
}

/* cof_sql_row_fn: a VOL_COLS row into ctx (a cof_volrow). */
static int vol_one(void *ctx, const cof_sql_row *r, cof_err *err)
{
	(void)err;
	row_volume(r, ctx);
	return 1;
}

/* 0 for a volume found (`found` rows) that org may see, else COF_ENOTFOUND:
 * another organization's or a hidden volume answers exactly like an absent
 * one. */
static int visible(int found, const char *org, const char *id, const cof_volrow *v,
		   cof_err *err)
{
	if (found < 0)
		return -1;
	if (!found || (org && (strcmp(v->org, org) || v->hidden)))
		return cof_error(err, COF_ENOTFOUND, "volume '%.64s' not found", id ? id : "?");
	return 0;
}

int cof_meta_vol_load(cof_sql_tx *tx, int64_t vno, int lock, cof_volrow *out, cof_err *err)
{
	int found = lock
		? cof_sql_query(tx, "SELECT " VOL_COLS " FROM volumes WHERE vno = ?1{for_update}",
				"reading a volume", vol_one, out, err, "i", vno)
		: cof_sql_query(tx, "SELECT " VOL_COLS " FROM volumes WHERE vno = ?1",
				"reading a volume", vol_one, out, err, "i", vno);

	return visible(found, NULL, NULL, out, err);
}

int cof_meta_vol_insert(cof_sql_tx *tx, cof_volrow *v, cof_err *err)
{
	int rc = cof_sql_query(tx, "INSERT INTO volumes(id, org, name, seq, files, bytes,"
			       " capacity, ceiling, created_at, hidden, history_from, base_vno,"
			       " base_seq, depth) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,"
			       "nullif(CAST(?12 AS bigint), 0),?13,?14) RETURNING vno",
			       "creating a volume", cof_sql_row_int, &v->vno, err,
			       "sssiiiiiiiiiii", v->id, v->org, v->name, v->seq, v->files,
			       v->bytes, v->capacity, v->ceiling, v->created_at,
			       (int64_t)v->hidden, v->history_from, v->base_vno, v->base_seq,
			       (int64_t)v->depth);

	if (rc == 0)
		return cof_error(err, COF_EINTERNAL, "creating a volume: no row added");
	return rc < 0 ? -1 : 0;
}

int cof_meta_volume_add(cof_meta *m, cof_volrow *v, cof_err *err)
{
	cof_sql_tx tx;

	if (cof_sql_begin(m, COF_SQL_WRITE, &tx, err) < 0)
		return -1;
	return cof_sql_end(&tx, cof_meta_vol_insert(&tx, v, err), err) < 0 ? -1 : 0;
}

int cof_meta_volume_get(cof_meta *m, const char *org, const char *id, cof_volrow *out,
			cof_err *err)
{
	cof_sql_mark mk;
	int kept = cof_sql_mark_begin(m, &mk);
	int rc;

	if (kept && cof_sql_cached_volume(&mk, org, id, out))
		return 0;
	rc = visible(cof_sql_read(m, "SELECT " VOL_COLS " FROM volumes WHERE id = ?1",
				  "reading a volume", vol_one, out, err, "s", id), org, id, out,
		     err);
	if (kept && rc == 0)
		cof_sql_keep_volume(&mk, org, id, out);
	return rc;
}

/* A caller's cof_vol_fn, its context and the row it is given, for vol_row. */
typedef struct {
	cof_vol_fn fn;
	void *ctx;
	cof_volrow v;
} vol_each;

/* cof_sql_row_fn: gives a listed volume's row to the caller's fn. */
static int vol_row(void *ctx, const cof_sql_row *r, cof_err *err)
{
	vol_each *e = ctx;
	cof_volrow *v = &e->v;

	(void)err;
	cof_sql_text(r, 0, v->id, sizeof v->id);
	cof_sql_text(r, 1, v->name, sizeof v->name);
	v->seq = cof_sql_int(r, 2);
	v->files = cof_sql_int(r, 3);
	v->bytes = cof_sql_int(r, 4);
	v->created_at = cof_sql_int(r, 5);
	return e->fn(e->ctx, v) ? 1 : 0;
}

/* On the volumes_org_name index: a name range, then (name, id) after the
 * page's last. */
int cof_meta_volume_list(cof_meta *m, const char *org, const char *prefix,
			 const char *after_name, const char *after_id, int64_t limit,
			 cof_vol_fn fn, void *ctx, cof_err *err)
{
	vol_each e = { fn, ctx, { 0 } };
	cof_buf upper = COF_BUF_INIT;
	int rc;

	prefix = prefix ? prefix : "";
	if (cof_prefix_upper(prefix, &upper))
		return cof_error(err, COF_EINTERNAL, "out of memory");
	rc = cof_sql_read(m, "SELECT id, name, seq, files, bytes, created_at FROM volumes"
			  " WHERE org = ?1 AND hidden = 0 AND name >= ?2 AND name < ?3 AND"
			  " (name > ?4 OR (name = ?4 AND id > ?5)) ORDER BY name, id LIMIT ?6",
			  "listing volumes", vol_row, &e, err, "sssssi", org, prefix, upper.data,
			  after_name ? after_name : "", after_id ? after_id : "", limit);
	cof_buf_release(&upper);
	return rc < 0 ? -1 : 0;
}

/* ------------------------------------------------- deleting and retiring */

/* Runs each of `n` statements (string literals) with `vno` as ?1 and the time
 * as ?2 where they use it. */
static int run_each(cof_sql_tx *tx, const char *const *sqls, size_t n, int64_t vno,
		    const char *what, cof_err *err)
{
	for (size_t i = 0; i < n; i++) {
		int timed = strstr(sqls[i], "?2") != NULL;
		if ((timed ? cof_sql_exec(tx, NULL, sqls[i], what, err, "ii", vno, cof_now())
			   : cof_sql_exec(tx, NULL, sqls[i], what, err, "i", vno)) < 0)
			return -1;
	}
	return 0;
}

/* cof_sql_row_fn: (base_vno, base_seq) into ctx (two int64_t). */
static int base_row(void *ctx, const cof_sql_row *r, cof_err *err)
{
	int64_t *b = ctx;

	(void)err;
	b[0] = cof_sql_int(r, 0);
	b[1] = cof_sql_int(r, 1);
	return 1;
}

/* The parent of `vno` and the seq it is read at: 1 = a fork, 0 = none. */
static int base_of(cof_sql_tx *tx, int64_t vno, int64_t *base, cof_err *err)
{
	int rc = cof_sql_query(tx, "SELECT base_vno, base_seq FROM volumes WHERE vno = ?1 AND"
			       " base_vno IS NOT NULL", "reading a fork's parent", base_row, base,
			       err, "i", vno);

	return rc < 0 ? -1 : rc > 0;
}

/* Before dropping `vno`: 1 when forks refer to it, and then it was retired
 * instead (hidden, its changes gone, its rows kept for the forks). */
static int retire(cof_sql_tx *tx, int64_t vno, cof_err *err)
{
	/* Only the rows some fork reads stay; the grace of the others' content
	 * starts now. */
#define UNSEEN "NOT EXISTS (SELECT 1 FROM volumes f WHERE f.base_vno = ?1 AND" \
	       " entries.from_seq <= f.base_seq AND (entries.to_seq IS NULL OR" \
	       " entries.to_seq > f.base_seq))"
	static const char *const sqls[] = {
		"UPDATE volumes SET hidden = 1, retired = 1 WHERE vno = ?1",
		"DELETE FROM changes WHERE vno = ?1",
		"UPDATE blobs SET orphan_since = ?2 WHERE orphan_since IS NULL AND"
		" sha256 IN (SELECT sha256 FROM entries WHERE vno = ?1 AND " UNSEEN ")",
		"DELETE FROM entries WHERE vno = ?1 AND " UNSEEN,
	};
#undef UNSEEN
	int64_t forked = 0;
	int rc = cof_sql_query(tx, "SELECT 1 FROM volumes WHERE base_vno = ?1 LIMIT 1",
			       "deleting a volume", cof_sql_row_int, &forked, err, "i", vno);

	if (rc <= 0)
		return rc < 0 ? -1 : 0;
	return run_each(tx, sqls, sizeof sqls / sizeof *sqls, vno, "deleting a volume", err)
		? -1 : 1;
}

/* After dropping a fork of `base_vno` at `base_seq`: restarts the grace of
 * history only it kept; drops a retired parent nothing refers to any more. */
static int base_release(cof_sql_tx *tx, int64_t base_vno, int64_t base_seq, cof_err *err)
{
	int64_t one = 0;
	int rc;

	if (cof_sql_exec(tx, NULL, "UPDATE entries SET closed_at = ?3 WHERE vno = ?1 AND"
			 " to_seq IS NOT NULL AND from_seq <= ?2 AND to_seq > ?2",
			 "deleting a volume", err, "iii", base_vno, base_seq, cof_now()) < 0)
		return -1;
	/* The parent's row lock: two nodes dropping its last two forks at once
	 * take turns, and the second sees the first's gone. */
	if (cof_sql_query(tx, "SELECT 1 FROM volumes WHERE vno = ?1{for_update}",
			  "deleting a volume", cof_sql_row_int, &one, err, "i", base_vno) < 0)
		return -1;
	rc = cof_sql_query(tx, "SELECT 1 FROM volumes WHERE vno = ?1 AND retired = 1 AND NOT"
			   " EXISTS (SELECT 1 FROM volumes f WHERE f.base_vno = ?1)",
			   "deleting a volume", cof_sql_row_int, &one, err, "i", base_vno);
	if (rc <= 0)
		return rc < 0 ? -1 : 0;
	return cof_meta_vol_drop(tx, base_vno, err);
}

int cof_meta_vol_drop(cof_sql_tx *tx, int64_t vno, cof_err *err)
{
	/* The grace period of the content starts now. */
	static const char *const sqls[] = {
		("UPDATE blobs SET orphan_since = ?2 WHERE orphan_since IS NULL AND"
		 " sha256 IN (SELECT sha256 FROM entries WHERE vno = ?1)"),
		"DELETE FROM entries WHERE vno = ?1",
		"DELETE FROM changes WHERE vno = ?1",
		"DELETE FROM volumes WHERE vno = ?1",
	};
	int64_t base[2];
	int r = retire(tx, vno, err);

	if (r)  /* forks still read its rows */
		return r < 0 ? -1 : 0;
	if ((r = base_of(tx, vno, base, err)) < 0 ||
	    run_each(tx, sqls, sizeof sqls / sizeof *sqls, vno, "deleting a volume", err))
		return -1;
	return r ? base_release(tx, base[0], base[1], err) : 0;
}

int cof_meta_vol_snapshot_drop(cof_sql_tx *tx, const char *sid, int64_t vno,
			       int64_t src_vno, cof_err *err)
{
	if (src_vno != vno) {
		if (cof_meta_vol_drop(tx, src_vno, err))
			return -1;
	} else if (cof_sql_exec(tx, NULL, "UPDATE entries SET closed_at = ?3 WHERE vno = ?1 AND"
				" to_seq IS NOT NULL AND from_seq <= (SELECT seq FROM snapshots"
				" WHERE id = ?2) AND to_seq > (SELECT seq FROM snapshots WHERE"
				" id = ?2)", "deleting a snapshot", err, "isi", vno, sid,
				cof_now()) < 0) {
		/* History only this snapshot kept starts its grace period now. */
		return -1;
	}
	return cof_sql_exec(tx, NULL, "DELETE FROM snapshots WHERE id = ?1",
			    "deleting a snapshot", err, "s", sid) < 0 ? -1 : 0;
}

/* Drops every hidden volume of the files-snapshots of `vno` (as
 * cof_meta_vol_drop does for one), however many there are, in five set
 * statements: the snapshot rows that name them go right after. */
static int hidden_volumes_drop(cof_sql_tx *tx, int64_t vno, cof_err *err)
{
#define FORKED "(SELECT base_vno FROM volumes WHERE base_vno IS NOT NULL)"
#define HIDDEN "(SELECT src_vno FROM snapshots WHERE vno = ?1 AND src_vno != vno" \
	       " AND src_vno NOT IN " FORKED ")"
	static const char *const sqls[] = {
		/* One a fork refers to is retired (retire above). */
		"UPDATE volumes SET hidden = 1, retired = 1 WHERE vno IN (SELECT src_vno FROM"
		" snapshots WHERE vno = ?1 AND src_vno != vno) AND vno IN " FORKED,
		"UPDATE blobs SET orphan_since = ?2 WHERE orphan_since IS NULL AND"
		" sha256 IN (SELECT sha256 FROM entries WHERE vno IN " HIDDEN ")",
		"DELETE FROM entries WHERE vno IN " HIDDEN,
		"DELETE FROM changes WHERE vno IN " HIDDEN,
		"DELETE FROM volumes WHERE vno IN " HIDDEN,
	};
#undef HIDDEN
#undef FORKED
	return run_each(tx, sqls, sizeof sqls / sizeof *sqls, vno,
			"deleting the volumes of files-snapshots", err);
}

int cof_meta_volume_delete(cof_meta *m, int64_t vno, cof_err *err)
{
	cof_sql_tx tx;
	int64_t found = 0;
	int rc;

	if (cof_sql_begin(m, COF_SQL_WRITE, &tx, err) < 0)
		return -1;
	/* The row lock waits for a change in flight on another node; a volume
	 * already gone deletes nothing, as a DELETE of nothing. */
	rc = cof_sql_query(&tx, "SELECT vno FROM volumes WHERE vno = ?1{for_update}",
			   "reading a volume", cof_sql_row_int, &found, err, "i", vno);
	if (rc >= 0)
		rc = hidden_volumes_drop(&tx, vno, err);
	if (rc >= 0)
		rc = cof_sql_exec(&tx, NULL, "DELETE FROM snapshots WHERE vno = ?1",
				  "deleting snapshots", err, "i", vno);
	if (rc >= 0)
		rc = cof_meta_vol_drop(&tx, vno, err);
	return cof_sql_end(&tx, rc < 0 ? -1 : 0, err) < 0 ? -1 : 0;
}
