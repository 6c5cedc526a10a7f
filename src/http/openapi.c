/*
 * openapi.c — GET /v1/openapi.json: the API's OpenAPI 3.1 description.
 *
 * docs/openapi.json is the source; the Makefile turns it into a C array
 * (openapi_json.inc, with xxd -i) so the document served is always the one
 * the binary was built with and cofferd needs no file at run time.
 * tests/blackbox/test_openapi.py keeps it true to the router.
 */
#include "http/http.h"

static const char openapi_doc[] = {
#include "openapi_json.inc"
	, 0x00};

/* Answers 200 with the document; no key needed (the route has no auth flag). */
enum MHD_Result http_openapi(http_req *req)
{
	struct MHD_Response *resp = MHD_create_response_from_buffer(
		sizeof openapi_doc - 1, (void *)openapi_doc, MHD_RESPMEM_PERSISTENT);

	if (resp == NULL)
		return http_send_fail(req, COF_EINTERNAL, "out of memory");
	http_count_out(req, (int64_t)sizeof openapi_doc - 1);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	return http_queue(req, MHD_HTTP_OK, resp);
}
