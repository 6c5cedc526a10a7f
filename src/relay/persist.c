/*
 * persist.c — relay sessions in the store (docs/design.md, "State in the
 * store"): each session's record (kind "relay") is rewritten after every
 * change of its status, mode, exclusions or counts; its events and its log
 * are stored streams (session.c). At start the registry is loaded from the
 * records, so a restart of cofferd, SIGKILL included, ends no session: one
 * that was active comes back paused (its client went with the process) and
 * goes on when the client reconnects; the time limit and the grace time are
 * measured from the stored times (wall clock in the record, monotonic in
 * memory, so a step of the wall clock ends nothing while cofferd runs).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "relay/relay.h"
#include "store/store.h"

/* A monotonic time as wall-clock ms now, and back: the record keeps wall
 * clock (the monotonic clock means nothing to another process or node). */
static int64_t to_wall(int64_t mono_ms)
{
	return mono_ms ? cof_now_ms() - (cof_mono_ms() - mono_ms) : 0;
}

static int64_t from_wall(int64_t wall_ms)
{
	return wall_ms ? cof_mono_ms() - (cof_now_ms() - wall_ms) : 0;
}

/* The record's body: what the registry holds of a session, less the ops in
 * flight (they belong to HTTP calls of this process). */
static json_t *session_body(const rsession *s)
{
	json_t *b = json_pack("{s:s, s:s, s:s, s:s, s:s, s:o, s:o, s:o, s:s, s:s}",
			      "agent", s->agent, "tokenHash", s->token_hash, "status",
			      cof_relay_status_name(s->status), "mode", cof_mode_name(s->mode),
			      "defaultMode", cof_mode_name(s->default_mode), "limits",
			      cof_limits_json(&s->limits), "exclusions",
			      s->user_excl ? json_incref(s->user_excl) : json_array(), "allowWrite",
			      cof_protect_allowances(s->prot), "client", s->client, "endReason",
			      s->end_reason);

	json_object_set_new(b, "counts", json_pack("{s:I, s:I, s:I}", "reads",
						   (json_int_t)s->reads, "writes",
						   (json_int_t)s->writes, "bytesWritten",
						   (json_int_t)s->bytes_written));
	json_object_set_new(b, "startedMs", json_integer(to_wall(s->started_ms)));
	json_object_set_new(b, "pausedMs", json_integer(to_wall(s->paused_ms)));
	json_object_set_new(b, "endedMs", json_integer(to_wall(s->ended_ms)));
	json_object_set_new(b, "startedAt", json_integer(s->started_at));
	json_object_set_new(b, "endedAt", json_integer(s->ended_at));
	return b;
}

void cof_relay_persist(cof_relay *r, rsession *s)
{
	if (s->forget) /* its agent was deleted (forget.c) */
		return;
	cof_relay_wq_save(r, s, session_body(s)); /* stored once r->mu is dropped */
}

