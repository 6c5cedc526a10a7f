/*
 * keys.c — API keys: minting, checking, listing, revoking, rotating the admin
 * key (docs/api.md, "Keys").
 *
 * A key is "ck_" + 48 hex digits of randomness; only its SHA-256 is stored.
 * Its id, "k_" + the hash's first 16 hex digits, names it in listings, in
 * DELETE /v1/keys/{id} and in the request log. Every request reads the key's
 * row (one primary-key lookup), so a revocation holds at once on every node
 * sharing the metadata store, including one made by `coffer admin rotate-key`
 * in another process; the use is recorded at most once a minute per key.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "store/store.h"
#include "util/util.h"

#define KEY_NAME_MAX 128
#define KEY_EXPIRES_MIN 60                       /* a minute */
#define KEY_EXPIRES_MAX (10LL * 365 * 24 * 3600) /* ten years */
#define KEY_TOUCH_EVERY 60                       /* seconds between lastUsedAt writes */

/* The id of the key whose hash is `hash`. */
static void key_id(const char *hash, char out[24])
{
	snprintf(out, 24, "k_%.16s", hash);
}

/* Makes a new secret into key[80] and its hash into hash[65]. */
static int key_new(char key[80], char hash[65], cof_err *err)
{
	unsigned char raw[24];
	char hex[49];

	if (cof_random(raw, sizeof raw))
		return cof_error(err, COF_EINTERNAL, "no randomness available");
	cof_hex(raw, sizeof raw, hex);
	snprintf(key, 80, "ck_%s", hex);
	cof_sha256_hex(key, strlen(key), hash);
	return 0;
}

/* The row of a new key `hash` of `org`. */
static void key_row(cof_keyrow *k, const char *hash, const char *org, int admin)
{
	memset(k, 0, sizeof *k);
	snprintf(k->hash, sizeof k->hash, "%s", hash);
	key_id(hash, k->id);
	snprintf(k->org, sizeof k->org, "%s", org);
	k->admin = admin;
	k->created_at = cof_now();
}

int cof_key_register(cof_store *st, const char *hash, const char *org, int admin,
		     cof_err *err)
{
	cof_keyrow k;

	key_row(&k, hash, org, admin);
	return cof_meta_key_add(st->meta, &k, err);
}

int cof_key_register_first_admin(cof_store *st, const char *hash, cof_err *err)
{
	cof_keyrow k;

	key_row(&k, hash, COF_DEFAULT_ORG, 1);
	return cof_meta_key_add_first_admin(st->meta, &k, err);
}

int cof_key_auth(cof_store *st, const char *key, cof_principal *who, cof_err *err)
{
	return cof_key_auth_hashed(st, key, NULL, who, err);
}

int cof_key_auth_hashed(cof_store *st, const char *key, const char *given,
			cof_principal *who, cof_err *err)
{
	char hash[65], when[32];
	cof_keyrow k;
	int64_t now = cof_now();

	if (!key || !*key)
		return cof_error(err, COF_EUNAUTHORIZED,
				 "an API key is required (Authorization: Bearer KEY or x-api-key)");
	if (strlen(key) > 200)
		return cof_error(err, COF_EUNAUTHORIZED, "the API key is not valid");
	if (given)
		snprintf(hash, sizeof hash, "%s", given);
	else
		cof_sha256_hex(key, strlen(key), hash);
	if (cof_meta_key_find(st->meta, hash, &k, err))
		return -1;
	if (k.revoked_at) {
		cof_time_fmt(k.revoked_at, when, sizeof when);
		return cof_error(err, COF_EUNAUTHORIZED, "the API key %s was revoked at %s", k.id,
				 when);
	}
	if (k.expires_at && now >= k.expires_at) {
		cof_time_fmt(k.expires_at, when, sizeof when);
		return cof_error(err, COF_EUNAUTHORIZED, "the API key %s expired at %s", k.id,
				 when);
	}
	memset(who, 0, sizeof *who);
	snprintf(who->org, sizeof who->org, "%s", k.org);
	snprintf(who->agent, sizeof who->agent, "%s", k.agent);
	snprintf(who->key_id, sizeof who->key_id, "%s", k.id);
	who->admin = k.admin;
	who->read_only = k.read_only;
	who->expires_at = k.expires_at;
	cof_key_s3_ensure(st, who, key);
	/* lastUsedAt is advisory: a failed write must not fail the request. */
	if (now - k.last_used_at >= KEY_TOUCH_EVERY) {
		cof_err e2 = {0};
		if (cof_meta_key_touch(st->meta, hash, now, &e2))
			cof_err_clear(&e2);
	}
	return 0;
}

static const cof_jfield key_fields[] = {
	{"org", COF_JSTR, 0}, {"agent", COF_JSTR, 0}, {"name", COF_JSTR, 0},
	{"expiresIn", COF_JINT, 0}, {"readOnly", COF_JBOOL, 0}, {NULL, 0, 0}};

