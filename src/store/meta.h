/*
 * meta.h — the metadata store: volumes, file versions, changes, snapshots,
 * keys, idempotency records and blob references.
 *
 * The narrow interface the volume layer uses. It is written in terms of what
 * coffer needs (an atomic change applied to one volume, an as-of-seq listing),
 * not of SQL. Like the blob store (blob.h) it is a table of functions,
 * cof_meta_ops, that each backend fills: SQLite in WAL mode (meta_sqlite*.c)
 * and PostgreSQL (meta_pg*.c). A backend's handle embeds `struct cof_meta` as its
 * first member; callers use the
 * cof_meta_x / cof_txn_x functions below, which dispatch through the table
 * (meta.c), and cof_meta_open picks the backend from a URL. The families
 * already written once above the SQL seam (store/sql.h: volumes, forks,
 * snapshots, state, idempotency, garbage collection and blobs, the write
 * path: cof_meta_change and cof_txn_x; keys,
 * agents, subjects, webhooks listed at the end) are not in the table: their
 * cof_meta_x are the one implementation, which runs its SQL through the
 * store's driver.
 *
 * History model: each version of a file is a row live in [from_seq, to_seq);
 * to_seq NULL = live now. Reading "as of seq S" is a range query; a snapshot is
 * (source volume, seq). Rows are only dropped by the garbage collector, once no
 * snapshot covers them. A fork is (parent, seq) too: its own rows, with whiteouts
 * (sha256 "") for files it removed, shadow the parent's rows at that seq
 * (docs/design.md, "Forks"); every read and listing here sees the fork whole.
 *
 * Paths and names compare bytewise (UTF-8 code point order): a backend whose
 * text compares otherwise (PostgreSQL) uses the "C" collation.
 */
#ifndef COF_META_H
#define COF_META_H

#include <stdint.h>
#include "coffer.h"
#include "util/util.h"

typedef struct cof_meta cof_meta;
struct cof_sql_tx;   /* store/sql.h */

/* How many parents a fork's chain may have: a fork of a volume that deep
 * copies its rows instead (so a read looks at no more than this + 1 volumes). */
#define COF_FORK_DEPTH 8
typedef struct cof_txn cof_txn;
typedef struct cof_meta_ops cof_meta_ops;

typedef struct cof_volrow {
	int64_t vno;             /* internal key */
	char id[48];
	char org[48];
	char name[256];
	int64_t seq, files, bytes, capacity, ceiling, created_at;
	int64_t history_from;    /* changes before this seq are not kept */
	int hidden;              /* holds the files of a files-snapshot */
	/* A fork refers to its parent at a seq instead of copying its rows
	 * (docs/design.md, "Forks"): base_vno 0 = none. Set by the backend. */
	int64_t base_vno, base_seq;
	int depth;               /* parents in its chain (0 = not a fork) */
} cof_volrow;

typedef struct cof_entry {
	char path[COF_PATH_MAX + 1];
	int64_t version, size, updated_at;
	char sha256[65];
	char ctype[128];
} cof_entry;

typedef struct cof_change_row {
	int64_t seq, version, size;
	int64_t at;              /* unix seconds it was made */
	int removed;
	char path[COF_PATH_MAX + 1];
	char sha256[65];
	const char *by;          /* who made it: JSON object text (API.md "Who"), or
				  * NULL (made before it was recorded); valid in the callback */
} cof_change_row;


typedef struct cof_snaprow {
	char id[48];
	int64_t vno;             /* the volume it belongs to */
	int64_t src_vno;         /* where its rows live: vno, or a hidden volume */
	int64_t seq, files, bytes, created_at;
	int pinned;
	char labels[32768];      /* JSON object text (16 labels, escaped) */
} cof_snaprow;

/* Callbacks return nonzero to stop the walk. */
typedef int (*cof_entry_fn)(void *ctx, const cof_entry *e);
/* A live row's S3 text (cof_txn.s3meta), borrowed for the call; nonzero stops. */
typedef int (*cof_s3meta_fn)(void *ctx, const char *path, const char *s3meta);
typedef int (*cof_change_fn)(void *ctx, const cof_change_row *c);
typedef int (*cof_snap_fn)(void *ctx, const cof_snaprow *s);
typedef int (*cof_sha_fn)(void *ctx, const char *sha256, int64_t size);
/* One content kept inline, for blob_inline_many: shas[i]'s `len` bytes;
 * nonzero stops. */
typedef int (*cof_inline_fn)(void *ctx, size_t i, const unsigned char *data, size_t len);

typedef int (*cof_vol_fn)(void *ctx, const cof_volrow *v);
typedef int (*cof_txn_fn)(cof_txn *tx, void *ctx, cof_err *err);

typedef struct cof_agentrow {
	char org[48];
	char id[128];
	char workspace[48];      /* its own workspace volume */
	char *settings;          /* JSON object text; malloc'd by _get, borrowed by _put */
	int64_t created_at;
} cof_agentrow;

