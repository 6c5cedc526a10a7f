/*
 * lowlevel.h — what lowlevel.c (the requests), listing.c (folders),
 * inodes.c (the table of the kernel's node ids) and prefetch.c (pushes into
 * the page cache) share.
 */
#ifndef COF_VIEW_LOWLEVEL_H
#define COF_VIEW_LOWLEVEL_H

#define FUSE_USE_VERSION 31
#include <fuse.h>               /* struct fuse_context */
#include <fuse_lowlevel.h>
#include "view/view_int.h"

/* One node the kernel knows (or a folder above one it knows). */
typedef struct cof_lnode {
	struct cof_lnode *id_next, *name_next; /* hash chains */
	fuse_ino_t ino;
	struct cof_lnode *parent;   /* NULL once removed (or the root) */
	char *name;             /* NULL once removed */
	uint64_t nlookup;       /* the kernel's references */
	uint64_t nchild;        /* nodes whose parent this is */
	struct cof_vpnode *pf;  /* the hooks' own state of it (prefetch.c), or NULL */
	char *path;             /* its FUSE path, cached once a request needed it
				 * (cof_lino_path), good while path_gen is
				 * ll->names_gen; NULL: none yet */
	uint64_t path_gen;
	/* a folder's (listing.c) */
	fuse_ino_t next_dir;    /* the folder listed after it in its parent */
	struct cof_lprep *prep; /* its replies, prepared before it was opened */
	int preparing;          /* they are being built */
	int opened;             /* handles or cursors of it open */
	struct cof_ldir *cursors; /* its listings with no handle (listing.c) */
	int file;               /* a regular file, as last answered */
} cof_lnode;

/* What a view counts of its own work when COFFER_VIEW_STATS names a file
 * (to measure: cof_vll_free appends one line of them there): requests by
 * kind, the time spent in each, and prefetch's. */
enum {
	COF_VST_LOOKUP, COF_VST_GETATTR, COF_VST_READ, COF_VST_OPENDIR,
	COF_VST_READDIRPLUS, COF_VST_READDIR, COF_VST_RELEASEDIR, COF_VST_FORGET,
	COF_VST_UNLINK, COF_VST_RMDIR,
	COF_VST_OTHER,          /* (the requests' kinds end here) */
	COF_VST_STORED,         /* files stored (n) and the time of their pushes */
	COF_VST_STORED_LISTER,  /* of them, by a lister's own thread */
	COF_VST_NOT_STORED,     /* listed to push, not stored (seen, asked, stale) */
	COF_VST_LIST_WAIT,      /* a reply waited for its stores (n, time): one
				 * whose files were handed to the pusher */
	COF_VST_HID_WALK,       /* walks of the pusher's folder */
	COF_VST_PREPARED,       /* folders prepared */
	COF_VST_PREP_SENT,      /* replies answered from what was prepared */
	COF_VST_AHEAD_SENT,     /* replies answered from one built ahead */
	COF_VST_BUILT_NOW,      /* replies built when asked */
	COF_VST_RENEW,          /* names dropped between calls (vpush_renew) */
	COF_VST_PUSH_OFF,       /* pushing stopped: the walk removes what it
				 * lists (prefetch.c, vpush_remove) */
	COF_VST_CURSOR,         /* listings begun with no handle (listing.c) */
	COF_VST_CURSOR_DROP,    /* of them, dropped before their end */
	COF_VST_N
};

