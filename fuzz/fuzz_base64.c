/*
 * fuzz_base64.c — base64 (padded) and base64url (unpadded): encode/decode
 * round trips of the input, and decoding the input itself as text.
 * Invariants: decode(encode(x)) == x; encoded lengths are 4*ceil(n/3) and
 * ceil(4n/3); a successful decode gives at most 3/4 of the input length and
 * re-encoding its output decodes to the same bytes; decoding never reads past
 * the given length. The input as a data: URL (util/dataurl.c): decoded or
 * refused with a reason; a decode gives at most the input's length.
 */
#include "fuzz.h"
#include "util/util.h"

static void roundtrip(const uint8_t *data, size_t size)
{
	size_t elen = 0, dlen = 0;
	unsigned char *dec = NULL;
	char *enc = cof_base64_encode(data, size, &elen);

	FUZZ_CHECK(enc, "encode failed");
	FUZZ_CHECK(elen == 4 * ((size + 2) / 3) && strlen(enc) == elen, "base64 length %zu for %zu",
		   elen, size);
	FUZZ_CHECK(strspn(enc, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") ==
			   elen, "bad character in '%s'", enc);
	FUZZ_CHECK(cof_base64_decode(enc, elen, &dec, &dlen) == 0, "cannot decode own '%s'", enc);
	FUZZ_CHECK(dlen == size && (size == 0 || !memcmp(dec, data, size)), "round trip differs");
	free(dec);
	free(enc);

	enc = cof_base64url_encode(data, size);
	FUZZ_CHECK(enc, "url encode failed");
	elen = strlen(enc);
	FUZZ_CHECK(elen == (4 * size + 2) / 3, "base64url length %zu for %zu", elen, size);
	FUZZ_CHECK(strspn(enc, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") ==
			   elen, "bad character in '%s'", enc);
	dec = NULL;
	FUZZ_CHECK(cof_base64url_decode(enc, elen, &dec, &dlen) == 0, "cannot decode own '%s'", enc);
	FUZZ_CHECK(dlen == size && (size == 0 || !memcmp(dec, data, size)), "url round trip differs");
	free(dec);
	free(enc);
}

typedef int (*decode_fn)(const char *, size_t, unsigned char **, size_t *);

static void decode_text(const uint8_t *data, size_t size, decode_fn dec_fn, int url)
{
	char *in = fuzz_dup_exact(data, size);
	unsigned char *out = NULL;
	size_t olen = 12345;

	if (dec_fn(in, size, &out, &olen) == 0) {
		FUZZ_CHECK(out, "success without output");
		FUZZ_CHECK(olen <= size / 4 * 3 + 2, "%zu bytes out of %zu", olen, size);
		/* Only alphabet characters (and '=' at the end, padded) were accepted. */
		const char *alpha = url ? "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
					: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
		size_t body = size;
		while (!url && body && in[body - 1] == '=')
			body--;
		FUZZ_CHECK(size - body <= 2, "%zu '=' accepted", size - body);
		for (size_t i = 0; i < body; i++)
			FUZZ_CHECK(in[i] && strchr(alpha, in[i]), "accepted byte 0x%02x at %zu",
				   (unsigned char)in[i], i);
		/* Decoding is a function of the bytes: encoding what came out and
		 * decoding again gives the same bytes. */
		char *again = url ? cof_base64url_encode(out, olen) : cof_base64_encode(out, olen, NULL);
		unsigned char *out2 = NULL;
		size_t olen2 = 0;
		FUZZ_CHECK(again && dec_fn(again, strlen(again), &out2, &olen2) == 0 &&
				   olen2 == olen && (olen == 0 || !memcmp(out, out2, olen)),
			   "re-encoding is not stable");
		free(out2);
		free(again);
		free(out);
	} else {
		FUZZ_CHECK(olen == 12345, "output length written on failure");
	}
	free(in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	roundtrip(data, size);
	decode_text(data, size, cof_base64_decode, 0);
	decode_text(data, size, cof_base64url_decode, 1);
	{
		char ct[64];
		unsigned char *out = NULL;
		size_t olen = 0;
		const char *why = NULL;
		char *in = fuzz_dup_exact(data, size);
		if (cof_data_url_decode(in, size, ct, sizeof ct, &out, &olen, &why) == 0) {
			FUZZ_CHECK(olen <= size && strlen(ct) < sizeof ct, "data: URL decode sizes");
			free(out);
		} else {
			FUZZ_CHECK(why && !out, "a refused data: URL without a reason");
		}
		free(in);
	}
	return 0;
}
