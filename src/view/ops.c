/*
 * ops.c — the file system operations of a view, by path (lowlevel.c turns
 * the kernel's requests into them):
 * lookups and listings merge the layer over the volume at its seq; opens of
 * unchanged files read the volume's content by range; writes copy the file
 * up into the layer first. Symlinks are files of their own type (op_symlink).
 * Not supported, by design (docs/design.md): hard links (EPERM), extended
 * attributes (ENOTSUP); locks are the kernel's own, local to the mount.
 */
#define FUSE_USE_VERSION 31
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include "view/view_int.h"
#include "view/ops.h"



/* Splits a FUSE path into a root and the path inside it ("" = its top).
 * *root = -1 for the top of a view of several roots. 0 or -ENOENT. */
int cof_vop_split(cof_vfs *v, const char *fp, int *root, const char **rel)
{
	if (!fp) /* libfuse's path of a file removed while open (by handle) */
		return -ENOENT;
	fp++; /* the leading '/' */
	if (v->o.nroots == 1 && !v->roots[0].cfg.name[0]) {
		*root = 0;
		*rel = fp;
		return 0;
	}
	*root = -1;
	*rel = "";
	if (!*fp)
		return 0;
	const char *slash = strchr(fp, '/');
	size_t len = slash ? (size_t)(slash - fp) : strlen(fp);
	for (int i = 0; i < v->o.nroots; i++)
		if (strlen(v->roots[i].cfg.name) == len && !strncmp(v->roots[i].cfg.name, fp, len)) {
			*root = i;
			*rel = slash ? slash + 1 : "";
			return 0;
		}
	return -ENOENT;
}

/* True when `rel` of root r is hidden by the root's exclusions. */
int cof_vop_hidden(cof_vfs *v, int r, const char *rel, int is_dir)
{
	char vp[COF_PATH_MAX + 1];
	const cof_view_root *c = &v->roots[r].cfg;

	if (!c->excluded || !*rel)
		return 0;
	cof_vbase_vpath(&v->roots[r], rel, vp, sizeof vp);
	return c->excluded(c->excl_ctx, vp, is_dir);
}

/* 0 when `rel` of root r may be written, else -EROFS. */
int cof_vop_writable(cof_vfs *v, int r, const char *rel)
{
	char vp[COF_PATH_MAX + 2];
	const cof_view_root *c;
	cof_err e = {0};
	const char *p;

	if (r < 0 || !v->roots[r].cfg.rw || v->layer < 0 || !*rel)
		return -EROFS;
	c = &v->roots[r].cfg;
	for (int i = 0; c->ro_tops && c->ro_tops[i]; i++) {
		size_t k = strlen(c->ro_tops[i]);
		if (!strncmp(rel, c->ro_tops[i], k) && (rel[k] == '/' || !rel[k]))
			return -EROFS;
	}
	/* what is made here lands as a volume path: the volume's rules hold
	 * (at most 4096 bytes; UTF-8, no control characters) */
	if (v->roots[r].sublen + 1 + strlen(rel) > COF_PATH_MAX)
		return -ENAMETOOLONG;
	cof_vbase_vpath(&v->roots[r], rel, vp, sizeof vp);
	if (cof_path_check(vp, strlen(vp), "path", &p, &e)) {
		cof_err_clear(&e);
		return -EINVAL;
	}
	return 0;
}

void cof_vop_dir_attr(cof_vfs *v, int r, struct stat *st)
{
	struct fuse_context *cx = cof_vop_ctx();

	memset(st, 0, sizeof *st);
	st->st_mode = S_IFDIR | (r >= 0 && v->roots[r].cfg.rw ? 0755 : 0555);
	st->st_nlink = 2;
	st->st_uid = cx->uid;
	st->st_gid = cx->gid;
	st->st_mtime = r >= 0 ? v->roots[r].v.vol.created_at : 0;
}

void cof_vop_file_attr(cof_vfs *v, int r, int64_t size, int64_t mtime, mode_t mode,
		      struct stat *st)
{
	struct fuse_context *cx = cof_vop_ctx();

	memset(st, 0, sizeof *st);
	if (!v->roots[r].cfg.rw)
		mode &= ~0222u;
	st->st_mode = S_IFREG | (mode & 07777);
	st->st_nlink = 1;
	st->st_uid = cx->uid;
	st->st_gid = cx->gid;
	st->st_size = size;
	st->st_blocks = (size + 511) / 512;
	st->st_blksize = 65536;
	st->st_mtime = st->st_ctime = st->st_atime = mtime;
}

void cof_vop_link_attr(cof_vfs *v, int r, int64_t size, int64_t mtime, struct stat *st)
{
	cof_vop_file_attr(v, r, size, mtime, 0777, st);
	st->st_mode = S_IFLNK | 0777; /* a link's own mode is never looked at */
}

uint64_t cof_vop_ino(cof_vfs *v, int r, const char *rel)
{
	char vp[COF_PATH_MAX + 1];
	uint64_t h = 1469598103934665603ull; /* FNV-1a */

	if (r < 0)
		return 1;
	cof_vbase_vpath(&v->roots[r], rel, vp, sizeof vp);
	for (const char *c = v->roots[r].v.vol.id; *c; c++)
		h = (h ^ (unsigned char)*c) * 1099511628211ull;
	h = (h ^ '/') * 1099511628211ull; /* (no volume id holds one) */
	for (const char *c = vp; *c; c++)
		h = (h ^ (unsigned char)*c) * 1099511628211ull;
	return h > 1 ? h : h + 2; /* never 0, nor the top's (1) */
}

