/*
 * metrics.c — the counters of metrics.h: atomics for the fixed ones, a small
 * locked table for labelled rare events.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include "util/metrics.h"

/* to 5 minutes: large PUTs and archive downloads last seconds to minutes */
const double cof_histo_bounds[COF_HISTO_BUCKETS] = {
	0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
	0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300};

static int64_t counters[COF_M_COUNTERS];
static cof_histogram histos[COF_H_COUNT];

void cof_metric_add(cof_counter c, int64_t v)
{
	__atomic_add_fetch(&counters[c], v, __ATOMIC_RELAXED);
}

int64_t cof_metric_get(cof_counter c)
{
	return __atomic_load_n(&counters[c], __ATOMIC_RELAXED);
}

void cof_histogram_observe(cof_histogram *h, int64_t us)
{
	int i = 0;

	if (us < 0)
		us = 0;
	while (i < COF_HISTO_BUCKETS && (double)us > cof_histo_bounds[i] * 1e6)
		i++;
	__atomic_add_fetch(&h->bucket[i], 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&h->count, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&h->sum_us, (uint64_t)us, __ATOMIC_RELAXED);
}

void cof_metric_observe(cof_histo h, int64_t us)
{
	cof_histogram_observe(&histos[h], us);
}

const cof_histogram *cof_metric_histogram(cof_histo h)
{
	return &histos[h];
}

void cof_histogram_write(cof_buf *b, const char *name, const char *labels,
			 const cof_histogram *h)
{
	uint64_t cum = 0;
	char le[32];

	/* the buckets are read one by one while others count: the cumulative
	 * counts stay monotonic, and count is taken as the +Inf bucket */
	for (int i = 0; i <= COF_HISTO_BUCKETS; i++) {
		cum += __atomic_load_n(&h->bucket[i], __ATOMIC_RELAXED);
		if (i < COF_HISTO_BUCKETS)
			snprintf(le, sizeof le, "%g", cof_histo_bounds[i]);
		else
			snprintf(le, sizeof le, "+Inf");
		cof_buf_addf(b, "%s_bucket{%sle=\"%s\"} %llu\n", name, labels, le,
			     (unsigned long long)cum);
	}
	/* sum and count carry the labels without the trailing comma, or none */
	int n = (int)strlen(labels);
	if (n > 0 && labels[n - 1] == ',')
		n--;
	double sum = (double)__atomic_load_n(&h->sum_us, __ATOMIC_RELAXED) / 1e6;
	if (n)
		cof_buf_addf(b, "%s_sum{%.*s} %.6f\n%s_count{%.*s} %llu\n", name, n, labels, sum,
			     name, n, labels, (unsigned long long)cum);
	else
		cof_buf_addf(b, "%s_sum %.6f\n%s_count %llu\n", name, sum, name,
			     (unsigned long long)cum);
}

#define EVENTS_MAX 128

static struct {
	const char *family, *label;
	char value[64];
	int64_t n;
} events[EVENTS_MAX];
static int nevents;
static pthread_mutex_t events_mu = PTHREAD_MUTEX_INITIALIZER;

void cof_metric_event(const char *family, const char *label, const char *value)
{
	int i;

	pthread_mutex_lock(&events_mu);
	for (i = 0; i < nevents; i++)
		if (!strcmp(events[i].family, family) && !strncmp(events[i].value, value, 63))
			break;
	if (i == nevents && nevents == EVENTS_MAX) {
		value = "other";
		for (i = 0; i < nevents; i++)
			if (!strcmp(events[i].family, family) && !strcmp(events[i].value, value))
				break;
		if (i == nevents)
			i = EVENTS_MAX - 1; /* the table is full of other families */
	}
	if (i == nevents) {
		events[i].family = family;
		events[i].label = label;
		snprintf(events[i].value, sizeof events[i].value, "%s", value);
		nevents++;
	}
	events[i].n++;
	pthread_mutex_unlock(&events_mu);
}

void cof_metric_label_escape(cof_buf *b, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			cof_buf_addf(b, "\\%c", *s);
		else if (*s == '\n')
			cof_buf_add(b, "\\n", 2);
		else
			cof_buf_add(b, s, 1);
	}
}

void cof_metric_events_write(cof_buf *b, const char *family)
{
	pthread_mutex_lock(&events_mu);
	for (int i = 0; i < nevents; i++) {
		if (strcmp(events[i].family, family))
			continue;
		cof_buf_addf(b, "%s{%s=\"", family, events[i].label);
		cof_metric_label_escape(b, events[i].value);
		cof_buf_addf(b, "\"} %lld\n", (long long)events[i].n);
	}
	pthread_mutex_unlock(&events_mu);
}
