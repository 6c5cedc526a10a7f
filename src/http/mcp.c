/*
 * mcp.c — /mcp: an agent's file tools over MCP's Streamable HTTP transport
 * (spec 2025-06-18), the protocol being the library's (src/agent/mcp.c).
 *
 *   POST /mcp?agent=ID[&user=S]  one JSON-RPC message (or a batch, for older
 *        clients) -> 200 application/json with the answer, 202 when none is
 *        due (notifications, responses). `initialize` makes a session and
 *        answers its id in Mcp-Session-Id; every later POST must send it
 *        (missing: 400; unknown, ended or expired: 404, the spec's signal to
 *        initialize again).
 *   DELETE /mcp  ends the session named by Mcp-Session-Id (204).
 *   GET /mcp     the session's stream of server messages (text/event-stream):
 *        `notifications/tools/list_changed` when the tools it would list
 *        change (a relay session of the agent connects or ends). One stream
 *        per session: a newer GET ends the older one; DELETE ends it too.
 *        A waiting stream is a suspended connection woken by the agent's
 *        notify topic (the relay publishes on it at each status change),
 *        never a parked thread.
 *
 * The API key is the bearer token (the router answers 401 with
 * WWW-Authenticate: Bearer without one); a key bound to an agent needs no
 * `agent`. Tools run in the key's organization through the handlers' own
 * helpers (http_agent_tool_run, http_subject_tool_run): the checks are those
 * of POST /v1/agents/{id}/tools/{tool}. A session belongs to the key that
 * made it and to its agent and subject: another key, agent or subject gets
 * 404 for it.
 *
 * Against DNS rebinding (a web page whose name resolves to this host): a
 * request with an Origin of another host is refused (403), and when cofferd
 * listens on a loopback address, a request straight from a client (not
 * through a --trusted-proxy) must name a loopback host in Host.
 *
 * Sessions are bounded: MCP_SESSIONS_PER_KEY live sessions per key (a new one
 * past that ends the key's least recently used), MCP_SESSIONS_MAX in all
 * (past that, initialize is refused with 503), and a session idle for
 * MCP_IDLE_MS ends. They live in memory: a restart ends them.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "http/http.h"
#include "agent/mcp.h"
#include "store/notify.h"

#define MCP_SESSIONS_PER_KEY 32
#define MCP_SESSIONS_MAX 10000
#define MCP_IDLE_MS (30 * 60 * 1000)
#define MCP_SESSION_HDR "Mcp-Session-Id"
#define MCP_VERSION_HDR "MCP-Protocol-Version"
#define MCP_RPC_SERVER_ERROR (-32000) /* a transport refusal, as the SDKs send it */

typedef struct mcp_session {
	char id[33];         /* 16 random bytes, hex */
	char key[65];        /* the SHA-256 of the key that made it */
	char *agent, *user;  /* user NULL = none */
	json_t *info;        /* the agent's settings at initialize */
	int64_t used_ms;     /* cof_mono_ms() of its last request */
	char *listed;        /* the tool names the client was last told of (cof_mcp) */
	unsigned stream;     /* its GET streams so far: the newest one is live */
	struct mcp_session *next;
} mcp_session;

static pthread_mutex_t mcp_mu = PTHREAD_MUTEX_INITIALIZER;
static mcp_session *mcp_head;
static size_t mcp_count;

static void session_free(mcp_session *s)
{
	if (!s)
		return;
	free(s->agent);
	free(s->user);
	free(s->listed);
	json_decref(s->info);
	free(s);
}

/* Unlinks *pp (under mcp_mu) and frees it. */
static void session_drop(mcp_session **pp)
{
	mcp_session *s = *pp;

	*pp = s->next;
	mcp_count--;
	session_free(s);
}

