/*
 * meta_sqlite.c — the metadata store (meta.h) on SQLite in WAL mode.
 *
 * One writer connection behind a mutex (SQLite allows one writer at a time
 * anyway; taking the mutex first avoids busy retries) and a pool of reader
 * connections, each used by one thread at a time. Statements are prepared once
 * per connection and cached by the address of their SQL text.
 * synchronous=FULL: an acknowledged change survives power loss.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include "store/meta_sqlite.h"

static const char *schema =
	"CREATE TABLE IF NOT EXISTS keys(hash TEXT PRIMARY KEY, org TEXT NOT NULL,"
	" agent TEXT NOT NULL DEFAULT '', admin INTEGER NOT NULL DEFAULT 0,"
	" created_at INTEGER NOT NULL) WITHOUT ROWID;"
	"CREATE TABLE IF NOT EXISTS volumes(vno INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE,"
	" org TEXT NOT NULL, name TEXT NOT NULL, seq INTEGER NOT NULL, files INTEGER NOT NULL,"
	" bytes INTEGER NOT NULL, capacity INTEGER NOT NULL, ceiling INTEGER NOT NULL,"
	" created_at INTEGER NOT NULL, hidden INTEGER NOT NULL DEFAULT 0,"
	" history_from INTEGER NOT NULL DEFAULT 0);"
	"CREATE INDEX IF NOT EXISTS volumes_org_name ON volumes(org, name, id);"
	"CREATE TABLE IF NOT EXISTS entries(vno INTEGER NOT NULL, path TEXT NOT NULL,"
	" from_seq INTEGER NOT NULL, to_seq INTEGER, version INTEGER NOT NULL,"
	" size INTEGER NOT NULL, sha256 TEXT NOT NULL, ctype TEXT NOT NULL,"
	" updated_at INTEGER NOT NULL, closed_at INTEGER,"
	" PRIMARY KEY(vno, path, from_seq)) WITHOUT ROWID;"
	"CREATE UNIQUE INDEX IF NOT EXISTS entries_live ON entries(vno, path) WHERE to_seq IS NULL;"
	"CREATE INDEX IF NOT EXISTS entries_sha ON entries(sha256);"
	"CREATE INDEX IF NOT EXISTS entries_closed ON entries(closed_at) WHERE to_seq IS NOT NULL;"
	"CREATE TABLE IF NOT EXISTS changes(vno INTEGER NOT NULL, seq INTEGER NOT NULL,"
	" path TEXT NOT NULL, removed INTEGER NOT NULL, version INTEGER NOT NULL,"
	" size INTEGER NOT NULL, sha256 TEXT NOT NULL, at INTEGER NOT NULL,"
	" PRIMARY KEY(vno, seq, path)) WITHOUT ROWID;"
	"CREATE TABLE IF NOT EXISTS snapshots(id TEXT PRIMARY KEY, vno INTEGER NOT NULL,"
	" src_vno INTEGER NOT NULL, seq INTEGER NOT NULL, pinned INTEGER NOT NULL,"
	" labels TEXT NOT NULL, files INTEGER NOT NULL, bytes INTEGER NOT NULL,"
	" created_at INTEGER NOT NULL, ord INTEGER NOT NULL);"
	"CREATE INDEX IF NOT EXISTS snapshots_vol ON snapshots(vno, ord);"
	"CREATE INDEX IF NOT EXISTS snapshots_src ON snapshots(src_vno, seq);"
	"CREATE TABLE IF NOT EXISTS blobs(sha256 TEXT PRIMARY KEY, size INTEGER NOT NULL,"
	" orphan_since INTEGER, data BLOB);"
	"CREATE TABLE IF NOT EXISTS agents(org TEXT NOT NULL, id TEXT NOT NULL,"
	" workspace TEXT NOT NULL, settings TEXT NOT NULL, created_at INTEGER NOT NULL,"
	" PRIMARY KEY(org, id)) WITHOUT ROWID;"
	"CREATE TABLE IF NOT EXISTS seen(org TEXT NOT NULL, agent TEXT NOT NULL,"
	" vol TEXT NOT NULL, path TEXT NOT NULL, version INTEGER NOT NULL,"
	" sha256 TEXT NOT NULL, PRIMARY KEY(org, agent, vol, path)) WITHOUT ROWID;"
	"CREATE TABLE IF NOT EXISTS run_items(org TEXT NOT NULL, agent TEXT NOT NULL,"
	" run TEXT NOT NULL, kind TEXT NOT NULL, path TEXT NOT NULL, version INTEGER NOT NULL,"
	" size INTEGER NOT NULL, ctype TEXT NOT NULL, caption TEXT NOT NULL, url TEXT NOT NULL,"
	" UNIQUE(org, agent, run, kind, path));"
	"CREATE TABLE IF NOT EXISTS pins(org TEXT NOT NULL, agent TEXT NOT NULL,"
	" sha256 TEXT NOT NULL, PRIMARY KEY(org, agent, sha256)) WITHOUT ROWID;"
	"CREATE INDEX IF NOT EXISTS pins_sha ON pins(sha256);"
	"CREATE TABLE IF NOT EXISTS idem(scope TEXT NOT NULL, key TEXT NOT NULL,"
	" value TEXT NOT NULL, created_at INTEGER NOT NULL, PRIMARY KEY(scope, key)) WITHOUT ROWID;"
	"CREATE TABLE IF NOT EXISTS subjects(org TEXT NOT NULL, agent TEXT NOT NULL,"
	" subject TEXT NOT NULL, vol TEXT NOT NULL, created_at INTEGER NOT NULL,"
	" PRIMARY KEY(org, agent, subject)) WITHOUT ROWID;";

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
	if (sqlite3_prepare_v3(c->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL)) {
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

conn *cof_sqlite_reader_get(cof_meta *m, cof_err *err)
{
	conn *c;

	pthread_mutex_lock(&m->plock);
	c = m->idle;
	if (c) {
		m->idle = c->next;
		m->nidle--;
	}
	pthread_mutex_unlock(&m->plock);
	return c ? c : conn_open(m->file, 0, err);
}

void cof_sqlite_reader_put(cof_meta *m, conn *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&m->plock);
	if (m->nidle < POOL_IDLE) {
		c->next = m->idle;
		m->idle = c;
		m->nidle++;
		c = NULL;
	}
	pthread_mutex_unlock(&m->plock);
	conn_close(c);
}

int cof_sqlite_exec(conn *c, const char *sql, cof_err *err)
{
	if (sqlite3_exec(c->db, sql, NULL, NULL, NULL) != SQLITE_OK)
		return cof_sqlite_db_error(err, c->db, sql);
	return 0;
}

/* Takes the writer and opens a write transaction. */
conn *cof_sqlite_writer_begin(cof_meta *m, cof_err *err)
{
	pthread_mutex_lock(&m->wlock);
	if (cof_sqlite_exec(m->writer, "BEGIN IMMEDIATE", err)) {
		pthread_mutex_unlock(&m->wlock);
		return NULL;
	}
	return m->writer;
}

