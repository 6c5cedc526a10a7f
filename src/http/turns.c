/*
 * turns.c — turns over HTTP: create, get, delete, calls (JSON or a live
 * Server-Sent Events stream) and kept outbox files. Logic is in src/turn.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include "http/http.h"

/* Rewrites the `url` of each of out.files (and of `out` itself when it is
 * one file) as an absolute URL. */
static void absolute_urls(http_req *req, json_t *out)
{
	json_t *f;
	size_t i;

	if (json_object_get(out, "url"))
		http_absolute_url(req, out);
	json_array_foreach(json_object_get(out, "files"), i, f)
		http_absolute_url(req, f);
}

enum MHD_Result http_turn_create(http_req *req)
{
	cof_err err = {0};
	json_t *out = NULL;
	int rc = cof_turn_create(req->srv->turns, &req->who, req->json, &out, &err);

	return http_reply(req, rc, MHD_HTTP_CREATED, out, &err);
}

enum MHD_Result http_turn_get(http_req *req)
{
	cof_err err = {0};
	json_t *out = NULL;
	int rc = cof_turn_get(req->srv->turns, &req->who, req->param[0], &out, &err);
	enum MHD_Result res;

	if (rc && http_forward(req, &err, &res)) {
		cof_err_clear(&err);
		return res;
	}
	return http_reply(req, rc, MHD_HTTP_OK, out, &err);
}

/* The answer of a turn held by another node (docs/design.md, "Across
 * nodes"): carried there, or `err` as it is. */
static enum MHD_Result turn_error(http_req *req, cof_err *err)
{
	enum MHD_Result res;

	if (http_forward(req, err, &res)) {
		cof_err_clear(err);
		return res;
	}
	return http_send_error(req, err);
}

enum MHD_Result http_turn_delete(http_req *req)
{
	cof_err err = {0};

	if (cof_turn_delete(req->srv->turns, &req->who, req->param[0], &err))
		return turn_error(req, &err);
	return http_send_empty(req, MHD_HTTP_NO_CONTENT);
}

enum MHD_Result http_turn_file(http_req *req)
{
	cof_err err = {0};
	cof_file f;

	memset(&f, 0, sizeof f);
	if (cof_turn_file_open(req->srv->turns, &req->who, req->param[0], req->param[1],
			       req->param[2], &f, &err))
		return turn_error(req, &err);
	return http_serve_file(req, &f, req->param[2]);
}

/* ------------------------------------------------------------ SSE calls */

/* A call streamed as events: a thread of its own runs it and appends events
 * to `buf`, poking `efd`; MHD's reader takes them as they come and, with
 * none there, suspends the connection on `efd` (loop.c). The thread and the
 * response each hold a reference: whichever ends last frees it, so a client
 * that goes away never makes a loop thread wait for the call's end. */
typedef struct call_stream {
	http_req *req;           /* only while the handler runs (for URLs) */
	cof_turns *turns;
	cof_principal who;
	char id[160];
	char run[160];           /* X-Run-Id, "" = none */
	json_t *body;
	char base[300];
	pthread_t tid;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	cof_buf buf;
	size_t pos;
	int done;
	int refs;                /* the thread's and the response's */
	int efd;                 /* readable once buf grew or done was set */
	struct MHD_Connection *conn;
	http_wait wait;
} call_stream;

/* Streamed calls whose thread still runs (the server waits for them before
 * it closes turns) and the lock and cond of that count. */
static int live_calls;
static pthread_mutex_t live_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t live_cv = PTHREAD_COND_INITIALIZER;

void http_turn_streams_wait(void)
{
	pthread_mutex_lock(&live_mu);
	while (live_calls > 0)
		pthread_cond_wait(&live_cv, &live_mu);
	pthread_mutex_unlock(&live_mu);
}

/* Drops one reference (under no lock); the last frees the stream. */
static void stream_unref(call_stream *s)
{
	pthread_mutex_lock(&s->mu);
	int last = --s->refs == 0;
	pthread_mutex_unlock(&s->mu);
	if (!last)
		return;
	json_decref(s->body);
	cof_buf_release(&s->buf);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	close(s->efd);
	free(s);
}

