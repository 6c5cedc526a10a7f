/*
 * inodes.c — the table of a view's nodes as the kernel knows them (node id
 * <-> parent + name, lookup counts), for lowlevel.c; docs/design.md, Views,
 * "The inode table". Node ids come from a 64-bit counter and are never
 * reused within a mount.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "view/lowlevel.h"

static size_t name_hash(fuse_ino_t parent, const char *name, size_t nb)
{
	uint64_t h = 1469598103934665603ull ^ parent;

	for (; *name; name++)
		h = (h ^ (unsigned char)*name) * 1099511628211ull;
	return (size_t)(h % nb);
}

static void hash_in_name(cof_vll *ll, cof_lnode *n)
{
	size_t i = name_hash(n->parent->ino, n->name, ll->nbuckets);

	n->name_next = ll->by_name[i];
	ll->by_name[i] = n;
}

static void hash_in(cof_vll *ll, cof_lnode *n)
{
	size_t i = n->ino % ll->nbuckets;

	n->id_next = ll->by_id[i];
	ll->by_id[i] = n;
	if (n->name)
		hash_in_name(ll, n);
}

static void name_out(cof_vll *ll, cof_lnode *n)
{
	cof_lnode **p = &ll->by_name[name_hash(n->parent->ino, n->name, ll->nbuckets)];

	while (*p && *p != n)
		p = &(*p)->name_next;
	if (*p)
		*p = n->name_next;
}

static void id_out(cof_vll *ll, cof_lnode *n)
{
	cof_lnode **p = &ll->by_id[n->ino % ll->nbuckets];

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
	cof_lnode **id = calloc(nb, sizeof *id), **nm = calloc(nb, sizeof *nm);
	cof_lnode *all = NULL;

	if (!id || !nm) {
		free(id);
		free(nm);
		return; /* longer chains, still correct */
	}
	for (size_t i = 0; i < ll->nbuckets; i++)
		for (cof_lnode *n = ll->by_id[i], *next; n; n = next) {
			next = n->id_next;
			n->id_next = all;
			all = n;
		}
	free(ll->by_id);
	free(ll->by_name);
	ll->by_id = id;
	ll->by_name = nm;
	ll->nbuckets = nb;
	for (cof_lnode *n = all, *next; n; n = next) {
		next = n->id_next;
		hash_in(ll, n);
	}
}

cof_lnode *cof_lino_find(cof_vll *ll, fuse_ino_t ino)
{
	if (ino == FUSE_ROOT_ID)
		return &ll->root;
	for (cof_lnode *n = ll->by_id[ino % ll->nbuckets]; n; n = n->id_next)
		if (n->ino == ino)
			return n;
	return NULL;
}

cof_lnode *cof_lino_child(cof_vll *ll, cof_lnode *parent, const char *name)
{
	for (cof_lnode *n = ll->by_name[name_hash(parent->ino, name, ll->nbuckets)]; n;
	     n = n->name_next)
		if (n->parent == parent && !strcmp(n->name, name))
			return n;
	return NULL;
}

