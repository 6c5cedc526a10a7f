/*
 * notify.h — waiting and waking: one interface for everything that waits for
 * something to happen (a long-poll for a volume's next change, an agent's
 * events stream, a relay stream or op waiting on its session).
 *
 * A waiter subscribes to one or more topics and gets a subscription: a
 * generation counter that every publish to one of its topics moves on, and a
 * file descriptor that becomes readable when it moves (eventfd). It checks
 * the state it waits for, then waits for the generation to move past what it
 * saw before checking (cof_sub_wait), so no wake-up is lost between the two.
 * Publishers publish after the state changed (after a commit).
 *
 * A hub is chosen by the store: in process (this file's cof_notify_local)
 * for the embedded store; a PostgreSQL hub can map topics to LISTEN/NOTIFY
 * channels and set its subscriptions' fds readable from its listening
 * connection, so that a change on one node wakes waiters on every node. The
 * fd lets an event loop (the HTTP server, issue 13) suspend a request on it
 * instead of parking a thread in cof_sub_wait.
 */
#ifndef COF_NOTIFY_H
#define COF_NOTIFY_H

#include <stddef.h>
#include <stdint.h>
#include "coffer.h"

typedef enum cof_topic_kind {
	COF_TOPIC_VOLUME = 1,    /* a volume's changes: org + volume id */
	COF_TOPIC_AGENT,         /* an agent's events: org + agent id */
	COF_TOPIC_SESSION,       /* a relay session: its uid (org unused) */
} cof_topic_kind;

typedef struct cof_topic {
	cof_topic_kind kind;
	char org[48];
	char id[128];
} cof_topic;

typedef struct cof_notify cof_notify;
typedef struct cof_sub cof_sub;
typedef struct cof_notify_ops cof_notify_ops;

#define COF_SUB_TOPICS 40        /* topics one subscription may hold (an agent and its 32 mounts) */

struct cof_notify_ops {
	const char *name;        /* "local", "postgres" */
	/* A subscription to `n` topics (at most COF_SUB_TOPICS). */
	int (*subscribe)(cof_notify *hub, const cof_topic *topics, size_t n, cof_sub **out,
			 cof_err *err);
	/* Moves on the generation of every subscription to `t`, here and (for a
	 * shared hub) on every node. Never fails the caller: the state is stored,
	 * a lost wake-up only delays a waiter until its next timeout. */
	void (*publish)(cof_notify *hub, const cof_topic *t);
	/* Ends a subscription; NULL is fine. */
	void (*unsubscribe)(cof_sub *s);
	/* Wakes every subscription for good (the server is stopping): from now
	 * on cof_notify_closing is true and waits return at once. */
	void (*shutdown)(cof_notify *hub);
	/* Frees the hub; every subscription must have ended. */
	void (*close)(cof_notify *hub);
};

/* The base of every hub (its first member). */
struct cof_notify {
	const cof_notify_ops *ops;
	int closing;             /* set by shutdown (atomic) */
};

/* The base of every subscription (its first member). */
struct cof_sub {
	cof_notify *hub;
	int fd;                  /* readable once gen moved since the last wait */
	uint64_t gen;            /* moved on by each publish (atomic) */
};

/* The in-process hub. */
int cof_notify_local_open(cof_notify **out, cof_err *err);
/* The PostgreSQL hub (notify_pg.c): the in-process one, plus one LISTEN
 * connection to `url` through which every node's publishes (and the changes
 * the metadata store commits) wake this node's subscriptions. */
int cof_notify_pg_open(const char *url, cof_notify **out, cof_err *err);
/* The NOTIFY payload of topic `t` (what the metadata store sends in a
 * change's transaction, and the hub for other topics). */
void cof_notify_pg_payload(const cof_topic *t, char *out, size_t outsz);

/* Topic constructors: a volume (org, id), an agent (org, id), a session. */
cof_topic cof_topic_volume(const char *org, const char *vol);
cof_topic cof_topic_agent(const char *org, const char *agent);
cof_topic cof_topic_session(const char *uid);

/* Dispatch (notify.c). */
int cof_notify_subscribe(cof_notify *hub, const cof_topic *topics, size_t n, cof_sub **out,
			 cof_err *err);
void cof_notify_publish(cof_notify *hub, const cof_topic *t);
void cof_notify_unsubscribe(cof_sub *s);
void cof_notify_shutdown(cof_notify *hub);
void cof_notify_close(cof_notify *hub);
int cof_notify_closing(const cof_notify *hub);
/* The subscription's generation now. */
uint64_t cof_sub_gen(cof_sub *s);
/* Waits until the generation differs from `seen`, the hub shuts down or the
 * monotonic clock reaches `until_ms` (cof_mono_ms). Returns the generation. */
uint64_t cof_sub_wait(cof_sub *s, uint64_t seen, int64_t until_ms);

#endif
