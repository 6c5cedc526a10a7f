/*
 * relay.h — what the files of the server's half of the relay (src/relay/)
 * share: the session registry in memory (registry.c), its one lock, the
 * life-cycle steps (session.c) and the store writes queued under the lock
 * and made after it (wqueue.c). The public
 * contract is the "relay" section of include/coffer.h; the wire protocol with
 * the user's client is docs/relay-protocol.md.
 *
 * Locking: one mutex (r->mu) guards every session, op and event in memory.
 * Nobody waits under it: a waiting request subscribes to the store's
 * notifications (st->notify, the session's topic) and is resumed when they
 * fire, then re-checks what it waits for under r->mu. Waiters hold a
 * session reference (refs) and look their op up by id after waking, so
 * nothing they point at is freed under them. No store write is made under
 * r->mu: it is queued and made by cof_relay_unlock (wqueue.c, which says why
 * that keeps each session's writes in order); store reads still are (a
 * session's record when looked up with several nodes, its events).
 */
#ifndef COF_RELAY_H
#define COF_RELAY_H

#include <pthread.h>
#include "coffer.h"
#include "policy/policy.h"
#include "util/util.h"
#include "store/meta.h"

#define RELAY_EVENTS 1024        /* events kept per session (stored stream) */
#define RELAY_LOG_MAX 5000       /* log entries kept per session (stored stream) */
#define RELAY_EVENT_STREAM "relay:"   /* + uid: the session's events */
#define RELAY_LOG_STREAM "relaylog:"  /* + uid: the session's log */
#define RELAY_SESSIONS_MAX 1000  /* sessions in memory; ended ones dropped first */
#define RELAY_SESSIONS_PER_ORG 100 /* sessions not ended, per organization */
#define RELAY_ENDED_KEEP 86400   /* an ended session stays readable this long */
#define RELAY_OPS_KEPT 256       /* finished ops nobody waits for, kept for ops/{id} */
#define RELAY_OPS_INFLIGHT 1024  /* ops of a session not finished (429 past it) */
#define RELAY_OP_KIND "relayop"  /* stored ops' records (oprec.c) */
#define RELAY_OP_RECORD_MAX 16384 /* bytes of a stored op's record */
#define RELAY_EVENT_DATA_MAX 4096 /* a client event's data, as JSON */
#define RELAY_DEFAULT_GRACE 600
#define RELAY_DEFAULT_OP_WAIT_MS 120000

/* Who an event goes to. */
#define EV_AGENT 1u
#define EV_CLIENT 2u

typedef enum { RS_WAITING = 0, RS_ACTIVE, RS_PAUSED, RS_ENDED } rs_status;

/* One operation of the agent, from the check to its answer. */
typedef struct rop {
	struct rop *next;
	char id[32];
	char op[16];
	char *path;          /* as asked ("" for the root) */
	json_t *msg;         /* the op as the client gets it; NULL once sent */
	int is_write;
	int supervised;      /* a write in supervised mode */
	int waiter;          /* an agent call waits for it */
	int sent;
	int done;
	int lost;            /* done: its result is unknown (a restart, a move): 410 */
	uint64_t gen;        /* the client attachment it belongs to */
	int64_t size;        /* bytes of a write */
	char sha256[65];     /* of a write's bytes: what the answer must report */
	int64_t max_results; /* a search's cap */
	json_t *result;      /* done and ok */
	cof_err error;       /* done and failed */
	uint64_t rec_seq;    /* its pending record's place in s's write queue: sent
				to the client once s->wdone reaches it (wqueue.c) */
} rop;

typedef struct rwrite rwrite; /* a queued store write (wqueue.c) */

