/*
 * volumes.c — keys, volumes, listings, the changes feed, move, health.
 *
 * Handlers here only translate: query args and bodies in, the library's JSON
 * answer out. The library validates body fields; this layer validates query
 * args (numbers, booleans) and names the parameter when refusing one.
 */
#include <string.h>
#include "http/http.h"
#include "store/notify.h"

#define ORG(req) ((req)->who.org)

enum MHD_Result http_health(http_req *req)
{
	return http_send_json(req, MHD_HTTP_OK, json_pack("{s:b, s:s}", "ok", 1, "version", COFFER_VERSION));
}

enum MHD_Result http_keys_create(http_req *req)
{
	cof_err err = { 0 };
	json_t *out = NULL;
	int rc = cof_key_create(req->srv->st, &req->who, req->json, &out, &err);

	return http_reply(req, rc, MHD_HTTP_CREATED, out, &err);
}

/* GET /v1/keys[?org=O]: the organization's keys (another org's: admin only). */
enum MHD_Result http_keys_list(http_req *req)
{
	cof_err err = { 0 };
	json_t *out = NULL;
	const char *org;

	if (http_query(req, "org", &org, &err))
		return http_send_error(req, &err);
	int rc = cof_key_list(req->srv->st, &req->who, org, &out, &err);
	return http_reply(req, rc, MHD_HTTP_OK, out, &err);
}

/* DELETE /v1/keys/{id}: 204; from the next request on the key is 401. */
enum MHD_Result http_keys_revoke(http_req *req)
{
	cof_err err = { 0 };

	if (cof_key_revoke(req->srv->st, &req->who, req->param[0], &err))
		return http_send_error(req, &err);
	return http_send_empty(req, MHD_HTTP_NO_CONTENT);
}

/* POST /v1/volumes: 201 both when made now and when replayed for the same
 * Idempotency-Key; a replay is marked with `Idempotent-Replayed: true`. */
enum MHD_Result http_volume_create(http_req *req)
{
	static const char *const replayed[] = { "Idempotent-Replayed", "true", NULL };
	cof_err err = { 0 };
	json_t *out = NULL;
	int created = 1;
	cof_idem idem_buf;
	char hash[65];
	const cof_idem *idem = http_idem(req, &idem_buf, hash);
	int rc = cof_volume_create(req->srv->st, ORG(req), req->json, idem, &out,
				   &created, &err);

	if (rc != 0 || created)
		return http_reply(req, rc, MHD_HTTP_CREATED, out, &err);
	return http_send_json_h(req, MHD_HTTP_CREATED, out, replayed);
}

/* GET /v1/volumes: with `ids`, those volumes (at most 50); else the
 * organization's volumes by name, in pages (`prefix`, `cursor`, `limit`). */
enum MHD_Result http_volume_get_many(http_req *req)
{
	cof_err err = { 0 };
	json_t *out = NULL;
	const char *ids, *prefix, *cursor;
	int64_t limit = 0;
	int rc;

	if (http_query(req, "ids", &ids, &err) || http_query(req, "prefix", &prefix, &err) ||
	    http_query(req, "cursor", &cursor, &err) ||
	    http_query_int(req, "limit", 1, 1000, &limit, &err))
		return http_send_error(req, &err);
	if (ids != NULL && (prefix || cursor || limit))
		return http_send_fail(req, COF_EVALIDATION,
				      "query parameter 'ids' cannot be combined with 'prefix', "
				      "'cursor' or 'limit'");
	if (ids != NULL)
		rc = cof_volume_get_many(req->srv->st, ORG(req), ids, &out, &err);
	else
		rc = cof_volume_list(req->srv->st, ORG(req), prefix, cursor, limit, &out, &err);
	return http_reply(req, rc, MHD_HTTP_OK, out, &err);
}

enum MHD_Result http_volume_get(http_req *req)
{
	cof_err err = { 0 };
	json_t *out = NULL;
	int rc = cof_volume_get(req->srv->st, ORG(req), req->param[0], &out, &err);

	return http_reply(req, rc, MHD_HTTP_OK, out, &err);
}

/* DELETE /v1/volumes/{id}: 204 No Content. */
enum MHD_Result http_volume_delete(http_req *req)
{
	cof_err err = { 0 };

	if (cof_volume_delete(req->srv->st, ORG(req), req->param[0], &err))
		return http_send_error(req, &err);
	return http_send_empty(req, MHD_HTTP_NO_CONTENT);
}

/* GET /v1/volumes/{id}/files?prefix=&glob=&snapshot=&seq=&cursor=&limit=&content= */
enum MHD_Result http_files_list(http_req *req)
{
	cof_err err = { 0 };
	cof_list_opts o = { 0 };
	json_t *out = NULL;

