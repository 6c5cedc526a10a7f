/*
 * test_meta_state_ops.c — the stored-state members of meta.h added for issue
 * 12 (state_scan, state_delete, state_swap, state_end_node, state_forget)
 * and what agent_delete takes with it (its events, its keys), on whichever backend $COFFER_TEST_META_URL
 * names (default: a fresh SQLite file). Ids are this run's own, so it runs
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
#include "store/meta.h"
#include "meta_fx.h"

static cof_meta *m;
static meta_fx fx;
static char run[32];

static int setup(void **state)
{

	(void)state;
	cof_id_new("r", run, 12);
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

/* Puts record (kind, run + suffix) held by `node` with `body`. */
static void put(const char *kind, const char *suffix, const char *node, int ended,
		const char *body)
{
	cof_staterow r = {.ended = ended, .body = (char *)body};
	cof_err err = {0};

	snprintf(r.kind, sizeof r.kind, "%s", kind);
	snprintf(r.id, sizeof r.id, "%s%s", run, suffix);
	snprintf(r.org, sizeof r.org, "org_%s", run);
	snprintf(r.node, sizeof r.node, "%s", node);
	assert_int_equal(cof_meta_state_put(m, &r, &err), 0);
}

typedef struct seen {
	char ids[8][48];
	int n;
} seen;

static int collect(void *ctx, const cof_staterow *r)
{
	seen *s = ctx;

	if (s->n < 8)
		snprintf(s->ids[s->n++], 48, "%s", r->id + strlen(run));
	return 0;
}

static void test_scan_and_delete(void **state)
{
	char prefix[48];
	seen s = {0};
	cof_err err = {0};

	(void)state;
	put("t-scan", "s/op_b", "n", 0, "{}");
	put("t-scan", "s/op_a", "n", 1, "{}");
	put("t-scan", "s0", "n", 0, "{}");        /* the byte after '/' */
	put("t-scan", "sa/op_c", "n", 0, "{}");   /* another session */
	put("t-other", "s/op_d", "n", 0, "{}");   /* another kind */
	snprintf(prefix, sizeof prefix, "%ss/", run);
	assert_int_equal(cof_meta_state_scan(m, "t-scan", prefix, collect, &s, &err), 0);
	assert_int_equal(s.n, 2);
	assert_string_equal(s.ids[0], "s/op_a");  /* in id order, ended or not */
	assert_string_equal(s.ids[1], "s/op_b");
	snprintf(prefix, sizeof prefix, "%ss/op_a", run);
	assert_int_equal(cof_meta_state_delete(m, "t-scan", prefix, &err), 0);
	assert_int_equal(cof_meta_state_delete(m, "t-scan", prefix, &err), 0); /* none: fine */
	memset(&s, 0, sizeof s);
	snprintf(prefix, sizeof prefix, "%ss/", run);
	assert_int_equal(cof_meta_state_scan(m, "t-scan", prefix, collect, &s, &err), 0);
	assert_int_equal(s.n, 1);
	assert_string_equal(s.ids[0], "s/op_b");
}

static void test_swap_one_winner(void **state)
{
	cof_staterow r = {.kind = "t-swap", .body = "{\"seq\":1}"}, got;
	cof_err err = {0};

	(void)state;
	snprintf(r.id, sizeof r.id, "%scur", run);
	assert_int_equal(cof_meta_state_swap(m, &r, NULL, &err), 1);   /* inserted */
	assert_int_equal(cof_meta_state_swap(m, &r, NULL, &err), 0);   /* one was there */
	r.body = "{\"seq\":5}";
	assert_int_equal(cof_meta_state_swap(m, &r, "{\"seq\":1}", &err), 1);
	r.body = "{\"seq\":4}"; /* a second writer that read seq 1 loses */
	assert_int_equal(cof_meta_state_swap(m, &r, "{\"seq\":1}", &err), 0);
	assert_int_equal(cof_meta_state_get(m, "t-swap", r.id, &got, &err), 1);
	assert_string_equal(got.body, "{\"seq\":5}");
	free(got.body);
}

