/*
 * files.c — PUT, GET/HEAD and DELETE of volume files, and serving file bytes.
 *
 * Uploads stream: each body chunk goes to cof_upload_write as it arrives, so
 * memory use does not grow with the file. Downloads are zero-copy from the
 * library's local fd when it has one (MHD uses sendfile), else read through
 * the library's reader as MHD asks for each block, with the headers that keep a file from
 * ever running as this server's origin.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include "agent/agent.h"
#include "http/http.h"
#include "turn/outbox.h"
#include "util/range.h"

#define ORG(req) ((req)->who.org)
/* Bodies bigger than this (or of unknown size) check the volume first: a PUT
 * to a missing volume, or past the volume's ceiling, fails before its bytes
 * are streamed, and a streamed body stops as it crosses the ceiling. Smaller
 * ones stay in memory until the commit, whose check is the same. */
#define PUT_PRECHECK_BYTES (16 * 1024)

/* Media types safe to show inline (docs/api.md): a browser shows them as
 * text, an image, a document or a player, never as a page that runs code.
 * Every other type is sent as an attachment, so an unknown or new active
 * type (text/xsl, image/svg+xml, text/html, ...) can never render. */
static const char *const inline_types[] = {
	"text/plain", "text/csv", "text/markdown", "text/tab-separated-values",
	"application/json", "application/pdf", "image/png", "image/jpeg", "image/gif",
	"image/webp", "image/avif", "image/bmp", "image/apng", NULL
};
/* Whole top-level types that are safe inline: players only. */
static const char *const inline_families[] = { "audio/", "video/", NULL };

/* True when `ct` (parameters ignored, any case) may be shown inline. */
static int is_inline_type(const char *ct)
{
	size_t len = strcspn(ct, "; \t");

	for (size_t i = 0; inline_types[i]; i++)
		if (strlen(inline_types[i]) == len && strncasecmp(ct, inline_types[i], len) == 0)
			return 1;
	for (size_t i = 0; inline_families[i]; i++) {
		size_t n = strlen(inline_families[i]);
		if (len > n && strncasecmp(ct, inline_families[i], n) == 0)
			return 1;
	}
	return 0;
}


/* The HTTP date of `t` into out (64 bytes), or "" when it has none. The
 * thread's last one is kept: a GET answers the same file's time again and
 * again, and gmtime_r with strftime was 1.5% of a small GET's CPU. */
static void http_date(int64_t t, char out[64])
{
	static _Thread_local int64_t last_t = INT64_MIN;
	static _Thread_local char last[64];
	time_t tt = (time_t)t;
	struct tm tm;

	if (t != last_t) {
		if (!gmtime_r(&tt, &tm) ||
		    !strftime(last, sizeof last, "%a, %d %b %Y %H:%M:%S GMT", &tm))
			last[0] = '\0';
		last_t = t;
	}
	memcpy(out, last, sizeof last);
}

/* Adds the headers every answer about a file carries. */
static void file_headers(struct MHD_Response *resp, const cof_file *f, const char *etag)
{
	char seq[24], date[64];

	snprintf(seq, sizeof(seq), "%" PRId64, f->vol_seq);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_ETAG, etag);
	MHD_add_response_header(resp, "X-Volume-Seq", seq);
	http_date(f->updated_at, date);
	if (date[0])
		MHD_add_response_header(resp, MHD_HTTP_HEADER_LAST_MODIFIED, date);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_ACCEPT_RANGES, "bytes");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_X_CONTENT_TYPE_OPTIONS, "nosniff");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_SECURITY_POLICY, "sandbox");
}

/* The 416 answer: JSON error plus `Content-Range: bytes * /SIZE`. */
static enum MHD_Result send_416(http_req *req, const cof_file *f, const char *etag)
{
	cof_err err = { 0 };
	struct MHD_Response *resp;
	char cr[48];

	cof_error(&err, COF_ERANGE, "range '%s' is outside the file's %" PRId64 " bytes",
		  http_header(req, MHD_HTTP_HEADER_RANGE), f->size);
	resp = http_error_response(req, &err);
	cof_err_clear(&err);
	if (resp == NULL)
		return MHD_NO;
	snprintf(cr, sizeof(cr), "bytes */%" PRId64, f->size);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_RANGE, cr);
	file_headers(resp, f, etag);
	return http_queue(req, MHD_HTTP_RANGE_NOT_SATISFIABLE, resp);
}

