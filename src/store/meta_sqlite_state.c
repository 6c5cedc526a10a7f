/*
 * meta_sqlite_state.c — stored state on SQLite: relay sessions' and turns'
 * records (table state) and the recent history of event streams (table
 * events). One process writes them (the writer connection orders appends, so
 * an event's id is the stream's last id + 1).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "store/meta_sqlite.h"

/* Inserts the record; an existing one (kind, id) is replaced (`replace`) or
 * kept. 1 = written, 0 = kept, -1 = error. */
static int state_write(cof_meta *m, cof_staterow *r, int replace, cof_err *err)
{
	conn *c = cof_sqlite_writer_begin(m, err);
	int64_t n = 0;
	int rc;

	if (!c)
		return -1;
	r->updated_at = cof_now_ms();
	rc = cof_sqlite_run(c, &n, replace ? "INSERT OR REPLACE INTO state(kind, id, org, node,"
			    " ended, updated_at, body) VALUES(?,?,?,?,?,?,?)"
			    : "INSERT OR IGNORE INTO state(kind, id, org, node, ended,"
			    " updated_at, body) VALUES(?,?,?,?,?,?,?)", "saving a record", err,
			    "ssssiis", r->kind, r->id, r->org, r->node, (int64_t)r->ended,
			    r->updated_at, r->body ? r->body : "{}");
	if (cof_sqlite_writer_end(m, rc, err) < 0 || rc < 0)
		return -1;
	return n > 0;
}

static int sq_state_put(cof_meta *m, cof_staterow *r, cof_err *err)
{
	return state_write(m, r, 1, err) < 0 ? -1 : 0;
}

static int sq_state_add(cof_meta *m, cof_staterow *r, cof_err *err)
{
	return state_write(m, r, 0, err);
}

/* Fills *out from a row (kind, id, org, node, ended, updated_at, body);
 * the body is borrowed from the statement. */
static void row_read(sqlite3_stmt *st, cof_staterow *out)
{
	memset(out, 0, sizeof *out);
	cof_sqlite_col_copy(st, 0, out->kind, sizeof out->kind);
	cof_sqlite_col_copy(st, 1, out->id, sizeof out->id);
	cof_sqlite_col_copy(st, 2, out->org, sizeof out->org);
	cof_sqlite_col_copy(st, 3, out->node, sizeof out->node);
	out->ended = sqlite3_column_int(st, 4);
	out->updated_at = sqlite3_column_int64(st, 5);
	out->body = (char *)sqlite3_column_text(st, 6);
}

/* A caller's cof_state_fn and its context, for state_row. */
typedef struct {
	cof_state_fn fn;
	void *ctx;
} state_each;

/* cof_sqlite_row_fn: gives a record row to the caller's fn (which says stop). */
static int state_row(void *ctx, sqlite3_stmt *st, cof_err *err)
{
	state_each *e = ctx;
	cof_staterow row;

	(void)err;
	row_read(st, &row);
	return e->fn(e->ctx, &row) ? 1 : 0;
}

/* cof_sqlite_row_fn: the record row into ctx (a cof_staterow), its body copied. */
static int state_one(void *ctx, sqlite3_stmt *st, cof_err *err)
{
	cof_staterow *out = ctx;

	row_read(st, out);
	out->body = cof_strdup(out->body ? out->body : "{}");
	return out->body ? 1 : cof_error(err, COF_EINTERNAL, "out of memory");
}

static int sq_state_get(cof_meta *m, const char *kind, const char *id, cof_staterow *out,
			cof_err *err)
{
	memset(out, 0, sizeof *out);
	int rc = cof_sqlite_read(m, "SELECT kind, id, org, node, ended, updated_at, body FROM"
				 " state WHERE kind = ? AND id = ?", "reading a record", state_one,
				 out, err, "ss", kind, id);
	return rc < 0 ? -1 : rc > 0;
}

static int sq_state_list(cof_meta *m, const char *kind, int64_t since_ms, cof_state_fn fn,
			 void *ctx, cof_err *err)
{
	state_each e = { fn, ctx };

	return cof_sqlite_read(m, "SELECT kind, id, org, node, ended, updated_at, body FROM state"
			       " WHERE kind = ? AND (ended = 0 OR updated_at >= ?) ORDER BY"
			       " updated_at", "reading records", state_row, &e, err, "si", kind,
			       since_ms) < 0 ? -1 : 0;
}

