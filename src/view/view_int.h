/*
 * view_int.h — what the files of src/view/ share: the view, its roots as
 * opened, the layer's nodes, and the reads of a volume at a seq.
 */
#ifndef COF_VIEW_INT_H
#define COF_VIEW_INT_H

#include <pthread.h>
#include <sys/stat.h>
#include "view/view.h"
#include "volume/volume.h"

/* What the layer knows of one path of a root. */
typedef enum { N_FILE = 1, N_DIR, N_GONE } vnode_kind;

struct vfold;

typedef struct vnode {
	struct vnode *chain;    /* hash chain */
	struct vnode *next;     /* every node, newest first */
	struct vnode *sib;      /* the next node of its folder (vfold.kids) */
	struct vfold *dir;      /* the folder it is in */
	int root;
	char *path;             /* volume path relative to the root's subpath */
	vnode_kind kind;        /* set through cof_vnode_set (the counts) */
	int64_t lid;            /* > 0: the bytes are LAYER/lid; 0: content `sha` */
	char sha[65];
	int64_t size;           /* of content `sha` (a layer file: fstat) */
	char ctype[128];        /* of content `sha` */
	int64_t seen;           /* the version at `path` the view saw (0 = absent) */
	mode_t mode;            /* permission bits (kept in the layer only) */
	int64_t mtime;
	int dirty;              /* DIRECT: written, not yet landed */
	int refused;            /* DIRECT: the last landing was refused (not failed) */
	int copying;            /* its bytes are being copied into the layer with
				 * mu dropped (ops.c, file_for_write): others
				 * wanting them wait on cof_vfs.copied */
	/* An N_DIR made by mkdir where the view showed nothing: every file of
	 * the base beneath it has a node (the base has none there, or the layer
	 * removed them all), so a path beneath it without a node is nowhere;
	 * cleared by cof_vnode_set (cof_vbase_none_at) */
	int fresh;
} vnode;

typedef struct vroot {
	cof_view_root cfg;
	cof_view v;             /* the volume at the seq read */
	size_t sublen;
} vroot;

#define VNODE_BUCKETS 4096
/* Paths one view may write, remove, rename or make (its nodes, in memory):
 * past it ENOSPC. A folder made by mkdir costs no byte of the layer's disk,
 * so this is what bounds them. */
#define COF_VIEW_NODES_MAX 1000000

/* A folder some node lies in or beneath: how many nodes beneath it are not
 * N_GONE (what "is it empty" asks) and what the layer has directly in it
 * (what a listing asks), so that neither walks every node: an `rm -rf` of
 * 10,000 files asked 10,000 times. */
typedef struct vfold {
	struct vfold *chain;    /* hash chain */
	struct vfold *up;       /* the folder it is in; NULL for a root's top */
	struct vfold *sib;      /* the next folder of `up` */
	struct vfold *subs;     /* its folders */
	vnode *kids;            /* its nodes */
	int root;
	int64_t live;           /* nodes beneath it (at any depth) not N_GONE */
	char path[];            /* "" = the root's top */
} vfold;

struct cof_vfs {
	cof_view_opts o;
	uint64_t id;            /* unique in the process (views come and go) */
	vroot roots[COF_VIEW_ROOTS];
	pthread_mutex_t mu;     /* the nodes, next_lid; held for no read of the
				 * source or copy of bytes (docs/design.md,
				 * Views, "No I/O under the view's mutex") */
	pthread_mutex_t wmu;    /* the change lock: held (before mu) by every
				 * change of the nodes from its checks to its
				 * end, so a change may drop mu across its I/O
				 * (a base lookup, a DIRECT landing, removal or
				 * move) with no other change made meanwhile:
				 * lookups, listings and reads, which take mu
				 * only, go on. A copy into the layer drops
				 * both (it re-validates: file_for_write). */
	pthread_cond_t copied;  /* a node's copy into the layer ended */
	uint64_t gen;           /* bumped by every change of a node's kind: a
				 * read made with mu dropped is still good when
				 * it is unchanged after */
	vnode *bucket[VNODE_BUCKETS];
	vfold *fbucket[VNODE_BUCKETS];
	vnode *nodes;
	int64_t nnodes;
	int64_t next_lid;
	int layer;              /* fd of layer_dir, or -1 */
	char *dir;              /* the mount point */
	struct fuse_session *se;
	struct cof_vll *ll;     /* the inode table (lowlevel.c) */
	pthread_t thread;
	int threaded, mounted;
	int by_fusermount;      /* mounted through fusermount3: it unmounts too */
	uid_t uid;
	gid_t gid;
	pthread_mutex_t files_mu; /* files */
	struct vfile *files;    /* open, not released yet (ops.c) */
};

/* ---- ops.c */

/* Closes the files the kernel never released (ops.h, vfile): a view
 * unmounted with files open gets no RELEASE once its session ends. After the
 * session. */
void cof_vfile_free_all(cof_vfs *v);

/* ---- layer.c */

