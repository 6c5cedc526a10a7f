/*
 * base.c — what a view reads from its volumes: a file at the view's seq, a
 * folder's children in pages, and content by range. Everything here is a
 * query at one seq, so the view never moves under its readers (unless it
 * follows the volume).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "view/view_int.h"

void cof_vbase_vpath(const vroot *r, const char *path, char *out, size_t outsz)
{
	if (!r->sublen)
		snprintf(out, outsz, "%s", path);
	else if (!*path)
		snprintf(out, outsz, "%s", r->cfg.subpath);
	else
		snprintf(out, outsz, "%s/%s", r->cfg.subpath, path);
}

/* The seq reads are made at: the view's, or now when it follows. */
static int64_t at_seq(const cof_vfs *v, int root)
{
	return v->o.follow ? -1 : v->roots[root].v.seq;
}

int cof_vbase_file(cof_vfs *v, int root, const char *path, cof_entry *e)
{
	char vp[COF_PATH_MAX + 1];
	cof_err err = {0};
	int r;

	if (!*path)
		return 0;
	cof_vbase_vpath(&v->roots[root], path, vp, sizeof vp);
	r = cof_meta_entry_get(v->o.st->meta, v->roots[root].v.vno, vp, at_seq(v, root), e,
			       &err);
	cof_err_clear(&err);
	if (r == 1) {
		/* the entry's path is the volume's; callers want the root's */
		snprintf(e->path, sizeof e->path, "%s", path);
	}
	return r;
}

typedef struct dir_probe {
	cof_vfs *v;
	int root;
	size_t sublen;
	int found;
} dir_probe;

/* Stops at the first file the layer has not removed. */
static int probe_one(void *arg, const cof_entry *e)
{
	dir_probe *p = arg;
	const char *rel = e->path + p->sublen;
	vnode *n = cof_vnode_find(p->v, p->root, rel);

	if (n && n->kind == N_GONE)
		return 0;
	p->found = 1;
	return 1;
}

int cof_vbase_dir(cof_vfs *v, int root, const char *path)
{
	char vp[COF_PATH_MAX + 2];
	vroot *r = &v->roots[root];
	dir_probe p = {v, root, r->sublen ? r->sublen + 1 : 0, 0};
	cof_err err = {0};

	if (!*path)
		return 1;
	cof_vbase_vpath(r, path, vp, sizeof vp - 1);
	strcat(vp, "/");
	if (cof_meta_list(v->o.st->meta, r->v.vno, at_seq(v, root), vp, NULL, probe_one, &p,
			  &err))
		p.found = 0;
	cof_err_clear(&err);
	return p.found;
}

typedef struct kids {
	size_t plen;            /* bytes of the folder's volume prefix */
	vchild *out;
	int cap, n;
	int skip_dir;           /* stopped at a folder: resume past it */
	char resume[COF_PATH_MAX + 600]; /* a path, a name and DIR_END */
} kids;

/* Sorts after every path under a folder "d": "d/" then U+10FFFF (the largest
 * code point, valid text for every backend, unlike a 0xff byte) 64 times:
 * 256 bytes, more than a segment may have, so even a segment of the largest
 * code points sorts first. */
#define U10FFFF "\xf4\x8f\xbf\xbf"
#define U10FFFF_X8 U10FFFF U10FFFF U10FFFF U10FFFF U10FFFF U10FFFF U10FFFF U10FFFF
#define DIR_END "/" U10FFFF_X8 U10FFFF_X8 U10FFFF_X8 U10FFFF_X8 U10FFFF_X8 U10FFFF_X8 \
	U10FFFF_X8 U10FFFF_X8

/* Takes one row: a file of the folder, or the first row of a subfolder (then
 * the walk stops, to resume after every row of that subfolder). */
