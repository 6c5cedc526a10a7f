/*
 * meta_sqlite_cache.c — the rows a small GET reads (its key, its volume, its
 * file), kept by each event loop between requests, and dropped as soon as any
 * process commits anything to the store.
 *
 * A 4 KiB GET on the embedded store spent about a third of cofferd's CPU in
 * SQLite: three statements, and the read transaction's locks (two fcntl a
 * request). A thread with a pinned reader (cof_meta_pin_reader: an event
 * loop) keeps the last rows it read, each stamped with the store's commit
 * mark taken before the read; a row is used again only while the mark is
 * unchanged, that is while no commit at all has happened since it was read.
 *
 * The mark is the header of SQLite's WAL index (the -shm file every
 * connection to a WAL database maps; its layout is SQLite's documented file
 * format, https://sqlite.org/walformat.html): a commit by any connection of
 * any process (cofferd's writer, `coffer gc`, `coffer --data ...`) rewrites
 * it, its change counter, last frame and salts, before the commit is visible
 * to readers; a WAL restart changes the salts. So a revoked key, a deleted
 * volume, a new version of a file fail or show on the first request that
 * starts after the commit, on every loop, as they did when each request read
 * the rows: only requests under way at the commit may see either state.
 *
 * The mark is read from the pinned reader's own mapping of the index
 * (xShmMap of region 0, which stays mapped while the connection is open).
 * Nothing is kept when the store is not in WAL mode or the mapping is not
 * there, or when the reader is inside a read transaction the mark cannot
 * date (one not begun by cof_meta_read_hold).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "store/meta_sqlite.h"

#define KEY_SLOTS 4
#define VOL_SLOTS 4
#define ENT_SLOTS 8
#define ENT_DATA_MAX (16 * 1024)  /* inline content kept with a file's row */

typedef struct mark {
	uint32_t w[4];           /* change counter, last frame, two salts */
} mark;

typedef struct tcache {
	uint64_t serial;         /* the store these rows are of */
	const volatile uint32_t *hdr; /* the WAL index header; NULL = keep nothing */
	int tried;               /* hdr looked for on this store */
	mark hold;               /* the mark at cof_meta_read_hold's BEGIN */
	int held;
	struct { mark mk; int used; cof_keyrow k; } keys[KEY_SLOTS];
	struct { mark mk; int used; char org[48], id[48]; cof_volrow v; } vols[VOL_SLOTS];
	struct ent {
		mark mk;
		int used;
		int64_t vno, at_seq;
		cof_entry e;
		unsigned char *data; /* NULL = none (content in the blob store) */
		size_t len;
	} ents[ENT_SLOTS];
	unsigned next_key, next_vol, next_ent;
} tcache;

static _Thread_local tcache *tc;
static pthread_key_t tc_key;          /* frees a thread's cache when it ends */
static pthread_once_t tc_once = PTHREAD_ONCE_INIT;

/* Drops every row (their store closed, or another store is read). */
static void tc_clear(tcache *t)
{
	for (int i = 0; i < ENT_SLOTS; i++)
		free(t->ents[i].data);
	memset(t, 0, sizeof *t);
}

static void tc_free(void *p)
{
	tc_clear(p);
	free(p);
}

static void tc_key_init(void)
{
	(void)pthread_key_create(&tc_key, tc_free);
}

/* Region 0 of c's WAL index, or NULL when c has none mapped. */
static const volatile uint32_t *wal_header(conn *c)
{
	sqlite3_file *fp = NULL;
	volatile void *p = NULL;
	const char *mode;
	sqlite3_stmt *st;
	int wal = 0;

	if (sqlite3_prepare_v2(c->db, "PRAGMA journal_mode", -1, &st, NULL) != SQLITE_OK)
		return NULL;
	if (sqlite3_step(st) == SQLITE_ROW && (mode = (const char *)sqlite3_column_text(st, 0)))
		wal = strcmp(mode, "wal") == 0;
	sqlite3_finalize(st);
	if (!wal || sqlite3_file_control(c->db, "main", SQLITE_FCNTL_FILE_POINTER, &fp) !=
		    SQLITE_OK || !fp || !fp->pMethods || fp->pMethods->iVersion < 2 ||
	    !fp->pMethods->xShmMap)
		return NULL;
	if (fp->pMethods->xShmMap(fp, 0, 32 * 1024, 0, &p) != SQLITE_OK || !p)
		return NULL;
	return (const volatile uint32_t *)p;
}

/* The calling thread's cache for m when it may use one (a pinned reader of
 * m, in WAL mode), else NULL. */
static tcache *tc_for(cof_meta *m)
{
	conn *c = cof_sqlite_pinned(m);

	if (!c)
		return NULL;
	if (!tc) {
		pthread_once(&tc_once, tc_key_init);
		if (!(tc = calloc(1, sizeof *tc)))
			return NULL;
		if (pthread_setspecific(tc_key, tc)) {
			free(tc);
			tc = NULL;
			return NULL;
		}
	}
	if (tc->serial != SQ(m)->serial) {
		tc_clear(tc);
		tc->serial = SQ(m)->serial;
	}
	if (!tc->tried) {
		tc->tried = 1;
		tc->hdr = wal_header(c);
	}
	return tc->hdr ? tc : NULL;
}

/* The mark now: the first copy of the WAL index header, which SQLite writes
 * last. A read torn by a commit under way differs from the mark before it in
 * whatever it caught of the new one, or equals it when it caught nothing,
 * and the commit is not visible before both copies are written. */