/* Wakes the reader (under s->mu): the cond for a reader that could not
 * suspend, the eventfd for a suspended one. */
static void stream_poke(call_stream *s)
{
	uint64_t one = 1;

	pthread_cond_broadcast(&s->cv);
	if (write(s->efd, &one, sizeof one) < 0) {
		/* EAGAIN: the counter is full, so it is readable anyway */
	}
}

/* Makes `url` fields absolute with the stream's base. */
static void stream_url(const call_stream *s, json_t *o)
{
	const char *u = json_string_value(json_object_get(o, "url"));
	cof_buf b = COF_BUF_INIT;

	if (u && u[0] == '/' && cof_buf_addf(&b, "%s%s", s->base, u) == 0)
		json_object_set_new(o, "url", json_string(b.data));
	cof_buf_release(&b);
}

static void stream_event(void *cls, const char *type, json_t *data);

/* Seed 000: each kept file also goes out as an A2A artifact named "file",
 * one file part with its bytes (base64), mimeType and name, and the model's
 * tool-call id as metadata.call_id (API.md, Turns; the schema is A2A v0.3's
 * Artifact: tests/schemas/a2a_artifact.json). A file is at most 4 MB
 * (COF_OUTBOX_FILE_MAX), so its bytes are sent inline. */
static void stream_artifact(call_stream *s, json_t *file)
{
	const char *call = json_string_value(json_object_get(file, "callId"));
	const char *name = json_string_value(json_object_get(file, "name"));
	cof_file f = {0};
	cof_err err = {0};
	unsigned char *buf = NULL;
	int64_t off = 0;

	if (!call || !name || cof_turn_file_open(s->turns, &s->who, s->id, call, name, &f, &err))
		goto out;
	buf = cof_malloc((size_t)f.size + 1);
	while (off < f.size) {
		size_t got = 0;
		if (cof_file_read_at(&f, off, buf + off, (size_t)(f.size - off), &got, &err) || !got)
			break;
		off += (int64_t)got;
	}
	if (off == f.size) {
		size_t elen = 0;
		char *b64 = cof_base64_encode(buf, (size_t)f.size, &elen);
		char id[COF_CALL_ID_MAX + 140];
		snprintf(id, sizeof id, "%s/%s", call, name);
		json_t *a = json_pack("{s:s, s:s, s:[{s:s, s:{s:s, s:O, s:s%}}], s:{s:s}}",
				      "artifactId", id, "name", "file", "parts", "kind", "file",
				      "file", "name", name, "mimeType",
				      json_object_get(file, "mediaType"), "bytes", b64, elen,
				      "metadata", "call_id", call);
		free(b64);
		if (a)
			stream_event(s, "artifact", a);
		json_decref(a);
	}
out:
	free(buf);
	cof_file_close(&f);
	cof_err_clear(&err);
}

static void stream_event(void *cls, const char *type, json_t *data)
{
	call_stream *s = cls;
	json_t *copy = json_deep_copy(data), *f;
	size_t i;
	char *text;

	stream_url(s, copy);
	json_array_foreach(json_object_get(copy, "files"), i, f)
		stream_url(s, f);
	text = json_dumps(copy, JSON_COMPACT);
	pthread_mutex_lock(&s->mu);
	cof_buf_addf(&s->buf, "event: %s\ndata: %s\n\n", type, text ? text : "{}");
	stream_poke(s);
	pthread_mutex_unlock(&s->mu);
	free(text);
	json_decref(copy);
	if (!strcmp(type, "file"))
		stream_artifact(s, data);
}

static void *stream_main(void *arg)
{
	call_stream *s = arg;
	cof_err err = {0};
	json_t *out = NULL;

	if (cof_turn_call_run(s->turns, &s->who, s->id, s->body, s->run[0] ? s->run : NULL,
			      stream_event, s, &out, &err) == 0) {
		stream_event(s, "exit", out);
	} else {
		json_t *e = json_pack("{s:s, s:s, s:i}", "type", cof_code_type(err.code),
				      "message", err.msg, "status", cof_code_status(err.code));
		stream_event(s, "error", e);
		json_decref(e);
	}
	json_decref(out);
	cof_err_clear(&err);
	pthread_mutex_lock(&s->mu);
	s->done = 1;
	stream_poke(s);
	pthread_mutex_unlock(&s->mu);
	stream_unref(s);
	pthread_mutex_lock(&live_mu);
	if (--live_calls == 0)
		pthread_cond_broadcast(&live_cv);
	pthread_mutex_unlock(&live_mu);
	return NULL;
}

