/*
 * meta_pg.c — the metadata store (meta.h) on PostgreSQL (libpq): connections,
 * the schema and its migrations, the table of operations, and the PostgreSQL
 * driver of the SQL seam (store/sql.h) that the metadata code written once
 * uses (a change's group commit is in meta_pg_group.c).
 *
 * Several cofferd nodes share one database, so nothing here may rely on a
 * process lock: a change to a volume holds the volume's row lock (SELECT ...
 * FOR UPDATE) from loading it to commit, which serializes the changes of one
 * volume across every node and gives each exactly one new seq; other writes
 * are one statement each (INSERT ... ON CONFLICT). Connections come from a
 * pool (a libpq connection is used by one thread at a time); statements are
 * prepared once per connection. Text columns that must sort bytewise, as
 * SQLite's do, are COLLATE "C".
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "store/meta_pg.h"
#include "store/meta_volume.h"

/* ------------------------------------------------------------- schema */

/* Migration N brings a database at schema_version N-1 to N; they run in one
 * transaction under an advisory lock, so nodes starting together migrate once.
 * A new database is made from the schema written once (schema.c) instead:
 * these are the steps of databases made by older cofferds, and a change of
 * the schema takes a line there and one migration here. */
static const char *const migrations[] = {
	/* 1: the whole schema of the SQLite store. */
	"CREATE TABLE keys(hash text PRIMARY KEY, org text NOT NULL,"
	" agent text NOT NULL DEFAULT '', admin integer NOT NULL DEFAULT 0,"
	" created_at bigint NOT NULL);"
	"CREATE TABLE volumes(vno bigserial PRIMARY KEY, id text COLLATE \"C\" NOT NULL UNIQUE,"
	" org text NOT NULL, name text COLLATE \"C\" NOT NULL, seq bigint NOT NULL,"
	" files bigint NOT NULL, bytes bigint NOT NULL, capacity bigint NOT NULL,"
	" ceiling bigint NOT NULL, created_at bigint NOT NULL, hidden integer NOT NULL DEFAULT 0,"
	" history_from bigint NOT NULL DEFAULT 0);"
	"CREATE INDEX volumes_org_name ON volumes(org, name, id);"
	"CREATE TABLE entries(vno bigint NOT NULL, path text COLLATE \"C\" NOT NULL,"
	" from_seq bigint NOT NULL, to_seq bigint, version bigint NOT NULL,"
	" size bigint NOT NULL, sha256 text NOT NULL, ctype text NOT NULL,"
	" updated_at bigint NOT NULL, closed_at bigint, PRIMARY KEY(vno, path, from_seq));"
	"CREATE UNIQUE INDEX entries_live ON entries(vno, path) WHERE to_seq IS NULL;"
	"CREATE INDEX entries_sha ON entries(sha256);"
	"CREATE INDEX entries_closed ON entries(closed_at) WHERE to_seq IS NOT NULL;"
	"CREATE TABLE changes(vno bigint NOT NULL, seq bigint NOT NULL,"
	" path text COLLATE \"C\" NOT NULL, removed integer NOT NULL, version bigint NOT NULL,"
	" size bigint NOT NULL, sha256 text NOT NULL, at bigint NOT NULL,"
	" PRIMARY KEY(vno, seq, path));"
	"CREATE INDEX changes_at ON changes(at);"
	"CREATE TABLE snapshots(id text PRIMARY KEY, vno bigint NOT NULL,"
	" src_vno bigint NOT NULL, seq bigint NOT NULL, pinned integer NOT NULL,"
	" labels text NOT NULL, files bigint NOT NULL, bytes bigint NOT NULL,"
	" created_at bigint NOT NULL, ord bigserial NOT NULL);"
	"CREATE INDEX snapshots_vol ON snapshots(vno, ord);"
	"CREATE INDEX snapshots_src ON snapshots(src_vno, seq);"
	"CREATE TABLE blobs(sha256 text PRIMARY KEY, size bigint NOT NULL,"
	" orphan_since bigint, data bytea);"
	"CREATE TABLE agents(org text NOT NULL, id text NOT NULL,"
	" workspace text NOT NULL, settings text NOT NULL, created_at bigint NOT NULL,"
	" PRIMARY KEY(org, id));"
	"CREATE TABLE seen(org text NOT NULL, agent text NOT NULL,"
	" vol text NOT NULL, path text NOT NULL, version bigint NOT NULL,"
	" sha256 text NOT NULL, PRIMARY KEY(org, agent, vol, path));"
	"CREATE TABLE run_items(id bigserial PRIMARY KEY, org text NOT NULL, agent text NOT NULL,"
	" run text NOT NULL, kind text NOT NULL, path text NOT NULL, version bigint NOT NULL,"
	" size bigint NOT NULL, ctype text NOT NULL, caption text NOT NULL, url text NOT NULL,"
	" UNIQUE(org, agent, run, kind, path));"
	"CREATE TABLE pins(org text NOT NULL, agent text NOT NULL,"
	" sha256 text NOT NULL, PRIMARY KEY(org, agent, sha256));"
	"CREATE INDEX pins_sha ON pins(sha256);"
	"CREATE TABLE idem(scope text NOT NULL, key text NOT NULL,"
	" value text NOT NULL, created_at bigint NOT NULL, PRIMARY KEY(scope, key));"
	"CREATE TABLE subjects(org text NOT NULL, agent text NOT NULL,"
	" subject text COLLATE \"C\" NOT NULL, vol text NOT NULL, created_at bigint NOT NULL,"
	" PRIMARY KEY(org, agent, subject));",
	/* 2: garbage collection across nodes (docs/design.md): pending_at, when
	 * a write on some node last said it is about to name the content;
	 * claimed_at, when a collector took it to delete its bytes. */
	"ALTER TABLE blobs ADD COLUMN pending_at bigint, ADD COLUMN claimed_at bigint;",
	/* 3: forks refer to their parent at a seq instead of copying its rows
	 * (docs/design.md, "Forks"); a volume deleted while forks refer to it is
	 * kept as `retired`. Constant defaults rewrite no row. */
	"ALTER TABLE volumes ADD COLUMN base_vno bigint, ADD COLUMN base_seq bigint NOT NULL"
	" DEFAULT 0, ADD COLUMN depth integer NOT NULL DEFAULT 0, ADD COLUMN retired integer"
	" NOT NULL DEFAULT 0;"
	"CREATE INDEX volumes_base ON volumes(base_vno) WHERE base_vno IS NOT NULL;",

	/* 4: stored state (meta_state.c): relay sessions' and turns' records,
	 * the recent history of event streams. */
	"CREATE TABLE state(kind text NOT NULL, id text NOT NULL, org text NOT NULL,"
	" node text NOT NULL, ended integer NOT NULL, updated_at bigint NOT NULL,"
	" body text NOT NULL, PRIMARY KEY(kind, id));"
	"CREATE TABLE events(stream text COLLATE \"C\" NOT NULL, id bigint NOT NULL,"
	" mask integer NOT NULL, body text NOT NULL, at bigint NOT NULL,"
	" PRIMARY KEY(stream, id));",

	/* 5: the key lifecycle (issue 16): ids (from the hash, as the request log
	 * names keys), names, read-only, expiry, revocation, last use. */
	"ALTER TABLE keys ADD COLUMN id text NOT NULL DEFAULT '',"
	" ADD COLUMN name text NOT NULL DEFAULT '', ADD COLUMN read_only integer NOT NULL"
	" DEFAULT 0, ADD COLUMN expires_at bigint NOT NULL DEFAULT 0, ADD COLUMN revoked_at"
	" bigint NOT NULL DEFAULT 0, ADD COLUMN last_used_at bigint NOT NULL DEFAULT 0;"
	"UPDATE keys SET id = 'k_' || substr(hash, 1, 16);"
	"CREATE UNIQUE INDEX keys_id ON keys(id);"
	"CREATE INDEX keys_org ON keys(org, created_at);",

	/* 6: the records not ended of each node, so the gone-node check
	 * (records.c) reads only those, not every record of the kind. */
	"CREATE INDEX state_live ON state(kind, node) WHERE ended = 0;",

	/* 7: webhooks and their delivery queue (meta_webhook.c); a delivery is
	 * claimed by one node with a lease (claimed_by, lease_until). Safe to run
	 * again (IF NOT EXISTS), as 8 is. */
	"CREATE TABLE IF NOT EXISTS webhooks(id text COLLATE \"C\" PRIMARY KEY, org text NOT NULL,"
	" url text NOT NULL, events text NOT NULL, vols text NOT NULL, agents text NOT NULL,"
	" description text NOT NULL, secret text NOT NULL, disabled integer NOT NULL,"
	" created_at bigint NOT NULL);"
	"CREATE INDEX IF NOT EXISTS webhooks_org ON webhooks(org, id);"
	"CREATE TABLE IF NOT EXISTS hook_deliveries(id text COLLATE \"C\" PRIMARY KEY, hook text NOT NULL,"
	" org text NOT NULL, event text NOT NULL, data text NOT NULL, created_at bigint NOT NULL,"
	" status text NOT NULL, attempts integer NOT NULL, last_error text NOT NULL,"
	" next_at bigint NOT NULL, delivered_at bigint NOT NULL, claimed_by text NOT NULL,"
	" lease_until bigint NOT NULL);"
	"CREATE INDEX IF NOT EXISTS hook_deliveries_due ON hook_deliveries(status, next_at);"
	"CREATE INDEX IF NOT EXISTS hook_deliveries_hook ON hook_deliveries(hook, id);",

	/* 8: who made each change (API.md "Who"): JSON text; older rows null.
	 * A path's history (GET .../history) by an index range. */
	("ALTER TABLE changes ADD COLUMN IF NOT EXISTS who text;"
	 "CREATE INDEX IF NOT EXISTS changes_path ON changes(vno, path, seq);"),

	/* 9: a run's and a call's changes (revert, ?runId=, ?callId=) by an index
	 * range, not a walk of the volume's feed; the expressions are the ones
	 * the feed writes (meta_changes.c). */
	("CREATE INDEX IF NOT EXISTS changes_run ON changes(vno, (who::jsonb ->> 'runId'), seq);"
	 "CREATE INDEX IF NOT EXISTS changes_call ON changes(vno, (who::jsonb ->> 'callId'), seq);"),

	/* 10: the S3 gateway's text of each version (user metadata, MD5:
	 * docs/s3.md), on its entries and changes rows; older rows null. */
	("ALTER TABLE entries ADD COLUMN IF NOT EXISTS s3meta text;"
	 "ALTER TABLE changes ADD COLUMN IF NOT EXISTS s3meta text;"),
};
#define SCHEMA_VERSION ((int)(sizeof migrations / sizeof *migrations))

