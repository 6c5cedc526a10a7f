/*
 * ratelimit.c — `--rate-limit N`: N requests a second per key, a token bucket
 * holding at most 2N (the burst), refilled continuously; and `--rate-limit-org
 * M` (M = N unless given): M a second per organization, all its keys
 * together, so that minting keys gets no more through (issue 32.9). A request
 * takes a token of both buckets or of neither.
 *
 * Buckets live in a fixed table, 64 stripes of 64 buckets, each stripe behind
 * its own mutex (two requests of different keys rarely share one). A key new
 * to a full stripe takes the bucket refilled longest ago: a bucket idle for
 * two seconds or more is full again anyway, so evicting it loses nothing;
 * only with more than 64 keys of one stripe busy at once does a key get a
 * fresh burst early. The buckets are per node: with several nodes behind a
 * balancer, each allows N a second.
 */
#include <math.h>
#include <pthread.h>
#include <string.h>
#include "http/http.h"

#define STRIPES 64
#define PER_STRIPE 64

typedef struct bucket {
	char id[56];             /* a key's id, or "o:" and an organization */
	double tokens;
	int64_t at_us;           /* last refill */
} bucket;

static struct stripe {
	pthread_mutex_t mu;
	bucket b[PER_STRIPE];
} stripes[STRIPES];
static double rate;              /* a key's tokens a second; 0 = no limit */
static double org_rate;          /* an organization's; 0 = no limit */
static int64_t limited;          /* requests refused (atomic) */

void http_rate_configure(int64_t per_second, int64_t org_per_second)
{
	rate = (double)per_second;
	org_rate = (double)(org_per_second ? org_per_second : per_second);
	for (int i = 0; i < STRIPES; i++)
		pthread_mutex_init(&stripes[i].mu, NULL);
}

int64_t http_rate_limited_count(void)
{
	return __atomic_load_n(&limited, __ATOMIC_RELAXED);
}

/* FNV-1a of the id: which stripe. */
static unsigned stripe_of(const char *id)
{
	uint32_t h = 2166136261u;

	for (; *id; id++)
		h = (h ^ (unsigned char)*id) * 16777619u;
	return h % STRIPES;
}

/* The bucket of `id` in s (mu held), taken over from the stalest when new
 * (full: `r` tokens a second, a burst of 2r). */
static bucket *bucket_of(struct stripe *s, const char *id, double r, int64_t now)
{
	bucket *stale = &s->b[0];

	for (int i = 0; i < PER_STRIPE; i++) {
		if (!strcmp(s->b[i].id, id))
			return &s->b[i];
		if (s->b[i].at_us < stale->at_us)
			stale = &s->b[i];
	}
	snprintf(stale->id, sizeof stale->id, "%s", id);
	stale->tokens = 2 * r;
	stale->at_us = now;
	return stale;
}

/* Takes one token of bucket `id` (rate r); with `back`, returns one instead
 * (a request the other bucket refused). 0, or the seconds until a token is
 * back. */
static double take(const char *id, double r, int back)
{
	struct stripe *s = &stripes[stripe_of(id)];
	int64_t now = cof_mono_us();
	double wait = 0;
	bucket *b;

	pthread_mutex_lock(&s->mu);
	b = bucket_of(s, id, r, now);
	b->tokens += (double)(now - b->at_us) / 1e6 * r;
	if (b->tokens > 2 * r)
		b->tokens = 2 * r;
	b->at_us = now;
	if (back)
		b->tokens = b->tokens + 1 > 2 * r ? 2 * r : b->tokens + 1;
	else if (b->tokens >= 1)
		b->tokens -= 1;
	else
		wait = (1 - b->tokens) / r;
	pthread_mutex_unlock(&s->mu);
	return wait;
}

/* A 429 for `who` over limit r, `wait` seconds from a token. */
static int refuse(const char *who, double r, double wait, cof_err *err, int *retry_after)
{
	__atomic_add_fetch(&limited, 1, __ATOMIC_RELAXED);
	*retry_after = (int)ceil(wait);
	if (*retry_after < 1)
		*retry_after = 1;
	return cof_error(err, COF_ERATELIMIT,
			 "%s is over its rate limit of %.0f requests a second (a burst of "
			 "%.0f); retry after %d s", who, r, 2 * r, *retry_after);
}

int http_rate_take(const char *key_id, const char *org, cof_err *err, int *retry_after)
{
	char oid[56], who[64];
	double wait;
	int keyed = rate > 0 && key_id && *key_id;

	*retry_after = 0;
	if (!key_id || !*key_id)
		return 0;  /* no key (a present_file link): not limited */
	if (keyed && (wait = take(key_id, rate, 0)) > 0) {
		snprintf(who, sizeof who, "key %s", key_id);
		return refuse(who, rate, wait, err, retry_after);
	}
	if (org_rate <= 0 || !org || !*org)
		return 0;
	snprintf(oid, sizeof oid, "o:%s", org);
	if ((wait = take(oid, org_rate, 0)) > 0) {
		if (keyed)
			take(key_id, rate, 1);  /* not spent: the request is refused */
		snprintf(who, sizeof who, "organization %s", org);
		return refuse(who, org_rate, wait, err, retry_after);
	}
	return 0;
}

enum MHD_Result http_send_rate_limited(http_req *req, cof_err *err, int retry_after)
{
	unsigned status = (unsigned)cof_code_status(err->code);
	struct MHD_Response *resp = http_error_response(req, err);
	char v[16];

	cof_err_clear(err);
	if (resp == NULL)
		return MHD_NO;
	snprintf(v, sizeof v, "%d", retry_after);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, v);
	if (req->close_after)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
	return http_queue(req, status, resp);
}
