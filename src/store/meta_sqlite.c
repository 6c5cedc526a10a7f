/*
 * meta_sqlite.c — the metadata store (meta.h) on SQLite in WAL mode.
 *
 * One writer connection behind a mutex (SQLite allows one writer at a time
 * anyway; taking the mutex first avoids busy retries), whose concurrent
 * changes commit in batches (meta_sqlite_commit.c), and a pool of reader
 * connections, each used by one thread at a time. Statements are prepared once
 * per connection and cached by the address of their SQL text.
 * synchronous=FULL: an acknowledged change survives power loss. The schema
 * is written once for both drivers (schema.c); here are SQLite's upgrade
 * steps to it.
 */
#include <assert.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "store/meta_sqlite.h"

/* ------------------------------------------------------------ connections */

int cof_sqlite_db_error(cof_err *err, sqlite3 *db, const char *what)
{
	int rc = sqlite3_errcode(db);

	if (rc == SQLITE_FULL)
		return cof_error(err, COF_EUNAVAILABLE,
				 "the server's disk is full; %s refused", what);
	if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED)
		return cof_error(err, COF_EUNAVAILABLE, "the store is busy; retry %s", what);
	return cof_error(err, COF_EINTERNAL, "metadata store: %s: %s", what,
			 sqlite3_errmsg(db));
}

static void conn_close(conn *c)
{
	if (!c)
		return;
	for (int i = 0; i < STMT_CACHE; i++)
		sqlite3_finalize(c->cache[i].st);
	sqlite3_close(c->db);
	free(c);
}

static conn *conn_open(const char *file, int writer, cof_err *err)
{
	conn *c = cof_calloc(1, sizeof *c);
	int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX |
		    (writer ? SQLITE_OPEN_CREATE : 0);

	if (!c) {
		cof_error(err, COF_EINTERNAL, "out of memory");
		return NULL;
	}
	if (sqlite3_open_v2(file, &c->db, flags, NULL) != SQLITE_OK) {
		cof_error(err, COF_EINTERNAL, "cannot open '%s': %s", file,
			  c->db ? sqlite3_errmsg(c->db) : "out of memory");
		conn_close(c);
		return NULL;
	}
	sqlite3_busy_timeout(c->db, 10000);
	/* mmap lets every connection share the OS page cache instead of each
	 * keeping its own copy of hot pages. */
	sqlite3_exec(c->db, "PRAGMA synchronous=FULL; PRAGMA temp_store=MEMORY;"
		     "PRAGMA cache_size=-16000; PRAGMA mmap_size=1073741824;", NULL, NULL, NULL);
	return c;
}

/* A cached, reset statement for `sql` (which must be a string literal). */
sqlite3_stmt *cof_sqlite_q(conn *c, const char *sql, cof_err *err)
{
	int free_slot = -1;

	for (int i = 0; i < STMT_CACHE; i++) {
		if (c->cache[i].sql == sql) {
			sqlite3_reset(c->cache[i].st);
			sqlite3_clear_bindings(c->cache[i].st);
			return c->cache[i].st;
		}
		if (!c->cache[i].sql && free_slot < 0)
			free_slot = i;
	}
	sqlite3_stmt *st;
	/* shared SQL (store/sql.h): its dialect tokens expanded, once per text */
	char *text = strchr(sql, '{') ? cof_sql_rewrite(sql, 0, cof_sqlite_tokens) : NULL;
	if (strchr(sql, '{') && !text) {
		cof_error(err, COF_EINTERNAL, "out of memory");
		return NULL;
	}
	int bad = sqlite3_prepare_v3(c->db, text ? text : sql, -1, SQLITE_PREPARE_PERSISTENT,
				     &st, NULL);
	free(text);
	if (bad) {
		cof_sqlite_db_error(err, c->db, "prepare");
		return NULL;
	}
	/* The cache holds every statement of the store's files (STMT_CACHE is
	 * about twice their count); running out is a bug, not a load condition. */
	assert(free_slot >= 0);
	if (free_slot < 0) {
		sqlite3_finalize(st);
		cof_error(err, COF_EINTERNAL, "metadata store: statement cache full");
		return NULL;
	}
	c->cache[free_slot].sql = sql;
	c->cache[free_slot].st = st;
	return st;
}

