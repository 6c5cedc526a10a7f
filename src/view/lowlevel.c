/*
 * lowlevel.c — a view on libfuse's low-level API. The kernel names files by
 * node id; the view's operations (ops.c, ops_tree.c) take paths. This file
 * is the seam between them: an inode table (node id <-> parent + name,
 * lookup counts, forgets; unlink, rmdir and rename keep it in step) turns
 * each request into the path the path-based operations already take, so
 * their logic (layer, exclusions, modes, commit) stays where it is. What
 * the high-level API could not give: the node ids, so a folder's small
 * files can be put into the page cache as it is listed (prefetch.c).
 *
 * Node ids are never reused within a mount (a 64-bit counter), so every
 * node has generation 1: the kernel can never confuse a forgotten node with
 * a new one.
 */
#define FUSE_USE_VERSION 31
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <fuse_lowlevel.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include "view/view_int.h"
#include "view/ops.h"

/* The request a thread serves: what the path-based operations see as
 * cof_vop_ctx() (the view, and the caller's uid, gid and pid). */
static __thread struct fuse_context cur;

struct fuse_context *cof_vop_ctx(void)
{
	return &cur;
}

/* One node the kernel knows (or a folder above one it knows). */
typedef struct lnode {
	struct lnode *id_next, *name_next; /* hash chains */
	fuse_ino_t ino;
	struct lnode *parent;   /* NULL once removed (or the root) */
	char *name;             /* NULL once removed */
	uint64_t nlookup;       /* the kernel's references */
	uint64_t nchild;        /* nodes whose parent this is */
	int64_t pushed;         /* bytes prefetch put into the cache: of this
				 * file, or (a folder) of its files */
	int pushing;            /* prefetch is storing its bytes now */
	int stale;              /* written while pushing: drop the cache after */
} lnode;

struct cof_vll {
	pthread_mutex_t mu;
	pthread_cond_t pushed;  /* a push ended */
	lnode **by_id, **by_name;
	size_t nbuckets, count;
	fuse_ino_t next_ino;
	lnode root;
	uint64_t changes;       /* changes begun (prefetch: none since it read) */
	int inflight;           /* changes under way */
	int64_t view_pushed;    /* bytes pushed in this view (its budget) */
	double entry_t, attr_t, neg_t;
	const struct fuse_operations *ops;
	cof_vfs *v;
	struct fuse_session *se;
};

/* ---------------------------------------------------------- the table */

static size_t name_hash(fuse_ino_t parent, const char *name, size_t nb)
{
	uint64_t h = 1469598103934665603ull ^ parent;

	for (; *name; name++)
		h = (h ^ (unsigned char)*name) * 1099511628211ull;
	return (size_t)(h % nb);
}

static void hash_in_name(cof_vll *ll, lnode *n)
{
	size_t i = name_hash(n->parent->ino, n->name, ll->nbuckets);

	n->name_next = ll->by_name[i];
	ll->by_name[i] = n;
}

static void hash_in(cof_vll *ll, lnode *n)
{
	size_t i = n->ino % ll->nbuckets;

	n->id_next = ll->by_id[i];
	ll->by_id[i] = n;
	if (n->name)
		hash_in_name(ll, n);
}

static void name_out(cof_vll *ll, lnode *n)
{
	lnode **p = &ll->by_name[name_hash(n->parent->ino, n->name, ll->nbuckets)];

	while (*p && *p != n)
		p = &(*p)->name_next;
	if (*p)
		*p = n->name_next;
}

static void id_out(cof_vll *ll, lnode *n)
{
	lnode **p = &ll->by_id[n->ino % ll->nbuckets];

	while (*p && *p != n)
		p = &(*p)->id_next;
	if (*p)
		*p = n->id_next;
}

/* Doubles the buckets when the nodes outgrow them (a 100,000-file folder
 * listed with attributes makes a node per file). Under mu. */
static void table_grow(cof_vll *ll)
{
	size_t nb = ll->nbuckets * 2;
	lnode **id = calloc(nb, sizeof *id), **nm = calloc(nb, sizeof *nm);
	lnode *all = NULL;

	if (!id || !nm) {
		free(id);
		free(nm);
		return; /* longer chains, still correct */
	}
	for (size_t i = 0; i < ll->nbuckets; i++)
		for (lnode *n = ll->by_id[i], *next; n; n = next) {
			next = n->id_next;
			n->id_next = all;
			all = n;
		}
	free(ll->by_id);
	free(ll->by_name);
	ll->by_id = id;
	ll->by_name = nm;
	ll->nbuckets = nb;
	for (lnode *n = all, *next; n; n = next) {
		next = n->id_next;
		hash_in(ll, n);
	}
}

