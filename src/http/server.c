/*
 * server.c — cofferd's main: flags, the listening socket, MHD, the background
 * gc thread, and a graceful stop on SIGTERM/SIGINT.
 *
 * Threads: MHD runs one thread per connection (a long-poll on /changes holds
 * its thread while it waits); one more thread runs cof_gc every interval; the
 * calling thread waits for a signal with sigwait, so no handler runs in
 * signal context.
 */
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "http/http.h"
#include "http/server.h"

#define COFFERD_VERSION "0.1.0"
#define DRAIN_SECONDS 30        /* requests under way get this long at stop */
#define CONN_LIMIT 512
#define CONN_TIMEOUT 300        /* seconds a connection may stay idle */
/* Per connection: URL, headers, read buffer. MHD clears it for every request,
 * so it is kept small: 64 KiB holds a 16 KiB URL and the largest headers. */
#define CONN_MEMORY (64 * 1024)
#define THREAD_STACK (2 << 20)

typedef struct server_opts {
	const char *data;
	char host[256];
	char port[8];
	int64_t gc_grace;
	int64_t gc_interval;
	int64_t history;
	const char *scratch;     /* NULL = DATA/scratch */
	int64_t turn_grace;      /* 0 = 60 s */
	int scratch_walk;        /* --scratch-mode walk */
	int64_t relay_grace;
	int64_t relay_op_wait;
	int turn_rlimits;        /* --turn-limits rlimit */
} server_opts;

/* The background gc: runs cof_gc every `interval` seconds until stopped. */
typedef struct gc_thread {
	cof_store *st;
	int64_t interval;
	int stop;
	int started;
	pthread_t tid;
	pthread_mutex_t mu;
	pthread_cond_t cv;
} gc_thread;

static void usage(FILE *to)
{
	fputs("usage: cofferd [--data DIR] [--listen HOST:PORT] [--gc-grace SECONDS]\n"
	      "               [--gc-interval SECONDS] [--history SECONDS] [--scratch DIR]\n"
	      "               [--scratch-mode kernel|walk] [--turn-limits cgroup|rlimit]\n"
	      "               [--turn-grace SECONDS] [--relay-grace SECONDS]\n"
	      "               [--relay-op-wait SECONDS] [--help] [--version]\n"
	      "  --data DIR             data directory (default ./data)\n"
	      "  --listen HOST:PORT     address to serve (default 127.0.0.1:7700;\n"
	      "                         port 0 picks a free port)\n"
	      "  --gc-grace SECONDS     keep unreferenced content this long (default 86400)\n"
	      "  --gc-interval SECONDS  run the garbage collector this often\n"
	      "                         (default 3600; 0 = never)\n"
	      "  --history SECONDS      keep the changes feed at least this long\n"
	      "                         (default 604800, 7 days)\n"
	      "  --scratch DIR          turn workspaces (default DATA/scratch)\n"
	      "  --scratch-mode MODE    kernel (a tmpfs per workspace, the default as\n"
	      "                         root) or walk (a measuring loop)\n"
	      "  --turn-limits WAY      cgroup (memory and processes by cgroup where one\n"
	      "                         can be made, the default) or rlimit\n"
	      "  --turn-grace SECONDS   a turn is dropped this long after its deadline\n"
	      "                         (default 60)\n"
	      "  --relay-grace SECONDS  a paused relay session ends when its client is\n"
	      "                         not back within this time (default 600)\n"
	      "  --relay-op-wait SECONDS  how long a relayed op waits for the user's\n"
	      "                         side before 503 (default 120)\n", to);
}

/* Parses a non-negative decimal number of seconds. 0, or -1 when malformed. */
static int parse_seconds(const char *s, int64_t *out)
{
	char *end;
	long long v;

	if (s[0] < '0' || s[0] > '9')
		return -1;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (*end != '\0' || errno == ERANGE || v > 100LL * 365 * 86400)
		return -1;
	*out = v;
	return 0;
}

