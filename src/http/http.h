/*
 * http.h — internals of cofferd's HTTP layer, shared by the files of src/http only.
 *
 * One request is one http_req, made on MHD's first call for it and freed by the
 * completion callback. The router (router.c) matches the route, authenticates,
 * feeds the body (buffered JSON or streamed upload) and calls the route's
 * handler once the body is in; handlers answer with the http_send_* helpers.
 * An error met before the handler runs is kept in `req->err` and answered
 * once the body has been consumed, so the client always reads the JSON error.
 */
#ifndef COF_HTTP_H
#define COF_HTTP_H

#include <microhttpd.h>
#include <stdint.h>
#include "coffer.h"
#include "util/util.h"
#include "util/addr.h"


struct cof_topic;
struct cof_sub;

#define HTTP_JSON_MAX ((size_t)32 << 20)  /* JSON request bodies */
#define HTTP_MAX_PARAMS 4                 /* captures in one route pattern */
#define HTTP_MAX_LABELS 64                /* `label` query args on one call */

/* The event loops (evloops.c): one MHD daemon per loop thread, in MHD's
 * external epoll mode, all accepting on one listening socket. */
typedef struct http_evloops http_evloops;
typedef struct http_evloops_cfg {
	int listen_fd;                 /* owned by the loops from the start call */
	unsigned loops;                /* threads, one daemon each (0 = 1) */
	unsigned max_conns;            /* in all, split between the loops */
	unsigned max_conns_per_ip;     /* across all loops; 0 = no cap */
	const cof_cidr *trusted;       /* --trusted-proxy ranges (copied) */
	size_t ntrusted;
	unsigned conn_timeout;         /* seconds idle */
	size_t conn_memory, thread_stack;
	MHD_AccessHandlerCallback access;
	void *access_cls;
	MHD_NotifyConnectionCallback notify;
	void *notify_cls;
	MHD_RequestCompletedCallback completed;
	void *completed_cls;
	size_t (*unescape)(void *cls, struct MHD_Connection *conn, char *s);
} http_evloops_cfg;

/* Starts the loops; NULL with `err` (the listening socket then closed). */
http_evloops *http_evloops_start(const http_evloops_cfg *c, cof_err *err);
/* Stops accepting: every loop leaves the socket, which is then closed.
 * Connections open go on being served. */
void http_evloops_quiesce(http_evloops *l);
/* Connections open now, over all loops. */
unsigned http_evloops_connections(http_evloops *l);
/* The server's own socket context of `conn` (what its notify callback set
 * through the pointer it was given), or NULL. */
void *http_conn_context(struct MHD_Connection *conn);
/* 1 when `conn` came past its address's --max-conns-per-ip: it is answered
 * 503 with Retry-After and closed. */
int http_conn_spilled(struct MHD_Connection *conn);
/* 1 when `conn` came from a --trusted-proxy address (given in peer): its
 * requests are counted per client address (http_client_take). */
int http_conn_proxied(struct MHD_Connection *conn, unsigned char peer[16]);
/* Takes a place for one request of client address `ip` under the
 * per-address cap: 1, or 0 when the address is at its cap. Any thread. */
int http_client_take(const unsigned char ip[16]);
/* Gives back a place taken by http_client_take. */
void http_client_give(const unsigned char ip[16]);
/* The --trusted-proxy ranges of the running loops (*n of them). */
const cof_cidr *http_trusted_proxies(size_t *n);
/* MHD_resume_connection, then wakes the loop that owns `conn` (MHD's
 * external mode has no ITC of its own): every resume goes through here.
 * Any thread. */
void http_resume(struct MHD_Connection *conn);
/* Closes an upgraded connection's socket (MHD_upgrade_action) and wakes
 * the loop of daemon `d` (NULL: none known), which then cleans it up. Any
 * thread. */
void http_upgrade_close(struct MHD_UpgradeResponseHandle *urh, struct MHD_Daemon *d);
/* Ends the loop threads, then stops every daemon (no connection may be
 * suspended: http_loop_stop first) and frees `l`. NULL is a no-op. */
void http_evloops_stop(http_evloops *l);

