/*
 * meta_state.c — stored state, written once above the SQL seam (store/sql.h):
 * relay sessions' and turns' records (table state) and the recent history of
 * event streams (table events).
 *
 * An append to a stream takes the stream's lock (cof_sql_lock: SQLite's
 * writer already is one; PostgreSQL an advisory lock held to the commit), so
 * that nodes appending together number their events one after the other and
 * ids rise by one in the order readers see them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "store/meta.h"
#include "store/sql.h"

/* The lock space of event streams (cof_sql_lock), as before the seam. */
#define EVENT_LOCK 7700

#define STATE_COLS "kind, id, org, node, ended, updated_at, body"

/* Writes the record with `sql` (its parameters: STATE_COLS in order);
 * 1 = a row written, 0 = none, -1 = error. */
static int state_write(cof_meta *m, const char *sql, cof_staterow *r, cof_err *err)
{
	int64_t n = 0;

	r->updated_at = cof_now_ms();
	if (cof_sql_write(m, &n, sql, "saving a record", err, "ssssiis", r->kind, r->id, r->org,
			  r->node, (int64_t)r->ended, r->updated_at,
			  r->body ? r->body : "{}") < 0)
		return -1;
	return n > 0;
}

int cof_meta_state_put(cof_meta *m, cof_staterow *r, cof_err *err)
{
	return state_write(m, "INSERT INTO state(" STATE_COLS ") VALUES(?1,?2,?3,?4,?5,?6,?7)"
			   " ON CONFLICT(kind, id) DO UPDATE SET org = excluded.org, node ="
			   " excluded.node, ended = excluded.ended, updated_at ="
			   " excluded.updated_at, body = excluded.body", r, err) < 0 ? -1 : 0;
}

int cof_meta_state_add(cof_meta *m, cof_staterow *r, cof_err *err)
{
	return state_write(m, "INSERT INTO state(" STATE_COLS ") VALUES(?1,?2,?3,?4,?5,?6,?7)"
			   " ON CONFLICT(kind, id) DO NOTHING", r, err);
}

void cof_meta_state_save(cof_meta *m, const char *kind, const char *id, const char *org,
			 const char *node, int ended, json_t *b, const char *what)
{
	char *text = b ? json_dumps(b, JSON_COMPACT) : NULL;
	cof_staterow row = {.ended = ended, .body = text};
	cof_err e = {0};

	snprintf(row.kind, sizeof row.kind, "%s", kind);
	snprintf(row.id, sizeof row.id, "%s", id);
	snprintf(row.org, sizeof row.org, "%s", org);
	snprintf(row.node, sizeof row.node, "%s", node);
	if (!text || cof_meta_state_put(m, &row, &e))
		fprintf(stderr, "cofferd: %s %s: cannot store its record: %s\n", what, id,
			text ? e.msg : "out of memory");
	cof_err_clear(&e);
	free(text);
}

/* Fills *out from a STATE_COLS row; the body is borrowed from the row. */
static void row_read(const cof_sql_row *r, cof_staterow *out)
{
	memset(out, 0, sizeof *out);
	cof_sql_text(r, 0, out->kind, sizeof out->kind);
	cof_sql_text(r, 1, out->id, sizeof out->id);
	cof_sql_text(r, 2, out->org, sizeof out->org);
	cof_sql_text(r, 3, out->node, sizeof out->node);
	out->ended = (int)cof_sql_int(r, 4);
	out->updated_at = cof_sql_int(r, 5);
	out->body = (char *)cof_sql_str(r, 6);
}

/* A caller's cof_state_fn and its context, for state_row. */
typedef struct {
	cof_state_fn fn;
	void *ctx;
} state_each;

/* cof_sql_row_fn: gives a record row to the caller's fn (which says stop). */
static int state_row(void *ctx, const cof_sql_row *r, cof_err *err)
{
	state_each *e = ctx;
	cof_staterow row;

	(void)err;
	row_read(r, &row);
	return e->fn(e->ctx, &row) ? 1 : 0;
}

/* cof_sql_row_fn: the record row into ctx (a cof_staterow), its body copied. */
static int state_one(void *ctx, const cof_sql_row *r, cof_err *err)
{
	cof_staterow *out = ctx;

	row_read(r, out);
	out->body = cof_strdup(out->body);
	return out->body ? 1 : cof_error(err, COF_EINTERNAL, "out of memory");
}

int cof_meta_state_get(cof_meta *m, const char *kind, const char *id, cof_staterow *out,
		       cof_err *err)
{
	memset(out, 0, sizeof *out);
	int rc = cof_sql_read(m, "SELECT " STATE_COLS " FROM state WHERE kind = ?1 AND id = ?2",
			      "reading a record", state_one, out, err, "ss", kind, id);
	return rc < 0 ? -1 : rc > 0;
}

