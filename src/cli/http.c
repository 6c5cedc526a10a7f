/*
 * http.c — the one HTTP client of `coffer`: base URL and key resolution, URL
 * encoding, request building with libcurl, streaming uploads and downloads,
 * the progress bar, and turning API errors into `coffer: MESSAGE (TYPE)`.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "cli/cli.h"

/* JSON answers are read whole; a read-all answer is at most 16 MiB of content
 * (more once base64-encoded), so this bounds memory without refusing one. */
#define CLI_ANSWER_MAX ((size_t)256 << 20)

/* --------------------------------------------------------------- settings */

/* The server's base URL without trailing '/': --server, $COFFER_URL, default. */
static const char *cli_server(void)
{
	static char base[2048];
	const char *s = cli_g.server;
	size_t len;

	if (base[0])
		return base;
	if (!s || !*s)
		s = getenv("COFFER_URL");
	if (!s || !*s)
		s = CLI_DEFAULT_URL;
	len = strlen(s);
	while (len && s[len - 1] == '/')
		len--;
	snprintf(base, sizeof(base), "%s%.*s", strstr(s, "://") ? "" : "http://",
		 (int)len, s);
	return base;
}

/* The API key: --key, $COFFER_KEY, else the first line of ./data/admin.key
 * when that file is readable (the default data dir of a local cofferd).
 * NULL when there is none. */
static const char *cli_key(void)
{
	static char key[512];
	static int done;
	FILE *f;
	size_t len;

	if (done)
		return key[0] ? key : NULL;
	done = 1;
	if (cli_g.key && *cli_g.key) {
		snprintf(key, sizeof(key), "%s", cli_g.key);
		return key;
	}
	if (getenv("COFFER_KEY") && *getenv("COFFER_KEY")) {
		snprintf(key, sizeof(key), "%s", getenv("COFFER_KEY"));
		return key;
	}
	f = fopen("data/admin.key", "r");
	if (!f)
		return NULL;
	if (!fgets(key, sizeof(key), f))
		key[0] = '\0';
	fclose(f);
	len = strcspn(key, "\r\n \t");
	key[len] = '\0';
	return key[0] ? key : NULL;
}

const char *cli_server_url(void)
{
	return cli_server();
}

const char *cli_api_key(void)
{
	return cli_key();
}

/* ------------------------------------------------------------------- URLs */

/* Appends `s` percent-encoded: unreserved bytes (RFC 3986) stay, and '/'
 * stays when keep_slash. */
static void cli_url_encode(cof_buf *u, const char *s, int keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		char esc[3];

		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
		    c == '~' || (keep_slash && c == '/')) {
			cli_buf_add(u, s, 1);
			continue;
		}
		esc[0] = '%';
		esc[1] = hex[c >> 4];
		esc[2] = hex[c & 15];
		cli_buf_add(u, esc, 3);
	}
}

void cli_url_begin(cof_buf *u)
{
	cli_buf_adds(u, cli_server());
}

void cli_url_lit(cof_buf *u, const char *s)
{
	cli_buf_adds(u, s);
}

void cli_url_seg(cof_buf *u, const char *s)
{
	cli_url_encode(u, s, 0);
}

void cli_url_path(cof_buf *u, const char *path)
{
	cli_url_encode(u, path[0] == '/' ? path + 1 : path, 1);
}

void cli_url_query(cof_buf *u, const char *name, const char *value)
{
	if (!value)
		return;
	cli_buf_adds(u, u->data && strchr(u->data, '?') ? "&" : "?");
	cli_url_encode(u, name, 0);
	cli_buf_adds(u, "=");
	cli_url_encode(u, value, 0);
}

void cli_url_query_int(cof_buf *u, const char *name, int64_t value)
{
	char num[32];

	snprintf(num, sizeof(num), "%lld", (long long)value);
	cli_url_query(u, name, num);
}

/* -------------------------------------------------------------- transfer */

