/*
 * test_contents.c — src/store/contents.c: small contents kept in memory by
 * SHA-256. What is put is got back byte for byte; the budget holds, least
 * recently used dropped first; contents past the entry limit and names that
 * are not a SHA-256 in hex are never kept; threads may share the cache.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "store/contents.h"

/* A well-formed sha of its own for each n (hex digits spread over the
 * shards and buckets as real ones are). */
static void sha_of(unsigned n, char out[65])
{
	uint64_t x = n * 0x9e3779b97f4a7c15ull + 1;

	for (int i = 0; i < 64; i++) {
		x ^= x >> 29;
		x *= 0xbf58476d1ce4e5b9ull;
		out[i] = "0123456789abcdef"[(x >> 40) & 15];
	}
	out[64] = '\0';
}

typedef struct got {
	unsigned char data[COF_CONTENTS_ENTRY_MAX];
	size_t len;
	int calls;
} got;

static void take(void *ctx, const unsigned char *data, size_t len)
{
	got *g = ctx;

	memcpy(g->data, data, len);
	g->len = len;
	g->calls++;
}

static void test_put_then_get(void **state)
{
	cof_contents *c = cof_contents_new(1 << 20);
	cof_contents_stats s;
	char sha[65], other[65];
	got *g = calloc(1, sizeof *g);
	(void)state;

	sha_of(1, sha);
	sha_of(2, other);
	assert_int_equal(cof_contents_get(c, sha, take, g), 0);
	cof_contents_put(c, sha, (const unsigned char *)"hello", 5);
	assert_int_equal(cof_contents_get(c, sha, take, g), 1);
	assert_int_equal(g->len, 5);
	assert_memory_equal(g->data, "hello", 5);
	assert_int_equal(cof_contents_get(c, other, take, g), 0);
	/* an empty content is a content */
	cof_contents_put(c, other, (const unsigned char *)"", 0);
	assert_int_equal(cof_contents_get(c, other, take, g), 1);
	assert_int_equal(g->len, 0);
	/* a second put of one sha keeps the first (the same bytes) */
	cof_contents_put(c, sha, (const unsigned char *)"HELLO", 5);
	cof_contents_get(c, sha, take, g);
	assert_memory_equal(g->data, "hello", 5);
	cof_contents_stats_get(c, &s);
	assert_int_equal(s.hits, 3);
	assert_int_equal(s.misses, 2);
	assert_int_equal(s.kept, 2);
	assert_true(s.kept_bytes > 5 && s.kept_bytes < 1024);
	cof_contents_free(c);
	free(g);
}

/* Past the budget the least recently used go first; what was just read
 * stays. */
static void test_budget_drops_least_recent(void **state)
{
	/* 1 MiB: 4 shards of 256 KiB, about 60 contents of 4 KiB a shard */
	cof_contents *c = cof_contents_new(16 * 64 * 1024);
	unsigned char buf[4096];
	cof_contents_stats s;
	char sha[65], hot[65];
	got *g = calloc(1, sizeof *g);
	(void)state;

	sha_of(0, hot);
	memset(buf, 'h', sizeof buf);
	cof_contents_put(c, hot, buf, sizeof buf);
	for (unsigned i = 1; i <= 2000; i++) {
		sha_of(i, sha);
		memset(buf, (int)(i & 0xff), sizeof buf);
		cof_contents_put(c, sha, buf, sizeof buf);
		assert_int_equal(cof_contents_get(c, hot, take, g), 1);
	}
	cof_contents_stats_get(c, &s);
	assert_true(s.kept_bytes <= 16 * 64 * 1024);
	assert_true(s.kept > 100 && s.kept < 260);
	/* the newest are kept, the oldest are gone, the hot one stayed */
	sha_of(2000, sha);
	assert_int_equal(cof_contents_get(c, sha, take, g), 1);
	assert_int_equal(g->data[0], 2000 & 0xff);
	sha_of(1, sha);
	assert_int_equal(cof_contents_get(c, sha, take, g), 0);
	assert_int_equal(cof_contents_get(c, hot, take, g), 1);
	assert_int_equal(g->data[4095], 'h');
	cof_contents_free(c);
	free(g);
}

