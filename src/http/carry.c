/*
 * carry.c — one forwarded request, streamed (docs/design.md, "Across nodes").
 *
 * forward.c decides that a request belongs to another node; this file
 * carries it there and its answer back, as it comes:
 *
 *   - One carrier thread drives every forwarded transfer with one libcurl
 *     multi handle. No loop thread and no worker waits on the holding
 *     node's body.
 *   - The worker that ran the handler waits only for the holding node's
 *     status and headers (a JSON turn call's come when the call ends, as
 *     they would on the holding node), then queues a callback response
 *     with them and returns.
 *   - Body bytes go into a buffer bounded by CARRY_HIGH; past it the write
 *     callback pauses the transfer (CURL_WRITEFUNC_PAUSE), so a slow
 *     client slows the holding node down instead of growing memory. MHD's
 *     reader takes from the buffer, suspends its connection on an eventfd
 *     when it is empty (loop.c) and has the carrier unpause the transfer
 *     once it has drained below CARRY_LOW.
 *   - A transfer that fails mid-answer (the holding node died) ends the
 *     client's connection with an error: never a short body as a whole one.
 *     A client that leaves ends the transfer (the holding node sees its
 *     client leave, as if the client had gone there directly).
 *   - At most `carry_max` transfers run at once (--forward-max); past that
 *     a request is answered 503 `unavailable` naming the limit.
 *
 * A transfer is shared by the carrier and the request (the worker, then the
 * response): each holds a reference and the last one frees it.
 */
#include <curl/curl.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>
#include "http/http.h"

#define CARRY_HIGH (256u << 10)   /* buffered body bytes that pause the transfer */
#define CARRY_LOW (64u << 10)     /* ... and that let it go on */
#define CARRY_HEAD_MAX (64u << 10) /* the holding node's header block */
#define CARRY_TIMEOUT_S 3600      /* a call may run that long */
#define CARRY_BLOCK (128u << 10)  /* MHD's reads from the buffer */
#define CARRY_READ (128L << 10)   /* curl's socket reads (its default is 16 KiB) */
#define CARRY_CALL_MAX ((size_t)64 << 20) /* a call's answer taken whole: a 10 MB
					   * file's read, with JSON's escapes */

typedef struct carry {
	pthread_mutex_t mu;
	pthread_cond_t cv;        /* the worker waits here for the head */
	CURL *h;
	struct curl_slist *hdrs;
	char *body;               /* the request body sent, or NULL */
	char err[CURL_ERROR_SIZE];
	long status;
	cof_buf head;             /* the answer's header lines, "\r\n" ended */
	int head_done;            /* status and headers are in (or it ended) */
	cof_buf buf;              /* body bytes not taken yet, from `pos` */
	size_t pos;
	int paused, want_cont;    /* the write callback paused; the reader asks */
	int done;                 /* the transfer ended, with `rc` */
	CURLcode rc;
	int gone;                 /* the request side left: end the transfer */
	int refs;
	int efd;                  /* readable once buf grew or done was set */
	int sock;                 /* the client's socket, for its hang-up */
	struct MHD_Connection *conn;
	int64_t *bytes_out;       /* the request's count, for its log line */
	size_t whole;             /* a call's answer, kept whole up to this (0: streamed) */
	int too_big;              /* ... and it was bigger */
	http_wait wait;
	struct carry *next;       /* on the carrier's lists */
} carry;

static struct {
	pthread_mutex_t mu;
	CURLM *multi;
	pthread_t tid;
	int started, stop;
	int live;                 /* transfers started and not ended (the bound) */
	int max;
	carry *adds;              /* handed over, not yet in the multi handle */
	carry *running;           /* in the multi handle (the carrier's own) */
	char node[48];
} C = {.mu = PTHREAD_MUTEX_INITIALIZER, .max = 64};

/* --forward-max: the bound on transfers at once (0 keeps the default). */
void http_carry_configure(int max_transfers)
{
	if (max_transfers > 0)
		C.max = max_transfers;
}

