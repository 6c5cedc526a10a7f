/*
 * addr.c — IP addresses, ranges and X-Forwarded-For (addr.h). inet_pton does
 * the address syntax; everything around it (lengths, brackets, the prefix
 * length, the list) is checked here first, so no input is read past its end.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include "util/addr.h"

#define XFF_MAX_HOPS 64

int cof_addr_key(const struct sockaddr *sa, unsigned char ip[16])
{
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;
		memset(ip, 0, 10);
		ip[10] = ip[11] = 0xff;
		memcpy(ip + 12, &s4->sin_addr, 4);
		return 0;
	}
	if (sa->sa_family == AF_INET6) {
		memcpy(ip, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
		return 0;
	}
	return -1;
}

static int is_v4mapped(const unsigned char ip[16])
{
	static const unsigned char pfx[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	return memcmp(ip, pfx, 12) == 0;
}

int cof_addr_parse(const char *s, size_t len, unsigned char ip[16])
{
	char buf[INET6_ADDRSTRLEN];

	if (len == 0 || len >= sizeof buf || memchr(s, '\0', len))
		return -1;
	memcpy(buf, s, len);
	buf[len] = '\0';
	if (inet_pton(AF_INET, buf, ip + 12) == 1) {
		memset(ip, 0, 10);
		ip[10] = ip[11] = 0xff;
		return 0;
	}
	return inet_pton(AF_INET6, buf, ip) == 1 ? 0 : -1;
}

void cof_addr_fmt(const unsigned char ip[16], char *out, size_t outsz)
{
	char buf[INET6_ADDRSTRLEN];

	if (is_v4mapped(ip))
		inet_ntop(AF_INET, ip + 12, buf, sizeof buf);
	else
		inet_ntop(AF_INET6, ip, buf, sizeof buf);
	snprintf(out, outsz, "%s", buf);
}

int cof_cidr_parse(const char *s, cof_cidr *out)
{
	const char *slash = strchr(s, '/');
	size_t alen = slash ? (size_t)(slash - s) : strlen(s);
	unsigned bits, max;

	if (cof_addr_parse(s, alen, out->ip))
		return -1;
	max = is_v4mapped(out->ip) && !memchr(s, ':', alen) ? 32 : 128;
	if (!slash) {
		bits = max;
	} else {
		const char *p = slash + 1;
		if (!*p || strlen(p) > 3)
			return -1;
		bits = 0;
		for (; *p; p++) {
			if (*p < '0' || *p > '9')
				return -1;
			bits = bits * 10 + (unsigned)(*p - '0');
		}
		if (bits > max)
			return -1;
	}
	out->bits = max == 32 ? bits + 96 : bits;
	return 0;
}

static int in_range(const cof_cidr *r, const unsigned char ip[16])
{
	unsigned full = r->bits / 8, rest = r->bits % 8;

	if (memcmp(r->ip, ip, full))
		return 0;
	if (rest == 0)
		return 1;
	unsigned char mask = (unsigned char)(0xff << (8 - rest));
	return (r->ip[full] & mask) == (ip[full] & mask);
}

int cof_cidr_match(const cof_cidr *r, size_t n, const unsigned char ip[16])
{
	for (size_t i = 0; i < n; i++)
		if (in_range(&r[i], ip))
			return 1;
	return 0;
}

/* Trims optional whitespace (RFC 9110 OWS) around [*b, *e). */
static void trim(const char **b, const char **e)
{
	while (*b < *e && (**b == ' ' || **b == '\t'))
		(*b)++;
	while (*e > *b && ((*e)[-1] == ' ' || (*e)[-1] == '\t'))
		(*e)--;
}

void cof_forwarded_client(const char *xff, const unsigned char peer[16],
			  const cof_cidr *trusted, size_t ntrusted, unsigned char client[16])
{
	const char *end;
	int hops = 0;

	memcpy(client, peer, 16);
	if (!xff || !cof_cidr_match(trusted, ntrusted, peer))
		return;
	end = xff + strlen(xff);
	/* right to left: each hop is an address the next proxy saw */
	while (hops++ < XFF_MAX_HOPS) {
		const char *b = end, *s, *e = end;
		unsigned char ip[16];
		while (b > xff && b[-1] != ',')
			b--;
		s = b;
		trim(&s, &e);
		if (cof_addr_parse(s, (size_t)(e - s), ip))
			return; /* the last trusted hop stays the client */
		memcpy(client, ip, 16);
		if (!cof_cidr_match(trusted, ntrusted, ip) || b == xff)
			return;
		end = b - 1; /* the comma before this entry */
	}
}
