/*
 * records.c — turns' records in the store (kind "turn"; docs/design.md,
 * "State in the store"): what a turn is (agent, user, deadline, sandbox,
 * output types), whether it ended, and the node that holds its workspace.
 * A record is written when the turn is made and when it ends (DELETE or
 * expiry; not when cofferd stops). At start the live turns of this node come
 * back: a call that ran when the process died is gone with it, the workspace
 * (scratch, emptied at start) is made again at the next call, and the turn
 * goes on. Ended turns answer 410 from their record after the tombstone ring
 * forgot them, as long as the record is kept (COF_TURN_RECORD_KEEP).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "store/nodes.h"
#include "store/store.h"
#include "turn/turn.h"

#define COF_TURN_RECORD_KEEP (7 * 86400 * 1000LL) /* ms an ended turn's record is kept */

void cof_turn_record_save(cof_turns *ts, const cof_turn *t)
{
	json_t *b = json_pack("{s:s, s:s, s:I, s:I, s:I, s:i, s:I, s:{s:I, s:I, s:I, s:b, s:I,"
			      " s:I}}",
			      "agent", t->agent, "user", t->user, "created", (json_int_t)t->created,
			      "deadline", (json_int_t)t->deadline, "deadlineMs",
			      (json_int_t)(cof_now_ms() - (cof_mono_ms() - t->deadline_ms)),
			      "types", (int)t->types, "uid",
			      (json_int_t)t->uid, "sandbox",
			      "scratch", (json_int_t)t->sb.scratch, "turnDisk",
			      (json_int_t)t->sb.turn_disk, "userDisk", (json_int_t)t->sb.user_disk,
			      "network", t->sb.network, "memory", (json_int_t)t->sb.memory,
			      "processes", (json_int_t)t->sb.processes);

	cof_meta_state_save(ts->st->meta, "turn", t->id, t->org, ts->node, t->ended, b, "turn");
	json_decref(b);
}

/* A turn from its record, NULL when the record cannot be read. */
static cof_turn *turn_of(const cof_staterow *row)
{
	json_t *b = json_loads(row->body, 0, NULL), *sb = json_object_get(b, "sandbox");
	cof_turn *t = b ? cof_calloc(1, sizeof *t) : NULL;

	if (!t || !cof_json_str(b, "agent") || !cof_json_str(b, "user")) {
		free(t);
		json_decref(b);
		return NULL;
	}
	snprintf(t->id, sizeof t->id, "%.39s", row->id);
	snprintf(t->org, sizeof t->org, "%s", row->org);
	snprintf(t->agent, sizeof t->agent, "%s", cof_json_str(b, "agent"));
	snprintf(t->user, sizeof t->user, "%s", cof_json_str(b, "user"));
	t->created = cof_json_i64(b, "created");
	t->deadline = cof_json_i64(b, "deadline");
	/* stored as wall clock; the sweep measures the monotonic one */
	t->deadline_ms = cof_mono_ms() - (cof_now_ms() - cof_json_i64(b, "deadlineMs"));
	t->types = (unsigned)cof_json_i64(b, "types");
	t->uid = (uid_t)cof_json_i64(b, "uid");
	t->sb.scratch = cof_json_i64(sb, "scratch");
	t->sb.turn_disk = cof_json_i64(sb, "turnDisk");
	t->sb.user_disk = cof_json_i64(sb, "userDisk");
	t->sb.network = json_is_true(json_object_get(sb, "network"));
	t->sb.memory = cof_json_i64(sb, "memory");
	t->sb.processes = cof_json_i64(sb, "processes");
	json_decref(b);
	return t;
}

/* One stored record at start: this node's live turns back in the list. */
static int load_one(void *arg, const cof_staterow *row)
{
	cof_turns *ts = arg;
	cof_turn *t;

	if (row->ended || strcmp(row->node, ts->node))
		return 0; /* ended (410 from the record) or another node's */
	if (!(t = turn_of(row))) {
		fprintf(stderr, "cofferd: turn %s: its record cannot be read\n", row->id);
		return 0;
	}
	/* A call that ran when the process died is gone with it: whatever of it
	 * is left (bwrap outlives a SIGKILLed parent) is killed by its uid. */
	if (ts->root_user && t->uid >= COF_TURN_UID_BASE)
		cof_turn_kill_uid(ts, t);
	cof_turn_add(ts, t);
	return 0;
}

/* Ends the not-ended turns of `node` in their records when its heartbeat
 * says gone (store/nodes.h): *n = how many (0: none, or another node did it). */
static int end_node(cof_store *st, const char *node, int64_t *n, cof_err *err)
{
	return cof_meta_state_end_node(st->meta, "turn", node, cof_node_gone_before(),
				       "node_gone", n, err);
}

typedef struct gone_node {
	char name[64];
	int64_t beat;            /* its record's updated_at */
} gone_node;

typedef struct gone_ctx {
	const char *self;
	gone_node *nodes;
	size_t n, cap;
} gone_ctx;

