/*
 * prefetch.c — a listing's small files into the kernel's page cache: which
 * files (budgets per file, folder and view), their bytes, and the stores
 * (fuse_lowlevel_notify_store), made once the kernel has the listed nodes
 * (lowlevel.c, list()). docs/design.md, Views, "Prefetch on listing".
 */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "view/lowlevel.h"
#include "view/ops.h"

#define COF_VPUSH_FILE_MAX (128 * 1024)           /* a file pushed at most */
#define COF_VPUSH_DIR_MAX (16 * 1024 * 1024)      /* a folder's files */
#define COF_VPUSH_VIEW_MAX (128 * 1024 * 1024)    /* a view's, for its life */

/* One file to push, and a listing's list of them (its cof_vpush). */
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
	uint64_t id;     /* its number in the queue (vpush_wait) */
	int first;       /* queued before the others: a listing waits for it */
	struct cof_vpush *next; /* in ll's queue */
};

/* What prefetch keeps of a view's session (ll->pf): none of it is the
 * core's (lowlevel.h, cof_vhooks). */
struct cof_vpf {
	pthread_cond_t pushed;  /* a push ended */
	int64_t view_pushed;    /* bytes pushed in this view (its budget) */
	/* the queue: listings' files waiting for the pusher thread, in the
	 * order they were listed */
	struct cof_vpush *q_head, *q_tail;
	size_t q_files;
	pthread_cond_t q_cv;
	pthread_t pusher;
	int pusher_on, closing;
	/* the pusher's folder ("nodes first"): a name in the view's root only
	 * its walkers find, listing the files a walker is about to store. Two
	 * walk it: the pusher ([0]) and a lister that pushes its own reply's
	 * files ([1]). */
	char hid_name[48];      /* ".coffer-" and 32 hex digits */
	struct cof_vwalk {
		pid_t tid;      /* whose requests it answers (0: none now) */
		struct pushc *const *mat; /* what it lists to them now */
		size_t nmat;
		int fd;         /* the folder, kept open (-1: not yet) */
		char *buf;      /* the walker's memory for a batch's bytes */
		size_t cap;
	} walk[2];
	int lister_waits;       /* a listing waits for its stores (vpush_wait) */
	int pusher_idle;        /* the pusher waits for work */
	uint64_t push_ids;      /* the last queued push's id */
	uint64_t cur_id;        /* the one the pusher pushes now, or 0 */
	fuse_ino_t prep_want;   /* the folder the pusher prepares next, or 0 */
	struct fuse_context prep_cx; /* as whom (the attributes' owner) */
	int warm_want;          /* the pusher warms the view first (cof_vll_warm), */
	struct fuse_context warm_cx; /* as whom */
	pthread_mutex_t renew_mu; /* renewing and renewer: held across the
				 * join, so that the view's stop and the next
				 * call (renew_wait) never both join it */
	pthread_t renewer;      /* vpush_renew's thread, while renewing */
	int renewing;
	/* A walk that removes what it lists (`rm -rf`, `find -delete`, `git
	 * clean`) reads none of the bytes stored for it: counted here (under
	 * mu) so that pushing stops for the view once it is seen (see
	 * vpush_remove). Reset for each call (vpush_renew). */
	int64_t files_pushed;   /* files added to pushes */
	int64_t pushed_gone;    /* of them, removed through the mount */
	int no_push;            /* pushing stopped (atomic: read without mu) */
};

/* What prefetch keeps of one node (n->pf, NULL: nothing yet). */
struct cof_vpnode {
	int64_t pushed;         /* bytes it put into the cache: of this file, or
				 * (a folder) of its files */
	int pushing;            /* its bytes are being stored now (pushes of it) */
	int stale;              /* written while pushing: drop the cache after */
	int asked;              /* read by request: a push of it is late */
	int seen;               /* in a reply a process could see (a lookup, a
				 * listing sent): its bytes are never stored after */
	int hid;                /* the pusher's folder */
};

/* Most nodes are only ever seen (looked up, never pushed): they share this
 * one, never written (pn_own copies it first). */
static struct cof_vpnode seen_only = {.seen = 1};
static const struct cof_vpnode pn_none;

/* Node n's state to read. */
static const struct cof_vpnode *pn(const cof_lnode *n)
{
	return n->pf ? n->pf : &pn_none;
}

/* Node n's state to write (its own, made now), or NULL out of memory. */
static struct cof_vpnode *pn_own(cof_lnode *n)
{
	if (n->pf && n->pf != &seen_only)
		return n->pf;
	struct cof_vpnode *x = malloc(sizeof *x);
	if (!x)
		return NULL;
	*x = *pn(n);
	n->pf = x;
	return x;
}

/* A view whose files' bytes never change under its readers but through
 * its own writes (no `follow`), that answers no open (an open would drop
 * the cache unless kept, and `coffer mount` read-write lands on close), and
 * reads in process: through `--server` each push would be an HTTP request
 * for bytes nobody asked for yet, so that way reads on demand only.
 * COFFER_VIEW_NO_PREFETCH=1 turns it off (to measure without it). */
static int vpush_on(const cof_vfs *v)
{
	static int off = -1;

	if (off < 0) {
		const char *e = getenv("COFFER_VIEW_NO_PREFETCH");
		off = e && *e && strcmp(e, "0");
	}
	return !off && !v->o.src && cof_vop_no_open(v);
}

/* Whether a listing of folder `dir` pushes its files: any folder of a
 * root (the view's top above several roots holds only their folders).
 * A file is stored only before any process can know it: its node is made
 * in the kernel first, by a listing of the pusher's own folder (see "nodes
 * first" below), and no reply a process sees names it until its store is
 * done or given up (cof_vpush_seen). In a root the view writes that is
 * what keeps writes: a process may map a file shared and writable and
 * change its pages with no request to us (mmap asks nothing, and the view
 * answers no open), so a store that came after the file's first READ would
 * put the volume's bytes over what it wrote, and a READ cannot wait for a
 * store (the kernel holds its pages locked until we answer, and the store
 * waits for them). In a read-only one (no writable mappings) it is what
 * keeps reads off the wire: stored after the reply, a file the reader
 * reached before its store cost a READ round trip (bench/results.md,
 * Views: a cold `grep -r` 1.84x the tmpfs so, 1.67x stored first). */
