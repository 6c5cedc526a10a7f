/*
 * test_s3_url.c — cof_s3_url_parse (`--blobs s3://BUCKET/PREFIX?endpoint=..&region=..`)
 * and the bits of the S3 client that need no peer (escaping, XML tags), data-driven.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "store/s3.h"

typedef struct good_case {
	const char *url;
	const char *bucket, *prefix, *endpoint, *region;
} good_case;

static const good_case good[] = {
	{ "s3://coffer/blobs?endpoint=http://127.0.0.1:9000&region=us-east-1",
	  "coffer", "blobs", "http://127.0.0.1:9000", "us-east-1" },
	/* no prefix, with and without the slash */
	{ "s3://coffer?endpoint=http://h:1", "coffer", "", "http://h:1", "us-east-1" },
	{ "s3://coffer/?endpoint=http://h:1", "coffer", "", "http://h:1", "us-east-1" },
	/* a trailing slash of the prefix or the endpoint says nothing */
	{ "s3://coffer/a/b/?endpoint=http://h:1/", "coffer", "a/b", "http://h:1", "us-east-1" },
	/* parameters in either order; escapes decoded */
	{ "s3://my.bucket-1/p_x.y-z?region=eu-west-3&endpoint=https%3A%2F%2Fs3.example.com",
	  "my.bucket-1", "p_x.y-z", "https://s3.example.com", "eu-west-3" },
	/* no endpoint: AWS's for the region */
	{ "s3://abc/x?region=eu-central-1", "abc", "x", "https://s3.eu-central-1.amazonaws.com",
	  "eu-central-1" },
	{ "s3://abc", "abc", "", "https://s3.us-east-1.amazonaws.com", "us-east-1" },
	/* an empty parameter (a stray &) is nothing */
	{ "s3://abc/p?&region=r1&", "abc", "p", "https://s3.r1.amazonaws.com", "r1" },
	{ "s3://abc/p?endpoint=http://[::1]:9000", "abc", "p", "http://[::1]:9000", "us-east-1" },
	/* 63 characters */
	{ "s3://aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "",
	  "https://s3.us-east-1.amazonaws.com", "us-east-1" },
};

typedef struct bad_case {
	const char *url;
	const char *says;  /* a phrase the message must hold: the part and the rule */
} bad_case;

static const bad_case bad[] = {
	{ "http://coffer/blobs", "must start with s3://" },
	{ "S3://coffer/blobs", "must start with s3://" },
	{ "s3://", "the bucket" },
	{ "s3://ab", "bucket 'ab' must have 3 to 63" },
	{ "s3://aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "3 to 63" },
	{ "s3://Coffer/x", "bucket 'Coffer' may hold only a-z" },
	{ "s3://cof_fer/x", "may hold only a-z, 0-9, '.' and '-'" },
	{ "s3://-coffer/x", "start and end with a letter or digit" },
	{ "s3://coffer./x", "start and end with a letter or digit" },
	{ "s3://coffer/a//b", "prefix 'a//b' has an empty" },
	{ "s3://coffer/a/../b", "'..' segment" },
	{ "s3://coffer/./b", "'.' or '..' segment" },
	{ "s3://coffer/a b", "prefix 'a b' may hold only" },
	{ "s3://coffer/a%2Fb", "prefix 'a%2Fb' may hold only" },
	{ "s3://coffer/\xc3\xa9", "may hold only A-Z" },
	{ "s3://coffer/p?endpoint=ftp://h", "endpoint 'ftp://h' must be http://HOST" },
	{ "s3://coffer/p?endpoint=http://", "must be http://HOST" },
	{ "s3://coffer/p?endpoint=http://h/path", "no path, user or query" },
	{ "s3://coffer/p?endpoint=http://u@h", "no path, user or query" },
	{ "s3://coffer/p?endpoint", "'endpoint' needs a value" },
	{ "s3://coffer/p?endpoint=http://h%zz", "'endpoint' needs a value" },
	{ "s3://coffer/p?endpoint=http://h%", "'endpoint' needs a value" },
	{ "s3://coffer/p?endpoint=http://h%00", "'endpoint' needs a value" },
	{ "s3://coffer/p?region=", "the region is empty" },
	{ "s3://coffer/p?region=US-EAST-1", "region 'US-EAST-1' may hold only" },
	{ "s3://coffer/p?region=a&region=b", "'region' is given twice" },
	{ "s3://coffer/p?endpoint=http://a&endpoint=http://b", "'endpoint' is given twice" },
	{ "s3://coffer/p?bucket=x", "unknown parameter 'bucket' (known: endpoint, region)" },
	{ "s3://coffer/p?Region=x", "unknown parameter 'Region'" },
};

static void test_good_urls(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
		cof_s3_url u;
		cof_err err = {0};
		int rc = cof_s3_url_parse(good[i].url, &u, &err);
		if (rc)
			fail_msg("%s: refused: %s", good[i].url, err.msg);
		assert_string_equal(u.bucket, good[i].bucket);
		assert_string_equal(u.prefix, good[i].prefix);
		assert_string_equal(u.endpoint, good[i].endpoint);
		assert_string_equal(u.region, good[i].region);
	}
}

