/*
 * meta_pg_read.c — a fork's listing on PostgreSQL (the driver's fork_list,
 * store/sql.h); the rest of reading files is written once (meta_read.c), the
 * changes feed too (meta_changes.c).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "store/meta_pg.h"
#include "store/meta_volume.h"

/* ---------------------------------------------------------- a fork's listing */

#define LIST_PAGE 512

/* The chain as two bigint[] literals ("{v0,v1,...}", "{a0,a1,...}"). */
typedef struct {
	cof_buf vnos, ats;
	int n;
} chain_arrays;

/* cof_sql_row_fn: a level (vno, at) onto ctx (a chain_arrays). */
static int chain_row(void *ctx, const cof_sql_row *r, cof_err *err)
{
	chain_arrays *ch = ctx;
	const char *sep = ch->n++ ? "," : "{";

	if (cof_buf_addf(&ch->vnos, "%s%lld", sep, (long long)cof_sql_int(r, 0)) ||
	    cof_buf_addf(&ch->ats, "%s%lld", sep, (long long)cof_sql_int(r, 1)))
		return cof_error(err, COF_EINTERNAL, "out of memory");
	return 0;
}

/* One listing under way. */
typedef struct {
	cof_entry *e;
	char *cursor;            /* the last path seen */
	cof_entry_fn fn;
	void *ctx;
	int stop;
} fork_lister;

/* cof_sql_row_fn: a page's row to the caller's fn (a whiteout hides its path). */
static int fork_row(void *ctx, const cof_sql_row *r, cof_err *err)
{
	fork_lister *l = ctx;

	(void)err;
	cof_sql_text(r, 0, l->e->path, sizeof l->e->path);
	l->e->version = cof_sql_int(r, 1);
	l->e->size = cof_sql_int(r, 2);
	cof_sql_text(r, 3, l->e->sha256, sizeof l->e->sha256);
	cof_sql_text(r, 4, l->e->ctype, sizeof l->e->ctype);
	l->e->updated_at = cof_sql_int(r, 5);
	memcpy(l->cursor, l->e->path, strlen(l->e->path) + 1);
	if (l->e->sha256[0] && l->fn(l->ctx, l->e)) {
		l->stop = 1;
		return 1;
	}
	return 0;
}

/* Each level gives its first page after the cursor: the first page of the
 * merged paths is among them. The chain comes as arrays, so that a page is
 * planned as plainly as a volume's. */
int cof_pg_fork_list(cof_sql_tx *tx, int64_t vno, int64_t at_seq, const char *prefix,
		     const char *upper, const char *after, cof_entry_fn fn, void *ctx,
		     cof_err *err)
{
	chain_arrays ch = {COF_BUF_INIT, COF_BUF_INIT, 0};
	fork_lister l = {cof_malloc(sizeof *l.e), cof_malloc(COF_PATH_MAX + 1), fn, ctx, 0};
	int rc = l.e && l.cursor ? 0 : cof_error(err, COF_EINTERNAL, "out of memory");

	if (!rc)
		rc = cof_sql_query(tx, COF_META_CHAIN "SELECT vno, at FROM chain ORDER BY depth",
				   "listing files", chain_row, &ch, err, "ii", vno,
				   at_seq < 0 ? INT64_MAX : at_seq);
	if (rc >= 0 && (cof_buf_add(&ch.vnos, "}", 1) || cof_buf_add(&ch.ats, "}", 1)))
		rc = cof_error(err, COF_EINTERNAL, "out of memory");
	if (rc >= 0)
		snprintf(l.cursor, COF_PATH_MAX + 1, "%s", after ? after : "");
	while (rc >= 0 && !l.stop) {
		rc = cof_sql_query(tx, "SELECT DISTINCT ON (e.path) e.path, e.version, e.size,"
				   " e.sha256, e.ctype, e.updated_at FROM unnest(CAST(?1 AS bigint[]),"
				   " CAST(?2 AS bigint[])) WITH ORDINALITY c(vno, at, depth) CROSS JOIN"
				   " LATERAL (SELECT * FROM entries e WHERE e.vno = c.vno AND e.path >= ?3"
				   " AND e.path < ?4 AND e.path > ?5 AND e.from_seq <= c.at AND"
				   " (e.to_seq IS NULL OR e.to_seq > c.at) ORDER BY e.path LIMIT ?6) e"
				   " ORDER BY e.path, c.depth LIMIT ?6", "listing files", fork_row, &l,
				   err, "sssssi", ch.vnos.data, ch.ats.data, prefix, upper, l.cursor,
				   (int64_t)LIST_PAGE);
		if (rc < LIST_PAGE)
			break;
	}
	cof_buf_release(&ch.vnos);
	cof_buf_release(&ch.ats);
	free(l.cursor);
	free(l.e);
	return rc < 0 ? -1 : 0;
}