/* Server-wide state; one per cofferd_main. */
typedef struct http_server {
	cof_store *st;
	cof_turns *turns;

	cof_relay *relay;        /* relay sessions (in memory) */
	http_evloops *loops;      /* the HTTP event loops */
	char host[300];          /* listen address as printed (IPv6 in brackets) */
	unsigned port;
	int stopping;            /* set on SIGTERM: long-polls stop waiting */
	int in_flight;           /* requests between first call and completion */
	unsigned max_conns_per_ip; /* for the 503's message (evloops.c enforces it) */
	int remote;              /* metadata or blobs on another host (PostgreSQL, S3):
				  * every read is a round trip, so GETs run on workers */
} http_server;

typedef enum http_body {
	HTTP_BODY_NONE = 0,  /* any body is read and dropped */
	HTTP_BODY_JSON,      /* buffered up to HTTP_JSON_MAX, parsed, must be an object */
	HTTP_BODY_JSON_ARRAY, /* the same, but must be an array */
	HTTP_BODY_STREAM,    /* fed chunk by chunk to req->up (route->begin sets it up) */
	HTTP_BODY_RAW        /* buffered in req->body up to req->body.max (route->begin
			      * sets it; else HTTP_JSON_MAX), not parsed */
} http_body;

/* Route flags. */
#define HTTP_F_AUTH    1u  /* needs an API key */
#define HTTP_F_NOAGENT 2u  /* a key bound to an agent gets 403 */
#define HTTP_F_BADBODY 4u  /* a JSON body that does not parse still reaches the
			    * handler: req->json NULL, req->err saying why */
#define HTTP_F_LONG    8u  /* the handler may wait or compute long (a turn call, a
			    * relay op, a conversation's images): it runs on the
			    * workers' second lane (loop.c), a GET too */
#define HTTP_F_FORWARDS 16u /* a GET that may be carried to another node (forward.c):
			    * a node-to-node call blocks, so it runs on a worker, not
			    * on an event loop */
#define HTTP_F_SNAPSHOT 32u /* a GET whose key check and reads are one read
			    * transaction of the store (cof_meta_read_hold): the key
			    * is checked on MHD's last call, with the handler */
#define HTTP_F_WAITS  64u /* the handler itself may suspend on http_wait_on (a
			    * long-poll): it runs on the loop even on remote engines */
#define HTTP_F_LOCAL  128u /* answered from memory, never the store (health,
			    * the OpenAPI file, the console): on the loop even on
			    * remote engines, where a worker would only add a hop */

typedef struct http_req http_req;

/* A wait of a suspended connection (loop.c): owned by the one waiting, who
 * leaves it alone until the connection runs again. */
typedef struct http_wait {
	struct MHD_Connection *conn;
	int fd, hup_fd;          /* readable / hung up ends the wait; -1 none */
	int64_t deadline;        /* cof_mono_ms(); 0 = none */
	size_t slot;             /* index + 1 in the deadline heap; 0 = not in it */
	int armed;
	struct http_wait *next, *all_prev, *all_next;
} http_wait;

/* Where a request's handler stands with the worker pool (req->off_loop). */
enum { HTTP_OFF_NO = 0, HTTP_OFF_RUNNING, HTTP_OFF_DONE, HTTP_OFF_ANSWERED };

typedef struct http_route {
	const char *method;      /* "GET" also serves HEAD */
	const char *pattern;     /* "/v1/volumes/{}/files/{+}": {} one segment, {+} the rest */
	unsigned flags;
	http_body body;
	/* Optional, on the first call after auth: check headers, set up req->up.
	 * Returns 0, or -1 with req->err filled. */
	int (*begin)(http_req *req);
	/* Once the whole body is in: must queue exactly one response. */
	enum MHD_Result (*handle)(http_req *req);
} http_route;

