/*
 * vhttp.h — the requests of source_http.c: one cofferd (its URL and key), a
 * pool of libcurl easy handles (kept-alive connections), and one request
 * with what came back.
 */
#ifndef COF_VHTTP_H
#define COF_VHTTP_H

#include <curl/curl.h>
#include <pthread.h>
#include <stdint.h>
#include "coffer.h"
#include "util/util.h"

#define COF_VH_POOL 64          /* idle handles kept */
#define COF_VH_TRIES 5          /* tries of a request answered 429 */

/* One cofferd. */
typedef struct cof_vh {
	char *url;               /* without a trailing '/' */
	char *auth;              /* "Authorization: Bearer KEY", or NULL */
	pthread_mutex_t mu;      /* the pool */
	CURL *pool[COF_VH_POOL];
	int npool;
} cof_vh;

/* One request and what came back. */
typedef struct cof_vh_req {
	const char *method;      /* "GET", "HEAD", "PUT", "DELETE", "POST" */
	cof_buf url;
	const char *hdr[3];      /* extra headers, NULL-ended */
	const char *json;        /* a JSON body, or NULL */
	int up_fd;               /* a PUT body read from this fd, or -1 */
	int64_t up_len;
	char *dst;               /* a 2xx body into dst (cap bytes), else into `body` */
	size_t cap, got;
	cof_buf body;
	long status;             /* 0 = no answer */
	char etag[32], vseq[24], crange[96], ctype[128], lastmod[64], clen[24], retry[16];
	char errbuf[CURL_ERROR_SIZE];
	CURLcode rc;
} cof_vh_req;

/* Sets up h for `url` ("host:port" gets http://) and `key` (NULL = none). 0 or -1. */
int cof_vh_init(cof_vh *h, const char *url, const char *key);
void cof_vh_release(cof_vh *h);
/* Appends `s` percent-encoded (RFC 3986 unreserved kept, and '/' when keep_slash). */
void cof_vh_enc(cof_buf *u, const char *s, int keep_slash);
void cof_vh_req_init(cof_vh_req *q, const char *method);
void cof_vh_req_done(cof_vh_req *q);
/* Runs q on a pooled handle: 0 when an answer came (any status), -1 when none
 * could be had (q->errbuf says why). A server that stops sending (under 1
 * byte/s for 60 s) is no answer; a 429 (the key's rate limit) is tried again
 * after its Retry-After (at most 5 s), COF_VH_TRIES times in all. */
int cof_vh_run(cof_vh *h, cof_vh_req *q);
/* The API error message of q's answer, else its status. */
void cof_vh_msg(cof_vh_req *q, char *out, size_t outsz);
/* Fills err from q (no answer, or not 2xx), naming the server; -1. */
int cof_vh_error(cof_vh *h, cof_vh_req *q, cof_err *err);
/* Runs q and parses its 2xx JSON answer into *out: 0, or -1 with err. */
int cof_vh_json(cof_vh *h, cof_vh_req *q, json_t **out, cof_err *err);

#endif
