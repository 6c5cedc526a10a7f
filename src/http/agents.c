/*
 * agents.c — agents, their files by agent path, and the file tools.
 * A key bound to an agent reaches only that agent (403 elsewhere).
 */
#include <stdio.h>
#include <string.h>
#include "http/http.h"

#define ORG(req) ((req)->who.org)

/* 0 when the caller's key may act on agent param[0]; else err is 403. */
static int agent_allowed(http_req *req, cof_err *err)
{
	if (req->who.agent[0] && strcmp(req->who.agent, req->param[0]))
		return cof_error(err, COF_EFORBIDDEN, "this key reaches only agent '%s'",
				 req->who.agent);
	return 0;
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
	int rc = agent_allowed(req, &err) ? -1
		 : cof_agent_get(req->srv->st, ORG(req), req->param[0], &out, &err);

	return http_reply(req, rc, MHD_HTTP_OK, out, &err);
}

enum MHD_Result http_agent_delete(http_req *req)
{
	cof_err err = { 0 };

	if (admin_of_agents(req, &err) || cof_agent_delete(req->srv->st, ORG(req), req->param[0], &err))
		return http_send_error(req, &err);
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
	int rc = agent_allowed(req, &err) || http_query(req, "path", &path, &err) ? -1
		 : cof_agent_file_list(req->srv->st, ORG(req), req->param[0], path, &out, &err);

	return http_reply(req, rc, MHD_HTTP_OK, out, &err);
}

enum MHD_Result http_agent_file_get(http_req *req)
{
	cof_err err = { 0 };
	cof_file f;

	memset(&f, 0, sizeof(f));
	f.fd = -1;
	if (agent_allowed(req, &err) ||
	    cof_agent_file_open(req->srv->st, ORG(req), req->param[0],
				agent_path(req, req->param[1]), &f, &err))
		return http_send_error(req, &err);
	return http_serve_file(req, &f);
}

int http_begin_agent_file_put(http_req *req)
{
	if (agent_allowed(req, &req->err))
		return -1;
	http_body_type(req);
	return cof_upload_begin(req->srv->st, 0, &req->up, &req->err);
}

enum MHD_Result http_agent_file_put(http_req *req)
{
	cof_upload *up = req->up;
	cof_err err = { 0 };
	json_t *out = NULL;
	int created = 0, rc;

	req->up = NULL; /* consumed */
	if (up == NULL)
		return http_send_fail(req, COF_EINTERNAL, "upload was not started");
	rc = cof_agent_file_put(req->srv->st, ORG(req), req->param[0],
				agent_path(req, req->param[1]), up, req->content_type, &out,
				&created, &err);
	return http_put_answer(req, rc, out, created, &err);
}

enum MHD_Result http_agent_file_delete(http_req *req)
{
	cof_err err = { 0 };
	json_t *out = NULL;
	int rc = agent_allowed(req, &err) ? -1
		 : cof_agent_file_remove(req->srv->st, ORG(req), req->param[0],
					 agent_path(req, req->param[1]), &out, &err);

	return http_reply(req, rc, MHD_HTTP_OK, out, &err);
}

/* POST /v1/agents/{id}/tools/{tool}: 200 {ok, output, ...} also when ok is
 * false (the model reads why); bad arguments are 400. */
enum MHD_Result http_agent_tool(http_req *req)
{
	cof_err err = { 0 };
	json_t *out = NULL;
	const char *run = http_header_trim(req, "X-Run-Id");
	int rc = agent_allowed(req, &err) ? -1
		 : cof_agent_tool(req->srv->st, ORG(req), req->param[0], req->param[1], req->json,
				  run, &out, &err);

	if (rc == 0 && out)
		http_absolute_url(req, out); /* present_file's link */
	return http_reply(req, rc, MHD_HTTP_OK, out, &err);
}

/* GET /v1/agents/{id}/runs/{runId}: what the run wrote and presented. */
enum MHD_Result http_agent_run(http_req *req)
{
	cof_err err = { 0 };
	json_t *out = NULL, *p;
	size_t i;
	int rc = agent_allowed(req, &err) ? -1
		 : cof_agent_run_get(req->srv->st, ORG(req), req->param[0], req->param[1], &out,
				     &err);

	if (rc == 0)
		json_array_foreach(json_object_get(out, "presented"), i, p)
			http_absolute_url(req, p);
	return http_reply(req, rc, MHD_HTTP_OK, out, &err);
}

int http_begin_agent_upload(http_req *req)
{
	if (agent_allowed(req, &req->err))
		return -1;
	http_body_type(req);
	return cof_upload_begin(req->srv->st, COF_UPLOAD_MAX, &req->up, &req->err);
}

/* PUT /v1/agents/{id}/uploads/{requestId}/{name}: 201 new, 200 a replayed retry. */
enum MHD_Result http_agent_upload(http_req *req)
{
	cof_upload *up = req->up;
	cof_err err = { 0 };
	json_t *out = NULL;
	int created = 0, rc;

	req->up = NULL; /* consumed */
	if (up == NULL)
		return http_send_fail(req, COF_EINTERNAL, "upload was not started");
	rc = cof_agent_upload(req->srv->st, ORG(req), req->param[0], req->param[1],
			      req->param[2], up, req->content_type, &out, &created, &err);
	return http_put_answer(req, rc, out, created, &err);
}
