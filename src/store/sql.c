/*
 * sql.c — the SQL driver seam's half above the drivers (sql.h): the calls
 * the metadata code makes, dispatched to the store's driver, the column
 * accessors, and the rewriting of shared SQL text the drivers share.
 */
#include <stdlib.h>
#include <string.h>
#include "store/sql.h"

int cof_sql_begin(cof_meta *m, int mode, cof_sql_tx *tx, cof_err *err)
{
	tx->m = m;
	tx->d = m->sql;
	tx->c = NULL;
	tx->mode = mode;
	tx->began = 0;
	tx->x = NULL;
	return m->sql->begin(tx, err);
}

int cof_sql_end(cof_sql_tx *tx, int rc, cof_err *err)
{
	return tx->d->end(tx, rc, err);
}

int cof_sql_exec(cof_sql_tx *tx, int64_t *changed, const char *sql, const char *what,
		 cof_err *err, const char *kinds, ...)
{
	va_list ap;
	va_start(ap, kinds);
	int rc = tx->d->exec(tx, changed, sql, what, err, kinds, ap);
	va_end(ap);
	return rc;
}

int cof_sql_send(cof_sql_tx *tx, const char *sql, const char *what, cof_err *err,
		 const char *kinds, ...)
{
	va_list ap;
	va_start(ap, kinds);
	int rc = tx->d->send(tx, sql, what, err, kinds, ap);
	va_end(ap);
	return rc;
}

int cof_sql_send_last(cof_sql_tx *tx, const char *sql, const char *what, cof_err *err,
		      const char *kinds, ...)
{
	va_list ap;
	va_start(ap, kinds);
	int rc = tx->d->send_last(tx, sql, what, err, kinds, ap);
	va_end(ap);
	return rc;
}

int cof_sql_query(cof_sql_tx *tx, const char *sql, const char *what, cof_sql_row_fn fn,
		  void *ctx, cof_err *err, const char *kinds, ...)
{
	va_list ap;
	va_start(ap, kinds);
	int rc = tx->d->query(tx, sql, what, fn, ctx, err, kinds, ap);
	va_end(ap);
	return rc;
}

int cof_sql_read(cof_meta *m, const char *sql, const char *what, cof_sql_row_fn fn,
		 void *ctx, cof_err *err, const char *kinds, ...)
{
	cof_sql_tx tx;
	va_list ap;
	int rc = cof_sql_begin(m, COF_SQL_READ | COF_SQL_ONE, &tx, err);

	if (rc < 0)
		return rc;
	va_start(ap, kinds);
	rc = m->sql->query(&tx, sql, what, fn, ctx, err, kinds, ap);
	va_end(ap);
	int e = cof_sql_end(&tx, rc < 0 ? rc : 0, err);
	return e < 0 ? e : rc;
}

int cof_sql_write(cof_meta *m, int64_t *changed, const char *sql, const char *what,
		  cof_err *err, const char *kinds, ...)
{
	cof_sql_tx tx;
	va_list ap;
	int rc = cof_sql_begin(m, COF_SQL_WRITE | COF_SQL_ONE, &tx, err);

	if (rc < 0)
		return rc;
	va_start(ap, kinds);
	rc = m->sql->exec(&tx, changed, sql, what, err, kinds, ap);
	va_end(ap);
	return cof_sql_end(&tx, rc, err);
}

int cof_sql_lock(cof_sql_tx *tx, int32_t space, const char *name, cof_err *err)
{
	return tx->d->lock(tx, space, name, err);
}

void cof_sql_text(const cof_sql_row *r, int col, char *buf, size_t size)
{
	size_t n = 0;
	const char *s = r->d->text(r, col, &n);

	if (size == 0)
		return;
	if (n >= size)
		n = size - 1;
	if (n)
		memcpy(buf, s, n);
	buf[n] = '\0';
}

const char *cof_sql_str(const cof_sql_row *r, int col)
{
	size_t n;
	return r->d->text(r, col, &n);
}

int64_t cof_sql_int(const cof_sql_row *r, int col)
{
	return r->d->int64(r, col);
}

int cof_sql_isnull(const cof_sql_row *r, int col)
{
	return r->d->isnull(r, col);
}

int cof_sql_blob(const cof_sql_row *r, int col, unsigned char **data, size_t *len)
{
	return r->d->blob(r, col, data, len);
}

int cof_sql_blob_ref(const cof_sql_row *r, int col, const unsigned char **data, size_t *len,
		     unsigned char **owned)
{
	int rc;

	*owned = NULL;
	if (!r->d->blob_ref) {
		rc = r->d->blob(r, col, owned, len);
		*data = *owned;
		return rc;
	}
	*data = NULL;
	*len = 0;
	if (r->d->isnull(r, col))
		return 0;
	if (!(*data = r->d->blob_ref(r, col, len)))
		*data = (const unsigned char *)"";   /* SQLite's empty blob */
	return 1;
}

int cof_sql_row_int(void *ctx, const cof_sql_row *r, cof_err *err)
{
	(void)err;
	*(int64_t *)ctx = cof_sql_int(r, 0);
	return 1;
}

int cof_sql_mark_begin(cof_meta *m, cof_sql_mark *mk)
{
	mk->ok = mk->keep = 0;
	return m->sql->mark ? m->sql->mark(m, mk) : 0;
}

/* ---------------------------------------------------------- rewriting */

static const char *const token_names[COF_SQL_TOKENS] = { "{jsonb}", "{rowid}", "{C}",
								 "{json_patch}", "{for_update}",
								 "{json_each}", "{serial}", "{blob}",
								 "{norowid}", "{or_fail}" };

int cof_sql_needs_rewrite(const char *sql, int dollar)
{
	if (strchr(sql, '{'))
		return 1;
	if (dollar)
		for (const char *p = strchr(sql, '?'); p; p = strchr(p + 1, '?'))
			if (p[1] >= '0' && p[1] <= '9')
				return 1;
	return 0;
}

/* Writes the rewrite of sql into out (NULL: only counts); its length.
 * Outside quoted text ('...' and "..."), ?N becomes $N (dollar) and each
 * token its expansion; everything else is copied. */
static size_t rewrite_into(char *out, const char *sql, int dollar, const char *const *tokens)
{
	size_t n = 0;
	char quote = 0;

	for (const char *p = sql; *p; ) {
		int t = COF_SQL_TOKENS;
		if (quote && *p == quote)
			quote = 0;
		else if (!quote && (*p == '\'' || *p == '"'))
			quote = *p;
		else if (!quote && dollar && *p == '?' && p[1] >= '0' && p[1] <= '9') {
			if (out)
				out[n] = '$';
			n++;
			p++;
			continue;
		} else if (!quote && *p == '{')
			for (t = 0; t < COF_SQL_TOKENS; t++)
				if (!strncmp(p, token_names[t], strlen(token_names[t])))
					break;
		if (t < COF_SQL_TOKENS) {
			size_t k = strlen(tokens[t]);
			if (out)
				memcpy(out + n, tokens[t], k);
			n += k;
			p += strlen(token_names[t]);
			continue;
		}
		if (out)
			out[n] = *p;
		n++;
		p++;
	}
	return n;
}

char *cof_sql_rewrite(const char *sql, int dollar, const char *const *tokens)
{
	size_t n = rewrite_into(NULL, sql, dollar, tokens);
	char *out = cof_malloc(n + 1);

	if (out) {
		rewrite_into(out, sql, dollar, tokens);
		out[n] = '\0';
	}
	return out;
}
