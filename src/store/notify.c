/*
 * notify.c — the notification interface's front (notify.h) and its
 * in-process hub: subscriptions in a list behind a mutex, each with an
 * eventfd that a publish to one of its topics makes readable.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include "store/notify.h"
#include "util/util.h"

/* ---- topics */

static cof_topic topic(cof_topic_kind kind, const char *org, const char *id)
{
	cof_topic t;

	memset(&t, 0, sizeof t);
	t.kind = kind;
	snprintf(t.org, sizeof t.org, "%s", org ? org : "");
	snprintf(t.id, sizeof t.id, "%s", id ? id : "");
	return t;
}

cof_topic cof_topic_volume(const char *org, const char *vol)
{
	return topic(COF_TOPIC_VOLUME, org, vol);
}

cof_topic cof_topic_agent(const char *org, const char *agent)
{
	return topic(COF_TOPIC_AGENT, org, agent);
}

cof_topic cof_topic_session(const char *uid)
{
	return topic(COF_TOPIC_SESSION, NULL, uid);
}

static int topic_eq(const cof_topic *a, const cof_topic *b)
{
	return a->kind == b->kind && !strcmp(a->id, b->id) && !strcmp(a->org, b->org);
}

/* ---- dispatch and the wait every hub shares */

int cof_notify_subscribe(cof_notify *hub, const cof_topic *topics, size_t n, cof_sub **out,
			 cof_err *err)
{
	if (n > COF_SUB_TOPICS)
		return cof_error(err, COF_EINTERNAL, "a subscription holds at most %d topics",
				 COF_SUB_TOPICS);
	return hub->ops->subscribe(hub, topics, n, out, err);
}

void cof_notify_publish(cof_notify *hub, const cof_topic *t)
{
	hub->ops->publish(hub, t);
}

void cof_notify_unsubscribe(cof_sub *s)
{
	if (s)
		s->hub->ops->unsubscribe(s);
}

void cof_notify_shutdown(cof_notify *hub)
{
	hub->ops->shutdown(hub);
}

void cof_notify_close(cof_notify *hub)
{
	if (hub)
		hub->ops->close(hub);
}

int cof_notify_closing(const cof_notify *hub)
{
	return __atomic_load_n(&hub->closing, __ATOMIC_ACQUIRE);
}

uint64_t cof_sub_gen(cof_sub *s)
{
	return __atomic_load_n(&s->gen, __ATOMIC_ACQUIRE);
}

/* Polls the fd (the generation is checked first and after each wake-up, so a
 * publish between the caller's check and the poll is never missed: it moved
 * the generation and left the fd readable) and drains it. */
uint64_t cof_sub_wait(cof_sub *s, uint64_t seen, int64_t until_ms)
{
	uint64_t g;

	while ((g = cof_sub_gen(s)) == seen && !cof_notify_closing(s->hub)) {
		int64_t left = until_ms - cof_mono_ms();
		struct pollfd p = {.fd = s->fd, .events = POLLIN};
		uint64_t v;
		if (left <= 0)
			break;
		if (poll(&p, 1, left > 1000 ? 1000 : (int)left) > 0 &&
		    read(s->fd, &v, sizeof v) < 0 && errno != EAGAIN && errno != EINTR)
			break;
	}
	/* Drained, so the fd says "moved since": the generation is the truth,
	 * and one that moves after this read moved it readable again. */
	uint64_t v;
	if (g != seen && read(s->fd, &v, sizeof v) < 0) {
		/* EAGAIN: already drained */
	}
	return g;
}

/* ---- the in-process hub */

typedef struct local_sub {
	cof_sub base;
	cof_topic topics[COF_SUB_TOPICS];
	size_t ntopics;
	struct local_sub *prev, *next;
} local_sub;

typedef struct local_hub {
	cof_notify base;
	pthread_mutex_t mu;
	local_sub *subs;
} local_hub;

/* Moves a subscription on and makes its fd readable. */
static void poke(local_sub *s)
{
	uint64_t one = 1;

	__atomic_add_fetch(&s->base.gen, 1, __ATOMIC_ACQ_REL);
	if (write(s->base.fd, &one, sizeof one) < 0) {
		/* the counter is full (never, at 2^64 - 1): it is readable anyway */
	}
}

static int local_subscribe(cof_notify *n, const cof_topic *topics, size_t ntopics,
			   cof_sub **out, cof_err *err)
{
	local_hub *h = (local_hub *)n;
	local_sub *s = cof_calloc(1, sizeof *s);

	if (!s)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	s->base.hub = n;
	s->base.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (s->base.fd < 0) {
		int e = errno;
		free(s);
		return cof_error(err, e == EMFILE || e == ENFILE ? COF_EUNAVAILABLE : COF_EINTERNAL,
				 "cannot wait for changes: eventfd: %s", strerror(e));
	}
	memcpy(s->topics, topics, ntopics * sizeof *topics);
	s->ntopics = ntopics;
	pthread_mutex_lock(&h->mu);
	s->next = h->subs;
	if (h->subs)
		h->subs->prev = s;
	h->subs = s;
	pthread_mutex_unlock(&h->mu);
	*out = &s->base;
	return 0;
}

static void local_publish(cof_notify *n, const cof_topic *t)
{
	local_hub *h = (local_hub *)n;

	pthread_mutex_lock(&h->mu);
	for (local_sub *s = h->subs; s; s = s->next)
		for (size_t i = 0; i < s->ntopics; i++)
			if (topic_eq(&s->topics[i], t)) {
				poke(s);
				break;
			}
	pthread_mutex_unlock(&h->mu);
}

static void local_unsubscribe(cof_sub *sub)
{
	local_sub *s = (local_sub *)sub;
	local_hub *h = (local_hub *)sub->hub;

	pthread_mutex_lock(&h->mu);
	if (s->prev)
		s->prev->next = s->next;
	else
		h->subs = s->next;
	if (s->next)
		s->next->prev = s->prev;
	pthread_mutex_unlock(&h->mu);
	close(s->base.fd);
	free(s);
}

static void local_shutdown(cof_notify *n)
{
	local_hub *h = (local_hub *)n;

	pthread_mutex_lock(&h->mu);
	__atomic_store_n(&n->closing, 1, __ATOMIC_RELEASE);
	for (local_sub *s = h->subs; s; s = s->next)
		poke(s);
	pthread_mutex_unlock(&h->mu);
}

static void local_close(cof_notify *n)
{
	local_hub *h = (local_hub *)n;

	pthread_mutex_destroy(&h->mu);
	free(h);
}

static const cof_notify_ops local_ops = {
	"local", local_subscribe, local_publish, local_unsubscribe, local_shutdown, local_close
};

int cof_notify_local_open(cof_notify **out, cof_err *err)
{
	local_hub *h = cof_calloc(1, sizeof *h);

	if (!h)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	h->base.ops = &local_ops;
	pthread_mutex_init(&h->mu, NULL);
	*out = &h->base;
	return 0;
}
