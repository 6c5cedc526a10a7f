/*
 * agents.c — agents, their files by agent path, and the file tools.
 * A key bound to an agent reaches only that agent (403 elsewhere).
 * `X-Subject: S` says which subject a call acts for (API.md "Subjects"): the
 * agent layer gives it S's /user and /attachments and nothing of another's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "http/http.h"

#define ORG(req) ((req)->who.org)
#define SUBJECT(req) http_header_trim((req), "X-Subject") /* NULL = none */

int http_agent_reaches(http_req *req, const char *agent, cof_err *err)
{
	if (req->who.agent[0] && strcmp(req->who.agent, agent))
		return cof_error(err, COF_EFORBIDDEN, "this key reaches only agent '%s' (and its "
				 "subjects)", req->who.agent);
	return 0;
}

int http_agent_allowed(http_req *req, cof_err *err)
{
	return http_agent_reaches(req, req->param[0], err);
}

int http_agent_begin_body(http_req *req, int64_t max_bytes)
{
	if (http_agent_allowed(req, &req->err) || http_body_type(req))
		return -1;
	return cof_upload_begin(req->srv->st, max_bytes, &req->up, &req->err);
}

/* Configuring an agent (settings, mounts, delete) needs a key not bound to
 * an agent: an agent's own key could otherwise mount any volume. */
static int admin_of_agents(http_req *req, cof_err *err)
{
	if (req->who.agent[0])
		return cof_error(err, COF_EFORBIDDEN,
				 "a key bound to an agent cannot change agents");
	return 0;
}

/* The agent path of a {+} capture ("workspace/a.txt" -> "/workspace/a.txt"). */
static const char *agent_path(http_req *req, const char *raw)
{
	cof_buf b = COF_BUF_INIT;
	const char *p;

	if (raw[0] == '/' || cof_buf_add(&b, "/", 1) || cof_buf_adds(&b, raw)) {
		cof_buf_release(&b);
		return raw;
	}
	p = http_own(req, b.data, b.len);
	cof_buf_release(&b);
	return p ? p : raw;
}

enum MHD_Result http_agent_put(http_req *req)
{
	cof_err err = { 0 };
	json_t *out = NULL;
	int created = 0, rc;

	if (admin_of_agents(req, &err))
		return http_send_error(req, &err);
	rc = cof_agent_put(req->srv->st, ORG(req), req->param[0], req->json, &out, &created, &err);
	return http_reply(req, rc, created ? MHD_HTTP_CREATED : MHD_HTTP_OK, out, &err);
}

enum MHD_Result http_agent_get(http_req *req)
{
	cof_err err = { 0 };
	json_t *out = NULL;
	int rc = http_agent_allowed(req, &err) ? -1
		 : cof_agent_get(req->srv->st, ORG(req), req->param[0], &out, &err);

	return http_reply(req, rc, MHD_HTTP_OK, out, &err);
}

/* GET /v1/agents?prefix=&cursor=&limit= (a key bound to an agent: 403, as
 * for the volume list; its agent is GET /v1/agents/{id}). */
enum MHD_Result http_agent_list(http_req *req)
{
	cof_err err = { 0 };
	json_t *out = NULL;
	const char *prefix, *cursor;
	int64_t limit = 0;
	int rc;

	if (http_query(req, "prefix", &prefix, &err) || http_query(req, "cursor", &cursor, &err) ||
	    http_query_int(req, "limit", 1, 1000, &limit, &err))
		return http_send_error(req, &err);
	rc = cof_agent_list(req->srv->st, ORG(req), prefix, cursor, limit, &out, &err);
	return http_reply(req, rc, MHD_HTTP_OK, out, &err);
}

enum MHD_Result http_agent_delete(http_req *req)
{
	cof_err err = { 0 };

