/*
 * loop.c — how a request waits without holding a thread (docs/design.md,
 * "The HTTP server's threads").
 *
 * MHD runs a few event-loop threads (epoll); nothing may block them for
 * long. Two ways off them:
 *
 *   - http_wait_on: a long-poll or an event stream with nothing to say yet
 *     suspends its connection on a file descriptor (a notify subscription's
 *     eventfd, a stream's own eventfd) and a deadline. One watcher thread
 *     holds every such wait in an epoll set and a deadline heap, and
 *     resumes the connection when its fd turns readable, its socket hangs
 *     up (hup_fd) or the deadline comes; MHD then calls the handler (or the
 *     content reader) again, which looks again.
 *   - http_run_off_loop: a handler that may block (a write with its fsync, a
 *     turn call, a relay op waiting for the user's side) runs on a bounded
 *     pool of worker threads with its connection suspended. Its answer is
 *     parked in the request (http_queue sees req->parking) and queued by
 *     the loop thread when MHD calls the handler again after the resume:
 *     MHD_queue_response belongs to the loop thread.
 *
 * A suspended connection is not watched by MHD, so every wait has an end:
 * a deadline, a producer that always signals its end, or the server's stop
 * (http_loop_wake_all resumes every wait, and no new wait starts).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include "http/http.h"
#include "store/store.h"

#define BATCH 256               /* epoll events taken at once */

/* The watcher: waits in an epoll set and a min-heap of deadlines. */
typedef struct watcher {
	pthread_mutex_t mu;
	int ep, wake_fd;
	http_wait **heap;        /* by deadline; w->slot is its index + 1 */
	size_t n, cap;
	size_t nwaits;           /* armed waits, with or without a deadline */
	int closing, stop, started;
	pthread_t tid;
} watcher;

/* The long lane's queue of one flow (a turn, a relay session) of one
 * organization. */
typedef struct lane_flow {
	char key[160];
	http_req *head, *tail;
	struct lane_flow *next;
} lane_flow;

/* One organization on the long lane: its flows with waiting requests (served
 * in turn, the one served goes to the end) and how many of its requests run. */
typedef struct lane_org {
	char org[48];
	lane_flow *flows, *flows_tail;
	int running;
	struct lane_org *next;
} lane_org;

/* The worker pool: lane 0 a FIFO of requests, bounded by the connections;
 * lane 1 (fair) organizations served in turn, each capped. */
typedef struct pool {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	http_req *head, *tail;
	pthread_t *tids;
	int nthreads, stop;
	int fair;                /* lane 1: by organization */
	lane_org *orgs;          /* with waiting or running requests; served in turn */
	int per_org;             /* the most of one organization running at once */
	int max_threads;         /* tids' room: the lane grows up to it */
	int idle, claims;        /* workers waiting; signals sent to them, not taken */
} pool;

static watcher W = { .mu = PTHREAD_MUTEX_INITIALIZER, .ep = -1, .wake_fd = -1 };
/* Two lanes: [0] for handlers that end on their own (writes, most calls),
 * [1] for those that wait on another request (a relay op waits for the
 * client's result POST, which lane 0 serves) or run for seconds (turn
 * calls): a full lane 1 never keeps lane 0's answers from coming. */
static pool PL[2] = {
	{ .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER },
	{ .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER },
};

/* ------------------------------------------------------------ the heap */

static void heap_set(size_t i, http_wait *w)
{
	W.heap[i] = w;
	w->slot = i + 1;
}

/* Moves the entry at i up or down to its place. */
static void heap_fix(size_t i)
{
	while (i > 0 && W.heap[(i - 1) / 2]->deadline > W.heap[i]->deadline) {
		http_wait *p = W.heap[(i - 1) / 2];
		heap_set((i - 1) / 2, W.heap[i]);
		heap_set(i, p);
		i = (i - 1) / 2;
	}
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < W.n && W.heap[l]->deadline < W.heap[m]->deadline)
			m = l;
		if (r < W.n && W.heap[r]->deadline < W.heap[m]->deadline)
			m = r;
		if (m == i)
			return;
		http_wait *t = W.heap[m];
		heap_set(m, W.heap[i]);
		heap_set(i, t);
		i = m;
	}
}

