/*
 * views.c — the agent's files in a call: one view (src/view/) per call over
 * every mount of the agent as it was when the call began, and the volume of
 * the turn's user (a subject of the agent) at /user. The view is mounted at
 * ROOT/views/CALL, served by a thread of cofferd, and bound by bwrap at
 * each mount's agent path (ro mounts read-only: EROFS); written bytes are
 * files in ROOT/layers/TURN/CALL on the scratch disk, out of the call's
 * sight, measured with the turn's workspace so they count against its
 * limits. At the call's end the layer
 * lands as one change per volume, unless the call hit a limit or its
 * timeout; a conflicting file is kept at /tmp/.conflicts/PATH.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "agent/agent.h"
#include "store/store.h"
#include "turn/turn.h"
#include "view/view.h"

static const char *const user_ro[] = {"memories", "skills", NULL};

/* Exclusions of the agent, for one of its mounts. */
typedef struct excl_ctx {
	const cof_agent *a;
	const cof_mount *m;
} excl_ctx;

struct cof_call_views {
	cof_agent a;
	cof_mount user;                 /* /user, when the turn has one */
	excl_ctx ex[COF_VIEW_ROOTS];
	cof_view_root roots[COF_VIEW_ROOTS];
	const cof_mount *mounts[COF_VIEW_ROOTS];
	int n;
	int nrw;                        /* roots[0..nrw) are read-write: vfs */
	cof_vfs *vfs;                   /* the read-write roots, at DIR/rw */
	cof_vfs *ro;                    /* the read-only roots, at DIR/ro */
	char dir[PATH_MAX + 64];        /* ROOT/views/CALL */
	char layer[PATH_MAX + 160];     /* ROOT/layers/TURN/CALL */
	char call[40];
};

static int excluded(const void *ctx, const char *vpath, int is_dir)
{
	const excl_ctx *e = ctx;

	return e->a->excl && cof_agent_excluded_vpath(e->a, e->m, vpath, is_dir);
}

/* Adds mount m as root "mN" of the view. */
static void root_add(cof_call_views *cv, const cof_mount *m, const char *const *ro_tops)
{
	cof_view_root *r = &cv->roots[cv->n];

	snprintf(r->name, sizeof r->name, "m%d", cv->n);
	snprintf(r->vol, sizeof r->vol, "%s", m->vol);
	snprintf(r->subpath, sizeof r->subpath, "%s", m->subpath);
	r->shown = m->path;
	r->rw = m->rw;
	r->ro_tops = ro_tops;
	cv->ex[cv->n] = (excl_ctx){&cv->a, m};
	r->excluded = excluded;
	r->excl_ctx = &cv->ex[cv->n];
	cv->mounts[cv->n++] = m;
}

/* The turn's user as a subject of the agent: its volume at /user. */
static void user_add(cof_turns *ts, cof_turn *t, cof_call_views *cv)
{
	cof_err e = {0};
	json_t *out = NULL;

	if (!t->user[0] || cv->n >= COF_VIEW_ROOTS ||
	    cof_subject_volume(ts->st, t->org, t->agent, t->user, &out, &e)) {
		cof_err_clear(&e); /* not a valid subject id: no /user */
		return;
	}
	snprintf(cv->user.path, sizeof cv->user.path, "/user");
	snprintf(cv->user.vol, sizeof cv->user.vol, "%s",
		 json_string_value(json_object_get(out, "volumeId")));
	cv->user.rw = 1;
	json_decref(out);
	root_add(cv, &cv->user, user_ro);
}

/* Mounts the roots [from, to) of cv as one view at DIR/sub (a layer for a
 * read-write one), served by a thread. 0, or -1 with err. */
static int view_mount(cof_turns *ts, cof_turn *t, cof_call_views *cv, int from, int to,
		      const char *sub, cof_vfs **out, cof_err *err)
{
	cof_view_opts o = {0};
	char mp[PATH_MAX + 80];

	snprintf(mp, sizeof mp, "%s/%s", cv->dir, sub);
	if (mkdir(mp, 0755))
		return cof_error(err, COF_EINTERNAL, "cannot prepare the call's view: %s",
				 strerror(errno));
	o.st = ts->st;
	o.org = t->org;
	o.roots = cv->roots + from;
	o.nroots = to - from;
	o.way = COF_VIEW_CALL;
	o.layer_dir = to > from && cv->roots[from].rw ? cv->layer : NULL;
	o.allow_other = ts->root_user; /* the call runs as the turn's own uid */
	o.noexec = 1;
	o.owner = ts->root_user ? t->uid : 0;
	if (cof_view_mount(&o, mp, out, err) || cof_view_start(*out, err))
		return -1;
	return 0;
}

