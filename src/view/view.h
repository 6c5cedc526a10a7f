/*
 * view.h — a view of volumes served to processes as a directory (FUSE).
 *
 * A view shows one or more volumes ("roots"), each as it was at one seq (or,
 * with `follow`, as it is now), read lazily from the metadata store: opening
 * a view copies nothing, so a 100,000-file volume mounts as fast as an empty
 * one. Writes go to a layer of the view's own: written bytes are files in
 * `layer_dir` (the turn's scratch disk, so they count against its limits),
 * what was written, removed, renamed or made is kept in memory. Two ways
 * the layer lands (docs/design.md, "Views"):
 *  - COF_VIEW_CALL: nothing reaches the volume until cof_view_commit, which
 *    lands each root's layer as one change, conditional on what the view saw;
 *  - COF_VIEW_DIRECT (`coffer mount`): each file closed after writing is one
 *    version (a conflicting close fails with EIO), unlink is a remove and
 *    rename a move, at once.
 * A view runs in the process that made it: one libfuse session, served by a
 * thread of its own, from cof_view_mount to cof_view_unmount.
 */
#ifndef COF_VIEW_H
#define COF_VIEW_H

#include <stdint.h>
#include <sys/types.h>
#include "coffer.h"

#define COF_VIEW_ROOTS 34   /* the agent's 32 mounts, /user and /attachments */

typedef enum { COF_VIEW_CALL = 0, COF_VIEW_DIRECT = 1 } cof_view_way;

/* Says whether volume path `vpath` (is_dir: a folder) is hidden from the
 * view: absent from listings and lookups, and refused when created. */
typedef int (*cof_view_excl_fn)(const void *ctx, const char *vpath, int is_dir);

/* One volume in a view. */
typedef struct cof_view_root {
	char name[16];          /* its folder at the view's top ("m0"); "" for a
				   view of one root, which is then the top itself */
	char vol[48];           /* the volume id */
	char subpath[4097];     /* "" = the volume's root, else "a/b" */
	const char *shown;      /* where the caller sees it ("/workspace"): conflicts
				   are kept under it; borrowed, NULL = "" */
	const char *snapshot;   /* NULL = the volume's seq at mount; borrowed */
	int rw;                 /* writes allowed (else EROFS) */
	const char *const *ro_tops; /* NULL-terminated top folders kept read-only
				   ("memories", "skills" of /user); borrowed */
	cof_view_excl_fn excluded; /* NULL = nothing hidden */
	const void *excl_ctx;   /* borrowed */
} cof_view_root;

/* Where a view reads its volumes and where DIRECT writes land: NULL = the
 * store `st` in process, else a source such as cof_view_src_http's. */
typedef struct cof_view_src cof_view_src;

typedef struct cof_view_opts {
	cof_store *st;          /* the store, when `src` is NULL */
	const char *org;
	cof_view_src *src;      /* NULL = st; borrowed until cof_view_unmount */
	cof_view_root *roots;   /* borrowed until cof_view_unmount */
	int nroots;
	cof_view_way way;
	int follow;             /* read the volumes as they are now, not at a seq */
	const char *layer_dir;  /* where written bytes go; NULL = read-only */
	int allow_other;        /* others than the mounting uid may enter (root) */
	int noexec;             /* nothing in the view can be run */
	uid_t owner;            /* owner of kept conflicts (0 = as made) */
	int warm;               /* prepare the first listings as it mounts, */
	uid_t warm_uid;         /* for a caller of these ids (docs/design.md, */
	gid_t warm_gid;         /* Views, "Warm") */
} cof_view_opts;

typedef struct cof_vfs cof_vfs;

/* Opens every root at its seq and mounts the view at `dir` (an empty folder),
 * then serves it from a thread. 0, or -1 with err (nothing left mounted). */
int cof_view_mount(const cof_view_opts *opts, const char *dir, cof_vfs **out,
		   cof_err *err);