static void test_end_node_once_and_only_when_gone(void **state)
{
	char node[48], alive[48], id[48];
	cof_staterow got;
	cof_err err = {0};
	int64_t n = -1;

	(void)state;
	snprintf(node, sizeof node, "gone-%s", run);
	snprintf(alive, sizeof alive, "alive-%s", run);
	{
		cof_staterow hb = {.kind = "node", .body = "{}"};
		snprintf(hb.id, sizeof hb.id, "%s", alive);
		snprintf(hb.node, sizeof hb.node, "%s", alive);
		assert_int_equal(cof_meta_state_put(m, &hb, &err), 0);
		snprintf(hb.id, sizeof hb.id, "%s", node);
		snprintf(hb.node, sizeof hb.node, "%s", node);
		assert_int_equal(cof_meta_state_put(m, &hb, &err), 0);
	}
	put("turn", "t1", node, 0, "{\"agent\":\"a\"}");
	put("turn", "t2", node, 0, "{\"agent\":\"b\"}");
	put("turn", "t3", node, 1, "{\"agent\":\"c\"}");   /* ended already */
	put("turn", "t4", alive, 0, "{\"agent\":\"d\"}");
	/* its heartbeat is fresh: nothing ends */
	assert_int_equal(cof_meta_state_end_node(m, "turn", node, cof_now_ms() - 15000,
						 "node_gone", &n, &err), 0);
	assert_int_equal(n, 0);
	/* gone (its heartbeat older than the cutoff): its two live turns end, once */
	assert_int_equal(cof_meta_state_end_node(m, "turn", node, cof_now_ms() + 1000,
						 "node_gone", &n, &err), 0);
	assert_int_equal(n, 2);
	assert_int_equal(cof_meta_state_end_node(m, "turn", node, cof_now_ms() + 1000,
						 "node_gone", &n, &err), 0);
	assert_int_equal(n, 0);
	snprintf(id, sizeof id, "%st1", run);
	assert_int_equal(cof_meta_state_get(m, "turn", id, &got, &err), 1);
	assert_int_equal(got.ended, 1);
	assert_non_null(strstr(got.body, "\"endReason\""));
	assert_non_null(strstr(got.body, "node_gone"));
	assert_non_null(strstr(got.body, "\"agent\""));
	free(got.body);
	snprintf(id, sizeof id, "%st4", run);
	assert_int_equal(cof_meta_state_get(m, "turn", id, &got, &err), 1);
	assert_int_equal(got.ended, 0);   /* another node's */
	free(got.body);
	/* a node never registered has nothing ended for it */
	assert_int_equal(cof_meta_state_end_node(m, "turn", "never", cof_now_ms() + 1000,
						 "node_gone", &n, &err), 0);
	assert_int_equal(n, 0);
}

static int count(void *ctx, int64_t id, unsigned to, const char *body)
{
	(void)id, (void)to, (void)body;
	++*(int *)ctx;
	return 0;
}

static void test_agent_delete_takes_its_events(void **state)
{
	cof_agentrow a = {.settings = "{}"};
	char stream[200], other[200];
	cof_staterow cur = {.kind = "agentchg"};
	cof_err err = {0};
	int64_t id;
	int n = 0;

	(void)state;
	snprintf(a.org, sizeof a.org, "org_%s", run);
	snprintf(a.id, sizeof a.id, "ag-%s", run);
	snprintf(a.workspace, sizeof a.workspace, "vol_%s", run);
	a.created_at = cof_now();
	assert_int_equal(cof_meta_agent_put(m, &a, &err), 0);
	snprintf(stream, sizeof stream, "agent:%s:%s", a.org, a.id);
	snprintf(other, sizeof other, "agent:%s:%s-2", a.org, a.id);
	assert_int_equal(cof_meta_event_add(m, stream, 1, "{\"type\":\"x\"}", 10, &id, &err), 0);
	assert_int_equal(cof_meta_event_add(m, other, 1, "{\"type\":\"x\"}", 10, &id, &err), 0);
	snprintf(cur.id, sizeof cur.id, "ac_%s", run);
	snprintf(cur.org, sizeof cur.org, "%s", a.org);
	char body[200];
	snprintf(body, sizeof body, "{\"agent\":\"%s\",\"seq\":3}", a.id);
	cur.body = body;
	assert_int_equal(cof_meta_state_put(m, &cur, &err), 0);
	assert_int_equal(cof_meta_agent_delete(m, a.org, a.id, &err), 0);
	assert_int_equal(cof_meta_event_list(m, stream, 0, 10, count, &n, &err), 0);
	assert_int_equal(n, 0);
	assert_int_equal(cof_meta_event_list(m, other, 0, 10, count, &n, &err), 0);
	assert_int_equal(n, 1);   /* another agent's stays */
	cof_staterow got;
	assert_int_equal(cof_meta_state_get(m, "agentchg", cur.id, &got, &err), 0);
}

/* state_forget: the record, its streams and its sub-records by "id/", and
 * nothing of an id that only starts like it. */
