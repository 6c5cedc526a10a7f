/*
 * wqueue.c — the relay's store writes, made after the registry's mutex is
 * dropped (issue 36 item 6). Owns each session's write queue (s->wq) and its
 * flush lock (s->wmu); the registry (registry.c) owns the sessions.
 *
 * Under r->mu a change to a session queues what the store must get (an
 * event, a log entry, the session's record, an op's record put or deleted,
 * the session's records forgotten), in the order of the changes, with the
 * text already made (memory only). cof_relay_unlock drops r->mu and then
 * stores what this thread queued; cof_relay_wait does the same before it
 * sleeps. So on PostgreSQL one session's round trips no longer hold every
 * other session's calls.
 *
 * Why it is safe:
 * - Order, per session: items are queued under r->mu in the order of the
 *   changes, and one thread at a time stores a session's queue (s->wmu), oldest
 *   first; so two writes of one session are stored in the order they were
 *   made, whichever threads made them. Sessions are independent: their
 *   records, streams and op records have disjoint keys.
 * - Nobody answers before its writes are stored: a thread that queued an
 *   item stores it (or waits on s->wmu for the thread storing it) before it
 *   returns to its caller, so an HTTP answer, as before, follows the writes
 *   that its call made; a crash loses only what no answer reported.
 * - What a reader sees meanwhile: the session in memory (status, counts,
 *   ops) is ahead of the store until the writes are stored; so every call that
 *   finds a session (cof_relay_find*) also waits for what is queued for it
 *   (cof_relay_wq_sync) before it answers: a client told "paused" by one node
 *   finds the record paused at another (test_nodes_state); the events a stream reads come from the store
 *   and s->ev_next moves only once an event is stored, so a stream never
 *   waits for an event not stored yet; an op is handed to the client only
 *   once its pending record is stored (op->rec_seq <= s->wdone), so a restart
 *   always finds the record of an op the client may have run.
 * - Lifetime: a thread holds a reference (s->refs) on each session it queued
 *   for until it has stored its queue, so pruning never frees it meanwhile.
 * - Lock order: s->wmu is taken only without r->mu; r->mu is taken briefly
 *   under s->wmu to take the items and to note what was stored.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "relay/relay.h"
#include "store/store.h"

enum { W_EVENT, W_LOG, W_SAVE, W_PUT, W_DELETE, W_FORGET };

struct rwrite {
	struct rwrite *next;
	int type;
	uint64_t seq;
	char name[64];       /* W_EVENT, W_LOG: the stream */
	unsigned to;
	int64_t keep;
	char *text;          /* W_EVENT, W_LOG, W_PUT: the body (owned) */
	json_t *body;        /* W_SAVE: the session's record (owned) */
	int ended;           /* W_SAVE */
	cof_staterow row;    /* W_PUT, W_DELETE (kind, id), W_SAVE (node) */
	int events;          /* W_FORGET: the events too */
};

/* The sessions this thread queued for and has not stored yet (each with a
 * reference). */
static __thread struct {
	rsession **s;
	size_t n, cap;
} touched;

static void item_free(rwrite *w)
{
	free(w->text);
	json_decref(w->body);
	free(w);
}

void cof_relay_wq_free(rsession *s)
{
	for (rwrite *w = s->wq, *n; w; w = n) {
		n = w->next;
		item_free(w);
	}
	s->wq = NULL;
	s->wq_tail = NULL;
}

/* Notes s as this thread's to store (with a reference) when r->mu is dropped. */
static void touch(rsession *s)
{
	size_t i;

	for (i = 0; i < touched.n && touched.s[i] != s; i++)
		;
	if (i < touched.n)
		return;
	if (touched.n == touched.cap) {
		size_t cap = touched.cap ? touched.cap * 2 : 8;
		rsession **a = realloc(touched.s, cap * sizeof *a);
		if (!a) /* stored by the next thread that stores s, or at close */
			return;
		touched.s = a, touched.cap = cap;
	}
	touched.s[touched.n++] = s;
	s->refs++;
}

/* Appends w to s's queue and notes s as this thread's to store. */
static uint64_t enqueue(rsession *s, rwrite *w)
{
	w->seq = ++s->wseq;
	if (s->wq_tail)
		s->wq_tail->next = w;
	else
		s->wq = w;
	s->wq_tail = w;
	touch(s);
	return w->seq;
}

void cof_relay_wq_sync(rsession *s)
{
	if (s->wq || s->wdone < s->wseq)
		touch(s);
}

static rwrite *item_new(int type)
{
	rwrite *w = cof_calloc(1, sizeof *w);

	if (w)
		w->type = type;
	return w;
}

void cof_relay_wq_stream(rsession *s, const char *prefix, unsigned to, char *text,
			 int64_t keep)
{
	rwrite *w = item_new(strcmp(prefix, RELAY_EVENT_STREAM) ? W_LOG : W_EVENT);

	if (!w) {
		fprintf(stderr, "cofferd: relay session %s: cannot store an event: out of memory\n",
			s->uid);
		free(text);
		return;
	}
	snprintf(w->name, sizeof w->name, "%s%s", prefix, s->uid);
	w->to = to;
	w->text = text;
	w->keep = keep;
	enqueue(s, w);
}

