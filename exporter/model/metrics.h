/* SPDX-License-Identifier: MIT */
/*
 * RED metrics: every finished call (sampled or not, exported or not) measured into the
 * semantic conventions' duration histogram of its kind, per process (its resource) and per set of
 * the conventions' low-cardinality attributes. A reader (OTLP push, Prometheus pull, console)
 * collects the store into a batch of points it owns, apart from the store, and encodes that.
 *
 * Instruments and their attributes are the semantic conventions v1.37's: the stable HTTP and
 * database client durations, in seconds, and the RPC durations of the RPC conventions gospan's
 * spans follow (rpc.system, rpc.grpc.status_code), in milliseconds.
 */
#ifndef GOSPAN_METRICS_H
#define GOSPAN_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/span.h"

#define METRIC_MAX_ATTRS 8   /* attributes of one point (the overflow set has one) */
#define METRIC_MAX_BOUNDS 16 /* explicit bucket boundaries of a histogram */
#define METRIC_CARDINALITY_DEFAULT 2000

enum metric_kind {
	METRIC_HISTOGRAM,
	METRIC_SUM,	/* a counter (monotonic) or an up-down counter */
};

/* An instrument: what it is called and measures, and which span attributes it keeps. */
struct metric_desc {
	const char *name;
	const char *description;
	const char *unit; /* UCUM */
	enum metric_kind kind;
	bool monotonic; /* sums: a counter */
	/* Sums observed from totals gospan keeps (observable counters), not measured one by one. */
	bool observed;
	double per_ns; /* histograms: the unit in nanoseconds (1e9 for s, 1e6 for ms) */
	const double *bounds;
	size_t nbounds;
	const char *const *keys; /* the attributes kept, by semantic-convention name */
	size_t nkeys;
};

/* The request-duration instruments, in the order the families' spans are matched to them. */
enum metric_instrument {
	METRIC_HTTP_SERVER,
	METRIC_HTTP_CLIENT,
	METRIC_RPC_SERVER,
	METRIC_RPC_CLIENT,
	METRIC_DB_CLIENT,
	METRIC_INSTRUMENTS,
};

extern const struct metric_desc metric_instruments[METRIC_INSTRUMENTS];

/*
 * gospan's own health sums that a reader may single out (the console's line of spans exported
 * and lost): the exporter's spans exported (those with error.type were lost), and the spans lost
 * by reason, everything the summary line counts.
 */
#define METRIC_SPANS_EXPORTED "otel.sdk.exporter.span.exported"
#define METRIC_SPANS_DROPPED "gospan.span.dropped"

/* OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE. */
enum metric_temporality {
	METRIC_TEMPORALITY_CUMULATIVE,
	METRIC_TEMPORALITY_DELTA,
	/* Delta for histograms (measured one by one), cumulative for observed sums. */
	METRIC_TEMPORALITY_LOWMEMORY,
};

/* OTEL_METRICS_EXEMPLAR_FILTER. */
enum metric_exemplars {
	METRIC_EXEMPLARS_TRACE_BASED, /* a measurement whose span is exported */
	METRIC_EXEMPLARS_ALWAYS_ON,   /* any measurement, the span exported or not */
	METRIC_EXEMPLARS_ALWAYS_OFF,
};

struct metric_exemplar {
	uint8_t trace_id[16];
	uint8_t span_id[8];
	uint64_t time_ns; /* UNIX */
	double value;	  /* in the instrument's unit */
};

/* One data point of a collected batch: the batch owns its strings and its resource reference. */
struct metric_point {
	const struct metric_desc *desc;
	struct resource *res;
	size_t nattrs;
	struct attr attrs[METRIC_MAX_ATTRS];
	uint64_t start_ns, time_ns; /* UNIX */
	bool delta;
	/* Histograms: */
	uint64_t count;
	double sum, min, max;
	uint64_t buckets[METRIC_MAX_BOUNDS + 1]; /* desc->nbounds + 1 of them */
	size_t nexemplars;
	struct metric_exemplar *exemplars;
	/* Sums: */
	int64_t value;
	char *strings; /* the attributes' string values */
};

/* What a reader collects: points grouped by resource, then by instrument, in that order. */
struct metrics_batch {
	size_t n, cap;
	struct metric_point *points;
	uint64_t time_ns; /* when it was collected, UNIX */
};

struct metrics_stats {
	uint64_t measurements;	/* calls measured */
	uint64_t overflowed;	/* of which into an instrument's overflow set */
	uint64_t limited;	/* (process, instrument) pairs whose cardinality limit was hit */
	uint64_t series;	/* attribute sets of the calls' instruments held now */
	uint64_t no_memory;	/* measurements lost to a failed allocation */
};

struct metrics;

/*
 * Called by metrics__collect before it collects, outside the store's lock: observes the totals
 * behind the observed sums with metrics__observe.
 */
typedef void (*metrics_observe_fn)(void *ctx, struct metrics *m);

struct metrics_opts {
	enum metric_temporality temporality;
	enum metric_exemplars exemplars;
	size_t cardinality_limit; /* attribute sets per process and instrument, overflow included */
	metrics_observe_fn observe;
	void *observe_ctx;
};

/* NULL with errno on failure. */
struct metrics *metrics__new(const struct metrics_opts *opts);
void metrics__free(struct metrics *m);

/*
 * Measures finished span S into its kind's instrument, if it has one (function spans do not).
 * EXPORTED: S goes on to be exported (sampled, and the export queue took it), so it may be an
 * exemplar under the trace-based filter. Called by one thread (the ring-buffer reader).
 */
void metrics__record_span(struct metrics *m, const struct span *s, bool exported);

/*
 * From an observe callback: the total VALUE of observed sum DESC for attribute set ATTRS (NATTRS
 * of them) of resource RES, held by the store from then on. -EINVAL for a DESC that is not an
 * observed sum or has more than METRIC_MAX_ATTRS keys, or more ATTRS than DESC has keys.
 */
int metrics__observe(struct metrics *m, const struct metric_desc *desc, struct resource *res,
		     const struct attr *attrs, size_t nattrs, int64_t value);

/*
 * Everything measured, as points at NOW_NS (UNIX): cumulative points since each stream began,
 * or delta points since the last collection, as the temporality asks. Starts a new delta
 * interval and, with RESET_EXEMPLARS, a new set of exemplars (a delta point's are always its
 * interval's own). A process gone (nothing but the
 * store holds its resource) is collected one last time and then let go. NULL with errno.
 */
struct metrics_batch *metrics__collect(struct metrics *m, uint64_t now_ns, bool reset_exemplars);
void metrics_batch__free(struct metrics_batch *b);

void metrics__stats(struct metrics *m, struct metrics_stats *out);

/* What a histogram's buckets say of its Qth quantile (0 < Q < 1), by linear interpolation. */
double metric_point__quantile(const struct metric_point *p, double q);

#endif
