/*
 * volume.h — pieces shared by the files of the volume layer (src/volume/).
 * The public contract of each operation is in include/coffer.h.
 */
#ifndef COF_VOLUME_H
#define COF_VOLUME_H

#include "store/store.h"
#include "util/util.h"

#define COF_DEFAULT_CAPACITY (512LL << 20)
#define COF_DEFAULT_CEILING (4LL << 30)
#define COF_MAX_CEILING (1LL << 40)
#define COF_LIST_MAX 10000
#define COF_READALL_FILES 1000
#define COF_READALL_BYTES (16LL << 20)
#define COF_SNAP_KEEP_UNPINNED 100
#define COF_SNAP_MAX_PINNED 10000
#define COF_LABELS_MAX 16
#define COF_LABEL_KEY_MAX 63
#define COF_LABEL_VALUE_MAX 255
#define COF_ARCHIVE_FILES 10000
#define COF_ARCHIVE_BYTES (1LL << 30)
#define COF_IDEM_TTL (24 * 3600)

/* Idempotency-Key records (idem.c), one scope per organization. `op` names
 * the operation for the request's hash when idem->request is not given.
 * Lookup: 1 and *value (malloc'd) when the key was used with this same
 * request in the last day, 0 when unused, -1 with COF_ECONFLICT naming the
 * key when it was used with another request (or another error). */
int cof_idem_lookup(cof_store *st, const char *org, const cof_idem *idem, const char *op,
		    json_t *body, char **value, cof_err *err);
/* Records the key with this request's hash and `value` (what it made). */
int cof_idem_record(cof_store *st, const char *org, const cof_idem *idem, const char *op,
		    json_t *body, const char *value, cof_err *err);

/* The snapshot rules (snapshot.c), their limits given (COF_SNAP_*; tests
 * give small ones). Adds `s`: a pinned one past `max_pinned` pinned is
 * COF_ECONFLICT; then the oldest unpinned past `keep_unpinned` are dropped,
 * the last one's id into `dropped` ("" when none). All in one change. */
int cof_snapshot_add_row(cof_meta *m, cof_snaprow *s, int keep_unpinned, int max_pinned,
			 char dropped[48], cof_err *err);
/* Sets the pin (< 0 keeps it) and labels (NULL keeps them) of `sid`;
 * pinning one past `max_pinned` pinned is COF_ECONFLICT. */
int cof_snapshot_set_row(cof_meta *m, int64_t vno, const char *sid, int pinned,
			 const char *labels, int max_pinned, cof_err *err);

/* Where reads happen: a volume now, or the rows a snapshot stands on. */
typedef struct cof_view {
	cof_volrow vol;        /* the volume asked for */
	int64_t vno;           /* where the rows live (a hidden volume for files-snapshots) */
	int64_t seq;           /* the seq read at */
	int snapshot;          /* 1 when read through ?snapshot= */
	int at;                /* 1 when read at an asked seq (?seq=) */
} cof_view;

/* Loads the volume (404 if unknown or another org's) and, when `snapshot` is
 * given, that snapshot (404 naming it). With no snapshot the view is the
 * volume at its current seq. */
int cof_view_open(cof_store *st, const char *org, const char *vol, const char *snapshot,
		  cof_view *out, cof_err *err);

/* Moves an open view to seq `seq` (?seq=; < 0 = leave it now): 400 naming
 * 'seq' past the volume's seq or given with a snapshot, 410 with `oldest`
 * for a seq whose history the collector may have dropped (rows closed more
 * than the grace period ago: cof_meta_history_kept). */
int cof_view_at(cof_store *st, cof_view *view, int64_t seq, cof_err *err);
/* The seq a row read through the view is looked up at (-1 = now). */
#define COF_VIEW_READ_SEQ(view) ((view)->snapshot || (view)->at ? (view)->seq : -1)

/* The JSON of a volume row: {id, name, seq, files, bytes, capacity, ceiling, createdAt}. */
json_t *cof_volume_json(const cof_volrow *v);
/* A change as the feed and the history show it: {seq, op, path, version,
 * size, sha256, at, by} (`by` null when not recorded). */
