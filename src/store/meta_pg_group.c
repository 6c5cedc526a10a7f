/*
 * meta_pg_group.c — group commit of one volume's changes on PostgreSQL.
 *
 * A change holds the volume's row lock to COMMIT, and PostgreSQL releases it
 * only once the commit record is flushed: concurrent writers of one volume
 * paid one WAL flush each, in turn, and the next could not even start its
 * statements until the last flush had finished (bench/results.md, issue 38
 * item 9). Now the writers of one volume on this node share a transaction
 * (a batch), as the embedded store's do (meta_sqlite_commit.c):
 *
 *   - cof_pg_change_begin takes the volume's writer on this node (wlock) and
 *     the open batch, opening one when none is (BEGIN queued: it goes with
 *     the change's load of the volume's row FOR UPDATE, meta_write.c, in one
 *     round trip);
 *   - the change runs its statements on the batch's connection (the
 *     driver's exec and query of a change, cof_pg_change_stmt); its first
 *     write takes a savepoint of its own, so a refused change (412, quota,
 *     conflict) rolls back alone. The statements whose rows the change does
 *     not need (cof_pg_change_send: the sql.h driver's send) are queued
 *     with their values copied, and go in the pipeline of the batch's next
 *     statement that needs rows, or of its COMMIT;
 *   - cof_pg_change_end keeps the change or rolls back to its savepoint (a
 *     savepoint still queued: its statements are dropped, nothing was
 *     sent). If another writer of the volume is waiting for wlock and the
 *     batch has room, it leaves the commit to that writer and sleeps until
 *     its batch's fate is known; otherwise it commits the batch (what is
 *     queued, each change's `UPDATE volumes` among it, the notification and
 *     COMMIT: one round trip and one WAL flush for all) and wakes every
 *     member with the outcome.
 *
 * A lone writer finds nobody waiting and commits at once: no timer, no delay.
 * Nothing is acknowledged before the COMMIT that holds it returned; a batch
 * that cannot commit fails every member with a retryable error. Seqs stay
 * dense and in order: each member takes the next seq of the batch's volume
 * row (kept here as its members left it), and one undone gives its seq back.
 * A batch none of whose changes stored anything is rolled back and its
 * connection goes back to the pool (test_meta_batch). Other nodes wait on the row lock as
 * before and group only their own writers. A batch holds the row locks of
 * every member's statements (blobs named by several volumes' writes too); a
 * deadlock with another volume's batch fails one member's statement, which
 * rolls back to its savepoint alone (503, retryable), not the batch.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "store/meta_pg.h"
#include "store/notify.h"

/* A member of the open batch, on its writer's stack while it waits. Linked
 * under wlock; `rc`, `done` and `*err` written under flock. */
struct pg_member {
	struct pg_member *next;
	int rc;
	int done;
	cof_err *err;
};

struct pg_group {
	struct pg_group *next;    /* in its bucket; under pg_meta.glock */
	int64_t vno;
	int refs;                 /* under pg_meta.glock */
	pthread_mutex_t wlock;    /* the volume's writer on this node */
	atomic_int wwait;         /* writers waiting for wlock */
	pgconn *c;                /* the open batch's connection; NULL: none open */
	cof_volrow vol;           /* the volume as the batch's changes left it */
	int has_vol;              /* vol is set: a member stored a change */
	int nbatch, ops;
	struct pg_member *members;
	cof_pg_stmt pend[PG_PIPE_MAX]; /* statements queued (cof_pg_change_send) */
	char *arena[PG_PIPE_MAX];      /* their values' copies (stmt_copy) */
	size_t arena_cap[PG_PIPE_MAX]; /* each arena's room, kept for its slot's next */
	int npend;
	int sp;                   /* the member's savepoint: 0 none, 1 queued, 2 sent */
	int sp_at;                /* where it is queued (sp 1) */
	char spname[32];          /* "SAVEPOINT cof_mN" */
	/* the statement for the COMMIT's pipeline (cof_pg_change_last): the last
	 * kept member's, and the current member's until it is kept (has_: set) */
	cof_pg_stmt last, mine;
	int has_last, has_mine;
	char *last_arena, *mine_arena;
	size_t last_cap, mine_cap;
	pthread_mutex_t flock;
	pthread_cond_t fdone;
};