/* A body read through the library's reader (no local fd: S3, inline content
 * behind a reader): the file, taken over from the caller, and its range. */
typedef struct body_src {
	cof_file f;
	int64_t start, end;
} body_src;

#define BODY_BLOCK (64 * 1024)

/* MHD_ContentReaderCallback: the next piece of the range. A store that
 * fails or ends early cuts the stream (MHD closes the connection at once:
 * the client sees fewer bytes than Content-Length said, never a stall). */
static ssize_t body_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	body_src *b = cls;
	int64_t off = b->start + (int64_t)pos;
	size_t got = 0;
	cof_err err = { 0 };

	if (off >= b->end)
		return MHD_CONTENT_READER_END_OF_STREAM;
	if ((int64_t)max > b->end - off)
		max = (size_t)(b->end - off);
	if (cof_file_read_at(&b->f, off, buf, max, &got, &err) || got == 0) {
		fprintf(stderr, "cofferd: download of content %.12s cut at byte %" PRId64 ": %s\n",
			b->f.sha256, off, err.msg[0] ? err.msg : "it ends before its recorded size");
		cof_err_clear(&err);
		return MHD_CONTENT_READER_END_WITH_ERROR;
	}
	return (ssize_t)got;
}

/* MHD_ContentReaderFreeCallback. */
static void body_free(void *cls)
{
	body_src *b = cls;

	cof_file_close(&b->f);
	free(b);
}

/* Makes the body response for bytes [start, start+len) of f: zero copy from
 * a local fd (sendfile) when the store has one, else read through the
 * reader, which the response then owns (f is left without it). */
static struct MHD_Response *bytes_response(cof_file *f, int64_t start, int64_t len)
{
	struct MHD_Response *resp;
	body_src *b;
	int fd;

	if (len == 0)
		return MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
	if (f->data) /* small content kept inline: copied once into the response */
		return MHD_create_response_from_buffer((size_t)len, f->data + start,
						       MHD_RESPMEM_MUST_COPY);
	if (cof_file_fd(f) >= 0) {
		fd = dup(cof_file_fd(f)); /* MHD closes its fd; the library closes its own */
		if (fd < 0)
			return NULL;
		resp = MHD_create_response_from_fd_at_offset64((uint64_t)len, fd, (uint64_t)start);
		if (resp == NULL)
			close(fd);
		return resp;
	}
	if (!(b = calloc(1, sizeof *b)))
		return NULL;
	b->f = *f;
	b->start = start;
	b->end = start + len;
	resp = MHD_create_response_from_callback((uint64_t)len, BODY_BLOCK, body_read, b,
						 body_free);
	if (resp == NULL) {
		free(b);
		return NULL;
	}
	f->reader = NULL; /* the response's now */
	return resp;
}

/* RFC 8187 attr-char: what may stand unencoded in `filename*`. */
static int attr_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       strchr("!#$&+-.^_`|~", c) != NULL;
}

/* Writes `Content-Disposition: DISP; filename="ASCII"; filename*=UTF-8''PCT`
 * for the last segment of `path` into `out`: the quoted fallback has every
 * byte outside printable ASCII, `"`, `\\` and `%` replaced by `_`; the
 * extended form is the name percent-encoded (RFC 8187). Cut names end at a
 * whole escape. `out` is empty when there is no name. */
void http_disposition(const char *disp, const char *path, char *out, size_t outsz)
{
	const char *base = path ? strrchr(path, '/') : NULL;
	size_t o, n;

	base = base ? base + 1 : path;
	if (outsz == 0)
		return;
	out[0] = '\0';
	if (base == NULL || *base == '\0' || outsz < 64)
		return;
	n = (size_t)snprintf(out, outsz, "%s; filename=\"", disp);
	o = n < outsz ? n : outsz - 1;
	for (const char *p = base; *p && o + 32 < outsz / 2; p++) {
		unsigned char c = (unsigned char)*p;
		out[o++] = (c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '%') ? '_' : (char)c;
	}
	o += (size_t)snprintf(out + o, outsz - o, "\"; filename*=UTF-8''");
	for (const char *p = base; *p && o + 4 < outsz; p++) {
		unsigned char c = (unsigned char)*p;
		if (attr_char(c))
			out[o++] = (char)c;
		else
			o += (size_t)snprintf(out + o, outsz - o, "%%%02X", c);
	}
	out[o] = '\0';
}

