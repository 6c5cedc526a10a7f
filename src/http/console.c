/*
 * console.c — GET /console and /console/{file}: the web console.
 *
 * The console is a handful of static files (console/: index.html, ES modules,
 * one style sheet) turned into C arrays at build time (scripts/embed-console,
 * console_assets.inc), so cofferd needs no file at run time and what is served
 * is what the binary was built with. Only those files exist under /console:
 * nothing from a volume is ever served here, so a volume file named
 * `console/...` or holding HTML cannot run in the console's origin.
 *
 * Every answer carries a strict Content-Security-Policy (scripts and styles
 * only from this origin, no inline script, no framing), nosniff, and
 * `Cache-Control: no-cache` with a strong ETag: browsers revalidate each load
 * (a 304 costs nothing) and never run a stale console after an upgrade.
 */
#include <string.h>
#include "http/http.h"

typedef struct console_asset {
	const char *name;
	const unsigned char *data;
	size_t size;
	const char *etag;
} console_asset;

#include "console_assets.inc"

#define NASSETS (sizeof(console_assets) / sizeof(console_assets[0]))

/* img-src blob: is for images a read-only key fetched itself (it may not make
 * signed links); connect-src 'self' is the API. */
#define CONSOLE_CSP                                                            \
	"default-src 'self'; img-src 'self' blob:; object-src 'none'; "       \
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

/* The media type of a console file, by its extension. */
static const char *asset_type(const char *name)
{
	const char *dot = strrchr(name, '.');

	if (dot == NULL)
		return "application/octet-stream";
	if (strcmp(dot, ".html") == 0)
		return "text/html; charset=utf-8";
	if (strcmp(dot, ".js") == 0)
		return "text/javascript; charset=utf-8";
	if (strcmp(dot, ".css") == 0)
		return "text/css; charset=utf-8";
	if (strcmp(dot, ".svg") == 0)
		return "image/svg+xml";
	return "application/octet-stream";
}

/* The embedded file called `name` ("" = index.html), or NULL. */
static const console_asset *asset_find(const char *name)
{
	if (name[0] == '\0')
		name = "index.html";
	for (size_t i = 0; i < NASSETS; i++)
		if (strcmp(console_assets[i].name, name) == 0)
			return &console_assets[i];
	return NULL;
}

void http_console_headers(struct MHD_Response *resp)
{
	MHD_add_response_header(resp, "Content-Security-Policy", CONSOLE_CSP);
	if (!MHD_get_response_header(resp, MHD_HTTP_HEADER_X_CONTENT_TYPE_OPTIONS))
		MHD_add_response_header(resp, MHD_HTTP_HEADER_X_CONTENT_TYPE_OPTIONS, "nosniff");
	MHD_add_response_header(resp, "X-Frame-Options", "DENY");
	MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
}

/* Sends one console file: 200 with its bytes, or 304 when If-None-Match
 * already names its ETag; the console's headers on both. */
static enum MHD_Result send_asset(http_req *req, const console_asset *a)
{
	const char *inm = http_header(req, MHD_HTTP_HEADER_IF_NONE_MATCH);
	int fresh = inm != NULL && http_etag_listed(inm, a->etag, 1);
	struct MHD_Response *resp = MHD_create_response_from_buffer(
		fresh ? 0 : a->size, fresh ? NULL : (void *)a->data, MHD_RESPMEM_PERSISTENT);

	if (resp == NULL)
		return http_send_fail(req, COF_EINTERNAL, "out of memory");
	http_count_out(req, fresh ? 0 : (int64_t)a->size);
	if (!fresh)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, asset_type(a->name));
	MHD_add_response_header(resp, MHD_HTTP_HEADER_ETAG, a->etag);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
	http_console_headers(resp);
	return http_queue(req, fresh ? MHD_HTTP_NOT_MODIFIED : MHD_HTTP_OK, resp);
}

/* GET /console: the page. No key: the page asks the user for one. */
enum MHD_Result http_console(http_req *req)
{
	return send_asset(req, asset_find(""));
}

/* GET /console/{file}: one of the console's files; 404 naming it otherwise. */
enum MHD_Result http_console_file(http_req *req)
{
	const console_asset *a = asset_find(req->param[0]);

	if (a == NULL)
		return http_send_fail(req, COF_ENOTFOUND,
				      "the console has no file '%s'", req->param[0]);
	return send_asset(req, a);
}
