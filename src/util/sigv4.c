/*
 * sigv4.c — parsing and checking AWS SigV4 (sigv4.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include "util/sigv4.h"

#define ALGO "AWS4-HMAC-SHA256"
#define EXPIRES_MAX 604800

static int is_hex_lower(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

/* Copies [s, s+n) into out[cap] (refusing what does not fit). */
static int take(const char *s, size_t n, char *out, size_t cap)
{
	if (n >= cap)
		return -1;
	memcpy(out, s, n);
	out[n] = '\0';
	return 0;
}

/* "AK/YYYYMMDD/REGION/SERVICE/aws4_request" (n bytes). */
static int parse_credential(const char *s, size_t n, cof_sigv4 *a, const char **why)
{
	const char *part[5];
	size_t len[5];
	int k = 0;
	const char *p = s, *end = s + n;

	/* the access key id comes first and holds no '/': split from the right */
	const char *cut[4];
	int c = 0;
	for (const char *q = end; q > s && c < 4; q--)
		if (q[-1] == '/')
			cut[c++] = q - 1;
	if (c < 4) {
		*why = "the Credential must be ACCESS-KEY/DATE/REGION/SERVICE/aws4_request";
		return -1;
	}
	part[0] = p, len[0] = (size_t)(cut[3] - p);
	for (k = 1; k < 4; k++)
		part[k] = cut[4 - k] + 1, len[k] = (size_t)(cut[3 - k] - part[k]);
	part[4] = cut[0] + 1, len[4] = (size_t)(end - part[4]);
	if (take(part[0], len[0], a->access, sizeof a->access) || !len[0]) {
		*why = "the access key id in the Credential is empty or too long";
		return -1;
	}
	if (len[1] != 8 || take(part[1], 8, a->date, sizeof a->date)) {
		*why = "the Credential's date must be YYYYMMDD";
		return -1;
	}
	for (int i = 0; i < 8; i++)
		if (a->date[i] < '0' || a->date[i] > '9') {
			*why = "the Credential's date must be YYYYMMDD";
			return -1;
		}
	if (!len[2] || take(part[2], len[2], a->region, sizeof a->region)) {
		*why = "the Credential's region is empty or longer than 63 bytes";
		return -1;
	}
	if (take(part[3], len[3], a->service, sizeof a->service) || strcmp(a->service, "s3")) {
		*why = "the Credential's service must be s3";
		return -1;
	}
	if (len[4] != 12 || memcmp(part[4], "aws4_request", 12)) {
		*why = "the Credential must end with /aws4_request";
		return -1;
	}
	for (size_t i = 0; i < len[0]; i++)
		if ((unsigned char)part[0][i] <= ' ' || part[0][i] == 0x7f) {
			*why = "the access key id holds a control character or a space";
			return -1;
		}
	return 0;
}