struct http_req {
	http_server *srv;
	struct MHD_Connection *conn;
	const char *method;
	const char *url;               /* the path as sent (in `owned`) */
	const http_route *route;
	char *param[HTTP_MAX_PARAMS];  /* decoded captures (in `owned`) */
	int nparams;
	char *allow;                   /* Allow header of a 405 (in `owned`) */
	cof_principal who;
	char request_id[130];          /* X-Request-Id: the client's when sane, else ours */
	char key_id[24];               /* "k_" + 16 hex of the key's SHA-256, or "" */
	char key_hash[65];             /* the key's SHA-256 (hex), or "" */
	unsigned status;               /* of the answer queued; 0 = none yet */
	int64_t started_us, bytes_in, bytes_out; /* for the request log */
	int failed;                    /* err holds an answer to give */
	cof_err err;
	cof_buf body;                  /* HTTP_BODY_JSON bytes */
	json_t *json;                  /* parsed body or NULL (= {}) */
	cof_upload *up;                /* HTTP_BODY_STREAM target */
	cof_cond cond;                 /* write precondition (file PUT) */
	cof_by by;                     /* who writes (http_by); points into `who` */
	char *content_type;            /* trimmed Content-Type or NULL, owned */
	cof_link link;                 /* verified signed link (/l/ routes) */
	int retry_after;               /* a 429 or 503: Retry-After seconds */
	int close_after;               /* answer with Connection: close */
	int client_held;               /* holds a place of client_ip (http_client_take) */
	unsigned char client_ip[16];   /* behind a trusted proxy: X-Forwarded-For's client */
	char **owned;                  /* strings freed with the request */
	size_t nowned, capowned;
	/* loop.c: a handler on the worker pool parks its answer here */
	int off_loop;                  /* HTTP_OFF_* */
	int auth_late;                 /* the key is checked with the handler (http_handle) */
	int parking;                   /* http_queue parks instead of queueing */
	struct http_req *job_next;
	struct lane_org *job_org;      /* loop.c: the long lane's organization */
	struct MHD_Response *park_resp;
	unsigned park_status;
	enum MHD_Result park_ret;
	/* loop.c: a long-poll's subscription, deadline and wait */
	struct cof_sub *sub;
	int64_t wait_until;
	http_wait wait;
	struct http_req *live_prev, *live_next; /* router.c: requests under way */
	int live_stripe;                /* which of router.c's lists */
};

/* ---- ratelimit.c: --rate-limit N requests a second per key (burst 2N),
 * --rate-limit-org M per organization */

/* Sets the limits (0 = none; org_per_second 0 = per_second); once, before
 * serving. */
void http_rate_configure(int64_t per_second, int64_t org_per_second);
/* Takes one request of key `key_id` of organization `org` from both their
 * buckets (key_id "" or NULL: not limited): 0, or -1 with COF_ERATELIMIT in
 * err and *retry_after in whole seconds (>= 1). */
int http_rate_take(const char *key_id, const char *org, cof_err *err, int *retry_after);
/* Requests refused so far. */
int64_t http_rate_limited_count(void);
/* Answers err (a 429, or a 503 past the per-address cap) with Retry-After
 * (and Connection: close when req->close_after). */
enum MHD_Result http_send_rate_limited(http_req *req, cof_err *err, int retry_after);

/* ---- keywatch.c: a stream or socket of a revoked or expired key ends (issue 32.8) */

#define HTTP_KEY_REVOKED 1
#define HTTP_KEY_EXPIRED 2
/* A stream that holds its key wakes at least this often to look at it. */
#define HTTP_KEYWATCH_WAKE_MS 500
typedef struct http_keyhold http_keyhold;
/* Holds the key of authenticated request req for a stream that outlives it;
 * NULL when the request has no key (nothing to watch). */
http_keyhold *http_key_hold(http_req *req);
/* The same for a key given as its SHA-256 (hex) and the principal it
 * authenticated (a Socket.IO agent's socket, socketio.c). */
http_keyhold *http_key_hold_key(cof_store *st, const char *hash, const cof_principal *who);
/* 0 while the key is live; else HTTP_KEY_REVOKED or HTTP_KEY_EXPIRED, with
 * the end's message in msg (when not NULL). NULL-safe. */
int http_key_ended(http_keyhold *h, char *msg, size_t msgsz);
/* Ends a hold; NULL-safe. */
void http_key_release(http_keyhold *h);
/* Appends the `error` event that ends a stream whose key ended: 1 then, else
 * 0 (an agent's events, a relay session's events). */
int http_sse_key_end(http_keyhold *key, cof_buf *buf);
/* True when fd is readable now (loop.c). */
int http_fd_ready(int fd);
/* Stops the watching thread (at shutdown, once no stream is left). */
void http_keywatch_stop(void);

/* ---- server.c: a second listener beside the API's (--metrics-listen, --s3-listen) */
struct addrinfo;
/* Resolves HOST:PORT (numeric port) into *res (freeaddrinfo it); 0, or -1 with
 * "cofferd: FLAG: cannot resolve ..." printed. */
int http_side_resolve(const char *flag, const char *host, const char *port,
		      struct addrinfo **res);
/* After MHD_start_daemon(d): -1 with "cofferd: FLAG: cannot listen on ..." printed
 * when d is NULL, else 0 with "cofferd WHAT on http://HOST:PORTPATH" on stdout. */
