/*
 * sio.h — the Engine.IO v4 and Socket.IO v5 packet codec (sio.c): text
 * only, no I/O. What cofferd's /socket.io/ endpoint (src/http/socketio.c)
 * reads from clients goes through here first, so every input is untrusted:
 * a refusal is COF_EVALIDATION naming what is wrong. Fuzzed by
 * fuzz/fuzz_socketio.c. Protocols: https://socket.io/docs/v4/ (engine.io
 * protocol v4, socket.io protocol v5).
 */
#ifndef COF_SIO_H
#define COF_SIO_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include "util/util.h"

/* The largest Engine.IO message (a WebSocket message, a long-polling
 * POST body): a relayed file is at most 10 MB, 13.4 MB as base64, and the
 * JSON around it is small; 16 MiB leaves room for text whose JSON escapes
 * add up to 6 MB. Announced to clients as the handshake's maxPayload. */
#define COF_SIO_MSG_MAX ((size_t)16 << 20)
#define COF_SIO_NSP_MAX 128           /* a namespace's bytes */
#define COF_SIO_ACK_MAX 9007199254740991LL /* 2^53 - 1: what JavaScript counts exactly */
#define COF_SIO_EVENT_NAME_MAX 128    /* an event name's bytes */

/* Engine.IO packet types. */
enum { COF_EIO_OPEN = 0, COF_EIO_CLOSE, COF_EIO_PING, COF_EIO_PONG, COF_EIO_MESSAGE,
       COF_EIO_UPGRADE, COF_EIO_NOOP };

/* Socket.IO packet types. */
enum { COF_SIO_CONNECT = 0, COF_SIO_DISCONNECT, COF_SIO_EVENT, COF_SIO_ACK,
       COF_SIO_CONNECT_ERROR, COF_SIO_BINARY_EVENT, COF_SIO_BINARY_ACK };

/* One Engine.IO packet of `s` (n bytes, a WebSocket text message or one
 * record of a polling payload): its type and its data (after the type
 * digit). Binary packets ('b' + base64) are refused: cofferd's events are
 * JSON text. 0 or -1 with err. */
int cof_eio_packet(const char *s, size_t n, int *type, const char **data, size_t *dn,
		   cof_err *err);
/* Calls fn for each packet of a long-polling payload (packets separated
 * by 0x1e); stops at fn's first non-zero answer, which it returns. A
 * malformed payload is -1 with err, before any packet is handed on. */
int cof_eio_payload_each(const char *buf, size_t len,
			 int (*fn)(void *arg, int type, const char *data, size_t n),
			 void *arg, cof_err *err);

/* A decoded Socket.IO packet. */
typedef struct cof_sio_pkt {
	int type;                        /* COF_SIO_* */
	char nsp[COF_SIO_NSP_MAX + 1];   /* "/" when the packet names none */
	int64_t ack;                     /* the acknowledgement id, -1 when none */
	json_t *data;                    /* NULL when none (owned) */
} cof_sio_pkt;

/* Decodes a Socket.IO packet (an Engine.IO message's data). The payload
 * must fit its type: CONNECT an object or nothing; DISCONNECT nothing;
 * EVENT an array starting with the event's name; ACK an array and an id;
 * CONNECT_ERROR an object or a string. Binary packets are refused. 0 or
 * -1 with err; *out is cleared either way first. */
int cof_sio_decode(const char *s, size_t n, cof_sio_pkt *out, cof_err *err);
void cof_sio_pkt_clear(cof_sio_pkt *p);
/* Appends the Socket.IO text of a packet (without Engine.IO's '4') to
 * `out`: nsp "/" or NULL is left out, ack < 0 is none, data NULL is none. */
void cof_sio_encode(cof_buf *out, int type, const char *nsp, int64_t ack, const json_t *data);

#endif
