/*
 * presence.c — whether an agent's events stream of a session is open on any
 * node, for `agent_disconnected` (docs/design.md, "Across nodes").
 *
 * With several nodes (--node), the agent's streams of one session may be open
 * on the node holding it and on others (mirrors, stream.c). Each node keeps
 * its own count in memory and stores it in a record of kind "relaystrm", id
 * SESSION/ + a hash of the node's name, whenever it goes from 0 to more or
 * back. The node whose last stream closes writes its 0 first and then reads
 * the others' records: when no node that is alive (a fresh heartbeat) has one
 * open, it adds `agent_disconnected` to the session's stored events and
 * publishes the session's topic, so the client's stream at the holding node
 * (and every replay) gets it. Two nodes closing their last streams together
 * both see the other's 0 at worst, so the event may come twice, never zero
 * times. One node (no --node) needs none of this: the count is the holder's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "store/nodes.h"
#include "relay/relay.h"
#include "store/store.h"

#define PRESENCE_KIND "relaystrm"

typedef struct pcount {
	struct pcount *next;
	char uid[32];
	int n;
} pcount;

/* The count of mirrors of `uid` on this node (created when `make`). */
static pcount *mirror_count(cof_relay *r, const char *uid, int make)
{
	pcount *p;

	for (p = r->mirrors; p; p = p->next)
		if (!strcmp(p->uid, uid))
			return p;
	if (!make || !(p = cof_calloc(1, sizeof *p)))
		return NULL;
	snprintf(p->uid, sizeof p->uid, "%s", uid);
	p->next = r->mirrors;
	r->mirrors = p;
	return p;
}

/* This node's record id for session `uid`. */
static void rec_id(const cof_relay *r, const char *uid, char out[48])
{
	char hex[65];

	if (cof_sha256_hex(r->node, strlen(r->node), hex))
		memset(hex, '0', 64), hex[64] = '\0';
	snprintf(out, 48, "%.24s/%.20s", uid, hex);
}

/* Stores this node's count of open agent streams of `uid`. */
static void store_count(cof_relay *r, const char *uid, const char *org, int n)
{
	char body[32];
	cof_staterow row = {.kind = PRESENCE_KIND, .ended = n == 0, .body = body};
	cof_err e = {0};

	rec_id(r, uid, row.id);
	snprintf(row.org, sizeof row.org, "%s", org);
	snprintf(row.node, sizeof row.node, "%s", r->node);
	snprintf(body, sizeof body, "{\"n\":%d}", n);
	if (cof_meta_state_put(r->st->meta, &row, &e))
		fprintf(stderr, "cofferd: relay session %s: cannot store its agent streams: %s\n",
			uid, e.msg);
	cof_err_clear(&e);
}

typedef struct other_ctx {
	cof_relay *r;
	int open;
} other_ctx;

/* One node's record: counts when another node, alive, has streams open. */
static int other_one(void *arg, const cof_staterow *row)
{
	other_ctx *o = arg;
	cof_err e = {0};

	if (row->ended || !strcmp(row->node, o->r->node))
		return 0;
	o->open |= cof_node_get(o->r->st, row->node, NULL, 0, NULL, &e) == 1;
	cof_err_clear(&e);
	return o->open;
}

void cof_relay_presence_open(cof_relay *r, rsession *s)
{
	pcount *p = s->mirror ? mirror_count(r, s->uid, 1) : NULL;
	rsession *held = NULL;

	if (s->mirror) {
		if (p)
			p->n++;
	} else {
		s->agent_streams++;
	}
	if (!r->node[0])
		return;
	for (rsession *x = r->sessions; x && !held; x = x->next)
		if (!strcmp(x->uid, s->uid))
			held = x;
	int here = (held ? held->agent_streams : 0) + (p ? p->n : 0);
	if (here == 1)
		store_count(r, s->uid, s->org, 1);
}

