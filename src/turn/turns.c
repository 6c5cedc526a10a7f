/*
 * turns.c — the registry of live turns: create, look up, end (DELETE or
 * expiry), the expiry sweeper, and kept outbox files.
 *
 * Each turn has a record in the store (records.c): a restart of cofferd
 * brings its live turns back. An ended turn is remembered (a ring of
 * COF_TOMBSTONES_MAX ids, then its record) so that a call to it answers 410
 * rather than 404.
 * A turn is freed when it has ended and the last call or request holding it
 * lets go; its workspace and kept files go with it.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "hooks/hooks.h"
#include "store/blob.h"
#include "turn/outbox.h"
#include "turn/turn.h"
#include "view/view.h"
#include "util/util.h"

typedef struct tomb {
	char id[40];
	char org[48];
} tomb;

/* ------------------------------------------------------------ helpers */

uid_t cof_turns_uid_new(cof_turns *ts)
{
	uint32_t r;
	uid_t uid;
	int taken;

	if (!ts->root_user)
		return geteuid(); /* no uid of its own without root */
	/* at random in a range of 2^24: another cofferd on the machine (tests
	 * run several) picks its own, so RLIMIT_NPROC and kill(-1) by uid never
	 * reach its turns */
	do {
		if (cof_random(&r, sizeof r))
			r = (uint32_t)cof_mono_ms() + ts->uid_next++;
		uid = (uid_t)(COF_TURN_UID_BASE + (r & 0xffffffu));
		taken = 0;
		for (cof_turn *t = ts->list; t; t = t->next)
			taken |= t->uid == uid;
	} while (taken);
	return uid;
}

/* Kills every process of uid `uid` (kill(-1) from a child of that uid):
 * this reaches a sandbox whose bwrap was killed before it could tie the
 * sandbox's life to its own. */
void cof_turn_kill_uid(const cof_turns *ts, const cof_turn *t)
{
	uid_t uid = t->uid;

	if (!ts->root_user)
		return;
	pid_t pid = fork();

	if (pid == 0) {
		if (setresgid(uid, uid, uid) == 0 && setresuid(uid, uid, uid) == 0)
			kill(-1, SIGKILL);
		_exit(0);
	}
	if (pid > 0)
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
}

void cof_turn_kill_calls(cof_turns *ts, cof_turn *t)
{
	int any = 0;

	for (int i = 0; i < COF_TURN_CALLS; i++)
		if (t->pids[i] > 0) {
			kill(t->pids[i], SIGKILL);
			any = 1;
		}
	if (any)
		cof_turn_kill_uid(ts, t);
	t->stop_gen++;
}

void cof_turn_tomb_add(cof_turns *ts, const char *org, const char *id)
{
	tomb *r = (tomb *)ts->tomb;

	snprintf(r[ts->tomb_next].id, sizeof r->id, "%s", id);
	snprintf(r[ts->tomb_next].org, sizeof r->org, "%s", org);
	ts->tomb_next = (ts->tomb_next + 1) % COF_TOMBSTONES_MAX;
	if (ts->ntomb < COF_TOMBSTONES_MAX)
		ts->ntomb++;
}

static int tomb_has(const cof_turns *ts, const char *org, const char *id)
{
	const tomb *r = (const tomb *)ts->tomb;

	for (size_t i = 0; i < ts->ntomb; i++)
		if (!strcmp(r[i].id, id) && !strcmp(r[i].org, org))
			return 1;
	return 0;
}

/* Finds a live turn the caller may reach and takes a reference (under mu).
 * COF_ENOTFOUND (unknown or another org's), COF_EFORBIDDEN (a key bound to
 * another agent), COF_EGONE (ended). */
static cof_turn *find(cof_turns *ts, const cof_principal *who, const char *id, cof_err *err)
{
	for (cof_turn *t = ts->list; t; t = t->next) {
		if (strcmp(t->id, id) || strcmp(t->org, who->org))
			continue;
		if (who->agent[0] && strcmp(who->agent, t->agent)) {
			cof_error(err, COF_EFORBIDDEN, "this key reaches only agent '%s' and its "
				  "turns", who->agent);
			return NULL;
		}
		if (t->ended)
			break;
		t->refs++;
		return t;
	}
	if (tomb_has(ts, who->org, id)) {
		cof_error(err, COF_EGONE, "turn '%.64s' has ended", id);
		return NULL;
	}
	cof_turn_record_miss(ts, who, id, err);
	return NULL;
}

