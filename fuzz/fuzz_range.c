/*
 * fuzz_range.c — cof_range_parse (src/util/range.h). Input: 8 bytes choosing
 * the representation size, then the header value (a NUL ends it early).
 * Invariants: 1 means 0 <= start < size, len >= 1, start + len <= size;
 * 0 and -1 leave start/len alone; a header not starting with "bytes=" (any
 * case), or size < 0, gives 0; size 0 never gives 1 (RFC 9110 14.1.1); the
 * answer depends on nothing but the input; a range satisfiable at size n is
 * satisfiable at n + 1.
 */
#include <strings.h>
#include "fuzz.h"
#include "util/range.h"

static int64_t pick_size(const uint8_t *d)
{
	static const int64_t special[] = {0, 1, 2, 10, 100, 4096, INT64_MAX, -1, INT64_MIN,
					  INT64_MAX - 1, 1000000000000LL};
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | d[i];
	switch (d[0] >> 6) {
	case 0:
		return special[v % (sizeof special / sizeof special[0])];
	case 1:
		return (int64_t)(v % 1000);
	default:
		return (int64_t)v;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 8)
		return 0;
	int64_t rsize = pick_size(data);
	char *h = fuzz_dup_str(data + 8, size - 8);
	int64_t start = -12345, len = -6789;
	int r = cof_range_parse(h, rsize, &start, &len);

	FUZZ_CHECK(r == 1 || r == 0 || r == -1, "returned %d", r);
	if (r == 1) {
		FUZZ_CHECK(rsize > 0, "a range of an empty representation");
		FUZZ_CHECK(start >= 0 && start < rsize, "start %lld, size %lld", (long long)start,
			   (long long)rsize);
		FUZZ_CHECK(len >= 1 && len <= rsize - start, "start %lld len %lld size %lld",
			   (long long)start, (long long)len, (long long)rsize);
	} else {
		FUZZ_CHECK(start == -12345 && len == -6789, "written on %d", r);
	}
	if (rsize < 0 || strncasecmp(h, "bytes=", 6))
		FUZZ_CHECK(r == 0, "'%.60s' (size %lld) gave %d", h, (long long)rsize, r);
	/* Every range of an empty representation is unsatisfiable (RFC 9110
	 * 14.1.1): a valid single range gives -1, never 1. */
	if (rsize == 0)
		FUZZ_CHECK(r != 1, "a range of an empty representation");

	/* Same input, same answer. */
	int64_t s2 = -1, l2 = -1;
	int r2 = cof_range_parse(h, rsize, &s2, &l2);
	FUZZ_CHECK(r2 == r && (r != 1 || (s2 == start && l2 == len)), "not deterministic");

	/* A satisfiable range of `size` stays satisfiable for a bigger size
	 * unless it was a suffix (whose start moves). */
	if (r == 1 && rsize < INT64_MAX && !strchr(h + 6, ',')) {
		int64_t s3, l3;
		int r3 = cof_range_parse(h, rsize + 1, &s3, &l3);
		FUZZ_CHECK(r3 == 1, "'%.60s' satisfiable at %lld but not at %lld", h,
			   (long long)rsize, (long long)rsize + 1);
	}
	free(h);
	return 0;
}
