/*
 * test_meta_pg.c — what the PostgreSQL store computes itself, without a
 * database: the upper bound of a prefix range (cof_pg_prefix_upper), which
 * replaces SQLite's prefix + "\xff" (not valid text in PostgreSQL). Every
 * string that starts with the prefix sorts below the bound, bytewise, and
 * every string that does not start with it and sorts at or above the prefix
 * sorts at or above the bound. The store's queries run in
 * test_meta_conformance on a real database (make test's pg pass).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "store/meta_pg.h"

static int below(const char *s, const char *upper)
{
	return upper == NULL || strcmp(s, upper) < 0;
}

static void test_upper_values(void **state)
{
	static const struct { const char *prefix, *want; } cases[] = {
		{"a/", "a0"},
		{"docs", "doct"},
		{"\x7f", "\xc2\x80"},                         /* U+007F -> U+0080 */
		{"caf\xc3\xa9", "caf\xc3\xaa"},               /* é -> ê */
		{"x\xdf\xbf", "x\xe0\xa0\x80"},               /* U+07FF -> U+0800 */
		{"x\xed\x9f\xbf", "x\xee\x80\x80"},           /* U+D7FF -> U+E000, past surrogates */
		{"x\xef\xbf\xbf", "x\xf0\x90\x80\x80"},       /* U+FFFF -> U+10000 */
		{"ab\xf4\x8f\xbf\xbf", "ac"},                 /* U+10FFFF has no next: drop it */
	};
	cof_buf b = COF_BUF_INIT;

	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		const char *got = cof_pg_prefix_upper(cases[i].prefix, &b);
		assert_non_null(got);
		if (strcmp(got, cases[i].want))
			fail_msg("prefix %zu: got %s", i, got);
	}
	assert_null(cof_pg_prefix_upper("", &b));
	assert_null(cof_pg_prefix_upper(NULL, &b));
	assert_null(cof_pg_prefix_upper("\xf4\x8f\xbf\xbf", &b));
	cof_buf_release(&b);
}

static void test_upper_bounds_the_range(void **state)
{
	static const char *const prefixes[] = {"a", "a/", "a/b", "caf\xc3\xa9", "z\xef\xbf\xbf"};
	static const char *const paths[] = {
		"a", "a/", "a/b", "a/b/c", "a0", "a\x7f", "a\xc2\x80", "ab", "b", "caf",
		"caf\xc3\xa9", "caf\xc3\xa9/x", "caf\xc3\xaa", "caf\xc3\xa9\xf4\x8f\xbf\xbf",
		"z\xef\xbf\xbf", "z\xef\xbf\xbf\xf0\x90\x80\x80", "z\xf0\x90\x80\x80",
	};
	cof_buf b = COF_BUF_INIT;

	for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++) {
		const char *p = prefixes[i];
		const char *u = cof_pg_prefix_upper(p, &b);
		for (size_t j = 0; j < sizeof paths / sizeof *paths; j++) {
			const char *s = paths[j];
			int starts = strncmp(s, p, strlen(p)) == 0;
			int in_range = strcmp(s, p) >= 0 && below(s, u);
			if (starts != in_range)
				fail_msg("prefix %zu, path %zu: starts %d, in range %d", i, j,
					 starts, in_range);
		}
	}
	cof_buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_upper_values),
		cmocka_unit_test(test_upper_bounds_the_range),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
