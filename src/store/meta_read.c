/*
 * meta_read.c — reading files, written once above the SQL seam (store/sql.h):
 * one entry (with its inline content, or its S3 text), a listing by prefix as
 * of a seq, the S3 texts of a listing's page and a path's history.
 *
 * A fork's own rows (what it wrote, and a whiteout row, sha256 "", for each
 * file it removed) shadow its parent's at the fork's base seq, and so on up
 * the chain (docs/design.md, "Forks"; COF_META_CHAIN). A read is one query:
 * the volume's own row, by the live index when it is read live, or the
 * nearest parent's. A listing is fetched in pages (keyset on path) inside one
 * read transaction, so a long walk sees one state of the database without
 * holding a volume's rows in memory; a fork's page is one query over every
 * level of the chain. SQLite hands rows over as it steps (its pages cost
 * nothing when the walk stops early); its row cache of GETs and its pinned
 * readers stay below the seam (cof_sql_mark_begin, cof_sql_begin).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "store/meta_volume.h"

/* Rows a listing's page query reads at most (per level of a fork). */
#define LIST_PAGE 512
/* A read at "live": the chain's seqs are bigints, live the greatest. */
#define AT(at) ((at) < 0 ? INT64_MAX : (at))

#define COLS "e.path, e.version, e.size, e.sha256, e.ctype, e.updated_at"
/* E's row is the one live at AT. */
#define SEEN(E, AT) E ".from_seq <= " AT " AND (" E ".to_seq IS NULL OR " E ".to_seq > " AT ")"

/* ---------------------------------------------------------- one entry */

/* The row of path ?3 in volume ?1 read at ?2 (live: INT64_MAX), with columns
 * `cols` of entries e and a `depth`: the volume's own (OWN: live, by the live
 * index, or at ?2) or its parents' (depth > 0), the nearest first. */
#define OWN_LIVE(cols) "SELECT " cols ", 0 AS depth FROM entries e WHERE e.vno = ?1 AND" \
	" e.path = ?3 AND e.to_seq IS NULL"
#define OWN_AT(cols) "SELECT " cols ", 0 AS depth FROM entries e WHERE e.vno = ?1 AND" \
	" e.path = ?3 AND " SEEN("e", "?2")
#define NEAREST(own, cols, outer, join) COF_META_CHAIN "SELECT " outer " FROM (" own(cols) \
	" UNION ALL SELECT " cols ", c.depth FROM chain c JOIN entries e ON e.vno = c.vno AND" \
	" e.path = ?3 AND " SEEN("e", "c.at") " WHERE c.depth > 0) r " join \
	" ORDER BY r.depth LIMIT 1"

#define R_COLS "r.path, r.version, r.size, r.sha256, r.ctype, r.updated_at"
/* One literal per form: statements are cached by the text's address. */
static const char *const get_sql[2] = {
	NEAREST(OWN_LIVE, COLS, R_COLS, ""), NEAREST(OWN_AT, COLS, R_COLS, "")};
static const char *const read_sql[2] = {
	NEAREST(OWN_LIVE, COLS, R_COLS ", b.data", "LEFT JOIN blobs b ON b.sha256 = r.sha256"),
	NEAREST(OWN_AT, COLS, R_COLS ", b.data", "LEFT JOIN blobs b ON b.sha256 = r.sha256")};

static void row_entry(const cof_sql_row *r, cof_entry *e)
{
	cof_sql_text(r, 0, e->path, sizeof e->path);
	e->version = cof_sql_int(r, 1);
	e->size = cof_sql_int(r, 2);
	cof_sql_text(r, 3, e->sha256, sizeof e->sha256);
	cof_sql_text(r, 4, e->ctype, sizeof e->ctype);
	e->updated_at = cof_sql_int(r, 5);
}

/* cof_sql_row_fn: an entry row into ctx (a cof_entry). */
static int entry_one(void *ctx, const cof_sql_row *r, cof_err *err)
{
	(void)err;
	row_entry(r, ctx);
	return 1;
}

