/*
 * base64.c — base64 (RFC 4648 §4, padded) and base64url (§5, unpadded).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "util/util.h"

static const char b64[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char b64url[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static char *encode(const void *data, size_t len, const char *alpha, int pad,
		    size_t *outlen)
{
	const unsigned char *in = data;
	size_t n = 4 * ((len + 2) / 3), o = 0;
	char *out = cof_malloc(n + 1);

	if (!out)
		return NULL;
	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16;
		size_t left = len - i;
		if (left > 1)
			v |= (uint32_t)in[i + 1] << 8;
		if (left > 2)
			v |= in[i + 2];
		out[o++] = alpha[(v >> 18) & 63];
		out[o++] = alpha[(v >> 12) & 63];
		if (left > 1)
			out[o++] = alpha[(v >> 6) & 63];
		else if (pad)
			out[o++] = '=';
		if (left > 2)
			out[o++] = alpha[v & 63];
		else if (pad)
			out[o++] = '=';
	}
	out[o] = '\0';
	if (outlen)
		*outlen = o;
	return out;
}

static int decode(const char *in, size_t len, const char *alpha, int pad,
		  unsigned char **out, size_t *outlen)
{
	signed char map[256];
	unsigned char *o;
	size_t n = 0, q = 0;
	uint32_t v = 0;

	memset(map, -1, sizeof map);
	for (int i = 0; i < 64; i++)
		map[(unsigned char)alpha[i]] = (signed char)i;
	if (pad) {
		if (len % 4)
			return -1;
		while (len && in[len - 1] == '=' && q < 2)
			len--, q++;
	}
	if (len % 4 == 1)
		return -1;
	o = cof_malloc(len / 4 * 3 + 3);
	for (size_t i = 0; i < len; i++) {
		int c = map[(unsigned char)in[i]];
		if (c < 0) {
			free(o);
			return -1;
		}
		v = (v << 6) | (uint32_t)c;
		if (i % 4 == 3) {
			o[n++] = (unsigned char)(v >> 16);
			o[n++] = (unsigned char)(v >> 8);
			o[n++] = (unsigned char)v;
			v = 0;
		}
	}
	/* Leftover bits must be zero, so each byte string has one spelling
	 * (a signed link's token cannot be written several ways). */
	if ((len % 4 == 2 && (v & 0xF)) || (len % 4 == 3 && (v & 0x3))) {
		free(o);
		return -1;
	}
	if (len % 4 == 2) {
		o[n++] = (unsigned char)(v >> 4);
	} else if (len % 4 == 3) {
		o[n++] = (unsigned char)(v >> 10);
		o[n++] = (unsigned char)(v >> 2);
	}
	*out = o;
	*outlen = n;
	return 0;
}

/* Two output characters for each 12 bits of input: a 3-byte group is two
 * lookups and two stores instead of four of each (read-all's `data`). */
static uint16_t pairs[4096];
static pthread_once_t pairs_once = PTHREAD_ONCE_INIT;

static void pairs_fill(void)
{
	for (unsigned v = 0; v < 4096; v++) {
		char two[2] = { b64[v >> 6], b64[v & 63] };
		memcpy(&pairs[v], two, 2);
	}
}

size_t cof_base64_write(const void *data, size_t len, char *out)
{
	const unsigned char *in = data;
	size_t i = 0, o = 0;

	pthread_once(&pairs_once, pairs_fill);
	for (; i + 3 <= len; i += 3, o += 4) {
		uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
		memcpy(out + o, &pairs[v >> 12], 2);
		memcpy(out + o + 2, &pairs[v & 0xfff], 2);
	}
	if (i < len) {
		uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < len ? (uint32_t)in[i + 1] << 8 : 0);
		out[o++] = b64[v >> 18];
		out[o++] = b64[(v >> 12) & 63];
		out[o++] = i + 1 < len ? b64[(v >> 6) & 63] : '=';
		out[o++] = '=';
	}
	return o;
}

char *cof_base64_encode(const void *data, size_t len, size_t *outlen)
{
	return encode(data, len, b64, 1, outlen);
}

int cof_base64_decode(const char *in, size_t inlen, unsigned char **out, size_t *outlen)
{
	return decode(in, inlen, b64, 1, out, outlen);
}

char *cof_base64url_encode(const void *data, size_t len)
{
	return encode(data, len, b64url, 0, NULL);
}

int cof_base64url_decode(const char *in, size_t inlen, unsigned char **out, size_t *outlen)
{
	return decode(in, inlen, b64url, 0, out, outlen);
}
