/*
 * test_toml.c — util/toml.c: seed 000's deployment.toml, each kind of value,
 * and the errors the spec asks for (with line and column). The TOML test
 * suite's files are run by hand (docs/cli.md, "coffer deploy").
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "util/toml.h"

static json_t *parse_ok(const char *text)
{
	json_t *o = NULL;
	cof_err e = {0};

	if (cof_toml_parse(text, strlen(text), &o, &e))
		fail_msg("'%s' refused: %s", text, e.msg);
	return o;
}

static void refused(const char *text, const char *words)
{
	json_t *o = NULL;
	cof_err e = {0};

	if (cof_toml_parse(text, strlen(text), &o, &e) == 0)
		fail_msg("'%s' parsed", text);
	assert_null(o);
	if (!strstr(e.msg, "line ") || (words && !strstr(e.msg, words)))
		fail_msg("'%s': message '%s' lacks the line or '%s'", text, e.msg, words);
	cof_err_clear(&e);
}

static void same(const char *text, const char *json)
{
	json_t *o = parse_ok(text), *w = json_loads(json, JSON_DECODE_ANY, NULL);
	char *a = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);

	assert_non_null(w);
	if (!json_equal(o, w))
		fail_msg("'%s' gave %s, want %s", text, a, json);
	free(a);
	json_decref(o);
	json_decref(w);
}

static void test_seed_000(void **state)
{
	(void)state;
	same("[[agents]]\nid = \"field-guide\"\npackage = \"../examples/field-guide\"\n"
	     "[agents.sandbox]\nscratch = \"256m\"\nturn_disk = \"64m\"    # default: a quarter"
	     " of scratch\nuser_disk = \"128m\"   # default: half of scratch\n\n[output]\n"
	     "files = [\"png\", \"csv\"]   # any of png, svg, csv, pdf\n",
	     "{\"agents\":[{\"id\":\"field-guide\",\"package\":\"../examples/field-guide\","
	     "\"sandbox\":{\"scratch\":\"256m\",\"turn_disk\":\"64m\",\"user_disk\":\"128m\"}}],"
	     "\"output\":{\"files\":[\"png\",\"csv\"]}}");
}

static void test_values(void **state)
{
	(void)state;
	same("a = 1_000\nb = 0xDEAD_beef\nc = 0o17\nd = 0b101\ne = +3.5e-1\nf = -inf\ng = nan\n",
	     "{\"a\":1000,\"b\":3735928559,\"c\":15,\"d\":5,\"e\":0.35,\"f\":\"-inf\",\"g\":\"nan\"}");
	refused("b = -0x1", "hexadecimal");
	same("t = true\nf = false\nd = 1979-05-27\nlt = 07:32:00.5\n"
	     "odt = 1979-05-27 07:32:00z\n",
	     "{\"t\":true,\"f\":false,\"d\":\"1979-05-27\",\"lt\":\"07:32:00.5\","
	     "\"odt\":\"1979-05-27T07:32:00Z\"}");
	same("s = \"tab\\there \\u00e9 \\U0001F600\"\nl = 'C:\\path'\n"
	     "m = \"\"\"\nline one \\\n    continued\"\"\"\nq = '''x''y'''\n",
	     "{\"s\":\"tab\\there \\u00e9 \\ud83d\\ude00\",\"l\":\"C:\\\\path\","
	     "\"m\":\"line one continued\",\"q\":\"x''y\"}");
	same("a = [1, [2, 3], { x = 1 }, ]\n", "{\"a\":[1,[2,3],{\"x\":1}]}");
	same("a.b.c = 1\na.b.d = 2\n\"quoted key\".x = 'y'\n",
	     "{\"a\":{\"b\":{\"c\":1,\"d\":2}},\"quoted key\":{\"x\":\"y\"}}");
	same("[a]\nb.c = 1\n[a.b.d]\ne = 2\n[[f]]\n[[f]]\ng = 1\n",
	     "{\"a\":{\"b\":{\"c\":1,\"d\":{\"e\":2}}},\"f\":[{},{\"g\":1}]}");
}

static void test_errors(void **state)
{
	(void)state;
	refused("a = 1\na = 2\n", "defined already");
	refused("[a]\n[a]\n", "defined already");
	refused("a = {x = 1}\na.y = 2\n", "defined already");
	refused("a = 9223372036854775808\n", "64-bit");
	refused("a = 01\n", "leading zero");
	refused("a = \"\\ud800\"\n", "scalar");
	refused("a = \"\\q\"\n", "escape");
	refused("a = \"open\n", "newline");
	refused("a = 1 b = 2\n", "end of the line");
	refused("a = 1979-02-30\n", "date");
	refused("a = [1 2]\n", "array");
	refused("a = {x = 1,}\n", "trailing");
	refused("[[a]]\n[a]\n", "defined already");
	refused("a = [1]\n[[a]]\n", "array of tables");
	refused("x = 1\n\n  y = = 2\n", "line 3, column 7");
	refused("a = 1 # bell \a\n", "control");
	char deep[400] = "a = ";
	for (int i = 0; i < 70; i++)
		strcat(deep, "[");
	refused(deep, "deeper");
	json_t *o = NULL;
	cof_err e = {0};
	assert_int_equal(cof_toml_parse("a = \"\xff\"", 7, &o, &e), -1); /* not UTF-8 */
	assert_non_null(strstr(e.msg, "line 1, column 6"));
	cof_err_clear(&e);
}