/* Drops a reference (under mu); the last one of an ended turn frees it. */
static void unref(cof_turns *ts, cof_turn *t)
{
	if (--t->refs > 0 || !t->ended)
		return;
	for (cof_turn **p = &ts->list; *p; p = &(*p)->next)
		if (*p == t) {
			*p = t->next;
			break;
		}
	cof_quota_ws_drop(ts, t);
	cof_limits_drop(ts, t);
	free(t);
	pthread_cond_broadcast(&ts->cv);
}

/* Ends `t` (under mu): no new calls, running ones stopped. */
static void end_turn(cof_turns *ts, cof_turn *t)
{
	if (t->ended)
		return;
	t->ended = 1;
	t->stop_why = NULL;
	cof_turn_tomb_add(ts, t->org, t->id);
	if (!ts->stop) { /* a stopping cofferd ends no turn: it comes back at start */
		cof_turn_record_save(ts, t);
		cof_hooks_emit(ts->st, t->org, "turn.ended", NULL, t->agent,
			       json_pack("{s:s, s:s}", "turnId", t->id, "agent", t->agent));
	}
	cof_turn_kill_calls(ts, t);
	cof_call_views_turn_end(ts, t);
	pthread_cond_broadcast(&ts->cv);
}

/* Ends every turn past its deadline plus the grace (under mu). */
static void sweep(cof_turns *ts)
{
	int64_t now = cof_mono_ms();
	cof_turn *t = ts->list, *next;

	for (; t; t = next) {
		next = t->next;
		if (t->ended || t->deadline_ms + ts->grace * 1000 > now)
			continue;
		t->refs++;
		end_turn(ts, t);
		unref(ts, t);
	}
}

static void *sweeper_main(void *arg)
{
	cof_turns *ts = arg;

	pthread_mutex_lock(&ts->mu);
	while (!ts->stop) {
		cof_cond_wait_until(&ts->cv, &ts->mu, cof_mono_ms() + 1000);
		sweep(ts);
	}
	pthread_mutex_unlock(&ts->mu);
	return NULL;
}

/* ------------------------------------------------------------ open/close */

static void etc_free(cof_turns *ts)
{
	cof_etc_close(ts);
}

int cof_turns_open(cof_store *st, const cof_turns_opts *opts, cof_turns **out,
		   const char **how, cof_err *err)
{
	cof_turns *ts = cof_calloc(1, sizeof *ts);

	if (!ts || !(ts->tomb = cof_calloc(COF_TOMBSTONES_MAX, sizeof(tomb)))) {
		free(ts);
		return cof_error(err, COF_EINTERNAL, "out of memory");
	}
	ts->st = st;
	ts->grace = opts->grace_seconds > 0 ? opts->grace_seconds : 60;
	ts->root_user = geteuid() == 0;
	if (!realpath(opts->data, ts->data))
		snprintf(ts->data, sizeof ts->data, "%s", opts->data);
	if (opts->scratch) {
		if (mkdir(opts->scratch, 0711) && errno != EEXIST) {
			free(ts->tomb);
			free(ts);
			return cof_error(err, COF_EINTERNAL, "cannot make scratch root '%s': %s",
					 opts->scratch, strerror(errno));
		}
		if (!realpath(opts->scratch, ts->root))
			snprintf(ts->root, sizeof ts->root, "%s", opts->scratch);
	} else {
		snprintf(ts->root, sizeof ts->root, "%.4000s/scratch", ts->data);
	}
	snprintf(ts->node, sizeof ts->node, "%s", opts->node ? opts->node : "");
	pthread_mutex_init(&ts->mu, NULL);
	cof_cond_init(&ts->cv);
	cof_limits_open(ts, opts->rlimits_only);
	if (cof_confine_init(ts, err) || cof_quota_open(ts, opts->force_walk, err) ||
	    cof_turns_load(ts, err) ||
	    pthread_create(&ts->sweeper, NULL, sweeper_main, ts)) {
		if (err->code == COF_OK)
			cof_error(err, COF_EINTERNAL, "cannot start the turn sweeper");
		cof_limits_close(ts);
		etc_free(ts);
		free(ts->bpf);
		free(ts->tomb);
		free(ts);
		return -1;
	}
	*how = ts->kernel ? "disk limits kept by the kernel: a tmpfs per workspace"
	       : opts->force_walk ? "disk limits kept by a measuring loop (--scratch-mode walk)"
	       : ts->root_user ? "disk limits kept by a measuring loop: a tmpfs cannot be "
				 "mounted here"
			       : "disk limits kept by a measuring loop: not root, so no tmpfs per "
				 "workspace and no uid per turn";
	/* the agent's files in calls need FUSE; without it calls run without
	 * them rather than not at all, and the log says why */
	char views[PATH_MAX + 16];
	snprintf(views, sizeof views, "%s/views", ts->root);
	ts->views_ok = cof_view_usable(views, ts->views_why, sizeof ts->views_why);
	snprintf(ts->how, sizeof ts->how, "%s; %s; %s; memory and processes kept by %s", *how,
		 ts->views_ok ? "the agent's files shown in calls (FUSE)" : ts->views_why,
		 ts->root_user ? "bytes a call writes never run (noexec)"
		 : ts->exec_helper[0] ? "bytes a call writes never run (landlock, coffer-exec)"
		 : "without root and without coffer-exec or landlock, a call can run what it "
		   "writes in /tmp",
		 ts->cg == 2 ? "cgroup v2" : ts->cg == 1 ? "cgroup v1"
		 : opts->rlimits_only ? "rlimits (--turn-limits rlimit: per process and per "
					"call, no agent-wide cap; memfd and SysV shm refused)"
		 : "rlimits (no cgroup can be made here: per process and per call, no "
		   "agent-wide cap; memfd and SysV shm refused)");
	*how = ts->how;
	*out = ts;
	return 0;
}

