/*
 * deliver.c — sending webhook deliveries: the senders that claim due
 * deliveries from the store's queue, sign them (Standard Webhooks) and post
 * them with libcurl; retries with backoff; the address checks that keep a
 * webhook from reaching this machine or its private network (SSRF).
 */
#include <arpa/inet.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <curl/curl.h>
#include <openssl/evp.h>
#include <openssl/core_names.h>
#include "hooks/hooks.h"
#include "store/store.h"
#include "util/addr.h"
#include "util/util.h"

#define SENDERS 4               /* deliveries sent at once by one node */
#define SEND_TIMEOUT_S 10       /* a 2xx within this is delivered */
#define LEASE_MS (60 * 1000)    /* a claim outlives a send; a dead node's expires */
#define GIVE_UP_MS (24LL * 3600 * 1000)
#define KEEP_MS (7LL * 24 * 3600 * 1000) /* settled deliveries listed this long */
#define PRUNE_EVERY_MS (10 * 60 * 1000)

/* Backoff after the nth failed attempt (API.md: about 5 s, 5 min, 30 min,
 * 2 h, 5 h, 10 h); past the last, or past a day since the event, failed. */
static const int64_t backoff_s[] = { 5, 300, 1800, 7200, 18000, 36000 };
#define NBACKOFF (sizeof backoff_s / sizeof *backoff_s)

static struct {
	cof_store *st;
	int allow_private, stop, started;
	char claimer[80];
	pthread_t senders[SENDERS], ticker;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint64_t wakes;
} H = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

/* ---- addresses */

/* Ranges no webhook may reach without --webhook-allow-private. */
static const char *const private_ranges[] = {
	"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
	"172.16.0.0/12", "192.0.0.0/24", "192.168.0.0/16", "198.18.0.0/15", "224.0.0.0/3",
	"::/128", "::1/128", "fc00::/7", "fe80::/10", "ff00::/8", "64:ff9b::/96",
};
#define NPRIVATE (sizeof private_ranges / sizeof *private_ranges)

static cof_cidr ranges[NPRIVATE];
static pthread_once_t ranges_once = PTHREAD_ONCE_INIT;

static void ranges_init(void)
{
	for (size_t i = 0; i < NPRIVATE; i++)
		cof_cidr_parse(private_ranges[i], &ranges[i]);
}

static int is_private(const unsigned char ip[16])
{
	pthread_once(&ranges_once, ranges_init);
	return cof_cidr_match(ranges, NPRIVATE, ip);
}

int cof_hooks_url_check(const char *url, char *resolve, size_t rsz, cof_err *err)
{
	CURLU *u = curl_url();
	char *scheme = NULL, *host = NULL, *port = NULL;
	int rc = -1;

	resolve[0] = '\0';
	if (!u)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || !host[0]) {
		cof_error(err, COF_EVALIDATION, "'url' is not an absolute http or https URL");
		goto out;
	}
	if (strcmp(scheme, "http") && strcmp(scheme, "https")) {
		cof_error(err, COF_EVALIDATION, "'url' must be http or https, not '%.20s'", scheme);
		goto out;
	}
	if (curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK) {
		cof_error(err, COF_EVALIDATION, "'url' has no port cofferd can use");
		goto out;
	}
	if (__atomic_load_n(&H.allow_private, __ATOMIC_RELAXED)) {
		rc = 0;
		goto out;
	}
	/* the name without IPv6 brackets */
	char name[300];
	size_t hl = strlen(host);
	int literal = host[0] == '[';
	if (literal && hl >= 2)
		snprintf(name, sizeof name, "%.*s", (int)(hl - 2), host + 1);
	else
		snprintf(name, sizeof name, "%s", host);
	struct addrinfo hints = {0}, *res = NULL;
	hints.ai_socktype = SOCK_STREAM;
	int g = getaddrinfo(name, port, &hints, &res);
	if (g) {
		cof_error(err, COF_EVALIDATION, "'url': cannot resolve host '%.200s': %s", name,
			  gai_strerror(g));
		goto out;
	}
	unsigned char first[16], ip[16];
	int have = 0, bad = 0;
	for (struct addrinfo *a = res; a; a = a->ai_next) {
		if (cof_addr_key(a->ai_addr, ip))
			continue;
		if (is_private(ip))
			bad = 1;
		else if (!have) {
			memcpy(first, ip, 16);
			have = 1;
		}
	}
	freeaddrinfo(res);
	if (bad || !have) {
		cof_error(err, COF_EVALIDATION, "'url': host '%.200s' resolves to a loopback,"
			  " private or link-local address; webhooks reach public addresses only"
			  " (cofferd --webhook-allow-private allows others)", name);
		goto out;
	}
	/* connect to the address checked, not to what DNS says a moment later */
	char a[64];
	cof_addr_fmt(first, a, sizeof a);
	if (!literal && strspn(name, "0123456789.") != strlen(name))
		snprintf(resolve, rsz, "%s:%s:%s%s%s", name, port, strchr(a, ':') ? "[" : "", a,
			 strchr(a, ':') ? "]" : "");
	rc = 0;
