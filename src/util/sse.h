/*
 * sse.h — an incremental parser of a Server-Sent Events stream (the
 * text/event-stream format of the HTML standard, "Parsing an event stream"),
 * for the relay client's operations stream. Pure: bytes in, events out, no
 * I/O, so it can be fed whatever chunks the network hands over and fuzzed.
 *
 * Lines end with "\r\n", "\n" or "\r" (also split across chunks); a line
 * starting with ':' is a comment; `event:` sets the type, each `data:` adds a
 * line to the data (joined with '\n'); one space after the ':' is dropped;
 * `id` and `retry` and unknown fields are ignored; an empty line dispatches
 * the event when it has data (type "message" when none was named). A leading
 * byte-order mark is skipped.
 */
#ifndef COF_UTIL_SSE_H
#define COF_UTIL_SSE_H

#include <stddef.h>
#include "util/util.h"

/* Called once per dispatched event: `event` and `data` are NUL-terminated
 * (data may hold NULs of its own: `len` is its length) and valid only during
 * the call. A non-zero return stops cof_sse_feed, which returns it. */
typedef int (*cof_sse_fn)(void *ud, const char *event, const char *data, size_t len);

typedef struct cof_sse {
	cof_buf line;    /* the line being read */
	cof_buf event;   /* the event type of the event being read */
	cof_buf data;    /* its data so far */
	size_t max;      /* bound on one line and on one event's data (0 = 64 MiB) */
	int after_cr;    /* the last byte seen was '\r' (a '\n' next is its pair) */
	int started;     /* past the optional byte-order mark */
} cof_sse;
#define COF_SSE_INIT {COF_BUF_INIT, COF_BUF_INIT, COF_BUF_INIT, 0, 0, 0}

/* Feeds `len` bytes. Returns 0, the callback's non-zero value, or -1 when a
 * line or an event's data passed `max` (the stream cannot be trusted any
 * more; the parser is then reset). */
int cof_sse_feed(cof_sse *p, const char *buf, size_t len, cof_sse_fn fn, void *ud);
/* Forgets a partly read event and line (a new connection starts clean). */
void cof_sse_reset(cof_sse *p);
void cof_sse_release(cof_sse *p);

#endif
