/*
 * sql.h — the SQL driver seam of the metadata store: what the metadata code
 * written once (meta_key.c, meta_agent.c, meta_subject.c, meta_webhook.c,
 * meta_state.c, meta_snapshot.c, meta_volume.c, meta_fork.c, meta_read.c,
 * meta_changes.c, meta_gc.c, meta_idem.c, meta_write.c) asks of a database, and what
 * each driver gives.
 *
 * Below the seam, two drivers: SQLite's in meta_sqlite_stmt.c (its writer
 * lock and group commit, BEGIN IMMEDIATE, the statement cache, the pinned
 * readers and the WAL-mark row cache stay there) and PostgreSQL's in
 * meta_pg.c (its pool, prepared statements, pipelines and error mapping).
 * Above it, SQL is written once:
 *  - parameters are ?N (1-based); the PG driver rewrites them to $N when it
 *    prepares the text (once per text and connection, as it prepares it);
 *  - the dialect points left are named tokens in braces, each driver
 *    expanding them as it prepares the text (COF_SQL_TOKENS below);
 *  - a parameter's type PostgreSQL cannot infer is written CAST(?N AS bigint)
 *    or CAST(?N AS text), which both read alike.
 * A text is known by its address (a string literal), as both statement
 * caches key it.
 *
 * The write path (meta_write.c: cof_meta_change and the cof_txn_x inside it)
 * is written above it too; what stays below is each driver's group commit
 * (change_begin, change_end) and where a statement whose rows nobody needs
 * goes (send: SQLite runs it at once, PostgreSQL queues it into its batch's
 * pipeline).
 *
 * A store's driver is reached from its cof_meta (meta.h: m->sql). Every
 * function returns -1 with err filled on failure, or COF_SQL_RETRY (-2) when
 * the failure is the database being busy (SQLite BUSY/LOCKED; PostgreSQL
 * serialization failure, deadlock, lock not available): the whole
 * transaction may succeed if run again. Both are < 0.
 */
#ifndef COF_SQL_H
#define COF_SQL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include "store/meta.h"

#define COF_SQL_RETRY (-2)

/* The tokens of dialect, as written in shared SQL, and what each driver
 * makes of them (sql.c lists the names, each driver its expansions):
 *   {jsonb}  after a text column holding JSON, before ->> 'key':
 *            SQLite nothing (its ->> reads text), PostgreSQL ::jsonb;
 *   {rowid}  the column that orders rows as they were first inserted:
 *            SQLite rowid, PostgreSQL id (a bigserial);
 *   {C}      after a text operand: compare and order it bytewise (UTF-8
 *            code point order, meta.h), SQLite COLLATE BINARY (its default),
 *            PostgreSQL COLLATE "C" (its default follows the locale);
 *   {json_patch}  a function of two JSON object texts: the first with the
 *            second's keys set (RFC 7396 merge of an object of strings),
 *            written {json_patch}(a{jsonb}, b{jsonb}); SQLite json_patch,
 *            PostgreSQL jsonb_concat (its || operator; the jsonb result is
 *            stored into a text column by assignment);
 *   {for_update}  after a SELECT in a write transaction: lock the rows read
 *            to the commit; SQLite nothing (its writer is the one writer),
 *            PostgreSQL FOR UPDATE (the row lock other writers take);
 *   {json_each}  a table function of a JSON array text: a row an element,
 *            its text in column `value`, written {json_each}(?N); SQLite
 *            json_each, PostgreSQL json_array_elements_text (one query for
 *            a list of keys: WHERE k IN (SELECT value FROM {json_each}(?1)));
 *   {or_fail}  after INSERT or UPDATE of one row: SQLite OR FAIL, PostgreSQL
 *            nothing. A statement that fails fails its change, which is
 *            undone whole, so a one-row statement needs no undo of its own:
 *            with OR FAIL SQLite keeps none (no statement journal), where
 *            each statement's journal, walked from its start as it ends,
 *            made a change of many writes quadratic (8,000 removes in one
 *            transaction: 2.2 s, with OR FAIL 0.55 s);
 * and in the schema (schema.c) only:
 *   {serial} a bigint key numbered on insert: SQLite INTEGER PRIMARY KEY,
 *            PostgreSQL bigserial PRIMARY KEY;
 *   {blob}   bytes: SQLite BLOB, PostgreSQL bytea;
 *   {norowid} after a table's definition: SQLite WITHOUT ROWID, PostgreSQL
 *            nothing. */
