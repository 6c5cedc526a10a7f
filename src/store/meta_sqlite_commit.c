/*
 * meta_sqlite_commit.c — the SQLite writer, and group commit.
 *
 * SQLite has one writer at a time and, with synchronous=FULL, each COMMIT
 * costs an fsync of the WAL. Writers arriving while one commits used to queue
 * and pay one fsync each, in turn. Now they share a transaction (a batch):
 *
 *   - cof_sqlite_writer_begin takes the writer (wlock), opens the batch's
 *     transaction if none is open, then a savepoint for this one change,
 *     unless it is the batch's first: its undo is the whole transaction's
 *     ROLLBACK. A savepoint costs a change of many statements time
 *     quadratic in their number: SQLite keeps the savepoint's undo in an
 *     in-memory sub-journal (temp_store=MEMORY) that each statement's own
 *     savepoint walks from its start when it ends (8,000 updates in one
 *     savepoint: 0.57 s; with none: 0.17 s). So a change of many
 *     (COF_SQL_MANY: a landing of many files, a call's read tracking) commits
 *     the open batch first and starts its own;
 *   - cof_sqlite_writer_end releases the savepoint, or rolls back to it (a
 *     refused change undoes only itself: one 412 never fails the others).
 *     Then, if another writer is already waiting for wlock and the batch has
 *     room, it leaves the commit to that writer and sleeps until its batch's
 *     fate is known; otherwise it commits the batch (one WAL fsync for all of
 *     it) and wakes every member with the outcome.
 *
 * A lone writer finds nobody waiting and commits at once: there is no timer
 * and no delay. The writer that is waiting always gets wlock next and either
 * commits or passes the commit on to a writer waiting behind it, so a batch
 * never stays open with nobody to close it; COF_SQLITE_BATCH_MAX bounds it
 * under a steady stream. Nothing is acknowledged before the COMMIT that holds
 * it returned, so what survives kill -9 and power loss is unchanged; a batch
 * whose COMMIT fails (a full disk, an I/O error) fails every member with that
 * error. A member's change sees the uncommitted changes of the members before
 * it, which is right: they commit together or not at all.
 */
#include <string.h>
#include "store/meta_sqlite.h"

/* A member of the open batch, on its writer's stack while it waits. Linked
 * and unlinked under wlock; `rc`, `done` and `*err` written under flock. */
struct sq_member {
	struct sq_member *next;
	int rc;       /* its own result; -1 if the batch failed under it */
	int done;
	cof_err *err; /* its caller's */
};

static const char SQL_SAVEPOINT[] = "SAVEPOINT cof_change";
static const char SQL_RELEASE[] = "RELEASE cof_change";

/* Runs one cached statement that returns no rows. */
static int step(conn *c, const char *sql, cof_err *err)
{
	sqlite3_stmt *st = cof_sqlite_q(c, sql, err);

	if (!st)
		return -1;
	if (sqlite3_step(st) != SQLITE_DONE) {
		cof_sqlite_db_error(err, c->db, "committing");
		sqlite3_reset(st);
		return -1;
	}
	sqlite3_reset(st);
	return 0;
}

/* Resets every statement of the writer: a change that failed half way may
 * leave one mid-step, and RELEASE / ROLLBACK TO / COMMIT want none running. */
static void stmts_reset(conn *c)
{
	for (int i = 0; i < STMT_CACHE; i++)
		if (c->cache[i].st)
			sqlite3_reset(c->cache[i].st);
}

/* Ends the batch (wlock held): each member gets `rc` unless it failed on its
 * own (a failed batch gives `why` to the members whose change had succeeded),
 * and every one waiting wakes. */
static void batch_settle(sq_meta *s, int rc, const cof_err *why)
{
	pthread_mutex_lock(&s->flock);
	for (struct sq_member *p = s->members; p; p = p->next) {
		if (rc && p->rc >= 0) {
			p->rc = -1;
			cof_error(p->err, why->code ? why->code : COF_EINTERNAL, "%s",
				  why->msg[0] ? why->msg : "metadata store: the commit failed");
		}
		p->done = 1;
	}
	pthread_cond_broadcast(&s->fdone);
	pthread_mutex_unlock(&s->flock);
	s->members = NULL;
	s->nbatch = 0;
	s->intx = 0;
}

