/*
 * meta_sqlite.c — the metadata store (meta.h) on SQLite in WAL mode.
 *
 * One writer connection behind a mutex (SQLite allows one writer at a time
 * anyway; taking the mutex first avoids busy retries) and a pool of reader
 * connections, each used by one thread at a time. Statements are prepared once
 * per connection and cached by the address of their SQL text.
 * synchronous=FULL: an acknowledged change survives power loss.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sqlite3.h>
#include "store/meta.h"

#define STMT_CACHE 48
#define POOL_IDLE 16

typedef struct conn {
	sqlite3 *db;
	struct { const char *sql; sqlite3_stmt *st; } cache[STMT_CACHE];
	struct conn *next;
} conn;

struct cof_meta {
	char *file;
	conn *writer;
	pthread_mutex_t wlock;
	pthread_mutex_t plock;
	conn *idle;
	int nidle;
};

struct cof_txn {
	cof_meta *m;
	conn *c;
	cof_volrow vol;
	int ops;
	int64_t now;
};

static const char *schema =
	"CREATE TABLE IF NOT EXISTS keys(hash TEXT PRIMARY KEY, org TEXT NOT NULL,"
	" agent TEXT NOT NULL DEFAULT '', admin INTEGER NOT NULL DEFAULT 0,"
	" created_at INTEGER NOT NULL) WITHOUT ROWID;"
	"CREATE TABLE IF NOT EXISTS volumes(vno INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE,"
	" org TEXT NOT NULL, name TEXT NOT NULL, seq INTEGER NOT NULL, files INTEGER NOT NULL,"
	" bytes INTEGER NOT NULL, capacity INTEGER NOT NULL, ceiling INTEGER NOT NULL,"
	" created_at INTEGER NOT NULL, hidden INTEGER NOT NULL DEFAULT 0,"
	" history_from INTEGER NOT NULL DEFAULT 0);"
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
	"CREATE TABLE IF NOT EXISTS idem(scope TEXT NOT NULL, key TEXT NOT NULL,"
	" value TEXT NOT NULL, created_at INTEGER NOT NULL, PRIMARY KEY(scope, key)) WITHOUT ROWID;";

/* ------------------------------------------------------------ connections */

static int db_error(cof_err *err, sqlite3 *db, const char *what)
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
	conn *c = calloc(1, sizeof *c);
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
	sqlite3_exec(c->db, "PRAGMA synchronous=FULL; PRAGMA temp_store=MEMORY;"
		     "PRAGMA cache_size=-16000;", NULL, NULL, NULL);
	return c;
}

/* A cached, reset statement for `sql` (which must be a string literal). */
static sqlite3_stmt *q(conn *c, const char *sql, cof_err *err)
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
		db_error(err, c->db, "prepare");
		return NULL;
	}
	if (free_slot >= 0) {
		c->cache[free_slot].sql = sql;
		c->cache[free_slot].st = st;
	}
	/* The cache is sized for every statement in this file; a miss here is a bug. */
	return st;
}

static conn *reader_get(cof_meta *m, cof_err *err)
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

static void reader_put(cof_meta *m, conn *c)
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

static int exec(conn *c, const char *sql, cof_err *err)
{
	if (sqlite3_exec(c->db, sql, NULL, NULL, NULL) != SQLITE_OK)
		return db_error(err, c->db, sql);
	return 0;
}

/* Takes the writer and opens a write transaction. */
static conn *writer_begin(cof_meta *m, cof_err *err)
{
	pthread_mutex_lock(&m->wlock);
	if (exec(m->writer, "BEGIN IMMEDIATE", err)) {
		pthread_mutex_unlock(&m->wlock);
		return NULL;
	}
	return m->writer;
}

/* Commits (ok == 0) or rolls back, and gives the writer back. */
static int writer_end(cof_meta *m, int ok, cof_err *err)
{
	int rc = ok;

	if (ok == 0)
		rc = exec(m->writer, "COMMIT", err);
	if (rc != 0)
		sqlite3_exec(m->writer->db, "ROLLBACK", NULL, NULL, NULL);
	pthread_mutex_unlock(&m->wlock);
	return rc;
}

