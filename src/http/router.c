/*
 * router.c — the routing table and the request life cycle MHD drives.
 *
 * MHD calls http_access several times per request: once with the headers
 * (upload size 0), once per body chunk, and once more (size 0) when the body
 * is complete; that last call must queue a response. Errors found early are
 * kept in req->err and answered on the last call, after the body has been
 * read and dropped, so that a client still sending cannot miss the answer. The
 * exception is a client waiting on `Expect: 100-continue`: it has sent no body
 * yet, so the error is answered at once and the body never comes.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <openssl/crypto.h>
#include "http/http.h"
#include "store/store.h"

/* Every route this server answers; the one place to look. */
static const http_route routes[] = {
	{ "GET", "/v1/health", HTTP_F_LOCAL, HTTP_BODY_NONE, NULL, http_health },
	{ "GET", "/metrics", HTTP_F_AUTH | HTTP_F_NOAGENT, HTTP_BODY_NONE, NULL, http_metrics },
	{ "GET", "/v1/openapi.json", HTTP_F_LOCAL, HTTP_BODY_NONE, NULL, http_openapi },
	{ "GET", "/console", HTTP_F_LOCAL, HTTP_BODY_NONE, NULL, http_console },
	{ "GET", "/console/{+}", 0, HTTP_BODY_NONE, NULL, http_console_file },
	{ "POST", "/v1/keys", HTTP_F_AUTH | HTTP_F_NOAGENT, HTTP_BODY_JSON, NULL,
	  http_keys_create },
	{ "GET", "/v1/keys", HTTP_F_AUTH | HTTP_F_NOAGENT, HTTP_BODY_NONE, NULL, http_keys_list },
	{ "DELETE", "/v1/keys/{}", HTTP_F_AUTH | HTTP_F_NOAGENT, HTTP_BODY_NONE, NULL,
	  http_keys_revoke },
	{ "POST", "/v1/webhooks", HTTP_F_AUTH | HTTP_F_NOAGENT, HTTP_BODY_JSON, NULL,
	  http_webhook_create },
	{ "GET", "/v1/webhooks", HTTP_F_AUTH | HTTP_F_NOAGENT, HTTP_BODY_NONE, NULL,
	  http_webhook_list },
	{ "GET", "/v1/webhooks/{}", HTTP_F_AUTH | HTTP_F_NOAGENT, HTTP_BODY_NONE, NULL,
	  http_webhook_get },
	{ "PATCH", "/v1/webhooks/{}", HTTP_F_AUTH | HTTP_F_NOAGENT, HTTP_BODY_JSON, NULL,
	  http_webhook_patch },
	{ "DELETE", "/v1/webhooks/{}", HTTP_F_AUTH | HTTP_F_NOAGENT, HTTP_BODY_NONE, NULL,
	  http_webhook_delete },
	{ "GET", "/v1/webhooks/{}/deliveries", HTTP_F_AUTH | HTTP_F_NOAGENT, HTTP_BODY_NONE,
	  NULL, http_webhook_deliveries },
	{ "POST", "/v1/webhooks/{}/deliveries/{}/redeliver", HTTP_F_AUTH | HTTP_F_NOAGENT,
	  HTTP_BODY_NONE, NULL, http_webhook_redeliver },
	{ "POST", "/v1/volumes", HTTP_F_AUTH | HTTP_F_NOAGENT, HTTP_BODY_JSON, NULL,
	  http_volume_create },
	{ "GET", "/v1/volumes", HTTP_F_AUTH | HTTP_F_NOAGENT, HTTP_BODY_NONE, NULL,
	  http_volume_get_many },
	{ "GET", "/v1/volumes/{}", HTTP_F_AUTH | HTTP_F_NOAGENT, HTTP_BODY_NONE, NULL,
	  http_volume_get },
	{ "DELETE", "/v1/volumes/{}", HTTP_F_AUTH | HTTP_F_NOAGENT, HTTP_BODY_NONE, NULL,
	  http_volume_delete },
	{ "GET", "/v1/volumes/{}/files", HTTP_F_AUTH | HTTP_F_NOAGENT, HTTP_BODY_NONE,
	  NULL, http_files_list },
	{ "GET", "/v1/volumes/{}/files/{+}", HTTP_F_AUTH | HTTP_F_NOAGENT | HTTP_F_SNAPSHOT,
	  HTTP_BODY_NONE, NULL, http_file_get },
	{ "PUT", "/v1/volumes/{}/files/{+}", HTTP_F_AUTH | HTTP_F_NOAGENT,
	  HTTP_BODY_STREAM, http_begin_file_put, http_file_put },
	{ "DELETE", "/v1/volumes/{}/files/{+}", HTTP_F_AUTH | HTTP_F_NOAGENT,
	  HTTP_BODY_NONE, NULL, http_file_delete },
	{ "POST", "/v1/volumes/{}/move", HTTP_F_AUTH | HTTP_F_NOAGENT, HTTP_BODY_JSON,
	  NULL, http_move },
	{ "GET", "/v1/volumes/{}/changes", HTTP_F_AUTH | HTTP_F_NOAGENT | HTTP_F_WAITS,
	  HTTP_BODY_NONE,
	  NULL, http_changes },
	{ "GET", "/v1/volumes/{}/history", HTTP_F_AUTH | HTTP_F_NOAGENT, HTTP_BODY_NONE,
	  NULL, http_history },
	{ "POST", "/v1/volumes/{}/revert", HTTP_F_AUTH | HTTP_F_NOAGENT,
	  HTTP_BODY_JSON, NULL, http_revert },
	{ "POST", "/v1/volumes/{}/snapshots", HTTP_F_AUTH | HTTP_F_NOAGENT,
	  HTTP_BODY_JSON, NULL, http_snapshot_create },
	{ "GET", "/v1/volumes/{}/snapshots", HTTP_F_AUTH | HTTP_F_NOAGENT,
	  HTTP_BODY_NONE, NULL, http_snapshot_list },
	{ "GET", "/v1/volumes/{}/snapshots/{}", HTTP_F_AUTH | HTTP_F_NOAGENT,
	  HTTP_BODY_NONE, NULL, http_snapshot_get },
	{ "PATCH", "/v1/volumes/{}/snapshots/{}", HTTP_F_AUTH | HTTP_F_NOAGENT,
	  HTTP_BODY_JSON, NULL, http_snapshot_patch },
	{ "DELETE", "/v1/volumes/{}/snapshots/{}", HTTP_F_AUTH | HTTP_F_NOAGENT,
	  HTTP_BODY_NONE, NULL, http_snapshot_delete },
	{ "POST", "/v1/volumes/{}/fork", HTTP_F_AUTH | HTTP_F_NOAGENT, HTTP_BODY_JSON,
	  NULL, http_fork },
	{ "POST", "/v1/volumes/{}/restore", HTTP_F_AUTH | HTTP_F_NOAGENT,
	  HTTP_BODY_JSON, NULL, http_restore },
	{ "POST", "/v1/volumes/{}/merge", HTTP_F_AUTH | HTTP_F_NOAGENT,
	  HTTP_BODY_JSON, NULL, http_merge },
	{ "GET", "/v1/volumes/{}/archive", HTTP_F_AUTH | HTTP_F_NOAGENT, HTTP_BODY_NONE,
	  NULL, http_archive },
	{ "POST", "/v1/volumes/{}/links", HTTP_F_AUTH | HTTP_F_NOAGENT, HTTP_BODY_JSON,
	  NULL, http_link_create },
	{ "GET", "/v1/agents", HTTP_F_AUTH | HTTP_F_NOAGENT, HTTP_BODY_NONE, NULL, http_agent_list },
	{ "PUT", "/v1/agents/{}", HTTP_F_AUTH, HTTP_BODY_JSON, NULL, http_agent_put },
	{ "GET", "/v1/agents/{}", HTTP_F_AUTH, HTTP_BODY_NONE, NULL, http_agent_get },
	{ "DELETE", "/v1/agents/{}", HTTP_F_AUTH, HTTP_BODY_NONE, NULL, http_agent_delete },
	{ "PUT", "/v1/agents/{}/mounts", HTTP_F_AUTH, HTTP_BODY_JSON_ARRAY, NULL,
	  http_agent_mounts },
	{ "GET", "/v1/agents/{}/files", HTTP_F_AUTH, HTTP_BODY_NONE, NULL,
	  http_agent_files_list },
	{ "GET", "/v1/agents/{}/files/{+}", HTTP_F_AUTH, HTTP_BODY_NONE, NULL,
	  http_agent_file_get },
	{ "PUT", "/v1/agents/{}/files/{+}", HTTP_F_AUTH, HTTP_BODY_STREAM,
	  http_begin_agent_file_put, http_agent_file_put },
	{ "DELETE", "/v1/agents/{}/files/{+}", HTTP_F_AUTH, HTTP_BODY_NONE, NULL,
	  http_agent_file_delete },
	{ "POST", "/v1/agents/{}/tools/{}", HTTP_F_AUTH, HTTP_BODY_JSON, NULL,
	  http_agent_tool },
	{ "GET", "/v1/agents/{}/runs/{}", HTTP_F_AUTH, HTTP_BODY_NONE, NULL, http_agent_run },
	{ "GET", "/v1/agents/{}/events", HTTP_F_AUTH, HTTP_BODY_NONE, NULL, http_agent_events },
	{ "POST", "/v1/agents/{}/links", HTTP_F_AUTH, HTTP_BODY_JSON, NULL, http_agent_link },
	{ "POST", "/v1/agents/{}/resolve", HTTP_F_AUTH, HTTP_BODY_JSON, NULL, http_agent_resolve },
	/* transcribes audio (audio.c): up to minutes, on the long lane */
	{ "POST", "/v1/agents/{}/prompt", HTTP_F_AUTH | HTTP_F_LONG, HTTP_BODY_JSON, NULL,
	  http_agent_prompt },
	/* decodes images (media.c): seconds of CPU, never on an event loop */
	{ "GET", "/v1/agents/{}/conversations/{}/request", HTTP_F_AUTH | HTTP_F_LONG,
	  HTTP_BODY_NONE, NULL, http_agent_conversation },
	{ "PUT", "/v1/agents/{}/uploads/{}/{}", HTTP_F_AUTH, HTTP_BODY_STREAM,
	  http_begin_agent_upload, http_agent_upload },
	{ "PUT", "/v1/agents/{}/tool-outputs/{}/{}", HTTP_F_AUTH, HTTP_BODY_STREAM,
	  http_begin_agent_tool_output, http_agent_tool_output },
	{ "PUT", "/v1/agents/{}/skills/{}", HTTP_F_AUTH, HTTP_BODY_STREAM,
	  http_begin_agent_skill_put, http_agent_skill_put },
	{ "GET", "/v1/agents/{}/users/{}/files", HTTP_F_AUTH, HTTP_BODY_NONE, NULL,
	  http_subject_files_list },
	{ "DELETE", "/v1/agents/{}/users/{}/files", HTTP_F_AUTH, HTTP_BODY_NONE, NULL,
	  http_subject_file_delete },
	{ "GET", "/v1/agents/{}/users/{}/files/content", HTTP_F_AUTH, HTTP_BODY_NONE, NULL,
	  http_subject_file_get },
	{ "PUT", "/v1/agents/{}/users/{}/files/content", HTTP_F_AUTH, HTTP_BODY_JSON, NULL,
	  http_subject_file_put },
	{ "POST", "/v1/agents/{}/users/{}/files/move", HTTP_F_AUTH, HTTP_BODY_JSON, NULL,
	  http_subject_file_move },
	{ "GET", "/v1/agents/{}/users/{}/volume", HTTP_F_AUTH, HTTP_BODY_NONE, NULL,
	  http_subject_volume },
	{ "PUT", "/v1/agents/{}/users/{}/memory/{}", HTTP_F_AUTH, HTTP_BODY_STREAM,
	  http_begin_subject_memory_put, http_subject_memory_put },
	{ "GET", "/v1/agents/{}/users/{}/memory/{}", HTTP_F_AUTH, HTTP_BODY_NONE, NULL,
	  http_subject_memory_get },
	{ "POST", "/v1/agents/{}/users/{}/sessions", HTTP_F_AUTH, HTTP_BODY_JSON, NULL,
	  http_subject_session },
	{ "POST", "/v1/agents/{}/users/{}/tools/{}", HTTP_F_AUTH, HTTP_BODY_JSON, NULL,
	  http_subject_tool },
	{ "POST", "/v1/agents/{}/users/{}/prewarm", HTTP_F_AUTH, HTTP_BODY_JSON, NULL,
	  http_subject_prewarm },
	{ "POST", "/v1/agents/{}/users/{}/approvals/{}", HTTP_F_AUTH, HTTP_BODY_JSON, NULL,
	  http_subject_approve },
	{ "GET", "/v1/agents/{}/users/{}/approvals", HTTP_F_AUTH, HTTP_BODY_NONE, NULL,
	  http_subject_approvals },
	{ "POST", "/v1/turns", HTTP_F_AUTH, HTTP_BODY_JSON, NULL, http_turn_create },
	{ "GET", "/v1/turns/{}", HTTP_F_AUTH | HTTP_F_FORWARDS, HTTP_BODY_NONE, NULL, http_turn_get },
	{ "DELETE", "/v1/turns/{}", HTTP_F_AUTH, HTTP_BODY_NONE, NULL, http_turn_delete },
	{ "POST", "/v1/turns/{}/calls", HTTP_F_AUTH | HTTP_F_LONG, HTTP_BODY_JSON, NULL,
	  http_turn_call },
	{ "GET", "/v1/turns/{}/files/{}/{}", HTTP_F_AUTH | HTTP_F_FORWARDS, HTTP_BODY_NONE, NULL,
	  http_turn_file },

	{ "POST", "/v1/relay/sessions", HTTP_F_AUTH, HTTP_BODY_JSON, NULL, http_relay_create },
	{ "GET", "/v1/relay/sessions", HTTP_F_AUTH, HTTP_BODY_NONE, NULL, http_relay_list },
	{ "GET", "/v1/relay/sessions/{}", HTTP_F_AUTH | HTTP_F_FORWARDS, HTTP_BODY_NONE, NULL, http_relay_get },
	{ "DELETE", "/v1/relay/sessions/{}", HTTP_F_AUTH, HTTP_BODY_NONE, NULL,
	  http_relay_delete },
	{ "POST", "/v1/relay/sessions/{}/ops", HTTP_F_AUTH | HTTP_F_LONG, HTTP_BODY_JSON, NULL,
	  http_relay_op },
	{ "GET", "/v1/relay/sessions/{}/ops/{}", HTTP_F_AUTH | HTTP_F_FORWARDS, HTTP_BODY_NONE, NULL,
	  http_relay_op_get },
	{ "GET", "/v1/relay/sessions/{}/events", HTTP_F_AUTH, HTTP_BODY_NONE, NULL,
	  http_relay_events },
	{ "POST", "/v1/relay/sessions/{}/abort", HTTP_F_AUTH, HTTP_BODY_NONE, NULL,
	  http_relay_abort },
	{ "GET", "/v1/relay/sessions/{}/log", HTTP_F_AUTH | HTTP_F_FORWARDS, HTTP_BODY_NONE, NULL, http_relay_log },
	/* the user's client: the connect token, checked by the handlers */
	{ "POST", "/v1/relay/sessions/{}/connect", 0, HTTP_BODY_JSON, NULL, http_relay_connect },
	{ "POST", "/v1/relay/sessions/{}/results/{}", HTTP_F_BADBODY, HTTP_BODY_JSON, NULL,
	  http_relay_result },
	{ "POST", "/v1/relay/sessions/{}/events", 0, HTTP_BODY_JSON, NULL,
	  http_relay_client_event },
	/* MCP over Streamable HTTP (mcp.c): relay tools wait, so the long lane */
	{ "POST", "/mcp", HTTP_F_AUTH | HTTP_F_LONG, HTTP_BODY_RAW, NULL, http_mcp_post },
	{ "DELETE", "/mcp", HTTP_F_AUTH, HTTP_BODY_NONE, NULL, http_mcp_delete },
	{ "GET", "/mcp", HTTP_F_AUTH, HTTP_BODY_NONE, NULL, http_mcp_get },
	/* seed 004's Socket.IO face of the relay (socketio.c): its own auth */
	{ "GET", "/socket.io/", HTTP_F_WAITS, HTTP_BODY_NONE, NULL, http_sio_get },
	{ "POST", "/socket.io/", 0, HTTP_BODY_RAW, http_sio_begin_post, http_sio_post },
	{ "GET", "/l/{}", 0, HTTP_BODY_NONE, NULL, http_link_get },
	{ "PUT", "/l/{}", 0, HTTP_BODY_STREAM, http_begin_link_put, http_link_put },
};
#define NROUTES (sizeof(routes) / sizeof(routes[0]))

