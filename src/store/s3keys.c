/*
 * s3keys.c — the secrets the S3 gateway verifies SigV4 with (API.md "S3
 * gateway": the access key id is a key's id, its secret the key itself).
 *
 * Only a key's SHA-256 is in the keys table, and SigV4 needs the secret
 * itself (HMAC("AWS4" + secret, date)...). So each key is also kept sealed:
 * AES-256-GCM under a key derived from the dataset's link secret (the one
 * secret every node of a dataset shares already), the key id as associated
 * data, in the state record s3key/ID. A reader of the metadata alone learns
 * nothing from it. A key is sealed when minted, when the admin key is made
 * or rotated, and, for keys minted before the gateway existed, the first
 * time it authenticates an HTTP request in a process.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include "store/store.h"
#include "util/util.h"

#define S3KEY_KIND "s3key"
#define SEAL_NONCE 12
#define SEAL_TAG 16
#define SECRET_MAX 79
#define SEEN_SLOTS 8192   /* key ids known sealed, per process (a cache: full slots are reused) */
#define SEEN_PROBE 8

/* Every authenticated request asks, so this is a hash set (the id's hex is
 * already a hash) rather than a list. */
static pthread_mutex_t seen_mu = PTHREAD_MUTEX_INITIALIZER;
static char seen[SEEN_SLOTS][24];

static size_t seen_slot(const char *id)
{
	size_t h = 0;

	for (const char *p = id + 2; *p && p < id + 10; p++)
		h = h * 16 + (size_t)cof_hex_value(*p);
	return h % SEEN_SLOTS;
}

static int seen_has(const char *id)
{
	size_t h = seen_slot(id);
	int r = 0;

	pthread_mutex_lock(&seen_mu);
	for (size_t i = 0; i < SEEN_PROBE && !r; i++)
		r = !strcmp(seen[(h + i) % SEEN_SLOTS], id);
	pthread_mutex_unlock(&seen_mu);
	return r;
}

static void seen_add(const char *id)
{
	size_t h = seen_slot(id), at = h;

	pthread_mutex_lock(&seen_mu);
	for (size_t i = 0; i < SEEN_PROBE; i++)
		if (!seen[(h + i) % SEEN_SLOTS][0] || !strcmp(seen[(h + i) % SEEN_SLOTS], id)) {
			at = (h + i) % SEEN_SLOTS;
			break;
		}
	snprintf(seen[at], sizeof seen[0], "%s", id);
	pthread_mutex_unlock(&seen_mu);
}

/* The sealing key: HMAC-SHA256(link secret, purpose). */
static void seal_key(cof_store *st, unsigned char out[32])
{
	static const char purpose[] = "coffer s3 secret v1";
	unsigned int n = 32;

	HMAC(EVP_sha256(), st->link_secret, sizeof st->link_secret,
	     (const unsigned char *)purpose, sizeof purpose - 1, out, &n);
}

/* AES-256-GCM of `in` (n bytes) with aad `id`; enc 1 seals, 0 opens. The
 * output length or -1 (a tag that does not verify). */
static int gcm(cof_store *st, int enc, const char *id, const unsigned char *nonce,
	       const unsigned char *in, int n, unsigned char *out, unsigned char *tag)
{
	unsigned char k[32];
	EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
	int len = 0, fin = 0, ok;

	seal_key(st, k);
	ok = c && EVP_CipherInit_ex(c, EVP_aes_256_gcm(), NULL, NULL, NULL, enc) == 1 &&
	     EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_IVLEN, SEAL_NONCE, NULL) == 1 &&
	     EVP_CipherInit_ex(c, NULL, NULL, k, nonce, enc) == 1 &&
	     EVP_CipherUpdate(c, NULL, &len, (const unsigned char *)id, (int)strlen(id)) == 1 &&
	     EVP_CipherUpdate(c, out, &len, in, n) == 1 &&
	     (enc || EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, SEAL_TAG, tag) == 1) &&
	     EVP_CipherFinal_ex(c, out + len, &fin) == 1 &&
	     (!enc || EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, SEAL_TAG, tag) == 1);
	EVP_CIPHER_CTX_free(c);
	explicit_bzero(k, sizeof k);
	return ok ? len + fin : -1;
}

