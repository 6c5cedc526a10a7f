/*
 * evloops.c — the event-loop threads that serve HTTP: one MHD daemon per
 * loop, in MHD's external epoll mode, each run by a thread of ours, all
 * accepting on one listening socket; and the per-address connection cap
 * they share (docs/design.md, "The HTTP server's threads").
 *
 * Why not MHD's own thread pool (MHD_USE_EPOLL_INTERNAL_THREAD with
 * MHD_OPTION_THREAD_POOL_SIZE): in libmicrohttpd 0.9.75 (and its master),
 * MHD_epoll calls epoll_wait again, with the same timeout, whenever one
 * call returned its full 128 events, before it handles any of them. When
 * exactly 128 connections turned ready at once and nothing else happens,
 * that second call sleeps until the next connection timeout: 128 requests
 * went unanswered for 18 s here (bench-free repro: test_evloop's
 * test_exactly_a_full_batch_of_ready_connections_is_answered). Run from
 * outside, MHD_run waits with a timeout of 0 and the waiting is ours: a
 * poll on the daemon's epoll fd, bounded by MHD_get_timeout.
 *
 * Thread ownership: a daemon is touched only by its loop thread (MHD_run,
 * MHD_quiesce_daemon), except MHD_resume_connection (any thread, through
 * http_resume: in external mode MHD makes no ITC, so nothing of MHD's wakes
 * the loop; http_resume writes the loop's own eventfd) and, once every loop
 * has ended, MHD_stop_daemon.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <netinet/in.h>
#include <unistd.h>
#include "http/http.h"
#include "util/addr.h"

#ifndef WAIT_MAX_MS
#define WAIT_MAX_MS 1000        /* a loop looks at its daemon at least this often (a
				 * build with it raised shows a missed wake as a stall) */
#endif
#define ADDR_BUCKETS 4096       /* the per-address table's buckets */

/* One address's places: connections (or, behind a trusted proxy, requests)
 * under the cap, and connections past it that are only answered 503. */
typedef struct addr_count {
	struct addr_count *next;
	unsigned char ip[16];
	unsigned n, spill;
} addr_count;

/* What a connection holds of the address table (http_conn.place). */
enum { PLACE_NONE, PLACE_COUNTED, PLACE_SPILL, PLACE_PROXY };

/* Ours per connection, in MHD's socket context: its address and place, and
 * the server's own context (http_conn_context). */
typedef struct http_conn {
	void *user;
	unsigned char ip[16];
	int place;
} http_conn;

typedef struct evloop {
	struct http_evloops *all;
	struct MHD_Daemon *d;
	pthread_t tid;
	int wake;                /* eventfd: stop or quiesce asked */
	int started, quiesced;
} evloop;

struct http_evloops {
	evloop *loops;
	unsigned n;
	int listen_fd;
	unsigned per_ip;         /* 0 = no cap */
	unsigned spill_max;      /* connections past their address's cap, in all */
	unsigned nspill;         /* under mu */
	cof_cidr *trusted;       /* --trusted-proxy ranges: not capped by connection */
	size_t ntrusted;
	int quiesce, stop;       /* asked of every loop (atomics) */
	unsigned conns;          /* connections open (atomic): MHD's own count may
				    only be read from the loop thread */
	pthread_mutex_t mu;      /* the address table; quiesced count */
	pthread_cond_t cv;
	unsigned nquiesced;
	addr_count *buckets[ADDR_BUCKETS];
	MHD_NotifyConnectionCallback notify;
	void *notify_cls;
};

/* The address a connection was counted under, reserved by the accept policy
 * and not yet taken by its STARTED notification: MHD sets a connection up on
 * the thread that accepted it, in between, so a reservation still pending at
 * the next accept is one whose connection MHD failed to set up. */
static __thread int pending_set, pending_place;
static __thread unsigned char pending_ip[16];

/* The loops of this process (one cofferd per process), for http_resume. */
static http_evloops *running;

/* ------------------------------------------------------------ per address */

static unsigned addr_hash(const unsigned char ip[16])
{
	uint32_t h = 2166136261u;
	for (int i = 0; i < 16; i++)
		h = (h ^ ip[i]) * 16777619u;
	return h % ADDR_BUCKETS;
}

/* Takes a place for `ip`: PLACE_COUNTED under its cap; past it, when
 * `spill`, PLACE_SPILL while the address and the server have room for
 * connections that are only answered 503; else PLACE_NONE (or no memory for
 * a new address). Under l->mu. */