size_t http_route_count(void)
{
	return NROUTES;
}

const http_route *http_route_at(size_t i)
{
	return i < NROUTES ? &routes[i] : NULL;
}

/* True when the route buffers a body (and, but for a raw one, parses it). */
static int is_json(const http_route *r)
{
	return r->body == HTTP_BODY_JSON || r->body == HTTP_BODY_JSON_ARRAY ||
	       r->body == HTTP_BODY_RAW;
}

/* One capture of a match: raw (still percent-encoded) bytes of the URL. */
typedef struct capture {
	const char *s;
	size_t len;
} capture;

/* Matches a raw URL path against `pattern`. Returns the number of captures
 * (>= 0) written to caps, or -1 when it does not match. `{}` takes one
 * non-empty segment; `{+}` (last) takes the rest, slashes and all. */
static int route_match(const char *pattern, const char *url, capture *caps)
{
	const char *p = pattern, *u = url;
	int n = 0;

	while (*p) {
		if (p[0] == '{' && p[1] == '+' && p[2] == '}') {
			caps[n].s = u;
			caps[n++].len = strlen(u);
			u += strlen(u);
			p += 3;
		} else if (p[0] == '{' && p[1] == '}') {
			size_t len = strcspn(u, "/");
			if (len == 0 || n == HTTP_MAX_PARAMS)
				return -1;
			caps[n].s = u;
			caps[n++].len = len;
			u += len;
			p += 2;
		} else if (*p++ != *u++) {
			return -1;
		}
	}
	return *u == '\0' ? n : -1;
}