/* What the volume has at `rel` of root r (no node of the layer there): 1
 * file (attributes in *st), 2 folder, 0 nothing. Reads the source: mu is
 * dropped around the reads when `unlock` (then the layer's nodes under a
 * folder are asked with mu taken per row). */
static int base_is_at(cof_vfs *v, int r, const char *rel, struct stat *st, int unlock)
{
	cof_entry *e = malloc(sizeof *e);
	int rc, k = 0;

	if (!e)
		return -1;
	if (cof_vbase_none_at(v, r, rel)) {   /* beneath a folder made here */
		free(e);
		return 0;
	}
	if (unlock)
		pthread_mutex_unlock(&v->mu);
	/* one read for both questions: a new name in a folder of the volume
	 * costs one query, not two (issue 38 item 3) */
	rc = cof_vbase_what(v, r, rel, e, unlock);
	if (rc == 1 && cof_is_symlink(e->ctype))
		cof_vop_link_attr(v, r, e->size, e->updated_at, st);
	else if (rc == 1)
		cof_vop_file_attr(v, r, e->size, e->updated_at, 0644, st);
	else if (rc == 2)
		cof_vop_dir_attr(v, r, st);
	if (rc == 1 || rc == 2)
		k = rc;
	if (unlock)
		pthread_mutex_lock(&v->mu);
	free(e);
	return k;
}

/* Reads of the source made with mu dropped before what_is_at asks them
 * with it held (a layer changing that fast should not starve a lookup). */
#define BASE_TRIES 4

/* What is at `rel` of root r: 1 file (attributes in *st), 2 folder, 0
 * nothing. Under mu, which it drops while it reads the source (a lookup
 * of a path the layer has no node of): what it answers is what holds when
 * it returns (the layer unchanged meanwhile, else asked again); a node
 * pointer the caller holds stays valid (nodes live as long as the view),
 * not its state. */
static int what_is_at(cof_vfs *v, int r, const char *rel, struct stat *st)
{
	vnode *n;

	if (!*rel) {
		cof_vop_dir_attr(v, r, st);
		return 2;
	}
	for (int tries = 0;; tries++) {
		n = cof_vnode_find(v, r, rel);
		if (n && n->kind == N_FILE) {
			int64_t size = n->size;
			if (n->lid > 0) {
				int fd = cof_layer_open(v, n->lid, O_RDONLY);
				struct stat lb;
				if (fd >= 0 && fstat(fd, &lb) == 0)
					size = lb.st_size;
				if (fd >= 0)
					close(fd);
			}
			if (cof_is_symlink(n->ctype))
				cof_vop_link_attr(v, r, size, n->mtime, st);
			else
				cof_vop_file_attr(v, r, size, n->mtime, n->mode, st);
			return cof_vop_hidden(v, r, rel, 0) ? 0 : 1;
		}
		if (n && n->kind == N_DIR) {
			cof_vop_dir_attr(v, r, st);
			return cof_vop_hidden(v, r, rel, 1) ? 0 : 2;
		}
		if (cof_vnode_under(v, r, rel)) {
			cof_vop_dir_attr(v, r, st);
			return cof_vop_hidden(v, r, rel, 1) ? 0 : 2;
		}
		if (n) { /* removed in the layer: a folder only if files stay under it */
			int k = 0;
			if (tries < BASE_TRIES) {
				uint64_t gen = v->gen;
				pthread_mutex_unlock(&v->mu);
				k = cof_vbase_dir_unlocked(v, r, rel);
				pthread_mutex_lock(&v->mu);
				if (v->gen != gen)
					continue;
			} else
				k = cof_vbase_dir(v, r, rel);
			if (!k)
				return 0;
			cof_vop_dir_attr(v, r, st);
			return cof_vop_hidden(v, r, rel, 1) ? 0 : 2;
		}
		uint64_t gen = v->gen;
		int k = base_is_at(v, r, rel, st, tries < BASE_TRIES);
		if (tries < BASE_TRIES && v->gen != gen)
			continue; /* a node changed while the source was read */
		if (k <= 0)
			return 0;
		return cof_vop_hidden(v, r, rel, k == 2) ? 0 : k;
	}
}

int cof_vop_what_is(cof_vfs *v, int r, const char *rel, struct stat *st)
{
	int k = what_is_at(v, r, rel, st);

	if (k)
		st->st_ino = cof_vop_ino(v, r, rel);
	return k;
}

void cof_vop_change_lock(cof_vfs *v)
{
	pthread_mutex_lock(&v->wmu);
	pthread_mutex_lock(&v->mu);
}

void cof_vop_change_unlock(cof_vfs *v)
{
	pthread_mutex_unlock(&v->mu);
	pthread_mutex_unlock(&v->wmu);
}

void cof_vop_io_begin(cof_vfs *v)
{
	pthread_mutex_unlock(&v->mu);
}

void cof_vop_io_end(cof_vfs *v)
{
	pthread_mutex_lock(&v->mu);
}

int cof_vop_change_begin(cof_vfs *v, const char *path, int *r, const char **rel, int *k,
			 struct stat *st)
{
	int rc;

