/*
 * test_meta_batch.c — concurrent changes (cof_meta_change from many threads)
 * on whichever backend $COFFER_TEST_META_URL names (default: a fresh SQLite
 * file). On SQLite they commit in batches (meta_sqlite_commit.c): each change
 * must still keep its own result and its own error, a refused change must
 * undo only itself, and changes of one batch must see each other in order
 * (no lost update). Checked with 16 threads of 24 changes each, every third
 * refused after it wrote. On PostgreSQL, a batch that stored nothing gives
 * its connection back to the pool.
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
#include "store/meta.h"
#include "store/meta_pg.h"
#include "meta_fx.h"

#define THREADS 16
#define CHANGES 24
#define SHARED_MAX (THREADS * CHANGES + 1)

static cof_meta *m;
static meta_fx fx;
static char org[48];
static int64_t vno;
static char fill[SHARED_MAX];

static int setup(void **state)
{
	(void)state;
	memset(fill, 'x', sizeof fill);
	cof_id_new("org_", org, sizeof org);
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

/* A sha256-looking name unique to this run for (t, j, n). */
static void sha_of(char out[65], int t, int j, int64_t n)
{
	snprintf(out, 65, "%.20s%08x%08x%020lld", org + 4, (unsigned)t, (unsigned)j,
		 (long long)n);
	for (size_t i = strlen(out); i < 64; i++)
		out[i] = '0';
	out[64] = '\0';
	for (int i = 0; i < 64; i++)
		if (!strchr("0123456789abcdef", out[i]))
			out[i] = 'a';
}

struct one {
	int t, j, refuse;
};

/* The change of thread t, number j: writes t<t>/f<j>, adds one byte to
 * shared.txt (read in the change: a lost update would show), then refuses
 * itself when asked, naming (t, j) in its error. */
static int apply(cof_txn *tx, void *ctx, cof_err *err)
{
	struct one *o = ctx;
	cof_entry cur;
	char path[64], sha[65];
	int64_t n;
	int had;

	snprintf(path, sizeof path, "t%d/f%d", o->t, o->j);
	sha_of(sha, o->t, o->j, -1);
	if (cof_txn_write(tx, path, sha, 3, "text/plain", "abc", err))
		return -1;
	if ((had = cof_txn_get(tx, "shared.txt", &cur, err)) < 0)
		return -1;
	n = had ? cur.size + 1 : 1;
	sha_of(sha, o->t, o->j, n);
	if (n > SHARED_MAX)
		return cof_error(err, COF_EINTERNAL, "shared.txt too long");
	if (cof_txn_write(tx, "shared.txt", sha, n, "text/plain", fill, err))
		return -1;
	if (o->refuse)
		return cof_error(err, COF_ECONFLICT, "refused: change %d of thread %d", o->j,
				 o->t);
	return 0;
}

struct worker {
	int t;
	int ok, refused, wrong;
	int64_t seqs[CHANGES];
	char why[200];
};

static void *work(void *arg)
{
	struct worker *w = arg;

	for (int j = 0; j < CHANGES; j++) {
		struct one o = {.t = w->t, .j = j, .refuse = j % 3 == 0};
		cof_err err = {0};
		char want[100];
		int64_t seq = -1;
		/* every fifth announces itself as a change of many writes: it
		 * commits the open batch and runs alone (no savepoint on SQLite) */
		int rc = j % 5 == 1 ? cof_meta_change_many(m, vno, 1000, apply, &o, &seq, &err)
				    : cof_meta_change(m, vno, apply, &o, &seq, &err);

		snprintf(want, sizeof want, "refused: change %d of thread %d", j, w->t);
		if (o.refuse && rc && err.code == COF_ECONFLICT && !strcmp(err.msg, want)) {
			w->refused++;
			w->seqs[j] = -1;
		} else if (!o.refuse && rc == 0 && seq > 0) {
			w->ok++;
			w->seqs[j] = seq;
		} else {
			w->wrong++;
			snprintf(w->why, sizeof w->why, "change %d: rc %d seq %lld code %d: %.120s",
				 j, rc, (long long)seq, (int)err.code, err.msg);
		}
		cof_err_clear(&err);
	}
	return NULL;
}

static int cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* A new volume `name` of the test's org in *v, as the store has it (vno, seq). */
static void vol_new(const char *name, cof_volrow *v)
{
	cof_err err = {0};

	memset(v, 0, sizeof *v);
	cof_id_new("vol_", v->id, sizeof v->id);
	snprintf(v->org, sizeof v->org, "%s", org);
	snprintf(v->name, sizeof v->name, "%s", name);
	v->capacity = 1 << 30;
	v->ceiling = (int64_t)1 << 40;
	v->created_at = cof_now();
	assert_int_equal(cof_meta_volume_add(m, v, &err), 0);
	assert_int_equal(cof_meta_volume_get(m, org, v->id, v, &err), 0);
}