/* True when route `r` serves `method` (HEAD is served by GET routes). */
static int method_ok(const http_route *r, const char *method)
{
	return strcmp(r->method, method) == 0 ||
	       (strcmp(method, "HEAD") == 0 && strcmp(r->method, "GET") == 0);
}

/* Fills req->allow with the methods of the routes matching `url`. */
static void set_allow(http_req *req, const char *url)
{
	capture caps[HTTP_MAX_PARAMS];
	char allow[96] = "";
	size_t off = 0;

	for (size_t i = 0; i < NROUTES; i++) {
		if (route_match(routes[i].pattern, url, caps) < 0)
			continue;
		const char *m = strcmp(routes[i].method, "GET") == 0 ? "GET, HEAD"
								       : routes[i].method;
		int w = snprintf(allow + off, sizeof(allow) - off, "%s%s",
				 off ? ", " : "", m);
		if (w > 0 && (size_t)w < sizeof(allow) - off)
			off += (size_t)w;
	}
	req->allow = http_own(req, allow, strlen(allow));
}

/* Finds the route for the request and decodes its captures. 0, or -1 with
 * req->err: 404 for an unknown path, 405 for a known path and another method. */
static int route_find(http_req *req, const char *url)
{
	capture caps[HTTP_MAX_PARAMS];
	int path_known = 0;

	for (size_t i = 0; i < NROUTES; i++) {
		int n = route_match(routes[i].pattern, url, caps);
		if (n < 0)
			continue;
		path_known = 1;
		if (!method_ok(&routes[i], req->method))
			continue;
		req->route = &routes[i];
		for (int k = 0; k < n; k++) {
			const char *what = (k == n - 1 && strstr(routes[i].pattern, "{+}"))
						   ? "file path" : "URL segment";
			req->param[k] = http_decode(req, caps[k].s, caps[k].len, what,
						    &req->err);
			if (req->param[k] == NULL)
				return -1;
		}
		req->nparams = n;
		return 0;
	}
	if (!path_known)
		return cof_error(&req->err, COF_ENOTFOUND, "no such endpoint '%s'", url);
	set_allow(req, url);
	return cof_error(&req->err, COF_ENOTFOUND,
			 "method '%s' is not allowed on '%s'; allowed: %s", req->method,
			 url, req->allow ? req->allow : "");
}

