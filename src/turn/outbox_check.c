/*
 * outbox_check.c — the pure checks on outbox files: the name pattern, the
 * extension, the content signatures and the quoting of untrusted names in
 * notes, and the callId that names a call's kept files (which types may come back is the agent's setting: agent/settings.c).
 * No file system access here,
 * so each rule can be tested and fuzzed on its own.
 */
#include <string.h>
#include <strings.h>
#include "turn/outbox.h"
#include "util/util.h"

static int name_char(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

int cof_outbox_name_ok(const char *name, size_t len)
{
	if (len < 1 || len > COF_OUTBOX_NAME_MAX || !name_char((unsigned char)name[0]))
		return 0;
	for (size_t i = 1; i < len; i++) {
		unsigned char c = (unsigned char)name[i];
		if (!name_char(c) && c != '.' && c != '_' && c != '-')
			return 0;
	}
	return 1;
}

unsigned cof_outbox_name_type(const char *name, size_t len)
{
	const char *dot = len ? memrchr(name, '.', len) : NULL;

	if (!dot)
		return 0;
	size_t elen = len - (size_t)(dot + 1 - name);
	for (unsigned bit = 1; bit & COF_OUT_ALL; bit <<= 1) {
		const char *n = cof_outbox_type_name(bit); /* agent/settings.c's table */
		if (n && elen == strlen(n) && !strncasecmp(dot + 1, n, elen))
			return bit;
	}
	return 0;
}

/* 1 if s[i..len) starts with the literal `lit`. */
static int at(const unsigned char *s, size_t len, size_t i, const char *lit)
{
	size_t n = strlen(lit);
	return i <= len && len - i >= n && !memcmp(s + i, lit, n);
}

/* The offset just past the first `end` at or after i within s[0..lim), or 0. */
static size_t past(const unsigned char *s, size_t lim, size_t i, const char *end)
{
	size_t n = strlen(end);
	if (i > lim)
		return 0;
	const unsigned char *p = memmem(s + i, lim - i, end, n);
	return p ? (size_t)(p - s) + n : 0;
}

/* The offset of the `<svg` that opens the document, or -1: only a BOM, white
 * space, processing instructions, comments and a DOCTYPE without an internal
 * subset may come before it, and it must begin before COF_OUTBOX_SVG_NEAR.
 * Each construct must also end before that offset (it is searched for in the
 * first COF_OUTBOX_SVG_NEAR bytes only, so a big file is not scanned). */
static long svg_start(const unsigned char *s, size_t len)
{
	size_t lim = len < COF_OUTBOX_SVG_NEAR ? len : COF_OUTBOX_SVG_NEAR;
	size_t i = at(s, len, 0, "\xEF\xBB\xBF") ? 3 : 0;

	while (i < lim) {
		unsigned char c = s[i];
		size_t next;

		if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
			i++;
			continue;
		}
		if (at(s, len, i, "<svg")) {
			if (i + 4 >= len)
				return -1;
			c = s[i + 4];
			return (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '>' ||
				c == '/') ? (long)i : -1;
		}
		if (at(s, len, i, "<?"))
			next = past(s, lim, i + 2, "?>");
		else if (at(s, len, i, "<!--"))
			next = past(s, lim, i + 4, "-->");
		else if (at(s, len, i, "<!DOCTYPE")) {
			next = past(s, lim, i + 9, ">");
			if (next && memchr(s + i, '[', next - i))
				return -1;
		} else
			return -1;
		if (!next)
			return -1;
		i = next;
	}
	return -1;
}

const char *cof_outbox_content_check(unsigned type, const unsigned char *data, size_t len)
{
	static const unsigned char png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};

	switch (type) {
	case COF_OUT_PNG:
		return len >= 8 && !memcmp(data, png_sig, 8) ? NULL
							      : "not a PNG (no PNG signature)";
	case COF_OUT_PDF:
		return len >= 5 && !memcmp(data, "%PDF-", 5) ? NULL
							     : "not a PDF (no %PDF- signature)";
	case COF_OUT_CSV:
		if (len && memchr(data, '\0', len))
			return "not a CSV (it holds a NUL byte)";
		return cof_utf8_valid((const char *)data, len) ? NULL
							       : "not a CSV (not valid UTF-8)";
	case COF_OUT_SVG:
		if (len && memchr(data, '\0', len))
			return "not an SVG (it holds a NUL byte)";
		if (!cof_utf8_valid((const char *)data, len))
			return "not an SVG (not valid UTF-8)";
		return svg_start(data, len) >= 0
			       ? NULL
			       : "not an SVG (no <svg element at its start, within the "
				 "first 1024 bytes)";
	default:
		return "not a type that is returned";
	}
}

size_t cof_outbox_name_quote(const char *name, size_t len, char *out, size_t outsz)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0, n = len > COF_OUTBOX_NAME_MAX ? COF_OUTBOX_NAME_MAX : len;

	if (!outsz)
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)name[i];
		int plain = c >= 0x20 && c <= 0x7E && c != '\\' && c != '\'';
		size_t need = plain ? 1 : 4;
		if (o + need + 1 > outsz)
			break;
		if (plain) {
			out[o++] = (char)c;
		} else {
			out[o++] = '\\', out[o++] = 'x';
			out[o++] = hex[c >> 4], out[o++] = hex[c & 15];
		}
	}
	if (len > n && o + 4 <= outsz)
		memcpy(out + o, "...", 3), o += 3;
	out[o] = '\0';
	return o;
}

int cof_turn_call_id_ok(const char *s)
{
	size_t n = strlen(s);

	if (n < 1 || n > COF_CALL_ID_MAX || !strcmp(s, ".") || !strcmp(s, ".."))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x21 || s[i] > 0x7e || strchr("/\\?#%", s[i]))
			return 0;
	return 1;
}
