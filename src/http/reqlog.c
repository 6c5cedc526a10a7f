/*
 * reqlog.c — one JSON line per request, written when the request completes:
 *
 *   {"time":"2026-12-01T15:04:05.123Z","requestId":"req_...","method":"GET",
 *    "route":"/v1/volumes/{}/files/{+}","status":200,"bytesIn":0,"bytesOut":5,
 *    "durationMs":1.25,"keyId":"k_3fa9...","org":"org_default"}
 *
 * The route is the pattern that matched (never the path: paths name files),
 * keyId is the first 16 hex digits of the key's SHA-256 (never the key), and
 * no header, query, token or byte of a body is written. To stderr, or to
 * `--log FILE` (appended; reopened by SIGHUP, for logrotate), or nowhere with
 * `--log none`. One write(2) a
 * line, under O_APPEND, so lines of concurrent requests never interleave.
 *
 * libmicrohttpd's own messages (a malformed request, a failed accept) come
 * through MHD_OPTION_EXTERNAL_LOGGER as lines of the same log with a level:
 *   {"time":"...","level":"warn","source":"libmicrohttpd","message":"..."}
 * so nothing bypasses --log as bare stderr text.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "http/http.h"

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static int log_fd = 2;
static char *log_path;

int http_log_open(const char *path)
{
	if (!path)
		return 0;
	if (!strcmp(path, "none")) {
		log_fd = -1; /* as nginx's access_log off: benchmarks compare so */
		return 0;
	}
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
	if (fd < 0) {
		fprintf(stderr, "cofferd: cannot open the request log '%s': %s\n", path,
			strerror(errno));
		return -1;
	}
	pthread_mutex_lock(&log_mu);
	free(log_path);
	log_path = cof_strdup(path);
	if (log_fd != 2)
		close(log_fd);
	log_fd = fd;
	pthread_mutex_unlock(&log_mu);
	return 0;
}

void http_log_reopen(void)
{
	pthread_mutex_lock(&log_mu);
	char *p = log_path ? cof_strdup(log_path) : NULL;
	pthread_mutex_unlock(&log_mu);
	if (p && http_log_open(p) == 0)
		fprintf(stderr, "cofferd: SIGHUP, request log '%s' reopened\n", p);
	free(p);
}

/* The time now as the log writes it (UTC, milliseconds). */
static void log_time(char *when, size_t size)
{
	struct timespec now;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	strftime(when, size, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(when + strlen(when), size - strlen(when), ".%03ldZ", now.tv_nsec / 1000000);
}

/* o as one compact line, written whole to fd (or to stderr when fd < 0 and
 * to_stderr); o is released. */
static void log_line(json_t *o, int to_stderr)
{
	char *line = o ? json_dumps(o, JSON_COMPACT) : NULL;

	json_decref(o);
	if (!line)
		return;
	size_t n = strlen(line);
	line[n] = '\n'; /* json_dumps' NUL: the line goes out with its newline */
	pthread_mutex_lock(&log_mu);
	int fd = log_fd >= 0 ? log_fd : to_stderr ? 2 : -1;
	ssize_t w = fd >= 0 ? write(fd, line, n + 1) : 0;
	(void)w; /* a full disk loses log lines, never requests */
	pthread_mutex_unlock(&log_mu);
	free(line);
}

void http_log_mhd(void *cls, const char *fmt, va_list ap)
{
	char msg[1024], when[40];

	(void)cls;
	vsnprintf(msg, sizeof msg, fmt, ap);
	size_t n = strlen(msg);
	while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r' || msg[n - 1] == ' '))
		msg[--n] = '\0';
	/* it may quote a client's bytes: JSON strings must be UTF-8, so only
	 * printable ASCII is kept */
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)msg[i] < 0x20 || (unsigned char)msg[i] > 0x7e)
			msg[i] = '?';
	log_time(when, sizeof when);
	/* the --log none of benchmarks silences requests, not the library's troubles */
	log_line(json_pack("{s:s, s:s, s:s, s:s}", "time", when, "level", "warn",
			   "source", "libmicrohttpd", "message", msg), 1);
}

void http_log_request(const http_req *req)
{
	char when[40];

	if (log_fd < 0)
		return;
	log_time(when, sizeof when);
	int head = req->method && !strcmp(req->method, "HEAD");
	json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:i, s:I, s:I, s:f}",
			      "time", when, "requestId", req->request_id,
			      "method", req->method ? req->method : "",
			      "route", req->route ? req->route->pattern : "",
			      "status", (int)req->status, "bytesIn", (json_int_t)req->bytes_in,
			      "bytesOut", (json_int_t)(head ? 0 : req->bytes_out),
			      "durationMs", (double)(cof_mono_us() - req->started_us) / 1000.0);
	if (!o)
		return;
	if (req->key_id[0])
		json_object_set_new(o, "keyId", json_string(req->key_id));
	if (req->who.org[0])
		json_object_set_new(o, "org", json_string(req->who.org));
	if (req->status == 0)
		json_object_set_new(o, "aborted", json_true()); /* no answer was queued */
	log_line(o, 0);
}
