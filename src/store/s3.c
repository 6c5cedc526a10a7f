/*
 * s3.c — the S3 client of the S3 blob store: URL parsing, a pool of curl easy
 * handles, one signed request, and the bits of XML S3 answers with.
 *
 * Signing is libcurl's CURLOPT_AWS_SIGV4 ("aws:amz:REGION:s3"). libcurl 7.88
 * signs the path and query exactly as they are in the URL, so callers build
 * them canonical; every request sends x-amz-content-sha256 (S3 and s3rver
 * require it, and libcurl signs it instead of hashing an upload it cannot see).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <curl/curl.h>
#include "store/s3.h"

#define POOL_MAX 16
#define CONNECT_TIMEOUT_MS 5000L
#define REQUEST_TIMEOUT_MS 30000L  /* a request without a large body, in all */
#define LOW_SPEED_SECONDS 30L      /* a large body: stalled this long is an error */
#define ERROR_BODY_MAX 16384

struct cof_s3 {
	cof_s3_url u;
	char name[400];
	char sigv4[96];
	char *access, *secret, *token;
	pthread_mutex_t mu;
	CURL *idle[POOL_MAX];
	int nidle;
};

static const char EMPTY_SHA[] =
	"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/* ------------------------------------------------------------------ URLs */

/* Decodes %XX in [s, s+n) into out; -1 on a bad escape, NUL or overflow. */
static int url_decode(const char *s, size_t n, char *out, size_t outsz)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		int c = (unsigned char)s[i];
		if (c == '%') {
			if (i + 2 >= n)
				return -1;
			if (!isxdigit((unsigned char)s[i + 1]) || !isxdigit((unsigned char)s[i + 2]))
				return -1;
			char hex[3] = {s[i + 1], s[i + 2], 0};
			c = (int)strtol(hex, NULL, 16);
			i += 2;
		}
		if (c == 0 || o + 1 >= outsz)
			return -1;
		out[o++] = (char)c;
	}
	out[o] = '\0';
	return 0;
}

static int bucket_check(const char *b, cof_err *err)
{
	size_t n = strlen(b);

	if (n < 3 || n > 63)
		return cof_error(err, COF_EVALIDATION, "bad --blobs URL: the bucket '%s' must "
				 "have 3 to 63 characters", b);
	for (size_t i = 0; i < n; i++)
		if (!(islower((unsigned char)b[i]) || isdigit((unsigned char)b[i]) ||
		      b[i] == '.' || b[i] == '-'))
			return cof_error(err, COF_EVALIDATION, "bad --blobs URL: the bucket '%s' "
					 "may hold only a-z, 0-9, '.' and '-'", b);
	if (!isalnum((unsigned char)b[0]) || !isalnum((unsigned char)b[n - 1]))
		return cof_error(err, COF_EVALIDATION, "bad --blobs URL: the bucket '%s' must "
				 "start and end with a letter or digit", b);
	return 0;
}

/* The prefix stays within characters that every S3 and libcurl's signing
 * agree on unescaped, so the signed path is the path sent. */
static int prefix_check(const char *p, cof_err *err)
{
	const char *seg = p;

	for (const char *c = p;; c++) {
		if (*c == '/' || *c == '\0') {
			size_t n = (size_t)(c - seg);
			if (n == 0 || (n == 1 && seg[0] == '.') ||
			    (n == 2 && seg[0] == '.' && seg[1] == '.'))
				return cof_error(err, COF_EVALIDATION, "bad --blobs URL: the prefix "
						 "'%s' has an empty, '.' or '..' segment", p);
			if (!*c)
				return 0;
			seg = c + 1;
		} else if (!isalnum((unsigned char)*c) && *c != '-' && *c != '_' && *c != '.') {
			return cof_error(err, COF_EVALIDATION, "bad --blobs URL: the prefix '%s' "
					 "may hold only A-Z, a-z, 0-9, '-', '_', '.' and '/'", p);
		}
	}
}

static int endpoint_check(const char *e, cof_err *err)
{
	const char *host = NULL;

	if (!strncmp(e, "http://", 7))
		host = e + 7;
	else if (!strncmp(e, "https://", 8))
		host = e + 8;
	if (!host || !*host)
		return cof_error(err, COF_EVALIDATION, "bad --blobs URL: the endpoint '%s' must "
				 "be http://HOST[:PORT] or https://HOST[:PORT]", e);
	for (const char *c = host; *c; c++)
		if (!(isalnum((unsigned char)*c) || strchr(".-:[]", *c)))
			return cof_error(err, COF_EVALIDATION, "bad --blobs URL: the endpoint '%s' "
					 "must be a scheme, a host and a port only (no path, "
					 "user or query)", e);
	return 0;
}