	if (cof_vop_split(v, path, r, rel))
		return -ENOENT;
	if ((rc = cof_vop_writable(v, *r, *rel)))
		return rc;
	cof_vop_change_lock(v);
	*k = cof_vop_what_is(v, *r, *rel, st);
	return 0;
}

/* The attributes of an open file removed meanwhile, asked by handle (the
 * kernel does before reading it; libfuse then has no path for it): its
 * layer file's, the only bytes it still has. */
static int getattr_fh(cof_vfs *v, const vfile *f, struct stat *st)
{
	struct stat lb;

	if (f->fd < 0 || !f->n || fstat(f->fd, &lb))
		return -ENOENT;
	cof_vop_file_attr(v, f->n->root, lb.st_size, lb.st_mtime, f->n->mode, st);
	st->st_ino = cof_vop_ino(v, f->n->root, f->n->path);
	return 0;
}

static int op_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	VIEW(v);
	const char *rel;
	int r, k;

	if (!path && fi && fi->fh)
		return getattr_fh(v, (const vfile *)(uintptr_t)fi->fh, st);
	if (cof_vop_split(v, path, &r, &rel))
		return -ENOENT;
	if (r < 0) {
		cof_vop_dir_attr(v, -1, st);
		st->st_ino = cof_vop_ino(v, -1, "");
		return 0;
	}
	pthread_mutex_lock(&v->mu);
	k = cof_vop_what_is(v, r, rel, st);
	pthread_mutex_unlock(&v->mu);
	return k ? 0 : -ENOENT;
}

/* ------------------------------------------------------------ files */

/* What a copy into the layer reads: the node's bytes as they were when it
 * began (the node may change while mu is dropped). */
typedef struct vsnap {
	vnode n;                /* its fields, n.path its own copy */
} vsnap;

/* 0, or -1 out of memory. */
static int snap_of(vsnap *s, const vnode *n)
{
	s->n = *n;
	return (s->n.path = strdup(n->path)) ? 0 : -1;
}

/* Copies the bytes node `n` had into fd (a new layer file), without mu. 0
 * or -errno. */
static int copy_up(cof_vfs *v, const vnode *n, int fd)
{
	char buf[65536];
	cof_vbytes b;
	int64_t off = 0;
	ssize_t k = 0;

	/* a node of the layer with content known by hash was renamed: read
	 * that content; else the file at the view's seq */
	if (cof_vbytes_open_node(v, n, &b))
		return -EIO;
	while (off < n->size && (k = cof_vbytes_read(&b, buf, sizeof buf, off)) > 0) {
		if (write(fd, buf, (size_t)k) != k) {
			k = -1;
			break;
		}
		off += k;
	}
	cof_vbytes_close(&b);
	return k < 0 ? -errno : 0;
}

/* The same content: what a copy of `s` made is n's bytes (a node keeps
 * its path for life: a rename moves its fields to another node). */
static int same_bytes(const vnode *n, const vsnap *s)
{
	return n->kind == N_FILE && n->lid == 0 && n->seen == s->n.seen &&
	       !strcmp(n->sha, s->n.sha);
}

static void layer_drop(cof_vfs *v, int64_t lid)
{
	char name[32];

	snprintf(name, sizeof name, "%lld", (long long)lid);
	unlinkat(v->layer, name, 0);
}

/* The node of a file about to be written, with its bytes in the layer
 * (copied up from the volume unless `trunc`). Under mu, which it drops
 * while it copies (docs/design.md, Views, "No I/O under the view's
 * mutex"): the node is marked `copying`, so a second writer of the file
 * waits for that copy instead of making its own, and lookups, listings
 * and other files go on meanwhile. When the node changed under the copy
 * (unlinked, renamed away, truncated or written by a create), the copy is
 * thrown away and the path asked again: the write then acts on what is
 * there now, as if it came after that change (ENOENT when nothing is).
 * Under mu and wmu, both dropped while it waits or copies (the change that
 * waits for wmu may be the one that renames the file away). NULL with *rc. */
static vnode *file_for_write(cof_vfs *v, int r, const char *rel, int trunc, int *rc)
{
	for (;;) {
		vnode *n = cof_vnode_get(v, r, rel);
		vsnap *s;
		int fd;

		*rc = 0;
		if (!n) {
			*rc = -errno;
			return NULL;
		}
		if (n->copying) {
			pthread_mutex_unlock(&v->wmu);
			pthread_cond_wait(&v->copied, &v->mu);
			pthread_mutex_unlock(&v->mu);
			cof_vop_change_lock(v);
			continue;
		}
		if (n->kind != N_FILE) {
			*rc = -ENOENT;
			return NULL;
		}
		if (n->lid > 0)
			return n;
		int64_t lid = cof_layer_new(v, &fd);
		if (lid < 0) {
			*rc = -errno;
			return NULL;
		}
		if (trunc || n->size == 0) {
			close(fd);
			n->lid = lid;
			return n;
		}
		if (!(s = malloc(sizeof *s)) || snap_of(s, n)) {
			free(s);
			close(fd);
			layer_drop(v, lid);
			*rc = -ENOMEM;
			return NULL;
		}
		n->copying = 1;
		cof_vop_change_unlock(v);
		*rc = copy_up(v, &s->n, fd);
		close(fd);
		cof_vop_change_lock(v);
		n->copying = 0;
		pthread_cond_broadcast(&v->copied);
		int same = same_bytes(n, s);
		free(s->n.path);
		free(s);
		if (*rc || !same) {
			layer_drop(v, lid);
			if (*rc)
				return NULL;
			continue; /* changed meanwhile: ask the path again */
		}
		n->lid = lid;
		return n;
	}
}