static int addr_take(http_evloops *l, const unsigned char ip[16], int spill)
{
	addr_count **b = &l->buckets[addr_hash(ip)], *a;

	for (a = *b; a && memcmp(a->ip, ip, 16); a = a->next)
		;
	if (!a) {
		if (!(a = calloc(1, sizeof *a)))
			return PLACE_NONE;
		memcpy(a->ip, ip, 16);
		a->next = *b;
		*b = a;
	}
	if (a->n < l->per_ip) {
		a->n++;
		return PLACE_COUNTED;
	}
	if (spill && a->spill < l->per_ip && l->nspill < l->spill_max) {
		a->spill++;
		l->nspill++;
		return PLACE_SPILL;
	}
	return PLACE_NONE;
}

/* Gives a place of `ip` back; the entry goes once it holds none. Under l->mu. */
static void addr_give(http_evloops *l, const unsigned char ip[16], int place)
{
	addr_count **p = &l->buckets[addr_hash(ip)], *a;

	if (place != PLACE_COUNTED && place != PLACE_SPILL)
		return;
	for (; (a = *p) && memcmp(a->ip, ip, 16); p = &a->next)
		;
	if (!a)
		return;
	if (place == PLACE_COUNTED)
		a->n--;
	else
		a->spill--, l->nspill--;
	if (a->n == 0 && a->spill == 0) {
		*p = a->next;
		free(a);
	}
}

/* MHD's accept policy: a connection is kept when its address has a place,
 * or room past its cap to be told 503; a trusted proxy's connections are
 * counted per request instead (http_client_take). */
static enum MHD_Result accept_policy(void *cls, const struct sockaddr *sa, socklen_t len)
{
	http_evloops *l = cls;
	unsigned char ip[16];
	int place = PLACE_NONE;

	(void)len;
	if (pending_set && pending_place != PLACE_NONE && pending_place != PLACE_PROXY) {
		pthread_mutex_lock(&l->mu);
		addr_give(l, pending_ip, pending_place); /* its connection was never set up */
		pthread_mutex_unlock(&l->mu);
	}
	pending_set = 0;
	if (cof_addr_key(sa, ip)) {
		memset(ip, 0, 16); /* a family without addresses: never capped */
	} else if (cof_cidr_match(l->trusted, l->ntrusted, ip)) {
		place = PLACE_PROXY;
	} else if (l->per_ip) {
		pthread_mutex_lock(&l->mu);
		place = addr_take(l, ip, 1);
		pthread_mutex_unlock(&l->mu);
		if (place == PLACE_NONE)
			return MHD_NO;
	}
	memcpy(pending_ip, ip, 16);
	pending_place = place;
	pending_set = 1;
	return MHD_YES;
}

/* MHD's connection notifications: the reservation becomes the connection's
 * at the start and is given back at the close; the server's own callback
 * sees its own context. */
static void notify(void *cls, struct MHD_Connection *conn, void **socket_context,
		   enum MHD_ConnectionNotificationCode code)
{
	http_evloops *l = cls;
	http_conn *hc = *socket_context;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		hc = cof_calloc(1, sizeof *hc);
		if (pending_set) {
			memcpy(hc->ip, pending_ip, 16);
			hc->place = pending_place;
		}
		pending_set = 0;
		*socket_context = hc;
		__atomic_add_fetch(&l->conns, 1, __ATOMIC_RELAXED);
		if (l->notify)
			l->notify(l->notify_cls, conn, &hc->user, code);
		return;
	}
	if (code != MHD_CONNECTION_NOTIFY_CLOSED || !hc)
		return;
	if (l->notify)
		l->notify(l->notify_cls, conn, &hc->user, code);
	__atomic_sub_fetch(&l->conns, 1, __ATOMIC_RELAXED);
	if (hc->place == PLACE_COUNTED || hc->place == PLACE_SPILL) {
		pthread_mutex_lock(&l->mu);
		addr_give(l, hc->ip, hc->place);
		pthread_mutex_unlock(&l->mu);
	}
	free(hc);
	*socket_context = NULL;
}

static http_conn *conn_of(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return ci ? ci->socket_context : NULL;
}

void *http_conn_context(struct MHD_Connection *conn)
{
	http_conn *hc = conn_of(conn);
	return hc ? hc->user : NULL;
}

int http_conn_spilled(struct MHD_Connection *conn)
{
	http_conn *hc = conn_of(conn);
	return hc && hc->place == PLACE_SPILL;
}

int http_conn_proxied(struct MHD_Connection *conn, unsigned char peer[16])
{
	http_conn *hc = conn_of(conn);
	if (!hc || hc->place != PLACE_PROXY)
		return 0;
	memcpy(peer, hc->ip, 16);
	return 1;
}

int http_client_take(const unsigned char ip[16])
{
	http_evloops *l = __atomic_load_n(&running, __ATOMIC_ACQUIRE);
	int place;

	if (!l || !l->per_ip)
		return 1;
	pthread_mutex_lock(&l->mu);
	place = addr_take(l, ip, 0);
	pthread_mutex_unlock(&l->mu);
	return place == PLACE_COUNTED;
}