/* Ends the sessions idle past MCP_IDLE_MS (under mcp_mu). */
static void sessions_expire(int64_t now)
{
	for (mcp_session **pp = &mcp_head; *pp;)
		if (now - (*pp)->used_ms > MCP_IDLE_MS)
			session_drop(pp);
		else
			pp = &(*pp)->next;
}

static int same_str(const char *a, const char *b)
{
	return a ? b && !strcmp(a, b) : !b;
}

/* The live session `id` of this key, agent and subject, its info taken
 * (a reference) and its clock reset; NULL when there is none. With `stream`,
 * a GET stream of it begins: its number, which ends any older one. */
static json_t *session_use(const char *id, const char *key, const char *agent,
			   const char *user, unsigned *stream)
{
	int64_t now = cof_mono_ms();
	json_t *info = NULL;

	pthread_mutex_lock(&mcp_mu);
	sessions_expire(now);
	for (mcp_session *s = mcp_head; s; s = s->next)
		if (!strcmp(s->id, id) && !strcmp(s->key, key) && !strcmp(s->agent, agent) &&
		    same_str(s->user, user)) {
			s->used_ms = now;
			info = json_incref(s->info);
			if (stream)
				*stream = ++s->stream;
			break;
		}
	pthread_mutex_unlock(&mcp_mu);
	return info;
}

/* Session `id` of this key (under mcp_mu), or NULL. */
static mcp_session *session_find(const char *id, const char *key)
{
	for (mcp_session *s = mcp_head; s; s = s->next)
		if (!strcmp(s->id, id) && !strcmp(s->key, key))
			return s;
	return NULL;
}

/* What the client of session `id` was told of the tools is now `listed`
 * (taken; NULL: nothing to record). */
static void session_listed(const char *id, const char *key, char *listed)
{
	mcp_session *s;

	if (!listed)
		return;
	pthread_mutex_lock(&mcp_mu);
	if ((s = session_find(id, key))) {
		free(s->listed);
		s->listed = listed;
		listed = NULL;
	}
	pthread_mutex_unlock(&mcp_mu);
	free(listed);
}

/* Ends session `id` of this key: 1, or 0 when there was none. */
static int session_end(const char *id, const char *key)
{
	int found = 0;

	pthread_mutex_lock(&mcp_mu);
	for (mcp_session **pp = &mcp_head; *pp; pp = &(*pp)->next)
		if (!strcmp((*pp)->id, id) && !strcmp((*pp)->key, key)) {
			session_drop(pp);
			found = 1;
			break;
		}
	pthread_mutex_unlock(&mcp_mu);
	return found;
}

/* A new session (its id into `id`): 0, or -1 with err (the server is full,
 * or out of memory). Past the key's limit its least recently used ends. */
static int session_new(const char *key, const char *agent, const char *user, json_t *info,
		       char id[33], cof_err *err)
{
	unsigned char rnd[16];
	mcp_session *s = calloc(1, sizeof *s), **lru = NULL;
	int64_t now = cof_mono_ms();
	size_t mine = 0;

	if (!s || cof_random(rnd, sizeof rnd) || !(s->agent = strdup(agent)) ||
	    (user && !(s->user = strdup(user)))) {
		session_free(s);
		return cof_error(err, COF_EINTERNAL, "cannot make an MCP session");
	}
	for (size_t i = 0; i < sizeof rnd; i++)
		snprintf(s->id + 2 * i, 3, "%02x", rnd[i]);
	snprintf(s->key, sizeof s->key, "%s", key);
	s->info = json_incref(info);
	s->used_ms = now;
	pthread_mutex_lock(&mcp_mu);
	sessions_expire(now);
	for (mcp_session **pp = &mcp_head; *pp; pp = &(*pp)->next)
		if (!strcmp((*pp)->key, key)) {
			mine++;
			if (!lru || (*pp)->used_ms <= (*lru)->used_ms)
				lru = pp;
		}
	if (mine >= MCP_SESSIONS_PER_KEY)
		session_drop(lru);
	else if (mcp_count >= MCP_SESSIONS_MAX) {
		pthread_mutex_unlock(&mcp_mu);
		session_free(s);
		return cof_error(err, COF_EUNAVAILABLE, "this server holds %d MCP sessions, its "
				 "limit; try again when some have ended", MCP_SESSIONS_MAX);
	}
	s->next = mcp_head;
	mcp_head = s;
	mcp_count++;
	pthread_mutex_unlock(&mcp_mu);
	memcpy(id, s->id, 33);
	return 0;
}