static lnode *node_of(cof_vll *ll, fuse_ino_t ino)
{
	if (ino == FUSE_ROOT_ID)
		return &ll->root;
	for (lnode *n = ll->by_id[ino % ll->nbuckets]; n; n = n->id_next)
		if (n->ino == ino)
			return n;
	return NULL;
}

static lnode *child_of(cof_vll *ll, lnode *parent, const char *name)
{
	for (lnode *n = ll->by_name[name_hash(parent->ino, name, ll->nbuckets)]; n;
	     n = n->name_next)
		if (n->parent == parent && !strcmp(n->name, name))
			return n;
	return NULL;
}

/* Frees n if nothing holds it any more, then its parent likewise. */
static void node_put(cof_vll *ll, lnode *n)
{
	while (n && n != &ll->root && n->nlookup == 0 && n->nchild == 0 && !n->pushing) {
		lnode *p = n->parent;
		if (n->name)
			name_out(ll, n);
		id_out(ll, n);
		free(n->name);
		free(n);
		ll->count--;
		if (!p)
			break;
		p->nchild--;
		n = p;
	}
}

/* Takes the node off its parent: what unlink, rmdir and a rename over it
 * leave (the kernel may still hold it, by id, until it forgets it). */
static void node_detach(cof_vll *ll, lnode *n)
{
	lnode *p = n->parent;

	if (!n->name)
		return;
	name_out(ll, n);
	free(n->name);
	n->name = NULL;
	n->parent = NULL;
	p->nchild--;
	node_put(ll, p);
	node_put(ll, n);
}

/* The node of `name` in folder `parent`, made if new, with one more lookup
 * (the kernel's reference a reply of it gives). NULL when out of memory. */
static lnode *node_ref(cof_vll *ll, lnode *parent, const char *name)
{
	lnode *n = child_of(ll, parent, name);

	if (!n) {
		if (!(n = calloc(1, sizeof *n)) || !(n->name = strdup(name))) {
			free(n);
			return NULL;
		}
		n->ino = ++ll->next_ino;
		n->parent = parent;
		parent->nchild++;
		if (ll->count >= ll->nbuckets)
			table_grow(ll);
		hash_in(ll, n);
		ll->count++;
	}
	n->nlookup++;
	return n;
}

/* The FUSE path of node n ("/" for the root) in a new string, or NULL (a
 * removed node; ENAMETOOLONG past a volume path). Under mu. */
static char *path_of(cof_vll *ll, const lnode *n, const char *name)
{
	char buf[2 * COF_PATH_MAX + 2];
	size_t at = sizeof buf - 1;

	buf[at] = '\0';
	if (name) {
		size_t k = strlen(name);
		if (k + 1 > at)
			return NULL;
		at -= k;
		memcpy(buf + at, name, k);
		buf[--at] = '/';
	}
	for (; n != &ll->root; n = n->parent) {
		if (!n->name)
			return NULL;
		size_t k = strlen(n->name);
		if (k + 1 > at)
			return NULL;
		at -= k;
		memcpy(buf + at, n->name, k);
		buf[--at] = '/';
	}
	if (at == sizeof buf - 1)
		buf[--at] = '/';
	return strdup(buf + at);
}

/* ---------------------------------------------------------- prefetch
 *
 * A folder's small files go into the kernel's page cache as it is listed
 * (fuse_lowlevel_notify_store), so the reads of a `grep -r` that follows
 * are served with no round trip to us; which files, and their bytes, are
 * prefetch.c's. The table's part is that nothing stale is stored: bytes
 * read while a change was under way, or before one that began meanwhile,
 * are not stored; a change other than a write of the node being stored
 * waits for the store; a write cannot wait (the kernel holds the pages it
 * writes while it waits for our reply, and the store waits for them), so
 * the node's cache is dropped after the store instead.
 */

/* A folder open for listing: ops_tree.c's handle, and the files of the
 * last reply, pushed once the kernel has made their nodes (see list()). */
typedef struct ldir {
	uint64_t fh;
	struct push *pending;
} ldir;

/* One file to push, and the listing's list of them. */
typedef struct pushc {
	fuse_ino_t ino;
	char *path;
	int64_t size;
} pushc;