struct cof_vll {
	pthread_mutex_t mu;
	int stats;              /* COFFER_VIEW_STATS: count (cof_vll_stat) */
	uint64_t st_n[COF_VST_N], st_ns[COF_VST_N];
	cof_lnode **by_id, **by_name;
	size_t nbuckets, count;
	fuse_ino_t next_ino;
	uint64_t names_gen;     /* bumped by every rename and removal: the paths
				 * nodes cached before are stale */
	cof_lnode root;
	uint64_t changes;       /* changes begun (prefetch: none since it read) */
	int inflight;           /* changes under way */
	const struct cof_vhooks *hooks; /* what the core tells prefetch.c */
	struct cof_vpf *pf;     /* prefetch's own state (prefetch.c), or NULL */
	/* listing.c */
	int no_opendir;         /* the kernel sends no OPENDIR (cof_vll_opendir) */
	struct cof_ldir *lru;   /* the cursors not in a request, the least
				 * recently listed last (a ring) */
	int ncursors;           /* cursors alive */
	uint32_t next_cid;      /* the last cursor's id */
	size_t list_size;       /* the size the last READDIRPLUS asked */
	int npreps;             /* folders prepared, not yet opened */
	fuse_ino_t preps[4];    /* which, oldest first (npreps of them) */
	double entry_t, attr_t, neg_t;
	const struct fuse_operations *ops;
	cof_vfs *v;
	struct fuse_session *se;
};

/* The folder requests a claim_dir hook is asked about. */
enum { COF_VHID_OPEN, COF_VHID_LIST, COF_VHID_RELEASE, COF_VHID_GETATTR };
/* A listing's files to push (prefetch.c's own). */
typedef struct cof_vpush cof_vpush;

/* What the core (lowlevel.c, inodes.c, listing.c) tells an add-on of the
 * view's session: prefetch.c implements it (cof_vprefetch_hooks), keeping
 * its state in ll->pf and a node's in n->pf, so the core's structures hold
 * none of its fields. Every hook may be NULL; the node ones run under
 * ll->mu (and may wait on it), the others without. */
typedef struct cof_vhooks {
	/* Its state for session ll, before it serves: 0, or -1 (no session). */
	int (*start)(cof_vll *ll);
	/* INIT answered: the caller's context set (it may warm the view). */
	void (*on_init)(cof_vll *ll);
	/* A request of its own: 1 when req was one (and is answered). */
	int (*claim_lookup)(fuse_req_t req, cof_vll *ll, fuse_ino_t parent, const char *name);
	int (*claim_dir)(fuse_req_t req, cof_vll *ll, fuse_ino_t ino, int op, size_t size,
			 off_t off, struct fuse_file_info *fi);
	/* Node n goes to the kernel in a reply a process may see (a lookup, a
	 * create, a listing sent). */
	void (*on_seen)(cof_vll *ll, cof_lnode *n);
	/* A READ of node n came (before it was opened: the kernel sends no
	 * OPEN in a call's view). */
	void (*on_read)(cof_vll *ll, cof_lnode *n);
	/* A change of node `ino` begins (`write`: a WRITE of it; 0: a change
	 * of no node the kernel knows yet). */
	void (*on_change)(cof_vll *ll, fuse_ino_t ino, int write);
	/* Node n was removed through the mount (unlink, rmdir), before it
	 * leaves its folder. */
	void (*on_remove)(cof_vll *ll, cof_lnode *n);
	/* Whether node n must stay (not freed though the kernel forgot it). */
	int (*holds)(const cof_vll *ll, const cof_lnode *n);
	/* Node n is freed: its state goes. */
	void (*on_forget)(cof_vll *ll, cof_lnode *n);
	/* Ends its work (what it had not done is dropped): before the session
	 * goes; may come twice. */
	void (*stop)(cof_vll *ll);
	/* Frees its state (after stop). */
	void (*end)(cof_vll *ll);
	/* The view goes to the next call of its turn, no process of the last
	 * one left (cof_view_renew). */
	void (*renew)(cof_vll *ll);
	/* Returns once what renew began is done. */
	void (*renew_wait)(cof_vll *ll);
	/* The batching of a listing's files (listing.c asks, prefetch.c
	 * answers; none: nothing is pushed). Whether a listing of folder
	 * `dir` pushes its files (their nodes made first, stored before the
	 * reply that names them). Without mu. */
	int (*pushes)(cof_vll *ll, fuse_ino_t dir);
	/* A listing's empty set of pushes, or NULL. */
	cof_vpush *(*push_new)(cof_vll *ll);
	/* Adds file n (attributes st, content `sha`, in folder p) to ps if the
	 * budgets allow and it was not pushed before. Under mu. */
	void (*push_add)(cof_vll *ll, cof_vpush *ps, cof_lnode *p, cof_lnode *n,
			 const struct stat *st, const char *sha);
	/* Hands ps to the view's pusher, which pushes and frees it (`first`:
	 * before those queued already): its id, or 0 when dropped. */
	uint64_t (*push_run)(cof_vll *ll, cof_vpush *ps, int first);
	/* Waits until push `id` is done or dropped (pushes it on the calling
	 * thread when the pusher has not begun it; at once when another
	 * lister of the view waits already). */
	void (*push_wait)(cof_vll *ll, uint64_t id);
	/* Pushes push `id` on the calling thread now, when the pusher has not
	 * begun it and no other lister walks (and, `if_busy`, the pusher is
	 * busy with another): 1 when done, else 0. */
	int (*push_now)(cof_vll *ll, uint64_t id, int if_busy);
	/* Has the pusher prepare folder `ino` (cof_vll_prepare) as caller cx. */
	void (*prepare)(cof_vll *ll, fuse_ino_t ino, const struct fuse_context *cx);
	/* Frees a set of pushes never handed over (NULL: nothing). */
	void (*push_free)(cof_vll *ll, cof_vpush *ps);
} cof_vhooks;

