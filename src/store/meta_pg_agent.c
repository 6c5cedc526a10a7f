/*
 * meta_pg_agent.c — agents, what each has seen, runs, pins and subject
 * workspaces on PostgreSQL.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "store/meta_pg.h"

static int pg_agent_put(cof_meta *m, const cof_agentrow *a, cof_err *err)
{
	return cof_pg_one(m, "INSERT INTO agents(org, id, workspace, settings, created_at)"
		   " VALUES($1,$2,$3,$4,$5) ON CONFLICT(org, id) DO UPDATE SET workspace ="
		   " excluded.workspace, settings = excluded.settings, created_at ="
		   " excluded.created_at", "saving an agent", NULL, err, "ssssi", a->org, a->id,
		   a->workspace, a->settings, a->created_at);
}

/* cof_pg_row_fn: a (workspace, settings, created_at) row into ctx (a
 * cof_agentrow), its settings copied. */
static int agent_one(void *ctx, PGresult *r, int i, cof_err *err)
{
	cof_agentrow *out = ctx;

	cof_pg_copy(r, i, 0, out->workspace, sizeof out->workspace);
	out->settings = cof_strdup(PQgetvalue(r, i, 1));
	out->created_at = cof_pg_int(r, i, 2);
	return out->settings ? 1 : cof_error(err, COF_EINTERNAL, "out of memory");
}

static int pg_agent_get(cof_meta *m, const char *org, const char *id, cof_agentrow *out,
		     cof_err *err)
{
	memset(out, 0, sizeof *out);
	int rc = cof_pg_rows(m, "SELECT workspace, settings, created_at FROM agents WHERE"
			     " org = $1 AND id = $2", "reading an agent", agent_one, out, err,
			     "ss", org, id);
	if (rc < 0)
		return -1;
	if (rc == 0)
		return cof_error(err, COF_ENOTFOUND, "agent '%.100s' not found", id);
	snprintf(out->org, sizeof out->org, "%s", org);
	snprintf(out->id, sizeof out->id, "%s", id);
	return 0;
}

static int pg_agent_delete(cof_meta *m, const char *org, const char *id, cof_err *err)
{
	static const char *const sqls[] = {
		"DELETE FROM run_items WHERE org = $1 AND agent = $2",
		"DELETE FROM pins WHERE org = $1 AND agent = $2",
		"DELETE FROM seen WHERE org = $1 AND agent = $2",
		"DELETE FROM events WHERE stream = 'agent:' || $1 || ':' || $2",
		("DELETE FROM state WHERE kind = 'agentchg' AND org = $1 AND"
		 " body::jsonb->>'agent' = $2"),
		"DELETE FROM agents WHERE org = $1 AND id = $2",
	};
	pgconn *c = cof_pg_begin(m, NULL, err);
	int rc = 0;

	if (!c)
		return -1;
	for (size_t i = 0; !rc && i < sizeof sqls / sizeof *sqls; i++)
		rc = cof_pg_do(c, sqls[i], "deleting an agent", NULL, err, "ss", org, id);
	/* its keys, in the same change: one made again under this id must not
	 * be reachable by them */
	if (!rc)
		rc = cof_pg_do(c, "UPDATE keys SET revoked_at = $1 WHERE org = $2 AND agent = $3"
			       " AND revoked_at = 0", "revoking the agent's keys", NULL, err, "iss",
			       cof_now(), org, id);
	return cof_pg_end(m, c, rc, err);
}

/* Where seen_one puts what an agent saw of a file. */
typedef struct {
	int64_t *version;
	char *sha; /* 65 bytes */
} seen;

/* cof_pg_row_fn: a (version, sha256) row into ctx (a seen). */
static int seen_one(void *ctx, PGresult *r, int i, cof_err *err)
{
	seen *s = ctx;

	(void)err;
	*s->version = cof_pg_int(r, i, 0);
	cof_pg_copy(r, i, 1, s->sha, 65);
	return 1;
}

static int pg_seen_get(cof_meta *m, const char *org, const char *agent, const char *vol,
		    const char *path, int64_t *version, char sha[65], cof_err *err)
{
	seen s = { version, sha };
	int rc = cof_pg_rows(m, "SELECT version, sha256 FROM seen WHERE org = $1 AND agent = $2"
			     " AND vol = $3 AND path = $4", "reading what was seen", seen_one, &s,
			     err, "ssss", org, agent, vol, path);

	return rc < 0 ? -1 : rc > 0;
}

static int pg_seen_put(cof_meta *m, const char *org, const char *agent, const char *vol,
		    const char *path, int64_t version, const char *sha, cof_err *err)
{
	return cof_pg_one(m, "INSERT INTO seen(org, agent, vol, path, version, sha256)"
		   " VALUES($1,$2,$3,$4,$5,$6) ON CONFLICT(org, agent, vol, path) DO UPDATE SET"
		   " version = excluded.version, sha256 = excluded.sha256",
		   "recording what was seen", NULL, err, "ssssis", org, agent, vol, path,
		   version, sha);
}

