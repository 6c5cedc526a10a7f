/*
 * meta_read.c — reading files, written once above the SQL seam (store/sql.h):
 * one entry (with its inline content, or its S3 text), a listing by prefix as
 * of a seq, and the S3 texts of a listing's page.
 *
 * A fork's own rows (what it wrote, and a whiteout row, sha256 "", for each
 * file it removed) shadow its parent's at the fork's base seq, and so on up
 * the chain (docs/design.md, "Forks"; COF_META_CHAIN). A read is one query:
 * the volume's own row, by the live index when it is read live, or the
 * nearest parent's; where statements cost no round trip (SQLite), the own
 * row's statement first, alone, and the parents' only when it has none. A listing is fetched in pages (keyset on path) inside one
 * read transaction, so a long walk sees one state of the database without
 * holding a volume's rows in memory; a fork's page is two queries over every
 * level of the chain (its end, then its rows). SQLite hands rows over as it
 * steps (its pages cost nothing when the walk stops early); its row cache of
 * GETs and its pinned readers stay below the seam (cof_sql_mark_begin,
 * cof_sql_begin).
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
#define BLOB "LEFT JOIN blobs b ON b.sha256 = "
/* The same in two steps, where a statement costs no round trip (sql.h
 * `local`): the volume's own row alone (live: ?1, ?2 = path; at: ?3 = the
 * seq), then the parents' over the chain as NEAREST's (?1, ?2, ?3). */
#define OWN_ONLY(cols, join, seen) "SELECT " cols " FROM entries e " join " WHERE e.vno = ?1" \
	" AND e.path = ?2 AND " seen
#define PARENTS(cols, join) COF_META_CHAIN "SELECT " cols " FROM chain c JOIN entries e ON" \
	" e.vno = c.vno AND e.path = ?3 AND " SEEN("e", "c.at") " " join " WHERE c.depth > 0" \
	" ORDER BY c.depth LIMIT 1"

/* The forms of a read: [0], [1] one query (live, at a seq); [2], [3] the own
 * row alone (live, at); [4] the parents'. One literal per form: statements
 * are cached by the text's address. */
static const char *const get_sql[5] = {
	NEAREST(OWN_LIVE, COLS, R_COLS, ""), NEAREST(OWN_AT, COLS, R_COLS, ""),
	OWN_ONLY(COLS, "", "e.to_seq IS NULL"), OWN_ONLY(COLS, "", SEEN("e", "?3")),
	PARENTS(COLS, "")};
static const char *const read_sql[5] = {
	NEAREST(OWN_LIVE, COLS, R_COLS ", b.data", BLOB "r.sha256"),
	NEAREST(OWN_AT, COLS, R_COLS ", b.data", BLOB "r.sha256"),
	OWN_ONLY(COLS ", b.data", BLOB "e.sha256", "e.to_seq IS NULL"),
	OWN_ONLY(COLS ", b.data", BLOB "e.sha256", SEEN("e", "?3")),
	PARENTS(COLS ", b.data", BLOB "e.sha256")};

/* The nearest row of `path` through the chain of `vno` read at `at_seq`, by
 * the forms `sql`, to fn: the number of rows (0 or 1) or < 0. */
static int nearest(cof_sql_tx *tx, const char *const *sql, int64_t vno, const char *path,
		   int64_t at_seq, const char *what, cof_sql_row_fn fn, void *ctx, cof_err *err)
{
	int rc;

	if (!tx->d->local)
		return cof_sql_query(tx, sql[at_seq >= 0], what, fn, ctx, err, "iis", vno,
				     AT(at_seq), path);
	if (at_seq < 0)
		rc = cof_sql_query(tx, sql[2], what, fn, ctx, err, "is", vno, path);
	else
		rc = cof_sql_query(tx, sql[3], what, fn, ctx, err, "isi", vno, path, at_seq);
	if (rc == 0)
		rc = cof_sql_query(tx, sql[4], what, fn, ctx, err, "iis", vno, AT(at_seq), path);
	return rc;
}

void cof_meta_entry_row(const cof_sql_row *r, cof_entry *e)
{
	cof_sql_text(r, 0, e->path, sizeof e->path);
	e->version = cof_sql_int(r, 1);
	e->size = cof_sql_int(r, 2);
	cof_sql_text(r, 3, e->sha256, sizeof e->sha256);
	cof_sql_text(r, 4, e->ctype, sizeof e->ctype);
	e->updated_at = cof_sql_int(r, 5);
}

int cof_meta_entry_one(void *ctx, const cof_sql_row *r, cof_err *err)
{
	(void)err;
	cof_meta_entry_row(r, ctx);
	return 1;
}

int cof_meta_entry_get_tx(cof_sql_tx *tx, int64_t vno, const char *path, int64_t at_seq,
			  cof_entry *out, cof_err *err)
{
	int found = nearest(tx, get_sql, vno, path, at_seq, "reading a file",
			    cof_meta_entry_one, out, err);

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

	cof_meta_entry_row(r, e->out);
	if (e->out->sha256[0] && cof_sql_blob(r, 6, e->data, &e->len) < 0)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	return 1;
}

/* No read transaction: a parent's rows at a fork's base seq never change, so
 * a read in two statements sees the fork as it was at its own row's. A row read is kept for the event loop's next
 * GET while nothing was committed (SQLite's row cache; none elsewhere). */
