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

#define COF_TOML_MAX (1 << 20) /* bytes of text; more is refused */
#define COF_TOML_DEPTH 64      /* nesting of arrays and inline tables; deeper is refused */
/* a dotted key or table header has at most 64 parts; a number at most 127 characters */

/* Parses `len` bytes of TOML into *out, a JSON object: tables are objects,
 * arrays of tables arrays of objects, integers JSON integers (64-bit),
 * floats reals (inf and nan, which JSON has not, as the strings "inf",
 * "-inf" and "nan"), booleans booleans, strings strings, and
 * date-times, dates and times their RFC 3339 text (as written, but with
 * 'T' between date and time and 'Z' upper-case). 0, or -1 with
 * COF_EVALIDATION "line L, column C: what" (a key or table defined twice,
 * a bad escape, an integer out of range, bytes not UTF-8, ...; every error
 * but a text over COF_TOML_MAX names its place) and *out NULL. A quoted key
 * may hold U+0000 (as in "a\u0000b"): such a key is set with its length
 * (json_object_keylen). */
int cof_toml_parse(const char *text, size_t len, json_t **out, cof_err *err);
/* cof_toml_parse, and when `lines` is not NULL, on success *lines an object
 * giving the line (from 1) where each key and table header was first written,
 * by its path: keys joined by '.', an array of tables' entry by its index
 * ("agents[1].sandbox.scratch", "agents[1].sandbox", "agents[1]"). Keys
 * inside inline tables and arrays are not listed: the key holding them is.
 * For messages only: a key holding '.' or '[' makes paths ambiguous. */
int cof_toml_parse_lines(const char *text, size_t len, json_t **out, json_t **lines,
			 cof_err *err);

#endif
