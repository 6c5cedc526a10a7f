/*
 * sio.c — the Engine.IO v4 / Socket.IO v5 packet codec (sio.h).
 *
 * Engine.IO packet: one type digit '0'..'6' then its data; a polling
 * payload joins packets with 0x1e. Socket.IO packet, after Engine.IO's
 * '4': <type>[<attachments>-][<namespace>,][<ack id>][<JSON payload>].
 */
#include <stdlib.h>
#include <string.h>
#include "util/sio.h"

#define EIO_SEP 0x1e

int cof_eio_packet(const char *s, size_t n, int *type, const char **data, size_t *dn,
		   cof_err *err)
{
	if (n == 0)
		return cof_error(err, COF_EVALIDATION, "empty Engine.IO packet");
	if (n > COF_SIO_MSG_MAX)
		return cof_error(err, COF_ETOOLARGE, "Engine.IO packet is %zu bytes; the limit "
				 "is %zu bytes", n, COF_SIO_MSG_MAX);
	if (s[0] == 'b')
		return cof_error(err, COF_EVALIDATION, "binary Engine.IO packets are not "
				 "supported: send JSON text (file content as base64)");
	if (s[0] < '0' || s[0] > '6')
		return cof_error(err, COF_EVALIDATION, "unknown Engine.IO packet type 0x%02x "
				 "(known: '0'..'6')", (unsigned char)s[0]);
	*type = s[0] - '0';
	*data = s + 1;
	*dn = n - 1;
	return 0;
}

int cof_eio_payload_each(const char *buf, size_t len,
			 int (*fn)(void *arg, int type, const char *data, size_t n),
			 void *arg, cof_err *err)
{
	size_t start = 0;
	int type, rc;
	const char *d;
	size_t dn;

	if (len == 0)
		return cof_error(err, COF_EVALIDATION, "empty Engine.IO payload");
	/* checked whole first: a bad payload hands nothing on */
	for (size_t i = 0; i <= len; i++) {
		if (i < len && buf[i] != EIO_SEP)
			continue;
		if (cof_eio_packet(buf + start, i - start, &type, &d, &dn, err))
			return -1;
		start = i + 1;
	}
	start = 0;
	for (size_t i = 0; i <= len; i++) {
		if (i < len && buf[i] != EIO_SEP)
			continue;
		(void)cof_eio_packet(buf + start, i - start, &type, &d, &dn, err);
		if ((rc = fn(arg, type, d, dn)) != 0)
			return rc;
		start = i + 1;
	}
	return 0;
}