int http_side_started(struct MHD_Daemon *d, const char *flag, const char *what,
		      const char *host, const char *port, const char *path);

/* ---- metrics.c: GET /metrics */

/* Counts a finished request (called once per request, with the log line). */
void http_metrics_request(const http_req *req);
/* GET /metrics on the API address: a key of the admin's organization. */
enum MHD_Result http_metrics(http_req *req);
/* --metrics-listen HOST:PORT: a second, unauthenticated address serving only
 * GET /metrics. 0, or -1 (printed). */
int http_metrics_listen(http_server *srv, const char *host, const char *port);
void http_metrics_listen_stop(void);

/* ---- s3.c: --s3-listen HOST:PORT, the S3 gateway (API.md "S3 gateway") */
/* Starts its daemon (printed on stdout). 0, or -1 (printed). */
int http_s3_listen(http_server *srv, const char *host, const char *port);
void http_s3_stop(void);

/* ---- config.c: cofferd --config FILE */

/* When argv has --config FILE: *out_argv (free with http_config_free) holds
 * argv[0], FILE's flags, then argv's own (so they win); else argv itself.
 * Returns -1 to go on, or the exit code (2, message printed). */
int http_config_args(int argc, char **argv, int *out_argc, char ***out_argv);
void http_config_free(int argc, char **argv);

/* ---- router.c: the route table, for metrics */
size_t http_route_count(void);
const http_route *http_route_at(size_t i);

/* ---- request.c: reading the request */

/* Hands the request's upload (set by a stream route's begin; never NULL in its
 * handler) to the caller, who must consume it. */
cof_upload *http_take_upload(http_req *req);
/* Header value or NULL. */
const char *http_header(http_req *req, const char *name);
/* Percent-decodes `in` (len bytes) into a new string owned by `req`. Refuses
 * `%00`, a bad `%` escape and invalid UTF-8 with COF_EVALIDATION naming `what`.
 * Returns the string or NULL (err filled). */
char *http_decode(http_req *req, const char *in, size_t len, const char *what,
		  cof_err *err);
/* Decoded query arg `name` into *out (NULL when absent). 0, or -1 with err. */
int http_query(http_req *req, const char *name, const char **out, cof_err *err);
/* Integer query arg in [min, max]; *out untouched when absent. */
int http_query_int(http_req *req, const char *name, int64_t min, int64_t max,
		   int64_t *out, cof_err *err);
/* Boolean query arg: true/false/1/0 (absent = dflt). */
int http_query_bool(http_req *req, const char *name, int dflt, int *out,
		    cof_err *err);
/* Every value of a repeated query arg, decoded, at most `max`. */
int http_query_all(http_req *req, const char *name, const char **vals,
		   size_t max, size_t *n, cof_err *err);
/* Copies `s` (len bytes) into a string owned by `req`; NULL when out of memory. */
char *http_own(http_req *req, const char *s, size_t len);
/* A header's value without surrounding white space, owned by `req`;
 * NULL when absent or empty. */
char *http_header_trim(http_req *req, const char *name);
/* True when the client sent `Expect: 100-continue` and so waits before the body. */
int http_expects_continue(http_req *req);
/* Declared Content-Length, or -1 when absent (chunked). */
int64_t http_content_length(http_req *req);
/* The request's Idempotency-Key (trimmed) with a hash of its method, path and
 * body (the JSON body canonical: keys sorted, compact), filled into the
 * caller's `idem` and `hash`; NULL when the request has no key. */
const cof_idem *http_idem(http_req *req, cof_idem *idem, char hash[65]);
/* Releases everything the request owns (not the struct). */
void http_req_release(http_req *req);

/* ---- loop.c: waiting without a thread (see its header comment) */

/* Suspends `conn` until `fd` is readable, `hup_fd` (its socket, or -1) hangs
 * up, or cof_mono_ms() reaches `deadline_ms` (0 = no deadline); MHD then
 * calls the handler or content reader again. Call only from MHD's access
 * handler or a content reader, which then returns (a reader returns 0).
 * Returns 0, or -1 when it cannot wait (the server is stopping, or out of
 * memory or descriptors): the caller answers now. */
int http_wait_on(http_wait *w, struct MHD_Connection *conn, int fd, int hup_fd,
		 int64_t deadline_ms);