static int region_check(const char *r, cof_err *err)
{
	if (!*r)
		return cof_error(err, COF_EVALIDATION, "bad --blobs URL: the region is empty");
	for (const char *c = r; *c; c++)
		if (!(islower((unsigned char)*c) || isdigit((unsigned char)*c) || *c == '-'))
			return cof_error(err, COF_EVALIDATION, "bad --blobs URL: the region '%s' "
					 "may hold only a-z, 0-9 and '-'", r);
	return 0;
}

/* Reads one parameter `name=value` of the query into the field it names. */
static int url_param(const char *p, size_t n, cof_s3_url *u, int *seen, cof_err *err)
{
	const char *eq = memchr(p, '=', n);
	size_t klen = eq ? (size_t)(eq - p) : n;
	char *dst;
	size_t dstsz;
	int bit;

	if (klen == 8 && !strncmp(p, "endpoint", 8))
		dst = u->endpoint, dstsz = sizeof u->endpoint, bit = 1;
	else if (klen == 6 && !strncmp(p, "region", 6))
		dst = u->region, dstsz = sizeof u->region, bit = 2;
	else
		return cof_error(err, COF_EVALIDATION, "bad --blobs URL: unknown parameter "
				 "'%.*s' (known: endpoint, region)", (int)(klen > 64 ? 64 : klen), p);
	if (*seen & bit)
		return cof_error(err, COF_EVALIDATION, "bad --blobs URL: '%.*s' is given twice",
				 (int)klen, p);
	*seen |= bit;
	if (!eq || url_decode(eq + 1, n - klen - 1, dst, dstsz))
		return cof_error(err, COF_EVALIDATION, "bad --blobs URL: '%.*s' needs a value "
				 "of at most %zu bytes (percent-escapes allowed)", (int)klen, p,
				 dstsz - 1);
	return 0;
}

int cof_s3_url_parse(const char *url, cof_s3_url *u, cof_err *err)
{
	const char *p, *slash, *q;
	int seen = 0;

	memset(u, 0, sizeof *u);
	if (strncmp(url, "s3://", 5))
		return cof_error(err, COF_EVALIDATION, "bad --blobs URL '%.100s': it must "
				 "start with s3://", url);
	p = url + 5;
	q = strchr(p, '?');
	if (!q)
		q = p + strlen(p);
	slash = memchr(p, '/', (size_t)(q - p));
	size_t blen = (size_t)((slash ? slash : q) - p);
	if (blen >= sizeof u->bucket)
		return cof_error(err, COF_EVALIDATION, "bad --blobs URL: the bucket must have "
				 "3 to 63 characters");
	memcpy(u->bucket, p, blen);
	if (bucket_check(u->bucket, err))
		return -1;
	if (slash) {
		size_t plen = (size_t)(q - slash - 1);
		while (plen && slash[plen] == '/')  /* a trailing '/' says nothing */
			plen--;
		if (plen >= sizeof u->prefix)
			return cof_error(err, COF_EVALIDATION, "bad --blobs URL: the prefix is "
					 "longer than %zu bytes", sizeof u->prefix - 1);
		memcpy(u->prefix, slash + 1, plen);
		if (plen && prefix_check(u->prefix, err))
			return -1;
	}
	for (p = *q ? q + 1 : q; *p;) {
		const char *amp = strchr(p, '&');
		size_t n = amp ? (size_t)(amp - p) : strlen(p);
		if (n && url_param(p, n, u, &seen, err))
			return -1;
		p += n + (amp ? 1 : 0);
	}
	if (!(seen & 2))
		snprintf(u->region, sizeof u->region, "us-east-1");
	if (region_check(u->region, err))
		return -1;
	if (!u->endpoint[0])
		snprintf(u->endpoint, sizeof u->endpoint, "https://s3.%s.amazonaws.com",
			 u->region);
	size_t el = strlen(u->endpoint);
	while (el > 0 && u->endpoint[el - 1] == '/')
		u->endpoint[--el] = '\0';
	return endpoint_check(u->endpoint, err);
}

/* ---------------------------------------------------------------- client */

