/*
 * server.c — cofferd's main: flags, the listening socket, MHD, the background
 * gc thread, and a graceful stop on SIGTERM/SIGINT.
 *
 * Threads: --threads event-loop threads (evloops.c: one MHD daemon each,
 * epoll, one per core by default) read requests and write answers for every connection; a
 * handler that may block (anything but a GET) runs on one of --workers
 * worker threads, and a long-poll or event stream with nothing to say is
 * suspended on a notification fd by loop.c's watcher thread, so no thread
 * is held by a waiting request. One more thread runs cof_gc every interval;
 * one more closes connections whose request head is late (head_guard); the
 * calling thread waits for a signal with sigwait, so no handler runs in
 * signal context.
 *
 * Connections are bounded three ways, so that idle or slow clients cannot
 * lock others out: at most --max-conns in all, at most --max-conns-per-ip
 * from one address (evloops.c refuses the next at accept), and a request head
 * (request line and headers) must be complete within --head-timeout of the
 * accept, or of the end of the previous answer on a kept-alive connection.
 * MHD's own idle timeout resets on every byte, so a client trickling one
 * byte a second would never meet it; the head deadline does not reset. Once
 * a head is in, the deadline is off: a long-poll, an event stream or a long
 * upload runs under the idle timeout alone.
 */
#include <errno.h>
#include <malloc.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "http/http.h"
#include "hooks/hooks.h"
#include "http/server.h"
#include "agent/agent.h"
#include "store/store.h"

#define DRAIN_SECONDS 30        /* requests under way get this long at stop */
#define CONN_LIMIT 16384        /* --max-conns, unless the open-file limit is lower */
#define FD_RESERVE 512          /* descriptors kept for files, the store, turns */
#define WORKERS 32              /* --workers */
#define CONN_PER_IP 128         /* --max-conns-per-ip */
#define HEAD_TIMEOUT 30         /* --head-timeout, seconds */
#define CONN_TIMEOUT 300        /* seconds a connection may stay idle */
#define COUNT_MAX 65536         /* the largest connection count a flag takes */
/* Per connection: URL, headers, read buffer. MHD 0.9.75 clears all of it
 * after every request (a memset that was 8% of a 4 KiB GET's CPU at 64 KiB),
 * so it is sized to the longest request the API allows: a 4096-byte path
 * percent-encoded (12 KiB of URL) with 16 KiB of other headers (test_badinput);
 * a longer head is 431. Uploads measured as fast as with 64 KiB. One page over
 * 32 KiB: MHD mallocs a pool of 32 KiB or less, and malloc's chunk header
 * makes every idle connection's pool resident (4.4 KiB each, against 0.6 KiB
 * for a pool MHD maps, whose pages stay untouched until used). */
#define CONN_MEMORY (36 * 1024)
#define TRUSTED_MAX 64          /* --trusted-proxy ranges */
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
	int64_t relay_sessions;  /* 0 = 1000 */
	int64_t relay_per_org;   /* 0 = 100 */
	int64_t max_conns;
	int64_t max_conns_per_ip;
	int64_t head_timeout;
	int64_t threads;         /* 0 = one per core */
	int64_t workers;
	int max_conns_given;
	int turn_rlimits;        /* --turn-limits rlimit */
	const char *meta;        /* --meta URL; NULL = DATA/meta.db */
	const char *blobs;       /* --blobs URL; NULL = DATA/blobs */
	const char *log;         /* --log FILE: the request log; NULL = stderr */
	const char *node;        /* --node NAME: this node among those of one dataset */
	const char *advertise;   /* --advertise URL: where other nodes reach it */
	int64_t rate_limit;      /* --rate-limit N a second per key; 0 = none */
	int64_t rate_limit_org;  /* --rate-limit-org N a second per organization; 0 = rate_limit */
	char mhost[256];         /* --metrics-listen HOST:PORT; "" = none */
	char mport[8];
	int64_t forward_max;     /* --forward-max N; 0 = 64 */
	int64_t content_cache;   /* --content-cache SIZE in bytes; 0 = none */
	int64_t calls_per_org;   /* --calls-per-org N; 0 = --workers */
	int64_t keys_per_org;    /* --keys-per-org N; 0 = COF_KEYS_PER_ORG */
	cof_cidr trusted[TRUSTED_MAX]; /* --trusted-proxy ranges */
	size_t ntrusted;
	const char *transcriber; /* --transcriber CMD; NULL = PocketSphinx */
	char s3host[256];        /* --s3-listen HOST:PORT; "" = none */
	char s3port[8];
	int webhook_allow_private; /* --webhook-allow-private */
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