static void test_concurrent_changes_keep_their_own_results(void **state)
{
	static struct worker w[THREADS];
	static int64_t all[THREADS * CHANGES];
	pthread_t th[THREADS];
	cof_volrow v = {0};
	cof_entry e;
	cof_err err = {0};
	int ok = 0, n = 0;

	(void)state;
	vol_new("batch", &v);
	vno = v.vno;
	for (int t = 0; t < THREADS; t++) {
		w[t].t = t;
		assert_int_equal(pthread_create(&th[t], NULL, work, &w[t]), 0);
	}
	for (int t = 0; t < THREADS; t++)
		pthread_join(th[t], NULL);
	for (int t = 0; t < THREADS; t++) {
		if (w[t].wrong)
			fprintf(stderr, "thread %d: %s\n", t, w[t].why);
		assert_int_equal(w[t].wrong, 0);
		assert_int_equal(w[t].refused, (CHANGES + 2) / 3);
		ok += w[t].ok;
		for (int j = 0; j < CHANGES; j++) {
			char path[64];
			int r;
			snprintf(path, sizeof path, "t%d/f%d", t, j);
			r = cof_meta_entry_get(m, vno, path, -1, &e, &err);
			/* a refused change's own write was undone, no one else's */
			assert_int_equal(r, j % 3 ? 1 : 0);
			if (w[t].seqs[j] > 0) {
				assert_int_equal(e.version, w[t].seqs[j]);
				all[n++] = w[t].seqs[j];
			}
		}
	}
	/* every acknowledged change has a seq of its own: 1..ok, none skipped */
	qsort(all, (size_t)n, sizeof all[0], cmp64);
	for (int i = 0; i < n; i++)
		assert_int_equal(all[i], i + 1);
	assert_int_equal(cof_meta_entry_get(m, vno, "shared.txt", -1, &e, &err), 1);
	assert_int_equal(e.size, ok);   /* one byte per kept change: no lost update */
	assert_int_equal(cof_meta_volume_get(m, org, v.id, &v, &err), 0);
	assert_int_equal(v.seq, ok);
	assert_int_equal(v.files, ok + 1);
}

/* Changes one at a time: each is the first of its batch, which SQLite runs
 * with no savepoint (meta_sqlite_commit.c): a refused one is undone whole by
 * the transaction's ROLLBACK, and the next one's seq follows the last kept. */
static void test_lone_refused_changes_leave_nothing(void **state)
{
	cof_volrow v;
	cof_entry e;
	cof_err err = {0};
	int64_t last = 0;

	(void)state;
	vol_new("lone", &v);
	for (int j = 0; j < 6; j++) {
		struct one o = {.t = 99, .j = j, .refuse = j % 2 == 0};
		int64_t seq = -1;
		int rc = j < 3 ? cof_meta_change(m, v.vno, apply, &o, &seq, &err)
			       : cof_meta_change_many(m, v.vno, 1000, apply, &o, &seq, &err);
		char path[64];

		snprintf(path, sizeof path, "t99/f%d", j);
		if (o.refuse) {
			assert_int_not_equal(rc, 0);
			assert_int_equal(err.code, COF_ECONFLICT);
			cof_err_clear(&err);
			assert_int_equal(cof_meta_entry_get(m, v.vno, path, -1, &e, &err), 0);
		} else {
			assert_int_equal(rc, 0);
			assert_int_equal(seq, last + 1);
			last = seq;
			assert_int_equal(cof_meta_entry_get(m, v.vno, path, -1, &e, &err), 1);
			assert_int_equal(e.version, seq);
		}
	}
	assert_int_equal(cof_meta_entry_get(m, v.vno, "shared.txt", -1, &e, &err), 1);
	assert_int_equal(e.size, 3);    /* the three kept changes' bytes only */
	assert_int_equal(cof_meta_volume_get(m, org, v.id, &v, &err), 0);
	assert_int_equal(v.seq, 3);
	assert_int_equal(v.files, 4);
}

static int store_nothing(cof_txn *tx, void *ctx, cof_err *err)
{
	cof_entry e;

	(void)ctx;
	return cof_txn_get(tx, "absent.txt", &e, err) < 0 ? -1 : 0;
}

static int idle_connections(void)
{
	pg_meta *p = PGM(m);
	int n;

	pthread_mutex_lock(&p->plock);
	n = p->nidle;
	pthread_mutex_unlock(&p->plock);
	return n;
}

/* A PostgreSQL batch none of whose changes stored anything is rolled back
 * and its connection goes back to the pool: a change that stores nothing
 * costs no new connection (cof_pg_put rolls back before it pools). */
static void test_change_storing_nothing_keeps_its_connection(void **state)
{
	cof_volrow v = {0};
	cof_err err = {0};
	int64_t seq = -1;
	int idle;

	(void)state;
	if (m->sql->local)
		skip();
	vol_new("nothing", &v);
	idle = idle_connections();
	assert_true(idle > 0);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(cof_meta_change(m, v.vno, store_nothing, NULL, &seq, &err), 0);
		assert_int_equal(seq, v.seq);
		assert_int_equal(idle_connections(), idle);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_concurrent_changes_keep_their_own_results),
		cmocka_unit_test(test_lone_refused_changes_leave_nothing),
		cmocka_unit_test(test_change_storing_nothing_keeps_its_connection),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