typedef struct cof_run_item {
	const char *kind;        /* "file" or "presented" */
	const char *path;        /* the agent path */
	int64_t version, size;
	const char *ctype, *caption, *url;
} cof_run_item;
typedef int (*cof_run_fn)(void *ctx, const cof_run_item *it);

/* A stored state record (docs/design.md, "State in the store"): a relay
 * session (kind "relay") or a turn's record (kind "turn"), its fields as one
 * JSON object text. `node` names the node that holds its live part (the
 * attached client, the workspace); "" = none. */
typedef struct cof_staterow {
	char kind[16];
	char id[48];
	char org[48];
	char node[64];
	int ended;
	int64_t updated_at;      /* unix ms, set by state_put */
	char *body;              /* JSON object text; malloc'd by _get/_list, borrowed by _put */
} cof_staterow;
typedef int (*cof_state_fn)(void *ctx, const cof_staterow *r);
/* An event of a stored stream: id rises by 1 per event within the stream. */
typedef int (*cof_event_fn)(void *ctx, int64_t id, unsigned to, const char *body);
typedef int (*cof_subject_fn)(void *ctx, const char *subject, const char *vol);

/* An API key as stored: never the secret, only its SHA-256. Times are Unix
 * seconds; 0 = none (no expiry, not revoked, never used). */
typedef struct cof_keyrow {
	char hash[65];
	char id[24];             /* "k_" + the hash's first 16 hex digits */
	char org[48];
	char agent[128];         /* "" unless bound to an agent */
	char name[129];
	int admin, read_only;
	int64_t created_at, expires_at, revoked_at, last_used_at;
} cof_keyrow;
typedef int (*cof_key_fn)(void *ctx, const cof_keyrow *k);

/* What every backend implements. The contracts are the same whichever backend
 * answers; tests/unit/test_meta_conformance.c checks them on any URL. */
struct cof_meta_ops {
	const char *name;        /* "sqlite", "postgres" */
	/* 1 when a listing hands rows over as it reads them, so that stopping
	 * after the first costs one row (SQLite's cursor); 0 when it reads a
	 * page first (PostgreSQL fetches 512 rows). Callers choose between one
	 * listing and point reads by it (view/base.c's lookup). */
	int list_streams;
	/* 1 when each call is a round trip to another host (PostgreSQL), 0 when
	 * it is answered in process from a local file (SQLite). cof_store_remote. */
	int remote;
	/* Frees the store (NULL-safe at the caller, cof_meta_close). */
	void (*close)(cof_meta *m);

	/* ---- written once above the SQL seam, not here: idempotency
	 * (meta_idem.c), volumes and forks (meta_volume.c, meta_fork.c), garbage
	 * collection, blobs and the kept history (meta_gc.c), and the families
	 * listed at the end */

	/* ---- reading files: written once (meta_read.c, below) */

	/* ---- written once above the SQL seam, not here: the changes feed and a
	 * path's history (meta_changes.c), the one write primitive, a change to
	 * one volume (meta_write.c) */
};

/* The base of every backend's handle (its first member). */
struct cof_meta {
	const cof_meta_ops *ops;
	/* The SQL driver under the metadata code written once (store/sql.h). */
	const struct cof_sql_driver *sql;
	/* Small contents kept in memory (contents.h) for blob_inline and
	 * blob_inline_many, or NULL (none kept: cof_meta_keep_contents). */
	struct cof_contents *contents;
};

/* What a change's callback is given (meta_write.c's, its first member). */
struct cof_txn {
	cof_meta *m;
	/* Who makes the change: JSON object text recorded with each of its
	 * changes rows (API.md "Who"), or NULL. The caller's, set before writes. */
	const char *by;
	/* The S3 gateway's text kept with the version the next cof_txn_write
	 * makes (its entries and changes rows), or NULL: opaque to the store.
	 * Set by cof_txn_write_s3 for one write. */
	const char *s3meta;
};

/* Opens the metadata store named by `url`: a plain path or "sqlite:PATH" is
 * SQLite (created when absent); "postgres://" and "postgresql://" are
 * PostgreSQL. */
int cof_meta_open(const char *url, cof_meta **out, cof_err *err);
/* The SQLite backend on the database file `file`. */
int cof_meta_sqlite_open(const char *file, cof_meta **out, cof_err *err);
/* The PostgreSQL backend on the database `url` (libpq URL or conninfo);
 * migrates its schema. COF_EUNAVAILABLE when it cannot be reached. */
int cof_meta_pg_open(const char *url, cof_meta **out, cof_err *err);

/* The calling thread keeps one reader connection of the SQLite store it
 * reads (at most POOL_PINNED threads a store) instead of taking one from the
 * shared pool under its mutex for every read: for the few long-lived threads
 * that read most, the HTTP event loops. Other backends ignore it. */
void cof_meta_pin_reader(void);
/* On a pinned thread of a SQLite store, makes the reads that follow on this
 * thread, up to cof_meta_read_release(m, held), one read transaction: one
 * snapshot, and its locks taken once instead of once a read. Returns `held`
 * (0: nothing held; each read is its own transaction as usual). Nothing
 * between the two may write and expect to read its write back. */
