/*
 * fuzz_sandbox.c — cof_size_parse and cof_sandbox_parse (an agent's `sandbox`
 * settings) on any bytes: the input is tried as a size string and, when it is
 * JSON, as the settings object. An accepted size is never negative; accepted
 * settings always keep 0 < turnDisk <= userDisk <= scratch.
 */
#include "fuzz.h"
#include "turn/turn.h"
#include "util/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *s = json_stringn((const char *)data, size), *j;
	cof_sandbox sb;
	cof_err err = {0};
	int64_t n = -1;

	if (s && cof_size_parse(s, "scratch", &n, &err) == 0)
		FUZZ_CHECK(n >= 0, "size %lld", (long long)n);
	cof_err_clear(&err);
	json_decref(s);
	j = json_loadb((const char *)data, size, 0, NULL);
	if (j && cof_sandbox_parse(j, &sb, &err) == 0)
		FUZZ_CHECK(sb.turn_disk > 0 && sb.turn_disk <= sb.user_disk &&
			   sb.user_disk <= sb.scratch, "turn %lld user %lld scratch %lld",
			   (long long)sb.turn_disk, (long long)sb.user_disk,
			   (long long)sb.scratch);
	cof_err_clear(&err);
	json_decref(j);
	return 0;
}