void cof_sio_pkt_clear(cof_sio_pkt *p)
{
	json_decref(p->data);
	memset(p, 0, sizeof *p);
	p->ack = -1;
	p->nsp[0] = '/';
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* The payload's shape for its type. */
static int payload_check(cof_sio_pkt *p, cof_err *err)
{
	json_t *d = p->data;

	switch (p->type) {
	case COF_SIO_CONNECT:
		if (d && !json_is_object(d))
			return cof_error(err, COF_EVALIDATION,
					 "a Socket.IO CONNECT's payload must be an object");
		break;
	case COF_SIO_DISCONNECT:
		if (d)
			return cof_error(err, COF_EVALIDATION,
					 "a Socket.IO DISCONNECT carries no payload");
		break;
	case COF_SIO_EVENT: {
		json_t *name = json_array_get(d, 0);
		if (!json_is_array(d) || !json_is_string(name))
			return cof_error(err, COF_EVALIDATION, "a Socket.IO EVENT's payload must be "
					 "an array starting with the event's name");
		if (json_string_length(name) == 0 ||
		    json_string_length(name) > COF_SIO_EVENT_NAME_MAX)
			return cof_error(err, COF_EVALIDATION, "a Socket.IO event name must be 1 to "
					 "%d bytes", COF_SIO_EVENT_NAME_MAX);
		break;
	}
	case COF_SIO_ACK:
		if (!json_is_array(d))
			return cof_error(err, COF_EVALIDATION,
					 "a Socket.IO ACK's payload must be an array");
		if (p->ack < 0)
			return cof_error(err, COF_EVALIDATION, "a Socket.IO ACK needs an id");
		break;
	case COF_SIO_CONNECT_ERROR:
		if (!json_is_object(d) && !json_is_string(d))
			return cof_error(err, COF_EVALIDATION, "a Socket.IO CONNECT_ERROR's payload "
					 "must be an object or a string");
		break;
	}
	if (p->ack >= 0 && p->type != COF_SIO_EVENT && p->type != COF_SIO_ACK)
		return cof_error(err, COF_EVALIDATION,
				 "only a Socket.IO EVENT or ACK carries an id");
	return 0;
}

int cof_sio_decode(const char *s, size_t n, cof_sio_pkt *out, cof_err *err)
{
	size_t i = 1;
	json_error_t jerr;

	memset(out, 0, sizeof *out);
	out->ack = -1;
	out->nsp[0] = '/';
	if (n == 0)
		return cof_error(err, COF_EVALIDATION, "empty Socket.IO packet");
	if (n > COF_SIO_MSG_MAX)
		return cof_error(err, COF_ETOOLARGE, "Socket.IO packet is %zu bytes; the limit "
				 "is %zu bytes", n, COF_SIO_MSG_MAX);
	if (s[0] < '0' || s[0] > '6')
		return cof_error(err, COF_EVALIDATION, "unknown Socket.IO packet type 0x%02x "
				 "(known: '0'..'6')", (unsigned char)s[0]);
	out->type = s[0] - '0';
	if (out->type == COF_SIO_BINARY_EVENT || out->type == COF_SIO_BINARY_ACK)
		return cof_error(err, COF_EVALIDATION, "Socket.IO binary attachments are not "
				 "supported: send file content as base64 text");
	if (i < n && s[i] == '/') {
		size_t start = i;
		while (i < n && s[i] != ',')
			i++;
		size_t len = i - start;
		if (len > COF_SIO_NSP_MAX)
			return cof_error(err, COF_EVALIDATION, "Socket.IO namespace is %zu bytes; "
					 "the limit is %d", len, COF_SIO_NSP_MAX);
		for (size_t k = start; k < i; k++)
			if ((unsigned char)s[k] < 0x21 || (unsigned char)s[k] > 0x7e)
				return cof_error(err, COF_EVALIDATION, "Socket.IO namespace has byte "
						 "0x%02x (printable ASCII only)", (unsigned char)s[k]);
		memcpy(out->nsp, s + start, len);
		out->nsp[len] = '\0';
		if (i < n)
			i++; /* the ',' */
	}
	if (i < n && is_digit(s[i])) {
		int64_t id = 0;
		int digits = 0;
		while (i < n && is_digit(s[i])) {
			if (++digits > 16 || (id = id * 10 + (s[i] - '0')) > COF_SIO_ACK_MAX)
				return cof_error(err, COF_EVALIDATION, "Socket.IO ack id is over %lld",
						 COF_SIO_ACK_MAX);
			i++;
		}
		out->ack = id;
	}
	if (i < n) {
		out->data = json_loadb(s + i, n - i, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &jerr);
		if (!out->data)
			return cof_error(err, COF_EVALIDATION, "Socket.IO payload is not JSON: %s "
					 "at byte %d", jerr.text, jerr.position);
	}
	if (payload_check(out, err)) {
		json_decref(out->data);
		out->data = NULL;
		return -1;
	}
	return 0;
}

void cof_sio_encode(cof_buf *out, int type, const char *nsp, int64_t ack, const json_t *data)
{
	char *text;

	cof_buf_addf(out, "%d", type);
	if (nsp && strcmp(nsp, "/"))
		cof_buf_addf(out, "%s,", nsp);
	if (ack >= 0)
		cof_buf_addf(out, "%lld", (long long)ack);
	if (data && (text = json_dumps(data, JSON_COMPACT | JSON_ENCODE_ANY))) {
		cof_buf_adds(out, text);
		free(text);
	}
}