/* Serves a mounted view from a thread of its own (calls). 0, or -1. */
int cof_view_start(cof_vfs *v, cof_err *err);
/* The seq root `i` is read at. */
int64_t cof_view_seq(const cof_vfs *v, int i);
/* How many paths the view's layer holds (written, removed, made, renamed,
 * chmod-ed): 0 = the view still shows its roots exactly at their seqs. */
int64_t cof_view_touched(cof_vfs *v);
/* A call's read-write view kept for the turn's next call (its processes
 * are gone): the files the last call only looked at (looked up or listed,
 * never read nor stored) are forgotten by name in the kernel, so the next
 * call's listings store them again before it sees them (prefetch.c,
 * vpush_renew). */
void cof_view_renew(cof_vfs *v);
/* Returns once the renewing cof_view_renew began is done: before the next
 * call's processes start (it runs on a thread of its own). */
void cof_view_renew_wait(cof_vfs *v);
/* Serves the view in the calling thread until it is unmounted from outside
 * (fusermount3 -u) or cof_view_stop is called; for `coffer mount`. */
int cof_view_serve(cof_vfs *v);
/* Asks a view served by cof_view_serve to end (signal-safe enough: sets a flag
 * and unmounts lazily). */
void cof_view_stop(cof_vfs *v);

/* What a root's commit did: committed (seq > 0; written and removed counts),
 * and conflicts [{path (volume path), reason}] (owned; json_decref). */
typedef struct cof_view_result {
	int64_t seq;            /* the change's seq; 0 = nothing landed */
	int64_t written, removed;
	json_t *conflicts;      /* [{path, reason}] */
	json_t *files;          /* [{path, version, size, sha256, contentType}] written */
	json_t *merged;         /* [path] of `files`: merged by lines with what landed
				 * since the view saw it (someone else's edit of other lines) */
	cof_err err;            /* why nothing landed (ceiling, ...), else COF_OK */
} cof_view_result;

/* Stops serving (the mount is detached: processes still holding it get
 * ENOTCONN), so the layer is still. Then cof_view_commit may run. */
void cof_view_detach(cof_vfs *v);
/* Lands the layer of every read-write root as one change per root,
 * conditional on what the view saw: a file changed meanwhile by someone else
 * is merged by lines when both are text and the edits do not overlap, else a
 * conflict, never overwritten; its layer bytes are moved to
 * `conflict_dir`/PATH (relative to the root's mount; NULL = dropped).
 * res[i] for root i (nroots entries). Call after cof_view_detach. `by`:
 * who the changes are by (the call; NULL = not said). */
void cof_view_commit(cof_vfs *v, int conflict_dir, const cof_by *by, cof_view_result *res);
void cof_view_result_release(cof_view_result *r);
/* Unmounts (lazily) if still mounted, removes the layer's files, frees `v`.
 * NULL is fine. */
void cof_view_unmount(cof_vfs *v);

/* Whether views can be mounted here: 1, or 0 with why (for the log) in
 * `why`. As root: /dev/fuse opens; else /dev/fuse opens for this uid or
 * fusermount3 mounts (tried once in `dir`, an existing empty folder). */
int cof_view_usable(const char *dir, char *why, size_t whysz);

/* A source reading and writing volumes through a cofferd's HTTP API at
 * `url` with API key `key` (libcurl, keep-alive connections, one per serving
 * thread): reads at the view's seq with ?seq=, content by Range, a closed
 * file as a PUT with If-Match, DELETE, POST move (src/view/source_http.c).
 * Makes no request yet. NULL with err. */
cof_view_src *cof_view_src_http(const char *url, const char *key, cof_err *err);
/* Asks the server once (GET /v1/volumes/{vol}): 0, or -1 with err naming what
 * failed (cannot reach it, the key refused, no such volume). */
int cof_view_src_check(cof_view_src *s, const char *vol, cof_err *err);
void cof_view_src_free(cof_view_src *s);

/* Lazily unmounts every FUSE mount under `dir` (what a crashed run left). */
void cof_view_sweep(const char *dir);

#endif