/* The reader a pinned thread keeps (cof_meta_pin_reader): of the store
 * whose serial it names; `busy` while a read of this thread uses it, so a
 * read nested in another takes a second one from the pool. */
static _Thread_local struct {
	int pin;
	uint64_t serial;
	conn *c;
	int busy;
	int lazy;        /* a hold's BEGIN not run yet: no read has needed it */
} tl_reader;

void cof_meta_pin_reader(void)
{
	tl_reader.pin = 1;
}

/* Runs `sql` (a literal: BEGIN, COMMIT, ROLLBACK) on c through its cache. */
static int run_cached(conn *c, const char *sql)
{
	cof_err err = { 0 };
	sqlite3_stmt *st = cof_sqlite_q(c, sql, &err);
	int rc = st ? sqlite3_step(st) : SQLITE_ERROR;

	if (st)
		sqlite3_reset(st);
	cof_err_clear(&err);
	return rc == SQLITE_DONE ? 0 : -1;
}

int cof_meta_read_hold(cof_meta *m)
{
	conn *c = tl_reader.c;

	if (!m || m->ops != cof_meta_sqlite_ops() || !c || tl_reader.busy || tl_reader.lazy ||
	    tl_reader.serial != SQ(m)->serial || !sqlite3_get_autocommit(c->db))
		return 0;
	/* The BEGIN waits for the first read of the reader (cof_sqlite_reader_get):
	 * when every row is kept (meta_sqlite_cache.c) none is run. The mark is
	 * taken now, before any read can take the snapshot. */
	tl_reader.lazy = 1;
	cof_sqlite_cache_hold(m, 1);
	return 1;
}

void cof_meta_read_release(cof_meta *m, int held)
{
	conn *c = tl_reader.c;

	if (!held || !c || tl_reader.serial != SQ(m)->serial)
		return;
	cof_sqlite_cache_hold(m, 0);
	if (tl_reader.lazy) {
		tl_reader.lazy = 0;  /* nothing was read: no transaction to end */
		return;
	}
	if (sqlite3_get_autocommit(c->db))
		return;
	if (run_cached(c, "COMMIT") != 0 && !sqlite3_get_autocommit(c->db))
		(void)run_cached(c, "ROLLBACK");
}

conn *cof_sqlite_pinned(cof_meta *m)
{
	return tl_reader.c && tl_reader.serial == SQ(m)->serial ? tl_reader.c : NULL;
}

conn *cof_sqlite_reader_get(cof_meta *m, cof_err *err)
{
	conn *c;

	if (tl_reader.c && tl_reader.serial == SQ(m)->serial && !tl_reader.busy) {
		tl_reader.busy = 1;
		if (tl_reader.lazy) {  /* the hold's first read: its transaction */
			tl_reader.lazy = 0;
			(void)run_cached(tl_reader.c, "BEGIN");
		}
		return tl_reader.c;
	}
	pthread_mutex_lock(&SQ(m)->plock);
	c = SQ(m)->idle;
	if (c) {
		SQ(m)->idle = c->next;
		SQ(m)->nidle--;
	}
	pthread_mutex_unlock(&SQ(m)->plock);
	return c ? c : conn_open(SQ(m)->file, 0, err);
}

/* Keeps `c` as the calling pinned thread's own reader of m when it has none
 * yet and m has room. 1 when kept. A thread's slot naming a closed store is
 * free: that store closed the connection with its pinned list. */
static int reader_pin(cof_meta *m, conn *c)
{
	int kept = 0;

	if (!tl_reader.pin || (tl_reader.c && tl_reader.serial == SQ(m)->serial))
		return 0;
	pthread_mutex_lock(&SQ(m)->plock);
	if (SQ(m)->npinned < POOL_PINNED) {
		c->next = SQ(m)->pinned;
		SQ(m)->pinned = c;
		SQ(m)->npinned++;
		kept = 1;
	}
	pthread_mutex_unlock(&SQ(m)->plock);
	if (kept) {
		tl_reader.serial = SQ(m)->serial;
		tl_reader.c = c;
		tl_reader.busy = 0;
	}
	return kept;
}

/* Resets any statement of c a read left stepping: it would keep its read
 * transaction, so its snapshot, open into the next read on the connection
 * (a pinned one serves every request of its thread: stale reads). */
