/*
 * ops.c — the file system operations of a view (libfuse's high-level API):
 * lookups and listings merge the layer over the volume at its seq; opens of
 * unchanged files read the volume's content by range; writes copy the file
 * up into the layer first. Not supported, by design (docs/design.md):
 * symlinks and hard links (EPERM), extended attributes (ENOTSUP); locks are
 * the kernel's own, local to the mount.
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

#define VIEW(v) cof_vfs *v = fuse_get_context()->private_data

/* An open file: the fd of its bytes (the volume's content or a layer file). */
typedef struct vfile {
	int fd;                 /* a layer file, or -1 */
	cof_vbytes b;           /* else the volume's bytes */
	vnode *n;               /* the layer's node when open for writing */
	int wrote;
} vfile;

/* Splits a FUSE path into a root and the path inside it ("" = its top).
 * *root = -1 for the top of a view of several roots. 0 or -ENOENT. */
static int split(cof_vfs *v, const char *fp, int *root, const char **rel)
{
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
static int hidden(cof_vfs *v, int r, const char *rel, int is_dir)
{
	char vp[COF_PATH_MAX + 1];
	const cof_view_root *c = &v->roots[r].cfg;

	if (!c->excluded || !*rel)
		return 0;
	cof_vbase_vpath(&v->roots[r], rel, vp, sizeof vp);
	return c->excluded(c->excl_ctx, vp, is_dir);
}

/* 0 when `rel` of root r may be written, else -EROFS. */
static int writable(cof_vfs *v, int r, const char *rel)
{
	const cof_view_root *c = &v->roots[r].cfg;

	if (r < 0 || !c->rw || v->layer < 0 || !*rel)
		return -EROFS;
	for (int i = 0; c->ro_tops && c->ro_tops[i]; i++) {
		size_t k = strlen(c->ro_tops[i]);
		if (!strncmp(rel, c->ro_tops[i], k) && (rel[k] == '/' || !rel[k]))
			return -EROFS;
	}
	return 0;
}

static void dir_attr(cof_vfs *v, int r, struct stat *st)
{
	struct fuse_context *cx = fuse_get_context();

	memset(st, 0, sizeof *st);
	st->st_mode = S_IFDIR | (r >= 0 && v->roots[r].cfg.rw ? 0755 : 0555);
	st->st_nlink = 2;
	st->st_uid = cx->uid;
	st->st_gid = cx->gid;
	st->st_mtime = r >= 0 ? v->roots[r].v.vol.created_at : 0;
}

static void file_attr(cof_vfs *v, int r, int64_t size, int64_t mtime, mode_t mode,
		      struct stat *st)
{
	struct fuse_context *cx = fuse_get_context();

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

/* What is at `rel` of root r: 1 file (attributes in *st), 2 folder, 0
 * nothing. Under mu. */
static int what_is(cof_vfs *v, int r, const char *rel, struct stat *st)
{
	vnode *n;
	cof_entry *e;
	int rc;

	if (!*rel) {
		dir_attr(v, r, st);
		return 2;
	}
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
		file_attr(v, r, size, n->mtime, n->mode, st);
		return hidden(v, r, rel, 0) ? 0 : 1;
	}
	if (n && n->kind == N_DIR) {
		dir_attr(v, r, st);
		return hidden(v, r, rel, 1) ? 0 : 2;
	}
	if (!n) {
		if (!(e = malloc(sizeof *e)))
			return 0;
		rc = cof_vbase_file(v, r, rel, e);
		if (rc == 1)
			file_attr(v, r, e->size, e->updated_at, 0644, st);
		free(e);
		if (rc == 1)
			return hidden(v, r, rel, 0) ? 0 : 1;
	}
	if (cof_vnode_under(v, r, rel) || cof_vbase_dir(v, r, rel)) {
		dir_attr(v, r, st);
		return hidden(v, r, rel, 1) ? 0 : 2;
	}
	return 0;
}

static int op_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	VIEW(v);
	const char *rel;
	int r, k;

	if (split(v, path, &r, &rel))
		return -ENOENT;
	if (r < 0) {
		dir_attr(v, -1, st);
		return 0;
	}
	pthread_mutex_lock(&v->mu);
	k = what_is(v, r, rel, st);
	pthread_mutex_unlock(&v->mu);
	return k ? 0 : -ENOENT;
}