typedef struct rsession {
	struct rsession *next;
	char uid[32];
	char org[48];
	char agent[128];
	char token_hash[65];
	rs_status status;
	cof_mode mode, default_mode;
	cof_limits limits;
	cof_excl *excl;         /* the defaults and the user's patterns */
	json_t *user_excl;      /* the user's patterns as given */
	cof_protect *prot;      /* the user's --allow-write (NULL: none yet) */
	char client[128];
	/* Timers run on cof_mono_ms(), so a step of the wall clock ends no
	 * session; the record stores them as wall-clock ms (persist.c), turned
	 * back into monotonic ones at load, so they go on across a restart. */
	int64_t started_at;     /* unix seconds, shown */
	int64_t started_ms;     /* cof_mono_ms() then: what the time limit measures */
	int64_t paused_ms;      /* cof_mono_ms() when it paused */
	int64_t ended_at;       /* unix seconds, shown */
	int64_t ended_ms;       /* cof_mono_ms() then: what pruning measures */
	char end_reason[16];
	int64_t reads, writes, bytes_written;
	uint64_t gen;           /* rises with every client attach */
	int attached;
	int agent_streams;
	int refs;               /* calls and streams that point at it */
	rop *ops;
	size_t nops;
	uint64_t ev_next;       /* the id of its last stored event */
	int mirror;             /* a copy of another node's session, read from the
				   store for one agent events stream (stream.c) */
	int forget;             /* its agent was deleted: nothing more is stored;
				   1: its stored events go when no stream reads
				   them any more, 2: gone (forget.c) */
	/* Store writes made after r->mu is dropped (wqueue.c). */
	rwrite *wq, *wq_tail;   /* queued, oldest first (under r->mu) */
	uint64_t wseq;          /* the last queued item's number (under r->mu) */
	uint64_t wdone;         /* the last stored item's number (under r->mu) */
	pthread_mutex_t wmu;    /* one thread stores s's queue at a time; taken
				   only without r->mu */
} rsession;

struct cof_relay {
	cof_store *st;
	char node[64];          /* this node's name: sessions whose client is here */
	int64_t grace_ms;
	int64_t op_wait_ms;
	size_t sessions_max;    /* the global ceiling */
	size_t sessions_per_org;
	pthread_mutex_t mu;      /* waits and wake-ups: st->notify, a session's topic */
	int closing;
	rsession *sessions;     /* newest first */
	size_t nsessions;
	struct pcount *mirrors; /* agent streams open here on others' sessions */
};

/* All below: call with r->mu held. */

/* Registry (registry.c). Whether `org` may open one more session: time
 * limits applied and ended sessions pruned first; COF_ERATELIMIT naming the
 * limit (per organization, then the server's). */
int cof_relay_room(cof_relay *r, const char *org, cof_err *err);
/* Adds a made or claimed session (newest first). */
void cof_relay_add(cof_relay *r, rsession *s);

/* The session `uid` as `who` may see it (org, agent binding), else
 * COF_ENOTFOUND. Applies its time limit and grace time first. */
rsession *cof_relay_find(cof_relay *r, const cof_principal *who, const char *uid, cof_err *err);
/* The session `uid` for its client: the token must match (COF_EUNAUTHORIZED). */
rsession *cof_relay_find_client(cof_relay *r, const char *uid, const char *token, cof_err *err);
/* Ends a session with `reason` if it is not ended: events to both sides,
 * every op not done fails with COF_EGONE. */
void cof_relay_session_end(cof_relay *r, rsession *s, const char *reason);
/* Ends the session when its time limit or its grace time is over. */
void cof_relay_tick(cof_relay *r, rsession *s);
/* The attached client is gone (`reason` "disconnected" or "idle"): paused,
 * its ops in flight fail with COF_EUNAVAILABLE. */
void cof_relay_detach(cof_relay *r, rsession *s, const char *reason);
/* Adds an event {type, data} (data stolen) for `to`; wakes the streams. */
void cof_relay_event(cof_relay *r, rsession *s, unsigned to, const char *type, json_t *data);
/* Adds a log entry (stolen) to the stored log; `at` is added. */
void cof_relay_log_add(cof_relay *r, rsession *s, json_t *entry);
/* Writes the session's record to the store (persist.c); a failure is logged
 * to stderr: the session goes on from memory. */
void cof_relay_persist(cof_relay *r, rsession *s);
/* Loads the stored sessions at start (persist.c): one that was active is
 * paused until its client reconnects; its timers go on from stored times. */
int cof_relay_load(cof_relay *r, cof_err *err);
/* A session's client attaches at this node while another holds it (its
 * record names another node): moved here when it is not active, or when
 * the node holding it is gone (with the session paused first); NULL with
 * err otherwise. */
rsession *cof_relay_claim(cof_relay *r, const char *uid, const char *token, cof_err *err);
/* A session from its stored record (persist.c). */
rsession *cof_relay_session_of(const cof_staterow *row, cof_err *err);
/* A session as loaded or made: filled by the caller, freed by session_free. */
rsession *cof_relay_session_new(void);
void cof_relay_session_free(rsession *s);
/* The status name ("waiting", ...) and back (-1 when unknown). */
const char *cof_relay_status_name(rs_status st);
int cof_relay_status_of(const char *name);
/* COF_EGONE naming why the session ended. */
int cof_relay_gone(const rsession *s, cof_err *err);
/* The answer of get/list. */
json_t *cof_relay_session_json(const rsession *s);
/* Drops a reference; frees nothing (pruning does). */
void cof_relay_unref(rsession *s);
/* An op finishes with `result` (stolen) or `e` (copied): logged, a write's
 * write_result event, its waiter woken. */