/* One connection whose request head is awaited. */
typedef struct head_watch {
	struct head_watch *prev, *next;
	int fd;
	int64_t deadline;        /* cof_mono_ms(); 0 while a request is answered;
				    atomic: head_arm sets it outside the mutex */
} head_watch;

/* The head deadline of every connection: MHD's connection notifications add
 * and remove them, the access and completion hooks disarm and re-arm them,
 * and a thread shuts down the socket of each one past its deadline (MHD's
 * connection thread then reads the end and closes the connection). A watch
 * leaves the list before MHD closes the fd, so a shut-down never reaches a
 * reused descriptor. */
typedef struct head_guard {
	http_server *srv;
	int64_t timeout_ms;
	head_watch *list;
	int64_t cut;             /* connections closed for a late head */
	int stop, started;
	pthread_t tid;
	pthread_mutex_t mu;
	pthread_cond_t cv;
} head_guard;

static void usage(FILE *to)
{
	fputs("usage: cofferd [--data DIR] [--meta URL] [--blobs URL] [--listen HOST:PORT]\n"
	      "               [--gc-grace SECONDS] [--node NAME] [--advertise URL]\n"
	      "               [--gc-interval SECONDS] [--history SECONDS] [--scratch DIR]\n"
	      "               [--scratch-mode kernel|walk] [--turn-limits cgroup|rlimit]\n"
	      "               [--turn-grace SECONDS] [--relay-grace SECONDS]\n"
	      "               [--relay-op-wait SECONDS] [--relay-sessions N]\n"
	      "               [--relay-sessions-per-org N] [--max-conns N]\n"
	      "               [--max-conns-per-ip N] [--trusted-proxy LIST]\n"
	      "               [--head-timeout SECONDS] [--log FILE]\n"
	      "               [--rate-limit N] [--rate-limit-org N]\n"
	      "               [--keys-per-org N] [--metrics-listen HOST:PORT]\n"
	      "               [--config FILE] [--threads N] [--workers N]\n"
	      "               [--calls-per-org N] [--forward-max N] [--content-cache SIZE]\n"
	      "               [--transcriber CMD] [--s3-listen HOST:PORT]\n"
	      "               [--webhook-allow-private] [--help] [--version]\n"
	      "  --config FILE          read flags from FILE, one 'flag = value' a line\n"
	      "                         (flags given here win)\n"
	      "  --data DIR             data directory (default ./data)\n"
	      "  --meta URL             the metadata store: a SQLite file (PATH or\n"
	      "                         sqlite:PATH) or postgres://... (default\n"
	      "                         DATA/meta.db)\n"
	      "  --blobs URL            the blob store: a directory or s3://BUCKET/PREFIX\n"
	      "                         (default DATA: DATA/blobs)\n"
	      "  --log FILE             the request log, one JSON line a request\n"
	      "                         (default stderr; SIGHUP reopens FILE; none:\n"
	      "                         no request log)\n"
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
	      "  --webhook-allow-private  let webhooks reach loopback, private and\n"
	      "                         link-local addresses (default: refused)\n"
	      "  --node NAME            this node's name among the nodes of one dataset\n"
	      "                         (default: none; relay sessions and turns it holds)\n"
	      "  --advertise URL        where the other nodes reach this one (default\n"
	      "                         http://LISTEN-HOST:PORT)\n"
	      "  --turn-grace SECONDS   a turn is dropped this long after its deadline\n"
	      "                         (default 60)\n"
	      "  --relay-grace SECONDS  a paused relay session ends when its client is\n"
	      "                         not back within this time (default 600)\n"
	      "  --relay-op-wait SECONDS  how long a relayed op waits for the user's\n"
	      "                         side before 503 (default 120)\n"
	      "  --relay-sessions N     relay sessions in memory, every organization\n"
	      "                         (default 1000)\n"
	      "  --relay-sessions-per-org N  relay sessions not ended, per organization\n"
	      "                         (default 100)\n"
	      "  --max-conns N          connections at once (default 16384, less when the\n"
	      "                         open-file limit is lower)\n"
	      "  --max-conns-per-ip N   connections at once from one address (default 128;\n"
	      "                         past it, as many more are answered 503 with\n"
	      "                         Retry-After, within an eighth of --max-conns)\n"
	      "  --trusted-proxy LIST   addresses or ADDR/BITS ranges of reverse proxies\n"
	      "                         (comma-separated, repeatable, at most 64): their\n"
	      "                         requests count per X-Forwarded-For client\n"
	      "  --head-timeout SECONDS a request's line and headers must be in this long\n"
	      "                         after the connect or the previous answer\n"
	      "                         (default 30)\n"
	      "  --rate-limit N         requests a second per key, a burst of 2N\n"
	      "                         (default: none; past it 429 with Retry-After)\n"
	      "  --rate-limit-org N     requests a second per organization, all its keys\n"
	      "                         together, a burst of 2N (default: --rate-limit's)\n"
	      "  --keys-per-org N       live keys one organization may hold (default\n"
	      "                         1000; past it 409)\n"
	      "  --metrics-listen HOST:PORT  serve GET /metrics there without a key\n"
	      "                         (default: none; /metrics on --listen needs a\n"
	      "                         key of the admin's organization)\n"
	      "  --threads N            event-loop threads (default one per core)\n"
	      "  --workers N            threads for handlers that may block (default 32):\n"
	      "                         N for writes, N more for turn calls and relay ops\n"
	      "                         (those grow to 4N, taken in turn by organization)\n"
	      "  --calls-per-org N      turn calls and relay ops of one organization\n"
	      "                         running at once (default: --workers); the next\n"
	      "                         wait their organization's turn\n"
	      "  --forward-max N        requests carried to other nodes at once (default\n"
	      "                         64; past it 503 unavailable)\n"
	      "  --content-cache SIZE   small contents kept in memory, in Docker's size\n"
	      "                         form (default 64m; 0 = none)\n"
	      "  --transcriber CMD      transcribe audio attached to prompts with CMD (run\n"
	      "                         by /bin/sh: a 16 kHz mono WAV on stdin, the words\n"
	      "                         on stdout; at most 300 s and 256 KiB) instead of\n"
	      "                         PocketSphinx\n"
	      "  --s3-listen HOST:PORT  also serve the volumes through the S3 API there\n"
	      "                         (SigV4 by a key's id with the key as secret;\n"
	      "                         default: none; docs/s3.md)\n", to);
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

/* Parses a count of 1 to `max`. 0, or -1 when malformed or out of range. */
static int parse_count(const char *s, int64_t max, int64_t *out)
{
	int64_t v;

	if (parse_seconds(s, &v) || v < 1 || v > max)
		return -1;
	*out = v;
	return 0;
}

/* Splits "HOST:PORT" or "[V6]:PORT" into o->host and o->port. 0 or -1. */
/* --trusted-proxy LIST: adds each range of the comma-separated list. 0, or
 * -1 after saying on stderr which entry is wrong (or that there are more
 * than TRUSTED_MAX). */
static int parse_trusted(const char *v, server_opts *o)
{
	char one[128];

	for (const char *p = v;; ) {
		const char *c = strchr(p, ',');
		size_t n = c ? (size_t)(c - p) : strlen(p);
		while (n && (*p == ' ' || *p == '\t'))
			p++, n--;
		while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
			n--;
		if (n == 0 || n >= sizeof one) {
			fprintf(stderr, "cofferd: --trusted-proxy '%s': an empty or over-long "
				"entry (each is ADDR or ADDR/BITS)\n", v);
			return -1;
		}
		memcpy(one, p, n);
		one[n] = '\0';
		if (o->ntrusted == TRUSTED_MAX) {
			fprintf(stderr, "cofferd: --trusted-proxy: more than %d ranges\n",
				TRUSTED_MAX);
			return -1;
		}
		if (cof_cidr_parse(one, &o->trusted[o->ntrusted])) {
			fprintf(stderr, "cofferd: --trusted-proxy '%s' is not an address or "
				"ADDR/BITS (IPv4 /0-32, IPv6 /0-128)\n", one);
			return -1;
		}
		o->ntrusted++;
		if (!c)
			return 0;
		p = c + 1;
	}
}

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
			    !strcmp(a, "--meta") || !strcmp(a, "--blobs") || !strcmp(a, "--log") ||
			    !strcmp(a, "--node") || !strcmp(a, "--advertise") ||
			    !strcmp(a, "--gc-grace") || !strcmp(a, "--gc-interval") ||
			    !strcmp(a, "--history") || !strcmp(a, "--scratch") ||
			    !strcmp(a, "--scratch-mode") || !strcmp(a, "--turn-grace") ||
			    !strcmp(a, "--turn-limits") ||
			    !strcmp(a, "--relay-grace") || !strcmp(a, "--relay-op-wait") ||
			    !strcmp(a, "--relay-sessions") || !strcmp(a, "--relay-sessions-per-org") ||
			    !strcmp(a, "--max-conns") || !strcmp(a, "--max-conns-per-ip") ||
			    !strcmp(a, "--head-timeout") || !strcmp(a, "--rate-limit") ||
			    !strcmp(a, "--rate-limit-org") || !strcmp(a, "--keys-per-org") ||
			    !strcmp(a, "--metrics-listen") || !strcmp(a, "--config") ||
			    !strcmp(a, "--threads") || !strcmp(a, "--workers") ||
			    !strcmp(a, "--calls-per-org") || !strcmp(a, "--trusted-proxy") ||
			    !strcmp(a, "--forward-max") || !strcmp(a, "--content-cache") ||
			    !strcmp(a, "--transcriber") || !strcmp(a, "--s3-listen");

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 0;
		}
		if (!strcmp(a, "--webhook-allow-private")) {
			o->webhook_allow_private = 1;
			continue;
		}
		if (!strcmp(a, "--version")) {
			printf("cofferd %s\n", COFFER_VERSION);
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
		} else if (!strcmp(a, "--meta") && *v) {
			o->meta = v;
		} else if (!strcmp(a, "--blobs") && *v) {
			o->blobs = v;
		} else if (!strcmp(a, "--log") && *v) {
			o->log = v;
		} else if (!strcmp(a, "--node") && *v && strlen(v) < 48) {
			o->node = v;
		} else if (!strcmp(a, "--advertise") && !strncmp(v, "http://", 7) &&
			   strlen(v) < 256) {
			o->advertise = v;
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
		} else if (!strcmp(a, "--relay-sessions") &&
			   parse_count(v, 1000000, &o->relay_sessions) == 0) {
			continue;
		} else if (!strcmp(a, "--relay-sessions-per-org") &&
			   parse_count(v, 1000000, &o->relay_per_org) == 0) {
			continue;
		} else if (!strcmp(a, "--max-conns") &&
			   parse_count(v, COUNT_MAX, &o->max_conns) == 0) {
			o->max_conns_given = 1;
		} else if (!strcmp(a, "--threads") && parse_count(v, 256, &o->threads) == 0) {
			continue;
		} else if (!strcmp(a, "--workers") && parse_count(v, 4096, &o->workers) == 0) {
			continue;
		} else if (!strcmp(a, "--calls-per-org") &&
			   parse_count(v, 16384, &o->calls_per_org) == 0 && o->calls_per_org > 0) {
			continue;
		} else if (!strcmp(a, "--forward-max") && parse_count(v, 100000, &o->forward_max) == 0 &&
			   o->forward_max > 0) {
			continue;
		} else if (!strcmp(a, "--transcriber") && v && v[0]) {
			o->transcriber = v;
			continue;
		} else if (!strcmp(a, "--content-cache")) {
			json_t *j = json_string(v);
			cof_err err = { 0 };
			int bad = !j || cof_size_parse(j, "--content-cache", &o->content_cache, &err);
			json_decref(j);
			if (!bad)
				continue;
			fprintf(stderr, "cofferd: %s\n", j ? err.msg : "out of memory");
			cof_err_clear(&err);
			return 2;
		} else if (!strcmp(a, "--trusted-proxy")) {
			if (parse_trusted(v, o) == 0)
				continue;
			return 2;
		} else if (!strcmp(a, "--max-conns-per-ip") &&
			   parse_count(v, COUNT_MAX, &o->max_conns_per_ip) == 0) {
			continue;
		} else if (!strcmp(a, "--head-timeout") &&
			   parse_count(v, 86400, &o->head_timeout) == 0) {
			continue;
		} else if (!strcmp(a, "--rate-limit") &&
			   parse_count(v, 1000000, &o->rate_limit) == 0) {
			continue;
		} else if (!strcmp(a, "--rate-limit-org") &&
			   parse_count(v, 1000000, &o->rate_limit_org) == 0) {
			continue;
		} else if (!strcmp(a, "--keys-per-org") &&
			   parse_count(v, 1000000, &o->keys_per_org) == 0) {
			continue;
		} else if (!strcmp(a, "--metrics-listen")) {
			server_opts m;
			if (parse_listen(v, &m) == 0) {
				memcpy(o->mhost, m.host, sizeof o->mhost);
				memcpy(o->mport, m.port, sizeof o->mport);
				continue;
			}
			fprintf(stderr, "cofferd: --metrics-listen wants HOST:PORT, got '%s'\n", v);
			return 2;
		} else if (!strcmp(a, "--s3-listen")) {
			server_opts m;
			if (parse_listen(v, &m) == 0) {
				memcpy(o->s3host, m.host, sizeof o->s3host);
				memcpy(o->s3port, m.port, sizeof o->s3port);
				continue;
			}
			fprintf(stderr, "cofferd: --s3-listen wants HOST:PORT, got '%s'\n", v);
			return 2;
		} else if (!strcmp(a, "--config")) {
			continue; /* read before (config.c) */
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
		int64_t until = cof_mono_ms() + g->interval * 1000;
		while (!g->stop && cof_cond_wait_until(&g->cv, &g->mu, until) != ETIMEDOUT)
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
	cof_cond_init(&g->cv);
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

/* ------------------------------------------------------------ head deadline */

/* MHD_OPTION_NOTIFY_CONNECTION: a new connection is watched from its accept;
 * a closing one leaves the list (before MHD closes its fd). */
static void head_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
			enum MHD_ConnectionNotificationCode code)
{
	head_guard *g = cls;
	head_watch *w = *socket_context;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci =
			MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		if (!ci || !(w = cof_calloc(1, sizeof *w)))
			return; /* unwatched: the idle timeout still holds */
		w->fd = ci->connect_fd;
		w->deadline = cof_mono_ms() + g->timeout_ms;
		pthread_mutex_lock(&g->mu);
		w->next = g->list;
		if (g->list)
			g->list->prev = w;
		g->list = w;
		pthread_mutex_unlock(&g->mu);
		*socket_context = w;
	} else if (code == MHD_CONNECTION_NOTIFY_CLOSED && w) {
		pthread_mutex_lock(&g->mu);
		if (w->prev)
			w->prev->next = w->next;
		else
			g->list = w->next;
		if (w->next)
			w->next->prev = w->prev;
		pthread_mutex_unlock(&g->mu);
		free(w);
		*socket_context = NULL;
	}
}

