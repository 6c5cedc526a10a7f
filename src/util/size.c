/*
 * size.c — sizes in Docker's form ("256m", "1g", "512k", "100b", "4096"):
 * the one parser of sizes written by people.
 */
#include <ctype.h>
#include <stdint.h>
#include <string.h>
#include "util/util.h"

int cof_size_parse(const json_t *v, const char *what, int64_t *out, cof_err *err)
{
	static const char help[] = "write a size in Docker's form: digits and one of b, k, "
				   "m, g (\"256m\", \"1g\", \"512k\", \"100b\"; plain digits are bytes)";
	const char *s;
	int64_t n = 0, mul = 1;
	size_t i = 0, len;

	if (json_is_integer(v) && json_integer_value(v) >= 0) {
		*out = json_integer_value(v);
		return 0;
	}
	if (!json_is_string(v))
		return cof_error(err, COF_EVALIDATION, "'%s' must be a string; %s", what, help);
	s = json_string_value(v);
	len = strlen(s);
	if (len == 0 || len != json_string_length(v) || !isdigit((unsigned char)s[0]))
		return cof_error(err, COF_EVALIDATION, "'%s' is '%.40s'; %s", what, s, help);
	for (; i < len && isdigit((unsigned char)s[i]); i++) {
		if (n > (INT64_MAX - 9) / 10)
			return cof_error(err, COF_EVALIDATION, "'%s' is '%.40s': too large", what, s);
		n = n * 10 + (s[i] - '0');
	}
	if (i < len) {
		switch (tolower((unsigned char)s[i])) {
		case 'b': mul = 1; break;
		case 'k': mul = 1024; break;
		case 'm': mul = 1024 * 1024; break;
		case 'g': mul = 1024 * 1024 * 1024; break;
		default:
			return cof_error(err, COF_EVALIDATION, "'%s' is '%.40s'; %s", what, s, help);
		}
		if (i + 1 != len)
			return cof_error(err, COF_EVALIDATION, "'%s' is '%.40s'; %s", what, s, help);
	}
	if (n > INT64_MAX / mul)
		return cof_error(err, COF_EVALIDATION, "'%s' is '%.40s': too large", what, s);
	*out = n * mul;
	return 0;
}
