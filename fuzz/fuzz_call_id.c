/*
 * fuzz_call_id.c — a turn call's callId (cof_turn_call_id_ok, src/turn/outbox_check.c)
 * against the rule written here from API.md "Turns": 1..128 bytes of printable
 * ASCII (0x21..0x7e) without '/', '\\', '?', '#', '%', and not "." or "..";
 * and what follows from it for the places a callId names: it is one path
 * segment on the scratch disk (no '/', NUL, "." or ".."), and its URL form
 * (cof_s3_escape, as call.c writes files[].url) holds only unreserved
 * characters and %XX escapes and decodes back to the callId.
 */
#include <stdlib.h>
#include "fuzz.h"
#include "turn/outbox.h"
#include "store/s3.h"

static int ref_ok(const char *s, size_t len)
{
	if (len < 1 || len > COF_CALL_ID_MAX || (len == 1 && s[0] == '.') ||
	    (len == 2 && s[0] == '.' && s[1] == '.'))
		return 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x21 || c > 0x7e || c == '/' || c == '\\' || c == '?' || c == '#' ||
		    c == '%')
			return 0;
	}
	return 1;
}

static int hex(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

static void check_url_form(const char *s, size_t len)
{
	cof_buf b = COF_BUF_INIT;
	size_t j = 0;

	cof_s3_escape(&b, s, 0);
	for (size_t i = 0; i < b.len; j++) {
		unsigned char c;
		if (b.data[i] == '%') {
			FUZZ_CHECK(i + 2 < b.len && hex(b.data[i + 1]) >= 0 && hex(b.data[i + 2]) >= 0,
				   "a bad escape at %zu", i);
			c = (unsigned char)(hex(b.data[i + 1]) * 16 + hex(b.data[i + 2]));
			i += 3;
		} else {
			c = (unsigned char)b.data[i++];
			FUZZ_CHECK(strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
					  "0123456789-._~", c) && c, "0x%02x left unescaped", c);
		}
		FUZZ_CHECK(j < len && c == (unsigned char)s[j], "byte %zu decodes wrong", j);
	}
	FUZZ_CHECK(j == len, "decodes to %zu of %zu bytes", j, len);
	cof_buf_release(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_dup_str(data, size);
	int ok = !memchr(data, 0, size) && cof_turn_call_id_ok(s);

	FUZZ_CHECK(ok == ref_ok(s, size), "call_id_ok says %d", ok);
	if (ok) {
		FUZZ_CHECK(!strchr(s, '/') && strcmp(s, ".") && strcmp(s, ".."),
			   "not one path segment");
		check_url_form(s, size);
	}
	free(s);
	return 0;
}