int cof_meta_open(const char *file, cof_meta **out, cof_err *err)
{
	cof_meta *m = calloc(1, sizeof *m);

	if (!m || !(m->file = strdup(file))) {
		free(m);
		return cof_error(err, COF_EINTERNAL, "out of memory");
	}
	pthread_mutex_init(&m->wlock, NULL);
	pthread_mutex_init(&m->plock, NULL);
	m->writer = conn_open(file, 1, err);
	if (!m->writer || exec(m->writer, "PRAGMA journal_mode=WAL", err) ||
	    exec(m->writer, schema, err)) {
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

static void bind_text(sqlite3_stmt *st, int i, const char *s)
{
	sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC);
}

static void col_copy(sqlite3_stmt *st, int i, char *out, size_t outsz)
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
static void prefix_bounds(sqlite3_stmt *st, int lo, int hi, const char *prefix,
			  cof_buf *upper)
{
	cof_buf_reset(upper);
	cof_buf_adds(upper, prefix ? prefix : "");
	cof_buf_add(upper, "\xff", 1);
	bind_text(st, lo, prefix ? prefix : "");
	sqlite3_bind_text(st, hi, upper->data, (int)upper->len, SQLITE_STATIC);
}

static void row_entry(sqlite3_stmt *st, cof_entry *e)
{
	col_copy(st, 0, e->path, sizeof e->path);
	e->version = sqlite3_column_int64(st, 1);
	e->size = sqlite3_column_int64(st, 2);
	col_copy(st, 3, e->sha256, sizeof e->sha256);
	col_copy(st, 4, e->ctype, sizeof e->ctype);
	e->updated_at = sqlite3_column_int64(st, 5);
}

/* ---------------------------------------------------- keys, idempotency */

int cof_meta_key_add(cof_meta *m, const char *hash, const cof_principal *who, cof_err *err)
{
	conn *c = writer_begin(m, err);
	sqlite3_stmt *st;
	int rc = -1;

	if (!c)
		return -1;
	st = q(c, "INSERT INTO keys(hash, org, agent, admin, created_at) VALUES(?,?,?,?,?)", err);
	if (st) {
		bind_text(st, 1, hash);
		bind_text(st, 2, who->org);
		bind_text(st, 3, who->agent);
		sqlite3_bind_int(st, 4, who->admin);
		sqlite3_bind_int64(st, 5, cof_now());
		rc = sqlite3_step(st) == SQLITE_DONE ? 0 : db_error(err, c->db, "adding a key");
	}
	return writer_end(m, rc, err);
}

int cof_meta_key_find(cof_meta *m, const char *hash, cof_principal *who, cof_err *err)
{
	conn *c = reader_get(m, err);
	sqlite3_stmt *st;
	int rc = -1;

	if (!c)
		return -1;
	st = q(c, "SELECT org, agent, admin FROM keys WHERE hash = ?", err);
	if (st) {
		bind_text(st, 1, hash);
		int r = sqlite3_step(st);
		if (r == SQLITE_ROW) {
			col_copy(st, 0, who->org, sizeof who->org);
			col_copy(st, 1, who->agent, sizeof who->agent);
			who->admin = sqlite3_column_int(st, 2);
			rc = 0;
		} else if (r == SQLITE_DONE) {
			rc = cof_error(err, COF_EUNAUTHORIZED, "the API key is not valid");
		} else {
			rc = db_error(err, c->db, "checking a key");
		}
		sqlite3_reset(st);
	}
	reader_put(m, c);
	return rc;
}

int cof_meta_idem_get(cof_meta *m, const char *scope, const char *key, int64_t ttl,
		      char **value, cof_err *err)
{
	conn *c = reader_get(m, err);
	sqlite3_stmt *st;
	int rc = -1;

	if (!c)
		return -1;
	st = q(c, "SELECT value FROM idem WHERE scope = ? AND key = ? AND created_at > ?", err);
	if (st) {
		bind_text(st, 1, scope);
		bind_text(st, 2, key);
		sqlite3_bind_int64(st, 3, cof_now() - ttl);
		int r = sqlite3_step(st);
		if (r == SQLITE_ROW) {
			*value = strdup((const char *)sqlite3_column_text(st, 0));
			rc = *value ? 1 : cof_error(err, COF_EINTERNAL, "out of memory");
		} else {
			rc = r == SQLITE_DONE ? 0 : db_error(err, c->db, "idempotency");
		}
		sqlite3_reset(st);
	}
	reader_put(m, c);
	return rc;
}

int cof_meta_idem_put(cof_meta *m, const char *scope, const char *key,
		      const char *value, cof_err *err)
{
	conn *c = writer_begin(m, err);
	sqlite3_stmt *st;
	int rc = -1;

	if (!c)
		return -1;
	st = q(c, "INSERT OR REPLACE INTO idem(scope, key, value, created_at) VALUES(?,?,?,?)", err);
	if (st) {
		bind_text(st, 1, scope);
		bind_text(st, 2, key);
		bind_text(st, 3, value);
		sqlite3_bind_int64(st, 4, cof_now());
		rc = sqlite3_step(st) == SQLITE_DONE ? 0 : db_error(err, c->db, "idempotency");
	}
	return writer_end(m, rc, err);
}

/* --------------------------------------------------------------- volumes */

#define VOL_COLS "vno, id, org, name, seq, files, bytes, capacity, ceiling, created_at, " \
		 "hidden, history_from"

static void row_volume(sqlite3_stmt *st, cof_volrow *v)
{
	v->vno = sqlite3_column_int64(st, 0);
	col_copy(st, 1, v->id, sizeof v->id);
	col_copy(st, 2, v->org, sizeof v->org);
	col_copy(st, 3, v->name, sizeof v->name);
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
	sqlite3_stmt *st = q(c, "INSERT INTO volumes(id, org, name, seq, files, bytes, capacity,"
			     " ceiling, created_at, hidden, history_from) VALUES(?,?,?,?,?,?,?,?,?,?,?)",
			     err);
	if (!st)
		return -1;
	bind_text(st, 1, v->id);
	bind_text(st, 2, v->org);
	bind_text(st, 3, v->name);
	sqlite3_bind_int64(st, 4, v->seq);
	sqlite3_bind_int64(st, 5, v->files);
	sqlite3_bind_int64(st, 6, v->bytes);
	sqlite3_bind_int64(st, 7, v->capacity);
	sqlite3_bind_int64(st, 8, v->ceiling);
	sqlite3_bind_int64(st, 9, v->created_at);
	sqlite3_bind_int(st, 10, v->hidden);
	sqlite3_bind_int64(st, 11, v->history_from);
	if (sqlite3_step(st) != SQLITE_DONE)
		return db_error(err, c->db, "creating a volume");
	v->vno = sqlite3_last_insert_rowid(c->db);
	return 0;
}

int cof_meta_volume_add(cof_meta *m, cof_volrow *v, cof_err *err)
{
	conn *c = writer_begin(m, err);

	if (!c)
		return -1;
	return writer_end(m, volume_insert(c, v, err), err);
}

static int volume_load(conn *c, int64_t vno, const char *org, const char *id,
		       cof_volrow *out, cof_err *err)
{
	sqlite3_stmt *st;
	int r;

	if (id)
		st = q(c, "SELECT " VOL_COLS " FROM volumes WHERE id = ?", err);
	else
		st = q(c, "SELECT " VOL_COLS " FROM volumes WHERE vno = ?", err);
	if (!st)
		return -1;
	if (id)
		bind_text(st, 1, id);
	else
		sqlite3_bind_int64(st, 1, vno);
	r = sqlite3_step(st);
	if (r == SQLITE_ROW)
		row_volume(st, out);
	sqlite3_reset(st);
	if (r != SQLITE_ROW && r != SQLITE_DONE)
		return db_error(err, c->db, "reading a volume");
	/* Another organization's volume answers exactly like an absent one. */
	if (r == SQLITE_DONE || (org && (strcmp(out->org, org) || out->hidden)))
		return cof_error(err, COF_ENOTFOUND, "volume '%.64s' not found",
				 id ? id : "?");
	return 0;
}

int cof_meta_volume_get(cof_meta *m, const char *org, const char *id, cof_volrow *out,
			cof_err *err)
{
	conn *c = reader_get(m, err);
	int rc;

	if (!c)
		return -1;
	rc = volume_load(c, 0, org, id, out, err);
	reader_put(m, c);
	return rc;
}

int cof_meta_volume_by_vno(cof_meta *m, int64_t vno, cof_volrow *out, cof_err *err)
{
	conn *c = reader_get(m, err);
	int rc;

	if (!c)
		return -1;
	rc = volume_load(c, vno, NULL, NULL, out, err);
	reader_put(m, c);
	return rc;
}

/* Deletes one volume's rows; the caller holds the writer. */
static int volume_drop(conn *c, int64_t vno, cof_err *err)
{
	/* The grace period of the content starts now. */
	static const char *const sqls[] = {
		"UPDATE blobs SET orphan_since = unixepoch() WHERE orphan_since IS NULL AND"
		" sha256 IN (SELECT sha256 FROM entries WHERE vno = ?)",
		"DELETE FROM entries WHERE vno = ?",
		"DELETE FROM changes WHERE vno = ?",
		"DELETE FROM volumes WHERE vno = ?",
	};
	for (size_t i = 0; i < sizeof sqls / sizeof *sqls; i++) {
		sqlite3_stmt *st = q(c, sqls[i], err);
		if (!st)
			return -1;
		sqlite3_bind_int64(st, 1, vno);
		if (sqlite3_step(st) != SQLITE_DONE)
			return db_error(err, c->db, "deleting a volume");
	}
	return 0;
}

/* Deletes a snapshot row and, for a files-snapshot, its hidden volume. */
static int snapshot_drop(conn *c, const char *sid, int64_t vno, int64_t src_vno,
			 cof_err *err)
{
	sqlite3_stmt *st;

	if (src_vno != vno) {
		if (volume_drop(c, src_vno, err))
			return -1;
	} else {
		/* History only this snapshot kept starts its grace period now. */
		st = q(c, "UPDATE entries SET closed_at = unixepoch() WHERE vno = ?1 AND"
		       " to_seq IS NOT NULL AND from_seq <= (SELECT seq FROM snapshots WHERE"
		       " id = ?2) AND to_seq > (SELECT seq FROM snapshots WHERE id = ?2)", err);
		if (!st)
			return -1;
		sqlite3_bind_int64(st, 1, vno);
		bind_text(st, 2, sid);
		if (sqlite3_step(st) != SQLITE_DONE)
			return db_error(err, c->db, "deleting a snapshot");
	}
	st = q(c, "DELETE FROM snapshots WHERE id = ?", err);
	if (!st)
		return -1;
	bind_text(st, 1, sid);
	if (sqlite3_step(st) != SQLITE_DONE)
		return db_error(err, c->db, "deleting a snapshot");
	return 0;
}

int cof_meta_volume_delete(cof_meta *m, int64_t vno, cof_err *err)
{
	conn *c = writer_begin(m, err);
	sqlite3_stmt *st;
	int rc = 0;

	if (!c)
		return -1;
	/* Hidden volumes of files-snapshots go with their snapshots. */
	st = q(c, "SELECT DISTINCT src_vno FROM snapshots WHERE vno = ? AND src_vno != vno", err);
	if (!st)
		return writer_end(m, -1, err);
	sqlite3_bind_int64(st, 1, vno);
	int64_t hidden[1024];
	int nh = 0, r;
	while ((r = sqlite3_step(st)) == SQLITE_ROW && nh < 1024)
		hidden[nh++] = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	for (int i = 0; i < nh && !rc; i++)
		rc = volume_drop(c, hidden[i], err);
	if (!rc && (st = q(c, "DELETE FROM snapshots WHERE vno = ?", err))) {
		sqlite3_bind_int64(st, 1, vno);
		if (sqlite3_step(st) != SQLITE_DONE)
			rc = db_error(err, c->db, "deleting snapshots");
	}
	if (!rc)
		rc = volume_drop(c, vno, err);
	return writer_end(m, rc, err);
}

int cof_meta_volume_fork(cof_meta *m, cof_volrow *v, int64_t src_vno, int64_t at_seq,
			 cof_err *err)
{
	conn *c = writer_begin(m, err);
	sqlite3_stmt *st;
	int rc;

	if (!c)
		return -1;
	rc = volume_insert(c, v, err);
	if (!rc && !(st = q(c, "INSERT INTO entries(vno, path, from_seq, to_seq, version, size,"
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
			rc = db_error(err, c->db, "forking");
	}
	if (!rc && (st = q(c, "UPDATE volumes SET files = (SELECT count(*) FROM entries WHERE"
			   " vno = ?1), bytes = (SELECT coalesce(sum(size), 0) FROM entries WHERE"
			   " vno = ?1) WHERE vno = ?1 RETURNING files, bytes", err))) {
		sqlite3_bind_int64(st, 1, v->vno);
		if (sqlite3_step(st) == SQLITE_ROW) {
			v->files = sqlite3_column_int64(st, 0);
			v->bytes = sqlite3_column_int64(st, 1);
		} else {
			rc = db_error(err, c->db, "forking");
		}
		sqlite3_reset(st);
	} else if (!rc) {
		rc = -1;
	}
	return writer_end(m, rc, err);
}

/* ---------------------------------------------------------- reading files */

static int entry_get(conn *c, int64_t vno, const char *path, int64_t at_seq,
		     cof_entry *out, cof_err *err)
{
	sqlite3_stmt *st;
	int r;

	if (at_seq < 0)
		st = q(c, "SELECT path, version, size, sha256, ctype, updated_at FROM entries"
		       " WHERE vno = ? AND path = ? AND to_seq IS NULL", err);
	else
		st = q(c, "SELECT path, version, size, sha256, ctype, updated_at FROM entries"
		       " WHERE vno = ? AND path = ? AND from_seq <= ?3 AND"
		       " (to_seq IS NULL OR to_seq > ?3)", err);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, vno);
	bind_text(st, 2, path);
	if (at_seq >= 0)
		sqlite3_bind_int64(st, 3, at_seq);
	r = sqlite3_step(st);
	if (r == SQLITE_ROW)
		row_entry(st, out);
	sqlite3_reset(st);
	if (r != SQLITE_ROW && r != SQLITE_DONE)
		return db_error(err, c->db, "reading a file");
	return r == SQLITE_ROW;
}

int cof_meta_entry_get(cof_meta *m, int64_t vno, const char *path, int64_t at_seq,
		       cof_entry *out, cof_err *err)
{
	conn *c = reader_get(m, err);
	int rc;

	if (!c)
		return -1;
	rc = entry_get(c, vno, path, at_seq, out, err);
	reader_put(m, c);
	return rc;
}

static int entry_list(conn *c, int64_t vno, int64_t at_seq, const char *prefix,
		      const char *after, cof_entry_fn fn, void *ctx, cof_err *err)
{
	cof_buf upper = COF_BUF_INIT;
	sqlite3_stmt *st;
	cof_entry *e;
	int r, rc = 0;

	if (at_seq < 0)
		st = q(c, "SELECT path, version, size, sha256, ctype, updated_at FROM entries"
		       " WHERE vno = ?1 AND path >= ?2 AND path < ?3 AND path > ?4"
		       " AND to_seq IS NULL ORDER BY path", err);
	else
		st = q(c, "SELECT path, version, size, sha256, ctype, updated_at FROM entries"
		       " WHERE vno = ?1 AND path >= ?2 AND path < ?3 AND path > ?4"
		       " AND from_seq <= ?5 AND (to_seq IS NULL OR to_seq > ?5) ORDER BY path", err);
	if (!st || !(e = malloc(sizeof *e)))
		return st ? cof_error(err, COF_EINTERNAL, "out of memory") : -1;
	sqlite3_bind_int64(st, 1, vno);
	prefix_bounds(st, 2, 3, prefix, &upper);
	bind_text(st, 4, after ? after : "");
	if (at_seq >= 0)
		sqlite3_bind_int64(st, 5, at_seq);
	while ((r = sqlite3_step(st)) == SQLITE_ROW) {
		row_entry(st, e);
		if (fn(ctx, e))
			break;
	}
	if (r != SQLITE_ROW && r != SQLITE_DONE)
		rc = db_error(err, c->db, "listing files");
	sqlite3_reset(st);
	cof_buf_release(&upper);
	free(e);
	return rc;
}

int cof_meta_list(cof_meta *m, int64_t vno, int64_t at_seq, const char *prefix,
		  const char *after, cof_entry_fn fn, void *ctx, cof_err *err)
{
	conn *c = reader_get(m, err);
	int rc;

	if (!c)
		return -1;
	/* One read transaction, so a long walk sees one state of the database. */
	sqlite3_exec(c->db, "BEGIN", NULL, NULL, NULL);
	rc = entry_list(c, vno, at_seq, prefix, after, fn, ctx, err);
	sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL);
	reader_put(m, c);
	return rc;
}

int cof_meta_changes(cof_meta *m, int64_t vno, int64_t since, const char *prefix,
		     int64_t limit, cof_change_fn fn, void *ctx, cof_err *err)
{
	conn *c = reader_get(m, err);
	cof_buf upper = COF_BUF_INIT;
	cof_change_row *ch = malloc(sizeof *ch);
	sqlite3_stmt *st = NULL;
	int r, rc = 0;

	if (!c || !ch) {
		free(ch);
		reader_put(m, c);
		return c ? cof_error(err, COF_EINTERNAL, "out of memory") : -1;
	}
	st = q(c, "SELECT seq, path, removed, version, size, sha256 FROM changes WHERE vno = ?1"
	       " AND seq > ?2 AND path >= ?3 AND path < ?4 ORDER BY seq, path LIMIT ?5", err);
	if (!st) {
		rc = -1;
		goto out;
	}
	sqlite3_bind_int64(st, 1, vno);
	sqlite3_bind_int64(st, 2, since);
	prefix_bounds(st, 3, 4, prefix, &upper);
	sqlite3_bind_int64(st, 5, limit);
	while ((r = sqlite3_step(st)) == SQLITE_ROW) {
		ch->seq = sqlite3_column_int64(st, 0);
		col_copy(st, 1, ch->path, sizeof ch->path);
		ch->removed = sqlite3_column_int(st, 2);
		ch->version = sqlite3_column_int64(st, 3);
		ch->size = sqlite3_column_int64(st, 4);
		col_copy(st, 5, ch->sha256, sizeof ch->sha256);
		if (fn(ctx, ch))
			break;
	}
	if (r != SQLITE_ROW && r != SQLITE_DONE)
		rc = db_error(err, c->db, "reading changes");
	sqlite3_reset(st);
out:
	cof_buf_release(&upper);
	free(ch);
	reader_put(m, c);
	return rc;
}

/* ------------------------------------------------------------- changes */

int cof_meta_change(cof_meta *m, int64_t vno, cof_txn_fn fn, void *ctx,
		    int64_t *seq, cof_err *err)
{
	cof_txn tx = {.m = m, .now = cof_now()};
	sqlite3_stmt *st;
	int rc;

	if (!(tx.c = writer_begin(m, err)))
		return -1;
	rc = volume_load(tx.c, vno, NULL, NULL, &tx.vol, err);
	if (!rc) {
		tx.vol.seq++;
		rc = fn(&tx, ctx, err);
	}
	if (!rc && tx.ops == 0) {
		*seq = tx.vol.seq - 1;
		writer_end(m, 1, err); /* nothing to store: roll back */
		return 0;
	}
	if (!rc && !(st = q(tx.c, "UPDATE volumes SET seq = ?, files = ?, bytes = ?,"
			    " capacity = ? WHERE vno = ?", err)))
		rc = -1;
	if (!rc) {
		sqlite3_bind_int64(st, 1, tx.vol.seq);
		sqlite3_bind_int64(st, 2, tx.vol.files);
		sqlite3_bind_int64(st, 3, tx.vol.bytes);
		sqlite3_bind_int64(st, 4, tx.vol.capacity);
		sqlite3_bind_int64(st, 5, vno);
		if (sqlite3_step(st) != SQLITE_DONE)
			rc = db_error(err, tx.c->db, "updating the volume");
	}
	if (writer_end(m, rc, err))
		return -1;
	*seq = tx.vol.seq;
	return 0;
}

cof_volrow *cof_txn_volume(cof_txn *tx)
{
	return &tx->vol;
}

int cof_txn_ops(cof_txn *tx)
{
	return tx->ops;
}

int cof_txn_get(cof_txn *tx, const char *path, cof_entry *out, cof_err *err)
{
	return entry_get(tx->c, tx->vol.vno, path, -1, out, err);
}

int cof_txn_list(cof_txn *tx, const char *prefix, cof_entry_fn fn, void *ctx,
		 cof_err *err)
{
	return entry_list(tx->c, tx->vol.vno, -1, prefix, NULL, fn, ctx, err);
}

/* Closes the live row of `path` (if any) at this change's seq; *old gets it. */
static int close_live(cof_txn *tx, const char *path, cof_entry *old, int *had,
		      cof_err *err)
{
	sqlite3_stmt *st;

	*had = entry_get(tx->c, tx->vol.vno, path, -1, old, err);
	if (*had <= 0)
		return *had;
	st = q(tx->c, "UPDATE entries SET to_seq = ?, closed_at = ? WHERE vno = ? AND path = ?"
	       " AND to_seq IS NULL", err);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, tx->vol.seq);
	sqlite3_bind_int64(st, 2, tx->now);
	sqlite3_bind_int64(st, 3, tx->vol.vno);
	bind_text(st, 4, path);
	if (sqlite3_step(st) != SQLITE_DONE)
		return db_error(err, tx->c->db, "writing a file");
	tx->vol.files--;
	tx->vol.bytes -= old->size;
	return 1;
}

