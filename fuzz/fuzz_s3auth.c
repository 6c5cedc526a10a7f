/*
 * fuzz_s3auth.c — the S3 gateway's parsers of untrusted input: SigV4's
 * Authorization header and presigned query (util/sigv4.c), the canonical
 * request built from a path and query as sent, and DeleteObjects' XML body
 * and CompleteMultipartUpload's (util/s3xml.c, libxml2), and UploadPartCopy's
 * x-amz-copy-source-range (util/range.c). The first byte picks the parser. Invariants: a
 * parse that succeeds yields what the rules say (64 lowercase hex signature,
 * service s3, sorted signed headers, 8-digit date); a decoded string never
 * holds a NUL; a DeleteObjects parse yields 1..1000 non-empty keys.
 */
#include "fuzz.h"
#include "util/range.h"
#include "util/s3xml.h"
#include "util/sigv4.h"

static void check_parsed(const cof_sigv4 *a)
{
	FUZZ_CHECK(strlen(a->signature) == 64, "signature '%s'", a->signature);
	for (int i = 0; i < 64; i++)
		FUZZ_CHECK((a->signature[i] >= '0' && a->signature[i] <= '9') ||
			   (a->signature[i] >= 'a' && a->signature[i] <= 'f'), "hex");
	FUZZ_CHECK(!strcmp(a->service, "s3"), "service '%s'", a->service);
	FUZZ_CHECK(strlen(a->date) == 8, "date '%s'", a->date);
	FUZZ_CHECK(a->nheaders >= 1 && a->nheaders <= COF_SIGV4_HEADERS, "%d headers",
		   a->nheaders);
	for (int i = 1; i < a->nheaders; i++)
		FUZZ_CHECK(strcmp(a->headers[i - 1], a->headers[i]) < 0, "sorted headers");
	FUZZ_CHECK(a->access[0], "empty access key id");
}

/* Splits s at '&' and '=' into args (pointers into s, which is cut). */
static size_t split_query(char *s, cof_sigv4_arg *args, size_t max)
{
	size_t n = 0;

	for (char *p = s; p && *p && n < max;) {
		char *amp = strchr(p, '&');
		if (amp)
			*amp = '\0';
		char *eq = strchr(p, '=');
		if (eq)
			*eq = '\0';
		args[n].name = p;
		args[n].value = eq ? eq + 1 : NULL;
		n++;
		p = amp ? amp + 1 : NULL;
	}
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	int which = data[0] % 6;
	char *s = fuzz_dup_str(data + 1, size - 1);
	const char *why = NULL;
	cof_sigv4 a;

	switch (which) {
	case 0:
		if (cof_sigv4_parse_header(s, &a, &why) == 0)
			check_parsed(&a);
		else
			FUZZ_CHECK(why != NULL, "a refusal says why");
		break;
	case 1: {
		cof_sigv4_arg args[64];
		size_t n = split_query(s, args, 64);
		int r = cof_sigv4_parse_query(args, n, &a, &why);
		if (r == 0) {
			check_parsed(&a);
			FUZZ_CHECK(a.expires >= 1 && a.expires <= 604800, "expires %lld",
				   (long long)a.expires);
		}
		break;
	}
	case 2: {
		/* "METHOD PATH?QUERY\nAuthorization" -> the canonical request */
		char *nl = strchr(s, '\n');
		if (!nl)
			break;
		*nl = '\0';
		if (cof_sigv4_parse_header(nl + 1, &a, &why))
			break;
		char *q = strchr(s, '?');
		cof_sigv4_arg args[64];
		size_t n = 0;
		if (q) {
			*q = '\0';
			n = split_query(q + 1, args, 64);
		}
		const char *vals[COF_SIGV4_HEADERS];
		for (int i = 0; i < a.nheaders; i++)
			vals[i] = i % 3 ? "v  a\tl " : "host";
		cof_buf b = COF_BUF_INIT;
		if (cof_sigv4_canonical(&b, "GET", s, args, n, &a, vals, "UNSIGNED-PAYLOAD",
					&why) == 0) {
			char sig[65];
			FUZZ_CHECK(b.len == strlen(b.data), "the canonical request holds a NUL");
			cof_sigv4_sign("secret", &a, "20260101T000000Z", b.data, b.len, sig);
			FUZZ_CHECK(strlen(sig) == 64, "signature length");
		}
		cof_buf_release(&b);
		break;
	}
	case 3: {
		char **keys = NULL;
		size_t n = 0;
		int quiet = 0;
		if (cof_s3xml_delete((const char *)data + 1, size - 1, &keys, &n, &quiet,
				     &why) == 0) {
			FUZZ_CHECK(n >= 1 && n <= COF_S3_DELETE_MAX, "%zu keys", n);
			for (size_t i = 0; i < n; i++)
				FUZZ_CHECK(keys[i] && keys[i][0], "empty key");
			cof_s3xml_free(keys, n);
		} else {
			FUZZ_CHECK(why != NULL && keys == NULL, "a refusal says why");
		}
		break;
	}
	case 4: {
		int *nums = NULL;
		char **etags = NULL;
		size_t n = 0;
		if (cof_s3xml_complete((const char *)data + 1, size - 1, &nums, &etags, &n,
				       &why) == 0) {
			FUZZ_CHECK(n >= 1 && n <= COF_S3_PARTS_MAX, "%zu parts", n);
			for (size_t i = 0; i < n; i++) {
				FUZZ_CHECK(nums[i] >= 1 && nums[i] <= COF_S3_PARTS_MAX, "part %d",
					   nums[i]);
				FUZZ_CHECK(!i || nums[i] > nums[i - 1], "ascending");
				FUZZ_CHECK(etags[i] != NULL, "etag");
			}
			free(nums);
			cof_s3xml_free(etags, n);
		} else {
			FUZZ_CHECK(why != NULL && nums == NULL, "a refusal says why");
		}
		break;
	}
	case 5: {
		int64_t first = -7, last = -9;
		if (cof_copy_range_parse(s, &first, &last) == 0) {
			FUZZ_CHECK(first >= 0 && first <= last, "range %lld-%lld",
				   (long long)first, (long long)last);
			FUZZ_CHECK(!strncmp(s, "bytes=", 6) && strchr(s, '-') == strrchr(s, '-'),
				   "the form bytes=A-B");
		} else {
			FUZZ_CHECK(first == -7 && last == -9, "a refusal leaves the range alone");
		}
		break;
	}
	}
	free(s);
	return 0;
}