/* Transfers counted against the bound now. */
int http_carry_live(void)
{
	pthread_mutex_lock(&C.mu);
	int n = C.live;
	pthread_mutex_unlock(&C.mu);
	return n;
}

/* Drops one reference; the last frees the transfer (out of the multi). */
static void carry_unref(carry *t)
{
	pthread_mutex_lock(&t->mu);
	int last = --t->refs == 0;
	pthread_mutex_unlock(&t->mu);
	if (!last)
		return;
	if (t->h)
		curl_easy_cleanup(t->h);
	curl_slist_free_all(t->hdrs);
	free(t->body);
	cof_buf_release(&t->head);
	cof_buf_release(&t->buf);
	if (t->efd >= 0)
		close(t->efd);
	pthread_mutex_destroy(&t->mu);
	pthread_cond_destroy(&t->cv);
	free(t);
}

/* Wakes the worker and the reader (under t->mu). */
static void carry_poke(carry *t)
{
	uint64_t one = 1;

	pthread_cond_broadcast(&t->cv);
	if (write(t->efd, &one, sizeof one) < 0) {
		/* EAGAIN: the counter is full, so it is readable anyway */
	}
}

/* ------------------------------------------------------------ curl's side */

/* Body bytes from the holding node (carrier thread): kept, or the transfer
 * paused while the client has not taken CARRY_HIGH of them yet. */
static size_t on_body(char *p, size_t sz, size_t n, void *arg)
{
	carry *t = arg;
	size_t len = sz * n;

	pthread_mutex_lock(&t->mu);
	if (t->gone) {
		pthread_mutex_unlock(&t->mu);
		return 0; /* nobody reads: ends the transfer */
	}
	if (t->whole && t->buf.len + len > t->whole) {
		t->too_big = 1;
		pthread_mutex_unlock(&t->mu);
		return 0; /* ends the transfer */
	}
	if (!t->whole && t->buf.len - t->pos >= CARRY_HIGH) {
		t->paused = 1;
		pthread_mutex_unlock(&t->mu);
		return CURL_WRITEFUNC_PAUSE; /* curl keeps these bytes for later */
	}
	int was_empty = t->pos == t->buf.len;
	if (t->pos && t->pos >= t->buf.len / 2) {
		memmove(t->buf.data, t->buf.data + t->pos, t->buf.len - t->pos);
		t->buf.len -= t->pos;
		t->pos = 0;
	}
	if (cof_buf_add(&t->buf, p, len)) {
		pthread_mutex_unlock(&t->mu);
		return 0;
	}
	/* the reader waits only on an empty buffer, the worker only for the head */
	if (was_empty || !t->head_done) {
		t->head_done = 1;
		carry_poke(t);
	}
	pthread_mutex_unlock(&t->mu);
	return len;
}

/* Header lines (carrier thread): a status line starts a new head (after a
 * 100 Continue); the blank line after a final status ends it. */
static size_t on_header(char *p, size_t sz, size_t n, void *arg)
{
	carry *t = arg;
	size_t len = sz * n;

	pthread_mutex_lock(&t->mu);
	if (len >= 5 && !strncmp(p, "HTTP/", 5)) {
		cof_buf_reset(&t->head);
		t->status = 0;
		const char *sp = memchr(p, ' ', len);
		if (sp)
			t->status = strtol(sp + 1, NULL, 10);
	} else if ((len == 2 && p[0] == '\r') || (len == 1 && p[0] == '\n')) {
		if (t->status >= 200) {
			t->head_done = 1;
			carry_poke(t);
		}
	} else if (t->head.len + len <= CARRY_HEAD_MAX) {
		cof_buf_add(&t->head, p, len);
	}
	pthread_mutex_unlock(&t->mu);
	return len;
}

/* ------------------------------------------------------------ the carrier */

/* Ends transfer t in the carrier (it left the multi handle): done with rc,
 * the slot given back, the carrier's reference dropped. */