static int sq_event_add(cof_meta *m, const char *stream, unsigned to, const char *body,
			int64_t keep, int64_t *id, cof_err *err)
{
	conn *c = cof_sqlite_writer_begin(m, err);
	int rc = -1;

	if (!c)
		return -1;
	*id = 0;
	if (cof_sqlite_rows(c, "SELECT coalesce(max(id), 0) + 1 FROM events WHERE stream = ?",
			    "numbering an event", cof_sqlite_row_int, id, err, "s", stream) >= 0) {
		if (*id > 0)
			rc = cof_sqlite_run(c, NULL, "INSERT INTO events(stream, id, mask, body, at)"
					    " VALUES(?,?,?,?,?)", "recording an event", err, "siisi",
					    stream, *id, (int64_t)to, body, cof_now_ms());
		else
			cof_sqlite_db_error(err, c->db, "numbering an event");
	}
	if (!rc && *id > keep)
		rc = cof_sqlite_run(c, NULL, "DELETE FROM events WHERE stream = ? AND id <= ?",
				    "recording an event", err, "si", stream, *id - keep);
	return cof_sqlite_writer_end(m, rc, err);
}

/* A caller's cof_event_fn and its context, for event_row. */
typedef struct {
	cof_event_fn fn;
	void *ctx;
} event_each;

/* cof_sqlite_row_fn: gives an (id, mask, body) row to the caller's fn. */
static int event_row(void *ctx, sqlite3_stmt *st, cof_err *err)
{
	event_each *e = ctx;

	(void)err;
	return e->fn(e->ctx, sqlite3_column_int64(st, 0), (unsigned)sqlite3_column_int64(st, 1),
		     (const char *)sqlite3_column_text(st, 2)) ? 1 : 0;
}

static int sq_event_list(cof_meta *m, const char *stream, int64_t after, int64_t limit,
			 cof_event_fn fn, void *ctx, cof_err *err)
{
	event_each e = { fn, ctx };

	return cof_sqlite_read(m, "SELECT id, mask, body FROM events WHERE stream = ? AND id > ?"
			       " ORDER BY id LIMIT ?", "reading events", event_row, &e, err, "sii",
			       stream, after, limit) < 0 ? -1 : 0;
}

/* cof_sqlite_row_fn: the two numbers of the row into ctx (int64_t[2]). */
static int two_ints(void *ctx, sqlite3_stmt *st, cof_err *err)
{
	int64_t *v = ctx;

	(void)err;
	v[0] = sqlite3_column_int64(st, 0);
	v[1] = sqlite3_column_int64(st, 1);
	return 1;
}

static int sq_event_last(cof_meta *m, const char *stream, int64_t *last, int64_t *first,
			 cof_err *err)
{
	int64_t v[2] = { 0, 0 };
	int rc = cof_sqlite_read(m, "SELECT coalesce(max(id), 0), coalesce(min(id), 0) FROM"
				 " events WHERE stream = ?", "reading events", two_ints, v, err, "s",
				 stream);

	*last = v[0];
	*first = v[1];
	return rc < 0 ? -1 : 0;
}

static int sq_state_prune(cof_meta *m, const char *kind, int64_t before_ms,
			  const char *const *prefixes, cof_err *err)
{
	conn *c = cof_sqlite_writer_begin(m, err);
	int rc = 0;

	if (!c)
		return -1;
	for (size_t i = 0; !rc && prefixes && prefixes[i]; i++)
		rc = cof_sqlite_run(c, NULL, "DELETE FROM events WHERE stream IN (SELECT ? || id FROM"
				    " state WHERE kind = ? AND ended = 1 AND updated_at < ?)",
				    "forgetting events", err, "ssi", prefixes[i], kind, before_ms);
	if (!rc)
		rc = cof_sqlite_run(c, NULL, "DELETE FROM state WHERE kind = ? AND ended = 1 AND"
				    " updated_at < ?", "forgetting records", err, "si", kind,
				    before_ms);
	return cof_sqlite_writer_end(m, rc, err);
}