/* Opens `rel` of root r for reading into f: 0, 1 when there is no such file
 * (the caller tells a folder from nothing), or -errno. One query for a file
 * the layer never touched. */
static int open_read(cof_vfs *v, int r, const char *rel, vfile *f)
{
	vnode *n;
	int rc = 0;

	if (cof_vop_hidden(v, r, rel, 0))
		return -ENOENT;
	vsnap s = {{0}};

	pthread_mutex_lock(&v->mu);
	n = cof_vnode_find(v, r, rel);
	if (n && n->kind == N_FILE && n->lid > 0) {
		if ((f->fd = cof_layer_open(v, n->lid, O_RDONLY)) < 0)
			rc = -errno;
	} else if (n && n->kind == N_FILE) {
		if (snap_of(&s, n))
			rc = -ENOMEM;
	} else if (n)
		rc = n->kind == N_DIR ? -EISDIR : -ENOENT;
	pthread_mutex_unlock(&v->mu);
	/* the source's bytes are opened with mu dropped */
	if (s.n.path) {
		if (cof_vbytes_open_node(v, &s.n, &f->b))
			rc = -EIO;
		free(s.n.path);
	}
	if (!n && cof_vbytes_open(v, r, rel, NULL, &f->b))
		rc = errno == ENOENT ? 1 : -EIO; /* absent: a folder, or nothing */
	return rc;
}

/* ------------------------------------------------ opens that cost nothing
 *
 * A view at a fixed seq whose only writer is the kernel in front of it (a
 * read-only view, or a call's: its layer is written only through this
 * mount, and lands after the mount is detached) answers no open: ENOSYS
 * tells the kernel to send neither OPEN nor RELEASE for any file of the
 * connection from then on, and to keep the page cache across opens
 * (FOPEN_KEEP_CACHE), so a warm `grep -r` or build reading 5,000 files
 * makes no round trip to us per file. Reads and writes then come without
 * a handle, by path: each serving thread keeps the bytes of the last
 * volume file it read open, so a large file read sequentially opens its
 * content once per thread, not once per read; a path the layer holds is
 * read from (and written to) its layer file. A file made by create gets
 * no handle either (the kernel would send no RELEASE for it), so a file
 * removed while open has no bytes left to read or write (ENOENT).
 * `coffer mount` read-write keeps its opens: a close lands a version. */

typedef struct nofh {
	uint64_t view;          /* cof_vfs.id the bytes belong to */
	int root;
	char *rel;
	cof_vbytes b;
} nofh;

static pthread_key_t nofh_key;

static void nofh_drop(void *arg)
{
	nofh *c = arg;

	if (!c)
		return;
	cof_vbytes_close(&c->b);
	free(c->rel);
	free(c);
}

static void nofh_key_make(void)
{
	pthread_key_create(&nofh_key, nofh_drop);
}

/* Whether this view serves files with no open (see above). */
static int no_open(const cof_vfs *v)
{
	return !v->o.follow && (v->layer < 0 || v->o.way == COF_VIEW_CALL);
}

int cof_vop_no_open(const cof_vfs *v)
{
	return no_open(v);
}

/* A read with no handle of a path the layer holds (a call's view): 0 with
 * *got, 1 when the layer has no node there (the volume's bytes at the seq
 * serve it), or -errno. */
static int read_layer(cof_vfs *v, int r, const char *rel, char *buf, size_t size, off_t off,
		      ssize_t *got)
{
	vfile f = {.fd = -1};
	int rc;

	if (v->layer < 0)
		return 1;
	pthread_mutex_lock(&v->mu);
	vnode *n = cof_vnode_find(v, r, rel);
	pthread_mutex_unlock(&v->mu);
	if (!n)
		return 1;
	if ((rc = open_read(v, r, rel, &f)) != 0)
		return rc == 1 ? -ENOENT : rc;
	*got = f.fd >= 0 ? pread(f.fd, buf, size, off) : cof_vbytes_read(&f.b, buf, size, off);
	rc = *got < 0 ? -errno : 0;
	if (f.fd >= 0)
		close(f.fd);
	cof_vbytes_close(&f.b);
	return rc;
}

/* The bytes of file `rel` of root r at the view's seq that this thread
 * keeps open (see above): *out, owned by the thread, or -errno. */
static int nofh_get(cof_vfs *v, int r, const char *rel, nofh **out)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	nofh *c;

	pthread_once(&once, nofh_key_make);
	c = pthread_getspecific(nofh_key);
	if (!c || c->view != v->id || c->root != r || strcmp(c->rel, rel)) {
		nofh_drop(c);
		pthread_setspecific(nofh_key, NULL);
		if (!(c = calloc(1, sizeof *c)) || !(c->rel = strdup(rel))) {
			free(c);
			return -ENOMEM;
		}
		if (cof_vbytes_open(v, r, rel, NULL, &c->b)) {
			int e = errno == ENOENT ? -ENOENT : -EIO;
			free(c->rel);
			free(c);
			return e;
		}
		c->view = v->id;
		c->root = r;
		pthread_setspecific(nofh_key, c);
	}
	*out = c;
	return 0;
}