/* One node's record: its name kept when its heartbeat is old. */
static int gone_one(void *arg, const cof_staterow *row)
{
	gone_ctx *g = arg;

	if (!strcmp(row->id, g->self) || cof_node_fresh(row->updated_at))
		return 0;
	if (g->n == g->cap) {
		size_t cap = g->cap ? g->cap * 2 : 8;
		gone_node *nodes = realloc(g->nodes, cap * sizeof *nodes);
		if (!nodes)
			return 1;
		g->nodes = nodes, g->cap = cap;
	}
	snprintf(g->nodes[g->n].name, sizeof g->nodes->name, "%s", row->id);
	g->nodes[g->n++].beat = row->updated_at;
	return 0;
}

/* The gone nodes whose turns are known ended, at the heartbeat seen then:
 * a node that stays gone writes no record, so its records are ended until
 * its heartbeat changes, and it costs no statement each round after the
 * first. Only the heartbeat thread (forward.c) calls; the list holds the
 * nodes gone at the last round, no more. */
static gone_node *ended_nodes;
static size_t ended_n;

/* True when `x` was seen ended at the same heartbeat. */
static int known_ended(const gone_node *x)
{
	for (size_t i = 0; i < ended_n; i++)
		if (!strcmp(ended_nodes[i].name, x->name) && ended_nodes[i].beat == x->beat)
			return 1;
	return 0;
}

void cof_turns_end_gone_nodes(cof_store *st, const char *self)
{
	gone_ctx g = {.self = self};
	cof_err e = {0};
	size_t kept = 0;
	int64_t n = 0;

	if (cof_meta_state_list(st->meta, "node", 0, gone_one, &g, &e)) {
		fprintf(stderr, "cofferd: reading the nodes' heartbeats: %s\n", e.msg);
		cof_err_clear(&e);
		free(g.nodes);
		return;
	}
	for (size_t i = 0; i < g.n; i++) {
		int ok = known_ended(&g.nodes[i]);
		if (!ok && end_node(st, g.nodes[i].name, &n, &e)) {
			fprintf(stderr, "cofferd: node %s is gone: cannot end its turns: %s\n",
				g.nodes[i].name, e.msg);
		} else if (!ok) {
			ok = 1;
			if (n > 0)
				fprintf(stderr, "cofferd: node %s is gone (no heartbeat for %lld s): "
					"%lld of its turns ended\n", g.nodes[i].name,
					(long long)(COF_NODE_GONE_MS / 1000), (long long)n);
		}
		cof_err_clear(&e);
		if (ok) /* remembered for the next round; a failure is tried again */
			g.nodes[kept++] = g.nodes[i];
	}
	free(ended_nodes);
	ended_nodes = g.nodes;
	ended_n = kept;
}

int cof_turns_load(cof_turns *ts, cof_err *err)
{
	int64_t since = cof_now_ms() - COF_TURN_RECORD_KEEP, n = 0;

	if (cof_meta_state_prune(ts->st->meta, "turn", since, NULL, err))
		return -1;
	/* Back after being declared gone: its turns ended then (or now, when no
	 * other node noticed), and they stay ended. */
	if (ts->node[0] && end_node(ts->st, ts->node, &n, err))
		return -1;
	if (n > 0)
		fprintf(stderr, "cofferd: this node (%s) was gone; %lld of its turns ended\n",
			ts->node, (long long)n);
	return cof_meta_state_list(ts->st->meta, "turn", cof_now_ms(), load_one, ts, err);
}

int cof_turn_record_miss(cof_turns *ts, const cof_principal *who, const char *id,
			 cof_err *err)
{
	cof_staterow row;
	cof_err e = {0};
	int found = cof_meta_state_get(ts->st->meta, "turn", id, &row, &e);

	if (found < 0) {
		*err = e;
		return -1;
	}
	if (!found || strcmp(row.org, who->org)) {
		free(found ? row.body : NULL);
		return cof_error(err, COF_ENOTFOUND, "no turn '%.64s'", id);
	}
	json_t *b = row.ended ? json_loads(row.body, 0, NULL) : NULL;
	const char *why = cof_json_str(b, "endReason");
	if (why && !strcmp(why, "node_gone")) {
		cof_error(err, COF_EGONE, "turn '%.64s' has ended: its node '%s' was gone (no "
			  "heartbeat for %d s)", id, row.node, COF_NODE_GONE_MS / 1000);
		cof_err_set(err, "reason", json_string("node_gone"));
		cof_err_set(err, "node", json_string(row.node));
	} else if (row.ended) {
		cof_error(err, COF_EGONE, "turn '%.64s' has ended", id);
	} else if (strcmp(row.node, ts->node)) {
		cof_error(err, COF_EGONE, "turn '%.64s' runs on node '%s', and this node (%s) "
			  "cannot reach it", id, row.node[0] ? row.node : "(unnamed)",
			  ts->node[0] ? ts->node : "unnamed");
	} else {
		cof_error(err, COF_EGONE, "turn '%.64s' was lost by this node", id);
	}
	json_decref(b);
	if (!row.ended)
		cof_err_set(err, "node", json_string(row.node));
	free(row.body);
	return -1;
}
