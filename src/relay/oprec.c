/*
 * oprec.c — relay ops in the store (docs/api.md "Restarts and nodes";
 * docs/design.md "State in the store"): each op of a session has a record of
 * kind "relayop", id SESSION/OP, from its forwarding until its caller has the
 * answer, or, for a write left to the user (a supervised write answered 423),
 * until it is one of the RELAY_OPS_KEPT finished ones no longer kept, or the
 * session ends. What a record holds: the op (kind, path, size, sha256), whether
 * the client got it, and once done its answer or its error (at most
 * RELAY_OP_RECORD_MAX bytes: a larger answer keeps only what the write
 * reported). Never the content: it is not kept once sent.
 *
 * When a session is loaded (a restart) or moves here (its client attached at
 * this node), its records come back: a finished op keeps its answer; a
 * supervised write the client had received still waits for the user, whose
 * answer (POST results/{op}) applies when it comes; any other op in flight
 * has lost its HTTP call and maybe its answer: it is done with 410 `gone`
 * naming why (reason "restart" or "moved").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "relay/relay.h"
#include "store/store.h"

/* The record's id: SESSION/OP (0), or -1 when it would not fit. */
static int rec_id(const rsession *s, const char *op_id, char out[48])
{
	int n = snprintf(out, 48, "%s/%s", s->uid, op_id);

	return n > 0 && n < 48 ? 0 : -1;
}

/* The op's error as the API writes it: {type, message, extra...}. */
static json_t *error_json(const cof_err *e)
{
	json_t *o = e->extra ? json_deep_copy(e->extra) : json_object();

	json_object_set_new(o, "type", json_string(cof_code_type(e->code)));
	json_object_set_new(o, "message", json_string(e->msg));
	return o;
}

/* The record's body; a done op's answer is cut down to what a write
 * reports when the whole would be over RELAY_OP_RECORD_MAX. */
static char *rec_body(const rop *op)
{
	json_t *b = json_pack("{s:s, s:s, s:b, s:b, s:b, s:I, s:s, s:I, s:b, s:s}", "op", op->op,
			      "path", op->path, "write", op->is_write, "supervised",
			      op->supervised, "sent", op->sent, "size", (json_int_t)op->size,
			      "sha256", op->sha256, "maxResults", (json_int_t)op->max_results,
			      "lost", op->lost, "status", op->done ? "done" : "pending");
	char *text;

	if (!b)
		return NULL;
	if (op->done && op->result)
		json_object_set(b, "result", op->result);
	else if (op->done)
		json_object_set_new(b, "error", error_json(&op->error));
	text = json_dumps(b, JSON_COMPACT);
	if (text && strlen(text) > RELAY_OP_RECORD_MAX && op->result) {
		json_t *small = json_object();
		static const char *const keep[] = {"path", "size", "sha256", NULL};
		for (size_t i = 0; keep[i]; i++)
			if (json_object_get(op->result, keep[i]))
				json_object_set(small, keep[i], json_object_get(op->result, keep[i]));
		json_object_set_new(b, "result", small);
		free(text);
		text = json_dumps(b, JSON_COMPACT);
	}
	json_decref(b);
	return text;
}

uint64_t cof_relay_op_store(cof_relay *r, rsession *s, const rop *op)
{
	cof_staterow row = {.kind = RELAY_OP_KIND, .ended = op->done};
	char *text;

	if (s->forget) /* its agent was deleted (forget.c) */
		return 0;
	if (rec_id(s, op->id, row.id))
		return 0;
	snprintf(row.org, sizeof row.org, "%s", s->org);
	snprintf(row.node, sizeof row.node, "%s", r->node);
	if (!(text = rec_body(op))) {
		fprintf(stderr, "cofferd: relay session %s: cannot store op %s: out of memory\n",
			s->uid, op->id);
		return 0;
	}
	return cof_relay_wq_put(s, &row, text); /* stored once r->mu is dropped */
}

void cof_relay_op_forget(cof_relay *r, rsession *s, const rop *op)
{
	char id[48];

	(void)r;
	if (rec_id(s, op->id, id))
		fprintf(stderr, "cofferd: relay session %s: cannot forget op %s: its id is too "
			"long\n", s->uid, op->id);
	else
		cof_relay_wq_delete(s, RELAY_OP_KIND, id);
}

typedef struct load_ctx {
	cof_relay *r;
	rsession *s;
	const char *why;     /* "restart" or "moved" */
	int forget;          /* the session ended: its records go */
	char (*ids)[48];     /* records to forget */
	size_t nids, cap;
} load_ctx;