static void carrier_end(carry *t, CURLcode rc)
{
	curl_multi_remove_handle(C.multi, t->h);
	pthread_mutex_lock(&t->mu);
	if (!t->done) {
		t->done = 1;
		t->rc = rc;
	}
	t->head_done = 1;
	carry_poke(t);
	pthread_mutex_unlock(&t->mu);
	pthread_mutex_lock(&C.mu);
	C.live--;
	pthread_mutex_unlock(&C.mu);
	carry_unref(t);
}

/* Takes the new transfers in; unpauses those whose reader drained them,
 * ends those whose request side left. */
static void carrier_tend(void)
{
	pthread_mutex_lock(&C.mu);
	carry *adds = C.adds;
	C.adds = NULL;
	pthread_mutex_unlock(&C.mu);
	while (adds) {
		carry *t = adds;
		adds = t->next;
		if (curl_multi_add_handle(C.multi, t->h) != CURLM_OK) {
			t->next = NULL;
			pthread_mutex_lock(&t->mu);
			t->done = 1;
			t->rc = CURLE_OUT_OF_MEMORY;
			pthread_mutex_unlock(&t->mu);
			carrier_end(t, CURLE_OUT_OF_MEMORY);
			continue;
		}
		t->next = C.running;
		C.running = t;
	}
	for (carry **pp = &C.running; *pp;) {
		carry *t = *pp;
		pthread_mutex_lock(&t->mu);
		int gone = t->gone || C.stop, cont = t->want_cont && !gone;
		if (cont)
			t->want_cont = t->paused = 0;
		pthread_mutex_unlock(&t->mu);
		if (gone) {
			*pp = t->next;
			carrier_end(t, C.stop ? CURLE_ABORTED_BY_CALLBACK : CURLE_WRITE_ERROR);
			continue;
		}
		if (cont)
			curl_easy_pause(t->h, CURLPAUSE_CONT); /* may call on_body now */
		pp = &t->next;
	}
}

/* Ends the transfers curl says are over. */
static void carrier_reap(void)
{
	CURLMsg *m;
	int left;

	while ((m = curl_multi_info_read(C.multi, &left))) {
		if (m->msg != CURLMSG_DONE)
			continue;
		CURL *h = m->easy_handle;
		CURLcode rc = m->data.result;
		for (carry **pp = &C.running; *pp; pp = &(*pp)->next) {
			if ((*pp)->h == h) {
				carry *t = *pp;
				*pp = t->next;
				carrier_end(t, rc);
				break;
			}
		}
	}
}

/* The carrier: tends its lists, lets curl move bytes, reaps what ended,
 * then sleeps in curl_multi_poll until a socket or curl_multi_wakeup (a new
 * transfer, an unpause, a request side leaving, the stop) wakes it. */
static void *carrier_main(void *arg)
{
	int running = 0;

	(void)arg;
	for (;;) {
		carrier_tend();
		pthread_mutex_lock(&C.mu);
		int stop = C.stop && !C.running && !C.adds;
		pthread_mutex_unlock(&C.mu);
		if (stop)
			return NULL;
		curl_multi_perform(C.multi, &running);
		carrier_reap();
		curl_multi_poll(C.multi, NULL, 0, 1000, NULL);
	}
}

/* Starts the carrier of node `node` (forward.c, with the heartbeat). 0 or -1. */
int http_carry_start(const char *node)
{
	snprintf(C.node, sizeof C.node, "%s", node);
	C.multi = curl_multi_init();
	if (!C.multi || pthread_create(&C.tid, NULL, carrier_main, NULL))
		return -1;
	C.started = 1;
	return 0;
}

/* Ends every transfer (their readers cut their clients, waiting workers
 * answer 503) and joins the carrier; later submits are refused. */
void http_carry_stop(void)
{
	if (!C.started)
		return;
	pthread_mutex_lock(&C.mu);
	C.stop = 1;
	pthread_mutex_unlock(&C.mu);
	curl_multi_wakeup(C.multi);
	pthread_join(C.tid, NULL);
	/* C.multi is kept: a late reader or free may still wake it (a no-op) */
	C.started = 0;
}

/* ------------------------------------------------------------ the request's side */

/* MHD's reader (a loop thread): what is buffered, else a suspend on the
 * eventfd; the end once the transfer ended whole, an error (the connection
 * cut) when it did not. */
