/*
 * events.c — what an agent's events stream says: `file_presented` when one of
 * its tool calls presents a file, and `files_changed` about a second after
 * others change files under a mount it marked `notify` (changes within that
 * second are coalesced into one event; the agent's own tool writes are not
 * reported back to it). file_presented events are a stored stream (the
 * meta store's events, "agent:ORG:ID", the last AGENT_EVENTS_KEEP): each has
 * an id, a stream resumes after a Last-Event-ID across a restart of cofferd
 * and sees the events of every node. files_changed is worked out from the
 * volumes' changes by the streams open (on any node) and stored in the same
 * stream, so it has an id and replays too: one event per coalescing window,
 * written by the stream that wins the mount's cursor (a record of kind
 * "agentchg": the last seq reported; a conditional swap, so two streams of
 * the agent, here or on other nodes, never report the same change twice).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "agent/agent.h"

#define AGENT_EVENTS_KEEP 1024
#define OWN_RING (sizeof ((cof_store *)0)->own / sizeof *((cof_store *)0)->own)
#define COALESCE_MS 1000
#define PATHS_MAX 100

/* The name of the agent's stored event stream. */
static void stream_name(const char *org, const char *id, char *out, size_t outsz)
{
	snprintf(out, outsz, "agent:%s:%s", org, id);
}

void cof_agent_event_push(cof_store *st, const cof_agent *a, const char *type, json_t *data)
{
	json_t *ev = json_pack("{s:s, s:o}", "type", type, "data", data);
	char *text = ev ? json_dumps(ev, JSON_COMPACT) : NULL, name[200];
	cof_err e = {0};
	int64_t id;

	json_decref(ev);
	if (!text)
		return;
	stream_name(a->org, a->id, name, sizeof name);
	if (cof_meta_event_add(st->meta, name, 1, text, AGENT_EVENTS_KEEP, &id, &e))
		fprintf(stderr, "cofferd: agent %s: cannot store a %s event: %s\n", a->id, type,
			e.msg);
	cof_err_clear(&e);
	free(text);
	cof_topic t = cof_topic_agent(a->org, a->id);
	cof_notify_publish(st->notify, &t);
}

void cof_agent_own_write(cof_store *st, const cof_agent *a, const char *vol, int64_t seq)
{
	pthread_mutex_lock(&st->events_mu);
	size_t i = st->own_next++ % OWN_RING;
	snprintf(st->own[i].agent, sizeof st->own[i].agent, "%s", a->id);
	snprintf(st->own[i].vol, sizeof st->own[i].vol, "%s", vol);
	st->own[i].seq = seq;
	pthread_mutex_unlock(&st->events_mu);
}

/* True when change `seq` of `vol` was made by this agent's own tools. */
static int own_change(cof_store *st, const char *agent, const char *vol, int64_t seq)
{
	int yes = 0;

	pthread_mutex_lock(&st->events_mu);
	for (size_t i = 0; i < OWN_RING && !yes; i++)
		yes = st->own[i].seq == seq && !strcmp(st->own[i].vol, vol) &&
		      !strcmp(st->own[i].agent, agent);
	pthread_mutex_unlock(&st->events_mu);
	return yes;
}

struct cof_agent_watch {
	cof_store *st;
	cof_sub *sub;                     /* the agent's events and its notify mounts */
	cof_agent agent;
	int64_t event_seen;               /* the last stored event's id taken */
	int64_t seq[COF_MOUNTS_MAX];      /* per notify mount: changes seen up to */
	int64_t pending_ms;               /* a change waits for its coalescing window */
};

/* Subscribes the watch to the agent's events and to the volume of each
 * mount marked notify (at most COF_SUB_TOPICS - 1 of them). */
static int watch_subscribe(cof_agent_watch *w, cof_err *err)
{
	cof_topic t[COF_SUB_TOPICS];
	size_t n = 0;

	t[n++] = cof_topic_agent(w->agent.org, w->agent.id);
	for (size_t i = 0; i < w->agent.nmounts && n < COF_SUB_TOPICS; i++)
		if (w->agent.mounts[i].notify)
			t[n++] = cof_topic_volume(w->agent.org, w->agent.mounts[i].vol);
	return cof_notify_subscribe(w->st->notify, t, n, &w->sub, err);
}

