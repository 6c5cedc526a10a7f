/*
 * pg_listen.c — the listening half of cross-node notifications on PostgreSQL.
 *
 * Every change a node commits sends NOTIFY on channel "coffer" inside its
 * transaction (cof_pg_notify), so PostgreSQL delivers it to every listening
 * connection exactly when the change is visible, and never for a change rolled
 * back. Each node keeps one connection of its own LISTENing and a thread that
 * hands each payload to a callback. When the connection drops, the thread
 * reconnects (backing off up to a second) and then reports a payload of ""
 * ("anything may have changed"), since notifications sent meanwhile are lost.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <libpq-fe.h>
#include "store/pg_listen.h"

struct cof_pg_listener {
	char *url;
	cof_pg_notify_fn fn;
	void *ctx;
	pthread_t thread;
	int stop_pipe[2];          /* written once by cof_pg_listener_stop */
	PGconn *db;
};

/* Connects and LISTENs; NULL when the database cannot be reached. */
static PGconn *listen_open(const char *url)
{
	PGconn *db = PQconnectdb(url);
	PGresult *r;

	if (!db || PQstatus(db) != CONNECTION_OK) {
		PQfinish(db);
		return NULL;
	}
	r = PQexec(db, "LISTEN coffer");
	if (PQresultStatus(r) != PGRES_COMMAND_OK) {
		PQclear(r);
		PQfinish(db);
		return NULL;
	}
	PQclear(r);
	return db;
}

/* Waits up to `ms` for the stop pipe: 1 when told to stop. */
static int stopped(cof_pg_listener *l, int ms)
{
	struct pollfd p = {.fd = l->stop_pipe[0], .events = POLLIN};
	return poll(&p, 1, ms) > 0;
}

/* Hands every notification that arrived to the callback. */
static void drain(cof_pg_listener *l)
{
	PGnotify *n;

	while ((n = PQnotifies(l->db))) {
		l->fn(l->ctx, n->extra ? n->extra : "");
		PQfreemem(n);
	}
}

static void *listen_main(void *arg)
{
	cof_pg_listener *l = arg;
	int backoff = 50;

	for (;;) {
		if (!l->db) {
			if (stopped(l, backoff))
				break;
			if (!(l->db = listen_open(l->url))) {
				backoff = backoff < 1000 ? backoff * 2 : 1000;
				continue;
			}
			backoff = 50;
			l->fn(l->ctx, "");   /* what was sent while deaf is lost */
		}
		struct pollfd p[2] = {
			{.fd = PQsocket(l->db), .events = POLLIN},
			{.fd = l->stop_pipe[0], .events = POLLIN},
		};
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[1].revents)
			break;
		if (p[0].revents && (!PQconsumeInput(l->db) || PQstatus(l->db) != CONNECTION_OK)) {
			PQfinish(l->db);
			l->db = NULL;
			continue;
		}
		drain(l);
	}
	return NULL;
}

int cof_pg_listener_start(const char *url, cof_pg_notify_fn fn, void *ctx,
			  cof_pg_listener **out, cof_err *err)
{
	cof_pg_listener *l = cof_calloc(1, sizeof *l);

	*out = NULL;
	if (!l || !(l->url = cof_strdup(url))) {
		free(l);
		return cof_error(err, COF_EINTERNAL, "out of memory");
	}
	l->fn = fn;
	l->ctx = ctx;
	l->stop_pipe[0] = l->stop_pipe[1] = -1;
	if (!(l->db = listen_open(url))) {
		cof_pg_listener_stop(l);
		return cof_error(err, COF_EUNAVAILABLE,
				 "cannot listen for changes on the metadata database");
	}
	if (pipe2(l->stop_pipe, O_CLOEXEC) || pthread_create(&l->thread, NULL, listen_main, l)) {
		int e = errno;
		PQfinish(l->db);
		l->db = NULL;
		cof_pg_listener_stop(l);
		return cof_error(err, COF_EINTERNAL, "cannot start the change listener: %s",
				 strerror(e));
	}
	*out = l;
	return 0;
}

void cof_pg_listener_stop(cof_pg_listener *l)
{
	if (!l)
		return;
	if (l->stop_pipe[1] >= 0 && l->thread) {
		if (write(l->stop_pipe[1], "x", 1) == 1)
			pthread_join(l->thread, NULL);
	}
	PQfinish(l->db);
	if (l->stop_pipe[0] >= 0)
		close(l->stop_pipe[0]);
	if (l->stop_pipe[1] >= 0)
		close(l->stop_pipe[1]);
	free(l->url);
	free(l);
}
