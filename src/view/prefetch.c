/*
 * prefetch.c — which files a listing puts into the kernel's page cache, and
 * their bytes (lowlevel.c stores them, with fuse_lowlevel_notify_store,
 * after the listing's reply is sent). docs/design.md, Views, "Prefetch on
 * listing".
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "view/view_int.h"
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
