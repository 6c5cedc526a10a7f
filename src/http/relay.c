/*
 * relay.c — relay sessions over HTTP: the agent side (API key) and the
 * user's client (`coffer connect`, connect token; docs/relay-protocol.md).
 * Parsing and rendering only; the rules are in src/relay.
 *
 * Both event streams are Server-Sent Events answered from a content reader
 * that never blocks: with nothing to send it suspends the connection
 * (loop.c) until the session's topic is published, the peer hangs up or a
 * second passes, and looks again; between looks it sees whether the peer
 * closed its socket, so a client that goes away pauses its session within
 * about a second rather than at the next failed write.
 */
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include "http/http.h"
#include "store/notify.h"

#define WHO(req) (&(req)->who)
#define PING_MS 15000

/* The connect token of a client call (Authorization: Bearer), or NULL. */
static const char *client_token(http_req *req)
{
	const char *v = http_header(req, MHD_HTTP_HEADER_AUTHORIZATION);

	if (!v)
		return NULL;
	while (*v == ' ')
		v++;
	if (strncasecmp(v, "Bearer ", 7))
		return NULL;
	for (v += 7; *v == ' '; v++)
		;
	return *v ? v : NULL;
}

enum MHD_Result http_relay_create(http_req *req)
{
	cof_err err = {0};
	json_t *out = NULL;
	int rc = cof_relay_create(req->srv->relay, WHO(req), req->json, &out, &err);

	return http_reply(req, rc, MHD_HTTP_CREATED, out, &err);
}

/* GET /v1/relay/sessions?agent=ID&all=true */
enum MHD_Result http_relay_list(http_req *req)
{
	cof_err err = {0};
	json_t *out = NULL;
	const char *agent = NULL;
	int all = 0;
	int rc = http_query(req, "agent", &agent, &err) ||
			 http_query_bool(req, "all", 0, &all, &err)
		 ? -1 : cof_relay_list(req->srv->relay, WHO(req), agent, all, &out, &err);

	return http_reply(req, rc, MHD_HTTP_OK, out, &err);
}

/* http_reply 200, but a session held by another node (docs/design.md,
 * "Across nodes") is answered there. */
static enum MHD_Result relay_reply(http_req *req, int rc, json_t *out, cof_err *err)
{
	enum MHD_Result res;

	if (rc && http_forward(req, err, &res)) {
		json_decref(out);
		cof_err_clear(err);
		return res;
	}
	return http_reply(req, rc, MHD_HTTP_OK, out, err);
}

enum MHD_Result http_relay_get(http_req *req)
{
	cof_err err = {0};
	json_t *out = NULL;
	int rc = cof_relay_get(req->srv->relay, WHO(req), req->param[0], &out, &err);

	return relay_reply(req, rc, out, &err);
}

/* DELETE /v1/relay/sessions/{uid} ("closed") and POST .../abort ("aborted"):
 * 200 with the ended session. */
static enum MHD_Result answer_session_end(http_req *req, const char *reason)
{
	cof_err err = {0};
	json_t *out = NULL;
	int rc = cof_relay_end(req->srv->relay, WHO(req), req->param[0], reason, &err) ? -1
		 : cof_relay_get(req->srv->relay, WHO(req), req->param[0], &out, &err);

	return relay_reply(req, rc, out, &err);
}

enum MHD_Result http_relay_delete(http_req *req)
{
	return answer_session_end(req, "closed");
}

enum MHD_Result http_relay_abort(http_req *req)
{
	return answer_session_end(req, "aborted");
}

/* POST /v1/relay/sessions/{uid}/ops?wait=false */
enum MHD_Result http_relay_op(http_req *req)
{
	cof_err err = {0};
	json_t *out = NULL;
	int wait = 1;
	int rc = http_query_bool(req, "wait", 1, &wait, &err) ? -1
		 : cof_relay_op(req->srv->relay, WHO(req), req->param[0], req->json, wait, &out,
				&err);

	return relay_reply(req, rc, out, &err);
}

enum MHD_Result http_relay_op_get(http_req *req)
{
	cof_err err = {0};
	json_t *out = NULL;
	int rc = cof_relay_op_get(req->srv->relay, WHO(req), req->param[0], req->param[1], &out,
				  &err);

	return relay_reply(req, rc, out, &err);
}

enum MHD_Result http_relay_log(http_req *req)
{
	cof_err err = {0};
	json_t *out = NULL;
	int rc = cof_relay_log(req->srv->relay, WHO(req), req->param[0], &out, &err);

	return relay_reply(req, rc, out, &err);
}

/* ------------------------------------------------------------------ SSE */

typedef struct relay_sse {
	http_server *srv;
	cof_relay_stream *x;
	int fd;               /* the connection's socket, to see the peer leave */
	int done;
	int64_t last_ms;      /* when something was last written */
	const char *ping;     /* the keep-alive comment */
	cof_buf buf;
	size_t pos;
	struct MHD_Connection *conn;
	int sub_fd;           /* the request's subscription to the session */
	http_wait wait;
	http_keyhold *key;    /* the agent side's key (NULL: the client's token) */
} relay_sse;