/* Commits (ok == 0) or rolls back, and gives the writer back. */
int cof_sqlite_writer_end(cof_meta *m, int ok, cof_err *err)
{
	int rc = ok;

	if (ok == 0)
		rc = cof_sqlite_exec(m->writer, "COMMIT", err);
	if (rc != 0)
		sqlite3_exec(m->writer->db, "ROLLBACK", NULL, NULL, NULL);
	pthread_mutex_unlock(&m->wlock);
	return rc;
}

/* The schema's version, in PRAGMA user_version. Each step brings a data dir
 * made by an older cofferd up to date; `schema` above is always the newest. */
#define SCHEMA_VERSION 1

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

static int migrate(conn *c, cof_err *err)
{
	sqlite3_stmt *st;
	int version = 0;

	if (sqlite3_prepare_v2(c->db, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW)
			version = sqlite3_column_int(st, 0);
		sqlite3_finalize(st);
	}
	if (version > SCHEMA_VERSION)
		return cof_error(err, COF_EINTERNAL,
				 "the data dir was written by a newer cofferd (schema %d; this one "
				 "knows %d)", version, SCHEMA_VERSION);
	/* 0 -> 1: small content inline in blobs.data. */
	if (version < 1 && !column_exists(c, "blobs", "data") &&
	    cof_sqlite_exec(c, "ALTER TABLE blobs ADD COLUMN data BLOB", err))
		return -1;
	if (version < SCHEMA_VERSION)
		return cof_sqlite_exec(c, "PRAGMA user_version = 1", err);
	return 0;
}

