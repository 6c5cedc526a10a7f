/*
 * session.c — the relay's API on a session: its life cycle (waiting → active
 * → paused → active ... → ended), events, the log, and the agent-side calls
 * that create, read, list, end and read the log of sessions. The registry
 * (finding a session, its lifetime, r->mu) is registry.c; every store write
 * here is queued and stored once r->mu is dropped (wqueue.c).
 *
 * Time-based ends (the session's time limit, the grace time of a paused
 * session) are applied lazily by cof_relay_tick on every look-up; every waiter
 * wakes at least once a second, so an open stream sees them within a second.
 */
#include <stdlib.h>
#include <string.h>
#include "hooks/hooks.h"
#include "relay/relay.h"
#include "store/store.h"


/* The name of a stored stream of session s: `prefix` + uid. */
static void stream_name(const char *prefix, const rsession *s, char *out, size_t outsz)
{
	snprintf(out, outsz, "%s%s", prefix, s->uid);
}

/* ------------------------------------------------------------ life cycle */

/* Queues `obj` (stolen) for the stored stream `prefix` + uid, keeping
 * `keep` (wqueue.c stores it once r->mu is dropped). */
static void stream_add(rsession *s, const char *prefix, unsigned to, json_t *obj, int64_t keep)
{
	char *text = obj ? json_dumps(obj, JSON_COMPACT) : NULL;

	json_decref(obj);
	if (s->forget) { /* its agent was deleted: nothing more is stored */
		free(text);
		return;
	}
	if (!text) {
		fprintf(stderr, "cofferd: relay session %s: cannot store an event: out of memory\n",
			s->uid);
		return;
	}
	cof_relay_wq_stream(s, prefix, to, text, keep);
}

/* The webhooks of a relay event (API.md "Webhooks"): relay.session with
 * seed 004's webhook metadata, relay.write_blocked. */
static void relay_hook(cof_relay *r, rsession *s, const char *type, json_t *data)
{
	if (!strcmp(type, "status_changed")) {
		const char *status = json_string_value(json_object_get(data, "status"));
		int active = status && !strcmp(status, "active");
		cof_hooks_emit(r->st, s->org, "relay.session", NULL, s->agent,
			       json_pack("{s:s, s:s, s:s?, s:s, s:{s:b, s:s, s:s}}", "uid", s->uid,
					 "agent", s->agent, "status", status, "mode",
					 cof_mode_name(s->mode), "metadata", "workspaceEnabled",
					 active, "workspaceMode", cof_mode_name(s->mode),
					 "workspaceUid", s->uid));
	} else if (!strcmp(type, "write_blocked")) {
		json_t *d = json_is_object(data) ? json_deep_copy(data) : json_object();
		json_object_set_new(d, "uid", json_string(s->uid));
		json_object_set_new(d, "agent", json_string(s->agent));
		cof_hooks_emit(r->st, s->org, "relay.write_blocked", NULL, s->agent, d);
	}
}

void cof_relay_event(cof_relay *r, rsession *s, unsigned to, const char *type, json_t *data)
{
	relay_hook(r, s, type, data); /* before the event takes data */
	json_t *ev = json_pack("{s:s, s:o}", "type", type, "data", data ? data : json_object());

	/* s->ev_next moves when it is stored (wqueue.c) */
	stream_add(s, RELAY_EVENT_STREAM, to, ev, RELAY_EVENTS);
	cof_relay_persist(r, s);
	cof_relay_wake(r, s);
	if (!strcmp(type, "status_changed")) { /* the agent's MCP sessions list relay tools by it */
		cof_topic t = cof_topic_agent(s->org, s->agent);
		cof_notify_publish(r->st->notify, &t);
	}
}

void cof_relay_log_add(cof_relay *r, rsession *s, json_t *entry)
{
	json_object_set_new(entry, "at", cof_json_time(cof_now()));
	stream_add(s, RELAY_LOG_STREAM, 0, entry, RELAY_LOG_MAX);
}

