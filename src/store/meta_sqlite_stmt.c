/*
 * meta_sqlite_stmt.c — the SQLite store's statement helpers: binding
 * parameters, running a statement, reading its rows (the one loop every read
 * of the backend goes through) and copying columns; and the SQLite driver of
 * the SQL seam (store/sql.h) over them.
 */
#include <stdarg.h>
#include <string.h>
#include "store/meta_sqlite.h"
#include "store/meta_volume.h"

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

/* Binds `kinds` ("s" text, "i" int64, "b" blob and its int64 length, one
 * letter per parameter) from `ap`. */
static void bind_args(sqlite3_stmt *st, const char *kinds, va_list ap)
{
	for (int i = 0; kinds[i]; i++) {
		if (kinds[i] == 's') {
			cof_sqlite_bind_text(st, i + 1, va_arg(ap, const char *));
		} else if (kinds[i] == 'b') {
			const void *p = va_arg(ap, const void *);
			int64_t n = va_arg(ap, int64_t);
			sqlite3_bind_blob64(st, i + 1, p, (sqlite3_uint64)n, SQLITE_STATIC);
		} else {
			sqlite3_bind_int64(st, i + 1, va_arg(ap, int64_t));
		}
	}
}

/* The cached statement of `sql` on c with `kinds` bound from `ap`; NULL (err
 * set) when it cannot be prepared. */
static sqlite3_stmt *bound(conn *c, const char *sql, cof_err *err, const char *kinds,
			   va_list ap)
{
	sqlite3_stmt *st = cof_sqlite_q(c, sql, err);

	if (st)
		bind_args(st, kinds, ap);
	return st;
}

int cof_sqlite_run(conn *c, int64_t *changed, const char *sql, const char *what,
		   cof_err *err, const char *kinds, ...)
{
	va_list ap;
	va_start(ap, kinds);
	sqlite3_stmt *st = bound(c, sql, err, kinds, ap);
	va_end(ap);

	if (!st)
		return -1;
	if (sqlite3_step(st) != SQLITE_DONE)
		return cof_sqlite_db_error(err, c->db, what);
	if (changed)
		*changed = sqlite3_changes(c->db);
	return 0;
}

/* Steps the bound statement st (NULL: not prepared, err set), calling fn on
 * each row until it says stop or fails, then resets it: -1, or the number of
 * rows fn was given. */
static int each_row(conn *c, sqlite3_stmt *st, const char *what, cof_sqlite_row_fn fn,
		    void *ctx, cof_err *err)
{
	int r = SQLITE_DONE, rc = 0, n = 0;

	if (!st)
		return -1;
	while (!rc && (r = sqlite3_step(st)) == SQLITE_ROW) {
		n++;
		rc = fn(ctx, st, err);
	}
	if (!rc && r != SQLITE_DONE)
		rc = cof_sqlite_db_error(err, c->db, what);
	sqlite3_reset(st);
	return rc < 0 ? -1 : n;
}

int cof_sqlite_rows(conn *c, const char *sql, const char *what, cof_sqlite_row_fn fn,
		    void *ctx, cof_err *err, const char *kinds, ...)
{
	va_list ap;
	va_start(ap, kinds);
	sqlite3_stmt *st = bound(c, sql, err, kinds, ap);
	va_end(ap);
	return each_row(c, st, what, fn, ctx, err);
}

int cof_sqlite_read(cof_meta *m, const char *sql, const char *what, cof_sqlite_row_fn fn,
		    void *ctx, cof_err *err, const char *kinds, ...)
{
	conn *c = cof_sqlite_reader_get(m, err);
	va_list ap;
	int rc;

	if (!c)
		return -1;
	va_start(ap, kinds);
	rc = each_row(c, bound(c, sql, err, kinds, ap), what, fn, ctx, err);
	va_end(ap);
	cof_sqlite_reader_put(m, c);
	return rc;
}

int cof_sqlite_row_int(void *ctx, sqlite3_stmt *st, cof_err *err)
{
	(void)err;
	*(int64_t *)ctx = sqlite3_column_int64(st, 0);
	return 1;
}

