/*
 * meta_webhook.c — webhooks and their delivery queue, written once above the
 * SQL seam (store/sql.h). The queue is durable (a delivery survives kill -9)
 * and claimed with a lease by a conditional update, so that with several
 * nodes each delivery is sent by one of them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "store/meta.h"
#include "store/sql.h"

/* Serializes adding webhooks of one organization across nodes (the cap). */
#define LOCK_ORG_HOOKS 7366114

#define HOOK_COLS "id, org, url, events, vols, agents, description, secret, disabled, created_at"

int cof_meta_hook_add_capped(cof_meta *m, const cof_hookrow *h, int64_t cap, cof_err *err)
{
	cof_sql_tx tx;
	int64_t n = 0;
	int rc;

	if (cof_sql_begin(m, COF_SQL_WRITE, &tx, err) < 0)
		return -1;
	rc = cof_sql_lock(&tx, LOCK_ORG_HOOKS, h->org, err);
	if (!rc)
		rc = cof_sql_exec(&tx, &n, "INSERT INTO webhooks(" HOOK_COLS ") SELECT ?1,?2,?3,?4,"
				  "?5,?6,?7,?8,CAST(?9 AS bigint),CAST(?10 AS bigint) WHERE (SELECT"
				  " count(*) FROM webhooks WHERE org = ?2) < CAST(?11 AS bigint)",
				  "adding a webhook", err, "ssssssssiii", h->id, h->org, h->url,
				  h->events, h->vols, h->agents, h->description, h->secret,
				  (int64_t)h->disabled, h->created_at, cap);
	if (cof_sql_end(&tx, rc, err) < 0)
		return -1;
	return n == 1;
}

/* cof_sql_row_fn: a HOOK_COLS row into ctx (a cof_hookrow). */
static int hook_one(void *ctx, const cof_sql_row *r, cof_err *err)
{
	cof_hookrow *h = ctx;

	(void)err;
	cof_sql_text(r, 0, h->id, sizeof h->id);
	cof_sql_text(r, 1, h->org, sizeof h->org);
	cof_sql_text(r, 2, h->url, sizeof h->url);
	cof_sql_text(r, 3, h->events, sizeof h->events);
	cof_sql_text(r, 4, h->vols, sizeof h->vols);
	cof_sql_text(r, 5, h->agents, sizeof h->agents);
	cof_sql_text(r, 6, h->description, sizeof h->description);
	cof_sql_text(r, 7, h->secret, sizeof h->secret);
	h->disabled = (int)cof_sql_int(r, 8);
	h->created_at = cof_sql_int(r, 9);
	return 1;
}

int cof_meta_hook_get(cof_meta *m, const char *org, const char *id, cof_hookrow *out,
		      cof_err *err)
{
	int rc = cof_sql_read(m, "SELECT " HOOK_COLS " FROM webhooks WHERE org = ?1 AND id = ?2",
			      "reading a webhook", hook_one, out, err, "ss", org, id);

	if (rc < 0)
		return -1;
	return rc ? 0 : cof_error(err, COF_ENOTFOUND, "webhook '%.60s' not found", id);
}

/* The caller's fn and context, with a row to fill, for hook_each. */
typedef struct {
	cof_hook_fn fn;
	void *ctx;
	cof_hookrow row;
} hook_walk;

/* cof_sql_row_fn: each row to the caller's fn. */
static int hook_each(void *ctx, const cof_sql_row *r, cof_err *err)
{
	hook_walk *w = ctx;

	hook_one(&w->row, r, err);
	return w->fn(w->ctx, &w->row) ? 1 : 0;
}

int cof_meta_hook_list(cof_meta *m, const char *org, cof_hook_fn fn, void *ctx, cof_err *err)
{
	hook_walk *w = cof_calloc(1, sizeof *w);
	int rc;

	if (!w)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	w->fn = fn;
	w->ctx = ctx;
	rc = cof_sql_read(m, "SELECT " HOOK_COLS " FROM webhooks WHERE org = ?1 ORDER BY id{C}",
			  "listing webhooks", hook_each, w, err, "s", org);
	free(w);
	return rc < 0 ? -1 : 0;
}

int cof_meta_hook_update(cof_meta *m, const cof_hookrow *h, cof_err *err)
{
	int64_t n = 0;

	if (cof_sql_write(m, &n, "UPDATE webhooks SET url = ?1, events = ?2, disabled ="
			  " CAST(?3 AS bigint) WHERE org = ?4 AND id = ?5", "updating a webhook",
			  err, "ssiss", h->url, h->events, (int64_t)h->disabled, h->org, h->id) < 0)
		return -1;
	return n ? 0 : cof_error(err, COF_ENOTFOUND, "webhook '%.60s' not found", h->id);
}