static void set_status(cof_relay *r, rsession *s, rs_status to)
{
	rs_status from = s->status;

	if (from == to)
		return;
	s->status = to;
	cof_relay_event(r, s, EV_AGENT, "status_changed",
		    json_pack("{s:s, s:s}", "status", cof_relay_status_name(to), "previous",
			      cof_relay_status_name(from)));
}

void cof_relay_op_finish(cof_relay *r, rsession *s, rop *op, json_t *result, const cof_err *e)
{
	json_t *entry;

	if (op->done) {
		json_decref(result);
		return;
	}
	op->done = 1;
	op->result = result;
	if (e) {
		op->error.code = e->code;
		memcpy(op->error.msg, e->msg, sizeof op->error.msg);
		op->error.extra = e->extra ? json_deep_copy(e->extra) : NULL;
	}
	entry = json_pack("{s:s, s:s, s:s, s:s, s:i}", "opId", op->id, "op", op->op, "path",
			  op->path, "outcome", e ? cof_code_type(e->code) : "ok", "status",
			  e ? cof_code_status(e->code) : 200);
	if (e)
		json_object_set_new(entry, "message", json_string(e->msg));
	if (op->is_write)
		json_object_set_new(entry, "size", json_integer(op->size));
	cof_relay_log_add(r, s, entry);
	if (op->is_write && !e)
		cof_relay_event(r, s, EV_AGENT, "write_result",
			    json_pack("{s:s, s:s, s:I, s:O?}", "opId", op->id, "path", op->path,
				      "size", (json_int_t)op->size, "sha256",
				      json_object_get(result, "sha256")));
	json_decref(op->msg); /* an op never sent is never sent now */
	op->msg = NULL;
	if (!op->waiter && s->status != RS_ENDED) /* for ops/{id}; a waiter's goes with it */
		cof_relay_op_store(r, s, op);
	cof_relay_wake(r, s);
}

void cof_relay_ops_prune(cof_relay *r, rsession *s)
{
	size_t kept = 0;

	/* ops are in arrival order: the oldest finished ones go first */
	for (rop *op = s->ops; op; op = op->next)
		kept += op->done && !op->waiter;
	for (rop **pp = &s->ops; *pp && kept > RELAY_OPS_KEPT;) {
		rop *op = *pp;
		if (op->done && !op->waiter) {
			*pp = op->next;
			cof_relay_op_forget(r, s, op);
			cof_relay_op_free(op);
			s->nops--;
			kept--;
		} else {
			pp = &op->next;
		}
	}
}

void cof_relay_session_end(cof_relay *r, rsession *s, const char *reason)
{
	cof_err e = {0};

	if (s->status == RS_ENDED)
		return;
	s->ended_at = cof_now();
	s->ended_ms = cof_mono_ms();
	snprintf(s->end_reason, sizeof s->end_reason, "%s", reason);
	s->attached = 0;
	set_status(r, s, RS_ENDED);
	cof_relay_event(r, s, EV_AGENT | EV_CLIENT, "session_ended",
		    json_pack("{s:s}", "reason", reason));
	cof_relay_gone(s, &e);
	for (rop *op = s->ops; op; op = op->next)
		cof_relay_op_finish(r, s, op, NULL, &e);
	cof_err_clear(&e);
	cof_relay_ops_forget_all(r, s); /* the records go with the session */
	cof_relay_ops_prune(r, s);
}

int cof_relay_gone(const rsession *s, cof_err *err)
{
	static const struct { const char *reason, *why; } whys[] = {
		{"aborted", "it was aborted"}, {"closed", "the agent side closed it"},
		{"expired", "its time limit was reached"},
		{"grace", "the user's side did not come back within the grace time"},
		{"shutdown", "cofferd stopped"}, {"agent_deleted", "its agent was deleted"}};
	const char *why = s->end_reason;

	for (size_t i = 0; i < sizeof whys / sizeof *whys; i++)
		if (!strcmp(whys[i].reason, s->end_reason))
			why = whys[i].why;
	cof_error(err, COF_EGONE, "relay session '%s' has ended: %s", s->uid, why);
	cof_err_set(err, "reason", json_string(s->end_reason));
	return -1;
}

