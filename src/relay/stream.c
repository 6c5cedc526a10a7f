/*
 * stream.c — the two kinds of relay streams and the client's calls.
 *
 * The agent's events stream replays the session's events kept so far (the
 * last RELAY_EVENTS) after the id it was given, then follows. The client's
 * operations stream carries the ops sent to that attachment and the events
 * meant for the user (write_blocked, session_ended, agent_disconnected) from
 * the moment it attached. A client stream that is no longer the attached one
 * (the session ended, paused for idleness, or cofferd stops) ends.
 */
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include "relay/relay.h"
#include "store/store.h"

struct cof_relay_stream {
	cof_relay *r;
	rsession *s;         /* referenced while the stream is open */
	int client;          /* the client's operations stream */
	uint64_t gen;        /* its attachment */
	uint64_t pos;        /* the last event id delivered */
	json_t *hello;       /* the client's `mode` event, sent first (owned) */
	uint64_t end_seq;    /* it ends once s's writes up to this are stored */
};

static rsession *mirror_open(cof_relay *r, const cof_principal *who, const char *uid,
			     cof_err *err);
static rsession *mirror_read(cof_relay *r, const cof_principal *who, const char *uid,
			     rsession *into, cof_err *err);

static cof_relay_stream *stream_new(cof_relay *r, rsession *s, int client, uint64_t pos)
{
	cof_relay_stream *x = cof_calloc(1, sizeof *x);

	if (!x)
		return NULL;
	x->r = r;
	x->s = s;
	x->client = client;
	x->gen = s->gen;
	x->pos = pos;
	s->refs++;
	return x;
}

int cof_relay_events_open(cof_relay *r, const cof_principal *who, const char *uid,
			  uint64_t after, cof_relay_stream **out, cof_err *err)
{
	rsession *s;

	pthread_mutex_lock(&r->mu);
	s = cof_relay_find(r, who, uid, err);
	if (!s && json_object_get(err->extra, "node"))
		s = mirror_open(r, who, uid, err);
	if (s && !(*out = stream_new(r, s, 0, after))) {
		if (s->mirror)
			cof_relay_session_free(s);
		s = NULL, cof_error(err, COF_EINTERNAL, "out of memory");
	}
	if (s)
		cof_relay_presence_open(r, s);
	cof_relay_unlock(r);
	return s ? 0 : -1;
}

/* Reads session `uid`'s record into a mirror (or refreshes `into`): its
 * status and its last event id, as the node holding it stored them. */
static rsession *mirror_read(cof_relay *r, const cof_principal *who, const char *uid,
			     rsession *into, cof_err *err)
{
	cof_staterow row;
	rsession *s;
	char name[64];
	int64_t last = 0, first = 0;
	int found = cof_meta_state_get(r->st->meta, "relay", uid, &row, err);

	if (found <= 0)
		return NULL;
	s = cof_relay_session_of(&row, err);
	free(row.body);
	if (!s)
		return NULL;
	if (strcmp(s->org, who->org) || (who->agent[0] && strcmp(who->agent, s->agent))) {
		cof_relay_session_free(s);
		cof_error(err, COF_ENOTFOUND, "no relay session '%.64s'", uid);
		return NULL;
	}
	snprintf(name, sizeof name, "%s%s", RELAY_EVENT_STREAM, s->uid);
	if (cof_meta_event_last(r->st->meta, name, &last, &first, err)) {
		cof_relay_session_free(s);
		return NULL;
	}
	s->ev_next = (uint64_t)last;
	s->mirror = 1;
	if (!into)
		return s;
	into->status = s->status;
	into->ev_next = s->ev_next;
	memcpy(into->end_reason, s->end_reason, sizeof into->end_reason);
	cof_relay_session_free(s);
	return into;
}

/* An agent's events stream at a node that does not hold the session: the
 * events are stored, so it reads them here, and wakes on notify (every
 * node's, on PostgreSQL) or once a second (docs/design.md, "Across nodes"). */
static rsession *mirror_open(cof_relay *r, const cof_principal *who, const char *uid,
			     cof_err *err)
{
	cof_err e = {0};
	rsession *s = mirror_read(r, who, uid, NULL, &e);

	if (s) {
		cof_err_clear(err);
		cof_err_clear(&e);
		return s;
	}
	if (e.code) {
		cof_err_clear(err);
		*err = e;
	}
	return NULL;
}

