/*
 * prefetch.c — a listing's small files into the kernel's page cache: which
 * files (budgets per file, folder and view), their bytes, and the stores
 * (fuse_lowlevel_notify_store), made once the kernel has the listed nodes
 * (lowlevel.c, list()). docs/design.md, Views, "Prefetch on listing".
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "view/lowlevel.h"
#include "view/ops.h"

/* A view whose files' bytes never change under its readers but through
 * its own writes (no `follow`), that answers no open (an open would drop
 * the cache unless kept, and `coffer mount` read-write lands on close), and
 * reads in process: through `--server` each push would be an HTTP request
 * for bytes nobody asked for yet, so that way reads on demand only.
 * COFFER_VIEW_NO_PREFETCH=1 turns it off (to measure without it). */
int cof_vpush_on(const cof_vfs *v)
{
	static int off = -1;

	if (off < 0) {
		const char *e = getenv("COFFER_VIEW_NO_PREFETCH");
		off = e && *e && strcmp(e, "0");
	}
	return !off && !v->o.src && cof_vop_no_open(v);
}

/* The bytes of FUSE path `path` to push: exactly `size` of them into buf
 * when the file is the volume's, unchanged by the layer, not excluded, and
 * still that size; else -1 (nothing is pushed: its reads ask us). */
ssize_t cof_vpush_read(cof_vfs *v, const char *path, char *buf, int64_t size)
{
	const char *rel;
	cof_vbytes b;
	int64_t off = 0;
	ssize_t k = 1;
	vnode *n;
	int r;

	if (cof_vop_split(v, path, &r, &rel) || r < 0 || !*rel || cof_vop_hidden(v, r, rel, 0))
		return -1;
	/* a layer's file (written, made, renamed, removed) is read by request */
	pthread_mutex_lock(&v->mu);
	n = cof_vnode_find(v, r, rel);
	pthread_mutex_unlock(&v->mu);
	if (n || cof_vbytes_open(v, r, rel, NULL, &b))
		return -1;
	if (b.size == size)
		while (off < size && (k = cof_vbytes_read(&b, buf + off, (size_t)(size - off), off)) > 0)
			off += k;
	cof_vbytes_close(&b);
	return b.size == size && off == size ? (ssize_t)off : -1;
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

/* Adds file n (`size` bytes, in folder p) to the listing's pushes if the
 * budgets allow: its bytes are then counted as pushed, so a folder listed
 * again pushes it no more. Under mu. */
void cof_vpush_add(cof_vll *ll, cof_vpush *ps, cof_lnode *p, cof_lnode *n, int64_t size)
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
	if (!(c->path = cof_lino_path(ll, n, NULL)))
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
	cof_lnode *n;
	ssize_t k;
	int stale;

	pthread_mutex_lock(&ll->mu);
	c0 = ll->changes;
	k = ll->inflight;
	pthread_mutex_unlock(&ll->mu);
	if (k || (k = cof_vpush_read(ll->v, c->path, buf, c->size)) != c->size)
		return;
	pthread_mutex_lock(&ll->mu);
	n = cof_lino_find(ll, c->ino);
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
	cof_lino_put(ll, n); /* forgotten while pushed */
	pthread_mutex_unlock(&ll->mu);
	if (stale)
		fuse_lowlevel_notify_inval_inode(ll->se, c->ino, 0, 0);
}

/* Pushes a listing's files, after its reply was sent. */
void cof_vpush_run(cof_vll *ll, cof_vpush *ps)
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
