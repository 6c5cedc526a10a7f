/*
 * ops_tree.c — the folder operations of a view: listings (the layer's names,
 * then the volume's in pages, with attributes for readdirplus) and the
 * changes of the tree (unlink, mkdir, rmdir, rename of files and folders),
 * in the layer and, for `coffer mount`, in the volume at once.
 */
#define FUSE_USE_VERSION 31
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "view/view_int.h"
#include "view/ops.h"


/* ------------------------------------------------------------ listing */

#define PAGE 256

/* Where a listing stood as one of its replies began (see cof_vop_readdir):
 * its place in the layer's names, the last volume entry it had passed, the
 * entry a full reply did not take. */
typedef struct vmark {
	off_t off;              /* entries given before it (0: no mark) */
	size_t inames;
	int has_last, done;     /* (done: no volume entry left after last) */
	vchild last;
	int has_pending;
	char pending[256];
	struct stat pending_st;
	char pending_sha[65];
} vmark;

/* Marks kept: a reply sent and those built before they were asked
 * (listing.c: up to COF_LPREP_MAX prepared, then two ahead). */
#define MARKS 12

/* A folder being listed: the layer's names first, then the volume's in
 * pages, so a folder of 100,000 files is never read whole. */
typedef struct vdir {
	int root;
	char *rel;
	char **names;           /* the layer's names here (shown or removed), sorted */
	unsigned char *shown;   /* names[i] is listed (else removed by the layer) */
	size_t nnames, inames;
	vchild *page;
	int npage, ipage, done, started;
	vchild last;            /* the last volume entry read (the next page's */
	int has_last;           /* start); none yet */
	off_t off;              /* entries given so far ("." and ".." count) */
	char pending[256];      /* the entry a full buffer did not take */
	struct stat pending_st; /* its attributes (readdirplus) */
	char pending_sha[65];   /* its content when a file of the volume, else "" */
	int has_pending;
	vmark marks[MARKS];     /* where its last replies began (a ring) */
	int imark;
} vdir;

/* A name of the layer in a folder being gathered. */
typedef struct lname {
	char *name;
	int shown;
} lname;

typedef struct lnames {
	lname *a;
	size_t n, cap;
} lnames;

static void lname_add(void *ctx, const char *name, int shown)
{
	lnames *l = ctx;

	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 16;
		l->a = cof_realloc(l->a, l->cap * sizeof *l->a); /* out of memory aborts */
	}
	l->a[l->n].name = cof_strdup(name);
	l->a[l->n++].shown = shown;
}

static int lname_cmp(const void *a, const void *b)
{
	return strcmp(((const lname *)a)->name, ((const lname *)b)->name);
}

/* The layer's entries of the folder, sorted, each once (under mu): as many
 * steps as the folder has names in the layer, not as the view has nodes. */
