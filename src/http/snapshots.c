/*
 * snapshots.c — snapshots, forks, restore, merge and the tar.gz archive stream.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "http/http.h"

#define ORG(req) ((req)->who.org)
#define ARCHIVE_BLOCK (64 * 1024)

enum MHD_Result http_snapshot_create(http_req *req)
{
	cof_err err = { 0 };
	json_t *out = NULL;
	int rc = cof_snapshot_create(req->srv->st, ORG(req), req->param[0], req->json,
				     &out, &err);

	return http_reply(req, rc, MHD_HTTP_CREATED, out, &err);
}

/* GET /v1/volumes/{id}/snapshots?label=k:v&label=...: all labels must hold. */
enum MHD_Result http_snapshot_list(http_req *req)
{
	const char *labels[HTTP_MAX_LABELS];
	cof_err err = { 0 };
	json_t *out = NULL;
	size_t n = 0;

	if (http_query_all(req, "label", labels, HTTP_MAX_LABELS, &n, &err))
		return http_send_error(req, &err);
	int rc = cof_snapshot_list(req->srv->st, ORG(req), req->param[0], labels, n,
				   &out, &err);
	return http_reply(req, rc, MHD_HTTP_OK, out, &err);
}

enum MHD_Result http_snapshot_get(http_req *req)
{
	cof_err err = { 0 };
	json_t *out = NULL;
	int rc = cof_snapshot_get(req->srv->st, ORG(req), req->param[0], req->param[1],
				  &out, &err);

	return http_reply(req, rc, MHD_HTTP_OK, out, &err);
}

enum MHD_Result http_snapshot_patch(http_req *req)
{
	cof_err err = { 0 };
	json_t *out = NULL;
	int rc = cof_snapshot_patch(req->srv->st, ORG(req), req->param[0],
				    req->param[1], req->json, &out, &err);

	return http_reply(req, rc, MHD_HTTP_OK, out, &err);
}

/* DELETE .../snapshots/{sid}[?force=true]: 204; a pinned one needs force (409). */
enum MHD_Result http_snapshot_delete(http_req *req)
{
	cof_err err = { 0 };
	int force = 0;

	if (http_query_bool(req, "force", 0, &force, &err) ||
	    cof_snapshot_delete(req->srv->st, ORG(req), req->param[0], req->param[1],
				force, &err))
		return http_send_error(req, &err);
	return http_send_empty(req, MHD_HTTP_NO_CONTENT);
}

enum MHD_Result http_fork(http_req *req)
{
	cof_err err = { 0 };
	json_t *out = NULL;
	int rc = cof_volume_fork(req->srv->st, ORG(req), req->param[0], req->json, &out,
				 &err);

	return http_reply(req, rc, MHD_HTTP_CREATED, out, &err);
}

enum MHD_Result http_restore(http_req *req)
{
	cof_err err = { 0 };
	json_t *out = NULL;
	int rc = cof_volume_restore(req->srv->st, ORG(req), req->param[0], req->json,
				    http_by(req, "restore"), &out, &err);

	return http_reply(req, rc, MHD_HTTP_OK, out, &err);
}

/* POST /v1/volumes/{id}/merge: 200, or 409 with the conflicts. */
enum MHD_Result http_merge(http_req *req)
{
	cof_err err = { 0 };
	json_t *out = NULL;
	int rc = cof_volume_merge(req->srv->st, ORG(req), req->param[0], req->json,
				  http_by(req, "merge"), &out, &err);

	return http_reply(req, rc, MHD_HTTP_OK, out, &err);
}

/* MHD_ContentReaderCallback over cof_archive_read. An error after the headers
 * went out can only cut the stream short (the chunked body never ends). */
static ssize_t archive_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	cof_err err = { 0 };
	ssize_t n;

	(void)pos;
	n = cof_archive_read(cls, buf, max, &err);
	if (n < 0) {
		fprintf(stderr, "cofferd: archive stream cut: %s\n", err.msg);
		cof_err_clear(&err);
		return MHD_CONTENT_READER_END_WITH_ERROR;
	}
	return n == 0 ? MHD_CONTENT_READER_END_OF_STREAM : n;
}

/* MHD_ContentReaderFreeCallback. */
static void archive_free(void *cls)
{
	cof_archive_close(cls);
}

/* GET /v1/volumes/{id}/archive?snapshot=&path=&glob=: a tar.gz stream made on
 * demand; the limits are checked by cof_archive_open, before any byte. */
enum MHD_Result http_archive(http_req *req)
{
	struct MHD_Response *resp;
	cof_archive *a = NULL;
	cof_err err = { 0 };
	const char *snap, *path, *glob;
	int64_t seq = 0;
	char seqs[24], disp[300];

	if (http_query(req, "snapshot", &snap, &err) ||
	    http_query(req, "path", &path, &err) ||
	    http_query(req, "glob", &glob, &err) ||
	    cof_archive_open(req->srv->st, ORG(req), req->param[0], snap, path, glob,
			     &a, &seq, &err))
		return http_send_error(req, &err);
	resp = http_stream_response(req, ARCHIVE_BLOCK, archive_reader, a, archive_free);
	if (resp == NULL) {
		cof_archive_close(a);
		return MHD_NO;
	}
	snprintf(seqs, sizeof(seqs), "%" PRId64, seq);
	/* volume ids are [A-Za-z0-9_-]; anything else is dropped from the name */
	size_t o = 0;
	char name[64];
	for (const char *p = req->param[0]; *p && o < sizeof(name) - 1; p++)
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || *p == '-' || *p == '_')
			name[o++] = *p;
	name[o] = '\0';
	char file[96];
	snprintf(file, sizeof(file), "%s-%s.tar.gz", o ? name : "volume", seqs);
	http_disposition("attachment", file, disp, sizeof(disp));
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/gzip");
	MHD_add_response_header(resp, "X-Volume-Seq", seqs);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_DISPOSITION, disp);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_X_CONTENT_TYPE_OPTIONS, "nosniff");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_SECURITY_POLICY, "sandbox");
	return http_queue(req, MHD_HTTP_OK, resp);
}