int cof_relay_presence_close(cof_relay *r, rsession *s)
{
	pcount *p = mirror_count(r, s->uid, 0);
	rsession *held = NULL;
	char prefix[40];
	cof_err e = {0};

	if (s->mirror && p && p->n > 0)
		p->n--;
	else if (!s->mirror && s->agent_streams > 0)
		s->agent_streams--;
	for (rsession *x = r->sessions; x && !held; x = x->next)
		if (!strcmp(x->uid, s->uid) && !x->mirror)
			held = x;
	if ((held ? held->agent_streams : 0) + (p ? p->n : 0) > 0)
		return 0;
	if (p) { /* none left here: forget the count */
		for (pcount **pp = &r->mirrors; *pp; pp = &(*pp)->next)
			if (*pp == p) {
				*pp = p->next;
				free(p);
				break;
			}
	}
	if (!r->node[0])
		return 1;
	store_count(r, s->uid, s->org, 0);
	other_ctx o = {r, 0};
	snprintf(prefix, sizeof prefix, "%.24s/", s->uid);
	if (cof_meta_state_scan(r->st->meta, PRESENCE_KIND, prefix, other_one, &o, &e))
		fprintf(stderr, "cofferd: relay session %s: %s\n", s->uid, e.msg);
	cof_err_clear(&e);
	return !o.open;
}

void cof_relay_presence_event(cof_relay *r, rsession *s)
{
	char name[64];
	int64_t id;
	cof_err e = {0};
	cof_topic t;

	if (!s->mirror) {
		cof_relay_event(r, s, EV_AGENT | EV_CLIENT, "agent_disconnected", NULL);
		return;
	}
	/* the holder is another node: the stored stream carries it there */
	snprintf(name, sizeof name, "%s%s", RELAY_EVENT_STREAM, s->uid);
	if (cof_meta_event_add(r->st->meta, name, EV_AGENT | EV_CLIENT,
			       "{\"type\":\"agent_disconnected\",\"data\":{}}", RELAY_EVENTS, &id,
			       &e))
		fprintf(stderr, "cofferd: relay session %s: cannot store an event: %s\n", s->uid,
			e.msg);
	cof_err_clear(&e);
	t = cof_topic_session(s->uid);
	cof_notify_publish(r->st->notify, &t);
}

typedef struct reset_ctx {
	cof_relay *r;
	char (*ids)[48];
	size_t n, cap;
} reset_ctx;

static int reset_one(void *arg, const cof_staterow *row)
{
	reset_ctx *x = arg;

	if (row->ended || strcmp(row->node, x->r->node))
		return 0;
	if (x->n == x->cap) {
		size_t cap = x->cap ? x->cap * 2 : 16;
		char (*ids)[48] = realloc(x->ids, cap * sizeof *ids);
		if (!ids)
			return 1;
		x->ids = ids, x->cap = cap;
	}
	snprintf(x->ids[x->n++], 48, "%s", row->id);
	return 0;
}

void cof_relay_presence_reset(cof_relay *r)
{
	reset_ctx x = {r, NULL, 0, 0};
	cof_err e = {0};

	if (!r->node[0])
		return;
	/* the streams this node had open went with the process that stopped */
	if (cof_meta_state_prune(r->st->meta, PRESENCE_KIND,
				 cof_now_ms() - RELAY_ENDED_KEEP * 1000LL, NULL, &e) ||
	    cof_meta_state_list(r->st->meta, PRESENCE_KIND, cof_now_ms(), reset_one, &x, &e))
		fprintf(stderr, "cofferd: relay: agent streams of the last run: %s\n", e.msg);
	cof_err_clear(&e);
	for (size_t i = 0; i < x.n; i++) {
		char body[] = "{\"n\":0}";
		cof_staterow row = {.kind = PRESENCE_KIND, .ended = 1, .body = body};
		memcpy(row.id, x.ids[i], sizeof row.id);
		snprintf(row.node, sizeof row.node, "%s", r->node);
		if (cof_meta_state_put(r->st->meta, &row, &e))
			fprintf(stderr, "cofferd: relay: %s\n", e.msg);
		cof_err_clear(&e);
	}
	free(x.ids);
}

void cof_relay_presence_free(cof_relay *r)
{
	for (pcount *p = r->mirrors, *n; p; p = n) {
		n = p->next;
		free(p);
	}
	r->mirrors = NULL;
}