typedef struct cli_xfer {
	const cli_req *req;
	CURL *curl;
	long status;
	cof_buf body;      /* JSON answer or error body */
	int body_overflow; /* the answer passed CLI_ANSWER_MAX */
	FILE *out;         /* download sink once opened */
	char *tmp_path;    /* temporary file renamed to out_path at the end */
	int write_errno;   /* why writing the download failed */
	int read_errno;    /* why reading the upload failed */
	int progress;      /* draw a progress bar */
	int drawn;         /* something is on the progress line */
	curl_off_t shown;  /* the byte count last drawn */
	struct timespec start, last;
	int tty_text;      /* req->text_tty, and the download goes to a terminal */
	int refused;       /* binary content stopped on its way there */
	int64_t written;   /* download bytes written so far */
	int last_char;     /* the last of them */
	unsigned char tail[4]; /* a UTF-8 sequence cut at a chunk's end */
	size_t tail_len;
} cli_xfer;

/* Seconds since `t`. */
static double cli_since(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t->tv_sec) + (now.tv_nsec - t->tv_nsec) / 1e9;
}

/* Opens where a 2xx download goes: stdout, or a temporary file beside
 * out_path so that a failed download never clobbers an existing file.
 * Returns 0, or -1 with write_errno set. */
static int cli_sink_open(cli_xfer *x)
{
	const char *path = x->req->out_path;
	cof_buf tmpl = COF_BUF_INIT;
	int fd;

	if (!path || !strcmp(path, "-")) {
		x->out = stdout;
		return 0;
	}
	/* mkstemp's template: the name, then the six 'X' it replaces. */
	char six[7];
	memset(six, 'X', 6);
	six[6] = '\0';
	cli_buf_addf(&tmpl, "%s.coffer-%s", path, six);
	fd = mkstemp(tmpl.data);
	if (fd < 0 || !(x->out = fdopen(fd, "wb"))) {
		x->write_errno = errno;
		if (fd >= 0) {
			unlink(tmpl.data);
			close(fd);
		}
		cof_buf_release(&tmpl);
		return -1;
	}
	x->tmp_path = cof_buf_detach(&tmpl, NULL);
	return 0;
}

/* Ends a download: on success the temporary file takes out_path's place
 * (with the usual 0666 & ~umask mode); else it is removed. Returns 0, or -1
 * with write_errno set. */
static int cli_sink_close(cli_xfer *x, int ok)
{
	int rc = 0;

	if (x->out == stdout) {
		if (fflush(stdout) && ok) {
			x->write_errno = errno;
			rc = -1;
		}
		return rc;
	}
	if (!x->out)
		return 0;
	if (ok) {
		mode_t mask = umask(0);

		umask(mask);
		if (fchmod(fileno(x->out), 0666 & ~mask) || fflush(x->out)) {
			x->write_errno = errno;
			rc = -1;
		}
	}
	if (fclose(x->out) && ok && !rc) {
		x->write_errno = errno;
		rc = -1;
	}
	x->out = NULL;
	if (ok && !rc && rename(x->tmp_path, x->req->out_path)) {
		x->write_errno = errno;
		rc = -1;
	}
	if (!ok || rc)
		unlink(x->tmp_path);
	free(x->tmp_path);
	x->tmp_path = NULL;
	return rc;
}

/* Bytes of the UTF-8 sequence that byte `c` starts (1 for ASCII and for the
 * bytes that cannot start one, which cof_utf8_valid refuses). */
static size_t cli_utf8_len(unsigned char c)
{
	return c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
}

/* How many bytes at the end of d[0..n) start a sequence the next chunk ends. */
static size_t cli_utf8_cut(const unsigned char *d, size_t n)
{
	for (size_t back = 1; back <= 3 && back <= n; back++) {
		unsigned char c = d[n - back];

		if ((c & 0xC0) != 0x80)
			return cli_utf8_len(c) > back ? back : 0;
	}
	return 0;
}

/* True when chunk d[0..n) goes on with text fit for a terminal: no NUL,
 * valid UTF-8. A sequence cut at a chunk's end waits in x->tail. */