static const char *const pg_tokens[COF_SQL_TOKENS];

/* A new database: the schema written once (schema.c), its tables and then
 * its indexes, where the migrations are only for one made by an older
 * cofferd. */
static int schema_new(pgconn *c, cof_err *err)
{
	const char *texts[2] = { cof_schema_tables, cof_schema_indexes };

	for (int i = 0; i < 2; i++) {
		char *sql = cof_sql_rewrite(texts[i], 0, pg_tokens);
		int rc = sql ? cof_pg_exec(c, sql, err) : cof_error(err, COF_EINTERNAL,
								 "out of memory");
		free(sql);
		if (rc)
			return -1;
	}
	return 0;
}

/* Brings the database to SCHEMA_VERSION (a new one made from the schema, an
 * older one migrated); refuses one written by a newer cofferd. */
static int migrate(pgconn *c, cof_err *err)
{
	PGresult *r;
	int version = 0, rc = 0;

	/* Any constant: every cofferd takes the same one. */
	if (cof_pg_exec(c, "BEGIN", err) ||
	    cof_pg_exec(c, "SELECT pg_advisory_xact_lock(7366111)", err) ||
	    cof_pg_exec(c, "CREATE TABLE IF NOT EXISTS schema_version(version integer NOT NULL)",
			err))
		goto fail;
	if (!(r = cof_pg_q(c, "SELECT max(version) FROM schema_version", "reading the schema's"
			   " version", err, "")))
		goto fail;
	version = PQgetisnull(r, 0, 0) ? 0 : (int)cof_pg_int(r, 0, 0);
	PQclear(r);
	if (version > SCHEMA_VERSION) {
		cof_error(err, COF_EINTERNAL, "the metadata database was written by a newer"
			  " cofferd (schema %d; this one, coffer %s, knows schema %d): run that release"
			  " or a newer one", version, COFFER_VERSION, SCHEMA_VERSION);
		goto fail;
	}
	if (version == 0 && schema_new(c, err))
		goto fail;
	for (; version > 0 && version < SCHEMA_VERSION; version++)
		if (cof_pg_exec(c, migrations[version], err))
			goto fail;
	if (cof_pg_exec(c, "DELETE FROM schema_version", err) ||
	    cof_pg_do(c, "INSERT INTO schema_version(version) VALUES($1)", "migrating", NULL,
		      err, "i", (int64_t)SCHEMA_VERSION))
		goto fail;
	return cof_pg_exec(c, "COMMIT", err);
fail:
	rc = -1;
	PQclear(PQexec(c->db, "ROLLBACK"));
	return rc;
}

