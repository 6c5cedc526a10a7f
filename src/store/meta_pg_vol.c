/*
 * meta_pg_vol.c — idempotency records and volumes on PostgreSQL.
 */
#include <stdlib.h>
#include <string.h>
#include "store/meta_pg.h"

/* ---------------------------------------------------- idempotency */

/* cof_pg_row_fn: column 0 of the row, malloc'd, into ctx (a char *). */
static int text_one(void *ctx, PGresult *r, int i, cof_err *err)
{
	char **value = ctx;

	*value = cof_strdup(PQgetvalue(r, i, 0));
	return *value ? 1 : cof_error(err, COF_EINTERNAL, "out of memory");
}

static int pg_idem_get(cof_meta *m, const char *scope, const char *key, int64_t ttl,
		    char **value, cof_err *err)
{
	int rc = cof_pg_rows(m, "SELECT value FROM idem WHERE scope = $1 AND key = $2 AND"
			     " created_at > $3", "idempotency", text_one, value, err, "ssi", scope,
			     key, cof_now() - ttl);

	return rc < 0 ? -1 : rc > 0;
}

static int pg_idem_put(cof_meta *m, const char *scope, const char *key, const char *value,
		    cof_err *err)
{
	pgconn *c = cof_pg_get(m, err);
	int rc;

	if (!c)
		return -1;
	rc = cof_pg_do(c, "INSERT INTO idem(scope, key, value, created_at) VALUES($1,$2,$3,$4)"
		       " ON CONFLICT(scope, key) DO UPDATE SET value = excluded.value,"
		       " created_at = excluded.created_at", "idempotency", NULL, err, "sssi",
		       scope, key, value, cof_now());
	cof_pg_put(m, c);
	return rc;
}

/* --------------------------------------------------------------- volumes */

#define VOL_COLS "vno, id, org, name, seq, files, bytes, capacity, ceiling, created_at, " \
		 "hidden, history_from, coalesce(base_vno, 0), base_seq, depth"

static void row_volume(PGresult *r, int i, cof_volrow *v)
{
	v->vno = cof_pg_int(r, i, 0);
	cof_pg_copy(r, i, 1, v->id, sizeof v->id);
	cof_pg_copy(r, i, 2, v->org, sizeof v->org);
	cof_pg_copy(r, i, 3, v->name, sizeof v->name);
	v->seq = cof_pg_int(r, i, 4);
	v->files = cof_pg_int(r, i, 5);
	v->bytes = cof_pg_int(r, i, 6);
	v->capacity = cof_pg_int(r, i, 7);
	v->ceiling = cof_pg_int(r, i, 8);
	v->created_at = cof_pg_int(r, i, 9);
	v->hidden = (int)cof_pg_int(r, i, 10);
	v->history_from = cof_pg_int(r, i, 11);
	v->base_vno = cof_pg_int(r, i, 12);
	v->base_seq = cof_pg_int(r, i, 13);
	v->depth = (int)cof_pg_int(r, i, 14);
}

int cof_pg_volume_insert(pgconn *c, cof_volrow *v, cof_err *err)
{
	PGresult *r = cof_pg_q(c, "INSERT INTO volumes(id, org, name, seq, files, bytes,"
			       " capacity, ceiling, created_at, hidden, history_from, base_vno,"
			       " base_seq, depth) VALUES($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,"
			       "nullif($12::bigint, 0),$13,$14) RETURNING vno",
			       "creating a volume", err, "sssiiiiiiiiiii", v->id, v->org, v->name,
			       v->seq, v->files, v->bytes, v->capacity, v->ceiling,
			       v->created_at, (int64_t)v->hidden, v->history_from, v->base_vno,
			       v->base_seq, (int64_t)v->depth);
	if (!r)
		return -1;
	v->vno = cof_pg_int(r, 0, 0);
	PQclear(r);
	return 0;
}

static int pg_volume_add(cof_meta *m, cof_volrow *v, cof_err *err)
{
	pgconn *c = cof_pg_get(m, err);
	int rc;

	if (!c)
		return -1;
	rc = cof_pg_volume_insert(c, v, err);
	cof_pg_put(m, c);
	return rc;
}

/* Loads a volume by id (or by vno when id is NULL); `lock` takes its row lock
 * until the transaction ends (a change's serialization point). */