void http_client_give(const unsigned char ip[16])
{
	http_evloops *l = __atomic_load_n(&running, __ATOMIC_ACQUIRE);

	if (!l)
		return;
	pthread_mutex_lock(&l->mu);
	addr_give(l, ip, PLACE_COUNTED);
	pthread_mutex_unlock(&l->mu);
}

const cof_cidr *http_trusted_proxies(size_t *n)
{
	http_evloops *l = __atomic_load_n(&running, __ATOMIC_ACQUIRE);
	*n = l ? l->ntrusted : 0;
	return l ? l->trusted : NULL;
}

/* ------------------------------------------------------------ the loops */

/* Stops the loop's daemon accepting (on its own thread, between MHD_run
 * calls: MHD_quiesce_daemon is not safe beside them); once. */
static void quiesce_own(evloop *lp)
{
	http_evloops *l = lp->all;

	if (lp->quiesced)
		return;
	(void)MHD_quiesce_daemon(lp->d); /* the socket is closed once, by us */
	lp->quiesced = 1;
	pthread_mutex_lock(&l->mu);
	l->nquiesced++;
	pthread_cond_broadcast(&l->cv);
	pthread_mutex_unlock(&l->mu);
}

/* A loop's body: waits on its daemon's epoll fd (and its wake fd) for at
 * most what MHD_get_timeout says, then lets MHD handle what is ready. */
static void *loop_main(void *arg)
{
	evloop *lp = arg;
	http_evloops *l = lp->all;
	const union MHD_DaemonInfo *di = MHD_get_daemon_info(lp->d, MHD_DAEMON_INFO_EPOLL_FD);
	struct pollfd p[2] = { { di ? di->epoll_fd : -1, POLLIN, 0 }, { lp->wake, POLLIN, 0 } };

	while (!__atomic_load_n(&l->stop, __ATOMIC_ACQUIRE)) {
		MHD_UNSIGNED_LONG_LONG to = WAIT_MAX_MS;
		if (MHD_get_timeout(lp->d, &to) != MHD_YES || to > WAIT_MAX_MS)
			to = WAIT_MAX_MS;
		/* MHD has work now (a body being sent, a resumed connection):
		 * straight on, as its own thread would; the wake fd is read at
		 * the next wait */
		if (to > 0) {
			if (poll(p, 2, (int)to) < 0 && errno != EINTR)
				break;
			if (p[1].revents) {
				uint64_t v;
				(void)!read(lp->wake, &v, sizeof v);
			}
		}
		if (__atomic_load_n(&l->quiesce, __ATOMIC_ACQUIRE))
			quiesce_own(lp);
		MHD_run(lp->d);
	}
	quiesce_own(lp); /* a loop that ended does not hold up a quiesce */
	return NULL;
}

static void wake(evloop *lp)
{
	uint64_t one = 1;
	(void)!write(lp->wake, &one, sizeof one);
}

void http_resume(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_DAEMON);
	struct MHD_Daemon *d = ci ? ci->daemon : NULL; /* before: conn may go */
	http_evloops *l = __atomic_load_n(&running, __ATOMIC_ACQUIRE);

	MHD_resume_connection(conn);
	for (unsigned i = 0; l && i < l->n; i++)
		if (l->loops[i].d == d) {
			wake(&l->loops[i]);
			break;
		}
}

void http_upgrade_close(struct MHD_UpgradeResponseHandle *urh, struct MHD_Daemon *d)
{
	http_evloops *l = __atomic_load_n(&running, __ATOMIC_ACQUIRE);

	(void)MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
	for (unsigned i = 0; d && l && i < l->n; i++)
		if (l->loops[i].d == d) {
			wake(&l->loops[i]);
			break;
		}
}