static int record_change(cof_txn *tx, const char *path, int removed, int64_t version,
			 int64_t size, const char *sha, cof_err *err)
{
	sqlite3_stmt *st = q(tx->c, "INSERT OR REPLACE INTO changes(vno, seq, path, removed,"
			     " version, size, sha256, at) VALUES(?,?,?,?,?,?,?,?)", err);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, tx->vol.vno);
	sqlite3_bind_int64(st, 2, tx->vol.seq);
	bind_text(st, 3, path);
	sqlite3_bind_int(st, 4, removed);
	sqlite3_bind_int64(st, 5, version);
	sqlite3_bind_int64(st, 6, size);
	bind_text(st, 7, sha);
	sqlite3_bind_int64(st, 8, tx->now);
	if (sqlite3_step(st) != SQLITE_DONE)
		return db_error(err, tx->c->db, "recording a change");
	tx->ops++;
	return 0;
}

int cof_txn_write(cof_txn *tx, const char *path, const char *sha, int64_t size,
		  const char *ctype, const void *inline_data, cof_err *err)
{
	cof_entry *old = malloc(sizeof *old);
	sqlite3_stmt *st;
	int had, rc = -1;

	if (!old)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	if (close_live(tx, path, old, &had, err) < 0)
		goto out;
	/* A row written earlier in this same change is replaced, not kept as history. */
	if ((st = q(tx->c, "DELETE FROM entries WHERE vno = ? AND path = ? AND from_seq = ?", err))) {
		sqlite3_bind_int64(st, 1, tx->vol.vno);
		bind_text(st, 2, path);
		sqlite3_bind_int64(st, 3, tx->vol.seq);
		sqlite3_step(st);
	}
	st = q(tx->c, "INSERT INTO entries(vno, path, from_seq, to_seq, version, size, sha256,"
	       " ctype, updated_at) VALUES(?,?,?,NULL,?,?,?,?,?)", err);
	if (!st)
		goto out;
	sqlite3_bind_int64(st, 1, tx->vol.vno);
	bind_text(st, 2, path);
	sqlite3_bind_int64(st, 3, tx->vol.seq);
	sqlite3_bind_int64(st, 4, tx->vol.seq);
	sqlite3_bind_int64(st, 5, size);
	bind_text(st, 6, sha);
	bind_text(st, 7, ctype);
	sqlite3_bind_int64(st, 8, tx->now);
	if (sqlite3_step(st) != SQLITE_DONE) {
		db_error(err, tx->c->db, "writing a file");
		goto out;
	}
	st = q(tx->c, "INSERT INTO blobs(sha256, size, orphan_since, data) VALUES(?,?,NULL,?)"
	       " ON CONFLICT(sha256) DO UPDATE SET orphan_since = NULL,"
	       " data = coalesce(data, excluded.data)", err);
	if (!st)
		goto out;
	bind_text(st, 1, sha);
	sqlite3_bind_int64(st, 2, size);
	if (inline_data)
		sqlite3_bind_blob(st, 3, inline_data, (int)size, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_DONE) {
		db_error(err, tx->c->db, "writing a file");
		goto out;
	}
	tx->vol.files++;
	tx->vol.bytes += size;
	rc = record_change(tx, path, 0, tx->vol.seq, size, sha, err);
out:
	free(old);
	return rc;
}

