/*
 * base.c — what a view reads from its volumes: a file at the view's seq, a
 * folder's children in pages, and content by range. Everything here is a
 * query at one seq, so the view never moves under its readers (unless it
 * follows the volume). The queries go through the view's source
 * (source_local.c in process, source_http.c over a cofferd).
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

int64_t cof_vbase_at(cof_vfs *v, int root)
{
	return v->o.follow ? VSRC(v)->newest(v, root) : v->roots[root].v.seq;
}

/* The last file cof_vbase_what found on this thread. A change asks what is
 * at its path (cof_vop_what_is), then makes the path's node
 * (cof_vnode_get), which reads the file's entry again for the version its
 * commit holds to: at a view's fixed seq that is the entry the first read
 * gave, so it is taken from here (one query less an unlink, chmod or
 * write of a volume's file: rm -rf of 10,000 files made 20,410 queries). */
static __thread struct {
	uint64_t view;          /* cof_vfs.id, 0: none */
	int root;
	int64_t at;
	cof_entry e;
} last_what;

int cof_vbase_file(cof_vfs *v, int root, const char *path, cof_entry *e)
{
	char vp[COF_PATH_MAX + 1];
	int r;

	if (!*path)
		return 0;
	if (last_what.view == v->id && last_what.root == root && !v->o.follow &&
	    last_what.at == cof_vbase_at(v, root) && !strcmp(last_what.e.path, path)) {
		*e = last_what.e;
		return 1;
	}
	cof_vbase_vpath(&v->roots[root], path, vp, sizeof vp);
	r = VSRC(v)->entry(v, root, vp, cof_vbase_at(v, root), e);
	if (r == 1) {
		/* the entry's path is the volume's; callers want the root's */
		snprintf(e->path, sizeof e->path, "%s", path);
	}
	return r;
}

int cof_vbase_none_at(cof_vfs *v, int root, const char *path)
{
	char up[COF_PATH_MAX + 1];
	char *slash;

	if (v->o.follow) /* the base moves: someone may make a file there */
		return 0;
	snprintf(up, sizeof up, "%s", path);
	while ((slash = strrchr(up, '/'))) {
		*slash = '\0';
		vnode *n = cof_vnode_find(v, root, up);
		if (n && n->kind == N_DIR && n->fresh)
			return 1;
	}
	return 0;
}

typedef struct dir_probe {
	cof_vfs *v;
	int root;
	size_t sublen;
	int found;
	int lock;               /* take mu for each row (cof_vbase_dir_unlocked) */
} dir_probe;

/* Stops at the first file the layer has not removed. */
static int probe_one(void *arg, const cof_entry *e)
{
	dir_probe *p = arg;
	const char *rel = e->path + p->sublen;
	int gone;

	if (p->lock)
		pthread_mutex_lock(&p->v->mu);
	vnode *n = cof_vnode_find(p->v, p->root, rel);
	gone = n && n->kind == N_GONE;
	if (p->lock)
		pthread_mutex_unlock(&p->v->mu);
	if (gone)
		return 0;
	p->found = 1;
	return 1;
}

static int base_dir(cof_vfs *v, int root, const char *path, int lock)
{
	char vp[COF_PATH_MAX + 2];
	vroot *r = &v->roots[root];
	dir_probe p = {v, root, r->sublen ? r->sublen + 1 : 0, 0, lock};

	if (!*path)
		return 1;
	cof_vbase_vpath(r, path, vp, sizeof vp - 1);
	strcat(vp, "/");
	if (VSRC(v)->list(v, root, cof_vbase_at(v, root), vp, NULL, probe_one, &p))
		p.found = 0;
	return p.found;
}

int cof_vbase_dir(cof_vfs *v, int root, const char *path)
{
	return base_dir(v, root, path, 0);
}

int cof_vbase_dir_unlocked(cof_vfs *v, int root, const char *path)
{
	return base_dir(v, root, path, 1);
}

/* What one walk of the rows whose path starts with `path` (no slash after
 * it) tells: the file itself sorts first, then siblings whose next byte sorts
 * before '/' ("f.txt" for "f"), then the folder's rows ("f/..."), then the
 * rest ("f0"). */
typedef struct what_probe {
	cof_vfs *v;
	int root;
	const char *vp;         /* the volume path looked for */
	size_t vplen;           /* its bytes */
	size_t sublen;
	int lock;               /* take mu for each row (as dir_probe) */
	cof_entry *e;
	int k;                  /* 1 file, 2 folder, 0 none, -1 not known */
} what_probe;