/* ------------------------------------------------------------ connections */

int cof_pg_error(cof_err *err, pgconn *c, PGresult *res, const char *what)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	const char *msg = res ? PQresultErrorMessage(res) : "";

	if (!msg || !*msg)
		msg = c ? PQerrorMessage(c->db) : "out of memory";
	if (!c || PQstatus(c->db) != CONNECTION_OK)
		return cof_error(err, COF_EUNAVAILABLE, "the metadata database cannot be reached;"
				 " retry %s", what);
	if (state && (!strcmp(state, "40001") || !strcmp(state, "40P01") ||
		      !strcmp(state, "55P03")))
		return cof_error(err, COF_EUNAVAILABLE, "the store is busy; retry %s", what);
	if (state && (!strcmp(state, "53100") || !strncmp(state, "08", 2)))
		return cof_error(err, COF_EUNAVAILABLE, "the metadata database is unavailable"
				 " (%.200s); %s refused", msg, what);
	return cof_error(err, COF_EINTERNAL, "metadata store: %s: %.300s", what, msg);
}

static void conn_close(pgconn *c)
{
	if (!c)
		return;
	PQfinish(c->db);
	free(c);
}

static pgconn *conn_open(const char *url, cof_err *err)
{
	pgconn *c = cof_calloc(1, sizeof *c);

	if (!c) {
		cof_error(err, COF_EINTERNAL, "out of memory");
		return NULL;
	}
	c->db = PQconnectdb(url);
	if (!c->db || PQstatus(c->db) != CONNECTION_OK) {
		/* Named by host, port and database: the URL may hold a password. */
		cof_error(err, COF_EUNAVAILABLE, "cannot connect to the postgres metadata database"
			  " '%s' on %s:%s: %.300s", c->db ? PQdb(c->db) : "?",
			  c->db ? PQhost(c->db) : "?", c->db ? PQport(c->db) : "?",
			  c->db ? PQerrorMessage(c->db) : "out of memory");
		conn_close(c);
		return NULL;
	}
	/* Notices (CREATE TABLE IF NOT EXISTS...) are not errors: keep them off stderr. */
	PQclear(PQexec(c->db, "SET client_min_messages = warning"));
	return c;
}