/* Sets the head deadline of `conn` to now + timeout (arm) or off: twice per
 * request, so without the list's mutex (the guard reads it atomically). */
static void head_arm(head_guard *g, struct MHD_Connection *conn, int arm)
{
	head_watch *w = http_conn_context(conn);

	if (!w)
		return;
	__atomic_store_n(&w->deadline, arm ? cof_mono_ms() + g->timeout_ms : 0,
			 __ATOMIC_RELAXED);
}

/* MHD calls the access handler first once a request's head is complete
 * (*con_cls still NULL): from there the head deadline is off. */
static enum MHD_Result head_access(void *cls, struct MHD_Connection *conn, const char *url,
				   const char *method, const char *version,
				   const char *upload_data, size_t *upload_data_size,
				   void **con_cls)
{
	head_guard *g = cls;

	if (*con_cls == NULL)
		head_arm(g, conn, 0);
	return http_access(g->srv, conn, url, method, version, upload_data, upload_data_size,
			   con_cls);
}

/* An answer is done: a kept-alive connection's next head has its deadline. */
static void head_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			   enum MHD_RequestTerminationCode toe)
{
	head_guard *g = cls;

	http_completed(g->srv, conn, con_cls, toe);
	head_arm(g, conn, 1);
}

/* The guard's thread: every 250 ms, shuts down the sockets past their head
 * deadline (once each: the deadline is then off). */