/* A group for `vno` with no writer and no batch: the one kept from the last
 * group that had none (group_put), or a new one; NULL = out of memory. A
 * lone writer's group goes with its change: made anew each time it cost a
 * 14 KB calloc (the queue's statements) and three pthread inits a PUT. */
static pg_group *group_new(pg_meta *p, int64_t vno)
{
	pg_group *g = p->spare;

	if (g) {
		p->spare = NULL;
	} else if ((g = cof_calloc(1, sizeof *g))) {
		pthread_mutex_init(&g->wlock, NULL);
		pthread_mutex_init(&g->flock, NULL);
		pthread_cond_init(&g->fdone, NULL);
	} else {
		return NULL;
	}
	/* what a group has between batches; the arenas stay, with their room */
	g->vno = vno;
	g->refs = 0;
	atomic_store(&g->wwait, 0);
	g->c = NULL;
	g->has_vol = g->nbatch = g->ops = g->npend = g->sp = 0;
	g->has_last = g->has_mine = 0;
	g->members = NULL;
	return g;
}

static void group_free(pg_group *g)
{
	if (!g)
		return;
	for (int i = 0; i < PG_PIPE_MAX; i++)
		free(g->arena[i]);
	free(g->last_arena);
	free(g->mine_arena);
	pthread_mutex_destroy(&g->wlock);
	pthread_mutex_destroy(&g->flock);
	pthread_cond_destroy(&g->fdone);
	free(g);
}

void cof_pg_groups_free(pg_meta *p)
{
	group_free(p->spare);
	p->spare = NULL;
}

/* The group of `vno`, made when no writer of it has one; NULL = out of memory. */
static pg_group *group_get(pg_meta *p, int64_t vno)
{
	pg_group **b = &p->groups[(uint64_t)vno % PG_GROUP_BUCKETS], *g;

	pthread_mutex_lock(&p->glock);
	for (g = *b; g && g->vno != vno; g = g->next)
		;
	if (!g && (g = group_new(p, vno))) {
		g->next = *b;
		*b = g;
	}
	if (g)
		g->refs++;
	pthread_mutex_unlock(&p->glock);
	return g;
}

/* Drops a writer's reference; the last one frees the group, or keeps it for
 * the next group_new (no batch is open then: the writer that commits holds a
 * reference until it has). */
static void group_put(pg_meta *p, pg_group *g)
{
	pg_group **b = &p->groups[(uint64_t)g->vno % PG_GROUP_BUCKETS];

	pthread_mutex_lock(&p->glock);
	if (--g->refs > 0) {
		pthread_mutex_unlock(&p->glock);
		return;
	}
	while (*b != g)
		b = &(*b)->next;
	*b = g->next;
	if (!p->spare) {
		p->spare = g;
		g = NULL;
	}
	pthread_mutex_unlock(&p->glock);
	group_free(g);
}

/* Ends the batch (wlock held): when it failed (rc != 0) every member gets
 * `why`, a refused one too (it was refused on what did not commit: a retry
 * gets the answer sequential writes would), and every one waiting wakes. */
static void batch_settle(pg_group *g, int rc, const cof_err *why)
{
	pthread_mutex_lock(&g->flock);
	for (struct pg_member *x = g->members; x; x = x->next) {
		if (rc) {
			x->rc = -1;
			cof_error(x->err, COF_EUNAVAILABLE, "%s", why->msg[0] ? why->msg :
				  "the metadata database did not commit the change; retry it");
		}
		x->done = 1;
	}
	pthread_cond_broadcast(&g->fdone);
	pthread_mutex_unlock(&g->flock);
	g->members = NULL;
	g->nbatch = 0;
	g->ops = 0;
	g->has_vol = 0;
}

/* Drops the statements queued from `from` on (their slots' arenas stay). */
static void pend_clear(pg_group *g, int from)
{
	if (g->npend > from)
		g->npend = from;
}