struct push {
	pushc *c;
	size_t n, cap;
};

/* Adds file n (`size` bytes, in folder p) to the listing's pushes if the
 * budgets allow: its bytes are then counted as pushed, so a folder listed
 * again pushes it no more. Under mu. */
static void push_add(cof_vll *ll, struct push *ps, lnode *p, lnode *n, int64_t size)
{
	pushc *c;

	if (size <= 0 || size > COF_VPUSH_FILE_MAX || p->pushed + size > COF_VPUSH_DIR_MAX ||
	    ll->view_pushed + size > COF_VPUSH_VIEW_MAX)
		return;
	if (ps->n == ps->cap) {
		size_t cap = ps->cap ? ps->cap * 2 : 32;
		pushc *nc = realloc(ps->c, cap * sizeof *nc);
		if (!nc)
			return;
		ps->c = nc;
		ps->cap = cap;
	}
	c = &ps->c[ps->n];
	if (!(c->path = path_of(ll, n, NULL)))
		return;
	c->ino = n->ino;
	c->size = size;
	ps->n++;
	n->pushed = size;
	p->pushed += size;
	ll->view_pushed += size;
}

/* Stores one file's bytes (see above); nothing when anything changed. */
static void push_one(cof_vll *ll, const pushc *c, char *buf)
{
	struct fuse_bufvec bv = FUSE_BUFVEC_INIT(0);
	uint64_t c0;
	lnode *n;
	ssize_t k;
	int stale;

	pthread_mutex_lock(&ll->mu);
	c0 = ll->changes;
	k = ll->inflight;
	pthread_mutex_unlock(&ll->mu);
	if (k || (k = cof_vpush_read(ll->v, c->path, buf, c->size)) != c->size)
		return;
	pthread_mutex_lock(&ll->mu);
	n = node_of(ll, c->ino);
	if (!n || ll->changes != c0 || ll->inflight) {
		pthread_mutex_unlock(&ll->mu);
		return;
	}
	n->pushing = 1;
	pthread_mutex_unlock(&ll->mu);
	bv.buf[0].mem = buf;
	bv.buf[0].size = (size_t)k;
	/* ENOENT: the kernel forgot the node meanwhile; nothing to do */
	fuse_lowlevel_notify_store(ll->se, c->ino, 0, &bv, 0);
	pthread_mutex_lock(&ll->mu);
	n->pushing = 0;
	stale = n->stale;
	n->stale = 0;
	pthread_cond_broadcast(&ll->pushed);
	node_put(ll, n); /* forgotten while pushed */
	pthread_mutex_unlock(&ll->mu);
	if (stale)
		fuse_lowlevel_notify_inval_inode(ll->se, c->ino, 0, 0);
}

/* Pushes a listing's files, after its reply was sent. */
static void push_run(cof_vll *ll, struct push *ps)
{
	char *buf = ps->n ? malloc(COF_VPUSH_FILE_MAX) : NULL;

	for (size_t i = 0; i < ps->n; i++) {
		if (buf)
			push_one(ll, &ps->c[i], buf);
		free(ps->c[i].path);
	}
	free(buf);
	free(ps->c);
	free(ps);
}

/* ------------------------------------------------------- the requests */

static cof_vll *begin(fuse_req_t req)
{
	cof_vll *ll = fuse_req_userdata(req);
	const struct fuse_ctx *c = fuse_req_ctx(req);

	cur.private_data = ll->v;
	cur.uid = c->uid;
	cur.gid = c->gid;
	cur.pid = c->pid;
	cur.umask = c->umask;
	return ll;
}

/* The path of node `ino` (and `name` in it, when given): a new string, or
 * NULL: the node is removed, unknown, or the path too long. */
static char *path_get(cof_vll *ll, fuse_ino_t ino, const char *name)
{
	char *p = NULL;
	lnode *n;

	pthread_mutex_lock(&ll->mu);
	if ((n = node_of(ll, ino)) != NULL)
		p = path_of(ll, n, name);
	pthread_mutex_unlock(&ll->mu);
	return p;
}

/* A change to the tree or a file begins: prefetch stores nothing while one
 * is under way or once one began after it read (see prefetch_one). A
 * change other than a write waits for a push of node `ino` under way (it
 * holds no page of it); a write cannot (the kernel holds its pages while
 * it waits for us), so it marks the node to have its cache dropped after.
 */