/* Renders the stream's events there are now into the buffer. */
static void sse_fill(relay_sse *e)
{
	json_t *evs = NULL, *ev;
	cof_err err = {0};
	size_t i;
	int r;

	cof_buf_reset(&e->buf);
	e->pos = 0;
	http_drain_fd(e->sub_fd);
	r = cof_relay_stream_next(e->x, 0, &evs, &err);
	json_array_foreach(evs, i, ev) {
		json_int_t id = json_integer_value(json_object_get(ev, "id"));
		char *data = json_dumps(json_object_get(ev, "data"), JSON_COMPACT);
		if (id > 0)
			cof_buf_addf(&e->buf, "id: %lld\n", (long long)id);
		cof_buf_addf(&e->buf, "event: %s\ndata: %s\n\n",
			     json_string_value(json_object_get(ev, "type")), data ? data : "{}");
		free(data);
	}
	json_decref(evs);
	cof_err_clear(&err);
	if (r != 0 || __atomic_load_n(&e->srv->stopping, __ATOMIC_SEQ_CST))
		e->done = 1;
	if (e->buf.len)
		e->last_ms = cof_mono_ms();
	else if (cof_mono_ms() - e->last_ms >= PING_MS) {
		cof_buf_adds(&e->buf, e->ping);
		e->last_ms = cof_mono_ms();
	}
}

static ssize_t sse_read(void *cls, uint64_t pos, char *out, size_t max)
{
	relay_sse *e = cls;

	(void)pos;
	while (e->pos == e->buf.len) {
		if (e->done)
			return MHD_CONTENT_READER_END_OF_STREAM;
		if (http_peer_gone(e->fd))
			return MHD_CONTENT_READER_END_WITH_ERROR;
		if (http_sse_key_end(e->key, &e->buf)) {
			e->done = 1;
			continue;
		}
		sse_fill(e);
		if (e->pos < e->buf.len || e->done)
			continue;
		if (http_wait_on(&e->wait, e->conn, e->sub_fd, e->fd,
				 cof_mono_ms() + HTTP_KEYWATCH_WAKE_MS) == 0)
			return 0;
		e->done = 1; /* stopping: no wait */
	}
	size_t n = e->buf.len - e->pos < max ? e->buf.len - e->pos : max;
	memcpy(out, e->buf.data + e->pos, n);
	e->pos += n;
	return (ssize_t)n;
}

static void sse_free(void *cls)
{
	relay_sse *e = cls;

	cof_relay_stream_close(e->x);
	http_key_release(e->key);
	cof_buf_release(&e->buf);
	free(e);
}

/* A peer that vanishes without closing (a dead network path) is otherwise only
 * seen when the kernel gives up on unacknowledged data, after many minutes:
 * keep-alive probes and a user timeout make the socket fail within about 30 s,
 * which peer_gone then sees. Best effort: a failing option changes nothing. */
static void sse_socket_opts(int fd)
{
	int on = 1, idle = 15, intvl = 5, cnt = 3;
	unsigned user_timeout_ms = 30000;

	if (fd < 0)
		return;
	(void)setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
	(void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
	(void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
	(void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
	(void)setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms,
			 sizeof user_timeout_ms);
}

/* Answers 200 text/event-stream from stream x (owned from here on); a stream
 * of an API key ends with it. */
static enum MHD_Result sse_answer(http_req *req, cof_relay_stream *x, const char *ping)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(req->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	relay_sse *e = cof_calloc(1, sizeof *e);

	if (!e) {
		cof_relay_stream_close(x);
		return http_send_fail(req, COF_EINTERNAL, "out of memory");
	}
	cof_topic t = cof_topic_session(req->param[0]);
	cof_err err = {0};
	if (http_subscribe(req, &t, 1, &err)) {
		free(e);
		cof_relay_stream_close(x);
		return http_send_error(req, &err);
	}
	e->srv = req->srv;
	e->x = x;
	e->conn = req->conn;
	e->sub_fd = http_sub_fd(req);
	e->fd = ci ? ci->connect_fd : -1;
	sse_socket_opts(e->fd);
	e->ping = ping;
	e->last_ms = cof_mono_ms();
	e->key = http_key_hold(req);
	cof_buf_adds(&e->buf, "retry: 3000\n: connected\n\n");
	return http_send_events(req, 4096, sse_read, e, sse_free);
}

/* GET /v1/relay/sessions/{uid}/events (Last-Event-ID: resume after that id). */
enum MHD_Result http_relay_events(http_req *req)
{
	cof_err err = {0};
	cof_relay_stream *x = NULL;
	const char *last = http_header(req, "Last-Event-ID");
	uint64_t after = last ? strtoull(last, NULL, 10) : 0;

	if (cof_relay_events_open(req->srv->relay, WHO(req), req->param[0], after, &x, &err))
		return http_send_error(req, &err);
	return sse_answer(req, x, ": keep-alive\n\n");
}

/* ------------------------------------------------------ the user's client */

/* POST /v1/relay/sessions/{uid}/connect: the operations stream. */
enum MHD_Result http_relay_connect(http_req *req)
{
	cof_err err = {0};
	cof_relay_stream *x = NULL;

	if (cof_relay_connect(req->srv->relay, req->param[0], client_token(req), req->json, &x,
			      &err))
		return http_send_error(req, &err);
	return sse_answer(req, x, ": ping\n\n");
}

/* POST /v1/relay/sessions/{uid}/results/{opId}: 204. A body that is not JSON
 * (HTTP_F_BADBODY: req->err says why) still ends the op it names. */
enum MHD_Result http_relay_result(http_req *req)
{
	cof_err err = {0};
	int unreadable = req->err.code != COF_OK;

	if (cof_relay_result(req->srv->relay, req->param[0], client_token(req), req->param[1],
			     unreadable ? NULL : req->json, unreadable ? &req->err : NULL, &err))
		return http_send_error(req, &err);
	return http_send_empty(req, MHD_HTTP_NO_CONTENT);
}

/* POST /v1/relay/sessions/{uid}/events {type, data}: 204. */
enum MHD_Result http_relay_client_event(http_req *req)
{
	cof_err err = {0};

	if (cof_relay_client_event(req->srv->relay, req->param[0], client_token(req), req->json,
				   &err))
		return http_send_error(req, &err);
	return http_send_empty(req, MHD_HTTP_NO_CONTENT);
}
