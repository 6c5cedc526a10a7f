/*
 * commit.c — how a view's layer lands in its volumes. A call's layer lands
 * at its end as one change per root (cof_view_commit), conditional on the
 * version of each path the view saw; `coffer mount` lands each file as it is
 * closed (cof_view_land_file). Both land through cof_land (volume/land.c),
 * which stores the bytes, runs the change and abandons what it refused;
 * what the change is (a file is written only if it is still at the version
 * the view saw) is land_apply's. A call's file that someone else changed
 * meanwhile is merged by lines by cof_land when the edits do not overlap
 * (the view gives the version it saw and its bytes; the volume decides).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "view/view_int.h"

/* A dirty node handed to cof_land: its layer file is opened when stored. */
typedef struct lfile {
	cof_vfs *v;
	vnode *n;
} lfile;

static int open_layer(void *arg)
{
	lfile *f = arg;

	return cof_layer_open(f->v, f->n->lid, O_RDONLY);
}

/* Describes dirty node n as a file to land (f->path malloc'd: its volume
 * path). A link keeps its type; a rewrite of the same bytes keeps the type it
 * had; else the type is sniffed from the first 512 bytes. -1: out of memory. */
static int land_file_of(cof_vfs *v, vnode *n, lfile *lf, cof_land_file *f)
{
	char vp[COF_PATH_MAX + 1];

	cof_vbase_vpath(&v->roots[n->root], n->path, vp, sizeof vp);
	lf->v = v;
	lf->n = n;
	memset(f, 0, sizeof *f);
	if (!(f->path = strdup(vp)))
		return -1;
	f->name = n->path;
	f->seen = n->seen;
	if (n->lid > 0) {
		f->kind = COF_LAND_FD;
		f->fd = -1;
		f->open_fd = open_layer;
		f->open_arg = lf;
		f->ctype = cof_is_symlink(n->ctype) ? n->ctype : NULL;
		f->keep_ctype = n->seen ? n->ctype : NULL;
		f->keep_sha = n->sha;
		f->sniff = 512;
	} else { /* a file renamed: its content is known already */
		f->kind = COF_LAND_KNOWN;
		memcpy(f->sha256, n->sha, sizeof f->sha256);
		f->size = n->size;
		f->ctype = n->ctype;
	}
	return 0;
}

