/*
 * hooks.c — webhooks managed (the routes' halves), events queued, and
 * volume.changed coalesced to at most one a second per volume.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hooks/hooks.h"
#include "store/store.h"
#include "util/util.h"

/* Every event a webhook may ask for (API.md "Webhooks"). */
static const char *const event_names[] = {
	"volume.changed", "snapshot.created", "file.presented", "turn.ended",
	"call.conflicted", "merge.conflicted", "relay.session", "relay.write_blocked",
};
#define NEVENTS (sizeof event_names / sizeof *event_names)

/* Who may manage webhooks: an organization's keys, not an agent's nor a
 * read-only one (the secret is shown and deliveries reach outside). */
static int allowed(const cof_principal *who, cof_err *err)
{
	if (who->agent[0])
		return cof_error(err, COF_EFORBIDDEN, "a key bound to an agent cannot manage"
				 " webhooks; use an organization key");
	if (who->read_only)
		return cof_error(err, COF_EFORBIDDEN, "a read-only key cannot manage webhooks;"
				 " use an organization key");
	return 0;
}

/* A JSON array of strings into ",a,b," (out[outsz]): at most `max`, each
 * 1..`len` bytes without a comma, none twice; `known` (NULL = any) lists the
 * accepted values. Errors name `field` and the limit. */
static int list_read(json_t *arr, const char *field, size_t max, size_t len,
		     const char *const *known, size_t nknown, char *out, size_t outsz,
		     cof_err *err)
{
	size_t i, used = 1;
	json_t *v;

	if (!json_is_array(arr))
		return cof_error(err, COF_EVALIDATION, "'%s' must be an array of strings", field);
	if (json_array_size(arr) > max)
		return cof_error(err, COF_EVALIDATION, "'%s' lists %zu items; the limit is %zu",
				 field, json_array_size(arr), max);
	out[0] = '\0';
	if (json_array_size(arr) == 0)
		return 0;
	strcpy(out, ",");
	json_array_foreach(arr, i, v) {
		const char *s = json_string_value(v);
		size_t n = s ? strlen(s) : 0;
		char probe[200];

		if (!s || !n || n > len || strchr(s, ','))
			return cof_error(err, COF_EVALIDATION, "'%s' item %zu must be a string of"
					 " 1 to %zu bytes without a comma", field, i, len);
		if (known) {
			size_t k = 0;
			while (k < nknown && strcmp(known[k], s))
				k++;
			if (k == nknown)
				return cof_error(err, COF_EVALIDATION, "'%s': unknown event '%.60s'"
						 " (known: volume.changed, snapshot.created,"
						 " file.presented, turn.ended, call.conflicted,"
						 " merge.conflicted, relay.session,"
						 " relay.write_blocked)", field, s);
		}
		snprintf(probe, sizeof probe, ",%s,", s);
		if (strstr(out, probe))
			return cof_error(err, COF_EVALIDATION, "'%s' lists '%.60s' twice", field, s);
		if (used + n + 1 >= outsz)
			return cof_error(err, COF_EVALIDATION, "'%s' is too long", field);
		memcpy(out + used, s, n);
		used += n;
		out[used++] = ',';
		out[used] = '\0';
	}
	return 0;
}

/* ",a,b," as a JSON array. */
static json_t *list_json(const char *s)
{
	json_t *a = json_array();

	while (s && *s == ',' && s[1]) {
		const char *e = strchr(s + 1, ',');
		if (!e)
			break;
		json_array_append_new(a, json_stringn(s + 1, (size_t)(e - s - 1)));
		s = e;
	}
	return a;
}

static json_t *hook_json(const cof_hookrow *h)
{
	json_t *o = json_pack("{s:s, s:s, s:o, s:o, s:o, s:b}", "id", h->id, "url", h->url,
			      "events", list_json(h->events), "volumes", list_json(h->vols),
			      "agents", list_json(h->agents), "disabled", h->disabled);

	json_object_set_new(o, "description", json_string(h->description));
	json_object_set_new(o, "createdAt", cof_json_time(h->created_at));
	return o;
}

