/*
 * lowlevel.c — a view on libfuse's low-level API. The kernel names files by
 * node id; the view's operations (ops.c, ops_tree.c) take paths. This file
 * is the seam between them: an inode table (node id <-> parent + name,
 * lookup counts, forgets; unlink, rmdir and rename keep it in step) turns
 * each request into the path the path-based operations already take, so
 * their logic (layer, exclusions, modes, commit) stays where it is. What
 * the high-level API could not give: the node ids, so a folder's small
 * files can be put into the page cache as it is listed (prefetch.c).
 *
 * Node ids are never reused within a mount (a 64-bit counter), so every
 * node has generation 1: the kernel can never confuse a forgotten node with
 * a new one.
 */
#define FUSE_USE_VERSION 31
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <fuse_lowlevel.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include "view/lowlevel.h"
#include "view/ops.h"

/* The request a thread serves: what the path-based operations see as
 * cof_vop_ctx() (the view, and the caller's uid, gid and pid). */
static __thread struct fuse_context cur;

struct fuse_context *cof_vop_ctx(void)
{
	return &cur;
}

/* ------------------------------------------------------- the requests */

void cof_vll_enter(cof_vll *ll, const struct fuse_context *cx)
{
	cur = *cx;
	cur.private_data = ll->v;
}

cof_vll *cof_vll_begin(fuse_req_t req)
{
	cof_vll *ll = fuse_req_userdata(req);
	const struct fuse_ctx *c = fuse_req_ctx(req);

	cur.private_data = ll->v;
	cur.uid = c->uid;
	cur.gid = c->gid;
	cur.pid = c->pid;
	cur.umask = c->umask;
	return ll;
}

/* Replies with the entry of `name` in folder `parent` (just made, or
 * looked up): its attributes by path, a node for it, or the absence (an
 * entry of id 0 the kernel keeps for the negative timeout). */
static void reply_entry_of(fuse_req_t req, cof_vll *ll, fuse_ino_t parent, const char *name,
			   struct fuse_file_info *fi)
{
	struct fuse_entry_param e;
	char *path = cof_vll_path(ll, parent, name);
	int rc;

	memset(&e, 0, sizeof e);
	if (!path) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	rc = ll->ops->getattr(path, &e.attr, NULL);
	free(path);
	if (rc == -ENOENT && !fi && ll->neg_t > 0) {
		e.entry_timeout = ll->neg_t;
		fuse_reply_entry(req, &e);
		return;
	}
	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	pthread_mutex_lock(&ll->mu);
	cof_lnode *p = cof_lino_find(ll, parent), *n = p ? cof_lino_ref(ll, p, name) : NULL;
	if (n) {
		e.ino = n->ino; /* (st_ino is the file's own: cof_vop_ino) */
		n->file = S_ISREG(e.attr.st_mode);
		COF_VHOOK(ll, on_seen, ll, n);
	}
	pthread_mutex_unlock(&ll->mu);
	if (!n) {
		fuse_reply_err(req, p ? ENOMEM : ENOENT);
		return;
	}
	e.generation = 1;
	e.entry_timeout = ll->entry_t;
	e.attr_timeout = ll->attr_t;
	/* a reply the caller gave up on (interrupted) gave the kernel no
	 * reference, and a create of it leaves no handle */
	if ((fi ? fuse_reply_create(req, &e, fi) : fuse_reply_entry(req, &e)) == -ENOENT) {
		if (fi && ll->ops->release)
			ll->ops->release(NULL, fi);
		pthread_mutex_lock(&ll->mu);
		cof_lino_forget(ll, e.ino, 1);
		pthread_mutex_unlock(&ll->mu);
	}
}

