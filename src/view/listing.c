/*
 * listing.c — a view's folder listings on the low-level API (lowlevel.c):
 * each READDIR/READDIRPLUS reply filled from ops_tree.c's listing by
 * offset, the node of each entry made (readdirplus), the small files it
 * lists handed to prefetch.c, and replies built before they are asked:
 *  - ahead: a listing's next reply, built as soon as the last one is sent,
 *    while the lister takes that one in;
 *  - prepared: the replies of the folder a walk opens next (the folder
 *    listed after the one it just opened), built while it reads that one.
 *    (Not the first folder inside one listed to its end: a walk that opens
 *    it at once would wait for all of its replies instead of the first.)
 * A reply's files are stored before it is sent (prefetch.c, "nodes first"):
 * those of replies built before as they are built, and a reply waits for
 * its stores before it is sent (early_stored).
 * A reply built before it is asked is sent only to a request of its offset
 * and size, and only while nothing in the view changed since it was built;
 * else it is dropped and the node references it took are given back.
 * Where the kernel sends no OPENDIR a listing has no handle: see "Cursors".
 * docs/design.md, Views, "Listings".
 */
#define FUSE_USE_VERSION 31
#include <errno.h>
#include <fuse.h>
#include <fuse_lowlevel.h>
#include <stdlib.h>
#include <string.h>
#include "view/lowlevel.h"
#include "view/ops.h"

/* Folders prepared and not yet opened, at most, in a view (the oldest is
 * dropped for a new one). */
#define PREP_LIVE_MAX ((int)(sizeof ((cof_vll *)0)->preps / sizeof(fuse_ino_t)))

/* Cursors alive at most in a view (see "Cursors"): the least recently
 * listed is dropped for a new one. */
#define CURSORS_MAX 32
/* A reply's offsets: the cursor's id above the entry's place in its
 * listing (ops_tree.c's offsets, from 1). */
#define CID_SHIFT 32
#define ORD_MASK 0xffffffffull
#define CID_MASK 0x7fffffffu    /* (an offset is never negative) */

/* A listing's reply being filled: the entries, and (readdirplus) the
 * small files prefetch may push once it is sent. */
typedef struct lfill {
	fuse_req_t req;
	cof_vll *ll;
	fuse_ino_t dir;
	char *buf;
	size_t size, len;
	int plus;
	uint32_t cid;           /* the cursor's id its offsets carry, or 0 */
	off_t last;             /* the offset after its last entry (its place) */
	cof_vpush *push;
	cof_lahead *ahead;      /* built before asked: the references it takes */
	fuse_ino_t *last_dir;   /* the listing's last folder entry (next_dir) */
	fuse_ino_t *first_dir;  /* its first (NULL: not asked) */
	const struct fuse_file_info *dfi; /* ops_tree.c's listing */
} lfill;

/* The inode number of an entry listed without attributes (as libfuse's
 * high-level API gives it: the kernel then asks by lookup). */
#define UNKNOWN_INO 0xffffffffu

static int is_dot(const char *name)
{
	return name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2]));
}

/* Entry offset `off` (its place in the listing) as reply f gives it. */
static off_t off_out(const lfill *f, off_t off)
{
	return f->cid ? (off_t)((uint64_t)f->cid << CID_SHIFT | ((uint64_t)off & ORD_MASK)) : off;
}

