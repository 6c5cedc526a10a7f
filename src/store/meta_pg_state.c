/*
 * meta_pg_state.c — stored state on PostgreSQL: relay sessions' and turns'
 * records (table state) and the recent history of event streams (table
 * events). Nodes append to one stream concurrently: an append holds the
 * stream's advisory lock until it commits, so ids rise by one in the order
 * readers see them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "store/meta_pg.h"

static int pg_state_put(cof_meta *m, cof_staterow *r, cof_err *err)
{
	r->updated_at = cof_now_ms();
	return cof_pg_one(m, "INSERT INTO state(kind, id, org, node, ended, updated_at, body)"
		   " VALUES($1,$2,$3,$4,$5,$6,$7) ON CONFLICT(kind, id) DO UPDATE SET org ="
		   " excluded.org, node = excluded.node, ended = excluded.ended, updated_at ="
		   " excluded.updated_at, body = excluded.body", "saving a record", NULL, err,
		   "ssssiis", r->kind, r->id, r->org, r->node, (int64_t)r->ended, r->updated_at,
		   r->body ? r->body : "{}");
}

static int pg_state_add(cof_meta *m, cof_staterow *r, cof_err *err)
{
	int64_t n = 0;

	r->updated_at = cof_now_ms();
	if (cof_pg_one(m, "INSERT INTO state(kind, id, org, node, ended, updated_at, body)"
		       " VALUES($1,$2,$3,$4,$5,$6,$7) ON CONFLICT(kind, id) DO NOTHING",
		       "saving a record", &n, err, "ssssiis", r->kind, r->id, r->org, r->node,
		       (int64_t)r->ended, r->updated_at, r->body ? r->body : "{}"))
		return -1;
	return n == 1;
}

#define STATE_COLS "kind, id, org, node, ended, updated_at, body"

/* Fills *out from row `i` of a STATE_COLS result; the body is borrowed. */
static void row_read(PGresult *r, int i, cof_staterow *out)
{
	memset(out, 0, sizeof *out);
	cof_pg_copy(r, i, 0, out->kind, sizeof out->kind);
	cof_pg_copy(r, i, 1, out->id, sizeof out->id);
	cof_pg_copy(r, i, 2, out->org, sizeof out->org);
	cof_pg_copy(r, i, 3, out->node, sizeof out->node);
	out->ended = (int)cof_pg_int(r, i, 4);
	out->updated_at = cof_pg_int(r, i, 5);
	out->body = PQgetvalue(r, i, 6);
}

/* A caller's cof_state_fn and its context, for state_row. */
typedef struct {
	cof_state_fn fn;
	void *ctx;
} state_each;

/* cof_pg_row_fn: gives a record row to the caller's fn (which says stop). */
static int state_row(void *ctx, PGresult *r, int i, cof_err *err)
{
	state_each *e = ctx;
	cof_staterow row;

	(void)err;
	row_read(r, i, &row);
	return e->fn(e->ctx, &row) ? 1 : 0;
}

/* cof_pg_row_fn: the record row into ctx (a cof_staterow), its body copied. */
static int state_one(void *ctx, PGresult *r, int i, cof_err *err)
{
	cof_staterow *out = ctx;

	row_read(r, i, out);
	out->body = cof_strdup(out->body);
	return out->body ? 1 : cof_error(err, COF_EINTERNAL, "out of memory");
}

static int pg_state_get(cof_meta *m, const char *kind, const char *id, cof_staterow *out,
			cof_err *err)
{
	memset(out, 0, sizeof *out);
	int rc = cof_pg_rows(m, "SELECT " STATE_COLS " FROM state WHERE kind = $1 AND id = $2",
			     "reading a record", state_one, out, err, "ss", kind, id);
	return rc < 0 ? -1 : rc > 0;
}

static int pg_state_list(cof_meta *m, const char *kind, int64_t since_ms, cof_state_fn fn,
			 void *ctx, cof_err *err)
{
	state_each e = { fn, ctx };

	return cof_pg_rows(m, "SELECT " STATE_COLS " FROM state WHERE kind = $1 AND (ended = 0"
			   " OR updated_at >= $2) ORDER BY updated_at", "reading records",
			   state_row, &e, err, "si", kind, since_ms) < 0 ? -1 : 0;
}