/* Puts the read-write roots first: they are one view with a layer, the
 * read-only ones another without, whose opens cost no round trip (a
 * read-only view answers no open; src/view/ops.c). */
static void roots_order(cof_call_views *cv)
{
	cof_view_root r[COF_VIEW_ROOTS];
	excl_ctx ex[COF_VIEW_ROOTS];
	const cof_mount *m[COF_VIEW_ROOTS];
	int k = 0;

	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < cv->n; i++)
			if ((!cv->roots[i].rw) == pass) {
				r[k] = cv->roots[i];
				ex[k] = cv->ex[i];
				m[k++] = cv->mounts[i];
			}
	for (int i = 0; i < cv->n; i++) {
		cv->roots[i] = r[i];
		cv->ex[i] = ex[i];
		cv->roots[i].excl_ctx = &cv->ex[i];
		cv->mounts[i] = m[i];
		cv->nrw += r[i].rw;
	}
}

int cof_call_views_open(cof_turns *ts, cof_turn *t, const char *call, cof_call_views **out,
			cof_err *err)
{
	cof_call_views *cv = cof_calloc(1, sizeof *cv);
	char co[PATH_MAX + 80];

	*out = NULL;
	if (!cv)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	snprintf(cv->call, sizeof cv->call, "%s", call);
	/* the mounts as they are now: a change applies from the next call */
	if (cof_agent_load(ts->st, t->org, t->agent, &cv->a, err)) {
		free(cv);
		return -1;
	}
	if (!ts->views_ok) { /* no FUSE here: the call runs without them */
		*out = cv;
		return 0;
	}
	for (size_t i = 0; i < cv->a.nmounts && cv->n < COF_VIEW_ROOTS - 1; i++)
		root_add(cv, &cv->a.mounts[i], NULL);
	user_add(ts, t, cv);
	if (cv->n == 0) {
		*out = cv;
		return 0;
	}
	roots_order(cv);
	snprintf(co, sizeof co, "%s/layers/%s", ts->root, t->id);
	snprintf(cv->layer, sizeof cv->layer, "%s/%s", co, call);
	snprintf(cv->dir, sizeof cv->dir, "%s/views/%s", ts->root, call);
	if ((mkdir(co, 0700) && errno != EEXIST) || mkdir(cv->layer, 0700) ||
	    mkdir(cv->dir, 0755)) {
		cof_error(err, COF_EINTERNAL, "cannot prepare the call's view: %s",
			  strerror(errno));
		cof_call_views_close(cv);
		return -1;
	}
	if ((cv->nrw > 0 && view_mount(ts, t, cv, 0, cv->nrw, "rw", &cv->vfs, err)) ||
	    (cv->nrw < cv->n && view_mount(ts, t, cv, cv->nrw, cv->n, "ro", &cv->ro, err))) {
		cof_call_views_close(cv);
		return -1;
	}
	*out = cv;
	return 0;
}

int cof_call_views_binds(const cof_turns *ts, const cof_call_views *cv, cof_bind *b, int max)
{
	int n = 0;

	if (!cv || (!cv->vfs && !cv->ro))
		return 0;
	/* parents before children: "/data" is bound before "/data/x" */
	for (size_t len = 1; len <= COF_AGENT_PATH_MAX && n < cv->n; len++)
		for (int i = 0; i < cv->n && n < max; i++) {
			if (strlen(cv->roots[i].shown) != len)
				continue;
			/* as root the child has bound the view at /mnt of its
			 * own namespace (the turn's uid cannot enter the scratch
			 * root) */
			snprintf(b[n].src, sizeof b[n].src, "%s/%s/%s",
				 ts->root_user ? COF_VIEW_INNER : cv->dir,
				 i < cv->nrw ? "rw" : "ro", cv->roots[i].name);
			b[n].dst = cv->roots[i].shown;
			b[n].ro = !cv->roots[i].rw;
			n++;
		}
	return n;
}

const char *cof_call_views_dir(const cof_call_views *cv)
{
	return cv && (cv->vfs || cv->ro) ? cv->dir : NULL;
}

/* Records what a root's commit wrote: read tracking (a file the call wrote
 * counts as written by the agent), the agent's own change (no files_changed
 * back to it) and the run's files. */