/* Commits the open batch (wlock held): one fsync of the WAL for all of it. */
static void batch_commit(sq_meta *s)
{
	cof_err e = {0};
	int rc;

	stmts_reset(s->writer);
	rc = cof_sqlite_exec(s->writer, "COMMIT", &e);
	if (rc)
		sqlite3_exec(s->writer->db, "ROLLBACK", NULL, NULL, NULL);
	batch_settle(s, rc, &e);
	cof_err_clear(&e);
}

/* Takes the writer and opens a change: a savepoint in the batch's transaction
 * (begun here when no batch is open; none for the batch's first change).
 * NULL (err set) when it cannot. */
conn *cof_sqlite_writer_begin(cof_meta *m, int alone, cof_err *err)
{
	sq_meta *s = SQ(m);

	atomic_fetch_add(&s->wwait, 1);
	pthread_mutex_lock(&s->wlock);
	atomic_fetch_sub(&s->wwait, 1);
	if (alone && s->nbatch > 0)
		batch_commit(s);    /* its members learn their fate now */
	if (!s->intx) {
		if (cof_sqlite_exec(s->writer, "BEGIN IMMEDIATE", err)) {
			pthread_mutex_unlock(&s->wlock);
			return NULL;
		}
		s->intx = 1;
	}
	/* the batch's first change (nbatch counts the members that ended, and
	 * no other writer runs before this one's end) takes no savepoint */
	if (s->nbatch > 0 && step(s->writer, SQL_SAVEPOINT, err)) {
		/* members may have left their commit to this writer: do it */
		batch_commit(s);
		pthread_mutex_unlock(&s->wlock);
		return NULL;
	}
	return s->writer;
}

/* Ends the change cof_sqlite_writer_begin opened: kept (ok == 0) or undone
 * (ok != 0), then committed with its batch. Returns `ok`, or -1 (err set)
 * when the batch did not commit; only then is the change not durable. */
int cof_sqlite_writer_end(cof_meta *m, int ok, cof_err *err)
{
	sq_meta *s = SQ(m);
	struct sq_member me = {.rc = ok, .err = err};
	conn *c = s->writer;

	stmts_reset(c);
	if (s->nbatch == 0 && me.rc != 0) {
		/* the batch held only this change: undo it all, nobody to tell */
		if (!sqlite3_get_autocommit(c->db))
			sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
		s->intx = 0;
		pthread_mutex_unlock(&s->wlock);
		return me.rc;
	}
	if (s->nbatch > 0 && me.rc == 0 && step(c, SQL_RELEASE, err))
		me.rc = -1;
	if (me.rc != 0 && !sqlite3_get_autocommit(c->db))
		sqlite3_exec(c->db, "ROLLBACK TO cof_change; RELEASE cof_change", NULL, NULL,
			     NULL);
	me.next = s->members;
	s->members = &me;
	s->nbatch++;
	if (sqlite3_get_autocommit(c->db)) {
		/* SQLite rolled the whole transaction back (an I/O error, a full
		 * disk): the members before this one lost theirs too. */
		cof_err why = {0};
		if (me.rc < 0 && err && err->code)
			cof_error(&why, err->code, "%s", err->msg);
		else
			cof_error(&why, COF_EINTERNAL, "metadata store: the transaction was "
				  "rolled back: %s", sqlite3_errmsg(c->db));
		batch_settle(s, -1, &why);
		cof_err_clear(&why);
		pthread_mutex_unlock(&s->wlock);
		return me.rc;
	}
	if (atomic_load(&s->wwait) > 0 && s->nbatch < COF_SQLITE_BATCH_MAX) {
		pthread_mutex_lock(&s->flock);
		pthread_mutex_unlock(&s->wlock);
		while (!me.done)
			pthread_cond_wait(&s->fdone, &s->flock);
		pthread_mutex_unlock(&s->flock);
		return me.rc;
	}
	batch_commit(s);
	pthread_mutex_unlock(&s->wlock);
	return me.rc;
}