void cof_relay_op_finish(cof_relay *r, rsession *s, rop *op, json_t *result, const cof_err *e);
/* Adds {protected:[rule names], allowWrite:[the user's --allow-write]} to
 * `obj` (the session's answer, the exclusions event). */
void cof_relay_protect_json(const rsession *s, json_t *obj);
/* Checks and filters a client's successful answer to `op` in place (ops.c):
 * exclusions hidden from listings and search, search capped, read size. */
int cof_relay_result_check(rsession *s, rop *op, json_t *result, cof_err *err);
void cof_relay_op_free(rop *op);
/* Removes finished ops nobody waits for beyond RELAY_OPS_KEPT (and their
 * records). */
void cof_relay_ops_prune(cof_relay *r, rsession *s);
/* Ops' records in the store (oprec.c). Queues op's record (a failure is
 * said on stderr: the op goes on from memory); its place in s's queue (0:
 * nothing queued). */
uint64_t cof_relay_op_store(cof_relay *r, rsession *s, const rop *op);
/* Forgets op's record. */
void cof_relay_op_forget(cof_relay *r, rsession *s, const rop *op);
/* Forgets the records of every op of s (the session ended). */
void cof_relay_ops_forget_all(cof_relay *r, rsession *s);
/* Puts the stored ops of s back in s->ops after a restart or a move here
 * (`why`: "restart" or "moved"); the records of an ended session go. */
void cof_relay_ops_load(cof_relay *r, rsession *s, const char *why);
/* Agent streams on every node (presence.c). An agent stream of s opens
 * (s a mirror or the session held here). */
void cof_relay_presence_open(cof_relay *r, rsession *s);
/* One closes: 1 when none is left open on any node alive. */
int cof_relay_presence_close(cof_relay *r, rsession *s);
/* Adds agent_disconnected to s's events (stored; the holder's streams and
 * every node's get it). */
void cof_relay_presence_event(cof_relay *r, rsession *s);
/* At start: this node's stored counts of the last run are 0 now. */
void cof_relay_presence_reset(cof_relay *r);
void cof_relay_presence_free(cof_relay *r);
/* A session whose agent was deleted (s->forget) and that nothing points at
 * any more: its stored events go (forget.c). */
void cof_relay_forget_done(cof_relay *r, rsession *s);
/* Several nodes: ends s when its record is gone and its agent too (deleted
 * at another node), as cof_relay_agent_deleted does here. */
void cof_relay_forget_check(cof_relay *r, rsession *s);
/* The 410 of an op whose result is unknown (op->lost). Returns -1. */
int cof_relay_op_lost(const rsession *s, const rop *op, cof_err *err);
/* With r->mu held: releases it until session s is woken (cof_relay_wake),
 * the hub shuts down or `until_ms` (cof_mono_ms time) passes; holds it again. */
void cof_relay_wait(cof_relay *r, rsession *s, int64_t until_ms);
/* Wakes whoever waits on session s (its streams, its ops' callers). */
void cof_relay_wake(cof_relay *r, rsession *s);
/* The write queue (wqueue.c): store writes queued under r->mu, stored in
 * order per session after it is dropped. An event or log entry (text
 * taken) for the stream `prefix` + uid; */
void cof_relay_wq_stream(rsession *s, const char *prefix, unsigned to, char *text,
			 int64_t keep);
/* the session's record (body taken; replaces one queued last); */
void cof_relay_wq_save(cof_relay *r, rsession *s, json_t *body);
/* a record put (text taken; its number in the queue) or deleted; */
uint64_t cof_relay_wq_put(rsession *s, const cof_staterow *row, char *text);
void cof_relay_wq_delete(rsession *s, const char *kind, const char *id);
/* every record of s forgotten, its events too when `events`. */
void cof_relay_wq_forget(rsession *s, int events);
/* With r->mu held: this thread's unlock also waits until what is queued for
 * s now (by any thread) is stored, so an answer never tells of a change the
 * store does not have yet. */
void cof_relay_wq_sync(rsession *s);
/* Without r->mu: stores what this thread queued. */
void cof_relay_wq_flush(cof_relay *r);
/* Drops r->mu, then stores what this thread queued: every unlock of r->mu
 * in the relay is this one, so no call answers before its writes are stored. */
void cof_relay_unlock(cof_relay *r);
/* Frees s's queue (at close). */
void cof_relay_wq_free(rsession *s);
/* The API error code of a type name ("not_found"), COF_EINTERNAL if unknown. */
cof_code cof_relay_code_of(const char *type);

#endif
