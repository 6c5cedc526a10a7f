/*
 * sse.c — the Server-Sent Events parser (see sse.h).
 */
#include <string.h>
#include "util/sse.h"

#define SSE_MAX_DEFAULT ((size_t)64 << 20)

void cof_sse_reset(cof_sse *p)
{
	cof_buf_reset(&p->line);
	cof_buf_reset(&p->event);
	cof_buf_reset(&p->data);
	p->after_cr = 0;
	p->started = 0;
}

void cof_sse_release(cof_sse *p)
{
	cof_buf_release(&p->line);
	cof_buf_release(&p->event);
	cof_buf_release(&p->data);
	p->after_cr = 0;
	p->started = 0;
}

/* Handles one complete line (without its end). Returns 0, the callback's
 * value, or -1 when the data grew past the bound. */
static int sse_line(cof_sse *p, const char *l, size_t n, size_t max, cof_sse_fn fn, void *ud)
{
	const char *colon, *val;
	size_t flen, vlen;

	if (n == 0) {
		int rc = 0;
		/* The data buffer holds each line followed by '\n'; the last one goes. */
		if (p->data.len) {
			p->data.len--;
			p->data.data[p->data.len] = '\0';
			rc = fn(ud, p->event.len ? p->event.data : "message", p->data.data,
				p->data.len);
		}
		cof_buf_reset(&p->event);
		cof_buf_reset(&p->data);
		return rc;
	}
	if (l[0] == ':')
		return 0;
	colon = memchr(l, ':', n);
	flen = colon ? (size_t)(colon - l) : n;
	val = colon ? colon + 1 : l + n;
	vlen = colon ? n - flen - 1 : 0;
	if (vlen && val[0] == ' ')
		val++, vlen--;
	if (flen == 5 && !memcmp(l, "event", 5)) {
		cof_buf_reset(&p->event);
		if (cof_buf_add(&p->event, val, vlen))
			return -1;
	} else if (flen == 4 && !memcmp(l, "data", 4)) {
		if (p->data.len + vlen + 1 > max || cof_buf_add(&p->data, val, vlen) ||
		    cof_buf_add(&p->data, "\n", 1))
			return -1;
	}
	return 0;
}

int cof_sse_feed(cof_sse *p, const char *buf, size_t len, cof_sse_fn fn, void *ud)
{
	size_t max = p->max ? p->max : SSE_MAX_DEFAULT;
	size_t i = 0;

	while (i < len) {
		if (!p->started) {
			/* A byte-order mark may open the stream (and may come split). */
			static const char bom[] = "\xEF\xBB\xBF";
			size_t have = p->line.len;
			if (have < 3 && buf[i] == bom[have]) {
				if (cof_buf_add(&p->line, buf + i, 1))
					goto fail;
				i++;
				if (p->line.len == 3) {
					cof_buf_reset(&p->line);
					p->started = 1;
				}
				continue;
			}
			p->started = 1; /* not a BOM: what was held is text */
		}
		char c = buf[i];
		if (c == '\n' && p->after_cr) { /* the '\n' of a "\r\n" */
			p->after_cr = 0;
			i++;
			continue;
		}
		p->after_cr = 0;
		if (c == '\r' || c == '\n') {
			int rc = sse_line(p, p->line.data ? p->line.data : "", p->line.len, max, fn, ud);
			cof_buf_reset(&p->line);
			p->after_cr = c == '\r';
			i++;
			if (rc == -1)
				goto fail;
			if (rc)
				return rc;
			continue;
		}
		/* The rest of the line, up to its end or the chunk's. */
		const char *s = buf + i;
		size_t n = len - i;
		const char *e1 = memchr(s, '\n', n), *e2 = memchr(s, '\r', n);
		const char *e = !e1 ? e2 : !e2 ? e1 : e1 < e2 ? e1 : e2;
		size_t take = e ? (size_t)(e - s) : n;
		if (p->line.len + take > max || cof_buf_add(&p->line, s, take))
			goto fail;
		i += take;
	}
	return 0;
fail:
	cof_sse_reset(p);
	return -1;
}