static ssize_t carry_read(void *cls, uint64_t pos, char *out, size_t max)
{
	carry *t = cls;
	size_t n;

	(void)pos;
	pthread_mutex_lock(&t->mu);
	if (t->pos == t->buf.len && !t->done) {
		/* nothing yet: wait for bytes, the end, or the client hanging up
		 * (then MHD calls again and peer_gone sees it) */
		int wait = !http_peer_gone(t->sock);
		http_drain_fd(t->efd); /* under t->mu: a poke after this is seen */
		if (wait && http_wait_on(&t->wait, t->conn, t->efd, t->sock, 0) == 0) {
			pthread_mutex_unlock(&t->mu);
			return 0;
		}
		pthread_mutex_unlock(&t->mu);
		return MHD_CONTENT_READER_END_WITH_ERROR; /* gone, or the server stops */
	}
	if (t->pos == t->buf.len) {
		int whole = t->rc == CURLE_OK;
		pthread_mutex_unlock(&t->mu);
		return whole ? MHD_CONTENT_READER_END_OF_STREAM
			     : MHD_CONTENT_READER_END_WITH_ERROR;
	}
	n = t->buf.len - t->pos < max ? t->buf.len - t->pos : max;
	memcpy(out, t->buf.data + t->pos, n);
	t->pos += n;
	if (t->pos == t->buf.len)
		t->buf.len = t->pos = 0;
	*t->bytes_out += (int64_t)n;
	int cont = t->paused && !t->want_cont && !t->done && t->buf.len - t->pos < CARRY_LOW;
	if (cont)
		t->want_cont = 1;
	pthread_mutex_unlock(&t->mu);
	if (cont)
		curl_multi_wakeup(C.multi);
	return (ssize_t)n;
}

/* The response is done with (sent, or the client left): the transfer ends. */
static void carry_free(void *cls)
{
	carry *t = cls;

	pthread_mutex_lock(&t->mu);
	t->gone = 1;
	int tell = !t->done;
	pthread_mutex_unlock(&t->mu);
	if (tell)
		curl_multi_wakeup(C.multi);
	carry_unref(t);
}

/* Adds `name: value` from the request to the headers sent. */
static void pass_header(http_req *req, carry *t, const char *name)
{
	const char *v = http_header(req, name);
	cof_buf line = COF_BUF_INIT;

	if (!v)
		return;
	if (cof_buf_addf(&line, "%s: %s", name, v) == 0)
		t->hdrs = curl_slist_append(t->hdrs, line.data);
	cof_buf_release(&line);
}

/* The headers of every carried call: this node as the forwarder (never
 * carried again), a JSON body, no 100-continue, the bytes as they are. */
static void hop_headers(carry *t)
{
	cof_buf line = COF_BUF_INIT;

	if (cof_buf_addf(&line, "X-Coffer-Forwarded: %s", C.node) == 0)
		t->hdrs = curl_slist_append(t->hdrs, line.data);
	cof_buf_release(&line);
	t->hdrs = curl_slist_append(t->hdrs, "Content-Type: application/json");
	t->hdrs = curl_slist_append(t->hdrs, "Expect:");
	t->hdrs = curl_slist_append(t->hdrs, "Accept-Encoding:");
}

/* The request headers carried: the caller's key (in either of its two
 * headers) and what shapes the answer; X-Request-Id is this request's, so
 * both nodes log one id. Host is the one the client asked (or this node's
 * address): the holding node builds the answer's URLs (files[].url, links)
 * from it, so they name the node the client reached, never the holder's
 * internal address (issue 32.10). */
