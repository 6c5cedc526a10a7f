/*
 * mediatype.c — the one check of a media type as a client sends it
 * (Content-Type of a PUT, a link's contentType): RFC 9110 8.3.1.
 */
#include <string.h>
#include "util/util.h"

/* RFC 9110 5.6.2 tchar. */
static int tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/* Length of the token at `s` (0 when there is none). */
static size_t token_len(const char *s)
{
	size_t n = 0;

	while (tchar((unsigned char)s[n]))
		n++;
	return n;
}

/* Length of the quoted-string at `s` (ASCII only), or 0 when malformed. */
static size_t quoted_len(const char *s)
{
	size_t n = 1;

	if (s[0] != '"')
		return 0;
	for (;;) {
		unsigned char c = (unsigned char)s[n];
		if (c == '"')
			return n + 1;
		if (c == '\\') {
			c = (unsigned char)s[n + 1];
			if (c != '\t' && (c < 0x20 || c > 0x7e))
				return 0;
			n += 2;
		} else if (c == '\t' || (c >= 0x20 && c <= 0x7e)) {
			n++;
		} else {
			return 0;
		}
	}
}

int cof_media_type_check(const char *t, const char *what, cof_err *err)
{
	size_t n = t ? strlen(t) : 0, k;
	const char *p = t;

	if (n == 0 || n > COF_MEDIA_TYPE_MAX)
		return cof_error(err, COF_EVALIDATION, "%s must be 1 to %d bytes (it is %zu)",
				 what, COF_MEDIA_TYPE_MAX, n);
	if ((k = token_len(p)) == 0 || p[k] != '/' || token_len(p + k + 1) == 0)
		goto bad;
	p += k + 1;
	p += token_len(p);
	for (;;) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '\0')
			return 0;
		if (*p++ != ';')
			goto bad;
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '\0' || *p == ';')
			continue; /* an empty parameter is allowed */
		if ((k = token_len(p)) == 0 || p[k] != '=')
			goto bad;
		p += k + 1;
		k = *p == '"' ? quoted_len(p) : token_len(p);
		if (k == 0)
			goto bad;
		p += k;
	}
bad:
	return cof_error(err, COF_EVALIDATION,
			 "%s '%.*s' is not one media type (type/subtype and ;name=value "
			 "parameters, RFC 9110 8.3.1)", what, 200, t);
}
