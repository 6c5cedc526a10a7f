/*
 * test_util.c — src/util: path and prefix checks, UTF-8, cof_buf, base64
 * (RFC 4648 section 10 vectors), JSON body checks and size formatting.
 * Data-driven where the cases are many.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "util/util.h"
#include "util/addr.h"

/* A path of exactly `len` bytes of 'a' with a '/' every 200 bytes. */
static char *long_path(size_t len)
{
	char *p = malloc(len + 1);
	assert_non_null(p);
	for (size_t i = 0; i < len; i++)
		p[i] = (i % 200 == 199) ? '/' : 'a';
	p[len] = '\0';
	assert_true(len == 0 || p[len - 1] != '/');
	return p;
}

/* 0 when accepted (and *out set), -1 with a validation error naming "path". */
static int check(const char *s, size_t len, const char **out)
{
	cof_err err = {0};
	const char *o = NULL;
	int rc = cof_path_check(s, len, "path", &o, &err);

	if (rc == 0) {
		assert_int_equal(err.code, COF_OK);
		if (out)
			*out = o;
	} else {
		assert_int_equal(rc, -1);
		assert_int_equal(err.code, COF_EVALIDATION);
		assert_non_null(strstr(err.msg, "path"));
	}
	cof_err_clear(&err);
	return rc;
}

#define OK(s) assert_int_equal(check(s, strlen(s), NULL), 0)
#define BAD(s) assert_int_equal(check(s, strlen(s), NULL), -1)

static void test_path_length(void **state)
{
	const char *out;
	char *p;
	(void)state;

	p = long_path(4096);
	assert_int_equal(check(p, 4096, &out), 0);
	assert_ptr_equal(out, p);
	free(p);
	p = long_path(4097);
	assert_int_equal(check(p, 4097, NULL), -1);
	free(p);

	/* The limit counts the path without its leading '/'. */
	p = long_path(4097);
	p[0] = '/';
	assert_int_equal(check(p, 4097, &out), 0);
	assert_ptr_equal(out, p + 1);
	free(p);
}

static void test_path_segment_length(void **state)
{
	char seg[300];
	char path[400];
	(void)state;

	memset(seg, 'b', 255);
	seg[255] = '\0';
	OK(seg);
	snprintf(path, sizeof path, "dir/%s/x", seg);
	OK(path);
	memset(seg, 'b', 256);
	seg[256] = '\0';
	BAD(seg);
	snprintf(path, sizeof path, "dir/%s", seg);
	BAD(path);
	snprintf(path, sizeof path, "%s/x", seg);
	BAD(path);
}

static void test_path_segments(void **state)
{
	const char *out;
	(void)state;

	OK("a");
	OK("a/b/c.txt");
	OK("...");
	OK(".a");
	OK("a..");
	OK("a/.b/..c");
	OK("with space/and:colon");
	BAD("");
	BAD("/");
	BAD(".");
	BAD("..");
	BAD("./a");
	BAD("a/.");
	BAD("a/./b");
	BAD("../a");
	BAD("a/..");
	BAD("a/../b");
	BAD("a//b");
	BAD("a/");
	BAD("a/b/");
	BAD("//a");    /* only one leading '/' is stripped */
	BAD("/a/");

	/* One leading '/' is stripped. */
	assert_int_equal(check("/a/b", 4, &out), 0);
	assert_string_equal(out, "a/b");

	/* NUL anywhere in the counted bytes. */
	assert_int_equal(check("a\0b", 3, NULL), -1);
	assert_int_equal(check("ab\0", 3, NULL), -1);
	assert_int_equal(check("\0", 1, NULL), -1);
	/* ... but `len` bounds the check: "ab" of "ab\0c". */
	assert_int_equal(check("ab\0c", 2, NULL), 0);

	/* NULL is refused, not a crash. */
	cof_err err = {0};
	assert_int_equal(cof_path_check(NULL, 0, "path", &out, &err), -1);
	assert_int_equal(err.code, COF_EVALIDATION);
	cof_err_clear(&err);
}

typedef struct utf8_case {
	const char *s;
	int valid;
	const char *what;
} utf8_case;

static const utf8_case utf8_cases[] = {
	{"plain ascii", 1, "ascii"},
	{"caf\xc3\xa9", 1, "2-byte"},
	{"\xe2\x82\xac", 1, "3-byte euro"},
	{"\xf0\x9f\x98\x80", 1, "4-byte emoji"},
	{"\xf4\x8f\xbf\xbf", 1, "U+10FFFF"},
	{"\xee\x80\x80", 1, "U+E000 (after the surrogates)"},
	{"\xed\x9f\xbf", 1, "U+D7FF (before the surrogates)"},
	{"\xff", 0, "0xFF"},
	{"\xfe", 0, "0xFE"},
	{"\x80", 0, "lone continuation"},
	{"a\xbf", 0, "continuation after ascii"},
	{"\xc3", 0, "truncated 2-byte"},
	{"\xe2\x82", 0, "truncated 3-byte"},
	{"\xf0\x9f\x98", 0, "truncated 4-byte"},
	{"\xc3(", 0, "bad continuation"},
	{"\xc0\xaf", 0, "overlong '/' (2 bytes)"},
	{"\xc1\xbf", 0, "overlong 2-byte"},
	{"\xe0\x80\xaf", 0, "overlong '/' (3 bytes)"},
	{"\xe0\x9f\xbf", 0, "overlong 3-byte"},
	{"\xf0\x80\x80\xaf", 0, "overlong '/' (4 bytes)"},
	{"\xf0\x8f\xbf\xbf", 0, "overlong 4-byte"},
	{"\xed\xa0\x80", 0, "surrogate U+D800"},
	{"\xed\xbf\xbf", 0, "surrogate U+DFFF"},
	{"\xed\xa0\xbd\xed\xb8\x80", 0, "CESU-8 surrogate pair"},
	{"\xf4\x90\x80\x80", 0, "U+110000"},
	{"\xf5\x80\x80\x80", 0, "lead 0xF5"},
	{"\xf8\x88\x80\x80\x80", 0, "5-byte form"},
};