/* Reads an eventfd empty (before looking at what it signals). */
void http_drain_fd(int fd);
/* True when the client on socket `fd` hung up (closed its side, or the socket
 * failed); never blocks, consumes nothing. */
int http_peer_gone(int fd);
/* Subscribes the request to `topics` (once; freed with the request). 0 or -1. */
int http_subscribe(http_req *req, const struct cof_topic *topics, size_t n, cof_err *err);
/* The request's subscription's fd, or -1. */
int http_sub_fd(http_req *req);
/* Runs req->route->handle on the worker pool with the connection suspended.
 * 0, or -1 (stopping) when the caller should run it here. */
int http_run_off_loop(http_req *req);
/* Runs req's handler, checking its key first when that was left to the
 * handler's call (req->auth_late): on whichever thread runs the handler. */
enum MHD_Result http_handle(http_req *req);
/* Prints every request still under way to stderr (the stop's drain). */
void http_dump_in_flight(void);
/* Queues the answer a worker parked (on MHD's next call after the resume). */
enum MHD_Result http_unpark(http_req *req);
/* Starts the watcher and `workers` worker threads a lane. The second lane
 * (turn calls, relay ops: HTTP_F_LONG) takes turns between organizations
 * (and, in one, between turns and relay sessions), runs at most
 * `per_org` of one organization at once, and grows past `workers` (up to
 * 4 x workers threads) when a request whose organization is under its cap
 * finds no idle worker: one organization's long calls never make another's
 * wait for them (docs/design.md, "The HTTP server's threads"). 0 or -1. */
int http_loop_start(int workers, int per_org, cof_err *err);
/* Resumes every wait now and refuses new ones (the server is stopping). */
void http_loop_wake_all(void);
/* Joins the workers (each ends its job) and the watcher. */
void http_loop_stop(void);

/* ---- respond.c: answering (each queues one response and returns MHD's result) */

/* Sends `body` (stolen; NULL = no body) as JSON with `status`. */
enum MHD_Result http_send_json(http_req *req, unsigned status, json_t *body);
/* Sends JSON already written as text; takes ownership of `text` (malloc'd). */
enum MHD_Result http_send_json_text(http_req *req, unsigned status, char *text, size_t len);
/* Same, adding `name: value` headers from a NULL-terminated list of pairs. */
enum MHD_Result http_send_json_h(http_req *req, unsigned status, json_t *body,
				 const char *const *headers);