void cof_relay_tick(cof_relay *r, rsession *s)
{
	int expired, grace;

	if (s->status == RS_ENDED || s->mirror) /* a mirror's holder ends it */
		return;
	expired = cof_mono_ms() - s->started_ms >= s->limits.seconds * 1000;
	grace = s->status == RS_PAUSED && cof_mono_ms() - s->paused_ms >= r->grace_ms;
	if (expired || grace) /* unless its agent went at another node */
		cof_relay_forget_check(r, s);
	if (s->status == RS_ENDED)
		return;
	if (expired)
		cof_relay_session_end(r, s, "expired");
	else if (grace)
		cof_relay_session_end(r, s, "grace");
}

void cof_relay_detach(cof_relay *r, rsession *s, const char *reason)
{
	cof_err e = {0};

	if (!s->attached || s->status == RS_ENDED)
		return;
	s->attached = 0;
	s->paused_ms = cof_mono_ms();
	cof_relay_log_add(r, s, json_pack("{s:s, s:s}", "event", "pause", "reason", reason));
	cof_relay_event(r, s, EV_AGENT, "pause", json_pack("{s:s}", "reason", reason));
	set_status(r, s, RS_PAUSED);
	cof_error(&e, COF_EUNAVAILABLE, "the user's folder is not connected (the client %s)",
		  !strcmp(reason, "idle") ? "left an operation unanswered" : "went away");
	/* a stopping cofferd leaves the user's supervised writes to the user:
	 * stored, they wait across the restart (oprec.c) */
	for (rop *op = s->ops; op; op = op->next)
		if (op->gen == s->gen && !(r->closing && op->supervised))
			cof_relay_op_finish(r, s, op, NULL, &e);
	cof_err_clear(&e);
}

cof_code cof_relay_code_of(const char *type)
{
	for (int c = COF_EVALIDATION; type && c < COF_NCODES; c++)
		if (!strcmp(cof_code_type((cof_code)c), type))
			return (cof_code)c;
	return COF_EINTERNAL;
}

/* ------------------------------------------------------------- answers */

json_t *cof_relay_session_json(const rsession *s)
{
	json_t *excl = json_array(), *out;

	for (const char *const *d = cof_excl_defaults(); *d; d++)
		json_array_append_new(excl, json_string(*d));
	json_array_extend(excl, s->user_excl);
	out = json_pack("{s:s, s:s, s:s, s:s, s:s, s:o, s:{s:I, s:I, s:I}, s:o, s:o}",
			"uid", s->uid, "agent", s->agent, "status", cof_relay_status_name(s->status),
			"mode", cof_mode_name(s->mode), "defaultMode",
			cof_mode_name(s->default_mode), "exclusions", excl, "counts",
			"reads", (json_int_t)s->reads, "writes", (json_int_t)s->writes,
			"bytesWritten", (json_int_t)s->bytes_written, "limits",
			cof_limits_json(&s->limits), "startedAt", cof_json_time(s->started_at));
	json_object_set_new(out, "expiresAt",
			    cof_json_time(s->started_at + s->limits.seconds));
	cof_relay_protect_json(s, out);
	if (s->client[0])
		json_object_set_new(out, "client", json_string(s->client));
	if (s->status == RS_ENDED) {
		json_object_set_new(out, "endedAt", cof_json_time(s->ended_at));
		json_object_set_new(out, "endReason", json_string(s->end_reason));
	}
	return out;
}

static const cof_jfield create_fields[] = {
	{"agent", COF_JSTR, 1}, {"limits", COF_JOBJ, 0}, {NULL, 0, 0}};

/* The agent's relay settings: capability (else COF_ECONFLICT) and defaultMode. */
static int agent_relay(cof_relay *r, const cof_principal *who, const char *agent,
		       cof_mode *mode, cof_err *err)
{
	json_t *a = NULL, *relay;
	int rc = -1;

	if (who->agent[0] && strcmp(who->agent, agent))
		return cof_error(err, COF_EFORBIDDEN, "this key reaches only agent '%s'",
				 who->agent);
	if (cof_agent_get(r->st, who->org, agent, &a, err))
		return -1;
	relay = json_object_get(a, "relay");
	if (!json_is_true(json_object_get(relay, "capability")))
		cof_error(err, COF_ECONFLICT,
			  "agent '%s' has no relay capability; set \"relay\": {\"capability\": "
			  "true} in its settings (PUT /v1/agents/%s)", agent, agent);
	else if (!cof_json_str(relay, "defaultMode"))
		*mode = COF_MODE_STANDARD, rc = 0;
	else
		rc = cof_mode_parse(cof_json_str(relay, "defaultMode"), mode, err);
	json_decref(a);
	return rc;
}