/* Answers the bytes (200/206/416) once preconditions are settled. */
static enum MHD_Result serve_bytes(http_req *req, cof_file *f, const char *etag,
				   const char *name)
{
	const char *range = http_header(req, MHD_HTTP_HEADER_RANGE);
	const char *if_range = http_header(req, MHD_HTTP_HEADER_IF_RANGE);
	const char *ct = f->content_type[0] ? f->content_type : "application/octet-stream";
	int64_t start = 0, len = f->size;
	struct MHD_Response *resp;
	char cr[80], disp[1400];
	cof_err err = { 0 };
	int rc;

	if (range != NULL && if_range != NULL && strcmp(if_range, etag) != 0)
		range = NULL; /* the client's copy is stale: send it all */
	rc = cof_range_parse(range, f->size, &start, &len);
	if (rc < 0)
		return send_416(req, f, etag);
	/* a whole small file is checked against its sha256 before the 200 */
	if (rc == 0 && cof_file_verify(f, name, &err))
		return http_send_error(req, &err);
	resp = bytes_response(f, start, len);
	if (resp)
		http_count_out(req, len);
	if (resp == NULL)
		return http_send_fail(req, COF_EINTERNAL, "cannot send the file: out of resources");
	file_headers(resp, f, etag);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ct);
	const char *how = is_inline_type(ct) ? "inline" : "attachment";
	http_disposition(how, name, disp, sizeof(disp));
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_DISPOSITION, disp[0] ? disp : how);
	if (rc == 1) {
		snprintf(cr, sizeof(cr), "bytes %" PRId64 "-%" PRId64 "/%" PRId64, start,
			 start + len - 1, f->size);
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_RANGE, cr);
	}
	return http_queue(req, rc == 1 ? MHD_HTTP_PARTIAL_CONTENT : MHD_HTTP_OK, resp);
}

/* Parses an HTTP-date (RFC 9110 5.6.7: IMF-fixdate, or the obsolete RFC 850
 * and asctime forms) into *out. 0, or -1 when it is not one: an invalid date
 * makes its conditional be ignored, as the RFC says. */
static int http_date_parse(const char *s, time_t *out)
{
	static const char *const forms[] = {
		"%a, %d %b %Y %H:%M:%S GMT", "%A, %d-%b-%y %H:%M:%S GMT",
		"%a %b %e %H:%M:%S %Y", NULL
	};
	struct tm tm;

	if (s == NULL)
		return -1;
	while (*s == ' ' || *s == '\t')
		s++;
	for (size_t i = 0; forms[i]; i++) {
		memset(&tm, 0, sizeof(tm));
		const char *end = strptime(s, forms[i], &tm);
		if (end == NULL)
			continue;
		while (*end == ' ' || *end == '\t')
			end++;
		if (*end != '\0')
			continue;
		*out = timegm(&tm);
		return *out == (time_t)-1 ? -1 : 0;
	}
	return -1;
}

/* True when an If-Match / If-None-Match value lists `etag` or is `*`. RFC 9110
 * compares If-Match strongly (a weak W/"N" never matches: weak_ok 0) and
 * If-None-Match weakly (W/"N" matches "N": weak_ok 1). */
static int etag_listed(const char *list, const char *etag, int weak_ok)
{
	size_t elen = strlen(etag);
	const char *p = list;

	while (*p) {
		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		if (*p == '*')
			return 1;
		if (weak_ok && strncmp(p, "W/", 2) == 0)
			p += 2;
		size_t len = strcspn(p, ", \t");
		if (len == elen && strncmp(p, etag, len) == 0)
			return 1;
		p += len;
	}
	return 0;
}

int http_etag_listed(const char *list, const char *etag, int weak_ok)
{
	return etag_listed(list, etag, weak_ok);
}