static void change_begin(cof_vll *ll, fuse_ino_t ino, int write)
{
	lnode *n;

	pthread_mutex_lock(&ll->mu);
	ll->changes++;
	ll->inflight++;
	while (!write && ino && (n = node_of(ll, ino)) && n->pushing)
		pthread_cond_wait(&ll->pushed, &ll->mu);
	if (write && (n = node_of(ll, ino)) && n->pushing)
		n->stale = 1;
	pthread_mutex_unlock(&ll->mu);
}

static void change_end(cof_vll *ll)
{
	pthread_mutex_lock(&ll->mu);
	ll->inflight--;
	pthread_mutex_unlock(&ll->mu);
}

/* Replies with the entry of `name` in folder `parent` (just made, or
 * looked up): its attributes by path, a node for it, or the absence (an
 * entry of id 0 the kernel keeps for the negative timeout). */
static void reply_entry_of(fuse_req_t req, cof_vll *ll, fuse_ino_t parent, const char *name,
			   struct fuse_file_info *fi)
{
	struct fuse_entry_param e;
	char *path = path_get(ll, parent, name);
	int rc;

	memset(&e, 0, sizeof e);
	if (!path) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	rc = ll->ops->getattr(path, &e.attr, NULL);
	free(path);
	if (rc == -ENOENT && !fi && ll->neg_t > 0) {
		e.entry_timeout = ll->neg_t;
		fuse_reply_entry(req, &e);
		return;
	}
	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	pthread_mutex_lock(&ll->mu);
	lnode *p = node_of(ll, parent), *n = p ? node_ref(ll, p, name) : NULL;
	if (n)
		e.ino = e.attr.st_ino = n->ino;
	pthread_mutex_unlock(&ll->mu);
	if (!n) {
		fuse_reply_err(req, p ? ENOMEM : ENOENT);
		return;
	}
	e.generation = 1;
	e.entry_timeout = ll->entry_t;
	e.attr_timeout = ll->attr_t;
	/* a create the caller gave up on (interrupted) leaves no handle */
	if (fi && fuse_reply_create(req, &e, fi) == -ENOENT && ll->ops->release)
		ll->ops->release(NULL, fi);
	else if (!fi)
		fuse_reply_entry(req, &e);
}

static void ll_init(void *data, struct fuse_conn_info *conn)
{
	cof_vll *ll = data;
	struct fuse_config cfg;

	memset(&cfg, 0, sizeof cfg);
	cur.private_data = ll->v;
	if (ll->ops->init)
		ll->ops->init(conn, &cfg);
	ll->entry_t = cfg.entry_timeout;
	ll->attr_t = cfg.attr_timeout;
	ll->neg_t = cfg.negative_timeout;
}

static void ll_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	reply_entry_of(req, begin(req), parent, name, NULL);
}

/* Drops `n` of the kernel's references to node `ino`. */
static void forget_one(cof_vll *ll, fuse_ino_t ino, uint64_t n)
{
	lnode *x = node_of(ll, ino);

	if (!x || x == &ll->root)
		return;
	x->nlookup = x->nlookup > n ? x->nlookup - n : 0;
	node_put(ll, x);
}

static void ll_forget(fuse_req_t req, fuse_ino_t ino, uint64_t n)
{
	cof_vll *ll = fuse_req_userdata(req);

	pthread_mutex_lock(&ll->mu);
	forget_one(ll, ino, n);
	pthread_mutex_unlock(&ll->mu);
	fuse_reply_none(req);
}

static void ll_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *f)
{
	cof_vll *ll = fuse_req_userdata(req);

	pthread_mutex_lock(&ll->mu);
	for (size_t i = 0; i < count; i++)
		forget_one(ll, f[i].ino, f[i].nlookup);
	pthread_mutex_unlock(&ll->mu);
	fuse_reply_none(req);
}

/* Replies with the attributes of node `ino` (by handle when fi has one). */
static void reply_attr_of(fuse_req_t req, cof_vll *ll, fuse_ino_t ino,
			  struct fuse_file_info *fi)
{
	struct stat st;
	char *path = path_get(ll, ino, NULL);
	int rc;

	memset(&st, 0, sizeof st);
	if (!path && !(fi && fi->fh)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	rc = ll->ops->getattr(path, &st, fi);
	free(path);
	st.st_ino = ino;
	if (rc)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_attr(req, &st, ll->attr_t);
}

static void ll_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	reply_attr_of(req, begin(req), ino, fi);
}