/* prefetch.c's. */
extern const cof_vhooks cof_vprefetch_hooks;
/* Calls hook `h` of ll's table when it has one: COF_VHOOK_IF's value is
 * the hook's, 0 without one. */
#define COF_VHOOK(ll, h, ...) \
	do { \
		if ((ll)->hooks && (ll)->hooks->h) \
			(ll)->hooks->h(__VA_ARGS__); \
	} while (0)
#define COF_VHOOK_IF(ll, h, ...) ((ll)->hooks && (ll)->hooks->h ? (ll)->hooks->h(__VA_ARGS__) : 0)

/* A listing's next reply, built ahead (see list()): for a request at
 * offset `off` of `size` bytes, while ll->changes is still `changes`; the
 * node references it took (the kernel's once it is sent). */
typedef struct cof_lahead {
	char *buf;
	size_t len, size;
	off_t off, last;        /* asked from; the offset after its last entry */
	int rc;
	uint64_t changes;
	uid_t uid;              /* the caller it was built for (the owner of */
	gid_t gid;              /* its entries): another is answered anew */
	struct cof_vpush *push;
	int pushes;             /* its folder's files are pushed (prefetch.c) */
	uint64_t push_id;       /* its files handed to the pusher (nodes first) */
	fuse_ino_t *refs;
	size_t nrefs, cap;
} cof_lahead;

/* The replies of a folder, prepared before it was opened (listing.c):
 * from offset 0 on, in order, with ops_tree.c's listing `fh` after them. */
#define COF_LPREP_MAX 8
typedef struct cof_lprep {
	uint64_t fh;
	uint32_t cid;           /* the cursor id in its offsets (cof_ldir) */
	cof_lahead r[COF_LPREP_MAX];
	int n, next;            /* built; the next to send */
	uint64_t changes;       /* ll->changes when they were built */
	fuse_ino_t last_dir;    /* the last folder entry (cof_ldir's) */
} cof_lprep;

/* A folder open for listing: ops_tree.c's handle and the replies built
 * before they are asked; mu keeps its requests and the building one at a
 * time. The kernel's handle of it (fi->fh), or where the kernel sends no
 * OPENDIR (ll->no_opendir) a cursor kept on the folder's node, found by
 * the id its replies' offsets carry (listing.c, "Cursors"). */
typedef struct cof_ldir {
	uint64_t fh;
	fuse_ino_t ino;
	pthread_mutex_t mu;
	uint32_t cid;           /* a cursor's id (0: a handle's) */
	int busy;               /* a cursor's requests in it or waiting for it
				 * (under ll->mu) */
	int ended;              /* a cursor whose listing ended (under mu) */
	struct cof_ldir *node_next; /* the node's other cursors */
	struct cof_ldir *lru_prev, *lru_next; /* ll->lru, when not busy */
	cof_lahead ahead[2];    /* the next replies ([1]: where files are pushed) */
	cof_lprep *prep;        /* what was prepared, not all sent yet */
	fuse_ino_t last_dir;    /* the last folder entry listed so far */
	fuse_ino_t prep_next;   /* the folder to prepare once it is listed */
	struct fuse_context prep_cx; /* (as whom) */
} cof_ldir;

