/*
 * normalize.c — the guard's normalised view of a text (see normalize.h):
 * what a write says once look-alike letters, invisible characters and shell
 * quoting inside words are taken out, so "Ignоre" (Cyrillic о), "Ig<ZWSP>nore",
 * "ignore<NBSP>all" and /dev/tc''p read as their plain forms. Owned by the
 * write guard.
 *
 * Per character: NFKC (ICU's normaliser, one character at a time: the
 * compatibility forms — fullwidth, ligatures, mathematical letters — matter
 * here, not canonical composition across characters), then the confusables
 * table below, combining marks dropped. The view is meant for matching only;
 * nothing is ever written from it.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#include <unicode/unorm2.h>
#include <unicode/utf16.h>
#include "policy/normalize.h"
#include "util/util.h"

/* Look-alikes of Latin letters that NFKC leaves alone (after Unicode's
 * confusables.txt, the common Cyrillic, Greek, Armenian and Latin ones),
 * sorted by code point for the binary search. */
static const struct {
	uint32_t cp;
	char to;
} confusables[] = {
	{0x0131, 'i'}, {0x0237, 'j'}, {0x0251, 'a'}, {0x0261, 'g'}, {0x026A, 'i'},
	{0x0391, 'A'}, {0x0392, 'B'}, {0x0395, 'E'}, {0x0396, 'Z'}, {0x0397, 'H'},
	{0x0399, 'I'}, {0x039A, 'K'}, {0x039C, 'M'}, {0x039D, 'N'}, {0x039F, 'O'},
	{0x03A1, 'P'}, {0x03A4, 'T'}, {0x03A5, 'Y'}, {0x03A7, 'X'}, {0x03B1, 'a'},
	{0x03B5, 'e'}, {0x03B9, 'i'}, {0x03BA, 'k'}, {0x03BD, 'v'}, {0x03BF, 'o'},
	{0x03C1, 'p'}, {0x03C5, 'u'}, {0x03C7, 'x'}, {0x03F2, 'c'}, {0x03F3, 'j'},
	{0x0405, 'S'}, {0x0406, 'I'}, {0x0408, 'J'}, {0x0410, 'A'}, {0x0412, 'B'},
	{0x0415, 'E'}, {0x041A, 'K'}, {0x041C, 'M'}, {0x041D, 'H'}, {0x041E, 'O'},
	{0x0420, 'P'}, {0x0421, 'C'}, {0x0422, 'T'}, {0x0425, 'X'}, {0x0430, 'a'},
	{0x0435, 'e'}, {0x043A, 'k'}, {0x043E, 'o'}, {0x0440, 'p'}, {0x0441, 'c'},
	{0x0443, 'y'}, {0x0445, 'x'}, {0x0455, 's'}, {0x0456, 'i'}, {0x0458, 'j'},
	{0x0461, 'w'}, {0x04AE, 'Y'}, {0x04AF, 'y'}, {0x04BA, 'H'}, {0x04BB, 'h'},
	{0x04C0, 'I'}, {0x04CF, 'l'}, {0x0500, 'D'}, {0x0501, 'd'}, {0x051A, 'Q'},
	{0x051B, 'q'}, {0x051C, 'W'}, {0x051D, 'w'}, {0x0570, 'h'}, {0x0578, 'n'},
	{0x057D, 'u'}, {0x0585, 'o'}, {0x13A0, 'D'}, {0x13A1, 'R'}, {0x13A2, 'T'},
	{0x13AA, 'G'}, {0x13B3, 'W'}, {0x13BB, 'H'}, {0x13C0, 'G'}, {0x13DA, 'V'},
	{0x13E2, 'S'}, {0x1D00, 'A'}, {0x1D04, 'C'}, {0x1D05, 'D'}, {0x1D07, 'E'},
	{0x1D0B, 'K'}, {0x1D0D, 'M'}, {0x1D0F, 'O'}, {0x1D18, 'P'}, {0x1D1B, 'T'},
	{0x1D1C, 'U'}, {0x1D20, 'V'}, {0x1D21, 'W'}, {0x1D22, 'Z'}, {0x2010, '-'},
	{0x2011, '-'}, {0x2012, '-'}, {0x2013, '-'}, {0x2212, '-'}, {0x2215, '/'}, {0x2044, '/'},
	{0xA731, 's'}, {0xA76A, '3'}, {0xFF5C, '|'},
};

