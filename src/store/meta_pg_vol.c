/*
 * meta_pg_vol.c — a change's start on PostgreSQL: BEGIN and its volume's row
 * lock in one round trip (the rest of the volumes family is written once:
 * meta_volume.c).
 */
#include <stdlib.h>
#include <string.h>
#include "store/meta_pg.h"

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
