/*
 * meta_pg_key.c — API keys on PostgreSQL: adding, finding, listing, revoking
 * and recording their use. Keys are stored by the SHA-256 of the secret.
 */
#include <string.h>
#include "store/meta_pg.h"

#define KEY_COLS "hash, id, org, agent, name, admin, read_only, created_at," \
		 " expires_at, revoked_at, last_used_at"

/* Copies row `i` of a KEY_COLS result into *k. */
static void key_row(PGresult *r, int i, cof_keyrow *k)
{
	memset(k, 0, sizeof *k);
	cof_pg_copy(r, i, 0, k->hash, sizeof k->hash);
	cof_pg_copy(r, i, 1, k->id, sizeof k->id);
	cof_pg_copy(r, i, 2, k->org, sizeof k->org);
	cof_pg_copy(r, i, 3, k->agent, sizeof k->agent);
	cof_pg_copy(r, i, 4, k->name, sizeof k->name);
	k->admin = (int)cof_pg_int(r, i, 5);
	k->read_only = (int)cof_pg_int(r, i, 6);
	k->created_at = cof_pg_int(r, i, 7);
	k->expires_at = cof_pg_int(r, i, 8);
	k->revoked_at = cof_pg_int(r, i, 9);
	k->last_used_at = cof_pg_int(r, i, 10);
}

/* cof_pg_row_fn: the KEY_COLS row into ctx (a cof_keyrow). */
static int key_one(void *ctx, PGresult *r, int i, cof_err *err)
{
	(void)err;
	key_row(r, i, ctx);
	return 1;
}

/* A caller's cof_key_fn and its context, for key_each_row. */
typedef struct {
	cof_key_fn fn;
	void *ctx;
} key_each;

/* cof_pg_row_fn: gives a KEY_COLS row to the caller's fn. */
static int key_each_row(void *ctx, PGresult *r, int i, cof_err *err)
{
	key_each *e = ctx;
	cof_keyrow k;

	(void)err;
	key_row(r, i, &k);
	return e->fn(e->ctx, &k) ? 1 : 0;
}

static int pg_key_add(cof_meta *m, const cof_keyrow *k, cof_err *err)
{
	return cof_pg_one(m, "INSERT INTO keys(" KEY_COLS ")"
			  " VALUES($1,$2,$3,$4,$5,$6,$7,$8,$9,0,0)", "adding a key", NULL, err,
			  "sssssiiii", k->hash, k->id, k->org, k->agent, k->name,
			  (int64_t)k->admin, (int64_t)k->read_only, k->created_at, k->expires_at);
}

/* Under an advisory lock of the organization held to the commit, and the
 * count a statement after it (a snapshot taken once the lock is ours): two
 * nodes minting at once cannot both take the last place. */
static int pg_key_add_capped(cof_meta *m, const cof_keyrow *k, int64_t cap, cof_err *err)
{
	pgconn *c = cof_pg_begin(m, NULL, err);
	int64_t n = 0;
	int rc;

	if (!c)
		return -1;
	rc = cof_pg_do(c, "SELECT pg_advisory_xact_lock(7366113, hashtext($1))",
		       "locking the organization's keys", NULL, err, "s", k->org);
	if (!rc)
		rc = cof_pg_do(c, "INSERT INTO keys(" KEY_COLS ")"
			       " SELECT $1,$2,$3,$4,$5,$6,$7,$8::bigint,$9,0,0 WHERE $10::bigint <= 0 OR"
			       " (SELECT count(*) FROM keys WHERE org = $3 AND revoked_at = 0 AND"
			       " (expires_at = 0 OR expires_at > $8::bigint)) < $10::bigint", "adding a key",
			       &n, err, "sssssiiiii", k->hash, k->id, k->org, k->agent, k->name,
			       (int64_t)k->admin, (int64_t)k->read_only, k->created_at,
			       k->expires_at, cap);
	if (cof_pg_end(m, c, rc, err) < 0)
		return -1;
	return n == 1;
}

