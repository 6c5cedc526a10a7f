/*
 * meta_pg_vol.c — idempotency records on PostgreSQL, and a change's start: its
 * volume's row lock, the statement and its answer (sent by the batch in front
 * of its first member's first statements, meta_pg_group.c; the rest of the
 * volumes family is written once: meta_volume.c).
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

int cof_pg_volume_lock_stmt(cof_pg_stmt *s, int64_t vno, cof_err *err)
{
	return cof_pg_stmt_set(s, "SELECT " VOL_COLS " FROM volumes WHERE vno = $1 FOR UPDATE",
			       "reading a volume", err, "i", vno);
}

int cof_pg_volume_locked(PGresult *r, cof_volrow *out, cof_err *err)
{
	if (PQntuples(r) != 1)
		return cof_error(err, COF_ENOTFOUND, "volume not found");
	row_volume(r, 0, out);
	return 0;
}

/* This file's members of the PostgreSQL backend's table. */
void cof_pg_ops_vol(cof_meta_ops *o)
{
	o->idem_get = pg_idem_get;
	o->idem_put = pg_idem_put;
}
