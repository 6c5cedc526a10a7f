/*
 * fuzz_path.c — cof_path_check, cof_prefix_check and cof_utf8_valid against
 * reference rules written here from API.md "General" (not from path.c):
 * a path is UTF-8, at most 4096 bytes after its one optional leading '/',
 * made of 1..255-byte segments none of which is "." or "..", with no NUL and
 * no other control character (0x01-0x1f, 0x7f).
 */
#include "fuzz.h"
#include "util/util.h"

/* The rules for whole segments of p[0..len). */
static int ref_segments_ok(const char *p, size_t len)
{
	size_t start = 0;

	for (size_t i = 0; i <= len; i++) {
		if (i < len && p[i] != '/')
			continue;
		size_t seg = i - start;
		if (seg == 0 || seg > 255)
			return 0;
		if ((seg == 1 && p[start] == '.') ||
		    (seg == 2 && p[start] == '.' && p[start + 1] == '.'))
			return 0;
		start = i + 1;
	}
	return 1;
}

/* No NUL and no other control character: 0x00-0x1f and 0x7f. */
static int ref_no_controls(const char *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)p[i] < 0x20 || (unsigned char)p[i] == 0x7f)
			return 0;
	return 1;
}

static int ref_path_ok(const char *p, size_t len)
{
	if (!ref_no_controls(p, len))
		return 0;
	if (len && p[0] == '/')
		p++, len--;
	return len >= 1 && len <= 4096 && fuzz_utf8_ref((const unsigned char *)p, len) &&
	       ref_segments_ok(p, len);
}

static void check_path(const uint8_t *data, size_t size)
{
	char *in = fuzz_dup_exact(data, size);
	const char *out = NULL;
	cof_err err = {0};
	int rc = cof_path_check(in, size, "path", &out, &err);
	int want = ref_path_ok(in, size);

	FUZZ_CHECK((rc == 0) == want, "cof_path_check says %d, the rules say %d (%s)", rc,
		   want, err.msg);
	FUZZ_CHECK(rc == 0 || (err.code == COF_EVALIDATION && err.msg[0]),
		   "a refusal must be a validation error with a message");
	if (rc == 0) {
		size_t n = size - (size_t)(out - in);
		FUZZ_CHECK(out == in || (out == in + 1 && in[0] == '/'),
			   "only one leading '/' may be stripped");
		FUZZ_CHECK(n >= 1 && n <= COF_PATH_MAX, "accepted length %zu", n);
		FUZZ_CHECK(out[0] != '/' && out[n - 1] != '/', "leading or trailing '/'");
		FUZZ_CHECK(!memmem(out, n, "//", 2), "accepted a '//'");
		FUZZ_CHECK(cof_utf8_valid(out, n), "accepted invalid UTF-8");

		/* Every accepted path is an accepted prefix, also with a '/' added. */
		char *s = malloc(n + 2);
		const char *pout = NULL;
		memcpy(s, out, n);
		s[n] = '\0';
		cof_err e2 = {0};
		FUZZ_CHECK(cof_prefix_check(s, "prefix", &pout, &e2) == 0 && pout == s,
			   "an accepted path is refused as a prefix: %s", e2.msg);
		if (n + 1 <= COF_PATH_MAX) {
			s[n] = '/', s[n + 1] = '\0';
			FUZZ_CHECK(cof_prefix_check(s, "prefix", &pout, &e2) == 0,
				   "path + '/' is refused as a prefix: %s", e2.msg);
		}
		cof_err_clear(&e2);
		free(s);
	}
	cof_err_clear(&err);
	free(in);
}

static void check_prefix(const uint8_t *data, size_t size)
{
	char *in = fuzz_dup_str(data, size);
	const char *out = NULL;
	cof_err err = {0};
	int rc = cof_prefix_check(in, "prefix", &out, &err);

	if (rc == 0) {
		size_t n = strlen(out);
		FUZZ_CHECK(out == in || (out == in + 1 && in[0] == '/'),
			   "only one leading '/' may be stripped");
		FUZZ_CHECK(n <= COF_PATH_MAX, "accepted a %zu-byte prefix", n);
		FUZZ_CHECK(fuzz_utf8_ref((const unsigned char *)out, n), "accepted bad UTF-8");
		FUZZ_CHECK(ref_no_controls(out, n), "accepted a control character");
		/* The whole segments (up to the last '/') follow the path rules; the
		 * last one may stop anywhere ("src/ma"). */
		const char *slash = memrchr(out, '/', n);
		if (slash)
			FUZZ_CHECK(ref_segments_ok(out, (size_t)(slash - out)),
				   "accepted a bad segment in '%.80s'", out);
	} else {
		FUZZ_CHECK(err.code == COF_EVALIDATION && err.msg[0], "bad refusal");
	}
	cof_err_clear(&err);
	free(in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *in = fuzz_dup_exact(data, size);
	int got = cof_utf8_valid(in, size);
	int want = fuzz_utf8_ref(data, size);

	FUZZ_CHECK(got == want, "cof_utf8_valid says %d, the reference says %d", got, want);
	free(in);
	check_path(data, size);
	check_prefix(data, size);
	return 0;
}
