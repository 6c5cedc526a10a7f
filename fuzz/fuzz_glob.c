/*
 * fuzz_glob.c — cof_glob_check, cof_glob_match and cof_glob_literal_prefix.
 * Input: PATTERN NUL PATH (no NUL: the input is both). Checks, for patterns
 * cof_glob_check accepts:
 *  - a match finishes within a second (no exponential backtracking);
 *  - for small inputs and valid paths, the answer equals a memoised reference
 *    matcher written here from the documented rules (`*`, `?` and classes stay
 *    within a segment; `**` as a whole segment spans zero or more segments,
 *    elsewhere it is a plain `*`, as in gitignore);
 *  - a pattern without metacharacters matches only itself; an escaped copy of
 *    the path matches the path;
 *  - a match starts with cof_glob_literal_prefix() of the pattern.
 */
#include <time.h>
#include "fuzz.h"
#include "util/util.h"

#define REF_PAT 200
#define REF_STR 400

static const char *rp, *rs;
static signed char memo[REF_PAT + 2][REF_STR + 2]; /* -1 unknown */
static unsigned char seg_start[REF_PAT + 2];       /* pattern byte starts a segment */

/* Class at p (after '['), exactly as documented: `!`/`^` negates, a leading
 * `]` is literal, `\` escapes, `a-z` ranges; never matches '/'. Returns 1/0,
 * -1 when there is no closing ']'. */
static int ref_class(const char *p, unsigned char c, const char **end)
{
	int neg = 0, hit = 0, first = 1;

	if (*p == '!' || *p == '^')
		neg = 1, p++;
	while (*p && (*p != ']' || first)) {
		unsigned char lo = (unsigned char)*p, hi;
		first = 0;
		if (lo == '\\' && p[1])
			lo = (unsigned char)*++p;
		p++;
		hi = lo;
		if (*p == '-' && p[1] && p[1] != ']') {
			hi = (unsigned char)p[1];
			if (hi == '\\' && p[2])
				hi = (unsigned char)p[2], p++;
			p += 2;
		}
		if (c >= lo && c <= hi)
			hit = 1;
	}
	if (*p != ']')
		return -1;
	*end = p + 1;
	return (hit != neg) && c != '/';
}

static int ref(size_t pi, size_t si)
{
	const char *p = rp + pi, *s = rs + si;
	int r;

	if (memo[pi][si] >= 0)
		return memo[pi][si];
	if (!*p) {
		r = !*s;
	} else if (p[0] == '*' && p[1] == '*' && seg_start[pi] &&
		   (p[2] == '/' || !p[2] || (p[2] == '\\' && p[3] == '/'))) {
		/* An escaped '/' separates segments like a plain one. */
		size_t rest = pi + (p[2] == '/' ? 3 : 4);
		r = 0;
		if (!p[2]) {
			r = 1;
		} else {
			for (size_t k = si;; k++) {
				if ((k == si || rs[k - 1] == '/') && ref(rest, k)) {
					r = 1;
					break;
				}
				if (!rs[k])
					break;
			}
		}
	} else if (*p == '*') {
		size_t pj = pi;
		while (rp[pj] == '*')
			pj++;
		r = 0;
		for (size_t k = si;; k++) {
			if (ref(pj, k)) {
				r = 1;
				break;
			}
			if (!rs[k] || rs[k] == '/')
				break;
		}
	} else if (!*s) {
		r = 0;
	} else if (*p == '?') {
		r = *s != '/' && ref(pi + 1, si + 1);
	} else if (*p == '[') {
		const char *end;
		int c = ref_class(p + 1, (unsigned char)*s, &end);
		if (c < 0)
			r = *s == '[' && ref(pi + 1, si + 1);
		else
			r = c && ref((size_t)(end - rp), si + 1);
	} else if (*p == '\\') {
		r = p[1] && p[1] == *s && ref(pi + 2, si + 1);
	} else {
		r = *p == *s && ref(pi + 1, si + 1);
	}
	memo[pi][si] = (signed char)r;
	return r;
}

