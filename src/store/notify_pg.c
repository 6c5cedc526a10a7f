/*
 * notify_pg.c — the notification hub (notify.h) of nodes sharing one
 * PostgreSQL database: the in-process hub for this node's subscriptions, and
 * LISTEN/NOTIFY on channel "coffer" between nodes.
 *
 * A volume's change is announced by the metadata store itself, inside the
 * transaction that commits it (meta_pg_group.c: "v" ORG ID), so every node
 * hears of it exactly when it is visible; other topics (an agent's events, a
 * relay session) are sent by publish on a connection of the hub's own. The
 * listener (pg_listen.c) turns each payload back into a topic and publishes it
 * here. A node hears its own notifications too: one more wake-up, after which
 * the waiter finds nothing new and waits again. Payloads lost while the
 * listening connection was down only delay waiters to their timeouts, as the
 * notify.h contract allows.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libpq-fe.h>
#include "store/notify.h"
#include "store/pg_listen.h"
#include "util/util.h"

#define SEP '\x1f'   /* between the fields of a payload: never in an org or id */

typedef struct pg_hub {
	cof_notify base;
	cof_notify *local;
	cof_pg_listener *listener;
	char *url;
	pthread_mutex_t mu;      /* over db: one NOTIFY at a time */
	PGconn *db;
} pg_hub;

/* The payload of topic `t`: KIND SEP ORG SEP ID, kind one letter. */
void cof_notify_pg_payload(const cof_topic *t, char *out, size_t outsz)
{
	char k = t->kind == COF_TOPIC_VOLUME ? 'v' : t->kind == COF_TOPIC_AGENT ? 'a' : 's';
	snprintf(out, outsz, "%c%c%s%c%s", k, SEP, t->org, SEP, t->id);
}

/* Parses a payload; 0 when it is not one (another program on the channel). */
static int payload_topic(const char *p, cof_topic *t)
{
	const char *a, *b;

	memset(t, 0, sizeof *t);
	if (!p[0] || p[1] != SEP || !(a = strchr(p + 2, SEP)))
		return 0;
	b = a + 1;
	t->kind = p[0] == 'v' ? COF_TOPIC_VOLUME : p[0] == 'a' ? COF_TOPIC_AGENT
		: p[0] == 's' ? COF_TOPIC_SESSION : 0;
	if (!t->kind || (size_t)(a - (p + 2)) >= sizeof t->org || strlen(b) >= sizeof t->id)
		return 0;
	memcpy(t->org, p + 2, (size_t)(a - (p + 2)));
	snprintf(t->id, sizeof t->id, "%s", b);
	return 1;
}

static void on_payload(void *ctx, const char *payload)
{
	pg_hub *h = ctx;
	cof_topic t;

	if (payload_topic(payload, &t))
		cof_notify_publish(h->local, &t);
}

static int pg_subscribe(cof_notify *n, const cof_topic *topics, size_t ntopics,
			cof_sub **out, cof_err *err)
{
	return cof_notify_subscribe(((pg_hub *)n)->local, topics, ntopics, out, err);
}

/* Here at once; on the other nodes through NOTIFY (volumes: the metadata
 * store's own, in the committing transaction). */
static void pg_publish(cof_notify *n, const cof_topic *t)
{
	pg_hub *h = (pg_hub *)n;
	char payload[256];
	const char *vals[1] = {payload};

	cof_notify_publish(h->local, t);
	if (t->kind == COF_TOPIC_VOLUME)
		return;
	cof_notify_pg_payload(t, payload, sizeof payload);
	pthread_mutex_lock(&h->mu);
	if (!h->db || PQstatus(h->db) != CONNECTION_OK) {
		PQfinish(h->db);
		h->db = PQconnectdb(h->url);
	}
	if (h->db && PQstatus(h->db) == CONNECTION_OK)
		PQclear(PQexecParams(h->db, "SELECT pg_notify('coffer', $1)", 1, NULL, vals, NULL,
				     NULL, 0));
	pthread_mutex_unlock(&h->mu);
}

static void pg_unsubscribe(cof_sub *s)
{
	cof_notify_unsubscribe(s);   /* the local hub's own */
}

static void pg_shutdown(cof_notify *n)
{
	pg_hub *h = (pg_hub *)n;

	__atomic_store_n(&h->base.closing, 1, __ATOMIC_SEQ_CST);
	cof_notify_shutdown(h->local);
}

static void pg_close(cof_notify *n)
{
	pg_hub *h = (pg_hub *)n;

	if (!h)
		return;
	cof_pg_listener_stop(h->listener);   /* no callback after this */
	cof_notify_close(h->local);
	PQfinish(h->db);
	pthread_mutex_destroy(&h->mu);
	free(h->url);
	free(h);
}

static const cof_notify_ops pg_ops = {
	"postgres", pg_subscribe, pg_publish, pg_unsubscribe, pg_shutdown, pg_close
};

int cof_notify_pg_open(const char *url, cof_notify **out, cof_err *err)
{
	pg_hub *h = cof_calloc(1, sizeof *h);

	*out = NULL;
	h->base.ops = &pg_ops;
	h->url = cof_strdup(url);
	pthread_mutex_init(&h->mu, NULL);
	if (cof_notify_local_open(&h->local, err) ||
	    cof_pg_listener_start(url, on_payload, h, &h->listener, err)) {
		pg_close(&h->base);
		return -1;
	}
	*out = &h->base;
	return 0;
}
