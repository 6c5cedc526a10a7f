/*
 * test_clock.c — src/util/misc.c's clocks: cof_mono_ms reads CLOCK_MONOTONIC,
 * and a condition variable from cof_cond_init measures its timed waits on
 * that clock, so that a deadline taken from cof_mono_ms is honoured (a
 * CLOCK_REALTIME condition would take a monotonic deadline, which is hours
 * since boot, as a date in 1970 and return at once).
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <cmocka.h>

#include "util/util.h"

/* cof_mono_ms is CLOCK_MONOTONIC in milliseconds, and never goes back. */
static void test_mono_is_monotonic(void **state)
{
	struct timespec a, b;
	(void)state;

	clock_gettime(CLOCK_MONOTONIC, &a);
	int64_t m = cof_mono_ms();
	clock_gettime(CLOCK_MONOTONIC, &b);
	assert_true(m >= (int64_t)a.tv_sec * 1000 + a.tv_nsec / 1000000);
	assert_true(m <= (int64_t)b.tv_sec * 1000 + b.tv_nsec / 1000000);
	int64_t prev = cof_mono_ms();
	for (int i = 0; i < 10000; i++) {
		int64_t now = cof_mono_ms();
		assert_true(now >= prev);
		prev = now;
	}
}

/* A timed wait on a cof_cond_init condition runs until the monotonic
 * deadline: it returns ETIMEDOUT, and not before cof_mono_ms() reached it. */
static void test_cond_waits_on_monotonic(void **state)
{
	pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t cv;
	pthread_condattr_t a;
	clockid_t clock = CLOCK_REALTIME;
	(void)state;

	/* the attribute cof_cond_init uses is accepted here */
	assert_int_equal(pthread_condattr_init(&a), 0);
	assert_int_equal(pthread_condattr_setclock(&a, CLOCK_MONOTONIC), 0);
	assert_int_equal(pthread_condattr_getclock(&a, &clock), 0);
	assert_int_equal(clock, CLOCK_MONOTONIC);
	pthread_condattr_destroy(&a);

	assert_int_equal(cof_cond_init(&cv), 0);
	pthread_mutex_lock(&mu);
	for (int i = 0; i < 3; i++) {
		int64_t until = cof_mono_ms() + 30;
		int r;
		while ((r = cof_cond_wait_until(&cv, &mu, until)) == 0)
			; /* spurious wake-ups */
		assert_int_equal(r, ETIMEDOUT);
		assert_true(cof_mono_ms() >= until);
	}
	/* a deadline already past: at once */
	assert_int_equal(cof_cond_wait_until(&cv, &mu, cof_mono_ms() - 1000), ETIMEDOUT);
	assert_int_equal(cof_cond_wait_until(&cv, &mu, 0), ETIMEDOUT);
	pthread_mutex_unlock(&mu);
	pthread_cond_destroy(&cv);
}

typedef struct waker {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int flag;
} waker;

static void *wake(void *arg)
{
	waker *w = arg;

	pthread_mutex_lock(&w->mu);
	w->flag = 1;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/* A signal before the deadline ends the wait with 0 (not ETIMEDOUT). */
static void test_cond_wakes_before_deadline(void **state)
{
	waker w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
	pthread_t tid;
	(void)state;

	assert_int_equal(cof_cond_init(&w.cv), 0);
	pthread_mutex_lock(&w.mu);
	assert_int_equal(pthread_create(&tid, NULL, wake, &w), 0);
	int64_t until = cof_mono_ms() + 600000; /* ten minutes: never reached */
	int r = 0;
	while (!w.flag && r == 0)
		r = cof_cond_wait_until(&w.cv, &w.mu, until);
	assert_int_equal(r, 0);
	assert_true(w.flag);
	pthread_mutex_unlock(&w.mu);
	pthread_join(tid, NULL);
	pthread_cond_destroy(&w.cv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mono_is_monotonic),
		cmocka_unit_test(test_cond_waits_on_monotonic),
		cmocka_unit_test(test_cond_wakes_before_deadline),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