pgconn *cof_pg_get(cof_meta *m, cof_err *err)
{
	pg_meta *p = PGM(m);
	pgconn *c;

	pthread_mutex_lock(&p->plock);
	c = p->idle;
	if (c) {
		p->idle = c->next;
		p->nidle--;
	}
	pthread_mutex_unlock(&p->plock);
	if (c && PQstatus(c->db) != CONNECTION_OK) {
		conn_close(c);   /* the server restarted or dropped it: a fresh one */
		c = NULL;
	}
	return c ? c : conn_open(p->url, err);
}

void cof_pg_put(cof_meta *m, pgconn *c)
{
	pg_meta *p = PGM(m);

	if (!c)
		return;
	if (PQstatus(c->db) == CONNECTION_OK && PQtransactionStatus(c->db) != PQTRANS_IDLE)
		PQclear(PQexec(c->db, "ROLLBACK"));
	if (PQstatus(c->db) != CONNECTION_OK || PQtransactionStatus(c->db) != PQTRANS_IDLE) {
		conn_close(c);
		return;
	}
	pthread_mutex_lock(&p->plock);
	if (p->nidle < PG_POOL_IDLE) {
		c->next = p->idle;
		p->idle = c;
		p->nidle++;
		c = NULL;
	}
	pthread_mutex_unlock(&p->plock);
	conn_close(c);
}

int cof_pg_exec(pgconn *c, const char *sql, cof_err *err)
{
	PGresult *r = PQexec(c->db, sql);
	ExecStatusType s = PQresultStatus(r);
	int rc = 0;

	if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK)
		rc = cof_pg_error(err, c, r, sql);
	PQclear(r);
	return rc;
}

/* What the dialect tokens of shared SQL are on PostgreSQL (store/sql.h). */
static const char *const pg_tokens[COF_SQL_TOKENS] = { "::jsonb", "id", " COLLATE \"C\"",
							 "jsonb_concat", " FOR UPDATE",
							 "json_array_elements_text",
							 "bigserial PRIMARY KEY", "bytea", "", "" };

/* The decimal text of v into out (room for 21 bytes and the NUL); its
 * length. Each parameter of every statement is one: snprintf's "%lld" cost
 * about 1,000 instructions a number (glibc's positional printf), 20 numbers
 * a PUT. */
static size_t i64_text(char *out, int64_t v)
{
	char tmp[24];
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
	size_t n = 0, k = 0;

	do
		tmp[n++] = (char)('0' + u % 10);
	while ((u /= 10) != 0);
	if (v < 0)
		out[k++] = '-';
	while (n)
		out[k++] = tmp[--n];
	out[k] = '\0';
	return k;
}

/* The name of statement slot i: "sI". */
static void stmt_name(char name[16], int i)
{
	name[0] = 's';
	i64_text(name + 1, i);
}

/* The name of the prepared statement of `sql` on `c`, preparing it first. */
static int prepared(pgconn *c, const char *sql, int nparams, char name[16], cof_err *err)
{
	int slot = -1;

	for (int i = 0; i < PG_STMTS; i++) {
		if (c->prepared[i] == sql) {
			stmt_name(name, i);
			return 0;
		}
		if (!c->prepared[i] && slot < 0)
			slot = i;
	}
	if (slot < 0) /* a bug (PG_STMTS is twice the statements), not load */
		return cof_error(err, COF_EINTERNAL, "metadata store: statement cache full");
	stmt_name(name, slot);
	/* shared SQL (store/sql.h): ?N as $N and its tokens expanded, once per
	 * text and connection, as it is prepared */
	char *text = cof_sql_needs_rewrite(sql, 1) ? cof_sql_rewrite(sql, 1, pg_tokens) : NULL;
	if (!text && cof_sql_needs_rewrite(sql, 1))
		return cof_error(err, COF_EINTERNAL, "out of memory");
	PGresult *r = PQprepare(c->db, name, text ? text : sql, nparams, NULL);
	free(text);
	if (PQresultStatus(r) != PGRES_COMMAND_OK) {
		cof_pg_error(err, c, r, "preparing a statement");
		PQclear(r);
		return -1;
	}
	PQclear(r);
	c->prepared[slot] = sql;
	return 0;
}

