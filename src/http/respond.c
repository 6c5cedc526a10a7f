/*
 * respond.c — answering: JSON bodies, the error model, empty answers.
 *
 * Every JSON answer carries `Content-Type: application/json; charset=utf-8`.
 * Errors are {"error":{"type":T,"message":M, ...extra}} where T and the status
 * come from the cof_code (cof_code_type / cof_code_status), so the library's
 * error maps 1:1 to the API's, plus "requestId". Every answer goes out through
 * http_queue, which adds the request's X-Request-Id.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "http/http.h"

#define JSON_CT "application/json; charset=utf-8"

enum MHD_Result http_queue(http_req *req, unsigned status, struct MHD_Response *resp)
{
	enum MHD_Result ret;

	if (resp == NULL)
		return MHD_NO; /* out of memory: MHD closes the connection */
	if (req->request_id[0])
		MHD_add_response_header(resp, "X-Request-Id", req->request_id);
	req->status = status;
	if (req->parking) {
		/* on a worker: the loop thread queues it after the resume */
		if (req->park_resp)
			MHD_destroy_response(req->park_resp);
		req->park_resp = resp;
		req->park_status = status;
		return MHD_YES;
	}
	ret = MHD_queue_response(req->conn, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

/* A body of unknown size read by a callback, its bytes counted for the
 * request log as the callback produces them. */
typedef struct counted {
	MHD_ContentReaderCallback reader;
	MHD_ContentReaderFreeCallback free_cls;
	void *cls;
	int64_t *out;    /* the request's bytes_out: the request outlives its reads */
} counted;

static ssize_t counted_read(void *c, uint64_t pos, char *buf, size_t max)
{
	counted *k = c;
	ssize_t n = k->reader(k->cls, pos, buf, max);

	if (n > 0)
		__atomic_add_fetch(k->out, (int64_t)n, __ATOMIC_RELAXED);
	return n;
}

static void counted_free(void *c)
{
	counted *k = c;

	if (k->free_cls)
		k->free_cls(k->cls);
	free(k);
}

struct MHD_Response *http_stream_response(http_req *req, size_t block,
					  MHD_ContentReaderCallback reader, void *cls,
					  MHD_ContentReaderFreeCallback free_cls)
{
	counted *k = cof_malloc(sizeof *k);
	struct MHD_Response *resp;

	*k = (counted){reader, free_cls, cls, &req->bytes_out};
	resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, block, counted_read, k,
						 counted_free);
	if (!resp)
		free(k);
	return resp;
}

enum MHD_Result http_send_events(http_req *req, size_t block,
				 MHD_ContentReaderCallback reader, void *cls,
				 MHD_ContentReaderFreeCallback free_cls)
{
	struct MHD_Response *resp = http_stream_response(req, block, reader, cls, free_cls);

	if (!resp) {
		free_cls(cls);
		return http_send_fail(req, COF_EINTERNAL, "out of memory");
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
	return http_queue(req, MHD_HTTP_OK, resp);
}

enum MHD_Result http_send_json_text(http_req *req, unsigned status, char *text, size_t len)
{
	struct MHD_Response *resp =
		MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);

	if (resp == NULL) {
		free(text);
		return http_send_fail(req, COF_EINTERNAL, "out of memory");
	}
	http_count_out(req, (int64_t)len);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, JSON_CT);
	return http_queue(req, status, resp);
}

/* A response holding `body` serialised (NULL body = empty), or NULL; its
 * size counted as the request's. */
static struct MHD_Response *json_response(http_req *req, json_t *body)
{
	struct MHD_Response *resp;
	char *text = NULL;
	size_t len = 0;

	if (body != NULL) {
		text = json_dumps(body, JSON_COMPACT);
		if (text == NULL)
			return NULL;
		len = strlen(text);
	}
	resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
	if (resp == NULL) {
		free(text);
		return NULL;
	}
	http_count_out(req, (int64_t)len);
	if (body != NULL) {
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, JSON_CT);
		/* an answer quotes what the client sent (paths, names): a browser
		 * must never take it for anything but JSON (issue 32.10) */
		MHD_add_response_header(resp, MHD_HTTP_HEADER_X_CONTENT_TYPE_OPTIONS, "nosniff");
	}
	return resp;
}

enum MHD_Result http_send_json_h(http_req *req, unsigned status, json_t *body,
				 const char *const *headers)
{
	struct MHD_Response *resp = json_response(req, body);

	json_decref(body);
	if (resp == NULL)
		return MHD_NO;
	for (size_t i = 0; headers && headers[i] && headers[i + 1]; i += 2)
		MHD_add_response_header(resp, headers[i], headers[i + 1]);
	return http_queue(req, status, resp);
}

enum MHD_Result http_send_json(http_req *req, unsigned status, json_t *body)
{
	return http_send_json_h(req, status, body, NULL);
}

struct MHD_Response *http_error_response(http_req *req, const cof_err *err)
{
	json_t *obj = json_object(), *wrap;
	struct MHD_Response *resp;
	cof_code code = err->code == COF_OK ? COF_EINTERNAL : err->code;

	if (obj == NULL)
		return NULL;
	json_object_set_new(obj, "type", json_string(cof_code_type(code)));
	json_object_set_new(obj, "message",
			    json_string(err->msg[0] ? err->msg : cof_code_type(code)));
	if (json_is_object(err->extra)) {
		const char *k;
		json_t *v;
		json_object_foreach(err->extra, k, v) {
			if (strcmp(k, "type") != 0 && strcmp(k, "message") != 0)
				json_object_set(obj, k, v);
		}
	}
	if (req->request_id[0])
		json_object_set_new(obj, "requestId", json_string(req->request_id));
	wrap = json_pack("{s:o}", "error", obj);
	if (wrap == NULL)
		return NULL;
	resp = json_response(req, wrap);
	json_decref(wrap);
	/* an error under /console is a console answer: its headers too */
	if (resp && req->url && !strncmp(req->url, "/console", 8) &&
	    (req->url[8] == '\0' || req->url[8] == '/'))
		http_console_headers(resp);
	return resp;
}

enum MHD_Result http_send_error(http_req *req, cof_err *err)
{
	cof_code code = err->code == COF_OK ? COF_EINTERNAL : err->code;
	struct MHD_Response *resp = http_error_response(req, err);

	if (code == COF_EINTERNAL || code == COF_EUNAVAILABLE)
		fprintf(stderr, "cofferd: %s %s: %s\n", req->method,
			req->route ? req->route->pattern : "?", err->msg);
	cof_err_clear(err);
	return http_queue(req, (unsigned)cof_code_status(code), resp);
}

enum MHD_Result http_send_fail(http_req *req, cof_code code, const char *fmt, ...)
{
	cof_err err = { 0 };
	va_list ap;

	err.code = code;
	va_start(ap, fmt);
	vsnprintf(err.msg, sizeof(err.msg), fmt, ap);
	va_end(ap);
	return http_send_error(req, &err);
}

enum MHD_Result http_send_empty(http_req *req, unsigned status)
{
	struct MHD_Response *resp =
		MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
	return http_queue(req, status, resp);
}

enum MHD_Result http_reply(http_req *req, int rc, unsigned status, json_t *out,
			   cof_err *err)
{
	if (rc != 0) {
		json_decref(out);
		return http_send_error(req, err);
	}
	if (out == NULL)
		return http_send_fail(req, COF_EINTERNAL, "the library gave no answer");
	return http_send_json(req, status, out);
}
