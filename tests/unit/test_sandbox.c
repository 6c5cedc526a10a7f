/*
 * test_sandbox.c — cof_size_parse (src/util/size.c) and cof_sandbox_parse
 * (src/turn/settings.c): every accepted form, each refused form, the rule
 * 0 < turnDisk <= userDisk <= scratch at its edges, and the defaults.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "turn/turn.h"
#include "util/util.h"

static int64_t size_ok(json_t *v)
{
	cof_err e = {0};
	int64_t n = -1;

	assert_int_equal(cof_size_parse(v, "x", &n, &e), 0);
	json_decref(v);
	return n;
}

static void size_bad(json_t *v)
{
	cof_err e = {0};
	int64_t n = -1;

	assert_int_equal(cof_size_parse(v, "sandbox.scratch", &n, &e), -1);
	assert_int_equal(e.code, COF_EVALIDATION);
	assert_non_null(strstr(e.msg, "sandbox.scratch"));
	assert_int_equal(n, -1);
	json_decref(v);
}

static void test_size_forms(void **state)
{
	(void)state;
	assert_int_equal(size_ok(json_string("100b")), 100);
	assert_int_equal(size_ok(json_string("100B")), 100);
	assert_int_equal(size_ok(json_string("512k")), 512 * 1024);
	assert_int_equal(size_ok(json_string("256m")), 256LL << 20);
	assert_int_equal(size_ok(json_string("1g")), 1LL << 30);
	assert_int_equal(size_ok(json_string("4096")), 4096);
	assert_int_equal(size_ok(json_string("0")), 0);
	assert_int_equal(size_ok(json_integer(8192)), 8192);
	assert_int_equal(size_ok(json_string("8589934591g")), 8589934591LL << 30);
}

static void test_size_refused(void **state)
{
	(void)state;
	size_bad(json_string(""));
	size_bad(json_string("m"));
	size_bad(json_string("1.5g"));
	size_bad(json_string("1mb"));
	size_bad(json_string("1t"));
	size_bad(json_string("-1m"));
	size_bad(json_string(" 1m"));
	size_bad(json_string("1m "));
	size_bad(json_string("0x10"));
	size_bad(json_string("8589934592g")); /* past INT64_MAX */
	size_bad(json_string("99999999999999999999"));
	size_bad(json_stringn("1\0m", 3));
	size_bad(json_real(1.5));
	size_bad(json_true());
	size_bad(json_integer(-1));
	size_bad(json_null());
}

static int parse(const char *text, cof_sandbox *sb, cof_err *e)
{
	json_t *j = json_loads(text, 0, NULL);
	int rc = cof_sandbox_parse(j, sb, e);

	json_decref(j);
	return rc;
}

static void test_defaults(void **state)
{
	cof_sandbox sb;
	cof_err e = {0};

	(void)state;
	assert_int_equal(cof_sandbox_parse(NULL, &sb, &e), 0);
	assert_int_equal(sb.scratch, 256LL << 20);
	assert_int_equal(sb.turn_disk, 64LL << 20);
	assert_int_equal(sb.user_disk, 128LL << 20);
	assert_int_equal(sb.network, 0);
	assert_int_equal(parse("{\"scratch\":\"8m\",\"network\":true}", &sb, &e), 0);
	assert_int_equal(sb.turn_disk, 2 << 20);
	assert_int_equal(sb.user_disk, 4 << 20);
	assert_int_equal(sb.network, 1);
}

static void test_order_edges(void **state)
{
	cof_sandbox sb;
	cof_err e = {0};

	(void)state;
	assert_int_equal(parse("{\"scratch\":\"1m\",\"turnDisk\":\"1m\",\"userDisk\":\"1m\"}",
			       &sb, &e), 0);
	assert_int_equal(parse("{\"scratch\":\"1m\",\"turnDisk\":\"1b\",\"userDisk\":\"1b\"}",
			       &sb, &e), 0);
	assert_int_equal(parse("{\"scratch\":\"2m\",\"turnDisk\":1048577,\"userDisk\":\"1m\"}",
			       &sb, &e), -1);
	assert_non_null(strstr(e.msg, "1048577"));
	assert_non_null(strstr(e.msg, "1048576"));
	cof_err_clear(&e);
	assert_int_equal(parse("{\"scratch\":\"1m\",\"turnDisk\":\"1m\",\"userDisk\":1048577}",
			       &sb, &e), -1);
	assert_non_null(strstr(e.msg, "scratch"));
	cof_err_clear(&e);
	assert_int_equal(parse("{\"scratch\":\"1m\",\"turnDisk\":0}", &sb, &e), -1);
	assert_non_null(strstr(e.msg, "turnDisk"));
	cof_err_clear(&e);
	assert_int_equal(parse("{\"scratch\":\"0\"}", &sb, &e), -1);
	cof_err_clear(&e);
	assert_int_equal(parse("{\"scratch\":\"1m\",\"other\":1}", &sb, &e), -1);
	assert_non_null(strstr(e.msg, "other"));
	cof_err_clear(&e);
	assert_int_equal(parse("{\"network\":\"yes\"}", &sb, &e), -1);
	cof_err_clear(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_size_forms),
		cmocka_unit_test(test_size_refused),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_order_edges),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