/* url and events of a body into h (each only when present unless `need`). */
static int url_events(json_t *body, cof_hookrow *h, int need, cof_err *err)
{
	json_t *url = json_object_get(body, "url"), *ev = json_object_get(body, "events");

	if (url || need) {
		const char *u = json_string_value(url);
		if (!u)
			return cof_error(err, COF_EVALIDATION, "'url' is required: the http or https"
					 " URL deliveries are posted to");
		if (strlen(u) > COF_HOOK_URL_MAX)
			return cof_error(err, COF_EVALIDATION, "'url' is %zu bytes; the limit is %d",
					 strlen(u), COF_HOOK_URL_MAX);
		char resolve[400];
		if (cof_hooks_url_check(u, resolve, sizeof resolve, err))
			return -1;
		snprintf(h->url, sizeof h->url, "%s", u);
	}
	if (ev || need) {
		if (!ev)
			return cof_error(err, COF_EVALIDATION, "'events' is required: the events to"
					 " deliver (at least one)");
		if (list_read(ev, "events", COF_HOOK_EVENTS_MAX, 40, event_names, NEVENTS,
			      h->events, sizeof h->events, err))
			return -1;
		if (!h->events[0])
			return cof_error(err, COF_EVALIDATION, "'events' must name at least one"
					 " event");
	}
	return 0;
}

int cof_webhook_create(cof_store *st, const cof_principal *who, json_t *body, json_t **out,
		       cof_err *err)
{
	static const cof_jfield fields[] = {
		{"url", COF_JSTR, 1}, {"events", COF_JARR, 1}, {"volumes", COF_JARR, 0},
		{"agents", COF_JARR, 0}, {"description", COF_JSTR, 0}, {NULL, 0, 0}};
	cof_hookrow *h;
	unsigned char key[24];
	char b64[40];
	int rc = -1;

	if (allowed(who, err) || cof_json_check(body, fields, err))
		return -1;
	if (!(h = cof_calloc(1, sizeof *h)))
		return cof_error(err, COF_EINTERNAL, "out of memory");
	const char *desc = cof_json_str(body, "description");
	json_t *vols = json_object_get(body, "volumes"), *agents = json_object_get(body, "agents");
	if (url_events(body, h, 1, err) ||
	    (vols && list_read(vols, "volumes", COF_HOOK_FILTER_MAX, 47, NULL, 0, h->vols,
			       sizeof h->vols, err)) ||
	    (agents && list_read(agents, "agents", COF_HOOK_FILTER_MAX, 127, NULL, 0, h->agents,
				 sizeof h->agents, err)))
		goto out;
	if (desc && strlen(desc) > COF_HOOK_DESC_MAX) {
		cof_error(err, COF_EVALIDATION, "'description' is %zu bytes; the limit is %d",
			  strlen(desc), COF_HOOK_DESC_MAX);
		goto out;
	}
	snprintf(h->description, sizeof h->description, "%s", desc ? desc : "");
	if (cof_random(key, sizeof key)) {
		cof_error(err, COF_EINTERNAL, "no randomness for the webhook's secret");
		goto out;
	}
	b64[cof_base64_write(key, sizeof key, b64)] = '\0';
	snprintf(h->secret, sizeof h->secret, "whsec_%s", b64);
	cof_id_new("wh_", h->id, sizeof h->id);
	snprintf(h->org, sizeof h->org, "%s", who->org);
	h->created_at = cof_now();
	int added = cof_meta_hook_add_capped(st->meta, h, COF_HOOKS_PER_ORG, err);
	if (added < 0)
		goto out;
	if (!added) {
		cof_error(err, COF_ECONFLICT, "organization '%s' holds %d webhooks, its limit;"
			  " delete one (DELETE /v1/webhooks/{id}) before adding another", h->org,
			  COF_HOOKS_PER_ORG);
		goto out;
	}
	*out = hook_json(h);
	json_object_set_new(*out, "secret", json_string(h->secret));
	rc = 0;
out:
	free(h);
	return rc;
}

static int list_one(void *ctx, const cof_hookrow *h)
{
	json_array_append_new(ctx, hook_json(h));
	return 0;
}

int cof_webhook_list(cof_store *st, const cof_principal *who, json_t **out, cof_err *err)
{
	json_t *a;

	if (allowed(who, err))
		return -1;
	a = json_array();
	if (cof_meta_hook_list(st->meta, who->org, list_one, a, err)) {
		json_decref(a);
		return -1;
	}
	*out = json_pack("{s:o}", "webhooks", a);
	return 0;
}

/* The caller's webhook `id` into a new row (free it): NULL with err. */
static cof_hookrow *hook_load(cof_store *st, const cof_principal *who, const char *id,
			      cof_err *err)
{
	cof_hookrow *h;

	if (allowed(who, err))
		return NULL;
	if (!(h = cof_calloc(1, sizeof *h))) {
		cof_error(err, COF_EINTERNAL, "out of memory");
		return NULL;
	}
	if (cof_meta_hook_get(st->meta, who->org, id, h, err)) {
		free(h);
		return NULL;
	}
	return h;
}

int cof_webhook_get(cof_store *st, const cof_principal *who, const char *id, json_t **out,
		    cof_err *err)
{
	cof_hookrow *h = hook_load(st, who, id, err);

	if (!h)
		return -1;
	*out = hook_json(h);
	free(h);
	return 0;
}

