/*
 * meta_agent.c — agents, what each has seen, runs and pins, written once
 * above the SQL seam (store/sql.h); with the one cascade of deleting an
 * agent.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "store/meta.h"
#include "store/sql.h"

int cof_meta_agent_put(cof_meta *m, const cof_agentrow *a, cof_err *err)
{
	return cof_sql_write(m, NULL, "INSERT INTO agents(org, id, workspace, settings, created_at)"
			     " VALUES(?1,?2,?3,?4,?5) ON CONFLICT(org, id) DO UPDATE SET workspace ="
			     " excluded.workspace, settings = excluded.settings, created_at ="
			     " excluded.created_at", "saving an agent", err, "ssssi", a->org, a->id,
			     a->workspace, a->settings, a->created_at) < 0 ? -1 : 0;
}

/* cof_sql_row_fn: a (workspace, settings, created_at) row into ctx (a
 * cof_agentrow), its settings copied. */
static int agent_one(void *ctx, const cof_sql_row *r, cof_err *err)
{
	cof_agentrow *out = ctx;

	cof_sql_text(r, 0, out->workspace, sizeof out->workspace);
	out->settings = cof_strdup(cof_sql_str(r, 1));
	out->created_at = cof_sql_int(r, 2);
	return out->settings ? 1 : cof_error(err, COF_EINTERNAL, "out of memory");
}

int cof_meta_agent_get(cof_meta *m, const char *org, const char *id, cof_agentrow *out,
		       cof_err *err)
{
	memset(out, 0, sizeof *out);
	int rc = cof_sql_read(m, "SELECT workspace, settings, created_at FROM agents WHERE"
			      " org = ?1 AND id = ?2", "reading an agent", agent_one, out, err,
			      "ss", org, id);
	if (rc < 0)
		return -1;
	if (rc == 0)
		return cof_error(err, COF_ENOTFOUND, "agent '%.100s' not found", id);
	snprintf(out->org, sizeof out->org, "%s", org);
	snprintf(out->id, sizeof out->id, "%s", id);
	return 0;
}

/* A caller's cof_agent_row_fn and its context, for agent_each. */
typedef struct {
	cof_agent_row_fn fn;
	void *ctx;
} agent_each_ctx;

/* cof_sql_row_fn: an (id, workspace, created_at) row to the caller's fn. */
static int agent_each(void *ctx, const cof_sql_row *r, cof_err *err)
{
	agent_each_ctx *e = ctx;

	(void)err;
	return e->fn(e->ctx, cof_sql_str(r, 0), cof_sql_str(r, 1), cof_sql_int(r, 2)) ? 0 : 1;
}

int cof_meta_agent_list(cof_meta *m, const char *org, const char *prefix, const char *after,
			int64_t limit, cof_agent_row_fn fn, void *ctx, cof_err *err)
{
	agent_each_ctx e = { fn, ctx };

	/* the prefix as a range would need the largest character after it; a
	 * substring compare reads the same on both engines */
	return cof_sql_read(m, "SELECT id, workspace, created_at FROM agents WHERE org = ?1 AND"
			    " substr(id, 1, length(CAST(?2 AS text))) = CAST(?2 AS text) AND"
			    " id{C} > CAST(?3 AS text) ORDER BY id{C} LIMIT CAST(?4 AS bigint)",
			    "listing agents", agent_each, &e, err, "sssi", org, prefix ? prefix : "",
			    after ? after : "", limit) < 0 ? -1 : 0;
}

/* Everything keyed by the agent goes in one change: its runs, pins, what it
 * saw, its stored event stream (events.c names it "agent:ORG:ID"), its
 * mounts' files_changed cursors (records "agentchg", events.c) and the row;
 * and its keys revoked, so that one made again under this id is not
 * reachable by them. */