/* Adds w (with a deadline). 0, or -1 when out of memory. */
static int heap_add(http_wait *w)
{
	if (W.n == W.cap) {
		size_t cap = W.cap ? W.cap * 2 : 1024;
		http_wait **h = realloc(W.heap, cap * sizeof *h);
		if (!h)
			return -1;
		W.heap = h;
		W.cap = cap;
	}
	heap_set(W.n++, w);
	heap_fix(W.n - 1);
	return 0;
}

static void heap_del(http_wait *w)
{
	size_t i = w->slot - 1;

	w->slot = 0;
	if (--W.n == i)
		return;
	heap_set(i, W.heap[W.n]);
	heap_fix(i);
}

/* ------------------------------------------------------------ the watcher */

/* Takes w out of the epoll set and the heap (under W.mu), so that it is
 * resumed once: its fds may be closed once its connection runs again. */
static void detach(http_wait *w)
{
	if (w->fd >= 0)
		epoll_ctl(W.ep, EPOLL_CTL_DEL, w->fd, NULL);
	if (w->hup_fd >= 0)
		epoll_ctl(W.ep, EPOLL_CTL_DEL, w->hup_fd, NULL);
	if (w->slot)
		heap_del(w);
	w->armed = 0;
	W.nwaits--;
}

/* Resumes every wait on the list (outside W.mu: MHD takes its own locks). */
static void resume_list(http_wait *list)
{
	while (list) {
		http_wait *next = list->next;
		struct MHD_Connection *c = list->conn;
		http_resume(c); /* from here, `list` may be gone */
		list = next;
	}
}

/* Every wait in the epoll set is in the heap or counted: to resume them all
 * at the stop, the watcher keeps them on one list too. */
static http_wait *all_head;

static void all_unlink(http_wait *w)
{
	if (w->all_prev)
		w->all_prev->all_next = w->all_next;
	else
		all_head = w->all_next;
	if (w->all_next)
		w->all_next->all_prev = w->all_prev;
	w->all_prev = w->all_next = NULL;
}

/* The watcher's body: epoll_wait until the nearest deadline; resumes what
 * fired; on closing, resumes everything. */
static void *watch_main(void *arg)
{
	struct epoll_event ev[BATCH];

	(void)arg;
	for (;;) {
		pthread_mutex_lock(&W.mu);
		if (W.stop && W.nwaits == 0) {
			pthread_mutex_unlock(&W.mu);
			return NULL;
		}
		int timeout = -1;
		if (W.n) {
			int64_t left = W.heap[0]->deadline - cof_mono_ms();
			timeout = left <= 0 ? 0 : left > 60000 ? 60000 : (int)left;
		}
		pthread_mutex_unlock(&W.mu);
		int n = epoll_wait(W.ep, ev, BATCH, timeout);
		http_wait *fired = NULL;
		pthread_mutex_lock(&W.mu);
		for (int i = 0; i < n; i++) {
			http_wait *w = ev[i].data.ptr;
			if (w == NULL) {
				uint64_t v;
				if (read(W.wake_fd, &v, sizeof v) < 0) {
					/* EAGAIN: another poke drained it */
				}
				continue;
			}
			if (!w->armed)
				continue; /* its other fd fired in this batch */
			detach(w);
			all_unlink(w);
			w->next = fired;
			fired = w;
		}
		int64_t now = cof_mono_ms();
		while (W.n && (W.heap[0]->deadline <= now || W.closing)) {
			http_wait *w = W.heap[0];
			detach(w);
			all_unlink(w);
			w->next = fired;
			fired = w;
		}
		while (W.closing && all_head) {
			http_wait *w = all_head;
			detach(w);
			all_unlink(w);
			w->next = fired;
			fired = w;
		}
		pthread_mutex_unlock(&W.mu);
		resume_list(fired);
	}
}

/* Pokes the watcher so it looks at its heap again. */
static void poke(void)
{
	uint64_t one = 1;

	if (write(W.wake_fd, &one, sizeof one) < 0) {
		/* EAGAIN: the counter is full, so it is readable anyway */
	}
}

