/*
 * test_range.c — cof_range_parse edges, data-driven.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "util/range.h"

typedef struct range_case {
	const char *header;
	int64_t size;
	int want;        /* 1, 0 or -1 */
	int64_t start;   /* when want == 1 */
	int64_t len;
} range_case;

static const range_case cases[] = {
	/* single ranges */
	{ "bytes=0-0", 10, 1, 0, 1 },
	{ "bytes=0-9", 10, 1, 0, 10 },
	{ "bytes=2-5", 10, 1, 2, 4 },
	{ "bytes=9-9", 10, 1, 9, 1 },
	{ "bytes=5-", 10, 1, 5, 5 },
	{ "bytes=0-", 10, 1, 0, 10 },
	{ "bytes=-3", 10, 1, 7, 3 },
	{ "bytes=-10", 10, 1, 0, 10 },
	{ "bytes=-11", 10, 1, 0, 10 },
	{ "bytes=-99999999999999999999999", 10, 1, 0, 10 },
	/* last-pos past the end is clamped */
	{ "bytes=3-100", 10, 1, 3, 7 },
	{ "bytes=3-99999999999999999999999", 10, 1, 3, 7 },
	/* unit case and white space */
	{ "BYTES=1-2", 10, 1, 1, 2 },
	{ "Bytes=1-2", 10, 1, 1, 2 },
	{ "bytes= 1-2 ", 10, 1, 1, 2 },
	{ "bytes=\t1-2", 10, 1, 1, 2 },
	{ "bytes=1-2,", 10, 1, 1, 2 },
	{ "bytes=,1-2", 10, 1, 1, 2 },
	/* unsatisfiable */
	{ "bytes=10-", 10, -1, 0, 0 },
	{ "bytes=10-20", 10, -1, 0, 0 },
	{ "bytes=-0", 10, -1, 0, 0 },
	{ "bytes=99999999999999999999-", 10, -1, 0, 0 },
	{ "bytes=9223372036854775807-", 10, -1, 0, 0 },
	/* malformed: ignored */
	{ NULL, 10, 0, 0, 0 },
	{ "", 10, 0, 0, 0 },
	{ "bytes", 10, 0, 0, 0 },
	{ "bytes=", 10, 0, 0, 0 },
	{ "bytes=-", 10, 0, 0, 0 },
	{ "bytes=5-3", 10, 0, 0, 0 },
	{ "bytes=a-b", 10, 0, 0, 0 },
	{ "bytes=1-2x", 10, 0, 0, 0 },
	{ "bytes=1 -2", 10, 0, 0, 0 },
	{ "bytes=+1-2", 10, 0, 0, 0 },
	{ "bytes=--1", 10, 0, 0, 0 },
	{ "bytes=1--2", 10, 0, 0, 0 },
	{ "bytes=0x1-2", 10, 0, 0, 0 },
	{ "items=0-1", 10, 0, 0, 0 },
	{ "bytes 0-1", 10, 0, 0, 0 },
	{ "bytes=,", 10, 0, 0, 0 },
	{ "bytes=1-2;3", 10, 0, 0, 0 },
	/* several ranges: the whole file */
	{ "bytes=0-1,3-4", 10, 0, 0, 0 },
	{ "bytes=0-1, -2", 10, 0, 0, 0 },
	{ "bytes=0-1,x", 10, 0, 0, 0 },
	/* empty representation: every range is unsatisfiable */
	{ "bytes=0-", 0, -1, 0, 0 },
	{ "bytes=-1", 0, -1, 0, 0 },
	/* big sizes */
	{ "bytes=4294967296-", 8589934592LL, 1, 4294967296LL, 4294967296LL },
	{ "bytes=-1", INT64_MAX, 1, INT64_MAX - 1, 1 },
	{ "bytes=0-", INT64_MAX, 1, 0, INT64_MAX },
};

/* Runs every row of `cases`, naming the failing one. */
static void test_cases(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const range_case *c = &cases[i];
		int64_t start = -42, len = -42;
		int got = cof_range_parse(c->header, c->size, &start, &len);
		if (got != c->want)
			fail_msg("'%s' size %lld: got %d, want %d",
				 c->header ? c->header : "(null)",
				 (long long)c->size, got, c->want);
		if (got == 1) {
			assert_int_equal(start, c->start);
			assert_int_equal(len, c->len);
		} else {
			/* outputs untouched unless a range is returned */
			assert_int_equal(start, -42);
			assert_int_equal(len, -42);
		}
	}
}

/* A long header of commas and spaces must not misbehave. */
static void test_long_header(void **state)
{
	static char buf[70000];
	int64_t s, l;
	(void)state;
	snprintf(buf, sizeof(buf), "bytes=");
	for (size_t i = 6; i < sizeof(buf) - 1; i++)
		buf[i] = (i % 2) ? ',' : ' ';
	buf[sizeof(buf) - 1] = '\0';
	assert_int_equal(cof_range_parse(buf, 100, &s, &l), 0);
	for (size_t i = 6; i < sizeof(buf) - 1; i++)
		buf[i] = '9';
	assert_int_equal(cof_range_parse(buf, 100, &s, &l), 0); /* no '-' */
	buf[sizeof(buf) - 2] = '-';
	assert_int_equal(cof_range_parse(buf, 100, &s, &l), -1);
}

/* x-amz-copy-source-range: only bytes=FIRST-LAST with FIRST <= LAST. */
static void test_copy_range(void **state)
{
	static const char *bad[] = {"0-2", "bytes=0", "bytes=hello-world", "bytes=0-bar",
				    "bytes=hello-", "bytes=0-2,3-5", "bytes=5-2", "bytes=-3",
				    "bytes=3-", "Bytes=0-2", "bytes= 0-2", "bytes=0-2 ", "",
				    "bytes=0--2", NULL};
	int64_t a = 0, b = 0;
	(void)state;
	assert_int_equal(cof_copy_range_parse("bytes=0-2", &a, &b), 0);
	assert_true(a == 0 && b == 2);
	assert_int_equal(cof_copy_range_parse("bytes=7-7", &a, &b), 0);
	assert_true(a == 7 && b == 7);
	assert_int_equal(cof_copy_range_parse("bytes=1-99999999999999999999", &a, &b), 0);
	assert_true(a == 1 && b == INT64_MAX);
	for (int i = 0; bad[i]; i++)
		assert_int_equal(cof_copy_range_parse(bad[i], &a, &b), -1);
	assert_int_equal(cof_copy_range_parse(NULL, &a, &b), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cases),
		cmocka_unit_test(test_long_header),
		cmocka_unit_test(test_copy_range),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
