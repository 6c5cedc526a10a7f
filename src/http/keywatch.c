/*
 * keywatch.c — the keys of answers that last: an event stream of a key that
 * is revoked or expires ends within a second (issue 32.8).
 *
 * A request's key is checked when it starts; a stream may go on for hours.
 * Each stream holds its key here, and one thread (started with the first
 * hold) reads the row of every key held, one primary-key lookup each, every
 * KEYWATCH_LOOK_MS: off the event loops, where a PostgreSQL round trip must
 * not wait, and from the store, so that a revocation made anywhere (another
 * node, `coffer admin rotate-key` in another process) is seen. A key found
 * revoked, expired or gone marks its holds dead for good; an expiry is also
 * seen by the stream itself from the time it was given. Streams look at
 * their hold each time they wake, and wake at least every KEYWATCH_WAKE_MS;
 * a Socket.IO agent's socket holds its key too, looked at by the hub's
 * sweep once a second (socketio.c).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "http/http.h"
#include "store/meta.h"
#include "store/store.h"

#define KEYWATCH_LOOK_MS 250

struct http_keyhold {
	struct http_keyhold *next;
	char hash[65];
	char id[24];
	int64_t expires_at;      /* 0 = never */
	int refs;                /* streams holding it (W.mu) */
	int dead;                /* HTTP_KEY_*: set once, read without the lock */
};

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	http_keyhold *list;
	cof_store *st;
	int started, stop;
	pthread_t tid;
} W = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, NULL, 0, 0, 0 };

/* How key row k stands now: 0 live, else HTTP_KEY_REVOKED / _EXPIRED. */
static int key_state(const cof_keyrow *k, int64_t now)
{
	if (k->revoked_at)
		return HTTP_KEY_REVOKED;
	if (k->expires_at && now >= k->expires_at)
		return HTTP_KEY_EXPIRED;
	return 0;
}

/* Marks the hold of `hash` dead with `why` (W.mu held). */
static void mark(const char *hash, int why)
{
	for (http_keyhold *h = W.list; h; h = h->next)
		if (!strcmp(h->hash, hash) && !h->dead)
			__atomic_store_n(&h->dead, why, __ATOMIC_RELEASE);
}

static void *watch_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&W.mu);
	while (!W.stop) {
		size_t n = 0, i = 0;
		for (http_keyhold *h = W.list; h; h = h->next)
			n += !h->dead;
		char (*hashes)[65] = n ? malloc(n * sizeof *hashes) : NULL;
		for (http_keyhold *h = W.list; h && hashes; h = h->next)
			if (!h->dead)
				memcpy(hashes[i++], h->hash, 65);
		pthread_mutex_unlock(&W.mu);
		for (size_t j = 0; j < i; j++) {
			cof_keyrow k;
			cof_err err = { 0 };
			int why = 0;
			if (cof_meta_key_find(W.st->meta, hashes[j], &k, &err) == 0)
				why = key_state(&k, cof_now());
			else if (err.code == COF_EUNAUTHORIZED)
				why = HTTP_KEY_REVOKED; /* the row is gone */
			/* another error (the store unreachable): look again next time */
			cof_err_clear(&err);
			if (why) {
				pthread_mutex_lock(&W.mu);
				mark(hashes[j], why);
				pthread_mutex_unlock(&W.mu);
			}
		}
		free(hashes);
		pthread_mutex_lock(&W.mu);
		if (W.stop)
			break;
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += KEYWATCH_LOOK_MS * 1000000L;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		while (!W.stop && !W.list)
			pthread_cond_wait(&W.cv, &W.mu); /* nothing held: nothing to read */
		if (!W.stop)
			pthread_cond_timedwait(&W.cv, &W.mu, &ts);
	}
	pthread_mutex_unlock(&W.mu);
	return NULL;
}

http_keyhold *http_key_hold(http_req *req)
{
	return http_key_hold_key(req->srv->st, req->key_hash, &req->who);
}

http_keyhold *http_key_hold_key(cof_store *st, const char *hash, const cof_principal *who)
{
	http_keyhold *h;

	if (!hash[0] || !who->key_id[0])
		return NULL;
	pthread_mutex_lock(&W.mu);
	for (h = W.list; h; h = h->next)
		if (!strcmp(h->hash, hash) && !h->dead)
			break;
	if (!h && (h = calloc(1, sizeof *h)) != NULL) {
		snprintf(h->hash, sizeof h->hash, "%s", hash);
		snprintf(h->id, sizeof h->id, "%s", who->key_id);
		h->expires_at = who->expires_at;
		h->next = W.list;
		W.list = h;
	}
	if (h)
		h->refs++;
	if (h && !W.started && !W.stop) {
		W.st = st;
		W.started = pthread_create(&W.tid, NULL, watch_main, NULL) == 0;
	}
	pthread_cond_signal(&W.cv);
	pthread_mutex_unlock(&W.mu);
	return h;
}

int http_key_ended(http_keyhold *h, char *msg, size_t msgsz)
{
	int why;

	if (!h)
		return 0;
	why = __atomic_load_n(&h->dead, __ATOMIC_ACQUIRE);
	if (!why && h->expires_at && cof_now() >= h->expires_at)
		why = HTTP_KEY_EXPIRED;
	if (why && msg)
		snprintf(msg, msgsz, "the API key %s %s: this stream has ended", h->id,
			 why == HTTP_KEY_EXPIRED ? "expired" : "was revoked");
	return why;
}

/* Ends the stream with an `error` event when its key was revoked or expired
 * (issue 32.8): 1 then, else 0. */
int http_sse_key_end(http_keyhold *key, cof_buf *buf)
{
	char msg[160];

	if (!http_key_ended(key, msg, sizeof msg))
		return 0;
	cof_buf_addf(buf, "event: error\ndata: {\"type\":\"unauthorized\",\"message\":\"%s\"}\n\n",
		     msg);
	return 1;
}

void http_key_release(http_keyhold *h)
{
	if (!h)
		return;
	pthread_mutex_lock(&W.mu);
	if (--h->refs == 0) {
		for (http_keyhold **p = &W.list; *p; p = &(*p)->next)
			if (*p == h) {
				*p = h->next;
				break;
			}
		free(h);
	}
	pthread_mutex_unlock(&W.mu);
}

void http_keywatch_stop(void)
{
	pthread_mutex_lock(&W.mu);
	W.stop = 1;
	pthread_cond_broadcast(&W.cv);
	int started = W.started;
	pthread_mutex_unlock(&W.mu);
	if (started)
		pthread_join(W.tid, NULL);
}