/* Adds `fd` to the epoll set for w: `events` EPOLLIN or EPOLLRDHUP. */
static int watch_fd(http_wait *w, int fd, uint32_t events)
{
	struct epoll_event e = { .events = events, .data.ptr = w };

	return fd < 0 ? 0 : epoll_ctl(W.ep, EPOLL_CTL_ADD, fd, &e);
}

int http_wait_on(http_wait *w, struct MHD_Connection *conn, int fd, int hup_fd,
		 int64_t deadline_ms)
{
	int rc = -1;

	pthread_mutex_lock(&W.mu);
	if (!W.started || W.closing || w->armed)
		goto out;
	memset(w, 0, sizeof *w);
	w->conn = conn;
	w->fd = -1;
	w->hup_fd = -1;
	w->deadline = deadline_ms;
	if (watch_fd(w, fd, EPOLLIN) != 0)
		goto out;
	w->fd = fd;
	/* a socket's hang-up only: its bytes are MHD's to read */
	if (watch_fd(w, hup_fd, EPOLLRDHUP) != 0) {
		epoll_ctl(W.ep, EPOLL_CTL_DEL, fd, NULL);
		goto out;
	}
	w->hup_fd = hup_fd;
	if (deadline_ms > 0 && heap_add(w) != 0) {
		if (fd >= 0)
			epoll_ctl(W.ep, EPOLL_CTL_DEL, fd, NULL);
		if (hup_fd >= 0)
			epoll_ctl(W.ep, EPOLL_CTL_DEL, hup_fd, NULL);
		goto out;
	}
	w->armed = 1;
	W.nwaits++;
	w->all_next = all_head;
	if (all_head)
		all_head->all_prev = w;
	all_head = w;
	/* suspended under W.mu: the watcher cannot resume it before this */
	MHD_suspend_connection(conn);
	if (w->slot == 1)
		poke(); /* the nearest deadline changed */
	rc = 0;
out:
	pthread_mutex_unlock(&W.mu);
	return rc;
}

void http_drain_fd(int fd)
{
	uint64_t v;

	if (fd >= 0 && read(fd, &v, sizeof v) < 0) {
		/* EAGAIN: nothing was pending */
	}
}

int http_fd_ready(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	return fd >= 0 && poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}

int http_peer_gone(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN | POLLRDHUP};
	char c;

	if (fd < 0 || poll(&p, 1, 0) <= 0)
		return 0;
	if (p.revents & (POLLRDHUP | POLLHUP | POLLERR))
		return 1;
	return (p.revents & POLLIN) && recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

int http_subscribe(http_req *req, const cof_topic *topics, size_t n, cof_err *err)
{
	if (req->sub)
		return 0;
	return cof_notify_subscribe(req->srv->st->notify, topics, n, &req->sub, err);
}

int http_sub_fd(http_req *req)
{
	return req->sub ? req->sub->fd : -1;
}

/* ------------------------------------------------------------ the pool */

/* The long lane: the organization `org`, made when missing. Under pp->mu. */
static lane_org *lane_org_get(pool *pp, const char *org)
{
	lane_org *o, **pp_tail = &pp->orgs;

	for (o = pp->orgs; o; o = o->next) {
		if (!strcmp(o->org, org))
			return o;
		pp_tail = &o->next;
	}
	o = cof_calloc(1, sizeof *o);
	snprintf(o->org, sizeof o->org, "%s", org);
	*pp_tail = o;
	return o;
}

/* Frees `o` when nothing of it waits or runs. Under pp->mu. */
static void lane_org_drop(pool *pp, lane_org *o)
{
	if (o->running || o->flows)
		return;
	for (lane_org **l = &pp->orgs; *l; l = &(*l)->next)
		if (*l == o) {
			*l = o->next;
			break;
		}
	free(o);
}

/* Queues `req` in its organization's flow (its turn or relay session: the
 * route's first parameter). Under pp->mu. */
