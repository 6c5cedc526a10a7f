/*
 * test_meta_rows.c — the one loop of reading rows each metadata backend has
 * (cof_sqlite_read / cof_sqlite_rows, cof_pg_rows / cof_pg_rows_on): every
 * row given in order, a stop after the row that says so, the row count
 * returned (0 = none found), a failure of the callback or of the query
 * returned as -1 with the error naming what was read. On whichever backend
 * $COFFER_TEST_META_URL names (default: a fresh SQLite file).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "store/meta_sqlite.h"
#include "store/meta_pg.h"
#include "meta_fx.h"

static cof_meta *m;
static meta_fx fx;
static int pg;

static int setup(void **state)
{
	(void)state;
	if (meta_fx_open(&fx, &m))
		return -1;
	pg = !strncmp(fx.url, "postgres", 8);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	meta_fx_close(&fx, m);
	return 0;
}

/* What the callback saw, and the values it stops or fails at. */
typedef struct got {
	int64_t v[8];
	int n;
	int64_t stop_at, fail_at;
} got;

static int take(got *g, int64_t v, cof_err *err)
{
	if (g->n < 8)
		g->v[g->n++] = v;
	if (v == g->fail_at)
		return cof_error(err, COF_EINTERNAL, "row %lld refused", (long long)v);
	return v == g->stop_at;
}

static int take_pg(void *ctx, PGresult *r, int row, cof_err *err)
{
	return take(ctx, cof_pg_int(r, row, 0), err);
}

static int take_sq(void *ctx, sqlite3_stmt *st, cof_err *err)
{
	return take(ctx, sqlite3_column_int64(st, 0), err);
}

/* The rows of (1), (2), (3) above `above`, through the backend's helper. */
static int three(got *g, int64_t above, cof_err *err)
{
	if (pg)
		return cof_pg_rows(m, "SELECT column1 FROM (VALUES (1), (2), (3)) AS t WHERE"
				   " column1 > $1 ORDER BY 1", "reading three", take_pg, g, err,
				   "i", above);
	return cof_sqlite_read(m, "SELECT column1 FROM (VALUES (1), (2), (3)) AS t WHERE"
			       " column1 > ? ORDER BY 1", "reading three", take_sq, g, err, "i",
			       above);
}

static void test_every_row_in_order(void **state)
{
	got g = {.stop_at = -1, .fail_at = -1};
	cof_err err = {0};

	(void)state;
	assert_int_equal(three(&g, 0, &err), 3);
	assert_int_equal(g.n, 3);
	assert_int_equal(g.v[0], 1);
	assert_int_equal(g.v[1], 2);
	assert_int_equal(g.v[2], 3);
	assert_int_equal(err.code, 0);
}

static void test_none_found_is_zero(void **state)
{
	got g = {.stop_at = -1, .fail_at = -1};
	cof_err err = {0};

	(void)state;
	assert_int_equal(three(&g, 5, &err), 0);
	assert_int_equal(g.n, 0);
	assert_int_equal(err.code, 0);
}

static void test_stop_after_the_row_that_says_so(void **state)
{
	got g = {.stop_at = 2, .fail_at = -1};
	cof_err err = {0};

	(void)state;
	int n = three(&g, 0, &err);
	assert_int_equal(g.n, 2);   /* row 3 not given */
	/* the count: rows given (SQLite steps no further), or the result's (pg) */
	assert_int_equal(n, pg ? 3 : 2);
	assert_int_equal(err.code, 0);
	/* the statement was reset: it runs again from its first row */
	g = (got){.stop_at = -1, .fail_at = -1};
	assert_int_equal(three(&g, 0, &err), 3);
	assert_int_equal(g.v[0], 1);
}

static void test_callback_failure_is_minus_one(void **state)
{
	got g = {.stop_at = -1, .fail_at = 2};
	cof_err err = {0};

	(void)state;
	assert_int_equal(three(&g, 0, &err), -1);
	assert_int_equal(g.n, 2);
	assert_int_equal(err.code, COF_EINTERNAL);
	assert_non_null(strstr(err.msg, "row 2 refused"));
	cof_err_clear(&err);
}

/* A statement that fails while it runs (not when it is prepared). */
static void test_query_failure_names_what(void **state)
{
	got g = {.stop_at = -1, .fail_at = -1};
	cof_err err = {0};
	int rc;

	(void)state;
	if (pg)
		rc = cof_pg_rows(m, "SELECT 1 / (column1 - 2) FROM (VALUES (1), (2), (3)) AS t",
				 "dividing", take_pg, &g, &err, "");
	else /* abs() of the smallest integer overflows */
		rc = cof_sqlite_read(m, "SELECT abs(column1 - 9223372036854775807 - 2) FROM"
				     " (VALUES (1), (2), (3)) AS t", "dividing", take_sq, &g,
				     &err, "");
	assert_int_equal(rc, -1);
	assert_int_equal(err.code, COF_EINTERNAL);
	assert_non_null(strstr(err.msg, "dividing"));
	cof_err_clear(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_row_in_order),
		cmocka_unit_test(test_none_found_is_zero),
		cmocka_unit_test(test_stop_after_the_row_that_says_so),
		cmocka_unit_test(test_callback_failure_is_minus_one),
		cmocka_unit_test(test_query_failure_names_what),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