static ssize_t stream_read(void *cls, uint64_t pos, char *out, size_t max)
{
	call_stream *s = cls;
	size_t n;

	(void)pos;
	pthread_mutex_lock(&s->mu);
	while (s->pos == s->buf.len && !s->done) {
		http_drain_fd(s->efd); /* under s->mu: a poke after this is seen */
		if (http_wait_on(&s->wait, s->conn, s->efd, -1, 0) == 0) {
			pthread_mutex_unlock(&s->mu);
			return 0;
		}
		pthread_cond_wait(&s->cv, &s->mu); /* stopping: the call ends soon */
	}
	if (s->pos == s->buf.len) {
		pthread_mutex_unlock(&s->mu);
		return MHD_CONTENT_READER_END_OF_STREAM;
	}
	n = s->buf.len - s->pos < max ? s->buf.len - s->pos : max;
	memcpy(out, s->buf.data + s->pos, n);
	s->pos += n;
	if (s->pos == s->buf.len) {
		cof_buf_reset(&s->buf);
		s->pos = 0;
	}
	pthread_mutex_unlock(&s->mu);
	return (ssize_t)n;
}

/* The call runs to its end even when the client goes away. */
static void stream_free(void *cls)
{
	stream_unref(cls);
}

/* True when the client asked for text/event-stream. */
static int wants_events(http_req *req)
{
	const char *a = http_header(req, MHD_HTTP_HEADER_ACCEPT);

	return a && strstr(a, "text/event-stream");
}

static enum MHD_Result call_streamed(http_req *req)
{
	call_stream *s = cof_calloc(1, sizeof *s);

	if (!s)
		return http_send_fail(req, COF_EINTERNAL, "out of memory");
	s->turns = req->srv->turns;
	s->who = req->who;
	snprintf(s->id, sizeof s->id, "%s", req->param[0]);
	const char *run = http_header_trim(req, "X-Run-Id");
	snprintf(s->run, sizeof s->run, "%s", run ? run : "");
	s->body = json_incref(req->json);
	http_base_url(req, s->base, sizeof s->base);
	s->conn = req->conn;
	s->refs = 2;
	s->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	pthread_mutex_lock(&live_mu);
	live_calls++;
	pthread_mutex_unlock(&live_mu);
	if (s->efd < 0 || pthread_create(&s->tid, NULL, stream_main, s)) {
		pthread_mutex_lock(&live_mu);
		live_calls--;
		pthread_mutex_unlock(&live_mu);
		if (s->efd >= 0)
			close(s->efd);
		json_decref(s->body);
		pthread_mutex_destroy(&s->mu);
		pthread_cond_destroy(&s->cv);
		free(s);
		return http_send_fail(req, COF_EINTERNAL, "cannot start the call");
	}
	pthread_detach(s->tid);
	return http_send_events(req, 16384, stream_read, s, stream_free);
}

/* POST /v1/turns/{id}/calls: the answer once the call ends, or with
 * `Accept: text/event-stream` its events live (stdout, stderr, file, exit;
 * `error` when the call could not run). */
enum MHD_Result http_turn_call(http_req *req)
{
	cof_err err = {0};
	json_t *out = NULL;
	int rc;

	if (wants_events(req)) {
		/* an unknown or ended turn is answered with its status, not a stream */
		if (cof_turn_get(req->srv->turns, &req->who, req->param[0], &out, &err))
			return turn_error(req, &err);
		json_decref(out);
		return call_streamed(req);
	}
	rc = cof_turn_call_run(req->srv->turns, &req->who, req->param[0], req->json,
			       http_header_trim(req, "X-Run-Id"), NULL, NULL, &out, &err);
	if (rc == 0)
		absolute_urls(req, out);
	else
		return turn_error(req, &err);
	return http_reply(req, rc, MHD_HTTP_OK, out, &err);
}
