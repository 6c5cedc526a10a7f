/*
 * s3_int.h — what the S3 gateway's files (s3.c, s3_multipart.c) share.
 */
#ifndef COF_S3_INT_H
#define COF_S3_INT_H

#include <openssl/evp.h>
#include "http/http.h"
#include "util/sigv4.h"

#define S3_ARGS_MAX 64
#define S3_META_MAX 2048   /* user metadata: bytes of names and values, as S3 */
#define S3_ETAG_MAX 80     /* an ETag, unquoted: 64 hex, or 32 and "-N", and a NUL */

typedef struct s3err {
	unsigned status;
	const char *code;
	char msg[512];
} s3err;

typedef struct s3req {
	struct MHD_Connection *conn;
	const char *method;
	char *raw;                    /* the path as sent */
	char *bucket, *key;           /* decoded; NULL when absent */
	cof_sigv4_arg args[S3_ARGS_MAX];
	size_t nargs;
	cof_principal who;
	cof_by by;               /* who its writes are by (s3_by) */
	char reqid[17];               /* x-amz-request-id, made at the first answer */
	int authed;
	s3err e;
	int failed;
	int64_t dropped;
	/* bodies */
	int streaming;                /* PutObject: into up */
	cof_upload *up;
	char vol[48];
	cof_buf body;                 /* XML and other small bodies */
	EVP_MD_CTX *sha;              /* x-amz-content-sha256 given: checked at the end */
	char want_sha[65];
	EVP_MD_CTX *md5;              /* PutObject, UploadPart: the body's MD5 (s3_md5_begin) */
	int check_md5;                /* Content-MD5 given: want_md5 */
	unsigned char want_md5[16];
	char md5_hex[33];             /* at the body's end: its MD5 ("" = not computed) */
	/* UploadPart (s3_multipart.c): its bytes stream into `up` */
	int part;                     /* its number; 0 = not an UploadPart */
	char part_upload[33];         /* its upload's id */
} s3req;

extern http_server *s3srv;

/* Fails the request (the first failure is the one answered). */
void s3_fail(s3req *r, unsigned status, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* A library error as S3's (notfound: the code of a COF_ENOTFOUND). */
void s3_fail_err(s3req *r, cof_err *err, const char *notfound);
void s3_xml_esc(cof_buf *b, const char *s);
void s3_xml_el(cof_buf *b, const char *tag, const char *text);
enum MHD_Result s3_queue(s3req *r, unsigned status, struct MHD_Response *resp);
enum MHD_Result s3_send_xml(s3req *r, unsigned status, cof_buf *b);
/* An empty answer queued, or (out not NULL) made for the caller to queue. */
enum MHD_Result s3_send_empty(s3req *r, unsigned status, struct MHD_Response **out);
enum MHD_Result s3_send_error(s3req *r);
const char *s3_hdr(s3req *r, const char *name);
/* The decoded query argument (NULL: absent or not fitting bufsz). */
const char *s3_arg(s3req *r, const char *name, char *buf, size_t bufsz);
int s3_has_arg(s3req *r, const char *name);
/* r->bucket's volume id into r->vol: 0, or -1 (failed, NoSuchBucket). */
int s3_resolve(s3req *r);
void s3_iso_time(int64_t t, char out[32]);
int s3_write_cond(s3req *r, cof_cond *c);
/* Answers a write from the library's JSON (stolen): ETag (its "etag", else
 * its "sha256"), x-amz-version-id, and the XML body `xml` when not NULL. */
enum MHD_Result s3_write_answer(s3req *r, json_t *out, cof_buf *xml);

/* s3_meta.c: the S3 text kept with each version written here (cof_cond.s3meta).
 * The request's x-amz-meta-* and kept headers as {meta, headers} (owned), or
 * NULL (failed: MetadataTooLarge past S3_META_MAX, InvalidArgument). */
json_t *s3_meta_from_request(s3req *r);
/* {meta, headers} of `m` (NULL: none) with `etag` (unquoted) as the text to keep. */
char *s3_meta_text(json_t *m, const char *etag);
/* The ETag a version answers (its kept one, else its SHA-256) into etag, and
 * with `meta` its kept object (owned, or NULL). 0, or -1 (failed). */
int s3_meta_of(s3req *r, const char *vol, const char *key, const cof_file *f,
	       char etag[S3_ETAG_MAX], json_t **meta);
/* Adds a kept object's x-amz-meta-* and headers to an answer. */
void s3_meta_headers(struct MHD_Response *resp, json_t *m);
/* Starts the body's MD5 and reads Content-MD5 (InvalidDigest): 0, or -1. */
int s3_md5_begin(s3req *r);

/* s3_multipart.c: multipart uploads, in the store: served by every node */
int s3mp_part_begin(s3req *r);
enum MHD_Result s3mp_part_end(s3req *r);
enum MHD_Result s3mp_create(s3req *r);
enum MHD_Result s3mp_complete(s3req *r);
enum MHD_Result s3mp_abort(s3req *r);
enum MHD_Result s3mp_list_parts(s3req *r);
enum MHD_Result s3mp_list_uploads(s3req *r);
/* ?partNumber: 1 to 10000, or -1 (failed: InvalidArgument). */
int s3mp_part_number(s3req *r);
/* The parts of (vol, key) at `version` (its content `size` bytes) when it was
 * completed from a multipart upload: how many (> 0), with their sizes in
 * *sizes (owned); 0 when it was written whole (or its record is gone). */
int64_t s3mp_parts_of(const char *org, const char *vol, const char *key, int64_t version,
		      int64_t size, int64_t **sizes);

/* Who a write of `r` is by: its key, via "s3" (kept in r->by). */
const cof_by *s3_by(s3req *r);

#endif
