/*
 * test_sniff.c — the type a new untyped file gets (cof_sniff_type) is the one
 * libmagic gives its bytes, also when the answer comes from the sniffer's
 * cache of libmagic's answers (src/volume/files.c, sniff_bytes): over the
 * repository's own files, system headers, documents and binaries (heads of
 * 4 KiB and short prefixes of each), a table of texts libmagic names
 * specially, and seeded random bytes; each buffer sniffed three times (the
 * first asks libmagic, the others may not), from several threads at once, and
 * again after more distinct buffers than the cache holds.
 */
#include <dirent.h>
#include <fcntl.h>
#include <magic.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include "coffer.h"
#include "volume/volume.h"

#define HEAD 4096

typedef struct buf {
	unsigned char *p;
	size_t len;
	char want[128];   /* what coffer must answer for it under a name without a type */
} buf;

static cof_store *st;
static char dir[] = "/tmp/coffer-unit-sniff-XXXXXX";
static buf *bufs;
static size_t nbufs, capbufs, nfiles;
static magic_t ref;   /* a handle of the test's own: libmagic's answers */

/* docs/api.md: a nameless file's type is libmagic's when it is text or a
 * signature; libmagic's generic answers are application/octet-stream. */
static void want_of(buf *b)
{
	const char *m = magic_buffer(ref, b->p, b->len);

	if (m && strncmp(m, "inode/", 6) && strcmp(m, "application/x-empty"))
		snprintf(b->want, sizeof b->want, "%s", m);
	else
		snprintf(b->want, sizeof b->want, "application/octet-stream");
}

static void add(const void *p, size_t len)
{
	if (!len)
		return;
	if (nbufs == capbufs) {
		capbufs = capbufs ? 2 * capbufs : 1024;
		bufs = realloc(bufs, capbufs * sizeof *bufs);
		assert_non_null(bufs);
	}
	buf *b = &bufs[nbufs++];
	b->p = malloc(len);
	assert_non_null(b->p);
	memcpy(b->p, p, len);
	b->len = len;
	want_of(b);
}

/* The head of `path` and its prefixes of 2, 8, 40 and 300 bytes. */
static void add_file(const char *path)
{
	static const size_t cuts[] = {2, 8, 40, 300};
	unsigned char head[HEAD];
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	ssize_t n;

	if (fd < 0)
		return;
	n = read(fd, head, sizeof head);
	close(fd);
	if (n <= 0)
		return;
	nfiles++;
	add(head, (size_t)n);
	for (size_t i = 0; i < sizeof cuts / sizeof *cuts && cuts[i] < (size_t)n; i++)
		add(head, cuts[i]);
}

/* Regular files beneath `root` (no links followed), up to `max` of them. */
static void walk(const char *root, size_t max)
{
	size_t start = nfiles;
	char **todo = malloc(sizeof *todo * 4096);
	size_t ntodo = 0;

	todo[ntodo++] = strdup(root);
	while (ntodo && nfiles - start < max) {
		char *d = todo[--ntodo];
		DIR *dh = opendir(d);
		struct dirent *e;

		while (dh && (e = readdir(dh)) && nfiles - start < max) {
			char p[4096];
			struct stat sb;

			if (e->d_name[0] == '.' || !strcmp(e->d_name, "node_modules"))
				continue;
			snprintf(p, sizeof p, "%s/%s", d, e->d_name);
			if (lstat(p, &sb))
				continue;
			if (S_ISDIR(sb.st_mode) && ntodo < 4096)
				todo[ntodo++] = strdup(p);
			else if (S_ISREG(sb.st_mode))
				add_file(p);
		}
		if (dh)
			closedir(dh);
		free(d);
	}
	while (ntodo)
		free(todo[--ntodo]);
	free(todo);
}

static const char *const table[] = {
	"1\n", "hello world\n", "#!/bin/sh\necho hi\n", "#!/usr/bin/env python3\nprint(1)\n",
	"{\"a\": 1, \"b\": [1, 2]}\n", "<?xml version=\"1.0\"?>\n<a/>\n",
	"<!DOCTYPE html>\n<html><body>x</body></html>\n", "a,b,c\n1,2,3\n4,5,6\n",
	"#include <stdio.h>\nint main(void) { return 0; }\n", "070707\n",
	"diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n",
	"From someone@example.com Mon Jan  1 00:00:00 2024\nSubject: hi\n\nbody\n",
	"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n", "naïve café — ünïcode text\n", "0 HEAD\n1 SOUR x\n",
	"x", "ab", "\n", "{}", "[1,2]\n", "<svg xmlns=\"http://www.w3.org/2000/svg\"/>\n",
};