/* The 412 of a read whose precondition failed, with the file's headers. */
static enum MHD_Result send_412(http_req *req, const cof_file *f, const char *etag,
				const char *which)
{
	cof_err err = { 0 };
	struct MHD_Response *resp;

	cof_error(&err, COF_EPRECONDITION, "%s failed: the file is at version %" PRId64,
		  which, f->version);
	cof_err_set(&err, "current", json_pack("{s:I, s:s}", "version", (json_int_t)f->version,
					       "sha256", f->sha256));
	resp = http_error_response(req, &err);
	cof_err_clear(&err);
	if (resp == NULL)
		return MHD_NO;
	file_headers(resp, f, etag);
	return http_queue(req, MHD_HTTP_PRECONDITION_FAILED, resp);
}

/* Evaluates the read preconditions in RFC 9110 13.2.2's order: If-Match, else
 * If-Unmodified-Since (412 when false); then If-None-Match, else
 * If-Modified-Since (304 when false). Returns 200 to go on, 304 or 412. */
static unsigned read_preconditions(http_req *req, const cof_file *f, const char *etag)
{
	const char *im = http_header(req, MHD_HTTP_HEADER_IF_MATCH);
	const char *ius = http_header(req, MHD_HTTP_HEADER_IF_UNMODIFIED_SINCE);
	const char *inm = http_header(req, MHD_HTTP_HEADER_IF_NONE_MATCH);
	const char *ims = http_header(req, MHD_HTTP_HEADER_IF_MODIFIED_SINCE);
	time_t when;

	if (im != NULL) {
		if (!etag_listed(im, etag, 0))
			return MHD_HTTP_PRECONDITION_FAILED;
	} else if (http_date_parse(ius, &when) == 0 && f->updated_at > (int64_t)when) {
		return MHD_HTTP_PRECONDITION_FAILED;
	}
	if (inm != NULL) {
		if (etag_listed(inm, etag, 1))
			return MHD_HTTP_NOT_MODIFIED;
	} else if (http_date_parse(ims, &when) == 0 && f->updated_at <= (int64_t)when) {
		return MHD_HTTP_NOT_MODIFIED;
	}
	return MHD_HTTP_OK;
}

enum MHD_Result http_serve_file(http_req *req, cof_file *f, const char *name)
{
	enum MHD_Result ret;
	unsigned pre;
	char etag[32];

	snprintf(etag, sizeof(etag), "\"%" PRId64 "\"", f->version);
	pre = read_preconditions(req, f, etag);
	if (pre == MHD_HTTP_PRECONDITION_FAILED) {
		ret = send_412(req, f, etag,
			       http_header(req, MHD_HTTP_HEADER_IF_MATCH) ? "If-Match"
									  : "If-Unmodified-Since");
	} else if (pre == MHD_HTTP_NOT_MODIFIED) {
		/* made over the whole file so Content-Length says the size of
		 * what a 200 would send; MHD sends no body with a 304 */
		struct MHD_Response *resp = bytes_response(f, 0, f->size);
		if (resp != NULL)
			file_headers(resp, f, etag);
		ret = http_queue(req, MHD_HTTP_NOT_MODIFIED, resp);
	} else {
		ret = serve_bytes(req, f, etag, name);
	}
	cof_file_close(f);
	return ret;
}

/* Reads the write precondition from If-Match / If-None-Match and ?version=N.
 * Refuses both headers at once, an If-None-Match other than `*`, and a header
 * and query that disagree. 0, or -1 with err. */
static int read_cond(http_req *req, cof_cond *cond, cof_err *err)
{
	cof_cond h = {.kind = COF_COND_NONE, .version = 0 }, q = {.kind = COF_COND_NONE, .version = 0 };
	const char *im = http_header_trim(req, MHD_HTTP_HEADER_IF_MATCH);
	const char *inm = http_header_trim(req, MHD_HTTP_HEADER_IF_NONE_MATCH);
	int64_t v = -1;

	if (im && inm)
		return cof_error(err, COF_EVALIDATION,
				 "send If-Match or If-None-Match, not both");
	if (im && cof_cond_parse_etag(im, &h, err))
		return -1;
	if (inm && strcmp(inm, "*") != 0)
		return cof_error(err, COF_EVALIDATION,
				 "If-None-Match on a write accepts only '*' (got '%s')", inm);
	if (inm)
		h.kind = COF_COND_ABSENT;
	if (http_query_int(req, "version", 0, INT64_MAX, &v, err))
		return -1;
	if (v >= 0) {
		q.kind = v == 0 ? COF_COND_ABSENT : COF_COND_VERSION;
		q.version = v;
	}
	if (h.kind != COF_COND_NONE && q.kind != COF_COND_NONE &&
	    (h.kind != q.kind || (h.kind == COF_COND_VERSION && h.version != q.version)))
		return cof_error(err, COF_EVALIDATION,
				 "the %s header and query parameter 'version' disagree",
				 im ? "If-Match" : "If-None-Match");
	*cond = h.kind != COF_COND_NONE ? h : q;
	return 0;
}