/* Checks an org or agent name: 1..max bytes of [A-Za-z0-9._-]. */
static int name_check(const char *s, const char *what, size_t max, cof_err *err)
{
	size_t n = strlen(s);

	if (n == 0 || n > max)
		return cof_error(err, COF_EVALIDATION, "'%s' must be 1 to %zu bytes", what, max);
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
			return cof_error(err, COF_EVALIDATION,
					 "'%s' may hold only letters, digits, '.', '_' and '-'", what);
	}
	return 0;
}

/* Checks a key's label: 1..KEY_NAME_MAX bytes of UTF-8 without control
 * characters (it is shown in listings and consoles as it is). */
static int label_check(const char *s, cof_err *err)
{
	size_t n = strlen(s);

	if (n == 0 || n > KEY_NAME_MAX)
		return cof_error(err, COF_EVALIDATION, "'name' is %zu bytes; it must be 1 to %d",
				 n, KEY_NAME_MAX);
	if (!cof_utf8_valid(s, n))
		return cof_error(err, COF_EVALIDATION, "'name' is not valid UTF-8");
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return cof_error(err, COF_EVALIDATION,
					 "'name' may not hold control characters");
	return 0;
}

/* Checks the body of POST /v1/keys and who may mint what; fills *k but for
 * its hash, id and times. */
static int key_body(const cof_principal *who, json_t *body, cof_keyrow *k,
		    int64_t *expires_in, cof_err *err)
{
	const char *org, *agent, *name;

	if (cof_json_check(body, key_fields, err))
		return -1;
	org = cof_json_str(body, "org");
	agent = cof_json_str(body, "agent");
	name = cof_json_str(body, "name");
	if (who->agent[0])
		return cof_error(err, COF_EFORBIDDEN, "a key bound to an agent cannot mint keys");
	if (who->read_only)
		return cof_error(err, COF_EFORBIDDEN, "a read-only key cannot mint keys");
	if ((org && name_check(org, "org", 40, err)) ||
	    (agent && name_check(agent, "agent", 120, err)) || (name && label_check(name, err)))
		return -1;
	if (org && strcmp(org, who->org) && !who->admin)
		return cof_error(err, COF_EFORBIDDEN,
				 "only the admin key may mint keys for another organization");
	*expires_in = 0;
	if (cof_json_int(body, "expiresIn", expires_in) &&
	    (*expires_in < KEY_EXPIRES_MIN || *expires_in > KEY_EXPIRES_MAX))
		return cof_error(err, COF_EVALIDATION,
				 "'expiresIn' is %lld seconds; it must be %d to %lld (ten years)",
				 (long long)*expires_in, KEY_EXPIRES_MIN,
				 (long long)KEY_EXPIRES_MAX);
	snprintf(k->org, sizeof k->org, "%s", org ? org : who->org);
	snprintf(k->agent, sizeof k->agent, "%s", agent ? agent : "");
	snprintf(k->name, sizeof k->name, "%s", name ? name : "");
	k->read_only = cof_json_bool(body, "readOnly", 0);
	return 0;
}

/* Sets `name` of `o` to the time t, or null when t is 0. */
static void set_time(json_t *o, const char *name, int64_t t)
{
	json_object_set_new(o, name, t ? cof_json_time(t) : json_null());
}

int cof_key_create(cof_store *st, const cof_principal *who, json_t *body,
		   json_t **out, cof_err *err)
{
	cof_keyrow k = {0};
	int64_t expires_in;
	char key[80];

	int64_t cap = st->opts.keys_per_org > 0 ? st->opts.keys_per_org : COF_KEYS_PER_ORG;
	int added;

	if (key_body(who, body, &k, &expires_in, err) || key_new(key, k.hash, err))
		return -1;
	key_id(k.hash, k.id);
	k.created_at = cof_now();
	k.expires_at = expires_in ? k.created_at + expires_in : 0;
	/* Keys are what the rate limit counts by: without a cap, minting more
	 * of them would be a way round it (and round the organization's). */
	added = cof_meta_key_add_capped(st->meta, &k, cap, err);
	if (added < 0)
		return -1;
	if (!added)
		return cof_error(err, COF_ECONFLICT,
				 "organization '%s' holds %lld live keys, its limit (cofferd "
				 "--keys-per-org); revoke one (DELETE /v1/keys/{id}) before "
				 "minting another", k.org, (long long)cap);
	/* S3 access of this key (s3keys.c); without it the key still works on
	 * HTTP, which seals it on first use */
	cof_err e2 = {0};
	if (cof_key_s3_seal(st, k.id, k.org, key, &e2))
		cof_err_clear(&e2);
	*out = json_pack("{s:s, s:s, s:s, s:b}", "id", k.id, "key", key, "org", k.org,
			 "readOnly", k.read_only);
	if (k.agent[0])
		json_object_set_new(*out, "agent", json_string(k.agent));
	if (k.name[0])
		json_object_set_new(*out, "name", json_string(k.name));
	if (k.expires_at)
		set_time(*out, "expiresAt", k.expires_at);
	return 0;
}

