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
	int64_t pushed;         /* bytes prefetch put into the cache: of this
				 * file, or (a folder) of its files */
	int pushing;            /* prefetch is storing its bytes now (pushes of it) */
	int stale;              /* written while pushing: drop the cache after */
	int asked;              /* read by request: a push of it is late */
	int seen;               /* in a reply a process could see (a lookup, a
				 * listing sent): its bytes are never stored
				 * after (prefetch.c) */
	int hid;                /* the pusher's folder (prefetch.c) */
	/* a folder's (listing.c) */
	fuse_ino_t next_dir;    /* the folder listed after it in its parent */
	struct cof_lprep *prep; /* its replies, prepared before it was opened */
	int preparing;          /* they are being built */
	int opened;             /* handles of it open */
} cof_lnode;

struct cof_vll {
	pthread_mutex_t mu;
	pthread_cond_t pushed;  /* a push ended */
	cof_lnode **by_id, **by_name;
	size_t nbuckets, count;
	fuse_ino_t next_ino;
	cof_lnode root;
	uint64_t changes;       /* changes begun (prefetch: none since it read) */
	int inflight;           /* changes under way */
	int64_t view_pushed;    /* bytes pushed in this view (its budget) */
	/* prefetch's queue (prefetch.c): listings' files waiting for the
	 * pusher thread, in the order they were listed */
	struct cof_vpush *q_head, *q_tail;
	size_t q_files;
	pthread_cond_t q_cv;
	pthread_t pusher;
	int pusher_on, closing;
	/* the pusher's folder (prefetch.c, "nodes first"): a name in the
	 * view's root only its walkers find, listing the files a walker is
	 * about to store. Two walk it: the pusher
	 * ([0]) and a lister that pushes its own reply's files ([1]). */
	char hid_name[48];      /* ".coffer-" and 32 hex digits */
	struct cof_vwalk {
		pid_t tid;      /* whose requests it answers (0: none now) */
		struct pushc *const *mat; /* what it lists to them now */
		size_t nmat;
		int fd;         /* the folder, kept open (-1: not yet) */
		char *buf;      /* the walker's memory for a batch's bytes */
		size_t cap;
	} walk[2];
	int lister_waits;       /* a listing waits for its stores (cof_vpush_wait) */
	int pusher_idle;        /* the pusher waits for work */
	uint64_t push_ids;      /* the last queued push's id */
	uint64_t cur_id;        /* the one the pusher pushes now, or 0 */
	/* listing.c */
	size_t list_size;       /* the size the last READDIRPLUS asked */
	int npreps;             /* folders prepared, not yet opened */
	fuse_ino_t preps[4];    /* which, oldest first (npreps of them) */
	fuse_ino_t prep_want;   /* the folder the pusher prepares next, or 0 */
	int warm_want;          /* the pusher warms the view first (cof_vll_warm), */
	struct fuse_context warm_cx; /* as whom */
	struct fuse_context prep_cx; /* as whom (the attributes' owner) */
	double entry_t, attr_t, neg_t;
	const struct fuse_operations *ops;
	cof_vfs *v;
	struct fuse_session *se;
};

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
	cof_lahead r[COF_LPREP_MAX];
	int n, next;            /* built; the next to send */
	uint64_t changes;       /* ll->changes when they were built */
	fuse_ino_t last_dir;    /* the last folder entry (cof_ldir's) */
} cof_lprep;

/* A folder open for listing: ops_tree.c's handle and the replies built
 * before they are asked; mu keeps its requests and the building one at a
 * time. */
typedef struct cof_ldir {
	uint64_t fh;
	fuse_ino_t ino;
	pthread_mutex_t mu;
	cof_lahead ahead[2];    /* the next replies ([1]: where files are pushed) */
	cof_lprep *prep;        /* what was prepared, not all sent yet */
	fuse_ino_t last_dir;    /* the last folder entry listed so far */
	fuse_ino_t prep_next;   /* the folder to prepare once it is listed */
	struct fuse_context prep_cx; /* (as whom) */
} cof_ldir;

/* One file to push, and the listing's list of them. */
typedef struct cof_vpush cof_vpush;

typedef struct pushc {
	fuse_ino_t ino;
	char *path;
	int64_t size;
	struct stat st;  /* as listed (the pusher's folder lists it so) */
	char sha[65];   /* its content as listed */
	char *bytes;    /* where its bytes are read to (the pusher's slab) */
	int got;        /* they are all there */
} pushc;

struct cof_vpush {
	pushc *c;
	size_t n, cap;
	uint64_t id;     /* its number in the queue (cof_vpush_wait) */
	int first;       /* queued before the others: a listing waits for it */
	struct cof_vpush *next; /* in ll's queue */
};

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
 * NULL for a removed node or a path too long. */
char *cof_lino_path(cof_vll *ll, const cof_lnode *n, const char *name);
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
/* Frees what was prepared and never opened (unmounted). */
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

/* ---- prefetch.c (push_add under mu; push_run without) */

/* Whether a listing of folder dir pushes its files (their nodes made
 * first, stored before the reply that names them). Without mu. */
int cof_vpush_folder(cof_vll *ll, fuse_ino_t dir);
/* Adds file n (attributes st, content `sha`, in folder p) to a listing's
 * pushes if the budgets allow. */
void cof_vpush_add(cof_vll *ll, cof_vpush *ps, cof_lnode *p, cof_lnode *n,
		   const struct stat *st, const char *sha);
/* Node n goes to the kernel in a reply a process may see: a store of it
 * under way ends first, and none comes after.
 * Under mu (it may wait on ll->pushed). */
void cof_vpush_seen(cof_vll *ll, cof_lnode *n);
/* The pusher's folder's requests: 1 when req was one (and is answered). */
int cof_vpush_lookup(fuse_req_t req, cof_vll *ll, fuse_ino_t parent, const char *name);
int cof_vpush_dir_req(fuse_req_t req, cof_vll *ll, fuse_ino_t ino, int op, size_t size,
		      off_t off, struct fuse_file_info *fi);
enum { COF_VHID_OPEN, COF_VHID_LIST, COF_VHID_RELEASE, COF_VHID_GETATTR };
/* Hands a listing's files (as soon as its reply is built) to the view's
 * pusher thread, which
 * pushes and frees them (`first`: before those queued already): its id, or
 * 0 when dropped. */
uint64_t cof_vpush_run(cof_vll *ll, cof_vpush *ps, int first);
/* Waits until the push of that id (cof_vpush_run's) is done or dropped:
 * pushes it on the calling thread when the pusher has not begun it; at
 * once when another lister of the view waits already. */
void cof_vpush_wait(cof_vll *ll, uint64_t id);
/* Pushes push `id` on the calling thread now, when the pusher has not
 * begun it and no other lister walks (and, `if_busy`, the pusher is busy
 * with another: an idle one takes it at once): 1 when done, else 0 (still
 * queued, or the pusher's). */
int cof_vpush_now(cof_vll *ll, uint64_t id, int if_busy);
/* Has the pusher prepare folder `ino` (cof_vll_prepare) as caller cx. */
void cof_vpush_prepare(cof_vll *ll, fuse_ino_t ino, const struct fuse_context *cx);
/* Has the pusher warm the view (cof_vll_warm) as caller cx, before all else. */
void cof_vpush_warm(cof_vll *ll, const struct fuse_context *cx);
/* Frees a listing's pushes (NULL: nothing). */
void cof_vpush_free(cof_vpush *ps);
/* Ends the pusher (what it had not pushed is dropped); before the session
 * goes. */
void cof_vpush_stop(cof_vll *ll);

#endif