static void *head_main(void *arg)
{
	head_guard *g = arg;

	pthread_mutex_lock(&g->mu);
	while (!g->stop) {
		int64_t now = cof_mono_ms();
		for (head_watch *w = g->list; w; w = w->next) {
			int64_t d = __atomic_load_n(&w->deadline, __ATOMIC_RELAXED);
			/* off unless a head came in meanwhile, which disarmed it */
			if (d && d <= now && __atomic_compare_exchange_n(&w->deadline, &d, 0, 0,
									 __ATOMIC_RELAXED,
									 __ATOMIC_RELAXED)) {
				shutdown(w->fd, SHUT_RDWR);
				g->cut++;
			}
		}
		cof_cond_wait_until(&g->cv, &g->mu, now + 250);
	}
	pthread_mutex_unlock(&g->mu);
	return NULL;
}

/* The connections whose socket holds bytes not read yet: requests a client
 * sent before a stop, which the drain still answers (an event loop behind
 * under load has not reached them, so they are not counted in flight). */
static int head_unread(head_guard *g)
{
	int n = 0;

	pthread_mutex_lock(&g->mu);
	for (head_watch *w = g->list; w; w = w->next) {
		int avail = 0;
		if (ioctl(w->fd, FIONREAD, &avail) == 0 && avail > 0)
			n++;
	}
	pthread_mutex_unlock(&g->mu);
	return n;
}

