/*
 * test_sigv4.c — util/sigv4.c against the worked examples of AWS's "Signature
 * Calculations for the Authorization Header" and "Authenticating Requests:
 * Using Query Parameters" pages (Amazon S3 API reference): the same
 * requests, keys and expected signatures.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "util/sigv4.h"

#define SECRET "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define EMPTY "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define HOST "examplebucket.s3.amazonaws.com"

/* Signs (method, path, query args, header values) under the parsed header
 * `auth` and compares with its own Signature. */
static void check(const char *auth, const char *method, const char *path,
		  const cof_sigv4_arg *args, size_t nargs, const char *const *vals,
		  const char *payload, const char *amz)
{
	cof_sigv4 a;
	const char *why = NULL;
	cof_buf b = COF_BUF_INIT;
	char sig[65];

	assert_int_equal(cof_sigv4_parse_header(auth, &a, &why), 0);
	assert_string_equal(a.access, "AKIAIOSFODNN7EXAMPLE");
	assert_int_equal(cof_sigv4_canonical(&b, method, path, args, nargs, &a, vals, payload,
					     &why), 0);
	cof_sigv4_sign(SECRET, &a, amz, b.data, b.len, sig);
	assert_string_equal(sig, a.signature);
	assert_true(cof_sigv4_equal(sig, a.signature));
	cof_buf_release(&b);
}

static void get_object(void **state)
{
	const char *vals[] = {HOST, "bytes=0-9", EMPTY, "20130524T000000Z"};

	check("AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/"
	      "aws4_request,SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,"
	      "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41",
	      "GET", "/test.txt", NULL, 0, vals, EMPTY, "20130524T000000Z");
}

static void put_object(void **state)
{
	const char *sha = "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072";
	const char *vals[] = {"Fri, 24 May 2013 00:00:00 GMT", HOST, sha, "20130524T000000Z",
			      "REDUCED_REDUNDANCY"};

	/* the path as a client sends it: '$' escaped */
	check("AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/"
	      "aws4_request,SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;"
	      "x-amz-storage-class,Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1"
	      "b5971af0ece108bd", "PUT", "/test%24file.text", NULL, 0, vals, sha,
	      "20130524T000000Z");
}

static void get_lifecycle(void **state)
{
	const char *vals[] = {HOST, EMPTY, "20130524T000000Z"};
	cof_sigv4_arg args[] = {{"lifecycle", NULL}};

	check("AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/"
	      "aws4_request,SignedHeaders=host;x-amz-content-sha256;x-amz-date,"
	      "Signature=fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543",
	      "GET", "/", args, 1, vals, EMPTY, "20130524T000000Z");
}

static void list_objects(void **state)
{
	const char *vals[] = {HOST, EMPTY, "20130524T000000Z"};
	/* sent in another order: the canonical query sorts them */
	cof_sigv4_arg args[] = {{"prefix", "J"}, {"max-keys", "2"}};

	check("AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/"
	      "aws4_request,SignedHeaders=host;x-amz-content-sha256;x-amz-date,"
	      "Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7",
	      "GET", "/", args, 2, vals, EMPTY, "20130524T000000Z");
}

static void presigned(void **state)
{
	cof_sigv4_arg args[] = {
		{"X-Amz-Algorithm", "AWS4-HMAC-SHA256"},
		{"X-Amz-Credential", "AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2F"
		 "aws4_request"},
		{"X-Amz-Date", "20130524T000000Z"},
		{"X-Amz-Expires", "86400"},
		{"X-Amz-SignedHeaders", "host"},
		{"X-Amz-Signature", "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404"},
	};
	const char *vals[] = {HOST};
	cof_sigv4 a;
	const char *why = NULL;
	cof_buf b = COF_BUF_INIT;
	char sig[65];

	assert_int_equal(cof_sigv4_parse_query(args, 6, &a, &why), 0);
	assert_int_equal(a.expires, 86400);
	assert_int_equal(cof_sigv4_canonical(&b, "GET", "/test.txt", args, 6, &a, vals,
					     "UNSIGNED-PAYLOAD", &why), 0);
	cof_sigv4_sign(SECRET, &a, a.amz_date, b.data, b.len, sig);
	assert_string_equal(sig, a.signature);
	cof_buf_release(&b);
	/* no X-Amz- argument: not presigned */
	assert_int_equal(cof_sigv4_parse_query(args, 0, &a, &why), 1);
}

static void refusals(void **state)
{
	cof_sigv4 a;
	const char *why = NULL;
	const char *bad[] = {
		"AWS4-HMAC-SHA1 Credential=a/20130524/r/s3/aws4_request, SignedHeaders=host, "
		"Signature=" EMPTY,
		"AWS4-HMAC-SHA256 Credential=a/2013052/r/s3/aws4_request, SignedHeaders=host, "
		"Signature=" EMPTY,
		"AWS4-HMAC-SHA256 Credential=a/20130524/r/ec2/aws4_request, SignedHeaders=host, "
		"Signature=" EMPTY,
		"AWS4-HMAC-SHA256 Credential=a/20130524/r/s3/aws4_request, SignedHeaders=x;host, "
		"Signature=" EMPTY,
		"AWS4-HMAC-SHA256 Credential=a/20130524/r/s3/aws4_request, SignedHeaders=Host, "
		"Signature=" EMPTY,
		"AWS4-HMAC-SHA256 Credential=a/20130524/r/s3/aws4_request, SignedHeaders=host, "
		"Signature=ABCD",
		"AWS4-HMAC-SHA256 Credential=a/20130524/r/s3/aws4_request, SignedHeaders=host",
		"AWS4-HMAC-SHA256 Credential=/20130524/r/s3/aws4_request, SignedHeaders=host, "
		"Signature=" EMPTY,
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		why = NULL;
		assert_int_equal(cof_sigv4_parse_header(bad[i], &a, &why), -1);
		assert_non_null(why);
	}
	int64_t t;
	assert_int_equal(cof_sigv4_time("20130524T000000Z", &t), 0);
	assert_int_equal(t, 1369353600);
	assert_int_equal(cof_sigv4_time("20131324T000000Z", &t), -1);
	assert_int_equal(cof_sigv4_time("20130524 000000Z", &t), -1);
	char out[8];
	assert_int_equal(cof_sigv4_decode("a%2", 3, out), -1);
	assert_int_equal(cof_sigv4_decode("a%00", 4, out), -1);
	assert_int_equal(cof_sigv4_decode("a%2Fb", 5, out), 3);
	assert_string_equal(out, "a/b");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(get_object),
		cmocka_unit_test(put_object),
		cmocka_unit_test(get_lifecycle),
		cmocka_unit_test(list_objects),
		cmocka_unit_test(presigned),
		cmocka_unit_test(refusals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