int cof_webhook_patch(cof_store *st, const cof_principal *who, const char *id, json_t *body,
		      json_t **out, cof_err *err)
{
	static const cof_jfield fields[] = {
		{"url", COF_JSTR, 0}, {"events", COF_JARR, 0}, {"disabled", COF_JBOOL, 0},
		{NULL, 0, 0}};
	cof_hookrow *h;
	int rc = -1;

	if (allowed(who, err) || cof_json_check(body, fields, err) ||
	    !(h = hook_load(st, who, id, err)))
		return -1;
	if (url_events(body, h, 0, err))
		goto out;
	h->disabled = cof_json_bool(body, "disabled", h->disabled);
	if (cof_meta_hook_update(st->meta, h, err))
		goto out;
	*out = hook_json(h);
	rc = 0;
out:
	free(h);
	return rc;
}

int cof_webhook_delete(cof_store *st, const cof_principal *who, const char *id, cof_err *err)
{
	if (allowed(who, err))
		return -1;
	return cof_meta_hook_delete(st->meta, who->org, id, err);
}

/* Unix ms as RFC 3339 (seconds), for the deliveries' times. */
static json_t *ms_time(int64_t ms)
{
	return cof_json_time(ms / 1000);
}

typedef struct {
	json_t *arr;
	char last[80];
} dl_page;

static int delivery_one(void *ctx, const cof_deliveryrow *d)
{
	dl_page *p = ctx;
	json_t *o = json_pack("{s:s, s:s, s:s, s:I}", "id", d->id, "event", d->event, "status",
			      d->status, "attempts", (json_int_t)d->attempts);

	json_object_set_new(o, "createdAt", ms_time(d->created_at));
	if (d->last_error[0])
		json_object_set_new(o, "lastError", json_string(d->last_error));
	if (!strcmp(d->status, "pending"))
		json_object_set_new(o, "nextAttemptAt", ms_time(d->next_at));
	if (d->delivered_at)
		json_object_set_new(o, "deliveredAt", ms_time(d->delivered_at));
	json_array_append_new(p->arr, o);
	snprintf(p->last, sizeof p->last, "%s", d->id);
	return 0;
}

int cof_webhook_deliveries(cof_store *st, const cof_principal *who, const char *id,
			   const char *cursor, json_t **out, cof_err *err)
{
	cof_hookrow *h = hook_load(st, who, id, err);
	dl_page p = { json_array(), "" };

	if (!h) {
		json_decref(p.arr);
		return -1;
	}
	free(h);
	if (cursor && strlen(cursor) >= sizeof p.last) {
		json_decref(p.arr);
		return cof_error(err, COF_EVALIDATION, "'cursor' is not one this listing gave");
	}
	if (cof_meta_hook_deliveries(st->meta, who->org, id, cursor, COF_HOOK_DELIVERIES_PAGE,
				     delivery_one, &p, err)) {
		json_decref(p.arr);
		return -1;
	}
	*out = json_pack("{s:o}", "deliveries", p.arr);
	if (json_array_size(p.arr) == COF_HOOK_DELIVERIES_PAGE)
		json_object_set_new(*out, "cursor", json_string(p.last));
	return 0;
}

int cof_webhook_redeliver(cof_store *st, const cof_principal *who, const char *id,
			  const char *delivery, json_t **out, cof_err *err)
{
	cof_hookrow *h = hook_load(st, who, id, err);

	if (!h)
		return -1;
	free(h);
	if (cof_meta_hook_redeliver(st->meta, who->org, id, delivery, cof_now_ms(), err))
		return -1;
	cof_hooks_wake();
	*out = json_pack("{s:s, s:s}", "id", delivery, "status", "pending");
	return 0;
}

void cof_hooks_emit(cof_store *st, const char *org, const char *type, const char *vol,
		    const char *agent, json_t *data)
{
	char *text = data ? json_dumps(data, JSON_COMPACT) : NULL, base[40];
	unsigned char r[4];
	int64_t now = cof_now_ms();
	cof_err e = {0};

	json_decref(data);
	if (!text) {
		fprintf(stderr, "cofferd: webhooks: cannot queue a %s event: out of memory\n", type);
		return;
	}
	if (cof_random(r, sizeof r))
		memset(r, 0, sizeof r);
	/* time first: the listing's newest-first order is the ids' */
	snprintf(base, sizeof base, "msg_%012llx%02x%02x%02x%02x", (unsigned long long)now, r[0],
		 r[1], r[2], r[3]);
	int n = cof_meta_hook_enqueue(st->meta, org, type, vol, agent, text, base, now, &e);
	if (n < 0)
		fprintf(stderr, "cofferd: webhooks: cannot queue a %s event: %s\n", type, e.msg);
	else if (n > 0)
		cof_hooks_wake();
	cof_err_clear(&e);
	free(text);
}