	if (admin_of_agents(req, &err) || cof_agent_delete(req->srv->st, ORG(req), req->param[0], &err))
		return http_send_error(req, &err);
	/* deleted: its relay sessions go with it (a failure there is the
	 * relay's to say; the agent is gone either way) */
	if (cof_relay_agent_deleted(req->srv->relay, ORG(req), req->param[0], &err))
		fprintf(stderr, "cofferd: agent %s deleted: its relay sessions: %s\n",
			req->param[0], err.msg);
	cof_err_clear(&err);
	return http_send_empty(req, MHD_HTTP_NO_CONTENT);
}

enum MHD_Result http_agent_mounts(http_req *req)
{
	cof_err err = { 0 };
	json_t *out = NULL;
	int rc = admin_of_agents(req, &err) ? -1
		 : cof_agent_set_mounts(req->srv->st, ORG(req), req->param[0], req->json, &out, &err);

	return http_reply(req, rc, MHD_HTTP_OK, out, &err);
}

enum MHD_Result http_agent_files_list(http_req *req)
{
	cof_err err = { 0 };
	json_t *out = NULL;
	const char *path = NULL;
	int rc = http_agent_allowed(req, &err) || http_query(req, "path", &path, &err) ? -1
		 : cof_agent_file_list(req->srv->st, ORG(req), req->param[0], SUBJECT(req), path,
				       &out, &err);

	return http_reply(req, rc, MHD_HTTP_OK, out, &err);
}

enum MHD_Result http_agent_file_get(http_req *req)
{
	cof_err err = { 0 };
	cof_file f;

	memset(&f, 0, sizeof(f));
	if (http_agent_allowed(req, &err) ||
	    cof_agent_file_open(req->srv->st, ORG(req), req->param[0], SUBJECT(req),
				agent_path(req, req->param[1]), &f, &err))
		return http_send_error(req, &err);
	return http_serve_file(req, &f, req->param[1]);
}

/* First call of PUT /v1/agents/{id}/files/{path}: as for volume files, a
 * body over 16 KiB or of unknown length is held to the volume's ceiling. */
int http_begin_agent_file_put(http_req *req)
{
	int64_t clen = http_content_length(req);

	if (http_agent_begin_body(req, 0))
		return -1;
	if (clen >= 0 && clen <= 16 * 1024)
		return 0;
	return cof_agent_file_room(req->srv->st, ORG(req), req->param[0], SUBJECT(req),
				   agent_path(req, req->param[1]), req->up, clen, &req->err);
}

enum MHD_Result http_agent_file_put(http_req *req)
{
	cof_upload *up = http_take_upload(req);
	cof_err err = { 0 };
	json_t *out = NULL;
	int created = 0, rc;

	rc = cof_agent_file_put(req->srv->st, ORG(req), req->param[0], SUBJECT(req),
				agent_path(req, req->param[1]), up, req->content_type,
				http_by(req, "http"), &out, &created, &err);
	return http_put_answer(req, rc, out, created, &err);
}

enum MHD_Result http_agent_file_delete(http_req *req)
{
	cof_err err = { 0 };
	json_t *out = NULL;
	int rc = http_agent_allowed(req, &err) ? -1
		 : cof_agent_file_remove(req->srv->st, ORG(req), req->param[0], SUBJECT(req),
					 agent_path(req, req->param[1]), http_by(req, "http"),
					 &out, &err);

	return http_reply(req, rc, MHD_HTTP_OK, out, &err);
}

int http_agent_tool_run(http_req *req, const char *agent, const char *subject,
			const char *tool, json_t *args, const char *run, const char *scope,
			json_t **out, cof_err *err)
{
	*out = NULL;
	if (http_agent_reaches(req, agent, err) ||
	    cof_agent_tool_in(req->srv->st, ORG(req), agent, subject, tool, args, run, scope,
			      req->who.key_id, out, err))
		return -1;
	if (*out)
		http_absolute_url(req, *out); /* present_file's link */
	return 0;
}