out:
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	curl_url_cleanup(u);
	return rc;
}

/* ---- signing */

int cof_hooks_sign(const char *secret, const char *id, int64_t ts, const char *body,
		   size_t len, char *out, size_t outsz)
{
	unsigned char *key = NULL, mac[EVP_MAX_MD_SIZE];
	size_t klen = 0;
	unsigned mlen = 0;
	char head[160];
	char b64[64];

	if (strncmp(secret, "whsec_", 6) ||
	    cof_base64_decode(secret + 6, strlen(secret + 6), &key, &klen) || outsz < 48)
		return -1;
	int hl = snprintf(head, sizeof head, "%s.%lld.", id, (long long)ts);
	/* HMAC over the three parts without copying the body */
	EVP_MAC *mac_alg = EVP_MAC_fetch(NULL, "HMAC", NULL);
	EVP_MAC_CTX *mc = mac_alg ? EVP_MAC_CTX_new(mac_alg) : NULL;
	OSSL_PARAM params[2] = { OSSL_PARAM_construct_utf8_string("digest", "SHA256", 0),
				 OSSL_PARAM_construct_end() };
	size_t ml = 0;
	int ok = mc && hl > 0 && (size_t)hl < sizeof head &&
		 EVP_MAC_init(mc, key, klen, params) &&
		 EVP_MAC_update(mc, (const unsigned char *)head, (size_t)hl) &&
		 EVP_MAC_update(mc, (const unsigned char *)body, len) &&
		 EVP_MAC_final(mc, mac, &ml, sizeof mac);
	EVP_MAC_CTX_free(mc);
	EVP_MAC_free(mac_alg);
	free(key);
	if (!ok)
		return -1;
	mlen = (unsigned)ml;
	b64[cof_base64_write(mac, mlen, b64)] = '\0';
	snprintf(out, outsz, "v1,%s", b64);
	return 0;
}

/* ---- sending */

static size_t discard(char *p, size_t n, size_t m, void *ctx)
{
	(void)p;
	(void)ctx;
	return n * m;
}

/* curl's progress callback: a stopping cofferd ends a send under way (the
 * delivery stays pending; its claim's lease runs out). */
static int stopping(void *ctx, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
	(void)ctx;
	(void)a;
	(void)b;
	(void)c;
	(void)d;
	return __atomic_load_n(&H.stop, __ATOMIC_RELAXED);
}

