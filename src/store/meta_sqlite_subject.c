/*
 * meta_sqlite_subject.c — subject workspaces on SQLite: which volume holds
 * the files of each (organization, agent, subject). The row of subject ""
 * (never a valid subject id) names the agent's skills volume.
 */
#include <stdio.h>
#include <string.h>
#include "store/meta_sqlite.h"

static int sq_subject_get(cof_meta *m, const char *org, const char *agent,
			  const char *subject, char vol[48], cof_err *err)
{
	conn *c = cof_sqlite_reader_get(m, err);
	sqlite3_stmt *st;
	int rc = -1;

	if (!c)
		return -1;
	if ((st = cof_sqlite_q(c, "SELECT vol FROM subjects WHERE org = ? AND agent = ? AND subject = ?",
			 err))) {
		cof_sqlite_bind_text(st, 1, org);
		cof_sqlite_bind_text(st, 2, agent);
		cof_sqlite_bind_text(st, 3, subject);
		int r = sqlite3_step(st);
		if (r == SQLITE_ROW) {
			cof_sqlite_col_copy(st, 0, vol, 48);
			rc = 1;
		} else {
			rc = r == SQLITE_DONE ? 0 : cof_sqlite_db_error(err, c->db, "reading a subject");
		}
		sqlite3_reset(st);
	}
	cof_sqlite_reader_put(m, c);
	return rc;
}

static int sq_subject_add(cof_meta *m, const char *org, const char *agent,
			  const char *subject, const char *vol, cof_err *err)
{
	conn *c = cof_sqlite_writer_begin(m, err);
	sqlite3_stmt *st;
	int rc = -1, added = 0;

	if (!c)
		return -1;
	if ((st = cof_sqlite_q(c, "INSERT OR IGNORE INTO subjects(org, agent, subject, vol, created_at)"
			 " VALUES(?,?,?,?,?)", err))) {
		cof_sqlite_bind_text(st, 1, org);
		cof_sqlite_bind_text(st, 2, agent);
		cof_sqlite_bind_text(st, 3, subject);
		cof_sqlite_bind_text(st, 4, vol);
		sqlite3_bind_int64(st, 5, cof_now());
		if (sqlite3_step(st) == SQLITE_DONE) {
			added = sqlite3_changes(c->db) > 0;
			rc = 0;
		} else {
			cof_sqlite_db_error(err, c->db, "recording a subject");
		}
		sqlite3_reset(st);
	}
	if (cof_sqlite_writer_end(m, rc, err))
		return -1;
	return added;
}

static int sq_subject_list(cof_meta *m, const char *org, const char *agent,
			   cof_subject_fn fn, void *ctx, cof_err *err)
{
	conn *c = cof_sqlite_reader_get(m, err);
	sqlite3_stmt *st;
	int r, rc = -1;

	if (!c)
		return -1;
	if ((st = cof_sqlite_q(c, "SELECT subject, vol FROM subjects WHERE org = ? AND agent = ?"
			 " ORDER BY subject", err))) {
		cof_sqlite_bind_text(st, 1, org);
		cof_sqlite_bind_text(st, 2, agent);
		while ((r = sqlite3_step(st)) == SQLITE_ROW)
			if (fn(ctx, (const char *)sqlite3_column_text(st, 0),
			       (const char *)sqlite3_column_text(st, 1)))
				break;
		rc = (r == SQLITE_ROW || r == SQLITE_DONE) ? 0
			: cof_sqlite_db_error(err, c->db, "listing subjects");
		sqlite3_reset(st);
	}
	cof_sqlite_reader_put(m, c);
	return rc;
}

static int sq_subject_delete_all(cof_meta *m, const char *org, const char *agent, cof_err *err)
{
	conn *c = cof_sqlite_writer_begin(m, err);
	sqlite3_stmt *st;
	int rc = -1;

	if (!c)
		return -1;
	if ((st = cof_sqlite_q(c, "DELETE FROM subjects WHERE org = ? AND agent = ?", err))) {
		cof_sqlite_bind_text(st, 1, org);
		cof_sqlite_bind_text(st, 2, agent);
		rc = sqlite3_step(st) == SQLITE_DONE ? 0
			: cof_sqlite_db_error(err, c->db, "deleting subjects");
		sqlite3_reset(st);
	}
	return cof_sqlite_writer_end(m, rc, err);
}

/* Fills the members of the SQLite backend this file implements. */
void cof_sqlite_ops_subject(cof_meta_ops *o)
{
	o->subject_get = sq_subject_get;
	o->subject_add = sq_subject_add;
	o->subject_list = sq_subject_list;
	o->subject_delete_all = sq_subject_delete_all;
}