/* A read of file `path` with no handle (see above). */
static int read_nofh(cof_vfs *v, const char *path, char *buf, size_t size, off_t off)
{
	const char *rel;
	nofh *c;
	int r, k;
	ssize_t n = 0;

	if (cof_vop_split(v, path, &r, &rel) || r < 0)
		return -ENOENT;
	if ((k = read_layer(v, r, rel, buf, size, off, &n)) != 1)
		return k < 0 ? k : (int)n;
	if ((k = nofh_get(v, r, rel, &c)) != 0)
		return k;
	n = cof_vbytes_read(&c->b, buf, size, off);
	return n < 0 ? -errno : (int)n;
}

static int op_open(const char *path, struct fuse_file_info *fi)
{
	VIEW(v);
	int wr = (fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC);
	const char *rel;
	struct stat st;
	vfile *f;
	int r, k, rc = 0;

	if (cof_vop_split(v, path, &r, &rel) || r < 0)
		return r < 0 ? -EISDIR : -ENOENT;
	if (no_open(v))
		return -ENOSYS; /* the kernel only opens what its lookup found */
	if (wr && (rc = cof_vop_writable(v, r, rel)))
		return rc;
	if (!(f = cof_vfile_new(v)))
		return -ENOMEM;
	if (!wr && (rc = open_read(v, r, rel, f)) != 1) {
		if (rc) {
			cof_vfile_free(v, f);
			return rc;
		}
		/* the volume's bytes at a seq never change: the page cache may
		 * keep them */
		fi->keep_cache = f->fd < 0 && !v->o.follow;
		fi->fh = (uint64_t)(uintptr_t)f;
		return 0;
	}
	rc = 0;
	if (wr)
		cof_vop_change_lock(v);
	else
		pthread_mutex_lock(&v->mu);
	k = cof_vop_what_is(v, r, rel, &st);
	if (k != 1 || !wr)
		rc = k == 2 ? -EISDIR : -ENOENT;
	else {
		vnode *n = file_for_write(v, r, rel, fi->flags & O_TRUNC, &rc);
		if (n && (f->fd = cof_layer_open(v, n->lid, O_RDWR)) < 0)
			rc = -errno;
		if (n && !rc && (fi->flags & O_TRUNC) && ftruncate(f->fd, 0) == 0) {
			n->dirty = 1;
			n->mtime = cof_now();
			f->wrote = 1;
		}
		f->n = n;
	}
	pthread_mutex_unlock(&v->mu);
	if (wr)
		pthread_mutex_unlock(&v->wmu);
	if (rc) {
		cof_vfile_free(v, f);
		return rc;
	}
	fi->fh = (uint64_t)(uintptr_t)f;
	return 0;
}

static int op_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	VIEW(v);
	const char *rel;
	vnode *n;
	vfile *f;
	int r, fd, rc;

	if (cof_vop_split(v, path, &r, &rel))
		return -ENOENT;
	if ((rc = cof_vop_writable(v, r, rel)))
		return rc;
	if (cof_vop_hidden(v, r, rel, 0))
		return -EACCES; /* an excluded name cannot be made either */
	if (!(f = cof_vfile_new(v)))
		return -ENOMEM;
	cof_vop_change_lock(v);
	n = cof_vnode_get(v, r, rel);
	int64_t lid = n ? cof_layer_new(v, &fd) : -1;
	if (lid < 0) {
		rc = -errno;
		cof_vop_change_unlock(v);
		cof_vfile_free(v, f);
		return rc;
	}
	cof_vnode_set(v, n, N_FILE);
	n->lid = lid;
	n->mode = mode & 0777;
	n->mtime = cof_now();
	n->dirty = 1;
	n->sha[0] = '\0';
	n->ctype[0] = '\0'; /* (what was here may have been a link) */
	n->size = 0;
	cof_vop_change_unlock(v);
	if (no_open(v)) {
		/* with no OPEN the kernel sends no RELEASE either, also for
		 * what create opened: a handle here would never be freed, so
		 * the file is written by path like any other */
		close(fd);
		cof_vfile_free(v, f);
		fi->fh = 0;
		return 0;
	}
	f->fd = fd;
	f->n = n;
	f->wrote = 1;
	fi->fh = (uint64_t)(uintptr_t)f;
	return 0;
}

static int op_read(const char *path, char *buf, size_t size, off_t off,
		   struct fuse_file_info *fi)
{
	vfile *f = (vfile *)(uintptr_t)fi->fh;
	ssize_t n;

	if (!f) {
		VIEW(v);
		return read_nofh(v, path, buf, size, off);
	}
	n = f->fd >= 0 ? pread(f->fd, buf, size, off) : cof_vbytes_read(&f->b, buf, size, off);

	return n < 0 ? -errno : (int)n;
}

#define READ_AHEAD (4 << 20) /* how far op_read_buf asks the disk ahead */

/* A read whose bytes a local file holds, for the kernel to take by splice
 * (lowlevel.c replies with fuse_reply_data): the file goes from its page
 * cache through a pipe into the mount's, with no copy through our memory,
 * which halved a cold 1 GiB read's CPU here. Else *bufp holds the bytes
 * read into memory (from the bytes found here, or op_read for what the
 * layer holds). Both free()d by the caller (mem when not IS_FD). */