static void request_headers(http_req *req, carry *t)
{
	static const char *const pass[] = {
		"Authorization", "x-api-key", "Accept", "Range", "If-Range", "If-Match",
		"If-None-Match", "If-Modified-Since", "X-Run-Id", "X-Mcp-Session", "Last-Event-ID",
		"Idempotency-Key",
	};
	cof_buf line = COF_BUF_INIT;
	char base[300];

	for (size_t i = 0; i < sizeof pass / sizeof *pass; i++)
		pass_header(req, t, pass[i]);
	http_base_url(req, base, sizeof base);
	if (cof_buf_addf(&line, "Host: %s", base + strlen("http://")) == 0)
		t->hdrs = curl_slist_append(t->hdrs, line.data);
	if (req->request_id[0]) {
		cof_buf_reset(&line);
		cof_buf_addf(&line, "X-Request-Id: %s", req->request_id);
		t->hdrs = curl_slist_append(t->hdrs, line.data);
	}
	cof_buf_release(&line);
	hop_headers(t);
}

/* A new transfer of `method` to `target` (the whole URL), not started, with
 * the options every transfer has; the caller adds its headers and body. */
static carry *carry_init(const char *target, const char *method)
{
	carry *t = cof_calloc(1, sizeof *t);

	if (!t)
		return NULL;
	pthread_mutex_init(&t->mu, NULL);
	pthread_cond_init(&t->cv, NULL);
	t->refs = 2; /* the carrier's and the request's */
	t->sock = -1;
	t->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	t->h = curl_easy_init();
	if (t->efd < 0 || !t->h) {
		t->refs = 1;
		carry_unref(t);
		return NULL;
	}
	curl_easy_setopt(t->h, CURLOPT_URL, target);
	if (!strcmp(method, "HEAD"))
		curl_easy_setopt(t->h, CURLOPT_NOBODY, 1L);
	else
		curl_easy_setopt(t->h, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(t->h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(t->h, CURLOPT_WRITEDATA, t);
	curl_easy_setopt(t->h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(t->h, CURLOPT_HEADERDATA, t);
	curl_easy_setopt(t->h, CURLOPT_ERRORBUFFER, t->err);
	curl_easy_setopt(t->h, CURLOPT_BUFFERSIZE, CARRY_READ);
	curl_easy_setopt(t->h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(t->h, CURLOPT_CONNECTTIMEOUT, 5L);
	curl_easy_setopt(t->h, CURLOPT_TIMEOUT, (long)CARRY_TIMEOUT_S);
	return t;
}

/* Sends `body` (NULL: an empty one) with t, and t's headers. */
static void carry_body(carry *t, const json_t *body)
{
	t->body = body ? json_dumps(body, JSON_COMPACT) : NULL;
	curl_easy_setopt(t->h, CURLOPT_POSTFIELDS, t->body ? t->body : "");
	curl_easy_setopt(t->h, CURLOPT_POSTFIELDSIZE_LARGE,
			 (curl_off_t)(t->body ? strlen(t->body) : 0));
}

/* A new transfer of `req` to `url` (not started), or NULL. */
static carry *carry_new(http_req *req, const char *url)
{
	cof_buf target = COF_BUF_INIT;
	carry *t = cof_buf_addf(&target, "%s%s", url, req->url) ? NULL
		   : carry_init(target.data, req->method);

	cof_buf_release(&target);
	if (!t)
		return NULL;
	request_headers(req, t);
	/* the routes carried take a JSON body (at most HTTP_JSON_MAX), parsed
	 * before the handler knows where it goes: it is sent as parsed */
	if (!strcmp(req->method, "POST") || !strcmp(req->method, "PUT"))
		carry_body(t, req->json);
	curl_easy_setopt(t->h, CURLOPT_HTTPHEADER, t->hdrs);
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(req->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	t->sock = ci ? ci->connect_fd : -1;
	t->conn = req->conn;
	t->bytes_out = &req->bytes_out;
	return t;
}

/* Hands t to the carrier: 0, or -1 (err) past the bound or when stopping. */
static int carry_submit(carry *t, cof_err *err)
{
	pthread_mutex_lock(&C.mu);
	if (!C.started || C.stop) {
		pthread_mutex_unlock(&C.mu);
		return cof_error(err, COF_EUNAVAILABLE, "node '%s' is stopping", C.node);
	}
	if (C.live >= C.max) {
		pthread_mutex_unlock(&C.mu);
		cof_error(err, COF_EUNAVAILABLE, "node '%s' carries %d requests to other nodes "
			  "already, its limit (--forward-max); try again or ask the holding node",
			  C.node, C.max);
		cof_err_set(err, "limit", json_integer(C.max));
		return -1;
	}
	C.live++;
	t->next = C.adds;
	C.adds = t;
	pthread_mutex_unlock(&C.mu);
	curl_multi_wakeup(C.multi);
	return 0;
}

/* True for the answer's headers that are this hop's own, not passed on. */
static int hop_header(const char *name, size_t len)
{
	static const char *const own[] = {
		"Content-Length", "Transfer-Encoding", "Connection", "Keep-Alive", "Date",
		"X-Request-Id", "X-Coffer-Node",
	};

	for (size_t i = 0; i < sizeof own / sizeof *own; i++)
		if (strlen(own[i]) == len && !strncasecmp(name, own[i], len))
			return 1;
	return 0;
}

/* Copies the holding node's headers onto resp; *clen gets its
 * Content-Length (-1 none). */
static void copy_headers(carry *t, struct MHD_Response *resp, int64_t *clen)
{
	char *p = t->head.data, *end = p + t->head.len;

	*clen = -1;
	while (p && p < end) {
		char *eol = memchr(p, '\n', (size_t)(end - p)), *next;
		next = eol ? eol + 1 : end;
		char *colon = memchr(p, ':', (size_t)(next - p));
		if (colon) {
			size_t nl = (size_t)(colon - p);
			char *v = colon + 1, *ve = next;
			while (v < ve && (*v == ' ' || *v == '\t'))
				v++;
			while (ve > v && (ve[-1] == '\r' || ve[-1] == '\n' || ve[-1] == ' '))
				ve--;
			char name[128], value[4096];
			if (nl < sizeof name && (size_t)(ve - v) < sizeof value) {
				snprintf(name, sizeof name, "%.*s", (int)nl, p);
				snprintf(value, sizeof value, "%.*s", (int)(ve - v), v);
				if (!strcasecmp(name, "Content-Length"))
					*clen = strtoll(value, NULL, 10);
				if (resp && !hop_header(name, nl))
					MHD_add_response_header(resp, name, value);
			}
		}
		p = next;
	}
}

/* The answer once the head is in (t->mu held): a callback response fed by
 * the transfer; a status that has no body gets an empty one. */
static struct MHD_Response *carry_response(carry *t, int *streams)
{
	struct MHD_Response *resp;
	int64_t clen = -1;

	*streams = 0;
	if (t->status == 204 || t->status == 304) {
		resp = MHD_create_response_from_buffer(0, (char *)"", MHD_RESPMEM_PERSISTENT);
	} else {
		/* the size from the head: MHD sends it as Content-Length (a HEAD too) */
		copy_headers(t, NULL, &clen);
		resp = MHD_create_response_from_callback(
			clen >= 0 ? (uint64_t)clen : MHD_SIZE_UNKNOWN, CARRY_BLOCK, carry_read, t,
			carry_free);
		*streams = 1;
	}
	if (!resp)
		return NULL;
	copy_headers(t, resp, &clen);
	return resp;
}

/* Carries req to `node` at `url` (on a worker): waits for the holder's
 * status and headers, then queues the answer fed by the transfer. */
enum MHD_Result http_carry(http_req *req, const char *node, const char *url)
{
	cof_err e = {0};
	carry *t = carry_new(req, url);

	if (!t)
		return http_send_fail(req, COF_EINTERNAL, "out of memory");
	if (carry_submit(t, &e)) {
		t->refs = 1;
		carry_unref(t);
		return http_send_error(req, &e);
	}
	pthread_mutex_lock(&t->mu);
	while (!t->head_done)
		pthread_cond_wait(&t->cv, &t->mu);
	if (t->status < 200) { /* it ended before a final status came */
		cof_error(&e, COF_EUNAVAILABLE, "node '%s' (%s) did not answer: %s", node, url,
			  t->err[0] ? t->err : curl_easy_strerror(t->rc));
		cof_err_set(&e, "node", json_string(node));
		t->gone = 1;
		pthread_mutex_unlock(&t->mu);
		curl_multi_wakeup(C.multi);
		carry_unref(t);
		return http_send_error(req, &e);
	}
	int streams;
	unsigned status = (unsigned)t->status;
	struct MHD_Response *resp = carry_response(t, &streams);
	pthread_mutex_unlock(&t->mu);
	if (!streams || !resp) {
		carry_free(t); /* the response does not hold it */
		if (!resp)
			return http_send_fail(req, COF_EINTERNAL, "out of memory");
	}
	MHD_add_response_header(resp, "X-Coffer-Node", node);
	return http_queue(req, status, resp);
}

/* The error a holder answered ({"error": {type, message, ...}}) as err. */
static int answered_error(json_t *j, long status, const char *node, cof_err *err)
{
	json_t *o = json_object_get(j, "error"), *v;
	const char *type = cof_json_str(o, "type"), *msg = cof_json_str(o, "message"), *k;
	cof_code code = COF_NCODES;

	for (int c = 1; c < COF_NCODES && code == COF_NCODES; c++)
		if (type && !strcmp(cof_code_type((cof_code)c), type))
			code = (cof_code)c;
	for (int c = 1; c < COF_NCODES && code == COF_NCODES; c++)
		if (cof_code_status((cof_code)c) == status)
			code = (cof_code)c;
	if (code == COF_NCODES)
		code = COF_EINTERNAL;
	if (msg)
		cof_error(err, code, "%s", msg);
	else
		cof_error(err, code, "node '%s' answered %ld", node, status);
	json_object_foreach(o, k, v)
		if (strcmp(k, "type") && strcmp(k, "message") && strcmp(k, "requestId"))
			cof_err_set(err, k, json_incref(v));
	return -1;
}

int http_carry_call(const char *node, const char *url, const char *method, const char *target,
		    const char *key, const json_t *body, json_t **out, cof_err *err)
{
	cof_buf u = COF_BUF_INIT, auth = COF_BUF_INIT;
	carry *t = cof_buf_addf(&u, "%s%s", url, target) ? NULL : carry_init(u.data, method);
	int rc = -1;

	*out = NULL;
	cof_buf_release(&u);
	if (!t)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	t->whole = CARRY_CALL_MAX;
	if (cof_buf_addf(&auth, "Authorization: Bearer %s", key) == 0)
		t->hdrs = curl_slist_append(t->hdrs, auth.data);
	cof_buf_release(&auth);
	hop_headers(t);
	if (strcmp(method, "GET") && strcmp(method, "DELETE"))
		carry_body(t, body);
	curl_easy_setopt(t->h, CURLOPT_HTTPHEADER, t->hdrs);
	if (carry_submit(t, err)) {
		t->refs = 1;
		carry_unref(t);
		return -1;
	}
	pthread_mutex_lock(&t->mu);
	while (!t->done)
		pthread_cond_wait(&t->cv, &t->mu);
	json_error_t je;
	json_t *j = t->rc == CURLE_OK ? json_loadb(t->buf.data ? t->buf.data : "", t->buf.len,
						    0, &je) : NULL;
	if (t->too_big) {
		cof_error(err, COF_EUNAVAILABLE, "node '%s' answered more than %zu bytes", node,
			  CARRY_CALL_MAX);
	} else if (t->rc != CURLE_OK || t->status < 200) {
		cof_error(err, COF_EUNAVAILABLE, "node '%s' (%s) did not answer: %s", node, url,
			  t->err[0] ? t->err : curl_easy_strerror(t->rc));
	} else if (t->status >= 300) {
		answered_error(j, t->status, node, err);
	} else if (!j) {
		cof_error(err, COF_EINTERNAL, "node '%s' answered %ld with no JSON: %s", node,
			  t->status, je.text);
	} else {
		*out = j;
		j = NULL;
		rc = 0;
	}
	if (rc && !json_object_get(err->extra, "node"))
		cof_err_set(err, "node", json_string(node)); /* as X-Coffer-Node would */
	pthread_mutex_unlock(&t->mu);
	json_decref(j);
	carry_unref(t);
	return rc;
}