static int vpush_folder(cof_vll *ll, fuse_ino_t dir)
{
	cof_vfs *v = ll->v;
	char *path;
	const char *rel;
	int r, on = 0;

	if (!vpush_on(v) || __atomic_load_n(&ll->pf->no_push, __ATOMIC_RELAXED) ||
	    !(path = cof_vll_path(ll, dir, NULL)))
		return 0;
	if (!cof_vop_split(v, path, &r, &rel))
		on = r >= 0;
	free(path);
	return on;
}

/* Which of pushes c[0..n) still show the volume's file as listed: the
 * layer has nothing there (a layer's file is read by request); one hold of
 * v->mu for them all. (Not excluded either: the listing that named them
 * left out what is, and a view's exclusions never change. Matched again
 * here they cost about half a microsecond a file.) */
static void still_volumes(cof_vfs *v, pushc *c, size_t n, unsigned char *ok)
{
	const char *rel[n ? n : 1];
	int root[n ? n : 1];

	for (size_t i = 0; i < n; i++)
		ok[i] = !cof_vop_split(v, c[i].path, &root[i], &rel[i]) && root[i] >= 0 &&
			*rel[i];
	pthread_mutex_lock(&v->mu);
	for (size_t i = 0; i < n; i++)
		if (ok[i] && cof_vnode_find(v, root[i], rel[i]))
			ok[i] = 0;
	pthread_mutex_unlock(&v->mu);
}

/* ---------------------------------------------------------- prefetch
 *
 * A folder's small files go into the kernel's page cache as it is listed
 * (fuse_lowlevel_notify_store), so the reads of a `grep -r` that follows
 * are served with no round trip to us. Nothing stale is stored: bytes
 * read while a change was under way, or before one that began meanwhile,
 * are not stored; a change other than a write of the node being stored
 * waits for the store; a write cannot wait (the kernel holds the pages it
 * writes while it waits for our reply, and the store waits for them), so
 * the node's cache is dropped after the store instead.
 */

/* Array a (*cap elements of `elem` bytes, n of them used) with room for
 * one more: a itself, or a copy twice as large (`first` elements at
 * first); NULL out of memory, a left as it was. */
static void *grow(void *a, size_t *cap, size_t n, size_t elem, size_t first)
{
	size_t c = *cap ? *cap * 2 : first;
	void *na;

	if (n < *cap)
		return a;
	if ((na = realloc(a, c * elem)))
		*cap = c;
	return na;
}

/* Adds file n (`size` bytes of content `sha`, in folder p) to the
 * listing's pushes if the budgets allow: its bytes are then counted as
 * pushed, so a folder listed again pushes it no more. Under mu. */
static void vpush_add(cof_vll *ll, cof_vpush *ps, cof_lnode *p, cof_lnode *n,
		   const struct stat *st, const char *sha)
{
	int64_t size = st->st_size;
	pushc *c;

	if (pn(n)->pushed || size <= 0 || size > COF_VPUSH_FILE_MAX ||
	    pn(p)->pushed + size > COF_VPUSH_DIR_MAX ||
	    ll->pf->view_pushed + size > COF_VPUSH_VIEW_MAX || !pn_own(n) || !pn_own(p))
		return;
	if (!(c = grow(ps->c, &ps->cap, ps->n, sizeof *c, 32)))
		return;
	ps->c = c;
	c = &ps->c[ps->n];
	if (!(c->path = cof_lino_path(ll, n, NULL)))
		return;
	c->ino = n->ino;
	c->size = size;
	c->st = *st; /* (its st_ino the file's own, as listed) */
	if (!c->st.st_ino)
		c->st.st_ino = n->ino;
	memcpy(c->sha, sha, sizeof c->sha);
	c->bytes = NULL;
	c->got = 0;
	ps->n++;
	ll->pf->files_pushed++;
	n->pf->pushed = size;
	p->pf->pushed += size;
	ll->pf->view_pushed += size;
}

/* The listed files' bytes are read in batches of this many: the small ones
 * (kept inline in the metadata) in one read of them all, so a pushed file
 * costs no query of its own. */
#define PUSH_BATCH 64

/* inline_many's fn: push i's bytes, when they are its listed size. */
static int take_inline(void *ctx, size_t i, const unsigned char *data, size_t len)
{
	pushc *c = ((pushc **)ctx)[i];

	if ((int64_t)len == c->size) {
		memcpy(c->bytes, data, len);
		c->got = 1;
	}
	return 0;
}

/* Push c's bytes from its content (one kept in the blob store): exactly
 * c->size of them, else none. */
static void read_content(cof_vfs *v, pushc *c)
{
	const char *rel;
	cof_vbytes b;
	int64_t off = 0;
	ssize_t k = 1;
	int r;

	if (cof_vop_split(v, c->path, &r, &rel) || cof_vbytes_open(v, r, rel, c->sha, &b))
		return;
	while (off < c->size &&
	       (k = cof_vbytes_read(&b, c->bytes + off, (size_t)(c->size - off), off)) > 0)
		off += k;
	cof_vbytes_close(&b);
	c->got = off == c->size;
}

#define SLOT_ALIGN 4096
#define SLOT(size) (((size) + SLOT_ALIGN - 1) & ~(size_t)(SLOT_ALIGN - 1))

/* Reads the bytes of pushes c[0..n) that still show the volume's file as
 * listed (see still_volumes); the others get none. Into walker w's memory,
 * kept from batch to batch (a malloc and free of each file's made the
 * allocator hand pages back and fault them in again, a third of the
 * pusher's time). */