/* ------------------------------------------------------------ listing */

#define PAGE 256

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
	vchild last;
	off_t off;              /* entries given so far ("." and ".." count) */
	char pending[256];      /* the entry a full buffer did not take */
	struct stat pending_st; /* its attributes (readdirplus) */
	int has_pending;
} vdir;

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Adds `name` (len bytes) to the folder's layer names unless there. */
static void name_add(vdir *d, const char *name, size_t len, int shown)
{
	for (size_t i = 0; i < d->nnames; i++)
		if (strlen(d->names[i]) == len && !strncmp(d->names[i], name, len)) {
			d->shown[i] |= (unsigned char)shown;
			return;
		}
	char **nn = realloc(d->names, (d->nnames + 1) * sizeof *nn);
	unsigned char *ns = realloc(d->shown, d->nnames + 1);
	if (nn)
		d->names = nn;
	if (ns)
		d->shown = ns;
	if (!nn || !ns || !(d->names[d->nnames] = strndup(name, len)))
		return;
	d->shown[d->nnames++] = (unsigned char)shown;
}

/* The layer's entries of the folder (under mu). */
static void layer_names(cof_vfs *v, vdir *d)
{
	size_t len = strlen(d->rel);

	for (vnode *n = v->nodes; n; n = n->next) {
		const char *p = n->path;
		if (n->root != d->root)
			continue;
		if (len && (strncmp(p, d->rel, len) || p[len] != '/'))
			continue;
		p += len ? len + 1 : 0;
		const char *slash = strchr(p, '/');
		if (slash)
			name_add(d, p, (size_t)(slash - p), n->kind != N_GONE);
		else
			name_add(d, p, strlen(p), n->kind != N_GONE);
	}
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
				if (n && n->kind != N_GONE && what_is(v, d->root, sub, &st))
					d->shown[i] = 1;
			}
		}
	if (d->nnames) {
		/* sort names and their flags together */
		char **tmp = malloc(d->nnames * sizeof *tmp);
		if (tmp) {
			for (size_t i = 0; i < d->nnames; i++) {
				size_t k = strlen(d->names[i]);
				tmp[i] = malloc(k + 2);
				if (!tmp[i])
					continue;
				tmp[i][0] = (char)(d->shown[i] ? '1' : '0');
				memcpy(tmp[i] + 1, d->names[i], k + 1);
				free(d->names[i]);
			}
			qsort(tmp, d->nnames, sizeof *tmp, name_cmp);
			for (size_t i = 0; i < d->nnames; i++) {
				d->shown[i] = tmp[i][0] == '1';
				d->names[i] = strdup(tmp[i] + 1);
				free(tmp[i]);
			}
			free(tmp);
		}
	}
}

static int in_layer(const vdir *d, const char *name)
{
	for (size_t i = 0; i < d->nnames; i++)
		if (d->names[i] && !strcmp(d->names[i], name))
			return 1;
	return 0;
}

