/*
 * metrics.c — GET /metrics in the Prometheus text format (version 0.0.4).
 *
 * Requests are counted by route (its index in the route table, so the label
 * is the template, never a path) and exact status, with a latency histogram
 * and byte counts per route: relaxed atomic adds in fixed arrays, no lock per
 * request. The store, gc, guard and sandbox counters are util/metrics.h's;
 * gauges (turns, calls, relay sessions, requests in flight) are read from
 * their owners at scrape time.
 *
 * On the API address the route needs a key of the admin's organization (the
 * numbers are the whole node's, every organization's together). With
 * --metrics-listen HOST:PORT a second MHD daemon serves GET /metrics there
 * without a key, for a scraper on a private network.
 *
 * The process_* families are the Prometheus client libraries' standard ones,
 * read from /proc at scrape time (a family whose file cannot be read is left
 * out, never given a made-up value); coffer_build_info carries the version.
 */
#include <dirent.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include "http/http.h"
#include "util/metrics.h"

#define ROUTES_MAX 160           /* more than the route table holds */
#define UNMATCHED ROUTES_MAX     /* a request no route matched */
#define STATUS_MIN 100
#define STATUS_N 500             /* 100..599 */

static uint64_t by_status[ROUTES_MAX + 1][STATUS_N];
static cof_histogram latency[ROUTES_MAX + 1];
static uint64_t bytes_in[ROUTES_MAX + 1], bytes_out[ROUTES_MAX + 1];
static uint64_t aborted;         /* requests that ended with no answer */
static struct MHD_Daemon *side;  /* --metrics-listen */

/* The slot of the request's route. */
static size_t route_slot(const http_req *req)
{
	const http_route *base = http_route_at(0);

	if (!req->route || !base)
		return UNMATCHED;
	size_t i = (size_t)(req->route - base);
	return i < http_route_count() && i < ROUTES_MAX ? i : UNMATCHED;
}

void http_metrics_request(const http_req *req)
{
	size_t r = route_slot(req);
	int head = req->method && !strcmp(req->method, "HEAD");

	if (req->status >= STATUS_MIN && req->status < STATUS_MIN + STATUS_N)
		__atomic_add_fetch(&by_status[r][req->status - STATUS_MIN], 1, __ATOMIC_RELAXED);
	else
		__atomic_add_fetch(&aborted, 1, __ATOMIC_RELAXED);
	cof_histogram_observe(&latency[r], cof_mono_us() - req->started_us);
	__atomic_add_fetch(&bytes_in[r], (uint64_t)req->bytes_in, __ATOMIC_RELAXED);
	if (!head)
		__atomic_add_fetch(&bytes_out[r], (uint64_t)req->bytes_out, __ATOMIC_RELAXED);
}

/* `route="...",method="...",` of slot r into lab. */
static void route_labels(size_t r, char *lab, size_t labsz)
{
	const http_route *rt = r == UNMATCHED ? NULL : http_route_at(r);

	snprintf(lab, labsz, "route=\"%s\",method=\"%s\",", rt ? rt->pattern : "unmatched",
		 rt ? rt->method : "");
}