/* Notes folder node n as listed after the listing's last one. Under mu. */
static void note_dir(cof_vll *ll, lfill *f, cof_lnode *n)
{
	cof_lnode *prev;

	if (f->first_dir && !*f->first_dir)
		*f->first_dir = n->ino;
	if (!f->last_dir)
		return;
	if (*f->last_dir && (prev = cof_lino_find(ll, *f->last_dir)) && prev != n)
		prev->next_dir = n->ino;
	*f->last_dir = n->ino;
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
		s.st_ino = st && st->st_ino ? st->st_ino : UNKNOWN_INO;
		s.st_mode = st ? st->st_mode : 0;
		if ((k = fuse_add_direntry(f->req, NULL, 0, name, NULL, 0)) > left)
			return 1;
		f->len += fuse_add_direntry(f->req, f->buf + f->len, left, name, &s,
					    off_out(f, off));
		f->last = off;
		return 0;
	}
	struct fuse_entry_param e;
	memset(&e, 0, sizeof e);
	if ((k = fuse_add_direntry_plus(f->req, NULL, 0, name, NULL, 0)) > left)
		return 1;
	if (st)
		e.attr = *st;
	if (!e.attr.st_ino)
		e.attr.st_ino = UNKNOWN_INO;
	if (st && (flags & FUSE_FILL_DIR_PLUS) && !is_dot(name)) {
		cof_vll *ll = f->ll;
		pthread_mutex_lock(&ll->mu);
		cof_lnode *p = cof_lino_find(ll, f->dir), *n = p ? cof_lino_ref(ll, p, name) : NULL;
		if (n && f->ahead && f->ahead->nrefs == f->ahead->cap) {
			size_t cap = f->ahead->cap ? f->ahead->cap * 2 : 256;
			fuse_ino_t *r = realloc(f->ahead->refs, cap * sizeof *r);
			if (r) {
				f->ahead->refs = r;
				f->ahead->cap = cap;
			} else {
				cof_lino_forget(ll, n->ino, 1);
				n = NULL; /* listed without attributes */
			}
		}
		if (n) {
			n->file = S_ISREG(st->st_mode);
			if (f->ahead)
				f->ahead->refs[f->ahead->nrefs++] = n->ino;
			else
				COF_VHOOK(ll, on_seen, ll, n); /* sent now */
			e.ino = n->ino;
			if (e.attr.st_ino == UNKNOWN_INO)
				e.attr.st_ino = n->ino;
			e.generation = 1;
			e.entry_timeout = ll->entry_t;
			e.attr_timeout = ll->attr_t;
			const char *sha;
			if (S_ISDIR(st->st_mode))
				note_dir(ll, f, n);
			else if (f->push && S_ISREG(st->st_mode) &&
				 (sha = cof_vop_listed_sha(f->dfi)))
				COF_VHOOK(ll, push_add, ll, f->push, p, n, st, sha);
		}
		pthread_mutex_unlock(&ll->mu);
	}
	/* (libfuse's fuse_add_direntry_plus does not use the request: a
	 * reply built before it is asked has none) */
	f->len += fuse_add_direntry_plus(f->req, f->buf + f->len, left, name, &e,
					 off_out(f, off));
	f->last = off;
	return 0;
}

/* ops_tree.c's listing `fh` of folder `ino` from `off` into f (buf of size
 * bytes, malloc'd here): 0, or a -errno with nothing in it. */
static int build(cof_vll *ll, uint64_t fh, lfill *f, fuse_ino_t ino, size_t size, off_t off,
		 int plus)
{
	struct fuse_file_info dfi;
	int rc;

	memset(&dfi, 0, sizeof dfi);
	f->ll = ll;
	f->dir = ino;
	f->size = size;
	f->plus = plus;
	f->last = off;
	if (!(f->buf = malloc(size)))
		return -ENOMEM;
	/* only a reply built before it is asked pushes its files (stored
	 * before it is sent): one sent now is read on demand (prefetch.c) */
	if (plus && f->ahead && COF_VHOOK_IF(ll, pushes, ll, ino))
		f->push = COF_VHOOK_IF(ll, push_new, ll);
	dfi.fh = fh;
	f->dfi = &dfi;
	rc = ll->ops->readdir(NULL, f, fill, off, &dfi, plus ? FUSE_READDIR_PLUS : 0);
	f->dfi = NULL;
	return rc && !f->len ? rc : 0;
}

/* ------------------------------------------------ replies built before */

/* Forgets reply a, built before it was asked, that will not be sent: the
 * references it took, its pushes. */
static void early_drop(cof_vll *ll, cof_lahead *a)
{
	if (!a->buf)
		return;
	pthread_mutex_lock(&ll->mu);
	for (size_t i = 0; i < a->nrefs; i++)
		cof_lino_forget(ll, a->refs[i], 1);
	pthread_mutex_unlock(&ll->mu);
	COF_VHOOK(ll, push_free, ll, a->push);
	free(a->buf);
	a->buf = NULL;
	a->push = NULL;
	a->nrefs = 0;
}

/* Whether reply a answers a request at `off` of `size` bytes: nothing in
 * the view changed since it was built (a change would make its entries or
 * attributes older than the request). */
static int early_fits(cof_vll *ll, const cof_lahead *a, size_t size, off_t off)
{
	int fits;

	const struct fuse_context *cx = cof_vop_ctx();

	if (!a->buf || a->off != off || a->size != size || a->uid != cx->uid || a->gid != cx->gid)
		return 0;
	pthread_mutex_lock(&ll->mu);
	fits = ll->changes == a->changes && !ll->inflight;
	pthread_mutex_unlock(&ll->mu);
	return fits;
}

/* Builds into a the reply of listing `fh` (cursor id `cid`) of folder `ino`
 * at `off` (size bytes), as of ll->changes `c0`. 0, or -1 when out of
 * memory (a empty). */
