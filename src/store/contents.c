/*
 * contents.c — small contents kept in memory by SHA-256 (see contents.h).
 *
 * Up to 16 shards, each a chained hash table and a use list (CLOCK: a read
 * marks an entry, eviction moves a marked one back to the head) under one
 * mutex. A SHA-256 is uniformly spread already, so its first 16 hex
 * digits are the hash: the low 4 bits pick the shard, the rest the bucket.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "store/contents.h"

#define SHARDS 16
/* A shard holds at least this much (four of the largest contents), so a
 * small budget has fewer shards rather than none able to keep anything. */
#define SHARD_MIN (4 * COF_CONTENTS_ENTRY_MAX)
#define SHA_HEX 64

typedef struct ent {
	struct ent *hnext;          /* the bucket's chain */
	struct ent *prev, *next;    /* the shard's use order: head most recent */
	uint64_t h;
	size_t len;
	int used;                   /* read since it last came to the head */
	char sha[SHA_HEX];
	unsigned char data[];
} ent;

typedef struct shard {
	pthread_mutex_t mu;
	ent **bucket;
	size_t nbucket, n;          /* nbucket: a power of two */
	ent *head, *tail;
	int64_t bytes, budget;      /* bytes: of the entries, bookkeeping included */
	uint64_t hits, misses;
} shard;

struct cof_contents {
	unsigned nshard;            /* a power of two, up to SHARDS */
	shard s[SHARDS];
};

