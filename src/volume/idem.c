/*
 * idem.c — Idempotency-Key records (API.md "General"): a key is kept for a
 * day with a hash of the request it came with (method, path and body) and what
 * that request made. The same key with the same request is a replay; with
 * another request it is 409 naming the key, and nothing is done.
 *
 * One scope per organization, so a key sent to another path conflicts too.
 * The stored value is "HASH VALUE": the metadata store keeps one string.
 */
#include <stdlib.h>
#include <string.h>
#include "volume/volume.h"

#define IDEM_KEY_MAX 255

/* The request's hash: the caller's (HTTP: method, path, body), else one of
 * `op` and the body's canonical JSON (keys sorted, compact). */
static int idem_hash(const cof_idem *idem, const char *op, json_t *body, char out[65],
		     cof_err *err)
{
	cof_buf b = COF_BUF_INIT;
	char *text;
	int rc;

	if (idem->request && *idem->request) {
		snprintf(out, 65, "%s", idem->request);
		return 0;
	}
	text = body ? json_dumps(body, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	rc = cof_buf_addf(&b, "%s\n%s", op, text ? text : "{}");
	free(text);
	if (rc == 0)
		rc = cof_sha256_hex(b.data, b.len, out);
	cof_buf_release(&b);
	return rc ? cof_error(err, COF_EINTERNAL, "out of memory hashing the request") : 0;
}

int cof_idem_lookup(cof_store *st, const char *org, const cof_idem *idem, const char *op,
		    json_t *body, char **value, cof_err *err)
{
	char scope[80], hash[65], *prev = NULL;
	size_t n = strlen(idem->key);
	int r;

	*value = NULL;
	if (n > IDEM_KEY_MAX)
		return cof_error(err, COF_EVALIDATION,
				 "Idempotency-Key is %zu bytes; the limit is %d", n, IDEM_KEY_MAX);
	if (idem_hash(idem, op, body, hash, err))
		return -1;
	snprintf(scope, sizeof scope, "%s:idem", org);
	r = cof_meta_idem_get(st->meta, scope, idem->key, COF_IDEM_TTL, &prev, err);
	if (r != 1)
		return r;
	if (strncmp(prev, hash, 64) != 0 || prev[64] != ' ') {
		free(prev);
		cof_error(err, COF_ECONFLICT,
			  "Idempotency-Key '%.255s' was used with a different request (method, "
			  "path or body) in the last 24 hours; nothing was done", idem->key);
		cof_err_set(err, "idempotencyKey", json_string(idem->key));
		return -1;
	}
	*value = strdup(prev + 65);
	free(prev);
	return *value ? 1 : cof_error(err, COF_EINTERNAL, "out of memory");
}

int cof_idem_record(cof_store *st, const char *org, const cof_idem *idem, const char *op,
		    json_t *body, const char *value, cof_err *err)
{
	char scope[80], hash[65];
	cof_buf b = COF_BUF_INIT;
	int rc;

	if (idem_hash(idem, op, body, hash, err))
		return -1;
	snprintf(scope, sizeof scope, "%s:idem", org);
	if (cof_buf_addf(&b, "%s %s", hash, value))
		return cof_error(err, COF_EINTERNAL, "out of memory");
	rc = cof_meta_idem_put(st->meta, scope, idem->key, b.data, err);
	cof_buf_release(&b);
	return rc;
}
