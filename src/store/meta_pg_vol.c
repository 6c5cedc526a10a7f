/*
 * meta_pg_vol.c — a change's start on PostgreSQL: its volume's row lock, the
 * statement and its answer (sent by the batch in front of its first member's
 * first statements, meta_pg_group.c; the rest of the volumes family is written
 * once: meta_volume.c).
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