/* Each kind of value, valid forms and refused ones (TOML 1.0's ABNF). */
static void test_strings(void **state)
{
	(void)state;
	same("a = '''\nfirst\r\nsecond'''\nb = \"\"\"a\"\"\"\"\nc = ''''x'''\n",
	     "{\"a\":\"first\\nsecond\",\"b\":\"a\\\"\",\"c\":\"'x\"}");
	same("a = \"\\b\\f\\r\\\\ \\\" \\u0041\\U0010FFFF\"\n",
	     "{\"a\":\"\\b\\f\\r\\\\ \\\" A\\udbff\\udfff\"}");
	same("\"\" = 1\n'lit.key' = 2\n", "{\"\":1,\"lit.key\":2}");
	refused("a = \"\\e\"\n", "escape"); /* TOML 1.1, not 1.0 */
	refused("a = \"\\x41\"\n", "escape");
	refused("a = \"\\U00110000\"\n", "scalar");
	refused("a = \"\\u12\"\n", "hex digits");
	refused("a = 'one\ntwo'\n", "newline");
	refused("a = '''open\n", "not closed");
	refused("\"\"\"k\"\"\" = 1\n", "multi-line");
	refused("a = \"x\x01\"\n", "control");
	/* a quoted key may hold U+0000: kept whole, by its length */
	json_t *o = parse_ok("\"a\\u0000b\" = 1\n'a' = 2\n");
	assert_int_equal(json_integer_value(json_object_getn(o, "a\0b", 3)), 1);
	assert_int_equal(json_integer_value(json_object_get(o, "a")), 2);
	assert_int_equal(json_object_size(o), 2);
	json_decref(o);
}

static void test_integers(void **state)
{
	(void)state;
	same("a = +0\nb = -0\nc = 0x7FFFFFFFFFFFFFFF\nd = -9223372036854775808\ne = 0o0_7\n",
	     "{\"a\":0,\"b\":0,\"c\":9223372036854775807,\"d\":-9223372036854775808,\"e\":7}");
	refused("a = 0x8000000000000000\n", "64-bit");
	refused("a = -9223372036854775809\n", "64-bit");
	refused("a = 1__0\n", NULL);
	refused("a = _1\n", NULL);
	refused("a = 1_\n", NULL);
	refused("a = 0b102\n", "binary");
	refused("a = +0x1\n", "hexadecimal");
	refused("a = 0X1\n", NULL);
}

static void test_floats(void **state)
{
	(void)state;
	json_t *o = parse_ok("a = -0.0\nb = 1e+10\nc = 6.626e-34\nd = +inf\ne = -nan\n"
			     "f = 1_0.0_1\n");
	assert_true(json_real_value(json_object_get(o, "a")) == 0.0);
	assert_true(json_real_value(json_object_get(o, "b")) == 1e10);
	assert_true(json_real_value(json_object_get(o, "c")) == 6.626e-34);
	assert_string_equal(json_string_value(json_object_get(o, "d")), "inf");
	assert_string_equal(json_string_value(json_object_get(o, "e")), "nan");
	assert_true(json_real_value(json_object_get(o, "f")) == 10.01);
	json_decref(o);
	refused("a = 1.\n", "fraction");
	refused("a = .5\n", NULL);
	refused("a = 1e\n", "exponent");
	refused("a = 1.e5\n", "fraction");
	refused("a = 01.5\n", "leading zero");
	refused("a = 1e400\n", "out of range");
	refused("a = infinity\n", NULL);
	refused("a = True\n", NULL);
}