/* The API key sent with the request, or NULL. */
static const char *request_key(http_req *req)
{
	const char *v = http_header(req, MHD_HTTP_HEADER_AUTHORIZATION);

	if (v != NULL) {
		while (*v == ' ')
			v++;
		if (strncasecmp(v, "Bearer ", 7) == 0) {
			v += 7;
			while (*v == ' ')
				v++;
			return *v ? v : NULL;
		}
	}
	v = http_header(req, "x-api-key");
	return (v != NULL && *v) ? v : NULL;
}

#define KEY_CACHE 4        /* keys whose SHA-256 a thread keeps */
#define KEY_CACHE_LEN 128  /* longest key kept */

/* SHA-256 (hex) of `key` into hash, from a per-thread cache of the last
 * KEY_CACHE keys: a client sends the same key with every request, and the
 * hash was 3-5% of a small GET. Only the hash is cached; the key's row is
 * still read every request, so a revocation holds at once. The key is
 * compared in constant time over the whole slot. 0, or -1 (not hashed). */
static int key_hash(const char *key, char hash[65])
{
	static _Thread_local struct {
		size_t len;
		char key[KEY_CACHE_LEN];
		char hash[65];
	} c[KEY_CACHE];
	static _Thread_local unsigned next;
	char probe[KEY_CACHE_LEN] = { 0 };
	size_t n = strlen(key);

	if (n == 0 || n > KEY_CACHE_LEN)
		return cof_sha256_hex(key, n, hash);
	memcpy(probe, key, n);
	for (unsigned i = 0; i < KEY_CACHE; i++)
		if (c[i].len == n && CRYPTO_memcmp(c[i].key, probe, KEY_CACHE_LEN) == 0) {
			memcpy(hash, c[i].hash, 65);
			return 0;
		}
	if (cof_sha256_hex(key, n, hash))
		return -1;
	unsigned slot = next++ % KEY_CACHE;
	memcpy(c[slot].key, probe, KEY_CACHE_LEN);
	memcpy(c[slot].hash, hash, 65);
	c[slot].len = n;
	return 0;
}