static void mark_now(const tcache *t, mark *out)
{
	out->w[0] = __atomic_load_n(&t->hdr[2], __ATOMIC_ACQUIRE);  /* iChange */
	out->w[1] = __atomic_load_n(&t->hdr[4], __ATOMIC_ACQUIRE);  /* mxFrame */
	out->w[2] = __atomic_load_n(&t->hdr[8], __ATOMIC_ACQUIRE);  /* aSalt[0] */
	out->w[3] = __atomic_load_n(&t->hdr[9], __ATOMIC_ACQUIRE);  /* aSalt[1] */
}

/* True when no commit happened between marks a and b. */
static int mark_eq(const mark *a, const mark *b)
{
	return memcmp(a, b, sizeof *a) == 0;
}

/* Notes (on) or ends (off) a hold of the calling thread's pinned reader: its
 * rows are kept under the mark taken here, before its first read. */
void cof_sqlite_cache_hold(cof_meta *m, int on)
{
	tcache *t = tc_for(m);

	if (!t)
		return;
	t->held = 0;
	if (on && sqlite3_txn_state(cof_sqlite_pinned(m)->db, "main") == SQLITE_TXN_NONE) {
		mark_now(t, &t->hold);
		t->held = 1;
	}
}

int cof_sqlite_cache_begin(cof_meta *m, cof_sqlite_mark *mk)
{
	tcache *t = tc_for(m);
	conn *c;

	mk->ok = mk->keep = 0;
	if (!t)
		return 0;
	c = cof_sqlite_pinned(m);
	mark_now(t, (mark *)mk->now);
	mk->ok = 1;
	if (t->held) {
		memcpy(mk->fill, &t->hold, sizeof mk->fill);
		mk->keep = 1;
	} else if (sqlite3_txn_state(c->db, "main") == SQLITE_TXN_NONE) {
		memcpy(mk->fill, mk->now, sizeof mk->fill);
		mk->keep = 1;
	}
	return 1;
}

int cof_sql_cached_key(const cof_sql_mark *mk, const char *hash, cof_keyrow *out)
{
	if (!mk->ok)
		return 0;
	for (int i = 0; i < KEY_SLOTS; i++)
		if (tc->keys[i].used && mark_eq(&tc->keys[i].mk, (const mark *)mk->now) &&
		    strcmp(tc->keys[i].k.hash, hash) == 0) {
			*out = tc->keys[i].k;
			return 1;
		}
	return 0;
}

void cof_sql_keep_key(const cof_sql_mark *mk, const cof_keyrow *k)
{
	unsigned i;

	if (!mk->keep)
		return;
	i = tc->next_key++ % KEY_SLOTS;
	memcpy(&tc->keys[i].mk, mk->fill, sizeof tc->keys[i].mk);
	tc->keys[i].k = *k;
	tc->keys[i].used = 1;
}

/* The slot of volume (org, id): "" stands for no org. */
static int vol_match(int i, const char *org, const char *id)
{
	return strcmp(tc->vols[i].org, org ? org : "") == 0 && strcmp(tc->vols[i].id, id) == 0;
}

int cof_sql_cached_volume(const cof_sql_mark *mk, const char *org, const char *id,
			     cof_volrow *out)
{
	if (!mk->ok || !id)
		return 0;
	for (int i = 0; i < VOL_SLOTS; i++)
		if (tc->vols[i].used && mark_eq(&tc->vols[i].mk, (const mark *)mk->now) &&
		    vol_match(i, org, id)) {
			*out = tc->vols[i].v;
			return 1;
		}
	return 0;
}

void cof_sql_keep_volume(const cof_sql_mark *mk, const char *org, const char *id,
			    const cof_volrow *v)
{
	unsigned i;

	if (!mk->keep || !id || strlen(id) >= sizeof tc->vols[0].id ||
	    (org && strlen(org) >= sizeof tc->vols[0].org))
		return;
	i = tc->next_vol++ % VOL_SLOTS;
	memcpy(&tc->vols[i].mk, mk->fill, sizeof tc->vols[i].mk);
	strcpy(tc->vols[i].org, org ? org : "");
	strcpy(tc->vols[i].id, id);
	tc->vols[i].v = *v;
	tc->vols[i].used = 1;
}

int cof_sql_cached_entry(const cof_sql_mark *mk, int64_t vno, const char *path,
			    int64_t at_seq, cof_entry *out, unsigned char **data)
{
	if (!mk->ok)
		return 0;
	for (int i = 0; i < ENT_SLOTS; i++) {
		struct ent *s = &tc->ents[i];
		if (!s->used || s->vno != vno || s->at_seq != at_seq ||
		    !mark_eq(&s->mk, (const mark *)mk->now) || strcmp(s->e.path, path) != 0)
			continue;
		*data = NULL;
		if (s->data) {
			if (!(*data = malloc(s->len + 1)))
				return 0;
			memcpy(*data, s->data, s->len + 1);
		}
		*out = s->e;
		return 1;
	}
	return 0;
}

void cof_sql_keep_entry(const cof_sql_mark *mk, int64_t vno, const char *path,
			   int64_t at_seq, const cof_entry *e, const unsigned char *data,
			   size_t len)
{
	unsigned char *copy = NULL;
	unsigned i;

	if (!mk->keep || strcmp(e->path, path) != 0 || len > ENT_DATA_MAX ||
	    (data && !(copy = malloc(len + 1))))
		return;
	if (copy) {
		memcpy(copy, data, len);
		copy[len] = '\0';
	}
	i = tc->next_ent++ % ENT_SLOTS;
	free(tc->ents[i].data);
	memcpy(&tc->ents[i].mk, mk->fill, sizeof tc->ents[i].mk);
	tc->ents[i].vno = vno;
	tc->ents[i].at_seq = at_seq;
	tc->ents[i].e = *e;
	tc->ents[i].data = copy;
	tc->ents[i].len = len;
	tc->ents[i].used = 1;
}
