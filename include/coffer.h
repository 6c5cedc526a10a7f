/*
 * coffer.h — the public C API of libcoffer.
 *
 * libcoffer holds all of coffer's logic; cofferd (HTTP), coffer (CLI) and the tests
 * are thin layers over it. Data flows one way: http/cli -> volume -> store.
 *
 * Conventions (read these once, they hold for every function below):
 *  - Functions return 0 on success and -1 on failure. On failure `*err` is filled
 *    with a code that maps 1:1 to an API error type and a message that names the
 *    thing and the limit; release it with cof_err_clear().
 *  - Results that mirror an API answer are handed back as jansson objects shaped
 *    exactly like the HTTP answer (camelCase). The caller owns them: json_decref().
 *  - `org` scopes every call: another organization's ids answer COF_ENOTFOUND.
 *  - Strings passed in are borrowed; nothing keeps a pointer past the call.
 *  - Every function is safe to call from many threads on one cof_store.
 */
#ifndef COFFER_H
#define COFFER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <jansson.h>

/* The release, the one place it is written: `cofferd --version`, `coffer
 * --version`, GET /v1/health and User-Agent all print this (CHANGELOG.md). */
#define COFFER_VERSION "0.1.0"

/* ---------------------------------------------------------------- errors */

typedef enum cof_code {
	COF_OK = 0,
	COF_EVALIDATION,   /* 400 validation_error */
	COF_EUNAUTHORIZED, /* 401 unauthorized */
	COF_EFORBIDDEN,    /* 403 forbidden */
	COF_ENOTFOUND,     /* 404 not_found */
	COF_ECONFLICT,     /* 409 conflict */
	COF_EGONE,         /* 410 gone */
	COF_EPRECONDITION, /* 412 precondition_failed */
	COF_ETOOLARGE,     /* 413 too_large */
	COF_EMEDIATYPE,    /* 415 unsupported_media_type */
	COF_ERANGE,        /* 416 range_not_satisfiable */
	COF_EBLOCKED,      /* 422 blocked */
	COF_ELOCKED,       /* 423 locked */
	COF_ERATELIMIT,    /* 429 rate_limited */
	COF_EINTERNAL,     /* 500 internal */
	COF_EUNAVAILABLE,  /* 503 unavailable */
	COF_NCODES
} cof_code;

/* One error type carried from the store up to HTTP. `extra` holds fields added to
 * the API error object (412 `current`, 410 `oldest`, ...); owned by the error. */
typedef struct cof_err {
	cof_code code;
	char msg[480];
	json_t *extra;
} cof_err;