/* The bytes a value of a statement takes in the arena (0: none to copy). */
static size_t value_len(const cof_pg_stmt *s, int j)
{
	if (!s->vals[j] || s->vals[j] == s->ints[j])
		return 0;
	return s->fmts[j] ? (size_t)s->lens[j] + 1 : strlen(s->vals[j]) + 1;
}

/* Sends what is queued and s[0..n) in one pipeline: s[i].res as
 * cof_pg_pipeline sets them. A failure of one queued (another member's)
 * aborts the batch's transaction: every member fails. */
static int group_pipeline(pg_group *g, cof_pg_stmt *s, int n, cof_err *err)
{
	cof_pg_stmt all[PG_PIPE_MAX];
	int k = g->npend, rc;

	if (!k)
		return cof_pg_pipeline(g->c, s, n, err);
	if (k + n > PG_PIPE_MAX)
		return group_pipeline(g, NULL, 0, err) ? -1 : cof_pg_pipeline(g->c, s, n, err);
	memcpy(all, g->pend, (size_t)k * sizeof *all);
	if (n)
		memcpy(all + k, s, (size_t)n * sizeof *all);
	/* the copies' own integers: their values point at them */
	for (int i = 0; i < k + n; i++)
		for (int j = 0; j < all[i].n; j++)
			if (all[i].vals[j] == (i < k ? g->pend[i].ints[j] : s[i - k].ints[j]))
				all[i].vals[j] = all[i].ints[j];
	rc = cof_pg_pipeline(g->c, all, k + n, err);
	for (int i = 0; i < k + n && !rc; i++) {
		if (i < k)
			PQclear(all[i].res);
		else
			s[i - k].res = all[i].res;
	}
	pend_clear(g, 0);
	if (g->sp == 1)
		g->sp = 2;
	return rc;
}

/* *d = s with its values copied into *arena, *cap bytes, grown when they do
 * not fit (kept for the slot's next statement: no malloc a statement once
 * the slots are grown): 0 or -1. */
static int stmt_copy(cof_pg_stmt *d, const cof_pg_stmt *s, char **arena, size_t *cap,
		     cof_err *err)
{
	size_t need = 1 + (s->sql ? 0 : strlen(s->what) + 1);
	char *a;

	for (int j = 0; j < s->n; j++)
		need += value_len(s, j);
	if (need > *cap) {
		size_t room = need < 256 ? 256 : need;
		free(*arena);
		*cap = 0;
		if (!(*arena = cof_malloc(room)))
			return cof_error(err, COF_EINTERNAL, "out of memory");
		*cap = room;
	}
	a = *arena;
	*d = *s;
	d->res = NULL;
	if (!s->sql) {
		d->what = strcpy(a, s->what);
		a += strlen(a) + 1;
	}
	for (int j = 0; j < s->n; j++) {
		size_t len = value_len(s, j);
		if (s->vals[j] == s->ints[j])
			d->vals[j] = d->ints[j];
		else if (len) {
			memcpy(a, s->vals[j], len);
			d->vals[j] = a;
			a += len;
		}
	}
	return 0;
}

/* Queues s, its values copied: 0 or -1 (out of memory, or the queue full
 * and its pipeline failed). */
static int pend_add(pg_group *g, const cof_pg_stmt *s, cof_err *err)
{
	if (g->npend == PG_PIPE_MAX && group_pipeline(g, NULL, 0, err))
		return -1;
	if (stmt_copy(&g->pend[g->npend], s, &g->arena[g->npend], &g->arena_cap[g->npend],
		      err))
		return -1;
	g->npend++;
	return 0;
}

/* Queues a plain statement (BEGIN, SAVEPOINT): no parameters, not prepared. */
static int pend_plain(pg_group *g, const char *sql, cof_err *err)
{
	cof_pg_stmt s = {.sql = NULL, .what = sql};

	return pend_add(g, &s, err);
}

/* The member's savepoint, queued before its first write: what undoes it
 * alone when it is refused after writing, its batch going on. */
