/*
 * meta_pg.h — what the files of the PostgreSQL metadata store share (not part
 * of the meta.h interface): the connection pool, prepared statements, the
 * query helper and row helpers.
 *
 * Every member of cof_meta_ops is a static pg_<op> in one of the files, with
 * the parameters and contract meta.h states; each file fills its members.
 */
#ifndef COF_META_PG_H
#define COF_META_PG_H

#include <pthread.h>
#include <stdatomic.h>
#include <libpq-fe.h>
#include "store/meta.h"
#include "store/sql.h"

#define PG_STMTS 192       /* prepared statements per connection (about 2x ours) */
#define PG_POOL_IDLE 16    /* idle connections kept */

typedef struct pgconn {
	PGconn *db;
	const char *prepared[PG_STMTS]; /* SQL text (by address) of statement "sN" */
	struct pgconn *next;
} pgconn;

#define PG_GROUP_BUCKETS 64 /* volumes being written on this node, by vno */
#define PG_BATCH_MAX 16      /* changes a batch holds (subtransactions: < 64) */
typedef struct pg_group pg_group;

typedef struct pg_meta {
	cof_meta base;                /* first (meta.h) */
	char *url;
	pthread_mutex_t plock;
	pgconn *idle;
	int nidle;
	pthread_mutex_t glock;        /* the groups (meta_pg_group.c) */
	pg_group *groups[PG_GROUP_BUCKETS];
	pg_group *spare;              /* one kept for the next volume written (under glock) */
} pg_meta;

#define PGM(m) ((pg_meta *)(void *)(m))

/* A connection from the pool (a new one when none is idle), and back: a
 * transaction still open is rolled back first; one that is broken, or whose
 * rollback failed, is closed instead of kept. */
pgconn *cof_pg_get(cof_meta *m, cof_err *err);
void cof_pg_put(cof_meta *m, pgconn *c);

/* Runs the prepared statement of `sql` (a string literal: prepared once per
 * connection, known by its address). `kinds` names each parameter in turn:
 * 's' text (const char *, NULL = SQL NULL; refused unless valid UTF-8), 'i'
 * int64_t, 'b' bytea (const void *, int64_t length; NULL pointer = SQL NULL).
 * Returns the result (PQclear it) or NULL with `err` filled naming `what`. */
PGresult *cof_pg_q(pgconn *c, const char *sql, const char *what, cof_err *err,
		   const char *kinds, ...);
/* cof_pg_q for statements whose result is not needed: 0 or -1. With `n`,
 * *n gets the number of rows affected. */
int cof_pg_do(pgconn *c, const char *sql, const char *what, int64_t *n, cof_err *err,
	      const char *kinds, ...);
/* cof_pg_do on a connection of the pool, taken and given back. */
int cof_pg_one(cof_meta *m, const char *sql, const char *what, int64_t *n, cof_err *err,
	       const char *kinds, ...);
/* Called on row `row` of a result (its values are borrowed until fn returns):
 * 0 = go on, 1 = stop, -1 = failed (err filled). */
typedef int (*cof_pg_row_fn)(void *ctx, PGresult *r, int row, cof_err *err);
/* Runs `sql` as cof_pg_q does and calls fn on each row of the result until it
 * says stop: the one loop of reading rows. Returns -1 (err filled: the query
 * or fn failed), else the number of rows the result had (0 = none found). */
int cof_pg_rows_on(pgconn *c, const char *sql, const char *what, cof_pg_row_fn fn,
		   void *ctx, cof_err *err, const char *kinds, ...);
/* cof_pg_rows_on on a connection of the pool, taken and given back. */
int cof_pg_rows(cof_meta *m, const char *sql, const char *what, cof_pg_row_fn fn,
		void *ctx, cof_err *err, const char *kinds, ...);
/* A cof_pg_row_fn for one number: column 0 of the first row into the
 * int64_t that ctx points to. */
int cof_pg_row_int(void *ctx, PGresult *r, int row, cof_err *err);
/* Runs plain SQL without parameters (BEGIN, COMMIT, the schema): 0 or -1. */
int cof_pg_exec(pgconn *c, const char *sql, cof_err *err);

