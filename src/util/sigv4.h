/*
 * sigv4.h — AWS Signature Version 4 as the S3 gateway verifies it (the
 * header form and the presigned query form), exactly as AWS specifies the
 * canonical request: https://docs.aws.amazon.com/IAM/latest/UserGuide/
 * create-signed-request.html.
 *
 * Pure but for HMAC/SHA-256: no allocation but the caller's cof_buf, no
 * global state, safe on any input (fuzz/fuzz_s3auth.c).
 */
#ifndef COF_SIGV4_H
#define COF_SIGV4_H

#include <stddef.h>
#include <stdint.h>
#include "util/util.h"

#define COF_SIGV4_HEADERS 32  /* signed headers at most */

typedef struct cof_sigv4 {
	char access[64];          /* the access key id */
	char date[9];             /* YYYYMMDD of the credential scope */
	char region[64];
	char service[16];
	char headers[COF_SIGV4_HEADERS][64]; /* signed header names, lowercase, in order */
	int nheaders;
	char signature[65];       /* 64 lowercase hex */
	int presigned;
	char amz_date[17];        /* presigned: X-Amz-Date (YYYYMMDDTHHMMSSZ) */
	int64_t expires;          /* presigned: X-Amz-Expires seconds */
} cof_sigv4;

/* One query argument as received (still percent-encoded; value NULL when
 * the argument had no '='). */
typedef struct cof_sigv4_arg {
	const char *name, *value;
} cof_sigv4_arg;

/* Parses an Authorization header "AWS4-HMAC-SHA256 Credential=AK/DATE/REGION/
 * SERVICE/aws4_request, SignedHeaders=a;b, Signature=HEX". 0, or -1 with *why
 * saying what is wrong. */
int cof_sigv4_parse_header(const char *value, cof_sigv4 *out, const char **why);
/* The presigned form from the request's query arguments (X-Amz-Algorithm,
 * -Credential, -Date, -Expires (1 to 604800), -SignedHeaders, -Signature).
 * 1 when the query has none of them (not presigned), 0 parsed, -1 with *why. */
int cof_sigv4_parse_query(const cof_sigv4_arg *args, size_t nargs, cof_sigv4 *out,
			  const char **why);
/* Parses an ISO 8601 basic time "YYYYMMDDTHHMMSSZ" to Unix seconds; 0 or -1. */
int cof_sigv4_time(const char *s, int64_t *out);

/* Appends `s` (len bytes) URI-encoded as SigV4 wants it: unreserved
 * characters as they are, '/' too when keep_slash, every other byte %XX. */
void cof_sigv4_encode(cof_buf *b, const char *s, size_t len, int keep_slash);
/* Decodes %XX of s[0..len) into out (room for len+1); -1 on a bad escape
 * or a NUL. Returns the length. */
ssize_t cof_sigv4_decode(const char *s, size_t len, char *out);

/* The canonical request into `b`: method, path (raw as sent, decoded and
 * encoded again), the query args but X-Amz-Signature (sorted), the signed
 * headers (values[i] for a->headers[i], NULL = absent: -1), the signed
 * header list and the payload hash. 0, or -1 with *why. */
int cof_sigv4_canonical(cof_buf *b, const char *method, const char *raw_path,
			const cof_sigv4_arg *args, size_t nargs, const cof_sigv4 *a,
			const char *const *values, const char *payload_hash, const char **why);
/* The signature (64 hex) of canonical request `canon` by `secret` at
 * `amz_date` under a's scope. */
void cof_sigv4_sign(const char *secret, const cof_sigv4 *a, const char *amz_date,
		    const char *canon, size_t canon_len, char out[65]);
/* Constant-time comparison of two signatures (64 hex): 1 equal. */
int cof_sigv4_equal(const char *x, const char *y);

#endif