/* Splits "HOST:PORT" or "[V6]:PORT" into o->host and o->port. 0 or -1. */
static int parse_listen(const char *s, server_opts *o)
{
	const char *colon, *h = s;
	size_t hlen;

	if (s[0] == '[') {
		const char *rb = strchr(s, ']');
		if (rb == NULL || rb[1] != ':')
			return -1;
		h = s + 1;
		hlen = (size_t)(rb - h);
		colon = rb + 1;
	} else {
		colon = strrchr(s, ':');
		if (colon == NULL)
			return -1;
		hlen = (size_t)(colon - s);
	}
	const char *p = colon + 1;
	size_t plen = strlen(p);
	if (hlen == 0 || hlen >= sizeof(o->host) || plen == 0 || plen > 5 ||
	    strspn(p, "0123456789") != plen || atoi(p) > 65535)
		return -1;
	memcpy(o->host, h, hlen);
	o->host[hlen] = '\0';
	memcpy(o->port, p, plen + 1);
	return 0;
}

/* Reads the flags. Returns -1 to go on, else the exit code (0 help/version, 2). */
static int parse_args(int argc, char **argv, server_opts *o)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		int takes = !strcmp(a, "--data") || !strcmp(a, "--listen") ||
			    !strcmp(a, "--gc-grace") || !strcmp(a, "--gc-interval") ||
			    !strcmp(a, "--history") || !strcmp(a, "--scratch") ||
			    !strcmp(a, "--scratch-mode") || !strcmp(a, "--turn-grace") ||
			    !strcmp(a, "--turn-limits") ||
			    !strcmp(a, "--relay-grace") || !strcmp(a, "--relay-op-wait");

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 0;
		}
		if (!strcmp(a, "--version")) {
			printf("cofferd %s\n", COFFERD_VERSION);
			return 0;
		}
		if (!takes) {
			fprintf(stderr, "cofferd: unknown option '%s'\n", a);
			usage(stderr);
			return 2;
		}
		if (v == NULL) {
			fprintf(stderr, "cofferd: option '%s' needs a value\n", a);
			return 2;
		}
		i++;
		if (!strcmp(a, "--data") && *v) {
			o->data = v;
		} else if (!strcmp(a, "--listen")) {
			if (parse_listen(v, o) == 0)
				continue;
			fprintf(stderr, "cofferd: --listen wants HOST:PORT, got '%s'\n", v);
			return 2;
		} else if (!strcmp(a, "--gc-grace") && parse_seconds(v, &o->gc_grace) == 0) {
			continue;
		} else if (!strcmp(a, "--gc-interval") &&
			   parse_seconds(v, &o->gc_interval) == 0) {
			continue;
		} else if (!strcmp(a, "--scratch") && *v) {
			o->scratch = v;
		} else if (!strcmp(a, "--scratch-mode") &&
			   (!strcmp(v, "kernel") || !strcmp(v, "walk"))) {
			o->scratch_walk = !strcmp(v, "walk");
		} else if (!strcmp(a, "--turn-limits") &&
			   (!strcmp(v, "cgroup") || !strcmp(v, "rlimit"))) {
			o->turn_rlimits = !strcmp(v, "rlimit");
		} else if (!strcmp(a, "--turn-grace") && parse_seconds(v, &o->turn_grace) == 0 &&
			   o->turn_grace > 0) {
			continue;
		} else if (!strcmp(a, "--history") && parse_seconds(v, &o->history) == 0 &&
			   o->history > 0) {
			continue;
		} else if (!strcmp(a, "--relay-grace") && parse_seconds(v, &o->relay_grace) == 0 &&
			   o->relay_grace > 0) {
			continue;
		} else if (!strcmp(a, "--relay-op-wait") &&
			   parse_seconds(v, &o->relay_op_wait) == 0 && o->relay_op_wait > 0) {
			continue;
		} else {
			fprintf(stderr, "cofferd: bad value '%s' for %s\n", v, a);
			return 2;
		}
	}
	return -1;
}

/* Binds and listens on o->host:o->port. Returns the socket, or -1 (printed). */
static int listen_socket(const server_opts *o, unsigned *port)
{
	struct addrinfo hints = { 0 }, *res = NULL, *ai;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int fd = -1, one = 1, e = 0, rc;

	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	rc = getaddrinfo(o->host, o->port, &hints, &res);
	if (rc != 0) {
		fprintf(stderr, "cofferd: cannot resolve '%s': %s\n", o->host, gai_strerror(rc));
		return -1;
	}
	for (ai = res; ai != NULL && fd < 0; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0) {
			e = errno;
			continue;
		}
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 511) == 0)
			break;
		e = errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		fprintf(stderr, "cofferd: cannot listen on %s:%s: %s\n", o->host, o->port,
			strerror(e));
		return -1;
	}
	*port = 0;
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
		*port = ntohs(ss.ss_family == AF_INET6
				      ? ((struct sockaddr_in6 *)&ss)->sin6_port
				      : ((struct sockaddr_in *)&ss)->sin_port);
	return fd;
}