int cof_meta_open(const char *file, cof_meta **out, cof_err *err)
{
	cof_meta *m = cof_calloc(1, sizeof *m);

	if (!m || !(m->file = cof_strdup(file))) {
		free(m);
		return cof_error(err, COF_EINTERNAL, "out of memory");
	}
	pthread_mutex_init(&m->wlock, NULL);
	pthread_mutex_init(&m->plock, NULL);
	m->writer = conn_open(file, 1, err);
	if (!m->writer || cof_sqlite_exec(m->writer, "PRAGMA journal_mode=WAL", err) ||
	    cof_sqlite_exec(m->writer, schema, err) || migrate(m->writer, err)) {
		cof_meta_close(m);
		return -1;
	}
	*out = m;
	return 0;
}

void cof_meta_close(cof_meta *m)
{
	if (!m)
		return;
	while (m->idle) {
		conn *c = m->idle;
		m->idle = c->next;
		conn_close(c);
	}
	if (m->writer)
		sqlite3_exec(m->writer->db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL);
	conn_close(m->writer);
	pthread_mutex_destroy(&m->wlock);
	pthread_mutex_destroy(&m->plock);
	free(m->file);
	free(m);
}

/* ------------------------------------------------------------- helpers */

void cof_sqlite_bind_text(sqlite3_stmt *st, int i, const char *s)
{
	sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC);
}

void cof_sqlite_col_copy(sqlite3_stmt *st, int i, char *out, size_t outsz)
{
	const unsigned char *s = sqlite3_column_text(st, i);
	int n = sqlite3_column_bytes(st, i);

	if (!s || outsz == 0) {
		if (outsz)
			out[0] = '\0';
		return;
	}
	if ((size_t)n >= outsz)
		n = (int)outsz - 1;
	memcpy(out, s, (size_t)n);
	out[n] = '\0';
}

/* Upper bound for a prefix range: every UTF-8 path starting with `prefix`
 * sorts below prefix + 0xFF (0xFF never occurs in UTF-8). */
void cof_sqlite_prefix_bounds(sqlite3_stmt *st, int lo, int hi, const char *prefix,
			  cof_buf *upper)
{
	cof_buf_reset(upper);
	cof_buf_adds(upper, prefix ? prefix : "");
	cof_buf_add(upper, "\xff", 1);
	cof_sqlite_bind_text(st, lo, prefix ? prefix : "");
	sqlite3_bind_text(st, hi, upper->data, (int)upper->len, SQLITE_STATIC);
}

void cof_sqlite_row_entry(sqlite3_stmt *st, cof_entry *e)
{
	cof_sqlite_col_copy(st, 0, e->path, sizeof e->path);
	e->version = sqlite3_column_int64(st, 1);
	e->size = sqlite3_column_int64(st, 2);
	cof_sqlite_col_copy(st, 3, e->sha256, sizeof e->sha256);
	cof_sqlite_col_copy(st, 4, e->ctype, sizeof e->ctype);
	e->updated_at = sqlite3_column_int64(st, 5);
}

/* ---------------------------------------------------- keys, idempotency */

int cof_meta_key_add(cof_meta *m, const char *hash, const cof_principal *who, cof_err *err)
{
	conn *c = cof_sqlite_writer_begin(m, err);
	sqlite3_stmt *st;
	int rc = -1;

	if (!c)
		return -1;
	st = cof_sqlite_q(c, "INSERT INTO keys(hash, org, agent, admin, created_at) VALUES(?,?,?,?,?)", err);
	if (st) {
		cof_sqlite_bind_text(st, 1, hash);
		cof_sqlite_bind_text(st, 2, who->org);
		cof_sqlite_bind_text(st, 3, who->agent);
		sqlite3_bind_int(st, 4, who->admin);
		sqlite3_bind_int64(st, 5, cof_now());
		rc = sqlite3_step(st) == SQLITE_DONE ? 0 : cof_sqlite_db_error(err, c->db, "adding a key");
	}
	return cof_sqlite_writer_end(m, rc, err);
}