static char fold(uint32_t cp)
{
	size_t lo = 0, hi = sizeof confusables / sizeof *confusables;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (confusables[mid].cp == cp)
			return confusables[mid].to;
		if (confusables[mid].cp < cp)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

/* Characters that show nothing (dropped) and spaces other than ' ' (-> ' '). */
static int invisible(uint32_t cp)
{
	return cp == 0x00AD || cp == 0x034F || cp == 0x061C || cp == 0x115F ||
	       cp == 0x1160 || cp == 0x17B4 || cp == 0x17B5 || cp == 0x180E ||
	       (cp >= 0x200B && cp <= 0x200F) || (cp >= 0x202A && cp <= 0x202E) ||
	       (cp >= 0x2060 && cp <= 0x206F) || cp == 0x3164 || cp == 0xFEFF ||
	       cp == 0xFFA0 || (cp >= 0xFE00 && cp <= 0xFE0F) ||
	       (cp >= 0xE0100 && cp <= 0xE01EF);
}

static int other_space(uint32_t cp)
{
	return cp == 0x00A0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
	       cp == 0x202F || cp == 0x205F || cp == 0x3000 || cp == 0x0085;
}

static int combining(uint32_t cp)
{
	return (cp >= 0x0300 && cp <= 0x036F) || (cp >= 0x1AB0 && cp <= 0x1AFF) ||
	       (cp >= 0x1DC0 && cp <= 0x1DFF) || (cp >= 0x20D0 && cp <= 0x20FF) ||
	       (cp >= 0xFE20 && cp <= 0xFE2F);
}

static pthread_once_t nfkc_once = PTHREAD_ONCE_INIT;
static const UNormalizer2 *nfkc;

static void nfkc_init(void)
{
	UErrorCode st = U_ZERO_ERROR;
	nfkc = unorm2_getNFKCInstance(&st);
	if (U_FAILURE(st))
		nfkc = NULL;
}

/* Decodes one UTF-8 character at p[0, n): its length, or 0 when malformed
 * (overlong, surrogate, past U+10FFFF, cut short). */
static size_t u8_next(const unsigned char *p, size_t n, uint32_t *cp)
{
	size_t len;
	uint32_t c = p[0], min;

	if (c < 0x80)
		return *cp = c, 1;
	if (c >= 0xC2 && c <= 0xDF)
		len = 2, c &= 0x1F, min = 0x80;
	else if (c >= 0xE0 && c <= 0xEF)
		len = 3, c &= 0x0F, min = 0x800;
	else if (c >= 0xF0 && c <= 0xF4)
		len = 4, c &= 0x07, min = 0x10000;
	else
		return 0;
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xC0) != 0x80)
			return 0;
		c = (c << 6) | (p[i] & 0x3F);
	}
	if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
		return 0;
	*cp = c;
	return len;
}

static size_t u8_put(uint32_t c, char *o)
{
	if (c < 0x80)
		return o[0] = (char)c, 1;
	if (c < 0x800)
		return o[0] = (char)(0xC0 | c >> 6), o[1] = (char)(0x80 | (c & 0x3F)), 2;
	if (c < 0x10000) {
		o[0] = (char)(0xE0 | c >> 12), o[1] = (char)(0x80 | ((c >> 6) & 0x3F));
		o[2] = (char)(0x80 | (c & 0x3F));
		return 3;
	}
	o[0] = (char)(0xF0 | c >> 18), o[1] = (char)(0x80 | ((c >> 12) & 0x3F));
	o[2] = (char)(0x80 | ((c >> 6) & 0x3F)), o[3] = (char)(0x80 | (c & 0x3F));
	return 4;
}

