/*
 * test_meta_sql.c — the SQL driver seam (store/sql.h) on whichever backend
 * $COFFER_TEST_META_URL names (default: a fresh SQLite file): shared text
 * rewritten for PostgreSQL (?N to $N, tokens, quotes left alone), typed
 * parameters in and columns out (text, NULL, int64, blob), rows changed, a
 * rolled-back write leaving nothing, a read transaction of two statements,
 * and the writers' lock refused outside a write.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "util/util.h"
#include "store/meta.h"
#include "store/sql.h"
#include "meta_fx.h"

static cof_meta *m;
static meta_fx fx;
static char scope[64];   /* this run's rows of table idem (a shared database) */

static int setup(void **state)
{
	(void)state;
	if (meta_fx_open(&fx, &m))
		return -1;
	snprintf(scope, sizeof scope, "sqlseam-%d-%lld", (int)getpid(), (long long)cof_now_ms());
	return 0;
}

static int teardown(void **state)
{
	cof_err err = {0};

	(void)state;
	cof_sql_write(m, NULL, "DELETE FROM idem WHERE scope = ?1", "cleaning up", &err, "s",
		      scope);
	cof_err_clear(&err);
	meta_fx_close(&fx, m);
	return 0;
}

static void test_rewrite(void **state)
{
	static const char *const pg[COF_SQL_TOKENS] = { "::jsonb", "id", " COLLATE \"C\"",
							 "jsonb_concat", " FOR UPDATE",
							 "json_array_elements_text" };
	static const char *const sq[COF_SQL_TOKENS] = { "", "rowid", "", "json_patch", "",
							 "json_each" };
	const char *sql = "SELECT ?1, '?2 {rowid}', \"?3\", ?10, body{jsonb} ->> 'a' FROM t"
			  " WHERE x = ? ORDER BY {rowid}, {other}";
	char *a = cof_sql_rewrite(sql, 1, pg), *b = cof_sql_rewrite(sql, 0, sq);

	(void)state;
	assert_non_null(a);
	assert_non_null(b);
	assert_string_equal(a, "SELECT $1, '?2 {rowid}', \"?3\", $10, body::jsonb ->> 'a' FROM t"
			    " WHERE x = ? ORDER BY id, {other}");
	assert_string_equal(b, "SELECT ?1, '?2 {rowid}', \"?3\", ?10, body ->> 'a' FROM t"
			    " WHERE x = ? ORDER BY rowid, {other}");
	assert_true(cof_sql_needs_rewrite("a = ?1", 1));
	assert_false(cof_sql_needs_rewrite("a = ?1", 0));
	assert_false(cof_sql_needs_rewrite("a = $1", 1));
	assert_true(cof_sql_needs_rewrite("{rowid}", 0));
	free(a);
	free(b);
	a = cof_sql_rewrite("{json_patch}(b{jsonb}, ?1{jsonb}) WHERE id{C} < ?2{for_update}", 1, pg);
	b = cof_sql_rewrite("{json_patch}(b{jsonb}, ?1{jsonb}) WHERE id{C} < ?2{for_update}", 0, sq);
	assert_non_null(a);
	assert_non_null(b);
	assert_string_equal(a, "jsonb_concat(b::jsonb, $1::jsonb) WHERE id COLLATE \"C\" < $2 FOR UPDATE");
	assert_string_equal(b, "json_patch(b, ?1) WHERE id < ?2");
	free(a);
	free(b);
	a = cof_sql_rewrite("k IN (SELECT value FROM {json_each}(?1))", 1, pg);
	b = cof_sql_rewrite("k IN (SELECT value FROM {json_each}(?1))", 0, sq);
	assert_non_null(a);
	assert_non_null(b);
	assert_string_equal(a, "k IN (SELECT value FROM json_array_elements_text($1))");
	assert_string_equal(b, "k IN (SELECT value FROM json_each(?1))");
	free(a);
	free(b);
}

/* What a row of (key, value, created_at, NULL) gave. */
typedef struct seen {
	char key[32], value[32];
	int64_t at;
	int null3, n;
} seen;

static int take(void *ctx, const cof_sql_row *r, cof_err *err)
{
	seen *s = ctx;

	(void)err;
	cof_sql_text(r, 0, s->key, sizeof s->key);
	cof_sql_text(r, 1, s->value, sizeof s->value);
	s->at = cof_sql_int(r, 2);
	s->null3 = cof_sql_isnull(r, 3) && !strcmp(cof_sql_str(r, 3), "");
	s->n++;
	return 0;
}