/* ---- volume.changed, coalesced: at most one a second per volume */

#define COALESCE_MS 1000
#define VOL_BUCKETS 1024

typedef struct volslot {
	struct volslot *next;
	char org[48], id[48];
	int64_t vno;        /* its key in the metadata store */
	int64_t seq;        /* the newest seq told */
	int64_t reported;   /* the seq the last event named */
	int64_t sent_ms;    /* when it was sent (cof_mono_ms) */
	int pending;
} volslot;

static struct {
	pthread_mutex_t mu;
	volslot *b[VOL_BUCKETS];
} vols = { PTHREAD_MUTEX_INITIALIZER, {0} };

static unsigned vol_hash(const char *org, const char *id)
{
	unsigned h = 2166136261u;
	for (const char *p = org; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	for (const char *p = id; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	return h % VOL_BUCKETS;
}

void cof_hooks_vol_changed(void *ctx, const struct cof_volrow *v)
{
	(void)ctx;
	if (v->hidden)
		return;
	unsigned h = vol_hash(v->org, v->id);
	pthread_mutex_lock(&vols.mu);
	volslot *s = vols.b[h];
	while (s && (strcmp(s->id, v->id) || strcmp(s->org, v->org)))
		s = s->next;
	if (!s && (s = cof_calloc(1, sizeof *s))) {
		snprintf(s->org, sizeof s->org, "%s", v->org);
		snprintf(s->id, sizeof s->id, "%s", v->id);
		s->vno = v->vno;
		s->reported = v->seq - 1;
		s->next = vols.b[h];
		vols.b[h] = s;
	}
	if (s && v->seq > s->seq) {
		s->seq = v->seq;
		s->pending = s->seq > s->reported;
	}
	pthread_mutex_unlock(&vols.mu);
}

/* One event to send, taken out of the table under its lock. */
typedef struct {
	char org[48], id[48];
	int64_t vno, seq, changes;
} volev;

static int by_row(void *ctx, const cof_change_row *c)
{
	json_t **by = ctx;

	if (!*by && c->by)
		*by = json_loads(c->by, 0, NULL);
	return 0; /* one row (limit 1): the rows of a change share `by` */
}

/* The `by` of the change at `seq` (the newest an event covers), or JSON null
 * (not recorded, or already pruned from the changes feed). */
static json_t *change_by(cof_store *st, int64_t vno, int64_t seq)
{
	json_t *by = NULL;
	cof_err e = {0};

	if (cof_meta_changes(st->meta, vno, seq - 1, NULL, 1, by_row, &by, &e) < 0)
		cof_err_clear(&e);
	return by ? by : json_null();
}

void cof_hooks_vol_flush(cof_store *st)
{
	int64_t now = cof_mono_ms();
	volev *evs = NULL;
	size_t n = 0, cap = 0;

	pthread_mutex_lock(&vols.mu);
	for (int i = 0; i < VOL_BUCKETS; i++)
		for (volslot **pp = &vols.b[i]; *pp;) {
			volslot *s = *pp;
			if (s->pending && now - s->sent_ms >= COALESCE_MS) {
				if (n == cap) {
					size_t nc = cap ? cap * 2 : 16;
					volev *ne = realloc(evs, nc * sizeof *ne);
					if (!ne)
						break;
					evs = ne;
					cap = nc;
				}
				memcpy(evs[n].org, s->org, sizeof s->org);
				memcpy(evs[n].id, s->id, sizeof s->id);
				evs[n].vno = s->vno;
				evs[n].seq = s->seq;
				evs[n++].changes = s->seq - s->reported;
				s->reported = s->seq;
				s->pending = 0;
				s->sent_ms = now;
			}
			/* quiet for a while: forgotten (a later change starts again) */
			if (!s->pending && now - s->sent_ms > 60 * COALESCE_MS) {
				*pp = s->next;
				free(s);
				continue;
			}
			pp = &s->next;
		}
	pthread_mutex_unlock(&vols.mu);
	for (size_t i = 0; i < n; i++)
		cof_hooks_emit(st, evs[i].org, "volume.changed", evs[i].id, NULL,
			       json_pack("{s:s, s:I, s:I, s:o}", "volumeId", evs[i].id, "seq",
					 (json_int_t)evs[i].seq, "changes",
					 (json_int_t)evs[i].changes, "by",
					 change_by(st, evs[i].vno, evs[i].seq)));
	free(evs);
}
