/*
 * session.c — relay sessions in memory: the registry, the life cycle
 * (waiting → active → paused → active ... → ended), events, the log, and the
 * agent-side calls that create, read, list and end sessions.
 *
 * Time-based ends (the session's time limit, the grace time of a paused
 * session) are applied lazily by cof_relay_tick on every look-up; every waiter
 * wakes at least once a second, so an open stream sees them within a second.
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
	pthread_mutex_unlock(&r->mu);
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
	return cof_calloc(1, sizeof(rsession));
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

/* The name of a stored stream of session s: `prefix` + uid. */
static void stream_name(const char *prefix, const rsession *s, char *out, size_t outsz)
{
	snprintf(out, outsz, "%s%s", prefix, s->uid);
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

/* ------------------------------------------------------------ life cycle */

/* Appends `obj` (stolen) to the stored stream `prefix` + uid, keeping `keep`;
 * the id, or 0 when it could not be stored (said on stderr). */
static int64_t stream_add(cof_relay *r, rsession *s, const char *prefix, unsigned to,
			  json_t *obj, int64_t keep)
{
	char name[64], *text = obj ? json_dumps(obj, JSON_COMPACT) : NULL;
	int64_t id = 0;
	cof_err e = {0};

	json_decref(obj);
	if (s->forget) { /* its agent was deleted: nothing more is stored */
		free(text);
		return 0;
	}
	stream_name(prefix, s, name, sizeof name);
	if (!text || cof_meta_event_add(r->st->meta, name, to, text, keep, &id, &e)) {
		fprintf(stderr, "cofferd: relay session %s: cannot store an event: %s\n", s->uid,
			text ? e.msg : "out of memory");
		id = 0;
	}
	cof_err_clear(&e);
	free(text);
	return id;
}

void cof_relay_event(cof_relay *r, rsession *s, unsigned to, const char *type, json_t *data)
{
	json_t *ev = json_pack("{s:s, s:o}", "type", type, "data", data ? data : json_object());
	int64_t id = stream_add(r, s, RELAY_EVENT_STREAM, to, ev, RELAY_EVENTS);

	if (id > 0)
		s->ev_next = (uint64_t)id;
	cof_relay_persist(r, s);
	cof_relay_wake(r, s);
}

void cof_relay_log_add(cof_relay *r, rsession *s, json_t *entry)
{
	json_object_set_new(entry, "at", cof_json_time(cof_now()));
	stream_add(r, s, RELAY_LOG_STREAM, 0, entry, RELAY_LOG_MAX);
}

static void set_status(cof_relay *r, rsession *s, rs_status to)
{
	rs_status from = s->status;

	if (from == to)
		return;
	s->status = to;
	cof_relay_event(r, s, EV_AGENT, "status_changed",
		    json_pack("{s:s, s:s}", "status", status_name[to], "previous",
			      status_name[from]));
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
	s->next = r->sessions;
	r->sessions = s;
	r->nsessions++;
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
	return s;
}

void cof_relay_unref(rsession *s)
{
	s->refs--;
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
			"uid", s->uid, "agent", s->agent, "status", status_name[s->status],
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

/* Whether `org` may open one more session: COF_ERATELIMIT naming the limit
 * when it has sessions_per_org not ended, or when the registry still holds
 * sessions_max after pruning. The per-org cap comes first, so that one
 * organization's sessions cannot take every place from the others. Time
 * limits and grace times are applied first, so an expired session that
 * nobody looked at does not count. */
static int room(cof_relay *r, const char *org, cof_err *err)
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
	s = cof_calloc(1, sizeof *s);
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
		session_free(s);
		return err->code ? -1 : cof_error(err, COF_EINTERNAL, "out of memory");
	}
	pthread_mutex_lock(&r->mu);
	if (room(r, who->org, err)) {
		pthread_mutex_unlock(&r->mu);
		cof_buf_release(&t);
		session_free(s);
		return -1;
	}
	s->next = r->sessions;
	r->sessions = s;
	r->nsessions++;
	cof_relay_event(r, s, EV_AGENT, "status_changed",
		    json_pack("{s:s}", "status", "waiting"));
	*out = cof_relay_session_json(s);
	pthread_mutex_unlock(&r->mu);
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
	pthread_mutex_unlock(&r->mu);
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
	pthread_mutex_unlock(&r->mu);
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
	pthread_mutex_unlock(&r->mu);
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
	pthread_mutex_unlock(&r->mu);
	if (rc == 0)
		*out = json_pack("{s:s, s:o, s:b}", "uid", uid, "entries", entries, "truncated",
				 first > 1);
	else
		json_decref(entries);
	return rc;
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
	 * where every change to it is published: nothing is missed. */
	if (cof_notify_subscribe(r->st->notify, &t, 1, &sub, &e)) {
		cof_err_clear(&e);
		pthread_mutex_unlock(&r->mu);
		usleep(50 * 1000); /* no fd to wait on: look again soon */
		pthread_mutex_lock(&r->mu);
		return;
	}
	gen = cof_sub_gen(sub);
	pthread_mutex_unlock(&r->mu);
	cof_sub_wait(sub, gen, until_ms);
	pthread_mutex_lock(&r->mu);
	cof_notify_unsubscribe(sub);
}