int cof_txn_remove(cof_txn *tx, const char *path, cof_err *err)
{
	cof_entry *old = malloc(sizeof *old);
	int had, rc = -1;

	if (!old)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	if (close_live(tx, path, old, &had, err) < 0)
		goto out;
	if (!had) {
		cof_error(err, COF_ENOTFOUND, "file '%.200s' not found", path);
		goto out;
	}
	rc = record_change(tx, path, 1, old->version, old->size, old->sha256, err);
out:
	free(old);
	return rc;
}

/* ------------------------------------------------------------- snapshots */

#define SNAP_COLS "id, vno, src_vno, seq, pinned, labels, files, bytes, created_at"

static void row_snapshot(sqlite3_stmt *st, cof_snaprow *s)
{
	col_copy(st, 0, s->id, sizeof s->id);
	s->vno = sqlite3_column_int64(st, 1);
	s->src_vno = sqlite3_column_int64(st, 2);
	s->seq = sqlite3_column_int64(st, 3);
	s->pinned = sqlite3_column_int(st, 4);
	col_copy(st, 5, s->labels, sizeof s->labels);
	s->files = sqlite3_column_int64(st, 6);
	s->bytes = sqlite3_column_int64(st, 7);
	s->created_at = sqlite3_column_int64(st, 8);
}