static void layer_names(cof_vfs *v, vdir *d)
{
	size_t len = strlen(d->rel);
	lnames l = {0};

	cof_vnode_names(v, d->root, d->rel, lname_add, &l);
	if (l.n)
		qsort(l.a, l.n, sizeof *l.a, lname_cmp);
	d->names = cof_malloc((l.n ? l.n : 1) * sizeof *d->names);
	d->shown = cof_malloc(l.n ? l.n : 1);
	for (size_t i = 0; i < l.n; i++) {
		/* a node and a folder of one name are one entry */
		if (d->nnames && !strcmp(d->names[d->nnames - 1], l.a[i].name)) {
			d->shown[d->nnames - 1] |= (unsigned char)l.a[i].shown;
			free(l.a[i].name);
		} else {
			d->names[d->nnames] = l.a[i].name;
			d->shown[d->nnames++] = (unsigned char)l.a[i].shown;
		}
	}
	free(l.a);
	/* a name the layer removed whose folder still holds files shows too */
	for (size_t i = 0; i < d->nnames; i++)
		if (!d->shown[i]) {
			char sub[COF_PATH_MAX + 1];
			snprintf(sub, sizeof sub, "%s%s%s", d->rel, len ? "/" : "", d->names[i]);
			if (cof_vnode_under(v, d->root, sub) || cof_vbase_dir(v, d->root, sub))
				d->shown[i] = 1;
			else {
				struct stat st;
				vnode *n = cof_vnode_find(v, d->root, sub);
				if (n && n->kind != N_GONE && cof_vop_what_is(v, d->root, sub, &st))
					d->shown[i] = 1;
			}
		}
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Whether the layer has `name` in the folder (its names are sorted). */
static int in_layer(const vdir *d, const char *name)
{
	return d->nnames && bsearch(&name, d->names, d->nnames, sizeof *d->names, name_cmp);
}

int cof_vop_opendir(const char *path, struct fuse_file_info *fi)
{
	VIEW(v);
	const char *rel;
	struct stat st;
	vdir *d;
	int r, k = 2;

	if (cof_vop_split(v, path, &r, &rel))
		return -ENOENT;
	if (r >= 0) {
		pthread_mutex_lock(&v->mu);
		k = cof_vop_what_is(v, r, rel, &st);
		pthread_mutex_unlock(&v->mu);
	}
	if (k != 2)
		return k ? -ENOTDIR : -ENOENT;
	if (!(d = calloc(1, sizeof *d)) || !(d->rel = strdup(rel))) {
		free(d);
		return -ENOMEM;
	}
	d->root = r;
	fi->fh = (uint64_t)(uintptr_t)d;
	return 0;
}

static void vdir_reset(vdir *d)
{
	for (size_t i = 0; i < d->nnames; i++)
		free(d->names[i]);
	free(d->names);
	free(d->shown);
	d->names = NULL;
	d->shown = NULL;
	d->nnames = d->inames = 0;
	d->npage = d->ipage = d->done = d->started = d->has_last = 0;
	d->off = 0;
	d->has_pending = 0;
	memset(d->marks, 0, sizeof d->marks);
}

/* Notes where the listing stands as a reply begins at d->off (the marks at
 * or past it were of the places before: dropped). */
static void mark_set(vdir *d)
{
	vmark *m;

	for (int i = 0; i < MARKS; i++)
		if (d->marks[i].off >= d->off)
			d->marks[i].off = 0;
	m = &d->marks[d->imark++ % MARKS];

	m->off = d->off;
	m->inames = d->inames;
	/* the last volume entry passed: the one before the page's next, or
	 * the one the page was read after */
	m->has_last = d->ipage > 0 || d->has_last;
	if (d->ipage > 0 && d->ipage <= d->npage)
		m->last = d->page[d->ipage - 1];
	else if (d->has_last)
		m->last = d->last;
	m->done = d->done && d->ipage >= d->npage;
	m->has_pending = d->has_pending;
	if (d->has_pending) {
		memcpy(m->pending, d->pending, sizeof m->pending);
		m->pending_st = d->pending_st;
		memcpy(m->pending_sha, d->pending_sha, sizeof m->pending_sha);
	}
}

/* Takes the listing back to where a reply began at `off`, when marked: 1,
 * else 0. */
static int mark_back(vdir *d, off_t off)
{
	vmark *m = NULL;

	for (int i = 0; i < MARKS && !m; i++)
		if (d->marks[i].off == off && off > 0)
			m = &d->marks[i];
	if (!m)
		return 0;
	d->off = m->off;
	d->inames = m->inames;
	d->npage = d->ipage = 0; /* the volume's next page read after last */
	d->has_last = m->has_last;
	d->last = m->last;
	d->done = m->done;
	d->has_pending = m->has_pending;
	if (m->has_pending) {
		memcpy(d->pending, m->pending, sizeof d->pending);
		d->pending_st = m->pending_st;
		memcpy(d->pending_sha, m->pending_sha, sizeof d->pending_sha);
	}
	return 1;
}

/* The next entry of the folder: 1 with its name and attributes (and in
 * d->pending_sha its content, see cof_vop_listed_sha), 0 at the end. */
static int vdir_next(cof_vfs *v, vdir *d, char *name, size_t namesz, struct stat *st)
{
	d->pending_sha[0] = '\0';
	if (!d->started) {
		d->started = 1;
		if (d->root >= 0) {
			pthread_mutex_lock(&v->mu);
			layer_names(v, d);
			pthread_mutex_unlock(&v->mu);
		}
	}
	if (d->root < 0) { /* the top of several roots */
		if (d->inames >= (size_t)v->o.nroots)
			return 0;
		cof_vop_dir_attr(v, (int)d->inames, st);
		st->st_ino = cof_vop_ino(v, (int)d->inames, "");
		snprintf(name, namesz, "%s", v->roots[d->inames++].cfg.name);
		return 1;
	}
	while (d->inames < d->nnames) {
		size_t i = d->inames++;
		char sub[COF_PATH_MAX + 1];
		int k;
		if (!d->shown[i])
			continue;
		snprintf(sub, sizeof sub, "%s%s%s", d->rel, *d->rel ? "/" : "", d->names[i]);
		pthread_mutex_lock(&v->mu);
		k = cof_vop_what_is(v, d->root, sub, st);
		pthread_mutex_unlock(&v->mu);
		if (!k)
			continue;
		snprintf(name, namesz, "%s", d->names[i]);
		return 1;
	}
	for (;;) {
		if (d->ipage >= d->npage) {
			if (d->done)
				return 0;
			if (!d->page && !(d->page = malloc(PAGE * sizeof *d->page)))
				return 0;
			if (cof_vbase_children(v, d->root, d->rel, d->has_last ? &d->last : NULL,
					       d->page, PAGE, &d->npage) || d->npage == 0) {
				d->done = 1;
				d->npage = d->ipage = 0;
				return 0;
			}
			d->last = d->page[d->npage - 1];
			d->has_last = 1;
			d->ipage = 0;
			if (d->npage < PAGE) /* the walk ran out of rows */
				d->done = 1;
		}
		vchild *c = &d->page[d->ipage++];
		if (in_layer(d, c->name))
			continue;
		char sub[COF_PATH_MAX + 1];
		snprintf(sub, sizeof sub, "%s%s%s", d->rel, *d->rel ? "/" : "", c->name);
		if (cof_vop_hidden(v, d->root, sub, c->dir))
			continue;
		/* a name the layer changed since the listing began (its names
		 * were taken then): as it is now, or not at all */
		pthread_mutex_lock(&v->mu);
		int k = cof_vnode_find(v, d->root, sub) ? cof_vop_what_is(v, d->root, sub, st) : -1;
		pthread_mutex_unlock(&v->mu);
		if (!k)
			continue;
		snprintf(name, namesz, "%s", c->name);
		if (k > 0)
			return 1; /* (its bytes the layer's: nothing to push) */
		if (c->dir)
			cof_vop_dir_attr(v, d->root, st);
		else if (c->link) /* never pushed: a link has no page cache */
			cof_vop_link_attr(v, d->root, c->size, c->updated_at, st);
		else {
			cof_vop_file_attr(v, d->root, c->size, c->updated_at, 0644, st);
			memcpy(d->pending_sha, c->sha256, sizeof d->pending_sha);
		}
		st->st_ino = cof_vop_ino(v, d->root, sub);
		return 1;
	}
}

int cof_vop_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
		      struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	VIEW(v);
	vdir *d = (vdir *)(uintptr_t)fi->fh;
	enum fuse_fill_dir_flags plus = flags & FUSE_READDIR_PLUS ? FUSE_FILL_DIR_PLUS : 0;
	struct stat st;

	/* a seek: back to where one of the last replies began (one built
	 * before it was asked was dropped, listing.c), else list again from
	 * the start (an entry's number is its place only among the names of
	 * then) */
	if (off != d->off && !mark_back(d, off)) {
		vdir_reset(d);
		d->off = 2;
		while (d->off < off &&
		       vdir_next(v, d, d->pending, sizeof d->pending, &d->pending_st))
			d->off++;
		d->has_pending = 0;
		if (off < 2)
			d->off = off;
	}
	mark_set(d);
	memset(&st, 0, sizeof st);
	st.st_mode = S_IFDIR;
	if (d->off == 0 && fill(buf, ".", &st, 1, 0) == 0)
		d->off = 1;
	if (d->off == 1 && fill(buf, "..", &st, 2, 0) == 0)
		d->off = 2;
	while (d->off >= 2) {
		/* an entry a full buffer did not take is given first next time;
		 * with readdirplus its attributes come along (no lookup each) */
		if (!d->has_pending &&
		    !vdir_next(v, d, d->pending, sizeof d->pending, &d->pending_st))
			return 0;
		d->has_pending = 1;
		if (fill(buf, d->pending, &d->pending_st, d->off + 1, plus))
			return 0;
		d->has_pending = 0;
		d->off++;
	}
	return 0;
}

