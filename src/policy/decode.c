/*
 * decode.c — the guard's decoded layers (see normalize.h): base64 runs, hex
 * runs, \xNN escapes, gzip/zlib streams and UTF-16, found in a text and
 * decoded, each result scanned as a text of its own and searched again, to
 * COF_LAYER_DEPTH levels. Owned by the write guard.
 *
 * Bounds: all decoded bytes of one walk together stay under a budget of
 * COF_LAYER_RATIO times the content (at least COF_LAYER_MIN_BUDGET, at most
 * COF_LAYER_MAX_BUDGET); inflating stops at what is left of it, so a zip bomb
 * costs at most the budget in memory and time. What the budget cuts off is
 * not decoded (the raw bytes were scanned all the same). A decoded run is kept
 * only when it reads as text, is compressed or is UTF-16: random bytes that
 * happen to be base64's alphabet (paths, identifiers, hashes) are dropped
 * without a scan.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "policy/normalize.h"
#include "util/util.h"

#define B64_MIN 32      /* shortest base64 run decoded (24 bytes) */
#define HEX_MIN 32      /* shortest hex run decoded (16 bytes) */
#define ESC_MIN 8       /* fewest \xNN escapes in a run decoded */
#define U16_MIN 8       /* shortest run of ASCII in UTF-16 taken */
#define B64_LINE_MIN 40 /* a base64 run goes on over a newline after a line this long */

typedef struct walk {
	cof_view_fn fn;
	void *ctx;
	size_t budget, used;
} walk;

static int walk_text(walk *w, const char *t, size_t n, int depth, const char *layer,
		     uint64_t raw_end);
static int layers_at(walk *w, const char *t, size_t n, int depth, const char *layer,
		     uint64_t raw_end);

static signed char b64v[256], hexv[256];
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static void tables_init(void)
{
	memset(b64v, -1, sizeof b64v);
	memset(hexv, -1, sizeof hexv);
	for (int i = 0; i < 64; i++)
		b64v[(unsigned char)"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"[i]] =
			(signed char)i;
	for (int i = 0; i < 16; i++) {
		hexv[(unsigned char)"0123456789abcdef"[i]] = (signed char)i;
		hexv[(unsigned char)"0123456789ABCDEF"[i]] = (signed char)i;
	}
}

/* A decoded buffer of cap bytes plus the scan padding, or NULL past the
 * budget. */
static char *take(walk *w, size_t cap)
{
	char *p;

	if (cap > w->budget - w->used)
		return NULL;
	if (!(p = cof_calloc(1, cap + COF_VIEW_PAD)))
		return NULL;
	w->used += cap;
	return p;
}

static int is_gzip(const unsigned char *p, size_t n)
{
	return n >= 18 && p[0] == 0x1f && p[1] == 0x8b && p[2] == 8;
}

static int is_zlib(const unsigned char *p, size_t n)
{
	return n >= 6 && (p[0] & 0x0f) == 8 && (p[0] >> 4) <= 7 && ((p[0] << 8) | p[1]) % 31 == 0;
}

/* Which UTF-16 a text looks like: 1 LE, 2 BE, 0 neither (a BOM, or NULs in
 * every other byte of at least 3/4 of the first 256 bytes' pairs). */
static int utf16_kind(const unsigned char *p, size_t n)
{
	size_t le = 0, be = 0, pairs = 0;

	if (n >= 2 && p[0] == 0xFF && p[1] == 0xFE)
		return 1;
	if (n >= 2 && p[0] == 0xFE && p[1] == 0xFF)
		return 2;
	for (size_t i = 0; i + 1 < n && i < 256; i += 2, pairs++)
		le += p[i] && !p[i + 1], be += !p[i] && p[i + 1];
	if (pairs < U16_MIN)
		return 0;
	return le * 4 >= pairs * 3 ? 1 : be * 4 >= pairs * 3 ? 2 : 0;
}

/* Text enough to be worth a scan: at least 7/8 of its bytes other than NUL
 * (padding hides nothing) printable ASCII, tabs, newlines or well-formed
 * UTF-8 (random bytes are about half >= 0x80, and rarely well-formed). */
static int texty(const unsigned char *p, size_t n)
{
	size_t ok = 0, nul = 0;

	for (size_t i = 0; i < n;) {
		unsigned char c = p[i];
		if (!c) {
			nul++, i++;
			continue;
		}
		if (c < 0x80) {
			ok += (c >= 0x20 && c < 0x7f) || c == '\n' || c == '\t' || c == '\r';
			i++;
			continue;
		}
		size_t len = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3
			     : c >= 0xF0 && c <= 0xF4 ? 4 : 0, k = 1;
		while (len && k < len && i + k < n && (p[i + k] & 0xC0) == 0x80)
			k++;
		if (len && k == len)
			ok += len, i += len;
		else
			i++;
		if (i - nul > 64 && ok * 8 < (i - nul - 64) * 7)
			return 0; /* hopeless already */
	}
	return n - nul >= 8 && ok * 8 >= (n - nul) * 7;
}