static void lane_put(pool *pp, http_req *req)
{
	lane_org *o = lane_org_get(pp, req->who.org);
	const char *key = req->nparams > 0 ? req->param[0] : "";
	lane_flow *f;

	for (f = o->flows; f && strcmp(f->key, key); f = f->next)
		;
	if (!f) {
		f = cof_calloc(1, sizeof *f);
		snprintf(f->key, sizeof f->key, "%s", key);
		if (o->flows_tail)
			o->flows_tail->next = f;
		else
			o->flows = f;
		o->flows_tail = f;
	}
	if (f->tail)
		f->tail->job_next = req;
	else
		f->head = req;
	f->tail = req;
	req->job_org = o;
}

/* The next request of the long lane: the first organization in turn that
 * waits and is under its cap gives its first flow's first request; that
 * flow goes to the end of its organization's, the organization to the end
 * of the lane's. NULL when none may run now. Under pp->mu. */
static http_req *lane_take(pool *pp)
{
	lane_org **l, *o;

	for (l = &pp->orgs; (o = *l) != NULL; l = &o->next)
		if (o->flows && o->running < pp->per_org)
			break;
	if (!o)
		return NULL;
	lane_flow *f = o->flows;
	http_req *req = f->head;
	f->head = req->job_next;
	req->job_next = NULL;
	o->flows = f->next;
	if (!o->flows)
		o->flows_tail = NULL;
	f->next = NULL;
	if (f->head) { /* its turn again after the others' */
		if (o->flows_tail)
			o->flows_tail->next = f;
		else
			o->flows = f;
		o->flows_tail = f;
	} else {
		free(f);
	}
	o->running++;
	*l = o->next; /* the organization served goes last */
	o->next = NULL;
	while (*l)
		l = &(*l)->next;
	*l = o;
	return req;
}

/* The next request of the pool, or NULL. Under pp->mu. */
static http_req *pool_take(pool *pp)
{
	http_req *req;

	if (pp->fair)
		return lane_take(pp);
	if ((req = pp->head) != NULL) {
		pp->head = req->job_next;
		if (!pp->head)
			pp->tail = NULL;
	}
	return req;
}

/* A worker's body: runs queued handlers, parks their answers, resumes. */
static void *work_main(void *arg)
{
	pool *pp = arg;
	pthread_mutex_lock(&pp->mu);
	for (;;) {
		http_req *req;
		while (!(req = pool_take(pp)) && !pp->stop) {
			pp->idle++;
			pthread_cond_wait(&pp->cv, &pp->mu);
			pp->idle--;
			if (pp->claims > 0)
				pp->claims--;
		}
		if (!req)
			break;
		lane_org *o = req->job_org;
		pthread_mutex_unlock(&pp->mu);
		req->parking = 1;
		req->park_ret = http_handle(req);
		req->parking = 0;
		req->off_loop = HTTP_OFF_DONE;
		http_resume(req->conn); /* `req` is the loop's again */
		pthread_mutex_lock(&pp->mu);
		if (pp->fair && o) { /* this worker takes the next one itself */
			o->running--;
			lane_org_drop(pp, o);
		}
	}
	pthread_mutex_unlock(&pp->mu);
	return NULL;
}

/* Starts one more worker of `pp`. 0 or -1. Under pp->mu (or before serving). */
static int pool_grow(pool *pp)
{
	pthread_attr_t at;
	int rc;

	if (pp->nthreads >= pp->max_threads)
		return -1;
	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, (size_t)2 << 20);
	rc = pthread_create(&pp->tids[pp->nthreads], &at, work_main, pp);
	pthread_attr_destroy(&at);
	if (rc)
		return -1;
	pp->nthreads++;
	return 0;
}