/* Fills s's parameters from `kinds` and the va_list (as cof_pg_q takes
 * them): 0, or -1 naming what was wrong. */
static int stmt_fill(cof_pg_stmt *s, const char *sql, const char *what, cof_err *err,
		     const char *kinds, va_list ap)
{
	int n = (int)strlen(kinds);

	s->sql = sql;
	s->what = what;
	s->res = NULL;
	s->n = n;
	if (n > PG_MAXPARAMS)
		return cof_error(err, COF_EINTERNAL, "metadata store: too many parameters");
	for (int i = 0; i < n; i++) {
		s->lens[i] = 0;
		s->fmts[i] = 0;
		if (kinds[i] == 'i') {
			i64_text(s->ints[i], va_arg(ap, int64_t));
			s->vals[i] = s->ints[i];
		} else if (kinds[i] == 'b') {
			s->vals[i] = va_arg(ap, const char *);
			s->lens[i] = (int)va_arg(ap, int64_t);
			s->fmts[i] = 1;
		} else {
			s->vals[i] = va_arg(ap, const char *);
			/* PostgreSQL refuses such text anyway; say what it was. */
			if (s->vals[i] && !cof_utf8_valid(s->vals[i], strlen(s->vals[i])))
				return cof_error(err, COF_EVALIDATION, "%s: a text value is not"
						 " valid UTF-8", what);
		}
	}
	return 0;
}

int cof_pg_stmt_set(cof_pg_stmt *s, const char *sql, const char *what, cof_err *err,
		const char *kinds, ...)
{
	va_list ap;
	va_start(ap, kinds);
	int rc = stmt_fill(s, sql, what, err, kinds, ap);
	va_end(ap);
	return rc;
}

static int result_ok(PGresult *r)
{
	ExecStatusType st = PQresultStatus(r);
	return st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
}

/* Whether a failed result is the database being busy: serialization
 * failure, deadlock, lock not available (the transaction may be run again). */
static int busy(PGresult *r)
{
	const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;

	return state && (!strcmp(state, "40001") || !strcmp(state, "40P01") ||
			 !strcmp(state, "55P03"));
}

/* The result of `sql`, or NULL with err filled (and *retry, when not NULL,
 * set to whether the failure was busy()). */
static PGresult *vq_retry(pgconn *c, const char *sql, const char *what, cof_err *err,
			  int *retry, const char *kinds, va_list ap)
{
	cof_pg_stmt s;
	char name[16];

	if (stmt_fill(&s, sql, what, err, kinds, ap) || prepared(c, sql, s.n, name, err))
		return NULL;
	PGresult *r = PQexecPrepared(c->db, name, s.n, s.vals, s.lens, s.fmts, 0);
	if (!result_ok(r)) {
		cof_pg_error(err, c, r, what);
		if (retry)
			*retry = busy(r);
		PQclear(r);
		return NULL;
	}
	return r;
}

static PGresult *vq(pgconn *c, const char *sql, const char *what, cof_err *err,
		    const char *kinds, va_list ap)
{
	return vq_retry(c, sql, what, err, NULL, kinds, ap);
}

int cof_pg_pipeline(pgconn *c, cof_pg_stmt *s, int n, cof_err *err)
{
	char names[PG_PIPE_MAX][16];
	int rc = 0, sent = 0;

	if (n > PG_PIPE_MAX)
		return cof_error(err, COF_EINTERNAL, "metadata store: pipeline too long");
	for (int i = 0; i < n; i++) {
		s[i].res = NULL;
		/* prepared first, outside the pipeline: once per connection */
		if (s[i].sql && prepared(c, s[i].sql, s[i].n, names[i], err))
			return -1;
	}
	if (!PQenterPipelineMode(c->db))
		return cof_pg_error(err, c, NULL, s[0].what);
	for (; sent < n; sent++) {
		int ok = s[sent].sql
			? PQsendQueryPrepared(c->db, names[sent], s[sent].n, s[sent].vals,
					      s[sent].lens, s[sent].fmts, 0)
			: PQsendQueryParams(c->db, s[sent].what, 0, NULL, NULL, NULL, NULL, 0);
		if (!ok)
			break;
	}
	if (sent < n || !PQpipelineSync(c->db)) {
		/* the connection is broken: cof_pg_put closes it */
		rc = cof_pg_error(err, c, NULL, s[sent < n ? sent : n - 1].what);
		(void)PQexitPipelineMode(c->db);
		return rc;
	}
	/* each statement's result, then NULL; then the sync's own */
	for (int i = 0; i < n; i++) {
		PGresult *r, *keep = NULL;
		while ((r = PQgetResult(c->db)) != NULL) {
			if (!keep)
				keep = r;
			else
				PQclear(r);
		}
		if (!rc && (!keep || !result_ok(keep))) {
			rc = cof_pg_error(err, c, keep, s[i].what);
			PQclear(keep);
			keep = NULL;
		}
		if (rc)
			PQclear(keep); /* the rest were skipped (PIPELINE_ABORTED) */
		else
			s[i].res = keep;
	}
	for (PGresult *r; (r = PQgetResult(c->db)) != NULL; ) {
		if (PQresultStatus(r) == PGRES_PIPELINE_SYNC) {
			PQclear(r);
			break;
		}
		PQclear(r);
	}
	if (!PQexitPipelineMode(c->db) && !rc)
		rc = cof_pg_error(err, c, NULL, s[n - 1].what);
	if (rc)
		for (int i = 0; i < n; i++) {
			PQclear(s[i].res);
			s[i].res = NULL;
		}
	return rc;
}