/* Hands a decoded run to the walk if it is worth it (what was inflated or
 * read as UTF-16 always is); frees it. */
static int child(walk *w, char *d, size_t n, int depth, const char *layer, const char *name,
		 uint64_t raw_end)
{
	const unsigned char *u = (const unsigned char *)d;
	char chain[64];
	int rc = 0;
	int always = !strcmp(name, "gzip") || !strcmp(name, "zlib") || !strncmp(name, "utf-16", 6);

	if (always || is_gzip(u, n) || is_zlib(u, n) || utf16_kind(u, n) || texty(u, n)) {
		snprintf(chain, sizeof chain, "%s%s%s", layer, *layer ? " > " : "", name);
		rc = walk_text(w, d, n, depth, chain, raw_end);
	}
	free(d);
	return rc;
}

/* Inflates a gzip or zlib stream, up to what the budget has left. */
static int inflate_layer(walk *w, const char *t, size_t n, int depth, const char *layer,
			 uint64_t raw_end, const char *name)
{
	size_t cap = w->budget - w->used, k;
	z_stream zs;
	char *d;

	if (cap > (64u << 20))
		cap = 64u << 20;
	if (cap < 64 || !(d = take(w, cap)))
		return 0;
	memset(&zs, 0, sizeof zs);
	if (inflateInit2(&zs, 15 + 32) != Z_OK) {
		free(d);
		return 0;
	}
	zs.next_in = (unsigned char *)t, zs.avail_in = (uInt)(n > UINT32_MAX ? UINT32_MAX : n);
	zs.next_out = (unsigned char *)d, zs.avail_out = (uInt)cap;
	int zr = inflate(&zs, Z_FINISH);
	k = cap - zs.avail_out;
	inflateEnd(&zs);
	w->used -= cap - k; /* give back what was not used */
	if (k == 0 || (zr != Z_STREAM_END && zr != Z_BUF_ERROR && zr != Z_OK)) {
		free(d);
		return 0;
	}
	return child(w, d, k, depth, layer, name, raw_end);
}

/* UTF-16 (kind 1 LE, 2 BE) to UTF-8, the whole text. */
static int utf16_layer(walk *w, const unsigned char *p, size_t n, int kind, int depth,
		       const char *layer, uint64_t raw_end)
{
	size_t i = (n >= 2 && ((p[0] == 0xFF && p[1] == 0xFE) || (p[0] == 0xFE && p[1] == 0xFF)))
			   ? 2 : 0, k = 0;
	char *d = take(w, n / 2 * 3 + 4);

	if (!d)
		return 0;
	for (; i + 1 < n; i += 2) {
		uint32_t c = kind == 1 ? (uint32_t)(p[i] | p[i + 1] << 8)
				       : (uint32_t)(p[i] << 8 | p[i + 1]);
		if (c >= 0xD800 && c <= 0xDBFF && i + 3 < n) { /* a surrogate pair */
			uint32_t lo = kind == 1 ? (uint32_t)(p[i + 2] | p[i + 3] << 8)
						: (uint32_t)(p[i + 2] << 8 | p[i + 3]);
			if (lo >= 0xDC00 && lo <= 0xDFFF) {
				c = 0x10000 + ((c - 0xD800) << 10) + (lo - 0xDC00);
				i += 2;
			}
		}
		if (c < 0x80) {
			d[k++] = (char)c;
		} else if (c < 0x800) {
			d[k++] = (char)(0xC0 | c >> 6), d[k++] = (char)(0x80 | (c & 0x3F));
		} else if (c < 0x10000) {
			d[k++] = (char)(0xE0 | c >> 12), d[k++] = (char)(0x80 | ((c >> 6) & 0x3F));
			d[k++] = (char)(0x80 | (c & 0x3F));
		} else {
			d[k++] = (char)(0xF0 | c >> 18), d[k++] = (char)(0x80 | ((c >> 12) & 0x3F));
			d[k++] = (char)(0x80 | ((c >> 6) & 0x3F)), d[k++] = (char)(0x80 | (c & 0x3F));
		}
		if (k + 4 > n / 2 * 3) /* 4-byte characters take 4 input bytes */
			break;
	}
	return child(w, d, k, depth, layer, kind == 1 ? "utf-16le" : "utf-16be", raw_end);
}

