/*
 * meta_fork.c — forking, written once above the SQL seam (store/sql.h): a
 * fork refers to its parent at a seq instead of copying its rows
 * (docs/design.md, "Forks"). Its own rows (what it wrote, and a whiteout row,
 * sha256 "", for each file it removed) shadow its parent's at the fork's base
 * seq, and so on up a chain of at most COF_FORK_DEPTH parents. Reads and
 * listings of the chain are meta_read.c's (COF_META_CHAIN); retiring and
 * releasing a parent when a volume is deleted are meta_volume.c's.
 *
 * The fork's transaction locks the source's row ({for_update}): a delete of
 * it on another node waits, and then sees the fork (and retires the source
 * instead of dropping it). SQLite's writer already is the one writer.
 */
#include <stdlib.h>
#include <string.h>
#include "store/meta_volume.h"

/* The rows the chain shows, one a path (the nearest level's; rn = 1), with
 * whiteouts still in (sha256 ''). */
#define SHOWN(COLS) "SELECT " COLS ", row_number() OVER (PARTITION BY e.path ORDER BY" \
	" c.depth) AS rn FROM chain c JOIN entries e ON e.vno = c.vno AND" \
	" e.from_seq <= c.at AND (e.to_seq IS NULL OR e.to_seq > c.at)"

/* cof_sql_row_fn: (files, bytes) into ctx (a cof_volrow). */
static int counts_row(void *ctx, const cof_sql_row *r, cof_err *err)
{
	cof_volrow *v = ctx;

	(void)err;
	v->files = cof_sql_int(r, 0);
	v->bytes = cof_sql_int(r, 1);
	return 1;
}

/* The files and bytes of `src` at `at` into v: the volume's own counts when at
 * is its seq, else those of a snapshot taken there (each stores them), else
 * counted through the chain. */
static int source_counts(cof_sql_tx *tx, const cof_volrow *src, int64_t at, cof_volrow *v,
			 cof_err *err)
{
	int rc;

	if (at == src->seq) {
		v->files = src->files;
		v->bytes = src->bytes;
		return 0;
	}
	rc = cof_sql_query(tx, "SELECT files, bytes FROM snapshots WHERE src_vno = ?1 AND"
			   " seq = ?2 LIMIT 1", "forking", counts_row, v, err, "ii", src->vno, at);
	if (rc == 0)
		rc = cof_sql_query(tx, COF_META_CHAIN "SELECT count(*), coalesce(sum(size), 0) FROM ("
				   SHOWN("e.sha256, e.size") ") t WHERE rn = 1 AND sha256 != ''",
				   "forking", counts_row, v, err, "ii", src->vno, at);
	return rc < 0 ? -1 : 0;
}

/* Copies the rows visible in `src_vno` at `at` (through its chain) into the
 * new volume `v`, and counts them: a fork of a volume COF_FORK_DEPTH deep
 * starts a new chain. */
static int flatten(cof_sql_tx *tx, cof_volrow *v, int64_t src_vno, int64_t at, cof_err *err)
{
	if (cof_sql_exec(tx, NULL, "INSERT INTO entries(vno, path, from_seq, to_seq, version,"
			 " size, sha256, ctype, updated_at, s3meta) SELECT ?3, path, from_seq, NULL,"
			 " version, size, sha256, ctype, updated_at, s3meta FROM (" COF_META_CHAIN
			 SHOWN("e.path, e.from_seq, e.version, e.size, e.sha256, e.ctype,"
			       " e.updated_at, e.s3meta") ") t WHERE rn = 1 AND sha256 != ''", "forking", err,
			 "iii", src_vno, at, v->vno) < 0)
		return -1;
	return cof_sql_query(tx, "UPDATE volumes SET files = (SELECT count(*) FROM entries"
			     " WHERE vno = ?1), bytes = (SELECT coalesce(sum(size), 0) FROM"
			     " entries WHERE vno = ?1) WHERE vno = ?1 RETURNING files, bytes",
			     "forking", counts_row, v, err, "i", v->vno) < 0 ? -1 : 0;
}

int cof_meta_volume_fork(cof_meta *m, cof_volrow *v, int64_t src_vno, int64_t at_seq,
			 cof_err *err)
{
	cof_sql_tx tx;
	cof_volrow src;
	int rc;

	if (cof_sql_begin(m, COF_SQL_WRITE, &tx, err) < 0)
		return -1;
	rc = cof_meta_vol_load(&tx, src_vno, 1, &src, err);
	v->files = v->bytes = 0;
	if (!rc && src.depth >= COF_FORK_DEPTH) {
		v->base_vno = v->base_seq = v->depth = 0;
		rc = cof_meta_vol_insert(&tx, v, err);
		if (!rc)
			rc = flatten(&tx, v, src_vno, at_seq, err);
	} else if (!rc) {
		v->base_vno = src_vno;
		v->base_seq = at_seq;
		v->depth = src.depth + 1;
		rc = source_counts(&tx, &src, at_seq, v, err);
		if (!rc)
			rc = cof_meta_vol_insert(&tx, v, err);
	}
	return cof_sql_end(&tx, rc < 0 ? -1 : 0, err) < 0 ? -1 : 0;
}
