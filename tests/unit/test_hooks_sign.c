/*
 * test_hooks_sign.c — cof_hooks_sign (hooks/deliver.c) against the Standard
 * Webhooks specification's published test vector, and its refusals: a
 * secret without the whsec_ prefix or with a broken base64 part.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "hooks/hooks.h"

/* The specification's vector (standard-webhooks, spec/standard-webhooks.md). */
static void spec_vector(void **state)
{
	const char *body = "{\"test\": 2432232314}";
	char sig[80];

	(void)state;
	assert_int_equal(cof_hooks_sign("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
					"msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body,
					strlen(body), sig, sizeof sig), 0);
	assert_string_equal(sig, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
}

/* A changed body, id or timestamp gives another signature. */
static void binds_every_part(void **state)
{
	const char *s = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
	char a[80], b[80], c[80], d[80];

	(void)state;
	assert_int_equal(cof_hooks_sign(s, "msg_1", 10, "{}", 2, a, sizeof a), 0);
	assert_int_equal(cof_hooks_sign(s, "msg_2", 10, "{}", 2, b, sizeof b), 0);
	assert_int_equal(cof_hooks_sign(s, "msg_1", 11, "{}", 2, c, sizeof c), 0);
	assert_int_equal(cof_hooks_sign(s, "msg_1", 10, "[]", 2, d, sizeof d), 0);
	assert_string_not_equal(a, b);
	assert_string_not_equal(a, c);
	assert_string_not_equal(a, d);
}

static void bad_secrets(void **state)
{
	char sig[80];

	(void)state;
	assert_int_equal(cof_hooks_sign("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "m", 1, "", 0, sig,
					sizeof sig), -1);
	assert_int_equal(cof_hooks_sign("whsec_%%%%", "m", 1, "", 0, sig, sizeof sig), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(spec_vector),
		cmocka_unit_test(binds_every_part),
		cmocka_unit_test(bad_secrets),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
