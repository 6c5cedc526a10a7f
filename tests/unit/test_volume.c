/*
 * test_volume.c — libcoffer's volume layer in process, against a real SQLite
 * file and blob directory in a temp dir: races, snapshots, retention, restore,
 * forks, inline and blob content, implicit directories, gc and fsck.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "coffer.h"

#define ORG "org_default"

static cof_store *st;
static char dir[] = "/tmp/coffer-unit-XXXXXX";

static int setup(void **state)
{
	cof_err err = {0};
	cof_store_opts o = {.gc_grace_seconds = 1};

	(void)state;
	if (!mkdtemp(dir))
		return -1;
	return cof_store_open(dir, &o, &st, &err);
}

static int teardown(void **state)
{
	char cmd[256];

	(void)state;
	cof_store_close(st);
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	return system(cmd);
}

/* Makes a volume and returns its id (static buffer per call site is enough). */
static void new_volume(char id[64], int64_t ceiling)
{
	cof_err err = {0};
	json_t *body = json_pack("{s:s}", "name", "t"), *out = NULL;
	int created;

	if (ceiling)
		json_object_set_new(body, "ceiling", json_integer(ceiling));
	assert_int_equal(cof_volume_create(st, ORG, body, NULL, &out, &created, &err), 0);
	snprintf(id, 64, "%s", json_string_value(json_object_get(out, "id")));
	json_decref(body);
	json_decref(out);
}

static int64_t put(const char *vol, const char *path, const char *text, cof_cond cond,
		   cof_code *code)
{
	cof_err err = {0};
	json_t *out = NULL;
	int created;
	int64_t version = -1;

	if (cof_file_put_bytes(st, ORG, vol, path, text, strlen(text), NULL, cond, &out,
			       &created, &err) == 0)
		version = json_integer_value(json_object_get(out, "version"));
	if (code)
		*code = err.code;
	json_decref(out);
	cof_err_clear(&err);
	return version;
}

static char *get(const char *vol, const char *path, const char *snapshot)
{
	cof_err err = {0};
	cof_file f;
	char *buf;

	if (cof_file_open(st, ORG, vol, path, snapshot, &f, &err)) {
		cof_err_clear(&err);
		return NULL;
	}
	buf = calloc(1, (size_t)f.size + 1);
	for (int64_t got = 0; got < f.size;) {
		size_t n = 0;
		assert_int_equal(cof_file_read_at(&f, got, buf + got, (size_t)(f.size - got), &n,
						  &err), 0);
		assert_true(n > 0);
		got += (int64_t)n;
	}
	cof_file_close(&f);
	return buf;
}

static int64_t vol_seq(const char *vol)
{
	cof_err err = {0};
	json_t *out;
	int64_t seq;

	assert_int_equal(cof_volume_get(st, ORG, vol, &out, &err), 0);
	seq = json_integer_value(json_object_get(out, "seq"));
	json_decref(out);
	return seq;
}

static const cof_cond none = {.kind = COF_COND_NONE, .version = 0};

/* ------------------------------------------------------------------ race */

typedef struct racer {
	const char *vol;
	int64_t expect;
	cof_code code;
} racer;

static void *race(void *arg)
{
	racer *r = arg;
	cof_cond c = {.kind = COF_COND_VERSION, .version = r->expect};
	char text[32];

	snprintf(text, sizeof text, "writer %p", arg);
	put(r->vol, "race.txt", text, c, &r->code);
	return NULL;
}

static void test_racing_writers_one_wins(void **state)
{
	char vol[64];
	pthread_t th[16];
	racer r[16];
	int wins = 0, lost = 0;

	(void)state;
	new_volume(vol, 0);
	int64_t v = put(vol, "race.txt", "start", none, NULL);
	for (int i = 0; i < 16; i++) {
		r[i] = (racer){.vol = vol, .expect = v};
		pthread_create(&th[i], NULL, race, &r[i]);
	}
	for (int i = 0; i < 16; i++) {
		pthread_join(th[i], NULL);
		wins += r[i].code == COF_OK;
		lost += r[i].code == COF_EPRECONDITION;
	}
	assert_int_equal(wins, 1);
	assert_int_equal(lost, 15);
	assert_int_equal(vol_seq(vol), 2);
}

/* ------------------------------------------------------- versions, paths */

