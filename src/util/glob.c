/*
 * glob.c — the one glob matcher for volume paths.
 * `*` and `?` match within one segment, `**` matches any number of whole
 * segments (also none: a, **, b joined by slashes matches "a/b"), `[...]` classes with
 * ranges and `!`/`^` negation, `\` escapes the next character.
 * Iterative with backtracking points for `*` and `**`, so time is bounded by
 * O(len(pattern) * len(path)) per `**` level rather than exponential.
 */
#include <string.h>
#include "util/util.h"

/* Matches a class at p (pointing after '['); sets *end past ']'.
 * Returns 1 match, 0 no match, -1 malformed. */
static int class_match(const char *p, char c, const char **end)
{
	int neg = 0, hit = 0, first = 1;

	if (*p == '!' || *p == '^')
		neg = 1, p++;
	while (*p && (*p != ']' || first)) {
		char lo = *p, hi;
		first = 0;
		if (lo == '\\' && p[1])
			lo = *++p;
		p++;
		hi = lo;
		if (*p == '-' && p[1] && p[1] != ']') {
			hi = p[1];
			if (hi == '\\' && p[2])
				hi = p[2], p++;
			p += 2;
		}
		if ((unsigned char)c >= (unsigned char)lo &&
		    (unsigned char)c <= (unsigned char)hi)
			hit = 1;
	}
	if (*p != ']')
		return -1;
	*end = p + 1;
	return (hit != neg) && c != '/';
}

/* Matches pattern p against string s; both NUL-terminated. */
static int match(const char *p, const char *s, int depth)
{
	const char *star_p = NULL, *star_s = NULL;

	if (depth > 64)
		return 0;
	while (*s || *p) {
		if (p[0] == '*' && p[1] == '*' &&
		    (p[2] == '/' || p[2] == '\0')) {
			/* `**` at a segment start: try to match the rest at every
			 * segment boundary of s (including here). */
			const char *rest = p[2] == '/' ? p + 3 : p + 2;
			if (p[2] == '\0')
				return 1;
			for (const char *t = s; t; t = strchr(t, '/')) {
				if (*t == '/')
					t++;
				if (match(rest, t, depth + 1))
					return 1;
			}
			goto backtrack;
		}
		if (*p == '*') {
			while (*p == '*')
				p++;
			star_p = p, star_s = s;
			continue;
		}
		if (*s) {
			if (*p == '?' && *s != '/') {
				p++, s++;
				continue;
			}
			if (*p == '[') {
				const char *end;
				int r = class_match(p + 1, *s, &end);
				if (r == 1) {
					p = end, s++;
					continue;
				}
				if (r < 0 && *s == '[') {
					p++, s++;
					continue;
				}
			} else if (*p == '\\' && p[1] && p[1] == *s) {
				p += 2, s++;
				continue;
			} else if (*p && *p != '?' && *p != '\\' && *p == *s) {
				p++, s++;
				continue;
			}
		}
backtrack:
		/* Backtrack: let the last `*` eat one more char, never a '/'. */
		if (star_p && *star_s && *star_s != '/') {
			star_s++;
			p = star_p, s = star_s;
			continue;
		}
		return 0;
	}
	return 1;
}

int cof_glob_match(const char *pattern, const char *path)
{
	return match(pattern, path, 0);
}

int cof_glob_check(const char *pattern, cof_err *err)
{
	size_t len = strlen(pattern);

	if (len == 0)
		return cof_error(err, COF_EVALIDATION, "glob is empty");
	if (len > COF_PATH_MAX)
		return cof_error(err, COF_EVALIDATION,
				 "glob is %zu bytes; the limit is %d bytes", len, COF_PATH_MAX);
	if (!cof_utf8_valid(pattern, len))
		return cof_error(err, COF_EVALIDATION, "glob is not valid UTF-8");
	size_t stars = 0;
	for (const char *p = pattern; *p; p++) {
		if (*p == '\\' && p[1]) {
			p++;
			continue;
		}
		if (p[0] == '*' && p[1] == '*')
			stars++;
		if (*p == '[') {
			const char *end;
			if (class_match(p + 1, 'a', &end) < 0)
				return cof_error(err, COF_EVALIDATION,
						 "glob has an unclosed '[' at byte %zu",
						 (size_t)(p - pattern));
			p = end - 1;
		}
	}
	if (stars > 8)
		return cof_error(err, COF_EVALIDATION,
				 "glob has %zu '**'; the limit is 8", stars);
	if (pattern[0] == '/')
		return cof_error(err, COF_EVALIDATION,
				 "glob must be relative (no leading '/')");
	return 0;
}

void cof_glob_literal_prefix(const char *pattern, char *out, size_t outsz)
{
	size_t last_slash = 0, i;

	for (i = 0; pattern[i]; i++) {
		char c = pattern[i];
		if (c == '*' || c == '?' || c == '[' || c == '\\')
			break;
		if (c == '/')
			last_slash = i + 1;
	}
	if (last_slash >= outsz)
		last_slash = 0;
	memcpy(out, pattern, last_slash);
	out[last_slash] = '\0';
}