void http_mcp_stop(void)
{
	pthread_mutex_lock(&mcp_mu);
	while (mcp_head)
		session_drop(&mcp_head);
	pthread_mutex_unlock(&mcp_mu);
}

/* ------------------------------------------------------------- back end */

typedef struct mcp_call {
	http_req *req;
	const char *agent, *user;
	char scope[40];      /* "http:" + the session id: its read scope */
} mcp_call;

static int be_agent_get(void *cls, json_t **out, char **msg)
{
	mcp_call *c = cls;
	cof_err err = {0};

	*out = NULL;
	*msg = NULL;
	if (http_agent_reaches(c->req, c->agent, &err) ||
	    cof_agent_get(c->req->srv->st, c->req->who.org, c->agent, out, &err)) {
		*msg = cof_mcp_err_text(&err);
		return -1;
	}
	return 0;
}

static int be_tool(void *cls, const char *tool, int subject, json_t *args, json_t **out,
		   char **msg)
{
	mcp_call *c = cls;
	cof_err err = {0};
	const char *run = http_header_trim(c->req, "X-Run-Id");
	int rc = subject
		 ? http_subject_tool_run(c->req, c->agent, c->user, tool, args, run, out, &err)
		 : http_agent_tool_run(c->req, c->agent, c->user, tool, args, run,
				       c->scope[0] ? c->scope : NULL, out, &err);

	*msg = NULL;
	if (rc) {
		json_decref(*out);
		*out = NULL;
		*msg = cof_mcp_err_text(&err);
	}
	return rc;
}

/* The relay sessions of `agent`, in the organization of `who`; NULL when
 * they cannot be had. */
static json_t *relay_sessions(http_server *srv, const cof_principal *who, const char *agent)
{
	cof_err err = {0};
	json_t *out = NULL;

	if (cof_relay_list(srv->relay, who, agent, 0, &out, &err)) {
		cof_err_clear(&err);
		json_decref(out);
		return NULL;
	}
	return out;
}

static json_t *be_relay_sessions(void *cls)
{
	mcp_call *c = cls;

	return relay_sessions(c->req->srv, &c->req->who, c->agent);
}

static char *be_volume_name(void *cls, const char *vol)
{
	mcp_call *c = cls;
	cof_err err = {0};
	json_t *out = NULL;
	char *name = NULL;

	if (cof_volume_get(c->req->srv->st, c->req->who.org, vol, &out, &err) == 0 &&
	    cof_json_str(out, "name"))
		name = cof_strdup(cof_json_str(out, "name"));
	cof_err_clear(&err);
	json_decref(out);
	return name;
}

static int be_relay_op(void *cls, const char *uid, json_t *body, json_t **out, char **msg)
{
	mcp_call *c = cls;
	cof_err err = {0};

	*out = NULL;
	*msg = NULL;
	if (cof_relay_op(c->req->srv->relay, &c->req->who, uid, body, 1, out, &err)) {
		json_decref(*out);
		*out = NULL;
		*msg = cof_mcp_err_text(&err);
		return -1;
	}
	return 0;
}

static const cof_mcp_backend http_backend = {
	.agent_get = be_agent_get,
	.tool = be_tool,
	.relay_sessions = be_relay_sessions,
	.relay_op = be_relay_op,
	.volume_name = be_volume_name,
};

/* ------------------------------------------------------------- transport */

