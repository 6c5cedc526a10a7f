/*
 * forward.c — the node-to-node path (docs/design.md, "Across nodes").
 *
 * Every node registers itself in the store (a record of kind "node": its
 * name, the URL other nodes reach it at, and a heartbeat every
 * NODE_BEAT_MS). A request for something another node holds (a turn's
 * workspace; the client of a relay session) is carried there by one HTTP
 * call: the same method, path, query and body, the caller's own
 * Authorization (every node knows the dataset's keys, so the owner checks
 * the caller itself: nothing is trusted because it came from a node), and
 * X-Coffer-Forwarded naming this node, so that a forwarded request is never
 * forwarded again. The owner's answer (status, headers, body, streamed as
 * it comes: carry.c) is the answer. A node whose heartbeat is older than
 * NODE_GONE_MS is gone: what it held answers 410 naming it.
 */
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "http/http.h"
#include "store/store.h"

#define NODE_BEAT_MS 2000
#define NODE_GONE_MS 15000

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t tid;
	int started, stop;
	cof_store *st;
	char node[48];
	char url[300];
} hb = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

/* Writes this node's record: its URL and, in updated_at, the heartbeat. */
static void beat(void)
{
	json_t *b = json_pack("{s:s}", "url", hb.url);
	char *text = b ? json_dumps(b, JSON_COMPACT) : NULL;
	cof_staterow row = {.kind = "node", .body = text};
	cof_err e = {0};

	snprintf(row.id, sizeof row.id, "%s", hb.node);
	snprintf(row.node, sizeof row.node, "%s", hb.node);
	if (!text || cof_meta_state_put(hb.st->meta, &row, &e))
		fprintf(stderr, "cofferd: node %s: cannot record its heartbeat: %s\n", hb.node,
			text ? e.msg : "out of memory");
	cof_err_clear(&e);
	json_decref(b);
	free(text);
}

static void *beat_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&hb.mu);
	while (!hb.stop) {
		pthread_mutex_unlock(&hb.mu);
		beat();
		cof_turns_end_gone_nodes(hb.st, hb.node, NODE_GONE_MS); /* records.c */
		pthread_mutex_lock(&hb.mu);
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += NODE_BEAT_MS / 1000;
		if (!hb.stop)
			pthread_cond_timedwait(&hb.cv, &hb.mu, &ts);
	}
	pthread_mutex_unlock(&hb.mu);
	return NULL;
}

int http_nodes_start(http_server *srv, const char *node, const char *url)
{
	if (!node || !*node)
		return 0; /* one node: nothing to carry anywhere */
	curl_global_init(CURL_GLOBAL_DEFAULT); /* thread-safe in libcurl 7.84 and later */
	hb.st = srv->st;
	snprintf(hb.node, sizeof hb.node, "%s", node);
	snprintf(hb.url, sizeof hb.url, "%s", url);
	beat();
	if (http_carry_start(node) || pthread_create(&hb.tid, NULL, beat_main, NULL))
		return -1;
	hb.started = 1;
	return 0;
}

void http_nodes_stop(void)
{
	if (!hb.started)
		return;
	pthread_mutex_lock(&hb.mu);
	hb.stop = 1;
	pthread_cond_broadcast(&hb.cv);
	pthread_mutex_unlock(&hb.mu);
	pthread_join(hb.tid, NULL);
	hb.started = 0;
	http_carry_stop(); /* a stopping node's transfers end (their clients see a cut) */
}

/* The URL of node `name` when its heartbeat is fresh: 1; 0 with *age_ms
 * (-1: never registered) when it is gone; -1 on a store error. */
static int node_url(const char *name, char *url, size_t urlsz, int64_t *age_ms, cof_err *err)
{
	cof_staterow row;
	int found = cof_meta_state_get(hb.st->meta, "node", name, &row, err);
	json_t *b;

	*age_ms = -1;
	if (found <= 0)
		return found;
	*age_ms = cof_now_ms() - row.updated_at;
	b = json_loads(row.body, 0, NULL);
	snprintf(url, urlsz, "%s", cof_json_str(b, "url") ? cof_json_str(b, "url") : "");
	json_decref(b);
	free(row.body);
	return *age_ms < NODE_GONE_MS && url[0];
}

int http_forward(http_req *req, const cof_err *why, enum MHD_Result *res)
{
	const char *node = json_string_value(json_object_get(why->extra, "node"));
	char url[300];
	int64_t age = -1;
	cof_err e = {0};
	int alive;

	if (!node || !*node || !hb.started || !strcmp(node, hb.node) ||
	    http_header(req, "X-Coffer-Forwarded"))
		return 0;
	alive = node_url(node, url, sizeof url, &age, &e);
	if (alive < 0) {
		*res = http_send_error(req, &e);
		return 1;
	}
	if (!alive) {
		if (age < 0)
			cof_error(&e, COF_EGONE, "it was held by node '%s', which never registered",
				  node);
		else
			cof_error(&e, COF_EGONE, "it was held by node '%s', which is gone (no "
				  "heartbeat for %lld s)", node, (long long)(age / 1000));
		cof_err_set(&e, "reason", json_string("node_gone"));
		cof_err_set(&e, "node", json_string(node));
		*res = http_send_error(req, &e);
		return 1;
	}
	*res = http_carry(req, node, url);
	return 1;
}