static void read_batch(cof_vll *ll, pushc *c, size_t n, struct cof_vwalk *w)
{
	cof_vfs *v = ll->v;
	const char *shas[PUSH_BATCH];
	pushc *of[PUSH_BATCH];
	unsigned char ok[PUSH_BATCH];
	size_t k = 0, need = 0;

	/* each file's bytes from a page boundary: the store pins the pages it
	 * copies from, one for a page's worth rather than two */
	for (size_t i = 0; i < n; i++)
		need += SLOT((size_t)c[i].size);
	if (need > w->cap) {
		char *p = NULL;
		if (posix_memalign((void **)&p, SLOT_ALIGN, need))
			return;
		free(w->buf);
		w->buf = p;
		w->cap = need;
	}
	need = 0;
	for (size_t i = 0; i < n; i++) {
		c[i].bytes = w->buf + need;
		need += SLOT((size_t)c[i].size);
	}
	still_volumes(v, c, n, ok);
	/* a file its reader asked for by request was read before its push
	 * came: a pusher behind the reader skips what it has passed, and so
	 * gets ahead of it again instead of storing what is read already */
	pthread_mutex_lock(&ll->mu);
	for (size_t i = 0; i < n; i++) {
		cof_lnode *nd = ok[i] ? cof_lino_find(ll, c[i].ino) : NULL;
		ok[i] = nd && !pn(nd)->asked;
	}
	pthread_mutex_unlock(&ll->mu);
	for (size_t i = 0; i < n; i++)
		if (ok[i] && c[i].size <= COF_INLINE_MAX) {
			shas[k] = c[i].sha;
			of[k++] = &c[i];
		}
	if (k && VSRC(v)->inline_many)
		VSRC(v)->inline_many(v, shas, k, take_inline, of);
	for (size_t i = 0; i < n; i++)
		if (ok[i] && !c[i].got && (c[i].size > COF_INLINE_MAX || !VSRC(v)->inline_many))
			read_content(v, &c[i]);
}

/* Stores the bytes of pushes c[0..n) that have them (see above), ll->mu
 * taken once before and once after them all (a lock taken per file by this
 * thread of low priority was often held by it while it waited for the CPU,
 * and a listing waited behind it): 0, or -1 when a change began since the
 * batch was read (`c0`: ll->changes then), so nothing more is stored. */
