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

/* Calls fn on each row of the bound statement st (until fn says stop) and
 * resets it: 0, or -1 with err. */
static int rows_each(conn *c, sqlite3_stmt *st, cof_state_fn fn, void *ctx, cof_err *err)
{
	int r, rc;

	while ((r = sqlite3_step(st)) == SQLITE_ROW) {
		cof_staterow row;
		row_read(st, &row);
		if (fn(ctx, &row))
			break;
	}
	rc = (r == SQLITE_ROW || r == SQLITE_DONE) ? 0
		: cof_sqlite_db_error(err, c->db, "reading records");
	sqlite3_reset(st);
	return rc;
}

static int sq_state_get(cof_meta *m, const char *kind, const char *id, cof_staterow *out,
			cof_err *err)
{
	conn *c = cof_sqlite_reader_get(m, err);
	sqlite3_stmt *st;
	int rc = -1;

	memset(out, 0, sizeof *out);
	if (!c)
		return -1;
	if ((st = cof_sqlite_q(c, "SELECT kind, id, org, node, ended, updated_at, body FROM state"
			       " WHERE kind = ? AND id = ?", err))) {
		cof_sqlite_bind_text(st, 1, kind);
		cof_sqlite_bind_text(st, 2, id);
		int r = sqlite3_step(st);
		if (r == SQLITE_ROW) {
			row_read(st, out);
			out->body = cof_strdup(out->body ? out->body : "{}");
			rc = out->body ? 1 : cof_error(err, COF_EINTERNAL, "out of memory");
		} else {
			rc = r == SQLITE_DONE ? 0 : cof_sqlite_db_error(err, c->db, "reading a record");
		}
		sqlite3_reset(st);
	}
	cof_sqlite_reader_put(m, c);
	return rc;
}

static int sq_state_list(cof_meta *m, const char *kind, int64_t since_ms, cof_state_fn fn,
			 void *ctx, cof_err *err)
{
	conn *c = cof_sqlite_reader_get(m, err);
	sqlite3_stmt *st;
	int rc = -1;

	if (!c)
		return -1;
	if ((st = cof_sqlite_q(c, "SELECT kind, id, org, node, ended, updated_at, body FROM state"
			       " WHERE kind = ? AND (ended = 0 OR updated_at >= ?) ORDER BY"
			       " updated_at", err))) {
		cof_sqlite_bind_text(st, 1, kind);
		sqlite3_bind_int64(st, 2, since_ms);
		rc = rows_each(c, st, fn, ctx, err);
	}
	cof_sqlite_reader_put(m, c);
	return rc;
}

static int sq_event_add(cof_meta *m, const char *stream, unsigned to, const char *body,
			int64_t keep, int64_t *id, cof_err *err)
{
	conn *c = cof_sqlite_writer_begin(m, err);
	sqlite3_stmt *st;
	int rc = -1;

	if (!c)
		return -1;
	*id = 0;
	if ((st = cof_sqlite_q(c, "SELECT coalesce(max(id), 0) + 1 FROM events WHERE stream = ?",
			       err))) {
		cof_sqlite_bind_text(st, 1, stream);
		if (sqlite3_step(st) == SQLITE_ROW)
			*id = sqlite3_column_int64(st, 0);
		sqlite3_reset(st);
	}
	if (*id > 0 && (st = cof_sqlite_q(c, "INSERT INTO events(stream, id, mask, body, at)"
					   " VALUES(?,?,?,?,?)", err))) {
		cof_sqlite_bind_text(st, 1, stream);
		sqlite3_bind_int64(st, 2, *id);
		sqlite3_bind_int64(st, 3, to);
		cof_sqlite_bind_text(st, 4, body);
		sqlite3_bind_int64(st, 5, cof_now_ms());
		rc = sqlite3_step(st) == SQLITE_DONE ? 0
			: cof_sqlite_db_error(err, c->db, "recording an event");
	} else if (*id <= 0) {
		cof_sqlite_db_error(err, c->db, "numbering an event");
	}
	if (!rc && *id > keep)
		rc = cof_sqlite_run(c, NULL, "DELETE FROM events WHERE stream = ? AND id <= ?",
				    "recording an event", err, "si", stream, *id - keep);
	return cof_sqlite_writer_end(m, rc, err);
}

static int sq_event_list(cof_meta *m, const char *stream, int64_t after, int64_t limit,
			 cof_event_fn fn, void *ctx, cof_err *err)
{
	conn *c = cof_sqlite_reader_get(m, err);
	sqlite3_stmt *st;
	int r, rc = -1;

	if (!c)
		return -1;
	if ((st = cof_sqlite_q(c, "SELECT id, mask, body FROM events WHERE stream = ? AND id > ?"
			       " ORDER BY id LIMIT ?", err))) {
		cof_sqlite_bind_text(st, 1, stream);
		sqlite3_bind_int64(st, 2, after);
		sqlite3_bind_int64(st, 3, limit);
		while ((r = sqlite3_step(st)) == SQLITE_ROW)
			if (fn(ctx, sqlite3_column_int64(st, 0), (unsigned)sqlite3_column_int64(st, 1),
			       (const char *)sqlite3_column_text(st, 2)))
				break;
		rc = (r == SQLITE_ROW || r == SQLITE_DONE) ? 0
			: cof_sqlite_db_error(err, c->db, "reading events");
		sqlite3_reset(st);
	}
	cof_sqlite_reader_put(m, c);
	return rc;
}

static int sq_event_last(cof_meta *m, const char *stream, int64_t *last, int64_t *first,
			 cof_err *err)
{
	conn *c = cof_sqlite_reader_get(m, err);
	sqlite3_stmt *st;
	int rc = -1;

	*last = *first = 0;
	if (!c)
		return -1;
	if ((st = cof_sqlite_q(c, "SELECT coalesce(max(id), 0), coalesce(min(id), 0) FROM events"
			       " WHERE stream = ?", err))) {
		cof_sqlite_bind_text(st, 1, stream);
		if (sqlite3_step(st) == SQLITE_ROW) {
			*last = sqlite3_column_int64(st, 0);
			*first = sqlite3_column_int64(st, 1);
			rc = 0;
		} else {
			cof_sqlite_db_error(err, c->db, "reading events");
		}
		sqlite3_reset(st);
	}
	cof_sqlite_reader_put(m, c);
	return rc;
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
	conn *c = cof_sqlite_reader_get(m, err);
	cof_buf upper = COF_BUF_INIT;
	sqlite3_stmt *st;
	int rc = -1;

	if (!c)
		return -1;
	if ((st = cof_sqlite_q(c, "SELECT kind, id, org, node, ended, updated_at, body FROM state"
			       " WHERE kind = ? AND id >= ? AND id < ? ORDER BY id", err))) {
		cof_sqlite_bind_text(st, 1, kind);
		if (!cof_sqlite_prefix_bounds(st, 2, 3, prefix, &upper, err))
			rc = rows_each(c, st, fn, ctx, err);
	}
	cof_buf_release(&upper);
	cof_sqlite_reader_put(m, c);
	return rc;
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