int cof_meta_entry_read(cof_meta *m, int64_t vno, const char *path, int64_t at_seq,
			cof_entry *out, unsigned char **data, cof_err *err)
{
	entry_read e = {out, data, 0};
	cof_sql_mark mk;
	int kept = cof_sql_mark_begin(m, &mk);
	cof_sql_tx tx;
	int rc;

	*data = NULL;
	if (kept && cof_sql_cached_entry(&mk, vno, path, at_seq, out, data))
		return 1;
	if (cof_sql_begin(m, COF_SQL_READ | COF_SQL_ONE, &tx, err) < 0)
		return -1;
	rc = nearest(&tx, read_sql, vno, path, at_seq, "reading a file", entry_data, &e, err);
	rc = cof_sql_end(&tx, rc, err);
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
	"SELECT " COLS " FROM entries e " PAGE_WHERE "e.to_seq IS NULL ORDER BY e.path LIMIT ?5",
	"SELECT " COLS " FROM entries e " PAGE_WHERE SEEN("e", "?6") " ORDER BY e.path"
	" LIMIT ?5"};

/* A page of a fork, in two queries over volume ?1's chain read at ?2, each
 * level's rows from ?3 (the greater of the prefix and the cursor) after ?5
 * (the cursor). The first gives the page's end: each level's row ?6 rows on
 * (0-based) under the prefix's upper bound ?4 is its page's last (NULL when
 * the level has no more), and the page ends at the least of them; how many
 * levels had more (0 = the walk is done after this page). The second reads
 * every level's rows up to that end, ?4 (inclusive; the prefix's upper bound
 * when no level had more, then ?6 is it too, else ""), in path order and the
 * nearest level first. One query with the end computed inside it was read by
 * a plan from the end's estimate (PostgreSQL: a scan of every level's range
 * for each page; SQLite: seeking by the range's bound): a parameter is
 * planned as the range it is. CROSS JOIN keeps the chain the outer loop. */
#define AFTER(E) E ".vno = c.vno AND " E ".path >= ?3 AND " E ".path > ?5 AND " SEEN(E, "c.at")
static const char fork_end_sql[] = COF_META_CHAIN "SELECT min(hi), count(hi) FROM (SELECT"
	" (SELECT x.path FROM entries x WHERE " AFTER("x") " AND x.path < ?4 ORDER BY x.path"
	" LIMIT 1 OFFSET ?6) AS hi FROM chain c) lv";
static const char fork_page_sql[] = COF_META_CHAIN "SELECT " COLS " FROM chain c CROSS JOIN"
	" entries e WHERE " AFTER("e") " AND e.path <= ?4 AND e.path <> ?6 ORDER BY e.path,"
	" c.depth";

/* A fork page's end: (min(hi), count(hi)) into ctx (a page_end). */
typedef struct {
	char *end;
	int64_t more;
} page_end;

static int end_row(void *ctx, const cof_sql_row *r, cof_err *err)
{
	page_end *pe = ctx;

	(void)err;
	pe->more = cof_sql_int(r, 1);
	if (pe->more)
		cof_sql_text(r, 0, pe->end, COF_PATH_MAX + 1);
	return 1;
}

/* One listing under way. */
typedef struct lister {
	cof_entry *e;
	cof_entry_fn fn;
	void *ctx;
	char *cursor;       /* the last path seen (a page's last row) */
	char *end;          /* a fork's page's end */
	int rows, more, stop;
} lister;

/* cof_sql_row_fn: a page's row to the caller's fn; a path's first row is its
 * nearest level's, and a whiteout there hides it. */
static int list_row(void *ctx, const cof_sql_row *r, cof_err *err)
{
	lister *l = ctx;

	(void)err;
	cof_meta_entry_row(r, l->e);
	l->rows++;
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

/* One page of a fork's listing (fork_end_sql, fork_page_sql). */
static int fork_page(cof_sql_tx *tx, int64_t vno, int64_t at, const char *from,
		     const char *upper, lister *l, int64_t page, cof_err *err)
{
	page_end pe = {l->end, 0};
	int rc = cof_sql_query(tx, fork_end_sql, "listing files", end_row, &pe, err, "iisssi",
			       vno, AT(at), from, upper, l->cursor, page - 1);

	if (rc < 0)
		return rc;
	rc = cof_sql_query(tx, fork_page_sql, "listing files", list_row, l, err, "iissss", vno,
			   AT(at), from, pe.more ? pe.end : upper, l->cursor, pe.more ? "" : upper);
	l->more = pe.more > 0;
	return rc;
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
			rc = fork_page(tx, vno, at, from, upper, l, page, err);
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
	l.end = cof_malloc(COF_PATH_MAX + 1);
	if (!l.e || !l.cursor || !l.end || cof_prefix_upper(prefix, &upper))
		rc = cof_error(err, COF_EINTERNAL, "out of memory");
	if (!rc && fork < 0)
		rc = cof_sql_query(tx, "SELECT 1 FROM volumes WHERE vno = ?1 AND base_vno IS NOT"
				   " NULL", "listing files", row_seen, &(int){0}, err, "i", vno);
	if (rc > 0)
		fork = 1;
	else if (rc == 0 && fork < 0)
		fork = 0;
	if (rc >= 0 && fork && tx->d->fork_list)
		rc = tx->d->fork_list(tx, vno, at_seq, prefix, upper.data, after, fn, ctx, err);
	else if (rc >= 0) {
		snprintf(l.cursor, COF_PATH_MAX + 1, "%s", after ? after : "");
		rc = list_pages(tx, vno, fork, at_seq, prefix, upper.data, &l,
				tx->m ? tx->m->ops->list_streams : 0, err);
	}
	cof_buf_release(&upper);
	free(l.end);
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