/* POST /v1/agents/{id}/tools/{tool}: 200 {ok, output, ...} also when ok is
 * false (the model reads why); bad arguments are 400. X-Mcp-Session names
 * the read scope (`coffer mcp` sends its own). */
enum MHD_Result http_agent_tool(http_req *req)
{
	cof_err err = { 0 };
	json_t *out = NULL;
	int rc = http_agent_tool_run(req, req->param[0], SUBJECT(req), req->param[1], req->json,
				     http_header_trim(req, "X-Run-Id"),
				     http_header_trim(req, "X-Mcp-Session"), &out, &err);

	return http_reply(req, rc, MHD_HTTP_OK, out, &err);
}

/* GET /v1/agents/{id}/runs/{runId}: what the run wrote and presented. */
enum MHD_Result http_agent_run(http_req *req)
{
	cof_err err = { 0 };
	json_t *out = NULL, *p;
	size_t i;
	int rc = http_agent_allowed(req, &err) ? -1
		 : cof_agent_run_get(req->srv->st, ORG(req), req->param[0], SUBJECT(req),
				     req->param[1], &out, &err);

	if (rc == 0)
		json_array_foreach(json_object_get(out, "presented"), i, p)
			http_absolute_url(req, p);
	return http_reply(req, rc, MHD_HTTP_OK, out, &err);
}

int http_begin_agent_upload(http_req *req)
{
	int64_t clen = http_content_length(req);

	if (http_agent_begin_body(req, COF_UPLOAD_MAX))
		return -1;
	if (clen >= 0 && clen <= 16 * 1024)
		return 0;
	return cof_agent_upload_room(req->srv->st, ORG(req), req->param[0], SUBJECT(req),
				     req->param[1], req->param[2], req->up, clen, &req->err);
}

int http_begin_agent_tool_output(http_req *req)
{
	int64_t clen = http_content_length(req);

	if (http_agent_begin_body(req, COF_UPLOAD_MAX))
		return -1;
	if (clen >= 0 && clen <= 16 * 1024)
		return 0;
	return cof_agent_tool_output_room(req->srv->st, ORG(req), req->param[0], SUBJECT(req),
					  req->param[1], req->param[2], req->up, clen, &req->err);
}

/* PUT /v1/agents/{id}/tool-outputs/{callId}/{name}: 201 new, 200 a replayed retry. */
enum MHD_Result http_agent_tool_output(http_req *req)
{
	cof_upload *up = http_take_upload(req);
	cof_err err = { 0 };
	json_t *out = NULL;
	int created = 0, rc;

	rc = cof_agent_tool_output(req->srv->st, ORG(req), req->param[0], SUBJECT(req),
				   req->param[1], req->param[2], up, req->content_type,
				   http_by(req, "http"), &out, &created, &err);
	return http_put_answer(req, rc, out, created, &err);
}

/* PUT /v1/agents/{id}/uploads/{requestId}/{name}: 201 new, 200 a replayed retry. */
enum MHD_Result http_agent_upload(http_req *req)
{
	cof_upload *up = http_take_upload(req);
	cof_err err = { 0 };
	json_t *out = NULL;
	int created = 0, rc;

	rc = cof_agent_upload(req->srv->st, ORG(req), req->param[0], SUBJECT(req),
			      req->param[1], req->param[2], up, req->content_type,
			      http_by(req, "http"), &out, &created, &err);
	return http_put_answer(req, rc, out, created, &err);
}

/* ------------------------------------------------------------ events (SSE) */

typedef struct sse_stream {
	http_server *srv;
	struct MHD_Connection *conn;
	cof_agent_watch *w;
	cof_buf buf;
	size_t pos;
	int done;
	int64_t last_ms;        /* when something was last sent */
	http_wait wait;
	int64_t due_ms;         /* the keep-alive or coalescing end waited for */
	http_keyhold *key;      /* the stream's key: it ends with the key */
	char base[300];         /* "http://HOST", for links in events */
} sse_stream;

