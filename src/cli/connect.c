/*
 * connect.c — `coffer connect`: the user's side of a relay session. Connects
 * out to cofferd (docs/relay-protocol.md), receives the agent's operations on
 * a Server-Sent Events stream and answers each one from the folder --dir,
 * through src/relay/client/localfs (which enforces the exclusions, the mode, the size
 * limit and the guard itself, whatever the server says).
 *
 * One thread. The stream is one libcurl transfer whose write callback feeds
 * the SSE parser; each operation is handled inside that callback, in arrival
 * order, and its result posted with a second handle before the next byte of
 * the stream is read. A dropped stream is reconnected with backoff (0.5 s
 * doubling to 30 s, with jitter) and the session resumes.
 *
 * Signals: SIGINT (ctrl-C) means the user ends the session: an `abort` event is
 * posted (cofferd ends the session; file access stops) and the command exits 0.
 * SIGTERM and SIGHUP only disconnect: the session is paused and can be resumed
 * by running the command again within the server's grace time.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cli/cli.h"
#include "cli/connect.h"
#include "util/sse.h"

#define BACKOFF_MIN_MS 500
#define BACKOFF_MAX_MS 30000
/* No byte (not even a ping, sent every 15 s) for this long: the stream is dead. */
#define IDLE_MS 45000
#define ERROR_BODY_MAX (64 * 1024)

static volatile sig_atomic_t conn_sigint, conn_sigterm;

static void conn_on_signal(int sig)
{
	if (sig == SIGINT)
		conn_sigint = 1;
	else
		conn_sigterm = 1;
}

/* Why one stream attempt ended. */
enum {
	END_DROPPED,     /* connected, then the stream went away */
	END_NET,         /* could not connect (no HTTP answer) */
	END_HTTP,        /* an HTTP error answer (status in c->status) */
	END_SESSION,     /* session_ended received, or a 410 from a result post */
	END_INTERRUPTED, /* a signal */
};

/* ---------------------------------------------------------------- posting */

/* Collects an answer body up to ERROR_BODY_MAX (the rest is dropped). */
static size_t conn_collect(char *data, size_t size, size_t nmemb, void *ud)
{
	cof_buf *b = ud;
	size_t n = size * nmemb;

	if (b->len < ERROR_BODY_MAX)
		cof_buf_add(b, data, n < ERROR_BODY_MAX - b->len ? n : ERROR_BODY_MAX - b->len);
	return n;
}

/* Common options of every request: URL, token, JSON, timeouts. */
static struct curl_slist *conn_setup(conn *c, CURL *h, const char *url, const char *accept)
{
	struct curl_slist *hd = NULL;
	cof_buf auth = COF_BUF_INIT;

	cli_buf_addf(&auth, "Authorization: Bearer %s", c->token);
	hd = curl_slist_append(hd, auth.data);
	cof_buf_release(&auth);
	hd = curl_slist_append(hd, "Content-Type: application/json; charset=utf-8");
	hd = curl_slist_append(hd, accept);
	cli_check_alloc(hd);
	curl_easy_reset(h);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "coffer/" COFFER_VERSION);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 10L);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_VERBOSE, (long)cli_g.verbose);
	return hd;
}

/* POSTs `body` (borrowed) to base + `tail`; returns the HTTP status, 0 when
 * the server could not be reached. */
