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
 * forwarded again. The owner's answer (status, Content-Type, body) is the
 * answer. A node whose heartbeat is older than NODE_GONE_MS is gone: what it
 * held answers 410 naming it.
 */
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "http/http.h"
#include "store/store.h"

#define NODE_BEAT_MS 2000
#define NODE_GONE_MS 15000
#define FORWARD_BODY_MAX (64LL << 20)   /* an answer carried back: a turn's file is at most 4 MB */
#define FORWARD_TIMEOUT_S 3600          /* a call may run that long */

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
	if (pthread_create(&hb.tid, NULL, beat_main, NULL))
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

typedef struct answer {
	cof_buf body;
	char ctype[128];
	int too_big;
} answer;

static size_t on_body(char *p, size_t sz, size_t n, void *arg)
{
	answer *a = arg;

	if ((int64_t)(a->body.len + sz * n) > FORWARD_BODY_MAX) {
		a->too_big = 1;
		return 0;
	}
	cof_buf_add(&a->body, p, sz * n);
	return sz * n;
}

static size_t on_header(char *p, size_t sz, size_t n, void *arg)
{
	answer *a = arg;
	size_t len = sz * n;

	if (len > 13 && !strncasecmp(p, "content-type:", 13)) {
		const char *v = p + 13;
		while (*v == ' ')
			v++;
		size_t vl = (size_t)(p + len - v);
		while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n'))
			vl--;
		snprintf(a->ctype, sizeof a->ctype, "%.*s", (int)vl, v);
	}
	return len;
}

/* Carries the request to `url` and queues its answer. */
static enum MHD_Result carry(http_req *req, const char *node, const char *url)
{
	CURL *h = curl_easy_init();
	struct curl_slist *hdrs = NULL;
	cof_buf target = COF_BUF_INIT, line = COF_BUF_INIT;
	answer a = {COF_BUF_INIT, "", 0};
	const char *auth = http_header(req, "Authorization");
	const char *accept = http_header(req, "Accept");
	long status = 0;
	CURLcode rc;

	if (!h)
		return http_send_fail(req, COF_EINTERNAL, "out of memory");
	cof_buf_addf(&target, "%s%s", url, req->url);
	if (auth) {
		cof_buf_addf(&line, "Authorization: %s", auth);
		hdrs = curl_slist_append(hdrs, line.data);
	}
	cof_buf_reset(&line);
	cof_buf_addf(&line, "X-Coffer-Forwarded: %s", hb.node);
	hdrs = curl_slist_append(hdrs, line.data);
	if (accept && !strstr(accept, "text/event-stream")) {
		cof_buf_reset(&line);
		cof_buf_addf(&line, "Accept: %s", accept);
		hdrs = curl_slist_append(hdrs, line.data);
	}
	hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
	hdrs = curl_slist_append(hdrs, "Expect:");
	curl_easy_setopt(h, CURLOPT_URL, target.data);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, req->method);
	/* the body as parsed (the routes carried take JSON; the bytes are not kept) */
	char *body = req->json ? json_dumps(req->json, JSON_COMPACT) : NULL;
	if (!strcmp(req->method, "POST") || !strcmp(req->method, "PUT")) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body ? body : "");
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
				 (curl_off_t)(body ? strlen(body) : 0));
	}
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &a);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, &a);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 5L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, (long)FORWARD_TIMEOUT_S);
	rc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(hdrs);
	curl_easy_cleanup(h);
	free(body);
	cof_buf_release(&target);
	cof_buf_release(&line);
	if (rc != CURLE_OK || status < 100) {
		cof_err e = {0};
		if (a.too_big)
			cof_error(&e, COF_EINTERNAL, "node '%s' answered more than %lld bytes", node,
				  FORWARD_BODY_MAX);
		else
			cof_error(&e, COF_EUNAVAILABLE, "node '%s' (%s) did not answer: %s", node,
				  url, curl_easy_strerror(rc));
		cof_err_set(&e, "node", json_string(node));
		cof_buf_release(&a.body);
		return http_send_error(req, &e);
	}
	struct MHD_Response *resp = MHD_create_response_from_buffer(
		a.body.len, a.body.data ? a.body.data : (char *)"", a.body.data ? MHD_RESPMEM_MUST_FREE
								       : MHD_RESPMEM_PERSISTENT);
	if (!resp) {
		cof_buf_release(&a.body);
		return http_send_fail(req, COF_EINTERNAL, "out of memory");
	}
	if (a.ctype[0])
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, a.ctype);
	MHD_add_response_header(resp, "X-Coffer-Node", node);
	http_count_out(req, (int64_t)a.body.len);
	return http_queue(req, (unsigned)status, resp);
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
	*res = carry(req, node, url);
	return 1;
}