int cof_agent_watch_open(cof_store *st, const char *org, const char *id,
			 cof_agent_watch **out, cof_err *err)
{
	cof_agent_watch *w = cof_calloc(1, sizeof *w);

	if (!w)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	w->st = st;
	if (cof_agent_load(st, org, id, &w->agent, err)) {
		free(w);
		return -1;
	}
	if (watch_subscribe(w, err)) {
		cof_agent_watch_close(w);
		return -1;
	}
	for (size_t i = 0; i < w->agent.nmounts; i++) {
		cof_volrow v;
		cof_err e = {0};
		if (w->agent.mounts[i].notify &&
		    !cof_meta_volume_get(st->meta, org, w->agent.mounts[i].vol, &v, &e))
			w->seq[i] = v.seq;
		cof_err_clear(&e);
	}
	char name[200];
	int64_t first;
	stream_name(org, id, name, sizeof name);
	if (cof_meta_event_last(st->meta, name, &w->event_seen, &first, err)) {
		cof_agent_watch_close(w);
		return -1;
	}
	*out = w;
	return 0;
}

void cof_agent_watch_after(cof_agent_watch *w, int64_t after)
{
	if (after >= 0)
		w->event_seen = after;
}

void cof_agent_watch_close(cof_agent_watch *w)
{
	if (!w)
		return;
	cof_notify_unsubscribe(w->sub);
	cof_agent_release(&w->agent);
	free(w);
}

typedef struct take_ctx {
	cof_agent_watch *w;
	json_t *out;
} take_ctx;

/* One stored event into the list, with its id. */
static int take_one(void *arg, int64_t id, unsigned to, const char *body)
{
	take_ctx *t = arg;
	json_t *ev = json_loads(body, 0, NULL);

	(void)to;
	if (ev) {
		json_object_set_new(ev, "id", json_integer((json_int_t)id));
		json_array_append_new(t->out, ev);
	}
	t->w->event_seen = id;
	return 0;
}

/* Moves this agent's new stored events (256 at most) into `out`. */
static int take_events(cof_agent_watch *w, json_t *out, cof_err *err)
{
	take_ctx t = {w, out};
	char name[200];

	stream_name(w->agent.org, w->agent.id, name, sizeof name);
	return cof_meta_event_list(w->st->meta, name, w->event_seen, 256, take_one, &t, err);
}

typedef struct changed_ctx {
	cof_agent_watch *w;
	const cof_mount *m;
	json_t *paths;
	int64_t upto;           /* the seq the event covers */
	size_t n;
} changed_ctx;

static int changed_add(void *arg, const cof_change_row *c)
{
	changed_ctx *x = arg;
	char ap[COF_AGENT_PATH_MAX + 1];

	if (c->seq > x->upto) /* the next event's */
		return 1;
	if (own_change(x->w->st, x->w->agent.id, x->m->vol, c->seq))
		return 0;
	cof_agent_path_of(x->m, c->path, ap, sizeof ap);
	if (cof_agent_excluded(&x->w->agent, ap, 0)) /* not even its name */
		return 0;
	if (x->n++ < PATHS_MAX)
		json_array_append_new(x->paths, json_string(ap));
	return 0;
}

/* The cursor record of mount m: its id ("ac_" + a hash of org, agent and the
 * mount's path: the names do not fit a record id) and the seq it holds in
 * *seq (0 when there is none); *body = the stored body (malloc'd) or NULL. */
static int cursor_get(cof_agent_watch *w, const cof_mount *m, cof_staterow *row,
		      int64_t *seq, char **body, cof_err *err)
{
	cof_buf key = COF_BUF_INIT;
	char hex[65];
	int found;

	cof_buf_addf(&key, "%s\n%s\n%s", w->agent.org, w->agent.id, m->path);
	if (!key.data || cof_sha256_hex(key.data, key.len, hex)) {
		cof_buf_release(&key);
		return cof_error(err, COF_EINTERNAL, "out of memory");
	}
	cof_buf_release(&key);
	memset(row, 0, sizeof *row);
	snprintf(row->kind, sizeof row->kind, "agentchg");
	snprintf(row->id, sizeof row->id, "ac_%.40s", hex);
	snprintf(row->org, sizeof row->org, "%s", w->agent.org);
	*seq = 0;
	*body = NULL;
	cof_staterow got;
	if ((found = cof_meta_state_get(w->st->meta, row->kind, row->id, &got, err)) < 0)
		return -1;
	if (found) {
		json_t *b = json_loads(got.body, 0, NULL);
		*seq = (int64_t)json_integer_value(json_object_get(b, "seq"));
		json_decref(b);
		*body = got.body;
	}
	return 0;
}

/* Reports mount i's changes after what was reported (by any stream) up to
 * `upto`, when this stream wins the cursor: 1 = won (or nothing to say), 0 =
 * another stream moved the cursor first (look again). */
