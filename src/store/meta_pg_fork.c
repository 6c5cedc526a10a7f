/*
 * meta_pg_fork.c — forks on PostgreSQL: a fork refers to its parent at a seq
 * instead of copying its rows (docs/design.md, "Forks"; the model is the one
 * of meta_sqlite_fork.c). Reads and listings walk the chain in one query each
 * (PG_CHAIN, meta_pg_read.c); this file forks, retires and releases.
 */
#include <stdlib.h>
#include <string.h>
#include "store/meta_pg.h"

int cof_pg_base(pgconn *c, int64_t vno, int64_t *base_vno, int64_t *base_seq,
		cof_err *err)
{
	PGresult *r = cof_pg_q(c, "SELECT base_vno, base_seq FROM volumes WHERE vno = $1 AND"
			       " base_vno IS NOT NULL", "reading a fork's parent", err, "i", vno);
	int found;

	if (!r)
		return -1;
	found = PQntuples(r) == 1;
	if (found) {
		*base_vno = cof_pg_int(r, 0, 0);
		*base_seq = cof_pg_int(r, 0, 1);
	}
	PQclear(r);
	return found;
}

/* The files and bytes of `src` at `at` into v: the volume's own counts when at
 * is its seq, else a snapshot's taken there, else counted through the chain. */
static int source_counts(pgconn *c, const cof_volrow *src, int64_t at, cof_volrow *v,
			 cof_err *err)
{
	PGresult *r;

	if (at == src->seq) {
		v->files = src->files;
		v->bytes = src->bytes;
		return 0;
	}
	r = cof_pg_q(c, "SELECT files, bytes FROM snapshots WHERE src_vno = $1 AND seq = $2"
		     " LIMIT 1", "forking", err, "ii", src->vno, at);
	if (r && PQntuples(r) == 0) {
		PQclear(r);
		r = cof_pg_q(c, PG_CHAIN("$1", "$2") "SELECT count(*), coalesce(sum(size), 0) FROM"
			     " (SELECT DISTINCT ON (e.path) e.sha256, e.size FROM chain c JOIN entries"
			     " e ON e.vno = c.vno AND e.from_seq <= c.at AND (e.to_seq IS NULL OR"
			     " e.to_seq > c.at) ORDER BY e.path, c.depth) t WHERE sha256 != ''",
			     "forking", err, "ii", src->vno, at);
	}
	if (!r)
		return -1;
	v->files = cof_pg_int(r, 0, 0);
	v->bytes = cof_pg_int(r, 0, 1);
	PQclear(r);
	return 0;
}

/* Copies the rows visible in `src_vno` at `at` (through its chain) into the
 * new volume `v`: a fork of a volume COF_FORK_DEPTH deep starts a new chain. */
static int flatten(pgconn *c, cof_volrow *v, int64_t src_vno, int64_t at, cof_err *err)
{
	PGresult *r;

	if (cof_pg_do(c, "INSERT INTO entries(vno, path, from_seq, to_seq, version, size, sha256,"
		      " ctype, updated_at, s3meta) SELECT $3, path, from_seq, NULL, version, size,"
		      " sha256, ctype, updated_at, s3meta FROM (" PG_CHAIN("$1", "$2") "SELECT DISTINCT ON (e.path)"
		      " e.* FROM chain c JOIN entries e ON e.vno = c.vno AND e.from_seq <= c.at AND"
		      " (e.to_seq IS NULL OR e.to_seq > c.at) ORDER BY e.path, c.depth) t"
		      " WHERE sha256 != ''", "forking", NULL, err, "iii", src_vno, at, v->vno))
		return -1;
	if (!(r = cof_pg_q(c, "UPDATE volumes SET files = (SELECT count(*) FROM entries"
			   " WHERE vno = $1), bytes = (SELECT coalesce(sum(size), 0) FROM"
			   " entries WHERE vno = $1) WHERE vno = $1 RETURNING files, bytes",
			   "forking", err, "i", v->vno)))
		return -1;
	v->files = cof_pg_int(r, 0, 0);
	v->bytes = cof_pg_int(r, 0, 1);
	PQclear(r);
	return 0;
}

