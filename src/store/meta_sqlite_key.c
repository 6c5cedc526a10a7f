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

/* Inserts key `k`; with `first_admin`, only when the dataset has no admin key
 * (the check and the insert in the writer's transaction, BEGIN IMMEDIATE: one
 * step for every process on the file). 1 inserted, 0 not, -1 error. */
static int key_insert(cof_meta *m, const cof_keyrow *k, int first_admin, cof_err *err)
{
	conn *c = cof_sqlite_writer_begin(m, err);
	sqlite3_stmt *st;
	int rc = -1, added = 0;

	if (!c)
		return -1;
	st = cof_sqlite_q(c, first_admin
			  ? "INSERT INTO keys(" KEY_COLS ") SELECT ?,?,?,?,?,?,?,?,?,0,0"
			    " WHERE NOT EXISTS(SELECT 1 FROM keys WHERE admin = 1)"
			  : "INSERT INTO keys(" KEY_COLS ") VALUES(?,?,?,?,?,?,?,?,?,0,0)", err);
	if (st) {
		cof_sqlite_bind_text(st, 1, k->hash);
		cof_sqlite_bind_text(st, 2, k->id);
		cof_sqlite_bind_text(st, 3, k->org);
		cof_sqlite_bind_text(st, 4, k->agent);
		cof_sqlite_bind_text(st, 5, k->name);
		sqlite3_bind_int(st, 6, k->admin);
		sqlite3_bind_int(st, 7, k->read_only);
		sqlite3_bind_int64(st, 8, k->created_at);
		sqlite3_bind_int64(st, 9, k->expires_at);
		rc = sqlite3_step(st) == SQLITE_DONE ? 0
						     : cof_sqlite_db_error(err, c->db, "adding a key");
		added = rc == 0 && sqlite3_changes(c->db) == 1;
	}
	if (cof_sqlite_writer_end(m, rc, err) < 0)
		return -1;
	return added;
}

static int sq_key_add(cof_meta *m, const cof_keyrow *k, cof_err *err)
{
	return key_insert(m, k, 0, err) < 0 ? -1 : 0;
}

static int sq_key_add_first_admin(cof_meta *m, const cof_keyrow *k, cof_err *err)
{
	return key_insert(m, k, 1, err);
}

static int sq_key_find(cof_meta *m, const char *hash, cof_keyrow *out, cof_err *err)
{
	cof_sqlite_mark mk;
	int kept = cof_sqlite_cache_begin(m, &mk);
	conn *c;
	sqlite3_stmt *st;
	int rc = -1;

	if (kept && cof_sqlite_cached_key(&mk, hash, out))
		return 0;
	if (!(c = cof_sqlite_reader_get(m, err)))
		return -1;
	st = cof_sqlite_q(c, "SELECT " KEY_COLS " FROM keys WHERE hash = ?", err);
	if (st) {
		cof_sqlite_bind_text(st, 1, hash);
		int r = sqlite3_step(st);
		if (r == SQLITE_ROW) {
			key_row(st, out);
			rc = 0;
		} else if (r == SQLITE_DONE) {
			rc = cof_error(err, COF_EUNAUTHORIZED, "the API key is not valid");
		} else {
			rc = cof_sqlite_db_error(err, c->db, "checking a key");
		}
		sqlite3_reset(st);
	}
	cof_sqlite_reader_put(m, c);
	if (kept && rc == 0)
		cof_sqlite_keep_key(&mk, out);
	return rc;
}

static int sq_key_list(cof_meta *m, const char *org, cof_key_fn fn, void *ctx, cof_err *err)
{
	conn *c = cof_sqlite_reader_get(m, err);
	sqlite3_stmt *st;
	int rc = -1, r;
	cof_keyrow k;

	if (!c)
		return -1;
	st = cof_sqlite_q(c, "SELECT " KEY_COLS " FROM keys WHERE org = ? AND revoked_at = 0"
			  " ORDER BY created_at, id", err);
	if (st) {
		cof_sqlite_bind_text(st, 1, org);
		while ((r = sqlite3_step(st)) == SQLITE_ROW) {
			key_row(st, &k);
			if (fn(ctx, &k))
				break;
		}
		rc = (r == SQLITE_ROW || r == SQLITE_DONE)
			     ? 0 : cof_sqlite_db_error(err, c->db, "listing keys");
		sqlite3_reset(st);
	}
	cof_sqlite_reader_put(m, c);
	return rc;
}

static int sq_key_revoke(cof_meta *m, const char *org, const char *id, int admin,
			 int64_t now, cof_keyrow *out, cof_err *err)
{
	conn *c = cof_sqlite_writer_begin(m, err);
	sqlite3_stmt *st;
	int rc = -1;

	if (!c)
		return -1;
	st = cof_sqlite_q(c, "UPDATE keys SET revoked_at = ?3 WHERE id = ?1 AND revoked_at = 0"
			  " AND (?2 IS NULL OR org = ?2) AND (?4 OR admin = 0) RETURNING " KEY_COLS,
			  err);
	if (st) {
		cof_sqlite_bind_text(st, 1, id);
		if (org)
			cof_sqlite_bind_text(st, 2, org);
		else
			sqlite3_bind_null(st, 2);
		sqlite3_bind_int64(st, 3, now);
		sqlite3_bind_int(st, 4, admin);
		int r = sqlite3_step(st);
		if (r == SQLITE_ROW) {
			key_row(st, out);
			rc = 0;
		} else if (r == SQLITE_DONE) {
			rc = cof_error(err, COF_ENOTFOUND, "no key '%s'", id);
		} else {
			rc = cof_sqlite_db_error(err, c->db, "revoking a key");
		}
		sqlite3_reset(st);
	}
	return cof_sqlite_writer_end(m, rc, err);
}

static int sq_key_touch(cof_meta *m, const char *hash, int64_t now, cof_err *err)
{
	conn *c = cof_sqlite_writer_begin(m, err);
	sqlite3_stmt *st;
	int rc = -1;

	if (!c)
		return -1;
	st = cof_sqlite_q(c, "UPDATE keys SET last_used_at = ? WHERE hash = ?", err);
	if (st) {
		sqlite3_bind_int64(st, 1, now);
		cof_sqlite_bind_text(st, 2, hash);
		rc = sqlite3_step(st) == SQLITE_DONE
			     ? 0 : cof_sqlite_db_error(err, c->db, "recording a key's use");
	}
	return cof_sqlite_writer_end(m, rc, err);
}

/* This file's members of the SQLite backend's table. */
void cof_sqlite_ops_key(cof_meta_ops *o)
{
	o->key_add = sq_key_add;
	o->key_find = sq_key_find;
	o->key_list = sq_key_list;
	o->key_revoke = sq_key_revoke;
	o->key_touch = sq_key_touch;
	o->key_add_first_admin = sq_key_add_first_admin;
}