/* Starts the guard's thread. 0, or -1 (printed). */
static int head_start(head_guard *g, http_server *srv, int64_t timeout_seconds)
{
	g->srv = srv;
	g->timeout_ms = timeout_seconds * 1000;
	pthread_mutex_init(&g->mu, NULL);
	cof_cond_init(&g->cv);
	if (pthread_create(&g->tid, NULL, head_main, g) != 0) {
		fprintf(stderr, "cofferd: cannot start the head deadline thread\n");
		return -1;
	}
	g->started = 1;
	return 0;
}

/* Stops the guard's thread; call after MHD stopped (no watch is left). */
static void head_stop(head_guard *g)
{
	if (!g->started)
		return;
	pthread_mutex_lock(&g->mu);
	g->stop = 1;
	pthread_cond_signal(&g->cv);
	pthread_mutex_unlock(&g->mu);
	pthread_join(g->tid, NULL);
	if (g->cut)
		fprintf(stderr, "cofferd: %lld connections closed for a late request head\n",
			(long long)g->cut);
	pthread_mutex_destroy(&g->mu);
	pthread_cond_destroy(&g->cv);
	g->started = 0;
}

/* Raises the open-file limit to its hard limit (an idle connection holds one
 * descriptor, a waiting one two) and fits --max-conns under it: a default
 * is lowered to what fits, a --max-conns over it is lowered with a warning. */
