/*
 * toml.c — a TOML 1.0 parser into jansson values (toml.h).
 *
 * A recursive-descent reader over the whole text (at most COF_TOML_MAX
 * bytes, valid UTF-8 checked first). What the spec forbids about defining
 * tables is kept in a side table of flags per JSON object or array made
 * here (how it was made: by a [header], as the parent of one, by dotted
 * keys, inline, or as an array of tables), looked up by pointer.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/toml.h"
#include "util/util.h"

enum {
	T_EXPLICIT = 1, /* a table its [header] defined */
	T_IMPLICIT = 2, /* a table made as the parent of a header: may be defined once */
	T_DOTTED = 4,   /* a table made by dotted keys */
	T_FROZEN = 8,   /* an inline table or a static array: never extended */
	T_AOT = 16,     /* an array of tables ([[header]]) */
};

typedef struct flagmap {
	const void **keys;
	unsigned char *vals;
	size_t cap, n;
} flagmap;

typedef struct tp {
	const char *s, *p, *end;
	json_t *root, *cur;      /* the document; the table key/values go to */
	flagmap fl;
	cof_err *err;
	int failed;
	json_t *lines;           /* path -> line (cof_toml_parse_lines), or NULL */
	cof_buf path;            /* the path of cur */
	const char *lp;          /* line counting: lines before lp are counted */
	int line;
} tp;

/* ------------------------------------------------------------ flags */

static size_t fl_slot(const flagmap *m, const void *k)
{
	size_t h = ((uintptr_t)k >> 4) * 11400714819323198485ull;
	size_t i = h & (m->cap - 1);

	while (m->keys[i] && m->keys[i] != k)
		i = (i + 1) & (m->cap - 1);
	return i;
}

static unsigned fl_get(const tp *t, const void *k)
{
	if (!t->fl.cap)
		return 0;
	size_t i = fl_slot(&t->fl, k);
	return t->fl.keys[i] ? t->fl.vals[i] : 0;
}

static void fl_set(tp *t, const void *k, unsigned v)
{
	flagmap *m = &t->fl;

	if ((m->n + 1) * 2 > m->cap) {
		flagmap g = {cof_calloc(m->cap ? m->cap * 2 : 64, sizeof *g.keys),
			     cof_calloc(m->cap ? m->cap * 2 : 64, 1), m->cap ? m->cap * 2 : 64, 0};
		for (size_t i = 0; i < m->cap; i++)
			if (m->keys[i]) {
				size_t j = fl_slot(&g, m->keys[i]);
				g.keys[j] = m->keys[i];
				g.vals[j] = m->vals[i];
				g.n++;
			}
		free(m->keys);
		free(m->vals);
		*m = g;
	}
	size_t i = fl_slot(m, k);
	if (!m->keys[i])
		m->n++;
	m->keys[i] = k;
	m->vals[i] = (unsigned char)v;
}

/* ------------------------------------------------------------ errors */