/* Compiles the guard (about 2 s, once per process) so that the session's
 * first write does not wait for it. */
static void *guard_warm(void *arg)
{
	cof_err e = {0};

	(void)arg;
	cof_guard_default(&e);
	cof_err_clear(&e);
	return NULL;
}

/* Once per process, as the guard is (if the thread cannot start, the first
 * write compiles it). */
static void guard_warm_start(void)
{
	static int started;
	pthread_attr_t at;
	pthread_t tid;

	if (__atomic_exchange_n(&started, 1, __ATOMIC_SEQ_CST))
		return;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_create(&tid, &at, guard_warm, NULL);
	pthread_attr_destroy(&at);
}


int cof_relay_create(cof_relay *r, const cof_principal *who, json_t *body, json_t **out,
		     cof_err *err)
{
	unsigned char raw[32];
	char *token;
	rsession *s;
	cof_mode mode;
	cof_limits lim;

	if (cof_json_check(body, create_fields, err) ||
	    agent_relay(r, who, cof_json_str(body, "agent"), &mode, err) ||
	    cof_limits_parse(json_object_get(body, "limits"), &lim, err))
		return -1;
	if (strlen(cof_json_str(body, "agent")) >= sizeof s->agent)
		return cof_error(err, COF_EVALIDATION, "'agent' is too long");
	if (cof_random(raw, sizeof raw) || !(token = cof_base64url_encode(raw, sizeof raw)))
		return cof_error(err, COF_EINTERNAL, "no randomness for the connect token");
	if (!(s = cof_relay_session_new()))
		return cof_error(err, COF_EINTERNAL, "out of memory");
	cof_id_new("rs_", s->uid, sizeof s->uid);
	snprintf(s->org, sizeof s->org, "%s", who->org);
	snprintf(s->agent, sizeof s->agent, "%s", cof_json_str(body, "agent"));
	s->mode = s->default_mode = mode;
	s->limits = lim;
	s->user_excl = json_array();
	s->started_at = cof_now();
	s->started_ms = cof_mono_ms();
	cof_buf t = COF_BUF_INIT;
	cof_buf_addf(&t, "rct_%s", token);
	free(token);
	if (!t.data || cof_sha256_hex(t.data, t.len, s->token_hash) ||
	    cof_excl_new(NULL, 1, &s->excl, err)) {
		cof_buf_release(&t);
		cof_relay_session_free(s);
		return err->code ? -1 : cof_error(err, COF_EINTERNAL, "out of memory");
	}
	pthread_mutex_lock(&r->mu);
	if (cof_relay_room(r, who->org, err)) {
		cof_relay_unlock(r);
		cof_buf_release(&t);
		cof_relay_session_free(s);
		return -1;
	}
	cof_relay_add(r, s);
	cof_relay_event(r, s, EV_AGENT, "status_changed",
		    json_pack("{s:s}", "status", "waiting"));
	*out = cof_relay_session_json(s);
	cof_relay_unlock(r);
	guard_warm_start();
	json_object_set_new(*out, "connectToken", json_string(t.data));
	cof_buf_release(&t);
	return 0;
}

int cof_relay_get(cof_relay *r, const cof_principal *who, const char *uid, json_t **out,
		  cof_err *err)
{
	rsession *s;

	pthread_mutex_lock(&r->mu);
	s = cof_relay_find(r, who, uid, err);
	if (s)
		*out = cof_relay_session_json(s);
	cof_relay_unlock(r);
	return s ? 0 : -1;
}

typedef struct list_ctx {
	cof_relay *r;
	const cof_principal *who;
	const char *agent;
	int all;
	json_t *list;
} list_ctx;