PGresult *cof_pg_q(pgconn *c, const char *sql, const char *what, cof_err *err,
		   const char *kinds, ...)
{
	va_list ap;
	va_start(ap, kinds);
	PGresult *r = vq(c, sql, what, err, kinds, ap);
	va_end(ap);
	return r;
}

int cof_pg_do(pgconn *c, const char *sql, const char *what, int64_t *n, cof_err *err,
	      const char *kinds, ...)
{
	va_list ap;
	va_start(ap, kinds);
	PGresult *r = vq(c, sql, what, err, kinds, ap);
	va_end(ap);
	if (!r)
		return -1;
	if (n)
		*n = strtoll(PQcmdTuples(r), NULL, 10);
	PQclear(r);
	return 0;
}

int cof_pg_one(cof_meta *m, const char *sql, const char *what, int64_t *n, cof_err *err,
	       const char *kinds, ...)
{
	pgconn *c = cof_pg_get(m, err);
	va_list ap;
	PGresult *r;

	if (!c)
		return -1;
	va_start(ap, kinds);
	r = vq(c, sql, what, err, kinds, ap);
	va_end(ap);
	if (r && n)
		*n = strtoll(PQcmdTuples(r), NULL, 10);
	PQclear(r);
	cof_pg_put(m, c);
	return r ? 0 : -1;
}

/* Calls fn on each row of r until it says stop or fails; then frees r.
 * Returns fn's -1, or the number of rows r had. */
static int each_row(PGresult *r, cof_pg_row_fn fn, void *ctx, cof_err *err)
{
	int n = PQntuples(r), rc = 0;

	for (int i = 0; i < n && !rc; i++)
		rc = fn(ctx, r, i, err);
	PQclear(r);
	return rc < 0 ? -1 : n;
}

int cof_pg_rows_on(pgconn *c, const char *sql, const char *what, cof_pg_row_fn fn,
		   void *ctx, cof_err *err, const char *kinds, ...)
{
	va_list ap;
	va_start(ap, kinds);
	PGresult *r = vq(c, sql, what, err, kinds, ap);
	va_end(ap);
	return r ? each_row(r, fn, ctx, err) : -1;
}

int cof_pg_rows(cof_meta *m, const char *sql, const char *what, cof_pg_row_fn fn,
		void *ctx, cof_err *err, const char *kinds, ...)
{
	pgconn *c = cof_pg_get(m, err);
	va_list ap;
	PGresult *r;

	if (!c)
		return -1;
	va_start(ap, kinds);
	r = vq(c, sql, what, err, kinds, ap);
	va_end(ap);
	int rc = r ? each_row(r, fn, ctx, err) : -1;
	cof_pg_put(m, c);
	return rc;
}

int cof_pg_row_int(void *ctx, PGresult *r, int row, cof_err *err)
{
	(void)err;
	*(int64_t *)ctx = cof_pg_int(r, row, 0);
	return 1;
}

pgconn *cof_pg_begin(cof_meta *m, const char *mode, cof_err *err)
{
	pgconn *c = cof_pg_get(m, err);

	if (c && cof_pg_exec(c, mode ? mode : "BEGIN", err)) {
		cof_pg_put(m, c);
		return NULL;
	}
	return c;
}

int cof_pg_end(cof_meta *m, pgconn *c, int ok, cof_err *err)
{
	int rc = ok;

	if (ok == 0)
		rc = cof_pg_exec(c, "COMMIT", err);
	cof_pg_put(m, c);   /* rolls back what is still open */
	return rc;
}

int cof_pg_notify(pgconn *c, const char *payload, cof_err *err)
{
	return cof_pg_do(c, "SELECT pg_notify('coffer', $1)", "notifying", NULL, err, "s",
			 payload);
}

/* ------------------------------------------------------------- helpers */