/* The node of (root, path), or NULL. Under mu. */
vnode *cof_vnode_find(cof_vfs *v, int root, const char *path);
/* The node of (root, path), made (kind N_GONE, seen from the base) if
 * absent. NULL with errno (ENOMEM, or ENOSPC past COF_VIEW_NODES_MAX).
 * Under mu and wmu: a node it makes is looked up in the base with mu
 * dropped (no other change runs meanwhile, wmu). */
vnode *cof_vnode_get(cof_vfs *v, int root, const char *path);
/* Sets n's kind (and the counts of the folders above it). Under mu. */
void cof_vnode_set(cof_vfs *v, vnode *n, vnode_kind kind);
/* True when some node other than N_GONE lies under folder `path` of root
 * (one lookup). Under mu. */
int cof_vnode_under(cof_vfs *v, int root, const char *path);
/* Drops node n's change from the layer: its bytes are forgotten and it reads
 * as the view last saw it (the base's version, or the one it landed itself;
 * absent when it saw none): a landing the volume refused must not look done.
 * Under mu. */
void cof_vnode_revert(cof_vfs *v, vnode *n);
/* Calls fn(ctx, name, shown) for each name the layer has directly in folder
 * `path` of root: a node's (shown: not N_GONE) and a folder's that nodes
 * lie beneath (shown: one of them not N_GONE). A name may come twice (a
 * node and a folder). As many calls as names. Under mu. */
void cof_vnode_names(cof_vfs *v, int root, const char *path,
		     void (*fn)(void *ctx, const char *name, int shown), void *ctx);
/* Frees every node and folder. */
void cof_vnode_free_all(cof_vfs *v);
/* A new layer file; returns its id and an fd open for read and write, -1. */
int64_t cof_layer_new(cof_vfs *v, int *fd);
/* Opens layer file `lid` (flags as open(2)). */
int cof_layer_open(cof_vfs *v, int64_t lid, int flags);

/* ---- base.c: the volume of root r at its seq */

/* The volume path of root-relative `path` in *out. */
void cof_vbase_vpath(const vroot *r, const char *path, char *out, size_t outsz);
/* 1 with *e when a file is at `path`, 0 when not, -1 on error. */
int cof_vbase_file(cof_vfs *v, int root, const char *path, cof_entry *e);
/* 1 when some file lies under folder `path` ("" = root: always 1) that the
 * layer has not removed; 0 when none. */
int cof_vbase_dir(cof_vfs *v, int root, const char *path);
/* 1 when the base has nothing at or beneath `path` that the layer has no
 * node of, known without reading it: a folder above `path` is fresh (vnode)
 * and the view reads at its seq. Under mu. Files made in a new folder then
 * cost no query of the source per lookup. */
int cof_vbase_none_at(cof_vfs *v, int root, const char *path);
/* cof_vbase_dir without mu held (it takes mu for each row's node). */
int cof_vbase_dir_unlocked(cof_vfs *v, int root, const char *path);
/* cof_vbase_file, then cof_vbase_dir, in one read of the source when it can
 * (the rows starting with `path`, where the source's walk_stops): 1 file
 * (*e), 2 folder, 0 nothing. mu not held when `unlocked` (as
 * cof_vbase_dir_unlocked), else held. */
int cof_vbase_what(cof_vfs *v, int root, const char *path, cof_entry *e, int unlocked);
/* One child of a folder as read from the volume. */
typedef struct vchild {
	char name[256];
	int dir;
	int link;               /* a file that is a symlink (COF_SYMLINK_TYPE) */
	int64_t size, updated_at;   /* a file's (a page holds 256: no cof_entry) */
	char sha256[65];
} vchild;
/* Up to `cap` children of folder `path` after child `after` (NULL = from
 * the start), in the volume's row order (folder "x" sorts as "x/"); *n how
 * many. 0, or -1 on error. */
int cof_vbase_children(cof_vfs *v, int root, const char *path, const vchild *after,
		       vchild *out, int cap, int *n);
/* An open file's bytes as the volume has them: small content in memory, a
 * blob reader (ranged reads, any backend) otherwise; or the source's own
 * (`h`, read through `src`). */
typedef struct cof_vbytes {
	cof_blob_reader *r;     /* the content, or NULL */
	unsigned char *data;    /* inline content, or NULL */
	int64_t size;
	const struct cof_vsrc_ops *src; /* NULL = r / data above */
	void *h;                /* the source's handle of the bytes */
} cof_vbytes;
/* THE place that opens a file's bytes for reading (with cof_vbytes_read):
 * file `path` of root at the view's seq, or content `sha` when given. 0, or
 * -1 with errno (ENOENT: no such file at the seq; EIO). */
int cof_vbytes_open(cof_vfs *v, int root, const char *path, const char *sha,
		    cof_vbytes *b);
/* cof_vbytes_open for the file of layer node n (kind N_FILE, no layer
 * bytes): the version it saw, also when the view landed it after its seq
 * (a rename), else content n->sha. */