json_t *cof_change_json(const cof_change_row *c);
/* The JSON of a file row as listed: {path, size, version, contentType, sha256, updatedAt}. */
json_t *cof_entry_json(const cof_entry *e);
/* Adds `type: "symlink"` and `target` to each link of `files` (entries as
 * cof_entry_json's), its target read from its content (after the walk: no
 * query inside another). 0, or -1. */
int cof_links_json(cof_store *st, json_t *files, cof_err *err);

/* The one refusal of a write past a volume's ceiling (400, names both sizes,
 * adds `ceiling`); returns -1. */
int cof_ceiling_error(const cof_volrow *v, int64_t bytes, cof_err *err);
/* Checks the volume after the writes of a change: refuses past the ceiling and
 * grows capacity (doubling) toward it as usage nears it. */
int cof_volume_fit(cof_txn *tx, cof_err *err);

/* Directories are implicit, as in git: refuses (409) a file under a path that
 * is a file, or at a path that is a folder. */
int cof_volume_path_free(cof_txn *tx, const char *path, cof_err *err);

/* A compact in-memory list of entries, for diffs and archives. */
typedef struct cof_item {
	char *path;
	int64_t size, version, updated_at;
	char sha256[65];
	char ctype[128];
} cof_item;
typedef struct cof_items {
	cof_item *v;
	size_t n, cap;
	int64_t bytes;
	size_t max;            /* 0 = no limit; past it the walk stops, `over` set */
	int over;
	const char *glob;      /* NULL = all */
} cof_items;
/* cof_entry_fn that appends to a cof_items (ctx). */
int cof_items_add(void *ctx, const cof_entry *e);
void cof_items_release(cof_items *it);

/* Checks list options (prefix, glob) and opens the view; *glob is the glob
 * (NULL for none), `walk` the prefix to walk (narrowed to the glob's literal
 * folder when that says more). Listings and read-all share it. */
int cof_list_prepare(cof_store *st, const char *org, const char *vol,
		     const cof_list_opts *opts, cof_view *view, const char **glob,
		     char walk[COF_PATH_MAX + 1], cof_err *err);

/* Content type for a new file: from the name's extension or the first bytes. */
void cof_sniff_type(cof_store *st, const char *path, const void *head, size_t len,
		    char *out, size_t outsz);

/* Maps a volume path to the path a caller sees (agent paths); writes `out`. */
typedef void (*cof_path_map)(const void *ctx, const char *vpath, char *out, size_t outsz);
/* The immediate children of folder `prefix` ("" for the root, else ending in
 * '/') at the view's seq: [{name, path, type:"file"|"dir", size?,
 * contentType?}], at most `cap` (then *more = 1). Paths go through `map`
 * (NULL: volume paths). The one grouping of a listing into a folder's view. */
int cof_folder_children(cof_store *st, const cof_view *view, const char *prefix,
			size_t cap, cof_path_map map, const void *map_ctx, json_t **entries,
			int *more, cof_err *err);

/* Content up to this size is kept inline in the metadata store. */
#define COF_INLINE_MAX (16 * 1024)

/* ------------------------------------------------------------ the write path
 * cof_land (land.c) is the one way bytes become a change of a volume: the HTTP
 * PUT, a call's and a mount's view commits, subjects' writes and removals,
 * snapshots of given files and restore all go through it. It owns the whole
 * protocol: hold the content against the collector, store each file's bytes
 * (inline up to COF_INLINE_MAX, else a blob marked pending), run the caller's
 * apply inside one cof_meta_change, abandon every pending mark it made when
 * the change is refused or fails (meta.h: blob_abandoned) or names a file not
 * after all, release, and notify watchers on success. What the change does
 * (conditions, conflicts, removals) is the caller's apply. */

/* The bytes of one file to land; `kind` says where they come from. */
typedef enum cof_land_kind {
	COF_LAND_KNOWN = 0,   /* content already stored: sha256, size, type given */
	COF_LAND_UPLOAD,      /* `up` (consumed by cof_land, whatever happens) */
	COF_LAND_MEMORY,      /* `data`, `len` */
	COF_LAND_FD,          /* `fd`, read whole from offset 0 (not closed); or, with
			       * open_fd, the fd it opens, closed once stored (a
			       * change of many files never holds them all open) */
} cof_land_kind;