/* chmod, chown (none: ENOSYS), truncate and utimens as the high-level API
 * made them of one SETATTR, then the attributes. */
static void ll_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *a, int set,
		       struct fuse_file_info *fi)
{
	cof_vll *ll = begin(req);
	char *path = path_get(ll, ino, NULL);
	int rc = 0;

	if (!path && !(fi && fi->fh)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	change_begin(ll, ino, 0);
	if (set & FUSE_SET_ATTR_MODE)
		rc = ll->ops->chmod ? ll->ops->chmod(path, a->st_mode, fi) : -ENOSYS;
	if (!rc && (set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)))
		rc = -ENOSYS;
	if (!rc && (set & FUSE_SET_ATTR_SIZE))
		rc = ll->ops->truncate(path, a->st_size, fi);
	if (!rc && (set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME))) {
		struct timespec tv[2] = {{0, UTIME_OMIT}, {0, UTIME_OMIT}};
		if (set & FUSE_SET_ATTR_ATIME_NOW)
			tv[0].tv_nsec = UTIME_NOW;
		else if (set & FUSE_SET_ATTR_ATIME)
			tv[0] = a->st_atim;
		if (set & FUSE_SET_ATTR_MTIME_NOW)
			tv[1].tv_nsec = UTIME_NOW;
		else if (set & FUSE_SET_ATTR_MTIME)
			tv[1] = a->st_mtim;
		rc = ll->ops->utimens(path, tv, fi);
	}
	free(path);
	change_end(ll);
	if (rc)
		fuse_reply_err(req, -rc);
	else
		reply_attr_of(req, ll, ino, fi);
}

static void ll_readlink(fuse_req_t req, fuse_ino_t ino)
{
	cof_vll *ll = begin(req);
	char *path = path_get(ll, ino, NULL), buf[1];
	int rc = ll->ops->readlink(path, buf, sizeof buf);

	free(path);
	fuse_reply_err(req, rc ? -rc : EINVAL);
}

/* A change of folder `parent` made by `fn` on the path of `name` in it;
 * then the new entry (mkdir) or nothing. */
static void ll_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	cof_vll *ll = begin(req);
	char *path = path_get(ll, parent, name);
	int rc;

	if (!path) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	change_begin(ll, 0, 0);
	rc = ll->ops->mkdir(path, mode);
	change_end(ll);
	free(path);
	if (rc)
		fuse_reply_err(req, -rc);
	else
		reply_entry_of(req, ll, parent, name, NULL);
}

/* unlink and rmdir: the path's node leaves the table once removed. */
static void remove_name(fuse_req_t req, fuse_ino_t parent, const char *name, int dir)
{
	cof_vll *ll = begin(req);
	char *path = path_get(ll, parent, name);
	lnode *p, *n;
	fuse_ino_t ino = 0;
	int rc;

	if (!path) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	pthread_mutex_lock(&ll->mu);
	if ((p = node_of(ll, parent)) && (n = child_of(ll, p, name)))
		ino = n->ino;
	pthread_mutex_unlock(&ll->mu);
	change_begin(ll, ino, 0);
	rc = dir ? ll->ops->rmdir(path) : ll->ops->unlink(path);
	free(path);
	if (!rc) {
		pthread_mutex_lock(&ll->mu);
		if ((p = node_of(ll, parent)) && (n = child_of(ll, p, name)))
			node_detach(ll, n);
		pthread_mutex_unlock(&ll->mu);
	}
	change_end(ll);
	fuse_reply_err(req, -rc);
}

static void ll_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_name(req, parent, name, 0);
}

static void ll_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_name(req, parent, name, 1);
}

static void ll_symlink(fuse_req_t req, const char *target, fuse_ino_t parent,
		       const char *name)
{
	cof_vll *ll = begin(req);
	char *path = path_get(ll, parent, name);
	int rc = ll->ops->symlink(target, path);

	free(path);
	fuse_reply_err(req, rc ? -rc : EPERM);
}

static void ll_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t parent, const char *name)
{
	cof_vll *ll = begin(req);
	char *from = path_get(ll, ino, NULL), *to = path_get(ll, parent, name);
	int rc = ll->ops->link(from, to);

	free(from);
	free(to);
	fuse_reply_err(req, rc ? -rc : EPERM);
}

/* Moves the table's node of (p, name) to (np, newname), a node there
 * first taken off (RENAME_EXCHANGE: the two swap). Under mu. */