static int sq_state_scan(cof_meta *m, const char *kind, const char *prefix, cof_state_fn fn,
			 void *ctx, cof_err *err)
{
	state_each e = { fn, ctx };
	cof_buf upper = COF_BUF_INIT;
	const char *hi = cof_sqlite_upper(&prefix, &upper, err);
	int rc = !hi ? -1 : cof_sqlite_read(m, "SELECT kind, id, org, node, ended, updated_at,"
					    " body FROM state WHERE kind = ? AND id >= ? AND"
					    " id < ? ORDER BY id", "reading records", state_row,
					    &e, err, "sss", kind, prefix, hi);

	cof_buf_release(&upper);
	return rc < 0 ? -1 : 0;
}

static int sq_state_delete(cof_meta *m, const char *kind, const char *id, cof_err *err)
{
	return cof_sqlite_write(m, "DELETE FROM state WHERE kind = ? AND id = ?",
				"forgetting a record", err, "ss", kind, id);
}

static int sq_state_end_node(cof_meta *m, const char *kind, const char *node,
			     int64_t stale_before, const char *reason, int64_t *n, cof_err *err)
{
	conn *c = cof_sqlite_writer_begin(m, err);
	int rc;

	*n = 0;
	if (!c)
		return -1;
	rc = cof_sqlite_run(c, n, "UPDATE state SET ended = 1, updated_at = ?, body ="
			    " json_set(body, '$.endReason', ?) WHERE kind = ? AND node = ? AND"
			    " ended = 0 AND EXISTS(SELECT 1 FROM state WHERE kind = 'node' AND"
			    " id = ? AND updated_at < ?)", "ending a gone node's records", err,
			    "issssi", cof_now_ms(), reason, kind, node, node, stale_before);
	return cof_sqlite_writer_end(m, rc, err);
}

static int sq_state_swap(cof_meta *m, cof_staterow *r, const char *old_body, cof_err *err)
{
	conn *c = cof_sqlite_writer_begin(m, err);
	int64_t n = 0;
	int rc;

	if (!c)
		return -1;
	r->updated_at = cof_now_ms();
	rc = cof_sqlite_run(c, &n, "UPDATE state SET org = ?, node = ?, ended = ?, updated_at = ?,"
			    " body = ? WHERE kind = ? AND id = ? AND body = ?", "saving a record",
			    err, "ssiissss", r->org, r->node, (int64_t)r->ended, r->updated_at,
			    r->body ? r->body : "{}", r->kind, r->id, old_body);
	if (cof_sqlite_writer_end(m, rc, err) < 0 || rc < 0)
		return -1;
	return n > 0;
}

/* Ids under `id + "/"` are the range [id/, id0): '0' follows '/'. */
static int sq_state_forget(cof_meta *m, const char *kind, const char *id,
			   const char *const *streams, const char *const *subs, cof_err *err)
{
	conn *c = cof_sqlite_writer_begin(m, err);
	int rc;

	if (!c)
		return -1;
	rc = cof_sqlite_run(c, NULL, "DELETE FROM state WHERE kind = ? AND id = ?",
			    "forgetting a record", err, "ss", kind, id);
	for (size_t i = 0; !rc && streams && streams[i]; i++)
		rc = cof_sqlite_run(c, NULL, "DELETE FROM events WHERE stream = ? || ?",
				    "forgetting events", err, "ss", streams[i], id);
	for (size_t i = 0; !rc && subs && subs[i]; i++)
		rc = cof_sqlite_run(c, NULL, "DELETE FROM state WHERE kind = ? AND id >= ? || '/'"
				    " AND id < ? || '0'", "forgetting records", err, "sss",
				    subs[i], id, id);
	return cof_sqlite_writer_end(m, rc, err);
}

/* Fills the members of the SQLite backend this file implements. */
void cof_sqlite_ops_state(cof_meta_ops *o)
{
	o->state_put = sq_state_put;
	o->state_add = sq_state_add;
	o->state_get = sq_state_get;
	o->state_list = sq_state_list;
	o->event_add = sq_event_add;
	o->event_list = sq_event_list;
	o->event_last = sq_event_last;
	o->state_prune = sq_state_prune;
	o->state_scan = sq_state_scan;
	o->state_delete = sq_state_delete;
	o->state_end_node = sq_state_end_node;
	o->state_swap = sq_state_swap;
	o->state_forget = sq_state_forget;
}