static void global_init(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

int cof_s3_open(const cof_s3_url *u, const char *access_key, const char *secret_key,
		const char *token, cof_s3 **out, cof_err *err)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	cof_s3 *s = cof_calloc(1, sizeof *s);

	/* curl_global_init is not thread-safe; the first open makes it happen. */
	pthread_once(&once, global_init);
	s->u = *u;
	snprintf(s->name, sizeof s->name, "blob store 's3://%s%s%s'", u->bucket,
		 u->prefix[0] ? "/" : "", u->prefix);
	snprintf(s->sigv4, sizeof s->sigv4, "aws:amz:%s:s3", u->region);
	s->access = cof_strdup(access_key);
	s->secret = cof_strdup(secret_key);
	s->token = token && *token ? cof_strdup(token) : NULL;
	pthread_mutex_init(&s->mu, NULL);
	*out = s;
	(void)err;
	return 0;
}

void cof_s3_close(cof_s3 *s)
{
	if (!s)
		return;
	for (int i = 0; i < s->nidle; i++)
		curl_easy_cleanup(s->idle[i]);
	pthread_mutex_destroy(&s->mu);
	free(s->access);
	if (s->secret)
		explicit_bzero(s->secret, strlen(s->secret));
	free(s->secret);
	free(s->token);
	free(s);
}

const char *cof_s3_name(const cof_s3 *s)
{
	return s->name;
}

/* A handle from the pool (its connections kept), or a new one; NULL on OOM. */
static CURL *handle_get(cof_s3 *s)
{
	CURL *h = NULL;

	pthread_mutex_lock(&s->mu);
	if (s->nidle)
		h = s->idle[--s->nidle];
	pthread_mutex_unlock(&s->mu);
	return h ? h : curl_easy_init();
}

/* Back to the pool with its options reset (connections stay open). */
static void handle_put(cof_s3 *s, CURL *h)
{
	curl_easy_reset(h);
	pthread_mutex_lock(&s->mu);
	if (s->nidle < POOL_MAX) {
		s->idle[s->nidle++] = h;
		h = NULL;
	}
	pthread_mutex_unlock(&s->mu);
	if (h)
		curl_easy_cleanup(h);
}

/* --------------------------------------------------------------- requests */

typedef struct xfer {
	cof_s3_req *r;
	CURL *h;
	int64_t up_pos;
	cof_buf errbody;
	int overflow;
} xfer;

/* Feeds the body from memory or from the spool file (pread: the fd is shared
 * by nothing else, and the offset of a part is fixed). */
static size_t on_read(char *buf, size_t size, size_t n, void *arg)
{
	xfer *x = arg;
	cof_s3_req *r = x->r;
	int64_t left = r->up_len - x->up_pos;
	size_t want = size * n;
	ssize_t got;

	if (left <= 0)
		return 0;
	if ((int64_t)want > left)
		want = (size_t)left;
	if (r->up_mem) {
		memcpy(buf, r->up_mem + x->up_pos, want);
		got = (ssize_t)want;
	} else {
		do
			got = pread(r->up_fd, buf, want, r->up_off + x->up_pos);
		while (got < 0 && errno == EINTR);
		if (got <= 0)
			return CURL_READFUNC_ABORT;
	}
	x->up_pos += got;
	return (size_t)got;
}

/* libcurl rewinds the body when it must send it again (a reused connection
 * that turned out closed). */
static int on_seek(void *arg, curl_off_t off, int origin)
{
	xfer *x = arg;

	if (origin != SEEK_SET || off < 0 || off > x->r->up_len)
		return CURL_SEEKFUNC_CANTSEEK;
	x->up_pos = off;
	return CURL_SEEKFUNC_OK;
}

static size_t on_write(char *data, size_t size, size_t n, void *arg)
{
	xfer *x = arg;
	cof_s3_req *r = x->r;
	size_t len = size * n;
	long status = 0;

	curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &status);
	if (status < 200 || status > 299) {
		cof_buf_add(&x->errbody, data, len); /* bounded: the rest is dropped */
		return len;
	}
	if (r->dst) {
		if (len > r->dst_cap - r->dst_got) {
			x->overflow = 1;
			return 0;
		}
		memcpy(r->dst + r->dst_got, data, len);
		r->dst_got += len;
	} else if (r->body && cof_buf_add(r->body, data, len)) {
		x->overflow = 1;
		return 0;
	}
	return len;
}