int64_t cof_pg_int(PGresult *r, int row, int col)
{
	return PQgetisnull(r, row, col) ? 0 : strtoll(PQgetvalue(r, row, col), NULL, 10);
}

void cof_pg_copy(PGresult *r, int row, int col, char *out, size_t outsz)
{
	const char *s = PQgetvalue(r, row, col);
	size_t n = (size_t)PQgetlength(r, row, col);

	if (outsz == 0)
		return;
	if (n >= outsz)
		n = outsz - 1;
	memcpy(out, s, n);
	out[n] = '\0';
}

int cof_pg_bytea(PGresult *r, int row, int col, unsigned char **data, size_t *len)
{
	size_t n = 0;
	unsigned char *raw;

	*data = NULL;
	if (PQgetisnull(r, row, col))
		return 0;
	raw = PQunescapeBytea((const unsigned char *)PQgetvalue(r, row, col), &n);
	if (!raw || !(*data = cof_malloc(n + 1))) {
		PQfreemem(raw);
		return -1;
	}
	if (n)
		memcpy(*data, raw, n);
	(*data)[n] = '\0';
	PQfreemem(raw);
	if (len)
		*len = n;
	return 1;
}

/* ------------------------------------------------- the driver (store/sql.h) */

/* A pooled connection; BEGIN unless it is one statement (autocommit: one
 * round trip). A read is one snapshot, and says it writes nothing. */
static int pgd_begin(cof_sql_tx *tx, cof_err *err)
{
	const char *mode = tx->mode & COF_SQL_WRITE ? "BEGIN"
		: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY";

	if (tx->mode & COF_SQL_ONE) {
		tx->c = cof_pg_get(tx->m, err);
		return tx->c ? 0 : -1;
	}
	tx->c = cof_pg_begin(tx->m, mode, err);
	tx->began = tx->c != NULL;
	return tx->c ? 0 : -1;
}

static int pgd_end(cof_sql_tx *tx, int rc, cof_err *err)
{
	if (!tx->began) {
		cof_pg_put(tx->m, tx->c);
		return rc;
	}
	PGresult *r = NULL;
	if (rc >= 0) {
		r = PQexec(((pgconn *)tx->c)->db, "COMMIT");
		if (PQresultStatus(r) != PGRES_COMMAND_OK) {
			cof_pg_error(err, tx->c, r, "committing");
			rc = busy(r) ? COF_SQL_RETRY : -1;
		}
	}
	PQclear(r);
	cof_pg_put(tx->m, tx->c);   /* rolls back what is still open */
	return rc;
}

/* A statement of a change (tx->x: its batch, meta_pg_group.c): run with what
 * the change queued, in one pipeline. The result, or NULL (err filled). */
static PGresult *change_q(cof_sql_tx *tx, const char *sql, const char *what, cof_err *err,
			  const char *kinds, va_list ap)
{
	cof_pg_stmt s;

	if (stmt_fill(&s, sql, what, err, kinds, ap) || cof_pg_change_stmt(tx, &s, err))
		return NULL;
	return s.res;
}

static int pgd_exec(cof_sql_tx *tx, int64_t *changed, const char *sql, const char *what,
		    cof_err *err, const char *kinds, va_list ap)
{
	int retry = 0;
	PGresult *r = tx->x ? change_q(tx, sql, what, err, kinds, ap)
			    : vq_retry(tx->c, sql, what, err, &retry, kinds, ap);

	if (!r)
		return retry ? COF_SQL_RETRY : -1;
	if (changed)
		*changed = strtoll(PQcmdTuples(r), NULL, 10);
	PQclear(r);
	return 0;
}

static int pgd_query(cof_sql_tx *tx, const char *sql, const char *what, cof_sql_row_fn fn,
		     void *ctx, cof_err *err, const char *kinds, va_list ap)
{
	int retry = 0, rc = 0, n;
	PGresult *r = tx->x ? change_q(tx, sql, what, err, kinds, ap)
			    : vq_retry(tx->c, sql, what, err, &retry, kinds, ap);
	cof_sql_row row = { &cof_sql_pg, r, 0 };

	if (!r)
		return retry ? COF_SQL_RETRY : -1;
	n = PQntuples(r);
	for (; row.i < n && !rc; row.i++)
		rc = fn(ctx, &row, err);
	PQclear(r);
	return rc < 0 ? rc : n;
}

/* pgd_exec with its parameters given here. */
static int pgd_run(cof_sql_tx *tx, const char *sql, const char *what, cof_err *err,
		   const char *kinds, ...)
{
	va_list ap;
	va_start(ap, kinds);
	int rc = pgd_exec(tx, NULL, sql, what, err, kinds, ap);
	va_end(ap);
	return rc;
}

/* An advisory lock held to the commit: nodes share no process lock. The
 * same locks as before the seam: (int4, hashtext) with a name, else bigint. */
