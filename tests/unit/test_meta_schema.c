/*
 * test_meta_schema.c — the schema written once (store/schema.c) and the feed's
 * plans, on whichever backend $COFFER_TEST_META_URL names (default: a fresh
 * SQLite file): each form of the changes feed (meta_changes.c) reads its
 * index (a database uses an expression index only for the query's own
 * expression), and on the pg pass a new SQLite store has the same tables and
 * columns as the new PostgreSQL one.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/util.h"
#include "store/meta.h"
#include "store/sql.h"
#include "meta_fx.h"

static cof_meta *m;
static meta_fx fx;

static int setup(void **state)
{
	(void)state;
	return meta_fx_open(&fx, &m);
}

static int teardown(void **state)
{
	(void)state;
	meta_fx_close(&fx, m);
	return 0;
}

static int is_pg(cof_meta *mm)
{
	return !strcmp(mm->sql->name, "postgres");
}

/* cof_sql_row_fn: every row's plan text (SQLite's detail, column 3;
 * PostgreSQL's one column) onto ctx (a cof_buf), a line each. */
static int plan_row(void *ctx, const cof_sql_row *r, cof_err *err)
{
	cof_buf *b = ctx;
	int col = is_pg(m) ? 0 : 3;

	if (cof_buf_addf(b, "%s\n", cof_sql_str(r, col)))
		return cof_error(err, COF_EINTERNAL, "out of memory");
	return 0;
}

/* The plan of `sql` (one static buffer per text: statements are cached by
 * the text's address) with the feed's parameters. */
static void plan_of(char *buf, size_t size, const char *sql, const char *kinds, cof_buf *out,
		    const char *run, const char *call)
{
	cof_err err = {0};
	cof_buf upper = COF_BUF_INIT;
	int rc;

	assert_int_equal(cof_prefix_upper("", &upper), 0);
	snprintf(buf, size, "%s%s", is_pg(m) ? "EXPLAIN " : "EXPLAIN QUERY PLAN ", sql);
	if (!strcmp(kinds, "history"))
		rc = cof_sql_read(m, buf, "a plan", plan_row, out, &err, "isii", (int64_t)1, "a",
				  (int64_t)INT64_MAX, (int64_t)10);
	else
		rc = cof_sql_read(m, buf, "a plan", plan_row, out, &err, "iississss", (int64_t)1,
				  (int64_t)0, "", upper.data, (int64_t)10, run, call,
				  (const char *)NULL, (const char *)NULL);
	if (rc < 0)
		fprintf(stderr, "%s\n", err.msg);
	assert_true(rc > 0);
	cof_err_clear(&err);
	cof_buf_release(&upper);
}

/* A volume's feed of 2,000 changes, each of its own run and call, and the
 * planner's statistics of it: on an empty table PostgreSQL reads its primary
 * key whatever the filter (its estimate of nothing), as it would not on a
 * store in use. */
static void fill_feed(void)
{
	cof_err err = {0};
	cof_sql_tx tx;
	char who[64], path[32];

	assert_int_equal(cof_sql_begin(m, COF_SQL_WRITE, &tx, &err), 0);
	for (int i = 0; i < 2000; i++) {
		snprintf(who, sizeof who, "{\"runId\":\"r%d\",\"callId\":\"c%d\"}", i, i);
		snprintf(path, sizeof path, "f%d", i % 50);
		assert_int_equal(cof_sql_exec(&tx, NULL, "INSERT INTO changes(vno, seq, path,"
					      " removed, version, size, sha256, at, who) VALUES(1, ?1,"
					      " ?2, 0, 1, 0, '', 0, ?3)", "a change", &err, "iss",
					      (int64_t)i + 1, path, who), 0);
	}
	assert_int_equal(cof_sql_end(&tx, 0, &err), 0);
	assert_int_equal(cof_sql_write(m, NULL, "ANALYZE changes", "analyzing", &err, ""), 0);
}

static void test_feed_forms_read_their_index(void **state)
{
	static char bufs[3][4096];
	struct { const char *sql, *kinds, *run, *call, *index; } forms[3] = {
		{ cof_meta_changes_sql(1, 0), "changes", "r1", NULL, "changes_run" },
		{ cof_meta_changes_sql(0, 1), "changes", NULL, "c1", "changes_call" },
		{ cof_meta_history_sql, "history", NULL, NULL, "changes_path" },
	};

	(void)state;
	fill_feed();
	for (int i = 0; i < 3; i++) {
		cof_buf plan = COF_BUF_INIT;
		plan_of(bufs[i], sizeof bufs[i], forms[i].sql, forms[i].kinds, &plan,
			forms[i].run, forms[i].call);
		if (!strstr(plan.data, forms[i].index))
			fprintf(stderr, "form %d's plan, not by %s:\n%s", i, forms[i].index,
				plan.data);
		assert_non_null(strstr(plan.data, forms[i].index));
		cof_buf_release(&plan);
	}
}

/* cof_sql_row_fn: "table.column\n" onto ctx (a cof_buf). */
static int name_row(void *ctx, const cof_sql_row *r, cof_err *err)
{
	if (cof_buf_addf(ctx, "%s.%s\n", cof_sql_str(r, 0), cof_sql_str(r, 1)))
		return cof_error(err, COF_EINTERNAL, "out of memory");
	return 0;
}

/* Every table.column of mm's schema, sorted bytewise (not the driver's own
 * bookkeeping: SQLite's sqlite_* tables, PostgreSQL's schema_version). */
static void names_of(cof_meta *mm, cof_buf *out)
{
	cof_err err = {0};
	int rc = is_pg(mm)
		? cof_sql_read(mm, "SELECT table_name, column_name FROM information_schema.columns"
			       " WHERE table_schema = current_schema() AND table_name <>"
			       " 'schema_version' ORDER BY table_name COLLATE \"C\", column_name"
			       " COLLATE \"C\"", "the columns", name_row, out, &err, "")
		: cof_sql_read(mm, "SELECT t.name, c.name FROM sqlite_master t JOIN"
			       " pragma_table_info(t.name) c WHERE t.type = 'table' AND t.name NOT"
			       " LIKE 'sqlite!_%' ESCAPE '!' ORDER BY 1, 2", "the columns", name_row,
			       out, &err, "");
	if (rc < 0)
		fprintf(stderr, "%s\n", err.msg);
	assert_true(rc > 0);
	cof_err_clear(&err);
}

/* On the pg pass: a new SQLite store has the tables and columns of the new
 * PostgreSQL one (the schema written once). */
static void test_new_sqlite_and_postgres_alike(void **state)
{
	cof_buf pg = COF_BUF_INIT, sq = COF_BUF_INIT;
	meta_fx other;
	cof_meta *lite;
	char *url;

	(void)state;
	if (!is_pg(m))
		skip();
	url = cof_strdup(getenv("COFFER_TEST_META_URL"));
	assert_non_null(url);
	unsetenv("COFFER_TEST_META_URL");   /* meta_fx: a SQLite file of its own */
	assert_int_equal(meta_fx_open(&other, &lite), 0);
	setenv("COFFER_TEST_META_URL", url, 1);
	free(url);
	names_of(m, &pg);
	names_of(lite, &sq);
	assert_string_equal(sq.data, pg.data);
	cof_buf_release(&pg);
	cof_buf_release(&sq);
	meta_fx_close(&other, lite);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_feed_forms_read_their_index),
		cmocka_unit_test(test_new_sqlite_and_postgres_alike),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