static void record(cof_turns *ts, cof_call_views *cv, int i, const cof_view_result *r)
{
	const cof_mount *m = cv->mounts[i];
	cof_err e = {0};
	json_t *f;
	size_t k;

	cof_agent_own_write(ts->st, &cv->a, m->vol, r->seq);
	json_array_foreach(r->files, k, f) {
		cof_target tg = {.mount = m};
		const char *rel = json_string_value(json_object_get(f, "path"));
		if ((size_t)snprintf(tg.vpath, sizeof tg.vpath, "%s%s%s", m->subpath,
				     *m->subpath ? "/" : "", rel) >= sizeof tg.vpath)
			continue;
		cof_agent_path_of(m, tg.vpath, tg.apath, sizeof tg.apath);
		cof_agent_seen_put(ts->st, &cv->a, &tg,
				   json_integer_value(json_object_get(f, "version")),
				   json_string_value(json_object_get(f, "sha256")), &e);
		cof_err_clear(&e);
		if (cv->a.run) {
			cof_agent_run_wrote(ts->st, &cv->a, tg.apath, f, &e);
			cof_err_clear(&e);
		}
	}
}

void cof_call_views_end(cof_turns *ts, cof_turn *t, cof_call_views *cv, int commit,
			const char *run, json_t *answer, json_t *notes)
{
	cof_view_result res[COF_VIEW_ROOTS];
	json_t *committed, *conflicts;
	char cdir[PATH_MAX + 80];
	int cfd;

	if (!cv || (!cv->vfs && !cv->ro))
		return;
	cof_view_detach(cv->ro);
	cof_view_detach(cv->vfs);
	if (!cv->vfs) { /* only read-only mounts: nothing to land */
		if (commit)
			json_object_set_new(answer, "committed", json_array());
		return;
	}
	if (!commit) {
		json_array_append_new(notes, json_string(
			"nothing the call wrote under the agent's mounts was kept (it was stopped)"));
		return;
	}
	cv->a.run = run;
	snprintf(cdir, sizeof cdir, "%s/.conflicts", t->ws);
	if (mkdir(cdir, 0755) == 0 && ts->root_user)
		chown(cdir, t->uid, t->uid);
	cfd = open(cdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	cof_view_commit(cv->vfs, cfd, res);
	if (cfd >= 0)
		close(cfd);
	rmdir(cdir); /* kept only when it holds a conflict */
	committed = json_array();
	conflicts = json_array();
	for (int i = 0; i < cv->nrw; i++) {
		json_t *c;
		size_t k;
		if (res[i].seq > 0) {
			json_array_append_new(committed, json_pack(
				"{s:s, s:s, s:I, s:I, s:I}", "volumeId", cv->roots[i].vol,
				"path", cv->roots[i].shown, "seq", (json_int_t)res[i].seq,
				"written", (json_int_t)res[i].written, "removed",
				(json_int_t)res[i].removed));
			record(ts, cv, i, &res[i]);
		}
		if (res[i].err.code != COF_OK)
			json_array_append_new(notes, json_sprintf(
				"nothing the call wrote under %s was kept: %s", cv->roots[i].shown,
				res[i].err.msg));
		json_array_foreach(res[i].conflicts, k, c) {
			const char *rel = json_string_value(json_object_get(c, "path"));
			json_t *x = json_pack("{s:s++, s:O}", "path", cv->roots[i].shown, "/", rel,
					      "reason", json_object_get(c, "reason"));
			json_array_append_new(conflicts, x);
			json_array_append_new(notes, json_sprintf(
				"%s/%s was not written: %s; the call's version is at "
				"/tmp/.conflicts%s/%s: read the file again and redo the change",
				cv->roots[i].shown, rel,
				json_string_value(json_object_get(c, "reason")), cv->roots[i].shown,
				rel));
		}
		cof_view_result_release(&res[i]);
	}
	json_object_set_new(answer, "committed", committed);
	if (json_array_size(conflicts))
		json_object_set_new(answer, "conflicts", conflicts);
	else
		json_decref(conflicts);
}

void cof_call_views_close(cof_call_views *cv)
{
	if (!cv)
		return;
	char p[PATH_MAX + 80];

	cof_view_unmount(cv->vfs);
	cof_view_unmount(cv->ro);
	if (cv->layer[0])
		rmdir(cv->layer);
	if (cv->dir[0]) {
		snprintf(p, sizeof p, "%s/rw", cv->dir);
		rmdir(p);
		snprintf(p, sizeof p, "%s/ro", cv->dir);
		rmdir(p);
		rmdir(cv->dir);
	}
	cof_agent_release(&cv->a);
	free(cv);
}