typedef struct cof_land_file {
	cof_land_kind kind;
	cof_upload *up;
	const void *data;
	size_t len;
	int fd;
	int (*open_fd)(void *arg);   /* -1 with errno when it cannot */
	void *open_arg;
	const char *path;       /* the volume path: the sniffed type's name */
	const char *name;       /* how errors name it (NULL: path) */
	const char *ctype;      /* the type; NULL or "" = sniffed */
	/* kept as the type when the bytes hash to keep_sha (a rewrite of the same
	 * bytes keeps the type it had); NULL = none */
	const char *keep_ctype, *keep_sha;
	size_t sniff;           /* bytes the sniffer reads (0 = 4096) */
	/* kept with the version written (cof_txn_write_s3), by an apply that
	 * passes it: the S3 gateway's text, opaque here; NULL = none */
	const char *s3meta;
	/* out (in for COF_LAND_KNOWN): what the change names */
	char sha256[65];
	int64_t size;
	char type[128];
	const void *inl;        /* the bytes when kept inline (pass to cof_txn_write), or NULL */
	/* set by apply: 1 = this change does not name the file (a conflict): its
	 * pending mark is abandoned after the commit */
	int unnamed;
	/* The version of the path these bytes were made from (0 = absent): what
	 * the caller's apply conditions the write on. With `merge` set, when the
	 * path holds another version now, cof_land merges by lines (as merge.c:
	 * base = the version seen, ours = the path now, theirs = these bytes;
	 * all three text, cof_merge_is_text). A clean merge is landed instead of
	 * these bytes (kind becomes COF_LAND_MEMORY), `merged` is set and `seen`
	 * moves to the version merged with, so the change stays conditional: a
	 * write racing it is still the caller's conflict. Anything else (an
	 * overlap, binary, a link, a side absent) leaves the file as given. */
	int merge;
	int64_t seen;
	int merged;             /* out: 1 = the bytes landed are a merge */
	/* private to land.c */
	unsigned char *own_;
	unsigned char *merged_;
	int pending_;
	int typed_;             /* 1 = type chosen (else sniffed after the storing) */
} cof_land_file;

typedef struct cof_landing cof_landing;
/* The caller's change; files are stored when it runs. 0, or -1 (refused). */
typedef int (*cof_land_fn)(cof_txn *tx, cof_landing *l, cof_err *err);

struct cof_landing {
	cof_volrow *vol;        /* the volume changed (watchers notified) */
	int64_t vno;            /* where the rows go; 0 = vol->vno */
	cof_land_file *files;
	size_t nfiles;
	cof_land_fn apply;
	void *ctx;              /* the caller's, for apply */
	int quiet;              /* 1 = no notification (set before, or by apply) */
	int held;               /* 1 = the caller holds the content already (it read
				 * what it names before cof_land) */
	const cof_by *by;       /* who makes the change (NULL = not said) */
	int64_t seq;            /* out: the change's seq */
	char *by_text_;         /* private to land.c: `by` as JSON text */
};

/* Lands l->files through l->apply as one change (above). 0, or -1 with `err`:
 * nothing is named and every pending mark made is abandoned. Uploads are
 * consumed either way. A file's `inl` is valid while apply runs only; its
 * sha256, size and type stay. */
int cof_land(cof_store *st, cof_landing *l, cof_err *err);

/* The internals of an upload (files.c): the head stays in memory while it
 * fits COF_INLINE_MAX; past that the blob writer has it all. */
struct cof_upload {
	cof_store *st;
	cof_blob_writer *w;   /* NULL while everything fits in head */
	int64_t size, max;
	int64_t room;         /* >= 0: what the volume has room for (cof_upload_room) */
	int64_t room_base;    /* the volume's bytes less what the path holds now */
	cof_volrow *vol;      /* for the ceiling's error; NULL without a room */
	unsigned char head[COF_INLINE_MAX];
	size_t headlen;
};