static int pg_event_add(cof_meta *m, const char *stream, unsigned to, const char *body,
			int64_t keep, int64_t *id, cof_err *err)
{
	pgconn *c = cof_pg_begin(m, NULL, err);
	int rc = -1;

	*id = 0;
	if (!c)
		return -1;
	if (!cof_pg_do(c, "SELECT pg_advisory_xact_lock(7700, hashtext($1))", "recording an event",
		       NULL, err, "s", stream) &&
	    cof_pg_rows_on(c, "INSERT INTO events(stream, id, mask, body, at) SELECT $1,"
			   " coalesce(max(id), 0) + 1, $2::integer, $3::text, $4::bigint FROM events"
			   " WHERE stream = $1 RETURNING id", "recording an event", cof_pg_row_int,
			   id, err, "sisi", stream, (int64_t)to, body, cof_now_ms()) >= 0)
		rc = *id > 0 ? 0 : cof_error(err, COF_EINTERNAL, "recording an event: no id");
	if (!rc && *id > keep)
		rc = cof_pg_do(c, "DELETE FROM events WHERE stream = $1 AND id <= $2",
			       "recording an event", NULL, err, "si", stream, *id - keep);
	return cof_pg_end(m, c, rc, err);
}

/* A caller's cof_event_fn and its context, for event_row. */
typedef struct {
	cof_event_fn fn;
	void *ctx;
} event_each;

/* cof_pg_row_fn: gives an (id, mask, body) row to the caller's fn. */
static int event_row(void *ctx, PGresult *r, int i, cof_err *err)
{
	event_each *e = ctx;

	(void)err;
	return e->fn(e->ctx, cof_pg_int(r, i, 0), (unsigned)cof_pg_int(r, i, 1),
		     PQgetvalue(r, i, 2)) ? 1 : 0;
}

static int pg_event_list(cof_meta *m, const char *stream, int64_t after, int64_t limit,
			 cof_event_fn fn, void *ctx, cof_err *err)
{
	event_each e = { fn, ctx };

	return cof_pg_rows(m, "SELECT id, mask, body FROM events WHERE stream = $1 AND id > $2"
			   " ORDER BY id LIMIT $3", "reading events", event_row, &e, err, "sii",
			   stream, after, limit) < 0 ? -1 : 0;
}

/* cof_pg_row_fn: the two numbers of the row into ctx (int64_t[2]). */
static int two_ints(void *ctx, PGresult *r, int i, cof_err *err)
{
	int64_t *v = ctx;

	(void)err;
	v[0] = cof_pg_int(r, i, 0);
	v[1] = cof_pg_int(r, i, 1);
	return 1;
}

static int pg_event_last(cof_meta *m, const char *stream, int64_t *last, int64_t *first,
			 cof_err *err)
{
	int64_t v[2] = { 0, 0 };
	int rc = cof_pg_rows(m, "SELECT coalesce(max(id), 0), coalesce(min(id), 0) FROM events"
			     " WHERE stream = $1", "reading events", two_ints, v, err, "s", stream);

	*last = v[0];
	*first = v[1];
	return rc < 0 ? -1 : 0;
}

static int pg_state_prune(cof_meta *m, const char *kind, int64_t before_ms,
			  const char *const *prefixes, cof_err *err)
{
	pgconn *c = cof_pg_begin(m, NULL, err);
	int rc = 0;

	if (!c)
		return -1;
	for (size_t i = 0; !rc && prefixes && prefixes[i]; i++)
		rc = cof_pg_do(c, "DELETE FROM events WHERE stream IN (SELECT $1 || id FROM state"
			       " WHERE kind = $2 AND ended = 1 AND updated_at < $3)",
			       "forgetting events", NULL, err, "ssi", prefixes[i], kind, before_ms);
	if (!rc)
		rc = cof_pg_do(c, "DELETE FROM state WHERE kind = $1 AND ended = 1 AND"
			       " updated_at < $2", "forgetting records", NULL, err, "si", kind,
			       before_ms);
	return cof_pg_end(m, c, rc, err);
}