/* An op back from its body; NULL when the record cannot be read. */
static rop *op_of(const char *op_id, json_t *b)
{
	rop *op = cof_calloc(1, sizeof *op);
	const char *kind = cof_json_str(b, "op"), *path = cof_json_str(b, "path");
	const char *sha = cof_json_str(b, "sha256");

	if (!op || !kind || !path || !(op->path = cof_strdup(path))) {
		free(op);
		return NULL;
	}
	snprintf(op->id, sizeof op->id, "%s", op_id);
	snprintf(op->op, sizeof op->op, "%s", kind);
	snprintf(op->sha256, sizeof op->sha256, "%s", sha ? sha : "");
	op->is_write = json_is_true(json_object_get(b, "write"));
	op->supervised = json_is_true(json_object_get(b, "supervised"));
	op->sent = json_is_true(json_object_get(b, "sent"));
	op->lost = json_is_true(json_object_get(b, "lost"));
	op->size = (int64_t)json_integer_value(json_object_get(b, "size"));
	op->max_results = (int64_t)json_integer_value(json_object_get(b, "maxResults"));
	op->gen = UINT64_MAX; /* the attachment that got it went with the process */
	return op;
}

/* A finished op's answer from its body into op. */
static void done_of(rop *op, json_t *b)
{
	json_t *res = json_object_get(b, "result"), *e = json_object_get(b, "error");

	op->done = 1;
	if (json_is_object(res)) {
		op->result = json_incref(res);
		return;
	}
	const char *msg = cof_json_str(e, "message");
	op->error.code = cof_relay_code_of(cof_json_str(e, "type"));
	snprintf(op->error.msg, sizeof op->error.msg, "%s", msg ? msg : "the op failed");
	json_t *extra = json_is_object(e) ? json_deep_copy(e) : NULL;
	json_object_del(extra, "type");
	json_object_del(extra, "message");
	if (extra && json_object_size(extra))
		op->error.extra = extra;
	else
		json_decref(extra);
}

/* One record of the session: back in s->ops (oldest first), or to forget. */
static int load_one(void *arg, const cof_staterow *row)
{
	load_ctx *l = arg;
	const char *op_id = strchr(row->id, '/');
	json_t *b = json_loads(row->body, 0, NULL);
	rop *op = op_id && b && !l->forget ? op_of(op_id + 1, b) : NULL;

	if (!op) {
		if (l->nids == l->cap) {
			size_t cap = l->cap ? l->cap * 2 : 16;
			char (*ids)[48] = realloc(l->ids, cap * sizeof *ids);
			if (!ids) {
				json_decref(b);
				return 0;
			}
			l->ids = ids, l->cap = cap;
		}
		snprintf(l->ids[l->nids++], 48, "%s", row->id);
		json_decref(b);
		return 0;
	}
	int was_pending = strcmp(cof_json_str(b, "status") ? cof_json_str(b, "status") : "", "done");
	if (!was_pending) {
		done_of(op, b);
	} else if (!(op->supervised && op->sent)) {
		/* its call went with the process (or stayed at the other node) */
		op->done = op->lost = 1;
		op->error.code = COF_EGONE;
		snprintf(op->error.msg, sizeof op->error.msg, "the result of op '%s' (%s of '%s') "
			 "is unknown: %s while it was in flight", op->id, op->op, op->path,
			 !strcmp(l->why, "moved") ? "the relay session moved to another node"
						    : "cofferd restarted");
		op->error.extra = json_pack("{s:s, s:s}", "reason", l->why, "opId", op->id);
	}
	rop **pp = &l->s->ops;
	while (*pp)
		pp = &(*pp)->next;
	*pp = op;
	l->s->nops++;
	if (op->lost && was_pending)
		cof_relay_op_store(l->r, l->s, op);
	json_decref(b);
	return 0;
}

void cof_relay_ops_load(cof_relay *r, rsession *s, const char *why)
{
	load_ctx l = {.r = r, .s = s, .why = why, .forget = s->status == RS_ENDED};
	char prefix[40];
	cof_err e = {0};

	snprintf(prefix, sizeof prefix, "%s/", s->uid);
	if (cof_meta_state_scan(r->st->meta, RELAY_OP_KIND, prefix, load_one, &l, &e))
		fprintf(stderr, "cofferd: relay session %s: cannot load its ops: %s\n", s->uid,
			e.msg);
	cof_err_clear(&e);
	for (size_t i = 0; i < l.nids; i++) {
		if (cof_meta_state_delete(r->st->meta, RELAY_OP_KIND, l.ids[i], &e))
			fprintf(stderr, "cofferd: relay session %s: %s\n", s->uid, e.msg);
		cof_err_clear(&e);
	}
	free(l.ids);
	cof_relay_ops_prune(r, s);
}

void cof_relay_ops_forget_all(cof_relay *r, rsession *s)
{
	for (rop *op = s->ops; op; op = op->next)
		cof_relay_op_forget(r, s, op);
}

int cof_relay_op_lost(const rsession *s, const rop *op, cof_err *err)
{
	(void)s;
	cof_error(err, op->error.code, "%s", op->error.msg);
	if (op->error.extra) {
		const char *k;
		json_t *v;
		json_object_foreach(op->error.extra, k, v)
			cof_err_set(err, k, json_incref(v));
	}
	return -1;
}
