/*
 * link.c — signed links: a token that lets anyone holding it GET or PUT one
 * file until it expires. token = base64url(payload JSON) "." base64url(HMAC-
 * SHA256(server secret, first part)). The secret lives in DATA/link.key, or on a
 * shared dataset in its metadata (store.c, link_secret_shared).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include "volume/volume.h"

#define LINK_DEFAULT_TTL 900
#define LINK_MAX_TTL 86400

static void link_mac(cof_store *st, const char *msg, size_t len, unsigned char mac[32])
{
	unsigned int maclen = 32;

	HMAC(EVP_sha256(), st->link_secret, sizeof st->link_secret,
	     (const unsigned char *)msg, len, mac, &maclen);
}

static const cof_jfield link_fields[] = {
	{"path", COF_JSTR, 1}, {"method", COF_JSTR, 0}, {"expiresIn", COF_JINT, 0},
	{"maxBytes", COF_JINT, 0}, {"contentType", COF_JSTR, 0}, {NULL, 0, 0}};

/* Checks a link request; fills the payload. */
static int link_parse(cof_store *st, const char *org, const char *vol, json_t *body,
		      json_t **payload, int64_t *expires, cof_err *err)
{
	const char *path, *method, *ctype;
	int64_t ttl = LINK_DEFAULT_TTL, max = 0;
	cof_volrow v;

	if (cof_json_check(body, link_fields, err))
		return -1;
	if (cof_path_check(cof_json_str(body, "path"), strlen(cof_json_str(body, "path")),
			   "'path'", &path, err))
		return -1;
	method = cof_json_str(body, "method");
	if (!method)
		method = "GET";
	if (strcmp(method, "GET") && strcmp(method, "PUT"))
		return cof_error(err, COF_EVALIDATION, "'method' must be \"GET\" or \"PUT\"");
	if (cof_json_int(body, "expiresIn", &ttl) && (ttl < 1 || ttl > LINK_MAX_TTL))
		return cof_error(err, COF_EVALIDATION,
				 "'expiresIn' must be 1 to %d seconds", LINK_MAX_TTL);
	ctype = cof_json_str(body, "contentType");
	if (cof_json_int(body, "maxBytes", &max) && max < 1)
		return cof_error(err, COF_EVALIDATION, "'maxBytes' must be 1 or more");
	if (!strcmp(method, "GET") && (max || ctype))
		return cof_error(err, COF_EVALIDATION,
				 "'maxBytes' and 'contentType' apply to PUT links only");
	if (ctype && cof_media_type_check(ctype, "'contentType'", err))
		return -1;
	if (cof_meta_volume_get(st->meta, org, vol, &v, err))
		return -1;
	*expires = cof_now() + ttl;
	*payload = json_pack("{s:s, s:s, s:s, s:s, s:I}", "o", org, "v", v.id, "p", path,
			     "m", method, "e", (json_int_t)*expires);
	if (max)
		json_object_set_new(*payload, "b", json_integer(max));
	if (ctype)
		json_object_set_new(*payload, "t", json_string(ctype));
	return 0;
}

/* Adds a nonce, signs the payload and answers {url, method, path, expiresAt}. */
static int link_sign(cof_store *st, json_t *payload, int64_t expires, json_t **out,
		     cof_err *err)
{
	char *ptxt = NULL, *p64 = NULL, *m64 = NULL, nhex[17];
	unsigned char mac[32], nonce[8];
	cof_buf url = COF_BUF_INIT;
	int rc = -1;

	cof_random(nonce, sizeof nonce);
	cof_hex(nonce, sizeof nonce, nhex);
	json_object_set_new(payload, "n", json_string(nhex));
	if (!(ptxt = json_dumps(payload, JSON_COMPACT)) ||
	    !(p64 = cof_base64url_encode(ptxt, strlen(ptxt)))) {
		cof_error(err, COF_EINTERNAL, "out of memory");
		goto out;
	}
	link_mac(st, p64, strlen(p64), mac);
	if (!(m64 = cof_base64url_encode(mac, sizeof mac)) ||
	    cof_buf_addf(&url, "/l/%s.%s", p64, m64)) {
		cof_error(err, COF_EINTERNAL, "out of memory");
		goto out;
	}
	*out = json_pack("{s:s, s:s, s:O, s:o}", "url", url.data, "method",
			 json_string_value(json_object_get(payload, "m")), "path",
			 json_object_get(payload, "p"), "expiresAt", cof_json_time(expires));
	rc = 0;
out:
	free(ptxt);
	free(p64);
	free(m64);
	cof_buf_release(&url);
	return rc;
}