int http_body_type(http_req *req)
{
	req->content_type = http_header_trim(req, MHD_HTTP_HEADER_CONTENT_TYPE);
	/* curl -d/--data-binary sends this when told nothing: it never describes a
	 * file's bytes, so the type is sniffed instead (docs/api.md). */
	if (req->content_type &&
	    !strcasecmp(req->content_type, "application/x-www-form-urlencoded"))
		req->content_type = NULL;
	/* checked here so a bad type is refused before 100 Continue */
	if (req->content_type &&
	    cof_media_type_check(req->content_type, "Content-Type", &req->err))
		return -1;
	return 0;
}

/* First call of PUT /v1/volumes/{id}/files/{path}: precondition, type, and
 * the upload the body streams into. */
int http_begin_file_put(http_req *req)
{
	int64_t clen = http_content_length(req);
	const char *link = http_header(req, "X-Coffer-Symlink");

	if (read_cond(req, &req->cond, &req->err) || http_body_type(req))
		return -1;
	if (link) {
		/* a link: its target is the header's, the bytes it is stored as */
		if (clen > 0)
			return cof_error(&req->err, COF_EVALIDATION, "a PUT with X-Coffer-Symlink "
					 "makes a symlink and takes no body (Content-Length is %lld)",
					 (long long)clen);
		if (req->content_type && !cof_is_symlink(req->content_type))
			return cof_error(&req->err, COF_EVALIDATION, "a PUT with X-Coffer-Symlink "
					 "makes a symlink, of Content-Type '%s', not '%.100s'",
					 COF_SYMLINK_TYPE, req->content_type);
		req->content_type = COF_SYMLINK_TYPE;
		if (cof_symlink_check(link, strlen(link), &req->err) ||
		    cof_upload_begin(req->srv->st, 0, &req->up, &req->err) ||
		    cof_upload_write(req->up, link, strlen(link), &req->err))
			return -1;
		return 0;
	}
	if (cof_upload_begin(req->srv->st, 0, &req->up, &req->err))
		return -1;
	if (clen < 0 || clen > PUT_PRECHECK_BYTES)
		return cof_upload_room(req->up, ORG(req), req->param[0], req->param[1], clen,
				       &req->err);
	return 0;
}

/* Answers a committed put: 201 when the file is new, else 200; ETag set. */
enum MHD_Result http_put_answer(http_req *req, int rc, json_t *out, int created, cof_err *err)
{
	char etag[32];
	const char *hdrs[] = { MHD_HTTP_HEADER_ETAG, etag, NULL };
	json_t *ver;

	if (rc != 0 || out == NULL)
		return http_reply(req, rc, MHD_HTTP_OK, out, err);
	ver = json_object_get(out, "version");
	if (!json_is_integer(ver))
		hdrs[0] = NULL;
	snprintf(etag, sizeof(etag), "\"%" JSON_INTEGER_FORMAT "\"",
		 json_integer_value(ver));
	return http_send_json_h(req, created ? MHD_HTTP_CREATED : MHD_HTTP_OK, out, hdrs);
}

const cof_by *http_by(http_req *req, const char *via)
{
	const char *client = http_header_trim(req, "X-Coffer-Client");

	/* the console says so (console/api.js); the key is recorded either way */
	if (!strcmp(via, "http") && client && !strcmp(client, "console"))
		via = "console";
	const char *run = http_header_trim(req, "X-Run-Id");

	/* X-Run-Id names the run a client's writes belong to (revert by run);
	 * recorded when it is a run id as calls' ids are (1..128 printable ASCII) */
	if (run && !cof_turn_call_id_ok(run))
		run = NULL;
	req->by = (cof_by){.key_id = req->who.key_id[0] ? req->who.key_id : req->key_id,
			   .agent = req->who.agent, .run_id = run, .via = via};
	return &req->by;
}