void cof_turns_stop(cof_turns *ts)
{
	pthread_mutex_lock(&ts->mu);
	ts->stop = 1;
	for (cof_turn *t = ts->list; t; t = t->next)
		end_turn(ts, t);
	pthread_cond_broadcast(&ts->cv);
	pthread_mutex_unlock(&ts->mu);
}

void cof_turns_close(cof_turns *ts)
{
	if (!ts)
		return;
	cof_turns_stop(ts);
	pthread_join(ts->sweeper, NULL);
	pthread_mutex_lock(&ts->mu);
	for (int i = 0; i < 300; i++) { /* calls stop within a measure tick */
		int running = 0;
		for (cof_turn *t = ts->list; t; t = t->next)
			running += t->ncalls;
		if (!running)
			break;
		cof_cond_wait_until(&ts->cv, &ts->mu, cof_mono_ms() + 100);
	}
	while (ts->list) {
		cof_turn *t = ts->list;
		ts->list = t->next;
		cof_quota_ws_drop(ts, t);
		cof_limits_drop(ts, t);
		free(t);
	}
	/* a view whose call was still ending (its request not drained) would
	 * stay mounted after we exit: none is left behind */
	cof_call_views_turn_end(ts, NULL);
	char views[PATH_MAX + 16];
	snprintf(views, sizeof views, "%s/views", ts->root);
	cof_view_sweep(views);
	pthread_mutex_unlock(&ts->mu);
	pthread_mutex_destroy(&ts->mu);
	pthread_cond_destroy(&ts->cv);
	cof_limits_close(ts);
	etc_free(ts);
	free(ts->bpf);
	free(ts->tomb);
	free(ts);
}

/* ------------------------------------------------------------ create/get */

void cof_turn_add(cof_turns *ts, cof_turn *t)
{
	t->uid = cof_turns_uid_new(ts);
	t->next = ts->list;
	ts->list = t;
}

static const cof_jfield create_fields[] = {
	{"agent", COF_JSTR, 1}, {"user", COF_JSTR, 1}, {"deadlineSeconds", COF_JINT, 1},
	{"acceptedOutputModes", COF_JARR, 0}, {NULL, 0, 0}};