int cof_meta_entry_get_tx(cof_sql_tx *tx, int64_t vno, const char *path, int64_t at_seq,
			  cof_entry *out, cof_err *err)
{
	int found = cof_sql_query(tx, get_sql[at_seq >= 0], "reading a file", entry_one, out,
				  err, "iis", vno, AT(at_seq), path);

	return found < 0 ? -1 : found > 0 && out->sha256[0]; /* a whiteout: removed */
}

int cof_meta_entry_get(cof_meta *m, int64_t vno, const char *path, int64_t at_seq,
		       cof_entry *out, cof_err *err)
{
	cof_sql_tx tx;
	int rc;

	if (cof_sql_begin(m, COF_SQL_READ | COF_SQL_ONE, &tx, err) < 0)
		return -1;
	rc = cof_meta_entry_get_tx(&tx, vno, path, at_seq, out, err);
	return cof_sql_end(&tx, rc, err) < 0 ? -1 : rc;
}

/* Where entry_data puts a file's row and its inline content. */
typedef struct {
	cof_entry *out;
	unsigned char **data;
	size_t len;
} entry_read;

/* cof_sql_row_fn: an entry row and its inline content (column 6) into ctx
 * (an entry_read); none for a whiteout. */
static int entry_data(void *ctx, const cof_sql_row *r, cof_err *err)
{
	entry_read *e = ctx;

	row_entry(r, e->out);
	if (e->out->sha256[0] && cof_sql_blob(r, 6, e->data, &e->len) < 0)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	return 1;
}

/* No read transaction: a parent's rows at a fork's base seq never change, and
 * the query is one statement. A row read is kept for the event loop's next
 * GET while nothing was committed (SQLite's row cache; none elsewhere). */
int cof_meta_entry_read(cof_meta *m, int64_t vno, const char *path, int64_t at_seq,
			cof_entry *out, unsigned char **data, cof_err *err)
{
	entry_read e = {out, data, 0};
	cof_sql_mark mk;
	int kept = cof_sql_mark_begin(m, &mk);
	int rc;

	*data = NULL;
	if (kept && cof_sql_cached_entry(&mk, vno, path, at_seq, out, data))
		return 1;
	rc = cof_sql_read(m, read_sql[at_seq >= 0], "reading a file", entry_data, &e, err, "iis",
			  vno, AT(at_seq), path);
	if (rc < 0)
		return -1;
	if (rc == 0 || !out->sha256[0])
		return 0;
	if (kept)
		cof_sql_keep_entry(&mk, vno, path, at_seq, out, *data, e.len);
	return 1;
}

/* cof_sql_row_fn: (sha256, s3meta) into ctx (char **: NULL for a whiteout's
 * and a row with none). */
static int s3meta_one(void *ctx, const cof_sql_row *r, cof_err *err)
{
	char **out = ctx;

	if (cof_sql_isnull(r, 1) || !*cof_sql_str(r, 0))
		return 1;
	if (!(*out = cof_strdup(cof_sql_str(r, 1))))
		return cof_error(err, COF_EINTERNAL, "out of memory");
	return 1;
}

/* Read at a seq even live (INT64_MAX): a version's own seq finds it. */
int cof_meta_entry_s3meta(cof_meta *m, int64_t vno, const char *path, int64_t at_seq,
			  char **out, cof_err *err)
{
	static const char *const sql = NEAREST(OWN_AT, COLS ", e.s3meta", "r.sha256, r.s3meta", "");
	int found;

	*out = NULL;
	found = cof_sql_read(m, sql, "reading a file's S3 metadata", s3meta_one, out, err,
			     "iis", vno, AT(at_seq), path);
	return found < 0 ? -1 : found > 0;
}

typedef struct {
	cof_s3meta_fn fn;
	void *ctx;
} s3meta_each;