static void test_what_is_never_kept(void **state)
{
	cof_contents *c = cof_contents_new(64 << 20);
	static unsigned char big[COF_CONTENTS_ENTRY_MAX + 1];
	char sha[65], bad[65];
	got *g = calloc(1, sizeof *g);
	(void)state;

	sha_of(7, sha);
	cof_contents_put(c, sha, big, sizeof big); /* one byte past the limit */
	assert_int_equal(cof_contents_get(c, sha, take, g), 0);
	cof_contents_put(c, sha, big, sizeof big - 1); /* at the limit */
	assert_int_equal(cof_contents_get(c, sha, take, g), 1);
	assert_int_equal(g->len, COF_CONTENTS_ENTRY_MAX);
	/* upper case, short, long, not hex: not a sha */
	memcpy(bad, sha, 65);
	bad[3] = 'A';
	cof_contents_put(c, bad, (const unsigned char *)"x", 1);
	assert_int_equal(cof_contents_get(c, bad, take, g), 0);
	bad[3] = 'g';
	cof_contents_put(c, bad, (const unsigned char *)"x", 1);
	assert_int_equal(cof_contents_get(c, bad, take, g), 0);
	cof_contents_put(c, "abc", (const unsigned char *)"x", 1);
	assert_int_equal(cof_contents_get(c, "abc", take, g), 0);
	char longer[70];
	snprintf(longer, sizeof longer, "%s00", sha);
	assert_int_equal(cof_contents_get(c, longer, take, g), 0);
	assert_int_equal(cof_contents_get(c, "", take, g), 0);
	cof_contents_free(c);
	/* no cache: nothing kept, nothing found, no crash */
	cof_contents_put(NULL, sha, (const unsigned char *)"x", 1);
	assert_int_equal(cof_contents_get(NULL, sha, take, g), 0);
	/* a budget smaller than one content keeps none */
	c = cof_contents_new(16 * 100);
	cof_contents_put(c, sha, big, 4096);
	assert_int_equal(cof_contents_get(c, sha, take, g), 0);
	cof_contents_free(c);
	free(g);
}

typedef struct worker {
	cof_contents *c;
	unsigned seed;
	int bad;
} worker;

/* Each content's bytes are its number: a reader sees a whole one or none. */
static void *hammer(void *arg)
{
	worker *w = arg;
	unsigned char buf[512];
	got *g = calloc(1, sizeof *g);
	char sha[65];

	for (int i = 0; i < 20000; i++) {
		unsigned n = (w->seed + (unsigned)i * 7919u) % 3000;
		sha_of(n, sha);
		if (cof_contents_get(w->c, sha, take, g)) {
			for (size_t k = 0; k < g->len; k++)
				if (g->data[k] != (unsigned char)n)
					w->bad = 1;
			if (g->len != 64 + n % 400)
				w->bad = 1;
		} else {
			memset(buf, (int)(n & 0xff), sizeof buf);
			cof_contents_put(w->c, sha, buf, 64 + n % 400);
		}
	}
	free(g);
	return NULL;
}

static void test_threads_share_it(void **state)
{
	cof_contents *c = cof_contents_new(256 * 1024); /* small: drops all the time */
	pthread_t t[4];
	worker w[4];
	(void)state;

	for (int i = 0; i < 4; i++) {
		w[i] = (worker){ c, (unsigned)i * 1000u, 0 };
		assert_int_equal(pthread_create(&t[i], NULL, hammer, &w[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(w[i].bad, 0);
	}
	/* how the threads interleave decides how many of their gets hit (on a
	 * busy machine they may run one after another and never meet): one
	 * put and get of our own makes the count's hit certain */
	char sha[65];
	got *g = calloc(1, sizeof *g);
	unsigned char one[80];
	memset(one, 7, sizeof one);
	sha_of(7, sha);
	cof_contents_put(c, sha, one, sizeof one);
	assert_true(cof_contents_get(c, sha, take, g));
	free(g);
	cof_contents_stats s;
	cof_contents_stats_get(c, &s);
	assert_true(s.kept_bytes <= 256 * 1024);
	assert_true(s.hits > 0 && s.misses > 0);
	cof_contents_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_put_then_get),
		cmocka_unit_test(test_budget_drops_least_recent),
		cmocka_unit_test(test_what_is_never_kept),
		cmocka_unit_test(test_threads_share_it),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