static void test_versions_and_conditions(void **state)
{
	char vol[64];
	cof_code code;

	(void)state;
	new_volume(vol, 0);
	assert_int_equal(put(vol, "a.txt", "1", none, NULL), 1);
	assert_int_equal(put(vol, "b.txt", "2", none, NULL), 2);
	cof_cond absent = {.kind = COF_COND_ABSENT, .version = 0};
	assert_int_equal(put(vol, "a.txt", "x", absent, &code), -1);
	assert_int_equal(code, COF_EPRECONDITION);
	cof_cond stale = {.kind = COF_COND_VERSION, .version = 7};
	assert_int_equal(put(vol, "a.txt", "x", stale, &code), -1);
	assert_int_equal(code, COF_EPRECONDITION);
	assert_int_equal(vol_seq(vol), 2); /* refusals change nothing */
	cof_cond ok = {.kind = COF_COND_VERSION, .version = 1};
	assert_int_equal(put(vol, "a.txt", "3", ok, NULL), 3);
	cof_cond exists;
	cof_err err = {0};
	assert_int_equal(cof_cond_parse_etag("*", &exists, &err), 0);
	assert_int_equal(exists.kind, COF_COND_EXISTS);
	assert_int_equal(put(vol, "new.txt", "x", exists, &code), -1);
	assert_int_equal(code, COF_EPRECONDITION);
	assert_int_equal(put(vol, "a.txt", "4", exists, NULL), 4);
	assert_int_equal(cof_cond_parse_etag("\"12\"", &exists, &err), 0);
	assert_int_equal(exists.version, 12);
	assert_int_equal(cof_cond_parse_etag("\"12", &exists, &err), -1);
	cof_err_clear(&err);
}

static void test_implicit_directories(void **state)
{
	char vol[64];
	cof_code code;

	(void)state;
	new_volume(vol, 0);
	put(vol, "a/b.txt", "x", none, NULL);
	assert_int_equal(put(vol, "a", "file over a folder", none, &code), -1);
	assert_int_equal(code, COF_ECONFLICT);
	assert_int_equal(put(vol, "a/b.txt/c", "file under a file", none, &code), -1);
	assert_int_equal(code, COF_ECONFLICT);
	assert_true(put(vol, "ab", "a sibling is fine", none, NULL) > 0);
}

static void test_bad_paths_refused(void **state)
{
	static const char *bad[] = {"", "/", "a//b", "a/../b", "./a", "a/.", "a/"};
	char vol[64];
	cof_code code;

	(void)state;
	new_volume(vol, 0);
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		assert_int_equal(put(vol, bad[i], "x", none, &code), -1);
		assert_int_equal(code, COF_EVALIDATION);
	}
	assert_int_equal(vol_seq(vol), 0);
}

/* ----------------------------------------------- inline and blob content */

static void test_inline_and_blob_content(void **state)
{
	char vol[64];
	size_t big = 100 * 1024;
	char *data = malloc(big + 1);

	(void)state;
	for (size_t i = 0; i < big; i++)
		data[i] = (char)('a' + i % 26);
	data[big] = '\0';
	new_volume(vol, 0);
	put(vol, "small.txt", "tiny", none, NULL);
	put(vol, "big.txt", data, none, NULL);
	char *s = get(vol, "small.txt", NULL), *b = get(vol, "big.txt", NULL);
	assert_string_equal(s, "tiny");
	assert_memory_equal(b, data, big);
	free(s);
	free(b);
	free(data);
}

/* ----------------------------------------------- snapshots and restore */

static char *snapshot(const char *vol, int pinned, const char **dropped)
{
	cof_err err = {0};
	json_t *body = json_pack("{s:b}", "pinned", pinned), *out;
	static char drop[64];
	char *id;

	assert_int_equal(cof_snapshot_create(st, ORG, vol, body, &out, &err), 0);
	id = strdup(json_string_value(json_object_get(out, "id")));
	const char *d = json_string_value(json_object_get(out, "dropped"));
	snprintf(drop, sizeof drop, "%s", d ? d : "");
	if (dropped)
		*dropped = drop;
	json_decref(body);
	json_decref(out);
	return id;
}

static void test_snapshot_restore(void **state)
{
	char vol[64];
	cof_err err = {0};
	json_t *body, *out;

	(void)state;
	new_volume(vol, 0);
	put(vol, "keep.txt", "k", none, NULL);
	put(vol, "change.txt", "before", none, NULL);
	char *sid = snapshot(vol, 0, NULL);
	put(vol, "change.txt", "after", none, NULL);
	put(vol, "new.txt", "n", none, NULL);
	/* Given files naming one path twice ("a" and "/a") are refused whole. */
	cof_err e2 = {0};
	json_t *dup = json_pack("{s:{s:s, s:s}}", "files", "a", "x", "/a", "yy"), *o2 = NULL;
	assert_int_equal(cof_snapshot_create(st, ORG, vol, dup, &o2, &e2), -1);
	assert_int_equal(e2.code, COF_EVALIDATION);
	cof_err_clear(&e2);
	json_decref(dup);
	char *old = get(vol, "change.txt", sid);
	assert_string_equal(old, "before");
	free(old);

	body = json_pack("{s:s}", "snapshot", sid);
	assert_int_equal(cof_volume_restore(st, ORG, vol, body, NULL, &out, &err), 0);
	assert_int_equal(json_integer_value(json_object_get(out, "written")), 1);
	assert_int_equal(json_integer_value(json_object_get(out, "removed")), 1);
	assert_int_equal(json_integer_value(json_object_get(out, "seq")), 5);
	json_decref(out);
	char *now = get(vol, "change.txt", NULL);
	assert_string_equal(now, "before");
	free(now);
	assert_null(get(vol, "new.txt", NULL));
	/* Restoring again changes nothing: no new seq. */
	assert_int_equal(cof_volume_restore(st, ORG, vol, body, NULL, &out, &err), 0);
	assert_int_equal(json_integer_value(json_object_get(out, "seq")), 5);
	json_decref(out);
	json_decref(body);
	free(sid);
}