static void reset_busy(conn *c)
{
	for (sqlite3_stmt *st = sqlite3_next_stmt(c->db, NULL); st;
	     st = sqlite3_next_stmt(c->db, st))
		if (sqlite3_stmt_busy(st))
			sqlite3_reset(st);
}

void cof_sqlite_reader_put(cof_meta *m, conn *c)
{
	if (!c)
		return;
	reset_busy(c);
	if (c == tl_reader.c && tl_reader.serial == SQ(m)->serial) {
		tl_reader.busy = 0;
		return;
	}
	if (reader_pin(m, c))
		return;
	pthread_mutex_lock(&SQ(m)->plock);
	if (SQ(m)->nidle < POOL_IDLE) {
		c->next = SQ(m)->idle;
		SQ(m)->idle = c;
		SQ(m)->nidle++;
		c = NULL;
	}
	pthread_mutex_unlock(&SQ(m)->plock);
	conn_close(c);
}

int cof_sqlite_exec(conn *c, const char *sql, cof_err *err)
{
	if (sqlite3_exec(c->db, sql, NULL, NULL, NULL) != SQLITE_OK)
		return cof_sqlite_db_error(err, c->db, sql);
	return 0;
}

/* The schema's version, in PRAGMA user_version. Each step brings a data dir
 * made by an older cofferd up to date; the schema written once (schema.c) is
 * always the newest. */
#define SCHEMA_VERSION 7

