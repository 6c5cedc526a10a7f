/*
 * regex.c — see regex.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/regex.h"
#include "util/util.h"

pcre2_code *cof_regex_compile(const char *pattern, int caseless, cof_err *err)
{
	int code;
	PCRE2_SIZE off;
	pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED,
				       PCRE2_UTF | PCRE2_MATCH_INVALID_UTF |
				       (caseless ? PCRE2_CASELESS : 0), &code, &off, NULL);
	if (!re) {
		PCRE2_UCHAR msg[256];
		pcre2_get_error_message(code, msg, sizeof msg);
		cof_error(err, COF_EVALIDATION, "'pattern' is not a valid regex: %s at position %zu",
			  (char *)msg, (size_t)off);
		return NULL;
	}
	pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* falls back to the interpreter */
	return re;
}

/* True when `p` matches in a buffer of lines in multi-line mode exactly as in
 * each line alone. What can tell them apart is kept out: what looks past a
 * line's ends or moves the match start (lookarounds and every other "(?"
 * but "(?:", \A \z \Z \G \K), what commits to one path so that a match
 * that ran on into the next line cannot give back (atomic groups, possessive
 * repeats, "(*" verbs), and \Q quoting, which this scan does not follow. */
static int whole_safe(const char *p)
{
	for (; *p; p++) {
		if (*p == '\\') {
			if (!p[1] || strchr("AzZGKQE", p[1]))
				return 0;
			p++;
		} else if (*p == '(' && (p[1] == '*' || (p[1] == '?' && p[2] != ':'))) {
			return 0;
		} else if (strchr("*+?}", *p) && p[1] == '+') {
			return 0;
		}
	}
	return 1;
}

/* True when `p` is a plain string to find with memmem: no metacharacter and
 * no newline (which no line holds). */
static int literal(const char *p)
{
	return *p && !p[strcspn(p, "\\^$.|?*+()[]{}\n")];
}

int cof_regex_open(cof_regex *rx, const char *pattern, int caseless, int64_t budget_ms,
		   cof_err *err)
{
	*rx = (cof_regex){0};
	rx->budget_ms = budget_ms > 0 ? budget_ms : COF_REGEX_BUDGET_MS;
	if (!(rx->re = cof_regex_compile(pattern, caseless, err)))
		return -1;
	if (!caseless && literal(pattern)) {
		if (!(rx->lit = strdup(pattern)))
			return cof_error(err, COF_EINTERNAL, "out of memory");
		rx->litlen = strlen(pattern);
	} else if (whole_safe(pattern)) {
		int code;
		PCRE2_SIZE off;
		/* NULL (out of memory) leaves line by line */
		rx->whole = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED,
					  PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | PCRE2_MULTILINE |
					  (caseless ? PCRE2_CASELESS : 0), &code, &off, NULL);
		if (rx->whole)
			pcre2_jit_compile(rx->whole, PCRE2_JIT_COMPLETE);
	}
	rx->md = pcre2_match_data_create_from_pattern(rx->re, NULL);
	rx->mc = pcre2_match_context_create(NULL);
	if (!rx->md || !rx->mc)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	pcre2_set_match_limit(rx->mc, COF_REGEX_MATCH_LIMIT);
	pcre2_set_depth_limit(rx->mc, COF_REGEX_DEPTH_LIMIT);
	pcre2_set_heap_limit(rx->mc, COF_REGEX_HEAP_KIB);
	rx->deadline = cof_mono_ms() + rx->budget_ms;
	return 0;
}

int cof_regex_match(cof_regex *rx, const char *s, size_t n)
{
	if (rx->over)
		return -1;
	if (cof_mono_ms() >= rx->deadline) {
		rx->over = COF_REGEX_OVER_TIME;
		return -1;
	}
	int r = pcre2_match(rx->re, (PCRE2_SPTR)s, n, 0, 0, rx->md, rx->mc);
	if (r >= 0)
		return 1;
	switch (r) {
	case PCRE2_ERROR_NOMATCH:
	case PCRE2_ERROR_PARTIAL:
		return 0;
	case PCRE2_ERROR_MATCHLIMIT:
		rx->over = COF_REGEX_OVER_MATCH;
		break;
	case PCRE2_ERROR_DEPTHLIMIT:
		rx->over = COF_REGEX_OVER_DEPTH;
		break;
	case PCRE2_ERROR_HEAPLIMIT:
	case PCRE2_ERROR_JIT_STACKLIMIT:
		rx->over = COF_REGEX_OVER_HEAP;
		break;
	default:
		/* PCRE2_MATCH_INVALID_UTF makes bad UTF-8 a non-match, so what
		 * is left is running out of memory */
		rx->over = COF_REGEX_FAILED;
	}
	return -1;
}

int cof_regex_share(cof_regex *dst, const cof_regex *src, cof_err *err)
{
	*dst = *src;
	dst->shared = 1;
	if (!(dst->md = pcre2_match_data_create_from_pattern(src->re, NULL)))
		return cof_error(err, COF_EINTERNAL, "out of memory");
	return 0;
}