int cof_meta_hook_delete(cof_meta *m, const char *org, const char *id, cof_err *err)
{
	cof_sql_tx tx;
	int64_t n = 0;
	int rc;

	if (cof_sql_begin(m, COF_SQL_WRITE, &tx, err) < 0)
		return -1;
	rc = cof_sql_exec(&tx, &n, "DELETE FROM webhooks WHERE org = ?1 AND id = ?2",
			  "deleting a webhook", err, "ss", org, id);
	if (!rc && n)
		rc = cof_sql_exec(&tx, NULL, "DELETE FROM hook_deliveries WHERE hook = ?1",
				  "deleting a webhook's deliveries", err, "s", id);
	if (cof_sql_end(&tx, rc, err) < 0)
		return -1;
	return n ? 0 : cof_error(err, COF_ENOTFOUND, "webhook '%.60s' not found", id);
}

int cof_meta_hook_enqueue(cof_meta *m, const char *org, const char *type, const char *vol,
			  const char *agent, const char *data, const char *base, int64_t now_ms,
			  cof_err *err)
{
	int64_t n = 0;

	/* ids and event names hold no % (LIKE's wildcard); an _ matches itself
	 * too, and ids differing in one such place only are as likely as a
	 * collision of their random parts */
	if (cof_sql_write(m, &n, "INSERT INTO hook_deliveries(id, hook, org, event, data,"
			  " created_at, status, attempts, last_error, next_at, delivered_at,"
			  " claimed_by, lease_until) SELECT CAST(?1 AS text) || '_' || substr(id, 4),"
			  " id, org, CAST(?2 AS text), CAST(?3 AS text), CAST(?4 AS bigint),"
			  " 'pending', 0, '', CAST(?4 AS bigint), 0, '', 0 FROM webhooks WHERE"
			  " org = ?5 AND disabled = 0 AND events LIKE '%,' || CAST(?2 AS text) ||"
			  " ',%' AND (vols = '' OR CAST(?6 AS text) = '' OR vols LIKE '%,' ||"
			  " CAST(?6 AS text) || ',%') AND (agents = '' OR CAST(?7 AS text) = '' OR"
			  " agents LIKE '%,' || CAST(?7 AS text) || ',%')", "queueing a webhook event",
			  err, "sssisss", base, type, data, now_ms, org, vol ? vol : "",
			  agent ? agent : "") < 0)
		return -1;
	return (int)n;
}

/* Due ids looked at by one claim: claimers starting at different places
 * among them do not all race for the first. */
#define DUE_LOOK 16
typedef struct {
	char ids[DUE_LOOK][80];
	int n;
} due_ids;

/* cof_sql_row_fn: due ids into ctx (a due_ids). */

static int due_one(void *ctx, const cof_sql_row *r, cof_err *err)
{
	due_ids *d = ctx;

	(void)err;
	if (d->n >= DUE_LOOK)
		return 1;
	cof_sql_text(r, 0, d->ids[d->n++], sizeof d->ids[0]);
	return 0;
}

#define DELIVERY_COLS "d.id, d.hook, d.org, d.event, d.created_at, d.status, d.attempts," \
	" d.last_error, d.next_at, d.delivered_at"

/* cof_sql_row_fn: a DELIVERY_COLS row into ctx (a cof_deliveryrow); from
 * column 10 on, when there: data, url, secret, disabled. */
static int delivery_one(void *ctx, const cof_sql_row *r, cof_err *err)
{
	cof_deliveryrow *d = ctx;

	cof_sql_text(r, 0, d->id, sizeof d->id);
	cof_sql_text(r, 1, d->hook, sizeof d->hook);
	cof_sql_text(r, 2, d->org, sizeof d->org);
	cof_sql_text(r, 3, d->event, sizeof d->event);
	d->created_at = cof_sql_int(r, 4);
	cof_sql_text(r, 5, d->status, sizeof d->status);
	d->attempts = cof_sql_int(r, 6);
	cof_sql_text(r, 7, d->last_error, sizeof d->last_error);
	d->next_at = cof_sql_int(r, 8);
	d->delivered_at = cof_sql_int(r, 9);
	return 1;
}

static int claimed_one(void *ctx, const cof_sql_row *r, cof_err *err)
{
	cof_deliveryrow *d = ctx;

	delivery_one(ctx, r, err);
	d->data = cof_strdup(cof_sql_str(r, 10));
	cof_sql_text(r, 11, d->url, sizeof d->url);
	cof_sql_text(r, 12, d->secret, sizeof d->secret);
	d->disabled = (int)cof_sql_int(r, 13);
	return d->data ? 1 : cof_error(err, COF_EINTERNAL, "out of memory");
}