/* ---- pipelines: statements whose results nobody needs before the last is
 * sent go in one round trip (libpq's pipeline mode). Make each with
 * cof_pg_stmt_set (its parameters as cof_pg_q takes them; the values must live
 * until cof_pg_pipeline returns), or set .sql NULL and .what to a statement
 * without parameters and not prepared (BEGIN, COMMIT). */
#define PG_MAXPARAMS 16
#define PG_PIPE_MAX 16
typedef struct cof_pg_stmt {
	const char *sql, *what;
	int n;
	const char *vals[PG_MAXPARAMS];
	int lens[PG_MAXPARAMS], fmts[PG_MAXPARAMS];
	char ints[PG_MAXPARAMS][24];
	PGresult *res;                /* after cof_pg_pipeline: the caller clears it */
} cof_pg_stmt;
int cof_pg_stmt_set(cof_pg_stmt *s, const char *sql, const char *what, cof_err *err,
		const char *kinds, ...);
/* Sends s[0..n) in order and reads their results: 0 with each s[i].res set,
 * or -1 naming the first that failed (the statements after it did not run;
 * in a transaction it is then aborted) with every res cleared. */
int cof_pg_pipeline(pgconn *c, cof_pg_stmt *s, int n, cof_err *err);
/* Maps a failed result (or a broken connection) to the API: lost connection,
 * serialization failure, deadlock and disk full = 503; else 500. Returns -1. */
int cof_pg_error(cof_err *err, pgconn *c, PGresult *res, const char *what);

/* Group commit of one volume's changes on this node (meta_pg_group.c): the
 * driver's change_begin and change_end (sql.h). In a change (tx->x is its
 * batch), the driver's exec and query run a statement with what is queued,
 * in one pipeline (cof_pg_change_stmt: s->res set; a statement that does not
 * begin SELECT or WITH writes, and takes the change's savepoint first); its
 * send queues one (cof_pg_change_send, the values copied); sync sends what
 * is queued, alone (before a statement run another way: the fork listing). */
int cof_pg_change_begin(cof_sql_tx *tx, int64_t vno, const cof_volrow **kept, cof_err *err);
int cof_pg_change_end(cof_sql_tx *tx, int rc, int wrote, const cof_volrow *vol,
		      cof_err *err);
int cof_pg_change_stmt(cof_sql_tx *tx, cof_pg_stmt *s, cof_err *err);
int cof_pg_change_send(cof_sql_tx *tx, const cof_pg_stmt *s, cof_err *err);
int cof_pg_change_sync(cof_sql_tx *tx, cof_err *err);
/* The driver's send_last: s (copied) goes in the COMMIT's pipeline when the
 * change is kept, in place of an earlier member's. */
int cof_pg_change_last(cof_sql_tx *tx, const cof_pg_stmt *s, cof_err *err);
/* Frees the group kept for reuse (pg_meta.spare), at close. */
void cof_pg_groups_free(pg_meta *p);

/* BEGIN on a pooled connection; cof_pg_end commits (ok == 0) or rolls back
 * and gives the connection back. */
pgconn *cof_pg_begin(cof_meta *m, const char *mode, cof_err *err);
int cof_pg_end(cof_meta *m, pgconn *c, int ok, cof_err *err);

/* Each file of the backend fills its own members of the table (meta_pg.c). */


/* Row helpers over text results. */
int64_t cof_pg_int(PGresult *r, int row, int col);
void cof_pg_copy(PGresult *r, int row, int col, char *out, size_t outsz);
/* The bytea value of a cell, malloc'd with a NUL after it (*len without it);
 * 0 = NULL cell (*data NULL), 1 = value, -1 = out of memory. */
int cof_pg_bytea(PGresult *r, int row, int col, unsigned char **data, size_t *len);
/* A fork's listing (sql.h cof_sql_driver.fork_list; meta_pg_read.c). */
int cof_pg_fork_list(cof_sql_tx *tx, int64_t vno, int64_t at_seq, const char *prefix,
		     const char *upper, const char *after, cof_entry_fn fn, void *ctx,
		     cof_err *err);
/* Queues a NOTIFY of a committed change (sent when the transaction commits). */
int cof_pg_notify(pgconn *c, const char *payload, cof_err *err);

#endif
