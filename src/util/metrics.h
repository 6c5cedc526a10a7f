/*
 * metrics.h — process-wide counters for GET /metrics (Prometheus text format).
 *
 * Fixed counters and histograms are arrays of 64-bit atomics: counting is one
 * relaxed atomic add, no lock, cheap enough for every request and commit.
 * Counters with a label value only known at run time (a guard category, a
 * sandbox limit) are rare events and go through a small locked table.
 * Gauges (turns running, relay sessions by status) are read at scrape time
 * by whoever owns the state (src/http/metrics.c).
 */
#ifndef COF_METRICS_H
#define COF_METRICS_H

#include <stdint.h>
#include "util/util.h"

typedef enum cof_counter {
	COF_M_STORE_COMMITS,        /* metadata changes committed */
	COF_M_STORE_COMMIT_ERRORS,  /* metadata changes that failed */
	COF_M_GC_RUNS,
	COF_M_GC_BYTES_FREED,
	COF_M_GC_BLOBS_FREED,
	COF_M_IMAGE_DECODES,        /* images decoded for the model (media.c) */
	COF_M_IMAGE_CACHE_HITS,     /* images shown from the scaled-image cache */
	COF_M_COUNTERS
} cof_counter;

/* Latency histograms (seconds), with the same bucket bounds. */
typedef enum cof_histo {
	COF_H_COMMIT,               /* a metadata change, begin to durable */
	COF_H_FSYNC,                /* one fsync of stored content */
	COF_H_COUNT
} cof_histo;

#define COF_HISTO_BUCKETS 20
/* The bucket upper bounds, in seconds (the last one before +Inf). */
extern const double cof_histo_bounds[COF_HISTO_BUCKETS];

typedef struct cof_histogram {
	uint64_t bucket[COF_HISTO_BUCKETS + 1]; /* the last: +Inf */
	uint64_t count;
	uint64_t sum_us;
} cof_histogram;

void cof_metric_add(cof_counter c, int64_t v);
int64_t cof_metric_get(cof_counter c);
/* Records one observation of `us` microseconds into h. */
void cof_histogram_observe(cof_histogram *h, int64_t us);
void cof_metric_observe(cof_histo h, int64_t us);
const cof_histogram *cof_metric_histogram(cof_histo h);
/* Writes h as Prometheus histogram lines of `name` with `labels` ("" or
 * `route="...",` ending in a comma) into b; seconds. */
void cof_histogram_write(cof_buf *b, const char *name, const char *labels,
			 const cof_histogram *h);

/* Labelled rare events: `family` is a metric name ("coffer_guard_blocks_total"),
 * `label` its label name, `value` the label's value (any bytes: escaped on
 * output; at most 63 bytes kept). Up to 128 series in all; past that the
 * event is counted under value "other". */
void cof_metric_event(const char *family, const char *label, const char *value);
/* Writes every labelled series of `family` (with its HELP and TYPE lines
 * given by the caller) into b. */
void cof_metric_events_write(cof_buf *b, const char *family);
/* Appends `s` escaped as a Prometheus label value. */
void cof_metric_label_escape(cof_buf *b, const char *s);

#endif