int cof_meta_read_hold(cof_meta *m);
void cof_meta_read_release(cof_meta *m, int held);

/* One function per member of cof_meta_ops, with its contract (meta.c).
 * cof_meta_close(NULL) does nothing. */
void cof_meta_close(cof_meta *m);
/* ---- idempotency records, written once above the SQL seam (meta_idem.c) */
/* Returns 1 and *value (malloc'd) when (scope, key) was recorded less than
 * `ttl` seconds ago, 0 when not. */
int cof_meta_idem_get(cof_meta *m, const char *scope, const char *key, int64_t ttl,
		char **value, cof_err *err);
/* Records (scope, key) now with `value`, replacing one recorded before. */
int cof_meta_idem_put(cof_meta *m, const char *scope, const char *key, const char *value,
		cof_err *err);
/* ---- volumes, written once above the SQL seam (meta_volume.c, meta_fork.c) */
/* Adds a volume; sets v->vno. */
int cof_meta_volume_add(cof_meta *m, cof_volrow *v, cof_err *err);
/* COF_ENOTFOUND (naming the id) for unknown, another org's or hidden volumes. */
int cof_meta_volume_get(cof_meta *m, const char *org, const char *id, cof_volrow *out,
		cof_err *err);
/* An org's visible volumes by (name, id), after (after_name, after_id). */
int cof_meta_volume_list(cof_meta *m, const char *org, const char *prefix,
		const char *after_name, const char *after_id, int64_t limit,
		cof_vol_fn fn, void *ctx, cof_err *err);
/* Deletes the volume, its rows, changes and snapshots (with their hidden volumes).
 * One that forks refer to is retired instead: hidden (404), its changes and
 * snapshots gone, its rows kept while forks read them, dropped with the last. */
int cof_meta_volume_delete(cof_meta *m, int64_t vno, cof_err *err);
/* A new volume with the rows of `src_vno` live at `at_seq`, in one transaction;
 * v->seq must be set by the caller (the fork starts at at_seq). It refers to
 * src_vno at at_seq (no row copied; v->files and v->bytes are set) unless
 * the source is COF_FORK_DEPTH forks deep: then its rows are copied. */
int cof_meta_volume_fork(cof_meta *m, cof_volrow *v, int64_t src_vno, int64_t at_seq,
		cof_err *err);
/* ---- reading files, written once above the SQL seam (meta_read.c): through
 * a fork's chain (docs/design.md, "Forks"). at_seq < 0 = live now. */
/* 1 = found, 0 = absent, -1 = error. */
int cof_meta_entry_get(cof_meta *m, int64_t vno, const char *path, int64_t at_seq,
		cof_entry *out, cof_err *err);
/* Like cof_meta_entry_get, and when the content is kept inline, *data gets a
 * malloc'd, NUL-terminated copy of it (else NULL): one query for a GET. */
int cof_meta_entry_read(cof_meta *m, int64_t vno, const char *path, int64_t at_seq,
		cof_entry *out, unsigned char **data, cof_err *err);
/* Entries whose path starts with `prefix` and sorts after `after` (NULL = from
 * the start), in path order (bytewise). */
int cof_meta_list(cof_meta *m, int64_t vno, int64_t at_seq, const char *prefix,
		const char *after, cof_entry_fn fn, void *ctx, cof_err *err);
/* The changes feed (meta_changes.c): changes with seq > since under `prefix`
 * and matching `f` (NULL = all; _changes: all), oldest first, at most `limit`. */
int cof_meta_changes(cof_meta *m, int64_t vno, int64_t since, const char *prefix,
		int64_t limit, cof_change_fn fn, void *ctx, cof_err *err);
int cof_meta_changes_where(cof_meta *m, int64_t vno, int64_t since, const char *prefix,
		const cof_change_filter *f, int64_t limit, cof_change_fn fn, void *ctx,
		cof_err *err);
/* The changes of exactly `path` with seq < before (<= 0: all), newest first, at
 * most `limit`: a path's history (meta_changes.c). */
int cof_meta_history(cof_meta *m, int64_t vno, const char *path, int64_t before,
		int64_t limit, cof_change_fn fn, void *ctx, cof_err *err);
/* ---- the one write primitive, written once above the SQL seam
 * (meta_write.c): a change to one volume.
 * cof_meta_change opens a write transaction, loads the volume (404 if gone) and
 * calls fn; every cof_txn_write/remove inside becomes part of change seq+1.
 * When fn fails, nothing is stored. When fn made no write or remove, nothing
 * is stored and *seq is the unchanged seq. */
int cof_meta_change(cof_meta *m, int64_t vno, cof_txn_fn fn, void *ctx, int64_t *seq,
		cof_err *err);
/* cof_meta_change for a change the caller expects to make about `nwrites`
 * writes and removes: past COF_SQL_MANY_AT (sql.h) it runs in a transaction
 * of its own rather than joining the writers' open batch. */