static void test_path_utf8(void **state)
{
	char path[64];
	(void)state;

	for (size_t i = 0; i < sizeof utf8_cases / sizeof *utf8_cases; i++) {
		const utf8_case *c = &utf8_cases[i];
		size_t n = strlen(c->s);
		if (cof_utf8_valid(c->s, n) != c->valid)
			fail_msg("cof_utf8_valid: %s: want %d", c->what, c->valid);
		snprintf(path, sizeof path, "dir/%s/x", c->s);
		if ((check(path, strlen(path), NULL) == 0) != c->valid)
			fail_msg("cof_path_check: %s: want %s", c->what,
				 c->valid ? "accepted" : "refused");
	}
	/* `len` bounds the check: a 2-byte character cut by len is invalid. */
	assert_int_equal(cof_utf8_valid("\xc3\xa9", 1), 0);
	assert_int_equal(cof_utf8_valid("", 0), 1);
}

static int prefix(const char *s, const char **out)
{
	cof_err err = {0};
	const char *o = NULL;
	int rc = cof_prefix_check(s, "'prefix'", &o, &err);

	if (rc == 0) {
		assert_non_null(o);
		if (out)
			*out = o;
	} else {
		assert_int_equal(err.code, COF_EVALIDATION);
		assert_non_null(strstr(err.msg, "'prefix'"));
	}
	cof_err_clear(&err);
	return rc;
}

static void test_prefix_check(void **state)
{
	const char *out;
	(void)state;

	assert_int_equal(prefix(NULL, &out), 0);
	assert_string_equal(out, "");
	assert_int_equal(prefix("", &out), 0);
	assert_string_equal(out, "");
	assert_int_equal(prefix("/", &out), 0);
	assert_string_equal(out, "");
	assert_int_equal(prefix("/src/", &out), 0);
	assert_string_equal(out, "src/");
	assert_int_equal(prefix("src/ma", &out), 0); /* may stop mid-segment */
	assert_string_equal(out, "src/ma");
	assert_int_equal(prefix("src/sub/", NULL), 0);
	assert_int_equal(prefix("..foo", NULL), 0);
	assert_int_equal(prefix("a//", NULL), -1);
	assert_int_equal(prefix("a//b", NULL), -1);
	assert_int_equal(prefix("//", NULL), -1);
	assert_int_equal(prefix("../x", NULL), -1);
	assert_int_equal(prefix("a/../", NULL), -1);
	assert_int_equal(prefix("./", NULL), -1);
	assert_int_equal(prefix("a/./b", NULL), -1);
	assert_int_equal(prefix("\xc0\xaf", NULL), -1);
	assert_int_equal(prefix("src/\xed\xa0\x80", NULL), -1);

	char seg[300];
	memset(seg, 'b', 256);
	strcpy(seg + 256, "/");
	assert_int_equal(prefix(seg, NULL), -1); /* a whole segment over 255 */

	char *p = long_path(4096);
	assert_int_equal(prefix(p, NULL), 0);
	free(p);
	p = long_path(4097);
	assert_int_equal(prefix(p, NULL), -1);
	free(p);
}

/* ---------------------------------------------------------------- cof_buf */

/* Control characters (0x01-0x1f, 0x7f) are refused in paths and prefixes;
 * their neighbours 0x20 and 0x80+ (as UTF-8) are not. */
static void test_path_controls(void **state)
{
	char s[8];
	(void)state;

	for (int c = 1; c < 0x20; c++) {
		snprintf(s, sizeof s, "a%cb", c);
		BAD(s);
		assert_int_equal(prefix(s, NULL), -1);
	}
	BAD("a\x7f");
	BAD("dir/a\r\nX-Inj: 1");
	assert_int_equal(prefix("x\x7f", NULL), -1);
	OK("a b");
	OK("~!@#$%^&*()_+`-={}|[]\\:\";'<>?,.");
	OK("\xc2\x80"); /* U+0080 is a C1 control in Unicode but not in the contract */
}

/* cof_media_type_check: one RFC 9110 media type. */
static void test_media_type(void **state)
{
	static const char *const good[] = {
		"text/plain", "text/plain; charset=utf-8", "text/plain;charset=\"utf-8\"",
		"application/vnd.api+json", "a/b ; x=\"q \\\" t\" ; y=z", "text/plain;",
		"image/svg+xml", NULL};
	static const char *const bad[] = {
		"", "text", "text/", "/plain", "text/plain,text/html", "text/html, text/plain",
		"text plain", "te(x)t/plain", "text/plain; charset", "text/plain; =x",
		"text/plain; a=b c", "text/plain; a=\"open", "text/pl\xc3\xa4in", "text/plain\n",
		NULL};
	char big[200];
	cof_err err = {0};
	(void)state;

	for (size_t i = 0; good[i]; i++)
		if (cof_media_type_check(good[i], "Content-Type", &err))
			fail_msg("refused '%s': %s", good[i], err.msg);
	for (size_t i = 0; bad[i]; i++) {
		if (cof_media_type_check(bad[i], "Content-Type", &err) == 0)
			fail_msg("accepted '%s'", bad[i]);
		assert_int_equal(err.code, COF_EVALIDATION);
		assert_non_null(strstr(err.msg, "Content-Type"));
		cof_err_clear(&err);
	}
	memset(big, 'a', sizeof big);
	memcpy(big, "text/", 5);
	big[COF_MEDIA_TYPE_MAX] = '\0';
	assert_int_equal(cof_media_type_check(big, "t", &err), 0);
	big[COF_MEDIA_TYPE_MAX] = 'a';
	big[COF_MEDIA_TYPE_MAX + 1] = '\0';
	assert_int_equal(cof_media_type_check(big, "t", &err), -1);
	cof_err_clear(&err);
}