/* Runs of ASCII written as UTF-16 inside a text that is not UTF-16 as a
 * whole (a script embedded in a binary, a half-converted file): each run of
 * at least U16_MIN characters, in either byte order. */
static int utf16_runs(walk *w, const unsigned char *p, size_t n, int depth, const char *layer,
		      uint64_t raw_base)
{
	const unsigned char *z = memchr(p, 0, n);
	int rc = 0;

	while (z && !rc) {
		size_t i = (size_t)(z - p), s = i ? i - 1 : 0, e = s;
		/* LE: printable at s, NUL at s+1; BE: NUL at s, printable at s+1 */
		int le = i > 0 && p[i - 1] >= 0x09 && p[i - 1] < 0x7f;
		if (!le)
			s = i, e = i;
		while (e + 1 < n && (le ? (p[e] >= 0x09 && p[e] < 0x7f && !p[e + 1])
					: (!p[e] && p[e + 1] >= 0x09 && p[e + 1] < 0x7f)))
			e += 2;
		if ((e - s) / 2 >= U16_MIN) {
			char *d = take(w, (e - s) / 2);
			if (!d)
				return 0;
			for (size_t k = 0; k < (e - s) / 2; k++)
				d[k] = (char)p[s + 2 * k + (le ? 0 : 1)];
			rc = child(w, d, (e - s) / 2, depth, layer, le ? "utf-16le" : "utf-16be",
				   raw_base == UINT64_MAX ? e : raw_base);
		}
		size_t next = e > i ? e : i + 1;
		z = next < n ? memchr(p + next, 0, n - next) : NULL;
	}
	return rc;
}

/* End of the base64 run starting at i (a run may go on over a newline when
 * the line before is at least B64_LINE_MIN long, as wrapped base64 is);
 * *chars gets its count of alphabet characters. */
static size_t b64_run(const unsigned char *p, size_t n, size_t i, size_t *chars, int *hex)
{
	size_t j = i, line;

	*chars = 0, *hex = 1;
	for (;;) {
		size_t b = j;
		while (j < n && b64v[p[j]] >= 0)
			j++;
		line = j - b, *chars += line;
		for (size_t k = b; k < j && *hex && *chars >= HEX_MIN; k++)
			*hex = hexv[p[k]] >= 0;
		size_t nl = j < n && p[j] == '\r' ? j + 1 : j;
		if (line >= B64_LINE_MIN && nl + 1 < n && p[nl] == '\n' && b64v[p[nl + 1]] >= 0) {
			j = nl + 1;
			continue;
		}
		break;
	}
	return j;
}

/* Decodes base64 p[i, j) (newlines skipped, a partial last quantum dropped). */
static int b64_layer(walk *w, const unsigned char *p, size_t i, size_t j, size_t chars,
		     int depth, const char *layer, uint64_t raw_end)
{
	char *d = take(w, chars / 4 * 3 + 3);
	uint32_t acc = 0;
	size_t k = 0, q = 0;

	if (!d)
		return 0;
	for (; i < j; i++) {
		if (b64v[p[i]] < 0)
			continue;
		acc = acc << 6 | (uint32_t)b64v[p[i]];
		if (++q == 4) {
			d[k++] = (char)(acc >> 16), d[k++] = (char)(acc >> 8), d[k++] = (char)acc;
			q = 0, acc = 0;
		}
	}
	if (q == 3)
		d[k++] = (char)(acc >> 10), d[k++] = (char)(acc >> 2);
	else if (q == 2)
		d[k++] = (char)(acc >> 4);
	return child(w, d, k, depth, layer, "base64", raw_end);
}

static int hex_layer(walk *w, const unsigned char *p, size_t i, size_t j, int depth,
		     const char *layer, uint64_t raw_end)
{
	char *d = take(w, (j - i) / 2);
	size_t k = 0;

	if (!d)
		return 0;
	for (; i + 1 < j; i += 2)
		d[k++] = (char)(hexv[p[i]] << 4 | hexv[p[i + 1]]);
	return child(w, d, k, depth, layer, "hex", raw_end);
}

/* A run of \xNN escapes at i: its end, *count the escapes. */
static size_t esc_run(const unsigned char *p, size_t n, size_t i, size_t *count)
{
	*count = 0;
	while (i + 3 < n && p[i] == '\\' && (p[i + 1] == 'x' || p[i + 1] == 'X') &&
	       hexv[p[i + 2]] >= 0 && hexv[p[i + 3]] >= 0)
		i += 4, (*count)++;
	return i;
}