static void ll_init(void *data, struct fuse_conn_info *conn)
{
	cof_vll *ll = data;
	struct fuse_config cfg;

	memset(&cfg, 0, sizeof cfg);
	cur.private_data = ll->v;
	if (ll->ops->init)
		ll->ops->init(conn, &cfg);
	/* a view at a seq lists with no handle (listing.c, "Cursors"); one
	 * that follows its volume keeps OPENDIR: without it the kernel would
	 * keep every listing (FOPEN_CACHE_DIR is its default then).
	 * COFFER_VIEW_OPENDIR=1 keeps it too (to measure) */
	ll->no_opendir = (conn->capable & FUSE_CAP_NO_OPENDIR_SUPPORT) && !ll->v->o.follow &&
			 !(getenv("COFFER_VIEW_OPENDIR") && !strcmp(getenv("COFFER_VIEW_OPENDIR"), "1"));
	ll->entry_t = cfg.entry_timeout;
	ll->attr_t = cfg.attr_timeout;
	ll->neg_t = cfg.negative_timeout;
	COF_VHOOK(ll, on_init, ll);
}

static void ll_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	cof_vll *ll = cof_vll_begin(req);

	if (!COF_VHOOK_IF(ll, claim_lookup, req, ll, parent, name))
		reply_entry_of(req, ll, parent, name, NULL);
}

static void ll_forget(fuse_req_t req, fuse_ino_t ino, uint64_t n)
{
	cof_vll *ll = fuse_req_userdata(req);

	pthread_mutex_lock(&ll->mu);
	cof_lino_forget(ll, ino, n);
	pthread_mutex_unlock(&ll->mu);
	fuse_reply_none(req);
}

static void ll_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *f)
{
	cof_vll *ll = fuse_req_userdata(req);

	pthread_mutex_lock(&ll->mu);
	for (size_t i = 0; i < count; i++)
		cof_lino_forget(ll, f[i].ino, f[i].nlookup);
	pthread_mutex_unlock(&ll->mu);
	fuse_reply_none(req);
}

/* Replies with the attributes of node `ino` (by handle when fi has one). */
static void reply_attr_of(fuse_req_t req, cof_vll *ll, fuse_ino_t ino,
			  struct fuse_file_info *fi)
{
	struct stat st;
	char *path = cof_vll_path(ll, ino, NULL);
	int rc;

	memset(&st, 0, sizeof st);
	if (!path && !(fi && fi->fh)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	rc = ll->ops->getattr(path, &st, fi);
	free(path);
	if (!st.st_ino)
		st.st_ino = ino;
	if (rc)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_attr(req, &st, ll->attr_t);
}

static void ll_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	cof_vll *ll = cof_vll_begin(req);

	if (!COF_VHOOK_IF(ll, claim_dir, req, ll, ino, COF_VHID_GETATTR, 0, 0, fi))
		reply_attr_of(req, ll, ino, fi);
}

/* Whether a chown/chgrp of uid/gid (-1: unchanged) by the caller of req may
 * pass. A volume keeps no owners: every file shows its caller's own uid and
 * gid (ops.c), so naming those changes nothing, and root may name any (it
 * changes nothing either: `tar x` and `cp -a` as root chown every file they
 * make and must not fail for it, as on rclone mount or vfat's `quiet`).
 * Anyone else naming another owner is refused as the kernel refuses it. */
static int chown_ok(fuse_req_t req, const struct stat *a, int set)
{
	const struct fuse_ctx *cx = fuse_req_ctx(req);

	if (cx->uid == 0)
		return 1;
	if ((set & FUSE_SET_ATTR_UID) && a->st_uid != cx->uid)
		return 0;
	return !(set & FUSE_SET_ATTR_GID) || a->st_gid == cx->gid;
}

/* chmod, chown (kept nowhere: chown_ok), truncate and utimens as the
 * high-level API made them of one SETATTR, then the attributes. */
static void ll_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *a, int set,
		       struct fuse_file_info *fi)
{
	cof_vll *ll = cof_vll_begin(req);
	char *path = cof_vll_path(ll, ino, NULL);
	int rc = 0;

