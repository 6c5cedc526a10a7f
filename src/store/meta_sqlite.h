/*
 * meta_sqlite.h — what the files of the SQLite metadata store share (not part
 * of the meta.h interface): connections, the statement cache and row helpers.
 */
#ifndef COF_META_SQLITE_H
#define COF_META_SQLITE_H

#include <pthread.h>
#include <stdatomic.h>
#include <sqlite3.h>
#include "store/meta.h"
#include "store/sql.h"

#define STMT_CACHE 192           /* cached statements per connection (about 1.5x ours) */
#define POOL_IDLE 16
#define POOL_PINNED 16            /* threads that keep a reader of their own */
/* The most changes one commit (one WAL fsync) carries: meta_sqlite_commit.c. */
#define COF_SQLITE_BATCH_MAX 64

typedef struct conn {
	sqlite3 *db;
	struct { const char *sql; sqlite3_stmt *st; } cache[STMT_CACHE];
	struct conn *next;
} conn;

/* The SQLite store: the meta.h base first. */
typedef struct sq_meta {
	cof_meta base;
	char *file;
	conn *writer;
	pthread_mutex_t wlock;
	pthread_mutex_t plock;
	conn *idle;
	int nidle;
	conn *pinned;                  /* held by a thread each (cof_meta_pin_reader) */
	int npinned;
	uint64_t serial;               /* tells this store from one closed before it */
	/* group commit (meta_sqlite_commit.c): the open batch, under wlock */
	atomic_int wwait;              /* writers waiting for wlock */
	int intx, nbatch;              /* a batch's transaction is open; its changes */
	struct sq_member *members;     /* their writers */
	pthread_mutex_t flock;         /* members' outcomes */
	pthread_cond_t fdone;
} sq_meta;
#define SQ(m) ((sq_meta *)(m))

/* The SQLite backend's table (filled once), and what fills it: each file of
 * the backend sets the members it implements. */
const cof_meta_ops *cof_meta_sqlite_ops(void);
void cof_sqlite_ops_main(cof_meta_ops *o);


/* What the dialect tokens of shared SQL are on SQLite (store/sql.h). */
extern const char *const cof_sqlite_tokens[COF_SQL_TOKENS];
/* Maps the connection's last error to the API (disk full = 503). Returns -1. */
int cof_sqlite_db_error(cof_err *err, sqlite3 *db, const char *what);
/* A cached, reset statement for `sql` (a string literal: cached by address). */
sqlite3_stmt *cof_sqlite_q(conn *c, const char *sql, cof_err *err);
/* A reader connection from the pool, and back. */
conn *cof_sqlite_reader_get(cof_meta *m, cof_err *err);
void cof_sqlite_reader_put(cof_meta *m, conn *c);
int cof_sqlite_exec(conn *c, const char *sql, cof_err *err);
/* Takes the writer and opens a change; keeps (ok == 0) or undoes it, commits
 * it with its batch and gives the writer back (meta_sqlite_commit.c). */
/* Takes the writer for one change of the group commit (meta_sqlite_commit.c);
 * `alone`: a change of many statements, which starts a batch of its own (the
 * open one committed first) so that it runs with no savepoint. */
conn *cof_sqlite_writer_begin(cof_meta *m, int alone, cof_err *err);
int cof_sqlite_writer_end(cof_meta *m, int ok, cof_err *err);
void cof_sqlite_bind_text(sqlite3_stmt *st, int i, const char *s);
/* Runs the writer's statement `sql` with binds `kinds` ("s" text, "i"
 * int64, one per parameter); *changed (when not NULL) = rows it changed.
 * 0, or -1 with err naming `what`. */
int cof_sqlite_run(conn *c, int64_t *changed, const char *sql, const char *what,
		   cof_err *err, const char *kinds, ...);
/* Called on the row st stands on (its values are borrowed until fn returns):
 * 0 = go on, 1 = stop, -1 = failed (err filled). */
typedef int (*cof_sqlite_row_fn)(void *ctx, sqlite3_stmt *st, cof_err *err);
/* Runs the statement of `sql` on c with binds as cof_sqlite_run's and calls
 * fn on each row until it says stop: the one loop of reading rows. Returns -1
 * (err filled: the step, naming `what`, or fn failed), else the number of
 * rows fn was given (0 = none found). */
int cof_sqlite_rows(conn *c, const char *sql, const char *what, cof_sqlite_row_fn fn,
		    void *ctx, cof_err *err, const char *kinds, ...);
/* cof_sqlite_rows on a reader connection of the pool, taken and given back. */
int cof_sqlite_read(cof_meta *m, const char *sql, const char *what, cof_sqlite_row_fn fn,
		    void *ctx, cof_err *err, const char *kinds, ...);
/* A cof_sqlite_row_fn for one number: column 0 into the int64_t ctx points to. */
int cof_sqlite_row_int(void *ctx, sqlite3_stmt *st, cof_err *err);
/* The same as one change of its own: takes the writer, runs, commits. */
int cof_sqlite_write(cof_meta *m, const char *sql, const char *what, cof_err *err,
		     const char *kinds, ...);
void cof_sqlite_col_copy(sqlite3_stmt *st, int i, char *out, size_t outsz);
/* The valid-text upper bound of *prefix (NULL = ""; *prefix is set to it) in
 * `upper`, for a range [*prefix, upper) bound as text: upper->data, or NULL
 * (out of memory, err set). */
const char *cof_sqlite_upper(const char **prefix, cof_buf *upper, cof_err *err);

/* The calling thread's pinned reader of m (cof_meta_pin_reader), or NULL. */
conn *cof_sqlite_pinned(cof_meta *m);
/* An event loop's rows kept between requests (meta_sqlite_cache.c). A read
 * takes a mark first (cof_sqlite_cache_begin: 0 = nothing kept here); a
 * kept row is used while no commit happened since its own mark, and a row
 * read after the mark is kept under it. The hold's BEGIN dates the rows read
 * in its transaction. */
typedef cof_sql_mark cof_sqlite_mark;
void cof_sqlite_cache_hold(cof_meta *m, int on);
int cof_sqlite_cache_begin(cof_meta *m, cof_sqlite_mark *mk);
/* Entries: cof_sql_cached_entry, cof_sql_keep_entry (store/sql.h). */

#endif