static void table_rename(cof_vll *ll, lnode *p, const char *name, lnode *np,
			 const char *newname, unsigned flags)
{
	lnode *a = child_of(ll, p, name), *b = child_of(ll, np, newname);
	char *an = strdup(newname), *bn = strdup(name);

	if (!an || !bn) { /* cannot follow: forget both names (ids stay valid) */
		free(an);
		free(bn);
		if (a)
			node_detach(ll, a);
		if (b)
			node_detach(ll, b);
		return;
	}
	lnode *ap = a ? a->parent : NULL, *bp = b ? b->parent : NULL;

	if (b && !(flags & RENAME_EXCHANGE)) {
		node_detach(ll, b); /* may free it */
		b = NULL;
		bp = NULL;
	}
	if (a)
		name_out(ll, a);
	if (b)
		name_out(ll, b);
	if (a) {
		free(a->name);
		a->name = an;
		an = NULL;
		a->parent = np;
		np->nchild++;
	}
	if (b) {
		free(b->name);
		b->name = bn;
		bn = NULL;
		b->parent = p;
		p->nchild++;
	}
	if (a)
		hash_in_name(ll, a);
	if (b)
		hash_in_name(ll, b);
	free(an);
	free(bn);
	/* the old parents lose a child each (kept while the kernel holds them) */
	if (ap) {
		ap->nchild--;
		node_put(ll, ap);
	}
	if (bp) {
		bp->nchild--;
		node_put(ll, bp);
	}
}

static void ll_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t np,
		      const char *newname, unsigned int flags)
{
	cof_vll *ll = begin(req);
	char *from = path_get(ll, parent, name), *to = path_get(ll, np, newname);
	fuse_ino_t ino = 0;
	lnode *p, *q, *n;
	int rc = -ENOENT;

	pthread_mutex_lock(&ll->mu);
	if ((p = node_of(ll, parent)) && (n = child_of(ll, p, name)))
		ino = n->ino;
	pthread_mutex_unlock(&ll->mu);
	change_begin(ll, ino, 0);
	if (from && to)
		rc = ll->ops->rename(from, to, flags);
	if (!rc) {
		pthread_mutex_lock(&ll->mu);
		if ((p = node_of(ll, parent)) && (q = node_of(ll, np)))
			table_rename(ll, p, name, q, newname, flags);
		pthread_mutex_unlock(&ll->mu);
	}
	change_end(ll);
	free(from);
	free(to);
	fuse_reply_err(req, -rc);
}

/* create; and mknod of a regular file, which the high-level API made a
 * create and a release of (a view has no other kind of node). */
static void ll_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	cof_vll *ll = begin(req);
	char *path = path_get(ll, parent, name);
	int rc;

	if (!path) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	change_begin(ll, 0, 0);
	rc = ll->ops->create(path, mode, fi);
	change_end(ll);
	free(path);
	if (rc)
		fuse_reply_err(req, -rc);
	else
		reply_entry_of(req, ll, parent, name, fi);
}

static void ll_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		     dev_t rdev)
{
	cof_vll *ll = begin(req);
	struct fuse_file_info fi;
	char *path;
	int rc;

	(void)rdev;
	if (!S_ISREG(mode)) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
	if (!(path = path_get(ll, parent, name))) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	memset(&fi, 0, sizeof fi);
	fi.flags = O_CREAT | O_EXCL | O_WRONLY;
	change_begin(ll, 0, 0);
	rc = ll->ops->create(path, mode, &fi);
	if (!rc && ll->ops->release)
		ll->ops->release(path, &fi);
	change_end(ll);
	free(path);
	if (rc)
		fuse_reply_err(req, -rc);
	else
		reply_entry_of(req, ll, parent, name, NULL);
}

static void ll_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	cof_vll *ll = begin(req);
	char *path = path_get(ll, ino, NULL);
	int rc = path ? ll->ops->open(path, fi) : -ENOENT;

	free(path);
	if (rc)
		fuse_reply_err(req, -rc);
	else if (fuse_reply_open(req, fi) == -ENOENT && ll->ops->release)
		ll->ops->release(NULL, fi); /* the open was interrupted */
}

static void ll_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	cof_vll *ll = begin(req);
	char *path = path_get(ll, ino, NULL), *buf = malloc(size ? size : 1);
	int rc = buf ? ll->ops->read(path, buf, size, off, fi) : -ENOMEM;

	free(path);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_buf(req, buf, (size_t)rc);
	free(buf);
}