static void fit_conns(server_opts *o)
{
	struct rlimit rl;
	int64_t room;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
		(void)getrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rl.rlim_cur == RLIM_INFINITY)
		return;
	room = (int64_t)rl.rlim_cur - FD_RESERVE;
	if (room < 16)
		room = 16;
	if (o->max_conns <= room)
		return;
	if (o->max_conns_given)
		fprintf(stderr, "cofferd: --max-conns %lld is over what the open-file limit "
			"(%llu) leaves room for; using %lld\n", (long long)o->max_conns,
			(unsigned long long)rl.rlim_cur, (long long)room);
	o->max_conns = room;
}

/* Starts the event loops on the bound socket `fd` (theirs from here), with
 * the connection bounds of `o` and the head deadline of `g`: --threads loops
 * (epoll), each accepting on the socket, suspend and resume on. NULL, or
 * the loops (printed why not). */
static http_evloops *mhd_start(head_guard *g, const server_opts *o, int fd)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	http_evloops_cfg c = {
		.listen_fd = fd,
		.loops = o->threads ? (unsigned)o->threads
				    : (unsigned)(cores < 1 ? 1 : cores > 64 ? 64 : cores),
		.max_conns = (unsigned)o->max_conns,
		.max_conns_per_ip = (unsigned)o->max_conns_per_ip,
		.trusted = o->trusted, .ntrusted = o->ntrusted,
		.conn_timeout = CONN_TIMEOUT,
		.conn_memory = CONN_MEMORY,
		.thread_stack = THREAD_STACK,
		.access = head_access, .access_cls = g,
		.notify = head_notify, .notify_cls = g,
		.completed = head_completed, .completed_cls = g,
		.unescape = http_unescape_none,
	};
	cof_err err = { 0 };
	http_evloops *l = http_evloops_start(&c, &err);

	if (!l) {
		fprintf(stderr, "cofferd: cannot start the HTTP server: %s\n", err.msg);
		cof_err_clear(&err);
	}
	return l;
}

/* Graceful stop: no new connections, long-polls woken, requests under way
 * (and requests sent on kept connections but not read yet) given
 * DRAIN_SECONDS (a second signal cuts it short), then MHD stopped. */