int cof_meta_key_find(cof_meta *m, const char *hash, cof_principal *who, cof_err *err)
{
	conn *c = cof_sqlite_reader_get(m, err);
	sqlite3_stmt *st;
	int rc = -1;

	if (!c)
		return -1;
	st = cof_sqlite_q(c, "SELECT org, agent, admin FROM keys WHERE hash = ?", err);
	if (st) {
		cof_sqlite_bind_text(st, 1, hash);
		int r = sqlite3_step(st);
		if (r == SQLITE_ROW) {
			cof_sqlite_col_copy(st, 0, who->org, sizeof who->org);
			cof_sqlite_col_copy(st, 1, who->agent, sizeof who->agent);
			who->admin = sqlite3_column_int(st, 2);
			rc = 0;
		} else if (r == SQLITE_DONE) {
			rc = cof_error(err, COF_EUNAUTHORIZED, "the API key is not valid");
		} else {
			rc = cof_sqlite_db_error(err, c->db, "checking a key");
		}
		sqlite3_reset(st);
	}
	cof_sqlite_reader_put(m, c);
	return rc;
}

int cof_meta_idem_get(cof_meta *m, const char *scope, const char *key, int64_t ttl,
		      char **value, cof_err *err)
{
	conn *c = cof_sqlite_reader_get(m, err);
	sqlite3_stmt *st;
	int rc = -1;

	if (!c)
		return -1;
	st = cof_sqlite_q(c, "SELECT value FROM idem WHERE scope = ? AND key = ? AND created_at > ?", err);
	if (st) {
		cof_sqlite_bind_text(st, 1, scope);
		cof_sqlite_bind_text(st, 2, key);
		sqlite3_bind_int64(st, 3, cof_now() - ttl);
		int r = sqlite3_step(st);
		if (r == SQLITE_ROW) {
			*value = cof_strdup((const char *)sqlite3_column_text(st, 0));
			rc = *value ? 1 : cof_error(err, COF_EINTERNAL, "out of memory");
		} else {
			rc = r == SQLITE_DONE ? 0 : cof_sqlite_db_error(err, c->db, "idempotency");
		}
		sqlite3_reset(st);
	}
	cof_sqlite_reader_put(m, c);
	return rc;
}

int cof_meta_idem_put(cof_meta *m, const char *scope, const char *key,
		      const char *value, cof_err *err)
{
	conn *c = cof_sqlite_writer_begin(m, err);
	sqlite3_stmt *st;
	int rc = -1;

	if (!c)
		return -1;
	st = cof_sqlite_q(c, "INSERT OR REPLACE INTO idem(scope, key, value, created_at) VALUES(?,?,?,?)", err);
	if (st) {
		cof_sqlite_bind_text(st, 1, scope);
		cof_sqlite_bind_text(st, 2, key);
		cof_sqlite_bind_text(st, 3, value);
		sqlite3_bind_int64(st, 4, cof_now());
		rc = sqlite3_step(st) == SQLITE_DONE ? 0 : cof_sqlite_db_error(err, c->db, "idempotency");
	}
	return cof_sqlite_writer_end(m, rc, err);
}

/* --------------------------------------------------------------- volumes */

#define VOL_COLS "vno, id, org, name, seq, files, bytes, capacity, ceiling, created_at, " \
		 "hidden, history_from"

static void row_volume(sqlite3_stmt *st, cof_volrow *v)
{
	v->vno = sqlite3_column_int64(st, 0);
	cof_sqlite_col_copy(st, 1, v->id, sizeof v->id);
	cof_sqlite_col_copy(st, 2, v->org, sizeof v->org);
	cof_sqlite_col_copy(st, 3, v->name, sizeof v->name);
	v->seq = sqlite3_column_int64(st, 4);
	v->files = sqlite3_column_int64(st, 5);
	v->bytes = sqlite3_column_int64(st, 6);
	v->capacity = sqlite3_column_int64(st, 7);
	v->ceiling = sqlite3_column_int64(st, 8);
	v->created_at = sqlite3_column_int64(st, 9);
	v->hidden = sqlite3_column_int(st, 10);
	v->history_from = sqlite3_column_int64(st, 11);
}

static int volume_insert(conn *c, cof_volrow *v, cof_err *err)
{
	sqlite3_stmt *st = cof_sqlite_q(c, "INSERT INTO volumes(id, org, name, seq, files, bytes, capacity,"
			     " ceiling, created_at, hidden, history_from) VALUES(?,?,?,?,?,?,?,?,?,?,?)",
			     err);
	if (!st)
		return -1;
	cof_sqlite_bind_text(st, 1, v->id);
	cof_sqlite_bind_text(st, 2, v->org);
	cof_sqlite_bind_text(st, 3, v->name);
	sqlite3_bind_int64(st, 4, v->seq);
	sqlite3_bind_int64(st, 5, v->files);
	sqlite3_bind_int64(st, 6, v->bytes);
	sqlite3_bind_int64(st, 7, v->capacity);
	sqlite3_bind_int64(st, 8, v->ceiling);
	sqlite3_bind_int64(st, 9, v->created_at);
	sqlite3_bind_int(st, 10, v->hidden);
	sqlite3_bind_int64(st, 11, v->history_from);
	if (sqlite3_step(st) != SQLITE_DONE)
		return cof_sqlite_db_error(err, c->db, "creating a volume");
	v->vno = sqlite3_last_insert_rowid(c->db);
	return 0;
}

