/*
 * fuzz_guard.c — the write guard over arbitrary content and names.
 * Input: SPLIT(1 byte) CONTENT. Checks:
 *  - the block scan and the stream scan (the content cut into chunks of
 *    1 + SPLIT bytes) agree on whether it is blocked, on the rule and on the
 *    offset (a match that spans chunks still fires);
 *  - an offset lies within the content, a hit has a name and a category;
 *  - the same bytes as a path: the name checks answer 0 or 1, and a name with
 *    a '/'-led, '..', '\' or control byte is blocked.
 */
#include "fuzz.h"
#include "policy/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const cof_guard *g;
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
		FUZZ_CHECK(!strcmp(bh.rule, sh.rule) && bh.offset == sh.offset,
			   "block %s at %llu, stream %s at %llu", bh.rule,
			   (unsigned long long)bh.offset, sh.rule, (unsigned long long)sh.offset);
	}
	/* The bytes as a name. */
	int nm = cof_guard_scan_name(g, content, n, &bh);
	FUZZ_CHECK(nm == 0 || nm == 1, "name check answered %d", nm);
	int must = n && (content[0] == '/' || memchr(content, '\\', n));
	for (size_t i = 0; i < n; i++)
		must |= (unsigned char)content[i] < 0x20 || content[i] == 0x7f;
	if (must)
		FUZZ_CHECK(nm == 1, "a name that must be blocked passed");
	free((void *)content);
	return 0;
}