typedef struct take_ctx {
	cof_relay_stream *x;
	json_t *list;
} take_ctx;

/* One stored event: added to the list when it is meant for the stream. */
static int take_one(void *arg, int64_t id, unsigned to, const char *body)
{
	take_ctx *t = arg;
	unsigned bit = t->x->client ? EV_CLIENT : EV_AGENT;
	json_t *ev = (to & bit) ? json_loads(body, 0, NULL) : NULL;

	if (ev) {
		json_object_set_new(ev, "id", json_integer((json_int_t)id));
		json_array_append_new(t->list, ev);
	}
	t->x->pos = (uint64_t)id;
	return 0;
}

/* Moves s->ev_next up to the stored stream's last id. */
static void stored_last(cof_relay *r, rsession *s)
{
	char name[64];
	int64_t last = 0, first = 0;
	cof_err e = {0};

	snprintf(name, sizeof name, "%s%s", RELAY_EVENT_STREAM, s->uid);
	if (!cof_meta_event_last(r->st->meta, name, &last, &first, &e) &&
	    (uint64_t)last > s->ev_next)
		s->ev_next = (uint64_t)last;
	cof_err_clear(&e);
}

/* Moves the stream's new events (read from the stored stream, 256 at a
 * time) into `list`. */
static void take_events(cof_relay_stream *x, json_t *list)
{
	take_ctx t = {x, list};
	char name[64];
	cof_err e = {0};

	if (x->pos >= x->s->ev_next)
		return;
	snprintf(name, sizeof name, "%s%s", RELAY_EVENT_STREAM, x->s->uid);
	if (cof_meta_event_list(x->r->st->meta, name, (int64_t)x->pos, 256, take_one, &t, &e))
		fprintf(stderr, "cofferd: relay session %s: cannot read its events: %s\n",
			x->s->uid, e.msg);
	cof_err_clear(&e);
}

/* Moves the ops not yet sent to this attachment into `list`. */
static void take_ops(cof_relay_stream *x, json_t *list)
{
	for (rop *op = x->s->ops; op; op = op->next) {
		if (op->sent || op->done || op->gen != x->gen || !op->msg ||
		    op->rec_seq > x->s->wdone) /* its record not stored yet */
			continue;
		op->sent = 1;
		if (op->supervised) /* waits for the user, also across a restart */
			cof_relay_op_store(x->r, x->s, op);
		json_array_append_new(list, json_pack("{s:I, s:s, s:o}", "id", (json_int_t)0,
						      "type", "op", "data", op->msg));
		op->msg = NULL; /* its content is not kept once sent */
	}
}

int cof_relay_stream_next(cof_relay_stream *x, int wait_ms, json_t **out, cof_err *err)
{
	cof_relay *r = x->r;
	rsession *s = x->s;
	int64_t deadline = cof_mono_ms() + wait_ms;
	json_t *list = json_array();
	int done = 0;

	(void)err;
	pthread_mutex_lock(&r->mu);
	for (;;) {
		if (s->mirror) {
			cof_err e = {0};
			cof_principal who = {0};
			snprintf(who.org, sizeof who.org, "%s", s->org);
			mirror_read(r, &who, s->uid, s, &e);
			cof_err_clear(&e);
		} else if (r->node[0]) {
			stored_last(r, s); /* events other nodes added (presence.c) */
			cof_relay_forget_check(r, s); /* its agent deleted elsewhere */
		}
		cof_relay_tick(r, s);
		if (x->hello) {
			json_array_append_new(list, x->hello);
			x->hello = NULL;
		}
		take_events(x, list);
		int ending = s->status == RS_ENDED ||
			     (x->client && (s->gen != x->gen || !s->attached));
		if (x->client && !ending)
			take_ops(x, list);
		/* the events of its end (session_ended, pause) are read from the
		 * store: it ends once what was queued until then is stored */
		if (ending && !x->end_seq)
			x->end_seq = s->wseq ? s->wseq : 1;
		if ((ending && (s->mirror || s->wdone >= x->end_seq ||
				!s->wseq) && x->pos >= s->ev_next) || r->closing)
			done = 1;
		int64_t now = cof_mono_ms();
		if (json_array_size(list) || done || now >= deadline)
			break;
		cof_relay_wait(r, s, now + 1000 < deadline ? now + 1000 : deadline);
	}
	cof_relay_unlock(r);
	*out = list;
	return done;
}

