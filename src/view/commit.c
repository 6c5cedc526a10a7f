/*
 * commit.c — how a view's layer lands in its volumes. A call's layer lands
 * at its end as one change per root (cof_view_commit), conditional on the
 * version of each path the view saw; `coffer mount` lands each file as it is
 * closed (cof_view_land_file). Written bytes are stored as content first
 * (inline or a blob), under the collector's lock until the change naming
 * them has committed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "view/view_int.h"

/* A layer file stored as content: its hash, size, type, and the bytes when
 * small enough to be kept inline. */
typedef struct stored {
	vnode *n;
	char sha[65];
	int64_t size;
	char ctype[128];
	unsigned char *inl;     /* inline bytes (size <= COF_INLINE_MAX), or NULL */
} stored;

/* Stores layer file n->lid as content (gc_lock held shared by the caller). */
static int store_layer(cof_vfs *v, vnode *n, stored *s, cof_err *err)
{
	cof_store *st = v->o.st;
	char vp[COF_PATH_MAX + 1], buf[65536];
	cof_blob_writer *w = NULL;
	int fd = cof_layer_open(v, n->lid, O_RDONLY), rc = -1;
	struct stat sb;
	ssize_t k;
	int64_t off = 0;

	s->n = n;
	s->inl = NULL;
	if (fd < 0 || fstat(fd, &sb))
		goto out_io;
	s->size = sb.st_size;
	if (s->size <= COF_INLINE_MAX) {
		if (!(s->inl = cof_malloc((size_t)s->size + 1)))
			goto out_io;
		while (off < s->size && (k = pread(fd, s->inl + off, (size_t)(s->size - off), off)) > 0)
			off += k;
		if (off != s->size || cof_sha256_hex(s->inl, (size_t)s->size, s->sha))
			goto out_io;
	} else {
		if (st->blobs->begin(st->blobs, &w, err))
			goto out;
		while ((k = pread(fd, buf, sizeof buf, off)) > 0) {
			if (st->blobs->write(w, buf, (size_t)k, err)) {
				st->blobs->abort(w);
				goto out;
			}
			off += k;
		}
		if (k < 0) {
			st->blobs->abort(w);
			goto out_io;
		}
		/* marked pending too: on several nodes the metadata orders the
		 * collector against this write (docs/design.md) */
		if (st->blobs->commit(w, s->sha, &s->size, err) ||
		    cof_content_pending(st, s->sha, s->size, err))
			goto out;
	}
	if (cof_is_symlink(n->ctype) || (n->ctype[0] && n->seen && !strcmp(n->sha, s->sha)))
		snprintf(s->ctype, sizeof s->ctype, "%s", n->ctype);
	else {
		unsigned char head[512];
		ssize_t h = pread(fd, head, sizeof head, 0);
		cof_vbase_vpath(&v->roots[n->root], n->path, vp, sizeof vp);
		cof_sniff_type(st, vp, head, h > 0 ? (size_t)h : 0, s->ctype, sizeof s->ctype);
	}
	rc = 0;
	goto out;
out_io:
	cof_error(err, COF_EINTERNAL, "cannot read the call's bytes of '%.200s': %s", n->path,
		  strerror(errno ? errno : EIO));
out:
	if (fd >= 0)
		close(fd);
	if (rc) {
		free(s->inl);
		s->inl = NULL;
	}
	return rc;
}

typedef struct land {
	cof_vfs *v;
	int root;
	stored *files;          /* the dirty files, stored */
	size_t nfiles;
	vnode **gone;           /* the dirty removals */
	size_t ngone;
	cof_view_result *res;
	unsigned char *conflict; /* per file (then per removal): 1 = conflict */
} land;

