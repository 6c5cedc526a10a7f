/*
 * fuzz_socketio.c — the Engine.IO v4 / Socket.IO v5 packet decoder
 * (src/util/sio.h), which reads what any client sends to /socket.io/.
 * The input is taken three ways: as one Engine.IO packet, as a long-polling
 * payload (records split at 0x1e), and as one Socket.IO packet. Invariants:
 * a payload is refused whole or every record is a packet one by one; a
 * decoded Socket.IO packet has a known, non-binary type, a namespace that
 * starts with '/', an ack id within 2^53-1 only on an EVENT or ACK, and a
 * payload of its type's shape; encoding it and decoding that again gives
 * the same packet.
 */
#include "fuzz.h"
#include "util/sio.h"

static int count_one(void *arg, int type, const char *data, size_t n)
{
	size_t *k = arg;

	FUZZ_CHECK(type >= COF_EIO_OPEN && type <= COF_EIO_NOOP, "type %d", type);
	FUZZ_CHECK(!memchr(data, 0x1e, n), "a record holds the separator");
	(*k)++;
	return 0;
}

static void check_payload(const char *in, size_t size)
{
	cof_err err = {0};
	size_t got = 0, want = 1;
	int rc = cof_eio_payload_each(in, size, count_one, &got, &err);

	for (size_t i = 0; i < size; i++)
		want += in[i] == 0x1e;
	if (rc == 0) {
		FUZZ_CHECK(got == want, "%zu records handed on, %zu in the payload", got, want);
	} else {
		FUZZ_CHECK(got == 0, "a refused payload handed on %zu records", got);
		FUZZ_CHECK(err.code && err.msg[0], "a refusal without a message");
	}
	cof_err_clear(&err);
}

static void check_sio(const char *in, size_t size)
{
	cof_sio_pkt p, q;
	cof_err err = {0};
	cof_buf b = COF_BUF_INIT;

	if (cof_sio_decode(in, size, &p, &err)) {
		FUZZ_CHECK(err.code && err.msg[0], "a refusal without a message");
		FUZZ_CHECK(p.data == NULL, "a refused packet kept its payload");
		cof_err_clear(&err);
		return;
	}
	FUZZ_CHECK(p.type >= COF_SIO_CONNECT && p.type <= COF_SIO_CONNECT_ERROR, "type %d",
		   p.type);
	FUZZ_CHECK(p.nsp[0] == '/' && strlen(p.nsp) <= COF_SIO_NSP_MAX && !strchr(p.nsp, ','),
		   "namespace '%s'", p.nsp);
	FUZZ_CHECK(p.ack <= COF_SIO_ACK_MAX, "ack %lld", (long long)p.ack);
	FUZZ_CHECK(p.ack < 0 || p.type == COF_SIO_EVENT || p.type == COF_SIO_ACK,
		   "an ack id on type %d", p.type);
	if (p.type == COF_SIO_EVENT)
		FUZZ_CHECK(json_is_array(p.data) && json_is_string(json_array_get(p.data, 0)),
			   "an EVENT without a name");
	if (p.type == COF_SIO_ACK)
		FUZZ_CHECK(json_is_array(p.data) && p.ack >= 0, "an ACK without array or id");
	if (p.type == COF_SIO_DISCONNECT)
		FUZZ_CHECK(p.data == NULL, "a DISCONNECT with a payload");
	cof_sio_encode(&b, p.type, p.nsp, p.ack, p.data);
	FUZZ_CHECK(cof_sio_decode(b.data, b.len, &q, &err) == 0, "re-encoded '%.200s' is "
		   "refused: %s", b.data, err.msg);
	FUZZ_CHECK(q.type == p.type && !strcmp(q.nsp, p.nsp) && q.ack == p.ack,
		   "round trip changed the header: '%.200s'", b.data);
	FUZZ_CHECK((!p.data && !q.data) || json_equal(p.data, q.data),
		   "round trip changed the payload: '%.200s'", b.data);
	cof_sio_pkt_clear(&p);
	cof_sio_pkt_clear(&q);
	cof_buf_release(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *in = fuzz_dup_exact(data, size);
	int type = -1;
	const char *d = NULL;
	size_t dn = 0;
	cof_err err = {0};

	if (cof_eio_packet(in, size, &type, &d, &dn, &err) == 0) {
		FUZZ_CHECK(type >= 0 && type <= 6 && d == in + 1 && dn == size - 1, "bad split");
		if (type == COF_EIO_MESSAGE)
			check_sio(d, dn);
	}
	cof_err_clear(&err);
	check_payload(in, size);
	check_sio(in, size);
	free(in);
	return 0;
}