static int push_batch(cof_vll *ll, pushc *c, size_t n, uint64_t c0, const struct cof_vwalk *w)
{
	cof_lnode *nd[PUSH_BATCH];
	unsigned char stale[PUSH_BATCH];

	pthread_mutex_lock(&ll->mu);
	if (ll->changes != c0 || ll->inflight) {
		pthread_mutex_unlock(&ll->mu);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		if ((nd[i] = c[i].got ? cof_lino_find(ll, c[i].ino) : NULL) &&
		    (pn(nd[i])->seen || !pn_own(nd[i])))
			nd[i] = NULL; /* a process may have it: see vpush_folder */
		else if (nd[i])
			nd[i]->pf->pushing++;
	pthread_mutex_unlock(&ll->mu);
	for (size_t i = 0; i < n; i++)
		if (nd[i]) {
			struct fuse_bufvec bv = FUSE_BUFVEC_INIT(0);
			bv.buf[0].mem = c[i].bytes;
			bv.buf[0].size = (size_t)c[i].size;
			/* ENOENT: the kernel forgot the node meanwhile; nothing to do.
			 * NO_SPLICE: from memory a splice would copy the bytes into a
			 * pipe first (see op_read_buf) */
			fuse_lowlevel_notify_store(ll->se, c[i].ino, 0, &bv, FUSE_BUF_NO_SPLICE);
		}
	pthread_mutex_lock(&ll->mu);
	for (size_t i = 0; i < n; i++)
		if (nd[i]) {
			nd[i]->pf->pushing--;
			stale[i] = (unsigned char)nd[i]->pf->stale;
			nd[i]->pf->stale = 0;
			cof_lino_put(ll, nd[i]); /* forgotten while pushed */
		}
	pthread_cond_broadcast(&ll->pf->pushed);
	pthread_mutex_unlock(&ll->mu);
	if (ll->stats) {
		size_t k = 0;
		for (size_t i = 0; i < n; i++)
			k += nd[i] != NULL;
		cof_vll_stat(ll, COF_VST_STORED, k, 0);
		cof_vll_stat(ll, COF_VST_NOT_STORED, n - k, 0);
		if (w == &ll->pf->walk[1])
			cof_vll_stat(ll, COF_VST_STORED_LISTER, k, 0);
	}
	for (size_t i = 0; i < n; i++)
		if (nd[i] && stale[i])
			fuse_lowlevel_notify_inval_inode(ll->se, c[i].ino, 0, 0);
	return 0;
}

static void vpush_free(cof_vpush *ps)
{
	if (!ps)
		return;
	for (size_t i = 0; i < ps->n; i++)
		free(ps->c[i].path);
	free(ps->c);
	free(ps);
}

/* ------------------------------------------------------- nodes first
 *
 * A file's bytes are stored before any process can know the file (see
 * vpush_folder). The store needs the
 * kernel's node, and the kernel makes nodes only from replies to requests,
 * so the pusher asks for them itself: it lists a folder of its own through
 * the mount (v->dir/<hid_name>, a random name in the view's root that
 * only its walkers' own requests find), whose entries are the batch's
 * files under their node ids, with their listed attributes. The kernel
 * then has the nodes (and keeps them, by those entries), the stores go in,
 * and a later reply naming a file gives the kernel the same node id: the
 * same node, with its pages. A file in a reply a process saw before its
 * store (cof_vpush_seen) is not stored; one whose store is under way is
 * named only once the store is done (a store waits for no request of
 * ours, so the reply's wait is bounded). listing.c hands a reply's files
 * over as soon as it is built and sends it once they are stored; when the
 * pusher has not begun them by then, the lister's thread makes the nodes
 * and stores itself (vpush_wait), the pusher's second walker. */

/* on_seen: a store of n under way ends first, and none comes after. */
static void vpush_seen(cof_vll *ll, cof_lnode *n)
{
	if (!n->pf)
		n->pf = &seen_only;
	else if (n->pf != &seen_only)
		n->pf->seen = 1;
	while (pn(n)->pushing)
		pthread_cond_wait(&ll->pf->pushed, &ll->mu);
}

/* The walker of the pusher's folder whose request req is, or NULL (a
 * request of anyone else). Under mu. */
static struct cof_vwalk *walk_of(cof_vll *ll, fuse_req_t req)
{
	pid_t pid = fuse_req_ctx(req)->pid;

	for (int i = 0; i < 2; i++)
		if (ll->pf->walk[i].tid && ll->pf->walk[i].tid == pid)
			return &ll->pf->walk[i];
	return NULL;
}

static void hid_attr(struct stat *st, fuse_ino_t ino)
{
	memset(st, 0, sizeof *st);
	st->st_ino = ino;
	st->st_mode = S_IFDIR | 0500;
	st->st_nlink = 2;
	st->st_uid = getuid();
	st->st_gid = getgid();
}

/* claim_lookup: the pusher's folder, found by its walkers only. */
static int vpush_lookup(fuse_req_t req, cof_vll *ll, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;
	cof_lnode *n;

	if (parent != FUSE_ROOT_ID || strcmp(name, ll->pf->hid_name))
		return 0;
	memset(&e, 0, sizeof e);
	pthread_mutex_lock(&ll->mu);
	if (!walk_of(ll, req)) {
		pthread_mutex_unlock(&ll->mu);
		fuse_reply_err(req, ENOENT);
		return 1;
	}
	/* (both walkers' lookups name this node while one holds it) */
	if ((n = cof_lino_ref(ll, &ll->root, name)) && pn_own(n))
		n->pf->hid = 1;
	else if (n) {
		cof_lino_forget(ll, n->ino, 1);
		n = NULL;
	}
	pthread_mutex_unlock(&ll->mu);
	if (!n) {
		fuse_reply_err(req, ENOMEM);
		return 1;
	}
	hid_attr(&e.attr, n->ino);
	e.ino = n->ino;
	e.generation = 1; /* timeouts 0: each walk asks again, and finds it only so */
	if (fuse_reply_entry(req, &e) == -ENOENT) {
		pthread_mutex_lock(&ll->mu);
		cof_lino_forget(ll, e.ino, 1);
		pthread_mutex_unlock(&ll->mu);
	}
	return 1;
}

/* An entry's name in the pusher's folder: its node id in hex (no printf:
 * one for each file pushed). */
static void hex_name(char name[24], fuse_ino_t ino)
{
	char tmp[20];
	size_t k = 0, i = 0;

	do
		tmp[k++] = "0123456789abcdef"[ino & 15];
	while ((ino >>= 4));
	while (k)
		name[i++] = tmp[--k];
	name[i] = '\0';
}

/* The pusher's folder's listing from `off` to walker w: each entry a
 * reference to the node the kernel now holds. Entry i of the walker's mat
 * is at offset i + 2: a walk starts at offset 1 (hid_open), never at 0,
 * where the kernel would keep the listing and give it to the next walk
 * (with no OPENDIR every folder is opened FOPEN_CACHE_DIR, and the kernel
 * fills its copy of a listing only from offset 0 on). Under mu, which it
 * releases. */
static void hid_list(fuse_req_t req, cof_vll *ll, struct cof_vwalk *w, size_t size, off_t off)
{
	char *buf = malloc(size ? size : 1);
	fuse_ino_t *refs = malloc((w->nmat ? w->nmat : 1) * sizeof *refs);
	size_t len = 0, nrefs = 0;

	if (!buf || !refs) {
		pthread_mutex_unlock(&ll->mu);
		free(buf);
		free(refs);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	for (size_t i = off < 1 ? 0 : (size_t)off - 1; i < w->nmat; i++) {
		const pushc *c = w->mat[i];
		cof_lnode *n = cof_lino_find(ll, c->ino);
		struct fuse_entry_param e;
		char name[24];
		size_t k;

		if (!n || pn(n)->seen)
			continue;
		hex_name(name, c->ino);
		if ((k = fuse_add_direntry_plus(req, NULL, 0, name, NULL, 0)) > size - len)
			break;
		memset(&e, 0, sizeof e);
		e.attr = c->st;
		e.ino = c->ino;
		e.generation = 1;
		e.entry_timeout = ll->entry_t;
		e.attr_timeout = ll->attr_t;
		len += fuse_add_direntry_plus(req, buf + len, size - len, name, &e, (off_t)i + 2);
		n->nlookup++;
		refs[nrefs++] = c->ino;
	}
	pthread_mutex_unlock(&ll->mu);
	if (fuse_reply_buf(req, buf, len) == -ENOENT) { /* interrupted: the kernel took none */
		pthread_mutex_lock(&ll->mu);
		for (size_t i = 0; i < nrefs; i++)
			cof_lino_forget(ll, refs[i], 1);
		pthread_mutex_unlock(&ll->mu);
	}
	free(buf);
	free(refs);
}

/* claim_dir: the pusher's folder's own requests. */
static int vpush_dir_req(fuse_req_t req, cof_vll *ll, fuse_ino_t ino, int op, size_t size,
			 off_t off, struct fuse_file_info *fi)
{
	struct cof_vwalk *w;
	struct stat st;
	cof_lnode *n;

	pthread_mutex_lock(&ll->mu);
	if (!(n = cof_lino_find(ll, ino)) || !pn(n)->hid) {
		pthread_mutex_unlock(&ll->mu);
		return 0;
	}
	w = walk_of(ll, req);
	if (op == COF_VHID_LIST && w) {
		hid_list(req, ll, w, size, off);
		return 1;
	}
	pthread_mutex_unlock(&ll->mu);
	if (op == COF_VHID_RELEASE) {
		fuse_reply_err(req, 0);
		return 1;
	}
	if (!w) {
		fuse_reply_err(req, ENOENT);
		return 1;
	}
	switch (op) {
	case COF_VHID_OPEN:
		fi->fh = 0;
		fuse_reply_open(req, fi);
		break;
	default:
		hid_attr(&st, ino);
		fuse_reply_attr(req, &st, 0);
	}
	return 1;
}

/* The pusher's folder, opened once (its fd in *fd, kept until the pusher
 * ends) and at offset 1 (see hid_list): each walk of it after is one
 * READDIRPLUS round trip, not a lookup, an open and a release as well. 0,
 * or -1. */
static int hid_open(cof_vll *ll, int *fd)
{
	char path[COF_PATH_MAX + 64];

	if (*fd < 0 && (!ll->v->dir || snprintf(path, sizeof path, "%s/%s", ll->v->dir,
						 ll->pf->hid_name) >= (int)sizeof path ||
			(*fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0))
		return -1;
	return lseek(*fd, 1, SEEK_SET) == 1 ? 0 : -1;
}

/* Makes the kernel's nodes of pushes c[0..n) that no process may know yet
 * (see above), by one walk of the pusher's folder by walker w (the calling
 * thread): 0, or -1 when none is left to store. */
static int make_nodes(cof_vll *ll, struct cof_vwalk *w, pushc *c, size_t n)
{
	pushc **mat = malloc((n ? n : 1) * sizeof *mat);
	char buf[32768];
	size_t k = 0;

	if (!mat)
		return -1;
	pthread_mutex_lock(&ll->mu);
	for (size_t i = 0; i < n; i++) {
		cof_lnode *nd = cof_lino_find(ll, c[i].ino);
		if (nd && !pn(nd)->seen && !pn(nd)->asked)
			mat[k++] = &c[i];
	}
	w->mat = mat;
	w->nmat = k;
	pthread_mutex_unlock(&ll->mu);
	if (k && hid_open(ll, &w->fd) == 0) {
		uint64_t t0 = cof_vll_now(ll);
		while (syscall(SYS_getdents64, w->fd, buf, sizeof buf) > 0)
			;
		cof_vll_stat(ll, COF_VST_HID_WALK, 1, cof_vll_now(ll) - t0);
	} else
		k = 0;
	pthread_mutex_lock(&ll->mu);
	w->mat = NULL;
	w->nmat = 0;
	pthread_mutex_unlock(&ll->mu);
	free(mat);
	return k ? 0 : -1;
}

/* Pushes a listing's files batch by batch as walker w (the calling
 * thread), then frees them. */
static void push_all(cof_vll *ll, cof_vpush *ps, struct cof_vwalk *w)
{
	uint64_t c0;
	int stop;

	pthread_mutex_lock(&ll->mu);
	c0 = ll->changes;
	stop = ll->inflight != 0 || ll->pf->closing || ll->pf->no_push;
	pthread_mutex_unlock(&ll->mu);
	uint64_t t0 = cof_vll_now(ll);
	/* the nodes first, all of them at once (one walk a reply) */
	if (!stop && make_nodes(ll, w, ps->c, ps->n) != 0)
		stop = 1;
	for (size_t b = 0; b < ps->n && !stop; b += PUSH_BATCH) {
		size_t n = ps->n - b < PUSH_BATCH ? ps->n - b : PUSH_BATCH;
		read_batch(ll, ps->c + b, n, w);
		stop = push_batch(ll, ps->c + b, n, c0, w) != 0 ||
		       __atomic_load_n(&ll->pf->no_push, __ATOMIC_RELAXED);
	}
	vpush_free(ps);
	cof_vll_stat(ll, COF_VST_STORED, 0, cof_vll_now(ll) - t0);
}

/* ---------------------------------------------------------- the pusher
 *
 * One thread per view, started at its first push (or preparation), pushes
 * the listings' files in the order they were listed (the order `grep -r`
 * reads them), at a low priority: the view's requests come first, above
 * all a listing's next reply, which its lister waits for; the pushes fill
 * the time between. A file read before its push comes by request as
 * always. The same thread warms a view as it mounts (cof_vll_warm) and
 * prepares the folder a walk opens next (listing.c), before any push but
 * those of the replies a listing will ask next (queued first): at a low
 * priority too, so the walk's own requests never wait behind it.
 */

/* Files queued at most; a listing past it is not pushed (its files are
 * read by request). */
#define QUEUE_MAX 16384
/* The pusher's nice value (requests run at the process's own). */
#define PUSHER_NICE 10

static void *pusher(void *arg)
{
	cof_vll *ll = arg;
	cof_vpush *ps;

	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), PUSHER_NICE);
	pthread_mutex_lock(&ll->mu);
	ll->pf->walk[0].tid = (pid_t)syscall(SYS_gettid);
	for (;;) {
		while (!ll->pf->q_head && !ll->pf->prep_want && !ll->pf->warm_want && !ll->pf->closing) {
			ll->pf->pusher_idle = 1;
			pthread_cond_wait(&ll->pf->q_cv, &ll->mu);
		}
		ll->pf->pusher_idle = 0;
		if (ll->pf->warm_want && !ll->pf->closing) {
			struct fuse_context cx = ll->pf->warm_cx;
			ll->pf->warm_want = 0;
			pthread_mutex_unlock(&ll->mu);
			cof_vll_enter(ll, &cx);
			cof_vll_warm(ll);
			pthread_mutex_lock(&ll->mu);
			continue;
		}
		/* a folder to prepare comes first, but for the replies of one
		 * listed now (queued first): the walk waits for those already */
		if (ll->pf->prep_want && !ll->pf->closing && !(ll->pf->q_head && ll->pf->q_head->first)) {
			fuse_ino_t ino = ll->pf->prep_want;
			struct fuse_context cx = ll->pf->prep_cx;
			ll->pf->prep_want = 0;
			pthread_mutex_unlock(&ll->mu);
			cof_vll_enter(ll, &cx);
			cof_vll_prepare(ll, ino);
			pthread_mutex_lock(&ll->mu);
			continue;
		}
		if (!(ps = ll->pf->q_head))
			break;
		if (!(ll->pf->q_head = ps->next))
			ll->pf->q_tail = NULL;
		ll->pf->q_files -= ps->n;
		ll->pf->cur_id = ps->id;
		pthread_mutex_unlock(&ll->mu);
		push_all(ll, ps, &ll->pf->walk[0]);
		pthread_mutex_lock(&ll->mu);
		ll->pf->cur_id = 0;
		pthread_cond_broadcast(&ll->pf->pushed); /* vpush_wait's */
	}
	ll->pf->walk[0].tid = 0;
	pthread_mutex_unlock(&ll->mu);
	return NULL;
}

/* Whether the pusher runs (started now if not yet). Under mu. */
static int pusher_up(cof_vll *ll)
{
	if (!ll->pf->pusher_on && !ll->pf->closing && pthread_create(&ll->pf->pusher, NULL, pusher, ll) == 0)
		ll->pf->pusher_on = 1;
	return ll->pf->pusher_on && !ll->pf->closing;
}

static void vpush_warm(cof_vll *ll, const struct fuse_context *cx)
{
	pthread_mutex_lock(&ll->mu);
	if (pusher_up(ll)) {
		ll->pf->warm_want = 1;
		ll->pf->warm_cx = *cx;
		pthread_cond_signal(&ll->pf->q_cv);
	}
	pthread_mutex_unlock(&ll->mu);
}

static void vpush_prepare(cof_vll *ll, fuse_ino_t ino, const struct fuse_context *cx)
{
	if (!ino)
		return;
	pthread_mutex_lock(&ll->mu);
	if (pusher_up(ll)) {
		ll->pf->prep_want = ino; /* the newest: the one the walk reaches next */
		ll->pf->prep_cx = *cx;
		pthread_cond_signal(&ll->pf->q_cv);
	}
	pthread_mutex_unlock(&ll->mu);
}

static uint64_t vpush_run(cof_vll *ll, cof_vpush *ps, int first)
{
	uint64_t id;

	pthread_mutex_lock(&ll->mu);
	if (!pusher_up(ll) || ll->pf->q_files + ps->n > QUEUE_MAX) {
		pthread_mutex_unlock(&ll->mu);
		vpush_free(ps);
		return 0;
	}
	id = ps->id = ++ll->pf->push_ids;
	ps->first = first;
	ps->next = first ? ll->pf->q_head : NULL;
	if (first)
		ll->pf->q_head = ps;
	else if (ll->pf->q_tail)
		ll->pf->q_tail->next = ps;
	else
		ll->pf->q_head = ps;
	if (!ps->next)
		ll->pf->q_tail = ps;
	ll->pf->q_files += ps->n;
	pthread_cond_signal(&ll->pf->q_cv);
	pthread_mutex_unlock(&ll->mu);
	return id;
}

/* Takes push `id` off the queue and pushes it on the calling thread, as the
 * pusher's second walker: 1 when done so; 0 when the pusher has it (or
 * done it already), or another lister is the second walker now. One
 * lister of a view walks at a time: the walkers' requests of the pusher's
 * folder need free workers (libfuse runs 4 in a view). Under mu (released
 * while it pushes). */
static int push_here(cof_vll *ll, uint64_t id)
{
	cof_vpush **pp, *ps;

	if (ll->pf->lister_waits)
		return 0;
	for (pp = &ll->pf->q_head; (ps = *pp) && ps->id != id; pp = &ps->next)
		;
	if (!ps || ll->pf->closing)
		return 0;
	if (!(*pp = ps->next))
		ll->pf->q_tail = pp == &ll->pf->q_head ? NULL
			: (cof_vpush *)((char *)pp - offsetof(cof_vpush, next));
	ll->pf->q_files -= ps->n;
	ll->pf->lister_waits = 1;
	ll->pf->walk[1].tid = (pid_t)syscall(SYS_gettid);
	pthread_mutex_unlock(&ll->mu);
	push_all(ll, ps, &ll->pf->walk[1]);
	pthread_mutex_lock(&ll->mu);
	ll->pf->walk[1].tid = 0;
	ll->pf->lister_waits = 0;
	pthread_cond_broadcast(&ll->pf->pushed); /* cof_vpush_stop's */
	return 1;
}

static int vpush_now(cof_vll *ll, uint64_t id, int if_busy)
{
	int done = 0;

	pthread_mutex_lock(&ll->mu);
	if (!if_busy || !ll->pf->pusher_idle)
		done = push_here(ll, id);
	pthread_mutex_unlock(&ll->mu);
	return done;
}

/* A listing's reply waits for its files' stores. The pusher takes pushes
 * in order and is often busy with the folder a walk reaches next (its
 * preparation and stores): the lister's thread, whose request is the one
 * a process waits for, does its own reply's push then, beside the pusher
 * (push_here). While another lister is the second walker, a reply waits
 * for nothing: its files not stored yet are read on demand
 * (cof_vpush_seen). */
static void vpush_wait(cof_vll *ll, uint64_t id)
{
	cof_vpush *ps;

	pthread_mutex_lock(&ll->mu);
	if (ll->pf->no_push || push_here(ll, id) || ll->pf->lister_waits) {
		pthread_mutex_unlock(&ll->mu);
		return;
	}
	ll->pf->lister_waits = 1; /* (no other lister walks while this one waits) */
	for (;;) { /* the pusher's now (or, closing, soon dropped by it) */
		for (ps = ll->pf->q_head; ps && ps->id != id; ps = ps->next)
			;
		if ((!ps && ll->pf->cur_id != id) || ll->pf->no_push)
			break;
		pthread_cond_wait(&ll->pf->pushed, &ll->mu);
	}
	ll->pf->lister_waits = 0;
	pthread_cond_broadcast(&ll->pf->pushed); /* cof_vpush_stop's */
	pthread_mutex_unlock(&ll->mu);
}

static void vpush_renew_wait(cof_vll *ll);

/* stop: ends the pusher (what it had not pushed is dropped). */
static void vpush_stop(cof_vll *ll)
{
	cof_vpush *ps;
	int on;

	vpush_renew_wait(ll); /* (its drops need the session) */

	pthread_mutex_lock(&ll->mu);
	ll->pf->closing = 1;
	pthread_cond_broadcast(&ll->pf->q_cv);
	on = ll->pf->pusher_on;
	while (ll->pf->lister_waits) /* its walk needs the loop: it still serves */
		pthread_cond_wait(&ll->pf->pushed, &ll->mu);
	pthread_mutex_unlock(&ll->mu);
	if (on)
		pthread_join(ll->pf->pusher, NULL);
	ll->pf->pusher_on = 0; /* (a second stop: the unmount's, after the detach's) */
	while ((ps = ll->pf->q_head)) { /* closing: what was left */
		ll->pf->q_head = ps->next;
		vpush_free(ps);
	}
	ll->pf->q_tail = NULL;
	for (int i = 0; i < 2; i++) {
		if (ll->pf->walk[i].fd >= 0)
			close(ll->pf->walk[i].fd);
		ll->pf->walk[i].fd = -1;
		free(ll->pf->walk[i].buf);
		ll->pf->walk[i].buf = NULL;
		ll->pf->walk[i].cap = 0;
	}
}

/* ------------------------------------------------------------ the hooks */

static int vpush_start(cof_vll *ll)
{
	struct cof_vpf *pf = calloc(1, sizeof *pf);
	unsigned char r[16];

	if (!pf)
		return -1;
	/* the pusher's own folder's name ("nodes first") */
	if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
		free(pf);
		return -1;
	}
	strcpy(pf->hid_name, ".coffer-");
	for (size_t i = 0; i < sizeof r; i++)
		snprintf(pf->hid_name + 8 + 2 * i, 3, "%02x", r[i]);
	pthread_cond_init(&pf->pushed, NULL);
	pthread_cond_init(&pf->q_cv, NULL);
	pthread_mutex_init(&pf->renew_mu, NULL);
	pf->walk[0].fd = pf->walk[1].fd = -1;
	ll->pf = pf;
	return 0;
}