	if (!path && !(fi && fi->fh)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	cof_vll_change_begin(ll, ino, 0);
	if (set & FUSE_SET_ATTR_MODE)
		rc = ll->ops->chmod ? ll->ops->chmod(path, a->st_mode, fi) : -ENOSYS;
	if (!rc && (set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) && !chown_ok(req, a, set))
		rc = -EPERM;
	if (!rc && (set & FUSE_SET_ATTR_SIZE))
		rc = ll->ops->truncate(path, a->st_size, fi);
	if (!rc && (set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME))) {
		struct timespec tv[2] = {{0, UTIME_OMIT}, {0, UTIME_OMIT}};
		if (set & FUSE_SET_ATTR_ATIME_NOW)
			tv[0].tv_nsec = UTIME_NOW;
		else if (set & FUSE_SET_ATTR_ATIME)
			tv[0] = a->st_atim;
		if (set & FUSE_SET_ATTR_MTIME_NOW)
			tv[1].tv_nsec = UTIME_NOW;
		else if (set & FUSE_SET_ATTR_MTIME)
			tv[1] = a->st_mtim;
		rc = ll->ops->utimens(path, tv, fi);
	}
	free(path);
	cof_vll_change_end(ll);
	if (rc)
		fuse_reply_err(req, -rc);
	else
		reply_attr_of(req, ll, ino, fi);
}

static void ll_readlink(fuse_req_t req, fuse_ino_t ino)
{
	cof_vll *ll = cof_vll_begin(req);
	char *path = cof_vll_path(ll, ino, NULL), buf[COF_SYMLINK_MAX + 1];
	int rc = path ? ll->ops->readlink(path, buf, sizeof buf) : -ENOENT;

	free(path);
	if (rc)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_readlink(req, buf);
}

/* mkdir by path, then the new folder's entry. */
static void ll_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	cof_vll *ll = cof_vll_begin(req);
	char *path = cof_vll_path(ll, parent, name);
	int rc;

	if (!path) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	cof_vll_change_begin(ll, 0, 0);
	rc = ll->ops->mkdir(path, mode);
	cof_vll_change_end(ll);
	free(path);
	if (rc)
		fuse_reply_err(req, -rc);
	else
		reply_entry_of(req, ll, parent, name, NULL);
}

/* unlink and rmdir: the path's node leaves the table once removed. */
static void remove_name(fuse_req_t req, fuse_ino_t parent, const char *name, int dir)
{
	cof_vll *ll = cof_vll_begin(req);
	char *path = cof_vll_path(ll, parent, name);
	cof_lnode *p, *n;
	fuse_ino_t ino = 0;
	int rc;

	if (!path) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	pthread_mutex_lock(&ll->mu);
	if ((p = cof_lino_find(ll, parent)) && (n = cof_lino_child(ll, p, name)))
		ino = n->ino;
	pthread_mutex_unlock(&ll->mu);
	cof_vll_change_begin(ll, ino, 0);
	rc = dir ? ll->ops->rmdir(path) : ll->ops->unlink(path);
	free(path);
	if (!rc) {
		pthread_mutex_lock(&ll->mu);
		if ((p = cof_lino_find(ll, parent)) && (n = cof_lino_child(ll, p, name))) {
			COF_VHOOK(ll, on_remove, ll, n);
			cof_lino_detach(ll, n);
		}
		pthread_mutex_unlock(&ll->mu);
	}
	cof_vll_change_end(ll);
	fuse_reply_err(req, -rc);
}

static void ll_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_name(req, parent, name, 0);
}

static void ll_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_name(req, parent, name, 1);
}

static void ll_symlink(fuse_req_t req, const char *target, fuse_ino_t parent,
		       const char *name)
{
	cof_vll *ll = cof_vll_begin(req);
	char *path = cof_vll_path(ll, parent, name);
	int rc;

	if (!path) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	cof_vll_change_begin(ll, 0, 0);
	rc = ll->ops->symlink(target, path);
	cof_vll_change_end(ll);
	free(path);
	if (rc)
		fuse_reply_err(req, -rc);
	else
		reply_entry_of(req, ll, parent, name, NULL);
}

static void ll_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t parent, const char *name)
{
	cof_vll *ll = cof_vll_begin(req);
	char *from = cof_vll_path(ll, ino, NULL), *to = cof_vll_path(ll, parent, name);
	int rc = ll->ops->link(from, to);

	free(from);
	free(to);
	fuse_reply_err(req, rc ? -rc : EPERM);
}