static int early_build(cof_vll *ll, cof_lahead *a, uint64_t fh, uint32_t cid, fuse_ino_t ino,
		       size_t size, off_t off, uint64_t c0, fuse_ino_t *last_dir,
		       fuse_ino_t *first_dir)
{
	lfill f = {.ahead = a, .cid = cid, .last_dir = last_dir, .first_dir = first_dir};

	a->nrefs = 0;
	a->rc = build(ll, fh, &f, ino, size, off, 1);
	a->buf = f.buf;
	a->len = f.len;
	a->size = size;
	a->off = off;
	a->last = f.last;
	a->changes = c0;
	a->uid = cof_vop_ctx()->uid;
	a->gid = cof_vop_ctx()->gid;
	a->push = f.push;
	a->pushes = f.push != NULL;
	if (!a->buf) {
		COF_VHOOK(ll, push_free, ll, f.push);
		a->push = NULL;
		early_drop(ll, a);
		return -1;
	}
	return 0;
}

/* Reply a's files go to the pusher as soon as it is built (stored before it
 * is sent, when the pusher is in time). */
static void early_hand(cof_vll *ll, cof_lahead *a, int first)
{
	a->push_id = 0;
	if (a->push) {
		a->push_id = COF_VHOOK_IF(ll, push_run, ll, a->push, first);
		a->push = NULL;
	}
}

/* Waits for the stores of reply a's files (see early_hand) before it is
 * sent (the push_wait hook: when another lister of the view waits already, its
 * files already stored are, the others are read on demand, prefetch's on_seen). */
static void early_stored(cof_vll *ll, cof_lahead *a)
{
	if (a->push_id)
		COF_VHOOK(ll, push_wait, ll, a->push_id);
	a->push_id = 0;
}

/* ll->changes now, or 0 with *busy while a change is under way. */
static uint64_t changes_now(cof_vll *ll, int *busy)
{
	uint64_t c;

	pthread_mutex_lock(&ll->mu);
	c = ll->changes;
	*busy = ll->inflight != 0;
	pthread_mutex_unlock(&ll->mu);
	return c;
}

/* The replies built ahead of listing d, dropped. */
static void aheads_drop(cof_vll *ll, cof_ldir *d)
{
	early_drop(ll, &d->ahead[0]);
	early_drop(ll, &d->ahead[1]);
}

/* After a reply of listing d (its last entry's offset `last`) is sent: the
 * next one built ahead, if not yet. Where files are pushed, the one after
 * it too, handed to the pusher before what it has queued (mostly the
 * folder a walk opens next), and this thread stores the first if the
 * pusher has not begun it, else the second if the pusher is busy: the
 * walk's next request waits for their stores, so two threads store the
 * folder it lists now. */
static void aheads_build(cof_vll *ll, cof_ldir *d, fuse_ino_t ino, size_t size, off_t last)
{
	cof_lahead *a0 = &d->ahead[0], *a1 = &d->ahead[1];
	int busy;
	uint64_t c0 = changes_now(ll, &busy);

	if (busy)
		return;
	if (!a0->buf) {
		if (early_build(ll, a0, d->fh, d->cid, ino, size, last, c0, &d->last_dir, NULL))
			return;
		early_hand(ll, a0, 1);
	}
	if (!a0->pushes)
		return;
	if (!a1->buf && !a0->rc && a0->len &&
	    early_build(ll, a1, d->fh, d->cid, ino, size, a0->last, c0, &d->last_dir,
			NULL) == 0)
		early_hand(ll, a1, 1);
	if (a0->push_id && COF_VHOOK_IF(ll, push_now, ll, a0->push_id, 0))
		a0->push_id = 0;
	else if (a1->push_id && COF_VHOOK_IF(ll, push_now, ll, a1->push_id, 1))
		a1->push_id = 0;
}

/* The replies prepared for a folder not sent: dropped; `release` also ends
 * their ops_tree.c listing (else the folder's handle took it). */
static void prep_free(cof_vll *ll, cof_lprep *p, int release)
{
	for (int i = 0; i < p->n; i++) {
		if (i >= p->next)
			early_drop(ll, &p->r[i]);
		free(p->r[i].refs);
	}
	if (release) {
		struct fuse_file_info fi;
		memset(&fi, 0, sizeof fi);
		fi.fh = p->fh;
		ll->ops->releasedir(NULL, &fi);
	}
	free(p);
}

/* A new cursor's id where listings have no handle (see "Cursors"), else 0. */
static uint32_t cid_new(cof_vll *ll)
{
	uint32_t c;

	if (!ll->no_opendir)
		return 0;
	do
		c = __atomic_add_fetch(&ll->next_cid, 1, __ATOMIC_RELAXED) & CID_MASK;
	while (!c);
	return c;
}

/* Takes `ino` off the view's list of prepared folders. Under mu. */
static void preps_forget(cof_vll *ll, fuse_ino_t ino)
{
	for (int i = 0; i < ll->npreps; i++)
		if (ll->preps[i] == ino) {
			memmove(ll->preps + i, ll->preps + i + 1,
				(size_t)(ll->npreps - i - 1) * sizeof *ll->preps);
			ll->npreps--;
			return;
		}
}