/* Fills the stream's buffer with the events there are now (it never
 * waits), or a keep-alive comment 15 s after the last thing sent; marks the
 * end when the server stops. */
static void sse_fill(sse_stream *s)
{
	json_t *evs = NULL, *ev;
	cof_err err = { 0 };
	size_t i;
	int r;

	cof_buf_reset(&s->buf);
	s->pos = 0;
	if (__atomic_load_n(&s->srv->stopping, __ATOMIC_SEQ_CST)) {
		s->done = 1;
		return;
	}
	r = cof_agent_watch_next(s->w, 0, &evs, &err);
	json_array_foreach(evs, i, ev) {
		json_t *d = json_object_get(ev, "data");
		const char *url = json_string_value(json_object_get(d, "url"));
		if (url && url[0] == '/') {
			cof_buf abs = COF_BUF_INIT;
			cof_buf_addf(&abs, "%s%s", s->base, url);
			json_object_set_new(d, "url", json_string(abs.data ? abs.data : url));
			cof_buf_release(&abs);
		}
		char *data = json_dumps(d, JSON_COMPACT);
		json_int_t id = json_integer_value(json_object_get(ev, "id"));
		if (id > 0)
			cof_buf_addf(&s->buf, "id: %lld\n", (long long)id);
		cof_buf_addf(&s->buf, "event: %s\ndata: %s\n\n",
			     json_string_value(json_object_get(ev, "type")), data ? data : "{}");
		free(data);
	}
	if (r < 0)
		cof_buf_addf(&s->buf, "event: error\ndata: {\"message\":\"%s\"}\n\n",
			     cof_code_type(err.code));
	if (r != 0)
		s->done = 1;
	else if (!json_array_size(evs) && cof_mono_ms() - s->last_ms >= 15000)
		cof_buf_adds(&s->buf, ": keep-alive\n\n");
	json_decref(evs);
	cof_err_clear(&err);
}

/* MHD's content reader: with nothing to send, the connection is suspended
 * until the watch's fd says there is news, its coalescing window ends or
 * the keep-alive is due (0 is returned, as MHD wants with a suspend). */
static ssize_t sse_read(void *cls, uint64_t pos, char *out, size_t max)
{
	sse_stream *s = cls;
	int64_t at;

	(void)pos;
	while (s->pos == s->buf.len) {
		if (s->done)
			return MHD_CONTENT_READER_END_OF_STREAM;
		if (http_sse_key_end(s->key, &s->buf)) {
			s->done = 1;
			continue;
		}
		int fd = cof_agent_watch_wake(s->w, &at);
		/* woken only to look at the key: nothing to read */
		if (!s->due_ms || http_fd_ready(fd) || cof_mono_ms() >= s->due_ms) {
			http_drain_fd(fd);
			sse_fill(s);
			if (s->pos < s->buf.len || s->done)
				continue;
			cof_agent_watch_wake(s->w, &at); /* a change may have opened a window */
			s->due_ms = s->last_ms + 15000;
			if (at && at < s->due_ms)
				s->due_ms = at;
		}
		int64_t until = cof_mono_ms() + HTTP_KEYWATCH_WAKE_MS;
		if (http_wait_on(&s->wait, s->conn, fd, -1,
				 s->due_ms < until ? s->due_ms : until) == 0)
			return 0;
		s->done = 1; /* stopping: no wait */
	}
	size_t n = s->buf.len - s->pos < max ? s->buf.len - s->pos : max;
	memcpy(out, s->buf.data + s->pos, n);
	s->pos += n;
	s->last_ms = cof_mono_ms();
	return (ssize_t)n;
}

static void sse_free(void *cls)
{
	sse_stream *s = cls;

	cof_agent_watch_close(s->w);
	http_key_release(s->key);
	cof_buf_release(&s->buf);
	free(s);
}

/* GET /v1/agents/{id}/events: Server-Sent Events until the client goes away
 * or the server stops (Last-Event-ID: the stored events after that id first). */