static void ll_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t np,
		      const char *newname, unsigned int flags)
{
	cof_vll *ll = cof_vll_begin(req);
	char *from = cof_vll_path(ll, parent, name), *to = cof_vll_path(ll, np, newname);
	fuse_ino_t ino = 0;
	cof_lnode *p, *q, *n;
	int rc = -ENOENT;

	pthread_mutex_lock(&ll->mu);
	if ((p = cof_lino_find(ll, parent)) && (n = cof_lino_child(ll, p, name)))
		ino = n->ino;
	pthread_mutex_unlock(&ll->mu);
	cof_vll_change_begin(ll, ino, 0);
	if (from && to)
		rc = ll->ops->rename(from, to, flags);
	if (!rc) {
		pthread_mutex_lock(&ll->mu);
		if ((p = cof_lino_find(ll, parent)) && (q = cof_lino_find(ll, np)))
			cof_lino_rename(ll, p, name, q, newname, flags);
		pthread_mutex_unlock(&ll->mu);
	}
	cof_vll_change_end(ll);
	free(from);
	free(to);
	fuse_reply_err(req, -rc);
}

/* create; and mknod of a regular file, which the high-level API made a
 * create and a release of (a view has no other kind of node). */
static void ll_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	cof_vll *ll = cof_vll_begin(req);
	char *path = cof_vll_path(ll, parent, name);
	int rc;

	if (!path) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	cof_vll_change_begin(ll, 0, 0);
	rc = ll->ops->create(path, mode, fi);
	cof_vll_change_end(ll);
	free(path);
	if (rc)
		fuse_reply_err(req, -rc);
	else
		reply_entry_of(req, ll, parent, name, fi);
}

static void ll_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		     dev_t rdev)
{
	cof_vll *ll = cof_vll_begin(req);
	struct fuse_file_info fi;
	char *path;
	int rc;

	(void)rdev;
	if (!S_ISREG(mode)) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
	if (!(path = cof_vll_path(ll, parent, name))) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	memset(&fi, 0, sizeof fi);
	fi.flags = O_CREAT | O_EXCL | O_WRONLY;
	cof_vll_change_begin(ll, 0, 0);
	rc = ll->ops->create(path, mode, &fi);
	if (!rc && ll->ops->release)
		ll->ops->release(path, &fi);
	cof_vll_change_end(ll);
	free(path);
	if (rc)
		fuse_reply_err(req, -rc);
	else
		reply_entry_of(req, ll, parent, name, NULL);
}

static void ll_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	cof_vll *ll = cof_vll_begin(req);
	char *path = cof_vll_path(ll, ino, NULL);
	int rc = path ? ll->ops->open(path, fi) : -ENOENT;

	free(path);
	if (rc)
		fuse_reply_err(req, -rc);
	else if (fuse_reply_open(req, fi) == -ENOENT && ll->ops->release)
		ll->ops->release(NULL, fi); /* the open was interrupted */
}

static void ll_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	cof_vll *ll = cof_vll_begin(req);
	char *path = cof_vll_path(ll, ino, NULL);
	struct fuse_bufvec *bv = NULL;
	int rc = ll->ops->read_buf(path, &bv, size, off, fi);
	cof_lnode *n;

	pthread_mutex_lock(&ll->mu);
	if ((n = cof_lino_find(ll, ino)))
		COF_VHOOK(ll, on_read, ll, n);
	pthread_mutex_unlock(&ll->mu);
	free(path);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		/* bytes in memory go as they are: spliced, libfuse would
		 * first copy them into a pipe */
		fuse_reply_data(req, bv, bv->buf[0].flags & FUSE_BUF_IS_FD ? 0 : FUSE_BUF_NO_SPLICE);
	if (bv && !(bv->buf[0].flags & FUSE_BUF_IS_FD))
		free(bv->buf[0].mem);
	free(bv);
}

static void ll_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	cof_vll *ll = cof_vll_begin(req);
	char *path = cof_vll_path(ll, ino, NULL);
	int rc;

	cof_vll_change_begin(ll, ino, 1);
	rc = ll->ops->write(path, buf, size, off, fi);
	cof_vll_change_end(ll);
	free(path);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_write(req, (size_t)rc);
}

static void ll_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	cof_vll *ll = cof_vll_begin(req);
	char *path = cof_vll_path(ll, ino, NULL);
	int rc = ll->ops->flush ? ll->ops->flush(path, fi) : -ENOSYS;

	free(path);
	fuse_reply_err(req, -rc);
}

