/*
 * fuzz_addr.c — util/addr.c: cof_cidr_parse and cof_forwarded_client on an
 * untrusted X-Forwarded-For. Input: the header value (a NUL ends it early),
 * read from a fixed trusted peer with fixed trusted ranges.
 * Invariants: the client's text parses back to the same bytes; from an
 * untrusted peer the client is always the peer; a range that parses
 * matches its own address and has at most 128 bits.
 */
#include "fuzz.h"
#include "util/addr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static cof_cidr t[2];
	static int ready;
	unsigned char peer[16], other[16], got[16], back[16];
	char *h = fuzz_dup_str(data, size);
	char txt[64];
	cof_cidr r;

	if (!ready) {
		FUZZ_CHECK(cof_cidr_parse("127.0.0.1", &t[0]) == 0, "127.0.0.1");
		FUZZ_CHECK(cof_cidr_parse("10.0.0.0/8", &t[1]) == 0, "10.0.0.0/8");
		ready = 1;
	}
	FUZZ_CHECK(cof_addr_parse("127.0.0.1", 9, peer) == 0, "peer");
	FUZZ_CHECK(cof_addr_parse("192.0.2.1", 9, other) == 0, "other");

	cof_forwarded_client(h, peer, t, 2, got);
	cof_addr_fmt(got, txt, sizeof txt);
	FUZZ_CHECK(cof_addr_parse(txt, strlen(txt), back) == 0 && !memcmp(back, got, 16),
		   "the client '%s' does not parse back", txt);
	cof_forwarded_client(h, other, t, 2, got);
	FUZZ_CHECK(!memcmp(got, other, 16), "an untrusted peer's header was believed");

	if (cof_cidr_parse(h, &r) == 0) {
		FUZZ_CHECK(r.bits <= 128, "a range of %u bits", r.bits);
		FUZZ_CHECK(cof_cidr_match(&r, 1, r.ip), "a range does not hold its own address");
	}
	free(h);
	return 0;
}
