/*
 * fuzz_regex_lines.c — cof_regex_next_line (whole-buffer grep matching)
 * against cof_regex_match line by line. Input: PATTERN NUL TEXT (no NUL: a
 * fixed pattern set over the input as text); the first byte's low bit asks
 * for caseless. Checks, for patterns that compile:
 *  - the lines next_line finds, in order, are exactly the lines that match
 *    alone, and each is a whole line of the text;
 *  - where either stops at a limit, both report one (then nothing more is
 *    compared: line by line may stop on a later or earlier line).
 */
#include "fuzz.h"
#include "util/regex.h"
#include "util/util.h"

static const char *const fixed[] = {"a\\sb", "^$", "x*", "b$", "\\bab", "[^a]b", "é",
				    "a.b|c", "(?<=a)b", "\\d++", "\\Aa",
				    "(?<!\\s)b", "a\\s*+$", NULL};

/* The end of the line of t (len bytes) that starts at p. */
static size_t line_end(const char *t, size_t len, size_t p)
{
	const char *nl = memchr(t + p, '\n', len - p);
	return nl ? (size_t)(nl - t) : len;
}

static void compare(const char *pat, int caseless, const char *t, size_t len)
{
	cof_regex rx, one;
	cof_err err = {0};
	size_t p = 0, ls = 0, le = 0;

	if (cof_regex_open(&rx, pat, caseless, 0, &err)) {
		cof_regex_close(&rx);
		cof_err_clear(&err);
		return;
	}
	FUZZ_CHECK(!cof_regex_open(&one, pat, caseless, 0, &err), "second open of %s", pat);
	for (;;) {
		int r = cof_regex_next_line(&rx, t, len, p, &ls, &le), m;
		if (r < 0)
			break; /* a limit: line by line may meet it elsewhere */
		/* the lines before the one found (all, when none is) match not */
		while (p < len && (r == 0 || p < ls)) {
			size_t e = line_end(t, len, p);
			if ((m = cof_regex_match(&one, t + p, e - p)) < 0)
				goto done;
			FUZZ_CHECK(m == 0, "%s: the line at %zu matches alone, not found", pat, p);
			p = e + 1;
		}
		if (r == 0)
			break;
		FUZZ_CHECK(p == ls, "%s: found at %zu, not the line start %zu", pat, ls, p);
		FUZZ_CHECK(line_end(t, len, p) == le, "%s: line end %zu", pat, le);
		if ((m = cof_regex_match(&one, t + ls, le - ls)) < 0)
			break;
		FUZZ_CHECK(m == 1, "%s: the line at %zu was found, matches not alone", pat, ls);
		if (le >= len)
			break;
		p = le + 1;
	}
done:
	cof_regex_close(&one);
	cof_regex_close(&rx);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, '\0', size);
	int caseless = size && (data[0] & 1);

	if (size > 4096)
		return 0;
	if (nul) {
		char *pat = fuzz_dup_str(data, (size_t)(nul - data));
		size_t tlen = size - (size_t)(nul - data) - 1;
		char *t = fuzz_dup_exact(nul + 1, tlen);
		if (*pat)
			compare(pat, caseless, t, tlen);
		free(t);
		free(pat);
	} else {
		char *t = fuzz_dup_exact(data, size);
		for (int k = 0; fixed[k]; k++)
			compare(fixed[k], caseless, t, size);
		free(t);
	}
	return 0;
}
