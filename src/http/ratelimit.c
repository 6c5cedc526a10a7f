/*
 * ratelimit.c — `--rate-limit N`: N requests a second per key, a token bucket
 * holding at most 2N (the burst), refilled continuously.
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
	char id[24];
	double tokens;
	int64_t at_us;           /* last refill */
} bucket;

static struct stripe {
	pthread_mutex_t mu;
	bucket b[PER_STRIPE];
} stripes[STRIPES];
static double rate;              /* tokens a second; 0 = no limit */
static int64_t limited;          /* requests refused (atomic) */

void http_rate_configure(int64_t per_second)
{
	rate = (double)per_second;
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

/* The bucket of `id` in s (mu held), taken over from the stalest when new. */
static bucket *bucket_of(struct stripe *s, const char *id, int64_t now)
{
	bucket *stale = &s->b[0];

	for (int i = 0; i < PER_STRIPE; i++) {
		if (!strcmp(s->b[i].id, id))
			return &s->b[i];
		if (s->b[i].at_us < stale->at_us)
			stale = &s->b[i];
	}
	snprintf(stale->id, sizeof stale->id, "%s", id);
	stale->tokens = 2 * rate;
	stale->at_us = now;
	return stale;
}

int http_rate_take(const char *key_id, cof_err *err, int *retry_after)
{
	struct stripe *s;
	bucket *b;
	int64_t now;
	double wait = 0;

	*retry_after = 0;
	if (rate <= 0 || !key_id || !*key_id)
		return 0;
	s = &stripes[stripe_of(key_id)];
	now = cof_mono_us();
	pthread_mutex_lock(&s->mu);
	b = bucket_of(s, key_id, now);
	b->tokens += (double)(now - b->at_us) / 1e6 * rate;
	if (b->tokens > 2 * rate)
		b->tokens = 2 * rate;
	b->at_us = now;
	if (b->tokens >= 1)
		b->tokens -= 1;
	else
		wait = (1 - b->tokens) / rate;
	pthread_mutex_unlock(&s->mu);
	if (wait <= 0)
		return 0;
	__atomic_add_fetch(&limited, 1, __ATOMIC_RELAXED);
	*retry_after = (int)ceil(wait);
	if (*retry_after < 1)
		*retry_after = 1;
	return cof_error(err, COF_ERATELIMIT,
			 "key %s is over its rate limit of %.0f requests a second (a burst of "
			 "%.0f); retry after %d s", key_id, rate, 2 * rate, *retry_after);
}

enum MHD_Result http_send_rate_limited(http_req *req, cof_err *err, int retry_after)
{
	struct MHD_Response *resp = http_error_response(req, err);
	char v[16];

	cof_err_clear(err);
	if (resp == NULL)
		return MHD_NO;
	snprintf(v, sizeof v, "%d", retry_after);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, v);
	return http_queue(req, 429, resp);
}
