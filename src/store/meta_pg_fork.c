/*
 * meta_pg_fork.c — forks on PostgreSQL: a fork refers to its parent at a seq
 * instead of copying its rows (docs/design.md, "Forks"; the model is the one
 * of meta_sqlite_fork.c). Reads and listings walk the chain in one query each
 * (PG_CHAIN, meta_pg_read.c); this file forks, retires and releases.
 */
#include <stdlib.h>
#include <string.h>
#include "store/meta_pg.h"

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
		      " ctype, updated_at) SELECT $3, path, from_seq, NULL, version, size, sha256,"
		      " ctype, updated_at FROM (" PG_CHAIN("$1", "$2") "SELECT DISTINCT ON (e.path)"
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

/* This file's members of the PostgreSQL backend's table. */
void cof_pg_ops_fork(cof_meta_ops *o)
{
	o->volume_fork = pg_volume_fork;
}
