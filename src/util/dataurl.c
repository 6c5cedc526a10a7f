/*
 * dataurl.c — RFC 2397 `data:` URLs as inline attachment data (seed 003's
 * data_url attachments): data:[<mediatype>][;base64],<data>. The bytes are
 * decoded from base64, or percent-decoded otherwise; the media type defaults
 * to text/plain;charset=US-ASCII as the RFC says. Everything comes from an
 * untrusted caller: lengths are given, nothing is read past them, and every
 * failure says which part was wrong.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "util/util.h"

int cof_is_data_url(const char *s, size_t len)
{
	return len >= 5 && !strncasecmp(s, "data:", 5);
}


/* Percent-decodes [s, s + len) into a new buffer. */
static int pct_decode(const char *s, size_t len, unsigned char **out, size_t *outlen,
		      const char **why)
{
	unsigned char *o = cof_malloc(len + 1);
	size_t n = 0;

	for (size_t i = 0; i < len; i++) {
		if (s[i] != '%') {
			o[n++] = (unsigned char)s[i];
			continue;
		}
		if (len - i < 3 || cof_hex_value(s[i + 1]) < 0 || cof_hex_value(s[i + 2]) < 0) {
			free(o);
			*why = "a '%' is not followed by two hex digits";
			return -1;
		}
		o[n++] = (unsigned char)(cof_hex_value(s[i + 1]) << 4 | cof_hex_value(s[i + 2]));
		i += 2;
	}
	*out = o;
	*outlen = n;
	return 0;
}

int cof_data_url_decode(const char *s, size_t len, char *ctype, size_t ctsz,
			unsigned char **out, size_t *outlen, const char **why)
{
	const char *comma, *meta;
	size_t mlen;
	int b64 = 0;

	*out = NULL;
	*outlen = 0;
	if (!cof_is_data_url(s, len)) {
		*why = "it does not begin with 'data:'";
		return -1;
	}
	meta = s + 5;
	if (!(comma = memchr(meta, ',', len - 5))) {
		*why = "it has no ',' before its data";
		return -1;
	}
	mlen = (size_t)(comma - meta);
	if (mlen >= 7 && !strncasecmp(comma - 7, ";base64", 7)) {
		b64 = 1;
		mlen -= 7;
	}
	if (memchr(meta, '\0', mlen)) {
		*why = "its media type holds a NUL byte";
		return -1;
	}
	if (mlen + sizeof "text/plain" > ctsz) {
		*why = "its media type is too long";
		return -1;
	}
	if (mlen == 0) /* none given: RFC 2397's default */
		snprintf(ctype, ctsz, "text/plain;charset=US-ASCII");
	else if (meta[0] == ';') /* only parameters: of text/plain */
		snprintf(ctype, ctsz, "text/plain%.*s", (int)mlen, meta);
	else
		snprintf(ctype, ctsz, "%.*s", (int)mlen, meta);
	const char *data = comma + 1;
	size_t dlen = len - (size_t)(data - s);
	if (b64) {
		if (cof_base64_decode(data, dlen, out, outlen)) {
			*why = "its data is not valid base64";
			return -1;
		}
		return 0;
	}
	return pct_decode(data, dlen, out, outlen, why);
}
