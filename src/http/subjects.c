/*
 * subjects.c — subject workspaces over HTTP: /v1/agents/{a}/users/{s}/...
 * (files, volume, memory, sessions) and /v1/agents/{a}/skills/{name}.md.
 * A key bound to an agent reaches that agent's subjects only (403 elsewhere),
 * as for the agent's own calls.
 */
#include <string.h>
#include "http/http.h"

#define ORG(req) ((req)->who.org)

/* The required query arg `path` into *out. */
static int path_query(http_req *req, const char **out, cof_err *err)
{
	if (http_query(req, "path", out, err))
		return -1;
	if (!*out)
		return cof_error(err, COF_EVALIDATION, "query argument 'path' is required");
	return 0;
}

/* PUT /v1/agents/{a}/users/{s}/files/content: 201 new, 200 replaced. */
enum MHD_Result http_subject_file_put(http_req *req)
{
	cof_err err = { 0 };
	json_t *out = NULL;
	int created = 0;
	int rc = http_agent_allowed(req, &err) ? -1
		 : cof_subject_file_put(req->srv->st, ORG(req), req->param[0], req->param[1],
					req->json, http_by(req, "http"), &out, &created, &err);

	return http_put_answer(req, rc, out, created, &err);
}

/* GET /v1/agents/{a}/users/{s}/files?path=DIR */
enum MHD_Result http_subject_files_list(http_req *req)
{
	cof_err err = { 0 };
	json_t *out = NULL;
	const char *path = NULL;
	int rc = http_agent_allowed(req, &err) || http_query(req, "path", &path, &err) ? -1
		 : cof_subject_file_list(req->srv->st, ORG(req), req->param[0], req->param[1],
					 path, &out, &err);

	return http_reply(req, rc, MHD_HTTP_OK, out, &err);
}

/* GET /v1/agents/{a}/users/{s}/files/content?path=P: the bytes. */
enum MHD_Result http_subject_file_get(http_req *req)
{
	cof_err err = { 0 };
	const char *path = NULL;
	cof_file f;

	memset(&f, 0, sizeof(f));
	if (http_agent_allowed(req, &err) || path_query(req, &path, &err) ||
	    cof_subject_file_open(req->srv->st, ORG(req), req->param[0], req->param[1], path, &f,
				  &err))
		return http_send_error(req, &err);
	return http_serve_file(req, &f, path);
}

/* POST /v1/agents/{a}/users/{s}/files/move {from, to, overwrite?} */
enum MHD_Result http_subject_file_move(http_req *req)
{
	cof_err err = { 0 };
	json_t *out = NULL;
	int rc = http_agent_allowed(req, &err) ? -1
		 : cof_subject_file_move(req->srv->st, ORG(req), req->param[0], req->param[1],
					 req->json, http_by(req, "http"), &out, &err);

	return http_reply(req, rc, MHD_HTTP_OK, out, &err);
}

/* DELETE /v1/agents/{a}/users/{s}/files?path=P */
enum MHD_Result http_subject_file_delete(http_req *req)
{
	cof_err err = { 0 };
	json_t *out = NULL;
	const char *path = NULL;
	int rc = http_agent_allowed(req, &err) || path_query(req, &path, &err) ? -1
		 : cof_subject_file_remove(req->srv->st, ORG(req), req->param[0], req->param[1],
					   path, http_by(req, "http"), &out, &err);

	return http_reply(req, rc, MHD_HTTP_OK, out, &err);
}

/* GET /v1/agents/{a}/users/{s}/volume */
enum MHD_Result http_subject_volume(http_req *req)
{
	cof_err err = { 0 };
	json_t *out = NULL;
	int rc = http_agent_allowed(req, &err) ? -1
		 : cof_subject_volume_read(req->srv->st, ORG(req), req->param[0], req->param[1],
					   &out, &err);

	return http_reply(req, rc, MHD_HTTP_OK, out, &err);
}

int http_begin_subject_memory_put(http_req *req)
{
	return http_agent_begin_body(req, 0);
}

/* PUT /v1/agents/{a}/users/{s}/memory/{USER.md|MEMORY.md}: the raw bytes. */
enum MHD_Result http_subject_memory_put(http_req *req)
{
	cof_upload *up = http_take_upload(req);
	cof_err err = { 0 };
	json_t *out = NULL;
	int created = 0, rc;

	rc = cof_subject_memory_put(req->srv->st, ORG(req), req->param[0], req->param[1],
				    req->param[2], up, http_by(req, "http"), &out, &created, &err);
	return http_put_answer(req, rc, out, created, &err);
}