static void ll_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	cof_vll *ll = begin(req);
	char *path = path_get(ll, ino, NULL);
	int rc;

	change_begin(ll, ino, 1);
	rc = ll->ops->write(path, buf, size, off, fi);
	change_end(ll);
	free(path);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_write(req, (size_t)rc);
}

static void ll_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	cof_vll *ll = begin(req);
	char *path = path_get(ll, ino, NULL);
	int rc = ll->ops->flush ? ll->ops->flush(path, fi) : -ENOSYS;

	free(path);
	fuse_reply_err(req, -rc);
}

static void ll_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	cof_vll *ll = begin(req);
	char *path = path_get(ll, ino, NULL);

	ll->ops->release(path, fi);
	free(path);
	fuse_reply_err(req, 0);
}

static void ll_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	cof_vll *ll = begin(req);
	char *path = path_get(ll, ino, NULL);
	int rc = ll->ops->fsync(path, datasync, fi);

	free(path);
	fuse_reply_err(req, -rc);
}

static void ll_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	cof_vll *ll = begin(req);
	char *path = path_get(ll, ino, NULL);
	ldir *d = calloc(1, sizeof *d);
	int rc = !d ? -ENOMEM : path ? ll->ops->opendir(path, fi) : -ENOENT;

	free(path);
	if (rc) {
		free(d);
		fuse_reply_err(req, -rc);
		return;
	}
	d->fh = fi->fh;
	fi->fh = (uint64_t)(uintptr_t)d;
	if (fuse_reply_open(req, fi) == -ENOENT) {
		fi->fh = d->fh;
		ll->ops->releasedir(NULL, fi);
		free(d);
	}
}

static void ll_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	cof_vll *ll = begin(req);
	ldir *d = (ldir *)(uintptr_t)fi->fh;

	fi->fh = d->fh;
	ll->ops->releasedir(NULL, fi);
	fuse_reply_err(req, 0);
	if (d->pending) /* the caller stopped listing: what it was given */
		push_run(ll, d->pending);
	free(d);
}

static void ll_statfs(fuse_req_t req, fuse_ino_t ino)
{
	cof_vll *ll = begin(req);
	char *path = path_get(ll, ino, NULL);
	struct statvfs sv;
	int rc = ll->ops->statfs(path ? path : "/", &sv);

	free(path);
	if (rc)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_statfs(req, &sv);
}

/* ---------------------------------------------------------- listings */

/* A listing's reply being filled: the entries, and (readdirplus) the
 * small files prefetch may push once it is sent. */
typedef struct lfill {
	fuse_req_t req;
	cof_vll *ll;
	fuse_ino_t dir;
	char *buf;
	size_t size, len;
	int plus;
	struct push *push;
} lfill;

/* The inode number of an entry listed without attributes (as libfuse's
 * high-level API gives it: the kernel then asks by lookup). */
#define UNKNOWN_INO 0xffffffffu

static int is_dot(const char *name)
{
	return name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2]));
}

/* fuse_fill_dir_t of the listings: 1 when the reply is full (the entry not
 * taken: ops_tree.c gives it first next time). */
static int fill(void *ctx, const char *name, const struct stat *st, off_t off,
		enum fuse_fill_dir_flags flags)
{
	lfill *f = ctx;
	size_t left = f->size - f->len, k;

	if (!f->plus) {
		struct stat s;
		memset(&s, 0, sizeof s);
		s.st_ino = UNKNOWN_INO;
		s.st_mode = st ? st->st_mode : 0;
		if ((k = fuse_add_direntry(f->req, NULL, 0, name, NULL, 0)) > left)
			return 1;
		f->len += fuse_add_direntry(f->req, f->buf + f->len, left, name, &s, off);
		return 0;
	}
	struct fuse_entry_param e;
	memset(&e, 0, sizeof e);
	if ((k = fuse_add_direntry_plus(f->req, NULL, 0, name, NULL, 0)) > left)
		return 1;
	if (st)
		e.attr = *st;
	e.attr.st_ino = UNKNOWN_INO;
	if (st && (flags & FUSE_FILL_DIR_PLUS) && !is_dot(name)) {
		cof_vll *ll = f->ll;
		pthread_mutex_lock(&ll->mu);
		lnode *p = node_of(ll, f->dir), *n = p ? node_ref(ll, p, name) : NULL;
		if (n) {
			e.ino = e.attr.st_ino = n->ino;
			e.generation = 1;
			e.entry_timeout = ll->entry_t;
			e.attr_timeout = ll->attr_t;
			if (f->push && S_ISREG(st->st_mode) && n->pushed == 0)
				push_add(ll, f->push, p, n, st->st_size);
		}
		pthread_mutex_unlock(&ll->mu);
	}
	f->len += fuse_add_direntry_plus(f->req, f->buf + f->len, left, name, &e, off);
	return 0;
}