int cof_meta_change_many(cof_meta *m, int64_t vno, size_t nwrites, cof_txn_fn fn,
			 void *ctx, int64_t *seq, cof_err *err);
/* The volume as it will be after the change so far (seq = the new seq). */
cof_volrow *cof_txn_volume(cof_txn *tx);
int cof_txn_get(cof_txn *tx, const char *path, cof_entry *out, cof_err *err);
int cof_txn_list(cof_txn *tx, const char *prefix, cof_entry_fn fn, void *ctx,
		cof_err *err);
/* `inline_data` (size bytes) stores small content in the metadata itself, in
 * the same transaction; NULL when the content is in the blob store (or is
 * already known, as for moves and restores). */
int cof_txn_write(cof_txn *tx, const char *path, const char *sha256, int64_t size,
		const char *ctype, const void *inline_data, cof_err *err);
/* cof_txn_write with the version's time: `mtime` (unix seconds) is the
 * version's time (updated_at): a view's file keeps the time it had in the
 * call; <= 0 = now. */
int cof_txn_write_at(cof_txn *tx, const char *path, const char *sha256, int64_t size,
		const char *ctype, const void *inline_data, int64_t mtime, cof_err *err);
/* cof_txn_write keeping `s3meta` (NULL = none) with the version it makes. */
int cof_txn_write_s3(cof_txn *tx, const char *path, const char *sha256, int64_t size,
		const char *ctype, const void *inline_data, const char *s3meta, cof_err *err);
/* The S3 text (cof_txn.s3meta) kept with the row of `path` live at `at_seq`
 * (a version's own seq finds that version): 1 with *out (malloc'd, NULL when
 * none was kept), 0 = no such row, -1 = error. */
int cof_meta_entry_s3meta(cof_meta *m, int64_t vno, const char *path, int64_t at_seq,
		char **out, cof_err *err);
/* The live rows of `vno` itself (not a fork's parents) with paths from
 * `first` to `last` (bytewise) that keep an S3 text, in path order: one
 * query for a listing's page. */
int cof_meta_s3meta_range(cof_meta *m, int64_t vno, const char *first, const char *last,
		cof_s3meta_fn fn, void *ctx, cof_err *err);
/* Removing an absent path is COF_ENOTFOUND. */
int cof_txn_remove(cof_txn *tx, const char *path, cof_err *err);
/* ---- snapshots, written once above the SQL seam (meta_snapshot.c). The
 * rules (the pinned limit, retention) are the volume layer's
 * (volume/snapshot.c), using the primitives below. */
/* The snapshot `sid` of `vno` into *out; COF_ENOTFOUND naming it. */
int cof_meta_snapshot_get(cof_meta *m, int64_t vno, const char *sid, cof_snaprow *out,
		cof_err *err);
/* The volume's snapshots, oldest first. */
int cof_meta_snapshot_list(cof_meta *m, int64_t vno, cof_snap_fn fn, void *ctx,
		cof_err *err);
/* A change to the snapshots of `vno`: one write transaction in which they
 * are decided by one writer at a time, across nodes (the volume's row is
 * locked: COF_ENOTFOUND when it is gone); fn uses the primitives on tx.
 * When fn fails, nothing is stored. */
typedef struct cof_snaptx cof_snaptx;
typedef int (*cof_snaptx_fn)(cof_snaptx *tx, void *ctx, cof_err *err);
int cof_meta_snapshot_change(cof_meta *m, int64_t vno, cof_snaptx_fn fn, void *ctx,
		cof_err *err);
/* *n = the volume's snapshots that are pinned (1) or not (0). */
int cof_meta_snapshot_count(cof_snaptx *tx, int pinned, int64_t *n, cof_err *err);
/* The volume's oldest unpinned snapshot into *out: 1, or 0 when none. */
int cof_meta_snapshot_oldest(cof_snaptx *tx, cof_snaprow *out, cof_err *err);
/* The snapshot `sid` of the volume into *out; COF_ENOTFOUND naming it. */
int cof_meta_snapshot_load(cof_snaptx *tx, const char *sid, cof_snaprow *out, cof_err *err);
/* Adds `s` (of the transaction's volume) after its others. */
int cof_meta_snapshot_insert(cof_snaptx *tx, const cof_snaprow *s, cof_err *err);
/* Sets the pin and labels (JSON object text) of `sid`. */
int cof_meta_snapshot_set(cof_snaptx *tx, const char *sid, int pinned, const char *labels,
		cof_err *err);
/* Deletes `s` and, for a files-snapshot, its hidden volume. */
int cof_meta_snapshot_drop(cof_snaptx *tx, const cof_snaprow *s, cof_err *err);
/* Deletes the snapshot `sid` of `vno` in a change of its own. */
int cof_meta_snapshot_delete(cof_meta *m, int64_t vno, const char *sid, cof_err *err);
/* ---- garbage collection, blobs and checking, written once above the SQL
 * seam (meta_gc.c). */
