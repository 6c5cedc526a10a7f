/*
 * meta_sqlite_list.c — listing an organization's volumes by name (meta.h),
 * on the volumes_org_name index.
 */
#include <string.h>
#include "store/meta_sqlite.h"

static int sq_volume_list(cof_meta *m, const char *org, const char *prefix,
			  const char *after_name, const char *after_id, int64_t limit,
			  cof_vol_fn fn, void *ctx, cof_err *err)
{
	conn *c = cof_sqlite_reader_get(m, err);
	cof_buf upper = COF_BUF_INIT;
	sqlite3_stmt *st;
	cof_volrow v;
	int r, rc = 0;

	if (!c)
		return -1;
	st = cof_sqlite_q(c, "SELECT id, name, seq, files, bytes, created_at FROM volumes"
		       " WHERE org = ?1 AND hidden = 0 AND name >= ?2 AND name < ?3"
		       " AND (name > ?4 OR (name = ?4 AND id > ?5))"
		       " ORDER BY name, id LIMIT ?6", err);
	if (!st) {
		cof_sqlite_reader_put(m, c);
		return -1;
	}
	cof_sqlite_bind_text(st, 1, org);
	if (cof_sqlite_prefix_bounds(st, 2, 3, prefix, &upper, err)) {
		cof_buf_release(&upper);
		cof_sqlite_reader_put(m, c);
		return -1;
	}
	cof_sqlite_bind_text(st, 4, after_name ? after_name : "");
	cof_sqlite_bind_text(st, 5, after_id ? after_id : "");
	sqlite3_bind_int64(st, 6, limit);
	memset(&v, 0, sizeof v);
	while ((r = sqlite3_step(st)) == SQLITE_ROW) {
		cof_sqlite_col_copy(st, 0, v.id, sizeof v.id);
		cof_sqlite_col_copy(st, 1, v.name, sizeof v.name);
		v.seq = sqlite3_column_int64(st, 2);
		v.files = sqlite3_column_int64(st, 3);
		v.bytes = sqlite3_column_int64(st, 4);
		v.created_at = sqlite3_column_int64(st, 5);
		if (fn(ctx, &v))
			break;
	}
	if (r != SQLITE_ROW && r != SQLITE_DONE)
		rc = cof_sqlite_db_error(err, c->db, "listing volumes");
	sqlite3_reset(st);
	cof_buf_release(&upper);
	cof_sqlite_reader_put(m, c);
	return rc;
}

/* Fills the members of the SQLite backend this file implements. */
void cof_sqlite_ops_list(cof_meta_ops *o)
{
	o->volume_list = sq_volume_list;
}