enum MHD_Result http_file_put(http_req *req)
{
	cof_upload *up = http_take_upload(req);
	cof_err err = { 0 };
	json_t *out = NULL;
	int created = 0, rc;

	req->cond.by = http_by(req, "http");
	rc = cof_file_put(req->srv->st, ORG(req), req->param[0], req->param[1], up,
			  req->content_type, req->cond, &out, &created, &err);
	return http_put_answer(req, rc, out, created, &err);
}

/* ?preview=page&page=N: page N of a PDF as image/png, rendered by poppler in a
 * child process (agent/pdfpage.c), so the browser never runs a PDF viewer in
 * this origin. Closes f. */
static enum MHD_Result serve_pdf_page(http_req *req, cof_file *f, int64_t page)
{
	cof_err err = { 0 };
	unsigned char *d = NULL, *png = NULL;
	size_t pnglen = 0, got = 0;
	int pages = 0;
	char etag[48], npages[16];

	if (f->size > COF_PDF_PREVIEW_BYTES_MAX) {
		cof_error(&err, COF_ETOOLARGE, "'%s' is %" PRId64 " bytes; PDFs are previewed up "
			  "to %lld bytes (16 MiB)", req->param[1], f->size,
			  (long long)COF_PDF_PREVIEW_BYTES_MAX);
		goto fail;
	}
	d = malloc(f->size ? (size_t)f->size : 1);
	if (!d) {
		cof_error(&err, COF_EINTERNAL, "out of memory");
		goto fail;
	}
	if (f->data) {
		memcpy(d, f->data, (size_t)f->size);
		got = (size_t)f->size;
	}
	while (got < (size_t)f->size) {
		size_t k = 0;
		if (cof_file_read_at(f, (int64_t)got, d + got, (size_t)f->size - got, &k, &err))
			goto fail;
		if (k == 0) {
			cof_error(&err, COF_EINTERNAL, "'%s' is shorter than recorded", req->param[1]);
			goto fail;
		}
		got += k;
	}
	if (cof_pdf_page_png(d, got, (int)page, &png, &pnglen, &pages, &err))
		goto fail;
	free(d);
	struct MHD_Response *resp = MHD_create_response_from_buffer(pnglen, png,
								     MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(png);
		cof_file_close(f);
		return http_queue(req, MHD_HTTP_OK, NULL);
	}
	/* the same version renders the same page: an ETag of both */
	snprintf(etag, sizeof etag, "\"%" PRId64 "-p%" PRId64 "\"", f->version, page);
	snprintf(npages, sizeof npages, "%d", pages);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "image/png");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_ETAG, etag);
	MHD_add_response_header(resp, "X-Pdf-Pages", npages);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_X_CONTENT_TYPE_OPTIONS, "nosniff");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_SECURITY_POLICY, "sandbox");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "private, no-cache");
	cof_file_close(f);
	return http_queue(req, MHD_HTTP_OK, resp);
fail:
	free(d);
	cof_file_close(f);
	return http_send_error(req, &err);
}

enum MHD_Result http_file_get(http_req *req)
{
	cof_err err = { 0 };
	cof_file f;
	const char *snap, *preview;
	int64_t seq = -1, page = 1;

	memset(&f, 0, sizeof(f));
	if (http_query(req, "snapshot", &snap, &err) ||
	    http_query_int(req, "seq", 0, INT64_MAX, &seq, &err) ||
	    http_query(req, "preview", &preview, &err))
		return http_send_error(req, &err);
	/* `page` means something only with `preview`: a plain GET ignores it as ever */
	if (preview && strcmp(preview, "page"))
		return http_send_fail(req, COF_EVALIDATION, "query parameter 'preview' must be "
				      "'page' (a PDF page as image/png), not '%.64s'", preview);
	if (preview && http_query_int(req, "page", 1, COF_PDF_PREVIEW_PAGES_MAX, &page, &err))
		return http_send_error(req, &err);
	if (cof_file_open_at(req->srv->st, ORG(req), req->param[0], req->param[1], snap, seq,
			     &f, &err))
		return http_send_error(req, &err);
	if (preview)
		return serve_pdf_page(req, &f, page);
	return http_serve_file(req, &f, req->param[1]);
}