static int column_exists(conn *c, const char *table, const char *column)
{
	sqlite3_stmt *st;
	int found = 0;

	if (sqlite3_prepare_v2(c->db, "SELECT 1 FROM pragma_table_info(?) WHERE name = ?", -1,
			       &st, NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, column, -1, SQLITE_STATIC);
	found = sqlite3_step(st) == SQLITE_ROW;
	sqlite3_finalize(st);
	return found;
}

/* The data dir's schema version; one newer than this binary knows is refused
 * before anything is written to it (docs/design.md, "Schema versions"). */
static int schema_version(conn *c, int *version, cof_err *err)
{
	sqlite3_stmt *st;

	*version = 0;
	if (sqlite3_prepare_v2(c->db, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW)
			*version = sqlite3_column_int(st, 0);
		sqlite3_finalize(st);
	}
	if (*version > SCHEMA_VERSION)
		return cof_error(err, COF_EINTERNAL,
				 "the data dir was written by a newer cofferd (schema %d; this one, "
				 "coffer %s, knows schema %d): run that release or a newer one, or "
				 "restore a backup taken before the upgrade", *version,
				 COFFER_VERSION, SCHEMA_VERSION);
	return 0;
}

static int run_items_id(conn *c, cof_err *err);

static int migrate(conn *c, cof_err *err)
{
	int version;

	if (schema_version(c, &version, err))
		return -1;
	/* 0 -> 1: small content inline in blobs.data. */
	if (version < 1 && !column_exists(c, "blobs", "data") &&
	    cof_sqlite_exec(c, "ALTER TABLE blobs ADD COLUMN data BLOB", err))
		return -1;
	/* 1 -> 2: forks refer to their parent at a seq (docs/design.md, "Forks");
	 * a volume deleted while forks refer to it is kept as `retired`. Adding
	 * columns with constant defaults rewrites no row. */
	if (version < 2 && !column_exists(c, "volumes", "base_vno") &&
	    cof_sqlite_exec(c, "ALTER TABLE volumes ADD COLUMN base_vno INTEGER;"
			    "ALTER TABLE volumes ADD COLUMN base_seq INTEGER NOT NULL DEFAULT 0;"
			    "ALTER TABLE volumes ADD COLUMN depth INTEGER NOT NULL DEFAULT 0;"
			    "ALTER TABLE volumes ADD COLUMN retired INTEGER NOT NULL DEFAULT 0", err))
		return -1;
	/* 1 -> 2: the state and events tables, made by cof_schema_tables. */

	/* 1 -> 2: the key lifecycle: ids (from the hash, as the request log
	 * names keys), names, read-only, expiry, revocation, last use. */
	if (version < 2 && !column_exists(c, "keys", "id") &&
	    (cof_sqlite_exec(c, "ALTER TABLE keys ADD COLUMN id TEXT NOT NULL DEFAULT '';"
			     "ALTER TABLE keys ADD COLUMN name TEXT NOT NULL DEFAULT '';"
			     "ALTER TABLE keys ADD COLUMN read_only INTEGER NOT NULL DEFAULT 0;"
			     "ALTER TABLE keys ADD COLUMN expires_at INTEGER NOT NULL DEFAULT 0;"
			     "ALTER TABLE keys ADD COLUMN revoked_at INTEGER NOT NULL DEFAULT 0;"
			     "ALTER TABLE keys ADD COLUMN last_used_at INTEGER NOT NULL DEFAULT 0",
			     err)))
		return -1;
	/* (their unique index keys_id comes with the other indexes, after) */
	if (version < 2 &&
	    cof_sqlite_exec(c, "UPDATE keys SET id = 'k_' || substr(hash, 1, 16) WHERE id = ''",
			    err))
		return -1;
	/* 2 -> 3: the index state_live (cof_schema_indexes). */
	/* 3 -> 4: who made each change (API.md "Who"); older rows read null. */
	if (version < 4 && !column_exists(c, "changes", "who") &&
	    cof_sqlite_exec(c, "ALTER TABLE changes ADD COLUMN who TEXT", err))
		return -1;
	/* 3 -> 4: the index changes_path, a path's history (cof_schema_indexes). */
	/* 4 -> 5: a run's and a call's changes (revert, ?runId=, ?callId=) by an
	 * index range, not a walk of the volume's feed. 6 -> 7: on the
	 * expression the feed written once uses (meta_changes.c: `who ->> 'runId'`,
	 * PostgreSQL's `who::jsonb ->> 'runId'`), where 5 had json_extract: SQLite
	 * uses an expression index only for the query's own expression. */
	if (version < 7 && cof_sqlite_exec(c, "DROP INDEX IF EXISTS changes_run;"
					   "DROP INDEX IF EXISTS changes_call", err))
		return -1;
	/* 5 -> 6: the S3 gateway's text of each version (user metadata, MD5:
	 * docs/s3.md); older rows read null. */
	if (version < 6 && !column_exists(c, "entries", "s3meta") &&
	    cof_sqlite_exec(c, "ALTER TABLE entries ADD COLUMN s3meta TEXT", err))
		return -1;
	if (version < 6 && !column_exists(c, "changes", "s3meta") &&
	    cof_sqlite_exec(c, "ALTER TABLE changes ADD COLUMN s3meta TEXT", err))
		return -1;
	/* 6 -> 7: one schema with PostgreSQL's (schema.c): the collector's claim
	 * columns (unused here: the driver says no `claims`), run_items' id and
	 * the index changes_at. */
	if (version < 7 && !column_exists(c, "blobs", "pending_at") &&
	    cof_sqlite_exec(c, "ALTER TABLE blobs ADD COLUMN pending_at bigint;"
			    "ALTER TABLE blobs ADD COLUMN claimed_at bigint", err))
		return -1;
	if (version < 7 && !column_exists(c, "run_items", "id") && run_items_id(c, err))
		return -1;
	return 0;
}

/* Runs a text of the schema (schema.c) on c, its tokens expanded. */
static int schema_run(conn *c, const char *text, cof_err *err)
{
	char *sql = cof_sql_rewrite(text, 0, cof_sqlite_tokens);
	int rc;

	if (!sql)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	rc = sqlite3_exec(c->db, sql, NULL, NULL, NULL) != SQLITE_OK ?
		cof_sqlite_db_error(err, c->db, "making the schema") : 0;
	free(sql);
	return rc;
}

/* run_items gets the id PostgreSQL's has: a key numbered on insert, here its
 * rowid under a name (a column no ALTER can add). The table is made again
 * from the schema and its rows copied, their rowids kept as ids (the order
 * of {rowid}), in one transaction. */
static int run_items_id(conn *c, cof_err *err)
{
	if (cof_sqlite_exec(c, "BEGIN", err))
		return -1;
	if (cof_sqlite_exec(c, "ALTER TABLE run_items RENAME TO run_items_6", err) ||
	    schema_run(c, cof_schema_tables, err) ||
	    cof_sqlite_exec(c, "INSERT INTO run_items(id, org, agent, run, kind, path, version,"
			    " size, ctype, caption, url) SELECT rowid, org, agent, run, kind, path,"
			    " version, size, ctype, caption, url FROM run_items_6;"
			    "DROP TABLE run_items_6; COMMIT", err)) {
		sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
		return -1;
	}
	return 0;
}

/* The schema of schema.c: a new database is made from it; an older one is
 * brought to it, its tables first (IF NOT EXISTS: the ones added since), the
 * steps of migrate (columns, data; none applies to a new one), then the
 * indexes, then the version. */
static int schema_setup(conn *c, cof_err *err)
{
	int version;

	if (schema_version(c, &version, err) || schema_run(c, cof_schema_tables, err) ||
	    migrate(c, err) || schema_run(c, cof_schema_indexes, err))
		return -1;
	if (version < SCHEMA_VERSION)
		return cof_sqlite_exec(c, "PRAGMA user_version = 7", err);
	return 0;
}

static void sq_close(cof_meta *m);
static cof_meta_ops sqlite_ops;

/* The table of the SQLite backend: each file of it fills its own members,
 * so that every function stays static to its file. */
static void ops_fill(void)
{
	sqlite_ops.name = "sqlite";
	sqlite_ops.list_streams = 1;
	sqlite_ops.remote = 0;
	cof_sqlite_ops_main(&sqlite_ops);
}

/* The SQLite backend's table of functions, filled once. */
const cof_meta_ops *cof_meta_sqlite_ops(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, ops_fill);
	return &sqlite_ops;
}