/* ---- inodes.c (under ll->mu unless said) */

/* The node of id `ino`, or NULL. */
cof_lnode *cof_lino_find(cof_vll *ll, fuse_ino_t ino);
/* The node of `name` in folder `parent`, or NULL. */
cof_lnode *cof_lino_child(cof_vll *ll, cof_lnode *parent, const char *name);
/* The node of `name` in `parent`, made if new, with one more lookup (the
 * reference a reply of it gives the kernel). NULL when out of memory. */
cof_lnode *cof_lino_ref(cof_vll *ll, cof_lnode *parent, const char *name);
/* Frees n if nothing holds it any more, then its parent likewise. */
void cof_lino_put(cof_vll *ll, cof_lnode *n);
/* Drops `n` of the kernel's references to node `ino`. */
void cof_lino_forget(cof_vll *ll, fuse_ino_t ino, uint64_t n);
/* Takes the node off its parent (unlink, rmdir, a rename over it). */
void cof_lino_detach(cof_vll *ll, cof_lnode *n);
/* Follows a rename of (p, name) to (np, newname). */
void cof_lino_rename(cof_vll *ll, cof_lnode *p, const char *name, cof_lnode *np,
		     const char *newname, unsigned flags);
/* The FUSE path of node n (with `name` in it when given) in a new string;
 * NULL for a removed node or a path too long. n's own path is cached on
 * it (until a rename or removal anywhere). */
char *cof_lino_path(cof_vll *ll, cof_lnode *n, const char *name);
/* The table's first buckets and its root. 0, or -1 out of memory. */
int cof_lino_init(cof_vll *ll);
/* Frees every node. */
void cof_lino_free(cof_vll *ll);
/* cof_lino_path of node `ino`, taking mu. */
char *cof_vll_path(cof_vll *ll, fuse_ino_t ino, const char *name);
/* A change begins (`write`: a WRITE of node `ino`) and ends, taking mu:
 * what keeps prefetch from storing stale bytes (prefetch.c). */
void cof_vll_change_begin(cof_vll *ll, fuse_ino_t ino, int write);
void cof_vll_change_end(cof_vll *ll);

/* Counts n of kind k taking ns nanoseconds, when the view counts (atomic). */
void cof_vll_stat(cof_vll *ll, int k, uint64_t n, uint64_t ns);
/* CLOCK_MONOTONIC in ns, when the view counts; else 0. */
uint64_t cof_vll_now(const cof_vll *ll);

/* The view of request req, its caller's context set (lowlevel.c). */
cof_vll *cof_vll_begin(fuse_req_t req);
/* The same for a thread of the view's own, as caller cx. */
void cof_vll_enter(cof_vll *ll, const struct fuse_context *cx);

/* ---- listing.c: the folder requests */
void cof_vll_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void cof_vll_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void cof_vll_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		     struct fuse_file_info *fi);
void cof_vll_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			 struct fuse_file_info *fi);
/* Frees what was prepared and never opened, and every cursor (unmounted). */
void cof_vll_preps_free(cof_vll *ll);
/* Prepares folder `ino` (listing.c: its replies built before it is opened),
 * on the calling thread; the caller's context set (cof_vll_enter). The
 * first folder it lists, or 0. */
fuse_ino_t cof_vll_prepare(cof_vll *ll, fuse_ino_t ino);
/* A cold view's first listings, prepared as it mounts (on the pusher's
 * thread, the expected caller's context set): in each root, its top
 * folder and the first folder listed there, what a walk of it opens
 * first. A walk's listing waits for its files' stores (prefetch.c, nodes
 * first); the time a call's sandbox takes to start is spent on them
 * instead. docs/design.md, Views, "Warm". */
void cof_vll_warm(cof_vll *ll);

#endif
