/*
 * test_meta_conformance.c — the contract of meta.h (every member of
 * cof_meta_ops), checked on whichever backend $COFFER_TEST_META_URL names
 * (default: a fresh SQLite file in a temp dir). Everything it makes is under
 * an organization, ids and content hashes of its own, so it can run again and
 * again on one shared PostgreSQL database.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "store/meta.h"
#include "volume/volume.h"
#include "meta_fx.h"

static cof_meta *m;
static meta_fx fx;
static char org[48], org2[48];

/* A sha256-looking name for `content`, unique to this run (the org's random
 * part, then a hash of the content). */
static void sha_for(char out[65], const char *content)
{
	uint32_t h = 2166136261u;
	int n = 0;

	for (const char *p = content; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	for (const char *p = org + 4; *p && n < 40; p++)
		n += snprintf(out + n, 65 - (size_t)n, "%02x", (unsigned char)*p);
	while (n < 56)
		out[n++] = '0';
	snprintf(out + 56, 9, "%08x", h);
}

static int setup(void **state)
{
	(void)state;
	cof_id_new("org_", org, sizeof org);
	cof_id_new("org_", org2, sizeof org2);
	if (meta_fx_open(&fx, &m))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	meta_fx_close(&fx, m);
	return 0;
}

/* A new volume of `o` named `name`; returns its vno. */
static int64_t vol_add(const char *o, const char *name, cof_volrow *v)
{
	cof_err err = {0};

	memset(v, 0, sizeof *v);
	cof_id_new("vol_", v->id, sizeof v->id);
	snprintf(v->org, sizeof v->org, "%s", o);
	snprintf(v->name, sizeof v->name, "%s", name);
	v->capacity = 1 << 20;
	v->created_at = cof_now();
	assert_int_equal(cof_meta_volume_add(m, v, &err), 0);
	assert_true(v->vno > 0);
	return v->vno;
}

/* ---- one change: a list of writes ("path=content") and removes ("-path") */
struct edits {
	const char **ops;
	int fail;                /* fn fails after the edits */
	cof_code code;           /* what the last op failed with */
};

static int apply(cof_txn *tx, void *ctx, cof_err *err)
{
	struct edits *e = ctx;

	for (int i = 0; e->ops[i]; i++) {
		const char *op = e->ops[i];
		int rc;
		if (op[0] == '-') {
			rc = cof_txn_remove(tx, op + 1, err);
		} else {
			char path[256], sha[65];
			const char *eq = strchr(op, '=');
			snprintf(path, sizeof path, "%.*s", (int)(eq - op), op);
			sha_for(sha, eq + 1);
			rc = cof_txn_write(tx, path, sha, (int64_t)strlen(eq + 1), "text/plain",
					   eq + 1, err);
		}
		if (rc) {
			e->code = err->code;
			return rc;
		}
	}
	return e->fail ? cof_error(err, COF_ECONFLICT, "asked to fail") : 0;
}

static int64_t change(int64_t vno, const char **ops, int expect_rc)
{
	struct edits e = {.ops = ops};
	cof_err err = {0};
	int64_t seq = -7;

	assert_int_equal(cof_meta_change(m, vno, apply, &e, &seq, &err), expect_rc);
	return seq;
}

static int count_fn(void *ctx, const cof_entry *e)
{
	cof_buf *b = ctx;

	cof_buf_addf(b, "%s,", e->path);
	return 0;
}

/* The paths listed under `prefix` after `after` at `at`, comma-separated. */
static char *listing(int64_t vno, int64_t at, const char *prefix, const char *after)
{
	static char out[4096];
	cof_buf b = COF_BUF_INIT;
	cof_err err = {0};

	assert_int_equal(cof_meta_list(m, vno, at, prefix, after, count_fn, &b, &err), 0);
	snprintf(out, sizeof out, "%s", b.data ? b.data : "");
	cof_buf_release(&b);
	return out;
}

/* Counts the keys listed (ctx: an int) and remembers the last id seen. */
static char listed_id[24];
static int key_count_fn(void *ctx, const cof_keyrow *k)
{
	(*(int *)ctx)++;
	snprintf(listed_id, sizeof listed_id, "%s", k->id);
	return 0;
}

static void test_keys_and_idempotency(void **state)
{
	cof_keyrow who = {0}, got = {0};
	cof_err err = {0};
	char hash[65], *value = NULL;
	int n = 0;

	(void)state;
	sha_for(hash, "a key");
	snprintf(who.hash, sizeof who.hash, "%s", hash);
	snprintf(who.id, sizeof who.id, "k_%.12s%.8s", hash, hash + 56);
	snprintf(who.org, sizeof who.org, "%s", org);
	snprintf(who.agent, sizeof who.agent, "bot");
	snprintf(who.name, sizeof who.name, "ci deploy");
	who.admin = 1;
	who.read_only = 1;
	who.created_at = 1000;
	who.expires_at = 5000;
	cof_err_clear(&err);
	/* the dataset's first admin key: added on an empty dataset, and never a
	 * second one (a later node's) */
	char first[65], later[65];
	sha_for(first, "the first admin key");
	sha_for(later, "a later node's key");
	cof_keyrow fk = who;   /* of another org: the listings below count `org`'s */
	snprintf(fk.org, sizeof fk.org, "org_first_admin");
	snprintf(fk.hash, sizeof fk.hash, "%s", first);
	snprintf(fk.id, sizeof fk.id, "k_first");   /* sha_for's hashes share a prefix */
	assert_int_equal(cof_meta_key_add_first_admin(m, &fk, &err), 1);
	assert_int_equal(cof_meta_key_find(m, first, &got, &err), 0);
	assert_int_equal(got.admin, 1);
	snprintf(fk.hash, sizeof fk.hash, "%s", later);
	snprintf(fk.id, sizeof fk.id, "k_later");
	assert_int_equal(cof_meta_key_add_first_admin(m, &fk, &err), 0);
	assert_int_equal(cof_meta_key_find(m, later, &got, &err), -1);
	cof_err_clear(&err);
	assert_int_equal(cof_meta_key_find(m, hash, &got, &err), -1);
	assert_int_equal(err.code, COF_EUNAUTHORIZED);
	cof_err_clear(&err);
	assert_int_equal(cof_meta_key_add(m, &who, &err), 0);
	assert_int_equal(cof_meta_key_find(m, hash, &got, &err), 0);
	assert_string_equal(got.org, org);
	assert_string_equal(got.agent, "bot");
	assert_string_equal(got.name, "ci deploy");
	assert_string_equal(got.id, who.id);
	assert_int_equal(got.admin, 1);
	assert_int_equal(got.read_only, 1);
	assert_int_equal(got.expires_at, 5000);
	assert_int_equal(got.revoked_at, 0);
	assert_int_equal(got.last_used_at, 0);
	assert_int_equal(cof_meta_key_touch(m, hash, 2000, &err), 0);
	assert_int_equal(cof_meta_key_find(m, hash, &got, &err), 0);
	assert_int_equal(got.last_used_at, 2000);
	assert_int_equal(cof_meta_key_list(m, org, key_count_fn, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(listed_id, who.id);
	/* another org's id is not found; an admin key only when asked */
	assert_int_equal(cof_meta_key_revoke(m, org2, who.id, 1, 3000, &got, &err), -1);
	assert_int_equal(err.code, COF_ENOTFOUND);
	cof_err_clear(&err);
	assert_int_equal(cof_meta_key_revoke(m, org, who.id, 0, 3000, &got, &err), -1);
	cof_err_clear(&err);
	assert_int_equal(cof_meta_key_revoke(m, NULL, who.id, 1, 3000, &got, &err), 0);
	assert_int_equal(got.revoked_at, 3000);
	assert_int_equal(cof_meta_key_find(m, hash, &got, &err), 0);
	assert_int_equal(got.revoked_at, 3000);
	n = 0;
	assert_int_equal(cof_meta_key_list(m, org, key_count_fn, &n, &err), 0);
	assert_int_equal(n, 0);
	/* revoking twice: not found */
	assert_int_equal(cof_meta_key_revoke(m, org, who.id, 1, 3001, &got, &err), -1);
	assert_int_equal(err.code, COF_ENOTFOUND);
	cof_err_clear(&err);

	assert_int_equal(cof_meta_idem_get(m, org, "k1", 3600, &value, &err), 0);
	assert_int_equal(cof_meta_idem_put(m, org, "k1", "{\"a\":1}", &err), 0);
	assert_int_equal(cof_meta_idem_get(m, org, "k1", 3600, &value, &err), 1);
	assert_string_equal(value, "{\"a\":1}");
	free(value);
	/* older than the ttl: not there */
	assert_int_equal(cof_meta_idem_get(m, org, "k1", -5, &value, &err), 0);
	assert_int_equal(cof_meta_idem_get(m, org2, "k1", 3600, &value, &err), 0);
}

static int vol_fn(void *ctx, const cof_volrow *v)
{
	cof_buf_addf(ctx, "%s,", v->name);
	return 0;
}

static char *vol_names(const char *prefix, const char *after_name, const char *after_id,
		       int64_t limit)
{
	static char out[4096];
	cof_buf b = COF_BUF_INIT;
	cof_err err = {0};

	assert_int_equal(cof_meta_volume_list(m, org, prefix, after_name, after_id, limit,
					      vol_fn, &b, &err), 0);
	snprintf(out, sizeof out, "%s", b.data ? b.data : "");
	cof_buf_release(&b);
	return out;
}

static void test_volumes(void **state)
{
	cof_volrow v, a, b, c, got, h;
	cof_err err = {0};

	(void)state;
	vol_add(org, "beta", &b);
	vol_add(org, "alpha", &a);
	vol_add(org, "al\xc3\xa9", &c);          /* "alé" */
	vol_add(org, "al\xf4\x8f\xbf\xbf", &v);  /* "al" U+10FFFF */
	vol_add(org2, "alpha", &got);
	vol_add(org, "hidden", &h);
	{
		cof_volrow z;
		memset(&z, 0, sizeof z);
		cof_id_new("vol_", z.id, sizeof z.id);
		snprintf(z.org, sizeof z.org, "%s", org);
		snprintf(z.name, sizeof z.name, "zhidden");
		z.hidden = 1;
		assert_int_equal(cof_meta_volume_add(m, &z, &err), 0);
		cof_err_clear(&err);
		assert_int_equal(cof_meta_volume_get(m, org, z.id, &got, &err), -1);
		assert_int_equal(err.code, COF_ENOTFOUND);
	}
	assert_int_equal(cof_meta_volume_get(m, org, a.id, &got, &err), 0);
	assert_int_equal(got.vno, a.vno);
	assert_string_equal(got.name, "alpha");
	assert_int_equal(got.capacity, 1 << 20);
	cof_err_clear(&err);
	assert_int_equal(cof_meta_volume_get(m, org2, a.id, &got, &err), -1);
	assert_int_equal(err.code, COF_ENOTFOUND);
	assert_non_null(strstr(err.msg, a.id));
	cof_err_clear(&err);
	assert_int_equal(cof_meta_volume_get(m, org, "vol_nosuch", &got, &err), -1);
	assert_int_equal(err.code, COF_ENOTFOUND);

	/* bytewise: "alpha" < "al\xc3..." < "al\xf4..." */
	assert_string_equal(vol_names("", "", "", 100),
			    "alpha,al\xc3\xa9,al\xf4\x8f\xbf\xbf,beta,hidden,");
	assert_string_equal(vol_names("al", "", "", 100), "alpha,al\xc3\xa9,al\xf4\x8f\xbf\xbf,");
	assert_string_equal(vol_names("al\xf4\x8f\xbf\xbf", "", "", 100), "al\xf4\x8f\xbf\xbf,");
	assert_string_equal(vol_names("al\xc3\xa9", "", "", 100), "al\xc3\xa9,");
	assert_string_equal(vol_names("alp", "", "", 100), "alpha,");
	assert_string_equal(vol_names("b", "", "", 100), "beta,");
	assert_string_equal(vol_names("c", "", "", 100), "");
	assert_string_equal(vol_names("", "", "", 2), "alpha,al\xc3\xa9,");
	assert_string_equal(vol_names("", "alpha", a.id, 100),
			    "al\xc3\xa9,al\xf4\x8f\xbf\xbf,beta,hidden,");
	assert_string_equal(vol_names("", "alpha", "", 100),
			    "alpha,al\xc3\xa9,al\xf4\x8f\xbf\xbf,beta,hidden,");

	assert_int_equal(cof_meta_volume_delete(m, h.vno, &err), 0);
	cof_err_clear(&err);
	assert_int_equal(cof_meta_volume_get(m, org, h.id, &got, &err), -1);
	assert_int_equal(err.code, COF_ENOTFOUND);
	assert_string_equal(vol_names("h", "", "", 100), "");
}

static void test_changes_and_reads(void **state)
{
	cof_volrow v, now;
	cof_entry e;
	cof_err err = {0};
	unsigned char *data = NULL;
	int64_t s1, s2;

	(void)state;
	vol_add(org, "files", &v);
	s1 = change(v.vno, (const char *[]){"a/x=one", "a/y=two2", "b=three", NULL}, 0);
	assert_int_equal(s1, 1);
	s2 = change(v.vno, (const char *[]){"a/x=uno!", "-b", NULL}, 0);
	assert_int_equal(s2, 2);
	/* no edit: nothing stored, the seq unchanged */
	assert_int_equal(change(v.vno, (const char *[]){NULL}, 0), 2);
	/* a failing change stores nothing */
	{
		struct edits ed = {.ops = (const char *[]){"c=lost", NULL}, .fail = 1};
		int64_t seq = 0;
		cof_err_clear(&err);
		assert_int_equal(cof_meta_change(m, v.vno, apply, &ed, &seq, &err), -1);
		assert_int_equal(err.code, COF_ECONFLICT);
		cof_err_clear(&err);
	}
	/* removing an absent path: 404, nothing stored */
	{
		struct edits ed = {.ops = (const char *[]){"c=lost", "-nope", NULL}};
		int64_t seq = 0;
		cof_err_clear(&err);
		assert_int_equal(cof_meta_change(m, v.vno, apply, &ed, &seq, &err), -1);
		assert_int_equal(ed.code, COF_ENOTFOUND);
		cof_err_clear(&err);
	}
	assert_int_equal(cof_meta_entry_get(m, v.vno, "c", -1, &e, &err), 0);
	assert_int_equal(cof_meta_volume_get(m, org, v.id, &now, &err), 0);
	assert_int_equal(now.seq, 2);
	assert_int_equal(now.files, 2);
	assert_int_equal(now.bytes, 4 + 4);

	assert_int_equal(cof_meta_entry_get(m, v.vno, "a/x", -1, &e, &err), 1);
	assert_int_equal(e.size, 4);
	assert_string_equal(e.ctype, "text/plain");
	assert_int_equal(cof_meta_entry_get(m, v.vno, "a/x", 1, &e, &err), 1);
	assert_int_equal(e.size, 3);
	assert_int_equal(cof_meta_entry_get(m, v.vno, "b", -1, &e, &err), 0);
	assert_int_equal(cof_meta_entry_get(m, v.vno, "b", 1, &e, &err), 1);
	assert_int_equal(cof_meta_entry_get(m, v.vno, "a/x", 0, &e, &err), 0);
	assert_int_equal(cof_meta_entry_read(m, v.vno, "a/x", -1, &e, &data, &err), 1);
	assert_non_null(data);
	assert_string_equal((char *)data, "uno!");
	free(data);
	data = NULL;
	assert_int_equal(cof_meta_entry_read(m, v.vno, "a/x", 1, &e, &data, &err), 1);
	assert_string_equal((char *)data, "one");
	free(data);

	assert_string_equal(listing(v.vno, -1, "", NULL), "a/x,a/y,");
	assert_string_equal(listing(v.vno, 1, "", NULL), "a/x,a/y,b,");
	assert_string_equal(listing(v.vno, 1, "a/", NULL), "a/x,a/y,");
	assert_string_equal(listing(v.vno, 1, "a/", "a/x"), "a/y,");
	assert_string_equal(listing(v.vno, 1, "b", NULL), "b,");
	assert_string_equal(listing(v.vno, -1, "c", NULL), "");
}

/* Prefix ranges hold at the edges of UTF-8 (the successor of the prefix's
 * last code point, and a prefix ending in U+10FFFF). */
static void test_list_prefix_edges(void **state)
{
	cof_volrow v;

	(void)state;
	vol_add(org, "edges", &v);
	change(v.vno, (const char *[]){"a=1", "a0=2", "a/b=3", "a\x7f=4", "b=5",
				       "\xc3\xa9=6", "\xc3\xaaz=7", "\xed\x9f\xbf=8", "\xee\x80\x80=9",
				       "\xf4\x8f\xbf\xbf=10", "\xf4\x8f\xbf\xbf" "x=11",
				       "\xf4\x8f\xbf\xbf\xf4\x8f\xbf\xbf=12", NULL}, 0);
	assert_string_equal(listing(v.vno, -1, "a", NULL), "a,a/b,a0,a\x7f,");
	assert_string_equal(listing(v.vno, -1, "a/", NULL), "a/b,");
	assert_string_equal(listing(v.vno, -1, "\xc3\xa9", NULL), "\xc3\xa9,");
	assert_string_equal(listing(v.vno, -1, "\xed\x9f\xbf", NULL), "\xed\x9f\xbf,");
	assert_string_equal(listing(v.vno, -1, "\xf4\x8f\xbf\xbf", NULL),
			    "\xf4\x8f\xbf\xbf,\xf4\x8f\xbf\xbf" "x,\xf4\x8f\xbf\xbf\xf4\x8f\xbf\xbf,");
	assert_string_equal(listing(v.vno, -1, "\xf4\x8f\xbf\xbf\xf4\x8f\xbf\xbf", NULL),
			    "\xf4\x8f\xbf\xbf\xf4\x8f\xbf\xbf,");
	assert_string_equal(listing(v.vno, -1, "", "b"),
			    "\xc3\xa9,\xc3\xaaz,\xed\x9f\xbf,\xee\x80\x80,\xf4\x8f\xbf\xbf,"
			    "\xf4\x8f\xbf\xbf" "x,\xf4\x8f\xbf\xbf\xf4\x8f\xbf\xbf,");
}

static int change_fn(void *ctx, const cof_change_row *c)
{
	cof_buf_addf(ctx, "%lld%s%s,", (long long)c->seq, c->removed ? "-" : "+", c->path);
	return 0;
}

static void test_changes_feed(void **state)
{
	cof_volrow v;
	cof_buf b = COF_BUF_INIT;
	cof_err err = {0};

	(void)state;
	vol_add(org, "feed", &v);
	change(v.vno, (const char *[]){"d/1=a", "e=b", NULL}, 0);
	change(v.vno, (const char *[]){"-d/1", "d/2=c", NULL}, 0);
	change(v.vno, (const char *[]){"e=bb", NULL}, 0);
	assert_int_equal(cof_meta_changes(m, v.vno, 0, "", 100, change_fn, &b, &err), 0);
	assert_string_equal(b.data, "1+d/1,1+e,2-d/1,2+d/2,3+e,");
	cof_buf_reset(&b);
	assert_int_equal(cof_meta_changes(m, v.vno, 1, "d/", 100, change_fn, &b, &err), 0);
	assert_string_equal(b.data, "2-d/1,2+d/2,");
	cof_buf_reset(&b);
	assert_int_equal(cof_meta_changes(m, v.vno, 0, "", 2, change_fn, &b, &err), 0);
	assert_string_equal(b.data, "1+d/1,1+e,");
	cof_buf_release(&b);
}

/* The oldest seq read exactly (?seq=): the last change made before the cut,
 * over the fork chain, a parent level only up to the seq its child forked at. */
static void test_history_kept(void **state)
{
	cof_volrow v, f;
	cof_err err = {0};
	int64_t oldest = -1, future = cof_now() + 3600;

	(void)state;
	vol_add(org, "kept", &v);
	assert_int_equal(cof_meta_history_kept(m, v.vno, future, &oldest, &err), 0);
	assert_int_equal(oldest, 0); /* no change yet */
	change(v.vno, (const char *[]){"a=1", NULL}, 0);
	change(v.vno, (const char *[]){"a=22", NULL}, 0);
	change(v.vno, (const char *[]){"b=3", NULL}, 0);
	assert_int_equal(cof_meta_history_kept(m, v.vno, 0, &oldest, &err), 0);
	assert_int_equal(oldest, 0); /* nothing older than the cut: every seq */
	assert_int_equal(cof_meta_history_kept(m, v.vno, future, &oldest, &err), 0);
	assert_int_equal(oldest, 3); /* every change may have lost its closed rows */
	memset(&f, 0, sizeof f);
	cof_id_new("vol_", f.id, sizeof f.id);
	snprintf(f.org, sizeof f.org, "%s", org);
	snprintf(f.name, sizeof f.name, "kept-fork");
	f.seq = 2;
	f.capacity = 1 << 20;
	f.created_at = cof_now();
	assert_int_equal(cof_meta_volume_fork(m, &f, v.vno, 2, &err), 0);
	assert_int_equal(cof_meta_history_kept(m, f.vno, 0, &oldest, &err), 0);
	assert_int_equal(oldest, 0);
	/* the parent's seq 3 came after the fork seq 2: not the fork's */
	assert_int_equal(cof_meta_history_kept(m, f.vno, future, &oldest, &err), 0);
	assert_int_equal(oldest, 2);
}

/* What a txn sees: its own writes, and the volume as it will be. */
static int txn_probe(cof_txn *tx, void *ctx, cof_err *err)
{
	cof_entry e;
	cof_buf b = COF_BUF_INIT;
	cof_volrow *v = cof_txn_volume(tx);
	char sha[65];

	assert_int_equal(v->seq, 2);
	assert_int_equal(v->files, 1);
	sha_for(sha, "hi");
	assert_int_equal(cof_txn_get(tx, "p/one", &e, err), 1);
	assert_int_equal(cof_txn_write(tx, "p/two", sha, 2, "text/plain", "hi", err), 0);
	assert_int_equal(cof_txn_get(tx, "p/two", &e, err), 1);
	assert_int_equal(e.size, 2);
	assert_int_equal(cof_txn_volume(tx)->files, 2);
	assert_int_equal(cof_txn_list(tx, "p/", count_fn, &b, err), 0);
	assert_string_equal(b.data, "p/one,p/two,");
	cof_buf_release(&b);
	assert_int_equal(cof_txn_remove(tx, "p/one", err), 0);
	assert_int_equal(cof_txn_get(tx, "p/one", &e, err), 0);
	*(int *)ctx = 1;
	return 0;
}

static void test_txn_view(void **state)
{
	cof_volrow v, got;
	cof_err err = {0};
	int64_t seq;
	int ran = 0;

	(void)state;
	vol_add(org, "txn", &v);
	change(v.vno, (const char *[]){"p/one=1", NULL}, 0);
	assert_int_equal(cof_meta_change(m, v.vno, txn_probe, &ran, &seq, &err), 0);
	assert_int_equal(ran, 1);
	assert_int_equal(seq, 2);
	assert_int_equal(cof_meta_volume_get(m, org, v.id, &got, &err), 0);
	assert_int_equal(got.files, 1);
	assert_string_equal(listing(v.vno, -1, "", NULL), "p/two,");
	/* a change to a volume that is gone: 404 */
	assert_int_equal(cof_meta_volume_delete(m, v.vno, &err), 0);
	cof_err_clear(&err);
	assert_int_equal(cof_meta_change(m, v.vno, txn_probe, &ran, &seq, &err), -1);
	assert_int_equal(err.code, COF_ENOTFOUND);
}

static int snap_fn(void *ctx, const cof_snaprow *s)
{
	cof_buf_addf(ctx, "%s:%d,", s->labels, s->pinned);
	return 0;
}

static void snap_new(cof_snaprow *s, const cof_volrow *v, int64_t seq, int pinned,
		     const char *label)
{
	memset(s, 0, sizeof *s);
	cof_id_new("snap_", s->id, sizeof s->id);
	s->vno = s->src_vno = v->vno;
	s->seq = seq;
	s->pinned = pinned;
	s->created_at = cof_now();
	snprintf(s->labels, sizeof s->labels, "{\"l\":\"%s\"}", label);
}

/* cof_snaptx_fn: adds the snapshot ctx, then fails. */
static int insert_then_fail(cof_snaptx *tx, void *ctx, cof_err *err)
{
	if (cof_meta_snapshot_insert(tx, ctx, err))
		return -1;
	return cof_error(err, COF_ECONFLICT, "refused after the insert");
}

static void test_snapshots_and_fork(void **state)
{
	cof_volrow v, f, got;
	cof_snaprow s1, s2, s3, p1, p2, out;
	cof_buf b = COF_BUF_INIT;
	cof_err err = {0};
	char dropped[48];

	(void)state;
	vol_add(org, "snaps", &v);
	change(v.vno, (const char *[]){"k=1", NULL}, 0);
	change(v.vno, (const char *[]){"k=22", "l=3", NULL}, 0);
	snap_new(&s1, &v, 1, 0, "one");
	snap_new(&s2, &v, 2, 0, "two");
	snap_new(&s3, &v, 2, 0, "three");
	assert_int_equal(cof_snapshot_add_row(m, &s1, 2, 1, dropped, &err), 0);
	assert_string_equal(dropped, "");
	assert_int_equal(cof_snapshot_add_row(m, &s2, 2, 1, dropped, &err), 0);
	assert_int_equal(cof_snapshot_add_row(m, &s3, 2, 1, dropped, &err), 0);
	assert_string_equal(dropped, s1.id);
	snap_new(&p1, &v, 1, 1, "p1");
	p1.files = p1.bytes = 1;   /* the volume's at seq 1 (k=1): a fork from seq 1 takes them */
	snap_new(&p2, &v, 1, 1, "p2");
	assert_int_equal(cof_snapshot_add_row(m, &p1, 2, 1, dropped, &err), 0);
	cof_err_clear(&err);
	assert_int_equal(cof_snapshot_add_row(m, &p2, 2, 1, dropped, &err), -1);
	assert_int_equal(err.code, COF_ECONFLICT);
	assert_int_equal(cof_meta_snapshot_list(m, v.vno, snap_fn, &b, &err), 0);
	assert_string_equal(b.data, "{\"l\":\"two\"}:0,{\"l\":\"three\"}:0,{\"l\":\"p1\"}:1,");
	cof_buf_release(&b);
	cof_err_clear(&err);
	assert_int_equal(cof_meta_snapshot_get(m, v.vno, s1.id, &out, &err), -1);
	assert_int_equal(err.code, COF_ENOTFOUND);
	assert_int_equal(cof_meta_snapshot_get(m, v.vno, s2.id, &out, &err), 0);
	assert_int_equal(out.seq, 2);
	assert_int_equal(out.src_vno, v.vno);
	/* pinning a second one past max_pinned: 409; labels alone change */
	cof_err_clear(&err);
	assert_int_equal(cof_snapshot_set_row(m, v.vno, s2.id, 1, NULL, 1, &err), -1);
	assert_int_equal(err.code, COF_ECONFLICT);
	assert_int_equal(cof_snapshot_set_row(m, v.vno, s2.id, -1, "{\"l\":\"2\"}", 1, &err), 0);
	assert_int_equal(cof_snapshot_set_row(m, v.vno, p1.id, 0, NULL, 1, &err), 0);
	assert_int_equal(cof_snapshot_set_row(m, v.vno, s2.id, 1, NULL, 1, &err), 0);
	assert_int_equal(cof_meta_snapshot_get(m, v.vno, s2.id, &out, &err), 0);
	assert_string_equal(out.labels, "{\"l\":\"2\"}");
	assert_int_equal(out.pinned, 1);
	assert_int_equal(cof_meta_snapshot_delete(m, v.vno, s3.id, &err), 0);
	cof_err_clear(&err);
	assert_int_equal(cof_meta_snapshot_get(m, v.vno, s3.id, &out, &err), -1);
	assert_int_equal(err.code, COF_ENOTFOUND);
	/* a snapshot change on a volume that is not there: 404; one whose fn
	 * fails stores nothing of what it did */
	cof_err_clear(&err);
	assert_int_equal(cof_meta_snapshot_change(m, v.vno + 1000000, insert_then_fail, &s3,
						  &err), -1);
	assert_int_equal(err.code, COF_ENOTFOUND);
	cof_err_clear(&err);
	assert_int_equal(cof_meta_snapshot_change(m, v.vno, insert_then_fail, &s3, &err), -1);
	assert_int_equal(err.code, COF_ECONFLICT);
	cof_err_clear(&err);
	assert_int_equal(cof_meta_snapshot_get(m, v.vno, s3.id, &out, &err), -1);
	assert_int_equal(err.code, COF_ENOTFOUND);

	/* a fork has the rows live at its seq, and its own history from there */
	memset(&f, 0, sizeof f);
	cof_id_new("vol_", f.id, sizeof f.id);
	snprintf(f.org, sizeof f.org, "%s", org);
	snprintf(f.name, sizeof f.name, "fork");
	f.seq = 1;
	f.capacity = 1 << 20;
	assert_int_equal(cof_meta_volume_fork(m, &f, v.vno, 1, &err), 0);
	assert_true(f.vno > 0 && f.vno != v.vno);
	assert_string_equal(listing(f.vno, -1, "", NULL), "k,");
	assert_int_equal(cof_meta_volume_get(m, org, f.id, &got, &err), 0);
	assert_int_equal(got.seq, 1);
	assert_int_equal(got.files, 1);
	assert_int_equal(got.bytes, 1);
	assert_int_equal(change(f.vno, (const char *[]){"m=x", NULL}, 0), 2);
	assert_string_equal(listing(f.vno, -1, "", NULL), "k,m,");
	assert_string_equal(listing(v.vno, -1, "", NULL), "k,l,");
}

static int run_fn(void *ctx, const cof_run_item *it)
{
	cof_buf_addf(ctx, "%s:%s:%lld:%s,", it->kind, it->path, (long long)it->version,
		     it->caption);
	return 0;
}

static int subject_fn(void *ctx, const char *subject, const char *vol)
{
	cof_buf_addf(ctx, "%s=%s,", subject, vol);
	return 0;
}

static void test_agents(void **state)
{
	cof_agentrow a = {0}, got = {0};
	cof_err err = {0};
	cof_buf b = COF_BUF_INIT;
	int64_t version = 0;
	char sha[65], vol[48], seen[65];

	(void)state;
	snprintf(a.org, sizeof a.org, "%s", org);
	snprintf(a.id, sizeof a.id, "agent-1");
	snprintf(a.workspace, sizeof a.workspace, "vol_ws");
	a.settings = "{\"x\":1}";
	a.created_at = 1000;
	cof_err_clear(&err);
	assert_int_equal(cof_meta_agent_get(m, org, "agent-1", &got, &err), -1);
	assert_int_equal(err.code, COF_ENOTFOUND);
	assert_non_null(strstr(err.msg, "agent-1"));
	assert_int_equal(cof_meta_agent_put(m, &a, &err), 0);
	a.settings = "{\"x\":2}";
	assert_int_equal(cof_meta_agent_put(m, &a, &err), 0);
	assert_int_equal(cof_meta_agent_get(m, org, "agent-1", &got, &err), 0);
	assert_string_equal(got.settings, "{\"x\":2}");
	assert_string_equal(got.workspace, "vol_ws");
	assert_int_equal(got.created_at, 1000);
	free(got.settings);
	cof_err_clear(&err);
	assert_int_equal(cof_meta_agent_get(m, org2, "agent-1", &got, &err), -1);

	sha_for(sha, "seen");
	assert_int_equal(cof_meta_seen_get(m, org, "agent-1", "vol_a", "f", &version, seen, &err), 0);
	assert_int_equal(cof_meta_seen_put(m, org, "agent-1", "vol_a", "f", 3, sha, &err), 0);
	assert_int_equal(cof_meta_seen_put(m, org, "agent-1", "vol_a", "f", 4, sha, &err), 0);
	assert_int_equal(cof_meta_seen_get(m, org, "agent-1", "vol_a", "f", &version, seen, &err), 1);
	assert_int_equal(version, 4);
	assert_string_equal(seen, sha);
	/* many files in one transaction: new rows and an update of one there */
	char sha2[65];
	sha_for(sha2, "seen2");
	cof_seen_row rows[] = {{"f", 7, sha2}, {"g/h", 8, sha2}, {"i", 9, sha}};
	assert_int_equal(cof_meta_seen_put_many(m, org, "agent-1", "vol_a", rows, 0, &err), 0);
	assert_int_equal(cof_meta_seen_put_many(m, org, "agent-1", "vol_a", rows, 3, &err), 0);
	assert_int_equal(cof_meta_seen_get(m, org, "agent-1", "vol_a", "f", &version, seen, &err), 1);
	assert_int_equal(version, 7);
	assert_string_equal(seen, sha2);
	assert_int_equal(cof_meta_seen_get(m, org, "agent-1", "vol_a", "g/h", &version, seen, &err), 1);
	assert_int_equal(version, 8);
	assert_int_equal(cof_meta_seen_get(m, org, "agent-1", "vol_a", "i", &version, seen, &err), 1);
	assert_int_equal(version, 9);
	assert_string_equal(seen, sha);
	assert_int_equal(cof_meta_seen_get(m, org, "agent-1", "vol_b", "i", &version, seen, &err), 0);

	cof_run_item i1 = {.kind = "file", .path = "o/a", .version = 1, .size = 1,
			   .ctype = "text/plain", .caption = "", .url = ""};
	cof_run_item i2 = {.kind = "presented", .path = "o/b", .version = 2, .size = 2,
			   .ctype = "image/png", .caption = "c", .url = "u"};
	assert_int_equal(cof_meta_run_add(m, org, "agent-1", "run1", &i1, &err), 0);
	assert_int_equal(cof_meta_run_add(m, org, "agent-1", "run1", &i2, &err), 0);
	i1.version = 5;
	assert_int_equal(cof_meta_run_add(m, org, "agent-1", "run1", &i1, &err), 0);
	assert_int_equal(cof_meta_run_list(m, org, "agent-1", "run1", run_fn, &b, &err), 0);
	assert_string_equal(b.data, "file:o/a:5:,presented:o/b:2:c,");
	cof_buf_reset(&b);
	assert_int_equal(cof_meta_run_list(m, org, "agent-1", "run2", run_fn, &b, &err), 0);
	assert_true(!b.data || !*b.data);

	assert_int_equal(cof_meta_subject_get(m, org, "agent-1", "s1", vol, &err), 0);
	assert_int_equal(cof_meta_subject_add(m, org, "agent-1", "s1", "vol_s1", &err), 1);
	assert_int_equal(cof_meta_subject_add(m, org, "agent-1", "s1", "vol_other", &err), 0);
	assert_int_equal(cof_meta_subject_add(m, org, "agent-1", "", "vol_skills", &err), 1);
	assert_int_equal(cof_meta_subject_add(m, org, "agent-1", "a0", "vol_a0", &err), 1);
	assert_int_equal(cof_meta_subject_get(m, org, "agent-1", "s1", vol, &err), 1);
	assert_string_equal(vol, "vol_s1");
	cof_buf_reset(&b);
	assert_int_equal(cof_meta_subject_list(m, org, "agent-1", subject_fn, &b, &err), 0);
	assert_string_equal(b.data, "=vol_skills,a0=vol_a0,s1=vol_s1,");
	assert_int_equal(cof_meta_subject_delete_all(m, org, "agent-1", &err), 0);
	assert_int_equal(cof_meta_subject_get(m, org, "agent-1", "s1", vol, &err), 0);

	assert_int_equal(cof_meta_agent_delete(m, org, "agent-1", &err), 0);
	cof_err_clear(&err);
	assert_int_equal(cof_meta_agent_get(m, org, "agent-1", &got, &err), -1);
	assert_int_equal(cof_meta_seen_get(m, org, "agent-1", "vol_a", "f", &version, seen, &err), 0);
	cof_buf_release(&b);
}

struct shas { char want[65]; int found; };

static int sha_fn(void *ctx, const char *sha, int64_t size)
{
	struct shas *s = ctx;

	if (!strcmp(sha, s->want))
		s->found++;
	return 0;
}

static int has(int (*each)(cof_meta *, cof_sha_fn, void *, cof_err *), const char *sha)
{
	struct shas s = {.found = 0};
	cof_err err = {0};

	snprintf(s.want, sizeof s.want, "%s", sha);
	assert_int_equal(each(m, sha_fn, &s, &err), 0);
	return s.found;
}

static int orphan(const char *sha, int64_t before)
{
	struct shas s = {.found = 0};
	cof_err err = {0};

	snprintf(s.want, sizeof s.want, "%s", sha);
	assert_int_equal(cof_meta_gc_orphans(m, before, sha_fn, &s, &err), 0);
	return s.found;
}

typedef struct inl_seen {
	size_t n;
	char data[4][16];  /* by index in the shas asked for; "" = not given */
} inl_seen;

static int inl_take(void *ctx, size_t i, const unsigned char *data, size_t len)
{
	inl_seen *s = ctx;

	assert_true(i < 4 && len < 16 && !s->data[i][0]);
	memcpy(s->data[i], data, len);
	s->data[i][len] = '\0';
	s->n++;
	return 0;
}

/* blob_inline_many gives each inline content asked for by its index, in any
 * order, to every index that names it, and skips content it does not hold. */
static void test_blob_inline_many(void **state)
{
	cof_volrow v;
	cof_err err = {0};
	inl_seen seen = {0};
	char a[65], b[65], none[65];

	(void)state;
	vol_add(org, "inlmany", &v);
	sha_for(a, "alpha");
	sha_for(b, "beta");
	sha_for(none, "never stored");
	change(v.vno, (const char *[]){"a=alpha", "b=beta", NULL}, 0);
	const char *shas[] = { b, none, a, b };
	assert_int_equal(cof_meta_blob_inline_many(m, shas, 4, inl_take, &seen, &err), 0);
	assert_int_equal(seen.n, 3);
	assert_string_equal(seen.data[0], "beta");
	assert_string_equal(seen.data[1], "");
	assert_string_equal(seen.data[2], "alpha");
	assert_string_equal(seen.data[3], "beta");
	assert_int_equal(cof_meta_blob_inline_many(m, shas, 0, inl_take, &seen, &err), 0);
	assert_int_equal(seen.n, 3);
}

static void test_gc(void **state)
{
	cof_volrow v;
	cof_entry e;
	cof_err err = {0};
	unsigned char *data = NULL;
	size_t len = 0;
	int64_t pruned = -1, now = cof_now();
	char old[65], kept[65], pinned[65];

	(void)state;
	vol_add(org, "gc", &v);
	sha_for(old, "old");
	sha_for(kept, "kept!");
	sha_for(pinned, "pinned");
	assert_int_equal(cof_meta_blob_known(m, old, &err), 0);
	change(v.vno, (const char *[]){"g=old", NULL}, 0);
	assert_int_equal(cof_meta_blob_known(m, old, &err), 1);
	assert_int_equal(cof_meta_blob_inline(m, old, &data, &len, &err), 1);
	assert_int_equal(len, 3);
	assert_memory_equal(data, "old", 3);
	free(data);
	change(v.vno, (const char *[]){"g=kept!", "h=pinned", NULL}, 0);
	assert_int_equal(cof_meta_pin(m, org, "agent-gc", pinned, &err), 0);
	assert_int_equal(has(cof_meta_referenced, old), 1);   /* a history row */
	assert_int_equal(has(cof_meta_referenced, kept), 1);
	/* history closed before now + 10 goes; its content is an orphan since then */
	assert_int_equal(cof_meta_gc_prune(m, now + 10, 0, &pruned, &err), 0);
	assert_true(pruned >= 1);
	assert_int_equal(cof_meta_entry_get(m, v.vno, "g", 1, &e, &err), 0);
	assert_int_equal(cof_meta_entry_get(m, v.vno, "g", 2, &e, &err), 1);
	assert_int_equal(has(cof_meta_referenced, old), 0);
	assert_int_equal(cof_meta_gc_mark(m, now, &err), 0);
	assert_int_equal(orphan(old, now + 10), 1);
	assert_int_equal(orphan(old, now - 100), 0);
	assert_int_equal(orphan(kept, now + 100), 0);
	/* a row naming it again un-marks it, and forget then refuses */
	change(v.vno, (const char *[]){"again=old", NULL}, 0);
	assert_int_equal(orphan(old, now + 100), 0);
	assert_int_equal(cof_meta_blob_forget(m, old, &err), 0);
	assert_int_equal(cof_meta_gc_mark(m, now, &err), 0);
	assert_int_equal(orphan(old, now + 100), 0);
	change(v.vno, (const char *[]){"-again", NULL}, 0);
	assert_int_equal(cof_meta_gc_prune(m, now + 10, 0, &pruned, &err), 0);
	assert_int_equal(cof_meta_gc_mark(m, now, &err), 0);
	assert_int_equal(orphan(old, now + 100), 1);
	assert_int_equal(cof_meta_blob_forget(m, old, &err), 1);
	assert_int_equal(cof_meta_blob_known(m, old, &err), 0);
	assert_int_equal(orphan(old, now + 100), 0);
	/* a pin is a reference: pinned content is never an orphan */
	change(v.vno, (const char *[]){"-h", NULL}, 0);
	assert_int_equal(cof_meta_gc_prune(m, now + 10, 0, &pruned, &err), 0);
	assert_int_equal(cof_meta_gc_mark(m, now, &err), 0);
	assert_int_equal(orphan(pinned, now + 100), 0);
	assert_int_equal(has(cof_meta_referenced, pinned), 1);
	assert_int_equal(cof_meta_blob_forget(m, pinned, &err), 0);
	assert_int_equal(cof_meta_blob_known(m, pinned, &err), 1);
	/* bytes the metadata never named may be claimed for deletion; bytes a write
	 * named since the collector listed them may not (the sweep lists first and
	 * deletes later) */
	char never[65];
	sha_for(never, "never named");
	assert_int_equal(cof_meta_blob_claim(m, kept, &err), 0);
	assert_int_equal(cof_meta_blob_claim(m, never, &err), 1);
	assert_int_equal(cof_meta_blob_forgotten(m, never, &err), 0);
	assert_int_equal(cof_meta_blob_known(m, kept, &err), 1);
}

/* The front refuses URLs it cannot serve, naming them. */
/* A fork of `src` named `name` at `at` (the caller's seq for it). */
static void fork_at(const cof_volrow *src, int64_t at, const char *name, cof_volrow *f)
{
	cof_err err = {0};

	memset(f, 0, sizeof *f);
	cof_id_new("vol_", f->id, sizeof f->id);
	snprintf(f->org, sizeof f->org, "%s", src->org);
	snprintf(f->name, sizeof f->name, "%s", name);
	f->seq = f->history_from = at;
	f->capacity = 1 << 20;
	f->created_at = cof_now();
	assert_int_equal(cof_meta_volume_fork(m, f, src->vno, at, &err), 0);
}

/* A fork's counts at a seq of its source that is neither the source's seq nor a
 * snapshot's are counted through the chain (whiteouts hide their paths); a
 * parent a fork reads is retired when deleted, and dropped with its last fork. */
static void test_fork_counts_and_retire(void **state)
{
	cof_volrow v, f, g, h, got;
	cof_err err = {0};

	(void)state;
	vol_add(org, "counts", &v);
	change(v.vno, (const char *[]){"a=1", NULL}, 0);
	change(v.vno, (const char *[]){"b=22", NULL}, 0);
	change(v.vno, (const char *[]){"-a", NULL}, 0);
	change(v.vno, (const char *[]){"c=333", NULL}, 0);
	fork_at(&v, 4, "counts-f", &f);
	assert_int_equal(f.depth, 1);
	assert_int_equal(f.files, 2);
	assert_int_equal(f.bytes, 5);
	assert_int_equal(change(f.vno, (const char *[]){"d=4444", NULL}, 0), 5);
	assert_int_equal(change(f.vno, (const char *[]){"-b", NULL}, 0), 6);
	change(v.vno, (const char *[]){"e=x", NULL}, 0);
	/* g reads f at 5 (b still there), f reads v at 4 */
	fork_at(&f, 5, "counts-g", &g);
	assert_int_equal(g.depth, 2);
	assert_int_equal(g.files, 3);
	assert_int_equal(g.bytes, 9);
	assert_string_equal(listing(g.vno, -1, "", NULL), "b,c,d,");
	fork_at(&v, 2, "counts-h", &h);
	assert_int_equal(h.files, 2);
	assert_int_equal(h.bytes, 3);
	assert_string_equal(listing(h.vno, -1, "", NULL), "a,b,");
	/* f is retired: gone to its org, still read by g */
	assert_int_equal(cof_meta_volume_delete(m, f.vno, &err), 0);
	assert_int_equal(cof_meta_volume_get(m, org, f.id, &got, &err), -1);
	assert_int_equal(err.code, COF_ENOTFOUND);
	cof_err_clear(&err);
	assert_string_equal(listing(g.vno, -1, "", NULL), "b,c,d,");
	/* g's delete releases f, which goes; v and h are untouched */
	assert_int_equal(cof_meta_volume_delete(m, g.vno, &err), 0);
	assert_int_equal(cof_meta_volume_delete(m, g.vno, &err), 0);  /* gone: nothing */
	assert_string_equal(listing(f.vno, -1, "", NULL), "");
	assert_string_equal(listing(v.vno, -1, "", NULL), "b,c,e,");
	assert_string_equal(listing(h.vno, -1, "", NULL), "a,b,");
}

static void test_open_urls(void **state)
{
	const char *url = getenv("COFFER_TEST_META_URL");
	cof_meta *x = NULL;
	cof_err err = {0};

	(void)state;
	if (!url || !*url) {
		assert_string_equal(m->ops->name, "sqlite");
		/* nothing listens on port 1: refused either way, with a reason */
		cof_err_clear(&err);
		assert_int_equal(cof_meta_open("postgres://u@127.0.0.1:1/db", &x, &err), -1);
		assert_true(err.msg[0] != '\0');
	}
	cof_err_clear(&err);
	assert_int_equal(cof_meta_open("s3://bucket/x", &x, &err), -1);
	assert_non_null(strstr(err.msg, "s3://bucket/x"));
	cof_err_clear(&err);
	assert_int_equal(cof_meta_open("sqlite:", &x, &err), -1);
	assert_non_null(strstr(err.msg, "empty"));
	assert_null(x);
}

/* ---- forks of forks, against a model of each volume's files */
#define FK_PATHS 6
#define FK_LEVELS (COF_FORK_DEPTH + 3)   /* past the depth bound: a copy */

typedef struct fk_model {
	char content[FK_PATHS][16];  /* "" = absent */
} fk_model;

static const char *const fk_path[FK_PATHS] = {"a", "b/c", "b/d", "e", "f/g/h", "z"};

static int fk_list_fn(void *ctx, const cof_entry *e)
{
	cof_buf_addf(ctx, "%s=%s,", e->path, e->sha256 + 56);
	return 0;
}

/* What `fk` says the listing should be, in fk_list_fn's form. */
static char *fk_expected(const fk_model *fk)
{
	static char out[1024];
	size_t n = 0;

	out[0] = '\0';
	for (int i = 0; i < FK_PATHS; i++) {
		char sha[65];
		if (!fk->content[i][0])
			continue;
		sha_for(sha, fk->content[i]);
		n += (size_t)snprintf(out + n, sizeof out - n, "%s=%s,", fk_path[i], sha + 56);
	}
	return out;
}

/* Checks the listing (whole, and paged from each path) and every read. */
static void fk_check(int64_t vno, int64_t at, const fk_model *fk)
{
	cof_buf b = COF_BUF_INIT;
	cof_err err = {0};
	cof_entry e;

	assert_int_equal(cof_meta_list(m, vno, at, "", NULL, fk_list_fn, &b, &err), 0);
	assert_string_equal(b.data ? b.data : "", fk_expected(fk));
	cof_buf_release(&b);
	assert_int_equal(cof_meta_list(m, vno, at, "b/", "b/c", fk_list_fn, &b, &err), 0);
	if (fk->content[2][0])
		assert_non_null(b.data && strstr(b.data, "b/d="));
	else
		assert_true(!b.data || !b.data[0]);
	cof_buf_release(&b);
	for (int i = 0; i < FK_PATHS; i++) {
		char sha[65];
		int r = cof_meta_entry_get(m, vno, fk_path[i], at, &e, &err);
		assert_int_equal(r, fk->content[i][0] != '\0');
		if (r) {
			sha_for(sha, fk->content[i]);
			assert_string_equal(e.sha256, sha);
		}
	}
}

/* Writes or removes one random path of volume `vno` (and of its model). */
static void fk_edit(int64_t vno, fk_model *fk, unsigned *rnd, int level)
{
	int i = (int)(rand_r(rnd) % FK_PATHS);
	char op[64];

	/* "b/c" and "b/d" only ever files; no path is ever a folder and a file */
	if (fk->content[i][0] && rand_r(rnd) % 3 == 0) {
		snprintf(op, sizeof op, "-%s", fk_path[i]);
		fk->content[i][0] = '\0';
	} else {
		snprintf(fk->content[i], sizeof fk->content[i], "L%d.%u", level, rand_r(rnd) % 1000);
		snprintf(op, sizeof op, "%s=%s", fk_path[i], fk->content[i]);
	}
	change(vno, (const char *[]){op, NULL}, 0);
}

static void test_fork_chain(void **state)
{
	cof_volrow v[FK_LEVELS], got;
	fk_model fk[FK_LEVELS], at_fork[FK_LEVELS];
	int64_t fork_seq[FK_LEVELS];
	cof_err err = {0};
	unsigned rnd = 1234;
	int64_t pruned;

	(void)state;
	memset(fk, 0, sizeof fk);
	vol_add(org, "chain-0", &v[0]);
	for (int k = 0; k < 5; k++)
		fk_edit(v[0].vno, &fk[0], &rnd, 0);
	for (int l = 1; l < FK_LEVELS; l++) {
		/* the parent moves on a little, then is forked, then moves on again */
		fk_edit(v[l - 1].vno, &fk[l - 1], &rnd, l - 1);
		assert_int_equal(cof_meta_volume_get(m, org, v[l - 1].id, &got, &err), 0);
		memset(&v[l], 0, sizeof v[l]);
		cof_id_new("vol_", v[l].id, sizeof v[l].id);
		snprintf(v[l].org, sizeof v[l].org, "%s", org);
		snprintf(v[l].name, sizeof v[l].name, "chain-%d", l);
		v[l].seq = v[l].history_from = got.seq;
		v[l].capacity = 1 << 20;
		assert_int_equal(cof_meta_volume_fork(m, &v[l], v[l - 1].vno, got.seq, &err), 0);
		/* the depth is bounded: past COF_FORK_DEPTH a fork is a copy */
		assert_int_equal(v[l].depth, got.depth >= COF_FORK_DEPTH ? 0 : got.depth + 1);
		fk[l] = at_fork[l] = fk[l - 1];
		fork_seq[l] = got.seq;
		int files = 0;
		for (int i = 0; i < FK_PATHS; i++)
			files += fk[l].content[i][0] != '\0';
		assert_int_equal(v[l].files, files);
		fk_edit(v[l - 1].vno, &fk[l - 1], &rnd, l - 1);
	}
	/* writes and removes on every level, each checked on every level */
	for (int round = 0; round < 4; round++) {
		for (int l = 0; l < FK_LEVELS; l++)
			fk_edit(v[l].vno, &fk[l], &rnd, l);
		for (int l = 0; l < FK_LEVELS; l++) {
			fk_check(v[l].vno, -1, &fk[l]);
			fk_check(v[l].vno, fork_seq[l > 0 ? l : 1], l > 0 ? &at_fork[l] : &at_fork[1]);
		}
	}
	for (int l = 1; l < FK_LEVELS; l++) {
		assert_int_equal(cof_meta_volume_get(m, org, v[l].id, &got, &err), 0);
		int files = 0;
		for (int i = 0; i < FK_PATHS; i++)
			files += fk[l].content[i][0] != '\0';
		assert_int_equal(got.files, files);
	}
	/* deleting a parent keeps what its forks read; history they read outlives GC */
	assert_int_equal(cof_meta_volume_delete(m, v[3].vno, &err), 0);
	cof_err_clear(&err);
	assert_int_equal(cof_meta_volume_get(m, org, v[3].id, &got, &err), -1);
	assert_int_equal(err.code, COF_ENOTFOUND);
	assert_int_equal(cof_meta_gc_prune(m, cof_now() + 10, 0, &pruned, &err), 0);
	for (int l = 0; l < FK_LEVELS; l++)
		if (l != 3)
			fk_check(v[l].vno, -1, &fk[l]);
	for (int i = 0; i < FK_PATHS; i++) {
		char sha[65];
		if (!fk[4].content[i][0])
			continue;
		sha_for(sha, fk[4].content[i]);
		assert_int_equal(has(cof_meta_referenced, sha), 1);
	}
	/* deleting the whole chain, leaves first, drops the retired parent too */
	for (int l = FK_LEVELS - 1; l >= 0; l--)
		if (l != 3)
			assert_int_equal(cof_meta_volume_delete(m, v[l].vno, &err), 0);
	for (int l = 0; l < FK_LEVELS; l++)
		assert_int_equal(listing(v[l].vno, -1, "", NULL)[0], '\0');
}

/* Stored state: records replace whole, list by kind (ended ones only when
 * recent), streams number from 1, keep their last `keep`, read after an id,
 * and pruning forgets ended records with their streams. */
static int count_state(void *ctx, const cof_staterow *r)
{
	(void)r;
	(*(int *)ctx)++;
	return 0;
}

typedef struct ev_seen {
	int64_t ids[16];
	unsigned masks[16];
	int n;
} ev_seen;

static int collect_event(void *ctx, int64_t id, unsigned to, const char *body)
{
	ev_seen *s = ctx;

	assert_non_null(body);
	if (s->n < 16) {
		s->ids[s->n] = id;
		s->masks[s->n++] = to;
	}
	return 0;
}

static void test_state_and_events(void **state)
{
	cof_staterow r = {.kind = "relay", .id = "rs_1", .node = "n1", .body = "{\"a\":1}"};
	cof_staterow got;
	cof_err err = {0};
	int64_t id = 0, last = 0, first = 0;
	ev_seen seen = {0};
	int n = 0;
	static const char *const streams[] = {"relay:", NULL};

	(void)state;
	snprintf(r.org, sizeof r.org, "%s", org);
	assert_int_equal(cof_meta_state_get(m, "relay", "rs_1", &got, &err), 0);
	assert_int_equal(cof_meta_state_put(m, &r, &err), 0);
	r.body = "{\"a\":2}";
	assert_int_equal(cof_meta_state_put(m, &r, &err), 0);
	assert_int_equal(cof_meta_state_get(m, "relay", "rs_1", &got, &err), 1);
	assert_string_equal(got.body, "{\"a\":2}");
	assert_string_equal(got.node, "n1");
	assert_string_equal(got.org, org);
	assert_true(got.updated_at > 0);
	free(got.body);
	assert_int_equal(cof_meta_state_get(m, "turn", "rs_1", &got, &err), 0);
	assert_int_equal(cof_meta_state_list(m, "relay", cof_now_ms() + 1000, count_state, &n,
					     &err), 0);
	assert_int_equal(n, 1);

	for (int i = 1; i <= 5; i++) {
		assert_int_equal(cof_meta_event_add(m, "relay:rs_1", (unsigned)i, "{}", 3, &id,
						    &err), 0);
		assert_int_equal(id, i);
	}
	assert_int_equal(cof_meta_event_last(m, "relay:rs_1", &last, &first, &err), 0);
	assert_int_equal(last, 5);
	assert_int_equal(first, 3);
	assert_int_equal(cof_meta_event_list(m, "relay:rs_1", 3, 100, collect_event, &seen,
					     &err), 0);
	assert_int_equal(seen.n, 2);
	assert_int_equal(seen.ids[0], 4);
	assert_int_equal(seen.masks[1], 5);
	assert_int_equal(cof_meta_event_last(m, "relay:other", &last, &first, &err), 0);
	assert_int_equal(last, 0);

	/* ended and old: pruned with its stream; a live one stays */
	r.ended = 1;
	assert_int_equal(cof_meta_state_put(m, &r, &err), 0);
	n = 0;
	assert_int_equal(cof_meta_state_list(m, "relay", cof_now_ms() + 1000, count_state, &n,
					     &err), 0);
	assert_int_equal(n, 0);
	assert_int_equal(cof_meta_state_prune(m, "relay", cof_now_ms() + 1000, streams, &err), 0);
	assert_int_equal(cof_meta_state_get(m, "relay", "rs_1", &got, &err), 0);
	assert_int_equal(cof_meta_event_last(m, "relay:rs_1", &last, &first, &err), 0);
	assert_int_equal(last, 0);
	/* ids go on from 1 again only once the stream is gone: a fresh stream */
	assert_int_equal(cof_meta_event_add(m, "relay:rs_1", 1, "{}", 3, &id, &err), 0);
	assert_int_equal(id, 1);
}

/* state_add: the first record of (kind, id) stays; a later add leaves it. */
static void test_state_add_first_wins(void **state)
{
	cof_staterow r = {.kind = "test-add", .body = "{\"v\":1}"};
	cof_staterow got;
	cof_err err = {0};

	(void)state;
	snprintf(r.id, sizeof r.id, "%s", org);   /* this run's own record */
	assert_int_equal(cof_meta_state_add(m, &r, &err), 1);
	r.body = "{\"v\":2}";
	assert_int_equal(cof_meta_state_add(m, &r, &err), 0);
	assert_int_equal(cof_meta_state_get(m, "test-add", org, &got, &err), 1);
	assert_string_equal(got.body, "{\"v\":1}");
	free(got.body);
	/* state_put still replaces */
	assert_int_equal(cof_meta_state_put(m, &r, &err), 0);
	assert_int_equal(cof_meta_state_get(m, "test-add", org, &got, &err), 1);
	assert_string_equal(got.body, "{\"v\":2}");
	free(got.body);
}

/* Issue 32.9/32.10: a key is added only while its organization holds fewer
 * than the cap of live keys (revoked and expired ones not counted); a key is
 * found by its id, revoked ones too. */
static void test_keys_capped_and_found_by_id(void **state)
{
	cof_keyrow k = {0}, got = {0};
	cof_err err = {0};
	char corg[48], ids[4][24];

	(void)state;
	snprintf(corg, sizeof corg, "%.30s-cap", org);
	snprintf(k.org, sizeof k.org, "%s", corg);
	k.created_at = 10000;
	for (int i = 0; i < 4; i++) {
		char seed[32];
		snprintf(seed, sizeof seed, "capped key %d", i);
		sha_for(k.hash, seed);
		snprintf(k.id, sizeof k.id, "k_cap%d%.10s", i, org);
		snprintf(ids[i], sizeof ids[i], "%s", k.id);
		k.expires_at = i == 1 ? 20000 : 0;
		/* at 10000 key 1 (expiring at 20000) counts: two, the cap */
		assert_int_equal(cof_meta_key_add_capped(m, &k, 2, &err), i < 2 ? 1 : 0);
	}
	assert_int_equal(err.code, COF_OK);
	/* from 20000 on key 1 has expired: its place is free again */
	sha_for(k.hash, "capped key 2 again");
	snprintf(k.id, sizeof k.id, "k_cap2b%.10s", org);
	k.created_at = 10000; /* at 10000 key 1 still counts */
	assert_int_equal(cof_meta_key_add_capped(m, &k, 2, &err), 0);
	k.created_at = 30000;
	assert_int_equal(cof_meta_key_add_capped(m, &k, 2, &err), 1);
	/* a revoked key's place is free too */
	assert_int_equal(cof_meta_key_revoke(m, corg, ids[0], 0, 30001, &got, &err), 0);
	sha_for(k.hash, "capped key 3 again");
	snprintf(k.id, sizeof k.id, "k_cap3b%.10s", org);
	assert_int_equal(cof_meta_key_add_capped(m, &k, 2, &err), 1);
	/* no cap */
	sha_for(k.hash, "uncapped key");
	snprintf(k.id, sizeof k.id, "k_cap4b%.10s", org);
	assert_int_equal(cof_meta_key_add_capped(m, &k, 0, &err), 1);
	/* by id: revoked ones too; an unknown id is not found */
	assert_int_equal(cof_meta_key_find_id(m, ids[0], &got, &err), 0);
	assert_string_equal(got.org, corg);
	assert_int_equal(got.revoked_at, 30001);
	assert_int_equal(cof_meta_key_find_id(m, ids[2], &got, &err), -1);
	assert_int_equal(err.code, COF_ENOTFOUND);
	cof_err_clear(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keys_and_idempotency),
		cmocka_unit_test(test_keys_capped_and_found_by_id),
		cmocka_unit_test(test_volumes),
		cmocka_unit_test(test_changes_and_reads),
		cmocka_unit_test(test_list_prefix_edges),
		cmocka_unit_test(test_changes_feed),
		cmocka_unit_test(test_history_kept),
		cmocka_unit_test(test_txn_view),
		cmocka_unit_test(test_snapshots_and_fork),
		cmocka_unit_test(test_agents),
		cmocka_unit_test(test_gc),
		cmocka_unit_test(test_blob_inline_many),
		cmocka_unit_test(test_fork_chain),
		cmocka_unit_test(test_fork_counts_and_retire),
		cmocka_unit_test(test_open_urls),
		cmocka_unit_test(test_state_and_events),
		cmocka_unit_test(test_state_add_first_wins),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