/* A transport refusal: `status` with a JSON-RPC error the SDKs show. */
static enum MHD_Result mcp_fail(http_req *req, unsigned status, json_t *id, const char *fmt,
				...) __attribute__((format(printf, 4, 5)));
static enum MHD_Result mcp_fail(http_req *req, unsigned status, json_t *id, const char *fmt,
				...)
{
	char msg[600];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return http_send_json(req, status,
			      json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id",
					id ? id : json_null(), "error", "code",
					MCP_RPC_SERVER_ERROR, "message", msg));
}

/* An API error met on the way (the agent unknown, a key that does not reach
 * it): its HTTP status, the message as a JSON-RPC error. Clears err. */
static enum MHD_Result mcp_fail_err(http_req *req, json_t *id, cof_err *err)
{
	unsigned status = (unsigned)cof_code_status(err->code ? err->code : COF_EINTERNAL);
	char *text = cof_mcp_err_text(err);
	enum MHD_Result r = mcp_fail(req, status, id, "%s", text);

	free(text);
	return r;
}

/* Refuses a request a web page of another site could have sent (DNS
 * rebinding, cross-site requests): cof_mcp_origin_refused. */
static int origin_refused(http_req *req, const char **why)
{
	unsigned char peer[16];

	return cof_mcp_origin_refused(req->srv->host, http_conn_proxied(req->conn, peer),
				      http_header_trim(req, "Host"),
				      http_header_trim(req, "Origin"), why);
}

/* The agent and subject of the request: ?agent (or the key's own agent) and
 * ?user. 0, or -1 with err. */
static int mcp_target(http_req *req, const char **agent, const char **user, cof_err *err)
{
	if (http_query(req, "agent", agent, err) || http_query(req, "user", user, err))
		return -1;
	if (!*agent || !**agent) {
		if (!req->who.agent[0])
			return cof_error(err, COF_EVALIDATION, "/mcp needs ?agent=ID (the agent "
					 "whose tools to serve), unless the key is bound to one");
		*agent = req->who.agent;
	}
	if (*user && !**user)
		return cof_error(err, COF_EVALIDATION, "?user= is empty: give the subject, or "
				 "leave it out");
	return http_agent_reaches(req, *agent, err);
}

/* MCP-Protocol-Version, when sent, must be one this server speaks. */
static int version_refused(http_req *req, const char **v)
{
	*v = http_header_trim(req, MCP_VERSION_HDR);
	return *v && !cof_mcp_version_known(*v);
}

/* Accept must allow JSON, when given. */
static int accepts_json(http_req *req)
{
	const char *a = http_header(req, MHD_HTTP_HEADER_ACCEPT);

	return !a || !*a || strstr(a, "application/json") || strstr(a, "*/*") ||
	       strstr(a, "application/*");
}

/* POST /mcp */
enum MHD_Result http_mcp_post(http_req *req)
{
	cof_err err = {0};
	const char *agent, *user, *why, *sid, *ver;
	const char *ctype = http_header_trim(req, MHD_HTTP_HEADER_CONTENT_TYPE);
	json_error_t jerr;
	json_t *msg, *ans, *info = NULL;
	char id[33] = "";
	int init;

