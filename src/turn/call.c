/*
 * call.c — one confined call of a turn: start it, feed stdin, collect stdout
 * and stderr (1 MiB each kept), measure the workspace every COF_MEASURE_MS
 * while it runs and once when it ends, stop it on its timeout, a breach or
 * the turn's end, then take the outbox and answer.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "store/s3.h"
#include "util/metrics.h"
#include "turn/outbox.h"
#include "turn/turn.h"
#include "view/view.h"
#include "util/util.h"

/* One output stream of the call. */
typedef struct stream {
	int fd;
	const char *name;      /* "stdout" / "stderr" */
	cof_buf kept;          /* up to COF_CALL_OUTPUT_MAX */
	int64_t total;
	char held[4];          /* an incomplete UTF-8 sequence kept for the next event */
	size_t nheld;
} stream;

typedef struct call {
	cof_turns *ts;
	cof_turn *t;
	char id[COF_CALL_ID_MAX + 1]; /* the model's callId, or made here */
	char vid[40];            /* ours, unique: names its view and layer, which
				    outlive it while kept (views.c), so never the
				    model's callId, which another turn may use too */
	unsigned types;          /* COF_OUT_* that may come back: the turn's and the call's */
	int dup_id;              /* its callId kept files of an earlier call already */
	cof_proc p;
	const char *in;
	size_t in_len, in_off;
	int64_t timeout_ms;
	stream s[2];
	cof_call_event_fn on_event;
	void *cls;
	int gen;               /* t->stop_gen when it started */
	int timed_out;
	const char *limit;
	int stopped_by_end;
	int slot;              /* its place in t->pids */
	int64_t oom0, forks0;  /* the turn's cgroup counts when it started */
	const char *held;      /* "memory" or "processes": a limit the kernel held */
	json_t *notes;
	cof_call_views *views; /* the agent's files, as the call began */
} call;

/* ------------------------------------------------------------ text */

/* Length of the valid UTF-8 sequence at s (n bytes left), or 0. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	size_t len = s[0] < 0x80 ? 1 : (s[0] & 0xe0) == 0xc0 ? 2 : (s[0] & 0xf0) == 0xe0 ? 3
		     : (s[0] & 0xf8) == 0xf0 ? 4 : 0;

	if (len == 0 || len > n || !cof_utf8_valid((const char *)s, len))
		return 0;
	return len;
}

/* `s` as a JSON string, each invalid byte replaced by U+FFFD. */
static json_t *text_json(const char *s, size_t n)
{
	cof_buf b = COF_BUF_INIT;
	json_t *j;

	if (cof_utf8_valid(s, n))
		return json_stringn(s, n);
	for (size_t i = 0; i < n;) {
		size_t k = utf8_seq((const unsigned char *)s + i, n - i);
		if (k) {
			cof_buf_add(&b, s + i, k);
			i += k;
		} else {
			cof_buf_add(&b, "\xef\xbf\xbd", 3);
			i++;
		}
	}
	j = json_stringn(b.data ? b.data : "", b.len);
	cof_buf_release(&b);
	return j;
}

/* Sends the bytes read as an event, holding back a sequence cut short. */
static void emit_chunk(call *c, stream *st, const char *data, size_t n)
{
	cof_buf b = COF_BUF_INIT;
	size_t keep = 0;

	if (!c->on_event)
		return;
	cof_buf_add(&b, st->held, st->nheld);
	cof_buf_add(&b, data, n);
	/* an unfinished multi-byte sequence at the end waits for its rest */
	for (size_t back = 1; back <= 3 && back <= b.len; back++) {
		unsigned char ch = (unsigned char)b.data[b.len - back];
		if ((ch & 0xc0) == 0x80)
			continue;
		size_t need = ch >= 0xf0 ? 4 : ch >= 0xe0 ? 3 : ch >= 0xc0 ? 2 : 1;
		if (need > back)
			keep = back;
		break;
	}
	memcpy(st->held, b.data + b.len - keep, keep);
	st->nheld = keep;
	if (b.len > keep) {
		json_t *d = json_pack("{s:o}", "data", text_json(b.data, b.len - keep));
		c->on_event(c->cls, st->name, d);
		json_decref(d);
	}
	cof_buf_release(&b);
}