static void test_bad_urls(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		cof_s3_url u;
		cof_err err = {0};
		int rc = cof_s3_url_parse(bad[i].url, &u, &err);
		if (rc != -1)
			fail_msg("%s: accepted (bucket '%s', prefix '%s')", bad[i].url, u.bucket,
				 u.prefix);
		assert_int_equal(err.code, COF_EVALIDATION);
		if (!strstr(err.msg, bad[i].says))
			fail_msg("%s: message '%s' does not say '%s'", bad[i].url, err.msg,
				 bad[i].says);
	}
}

static void test_long_parts_refused(void **state)
{
	char url[1200];
	cof_s3_url u;
	cof_err err = {0};

	(void)state;
	snprintf(url, sizeof url, "s3://abc/%0300d", 0);
	assert_int_equal(cof_s3_url_parse(url, &u, &err), -1);
	assert_non_null(strstr(err.msg, "prefix is longer than 255 bytes"));
	cof_err_clear(&err);
	snprintf(url, sizeof url, "s3://abc/p?endpoint=http://%0300d", 0);
	assert_int_equal(cof_s3_url_parse(url, &u, &err), -1);
	if (!strstr(err.msg, "'endpoint' needs a value of at most 255 bytes"))
		fail_msg("%s", err.msg);
}

static void test_escape(void **state)
{
	cof_buf b = COF_BUF_INIT;

	(void)state;
	cof_s3_escape(&b, "a/b c+=~._-Z9", 0);
	assert_string_equal(b.data, "a%2Fb%20c%2B%3D~._-Z9");
	cof_buf_reset(&b);
	cof_s3_escape(&b, "p/ab/cd", 1);
	assert_string_equal(b.data, "p/ab/cd");
	cof_buf_release(&b);
}

static void test_xml_tag(void **state)
{
	const char *xml = "<R><Contents><Key>a&amp;b</Key><ETag>&quot;x&quot;</ETag></Contents>"
			  "<Contents><Key>c</Key></Contents><T>1</T></R>";
	const char *from = xml;
	char out[64], block[128];

	(void)state;
	assert_int_equal(cof_s3_xml_tag(xml, &from, "Contents", block, sizeof block), 0);
	const char *b = block;
	assert_int_equal(cof_s3_xml_tag(block, &b, "Key", out, sizeof out), 0);
	assert_string_equal(out, "a&b");
	assert_int_equal(cof_s3_xml_tag(block, &b, "ETag", out, sizeof out), 0);
	assert_string_equal(out, "\"x\"");
	assert_int_equal(cof_s3_xml_tag(xml, &from, "Contents", block, sizeof block), 0);
	assert_string_equal(block, "<Key>c</Key>");
	assert_int_equal(cof_s3_xml_tag(xml, &from, "Contents", block, sizeof block), -1);
	/* truncated to the buffer, never past it */
	from = xml;
	assert_int_equal(cof_s3_xml_tag(xml, &from, "Key", out, 3), 0);
	assert_string_equal(out, "a&");
	/* an unclosed tag is not found */
	from = "<A>open";
	assert_int_equal(cof_s3_xml_tag(from, &from, "A", out, sizeof out), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good_urls),
		cmocka_unit_test(test_bad_urls),
		cmocka_unit_test(test_long_parts_refused),
		cmocka_unit_test(test_escape),
		cmocka_unit_test(test_xml_tag),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