/* Fills `err` (if not NULL) and returns -1, so callers can `return cof_error(...)`. */
int cof_error(cof_err *err, cof_code code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Releases `extra` and resets to COF_OK. Safe on a cleared error. */
void cof_err_clear(cof_err *err);
/* Adds `key: value` to err->extra; steals the reference to `value`. */
void cof_err_set(cof_err *err, const char *key, json_t *value);
const char *cof_code_type(cof_code code); /* "validation_error", ... */
int cof_code_status(cof_code code);       /* 400, ... */

/* ------------------------------------------------------------------ store */

typedef struct cof_store cof_store;

typedef struct cof_store_opts {
	int64_t gc_grace_seconds;   /* unreferenced content kept this long; 0 = 24 h */
	int64_t history_seconds;    /* changes feed kept at least this long; 0 = 7 days */
	const char *meta_url;       /* the metadata store (meta.h cof_meta_open); NULL = DIR/meta.db */
	const char *blobs_url;      /* the blob store (blob.h cof_blobstore_open_url); NULL = DIR */
	int tool;                   /* an offline tool (fsck, gc): no admin key made or recorded */
	int serve;                  /* cofferd: the only server of the dir (DATA/lock) */
	int64_t content_cache;      /* bytes of small contents kept in memory; 0 = none */
	int64_t keys_per_org;       /* live keys an organization may hold; 0 = COF_KEYS_PER_ORG */
} cof_store_opts;
/* Live (neither revoked nor expired) keys one organization may hold by
 * default (cofferd --keys-per-org): minting is 409 past it (issue 32.9). */
#define COF_KEYS_PER_ORG 1000
/* What a server keeps when not told otherwise (cofferd --content-cache, and the
 * in-process `coffer mount --data` / `coffer mcp --data`). */
#define COF_CONTENT_CACHE_DEFAULT ((int64_t)64 * 1024 * 1024)

/* Opens (creating if needed) the data dir: blobs/, meta.db, link.key (blobs and
 * metadata elsewhere when opts names them; the URLs are borrowed). The admin key
 * is created on first open; cof_store_admin_key() returns it (owned by the store).
 * On metadata named by a URL, a dir with no admin.key over a dataset that has an
 * admin key already makes none: cof_store_admin_key() is then "" (a later node). */
int cof_store_open(const char *dir, const cof_store_opts *opts, cof_store **out,
		   cof_err *err);
void cof_store_close(cof_store *st);
const char *cof_store_admin_key(cof_store *st);
/* The small contents kept in memory (cof_store_opts.content_cache) since the
 * store opened: reads answered from them, reads that were not, and what is
 * kept now (contents, bytes with their bookkeeping); all 0 when none is kept. */
typedef struct cof_content_cache_stats {
	int64_t hits, misses, kept, bytes;
} cof_content_cache_stats;
void cof_store_content_cache_stats(cof_store *st, cof_content_cache_stats *out);
/* True when cof_store_open created the admin key just now (print it once). */
int cof_store_admin_key_is_new(cof_store *st);

/* ------------------------------------------------------------ keys & orgs */

/* The admin key's organization: its keys may read GET /metrics. */
#define COF_ADMIN_ORG "org_default"

/* Who is calling, as resolved from an API key. */
typedef struct cof_principal {
	char org[48];
	char agent[128]; /* "" unless the key is bound to an agent */
	int admin;       /* the admin key: may mint keys for a new organization */
	int read_only;   /* may only read (GET/HEAD) */
	char key_id[24]; /* the key's id ("k_" + 16 hex digits) */
	int64_t expires_at; /* Unix seconds; 0 = never */
} cof_principal;

/* Resolves `key`; COF_EUNAUTHORIZED when unknown, revoked or expired (the
 * message says which). Records its use at most once a minute. */
int cof_key_auth(cof_store *st, const char *key, cof_principal *who, cof_err *err);
/* cof_key_auth with the key's SHA-256 in hex already made by the caller
 * (NULL: made here), so that a request hashes its key once. */
int cof_key_auth_hashed(cof_store *st, const char *key, const char *hash,
			cof_principal *who, cof_err *err);
/* The S3 gateway's credentials (API.md "S3 gateway"): the secret of the key
 * whose id is `id` (SigV4 signs with it) into secret[80], and who it is.
 * COF_EUNAUTHORIZED for an unknown, revoked or expired id, or a key never
 * sealed (minted before the gateway and not used since). */
int cof_key_s3_secret(cof_store *st, const char *id, cof_principal *who, char secret[80],
		      cof_err *err);
/* POST /v1/keys {org?, agent?, name?, expiresIn?, readOnly?} -> {id, key, org,
 * agent?, name?, readOnly, expiresAt?}. Only the admin may name another org. */
int cof_key_create(cof_store *st, const cof_principal *who, json_t *body,
		   json_t **out, cof_err *err);
/* GET /v1/keys: {keys: [...]} of who's organization (the admin key: of `org`
 * when given), never a secret. */
int cof_key_list(cof_store *st, const cof_principal *who, const char *org, json_t **out,
		 cof_err *err);
/* DELETE /v1/keys/{id}: revokes a key of who's organization (the admin key:
 * of any). The admin key itself is revoked only by cof_admin_key_rotate. */
int cof_key_revoke(cof_store *st, const cof_principal *who, const char *id, cof_err *err);
/* Makes a new admin key, stores it in DATA/admin.key (replacing the file
 * atomically) and revokes the old one; *out gets the new key. */
int cof_admin_key_rotate(cof_store *st, char out[80], cof_err *err);

/* ---------------------------------------------------------------- volumes */

/* An Idempotency-Key and the request it came with. `request` is a hash of
 * the request (HTTP: method, path and body; see http_request_hash); NULL =
 * the operation and its body. The same key with another request within a day
 * is COF_ECONFLICT naming the key, and nothing is done. */
typedef struct cof_idem {
	const char *key;
	const char *request;
} cof_idem;

/* POST /v1/volumes {name, ceiling?}. With `idem` (NULL = none) the same volume
 * is answered again for a day. *created says whether it was made now (201) or
 * replayed. */
int cof_volume_create(cof_store *st, const char *org, json_t *body,
		      const cof_idem *idem, json_t **out, int *created, cof_err *err);
int cof_volume_get(cof_store *st, const char *org, const char *id, json_t **out,
		   cof_err *err);
/* GET /v1/volumes?prefix=&cursor=&limit=: the organization's volumes whose
 * name starts with `prefix` (NULL = all), by name (then id):
 * {volumes:[{id, name, seq, files, bytes, createdAt}], cursor?}; `limit` 1 to
 * 1,000 (0 = 1,000); `cursor` (NULL = the start) from the previous page. */
int cof_volume_list(cof_store *st, const char *org, const char *prefix,
		    const char *cursor, int64_t limit, json_t **out, cof_err *err);
/* GET /v1/volumes?ids=a,b — `ids` comma-separated, at most 50: {volumes:[{id,
 * name, seq, files, bytes}]}. Unknown ids left out. */
int cof_volume_get_many(cof_store *st, const char *org, const char *ids,
			json_t **out, cof_err *err);
int cof_volume_delete(cof_store *st, const char *org, const char *id, cof_err *err);

/* ------------------------------------------------------------------ files */

/* A write's precondition: If-Match / ?version=N, If-None-Match: * / ?version=0. */
typedef enum {
	COF_COND_NONE = 0,
	COF_COND_VERSION, /* the file is at `version` */
	COF_COND_ABSENT,  /* the file does not exist */
	COF_COND_EXISTS   /* the file exists, any version (If-Match: *) */
} cof_cond_kind;
/* Who makes a change (API.md "Who"): recorded with each change, shown in the
 * changes feed and the history. Strings are borrowed; NULL or "" = not said.
 * `via`: http, tool, call, relay, mount, link, console, merge, revert,
 * restore, s3. */
typedef struct cof_by {
	const char *key_id, *agent, *user, *run_id, *call_id, *relay_session, *tool;
	const char *via;
} cof_by;
/* The JSON object of `by` (NULL: NULL), keys as API.md names them. */
json_t *cof_by_json(const cof_by *by);

/* A write's condition, and who writes: every write of a file carries one. */
typedef struct cof_cond {
	cof_cond_kind kind;
	int64_t version; /* for COF_COND_VERSION */
	const cof_by *by; /* NULL = not said (recorded as null) */
	/* The S3 gateway's text (JSON: user metadata, MD5; docs/s3.md) kept with
	 * the version a put or copy makes: opaque here. NULL = none, except for
	 * cof_file_copy, where NULL keeps the source version's. */
	const char *s3meta;
} cof_cond;

/* Parses an If-Match value ("N", N, W/"N", or * for "exists") into a
 * condition; -1 with COF_EVALIDATION when malformed. */
int cof_cond_parse_etag(const char *value, cof_cond *out, cof_err *err);

/* An upload streams bytes into the blob store while hashing them; nothing is
 * visible until cof_file_put() commits it. `max_bytes` (0 = none) refuses more
 * with COF_ETOOLARGE as soon as it is crossed. */
typedef struct cof_upload cof_upload;
int cof_upload_begin(cof_store *st, int64_t max_bytes, cof_upload **out, cof_err *err);
/* Holds `up` to the room volume `vol` has for a write of `path`: its ceiling
 * less its bytes, plus what `path` holds now. `declared` (a Content-Length;
 * -1 = unknown) past the room fails at once, and so does a cof_upload_write
 * that would cross it, before its bytes are stored: COF_EVALIDATION naming
 * the ceiling, as cof_file_put's own check (which stays the final one). */
int cof_upload_room(cof_upload *up, const char *org, const char *vol, const char *path,
		    int64_t declared, cof_err *err);
int cof_upload_write(cof_upload *up, const void *data, size_t len, cof_err *err);
int64_t cof_upload_size(const cof_upload *up);
/* Content kept outside any volume for `holder` (held.c; an S3 multipart
 * upload's parts, "s3:ID"): stores `up`'s bytes (consumed, whatever happens)
 * as a blob kept from the collector until cof_held_release(holder), and says
 * its sha256 and size. */
int cof_upload_hold(cof_upload *up, const char *org, const char *holder, char sha[65],
		    int64_t *size, cof_err *err);
/* Appends held content (sha, size) to upload `into`, streamed. */
int cof_held_append(cof_store *st, const char *sha, int64_t size, cof_upload *into,
		    cof_err *err);
/* Lets the collector have what `holder` holds (after its grace period). */
int cof_held_release(cof_store *st, const char *org, const char *holder, cof_err *err);
/* Drops an upload that will not be committed. NULL is fine. */
void cof_upload_abort(cof_upload *up);

/* A symbolic link is a file of its own type, as in git's blobs of mode
 * 120000: content type COF_SYMLINK_TYPE, its bytes the target (1 to
 * COF_SYMLINK_MAX bytes of UTF-8, no NUL). Nothing in coffer follows one. */
#define COF_SYMLINK_TYPE "inode/symlink"
#define COF_SYMLINK_MAX 4095
/* Whether content type `ctype` is a link's. */
int cof_is_symlink(const char *ctype);
/* 0 when `target` (len bytes) may be a link's, else -1 with COF_EVALIDATION
 * naming the limit. */
int cof_symlink_check(const void *target, size_t len, cof_err *err);

/* PUT /v1/volumes/{id}/files/{path}. Consumes `up` in every case. `content_type`
 * NULL = sniff from bytes and name. Answer {path, version, size, contentType,
 * sha256, seq}; *created = 1 when the file did not exist. */
int cof_file_put(cof_store *st, const char *org, const char *vol, const char *path,
		 cof_upload *up, const char *content_type, cof_cond cond,
		 json_t **out, int *created, cof_err *err);
/* Same, from memory. */
int cof_file_put_bytes(cof_store *st, const char *org, const char *vol,
		       const char *path, const void *data, size_t len,
		       const char *content_type, cof_cond cond, json_t **out,
		       int *created, cof_err *err);

/* The S3 gateway's CopyObject: the content of `from_path` of volume
 * `from_vol` named at `path` of `vol` as one change, without copying its
 * bytes; `content_type` NULL keeps the source's. Answer as cof_file_put's. */
int cof_file_copy(cof_store *st, const char *org, const char *from_vol, const char *from_path,
		  const char *vol, const char *path, const char *content_type, cof_cond cond,
		  json_t **out, cof_err *err);

/* An open file for reading: what GET needs to answer. The bytes are either
 * behind `reader` (content in the blob store: read them with cof_file_read_at)
 * or, for small content kept inline in the metadata, in `data` (reader is then
 * NULL). Both are owned: cof_file_close. A zeroed cof_file is closed. */
typedef struct cof_file {
	struct cof_blob_reader *reader; /* private to the library */
	unsigned char *data;
	int64_t version;
	int64_t size;
	int64_t vol_seq; /* X-Volume-Seq: the seq the read was made at */
	char sha256[65];
	char content_type[128];
	int64_t updated_at; /* unix seconds */
} cof_file;

/* The S3 text kept with version `version` of `path` (cof_cond.s3meta): 0 with
 * *out (malloc'd; NULL when none was kept, or no such version), or -1. */
int cof_file_s3meta(cof_store *st, const char *org, const char *vol, const char *path,
		    int64_t version, char **out, cof_err *err);

/* Sets "s3meta" (the kept S3 text) on each file of `files` (a listing's
 * array as cof_file_list answers it now, in path order) that has one: one
 * query for the page (a fork's: one per file). 0, or -1. */
int cof_file_s3metas(cof_store *st, const char *org, const char *vol, json_t *files,
		     cof_err *err);

/* GET /v1/volumes/{id}/files/{path}?snapshot=S (snapshot NULL = now). */
int cof_file_open(cof_store *st, const char *org, const char *vol, const char *path,
		  const char *snapshot, cof_file *out, cof_err *err);
/* The same, at seq `seq` when >= 0 (?seq=N: 400 past the volume's seq or
 * with a snapshot, 410 `oldest` when that history may be gone). */
int cof_file_open_at(cof_store *st, const char *org, const char *vol, const char *path,
		     const char *snapshot, int64_t seq, cof_file *out, cof_err *err);
void cof_file_close(cof_file *f);
/* Reads up to `len` bytes of the file at `off`; *got = 0 only at or past the
 * end. -1 with err when the store fails. */
int cof_file_read_at(const cof_file *f, int64_t off, void *buf, size_t len, size_t *got,
		     cof_err *err);
/* A local file descriptor holding the file's bytes, for sendfile (the file
 * keeps it: do not close it), or -1: read with cof_file_read_at instead. */
int cof_file_fd(const cof_file *f);
/* Before a whole-file answer: content of at most 1 MiB in the blob store is
 * read whole and its sha256 checked; the bytes are then in f->data. Damaged
 * content is COF_EINTERNAL naming `name`. Other files are left as they are. */
int cof_file_verify(cof_file *f, const char *name, cof_err *err);

/* DELETE /v1/volumes/{id}/files/{path}; answer {path, seq}. */
int cof_file_remove(cof_store *st, const char *org, const char *vol,
		    const char *path, cof_cond cond, json_t **out, cof_err *err);

/* POST /v1/volumes/{id}/move {from, to, overwrite?}; answer {from, to, seq, moved}.
 * `by`: who moves (NULL = not said). */
int cof_file_move(cof_store *st, const char *org, const char *vol, json_t *body,
		  const cof_by *by, json_t **out, cof_err *err);
/* Says whether volume path `path` (is_dir: a folder) is hidden (excluded). */
typedef int (*cof_hidden_fn)(const void *ctx, const char *path, int is_dir);
/* cof_file_move that never exposes a hidden path: a hidden `from` is
 * COF_EFORBIDDEN naming it; the hidden files under a folder stay where they
 * are (`moved` counts the others; none: COF_EFORBIDDEN). NULL = as
 * cof_file_move. */
int cof_file_move_visible(cof_store *st, const char *org, const char *vol, json_t *body,
			  cof_hidden_fn hidden, const void *hidden_ctx, const cof_by *by,
			  json_t **out, cof_err *err);

typedef struct cof_list_opts {
	const char *prefix;   /* NULL or "" = all */
	const char *glob;     /* NULL = all; `*`, `?`, `**`, `[...]` */
	const char *snapshot; /* NULL = now */
	const char *cursor;   /* from a previous page */
	int64_t limit;        /* 0 = 10,000; at most 10,000 */
	int content;          /* read-all: 1,000 files / 16 MiB at one seq */
	int at;               /* read at `seq` (?seq=N), else now or the snapshot */
	int64_t seq;
} cof_list_opts;

/* GET /v1/volumes/{id}/files?...: {seq, files:[...], cursor?}. With
 * opts->content, the read-all answer (parsed from cof_file_read_all). */
int cof_file_list(cof_store *st, const char *org, const char *vol,
		  const cof_list_opts *opts, json_t **out, cof_err *err);
/* The read-all answer {seq, files:[{..., text|data}]} as JSON text (*text
 * malloc'd, *len bytes), read whole from a cof_readall. */
int cof_file_read_all(cof_store *st, const char *org, const char *vol,
		      const cof_list_opts *opts, char **text, size_t *len, cof_err *err);
/* Read-all as a stream (what HTTP sends): _open lists the files at one seq
 * (*seq, may be NULL) and decides the limits (COF_ETOOLARGE past 1,000 files
 * or 16 MiB) before any byte; _read writes the next bytes of the answer into
 * buf (up to max; 0 at its end, -1 with err when a file's content cannot be
 * read: the answer can then only be cut short, every later read fails too);
 * memory stays one file's inline content or one blob chunk. */
typedef struct cof_readall cof_readall;
int cof_readall_open(cof_store *st, const char *org, const char *vol,
		     const cof_list_opts *opts, cof_readall **out, int64_t *seq, cof_err *err);
ssize_t cof_readall_read(cof_readall *ra, void *buf, size_t max, cof_err *err);
void cof_readall_close(cof_readall *ra);

/* Narrows the changes feed to the changes whose `by` names these (NULL = any). */
typedef struct cof_change_filter {
	const char *run_id, *call_id, *agent, *key_id;
} cof_change_filter;

/* GET /v1/volumes/{id}/changes?since=&prefix=&wait=&runId=&callId=&agent=&keyId=:
 * blocks up to `wait_seconds` (<= 60) for a change when there is none yet;
 * each change shows its `by` (null when not recorded). `f` (NULL = all)
 * narrows it; the answer's seq still moves past what it left out. */
int cof_changes(cof_store *st, const char *org, const char *vol, int64_t since,
		const char *prefix, const cof_change_filter *f, int wait_seconds,
		json_t **out, cof_err *err);

/* GET /v1/volumes/{id}/history?path=&cursor=&limit=: the versions of one path,
 * newest first, as far as the changes feed is kept: {versions:[{version, seq,
 * op, size, sha256, at, by}], cursor?}; `limit` 1 to 1,000 (0 = 100);
 * `cursor` (NULL = the newest) from the previous page. */
int cof_history(cof_store *st, const char *org, const char *vol, const char *path,
		const char *cursor, int64_t limit, json_t **out, cof_err *err);

/* Wakes every cof_changes() waiter so that a shutting-down server is not held. */
void cof_changes_wake_all(cof_store *st);

/* -------------------------------------------------- snapshots, forks, restore */

int cof_snapshot_create(cof_store *st, const char *org, const char *vol, json_t *body,
			json_t **out, cof_err *err);
/* `labels` are "k:v" strings; all must hold. */
int cof_snapshot_list(cof_store *st, const char *org, const char *vol,
		      const char *const *labels, size_t nlabels, json_t **out,
		      cof_err *err);
int cof_snapshot_get(cof_store *st, const char *org, const char *vol, const char *sid,
		     json_t **out, cof_err *err);
int cof_snapshot_patch(cof_store *st, const char *org, const char *vol,
		       const char *sid, json_t *body, json_t **out, cof_err *err);
int cof_snapshot_delete(cof_store *st, const char *org, const char *vol,
			const char *sid, int force, cof_err *err);
/* POST /v1/volumes/{id}/fork {snapshot?, name?} -> the new volume. */
int cof_volume_fork(cof_store *st, const char *org, const char *vol, json_t *body,
		    json_t **out, cof_err *err);
/* POST /v1/volumes/{id}/restore {snapshot} -> {snapshot, seq, written, removed}.
 * `by`: who restores (recorded with via "restore"; NULL = not said). */
int cof_volume_restore(cof_store *st, const char *org, const char *vol, json_t *body,
		       const cof_by *by, json_t **out, cof_err *err);

/* POST /v1/volumes/{id}/merge {from, fromSnapshot?, base?, strategy?,
 * resolutions?, dryRun?, ifSeq?} -> {seq, merged, conflicts} (API.md
 * "Merge"); 409 with `conflicts` when any is left unsettled, nothing changed. */
int cof_volume_merge(cof_store *st, const char *org, const char *vol, json_t *body,
		     const cof_by *by, json_t **out, cof_err *err);
/* POST /v1/volumes/{id}/revert {runId? | callId? | seq?, paths?, dryRun?,
 * resolutions?} -> {seq, reverted:[{path, from:"before"|"merged"|"kept"}],
 * conflicts} (API.md "Revert"): the paths that run, call or seq changed go
 * back to what they were before it, as one change by `by` with via "revert";
 * a path changed again since is decided and settled as a merge's (409 with
 * `conflicts`). */
int cof_volume_revert(cof_store *st, const char *org, const char *vol, json_t *body,
		      const cof_by *by, json_t **out, cof_err *err);

/* ---------------------------------------------------------------- archive */

/* A tar.gz stream of the files at one seq, produced on demand (pull). The limits
 * (10,000 files / 1 GiB) are checked in cof_archive_open, before any byte. */
typedef struct cof_archive cof_archive;
int cof_archive_open(cof_store *st, const char *org, const char *vol,
		     const char *snapshot, const char *path, const char *glob,
		     cof_archive **out, int64_t *seq, cof_err *err);
/* Fills up to `max` bytes; returns the count, 0 at the end, -1 on error. */
ssize_t cof_archive_read(cof_archive *a, void *buf, size_t max, cof_err *err);
void cof_archive_close(cof_archive *a);

/* ----------------------------------------------------------- signed links */

/* POST /v1/volumes/{id}/links: {url:"/l/TOKEN", method, path, expiresAt}; the HTTP
 * layer makes `url` absolute. A retry with the same `idem` (NULL = none):
 * COF_ECONFLICT, and the link is never shown again. `maker` (the id of the key
 * that asked; NULL = none) is signed into the token: its uses count against
 * that key's rate limit. */
int cof_link_create(cof_store *st, const char *org, const char *vol, json_t *body,
		    const cof_idem *idem, const char *maker, json_t **out, cof_err *err);

/* What a verified token allows. */
typedef struct cof_link {
	char org[48];
	char vol[48];
	char path[4097];
	char method[8];          /* "GET" or "PUT" */
	int64_t expires_at;
	int64_t max_bytes;       /* 0 = none */
	char content_type[128];  /* "" = any; for a pinned link: the content's type */
	char sha256[65];         /* "" = the file as it is now; else pinned content */
	int64_t version, size;   /* of the pinned content */
	char maker[24];          /* the id of the key that made it; "" = none */
} cof_link;

/* Checks signature and expiry (COF_EFORBIDDEN otherwise) and that `method` is the
 * one the link was made for (HEAD counts as GET). */
int cof_link_verify(cof_store *st, const char *token, const char *method,
		    cof_link *out, cof_err *err);
/* Opens what a verified GET link serves: the file as it is now, or, for a
 * link pinned to content (present_file), that content as it was. */
int cof_link_open(cof_store *st, const cof_link *l, cof_file *out, cof_err *err);

/* ------------------------------------------------------------ gc and fsck */

/* Deletes content nothing refers to once older than the grace period, and history
 * no snapshot needs. Answer {blobsDeleted, bytesFreed, historyPruned, pending}. */
int cof_gc(cof_store *st, json_t **out, cof_err *err);
/* Verifies every referenced blob exists and hashes right; reports orphans.
 * Answer {ok, checked, missing:[], corrupt:[], orphans:[]}. */
int cof_fsck(cof_store *st, json_t **out, cof_err *err);
/* Copies the embedded dataset in data dir `from` (no cofferd may serve it) into
 * the PostgreSQL database `meta` and the blob store `blobs` (store/migrate.c:
 * every table, every blob the metadata names, the keys with the admin key's)
 * and verifies the copy (row counts, each blob's sha256; then fsck of the
 * target: volume/migrate.c).
 * COF_ECONFLICT for a target that is not empty; a run again after a crash
 * finishes the job. Answer {ok, tables:{name: rows}, blobs, blobsCopied,
 * blobsPresent, bytesCopied, fsck, alreadyCopied?}. */
int cof_migrate(const char *from, const char *meta, const char *blobs, json_t **out,
		cof_err *err);

/* A consistent online backup of the embedded dataset in data dir `from` (a
 * cofferd may be serving it) into `to`, which must be new or empty
 * (COF_ECONFLICT); COF_EVALIDATION for a dataset on other engines. Answer
 * {ok, from, to, files, blobs, bytes, volumes, maxSeq} (docs/design.md,
 * "Backups"). */
int cof_backup(const char *from, const char *to, json_t **out, cof_err *err);
/* The backup `from` copied into data dir `to` (new or empty, no cofferd
 * holding it: COF_ECONFLICT), then fsck of the result: the answer is
 * cof_backup's with `fsck`; a restore whose fsck is not ok fails. */
int cof_restore(const char *from, const char *to, json_t **out, cof_err *err);

/* ----------------------------------------------------------------- agents */

/* PUT /v1/agents/{id} {mounts?, fileTools?, exclude?, defaultExclusions?, sandbox?,
 * output?, relay?, remount?}: create or update. An agent gets its own workspace
 * volume on creation. Other mounts than it has: COF_ECONFLICT unless `remount`.
 * *created = 1 when it did not exist. Answer: the agent (see cof_agent_get). */
int cof_agent_put(cof_store *st, const char *org, const char *id, json_t *body,
		  json_t **out, int *created, cof_err *err);
/* {id, workspaceVolumeId, mounts, fileTools, createdAt, ...settings}. */
int cof_agent_get(cof_store *st, const char *org, const char *id, json_t **out,
		  cof_err *err);
/* GET /v1/agents?prefix=&cursor=&limit=: the organization's agents by id,
 * {agents:[{id, workspaceVolumeId, createdAt}], cursor?}, pages of `limit`
 * (1..1000, 0 = 1000); `cursor` is the answer's, from the page before. */
int cof_agent_list(cof_store *st, const char *org, const char *prefix, const char *cursor,
		   int64_t limit, json_t **out, cof_err *err);
/* Deletes the agent and its own workspace volume; mounted volumes stay. */
int cof_agent_delete(cof_store *st, const char *org, const char *id, cof_err *err);
/* PUT /v1/agents/{id}/mounts [mounts]: replaces the mounts now. */
int cof_agent_set_mounts(cof_store *st, const char *org, const char *id, json_t *mounts,
			 json_t **out, cof_err *err);

/* The agent's files by the path the agent sees ("/workspace/out/a.png"), with
 * the agent's access: a read-only mount refuses writes (COF_EFORBIDDEN).
 * `subject` (X-Subject; NULL = none) is who the call acts for: with one the
 * agent also reaches that subject's /user and /attachments (API.md
 * "Subjects"), never another subject's. The same holds for the uploads,
 * links, runs and tools below. */
int cof_agent_file_open(cof_store *st, const char *org, const char *id, const char *subject,
			const char *path,
			cof_file *out, cof_err *err);
/* The writes take `by`, who asks (its key and via; the agent fills in itself
 * and the subject: API.md "Who"; NULL = not said). */
int cof_agent_file_put(cof_store *st, const char *org, const char *id, const char *subject,
		       const char *path, cof_upload *up, const char *content_type,
		       const cof_by *by, json_t **out, int *created, cof_err *err);
/* Holds `up` to the room of the volume behind agent path `path` (as
 * cof_upload_room; a read-only mount: COF_EFORBIDDEN). */
int cof_agent_file_room(cof_store *st, const char *org, const char *id, const char *subject,
			const char *path,
			cof_upload *up, int64_t declared, cof_err *err);
int cof_agent_file_remove(cof_store *st, const char *org, const char *id,
			  const char *subject, const char *path, const cof_by *by, json_t **out,
			  cof_err *err);
/* GET /v1/agents/{id}/files?path=DIR: {path, entries:[{name, path, type, size?}]}. */
int cof_agent_file_list(cof_store *st, const char *org, const char *id, const char *subject,
			const char *path,
			json_t **out, cof_err *err);

/* PUT /v1/agents/{id}/uploads/{requestId}/{name}: saved at
 * uploads/{requestId}/{name} of the agent's workspace (else its first
 * read-write mount; none: COF_ECONFLICT); for `subject` (NULL = none) kept
 * as its attachment at /attachments/{requestId}/{name} instead, seen by that
 * subject alone. At most 20 files a request
 * (COF_ECONFLICT past it). A retry never writes twice: the existing file is
 * answered again with `replayed: true`. Consumes `up`; begin it with
 * max_bytes COF_UPLOAD_MAX (256 MiB). */
#define COF_UPLOAD_MAX (256LL << 20)
/* Holds `up` to the room of the volume the upload lands in (as
 * cof_upload_room), before its body is read. */
int cof_agent_upload_room(cof_store *st, const char *org, const char *id,
			  const char *subject, const char *request, const char *name, cof_upload *up,
			  int64_t declared, cof_err *err);
int cof_agent_upload(cof_store *st, const char *org, const char *id, const char *subject,
		     const char *request, const char *name, cof_upload *up,
		     const char *content_type, const cof_by *by, json_t **out, int *created,
		     cof_err *err);
/* PUT /v1/agents/{id}/tool-outputs/{callId}/{name}: a tool's file output,
 * saved at tool-outputs/{callId}/{name} by the same placement rule and with
 * the same retry rule and limits as an upload (for `subject`: in its own
 * workspace, /user/tool-outputs/...). callId and name: one path segment. */
int cof_agent_tool_output_room(cof_store *st, const char *org, const char *id,
			       const char *subject, const char *call, const char *name,
			       cof_upload *up, int64_t declared, cof_err *err);
int cof_agent_tool_output(cof_store *st, const char *org, const char *id, const char *subject,
			  const char *call, const char *name, cof_upload *up,
			  const char *content_type, const cof_by *by, json_t **out, int *created,
			  cof_err *err);

/* POST /v1/agents/{id}/prompt {text, requestId, files?, conversation?, format?, user?}:
 * the user message as the model should see it (docs/api.md "What the model
 * sees"): {requestId, text, files:[{path, contentType, size, sha256, shown,
 * reason?}], content:[blocks]}. Inline files are saved as uploads of the
 * request first; the prompt is recorded by request id, so the same request
 * again is a retry (*replayed = 1, nothing written) and another prompt under
 * that id COF_ECONFLICT. `idem` (NULL = none) is the Idempotency-Key. With
 * `user` (a subject) the prompt is that subject's: its request ids, records
 * and conversations are its own, its inline files its attachments
 * (/attachments/{requestId}/{name}), and its {path} files may be in /user. */
int cof_agent_prompt(cof_store *st, const char *org, const char *id, json_t *body,
		     const cof_idem *idem, const cof_by *by, json_t **out, int *replayed,
		     cof_err *err);
/* GET /v1/agents/{id}/conversations/{conversation}/request?format=: every
 * prompt of the conversation rebuilt from its references, within one
 * request's budget: {conversation, format, messages:[{role, content}],
 * prompts:[{requestId, text, files}]}, oldest first. `format` NULL =
 * anthropic. An unknown conversation is COF_ENOTFOUND; `subject` (NULL = none)
 * names whose conversation it is. */
int cof_agent_conversation_request(cof_store *st, const char *org, const char *id,
				   const char *subject, const char *conversation,
				   const char *format, json_t **out, cof_err *err);
/* The decoded bytes of the image decodes under way (media.c's process-wide
 * budget), for /metrics. */
int64_t cof_media_decoding(void);

/* POST /v1/agents/{id}/links {path, method?, expiresIn?, maxBytes?, contentType?}:
 * a signed link to a file by the agent's path (PUT links need a read-write
 * mount). Answer as cof_link_create, with the agent path. */
int cof_agent_link_create(cof_store *st, const char *org, const char *id,
			  const char *subject, json_t *body,
			  const cof_idem *idem, const char *maker, json_t **out, cof_err *err);
/* POST /v1/agents/{id}/resolve {input, as?:"base64"|"url"} (agent/resolve.c):
 * {input} with every {"$file": path} replaced by {path, name, contentType,
 * size, sha256, data} (base64, 16 MiB of file bytes in all: COF_ETOOLARGE) or
 * {..., url, expiresAt} (a signed GET link by `maker`, `base` + "/l/..."). A
 * path the agent cannot read: COF_ENOTFOUND naming it. At most 100 $file
 * objects and 64 levels of nesting (COF_EVALIDATION). */
int cof_agent_resolve_input(cof_store *st, const char *org, const char *id,
			    const char *subject, json_t *body, const char *maker,
			    const char *base, json_t **out, cof_err *err);

/* GET /v1/agents/{id}/runs/{runId}: {runId, files:[{path, version, size,
 * contentType}] (every file the run's tool calls wrote, up to 100),
 * presented:[{path, caption, url}]}. An unknown run is empty. A subject's
 * runs are its own: the same run id of another subject (or of none) is
 * another run. */
int cof_agent_run_get(cof_store *st, const char *org, const char *id, const char *subject,
		      const char *run,
		      json_t **out, cof_err *err);

/* POST /v1/agents/{id}/tools/{tool}: runs one file tool as the model would
 * (read, write, edit, ls, glob, grep, present_file, move). Answer {ok, output, ...}: a refusal the
 * model can act on (a stale write, no match) is ok:false with the reason in
 * `output`, and returns 0; -1 is for API errors (unknown agent or tool, bad
 * arguments, fileTools off: COF_ENOTFOUND). `run_id` may be NULL. */
int cof_agent_tool(cof_store *st, const char *org, const char *id, const char *subject,
		   const char *tool, json_t *args, const char *run_id, json_t **out,
		   cof_err *err);
/* The same in read scope `scope` (an MCP session, sent as X-Mcp-Session; NULL
 * = none): reads and writes are recorded for the agent and the scope, and
 * write/edit/move check the scope's record (docs/api.md "Read scopes").
 * `key_id`: the caller's key, recorded in its writes' `by` (NULL = none). */
int cof_agent_tool_in(cof_store *st, const char *org, const char *id, const char *subject,
		      const char *tool, json_t *args, const char *run_id, const char *scope,
		      const char *key_id, json_t **out, cof_err *err);

/* POST /v1/agents/{a}/users/{s}/tools/{tool}: seed 003's file toolset
 * (read_file, write_file, patch, search_files) on subject s's workspace,
 * paths relative to its root (API.md "Subject workspaces"; src/agent/
 * toolset.c). Answers as cof_agent_tool, with the structured paths relative
 * to the root. Needs the agent setting `tools` with the `file` config
 * enabled (else COF_ENOTFOUND); permissionPolicy always_ask: a write is
 * COF_ELOCKED (extra `approvalId`) until cof_subject_approve decides it,
 * then the same call made again runs once (approved) or answers ok:false
 * (denied). cof_toolset_check: the setting's shape (COF_EVALIDATION). */
int cof_subject_tool(cof_store *st, const char *org, const char *agent, const char *subject,
		     const char *tool, json_t *args, const char *run_id, json_t **out,
		     cof_err *err);
/* POST /v1/agents/{a}/users/{s}/approvals/{id} {approve}: decides a pending
 * approval: {id, status:"approved"|"denied", tool, args}; unknown (or
 * another agent's or subject's): COF_ENOTFOUND; decided already:
 * COF_ECONFLICT. */
int cof_subject_approve(cof_store *st, const char *org, const char *agent, const char *subject,
			const char *id, json_t *body, json_t **out, cof_err *err);
/* GET /v1/agents/{a}/users/{s}/approvals: {approvals:[{id, tool, args,
 * createdAt}]}, those still pending. */
int cof_subject_approvals(cof_store *st, const char *org, const char *agent,
			  const char *subject, json_t **out, cof_err *err);
int cof_toolset_check(json_t *tools, cof_err *err);

/* GET /v1/agents/{id}/events: a watch yields `file_presented` (a tool call
 * presented a file) and `files_changed` (others changed files under a
 * `notify` mount; coalesced over about a second) while it is open.
 * cof_agent_watch_next waits up to `wait_ms`; *out is a JSON array of
 * {type, data, id?} (empty on timeout; id: a stored event's). Returns 0, -1 on error, 1 when the store is
 * closing (end the stream). */
typedef struct cof_agent_watch cof_agent_watch;
int cof_agent_watch_open(cof_store *st, const char *org, const char *id,
			 cof_agent_watch **out, cof_err *err);
/* Resumes the watch after stored event `after` (an SSE Last-Event-ID):
 * file_presented events are stored, so those after it come first, also
 * across a restart; < 0 changes nothing (from the moment of opening). */
void cof_agent_watch_after(cof_agent_watch *w, int64_t after);
int cof_agent_watch_next(cof_agent_watch *w, int wait_ms, json_t **out, cof_err *err);
void cof_agent_watch_close(cof_agent_watch *w);
/* For an event loop that calls cof_agent_watch_next with wait_ms 0: the fd
 * that turns readable on news (drain it before that call), and in *at_ms
 * when to call again even without news (a coalescing window's end; 0 none). */
int cof_agent_watch_wake(cof_agent_watch *w, int64_t *at_ms);

/* ------------------------------------------------------ subject workspaces */

/* The writes below take `by`, who asks (key, run and via; agent and subject
 * are filled in: API.md "Who"; NULL = not said). */
/* Each (agent, subject) pair has one durable volume, made on first use by any
 * call below (capacity 512 MiB growing to a 4 GiB ceiling; past it
 * COF_EVALIDATION). Subject ids: 1..128 bytes of [A-Za-z0-9._@-], not "." or
 * ".."; an unknown agent is COF_ENOTFOUND. Paths are volume paths ("notes/a.md",
 * one leading '/' allowed; no control characters). The top folders memories/ and skills/ are reserved: the file
 * calls read them but refuse writes, moves and deletes there (COF_EFORBIDDEN). */

/* PUT .../files/content {path, encoding?:"utf-8"|"base64", content, createParents?}.
 * createParents false: the parent folder must exist (hold a file), else
 * COF_ENOTFOUND; true/absent: folders are implicit. Answer as cof_file_put. */
int cof_subject_file_put(cof_store *st, const char *org, const char *agent,
			 const char *subject, json_t *body, const cof_by *by, json_t **out,
			 int *created, cof_err *err);
/* GET .../files?path=DIR: {path, entries:[{name, path, type, size?, contentType?}],
 * truncated?}, immediate children. A missing folder (not the root): COF_ENOTFOUND;
 * a file: COF_ECONFLICT. */
int cof_subject_file_list(cof_store *st, const char *org, const char *agent,
			  const char *subject, const char *path, json_t **out, cof_err *err);
/* GET .../files/content?path=P: the file for reading (cof_file_close it). */
int cof_subject_file_open(cof_store *st, const char *org, const char *agent,
			  const char *subject, const char *path, cof_file *out, cof_err *err);
/* POST .../files/move {from, to, overwrite?}: as cof_file_move. */
int cof_subject_file_move(cof_store *st, const char *org, const char *agent,
			  const char *subject, json_t *body, const cof_by *by, json_t **out,
			  cof_err *err);
/* DELETE .../files?path=P: a file, or a folder with everything under it, in one
 * change. Answer {path, seq, removed}. */
int cof_subject_file_remove(cof_store *st, const char *org, const char *agent,
			    const char *subject, const char *path, const cof_by *by, json_t **out,
			    cof_err *err);
/* {volumeId, used, capacity, ceiling, files} of the subject's workspace, made
 * when it has none yet (a turn's /user). */
int cof_subject_volume(cof_store *st, const char *org, const char *agent,
		       const char *subject, json_t **out, cof_err *err);
/* GET .../volume: the same, never making the workspace: while there is none,
 * a new one's numbers with volumeId null (a read makes no state). */
int cof_subject_volume_read(cof_store *st, const char *org, const char *agent,
			    const char *subject, json_t **out, cof_err *err);
/* PUT/GET .../memory/{name}: `name` is USER.md or MEMORY.md (else COF_ENOTFOUND),
 * stored at memories/{name}. The put consumes `up`; answer as cof_file_put. */
int cof_subject_memory_put(cof_store *st, const char *org, const char *agent,
			   const char *subject, const char *name, cof_upload *up,
			   const cof_by *by, json_t **out, int *created, cof_err *err);
int cof_subject_memory_open(cof_store *st, const char *org, const char *agent,
			    const char *subject, const char *name, cof_file *out, cof_err *err);

/* PUT /v1/agents/{a}/skills/{file}: `file` is NAME.md, NAME 1..100 bytes of
 * [A-Za-z0-9._-]; at most COF_SKILLS_MAX skills an agent (COF_ECONFLICT past
 * it). Consumes `up`; begin it with max_bytes COF_SKILL_MAX. Answer {name,
 * size, sha256, version}. Skills live in the agent's own skills volume. */
#define COF_SKILL_MAX (1LL << 20)
#define COF_SKILLS_MAX 200
int cof_agent_skill_put(cof_store *st, const char *org, const char *agent, const char *file,
			cof_upload *up, const cof_by *by, json_t **out, int *created,
			cof_err *err);
/* POST .../sessions: writes every skill of the agent to the subject's skills/
 * (what was there is replaced), in one change. Answer {volumeId, skills:[names]}. */
int cof_subject_session_start(cof_store *st, const char *org, const char *agent,
			      const char *subject, const cof_by *by, json_t **out, cof_err *err);
/* Deletes the volumes of every subject of the agent and its skills volume
 * (cof_agent_delete calls it). */
int cof_agent_subjects_delete(cof_store *st, const char *org, const char *agent,
			      cof_err *err);

/* ------------------------------------------------------------------ turns */

/* Turns: scratch workspaces for confined tool calls (API.md "Turns"). Turns
 * live in the memory of one cofferd: a restart ends them all. One cof_turns
 * per daemon; every function is safe from many threads. */
typedef struct cof_turns cof_turns;

typedef struct cof_turns_opts {
	const char *scratch;   /* scratch root; NULL = DATA/scratch */
	const char *data;      /* the data dir, hidden from calls */
	int64_t grace_seconds; /* a turn is dropped this long after its deadline;
				  0 = 60 */
	int force_walk;        /* keep limits by measuring even as root (bench) */
	int rlimits_only;      /* memory and processes by rlimits, no cgroup */
	const char *node;      /* this node's name (--node); NULL = "" */
} cof_turns_opts;

/* Prepares the scratch root (unmounting and removing what a previous run
 * left), builds the seccomp filter and starts the expiry sweeper. *how says
 * how disk limits are kept, for the log ("a tmpfs per workspace", or why the
 * measuring loop). 0, or -1 with err. */
int cof_turns_open(cof_store *st, const cof_turns_opts *opts, cof_turns **out,
		   const char **how, cof_err *err);
/* Ends every turn and stops its calls (SIGTERM): new turns and calls are
 * refused (COF_EUNAVAILABLE) from then on. */
void cof_turns_stop(cof_turns *ts);
/* Stops every call, unmounts and removes every workspace, frees `ts`. Call it
 * once no request is using `ts` any more (cofferd: after the HTTP drain). */
void cof_turns_close(cof_turns *ts);
/* Ends, in their records, the turns of every node but `self` whose heartbeat
 * (its record of kind "node") is older than `gone_ms`, with endReason
 * "node_gone": whichever node runs it first does it (a conditional update),
 * the others find nothing left. Said on stderr when it ended some. */
void cof_turns_end_gone_nodes(cof_store *st, const char *self);

/* POST /v1/turns {agent, user, deadlineSeconds, acceptedOutputModes?} ->
 * {id, agent, user, deadline, expiresAt, createdAt, sandbox, acceptedOutputModes?}.
 * A key bound to an agent may only name that agent (COF_EFORBIDDEN). */
int cof_turn_create(cof_turns *ts, const cof_principal *who, json_t *body, json_t **out,
		    cof_err *err);
/* GET /v1/turns/{id}: as created, plus {calls, used}. */
int cof_turn_get(cof_turns *ts, const cof_principal *who, const char *id, json_t **out,
		 cof_err *err);
/* Live events of a call: `type` is "stdout"/"stderr" ({data}), "file"
 * ({name, mediaType, size, url}) or "exit" (the whole answer). `data` is
 * borrowed for the duration of the callback. */
typedef void (*cof_call_event_fn)(void *cls, const char *type, json_t *data);
/* POST /v1/turns/{id}/calls {command, stdin?, timeoutSeconds?} -> {callId,
 * exitCode, stdout, stderr, files:[{name, mediaType, size, url}], notes, limit?}.
 * Runs until the command ends, its timeout, a disk limit or the turn's end.
 * `on_event` may be NULL. An unknown turn is COF_ENOTFOUND, an ended one
 * COF_EGONE. File urls are paths ("/v1/turns/..."). */
int cof_turn_call(cof_turns *ts, const cof_principal *who, const char *id, json_t *body,
		  cof_call_event_fn on_event, void *cls, json_t **out, cof_err *err);
/* The same, for a call carrying X-Run-Id `run` (NULL = none): the files its
 * commit wrote under the agent's mounts are the run's files too. The answer
 * adds committed:[{volumeId, path, seq, written, removed}] and conflicts:[{path,
 * reason}] (API.md "What a call sees"). */
#define COF_CALL_ID_MAX 128 /* a model's tool-call id: a call's callId, tool-outputs/ */
int cof_turn_call_run(cof_turns *ts, const cof_principal *who, const char *id, json_t *body,
		      const char *run, cof_call_event_fn on_event, void *cls, json_t **out,
		      cof_err *err);
/* GET /v1/turns/{id}/files/{callId}/{name}: a file kept from a call's outbox
 * (cof_file_close it). */
int cof_turn_file_open(cof_turns *ts, const cof_principal *who, const char *id,
		       const char *call, const char *name, cof_file *out, cof_err *err);
/* DELETE /v1/turns/{id}: stops its calls, then deletes its workspace and kept
 * files; returns once they are gone. */
int cof_turn_delete(cof_turns *ts, const cof_principal *who, const char *id, cof_err *err);

/* ------------------------------------------------------------------ relay */

/* Relay sessions: a remote agent reaches a folder on the user's machine
 * through the user's `coffer connect`, which connects out to cofferd
 * (docs/relay-protocol.md). Sessions live in memory in one cof_relay (one per
 * running cofferd): a restart ends them all. Agent-side calls take the
 * caller's principal: another organization's session is COF_ENOTFOUND, a key
 * bound to an agent reaches only that agent's sessions. Client-side calls take
 * the session's connect token instead (wrong: COF_EUNAUTHORIZED). After a
 * session ended, ops and client calls are COF_EGONE and nothing is forwarded. */
typedef struct cof_relay cof_relay;

typedef struct cof_relay_opts {
	int64_t grace_seconds;  /* a paused session ends after this long; 0 = 600 */
	int64_t op_wait_ms;     /* an op waits this long for its result; 0 = 120 s */
	int64_t sessions_max;   /* sessions in memory, every org; 0 = 1000 */
	int64_t sessions_per_org; /* sessions not ended, per org; 0 = 100 */
	const char *node;       /* this node's name (--node); NULL = "" */
} cof_relay_opts;

/* The registry; `st` (borrowed, must outlive it) is used to read agents. */
int cof_relay_open(cof_store *st, const cof_relay_opts *opts, cof_relay **out,
		   cof_err *err);
/* Wakes every waiter (streams end, waiting ops answer 503); for a server stop. */
void cof_relay_shutdown(cof_relay *r);
/* Frees everything; no call may be under way. NULL is fine. */
void cof_relay_close(cof_relay *r);

/* POST /v1/relay/sessions {agent, limits?}: 201 answer {uid, connectToken,
 * status:"waiting", agent, mode, defaultMode, limits, startedAt}. The token is
 * in this answer only. COF_ECONFLICT when the agent lacks relay.capability. */
int cof_relay_create(cof_relay *r, const cof_principal *who, json_t *body, json_t **out,
		     cof_err *err);
/* GET /v1/relay/sessions/{uid}: {uid, agent, status, mode, defaultMode,
 * exclusions, counts:{reads, writes, bytesWritten}, limits, startedAt,
 * endedAt?, endReason?, client?}. */
int cof_relay_get(cof_relay *r, const cof_principal *who, const char *uid, json_t **out,
		  cof_err *err);
/* GET /v1/relay/sessions?agent=ID&all=: {sessions:[as get]} of that agent,
 * newest first; without `all` only the sessions not ended. */
int cof_relay_list(cof_relay *r, const cof_principal *who, const char *agent, int all,
		   json_t **out, cof_err *err);
/* DELETE (reason "closed") and POST .../abort (reason "aborted"): ends the
 * session; an ended session is COF_EGONE. */
int cof_relay_end(cof_relay *r, const cof_principal *who, const char *uid,
		  const char *reason, cof_err *err);
/* DELETE /v1/agents/{id}: the agent's sessions held here end ("agent_deleted")
 * and the stored records of all its sessions go (src/relay/forget.c). */
int cof_relay_agent_deleted(cof_relay *r, const char *org, const char *agent, cof_err *err);
/* POST /v1/relay/sessions/{uid}/ops: checks the op, forwards it to the client
 * and waits for its answer (*out). `wait` 0: a supervised write answers
 * COF_ELOCKED (extra `opId`) at once instead of waiting. */
int cof_relay_op(cof_relay *r, const cof_principal *who, const char *uid, json_t *body,
		 int wait, json_t **out, cof_err *err);
/* GET .../ops/{opId}: {opId, op, path, status:"pending"|"done", result?|error?}. */
int cof_relay_op_get(cof_relay *r, const cof_principal *who, const char *uid,
		     const char *op_id, json_t **out, cof_err *err);
/* GET .../log: {uid, entries:[...], truncated}. */
int cof_relay_log(cof_relay *r, const cof_principal *who, const char *uid, json_t **out,
		  cof_err *err);

/* A stream of events: the agent's (GET .../events) or the client's op stream.
 * next waits up to `wait_ms`; *out is an array of {id, type, data} (empty on
 * timeout). Returns 0, or 1 after the last events when the stream ends
 * (session ended, client replaced, relay shut down). */
typedef struct cof_relay_stream cof_relay_stream;
/* The agent's events; `after` = the last event id seen (Last-Event-ID), 0 = all. */
int cof_relay_events_open(cof_relay *r, const cof_principal *who, const char *uid,
			  uint64_t after, cof_relay_stream **out, cof_err *err);
/* POST .../connect {mode?, exclusions?, client?} with the connect token:
 * attaches the client (COF_ECONFLICT while another is attached). */
int cof_relay_connect(cof_relay *r, const char *uid, const char *token, json_t *body,
		      cof_relay_stream **out, cof_err *err);
int cof_relay_stream_next(cof_relay_stream *s, int wait_ms, json_t **out, cof_err *err);
/* Closes a stream: a client stream that is still the attached one pauses the
 * session; the last agent stream closing tells the client agent_disconnected. */
void cof_relay_stream_close(cof_relay_stream *s);
/* POST .../results/{opId} {ok, result?|error?} with the connect token. A body
 * that is not such an answer (`body` NULL: it was not JSON at all, `bad` says
 * why) is refused (-1, COF_EVALIDATION) and ends the operation it names with
 * an internal error, so the agent side is told at once rather than waiting
 * out the op's time. */
int cof_relay_result(cof_relay *r, const char *uid, const char *token, const char *op_id,
		     json_t *body, const cof_err *bad, cof_err *err);
/* POST .../events {type, data?} with the connect token: accept, write_blocked, abort. */
int cof_relay_client_event(cof_relay *r, const char *uid, const char *token, json_t *body,
			   cof_err *err);

/* ----------------------------------------------------------- gauges */

/* For /metrics: turns not ended and calls running. ts NULL: zeros. */
void cof_turns_gauges(cof_turns *ts, int64_t *turns, int64_t *calls);
/* For /metrics: sessions kept, by status (waiting, active, paused, ended). */
void cof_relay_gauges(cof_relay *r, int64_t by_status[4]);

#endif /* COFFER_H */