/* 1 match, 0 none, -1 when the rules do not say (see below). */
static int ref_match(const char *pat, const char *str)
{
	size_t n = strlen(pat);

	/* Where segments start: after a '/' matched literally (plain or escaped). */
	memset(seg_start, 0, sizeof seg_start);
	seg_start[0] = 1;
	for (size_t i = 0; i < n; i++) {
		if (pat[i] == '\\' && !pat[i + 1])
			return -1; /* a trailing lone backslash: not specified */
		if (pat[i] == '\\' && pat[i + 1]) {
			if (pat[i + 1] == '/')
				seg_start[i + 2] = 1;
			i++;
		} else if (pat[i] == '[') {
			const char *end;
			if (ref_class(pat + i + 1, 'a', &end) >= 0) {
				/* A class listing '/' ("[a/b]"): whether the '/'
				 * splits the pattern is not specified; skip it. */
				if (memchr(pat + i, '/', (size_t)(end - (pat + i))))
					return -1;
				i = (size_t)(end - pat) - 1;
			}
		} else if (pat[i] == '/') {
			seg_start[i + 1] = 1;
		}
	}
	rp = pat, rs = str;
	memset(memo, -1, sizeof memo);
	return ref(0, 0);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Matches with a time bound: a glob comes from a request and runs once per
 * listed file, so one match must be quick. */
static int timed_match(const char *pat, const char *path)
{
	double t0 = now();
	int m = cof_glob_match(pat, path);
	double dt = now() - t0;

	FUZZ_CHECK(dt < 1.0, "one match took %.2f s (pattern %zu bytes, path %zu bytes)", dt,
		   strlen(pat), strlen(path));
	FUZZ_CHECK(m == 0 || m == 1, "cof_glob_match returned %d", m);
	return m;
}

static int has_meta(const char *s)
{
	return strpbrk(s, "*?[\\") != NULL;
}

static void check_literal_prefix(const char *pat, const char *path, int m, size_t outsz)
{
	char out[COF_PATH_MAX + 2];
	size_t n;

	memset(out, 'Z', sizeof out);
	cof_glob_literal_prefix(pat, out, outsz);
	n = strnlen(out, outsz);
	FUZZ_CHECK(n < outsz, "literal prefix not terminated within %zu bytes", outsz);
	FUZZ_CHECK(!strncmp(out, pat, n), "literal prefix is not a prefix of the pattern");
	FUZZ_CHECK(n == 0 || out[n - 1] == '/', "literal prefix '%s' does not end in '/'", out);
	FUZZ_CHECK(strcspn(out, "*?[\\") == n, "literal prefix '%s' holds a metachar", out);
	if (m)
		FUZZ_CHECK(!strncmp(path, out, n),
			   "'%.80s' matches '%.80s' but does not start with its prefix '%s'",
			   path, pat, out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, 0, size);
	char *pat = fuzz_dup_str(data, nul ? (size_t)(nul - data) : size);
	char *path = nul ? fuzz_dup_str(nul + 1, size - (size_t)(nul - data) - 1)
			 : fuzz_dup_str(data, size);
	cof_err err = {0};
	int ok = cof_glob_check(pat, &err) == 0;
	size_t plen = strlen(pat);

	if (!ok) {
		FUZZ_CHECK(err.code == COF_EVALIDATION && err.msg[0], "bad refusal");
		cof_err_clear(&err);
		goto out;
	}
	FUZZ_CHECK(plen >= 1 && plen <= COF_PATH_MAX && pat[0] != '/' &&
		   cof_utf8_valid(pat, plen), "cof_glob_check accepted '%.80s'", pat);

	int m = timed_match(pat, path);
	/* Compared on valid volume paths only (no "//", no trailing '/'): those
	 * are the only ones a glob is ever matched against. */
	const char *vp;
	int valid = cof_path_check(path, strlen(path), "path", &vp, &err) == 0 && vp == path;
	cof_err_clear(&err);
	if (valid && plen <= REF_PAT && strlen(path) <= REF_STR) {
		int want = ref_match(pat, path);
		FUZZ_CHECK(want < 0 || m == want, "cof_glob_match('%s', '%s') = %d, the rules say %d", pat,
			   path, m, want);
	}
	if (!has_meta(pat))
		FUZZ_CHECK(m == !strcmp(pat, path) && timed_match(pat, pat),
			   "literal '%.80s' vs '%.80s': %d", pat, path, m);
	/* Neither `*` nor `?` nor a class crosses a '/'. */
	if (m && !strchr(pat, '/') && !strstr(pat, "**"))
		FUZZ_CHECK(!strchr(path, '/'), "'%s' matched '%s' across a '/'", pat, path);
	check_literal_prefix(pat, path, m, COF_PATH_MAX + 2);
	check_literal_prefix(pat, path, m, 1 + plen % 8);

	/* An escaped copy of any path matches it, and only it. */
	size_t n = strlen(path);
	if (n && n <= 2000) {
		char *esc = malloc(2 * n + 1), *e = esc;
		for (const char *s = path; *s; s++) {
			if (strchr("*?[]\\!^-", *s))
				*e++ = '\\';
			*e++ = *s;
		}
		*e = '\0';
		if (cof_glob_check(esc, &err) == 0) {
			FUZZ_CHECK(timed_match(esc, path), "'%s' does not match '%s'", esc, path);
			if (strcmp(pat, path))
				FUZZ_CHECK(!timed_match(esc, pat), "'%s' matches '%s'", esc, pat);
		}
		cof_err_clear(&err);
		free(esc);
	}
out:
	free(pat);
	free(path);
	return 0;
}
