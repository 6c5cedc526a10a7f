/*
 * ops.h — what ops.c (lookups, files) and ops_tree.c (listings, tree
 * changes) share.
 */
#ifndef COF_VIEW_OPS_H
#define COF_VIEW_OPS_H

#define FUSE_USE_VERSION 31
#include <fuse.h>
#include "view/view_int.h"

/* The request the calling thread serves (lowlevel.c): the view (as
 * private_data) and the caller's uid, gid, pid. */
struct fuse_context *cof_vop_ctx(void);
/* The view an operation runs on. */
#define VIEW(v) cof_vfs *v = cof_vop_ctx()->private_data
/* Whether view v serves files with no open (ops.c, "opens that cost
 * nothing"). */
int cof_vop_no_open(const cof_vfs *v);

/* An open file: a layer file's fd, or the volume's bytes. */
typedef struct vfile {
	int fd;                 /* a layer file, or -1 */
	cof_vbytes b;           /* else the volume's bytes */
	vnode *n;               /* the layer's node when open for writing */
	int wrote;
	struct vfile *prev, *next; /* the view's open files (v->files) */
} vfile;

/* A new open file of view v (fd -1), on v's list of open files, or NULL. */
vfile *cof_vfile_new(cof_vfs *v);
/* Closes f and takes it off v's list. */
void cof_vfile_free(cof_vfs *v, vfile *f);

/* Splits a FUSE path into a root and the path inside it ("" = its top);
 * *root = -1 for the top of a view of several roots. 0 or -ENOENT. */
int cof_vop_split(cof_vfs *v, const char *fp, int *root, const char **rel);
/* True when `rel` of root r is hidden by the root's exclusions. */
int cof_vop_hidden(cof_vfs *v, int r, const char *rel, int is_dir);
/* 0 when `rel` of root r may be written: -EROFS (a read-only root or top
 * folder), -ENAMETOOLONG or -EINVAL (not a valid volume path) otherwise. */
int cof_vop_writable(cof_vfs *v, int r, const char *rel);
void cof_vop_dir_attr(cof_vfs *v, int r, struct stat *st);
void cof_vop_file_attr(cof_vfs *v, int r, int64_t size, int64_t mtime, mode_t mode,
		       struct stat *st);
/* The inode number of `rel` of root r (r < 0: the top of several roots):
 * a hash of the volume's id and the volume path, so the same in every
 * mount and call (git's stat cache matches; docs/design.md, Views, "Inode
 * numbers"). Not the kernel's node id, which names a node of one mount. */
/* The attributes of a symlink whose target is `size` bytes. */
void cof_vop_link_attr(cof_vfs *v, int r, int64_t size, int64_t mtime, struct stat *st);
uint64_t cof_vop_ino(cof_vfs *v, int r, const char *rel);
/* What is at `rel` of root r: 1 file or symlink (attributes in *st, its
 * st_ino cof_vop_ino's; S_ISLNK tells a link), 2 folder, 0 nothing. Under mu. */
int cof_vop_what_is(cof_vfs *v, int r, const char *rel, struct stat *st);
/* The start of a change to what is at FUSE path `path`: split, refused where it
 * may not be written (cof_vop_writable), then the change lock taken
 * (cof_vop_change_lock) and what is there in *k (cof_vop_what_is). 0 with
 * both held (cof_vop_change_unlock lets them go), or a -errno without. */
int cof_vop_change_begin(cof_vfs *v, const char *path, int *r, const char **rel, int *k,
			 struct stat *st);

/* Takes v->wmu then v->mu: what every change of the nodes holds
 * (view_int.h, wmu). */
void cof_vop_change_lock(cof_vfs *v);
void cof_vop_change_unlock(cof_vfs *v);
/* Drops mu for a change's I/O (wmu still held: no other change runs) and
 * takes it back. */
void cof_vop_io_begin(cof_vfs *v);
void cof_vop_io_end(cof_vfs *v);

int cof_vop_opendir(const char *path, struct fuse_file_info *fi);
int cof_vop_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
		    struct fuse_file_info *fi, enum fuse_readdir_flags flags);
int cof_vop_releasedir(const char *path, struct fuse_file_info *fi);
/* The content (sha-256 hex) of the entry the listing of `fi` offers its
 * fill now, when it is a file of the volume as listed; else NULL (a
 * folder, a layer's entry). */
const char *cof_vop_listed_sha(const struct fuse_file_info *fi);
int cof_vop_unlink(const char *path);
int cof_vop_mkdir(const char *path, mode_t mode);
int cof_vop_rmdir(const char *path);
int cof_vop_rename(const char *from, const char *to, unsigned int flags);

#endif
