/*
 * meta_sqlite_subject.c — subject workspaces on SQLite: which volume holds
 * the files of each (organization, agent, subject). The row of subject ""
 * (never a valid subject id) names the agent's skills volume.
 */
#include <stdio.h>
#include <string.h>
#include "store/meta_sqlite.h"

/* cof_sqlite_row_fn: column 0 of the row into ctx (char[48], a volume id). */
static int vol_one(void *ctx, sqlite3_stmt *st, cof_err *err)
{
	(void)err;
	cof_sqlite_col_copy(st, 0, ctx, 48);
	return 1;
}

static int sq_subject_get(cof_meta *m, const char *org, const char *agent,
			  const char *subject, char vol[48], cof_err *err)
{
	int rc = cof_sqlite_read(m, "SELECT vol FROM subjects WHERE org = ? AND agent = ? AND"
				 " subject = ?", "reading a subject", vol_one, vol, err, "sss", org,
				 agent, subject);

	return rc < 0 ? -1 : rc > 0;
}

static int sq_subject_add(cof_meta *m, const char *org, const char *agent,
			  const char *subject, const char *vol, cof_err *err)
{
	conn *c = cof_sqlite_writer_begin(m, err);
	int64_t n = 0;
	int rc;

	if (!c)
		return -1;
	rc = cof_sqlite_run(c, &n, "INSERT OR IGNORE INTO subjects(org, agent, subject, vol,"
			    " created_at) VALUES(?,?,?,?,?)", "recording a subject", err, "ssssi",
			    org, agent, subject, vol, cof_now());
	if (cof_sqlite_writer_end(m, rc, err))
		return -1;
	return n > 0;
}

/* A caller's cof_subject_fn and its context, for subject_row. */
typedef struct {
	cof_subject_fn fn;
	void *ctx;
} subject_each;

/* cof_sqlite_row_fn: gives a (subject, vol) row to the caller's fn. */
static int subject_row(void *ctx, sqlite3_stmt *st, cof_err *err)
{
	subject_each *e = ctx;

	(void)err;
	return e->fn(e->ctx, (const char *)sqlite3_column_text(st, 0),
		     (const char *)sqlite3_column_text(st, 1)) ? 1 : 0;
}

static int sq_subject_list(cof_meta *m, const char *org, const char *agent,
			   cof_subject_fn fn, void *ctx, cof_err *err)
{
	subject_each e = { fn, ctx };

	return cof_sqlite_read(m, "SELECT subject, vol FROM subjects WHERE org = ? AND agent = ?"
			       " ORDER BY subject", "listing subjects", subject_row, &e, err, "ss",
			       org, agent) < 0 ? -1 : 0;
}

static int sq_subject_delete_all(cof_meta *m, const char *org, const char *agent, cof_err *err)
{
	return cof_sqlite_write(m, "DELETE FROM subjects WHERE org = ? AND agent = ?",
				"deleting subjects", err, "ss", org, agent);
}

/* Fills the members of the SQLite backend this file implements. */
void cof_sqlite_ops_subject(cof_meta_ops *o)
{
	o->subject_get = sq_subject_get;
	o->subject_add = sq_subject_add;
	o->subject_list = sq_subject_list;
	o->subject_delete_all = sq_subject_delete_all;
}