const char *cof_vop_listed_sha(const struct fuse_file_info *fi)
{
	const vdir *d = (const vdir *)(uintptr_t)fi->fh;

	return d->has_pending && d->pending_sha[0] ? d->pending_sha : NULL;
}

int cof_vop_releasedir(const char *path, struct fuse_file_info *fi)
{
	vdir *d = (vdir *)(uintptr_t)fi->fh;

	vdir_reset(d);
	free(d->page);
	free(d->rel);
	free(d);
	return 0;
}


/* DIRECT: removes `rel` of root r from the volume now, conditional on the
 * version the view saw. Under mu and wmu, mu dropped across the round trip
 * (n unchanged meanwhile: no other change runs). 0 or -EIO. */
static int remove_now(cof_vfs *v, int r, vnode *n)
{
	char vp[COF_PATH_MAX + 1];
	int64_t seen = n->seen;
	int rc;

	if (v->o.way != COF_VIEW_DIRECT || seen == 0)
		return 0;
	cof_vbase_vpath(&v->roots[r], n->path, vp, sizeof vp);
	cof_vop_io_begin(v);
	rc = VSRC(v)->remove(v, r, vp, seen);
	cof_vop_io_end(v);
	return rc;
}

/* Forgets the layer's bytes of node n. */
static void drop_bytes(cof_vfs *v, vnode *n)
{
	char name[32];

	if (n->lid > 0) {
		snprintf(name, sizeof name, "%lld", (long long)n->lid);
		unlinkat(v->layer, name, 0);
	}
	n->lid = 0;
}