static int kid_add(void *arg, const cof_entry *e)
{
	kids *k = arg;
	const char *rest = e->path + k->plen;
	const char *slash = strchr(rest, '/');
	vchild *c;

	if (k->n >= k->cap)
		return 1;
	c = &k->out[k->n++];
	if (slash) {
		size_t dl = (size_t)(slash - rest);
		snprintf(c->name, sizeof c->name, "%.*s", (int)dl, rest);
		c->dir = 1;
		snprintf(k->resume, sizeof k->resume, "%.*s%s", (int)(k->plen + dl), e->path,
			 DIR_END);
		k->skip_dir = 1;
		return 1;
	}
	snprintf(c->name, sizeof c->name, "%s", rest);
	c->dir = 0;
	c->e = *e;
	return 0;
}

int cof_vbase_children(cof_vfs *v, int root, const char *path, const vchild *after,
		       vchild *out, int cap, int *n)
{
	char prefix[COF_PATH_MAX + 2];
	vroot *r = &v->roots[root];
	kids k = {0};
	cof_err err = {0};

	cof_vbase_vpath(r, path, prefix, sizeof prefix - 1);
	if (*prefix)
		strcat(prefix, "/");
	k.plen = strlen(prefix);
	k.out = out;
	k.cap = cap;
	/* rows come in path order, where folder "x" sorts as "x/": resume right
	 * after a file's row, or after every row of a folder */
	if (after)
		snprintf(k.resume, sizeof k.resume, "%s%s%s", prefix, after->name,
			 after->dir ? DIR_END : "");
	do {
		k.skip_dir = 0;
		if (cof_meta_list(v->o.st->meta, r->v.vno, at_seq(v, root), prefix,
				  *k.resume ? k.resume : NULL, kid_add, &k, &err)) {
			cof_err_clear(&err);
			return -1;
		}
	} while (k.skip_dir && k.n < cap);
	*n = k.n;
	return 0;
}

int cof_vbytes_open(cof_vfs *v, int root, const char *path, const char *sha,
		    cof_vbytes *b)
{
	char vp[COF_PATH_MAX + 1];
	cof_err err = {0};
	cof_entry *e;
	int r;

	b->r = NULL;
	b->data = NULL;
	b->size = 0;
	if (sha) {
		/* content known by hash (a file the view renamed): inline
		 * content comes as a memory reader */
		r = cof_content_open(v->o.st, sha, -1, path, &b->r, &err);
		cof_err_clear(&err);
		errno = EIO;
		return r ? -1 : 0;
	}
	if (!(e = malloc(sizeof *e))) {
		errno = ENOMEM;
		return -1;
	}
	cof_vbase_vpath(&v->roots[root], path, vp, sizeof vp);
	/* one query: the row at the seq and, for small content, its bytes */
	r = cof_meta_entry_read(v->o.st->meta, v->roots[root].v.vno, vp, at_seq(v, root), e,
				&b->data, &err);
	if (r == 1) {
		b->size = e->size;
		if (!b->data &&
		    cof_content_reader(v->o.st, e->sha256, e->size, vp, &b->r, &err))
			r = -1;
	}
	cof_err_clear(&err);
	free(e);
	errno = r == 0 ? ENOENT : EIO;
	return r == 1 ? 0 : -1;
}

ssize_t cof_vbytes_read(const cof_vbytes *b, void *buf, size_t n, int64_t off)
{
	if (b->r) {
		cof_err err = {0};
		size_t got = 0;
		int rc = cof_blob_read_at(b->r, off, buf, n, &got, &err);
		cof_err_clear(&err);
		if (rc) {
			errno = EIO;
			return -1;
		}
		return (ssize_t)got;
	}
	if (off >= b->size)
		return 0;
	if ((int64_t)n > b->size - off)
		n = (size_t)(b->size - off);
	memcpy(buf, b->data + off, n);
	return (ssize_t)n;
}

void cof_vbytes_close(cof_vbytes *b)
{
	cof_blob_close(b->r);
	free(b->data);
	b->r = NULL;
	b->data = NULL;
}