/* renew: files only ever seen (looked up, listed: never read, nor stored,
 * nor asked) are never stored after, since a process may know them. Left
 * so, a call's `git diff` (an lstat of every file) would leave the next
 * call's `grep -r` to read every file by request (bench/results.md, Agent
 * workloads). Between calls no process of the view is left: the name of
 * each folder holding such files is dropped from the kernel's cache (and
 * with it every name beneath: one request a folder, not one a file, which
 * cost 11-40 us each; a file of the view's top by its own name), and they
 * are no longer seen. The kernel keeps the nodes (an inode the kernel
 * keeps nothing of by name stays cached, with its pages), but no process
 * can reach one before a reply names it again, so a listing stores them
 * first, as files never looked at. What it costs: the next call looks those
 * folders' names up again (a second `git diff` in the next call). */
struct renew_name {
	fuse_ino_t parent;
	char *name;
	int done;       /* dropped (or the kernel had dropped it already) */
};

static void renew_now(cof_vll *ll)
{
	struct renew_name *g = NULL;
	struct { fuse_ino_t ino; size_t by; } *f = NULL; /* files, by name g[by] */
	size_t n = 0, gcap = 0, nf = 0, fcap = 0;
	void *ng, *nfp;
	uint64_t t0;

	pthread_mutex_lock(&ll->mu);
	for (size_t i = 0; i < ll->nbuckets; i++)
		for (cof_lnode *x = ll->by_id[i]; x; x = x->id_next) {
			if (x->pf != &seen_only || !x->file || x->nchild || !x->parent || !x->name)
				continue;
			cof_lnode *by = x->parent == &ll->root ? x : x->parent;
			size_t k;
			if (!by->parent || !by->name)
				continue;
			/* (a folder's files are mostly next in the table: its last name) */
			for (k = n; k > 0 && (g[k - 1].parent != by->parent->ino ||
					      strcmp(g[k - 1].name, by->name)); k--)
				if (n - k > 8) {
					k = 0;
					break;
				}
			if (k == 0 || g[k - 1].parent != by->parent->ino) {
				if (!(ng = grow(g, &gcap, n, sizeof *g, 64)))
					goto full;
				g = ng;
				if (!(g[n].name = strdup(by->name)))
					goto full;
				g[n].parent = by->parent->ino;
				g[n].done = 0;
				k = ++n;
			}
			if (!(nfp = grow(f, &fcap, nf, sizeof *f, 256)))
				goto full;
			f = nfp;
			f[nf].ino = x->ino;
			f[nf++].by = k - 1;
		}
full:
	pthread_mutex_unlock(&ll->mu);
	t0 = cof_vll_now(ll);
	for (size_t i = 0; i < n; i++) {
		/* ENOENT: the kernel had dropped it itself (or its folder's) */
		int rc = fuse_lowlevel_notify_inval_entry(ll->se, g[i].parent, g[i].name,
							  strlen(g[i].name));
		g[i].done = rc == 0 || rc == -ENOENT;
	}
	cof_vll_stat(ll, COF_VST_RENEW, n, cof_vll_now(ll) - t0);
	pthread_mutex_lock(&ll->mu);
	for (size_t i = 0; i < nf; i++) {
		cof_lnode *x = g[f[i].by].done ? cof_lino_find(ll, f[i].ino) : NULL;
		if (x && x->pf == &seen_only)
			x->pf = NULL; /* unseen: no process can reach it now */
	}
	pthread_mutex_unlock(&ll->mu);
	for (size_t i = 0; i < n; i++)
		free(g[i].name);
	free(g);
	free(f);
}

