/*
 * pg_listen.h — one LISTEN connection per node for the notifications every
 * node's committed changes send (channel "coffer"; payloads from
 * cof_pg_notify). The callback runs on the listener's own thread, one payload
 * at a time; "" means notifications may have been lost (after a reconnect):
 * wake everything.
 */
#ifndef COF_PG_LISTEN_H
#define COF_PG_LISTEN_H

#include "coffer.h"
#include "util/util.h"

typedef struct cof_pg_listener cof_pg_listener;
typedef void (*cof_pg_notify_fn)(void *ctx, const char *payload);

/* Connects to `url`, LISTENs and starts the thread. COF_EUNAVAILABLE when
 * the database cannot be reached. */
int cof_pg_listener_start(const char *url, cof_pg_notify_fn fn, void *ctx,
			  cof_pg_listener **out, cof_err *err);
/* Stops the thread (no callback runs after it returns) and frees it; NULL-safe. */
void cof_pg_listener_stop(cof_pg_listener *l);

#endif