/* Counts a volume's snapshots that are pinned (1) or not (0). */
static int64_t snapshot_count(conn *c, int64_t vno, int pinned, cof_err *err)
{
	sqlite3_stmt *st = q(c, "SELECT count(*) FROM snapshots WHERE vno = ? AND pinned = ?", err);
	int64_t n = -1;

	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, vno);
	sqlite3_bind_int(st, 2, pinned);
	if (sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int64(st, 0);
	else
		db_error(err, c->db, "counting snapshots");
	sqlite3_reset(st);
	return n;
}

/* Drops the oldest unpinned snapshots past `keep`; the last one dropped goes to
 * `dropped`. */
static int snapshot_retain(conn *c, int64_t vno, int keep, char dropped[48], cof_err *err)
{
	int64_t n = snapshot_count(c, vno, 0, err);

	while (n > keep) {
		sqlite3_stmt *st = q(c, "SELECT id, src_vno FROM snapshots WHERE vno = ? AND"
				     " pinned = 0 ORDER BY ord LIMIT 1", err);
		char id[48];
		int64_t src;
		if (!st)
			return -1;
		sqlite3_bind_int64(st, 1, vno);
		if (sqlite3_step(st) != SQLITE_ROW) {
			sqlite3_reset(st);
			return db_error(err, c->db, "retaining snapshots");
		}
		col_copy(st, 0, id, sizeof id);
		src = sqlite3_column_int64(st, 1);
		sqlite3_reset(st);
		if (snapshot_drop(c, id, vno, src, err))
			return -1;
		memcpy(dropped, id, 48);
		n--;
	}
	return n < 0 ? -1 : 0;
}

