/*
 * regex.c — see regex.h.
 */
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