static int what_one(void *arg, const cof_entry *e)
{
	what_probe *p = arg;
	unsigned char c;

	if (strncmp(e->path, p->vp, p->vplen)) {
		p->k = -1;   /* not a row of the prefix: ask as before */
		return 1;
	}
	c = (unsigned char)e->path[p->vplen];
	if (!c) {
		*p->e = *e;
		p->k = 1;
		return 1;
	}
	if (c < '/') {  /* a sibling before the folder's rows: ask for those */
		p->k = -1;
		return 1;
	}
	if (c > '/')    /* past where the folder's rows would be */
		return 1;
	if (probe_one(&(dir_probe){p->v, p->root, p->sublen, 0, p->lock}, e))
		p->k = 2;
	return p->k == 2;
}

int cof_vbase_what(cof_vfs *v, int root, const char *path, cof_entry *e, int unlocked)
{
	char vp[COF_PATH_MAX + 1];
	vroot *r = &v->roots[root];
	what_probe p = {v, root, vp, 0, r->sublen ? r->sublen + 1 : 0, unlocked, e, 0};

	if (!*path)
		return 2;
	cof_vbase_vpath(r, path, vp, sizeof vp);
	p.vplen = strlen(vp);
	if (!VSRC(v)->walk_stops || !VSRC(v)->walk_stops(v))
		p.k = -1;   /* a page of siblings would cost more than two reads */
	else if (VSRC(v)->list(v, root, cof_vbase_at(v, root), vp, NULL, what_one, &p))
		p.k = -1;
	if (p.k == 1) { /* the entry's path is the volume's; callers want the root's */
		snprintf(e->path, sizeof e->path, "%s", path);
		if (!v->o.follow && e->version > 0) {
			last_what.view = v->id;
			last_what.root = root;
			last_what.at = cof_vbase_at(v, root);
			last_what.e = *e;
		}
	}
	if (p.k != -1)
		return p.k;
	if (cof_vbase_file(v, root, path, e) == 1)
		return 1;
	return base_dir(v, root, path, unlocked) ? 2 : 0;
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
		c->link = 0;
		snprintf(k->resume, sizeof k->resume, "%.*s%s", (int)(k->plen + dl), e->path,
			 DIR_END);
		k->skip_dir = 1;
		return 1;
	}
	snprintf(c->name, sizeof c->name, "%s", rest);
	c->dir = 0;
	c->link = cof_is_symlink(e->ctype);
	c->size = e->size;
	c->updated_at = e->updated_at;
	memcpy(c->sha256, e->sha256, sizeof c->sha256);
	return 0;
}

int cof_vbase_children(cof_vfs *v, int root, const char *path, const vchild *after,
		       vchild *out, int cap, int *n)
{
	char prefix[COF_PATH_MAX + 2];
	vroot *r = &v->roots[root];
	kids k = {0};
	int64_t at = cof_vbase_at(v, root);

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
		if (VSRC(v)->list(v, root, at, prefix, *k.resume ? k.resume : NULL, kid_add, &k))
			return -1;
	} while (k.skip_dir && k.n < cap);
	*n = k.n;
	return 0;
}

int cof_vbytes_open(cof_vfs *v, int root, const char *path, const char *sha,
		    cof_vbytes *b)
{
	char vp[COF_PATH_MAX + 1];

	memset(b, 0, sizeof *b);
	cof_vbase_vpath(&v->roots[root], path, vp, sizeof vp);
	return VSRC(v)->bytes_open(v, root, vp, sha, cof_vbase_at(v, root), b);
}

int cof_vbytes_open_node(cof_vfs *v, const vnode *n, cof_vbytes *b)
{
	char vp[COF_PATH_MAX + 1];
	int64_t at = cof_vbase_at(v, n->root);

	if (!n->seen)
		return cof_vbytes_open(v, n->root, n->path, n->sha, b);
	/* a version this view landed (a move of a file it never wrote) is
	 * newer than the seq it reads: read the path at that version's seq */
	if (at >= 0 && n->seen > at)
		at = n->seen;
	memset(b, 0, sizeof *b);
	cof_vbase_vpath(&v->roots[n->root], n->path, vp, sizeof vp);
	return VSRC(v)->bytes_open(v, n->root, vp, NULL, at, b);
}

ssize_t cof_vbytes_read(const cof_vbytes *b, void *buf, size_t n, int64_t off)
{
	return (b->src ? b->src : &cof_vsrc_local)->bytes_read(b, buf, n, off);
}

int cof_vbytes_fd(const cof_vbytes *b)
{
	return !b->src && b->r ? cof_blob_fd(b->r) : -1;
}

void cof_vbytes_close(cof_vbytes *b)
{
	(b->src ? b->src : &cof_vsrc_local)->bytes_close(b);
}