/* The listing form of a key: never its secret (which is not stored). */
static json_t *key_json(const cof_keyrow *k)
{
	json_t *o = json_pack("{s:s, s:s, s:b, s:b}", "id", k->id, "org", k->org, "readOnly",
			      k->read_only, "admin", k->admin);

	json_object_set_new(o, "name", k->name[0] ? json_string(k->name) : json_null());
	json_object_set_new(o, "agent", k->agent[0] ? json_string(k->agent) : json_null());
	set_time(o, "createdAt", k->created_at);
	set_time(o, "expiresAt", k->expires_at);
	set_time(o, "lastUsedAt", k->last_used_at);
	return o;
}

/* Appends one key to the array ctx. */
static int list_one(void *ctx, const cof_keyrow *k)
{
	json_array_append_new(ctx, key_json(k));
	return 0;
}

int cof_key_list(cof_store *st, const cof_principal *who, const char *org, json_t **out,
		 cof_err *err)
{
	json_t *arr;

	if (who->agent[0])
		return cof_error(err, COF_EFORBIDDEN, "a key bound to an agent cannot list keys");
	if (org && strcmp(org, who->org) && !who->admin)
		return cof_error(err, COF_EFORBIDDEN,
				 "only the admin key may list another organization's keys");
	if (org && name_check(org, "org", 40, err))
		return -1;
	arr = json_array();
	if (cof_meta_key_list(st->meta, org ? org : who->org, list_one, arr, err)) {
		json_decref(arr);
		return -1;
	}
	*out = json_pack("{s:o}", "keys", arr);
	return 0;
}

int cof_key_revoke(cof_store *st, const cof_principal *who, const char *id, cof_err *err)
{
	cof_keyrow k;
	char hash[65], admin_id[24];

	if (who->agent[0])
		return cof_error(err, COF_EFORBIDDEN, "a key bound to an agent cannot revoke keys");
	if (who->read_only)
		return cof_error(err, COF_EFORBIDDEN, "a read-only key cannot revoke keys");
	cof_sha256_hex(st->admin_key, strlen(st->admin_key), hash);
	key_id(hash, admin_id);
	if (!strcmp(id, admin_id))
		return cof_error(err, COF_EFORBIDDEN,
				 "the admin key cannot be revoked; replace it with 'coffer admin "
				 "rotate-key'");
	if (cof_meta_key_revoke(st->meta, who->admin ? NULL : who->org, id, 0, cof_now(),
				&k, err))
		return -1;
	/* its sealed S3 secret serves nothing now (the revocation alone refuses it) */
	cof_err e2 = {0};
	if (cof_meta_state_delete(st->meta, "s3key", id, &e2))
		cof_err_clear(&e2);
	return 0;
}

/* Writes `key` to DATA/admin.key through a temporary file and a rename, so
 * the file holds the old key or the new one, never a part. */
static int admin_file_write(cof_store *st, const char *key, cof_err *err)
{
	char path[4200], tmp[4210];
	size_t n = strlen(key);
	int fd, e;

	snprintf(path, sizeof path, "%s/admin.key", st->dir);
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, key, n) != (ssize_t)n || write(fd, "\n", 1) != 1 ||
	    fsync(fd) < 0 || close(fd) < 0 || rename(tmp, path) < 0 || cof_fsync_dir(st->dir)) {
		e = errno;
		if (fd >= 0)
			close(fd);
		unlink(tmp);
		return cof_error(err, COF_EINTERNAL, "cannot write '%s': %s", path, strerror(e));
	}
	return 0;
}

int cof_admin_key_rotate(cof_store *st, char out[80], cof_err *err)
{
	char key[80], hash[65], old_hash[65], old_id[24];
	cof_keyrow k;

	if (key_new(key, hash, err) || cof_key_register(st, hash, COF_DEFAULT_ORG, 1, err))
		return -1;
	char new_id[24];
	key_id(hash, new_id);
	cof_err e2 = {0};
	if (cof_key_s3_seal(st, new_id, COF_DEFAULT_ORG, key, &e2))
		cof_err_clear(&e2);
	/* The new key is stored before the file names it and the old one is
	 * revoked only after: a crash in between leaves a key that works. */
	if (admin_file_write(st, key, err))
		return -1;
	cof_sha256_hex(st->admin_key, strlen(st->admin_key), old_hash);
	key_id(old_hash, old_id);
	if (cof_meta_key_revoke(st->meta, NULL, old_id, 1, cof_now(), &k, err) &&
	    err->code != COF_ENOTFOUND)
		return -1;
	cof_err_clear(err);
	snprintf(st->admin_key, sizeof st->admin_key, "%s", key);
	snprintf(out, 80, "%s", key);
	return 0;
}