static void ll_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	cof_vll *ll = cof_vll_begin(req);
	char *path = cof_vll_path(ll, ino, NULL);

	ll->ops->release(path, fi);
	free(path);
	fuse_reply_err(req, 0);
}

static void ll_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	cof_vll *ll = cof_vll_begin(req);
	char *path = cof_vll_path(ll, ino, NULL);
	int rc = ll->ops->fsync(path, datasync, fi);

	free(path);
	fuse_reply_err(req, -rc);
}

static void ll_statfs(fuse_req_t req, fuse_ino_t ino)
{
	cof_vll *ll = cof_vll_begin(req);
	char *path = cof_vll_path(ll, ino, NULL);
	struct statvfs sv;
	int rc = ll->ops->statfs(path ? path : "/", &sv);

	free(path);
	if (rc)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_statfs(req, &sv);
}

static const struct fuse_lowlevel_ops ll_ops = {
	.init = ll_init,
	.lookup = ll_lookup,
	.forget = ll_forget,
	.forget_multi = ll_forget_multi,
	.getattr = ll_getattr,
	.setattr = ll_setattr,
	.readlink = ll_readlink,
	.mknod = ll_mknod,
	.mkdir = ll_mkdir,
	.unlink = ll_unlink,
	.rmdir = ll_rmdir,
	.symlink = ll_symlink,
	.rename = ll_rename,
	.link = ll_link,
	.open = ll_open,
	.read = ll_read,
	.write = ll_write,
	.flush = ll_flush,
	.release = ll_release,
	.fsync = ll_fsync,
	.opendir = cof_vll_opendir,
	.readdir = cof_vll_readdir,
	.releasedir = cof_vll_releasedir,
	.statfs = ll_statfs,
	.create = ll_create,
	.readdirplus = cof_vll_readdirplus,
};

/* ------------------------------------------- counts (COFFER_VIEW_STATS) */