static int cli_text_chunk(cli_xfer *x, const unsigned char *d, size_t n)
{
	if (memchr(d, '\0', n))
		return 0;
	if (x->tail_len) {
		size_t need = cli_utf8_len(x->tail[0]) - x->tail_len, k = need < n ? need : n;

		memcpy(x->tail + x->tail_len, d, k);
		x->tail_len += k;
		d += k;
		n -= k;
		if (k < need) {
			for (size_t i = 0; i < x->tail_len; i++)
				if (i && (x->tail[i] & 0xC0) != 0x80)
					return 0;
			return 1;
		}
		if (!cof_utf8_valid((const char *)x->tail, x->tail_len))
			return 0;
		x->tail_len = 0;
	}
	size_t cut = cli_utf8_cut(d, n);

	if (!cof_utf8_valid((const char *)d, n - cut))
		return 0;
	memcpy(x->tail, d + n - cut, cut);
	x->tail_len = cut;
	return 1;
}

/* CURLOPT_WRITEFUNCTION: a 2xx download streams to its sink; anything else
 * (JSON answers, errors) is kept in memory up to CLI_ANSWER_MAX. */
static size_t cli_on_body(char *data, size_t size, size_t nmemb, void *ud)
{
	cli_xfer *x = ud;
	size_t n = size * nmemb;

	if (!x->status)
		curl_easy_getinfo(x->curl, CURLINFO_RESPONSE_CODE, &x->status);
	if (x->req->download && x->status >= 200 && x->status < 300) {
		if (x->tty_text && !cli_text_chunk(x, (const unsigned char *)data, n)) {
			x->refused = 1;
			return 0;
		}
		if (!x->out && cli_sink_open(x))
			return 0;
		if (fwrite(data, 1, n, x->out) != n) {
			x->write_errno = errno ? errno : EIO;
			return 0;
		}
		x->written += (int64_t)n;
		if (n)
			x->last_char = (unsigned char)data[n - 1];
		return n;
	}
	if (x->body.len + n > CLI_ANSWER_MAX || cof_buf_add(&x->body, data, n)) {
		x->body_overflow = 1;
		return 0;
	}
	return n;
}

/* CURLOPT_READFUNCTION: streams the upload from req->upload. */
static size_t cli_on_read(char *buf, size_t size, size_t nmemb, void *ud)
{
	cli_xfer *x = ud;
	size_t n = fread(buf, 1, size * nmemb, x->req->upload);

	if (n == 0 && ferror(x->req->upload)) {
		x->read_errno = errno ? errno : EIO;
		return CURL_READFUNC_ABORT;
	}
	return n;
}

/* Clears the progress line if something was drawn. */
static void cli_progress_clear(cli_xfer *x)
{
	if (x->drawn) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
		x->drawn = 0;
	}
}

/* CURLOPT_XFERINFOFUNCTION: draws "[####    ] 45% 12M / 27M 3.4M/s" on stderr,
 * at most ten times a second, once the transfer is known or seen to pass
 * CLI_PROGRESS_MIN. Downloads draw only for a 2xx answer. */
static int cli_on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow,
			   curl_off_t ultotal, curl_off_t ulnow)
{
	cli_xfer *x = ud;
	int up = x->req->upload != NULL;
	curl_off_t total = up ? ultotal : dltotal, now = up ? ulnow : dlnow;
	char a[16], b[16], r[16];
	double secs;

	if (total ? total < CLI_PROGRESS_MIN : now < CLI_PROGRESS_MIN)
		return 0;
	if (!up) {
		long st = 0;

		curl_easy_getinfo(x->curl, CURLINFO_RESPONSE_CODE, &st);
		if (st < 200 || st >= 300)
			return 0;
	}
	if (x->drawn && (now == x->shown || (cli_since(&x->last) < 0.1 && now != total)))
		return 0;
	x->shown = now;
	clock_gettime(CLOCK_MONOTONIC, &x->last);
	secs = cli_since(&x->start);
	cli_human_size(now, a, sizeof(a));
	cli_human_size(secs > 0.05 ? (int64_t)(now / secs) : 0, r, sizeof(r));
	if (total) {
		int pct = (int)(now * 100 / total), fill = pct * 30 / 100;
		char bar[31];

		memset(bar, '#', (size_t)fill);
		memset(bar + fill, ' ', (size_t)(30 - fill));
		bar[30] = '\0';
		cli_human_size(total, b, sizeof(b));
		fprintf(stderr, "\r[%s] %3d%% %s / %s  %s/s\033[K", bar, pct, a, b, r);
	} else {
		fprintf(stderr, "\r%s  %s/s\033[K", a, r);
	}
	fflush(stderr);
	x->drawn = 1;
	return 0;
}