/* Authenticates when the route needs it. 0, or -1 with req->err (401/403). */
static int authenticate(http_req *req)
{
	const char *key;

	if (!(req->route->flags & HTTP_F_AUTH))
		return 0;
	key = request_key(req);
	if (key == NULL)
		return cof_error(&req->err, COF_EUNAUTHORIZED,
				 "missing API key: send 'Authorization: Bearer KEY' or 'x-api-key: KEY'");
	char hash[65];
	int hashed = key_hash(key, hash) == 0;
	if (hashed) {
		snprintf(req->key_id, sizeof req->key_id, "k_%.16s", hash);
		memcpy(req->key_hash, hash, sizeof req->key_hash);
	}
	if (cof_key_auth_hashed(req->srv->st, key, hashed ? hash : NULL, &req->who, &req->err))
		return -1;
	if (req->who.read_only && strcmp(req->method, "GET") && strcmp(req->method, "HEAD"))
		return cof_error(&req->err, COF_EFORBIDDEN,
				 "this key is read-only: it may only GET and HEAD, not %s",
				 req->method);
	if ((req->route->flags & HTTP_F_NOAGENT) && req->who.agent[0])
		return cof_error(&req->err, COF_EFORBIDDEN,
				 "this key is bound to agent '%s' and reaches only that agent",
				 req->who.agent);
	return http_rate_take(req->who.key_id, req->who.org, &req->err, &req->retry_after);
}

/* True when req's key is checked with its handler rather than on MHD's first
 * call: the file GET (its key read joins the handler's read transaction), and
 * on remote engines every route without a body, whose handler runs on a
 * worker, so that the key's round trip to PostgreSQL does not hold the event
 * loop either. A route with a body keeps the first-call check: a client that
 * sent Expect: 100-continue learns of a bad key before it sends the body. */
static int auth_late(const http_req *req)
{
	return (req->route->flags & HTTP_F_SNAPSHOT) ||
	       (req->srv->remote && req->route->body == HTTP_BODY_NONE &&
		!(req->route->flags & (HTTP_F_WAITS | HTTP_F_LOCAL)));
}

/* Everything done on MHD's first call: route, auth, header checks, limits. */
/* The per-address cap (--max-conns-per-ip) at a request: a connection
 * accepted past its address's cap is answered 503 with Retry-After and
 * closed; a request through a trusted proxy takes a place of its client's
 * address (X-Forwarded-For) for as long as it runs, 503 when there is none
 * (the proxy's connection carries others' requests and stays). 0, or -1
 * with the answer in req->err. */
static int address_cap(http_req *req)
{
	unsigned char peer[16];
	size_t ntrusted;
	const cof_cidr *trusted;
	char addr[64];

	if (http_conn_spilled(req->conn)) {
		req->close_after = 1;
		req->retry_after = 1;
		cof_error(&req->err, COF_EUNAVAILABLE,
			  "too many connections from this address at once (the limit is "
			  "--max-conns-per-ip %u); retry after 1 s", req->srv->max_conns_per_ip);
		return -1;
	}
	if (!http_conn_proxied(req->conn, peer))
		return 0;
	trusted = http_trusted_proxies(&ntrusted);
	cof_forwarded_client(MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND,
							 "X-Forwarded-For"),
			     peer, trusted, ntrusted, req->client_ip);
	if (http_client_take(req->client_ip)) {
		req->client_held = 1;
		return 0;
	}
	cof_addr_fmt(req->client_ip, addr, sizeof addr);
	req->retry_after = 1;
	cof_error(&req->err, COF_EUNAVAILABLE,
		  "too many requests at once from client %s (the limit is "
		  "--max-conns-per-ip %u); retry after 1 s", addr, req->srv->max_conns_per_ip);
	return -1;
}