/* Frees n if nothing holds it any more, then its parent likewise. */
void cof_lino_put(cof_vll *ll, cof_lnode *n)
{
	while (n && n != &ll->root && n->nlookup == 0 && n->nchild == 0 &&
	       !COF_VHOOK_IF(ll, holds, ll, n) && !n->prep && !n->preparing &&
	       !n->cursors) {
		cof_lnode *p = n->parent;
		if (n->name)
			name_out(ll, n);
		id_out(ll, n);
		COF_VHOOK(ll, on_forget, ll, n);
		free(n->name);
		free(n->path);
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
void cof_lino_detach(cof_vll *ll, cof_lnode *n)
{
	cof_lnode *p = n->parent;

	if (!n->name)
		return;
	ll->names_gen++;
	name_out(ll, n);
	free(n->name);
	n->name = NULL;
	n->parent = NULL;
	p->nchild--;
	cof_lino_put(ll, p);
	cof_lino_put(ll, n);
}

/* The node of `name` in folder `parent`, made if new, with one more lookup
 * (the kernel's reference a reply of it gives). NULL when out of memory. */
cof_lnode *cof_lino_ref(cof_vll *ll, cof_lnode *parent, const char *name)
{
	cof_lnode *n = cof_lino_child(ll, parent, name);

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

/* The FUSE path of node n ("/" for the root), built from the names up to
 * the root, or NULL (a removed node; a path too long). */
static char *path_build(cof_vll *ll, const cof_lnode *n)
{
	char buf[2 * COF_PATH_MAX + 2];
	size_t at = sizeof buf - 1;

	buf[at] = '\0';
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

/* Node n's path as cached on it (built now when stale), or NULL. A folder's
 * is what each lookup in it starts from, a file's what each read of it
 * names: built once, not walked up per request. */
static const char *path_of(cof_vll *ll, cof_lnode *n)
{
	if (n == &ll->root)
		return "/";
	if (n->path && n->path_gen == ll->names_gen)
		return n->path;
	free(n->path);
	n->path = path_build(ll, n);
	n->path_gen = ll->names_gen;
	return n->path;
}

/* The FUSE path of node n (with `name` in it when given) in a new string,
 * or NULL (a removed node; ENAMETOOLONG past a volume path). Under mu. */
char *cof_lino_path(cof_vll *ll, cof_lnode *n, const char *name)
{
	const char *base = path_of(ll, n);
	size_t k, nk;
	char *out;

	if (!base)
		return NULL;
	if (!name)
		return strdup(base);
	k = strlen(base);
	nk = strlen(name);
	if (k + nk + 1 > 2 * COF_PATH_MAX + 1 || !(out = malloc(k + nk + 2)))
		return NULL;
	memcpy(out, base, k);
	if (k > 1)
		out[k++] = '/';
	memcpy(out + k, name, nk + 1);
	return out;
}

/* Drops `n` of the kernel's references to node `ino`. */
void cof_lino_forget(cof_vll *ll, fuse_ino_t ino, uint64_t n)
{
	cof_lnode *x = cof_lino_find(ll, ino);

	if (!x || x == &ll->root)
		return;
	x->nlookup = x->nlookup > n ? x->nlookup - n : 0;
	cof_lino_put(ll, x);
}

/* Moves the table's node of (p, name) to (np, newname), a node there
 * first taken off (RENAME_EXCHANGE: the two swap). Under mu. */
void cof_lino_rename(cof_vll *ll, cof_lnode *p, const char *name, cof_lnode *np,
			 const char *newname, unsigned flags)
{
	cof_lnode *a = cof_lino_child(ll, p, name), *b = cof_lino_child(ll, np, newname);
	char *an = strdup(newname), *bn = strdup(name);

	if (!an || !bn) { /* cannot follow: forget both names (ids stay valid) */
		free(an);
		free(bn);
		if (a)
			cof_lino_detach(ll, a);
		if (b)
			cof_lino_detach(ll, b);
		return;
	}
	cof_lnode *ap = a ? a->parent : NULL, *bp = b ? b->parent : NULL;

	ll->names_gen++; /* (every path beneath them moves too) */

	if (b && !(flags & RENAME_EXCHANGE)) {
		cof_lino_detach(ll, b); /* may free it */
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
		cof_lino_put(ll, ap);
	}
	if (bp) {
		bp->nchild--;
		cof_lino_put(ll, bp);
	}
}

/* The path of node `ino` (and `name` in it, when given): a new string, or
 * NULL: the node is removed, unknown, or the path too long. */
char *cof_vll_path(cof_vll *ll, fuse_ino_t ino, const char *name)
{
	char *p = NULL;
	cof_lnode *n;

	pthread_mutex_lock(&ll->mu);
	if ((n = cof_lino_find(ll, ino)) != NULL)
		p = cof_lino_path(ll, n, name);
	pthread_mutex_unlock(&ll->mu);
	return p;
}

/* A change to the tree or a file begins: prefetch stores nothing while one
 * is under way or once one began after it read (its on_change hook waits
 * for or marks a store of the node under way). */
void cof_vll_change_begin(cof_vll *ll, fuse_ino_t ino, int write)
{
	pthread_mutex_lock(&ll->mu);
	ll->changes++;
	ll->inflight++;
	COF_VHOOK(ll, on_change, ll, ino, write);
	pthread_mutex_unlock(&ll->mu);
}

void cof_vll_change_end(cof_vll *ll)
{
	pthread_mutex_lock(&ll->mu);
	ll->inflight--;
	pthread_mutex_unlock(&ll->mu);
}


int cof_lino_init(cof_vll *ll)
{
	ll->nbuckets = 1024;
	ll->by_id = calloc(ll->nbuckets, sizeof *ll->by_id);
	ll->by_name = calloc(ll->nbuckets, sizeof *ll->by_name);
	ll->root.ino = FUSE_ROOT_ID;
	ll->root.nlookup = 1;
	ll->next_ino = FUSE_ROOT_ID;
	return ll->by_id && ll->by_name ? 0 : -1;
}

void cof_lino_free(cof_vll *ll)
{
	for (size_t i = 0; ll->by_id && i < ll->nbuckets; i++)
		for (cof_lnode *n = ll->by_id[i], *next; n; n = next) {
			next = n->id_next;
			COF_VHOOK(ll, on_forget, ll, n);
			free(n->name);
			free(n->path);
			free(n);
		}
	free(ll->by_id);
	free(ll->by_name);
}