static int op_opendir(const char *path, struct fuse_file_info *fi)
{
	VIEW(v);
	const char *rel;
	struct stat st;
	vdir *d;
	int r, k = 2;

	if (split(v, path, &r, &rel))
		return -ENOENT;
	if (r >= 0) {
		pthread_mutex_lock(&v->mu);
		k = what_is(v, r, rel, &st);
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
	d->npage = d->ipage = d->done = d->started = 0;
	d->off = 0;
	d->has_pending = 0;
}

/* The next entry of the folder: 1 with its name and attributes, 0 at the
 * end. */
static int vdir_next(cof_vfs *v, vdir *d, char *name, size_t namesz, struct stat *st)
{
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
		dir_attr(v, (int)d->inames, st);
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
		k = what_is(v, d->root, sub, st);
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
			if (cof_vbase_children(v, d->root, d->rel, d->npage ? &d->last : NULL,
					       d->page, PAGE, &d->npage) || d->npage == 0) {
				d->done = 1;
				d->npage = 0;
				return 0;
			}
			d->last = d->page[d->npage - 1];
			d->ipage = 0;
			if (d->npage < PAGE) /* the walk ran out of rows */
				d->done = 1;
		}
		vchild *c = &d->page[d->ipage++];
		if (in_layer(d, c->name))
			continue;
		char sub[COF_PATH_MAX + 1];
		snprintf(sub, sizeof sub, "%s%s%s", d->rel, *d->rel ? "/" : "", c->name);
		if (hidden(v, d->root, sub, c->dir))
			continue;
		snprintf(name, namesz, "%s", c->name);
		if (c->dir)
			dir_attr(v, d->root, st);
		else
			file_attr(v, d->root, c->e.size, c->e.updated_at, 0644, st);
		return 1;
	}
}

static int op_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
		      struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	VIEW(v);
	vdir *d = (vdir *)(uintptr_t)fi->fh;
	enum fuse_fill_dir_flags plus = flags & FUSE_READDIR_PLUS ? FUSE_FILL_DIR_PLUS : 0;
	struct stat st;

	if (off != d->off) { /* a seek back: list again from the start */
		vdir_reset(d);
		d->off = 2;
		while (d->off < off &&
		       vdir_next(v, d, d->pending, sizeof d->pending, &d->pending_st))
			d->off++;
		d->has_pending = 0;
		if (off < 2)
			d->off = off;
	}
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

static int op_releasedir(const char *path, struct fuse_file_info *fi)
{
	vdir *d = (vdir *)(uintptr_t)fi->fh;

	vdir_reset(d);
	free(d->page);
	free(d->rel);
	free(d);
	return 0;
}

/* ------------------------------------------------------------ files */