static long conn_post(conn *c, const char *tail, json_t *body)
{
	cof_buf url = COF_BUF_INIT, ans = COF_BUF_INIT;
	char *text = cli_check_alloc(json_dumps(body, JSON_COMPACT));
	long status = 0;

	cli_buf_adds(&url, c->base);
	cli_buf_adds(&url, tail);
	struct curl_slist *hd = conn_setup(c, c->post, url.data, "Accept: application/json");
	curl_easy_setopt(c->post, CURLOPT_POSTFIELDS, text);
	curl_easy_setopt(c->post, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(text));
	curl_easy_setopt(c->post, CURLOPT_WRITEFUNCTION, conn_collect);
	curl_easy_setopt(c->post, CURLOPT_WRITEDATA, &ans);
	curl_easy_setopt(c->post, CURLOPT_TIMEOUT, 60L);
	if (curl_easy_perform(c->post) == CURLE_OK)
		curl_easy_getinfo(c->post, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(hd);
	cof_buf_release(&url);
	cof_buf_release(&ans);
	free(text);
	return status;
}

/* POST .../events {type, data}: accept, write_blocked, abort. */
static long conn_event(conn *c, const char *type, json_t *data)
{
	json_t *body = json_pack("{s:s, s:o}", "type", type, "data",
				 data ? json_incref(data) : json_object());
	long st;

	st = conn_post(c, "/events", cli_check_alloc(body));
	json_decref(body);
	return st;
}

void conn_on_event(void *ud, const char *type, json_t *data)
{
	conn *c = ud;
	long st = conn_event(c, type, data);

	if (st < 200 || st >= 300)
		conn_log(c, "could not post the %s event (HTTP %ld)", type, st);
}

/* --------------------------------------------------------------- one op */

/* Answers one `op` event: runs it and posts {ok, result} or {ok:false, error}. */
static int conn_op(conn *c, const char *data, size_t len)
{
	json_error_t je;
	json_t *op = json_loadb(data, len, JSON_ALLOW_NUL, &je), *result = NULL, *body;
	const char *id = json_string_value(json_object_get(op, "id"));
	cof_err e = {0};
	char summary[512];
	cof_buf tail = COF_BUF_INIT;
	long st;

	if (!id || !*id) {
		conn_log(c, "ignored an operation without an id");
		json_decref(op);
		return 0;
	}
	c->ops++;
	if (cof_lfs_op(c->fs, &c->rules, op, &result, summary, sizeof summary, &e) == 0) {
		body = json_pack("{s:b, s:o}", "ok", 1, "result", result);
		conn_log(c, "%s", summary);
	} else {
		json_t *err = e.extra ? json_deep_copy(e.extra) : json_object();
		json_object_set_new(err, "type", json_string(cof_code_type(e.code)));
		json_object_set_new(err, "message", json_string(e.msg));
		body = json_pack("{s:b, s:o}", "ok", 0, "error", err);
		conn_log(c, "%s  (%s: %s)", summary, cof_code_type(e.code), e.msg);
		cof_err_clear(&e);
	}
	cli_buf_adds(&tail, "/results/");
	cli_url_seg(&tail, id);
	st = conn_post(c, tail.data, cli_check_alloc(body));
	if (st == 404)
		conn_log(c, "the server no longer waits for this result (op %s)", id);
	else if (st == 410)
		c->ended = 1;
	else if (st < 200 || st >= 300)
		conn_log(c, "could not post the result of op %s (HTTP %ld)", id, st);
	cof_buf_release(&tail);
	json_decref(body);
	json_decref(op);
	return c->ended;
}

/* The server's `mode` event, sent before any op: without a mode flag the
 * agent's suggestion (defaultMode) is taken and shown; with one, the user's
 * own choice stays whatever the server says. */
static void conn_mode(conn *c, json_t *d)
{
	cof_mode m;
	cof_err e = {0};
	const char *name = json_string_value(json_object_get(d, "mode"));

	if (c->mode_given)
		return;
	if (!name || cof_mode_parse(name, &m, &e)) {
		cof_err_clear(&e);
		conn_log(c, "the server sent no mode the client knows; staying readonly");
		return;
	}
	c->rules.mode = m;
	conn_log(c, "mode: %s (suggested by the agent; %s to change)", cof_mode_name(m),
		 m == COF_MODE_STANDARD ? "--readonly or --supervised" : "--standard");
	if (m == COF_MODE_SUPERVISED)
		conn_open_tty(c);
}

/* The SSE parser's callback: one event of the operations stream. Non-zero
 * stops the stream (the session ended). */
static int conn_on_sse(void *ud, const char *event, const char *data, size_t len)
{
	conn *c = ud;

	if (!strcmp(event, "op"))
		return conn_op(c, data, len);
	json_t *d = json_loadb(data, len, 0, NULL);
	if (!strcmp(event, "session_ended")) {
		const char *why = json_string_value(json_object_get(d, "reason"));
		conn_log(c, "session ended (%s)", why ? why : "no reason given");
		c->ended = 1;
	} else if (!strcmp(event, "write_blocked")) {
		conn_log(c, "write blocked by the server  %s  %s",
			 json_string_value(json_object_get(d, "path")) ?: "?",
			 json_string_value(json_object_get(d, "rule")) ?: "?");
	} else if (!strcmp(event, "mode")) {
		conn_mode(c, d);
	} else if (!strcmp(event, "agent_disconnected")) {
		conn_log(c, "the agent side disconnected (the session goes on)");
	}
	json_decref(d);
	return c->ended;
}

/* ------------------------------------------------------------- the stream */

static size_t conn_on_stream(char *data, size_t size, size_t nmemb, void *ud)
{
	conn *c = ud;
	size_t n = size * nmemb;

	if (!c->status)
		curl_easy_getinfo(c->stream, CURLINFO_RESPONSE_CODE, &c->status);
	c->last_byte = cof_mono_ms();
	if (c->status != 200) {
		conn_collect(data, 1, n, &c->errbody);
		return n;
	}
	if (!c->attached) {
		c->attached = 1;
		c->backoff_ms = BACKOFF_MIN_MS;
		if (c->resumed)
			conn_log(c, "reconnected; the session goes on");
		else if (c->mode_given)
			conn_log(c, "connected; serving %s (%s mode)", c->dir,
				 cof_mode_name(c->rules.mode));
		else
			conn_log(c, "connected; serving %s", c->dir);
		c->resumed = 1;
	}
	int rc = cof_sse_feed(&c->sse, data, n, conn_on_sse, c);
	c->last_byte = cof_mono_ms(); /* an op (or a supervised prompt) took its time */
	if (rc == -1 && !c->ended)
		conn_log(c, "the operations stream sent an event over the size limit");
	return rc ? 0 : n;
}

/* Aborts the transfer on a signal or when the stream went silent. */
static int conn_on_tick(void *ud, curl_off_t a, curl_off_t b, curl_off_t x, curl_off_t y)
{
	conn *c = ud;

	if (conn_sigint || conn_sigterm)
		return 1;
	if (c->status == 200 && cof_mono_ms() - c->last_byte > IDLE_MS) {
		conn_log(c, "no data from the server for %d s", IDLE_MS / 1000);
		return 1;
	}
	return 0;
}

/* One attempt: POST .../connect and serve the stream until it ends. */
static int conn_stream(conn *c)
{
	cof_buf url = COF_BUF_INIT;
	char *text = cli_check_alloc(json_dumps(c->hello, JSON_COMPACT));
	char errbuf[CURL_ERROR_SIZE] = "";
	CURLcode cc;

	c->status = 0;
	c->attached = 0;
	cof_buf_reset(&c->errbody);
	cof_sse_reset(&c->sse);
	cli_buf_adds(&url, c->base);
	cli_buf_adds(&url, "/connect");
	struct curl_slist *hd = conn_setup(c, c->stream, url.data, "Accept: text/event-stream");
	curl_easy_setopt(c->stream, CURLOPT_POSTFIELDS, text);
	curl_easy_setopt(c->stream, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(text));
	curl_easy_setopt(c->stream, CURLOPT_WRITEFUNCTION, conn_on_stream);
	curl_easy_setopt(c->stream, CURLOPT_WRITEDATA, c);
	curl_easy_setopt(c->stream, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c->stream, CURLOPT_XFERINFOFUNCTION, conn_on_tick);
	curl_easy_setopt(c->stream, CURLOPT_XFERINFODATA, c);
	curl_easy_setopt(c->stream, CURLOPT_ERRORBUFFER, errbuf);
	c->last_byte = cof_mono_ms();
	cc = curl_easy_perform(c->stream);
	curl_slist_free_all(hd);
	cof_buf_release(&url);
	free(text);
	if (!c->status)
		curl_easy_getinfo(c->stream, CURLINFO_RESPONSE_CODE, &c->status);
	if (c->ended)
		return END_SESSION;
	if (conn_sigint || conn_sigterm)
		return END_INTERRUPTED;
	if (c->status && c->status != 200)
		return END_HTTP;
	if (c->attached)
		return END_DROPPED;
	snprintf(c->neterr, sizeof c->neterr, "%s", errbuf[0] ? errbuf : curl_easy_strerror(cc));
	return END_NET;
}

/* The API error message of an error answer, or "HTTP N". */
static void conn_http_error(conn *c, char *out, size_t outsz)
{
	json_t *root = c->errbody.len ? json_loadb(c->errbody.data, c->errbody.len, 0, NULL) : NULL;
	json_t *e = json_object_get(root, "error");
	const char *msg = json_string_value(json_object_get(e, "message"));
	const char *type = json_string_value(json_object_get(e, "type"));

	if (msg)
		snprintf(out, outsz, "%s (%s)", msg, type ? type : "error");
	else
		snprintf(out, outsz, "server answered HTTP %ld", c->status);
	json_decref(root);
}

/* Sleeps `ms`, waking early on a signal. */
static void conn_sleep(int64_t ms)
{
	int64_t end = cof_mono_ms() + ms;

	while (!conn_sigint && !conn_sigterm) {
		int64_t left = end - cof_mono_ms();
		if (left <= 0)
			break;
		if (left > 100)
			left = 100;
		struct timespec ts = {0, (long)left * 1000000L};
		nanosleep(&ts, NULL);
	}
}

/* The next wait: the current backoff with +-25% jitter; the backoff doubles
 * up to BACKOFF_MAX_MS. */
static int64_t conn_next_wait(conn *c)
{
	unsigned r = 0;
	int64_t base = c->backoff_ms, wait;

	cof_random(&r, sizeof r);
	wait = base * 3 / 4 + (int64_t)(r % (unsigned)(base / 2 + 1));
	if (wait > BACKOFF_MAX_MS)
		wait = BACKOFF_MAX_MS;
	c->backoff_ms = base * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : base * 2;
	return wait;
}

/* Runs the session until it ends; returns the exit code. */
int conn_run(conn *c)
{
	char msg[600];

	c->backoff_ms = BACKOFF_MIN_MS;
	for (;;) {
		int why = conn_stream(c);

		if (why == END_SESSION)
			return CLI_OK;
		if (why == END_INTERRUPTED || conn_sigint || conn_sigterm)
			break;
		if (why == END_HTTP) {
			conn_http_error(c, msg, sizeof msg);
			if (c->status == 401 && c->resumed)
				return cli_fail("cofferd no longer accepts this session (%s); it may have "
						"restarted, which ends every session", msg);
			if (c->status == 401)
				return cli_fail("the connect token was refused: %s; check --token or "
						"COFFER_CONNECT_TOKEN", msg);
			if (c->status == 410)
				return cli_fail("the session has ended: %s", msg);
			if (!c->resumed || (c->status >= 400 && c->status < 500 && c->status != 409 &&
					    c->status != 429 && c->status != 408))
				return cli_fail("cannot connect: %s", msg);
		} else if (why == END_NET && !c->resumed) {
			return cli_fail("cannot reach cofferd at %s: %s", c->server, c->neterr);
		}
		int64_t wait = conn_next_wait(c);
		if (why == END_HTTP)
			conn_log(c, "cannot reconnect yet: %s; trying again in %.1f s", msg,
				 wait / 1000.0);
		else
			conn_log(c, "connection lost%s%s; reconnecting in %.1f s",
				 why == END_NET ? ": " : "", why == END_NET ? c->neterr : "",
				 wait / 1000.0);
		conn_sleep(wait);
		if (conn_sigint || conn_sigterm)
			break;
	}
	if (conn_sigint) {
		long st = conn_event(c, "abort", NULL);
		if (st >= 200 && st < 300)
			conn_log(c, "you ended the session (ctrl-C); the agent's access has stopped");
		else if (st == 410)
			conn_log(c, "the session had already ended");
		else
			return cli_fail("could not tell cofferd that you ended the session (HTTP %ld); "
					"the session stays paused until it times out", st);
		return CLI_OK;
	}
	conn_log(c, "disconnected; the session is paused and can be resumed by running "
		 "coffer connect again");
	return CLI_OK;
}

/* Installs the handlers (no SA_RESTART, so a blocking read of the terminal
 * returns EINTR and the prompt answers no). */
void conn_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = conn_on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

int conn_interrupted(void)
{
	return conn_sigint || conn_sigterm;
}