static void *renewer(void *arg)
{
	renew_now(arg);
	return NULL;
}

/* The renewer joined, if one runs. Under renew_mu. */
static void renew_join(cof_vll *ll)
{
	if (ll->pf->renewing) {
		pthread_join(ll->pf->renewer, NULL);
		ll->pf->renewing = 0;
	}
}

/* renew_wait: the renewing done (before the next call's processes start,
 * and before the view ends: the two may come at once, from the call's
 * thread and the view's stop, and only one may join). */
static void vpush_renew_wait(cof_vll *ll)
{
	if (!ll->pf)
		return;
	pthread_mutex_lock(&ll->pf->renew_mu);
	renew_join(ll);
	pthread_mutex_unlock(&ll->pf->renew_mu);
}

/* The drops take 5 us a name the kernel forgets (25-55 ms after a `git
 * diff` of 5,000 files, at a load of 10): on a thread of their own, so the
 * call's answer does not wait for them; the next call that takes the view
 * does (renew_wait), mostly done by then. */
static void vpush_renew(cof_vll *ll)
{
	if (!vpush_on(ll->v))
		return;
	/* the next call's walk is judged anew (vpush_remove) */
	pthread_mutex_lock(&ll->mu);
	ll->pf->files_pushed = ll->pf->pushed_gone = 0;
	__atomic_store_n(&ll->pf->no_push, 0, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&ll->mu);
	pthread_mutex_lock(&ll->pf->renew_mu);
	renew_join(ll);
	if (pthread_create(&ll->pf->renewer, NULL, renewer, ll) == 0)
		ll->pf->renewing = 1;
	else
		renew_now(ll);
	pthread_mutex_unlock(&ll->pf->renew_mu);
}