int cof_meta_volume_add(cof_meta *m, cof_volrow *v, cof_err *err)
{
	conn *c = cof_sqlite_writer_begin(m, err);

	if (!c)
		return -1;
	return cof_sqlite_writer_end(m, volume_insert(c, v, err), err);
}

int cof_sqlite_volume_load(conn *c, int64_t vno, const char *org, const char *id,
		       cof_volrow *out, cof_err *err)
{
	sqlite3_stmt *st;
	int r;

	if (id)
		st = cof_sqlite_q(c, "SELECT " VOL_COLS " FROM volumes WHERE id = ?", err);
	else
		st = cof_sqlite_q(c, "SELECT " VOL_COLS " FROM volumes WHERE vno = ?", err);
	if (!st)
		return -1;
	if (id)
		cof_sqlite_bind_text(st, 1, id);
	else
		sqlite3_bind_int64(st, 1, vno);
	r = sqlite3_step(st);
	if (r == SQLITE_ROW)
		row_volume(st, out);
	sqlite3_reset(st);
	if (r != SQLITE_ROW && r != SQLITE_DONE)
		return cof_sqlite_db_error(err, c->db, "reading a volume");
	/* Another organization's volume answers exactly like an absent one. */
	if (r == SQLITE_DONE || (org && (strcmp(out->org, org) || out->hidden)))
		return cof_error(err, COF_ENOTFOUND, "volume '%.64s' not found",
				 id ? id : "?");
	return 0;
}

int cof_meta_volume_get(cof_meta *m, const char *org, const char *id, cof_volrow *out,
			cof_err *err)
{
	conn *c = cof_sqlite_reader_get(m, err);
	int rc;

	if (!c)
		return -1;
	rc = cof_sqlite_volume_load(c, 0, org, id, out, err);
	cof_sqlite_reader_put(m, c);
	return rc;
}

/* Runs each of `n` statements (string literals) with `vno` bound as ?1. */
static int run_each(conn *c, const char *const *sqls, size_t n, int64_t vno,
		    const char *what, cof_err *err)
{
	for (size_t i = 0; i < n; i++) {
		sqlite3_stmt *st = cof_sqlite_q(c, sqls[i], err);
		if (!st)
			return -1;
		sqlite3_bind_int64(st, 1, vno);
		if (sqlite3_step(st) != SQLITE_DONE)
			return cof_sqlite_db_error(err, c->db, what);
	}
	return 0;
}

/* Deletes one volume's rows; the caller holds the writer. */
int cof_sqlite_volume_drop(conn *c, int64_t vno, cof_err *err)
{
	/* The grace period of the content starts now. */
	static const char *const sqls[] = {
		"UPDATE blobs SET orphan_since = unixepoch() WHERE orphan_since IS NULL AND"
		" sha256 IN (SELECT sha256 FROM entries WHERE vno = ?)",
		"DELETE FROM entries WHERE vno = ?",
		"DELETE FROM changes WHERE vno = ?",
		"DELETE FROM volumes WHERE vno = ?",
	};
	return run_each(c, sqls, sizeof sqls / sizeof *sqls, vno, "deleting a volume", err);
}