/* Tells the metadata that content just stored (`sha`, in the blob store) is
 * about to be named, so that no collector, on any node, deletes it first
 * (docs/design.md, "Garbage collection across nodes"). Call it after the blob's
 * commit and before the change naming it. COF_EUNAVAILABLE (retry) when a
 * collector was deleting these very bytes. */
int cof_content_pending(cof_store *st, const char *sha, int64_t size, cof_err *err);

/* Stores `data` as content: inline (returns 1; pass `data` to cof_txn_write) or
 * as a blob (returns 0). The caller must hold the content (cof_store_hold_content) until the
 * metadata naming it has committed. */
int cof_content_put(cof_store *st, const void *data, size_t len, char sha[65],
		    cof_err *err);
/* Reads content of `size` bytes whole into *out (malloc'd, NUL-terminated):
 * for bounded uses such as read-all. */
int cof_content_read(cof_store *st, const char *sha, int64_t size, unsigned char **out,
		     cof_err *err);
/* Opens content by hash, inline or blob, as a reader (cof_blob_close). `size`
 * is what the metadata records; `name` (a path, or NULL) names it in errors. */
int cof_content_open(cof_store *st, const char *sha, int64_t size, const char *name,
		     cof_blob_reader **r, cof_err *err);
/* Opens content known to be in the blob store (not inline) as a reader. A
 * stored size other than `size` (a truncated or grown file) is COF_EINTERNAL
 * "the content of NAME is damaged", before any byte is read. */
int cof_content_reader(cof_store *st, const char *sha, int64_t size, const char *name,
		       cof_blob_reader **r, cof_err *err);
/* The largest blob a whole-file GET reads and hashes before answering. */
#define COF_VERIFY_MAX (1024 * 1024)

/* A GET link to exactly this content of `path` (as present_file shows it):
 * serves these bytes even after the file changes. Answer as cof_link_create. */
int cof_link_create_pinned(cof_store *st, const char *org, const char *vol,
			   const char *path, const char *sha, const char *ctype, int64_t size,
			   int64_t version, json_t **out, cof_err *err);

/* Parses "k:v" label filters and label objects (limits of API.md). */
int cof_labels_check(json_t *labels, cof_err *err);

/* ------------------------------------------------------------ merge
 * cof_volume_merge (merge.c, API.md "Merge"): per path three-way, text
 * files merged by lines with libgit2's git_merge_file. */

/* A merge brings at most this many paths changed on `from` (413 past it). */
#define COF_MERGE_PATHS 10000
/* Text above this size is merged as binary: a conflict when both changed it. */
#define COF_MERGE_TEXT_MAX (8LL << 20)
/* The merged texts (clean results and conflicts' markers) of one merge are
 * held in memory until its change: at most this much (413 past it). */
#define COF_MERGE_TEXT_TOTAL (32LL << 20)

/* Records the base of the next merge of `from` into `into`: from_seq, the seq
 * of `from` both now hold (state record kind "merge"); into_seq, the seq of
 * `into` it was made at. Also made by a fork that copied its rows (no link to
 * its parent left to find the fork point by), both ways. A failure is said on
 * stderr (cof_meta_state_save): the next merge takes an older base. */
void cof_merge_base_save(cof_store *st, const cof_volrow *into, const cof_volrow *from,
			 int64_t from_seq, int64_t into_seq);
/* 1 when `p` is text the merge reads by lines: UTF-8, no NUL, at most
 * COF_MERGE_TEXT_MAX bytes. */
int cof_merge_is_text(const void *p, size_t n);
/* Three-way merge of text by lines (as `git merge-file`): *out (malloc'd,
 * NUL-terminated, *outlen bytes) is the result, with <<<<<<< ours / =======
 * / >>>>>>> theirs markers where the sides overlap. 1 = clean,
 * 0 = conflicts (markers in *out), -1 with `err`. */
int cof_merge_text(const void *base, size_t blen, const void *ours, size_t olen,
		   const void *theirs, size_t tlen, unsigned char **out, size_t *outlen,
		   cof_err *err);

#endif