/* on_init: a view mounted to be walked is warmed (its requests wait for
 * INIT's reply: the pusher's thread does it). */
static void vpush_init(cof_vll *ll)
{
	if (ll->v->o.warm && vpush_on(ll->v)) {
		struct fuse_context cx = *cof_vop_ctx();
		cx.uid = ll->v->o.warm_uid;
		cx.gid = ll->v->o.warm_gid;
		cx.pid = 0;
		vpush_warm(ll, &cx);
	}
}

/* on_read: the reader came first: a push of it is skipped. */
static void vpush_read(cof_vll *ll, cof_lnode *n)
{
	struct cof_vpnode *x;

	if (!pn(n)->asked && vpush_on(ll->v) && (x = pn_own(n)))
		x->asked = 1;
}

/* on_change: a change other than a write waits for a store of node ino under
 * way (it holds no page of it); a write cannot (the kernel holds its pages
 * while it waits for us), so n's cache is dropped after the store. */
static void vpush_change(cof_vll *ll, fuse_ino_t ino, int write)
{
	cof_lnode *n;

	/* (found again after each wait: a node may be freed meanwhile) */
	while (!write && ino && (n = cof_lino_find(ll, ino)) && pn(n)->pushing)
		pthread_cond_wait(&ll->pf->pushed, &ll->mu);
	if (write && ino && (n = cof_lino_find(ll, ino)) && pn(n)->pushing)
		n->pf->stale = 1;
}

