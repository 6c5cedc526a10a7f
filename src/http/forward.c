/*
 * forward.c — the node-to-node path (docs/design.md, "Across nodes").
 *
 * Every node registers itself in the store and beats every
 * COF_NODE_BEAT_MS (store/nodes.h: the record and the alive rule). A request for something another node holds (a turn's
 * workspace; the client of a relay session) is carried there by one HTTP
 * call: the same method, path, query and body, the caller's own
 * Authorization (every node knows the dataset's keys, so the owner checks
 * the caller itself: nothing is trusted because it came from a node), and
 * X-Coffer-Forwarded naming this node, so that a forwarded request is never
 * forwarded again. The owner's answer (status, headers, body, streamed as
 * it comes: carry.c) is the answer. A node whose heartbeat is older than
 * COF_NODE_GONE_MS is gone: what it held answers 410 naming it.
 */
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "http/http.h"
#include "store/nodes.h"
#include "store/store.h"


static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t tid;
	int started, stop;
	cof_store *st;
	char node[48];
	char url[300];
} hb = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

/* Writes this node's record (store/nodes.c); a failure is said, and the
 * next beat tries again. */
static void beat(void)
{
	cof_err e = {0};

	if (cof_node_beat(hb.st, hb.node, hb.url, &e))
		fprintf(stderr, "cofferd: node %s: cannot record its heartbeat: %s\n", hb.node,
			e.msg);
	cof_err_clear(&e);
}

static void *beat_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&hb.mu);
	while (!hb.stop) {
		pthread_mutex_unlock(&hb.mu);
		beat();
		cof_turns_end_gone_nodes(hb.st, hb.node); /* records.c */
		pthread_mutex_lock(&hb.mu);
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += COF_NODE_BEAT_MS / 1000;
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

/* Where a call that failed with `why` belongs (`forwarded`: it came from
 * another node already, and is never carried twice): 0 here (`why` is the
 * answer); 1 at node `node`, reached at `url`; -1 nowhere (the node is
 * gone: 410 naming it, or the store's error), in *e. */
static int forward_to(const cof_err *why, int forwarded, char *node, size_t node_sz,
		      char *url, size_t url_sz, cof_err *e)
{
	const char *n = json_string_value(json_object_get(why->extra, "node"));
	int64_t age = -1;
	int alive;

	if (!n || !*n || !hb.started || !strcmp(n, hb.node) || forwarded)
		return 0;
	snprintf(node, node_sz, "%s", n);
	alive = cof_node_get(hb.st, node, url, url_sz, &age, e);
	if (alive > 0 && !url[0])
		alive = 0; /* a record without a URL cannot be reached */
	if (alive < 0)
		return -1;
	if (!alive) {
		if (age < 0)
			cof_error(e, COF_EGONE, "it was held by node '%s', which never registered",
				  node);
		else
			cof_error(e, COF_EGONE, "it was held by node '%s', which is gone (no "
				  "heartbeat for %lld s)", node, (long long)(age / 1000));
		cof_err_set(e, "reason", json_string("node_gone"));
		cof_err_set(e, "node", json_string(node));
		return -1;
	}
	return 1;
}

int http_forward(http_req *req, const cof_err *why, enum MHD_Result *res)
{
	char node[48], url[300];
	cof_err e = {0};
	int to = forward_to(why, http_header(req, "X-Coffer-Forwarded") != NULL, node,
			    sizeof node, url, sizeof url, &e);

	if (!to)
		return 0;
	*res = to < 0 ? http_send_error(req, &e) : http_carry(req, node, url);
	return 1;
}

int http_forward_relay(cof_err *err, const char *key, const char *method, const char *uid,
		       const char *tail, const json_t *body, json_t **out)
{
	char node[48], url[300];
	cof_err e = {0};
	int to = forward_to(err, 0, node, sizeof node, url, sizeof url, &e);

	*out = NULL;
	if (!to)
		return 0;
	cof_err_clear(err);
	if (to > 0) {
		char *esc = curl_easy_escape(NULL, uid, 0);
		cof_buf target = COF_BUF_INIT;
		if (!esc || cof_buf_addf(&target, "/v1/relay/sessions/%s%s", esc, tail))
			cof_error(&e, COF_EINTERNAL, "out of memory");
		else
			(void)http_carry_call(node, url, method, target.data, key, body, out, &e);
		curl_free(esc);
		cof_buf_release(&target);
	}
	*err = e; /* the holder's error, or why it was not reached */
	return 1;
}
