/*
 * fuzz_sse.c — cof_sse_feed (src/util/sse.h), the parser of the relay
 * client's operations stream. Input: 2 bytes choosing chunk sizes, then the
 * stream. Invariants: feeding the stream whole, one byte at a time, or in
 * chunks of the chosen sizes gives the same events; an event name never
 * holds a line end and data never holds '\r'; no more events than line ends;
 * the bound (small here) is never passed by a dispatched event's data.
 */
#include "fuzz.h"
#include "util/sse.h"

#define BOUND 4096

typedef struct log {
	cof_buf b;
	size_t events;
} log_t;

static int on_event(void *ud, const char *event, const char *data, size_t len)
{
	log_t *l = ud;

	FUZZ_CHECK(!strpbrk(event, "\r\n"), "line end in event name");
	FUZZ_CHECK(!memchr(data, '\r', len), "CR in data");
	FUZZ_CHECK(len < BOUND, "data of %zu bytes passed the bound", len);
	FUZZ_CHECK(data[len] == '\0', "data not terminated");
	cof_buf_adds(&l->b, event);
	cof_buf_add(&l->b, "\0", 1);
	cof_buf_addf(&l->b, "%zu:", len);
	cof_buf_add(&l->b, data, len);
	l->events++;
	return 0;
}

/* Feeds `d` in chunks cycling through sizes a, b (0 = whole); the log and
 * whether the bound was hit. */
static int run(const char *d, size_t n, size_t a, size_t b, log_t *l)
{
	cof_sse p = COF_SSE_INIT;
	int over = 0;
	size_t i = 0, k = 0;

	p.max = BOUND;
	while (i < n) {
		size_t c = (k++ & 1) ? b : a;
		if (!c || c > n - i)
			c = n - i;
		if (cof_sse_feed(&p, d + i, c, on_event, l) == -1)
			over = 1;
		i += c;
	}
	cof_sse_release(&p);
	return over;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	size_t a = data[0] % 17, b = data[1] % 5 + 1;
	char *d = fuzz_dup_exact(data + 2, size - 2);
	size_t n = size - 2, ends = 0;
	log_t whole = {COF_BUF_INIT, 0}, bytes = {COF_BUF_INIT, 0}, mixed = {COF_BUF_INIT, 0};

	for (size_t i = 0; i < n; i++)
		ends += d[i] == '\n' || d[i] == '\r';
	int o1 = run(d, n, 0, 0, &whole);
	int o2 = run(d, n, 1, 1, &bytes);
	int o3 = run(d, n, a, b, &mixed);
	FUZZ_CHECK(whole.events <= ends, "%zu events from %zu line ends", whole.events, ends);
	/* Past the bound a parser resets, so only streams within it must agree. */
	if (!o1 && !o2 && !o3) {
		FUZZ_CHECK(whole.b.len == bytes.b.len && (!whole.b.len ||
			   !memcmp(whole.b.data, bytes.b.data, whole.b.len)),
			   "byte-at-a-time differs from whole");
		FUZZ_CHECK(whole.b.len == mixed.b.len && (!whole.b.len ||
			   !memcmp(whole.b.data, mixed.b.data, whole.b.len)),
			   "chunks of %zu/%zu differ from whole", a, b);
	}
	cof_buf_release(&whole.b);
	cof_buf_release(&bytes.b);
	cof_buf_release(&mixed.b);
	free(d);
	return 0;
}