	if (origin_refused(req, &why))
		return mcp_fail(req, MHD_HTTP_FORBIDDEN, NULL, "%s", why);
	if (mcp_target(req, &agent, &user, &err))
		return mcp_fail_err(req, NULL, &err);
	if (!accepts_json(req))
		return mcp_fail(req, MHD_HTTP_NOT_ACCEPTABLE, NULL, "Accept must allow "
				"application/json: /mcp answers with JSON (no event streams)");
	if (!ctype || strncasecmp(ctype, "application/json", 16) ||
	    (ctype[16] && ctype[16] != ';' && ctype[16] != ' '))
		return mcp_fail(req, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, NULL,
				"Content-Type must be application/json");
	msg = json_loadb(req->body.data ? req->body.data : "", req->body.len,
			 JSON_REJECT_DUPLICATES, &jerr);
	if (!msg) {
		ans = json_pack("{s:s, s:n, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", "error", "code",
				COF_RPC_PARSE_ERROR, "message", jerr.text);
		return http_send_json(req, MHD_HTTP_BAD_REQUEST, ans);
	}
	init = json_is_object(msg) &&
	       same_str(json_string_value(json_object_get(msg, "method")), "initialize");
	sid = http_header_trim(req, MCP_SESSION_HDR);
	json_t *rid = json_object_get(msg, "id");
	if (init && sid) {
		enum MHD_Result r = mcp_fail(req, MHD_HTTP_BAD_REQUEST, rid, "initialize starts a "
					     "session: send it without Mcp-Session-Id");
		json_decref(msg);
		return r;
	}
	if (!init) {
		enum MHD_Result r = MHD_NO;
		if (!sid)
			r = mcp_fail(req, MHD_HTTP_BAD_REQUEST, NULL, "Mcp-Session-Id is missing: "
				     "send initialize first, then its session id with every request");
		else if (version_refused(req, &ver))
			r = mcp_fail(req, MHD_HTTP_BAD_REQUEST, NULL, "MCP-Protocol-Version '%.40s' "
				     "is not one this server speaks (2025-11-25, 2025-06-18, "
				     "2025-03-26, 2024-11-05)", ver);
		else if (!(info = session_use(sid, req->key_hash, agent, user, NULL)))
			r = mcp_fail(req, MHD_HTTP_NOT_FOUND, NULL, "no MCP session '%.64s' for this "
				     "key and agent (ended, expired or never made): initialize "
				     "again", sid);
		if (!info) {
			json_decref(msg);
			return r;
		}
	}
	mcp_call call = {.req = req, .agent = agent, .user = user};
	if (!init) /* each session reads and writes in its own scope */
		snprintf(call.scope, sizeof call.scope, "http:%.32s", sid);
	cof_mcp m = {.be = &http_backend, .cls = &call, .agent = agent, .user = user};
	/* at initialize the agent must exist (mcp_target checked the key
	 * reaches it): answered with its HTTP status, before a session is made */
	if (init && cof_agent_get(req->srv->st, req->who.org, agent, &info, &err)) {
		enum MHD_Result r = mcp_fail_err(req, rid, &err);
		json_decref(msg);
		return r;
	}
	m.info = info;
	ans = cof_mcp_handle(&m, msg);
	if (init && ans && json_object_get(ans, "result") &&
	    session_new(req->key_hash, agent, user, info, id, &err)) {
		json_decref(ans);
		json_decref(info);
		enum MHD_Result r = mcp_fail_err(req, rid, &err);
		json_decref(msg);
		return r;
	}
	if (!init) /* a tools/list: what the client now knows of the tools */
		session_listed(sid, req->key_hash, m.listed);
	else
		free(m.listed);
	json_decref(info);
	json_decref(msg);
	if (!ans)
		return http_send_empty(req, MHD_HTTP_ACCEPTED);
	const char *const hdrs[] = {MCP_SESSION_HDR, id, NULL};
	return http_send_json_h(req, MHD_HTTP_OK, ans, id[0] ? hdrs : NULL);
}

/* DELETE /mcp: the session ends. */
enum MHD_Result http_mcp_delete(http_req *req)
{
	const char *why, *sid = http_header_trim(req, MCP_SESSION_HDR);

	if (origin_refused(req, &why))
		return mcp_fail(req, MHD_HTTP_FORBIDDEN, NULL, "%s", why);
	if (!sid)
		return mcp_fail(req, MHD_HTTP_BAD_REQUEST, NULL, "Mcp-Session-Id is missing: "
				"name the session to end");
	if (!session_end(sid, req->key_hash))
		return mcp_fail(req, MHD_HTTP_NOT_FOUND, NULL, "no MCP session '%.64s' for this "
				"key (ended, expired or never made)", sid);
	return http_send_empty(req, MHD_HTTP_NO_CONTENT);
}