static int savepoint(pg_group *g, cof_err *err)
{
	if (g->sp)
		return 0;
	snprintf(g->spname, sizeof g->spname, "SAVEPOINT cof_m%d", g->nbatch);
	if (pend_plain(g, g->spname, err))
		return -1;
	g->sp = 1;
	g->sp_at = g->npend - 1;
	return 0;
}

/* Whether a statement of a change writes: every read of the write path
 * (meta_write.c, meta_read.c) begins SELECT or WITH. */
static int writes(const char *sql)
{
	return strncmp(sql, "SELECT", 6) && strncmp(sql, "WITH", 4);
}

int cof_pg_change_stmt(cof_sql_tx *tx, cof_pg_stmt *s, cof_err *err)
{
	pg_group *g = tx->x;

	if (writes(s->sql) && savepoint(g, err))
		return -1;
	return group_pipeline(g, s, 1, err);
}

int cof_pg_change_send(cof_sql_tx *tx, const cof_pg_stmt *s, cof_err *err)
{
	pg_group *g = tx->x;

	if (savepoint(g, err))
		return -1;
	return pend_add(g, s, err);
}

int cof_pg_change_last(cof_sql_tx *tx, const cof_pg_stmt *s, cof_err *err)
{
	pg_group *g = tx->x;

	g->has_mine = 0;
	if (stmt_copy(&g->mine, s, &g->mine_arena, &g->mine_cap, err))
		return -1;
	g->has_mine = 1;
	return 0;
}

/* The member's statement for the COMMIT becomes the batch's (kept: the two
 * arenas trade places), or is dropped (undone). */
static void last_take(pg_group *g, int keep)
{
	if (keep && g->has_mine) {
		char *a = g->last_arena;
		size_t cap = g->last_cap;
		g->last = g->mine;
		for (int j = 0; j < g->mine.n; j++)
			if (g->mine.vals[j] == g->mine.ints[j])
				g->last.vals[j] = g->last.ints[j];
		g->last_arena = g->mine_arena;
		g->last_cap = g->mine_cap;
		g->mine_arena = a;
		g->mine_cap = cap;
		g->has_last = 1;
	}
	g->has_mine = 0;
}

int cof_pg_change_sync(cof_sql_tx *tx, cof_err *err)
{
	pg_group *g = tx->x;

	return g && g->npend ? group_pipeline(g, NULL, 0, err) : 0;
}

/* The batch's end as one pipeline: what is queued, the last kept member's
 * statement for the COMMIT (the volume's row: one `UPDATE volumes` a batch),
 * the notification every node's waiters on the volume wake on
 * (notify_pg.c), COMMIT. */
static int batch_flush(pg_group *g, cof_err *err)
{
	cof_pg_stmt s[3] = {{0}, {0}, {.what = "COMMIT"}};
	cof_topic t = cof_topic_volume(g->vol.org, g->vol.id);
	char note[256];
	int n = 0, rc;

	cof_notify_pg_payload(&t, note, sizeof note);
	if (g->has_last)
		s[n++] = g->last;
	if (cof_pg_stmt_set(&s[n++], "SELECT pg_notify('coffer', $1)", "notifying", err, "s",
			    note))
		return -1;
	s[n++] = s[2];
	/* the copy's own integers: its values point at them */
	for (int j = 0; g->has_last && j < s[0].n; j++)
		if (g->last.vals[j] == g->last.ints[j])
			s[0].vals[j] = s[0].ints[j];
	if (group_pipeline(g, s, n, err))
		return -1;
	/* COMMIT of a transaction that failed answers ROLLBACK, not an error */
	rc = strcmp(PQcmdStatus(s[n - 1].res), "COMMIT") ? -1 : 0;
	for (int i = 0; i < n; i++)
		PQclear(s[i].res);
	if (rc)
		cof_error(err, COF_EUNAVAILABLE, "the metadata database rolled the change back;"
			  " retry it");
	return rc;
}

/* Commits the open batch (wlock held) or, when none of its changes stored
 * anything, rolls it back (cof_pg_put does, and pools the connection); then
 * every member learns the outcome. */