/* "a;b;c": lowercase names, sorted, none empty. */
static int parse_signed_headers(const char *s, size_t n, cof_sigv4 *a, const char **why)
{
	size_t i = 0;

	a->nheaders = 0;
	while (i <= n) {
		size_t j = i;
		while (j < n && s[j] != ';')
			j++;
		if (j == i) {
			*why = "SignedHeaders has an empty name";
			return -1;
		}
		if (a->nheaders == COF_SIGV4_HEADERS) {
			*why = "SignedHeaders names more than 32 headers";
			return -1;
		}
		char *h = a->headers[a->nheaders];
		if (take(s + i, j - i, h, sizeof a->headers[0])) {
			*why = "a name in SignedHeaders is longer than 63 bytes";
			return -1;
		}
		for (char *q = h; *q; q++)
			if (!((*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9') || *q == '-' ||
			      *q == '_' || *q == '.')) {
				*why = "SignedHeaders must be lowercase header names separated by ';'";
				return -1;
			}
		if (a->nheaders && strcmp(a->headers[a->nheaders - 1], h) >= 0) {
			*why = "SignedHeaders must be sorted, each name once";
			return -1;
		}
		a->nheaders++;
		i = j + 1;
	}
	return 0;
}

static int parse_signature(const char *s, size_t n, cof_sigv4 *a, const char **why)
{
	if (n != 64 || !is_hex_lower(s, 64)) {
		*why = "the Signature must be 64 lowercase hex digits";
		return -1;
	}
	memcpy(a->signature, s, 64);
	a->signature[64] = '\0';
	return 0;
}

int cof_sigv4_parse_header(const char *v, cof_sigv4 *a, const char **why)
{
	int seen = 0;
	const char *p;

	memset(a, 0, sizeof *a);
	if (strncmp(v, ALGO " ", sizeof ALGO)) {
		*why = "the Authorization header must start with AWS4-HMAC-SHA256";
		return -1;
	}
	p = v + sizeof ALGO;
	for (;;) {
		while (*p == ' ' || *p == ',')
			p++;
		if (!*p)
			break;
		const char *eq = strchr(p, '=');
		if (!eq) {
			*why = "the Authorization header has a part without '='";
			return -1;
		}
		const char *e = eq + 1;
		while (*e && *e != ',')
			e++;
		size_t kl = (size_t)(eq - p), vl = (size_t)(e - eq - 1);
		while (vl && eq[vl] == ' ')
			vl--;
		int bit, r;
		if (kl == 10 && !memcmp(p, "Credential", 10))
			bit = 1, r = parse_credential(eq + 1, vl, a, why);
		else if (kl == 13 && !memcmp(p, "SignedHeaders", 13))
			bit = 2, r = parse_signed_headers(eq + 1, vl, a, why);
		else if (kl == 9 && !memcmp(p, "Signature", 9))
			bit = 4, r = parse_signature(eq + 1, vl, a, why);
		else {
			*why = "the Authorization header has a part other than Credential, "
			       "SignedHeaders and Signature";
			return -1;
		}
		if (r)
			return -1;
		if (seen & bit) {
			*why = "the Authorization header names a part twice";
			return -1;
		}
		seen |= bit;
		p = e;
	}
	if (seen != 7) {
		*why = "the Authorization header needs Credential, SignedHeaders and Signature";
		return -1;
	}
	return 0;
}

ssize_t cof_sigv4_decode(const char *s, size_t len, char *out)
{
	size_t o = 0;

	for (size_t i = 0; i < len; i++) {
		int c = (unsigned char)s[i];
		if (c == '%') {
			int hi, lo;
			if (i + 2 >= len)
				return -1;
			hi = cof_hex_value(s[i + 1]);
			lo = cof_hex_value(s[i + 2]);
			if (hi < 0 || lo < 0)
				return -1;
			c = hi << 4 | lo;
			i += 2;
		}
		if (c == 0)
			return -1;
		out[o++] = (char)c;
	}
	out[o] = '\0';
	return (ssize_t)o;
}

void cof_sigv4_encode(cof_buf *b, const char *s, size_t len, int keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
			cof_buf_add(b, (const char *)&c, 1);
		} else {
			char e[3] = {'%', hex[c >> 4], hex[c & 15]};
			cof_buf_add(b, e, 3);
		}
	}
}

/* Decodes an argument's name or value (NULL = "") into a new string. */
static char *arg_decode(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	char *out = malloc(n + 1);

	if (!out)
		return NULL;
	if (cof_sigv4_decode(s ? s : "", n, out) < 0) {
		free(out);
		return NULL;
	}
	return out;
}