/* Stops what was started of `l` and frees it; the listening socket is closed. */
static void teardown(http_evloops *l)
{
	__atomic_store_n(&l->stop, 1, __ATOMIC_RELEASE);
	__atomic_compare_exchange_n(&running, &l, NULL, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	for (unsigned i = 0; i < l->n; i++)
		if (l->loops[i].started) {
			wake(&l->loops[i]);
			pthread_join(l->loops[i].tid, NULL);
		}
	for (unsigned i = 0; i < l->n; i++) {
		evloop *lp = &l->loops[i];
		if (lp->d) {
			if (!lp->quiesced)
				(void)MHD_quiesce_daemon(lp->d); /* its thread has ended */
			MHD_stop_daemon(lp->d);
		}
		if (lp->wake >= 0)
			close(lp->wake);
	}
	if (l->listen_fd >= 0)
		close(l->listen_fd);
	for (unsigned b = 0; b < ADDR_BUCKETS; b++)
		while (l->buckets[b]) {
			addr_count *a = l->buckets[b];
			l->buckets[b] = a->next;
			free(a);
		}
	pthread_mutex_destroy(&l->mu);
	pthread_cond_destroy(&l->cv);
	free(l->trusted);
	free(l->loops);
	free(l);
}

http_evloops *http_evloops_start(const http_evloops_cfg *c, cof_err *err)
{
	http_evloops *l = calloc(1, sizeof *l);
	/* upgrade: the WebSockets of /socket.io/ (socketio.c) */
	unsigned flags = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_ALLOW_UPGRADE |
			 MHD_USE_ERROR_LOG;
	pthread_attr_t at;

	if (!l || !(l->loops = calloc(c->loops ? c->loops : 1, sizeof *l->loops))) {
		free(l);
		close(c->listen_fd);
		cof_error(err, COF_EINTERNAL, "out of memory");
		return NULL;
	}
	l->n = c->loops ? c->loops : 1;
	l->listen_fd = c->listen_fd;
	l->per_ip = c->max_conns_per_ip;
	/* connections told 503 past their address's cap take at most an
	 * eighth of the server's places, so addresses at their caps still
	 * leave room for others (docs/design.md) */
	l->spill_max = c->max_conns / 8 ? c->max_conns / 8 : 1;
	if (c->ntrusted) {
		l->trusted = cof_malloc(c->ntrusted * sizeof *l->trusted);
		memcpy(l->trusted, c->trusted, c->ntrusted * sizeof *l->trusted);
		l->ntrusted = c->ntrusted;
	}
	l->notify = c->notify;
	l->notify_cls = c->notify_cls;
	pthread_mutex_init(&l->mu, NULL);
	pthread_cond_init(&l->cv, NULL);
	for (unsigned i = 0; i < l->n; i++)
		l->loops[i].wake = -1;
	for (unsigned i = 0; i < l->n; i++) {
		evloop *lp = &l->loops[i];
		/* the total split as MHD's own pool splits it: a full loop stops
		 * accepting (its daemon takes the socket out of its epoll set) */
		unsigned limit = c->max_conns / l->n + (i < c->max_conns % l->n ? 1 : 0);
		lp->all = l;
		lp->wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		lp->d = lp->wake < 0 ? NULL : MHD_start_daemon(
			flags, 0, accept_policy, l, c->access, c->access_cls,
			/* first: MHD logs through whatever logger is set when it
			 * reads each later option */
			MHD_OPTION_EXTERNAL_LOGGER, http_log_mhd, NULL,
			MHD_OPTION_LISTEN_SOCKET, (MHD_socket)c->listen_fd,
			MHD_OPTION_CONNECTION_LIMIT, limit ? limit : 1,
			MHD_OPTION_CONNECTION_TIMEOUT, c->conn_timeout,
			MHD_OPTION_CONNECTION_MEMORY_LIMIT, c->conn_memory,
			MHD_OPTION_NOTIFY_CONNECTION, notify, l,
			MHD_OPTION_NOTIFY_COMPLETED, c->completed, c->completed_cls,
			MHD_OPTION_UNESCAPE_CALLBACK, c->unescape, NULL,
			/* SIGPIPE is ignored process-wide (server.c): without
			 * this an external-mode MHD never uses sendfile */
			MHD_OPTION_SIGPIPE_HANDLED_BY_APP, (int)1,
			MHD_OPTION_END);
		if (!lp->d) {
			teardown(l);
			cof_error(err, COF_EINTERNAL, "cannot start event loop %u of %u", i + 1, l->n);
			return NULL;
		}
	}
	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, c->thread_stack);
	for (unsigned i = 0; i < l->n; i++) {
		if (pthread_create(&l->loops[i].tid, &at, loop_main, &l->loops[i]) != 0) {
			pthread_attr_destroy(&at);
			teardown(l);
			cof_error(err, COF_EINTERNAL, "cannot start event-loop thread %u", i + 1);
			return NULL;
		}
		l->loops[i].started = 1;
	}
	pthread_attr_destroy(&at);
	__atomic_store_n(&running, l, __ATOMIC_RELEASE);
	return l;
}

void http_evloops_quiesce(http_evloops *l)
{
	if (l->listen_fd < 0)
		return;
	__atomic_store_n(&l->quiesce, 1, __ATOMIC_RELEASE);
	for (unsigned i = 0; i < l->n; i++)
		wake(&l->loops[i]);
	pthread_mutex_lock(&l->mu);
	while (l->nquiesced < l->n)
		pthread_cond_wait(&l->cv, &l->mu);
	pthread_mutex_unlock(&l->mu);
	close(l->listen_fd); /* no daemon accepts on it any more */
	l->listen_fd = -1;
}

unsigned http_evloops_connections(http_evloops *l)
{
	return __atomic_load_n(&l->conns, __ATOMIC_RELAXED);
}

void http_evloops_stop(http_evloops *l)
{
	if (l)
		teardown(l);
}