static void family(cof_buf *b, const char *name, const char *type, const char *help)
{
	cof_buf_addf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* The request families: counts, latency, bytes. */
static void write_requests(cof_buf *b)
{
	size_t n = http_route_count() < ROUTES_MAX ? http_route_count() : ROUTES_MAX;
	char lab[400];

	family(b, "coffer_http_requests_total", "counter",
	       "Requests answered, by route template, method and status.");
	for (size_t r = 0; r <= ROUTES_MAX; r++) {
		if (r >= n && r != UNMATCHED)
			continue;
		route_labels(r, lab, sizeof lab);
		for (int s = 0; s < STATUS_N; s++) {
			uint64_t v = __atomic_load_n(&by_status[r][s], __ATOMIC_RELAXED);
			if (v)
				cof_buf_addf(b, "coffer_http_requests_total{%sstatus=\"%d\"} %llu\n",
					     lab, s + STATUS_MIN, (unsigned long long)v);
		}
	}
	family(b, "coffer_http_requests_aborted_total", "counter",
	       "Requests that ended without an answer (the client went away).");
	cof_buf_addf(b, "coffer_http_requests_aborted_total %llu\n",
		     (unsigned long long)__atomic_load_n(&aborted, __ATOMIC_RELAXED));
	family(b, "coffer_http_request_duration_seconds", "histogram",
	       "Time from a request's first byte to its end, by route.");
	for (size_t r = 0; r <= ROUTES_MAX; r++) {
		if ((r >= n && r != UNMATCHED) || !__atomic_load_n(&latency[r].count,
								    __ATOMIC_RELAXED))
			continue;
		route_labels(r, lab, sizeof lab);
		cof_histogram_write(b, "coffer_http_request_duration_seconds", lab, &latency[r]);
	}
	family(b, "coffer_http_request_bytes_total", "counter",
	       "Request body bytes received, by route.");
	for (size_t r = 0; r <= ROUTES_MAX; r++) {
		uint64_t v = __atomic_load_n(&bytes_in[r], __ATOMIC_RELAXED);
		if ((r < n || r == UNMATCHED) && __atomic_load_n(&latency[r].count,
								 __ATOMIC_RELAXED)) {
			route_labels(r, lab, sizeof lab);
			lab[strlen(lab) - 1] = '\0';
			cof_buf_addf(b, "coffer_http_request_bytes_total{%s} %llu\n", lab,
				     (unsigned long long)v);
		}
	}
	family(b, "coffer_http_response_bytes_total", "counter",
	       "Response body bytes sent, by route (HEAD answers count none).");
	for (size_t r = 0; r <= ROUTES_MAX; r++) {
		uint64_t v = __atomic_load_n(&bytes_out[r], __ATOMIC_RELAXED);
		if ((r < n || r == UNMATCHED) && __atomic_load_n(&latency[r].count,
								 __ATOMIC_RELAXED)) {
			route_labels(r, lab, sizeof lab);
			lab[strlen(lab) - 1] = '\0';
			cof_buf_addf(b, "coffer_http_response_bytes_total{%s} %llu\n", lab,
				     (unsigned long long)v);
		}
	}
}

/* One plain counter or gauge sample with its HELP and TYPE. */
static void one(cof_buf *b, const char *name, const char *type, const char *help, int64_t v)
{
	family(b, name, type, help);
	cof_buf_addf(b, "%s %lld\n", name, (long long)v);
}

/* The whole of a small /proc file into buf, NUL-terminated; its length or -1. */
static ssize_t read_proc(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return -1;
	n = fread(buf, 1, size - 1, f);
	fclose(f);
	buf[n] = '\0';
	return (ssize_t)n;
}

/* The process_* families (client_golang's names and meanings), from /proc/self. */
static void write_process(cof_buf *b)
{
	char st[1024], all[8192], *p, *tok, *save = NULL;
	long tck = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
	unsigned long long f[24] = {0}; /* /proc/self/stat fields 3.. by their number */
	int i = 3;
	struct rlimit rl;
	DIR *d;

	/* the command name (field 2) may hold spaces and ')': fields follow its last ')' */
	if (read_proc("/proc/self/stat", st, sizeof st) > 0 && (p = strrchr(st, ')')) &&
	    tck > 0 && page > 0) {
		for (tok = strtok_r(p + 1, " ", &save); tok && i < 24;
		     tok = strtok_r(NULL, " ", &save), i++)
			f[i] = strtoull(tok, NULL, 10);
		if (i == 24) {
			family(b, "process_cpu_seconds_total", "counter",
			       "Total user and system CPU time spent in seconds.");
			cof_buf_addf(b, "process_cpu_seconds_total %.2f\n",
				     (double)(f[14] + f[15]) / (double)tck);
			one(b, "process_virtual_memory_bytes", "gauge",
			    "Virtual memory size in bytes.", (int64_t)f[23]);
		}
		/* starttime (22) is in ticks after boot: boot time is /proc/stat's btime */
		const char *bt;
		if (i == 24 && read_proc("/proc/stat", all, sizeof all) > 0 &&
		    (bt = strstr(all, "\nbtime ")) != NULL) {
			family(b, "process_start_time_seconds", "gauge",
			       "Start time of the process since unix epoch in seconds.");
			cof_buf_addf(b, "process_start_time_seconds %.2f\n",
				     (double)strtoull(bt + 7, NULL, 10) + (double)f[22] / (double)tck);
		}
	}
	/* resident pages: statm's second number */
	unsigned long long size, resident;
	if (read_proc("/proc/self/statm", st, sizeof st) > 0 && page > 0 &&
	    sscanf(st, "%llu %llu", &size, &resident) == 2)
		one(b, "process_resident_memory_bytes", "gauge",
		    "Resident memory size in bytes.", (int64_t)(resident * (unsigned long long)page));
	if ((d = opendir("/proc/self/fd"))) {
		int64_t n = 0;
		struct dirent *e;
		while ((e = readdir(d)))
			if (e->d_name[0] != '.')
				n++;
		closedir(d);
		one(b, "process_open_fds", "gauge", "Number of open file descriptors.", n - 1);
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		one(b, "process_max_fds", "gauge", "Maximum number of open file descriptors.",
		    (int64_t)rl.rlim_cur);
	family(b, "coffer_build_info", "gauge", "The version of this cofferd, as a label; always 1.");
	cof_buf_addf(b, "coffer_build_info{version=\"");
	cof_metric_label_escape(b, COFFER_VERSION);
	cof_buf_addf(b, "\"} 1\n");
}

/* Everything but the requests. */
static void write_rest(cof_buf *b, http_server *srv)
{
	static const char *const rs[] = {"waiting", "active", "paused", "ended"};
	int64_t turns, calls, sessions[4];
	cof_content_cache_stats cc;

	one(b, "coffer_http_requests_in_flight", "gauge", "Requests being answered now.",
	    __atomic_load_n(&srv->in_flight, __ATOMIC_RELAXED));
	one(b, "coffer_forward_transfers", "gauge",
	    "Requests being carried to other nodes now (at most --forward-max).",
	    http_carry_live());
	one(b, "coffer_http_rate_limited_total", "counter",
	    "Requests refused with 429 by --rate-limit.", http_rate_limited_count());
	one(b, "coffer_store_commits_total", "counter", "Metadata changes committed.",
	    cof_metric_get(COF_M_STORE_COMMITS));
	one(b, "coffer_store_commit_errors_total", "counter",
	    "Metadata changes that failed (nothing stored).",
	    cof_metric_get(COF_M_STORE_COMMIT_ERRORS));
	family(b, "coffer_store_commit_seconds", "histogram",
	       "Time of a metadata change, begin to durable.");
	cof_histogram_write(b, "coffer_store_commit_seconds", "",
			    cof_metric_histogram(COF_H_COMMIT));
	family(b, "coffer_blob_fsync_seconds", "histogram",
	       "Time of one fsync of stored content (local blob store).");
	cof_histogram_write(b, "coffer_blob_fsync_seconds", "", cof_metric_histogram(COF_H_FSYNC));
	one(b, "coffer_gc_runs_total", "counter", "Garbage collections run by this process.",
	    cof_metric_get(COF_M_GC_RUNS));
	one(b, "coffer_gc_freed_bytes_total", "counter", "Bytes of content the gc deleted.",
	    cof_metric_get(COF_M_GC_BYTES_FREED));
	one(b, "coffer_gc_freed_blobs_total", "counter", "Blobs the gc deleted.",
	    cof_metric_get(COF_M_GC_BLOBS_FREED));
	cof_store_content_cache_stats(srv->st, &cc);
	one(b, "coffer_content_cache_hits_total", "counter",
	    "Small contents read from memory (--content-cache).", cc.hits);
	one(b, "coffer_content_cache_misses_total", "counter",
	    "Small contents looked for in memory and read from the store.", cc.misses);
	one(b, "coffer_content_cache_contents", "gauge", "Small contents kept in memory.",
	    cc.kept);
	one(b, "coffer_content_cache_bytes", "gauge",
	    "Bytes of small contents kept in memory, bookkeeping included.", cc.bytes);
	one(b, "coffer_image_decodes_total", "counter",
	    "Images decoded for the model (read, prompts, conversation rebuilds).",
	    cof_metric_get(COF_M_IMAGE_DECODES));
	one(b, "coffer_image_cache_hits_total", "counter",
	    "Images shown from the scaled-image cache, not decoded again.",
	    cof_metric_get(COF_M_IMAGE_CACHE_HITS));
	one(b, "coffer_image_decoding_bytes", "gauge",
	    "Decoded bytes of the image decodes under way (at most 512 MiB).",
	    cof_media_decoding());
	cof_turns_gauges(srv->turns, &turns, &calls);
	one(b, "coffer_turns_running", "gauge", "Turns not ended.", turns);
	one(b, "coffer_turn_calls_running", "gauge", "Sandboxed calls running now.", calls);
	family(b, "coffer_sandbox_breaches_total", "counter",
	       "Sandboxed calls stopped by a limit, by the limit.");
	cof_metric_events_write(b, "coffer_sandbox_breaches_total");
	family(b, "coffer_relay_sessions", "gauge", "Relay sessions kept, by status.");
	cof_relay_gauges(srv->relay, sessions);
	for (int i = 0; i < 4; i++)
		cof_buf_addf(b, "coffer_relay_sessions{status=\"%s\"} %lld\n", rs[i],
			     (long long)sessions[i]);
	family(b, "coffer_guard_blocks_total", "counter",
	       "Content the write guard refused, by category.");
	cof_metric_events_write(b, "coffer_guard_blocks_total");
}

/* The whole exposition as a response. */
static struct MHD_Response *exposition(http_server *srv)
{
	cof_buf b = COF_BUF_INIT;
	struct MHD_Response *resp;

	write_requests(&b);
	write_rest(&b, srv);
	write_process(&b);
	resp = MHD_create_response_from_buffer(b.len, b.data, MHD_RESPMEM_MUST_COPY);
	cof_buf_release(&b);
	if (resp)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
					"text/plain; version=0.0.4; charset=utf-8");
	return resp;
}

enum MHD_Result http_metrics(http_req *req)
{
	struct MHD_Response *resp;

	if (strcmp(req->who.org, COF_ADMIN_ORG))
		return http_send_fail(req, COF_EFORBIDDEN,
				      "/metrics needs a key of the admin's organization ('%s')",
				      COF_ADMIN_ORG);
	if (!(resp = exposition(req->srv)))
		return http_send_fail(req, COF_EINTERNAL, "out of memory for /metrics");
	return http_queue(req, MHD_HTTP_OK, resp);
}

/* The --metrics-listen daemon: GET or HEAD /metrics, else 404 (plain text). */
static enum MHD_Result side_access(void *cls, struct MHD_Connection *conn, const char *url,
				   const char *method, const char *version,
				   const char *upload, size_t *upload_size, void **con_cls)
{
	static const char nf[] = "not found: this address serves GET /metrics only\n";
	struct MHD_Response *resp;
	int ok = !strcmp(url, "/metrics") && (!strcmp(method, "GET") || !strcmp(method, "HEAD"));
	enum MHD_Result rc;

	(void)version, (void)upload;
	if (*con_cls == NULL) {
		*con_cls = conn;
		return MHD_YES;
	}
	if (*upload_size) {
		*upload_size = 0; /* dropped */
		return MHD_YES;
	}
	resp = ok ? exposition(cls)
		  : MHD_create_response_from_buffer(sizeof nf - 1, (void *)nf,
						    MHD_RESPMEM_PERSISTENT);
	if (!resp)
		return MHD_NO;
	rc = MHD_queue_response(conn, ok ? MHD_HTTP_OK : MHD_HTTP_NOT_FOUND, resp);
	MHD_destroy_response(resp);
	return rc;
}

int http_metrics_listen(http_server *srv, const char *host, const char *port)
{
	struct addrinfo *res = NULL;

	if (http_side_resolve("--metrics-listen", host, port, &res))
		return -1;
	side = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG |
				(res->ai_family == AF_INET6 ? MHD_USE_IPv6 : 0),
				0, NULL, NULL, side_access, srv,
				MHD_OPTION_EXTERNAL_LOGGER, http_log_mhd, NULL, /* first */
				MHD_OPTION_SOCK_ADDR, res->ai_addr,
				MHD_OPTION_CONNECTION_LIMIT, (unsigned)64,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30, MHD_OPTION_END);
	freeaddrinfo(res);
	return http_side_started(side, "--metrics-listen", "metrics", host, port, "/metrics");
}

void http_metrics_listen_stop(void)
{
	if (side)
		MHD_stop_daemon(side);
	side = NULL;
}
