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
	cof_err_clear(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_seed_000),
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
