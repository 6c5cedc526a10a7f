/*
 * vhttp.c — the requests of source_http.c (see vhttp.h): libcurl easy handles
 * from a pool, so that a serving thread's connection stays alive.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include "view/vhttp.h"

#define ANSWER_MAX ((size_t)64 << 20)

/* Appends `s` percent-encoded (RFC 3986 unreserved kept, and '/' when
 * keep_slash). */
void cof_vh_enc(cof_buf *u, const char *s, int keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";

	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		    *p == '-' || *p == '_' || *p == '.' || *p == '~' || (keep_slash && *p == '/'))
			cof_buf_add(u, p, 1);
		else
			cof_buf_addf(u, "%%%c%c", hex[*p >> 4], hex[*p & 15]);
	}
}

/* Copies header value `line` (after "Name:") into out when it is `name`. */
static void take_header(const char *line, size_t n, const char *name, char *out, size_t outsz)
{
	size_t nl = strlen(name);

	if (n <= nl || strncasecmp(line, name, nl) || line[nl] != ':')
		return;
	line += nl + 1;
	n -= nl + 1;
	while (n && (*line == ' ' || *line == '\t'))
		line++, n--;
	while (n && (line[n - 1] == '\r' || line[n - 1] == '\n' || line[n - 1] == ' '))
		n--;
	snprintf(out, outsz, "%.*s", (int)n, line);
}

static size_t on_header(char *d, size_t size, size_t nmemb, void *ud)
{
	cof_vh_req *q = ud;
	size_t n = size * nmemb;

	take_header(d, n, "ETag", q->etag, sizeof q->etag);
	take_header(d, n, "X-Volume-Seq", q->vseq, sizeof q->vseq);
	take_header(d, n, "Content-Range", q->crange, sizeof q->crange);
	take_header(d, n, "Content-Type", q->ctype, sizeof q->ctype);
	take_header(d, n, "Content-Length", q->clen, sizeof q->clen);
	take_header(d, n, "Last-Modified", q->lastmod, sizeof q->lastmod);
	take_header(d, n, "Retry-After", q->retry, sizeof q->retry);
	return n;
}

static size_t on_body(char *d, size_t size, size_t nmemb, void *ud)
{
	cof_vh_req *q = ud;
	size_t n = size * nmemb;

	if (q->dst && q->status / 100 == 2) {
		if (n > q->cap - q->got)
			return 0; /* more than asked: cut */
		memcpy(q->dst + q->got, d, n);
		q->got += n;
		return n;
	}
	if (q->body.len + n > ANSWER_MAX || cof_buf_add(&q->body, d, n))
		return 0;
	return n;
}

static size_t on_read(char *buf, size_t size, size_t nmemb, void *ud)
{
	cof_vh_req *q = ud;
	ssize_t k = read(q->up_fd, buf, size * nmemb);

	return k < 0 ? CURL_READFUNC_ABORT : (size_t)k;
}

static CURL *handle_get(cof_vh *h)
{
	CURL *c = NULL;

	pthread_mutex_lock(&h->mu);
	if (h->npool)
		c = h->pool[--h->npool];
	pthread_mutex_unlock(&h->mu);
	return c ? c : curl_easy_init();
}

static void handle_put(cof_vh *h, CURL *c)
{
	pthread_mutex_lock(&h->mu);
	if (h->npool < COF_VH_POOL) {
		h->pool[h->npool++] = c;
		c = NULL;
	}
	pthread_mutex_unlock(&h->mu);
	if (c)
		curl_easy_cleanup(c);
}

/* Status known from the first header line, so that on_body can tell a
 * 2xx body from an error's. */
static size_t on_header_status(char *d, size_t size, size_t nmemb, void *ud)
{
	cof_vh_req *q = ud;
	size_t n = size * nmemb;
	int st;

	if (n > 9 && !strncmp(d, "HTTP/", 5) && sscanf(d, "HTTP/%*s %d", &st) == 1)
		q->status = st;
	return on_header(d, size, nmemb, ud);
}

/* One try of q on a pooled handle (cof_vh_run). */
static int run_once(cof_vh *h, cof_vh_req *q)
{
	CURL *c = handle_get(h);
	struct curl_slist *hl = NULL;

	if (!c) {
		snprintf(q->errbuf, sizeof q->errbuf, "out of memory");
		return -1;
	}
	curl_easy_reset(c);
	q->errbuf[0] = '\0';
	curl_easy_setopt(c, CURLOPT_URL, q->url.data);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, q->errbuf);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
	curl_easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
	/* a server that stops answering fails the call (EIO) instead of
	 * holding the file system: under 1 byte/s for 60 s */
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header_status);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, q);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, q);
	if (h->auth)
		hl = curl_slist_append(hl, h->auth);
	hl = curl_slist_append(hl, "Expect:");
	for (int i = 0; q->hdr[i]; i++)
		hl = curl_slist_append(hl, q->hdr[i]);
	if (!strcmp(q->method, "HEAD")) {
		curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
	} else if (!strcmp(q->method, "PUT")) {
		curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
		curl_easy_setopt(c, CURLOPT_READDATA, q);
		curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)q->up_len);
		hl = curl_slist_append(hl, "Content-Type:");
	} else if (q->json) {
		hl = curl_slist_append(hl, "Content-Type: application/json");
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, q->json);
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, q->method);
	} else if (strcmp(q->method, "GET")) {
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, q->method);
	}
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
	q->rc = curl_easy_perform(c);
	if (q->rc == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &q->status);
	curl_slist_free_all(hl);
	if (q->rc != CURLE_OK) {
		curl_easy_cleanup(c); /* a broken connection is not kept */
		if (!q->errbuf[0])
			snprintf(q->errbuf, sizeof q->errbuf, "%s", curl_easy_strerror(q->rc));
		return -1;
	}
	handle_put(h, c);
	return 0;
}