static int pg_key_find_id(cof_meta *m, const char *id, cof_keyrow *out, cof_err *err)
{
	int rc = cof_pg_rows(m, "SELECT " KEY_COLS " FROM keys WHERE id = $1", "checking a key",
			     key_one, out, err, "s", id);

	if (rc == 0)
		return cof_error(err, COF_ENOTFOUND, "no key '%s'", id);
	return rc < 0 ? -1 : 0;
}

/* Under an advisory lock held to the commit, and the check a statement after
 * it (a snapshot taken once the lock is ours): nodes starting together on an
 * empty dataset make one admin key between them. */
static int pg_key_add_first_admin(cof_meta *m, const cof_keyrow *k, cof_err *err)
{
	pgconn *c = cof_pg_begin(m, NULL, err);
	int64_t n = 0;
	int rc;

	if (!c)
		return -1;
	rc = cof_pg_exec(c, "SELECT pg_advisory_xact_lock(7366112)", err);
	if (!rc)
		rc = cof_pg_do(c, "INSERT INTO keys(" KEY_COLS ")"
			       " SELECT $1,$2,$3,$4,$5,$6,$7,$8,$9,0,0 WHERE NOT EXISTS"
			       " (SELECT 1 FROM keys WHERE admin = 1)", "adding the admin key",
			       &n, err, "sssssiiii", k->hash, k->id, k->org, k->agent, k->name,
			       (int64_t)k->admin, (int64_t)k->read_only, k->created_at,
			       k->expires_at);
	if (cof_pg_end(m, c, rc, err) < 0)
		return -1;
	return n == 1;
}

static int pg_key_find(cof_meta *m, const char *hash, cof_keyrow *out, cof_err *err)
{
	int rc = cof_pg_rows(m, "SELECT " KEY_COLS " FROM keys WHERE hash = $1", "checking a key",
			     key_one, out, err, "s", hash);

	if (rc == 0)
		return cof_error(err, COF_EUNAUTHORIZED, "the API key is not valid");
	return rc < 0 ? -1 : 0;
}

static int pg_key_list(cof_meta *m, const char *org, cof_key_fn fn, void *ctx, cof_err *err)
{
	key_each e = { fn, ctx };

	return cof_pg_rows(m, "SELECT " KEY_COLS " FROM keys WHERE org = $1 AND revoked_at = 0"
			   " ORDER BY created_at, id", "listing keys", key_each_row, &e, err, "s",
			   org) < 0 ? -1 : 0;
}

static int pg_key_revoke(cof_meta *m, const char *org, const char *id, int admin,
			 int64_t now, cof_keyrow *out, cof_err *err)
{
	int rc = cof_pg_rows(m, "UPDATE keys SET revoked_at = $3 WHERE id = $1 AND revoked_at = 0"
			     " AND ($2::text IS NULL OR org = $2) AND ($4 = 1 OR admin = 0)"
			     " RETURNING " KEY_COLS, "revoking a key", key_one, out, err, "ssii", id,
			     org, now, (int64_t)admin);

	if (rc == 0)
		return cof_error(err, COF_ENOTFOUND, "no key '%s'", id);
	return rc < 0 ? -1 : 0;
}

static int pg_key_touch(cof_meta *m, const char *hash, int64_t now, cof_err *err)
{
	return cof_pg_one(m, "UPDATE keys SET last_used_at = $1 WHERE hash = $2",
			  "recording a key's use", NULL, err, "is", now, hash);
}

/* This file's members of the PostgreSQL backend's table. */
void cof_pg_ops_key(cof_meta_ops *o)
{
	o->key_add = pg_key_add;
	o->key_add_capped = pg_key_add_capped;
	o->key_find_id = pg_key_find_id;
	o->key_find = pg_key_find;
	o->key_list = pg_key_list;
	o->key_revoke = pg_key_revoke;
	o->key_touch = pg_key_touch;
	o->key_add_first_admin = pg_key_add_first_admin;
}