#define CHUNK_BYTES (1 << 20)   /* one whole-buffer call at most; then the budget */

/* Line by line over buf[from..end) (`end` is a line's end or after a '\n'). */
static int lines_from(cof_regex *rx, const char *buf, size_t end, size_t from, size_t *ls,
		      size_t *le)
{
	while (from < end) {
		const char *nl = memchr(buf + from, '\n', end - from);
		size_t e = nl ? (size_t)(nl - buf) : end;
		int r = cof_regex_match(rx, buf + from, e - from);
		*ls = from;
		*le = e;
		if (r)
			return r;
		from = e + 1;
	}
	return 0;
}

/* The line of buf[from..end) that holds offset `at`. */
static void line_of(const char *buf, size_t end, size_t from, size_t at, size_t *ls,
		    size_t *le)
{
	const char *nl = at > from ? memrchr(buf + from, '\n', at - from) : NULL;
	const char *e = at < end ? memchr(buf + at, '\n', end - at) : NULL;

	*ls = nl ? (size_t)(nl - buf) + 1 : from;
	*le = e ? (size_t)(e - buf) : end;
}

/* cof_regex_next_line within one chunk buf[from..end). */
static int chunk_next(cof_regex *rx, const char *buf, size_t end, size_t from, size_t *ls,
		      size_t *le)
{
	if (rx->lit) {
		const char *hit = memmem(buf + from, end - from, rx->lit, rx->litlen);
		if (hit)
			line_of(buf, end, from, (size_t)(hit - buf), ls, le);
		return hit != NULL;
	}
	if (!rx->whole)
		return lines_from(rx, buf, end, from, ls, le);
	while (from < end) {
		int r = pcre2_match(rx->whole, (PCRE2_SPTR)buf, end, from, 0, rx->md, rx->mc);
		if (r == PCRE2_ERROR_NOMATCH)
			return 0;
		if (r < 0) /* a limit over many lines: each line alone decides */
			return lines_from(rx, buf, end, from, ls, le);
		PCRE2_SIZE *ov = pcre2_get_ovector_pointer(rx->md);
		/* an empty match after the last '\n' is on no line */
		if (ov[0] == end && buf[end - 1] == '\n')
			return 0;
		line_of(buf, end, from, ov[0], ls, le);
		if (ov[1] <= *le)
			return 1;
		/* The match ran on past the line's end: the line alone decides. */
		if ((r = cof_regex_match(rx, buf + *ls, *le - *ls)))
			return r;
		from = *le + 1;
	}
	return 0;
}

int cof_regex_next_line(cof_regex *rx, const char *buf, size_t len, size_t from,
			size_t *ls, size_t *le)
{
	while (from < len) {
		size_t end = len;
		*ls = *le = from;
		if (rx->over)
			return -1;
		if (cof_mono_ms() >= rx->deadline) {
			rx->over = COF_REGEX_OVER_TIME;
			return -1;
		}
		if (len - from > CHUNK_BYTES) {
			const char *nl = memchr(buf + from + CHUNK_BYTES, '\n',
						len - from - CHUNK_BYTES);
			end = nl ? (size_t)(nl - buf) + 1 : len;
		}
		int r = chunk_next(rx, buf, end, from, ls, le);
		if (r)
			return r;
		from = end;
	}
	return 0;
}

const char *cof_regex_limit(const cof_regex *rx, char *buf, size_t bufsz)
{
	switch (rx->over) {
	case COF_REGEX_OVER_MATCH:
		snprintf(buf, bufsz, "the regex match limit (%d steps a line)",
			 COF_REGEX_MATCH_LIMIT);
		break;
	case COF_REGEX_OVER_DEPTH:
		snprintf(buf, bufsz, "the regex depth limit (%d a line)", COF_REGEX_DEPTH_LIMIT);
		break;
	case COF_REGEX_OVER_HEAP:
		snprintf(buf, bufsz, "the regex heap limit (%d MiB a line)",
			 COF_REGEX_HEAP_KIB / 1024);
		break;
	case COF_REGEX_OVER_TIME:
		snprintf(buf, bufsz, "the search's time budget (%lld s)",
			 (long long)(rx->budget_ms / 1000));
		break;
	default:
		snprintf(buf, bufsz, "a regex matching error (out of memory)");
	}
	return buf;
}

const char *cof_regex_limit_key(const cof_regex *rx)
{
	switch (rx->over) {
	case COF_REGEX_OVER_MATCH:
		return "matchLimit";
	case COF_REGEX_OVER_DEPTH:
		return "depthLimit";
	case COF_REGEX_OVER_HEAP:
		return "heapLimit";
	case COF_REGEX_OVER_TIME:
		return "timeBudget";
	default:
		return "matchError";
	}
}

void cof_regex_close(cof_regex *rx)
{
	pcre2_match_data_free(rx->md);
	if (!rx->shared) {
		pcre2_match_context_free(rx->mc);
		pcre2_code_free(rx->re);
		pcre2_code_free(rx->whole);
		free((char *)rx->lit);
	}
	*rx = (cof_regex){0};
}