int cof_pg_volume_load(pgconn *c, int64_t vno, const char *org, const char *id, int lock,
		       cof_volrow *out, cof_err *err)
{
	PGresult *r;
	int found;

	if (id)
		r = cof_pg_q(c, "SELECT " VOL_COLS " FROM volumes WHERE id = $1", "reading a volume",
			     err, "s", id);
	else if (lock)
		r = cof_pg_q(c, "SELECT " VOL_COLS " FROM volumes WHERE vno = $1 FOR UPDATE",
			     "reading a volume", err, "i", vno);
	else
		r = cof_pg_q(c, "SELECT " VOL_COLS " FROM volumes WHERE vno = $1",
			     "reading a volume", err, "i", vno);
	if (!r)
		return -1;
	found = PQntuples(r) == 1;
	if (found)
		row_volume(r, 0, out);
	PQclear(r);
	/* Another organization's volume answers exactly like an absent one. */
	if (!found || (org && (strcmp(out->org, org) || out->hidden)))
		return cof_error(err, COF_ENOTFOUND, "volume '%.64s' not found", id ? id : "?");
	return 0;
}

int cof_pg_volume_lock_begin(pgconn *c, int64_t vno, cof_volrow *out, cof_err *err)
{
	cof_pg_stmt s[2] = {{.what = "BEGIN"}};
	int found;

	if (cof_pg_stmt_set(&s[1], "SELECT " VOL_COLS " FROM volumes WHERE vno = $1 FOR UPDATE",
			    "reading a volume", err, "i", vno) ||
	    cof_pg_pipeline(c, s, 2, err))
		return -1;
	PQclear(s[0].res);
	found = PQntuples(s[1].res) == 1;
	if (found)
		row_volume(s[1].res, 0, out);
	PQclear(s[1].res);
	return found ? 0 : cof_error(err, COF_ENOTFOUND, "volume not found");
}

static int pg_volume_get(cof_meta *m, const char *org, const char *id, cof_volrow *out,
		      cof_err *err)
{
	pgconn *c = cof_pg_get(m, err);
	int rc;

	if (!c)
		return -1;
	rc = cof_pg_volume_load(c, 0, org, id, 0, out, err);
	cof_pg_put(m, c);
	return rc;
}

/* A caller's cof_vol_fn, its context and the row it is given, for vol_row. */
typedef struct {
	cof_vol_fn fn;
	void *ctx;
	cof_volrow v;
} vol_each;

/* cof_pg_row_fn: gives a listed volume's row to the caller's fn. */
static int vol_row(void *ctx, PGresult *r, int i, cof_err *err)
{
	vol_each *e = ctx;
	cof_volrow *v = &e->v;

	(void)err;
	cof_pg_copy(r, i, 0, v->id, sizeof v->id);
	cof_pg_copy(r, i, 1, v->name, sizeof v->name);
	v->seq = cof_pg_int(r, i, 2);
	v->files = cof_pg_int(r, i, 3);
	v->bytes = cof_pg_int(r, i, 4);
	v->created_at = cof_pg_int(r, i, 5);
	return e->fn(e->ctx, v) ? 1 : 0;
}

static int pg_volume_list(cof_meta *m, const char *org, const char *prefix,
		       const char *after_name, const char *after_id, int64_t limit,
		       cof_vol_fn fn, void *ctx, cof_err *err)
{
	vol_each e = { fn, ctx, { 0 } };
	cof_buf upper = COF_BUF_INIT;
	int rc;

	cof_prefix_upper(prefix ? prefix : "", &upper);
	rc = cof_pg_rows(m, "SELECT id, name, seq, files, bytes, created_at FROM volumes"
			 " WHERE org = $1 AND hidden = 0 AND name >= $2 AND name < $3 AND"
			 " (name > $4 OR (name = $4 AND id > $5))"
			 " ORDER BY name, id LIMIT $6", "listing volumes", vol_row, &e, err,
			 "sssssi", org, prefix ? prefix : "", upper.data,
			 after_name ? after_name : "", after_id ? after_id : "", limit);
	cof_buf_release(&upper);
	return rc < 0 ? -1 : 0;
}

/* Runs each of `n` statements (string literals) with `vno` as $1 and the
 * time as $2 where they use it. */
static int run_each(pgconn *c, const char *const *sqls, size_t n, int64_t vno,
		    const char *what, cof_err *err)
{
	for (size_t i = 0; i < n; i++) {
		int timed = strstr(sqls[i], "$2") != NULL;
		if (timed ? cof_pg_do(c, sqls[i], what, NULL, err, "ii", vno, cof_now())
			  : cof_pg_do(c, sqls[i], what, NULL, err, "i", vno))
			return -1;
	}
	return 0;
}