int cof_meta_state_list(cof_meta *m, const char *kind, int64_t since_ms, cof_state_fn fn,
			void *ctx, cof_err *err)
{
	state_each e = { fn, ctx };

	return cof_sql_read(m, "SELECT " STATE_COLS " FROM state WHERE kind = ?1 AND (ended = 0"
			    " OR updated_at >= ?2) ORDER BY updated_at", "reading records",
			    state_row, &e, err, "si", kind, since_ms) < 0 ? -1 : 0;
}

/* Ids under a prefix are a range of bytewise order ({C}): [prefix, upper),
 * upper from cof_prefix_upper, which the index on (kind, id) gives on
 * SQLite; on PostgreSQL the kind's rows are read by it and the range tested
 * on each (the column keeps the database's collation). */
int cof_meta_state_scan(cof_meta *m, const char *kind, const char *prefix, cof_state_fn fn,
			void *ctx, cof_err *err)
{
	state_each e = { fn, ctx };
	cof_buf upper = COF_BUF_INIT;
	int rc;

	prefix = prefix ? prefix : "";
	if (cof_prefix_upper(prefix, &upper))
		return cof_error(err, COF_EINTERNAL, "out of memory");
	rc = cof_sql_read(m, "SELECT " STATE_COLS " FROM state WHERE kind = ?1 AND id{C} >= ?2"
			  " AND id{C} < ?3 ORDER BY id{C}", "reading records", state_row, &e, err,
			  "sss", kind, prefix, upper.data);
	cof_buf_release(&upper);
	return rc < 0 ? -1 : 0;
}

int cof_meta_state_delete(cof_meta *m, const char *kind, const char *id, cof_err *err)
{
	return cof_sql_write(m, NULL, "DELETE FROM state WHERE kind = ?1 AND id = ?2",
			     "forgetting a record", err, "ss", kind, id) < 0 ? -1 : 0;
}

int cof_meta_state_swap(cof_meta *m, cof_staterow *r, const char *old_body, cof_err *err)
{
	int64_t n = 0;

	if (!old_body)
		return cof_meta_state_add(m, r, err);
	r->updated_at = cof_now_ms();
	if (cof_sql_write(m, &n, "UPDATE state SET org = ?1, node = ?2, ended = ?3, updated_at = ?4,"
			  " body = ?5 WHERE kind = ?6 AND id = ?7 AND body = ?8", "saving a record",
			  err, "ssiissss", r->org, r->node, (int64_t)r->ended, r->updated_at,
			  r->body ? r->body : "{}", r->kind, r->id, old_body) < 0)
		return -1;
	return n > 0;
}

/* One conditional statement: nodes noticing together, the second's UPDATE
 * (PostgreSQL: after waiting for the first's row locks; SQLite: after the
 * first's commit) finds the rows ended and changes none (one winner). The
 * body gets "endReason" by merging an object made here ({json_patch}), so
 * that the SQL builds no JSON of its own. */
int cof_meta_state_end_node(cof_meta *m, const char *kind, const char *node,
			    int64_t stale_before, const char *reason, int64_t *n, cof_err *err)
{
	json_t *o = json_pack("{s:s}", "endReason", reason ? reason : "");
	char *patch = o ? json_dumps(o, JSON_COMPACT) : NULL;
	int rc;

	json_decref(o);
	*n = 0;
	if (!patch)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	rc = cof_sql_write(m, n, "UPDATE state SET ended = 1, updated_at = ?1, body ="
			   " {json_patch}(body{jsonb}, CAST(?2 AS text){jsonb}) WHERE kind = ?3 AND"
			   " node = ?4 AND ended = 0 AND EXISTS(SELECT 1 FROM state WHERE"
			   " kind = 'node' AND id = ?4 AND updated_at < ?5)",
			   "ending a gone node's records", err, "isssi", cof_now_ms(), patch, kind,
			   node, stale_before);
	free(patch);
	return rc < 0 ? -1 : 0;
}

/* Forgets the records of `kind` ended before `before_ms`, their streams
 * first (named from the records). */
int cof_meta_state_prune(cof_meta *m, const char *kind, int64_t before_ms,
			 const char *const *prefixes, cof_err *err)
{
	cof_sql_tx tx;
	int rc = 0;

	if (cof_sql_begin(m, COF_SQL_WRITE, &tx, err) < 0)
		return -1;
	for (size_t i = 0; !rc && prefixes && prefixes[i]; i++)
		rc = cof_sql_exec(&tx, NULL, "DELETE FROM events WHERE stream IN (SELECT"
				  " CAST(?1 AS text) || id FROM state WHERE kind = ?2 AND ended = 1"
				  " AND updated_at < ?3)", "forgetting events", err, "ssi",
				  prefixes[i], kind, before_ms);
	if (!rc)
		rc = cof_sql_exec(&tx, NULL, "DELETE FROM state WHERE kind = ?1 AND ended = 1 AND"
				  " updated_at < ?2", "forgetting records", err, "si", kind,
				  before_ms);
	return cof_sql_end(&tx, rc, err) < 0 ? -1 : 0;
}

