/*
 * buf.c — cof_buf, the one growable buffer (see util.h for ownership).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/util.h"

/* Makes room for `extra` more bytes plus the terminating NUL; -1 only past
 * `max` (or a size that cannot be represented). */
static int buf_grow(cof_buf *b, size_t extra)
{
	size_t need, cap;
	char *p;

	if (extra > SIZE_MAX - b->len - 1)
		return -1;
	need = b->len + extra + 1;
	if (b->max && need - 1 > b->max)
		return -1;
	if (need <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 64;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	p = cof_realloc(b->data, cap);
	b->data = p;
	b->cap = cap;
	return 0;
}

int cof_buf_reserve(cof_buf *b, size_t extra)
{
	return buf_grow(b, extra);
}

int cof_buf_add(cof_buf *b, const void *data, size_t len)
{
	if (buf_grow(b, len))
		return -1;
	if (len)
		memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = '\0';
	return 0;
}

int cof_buf_adds(cof_buf *b, const char *s)
{
	return cof_buf_add(b, s, strlen(s));
}

int cof_buf_addf(cof_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || buf_grow(b, (size_t)n))
		return -1;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

void cof_buf_reset(cof_buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

void cof_buf_release(cof_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

char *cof_buf_detach(cof_buf *b, size_t *len)
{
	char *p = b->data;

	if (!p)
		p = cof_calloc(1, 1);
	if (len)
		*len = b->len;
	b->data = NULL;
	b->len = b->cap = 0;
	return p;
}
