/*
 * webhooks.c — the webhook routes (API.md "Webhooks"): translation only;
 * hooks/hooks.c checks bodies, keys and tenancy.
 */
#include "http/http.h"
#include "hooks/hooks.h"

/* POST /v1/webhooks: 201 with the secret, shown only here. */
enum MHD_Result http_webhook_create(http_req *req)
{
	cof_err err = { 0 };
	json_t *out = NULL;
	int rc = cof_webhook_create(req->srv->st, &req->who, req->json, &out, &err);

	return http_reply(req, rc, MHD_HTTP_CREATED, out, &err);
}

enum MHD_Result http_webhook_list(http_req *req)
{
	cof_err err = { 0 };
	json_t *out = NULL;
	int rc = cof_webhook_list(req->srv->st, &req->who, &out, &err);

	return http_reply(req, rc, MHD_HTTP_OK, out, &err);
}

enum MHD_Result http_webhook_get(http_req *req)
{
	cof_err err = { 0 };
	json_t *out = NULL;
	int rc = cof_webhook_get(req->srv->st, &req->who, req->param[0], &out, &err);

	return http_reply(req, rc, MHD_HTTP_OK, out, &err);
}

enum MHD_Result http_webhook_patch(http_req *req)
{
	cof_err err = { 0 };
	json_t *out = NULL;
	int rc = cof_webhook_patch(req->srv->st, &req->who, req->param[0], req->json, &out,
				   &err);

	return http_reply(req, rc, MHD_HTTP_OK, out, &err);
}

enum MHD_Result http_webhook_delete(http_req *req)
{
	cof_err err = { 0 };

	if (cof_webhook_delete(req->srv->st, &req->who, req->param[0], &err))
		return http_send_error(req, &err);
	return http_send_empty(req, MHD_HTTP_NO_CONTENT);
}

/* GET /v1/webhooks/{id}/deliveries?cursor=: newest first, in pages. */
enum MHD_Result http_webhook_deliveries(http_req *req)
{
	cof_err err = { 0 };
	json_t *out = NULL;
	const char *cursor;

	if (http_query(req, "cursor", &cursor, &err))
		return http_send_error(req, &err);
	int rc = cof_webhook_deliveries(req->srv->st, &req->who, req->param[0], cursor, &out,
					&err);
	return http_reply(req, rc, MHD_HTTP_OK, out, &err);
}

/* POST /v1/webhooks/{id}/deliveries/{d}/redeliver: 202, queued again now. */
enum MHD_Result http_webhook_redeliver(http_req *req)
{
	cof_err err = { 0 };
	json_t *out = NULL;
	int rc = cof_webhook_redeliver(req->srv->st, &req->who, req->param[0], req->param[1],
				       &out, &err);

	return http_reply(req, rc, MHD_HTTP_ACCEPTED, out, &err);
}
