/*
 * alloc.c — the one place that handles running out of memory.
 *
 * The rule (docs/design.md, "Out of memory"): as git's xmalloc and Redis's
 * zmalloc do, libcoffer does not try to recover from a failed allocation. It
 * names the size on stderr and aborts, here and nowhere else. So cof_buf never
 * fails for lack of memory (only past its own `max`), and jansson is given the
 * same allocators at load time, so a NULL from json_pack()/json_string() means a
 * bad value (invalid UTF-8, a NULL string), never memory.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "util/util.h"

void cof_oom(size_t size)
{
	fprintf(stderr, "coffer: out of memory allocating %zu bytes\n", size);
	abort();
}

void *cof_malloc(size_t size)
{
	void *p = malloc(size ? size : 1);

	if (!p)
		cof_oom(size);
	return p;
}

void *cof_calloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		cof_oom(n * size);
	return p;
}

void *cof_realloc(void *old, size_t size)
{
	void *p = realloc(old, size ? size : 1);

	if (!p)
		cof_oom(size);
	return p;
}

char *cof_strdup(const char *s)
{
	size_t n = strlen(s) + 1;

	return memcpy(cof_malloc(n), s, n);
}

/* jansson allocates through these from the moment the library is loaded:
 * before main(), so no object can be made with the plain allocators. */
__attribute__((constructor)) static void alloc_init(void)
{
	json_set_alloc_funcs(cof_malloc, free);
}