/* Copies the bytes of content `sha` into fd (a new layer file). 0 or -errno. */
static int copy_up(cof_vfs *v, const vnode *n, int fd)
{
	char buf[65536];
	cof_vbytes b;
	int64_t off = 0;
	ssize_t k = 0;

	/* a node of the layer with content known by hash was renamed: read
	 * that content; else the file at the view's seq */
	if (cof_vbytes_open(v, n->root, n->path, n->seen ? NULL : n->sha, &b))
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

/* The node of a file about to be written, with its bytes in the layer
 * (copied up from the volume unless `trunc`). Under mu. NULL with *rc. */
static vnode *file_for_write(cof_vfs *v, int r, const char *rel, int trunc, int *rc)
{
	vnode *n = cof_vnode_get(v, r, rel);
	int fd;

	*rc = 0;
	if (!n) {
		*rc = -ENOMEM;
		return NULL;
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
	if (!trunc && (*rc = copy_up(v, n, fd)) != 0) {
		close(fd);
		return NULL;
	}
	close(fd);
	n->lid = lid;
	return n;
}

/* Opens `rel` of root r for reading into f: 0, 1 when there is no such file
 * (the caller tells a folder from nothing), or -errno. One query for a file
 * the layer never touched. */
static int open_read(cof_vfs *v, int r, const char *rel, vfile *f)
{
	vnode *n;
	int rc = 0;

	if (hidden(v, r, rel, 0))
		return -ENOENT;
	pthread_mutex_lock(&v->mu);
	n = cof_vnode_find(v, r, rel);
	if (n && n->kind == N_FILE && n->lid > 0) {
		if ((f->fd = cof_layer_open(v, n->lid, O_RDONLY)) < 0)
			rc = -errno;
	} else if (n && n->kind == N_FILE) {
		if (cof_vbytes_open(v, r, rel, n->seen ? NULL : n->sha, &f->b))
			rc = -EIO;
	} else if (n)
		rc = n->kind == N_DIR ? -EISDIR : -ENOENT;
	pthread_mutex_unlock(&v->mu);
	if (!n && cof_vbytes_open(v, r, rel, NULL, &f->b))
		rc = errno == ENOENT ? 1 : -EIO; /* absent: a folder, or nothing */
	return rc;
}

static int op_open(const char *path, struct fuse_file_info *fi)
{
	VIEW(v);
	int wr = (fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC);
	const char *rel;
	struct stat st;
	vfile *f;
	int r, k, rc = 0;

	if (split(v, path, &r, &rel) || r < 0)
		return r < 0 ? -EISDIR : -ENOENT;
	if (wr && (rc = writable(v, r, rel)))
		return rc;
	if (!(f = calloc(1, sizeof *f)))
		return -ENOMEM;
	f->fd = -1;
	f->b.fd = -1;
	if (!wr && (rc = open_read(v, r, rel, f)) != 1) {
		if (rc) {
			free(f);
			return rc;
		}
		/* the volume's bytes at a seq never change: the page cache may
		 * keep them */
		fi->keep_cache = f->fd < 0 && !v->o.follow;
		fi->fh = (uint64_t)(uintptr_t)f;
		return 0;
	}
	rc = 0;
	pthread_mutex_lock(&v->mu);
	k = what_is(v, r, rel, &st);
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
	if (rc) {
		if (f->fd >= 0)
			close(f->fd);
		free(f);
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

	if (split(v, path, &r, &rel))
		return -ENOENT;
	if ((rc = writable(v, r, rel)))
		return rc;
	if (hidden(v, r, rel, 0))
		return -EACCES; /* an excluded name cannot be made either */
	if (!(f = calloc(1, sizeof *f)))
		return -ENOMEM;
	f->b.fd = -1;
	pthread_mutex_lock(&v->mu);
	n = cof_vnode_get(v, r, rel);
	int64_t lid = n ? cof_layer_new(v, &fd) : -1;
	if (lid < 0) {
		rc = n ? -errno : -ENOMEM;
		pthread_mutex_unlock(&v->mu);
		free(f);
		return rc;
	}
	n->kind = N_FILE;
	n->lid = lid;
	n->mode = mode & 0777;
	n->mtime = cof_now();
	n->dirty = 1;
	n->sha[0] = '\0';
	n->size = 0;
	pthread_mutex_unlock(&v->mu);
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
	ssize_t n = f->fd >= 0 ? pread(f->fd, buf, size, off)
				: cof_vbytes_read(&f->b, buf, size, off);

	return n < 0 ? -errno : (int)n;
}

static int op_write(const char *path, const char *buf, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	VIEW(v);
	vfile *f = (vfile *)(uintptr_t)fi->fh;
	ssize_t n;

	if (!f->n)
		return -EBADF;
	n = pwrite(f->fd, buf, size, off);
	if (n < 0)
		return -errno;
	pthread_mutex_lock(&v->mu);
	f->wrote = 1;
	f->n->dirty = 1;
	f->n->mtime = cof_now();
	pthread_mutex_unlock(&v->mu);
	return (int)n;
}

/* DIRECT: a file closed after writing is one version (EIO on a conflict). */
static int op_flush(const char *path, struct fuse_file_info *fi)
{
	VIEW(v);
	vfile *f = (vfile *)(uintptr_t)fi->fh;
	int rc = 0;

	if (v->o.way != COF_VIEW_DIRECT || !f->n || !f->wrote)
		return 0;
	pthread_mutex_lock(&v->mu);
	if (f->n->dirty && f->n->kind == N_FILE)
		rc = cof_view_land_file(v, f->n);
	f->wrote = 0;
	pthread_mutex_unlock(&v->mu);
	return rc;
}

static int op_release(const char *path, struct fuse_file_info *fi)
{
	vfile *f = (vfile *)(uintptr_t)fi->fh;

	if (f->fd >= 0)
		close(f->fd);
	cof_vbytes_close(&f->b);
	free(f);
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

	if (split(v, path, &r, &rel))
		return -ENOENT;
	if ((rc = writable(v, r, rel)))
		return rc;
	pthread_mutex_lock(&v->mu);
	n = file_for_write(v, r, rel, size == 0, &rc);
	if (n) {
		fd = cof_layer_open(v, n->lid, O_RDWR);
		rc = fd < 0 || ftruncate(fd, size) ? -errno : 0;
		if (fd >= 0)
			close(fd);
		n->dirty = 1;
		n->mtime = cof_now();
		if (fi)
			((vfile *)(uintptr_t)fi->fh)->wrote = 1;
		if (!rc && v->o.way == COF_VIEW_DIRECT && !fi)
			rc = cof_view_land_file(v, n);
	}
	pthread_mutex_unlock(&v->mu);
	return rc;
}

/* DIRECT: removes `rel` of root r from the volume now, conditional on the
 * version the view saw. 0 or -EIO. */
static int remove_now(cof_vfs *v, int r, vnode *n)
{
	char vp[COF_PATH_MAX + 1];
	cof_cond cond = {COF_COND_VERSION, n->seen};
	cof_err err = {0};
	json_t *out = NULL;
	int rc;

	if (v->o.way != COF_VIEW_DIRECT || n->seen == 0)
		return 0;
	cof_vbase_vpath(&v->roots[r], n->path, vp, sizeof vp);
	rc = cof_file_remove(v->o.st, v->o.org, v->roots[r].cfg.vol, vp, cond, &out, &err);
	if (rc && err.code != COF_ENOTFOUND) {
		fprintf(stderr, "coffer mount: cannot remove '%s': %s\n", vp, err.msg);
		cof_err_clear(&err);
		return -EIO;
	}
	cof_err_clear(&err);
	json_decref(out);
	return 0;
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

static int op_unlink(const char *path)
{
	VIEW(v);
	const char *rel;
	struct stat st;
	vnode *n;
	int r, rc;

	if (split(v, path, &r, &rel))
		return -ENOENT;
	if ((rc = writable(v, r, rel)))
		return rc;
	pthread_mutex_lock(&v->mu);
	if (what_is(v, r, rel, &st) != 1)
		rc = -ENOENT;
	else if (!(n = cof_vnode_get(v, r, rel)))
		rc = -ENOMEM;
	else if (!(rc = remove_now(v, r, n))) {
		drop_bytes(v, n);
		n->kind = N_GONE;
		n->dirty = v->o.way == COF_VIEW_CALL && n->seen > 0;
		if (v->o.way == COF_VIEW_DIRECT)
			n->seen = 0;
	}
	pthread_mutex_unlock(&v->mu);
	return rc;
}

static int op_mkdir(const char *path, mode_t mode)
{
	VIEW(v);
	const char *rel;
	struct stat st;
	vnode *n;
	int r, rc;

	if (split(v, path, &r, &rel))
		return -ENOENT;
	if ((rc = writable(v, r, rel)))
		return rc;
	if (hidden(v, r, rel, 1))
		return -EACCES;
	pthread_mutex_lock(&v->mu);
	if (what_is(v, r, rel, &st))
		rc = -EEXIST;
	else if (!(n = cof_vnode_get(v, r, rel)))
		rc = -ENOMEM;
	else {
		/* folders are implicit in a volume: an empty one lives in the
		 * layer only, until the view ends */
		n->kind = N_DIR;
		n->mode = mode & 0777;
		n->mtime = cof_now();
	}
	pthread_mutex_unlock(&v->mu);
	return rc;
}

/* True when folder `rel` of root r shows any entry. Under mu. */
static int dir_has_entries(cof_vfs *v, int r, const char *rel)
{
	return cof_vnode_under(v, r, rel) || cof_vbase_dir(v, r, rel);
}

static int op_rmdir(const char *path)
{
	VIEW(v);
	const char *rel;
	struct stat st;
	vnode *n;
	int r, rc, k;

	if (split(v, path, &r, &rel))
		return -ENOENT;
	if ((rc = writable(v, r, rel)))
		return rc;
	pthread_mutex_lock(&v->mu);
	k = what_is(v, r, rel, &st);
	if (k != 2)
		rc = k ? -ENOTDIR : -ENOENT;
	else if (dir_has_entries(v, r, rel))
		rc = -ENOTEMPTY;
	else if ((n = cof_vnode_find(v, r, rel)) && n->kind == N_DIR)
		n->kind = N_GONE;
	pthread_mutex_unlock(&v->mu);
	return rc;
}

/* Moves what node `from` holds to node `to` (both of one root): `to` gets
 * the bytes (a layer file, or known content), `from` is removed. */
static void node_move(cof_vfs *v, vnode *from, vnode *to)
{
	drop_bytes(v, to);
	to->kind = N_FILE;
	to->lid = from->lid;
	memcpy(to->sha, from->sha, sizeof to->sha);
	to->size = from->size;
	memcpy(to->ctype, from->ctype, sizeof to->ctype);
	to->mode = from->mode;
	to->mtime = from->mtime;
	to->dirty = v->o.way == COF_VIEW_CALL || from->dirty;
	from->lid = 0;
	from->kind = N_GONE;
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
	vnode *n = cof_vnode_find(w->v, w->root, rel);

	if (n) /* the layer's own nodes are taken from the layer */
		return 0;
	return moves_add(w->m, rel) ? 1 : 0;
}

/* Every file under folder `rel` (the volume's and the layer's). Under mu. */
static int files_under(cof_vfs *v, int r, const char *rel, moves *m)
{
	char vp[COF_PATH_MAX + 2];
	size_t len = strlen(rel);
	walk_ctx w = {v, r, v->roots[r].sublen ? v->roots[r].sublen + 1 : 0, m};
	cof_err err = {0};
	int rc;

	for (vnode *n = v->nodes; n; n = n->next)
		if (n->root == r && n->kind != N_GONE && !strncmp(n->path, rel, len) &&
		    n->path[len] == '/' && moves_add(m, n->path))
			return -ENOMEM;
	cof_vbase_vpath(&v->roots[r], rel, vp, sizeof vp - 1);
	strcat(vp, "/");
	rc = cof_meta_list(v->o.st->meta, v->roots[r].v.vno, v->o.follow ? -1
			   : v->roots[r].v.seq, vp, NULL, walk_add, &w, &err);
	cof_err_clear(&err);
	return rc ? -EIO : 0;
}

/* DIRECT: the move in the volume now, one change (a file or a folder). */
static int move_now(cof_vfs *v, int r, const char *from, const char *to, int64_t *seq)
{
	char a[COF_PATH_MAX + 1], b[COF_PATH_MAX + 1];
	cof_err err = {0};
	json_t *body, *out = NULL;
	int rc;

	cof_vbase_vpath(&v->roots[r], from, a, sizeof a);
	cof_vbase_vpath(&v->roots[r], to, b, sizeof b);
	body = json_pack("{s:s, s:s, s:b}", "from", a, "to", b, "overwrite", 1);
	rc = cof_file_move(v->o.st, v->o.org, v->roots[r].cfg.vol, body, &out, &err);
	json_decref(body);
	if (rc) {
		fprintf(stderr, "coffer mount: cannot move '%s' to '%s': %s\n", a, b, err.msg);
		cof_err_clear(&err);
		return -EIO;
	}
	*seq = json_integer_value(json_object_get(out, "seq"));
	json_decref(out);
	return 0;
}

/* Renames folder `from` to `to` of root r in the layer. Under mu. */
static int rename_dir(cof_vfs *v, int r, const char *from, const char *to, int64_t seq)
{
	size_t flen = strlen(from);
	moves m = {0};
	int rc = files_under(v, r, from, &m);

	for (size_t i = 0; i < m.n && !rc; i++) {
		char dst[COF_PATH_MAX + 1];
		snprintf(dst, sizeof dst, "%s%s", to, m.from[i] + flen);
		vnode *a = cof_vnode_get(v, r, m.from[i]);
		vnode *b = a ? cof_vnode_get(v, r, dst) : NULL;
		if (!b) {
			rc = -ENOMEM;
			break;
		}
		if (a->kind == N_DIR) {
			a->kind = N_GONE;
			b->kind = N_DIR;
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
		top->kind = N_GONE;
		vnode *b = cof_vnode_get(v, r, to);
		if (b)
			b->kind = N_DIR;
	}
	for (size_t i = 0; i < m.n; i++)
		free(m.from[i]);
	free(m.from);
	return rc;
}

static int op_rename(const char *from, const char *to, unsigned int flags)
{
	VIEW(v);
	const char *ra, *rb;
	struct stat st;
	int r, r2, rc, ka, kb;
	int64_t seq = 0;

	if (split(v, from, &r, &ra) || split(v, to, &r2, &rb))
		return -ENOENT;
	if (r != r2)
		return -EXDEV;
	if ((rc = writable(v, r, ra)) || (rc = writable(v, r, rb)))
		return rc;
	if (flags & RENAME_EXCHANGE)
		return -EINVAL;
	pthread_mutex_lock(&v->mu);
	ka = what_is(v, r, ra, &st);
	kb = what_is(v, r, rb, &st);
	if (!ka)
		rc = -ENOENT;
	else if (hidden(v, r, rb, ka == 2))
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
		rc = -ENOMEM;
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
	pthread_mutex_unlock(&v->mu);
	return rc;
}

static int op_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	VIEW(v);
	const char *rel;
	struct stat st;
	vnode *n;
	int r, rc, k;

	if (split(v, path, &r, &rel))
		return -ENOENT;
	if ((rc = writable(v, r, rel)))
		return rc;
	pthread_mutex_lock(&v->mu);
	k = what_is(v, r, rel, &st);
	if (!k)
		rc = -ENOENT;
	else if (k == 1 && (n = cof_vnode_get(v, r, rel)))
		n->mode = mode & 0777; /* kept in the layer only: volumes keep no modes */
	pthread_mutex_unlock(&v->mu);
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

	if (split(v, path, &r, &rel))
		return -ENOENT;
	if ((rc = writable(v, r, rel)))
		return rc;
	pthread_mutex_lock(&v->mu);
	k = what_is(v, r, rel, &st);
	if (!k)
		rc = -ENOENT;
	else if (k == 1 && (n = cof_vnode_get(v, r, rel)))
		n->mtime = tv[1].tv_nsec == UTIME_NOW ? cof_now()
			   : tv[1].tv_nsec == UTIME_OMIT ? n->mtime : tv[1].tv_sec;
	pthread_mutex_unlock(&v->mu);
	return rc;
}

static int op_statfs(const char *path, struct statvfs *sv)
{
	VIEW(v);
	const char *rel;
	int r;
	int64_t cap = 0, used = 0;

	if (split(v, path, &r, &rel) == 0 && r >= 0) {
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

/* Volumes hold files and implicit folders only. */
static int op_symlink(const char *target, const char *path)
{
	return -EPERM;
}

static int op_link(const char *from, const char *to)
{
	return -EPERM;
}

static int op_readlink(const char *path, char *buf, size_t size)
{
	return -EINVAL; /* nothing in a view is a link */
}

static void *op_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	cof_vfs *v = fuse_get_context()->private_data;
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
	cfg->entry_timeout = t;
	cfg->attr_timeout = t;
	cfg->negative_timeout = t;
	cfg->kernel_cache = 0;
	cfg->use_ino = 0;
	cfg->hard_remove = 1;
	return v;
}

/* The ops of a view; a call's (nothing lands on close) leaves flush out, so
 * the kernel stops sending it (one round trip less per close). */
const struct fuse_operations cof_view_ops = {
	.init = op_init,
	.getattr = op_getattr,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.releasedir = op_releasedir,
	.open = op_open,
	.create = op_create,
	.read = op_read,
	.write = op_write,
	.flush = op_flush,
	.release = op_release,
	.fsync = op_fsync,
	.truncate = op_truncate,
	.unlink = op_unlink,
	.mkdir = op_mkdir,
	.rmdir = op_rmdir,
	.rename = op_rename,
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

const struct fuse_operations *cof_view_ops_for(cof_view_way way)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	if (way == COF_VIEW_DIRECT)
		return &cof_view_ops;
	pthread_once(&once, call_ops_init);
	return &call_ops;
}