static void test_buf_growth(void **state)
{
	cof_buf b = COF_BUF_INIT;
	size_t len;
	(void)state;

	assert_int_equal(cof_buf_add(&b, "", 0), 0);
	assert_non_null(b.data);
	assert_string_equal(b.data, "");
	for (int i = 0; i < 10000; i++)
		assert_int_equal(cof_buf_add(&b, "0123456789", 10), 0);
	assert_int_equal(b.len, 100000);
	assert_true(b.cap > b.len);
	assert_int_equal(b.data[b.len], '\0');
	assert_int_equal(memcmp(b.data + 99990, "0123456789", 10), 0);

	cof_buf_reset(&b);
	assert_int_equal(b.len, 0);
	assert_string_equal(b.data, "");
	assert_int_equal(cof_buf_adds(&b, "x="), 0);
	assert_int_equal(cof_buf_addf(&b, "%d/%s/%05d", 42, "y", 7), 0);
	assert_string_equal(b.data, "x=42/y/00007");

	/* addf of something longer than the first allocation */
	char big[1000];
	memset(big, 'q', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	cof_buf_reset(&b);
	assert_int_equal(cof_buf_addf(&b, "[%s]", big), 0);
	assert_int_equal(b.len, 1001);
	assert_int_equal(b.data[1000], ']');
	assert_int_equal(b.data[1001], '\0');

	char *d = cof_buf_detach(&b, &len);
	assert_int_equal(len, 1001);
	assert_int_equal(d[0], '[');
	free(d);
	assert_null(b.data);
	assert_int_equal(b.len, 0);

	/* Detaching an empty buffer gives an empty string, not NULL. */
	d = cof_buf_detach(&b, &len);
	assert_non_null(d);
	assert_string_equal(d, "");
	assert_int_equal(len, 0);
	free(d);
	cof_buf_release(&b);
	cof_buf_release(&b); /* twice is fine */
}

static void test_buf_max(void **state)
{
	cof_buf b = COF_BUF_INIT;
	(void)state;

	b.max = 10;
	assert_int_equal(cof_buf_add(&b, "0123456789", 10), 0);  /* exactly max */
	assert_int_equal(cof_buf_add(&b, "x", 1), -1);            /* one past */
	assert_int_equal(b.len, 10);
	assert_string_equal(b.data, "0123456789");                /* unchanged */
	assert_int_equal(cof_buf_addf(&b, "%d", 1), -1);
	assert_int_equal(b.len, 10);
	assert_string_equal(b.data, "0123456789");
	assert_int_equal(cof_buf_add(&b, "", 0), 0);              /* nothing is fine */

	cof_buf_reset(&b);
	assert_int_equal(cof_buf_adds(&b, "01234"), 0);
	assert_int_equal(cof_buf_addf(&b, "%s", "567890"), -1);   /* 11 > 10 */
	assert_string_equal(b.data, "01234");
	assert_int_equal(cof_buf_addf(&b, "%s", "56789"), 0);
	assert_string_equal(b.data, "0123456789");

	/* A length that would overflow size_t is refused, not wrapped. */
	b.max = 0;
	assert_int_equal(cof_buf_add(&b, "x", SIZE_MAX), -1);
	assert_int_equal(cof_buf_add(&b, "x", SIZE_MAX - 5), -1);
	assert_string_equal(b.data, "0123456789");
	cof_buf_release(&b);
}

/* ----------------------------------------------------------------- base64 */

typedef struct b64_case {
	const char *raw;
	const char *std;
	const char *url;
} b64_case;

/* RFC 4648 section 10, and its unpadded base64url forms. */
static const b64_case b64_cases[] = {
	{"", "", ""},
	{"f", "Zg==", "Zg"},
	{"fo", "Zm8=", "Zm8"},
	{"foo", "Zm9v", "Zm9v"},
	{"foob", "Zm9vYg==", "Zm9vYg"},
	{"fooba", "Zm9vYmE=", "Zm9vYmE"},
	{"foobar", "Zm9vYmFy", "Zm9vYmFy"},
	/* the two alphabets differ in 62 and 63 */
	{"\xfb\xff\xbf", "+/+/", "-_-_"},
	{"\xfb\xff", "+/8=", "-_8"},
	{"\x00\x00\x00", "AAAA", "AAAA"},
};

static void test_base64_vectors(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof b64_cases / sizeof *b64_cases; i++) {
		const b64_case *c = &b64_cases[i];
		size_t rawlen = strlen(c->raw), n = 0;
		unsigned char *dec = NULL;

		if (i == 9)
			rawlen = 3; /* NULs */
		char *e = cof_base64_encode(c->raw, rawlen, &n);
		assert_non_null(e);
		assert_string_equal(e, c->std);
		assert_int_equal(n, strlen(c->std));
		free(e);
		e = cof_base64url_encode(c->raw, rawlen);
		assert_non_null(e);
		assert_string_equal(e, c->url);
		free(e);

		assert_int_equal(cof_base64_decode(c->std, strlen(c->std), &dec, &n), 0);
		assert_int_equal(n, rawlen);
		assert_memory_equal(dec, c->raw, rawlen);
		free(dec);
		dec = NULL;
		assert_int_equal(cof_base64url_decode(c->url, strlen(c->url), &dec, &n), 0);
		assert_int_equal(n, rawlen);
		assert_memory_equal(dec, c->raw, rawlen);
		free(dec);
	}
}