static int op_read_buf(const char *path, struct fuse_bufvec **bufp, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	vfile *f = (vfile *)(uintptr_t)fi->fh;
	const cof_vbytes *b = NULL;
	struct fuse_bufvec *bv = malloc(sizeof *bv);
	int fd = -1, rc;

	if (!bv)
		return -ENOMEM;
	*bufp = bv;
	*bv = (struct fuse_bufvec)FUSE_BUFVEC_INIT(0);
	if (f) {
		fd = f->fd >= 0 ? f->fd : cof_vbytes_fd(b = &f->b);
	} else {
		VIEW(v);
		const char *rel;
		nofh *c;
		int r;

		if (cof_vop_split(v, path, &r, &rel) || r < 0)
			return -ENOENT;
		/* what the layer holds is read as before (see read_layer) */
		pthread_mutex_lock(&v->mu);
		int layered = v->layer >= 0 && cof_vnode_find(v, r, rel);
		pthread_mutex_unlock(&v->mu);
		if (!layered) {
			if ((rc = nofh_get(v, r, rel, &c)) != 0)
				return rc;
			fd = cof_vbytes_fd(b = &c->b);
		}
	}
	if (fd >= 0) {
		/* a short splice at the end costs libfuse a second read: ask
		 * for no more than the content holds */
		if (b && off >= b->size)
			size = 0;
		else if (b && (int64_t)size > b->size - off)
			size = (size_t)(b->size - off);
		if (size && b && off % READ_AHEAD < (off_t)size && b->size > off + READ_AHEAD)
			/* the kernel's reads come a few at a time from several
			 * threads, in no strict order, which the disk's read-ahead
			 * can take for random reads: keep the next window coming */
			posix_fadvise(fd, off - off % READ_AHEAD + READ_AHEAD, READ_AHEAD,
				      POSIX_FADV_WILLNEED);
		if (size) {
			bv->buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
			bv->buf[0].fd = fd;
			bv->buf[0].pos = off;
			bv->buf[0].size = size;
			return 0;
		}
	}
	if (!(bv->buf[0].mem = malloc(size ? size : 1)))
		return -ENOMEM;
	if (!size)
		rc = 0;
	else if (b) { /* the bytes found above (a handle's, or this thread's) */
		ssize_t k = cof_vbytes_read(b, bv->buf[0].mem, size, off);
		rc = k < 0 ? -errno : (int)k;
	} else
		rc = op_read(path, bv->buf[0].mem, size, off, fi);
	bv->buf[0].size = rc > 0 ? (size_t)rc : 0;
	return rc < 0 ? rc : 0;
}

/* A write with no handle (a call's view, see no_open): to the path's layer
 * file, copied up from the volume first. */
static int write_nofh(cof_vfs *v, const char *path, const char *buf, size_t size, off_t off)
{
	const char *rel;
	vnode *n;
	ssize_t k = -1;
	int r, rc, fd = -1;

	if (cof_vop_split(v, path, &r, &rel))
		return -ENOENT;
	if ((rc = cof_vop_writable(v, r, rel)))
		return rc;
	if (cof_vop_hidden(v, r, rel, 0))
		return -ENOENT;
	if (off + (int64_t)size > v->roots[r].v.vol.ceiling)
		return -EFBIG;
	cof_vop_change_lock(v);
	if ((n = file_for_write(v, r, rel, 0, &rc)) != NULL &&
	    (fd = cof_layer_open(v, n->lid, O_WRONLY)) < 0)
		rc = -errno;
	if (fd >= 0) {
		/* marked before the bytes land: a commit that reads the layer
		 * meanwhile keeps the file (the kernel's own order of writes) */
		n->dirty = 1;
		n->mtime = cof_now();
	}
	cof_vop_change_unlock(v);
	if (fd >= 0) { /* the bytes go to the layer file with mu dropped */
		k = pwrite(fd, buf, size, off);
		rc = k < 0 ? -errno : 0;
		close(fd);
	}
	return rc ? rc : (int)k;
}

static int op_write(const char *path, const char *buf, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	VIEW(v);
	vfile *f = (vfile *)(uintptr_t)fi->fh;
	ssize_t n;

	if (!f && no_open(v) && v->layer >= 0)
		return write_nofh(v, path, buf, size, off);
	if (!f || !f->n)
		return -EBADF; /* no handle: a read-only view (see no_open) */
	/* no file may outgrow its volume's ceiling (a sparse one included:
	 * the commit stores every byte) */
	if (off + (int64_t)size > v->roots[f->n->root].v.vol.ceiling)
		return -EFBIG;
	n = pwrite(f->fd, buf, size, off);
	if (n < 0)
		return -errno;
	cof_vop_change_lock(v); /* (after a landing of it under way) */
	f->wrote = 1;
	f->n->dirty = 1;
	f->n->mtime = cof_now();
	cof_vop_change_unlock(v);
	return (int)n;
}