/* cof_sql_row_fn: (path, s3meta) to the caller's fn. */
static int s3meta_row(void *ctx, const cof_sql_row *r, cof_err *err)
{
	s3meta_each *e = ctx;

	(void)err;
	return e->fn(e->ctx, cof_sql_str(r, 0), cof_sql_str(r, 1)) ? 1 : 0;
}

int cof_meta_s3meta_range(cof_meta *m, int64_t vno, const char *first, const char *last,
			  cof_s3meta_fn fn, void *ctx, cof_err *err)
{
	s3meta_each e = {fn, ctx};

	return cof_sql_read(m, "SELECT path, s3meta FROM entries WHERE vno = ?1 AND path >= ?2"
			    " AND path <= ?3 AND to_seq IS NULL AND s3meta IS NOT NULL ORDER BY"
			    " path", "reading files' S3 metadata", s3meta_row, &e, err, "iss", vno,
			    first, last) < 0 ? -1 : 0;
}

/* ---------------------------------------------------------------- listing */

/* A page of a volume's own rows under the range "path >= ?2 AND path < ?3 AND
 * path > ?4": ?2 the greater of the prefix and the cursor (SQLite seeks the
 * index by one lower bound only), ?3 the prefix's upper bound, ?4 the cursor;
 * at most ?5 rows, live or at ?6. */
#define PAGE_WHERE "WHERE e.vno = ?1 AND e.path >= ?2 AND e.path < ?3 AND e.path > ?4 AND "
static const char *const page_sql[2] = {
	"SELECT " COLS ", 0 FROM entries e " PAGE_WHERE "e.to_seq IS NULL ORDER BY e.path LIMIT ?5",
	"SELECT " COLS ", 0 FROM entries e " PAGE_WHERE SEEN("e", "?6") " ORDER BY e.path"
	" LIMIT ?5"};

/* A page of a fork: volume ?1's chain read at ?2, the range as above in ?3,
 * ?4, ?5. Each level's row ?6 rows on (0-based) is its page's last (`hi`,
 * NULL when the level has no more); the page is every level's rows up to the
 * least of them (or to the range's end), in path order and the nearest level
 * first, with the number of levels that had more (column 6): 0 = the walk is
 * done after it. The page's end is the one upper bound its rows are read by
 * (a second, the range's, would be the one SQLite seeks by, reading the rest
 * of each level's range for every page), and the join's order is fixed
 * (CROSS JOIN: SQLite's planner keeps it): a level reads its page's rows. */
#define AFTER(E) E ".vno = c.vno AND " E ".path >= ?3 AND " E ".path > ?5 AND " SEEN(E, "c.at")
static const char fork_page_sql[] = COF_META_CHAIN ", lv AS MATERIALIZED (SELECT c.vno,"
	" c.at, c.depth, (SELECT x.path FROM entries x WHERE " AFTER("x") " AND x.path < ?4"
	" ORDER BY x.path LIMIT 1 OFFSET ?6) AS hi FROM chain c), bound AS (SELECT"
	" coalesce(min(hi), ?4) AS hi, count(hi) AS more FROM lv) SELECT " COLS ", t.more FROM"
	" bound t CROSS JOIN lv c CROSS JOIN entries e WHERE " AFTER("e") " AND e.path <= t.hi"
	" AND e.path <> ?4 ORDER BY e.path, c.depth";

/* One listing under way. */
typedef struct lister {
	cof_entry *e;
	cof_entry_fn fn;
	void *ctx;
	char *cursor;       /* the last path seen (a page's last row) */
	int rows, more, stop;
} lister;

/* cof_sql_row_fn: a page's row to the caller's fn; a path's first row is its
 * nearest level's, and a whiteout there hides it. */
static int list_row(void *ctx, const cof_sql_row *r, cof_err *err)
{
	lister *l = ctx;

	(void)err;
	row_entry(r, l->e);
	l->rows++;
	l->more = (int)cof_sql_int(r, 6);
	if (l->rows > 1 && !strcmp(l->e->path, l->cursor))
		return 0;   /* a farther level's row of a path already answered */
	memcpy(l->cursor, l->e->path, strlen(l->e->path) + 1);
	if (l->e->sha256[0] && l->fn(l->ctx, l->e)) {
		l->stop = 1;
		return 1;
	}
	return 0;
}