int cof_meta_agent_delete(cof_meta *m, const char *org, const char *id, cof_err *err)
{
	static const char *const sqls[] = {
		"DELETE FROM run_items WHERE org = ?1 AND agent = ?2",
		"DELETE FROM pins WHERE org = ?1 AND agent = ?2",
		"DELETE FROM seen WHERE org = ?1 AND agent = ?2",
		"DELETE FROM events WHERE stream = 'agent:' || ?1 || ':' || ?2",
		("DELETE FROM state WHERE kind = 'agentchg' AND org = ?1 AND"
		 " body{jsonb} ->> 'agent' = ?2"),
		"DELETE FROM agents WHERE org = ?1 AND id = ?2",
	};
	cof_sql_tx tx;
	int rc = 0;

	if (cof_sql_begin(m, COF_SQL_WRITE, &tx, err) < 0)
		return -1;
	for (size_t i = 0; !rc && i < sizeof sqls / sizeof *sqls; i++)
		rc = cof_sql_exec(&tx, NULL, sqls[i], "deleting an agent", err, "ss", org, id);
	if (!rc)
		rc = cof_sql_exec(&tx, NULL, "UPDATE keys SET revoked_at = ?1 WHERE org = ?2 AND"
				  " agent = ?3 AND revoked_at = 0", "revoking the agent's keys", err,
				  "iss", cof_now(), org, id);
	return cof_sql_end(&tx, rc, err) < 0 ? -1 : 0;
}

/* Where seen_one puts what an agent saw of a file. */
typedef struct {
	int64_t *version;
	char *sha; /* 65 bytes */
} seen;

/* cof_sql_row_fn: a (version, sha256) row into ctx (a seen). */
static int seen_one(void *ctx, const cof_sql_row *r, cof_err *err)
{
	seen *s = ctx;

	(void)err;
	*s->version = cof_sql_int(r, 0);
	cof_sql_text(r, 1, s->sha, 65);
	return 1;
}

int cof_meta_seen_get(cof_meta *m, const char *org, const char *agent, const char *vol,
		      const char *path, int64_t *version, char sha[65], cof_err *err)
{
	seen s = { version, sha };
	int rc = cof_sql_read(m, "SELECT version, sha256 FROM seen WHERE org = ?1 AND agent = ?2"
			      " AND vol = ?3 AND path = ?4", "reading what was seen", seen_one, &s,
			      err, "ssss", org, agent, vol, path);

	return rc < 0 ? -1 : rc > 0;
}

static const char seen_put_sql[] =
	"INSERT{or_fail} INTO seen(org, agent, vol, path, version, sha256)"
	" VALUES(?1,?2,?3,?4,?5,?6) ON CONFLICT(org, agent, vol, path) DO UPDATE"
	" SET version = excluded.version, sha256 = excluded.sha256";

int cof_meta_seen_put(cof_meta *m, const char *org, const char *agent, const char *vol,
		      const char *path, int64_t version, const char *sha, cof_err *err)
{
	return cof_sql_write(m, NULL, seen_put_sql, "recording what was seen", err, "ssssis",
			     org, agent, vol, path, version, sha) < 0 ? -1 : 0;
}

int cof_meta_seen_put_many(cof_meta *m, const char *org, const char *agent, const char *vol,
			   const cof_seen_row *rows, size_t n, cof_err *err)
{
	cof_sql_tx tx;
	int rc = 0;

	if (!n)
		return 0;
	if (cof_sql_begin(m, COF_SQL_WRITE_OF(n), &tx, err) < 0)
		return -1;
	for (size_t i = 0; !rc && i < n; i++)
		rc = cof_sql_exec(&tx, NULL, seen_put_sql, "recording what was seen", err,
				  "ssssis", org, agent, vol, rows[i].path, rows[i].version,
				  rows[i].sha);
	return cof_sql_end(&tx, rc, err) < 0 ? -1 : 0;
}

static const char run_add_sql[] =
	"INSERT{or_fail} INTO run_items(org, agent, run, kind, path, version, size, ctype,"
	" caption, url)"
	" VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10) ON CONFLICT(org, agent, run, kind, path) DO"
	" UPDATE SET version = excluded.version, size = excluded.size, ctype = excluded.ctype,"
	" caption = excluded.caption, url = excluded.url";

