/*
 * forget.c — an agent's relay sessions go with the agent (issue 12): when
 * the agent is deleted, each of its sessions held here that has not ended
 * ends with reason "agent_deleted" (session_ended to both sides, the client's
 * stream closed, its ops 410), and every stored record of its sessions goes:
 * the session's record, its log, its op records, its agent streams' counts
 * and its events. The events go last, when no stream of the session is left
 * to read session_ended from them (stream.c calls cof_relay_forget_done);
 * from the end on, nothing of the session is stored again. The ended session stays in this node's memory until pruned, so calls on
 * it answer 410 rather than 404 meanwhile.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "relay/relay.h"
#include "store/store.h"

/* Forgets every stored record of the session `uid`; `events` with its
 * events too. A failure is said on stderr: nothing else depends on it. */
static void forget_records(cof_relay *r, const char *uid, int events)
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

void cof_relay_forget_done(cof_relay *r, rsession *s)
{
	if (s->forget != 1 || s->refs > 0)
		return;
	forget_records(r, s->uid, 1);
	s->forget = 2;
}

typedef struct agent_ctx {
	const char *org, *agent;
	char (*uids)[48];
	size_t n, cap;
} agent_ctx;

/* One stored session: its uid kept when it is the agent's. */
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
		char (*uids)[48] = realloc(a->uids, cap * sizeof *uids);
		if (!uids)
			return 1;
		a->uids = uids, a->cap = cap;
	}
	snprintf(a->uids[a->n++], 48, "%s", row->id);
	return 0;
}

int cof_relay_agent_deleted(cof_relay *r, const char *org, const char *agent, cof_err *err)
{
	agent_ctx a = {org, agent, NULL, 0, 0};

	if (!r)
		return 0;
	/* the stored ones first: one held here writes its record again when
	 * it ends below, and is forgotten there */
	if (cof_meta_state_list(r->st->meta, "relay", 0, agent_one, &a, err)) {
		free(a.uids);
		return -1;
	}
	pthread_mutex_lock(&r->mu);
	for (size_t i = 0; i < a.n; i++) {
		int held = 0;
		for (rsession *s = r->sessions; s && !held; s = s->next)
			held = !s->mirror && !strcmp(s->uid, a.uids[i]);
		if (!held)
			forget_records(r, a.uids[i], 1);
	}
	for (rsession *s = r->sessions; s; s = s->next) {
		if (s->mirror || strcmp(s->org, org) || strcmp(s->agent, agent))
			continue;
		if (s->forget)
			continue;
		cof_relay_session_end(r, s, "agent_deleted");
		s->forget = 1;
		forget_records(r, s->uid, 0);
		cof_relay_forget_done(r, s);
	}
	pthread_mutex_unlock(&r->mu);
	free(a.uids);
	return 0;
}