/* Deletes a snapshot row and, for a files-snapshot, its hidden volume. */
int cof_sqlite_snapshot_drop(conn *c, const char *sid, int64_t vno, int64_t src_vno,
			 cof_err *err)
{
	sqlite3_stmt *st;

	if (src_vno != vno) {
		if (cof_sqlite_volume_drop(c, src_vno, err))
			return -1;
	} else {
		/* History only this snapshot kept starts its grace period now. */
		st = cof_sqlite_q(c, "UPDATE entries SET closed_at = unixepoch() WHERE vno = ?1 AND"
		       " to_seq IS NOT NULL AND from_seq <= (SELECT seq FROM snapshots WHERE"
		       " id = ?2) AND to_seq > (SELECT seq FROM snapshots WHERE id = ?2)", err);
		if (!st)
			return -1;
		sqlite3_bind_int64(st, 1, vno);
		cof_sqlite_bind_text(st, 2, sid);
		if (sqlite3_step(st) != SQLITE_DONE)
			return cof_sqlite_db_error(err, c->db, "deleting a snapshot");
	}
	st = cof_sqlite_q(c, "DELETE FROM snapshots WHERE id = ?", err);
	if (!st)
		return -1;
	cof_sqlite_bind_text(st, 1, sid);
	if (sqlite3_step(st) != SQLITE_DONE)
		return cof_sqlite_db_error(err, c->db, "deleting a snapshot");
	return 0;
}

/* Drops every hidden volume of the files-snapshots of `vno` (as
 * cof_sqlite_volume_drop does for one), however many there are, in four set
 * statements: the snapshot rows that name them go right after. */
static int hidden_volumes_drop(conn *c, int64_t vno, cof_err *err)
{
#define HIDDEN "(SELECT src_vno FROM snapshots WHERE vno = ?1 AND src_vno != vno)"
	static const char *const sqls[] = {
		"UPDATE blobs SET orphan_since = unixepoch() WHERE orphan_since IS NULL AND"
		" sha256 IN (SELECT sha256 FROM entries WHERE vno IN " HIDDEN ")",
		"DELETE FROM entries WHERE vno IN " HIDDEN,
		"DELETE FROM changes WHERE vno IN " HIDDEN,
		"DELETE FROM volumes WHERE vno IN " HIDDEN,
	};
#undef HIDDEN
	return run_each(c, sqls, sizeof sqls / sizeof *sqls, vno,
			"deleting the volumes of files-snapshots", err);
}

int cof_meta_volume_delete(cof_meta *m, int64_t vno, cof_err *err)
{
	conn *c = cof_sqlite_writer_begin(m, err);
	sqlite3_stmt *st;
	int rc;

	if (!c)
		return -1;
	/* Hidden volumes of files-snapshots go with their snapshots. */
	rc = hidden_volumes_drop(c, vno, err);
	if (!rc && (st = cof_sqlite_q(c, "DELETE FROM snapshots WHERE vno = ?", err))) {
		sqlite3_bind_int64(st, 1, vno);
		if (sqlite3_step(st) != SQLITE_DONE)
			rc = cof_sqlite_db_error(err, c->db, "deleting snapshots");
	} else if (!rc) {
		rc = -1;
	}
	if (!rc)
		rc = cof_sqlite_volume_drop(c, vno, err);
	return cof_sqlite_writer_end(m, rc, err);
}

int cof_meta_volume_fork(cof_meta *m, cof_volrow *v, int64_t src_vno, int64_t at_seq,
			 cof_err *err)
{
	conn *c = cof_sqlite_writer_begin(m, err);
	sqlite3_stmt *st;
	int rc;

	if (!c)
		return -1;
	rc = volume_insert(c, v, err);
	if (!rc && !(st = cof_sqlite_q(c, "INSERT INTO entries(vno, path, from_seq, to_seq, version, size,"
			   " sha256, ctype, updated_at) SELECT ?, path, from_seq, NULL, version,"
			   " size, sha256, ctype, updated_at FROM entries WHERE vno = ? AND"
			   " from_seq <= ? AND (to_seq IS NULL OR to_seq > ?)", err)))
		rc = -1;
	if (!rc) {
		sqlite3_bind_int64(st, 1, v->vno);
		sqlite3_bind_int64(st, 2, src_vno);
		sqlite3_bind_int64(st, 3, at_seq);
		sqlite3_bind_int64(st, 4, at_seq);
		if (sqlite3_step(st) != SQLITE_DONE)
			rc = cof_sqlite_db_error(err, c->db, "forking");
	}
	if (!rc && (st = cof_sqlite_q(c, "UPDATE volumes SET files = (SELECT count(*) FROM entries WHERE"
			   " vno = ?1), bytes = (SELECT coalesce(sum(size), 0) FROM entries WHERE"
			   " vno = ?1) WHERE vno = ?1 RETURNING files, bytes", err))) {
		sqlite3_bind_int64(st, 1, v->vno);
		if (sqlite3_step(st) == SQLITE_ROW) {
			v->files = sqlite3_column_int64(st, 0);
			v->bytes = sqlite3_column_int64(st, 1);
		} else {
			rc = cof_sqlite_db_error(err, c->db, "forking");
		}
		sqlite3_reset(st);
	} else if (!rc) {
		rc = -1;
	}
	return cof_sqlite_writer_end(m, rc, err);
}

