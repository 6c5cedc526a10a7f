/*
 * range.h — the HTTP `Range` request header, for a single byte range.
 *
 * Pure: no allocation, no global state, safe on any input (it is fuzzed).
 */
#ifndef COF_RANGE_H
#define COF_RANGE_H

#include <stdint.h>

/*
 * Parses a `Range` header value against a representation of `size` bytes
 * (RFC 9110 section 14). Returns:
 *    1  one satisfiable range: *start and *len (len >= 1) describe it;
 *    0  ignore the header and send the whole representation with 200:
 *       NULL or malformed header, a unit other than `bytes`, several ranges;
 *   -1  unsatisfiable: answer 416 with `Content-Range: bytes *\/SIZE`; every
 *       range of an empty representation is (RFC 9110 14.1.1).
 * Forms: `bytes=a-b` (b past the end is clamped), `bytes=a-`, `bytes=-n`
 * (the last n bytes; n >= size means all of it; n = 0 is unsatisfiable).
 * The unit is case-insensitive; spaces and tabs around a range are allowed.
 * Numbers too big for int64 saturate, so `bytes=99999999999999999999-` is -1.
 * `start` and `len` are only written when 1 is returned.
 */
int cof_range_parse(const char *header, int64_t size, int64_t *start, int64_t *len);

/*
 * Parses S3's x-amz-copy-source-range: exactly "bytes=FIRST-LAST", two runs of
 * digits, FIRST <= LAST (no spaces, no other form, one range). 0 with *first
 * and *last, or -1 (S3's InvalidArgument); numbers saturate at INT64_MAX.
 */
int cof_copy_range_parse(const char *v, int64_t *first, int64_t *last);

#endif /* COF_RANGE_H */
