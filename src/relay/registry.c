/*
 * registry.c — the relay's session registry: the sessions held by this node,
 * by id (r->sessions, newest first), their lifetime (made, looked up, moved
 * here from another node, pruned, freed) and the one mutex r->mu with its
 * waits and wake-ups. Owns struct cof_relay and the list; what a session
 * does (its life cycle, events, log and the agent's calls) is session.c, its
 * store writes are queued and stored after r->mu is dropped (wqueue.c).
 *
 * Lifetime: a session is freed only by pruning (ended, RELAY_ENDED_KEEP
 * past or the registry full) or when its client moved to another node, and
 * never while s->refs > 0: a call, a stream or a thread storing its writes
 * holds a reference.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "store/nodes.h"
#include "relay/relay.h"
#include "store/store.h"
static const char *status_name[] = {"waiting", "active", "paused", "ended"};

int cof_relay_open(cof_store *st, const cof_relay_opts *opts, cof_relay **out,
		   cof_err *err)
{
	cof_relay *r = cof_calloc(1, sizeof *r);

	if (!r)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	r->st = st;
	r->grace_ms = (opts && opts->grace_seconds > 0 ? opts->grace_seconds
						       : RELAY_DEFAULT_GRACE) * 1000;
	r->op_wait_ms = opts && opts->op_wait_ms > 0 ? opts->op_wait_ms
						     : RELAY_DEFAULT_OP_WAIT_MS;
	r->sessions_max = opts && opts->sessions_max > 0 ? (size_t)opts->sessions_max
							 : RELAY_SESSIONS_MAX;
	r->sessions_per_org = opts && opts->sessions_per_org > 0
				      ? (size_t)opts->sessions_per_org : RELAY_SESSIONS_PER_ORG;
	snprintf(r->node, sizeof r->node, "%s", opts && opts->node ? opts->node : "");
	pthread_mutex_init(&r->mu, NULL);
	if (cof_relay_load(r, err)) {
		cof_relay_close(r);
		return -1;
	}
	*out = r;
	return 0;
}

void cof_relay_shutdown(cof_relay *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->mu);
	r->closing = 1;
	for (rsession *s = r->sessions; s; s = s->next)
		cof_relay_wake(r, s);
	cof_relay_unlock(r);
}

void cof_relay_op_free(rop *op)
{
	free(op->path);
	json_decref(op->msg);
	json_decref(op->result);
	cof_err_clear(&op->error);
	free(op);
}

rsession *cof_relay_session_new(void)
{
	rsession *s = cof_calloc(1, sizeof(rsession));

	if (s)
		pthread_mutex_init(&s->wmu, NULL);
	return s;
}

void cof_relay_session_free(rsession *s)
{
	if (!s)
		return;
	for (rop *op = s->ops, *n; op; op = n) {
		n = op->next;
		cof_relay_op_free(op);
	}
	cof_excl_free(s->excl);
	json_decref(s->user_excl);
	cof_protect_free(s->prot);
	cof_relay_wq_free(s); /* only at close: a thread storing s holds a reference */
	pthread_mutex_destroy(&s->wmu);
	free(s);
}

#define session_free cof_relay_session_free

const char *cof_relay_status_name(rs_status st)
{
	return status_name[st];
}

int cof_relay_status_of(const char *name)
{
	for (int i = 0; name && i < 4; i++)
		if (!strcmp(status_name[i], name))
			return i;
	return -1;
}

void cof_relay_close(cof_relay *r)
{
	if (!r)
		return;
	for (rsession *s = r->sessions, *n; s; s = n) {
		n = s->next;
		session_free(s);
	}
	cof_relay_presence_free(r);
	pthread_mutex_destroy(&r->mu);
	free(r);
}
/* Drops ended sessions past RELAY_ENDED_KEEP, and the oldest ended ones while
 * the registry is full; never one a call still points at. */
static void prune(cof_relay *r)
{
	int full = r->nsessions >= r->sessions_max;

	for (int pass = 0; pass < 2; pass++)
		for (rsession **pp = &r->sessions; *pp;) {
			rsession *s = *pp;
			int old = s->status == RS_ENDED && !s->refs &&
				  (cof_mono_ms() - s->ended_ms >= RELAY_ENDED_KEEP * 1000LL ||
				   (pass == 1 && full));
			if (old) {
				*pp = s->next;
				session_free(s);
				r->nsessions--;
				full = r->nsessions >= r->sessions_max;
			} else {
				pp = &s->next;
			}
		}
}

