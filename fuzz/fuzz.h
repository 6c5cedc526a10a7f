/*
 * fuzz.h — helpers shared by the libFuzzer targets in fuzz/ (header only, so
 * each target stays one translation unit). See scripts/fuzz for how they are
 * built and run.
 */
#ifndef COF_FUZZ_H
#define COF_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An invariant that must hold: abort() so libFuzzer saves the input. */
#define FUZZ_CHECK(cond, ...)                                                  \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: invariant '%s' broken: ",      \
				__FILE__, __LINE__, #cond);                    \
			fprintf(stderr, __VA_ARGS__);                          \
			fputc('\n', stderr);                                   \
			abort();                                               \
		}                                                              \
	} while (0)

/* A copy of `data` of exactly `len` bytes (no terminator), so that ASan sees
 * any read past the end of a length-counted input. */
static inline char *fuzz_dup_exact(const uint8_t *data, size_t len)
{
	char *p = malloc(len ? len : 1);
	if (!p)
		abort();
	if (len)
		memcpy(p, data, len);
	return p;
}

/* A NUL-terminated copy of `data` (which may hold NULs of its own). */
static inline char *fuzz_dup_str(const uint8_t *data, size_t len)
{
	char *p = malloc(len + 1);
	if (!p)
		abort();
	if (len)
		memcpy(p, data, len);
	p[len] = '\0';
	return p;
}

/* Reference UTF-8 check, written from the table of well-formed byte
 * sequences (Unicode 15, table 3-7) rather than from src/util/path.c. */
static inline int fuzz_utf8_ref(const unsigned char *s, size_t len)
{
	size_t i = 0;

	while (i < len) {
		unsigned c = s[i];
		unsigned lo = 0x80, hi = 0xBF;
		size_t n;

		if (c <= 0x7F) {
			i++;
			continue;
		}
		if (c >= 0xC2 && c <= 0xDF)
			n = 1;
		else if (c == 0xE0)
			n = 2, lo = 0xA0;
		else if (c >= 0xE1 && c <= 0xEC)
			n = 2;
		else if (c == 0xED)
			n = 2, hi = 0x9F;
		else if (c >= 0xEE && c <= 0xEF)
			n = 2;
		else if (c == 0xF0)
			n = 3, lo = 0x90;
		else if (c >= 0xF1 && c <= 0xF3)
			n = 3;
		else if (c == 0xF4)
			n = 3, hi = 0x8F;
		else
			return 0;
		if (len - i <= n)
			return 0;
		if (s[i + 1] < lo || s[i + 1] > hi)
			return 0;
		for (size_t k = 2; k <= n; k++)
			if (s[i + k] < 0x80 || s[i + k] > 0xBF)
				return 0;
		i += n + 1;
	}
	return 1;
}

#endif /* COF_FUZZ_H */