int cof_sigv4_parse_query(const cof_sigv4_arg *args, size_t nargs, cof_sigv4 *a,
			  const char **why)
{
	static const char *const names[] = {"X-Amz-Algorithm", "X-Amz-Credential",
		"X-Amz-Date", "X-Amz-Expires", "X-Amz-SignedHeaders", "X-Amz-Signature"};
	char *v[6] = {0};
	int any = 0, rc = -1;

	memset(a, 0, sizeof *a);
	for (size_t i = 0; i < nargs; i++)
		for (int k = 0; k < 6; k++)
			if (args[i].name && !strcmp(args[i].name, names[k])) {
				any = 1;
				if (v[k]) {
					*why = "a presigned URL names an X-Amz- argument twice";
					goto out;
				}
				if (!(v[k] = arg_decode(args[i].value))) {
					*why = "a presigned URL's X-Amz- argument has a bad %-escape";
					goto out;
				}
			}
	if (!any)
		return 1;
	for (int k = 0; k < 6; k++)
		if (!v[k]) {
			*why = "a presigned URL needs X-Amz-Algorithm, X-Amz-Credential, "
			       "X-Amz-Date, X-Amz-Expires, X-Amz-SignedHeaders and X-Amz-Signature";
			goto out;
		}
	if (strcmp(v[0], ALGO)) {
		*why = "X-Amz-Algorithm must be AWS4-HMAC-SHA256";
		goto out;
	}
	int64_t t;
	if (parse_credential(v[1], strlen(v[1]), a, why) ||
	    parse_signed_headers(v[4], strlen(v[4]), a, why) ||
	    parse_signature(v[5], strlen(v[5]), a, why))
		goto out;
	if (cof_sigv4_time(v[2], &t) || strncmp(v[2], a->date, 8)) {
		*why = "X-Amz-Date must be YYYYMMDDTHHMMSSZ on the Credential's date";
		goto out;
	}
	memcpy(a->amz_date, v[2], 17);
	char *end;
	long long e = strtoll(v[3], &end, 10);
	if (!*v[3] || *end || v[3][0] < '0' || v[3][0] > '9' || e < 1 || e > EXPIRES_MAX) {
		*why = "X-Amz-Expires must be 1 to 604800 seconds";
		goto out;
	}
	a->expires = e;
	a->presigned = 1;
	rc = 0;
out:
	for (int k = 0; k < 6; k++)
		free(v[k]);
	return rc;
}

int cof_sigv4_time(const char *s, int64_t *out)
{
	struct tm tm = {0};
	int f[6];
	static const int width[6] = {4, 2, 2, 2, 2, 2};
	const char *p = s;

	if (strlen(s) != 16 || s[8] != 'T' || s[15] != 'Z')
		return -1;
	for (int k = 0; k < 6; k++) {
		if (k == 3)
			p++;   /* the 'T' */
		f[k] = 0;
		for (int i = 0; i < width[k]; i++, p++) {
			if (*p < '0' || *p > '9')
				return -1;
			f[k] = f[k] * 10 + (*p - '0');
		}
	}
	if (f[1] < 1 || f[1] > 12 || f[2] < 1 || f[2] > 31 || f[3] > 23 || f[4] > 59 ||
	    f[5] > 60 || f[0] < 1970)
		return -1;
	tm.tm_year = f[0] - 1900, tm.tm_mon = f[1] - 1, tm.tm_mday = f[2];
	tm.tm_hour = f[3], tm.tm_min = f[4], tm.tm_sec = f[5];
	*out = (int64_t)timegm(&tm);
	return 0;
}

typedef struct qpair {
	char *name, *value;   /* encoded again, canonical */
} qpair;

static int qpair_cmp(const void *x, const void *y)
{
	const qpair *a = x, *b = y;
	int c = strcmp(a->name, b->name);

	return c ? c : strcmp(a->value, b->value);
}

/* `s` encoded canonically, as a new string (NULL on a bad escape). */
static char *recode(const char *s, int keep_slash)
{
	char *d = arg_decode(s);
	cof_buf b = COF_BUF_INIT;

	if (!d)
		return NULL;
	cof_sigv4_encode(&b, d, strlen(d), keep_slash);
	free(d);
	return b.data ? cof_buf_detach(&b, NULL) : strdup("");
}