int cof_meta_run_add(cof_meta *m, const char *org, const char *agent, const char *run,
		     const cof_run_item *it, cof_err *err)
{
	return cof_sql_write(m, NULL, run_add_sql, "recording a run", err, "sssssiisss", org,
			     agent, run, it->kind, it->path, it->version, it->size,
			     it->ctype ? it->ctype : "", it->caption ? it->caption : "",
			     it->url ? it->url : "") < 0 ? -1 : 0;
}

int cof_meta_run_add_many(cof_meta *m, const char *org, const char *agent, const char *run,
			  const cof_run_item *its, size_t n, cof_err *err)
{
	cof_sql_tx tx;
	int rc = 0;

	if (!n)
		return 0;
	if (cof_sql_begin(m, COF_SQL_WRITE_OF(n), &tx, err) < 0)
		return -1;
	for (size_t i = 0; !rc && i < n; i++) {
		const cof_run_item *it = &its[i];
		rc = cof_sql_exec(&tx, NULL, run_add_sql, "recording a run", err, "sssssiisss",
				  org, agent, run, it->kind, it->path, it->version, it->size,
				  it->ctype ? it->ctype : "", it->caption ? it->caption : "",
				  it->url ? it->url : "");
	}
	return cof_sql_end(&tx, rc, err) < 0 ? -1 : 0;
}

/* A caller's cof_run_fn and its context, for run_row. */
typedef struct {
	cof_run_fn fn;
	void *ctx;
} run_each;

/* cof_sql_row_fn: gives a run item row to the caller's fn. */
static int run_row(void *ctx, const cof_sql_row *r, cof_err *err)
{
	run_each *e = ctx;
	cof_run_item it = {
		.kind = cof_sql_str(r, 0), .path = cof_sql_str(r, 1),
		.version = cof_sql_int(r, 2), .size = cof_sql_int(r, 3),
		.ctype = cof_sql_str(r, 4), .caption = cof_sql_str(r, 5),
		.url = cof_sql_str(r, 6),
	};

	(void)err;
	return e->fn(e->ctx, &it) ? 1 : 0;
}

int cof_meta_run_list(cof_meta *m, const char *org, const char *agent, const char *run,
		      cof_run_fn fn, void *ctx, cof_err *err)
{
	run_each e = { fn, ctx };

	/* an update keeps the row's place: first-recorded order */
	return cof_sql_read(m, "SELECT kind, path, version, size, ctype, caption, url FROM"
			    " run_items WHERE org = ?1 AND agent = ?2 AND run = ?3 ORDER BY {rowid}",
			    "reading a run", run_row, &e, err, "sss", org, agent, run) < 0 ? -1 : 0;
}

int cof_meta_hold(cof_meta *m, const char *org, const char *holder, const char *sha,
		  int64_t size, cof_err *err)
{
	/* the pin first: from its commit on, no collector takes the content */
	if (cof_meta_pin(m, org, holder, sha, err))
		return -1;
	return cof_sql_write(m, NULL, "INSERT INTO blobs(sha256, size, orphan_since) VALUES(?1,?2,"
			     "NULL) ON CONFLICT(sha256) DO NOTHING", "keeping content", err, "si",
			     sha, size) < 0 ? -1 : 0;
}

int cof_meta_unhold(cof_meta *m, const char *org, const char *holder, cof_err *err)
{
	return cof_sql_write(m, NULL, "DELETE FROM pins WHERE org = ?1 AND agent = ?2",
			     "releasing content", err, "ss", org, holder) < 0 ? -1 : 0;
}

int cof_meta_pin(cof_meta *m, const char *org, const char *agent, const char *sha,
		 cof_err *err)
{
	return cof_sql_write(m, NULL, "INSERT INTO pins(org, agent, sha256) VALUES(?1,?2,?3) ON"
			     " CONFLICT DO NOTHING", "pinning content", err, "sss", org, agent,
			     sha) < 0 ? -1 : 0;
}