static void test_snapshot_retention(void **state)
{
	char vol[64];
	const char *dropped;
	char *first, *pinned, *sid;

	(void)state;
	new_volume(vol, 0);
	pinned = snapshot(vol, 1, NULL);
	first = snapshot(vol, 0, &dropped);
	assert_string_equal(dropped, "");
	for (int i = 1; i < 100; i++) {
		sid = snapshot(vol, 0, &dropped);
		assert_string_equal(dropped, "");
		free(sid);
	}
	sid = snapshot(vol, 0, &dropped); /* the 101st unpinned */
	assert_string_equal(dropped, first);
	free(sid);
	cof_err err = {0};
	json_t *out;
	assert_int_equal(cof_snapshot_get(st, ORG, vol, pinned, &out, &err), 0);
	json_decref(out);
	assert_int_equal(cof_snapshot_delete(st, ORG, vol, pinned, 0, &err), -1);
	assert_int_equal(err.code, COF_ECONFLICT);
	cof_err_clear(&err);
	assert_int_equal(cof_snapshot_delete(st, ORG, vol, pinned, 1, &err), 0);
	free(first);
	free(pinned);
}

static void test_fork_diverges(void **state)
{
	char vol[64], fork[64];
	cof_err err = {0};
	json_t *out;

	(void)state;
	new_volume(vol, 0);
	put(vol, "a.txt", "shared", none, NULL);
	assert_int_equal(cof_volume_fork(st, ORG, vol, NULL, &out, &err), 0);
	snprintf(fork, sizeof fork, "%s", json_string_value(json_object_get(out, "id")));
	json_decref(out);
	put(fork, "a.txt", "fork", none, NULL);
	put(vol, "b.txt", "source only", none, NULL);
	char *a = get(vol, "a.txt", NULL), *fa = get(fork, "a.txt", NULL);
	assert_string_equal(a, "shared");
	assert_string_equal(fa, "fork");
	assert_null(get(fork, "b.txt", NULL));
	free(a);
	free(fa);
}

static void test_ceiling(void **state)
{
	char vol[64];
	cof_code code;

	(void)state;
	new_volume(vol, 10);
	assert_int_equal(put(vol, "a", "12345", none, NULL), 1);
	assert_int_equal(put(vol, "b", "123456", none, &code), -1);
	assert_int_equal(code, COF_EVALIDATION);
	assert_int_equal(put(vol, "a", "1234567890", none, NULL), 2); /* overwrite fits */
	assert_int_equal(vol_seq(vol), 2);
}

/* -------------------------------------------------------------- gc, fsck */

static void test_gc_collects_and_fsck_is_clean(void **state)
{
	char vol[64];
	cof_err err = {0};
	json_t *out;
	size_t big = 64 * 1024;
	char *data = malloc(big + 1);

	(void)state;
	memset(data, 'z', big);
	data[big] = '\0';
	new_volume(vol, 0);
	put(vol, "big.bin", data, none, NULL);
	assert_int_equal(cof_volume_delete(st, ORG, vol, &err), 0);
	sleep(2);
	assert_int_equal(cof_gc(st, &out, &err), 0);
	assert_true(json_integer_value(json_object_get(out, "blobsDeleted")) >= 1);
	json_decref(out);
	assert_int_equal(cof_fsck(st, &out, &err), 0);
	assert_true(json_is_true(json_object_get(out, "ok")));
	json_decref(out);
	free(data);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_racing_writers_one_wins),
		cmocka_unit_test(test_versions_and_conditions),
		cmocka_unit_test(test_implicit_directories),
		cmocka_unit_test(test_bad_paths_refused),
		cmocka_unit_test(test_inline_and_blob_content),
		cmocka_unit_test(test_snapshot_restore),
		cmocka_unit_test(test_snapshot_retention),
		cmocka_unit_test(test_fork_diverges),
		cmocka_unit_test(test_ceiling),
		cmocka_unit_test(test_gc_collects_and_fsck_is_clean),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