static int pg_run_add(cof_meta *m, const char *org, const char *agent, const char *run,
		   const cof_run_item *it, cof_err *err)
{
	return cof_pg_one(m, "INSERT INTO run_items(org, agent, run, kind, path, version, size,"
		   " ctype, caption, url) VALUES($1,$2,$3,$4,$5,$6,$7,$8,$9,$10) ON CONFLICT(org,"
		   " agent, run, kind, path) DO UPDATE SET version = excluded.version, size ="
		   " excluded.size, ctype = excluded.ctype, caption = excluded.caption, url ="
		   " excluded.url", "recording a run", NULL, err, "sssssiisss", org, agent, run,
		   it->kind, it->path, it->version, it->size, it->ctype ? it->ctype : "",
		   it->caption ? it->caption : "", it->url ? it->url : "");
}

/* A caller's cof_run_fn and its context, for run_row. */
typedef struct {
	cof_run_fn fn;
	void *ctx;
} run_each;

/* cof_pg_row_fn: gives a run item row to the caller's fn. */
static int run_row(void *ctx, PGresult *r, int i, cof_err *err)
{
	run_each *e = ctx;
	cof_run_item it = {
		.kind = PQgetvalue(r, i, 0), .path = PQgetvalue(r, i, 1),
		.version = cof_pg_int(r, i, 2), .size = cof_pg_int(r, i, 3),
		.ctype = PQgetvalue(r, i, 4), .caption = PQgetvalue(r, i, 5),
		.url = PQgetvalue(r, i, 6),
	};

	(void)err;
	return e->fn(e->ctx, &it) ? 1 : 0;
}

static int pg_run_list(cof_meta *m, const char *org, const char *agent, const char *run,
		    cof_run_fn fn, void *ctx, cof_err *err)
{
	run_each e = { fn, ctx };

	/* id grows with each new row; an update keeps it: first-recorded order. */
	return cof_pg_rows(m, "SELECT kind, path, version, size, ctype, caption, url FROM"
			   " run_items WHERE org = $1 AND agent = $2 AND run = $3 ORDER BY id",
			   "reading a run", run_row, &e, err, "sss", org, agent, run) < 0 ? -1 : 0;
}

static int pg_pin(cof_meta *m, const char *org, const char *agent, const char *sha,
	       cof_err *err)
{
	return cof_pg_one(m, "INSERT INTO pins(org, agent, sha256) VALUES($1,$2,$3) ON CONFLICT"
		   " DO NOTHING", "pinning content", NULL, err, "sss", org, agent, sha);
}

/* ------------------------------------------------------ subject workspaces */

/* cof_pg_row_fn: column 0 of the row into ctx (char[48], a volume id). */
static int vol_one(void *ctx, PGresult *r, int i, cof_err *err)
{
	(void)err;
	cof_pg_copy(r, i, 0, ctx, 48);
	return 1;
}

static int pg_subject_get(cof_meta *m, const char *org, const char *agent, const char *subject,
		       char vol[48], cof_err *err)
{
	int rc = cof_pg_rows(m, "SELECT vol FROM subjects WHERE org = $1 AND agent = $2 AND"
			     " subject = $3", "reading a subject", vol_one, vol, err, "sss",
			     org, agent, subject);

	return rc < 0 ? -1 : rc > 0;
}

static int pg_subject_add(cof_meta *m, const char *org, const char *agent, const char *subject,
		       const char *vol, cof_err *err)
{
	int64_t n = 0;
	int rc = cof_pg_one(m, "INSERT INTO subjects(org, agent, subject, vol, created_at)"
		     " VALUES($1,$2,$3,$4,$5) ON CONFLICT DO NOTHING", "recording a subject", &n,
		     err, "ssssi", org, agent, subject, vol, cof_now());
	return rc ? -1 : n > 0;
}

/* A caller's cof_subject_fn and its context, for subject_row. */
typedef struct {
	cof_subject_fn fn;
	void *ctx;
} subject_each;

/* cof_pg_row_fn: gives a (subject, vol) row to the caller's fn. */
static int subject_row(void *ctx, PGresult *r, int i, cof_err *err)
{
	subject_each *e = ctx;

	(void)err;
	return e->fn(e->ctx, PQgetvalue(r, i, 0), PQgetvalue(r, i, 1)) ? 1 : 0;
}

static int pg_subject_list(cof_meta *m, const char *org, const char *agent, cof_subject_fn fn,
			void *ctx, cof_err *err)
{
	subject_each e = { fn, ctx };

	return cof_pg_rows(m, "SELECT subject, vol FROM subjects WHERE org = $1 AND agent = $2"
			   " ORDER BY subject", "listing subjects", subject_row, &e, err, "ss", org,
			   agent) < 0 ? -1 : 0;
}

static int pg_subject_delete_all(cof_meta *m, const char *org, const char *agent, cof_err *err)
{
	return cof_pg_one(m, "DELETE FROM subjects WHERE org = $1 AND agent = $2",
		   "deleting subjects", NULL, err, "ss", org, agent);
}

/* This file's members of the PostgreSQL backend's table. */
void cof_pg_ops_agent(cof_meta_ops *o)
{
	o->agent_put = pg_agent_put;
	o->agent_get = pg_agent_get;
	o->agent_delete = pg_agent_delete;
	o->seen_get = pg_seen_get;
	o->seen_put = pg_seen_put;
	o->pin = pg_pin;
	o->run_add = pg_run_add;
	o->run_list = pg_run_list;
	o->subject_get = pg_subject_get;
	o->subject_add = pg_subject_add;
	o->subject_list = pg_subject_list;
	o->subject_delete_all = pg_subject_delete_all;
}