/* GET /v1/agents/{a}/users/{s}/memory/{USER.md|MEMORY.md} */
enum MHD_Result http_subject_memory_get(http_req *req)
{
	cof_err err = { 0 };
	cof_file f;

	memset(&f, 0, sizeof(f));
	if (http_agent_allowed(req, &err) ||
	    cof_subject_memory_open(req->srv->st, ORG(req), req->param[0], req->param[1],
				    req->param[2], &f, &err))
		return http_send_error(req, &err);
	return http_serve_file(req, &f, req->param[2]);
}

int http_begin_agent_skill_put(http_req *req)
{
	return http_agent_begin_body(req, COF_SKILL_MAX);
}

/* PUT /v1/agents/{a}/skills/{name}.md: 201 new, 200 replaced. */
enum MHD_Result http_agent_skill_put(http_req *req)
{
	cof_upload *up = http_take_upload(req);
	cof_err err = { 0 };
	json_t *out = NULL;
	int created = 0, rc;

	rc = cof_agent_skill_put(req->srv->st, ORG(req), req->param[0], req->param[1], up,
				 http_by(req, "http"), &out, &created, &err);
	return http_reply(req, rc, created ? MHD_HTTP_CREATED : MHD_HTTP_OK, out, &err);
}

/* POST /v1/agents/{a}/users/{s}/sessions: 201 {volumeId, skills}. */
/* A sandbox session started (skills written, the workspace made); `prewarm`:
 * answered 200 with prewarmed: true instead of 201. */
static enum MHD_Result session_start(http_req *req, int prewarm)
{
	cof_err err = { 0 };
	json_t *out = NULL;
	static const cof_jfield no_fields[] = {{NULL, 0, 0}};
	int rc = http_agent_allowed(req, &err) || cof_json_check(req->json, no_fields, &err) ? -1
		 : cof_subject_session_start(req->srv->st, ORG(req), req->param[0], req->param[1],
					     http_by(req, "http"), &out, &err);

	if (rc == 0 && prewarm)
		json_object_set_new(out, "prewarmed", json_true());
	return http_reply(req, rc, prewarm ? MHD_HTTP_OK : MHD_HTTP_CREATED, out, &err);
}

enum MHD_Result http_subject_session(http_req *req)
{
	return session_start(req, 0);
}

/* POST /v1/agents/{a}/users/{s}/prewarm: the subject's workspace made and its
 * skills written now, so that a turn's first call costs what a later one
 * does (seed 003). Idempotent: 200 each time. */
enum MHD_Result http_subject_prewarm(http_req *req)
{
	return session_start(req, 1);
}

/* POST /v1/agents/{a}/users/{s}/approvals/{id} {approve}: a person decides a
 * write the toolset holds (permissionPolicy always_ask). */
enum MHD_Result http_subject_approve(http_req *req)
{
	cof_err err = { 0 };
	json_t *out = NULL;
	int rc = http_agent_allowed(req, &err) ? -1
		 : cof_subject_approve(req->srv->st, ORG(req), req->param[0], req->param[1],
				       req->param[2], req->json, &out, &err);

	return http_reply(req, rc, MHD_HTTP_OK, out, &err);
}

/* GET /v1/agents/{a}/users/{s}/approvals: the writes waiting for one. */
enum MHD_Result http_subject_approvals(http_req *req)
{
	cof_err err = { 0 };
	json_t *out = NULL;
	int rc = http_agent_allowed(req, &err) ? -1
		 : cof_subject_approvals(req->srv->st, ORG(req), req->param[0], req->param[1],
					 &out, &err);

	return http_reply(req, rc, MHD_HTTP_OK, out, &err);
}

/* POST /v1/agents/{a}/users/{s}/tools/{read_file,write_file,patch,search_files}:
 * seed 003's file toolset on the subject's workspace; 200 {ok, output, ...}
 * also when ok is false, as the agent's own tools. */
enum MHD_Result http_subject_tool(http_req *req)
{
	cof_err err = { 0 };
	json_t *out = NULL;
	int rc = http_subject_tool_run(req, req->param[0], req->param[1], req->param[2],
				       req->json, http_header_trim(req, "X-Run-Id"), &out, &err);

	return http_reply(req, rc, MHD_HTTP_OK, out, &err);
}

int http_subject_tool_run(http_req *req, const char *agent, const char *subject,
			  const char *tool, json_t *args, const char *run, json_t **out,
			  cof_err *err)
{
	*out = NULL;
	return http_agent_reaches(req, agent, err) ||
	       cof_subject_tool(req->srv->st, ORG(req), agent, subject, tool, args, run, out, err)
	       ? -1 : 0;
}