int cof_vbytes_open_node(cof_vfs *v, const vnode *n, cof_vbytes *b);
/* Reads by range (pread semantics), never the whole content at once. */
ssize_t cof_vbytes_read(const cof_vbytes *b, void *buf, size_t n, int64_t off);
/* A local file holding the bytes from offset 0 (a blob of the local store),
 * owned by b, that a read may splice from; -1 when there is none (inline or
 * cached bytes, S3, HTTP). */
int cof_vbytes_fd(const cof_vbytes *b);
void cof_vbytes_close(cof_vbytes *b);

/* The seq root's reads are made at: the view's, or with `follow` the
 * newest (-1 in process; a source may pin it for a while). */
int64_t cof_vbase_at(cof_vfs *v, int root);

/* ---- the source (source_local.c, source_http.c): every read of a volume
 * and every DIRECT write goes through these. Paths are volume paths. */
typedef struct cof_vsrc_ops {
	/* Loads root r's volume (and snapshot) into r->v: id, seq, ceiling. */
	int (*open)(cof_vfs *v, vroot *r, cof_err *err);
	/* The seq `follow` reads at now (-1 = each read at the newest). */
	int64_t (*newest)(cof_vfs *v, int root);
	/* 1 with *e when a file is at vpath at seq `at` (-1 = now), 0, -1. */
	int (*entry)(cof_vfs *v, int root, const char *vpath, int64_t at, cof_entry *e);
	/* Rows under `prefix` after `after` (NULL = from the start) at `at`,
	 * in path order, until fn returns nonzero. 0, or -1. */
	int (*list)(cof_vfs *v, int root, int64_t at, const char *prefix, const char *after,
		    cof_entry_fn fn, void *ctx);
	/* cof_vbytes_open / _read / _close (see above). */
	int (*bytes_open)(cof_vfs *v, int root, const char *vpath, const char *sha, int64_t at,
			  cof_vbytes *b);
	ssize_t (*bytes_read)(const cof_vbytes *b, void *buf, size_t n, int64_t off);
	void (*bytes_close)(cof_vbytes *b);
	/* Optional: 1 when a `list` that fn stops early read no rows past the
	 * stop (a cursor, or small pages), so that one walk may answer what a
	 * file read and a folder probe would (cof_vbase_what); 0 or absent when
	 * it reads a large page first (PostgreSQL's 512 rows). */
	int (*walk_stops)(cof_vfs *v);
	/* Optional: fn(ctx, i, data, len) for each of contents shas[0..n) kept
	 * inline in the metadata, in one read (prefetch's batch). 0, or -1. */
	int (*inline_many)(cof_vfs *v, const char *const *shas, size_t n, cof_inline_fn fn,
			   void *ctx);
	/* DIRECT: lands node n's layer file as a new version conditional on
	 * n->seen, then sets n's seen, sha, size, type. 0, or -errno (EIO:
	 * conflict, the other side's version stays; ENOSPC: past the ceiling). */
	int (*put)(cof_vfs *v, vnode *n);
	/* DIRECT: removes vpath if still at version `seen`. 0 (also when gone),
	 * or -EIO. */
	int (*remove)(cof_vfs *v, int root, const char *vpath, int64_t seen);
	/* DIRECT: one move of a file or folder (overwriting); *seq its seq. 0 or -EIO. */
	int (*move)(cof_vfs *v, int root, const char *from, const char *to, int64_t *seq);
} cof_vsrc_ops;

/* What every source starts with. */
struct cof_view_src {
	const cof_vsrc_ops *ops;
};

/* The in-process source: v->o.st. */
extern const cof_vsrc_ops cof_vsrc_local;
/* The ops of view v. */
#define VSRC(v) ((v)->o.src ? (v)->o.src->ops : &cof_vsrc_local)

/* ---- lowlevel.c: the view on libfuse's low-level API */

typedef struct cof_vll cof_vll;
struct fuse_args;
struct fuse_operations;
/* A session serving the path-based `ops` on view v, its inode table in
 * v->ll; NULL on failure. */
struct fuse_session *cof_vll_new(cof_vfs *v, struct fuse_args *args,
				 const struct fuse_operations *ops);
/* Destroys the session (unmounted) and the table. */
void cof_vll_free(cof_vll *ll);
/* Ends the view's pusher while the loop still serves (its own requests
 * of the mount need it): before the loop is stopped. */
void cof_vll_quiesce(cof_vll *ll);

/* ---- commit.c */

/* Lands one file of root r now (DIRECT): the layer file at node n, as a new
 * version conditional on n->seen, through the view's source. 0, or a
 * negative errno (EIO: conflict). Under mu and wmu; mu is dropped across
 * the source's round trip (the source lands a copy of n; its answer is set
 * on n with mu taken again). */
int cof_view_land_file(cof_vfs *v, vnode *n);
/* The in-process way of it (the local source's put). */
int cof_view_land_local(cof_vfs *v, vnode *n);

#endif