void cof_relay_stream_close(cof_relay_stream *x)
{
	cof_relay *r;
	rsession *s;

	if (!x)
		return;
	r = x->r;
	s = x->s;
	pthread_mutex_lock(&r->mu);
	if (s->mirror) {
		if (cof_relay_presence_close(r, s) && s->status != RS_ENDED)
			cof_relay_presence_event(r, s);
		cof_relay_session_free(s); /* its own copy, in no registry */
		cof_relay_unlock(r);
		free(x);
		return;
	}
	if (x->client && s->attached && s->gen == x->gen) {
		cof_relay_detach(r, s, "disconnected");
	} else if (!x->client && cof_relay_presence_close(r, s) && s->status != RS_ENDED) {
		cof_relay_presence_event(r, s);
	}
	cof_relay_unref(s);
	cof_relay_forget_done(r, s);
	cof_relay_unlock(r);
	json_decref(x->hello);
	free(x);
}

/* ------------------------------------------------------- the client's calls */

/* The agent's `exclusions` event: every pattern in force, the user's own,
 * the mode and the protected paths. */
static void exclusions_event(cof_relay *r, rsession *s)
{
	json_t *info = cof_relay_session_json(s);
	json_t *ev = json_pack("{s:O, s:O, s:s}", "exclusions", json_object_get(info, "exclusions"),
			       "user", s->user_excl, "mode", cof_mode_name(s->mode));

	cof_relay_protect_json(s, ev);
	cof_relay_event(r, s, EV_AGENT, "exclusions", ev);
	json_decref(info);
}

static const cof_jfield connect_fields[] = {
	{"mode", COF_JSTR, 0}, {"exclusions", COF_JARR, 0}, {"client", COF_JSTR, 0},
	{"allowWrite", COF_JARR, 0}, {NULL, 0, 0}};

int cof_relay_connect(cof_relay *r, const char *uid, const char *token, json_t *body,
		      cof_relay_stream **out, cof_err *err)
{
	const char *m = cof_json_str(body, "mode"), *client = cof_json_str(body, "client");
	json_t *patterns = json_object_get(body, "exclusions");
	cof_excl *excl = NULL;
	cof_protect *prot = NULL;
	cof_mode mode = COF_MODE_STANDARD;
	rsession *s;
	int rc = -1;

	if (cof_json_check(body, connect_fields, err) ||
	    (m && cof_mode_parse(m, &mode, err)) ||
	    cof_excl_new(json_is_array(patterns) ? patterns : NULL,
			 COF_EXCL_DEFAULTS | COF_EXCL_NOCASE, &excl, err))
		return -1;
	if (cof_protect_new(json_object_get(body, "allowWrite"), &prot, err)) {
		cof_excl_free(excl);
		return -1;
	}
	pthread_mutex_lock(&r->mu);
	s = cof_relay_find_client(r, uid, token, err);
	if (!s && json_object_get(err->extra, "node"))
		s = cof_relay_claim(r, uid, token, err); /* docs/design.md, "Across nodes" */
	if (!s)
		goto out;
	cof_relay_forget_check(r, s); /* its agent deleted at another node */
	if (s->status == RS_ENDED) {
		cof_relay_gone(s, err);
		goto out;
	}
	if (s->attached) {
		cof_error(err, COF_ECONFLICT, "another client is attached to relay session '%s'",
			  s->uid);
		goto out;
	}
	cof_excl_free(s->excl);
	s->excl = excl;
	excl = NULL;
	json_decref(s->user_excl);
	s->user_excl = json_is_array(patterns) ? json_deep_copy(patterns) : json_array();
	cof_protect_free(s->prot);
	s->prot = prot;
	prot = NULL;
	s->mode = m ? mode : s->default_mode;
	snprintf(s->client, sizeof s->client, "%s", client ? client : "");
	s->gen++;
	s->attached = 1;
	rs_status was = s->status;
	cof_relay_log_add(r, s, json_pack("{s:s, s:s, s:s}", "event", "connect", "mode",
			       cof_mode_name(s->mode), "client", s->client));
	*out = stream_new(r, s, 1, s->ev_next);
	if (!*out) {
		s->attached = 0;
		cof_error(err, COF_EINTERNAL, "out of memory");
		goto out;
	}
	/* the order the agent reads: status_changed, exclusions, then resume */
	s->status = RS_ACTIVE;
	cof_relay_event(r, s, EV_AGENT, "status_changed",
		    json_pack("{s:s, s:s}", "status", "active", "previous",
			      was == RS_PAUSED ? "paused" : "waiting"));
	exclusions_event(r, s);
	if (was == RS_PAUSED)
		cof_relay_event(r, s, EV_AGENT, "resume", NULL);
	/* the client learns the mode in force before any op: its own choice, or
	 * (none given) the agent's suggestion, which it then shows the user. Of
	 * this attachment alone, so not a stored event (no id: the agent's
	 * event ids stay consecutive) */
	(*out)->hello = json_pack("{s:I, s:s, s:{s:s, s:s, s:s}}", "id", (json_int_t)0, "type",
				  "mode", "data", "mode", cof_mode_name(s->mode), "defaultMode",
				  cof_mode_name(s->default_mode), "chosenBy", m ? "user" : "agent");
	rc = 0;
out:
	cof_relay_unlock(r);
	cof_excl_free(excl);
	cof_protect_free(prot);
	return rc;
}

