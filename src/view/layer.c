/*
 * layer.c — the view's layer: one node per path the view wrote, removed,
 * renamed or made (a hash table in memory) with the folders they lie in
 * (vfold: counts and children), and the written bytes as files LAYER/ID on
 * the layer's disk. The base (the volume at the seq) is never
 * touched; a lookup asks the layer first.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "view/view_int.h"

/* FNV-1a of (root, path[0..len)). */
static unsigned hashn(int root, const char *path, size_t len)
{
	unsigned h = 2166136261u ^ (unsigned)root;

	for (const unsigned char *p = (const unsigned char *)path; len--; p++)
		h = (h ^ *p) * 16777619u;
	return h % VNODE_BUCKETS;
}

static unsigned hash(int root, const char *path)
{
	return hashn(root, path, strlen(path));
}

vnode *cof_vnode_find(cof_vfs *v, int root, const char *path)
{
	for (vnode *n = v->bucket[hash(root, path)]; n; n = n->chain)
		if (n->root == root && !strcmp(n->path, path))
			return n;
	return NULL;
}

/* The folder (root, path[0..len)), or NULL. */
static vfold *fold_find(cof_vfs *v, int root, const char *path, size_t len)
{
	unsigned h = hashn(root, path, len);

	for (vfold *f = v->fbucket[h]; f; f = f->chain)
		if (f->root == root && !strncmp(f->path, path, len) && !f->path[len])
			return f;
	return NULL;
}

/* The folder (root, path[0..len)), made (with those above it) if absent;
 * NULL when out of memory. */
static vfold *fold_get(cof_vfs *v, int root, const char *path, size_t len)
{
	vfold *f = fold_find(v, root, path, len), *up = NULL;
	unsigned h;

	if (f)
		return f;
	if (len) {
		const char *slash = memrchr(path, '/', len);
		if (!(up = fold_get(v, root, path, slash ? (size_t)(slash - path) : 0)))
			return NULL;
	}
	if (!(f = calloc(1, sizeof *f + len + 1)))
		return NULL;
	memcpy(f->path, path, len);
	f->root = root;
	f->up = up;
	if (up) {
		f->sib = up->subs;
		up->subs = f;
	}
	h = hashn(root, path, len);
	f->chain = v->fbucket[h];
	v->fbucket[h] = f;
	return f;
}

void cof_vnode_set(cof_vfs *v, vnode *n, vnode_kind kind)
{
	int d = (kind != N_GONE) - (n->kind != N_GONE);

	v->gen++;
	n->kind = kind;
	n->fresh = 0;
	for (vfold *f = n->dir; d && f; f = f->up)
		f->live += d;
}

vnode *cof_vnode_get(cof_vfs *v, int root, const char *path)
{
	vnode *n = cof_vnode_find(v, root, path);
	const char *slash = strrchr(path, '/');
	cof_entry *e;
	vfold *dir;
	unsigned h;
	int found;

	if (n)
		return n;
	if (v->nnodes >= COF_VIEW_NODES_MAX) {
		errno = ENOSPC; /* what one view remembers is bounded */
		return NULL;
	}
	if (!(e = malloc(sizeof *e))) {
		errno = ENOMEM;
		return NULL;
	}
	/* what the view saw at this path (the condition its commit holds
	 * to), read with mu dropped: a round trip through `--server` must
	 * not stall every lookup. The caller holds wmu, so no other change
	 * makes this node meanwhile (asked again all the same). */
	pthread_mutex_unlock(&v->mu);
	found = cof_vbase_file(v, root, path, e);
	pthread_mutex_lock(&v->mu);
	if ((n = cof_vnode_find(v, root, path))) {
		free(e);
		return n;
	}
	n = calloc(1, sizeof *n);
	dir = fold_get(v, root, path, slash ? (size_t)(slash - path) : 0);
	if (!n || !dir || !(n->path = strdup(path))) {
		free(n);
		free(e);
		errno = ENOMEM;
		return NULL;
	}
	v->nnodes++;
	n->root = root;
	n->kind = N_GONE;
	n->dir = dir;
	if (found == 1) {
		n->seen = e->version;
		cof_vnode_set(v, n, N_FILE);
		memcpy(n->sha, e->sha256, sizeof n->sha);
		n->size = e->size;
		snprintf(n->ctype, sizeof n->ctype, "%s", e->ctype);
		n->mtime = e->updated_at;
		n->mode = 0644;
	}
	free(e);
	h = hash(root, path);
	n->chain = v->bucket[h];
	v->bucket[h] = n;
	n->next = v->nodes;
	v->nodes = n;
	n->sib = dir->kids;
	dir->kids = n;
	return n;
}

int cof_vnode_under(cof_vfs *v, int root, const char *path)
{
	vfold *f = fold_find(v, root, path, strlen(path));

	return f && f->live > 0;
}

void cof_vnode_names(cof_vfs *v, int root, const char *path,
		     void (*fn)(void *ctx, const char *name, int shown), void *ctx)
{
	vfold *f = fold_find(v, root, path, strlen(path));
	size_t skip = *path ? strlen(path) + 1 : 0;

	if (!f)
		return;
	for (vnode *n = f->kids; n; n = n->sib)
		fn(ctx, n->path + skip, n->kind != N_GONE);
	for (vfold *s = f->subs; s; s = s->sib)
		fn(ctx, s->path + skip, s->live > 0);
}

void cof_vnode_free_all(cof_vfs *v)
{
	for (vnode *n = v->nodes, *next; n; n = next) {
		next = n->next;
		free(n->path);
		free(n);
	}
	v->nodes = NULL;
	for (size_t i = 0; i < VNODE_BUCKETS; i++) {
		for (vfold *f = v->fbucket[i], *next; f; f = next) {
			next = f->chain;
			free(f);
		}
		v->fbucket[i] = NULL;
		v->bucket[i] = NULL;
	}
}

void cof_vnode_revert(cof_vfs *v, vnode *n)
{
	char name[32];

	if (n->lid > 0) {
		snprintf(name, sizeof name, "%lld", (long long)n->lid);
		unlinkat(v->layer, name, 0);
	}
	n->lid = 0;
	n->dirty = 0;
	/* seen, size and sha still name what the view last saw at the path
	 * (the base's version, or the one it landed there itself: read by
	 * version, cof_vbytes_open_node); none: absent */
	if (n->seen > 0) {
		cof_vnode_set(v, n, N_FILE);
	} else {
		cof_vnode_set(v, n, N_GONE);
		n->seen = 0;
		n->sha[0] = '\0';
		n->size = 0;
	}
}

int64_t cof_layer_new(cof_vfs *v, int *fd)
{
	char name[32];
	int64_t lid = ++v->next_lid;

	snprintf(name, sizeof name, "%lld", (long long)lid);
	*fd = openat(v->layer, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	return *fd < 0 ? -1 : lid;
}

int cof_layer_open(cof_vfs *v, int64_t lid, int flags)
{
	char name[32];

	snprintf(name, sizeof name, "%lld", (long long)lid);
	return openat(v->layer, name, (flags & ~(O_CREAT | O_EXCL | O_TRUNC)) | O_NOFOLLOW |
		      O_CLOEXEC);
}
