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

#endif
