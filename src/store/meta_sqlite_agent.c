/*
 * meta_sqlite_agent.c — agents and read tracking on SQLite.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "store/meta_sqlite.h"

static int sq_agent_put(cof_meta *m, const cof_agentrow *a, cof_err *err)
{
	return cof_sqlite_write(m, "INSERT OR REPLACE INTO agents(org, id, workspace, settings, created_at)"
			 " VALUES(?,?,?,?,?)", "saving an agent", err, "ssssi", a->org, a->id,
			 a->workspace, a->settings, a->created_at);
}

/* cof_sqlite_row_fn: a (workspace, settings, created_at) row into ctx (a
 * cof_agentrow), its settings copied. */
static int agent_one(void *ctx, sqlite3_stmt *st, cof_err *err)
{
	cof_agentrow *out = ctx;

	cof_sqlite_col_copy(st, 0, out->workspace, sizeof out->workspace);
	out->settings = cof_strdup((const char *)sqlite3_column_text(st, 1));
	out->created_at = sqlite3_column_int64(st, 2);
	return out->settings ? 1 : cof_error(err, COF_EINTERNAL, "out of memory");
}

static int sq_agent_get(cof_meta *m, const char *org, const char *id, cof_agentrow *out,
			cof_err *err)
{
	memset(out, 0, sizeof *out);
	int rc = cof_sqlite_read(m, "SELECT workspace, settings, created_at FROM agents WHERE"
				 " org = ? AND id = ?", "reading an agent", agent_one, out, err,
				 "ss", org, id);
	if (rc < 0)
		return -1;
	if (rc == 0)
		return cof_error(err, COF_ENOTFOUND, "agent '%.100s' not found", id);
	snprintf(out->org, sizeof out->org, "%s", org);
	snprintf(out->id, sizeof out->id, "%s", id);
	return 0;
}

/* Everything keyed by the agent goes in one change: its runs, pins, what it
 * saw, its stored event stream (events.c names it "agent:ORG:ID"), its
 * mounts' files_changed cursors (records "agentchg", events.c) and the row. */
static int sq_agent_delete(cof_meta *m, const char *org, const char *id, cof_err *err)
{
	static const char *const sqls[] = {
		"DELETE FROM run_items WHERE org = ? AND agent = ?",
		"DELETE FROM pins WHERE org = ? AND agent = ?",
		"DELETE FROM seen WHERE org = ? AND agent = ?",
		"DELETE FROM events WHERE stream = 'agent:' || ? || ':' || ?",
		("DELETE FROM state WHERE kind = 'agentchg' AND org = ? AND"
		 " json_extract(body, '$.agent') = ?"),
		"DELETE FROM agents WHERE org = ? AND id = ?",
	};
	conn *c = cof_sqlite_writer_begin(m, err);
	int rc = 0;

	if (!c)
		return -1;
	for (size_t i = 0; !rc && i < sizeof sqls / sizeof *sqls; i++)
		rc = cof_sqlite_run(c, NULL, sqls[i], "deleting an agent", err, "ss", org, id);
	/* its keys, in the same change: one made again under this id must not
	 * be reachable by them */
	if (!rc)
		rc = cof_sqlite_run(c, NULL, "UPDATE keys SET revoked_at = ? WHERE org = ? AND"
				    " agent = ? AND revoked_at = 0", "revoking the agent's keys", err,
				    "iss", cof_now(), org, id);
	return cof_sqlite_writer_end(m, rc, err);
}

/* Where seen_one puts what an agent saw of a file. */
typedef struct {
	int64_t *version;
	char *sha; /* 65 bytes */
} seen;

/* cof_sqlite_row_fn: a (version, sha256) row into ctx (a seen). */
static int seen_one(void *ctx, sqlite3_stmt *st, cof_err *err)
{
	seen *s = ctx;

	(void)err;
	*s->version = sqlite3_column_int64(st, 0);
	cof_sqlite_col_copy(st, 1, s->sha, 65);
	return 1;
}

