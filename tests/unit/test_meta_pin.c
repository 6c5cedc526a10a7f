/*
 * test_meta_pin.c — a thread's own reader connection and its held read
 * transaction (cof_meta_pin_reader, cof_meta_read_hold; issue 13.1), on
 * whichever backend $COFFER_TEST_META_URL names (default: a fresh SQLite
 * file; elsewhere the hold is a no-op and the reads must still be right).
 *
 * What must hold: a pinned thread's reads see every change committed before
 * them (its connection keeps no transaction open between reads); a hold is one
 * snapshot until its release, and after it the next read sees what committed
 * meanwhile; a nested read inside a hold works; a store closed and another
 * opened leaves the thread's slot for the old one unused (no stale handle);
 * a listing stopped early leaves no snapshot open on the thread's reader.
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
#include "store/meta.h"
#include "meta_fx.h"

static meta_fx fx;
static char org[48];

/* Opens the store under test. */
static cof_meta *open_meta(void)
{
	cof_meta *m = NULL;
	cof_err err = {0};

	if (cof_meta_open(fx.url, &m, &err)) {
		fprintf(stderr, "cannot open %s: %s\n", fx.url, err.msg);
		return NULL;
	}
	return m;
}

static int setup(void **state)
{
	(void)state;
	cof_id_new("org_", org, sizeof org);
	return meta_fx_url(&fx);
}

static int teardown(void **state)
{
	(void)state;
	meta_fx_close(&fx, NULL);
	return 0;
}

/* A new key row of this run's org, its hash (and so its id) unique to (tag). */
static void new_key(cof_meta *m, cof_keyrow *k, int tag)
{
	cof_err err = {0};

	memset(k, 0, sizeof *k);
	snprintf(k->hash, sizeof k->hash, "%08x%.16s", (unsigned)tag, org + 4);
	for (size_t i = strlen(k->hash); i < 64; i++)
		k->hash[i] = '0';
	for (int i = 0; i < 64; i++)
		if (!strchr("0123456789abcdef", k->hash[i]))
			k->hash[i] = 'a';
	k->hash[64] = '\0';
	snprintf(k->id, sizeof k->id, "k_%.16s", k->hash);
	snprintf(k->org, sizeof k->org, "%s", org);
	k->created_at = 1000 + tag;
	assert_int_equal(cof_meta_key_add(m, k, &err), 0);
}

typedef struct revoker {
	cof_meta *m;
	const char *id;
	int64_t at;
	int rc;
} revoker;

/* Revokes r->id on a thread of its own (so on a connection not this one's). */
static void *revoke_main(void *arg)
{
	revoker *r = arg;
	cof_keyrow out;
	cof_err err = {0};

	r->rc = cof_meta_key_revoke(r->m, org, r->id, 0, r->at, &out, &err);
	cof_err_clear(&err);
	return NULL;
}

static void revoke_elsewhere(cof_meta *m, const char *id, int64_t at)
{
	revoker r = { m, id, at, -1 };
	pthread_t t;

	assert_int_equal(pthread_create(&t, NULL, revoke_main, &r), 0);
	pthread_join(t, NULL);
	assert_int_equal(r.rc, 0);
}

static int64_t revoked_at(cof_meta *m, const char *hash)
{
	cof_keyrow k;
	cof_err err = {0};

	assert_int_equal(cof_meta_key_find(m, hash, &k, &err), 0);
	return k.revoked_at;
}

/* A pinned thread's reads see a change another thread committed at once. */
static void test_pinned_reads_see_each_commit(void **state)
{
	cof_meta *m = open_meta();
	cof_keyrow k;

	(void)state;
	assert_non_null(m);
	cof_meta_pin_reader();
	new_key(m, &k, 1);
	for (int i = 0; i < 3; i++)
		assert_int_equal(revoked_at(m, k.hash), 0); /* the thread's reader pinned */
	revoke_elsewhere(m, k.id, 5000);
	assert_int_equal(revoked_at(m, k.hash), 5000);
	cof_meta_close(m);
}

/* A hold is one snapshot until released; then the next read is current. */
static void test_hold_is_one_snapshot_until_released(void **state)
{
	cof_meta *m = open_meta();
	cof_keyrow a, b;
	int held, sqlite;

	(void)state;
	assert_non_null(m);
	sqlite = !strcmp(m->ops->name, "sqlite");
	cof_meta_pin_reader();
	new_key(m, &a, 2);
	new_key(m, &b, 3);
	assert_int_equal(revoked_at(m, a.hash), 0);
	held = cof_meta_read_hold(m);
	assert_int_equal(held, sqlite);
	assert_int_equal(revoked_at(m, a.hash), 0);
	/* a nested hold holds nothing more; the outer one stays */
	assert_int_equal(cof_meta_read_hold(m), 0);
	revoke_elsewhere(m, b.id, 6000);
	/* the hold's snapshot began with the read of a: b is as it was then */
	assert_int_equal(revoked_at(m, b.hash), sqlite ? 0 : 6000);
	cof_meta_read_release(m, 0);
	assert_int_equal(revoked_at(m, b.hash), sqlite ? 0 : 6000);
	cof_meta_read_release(m, held);
	assert_int_equal(revoked_at(m, b.hash), 6000);
	/* and nothing stays held: the next change is seen too */
	revoke_elsewhere(m, a.id, 7000);
	assert_int_equal(revoked_at(m, a.hash), 7000);
	cof_meta_close(m);
}

/* cof_key_fn: stops the listing at its first key. */
static int stop_at_first(void *ctx, const cof_keyrow *k)
{
	(void)k;
	++*(int *)ctx;
	return 1;
}

/* A listing stopped early leaves no snapshot open on the thread's reader. */
static void test_listing_stopped_early_leaves_no_snapshot(void **state)
{
	cof_meta *m = open_meta();
	cof_keyrow a, b;
	cof_err err = {0};
	int seen = 0;

	(void)state;
	assert_non_null(m);
	cof_meta_pin_reader();
	new_key(m, &a, 5);
	new_key(m, &b, 6);
	assert_int_equal(revoked_at(m, b.hash), 0);
	assert_int_equal(cof_meta_key_list(m, org, stop_at_first, &seen, &err), 0);
	assert_int_equal(seen, 1);
	revoke_elsewhere(m, b.id, 9000);
	assert_int_equal(revoked_at(m, b.hash), 9000);
	cof_meta_close(m);
}

/* A store closed and another opened: the thread reads the new one right. */
static void test_reopened_store_is_read_afresh(void **state)
{
	cof_meta *m = open_meta();
	cof_keyrow k;

	(void)state;
	assert_non_null(m);
	cof_meta_pin_reader();
	new_key(m, &k, 4);
	assert_int_equal(revoked_at(m, k.hash), 0);
	cof_meta_close(m);
	m = open_meta();
	assert_non_null(m);
	revoke_elsewhere(m, k.id, 8000);
	assert_int_equal(revoked_at(m, k.hash), 8000);
	int held = cof_meta_read_hold(m);
	assert_int_equal(revoked_at(m, k.hash), 8000);
	cof_meta_read_release(m, held);
	cof_meta_close(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pinned_reads_see_each_commit),
		cmocka_unit_test(test_hold_is_one_snapshot_until_released),
		cmocka_unit_test(test_reopened_store_is_read_afresh),
		cmocka_unit_test(test_listing_stopped_early_leaves_no_snapshot),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