int cof_sqlite_write(cof_meta *m, const char *sql, const char *what, cof_err *err,
		     const char *kinds, ...)
{
	conn *c = cof_sqlite_writer_begin(m, 0, err);
	sqlite3_stmt *st;
	va_list ap;
	int rc = -1;

	if (!c)
		return -1;
	va_start(ap, kinds);
	st = bound(c, sql, err, kinds, ap);
	va_end(ap);
	if (st)
		rc = sqlite3_step(st) == SQLITE_DONE ? 0 : cof_sqlite_db_error(err, c->db, what);
	return cof_sqlite_writer_end(m, rc, err);
}

const char *cof_sqlite_upper(const char **prefix, cof_buf *upper, cof_err *err)
{
	*prefix = *prefix ? *prefix : "";
	if (cof_prefix_upper(*prefix, upper)) {
		cof_error(err, COF_EINTERNAL, "out of memory");
		return NULL;
	}
	return upper->data;
}

/* ------------------------------------------------- the driver (store/sql.h) */

const char *const cof_sqlite_tokens[COF_SQL_TOKENS] = { "", "rowid", " COLLATE BINARY",
							      "json_patch", "", "json_each",
							      "INTEGER PRIMARY KEY", "BLOB",
							      " WITHOUT ROWID", " OR FAIL" };

/* -1, or COF_SQL_RETRY when the failure of db was SQLite being busy. */
static int failed(sqlite3 *db, cof_err *err, const char *what)
{
	int code = sqlite3_errcode(db);

	cof_sqlite_db_error(err, db, what);
	return code == SQLITE_BUSY || code == SQLITE_LOCKED ? COF_SQL_RETRY : -1;
}

/* A write takes the writer and opens a change of the group commit (BEGIN
 * IMMEDIATE: one writer for every process on the file); a read takes the
 * pool's reader (the thread's pinned one), and BEGIN unless it is one
 * statement or the reader is already inside a hold's transaction. */
static int sq_begin(cof_sql_tx *tx, cof_err *err)
{
	conn *c;

	if (tx->mode & COF_SQL_WRITE) {
		tx->c = cof_sqlite_writer_begin(tx->m, !!(tx->mode & COF_SQL_MANY), err);
		return tx->c ? 0 : -1;
	}
	if (!(c = cof_sqlite_reader_get(tx->m, err)))
		return -1;
	tx->c = c;
	if (!(tx->mode & COF_SQL_ONE) && sqlite3_get_autocommit(c->db)) {
		if (sqlite3_exec(c->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
			int rc = failed(c->db, err, "beginning a read");
			cof_sqlite_reader_put(tx->m, c);
			return rc;
		}
		tx->began = 1;
	}
	return 0;
}

static int sq_end(cof_sql_tx *tx, int rc, cof_err *err)
{
	conn *c = tx->c;

	if (tx->mode & COF_SQL_WRITE) {
		int e = cof_sqlite_writer_end(tx->m, rc < 0 ? -1 : 0, err);
		return rc < 0 ? rc : e;
	}
	if (tx->began)   /* a read changed nothing: COMMIT only ends it */
		sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL);
	cof_sqlite_reader_put(tx->m, c);
	return rc;
}

static int sq_exec(cof_sql_tx *tx, int64_t *changed, const char *sql, const char *what,
		   cof_err *err, const char *kinds, va_list ap)
{
	conn *c = tx->c;
	sqlite3_stmt *st = bound(c, sql, err, kinds, ap);

	if (!st)
		return -1;
	if (sqlite3_step(st) != SQLITE_DONE) {
		int rc = failed(c->db, err, what);
		sqlite3_reset(st);
		return rc;
	}
	if (changed)
		*changed = sqlite3_changes(c->db);
	return 0;
}