/* ---------------------------------------------------------- reading files */

int cof_sqlite_entry_get(conn *c, int64_t vno, const char *path, int64_t at_seq,
		     cof_entry *out, cof_err *err)
{
	sqlite3_stmt *st;
	int r;

	if (at_seq < 0)
		st = cof_sqlite_q(c, "SELECT path, version, size, sha256, ctype, updated_at FROM entries"
		       " WHERE vno = ? AND path = ? AND to_seq IS NULL", err);
	else
		st = cof_sqlite_q(c, "SELECT path, version, size, sha256, ctype, updated_at FROM entries"
		       " WHERE vno = ? AND path = ? AND from_seq <= ?3 AND"
		       " (to_seq IS NULL OR to_seq > ?3)", err);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, vno);
	cof_sqlite_bind_text(st, 2, path);
	if (at_seq >= 0)
		sqlite3_bind_int64(st, 3, at_seq);
	r = sqlite3_step(st);
	if (r == SQLITE_ROW)
		cof_sqlite_row_entry(st, out);
	sqlite3_reset(st);
	if (r != SQLITE_ROW && r != SQLITE_DONE)
		return cof_sqlite_db_error(err, c->db, "reading a file");
	return r == SQLITE_ROW;
}

int cof_meta_entry_read(cof_meta *m, int64_t vno, const char *path, int64_t at_seq,
			cof_entry *out, unsigned char **data, cof_err *err)
{
	conn *c = cof_sqlite_reader_get(m, err);
	sqlite3_stmt *st;
	int r, rc = -1;

	*data = NULL;
	if (!c)
		return -1;
	if (at_seq < 0)
		st = cof_sqlite_q(c, "SELECT e.path, e.version, e.size, e.sha256, e.ctype, e.updated_at,"
			    " b.data FROM entries e LEFT JOIN blobs b ON b.sha256 = e.sha256"
			    " WHERE e.vno = ? AND e.path = ? AND e.to_seq IS NULL", err);
	else
		st = cof_sqlite_q(c, "SELECT e.path, e.version, e.size, e.sha256, e.ctype, e.updated_at,"
			    " b.data FROM entries e LEFT JOIN blobs b ON b.sha256 = e.sha256"
			    " WHERE e.vno = ? AND e.path = ? AND e.from_seq <= ?3 AND"
			    " (e.to_seq IS NULL OR e.to_seq > ?3)", err);
	if (st) {
		sqlite3_bind_int64(st, 1, vno);
		cof_sqlite_bind_text(st, 2, path);
		if (at_seq >= 0)
			sqlite3_bind_int64(st, 3, at_seq);
		r = sqlite3_step(st);
		rc = r == SQLITE_ROW ? 1 : r == SQLITE_DONE ? 0 : cof_sqlite_db_error(err, c->db, "reading a file");
		if (r == SQLITE_ROW) {
			cof_sqlite_row_entry(st, out);
			if (sqlite3_column_type(st, 6) == SQLITE_BLOB) {
				size_t n = (size_t)sqlite3_column_bytes(st, 6);
				if (!(*data = cof_malloc(n + 1)))
					rc = cof_error(err, COF_EINTERNAL, "out of memory");
				else {
					if (n) /* an empty blob's pointer is NULL */
						memcpy(*data, sqlite3_column_blob(st, 6), n);
					(*data)[n] = '\0';
				}
			}
		}
		sqlite3_reset(st);
	}
	cof_sqlite_reader_put(m, c);
	return rc;
}

int cof_meta_entry_get(cof_meta *m, int64_t vno, const char *path, int64_t at_seq,
		       cof_entry *out, cof_err *err)
{
	conn *c = cof_sqlite_reader_get(m, err);
	int rc;

	if (!c)
		return -1;
	rc = cof_sqlite_entry_get(c, vno, path, at_seq, out, err);
	cof_sqlite_reader_put(m, c);
	return rc;
}

