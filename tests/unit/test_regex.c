/*
 * test_regex.c — src/util/regex.c: a backtracking pattern stops at the match
 * limit, a search stops at its time budget, and ordinary matching is unchanged.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
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

/* The lines cof_regex_next_line finds in buf, as a bit per line, against
 * cof_regex_match line by line (`one`, another matcher of the same pattern). */
static void same_lines(cof_regex *rx, cof_regex *one, const char *buf, size_t len)
{
	size_t pos = 0, ls, le, line = 0, want_line = 0, p = 0;
	int r;

	/* each line found must be the next line that matches alone */
	while ((r = cof_regex_next_line(rx, buf, len, pos, &ls, &le)) == 1) {
		for (;;) {
			const char *nl = memchr(buf + p, '\n', len - p);
			size_t e = nl ? (size_t)(nl - buf) : len;
			int m = cof_regex_match(one, buf + p, e - p);
			assert_int_not_equal(m, -1);
			if (m) {
				assert_int_equal(p, ls);
				assert_int_equal(e, le);
				break;
			}
			assert_true(e < len);
			p = e + 1;
			want_line++;
		}
		line = want_line;
		if (le >= len)
			break;
		pos = p = le + 1;
		want_line = line + 1;
	}
	assert_int_not_equal(r, -1);
	/* and no line after the last one found matches */
	if (r == 0)
		for (; p < len;) {
			const char *nl = memchr(buf + p, '\n', len - p);
			size_t e = nl ? (size_t)(nl - buf) : len;
			assert_int_equal(cof_regex_match(one, buf + p, e - p), 0);
			p = e + 1;
		}
}

/* Whole-buffer matching finds the lines line by line matching finds, for
 * patterns that may span lines, look around, anchor or match empty. */
static void test_next_line_same_as_lines(void **state)
{
	static const char *const pats[] = {
		"ab", "a\\sb", "^$", "x*", "b$", "^a", "\\Aa", "a\\z", "(?<=a) b", "a(?! )",
		"\\bab\\b", "[^a]b", "a.b", "\\d++b", "(?:a|b)\\s*$", "a\\s*\\n?b", "\\R", "é",
		"(a|b)\\1", "a[\\s\\S]b", "\\Ka", "b\\Z", NULL};
	static const char *const toks[] = {"a", "b", " ", "\n", "\n", "x", "é", "1", "ab"};
	char buf[4096];
	uint32_t seed = 13;
	(void)state;

	for (int round = 0; round < 40; round++) {
		size_t len = 0;
		int n = round % 4 == 0 ? round : 200 + round * 20;
		for (int i = 0; i < n && len + 4 < sizeof buf; i++) {
			seed = seed * 1103515245u + 12345u;
			const char *t = toks[(seed >> 16) % 9];
			memcpy(buf + len, t, strlen(t));
			len += strlen(t);
		}
		for (int k = 0; pats[k]; k++) {
			cof_regex rx, one, shared;
			cof_err err = {0};
			assert_int_equal(cof_regex_open(&rx, pats[k], round & 1, 0, &err), 0);
			assert_int_equal(cof_regex_open(&one, pats[k], round & 1, 0, &err), 0);
			assert_int_equal(cof_regex_share(&shared, &rx, &err), 0);
			same_lines(round & 2 ? &shared : &rx, &one, buf, len);
			cof_regex_close(&shared);
			cof_regex_close(&one);
			cof_regex_close(&rx);
		}
	}
}

/* Over a MiB: the search goes a MiB of lines at a time, and lines across
 * the cuts are found once each. */
static void test_next_line_big_buffer(void **state)
{
	size_t len = 3 * 1024 * 1024 + 77, n = 0;
	char *buf = cof_malloc(len);
	cof_regex rx, one;
	cof_err err = {0};
	(void)state;

	for (size_t i = 0; i < len; i++)
		buf[i] = i % 61 == 60 ? '\n' : (char)('a' + i % 7);
	for (size_t at = 1024 * 1024 - 3; at < len; at += 1024 * 1024)
		memcpy(buf + at, "NEEDLE", 6);
	static const char *const pats[] = {"NEEDLE|^abc", "NEE\\w+", "DLE", NULL};
	for (int k = 0; pats[k]; k++) {
		assert_int_equal(cof_regex_open(&rx, pats[k], 0, 0, &err), 0);
		assert_int_equal(cof_regex_open(&one, pats[k], 0, 0, &err), 0);
		same_lines(&rx, &one, buf, len);
		cof_regex_close(&one);
		cof_regex_close(&rx);
	}
	assert_int_equal(cof_regex_open(&rx, "NEEDLE", 0, 0, &err), 0);
	for (size_t pos = 0, ls, le; cof_regex_next_line(&rx, buf, len, pos, &ls, &le) == 1;
	     pos = le + 1)
		n++;
	assert_int_equal(n, 3);
	cof_regex_close(&rx);
	free(buf);
}

/* A limit met over many lines at once is not a stop: the lines alone
 * decide, and one that meets the limit alone stops the search there. */
static void test_next_line_limits(void **state)
{
	cof_regex rx;
	cof_err err = {0};
	char buf[2048];
	size_t len = 0, ls, le;
	(void)state;

	for (int i = 0; i < 60; i++) { /* lines of 22 a's and a '!': each alone is fine */
		memset(buf + len, 'a', 22);
		len += 22;
		buf[len++] = i == 59 ? 'b' : '!';
		buf[len++] = '\n';
	}
	assert_int_equal(cof_regex_open(&rx, "(a|aa)+b", 0, 0, &err), 0);
	assert_int_equal(cof_regex_next_line(&rx, buf, len, 0, &ls, &le), 1);
	assert_int_equal(ls, 59 * 24);
	assert_int_equal(rx.over, COF_REGEX_OK);
	cof_regex_close(&rx);
	memset(buf, 'a', 40);
	memcpy(buf + 40, "!\nab\n", 5);
	assert_int_equal(cof_regex_open(&rx, "^(a|aa)+$", 0, 0, &err), 0);
	assert_int_equal(cof_regex_next_line(&rx, buf, 45, 0, &ls, &le), -1);
	assert_int_equal(rx.over, COF_REGEX_OVER_MATCH);
	assert_int_equal(ls, 0);
	cof_regex_close(&rx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain_match),
		cmocka_unit_test(test_match_limit),
		cmocka_unit_test(test_time_budget),
		cmocka_unit_test(test_next_line_same_as_lines),
		cmocka_unit_test(test_next_line_big_buffer),
		cmocka_unit_test(test_next_line_limits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