static void req_begin(http_req *req, const char *url)
{
	int64_t clen;

	req->body.max = HTTP_JSON_MAX;
	if (route_find(req, url) || address_cap(req) ||
	    (!(req->auth_late = auth_late(req)) && authenticate(req))) {
		req->failed = 1;
		return;
	}
	clen = http_content_length(req);
	if (req->route->begin && req->route->begin(req)) {
		req->failed = 1;
		return;
	}
	if (is_json(req->route) && clen > (int64_t)req->body.max) {
		char size[32], max[32];
		cof_size_fmt(clen, size, sizeof(size));
		cof_size_fmt((int64_t)req->body.max, max, sizeof(max));
		cof_error(&req->err, COF_ETOOLARGE, "request body is %s; the limit for %s is %s",
			  size, req->route->body == HTTP_BODY_RAW ? "this body" : "a JSON body",
			  max);
		req->failed = 1;
	}
}

/* Takes one body chunk. After a failure the rest of the body is dropped. */
static void req_feed(http_req *req, const char *data, size_t len)
{
	if (req->failed)
		return;
	if (is_json(req->route)) {
		if (cof_buf_add(&req->body, data, len) == 0)
			return;
		if (req->body.len + len > req->body.max) {
			char max[32];
			cof_size_fmt((int64_t)req->body.max, max, sizeof(max));
			cof_error(&req->err, COF_ETOOLARGE, "request body is over %s; the limit "
				  "for %s is %s", max, req->route->body == HTTP_BODY_RAW
				  ? "this body" : "a JSON body", max);
		}
		else
			cof_error(&req->err, COF_EINTERNAL, "out of memory reading the body");
		cof_buf_release(&req->body);
		req->failed = 1;
	} else if (req->route->body == HTTP_BODY_STREAM && req->up != NULL) {
		if (cof_upload_write(req->up, data, len, &req->err) == 0)
			return;
		cof_upload_abort(req->up);
		req->up = NULL;
		req->failed = 1;
	}
}

/* Parses the buffered JSON body into req->json. 0, or -1 with req->err. */
static int parse_json(http_req *req)
{
	json_error_t jerr;

	if (req->route->body == HTTP_BODY_RAW)
		return 0; /* the handler reads req->body itself */
	if (req->body.len == 0)
		return 0; /* no body counts as {} */
	req->json = json_loadb(req->body.data, req->body.len, JSON_REJECT_DUPLICATES,
			       &jerr);
	cof_buf_release(&req->body);
	if (req->json == NULL)
		return cof_error(&req->err, COF_EVALIDATION,
				 "request body is not valid JSON: %s at line %d, column %d",
				 jerr.text, jerr.line, jerr.column);
	if (req->route->body == HTTP_BODY_JSON_ARRAY && !json_is_array(req->json))
		return cof_error(&req->err, COF_EVALIDATION,
				 "request body must be a JSON array");
	if (req->route->body == HTTP_BODY_JSON && !json_is_object(req->json))
		return cof_error(&req->err, COF_EVALIDATION,
				 "request body must be a JSON object");
	return 0;
}

/* Answers req->err, with the headers its status calls for. */
static enum MHD_Result answer_error(http_req *req)
{
	struct MHD_Response *resp;
	cof_code code = req->err.code == COF_OK ? COF_EINTERNAL : req->err.code;
	unsigned status = (unsigned)cof_code_status(code);

	if (req->retry_after > 0)
		return http_send_rate_limited(req, &req->err, req->retry_after);
	if (req->allow == NULL && code != COF_EUNAUTHORIZED)
		return http_send_error(req, &req->err);
	resp = http_error_response(req, &req->err);
	cof_err_clear(&req->err);
	if (resp == NULL)
		return MHD_NO;
	if (req->allow != NULL) {
		status = MHD_HTTP_METHOD_NOT_ALLOWED;
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, req->allow);
	}
	if (code == COF_EUNAUTHORIZED)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
	return http_queue(req, status, resp);
}

/* Runs a HTTP_F_SNAPSHOT route: its key check and every read its handler
 * makes on this thread in one read transaction of the store, so that a small
 * GET takes the store's locks once (on an event loop, within this one call:
 * no other request runs on the thread in between). */
static enum MHD_Result snapshot_handle(http_req *req)
{
	cof_meta *m = req->srv->st->meta;
	int held = cof_meta_read_hold(m);
	enum MHD_Result ret;

	if (authenticate(req)) {
		cof_meta_read_release(m, held);
		req->failed = 1;
		return answer_error(req);
	}
	ret = req->route->handle(req);
	cof_meta_read_release(m, held);
	return ret;
}

enum MHD_Result http_handle(http_req *req)
{
	if (req->route->flags & HTTP_F_SNAPSHOT)
		return snapshot_handle(req);
	if (req->auth_late && authenticate(req)) {
		req->failed = 1;
		return answer_error(req);
	}
	return req->route->handle(req);
}