/* Logs a gc sweep's answer when it deleted or pruned anything. */
static void gc_log(json_t *out)
{
	char *s;

	if (json_integer_value(json_object_get(out, "blobsDeleted")) == 0 &&
	    json_integer_value(json_object_get(out, "historyPruned")) == 0)
		return;
	s = json_dumps(out, JSON_COMPACT);
	fprintf(stderr, "cofferd: gc: %s\n", s ? s : "done");
	free(s);
}

/* The gc thread's body: sleeps `interval`, runs cof_gc, logs what it did. */
static void *gc_main(void *arg)
{
	gc_thread *g = arg;

	pthread_mutex_lock(&g->mu);
	while (!g->stop) {
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += g->interval;
		while (!g->stop && pthread_cond_timedwait(&g->cv, &g->mu, &until) != ETIMEDOUT)
			;
		if (g->stop)
			break;
		pthread_mutex_unlock(&g->mu);
		cof_err err = { 0 };
		json_t *out = NULL;
		if (cof_gc(g->st, &out, &err) == 0) {
			gc_log(out);
		} else {
			fprintf(stderr, "cofferd: gc failed: %s\n", err.msg);
		}
		json_decref(out);
		cof_err_clear(&err);
		pthread_mutex_lock(&g->mu);
	}
	pthread_mutex_unlock(&g->mu);
	return NULL;
}

/* Starts the gc thread unless interval is 0. 0, or -1 (printed). */
static int gc_start(gc_thread *g, cof_store *st, int64_t interval)
{
	g->st = st;
	g->interval = interval;
	pthread_mutex_init(&g->mu, NULL);
	pthread_cond_init(&g->cv, NULL);
	if (interval <= 0)
		return 0;
	if (pthread_create(&g->tid, NULL, gc_main, g) != 0) {
		fprintf(stderr, "cofferd: cannot start the gc thread\n");
		return -1;
	}
	g->started = 1;
	return 0;
}

/* Stops the gc thread, waiting for a sweep under way to end. */
static void gc_stop(gc_thread *g)
{
	pthread_mutex_lock(&g->mu);
	g->stop = 1;
	pthread_cond_signal(&g->cv);
	pthread_mutex_unlock(&g->mu);
	if (g->started)
		pthread_join(g->tid, NULL);
	pthread_mutex_destroy(&g->mu);
	pthread_cond_destroy(&g->cv);
}

/* Starts MHD on the bound socket `fd` (MHD owns it from here). */
static struct MHD_Daemon *mhd_start(http_server *srv, int fd)
{
	unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
			 MHD_USE_POLL | MHD_USE_ITC | MHD_USE_ERROR_LOG;

	return MHD_start_daemon(
		flags, 0, NULL, NULL, http_access, srv,
		MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd,
		MHD_OPTION_CONNECTION_LIMIT, (unsigned)CONN_LIMIT,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)CONN_TIMEOUT,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONN_MEMORY,
		MHD_OPTION_THREAD_STACK_SIZE, (size_t)THREAD_STACK,
		MHD_OPTION_NOTIFY_COMPLETED, http_completed, srv,
		MHD_OPTION_UNESCAPE_CALLBACK, http_unescape_none, NULL,
		MHD_OPTION_END);
}

/* Graceful stop: no new connections, long-polls woken, requests under way
 * given DRAIN_SECONDS (a second signal cuts it short), then MHD stopped. */
static void mhd_drain(http_server *srv, const sigset_t *sigs)
{
	struct timespec tick = { 0, 50 * 1000 * 1000 };
	MHD_socket lfd;

	__atomic_store_n(&srv->stopping, 1, __ATOMIC_SEQ_CST);
	cof_relay_shutdown(srv->relay);
	lfd = MHD_quiesce_daemon(srv->mhd);
	if (lfd != MHD_INVALID_SOCKET)
		close(lfd);
	for (int i = 0; i < DRAIN_SECONDS * 20; i++) {
		cof_changes_wake_all(srv->st);
		if (__atomic_load_n(&srv->in_flight, __ATOMIC_SEQ_CST) <= 0)
			break;
		if (sigtimedwait(sigs, NULL, &tick) > 0) {
			fprintf(stderr, "cofferd: second signal, stopping now\n");
			break;
		}
	}
	MHD_stop_daemon(srv->mhd);
	srv->mhd = NULL;
}