/* cof_base64_write (read-all's encoder) says what cof_base64_encode says for
 * every length, whole or in pieces of a multiple of 3. */
static void test_base64_write(void **state)
{
	unsigned char raw[300];
	char out[404], joined[404];

	(void)state;
	for (size_t i = 0; i < sizeof raw; i++)
		raw[i] = (unsigned char)(i * 37 + 11);
	for (size_t len = 0; len <= sizeof raw; len++) {
		size_t n;
		char *e = cof_base64_encode(raw, len, &n);
		assert_int_equal(cof_base64_write(raw, len, out), n);
		assert_memory_equal(out, e, n);
		size_t o = 0, piece = 3 * (1 + len % 7);
		for (size_t at = 0; at < len; at += piece)
			o += cof_base64_write(raw + at, len - at < piece ? len - at : piece, joined + o);
		assert_int_equal(o, n);
		assert_memory_equal(joined, e, n);
		free(e);
	}
}

static void test_base64_bad(void **state)
{
	static const char *const bad_std[] = {
		"Zg", "Zg=", "Zm9", "Z===", "====", "Zg==Zg==", "Zm9v!", "Zm 9v", "Zm9v\n",
		"-_8=", "Zg=a", "Zm9vY===", "Zh==", "Zm9=", /* non-zero leftover bits */
	};
	static const char *const bad_url[] = {"Z", "Zm9vY", "Zg==", "+/8", "Zm9v!", "Zm.9", "Zh"};
	unsigned char *out = NULL;
	size_t n = 77;
	(void)state;

	for (size_t i = 0; i < sizeof bad_std / sizeof *bad_std; i++)
		if (cof_base64_decode(bad_std[i], strlen(bad_std[i]), &out, &n) != -1)
			fail_msg("base64 '%s' should be refused", bad_std[i]);
	for (size_t i = 0; i < sizeof bad_url / sizeof *bad_url; i++)
		if (cof_base64url_decode(bad_url[i], strlen(bad_url[i]), &out, &n) != -1)
			fail_msg("base64url '%s' should be refused", bad_url[i]);
	assert_null(out);
	assert_int_equal(n, 77);
	/* A NUL inside the counted input is a bad character. */
	assert_int_equal(cof_base64_decode("Zg\0=", 4, &out, &n), -1);
}

static void test_base64_roundtrip(void **state)
{
	unsigned char raw[256];
	(void)state;

	for (size_t i = 0; i < sizeof raw; i++)
		raw[i] = (unsigned char)(255 - i);
	for (size_t len = 0; len <= sizeof raw; len += 1) {
		unsigned char *dec = NULL;
		size_t n = 0;
		char *e = cof_base64url_encode(raw, len);
		assert_int_equal(cof_base64url_decode(e, strlen(e), &dec, &n), 0);
		assert_int_equal(n, len);
		assert_memory_equal(dec, raw, len);
		free(dec);
		free(e);
		e = cof_base64_encode(raw, len, NULL);
		assert_int_equal(cof_base64_decode(e, strlen(e), &dec, &n), 0);
		assert_int_equal(n, len);
		assert_memory_equal(dec, raw, len);
		free(dec);
		free(e);
	}
}

/* ------------------------------------------------------------- JSON bodies */

static const cof_jfield fields[] = {
	{"name", COF_JSTR, 1}, {"size", COF_JINT, 0}, {"on", COF_JBOOL, 0},
	{"labels", COF_JOBJ, 0}, {"list", COF_JARR, 0}, {"any", COF_JANY, 0},
	{NULL, 0, 0}};

/* Checks `text` against `fields`; returns the error message ("" when ok). */
static const char *jcheck(const char *text)
{
	static char msg[512];
	json_error_t jerr;
	json_t *body = text ? json_loads(text, JSON_DECODE_ANY, &jerr) : NULL;
	cof_err err = {0};

	if (text && !body)
		fail_msg("bad test JSON '%s': %s", text, jerr.text);
	int rc = cof_json_check(body, fields, &err);
	if (rc == 0) {
		assert_int_equal(err.code, COF_OK);
		msg[0] = '\0';
	} else {
		assert_int_equal(rc, -1);
		assert_int_equal(err.code, COF_EVALIDATION);
		assert_true(err.msg[0] != '\0');
		snprintf(msg, sizeof msg, "%s", err.msg);
	}
	cof_err_clear(&err);
	json_decref(body);
	return msg;
}