/* READDIR and READDIRPLUS: ops_tree.c's listing by offset into one reply;
 * after a READDIRPLUS reply is sent, its small files are pushed. */
static void list(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		 struct fuse_file_info *fi, int plus)
{
	cof_vll *ll = begin(req);
	lfill f = {.req = req, .ll = ll, .dir = ino, .size = size, .plus = plus};
	int rc;

	if (!(f.buf = malloc(size))) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	ldir *d = (ldir *)(uintptr_t)fi->fh;
	struct fuse_file_info dfi = *fi;
	struct push *ready = d->pending;

	if (plus && cof_vpush_on(ll->v))
		f.push = calloc(1, sizeof *f.push);
	dfi.fh = d->fh;
	rc = ll->ops->readdir(NULL, &f, fill, off, &dfi, plus ? FUSE_READDIR_PLUS : 0);
	d->pending = f.push;
	if (rc && !f.len)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_buf(req, f.buf, f.len);
	free(f.buf);
	/* the kernel makes the nodes of a reply's entries only after it was
	 * sent (in the lister's getdents): a push of them now would find none
	 * (ENOENT). The next request of the listing comes once they are made:
	 * the previous reply's files are pushed then, after this reply */
	if (ready)
		push_run(ll, ready);
}

static void ll_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	list(req, ino, size, off, fi, 0);
}

static void ll_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	list(req, ino, size, off, fi, 1);
}

static const struct fuse_lowlevel_ops ll_ops = {
	.init = ll_init,
	.lookup = ll_lookup,
	.forget = ll_forget,
	.forget_multi = ll_forget_multi,
	.getattr = ll_getattr,
	.setattr = ll_setattr,
	.readlink = ll_readlink,
	.mknod = ll_mknod,
	.mkdir = ll_mkdir,
	.unlink = ll_unlink,
	.rmdir = ll_rmdir,
	.symlink = ll_symlink,
	.rename = ll_rename,
	.link = ll_link,
	.open = ll_open,
	.read = ll_read,
	.write = ll_write,
	.flush = ll_flush,
	.release = ll_release,
	.fsync = ll_fsync,
	.opendir = ll_opendir,
	.readdir = ll_readdir,
	.releasedir = ll_releasedir,
	.statfs = ll_statfs,
	.create = ll_create,
	.readdirplus = ll_readdirplus,
};

struct fuse_session *cof_vll_new(cof_vfs *v, struct fuse_args *args,
				 const struct fuse_operations *ops)
{
	cof_vll *ll = calloc(1, sizeof *ll);

	if (!ll)
		return NULL;
	ll->nbuckets = 1024;
	ll->by_id = calloc(ll->nbuckets, sizeof *ll->by_id);
	ll->by_name = calloc(ll->nbuckets, sizeof *ll->by_name);
	ll->root.ino = FUSE_ROOT_ID;
	ll->root.nlookup = 1;
	ll->next_ino = FUSE_ROOT_ID;
	ll->ops = ops;
	ll->v = v;
	pthread_mutex_init(&ll->mu, NULL);
	pthread_cond_init(&ll->pushed, NULL);
	if (ll->by_id && ll->by_name)
		ll->se = fuse_session_new(args, &ll_ops, sizeof ll_ops, ll);
	if (!ll->se) {
		cof_vll_free(ll);
		return NULL;
	}
	v->ll = ll;
	return ll->se;
}

void cof_vll_free(cof_vll *ll)
{
	if (!ll)
		return;
	if (ll->se)
		fuse_session_destroy(ll->se);
	for (size_t i = 0; ll->by_id && i < ll->nbuckets; i++)
		for (lnode *n = ll->by_id[i], *next; n; n = next) {
			next = n->id_next;
			free(n->name);
			free(n);
		}
	free(ll->by_id);
	free(ll->by_name);
	pthread_mutex_destroy(&ll->mu);
	pthread_cond_destroy(&ll->pushed);
	free(ll);
}