/* Posts d; 1 delivered, 0 not (why in `why`). */
static int post(const cof_deliveryrow *d, char *why, size_t whysz)
{
	json_t *data = json_loads(d->data, 0, NULL), *msg;
	char *body, sig[80], ts_s[32], h_id[128], h_ts[64], h_sig[128], resolve[400];
	struct curl_slist *hdr = NULL, *rs = NULL;
	int64_t ts = cof_now();
	long status = 0;
	cof_err e = {0};
	CURLcode cc;
	int ok = 0;

	msg = json_pack("{s:s, s:s, s:o, s:o}", "id", d->id, "type", d->event, "createdAt",
			cof_json_time(d->created_at / 1000), "data", data ? data : json_null());
	body = msg ? json_dumps(msg, JSON_COMPACT) : NULL;
	json_decref(msg);
	if (!body) {
		snprintf(why, whysz, "out of memory");
		return 0;
	}
	if (cof_hooks_sign(d->secret, d->id, ts, body, strlen(body), sig, sizeof sig)) {
		snprintf(why, whysz, "the webhook's secret is not a whsec_ secret");
		free(body);
		return 0;
	}
	/* checked again now: the name may resolve elsewhere than at registration */
	if (cof_hooks_url_check(d->url, resolve, sizeof resolve, &e)) {
		snprintf(why, whysz, "%.*s", (int)(whysz ? whysz - 1 : 0), e.msg);
		cof_err_clear(&e);
		free(body);
		return 0;
	}
	snprintf(ts_s, sizeof ts_s, "%lld", (long long)ts);
	snprintf(h_id, sizeof h_id, "webhook-id: %s", d->id);
	snprintf(h_ts, sizeof h_ts, "webhook-timestamp: %s", ts_s);
	snprintf(h_sig, sizeof h_sig, "webhook-signature: %s", sig);
	hdr = curl_slist_append(hdr, "Content-Type: application/json");
	hdr = curl_slist_append(hdr, h_id);
	hdr = curl_slist_append(hdr, h_ts);
	hdr = curl_slist_append(hdr, h_sig);
	hdr = curl_slist_append(hdr, "User-Agent: coffer-webhooks/" COFFER_VERSION);
	if (resolve[0])
		rs = curl_slist_append(NULL, resolve);
	CURL *c = curl_easy_init();
	if (!c || !hdr) {
		snprintf(why, whysz, "out of memory");
		goto out;
	}
	curl_easy_setopt(c, CURLOPT_URL, d->url);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, (long)SEND_TIMEOUT_S);
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(c, CURLOPT_PROXY, "");
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, stopping);
	if (rs)
		curl_easy_setopt(c, CURLOPT_RESOLVE, rs);
	cc = curl_easy_perform(c);
	if (cc != CURLE_OK) {
		snprintf(why, whysz, "%s", curl_easy_strerror(cc));
		goto out;
	}
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	ok = status >= 200 && status < 300;
	if (!ok)
		snprintf(why, whysz, "the receiver answered HTTP %ld", status);
out:
	if (c)
		curl_easy_cleanup(c);
	curl_slist_free_all(hdr);
	curl_slist_free_all(rs);
	free(body);
	return ok;
}

/* Sends a claimed delivery and records what came of it. */
static void deliver(cof_deliveryrow *d, const char *claimer)
{
	char why[sizeof d->last_error] = "";
	int64_t now;
	cof_err e = {0};

	if (d->disabled) {
		snprintf(d->status, sizeof d->status, "failed");
		snprintf(d->last_error, sizeof d->last_error, "the webhook is disabled");
	} else if (post(d, why, sizeof why)) {
		d->attempts++;
		snprintf(d->status, sizeof d->status, "delivered");
		d->last_error[0] = '\0';
		d->delivered_at = cof_now_ms();
	} else if (__atomic_load_n(&H.stop, __ATOMIC_RELAXED)) {
		/* cut short by the stop: not an attempt; the claim is given back */
		snprintf(d->status, sizeof d->status, "pending");
	} else {
		d->attempts++;
		now = cof_now_ms();
		snprintf(d->last_error, sizeof d->last_error, "%s", why);
		size_t step = (size_t)(d->attempts - 1);
		if (step >= NBACKOFF ||
		    now + backoff_s[step] * 1000 > d->created_at + GIVE_UP_MS) {
			snprintf(d->status, sizeof d->status, "failed");
		} else {
			snprintf(d->status, sizeof d->status, "pending");
			d->next_at = now + backoff_s[step] * 1000;
		}
	}
	if (cof_meta_hook_settle(H.st->meta, d, claimer, &e))
		fprintf(stderr, "cofferd: webhooks: cannot record delivery %s: %s\n", d->id, e.msg);
	cof_err_clear(&e);
}