/* Folders are implicit in a volume: one exists while it holds a file. The
 * folder a removal or a move empties stays, an empty folder of the layer,
 * until it is removed itself, as on any file system: a walk that empties
 * folders before it removes them (rm -rf, find -delete, git clean) found
 * them gone, and a walk's ".." with them (issue 38). Under mu. 0 or -errno. */
static int keep_parent(cof_vfs *v, int r, const char *rel)
{
	const char *slash = strrchr(rel, '/');
	char dir[COF_PATH_MAX + 1];
	vnode *n;

	if (!slash) /* the root's top is always there */
		return 0;
	snprintf(dir, sizeof dir, "%.*s", (int)(slash - rel), rel);
	if ((n = cof_vnode_find(v, r, dir)) && n->kind == N_DIR)
		return 0;
	if (!(n = cof_vnode_get(v, r, dir)))
		return -errno;
	if (n->kind == N_GONE) {
		cof_vnode_set(v, n, N_DIR);
		n->mode = 0755;
		n->mtime = cof_now();
	}
	return 0;
}

int cof_vop_unlink(const char *path)
{
	VIEW(v);
	const char *rel;
	struct stat st;
	vnode *n;
	int r, rc, k;

	if ((rc = cof_vop_change_begin(v, path, &r, &rel, &k, &st)))
		return rc;
	if (k != 1)
		rc = -ENOENT;
	else if ((rc = keep_parent(v, r, rel)))
		;
	else if (!(n = cof_vnode_get(v, r, rel)))
		rc = -errno;
	else if (!(rc = remove_now(v, r, n))) {
		drop_bytes(v, n);
		cof_vnode_set(v, n, N_GONE);
		n->dirty = v->o.way == COF_VIEW_CALL && n->seen > 0;
		if (v->o.way == COF_VIEW_DIRECT)
			n->seen = 0;
	}
	cof_vop_change_unlock(v);
	return rc;
}