/* cof_sql_row_fn: ctx (an int) = 1. */
static int row_seen(void *ctx, const cof_sql_row *r, cof_err *err)
{
	(void)r;
	(void)err;
	*(int *)ctx = 1;
	return 1;
}

/* The pages of the listing. A fork's first pages are small when the store
 * hands rows over as it reads them (meta.h list_streams): a walk that stops
 * after one row reads about one a level. */
static int list_pages(cof_sql_tx *tx, int64_t vno, int fork, int64_t at, const char *prefix,
		      const char *upper, lister *l, int streams, cof_err *err)
{
	int64_t page = fork && streams ? 1 : LIST_PAGE;
	int rc;

	do {
		const char *from = strcmp(l->cursor, prefix) > 0 ? l->cursor : prefix;
		l->rows = l->more = 0;
		if (fork)
			rc = cof_sql_query(tx, fork_page_sql, "listing files", list_row, l, err,
					   "iisssi", vno, AT(at), from, upper, l->cursor, page - 1);
		else if (at < 0)
			rc = cof_sql_query(tx, page_sql[0], "listing files", list_row, l, err,
					   "isssi", vno, from, upper, l->cursor, page);
		else
			rc = cof_sql_query(tx, page_sql[1], "listing files", list_row, l, err,
					   "isssii", vno, from, upper, l->cursor, page, at);
		if (!fork)
			l->more = l->rows == page;
		page = page * 8 < LIST_PAGE ? page * 8 : LIST_PAGE;
	} while (rc >= 0 && !l->stop && l->rows && l->more);
	return rc < 0 ? -1 : 0;
}

int cof_meta_list_tx(cof_sql_tx *tx, int64_t vno, int fork, int64_t at_seq, const char *prefix,
		     const char *after, cof_entry_fn fn, void *ctx, cof_err *err)
{
	cof_buf upper = COF_BUF_INIT;
	lister l = {.fn = fn, .ctx = ctx};
	int rc = 0;

	prefix = prefix ? prefix : "";
	l.e = cof_malloc(sizeof *l.e);
	l.cursor = cof_malloc(COF_PATH_MAX + 1);
	if (!l.e || !l.cursor || cof_prefix_upper(prefix, &upper))
		rc = cof_error(err, COF_EINTERNAL, "out of memory");
	if (!rc && fork < 0)
		rc = cof_sql_query(tx, "SELECT 1 FROM volumes WHERE vno = ?1 AND base_vno IS NOT"
				   " NULL", "listing files", row_seen, &(int){0}, err, "i", vno);
	if (rc > 0)
		fork = 1;
	else if (rc == 0 && fork < 0)
		fork = 0;
	if (rc >= 0) {
		snprintf(l.cursor, COF_PATH_MAX + 1, "%s", after ? after : "");
		rc = list_pages(tx, vno, fork, at_seq, prefix, upper.data, &l,
				tx->m ? tx->m->ops->list_streams : 0, err);
	}
	cof_buf_release(&upper);
	free(l.cursor);
	free(l.e);
	return rc < 0 ? -1 : 0;
}

/* One read transaction, so a long walk sees one state of the database. */
int cof_meta_list(cof_meta *m, int64_t vno, int64_t at_seq, const char *prefix,
		  const char *after, cof_entry_fn fn, void *ctx, cof_err *err)
{
	cof_sql_tx tx;
	int rc;

	if (cof_sql_begin(m, COF_SQL_READ, &tx, err) < 0)
		return -1;
	rc = cof_meta_list_tx(&tx, vno, -1, at_seq, prefix, after, fn, ctx, err);
	return cof_sql_end(&tx, rc, err) < 0 ? -1 : 0;
}
