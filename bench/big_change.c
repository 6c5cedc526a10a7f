/*
 * big_change.c — what one change of many writes costs the metadata store:
 * for each N given, a fresh store (SQLite in a temp folder, or
 * $COFFER_TEST_META_URL), one change writing N files, then one change
 * removing them all, each timed. A call that lands a large tree, or removes
 * one, is such a change (volume/land.c). `make big-change`; BIG_LIB=OTHER/libcoffer.a
 * measures another build. Prints one line an N: n, write s, remove s.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "store/meta.h"
#include "meta_fx.h"

static int n;

static int add(cof_txn *tx, void *ctx, cof_err *err)
{
	char path[64], sha[65];

	(void)ctx;
	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof path, "repo/d%03d/f%06d", i % 100, i);
		snprintf(sha, sizeof sha, "%064x", i + 1);
		if (cof_txn_write(tx, path, sha, 3, "text/plain", "abc", err))
			return -1;
	}
	return 0;
}

static int rem(cof_txn *tx, void *ctx, cof_err *err)
{
	char path[64];

	(void)ctx;
	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof path, "repo/d%03d/f%06d", i % 100, i);
		if (cof_txn_remove(tx, path, err))
			return -1;
	}
	return 0;
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int one(int count)
{
	meta_fx fx;
	cof_meta *m;
	cof_err err = {0};
	cof_volrow v = {0};
	int64_t seq;
	double t0, t1, t2;
	int rc = -1;

	n = count;
	if (meta_fx_open(&fx, &m))
		return -1;
	cof_id_new("vol_", v.id, sizeof v.id);
	cof_id_new("org_", v.org, sizeof v.org);
	snprintf(v.name, sizeof v.name, "big");
	v.capacity = 1 << 30;
	v.ceiling = (int64_t)1 << 40;
	v.created_at = cof_now();
	if (cof_meta_volume_add(m, &v, &err))
		goto out;
	t0 = now();
	if (cof_meta_change(m, v.vno, add, NULL, &seq, &err))
		goto out;
	t1 = now();
	if (cof_meta_change(m, v.vno, rem, NULL, &seq, &err))
		goto out;
	t2 = now();
	printf("n=%d write %.3f s remove %.3f s\n", n, t1 - t0, t2 - t1);
	rc = 0;
out:
	if (rc)
		fprintf(stderr, "big_change: %s\n", err.msg);
	cof_err_clear(&err);
	meta_fx_close(&fx, m);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: big_change N...\n");
		return 2;
	}
	for (int i = 1; i < argc; i++)
		if (one(atoi(argv[i])))
			return 1;
	return 0;
}