/* With several nodes: a stored session another node holds, as its record
 * tells it (the sessions of this node's registry are listed already). */
static int list_other(void *arg, const cof_staterow *row)
{
	list_ctx *l = arg;
	cof_err e = {0};
	rsession *s;

	if (strcmp(row->org, l->who->org) || !strcmp(row->node, l->r->node) ||
	    (row->ended && !l->all))
		return 0;
	for (rsession *x = l->r->sessions; x; x = x->next)
		if (!strcmp(x->uid, row->id))
			return 0;
	if ((s = cof_relay_session_of(row, &e)) && (!l->agent || !strcmp(s->agent, l->agent)))
		json_array_append_new(l->list, cof_relay_session_json(s));
	cof_relay_session_free(s);
	cof_err_clear(&e);
	return 0;
}

int cof_relay_list(cof_relay *r, const cof_principal *who, const char *agent, int all,
		   json_t **out, cof_err *err)
{
	json_t *list = json_array();

	if (!agent && who->agent[0])
		agent = who->agent;
	if (agent && who->agent[0] && strcmp(agent, who->agent)) {
		json_decref(list);
		return cof_error(err, COF_EFORBIDDEN, "this key reaches only agent '%s'",
				 who->agent);
	}
	pthread_mutex_lock(&r->mu);
	for (rsession *s = r->sessions; s; s = s->next) {
		if (strcmp(s->org, who->org) || (agent && strcmp(s->agent, agent)))
			continue;
		cof_relay_tick(r, s);
		if (all || s->status != RS_ENDED)
			json_array_append_new(list, cof_relay_session_json(s));
	}
	list_ctx l = {r, who, agent, all, list};
	int rc = r->node[0] ? cof_meta_state_list(r->st->meta, "relay", cof_now_ms() -
						  RELAY_ENDED_KEEP * 1000LL, list_other, &l, err)
			    : 0;
	cof_relay_unlock(r);
	if (rc) {
		json_decref(list);
		return -1;
	}
	*out = json_pack("{s:o}", "sessions", list);
	return 0;
}

int cof_relay_end(cof_relay *r, const cof_principal *who, const char *uid,
		  const char *reason, cof_err *err)
{
	rsession *s;
	int rc = -1;

	pthread_mutex_lock(&r->mu);
	s = cof_relay_find(r, who, uid, err);
	if (s && s->status == RS_ENDED) {
		cof_relay_gone(s, err);
	} else if (s) {
		if (!strcmp(reason, "aborted"))
			cof_relay_event(r, s, EV_AGENT, "abort", json_pack("{s:s}", "by", "agent"));
		cof_relay_log_add(r, s, json_pack("{s:s, s:s}", "event", "end", "reason", reason));
		cof_relay_session_end(r, s, reason);
		rc = 0;
	}
	cof_relay_unlock(r);
	return rc;
}

/* Appends a stored log entry to the array `ctx`. */
static int log_entry(void *ctx, int64_t id, unsigned to, const char *body)
{
	json_t *e = json_loads(body, 0, NULL);

	(void)id, (void)to;
	if (e)
		json_array_append_new(ctx, e);
	return 0;
}

int cof_relay_log(cof_relay *r, const cof_principal *who, const char *uid, json_t **out,
		  cof_err *err)
{
	char name[64];
	int64_t last = 0, first = 0;
	json_t *entries = NULL;
	rsession *s;
	int rc = -1;

	pthread_mutex_lock(&r->mu);
	s = cof_relay_find(r, who, uid, err);
	if (s) {
		stream_name(RELAY_LOG_STREAM, s, name, sizeof name);
		entries = json_array();
		if (!cof_meta_event_last(r->st->meta, name, &last, &first, err) &&
		    !cof_meta_event_list(r->st->meta, name, 0, RELAY_LOG_MAX, log_entry, entries,
					 err))
			rc = 0;
	}
	cof_relay_unlock(r);
	if (rc == 0)
		*out = json_pack("{s:s, s:o, s:b}", "uid", uid, "entries", entries, "truncated",
				 first > 1);
	else
		json_decref(entries);
	return rc;
}