/* DELETE /v1/volumes/{id}/files/{path}: 200 {path, seq}; If-Match or
 * ?version=N make it conditional. */
enum MHD_Result http_file_delete(http_req *req)
{
	cof_err err = { 0 };
	cof_cond cond = { COF_COND_NONE, 0, NULL, NULL };
	json_t *out = NULL;

	if (read_cond(req, &cond, &err))
		return http_send_error(req, &err);
	cond.by = http_by(req, "http");
	int rc = cof_file_remove(req->srv->st, ORG(req), req->param[0], req->param[1],
				 cond, &out, &err);
	return http_reply(req, rc, MHD_HTTP_OK, out, &err);
}

/* ------------------------------------------------------------ signed links */

/* GET|HEAD /l/{token}: no key; the token names the file. Range works. */
enum MHD_Result http_link_get(http_req *req)
{
	cof_err err = { 0 };
	cof_file f;

	memset(&f, 0, sizeof(f));
	if (cof_link_verify(req->srv->st, req->param[0], req->method, &req->link, &err))
		return http_send_error(req, &err);
	/* a link's uses count against the key that made it */
	if (http_rate_take(req->link.maker, req->link.org, &err, &req->retry_after))
		return http_send_rate_limited(req, &err, req->retry_after);
	if (cof_link_open(req->srv->st, &req->link, &f, &err))
		return http_send_error(req, &err);
	return http_serve_file(req, &f, req->link.path);
}

/* True when the request's Content-Type matches the link's: same media type,
 * any letter case; parameters compared only when the link names some. */
static int type_matches(const char *want, const char *got)
{
	size_t wl = strcspn(want, ";"), gl;

	if (got == NULL)
		return 0;
	if (want[wl] == ';')
		return strcasecmp(want, got) == 0;
	while (wl > 0 && (want[wl - 1] == ' ' || want[wl - 1] == '\t'))
		wl--;
	gl = strcspn(got, "; \t");
	return gl == wl && strncasecmp(want, got, wl) == 0;
}

/* First call of PUT /l/{token}: verify, check type and declared size. */
int http_begin_link_put(http_req *req)
{
	cof_link *l = &req->link;
	int64_t clen = http_content_length(req);
	char a[32], b[32];

	if (cof_link_verify(req->srv->st, req->param[0], "PUT", l, &req->err) ||
	    http_rate_take(l->maker, l->org, &req->err, &req->retry_after))
		return -1;
	req->content_type = http_header_trim(req, MHD_HTTP_HEADER_CONTENT_TYPE);
	if (l->content_type[0] && !type_matches(l->content_type, req->content_type))
		return cof_error(&req->err, COF_EMEDIATYPE,
				 "this link takes Content-Type '%s', not '%s'",
				 l->content_type,
				 req->content_type ? req->content_type : "(none)");
	if (!l->content_type[0] && req->content_type &&
	    cof_media_type_check(req->content_type, "Content-Type", &req->err))
		return -1;
	if (l->max_bytes > 0 && clen > l->max_bytes) {
		cof_size_fmt(clen, a, sizeof(a));
		cof_size_fmt(l->max_bytes, b, sizeof(b));
		return cof_error(&req->err, COF_ETOOLARGE,
				 "file is %s; this link takes at most %s", a, b);
	}
	if (cof_upload_begin(req->srv->st, l->max_bytes, &req->up, &req->err))
		return -1;
	return clen < 0 || clen > PUT_PRECHECK_BYTES
		       ? cof_upload_room(req->up, l->org, l->vol, l->path, clen, &req->err)
		       : 0;
}

enum MHD_Result http_link_put(http_req *req)
{
	cof_upload *up = http_take_upload(req);
	const cof_link *l = &req->link;
	cof_cond none = { COF_COND_NONE, 0, &req->by, NULL };
	cof_err err = { 0 };
	json_t *out = NULL;
	int created = 0, rc;

	/* no key: the link's maker stands for the writer */
	req->by = (cof_by){.key_id = l->maker, .via = "link"};
	rc = cof_file_put(req->srv->st, l->org, l->vol, l->path, up,
			  l->content_type[0] ? l->content_type : req->content_type, none,
			  &out, &created, &err);
	return http_put_answer(req, rc, out, created, &err);
}