/* Prints the error a non-2xx answer carries: `coffer: MESSAGE (TYPE)`, plus
 * the extra fields a user can act on. */
static void cli_print_api_error(long status, const cof_buf *body)
{
	json_t *root = body->len ? json_loadb(body->data, body->len, 0, NULL) : NULL;
	json_t *e = json_object_get(root, "error");
	const char *type = json_string_value(json_object_get(e, "type"));
	const char *msg = json_string_value(json_object_get(e, "message"));
	json_t *cur = json_object_get(e, "current");

	if (msg)
		fprintf(stderr, "coffer: %s (%s)\n", msg, type ? type : "error");
	else if (body->len && body->len < 300 && !memchr(body->data, '\0', body->len))
		fprintf(stderr, "coffer: server answered HTTP %ld: %.*s\n", status,
			(int)strcspn(body->data, "\r\n"), body->data);
	else
		fprintf(stderr, "coffer: server answered HTTP %ld\n", status);
	if (json_is_object(cur) && json_is_integer(json_object_get(cur, "version")))
		fprintf(stderr, "coffer: the file is at version %" JSON_INTEGER_FORMAT " now\n",
			json_integer_value(json_object_get(cur, "version")));
	if (json_is_integer(json_object_get(e, "oldest")))
		fprintf(stderr, "coffer: the oldest change kept is seq %" JSON_INTEGER_FORMAT
			"; use --since %" JSON_INTEGER_FORMAT "\n",
			json_integer_value(json_object_get(e, "oldest")),
			json_integer_value(json_object_get(e, "oldest")));
	if (status == 401)
		fprintf(stderr, "coffer: pass --key KEY or set COFFER_KEY (the admin key is in "
			"DATA/admin.key)\n");
	json_decref(root);
}

/* Sets up the easy handle for `req`; the caller frees *hdrs. */
static void cli_setup(cli_xfer *x, struct curl_slist **hdrs, char **json_body,
		      char *errbuf)
{
	const cli_req *req = x->req;
	CURL *c = x->curl;
	const char *key = cli_key();
	struct curl_slist *h = NULL;
	cof_buf auth = COF_BUF_INIT;

	if (key) {
		cli_buf_addf(&auth, "Authorization: Bearer %s", key);
		h = curl_slist_append(h, auth.data);
		cof_buf_release(&auth);
	}
	h = curl_slist_append(h, req->download ? "Accept: */*" : "Accept: application/json");
	if (req->body) {
		*json_body = cli_check_alloc(json_dumps(req->body, JSON_COMPACT));
		h = curl_slist_append(h, "Content-Type: application/json; charset=utf-8");
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, *json_body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(*json_body));
	}
	for (const struct curl_slist *e = req->headers; e; e = e->next)
		h = curl_slist_append(h, e->data);
	cli_check_alloc(h);
	*hdrs = h;

	curl_easy_setopt(c, CURLOPT_URL, req->url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "coffer/" COFFER_VERSION);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, cli_on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
	curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(c, CURLOPT_VERBOSE, (long)cli_g.verbose);
	if (req->timeout)
		curl_easy_setopt(c, CURLOPT_TIMEOUT, req->timeout);
	if (req->upload) {
		curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(c, CURLOPT_READFUNCTION, cli_on_read);
		curl_easy_setopt(c, CURLOPT_READDATA, x);
		if (req->upload_size >= 0)
			curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)req->upload_size);
	}
	if (strcmp(req->method, req->upload ? "PUT" : req->body ? "POST" : "GET"))
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, req->method);
	if (!strcmp(req->method, "HEAD"))
		curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
	x->tty_text = req->download && req->text_tty && cli_out_is_tty(req->out_path);
	x->progress = req->progress && isatty(STDERR_FILENO) && !cli_g.verbose && !x->tty_text;
	if (x->progress) {
		curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
		curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, cli_on_progress);
		curl_easy_setopt(c, CURLOPT_XFERINFODATA, x);
	}
}