/* Drops history rows closed before `closed_before` that no snapshot covers and
 * changes older than `changes_before`; returns the rows dropped. */
int cof_meta_gc_prune(cof_meta *m, int64_t closed_before, int64_t changes_before,
		int64_t *pruned, cof_err *err);
/* Marks blobs nothing refers to as orphans since `now`; un-marks referenced ones. */
int cof_meta_gc_mark(cof_meta *m, int64_t now, cof_err *err);
/* Orphans marked at or before `before`. */
int cof_meta_gc_orphans(cof_meta *m, int64_t before, cof_sha_fn fn, void *ctx,
		cof_err *err);
/* Forgets an orphan if still unreferenced: 1 = forgotten (delete its bytes). */
int cof_meta_blob_forget(cof_meta *m, const char *sha256, cof_err *err);
/* 1 if the blob is known to the metadata (referenced or pending), 0 if not. */
int cof_meta_blob_known(cof_meta *m, const char *sha256, cof_err *err);
/* Across nodes (docs/design.md, "Garbage collection across nodes"): a write
 * calls blob_pending once the content's bytes are stored and before the
 * change naming it; 0 = safe to name; 1 = a collector had claimed it and has
 * deleted it since: the bytes may be gone (check, store again or refuse).
 * A write that called blob_pending and then stores nothing (refused, failed)
 * calls blob_abandoned: its bytes are then as a cut-off upload's. Before
 * deleting bytes the metadata never named, the collector calls blob_claim:
 * 1 = claimed (delete them), 0 = a write named them meanwhile. After deleting
 * bytes (blob_forget or blob_claim said 1) it calls blob_forgotten. On a
 * store whose driver keeps no claims (SQLite: one data dir, its gc_lock
 * orders writes and deletes) pending is 0, claim is not blob_known and the
 * others do nothing. */
int cof_meta_blob_pending(cof_meta *m, const char *sha256, int64_t size, cof_err *err);
int cof_meta_blob_abandoned(cof_meta *m, const char *sha256, cof_err *err);
int cof_meta_blob_claim(cof_meta *m, const char *sha256, cof_err *err);
int cof_meta_blob_forgotten(cof_meta *m, const char *sha256, cof_err *err);
/* Small content kept in the metadata: 1 with *data (malloc'd), 0 if not
 * inline; from the kept contents when there (cof_meta_keep_contents). */
int cof_meta_blob_inline(cof_meta *m, const char *sha256, unsigned char **data,
		size_t *len, cof_err *err);
/* Every blob referenced by a row, once each. */
int cof_meta_referenced(cof_meta *m, cof_sha_fn fn, void *ctx, cof_err *err);
/* Reads at a seq (issue 11, ?seq=): the oldest seq volume `vno` is still
 * read exactly at, when history rows closed before `closed_before` may have
 * been dropped by the collector: the largest seq of a change made before
 * then (a row it closed may be gone), or history_from, over the fork chain
 * (a parent level only up to the seq its child forked at). 0 when every seq
 * is kept. */
int cof_meta_history_kept(cof_meta *m, int64_t vno, int64_t closed_before, int64_t *oldest,
		cof_err *err);
/* The store's own reads behind the kept contents (meta.c): blob_inline's,
 * and one read for a batch (read-all, issue 13.5b), calling fn(ctx, i,
 * data, len) for each of shas[0..n) kept inline, in any order (SQLite: one
 * read lock; PostgreSQL: one query); `data` lasts only the call. */
int cof_meta_blob_inline_read(cof_meta *m, const char *sha256, unsigned char **data,
		size_t *len, cof_err *err);
int cof_meta_blob_inline_read_many(cof_meta *m, const char *const *shas, size_t n,
		cof_inline_fn fn, void *ctx, cof_err *err);
/* Keeps up to `budget` bytes of small contents in memory from now on, for
 * cof_meta_blob_inline and cof_meta_blob_inline_many (0: none). Called once, before the store is shared
 * between threads. */
void cof_meta_keep_contents(cof_meta *m, int64_t budget);
int cof_meta_blob_inline_many(cof_meta *m, const char *const *shas, size_t n,
		cof_inline_fn fn, void *ctx, cof_err *err);
/* As cof_meta_blob_inline_many, but what is read from the store is not kept
 * in memory: for a scan of more contents than the cache holds (grep), which
 * would only push out what the views keep, and copy each content once more. */
int cof_meta_blob_inline_scan(cof_meta *m, const char *const *shas, size_t n,
		cof_inline_fn fn, void *ctx, cof_err *err);

/* ---- stored state: relay sessions, turns' records, event histories;
 * written once above the SQL seam (meta_state.c). */
/* Writes the record (inserted or replaced whole); sets updated_at. */
int cof_meta_state_put(cof_meta *m, cof_staterow *r, cof_err *err);
/* Inserts the record unless (kind, id) is stored, in one statement that
 * nodes starting together take in turn: 1 = inserted, 0 = one was there
 * (left as it is). */
