/*
 * regex.c — see regex.h.
 */
#include <stdio.h>
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

int cof_regex_open(cof_regex *rx, const char *pattern, int caseless, int64_t budget_ms,
		   cof_err *err)
{
	*rx = (cof_regex){0};
	rx->budget_ms = budget_ms > 0 ? budget_ms : COF_REGEX_BUDGET_MS;
	if (!(rx->re = cof_regex_compile(pattern, caseless, err)))
		return -1;
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
	pcre2_match_context_free(rx->mc);
	pcre2_match_data_free(rx->md);
	pcre2_code_free(rx->re);
	*rx = (cof_regex){0};
}