int cof_sigv4_canonical(cof_buf *b, const char *method, const char *raw_path,
			const cof_sigv4_arg *args, size_t nargs, const cof_sigv4 *a,
			const char *const *values, const char *payload_hash, const char **why)
{
	qpair *q = nargs ? calloc(nargs, sizeof *q) : NULL;
	size_t nq = 0;
	int rc = -1;
	char *path;

	if (nargs && !q) {
		*why = "out of memory";
		return -1;
	}
	cof_buf_addf(b, "%s\n", method);
	if (!(path = recode(raw_path, 1))) {
		*why = "the path has a bad %-escape";
		goto out;
	}
	cof_buf_addf(b, "%s\n", *path ? path : "/");
	free(path);
	for (size_t i = 0; i < nargs; i++) {
		if (a->presigned && args[i].name && !strcmp(args[i].name, "X-Amz-Signature"))
			continue;
		q[nq].name = recode(args[i].name, 0);
		q[nq].value = recode(args[i].value, 0);
		nq++;
		if (!q[nq - 1].name || !q[nq - 1].value) {
			*why = "the query has a bad %-escape";
			goto out;
		}
	}
	if (nq)
		qsort(q, nq, sizeof *q, qpair_cmp);
	for (size_t i = 0; i < nq; i++)
		cof_buf_addf(b, "%s%s=%s", i ? "&" : "", q[i].name, q[i].value);
	cof_buf_add(b, "\n", 1);
	for (int h = 0; h < a->nheaders; h++) {
		const char *v = values[h];
		if (!v) {
			*why = "a header named in SignedHeaders is not in the request";
			goto out;
		}
		cof_buf_addf(b, "%s:", a->headers[h]);
		/* trimmed, runs of spaces as one */
		while (*v == ' ' || *v == '\t')
			v++;
		size_t n = strlen(v);
		while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
			n--;
		for (size_t i = 0; i < n; i++) {
			if ((v[i] == ' ' || v[i] == '\t') && i && (v[i - 1] == ' ' || v[i - 1] == '\t'))
				continue;
			cof_buf_add(b, v[i] == '\t' ? " " : &v[i], 1);
		}
		cof_buf_add(b, "\n", 1);
	}
	cof_buf_add(b, "\n", 1);
	for (int h = 0; h < a->nheaders; h++)
		cof_buf_addf(b, "%s%s", h ? ";" : "", a->headers[h]);
	cof_buf_addf(b, "\n%s", payload_hash);
	rc = 0;
out:
	for (size_t i = 0; i < nq; i++) {
		free(q[i].name);
		free(q[i].value);
	}
	free(q);
	return rc;
}

static void hmac(const void *key, size_t klen, const char *msg, size_t mlen,
		 unsigned char out[32])
{
	unsigned int n = 32;

	HMAC(EVP_sha256(), key, (int)klen, (const unsigned char *)msg, mlen, out, &n);
}

void cof_sigv4_sign(const char *secret, const cof_sigv4 *a, const char *amz_date,
		    const char *canon, size_t canon_len, char out[65])
{
	unsigned char k[32], h[32];
	char key[96], hex[65], sts[512];
	int n;

	SHA256((const unsigned char *)canon, canon_len, h);
	cof_hex(h, 32, hex);
	n = snprintf(sts, sizeof sts, "%s\n%s\n%s/%s/%s/aws4_request\n%s", ALGO, amz_date,
		     a->date, a->region, a->service, hex);
	snprintf(key, sizeof key, "AWS4%s", secret);
	hmac(key, strlen(key), a->date, strlen(a->date), k);
	hmac(k, 32, a->region, strlen(a->region), k);
	hmac(k, 32, a->service, strlen(a->service), k);
	hmac(k, 32, "aws4_request", 12, k);
	hmac(k, 32, sts, (size_t)n < sizeof sts ? (size_t)n : sizeof sts - 1, h);
	cof_hex(h, 32, out);
	OPENSSL_cleanse(key, sizeof key);
	OPENSSL_cleanse(k, sizeof k);
}

int cof_sigv4_equal(const char *x, const char *y)
{
	return strlen(x) == 64 && strlen(y) == 64 && CRYPTO_memcmp(x, y, 64) == 0;
}