/* The turn as answered. */
static json_t *turn_json(const cof_turn *t, json_t *accepted)
{
	json_t *o = json_pack("{s:s, s:s, s:s, s:o, s:o, s:{s:I, s:I, s:I, s:b, s:I, s:I}}",
			      "id", t->id, "agent", t->agent, "user", t->user,
			      "createdAt", cof_json_time(t->created),
			      "deadline", cof_json_time(t->deadline),
			      "sandbox", "scratch", (json_int_t)t->sb.scratch,
			      "turnDisk", (json_int_t)t->sb.turn_disk,
			      "userDisk", (json_int_t)t->sb.user_disk,
			      "network", t->sb.network, "memory", (json_int_t)t->sb.memory,
			      "processes", (json_int_t)t->sb.processes);
	if (o && accepted)
		json_object_set(o, "acceptedOutputModes", accepted);
	return o;
}

/* Checks the fields of a create body that the table cannot. */
static int create_check(json_t *body, cof_err *err)
{
	const char *user = cof_json_str(body, "user");
	int64_t dl = 0;
	size_t i;
	json_t *m;

	if (!user[0] || strlen(user) > 255 || strlen(user) != json_string_length(
		    json_object_get(body, "user")))
		return cof_error(err, COF_EVALIDATION,
				 "'user' must be 1 to 255 bytes without NUL");
	for (const unsigned char *p = (const unsigned char *)user; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return cof_error(err, COF_EVALIDATION,
					 "'user' must not hold control characters");
	cof_json_int(body, "deadlineSeconds", &dl);
	if (dl < 1 || dl > COF_TURN_DEADLINE_MAX)
		return cof_error(err, COF_EVALIDATION,
				 "'deadlineSeconds' is %lld; it must be 1 to %d", (long long)dl,
				 COF_TURN_DEADLINE_MAX);
	json_array_foreach(json_object_get(body, "acceptedOutputModes"), i, m)
		if (!json_is_string(m))
			return cof_error(err, COF_EVALIDATION,
					 "'acceptedOutputModes' must be an array of media types");
	return 0;
}

int cof_turn_create(cof_turns *ts, const cof_principal *who, json_t *body, json_t **out,
		    cof_err *err)
{
	json_t *agent = NULL, *accepted;
	cof_turn *t;
	const char *aid;
	int64_t dl = 0;
	unsigned types;

	if (cof_json_check(body, create_fields, err) || create_check(body, err))
		return -1;
	aid = cof_json_str(body, "agent");
	if (who->agent[0] && strcmp(who->agent, aid))
		return cof_error(err, COF_EFORBIDDEN, "this key reaches only agent '%s' and its "
				 "turns", who->agent);
	if (cof_agent_get(ts->st, who->org, aid, &agent, err))
		return -1;
	if (!(t = cof_calloc(1, sizeof *t))) {
		json_decref(agent);
		return cof_error(err, COF_EINTERNAL, "out of memory");
	}
	accepted = json_object_get(body, "acceptedOutputModes");
	if (cof_sandbox_parse(json_object_get(agent, "sandbox"), &t->sb, err) ||
	    cof_outbox_types_parse(json_object_get(agent, "output"), &types, err)) {
		json_decref(agent);
		free(t);
		return -1;
	}
	json_decref(agent);
	/* Seed 003: the sandbox starts with the agent's current skills in the
	 * user's skills/, so the turn's first call finds them with no other call
	 * first. A user that is not a valid subject id has no /user (views.c). */
	json_t *sess = NULL;
	cof_err se = {0};
	cof_by by = {.key_id = who->key_id, .via = "call"};
	if (cof_subject_session_start(ts->st, who->org, aid, cof_json_str(body, "user"), &by,
				      &sess, &se) && se.code != COF_EVALIDATION) {
		*err = se;
		free(t);
		return -1;
	}
	cof_err_clear(&se);
	json_decref(sess);
	t->types = accepted ? types & cof_outbox_types_from_media(accepted) : types;
	cof_id_new("turn_", t->id, sizeof t->id);
	snprintf(t->org, sizeof t->org, "%s", who->org);
	snprintf(t->agent, sizeof t->agent, "%s", aid);
	snprintf(t->user, sizeof t->user, "%s", cof_json_str(body, "user"));
	cof_json_int(body, "deadlineSeconds", &dl);
	t->created = cof_now();
	t->deadline = t->created + dl;
	t->deadline_ms = cof_mono_ms() + dl * 1000;
	pthread_mutex_lock(&ts->mu);
	if (ts->stop) {
		pthread_mutex_unlock(&ts->mu);
		free(t);
		return cof_error(err, COF_EUNAVAILABLE, "cofferd is stopping");
	}
	cof_turn_add(ts, t);
	cof_turn_record_save(ts, t);
	*out = turn_json(t, accepted);
	json_object_set_new(*out, "expiresAt", cof_json_time(t->deadline + ts->grace));
	t->refs++; /* held while its sandbox is prepared */
	pthread_mutex_unlock(&ts->mu);
	cof_turn_prepare(ts, t);
	cof_turn_release(ts, t);
	return 0;
}

int cof_turn_get(cof_turns *ts, const cof_principal *who, const char *id, json_t **out,
		 cof_err *err)
{
	cof_turn *t;

	if (cof_turn_sweep_and_find(ts, who, id, &t, err))
		return -1;
	pthread_mutex_lock(&ts->mu);
	*out = turn_json(t, NULL);
	json_object_set_new(*out, "expiresAt", cof_json_time(t->deadline + ts->grace));
	json_object_set_new(*out, "calls", json_integer(t->call_seq));
	json_object_set_new(*out, "running", json_integer(t->ncalls));
	json_object_set_new(*out, "used", json_pack("{s:I, s:I}", "bytes",
		(json_int_t)(t->used.blocks + t->used.entries * COF_ENTRY_BYTES),
		"entries", (json_int_t)t->used.entries));
	unref(ts, t);
	pthread_mutex_unlock(&ts->mu);
	return 0;
}

int cof_turn_delete(cof_turns *ts, const cof_principal *who, const char *id, cof_err *err)
{
	cof_turn *t;

	if (cof_turn_sweep_and_find(ts, who, id, &t, err))
		return -1;
	pthread_mutex_lock(&ts->mu);
	end_turn(ts, t);
	while (t->ncalls > 0)
		pthread_cond_wait(&ts->cv, &ts->mu);
	unref(ts, t);
	pthread_mutex_unlock(&ts->mu);
	return 0;
}

/* ------------------------------------------------------------ kept files */

int cof_turn_sweep_and_find(cof_turns *ts, const cof_principal *who, const char *id,
			    cof_turn **out, cof_err *err)
{
	pthread_mutex_lock(&ts->mu);
	sweep(ts);
	*out = ts->stop ? NULL : find(ts, who, id, err);
	if (ts->stop)
		cof_error(err, COF_EUNAVAILABLE, "cofferd is stopping");
	pthread_mutex_unlock(&ts->mu);
	return *out ? 0 : -1;
}

void cof_turn_release(cof_turns *ts, cof_turn *t)
{
	pthread_mutex_lock(&ts->mu);
	unref(ts, t);
	pthread_mutex_unlock(&ts->mu);
}

/* True when `s` matches ^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$ (outbox names). */
static int name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 100 || strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				       "0123456789._-") != n)
		return 0;
	return s[0] != '.' && s[0] != '_' && s[0] != '-';
}