static void test_datetimes(void **state)
{
	(void)state;
	same("a = 1979-05-27T00:32:00.999999-07:00\nb = 1979-05-27t07:32:00\n"
	     "c = 2000-02-29\nd = 00:00:60\n",
	     "{\"a\":\"1979-05-27T00:32:00.999999-07:00\",\"b\":\"1979-05-27T07:32:00\","
	     "\"c\":\"2000-02-29\",\"d\":\"00:00:60\"}");
	refused("a = 1979-05-27T25:00:00\n", "time");
	refused("a = 1900-02-29\n", "date");
	refused("a = 07:32\n", "time"); /* seconds are required in TOML 1.0 */
	refused("a = 1979-05-27T07:32:00+24:00\n", "offset");
	refused("a = 1979-05-27T07:32:00.\n", "time");
}

static void test_tables(void **state)
{
	(void)state;
	same("[a.b]\nc = 1\n[a]\nd = 2\n", "{\"a\":{\"b\":{\"c\":1},\"d\":2}}");
	same("[[fruits]]\nname = 'apple'\n[fruits.physical]\ncolor = 'red'\n"
	     "[[fruits.varieties]]\nname = 'red delicious'\n[[fruits]]\nname = 'banana'\n",
	     "{\"fruits\":[{\"name\":\"apple\",\"physical\":{\"color\":\"red\"},"
	     "\"varieties\":[{\"name\":\"red delicious\"}]},{\"name\":\"banana\"}]}");
	same("a = {b = {c = [1, {d = 2}]}, 'e'.f = true}\n",
	     "{\"a\":{\"b\":{\"c\":[1,{\"d\":2}]},\"e\":{\"f\":true}}}");
	refused("a = {}\n[a]\n", "defined already");
	refused("a = {}\n[a.b]\n", "extended");
	refused("[a]\nb.c = 1\n[a.b]\n", "defined already");
	refused("a.b = 1\na.b.c = 2\n", "defined already");
	refused("a = [{}]\n[[a]]\n", "array of tables");
	refused("[a\n", "close");
	refused("[]\n", "key");
	refused("a. = 1\n", "key");
	refused("\xc3\xa9 = 1\n", "key");
	refused("a = {b = 1\n}\n", "inline table");
	refused("a =\n", "value");
}

/* The line of each key and header, for messages naming where a key was written. */
static void test_lines(void **state)
{
	(void)state;
	json_t *o = NULL, *l = NULL;
	cof_err e = {0};
	const char *text = "top = 1\n[[agents]]\nid = 'a'\n\n[[agents]]\nid = 'b'\n"
			   "[agents.sandbox]\nscratch = '1m'\nx.y = 2\n";

	assert_int_equal(cof_toml_parse_lines(text, strlen(text), &o, &l, &e), 0);
	json_t *want = json_pack("{s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i}", "top", 1,
				 "agents[0]", 2, "agents[0].id", 3, "agents[1]", 5,
				 "agents[1].id", 6, "agents[1].sandbox", 7,
				 "agents[1].sandbox.scratch", 8, "agents[1].sandbox.x", 9,
				 "agents[1].sandbox.x.y", 9);
	char *got = json_dumps(l, JSON_SORT_KEYS);
	if (!json_equal(l, want))
		fail_msg("lines: %s", got);
	free(got);
	json_decref(want);
	json_decref(o);
	json_decref(l);
	/* refused: no lines, the error still placed */
	assert_int_equal(cof_toml_parse_lines("a = 1\nb = \"\xc3\"\n", 12, &o, &l, &e), -1);
	assert_null(o);
	assert_null(l);
	assert_non_null(strstr(e.msg, "line 2, column 6"));
	assert_non_null(strstr(e.msg, "UTF-8"));
	cof_err_clear(&e);
	assert_int_equal(cof_toml_parse("a = 1\n\0", 7, &o, &e), -1);
	assert_non_null(strstr(e.msg, "line 2, column 1: a NUL byte"));
	cof_err_clear(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_seed_000),
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_strings),
		cmocka_unit_test(test_integers),
		cmocka_unit_test(test_floats),
		cmocka_unit_test(test_datetimes),
		cmocka_unit_test(test_tables),
		cmocka_unit_test(test_lines),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