int cof_meta_state_add(cof_meta *m, cof_staterow *r, cof_err *err);
/* cof_meta_state_put of the record (kind, id) of `org` held by `node`, its
 * body the JSON object `b` (not taken). A failure is said on stderr as
 * "cofferd: WHAT ID: cannot store its record: ..." and not returned: a
 * record is written again at its owner's next change. */
void cof_meta_state_save(cof_meta *m, const char *kind, const char *id, const char *org,
		const char *node, int ended, json_t *b, const char *what);
/* 1 and *out (body malloc'd) when (kind, id) is stored, 0 when not. */
int cof_meta_state_get(cof_meta *m, const char *kind, const char *id, cof_staterow *out,
		cof_err *err);
/* Every record of `kind`, not ended or updated at or after `since_ms`;
 * each body is borrowed for the call. */
int cof_meta_state_list(cof_meta *m, const char *kind, int64_t since_ms, cof_state_fn fn,
		void *ctx, cof_err *err);
/* Appends an event to `stream` (*id = its id, 1 for the first) and keeps
 * only the last `keep` of the stream; ids never repeat, also across nodes. */
int cof_meta_event_add(cof_meta *m, const char *stream, unsigned to, const char *body,
		int64_t keep, int64_t *id, cof_err *err);
/* The stream's events after `after` in id order, at most `limit`. */
int cof_meta_event_list(cof_meta *m, const char *stream, int64_t after, int64_t limit,
		cof_event_fn fn, void *ctx, cof_err *err);
/* The last id of the stream (0 when none) and its first kept id. */
int cof_meta_event_last(cof_meta *m, const char *stream, int64_t *last, int64_t *first,
		cof_err *err);
/* Forgets the records of `kind` ended before `before_ms` and the streams
 * named stream_prefixes[i] + their id (NULL-terminated, or NULL). */
int cof_meta_state_prune(cof_meta *m, const char *kind, int64_t before_ms,
		const char *const *stream_prefixes, cof_err *err);
/* Every record of `kind` whose id starts with `prefix`, in id order
 * (bytewise); each body is borrowed for the call. */
int cof_meta_state_scan(cof_meta *m, const char *kind, const char *prefix, cof_state_fn fn,
		void *ctx, cof_err *err);
/* Forgets the record (kind, id) if there is one. */
int cof_meta_state_delete(cof_meta *m, const char *kind, const char *id, cof_err *err);
/* Replaces the record (kind, id) by `r` (updated_at set) when its body
 * is `old_body`; with old_body NULL, inserts it when none is stored: 1 =
 * done, 0 = another writer changed it first (nothing written). */
int cof_meta_state_swap(cof_meta *m, cof_staterow *r, const char *old_body, cof_err *err);
/* Forgets the record (kind, id), the event streams streams[i] + id and
 * the records of each kind subs[i] whose ids start with id + "/", in one
 * change (both lists NULL-terminated, or NULL). */
int cof_meta_state_forget(cof_meta *m, const char *kind, const char *id,
		const char *const *streams, const char *const *subs, cof_err *err);
/* Ends every record of `kind` that `node` holds and that has not ended,
 * adding "endReason": `reason` to each body, in one conditional statement
 * taken only while node's own record (kind "node") was updated before
 * `stale_before` (unix ms). *n = the records it ended: 0 when another
 * node did it first or the node is back. */
int cof_meta_state_end_node(cof_meta *m, const char *kind, const char *node,
		int64_t stale_before, const char *reason, int64_t *n, cof_err *err);

/* ---- the families written once above the SQL seam (store/sql.h): not
 * members of cof_meta_ops; each is one file whose functions are these
 * (no dispatch), running its SQL through the store's driver (m->sql).
 * A new stored concept takes its file, its declarations here, and its
 * table in the two schemas (meta_sqlite.c, meta_pg.c). */

/* Keys (meta_key.c), stored by the SHA-256 of the secret. */
/* Adds the key k->hash (its created_at set by the caller). */
int cof_meta_key_add(cof_meta *m, const cof_keyrow *k, cof_err *err);
/* The row of `hash`, revoked and expired ones too; COF_EUNAUTHORIZED when
 * unknown. */
int cof_meta_key_find(cof_meta *m, const char *hash, cof_keyrow *out, cof_err *err);
/* The dataset's first admin key (API.md "Running on several nodes"): adds
 * the admin key `k` unless the dataset has an admin key already, in one
 * transaction that nodes starting together take in turn: 1 = added (this
 * node made the dataset's admin key), 0 = one was there. */
int cof_meta_key_add_first_admin(cof_meta *m, const cof_keyrow *k, cof_err *err);
/* The keys of `org` not revoked, oldest first (issue 16). */
int cof_meta_key_list(cof_meta *m, const char *org, cof_key_fn fn, void *ctx, cof_err *err);
/* Revokes key `id` of `org` (any org when org is NULL) at `now`, an admin
 * key only when `admin`; fills *out with its row. COF_ENOTFOUND naming the
 * id when there is no such key to revoke (absent, revoked, or admin). */