/* One character after NFKC: folded, dropped or kept. Writes into o (4 bytes
 * at most) and answers the length. */
static size_t put_folded(uint32_t c, char *o)
{
	char f;

	if (c < 0x80)
		return o[0] = (char)c, 1;
	if (invisible(c) || combining(c))
		return 0;
	if (other_space(c))
		return o[0] = ' ', 1;
	if (c == 0x2028 || c == 0x2029)
		return o[0] = '\n', 1;
	if ((f = fold(c)))
		return o[0] = f, 1;
	return u8_put(c, o);
}

/* The NFKC form of one character, folded, into o; answers the length (at
 * most 4 bytes: longer expansions — "ﷺ" and the like — are cut, as no rule
 * looks for them). Falls back to the character itself without ICU. */
static size_t put_char(uint32_t c, char *o)
{
	UChar src[2], dst[24];
	int32_t ns = 0, nd;
	UErrorCode st = U_ZERO_ERROR;
	char tmp[4 * 24];
	size_t k = 0;

	if (c < 0x80 || invisible(c) || combining(c) || other_space(c) || fold(c))
		return put_folded(c, o);
	pthread_once(&nfkc_once, nfkc_init);
	if (!nfkc || unorm2_isInert(nfkc, (UChar32)c))
		return u8_put(c, o);
	U16_APPEND_UNSAFE(src, ns, c);
	nd = unorm2_normalize(nfkc, src, ns, dst, 24, &st);
	if (U_FAILURE(st))
		return u8_put(c, o);
	for (int32_t i = 0; i < nd && k + 4 <= sizeof tmp;) {
		UChar32 d;
		U16_NEXT(dst, i, nd, d);
		k += put_folded((uint32_t)d, tmp + k);
	}
	if (k > 4) { /* keep whole characters only */
		size_t keep = 0;
		while (keep < k) {
			uint32_t d;
			size_t l = u8_next((unsigned char *)tmp + keep, k - keep, &d);
			if (!l || keep + l > 4)
				break;
			keep += l;
		}
		k = keep;
	}
	memcpy(o, tmp, k);
	return k;
}

static int is_word(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_';
}

/* Inside a quoted piece of a word: letters, digits and path punctuation. */
static int is_seg(unsigned char c)
{
	return is_word(c) || c == '/' || c == '.' || c == '-';
}

#define SEG_MAX 64

/* At a quote in[i] with `prev` the byte before it (0 at the start): how many
 * bytes of quoting to drop here, as shell reads a word. A run of quotes
 * between two word bytes goes (tc''p, ba"'"sh); so do the quotes around a
 * piece of a word next to a word byte ("b"ash, ba's'h, '/bin/ba'sh). Sets
 * *inner to the piece's length in the second case (0 in the first); 0 when
 * nothing here is dropped. */
static size_t quote_drop(const unsigned char *in, size_t n, size_t i, unsigned char prev,
			 size_t *inner)
{
	size_t j = i;

	*inner = 0;
	while (j < n && (in[j] == '\'' || in[j] == '"'))
		j++;
	if (is_word(prev) && j < n && is_word(in[j]) && j - i >= 2)
		return j - i;
	j = i + 1;
	while (j < n && j - i <= SEG_MAX && is_seg(in[j]))
		j++;
	if (j >= n || in[j] != in[i] || j == i + 1)
		return 0;
	if (is_word(prev) || (j + 1 < n && is_word(in[j + 1]))) {
		*inner = j - i - 1;
		return 2;
	}
	return 0;
}

/* An escape that means a character in most languages (\xHH, \uHHHH,
 * \UHHHHHHHH): left alone, the decoded layers read them. */
