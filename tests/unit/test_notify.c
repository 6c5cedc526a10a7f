/*
 * test_notify.c — the notification interface (store/notify.h) on the
 * in-process hub: a publish moves on exactly the subscriptions to its topic
 * and makes their fd readable, a publish between looking and waiting is not
 * lost, waits end at their deadline, shutdown wakes everyone for good.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <poll.h>
#include <pthread.h>
#include <unistd.h>
#include "store/notify.h"
#include "util/util.h"

static int readable(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	return poll(&p, 1, 0) == 1;
}

static void test_topics_route_wake_ups(void **state)
{
	cof_notify *hub;
	cof_sub *a, *b, *both;
	cof_err err = {0};
	cof_topic va = cof_topic_volume("org_1", "vol_a"), vb = cof_topic_volume("org_1", "vol_b");
	cof_topic other_org = cof_topic_volume("org_2", "vol_a");
	cof_topic agent = cof_topic_agent("org_1", "vol_a"); /* same id, other kind */
	cof_topic two[2] = {va, cof_topic_session("rs_1")};

	(void)state;
	assert_int_equal(cof_notify_local_open(&hub, &err), 0);
	assert_int_equal(cof_notify_subscribe(hub, &va, 1, &a, &err), 0);
	assert_int_equal(cof_notify_subscribe(hub, &vb, 1, &b, &err), 0);
	assert_int_equal(cof_notify_subscribe(hub, two, 2, &both, &err), 0);
	assert_int_equal(cof_sub_gen(a), 0);
	assert_false(readable(a->fd));

	cof_notify_publish(hub, &other_org);
	cof_notify_publish(hub, &agent);
	assert_int_equal(cof_sub_gen(a), 0);
	assert_false(readable(a->fd));

	cof_notify_publish(hub, &va);
	assert_int_equal(cof_sub_gen(a), 1);
	assert_true(readable(a->fd));
	assert_int_equal(cof_sub_gen(b), 0);
	assert_false(readable(b->fd));
	assert_int_equal(cof_sub_gen(both), 1);
	cof_topic s = cof_topic_session("rs_1");
	cof_notify_publish(hub, &s);
	assert_int_equal(cof_sub_gen(both), 2);

	/* a wait on a generation already passed returns at once and drains */
	assert_int_equal(cof_sub_wait(a, 0, cof_mono_ms() + 5000), 1);
	/* a wait with nothing published ends at its deadline */
	int64_t t0 = cof_mono_ms();
	assert_int_equal(cof_sub_wait(b, 0, t0 + 100), 0);
	assert_true(cof_mono_ms() - t0 >= 100);
	assert_int_equal(cof_notify_subscribe(hub, two, COF_SUB_TOPICS + 1, &b, &err), -1);
	cof_err_clear(&err);

	cof_notify_unsubscribe(a);
	cof_notify_unsubscribe(both);
	cof_notify_publish(hub, &va); /* nobody left on it: nothing to touch */
	assert_false(cof_notify_closing(hub));
	cof_notify_shutdown(hub);
	assert_true(cof_notify_closing(hub));
	assert_true(readable(b->fd));
	assert_int_equal(cof_sub_gen(b), 1); /* shutdown moved it on */
	cof_notify_unsubscribe(b);
	cof_notify_close(hub);
}

struct waiter {
	cof_sub *sub;
	uint64_t seen, got;
};

static void *wait_thread(void *arg)
{
	struct waiter *w = arg;

	w->got = cof_sub_wait(w->sub, w->seen, cof_mono_ms() + 10000);
	return NULL;
}

/* The waiter looks (gen 0), a publish lands, then it waits: it wakes. And a
 * thread blocked in the wait wakes on a publish from another thread. */
static void test_no_wake_up_lost(void **state)
{
	cof_notify *hub;
	cof_err err = {0};
	cof_topic t = cof_topic_agent("org_1", "bot");
	struct waiter w = {0};
	pthread_t th;

	(void)state;
	assert_int_equal(cof_notify_local_open(&hub, &err), 0);
	assert_int_equal(cof_notify_subscribe(hub, &t, 1, &w.sub, &err), 0);
	w.seen = cof_sub_gen(w.sub);
	cof_notify_publish(hub, &t);
	assert_true(readable(w.sub->fd));
	assert_int_equal(cof_sub_wait(w.sub, w.seen, cof_mono_ms() + 10000), w.seen + 1);
	assert_false(readable(w.sub->fd)); /* drained */

	w.seen = cof_sub_gen(w.sub);
	assert_int_equal(pthread_create(&th, NULL, wait_thread, &w), 0);
	usleep(100 * 1000);
	cof_notify_publish(hub, &t);
	pthread_join(th, NULL);
	assert_int_equal(w.got, w.seen + 1);
	cof_notify_unsubscribe(w.sub);
	cof_notify_close(hub);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_topics_route_wake_ups),
		cmocka_unit_test(test_no_wake_up_lost),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
