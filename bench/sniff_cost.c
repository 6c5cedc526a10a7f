/*
 * sniff_cost.c — CPU a new untyped file's type costs (cof_sniff_type, one
 * thread, a store of its own in a temp folder), by kind of bytes: distinct
 * small texts (`echo $i > f$i`), distinct 4 KiB texts and binaries (the
 * files of bench/untyped_writes.py), the same 4 KiB text again and again, and
 * a 4 KiB text under a name that says its type (no libmagic). Medians of
 * ROUNDS rounds of N files each.
 *
 *   cc $(CFLAGS) bench/sniff_cost.c BUILD/libcoffer.a $(LDLIBS) -o BUILD/sniff_cost
 *   BUILD/sniff_cost [N]
 *
 * Link it with another build's libcoffer.a (e.g. main's) for the figures
 * before a change; the rows are the same.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "coffer.h"
#include "volume/volume.h"

#define ROUNDS 5

static double cpu(void)
{
	struct timespec t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static unsigned long serial;   /* every row's files differ from every other's */

/* Fills buf with the row's i-th file; its length. */
static size_t make(int row, unsigned char *buf)
{
	static const char fox[] = "the quick brown fox jumps over the lazy dog\n";
	unsigned long i = serial++;
	size_t n;

	switch (row) {
	case 0:
		return (size_t)sprintf((char *)buf, "%lu\n", i);
	case 1: case 4:
		n = (size_t)sprintf((char *)buf, "t1-n%lu;", i);
		for (; n < 4096; n++)
			buf[n] = (unsigned char)fox[n % (sizeof fox - 1)];
		return 4096;
	case 2:
		for (n = 0; n < 4096; n++)
			buf[n] = (unsigned char)fox[n % (sizeof fox - 1)];
		return 4096;
	default:
		n = (size_t)sprintf((char *)buf, "%lu", i);
		for (; n < 4096; n++)
			buf[n] = (unsigned char)((n * 131 + 7) % 256);
		return 4096;
	}
}

int main(int argc, char **argv)
{
	static const char *const rows[] = {
		"distinct small texts, no extension", "distinct 4 KiB texts, no extension",
		"the same 4 KiB text, no extension", "distinct 4 KiB binaries, .bin",
		"distinct 4 KiB texts, .txt"};
	static const char *const names[] = {"d/f", "d/f", "d/f", "d/f.bin", "d/f.txt"};
	int n = argc > 1 ? atoi(argv[1]) : 400;
	char dir[] = "/tmp/sniff-cost-XXXXXX", type[128], cmd[64];
	cof_store_opts o = {0};
	cof_err err = {0};
	cof_store *st;
	static unsigned char buf[4096];

	if (!mkdtemp(dir) || cof_store_open(dir, &o, &st, &err)) {
		fprintf(stderr, "sniff_cost: cannot open a store in %s\n", dir);
		return 1;
	}
	cof_sniff_type(st, "warm", "x\n", 2, type, sizeof type);   /* the first handle's load */
	printf("| kind of file | us of CPU a file (median of %d rounds of %d) | type |\n|---|---|---|\n",
	       ROUNDS, n);
	for (int row = 0; row < 5; row++) {
		double r[ROUNDS];
		for (int k = 0; k < ROUNDS; k++) {
			double t = 0;
			for (int i = 0; i < n; i++) {
				size_t len = make(row, buf);
				double t0 = cpu();
				cof_sniff_type(st, names[row], buf, len, type, sizeof type);
				t += cpu() - t0;
			}
			r[k] = t / n * 1e6;
		}
		qsort(r, ROUNDS, sizeof *r, cmp);
		printf("| %s | %.1f | %s |\n", rows[row], r[ROUNDS / 2], type);
	}
	cof_store_close(st);
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	return system(cmd) != 0;
}