int cof_meta_key_revoke(cof_meta *m, const char *org, const char *id, int admin,
		int64_t now, cof_keyrow *out, cof_err *err);
/* Records that key `hash` was used at `now`. */
int cof_meta_key_touch(cof_meta *m, const char *hash, int64_t now, cof_err *err);
/* Issue 32: adds key k while k->org holds fewer than `cap` live keys
 * (neither revoked nor expired at k->created_at); the count and the insert
 * are one step for every process and node on the store. 1 added, 0 the
 * organization is at its cap, -1 error. */
int cof_meta_key_add_capped(cof_meta *m, const cof_keyrow *k, int64_t cap, cof_err *err);
/* The row of key `id`, revoked and expired ones too; COF_ENOTFOUND when
 * there is none. */
int cof_meta_key_find_id(cof_meta *m, const char *id, cof_keyrow *out, cof_err *err);

/* Agents and what each has seen, runs and pins (meta_agent.c). */
/* Creates or replaces the row. */
int cof_meta_agent_put(cof_meta *m, const cof_agentrow *a, cof_err *err);
/* COF_ENOTFOUND naming the id. Free out->settings. */
int cof_meta_agent_get(cof_meta *m, const char *org, const char *id, cof_agentrow *out,
		cof_err *err);
/* Deletes the row and everything keyed by the agent (its runs, pins, what it
 * saw, its event stream and cursors) and revokes its keys, in one change. */
int cof_meta_agent_delete(cof_meta *m, const char *org, const char *id, cof_err *err);
/* One agent of a listing (borrowed for the call); nonzero goes on. */
typedef int (*cof_agent_row_fn)(void *ctx, const char *id, const char *workspace,
				int64_t created_at);
/* The agents of org whose id starts with `prefix` and sorts after `after`
 * ("" = from the first), bytewise by id, at most `limit` rows. 0, or -1. */
int cof_meta_agent_list(cof_meta *m, const char *org, const char *prefix, const char *after,
			int64_t limit, cof_agent_row_fn fn, void *ctx, cof_err *err);
/* The version and sha256 of `path` in volume `vol` the agent last read or wrote:
 * 1 found, 0 never seen. */
int cof_meta_seen_get(cof_meta *m, const char *org, const char *agent, const char *vol,
		const char *path, int64_t *version, char sha[65], cof_err *err);
int cof_meta_seen_put(cof_meta *m, const char *org, const char *agent, const char *vol,
		const char *path, int64_t version, const char *sha, cof_err *err);
/* One file's row for cof_meta_seen_put_many. */
typedef struct cof_seen_row {
	const char *path;
	int64_t version;
	const char *sha;
} cof_seen_row;
/* cof_meta_seen_put for n files of one volume in one transaction (a call's
 * commit of thousands of files is one write, not one a file). */
int cof_meta_seen_put_many(cof_meta *m, const char *org, const char *agent, const char *vol,
		const cof_seen_row *rows, size_t n, cof_err *err);
/* Keeps content an agent was shown or sent until the agent is deleted: the
 * garbage collector treats a pin as a reference. */
int cof_meta_pin(cof_meta *m, const char *org, const char *agent, const char *sha,
		cof_err *err);
/* Content stored outside any volume and kept for `holder` (a name no agent
 * has: "s3:UPLOAD" for an S3 multipart upload's parts): a pin under that
 * name, and the content's blobs row (a blob no row names is untracked, and
 * swept), so the collector leaves it until cof_meta_unhold drops the pins. */
int cof_meta_hold(cof_meta *m, const char *org, const char *holder, const char *sha,
		int64_t size, cof_err *err);
int cof_meta_unhold(cof_meta *m, const char *org, const char *holder, cof_err *err);
/* Runs: what an agent's tool calls with one X-Run-Id wrote and presented.
 * Records an item; the same kind and path again updates it in place. */
int cof_meta_run_add(cof_meta *m, const char *org, const char *agent, const char *run,
		const cof_run_item *it, cof_err *err);
/* cof_meta_run_add for n items in one transaction (a call's commit of
 * thousands of files is one write, not one a file). */
int cof_meta_run_add_many(cof_meta *m, const char *org, const char *agent, const char *run,
		const cof_run_item *its, size_t n, cof_err *err);
/* The items of a run in the order they were first recorded. */
int cof_meta_run_list(cof_meta *m, const char *org, const char *agent, const char *run,
		cof_run_fn fn, void *ctx, cof_err *err);

/* Subject workspaces (meta_subject.c): the volume of each (org, agent,
 * subject). The row of subject "" (never a valid subject id) names the
 * agent's skills volume. */
/* 1 and `vol` when recorded, 0 when not. */
int cof_meta_subject_get(cof_meta *m, const char *org, const char *agent,
		const char *subject, char vol[48], cof_err *err);