/* DIRECT: a file closed after writing is one version (EIO on a conflict). */
static int op_flush(const char *path, struct fuse_file_info *fi)
{
	VIEW(v);
	vfile *f = (vfile *)(uintptr_t)fi->fh;
	int rc = 0;

	if (v->o.way != COF_VIEW_DIRECT || !f || !f->n || !f->wrote)
		return 0;
	cof_vop_change_lock(v);
	if (f->n->dirty && f->n->kind == N_FILE)
		rc = cof_view_land_file(v, f->n);
	f->wrote = 0;
	cof_vop_change_unlock(v);
	return rc;
}

vfile *cof_vfile_new(cof_vfs *v)
{
	vfile *f = calloc(1, sizeof *f);

	if (!f)
		return NULL;
	f->fd = -1;
	f->b.r = NULL;
	pthread_mutex_lock(&v->files_mu);
	f->next = v->files;
	if (v->files)
		v->files->prev = f;
	v->files = f;
	pthread_mutex_unlock(&v->files_mu);
	return f;
}

void cof_vfile_free(cof_vfs *v, vfile *f)
{
	pthread_mutex_lock(&v->files_mu);
	if (f->prev)
		f->prev->next = f->next;
	else
		v->files = f->next;
	if (f->next)
		f->next->prev = f->prev;
	pthread_mutex_unlock(&v->files_mu);
	if (f->fd >= 0)
		close(f->fd);
	cof_vbytes_close(&f->b);
	free(f);
}

void cof_vfile_free_all(cof_vfs *v)
{
	while (v->files)
		cof_vfile_free(v, v->files);
}

static int op_release(const char *path, struct fuse_file_info *fi)
{
	VIEW(v);
	vfile *f = (vfile *)(uintptr_t)fi->fh;

	if (f)
		cof_vfile_free(v, f);
	return 0;
}

static int op_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	vfile *f = (vfile *)(uintptr_t)fi->fh;

	/* the layer is the call's own until it ends: nothing to make durable */
	(void)f;
	return 0;
}

static int op_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	VIEW(v);
	const char *rel;
	vnode *n;
	int r, rc, fd;

	if (cof_vop_split(v, path, &r, &rel))
		return -ENOENT;
	if ((rc = cof_vop_writable(v, r, rel)))
		return rc;
	if (size > v->roots[r].v.vol.ceiling)
		return -EFBIG;
	cof_vop_change_lock(v);
	n = file_for_write(v, r, rel, size == 0, &rc);
	if (n) {
		fd = cof_layer_open(v, n->lid, O_RDWR);
		rc = fd < 0 || ftruncate(fd, size) ? -errno : 0;
		if (fd >= 0)
			close(fd);
		n->dirty = 1;
		n->mtime = cof_now();
		if (fi && fi->fh)
			((vfile *)(uintptr_t)fi->fh)->wrote = 1;
		if (!rc && v->o.way == COF_VIEW_DIRECT && !fi)
			rc = cof_view_land_file(v, n);
	}
	cof_vop_change_unlock(v);
	return rc;
}

static int op_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	VIEW(v);
	const char *rel;
	struct stat st;
	vnode *n;
	int r, rc, k;

	if ((rc = cof_vop_change_begin(v, path, &r, &rel, &k, &st)))
		return rc;
	if (!k)
		rc = -ENOENT;
	else if (k == 1 && (n = cof_vnode_get(v, r, rel)))
		n->mode = mode & 0777; /* kept in the layer only: volumes keep no modes */
	cof_vop_change_unlock(v);
	return rc;
}

static int op_utimens(const char *path, const struct timespec tv[2],
		      struct fuse_file_info *fi)
{
	VIEW(v);
	const char *rel;
	struct stat st;
	vnode *n;
	int r, rc, k;

	if ((rc = cof_vop_change_begin(v, path, &r, &rel, &k, &st)))
		return rc;
	if (!k)
		rc = -ENOENT;
	else if (k == 1 && (n = cof_vnode_get(v, r, rel)))
		n->mtime = tv[1].tv_nsec == UTIME_NOW ? cof_now()
			   : tv[1].tv_nsec == UTIME_OMIT ? n->mtime : tv[1].tv_sec;
	cof_vop_change_unlock(v);
	return rc;
}

static int op_statfs(const char *path, struct statvfs *sv)
{
	VIEW(v);
	const char *rel;
	int r;
	int64_t cap = 0, used = 0;

	if (cof_vop_split(v, path, &r, &rel) == 0 && r >= 0) {
		cap = v->roots[r].v.vol.ceiling;
		used = v->roots[r].v.vol.bytes;
	}
	memset(sv, 0, sizeof *sv);
	sv->f_bsize = sv->f_frsize = 4096;
	sv->f_blocks = (fsblkcnt_t)(cap / 4096);
	sv->f_bfree = sv->f_bavail = (fsblkcnt_t)(cap > used ? (cap - used) / 4096 : 0);
	sv->f_files = 1000000;
	sv->f_ffree = 1000000;
	sv->f_namemax = 255;
	return 0;
}

/* A symlink is a file of type COF_SYMLINK_TYPE whose bytes are its target
 * (as git stores one): made in the layer like a file (`coffer mount`: landed
 * at once), committed with that type. The view never follows one: the
 * kernel does, within the caller's own root. */