enum MHD_Result http_agent_events(http_req *req)
{
	cof_err err = { 0 };
	sse_stream *s = cof_calloc(1, sizeof(*s));

	if (!s)
		return http_send_fail(req, COF_EINTERNAL, "out of memory");
	s->srv = req->srv;
	s->conn = req->conn;
	s->last_ms = cof_mono_ms();
	if (http_agent_allowed(req, &err) ||
	    cof_agent_watch_open(req->srv->st, ORG(req), req->param[0], &s->w, &err)) {
		free(s);
		return http_send_error(req, &err);
	}
	const char *last = http_header(req, "Last-Event-ID");
	if (last && *last)
		cof_agent_watch_after(s->w, (int64_t)strtoll(last, NULL, 10));
	http_base_url(req, s->base, sizeof s->base);
	s->key = http_key_hold(req);
	cof_buf_adds(&s->buf, "retry: 3000\n: connected\n\n");
	return http_send_events(req, 4096, sse_read, s, sse_free);
}

/* POST /v1/agents/{id}/links: 201 a signed link by agent path; a retry with
 * the same Idempotency-Key is 409 without the link (as for volumes). */
enum MHD_Result http_agent_link(http_req *req)
{
	cof_err err = { 0 };
	json_t *out = NULL;
	cof_idem idem_buf;
	char hash[65];
	const cof_idem *idem = http_idem(req, &idem_buf, hash);
	int rc = http_agent_allowed(req, &err) ? -1
		 : cof_agent_link_create(req->srv->st, ORG(req), req->param[0], SUBJECT(req),
					 req->json, idem,
					 req->who.key_id, &out, &err);

	if (rc == 0 && out)
		http_absolute_url(req, out);
	return http_reply(req, rc, MHD_HTTP_CREATED, out, &err);
}

/* POST /v1/agents/{id}/resolve: seed 001's {"$file"} tool inputs. */
enum MHD_Result http_agent_resolve(http_req *req)
{
	cof_err err = { 0 };
	json_t *out = NULL;
	char base[300];
	int rc;

	http_base_url(req, base, sizeof base);
	rc = http_agent_allowed(req, &err) ? -1
	     : cof_agent_resolve_input(req->srv->st, ORG(req), req->param[0], SUBJECT(req),
				       req->json, req->who.key_id, base, &out, &err);
	return http_reply(req, rc, MHD_HTTP_OK, out, &err);
}

/* POST /v1/agents/{id}/prompt: 200 the message for the model; a retry of a
 * recorded request is marked with `Idempotent-Replayed: true`. */
enum MHD_Result http_agent_prompt(http_req *req)
{
	static const char *const replayed_h[] = { "Idempotent-Replayed", "true", NULL };
	cof_err err = { 0 };
	json_t *out = NULL;
	cof_idem idem_buf;
	char hash[65];
	const cof_idem *idem = http_idem(req, &idem_buf, hash);
	int replayed = 0;
	int rc = http_agent_allowed(req, &err) ? -1
		 : cof_agent_prompt(req->srv->st, ORG(req), req->param[0], req->json, idem,
				    http_by(req, "http"), &out, &replayed, &err);

	if (rc != 0 || !replayed)
		return http_reply(req, rc, MHD_HTTP_OK, out, &err);
	return http_send_json_h(req, MHD_HTTP_OK, out, replayed_h);
}

/* GET /v1/agents/{id}/conversations/{conversation}/request?format=. */
enum MHD_Result http_agent_conversation(http_req *req)
{
	cof_err err = { 0 };
	json_t *out = NULL;
	const char *format = NULL;
	int rc = http_agent_allowed(req, &err) || http_query(req, "format", &format, &err) ? -1
		 : cof_agent_conversation_request(req->srv->st, ORG(req), req->param[0],
						  SUBJECT(req), req->param[1], format, &out,
						  &err);

	return http_reply(req, rc, MHD_HTTP_OK, out, &err);
}