/* Records `vol` unless the subject has a row: 1 = recorded, 0 = one was there. */
int cof_meta_subject_add(cof_meta *m, const char *org, const char *agent,
		const char *subject, const char *vol, cof_err *err);
/* Every row of the agent (the skills row first), in subject order. */
int cof_meta_subject_list(cof_meta *m, const char *org, const char *agent,
		cof_subject_fn fn, void *ctx, cof_err *err);
/* Forgets every row of the agent (the volumes are the caller's to delete). */
int cof_meta_subject_delete_all(cof_meta *m, const char *org, const char *agent,
		cof_err *err);

/* Webhooks and their delivery queue (meta_webhook.c; API.md "Webhooks"). A
 * webhook's events, volumes and agents are stored as ",a,b," lists ("" =
 * every volume / agent), so that enqueueing an event is one INSERT ...
 * SELECT over the organization's webhooks. */
#define COF_HOOK_URL_MAX 2048
#define COF_HOOK_FILTER_MAX 20     /* volumes, agents named by one webhook */
#define COF_HOOK_DESC_MAX 256
typedef struct cof_hookrow {
	char id[48], org[48];
	char url[COF_HOOK_URL_MAX + 1];
	char events[512];
	char vols[COF_HOOK_FILTER_MAX * 49 + 2];
	char agents[COF_HOOK_FILTER_MAX * 129 + 2];
	char description[COF_HOOK_DESC_MAX + 1];
	char secret[80];         /* "whsec_" + base64 */
	int disabled;
	int64_t created_at;      /* unix seconds */
} cof_hookrow;
/* One delivery: a row of the queue; data, url and secret only from a claim. */
typedef struct cof_deliveryrow {
	char id[80], hook[48], org[48], event[48], status[16];
	char last_error[256];
	int64_t created_at, attempts, next_at, delivered_at; /* unix ms; 0 = none */
	char *data;              /* the event's data (JSON text), malloc'd */
	char url[COF_HOOK_URL_MAX + 1], secret[80];
	int disabled;
} cof_deliveryrow;
typedef int (*cof_hook_fn)(void *ctx, const cof_hookrow *h);
typedef int (*cof_delivery_fn)(void *ctx, const cof_deliveryrow *d);
/* Adds h while h->org holds fewer than `cap` webhooks (one step for every
 * node): 1 added, 0 at the cap, -1. */
int cof_meta_hook_add_capped(cof_meta *m, const cof_hookrow *h, int64_t cap, cof_err *err);
/* COF_ENOTFOUND naming the id (another organization's too). */
int cof_meta_hook_get(cof_meta *m, const char *org, const char *id, cof_hookrow *out,
		cof_err *err);
/* The organization's webhooks by id; fn nonzero stops. */
int cof_meta_hook_list(cof_meta *m, const char *org, cof_hook_fn fn, void *ctx, cof_err *err);
/* Writes url, events, disabled of (h->org, h->id). */
int cof_meta_hook_update(cof_meta *m, const cof_hookrow *h, cof_err *err);
/* Deletes the webhook and its deliveries; COF_ENOTFOUND naming the id. */
int cof_meta_hook_delete(cof_meta *m, const char *org, const char *id, cof_err *err);
/* Queues event `type` with `data` (JSON text) for every enabled webhook of
 * `org` that asks for it and whose filters admit volume `vol` and agent
 * `agent` ("" = the event names none): one statement. The deliveries' ids are
 * `base` + "_" + the webhook's id without its prefix. Rows queued, or -1. */
int cof_meta_hook_enqueue(cof_meta *m, const char *org, const char *type, const char *vol,
		const char *agent, const char *data, const char *base, int64_t now_ms,
		cof_err *err);
/* Claims one pending delivery due at now_ms for `claimer` until now_ms +
 * lease_ms: a conditional update, so that of every node and thread asking,
 * exactly one gets it. 1 claimed (out filled; free out->data), 0 none, -1. */
int cof_meta_hook_claim(cof_meta *m, const char *claimer, int64_t now_ms, int64_t lease_ms,
		cof_deliveryrow *out, cof_err *err);
/* Writes an attempt's outcome (status, attempts, last_error, next_at,
 * delivered_at of d) and gives the claim of `claimer` back. */
int cof_meta_hook_settle(cof_meta *m, const cof_deliveryrow *d, const char *claimer,
		cof_err *err);
/* The webhook's deliveries, newest first, those with ids before `before`
 * ("" = from the newest), at most `limit`. */
int cof_meta_hook_deliveries(cof_meta *m, const char *org, const char *hook,
		const char *before, int64_t limit, cof_delivery_fn fn, void *ctx, cof_err *err);
/* Forgets deliveries settled (delivered or failed) before `before_ms`. */
int cof_meta_hook_prune(cof_meta *m, int64_t before_ms, cof_err *err);
/* Queues delivery `id` of the webhook again, due now. COF_ENOTFOUND naming it. */
int cof_meta_hook_redeliver(cof_meta *m, const char *org, const char *hook, const char *id,
		int64_t now_ms, cof_err *err);

#endif