static const cof_jfield result_fields[] = {
	{"ok", COF_JBOOL, 1}, {"result", COF_JOBJ, 0}, {"error", COF_JOBJ, 0}, {NULL, 0, 0}};

int cof_relay_result(cof_relay *r, const char *uid, const char *token, const char *op_id,
		     json_t *body, const cof_err *bad, cof_err *err)
{
	rsession *s;
	rop *op = NULL;
	int rc = -1;

	cof_err why = {0};
	int malformed = 1;

	if (!body)
		cof_error(&why, COF_EVALIDATION, "%s",
			  bad && bad->msg[0] ? bad->msg : "the answer has no body");
	else
		malformed = cof_json_check(body, result_fields, &why) != 0;

	pthread_mutex_lock(&r->mu);
	s = cof_relay_find_client(r, uid, token, err);
	if (s && s->status == RS_ENDED) {
		cof_relay_gone(s, err);
		s = NULL;
	}
	for (rop *o = s ? s->ops : NULL; o && !op; o = o->next)
		if (!strcmp(o->id, op_id) && o->sent && !o->done)
			op = o;
	if (s && !op) {
		cof_error(err, COF_ENOTFOUND, "no operation '%.64s' waits for an answer", op_id);
	} else if (malformed) {
		if (op) {
			cof_err e = {0};
			cof_error(&e, COF_EINTERNAL, "the user's side answered %s of '%s' with "
				  "something that is not an answer: %s", op->op,
				  op->path ? op->path : "", why.msg);
			cof_relay_op_finish(r, s, op, NULL, &e);
			cof_err_clear(&e);
		}
		cof_error(err, COF_EVALIDATION, "%s", why.msg);
	} else if (op && json_is_true(json_object_get(body, "ok"))) {
		json_t *res = json_object_get(body, "result");
		cof_err e = {0};
		json_t *copy = json_is_object(res) ? json_deep_copy(res) : json_object();
		if (cof_relay_result_check(s, op, copy, &e)) {
			json_decref(copy);
			cof_relay_op_finish(r, s, op, NULL, &e);
		} else {
			cof_relay_op_finish(r, s, op, copy, NULL);
		}
		cof_err_clear(&e);
		rc = 0;
	} else if (op) {
		json_t *eo = json_object_get(body, "error");
		const char *msg = cof_json_str(eo, "message");
		cof_err e = {0};
		cof_error(&e, cof_relay_code_of(cof_json_str(eo, "type")), "%s",
			  msg ? msg : "the user's side refused the operation");
		cof_relay_op_finish(r, s, op, NULL, &e);
		cof_err_clear(&e);
		rc = 0;
	}
	cof_relay_unlock(r);
	cof_err_clear(&why);
	return rc;
}