static void test_json_check(void **state)
{
	(void)state;

	assert_string_equal(jcheck("{\"name\":\"x\"}"), "");
	assert_string_equal(jcheck("{\"name\":\"x\",\"size\":3,\"on\":true,\"labels\":{},"
				   "\"list\":[1],\"any\":[{}]}"), "");
	/* null stands for "not given" for optional fields */
	assert_string_equal(jcheck("{\"name\":\"x\",\"size\":null,\"labels\":null}"), "");

	/* unknown field, named */
	assert_non_null(strstr(jcheck("{\"name\":\"x\",\"colour\":1}"), "'colour'"));
	assert_non_null(strstr(jcheck("{\"Name\":\"x\"}"), "'Name'"));
	/* wrong types, named */
	assert_non_null(strstr(jcheck("{\"name\":1}"), "'name'"));
	assert_non_null(strstr(jcheck("{\"name\":\"x\",\"size\":\"3\"}"), "'size'"));
	assert_non_null(strstr(jcheck("{\"name\":\"x\",\"size\":1.5}"), "'size'"));
	assert_non_null(strstr(jcheck("{\"name\":\"x\",\"on\":1}"), "'on'"));
	assert_non_null(strstr(jcheck("{\"name\":\"x\",\"labels\":[]}"), "'labels'"));
	assert_non_null(strstr(jcheck("{\"name\":\"x\",\"list\":{}}"), "'list'"));
	/* missing required, named; null does not count as given */
	assert_non_null(strstr(jcheck("{}"), "'name'"));
	assert_non_null(strstr(jcheck("{\"size\":1}"), "'name'"));
	assert_non_null(strstr(jcheck("{\"name\":null}"), "'name'"));
	/* no body counts as {} */
	assert_non_null(strstr(jcheck(NULL), "'name'"));
	/* not an object */
	assert_string_not_equal(jcheck("[]"), "");
	assert_string_not_equal(jcheck("\"name\""), "");
	assert_string_not_equal(jcheck("null"), "");

	/* a long unknown key is cut in the message, not overflowing it */
	char text[2000];
	snprintf(text, sizeof text, "{\"%01500d\":1}", 7);
	const char *m = jcheck(text);
	assert_true(strlen(m) < 200);

	/* no required field: NULL body is fine */
	static const cof_jfield opt[] = {{"a", COF_JSTR, 0}, {NULL, 0, 0}};
	cof_err err = {0};
	assert_int_equal(cof_json_check(NULL, opt, &err), 0);
}

static void test_json_accessors(void **state)
{
	json_t *b = json_pack("{s:s, s:I, s:b, s:n}", "s", "v", "i", (json_int_t)-7, "b", 1, "n");
	int64_t i = 99;
	(void)state;

	assert_string_equal(cof_json_str(b, "s"), "v");
	assert_null(cof_json_str(b, "i"));
	assert_null(cof_json_str(b, "missing"));
	assert_null(cof_json_str(NULL, "s"));
	assert_int_equal(cof_json_int(b, "i", &i), 1);
	assert_int_equal(i, -7);
	i = 99;
	assert_int_equal(cof_json_int(b, "s", &i), 0);
	assert_int_equal(cof_json_int(b, "n", &i), 0);
	assert_int_equal(i, 99);
	assert_int_equal(cof_json_i64(b, "i"), -7);
	assert_int_equal(cof_json_i64(b, "s"), 0);
	assert_int_equal(cof_json_i64(b, "missing"), 0);
	assert_int_equal(cof_json_i64(NULL, "i"), 0);
	assert_int_equal(cof_json_bool(b, "b", 0), 1);
	assert_int_equal(cof_json_bool(b, "n", 1), 1);
	assert_int_equal(cof_json_bool(b, "missing", 0), 0);
	assert_int_equal(cof_json_bool(NULL, "b", 1), 1);
	json_decref(b);
}

/* -------------------------------------------------------------- size_fmt */

typedef struct size_case {
	int64_t bytes;
	const char *want;
} size_case;

static const size_case size_cases[] = {
	{0, "0 bytes"},
	{1023, "1023 bytes"},
	{1024, "1 KiB"},
	{1536, "1.5 KiB"},
	{10 * 1024, "10 KiB"},
	{512LL << 20, "512 MiB"},
	{(512LL << 20) + (256LL << 10), "512.2 MiB"},
	{1LL << 30, "1 GiB"},
	{4LL << 30, "4 GiB"},
	{1LL << 40, "1 TiB"},
	{1LL << 50, "1024 TiB"}, /* TiB is the largest unit */
	{-5, "-5 bytes"},
};

static void test_size_fmt(void **state)
{
	char out[64];
	(void)state;

	for (size_t i = 0; i < sizeof size_cases / sizeof *size_cases; i++) {
		cof_size_fmt(size_cases[i].bytes, out, sizeof out);
		if (strcmp(out, size_cases[i].want))
			fail_msg("cof_size_fmt(%lld) = '%s', want '%s'",
				 (long long)size_cases[i].bytes, out, size_cases[i].want);
	}
	/* A small buffer truncates, terminated. */
	memset(out, 'x', sizeof out);
	cof_size_fmt(512LL << 20, out, 4);
	assert_string_equal(out, "512");
	cof_size_fmt(INT64_MAX, out, sizeof out);
	assert_non_null(strstr(out, "TiB"));
}

/* Just under a unit must not read "1024.0 KiB": the rounded number is what
 * the reader sees, so it must stay below 1024 (BUG: src/util/misc.c divides
 * before rounding). */
static void test_size_fmt_rounding(void **state)
{
	static const size_case cases[] = {
		{(1LL << 20) - 1, "1.0 MiB"},
		{(1LL << 30) - 1, "1.0 GiB"},
		{(1LL << 20) - 60, "1023.9 KiB"},
	};
	char out[64];
	(void)state;

	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		cof_size_fmt(cases[i].bytes, out, sizeof out);
		if (strcmp(out, cases[i].want))
			fail_msg("cof_size_fmt(%lld) = '%s', want '%s'",
				 (long long)cases[i].bytes, out, cases[i].want);
	}
}

