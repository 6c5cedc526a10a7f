/*
 * test_relay_sse.c — the Server-Sent Events parser (src/util/sse.h) the relay
 * client reads its operations stream with: line ends of every kind, also
 * split across chunks, comments, multi-line data, the event name reset after
 * each event, events without data, the byte-order mark, the size bound at its
 * edge, and a callback that stops the stream.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "util/sse.h"

typedef struct seen {
	cof_buf log; /* "event|data\n" per event */
	int stop_after;
	int count;
} seen;

static int on_event(void *ud, const char *event, const char *data, size_t len)
{
	seen *s = ud;

	cof_buf_addf(&s->log, "%s|", event);
	cof_buf_add(&s->log, data, len);
	cof_buf_adds(&s->log, "\n");
	s->count++;
	return s->stop_after && s->count >= s->stop_after ? 7 : 0;
}

/* Feeds `in` in chunks of `chunk` bytes (0 = whole) and returns the log. */
static char *parse(const char *in, size_t len, size_t chunk)
{
	static char out[4096];
	cof_sse p = COF_SSE_INIT;
	seen s = {COF_BUF_INIT, 0, 0};

	if (!chunk)
		chunk = len ? len : 1;
	for (size_t i = 0; i < len; i += chunk)
		assert_int_equal(cof_sse_feed(&p, in + i, len - i < chunk ? len - i : chunk,
					      on_event, &s), 0);
	snprintf(out, sizeof out, "%s", s.log.data ? s.log.data : "");
	cof_buf_release(&s.log);
	cof_sse_release(&p);
	return out;
}

/* Every split of the input gives the same events. */
static void same_for_all_chunks(const char *in, const char *want)
{
	size_t len = strlen(in);

	for (size_t c = 0; c <= len; c++)
		assert_string_equal(parse(in, len, c), want);
}

static void test_basic_op(void **state)
{
	(void)state;
	same_for_all_chunks("event: op\ndata: {\"id\":\"1\"}\n\n", "op|{\"id\":\"1\"}\n");
}

static void test_line_ends(void **state)
{
	(void)state;
	same_for_all_chunks("event: a\r\ndata: 1\r\n\r\nevent: b\rdata: 2\r\revent: c\ndata: 3\n\n",
			    "a|1\nb|2\nc|3\n");
}

static void test_comments_pings_and_fields(void **state)
{
	(void)state;
	same_for_all_chunks(": ping\n\n: ping\nid: 7\nretry: 10\nfoo: bar\nevent: op\ndata:x\n\n",
			    "op|x\n");
}

static void test_multiline_data_and_default_name(void **state)
{
	(void)state;
	same_for_all_chunks("data: a\ndata:  b\ndata\n\n", "message|a\n b\n\n");
}

static void test_name_resets_and_empty_events(void **state)
{
	(void)state;
	/* An event with no data is not dispatched, and its name does not carry
	 * over to the next one. */
	same_for_all_chunks("event: x\n\ndata: 1\n\nevent: y\ndata: 2\n\n", "message|1\ny|2\n");
}

static void test_bom_and_incomplete_tail(void **state)
{
	(void)state;
	same_for_all_chunks("\xEF\xBB\xBF" "event: op\ndata: 1\n\nevent: op\ndata: 2\n",
			    "op|1\n");
	/* A BOM only opens a stream: later it is text. */
	same_for_all_chunks("data: \xEF\xBB\xBFz\n\n", "message|\xEF\xBB\xBFz\n");
}

static void test_nul_in_data(void **state)
{
	seen s = {COF_BUF_INIT, 0, 0};
	cof_sse p = COF_SSE_INIT;
	static const char in[] = "data: a\0b\n\n";

	(void)state;
	assert_int_equal(cof_sse_feed(&p, in, sizeof in - 1, on_event, &s), 0);
	assert_int_equal(s.log.len, strlen("message|") + 4);
	assert_memory_equal(s.log.data, "message|a\0b\n", s.log.len);
	cof_buf_release(&s.log);
	cof_sse_release(&p);
}

static void test_size_bound_edge(void **state)
{
	seen s = {COF_BUF_INIT, 0, 0};
	cof_sse p = COF_SSE_INIT;

	(void)state;
	/* max 16: a 16-byte line passes ("data: " + 10 bytes, data 10 + '\n'). */
	p.max = 16;
	assert_int_equal(cof_sse_feed(&p, "data: 0123456789\n\n", 18, on_event, &s), 0);
	assert_int_equal(s.count, 1);
	/* 17 bytes do not; the parser resets and reads on. */
	assert_int_equal(cof_sse_feed(&p, "data: 0123456789a\n\n", 19, on_event, &s), -1);
	assert_int_equal(cof_sse_feed(&p, "data: ok\n\n", 10, on_event, &s), 0);
	assert_int_equal(s.count, 2);
	cof_buf_release(&s.log);
	cof_sse_release(&p);
}

static void test_callback_stops(void **state)
{
	seen s = {COF_BUF_INIT, 1, 0};
	cof_sse p = COF_SSE_INIT;
	const char *in = "data: 1\n\ndata: 2\n\n";

	(void)state;
	assert_int_equal(cof_sse_feed(&p, in, strlen(in), on_event, &s), 7);
	assert_int_equal(s.count, 1);
	cof_buf_release(&s.log);
	cof_sse_release(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_basic_op),
		cmocka_unit_test(test_line_ends),
		cmocka_unit_test(test_comments_pings_and_fields),
		cmocka_unit_test(test_multiline_data_and_default_name),
		cmocka_unit_test(test_name_resets_and_empty_events),
		cmocka_unit_test(test_bom_and_incomplete_tail),
		cmocka_unit_test(test_nul_in_data),
		cmocka_unit_test(test_size_bound_edge),
		cmocka_unit_test(test_callback_stops),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