/* A session from its record; NULL (err set) when the record cannot be read. */
rsession *cof_relay_session_of(const cof_staterow *row, cof_err *err)
{
	json_t *b = json_loads(row->body, 0, NULL), *counts = json_object_get(b, "counts");
	json_t *excl = json_object_get(b, "exclusions");
	rsession *s = b ? cof_relay_session_new() : NULL;
	int st = cof_relay_status_of(cof_json_str(b, "status"));
	const char *hash = cof_json_str(b, "tokenHash");

	if (!s || st < 0 || !hash || strlen(hash) != 64 ||
	    cof_mode_parse(cof_json_str(b, "mode"), &s->mode, err) ||
	    cof_mode_parse(cof_json_str(b, "defaultMode"), &s->default_mode, err) ||
	    cof_limits_parse(json_object_get(b, "limits"), &s->limits, err) ||
	    cof_excl_new(json_is_array(excl) ? excl : NULL, COF_EXCL_DEFAULTS | COF_EXCL_NOCASE,
			 &s->excl, err) ||
	    cof_protect_new(json_object_get(b, "allowWrite"), &s->prot, err)) {
		if (!err->code)
			cof_error(err, COF_EINTERNAL, "its record is not a relay session");
		cof_relay_session_free(s);
		json_decref(b);
		return NULL;
	}
	snprintf(s->uid, sizeof s->uid, "%.31s", row->id);
	snprintf(s->org, sizeof s->org, "%s", row->org);
	snprintf(s->agent, sizeof s->agent, "%s", cof_json_str(b, "agent") ? cof_json_str(b, "agent") : "");
	memcpy(s->token_hash, hash, 65);
	s->status = (rs_status)st;
	s->user_excl = json_is_array(excl) ? json_deep_copy(excl) : json_array();
	snprintf(s->client, sizeof s->client, "%s", cof_json_str(b, "client") ? cof_json_str(b, "client") : "");
	snprintf(s->end_reason, sizeof s->end_reason, "%s",
		 cof_json_str(b, "endReason") ? cof_json_str(b, "endReason") : "");
	s->started_ms = from_wall(cof_json_i64(b, "startedMs"));
	s->started_at = cof_json_i64(b, "startedAt");
	s->paused_ms = from_wall(cof_json_i64(b, "pausedMs"));
	s->ended_ms = from_wall(cof_json_i64(b, "endedMs"));
	s->ended_at = cof_json_i64(b, "endedAt");
	s->reads = cof_json_i64(counts, "reads");
	s->writes = cof_json_i64(counts, "writes");
	s->bytes_written = cof_json_i64(counts, "bytesWritten");
	json_decref(b);
	return s;
}

typedef struct load_ctx {
	cof_relay *r;
	int bad;
} load_ctx;

/* Adds one stored session to the registry (newest first: records come in
 * update order, so the list ends oldest last). */
static int load_one(void *arg, const cof_staterow *row)
{
	load_ctx *l = arg;
	cof_relay *r = l->r;
	cof_err e = {0};
	rsession *s;
	int64_t last = 0, first = 0;
	char name[64];

	if (row->node[0] && strcmp(row->node, r->node))
		return 0; /* another node's: it is read from the store when asked for */
	if (!(s = cof_relay_session_of(row, &e))) {
		fprintf(stderr, "cofferd: relay session %s: cannot load it: %s\n", row->id, e.msg);
		cof_err_clear(&e);
		l->bad++;
		return 0;
	}
	snprintf(name, sizeof name, "%s%s", RELAY_EVENT_STREAM, s->uid);
	if (cof_meta_event_last(r->st->meta, name, &last, &first, &e)) {
		fprintf(stderr, "cofferd: relay session %s: %s\n", row->id, e.msg);
		cof_err_clear(&e);
	}
	s->ev_next = (uint64_t)last;
	s->next = r->sessions;
	r->sessions = s;
	r->nsessions++;
	cof_relay_ops_load(r, s, "restart");
	if (s->status == RS_ACTIVE) {
		/* its client was attached to the process that stopped */
		s->attached = 1;
		cof_relay_detach(r, s, "restart");
	}
	return 0;
}

int cof_relay_load(cof_relay *r, cof_err *err)
{
	load_ctx l = {r, 0};
	static const char *const streams[] = {RELAY_EVENT_STREAM, RELAY_LOG_STREAM, NULL};
	int64_t keep_since = cof_now_ms() - RELAY_ENDED_KEEP * 1000LL;

	cof_relay_presence_reset(r);
	if (cof_meta_state_prune(r->st->meta, "relay", keep_since, streams, err) ||
	    cof_meta_state_list(r->st->meta, "relay", keep_since, load_one, &l, err))
		return -1;
	pthread_mutex_lock(&r->mu);
	for (rsession *s = r->sessions; s; s = s->next)
		cof_relay_tick(r, s);
	cof_relay_unlock(r); /* and stores what loading queued */
	return 0;
}