int cof_vh_run(cof_vh *h, cof_vh_req *q)
{
	for (int tries = 1;; tries++) {
		int rc = run_once(h, q);
		if (rc || q->status != 429 || tries == COF_VH_TRIES)
			return rc;
		/* over the key's --rate-limit: wait as told (at most 5 s), again */
		long s = strtol(q->retry, NULL, 10);
		usleep((useconds_t)(s < 1 ? 1 : s > 5 ? 5 : s) * 1000000);
		if (q->up_fd >= 0 && lseek(q->up_fd, 0, SEEK_SET) != 0)
			return 0; /* the 429 stands */
		q->status = 0;
		q->got = 0;
		q->body.len = 0;
		q->etag[0] = q->vseq[0] = q->crange[0] = q->ctype[0] = q->lastmod[0] = '\0';
		q->clen[0] = q->retry[0] = '\0';
	}
}

void cof_vh_req_init(cof_vh_req *q, const char *method)
{
	memset(q, 0, sizeof *q);
	q->method = method;
	q->up_fd = -1;
}

void cof_vh_req_done(cof_vh_req *q)
{
	cof_buf_release(&q->url);
	cof_buf_release(&q->body);
}

/* The error message of an API answer (or its status). */
void cof_vh_msg(cof_vh_req *q, char *out, size_t outsz)
{
	json_t *j = q->body.len ? json_loadb(q->body.data, q->body.len, 0, NULL) : NULL;
	const char *m = json_string_value(json_object_get(json_object_get(j, "error"),
							    "message"));

	if (m)
		snprintf(out, outsz, "%s", m);
	else
		snprintf(out, outsz, "HTTP status %ld", q->status);
	json_decref(j);
}

/* Fills err from a request that failed (no answer, or not 2xx). */
int cof_vh_error(cof_vh *h, cof_vh_req *q, cof_err *err)
{
	char msg[512];
	cof_code code;

	if (q->rc != CURLE_OK || !q->status)
		return cof_error(err, COF_EUNAVAILABLE, "cannot reach cofferd at %s: %s", h->url,
				 q->errbuf[0] ? q->errbuf : "no answer");
	cof_vh_msg(q, msg, sizeof msg);
	switch (q->status) {
	case 400: code = COF_EVALIDATION; break;
	case 401: code = COF_EUNAUTHORIZED; break;
	case 403: code = COF_EFORBIDDEN; break;
	case 404: code = COF_ENOTFOUND; break;
	case 409: code = COF_ECONFLICT; break;
	case 410: code = COF_EGONE; break;
	case 412: code = COF_EPRECONDITION; break;
	default: code = q->status >= 500 ? COF_EUNAVAILABLE : COF_EINTERNAL;
	}
	if (q->status == 401)
		return cof_error(err, code, "cofferd at %s refused the key: %s", h->url, msg);
	return cof_error(err, code, "cofferd at %s: %s", h->url, msg);
}

/* GET of a JSON answer: 0 with *out, or -1 with err. */
int cof_vh_json(cof_vh *h, cof_vh_req *q, json_t **out, cof_err *err)
{
	json_error_t je;

	if (cof_vh_run(h, q) || q->status / 100 != 2)
		return cof_vh_error(h, q, err);
	if (!(*out = json_loadb(q->body.data ? q->body.data : "", q->body.len, 0, &je)))
		return cof_error(err, COF_EINTERNAL, "cofferd at %s answered no JSON: %s", h->url,
				 je.text);
	return 0;
}


int cof_vh_init(cof_vh *h, const char *url, const char *key)
{
	size_t len = strlen(url);

	memset(h, 0, sizeof *h);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	pthread_mutex_init(&h->mu, NULL);
	while (len && url[len - 1] == '/')
		len--;
	if (asprintf(&h->url, "%s%.*s", strstr(url, "://") ? "" : "http://", (int)len, url) < 0)
		h->url = NULL;
	if (key && *key && asprintf(&h->auth, "Authorization: Bearer %s", key) < 0)
		h->auth = NULL;
	return h->url && (h->auth || !key || !*key) ? 0 : -1;
}

void cof_vh_release(cof_vh *h)
{
	for (int i = 0; i < h->npool; i++)
		curl_easy_cleanup(h->pool[i]);
	h->npool = 0;
	pthread_mutex_destroy(&h->mu);
	free(h->url);
	free(h->auth);
	h->url = h->auth = NULL;
}