/* Deletes one volume's rows, inside the caller's transaction. */
int cof_pg_volume_drop(pgconn *c, int64_t vno, cof_err *err)
{
	/* The grace period of the content starts now. */
	static const char *const sqls[] = {
		("UPDATE blobs SET orphan_since = $2 WHERE orphan_since IS NULL AND"
		 " sha256 IN (SELECT sha256 FROM entries WHERE vno = $1)"),
		"DELETE FROM entries WHERE vno = $1",
		"DELETE FROM changes WHERE vno = $1",
		"DELETE FROM volumes WHERE vno = $1",
	};
	int64_t base, base_seq;
	int r = cof_pg_volume_retire(c, vno, err);

	if (r)  /* forks still read its rows */
		return r < 0 ? -1 : 0;
	if ((r = cof_pg_base(c, vno, &base, &base_seq, err)) < 0 ||
	    run_each(c, sqls, sizeof sqls / sizeof *sqls, vno, "deleting a volume", err))
		return -1;
	return r ? cof_pg_base_release(c, base, base_seq, err) : 0;
}

/* Deletes a snapshot row and, for a files-snapshot, its hidden volume. */
int cof_pg_snapshot_drop(pgconn *c, const char *sid, int64_t vno, int64_t src_vno,
			 cof_err *err)
{
	if (src_vno != vno) {
		if (cof_pg_volume_drop(c, src_vno, err))
			return -1;
	} else if (cof_pg_do(c, "UPDATE entries SET closed_at = $3 WHERE vno = $1 AND"
			     " to_seq IS NOT NULL AND from_seq <= (SELECT seq FROM snapshots WHERE"
			     " id = $2) AND to_seq > (SELECT seq FROM snapshots WHERE id = $2)",
			     "deleting a snapshot", NULL, err, "isi", vno, sid, cof_now())) {
		/* History only this snapshot kept starts its grace period now. */
		return -1;
	}
	return cof_pg_do(c, "DELETE FROM snapshots WHERE id = $1", "deleting a snapshot", NULL,
			 err, "s", sid);
}

/* cof_meta_ops.snapshot_drop: cof_pg_snapshot_drop in the transaction. */
static int pg_snapshot_drop(cof_sql_tx *tx, const char *sid, int64_t vno, int64_t src_vno,
			    cof_err *err)
{
	return cof_pg_snapshot_drop(tx->c, sid, vno, src_vno, err);
}

/* Drops every hidden volume of the files-snapshots of `vno`, in four set
 * statements: the snapshot rows that name them go right after. */
static int hidden_volumes_drop(pgconn *c, int64_t vno, cof_err *err)
{
#define FORKED "(SELECT base_vno FROM volumes WHERE base_vno IS NOT NULL)"
#define HIDDEN "(SELECT src_vno FROM snapshots WHERE vno = $1 AND src_vno != vno" \
	       " AND src_vno NOT IN " FORKED ")"
	static const char *const sqls[] = {
		/* One a fork refers to is retired (cof_pg_volume_retire). */
		"UPDATE volumes SET hidden = 1, retired = 1 WHERE vno IN (SELECT src_vno FROM"
		" snapshots WHERE vno = $1 AND src_vno != vno) AND vno IN " FORKED,
		"UPDATE blobs SET orphan_since = $2 WHERE orphan_since IS NULL AND"
		" sha256 IN (SELECT sha256 FROM entries WHERE vno IN " HIDDEN ")",
		"DELETE FROM entries WHERE vno IN " HIDDEN,
		"DELETE FROM changes WHERE vno IN " HIDDEN,
		"DELETE FROM volumes WHERE vno IN " HIDDEN,
	};
#undef HIDDEN
#undef FORKED
	return run_each(c, sqls, sizeof sqls / sizeof *sqls, vno,
			"deleting the volumes of files-snapshots", err);
}

static int pg_volume_delete(cof_meta *m, int64_t vno, cof_err *err)
{
	pgconn *c = cof_pg_begin(m, NULL, err);
	cof_volrow v;
	int rc;

	if (!c)
		return -1;
	/* The row lock waits for a change in flight on another node. */
	rc = cof_pg_volume_load(c, vno, NULL, NULL, 1, &v, err);
	if (rc && err && err->code == COF_ENOTFOUND) {
		cof_err_clear(err);
		rc = 0;   /* as SQLite's DELETE of nothing */
	}
	if (!rc)
		rc = hidden_volumes_drop(c, vno, err);
	if (!rc)
		rc = cof_pg_do(c, "DELETE FROM snapshots WHERE vno = $1", "deleting snapshots",
			       NULL, err, "i", vno);
	if (!rc)
		rc = cof_pg_volume_drop(c, vno, err);
	return cof_pg_end(m, c, rc, err);
}

/* This file's members of the PostgreSQL backend's table. */
void cof_pg_ops_vol(cof_meta_ops *o)
{
	o->idem_get = pg_idem_get;
	o->idem_put = pg_idem_put;
	o->volume_add = pg_volume_add;
	o->volume_get = pg_volume_get;
	o->volume_list = pg_volume_list;
	o->volume_delete = pg_volume_delete;
	o->snapshot_drop = pg_snapshot_drop;
}