/* The end of a prefix range is valid text (PostgreSQL takes it) and exact. */
static void test_prefix_upper(void **state)
{
	static const char *cases[][2] = {
		{"a", "b"}, {"a/", "a0"}, {"\x7f", "\xc2\x80"},
		{"\xc3\xa9", "\xc3\xaa"}, {"x\xdf\xbf", "x\xe0\xa0\x80"},
		{"\xed\x9f\xbf", "\xee\x80\x80"},            /* past the surrogates */
		{"\xef\xbf\xbf", "\xf0\x90\x80\x80"},
		{"a\xf4\x8f\xbf\xbf", "b"},                  /* U+10FFFF dropped */
	};
	cof_buf up = COF_BUF_INIT;

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		assert_int_equal(cof_prefix_upper(cases[i][0], &up), 0);
		assert_string_equal(up.data, cases[i][1]);
		assert_true(cof_utf8_valid(up.data, up.len));
	}
	/* no successor: the prefix, then more U+10FFFF than a path holds */
	assert_int_equal(cof_prefix_upper("", &up), 0);
	assert_true(up.len > COF_PATH_MAX && cof_utf8_valid(up.data, up.len));
	assert_true(strcmp("\xf4\x8f\xbf\xbf\xf4\x8f\xbf\xbf", up.data) < 0);
	assert_int_equal(cof_prefix_upper("\xf4\x8f\xbf\xbf", &up), 0);
	assert_true(up.len > COF_PATH_MAX && cof_utf8_valid(up.data, up.len));
	assert_memory_equal(up.data, "\xf4\x8f\xbf\xbf\xf4\x8f\xbf\xbf", 8);
	/* an invalid prefix: an empty range */
	assert_int_equal(cof_prefix_upper("a\xff", &up), 0);
	assert_string_equal(up.data, "a\xff");
	cof_buf_release(&up);
}

static void on_tick(int sig)
{
	(void)sig;
}