void cof_relay_wq_save(cof_relay *r, rsession *s, json_t *body)
{
	rwrite *w = s->wq_tail;

	/* a record not taken yet and last in the queue: the newer one replaces it */
	if (w && w->type == W_SAVE) {
		json_decref(w->body);
		w->body = body;
		w->ended = s->status == RS_ENDED;
		return;
	}
	if (!(w = item_new(W_SAVE))) {
		json_decref(body);
		return;
	}
	w->body = body;
	w->ended = s->status == RS_ENDED;
	snprintf(w->row.node, sizeof w->row.node, "%s", r->node);
	enqueue(s, w);
}

uint64_t cof_relay_wq_put(rsession *s, const cof_staterow *row, char *text)
{
	rwrite *w = item_new(W_PUT);

	if (!w) {
		free(text);
		return 0;
	}
	w->row = *row;
	w->row.body = NULL;
	w->text = text;
	return enqueue(s, w);
}

void cof_relay_wq_delete(rsession *s, const char *kind, const char *id)
{
	rwrite *w = item_new(W_DELETE);

	if (!w)
		return;
	snprintf(w->row.kind, sizeof w->row.kind, "%s", kind);
	snprintf(w->row.id, sizeof w->row.id, "%s", id);
	enqueue(s, w);
}

void cof_relay_wq_forget(rsession *s, int events)
{
	rwrite *w = item_new(W_FORGET);

	if (!w)
		return;
	w->events = events;
	enqueue(s, w);
}

/* Stores one item (no lock held); an event's id, else 0. */
static int64_t store_one(cof_relay *r, const rsession *s, rwrite *w)
{
	static const char *const all[] = {RELAY_LOG_STREAM, RELAY_EVENT_STREAM, NULL};
	static const char *const log_only[] = {RELAY_LOG_STREAM, NULL};
	static const char *const subs[] = {RELAY_OP_KIND, "relaystrm", NULL};
	cof_err e = {0};
	int64_t id = 0;

	switch (w->type) {
	case W_EVENT:
	case W_LOG:
		if (cof_meta_event_add(r->st->meta, w->name, w->to, w->text, w->keep, &id, &e)) {
			fprintf(stderr, "cofferd: relay session %s: cannot store an event: %s\n",
				s->uid, e.msg);
			id = 0;
		}
		break;
	case W_SAVE:
		cof_meta_state_save(r->st->meta, "relay", s->uid, s->org, w->row.node, w->ended,
				    w->body, "relay session");
		break;
	case W_PUT:
		w->row.body = w->text;
		if (cof_meta_state_put(r->st->meta, &w->row, &e))
			fprintf(stderr, "cofferd: relay session %s: cannot store op %s: %s\n",
				s->uid, w->row.id, e.msg);
		w->row.body = NULL;
		break;
	case W_DELETE:
		if (cof_meta_state_delete(r->st->meta, w->row.kind, w->row.id, &e))
			fprintf(stderr, "cofferd: relay session %s: cannot forget op %s: %s\n",
				s->uid, w->row.id, e.msg);
		break;
	case W_FORGET:
		if (cof_meta_state_forget(r->st->meta, "relay", s->uid, w->events ? all : log_only,
					  subs, &e))
			fprintf(stderr, "cofferd: relay session %s: cannot forget its records: %s\n",
				s->uid, e.msg);
		break;
	}
	cof_err_clear(&e);
	return w->type == W_EVENT ? id : 0;
}

/* Stores s's queue, oldest first, until it is empty. Called without r->mu. */
static void flush_one(cof_relay *r, rsession *s)
{
	pthread_mutex_lock(&s->wmu);
	for (;;) {
		rwrite *batch;
		int64_t last = 0;
		uint64_t seq = 0;

		pthread_mutex_lock(&r->mu);
		batch = s->wq;
		s->wq = s->wq_tail = NULL;
		pthread_mutex_unlock(&r->mu);
		if (!batch)
			break;
		for (rwrite *w = batch, *n; w; w = n) {
			int64_t id = store_one(r, s, w);
			n = w->next;
			last = id > last ? id : last;
			seq = w->seq;
			item_free(w);
		}
		pthread_mutex_lock(&r->mu);
		if (last > 0 && (uint64_t)last > s->ev_next)
			s->ev_next = (uint64_t)last;
		s->wdone = seq;
		pthread_mutex_unlock(&r->mu);
		cof_relay_wake(r, s); /* the stored events, the ops now sendable */
	}
	pthread_mutex_unlock(&s->wmu);
}

void cof_relay_wq_flush(cof_relay *r)
{
	while (touched.n) {
		rsession *s = touched.s[--touched.n];
		flush_one(r, s);
		pthread_mutex_lock(&r->mu);
		cof_relay_unref(s);
		cof_relay_forget_done(r, s); /* may queue the events' forgetting */
		pthread_mutex_unlock(&r->mu);
	}
	free(touched.s);
	touched.s = NULL;
	touched.cap = 0;
}

void cof_relay_unlock(cof_relay *r)
{
	pthread_mutex_unlock(&r->mu);
	cof_relay_wq_flush(r);
}