/* Opens the store and prints the admin key when it is new. 0 or -1. */
static int open_store(const server_opts *o, cof_store **st)
{
	cof_store_opts so = { 0 };
	cof_err err = { 0 };

	so.gc_grace_seconds = o->gc_grace < 0 ? 0 : (o->gc_grace == 0 ? 1 : o->gc_grace);
	so.history_seconds = o->history; /* 0 = the default, 7 days */
	if (cof_store_open(o->data, &so, st, &err)) {
		fprintf(stderr, "cofferd: cannot open data dir '%s': %s\n", o->data, err.msg);
		cof_err_clear(&err);
		return -1;
	}
	if (cof_store_admin_key_is_new(*st))
		printf("cofferd admin key: %s (saved in %s/admin.key)\n",
		       cof_store_admin_key(*st), o->data);
	return 0;
}

/* Prepares turns (scratch root, seccomp filter, sweeper) and says in the
 * log how disk limits are kept. 0 or -1. */
static int open_turns(const server_opts *o, http_server *srv)
{
	cof_turns_opts to = {o->scratch, o->data, o->turn_grace, o->scratch_walk,
			     o->turn_rlimits};
	cof_err err = {0};
	const char *how = NULL;

	if (cof_turns_open(srv->st, &to, &srv->turns, &how, &err)) {
		fprintf(stderr, "cofferd: cannot prepare turns: %s\n", err.msg);
		cof_err_clear(&err);
		return -1;
	}
	fprintf(stderr, "cofferd: turns: %s\n", how);
	return 0;
}

int cofferd_main(int argc, char **argv)
{
	server_opts o = { "./data", "127.0.0.1", "7700", -1, 3600, 0, NULL, 0, 0, 600, 120, 0 };
	http_server srv;
	gc_thread gc;
	sigset_t sigs;
	int rc, fd, sig = 0;

	if ((rc = parse_args(argc, argv, &o)) >= 0)
		return rc;
	memset(&srv, 0, sizeof(srv));
	memset(&gc, 0, sizeof(gc));
	/* before any thread exists, so every thread inherits the mask; the
	 * dispositions are reset because sigwait never sees an ignored signal
	 * (a shell starts background jobs with SIGINT ignored) */
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (open_store(&o, &srv.st))
		return 1;
	cof_relay_opts ro = { .grace_seconds = o.relay_grace,
			      .op_wait_ms = o.relay_op_wait * 1000 };
	cof_err rerr = { 0 };
	if (open_turns(&o, &srv)) {
		cof_store_close(srv.st);
		return 1;
	}
	if (cof_relay_open(srv.st, &ro, &srv.relay, &rerr)) {
		fprintf(stderr, "cofferd: %s\n", rerr.msg);
		cof_turns_close(srv.turns);
		cof_store_close(srv.st);
		return 1;
	}
	fd = listen_socket(&o, &srv.port);
	snprintf(srv.host, sizeof(srv.host), strchr(o.host, ':') ? "[%s]" : "%s", o.host);
	if (fd < 0 || (srv.mhd = mhd_start(&srv, fd)) == NULL) {
		if (fd >= 0) {
			fprintf(stderr, "cofferd: cannot start the HTTP server\n");
			close(fd);
		}
		cof_turns_close(srv.turns);
		cof_relay_close(srv.relay);
		cof_store_close(srv.st);
		return 1;
	}
	if (gc_start(&gc, srv.st, o.gc_interval)) {
		MHD_stop_daemon(srv.mhd);
		cof_turns_close(srv.turns);
		cof_relay_close(srv.relay);
		cof_store_close(srv.st);
		return 1;
	}
	printf("cofferd listening on http://%s:%u\n", srv.host, srv.port);
	fflush(stdout);

	while (sigwait(&sigs, &sig) != 0)
		;
	fprintf(stderr, "cofferd: %s, stopping\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
	cof_turns_stop(srv.turns); /* calls under way end now, not after the drain */
	mhd_drain(&srv, &sigs);
	cof_turns_close(srv.turns);
	gc_stop(&gc);
	cof_relay_close(srv.relay);
	cof_store_close(srv.st);
	fprintf(stderr, "cofferd: stopped\n");
	return 0;
}