static int report_mount(cof_agent_watch *w, size_t i, int64_t vno, int64_t upto,
			cof_err *err)
{
	const cof_mount *m = &w->agent.mounts[i];
	char prefix[COF_PATH_MAX + 2], *old = NULL, *text;
	cof_staterow row;
	int64_t cur = 0;
	int won;

	if (cursor_get(w, m, &row, &cur, &old, err))
		return -1;
	int64_t from = cur > w->seq[i] ? cur : w->seq[i];
	if (upto <= from) {
		free(old);
		w->seq[i] = from;
		return 1;
	}
	json_t *b = json_pack("{s:s, s:I}", "agent", w->agent.id, "seq", (json_int_t)upto);
	text = b ? json_dumps(b, JSON_COMPACT) : NULL;
	json_decref(b);
	row.body = text;
	won = text ? cof_meta_state_swap(w->st->meta, &row, old, err)
		   : cof_error(err, COF_EINTERNAL, "out of memory");
	free(old);
	free(text);
	if (won <= 0)
		return won;
	changed_ctx x = {.w = w, .m = m, .paths = json_array(), .upto = upto};
	snprintf(prefix, sizeof prefix, "%s%s", m->subpath, m->subpath[0] ? "/" : "");
	if (cof_meta_changes(w->st->meta, vno, from, prefix, 100000, changed_add, &x, err)) {
		json_decref(x.paths);
		return -1;
	}
	w->seq[i] = upto;
	if (x.n == 0) {
		json_decref(x.paths);
		return 1;
	}
	cof_agent_event_push(w->st, &w->agent, "files_changed", json_pack(
		"{s:s, s:o, s:I, s:b}", "mount", m->path, "paths", x.paths, "count",
		(json_int_t)x.n, "truncated", x.n > PATHS_MAX));
	return 1;
}

/* Stores a files_changed event per notify mount changed by others (the
 * stream takes them with the other stored events). */
static int take_changes(cof_agent_watch *w, cof_err *err)
{
	for (size_t i = 0; i < w->agent.nmounts; i++) {
		const cof_mount *m = &w->agent.mounts[i];
		cof_volrow v;
		if (!m->notify || cof_meta_volume_get(w->st->meta, w->agent.org, m->vol, &v, err))
			continue;
		/* a stream that lost the cursor looks again: the winner may have
		 * reported less than this one has seen */
		int r = 0;
		for (int tries = 0; tries < 3 && r == 0; tries++)
			r = v.seq > w->seq[i] ? report_mount(w, i, v.vno, v.seq, err) : 1;
		if (r < 0)
			return -1;
	}
	return 0;
}

/* True when a notify mount's volume moved past what the watch has seen. */
static int changes_waiting(cof_agent_watch *w)
{
	for (size_t i = 0; i < w->agent.nmounts; i++) {
		cof_volrow v;
		cof_err e = {0};
		int moved = w->agent.mounts[i].notify &&
			    !cof_meta_volume_get(w->st->meta, w->agent.org, w->agent.mounts[i].vol,
						 &v, &e) && v.seq > w->seq[i];
		cof_err_clear(&e);
		if (moved)
			return 1;
	}
	return 0;
}

int cof_agent_watch_next(cof_agent_watch *w, int wait_ms, json_t **out, cof_err *err)
{
	cof_store *st = w->st;
	int64_t deadline = cof_mono_ms() + wait_ms;
	json_t *list = json_array();

	for (;;) {
		uint64_t gen = cof_sub_gen(w->sub); /* before looking: no wake-up lost */
		int64_t now = cof_mono_ms();
		if (!w->pending_ms && changes_waiting(w))
			w->pending_ms = now;
		if (w->pending_ms && now - w->pending_ms >= COALESCE_MS) {
			w->pending_ms = 0;
			if (take_changes(w, err)) {
				json_decref(list);
				return -1;
			}
		}
		if (take_events(w, list, err)) {
			json_decref(list);
			return -1;
		}
		int closing = cof_notify_closing(st->notify);
		if (json_array_size(list) || closing || now >= deadline) {
			*out = list;
			return closing ? 1 : 0;
		}
		/* Sleep until a change, the end of a coalescing window or the deadline. */
		int64_t until = w->pending_ms ? w->pending_ms + COALESCE_MS : deadline;
		if (until > deadline)
			until = deadline;
		cof_sub_wait(w->sub, gen, until);
	}
}

int cof_agent_watch_wake(cof_agent_watch *w, int64_t *at_ms)
{
	*at_ms = w->pending_ms ? w->pending_ms + COALESCE_MS : 0;
	return w->sub->fd;
}