static int sq_seen_get(cof_meta *m, const char *org, const char *agent, const char *vol,
		       const char *path, int64_t *version, char sha[65], cof_err *err)
{
	seen s = { version, sha };
	int rc = cof_sqlite_read(m, "SELECT version, sha256 FROM seen WHERE org = ? AND agent = ?"
				 " AND vol = ? AND path = ?", "reading what was seen", seen_one, &s,
				 err, "ssss", org, agent, vol, path);

	return rc < 0 ? -1 : rc > 0;
}

static int sq_seen_put(cof_meta *m, const char *org, const char *agent, const char *vol,
		       const char *path, int64_t version, const char *sha, cof_err *err)
{
	return cof_sqlite_write(m, "INSERT OR REPLACE INTO seen(org, agent, vol, path, version, sha256)"
			 " VALUES(?,?,?,?,?,?)", "recording what was seen", err, "ssssis", org,
			 agent, vol, path, version, sha);
}

static int sq_run_add(cof_meta *m, const char *org, const char *agent, const char *run,
		      const cof_run_item *it, cof_err *err)
{
	return cof_sqlite_write(m, "INSERT INTO run_items(org, agent, run, kind, path, version, size,"
			 " ctype, caption, url) VALUES(?,?,?,?,?,?,?,?,?,?) ON CONFLICT(org, agent,"
			 " run, kind, path) DO UPDATE SET version = excluded.version, size ="
			 " excluded.size, ctype = excluded.ctype, caption = excluded.caption, url ="
			 " excluded.url", "recording a run", err, "sssssiisss", org, agent, run,
			 it->kind, it->path, it->version, it->size, it->ctype ? it->ctype : "",
			 it->caption ? it->caption : "", it->url ? it->url : "");
}

/* A caller's cof_run_fn and its context, for run_row. */
typedef struct {
	cof_run_fn fn;
	void *ctx;
} run_each;

/* cof_sqlite_row_fn: gives a run item row to the caller's fn. */
static int run_row(void *ctx, sqlite3_stmt *st, cof_err *err)
{
	run_each *e = ctx;
	cof_run_item it = {
		.kind = (const char *)sqlite3_column_text(st, 0),
		.path = (const char *)sqlite3_column_text(st, 1),
		.version = sqlite3_column_int64(st, 2),
		.size = sqlite3_column_int64(st, 3),
		.ctype = (const char *)sqlite3_column_text(st, 4),
		.caption = (const char *)sqlite3_column_text(st, 5),
		.url = (const char *)sqlite3_column_text(st, 6),
	};

	(void)err;
	return e->fn(e->ctx, &it) ? 1 : 0;
}

static int sq_run_list(cof_meta *m, const char *org, const char *agent, const char *run,
		       cof_run_fn fn, void *ctx, cof_err *err)
{
	run_each e = { fn, ctx };

	return cof_sqlite_read(m, "SELECT kind, path, version, size, ctype, caption, url FROM"
			       " run_items WHERE org = ? AND agent = ? AND run = ? ORDER BY rowid",
			       "reading a run", run_row, &e, err, "sss", org, agent, run) < 0 ? -1 : 0;
}

static int sq_pin(cof_meta *m, const char *org, const char *agent, const char *sha,
		  cof_err *err)
{
	return cof_sqlite_write(m, "INSERT OR IGNORE INTO pins(org, agent, sha256) VALUES(?,?,?)",
			 "pinning content", err, "sss", org, agent, sha);
}

/* Fills the members of the SQLite backend this file implements. */
void cof_sqlite_ops_agent(cof_meta_ops *o)
{
	o->agent_put = sq_agent_put;
	o->agent_get = sq_agent_get;
	o->agent_delete = sq_agent_delete;
	o->seen_get = sq_seen_get;
	o->seen_put = sq_seen_put;
	o->run_add = sq_run_add;
	o->run_list = sq_run_list;
	o->pin = sq_pin;
}