/* ------------------------------------------------------------- GET stream */

typedef struct mcp_stream {
	http_server *srv;
	struct MHD_Connection *conn;
	cof_principal who;
	char sid[33], key[65];
	char *agent, *user;
	json_t *info;            /* the session's agent settings (its toolset) */
	unsigned number;         /* of the session's streams: a newer one ends it */
	int fd;                  /* the request's subscription to the agent's topic */
	http_keyhold *keyhold;   /* the stream ends with its key */
	http_wait wait;
	cof_buf buf;
	size_t pos;
	int done, fresh;         /* fresh: not looked at the tools yet */
	int64_t last_ms;         /* when something was last sent */
} mcp_stream;

/* While its session lives and this is its newest stream: 1 with *listed (a
 * copy; NULL = nothing listed yet), the session's clock reset (an open
 * stream keeps it). */
static int stream_session(mcp_stream *x, char **listed)
{
	mcp_session *s;
	int live;

	pthread_mutex_lock(&mcp_mu); /* no expiry to run: a session with a stream is in use */
	s = session_find(x->sid, x->key);
	live = s && s->stream == x->number;
	if (live) {
		s->used_ms = cof_mono_ms();
		*listed = s->listed ? cof_strdup(s->listed) : NULL;
	}
	pthread_mutex_unlock(&mcp_mu);
	return live;
}

static int st_agent_get(void *cls, json_t **out, char **msg)
{
	mcp_stream *x = cls;
	cof_err err = {0};

	*msg = NULL;
	if (cof_agent_get(x->srv->st, x->who.org, x->agent, out, &err)) {
		*msg = cof_mcp_err_text(&err);
		return -1;
	}
	return 0;
}

static json_t *st_relay_sessions(void *cls)
{
	mcp_stream *x = cls;

	return relay_sessions(x->srv, &x->who, x->agent);
}

/* What a stream needs of the tools: what tools/list would answer. */
static const cof_mcp_backend stream_backend = {
	.agent_get = st_agent_get,
	.relay_sessions = st_relay_sessions,
};

/* The tools as the client would list them now against what it was told:
 * the notification when they differ (at most one per change). */
static void stream_look(mcp_stream *x)
{
	char *was = NULL;

	if (!stream_session(x, &was)) {
		x->done = 1; /* the session ended, or a newer stream took over */
		return;
	}
	cof_mcp m = {.be = &stream_backend, .cls = x, .agent = x->agent, .user = x->user,
		     .info = x->info, .listed = was};
	if (cof_mcp_list_changed(&m))
		cof_buf_adds(&x->buf, "event: message\ndata: " COF_MCP_LIST_CHANGED "\n\n");
	session_listed(x->sid, x->key, m.listed);
}

/* MHD's content reader: with nothing to send, the connection is suspended
 * until the agent's topic moves, the keep-alive is due or the key and the
 * session are to be looked at again (0 is returned, as MHD wants then). */