static int pg_state_scan(cof_meta *m, const char *kind, const char *prefix, cof_state_fn fn,
			 void *ctx, cof_err *err)
{
	state_each e = { fn, ctx };

	/* starts_with: the id column has the database's collation, where a
	 * range of text would not be a prefix */
	return cof_pg_rows(m, "SELECT " STATE_COLS " FROM state WHERE kind = $1 AND"
			   " starts_with(id, $2) ORDER BY id COLLATE \"C\"", "reading records",
			   state_row, &e, err, "ss", kind, prefix ? prefix : "") < 0 ? -1 : 0;
}

static int pg_state_delete(cof_meta *m, const char *kind, const char *id, cof_err *err)
{
	return cof_pg_one(m, "DELETE FROM state WHERE kind = $1 AND id = $2",
			  "forgetting a record", NULL, err, "ss", kind, id);
}

/* Nodes noticing together: the UPDATE of the second waits for the first's
 * row locks, then finds the rows ended and changes none (one winner). */
static int pg_state_end_node(cof_meta *m, const char *kind, const char *node,
			     int64_t stale_before, const char *reason, int64_t *n, cof_err *err)
{
	*n = 0;
	return cof_pg_one(m, "UPDATE state SET ended = 1, updated_at = $1, body = (body::jsonb"
			  " || jsonb_build_object('endReason', $2::text))::text WHERE kind = $3"
			  " AND node = $4 AND ended = 0 AND EXISTS(SELECT 1 FROM state WHERE"
			  " kind = 'node' AND id = $4 AND updated_at < $5)",
			  "ending a gone node's records", n, err, "isssi", cof_now_ms(), reason,
			  kind, node, stale_before);
}

static int pg_state_swap(cof_meta *m, cof_staterow *r, const char *old_body, cof_err *err)
{
	int64_t n = 0;

	r->updated_at = cof_now_ms();
	if (cof_pg_one(m, "UPDATE state SET org = $1, node = $2, ended = $3, updated_at = $4,"
		       " body = $5 WHERE kind = $6 AND id = $7 AND body = $8", "saving a record",
		       &n, err, "ssiissss", r->org, r->node, (int64_t)r->ended, r->updated_at,
		       r->body ? r->body : "{}", r->kind, r->id, old_body))
		return -1;
	return n == 1;
}

static int pg_state_forget(cof_meta *m, const char *kind, const char *id,
			   const char *const *streams, const char *const *subs, cof_err *err)
{
	pgconn *c = cof_pg_begin(m, NULL, err);
	int rc;

	if (!c)
		return -1;
	rc = cof_pg_do(c, "DELETE FROM state WHERE kind = $1 AND id = $2", "forgetting a record",
		       NULL, err, "ss", kind, id);
	for (size_t i = 0; !rc && streams && streams[i]; i++)
		rc = cof_pg_do(c, "DELETE FROM events WHERE stream = $1::text || $2::text", "forgetting events",
			       NULL, err, "ss", streams[i], id);
	for (size_t i = 0; !rc && subs && subs[i]; i++)
		rc = cof_pg_do(c, "DELETE FROM state WHERE kind = $1 AND starts_with(id, $2::text || '/')",
			       "forgetting records", NULL, err, "ss", subs[i], id);
	return cof_pg_end(m, c, rc, err);
}

/* Fills the members of the PostgreSQL backend this file implements. */
void cof_pg_ops_state(cof_meta_ops *o)
{
	o->state_put = pg_state_put;
	o->state_add = pg_state_add;
	o->state_get = pg_state_get;
	o->state_list = pg_state_list;
	o->event_add = pg_event_add;
	o->event_list = pg_event_list;
	o->event_last = pg_event_last;
	o->state_prune = pg_state_prune;
	o->state_scan = pg_state_scan;
	o->state_delete = pg_state_delete;
	o->state_end_node = pg_state_end_node;
	o->state_swap = pg_state_swap;
	o->state_forget = pg_state_forget;
}
