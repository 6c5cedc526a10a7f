/*
 * meta_key.c — API keys, written once above the SQL seam (store/sql.h):
 * adding, finding, listing, revoking and recording their use. Keys are
 * stored by the SHA-256 of the secret.
 */
#include <string.h>
#include "store/meta.h"
#include "store/sql.h"

#define KEY_COLS "hash, id, org, agent, name, admin, read_only, created_at," \
		 " expires_at, revoked_at, last_used_at"

/* The advisory lock spaces of minting (the same numbers as before the seam,
 * so that nodes of two releases still exclude each other). */
#define LOCK_FIRST_ADMIN 7366112
#define LOCK_ORG_KEYS 7366113

/* Copies the KEY_COLS of row r into *k. */
static void key_row(const cof_sql_row *r, cof_keyrow *k)
{
	memset(k, 0, sizeof *k);
	cof_sql_text(r, 0, k->hash, sizeof k->hash);
	cof_sql_text(r, 1, k->id, sizeof k->id);
	cof_sql_text(r, 2, k->org, sizeof k->org);
	cof_sql_text(r, 3, k->agent, sizeof k->agent);
	cof_sql_text(r, 4, k->name, sizeof k->name);
	k->admin = (int)cof_sql_int(r, 5);
	k->read_only = (int)cof_sql_int(r, 6);
	k->created_at = cof_sql_int(r, 7);
	k->expires_at = cof_sql_int(r, 8);
	k->revoked_at = cof_sql_int(r, 9);
	k->last_used_at = cof_sql_int(r, 10);
}

/* cof_sql_row_fn: the KEY_COLS row into ctx (a cof_keyrow). */
static int key_one(void *ctx, const cof_sql_row *r, cof_err *err)
{
	(void)err;
	key_row(r, ctx);
	return 1;
}

/* A caller's cof_key_fn and its context, for key_each_row. */
typedef struct {
	cof_key_fn fn;
	void *ctx;
} key_each;

/* cof_sql_row_fn: gives a KEY_COLS row to the caller's fn. */
static int key_each_row(void *ctx, const cof_sql_row *r, cof_err *err)
{
	key_each *e = ctx;
	cof_keyrow k;

	(void)err;
	key_row(r, &k);
	return e->fn(e->ctx, &k) ? 1 : 0;
}

int cof_meta_key_add(cof_meta *m, const cof_keyrow *k, cof_err *err)
{
	return cof_sql_write(m, NULL, "INSERT INTO keys(" KEY_COLS ")"
			     " VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,0,0)", "adding a key", err,
			     "sssssiiii", k->hash, k->id, k->org, k->agent, k->name,
			     (int64_t)k->admin, (int64_t)k->read_only, k->created_at,
			     k->expires_at) < 0 ? -1 : 0;
}

/* Under the organization's lock held to the commit, and the count a
 * statement after it (a snapshot taken once the lock is ours): two nodes
 * minting at once cannot both take the last place. 1 inserted, 0 not. */
int cof_meta_key_add_capped(cof_meta *m, const cof_keyrow *k, int64_t cap, cof_err *err)
{
	cof_sql_tx tx;
	int64_t n = 0;
	int rc;

	if (cof_sql_begin(m, COF_SQL_WRITE, &tx, err) < 0)
		return -1;
	rc = cof_sql_lock(&tx, LOCK_ORG_KEYS, k->org, err);
	if (!rc)
		rc = cof_sql_exec(&tx, &n, "INSERT INTO keys(" KEY_COLS ")"
				  " SELECT ?1,?2,?3,?4,?5,?6,?7,CAST(?8 AS bigint),?9,0,0"
				  " WHERE CAST(?10 AS bigint) <= 0 OR (SELECT count(*) FROM keys"
				  " WHERE org = ?3 AND revoked_at = 0 AND (expires_at = 0 OR"
				  " expires_at > CAST(?8 AS bigint))) < CAST(?10 AS bigint)",
				  "adding a key", err, "sssssiiiii", k->hash, k->id, k->org, k->agent,
				  k->name, (int64_t)k->admin, (int64_t)k->read_only, k->created_at,
				  k->expires_at, cap);
	if (cof_sql_end(&tx, rc, err) < 0)
		return -1;
	return n == 1;
}