static int setup(void **state)
{
	cof_err err = {0};
	cof_store_opts o = {.gc_grace_seconds = 1};
	uint64_t x = 0x9e3779b97f4a7c15ull;
	unsigned char r[HEAD];

	(void)state;
	if (!mkdtemp(dir))
		return -1;
	if (cof_store_open(dir, &o, &st, &err))
		return -1;
	if (!(ref = magic_open(MAGIC_MIME_TYPE)) || magic_load(ref, NULL))
		return -1;
	for (size_t i = 0; i < sizeof table / sizeof *table; i++)
		add(table[i], strlen(table[i]));
	add("\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x02\0\0\0", 25);
	add("\x1f\x8b\x08\0\0\0\0\0\0\x03\x03\0\0\0\0\0\0\0\0\0", 20);
	for (int i = 0; i < 64; i++) {   /* seeded random bytes of random lengths */
		size_t len = 1 + (x >> 33) % HEAD;
		for (size_t k = 0; k < len; k++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			r[k] = (unsigned char)(i & 1 ? 0x20 + x % 95 : x);   /* odd: printable */
		}
		add(r, len);
	}
	walk("tests", 200);
	walk("docs", 100);
	walk("sdk", 100);
	walk("/usr/include", 150);
	walk("/usr/share/doc", 100);
	walk("/usr/bin", 60);
	walk("/usr/share/pixmaps", 30);
	return 0;
}

static int teardown(void **state)
{
	char cmd[256];

	(void)state;
	for (size_t i = 0; i < nbufs; i++)
		free(bufs[i].p);
	free(bufs);
	magic_close(ref);
	cof_store_close(st);
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	return system(cmd);
}

static void check_one(size_t i, const char *name)
{
	char got[128];

	cof_sniff_type(st, name, bufs[i].p, bufs[i].len, got, sizeof got);
	if (strcmp(got, bufs[i].want))
		fail_msg("buffer %zu (%zu bytes, \"%.20s\"): coffer says %s, libmagic %s", i,
			 bufs[i].len, (const char *)bufs[i].p, got, bufs[i].want);
}

static void test_answers_are_libmagics_cached_or_not(void **state)
{
	(void)state;
	print_message("%zu buffers from %zu files\n", nbufs, nfiles);
	assert_true(nbufs > 500);
	for (size_t i = 0; i < nbufs; i++)
		for (int round = 0; round < 3; round++)
			check_one(i, round == 1 ? "dir/file.bin" : "dir/file");
}

static void *sniff_all(void *arg)
{
	size_t from = (size_t)(uintptr_t)arg;

	for (size_t k = 0; k < nbufs / 2; k++)
		check_one((from + k * 7) % nbufs, "a/b");
	return NULL;
}

static void test_threads_at_once(void **state)
{
	pthread_t t[4];

	(void)state;
	for (size_t i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&t[i], NULL, sniff_all, (void *)(uintptr_t)(i * 101)), 0);
	for (size_t i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
}

/* More distinct buffers than the cache has slots, then the first ones again:
 * an answer whose slot was taken is asked again, never another's. */
static void test_after_eviction(void **state)
{
	(void)state;
	for (int i = 0; i < 9000; i++) {   /* twice the cache's 4,096 slots and more */
		char b[16];
		buf one = {.p = (unsigned char *)b};
		one.len = (size_t)snprintf(b, sizeof b, "%d\n", i);
		want_of(&one);
		char got[128];
		cof_sniff_type(st, "n", b, one.len, got, sizeof got);
		assert_string_equal(got, one.want);
	}
	for (size_t i = 0; i < nbufs && i < 200; i++)
		check_one(i, "again");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_answers_are_libmagics_cached_or_not),
		cmocka_unit_test(test_threads_at_once),
		cmocka_unit_test(test_after_eviction),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