/* The replies prepared for folder `ino`, taken off it and the list (NULL
 * when none; a node it kept alone is freed). Under mu. */
static cof_lprep *prep_out(cof_vll *ll, fuse_ino_t ino)
{
	cof_lnode *n = cof_lino_find(ll, ino);
	cof_lprep *p = n ? n->prep : NULL;

	preps_forget(ll, ino);
	if (n && p) {
		n->prep = NULL;
		cof_lino_put(ll, n);
	}
	return p;
}

/* Prepares folder `ino` (see the top; on the pusher's thread): its listing
 * opened and its replies built, up to COF_LPREP_MAX of them, for requests
 * of the size the view's listings last asked. Not in a view that follows its volume, nor while a
 * change is under way, nor past PREP_LIVE_MAX prepared folders. */
fuse_ino_t cof_vll_prepare(cof_vll *ll, fuse_ino_t ino)
{
	struct fuse_file_info fi;
	cof_lprep *p = NULL;
	cof_lnode *n;
	fuse_ino_t first = 0;
	char *path;
	size_t size;
	uint64_t c0;
	int busy;

	if (!ino || ll->v->o.follow)
		return 0;
	c0 = changes_now(ll, &busy);
	pthread_mutex_lock(&ll->mu);
	n = cof_lino_find(ll, ino);
	size = ll->list_size;
	if (busy || !n || !size || n->prep || n->preparing || n->opened ||
	    !(path = cof_lino_path(ll, n, NULL))) {
		pthread_mutex_unlock(&ll->mu);
		return 0;
	}
	n->preparing = 1; /* keeps n (cof_lino_put) */
	cof_lprep *old = ll->npreps == PREP_LIVE_MAX ? prep_out(ll, ll->preps[0]) : NULL;
	ll->preps[ll->npreps++] = ino;
	pthread_mutex_unlock(&ll->mu);
	if (old)
		prep_free(ll, old, 1);

	memset(&fi, 0, sizeof fi);
	if ((p = calloc(1, sizeof *p)) && ll->ops->opendir(path, &fi) == 0) {
		off_t off = 0;
		p->fh = fi.fh;
		p->cid = cid_new(ll);
		p->changes = c0;
		while (p->n < COF_LPREP_MAX &&
		       early_build(ll, &p->r[p->n], p->fh, p->cid, ino, size, off, c0,
				   &p->last_dir, &first) == 0) {
			cof_lahead *a = &p->r[p->n++];
			early_hand(ll, a, 0);
			if (a->rc || !a->len)
				break; /* the end: its reply (empty) is the last */
			off = a->last;
		}
	} else {
		free(p);
		p = NULL;
	}
	free(path);

	cof_vll_stat(ll, COF_VST_PREPARED, p != NULL, 0);
	pthread_mutex_lock(&ll->mu);
	n = cof_lino_find(ll, ino);
	n->preparing = 0;
	if (p && p->n && !n->opened) {
		n->prep = p;
		p = NULL;
	} else /* opened meanwhile (its listing did not wait), or nothing built */
		preps_forget(ll, ino);
	cof_lino_put(ll, n); /* forgotten meanwhile, with nothing prepared */
	pthread_mutex_unlock(&ll->mu);
	if (p)
		prep_free(ll, p, 1);
	return first;
}

/* The size a view's listings are asked in before any was (glibc's readdir
 * and the kernel's READDIRPLUS of it: 32 KiB); a reply built for another
 * is dropped when asked, its files' stores kept. */
#define WARM_LIST_SIZE 32768