/* True for libcurl results that mean no answer could be had at all. */
static int cli_unreachable(CURLcode rc)
{
	return rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST ||
	       rc == CURLE_COULDNT_RESOLVE_PROXY || rc == CURLE_UNSUPPORTED_PROTOCOL ||
	       rc == CURLE_URL_MALFORMAT || rc == CURLE_SSL_CONNECT_ERROR ||
	       rc == CURLE_PEER_FAILED_VERIFICATION;
}

/* Reports a transfer that libcurl could not finish; returns CLI_FAIL. */
static int cli_transfer_failed(cli_xfer *x, CURLcode rc, const char *errbuf)
{
	const char *why = errbuf[0] ? errbuf : curl_easy_strerror(rc);
	const char *dest = x->req->out_path && strcmp(x->req->out_path, "-") ?
				   x->req->out_path : "stdout";

	if (rc == CURLE_WRITE_ERROR && x->write_errno == EPIPE)
		return CLI_FAIL; /* the reader went away: nothing to say */
	if (rc == CURLE_WRITE_ERROR && x->write_errno)
		return cli_fail("cannot write '%s': %s", dest, strerror(x->write_errno));
	if (rc == CURLE_WRITE_ERROR && x->body_overflow)
		return cli_fail("the answer from cofferd is over %zu MiB; narrow the request",
				CLI_ANSWER_MAX >> 20);
	if (rc == CURLE_ABORTED_BY_CALLBACK && x->read_errno)
		return cli_fail("cannot read the upload: %s", strerror(x->read_errno));
	if (rc == CURLE_OPERATION_TIMEDOUT)
		return cli_fail("cofferd at %s did not answer in time: %s", cli_server(), why);
	if (cli_unreachable(rc) || !x->status)
		return cli_fail("cannot reach cofferd at %s: %s", cli_server(), why);
	return cli_fail("the connection to cofferd at %s broke: %s", cli_server(), why);
}

/* Reports binary content that text_tty kept off the terminal; CLI_USAGE. */
static int cli_tty_refused(cli_xfer *x)
{
	char what[200], n[48];
	const char *ctype = NULL;

	curl_easy_getinfo(x->curl, CURLINFO_CONTENT_TYPE, &ctype);
	if (x->written) {
		if (x->last_char != '\n')
			fputc('\n', stderr);
		snprintf(what, sizeof(what), "binary content (it began after %s of text, "
			 "shown above)", cli_count(x->written, "byte", n, sizeof(n)));
	} else {
		snprintf(what, sizeof(what), "binary content (%.100s)",
			 ctype && *ctype ? ctype : "no media type");
	}
	return cli_refuse_tty(x->req->text_tty, what);
}

/* One handle for the whole run, so that follow-up requests (ls --all,
 * changes --follow) reuse the connection. */
static CURL *curl;

void cli_http_cleanup(void)
{
	if (curl)
		curl_easy_cleanup(curl);
	curl = NULL;
}