static void mhd_drain(http_server *srv, head_guard *g, const sigset_t *sigs)
{
	struct timespec tick = { 0, 50 * 1000 * 1000 };
	struct timespec settle = { 0, 10 * 1000 * 1000 };

	__atomic_store_n(&srv->stopping, 1, __ATOMIC_SEQ_CST);
	cof_relay_shutdown(srv->relay);
	http_sio_stop(); /* its sessions close while the loops still run */
	http_evloops_quiesce(srv->loops);
	for (int i = 0; i < DRAIN_SECONDS * 20; i++) {
		cof_changes_wake_all(srv->st);
		http_loop_wake_all();
		/* nothing in flight and nothing unread, twice: a loop may have
		 * read a request and not yet called its handler the first time */
		if (__atomic_load_n(&srv->in_flight, __ATOMIC_SEQ_CST) <= 0 && !head_unread(g)) {
			nanosleep(&settle, NULL);
			if (__atomic_load_n(&srv->in_flight, __ATOMIC_SEQ_CST) <= 0 &&
			    !head_unread(g))
				break;
			continue;
		}
		/* no connection left: nothing is under way, whatever the count says */
		if (http_evloops_connections(srv->loops) == 0)
			break;
		int s = sigtimedwait(sigs, NULL, &tick);
		if (s == SIGHUP) {
			http_log_reopen();
		} else if (s > 0) {
			fprintf(stderr, "cofferd: second signal, stopping now\n");
			break;
		}
	}
	if (__atomic_load_n(&srv->in_flight, __ATOMIC_SEQ_CST) > 0)
		http_dump_in_flight();
	http_loop_stop(); /* every job ended and every wait resumed: none suspended */
	http_evloops_stop(srv->loops);
	srv->loops = NULL;
	http_keywatch_stop();
	http_mcp_stop();
}

/* Opens the store and prints the admin key when it is new (or that the
 * dataset's is used: a later node, API.md). 0 or -1. */
static int open_store(const server_opts *o, cof_store **st)
{
	cof_store_opts so = { 0 };
	cof_err err = { 0 };

	so.gc_grace_seconds = o->gc_grace < 0 ? 0 : (o->gc_grace == 0 ? 1 : o->gc_grace);
	so.history_seconds = o->history; /* 0 = the default, 7 days */
	so.meta_url = o->meta;
	so.blobs_url = o->blobs;
	so.serve = 1;
	so.content_cache = o->content_cache;
	so.keys_per_org = o->keys_per_org;
	if (cof_store_open(o->data, &so, st, &err)) {
		fprintf(stderr, "cofferd: cannot open data dir '%s': %s\n", o->data, err.msg);
		cof_err_clear(&err);
		return -1;
	}
	if (cof_store_admin_key_is_new(*st))
		printf("cofferd admin key: %s (saved in %s/admin.key)\n",
		       cof_store_admin_key(*st), o->data);
	else if (!cof_store_admin_key(*st)[0])
		printf("cofferd: the dataset has an admin key already (in the DATA/admin.key of"
		       " the node that made it); this node uses the dataset's keys\n");
	return 0;
}

/* Prepares turns (scratch root, seccomp filter, sweeper) and says in the
 * log how disk limits are kept. 0 or -1. */
