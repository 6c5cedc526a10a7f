/*
 * s3.h — a small S3 client for the S3 blob store (blob_s3.c): path-style
 * requests against one bucket, signed with SigV4 by libcurl, over a pool of
 * easy handles so connections are reused. Only store/ uses it.
 *
 * Every request has timeouts (connect, and a total or a low-speed one for
 * bodies). Errors are cof_err naming the store ("blob store 's3://b/p'"): the
 * endpoint unreachable, timed out or answering 5xx is COF_EUNAVAILABLE (503);
 * a refused signature or key, and any other answer the client does not expect,
 * is COF_EINTERNAL (500). 404, and 416 to a Range, are left to the caller
 * (status in the answer).
 */
#ifndef COF_S3_H
#define COF_S3_H

#include <pthread.h>
#include <stdint.h>
#include "coffer.h"
#include "util/util.h"

/* The parts of `s3://BUCKET/PREFIX?endpoint=URL&region=R`. */
typedef struct cof_s3_url {
	char bucket[64];    /* S3 bucket naming rules: 3-63 of [a-z0-9.-] */
	char prefix[256];   /* "" or segments of [A-Za-z0-9._-] joined by '/' */
	char endpoint[256]; /* http(s)://HOST[:PORT], no path; default AWS's */
	char region[64];    /* default us-east-1 */
} cof_s3_url;

/* Parses an s3:// URL. Refuses (COF_EVALIDATION naming the part and the rule)
 * a bad bucket, prefix, endpoint or region, an unknown or repeated parameter. */
int cof_s3_url_parse(const char *url, cof_s3_url *out, cof_err *err);

typedef struct cof_s3 cof_s3;

/* Opens a client for `u` with the given key pair (copied; `token` may be NULL:
 * AWS_SESSION_TOKEN). Makes no request. */
int cof_s3_open(const cof_s3_url *u, const char *access_key, const char *secret_key,
		const char *token, cof_s3 **out, cof_err *err);
void cof_s3_close(cof_s3 *s);
/* "blob store 's3://BUCKET/PREFIX'", for messages. */
const char *cof_s3_name(const cof_s3 *s);

/* One request. The key is relative to the bucket (NULL: the bucket itself);
 * `query` must be canonical already (parameters sorted, values encoded by
 * cof_s3_escape, "name=" for an empty value): libcurl 7.88 signs it as given. */
typedef struct cof_s3_req {
	const char *method;       /* GET PUT HEAD DELETE POST */
	const char *key;
	const char *query;
	const char *payload_sha;  /* hex SHA-256 of the body; NULL = of no body */
	const char *range;        /* "bytes=A-B" or NULL */
	const char *ctype;        /* Content-Type to send, or NULL */
	/* body to send: `up_len` bytes of `up_fd` from `up_off`, or `up_mem` */
	int up_fd;
	int64_t up_off, up_len;
	const char *up_mem;
	size_t up_mem_len;
	/* where the answer's body goes: `dst` (at most dst_cap bytes; more is an
	 * error), else `body` (bounded by its max), else nowhere */
	char *dst;
	size_t dst_cap;
	cof_buf *body;
	int bulk;                 /* a large body: low-speed timeout, not a total */
	long stall_seconds;       /* bulk: silence allowed (0 = 30 s; more where S3 works
	                           * before it answers, as CompleteMultipartUpload) */
	/* filled in */
	long status;
	size_t dst_got;
	int64_t length;           /* Content-Length, -1 if none */
	int64_t total;            /* the object's size from Content-Range, -1 if none */
	int64_t mtime;            /* Last-Modified as unix seconds, -1 if none */
	char etag[80];
	char what[64];            /* the S3 error code of a non-2xx answer */
} cof_s3_req;

/* Sends `r`; 0 with r->status set for any HTTP answer that is 2xx, 404 or 416,
 * else -1 with `err` (see the top of this file; `doing` says what the request
 * was for, e.g. "storing content 1a2b3c4d"). */
int cof_s3_do(cof_s3 *s, cof_s3_req *r, const char *doing, cof_err *err);

/* URI-encodes `in` as SigV4 wants (all but A-Za-z0-9-_.~; '/' too unless
 * keep_slash) and appends it to `b`. */
void cof_s3_escape(cof_buf *b, const char *in, int keep_slash);

/* The text of the first <tag>...</tag> at or after `*from` in `xml`, entities
 * decoded, into out (truncated to outsz); advances *from past it. 0 if found. */
int cof_s3_xml_tag(const char *xml, const char **from, const char *tag, char *out,
		   size_t outsz);

#endif
