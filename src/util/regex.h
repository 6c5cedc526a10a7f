/*
 * regex.h — the one way a caller's search pattern becomes a PCRE2 program:
 * UTF mode that tolerates invalid UTF-8 in the subject, JIT when available.
 * Shared by the agent's grep (src/agent/search.c) and the relay client's
 * search (src/relay/lfs_search.c), so both refuse the same patterns the same way.
 */
#ifndef COF_UTIL_REGEX_H
#define COF_UTIL_REGEX_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include "coffer.h"

/* Compiles `pattern`; NULL with COF_EVALIDATION naming the error and its
 * position for a bad one. Free with pcre2_code_free. */
pcre2_code *cof_regex_compile(const char *pattern, int caseless, cof_err *err);

#endif
