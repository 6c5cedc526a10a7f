/*
 * range.c — parses the HTTP `Range` header (see range.h for the contract).
 */
#include "util/range.h"

#include <stddef.h>

/* One parsed range-spec: first/last are -1 when absent. */
typedef struct range_spec {
	int64_t first;
	int64_t last;
} range_spec;

/* Skips optional white space (SP / HTAB). */
static const char *skip_ows(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* Reads a run of decimal digits at *pp into *out, saturating at INT64_MAX.
 * Returns 0 with *pp advanced, or -1 when there is no digit. */
static int read_digits(const char **pp, int64_t *out)
{
	const char *p = *pp;
	int64_t v = 0;

	if (*p < '0' || *p > '9')
		return -1;
	for (; *p >= '0' && *p <= '9'; p++) {
		int d = *p - '0';
		if (v > (INT64_MAX - d) / 10)
			v = INT64_MAX;
		else
			v = v * 10 + d;
	}
	*pp = p;
	*out = v;
	return 0;
}

/* Parses one range-spec ("a-b", "a-", "-n") from *pp up to a ',' or the end.
 * Returns 0 with *pp on the ',' or NUL, -1 when malformed. */
static int read_spec(const char **pp, range_spec *rs)
{
	const char *p = skip_ows(*pp);

	rs->first = -1;
	rs->last = -1;
	if (*p != '-' && read_digits(&p, &rs->first) < 0)
		return -1;
	if (*p != '-')
		return -1;
	p++;
	if (*p >= '0' && *p <= '9' && read_digits(&p, &rs->last) < 0)
		return -1;
	if (rs->first < 0 && rs->last < 0)
		return -1; /* "-" alone */
	if (rs->first >= 0 && rs->last >= 0 && rs->last < rs->first)
		return -1; /* "5-3" is invalid syntax, hence ignored */
	p = skip_ows(p);
	if (*p != ',' && *p != '\0')
		return -1;
	*pp = p;
	return 0;
}

/* True when `p` starts with "bytes=" in any letter case. */
static int has_bytes_unit(const char *p)
{
	static const char unit[] = "bytes=";
	for (size_t i = 0; i < sizeof(unit) - 1; i++) {
		char c = p[i];
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (c != unit[i])
			return 0;
	}
	return 1;
}

/* Applies one syntactically valid spec to `size`: 1, or -1 (see range.h). */
static int resolve(const range_spec *rs, int64_t size, int64_t *start, int64_t *len)
{
	if (rs->first < 0) { /* suffix: the last n bytes */
		/* RFC 9110 14.1.2: a suffix of an empty representation is unsatisfiable. */
		if (rs->last == 0 || size == 0)
			return -1;
		int64_t n = rs->last < size ? rs->last : size;
		*start = size - n;
		*len = n;
		return 1;
	}
	if (rs->first >= size)
		return -1;
	int64_t last = (rs->last < 0 || rs->last >= size) ? size - 1 : rs->last;
	*start = rs->first;
	*len = last - rs->first + 1;
	return 1;
}

int cof_range_parse(const char *header, int64_t size, int64_t *start, int64_t *len)
{
	range_spec rs = { -1, -1 }, cur;
	int count = 0;

	if (header == NULL || size < 0 || !has_bytes_unit(header))
		return 0;
	const char *p = header + 6;
	for (;;) {
		const char *q = skip_ows(p);
		if (*q == ',' || *q == '\0') { /* empty list element: allowed */
			p = q;
		} else {
			if (read_spec(&p, &cur) < 0)
				return 0;
			if (++count == 1)
				rs = cur;
		}
		if (*p == '\0')
			break;
		p++; /* the ',' */
	}
	if (count != 1)
		return 0; /* none, or several: serve the whole representation */
	return resolve(&rs, size, start, len);
}

int cof_copy_range_parse(const char *v, int64_t *first, int64_t *last)
{
	const char *p;
	int64_t a, b;

	if (!v || v[0] != 'b' || v[1] != 'y' || v[2] != 't' || v[3] != 'e' || v[4] != 's' ||
	    v[5] != '=')
		return -1;
	p = v + 6;
	if (read_digits(&p, &a) || *p++ != '-' || read_digits(&p, &b) || *p || a > b)
		return -1;
	*first = a;
	*last = b;
	return 0;
}