void cof_vll_warm(cof_vll *ll)
{
	cof_vfs *v = ll->v;
	size_t none = 0;

	if (v->o.follow) /* (prefetch asks it only of a view it pushes in) */
		return;
	__atomic_compare_exchange_n(&ll->list_size, &none, (size_t)WARM_LIST_SIZE, 0,
				    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
	for (int r = 0; r < v->o.nroots; r++) {
		cof_lnode *n = NULL;
		fuse_ino_t top = 0;

		pthread_mutex_lock(&ll->mu);
		if (!v->roots[r].cfg.name[0])
			top = FUSE_ROOT_ID; /* a view of one root: the top is the root */
		else if ((n = cof_lino_ref(ll, &ll->root, v->roots[r].cfg.name)))
			top = n->ino; /* (a reference of the view's, for its life) */
		pthread_mutex_unlock(&ll->mu);
		if (top && COF_VHOOK_IF(ll, pushes, ll, top))
			cof_vll_prepare(ll, cof_vll_prepare(ll, top));
	}
}

/* Folder `ino` opened (counted: no preparing of a folder open), and when
 * `take` the replies prepared for it, taken for its opening (its listing
 * then starts from them), or NULL: none, still being built (its listing
 * does not wait for them all), or the view changed since (then dropped). */
static cof_lprep *prep_take(cof_vll *ll, fuse_ino_t ino, int take)
{
	cof_lprep *p = NULL;
	cof_lnode *n;
	int fresh = 0;

	pthread_mutex_lock(&ll->mu);
	if (take && (n = cof_lino_find(ll, ino)) && (p = prep_out(ll, ino)))
		fresh = ll->changes == p->changes && !ll->inflight;
	if ((n = cof_lino_find(ll, ino)))
		n->opened++;
	pthread_mutex_unlock(&ll->mu);
	if (p && !fresh) {
		prep_free(ll, p, 1);
		p = NULL;
	}
	return p;
}

/* ------------------------------------------------------- the requests */

/* A folder's handle ends: what an opening counted (no preparing of a
 * folder open, see prepare). */
static void dir_closed(cof_vll *ll, fuse_ino_t ino)
{
	cof_lnode *n;

	pthread_mutex_lock(&ll->mu);
	if ((n = cof_lino_find(ll, ino)) && n->opened)
		n->opened--;
	pthread_mutex_unlock(&ll->mu);
}

/* A new listing of folder `ino`: what was prepared for it when `begin` (a
 * listing from its start) and there is, else ops_tree.c's listing opened;
 * counted open. *next: the folder to prepare once its first reply is
 * sent, or 0. NULL with *rc (-errno). */
static cof_ldir *dir_open(cof_vll *ll, fuse_ino_t ino, int begin, fuse_ino_t *next, int *rc)
{
	cof_ldir *d = calloc(1, sizeof *d);
	cof_lprep *p = d ? prep_take(ll, ino, begin) : NULL;
	fuse_ino_t nx = 0;

	*next = 0;
	*rc = d ? 0 : -ENOMEM;
	if (p) {
		d->fh = p->fh;
		d->cid = p->cid;
		d->last_dir = p->last_dir;
	} else if (d) {
		struct fuse_file_info fi;
		char *path = cof_vll_path(ll, ino, NULL);
		memset(&fi, 0, sizeof fi);
		*rc = path ? ll->ops->opendir(path, &fi) : -ENOENT;
		free(path);
		d->fh = fi.fh;
		d->cid = cid_new(ll);
	}
	if (*rc) {
		if (d)
			dir_closed(ll, ino);
		free(d);
		return NULL;
	}
	d->prep = p;
	d->ino = ino;
	pthread_mutex_init(&d->mu, NULL);
	/* a walk opens next the folder listed after this one. Where files
	 * are pushed and this one was not prepared, once this one is listed:
	 * till then the pusher stores this one's replies with the lister (see
	 * aheads_build), which the walk waits for now. */
	if (begin && !ll->v->o.follow) {
		pthread_mutex_lock(&ll->mu);
		cof_lnode *n = cof_lino_find(ll, ino);
		nx = n ? n->next_dir : 0;
		pthread_mutex_unlock(&ll->mu);
	}
	if (nx && !p && COF_VHOOK_IF(ll, pushes, ll, ino)) {
		d->prep_next = nx;
		d->prep_cx = *cof_vop_ctx();
		nx = 0;
	}
	*next = nx;
	return d;
}

/* Frees listing d (no request in it): its replies built before (their
 * references given back, unless `final`: the table goes next), its
 * ops_tree.c listing; its opening no longer counted. */
static void dir_free(cof_vll *ll, cof_ldir *d, int final)
{
	struct fuse_file_info fi;

	if (final) {
		d->ahead[0].nrefs = d->ahead[1].nrefs = 0;
		for (int k = 0; d->prep && k < d->prep->n; k++)
			d->prep->r[k].nrefs = 0;
	}
	aheads_drop(ll, d);
	if (d->prep)
		prep_free(ll, d->prep, 0);
	memset(&fi, 0, sizeof fi);
	fi.fh = d->fh;
	ll->ops->releasedir(NULL, &fi);
	pthread_mutex_destroy(&d->mu);
	if (!final)
		dir_closed(ll, d->ino);
	free(d->ahead[0].refs);
	free(d->ahead[1].refs);
	free(d);
}

/* ------------------------------------------------------------ cursors
 *
 * Where the kernel sends no OPENDIR (cof_vll_opendir) it sends no
 * RELEASEDIR either, and a READDIRPLUS names only the folder and an
 * offset: a listing has no handle. Its state (ops_tree.c's listing, the
 * replies built before) is kept on the folder's node as a cursor, and each
 * offset a reply gives carries the cursor's id above the entry's place
 * (CID_SHIFT): the kernel asks next from the offset of the last entry it
 * passed on, so the request that goes on with a listing names its own
 * cursor, whichever process asks, and two listings of one folder never
 * share one (a request whose cursor is in another waits for it, as on
 * a handle). Offset 0 begins a listing (a new cursor, from what was
 * prepared for the folder); an id not found (its cursor ended or was
 * dropped) begins one that seeks to the place, as a seek on a handle did
 * (ops_tree.c lists again from the start). A cursor ends with
 * its listing (an empty reply, or an error); one left before its end (`ls
 * | head`; rm's check that a folder is empty reads one reply) is dropped,
 * the least recently listed first, once CURSORS_MAX are alive. No
 * OPENDIR and RELEASEDIR round trips: two a folder for each open of it (rm
 * -rf opened each folder twice, find and grep once).
 */

/* d out of the view's ring of cursors not in a request. Under mu. */
static void lru_out(cof_vll *ll, cof_ldir *d)
{
	if (!d->lru_next)
		return;
	if (d->lru_next == d)
		ll->lru = NULL;
	else {
		d->lru_prev->lru_next = d->lru_next;
		d->lru_next->lru_prev = d->lru_prev;
		if (ll->lru == d)
			ll->lru = d->lru_next;
	}
	d->lru_next = d->lru_prev = NULL;
}

/* d into the ring, as the most recently listed. Under mu. */
static void lru_in(cof_vll *ll, cof_ldir *d)
{
	if (!ll->lru)
		d->lru_next = d->lru_prev = d;
	else {
		d->lru_next = ll->lru;
		d->lru_prev = ll->lru->lru_prev;
		d->lru_prev->lru_next = d;
		ll->lru->lru_prev = d;
	}
	ll->lru = d;
}

/* Takes cursor d off its node and the ring (freed by the caller, after mu):
 * the node may go with it. Under mu. */
static void cursor_out(cof_vll *ll, cof_ldir *d)
{
	cof_lnode *n = cof_lino_find(ll, d->ino);

	lru_out(ll, d);
	ll->ncursors--;
	if (!n)
		return;
	for (cof_ldir **c = &n->cursors; *c; c = &(*c)->node_next)
		if (*c == d) {
			*c = d->node_next;
			break;
		}
	cof_lino_put(ll, n);
}

/* A request of cursor d is answered (`end`: its listing ended, d->mu
 * held) or gives it up (d->mu not held): d waits for the next one, or goes
 * with the last request in it. */
static void cursor_give(cof_vll *ll, cof_ldir *d, int end, int held)
{
	int gone = 0;

	if (end)
		d->ended = 1;
	if (held)
		pthread_mutex_unlock(&d->mu);
	pthread_mutex_lock(&ll->mu);
	if (end)
		cursor_out(ll, d); /* no request finds it after */
	if (--d->busy == 0) {
		if (d->ended)
			gone = 1;
		else
			lru_in(ll, d);
	}
	pthread_mutex_unlock(&ll->mu);
	if (gone)
		dir_free(ll, d, 0);
}

/* The cursor of a request at `off` of folder `ino`, taken for it (busy,
 * its mu held) with the place asked in *ord: the one the offset names
 * (after a request in it, as on a handle), else a new one (*next: the
 * folder to prepare after the reply, see dir_open). NULL with *rc. */
static cof_ldir *cursor_take(cof_vll *ll, fuse_ino_t ino, off_t off, off_t *ord,
			     fuse_ino_t *next, int *rc)
{
	uint32_t cid = (uint32_t)((uint64_t)off >> CID_SHIFT) & CID_MASK;
	cof_ldir *d = NULL, *drop = NULL;
	cof_lnode *n;

	*ord = (off_t)((uint64_t)off & ORD_MASK);
	*next = 0;
	pthread_mutex_lock(&ll->mu);
	if (cid && (n = cof_lino_find(ll, ino)))
		for (d = n->cursors; d && d->cid != cid; d = d->node_next)
			;
	if (d) {
		d->busy++;
		lru_out(ll, d);
	}
	pthread_mutex_unlock(&ll->mu);
	if (d) {
		pthread_mutex_lock(&d->mu);
		if (!d->ended)
			return d;
		pthread_mutex_unlock(&d->mu); /* it ended meanwhile: a new one */
		cursor_give(ll, d, 0, 0);
		d = NULL;
	}
	if (!d) {
		if (!(d = dir_open(ll, ino, off == 0, next, rc)))
			return NULL;
		d->busy = 1;
		pthread_mutex_lock(&d->mu);
		pthread_mutex_lock(&ll->mu);
		if (!(n = cof_lino_find(ll, ino))) { /* (the kernel holds it: never) */
			pthread_mutex_unlock(&ll->mu);
			pthread_mutex_unlock(&d->mu);
			dir_free(ll, d, 0);
			*rc = -ENOENT;
			return NULL;
		}
		d->node_next = n->cursors;
		n->cursors = d;
		if (++ll->ncursors > CURSORS_MAX && ll->lru) {
			drop = ll->lru->lru_prev;
			cursor_out(ll, drop);
		}
		pthread_mutex_unlock(&ll->mu);
		cof_vll_stat(ll, COF_VST_CURSOR, 1, 0);
		if (drop) {
			cof_vll_stat(ll, COF_VST_CURSOR_DROP, 1, 0);
			dir_free(ll, drop, 0);
		}
	}
	return d;
}

void cof_vll_preps_free(cof_vll *ll)
{
	for (size_t i = 0; i < ll->nbuckets; i++)
		for (cof_lnode *n = ll->by_id[i]; n; n = n->id_next) {
			if (n->prep) {
				cof_lprep *p = n->prep;
				n->prep = NULL;
				for (int k = 0; k < p->n; k++) { /* the table goes next */
					p->r[k].nrefs = 0;
					early_drop(ll, &p->r[k]);
				}
				prep_free(ll, p, 1);
			}
			while (n->cursors) {
				cof_ldir *d = n->cursors;
				n->cursors = d->node_next;
				dir_free(ll, d, 1);
			}
		}
	while (ll->root.cursors) {
		cof_ldir *d = ll->root.cursors;
		ll->root.cursors = d->node_next;
		dir_free(ll, d, 1);
	}
	ll->lru = NULL;
	ll->ncursors = 0;
	ll->npreps = 0;
}

static void dir_end(cof_vll *ll, cof_ldir *d, fuse_req_t req, struct fuse_file_info *fi);

void cof_vll_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	cof_vll *ll = cof_vll_begin(req);
	fuse_ino_t next;
	cof_ldir *d;
	int rc;

	/* the kernel sends no more OPENDIR or RELEASEDIR once one is
	 * answered so: see "Cursors" */
	if (ll->no_opendir) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
	if (COF_VHOOK_IF(ll, claim_dir, req, ll, ino, COF_VHID_OPEN, 0, 0, fi))
		return;
	if (!(d = dir_open(ll, ino, 1, &next, &rc))) {
		fuse_reply_err(req, -rc);
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)d;
	/* the kernel keeps what it was given of a view at a seq, and lists
	 * the folder again from that (its own changes through the view drop
	 * it): a second listing asks nothing */
	fi->cache_readdir = fi->keep_cache = !ll->v->o.follow;
	if (fuse_reply_open(req, fi) == -ENOENT) { /* the open was interrupted */
		dir_end(ll, d, NULL, fi);
		return;
	}
	if (next)
		COF_VHOOK(ll, prepare, ll, next, cof_vop_ctx());
}

