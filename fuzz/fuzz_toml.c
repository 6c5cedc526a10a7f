/*
 * fuzz_toml.c — cof_toml_parse (src/util/toml.h) on any bytes.
 * Invariants: success gives an object and no error, failure no object and a
 * message naming the line and column; the answer depends on nothing but the
 * input (parsing it twice gives equal values).
 */
#include "fuzz.h"
#include "util/toml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *in = fuzz_dup_exact(data, size);
	json_t *a = NULL, *b = NULL;
	cof_err e = {0}, e2 = {0};
	int ra = cof_toml_parse(in, size, &a, &e), rb = cof_toml_parse(in, size, &b, &e2);

	FUZZ_CHECK(ra == rb, "two parses of one input disagree");
	if (ra == 0) {
		FUZZ_CHECK(json_is_object(a) && !e.code, "success without an object");
		FUZZ_CHECK(json_equal(a, b), "two parses of one input give different values");
	} else {
		FUZZ_CHECK(!a && e.code == COF_EVALIDATION && e.msg[0], "a refusal without a reason");
		FUZZ_CHECK(size > COF_TOML_MAX || strstr(e.msg, "line ") || strstr(e.msg, "UTF-8"),
			   "a refusal without its place: %s", e.msg);
	}
	json_decref(a);
	json_decref(b);
	cof_err_clear(&e);
	cof_err_clear(&e2);
	free(in);
	return 0;
}