#define COF_SQL_TOKENS 10

/* Modes of cof_sql_begin. COF_SQL_ONE: the caller runs one statement, which
 * the driver may run without an explicit transaction (SQLite: a reader
 * without BEGIN, or the writer's change; PostgreSQL: autocommit). */
enum {
	COF_SQL_READ = 0,   /* a read transaction: one snapshot for its statements */
	COF_SQL_WRITE = 1,  /* a write transaction (SQLite: the writer, group commit) */
	COF_SQL_ONE = 2,
	/* with COF_SQL_WRITE: a transaction of many statements (past
	 * COF_SQL_MANY_AT), which SQLite runs as a batch of its own with no
	 * savepoint (meta_sqlite_commit.c: a savepoint makes it quadratic) */
	COF_SQL_MANY = 4,
};
/* How many statements make a write COF_SQL_MANY; the mode of a write of n. */
#define COF_SQL_MANY_AT 64
#define COF_SQL_WRITE_OF(n) (COF_SQL_WRITE | ((n) > COF_SQL_MANY_AT ? COF_SQL_MANY : 0))

/* A transaction, on the caller's stack; its members are the driver's. */
typedef struct cof_sql_tx {
	cof_meta *m;
	const struct cof_sql_driver *d;
	void *c;            /* the driver's connection */
	int mode, began;
	void *x;            /* a change's: the driver's batch (PostgreSQL), else NULL */
} cof_sql_tx;

/* The row a query stands on, read through the accessors below; its values
 * are borrowed until the row callback returns. */
typedef struct cof_sql_row {
	const struct cof_sql_driver *d;
	void *res;
	int i;
} cof_sql_row;

/* Called on each row: 0 = go on, 1 = stop, -1 = failed (err filled). */
typedef int (*cof_sql_row_fn)(void *ctx, const cof_sql_row *row, cof_err *err);

/* The commit mark of the row cache below the seam (meta_sqlite_cache.c):
 * a mark from a driver without one keeps nothing (ok = keep = 0). */
typedef struct cof_sql_mark {
	uint32_t now[4], fill[4];
	int ok, keep;
} cof_sql_mark;

/* What a driver gives (one static table per driver). `kinds` names each
 * parameter in turn: 's' text (const char *, NULL = SQL NULL), 'i' int64_t,
 * 'b' blob (const void *, then int64_t length; NULL = SQL NULL). */