static int fail(tp *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(tp *t, const char *fmt, ...)
{
	char msg[300];
	va_list ap;
	int line = 1, col = 1;

	if (t->failed)
		return -1;
	for (const char *q = t->s; q < t->p && q < t->end; q++) {
		if (*q == '\n')
			line++, col = 1;
		else if (((unsigned char)*q & 0xc0) != 0x80)
			col++;
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	t->failed = 1;
	return cof_error(t->err, COF_EVALIDATION, "line %d, column %d: %s", line, col, msg);
}

/* ------------------------------------------------------------ key lines */

/* The line of t->p (t->p only moves forward, so counting goes on from the
 * last time). */
static int cur_line(tp *t)
{
	for (; t->lp < t->p && t->lp < t->end; t->lp++)
		if (*t->lp == '\n')
			t->line++;
	return t->line;
}

/* Records the line of `base` followed by each prefix of the key's parts
 * (the first definition of a path wins). */
static void note_key(tp *t, const char *base, const char *const *part, size_t n)
{
	cof_buf b = COF_BUF_INIT;

	if (!t->lines)
		return;
	cof_buf_adds(&b, base);
	for (size_t i = 0; i < n; i++) {
		if (b.len)
			cof_buf_add(&b, ".", 1);
		cof_buf_adds(&b, part[i]);
		if (b.data && !json_object_get(t->lines, b.data))
			json_object_set_new(t->lines, b.data, json_integer(cur_line(t)));
	}
	cof_buf_release(&b);
}

/* ------------------------------------------------------------ lexing */

static int at_end(const tp *t)
{
	return t->p >= t->end;
}

static int peek(const tp *t, size_t k)
{
	return t->p + k < t->end ? (unsigned char)t->p[k] : -1;
}

static void skip_ws(tp *t)
{
	while (!at_end(t) && (*t->p == ' ' || *t->p == '\t'))
		t->p++;
}

/* A comment to the end of the line: control characters other than tab are
 * not allowed in it. */
static int skip_comment(tp *t)
{
	if (at_end(t) || *t->p != '#')
		return 0;
	for (t->p++; !at_end(t) && *t->p != '\n'; t->p++) {
		unsigned char c = (unsigned char)*t->p;
		if (c == '\r' && peek(t, 1) == '\n')
			continue;
		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return fail(t, "a control character in a comment");
	}
	return 0;
}

/* A newline (\n or \r\n): 1 and past it, else 0. */
static int newline(tp *t)
{
	if (peek(t, 0) == '\n') {
		t->p++;
		return 1;
	}
	if (peek(t, 0) == '\r' && peek(t, 1) == '\n') {
		t->p += 2;
		return 1;
	}
	return 0;
}

/* Whitespace, comments and newlines (inside arrays). */
static int skip_wcn(tp *t)
{
	for (;;) {
		skip_ws(t);
		if (skip_comment(t))
			return -1;
		if (!newline(t))
			return 0;
	}
}

/* The end of a line after a key/value or header: ws, comment, newline or EOF. */
static int line_end(tp *t)
{
	skip_ws(t);
	if (skip_comment(t))
		return -1;
	if (at_end(t) || newline(t))
		return 0;
	return fail(t, "expected the end of the line, found '%c'", *t->p);
}

/* ------------------------------------------------------------ strings */


static void put_utf8(cof_buf *b, uint32_t cp)
{
	char u[4];
	size_t n;

	if (cp < 0x80)
		u[0] = (char)cp, n = 1;
	else if (cp < 0x800)
		u[0] = (char)(0xc0 | cp >> 6), u[1] = (char)(0x80 | (cp & 0x3f)), n = 2;
	else if (cp < 0x10000)
		u[0] = (char)(0xe0 | cp >> 12), u[1] = (char)(0x80 | (cp >> 6 & 0x3f)),
		u[2] = (char)(0x80 | (cp & 0x3f)), n = 3;
	else
		u[0] = (char)(0xf0 | cp >> 18), u[1] = (char)(0x80 | (cp >> 12 & 0x3f)),
		u[2] = (char)(0x80 | (cp >> 6 & 0x3f)), u[3] = (char)(0x80 | (cp & 0x3f)), n = 4;
	cof_buf_add(b, u, n);
}

/* One escape after '\' in a basic string. */
static int escape(tp *t, cof_buf *b)
{
	int c = peek(t, 0);
	const char *simple = "b\bt\tn\nf\fr\r\"\"\\\\e\033";

	for (const char *q = simple; *q; q += 2)
		if (c == q[0] && c != 'e') {
			cof_buf_add(b, q + 1, 1);
			t->p++;
			return 0;
		}
	if (c == 'u' || c == 'U') {
		int n = c == 'u' ? 4 : 8;
		uint32_t cp = 0;
		for (int i = 1; i <= n; i++) {
			int h = cof_hex_value(peek(t, (size_t)i));
			if (h < 0)
				return fail(t, "\\%c needs %d hex digits", c, n);
			cp = cp << 4 | (uint32_t)h;
		}
		if ((cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
			return fail(t, "\\%c%0*X is not a Unicode scalar value", c, n, cp);
		put_utf8(b, cp);
		t->p += n + 1;
		return 0;
	}
	return fail(t, "unknown escape '\\%c'", c > 0x20 && c < 0x7f ? c : '?');
}

/* A string of any of the four kinds at t->p (its quote): the text in *out
 * (owned). multi: a multi-line one is allowed (not in keys). */
static int string(tp *t, int multi_ok, char **out, size_t *outlen)
{
	char q = *t->p;
	int multi = peek(t, 1) == q && peek(t, 2) == q;
	cof_buf b = COF_BUF_INIT;

	if (multi && !multi_ok)
		return fail(t, "a key cannot be a multi-line string");
	t->p += multi ? 3 : 1;
	if (multi)
		newline(t); /* a newline right after the opening quotes is trimmed */
	for (;;) {
		if (at_end(t)) {
			cof_buf_release(&b);
			return fail(t, "a string is not closed");
		}
		unsigned char c = (unsigned char)*t->p;
		if (c == (unsigned char)q) {
			if (!multi) {
				t->p++;
				break;
			}
			if (peek(t, 1) == q && peek(t, 2) == q) {
				/* up to two more quotes belong to the content */
				int extra = peek(t, 3) == q ? (peek(t, 4) == q ? 2 : 1) : 0;
				cof_buf_add(&b, t->p, (size_t)extra);
				t->p += 3 + extra;
				break;
			}
			cof_buf_add(&b, t->p++, 1);
			continue;
		}
		if (c == '\\' && q == '"') {
			t->p++;
			if (multi) { /* a line-ending backslash trims what follows */
				const char *save = t->p;
				skip_ws(t);
				if (newline(t)) {
					for (;;) {
						skip_ws(t);
						if (!newline(t))
							break;
					}
					continue;
				}
				t->p = save;
			}
			if (escape(t, &b)) {
				cof_buf_release(&b);
				return -1;
			}
			continue;
		}
		if (c == '\n' || (c == '\r' && peek(t, 1) == '\n')) {
			if (!multi) {
				cof_buf_release(&b);
				return fail(t, "a newline in a single-line string");
			}
			cof_buf_add(&b, "\n", 1);
			t->p += c == '\r' ? 2 : 1;
			continue;
		}
		if ((c < 0x20 && c != '\t') || c == 0x7f) {
			cof_buf_release(&b);
			return fail(t, "a control character (0x%02X) in a string", c);
		}
		cof_buf_add(&b, t->p++, 1);
	}
	if (cof_buf_add(&b, "", 0)) {
		cof_buf_release(&b);
		return fail(t, "out of memory");
	}
	*outlen = b.len;
	*out = b.data ? b.data : strdup("");
	return 0;
}

/* ------------------------------------------------------------ keys */

static int bare_char(int c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-';
}

#define KEY_PARTS 64
typedef struct tkey {
	char *part[KEY_PARTS];
	size_t len[KEY_PARTS]; /* a quoted key may hold U+0000 */
	size_t n;
} tkey;

static void key_free(tkey *k)
{
	for (size_t i = 0; i < k->n; i++)
		free(k->part[i]);
	k->n = 0;
}

/* A dotted key: simple keys joined by '.', whitespace around the dots. */
static int key(tp *t, tkey *k)
{
	k->n = 0;
	for (;;) {
		char *part;
		size_t len;
		skip_ws(t);
		if (k->n == KEY_PARTS)
			return fail(t, "a key of more than %d parts", KEY_PARTS);
		if (!at_end(t) && (*t->p == '"' || *t->p == '\'')) {
			if (string(t, 0, &part, &len))
				return -1;
		} else {
			const char *b = t->p;
			while (!at_end(t) && bare_char(*t->p))
				t->p++;
			if (t->p == b)
				return fail(t, "expected a key");
			len = (size_t)(t->p - b);
			part = cof_malloc(len + 1);
			memcpy(part, b, len);
			part[len] = '\0';
		}
		k->len[k->n] = len;
		k->part[k->n++] = part;
		skip_ws(t);
		if (at_end(t) || *t->p != '.')
			return 0;
		t->p++;
	}
}

/* ------------------------------------------------------------ values */

static int value(tp *t, int depth, json_t **out);

static int digits_ok(const char *s, size_t n, int (*isd)(int))
{
	/* digits with single underscores between them */
	if (!n || !isd((unsigned char)s[0]) || !isd((unsigned char)s[n - 1]))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (s[i] == '_' ? !isd((unsigned char)s[i + 1]) : !isd((unsigned char)s[i]))
			return 0;
	return 1;
}

static int is_dec(int c) { return c >= '0' && c <= '9'; }
static int is_hex(int c) { return cof_hex_value(c) >= 0; }
static int is_oct(int c) { return c >= '0' && c <= '7'; }
static int is_bin(int c) { return c == '0' || c == '1'; }

/* Copies `s` (n bytes) without underscores into out. */
static void strip_us(const char *s, size_t n, char *out)
{
	size_t j = 0;
	for (size_t i = 0; i < n; i++)
		if (s[i] != '_')
			out[j++] = s[i];
	out[j] = '\0';
}

/* RFC 3339 pieces, as TOML takes them: kept as their text. */
static int two(const char *s, int lo, int hi)
{
	if (!is_dec(s[0]) || !is_dec(s[1]))
		return -1;
	int v = (s[0] - '0') * 10 + (s[1] - '0');
	return v >= lo && v <= hi ? v : -1;
}

static size_t time_len(const char *s, size_t n)
{
	size_t i;

	if (n < 8 || two(s, 0, 23) < 0 || s[2] != ':' || two(s + 3, 0, 59) < 0 || s[5] != ':' ||
	    two(s + 6, 0, 60) < 0)
		return 0;
	i = 8;
	if (i < n && s[i] == '.') {
		size_t b = ++i;
		while (i < n && is_dec(s[i]))
			i++;
		if (i == b)
			return 0;
	}
	return i;
}

static size_t date_len(const char *s, size_t n)
{
	if (n < 10 || !is_dec(s[0]) || !is_dec(s[1]) || !is_dec(s[2]) || !is_dec(s[3]) ||
	    s[4] != '-' || two(s + 5, 1, 12) < 0 || s[7] != '-' || two(s + 8, 1, 31) < 0)
		return 0;
	int y = atoi(s), m = two(s + 5, 1, 12), d = two(s + 8, 1, 31);
	static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	if (d > mdays[m - 1] || (m == 2 && d == 29 && !(y % 4 == 0 && (y % 100 || y % 400 == 0))))
		return 0;
	return 10;
}

/* A date-time, date or time at t->p (the token is [s, s+n)): 1 and *out as
 * its text when it is one, 0 when it is not, -1 when it looks like one but
 * is malformed. */
static int datetime(tp *t, const char *s, size_t n, json_t **out)
{
	size_t i = date_len(s, n);

	if (!i) {
		if (n >= 3 && is_dec(s[0]) && is_dec(s[1]) && s[2] == ':') {
			size_t k = time_len(s, n);
			if (k != n)
				return fail(t, "a malformed time");
			*out = json_stringn(s, n);
			t->p += n;
			return 1;
		}
		if (n >= 5 && is_dec(s[0]) && is_dec(s[1]) && is_dec(s[2]) && is_dec(s[3]) &&
		    s[4] == '-')
			return fail(t, "a malformed date");
		return 0;
	}
	/* the time after a space counts only when a time follows it */
	if (i < (size_t)(t->end - s) && (s[i] == 'T' || s[i] == 't' ||
			       (s[i] == ' ' && time_len(s + i + 1, (size_t)(t->end - s) - i - 1)))) {
		size_t rest = (size_t)(t->end - s) - i - 1, k = time_len(s + i + 1, rest);
		if (!k)
			return fail(t, "a malformed time in a date-time");
		i += 1 + k;
		if (i < (size_t)(t->end - s) && (s[i] == 'Z' || s[i] == 'z'))
			i++;
		else if (i < (size_t)(t->end - s) && (s[i] == '+' || s[i] == '-')) {
			if ((size_t)(t->end - s) - i < 6 || two(s + i + 1, 0, 23) < 0 ||
			    s[i + 3] != ':' || two(s + i + 4, 0, 59) < 0)
				return fail(t, "a malformed offset in a date-time");
			i += 6;
		}
	}
	/* RFC 3339's form: 'T' and 'Z' upper-case, 'T' for the space TOML allows */
	char *norm = cof_malloc(i + 1);
	memcpy(norm, s, i);
	norm[i] = '\0';
	if (i > 10)
		norm[10] = 'T';
	if (norm[i - 1] == 'z')
		norm[i - 1] = 'Z';
	*out = json_stringn(norm, i);
	free(norm);
	t->p = s + i;
	return 1;
}

/* An integer, float, boolean or date-time at t->p. */
static int scalar(tp *t, json_t **out)
{
	const char *s = t->p;
	size_t n = 0;
	char buf[128];

	while (s + n < t->end && (isalnum((unsigned char)s[n]) || strchr("+-._:", s[n])))
		n++;
	if (n == 0)
		return fail(t, "expected a value");
	if ((n == 4 && !memcmp(s, "true", 4)) || (n == 5 && !memcmp(s, "false", 5))) {
		*out = json_boolean(n == 4);
		t->p += n;
		return 0;
	}
	int d = datetime(t, s, n, out);
	if (d)
		return d < 0 ? -1 : 0;
	if (n >= sizeof buf)
		return fail(t, "a number of more than %zu characters", sizeof buf - 1);
	const char *m = s;
	size_t mn = n;
	int neg = 0, sign = 0;
	if (*m == '+' || *m == '-')
		neg = *m == '-', sign = 1, m++, mn--;
	if (mn == 3 && (!memcmp(m, "inf", 3) || !memcmp(m, "nan", 3))) {
		/* JSON has no such numbers (jansson refuses them): their names */
		*out = json_string(m[0] == 'n' ? "nan" : neg ? "-inf" : "inf");
		t->p += n;
		return 0;
	}
	if (mn > 2 && m[0] == '0' && (m[1] == 'x' || m[1] == 'o' || m[1] == 'b')) {
		int base = m[1] == 'x' ? 16 : m[1] == 'o' ? 8 : 2;
		int (*isd)(int) = base == 16 ? is_hex : base == 8 ? is_oct : is_bin;
		if (sign || !digits_ok(m + 2, mn - 2, isd))
			return fail(t, "a malformed %s integer",
				    base == 16 ? "hexadecimal" : base == 8 ? "octal" : "binary");
		strip_us(m + 2, mn - 2, buf);
		errno = 0;
		unsigned long long v = strtoull(buf, NULL, base);
		if (errno || v > INT64_MAX)
			return fail(t, "an integer out of the 64-bit range");
		*out = json_integer((json_int_t)v);
		t->p += n;
		return 0;
	}
	/* decimal: int [frac] [exp] */
	size_t ip = 0;
	while (ip < mn && (is_dec(m[ip]) || m[ip] == '_'))
		ip++;
	if (!digits_ok(m, ip, is_dec))
		return fail(t, "expected a value");
	if (ip > 1 && m[0] == '0')
		return fail(t, "a number with a leading zero");
	size_t i = ip;
	int is_float = 0;
	if (i < mn && m[i] == '.') {
		size_t b = ++i;
		while (i < mn && (is_dec(m[i]) || m[i] == '_'))
			i++;
		if (!digits_ok(m + b, i - b, is_dec))
			return fail(t, "a malformed fraction");
		is_float = 1;
	}
	if (i < mn && (m[i] == 'e' || m[i] == 'E')) {
		i++;
		if (i < mn && (m[i] == '+' || m[i] == '-'))
			i++;
		size_t b = i;
		while (i < mn && (is_dec(m[i]) || m[i] == '_'))
			i++;
		if (!digits_ok(m + b, i - b, is_dec))
			return fail(t, "a malformed exponent");
		is_float = 1;
	}
	if (i != mn)
		return fail(t, "a malformed number");
	strip_us(s, n, buf);
	errno = 0;
	if (is_float) {
		double v = strtod(buf, NULL);
		if (errno == ERANGE && isinf(v))
			return fail(t, "a float out of range");
		*out = json_real(v);
	} else {
		long long v = strtoll(buf, NULL, 10);
		if (errno == ERANGE)
			return fail(t, "an integer out of the 64-bit range");
		*out = json_integer(v);
	}
	t->p += n;
	return 0;
}

static int table_set(tp *t, json_t *tbl, tkey *k, json_t *v, unsigned dotted_flag);

static int array(tp *t, int depth, json_t **out)
{
	json_t *a = json_array();

	t->p++; /* [ */
	for (;;) {
		json_t *v;
		if (skip_wcn(t))
			goto bad;
		if (peek(t, 0) == ']') {
			t->p++;
			break;
		}
		if (value(t, depth + 1, &v))
			goto bad;
		json_array_append_new(a, v);
		if (skip_wcn(t))
			goto bad;
		if (peek(t, 0) == ',') {
			t->p++;
			continue;
		}
		if (peek(t, 0) == ']') {
			t->p++;
			break;
		}
		fail(t, "expected ',' or ']' in an array");
		goto bad;
	}
	fl_set(t, a, T_FROZEN);
	*out = a;
	return 0;
bad:
	json_decref(a);
	return -1;
}

static int inline_table(tp *t, int depth, json_t **out)
{
	json_t *o = json_object();
	tkey k = {{0}, {0}, 0};

	t->p++; /* { */
	skip_ws(t);
	if (peek(t, 0) == '}') {
		t->p++;
		goto done;
	}
	for (;;) {
		json_t *v;
		if (key(t, &k))
			goto bad;
		if (peek(t, 0) != '=') {
			fail(t, "expected '=' after a key");
			goto bad;
		}
		t->p++;
		skip_ws(t);
		if (value(t, depth + 1, &v))
			goto bad;
		if (table_set(t, o, &k, v, T_DOTTED))
			goto bad;
		key_free(&k);
		skip_ws(t);
		if (peek(t, 0) == ',') {
			t->p++;
			skip_ws(t);
			if (peek(t, 0) == '}') {
				fail(t, "a trailing ',' in an inline table");
				goto bad;
			}
			continue;
		}
		if (peek(t, 0) == '}') {
			t->p++;
			break;
		}
		fail(t, "expected ',' or '}' in an inline table");
		goto bad;
	}
done:
	/* frozen, with every table made inside it */
	fl_set(t, o, T_FROZEN);
	*out = o;
	return 0;
bad:
	key_free(&k);
	json_decref(o);
	return -1;
}

static int value(tp *t, int depth, json_t **out)
{
	int c = peek(t, 0);

	*out = NULL;
	if (depth > COF_TOML_DEPTH)
		return fail(t, "values nested deeper than %d", COF_TOML_DEPTH);
	if (c == '"' || c == '\'') {
		char *s;
		size_t n;
		if (string(t, 1, &s, &n))
			return -1;
		*out = json_stringn(s, n);
		free(s);
		return *out ? 0 : fail(t, "out of memory");
	}
	if (c == '[')
		return array(t, depth, out);
	if (c == '{')
		return inline_table(t, depth, out);
	return scalar(t, out);
}

/* ------------------------------------------------------------ tables */

/* Sets k (dotted, relative to tbl) to v: the parts before the last are
 * tables made (flag `dotted_flag`) or extended when made that way; the last
 * must be new. Takes v. */
static int table_set(tp *t, json_t *tbl, tkey *k, json_t *v, unsigned dotted_flag)
{
	if (!v)
		return fail(t, "out of memory");
	for (size_t i = 0; i + 1 < k->n; i++) {
		json_t *sub = json_object_getn(tbl, k->part[i], k->len[i]);
		if (!sub) {
			sub = json_object();
			json_object_setn_new(tbl, k->part[i], k->len[i], sub);
			fl_set(t, sub, dotted_flag);
		} else if (!json_is_object(sub) || (fl_get(t, sub) & (T_FROZEN | T_EXPLICIT |
								      T_IMPLICIT))) {
			json_decref(v);
			return fail(t, "key '%.100s' is defined already", k->part[i]);
		}
		tbl = sub;
	}
	if (json_object_getn(tbl, k->part[k->n - 1], k->len[k->n - 1])) {
		json_decref(v);
		return fail(t, "key '%.100s' is defined already", k->part[k->n - 1]);
	}
	json_object_setn_new(tbl, k->part[k->n - 1], k->len[k->n - 1], v);
	return 0;
}

/* A [header] or [[header]] line. */
static int header(tp *t)
{
	int aot = peek(t, 1) == '[';
	tkey k = {{0}, {0}, 0};
	json_t *tbl = t->root;
	int rc = -1;

	t->p += aot ? 2 : 1;
	if (key(t, &k))
		goto out;
	if (peek(t, 0) != ']' || (aot && peek(t, 1) != ']')) {
		fail(t, "expected '%s' to close a table header", aot ? "]]" : "]");
		goto out;
	}
	t->p += aot ? 2 : 1;
	cof_buf_reset(&t->path);
	for (size_t i = 0; i + 1 < k.n; i++) {
		json_t *sub = json_object_getn(tbl, k.part[i], k.len[i]);
		if (t->lines)
			cof_buf_addf(&t->path, "%s%s", i ? "." : "", k.part[i]);
		if (!sub) {
			sub = json_object();
			json_object_setn_new(tbl, k.part[i], k.len[i], sub);
			fl_set(t, sub, T_IMPLICIT);
		} else if (json_is_array(sub) && (fl_get(t, sub) & T_AOT)) {
			if (t->lines)
				cof_buf_addf(&t->path, "[%zu]", json_array_size(sub) - 1);
			sub = json_array_get(sub, json_array_size(sub) - 1);
		} else if (!json_is_object(sub) || (fl_get(t, sub) & T_FROZEN)) {
			fail(t, "'%.100s' is not a table that can be extended", k.part[i]);
			goto out;
		}
		tbl = sub;
	}
	const char *last = k.part[k.n - 1];
	size_t lastlen = k.len[k.n - 1];
	json_t *cur = json_object_getn(tbl, last, lastlen);
	if (aot) {
		json_t *nt = json_object();
		if (!cur) {
			cur = json_array();
			json_object_setn_new(tbl, last, lastlen, cur);
			fl_set(t, cur, T_AOT);
		} else if (!json_is_array(cur) || !(fl_get(t, cur) & T_AOT)) {
			json_decref(nt);
			fail(t, "'%.100s' is defined already, not as an array of tables", last);
			goto out;
		}
		json_array_append_new(cur, nt);
		fl_set(t, nt, T_EXPLICIT);
		t->cur = nt;
		if (t->lines)
			cof_buf_addf(&t->path, "%s%s[%zu]", k.n > 1 ? "." : "", last,
				     json_array_size(cur) - 1);
	} else {
		if (!cur) {
			cur = json_object();
			json_object_setn_new(tbl, last, lastlen, cur);
		} else if (!json_is_object(cur) || (fl_get(t, cur) & ~(unsigned)T_IMPLICIT)) {
			fail(t, "table '%.100s' is defined already", last);
			goto out;
		}
		fl_set(t, cur, T_EXPLICIT);
		t->cur = cur;
		if (t->lines)
			cof_buf_addf(&t->path, "%s%s", k.n > 1 ? "." : "", last);
	}
	if (t->lines && t->path.data)
		json_object_set_new(t->lines, t->path.data, json_integer(cur_line(t)));
	rc = line_end(t);
out:
	key_free(&k);
	return rc;
}

int cof_toml_parse_lines(const char *text, size_t len, json_t **out, json_t **lines,
			 cof_err *err)
{
	tp t = {.s = text, .p = text, .end = text + len, .err = err, .path = COF_BUF_INIT,
		.lp = text, .line = 1};

	*out = NULL;
	if (lines)
		*lines = NULL;
	if (len > COF_TOML_MAX)
		return cof_error(err, COF_EVALIDATION, "the TOML text is %zu bytes; the limit is %d",
				 len, COF_TOML_MAX);
	for (size_t i = 0, n; i < len; i += n) { /* the first bad byte, by its place */
		unsigned c = (unsigned char)text[i];
		n = c < 0x80 ? 1 : c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
		if (!c || n > len - i || !cof_utf8_valid(text + i, n)) {
			t.p = text + i;
			if (!c)
				return fail(&t, "a NUL byte (U+0000 is not allowed in TOML text)");
			return fail(&t, "the text is not valid UTF-8 (byte 0x%02X)", c);
		}
	}
	t.root = t.cur = json_object();
	if (lines)
		t.lines = json_object();
	if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3))
		t.p += 3; /* a byte order mark */
	while (!at_end(&t)) {
		tkey k = {{0}, {0}, 0};
		json_t *v;
		skip_ws(&t);
		if (skip_comment(&t))
			break;
		if (at_end(&t) || newline(&t))
			continue;
		if (*t.p == '[') {
			if (header(&t))
				break;
			continue;
		}
		if (key(&t, &k)) {
			key_free(&k);
			break;
		}
		if (peek(&t, 0) != '=') {
			key_free(&k);
			fail(&t, "expected '=' after a key");
			break;
		}
		note_key(&t, t.path.data ? t.path.data : "", (const char *const *)k.part, k.n);
		t.p++;
		skip_ws(&t);
		if (value(&t, 0, &v) || table_set(&t, t.cur, &k, v, T_DOTTED)) {
			key_free(&k);
			break;
		}
		key_free(&k);
		if (line_end(&t))
			break;
	}
	free(t.fl.keys);
	free(t.fl.vals);
	cof_buf_release(&t.path);
	if (t.failed) {
		json_decref(t.root);
		json_decref(t.lines);
		return -1;
	}
	*out = t.root;
	if (lines)
		*lines = t.lines;
	return 0;
}

int cof_toml_parse(const char *text, size_t len, json_t **out, cof_err *err)
{
	return cof_toml_parse_lines(text, len, out, NULL, err);
}