#define RID_CHARS 20             /* random characters of a request id, as cof_id_new */
#define RID_POOL (RID_CHARS * 256)  /* random bytes fetched at once */

/* "req_" + RID_CHARS random base-32 characters into out, as cof_id_new makes
 * them, but from a per-thread pool of random bytes refilled 256 ids at a time:
 * one RAND_bytes (its locks, its fork check's getpid) a request was 2% of a
 * small GET. Ids must be unique, not secret; an event loop never forks. */
static void new_request_id(char *out, size_t outsz)
{
	static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz234567";
	static _Thread_local unsigned char pool[RID_POOL];
	static _Thread_local size_t used = RID_POOL;
	size_t o = 0;

	if (used + RID_CHARS > RID_POOL) {
		if (cof_random(pool, sizeof pool)) {
			cof_id_new("req_", out, outsz); /* it aborts without entropy */
			return;
		}
		used = 0;
	}
	for (const char *p = "req_"; *p && o + 1 < outsz; p++)
		out[o++] = *p;
	for (size_t i = 0; i < RID_CHARS && o + 1 < outsz; i++)
		out[o++] = alphabet[pool[used + i] & 31];
	out[o] = '\0';
	used += RID_CHARS;
}

/* The client's X-Request-Id when it is 1..128 printable ASCII bytes (so it can
 * be echoed and logged as it is), else a new one. */
static void request_id(http_req *req)
{
	const char *v = MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, "X-Request-Id");
	size_t n = v ? strlen(v) : 0;
	int sane = n >= 1 && n <= 128;

	for (size_t i = 0; sane && i < n; i++)
		sane = v[i] >= 0x20 && v[i] <= 0x7e;
	if (sane)
		memcpy(req->request_id, v, n + 1);
	else
		new_request_id(req->request_id, sizeof req->request_id);
}

/* Requests under way, for http_dump_in_flight at a stuck stop: kept on
 * LIVE_STRIPES lists, each thread adding to one of its own (round robin by
 * first use), so that the event loops never share a mutex per request. */
#define LIVE_STRIPES 16
static struct live_stripe {
	pthread_mutex_t mu;
	http_req *head;
} live[LIVE_STRIPES] = {
#define LIVE_INIT { PTHREAD_MUTEX_INITIALIZER, NULL }
	LIVE_INIT, LIVE_INIT, LIVE_INIT, LIVE_INIT, LIVE_INIT, LIVE_INIT, LIVE_INIT, LIVE_INIT,
	LIVE_INIT, LIVE_INIT, LIVE_INIT, LIVE_INIT, LIVE_INIT, LIVE_INIT, LIVE_INIT, LIVE_INIT,
#undef LIVE_INIT
};

static void live_add(http_req *req)
{
	static unsigned next_stripe;
	static _Thread_local int mine = -1;

	if (mine < 0)
		mine = (int)(__atomic_fetch_add(&next_stripe, 1, __ATOMIC_RELAXED) % LIVE_STRIPES);
	struct live_stripe *l = &live[mine];
	req->live_stripe = mine;
	pthread_mutex_lock(&l->mu);
	req->live_next = l->head;
	if (l->head)
		l->head->live_prev = req;
	l->head = req;
	pthread_mutex_unlock(&l->mu);
}

/* Takes req off its list (on whichever thread completes it). */
static void live_del(http_req *req)
{
	struct live_stripe *l = &live[req->live_stripe];

	pthread_mutex_lock(&l->mu);
	if (req->live_prev)
		req->live_prev->live_next = req->live_next;
	else
		l->head = req->live_next;
	if (req->live_next)
		req->live_next->live_prev = req->live_prev;
	pthread_mutex_unlock(&l->mu);
}

void http_dump_in_flight(void)
{
	for (int i = 0; i < LIVE_STRIPES; i++) {
		pthread_mutex_lock(&live[i].mu);
		for (http_req *r = live[i].head; r; r = r->live_next) {
			const union MHD_ConnectionInfo *ci = MHD_get_connection_info(
				r->conn, MHD_CONNECTION_INFO_CONNECTION_SUSPENDED);
			fprintf(stderr, "cofferd: still in flight: %s %s route=%s off_loop=%d "
				"suspended=%d armed=%d\n", r->method, r->url,
				r->route ? r->route->pattern : "-", r->off_loop,
				ci ? (int)ci->suspended : -1, r->wait.armed);
		}
		pthread_mutex_unlock(&live[i].mu);
	}
}

/* True when the body's Content-Length is known and fully in (then MHD goes on
 * to the final call without reading the socket again). */
static int body_complete(http_req *req)
{
	const char *v = MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND,
						    MHD_HTTP_HEADER_CONTENT_LENGTH);
	char *end;
	unsigned long long n;

	if (!v || !*v)
		return 0;
	errno = 0;
	n = strtoull(v, &end, 10);
	return errno == 0 && *end == '\0' && (unsigned long long)req->bytes_in >= n;
}