int cli_http(const cli_req *req, cli_resp *resp)
{
	cli_xfer x;
	struct curl_slist *hdrs = NULL;
	char *json_body = NULL, errbuf[CURL_ERROR_SIZE] = "";
	CURLcode rc;
	int ret = CLI_OK, ok;

	if (resp) {
		resp->status = 0;
		resp->json = NULL;
		resp->error = NULL;
	}
	if (!curl)
		curl = cli_check_alloc(curl_easy_init());
	else
		curl_easy_reset(curl);
	memset(&x, 0, sizeof(x));
	x.req = req;
	x.curl = curl;
	clock_gettime(CLOCK_MONOTONIC, &x.start);
	cli_setup(&x, &hdrs, &json_body, errbuf);

	rc = curl_easy_perform(curl);
	cli_progress_clear(&x);
	curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &x.status);
	ok = rc == CURLE_OK && x.status >= 200 && x.status < 300;
	if (req->download && ok && !x.out && cli_sink_open(&x))
		rc = CURLE_WRITE_ERROR; /* an empty 2xx body still makes the file */
	ok = rc == CURLE_OK && x.status >= 200 && x.status < 300;
	if (req->download && cli_sink_close(&x, ok) && ok) {
		rc = CURLE_WRITE_ERROR;
		ok = 0;
	}

	if (req->quiet && !ok) {
		ret = CLI_FAIL;
	} else if (x.status >= 300 && (rc == CURLE_OK || x.body.len)) {
		/* The server answered, possibly while we were still sending. */
		cli_print_api_error(x.status, &x.body);
		if (resp && req->want_error && x.body.len) {
			json_t *root = json_loadb(x.body.data, x.body.len, 0, NULL);
			resp->error = json_incref(json_object_get(root, "error"));
			json_decref(root);
		}
		ret = CLI_FAIL;
	} else if (x.refused) {
		ret = cli_tty_refused(&x);
	} else if (rc != CURLE_OK) {
		ret = cli_transfer_failed(&x, rc, errbuf);
	} else if (resp && x.body.len) {
		resp->json = json_loadb(x.body.data, x.body.len, 0, NULL);
	}
	if (resp)
		resp->status = x.status;
	cof_buf_release(&x.body);
	curl_slist_free_all(hdrs);
	free(json_body);
	return ret;
}

int cli_pages(const char *url, const char *key, const char *cursor, int all,
	      const char *what, void (*header)(void), void (*row)(json_t *item))
{
	json_t *merged = NULL, *ans = NULL, *item;
	char *next = cursor ? cli_check_alloc(strdup(cursor)) : NULL;
	int rc, first = 1;
	size_t i;

	do {
		cof_buf u = COF_BUF_INIT;

		cli_buf_adds(&u, url);
		cli_url_query(&u, "cursor", next);
		rc = cli_call("GET", u.data, NULL, &ans);
		cof_buf_release(&u);
		free(next);
		next = NULL;
		if (rc)
			break;
		if (json_string_value(json_object_get(ans, "cursor")))
			next = cli_check_alloc(strdup(json_string_value(json_object_get(ans,
											    "cursor"))));
		if (cli_g.json && !all) {
			cli_print_json(ans);
		} else if (cli_g.json) {
			if (!merged) {
				merged = cli_check_alloc(json_copy(ans));
				json_object_del(merged, "cursor");
				json_object_set_new(merged, key, json_array());
			}
			json_array_extend(json_object_get(merged, key), json_object_get(ans, key));
		} else {
			if (first && header)
				header();
			json_array_foreach(json_object_get(ans, key), i, item)
				row(item);
		}
		first = 0;
		json_decref(ans);
		ans = NULL;
	} while (all && next);
	if (rc == CLI_OK && merged)
		cli_print_json(merged);
	if (rc == CLI_OK && next && what)
		fprintf(stderr, "coffer: more %s follow; use --all, or --cursor %s\n", what, next);
	json_decref(merged);
	free(next);
	return rc;
}

int cli_call(const char *method, const char *url, json_t *body, json_t **out)
{
	cli_req req = {.method = method, .url = url, .body = body, .upload_size = -1};
	cli_resp resp;
	int rc = cli_http(&req, &resp);

	if (out)
		*out = resp.json;
	else
		json_decref(resp.json);
	return rc;
}