uint64_t cof_vll_now(const cof_vll *ll)
{
	struct timespec ts;

	if (!ll->stats)
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void cof_vll_stat(cof_vll *ll, int k, uint64_t n, uint64_t ns)
{
	if (!ll->stats)
		return;
	__atomic_add_fetch(&ll->st_n[k], n, __ATOMIC_RELAXED);
	__atomic_add_fetch(&ll->st_ns[k], ns, __ATOMIC_RELAXED);
}

/* A request's handler, counted and timed (ll taken first: the reply frees
 * req). */
#define TIMED(kind, fn, params, args) \
	static void t_##fn params \
	{ \
		cof_vll *ll = fuse_req_userdata(req); \
		uint64_t t0 = cof_vll_now(ll); \
		fn args; \
		cof_vll_stat(ll, kind, 1, cof_vll_now(ll) - t0); \
	}
TIMED(COF_VST_LOOKUP, ll_lookup, (fuse_req_t req, fuse_ino_t p, const char *name), (req, p, name))
TIMED(COF_VST_GETATTR, ll_getattr, (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi),
      (req, ino, fi))
TIMED(COF_VST_READ, ll_read, (fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			      struct fuse_file_info *fi), (req, ino, size, off, fi))
TIMED(COF_VST_OPENDIR, cof_vll_opendir, (fuse_req_t req, fuse_ino_t ino,
					 struct fuse_file_info *fi), (req, ino, fi))
TIMED(COF_VST_RELEASEDIR, cof_vll_releasedir, (fuse_req_t req, fuse_ino_t ino,
					       struct fuse_file_info *fi), (req, ino, fi))
TIMED(COF_VST_READDIRPLUS, cof_vll_readdirplus, (fuse_req_t req, fuse_ino_t ino, size_t size,
						 off_t off, struct fuse_file_info *fi),
      (req, ino, size, off, fi))
TIMED(COF_VST_READDIR, cof_vll_readdir, (fuse_req_t req, fuse_ino_t ino, size_t size,
					 off_t off, struct fuse_file_info *fi),
      (req, ino, size, off, fi))
TIMED(COF_VST_FORGET, ll_forget_multi, (fuse_req_t req, size_t count,
					struct fuse_forget_data *f), (req, count, f))
TIMED(COF_VST_UNLINK, ll_unlink, (fuse_req_t req, fuse_ino_t p, const char *name), (req, p, name))
TIMED(COF_VST_RMDIR, ll_rmdir, (fuse_req_t req, fuse_ino_t p, const char *name), (req, p, name))
TIMED(COF_VST_OTHER, ll_open, (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi),
      (req, ino, fi))

/* The counted table: the requests a walk makes, timed. */
static struct fuse_lowlevel_ops stats_ops(void)
{
	struct fuse_lowlevel_ops o = ll_ops;

	o.lookup = t_ll_lookup;
	o.getattr = t_ll_getattr;
	o.read = t_ll_read;
	o.opendir = t_cof_vll_opendir;
	o.releasedir = t_cof_vll_releasedir;
	o.readdirplus = t_cof_vll_readdirplus;
	o.readdir = t_cof_vll_readdir;
	o.forget_multi = t_ll_forget_multi;
	o.unlink = t_ll_unlink;
	o.rmdir = t_ll_rmdir;
	o.open = t_ll_open;
	return o;
}

/* Appends the view's counts to the file COFFER_VIEW_STATS names. */
static void stats_write(cof_vll *ll)
{
	static const char *const names[COF_VST_N] = {
		"lookup", "getattr", "read", "opendir", "readdirplus", "readdir",
		"releasedir", "forget", "unlink", "rmdir", "open", "stored", "stored_lister",
		"not_stored", "list_wait", "hid_walk", "prepared", "prep_sent", "ahead_sent",
		"built_now", "renew", "push_off", "cursor", "cursor_drop"};
	const char *p = getenv("COFFER_VIEW_STATS");
	FILE *f;

	if (!ll->stats || !p || !(f = fopen(p, "a")))
		return;
	fprintf(f, "view %s", ll->v->dir ? ll->v->dir : "-");
	for (int k = 0; k < COF_VST_N; k++)
		if (ll->st_n[k])
			fprintf(f, " %s=%llu/%.1fms", names[k], (unsigned long long)ll->st_n[k],
				(double)ll->st_ns[k] / 1e6);
	fputc('\n', f);
	fclose(f);
}

struct fuse_session *cof_vll_new(cof_vfs *v, struct fuse_args *args,
				 const struct fuse_operations *ops)
{
	cof_vll *ll = calloc(1, sizeof *ll);

	if (!ll)
		return NULL;
	ll->ops = ops;
	ll->v = v;
	pthread_mutex_init(&ll->mu, NULL);
	ll->hooks = &cof_vprefetch_hooks;
	if (COF_VHOOK_IF(ll, start, ll)) {
		pthread_mutex_destroy(&ll->mu);
		free(ll);
		return NULL;
	}
	ll->stats = getenv("COFFER_VIEW_STATS") && *getenv("COFFER_VIEW_STATS");
	if (cof_lino_init(ll) == 0) {
		struct fuse_lowlevel_ops so = stats_ops();
		ll->se = fuse_session_new(args, ll->stats ? &so : &ll_ops, sizeof ll_ops, ll);
	}
	if (!ll->se) {
		cof_vll_free(ll);
		return NULL;
	}
	v->ll = ll;
	return ll->se;
}

void cof_view_renew(cof_vfs *v)
{
	if (v && v->ll)
		COF_VHOOK(v->ll, renew, v->ll);
}

void cof_view_renew_wait(cof_vfs *v)
{
	if (v && v->ll)
		COF_VHOOK(v->ll, renew_wait, v->ll);
}

void cof_vll_quiesce(cof_vll *ll)
{
	if (ll)
		COF_VHOOK(ll, stop, ll);
}

void cof_vll_free(cof_vll *ll)
{
	if (!ll)
		return;
	COF_VHOOK(ll, stop, ll);
	stats_write(ll);
	cur.private_data = ll->v;
	if (ll->by_id)
		cof_vll_preps_free(ll);
	if (ll->se)
		fuse_session_destroy(ll->se);
	cof_lino_free(ll);
	COF_VHOOK(ll, end, ll);
	pthread_mutex_destroy(&ll->mu);
	free(ll);
}