/* The `exclusions` event {exclusions:[pattern...]}: the user's patterns
 * from now on (the defaults stay), checked as at connect; the agent side
 * gets the exclusions event again, and the change is logged. */
static int set_exclusions(cof_relay *r, const char *uid, const char *token, json_t *data,
			  cof_err *err)
{
	static const cof_jfield fields[] = {{"exclusions", COF_JARR, 1}, {NULL, 0, 0}};
	json_t *patterns = json_object_get(data, "exclusions");
	cof_excl *excl = NULL;
	rsession *s;

	if (cof_json_check(data, fields, err) ||
	    cof_excl_new(patterns, COF_EXCL_DEFAULTS | COF_EXCL_NOCASE, &excl, err))
		return -1;
	pthread_mutex_lock(&r->mu);
	s = cof_relay_find_client(r, uid, token, err);
	if (s && s->status == RS_ENDED) {
		cof_relay_gone(s, err);
		s = NULL;
	}
	if (s) {
		cof_excl_free(s->excl);
		s->excl = excl;
		excl = NULL;
		json_decref(s->user_excl);
		s->user_excl = json_deep_copy(patterns);
		cof_relay_log_add(r, s, json_pack("{s:s, s:O}", "event", "exclusions", "user",
					       s->user_excl));
		exclusions_event(r, s);
		cof_relay_persist(r, s);
	}
	cof_relay_unlock(r);
	cof_excl_free(excl);
	return s ? 0 : -1;
}

static const cof_jfield event_fields[] = {
	{"type", COF_JSTR, 1}, {"data", COF_JOBJ, 0}, {NULL, 0, 0}};

int cof_relay_client_event(cof_relay *r, const char *uid, const char *token, json_t *body,
			   cof_err *err)
{
	const char *type = cof_json_str(body, "type");
	json_t *data;
	rsession *s;

	if (cof_json_check(body, event_fields, err))
		return -1;
	if (strcmp(type, "accept") && strcmp(type, "write_blocked") && strcmp(type, "abort") &&
	    strcmp(type, "exclusions"))
		return cof_error(err, COF_EVALIDATION, "unknown event type '%.64s'; known: accept, "
				 "write_blocked, abort, exclusions", type);
	data = json_is_object(json_object_get(body, "data"))
		       ? json_deep_copy(json_object_get(body, "data")) : json_object();
	if (!strcmp(type, "exclusions")) {
		int rc = set_exclusions(r, uid, token, data, err);
		json_decref(data);
		return rc;
	}
	/* kept in the event ring and the log: bounded */
	char *text = json_dumps(data, JSON_COMPACT);
	size_t tlen = text ? strlen(text) : 0;
	free(text);
	if (tlen > RELAY_EVENT_DATA_MAX) {
		json_decref(data);
		return cof_error(err, COF_ETOOLARGE, "event data is %zu bytes; the limit is %d bytes",
				 tlen, RELAY_EVENT_DATA_MAX);
	}
	pthread_mutex_lock(&r->mu);
	s = cof_relay_find_client(r, uid, token, err);
	if (s && s->status == RS_ENDED) {
		cof_relay_gone(s, err);
		s = NULL;
	}
	if (s && !strcmp(type, "abort")) {
		cof_relay_event(r, s, EV_AGENT, "abort", json_pack("{s:s}", "by", "user"));
		cof_relay_log_add(r, s, json_pack("{s:s, s:s}", "event", "end", "reason", "aborted"));
		cof_relay_session_end(r, s, "aborted");
	} else if (s && !strcmp(type, "accept")) {
		cof_relay_log_add(r, s, json_pack("{s:s, s:O}", "event", "accept", "data", data));
		cof_relay_event(r, s, EV_AGENT, "accept", json_incref(data));
	} else if (s) {
		json_object_set_new(data, "by", json_string("client"));
		cof_relay_log_add(r, s, json_pack("{s:s, s:O, s:s, s:O}", "op", "write_file", "path",
				       json_object_get(data, "path") ? json_object_get(data, "path")
								     : json_null(),
				       "outcome", "blocked", "blocked", data));
		cof_relay_event(r, s, EV_AGENT, "write_blocked", json_incref(data));
	}
	cof_relay_unlock(r);
	json_decref(data);
	return s ? 0 : -1;
}