int cof_link_create_pinned(cof_store *st, const char *org, const char *vol,
			   const char *path, const char *sha, const char *ctype, int64_t size,
			   int64_t version, json_t **out, cof_err *err)
{
	int64_t expires = cof_now() + LINK_DEFAULT_TTL;
	json_t *payload = json_pack("{s:s, s:s, s:s, s:s, s:I, s:s, s:s, s:I, s:I}", "o", org,
				    "v", vol, "p", path, "m", "GET", "e", (json_int_t)expires, "s",
				    sha, "t", ctype, "z", (json_int_t)size, "r",
				    (json_int_t)version);
	int rc = payload ? link_sign(st, payload, expires, out, err)
			 : cof_error(err, COF_EINTERNAL, "out of memory");

	json_decref(payload);
	return rc;
}

/* Serialises the check and record of one key, so that two racing retries
 * cannot both be answered with a link. */
static pthread_mutex_t idem_mu = PTHREAD_MUTEX_INITIALIZER;

int cof_link_create(cof_store *st, const char *org, const char *vol, json_t *body,
		    const cof_idem *idem, const char *maker, json_t **out, cof_err *err)
{
	json_t *payload = NULL;
	int64_t expires = 0;
	char op[128], *prev = NULL;
	int rc = -1;

	if (link_parse(st, org, vol, body, &payload, &expires, err))
		return -1;
	if (idem && idem->key && *idem->key) {
		snprintf(op, sizeof op, "POST /v1/volumes/%.60s/links", vol);
		pthread_mutex_lock(&idem_mu);
		int r = cof_idem_lookup(st, org, idem, op, body, &prev, err);
		free(prev);
		if (r == 1)
			cof_error(err, COF_ECONFLICT,
				  "a link was already made with Idempotency-Key '%.255s'; it is "
				  "not shown again", idem->key);
		if (r == 0)
			r = cof_idem_record(st, org, idem, op, body, "link", err) ? -1 : 0;
		pthread_mutex_unlock(&idem_mu);
		if (r != 0)
			goto out;
	}
	if (maker && *maker)
		json_object_set_new(payload, "k", json_string(maker));
	if (link_sign(st, payload, expires, out, err))
		goto out;
	rc = 0;
out:
	json_decref(payload);
	return rc;
}

/* A link dies with the key that made it (issue 32.10): revoked, expired or
 * gone, its links are refused as an expired link is. One primary-key lookup
 * by the key's id, as a request's own key check is. */
static int maker_check(cof_store *st, const char *id, cof_err *err)
{
	cof_keyrow k;
	char when[32];

	if (cof_meta_key_find_id(st->meta, id, &k, err)) {
		if (err->code != COF_ENOTFOUND)
			return -1;
		cof_err_clear(err);
		return cof_error(err, COF_EFORBIDDEN,
				 "the link was made by the API key %s, which no longer exists", id);
	}
	if (k.revoked_at) {
		cof_time_fmt(k.revoked_at, when, sizeof when);
		return cof_error(err, COF_EFORBIDDEN,
				 "the link was made by the API key %s, which was revoked at %s", id,
				 when);
	}
	if (k.expires_at && cof_now() >= k.expires_at) {
		cof_time_fmt(k.expires_at, when, sizeof when);
		return cof_error(err, COF_EFORBIDDEN,
				 "the link was made by the API key %s, which expired at %s", id, when);
	}
	return 0;
}