/* Ends folder handle d (answering req, when there is one). */
static void dir_end(cof_vll *ll, cof_ldir *d, fuse_req_t req, struct fuse_file_info *fi)
{
	pthread_mutex_lock(&d->mu); /* (a request of it may still be answering) */
	if (req)
		fuse_reply_err(req, 0);
	pthread_mutex_unlock(&d->mu);
	fi->fh = 0;
	dir_free(ll, d, 0);
}

void cof_vll_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	cof_vll *ll = cof_vll_begin(req);

	if (!fi->fh && COF_VHOOK_IF(ll, claim_dir, req, ll, ino, COF_VHID_RELEASE, 0, 0, fi))
		return;
	dir_end(ll, (cof_ldir *)(uintptr_t)fi->fh, req, fi);
}

/* Where files are pushed, a reply asked for and not built before: built into `now` and handed to the pusher (to be sent
 * once its files are stored, early_stored), and `now`; or NULL (built and
 * sent on demand, its files read on demand). */
static cof_lahead *built_now(cof_vll *ll, cof_ldir *d, cof_lahead *now, fuse_ino_t ino,
			     size_t size, off_t off)
{
	uint64_t c0;
	int busy;

	if (ll->v->o.follow || !COF_VHOOK_IF(ll, pushes, ll, ino))
		return NULL;
	c0 = changes_now(ll, &busy);
	if (busy || early_build(ll, now, d->fh, d->cid, ino, size, off, c0, &d->last_dir, NULL))
		return NULL;
	early_hand(ll, now, 0);
	return now;
}