int cof_meta_snapshot_add(cof_meta *m, cof_snaprow *s, int keep_unpinned,
			  int max_pinned, char dropped[48], cof_err *err)
{
	conn *c = writer_begin(m, err);
	sqlite3_stmt *st;
	int rc = 0;

	dropped[0] = '\0';
	if (!c)
		return -1;
	if (s->pinned) {
		int64_t n = snapshot_count(c, s->vno, 1, err);
		if (n < 0)
			rc = -1;
		else if (n >= max_pinned)
			rc = cof_error(err, COF_ECONFLICT,
				       "the volume has %lld pinned snapshots; the limit is %d",
				       (long long)n, max_pinned);
	}
	if (!rc && !(st = q(c, "INSERT INTO snapshots(" SNAP_COLS ", ord) VALUES(?,?,?,?,?,?,?,?,?,"
			   " (SELECT coalesce(max(ord), 0) + 1 FROM snapshots))", err)))
		rc = -1;
	if (!rc) {
		bind_text(st, 1, s->id);
		sqlite3_bind_int64(st, 2, s->vno);
		sqlite3_bind_int64(st, 3, s->src_vno);
		sqlite3_bind_int64(st, 4, s->seq);
		sqlite3_bind_int(st, 5, s->pinned);
		bind_text(st, 6, s->labels);
		sqlite3_bind_int64(st, 7, s->files);
		sqlite3_bind_int64(st, 8, s->bytes);
		sqlite3_bind_int64(st, 9, s->created_at);
		if (sqlite3_step(st) != SQLITE_DONE)
			rc = db_error(err, c->db, "adding a snapshot");
	}
	if (!rc)
		rc = snapshot_retain(c, s->vno, keep_unpinned, dropped, err);
	return writer_end(m, rc, err);
}