int cof_link_verify(cof_store *st, const char *token, const char *method,
		    cof_link *out, cof_err *err)
{
	const char *dot = token ? strchr(token, '.') : NULL;
	unsigned char mac[32], *got = NULL, *ptxt = NULL;
	size_t gotlen = 0, plen = 0;
	json_t *p = NULL;
	int rc = -1;

	memset(out, 0, sizeof *out);
	if (!dot || strlen(token) > 16384)
		return cof_error(err, COF_EFORBIDDEN, "the link is not valid");
	link_mac(st, token, (size_t)(dot - token), mac);
	if (cof_base64url_decode(dot + 1, strlen(dot + 1), &got, &gotlen) || gotlen != 32 ||
	    CRYPTO_memcmp(mac, got, 32) ||
	    cof_base64url_decode(token, (size_t)(dot - token), &ptxt, &plen) ||
	    !(p = json_loadb((char *)ptxt, plen, 0, NULL))) {
		cof_error(err, COF_EFORBIDDEN, "the link is not valid");
		goto out;
	}
	const char *o = json_string_value(json_object_get(p, "o"));
	const char *v = json_string_value(json_object_get(p, "v"));
	const char *path = json_string_value(json_object_get(p, "p"));
	const char *m = json_string_value(json_object_get(p, "m"));
	const char *t = json_string_value(json_object_get(p, "t"));
	if (!o || !v || !path || !m) {
		cof_error(err, COF_EFORBIDDEN, "the link is not valid");
		goto out;
	}
	out->expires_at = json_integer_value(json_object_get(p, "e"));
	out->max_bytes = json_integer_value(json_object_get(p, "b"));
	if (out->expires_at <= cof_now()) {
		cof_error(err, COF_EFORBIDDEN, "the link expired");
		goto out;
	}
	if (strcmp(m, !strcmp(method, "HEAD") ? "GET" : method)) {
		cof_error(err, COF_EFORBIDDEN, "this link allows %s only", m);
		goto out;
	}
	snprintf(out->org, sizeof out->org, "%s", o);
	snprintf(out->vol, sizeof out->vol, "%s", v);
	snprintf(out->path, sizeof out->path, "%s", path);
	snprintf(out->method, sizeof out->method, "%s", m);
	const char *k = json_string_value(json_object_get(p, "k"));
	snprintf(out->maker, sizeof out->maker, "%s", k ? k : "");
	if (out->maker[0] && maker_check(st, out->maker, err))
		goto out;
	snprintf(out->content_type, sizeof out->content_type, "%s", t ? t : "");
	const char *sha = json_string_value(json_object_get(p, "s"));
	snprintf(out->sha256, sizeof out->sha256, "%s", sha && strlen(sha) == 64 ? sha : "");
	out->size = json_integer_value(json_object_get(p, "z"));
	out->version = json_integer_value(json_object_get(p, "r"));
	rc = 0;
out:
	json_decref(p);
	free(got);
	free(ptxt);
	return rc;
}

int cof_link_open(cof_store *st, const cof_link *l, cof_file *out, cof_err *err)
{
	cof_volrow v;

	if (!l->sha256[0])
		return cof_file_open(st, l->org, l->vol, l->path, NULL, out, err);
	/* Pinned content: the bytes as they were shown, while the volume exists. */
	memset(out, 0, sizeof *out);
	if (cof_meta_volume_get(st->meta, l->org, l->vol, &v, err) ||
	    cof_content_open(st, l->sha256, l->size, l->path, &out->reader, err))
		return -1;
	out->version = l->version;
	out->size = l->size;
	out->vol_seq = v.seq;
	memcpy(out->sha256, l->sha256, sizeof out->sha256);
	snprintf(out->content_type, sizeof out->content_type, "%s", l->content_type);
	out->updated_at = cof_now();
	return 0;
}
