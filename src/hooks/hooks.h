/*
 * hooks.h — webhooks (API.md "Webhooks", docs/api.md): an organization's
 * webhooks, the events queued for them and their delivery.
 *
 * In the layering this sits just above the store: volume, agent, turn and
 * relay code call cof_hooks_emit where an event happens; this module only
 * calls down (the metadata store's queue, meta_webhook.c). Queueing is one
 * insert on the caller's thread; sending happens on the senders started by
 * cof_hooks_start (cofferd), off every request's path, so a slow or dead
 * receiver never slows a write. Deliveries follow the Standard Webhooks
 * specification (headers webhook-id, webhook-timestamp, webhook-signature).
 */
#ifndef COF_HOOKS_H
#define COF_HOOKS_H

#include <jansson.h>
#include <stdint.h>
#include "coffer.h"

#define COF_HOOKS_PER_ORG 20        /* webhooks one organization may hold */
#define COF_HOOK_EVENTS_MAX 8       /* event names one webhook lists (all of them) */
#define COF_HOOK_DELIVERIES_PAGE 50 /* deliveries in one page of the listing */

/* The routes' halves (who: the caller; a key bound to an agent or a
 * read-only key is refused 403; another organization's webhook is 404). */
/* POST /v1/webhooks {url, events, volumes?, agents?, description?} -> {id,
 * url, events, volumes, agents, description, disabled, createdAt, secret}. */
int cof_webhook_create(cof_store *st, const cof_principal *who, json_t *body, json_t **out,
		       cof_err *err);
/* GET /v1/webhooks -> {webhooks:[...]} (never a secret). */
int cof_webhook_list(cof_store *st, const cof_principal *who, json_t **out, cof_err *err);
int cof_webhook_get(cof_store *st, const cof_principal *who, const char *id, json_t **out,
		    cof_err *err);
/* PATCH {url?, events?, disabled?} -> the webhook. */
int cof_webhook_patch(cof_store *st, const cof_principal *who, const char *id, json_t *body,
		      json_t **out, cof_err *err);
int cof_webhook_delete(cof_store *st, const cof_principal *who, const char *id, cof_err *err);
/* GET .../deliveries?cursor= -> {deliveries:[...], cursor?}, newest first. */
int cof_webhook_deliveries(cof_store *st, const cof_principal *who, const char *id,
			   const char *cursor, json_t **out, cof_err *err);
/* POST .../deliveries/{d}/redeliver -> {id, status:"pending"}. */
int cof_webhook_redeliver(cof_store *st, const cof_principal *who, const char *id,
			  const char *delivery, json_t **out, cof_err *err);

/* Queues event `type` with `data` (taken) for the webhooks of `org` that
 * ask for it; `vol`, `agent` (NULL = none) are what their filters see.
 * Never fails the caller: a failure is said on stderr. */
void cof_hooks_emit(cof_store *st, const char *org, const char *type, const char *vol,
		    const char *agent, json_t *data);

/* Starts the senders and the volume.changed coalescer for `st`, as node
 * `node` (NULL: one node); `allow_private` is --webhook-allow-private. */
int cof_hooks_start(cof_store *st, const char *node, int allow_private, cof_err *err);
/* Stops them (a send under way ends within its 10 s timeout). */
void cof_hooks_stop(void);

/* The Standard Webhooks signature "v1,BASE64" of (id, ts, body) under
 * `secret` ("whsec_" + base64 of the key bytes) into out (>= 64 bytes):
 * 0, or -1 (a secret that is not that). */
int cof_hooks_sign(const char *secret, const char *id, int64_t ts, const char *body,
		   size_t len, char *out, size_t outsz);

/* ---- shared by hooks.c and deliver.c */
struct cof_volrow;
/* Checks a webhook URL: http or https with a host, and (unless
 * --webhook-allow-private) every address the host resolves to public; then
 * `resolve` is the CURLOPT_RESOLVE entry "HOST:PORT:ADDR" pinning the
 * address checked ("" for an address literal or when private ones are
 * allowed). 0, or -1 with err (400 naming the URL's fault). */
int cof_hooks_url_check(const char *url, char *resolve, size_t rsz, cof_err *err);
/* Wakes the senders: a delivery was queued here. */
void cof_hooks_wake(void);
/* cof_store_on_changed's callback: notes the volume's new seq. */
void cof_hooks_vol_changed(void *ctx, const struct cof_volrow *v);
/* Queues volume.changed for each volume noted whose last event is a
 * second old. */
void cof_hooks_vol_flush(cof_store *st);

#endif
