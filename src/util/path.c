/*
 * path.c — the one check of volume paths (API.md "General"): UTF-8, relative,
 * `/`-separated, at most 4096 bytes, segments at most 255, no `.`/`..`/empty
 * segments, no NUL or other control character (0x01-0x1f, 0x7f: they end up
 * in headers, logs and tar names). No normalisation beyond one leading '/'.
 */
#include <string.h>
#include "util/util.h"

int cof_utf8_valid(const char *str, size_t len)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0;

	while (i < len) {
		unsigned c = s[i];
		size_t n;
		uint32_t cp;

		if (c < 0x80) {
			/* Text is mostly ASCII: skip it 32 bytes at a time (grep and
			 * read-all check every byte they serve). */
			while (len - i >= 32) {
				uint64_t w[4];
				memcpy(w, s + i, sizeof w);
				if ((w[0] | w[1] | w[2] | w[3]) & 0x8080808080808080ull)
					break;
				i += 32;
			}
			while (i < len && s[i] < 0x80)
				i++;
			continue;
		} else if ((c & 0xE0) == 0xC0) {
			n = 1, cp = c & 0x1F;
		} else if ((c & 0xF0) == 0xE0) {
			n = 2, cp = c & 0x0F;
		} else if ((c & 0xF8) == 0xF0) {
			n = 3, cp = c & 0x07;
		} else {
			return 0;
		}
		if (len - i <= n)
			return 0;
		for (size_t k = 1; k <= n; k++) {
			if ((s[i + k] & 0xC0) != 0x80)
				return 0;
			cp = (cp << 6) | (s[i + k] & 0x3F);
		}
		if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) ||
		    (n == 3 && (cp < 0x10000 || cp > 0x10FFFF)) ||
		    (cp >= 0xD800 && cp <= 0xDFFF))
			return 0;
		i += n + 1;
	}
	return 1;
}

/* Refuses a control character (0x01-0x1f, 0x7f) in `p` (len bytes), naming
 * the byte and where it is. */
static int check_controls(const char *p, size_t len, const char *what, cof_err *err)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)p[i];
		if (c < 0x20 || c == 0x7f)
			return cof_error(err, COF_EVALIDATION,
					 "%s contains the control character 0x%02x at byte %zu; "
					 "paths must not hold 0x01-0x1f or 0x7f", what, c, i);
	}
	return 0;
}

/* Checks each segment of `p` (len bytes, no leading '/'); `allow_trailing`
 * lets a prefix end in '/'. */
static int check_segments(const char *p, size_t len, int allow_trailing,
			  const char *what, cof_err *err)
{
	size_t start = 0;

	for (size_t i = 0; i <= len; i++) {
		if (i < len && p[i] != '/')
			continue;
		size_t seg = i - start;
		if (seg == 0 && !(allow_trailing && i == len))
			return cof_error(err, COF_EVALIDATION,
					 "%s has an empty segment ('//' or a trailing '/')", what);
		if (seg > COF_SEGMENT_MAX)
			return cof_error(err, COF_EVALIDATION,
					 "%s has a segment of %zu bytes; the limit is %d bytes",
					 what, seg, COF_SEGMENT_MAX);
		if ((seg == 1 && p[start] == '.') ||
		    (seg == 2 && p[start] == '.' && p[start + 1] == '.'))
			return cof_error(err, COF_EVALIDATION,
					 "%s has a '%.*s' segment; paths must not contain '.' or '..'",
					 what, (int)seg, p + start);
		start = i + 1;
	}
	return 0;
}

int cof_path_check(const char *path, size_t len, const char *what,
		   const char **out, cof_err *err)
{
	if (!path)
		return cof_error(err, COF_EVALIDATION, "%s is missing", what);
	if (memchr(path, '\0', len))
		return cof_error(err, COF_EVALIDATION, "%s contains a NUL byte", what);
	if (len > 0 && path[0] == '/')
		path++, len--;
	if (len == 0)
		return cof_error(err, COF_EVALIDATION, "%s is empty", what);
	if (len > COF_PATH_MAX)
		return cof_error(err, COF_EVALIDATION,
				 "%s is %zu bytes; the limit is %d bytes", what, len, COF_PATH_MAX);
	if (!cof_utf8_valid(path, len))
		return cof_error(err, COF_EVALIDATION, "%s is not valid UTF-8", what);
	if (check_controls(path, len, what, err) || check_segments(path, len, 0, what, err))
		return -1;
	*out = path;
	return 0;
}