static int snapshot_load(conn *c, int64_t vno, const char *sid, cof_snaprow *out,
			 cof_err *err)
{
	sqlite3_stmt *st = q(c, "SELECT " SNAP_COLS " FROM snapshots WHERE id = ? AND vno = ?", err);
	int r;

	if (!st)
		return -1;
	bind_text(st, 1, sid);
	sqlite3_bind_int64(st, 2, vno);
	r = sqlite3_step(st);
	if (r == SQLITE_ROW)
		row_snapshot(st, out);
	sqlite3_reset(st);
	if (r == SQLITE_DONE)
		return cof_error(err, COF_ENOTFOUND, "snapshot '%.64s' not found", sid);
	return r == SQLITE_ROW ? 0 : db_error(err, c->db, "reading a snapshot");
}

int cof_meta_snapshot_get(cof_meta *m, int64_t vno, const char *sid, cof_snaprow *out,
			  cof_err *err)
{
	conn *c = reader_get(m, err);
	int rc;

	if (!c)
		return -1;
	rc = snapshot_load(c, vno, sid, out, err);
	reader_put(m, c);
	return rc;
}

int cof_meta_snapshot_list(cof_meta *m, int64_t vno, cof_snap_fn fn, void *ctx,
			   cof_err *err)
{
	conn *c = reader_get(m, err);
	cof_snaprow *s = malloc(sizeof *s);
	sqlite3_stmt *st = NULL;
	int r, rc = 0;

	if (!c || !s || !(st = q(c, "SELECT " SNAP_COLS " FROM snapshots WHERE vno = ?"
				 " ORDER BY ord", err))) {
		free(s);
		reader_put(m, c);
		return s ? -1 : cof_error(err, COF_EINTERNAL, "out of memory");
	}
	sqlite3_bind_int64(st, 1, vno);
	while ((r = sqlite3_step(st)) == SQLITE_ROW) {
		row_snapshot(st, s);
		if (fn(ctx, s))
			break;
	}
	if (r != SQLITE_ROW && r != SQLITE_DONE)
		rc = db_error(err, c->db, "listing snapshots");
	sqlite3_reset(st);
	free(s);
	reader_put(m, c);
	return rc;
}

int cof_meta_snapshot_update(cof_meta *m, int64_t vno, const char *sid, int pinned,
			     const char *labels, int max_pinned, cof_err *err)
{
	conn *c = writer_begin(m, err);
	cof_snaprow *s = malloc(sizeof *s);
	sqlite3_stmt *st;
	int rc = s ? 0 : cof_error(err, COF_EINTERNAL, "out of memory");

	if (!c) {
		free(s);
		return -1;
	}
	if (!rc)
		rc = snapshot_load(c, vno, sid, s, err);
	if (!rc && pinned == 1 && !s->pinned) {
		int64_t n = snapshot_count(c, vno, 1, err);
		if (n < 0)
			rc = -1;
		else if (n >= max_pinned)
			rc = cof_error(err, COF_ECONFLICT,
				       "the volume has %lld pinned snapshots; the limit is %d",
				       (long long)n, max_pinned);
	}
	if (!rc && !(st = q(c, "UPDATE snapshots SET pinned = ?, labels = ? WHERE id = ?", err)))
		rc = -1;
	if (!rc) {
		sqlite3_bind_int(st, 1, pinned < 0 ? s->pinned : pinned);
		bind_text(st, 2, labels ? labels : s->labels);
		bind_text(st, 3, sid);
		if (sqlite3_step(st) != SQLITE_DONE)
			rc = db_error(err, c->db, "updating a snapshot");
	}
	free(s);
	return writer_end(m, rc, err);
}

int cof_meta_snapshot_delete(cof_meta *m, int64_t vno, const char *sid, cof_err *err)
{
	conn *c = writer_begin(m, err);
	cof_snaprow *s = malloc(sizeof *s);
	int rc = s ? 0 : cof_error(err, COF_EINTERNAL, "out of memory");

	if (!c) {
		free(s);
		return -1;
	}
	if (!rc)
		rc = snapshot_load(c, vno, sid, s, err);
	if (!rc)
		rc = snapshot_drop(c, sid, vno, s->src_vno, err);
	free(s);
	return writer_end(m, rc, err);
}

/* ------------------------------------------------------ garbage collection */

static int step_all(conn *c, sqlite3_stmt *st, int64_t *changes, cof_err *err)
{
	if (!st)
		return -1;
	if (sqlite3_step(st) != SQLITE_DONE)
		return db_error(err, c->db, "collecting garbage");
	if (changes)
		*changes += sqlite3_changes(c->db);
	return 0;
}

int cof_meta_gc_prune(cof_meta *m, int64_t closed_before, int64_t changes_before,
		      int64_t *pruned, cof_err *err)
{
	conn *c = writer_begin(m, err);
	sqlite3_stmt *st;
	int rc;

	*pruned = 0;
	if (!c)
		return -1;
	/* Content of history dropped now has been unreferenced since its row was
	 * closed, over a grace period ago: it may go in this same sweep (the mark
	 * step un-marks what other rows still name). */
	st = q(c, "UPDATE blobs SET orphan_since = ?1 WHERE orphan_since IS NULL AND sha256 IN"
	       " (SELECT sha256 FROM entries WHERE to_seq IS NOT NULL AND closed_at < ?1 AND NOT"
	       " EXISTS (SELECT 1 FROM snapshots s WHERE s.src_vno = entries.vno AND"
	       " s.seq >= entries.from_seq AND s.seq < entries.to_seq))", err);
	if (st)
		sqlite3_bind_int64(st, 1, closed_before);
	rc = step_all(c, st, NULL, err);
	if (!rc && (st = q(c, "DELETE FROM entries WHERE to_seq IS NOT NULL AND closed_at < ?"
			   " AND NOT EXISTS (SELECT 1 FROM snapshots s WHERE s.src_vno ="
			   " entries.vno AND s.seq >= entries.from_seq AND s.seq < entries.to_seq)",
			   err))) {
		sqlite3_bind_int64(st, 1, closed_before);
		rc = step_all(c, st, pruned, err);
	} else if (!rc) {
		rc = -1;
	}
	/* The changes feed keeps at least its history window; the oldest seq still
	 * answered is remembered per volume so older `since` values get 410. */
	if (!rc && (st = q(c, "UPDATE volumes SET history_from = (SELECT max(seq) FROM changes"
			   " WHERE changes.vno = volumes.vno AND at < ?1) WHERE EXISTS (SELECT 1"
			   " FROM changes WHERE changes.vno = volumes.vno AND at < ?1)", err))) {
		sqlite3_bind_int64(st, 1, changes_before);
		rc = step_all(c, st, NULL, err);
	} else if (!rc) {
		rc = -1;
	}
	if (!rc && (st = q(c, "DELETE FROM changes WHERE at < ?", err))) {
		sqlite3_bind_int64(st, 1, changes_before);
		rc = step_all(c, st, NULL, err);
	} else if (!rc) {
		rc = -1;
	}
	return writer_end(m, rc, err);
}