/* Removals of pushed files past which a view may stop pushing. */
#define PUSH_GONE_MIN 64

/* on_remove: node n is removed through the mount (unlink, rmdir). A walk
 * that removes the files it lists (`rm -rf`, `find -delete`, `git clean
 * -fdx`) reads none of the bytes stored for it, and each of its listings
 * waited for those stores (bench/results.md, "rm -rf": 9,325 files stored,
 * 1.2 s of a 2.6 s call, 820 ms of listings waiting): once more than
 * PUSH_GONE_MIN pushed files were removed and they are over half of those
 * pushed, the view pushes no more in this call and no listing waits for a
 * store. Not pushing is always safe: a file not stored is read on demand;
 * a store under way ends before the reply naming its file (on_seen). */
static void vpush_remove(cof_vll *ll, cof_lnode *n)
{
	struct cof_vpf *pf = ll->pf;

	if (!n->file || !pn(n)->pushed || pf->no_push)
		return;
	if (++pf->pushed_gone > PUSH_GONE_MIN && pf->pushed_gone * 2 > pf->files_pushed) {
		__atomic_store_n(&pf->no_push, 1, __ATOMIC_RELAXED);
		cof_vll_stat(ll, COF_VST_PUSH_OFF, 1, 0);
		pthread_cond_broadcast(&pf->pushed); /* a listing waiting: no more */
	}
}

/* holds: a node being stored stays until its store ends (push_batch puts it). */
static int vpush_holds(const cof_vll *ll, const cof_lnode *n)
{
	return pn(n)->pushing != 0;
}

static void vpush_forget(cof_vll *ll, cof_lnode *n)
{
	if (n->pf != &seen_only)
		free(n->pf);
	n->pf = NULL;
}

static void vpush_end(cof_vll *ll)
{
	if (!ll->pf)
		return;
	pthread_cond_destroy(&ll->pf->pushed);
	pthread_cond_destroy(&ll->pf->q_cv);
	pthread_mutex_destroy(&ll->pf->renew_mu);
	free(ll->pf);
	ll->pf = NULL;
}

static cof_vpush *vpush_new(cof_vll *ll)
{
	return calloc(1, sizeof(cof_vpush));
}

static void vpush_drop(cof_vll *ll, cof_vpush *ps)
{
	vpush_free(ps);
}

const cof_vhooks cof_vprefetch_hooks = {
	.start = vpush_start,
	.on_init = vpush_init,
	.claim_lookup = vpush_lookup,
	.claim_dir = vpush_dir_req,
	.on_seen = vpush_seen,
	.on_read = vpush_read,
	.on_change = vpush_change,
	.on_remove = vpush_remove,
	.holds = vpush_holds,
	.on_forget = vpush_forget,
	.stop = vpush_stop,
	.end = vpush_end,
	.renew = vpush_renew,
	.renew_wait = vpush_renew_wait,
	.pushes = vpush_folder,
	.push_new = vpush_new,
	.push_add = vpush_add,
	.push_run = vpush_run,
	.push_wait = vpush_wait,
	.push_now = vpush_now,
	.prepare = vpush_prepare,
	.push_free = vpush_drop,
};