/* READDIR and READDIRPLUS of listing d (its mu held) at place `off`: a
 * reply built before (prepared, or ahead) when it answers the request, else
 * one built now; once a READDIRPLUS reply is sent, the files of the one
 * before it are pushed and the next reply is built ahead. The reply's
 * length, or -errno (sent). */
static long list_dir(fuse_req_t req, cof_vll *ll, cof_ldir *d, fuse_ino_t ino, size_t size,
		     off_t off, int plus)
{
	lfill f = {.req = req, .cid = d->cid, .last_dir = &d->last_dir};
	cof_lahead *early = NULL, now = {0};
	int rc;

	if (plus)
		__atomic_store_n(&ll->list_size, size, __ATOMIC_RELAXED);
	if (plus && d->prep) {
		cof_lprep *p = d->prep;
		if (p->next < p->n && early_fits(ll, &p->r[p->next], size, off))
			early = &p->r[p->next++];
		if (!early) {
			prep_free(ll, p, 0);
			d->prep = NULL;
		}
	}
	if (!early && plus && early_fits(ll, &d->ahead[0], size, off))
		early = &d->ahead[0];
	if (!early && plus && (early = built_now(ll, d, &now, ino, size, off)))
		aheads_drop(ll, d);
	if (early) {
		uint64_t t0 = cof_vll_now(ll);
		int waits = early->push_id != 0;
		cof_vll_stat(ll, early == &now ? COF_VST_BUILT_NOW :
			     early == &d->ahead[0] ? COF_VST_AHEAD_SENT : COF_VST_PREP_SENT, 1, 0);
		/* its references are the kernel's once sent; its files are seen */
		early_stored(ll, early);
		if (waits)
			cof_vll_stat(ll, COF_VST_LIST_WAIT, 1, cof_vll_now(ll) - t0);
		pthread_mutex_lock(&ll->mu);
		for (size_t i = 0; i < early->nrefs; i++) {
			cof_lnode *n = cof_lino_find(ll, early->refs[i]);
			if (n)
				COF_VHOOK(ll, on_seen, ll, n);
		}
		pthread_mutex_unlock(&ll->mu);
		f.buf = early->buf;
		f.len = early->len;
		f.last = early->last;
		rc = early->rc;
		COF_VHOOK(ll, push_free, ll, early->push); /* (none: handed over when built) */
		early->buf = NULL;
		early->push = NULL;
		early->nrefs = 0;
	} else { /* (its files read on demand: no push, see build) */
		aheads_drop(ll, d);
		rc = build(ll, d->fh, &f, ino, size, off, plus);
	}
	free(now.refs);
	if (d->prep && d->prep->next >= d->prep->n) {
		prep_free(ll, d->prep, 0);
		d->prep = NULL;
	}
	if (rc)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_buf(req, f.buf, f.len);
	free(f.buf);
	if (early == &d->ahead[0]) { /* sent: the one after it is next */
		cof_lahead sent = d->ahead[0];
		d->ahead[0] = d->ahead[1];
		d->ahead[1] = sent; /* (empty: its buffers, for the next) */
	}
	if (plus && !rc && f.len && !d->prep && !ll->v->o.follow)
		aheads_build(ll, d, ino, size, f.last);
	if (d->prep_next && (rc || !f.len)) { /* listed to its end */
		COF_VHOOK(ll, prepare, ll, d->prep_next, &d->prep_cx);
		d->prep_next = 0;
	}
	return rc ? rc : (long)f.len;
}