int cof_meta_gc_mark(cof_meta *m, int64_t now, cof_err *err)
{
	conn *c = writer_begin(m, err);
	sqlite3_stmt *st;
	int rc;

	if (!c)
		return -1;
	st = q(c, "UPDATE blobs SET orphan_since = ? WHERE orphan_since IS NULL AND NOT EXISTS"
	       " (SELECT 1 FROM entries e WHERE e.sha256 = blobs.sha256)", err);
	if (st)
		sqlite3_bind_int64(st, 1, now);
	rc = step_all(c, st, NULL, err);
	if (!rc)
		rc = step_all(c, q(c, "UPDATE blobs SET orphan_since = NULL WHERE orphan_since IS"
				   " NOT NULL AND EXISTS (SELECT 1 FROM entries e WHERE"
				   " e.sha256 = blobs.sha256)", err), NULL, err);
	return writer_end(m, rc, err);
}

static int each_sha(conn *c, sqlite3_stmt *st, cof_sha_fn fn, void *ctx, cof_err *err)
{
	int r;

	while ((r = sqlite3_step(st)) == SQLITE_ROW)
		if (fn(ctx, (const char *)sqlite3_column_text(st, 0), sqlite3_column_int64(st, 1)))
			break;
	sqlite3_reset(st);
	return (r == SQLITE_ROW || r == SQLITE_DONE) ? 0 : db_error(err, c->db, "reading blobs");
}

int cof_meta_gc_orphans(cof_meta *m, int64_t before, cof_sha_fn fn, void *ctx,
			cof_err *err)
{
	conn *c = reader_get(m, err);
	sqlite3_stmt *st;
	int rc = -1;

	if (!c)
		return -1;
	if ((st = q(c, "SELECT sha256, size FROM blobs WHERE orphan_since <= ?", err))) {
		sqlite3_bind_int64(st, 1, before);
		rc = each_sha(c, st, fn, ctx, err);
	}
	reader_put(m, c);
	return rc;
}

int cof_meta_blob_forget(cof_meta *m, const char *sha, cof_err *err)
{
	conn *c = writer_begin(m, err);
	sqlite3_stmt *st;
	int64_t n = 0;
	int rc;

	if (!c)
		return -1;
	st = q(c, "DELETE FROM blobs WHERE sha256 = ? AND orphan_since IS NOT NULL AND NOT EXISTS"
	       " (SELECT 1 FROM entries e WHERE e.sha256 = blobs.sha256)", err);
	if (st)
		bind_text(st, 1, sha);
	rc = step_all(c, st, &n, err);
	if (writer_end(m, rc, err))
		return -1;
	return n > 0;
}

int cof_meta_blob_known(cof_meta *m, const char *sha, cof_err *err)
{
	conn *c = reader_get(m, err);
	sqlite3_stmt *st;
	int rc = -1;

	if (!c)
		return -1;
	if ((st = q(c, "SELECT 1 FROM blobs WHERE sha256 = ?", err))) {
		bind_text(st, 1, sha);
		int r = sqlite3_step(st);
		rc = r == SQLITE_ROW ? 1 : r == SQLITE_DONE ? 0 : db_error(err, c->db, "blobs");
		sqlite3_reset(st);
	}
	reader_put(m, c);
	return rc;
}

int cof_meta_blob_inline(cof_meta *m, const char *sha, unsigned char **data,
			 size_t *len, cof_err *err)
{
	conn *c = reader_get(m, err);
	sqlite3_stmt *st;
	int rc = -1;

	if (!c)
		return -1;
	if ((st = q(c, "SELECT data FROM blobs WHERE sha256 = ? AND data IS NOT NULL", err))) {
		bind_text(st, 1, sha);
		int r = sqlite3_step(st);
		if (r == SQLITE_ROW) {
			size_t n = (size_t)sqlite3_column_bytes(st, 0);
			*data = malloc(n + 1);
			if (*data) {
				if (n)
					memcpy(*data, sqlite3_column_blob(st, 0), n);
				*len = n;
				rc = 1;
			} else {
				rc = cof_error(err, COF_EINTERNAL, "out of memory");
			}
		} else {
			rc = r == SQLITE_DONE ? 0 : db_error(err, c->db, "reading content");
		}
		sqlite3_reset(st);
	}
	reader_put(m, c);
	return rc;
}

int cof_meta_referenced(cof_meta *m, cof_sha_fn fn, void *ctx, cof_err *err)
{
	conn *c = reader_get(m, err);
	sqlite3_stmt *st;
	int rc = -1;

	if (!c)
		return -1;
	sqlite3_exec(c->db, "BEGIN", NULL, NULL, NULL);
	if ((st = q(c, "SELECT sha256, max(size) FROM entries GROUP BY sha256", err)))
		rc = each_sha(c, st, fn, ctx, err);
	sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL);
	reader_put(m, c);
	return rc;
}