int cof_turn_file_open(cof_turns *ts, const cof_principal *who, const char *id,
		       const char *call, const char *name, cof_file *out, cof_err *err)
{
	static const struct { const char *ext, *type; } types[] = {
		{".png", "image/png"}, {".svg", "image/svg+xml"}, {".csv", "text/csv"},
		{".pdf", "application/pdf"}};
	char path[PATH_MAX + 400];
	struct stat sb;
	cof_turn *t;
	int fd;

	if (cof_turn_sweep_and_find(ts, who, id, &t, err))
		return -1;
	snprintf(path, sizeof path, "%s/kept/%s/%s/%s", ts->root, t->id, call, name);
	cof_turn_release(ts, t);
	if (!cof_turn_call_id_ok(call) || !name_ok(name) ||
	    (fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return cof_error(err, COF_ENOTFOUND, "no file '%.100s' from call '%.64s'", name,
				 call);
	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
		close(fd);
		return cof_error(err, COF_ENOTFOUND, "no file '%.100s'", name);
	}
	memset(out, 0, sizeof *out);
	if (cof_blob_reader_fd(fd, 1, &out->reader, err))
		return -1;
	out->size = sb.st_size;
	out->version = 1;
	out->updated_at = sb.st_mtime;
	for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
		size_t n = strlen(name), e = strlen(types[i].ext);
		if (n > e && !strcasecmp(name + n - e, types[i].ext))
			snprintf(out->content_type, sizeof out->content_type, "%s", types[i].type);
	}
	return 0;
}
