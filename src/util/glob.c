/*
 * glob.c — the one glob matcher for volume paths.
 * `*` and `?` match within one segment; a `**` segment matches any number of
 * whole segments (none too, except at the end of the pattern); `**` inside a
 * segment is a plain `*`; `[...]` classes with ranges and `!`/`^` negation;
 * `\` escapes the next character. Matching goes segment by segment, so time
 * is O(segments of pattern x segments of path) whatever the `**` count.
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

/* Matches one pattern segment [p, pe) against one path segment [s, se) (no
 * '/' in either): `*` any run, `?` one byte, classes, escapes. Star
 * backtracking keeps it O(len(p) * len(s)). */
static int seg_match(const char *p, const char *pe, const char *s, const char *se)
{
	const char *star_p = NULL, *star_s = NULL;

	while (s < se || p < pe) {
		if (p < pe && *p == '*') {
			while (p < pe && *p == '*')
				p++;
			star_p = p, star_s = s;
			continue;
		}
		if (s < se && p < pe) {
			if (*p == '?') {
				p++, s++;
				continue;
			}
			if (*p == '[') {
				const char *end;
				int r = class_match(p + 1, *s, &end);
				if (r == 1 && end <= pe) {
					p = end, s++;
					continue;
				}
				if (r < 0 && *s == '[') {
					p++, s++;
					continue;
				}
			} else if (*p == '\\' && p + 1 < pe) {
				if (p[1] == *s) {
					p += 2, s++;
					continue;
				}
			} else if (*p == *s) {
				p++, s++;
				continue;
			}
		}
		if (star_p && star_s < se) {
			p = star_p, s = ++star_s;
			continue;
		}
		return 0;
	}
	return 1;
}

/* Splits at unescaped '/' into [start, end) pairs; returns the count or -1. */
static int split(const char *str, int escapes, const char **starts, const char **ends,
		 int max)
{
	int n = 0;
	const char *b = str, *c = str;

	for (;; c++) {
		/* An escaped '/' is still a separator ("a\/b" is "a/b"). */
		int esc_slash = escapes && c[0] == '\\' && c[1] == '/';
		if (escapes && *c == '\\' && c[1] && !esc_slash) {
			c++;
			continue;
		}
		if (*c == '/' || *c == '\0' || esc_slash) {
			if (n == max)
				return -1;
			starts[n] = b, ends[n] = c, n++;
			if (*c == '\0')
				return n;
			c += esc_slash;
			b = c + 1;
		}
	}
}

#define MAX_SEGS COF_GLOB_SEGS_MAX /* a 4096-byte path has at most 2049 segments */

/* Segment by segment: reach[j] says the pattern so far can end right before
 * path segment j. A `**` segment lets any later j be reached (one or more
 * segments at the end of the pattern, zero or more elsewhere); others need
 * seg_match. O(pattern segments * path segments), so `**` cannot blow up.
 * At the end reach[k] says the pattern matches the first k path segments;
 * copied to `out` (ns + 1 bytes). Returns ns, or -1 (too many segments). */
static int match_reach(const char *pattern, const char *path, unsigned char *out)
{
	const char *ps[MAX_SEGS], *pe[MAX_SEGS], *ss[MAX_SEGS], *se[MAX_SEGS];
	unsigned char reach[MAX_SEGS + 1], next[MAX_SEGS + 1];
	int np = split(pattern, 1, ps, pe, MAX_SEGS);
	int ns = split(path, 0, ss, se, MAX_SEGS);

	if (np < 0 || ns < 0)
		return -1;
	memset(reach, 0, (size_t)ns + 1);
	reach[0] = 1;
	for (int i = 0; i < np; i++) {
		int globstar = pe[i] - ps[i] == 2 && ps[i][0] == '*' && ps[i][1] == '*';
		int any = 0;
		memset(next, 0, (size_t)ns + 1);
		for (int j = 0; j <= ns; j++) {
			if (globstar) {
				/* At the end of the pattern `**` must take at least one
				 * segment: "a" then `**` is what is inside a, not a. */
				int last = i == np - 1;
				if (any || (reach[j] && !last))
					next[j] = 1;
				any |= reach[j];
			} else if (j < ns && reach[j] && seg_match(ps[i], pe[i], ss[j], se[j])) {
				next[j + 1] = 1;
			}
		}
		memcpy(reach, next, (size_t)ns + 1);
	}
	memcpy(out, reach, (size_t)ns + 1);
	return ns;
}

static int match(const char *pattern, const char *path)
{
	unsigned char reach[MAX_SEGS + 1];
	int ns = match_reach(pattern, path, reach);

	return ns < 0 ? 0 : reach[ns];
}

int cof_glob_match_prefixes(const char *pattern, const char *path, unsigned char *out)
{
	return match_reach(pattern, path, out);
}

int cof_glob_match(const char *pattern, const char *path)
{
	return match(pattern, path);
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
		if (*p == '\\') {
			if (!p[1])
				return cof_error(err, COF_EVALIDATION,
						 "glob ends in a lone '\\'; escape it as '\\\\'");
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
			if (memchr(p, '/', (size_t)(end - p)))
				return cof_error(err, COF_EVALIDATION,
						 "glob has a '/' inside '[...]' at byte %zu; a class "
						 "matches one character of a name", (size_t)(p - pattern));
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
	if (outsz == 0)
		return;
	if (last_slash >= outsz)
		last_slash = 0;
	memcpy(out, pattern, last_slash);
	out[last_slash] = '\0';
}
