/*
 * store.h — cof_store: one data dir, holding the blob store, the metadata store,
 * the server's secrets and what coordinates threads of one process.
 * Only libcoffer sees this struct; callers hold an opaque cof_store.
 */
#ifndef COF_STORE_H
#define COF_STORE_H

#include <pthread.h>
#include "coffer.h"
#include "store/blob.h"
#include "store/meta.h"
#include "store/notify.h"

struct cof_store {
	char *dir;
	cof_blobstore *blobs;
	cof_meta *meta;
	cof_store_opts opts;
	char admin_key[80];
	int admin_key_new;
	unsigned char link_secret[32];
	/* Uploads hold it shared from blob commit to metadata commit; the collector
	 * holds it exclusively while deleting, so it never deletes content that a
	 * write is about to name. */
	pthread_rwlock_t gc_lock;
	/* Waiting and waking (notify.h): long-polls, agent events, relay waits;
	 * on PostgreSQL it hears every node's changes (notify_pg.c). */
	cof_notify *notify;
	/* Agent events (file_presented) and the changes agents made through their
	 * own tools, kept in memory for the events stream; under events_mu. */
	pthread_mutex_t events_mu;
	struct { uint64_t id; char org[48]; char agent[128]; char *json; } events[256];
	uint64_t event_next;
	struct { char agent[128]; char vol[48]; int64_t seq; } own[1024];
	uint64_t own_next;
	/* Keys seen recently (by hash): keys are never revoked, so an API call
	 * needs no metadata read to authenticate. Direct-mapped. */
	pthread_mutex_t key_mu;
	struct { char hash[65]; cof_principal who; } keys[128];
	/* libmagic handles are not thread-safe: one, behind a mutex. */
	pthread_mutex_t magic_mu;
	void *magic;
};

/* Wakes whoever waits on volume `v` (long-polls, agents' notify mounts)
 * after a change to it was committed. */
void cof_store_changed(cof_store *st, const cof_volrow *v);

#endif