/* Sends `err` as {"error":{type, message, ...extra}} and clears it. */
enum MHD_Result http_send_error(http_req *req, cof_err *err);
/* Formats and sends an error in one step. */
enum MHD_Result http_send_fail(http_req *req, cof_code code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The common ending of a handler: `out` (stolen) with `status` when rc == 0,
 * else `err`. */
enum MHD_Result http_reply(http_req *req, int rc, unsigned status, json_t *out,
			   cof_err *err);
/* An empty answer (204, 304...). */
enum MHD_Result http_send_empty(http_req *req, unsigned status);
/* Queues `resp` with `status` and drops our reference to it. */
enum MHD_Result http_queue(http_req *req, unsigned status, struct MHD_Response *resp);

/* ---- forward.c: the node-to-node path (docs/design.md, "Across nodes") */
/* Registers this node (`node` NULL or "": one node, nothing to do) at `url`
 * and keeps its heartbeat. 0 or -1. */
int http_nodes_start(http_server *srv, const char *node, const char *url);
void http_nodes_stop(void);
/* When `why` names another node (extra "node") and the request was not
 * forwarded already: carries it there (or answers 410 when that node is
 * gone), sets *res and returns 1. Else 0: answer `why` as it is. */
int http_forward(http_req *req, const cof_err *why, enum MHD_Result *res);
/* The same for a relay call made here by a Socket.IO client (socketio.c):
 * when `err` names another node, `method` /v1/relay/sessions/{uid}{tail}
 * with `body` (NULL: none) and `key` as the caller's Authorization is
 * carried there as the HTTP route's call would be, and 1 is returned with
 * the holder's answer: *out (a 2xx), or NULL and `err` replaced by its
 * error (or by why it could not be reached). Else 0: `err` stands. */
int http_forward_relay(cof_err *err, const char *key, const char *method, const char *uid,
		       const char *tail, const json_t *body, json_t **out);
/* ---- carry.c: a forwarded request's transfer, streamed both ways */
/* At most `max_transfers` carried at once (--forward-max; before start). */
void http_carry_configure(int max_transfers);
/* Starts the carrier thread of node `node`. 0 or -1. */
int http_carry_start(const char *node);
/* Transfers under way now (for /metrics). */
int http_carry_live(void);
/* Ends every transfer under way and the carrier. */
void http_carry_stop(void);
/* Carries req to node `node` at `url` and queues its answer as it comes
 * (on a worker: it waits for the holding node's status and headers). */
enum MHD_Result http_carry(http_req *req, const char *node, const char *url);
/* One call carried to node `node` at `url` with its answer taken whole (a
 * worker waits for it; at most CARRY_CALL_MAX bytes): `method` `target`
 * with `body` (NULL: none), `key` as Authorization. 0 with *out the JSON
 * of a 2xx answer, or -1 with err (the holder's error as it answered it). */
int http_carry_call(const char *node, const char *url, const char *method, const char *target,
		    const char *key, const json_t *body, json_t **out, cof_err *err);
/* Answers 200 with a Server-Sent Events stream produced by `reader` in blocks of
 * `block` bytes. `free_cls` releases `cls` when the stream ends, and also here
 * when the answer cannot be made (500). */
enum MHD_Result http_send_events(http_req *req, size_t block,
				 MHD_ContentReaderCallback reader, void *cls,
				 MHD_ContentReaderFreeCallback free_cls);
/* The JSON error body for `err` (for callers that add headers themselves). */
struct MHD_Response *http_error_response(http_req *req, const cof_err *err);

/* ---- files.c: serving file bytes (volume files and GET links) */

/* Answers GET/HEAD for an open file: 200, 206, 304, 412 or 416 with the
 * download headers; `name` (a path: its last segment is the file's name) goes
 * into Content-Disposition. Closes `f` in every case. */
enum MHD_Result http_serve_file(http_req *req, cof_file *f, const char *name);
/* The Content-Disposition value `disp` ("inline"/"attachment") naming the last
 * segment of `path` (RFC 6266 and 8187) in `out`; "" when there is no name. */
void http_disposition(const char *disp, const char *path, char *out, size_t outsz);
/* True when an If-Match / If-None-Match list names `etag` or is `*`; weak_ok 1
 * compares weakly (If-None-Match), 0 strongly (If-Match). */
int http_etag_listed(const char *list, const char *etag, int weak_ok);

/* ---- routes: the handlers, one group per file */
int http_begin_file_put(http_req *req);
enum MHD_Result http_file_put(http_req *req);
enum MHD_Result http_file_get(http_req *req);
/* Answers a committed put: 201 when the file is new, else 200; ETag set. */
enum MHD_Result http_put_answer(http_req *req, int rc, json_t *out, int created, cof_err *err);
/* Reads Content-Type for a file body (curl's form default counts as none)
 * into req->content_type. 0, or -1 with req->err (400) when it is not one
 * valid media type. */
int http_body_type(http_req *req);

/* ---- agents.c */
/* 0 when the caller's key may act on agent param[0] (and its subjects); else
 * err is 403. */
int http_agent_allowed(http_req *req, cof_err *err);
/* The same check for agent `agent`: 0, or -1 with err (403). */
int http_agent_reaches(http_req *req, const char *agent, cof_err *err);
/* Runs one of an agent's file tools for the request's key, in its
 * organization, with every check of POST /v1/agents/{id}/tools/{tool} (whose
 * handler it is; /mcp calls it too): 0 with *out {ok, output, ...}, or -1
 * with err. `subject` NULL = none. */
int http_agent_tool_run(http_req *req, const char *agent, const char *subject,
			const char *tool, json_t *args, const char *run, const char *scope,
			json_t **out, cof_err *err);
/* The same for seed 003's toolset, POST /v1/agents/{a}/users/{s}/tools/{tool}
 * (subjects.c). */
int http_subject_tool_run(http_req *req, const char *agent, const char *subject,
			  const char *tool, json_t *args, const char *run, json_t **out,
			  cof_err *err);
/* First call of a raw body PUT under an agent: access, Content-Type, and the
 * upload (max_bytes 0 = none). */
int http_agent_begin_body(http_req *req, int64_t max_bytes);
enum MHD_Result http_agent_put(http_req *req);
enum MHD_Result http_agent_get(http_req *req);
enum MHD_Result http_agent_list(http_req *req);
enum MHD_Result http_agent_delete(http_req *req);
enum MHD_Result http_agent_mounts(http_req *req);
enum MHD_Result http_agent_files_list(http_req *req);
enum MHD_Result http_agent_file_get(http_req *req);
int http_begin_agent_file_put(http_req *req);
enum MHD_Result http_agent_file_put(http_req *req);
enum MHD_Result http_agent_file_delete(http_req *req);
enum MHD_Result http_agent_tool(http_req *req);
enum MHD_Result http_agent_run(http_req *req);
enum MHD_Result http_agent_events(http_req *req);
enum MHD_Result http_agent_link(http_req *req);
enum MHD_Result http_agent_prompt(http_req *req);
enum MHD_Result http_agent_resolve(http_req *req);
enum MHD_Result http_agent_conversation(http_req *req);
/* Rewrites out.url ("/l/TOKEN") as http://HOST/l/TOKEN (links.c). 0 or -1. */
int http_absolute_url(http_req *req, json_t *out);
/* "http://HOST" as the client reached us (links.c), for URLs made later in a
 * stream; cut to fit `outsz`. */
void http_base_url(http_req *req, char *out, size_t outsz);
int http_begin_agent_upload(http_req *req);
enum MHD_Result http_agent_upload(http_req *req);
int http_begin_agent_tool_output(http_req *req);
enum MHD_Result http_agent_tool_output(http_req *req);
enum MHD_Result http_file_delete(http_req *req);

/* ---- subjects.c: subject workspaces and agent skills */
enum MHD_Result http_subject_file_put(http_req *req);
enum MHD_Result http_subject_files_list(http_req *req);
enum MHD_Result http_subject_file_get(http_req *req);
enum MHD_Result http_subject_file_move(http_req *req);
enum MHD_Result http_subject_file_delete(http_req *req);
enum MHD_Result http_subject_volume(http_req *req);
int http_begin_subject_memory_put(http_req *req);
enum MHD_Result http_subject_memory_put(http_req *req);
enum MHD_Result http_subject_memory_get(http_req *req);
int http_begin_agent_skill_put(http_req *req);
enum MHD_Result http_agent_skill_put(http_req *req);
enum MHD_Result http_subject_session(http_req *req);
enum MHD_Result http_subject_tool(http_req *req);

/* ---- mcp.c: MCP over Streamable HTTP at /mcp */
enum MHD_Result http_mcp_post(http_req *req);
enum MHD_Result http_mcp_delete(http_req *req);
enum MHD_Result http_mcp_get(http_req *req);
/* Ends every MCP session (a server stop). */
void http_mcp_stop(void);
enum MHD_Result http_subject_approve(http_req *req);
enum MHD_Result http_subject_prewarm(http_req *req);
enum MHD_Result http_subject_approvals(http_req *req);

/* ---- turns.c: turns and their confined calls */
enum MHD_Result http_turn_create(http_req *req);
enum MHD_Result http_turn_get(http_req *req);
enum MHD_Result http_turn_delete(http_req *req);
enum MHD_Result http_turn_call(http_req *req);
enum MHD_Result http_turn_file(http_req *req);
/* Waits for every streamed call's thread to end (before turns close). */
void http_turn_streams_wait(void);

/* ---- relay.c: relay sessions (agent side with an API key; the client's
 * calls with the session's connect token, so their routes need no key) */
enum MHD_Result http_relay_create(http_req *req);
enum MHD_Result http_relay_list(http_req *req);
enum MHD_Result http_relay_get(http_req *req);
enum MHD_Result http_relay_delete(http_req *req);
enum MHD_Result http_relay_abort(http_req *req);
enum MHD_Result http_relay_op(http_req *req);
enum MHD_Result http_relay_op_get(http_req *req);
enum MHD_Result http_relay_events(http_req *req);
enum MHD_Result http_relay_log(http_req *req);
enum MHD_Result http_relay_connect(http_req *req);
enum MHD_Result http_relay_result(http_req *req);
enum MHD_Result http_relay_client_event(http_req *req);

/* ---- socketio.c: the relay as Socket.IO at /socket.io/ (namespace /jailbox) */
/* Starts its hub thread; before the loops serve. 0 or -1. */
int http_sio_start(http_server *srv, cof_err *err);
/* Closes every Socket.IO session and joins its threads (after
 * cof_relay_shutdown, while the event loops still run). */
void http_sio_stop(void);
enum MHD_Result http_sio_get(http_req *req);
int http_sio_begin_post(http_req *req);
enum MHD_Result http_sio_post(http_req *req);

/* ---- webhooks.c */
enum MHD_Result http_webhook_create(http_req *req);
enum MHD_Result http_webhook_list(http_req *req);
enum MHD_Result http_webhook_get(http_req *req);
enum MHD_Result http_webhook_patch(http_req *req);
enum MHD_Result http_webhook_delete(http_req *req);
enum MHD_Result http_webhook_deliveries(http_req *req);
enum MHD_Result http_webhook_redeliver(http_req *req);

enum MHD_Result http_keys_create(http_req *req);
enum MHD_Result http_keys_list(http_req *req);
enum MHD_Result http_keys_revoke(http_req *req);
enum MHD_Result http_volume_create(http_req *req);
enum MHD_Result http_volume_get_many(http_req *req);
enum MHD_Result http_volume_get(http_req *req);
enum MHD_Result http_volume_delete(http_req *req);
enum MHD_Result http_files_list(http_req *req);
/* The read-all branch of http_files_list (readall.c): streamed. */
enum MHD_Result http_read_all(http_req *req, const cof_list_opts *o);
enum MHD_Result http_changes(http_req *req);
enum MHD_Result http_history(http_req *req);
enum MHD_Result http_revert(http_req *req);
enum MHD_Result http_move(http_req *req);

enum MHD_Result http_snapshot_create(http_req *req);
enum MHD_Result http_snapshot_list(http_req *req);
enum MHD_Result http_snapshot_get(http_req *req);
enum MHD_Result http_snapshot_patch(http_req *req);
enum MHD_Result http_snapshot_delete(http_req *req);
enum MHD_Result http_fork(http_req *req);
enum MHD_Result http_restore(http_req *req);
enum MHD_Result http_merge(http_req *req);
enum MHD_Result http_archive(http_req *req);

enum MHD_Result http_link_create(http_req *req);
enum MHD_Result http_link_get(http_req *req);
int http_begin_link_put(http_req *req);
enum MHD_Result http_link_put(http_req *req);
enum MHD_Result http_health(http_req *req);
/* openapi.c: GET /v1/openapi.json */
enum MHD_Result http_openapi(http_req *req);
/* console.c: the web console's page and files (no key) */
enum MHD_Result http_console(http_req *req);
enum MHD_Result http_console_file(http_req *req);
/* The console's security headers (CSP, nosniff, no framing, no referrer): on its
 * files and on every error answered under /console. */
void http_console_headers(struct MHD_Response *resp);

/* ---- router.c: what server.c hands to MHD */
enum MHD_Result http_access(void *cls, struct MHD_Connection *conn, const char *url,
			    const char *method, const char *version,
			    const char *upload_data, size_t *upload_data_size,
			    void **con_cls);
void http_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
		    enum MHD_RequestTerminationCode toe);