/* Constant-time comparison of two hex hashes of 64 characters. */
static int hash_equal(const char *a, const char *b)
{
	unsigned char d = 0;

	for (size_t i = 0; i < 64; i++)
		d |= (unsigned char)(a[i] ^ b[i]);
	return d == 0;
}

/* True when the stored record of a session this node holds, not attached
 * here, names another node: its client attached there (cof_relay_claim). */
static int moved(cof_relay *r, const rsession *s)
{
	cof_staterow row;
	cof_err e = {0};
	int found, gone;

	if (!r->node[0] || s->attached || s->status == RS_ENDED)
		return 0;
	found = cof_meta_state_get(r->st->meta, "relay", s->uid, &row, &e);
	cof_err_clear(&e);
	if (found <= 0)
		return 0;
	gone = row.node[0] && strcmp(row.node, r->node);
	free(row.body);
	return gone;
}

/* The session `uid` in the registry; one whose client attached at another
 * node is dropped from it (once nothing here points at it). */
static rsession *lookup(cof_relay *r, const char *uid)
{
	for (rsession **pp = &r->sessions; *pp; pp = &(*pp)->next) {
		rsession *s = *pp;
		if (strcmp(s->uid, uid))
			continue;
		if (!moved(r, s))
			return s;
		if (!s->refs) {
			*pp = s->next;
			session_free(s);
			r->nsessions--;
		}
		return NULL;
	}
	return NULL;
}

/* 1 when node `name` is gone or unknown (store/nodes.h); a store error
 * counts as gone, as before: the claim then goes ahead. */
static int node_gone(cof_relay *r, const char *name)
{
	cof_err e = {0};
	int alive = cof_node_get(r->st, name, NULL, 0, NULL, &e);

	cof_err_clear(&e);
	return alive != 1;
}

rsession *cof_relay_claim(cof_relay *r, const char *uid, const char *token, cof_err *err)
{
	cof_staterow row;
	rsession *s = NULL;
	char h[65];
	int found;

	if (!r->node[0] || !token)
		return NULL;
	found = cof_meta_state_get(r->st->meta, "relay", uid, &row, err);
	if (found <= 0)
		return NULL;
	cof_err_clear(err);
	if (!(s = cof_relay_session_of(&row, err)) || cof_sha256_hex(token, strlen(token), h) ||
	    !hash_equal(h, s->token_hash)) {
		cof_relay_session_free(s);
		free(row.body);
		cof_err_clear(err);
		cof_error(err, COF_EUNAUTHORIZED, "unknown relay session or wrong connect token");
		return NULL;
	}
	if (s->status == RS_ACTIVE && !node_gone(r, row.node)) {
		cof_error(err, COF_ECONFLICT, "another client is attached to relay session '%s' "
			  "(at node '%s')", s->uid, row.node);
		cof_relay_session_free(s);
		free(row.body);
		return NULL;
	}
	free(row.body);
	char name[64];
	int64_t last = 0, first = 0;
	snprintf(name, sizeof name, "%s%s", RELAY_EVENT_STREAM, s->uid);
	if (!cof_meta_event_last(r->st->meta, name, &last, &first, err))
		s->ev_next = (uint64_t)last;
	cof_err_clear(err);
	if (s->status == RS_ACTIVE) { /* its node is gone with its client */
		s->attached = 1;
		cof_relay_detach(r, s, "node_gone");
	}
	cof_relay_add(r, s);
	cof_relay_persist(r, s); /* the record names this node now */
	cof_relay_ops_load(r, s, "moved");
	return s;
}

/* A session this node does not hold: COF_EUNAVAILABLE naming the node that
 * holds it (extra "node": the HTTP layer carries the request there) when its
 * record says so, else COF_ENOTFOUND. */