static size_t on_header(char *data, size_t size, size_t n, void *arg)
{
	xfer *x = arg;
	size_t len = size * n;

	if (len > 5 && !strncmp(data, "HTTP/", 5)) {
		x->r->etag[0] = '\0';  /* a new answer (after 100 Continue) */
		x->r->total = -1;
	} else if (len > 14 && !strncasecmp(data, "content-range:", 14)) {
		/* bytes A-B/TOTAL */
		const char *slash = memchr(data, '/', len);
		if (slash && slash + 1 < data + len && isdigit((unsigned char)slash[1]))
			x->r->total = strtoll(slash + 1, NULL, 10);
	} else if (len > 5 && !strncasecmp(data, "etag:", 5)) {
		const char *v = data + 5;
		size_t vl = len - 5;
		while (vl && (*v == ' ' || *v == '\t'))
			v++, vl--;
		while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
			vl--;
		if (vl < sizeof x->r->etag) {
			memcpy(x->r->etag, v, vl);
			x->r->etag[vl] = '\0';
		}
	}
	return len;
}

/* Sets up `h` for `r`; the header list is the caller's to free after. */
static struct curl_slist *setup(cof_s3 *s, CURL *h, cof_s3_req *r, xfer *x, cof_buf *url,
				char *errbuf)
{
	struct curl_slist *hd = NULL;
	char line[256];

	cof_buf_addf(url, "%s/%s", s->u.endpoint, s->u.bucket);
	if (r->key) {
		cof_buf_adds(url, "/");
		cof_s3_escape(url, r->key, 1);
	}
	if (r->query)
		cof_buf_addf(url, "?%s", r->query);
	curl_easy_setopt(h, CURLOPT_URL, url->data);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_AWS_SIGV4, s->sigv4);
	curl_easy_setopt(h, CURLOPT_USERNAME, s->access);
	curl_easy_setopt(h, CURLOPT_PASSWORD, s->secret);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, CONNECT_TIMEOUT_MS);
	if (r->bulk) {
		curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
		curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, r->stall_seconds > 0 ?
				 r->stall_seconds : LOW_SPEED_SECONDS);
	} else {
		curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, REQUEST_TIMEOUT_MS);
	}
	curl_easy_setopt(h, CURLOPT_FILETIME, 1L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, x);
	snprintf(line, sizeof line, "x-amz-content-sha256: %s",
		 r->payload_sha ? r->payload_sha : EMPTY_SHA);
	hd = curl_slist_append(hd, line);
	if (r->range) {
		snprintf(line, sizeof line, "Range: %s", r->range);
		hd = curl_slist_append(hd, line);
	}
	if (r->ctype) {
		snprintf(line, sizeof line, "Content-Type: %s", r->ctype);
		hd = curl_slist_append(hd, line);
	}
	if (s->token) {
		cof_buf t = COF_BUF_INIT;
		cof_buf_addf(&t, "x-amz-security-token: %s", s->token);
		hd = curl_slist_append(hd, t.data);
		cof_buf_release(&t);
	}
	if (!strcmp(r->method, "PUT")) {
		curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)r->up_len);
		curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
		curl_easy_setopt(h, CURLOPT_READDATA, x);
		curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, on_seek);
		curl_easy_setopt(h, CURLOPT_SEEKDATA, x);
	} else if (!strcmp(r->method, "POST")) {
		curl_easy_setopt(h, CURLOPT_POST, 1L);
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, r->up_mem ? r->up_mem : "");
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->up_mem_len);
	} else if (!strcmp(r->method, "HEAD")) {
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	} else if (strcmp(r->method, "GET")) {
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, r->method);
	}
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
	return hd;
}

/* Maps an answer that is neither 2xx, 404 nor 416 to the API's error. */
static int answer_error(cof_s3 *s, cof_s3_req *r, const cof_buf *body, const char *doing,
			cof_err *err)
{
	const char *from = body->data ? body->data : "";
	char msg[200] = "";

	cof_s3_xml_tag(from, &from, "Code", r->what, sizeof r->what);
	from = body->data ? body->data : "";
	cof_s3_xml_tag(from, &from, "Message", msg, sizeof msg);
	if (r->status >= 500 || r->status == 429)
		return cof_error(err, COF_EUNAVAILABLE, "%s is unavailable (%s): it answered "
				 "%ld %s", s->name, doing, r->status, r->what);
	if (!strcmp(r->what, "SignatureDoesNotMatch") || !strcmp(r->what, "InvalidAccessKeyId") ||
	    r->status == 403)
		return cof_error(err, COF_EINTERNAL, "%s refused the server's credentials (%s): "
				 "%ld %s; check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY",
				 s->name, doing, r->status, r->what[0] ? r->what : "forbidden");
	return cof_error(err, COF_EINTERNAL, "%s answered %ld %s (%s)%s%s", s->name, r->status,
			 r->what, doing, msg[0] ? ": " : "", msg);
}