int cof_sqlite_entry_list(conn *c, int64_t vno, int64_t at_seq, const char *prefix,
		      const char *after, cof_entry_fn fn, void *ctx, cof_err *err)
{
	cof_buf upper = COF_BUF_INIT;
	sqlite3_stmt *st;
	cof_entry *e;
	int r, rc = 0;

	if (at_seq < 0)
		st = cof_sqlite_q(c, "SELECT path, version, size, sha256, ctype, updated_at FROM entries"
		       " WHERE vno = ?1 AND path >= ?2 AND path < ?3 AND path > ?4"
		       " AND to_seq IS NULL ORDER BY path", err);
	else
		st = cof_sqlite_q(c, "SELECT path, version, size, sha256, ctype, updated_at FROM entries"
		       " WHERE vno = ?1 AND path >= ?2 AND path < ?3 AND path > ?4"
		       " AND from_seq <= ?5 AND (to_seq IS NULL OR to_seq > ?5) ORDER BY path", err);
	if (!st || !(e = cof_malloc(sizeof *e)))
		return st ? cof_error(err, COF_EINTERNAL, "out of memory") : -1;
	sqlite3_bind_int64(st, 1, vno);
	cof_sqlite_prefix_bounds(st, 2, 3, prefix, &upper);
	cof_sqlite_bind_text(st, 4, after ? after : "");
	if (at_seq >= 0)
		sqlite3_bind_int64(st, 5, at_seq);
	while ((r = sqlite3_step(st)) == SQLITE_ROW) {
		cof_sqlite_row_entry(st, e);
		if (fn(ctx, e))
			break;
	}
	if (r != SQLITE_ROW && r != SQLITE_DONE)
		rc = cof_sqlite_db_error(err, c->db, "listing files");
	sqlite3_reset(st);
	cof_buf_release(&upper);
	free(e);
	return rc;
}

int cof_meta_list(cof_meta *m, int64_t vno, int64_t at_seq, const char *prefix,
		  const char *after, cof_entry_fn fn, void *ctx, cof_err *err)
{
	conn *c = cof_sqlite_reader_get(m, err);
	int rc;

	if (!c)
		return -1;
	/* One read transaction, so a long walk sees one state of the database. */
	sqlite3_exec(c->db, "BEGIN", NULL, NULL, NULL);
	rc = cof_sqlite_entry_list(c, vno, at_seq, prefix, after, fn, ctx, err);
	sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL);
	cof_sqlite_reader_put(m, c);
	return rc;
}

int cof_meta_changes(cof_meta *m, int64_t vno, int64_t since, const char *prefix,
		     int64_t limit, cof_change_fn fn, void *ctx, cof_err *err)
{
	conn *c = cof_sqlite_reader_get(m, err);
	cof_buf upper = COF_BUF_INIT;
	cof_change_row *ch = cof_malloc(sizeof *ch);
	sqlite3_stmt *st = NULL;
	int r, rc = 0;

	if (!c || !ch) {
		free(ch);
		cof_sqlite_reader_put(m, c);
		return c ? cof_error(err, COF_EINTERNAL, "out of memory") : -1;
	}
	st = cof_sqlite_q(c, "SELECT seq, path, removed, version, size, sha256 FROM changes WHERE vno = ?1"
	       " AND seq > ?2 AND path >= ?3 AND path < ?4 ORDER BY seq, path LIMIT ?5", err);
	if (!st) {
		rc = -1;
		goto out;
	}
	sqlite3_bind_int64(st, 1, vno);
	sqlite3_bind_int64(st, 2, since);
	cof_sqlite_prefix_bounds(st, 3, 4, prefix, &upper);
	sqlite3_bind_int64(st, 5, limit);
	while ((r = sqlite3_step(st)) == SQLITE_ROW) {
		ch->seq = sqlite3_column_int64(st, 0);
		cof_sqlite_col_copy(st, 1, ch->path, sizeof ch->path);
		ch->removed = sqlite3_column_int(st, 2);
		ch->version = sqlite3_column_int64(st, 3);
		ch->size = sqlite3_column_int64(st, 4);
		cof_sqlite_col_copy(st, 5, ch->sha256, sizeof ch->sha256);
		if (fn(ctx, ch))
			break;
	}
	if (r != SQLITE_ROW && r != SQLITE_DONE)
		rc = cof_sqlite_db_error(err, c->db, "reading changes");
	sqlite3_reset(st);
out:
	cof_buf_release(&upper);
	free(ch);
	cof_sqlite_reader_put(m, c);
	return rc;
}