/* Adds a conflict of `path` (a root path) to the result. */
static void conflict_add(cof_view_result *r, const char *path, int64_t seen,
			 int64_t now)
{
	char why[200];

	if (!now)
		snprintf(why, sizeof why, "removed by someone else since the call began "
			 "(it saw version %lld)", (long long)seen);
	else if (!seen)
		snprintf(why, sizeof why, "created by someone else since the call began "
			 "(version %lld)", (long long)now);
	else
		snprintf(why, sizeof why, "changed by someone else since the call began "
			 "(version %lld, now %lld)", (long long)seen, (long long)now);
	json_array_append_new(r->conflicts, json_pack("{s:s, s:s}", "path", path,
						      "reason", why));
}

/* The change: every dirty file and removal whose path is still at the
 * version the view saw; the others are conflicts. */
static int land_apply(cof_txn *tx, void *arg, cof_err *err)
{
	land *l = arg;
	cof_entry *cur = cof_malloc(sizeof *cur);
	char vp[COF_PATH_MAX + 1];
	size_t i;

	if (!cur)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	json_array_clear(l->res->conflicts);
	l->res->written = l->res->removed = 0;
	for (i = 0; i < l->nfiles + l->ngone; i++) {
		int file = i < l->nfiles;
		vnode *n = file ? l->files[i].n : l->gone[i - l->nfiles];
		int exists;

		cof_vbase_vpath(&l->v->roots[l->root], n->path, vp, sizeof vp);
		if ((exists = cof_txn_get(tx, vp, cur, err)) < 0)
			goto fail;
		l->conflict[i] = 0;
		if ((exists ? cur->version : 0) != n->seen) {
			l->conflict[i] = 1;
			conflict_add(l->res, n->path, n->seen, exists ? cur->version : 0);
			continue;
		}
		if (!file) {
			if (exists && cof_txn_remove(tx, vp, err))
				goto fail;
			l->res->removed += exists;
			continue;
		}
		if (!exists && cof_volume_path_free(tx, vp, err)) {
			/* a folder where the file goes, or a file where its folder goes */
			l->conflict[i] = 1;
			json_array_append_new(l->res->conflicts, json_pack(
				"{s:s, s:s}", "path", n->path, "reason", err->msg));
			cof_err_clear(err);
			continue;
		}
		stored *s = &l->files[i];
		/* the file's time in the view is its version's: the next call
		 * (and git's stat cache) sees the mtime this one saw */
		if (cof_txn_write_at(tx, vp, s->sha, s->size, s->ctype, s->inl, n->mtime, err))
			goto fail;
		l->res->written++;
	}
	free(cur);
	return cof_volume_fit(tx, err);
fail:
	free(cur);
	return -1;
}

/* Copies the file open at `in` to a new file `to` in the folder open at
 * `dirfd`, owned by `owner` (0 = as made). Whatever was at `to` is unlinked
 * (never followed) and the copy made with O_EXCL, so nothing that was there
 * is ever opened. 0 or -1. */