/* A client that sends part of a body and closes can leave the request under
 * way until the idle timeout: in epoll mode (edge-triggered) MHD 0.9.75 takes
 * a short read as "nothing more to read", so a FIN that came with the last
 * bytes raises no new event and is never read. Called with each piece of a
 * body: when the client's side is closed with nothing left unread (a peek
 * reads 0) and the body is not known to be complete, the connection is
 * suspended and resumed at once, since MHD marks a resumed connection
 * readable: it reads again, sees the end and aborts the request. */
static void kick_if_peer_closed(http_req *req)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(req->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	char b;

	if (!ci || recv(ci->connect_fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) != 0 ||
	    body_complete(req))
		return;
	MHD_suspend_connection(req->conn);
	http_resume(req->conn);
}

/* Requests released on this thread, kept for its next ones: MHD begins and
 * completes a request on its connection's event loop, and a small GET's
 * 5.7 KiB malloc (with the free lists it consolidated) and free were 2% of
 * its CPU. A thread's spares are freed when it ends. */
#define REQ_SPARES 4
typedef struct req_spares {
	int n;
	http_req *r[REQ_SPARES];
} req_spares;
static pthread_key_t spares_key;
static pthread_once_t spares_once = PTHREAD_ONCE_INIT;

static void spares_free(void *p)
{
	req_spares *sp = p;

	for (int i = 0; i < sp->n; i++)
		free(sp->r[i]);
	free(sp);
}

static void spares_init(void)
{
	(void)pthread_key_create(&spares_key, spares_free);
}

/* A zeroed request: a spare of this thread's, or a new one. */
static http_req *req_new(void)
{
	req_spares *sp;

	pthread_once(&spares_once, spares_init);
	sp = pthread_getspecific(spares_key);
	if (sp && sp->n > 0) {
		http_req *req = sp->r[--sp->n];
		memset(req, 0, sizeof *req);
		return req;
	}
	return cof_calloc(1, sizeof(http_req));
}

/* Frees req (released) or keeps it as a spare of this thread. */
static void req_free(http_req *req)
{
	req_spares *sp;

	pthread_once(&spares_once, spares_init);
	sp = pthread_getspecific(spares_key);
	if (!sp && (sp = calloc(1, sizeof *sp)) && pthread_setspecific(spares_key, sp)) {
		free(sp);
		sp = NULL;
	}
	if (sp && sp->n < REQ_SPARES) {
		sp->r[sp->n++] = req;
		return;
	}
	free(req);
}

enum MHD_Result http_access(void *cls, struct MHD_Connection *conn, const char *url,
			    const char *method, const char *version,
			    const char *upload_data, size_t *upload_data_size,
			    void **con_cls)
{
	http_server *srv = cls;
	http_req *req = *con_cls;

	(void)version;
	if (req == NULL) {
		cof_meta_pin_reader(); /* an event loop: it reads on every request */
		req = req_new();
		req->srv = srv;
		req->conn = conn;
		req->method = method;
		req->url = http_own(req, url, strlen(url));
		req->started_us = cof_mono_us();
		request_id(req);
		*con_cls = req;
		__atomic_add_fetch(&srv->in_flight, 1, __ATOMIC_SEQ_CST);
		live_add(req);
		req_begin(req, url);
		if (req->failed && http_expects_continue(req))
			return answer_error(req);
		return MHD_YES;
	}
	if (req->off_loop == HTTP_OFF_DONE)
		return http_unpark(req); /* a worker ran the handler */
	if (*upload_data_size != 0) {
		req->bytes_in += (int64_t)*upload_data_size;
		req_feed(req, upload_data, *upload_data_size);
		*upload_data_size = 0;
		kick_if_peer_closed(req);
		return MHD_YES;
	}
	if (!req->failed && is_json(req->route) && parse_json(req) &&
	    !(req->route->flags & HTTP_F_BADBODY))
		req->failed = 1;
	if (req->failed)
		return answer_error(req);
	/* A streamed body's handler can count on the upload its begin set up. */
	if (req->route->body == HTTP_BODY_STREAM && req->up == NULL)
		return http_send_fail(req, COF_EINTERNAL, "upload was not started");
	/* Whatever is not a GET writes (an fsync), runs a turn call or waits
	 * for a relay op, a GET that may be carried to another node waits for
	 * that node, a long GET computes for seconds (a conversation's images),
	 * and on remote engines every GET waits for PostgreSQL or S3: they run
	 * on a worker, not on an event-loop thread. A long-poll suspends itself
	 * (http_wait_on) and stays on the loop. */
	if (req->off_loop == HTTP_OFF_NO &&
	    (strcmp(req->route->method, "GET") != 0 ||
	     (req->route->flags & (HTTP_F_FORWARDS | HTTP_F_LONG)) ||
	     (srv->remote && !(req->route->flags & (HTTP_F_WAITS | HTTP_F_LOCAL)))) &&
	    http_run_off_loop(req) == 0)
		return MHD_YES;
	return http_handle(req);
}

void http_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
		    enum MHD_RequestTerminationCode toe)
{
	http_server *srv = cls;
	http_req *req = *con_cls;

	(void)conn;
	(void)toe;
	if (req == NULL)
		return;
	live_del(req);
	if (req->client_held)
		http_client_give(req->client_ip);
	http_log_request(req);
	http_metrics_request(req);
	http_req_release(req);
	req_free(req);
	*con_cls = NULL;
	__atomic_sub_fetch(&srv->in_flight, 1, __ATOMIC_SEQ_CST);
}
