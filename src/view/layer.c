/*
 * layer.c — the view's layer: one node per path the view wrote, removed,
 * renamed or made (a hash table in memory), and the written bytes as files
 * LAYER/ID on the layer's disk. The base (the volume at the seq) is never
 * touched; a lookup asks the layer first.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "view/view_int.h"

/* FNV-1a of (root, path). */
static unsigned hash(int root, const char *path)
{
	unsigned h = 2166136261u ^ (unsigned)root;

	for (const unsigned char *p = (const unsigned char *)path; *p; p++)
		h = (h ^ *p) * 16777619u;
	return h % VNODE_BUCKETS;
}

vnode *cof_vnode_find(cof_vfs *v, int root, const char *path)
{
	for (vnode *n = v->bucket[hash(root, path)]; n; n = n->chain)
		if (n->root == root && !strcmp(n->path, path))
			return n;
	return NULL;
}

vnode *cof_vnode_get(cof_vfs *v, int root, const char *path)
{
	vnode *n = cof_vnode_find(v, root, path);
	cof_entry *e;
	unsigned h;

	if (n)
		return n;
	if (v->nnodes >= COF_VIEW_NODES_MAX) {
		errno = ENOSPC; /* what one view remembers is bounded */
		return NULL;
	}
	n = calloc(1, sizeof *n);
	e = malloc(sizeof *e);
	if (!n || !e || !(n->path = strdup(path))) {
		free(n);
		free(e);
		errno = ENOMEM;
		return NULL;
	}
	v->nnodes++;
	n->root = root;
	n->kind = N_GONE;
	/* what the view saw at this path: the condition its commit holds to */
	if (cof_vbase_file(v, root, path, e) == 1) {
		n->seen = e->version;
		n->kind = N_FILE;
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
	return n;
}

int cof_vnode_under(cof_vfs *v, int root, const char *path)
{
	size_t len = strlen(path);

	for (vnode *n = v->nodes; n; n = n->next)
		if (n->root == root && n->kind != N_GONE &&
		    (len == 0 ? *n->path != '\0'
			      : !strncmp(n->path, path, len) && n->path[len] == '/'))
			return 1;
	return 0;
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
		n->kind = N_FILE;
	} else {
		n->kind = N_GONE;
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