void cof_hooks_wake(void)
{
	pthread_mutex_lock(&H.mu);
	H.wakes++;
	pthread_cond_broadcast(&H.cv);
	pthread_mutex_unlock(&H.mu);
}

/* Waits up to ms for a wake past `seen` (any: woken only by the stop) or the
 * stop; 1 when stopping. */
static int nap(uint64_t seen, int any, int64_t ms)
{
	struct timespec ts;
	int stop;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&H.mu);
	while (!H.stop && (any || H.wakes == seen))
		if (pthread_cond_timedwait(&H.cv, &H.mu, &ts))
			break;
	stop = H.stop;
	pthread_mutex_unlock(&H.mu);
	return stop;
}

static void *sender(void *arg)
{
	char claimer[100];
	cof_deliveryrow *d = cof_calloc(1, sizeof *d);

	snprintf(claimer, sizeof claimer, "%s/%d", H.claimer, (int)(intptr_t)arg);
	while (d) {
		pthread_mutex_lock(&H.mu);
		uint64_t seen = H.wakes;
		int stop = H.stop;
		pthread_mutex_unlock(&H.mu);
		if (stop)
			break;
		cof_err e = {0};
		int got = cof_meta_hook_claim(H.st->meta, claimer, cof_now_ms(), LEASE_MS, d, &e);
		if (got < 0) {
			fprintf(stderr, "cofferd: webhooks: cannot claim a delivery: %s\n", e.msg);
			cof_err_clear(&e);
		}
		if (got == 1) {
			deliver(d, claimer);
			free(d->data);
			d->data = NULL;
			continue;
		}
		/* a queue on another node wakes nobody here: look again each second */
		if (nap(seen, 0, 1000))
			break;
	}
	free(d);
	return NULL;
}

static void *ticker(void *arg)
{
	(void)arg;
	int64_t pruned = 0;

	do {
		cof_hooks_vol_flush(H.st);
		if (cof_mono_ms() - pruned > PRUNE_EVERY_MS) {
			cof_err e = {0};
			pruned = cof_mono_ms();
			if (cof_meta_hook_prune(H.st->meta, cof_now_ms() - KEEP_MS, &e))
				fprintf(stderr, "cofferd: webhooks: %s\n", e.msg);
			cof_err_clear(&e);
		}
	} while (!nap(0, 1, 200));
	return NULL;
}

int cof_hooks_start(cof_store *st, const char *node, int allow_private, cof_err *err)
{
	H.st = st;
	H.allow_private = allow_private;
	H.stop = 0;
	if (node && *node)
		snprintf(H.claimer, sizeof H.claimer, "%s", node);
	else
		snprintf(H.claimer, sizeof H.claimer, "pid%ld", (long)getpid());
	curl_global_init(CURL_GLOBAL_DEFAULT);
	cof_store_on_changed(st, cof_hooks_vol_changed, NULL);
	if (pthread_create(&H.ticker, NULL, ticker, NULL))
		return cof_error(err, COF_EINTERNAL, "cannot start the webhook senders");
	for (intptr_t i = 0; i < SENDERS; i++)
		if (pthread_create(&H.senders[i], NULL, sender, (void *)i)) {
			H.started = (int)i;
			cof_hooks_stop();
			return cof_error(err, COF_EINTERNAL, "cannot start the webhook senders");
		}
	H.started = SENDERS;
	return 0;
}

void cof_hooks_stop(void)
{
	if (!H.st)
		return;
	cof_store_on_changed(H.st, NULL, NULL);
	pthread_mutex_lock(&H.mu);
	__atomic_store_n(&H.stop, 1, __ATOMIC_RELAXED);
	pthread_cond_broadcast(&H.cv);
	pthread_mutex_unlock(&H.mu);
	pthread_join(H.ticker, NULL);
	for (int i = 0; i < H.started; i++)
		pthread_join(H.senders[i], NULL);
	H.started = 0;
	H.st = NULL;
}