int cof_vop_mkdir(const char *path, mode_t mode)
{
	VIEW(v);
	const char *rel;
	struct stat st;
	vnode *n;
	int r, rc;

	if (cof_vop_split(v, path, &r, &rel))
		return -ENOENT;
	if ((rc = cof_vop_writable(v, r, rel)))
		return rc;
	if (cof_vop_hidden(v, r, rel, 1))
		return -EACCES;
	cof_vop_change_lock(v);
	if (cof_vop_what_is(v, r, rel, &st))
		rc = -EEXIST;
	else if (!(n = cof_vnode_get(v, r, rel)))
		rc = -errno;
	else {
		/* folders are implicit in a volume: an empty one lives in the
		 * layer only, until the view ends */
		cof_vnode_set(v, n, N_DIR);
		n->mode = mode & 0777;
		n->mtime = cof_now();
		n->fresh = 1;   /* nothing showed here: see cof_vbase_none_at */
	}
	cof_vop_change_unlock(v);
	return rc;
}

/* True when folder `rel` of root r shows any entry. Under mu and wmu, mu
 * dropped while the base is read (cof_vbase_dir_unlocked takes it per row). */
static int dir_has_entries(cof_vfs *v, int r, const char *rel)
{
	int k;

	if (cof_vnode_under(v, r, rel))
		return 1;
	cof_vop_io_begin(v);
	k = cof_vbase_dir_unlocked(v, r, rel);
	cof_vop_io_end(v);
	return k;
}

int cof_vop_rmdir(const char *path)
{
	VIEW(v);
	const char *rel;
	struct stat st;
	vnode *n;
	int r, rc, k;

	if ((rc = cof_vop_change_begin(v, path, &r, &rel, &k, &st)))
		return rc;
	if (k != 2)
		rc = k ? -ENOTDIR : -ENOENT;
	else if (dir_has_entries(v, r, rel))
		rc = -ENOTEMPTY;
	else if ((rc = keep_parent(v, r, rel)))
		;
	else if ((n = cof_vnode_find(v, r, rel)) && n->kind == N_DIR)
		cof_vnode_set(v, n, N_GONE);
	cof_vop_change_unlock(v);
	return rc;
}

/* Moves what node `from` holds to node `to` (both of one root): `to` gets
 * the bytes (a layer file, or known content), `from` is removed. */
static void node_move(cof_vfs *v, vnode *from, vnode *to)
{
	drop_bytes(v, to);
	cof_vnode_set(v, to, N_FILE);
	to->lid = from->lid;
	memcpy(to->sha, from->sha, sizeof to->sha);
	to->size = from->size;
	memcpy(to->ctype, from->ctype, sizeof to->ctype);
	to->mode = from->mode;
	to->mtime = from->mtime;
	to->dirty = v->o.way == COF_VIEW_CALL || from->dirty;
	from->lid = 0;
	cof_vnode_set(v, from, N_GONE);
	from->dirty = v->o.way == COF_VIEW_CALL && from->seen > 0;
}