/* One more than a lower-case hex digit's value; 0 for any other byte. */
static const unsigned char hex1[256] = {
	['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5,
	['5'] = 6, ['6'] = 7, ['7'] = 8, ['8'] = 9, ['9'] = 10,
	['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16,
};

/* The hash of a well-formed sha: 1, else 0 (nothing is kept for it). A
 * view's pusher asks for each file it pushes: one table lookup a digit. */
static int sha_hash(const char *sha, uint64_t *h)
{
	const unsigned char *p = (const unsigned char *)sha;
	uint64_t v = 0;

	for (size_t i = 0; i < SHA_HEX; i++) {
		unsigned d = hex1[p[i]];
		if (!d)
			return 0; /* (a NUL too: the string ends before its 64th) */
		if (i < 16)
			v = v << 4 | (d - 1);
	}
	if (p[SHA_HEX])
		return 0;
	*h = v;
	return 1;
}

static int64_t ent_cost(size_t len)
{
	return (int64_t)(sizeof(ent) + len) + (int64_t)sizeof(ent *);
}

cof_contents *cof_contents_new(int64_t budget)
{
	cof_contents *c = calloc(1, sizeof *c);

	if (!c)
		return NULL;
	c->nshard = SHARDS;
	while (c->nshard > 1 && budget / c->nshard < SHARD_MIN)
		c->nshard /= 2;
	for (unsigned i = 0; i < c->nshard; i++) {
		pthread_mutex_init(&c->s[i].mu, NULL);
		c->s[i].budget = budget / c->nshard;
	}
	return c;
}

void cof_contents_free(cof_contents *c)
{
	if (!c)
		return;
	for (unsigned i = 0; i < c->nshard; i++) {
		shard *s = &c->s[i];
		for (ent *e = s->head, *nx; e; e = nx) {
			nx = e->next;
			free(e);
		}
		free(s->bucket);
		pthread_mutex_destroy(&s->mu);
	}
	free(c);
}

static ent **slot(shard *s, uint64_t h, const char *sha)
{
	ent **p = &s->bucket[(h >> 4) & (s->nbucket - 1)];

	while (*p && ((*p)->h != h || memcmp((*p)->sha, sha, SHA_HEX)))
		p = &(*p)->hnext;
	return p;
}

static void unlink_use(shard *s, ent *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		s->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		s->tail = e->prev;
	e->prev = e->next = NULL;
}

static void push_use(shard *s, ent *e)
{
	e->prev = NULL;
	e->next = s->head;
	if (s->head)
		s->head->prev = e;
	s->head = e;
	if (!s->tail)
		s->tail = e;
}

int cof_contents_get(cof_contents *c, const char *sha, cof_contents_fn fn, void *ctx)
{
	uint64_t h;
	shard *s;
	ent *e;

	if (!c || !sha_hash(sha, &h))
		return 0;
	s = &c->s[h & (c->nshard - 1)];
	pthread_mutex_lock(&s->mu);
	e = s->nbucket ? *slot(s, h, sha) : NULL;
	if (!e) {
		s->misses++;
		pthread_mutex_unlock(&s->mu);
		return 0;
	}
	s->hits++;
	/* marked, not moved to the head: a move writes its two neighbours
	 * too, each a cache miss of its own (a third of the pusher's lookups);
	 * eviction gives a marked entry a second turn instead (CLOCK) */
	e->used = 1;
	fn(ctx, e->data, e->len);
	pthread_mutex_unlock(&s->mu);
	return 1;
}

/* Doubles s's buckets (under mu); on no memory keeps the old ones. */
static void grow(shard *s)
{
	size_t nb = s->nbucket ? s->nbucket * 2 : 256;
	ent **b = calloc(nb, sizeof *b);

	if (!b)
		return;
	for (size_t i = 0; i < s->nbucket; i++)
		for (ent *e = s->bucket[i], *nx; e; e = nx) {
			nx = e->hnext;
			e->hnext = b[(e->h >> 4) & (nb - 1)];
			b[(e->h >> 4) & (nb - 1)] = e;
		}
	free(s->bucket);
	s->bucket = b;
	s->nbucket = nb;
}

static void drop(shard *s, ent *e)
{
	*slot(s, e->h, e->sha) = e->hnext;
	unlink_use(s, e);
	s->bytes -= ent_cost(e->len);
	s->n--;
	free(e);
}

void cof_contents_put(cof_contents *c, const char *sha, const unsigned char *data, size_t len)
{
	uint64_t h;
	shard *s;
	ent *e;

	if (!c || len > COF_CONTENTS_ENTRY_MAX || !sha_hash(sha, &h))
		return;
	s = &c->s[h & (c->nshard - 1)];
	if (ent_cost(len) > s->budget)
		return;
	/* made before the lock: a malloc and copy of up to 64 KiB need not
	 * hold up the shard's readers */
	if (!(e = malloc(sizeof *e + len)))
		return;
	e->h = h;
	e->len = len;
	e->used = 0;
	memcpy(e->sha, sha, SHA_HEX);
	memcpy(e->data, data, len);
	pthread_mutex_lock(&s->mu);
	if (s->n >= s->nbucket)
		grow(s);
	if (!s->nbucket || *slot(s, h, sha)) { /* no table, or kept meanwhile */
		pthread_mutex_unlock(&s->mu);
		free(e);
		return;
	}
	while (s->tail && s->bytes + ent_cost(len) > s->budget) {
		ent *t = s->tail;
		if (t->used) { /* read since it came to the head: a second turn */
			t->used = 0;
			unlink_use(s, t);
			push_use(s, t);
		} else
			drop(s, t);
	}
	e->hnext = s->bucket[(h >> 4) & (s->nbucket - 1)];
	s->bucket[(h >> 4) & (s->nbucket - 1)] = e;
	push_use(s, e);
	s->bytes += ent_cost(len);
	s->n++;
	pthread_mutex_unlock(&s->mu);
}

void cof_contents_stats_get(cof_contents *c, cof_contents_stats *out)
{
	memset(out, 0, sizeof *out);
	if (!c)
		return;
	for (unsigned i = 0; i < c->nshard; i++) {
		shard *s = &c->s[i];
		pthread_mutex_lock(&s->mu);
		out->hits += s->hits;
		out->misses += s->misses;
		out->kept += s->n;
		out->kept_bytes += (uint64_t)s->bytes;
		pthread_mutex_unlock(&s->mu);
	}
}
