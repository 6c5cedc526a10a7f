/*
 * test_regex.c — src/util/regex.c: a backtracking pattern stops at the match
 * limit, a search stops at its time budget, and ordinary matching is unchanged.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "util/regex.h"
#include "util/util.h"

static void test_plain_match(void **state)
{
	cof_regex rx;
	cof_err err = {0};
	(void)state;

	assert_int_equal(cof_regex_open(&rx, "^ab+c$", 0, 0, &err), 0);
	assert_int_equal(cof_regex_match(&rx, "abbbc", 5), 1);
	assert_int_equal(cof_regex_match(&rx, "abbbcX", 5), 1); /* the length counts */
	assert_int_equal(cof_regex_match(&rx, "ac", 2), 0);
	assert_int_equal(cof_regex_match(&rx, "ab\xff" "c", 4), 0); /* bad UTF-8: no match */
	assert_int_equal(rx.over, COF_REGEX_OK);
	cof_regex_close(&rx);
	assert_int_equal(cof_regex_open(&rx, "(", 0, 0, &err), -1);
	assert_int_equal(err.code, COF_EVALIDATION);
	assert_non_null(strstr(err.msg, "'pattern'"));
	cof_regex_close(&rx);
	cof_err_clear(&err);
}

/* ^(a|aa)+$ over "a" x 32 + "!" backtracks about 3.5 million times. */
static void test_match_limit(void **state)
{
	cof_regex rx;
	cof_err err = {0};
	char line[64], why[128];
	(void)state;

	memset(line, 'a', 32);
	line[32] = '!';
	assert_int_equal(cof_regex_open(&rx, "^(a|aa)+$", 0, 0, &err), 0);
	assert_int_equal(cof_regex_match(&rx, line, 33), -1);
	assert_int_equal(rx.over, COF_REGEX_OVER_MATCH);
	assert_string_equal(cof_regex_limit_key(&rx), "matchLimit");
	assert_non_null(strstr(cof_regex_limit(&rx, why, sizeof why), "match limit"));
	/* sticky: the search is over */
	assert_int_equal(cof_regex_match(&rx, "aa", 2), -1);
	cof_regex_close(&rx);
}

/* A budget of 1 ms runs out over lines that each stay under the limits. */
static void test_time_budget(void **state)
{
	cof_regex rx;
	cof_err err = {0};
	char line[64], why[128];
	int r = 0;
	(void)state;

	memset(line, 'a', 22);
	line[22] = '!';
	assert_int_equal(cof_regex_open(&rx, "^(a|aa)+$", 0, 1, &err), 0);
	for (int i = 0; i < 1000000 && r == 0; i++)
		r = cof_regex_match(&rx, line, 23);
	assert_int_equal(r, -1);
	assert_int_equal(rx.over, COF_REGEX_OVER_TIME);
	assert_string_equal(cof_regex_limit_key(&rx), "timeBudget");
	assert_non_null(strstr(cof_regex_limit(&rx, why, sizeof why), "time budget"));
	cof_regex_close(&rx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain_match),
		cmocka_unit_test(test_match_limit),
		cmocka_unit_test(test_time_budget),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