typedef struct cof_sql_driver {
	const char *name;
	/* 1 when a statement costs no round trip (SQLite, in process): a read
	 * through a fork's chain then tries the volume's own row by itself
	 * first, the cheapest statement, and the chain's query only when it has
	 * none (meta_read.c); 0: the one query over the chain. */
	int local;
	/* 1 when processes on several nodes share the store and no lock file
	 * orders a write against the collector: the metadata records the content
	 * a write is about to name and the collector's claims (blobs.pending_at,
	 * claimed_at: meta_gc.c); PostgreSQL. 0: the data dir's gc_lock orders
	 * them (store/lock.c); the columns are in the one schema (schema.c) but
	 * never set; SQLite. */
	int claims;
	int (*begin)(cof_sql_tx *tx, cof_err *err);
	/* commits (rc == 0) or rolls back; gives the connection back; rc or the
	 * commit's failure */
	int (*end)(cof_sql_tx *tx, int rc, cof_err *err);
	int (*exec)(cof_sql_tx *tx, int64_t *changed, const char *sql, const char *what,
		    cof_err *err, const char *kinds, va_list ap);
	int (*query)(cof_sql_tx *tx, const char *sql, const char *what, cof_sql_row_fn fn,
		     void *ctx, cof_err *err, const char *kinds, va_list ap);
	/* Serializes the writers of (space, name) across every process and node
	 * to the commit (NULL name: the space alone). */
	int (*lock)(cof_sql_tx *tx, int32_t space, const char *name, cof_err *err);
	int (*mark)(cof_meta *m, cof_sql_mark *mk);
	const char *(*text)(const cof_sql_row *r, int col, size_t *len);
	int64_t (*int64)(const cof_sql_row *r, int col);
	int (*isnull)(const cof_sql_row *r, int col);
	int (*blob)(const cof_sql_row *r, int col, unsigned char **data, size_t *len);
	/* A fork's listing when the driver has a faster one than meta_read.c's,
	 * else NULL: PostgreSQL's (meta_pg_read.c) joins each level's page by
	 * LATERAL in one query a page, where the two queries written once read
	 * each level's page twice (2.9x the time of a 100,000-file fork's whole
	 * listing). The entries under `prefix` (its upper bound `upper`) after
	 * `after`, as cof_meta_list_tx gives them: 0 or -1. */
	int (*fork_list)(cof_sql_tx *tx, int64_t vno, int64_t at_seq, const char *prefix,
			 const char *upper, const char *after, cof_entry_fn fn, void *ctx,
			 cof_err *err);
	/* The bytes of a blob cell where the driver holds them, *len of them,
	 * valid until the row callback returns; NULL member: the driver has to
	 * decode them (PostgreSQL's bytea), cof_sql_blob_ref copies. */
	const void *(*blob_ref)(const cof_sql_row *r, int col, size_t *len);
	/* ---- a change of the write path (meta_write.c), in the driver's group
	 * commit. change_begin (tx->m, d and mode COF_SQL_WRITE set by the
	 * caller) joins the open batch or opens one, on tx: SQLite takes its
	 * writer and a savepoint of the change's own; PostgreSQL takes the
	 * volume's writer on this node and its batch, BEGIN queued to go with
	 * the change's first statement, and a savepoint before the change's
	 * first write. *kept: the volume's row as the batch's earlier changes
	 * left it, or NULL: the change loads it {for_update}. 0 or < 0. */
	int (*change_begin)(cof_sql_tx *tx, int64_t vno, const cof_volrow **kept,
			    cof_err *err);
	/* Ends the change: kept (rc == 0 and wrote: `vol` is the volume's row
	 * after it, what the batch's next change starts from) or undone (rolled
	 * back to its savepoint: alone, the batch going on), then committed with
	 * its batch (one fsync, one NOTIFY after the COMMIT on PostgreSQL) or
	 * left to a writer waiting behind it. Returns rc, or < 0 (err set) when
	 * the batch did not commit: only then is a kept change not durable. */
	int (*change_end)(cof_sql_tx *tx, int rc, int wrote, const cof_volrow *vol,
			  cof_err *err);
	/* A statement whose rows (and count) nobody needs: run at once, or
	 * queued with its values copied and sent with the transaction's next
	 * statement or its COMMIT (PostgreSQL's batch: one round trip for
	 * them). A queued statement that fails fails the batch. */
	int (*send)(cof_sql_tx *tx, const char *sql, const char *what, cof_err *err,
		    const char *kinds, va_list ap);
	/* A change's statement that a later change of its batch makes useless
	 * (the volume's row: the last one kept is the batch's): run at once
	 * (SQLite, under the change's savepoint), or kept, the last kept
	 * change's alone, for the pipeline of the batch's COMMIT (PostgreSQL:
	 * one UPDATE of the locked row a batch, where each change's own in a
	 * savepoint of its own cost 35% of the writes/s). */
	int (*send_last)(cof_sql_tx *tx, const char *sql, const char *what, cof_err *err,
			 const char *kinds, va_list ap);
} cof_sql_driver;

/* The two drivers. */
extern const cof_sql_driver cof_sql_sqlite, cof_sql_pg;

/* ---- above the seam */

/* Opens a transaction of `mode` on m (0, or < 0 with err filled). */
int cof_sql_begin(cof_meta *m, int mode, cof_sql_tx *tx, cof_err *err);
/* Commits tx when rc == 0, else rolls it back; returns rc, or the commit's
 * failure. */
int cof_sql_end(cof_sql_tx *tx, int rc, cof_err *err);
/* Runs one statement; *changed (when not NULL) = the rows it changed. */
int cof_sql_exec(cof_sql_tx *tx, int64_t *changed, const char *sql, const char *what,
		 cof_err *err, const char *kinds, ...);
/* Runs one statement whose rows nobody needs, maybe later (the driver's
 * send: a change's statements on PostgreSQL go with its next one). */
int cof_sql_send(cof_sql_tx *tx, const char *sql, const char *what, cof_err *err,
		 const char *kinds, ...);
/* The driver's send_last: a change's statement that the batch's next kept
 * change replaces (the volume's row), run once at the batch's commit. */
int cof_sql_send_last(cof_sql_tx *tx, const char *sql, const char *what, cof_err *err,
		      const char *kinds, ...);