static int sq_query(cof_sql_tx *tx, const char *sql, const char *what, cof_sql_row_fn fn,
		    void *ctx, cof_err *err, const char *kinds, va_list ap)
{
	conn *c = tx->c;
	sqlite3_stmt *st = bound(c, sql, err, kinds, ap);
	cof_sql_row row = { &cof_sql_sqlite, st, 0 };
	int r = SQLITE_DONE, rc = 0, n = 0;

	if (!st)
		return -1;
	while (!rc && (r = sqlite3_step(st)) == SQLITE_ROW) {
		n++;
		rc = fn(ctx, &row, err);
	}
	if (!rc && r != SQLITE_DONE)
		rc = failed(c->db, err, what);
	sqlite3_reset(st);
	return rc < 0 ? rc : n;
}

/* The writer's BEGIN IMMEDIATE already serializes every writer of the file. */
static int sq_lock(cof_sql_tx *tx, int32_t space, const char *name, cof_err *err)
{
	(void)space;
	(void)name;
	if (!(tx->mode & COF_SQL_WRITE))
		return cof_error(err, COF_EINTERNAL, "metadata store: a lock outside a write");
	return 0;
}

static const char *sq_text(const cof_sql_row *r, int col, size_t *len)
{
	const unsigned char *s = sqlite3_column_text(r->res, col);

	*len = s ? (size_t)sqlite3_column_bytes(r->res, col) : 0;
	return s ? (const char *)s : "";
}

static int64_t sq_int64(const cof_sql_row *r, int col)
{
	return sqlite3_column_int64(r->res, col);
}

static int sq_isnull(const cof_sql_row *r, int col)
{
	return sqlite3_column_type(r->res, col) == SQLITE_NULL;
}

static int sq_blob(const cof_sql_row *r, int col, unsigned char **data, size_t *len)
{
	const void *p;
	size_t n;

	*data = NULL;
	if (sq_isnull(r, col))
		return 0;
	p = sqlite3_column_blob(r->res, col);
	n = (size_t)sqlite3_column_bytes(r->res, col);
	if (!(*data = cof_malloc(n + 1)))
		return -1;
	if (n)
		memcpy(*data, p, n);
	(*data)[n] = '\0';
	if (len)
		*len = n;
	return 1;
}

static const void *sq_blob_ref(const cof_sql_row *r, int col, size_t *len)
{
	const void *p = sqlite3_column_blob(r->res, col);

	*len = (size_t)sqlite3_column_bytes(r->res, col);
	return p;
}

/* A change of the write path (meta_write.c) is the writer's: a savepoint of
 * its own in the group commit's batch (meta_sqlite_commit.c). Its volume is
 * read again by each change: a statement in process. */
static int sq_change_begin(cof_sql_tx *tx, int64_t vno, const cof_volrow **kept,
			   cof_err *err)
{
	(void)vno;
	*kept = NULL;
	tx->c = cof_sqlite_writer_begin(tx->m, !!(tx->mode & COF_SQL_MANY), err);
	tx->began = tx->c != NULL;
	return tx->c ? 0 : -1;
}

/* A change that stored nothing is rolled back too: what it read commits
 * with its batch. */
static int sq_change_end(cof_sql_tx *tx, int rc, int wrote, const cof_volrow *vol,
			 cof_err *err)
{
	int e;

	(void)vol;
	e = cof_sqlite_writer_end(tx->m, rc < 0 ? rc : !wrote, err);
	if (rc < 0)
		return rc;
	return e < 0 ? -1 : 0;
}

/* In process: nothing to gain by waiting. */
static int sq_send(cof_sql_tx *tx, const char *sql, const char *what, cof_err *err,
		   const char *kinds, va_list ap)
{
	return sq_exec(tx, NULL, sql, what, err, kinds, ap);
}

const cof_sql_driver cof_sql_sqlite = {
	.name = "sqlite", .local = 1, .begin = sq_begin, .end = sq_end, .exec = sq_exec,
	.query = sq_query, .lock = sq_lock, .mark = cof_sqlite_cache_begin,
	.text = sq_text, .int64 = sq_int64, .isnull = sq_isnull, .blob = sq_blob,
	.blob_ref = sq_blob_ref, .change_begin = sq_change_begin, .change_end = sq_change_end,
	.send = sq_send, .send_last = sq_send,
};
