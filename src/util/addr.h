/*
 * addr.h — IP addresses as 16-byte keys (IPv4 as ::ffff:a.b.c.d), address
 * ranges (CIDR), and the client address of a request that came through
 * trusted proxies (X-Forwarded-For). Pure functions over caller memory:
 * nothing here allocates, so the parsers are safe on untrusted headers.
 */
#ifndef COFFER_UTIL_ADDR_H
#define COFFER_UTIL_ADDR_H

#include <stddef.h>
#include <sys/socket.h>

/* An address range: the first `bits` bits of `ip` (IPv4 ranges count from
 * the 96 bits of the ::ffff: prefix, so 10.0.0.0/8 is bits = 104). */
typedef struct cof_cidr {
	unsigned char ip[16];
	unsigned bits;
} cof_cidr;

/* The 16-byte key of a socket address; 0, or -1 for a family without one. */
int cof_addr_key(const struct sockaddr *sa, unsigned char ip[16]);
/* Parses one address (a.b.c.d or IPv6, without brackets or port) of `len`
 * bytes: 0, or -1. */
int cof_addr_parse(const char *s, size_t len, unsigned char ip[16]);
/* Writes `ip` as text (IPv4-mapped ones as a.b.c.d) into out (>= 46 bytes). */
void cof_addr_fmt(const unsigned char ip[16], char *out, size_t outsz);
/* Parses "ADDR" or "ADDR/BITS" (BITS <= 32 for IPv4, <= 128 for IPv6):
 * 0, or -1. */
int cof_cidr_parse(const char *s, cof_cidr *out);
/* 1 when ip lies in one of the n ranges. */
int cof_cidr_match(const cof_cidr *r, size_t n, const unsigned char ip[16]);
/* The client of a request whose connection came from `peer` with the
 * X-Forwarded-For value `xff` (NULL: none): when peer is one of the trusted
 * ranges, the rightmost address of xff that is not itself trusted (each
 * trusted proxy appends the address it saw); an entry that does not parse
 * stops the walk there, leaving the last trusted hop as the client (a client
 * may write anything at the left of the header, never at its right).
 * Otherwise peer itself. At most 64 entries are read; `client` gets the answer. */
void cof_forwarded_client(const char *xff, const unsigned char peer[16],
			  const cof_cidr *trusted, size_t ntrusted, unsigned char client[16]);

#endif