static int copy_to(int in, int dirfd, const char *to, uid_t owner)
{
	char buf[65536];
	ssize_t k = 0;
	int out;

	unlinkat(dirfd, to, 0);
	out = openat(dirfd, to, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (out < 0)
		return -1;
	if (owner && fchown(out, owner, owner))
		k = -1;
	while (k >= 0 && (k = read(in, buf, sizeof buf)) > 0)
		if (write(out, buf, (size_t)k) != k) {
			k = -1;
			break;
		}
	close(out);
	if (k < 0)
		unlinkat(dirfd, to, 0);
	return k < 0 ? -1 : 0;
}

/* Keeps the call's version of a conflicting file (layer file `lid`) at
 * `shown/path` under the folder open at `dirfd` (the workspace's .conflicts).
 * That folder is the call's own: whatever the call put there (a link on the
 * way, a folder swapped mid-way) is never followed. The folders are made and
 * opened beneath `dirfd` one fd at a time, every owner change goes through an
 * fd we hold, and the file is renamed (or copied, across file systems) into
 * the last folder's fd: a rename replaces a link at the name, never writes
 * through it. */
static void keep_conflict(cof_vfs *v, int dirfd, const char *shown, const vnode *n)
{
	char path[COF_PATH_MAX + 600], name[32];
	const char *leaf;
	int pfd, lfd;

	if (dirfd < 0 || n->lid <= 0)
		return;
	snprintf(path, sizeof path, "%s%s%s", shown, *shown ? "/" : "", n->path);
	char *slash = strrchr(path, '/');
	if (slash) {
		*slash = '\0';
		leaf = slash + 1;
		pfd = cof_mkdirs_beneath(dirfd, path, 0755, v->o.owner ? (long)v->o.owner : -1);
	} else {
		leaf = path;
		pfd = dup(dirfd);
	}
	if (pfd < 0)
		return;
	snprintf(name, sizeof name, "%lld", (long long)n->lid);
	lfd = openat(v->layer, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (lfd >= 0 && v->o.owner && fchown(lfd, v->o.owner, v->o.owner)) {
		close(lfd);
		lfd = -1;
	}
	/* when neither works the copy is not kept (the note still says where) */
	if (lfd >= 0 && renameat(v->layer, name, pfd, leaf))
		copy_to(lfd, pfd, leaf, v->o.owner);
	if (lfd >= 0)
		close(lfd);
	close(pfd);
}

/* Where the caller sees root r, without its leading '/' ("" = nowhere). */
static const char *shown_rel(const vroot *r)
{
	const char *s = r->cfg.shown ? r->cfg.shown : "";

	return s + (*s == '/');
}

/* Refuses (the ceiling's error) a layer whose files add up to more than the
 * volume's ceiling, before any byte is stored: a sparse file costs the layer
 * nothing but would be stored whole. 0 when it may fit. */
static int layer_too_big(cof_vfs *v, int root, cof_err *err)
{
	int64_t total = 0;

	for (vnode *n = v->nodes; n; n = n->next) {
		struct stat sb;
		int fd;
		if (n->root != root || !n->dirty || n->kind != N_FILE || n->lid <= 0)
			continue;
		if ((fd = cof_layer_open(v, n->lid, O_RDONLY)) < 0)
			continue;
		if (fstat(fd, &sb) == 0)
			total += sb.st_size;
		close(fd);
	}
	if (total <= v->roots[root].v.vol.ceiling)
		return 0;
	return cof_ceiling_error(&v->roots[root].v.vol, total, err);
}

/* Lands root `root`'s layer as one change. */
static void commit_root(cof_vfs *v, int root, int conflict_dir, cof_view_result *res)
{
	cof_store *st = v->o.st;
	land l = {v, root, NULL, 0, NULL, 0, res, NULL};
	size_t nf = 0, ng = 0, i;
	int64_t seq = 0;
	int rc = 0;

	for (vnode *n = v->nodes; n; n = n->next)
		if (n->root == root && n->dirty && n->kind != N_DIR)
			{
			if (n->kind == N_FILE)
				nf++;
			else
				ng++;
		}
	if (!nf && !ng)
		return;
	l.files = cof_calloc(nf + 1, sizeof *l.files);
	l.gone = cof_calloc(ng + 1, sizeof *l.gone);
	l.conflict = cof_calloc(nf + ng + 1, 1);
	if (!l.files || !l.gone || !l.conflict) {
		cof_error(&res->err, COF_EINTERNAL, "out of memory");
		goto out;
	}
	if (layer_too_big(v, root, &res->err))
		goto out;
	cof_store_hold_content(st);
	for (vnode *n = v->nodes; n && !rc; n = n->next) {
		if (n->root != root || !n->dirty || n->kind == N_DIR)
			continue;
		if (n->kind == N_GONE) {
			l.gone[l.ngone++] = n;
			continue;
		}
		stored *s = &l.files[l.nfiles];
		if (n->lid > 0)
			rc = store_layer(v, n, s, &res->err);
		else { /* a file renamed: its content is known already */
			s->n = n;
			memcpy(s->sha, n->sha, sizeof s->sha);
			s->size = n->size;
			snprintf(s->ctype, sizeof s->ctype, "%s", n->ctype);
		}
		l.nfiles += !rc;
	}
	if (!rc)
		rc = cof_meta_change(st->meta, v->roots[root].v.vno, land_apply, &l, &seq,
				     &res->err);
	cof_store_release_content(st);
	if (rc) {
		json_array_clear(res->conflicts);
		res->written = res->removed = 0;
		goto out;
	}
	if (res->written + res->removed > 0) {
		res->seq = seq;
		cof_store_changed(st, &v->roots[root].v.vol);
	}
	for (i = 0; i < l.nfiles; i++) {
		stored *s = &l.files[i];
		if (l.conflict[i])
			keep_conflict(v, conflict_dir, shown_rel(&v->roots[root]), s->n);
		else
			json_array_append_new(res->files, json_pack(
				"{s:s, s:I, s:I, s:s, s:s}", "path", s->n->path, "version",
				(json_int_t)seq, "size", (json_int_t)s->size, "sha256", s->sha,
				"contentType", s->ctype));
	}
out:
	for (i = 0; i < l.nfiles; i++)
		free(l.files[i].inl);
	free(l.files);
	free(l.gone);
	free(l.conflict);
}

void cof_view_commit(cof_vfs *v, int conflict_dir, cof_view_result *res)
{
	for (int i = 0; i < v->o.nroots; i++) {
		memset(&res[i], 0, sizeof res[i]);
		res[i].conflicts = json_array();
		res[i].files = json_array();
		if (v->roots[i].cfg.rw && v->o.way == COF_VIEW_CALL && v->layer >= 0)
			commit_root(v, i, conflict_dir, &res[i]);
	}
}

void cof_view_result_release(cof_view_result *r)
{
	json_decref(r->conflicts);
	json_decref(r->files);
	cof_err_clear(&r->err);
	r->conflicts = r->files = NULL;
}

/* ------------------------------------------------------------ one file */

int cof_view_land_file(cof_vfs *v, vnode *n)
{
	int rc;

	n->refused = 0;
	rc = VSRC(v)->put(v, n);
	/* refused (not merely unreachable): the change is dropped, so that the
	 * mount never shows as written what the volume does not hold (issue
	 * 32.10); bytes that could not be sent stay for the next close */
	if (rc && n->refused) {
		fprintf(stderr, "coffer mount: the change to '%s' is dropped: it reads as "
			"this mount last saw it\n", n->path);
		cof_vnode_revert(v, n);
	}
	return rc;
}

int cof_view_land_local(cof_vfs *v, vnode *n)
{
	cof_view_result res = {0};
	land l = {v, n->root, NULL, 1, NULL, 0, &res, NULL};
	stored s = {0};
	unsigned char conflict = 0;
	int64_t seq = 0;
	int rc;

	res.conflicts = json_array();
	l.files = &s;
	l.conflict = &conflict;
	cof_store_hold_content(v->o.st);
	rc = store_layer(v, n, &s, &res.err);
	if (!rc)
		rc = cof_meta_change(v->o.st->meta, v->roots[n->root].v.vno, land_apply, &l, &seq,
				     &res.err);
	cof_store_release_content(v->o.st);
	free(s.inl);
	if (!rc && !conflict) {
		cof_store_changed(v->o.st, &v->roots[n->root].v.vol);
		n->seen = seq;
		n->dirty = 0;
		memcpy(n->sha, s.sha, sizeof n->sha);
		n->size = s.size;
		snprintf(n->ctype, sizeof n->ctype, "%s", s.ctype);
	}
	n->refused = conflict || (rc && cof_code_status(res.err.code) / 100 == 4);
	rc = rc ? (res.err.code == COF_EVALIDATION ? -ENOSPC : -EIO) : conflict ? -EIO : 0;
	if (rc && res.err.code)
		fprintf(stderr, "coffer mount: cannot write '%s': %s\n", n->path, res.err.msg);
	else if (rc)
		fprintf(stderr, "coffer mount: cannot write '%s': %s\n", n->path,
			json_string_value(json_object_get(json_array_get(res.conflicts, 0),
							  "reason")));
	cof_view_result_release(&res);
	return rc;
}