static void test_forget_takes_exactly_its_records(void **state)
{
	static const char *const streams[] = {"t-ev:", NULL};
	static const char *const subs[] = {"t-sub", NULL};
	char id[48], near[48], sname[80];
	cof_err err = {0};
	seen s = {0};
	int64_t eid;
	int n = 0;

	(void)state;
	put("t-main", "s1", "n", 0, "{}");
	put("t-main", "s10", "n", 0, "{}");
	put("t-sub", "s1/a", "n", 0, "{}");
	put("t-sub", "s1/b", "n", 1, "{}");
	put("t-sub", "s10/a", "n", 0, "{}");
	put("t-sub", "s1", "n", 0, "{}");
	snprintf(id, sizeof id, "%ss1", run);
	snprintf(near, sizeof near, "%ss10", run);
	snprintf(sname, sizeof sname, "t-ev:%s", id);
	assert_int_equal(cof_meta_event_add(m, sname, 1, "{}", 10, &eid, &err), 0);
	snprintf(sname, sizeof sname, "t-ev:%s", near);
	assert_int_equal(cof_meta_event_add(m, sname, 1, "{}", 10, &eid, &err), 0);
	assert_int_equal(cof_meta_state_forget(m, "t-main", id, streams, subs, &err), 0);
	cof_staterow got;
	assert_int_equal(cof_meta_state_get(m, "t-main", id, &got, &err), 0);
	assert_int_equal(cof_meta_state_get(m, "t-main", near, &got, &err), 1);
	free(got.body);
	assert_int_equal(cof_meta_state_scan(m, "t-sub", run, collect, &s, &err), 0);
	assert_int_equal(s.n, 2); /* s1 itself (not under s1/) and s10/a */
	assert_string_equal(s.ids[0], "s1");
	assert_string_equal(s.ids[1], "s10/a");
	snprintf(sname, sizeof sname, "t-ev:%s", id);
	assert_int_equal(cof_meta_event_list(m, sname, 0, 10, count, &n, &err), 0);
	assert_int_equal(n, 0);
	snprintf(sname, sizeof sname, "t-ev:%s", near);
	assert_int_equal(cof_meta_event_list(m, sname, 0, 10, count, &n, &err), 0);
	assert_int_equal(n, 1);
	/* nothing left: fine */
	assert_int_equal(cof_meta_state_forget(m, "t-main", id, streams, subs, &err), 0);
}

/* agent_delete revokes the keys bound to the agent, and only those. */
static void test_agent_delete_revokes_its_keys(void **state)
{
	cof_agentrow a = {.settings = "{}"};
	cof_keyrow k = {0}, k2 = {0}, got;
	cof_err err = {0};

	(void)state;
	snprintf(a.org, sizeof a.org, "org_%s", run);
	snprintf(a.id, sizeof a.id, "agk-%s", run);
	snprintf(a.workspace, sizeof a.workspace, "volk_%s", run);
	a.created_at = cof_now();
	assert_int_equal(cof_meta_agent_put(m, &a, &err), 0);
	snprintf(k.hash, sizeof k.hash, "%.12s%052d", run, 1);
	snprintf(k.id, sizeof k.id, "k_a%.16s", run);
	snprintf(k.org, sizeof k.org, "%s", a.org);
	snprintf(k.agent, sizeof k.agent, "%s", a.id);
	k.created_at = cof_now();
	k2 = k;
	snprintf(k2.hash, sizeof k2.hash, "%.12s%052d", run, 2);
	snprintf(k2.id, sizeof k2.id, "k_b%.16s", run);
	snprintf(k2.agent, sizeof k2.agent, "agk2-%s", run);
	assert_int_equal(cof_meta_key_add(m, &k, &err), 0);
	assert_int_equal(cof_meta_key_add(m, &k2, &err), 0);
	assert_int_equal(cof_meta_agent_delete(m, a.org, a.id, &err), 0);
	assert_int_equal(cof_meta_key_find(m, k.hash, &got, &err), 0);
	assert_true(got.revoked_at > 0);
	assert_int_equal(cof_meta_key_find(m, k2.hash, &got, &err), 0);
	assert_int_equal(got.revoked_at, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scan_and_delete),
		cmocka_unit_test(test_swap_one_winner),
		cmocka_unit_test(test_end_node_once_and_only_when_gone),
		cmocka_unit_test(test_agent_delete_takes_its_events),
		cmocka_unit_test(test_forget_takes_exactly_its_records),
		cmocka_unit_test(test_agent_delete_revokes_its_keys),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
