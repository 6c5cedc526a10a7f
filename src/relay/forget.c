/*
 * forget.c — an agent's relay sessions go with the agent (issue 12): when
 * the agent is deleted, each of its sessions held here that has not ended
 * ends with reason "agent_deleted" (session_ended to both sides, the client's
 * stream closed, its ops 410), and every stored record of its sessions goes:
 * the session's record, its log, its op records, its agent streams' counts
 * and its events. The events go last, when no stream of the session is left
 * to read session_ended from them (stream.c calls cof_relay_forget_done);
 * from the end on, nothing of the session is stored again. The ended
 * session stays in this node's memory until pruned, so calls on it answer
 * 410 rather than 404 meanwhile.
 *
 * With several nodes the agent may be deleted at a node that does not hold
 * a session: that node forgets the stored records, and the holder finds its
 * session's record gone and its agent absent the next time one of the
 * session's streams looks (at once when woken, else within a second;
 * cof_relay_forget_check), and ends it the same way.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "store/nodes.h"
#include "relay/relay.h"
#include "store/store.h"

/* Forgets every stored record of the session `uid` that this node does not
 * hold; `events` with its events too. A failure is said on stderr: nothing
 * else depends on it. */
static void forget_uid(cof_relay *r, const char *uid, int events)
{
	static const char *const all[] = {RELAY_LOG_STREAM, RELAY_EVENT_STREAM, NULL};
	static const char *const log_only[] = {RELAY_LOG_STREAM, NULL};
	static const char *const subs[] = {RELAY_OP_KIND, "relaystrm", NULL};
	cof_err e = {0};

	if (cof_meta_state_forget(r->st->meta, "relay", uid, events ? all : log_only, subs, &e))
		fprintf(stderr, "cofferd: relay session %s: cannot forget its records: %s\n", uid,
			e.msg);
	cof_err_clear(&e);
}

/* The same for a session held here: queued after what s queued before, so
 * no earlier write brings a record back (wqueue.c). */
static void forget_records(cof_relay *r, rsession *s, int events)
{
	(void)r;
	cof_relay_wq_forget(s, events);
}

void cof_relay_forget_done(cof_relay *r, rsession *s)
{
	if (s->forget != 1 || s->refs > 0)
		return;
	forget_records(r, s, 1);
	s->forget = 2;
}

/* Ends s ("agent_deleted") and forgets its records: its agent is deleted. */
static void end_forgotten(cof_relay *r, rsession *s)
{
	cof_relay_session_end(r, s, "agent_deleted");
	s->forget = 1;
	forget_records(r, s, 0);
	cof_relay_forget_done(r, s);
}

void cof_relay_forget_check(cof_relay *r, rsession *s)
{
	cof_staterow row;
	cof_agentrow a;
	cof_err e = {0};
	int found;

	if (!r->node[0] || s->mirror || s->forget || s->status == RS_ENDED)
		return;
	found = cof_meta_state_get(r->st->meta, "relay", s->uid, &row, &e);
	if (found > 0)
		free(row.body);
	cof_err_clear(&e);
	if (found != 0) /* stored (or the store did not answer): goes on */
		return;
	/* a record goes only when its session ended or its agent was deleted:
	 * the agent is asked too, so a record lost some other way ends nothing */
	if (cof_meta_agent_get(r->st->meta, s->org, s->agent, &a, &e) == 0)
		free(a.settings);
	else if (e.code == COF_ENOTFOUND)
		end_forgotten(r, s);
	cof_err_clear(&e);
}

typedef struct agent_ent {
	char uid[48];
	int elsewhere;           /* not ended, held by another node alive */
} agent_ent;

typedef struct agent_ctx {
	cof_relay *r;
	const char *org, *agent;
	agent_ent *ents;
	size_t n, cap;
} agent_ctx;

/* True when the session of `row` has not ended and another node, alive (a
 * fresh heartbeat), holds it. */
static int held_elsewhere(cof_relay *r, const cof_staterow *row)
{
	cof_err e = {0};
	int alive;

	if (row->ended || !row->node[0] || !strcmp(row->node, r->node))
		return 0;
	alive = cof_node_get(r->st, row->node, NULL, 0, NULL, &e) == 1;
	cof_err_clear(&e);
	return alive;
}

/* One stored session: kept when it is the agent's. */
static int agent_one(void *arg, const cof_staterow *row)
{
	agent_ctx *a = arg;
	json_t *b;
	int mine;

	if (strcmp(row->org, a->org) || !(b = json_loads(row->body, 0, NULL)))
		return 0;
	mine = !strcmp(cof_json_str(b, "agent") ? cof_json_str(b, "agent") : "", a->agent);
	json_decref(b);
	if (!mine)
		return 0;
	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 8;
		agent_ent *ents = realloc(a->ents, cap * sizeof *ents);
		if (!ents)
			return 1;
		a->ents = ents, a->cap = cap;
	}
	snprintf(a->ents[a->n].uid, sizeof a->ents->uid, "%s", row->id);
	a->ents[a->n++].elsewhere = held_elsewhere(a->r, row);
	return 0;
}

int cof_relay_agent_deleted(cof_relay *r, const char *org, const char *agent, cof_err *err)
{
	agent_ctx a = {r, org, agent, NULL, 0, 0};

	if (!r)
		return 0;
	/* the stored ones first: one held here writes its record again when
	 * it ends below, and is forgotten there */
	if (cof_meta_state_list(r->st->meta, "relay", 0, agent_one, &a, err)) {
		free(a.ents);
		return -1;
	}
	pthread_mutex_lock(&r->mu);
	for (size_t i = 0; i < a.n; i++) {
		int held = 0;
		for (rsession *s = r->sessions; s && !held; s = s->next)
			held = !s->mirror && !strcmp(s->uid, a.ents[i].uid);
		if (held)
			continue;
		/* a session another node holds keeps its events for that node
		 * to add session_ended after them (ids go on from the last), and
		 * to forget them when its streams close */
		forget_uid(r, a.ents[i].uid, !a.ents[i].elsewhere);
		cof_topic t = cof_topic_session(a.ents[i].uid);
		cof_notify_publish(r->st->notify, &t); /* the holder looks now */
	}
	for (rsession *s = r->sessions; s; s = s->next) {
		if (s->mirror || strcmp(s->org, org) || strcmp(s->agent, agent))
			continue;
		if (!s->forget)
			end_forgotten(r, s);
	}
	cof_relay_unlock(r);
	free(a.ents);
	return 0;
}
