/*
 * fuzz_toml.c — cof_toml_parse / cof_toml_parse_lines (src/util/toml.h) on
 * any bytes. Invariants: success gives an object and no error, failure no
 * object and a message naming the line and column; the answer depends on
 * nothing but the input (parsing it twice gives equal values); the line map
 * has a line within the text for each path, and a key of the top table for
 * each top-level key written; and a parsed document written back as TOML
 * (every table inline, below) parses to the same value.
 */
#include <inttypes.h>
#include "fuzz.h"
#include "util/toml.h"
#include "util/util.h"

/* A TOML basic string: quote, backslash and control characters escaped. */
static void dump_str(cof_buf *b, const char *s, size_t n)
{
	cof_buf_add(b, "\"", 1);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\')
			cof_buf_addf(b, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			cof_buf_addf(b, "\\u%04X", c);
		else
			cof_buf_add(b, s + i, 1);
	}
	cof_buf_add(b, "\"", 1);
}

/* The value as TOML (tables inline); its nesting in *depth. */
static void dump(cof_buf *b, json_t *v, int level, int *depth)
{
	const char *k;
	json_t *x;
	size_t i, klen;

	if (level > *depth)
		*depth = level;
	switch (json_typeof(v)) {
	case JSON_STRING:
		dump_str(b, json_string_value(v), json_string_length(v));
		break;
	case JSON_INTEGER:
		cof_buf_addf(b, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		break;
	case JSON_REAL: {
		char num[40];
		snprintf(num, sizeof num, "%.17g", json_real_value(v));
		cof_buf_adds(b, num);
		if (!strpbrk(num, ".e"))
			cof_buf_adds(b, ".0"); /* a float, not an integer */
		break;
	}
	case JSON_TRUE:
	case JSON_FALSE:
		cof_buf_adds(b, json_is_true(v) ? "true" : "false");
		break;
	case JSON_ARRAY:
		cof_buf_adds(b, "[");
		json_array_foreach(v, i, x) {
			cof_buf_adds(b, i ? ", " : "");
			dump(b, x, level + 1, depth);
		}
		cof_buf_adds(b, "]");
		break;
	case JSON_OBJECT:
		cof_buf_adds(b, "{");
		i = 0;
		json_object_keylen_foreach(v, k, klen, x) {
			cof_buf_adds(b, i++ ? ", " : "");
			dump_str(b, k, klen); /* a key may hold U+0000 */
			cof_buf_adds(b, " = ");
			dump(b, x, level + 1, depth);
		}
		cof_buf_adds(b, "}");
		break;
	default:
		abort(); /* the parser makes no null */
	}
}

static void check_lines(json_t *doc, json_t *lines, const char *in, size_t size)
{
	const char *k;
	json_t *v;
	long nl = 1;

	for (size_t i = 0; i < size; i++)
		nl += in[i] == '\n';
	FUZZ_CHECK(json_is_object(lines), "no line map");
	json_object_foreach(lines, k, v)
		FUZZ_CHECK(json_is_integer(v) && json_integer_value(v) >= 1 &&
			   json_integer_value(v) <= nl, "path '%s' at line %" JSON_INTEGER_FORMAT
			   " of %ld", k, json_integer_value(v), nl);
	json_object_foreach(lines, k, v)
		if (!strpbrk(k, ".["))
			FUZZ_CHECK(json_object_get(doc, k), "line map names '%s', not in the document",
				   k);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *in = fuzz_dup_exact(data, size);
	json_t *a = NULL, *b = NULL, *lines = NULL;
	cof_err e = {0}, e2 = {0};
	int ra = cof_toml_parse(in, size, &a, &e),
	    rb = cof_toml_parse_lines(in, size, &b, &lines, &e2);

	FUZZ_CHECK(ra == rb, "two parses of one input disagree");
	if (ra == 0) {
		FUZZ_CHECK(json_is_object(a) && !e.code, "success without an object");
		FUZZ_CHECK(json_equal(a, b), "two parses of one input give different values");
		check_lines(a, lines, in, size);
		/* written back as TOML, read again: the same value */
		cof_buf t = COF_BUF_INIT;
		const char *k;
		json_t *v, *c = NULL;
		int depth = 0;
		size_t klen;
		json_object_keylen_foreach(a, k, klen, v) {
			dump_str(&t, k, klen);
			cof_buf_adds(&t, " = ");
			dump(&t, v, 0, &depth);
			cof_buf_adds(&t, "\n");
		}
		if (depth < COF_TOML_DEPTH && t.len <= COF_TOML_MAX) {
			cof_err e3 = {0};
			int rc = cof_toml_parse(t.data ? t.data : "", t.len, &c, &e3);
			FUZZ_CHECK(rc == 0, "the document written back is refused: %s\n%s", e3.msg,
				   t.data);
			FUZZ_CHECK(json_equal(a, c), "written back and read, the value differs:\n%s",
				   t.data);
			cof_err_clear(&e3);
		}
		json_decref(c);
		cof_buf_release(&t);
	} else {
		FUZZ_CHECK(!a && !b && !lines && e.code == COF_EVALIDATION && e.msg[0],
			   "a refusal without a reason");
		FUZZ_CHECK(!strcmp(e.msg, e2.msg), "two refusals differ: %s / %s", e.msg, e2.msg);
		FUZZ_CHECK(size > COF_TOML_MAX || strstr(e.msg, "line "),
			   "a refusal without its place: %s", e.msg);
	}
	json_decref(a);
	json_decref(b);
	json_decref(lines);
	cof_err_clear(&e);
	cof_err_clear(&e2);
	free(in);
	return 0;
}
