/*
 * links.c — minting signed links. Serving them (/l/{token}) is in files.c,
 * beside the file routes whose behaviour it shares.
 */
#include <stdio.h>
#include <string.h>
#include "http/http.h"

/* True when a Host header value is safe to echo into a URL: host name or
 * address characters and an optional port, nothing else. */
static int host_ok(const char *h)
{
	size_t n = strlen(h);

	if (n == 0 || n > 255)
		return 0;
	return strspn(h, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			 "0123456789.-_:[]") == n;
}

/* "http://HOST", HOST from the Host header (or the listen address when
 * absent or odd). */
void http_base_url(http_req *req, char *out, size_t outsz)
{
	const char *host = http_header(req, MHD_HTTP_HEADER_HOST);

	if (host != NULL && host_ok(host))
		snprintf(out, outsz, "http://%s", host);
	else
		snprintf(out, outsz, "http://%s:%u", req->srv->host, req->srv->port);
}

/* Rewrites out.url ("/l/TOKEN") as http://HOST/l/TOKEN. 0, or -1 on no memory. */
int http_absolute_url(http_req *req, json_t *out)
{
	const char *url = json_string_value(json_object_get(out, "url"));
	char base[300];
	cof_buf b = COF_BUF_INIT;
	int rc;

	if (url == NULL || url[0] != '/')
		return 0; /* already absolute, or not ours to change */
	http_base_url(req, base, sizeof base);
	rc = cof_buf_addf(&b, "%s%s", base, url);
	if (rc == 0)
		rc = json_object_set_new(out, "url", json_string(b.data));
	cof_buf_release(&b);
	return rc ? -1 : 0;
}

/* POST /v1/volumes/{id}/links: 201 {url, method, path, expiresAt}. A retry
 * with the same Idempotency-Key gets 409 and never the link again. */
enum MHD_Result http_link_create(http_req *req)
{
	cof_err err = { 0 };
	json_t *out = NULL;
	cof_idem idem_buf;
	char hash[65];
	const cof_idem *idem = http_idem(req, &idem_buf, hash);
	int rc = cof_link_create(req->srv->st, req->who.org, req->param[0], req->json,
				 idem, req->who.key_id, &out, &err);

	if (rc == 0 && out != NULL && http_absolute_url(req, out)) {
		json_decref(out);
		return http_send_fail(req, COF_EINTERNAL, "out of memory making the link");
	}
	return http_reply(req, rc, MHD_HTTP_CREATED, out, &err);
}
