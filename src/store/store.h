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
	/* The content lock and the serving lock (lock.c): gc_lock between this
	 * process's threads, gc_fd (DATA/gc.lock) between processes; holders
	 * counts this process's writers inside it. serve_fd holds DATA/lock. */
	pthread_rwlock_t gc_lock;
	pthread_mutex_t hold_mu;
	int64_t holders;
	int gc_fd, serve_fd;
	/* Waiting and waking (notify.h): long-polls, agent events, relay waits;
	 * on PostgreSQL it hears every node's changes (notify_pg.c). */
	cof_notify *notify;
	/* The changes agents made through their own tools, kept in memory for
	 * the events stream; under events_mu. (Agent events are stored: events.c.) */
	pthread_mutex_t events_mu;
	struct { char agent[128]; char vol[48]; int64_t seq; } own[1024];
	uint64_t own_next;
	/* libmagic handles are not thread-safe: a pool of them, each used by one
	 * thread at a time (cof_store_magic_take/give), opened as needed up to
	 * COF_MAGIC_MAX; under magic_mu. */
	pthread_mutex_t magic_mu;
	pthread_cond_t magic_cv;
	void *magic_free[16];
	int magic_nfree, magic_open, magic_broken;
	/* Told of every committed change after the waiters are woken (the
	 * webhooks' volume.changed, hooks/hooks.c): set once before serving. */
	void (*on_changed)(void *ctx, const cof_volrow *v);
	void *on_changed_ctx;
};
#define COF_MAGIC_MAX 16

/* A libmagic handle (MAGIC_MIME_TYPE) for this thread alone until given back,
 * waiting while COF_MAGIC_MAX are in use; NULL when libmagic cannot load its
 * database (the callers then go by the name). */
void *cof_store_magic_take(cof_store *st);
void cof_store_magic_give(cof_store *st, void *magic);

/* The organization of the admin key (and of keys minted without an org). */
#define COF_DEFAULT_ORG COF_ADMIN_ORG
/* Stores a key by `hash` (keys.c): of `org`, the admin key when `admin`. */
int cof_key_register(cof_store *st, const char *hash, const char *org, int admin,
		     cof_err *err);
/* Stores the admin key `hash` unless the dataset has one (nodes starting
 * together on one dataset make one between them): 1 stored, 0 one was there. */
int cof_key_register_first_admin(cof_store *st, const char *hash, cof_err *err);

/* S3 secrets (s3keys.c): seals `key` (id `id` of `org`) for the gateway; 0
 * or -1. _ensure seals an authenticated key not sealed yet (once a process
 * per key; failures ignored). */
int cof_key_s3_seal(cof_store *st, const char *id, const char *org, const char *key,
		    cof_err *err);
void cof_key_s3_ensure(cof_store *st, const cof_principal *who, const char *key);

/* Takes the data dir's locks (lock.c); `serve` also takes DATA/lock, refused
 * (COF_ECONFLICT naming the pid) while another cofferd holds it. */
int cof_store_locks_open(cof_store *st, int serve, cof_err *err);
void cof_store_locks_close(cof_store *st);
/* A write holds content from its blob's commit until the metadata naming the
 * blob has committed (or failed); the collector never deletes meanwhile, in
 * this process or another. Cannot fail. */
void cof_store_hold_content(cof_store *st);
void cof_store_release_content(cof_store *st);
/* The collector, around forgetting and deleting content: waits for writes of
 * every process to leave it (COF_EUNAVAILABLE after a minute). */
int cof_store_collect_begin(cof_store *st, cof_err *err);
void cof_store_collect_end(cof_store *st);

/* On a shared dataset the secret signing links is the dataset's: the state
 * record (COF_LINK_KIND, COF_LINK_ID), body {"secret": hex} written into
 * out[cap] by cof_link_secret_body (0, or -1 if cap is short). */
#define COF_LINK_KIND "dataset"
#define COF_LINK_ID "link.key"
int cof_link_secret_body(const unsigned char *secret, size_t len, char *out, size_t cap);

/* 1 when the metadata or the blobs are on another host (PostgreSQL, S3), so
 * that a request's store calls are round trips (the server then runs its
 * handlers on workers, not on the event loop); 0 for the embedded store. */
int cof_store_remote(const cof_store *st);

/* Wakes whoever waits on volume `v` (long-polls, agents' notify mounts)
 * after a change to it was committed. */
void cof_store_changed(cof_store *st, const cof_volrow *v);
/* Sets who cof_store_changed tells besides (NULL: none); before serving. */
void cof_store_on_changed(cof_store *st, void (*fn)(void *ctx, const cof_volrow *v),
			  void *ctx);

/* The store's half of cof_migrate (migrate.c): copies the embedded dataset
 * `from` into `meta` (PostgreSQL) and `blobs`, then checks row counts and each
 * copied blob's sha256. The answer as cof_migrate's, without `fsck`. */
int cof_store_migrate(const char *from, const char *meta, const char *blobs, json_t **out,
		      cof_err *err);

/* The store's half of cof_backup/cof_restore (backup.c): the embedded dataset
 * `from` copied into `to` (new or empty; COF_ECONFLICT otherwise, and for a
 * restore into a dir a cofferd holds), the metadata as one snapshot, then
 * every blob it names (sha256 checked), then the keys. Answer {ok, from, to,
 * files, blobs, bytes, volumes, maxSeq, collectedMeanwhile?}. */
int cof_store_backup(const char *from, const char *to, int restore, json_t **out,
		     cof_err *err);

#endif