typedef struct land {
	cof_vfs *v;
	int root;
	lfile *lf;              /* per file of the landing: its node */
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
static int land_apply(cof_txn *tx, cof_landing *lg, cof_err *err)
{
	land *l = lg->ctx;
	cof_entry *cur = cof_malloc(sizeof *cur);
	char vpbuf[COF_PATH_MAX + 1];
	size_t i;

	if (!cur)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	json_array_clear(l->res->conflicts);
	l->res->written = l->res->removed = 0;
	for (i = 0; i < lg->nfiles + l->ngone; i++) {
		int file = i < lg->nfiles;
		vnode *n = file ? l->lf[i].n : l->gone[i - lg->nfiles];
		const char *vp = vpbuf;
		int exists;

		if (file)
			vp = lg->files[i].path;
		else
			cof_vbase_vpath(&l->v->roots[l->root], n->path, vpbuf, sizeof vpbuf);
		if ((exists = cof_txn_get(tx, vp, cur, err)) < 0)
			goto fail;
		l->conflict[i] = 0;
		/* a file merged by cof_land is conditional on the version it
		 * was merged with */
		if ((exists ? cur->version : 0) != (file ? lg->files[i].seen : n->seen)) {
			l->conflict[i] = 1;
			if (file)
				lg->files[i].unnamed = 1;
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
			lg->files[i].unnamed = 1;
			json_array_append_new(l->res->conflicts, json_pack(
				"{s:s, s:s}", "path", n->path, "reason", err->msg));
			cof_err_clear(err);
			continue;
		}
		cof_land_file *s = &lg->files[i];
		/* the file's time in the view is its version's: the next call
		 * (and git's stat cache) sees the mtime this one saw */
		if (cof_txn_write_at(tx, vp, s->sha256, s->size, s->type, s->inl, n->mtime, err))
			goto fail;
		l->res->written++;
	}
	/* nothing landed (all conflicts): no one is told of a change */
	lg->quiet = l->res->written + l->res->removed == 0;
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
		char name[32];
		if (n->root != root || !n->dirty || n->kind != N_FILE || n->lid <= 0)
			continue;
		/* its size by name, not opened (two calls less a file): the
		 * layer holds only files this view made, never a link */
		snprintf(name, sizeof name, "%lld", (long long)n->lid);
		if (fstatat(v->layer, name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(sb.st_mode))
			total += sb.st_size;
	}
	if (total <= v->roots[root].v.vol.ceiling)
		return 0;
	return cof_ceiling_error(&v->roots[root].v.vol, total, err);
}

/* Lands root `root`'s layer as one change. */
static void commit_root(cof_vfs *v, int root, int conflict_dir, const cof_by *by,
			cof_view_result *res)
{
	land l = {v, root, NULL, NULL, 0, res, NULL};
	cof_landing lg = {.vol = &v->roots[root].v.vol, .vno = v->roots[root].v.vno,
			  .apply = land_apply, .ctx = &l, .by = by};
	size_t nf = 0, ng = 0, i;

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
	lg.files = cof_calloc(nf + 1, sizeof *lg.files);
	l.lf = cof_calloc(nf + 1, sizeof *l.lf);
	l.gone = cof_calloc(ng + 1, sizeof *l.gone);
	l.conflict = cof_calloc(nf + ng + 1, 1);
	if (!lg.files || !l.lf || !l.gone || !l.conflict) {
		cof_error(&res->err, COF_EINTERNAL, "out of memory");
		goto out;
	}
	if (layer_too_big(v, root, &res->err))
		goto out;
	for (vnode *n = v->nodes; n; n = n->next) {
		if (n->root != root || !n->dirty || n->kind == N_DIR)
			continue;
		if (n->kind == N_GONE) {
			l.gone[l.ngone++] = n;
			continue;
		}
		if (land_file_of(v, n, &l.lf[lg.nfiles], &lg.files[lg.nfiles])) {
			cof_error(&res->err, COF_EINTERNAL, "out of memory");
			goto out;
		}
		/* the call's bytes: merged with what landed meanwhile when they
		 * can be (API.md, Merge: a confined call's commit) */
		lg.files[lg.nfiles].merge = n->lid > 0;
		lg.nfiles++;
	}
	if (cof_land(v->o.st, &lg, &res->err)) {
		json_array_clear(res->conflicts);
		res->written = res->removed = 0;
		goto out;
	}
	if (res->written + res->removed > 0)
		res->seq = lg.seq;
	for (i = 0; i < lg.nfiles; i++) {
		cof_land_file *s = &lg.files[i];
		if (l.conflict[i]) {
			keep_conflict(v, conflict_dir, shown_rel(&v->roots[root]), l.lf[i].n);
			continue;
		}
		if (s->merged)
			json_array_append_new(res->merged, json_string(l.lf[i].n->path));
		json_array_append_new(res->files, json_pack(
			"{s:s, s:I, s:I, s:s, s:s}", "path", l.lf[i].n->path, "version",
			(json_int_t)lg.seq, "size", (json_int_t)s->size, "sha256", s->sha256,
			"contentType", s->type));
	}
out:
	for (i = 0; lg.files && i < lg.nfiles; i++)
		free((char *)lg.files[i].path);
	free(lg.files);
	free(l.lf);
	free(l.gone);
	free(l.conflict);
}

void cof_view_commit(cof_vfs *v, int conflict_dir, const cof_by *by, cof_view_result *res)
{
	for (int i = 0; i < v->o.nroots; i++) {
		memset(&res[i], 0, sizeof res[i]);
		res[i].conflicts = json_array();
		res[i].files = json_array();
		res[i].merged = json_array();
		if (v->roots[i].cfg.rw && v->o.way == COF_VIEW_CALL && v->layer >= 0)
			commit_root(v, i, conflict_dir, by, &res[i]);
	}
}

void cof_view_result_release(cof_view_result *r)
{
	json_decref(r->conflicts);
	json_decref(r->files);
	json_decref(r->merged);
	cof_err_clear(&r->err);
	r->conflicts = r->files = r->merged = NULL;
}

/* ------------------------------------------------------------ one file */

int cof_view_land_file(cof_vfs *v, vnode *n)
{
	vnode c = *n;
	int rc;

	/* the source lands a copy, mu dropped: lookups and listings go on
	 * during the round trip; no other change runs (wmu), so n is as it
	 * was when the answer is set on it */
	if (!(c.path = strdup(n->path)))
		return -ENOMEM;
	c.refused = 0;
	pthread_mutex_unlock(&v->mu);
	rc = VSRC(v)->put(v, &c);
	pthread_mutex_lock(&v->mu);
	n->refused = c.refused;
	n->seen = c.seen;
	n->dirty = c.dirty;
	memcpy(n->sha, c.sha, sizeof n->sha);
	n->size = c.size;
	memcpy(n->ctype, c.ctype, sizeof n->ctype);
	free(c.path);
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

/* `coffer mount` over a local store: each close is a change by the mount */
static const cof_by mount_by = {.via = "mount"};

int cof_view_land_local(cof_vfs *v, vnode *n)
{
	cof_view_result res = {0};
	land l = {v, n->root, NULL, NULL, 0, &res, NULL};
	cof_land_file f;
	lfile lf;
	cof_landing lg = {.vol = &v->roots[n->root].v.vol, .vno = v->roots[n->root].v.vno,
			  .files = &f, .nfiles = 1, .apply = land_apply, .ctx = &l, .by = &mount_by};
	unsigned char conflict = 0;
	int rc;

	res.conflicts = json_array();
	l.lf = &lf;
	l.conflict = &conflict;
	if (land_file_of(v, n, &lf, &f))
		rc = cof_error(&res.err, COF_EINTERNAL, "out of memory");
	else
		rc = cof_land(v->o.st, &lg, &res.err);
	free((char *)f.path);
	if (!rc && !conflict) {
		n->seen = lg.seq;
		n->dirty = 0;
		memcpy(n->sha, f.sha256, sizeof n->sha);
		n->size = f.size;
		snprintf(n->ctype, sizeof n->ctype, "%s", f.type);
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