int cof_key_s3_seal(cof_store *st, const char *id, const char *org, const char *key,
		    cof_err *err)
{
	unsigned char buf[SEAL_NONCE + SECRET_MAX + SEAL_TAG];
	char hex[2 * sizeof buf + 1], body[2 * sizeof buf + 32];
	int n = (int)strlen(key);
	cof_staterow row = {.kind = S3KEY_KIND};

	if (n > SECRET_MAX)
		return cof_error(err, COF_EINTERNAL, "key %s is too long to seal", id);
	if (cof_random(buf, SEAL_NONCE))
		return cof_error(err, COF_EINTERNAL, "no randomness available");
	if (gcm(st, 1, id, buf, (const unsigned char *)key, n, buf + SEAL_NONCE,
		buf + SEAL_NONCE + n) != n)
		return cof_error(err, COF_EINTERNAL, "cannot seal key %s", id);
	cof_hex(buf, (size_t)(SEAL_NONCE + n + SEAL_TAG), hex);
	snprintf(body, sizeof body, "{\"sealed\":\"%s\"}", hex);
	snprintf(row.id, sizeof row.id, "%s", id);
	snprintf(row.org, sizeof row.org, "%s", org);
	row.body = body;
	if (cof_meta_state_put(st->meta, &row, err))
		return -1;
	seen_add(id);
	return 0;
}

void cof_key_s3_ensure(cof_store *st, const cof_principal *who, const char *key)
{
	cof_staterow row;
	cof_err e = {0};
	int r;

	if (seen_has(who->key_id))
		return;
	r = cof_meta_state_get(st->meta, S3KEY_KIND, who->key_id, &row, &e);
	if (r == 1) {
		free(row.body);
		seen_add(who->key_id);
	} else if (r == 0) {
		cof_key_s3_seal(st, who->key_id, who->org, key, &e);
	}
	/* advisory: the request it rides on goes on either way */
	cof_err_clear(&e);
}

/* 1 when `s` is an id as keys.c makes them: "k_" + 16 lowercase hex. */
static int id_shape(const char *s)
{
	size_t n = strlen(s);

	if (n != 18 || strncmp(s, "k_", 2))
		return 0;
	for (size_t i = 2; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

int cof_key_s3_secret(cof_store *st, const char *id, cof_principal *who, char secret[80],
		      cof_err *err)
{
	cof_keyrow k;
	cof_staterow row;
	char when[32];
	unsigned char buf[SEAL_NONCE + SECRET_MAX + SEAL_TAG];
	int r, n;

	if (!id_shape(id))
		return cof_error(err, COF_EUNAUTHORIZED, "the access key id must be a key's id "
				 "(k_ and 16 hex digits, GET /v1/keys)");
	if (cof_meta_key_find_id(st->meta, id, &k, err)) {
		if (err->code == COF_ENOTFOUND) {
			cof_err_clear(err);
			return cof_error(err, COF_EUNAUTHORIZED, "no key has the id %s", id);
		}
		return -1;
	}
	if (k.revoked_at) {
		cof_time_fmt(k.revoked_at, when, sizeof when);
		return cof_error(err, COF_EUNAUTHORIZED, "the API key %s was revoked at %s", id,
				 when);
	}
	if (k.expires_at && cof_now() >= k.expires_at) {
		cof_time_fmt(k.expires_at, when, sizeof when);
		return cof_error(err, COF_EUNAUTHORIZED, "the API key %s expired at %s", id, when);
	}
	if ((r = cof_meta_state_get(st->meta, S3KEY_KIND, id, &row, err)) < 0)
		return -1;
	if (r == 0)
		return cof_error(err, COF_EUNAUTHORIZED, "the key %s was minted before S3 access "
				 "existed: use it once with the HTTP API, then again here", id);
	json_t *j = row.body ? json_loads(row.body, 0, NULL) : NULL;
	const char *hex = json_string_value(json_object_get(j, "sealed"));
	size_t hl = hex ? strlen(hex) : 0;
	n = (int)(hl / 2) - SEAL_NONCE - SEAL_TAG;
	r = -1;
	if (hex && hl % 2 == 0 && n > 0 && n <= SECRET_MAX) {
		r = 0;
		for (size_t i = 0; i < hl / 2 && !r; i++) {
			int hi = cof_hex_value(hex[2 * i]), lo = cof_hex_value(hex[2 * i + 1]);
			if (hi < 0 || lo < 0)
				r = -1;
			else
				buf[i] = (unsigned char)(hi << 4 | lo);
		}
		if (!r && gcm(st, 0, id, buf, buf + SEAL_NONCE, n, (unsigned char *)secret,
			       buf + SEAL_NONCE + n) != n)
			r = -1;
	}
	json_decref(j);
	free(row.body);
	if (r)
		return cof_error(err, COF_EINTERNAL, "the sealed S3 secret of key %s (state "
				 "record %s/%s) does not open", id, S3KEY_KIND, id);
	secret[n] = '\0';
	memset(who, 0, sizeof *who);
	snprintf(who->org, sizeof who->org, "%s", k.org);
	snprintf(who->agent, sizeof who->agent, "%s", k.agent);
	snprintf(who->key_id, sizeof who->key_id, "%s", k.id);
	who->admin = k.admin;
	who->read_only = k.read_only;
	who->expires_at = k.expires_at;
	return 0;
}