static int open_turns(const server_opts *o, http_server *srv)
{
	cof_turns_opts to = {o->scratch, o->data, o->turn_grace, o->scratch_walk,
			     o->turn_rlimits, o->node};
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
	server_opts o = { "./data", "127.0.0.1", "7700", -1, 3600, 0, NULL, 0, 0, 600, 120,
			  0, 0, CONN_LIMIT, CONN_PER_IP, HEAD_TIMEOUT, 0, WORKERS, 0, 0,
			  NULL, NULL, NULL, NULL, NULL, 0, 0, "", "", 0,
			  COF_CONTENT_CACHE_DEFAULT, 0, 0, {{{0}, 0}}, 0, NULL, "", "", 0 };
	http_server srv;
	gc_thread gc;
	head_guard hg;
	sigset_t sigs;
	int rc, fd, sig = 0;

	/* the flags from --config: o points into them for the process's life */
	static char **cargv;
	int cargc;
	if ((rc = http_config_args(argc, argv, &cargc, &cargv)) >= 0)
		return rc;
	if ((rc = parse_args(cargc, cargv, &o)) >= 0)
		return rc;
	http_rate_configure(o.rate_limit, o.rate_limit_org);
	cof_audio_set_transcriber(o.transcriber);
	fit_conns(&o);
	memset(&srv, 0, sizeof(srv));
	memset(&gc, 0, sizeof(gc));
	memset(&hg, 0, sizeof(hg));
	/* before any thread exists, so every thread inherits the mask; the
	 * dispositions are reset because sigwait never sees an ignored signal
	 * (a shell starts background jobs with SIGINT ignored) */
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* Buffers of 256 KiB and more (S3 windows, read-all batches, copies) are
	 * mapped and given back when freed: glibc's sliding threshold would keep
	 * each worker's last window in its arena, 2 MiB a thread that read one. */
	(void)mallopt(M_MMAP_THRESHOLD, 256 * 1024);

	if (http_log_open(o.log) || open_store(&o, &srv.st))
		return 1;
	srv.max_conns_per_ip = (unsigned)o.max_conns_per_ip;
	srv.remote = cof_store_remote(srv.st);
	cof_relay_opts ro = { .grace_seconds = o.relay_grace,
			      .op_wait_ms = o.relay_op_wait * 1000,
			      .sessions_max = o.relay_sessions,
			      .sessions_per_org = o.relay_per_org, .node = o.node };
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
	if (fd >= 0 && http_loop_start((int)o.workers, (int)o.calls_per_org, &rerr)) {
		fprintf(stderr, "cofferd: %s\n", rerr.msg);
		cof_err_clear(&rerr);
		close(fd);
		fd = -1;
	}
	if (fd >= 0 && http_sio_start(&srv, &rerr)) {
		fprintf(stderr, "cofferd: %s\n", rerr.msg);
		cof_err_clear(&rerr);
		close(fd);
		fd = -1;
	}
	if (fd >= 0 && head_start(&hg, &srv, o.head_timeout)) {
		close(fd);
		fd = -1;
	}
	if (fd < 0 || (srv.loops = mhd_start(&hg, &o, fd)) == NULL) {
		http_sio_stop();
		http_loop_stop();
		head_stop(&hg);
		cof_turns_close(srv.turns);
		cof_relay_close(srv.relay);
		cof_store_close(srv.st);
		return 1;
	}
	if (gc_start(&gc, srv.st, o.gc_interval)) {
		http_loop_stop();
		http_evloops_stop(srv.loops);
		head_stop(&hg);
		cof_turns_close(srv.turns);
		cof_relay_close(srv.relay);
		cof_store_close(srv.st);
		return 1;
	}
	char self_url[sizeof srv.host + 16];
	snprintf(self_url, sizeof self_url, "http://%s:%u", srv.host, srv.port);
	http_carry_configure((int)o.forward_max);
	if (http_nodes_start(&srv, o.node, o.advertise ? o.advertise : self_url))
		fprintf(stderr, "cofferd: cannot start the node heartbeat\n");
	if ((o.mhost[0] && http_metrics_listen(&srv, o.mhost, o.mport)) ||
	    (o.s3host[0] && http_s3_listen(&srv, o.s3host, o.s3port))) {
		http_metrics_listen_stop();
		http_nodes_stop();
		gc_stop(&gc);
		http_evloops_stop(srv.loops);
		head_stop(&hg);
		cof_turns_close(srv.turns);
		cof_relay_close(srv.relay);
		cof_store_close(srv.st);
		return 1;
	}
	if (cof_hooks_start(srv.st, o.node, o.webhook_allow_private, &rerr)) {
		fprintf(stderr, "cofferd: %s\n", rerr.msg);
		cof_err_clear(&rerr);
	}
	printf("cofferd listening on http://%s:%u\n", srv.host, srv.port);
	fflush(stdout);

	/* SIGHUP reopens the request log (logrotate moved it away) */
	while (sigwait(&sigs, &sig) != 0 || sig == SIGHUP)
		if (sig == SIGHUP) {
			http_log_reopen();
			sig = 0;
		}
	fprintf(stderr, "cofferd: %s, stopping\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
	http_nodes_stop();
	cof_hooks_stop();
	cof_turns_stop(srv.turns); /* calls under way end now, not after the drain */
	mhd_drain(&srv, &hg, &sigs);
	http_turn_streams_wait();
	http_metrics_listen_stop();
	http_s3_stop();
	head_stop(&hg);
	cof_turns_close(srv.turns);
	gc_stop(&gc);
	cof_relay_close(srv.relay);
	cof_store_close(srv.st);
	fprintf(stderr, "cofferd: stopped\n");
	return 0;
}

int http_side_resolve(const char *flag, const char *host, const char *port,
		      struct addrinfo **res)
{
	struct addrinfo hints = {0};
	int rc;

	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	if ((rc = getaddrinfo(host, port, &hints, res)) != 0) {
		fprintf(stderr, "cofferd: %s: cannot resolve '%s': %s\n", flag, host,
			gai_strerror(rc));
		return -1;
	}
	return 0;
}

int http_side_started(struct MHD_Daemon *d, const char *flag, const char *what,
		      const char *host, const char *port, const char *path)
{
	const union MHD_DaemonInfo *di;
	int v6 = strchr(host, ':') != NULL;

	if (!d) {
		fprintf(stderr, "cofferd: %s: cannot listen on %s:%s\n", flag, host, port);
		return -1;
	}
	di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	printf("cofferd %s on http://%s%s%s:%u%s\n", what, v6 ? "[" : "", host, v6 ? "]" : "",
	       di ? (unsigned)di->port : 0, path);
	fflush(stdout);
	return 0;
}