static int hex_escape(const unsigned char *in, size_t n, size_t i)
{
	size_t want = in[i + 1] == 'x' ? 2 : in[i + 1] == 'u' ? 4 : in[i + 1] == 'U' ? 8 : 0;

	if (!want || i + 2 + want > n)
		return 0;
	for (size_t k = 0; k < want; k++) {
		unsigned char c = in[i + 2 + k];
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))
			return 0;
	}
	return 1;
}

/* At a backslash in[i]: 1 when shell would drop it inside a word (t\cp,
 * ba\sh: a word byte on both sides and one more after, so "a\n'" and "\x41"
 * in a program's strings stay), 2 for a line continuation inside a word
 * (ba\<newline>sh), else 0. */
static size_t backslash_drop(const unsigned char *in, size_t n, size_t i, unsigned char prev)
{
	if (!is_word(prev) || i + 2 >= n)
		return 0;
	if (is_word(in[i + 1]) && is_word(in[i + 2]) && !hex_escape(in, n, i))
		return 1;
	if (in[i + 1] == '\n' && is_word(in[i + 2]))
		return 2;
	return 0;
}

/* One step of the normaliser at in[*i]: writes the output for it into o
 * (SEG_MAX + 4 bytes at most), advances *i past what it consumed. */
static size_t step(const unsigned char *in, size_t n, size_t *i, unsigned char prev, char *o)
{
	unsigned char c = in[*i];
	size_t drop, inner;
	uint32_t cp;

	if (c == '\'' || c == '"') {
		if ((drop = quote_drop(in, n, *i, prev, &inner)) == 0) {
			(*i)++;
			return o[0] = (char)c, 1;
		}
		if (!inner) {
			*i += drop;
			return 0;
		}
		memcpy(o, in + *i + 1, inner);
		*i += inner + 2;
		return inner;
	}
	if (c == '\\') {
		drop = backslash_drop(in, n, *i, prev);
		*i += drop ? drop : 1;
		return drop ? 0 : (o[0] = '\\', 1);
	}
	if (c < 0x80) {
		(*i)++;
		return o[0] = (char)c, 1;
	}
	size_t l = u8_next(in + *i, n - *i, &cp);
	if (!l) { /* not UTF-8: the byte as it is */
		(*i)++;
		return o[0] = (char)c, 1;
	}
	*i += l;
	return put_char(cp, o);
}

size_t cof_norm(const char *text, size_t n, char *out)
{
	const unsigned char *in = (const unsigned char *)text;
	size_t i = 0, k = 0;

	while (i < n) {
		size_t m = step(in, n, &i, k ? (unsigned char)out[k - 1] : 0, out + k);
		k += m;
	}
	return k;
}

size_t cof_norm_map(const char *text, size_t n, size_t out_end)
{
	const unsigned char *in = (const unsigned char *)text;
	char o[SEG_MAX + 8];
	unsigned char prev = 0;
	size_t i = 0, k = 0;

	while (i < n && k < out_end) {
		size_t m = step(in, n, &i, prev, o);
		if (m)
			prev = (unsigned char)o[m - 1];
		k += m;
	}
	return i;
}

/* Whether the normaliser changes something at in[i] (a byte that may: a
 * quote, a backslash or a non-ASCII byte): 0 no, 1 shell quoting (which
 * matters within its line), 2 a character (which may matter to a rule
 * reaching over lines); *skip gets how far to move on. */
static int changes_at(const unsigned char *in, size_t n, size_t i, size_t *skip)
{
	unsigned char c = in[i], prev = i ? in[i - 1] : 0;
	size_t inner;
	uint32_t cp;

	*skip = 1;
	if (c == '\'' || c == '"')
		return quote_drop(in, n, i, prev, &inner) != 0;
	if (c == '\\')
		return backslash_drop(in, n, i, prev) != 0;
	size_t l = u8_next(in + i, n - i, &cp);
	if (!l)
		return 0;
	*skip = l;
	if (invisible(cp) || combining(cp) || other_space(cp) || fold(cp) ||
	    cp == 0x2028 || cp == 0x2029)
		return 2;
	pthread_once(&nfkc_once, nfkc_init);
	return nfkc && !unorm2_isInert(nfkc, (UChar32)cp) ? 2 : 0;
}

