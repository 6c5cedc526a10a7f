/*
 * meta_sqlite_key.c — API keys on SQLite: adding, finding, listing, revoking
 * and recording their use. Keys are stored by the SHA-256 of the secret.
 */
#include <string.h>
#include "store/meta_sqlite.h"

#define KEY_COLS "hash, id, org, agent, name, admin, read_only, created_at," \
		 " expires_at, revoked_at, last_used_at"

/* Copies the KEY_COLS of the current row of `st` into *k. */
static void key_row(sqlite3_stmt *st, cof_keyrow *k)
{
	memset(k, 0, sizeof *k);
	cof_sqlite_col_copy(st, 0, k->hash, sizeof k->hash);
	cof_sqlite_col_copy(st, 1, k->id, sizeof k->id);
	cof_sqlite_col_copy(st, 2, k->org, sizeof k->org);
	cof_sqlite_col_copy(st, 3, k->agent, sizeof k->agent);
	cof_sqlite_col_copy(st, 4, k->name, sizeof k->name);
	k->admin = sqlite3_column_int(st, 5);
	k->read_only = sqlite3_column_int(st, 6);
	k->created_at = sqlite3_column_int64(st, 7);
	k->expires_at = sqlite3_column_int64(st, 8);
	k->revoked_at = sqlite3_column_int64(st, 9);
	k->last_used_at = sqlite3_column_int64(st, 10);
}

/* Inserts key `k`; with `first_admin`, only when the dataset has no admin key;
 * with cap > 0, only while k->org has fewer than cap live keys (the check and
 * the insert in the writer's transaction, BEGIN IMMEDIATE: one step for every
 * process on the file). 1 inserted, 0 not, -1 error. */
static int key_insert(cof_meta *m, const cof_keyrow *k, int first_admin, int64_t cap,
		      cof_err *err)
{
	conn *c = cof_sqlite_writer_begin(m, err);
	int64_t n = 0;
	int rc;

	if (!c)
		return -1;
	rc = cof_sqlite_run(c, &n, first_admin
			    ? "INSERT INTO keys(" KEY_COLS ") SELECT ?1,?2,?3,?4,?5,?6,?7,?8,?9,0,0"
			      " WHERE NOT EXISTS(SELECT 1 FROM keys WHERE admin = 1)"
			    : "INSERT INTO keys(" KEY_COLS ") SELECT ?1,?2,?3,?4,?5,?6,?7,?8,?9,0,0"
			      " WHERE ?10 <= 0 OR (SELECT count(*) FROM keys WHERE org = ?3 AND"
			      " revoked_at = 0 AND (expires_at = 0 OR expires_at > ?8)) < ?10",
			    "adding a key", err, "sssssiiiii", k->hash, k->id, k->org, k->agent,
			    k->name, (int64_t)k->admin, (int64_t)k->read_only, k->created_at,
			    k->expires_at, cap);
	if (cof_sqlite_writer_end(m, rc, err) < 0)
		return -1;
	return rc == 0 && n == 1;
}

static int sq_key_add(cof_meta *m, const cof_keyrow *k, cof_err *err)
{
	return key_insert(m, k, 0, 0, err) < 0 ? -1 : 0;
}

static int sq_key_add_capped(cof_meta *m, const cof_keyrow *k, int64_t cap, cof_err *err)
{
	return key_insert(m, k, 0, cap, err);
}

static int sq_key_add_first_admin(cof_meta *m, const cof_keyrow *k, cof_err *err)
{
	return key_insert(m, k, 1, 0, err);
}

/* cof_sqlite_row_fn: the KEY_COLS row into ctx (a cof_keyrow). */
static int key_one(void *ctx, sqlite3_stmt *st, cof_err *err)
{
	(void)err;
	key_row(st, ctx);
	return 1;
}

/* A caller's cof_key_fn and its context, for key_each_row. */
typedef struct {
	cof_key_fn fn;
	void *ctx;
} key_each;

/* cof_sqlite_row_fn: gives a KEY_COLS row to the caller's fn. */
static int key_each_row(void *ctx, sqlite3_stmt *st, cof_err *err)
{
	key_each *e = ctx;
	cof_keyrow k;

	(void)err;
	key_row(st, &k);
	return e->fn(e->ctx, &k) ? 1 : 0;
}

static int sq_key_find(cof_meta *m, const char *hash, cof_keyrow *out, cof_err *err)
{
	cof_sqlite_mark mk;
	int kept = cof_sqlite_cache_begin(m, &mk);
	int rc;

	if (kept && cof_sqlite_cached_key(&mk, hash, out))
		return 0;
	rc = cof_sqlite_read(m, "SELECT " KEY_COLS " FROM keys WHERE hash = ?",
			     "checking a key", key_one, out, err, "s", hash);
	if (rc == 0)
		return cof_error(err, COF_EUNAUTHORIZED, "the API key is not valid");
	if (rc < 0)
		return -1;
	if (kept)
		cof_sqlite_keep_key(&mk, out);
	return 0;
}

static int sq_key_find_id(cof_meta *m, const char *id, cof_keyrow *out, cof_err *err)
{
	int rc = cof_sqlite_read(m, "SELECT " KEY_COLS " FROM keys WHERE id = ?",
				 "checking a key", key_one, out, err, "s", id);

	if (rc == 0)
		return cof_error(err, COF_ENOTFOUND, "no key '%s'", id);
	return rc < 0 ? -1 : 0;
}

static int sq_key_list(cof_meta *m, const char *org, cof_key_fn fn, void *ctx, cof_err *err)
{
	key_each e = { fn, ctx };

	return cof_sqlite_read(m, "SELECT " KEY_COLS " FROM keys WHERE org = ? AND revoked_at = 0"
			       " ORDER BY created_at, id", "listing keys", key_each_row, &e, err,
			       "s", org) < 0 ? -1 : 0;
}

/* A NULL org (an admin's revoke) binds SQL NULL: any organization's key. */
static int sq_key_revoke(cof_meta *m, const char *org, const char *id, int admin,
			 int64_t now, cof_keyrow *out, cof_err *err)
{
	conn *c = cof_sqlite_writer_begin(m, err);
	int rc;

	if (!c)
		return -1;
	rc = cof_sqlite_rows(c, "UPDATE keys SET revoked_at = ?3 WHERE id = ?1 AND revoked_at = 0"
			     " AND (?2 IS NULL OR org = ?2) AND (?4 OR admin = 0) RETURNING "
			     KEY_COLS, "revoking a key", key_one, out, err, "ssii", id, org, now,
			     (int64_t)admin);
	if (rc == 0)
		rc = cof_error(err, COF_ENOTFOUND, "no key '%s'", id);
	return cof_sqlite_writer_end(m, rc < 0 ? -1 : 0, err);
}

static int sq_key_touch(cof_meta *m, const char *hash, int64_t now, cof_err *err)
{
	return cof_sqlite_write(m, "UPDATE keys SET last_used_at = ? WHERE hash = ?",
				"recording a key's use", err, "is", now, hash);
}

/* This file's members of the SQLite backend's table. */
void cof_sqlite_ops_key(cof_meta_ops *o)
{
	o->key_add = sq_key_add;
	o->key_add_capped = sq_key_add_capped;
	o->key_find_id = sq_key_find_id;
	o->key_find = sq_key_find;
	o->key_list = sq_key_list;
	o->key_revoke = sq_key_revoke;
	o->key_touch = sq_key_touch;
	o->key_add_first_admin = sq_key_add_first_admin;
}