int cof_meta_hook_claim(cof_meta *m, const char *claimer, int64_t now_ms, int64_t lease_ms,
			cof_deliveryrow *out, cof_err *err)
{
	due_ids due = { .n = 0 };

	memset(out, 0, sizeof *out);
	if (cof_sql_read(m, "SELECT id FROM hook_deliveries WHERE status = 'pending' AND"
			 " next_at <= CAST(?1 AS bigint) AND (claimed_by = '' OR lease_until <"
			 " CAST(?1 AS bigint)) ORDER BY next_at LIMIT 16", "finding due deliveries",
			 due_one, &due, err, "i", now_ms) < 0)
		return -1;
	unsigned char r = 0;
	if (due.n > 1 && cof_random(&r, 1))
		r = 0;
	for (int k = 0; k < due.n; k++) {
		int i = (k + r) % due.n;
		int64_t n = 0;
		/* the whole condition again in the update (due, unclaimed): of
		 * claimers racing for the row, the first to update it wins and the
		 * others change nothing, also one that read it before the winner's
		 * failed attempt moved next_at on (PostgreSQL checks it again on the
		 * row as the winner left it) */
		if (cof_sql_write(m, &n, "UPDATE hook_deliveries SET claimed_by = ?1, lease_until ="
				  " CAST(?2 AS bigint) WHERE id = ?3 AND status = 'pending' AND next_at <="
				  " CAST(?4 AS bigint) AND (claimed_by = '' OR lease_until < CAST(?4 AS"
				  " bigint))",
				  "claiming a delivery", err, "sisi", claimer, now_ms + lease_ms,
				  due.ids[i], now_ms) < 0)
			return -1;
		if (n != 1)
			continue;
		int rc = cof_sql_read(m, "SELECT " DELIVERY_COLS ", d.data, w.url, w.secret,"
				      " w.disabled FROM hook_deliveries d JOIN webhooks w ON w.id ="
				      " d.hook WHERE d.id = ?1", "reading a delivery", claimed_one,
				      out, err, "s", due.ids[i]);
		if (rc < 0)
			return -1;
		if (rc == 1)
			return 1;
	}
	return 0;
}

int cof_meta_hook_settle(cof_meta *m, const cof_deliveryrow *d, const char *claimer,
			 cof_err *err)
{
	return cof_sql_write(m, NULL, "UPDATE hook_deliveries SET status = ?1, attempts ="
			     " CAST(?2 AS bigint), last_error = ?3, next_at = CAST(?4 AS bigint),"
			     " delivered_at = CAST(?5 AS bigint), claimed_by = '', lease_until = 0"
			     " WHERE id = ?6 AND claimed_by = ?7", "recording a delivery", err,
			     "sisiiss", d->status, d->attempts, d->last_error, d->next_at,
			     d->delivered_at, d->id, claimer) < 0 ? -1 : 0;
}

/* The caller's fn and context, for delivery_each. */
typedef struct {
	cof_delivery_fn fn;
	void *ctx;
	cof_deliveryrow row;
} delivery_walk;

static int delivery_each(void *ctx, const cof_sql_row *r, cof_err *err)
{
	delivery_walk *w = ctx;

	delivery_one(&w->row, r, err);
	return w->fn(w->ctx, &w->row) ? 1 : 0;
}

int cof_meta_hook_deliveries(cof_meta *m, const char *org, const char *hook,
			     const char *before, int64_t limit, cof_delivery_fn fn, void *ctx,
			     cof_err *err)
{
	delivery_walk *w = cof_calloc(1, sizeof *w);
	int rc;

	if (!w)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	w->fn = fn;
	w->ctx = ctx;
	rc = cof_sql_read(m, "SELECT " DELIVERY_COLS " FROM hook_deliveries d WHERE d.org = ?1"
			  " AND d.hook = ?2 AND (CAST(?3 AS text) = '' OR d.id{C} < CAST(?3 AS"
			  " text)) ORDER BY d.id{C} DESC LIMIT CAST(?4 AS bigint)",
			  "listing deliveries", delivery_each, w, err, "sssi", org, hook,
			  before ? before : "", limit);
	free(w);
	return rc < 0 ? -1 : 0;
}

int cof_meta_hook_redeliver(cof_meta *m, const char *org, const char *hook, const char *id,
			    int64_t now_ms, cof_err *err)
{
	int64_t n = 0;

	if (cof_sql_write(m, &n, "UPDATE hook_deliveries SET status = 'pending', next_at ="
			  " CAST(?1 AS bigint), claimed_by = '', lease_until = 0 WHERE org = ?2 AND"
			  " hook = ?3 AND id = ?4", "queueing a delivery again", err, "isss",
			  now_ms, org, hook, id) < 0)
		return -1;
	return n ? 0 : cof_error(err, COF_ENOTFOUND, "delivery '%.80s' not found", id);
}

int cof_meta_hook_prune(cof_meta *m, int64_t before_ms, cof_err *err)
{
	return cof_sql_write(m, NULL, "DELETE FROM hook_deliveries WHERE status <> 'pending' AND"
			     " created_at < CAST(?1 AS bigint)", "forgetting old deliveries", err,
			     "i", before_ms) < 0 ? -1 : 0;
}