/* Reads what is there on `st`. Returns 1 at end of file, else 0. */
static int drain(call *c, stream *st)
{
	char buf[65536];

	for (;;) {
		ssize_t n = read(st->fd, buf, sizeof buf);
		if (n == 0)
			return 1;
		if (n < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : 1;
		st->total += n;
		size_t room = COF_CALL_OUTPUT_MAX - st->kept.len;
		cof_buf_add(&st->kept, buf, (size_t)n < room ? (size_t)n : room);
		emit_chunk(c, st, buf, (size_t)n);
	}
}

/* ------------------------------------------------------------ running */

static int pid_slot(cof_turn *t, pid_t pid)
{
	for (int i = 0; i < COF_TURN_CALLS; i++)
		if (t->pids[i] == pid) {
			t->pids[i] = 0;
			return i;
		}
	return -1;
}

/* One measure tick: a breach stops every call of the turn. `alive`: the
 * process is not reaped yet (so its pid is still its own). The measuring
 * loop walks before taking mu, so calls of other turns do not wait on it.
 * `measure` 0: only a stop of the turn (its end, another call's breach)
 * reaches the call. */
static void tick(call *c, int alive, int measure)
{
	cof_turn *t = c->t;
	cof_usage u;

	if (measure && !c->ts->kernel)
		cof_quota_measure(c->ts, t, &c->p.pid, alive, &u);
	pthread_mutex_lock(&c->ts->mu);
	if (measure && t->stop_gen == c->gen) {
		const char *lim = cof_quota_check(c->ts, t, c->ts->kernel ? NULL : &u);
		if (lim) {
			t->stop_why = lim;
			t->dirty = 1;
			cof_turn_kill_calls(c->ts, t);
		}
	}
	if (t->stop_gen != c->gen && !c->limit && !c->stopped_by_end) {
		if (alive)
			kill(c->p.pid, SIGKILL);
		if (t->stop_why)
			c->limit = t->stop_why;
		else
			c->stopped_by_end = 1;
	}
	pthread_mutex_unlock(&c->ts->mu);
}

/* Runs the process to its end; returns its wait status. */
static int run(call *c)
{
	/* the first measure one period in: the workspace was measured as the
	 * call registered (cof_quota_base) or by the turn's running calls, and
	 * the end measures it again in every case, so a measure now would only
	 * repeat those (it cost a statfs, the walk of the turn's layers and
	 * mu, every call); a stop that came while it started reaches it here */
	int64_t start = cof_mono_ms(), next = start + COF_MEASURE_MS, killed = 0;
	int open_out = 2, status = 0, escalated = 0;

	tick(c, 1, 0);
	while (open_out > 0) {
		struct pollfd pf[3];
		int n = 0;
		for (int i = 0; i < 2; i++)
			if (c->s[i].fd >= 0)
				pf[n++] = (struct pollfd){c->s[i].fd, POLLIN, 0};
		if (c->p.in >= 0)
			pf[n++] = (struct pollfd){c->p.in, POLLOUT, 0};
		int64_t now = cof_mono_ms(), wait = next - now;
		poll(pf, (nfds_t)n, wait < 0 ? 0 : (int)wait);
		cof_confine_note_sandbox(&c->p);
		for (int i = 0; i < 2; i++)
			if (c->s[i].fd >= 0 && drain(c, &c->s[i])) {
				close(c->s[i].fd);
				c->s[i].fd = -1;
				open_out--;
			}
		if (c->p.in >= 0) {
			ssize_t w = c->in_off < c->in_len
					    ? write(c->p.in, c->in + c->in_off, c->in_len - c->in_off)
					    : 0;
			if (w > 0)
				c->in_off += (size_t)w;
			if (c->in_off >= c->in_len || (w < 0 && errno != EAGAIN)) {
				close(c->p.in);
				c->p.in = -1;
			}
		}
		now = cof_mono_ms();
		if (now >= next) {
			tick(c, 1, 1);
			next = now + COF_MEASURE_MS;
		}
		if (!c->timed_out && now - start >= c->timeout_ms) {
			c->timed_out = 1;
			kill(c->p.pid, SIGKILL);
		}
		if (!killed && (c->timed_out || c->limit || c->stopped_by_end))
			killed = now;
		if (killed && !escalated && now - killed > 1000) {
			/* killed, yet its output is still open: its bwrap died before
			 * tying the sandbox to itself */
			escalated = 1;
			cof_confine_kill_sandbox(&c->p);
			cof_turn_kill_uid(c->ts, c->t);
		}
	}
	if (c->p.in >= 0)
		close(c->p.in);
	while (waitpid(c->p.pid, &status, 0) < 0 && errno == EINTR)
		;
	if (cof_confine_wait_gone(&c->p, 5000))
		cof_turn_kill_uid(c->ts, c->t);
	/* its processes are gone: the copy of /etc it saw may go */
	cof_etc_drop(c->ts, c->p.etc);
	c->p.etc = NULL;
	return status;
}

/* ------------------------------------------------------------ outbox */

/* Makes an empty $OUTBOX folder, owned by the turn's uid (as root we never
 * follow what the command left at that name). 0 or -1. */
static int outbox_prepare(const cof_turn *t)
{
	int ws = open(t->ws, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), rc = -1;
	struct stat sb;

	if (ws < 0)
		return -1;
	if (fstatat(ws, "outbox", &sb, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(sb.st_mode))
		unlinkat(ws, "outbox", 0);
	/* owned through the fd of what is at the name now, a real folder: a
	 * link swapped in between is refused, never followed */
	int ob = cof_mkdirs_beneath(ws, "outbox", 0700, -1);
	if (ob >= 0 && fchown(ob, t->uid, t->uid) == 0)
		rc = 0;
	if (ob >= 0)
		close(ob);
	close(ws);
	return rc;
}

/* True when the folder open at `fd` holds nothing (read through a file
 * of its own, so `fd`'s offset stays). */
static int dir_empty(int fd)
{
	int d = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dir = d >= 0 ? fdopendir(d) : NULL;
	struct dirent *e;
	int empty = 1;

	if (!dir) {
		if (d >= 0)
			close(d);
		return 0;
	}
	while (empty && (e = readdir(dir)) != NULL)
		empty = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
	closedir(dir);
	return empty;
}

/* Takes the outbox: files that pass are kept outside the workspace, each
 * entry gets a note. *files gets [{name, mediaType, size, url}]. */
static int outbox_take(call *c, json_t **files, cof_err *err)
{
	cof_turns *ts = c->ts;
	cof_turn *t = c->t;
	char kept[PATH_MAX + 256];
	cof_outbox_rules rules;
	json_t *notes = NULL, *f;
	int ws, ob, keep = -1, rc;
	size_t i;

	*files = json_array();
	ws = open(t->ws, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (ws < 0)
		return cof_error(err, COF_EINTERNAL, "cannot open the workspace");
	ob = openat(ws, "outbox", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (ob < 0) {
		struct stat sb;
		if (fstatat(ws, "outbox", &sb, AT_SYMLINK_NOFOLLOW) == 0) {
			unlinkat(ws, "outbox", 0);
			json_array_append_new(c->notes, json_string(
				"$OUTBOX was replaced by something other than a folder; removed it"));
		}
		close(ws);
		return 0;
	}
	close(ws);
	if (dir_empty(ob)) {
		/* nothing to keep: no folder on the scratch disk for this call */
		close(ob);
		return 0;
	}
	snprintf(kept, sizeof kept, "%s/kept/%s", ts->root, t->id);
	mkdir(kept, 0700);
	if ((size_t)snprintf(kept, sizeof kept, "%s/kept/%s/%s", ts->root, t->id, c->id) >=
	    sizeof kept) {
		close(ob);
		return cof_error(err, COF_EINTERNAL, "the scratch root's path is too long");
	}
	if (mkdir(kept, 0700) == 0)
		keep = open(kept, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	else if (errno == EEXIST) { /* a callId given twice: its files stay the first's, */
		c->dup_id = 1;     /* the outbox is emptied keeping nothing */
		keep = open(kept, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		json_array_append_new(c->notes, json_sprintf(
			"no file was attached: callId '%s' kept files of an earlier call of this "
			"turn already (give each call its own id)", c->id));
	}
	if (keep < 0) {
		close(ob);
		return cof_error(err, COF_EINTERNAL, "cannot keep outbox files: %s",
				 strerror(errno));
	}
	pthread_mutex_lock(&ts->mu);
	while (t->collecting)
		pthread_cond_wait(&ts->cv, &ts->mu);
	t->collecting = 1;
	rules.types = c->types;
	rules.turn_files_left = c->dup_id ? 0 : COF_OUTBOX_TURN_FILES - t->kept_files;
	rules.turn_bytes_left = COF_OUTBOX_TURN_BYTES - t->kept_bytes;
	pthread_mutex_unlock(&ts->mu);
	json_decref(*files);
	*files = NULL;
	rc = cof_outbox_collect(ob, keep, &rules, files, &notes, err);
	close(ob);
	close(keep);
	if (!*files)
		*files = json_array();
	if (notes)
		json_array_extend(c->notes, notes);
	json_decref(notes);
	pthread_mutex_lock(&ts->mu);
	cof_buf url = COF_BUF_INIT;
	json_array_foreach(*files, i, f) {
		t->kept_files++;
		t->kept_bytes += json_integer_value(json_object_get(f, "size"));
		/* the callId may hold what a URL's path must escape ('|', '"', ...) */
		cof_buf_reset(&url);
		cof_buf_addf(&url, "/v1/turns/%s/files/", t->id);
		cof_s3_escape(&url, c->id, 0);
		cof_buf_addf(&url, "/%s", json_string_value(json_object_get(f, "name")));
		json_object_set_new(f, "url", json_string(url.data));
	}
	cof_buf_release(&url);
	t->collecting = 0;
	pthread_cond_broadcast(&ts->cv);
	pthread_mutex_unlock(&ts->mu);
	return rc;
}

/* ------------------------------------------------------------ the call */

static const cof_jfield call_fields[] = {
	{"command", COF_JSTR, 1}, {"stdin", COF_JSTR, 0}, {"timeoutSeconds", COF_JINT, 0},
	{"callId", COF_JSTR, 0}, {"acceptedOutputModes", COF_JARR, 0}, {NULL, 0, 0}};

/* The model's tool-call id (seed 000: artifacts carry it as metadata.call_id):
 * 1..128 printable ASCII; it names the call's kept files in URLs and on the
 * scratch disk, so without space, '/', '\\', '?', '#', '%' and not "." or "..". */
static int call_id_check(json_t *v, cof_err *err)
{
	const char *s = json_string_value(v);
	size_t n = json_string_length(v);

	if (n < 1 || n > COF_CALL_ID_MAX || strlen(s) != n)
		return cof_error(err, COF_EVALIDATION, "'callId' must be 1 to %d bytes (it is %zu)",
				 COF_CALL_ID_MAX, n);
	if (!cof_turn_call_id_ok(s))
		return cof_error(err, COF_EVALIDATION, "'callId' must be printable ASCII "
				 "without space, '/', '\\', '?', '#' or '%%', and not '.' or '..'");
	return 0;
}

static int call_check(json_t *body, int64_t *timeout, cof_err *err)
{
	json_t *cmd, *in;

	json_t *m;
	size_t i;

	if (cof_json_check(body, call_fields, err))
		return -1;
	if (json_object_get(body, "callId") && call_id_check(json_object_get(body, "callId"), err))
		return -1;
	json_array_foreach(json_object_get(body, "acceptedOutputModes"), i, m)
		if (!json_is_string(m))
			return cof_error(err, COF_EVALIDATION,
					 "'acceptedOutputModes' must be an array of media types");
	cmd = json_object_get(body, "command");
	in = json_object_get(body, "stdin");
	if (!json_string_length(cmd) || strlen(json_string_value(cmd)) != json_string_length(cmd))
		return cof_error(err, COF_EVALIDATION,
				 "'command' must be a non-empty string without NUL");
	if (json_string_length(in) > COF_CALL_STDIN_MAX)
		return cof_error(err, COF_ETOOLARGE, "'stdin' is %zu bytes; the limit is 8 MB",
				 json_string_length(in));
	*timeout = COF_CALL_TIMEOUT_DEFAULT;
	if (cof_json_int(body, "timeoutSeconds", timeout) &&
	    (*timeout < 1 || *timeout > COF_CALL_TIMEOUT_MAX))
		return cof_error(err, COF_EVALIDATION,
				 "'timeoutSeconds' is %lld; it must be 1 to %d",
				 (long long)*timeout, COF_CALL_TIMEOUT_MAX);
	return 0;
}

/* Registers the call on its turn (under mu): its pid slot is held (-1)
 * and it counts as running, so the turn is not emptied or freed under it
 * while it starts. */
static int call_register(call *c, cof_err *err)
{
	cof_turn *t = c->t;
	int slot = pid_slot(t, 0);

	if (t->ended)
		return cof_error(err, COF_EGONE, "turn '%s' has ended", t->id);
	if (slot < 0)
		return cof_error(err, COF_ERATELIMIT, "turn '%s' already runs %d calls; wait for "
				 "one to end", t->id, COF_TURN_CALLS);
	if (!t->ws_made && cof_quota_ws_make(c->ts, t, err))
		return -1;
	if (cof_limits_turn(c->ts, t, err))
		return -1;
	if (outbox_prepare(t))
		return cof_error(err, COF_EINTERNAL, "cannot prepare $OUTBOX");
	if (t->ncalls == 0)
		cof_quota_base(c->ts, t);
	t->pids[slot] = -1;
	c->slot = slot;
	t->ncalls++;
	t->call_seq++;
	c->gen = t->stop_gen;
	return 0;
}

/* What a turn's first call found missing and made, measured on a running
 * cofferd (bench/prewarm.py): the workspace (a tmpfs as root), the turn's
 * cgroup, the outbox and the view of the agent's mounts and /user, a few ms
 * together. They are made when the turn is, the view kept for the first
 * call (views.c: used only while it shows what that call would see), so
 * the first call costs what a later one does. A failure here is left for
 * the first call to meet again and report. */
void cof_turn_prepare(cof_turns *ts, cof_turn *t)
{
	cof_call_views *cv = NULL;
	cof_err e = {0};
	char vid[40];
	int ok;

	pthread_mutex_lock(&ts->mu);
	ok = !t->ended && !ts->stop && (t->ws_made || !cof_quota_ws_make(ts, t, &e)) &&
	     !cof_limits_turn(ts, t, &e) && !outbox_prepare(t);
	pthread_mutex_unlock(&ts->mu);
	cof_err_clear(&e);
	if (!ok)
		return;
	cof_id_new("call_", vid, sizeof vid);
	if (cof_call_views_open(ts, t, vid, &cv, &e) == 0) {
		json_t *answer = json_object(), *notes = json_array();
		/* untouched: its read-write view is kept, as a reading call's is */
		cof_call_views_end(ts, t, cv, 1, NULL, NULL, answer, notes);
		cof_call_views_close(cv);
		json_decref(answer);
		json_decref(notes);
	}
	cof_err_clear(&e);
	pthread_mutex_lock(&ts->mu);
	if (t->ended) /* it ended meanwhile: what was kept here ends too */
		cof_call_views_turn_end(ts, t);
	pthread_mutex_unlock(&ts->mu);
}

/* Starts the registered call: the fork and exec run without mu. A stop
 * that came meanwhile (t->stop_gen moved) reaches it at its first tick. */
static int call_start(call *c, const char *command, cof_err *err)
{
	cof_turns *ts = c->ts;
	int rc;

	pthread_mutex_lock(&ts->mu);
	rc = call_register(c, err);
	pthread_mutex_unlock(&ts->mu);
	if (rc)
		return -1;
	cof_limits_counts(ts, c->t, &c->oom0, &c->forks0);
	cof_bind binds[COF_VIEW_ROOTS];
	cof_call_see see;
	rc = cof_call_views_open(ts, c->t, c->vid, &c->views, err);
	if (!rc) {
		cof_call_views_see(ts, c->views, &see, binds, COF_VIEW_ROOTS);
		rc = cof_confine_spawn(ts, c->t, command, &see, &c->p, err);
	}
	if (rc) {
		cof_call_views_close(c->views);
		c->views = NULL;
	}
	pthread_mutex_lock(&ts->mu);
	c->t->pids[c->slot] = rc ? 0 : c->p.pid;
	if (rc) {
		/* a breach while it started waits for every call to stop */
		if (--c->t->ncalls == 0 && c->t->dirty && !c->t->ended) {
			cof_err e = {0};
			cof_quota_ws_empty(ts, c->t, &e);
			cof_err_clear(&e);
			c->t->dirty = 0;
		}
		pthread_cond_broadcast(&ts->cv);
	}
	pthread_mutex_unlock(&ts->mu);
	return rc;
}

/* The notes about output cut, timeout and limits. */
static void call_notes(call *c, int64_t timeout)
{
	char size[32];

	for (int i = 0; i < 2; i++)
		if (c->s[i].total > COF_CALL_OUTPUT_MAX) {
			cof_size_fmt(c->s[i].total, size, sizeof size);
			json_array_append_new(c->notes, json_sprintf(
				"%s was cut at 1 MiB (%s in all)", c->s[i].name, size));
		}
	if (c->timed_out)
		json_array_append_new(c->notes, json_sprintf(
			"stopped after %lld seconds (timeoutSeconds); every process of the call "
			"was killed", (long long)timeout));
	if (c->limit)
		json_array_append_new(c->notes, json_sprintf(
			"stopped: the workspace reached the '%s' limit (files written under "
			"the agent's mounts count at their full length, holes included); every "
			"call of the turn was stopped and its workspace emptied", c->limit));
	if (c->stopped_by_end)
		json_array_append_new(c->notes, json_string("stopped: the turn ended"));
}

/* Which of the turn's memory and process limits the kernel held during the
 * call (cgroup counts; calls of one turn running at once share them). */
static void held_limits(call *c)
{
	int64_t oom, forks;
	char size[32];

	cof_limits_counts(c->ts, c->t, &oom, &forks);
	if (forks > c->forks0) {
		c->held = "processes";
		json_array_append_new(c->notes, json_sprintf(
			"the turn's processes reached sandbox.processes (%lld at once): %lld "
			"forks were refused", (long long)c->t->sb.processes,
			(long long)(forks - c->forks0)));
	}
	if (oom > c->oom0) {
		c->held = "memory";
		cof_size_fmt(c->t->sb.memory, size, sizeof size);
		json_array_append_new(c->notes, json_sprintf(
			"the turn's processes reached sandbox.memory (%s, memfd and shared "
			"memory included; the workspace's files count on top, up to turnDisk): "
			"%lld processes were killed", size,
			(long long)(oom - c->oom0)));
	}
}

/* After the process: final measure, breach handling, then the outbox. */
static void call_finish(call *c, json_t **files, cof_err *err)
{
	cof_turns *ts = c->ts;
	cof_turn *t = c->t;

	pthread_mutex_lock(&ts->mu);
	pid_slot(t, c->p.pid);
	pthread_mutex_unlock(&ts->mu);
	tick(c, 0, 1); /* the measure when it ends, in every case */
	held_limits(c);
	if (!c->limit && !c->stopped_by_end && !t->ended)
		outbox_take(c, files, err);
	pthread_mutex_lock(&ts->mu);
	t->ncalls--;
	if (c->limit) {
		/* the last call of the turn to stop empties the workspace; the
		 * others wait for it, so the next call finds it empty */
		if (t->ncalls == 0 && t->dirty && !t->ended) {
			cof_err e = {0};
			cof_quota_ws_empty(ts, t, &e);
			cof_err_clear(&e);
			t->dirty = 0;
		}
		while (t->dirty && t->ncalls > 0 && !t->ended)
			pthread_cond_wait(&ts->cv, &ts->mu);
	}
	pthread_cond_broadcast(&ts->cv);
	pthread_mutex_unlock(&ts->mu);
	if (!*files)
		*files = json_array();
}

int cof_turn_call(cof_turns *ts, const cof_principal *who, const char *id, json_t *body,
		  cof_call_event_fn on_event, void *cls, json_t **out, cof_err *err)
{
	return cof_turn_call_run(ts, who, id, body, NULL, on_event, cls, out, err);
}

int cof_turn_call_run(cof_turns *ts, const cof_principal *who, const char *id, json_t *body,
		      const char *run_id, cof_call_event_fn on_event, void *cls, json_t **out,
		      cof_err *err)
{
	call c = {0};
	json_t *files = NULL, *f, *in;
	int64_t timeout;
	int status, rc;
	size_t i;

	if (call_check(body, &timeout, err) || cof_turn_sweep_and_find(ts, who, id, &c.t, err))
		return -1;
	c.ts = ts;
	c.on_event = on_event;
	c.cls = cls;
	c.timeout_ms = timeout * 1000;
	in = json_object_get(body, "stdin");
	c.in = in ? json_string_value(in) : "";
	c.in_len = in ? json_string_length(in) : 0;
	c.notes = json_array();
	if (json_object_get(body, "callId"))
		snprintf(c.id, sizeof c.id, "%s", cof_json_str(body, "callId"));
	else
		cof_id_new("call_", c.id, sizeof c.id);
	cof_id_new("call_", c.vid, sizeof c.vid);
	/* only the types both the turn and this call accept come back */
	c.types = c.t->types;
	if (json_object_get(body, "acceptedOutputModes"))
		c.types &= cof_outbox_types_from_media(json_object_get(body, "acceptedOutputModes"));
	rc = call_start(&c, cof_json_str(body, "command"), err);
	if (rc) {
		json_decref(c.notes);
		cof_turn_release(ts, c.t);
		return -1;
	}
	c.s[0] = (stream){.fd = c.p.out, .name = "stdout"};
	c.s[1] = (stream){.fd = c.p.errfd, .name = "stderr"};
	status = run(&c);
	call_finish(&c, &files, err);
	call_notes(&c, timeout);
	if (err->code != COF_OK) { /* the outbox failed: the server's fault */
		cof_call_views_close(c.views);
		json_decref(files);
		json_decref(c.notes);
		cof_buf_release(&c.s[0].kept);
		cof_buf_release(&c.s[1].kept);
		cof_turn_release(ts, c.t);
		return -1;
	}
	if (on_event)
		json_array_foreach(files, i, f) {
			json_t *ev = json_deep_copy(f); /* the event names its call */
			json_object_set_new(ev, "callId", json_string(c.id));
			on_event(cls, "file", ev);
			json_decref(ev);
		}
	*out = json_pack("{s:s, s:i, s:o, s:o, s:o, s:o}", "callId", c.id, "exitCode",
			 WIFEXITED(status) ? WEXITSTATUS(status)
			 : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1,
			 "stdout", text_json(c.s[0].kept.data ? c.s[0].kept.data : "", c.s[0].kept.len),
			 "stderr", text_json(c.s[1].kept.data ? c.s[1].kept.data : "", c.s[1].kept.len),
			 "files", files, "notes", c.notes);
	if (c.limit || c.held)
		json_object_set_new(*out, "limit", json_string(c.limit ? c.limit : c.held));
	if (c.timed_out)
		json_object_set_new(*out, "timedOut", json_true());
	/* /metrics: coffer_sandbox_breaches_total by the limit met */
	if (c.limit || c.held)
		cof_metric_event("coffer_sandbox_breaches_total", "limit", c.limit ? c.limit : c.held);
	if (c.timed_out)
		cof_metric_event("coffer_sandbox_breaches_total", "limit", "timeout");
	/* its processes are gone: the layer lands, unless a limit or the
	 * timeout stopped it */
	cof_by by = {.key_id = who ? who->key_id : NULL, .agent = c.t->agent,
		     .user = c.t->user, .run_id = run_id, .call_id = c.id, .via = "call"};
	cof_call_views_end(ts, c.t, c.views, !c.timed_out && !c.limit && !c.stopped_by_end,
			   run_id, &by, *out, c.notes);
	cof_call_views_close(c.views);
	cof_buf_release(&c.s[0].kept);
	cof_buf_release(&c.s[1].kept);
	cof_turn_release(ts, c.t);
	return 0;
}