static void list(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		 struct fuse_file_info *fi, int plus)
{
	cof_vll *ll = cof_vll_begin(req);
	cof_ldir *d = (cof_ldir *)(uintptr_t)fi->fh;
	fuse_ino_t next = 0;
	long len;
	int rc;

	if (d) {
		pthread_mutex_lock(&d->mu);
		list_dir(req, ll, d, ino, size, off, plus);
		pthread_mutex_unlock(&d->mu);
		return;
	}
	if (!ll->no_opendir) { /* the pusher's folder, asked by none of its walkers */
		fuse_reply_err(req, EBADF);
		return;
	}
	if (!(d = cursor_take(ll, ino, off, &off, &next, &rc))) {
		fuse_reply_err(req, -rc);
		return;
	}
	/* the folder a walk opens next is prepared as this one's listing
	 * begins, beside its first reply (as an OPENDIR's answer began it) */
	if (next)
		COF_VHOOK(ll, prepare, ll, next, cof_vop_ctx());
	len = list_dir(req, ll, d, ino, size, off, plus);
	cursor_give(ll, d, len <= 0, 1);
}

void cof_vll_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	cof_vll *ll = fuse_req_userdata(req);

	if (!fi->fh && COF_VHOOK_IF(ll, claim_dir, req, ll, ino, COF_VHID_LIST, 0, off, fi))
		return;
	list(req, ino, size, off, fi, 0);
}

void cof_vll_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			 struct fuse_file_info *fi)
{
	cof_vll *ll = fuse_req_userdata(req);

	if (!fi->fh && COF_VHOOK_IF(ll, claim_dir, req, ll, ino, COF_VHID_LIST, size, off, fi))
		return;
	list(req, ino, size, off, fi, 1);
}