static void elsewhere(cof_relay *r, const char *org, const char *uid, cof_err *err)
{
	cof_staterow row;
	cof_err e = {0};
	int found = r->node[0] ? cof_meta_state_get(r->st->meta, "relay", uid, &row, &e) : 0;

	cof_err_clear(&e);
	if (found > 0 && row.node[0] && strcmp(row.node, r->node) &&
	    (!org || !strcmp(row.org, org))) {
		cof_error(err, COF_EUNAVAILABLE, "relay session '%.64s' is held by node '%s'", uid,
			  row.node);
		cof_err_set(err, "node", json_string(row.node));
	} else if (org) {
		cof_error(err, COF_ENOTFOUND, "no relay session '%.64s'", uid);
	} else {
		cof_error(err, COF_EUNAUTHORIZED, "unknown relay session or wrong connect token");
	}
	if (found > 0)
		free(row.body);
}

rsession *cof_relay_find(cof_relay *r, const cof_principal *who, const char *uid, cof_err *err)
{
	rsession *s = lookup(r, uid);

	if (!s) {
		elsewhere(r, who->org, uid, err);
		return NULL;
	}
	if (strcmp(s->org, who->org) || (who->agent[0] && strcmp(who->agent, s->agent))) {
		cof_error(err, COF_ENOTFOUND, "no relay session '%.64s'", uid);
		return NULL;
	}
	cof_relay_tick(r, s);
	cof_relay_wq_sync(s); /* what the caller answers is stored first */
	return s;
}

rsession *cof_relay_find_client(cof_relay *r, const char *uid, const char *token, cof_err *err)
{
	rsession *s = lookup(r, uid);
	char h[65];

	if (!s && token) {
		elsewhere(r, NULL, uid, err);
		return NULL;
	}
	if (!token || cof_sha256_hex(token, strlen(token), h) || !s ||
	    !hash_equal(h, s->token_hash)) {
		cof_error(err, COF_EUNAUTHORIZED,
			  "unknown relay session or wrong connect token");
		return NULL;
	}
	cof_relay_tick(r, s);
	cof_relay_wq_sync(s);
	return s;
}

void cof_relay_unref(rsession *s)
{
	s->refs--;
}

/* Whether `org` may open one more session: COF_ERATELIMIT naming the limit
 * when it has sessions_per_org not ended, or when the registry still holds
 * sessions_max after pruning. The per-org cap comes first, so that one
 * organization's sessions cannot take every place from the others. Time
 * limits and grace times are applied first, so an expired session that
 * nobody looked at does not count. */
int cof_relay_room(cof_relay *r, const char *org, cof_err *err)
{
	size_t mine = 0;

	for (rsession *s = r->sessions; s; s = s->next) {
		cof_relay_tick(r, s);
		mine += s->status != RS_ENDED && !strcmp(s->org, org);
	}
	prune(r);
	if (mine >= r->sessions_per_org)
		return cof_error(err, COF_ERATELIMIT,
				 "this organization has %zu relay sessions open; the limit is "
				 "%zu per organization (end one first)", mine,
				 r->sessions_per_org);
	if (r->nsessions >= r->sessions_max)
		return cof_error(err, COF_ERATELIMIT,
				 "%zu relay sessions are open; the limit is %zu for the server",
				 r->nsessions, r->sessions_max);
	return 0;
}

void cof_relay_add(cof_relay *r, rsession *s)
{
	s->next = r->sessions;
	r->sessions = s;
	r->nsessions++;
}


void cof_relay_wake(cof_relay *r, rsession *s)
{
	cof_topic t = cof_topic_session(s->uid);

	cof_notify_publish(r->st->notify, &t);
}

void cof_relay_wait(cof_relay *r, rsession *s, int64_t until_ms)
{
	cof_topic t = cof_topic_session(s->uid);
	cof_sub *sub;
	cof_err e = {0};
	uint64_t gen;

	/* Subscribed under r->mu, where the caller looked at the session and
	 * where every change to it is published: nothing is missed. What this
	 * thread queued is stored before it sleeps (wqueue.c): the op it waits
	 * for is sent only once its record is. */
	if (cof_notify_subscribe(r->st->notify, &t, 1, &sub, &e)) {
		cof_err_clear(&e);
		cof_relay_unlock(r);
		usleep(50 * 1000); /* no fd to wait on: look again soon */
		pthread_mutex_lock(&r->mu);
		return;
	}
	gen = cof_sub_gen(sub);
	cof_relay_unlock(r);
	cof_sub_wait(sub, gen, until_ms);
	pthread_mutex_lock(&r->mu);
	cof_notify_unsubscribe(sub);
}