static pthread_once_t sqlite_once = PTHREAD_ONCE_INIT;
static uint64_t serials;

/* Before SQLite's first use: no global memory statistics, which cost a
 * process-wide mutex on every allocation of every connection (coffer never
 * reads them). Refused harmlessly when SQLite was initialised already. */
static void sqlite_setup(void)
{
	(void)sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

/* Opens (creating if needed) the database `file`, brings its schema up to
 * date and returns the store behind cof_meta_sqlite_ops(). */
int cof_meta_sqlite_open(const char *file, cof_meta **out, cof_err *err)
{
	sq_meta *s = cof_calloc(1, sizeof *s);
	cof_meta *m = (cof_meta *)s;
	int fd;

	/* SQLite gives its -wal and -shm files the database file's mode: 0600. */
	if ((fd = open(file, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) >= 0)
		close(fd);
	if (!s || !(s->file = cof_strdup(file))) {
		free(s);
		return cof_error(err, COF_EINTERNAL, "out of memory");
	}
	m->ops = cof_meta_sqlite_ops();
	m->sql = &cof_sql_sqlite;
	pthread_once(&sqlite_once, sqlite_setup);
	s->serial = __atomic_add_fetch(&serials, 1, __ATOMIC_RELAXED);
	pthread_mutex_init(&s->wlock, NULL);
	pthread_mutex_init(&s->plock, NULL);
	pthread_mutex_init(&s->flock, NULL);
	pthread_cond_init(&s->fdone, NULL);
	s->writer = conn_open(file, 1, err);
	int version;
	if (!s->writer || schema_version(s->writer, &version, err) ||
	    cof_sqlite_exec(s->writer, "PRAGMA journal_mode=WAL", err) ||
	    schema_setup(s->writer, err)) {
		sq_close(m);
		return -1;
	}
	*out = m;
	return 0;
}

/* Checkpoints the WAL and frees the store. */
static void sq_close(cof_meta *m)
{
	sq_meta *s = SQ(m);

	if (!m)
		return;
	while (s->idle) {
		conn *c = s->idle;
		s->idle = c->next;
		conn_close(c);
	}
	while (s->pinned) {
		conn *c = s->pinned;
		s->pinned = c->next;
		conn_close(c);
	}
	if (s->writer)
		sqlite3_exec(s->writer->db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL);
	conn_close(s->writer);
	pthread_mutex_destroy(&s->wlock);
	pthread_mutex_destroy(&s->plock);
	pthread_mutex_destroy(&s->flock);
	pthread_cond_destroy(&s->fdone);
	free(s->file);
	free(s);
}

/* Fills the members of the SQLite backend this file implements. */
void cof_sqlite_ops_main(cof_meta_ops *o)
{
	o->close = sq_close;
}
