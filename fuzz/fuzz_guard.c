/*
 * fuzz_guard.c — the write guard over arbitrary content and names.
 * Input: SPLIT(1 byte) CONTENT. Checks:
 *  - the block scan and the stream scan (the content cut into chunks of
 *    1 + SPLIT bytes) agree on whether it is blocked, on the rule and on the
 *    offset (a match that spans chunks still fires);
 *  - an offset lies within the content, a hit has a name and a category;
 *  - the same bytes as a path: the name checks answer 0 or 1, and a name with
 *    a '/'-led, '..', '\' or control byte is blocked;
 *  - the normaliser (src/policy/normalize.c) on the bytes: output within
 *    COF_NORM_CAP, the same twice, cof_norm_map within the input and never
 *    going back; pure ASCII without quotes or backslashes comes out as it is;
 *  - the decoded layers (through the scans above, and walked directly): every
 *    view it hands out is readable to its end plus COF_VIEW_PAD (ASan checks),
 *    names a layer, and reports an offset within the content.
 */
#include "fuzz.h"
#include "policy/normalize.h"
#include "policy/policy.h"

typedef struct view_check {
	size_t n;
	int views;
} view_check;

static int on_view(void *c, const char *data, size_t len, const char *layer, uint64_t raw_end,
		   size_t base)
{
	view_check *v = c;
	volatile char sink = 0;

	for (size_t i = 0; i < len + COF_VIEW_PAD; i++)
		sink ^= data[i]; /* the view and its padding are allocated */
	(void)sink;
	FUZZ_CHECK(layer && layer[0], "a view without a layer name");
	FUZZ_CHECK(raw_end == UINT64_MAX ? base <= v->n : raw_end <= v->n,
		   "view '%s' reports %llu / base %zu past %zu bytes", layer,
		   (unsigned long long)raw_end, base, v->n);
	v->views++;
	return v->views > 10000; /* a bound of the fuzzer's own */
}

static void check_normaliser(const char *in, size_t n)
{
	char *a = malloc(COF_NORM_CAP(n)), *b = malloc(COF_NORM_CAP(n));
	size_t ka = cof_norm(in, n, a), kb = cof_norm(in, n, b), last = 0;
	int plain = 1;

	FUZZ_CHECK(ka <= COF_NORM_CAP(n) && ka == kb && !memcmp(a, b, ka),
		   "cof_norm is not a function of its input");
	for (size_t k = 0; k <= ka; k += 1 + k / 8) {
		size_t m = cof_norm_map(in, n, k);
		FUZZ_CHECK(m <= n && m >= last, "map %zu -> %zu (after %zu) of %zu", k, m, last, n);
		last = m;
	}
	for (size_t i = 0; i < n; i++)
		plain &= (unsigned char)in[i] < 0x80 && in[i] != '\'' && in[i] != '"' &&
			 in[i] != '\\';
	if (plain)
		FUZZ_CHECK(ka == n && !memcmp(a, in, n), "plain ASCII changed by the normaliser");
	free(a);
	free(b);
}

static const cof_guard *g;

/* Compiles the guard before the first input (seconds under ASan: not to be
 * counted against the per-input timeout). */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	cof_err err = {0};
	(void)argc, (void)argv;
	if (!(g = cof_guard_default(&err)))
		FUZZ_CHECK(0, "the built-in rules do not compile: %s", err.msg);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cof_err err = {0};
	cof_guard_hit bh, sh;

	if (!g && !(g = cof_guard_default(&err)))
		FUZZ_CHECK(0, "the built-in rules do not compile: %s", err.msg);
	if (size < 1)
		return 0;
	size_t chunk = 1 + data[0];
	const char *content = fuzz_dup_exact(data + 1, size - 1);
	size_t n = size - 1;

	memset(&bh, 0, sizeof bh);
	memset(&sh, 0, sizeof sh);
	int b = cof_guard_scan(g, NULL, content, n, &bh, &err);
	FUZZ_CHECK(b == 0 || b == 1, "block scan answered %d", b);
	cof_guard_stream *s;
	FUZZ_CHECK(cof_guard_stream_open(g, NULL, &s, &sh, &err) == 0, "stream open failed");
	for (size_t off = 0; off < n; off += chunk)
		if (cof_guard_stream_feed(s, content + off, n - off < chunk ? n - off : chunk))
			break;
	int r = cof_guard_stream_close(s);
	FUZZ_CHECK(r == b, "block says %d (%s), stream in %zu-byte chunks says %d (%s)", b,
		   bh.rule, chunk, r, sh.rule);
	if (b) {
		FUZZ_CHECK(bh.rule[0] && bh.category[0], "a hit without a name");
		FUZZ_CHECK(bh.offset >= 1 && bh.offset <= n, "offset %llu of %zu bytes",
			   (unsigned long long)bh.offset, n);
		FUZZ_CHECK(!strcmp(bh.rule, sh.rule) && bh.offset == sh.offset &&
				   !strcmp(bh.layer, sh.layer),
			   "block %s '%s' at %llu, stream %s '%s' at %llu", bh.rule, bh.layer,
			   (unsigned long long)bh.offset, sh.rule, sh.layer,
			   (unsigned long long)sh.offset);
	}
	/* The bytes as a name. */
	int nm = cof_guard_scan_name(g, content, n, &bh);
	FUZZ_CHECK(nm == 0 || nm == 1, "name check answered %d", nm);
	int must = n && (content[0] == '/' || memchr(content, '\\', n));
	for (size_t i = 0; i < n; i++)
		must |= (unsigned char)content[i] < 0x20 || content[i] == 0x7f;
	if (must)
		FUZZ_CHECK(nm == 1, "a name that must be blocked passed");
	check_normaliser(content, n);
	view_check v = {n, 0};
	int w = cof_layers_walk(content, n, on_view, &v);
	FUZZ_CHECK(w == 0 || w == 1, "layers walk answered %d", w);
	free((void *)content);
	return 0;
}
