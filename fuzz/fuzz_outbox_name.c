/*
 * fuzz_outbox_name.c — the pure outbox checks (src/turn/outbox_check.c)
 * against rules written here from API.md "Outbox" and docs/api.md:
 *  - a name is kept only if it matches ^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$
 *    (checked here with POSIX regcomp, not with outbox_check.c's loop);
 *  - its type is its last extension, compared without case;
 *  - a name quoted for a note is printable ASCII, bounded, and decodes back
 *    to the name's first 100 bytes;
 *  - PNG/PDF: exactly their signatures; CSV: UTF-8 without NUL; SVG: UTF-8
 *    without NUL and `<svg` begins before byte 1024, with only prolog before
 *    it, and the verdict does not depend on bytes past the first 1029.
 * The first input byte picks the type for the content checks; the rest is
 * both the name and the content.
 */
#include <regex.h>
#include <stdlib.h>
#include <strings.h>
#include "fuzz.h"
#include "turn/outbox.h"

static regex_t name_re;

static int ref_name_ok(const char *s, size_t len)
{
	if (memchr(s, '\0', len))
		return 0;
	char *z = fuzz_dup_str((const uint8_t *)s, len);
	int ok = regexec(&name_re, z, 0, NULL, 0) == 0;
	free(z);
	return ok;
}

static unsigned ref_name_type(const char *s, size_t len)
{
	static const char *ext[] = {"png", "svg", "csv", "pdf"};
	size_t dot = len;

	while (dot > 0 && s[dot - 1] != '.')
		dot--;
	if (dot == 0)
		return 0;
	for (unsigned i = 0; i < 4; i++)
		if (len - dot == 3 && !strncasecmp(s + dot, ext[i], 3) &&
		    !memchr(s + dot, '\0', 3))
			return 1u << i;
	return 0;
}

static void check_quote(const char *s, size_t len)
{
	char out[COF_OUTBOX_NAME_MAX * 4 + 8];
	size_t n = cof_outbox_name_quote(s, len, out, sizeof out);
	size_t shown = len > COF_OUTBOX_NAME_MAX ? COF_OUTBOX_NAME_MAX : len;
	size_t j = 0;

	FUZZ_CHECK(n == strlen(out) && n < sizeof out, "quote length %zu", n);
	for (size_t i = 0; i < n; i++)
		FUZZ_CHECK(out[i] >= 0x20 && out[i] <= 0x7e && out[i] != '\'',
			   "byte 0x%02x in a quoted name", (unsigned char)out[i]);
	/* Decoding gives back the shown bytes exactly, then "..." if cut. */
	size_t i = 0;
	for (; i < n && j < shown; j++) {
		unsigned char c;
		if (out[i] == '\\') {
			FUZZ_CHECK(i + 3 < n && out[i + 1] == 'x', "bad escape");
			c = (unsigned char)strtoul((char[]){out[i + 2], out[i + 3], 0}, NULL, 16);
			i += 4;
		} else {
			c = (unsigned char)out[i++];
		}
		FUZZ_CHECK(c == (unsigned char)s[j], "quoted byte %zu differs", j);
	}
	FUZZ_CHECK(j == shown, "quoted %zu of %zu bytes", j, shown);
	if (len > COF_OUTBOX_NAME_MAX)
		FUZZ_CHECK(n == i + 3 && !strcmp(out + i, "..."), "a long name must end in ...");
	else
		FUZZ_CHECK(n == i, "bytes after the name");
}

static int ref_no_nul_utf8(const unsigned char *d, size_t len)
{
	return !memchr(d, '\0', len) && fuzz_utf8_ref(d, len);
}

static void check_content(unsigned type, const unsigned char *d, size_t len)
{
	const char *why = cof_outbox_content_check(type, d, len);
	int ok = why == NULL;

	FUZZ_CHECK(ok || why[0], "a refusal must say why");
	switch (type) {
	case COF_OUT_PNG:
		FUZZ_CHECK(ok == (len >= 8 && !memcmp(d, "\x89PNG\r\n\x1a\n", 8)), "PNG");
		break;
	case COF_OUT_PDF:
		FUZZ_CHECK(ok == (len >= 5 && !memcmp(d, "%PDF-", 5)), "PDF");
		break;
	case COF_OUT_CSV:
		FUZZ_CHECK(ok == ref_no_nul_utf8(d, len), "CSV");
		break;
	case COF_OUT_SVG: {
		if (!ref_no_nul_utf8(d, len)) {
			FUZZ_CHECK(!ok, "SVG with NUL or bad UTF-8 accepted");
			break;
		}
		size_t win = len < 1028 ? len : 1028;
		const unsigned char *p = memmem(d, win, "<svg", 4);
		if (ok) {
			FUZZ_CHECK(p && p - d < 1024, "SVG accepted without <svg early");
			size_t i = len >= 3 && !memcmp(d, "\xEF\xBB\xBF", 3) ? 3 : 0;
			while (i < len && strchr(" \t\r\n", d[i]) && d[i])
				i++;
			FUZZ_CHECK(i < len && d[i] == '<', "SVG accepted starting with text");
		}
		/* Only the first 1029 bytes decide (given valid UTF-8, no NUL). */
		if (len > 1029) {
			const char *w2 = cof_outbox_content_check(type, d, 1029);
			if (fuzz_utf8_ref(d, 1029))
				FUZZ_CHECK((w2 == NULL) == ok, "SVG verdict depends on the tail");
		}
		/* White space then <svg/>: kept iff it begins before 1024. */
		size_t k = len % 1100;
		unsigned char *b = malloc(k + 6);
		memset(b, ' ', k);
		memcpy(b + k, "<svg/>", 6);
		FUZZ_CHECK((cof_outbox_content_check(type, b, k + 6) == NULL) == (k < 1024),
			   "<svg after %zu spaces", k);
		free(b);
		break;
	}
	default:
		FUZZ_CHECK(!ok, "unknown type accepted");
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int init;
	if (!init) {
		FUZZ_CHECK(regcomp(&name_re, COF_OUTBOX_NAME_RE, REG_EXTENDED | REG_NOSUB) == 0,
			   "regcomp");
		init = 1;
	}
	if (size < 1)
		return 0;
	unsigned type = 1u << (data[0] % 5); /* 1, 2, 4, 8, and 16: not a type */
	const char *s = fuzz_dup_exact(data + 1, size - 1);
	size_t len = size - 1;

	int ok = cof_outbox_name_ok(s, len);
	FUZZ_CHECK(ok == ref_name_ok(s, len), "name_ok says %d", ok);
	unsigned t = cof_outbox_name_type(s, len);
	FUZZ_CHECK(t == ref_name_type(s, len), "name_type says %u", t);
	if (len)
		check_quote(s, len);
	check_content(type, (const unsigned char *)s, len);
	free((void *)s);
	return 0;
}
