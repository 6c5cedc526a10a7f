/*
 * toml.h — TOML 1.0 (https://toml.io/en/v1.0.0) into JSON, for seed 000's
 * deployment.toml (`coffer deploy`). Our own parser: Debian ships no C TOML
 * library. Its text is untrusted (fuzz/fuzz_toml.c); the checks are the
 * spec's (docs/cli.md says how to run the TOML test suite against it).
 */
#ifndef COFFER_UTIL_TOML_H
#define COFFER_UTIL_TOML_H

#include <stddef.h>
#include <jansson.h>
#include "coffer.h"

#define COF_TOML_MAX (1 << 20) /* bytes of text */
#define COF_TOML_DEPTH 64      /* nesting of arrays and inline tables */

/* Parses `len` bytes of TOML into *out, a JSON object: tables are objects,
 * arrays of tables arrays of objects, integers JSON integers (64-bit),
 * floats reals (inf and nan, which JSON has not, as the strings "inf",
 * "-inf" and "nan"), booleans booleans, strings strings, and
 * date-times, dates and times their RFC 3339 text (as written, but with
 * 'T' between date and time and 'Z' upper-case). 0, or -1 with
 * COF_EVALIDATION "line L, column C: what" (a key or table defined twice, a
 * bad escape, an integer out of range, a key holding U+0000, which
 * jansson's objects cannot hold, ...) and *out NULL. */
int cof_toml_parse(const char *text, size_t len, json_t **out, cof_err *err);

#endif