static int pgd_lock(cof_sql_tx *tx, int32_t space, const char *name, cof_err *err)
{
	if (!tx->began || !(tx->mode & COF_SQL_WRITE))
		return cof_error(err, COF_EINTERNAL, "metadata store: a lock outside a write");
	if (name)
		return pgd_run(tx, "SELECT pg_advisory_xact_lock(CAST(?1 AS integer), hashtext(?2))",
			       "taking a lock", err, "is", (int64_t)space, name);
	return pgd_run(tx, "SELECT pg_advisory_xact_lock(CAST(?1 AS bigint))", "taking a lock",
		       err, "i", (int64_t)space);
}

static const char *pgd_text(const cof_sql_row *r, int col, size_t *len)
{
	*len = (size_t)PQgetlength(r->res, r->i, col);
	return PQgetvalue(r->res, r->i, col);
}

static int64_t pgd_int64(const cof_sql_row *r, int col)
{
	return cof_pg_int(r->res, r->i, col);
}

static int pgd_isnull(const cof_sql_row *r, int col)
{
	return PQgetisnull(r->res, r->i, col);
}

static int pgd_blob(const cof_sql_row *r, int col, unsigned char **data, size_t *len)
{
	return cof_pg_bytea(r->res, r->i, col, data, len);
}

/* In a change, `to` queues it into its batch's pipeline or keeps it for the
 * batch's COMMIT (meta_pg_group.c); outside one it runs now. */
static int send_to(cof_sql_tx *tx, const char *sql, const char *what, cof_err *err,
		   const char *kinds, va_list ap,
		   int (*to)(cof_sql_tx *, const cof_pg_stmt *, cof_err *))
{
	cof_pg_stmt s;

	if (!tx->x)
		return pgd_exec(tx, NULL, sql, what, err, kinds, ap);
	if (stmt_fill(&s, sql, what, err, kinds, ap))
		return -1;
	return to(tx, &s, err);
}

static int pgd_send(cof_sql_tx *tx, const char *sql, const char *what, cof_err *err,
		    const char *kinds, va_list ap)
{
	return send_to(tx, sql, what, err, kinds, ap, cof_pg_change_send);
}

static int pgd_send_last(cof_sql_tx *tx, const char *sql, const char *what, cof_err *err,
			 const char *kinds, va_list ap)
{
	return send_to(tx, sql, what, err, kinds, ap, cof_pg_change_last);
}

/* The fork listing runs its own statements on the connection: what a change
 * queued goes first. */
static int pgd_fork_list(cof_sql_tx *tx, int64_t vno, int64_t at_seq, const char *prefix,
			 const char *upper, const char *after, cof_entry_fn fn, void *ctx,
			 cof_err *err)
{
	if (cof_pg_change_sync(tx, err))
		return -1;
	return cof_pg_fork_list(tx, vno, at_seq, prefix, upper, after, fn, ctx, err);
}

const cof_sql_driver cof_sql_pg = {
	.name = "postgres", .local = 0, .claims = 1, .begin = pgd_begin, .end = pgd_end, .exec = pgd_exec,
	.query = pgd_query, .lock = pgd_lock, .mark = NULL,
	.text = pgd_text, .int64 = pgd_int64, .isnull = pgd_isnull, .blob = pgd_blob,
	.fork_list = pgd_fork_list, .change_begin = cof_pg_change_begin,
	.change_end = cof_pg_change_end, .send = pgd_send, .send_last = pgd_send_last,
};

/* ------------------------------------------------------------ open, close */

static void pg_close(cof_meta *m)
{
	pg_meta *p = PGM(m);

	if (!p)
		return;
	while (p->idle) {
		pgconn *c = p->idle;
		p->idle = c->next;
		conn_close(c);
	}
	cof_pg_groups_free(p);
	pthread_mutex_destroy(&p->plock);
	pthread_mutex_destroy(&p->glock);
	free(p->url);
	free(p);
}

static cof_meta_ops pg_ops;

static void ops_fill(void)
{
	pg_ops.name = "postgres";
	pg_ops.list_streams = 0;   /* a cursor's first FETCH reads 512 rows */
	pg_ops.remote = 1;
	pg_ops.close = pg_close;
}

int cof_meta_pg_open(const char *url, cof_meta **out, cof_err *err)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pg_meta *p = cof_calloc(1, sizeof *p);
	pgconn *c;

	pthread_once(&once, ops_fill);
	if (!p || !(p->url = cof_strdup(url))) {
		free(p);
		return cof_error(err, COF_EINTERNAL, "out of memory");
	}
	p->base.ops = &pg_ops;
	p->base.sql = &cof_sql_pg;
	pthread_mutex_init(&p->plock, NULL);
	pthread_mutex_init(&p->glock, NULL);
	if (!(c = cof_pg_get(&p->base, err)) || migrate(c, err)) {
		conn_close(c);
		pg_close(&p->base);
		return -1;
	}
	cof_pg_put(&p->base, c);
	*out = &p->base;
	return 0;
}