/* Ids under `id + "/"` are the range [id/, id0) of bytewise order: '0'
 * follows '/'. */
int cof_meta_state_forget(cof_meta *m, const char *kind, const char *id,
			  const char *const *streams, const char *const *subs, cof_err *err)
{
	cof_sql_tx tx;
	int rc;

	if (cof_sql_begin(m, COF_SQL_WRITE, &tx, err) < 0)
		return -1;
	rc = cof_sql_exec(&tx, NULL, "DELETE FROM state WHERE kind = ?1 AND id = ?2",
			  "forgetting a record", err, "ss", kind, id);
	for (size_t i = 0; !rc && streams && streams[i]; i++)
		rc = cof_sql_exec(&tx, NULL, "DELETE FROM events WHERE stream = CAST(?1 AS text) ||"
				  " CAST(?2 AS text)", "forgetting events", err, "ss", streams[i], id);
	for (size_t i = 0; !rc && subs && subs[i]; i++)
		rc = cof_sql_exec(&tx, NULL, "DELETE FROM state WHERE kind = ?1 AND id{C} >="
				  " CAST(?2 AS text) || '/' AND id{C} < CAST(?2 AS text) || '0'",
				  "forgetting records", err, "ss", subs[i], id);
	return cof_sql_end(&tx, rc, err) < 0 ? -1 : 0;
}

/* ---------------------------------------------------------------- events */

/* The one append form: numbered from the stream's last id in the INSERT
 * itself, under the stream's lock; then the stream cut to its last `keep`. */
int cof_meta_event_add(cof_meta *m, const char *stream, unsigned to, const char *body,
		       int64_t keep, int64_t *id, cof_err *err)
{
	cof_sql_tx tx;
	int rc;

	*id = 0;
	if (cof_sql_begin(m, COF_SQL_WRITE, &tx, err) < 0)
		return -1;
	rc = cof_sql_lock(&tx, EVENT_LOCK, stream, err);
	if (!rc && cof_sql_query(&tx, "INSERT INTO events(stream, id, mask, body, at) SELECT"
				 " CAST(?1 AS text), coalesce(max(id), 0) + 1, CAST(?2 AS bigint),"
				 " CAST(?3 AS text), CAST(?4 AS bigint) FROM events WHERE"
				 " stream = ?1 RETURNING id", "recording an event", cof_sql_row_int,
				 id, err, "sisi", stream, (int64_t)to, body, cof_now_ms()) < 0)
		rc = -1;
	if (!rc && *id <= 0)
		rc = cof_error(err, COF_EINTERNAL, "recording an event: no id");
	if (!rc && *id > keep)
		rc = cof_sql_exec(&tx, NULL, "DELETE FROM events WHERE stream = ?1 AND id <= ?2",
				  "recording an event", err, "si", stream, *id - keep);
	return cof_sql_end(&tx, rc, err) < 0 ? -1 : 0;
}

/* A caller's cof_event_fn and its context, for event_row. */
typedef struct {
	cof_event_fn fn;
	void *ctx;
} event_each;

/* cof_sql_row_fn: gives an (id, mask, body) row to the caller's fn. */
static int event_row(void *ctx, const cof_sql_row *r, cof_err *err)
{
	event_each *e = ctx;

	(void)err;
	return e->fn(e->ctx, cof_sql_int(r, 0), (unsigned)cof_sql_int(r, 1),
		     cof_sql_str(r, 2)) ? 1 : 0;
}

int cof_meta_event_list(cof_meta *m, const char *stream, int64_t after, int64_t limit,
			cof_event_fn fn, void *ctx, cof_err *err)
{
	event_each e = { fn, ctx };

	return cof_sql_read(m, "SELECT id, mask, body FROM events WHERE stream = ?1 AND id > ?2"
			    " ORDER BY id LIMIT ?3", "reading events", event_row, &e, err, "sii",
			    stream, after, limit) < 0 ? -1 : 0;
}

/* cof_sql_row_fn: the two numbers of the row into ctx (int64_t[2]). */
static int two_ints(void *ctx, const cof_sql_row *r, cof_err *err)
{
	int64_t *v = ctx;

	(void)err;
	v[0] = cof_sql_int(r, 0);
	v[1] = cof_sql_int(r, 1);
	return 1;
}

int cof_meta_event_last(cof_meta *m, const char *stream, int64_t *last, int64_t *first,
			cof_err *err)
{
	int64_t v[2] = { 0, 0 };
	int rc = cof_sql_read(m, "SELECT coalesce(max(id), 0), coalesce(min(id), 0) FROM events"
			      " WHERE stream = ?1", "reading events", two_ints, v, err, "s",
			      stream);

	*last = v[0];
	*first = v[1];
	return rc < 0 ? -1 : 0;
}
