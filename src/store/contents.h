/*
 * contents.h — cof_contents: small contents kept in memory by their SHA-256,
 * between reads, for the metadata store's front (meta.c).
 *
 * A content named by its SHA-256 never changes, so what is kept here is never
 * stale: no write, fork, restore or collection has to tell the cache anything
 * (a collected content that comes back has the same bytes). It is there for
 * what a store's own caches lose: SQLite drops a reader's whole page cache,
 * and unmaps its mapping of the file, when any connection has committed since
 * its last read, so a view's pusher read every small file from the B-tree
 * again after each write; on PostgreSQL each read is a round trip.
 *
 * Kept: contents of at most COF_CONTENTS_ENTRY_MAX bytes; past the budget
 * the oldest not read since they came in go first, one read since is kept
 * for another turn (CLOCK, close to least recently used). Thread-safe (up to 16 locked shards by hash; the
 * lock is held while a reader copies a kept content out).
 */
#ifndef COF_CONTENTS_H
#define COF_CONTENTS_H

#include <stddef.h>
#include <stdint.h>

typedef struct cof_contents cof_contents;

#define COF_CONTENTS_ENTRY_MAX (64 * 1024)

/* A cache of up to `budget` bytes of contents (and their bookkeeping), or
 * NULL when out of memory. */
cof_contents *cof_contents_new(int64_t budget);
void cof_contents_free(cof_contents *c);

/* The kept content of `sha` (64 hex digits): fn(ctx, data, len) called under
 * its shard's lock (copy, do not keep the pointer), and 1; 0 when not kept. */
typedef void (*cof_contents_fn)(void *ctx, const unsigned char *data, size_t len);
int cof_contents_get(cof_contents *c, const char *sha, cof_contents_fn fn, void *ctx);
/* Keeps a copy of sha's `len` bytes (not past COF_CONTENTS_ENTRY_MAX; the
 * caller read them from the store, so they are sha's). Cannot fail: when
 * memory is short nothing is kept. */
void cof_contents_put(cof_contents *c, const char *sha, const unsigned char *data, size_t len);

/* Counters since the cache was made, for GET /metrics. */
typedef struct cof_contents_stats {
	uint64_t hits, misses, kept_bytes, kept;
} cof_contents_stats;
void cof_contents_stats_get(cof_contents *c, cof_contents_stats *out);

#endif
