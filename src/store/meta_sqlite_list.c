/*
 * meta_sqlite_list.c — listing an organization's volumes by name (meta.h),
 * on the volumes_org_name index.
 */
#include <string.h>
#include "store/meta_sqlite.h"

/* A caller's cof_vol_fn, its context and the row it is given, for vol_row. */
typedef struct {
	cof_vol_fn fn;
	void *ctx;
	cof_volrow v;
} vol_each;

/* cof_sqlite_row_fn: gives a listed volume's row to the caller's fn. */
static int vol_row(void *ctx, sqlite3_stmt *st, cof_err *err)
{
	vol_each *e = ctx;
	cof_volrow *v = &e->v;

	(void)err;
	cof_sqlite_col_copy(st, 0, v->id, sizeof v->id);
	cof_sqlite_col_copy(st, 1, v->name, sizeof v->name);
	v->seq = sqlite3_column_int64(st, 2);
	v->files = sqlite3_column_int64(st, 3);
	v->bytes = sqlite3_column_int64(st, 4);
	v->created_at = sqlite3_column_int64(st, 5);
	return e->fn(e->ctx, v) ? 1 : 0;
}

static int sq_volume_list(cof_meta *m, const char *org, const char *prefix,
			  const char *after_name, const char *after_id, int64_t limit,
			  cof_vol_fn fn, void *ctx, cof_err *err)
{
	vol_each e = { fn, ctx, { 0 } };
	cof_buf upper = COF_BUF_INIT;
	const char *hi = cof_sqlite_upper(&prefix, &upper, err);
	int rc = !hi ? -1 : cof_sqlite_read(m, "SELECT id, name, seq, files, bytes, created_at"
					    " FROM volumes WHERE org = ?1 AND hidden = 0 AND"
					    " name >= ?2 AND name < ?3 AND (name > ?4 OR"
					    " (name = ?4 AND id > ?5)) ORDER BY name, id LIMIT ?6",
					    "listing volumes", vol_row, &e, err, "sssssi", org,
					    prefix, hi, after_name ? after_name : "",
					    after_id ? after_id : "", limit);

	cof_buf_release(&upper);
	return rc < 0 ? -1 : 0;
}

/* Fills the members of the SQLite backend this file implements. */
void cof_sqlite_ops_list(cof_meta_ops *o)
{
	o->volume_list = sq_volume_list;
}