	o.seq = -1;
	if (http_query_int(req, "seq", 0, INT64_MAX, &o.seq, &err))
		return http_send_error(req, &err);
	o.at = o.seq >= 0;

	if (http_query(req, "prefix", &o.prefix, &err) ||
	    http_query(req, "glob", &o.glob, &err) ||
	    http_query(req, "snapshot", &o.snapshot, &err) ||
	    http_query(req, "cursor", &o.cursor, &err) ||
	    http_query_int(req, "limit", 1, 10000, &o.limit, &err) ||
	    http_query_bool(req, "content", 0, &o.content, &err))
		return http_send_error(req, &err);
	if (o.content)
		return http_read_all(req, &o);
	int rc = cof_file_list(req->srv->st, ORG(req), req->param[0], &o, &out, &err);
	return http_reply(req, rc, MHD_HTTP_OK, out, &err);
}

/* True when a changes answer holds no change (a long-poll waits on). */
static int no_changes(json_t *out)
{
	return json_array_size(json_object_get(out, "changes")) == 0;
}

/* GET /v1/volumes/{id}/changes?since=&prefix=&wait= — a long-poll holds no
 * thread: with nothing to say it is suspended on its subscription to the
 * volume until a commit, the deadline or the stop; MHD then calls this
 * again, which looks again (the fd is drained first, so a commit after the
 * look wakes it). Subscribed before the first look: no commit is missed. */
enum MHD_Result http_changes(http_req *req)
{
	cof_err err = { 0 };
	json_t *out = NULL;
	const char *prefix;
	cof_change_filter f = {0};
	int64_t since = 0, wait = 0;
	int stopping = __atomic_load_n(&req->srv->stopping, __ATOMIC_SEQ_CST);

	if (http_query_int(req, "since", 0, INT64_MAX, &since, &err) ||
	    http_query(req, "prefix", &prefix, &err) ||
	    http_query_int(req, "wait", 0, 60, &wait, &err) ||
	    http_query(req, "runId", &f.run_id, &err) ||
	    http_query(req, "callId", &f.call_id, &err) ||
	    http_query(req, "agent", &f.agent, &err) ||
	    http_query(req, "keyId", &f.key_id, &err))
		return http_send_error(req, &err);
	if (wait > 0 && !stopping && req->wait_until == 0) {
		cof_topic t = cof_topic_volume(ORG(req), req->param[0]);
		if (http_subscribe(req, &t, 1, &err))
			return http_send_error(req, &err);
		req->wait_until = cof_mono_ms() + wait * 1000;
	}
	http_drain_fd(http_sub_fd(req));
	int rc = cof_changes(req->srv->st, ORG(req), req->param[0], since, prefix, &f, 0, &out,
			     &err);
	if (rc == 0 && req->sub && no_changes(out) && cof_mono_ms() < req->wait_until &&
	    http_wait_on(&req->wait, req->conn, http_sub_fd(req), -1, req->wait_until) == 0) {
		json_decref(out);
		return MHD_YES;
	}
	return http_reply(req, rc, MHD_HTTP_OK, out, &err);
}

/* GET /v1/volumes/{id}/history?path=&cursor=&limit= */
enum MHD_Result http_history(http_req *req)
{
	cof_err err = { 0 };
	json_t *out = NULL;
	const char *path, *cursor;
	int64_t limit = 0;

	if (http_query(req, "path", &path, &err) || http_query(req, "cursor", &cursor, &err) ||
	    http_query_int(req, "limit", 1, 1000, &limit, &err))
		return http_send_error(req, &err);
	int rc = cof_history(req->srv->st, ORG(req), req->param[0], path, cursor, limit, &out,
			     &err);
	return http_reply(req, rc, MHD_HTTP_OK, out, &err);
}

/* POST /v1/volumes/{id}/revert: 200, or 409 with the conflicts. */
enum MHD_Result http_revert(http_req *req)
{
	cof_err err = { 0 };
	json_t *out = NULL;
	int rc = cof_volume_revert(req->srv->st, ORG(req), req->param[0], req->json,
				   http_by(req, "revert"), &out, &err);

	return http_reply(req, rc, MHD_HTTP_OK, out, &err);
}

enum MHD_Result http_move(http_req *req)
{
	cof_err err = { 0 };
	json_t *out = NULL;
	int rc = cof_file_move(req->srv->st, ORG(req), req->param[0], req->json,
			       http_by(req, "http"), &out, &err);

	return http_reply(req, rc, MHD_HTTP_OK, out, &err);
}