/* Drains the pipe's read end into a cof_buf, a few bytes at a time. */
static void *drain(void *arg)
{
	int *fds = arg;
	cof_buf *got = malloc(sizeof *got);
	char chunk[333];
	ssize_t n;

	*got = (cof_buf)COF_BUF_INIT;
	while ((n = read(fds[0], chunk, sizeof chunk)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		cof_buf_add(got, chunk, (size_t)n);
	}
	return got;
}

/* cof_write_full: every byte arrives, in order, through a pipe far smaller than
 * the data while a timer interrupts the writes (EINTR and short writes); a bad
 * fd is -1 with errno. */
/* cof_temp_dir honours an absolute TMPDIR, refuses a path that cannot fit, and
 * cof_rm_tree removes a nested tree without following a link out of it. */
static void test_temp_dir(void **state)
{
	(void)state;
	char base[PATH_MAX], dir[PATH_MAX], p[PATH_MAX + 64], tiny[16];
	const char *old = getenv("TMPDIR");
	char *saved = old ? strdup(old) : NULL;
	struct stat st;
	FILE *f;

	snprintf(base, sizeof base, "/tmp/coffer-ut-XXXXXX");
	assert_non_null(mkdtemp(base));
	setenv("TMPDIR", base, 1);
	assert_int_equal(cof_temp_dir("tool", dir, sizeof dir), 0);
	assert_int_equal(strncmp(dir, base, strlen(base)), 0);
	assert_int_equal(stat(dir, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	setenv("TMPDIR", "relative/dir", 1);   /* ignored: not absolute */
	char other[PATH_MAX];
	assert_int_equal(cof_temp_dir("tool", other, sizeof other), 0);
	assert_int_equal(strncmp(other, "/tmp/tool-", 10), 0);
	rmdir(other);
	errno = 0;
	assert_int_equal(cof_temp_dir("a-prefix-too-long", tiny, sizeof tiny), -1);
	assert_int_equal(errno, ENAMETOOLONG);

	/* a tree with a link to a file outside it: the file outside stays */
	char outside[PATH_MAX + 16];
	snprintf(outside, sizeof outside, "%s/outside", base);
	assert_non_null(f = fopen(outside, "w"));
	fclose(f);
	snprintf(p, sizeof p, "%s/a/b/c", dir);
	for (char *s = p + strlen(dir) + 1; (s = strchr(s, '/')) != NULL; s++) {
		*s = '\0';
		assert_int_equal(mkdir(p, 0700), 0);
		*s = '/';
	}
	assert_int_equal(mkdir(p, 0700), 0);
	snprintf(p, sizeof p, "%s/a/b/link", dir);
	assert_int_equal(symlink(outside, p), 0);
	cof_rm_tree(dir);
	assert_int_equal(stat(dir, &st), -1);
	assert_int_equal(stat(outside, &st), 0);
	unlink(outside);
	rmdir(base);
	if (saved) {
		setenv("TMPDIR", saved, 1);
		free(saved);
	} else {
		unsetenv("TMPDIR");
	}
}

static void test_write_full(void **state)
{
	(void)state;
	size_t len = 4 << 20;
	unsigned char *data = malloc(len);
	int fds[2];
	pthread_t t;
	void *res;
	struct sigaction sa = {.sa_handler = on_tick}, old;
	struct itimerval tick = {{0, 500}, {0, 500}}, off = {{0, 0}, {0, 0}};

	for (size_t i = 0; i < len; i++)
		data[i] = (unsigned char)(i * 131 + (i >> 12));
	assert_int_equal(pipe(fds), 0);
	sigemptyset(&sa.sa_mask);   /* no SA_RESTART: writes return early */
	assert_int_equal(sigaction(SIGALRM, &sa, &old), 0);
	assert_int_equal(pthread_create(&t, NULL, drain, fds), 0);
	setitimer(ITIMER_REAL, &tick, NULL);
	int rc = cof_write_full(fds[1], data, len);
	setitimer(ITIMER_REAL, &off, NULL);
	sigaction(SIGALRM, &old, NULL);
	assert_int_equal(rc, 0);
	close(fds[1]);
	assert_int_equal(pthread_join(t, &res), 0);
	cof_buf *got = res;
	assert_int_equal(got->len, len);
	assert_memory_equal(got->data, data, len);
	cof_buf_release(got);
	free(got);
	close(fds[0]);
	errno = 0;
	assert_int_equal(cof_write_full(fds[0], data, 10), -1);
	assert_int_equal(errno, EBADF);
	assert_int_equal(cof_write_full(fds[0], data, 0), 0);
	free(data);
}

/* cof_open_beneath and cof_mkdirs_beneath, both ways (openat2 and the walk):
 * a link on the way or at the end is never followed, `..` never leaves, and
 * what mkdirs makes is owned through its fd. */
/* util/addr.c: ranges, and X-Forwarded-For read from the right. */
static void client_of(const char *xff, const char *peer, const char *want)
{
	static cof_cidr t[3];
	unsigned char p[16], got[16], w[16];
	char txt[64];

	assert_int_equal(cof_cidr_parse("127.0.0.1", &t[0]), 0);
	assert_int_equal(cof_cidr_parse("10.0.0.0/8", &t[1]), 0);
	assert_int_equal(cof_cidr_parse("fd00::/8", &t[2]), 0);
	assert_int_equal(cof_addr_parse(peer, strlen(peer), p), 0);
	assert_int_equal(cof_addr_parse(want, strlen(want), w), 0);
	cof_forwarded_client(xff, p, t, 3, got);
	cof_addr_fmt(got, txt, sizeof txt);
	if (memcmp(got, w, 16))
		fail_msg("X-Forwarded-For '%s' from %s: client %s, want %s", xff ? xff : "(none)",
			 peer, txt, want);
}

static void test_addr(void **state)
{
	cof_cidr r;
	unsigned char ip[16];
	char txt[64];

	(void)state;
	assert_int_equal(cof_cidr_parse("10.0.0.0/8", &r), 0);
	assert_int_equal(r.bits, 104);
	assert_int_equal(cof_addr_parse("10.200.3.4", 10, ip), 0);
	assert_int_equal(cof_cidr_match(&r, 1, ip), 1);
	assert_int_equal(cof_addr_parse("11.0.0.1", 8, ip), 0);
	assert_int_equal(cof_cidr_match(&r, 1, ip), 0);
	assert_int_equal(cof_cidr_parse("192.0.2.128/25", &r), 0);
	assert_int_equal(cof_addr_parse("192.0.2.127", 11, ip), 0);
	assert_int_equal(cof_cidr_match(&r, 1, ip), 0);
	assert_int_equal(cof_addr_parse("192.0.2.200", 11, ip), 0);
	assert_int_equal(cof_cidr_match(&r, 1, ip), 1);
	assert_int_equal(cof_cidr_parse("0.0.0.0/0", &r), 0); /* every IPv4 address */
	assert_int_equal(cof_cidr_match(&r, 1, ip), 1);
	assert_int_equal(cof_addr_parse("::1", 3, ip), 0);
	assert_int_equal(cof_cidr_match(&r, 1, ip), 0);
	assert_int_equal(cof_cidr_parse("::/0", &r), 0);
	assert_int_equal(cof_cidr_match(&r, 1, ip), 1);
	assert_int_equal(cof_cidr_parse("2001:db8::/32", &r), 0);
	assert_int_equal(r.bits, 32);
	static const char *const bads[] = {"", "10.0.0.0/33", "::1/129", "10.0.0.0/", "1.2.3",
		"10.0.0.0/-1", "10.0.0.0/08x", "[::1]", "1.2.3.4:80", "10.0.0.0/1234", "x"};
	for (size_t i = 0; i < sizeof bads / sizeof *bads; i++)
		if (cof_cidr_parse(bads[i], &r) == 0)
			fail_msg("'%s' parsed as a range", bads[i]);
	assert_int_equal(cof_addr_parse("1.2.3.4\0", 8, ip), -1); /* a NUL inside */
	assert_int_equal(cof_addr_parse("::ffff:1.2.3.4", 14, ip), 0);
	cof_addr_fmt(ip, txt, sizeof txt);
	assert_string_equal(txt, "1.2.3.4");

	client_of(NULL, "127.0.0.1", "127.0.0.1");                   /* no header */
	client_of("203.0.113.7", "127.0.0.1", "203.0.113.7");
	client_of("203.0.113.7", "192.0.2.1", "192.0.2.1");          /* untrusted peer */
	client_of("6.6.6.6, 203.0.113.7, 10.1.1.1", "127.0.0.1", "203.0.113.7");
	client_of(" 203.0.113.7 ,\t10.1.1.1 ", "127.0.0.1", "203.0.113.7");
	client_of("garbage, 203.0.113.7", "127.0.0.1", "203.0.113.7"); /* left is the client's */
	client_of("203.0.113.7, garbage", "127.0.0.1", "127.0.0.1");   /* stops at the bad hop */
	client_of("203.0.113.7, 10.1.1.1, garbage", "127.0.0.1", "127.0.0.1");
	client_of("203.0.113.7,", "127.0.0.1", "127.0.0.1");           /* an empty entry */
	client_of("10.1.1.1, 10.2.2.2", "127.0.0.1", "10.1.1.1");      /* all trusted */
	client_of("2001:db8::1, fd00::1", "127.0.0.1", "2001:db8::1");
	client_of("1.2.3.4:5678", "127.0.0.1", "127.0.0.1");            /* ports are not read */
	client_of("", "127.0.0.1", "127.0.0.1");
}

/* util/dataurl.c: RFC 2397. */
static void data_url_is(const char *url, int ok, const char *ctype, const char *bytes,
			size_t n)
{
	char ct[64];
	unsigned char *out = NULL;
	size_t len = 0;
	const char *why = NULL;
	int rc = cof_data_url_decode(url, strlen(url), ct, sizeof ct, &out, &len, &why);

	if (!ok) {
		if (rc == 0 || !why)
			fail_msg("'%s' decoded", url);
		return;
	}
	if (rc)
		fail_msg("'%s': %s", url, why);
	assert_string_equal(ct, ctype);
	assert_int_equal(len, n);
	assert_memory_equal(out, bytes, n);
	free(out);
}

static void test_data_url(void **state)
{
	(void)state;
	data_url_is("data:,A%20brief%20note", 1, "text/plain;charset=US-ASCII", "A brief note", 12);
	data_url_is("DATA:text/csv;base64,YSxi", 1, "text/csv", "a,b", 3);
	data_url_is("data:;charset=utf-8,%C3%A9", 1, "text/plain;charset=utf-8", "\xc3\xa9", 2);
	data_url_is("data:image/png;base64,", 1, "image/png", "", 0);
	data_url_is("data:,", 1, "text/plain;charset=US-ASCII", "", 0);
	data_url_is("data:,%00", 1, "text/plain;charset=US-ASCII", "\0", 1);
	data_url_is("data:text/plain", 0, NULL, NULL, 0);          /* no comma */
	data_url_is("data:,%4", 0, NULL, NULL, 0);                 /* short escape */
	data_url_is("data:,%g0", 0, NULL, NULL, 0);
	data_url_is("data:;base64,@@", 0, NULL, NULL, 0);
	data_url_is("http://x/,y", 0, NULL, NULL, 0);
	assert_int_equal(cof_is_data_url("dat", 3), 0);
}

static void test_beneath(void **state)
{
	char top[PATH_MAX], host[PATH_MAX], p[PATH_MAX + 64];
	struct stat st;

	assert_int_equal(cof_temp_dir("coffer-beneath", top, sizeof top), 0);
	assert_int_equal(cof_temp_dir("coffer-host", host, sizeof host), 0);
	int d = open(top, O_RDONLY | O_DIRECTORY);
	assert_true(d >= 0);
	assert_int_equal(mkdirat(d, "a", 0755), 0);
	snprintf(p, sizeof p, "%s/a/link", top);
	assert_int_equal(symlink(host, p), 0);
	snprintf(p, sizeof p, "%s/a/flink", top);
	assert_int_equal(symlink("/etc/hostname", p), 0);
	for (int walk = 0; walk < 2; walk++) {
		int (*op)(int, const char *, int, mode_t) =
			walk ? cof_open_beneath_walk : cof_open_beneath;
		/* a link on the way: refused, nothing made behind it */
		errno = 0;
		assert_int_equal(op(d, "a/link/f", O_WRONLY | O_CREAT, 0644), -1);
		assert_int_equal(errno, ELOOP);
		/* a link at the end: refused */
		assert_int_equal(op(d, "a/flink", O_RDONLY, 0), -1);
		assert_int_equal(op(d, "a/link", O_RDONLY | O_DIRECTORY, 0), -1);
		assert_int_equal(errno, ELOOP);
		/* .. never leaves */
		assert_int_equal(op(d, "a/../../x", O_WRONLY | O_CREAT, 0644), -1);
		assert_int_equal(op(d, "/etc/hostname", O_RDONLY, 0), -1);
		/* a plain path works */
		int f = op(d, "a/plain", O_WRONLY | O_CREAT, 0600);
		assert_true(f >= 0);
		close(f);
	}
	/* mkdirs: through a link -> ELOOP, nothing made in the host folder */
	errno = 0;
	assert_int_equal(cof_mkdirs_beneath(d, "a/link/x/y", 0755, -1), -1);
	assert_int_equal(errno, ELOOP);
	assert_int_equal(cof_mkdirs_beneath(d, "a/../b", 0755, -1), -1);
	assert_int_equal(cof_mkdirs_beneath(d, "a/plain/x", 0755, -1), -1);
	assert_int_equal(errno, ENOTDIR);
	snprintf(p, sizeof p, "%s/x", host);
	assert_int_equal(stat(p, &st), -1);
	/* made and owned (our own uid: fchown to ourselves always works) */
	int m = cof_mkdirs_beneath(d, "b/c/d", 0750, (long)getuid());
	assert_true(m >= 0);
	assert_int_equal(fstat(m, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_uid, getuid());
	close(m);
	m = cof_mkdirs_beneath(d, "b/c/d", 0750, -1); /* again: opens what is there */
	assert_true(m >= 0);
	close(m);
	close(d);
	cof_rm_tree(top);
	cof_rm_tree(host);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prefix_upper),
		cmocka_unit_test(test_path_length),
		cmocka_unit_test(test_path_segment_length),
		cmocka_unit_test(test_path_segments),
		cmocka_unit_test(test_path_utf8),
		cmocka_unit_test(test_prefix_check),
		cmocka_unit_test(test_path_controls),
		cmocka_unit_test(test_media_type),
		cmocka_unit_test(test_buf_growth),
		cmocka_unit_test(test_buf_max),
		cmocka_unit_test(test_base64_vectors),
		cmocka_unit_test(test_base64_write),
		cmocka_unit_test(test_base64_bad),
		cmocka_unit_test(test_base64_roundtrip),
		cmocka_unit_test(test_json_check),
		cmocka_unit_test(test_json_accessors),
		cmocka_unit_test(test_size_fmt),
		cmocka_unit_test(test_size_fmt_rounding),
		cmocka_unit_test(test_write_full),
		cmocka_unit_test(test_temp_dir),
		cmocka_unit_test(test_beneath),
		cmocka_unit_test(test_addr),
		cmocka_unit_test(test_data_url),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