static void test_write_read_rollback(void **state)
{
	cof_err err = {0};
	cof_sql_tx tx;
	int64_t n = -1;
	seen s = {0};

	(void)state;
	assert_int_equal(cof_sql_write(m, &n, "INSERT INTO idem(scope, key, value, created_at)"
				       " VALUES(?1, ?2, ?3, ?4)", "a row", &err, "sssi", scope,
				       "k1", "v1", (int64_t)1234567890123), 0);
	assert_int_equal(n, 1);
	/* a rolled-back write leaves nothing */
	assert_int_equal(cof_sql_begin(m, COF_SQL_WRITE, &tx, &err), 0);
	assert_int_equal(cof_sql_lock(&tx, 4242, scope, &err), 0);
	assert_int_equal(cof_sql_exec(&tx, &n, "INSERT INTO idem(scope, key, value, created_at)"
				      " VALUES(?1, ?2, ?3, ?4)", "a row", &err, "sssi", scope,
				      "k2", "v2", (int64_t)1), 0);
	assert_int_equal(cof_sql_end(&tx, -1, &err), -1);
	/* a read of two statements, and NULL in and out */
	assert_int_equal(cof_sql_begin(m, COF_SQL_READ, &tx, &err), 0);
	assert_int_equal(cof_sql_query(&tx, "SELECT key, value, created_at, NULL FROM idem"
				       " WHERE scope = ?1 AND (CAST(?2 AS text) IS NULL OR key = ?2)"
				       " ORDER BY key", "rows", take, &s, &err, "ss", scope,
				       (const char *)NULL), 1);
	assert_string_equal(s.key, "k1");
	assert_string_equal(s.value, "v1");
	assert_int_equal(s.at, 1234567890123);
	assert_true(s.null3);
	assert_int_equal(cof_sql_query(&tx, "SELECT key, value, created_at, NULL FROM idem"
				       " WHERE scope = ?1 AND key = ?2", "rows", take, &s, &err, "ss",
				       scope, "k2"), 0);
	assert_int_equal(cof_sql_end(&tx, 0, &err), 0);
	/* the writers' lock belongs in a write */
	assert_int_equal(cof_sql_begin(m, COF_SQL_READ | COF_SQL_ONE, &tx, &err), 0);
	assert_true(cof_sql_lock(&tx, 4242, NULL, &err) < 0);
	assert_int_equal(err.code, COF_EINTERNAL);
	cof_err_clear(&err);
	assert_int_equal(cof_sql_end(&tx, 0, &err), 0);
	/* rows changed by an update */
	assert_int_equal(cof_sql_write(m, &n, "UPDATE idem SET value = ?2 WHERE scope = ?1",
				       "rows", &err, "ss", scope, "v3"), 0);
	assert_int_equal(n, 1);
}

/* cof_sql_row_fn: column 0's blob into ctx (a cof_buf). */
static int blob_one(void *ctx, const cof_sql_row *r, cof_err *err)
{
	unsigned char *data = NULL;
	size_t len = 0;
	int rc = cof_sql_blob(r, 0, &data, &len);

	if (rc < 0)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	if (rc > 0 && cof_buf_add(ctx, data, len))
		rc = -1;
	free(data);
	return rc < 0 ? -1 : 1;
}

static void test_blob_both_ways(void **state)
{
	static const unsigned char bytes[] = { 0, 1, 2, 0xff, '\\', 'x', 0, 0x80 };
	char sha[65];
	cof_err err = {0};
	cof_buf got = COF_BUF_INIT;

	(void)state;
	snprintf(sha, sizeof sha, "%064lld", (long long)cof_now_ms() * 1000 + getpid() % 1000);
	assert_int_equal(cof_sql_write(m, NULL, "INSERT INTO blobs(sha256, size, data)"
				       " VALUES(?1, ?2, ?3)", "a blob", &err, "sib", sha,
				       (int64_t)sizeof bytes, (const void *)bytes,
				       (int64_t)sizeof bytes), 0);
	assert_int_equal(cof_sql_read(m, "SELECT data FROM blobs WHERE sha256 = ?1", "a blob",
				      blob_one, &got, &err, "s", sha), 1);
	assert_int_equal(got.len, sizeof bytes);
	assert_memory_equal(got.data, bytes, sizeof bytes);
	assert_int_equal(cof_sql_write(m, NULL, "DELETE FROM blobs WHERE sha256 = ?1", "a blob",
				       &err, "s", sha), 0);
	cof_buf_release(&got);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rewrite),
		cmocka_unit_test(test_write_read_rollback),
		cmocka_unit_test(test_blob_both_ways),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