int http_run_off_loop(http_req *req)
{
	pool *pp = &PL[(req->route->flags & HTTP_F_LONG) ? 1 : 0];
	pthread_mutex_lock(&pp->mu);
	if (pp->stop || pp->nthreads == 0) {
		pthread_mutex_unlock(&pp->mu);
		return -1;
	}
	req->off_loop = HTTP_OFF_RUNNING;
	req->job_next = NULL;
	req->job_org = NULL;
	/* suspended before a worker can see it, so its resume finds it so */
	MHD_suspend_connection(req->conn);
	if (!pp->fair) {
		if (pp->tail)
			pp->tail->job_next = req;
		else
			pp->head = req;
		pp->tail = req;
		pthread_cond_signal(&pp->cv);
		pthread_mutex_unlock(&pp->mu);
		return 0;
	}
	lane_put(pp, req);
	/* may it run now? an idle worker takes it, else one more worker; past
	 * the ceiling it waits its organization's turn */
	if (req->job_org->running < pp->per_org) {
		if (pp->idle > pp->claims) {
			pp->claims++;
			pthread_cond_signal(&pp->cv);
		} else if (pool_grow(pp)) {
			pthread_cond_signal(&pp->cv);
		}
	}
	pthread_mutex_unlock(&pp->mu);
	return 0;
}

enum MHD_Result http_unpark(http_req *req)
{
	struct MHD_Response *resp = req->park_resp;
	enum MHD_Result ret;

	req->off_loop = HTTP_OFF_ANSWERED;
	if (!resp)
		return req->park_ret; /* it queued nothing: MHD_NO closes */
	req->park_resp = NULL;
	ret = MHD_queue_response(req->conn, req->park_status, resp);
	MHD_destroy_response(resp);
	return ret;
}

/* ------------------------------------------------------------ start, stop */

int http_loop_start(int workers, int per_org, cof_err *err)
{
	struct epoll_event e = { .events = EPOLLIN, .data.ptr = NULL };
	pthread_attr_t at;

	W.ep = epoll_create1(EPOLL_CLOEXEC);
	W.wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (W.ep < 0 || W.wake_fd < 0 || epoll_ctl(W.ep, EPOLL_CTL_ADD, W.wake_fd, &e))
		return cof_error(err, COF_EINTERNAL, "cannot set up the wait watcher: %s",
				 strerror(errno));
	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, (size_t)2 << 20);
	if (pthread_create(&W.tid, &at, watch_main, NULL)) {
		pthread_attr_destroy(&at);
		return cof_error(err, COF_EINTERNAL, "cannot start the wait watcher");
	}
	W.started = 1;
	for (int l = 0; l < 2; l++) {
		pool *p = &PL[l];
		p->fair = l == 1;
		p->per_org = per_org > 0 ? per_org : workers;
		p->max_threads = p->fair ? 4 * workers : workers;
		p->tids = cof_calloc((size_t)p->max_threads, sizeof *p->tids);
		for (int i = 0; i < workers; i++) {
			if (pthread_create(&p->tids[i], &at, work_main, p)) {
				pthread_attr_destroy(&at);
				return cof_error(err, COF_EINTERNAL, "cannot start worker %d of %d",
						 i + 1, workers);
			}
			p->nthreads++;
		}
	}
	pthread_attr_destroy(&at);
	return 0;
}

void http_loop_wake_all(void)
{
	pthread_mutex_lock(&W.mu);
	W.closing = 1;
	pthread_mutex_unlock(&W.mu);
	if (W.wake_fd >= 0)
		poke();
}

void http_loop_stop(void)
{
	for (int l = 0; l < 2; l++) {
		pool *p = &PL[l];
		pthread_mutex_lock(&p->mu);
		p->stop = 1; /* no worker is added after this */
		int n = p->nthreads;
		pthread_cond_broadcast(&p->cv);
		pthread_mutex_unlock(&p->mu);
		for (int i = 0; i < n; i++)
			pthread_join(p->tids[i], NULL);
		free(p->tids);
		p->tids = NULL;
		p->nthreads = 0;
	}
	http_loop_wake_all();
	if (W.started) {
		pthread_mutex_lock(&W.mu);
		W.stop = 1;
		pthread_mutex_unlock(&W.mu);
		poke();
		pthread_join(W.tid, NULL);
		W.started = 0;
	}
	if (W.ep >= 0)
		close(W.ep);
	if (W.wake_fd >= 0)
		close(W.wake_fd);
	W.ep = W.wake_fd = -1;
	free(W.heap);
	W.heap = NULL;
	W.n = W.cap = 0;
}