static ssize_t stream_read(void *cls, uint64_t pos, char *out, size_t max)
{
	mcp_stream *x = cls;
	int fd = x->fd;
	char *listed = NULL;

	(void)pos;
	while (x->pos == x->buf.len) {
		cof_buf_reset(&x->buf);
		x->pos = 0;
		if (x->done)
			return MHD_CONTENT_READER_END_OF_STREAM;
		if (http_sse_key_end(x->keyhold, &x->buf) ||
		    __atomic_load_n(&x->srv->stopping, __ATOMIC_SEQ_CST)) {
			x->done = 1;
			continue;
		}
		if (x->fresh || http_fd_ready(fd)) {
			x->fresh = 0;
			http_drain_fd(fd); /* before looking: a later change wakes it again */
			stream_look(x);
		} else if (!stream_session(x, &listed)) {
			x->done = 1;
		} else if (cof_mono_ms() - x->last_ms >= 15000) {
			cof_buf_adds(&x->buf, ": keep-alive\n\n");
		}
		free(listed);
		listed = NULL;
		if (x->buf.len || x->done)
			continue;
		int64_t until = cof_mono_ms() + HTTP_KEYWATCH_WAKE_MS;
		if (x->last_ms + 15000 < until)
			until = x->last_ms + 15000;
		if (http_wait_on(&x->wait, x->conn, fd, -1, until) == 0)
			return 0;
		x->done = 1; /* stopping: no wait */
	}
	size_t n = x->buf.len - x->pos < max ? x->buf.len - x->pos : max;
	memcpy(out, x->buf.data + x->pos, n);
	x->pos += n;
	x->last_ms = cof_mono_ms();
	return (ssize_t)n;
}

static void stream_free(void *cls)
{
	mcp_stream *x = cls;

	http_key_release(x->keyhold);
	cof_buf_release(&x->buf);
	json_decref(x->info);
	free(x->agent);
	free(x->user);
	free(x);
}

/* GET /mcp: the session's stream of server messages. */
enum MHD_Result http_mcp_get(http_req *req)
{
	cof_err err = {0};
	const char *agent, *user, *why, *ver, *sid = http_header_trim(req, MCP_SESSION_HDR);
	const char *accept = http_header(req, MHD_HTTP_HEADER_ACCEPT);
	mcp_stream *x;
	cof_topic t;

	if (origin_refused(req, &why))
		return mcp_fail(req, MHD_HTTP_FORBIDDEN, NULL, "%s", why);
	if (mcp_target(req, &agent, &user, &err))
		return mcp_fail_err(req, NULL, &err);
	if (!accept || !strstr(accept, "text/event-stream"))
		return mcp_fail(req, MHD_HTTP_NOT_ACCEPTABLE, NULL, "Accept must allow "
				"text/event-stream: GET /mcp is the session's stream of server "
				"messages");
	if (!sid)
		return mcp_fail(req, MHD_HTTP_BAD_REQUEST, NULL, "Mcp-Session-Id is missing: "
				"name the session whose messages to stream");
	if (version_refused(req, &ver))
		return mcp_fail(req, MHD_HTTP_BAD_REQUEST, NULL, "MCP-Protocol-Version '%.40s' is "
				"not one this server speaks (2025-11-25, 2025-06-18, 2025-03-26, "
				"2024-11-05)", ver);
	if (!(x = cof_calloc(1, sizeof *x)) || !(x->agent = cof_strdup(agent)) ||
	    (user && !(x->user = cof_strdup(user)))) {
		if (x)
			stream_free(x);
		return mcp_fail(req, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
	}
	x->srv = req->srv;
	x->conn = req->conn;
	x->who = req->who;
	snprintf(x->sid, sizeof x->sid, "%.32s", sid);
	snprintf(x->key, sizeof x->key, "%s", req->key_hash);
	if (strlen(sid) != 32 ||
	    !(x->info = session_use(sid, req->key_hash, agent, user, &x->number))) {
		stream_free(x);
		return mcp_fail(req, MHD_HTTP_NOT_FOUND, NULL, "no MCP session '%.64s' for this "
				"key and agent (ended, expired or never made): initialize again",
				sid);
	}
	t = cof_topic_agent(req->who.org, agent);
	if (http_subscribe(req, &t, 1, &err)) {
		stream_free(x);
		return mcp_fail_err(req, NULL, &err);
	}
	x->fd = http_sub_fd(req);
	x->keyhold = http_key_hold(req);
	x->fresh = 1;
	x->last_ms = cof_mono_ms();
	cof_buf_adds(&x->buf, ": connected\n\n");
	return http_send_events(req, 4096, stream_read, x, stream_free);
}