static int pg_volume_fork(cof_meta *m, cof_volrow *v, int64_t src_vno, int64_t at_seq,
			  cof_err *err)
{
	pgconn *c = cof_pg_begin(m, NULL, err);
	cof_volrow src;
	int rc;

	if (!c)
		return -1;
	/* The source's row lock: a delete of it on another node waits, and then
	 * sees the fork (and retires the source instead of dropping it). */
	rc = cof_pg_volume_load(c, src_vno, NULL, NULL, 1, &src, err);
	v->files = v->bytes = 0;
	if (!rc && src.depth >= COF_FORK_DEPTH) {
		v->base_vno = v->base_seq = v->depth = 0;
		rc = cof_pg_volume_insert(c, v, err);
		if (!rc)
			rc = flatten(c, v, src_vno, at_seq, err);
	} else if (!rc) {
		v->base_vno = src_vno;
		v->base_seq = at_seq;
		v->depth = src.depth + 1;
		rc = source_counts(c, &src, at_seq, v, err);
		if (!rc)
			rc = cof_pg_volume_insert(c, v, err);
	}
	return cof_pg_end(m, c, rc, err);
}

int cof_pg_volume_retire(pgconn *c, int64_t vno, cof_err *err)
{
	PGresult *r = cof_pg_q(c, "SELECT 1 FROM volumes WHERE base_vno = $1 LIMIT 1",
			       "deleting a volume", err, "i", vno);
	int forked;

	if (!r)
		return -1;
	forked = PQntuples(r) > 0;
	PQclear(r);
	if (!forked)
		return 0;
	/* Only the rows some fork reads stay; the grace of the others' content
	 * starts now. */
#define UNSEEN "NOT EXISTS (SELECT 1 FROM volumes f WHERE f.base_vno = $1 AND" \
	       " entries.from_seq <= f.base_seq AND (entries.to_seq IS NULL OR" \
	       " entries.to_seq > f.base_seq))"
	if (cof_pg_do(c, "UPDATE volumes SET hidden = 1, retired = 1 WHERE vno = $1",
		      "deleting a volume", NULL, err, "i", vno) ||
	    cof_pg_do(c, "DELETE FROM changes WHERE vno = $1", "deleting a volume", NULL, err,
		      "i", vno) ||
	    cof_pg_do(c, "UPDATE blobs SET orphan_since = $2 WHERE orphan_since IS NULL AND"
		      " sha256 IN (SELECT sha256 FROM entries WHERE vno = $1 AND " UNSEEN ")",
		      "deleting a volume", NULL, err, "ii", vno, cof_now()) ||
	    cof_pg_do(c, "DELETE FROM entries WHERE vno = $1 AND " UNSEEN, "deleting a volume",
		      NULL, err, "i", vno))
		return -1;
#undef UNSEEN
	return 1;
}

int cof_pg_base_release(pgconn *c, int64_t base_vno, int64_t base_seq, cof_err *err)
{
	PGresult *r;
	int drop;

	if (cof_pg_do(c, "UPDATE entries SET closed_at = $3 WHERE vno = $1 AND to_seq IS NOT"
		      " NULL AND from_seq <= $2 AND to_seq > $2", "deleting a volume", NULL, err,
		      "iii", base_vno, base_seq, cof_now()))
		return -1;
	/* The parent's row lock: two nodes dropping its last two forks at once
	 * take turns, and the second sees the first's gone. */
	if (cof_pg_do(c, "SELECT 1 FROM volumes WHERE vno = $1 FOR UPDATE", "deleting a volume",
		      NULL, err, "i", base_vno))
		return -1;
	if (!(r = cof_pg_q(c, "SELECT 1 FROM volumes WHERE vno = $1 AND retired = 1 AND NOT"
			   " EXISTS (SELECT 1 FROM volumes f WHERE f.base_vno = $1)",
			   "deleting a volume", err, "i", base_vno)))
		return -1;
	drop = PQntuples(r) > 0;
	PQclear(r);
	return drop ? cof_pg_volume_drop(c, base_vno, err) : 0;
}

/* This file's members of the PostgreSQL backend's table. */
void cof_pg_ops_fork(cof_meta_ops *o)
{
	o->volume_fork = pg_volume_fork;
}