typedef struct moves {
	char **from;
	size_t n, cap;
} moves;

static int moves_add(moves *m, const char *rel)
{
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 64;
		char **nf = realloc(m->from, cap * sizeof *nf);
		if (!nf)
			return -1;
		m->from = nf;
		m->cap = cap;
	}
	return (m->from[m->n] = strdup(rel)) ? (int)++m->n * 0 : -1;
}

typedef struct walk_ctx {
	cof_vfs *v;
	int root;
	size_t sublen;
	moves *m;
} walk_ctx;

static int walk_add(void *arg, const cof_entry *e)
{
	walk_ctx *w = arg;
	const char *rel = e->path + w->sublen;
	vnode *n;

	pthread_mutex_lock(&w->v->mu);
	n = cof_vnode_find(w->v, w->root, rel);
	pthread_mutex_unlock(&w->v->mu);

	/* the layer's own nodes are taken from the layer; excluded files stay */
	if (n || cof_vop_hidden(w->v, w->root, rel, 0))
		return 0;
	return moves_add(w->m, rel) ? 1 : 0;
}

/* Every file under folder `rel` (the volume's and the layer's) that moves
 * with it: not the excluded ones, which the call cannot see and which must
 * never land at a path it can (they stay where they are). Under mu and
 * wmu, mu dropped while the volume is listed (taken per row). */
static int files_under(cof_vfs *v, int r, const char *rel, moves *m)
{
	char vp[COF_PATH_MAX + 2];
	size_t len = strlen(rel);
	walk_ctx w = {v, r, v->roots[r].sublen ? v->roots[r].sublen + 1 : 0, m};

	for (vnode *n = v->nodes; n; n = n->next)
		if (n->root == r && n->kind != N_GONE && !strncmp(n->path, rel, len) &&
		    n->path[len] == '/' && !cof_vop_hidden(v, r, n->path, n->kind == N_DIR) &&
		    moves_add(m, n->path))
			return -ENOMEM;
	cof_vbase_vpath(&v->roots[r], rel, vp, sizeof vp - 1);
	strcat(vp, "/");
	cof_vop_io_begin(v);
	int rc = VSRC(v)->list(v, r, cof_vbase_at(v, r), vp, NULL, walk_add, &w) ? -EIO : 0;
	cof_vop_io_end(v);
	return rc;
}

/* DIRECT: the move in the volume now, one change (a file or a folder).
 * Under mu and wmu, mu dropped across the round trip. */
static int move_now(cof_vfs *v, int r, const char *from, const char *to, int64_t *seq)
{
	char a[COF_PATH_MAX + 1], b[COF_PATH_MAX + 1];
	int rc;

	cof_vbase_vpath(&v->roots[r], from, a, sizeof a);
	cof_vbase_vpath(&v->roots[r], to, b, sizeof b);
	cof_vop_io_begin(v);
	rc = VSRC(v)->move(v, r, a, b, seq);
	cof_vop_io_end(v);
	return rc;
}