static void batch_end(cof_meta *m, pg_group *g)
{
	cof_err e = {0};
	int rc = g->ops ? batch_flush(g, &e) : 0;

	pend_clear(g, 0);
	g->has_last = 0;
	cof_pg_put(m, g->c); /* rolls back what is still open, then pools it */
	g->c = NULL;
	g->sp = 0;
	batch_settle(g, rc, &e);
	cof_err_clear(&e);
}

int cof_pg_change_begin(cof_sql_tx *tx, int64_t vno, const cof_volrow **kept, cof_err *err)
{
	cof_meta *m = tx->m;
	pg_group *g = group_get(PGM(m), vno);

	if (!g)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	atomic_fetch_add(&g->wwait, 1);
	pthread_mutex_lock(&g->wlock);
	atomic_fetch_sub(&g->wwait, 1);
	if (!g->c) {
		/* no batch open: nobody waits on one either. BEGIN goes with the
		 * change's first statement, its volume's row lock. */
		pgconn *nc = cof_pg_get(m, err);
		g->c = nc;
		if (!nc || pend_plain(g, "BEGIN", err)) {
			pend_clear(g, 0);
			g->c = NULL;
			cof_pg_put(m, nc);
			pthread_mutex_unlock(&g->wlock);
			group_put(PGM(m), g);
			return -1;
		}
	}
	g->sp = 0;
	tx->c = g->c;
	tx->x = g;
	tx->began = 1;
	*kept = g->has_vol ? &g->vol : NULL;
	return 0;
}

/* Undoes a member's change: 0, or -1 when the batch's transaction cannot go
 * on (it failed with no savepoint to return to, or the rollback failed). */
static int member_undo(pg_group *g, cof_err *err)
{
	char sql[64];

	if (g->sp == 1)       /* its writes were never sent */
		pend_clear(g, g->sp_at);
	if (g->sp != 2)
		return PQtransactionStatus(g->c->db) == PQTRANS_INTRANS ? 0 : -1;
	pend_clear(g, 0);     /* queued after its savepoint was sent: its own */
	snprintf(sql, sizeof sql, "ROLLBACK TO %s", g->spname + strlen("SAVEPOINT "));
	return cof_pg_exec(g->c, sql, err);
}

int cof_pg_change_end(cof_sql_tx *tx, int rc, int wrote, const cof_volrow *vol, cof_err *err)
{
	pg_group *g = tx->x;
	cof_meta *m = tx->m;
	struct pg_member me = {.rc = rc, .err = err};
	pg_meta *p = PGM(m);

	/* a statement that failed where the change went on regardless */
	if (rc == 0 && PQtransactionStatus(g->c->db) != PQTRANS_INTRANS)
		me.rc = cof_pg_error(err, g->c, NULL, "writing");
	last_take(g, me.rc == 0 && wrote);
	if (me.rc == 0 && wrote) {
		g->vol = *vol;
		g->has_vol = 1;
		g->ops++;
	} else if (member_undo(g, err)) {
		/* the batch's transaction is lost: every member fails with it */
		cof_err why = {0};
		cof_error(&why, COF_EUNAVAILABLE, "the metadata database aborted the change;"
			  " retry it");
		me.next = g->members;
		g->members = &me;
		me.rc = -1;
		if (err && !err->code)
			cof_error(err, why.code, "%s", why.msg);
		pend_clear(g, 0);
		g->has_last = 0;
		cof_pg_put(m, g->c);
		g->c = NULL;
		g->sp = 0;
		batch_settle(g, -1, &why);
		cof_err_clear(&why);
		pthread_mutex_unlock(&g->wlock);
		group_put(p, g);
		return -1;
	}
	g->sp = 0;
	me.next = g->members;
	g->members = &me;
	g->nbatch++;
	if (atomic_load(&g->wwait) > 0 && g->nbatch < PG_BATCH_MAX) {
		pthread_mutex_lock(&g->flock);
		pthread_mutex_unlock(&g->wlock);
		while (!me.done)
			pthread_cond_wait(&g->fdone, &g->flock);
		pthread_mutex_unlock(&g->flock);
	} else {
		batch_end(m, g);
		pthread_mutex_unlock(&g->wlock);
	}
	group_put(p, g);
	return me.rc;
}