static int op_symlink(const char *target, const char *path)
{
	VIEW(v);
	const char *rel;
	struct stat st;
	cof_err e = {0};
	size_t len = strlen(target);
	vnode *n;
	int r, rc, k, fd = -1;

	if (cof_symlink_check(target, len, &e)) {
		cof_err_clear(&e);
		return len > COF_SYMLINK_MAX ? -ENAMETOOLONG : -EINVAL;
	}
	if ((rc = cof_vop_change_begin(v, path, &r, &rel, &k, &st)))
		return rc;
	if (k)
		rc = -EEXIST;
	else if (cof_vop_hidden(v, r, rel, 0))
		rc = -EACCES;
	else if (!(n = cof_vnode_get(v, r, rel)))
		rc = -errno;
	else {
		int64_t lid = cof_layer_new(v, &fd);
		if (lid < 0 || write(fd, target, len) != (ssize_t)len) {
			rc = errno ? -errno : -EIO;
			if (lid > 0) {
				char name[32];
				snprintf(name, sizeof name, "%lld", (long long)lid);
				unlinkat(v->layer, name, 0);
			}
		} else {
			cof_vnode_set(v, n, N_FILE);
			n->lid = lid;
			n->mode = 0777;
			n->mtime = cof_now();
			n->dirty = 1;
			n->sha[0] = '\0';
			n->size = (int64_t)len;
			snprintf(n->ctype, sizeof n->ctype, "%s", COF_SYMLINK_TYPE);
			if (v->o.way == COF_VIEW_DIRECT)
				rc = cof_view_land_file(v, n);
		}
		if (fd >= 0)
			close(fd);
	}
	cof_vop_change_unlock(v);
	return rc;
}

/* Hard links: a volume's file is at one path. */
static int op_link(const char *from, const char *to)
{
	return -EPERM;
}

/* The target of a symlink: its bytes (the layer's, or the volume's). */
static int op_readlink(const char *path, char *buf, size_t size)
{
	VIEW(v);
	const char *rel;
	struct stat st;
	vfile f = {.fd = -1};
	ssize_t k;
	int r, rc;

	if (cof_vop_split(v, path, &r, &rel) || r < 0)
		return -ENOENT;
	pthread_mutex_lock(&v->mu);
	rc = cof_vop_what_is(v, r, rel, &st);
	pthread_mutex_unlock(&v->mu);
	if (rc != 1 || !S_ISLNK(st.st_mode))
		return rc ? -EINVAL : -ENOENT;
	if ((rc = open_read(v, r, rel, &f)) != 0)
		return rc == 1 ? -ENOENT : rc;
	k = f.fd >= 0 ? pread(f.fd, buf, size - 1, 0) : cof_vbytes_read(&f.b, buf, size - 1, 0);
	rc = k < 0 ? -errno : 0;
	if (f.fd >= 0)
		close(f.fd);
	cof_vbytes_close(&f.b);
	if (!rc)
		buf[k] = '\0';
	return rc;
}

static void *op_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	cof_vfs *v = cof_vop_ctx()->private_data;
	/* a view at a seq never changes under its readers, only through its
	 * own writes, which go through the kernel: it may cache entries,
	 * attributes and absences for long; a view that follows the volume
	 * for a second */
	double t = v->o.follow ? 1.0 : 3600.0;

	/* listings carry attributes: `find`, `ls -l`, `git status` need no
	 * lookup per entry */
	if (conn->capable & FUSE_CAP_READDIRPLUS) {
		conn->want |= FUSE_CAP_READDIRPLUS;
		conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
	}
	/* reads of local files are spliced (op_read_buf) */
	if (conn->capable & FUSE_CAP_SPLICE_WRITE)
		conn->want |= FUSE_CAP_SPLICE_WRITE;
	/* with no OPEN, an O_TRUNC must come as a truncate (setattr) */
	if (no_open(v))
		conn->want &= ~FUSE_CAP_ATOMIC_O_TRUNC;
	cfg->entry_timeout = t;
	cfg->attr_timeout = t;
	cfg->negative_timeout = t;
	cfg->kernel_cache = 0;
	cfg->use_ino = 0;
	cfg->hard_remove = 1;
	return v;
}

/* The ops of a view. One where nothing lands on close (a call's, and any
 * view that hands out no handles, see no_open) leaves flush out, so the
 * kernel stops sending it: one round trip less per close. */
const struct fuse_operations cof_view_ops = {
	.init = op_init,
	.getattr = op_getattr,
	.opendir = cof_vop_opendir,
	.readdir = cof_vop_readdir,
	.releasedir = cof_vop_releasedir,
	.open = op_open,
	.create = op_create,
	.read = op_read,
	.read_buf = op_read_buf,
	.write = op_write,
	.flush = op_flush,
	.release = op_release,
	.fsync = op_fsync,
	.truncate = op_truncate,
	.unlink = cof_vop_unlink,
	.mkdir = cof_vop_mkdir,
	.rmdir = cof_vop_rmdir,
	.rename = cof_vop_rename,
	.chmod = op_chmod,
	.utimens = op_utimens,
	.statfs = op_statfs,
	.symlink = op_symlink,
	.link = op_link,
	.readlink = op_readlink,
};

static struct fuse_operations call_ops;

static void call_ops_init(void)
{
	call_ops = cof_view_ops;
	call_ops.flush = NULL;
}

const struct fuse_operations *cof_view_ops_for(const cof_vfs *v)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	if (v->o.way == COF_VIEW_DIRECT && !no_open(v))
		return &cof_view_ops;
	pthread_once(&once, call_ops_init);
	return &call_ops;
}