/* Context kept on each side of a changed character: longer than any rule's
 * bounded reach across lines, then out to the line's ends (at most
 * LINE_MAX_EXTRA more). Shell quoting only matters on its own line. */
#define CONTEXT 1024
#define LINE_MAX_EXTRA 2048

/* Windows closer than this are one: so there are never more windows than
 * bytes / MERGE_GAP, each costing a scan call, whatever the input. */
#define MERGE_GAP 256

/* The bytes that may change (quote, backslash, >= 0x80). */
static unsigned char special[256];
static pthread_once_t special_once = PTHREAD_ONCE_INIT;

static void special_init(void)
{
	special['\''] = special['"'] = special['\\'] = 1;
	for (int c = 0x80; c < 256; c++)
		special[c] = 1;
}

/* Normalises text[ws, we) and hands it to fn if it differs. */
static int flush(const char *text, size_t ws, size_t we, const char *layer, uint64_t raw_end,
		 cof_view_fn fn, void *ctx)
{
	size_t n = we - ws;
	char *out = cof_malloc(COF_NORM_CAP(n) + COF_VIEW_PAD), name[64];
	int rc = 0;

	if (!out)
		return -1;
	size_t k = cof_norm(text + ws, n, out);
	memset(out + k, 0, COF_VIEW_PAD);
	if (k != n || memcmp(out, text + ws, n)) {
		snprintf(name, sizeof name, "%s%snormalized", layer, *layer ? " > " : "");
		rc = fn(ctx, out, k, name, raw_end, ws);
	}
	free(out);
	return rc;
}

int cof_norm_windows(const char *text, size_t n, const char *layer, uint64_t raw_end,
		     cof_view_fn fn, void *ctx)
{
	const unsigned char *in = (const unsigned char *)text;
	size_t ws = 0, we = 0, skip;
	int open = 0, rc;

	pthread_once(&special_once, special_init);
	for (size_t i = 0; i < n; i += skip) {
		int scope;
		skip = 1;
#ifdef __SSE2__
		/* 16 bytes at a time past those that cannot change */
		if (!special[in[i]]) {
			while (i + 16 <= n) {
				__m128i v = _mm_loadu_si128((const __m128i *)(in + i));
				int m = _mm_movemask_epi8(v) |
					_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('\''))) |
					_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('"'))) |
					_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('\\')));
				if (m) {
					i += (size_t)__builtin_ctz((unsigned)m);
					break;
				}
				i += 16;
			}
			if (i >= n)
				break;
		}
#endif
		if (!special[in[i]] || !(scope = changes_at(in, n, i, &skip)))
			continue;
		size_t reach = scope == 2 ? CONTEXT : 0;
		size_t s = i > reach ? i - reach : 0, e = n - i > reach ? i + reach : n;
		for (size_t lim = s > LINE_MAX_EXTRA ? s - LINE_MAX_EXTRA : 0;
		     s > lim && in[s - 1] != '\n';)
			s--;
		for (size_t lim = n - e > LINE_MAX_EXTRA ? e + LINE_MAX_EXTRA : n;
		     e < lim && in[e] != '\n';)
			e++;
		if (open && s <= we + MERGE_GAP) {
			we = e > we ? e : we;
			continue;
		}
		if (open && (rc = flush(text, ws, we, layer, raw_end, fn, ctx)))
			return rc;
		ws = s, we = e, open = 1;
	}
	return open ? flush(text, ws, we, layer, raw_end, fn, ctx) : 0;
}
