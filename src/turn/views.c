/*
 * views.c — the agent's files in a call: one view (src/view/) per call over
 * every mount of the agent as it was when the call began, and for the turn's
 * user (a subject of the agent) its volume at /user and its attachments at
 * /attachments (read-only), as the agent layer gives them to a subject. The view is mounted at
 * ROOT/views/CALL, served by a thread of cofferd, and bound by bwrap at
 * each mount's agent path (ro mounts read-only: EROFS); written bytes are
 * files in ROOT/layers/TURN/CALL on the scratch disk, out of the call's
 * sight, measured with the turn's workspace so they count against its
 * limits. At the call's end the layer
 * lands as one change per volume, unless the call hit a limit or its
 * timeout; a conflicting file is kept at /tmp/.conflicts/PATH.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "hooks/hooks.h"
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

/* The two large members come first and are not zeroed when a spare is
 * used again (cv_new): cof_agent_load sets all of `a` it reads, root_add all
 * of roots[0, n); everything from `ex` on is zeroed. */
struct cof_call_views {
	cof_agent a;                    /* 290 KB, mostly its mounts array */
	cof_view_root roots[COF_VIEW_ROOTS]; /* 143 KB, mostly subpaths */
	excl_ctx ex[COF_VIEW_ROOTS];
	const cof_mount *mounts[COF_VIEW_ROOTS];
	int n;
	int nrw;                        /* roots[0..nrw) are read-write: vfs */
	cof_vfs *vfs;                   /* the read-write roots, at DIR/rw */
	cof_vfs *ro;                    /* the read-only roots, at DIR/ro */
	struct shared_ro *shared;       /* or: the turn's kept view of them */
	struct shared_ro *kept;         /* the turn's kept view of the rw roots
					   (then vfs is its view, bound) */
	int keep_rw;                    /* vfs was left untouched: keep it */
	const cof_turns *ts;
	char turn[64];
	char dir[PATH_MAX + 64];        /* ROOT/views/CALL */
	char layer[PATH_MAX + 160];     /* ROOT/layers/TURN/CALL */
	int made;                       /* dir and layer are made: the call
					   mounts a view of its own */
	char from[2][PATH_MAX + 80];    /* the rw and ro roots' folders, as
					   the child binds them (see) */
	char call[40];
};

static int excluded(const void *ctx, const char *vpath, int is_dir)
{
	const excl_ctx *e = ctx;

	return e->a->excl && cof_agent_excluded_vpath(e->a, e->m, vpath, is_dir);
}

/* ------------------------------------------------ spares
 *
 * A cof_call_views is about 450 KB (the agent's mounts array, the roots'
 * subpaths): past the 256 KiB mmap threshold (server.c), a fresh one each
 * call was an mmap, its touched pages faulted in and an munmap (about 6% of
 * cofferd's samples of a confined `true`). Closed ones are kept, up to
 * CV_SPARES for the process, and given to the next open: only their small
 * members are zeroed. A spare is owned by the list (spare_mu) until taken;
 * what close does not keep is freed; cof_call_views_turn_end(ts, NULL) frees
 * the list. */
#define CV_SPARES 4

static pthread_mutex_t spare_mu = PTHREAD_MUTEX_INITIALIZER;
static cof_call_views *spares[CV_SPARES];
static int nspares;

/* A cof_call_views as cof_calloc gives it, but for `a` and `roots` (see the
 * struct); NULL when out of memory. */
static cof_call_views *cv_new(void)
{
	cof_call_views *cv = NULL;

	pthread_mutex_lock(&spare_mu);
	if (nspares > 0)
		cv = spares[--nspares];
	pthread_mutex_unlock(&spare_mu);
	if (!cv)
		return cof_calloc(1, sizeof *cv);
	memset(&cv->ex, 0, sizeof *cv - offsetof(cof_call_views, ex));
	return cv;
}

/* Keeps cv (its agent released) as a spare, or frees it. */
static void cv_free(cof_call_views *cv)
{
	pthread_mutex_lock(&spare_mu);
	if (nspares < CV_SPARES) {
		spares[nspares++] = cv;
		cv = NULL;
	}
	pthread_mutex_unlock(&spare_mu);
	free(cv);
}

