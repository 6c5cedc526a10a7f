/*
 * readall.c — GET /v1/volumes/{id}/files?content=true: the read-all answer
 * streamed from cof_readall as the client drains it (chunked; the limits are
 * decided before the first byte, so a refusal is still a JSON error). A file
 * whose content cannot be read mid-stream cuts the connection: the client
 * sees a truncated answer, never a wrong one, and the cause is logged.
 */
#include <inttypes.h>
#include <stdio.h>
#include "http/http.h"

/* What MHD may ask for at once; its connection pool bounds it further. */
#define READALL_BLOCK (64 * 1024)

/* MHD_ContentReaderCallback over cof_readall_read. */
static ssize_t readall_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	cof_err err = { 0 };
	ssize_t n;

	(void)pos;
	n = cof_readall_read(cls, buf, max, &err);
	if (n < 0) {
		fprintf(stderr, "cofferd: read-all stream cut at byte %" PRIu64 ": %s\n", pos,
			err.msg);
		cof_err_clear(&err);
		return MHD_CONTENT_READER_END_WITH_ERROR;
	}
	return n == 0 ? MHD_CONTENT_READER_END_OF_STREAM : n;
}

/* MHD_ContentReaderFreeCallback. */
static void readall_free(void *cls)
{
	cof_readall_close(cls);
}

enum MHD_Result http_read_all(http_req *req, const cof_list_opts *o)
{
	struct MHD_Response *resp;
	cof_readall *ra = NULL;
	cof_err err = { 0 };

	if (cof_readall_open(req->srv->st, req->who.org, req->param[0], o, &ra, NULL, &err))
		return http_send_error(req, &err);
	resp = http_stream_response(req, READALL_BLOCK, readall_reader, ra, readall_free);
	if (resp == NULL) {
		cof_readall_close(ra);
		return http_send_fail(req, COF_EINTERNAL, "out of memory");
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
				"application/json; charset=utf-8");
	return http_queue(req, MHD_HTTP_OK, resp);
}