/* Under a lock held to the commit, and the check a statement after it:
 * nodes starting together on an empty dataset make one admin key. */
int cof_meta_key_add_first_admin(cof_meta *m, const cof_keyrow *k, cof_err *err)
{
	cof_sql_tx tx;
	int64_t n = 0;
	int rc;

	if (cof_sql_begin(m, COF_SQL_WRITE, &tx, err) < 0)
		return -1;
	rc = cof_sql_lock(&tx, LOCK_FIRST_ADMIN, NULL, err);
	if (!rc)
		rc = cof_sql_exec(&tx, &n, "INSERT INTO keys(" KEY_COLS ")"
				  " SELECT ?1,?2,?3,?4,?5,?6,?7,?8,?9,0,0 WHERE NOT EXISTS"
				  " (SELECT 1 FROM keys WHERE admin = 1)", "adding the admin key",
				  err, "sssssiiii", k->hash, k->id, k->org, k->agent, k->name,
				  (int64_t)k->admin, (int64_t)k->read_only, k->created_at,
				  k->expires_at);
	if (cof_sql_end(&tx, rc, err) < 0)
		return -1;
	return n == 1;
}

/* Read on every request: a row kept by the event loop (the driver's row
 * cache) is used while nothing was committed since it was read. */
int cof_meta_key_find(cof_meta *m, const char *hash, cof_keyrow *out, cof_err *err)
{
	cof_sql_mark mk;
	int kept = cof_sql_mark_begin(m, &mk);
	int rc;

	if (kept && cof_sql_cached_key(&mk, hash, out))
		return 0;
	rc = cof_sql_read(m, "SELECT " KEY_COLS " FROM keys WHERE hash = ?1", "checking a key",
			  key_one, out, err, "s", hash);
	if (rc == 0)
		return cof_error(err, COF_EUNAUTHORIZED, "the API key is not valid");
	if (rc < 0)
		return -1;
	if (kept)
		cof_sql_keep_key(&mk, out);
	return 0;
}

int cof_meta_key_find_id(cof_meta *m, const char *id, cof_keyrow *out, cof_err *err)
{
	int rc = cof_sql_read(m, "SELECT " KEY_COLS " FROM keys WHERE id = ?1", "checking a key",
			      key_one, out, err, "s", id);

	if (rc == 0)
		return cof_error(err, COF_ENOTFOUND, "no key '%s'", id);
	return rc < 0 ? -1 : 0;
}

int cof_meta_key_list(cof_meta *m, const char *org, cof_key_fn fn, void *ctx, cof_err *err)
{
	key_each e = { fn, ctx };

	return cof_sql_read(m, "SELECT " KEY_COLS " FROM keys WHERE org = ?1 AND revoked_at = 0"
			    " ORDER BY created_at, id", "listing keys", key_each_row, &e, err,
			    "s", org) < 0 ? -1 : 0;
}

/* A NULL org (an admin's revoke) binds SQL NULL: any organization's key. */
int cof_meta_key_revoke(cof_meta *m, const char *org, const char *id, int admin, int64_t now,
		   cof_keyrow *out, cof_err *err)
{
	cof_sql_tx tx;
	int rc;

	if (cof_sql_begin(m, COF_SQL_WRITE | COF_SQL_ONE, &tx, err) < 0)
		return -1;
	rc = cof_sql_query(&tx, "UPDATE keys SET revoked_at = ?3 WHERE id = ?1 AND revoked_at = 0"
			   " AND (CAST(?2 AS text) IS NULL OR org = ?2) AND (?4 = 1 OR admin = 0)"
			   " RETURNING " KEY_COLS, "revoking a key", key_one, out, err, "ssii", id,
			   org, now, (int64_t)admin);
	if (rc == 0)
		rc = cof_error(err, COF_ENOTFOUND, "no key '%s'", id);
	return cof_sql_end(&tx, rc < 0 ? -1 : 0, err) < 0 ? -1 : 0;
}

int cof_meta_key_touch(cof_meta *m, const char *hash, int64_t now, cof_err *err)
{
	return cof_sql_write(m, NULL, "UPDATE keys SET last_used_at = ?1 WHERE hash = ?2",
			     "recording a key's use", err, "is", now, hash) < 0 ? -1 : 0;
}
