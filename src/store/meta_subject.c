/*
 * meta_subject.c — subject workspaces, written once above the SQL seam
 * (store/sql.h): which volume holds the files of each (organization, agent,
 * subject). The row of subject "" (never a valid subject id) names the
 * agent's skills volume.
 */
#include "store/meta.h"
#include "store/sql.h"

/* cof_sql_row_fn: column 0 of the row into ctx (char[48], a volume id). */
static int vol_one(void *ctx, const cof_sql_row *r, cof_err *err)
{
	(void)err;
	cof_sql_text(r, 0, ctx, 48);
	return 1;
}

int cof_meta_subject_get(cof_meta *m, const char *org, const char *agent, const char *subject,
			 char vol[48], cof_err *err)
{
	int rc = cof_sql_read(m, "SELECT vol FROM subjects WHERE org = ?1 AND agent = ?2 AND"
			      " subject = ?3", "reading a subject", vol_one, vol, err, "sss", org,
			      agent, subject);

	return rc < 0 ? -1 : rc > 0;
}

int cof_meta_subject_add(cof_meta *m, const char *org, const char *agent, const char *subject,
			 const char *vol, cof_err *err)
{
	int64_t n = 0;

	if (cof_sql_write(m, &n, "INSERT INTO subjects(org, agent, subject, vol, created_at)"
			  " VALUES(?1,?2,?3,?4,?5) ON CONFLICT DO NOTHING", "recording a subject",
			  err, "ssssi", org, agent, subject, vol, cof_now()) < 0)
		return -1;
	return n > 0;
}

/* A caller's cof_subject_fn and its context, for subject_row. */
typedef struct {
	cof_subject_fn fn;
	void *ctx;
} subject_each;

/* cof_sql_row_fn: gives a (subject, vol) row to the caller's fn. */
static int subject_row(void *ctx, const cof_sql_row *r, cof_err *err)
{
	subject_each *e = ctx;

	(void)err;
	return e->fn(e->ctx, cof_sql_str(r, 0), cof_sql_str(r, 1)) ? 1 : 0;
}

int cof_meta_subject_list(cof_meta *m, const char *org, const char *agent, cof_subject_fn fn,
			  void *ctx, cof_err *err)
{
	subject_each e = { fn, ctx };

	return cof_sql_read(m, "SELECT subject, vol FROM subjects WHERE org = ?1 AND agent = ?2"
			    " ORDER BY subject", "listing subjects", subject_row, &e, err, "ss", org,
			    agent) < 0 ? -1 : 0;
}

int cof_meta_subject_delete_all(cof_meta *m, const char *org, const char *agent, cof_err *err)
{
	return cof_sql_write(m, NULL, "DELETE FROM subjects WHERE org = ?1 AND agent = ?2",
			     "deleting subjects", err, "ss", org, agent) < 0 ? -1 : 0;
}