/* One attempt: 0, -1 (err set), or -2 (err set) when it failed in a way worth
 * one more try. */
static int attempt(cof_s3 *s, cof_s3_req *r, const char *doing, cof_err *err)
{
	CURL *h = handle_get(s);
	xfer x = {.r = r, .h = h, .errbody = {NULL, 0, 0, ERROR_BODY_MAX}};
	cof_buf url = COF_BUF_INIT;
	char errbuf[CURL_ERROR_SIZE] = "";
	struct curl_slist *hd;
	CURLcode rc;
	int out = 0;

	if (!h)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	r->status = 0, r->dst_got = 0, r->length = -1, r->mtime = -1, r->total = -1;
	r->etag[0] = r->what[0] = '\0';
	if (r->body)
		cof_buf_reset(r->body);
	hd = setup(s, h, r, &x, &url, errbuf);
	rc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
	if (rc == CURLE_OK) {
		curl_off_t cl = -1, ft = -1;
		curl_easy_getinfo(h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
		curl_easy_getinfo(h, CURLINFO_FILETIME_T, &ft);
		r->length = cl, r->mtime = ft;
	}
	curl_slist_free_all(hd);
	if (rc != CURLE_OK) {
		/* a handle whose transfer failed keeps no connection worth reusing */
		curl_easy_cleanup(h);
		h = NULL;
	}
	if (rc != CURLE_OK && x.overflow) {
		out = cof_error(err, COF_EINTERNAL, "%s sent a longer answer than asked (%s)",
				s->name, doing);
	} else if (rc != CURLE_OK) {
		cof_error(err, COF_EUNAVAILABLE, "%s is unavailable (%s): %s", s->name, doing,
			  errbuf[0] ? errbuf : curl_easy_strerror(rc));
		out = -2;
	} else if ((r->status < 200 || r->status > 299) && r->status != 404 &&
		   !(r->status == 416 && r->range)) {
		answer_error(s, r, &x.errbody, doing, err);
		out = r->status >= 500 ? -2 : -1;
	}
	if (h)
		handle_put(s, h);
	cof_buf_release(&x.errbody);
	cof_buf_release(&url);
	return out;
}

int cof_s3_do(cof_s3 *s, cof_s3_req *r, const char *doing, cof_err *err)
{
	int rc = attempt(s, r, doing, err);

	/* One more try for what may be retried as it is: a dropped connection or
	 * a 5xx; a POST (starting or completing an upload) is not retried. */
	if (rc == -2 && strcmp(r->method, "POST")) {
		struct timespec ts = {0, 100 * 1000 * 1000};
		cof_err_clear(err);
		nanosleep(&ts, NULL);
		rc = attempt(s, r, doing, err);
	}
	return rc ? -1 : 0;
}

/* ------------------------------------------------------------ encoding */

void cof_s3_escape(cof_buf *b, const char *in, int keep_slash)
{
	for (const unsigned char *c = (const unsigned char *)in; *c; c++) {
		if (isalnum(*c) || *c == '-' || *c == '_' || *c == '.' || *c == '~' ||
		    (keep_slash && *c == '/'))
			cof_buf_add(b, c, 1);
		else
			cof_buf_addf(b, "%%%02X", *c);
	}
}

int cof_s3_xml_tag(const char *xml, const char **from, const char *tag, char *out,
		   size_t outsz)
{
	char open[64], close[64];
	const char *a, *z;
	size_t o = 0;

	snprintf(open, sizeof open, "<%s>", tag);
	snprintf(close, sizeof close, "</%s>", tag);
	if (!(a = strstr(*from ? *from : xml, open)))
		return -1;
	a += strlen(open);
	if (!(z = strstr(a, close)))
		return -1;
	*from = z + strlen(close);
	static const struct { const char *ent; char c; } ents[] = {
		{"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''},
		{"&#34;", '"'}, {"&#39;", '\''},
	};
	while (a < z && o + 1 < outsz) {
		char c = *a++;
		if (c == '&') {
			for (size_t i = 0; i < sizeof ents / sizeof *ents; i++) {
				size_t n = strlen(ents[i].ent);
				if ((size_t)(z - a + 1) >= n && !strncmp(a - 1, ents[i].ent, n)) {
					c = ents[i].c;
					a += n - 1;
					break;
				}
			}
		}
		out[o++] = c;
	}
	out[o] = '\0';
	return 0;
}
