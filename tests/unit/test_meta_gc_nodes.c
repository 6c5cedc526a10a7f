/*
 * test_meta_gc_nodes.c — garbage collection across nodes (docs/design.md):
 * the order the metadata gives a write that is about to name content
 * (blob_pending) and a collector deleting it (blob_forget / blob_claim, then
 * blob_forgotten), on the backend $COFFER_TEST_META_URL names. On PostgreSQL
 * the claim and the pending mark exclude each other, whichever comes first;
 * on SQLite (default: a temp file) the members are NULL and answer as the
 * in-process lock lets them (pending 0, claim 1).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "store/meta.h"
#include "meta_fx.h"

static cof_meta *m;
static meta_fx fx;
static char org[48];
static int is_pg;

/* A sha256-looking name unique to this run and `tag`. */
static void sha_for(char out[65], const char *tag)
{
	snprintf(out, 65, "%-48s%16s", org, tag);
	for (char *p = out; *p; p++)
		*p = *p == ' ' || *p == '_' ? '0' : *p;
}

static int setup(void **state)
{
	(void)state;
	cof_id_new("org_", org, sizeof org);
	if (meta_fx_open(&fx, &m))
		return -1;
	is_pg = !strcmp(m->ops->name, "postgres");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	meta_fx_close(&fx, m);
	return 0;
}

/* A volume holding `sha` at "f", then removed, history pruned and marked:
 * the content is an orphan since `since`. */
static void orphan_of(const char *sha, int64_t since);

typedef struct { const char *path, *sha; int remove; } edit;

static int apply(cof_txn *tx, void *ctx, cof_err *err)
{
	const edit *e = ctx;
	return e->remove ? cof_txn_remove(tx, e->path, err)
			 : cof_txn_write(tx, e->path, e->sha, 5, "text/plain", NULL, err);
}

static void orphan_of(const char *sha, int64_t since)
{
	cof_volrow v = {.capacity = 1 << 20, .ceiling = 1 << 20, .created_at = 1};
	cof_err err = {0};
	int64_t seq, pruned;
	edit w = {"f", sha, 0}, r = {"f", sha, 1};

	cof_id_new("vol_", v.id, sizeof v.id);
	snprintf(v.org, sizeof v.org, "%s", org);
	snprintf(v.name, sizeof v.name, "gc");
	assert_int_equal(cof_meta_volume_add(m, &v, &err), 0);
	assert_int_equal(cof_meta_change(m, v.vno, apply, &w, &seq, &err), 0);
	assert_int_equal(cof_meta_change(m, v.vno, apply, &r, &seq, &err), 0);
	assert_int_equal(cof_meta_gc_prune(m, cof_now() + 10, 0, &pruned, &err), 0);
	assert_int_equal(cof_meta_gc_mark(m, since, &err), 0);
}

static int listed;
static const char *wanted;
static int seen_fn(void *ctx, const char *sha, int64_t size)
{
	(void)ctx, (void)size;
	listed += !strcmp(sha, wanted);
	return 0;
}

static int orphan_listed(const char *sha)
{
	cof_err err = {0};
	listed = 0;
	wanted = sha;
	assert_int_equal(cof_meta_gc_orphans(m, cof_now() + 100, seen_fn, NULL, &err), 0);
	return listed;
}

/* A write that marked the content first wins: no collector claims it. */
static void test_pending_first_keeps_it(void **state)
{
	char sha[65];
	cof_err err = {0};

	(void)state;
	sha_for(sha, "pend1");
	orphan_of(sha, cof_now() - 100);
	assert_int_equal(orphan_listed(sha), 1);
	assert_int_equal(cof_meta_blob_pending(m, sha, 5, &err), 0);
	if (!is_pg)
		return;   /* one process: gc_lock orders them */
	assert_int_equal(orphan_listed(sha), 0);
	assert_int_equal(cof_meta_blob_forget(m, sha, &err), 0);
	assert_int_equal(cof_meta_blob_known(m, sha, &err), 1);
}

typedef struct { const char *sha; int rc; int64_t took_ms; } pend_arg;

static void *pend_main(void *arg)
{
	pend_arg *a = arg;
	cof_err err = {0};
	int64_t t0 = cof_mono_ms();

	a->rc = cof_meta_blob_pending(m, a->sha, 5, &err);
	a->took_ms = cof_mono_ms() - t0;
	return NULL;
}

/* A collector that claimed first: the write waits until the bytes are gone
 * and the row with them, then hears that its bytes may be gone (1). */
static void test_claim_first_makes_the_write_wait(void **state)
{
	char sha[65];
	cof_err err = {0};
	pthread_t t;
	pend_arg a = {0};

	(void)state;
	if (!is_pg)
		skip();
	sha_for(sha, "claim1");
	orphan_of(sha, cof_now() - 100);
	assert_int_equal(cof_meta_blob_forget(m, sha, &err), 1);
	assert_int_equal(cof_meta_blob_known(m, sha, &err), 0);   /* being forgotten */
	assert_int_equal(orphan_listed(sha), 0);                  /* not twice */
	a.sha = sha;
	assert_int_equal(pthread_create(&t, NULL, pend_main, &a), 0);
	usleep(300 * 1000);   /* the write is waiting on the claim */
	assert_int_equal(a.took_ms, 0);
	assert_int_equal(cof_meta_blob_forgotten(m, sha, &err), 0);
	pthread_join(t, NULL);
	assert_int_equal(a.rc, 1);
	assert_true(a.took_ms >= 250);
	/* the write's own row is there now, pending */
	assert_int_equal(cof_meta_blob_known(m, sha, &err), 1);
	assert_int_equal(cof_meta_blob_forget(m, sha, &err), 0);
}

/* Bytes the metadata never named are claimed by a row of their own; a
 * pending write then waits for it the same way. */
static void test_untracked_claim(void **state)
{
	char sha[65];
	cof_err err = {0};

	(void)state;
	sha_for(sha, "untr1");
	assert_int_equal(cof_meta_blob_claim(m, sha, &err), 1);
	if (!is_pg)
		return;
	assert_int_equal(cof_meta_blob_known(m, sha, &err), 0);
	assert_int_equal(cof_meta_blob_forgotten(m, sha, &err), 0);
	/* known to a write now: no claim */
	assert_int_equal(cof_meta_blob_pending(m, sha, 5, &err), 0);
	assert_int_equal(cof_meta_blob_claim(m, sha, &err), 0);
}

/* A refused write abandons its mark: the row goes and the bytes are a cut-off
 * upload's again; content a row names stays. */
static void test_abandoned(void **state)
{
	char sha[65], named[65];
	cof_err err = {0};

	(void)state;
	sha_for(sha, "aban1");
	assert_int_equal(cof_meta_blob_pending(m, sha, 5, &err), 0);
	assert_int_equal(cof_meta_blob_abandoned(m, sha, &err), 0);
	assert_int_equal(cof_meta_blob_known(m, sha, &err), 0);
	sha_for(named, "aban2");
	orphan_of(named, cof_now());
	assert_int_equal(cof_meta_blob_known(m, named, &err), 1);
	assert_int_equal(cof_meta_blob_abandoned(m, named, &err), 0);  /* never pending */
	assert_int_equal(cof_meta_blob_known(m, named, &err), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pending_first_keeps_it),
		cmocka_unit_test(test_claim_first_makes_the_write_wait),
		cmocka_unit_test(test_untracked_claim),
		cmocka_unit_test(test_abandoned),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