int cof_prefix_check(const char *prefix, const char *what, const char **out,
		     cof_err *err)
{
	size_t len;

	if (!prefix) {
		*out = "";
		return 0;
	}
	len = strlen(prefix);
	if (len > 0 && prefix[0] == '/')
		prefix++, len--;
	if (len > COF_PATH_MAX)
		return cof_error(err, COF_EVALIDATION,
				 "%s is %zu bytes; the limit is %d bytes", what, len, COF_PATH_MAX);
	if (!cof_utf8_valid(prefix, len))
		return cof_error(err, COF_EVALIDATION, "%s is not valid UTF-8", what);
	if (check_controls(prefix, len, what, err))
		return -1;
	/* A prefix may stop mid-segment ("src/ma"), so only whole segments before
	 * the last '/' are checked. */
	const char *slash = memrchr(prefix, '/', len);
	if (slash && check_segments(prefix, (size_t)(slash - prefix) + 1, 1, what, err))
		return -1;
	*out = prefix;
	return 0;
}

/* Appends code point `cp` as UTF-8. */
static int utf8_add(cof_buf *b, uint32_t cp)
{
	unsigned char u[4];
	size_t n;

	if (cp < 0x80)
		u[0] = (unsigned char)cp, n = 1;
	else if (cp < 0x800)
		u[0] = (unsigned char)(0xC0 | cp >> 6), n = 2;
	else if (cp < 0x10000)
		u[0] = (unsigned char)(0xE0 | cp >> 12), n = 3;
	else
		u[0] = (unsigned char)(0xF0 | cp >> 18), n = 4;
	for (size_t k = 1; k < n; k++)
		u[k] = (unsigned char)(0x80 | ((cp >> (6 * (n - 1 - k))) & 0x3F));
	return cof_buf_add(b, u, n);
}

/* The upper bound of a prefix range, valid UTF-8 text (PostgreSQL refuses a
 * 0xFF byte in text, so the old prefix + "\xff" will not do): every string of
 * at most COF_PATH_MAX bytes that starts with `prefix` sorts, bytewise, in
 * [prefix, upper), and no other valid string does. `upper` is the prefix with
 * its last code point below U+10FFFF raised by one (past the surrogates) and
 * what follows it dropped; when there is none (empty, or all U+10FFFF), it is
 * the prefix and then more U+10FFFF than a path can hold. An invalid prefix
 * (no valid text starts with it) gives upper = prefix: an empty range.
 * Returns 0, or -1 when out of memory. */
int cof_prefix_upper(const char *prefix, cof_buf *upper)
{
	size_t len = strlen(prefix), end = len;

	cof_buf_reset(upper);
	if (!cof_utf8_valid(prefix, len))
		return cof_buf_adds(upper, prefix);
	while (end > 0) {
		size_t start = end - 1;
		uint32_t cp;

		while (start > 0 && ((unsigned char)prefix[start] & 0xC0) == 0x80)
			start--;
		cp = (unsigned char)prefix[start];
		if (end - start > 1) {
			cp &= 0xFFu >> (end - start + 1);
			for (size_t k = start + 1; k < end; k++)
				cp = (cp << 6) | ((unsigned char)prefix[k] & 0x3F);
		}
		if (cp < 0x10FFFF) {
			cp = cp + 1 == 0xD800 ? 0xE000 : cp + 1;
			if (cof_buf_add(upper, prefix, start) || utf8_add(upper, cp))
				return -1;
			return 0;
		}
		end = start;
	}
	if (cof_buf_adds(upper, prefix))
		return -1;
	for (int i = 0; i <= COF_PATH_MAX / 4; i++)
		if (utf8_add(upper, 0x10FFFF))
			return -1;
	return 0;
}