static void cv_spares_free(void)
{
	pthread_mutex_lock(&spare_mu);
	while (nspares > 0)
		free(spares[--nspares]);
	pthread_mutex_unlock(&spare_mu);
}

/* Adds mount m as root "mN" of the view. */
static void root_add(cof_call_views *cv, const cof_mount *m, const char *const *ro_tops)
{
	cof_view_root *r = &cv->roots[cv->n];

	/* what a spare's earlier call left, but not the 4 KB subpath */
	memset(r, 0, offsetof(cof_view_root, subpath));
	memset((char *)r + offsetof(cof_view_root, subpath) + sizeof r->subpath, 0,
	       sizeof *r - offsetof(cof_view_root, subpath) - sizeof r->subpath);
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

/* The agent's mounts as roots, and the turn's user as a subject of the agent
 * (cof_agent_as_subject): its /user (memories/ and skills/ read-only) and
 * its /attachments. One place, so a kept view and a call's agree. */
static void roots_add(cof_turns *ts, cof_turn *t, cof_call_views *cv)
{
	cof_err e = {0};

	if (t->user[0] && cof_agent_as_subject(ts->st, &cv->a, t->user, 0, &e))
		cof_err_clear(&e); /* not a valid subject id: no /user */
	for (size_t i = 0; i < cv->a.nmounts && cv->n < COF_VIEW_ROOTS; i++)
		root_add(cv, &cv->a.mounts[i], cv->a.mounts[i].reserved ? user_ro : NULL);
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
	/* its processes' ids, as the view sees them: the turn's own as root,
	 * else ours (a user namespace maps them to us) */
	o.warm = 1;
	o.warm_uid = ts->root_user ? t->uid : getuid();
	o.warm_gid = ts->root_user ? (gid_t)t->uid : getgid();
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

/* ------------------------------------------------ a turn's kept views
 *
 * A call's views never change under it (each root at one seq), but each
 * call mounting its own started cold: the kernel's page cache, dentries and
 * attributes belong to one FUSE mount, so every call's first `grep -r` paid
 * a READ round trip per file. So a view is kept for the next call of the
 * same turn, and used by it only while it shows exactly what that call
 * would see: the same agent mounts (names, volumes, subpaths, paths), the
 * same exclusions, and every volume still at the seq the view reads (each
 * call reads at the seq it began: a volume that moved gets a new view).
 * Two kinds, within one turn only (one uid: attributes the kernel caches
 * name the caller's uid):
 *  - the read-only roots' view, shared by the turn's calls at once;
 *  - the read-write roots' view, kept only when its call left its layer
 *    untouched (nothing written, removed, made or renamed: then it shows
 *    its seqs exactly, as a new view would), and used by one call at a
 *    time: a call never sees another call's layer. A call that writes
 *    lands its layer as before and its view ends with it.
 * A kept view ends when its turn ends, when a newer one of its kind and
 * turn replaces it, or when unused for KEEP_IDLE seconds or past KEEP_MAX
 * unused ones. */

#define KEEP_IDLE 600
#define KEEP_MAX 16

typedef struct shared_ro {
	struct shared_ro *next;
	const cof_turns *ts;
	char turn[64];
	int rw;                 /* the read-write roots' view (cv->vfs), else
				   the read-only roots' (cv->ro) */
	char *sig;              /* what it shows (shared_sig) */
	cof_call_views *cv;     /* its own agent, roots, view, folders */
	int refs, stale;
	int64_t used;           /* cof_mono_ms() when last let go */
} shared_ro;

static pthread_mutex_t shared_mu = PTHREAD_MUTEX_INITIALIZER;
static shared_ro *shared_list;
static uint64_t shared_next;

/* What roots [from, to) of cv show, as one string: the turn, the
 * exclusions, and each root's name, volume, subpath, path, mode and seq
 * (seqs[k] for root from + k). Owned; NULL when out of memory. */
static char *shared_sig(const char *turn, const cof_call_views *cv, int from, int to,
			const int64_t *seqs)
{
	json_t *ex = json_object_get(cv->a.settings, "exclude");
	char *exs = ex ? json_dumps(ex, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY) : NULL;
	size_t cap = 256 + (exs ? strlen(exs) : 0) + (size_t)cv->n * 9000, len;
	char *s = malloc(cap);

	if (!s) {
		free(exs);
		return NULL;
	}
	len = (size_t)snprintf(s, cap, "%s\n%s\n%d\n%s\n", turn, cv->a.id,
			       cof_json_bool(cv->a.settings, "defaultExclusions", 1),
			       exs ? exs : "");
	free(exs);
	for (int i = from; i < to && len < cap; i++)
		len += (size_t)snprintf(s + len, cap - len, "%s\t%s\t%s\t%s\t%d%d\t%lld\n",
					cv->roots[i].name, cv->roots[i].vol,
					cv->roots[i].subpath, cv->roots[i].shown,
					cv->roots[i].rw, cv->roots[i].ro_tops != NULL,
					(long long)seqs[i - from]);
	return s;
}

/* The signature of what roots [from, to) of the call would show now. */
static char *shared_sig_now(cof_turns *ts, const cof_turn *t, const cof_call_views *cv,
			    int from, int to)
{
	int64_t seqs[COF_VIEW_ROOTS];
	cof_err e = {0};

	for (int i = from; i < to; i++) {
		cof_view vw;
		if (cof_view_open(ts->st, t->org, cv->roots[i].vol, NULL, &vw, &e)) {
			cof_err_clear(&e);
			return NULL;
		}
		seqs[i - from] = vw.seq;
	}
	return shared_sig(t->id, cv, from, to, seqs);
}

/* The signature of what a mounted view of roots [from, to) of cv shows. */
static char *shared_sig_of(const char *turn, const cof_call_views *cv, const cof_vfs *vfs,
			   int from, int to)
{
	int64_t seqs[COF_VIEW_ROOTS];

	for (int i = from; i < to; i++)
		seqs[i - from] = cof_view_seq(vfs, i - from);
	return shared_sig(turn, cv, from, to, seqs);
}

static void shared_free(shared_ro *s)
{
	if (!s)
		return;
	cof_call_views_close(s->cv);
	free(s->sig);
	free(s);
}

/* Takes out of the list (under shared_mu) every kept view no call uses
 * that is stale, idle too long, or past KEEP_MAX; returns them chained. */
static shared_ro *shared_evictable(void)
{
	shared_ro *out = NULL, **pp = &shared_list;
	int64_t now = cof_mono_ms();
	int idle = 0;

	while (*pp) {
		shared_ro *s = *pp;
		int unused = s->refs == 0;
		idle += unused;
		if (unused && (s->stale || now - s->used > KEEP_IDLE * 1000LL || idle > KEEP_MAX)) {
			*pp = s->next;
			s->next = out;
			out = s;
			continue;
		}
		pp = &s->next;
	}
	return out;
}

static void shared_free_all(shared_ro *s)
{
	while (s) {
		shared_ro *next = s->next;
		shared_free(s);
		s = next;
	}
}

/* Adds s to the list, in use once (refs) or not, replacing the older views
 * of its kind and turn; ends what may end. */
static void shared_insert(shared_ro *s, int refs)
{
	shared_ro *gone;

	pthread_mutex_lock(&shared_mu);
	for (shared_ro *o = shared_list; o; o = o->next)
		if (o->ts == s->ts && o->rw == s->rw && !strcmp(o->turn, s->turn))
			o->stale = 1;
	s->refs = refs;
	s->used = cof_mono_ms();
	s->next = shared_list;
	shared_list = s;
	gone = shared_evictable();
	pthread_mutex_unlock(&shared_mu);
	shared_free_all(gone);
}

/* The kept view of its kind showing `want` that the call may use (the
 * read-write one only when no call uses it), its refs taken; or NULL. */
static shared_ro *shared_find(const cof_turns *ts, int rw, const char *want)
{
	shared_ro *s;

	pthread_mutex_lock(&shared_mu);
	for (s = shared_list; s; s = s->next)
		if (s->ts == ts && s->rw == rw && !s->stale && !strcmp(s->sig, want) &&
		    (!rw || s->refs == 0))
			break;
	if (s)
		s->refs++;
	pthread_mutex_unlock(&shared_mu);
	return s;
}

/* Lets go of s; `end`: it must end (its view changed). */
static void shared_put(shared_ro *s, int end)
{
	shared_ro *gone;

	pthread_mutex_lock(&shared_mu);
	s->refs--;
	s->used = cof_mono_ms();
	s->stale |= end;
	gone = shared_evictable();
	pthread_mutex_unlock(&shared_mu);
	shared_free_all(gone);
}

/* A new kept view of the read-only roots the turn's agent has now, mounted
 * at ROOT/views/keep-N/ro. NULL when it cannot be made. */
static shared_ro *shared_make(cof_turns *ts, cof_turn *t)
{
	shared_ro *s = cof_calloc(1, sizeof *s);
	cof_call_views *cv = s ? cv_new() : NULL;
	cof_err e = {0};

	if (!cv || cof_agent_load(ts->st, t->org, t->agent, &cv->a, &e)) {
		cof_err_clear(&e);
		if (cv)
			cv_free(cv);
		free(s);
		return NULL;
	}
	s->cv = cv;
	s->ts = ts;
	snprintf(s->turn, sizeof s->turn, "%s", t->id);
	roots_add(ts, t, cv);
	roots_order(cv);
	pthread_mutex_lock(&shared_mu);
	uint64_t k = ++shared_next;
	pthread_mutex_unlock(&shared_mu);
	snprintf(cv->dir, sizeof cv->dir, "%s/views/keep-%llu", ts->root, (unsigned long long)k);
	if (cv->nrw == cv->n || mkdir(cv->dir, 0755) ||
	    view_mount(ts, t, cv, cv->nrw, cv->n, "ro", &cv->ro, &e) ||
	    !(s->sig = shared_sig_of(t->id, cv, cv->ro, cv->nrw, cv->n))) {
		cof_err_clear(&e);
		shared_free(s);
		return NULL;
	}
	return s;
}

/* Where kept view s is mounted ("ro" or "rw" under its folder). */
static const char *shared_dir(const shared_ro *s)
{
	static __thread char p[PATH_MAX + 80];

	snprintf(p, sizeof p, "%s/%s", s->cv->dir, s->rw ? "rw" : "ro");
	return p;
}

/* Gives the call the turn's kept views of its roots where one shows what
 * the call would see now (cv->shared, cv->kept), making the read-only one
 * if none does; what it does not get, the call mounts as before. */
static void shared_use(cof_turns *ts, cof_turn *t, cof_call_views *cv)
{
	char *want;
	shared_ro *s;

	if (cv->nrw > 0 && (want = shared_sig_now(ts, t, cv, 0, cv->nrw)) != NULL) {
		if ((s = shared_find(ts, 1, want)) != NULL) {
			cv->kept = s;
			cv->vfs = s->cv->vfs;
			cof_view_renew_wait(cv->vfs); /* (one call at a time uses it) */
		}
		free(want);
	}
	if (cv->nrw == cv->n || !(want = shared_sig_now(ts, t, cv, cv->nrw, cv->n)))
		return;
	if (!(s = shared_find(ts, 0, want)) && (s = shared_make(ts, t)) != NULL) {
		int same = !strcmp(s->sig, want); /* else the agent changed meanwhile */
		shared_insert(s, same);
		if (!same)
			s = NULL;
	}
	free(want);
	if (s)
		cv->shared = s;
}

/* At close: the call lets go of the kept views it used and, when its own
 * read-write view is left untouched (cv->keep_rw), hands it over to be
 * kept. 1 when cv itself was handed over (the caller must not free it). */
static int shared_done(cof_call_views *cv)
{
	shared_ro *s;

	if (cv->shared) {
		shared_put(cv->shared, 0);
		cv->shared = NULL;
	}
	if (cv->kept) {
		shared_put(cv->kept, !cv->keep_rw);
		cv->kept = NULL;
		cv->vfs = NULL; /* the kept view's, not ours */
		return 0;
	}
	if (!cv->keep_rw || !cv->vfs || !(s = cof_calloc(1, sizeof *s)))
		return 0;
	cv->keep_rw = 0;
	s->rw = 1;
	s->ts = cv->ts;
	snprintf(s->turn, sizeof s->turn, "%s", cv->turn);
	if (!(s->sig = shared_sig_of(cv->turn, cv, cv->vfs, 0, cv->nrw))) {
		free(s);
		return 0;
	}
	/* what is not the read-write view ends now */
	cof_view_unmount(cv->ro);
	cv->ro = NULL;
	s->cv = cv;
	shared_insert(s, 0);
	return 1;
}

void cof_call_views_turn_end(cof_turns *ts, const cof_turn *t)
{
	shared_ro *gone;

	pthread_mutex_lock(&shared_mu);
	for (shared_ro *s = shared_list; s; s = s->next)
		if (s->ts == ts && (!t || !strcmp(s->turn, t->id)))
			s->stale = 1;
	gone = shared_evictable();
	pthread_mutex_unlock(&shared_mu);
	shared_free_all(gone);
	if (!t)
		cv_spares_free();
}

int cof_call_views_open(cof_turns *ts, cof_turn *t, const char *call, cof_call_views **out,
			cof_err *err)
{
	cof_call_views *cv = cv_new();
	char co[PATH_MAX + 80];

	*out = NULL;
	if (!cv)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	snprintf(cv->call, sizeof cv->call, "%s", call);
	/* the mounts as they are now: a change applies from the next call */
	if (cof_agent_load(ts->st, t->org, t->agent, &cv->a, err)) {
		cv_free(cv);
		return -1;
	}
	if (!ts->views_ok) { /* no FUSE here: the call runs without them */
		*out = cv;
		return 0;
	}
	roots_add(ts, t, cv);
	if (cv->n == 0) {
		*out = cv;
		return 0;
	}
	roots_order(cv);
	snprintf(co, sizeof co, "%s/layers/%s", ts->root, t->id);
	snprintf(cv->layer, sizeof cv->layer, "%s/%s", co, call);
	snprintf(cv->dir, sizeof cv->dir, "%s/views/%s", ts->root, call);
	cv->ts = ts;
	snprintf(cv->turn, sizeof cv->turn, "%s", t->id);
	shared_use(ts, t, cv);
	/* folders on the scratch disk only for a view of the call's own: a
	 * call the turn's kept views serve makes none (bench/turns_overhead.py) */
	cv->made = (cv->nrw > 0 && !cv->vfs) || (cv->nrw < cv->n && !cv->shared);
	if (cv->made && ((mkdir(co, 0700) && errno != EEXIST) || mkdir(cv->layer, 0700) ||
			 mkdir(cv->dir, 0755))) {
		cof_error(err, COF_EINTERNAL, "cannot prepare the call's view: %s",
			  strerror(errno));
		cof_call_views_close(cv);
		return -1;
	}
	if ((cv->nrw > 0 && !cv->vfs &&
	     view_mount(ts, t, cv, 0, cv->nrw, "rw", &cv->vfs, err)) ||
	    (cv->nrw < cv->n && !cv->shared &&
	     view_mount(ts, t, cv, cv->nrw, cv->n, "ro", &cv->ro, err))) {
		cof_call_views_close(cv);
		return -1;
	}
	*out = cv;
	return 0;
}

void cof_call_views_see(const cof_turns *ts, cof_call_views *cv, cof_call_see *see,
			cof_bind *b, int max)
{
	int n = 0;

	see->binds = b;
	see->nbinds = 0;
	see->view_rw = see->view_ro = NULL;
	see->kept = 1;
	if (!cv || (!cv->vfs && !cv->ro && !cv->shared))
		return;
	/* [0] the read-write roots, [1] the read-only ones: a kept view is
	 * bound from where it is mounted, as the call's own one is */
	for (int i = 0; i < 2; i++) {
		const shared_ro *k = i ? cv->shared : cv->kept;
		if (!(i ? cv->ro || cv->shared : cv->vfs != NULL))
			continue;
		if (k)
			snprintf(cv->from[i], sizeof cv->from[i], "%s", shared_dir(k));
		else
			snprintf(cv->from[i], sizeof cv->from[i], "%s/%s", cv->dir, i ? "ro" : "rw");
		see->kept &= k != NULL; /* the call's own view ends with it */
		if (ts->root_user)
			*(i ? &see->view_ro : &see->view_rw) = cv->from[i];
	}
	/* parents before children: "/data" is bound before "/data/x" */
	for (size_t len = 1; len <= COF_AGENT_PATH_MAX && n < cv->n; len++)
		for (int i = 0; i < cv->n && n < max; i++) {
			if (strlen(cv->roots[i].shown) != len)
				continue;
			/* as root the child has bound the view at /mnt of its
			 * own namespace (the turn's uid cannot enter the scratch
			 * root) */
			if (ts->root_user)
				snprintf(b[n].src, sizeof b[n].src, COF_VIEW_INNER "/%s/%s",
					 i < cv->nrw ? "rw" : "ro", cv->roots[i].name);
			else /* bwrap binds it from where it is */
				snprintf(b[n].src, sizeof b[n].src, "%s/%s",
					 cv->from[i >= cv->nrw], cv->roots[i].name);
			b[n].dst = cv->roots[i].shown;
			b[n].ro = !cv->roots[i].rw;
			n++;
		}
	see->nbinds = n;
}

/* Records what a root's commit wrote: read tracking (a file the call wrote
 * counts as written by the agent), the agent's own change (no files_changed
 * back to it) and the run's files; the tracking and the run's files each in
 * one write for all of the root's files, not one a file. */
static void record(cof_turns *ts, cof_call_views *cv, int i, const cof_view_result *r)
{
	const cof_mount *m = cv->mounts[i];
	size_t nf = json_array_size(r->files), ns = 0, k;
	cof_seen_row *rows = cof_calloc(nf + 1, sizeof *rows);
	cof_run_item *items = cv->a.run ? cof_calloc(nf + 1, sizeof *items) : NULL;
	char **paths = cof_calloc(nf + 1, sizeof *paths);
	char **apaths = cv->a.run ? cof_calloc(nf + 1, sizeof *apaths) : NULL;
	size_t nr = 0;
	cof_target *tg = cof_calloc(1, sizeof *tg);
	cof_err e = {0};
	json_t *f;

	cof_agent_own_write(ts->st, &cv->a, m->vol, r->seq);
	if (!rows || !paths || !tg || (cv->a.run && (!items || !apaths)))
		goto out;   /* out of memory: the tracking is lost, not the files */
	tg->mount = m;
	json_array_foreach(r->files, k, f) {
		const char *rel = json_string_value(json_object_get(f, "path"));
		if ((size_t)snprintf(tg->vpath, sizeof tg->vpath, "%s%s%s", m->subpath,
				     *m->subpath ? "/" : "", rel) >= sizeof tg->vpath ||
		    !(paths[ns] = strdup(tg->vpath)))
			continue;
		rows[ns].path = paths[ns];
		rows[ns].version = json_integer_value(json_object_get(f, "version"));
		rows[ns].sha = json_string_value(json_object_get(f, "sha256"));
		ns++;
		if (cv->a.run) {
			cof_agent_path_of(m, tg->vpath, tg->apath, sizeof tg->apath);
			if (!(apaths[nr] = strdup(tg->apath)))
				continue;
			items[nr] = (cof_run_item){
				.kind = "file", .path = apaths[nr],
				.version = json_integer_value(json_object_get(f, "version")),
				.size = json_integer_value(json_object_get(f, "size")),
				.ctype = json_string_value(json_object_get(f, "contentType")),
			};
			nr++;
		}
	}
	/* the run's files in one write, as the tracking (not one a file) */
	cof_agent_run_add_many(ts->st, &cv->a, items, nr, &e);
	cof_err_clear(&e);
	cof_agent_seen_put_many(ts->st, &cv->a, m, rows, ns, &e);
	cof_err_clear(&e);
out:
	for (k = 0; paths && k < ns; k++)
		free(paths[k]);
	for (k = 0; apaths && k < nr; k++)
		free(apaths[k]);
	free(paths);
	free(apaths);
	free(items);
	free(rows);
	free(tg);
}

/* The agent paths of a root's files merged by lines (written, among
 * `written`, over someone else's edit of other lines), or NULL for none. */
static json_t *merged_paths(const char *shown, json_t *merged)
{
	json_t *out, *p;
	size_t k;

	if (!json_array_size(merged))
		return NULL;
	out = json_array();
	json_array_foreach(merged, k, p)
		json_array_append_new(out, json_sprintf("%s/%s", shown, json_string_value(p)));
	return out;
}

void cof_call_views_end(cof_turns *ts, cof_turn *t, cof_call_views *cv, int commit,
			const char *run, const cof_by *by, json_t *answer, json_t *notes)
{
	cof_view_result res[COF_VIEW_ROOTS];
	json_t *committed, *conflicts;
	int ws, cfd;

	if (!cv || (!cv->vfs && !cv->ro && !cv->shared))
		return;
	cof_view_detach(cv->ro);
	/* a read-write view its call left untouched lands nothing and shows
	 * its seqs exactly: it may serve the turn's next call (shared_done) */
	cv->keep_rw = commit && cv->vfs && !ts->stop && cof_view_touched(cv->vfs) == 0;
	if (!cv->keep_rw)
		cof_view_detach(cv->vfs);
	else /* (the call's processes are gone) what it only looked at is
	      * stored again by the next call's listings */
		cof_view_renew(cv->vfs);
	if (!cv->vfs || cv->keep_rw) { /* nothing to land */
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
	/* the workspace is the call's own /tmp: .conflicts is made and owned
	 * through fds beneath it, never by a path the call could have linked */
	ws = open(t->ws, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	cfd = ws < 0 ? -1 : cof_mkdirs_beneath(ws, ".conflicts", 0755,
					      ts->root_user ? (long)t->uid : -1);
	cof_view_commit(cv->vfs, cfd, by, res);
	if (cfd >= 0)
		close(cfd);
	if (ws >= 0) { /* kept only when it holds a conflict */
		unlinkat(ws, ".conflicts", AT_REMOVEDIR);
		close(ws);
	}
	committed = json_array();
	conflicts = json_array();
	for (int i = 0; i < cv->nrw; i++) {
		json_t *c;
		size_t k;
		if (res[i].seq > 0) {
			json_t *e = json_pack(
				"{s:s, s:s, s:I, s:I, s:I}", "volumeId", cv->roots[i].vol,
				"path", cv->roots[i].shown, "seq", (json_int_t)res[i].seq,
				"written", (json_int_t)res[i].written, "removed",
				(json_int_t)res[i].removed);
			json_t *m = merged_paths(cv->roots[i].shown, res[i].merged);
			if (m)
				json_object_set_new(e, "merged", m);
			json_array_append_new(committed, e);
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
	if (json_array_size(conflicts)) {
		cof_hooks_emit(ts->st, t->org, "call.conflicted", NULL, t->agent,
			       json_pack("{s:s, s:s, s:O}", "turnId", t->id, "agent", t->agent,
					 "conflicts", conflicts));
		json_object_set_new(answer, "conflicts", conflicts);
	} else {
		json_decref(conflicts);
	}
}

void cof_call_views_close(cof_call_views *cv)
{
	if (!cv)
		return;
	char p[PATH_MAX + 80];

	if (shared_done(cv))
		return; /* kept: its view lives on */
	cof_view_unmount(cv->vfs);
	cof_view_unmount(cv->ro);
	if (cv->made) {
		rmdir(cv->layer);
		snprintf(p, sizeof p, "%s/rw", cv->dir);
		rmdir(p);
		snprintf(p, sizeof p, "%s/ro", cv->dir);
		rmdir(p);
		rmdir(cv->dir);
	}
	cof_agent_release(&cv->a);
	cv_free(cv);
}