/* Runs one statement and calls fn on each row until it says stop: < 0, or
 * the number of rows fn was given (0 = none found). */
int cof_sql_query(cof_sql_tx *tx, const char *sql, const char *what, cof_sql_row_fn fn,
		  void *ctx, cof_err *err, const char *kinds, ...);
/* cof_sql_query / cof_sql_exec as a transaction of their own (COF_SQL_ONE). */
int cof_sql_read(cof_meta *m, const char *sql, const char *what, cof_sql_row_fn fn,
		 void *ctx, cof_err *err, const char *kinds, ...);
int cof_sql_write(cof_meta *m, int64_t *changed, const char *sql, const char *what,
		  cof_err *err, const char *kinds, ...);
/* The driver's lock (see cof_sql_driver): SQLite's writer already is one. */
int cof_sql_lock(cof_sql_tx *tx, int32_t space, const char *name, cof_err *err);

/* Column accessors. Text of a NULL cell is "" (cof_sql_isnull tells). */
void cof_sql_text(const cof_sql_row *r, int col, char *buf, size_t size);
const char *cof_sql_str(const cof_sql_row *r, int col);
int64_t cof_sql_int(const cof_sql_row *r, int col);
int cof_sql_isnull(const cof_sql_row *r, int col);
/* The blob of a cell, malloc'd with a NUL after it (*len without it):
 * 0 = NULL cell (*data NULL), 1 = value, -1 = out of memory. */
int cof_sql_blob(const cof_sql_row *r, int col, unsigned char **data, size_t *len);
/* The same borrowed for the row callback where the driver can (no copy of
 * read-all's contents on SQLite): *data ("" when empty), or a malloc'd copy
 * that *owned also points to (free it; NULL when borrowed). */
int cof_sql_blob_ref(const cof_sql_row *r, int col, const unsigned char **data, size_t *len,
		     unsigned char **owned);
/* A row fn for one number: column 0 into the int64_t ctx points to. */
int cof_sql_row_int(void *ctx, const cof_sql_row *r, cof_err *err);

/* The row cache (meta_sqlite_cache.c): a mark taken before a read, then a
 * kept row while no commit happened since, or the row read kept. */
int cof_sql_mark_begin(cof_meta *m, cof_sql_mark *mk);
int cof_sql_cached_key(const cof_sql_mark *mk, const char *hash, cof_keyrow *out);
void cof_sql_keep_key(const cof_sql_mark *mk, const cof_keyrow *k);
/* The same for a file read by (vno, path, at_seq), its inline content with
 * it (*data malloc'd, or NULL): entry reads (meta_read.c). */
int cof_sql_cached_entry(const cof_sql_mark *mk, int64_t vno, const char *path,
			 int64_t at_seq, cof_entry *out, unsigned char **data);
void cof_sql_keep_entry(const cof_sql_mark *mk, int64_t vno, const char *path,
			int64_t at_seq, const cof_entry *e, const unsigned char *data,
			size_t len);
/* The same for a volume read by (org, id). */
int cof_sql_cached_volume(const cof_sql_mark *mk, const char *org, const char *id,
			  cof_volrow *out);
void cof_sql_keep_volume(const cof_sql_mark *mk, const char *org, const char *id,
			 const cof_volrow *v);

/* The texts of the changes feed (meta_changes.c), for a test of their plans:
 * the form for a run filter, a call filter (each 0 or 1), and a path's
 * history. */
const char *cof_meta_changes_sql(int run, int call);
extern const char *const cof_meta_history_sql;

/* ---- below the seam: the drivers' shared part */

/* The schema written once (schema.c): its tables, then its indexes, every
 * statement IF NOT EXISTS, in shared SQL for cof_sql_rewrite. A driver makes
 * a new database from both; an existing one runs them after its own upgrade
 * steps. */
extern const char *const cof_schema_tables, *const cof_schema_indexes;

/* `sql` with ?N rewritten to $N (dollar) and the tokens expanded to `tokens`
 * (COF_SQL_TOKENS of them, in the order listed above); malloc'd, or NULL
 * (out of memory). */
char *cof_sql_rewrite(const char *sql, int dollar, const char *const *tokens);
/* Whether `sql` needs cof_sql_rewrite for a driver (dollar: ?N present). */
int cof_sql_needs_rewrite(const char *sql, int dollar);

#endif