/* Renames folder `from` to `to` of root r in the layer. Under mu. */
static int rename_dir(cof_vfs *v, int r, const char *from, const char *to, int64_t seq)
{
	size_t flen = strlen(from);
	moves m = {0};
	int rc = files_under(v, r, from, &m);
	char dst[COF_PATH_MAX + 1];

	/* nothing lands at an excluded path, as nothing is made there: the
	 * whole rename is refused before anything moves */
	for (size_t i = 0; i < m.n && !rc; i++) {
		vnode *a = cof_vnode_find(v, r, m.from[i]);
		snprintf(dst, sizeof dst, "%s%s", to, m.from[i] + flen);
		if (cof_vop_hidden(v, r, dst, a && a->kind == N_DIR))
			rc = -EACCES;
	}
	for (size_t i = 0; i < m.n && !rc; i++) {
		snprintf(dst, sizeof dst, "%s%s", to, m.from[i] + flen);
		vnode *a = cof_vnode_get(v, r, m.from[i]);
		vnode *b = a ? cof_vnode_get(v, r, dst) : NULL;
		if (!b) {
			rc = -errno;
			break;
		}
		if (a->kind == N_DIR) {
			cof_vnode_set(v, a, N_GONE);
			cof_vnode_set(v, b, N_DIR);
			continue;
		}
		node_move(v, a, b);
		if (seq) { /* DIRECT: the volume has the move already */
			b->seen = seq;
			b->dirty = 0;
			a->seen = 0;
		}
	}
	vnode *top = cof_vnode_find(v, r, from);
	if (!rc && top && top->kind == N_DIR) {
		cof_vnode_set(v, top, N_GONE);
		vnode *b = cof_vnode_get(v, r, to);
		if (b)
			cof_vnode_set(v, b, N_DIR);
	}
	for (size_t i = 0; i < m.n; i++)
		free(m.from[i]);
	free(m.from);
	return rc;
}

int cof_vop_rename(const char *from, const char *to, unsigned int flags)
{
	VIEW(v);
	const char *ra, *rb;
	struct stat st;
	int r, r2, rc, ka, kb;
	int64_t seq = 0;

	if (cof_vop_split(v, from, &r, &ra) || cof_vop_split(v, to, &r2, &rb))
		return -ENOENT;
	if (r != r2)
		return -EXDEV;
	if ((rc = cof_vop_writable(v, r, ra)) || (rc = cof_vop_writable(v, r, rb)))
		return rc;
	if (flags & RENAME_EXCHANGE)
		return -EINVAL;
	cof_vop_change_lock(v);
	/* each may drop mu to read the source: both answers must hold at once
	 * (no node changed kind between them), else both are asked again */
	for (int tries = 0;; tries++) {
		uint64_t gen = v->gen;
		ka = cof_vop_what_is(v, r, ra, &st);
		kb = cof_vop_what_is(v, r, rb, &st);
		if (v->gen == gen || tries == 8)
			break;
	}
	if (!ka)
		rc = -ENOENT;
	else if (cof_vop_hidden(v, r, rb, ka == 2))
		rc = -EACCES;
	else if (kb && (flags & RENAME_NOREPLACE))
		rc = -EEXIST;
	else if (kb == 2 && ka == 1)
		rc = -EISDIR;
	else if (kb == 1 && ka == 2)
		rc = -ENOTDIR;
	else if (kb == 2 && dir_has_entries(v, r, rb))
		rc = -ENOTEMPTY;
	else if (!strncmp(rb, ra, strlen(ra)) && rb[strlen(ra)] == '/')
		rc = -EINVAL;
	else
		rc = keep_parent(v, r, ra);
	if (rc)
		goto out;
	if (ka == 2) {
		if (v->o.way == COF_VIEW_DIRECT && (rc = move_now(v, r, ra, rb, &seq)))
			goto out;
		rc = rename_dir(v, r, ra, rb, seq);
		goto out;
	}
	vnode *a = cof_vnode_get(v, r, ra), *b = a ? cof_vnode_get(v, r, rb) : NULL;
	if (!b) {
		rc = -errno;
		goto out;
	}
	if (v->o.way == COF_VIEW_DIRECT && !a->dirty && a->seen &&
	    (rc = move_now(v, r, ra, rb, &seq)))
		goto out;
	int was_dirty = a->dirty;
	node_move(v, a, b);
	if (v->o.way == COF_VIEW_DIRECT) {
		if (!was_dirty) {
			b->seen = seq;
			b->dirty = 0;
			a->seen = 0;
		} else if (b->lid > 0) {
			/* written, not yet landed: it lands at its new name */
			rc = cof_view_land_file(v, b);
		}
	}
out:
	cof_vop_change_unlock(v);
	return rc;
}