/* MHD's unescaper, made a no-op: the router decodes paths and args itself so
 * that `%00` is refused rather than cutting the string short. */
size_t http_unescape_none(void *cls, struct MHD_Connection *conn, char *s);

/* A body of unknown size from `reader` (freed by `free_cls` with the
 * response; when this fails, NULL, `cls` is still the caller's), its bytes
 * counted for the request log. */
struct MHD_Response *http_stream_response(http_req *req, size_t block,
					  MHD_ContentReaderCallback reader, void *cls,
					  MHD_ContentReaderFreeCallback free_cls);
/* The request log (reqlog.c): `path` NULL keeps stderr. 0 or -1 (said why). */
int http_log_open(const char *path);
/* SIGHUP: the log file is opened again under its name (logrotate moved it). */
void http_log_reopen(void);
/* One line for a request that completed. */
void http_log_request(const http_req *req);
/* MHD_OPTION_EXTERNAL_LOGGER: libmicrohttpd's own messages as log lines
 * {time, level:"warn", source:"libmicrohttpd", message} (stderr when --log none). */
void http_log_mhd(void *cls, const char *fmt, va_list ap);
/* Counts `n` bytes of body sent (or to be sent) for the request log. */
static inline void http_count_out(http_req *req, int64_t n)
{
	if (n > 0)
		req->bytes_out += n;
}

/* Who a write of this request is by (API.md "Who"): the principal's key
 * and agent, `via` as given ("http" becomes "console" for a request with
 * X-Coffer-Client: console). Kept in req->by; valid while req is. */
const cof_by *http_by(http_req *req, const char *via);

#endif /* COF_HTTP_H */