/* The \xNN escape runs of t, each decoded. */
static int esc_runs(walk *w, const unsigned char *p, size_t n, int depth, const char *layer,
		    uint64_t raw_end)
{
	const unsigned char *b = memchr(p, '\\', n);
	int rc = 0;

	while (b && !rc) {
		size_t i = (size_t)(b - p), count, j = esc_run(p, n, i, &count);
		if (count >= ESC_MIN) {
			char *d = take(w, count);
			if (!d)
				return 0;
			for (size_t k = 0; k < count; k++)
				d[k] = (char)(hexv[p[i + 4 * k + 2]] << 4 | hexv[p[i + 4 * k + 3]]);
			rc = child(w, d, count, depth, layer, "\\x",
				   raw_end == UINT64_MAX ? j : raw_end);
		}
		i = j > i ? j : i + 1;
		b = i < n ? memchr(p + i, '\\', n - i) : NULL;
	}
	return rc;
}

/* The base64 and hex runs of t, each decoded. A run worth decoding is at
 * least B64_MIN (= HEX_MIN) long, so it covers the byte B64_MIN - 1 past
 * wherever the search stands: when that byte is not in the alphabet the
 * search jumps B64_MIN on, which keeps ordinary text cheap. */
static int runs(walk *w, const char *t, size_t n, int depth, const char *layer,
		uint64_t raw_end)
{
	const unsigned char *p = (const unsigned char *)t;
	int rc = esc_runs(w, p, n, depth, layer, raw_end);

	for (size_t i = 0; i + B64_MIN <= n && !rc;) {
		size_t k = i + B64_MIN - 1, s = k;
		if (b64v[p[k]] < 0) {
			i = k + 1;
			continue;
		}
		while (s > i && b64v[p[s - 1]] >= 0)
			s--;
		size_t e = k + 1;
		while (e < n && b64v[p[e]] >= 0)
			e++;
		if (e - s < B64_MIN) {
			i = e;
			continue;
		}
		size_t chars;
		int hex;
		size_t j = b64_run(p, n, s, &chars, &hex);
		uint64_t end = raw_end == UINT64_MAX ? j : raw_end;
		if (hex && chars >= HEX_MIN && chars % 2 == 0 && j - s == chars)
			rc = hex_layer(w, p, s, j, depth, layer, end);
		else if (!hex)
			rc = b64_layer(w, p, s, j, chars, depth, layer, end);
		i = j;
	}
	return rc;
}

/* Scans one decoded text (depth >= 1): itself, its normalised windows, then
 * its own layers while the depth allows. */
static int walk_text(walk *w, const char *t, size_t n, int depth, const char *layer,
		     uint64_t raw_end)
{
	int rc;

	if ((rc = w->fn(w->ctx, t, n, layer, raw_end, 0)) ||
	    (rc = cof_norm_windows(t, n, layer, raw_end, w->fn, w->ctx)))
		return rc;
	if (depth >= COF_LAYER_DEPTH)
		return 0;
	return layers_at(w, t, n, depth, layer, raw_end);
}

/* The layers found in t (a text at `depth`): a compressed stream or UTF-16
 * as a whole, runs of UTF-16, base64, hex and escapes inside it. Each is
 * walked at depth + 1. */
static int layers_at(walk *w, const char *t, size_t n, int depth, const char *layer,
		     uint64_t raw_end)
{
	const unsigned char *p = (const unsigned char *)t;
	uint64_t whole = raw_end == UINT64_MAX ? n : raw_end;
	int kind, rc;

	if (is_gzip(p, n) || is_zlib(p, n)) {
		rc = inflate_layer(w, t, n, depth + 1, layer, whole, is_gzip(p, n) ? "gzip" : "zlib");
		if (rc)
			return rc;
	}
	if ((kind = utf16_kind(p, n)))
		return utf16_layer(w, p, n, kind, depth + 1, layer, whole);
	if (memchr(p, 0, n) && (rc = utf16_runs(w, p, n, depth + 1, layer, raw_end)))
		return rc;
	return runs(w, t, n, depth + 1, layer, raw_end);
}

int cof_layers_walk(const char *content, size_t n, cof_view_fn fn, void *ctx)
{
	walk w = {fn, ctx, 0, 0};
	int rc;

	pthread_once(&tables_once, tables_init);
	w.budget = n > COF_LAYER_MAX_BUDGET / COF_LAYER_RATIO ? COF_LAYER_MAX_BUDGET
							      : n * COF_LAYER_RATIO;
	if (w.budget < COF_LAYER_MIN_BUDGET)
		w.budget = COF_LAYER_MIN_BUDGET;
	if ((rc = cof_norm_windows(content, n, "", UINT64_MAX, fn, ctx)))
		return rc;
	return layers_at(&w, content, n, 0, "", UINT64_MAX);
}
