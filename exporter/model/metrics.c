// SPDX-License-Identifier: MIT
/*
 * The metrics store. Each call is measured once, on the ring-buffer reader's thread, before
 * sampling and before the export queue can refuse its span: the counts are exact whatever the
 * traces keep. Points live per process (the span's resource) and instrument, in a hash table of
 * attribute sets bounded by the cardinality limit, past which a call is counted in the set
 * {otel.metric.overflow=true}, as the SDK specification has it. A reader collects under the same
 * lock into a batch of its own, so encoding and sending never hold the reader back.
 *
 * Measuring must stay far below a microsecond: a span's attributes are matched to the
 * instruments' keys through a small table of key pointers (the semantic-convention names are
 * string constants, the same few pointers every time), not by comparing strings.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/log.h"
#include "model/metrics.h"
#include "model/semconv.h"

/* Every attribute any instrument keeps: what a span's attribute keys are matched against. */
enum key {
	K_METHOD,
	K_STATUS,
	K_ROUTE,
	K_ERROR_TYPE,
	K_URL_SCHEME,
	K_PROTOCOL_VERSION,
	K_SERVER_ADDRESS,
	K_SERVER_PORT,
	K_RPC_SYSTEM,
	K_RPC_SERVICE,
	K_RPC_METHOD,
	K_RPC_STATUS,
	K_DB_SYSTEM,
	K_DB_OPERATION,
	K_DB_COLLECTION,
	K_DB_STATUS,
	K__COUNT,
};

static const char *const key_names[K__COUNT] = {
	[K_METHOD] = SC_HTTP_REQUEST_METHOD,
	[K_STATUS] = SC_HTTP_RESPONSE_STATUS_CODE,
	[K_ROUTE] = SC_HTTP_ROUTE,
	[K_ERROR_TYPE] = SC_ERROR_TYPE,
	[K_URL_SCHEME] = SC_URL_SCHEME,
	[K_PROTOCOL_VERSION] = SC_NETWORK_PROTOCOL_VERSION,
	[K_SERVER_ADDRESS] = SC_SERVER_ADDRESS,
	[K_SERVER_PORT] = SC_SERVER_PORT,
	[K_RPC_SYSTEM] = SC_RPC_SYSTEM,
	[K_RPC_SERVICE] = SC_RPC_SERVICE,
	[K_RPC_METHOD] = SC_RPC_METHOD,
	[K_RPC_STATUS] = SC_RPC_GRPC_STATUS_CODE,
	[K_DB_SYSTEM] = SC_DB_SYSTEM_NAME,
	[K_DB_OPERATION] = SC_DB_OPERATION_NAME,
	[K_DB_COLLECTION] = SC_DB_COLLECTION_NAME,
	[K_DB_STATUS] = SC_DB_RESPONSE_STATUS_CODE,
};

/* The conventions' advice: http.*.request.duration and db.client.operation.duration, seconds. */
static const double http_bounds[] = { 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25,
				      0.5,   0.75, 1,	  2.5,	5,     7.5, 10 };
static const double db_bounds[] = { 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10 };
/* The RPC durations have no advice: the SDK's default boundaries, in milliseconds. */
static const double rpc_bounds[] = { 0,	  5,	10,   25,   50,	  75,	100, 250,
				     500, 750, 1000, 2500, 5000, 7500, 10000 };

/* Each instrument's attributes, in the order its points carry them. */
static const char *const http_server_keys[] = {
	SC_HTTP_REQUEST_METHOD, SC_URL_SCHEME, SC_HTTP_ROUTE, SC_HTTP_RESPONSE_STATUS_CODE,
	SC_ERROR_TYPE,		SC_NETWORK_PROTOCOL_VERSION,
};
static const char *const http_client_keys[] = {
	SC_HTTP_REQUEST_METHOD,	      SC_URL_SCHEME,	SC_SERVER_ADDRESS,
	SC_SERVER_PORT,		      SC_HTTP_RESPONSE_STATUS_CODE, SC_ERROR_TYPE,
	SC_NETWORK_PROTOCOL_VERSION,
};
static const char *const rpc_server_keys[] = {
	SC_RPC_SYSTEM, SC_RPC_SERVICE, SC_RPC_METHOD, SC_RPC_GRPC_STATUS_CODE, SC_ERROR_TYPE,
};
static const char *const rpc_client_keys[] = {
	SC_RPC_SYSTEM, SC_RPC_SERVICE,	  SC_RPC_METHOD,  SC_RPC_GRPC_STATUS_CODE,
	SC_ERROR_TYPE, SC_SERVER_ADDRESS, SC_SERVER_PORT,
};
static const char *const db_keys[] = {
	SC_DB_SYSTEM_NAME, SC_DB_OPERATION_NAME, SC_DB_COLLECTION_NAME, SC_DB_RESPONSE_STATUS_CODE,
	SC_ERROR_TYPE,	   SC_SERVER_ADDRESS,	 SC_SERVER_PORT,
};

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define HISTOGRAM(nm, desc, u, per, b, k)                                                          \
	{                                                                                          \
		.name = nm, .description = desc, .unit = u, .kind = METRIC_HISTOGRAM,              \
		.per_ns = per, .bounds = b, .nbounds = ARRAY_LEN(b), .keys = k,                    \
		.nkeys = ARRAY_LEN(k),                                                             \
	}

const struct metric_desc metric_instruments[METRIC_INSTRUMENTS] = {
	[METRIC_HTTP_SERVER] = HISTOGRAM("http.server.request.duration",
					 "Duration of HTTP server requests.", "s", 1e9,
					 http_bounds, http_server_keys),
	[METRIC_HTTP_CLIENT] = HISTOGRAM("http.client.request.duration",
					 "Duration of HTTP client requests.", "s", 1e9,
					 http_bounds, http_client_keys),
	[METRIC_RPC_SERVER] = HISTOGRAM("rpc.server.duration", "Measures the duration of inbound RPC.",
					"ms", 1e6, rpc_bounds, rpc_server_keys),
	[METRIC_RPC_CLIENT] = HISTOGRAM("rpc.client.duration",
					"Measures the duration of outbound RPC.", "ms", 1e6,
					rpc_bounds, rpc_client_keys),
	[METRIC_DB_CLIENT] = HISTOGRAM("db.client.operation.duration",
				       "Duration of database client operations.", "s", 1e9,
				       db_bounds, db_keys),
};

_Static_assert(ARRAY_LEN(rpc_bounds) <= METRIC_MAX_BOUNDS, "raise METRIC_MAX_BOUNDS");
_Static_assert(ARRAY_LEN(http_client_keys) < METRIC_MAX_ATTRS, "raise METRIC_MAX_ATTRS");

#define TABLE_BUCKETS 256 /* hash chains per table: 2000 sets are 8 a chain */
#define KEY_CACHE_BITS 7
#define KEY_CACHE (1 << KEY_CACHE_BITS) /* key pointers remembered, never evicted */

/* One attribute set of one instrument of one process, and what was measured for it. */
struct series {
	struct series *next;
	uint64_t hash;
	size_t nattrs;
	struct attr attrs[METRIC_MAX_ATTRS];
	uint64_t start_ns; /* UNIX: the stream's start (cumulative), the interval's (delta) */
	bool touched;	   /* measured since the last collection */
	bool overflow;
	uint64_t count;
	double sum, min, max;
	uint64_t buckets[METRIC_MAX_BOUNDS + 1];
	uint32_t exemplar_mask;		    /* buckets with an exemplar */
	struct metric_exemplar *exemplars; /* nbounds + 1, allocated at the first one */
	int64_t value, exported;	    /* observed sums: the total, and at the last delta */
	char strings[];			    /* the attributes' string values */
};

/* One instrument of one process. */
struct table {
	struct table *next;
	const struct metric_desc *desc;
	size_t nseries; /* the overflow set included */
	bool limited;	/* the cardinality limit was reached */
	struct series *overflow;
	struct series *chains[TABLE_BUCKETS];
};

/* One process, by its resource. */
struct res_entry {
	struct res_entry *next;
	struct resource *res; /* a reference of the store's */
	uint64_t start_ns;    /* UNIX: its first measurement, where its streams start */
	struct table *tables;
};

struct metrics {
	struct metrics_opts opts;
	pthread_mutex_t lock;
	struct res_entry *entries;
	struct res_entry *last; /* the entry of the last call measured: the next is likely its */
	uint64_t created_ns, last_collect_ns;
	struct metrics_stats stats;
	/* Each instrument's keys as enum key, in its order. */
	signed char keymap[METRIC_INSTRUMENTS][METRIC_MAX_ATTRS];
	/* The reader thread's alone (metrics__record_span), so outside the lock. */
	struct {
		const char *ptr;
		int key; /* enum key, or -1: no instrument keeps it */
	} cache[KEY_CACHE];
};

struct metrics *metrics__new(const struct metrics_opts *opts)
{
	struct metrics *m;
	size_t i, j;
	int err, k;

	if (opts->cardinality_limit < 2) {
		errno = EINVAL;
		return NULL;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->opts = *opts;
	err = pthread_mutex_init(&m->lock, NULL);
	if (err) {
		free(m);
		errno = err;
		return NULL;
	}
	m->created_ns = m->last_collect_ns = clock__unix_now();
	for (i = 0; i < METRIC_INSTRUMENTS; i++)
		for (j = 0; j < metric_instruments[i].nkeys; j++) {
			for (k = 0; k < K__COUNT; k++)
				if (!strcmp(metric_instruments[i].keys[j], key_names[k]))
					break;
			m->keymap[i][j] = (signed char)k; /* each is among key_names */
		}
	return m;
}

static void series_free(struct series *s)
{
	if (!s)
		return;
	free(s->exemplars);
	free(s);
}

static void table_free(struct table *t)
{
	struct series *s, *next;
	size_t i;

	for (i = 0; i < TABLE_BUCKETS; i++)
		for (s = t->chains[i]; s; s = next) {
			next = s->next;
			series_free(s);
		}
	series_free(t->overflow);
	free(t);
}

static void entry_free(struct res_entry *e)
{
	struct table *t, *next;

	for (t = e->tables; t; t = next) {
		next = t->next;
		table_free(t);
	}
	resource__free(e->res);
	free(e);
}

void metrics__free(struct metrics *m)
{
	struct res_entry *e, *next;

	if (!m)
		return;
	for (e = m->entries; e; e = next) {
		next = e->next;
		entry_free(e);
	}
	pthread_mutex_destroy(&m->lock);
	free(m);
}

/*
 * Which instrument key KEY is, -1 for none. The keys are semconv.h constants, so a pointer seen
 * once is known after; a key in a span's arena (written there, not a constant) is compared each
 * time and never kept, since that memory holds other strings later.
 *
 * The table is probed linearly and nothing in it is replaced: the constants are a fixed few
 * dozen. A direct-mapped cache lost to collisions: two keys of the same span sharing a slot
 * evicted each other on every span, and each miss compared KEY with every instrument key, 4 %
 * of gospan's CPU per span at 100,000 spans/s. Past a full table, keys are compared.
 */
static int key_of(struct metrics *m, const struct span *s, const char *key)
{
	/* Fibonacci hashing: the product's top bits, which every bit of the pointer stirs. */
	size_t slot = (size_t)(((uintptr_t)key * 0x9e3779b97f4a7c15ULL) >> (64 - KEY_CACHE_BITS));
	bool in_arena = key >= s->arena && key < s->arena + SPAN_ARENA_SIZE;
	size_t i;
	int k;

	for (i = 0; !in_arena && i < KEY_CACHE; i++, slot++) {
		slot &= KEY_CACHE - 1;
		if (m->cache[slot].ptr == key)
			return m->cache[slot].key;
		if (!m->cache[slot].ptr)
			break;
	}
	for (k = 0; k < K__COUNT; k++)
		if (!strcmp(key, key_names[k]))
			break;
	if (k == K__COUNT)
		k = -1;
	if (!in_arena && i < KEY_CACHE) {
		m->cache[slot].ptr = key;
		m->cache[slot].key = k;
	}
	return k;
}

/*
 * Mixes N bytes at P into H, a word at a time: the values are short strings (a method, a route)
 * hashed once per call, where a byte-at-a-time hash was a third of the measuring.
 */
static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
	const unsigned char *c = p;
	uint64_t w;
	size_t i;

	for (; n >= 8; c += 8, n -= 8) {
		memcpy(&w, c, 8);
		h = (h ^ w) * 0x9e3779b97f4a7c15ULL;
		h ^= h >> 29;
	}
	/* The tail in a register: a short memcpy into W stalls on its reload. */
	for (w = 0, i = 0; i < n; i++)
		w |= (uint64_t)c[i] << (8 * i);
	h = (h ^ w ^ ((uint64_t)n << 56)) * 0x9e3779b97f4a7c15ULL;
	return h ^ (h >> 32);
}

/*
 * A's value as attr_equal compares it: only the union's member of A's type. A bool is one byte of
 * the union and the other seven are whatever the memory held (a span's attribute table is not
 * zeroed), and -0.0 equals 0.0.
 */
static uint64_t hash_attr(uint64_t h, const struct attr *a)
{
	unsigned char b;
	double d;

	switch (a->type) {
	case ATTR_STRING:
		/* A span's attribute knows its length (equal to strlen); others are measured. */
		return hash_bytes(h, a->s, a->len ? a->len : strlen(a->s));
	case ATTR_BOOL:
		b = a->b;
		return hash_bytes(h, &b, 1);
	case ATTR_DOUBLE:
		d = a->d == 0 ? 0 : a->d;
		return hash_bytes(h, &d, sizeof(d));
	default:
		return hash_bytes(h, &a->i, sizeof(a->i));
	}
}

static uint64_t hash_attrs(const struct attr *const *vals, size_t n)
{
	uint64_t h = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		if (!vals[i])
			continue;
		h ^= i;
		h = hash_attr(h, vals[i]);
	}
	return h;
}

static bool attr_equal(const struct attr *a, const struct attr *b)
{
	if (a->type != b->type)
		return false;
	switch (a->type) {
	case ATTR_STRING:
		/*
		 * Known on both sides (span attributes, series made of them), lengths tell, and
		 * the bytes are compared without looking for the NUL.
		 */
		if (a->len && b->len)
			return a->len == b->len && !memcmp(a->s, b->s, a->len);
		return !strcmp(a->s, b->s);
	case ATTR_BOOL:
		return a->b == b->b;
	case ATTR_DOUBLE:
		return a->d == b->d;
	default:
		return a->i == b->i;
	}
}

/* Whether series S holds exactly the values VALS (NULL: absent) of its instrument's keys. */
static bool series_matches(const struct series *s, const struct metric_desc *d,
			   const struct attr *const *vals)
{
	size_t i, j = 0;

	for (i = 0; i < d->nkeys; i++) {
		if (!vals[i])
			continue;
		if (j >= s->nattrs || s->attrs[j].key != d->keys[i] ||
		    !attr_equal(&s->attrs[j], vals[i]))
			return false;
		j++;
	}
	return j == s->nattrs;
}

/* The bytes A's string value takes where it is copied (copy_attr), its NUL included. */
static size_t attr_bytes(const struct attr *a)
{
	return a->type == ATTR_STRING ? strlen(a->s) + 1 : 0;
}

/* A copied to DST, its string value into P: returns where the next one goes. */
static char *copy_attr(struct attr *dst, const struct attr *a, char *p)
{
	size_t n = attr_bytes(a);

	*dst = *a;
	if (!n)
		return p; /* P may be NULL when no value is a string */
	memcpy(p, a->s, n);
	dst->s = p;
	return p + n;
}

/* A new series with the values VALS of D's keys, its strings copied after it. */
static struct series *series_new(const struct metric_desc *d, const struct attr *const *vals,
				 uint64_t hash, uint64_t start_ns)
{
	size_t i, len = 0;
	struct series *s;
	char *p;

	for (i = 0; i < d->nkeys; i++)
		if (vals[i])
			len += attr_bytes(vals[i]);
	s = calloc(1, sizeof(*s) + len);
	if (!s)
		return NULL;
	s->hash = hash;
	s->start_ns = start_ns;
	p = s->strings;
	for (i = 0; i < d->nkeys; i++) {
		if (!vals[i])
			continue;
		p = copy_attr(&s->attrs[s->nattrs], vals[i], p);
		s->attrs[s->nattrs++].key = d->keys[i];
	}
	return s;
}

static struct series *overflow_series(struct table *t, uint64_t start_ns)
{
	struct series *s;

	if (t->overflow)
		return t->overflow;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->overflow = true;
	s->start_ns = start_ns;
	s->nattrs = 1;
	s->attrs[0] = (struct attr){ .key = "otel.metric.overflow", .type = ATTR_BOOL, .b = true };
	t->overflow = s;
	t->nseries++;
	return s;
}

static struct res_entry *entry_of(struct metrics *m, struct resource *res, uint64_t start_ns)
{
	struct res_entry *e;

	if (m->last && m->last->res == res)
		return m->last;
	for (e = m->entries; e; e = e->next)
		if (e->res == res)
			return m->last = e;
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->res = resource__hold(res);
	e->start_ns = start_ns;
	e->next = m->entries;
	m->entries = e;
	return m->last = e;
}

static struct table *table_of(struct res_entry *e, const struct metric_desc *d)
{
	struct table *t;

	for (t = e->tables; t; t = t->next)
		if (t->desc == d)
			return t;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->desc = d;
	t->next = e->tables;
	e->tables = t;
	return t;
}

static const char *resource_name(const struct resource *r)
{
	const struct attr *a = resource__get(r, SC_SERVICE_NAME);

	return a && a->type == ATTR_STRING ? a->s : "?";
}

/*
 * The series of E's table for D that VALS name, made when new; past the cardinality limit, the
 * overflow set. NULL only when memory runs out. Called with the lock held.
 */
static struct series *series_of(struct metrics *m, struct res_entry *e,
				const struct metric_desc *d, const struct attr *const *vals,
				uint64_t start_ns)
{
	struct series *s, **chain;
	struct table *t;
	uint64_t h;

	t = table_of(e, d);
	if (!t)
		return NULL;
	h = hash_attrs(vals, d->nkeys);
	chain = &t->chains[h % TABLE_BUCKETS];
	for (s = *chain; s; s = s->next)
		if (s->hash == h && series_matches(s, d, vals))
			return s;
	/*
	 * The overflow set counts toward the limit: at most limit - 1 sets of the calls' own.
	 * gospan's own observed sums are not limited: their few sets are gospan's, not a
	 * service's, and a tracer's health must not vanish into the overflow set.
	 */
	if (!d->observed && t->nseries + (t->overflow ? 0 : 1) >= m->opts.cardinality_limit) {
		if (!t->limited) {
			t->limited = true;
			m->stats.limited++;
			pr_warn("metric '%s' of '%s' reached its cardinality limit of %zu attribute "
				"sets: further sets are counted under otel.metric.overflow=true",
				d->name, resource_name(e->res), m->opts.cardinality_limit);
		}
		m->stats.overflowed++;
		return overflow_series(t, start_ns);
	}
	s = series_new(d, vals, h, start_ns);
	if (!s)
		return NULL;
	s->next = *chain;
	*chain = s;
	t->nseries++;
	if (!d->observed)
		m->stats.series++;
	return s;
}

/* Whether D's points are deltas under the store's temporality preference. */
static bool is_delta(const struct metrics *m, const struct metric_desc *d)
{
	switch (m->opts.temporality) {
	case METRIC_TEMPORALITY_DELTA:
		return d->kind == METRIC_HISTOGRAM || d->monotonic;
	case METRIC_TEMPORALITY_LOWMEMORY:
		return d->kind == METRIC_HISTOGRAM;
	default:
		return false;
	}
}

/*
 * Where a stream of D in E that begins now starts: the process's first measurement when it is
 * cumulative, else the current interval's start (the last collection, or that first measurement
 * when the process is newer).
 */
static uint64_t stream_start(const struct metrics *m, const struct res_entry *e,
			     const struct metric_desc *d)
{
	if (!is_delta(m, d) || e->start_ns > m->last_collect_ns)
		return e->start_ns;
	return m->last_collect_ns;
}

/* Which instrument measures a span of KIND whose instrument keys are VALS; -1: none. */
static int instrument_of(enum span_kind kind, const struct attr *const *vals)
{
	bool server = kind == SPAN_KIND_SERVER, client = kind == SPAN_KIND_CLIENT;

	if (vals[K_RPC_SYSTEM])
		return server ? METRIC_RPC_SERVER : client ? METRIC_RPC_CLIENT : -1;
	if (vals[K_DB_SYSTEM])
		return client ? METRIC_DB_CLIENT : -1;
	if (vals[K_METHOD])
		return server ? METRIC_HTTP_SERVER : client ? METRIC_HTTP_CLIENT : -1;
	return -1;
}

static void add_exemplar(struct series *s, const struct metric_desc *d, size_t bucket,
			 const struct span *sp, double v)
{
	struct metric_exemplar *x;

	if (!s->exemplars) {
		s->exemplars = calloc(d->nbounds + 1, sizeof(*s->exemplars));
		if (!s->exemplars)
			return; /* a measurement without its exemplar: the count is what matters */
	}
	/* The newest in its bucket: a reservoir of one a bucket, as the SDK's aligned one. */
	x = &s->exemplars[bucket];
	memcpy(x->trace_id, sp->trace_id, sizeof(x->trace_id));
	memcpy(x->span_id, sp->span_id, sizeof(x->span_id));
	x->time_ns = sp->end_ns;
	x->value = v;
	s->exemplar_mask |= 1u << bucket;
}

void metrics__record_span(struct metrics *m, const struct span *s, bool exported)
{
	const struct attr *keyed[K__COUNT] = {}, *vals[METRIC_MAX_ATTRS];
	const struct metric_desc *d;
	struct res_entry *e;
	struct series *ser;
	size_t i, b;
	double v;
	int k;

	if (!s->res)
		return;
	for (i = 0; i < s->nattrs; i++) {
		k = key_of(m, s, s->attrs[i].key);
		if (k >= 0)
			keyed[k] = &s->attrs[i];
	}
	k = instrument_of(s->kind, keyed);
	if (k < 0)
		return;
	d = &metric_instruments[k];
	for (i = 0; i < d->nkeys; i++)
		vals[i] = keyed[m->keymap[k][i]];
	v = (double)(s->end_ns > s->start_ns ? s->end_ns - s->start_ns : 0) / d->per_ns;
	for (b = 0; b < d->nbounds && v > d->bounds[b]; b++)
		;

	pthread_mutex_lock(&m->lock);
	/* The store holds the resource for its series; a span's is not changed by that. */
	e = entry_of(m, (struct resource *)s->res, s->start_ns);
	ser = e ? series_of(m, e, d, vals, stream_start(m, e, d)) : NULL;
	if (!ser) {
		m->stats.no_memory++;
		goto out;
	}
	m->stats.measurements++;
	if (!ser->count || v < ser->min)
		ser->min = v;
	if (!ser->count || v > ser->max)
		ser->max = v;
	ser->count++;
	ser->sum += v;
	ser->buckets[b]++;
	ser->touched = true;
	if (m->opts.exemplars == METRIC_EXEMPLARS_ALWAYS_ON ||
	    (m->opts.exemplars == METRIC_EXEMPLARS_TRACE_BASED && exported))
		add_exemplar(ser, d, b, s, v);
out:
	pthread_mutex_unlock(&m->lock);
}

int metrics__observe(struct metrics *m, const struct metric_desc *desc, struct resource *res,
		     const struct attr *attrs, size_t nattrs, int64_t value)
{
	const struct attr *vals[METRIC_MAX_ATTRS] = {};
	struct res_entry *e;
	struct series *s;
	size_t i, j;
	int err = 0;

	/* More keys than a point holds would overrun VALS and the series' attributes. */
	if (desc->kind != METRIC_SUM || !desc->observed || nattrs > desc->nkeys ||
	    desc->nkeys > METRIC_MAX_ATTRS)
		return -EINVAL;
	/* In the order of the instrument's keys, as measured series hold them. */
	for (i = 0; i < desc->nkeys; i++)
		for (j = 0; j < nattrs; j++)
			if (!strcmp(attrs[j].key, desc->keys[i]))
				vals[i] = &attrs[j];
	pthread_mutex_lock(&m->lock);
	e = entry_of(m, res, m->created_ns);
	s = e ? series_of(m, e, desc, vals, stream_start(m, e, desc)) : NULL;
	/* Observed sums are never limited (series_of): a set is its own series, its total. */
	if (s) {
		s->value = value;
		s->touched = true;
	} else {
		err = -ENOMEM;
	}
	pthread_mutex_unlock(&m->lock);
	return err;
}

static int batch_grow(struct metrics_batch *b)
{
	size_t cap = b->cap ? b->cap * 2 : 64;
	struct metric_point *p = realloc(b->points, cap * sizeof(*p));

	if (!p)
		return -ENOMEM;
	b->points = p;
	b->cap = cap;
	return 0;
}

/* S of table T as the next point of B, at NOW_NS. */
static int add_point(struct metrics_batch *b, const struct res_entry *e, const struct table *t,
		     const struct series *s, bool delta, uint64_t now_ns)
{
	const struct metric_desc *d = t->desc;
	struct metric_point *p;
	size_t i, len = 0;
	char *q;

	if (b->n == b->cap && batch_grow(b))
		return -ENOMEM;
	p = &b->points[b->n];
	memset(p, 0, sizeof(*p));
	for (i = 0; i < s->nattrs; i++)
		len += attr_bytes(&s->attrs[i]);
	if (len && !(p->strings = malloc(len)))
		return -ENOMEM;
	if (s->exemplar_mask) {
		p->exemplars = calloc(__builtin_popcount(s->exemplar_mask), sizeof(*p->exemplars));
		if (!p->exemplars) {
			free(p->strings);
			return -ENOMEM;
		}
		for (i = 0; i <= d->nbounds; i++)
			if (s->exemplar_mask & (1u << i))
				p->exemplars[p->nexemplars++] = s->exemplars[i];
	}
	p->desc = d;
	p->res = resource__hold(e->res);
	p->nattrs = s->nattrs;
	q = p->strings;
	for (i = 0; i < s->nattrs; i++)
		q = copy_attr(&p->attrs[i], &s->attrs[i], q);
	p->start_ns = s->start_ns;
	p->time_ns = now_ns;
	p->delta = delta;
	p->count = s->count;
	p->sum = s->sum;
	p->min = s->min;
	p->max = s->max;
	memcpy(p->buckets, s->buckets, sizeof(p->buckets));
	p->value = delta ? s->value - s->exported : s->value;
	b->n++;
	return 0;
}

/*
 * After S was collected at NOW_NS: a new interval for a delta, new exemplars when asked. A delta's
 * exemplars always start over: one from an earlier interval would sit in a bucket of a point that
 * need not count anything there.
 */
static void series_collected(struct series *s, bool delta, bool reset_exemplars, uint64_t now_ns)
{
	if (reset_exemplars || delta)
		s->exemplar_mask = 0;
	s->touched = false;
	if (!delta)
		return;
	s->start_ns = now_ns;
	s->exported = s->value;
	s->count = 0;
	s->sum = s->min = s->max = 0;
	memset(s->buckets, 0, sizeof(s->buckets));
}

/*
 * Collects table T of E into B. A delta set that saw nothing since the last collection has no
 * point and is let go, which frees its place under the cardinality limit.
 */
static int collect_table(struct metrics *m, struct metrics_batch *b, struct res_entry *e,
			 struct table *t, uint64_t now_ns, bool reset_exemplars)
{
	bool delta = is_delta(m, t->desc), sum = t->desc->kind == METRIC_SUM;
	struct series **pp, *s;
	size_t i;
	int err;

	for (i = 0; i <= TABLE_BUCKETS; i++) {
		pp = i < TABLE_BUCKETS ? &t->chains[i] : &t->overflow;
		while ((s = *pp)) {
			if (delta && !sum && !s->touched) {
				*pp = s->overflow ? NULL : s->next;
				t->nseries--;
				if (!s->overflow)
					m->stats.series--;
				series_free(s);
				continue;
			}
			err = add_point(b, e, t, s, delta, now_ns);
			if (err)
				return err;
			series_collected(s, delta, reset_exemplars, now_ns);
			if (s->overflow)
				break;
			pp = &s->next;
		}
	}
	return 0;
}

struct metrics_batch *metrics__collect(struct metrics *m, uint64_t now_ns, bool reset_exemplars)
{
	struct res_entry **pe, *e;
	struct metrics_batch *b;
	struct table *t;
	bool gone;
	int err = 0;

	/* Outside the lock: it calls metrics__observe, which takes it. */
	if (m->opts.observe)
		m->opts.observe(m->opts.observe_ctx, m);
	b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->time_ns = now_ns;
	pthread_mutex_lock(&m->lock);
	for (pe = &m->entries; (e = *pe) && !err;) {
		/* Only the store holds it: the process is gone, and no span of it is left. */
		gone = __atomic_load_n(&e->res->refs, __ATOMIC_ACQUIRE) == 1;
		for (t = e->tables; t && !err; t = t->next)
			err = collect_table(m, b, e, t, now_ns, reset_exemplars);
		if (!gone || err) {
			pe = &e->next;
			continue;
		}
		for (t = e->tables; t; t = t->next)
			if (!t->desc->observed)
				m->stats.series -= t->nseries - (t->overflow ? 1 : 0);
		*pe = e->next;
		if (m->last == e)
			m->last = NULL;
		entry_free(e);
	}
	m->last_collect_ns = now_ns;
	pthread_mutex_unlock(&m->lock);
	if (err) {
		metrics_batch__free(b);
		errno = -err;
		return NULL;
	}
	return b;
}

void metrics_batch__free(struct metrics_batch *b)
{
	size_t i;

	if (!b)
		return;
	for (i = 0; i < b->n; i++) {
		resource__free(b->points[i].res);
		free(b->points[i].strings);
		free(b->points[i].exemplars);
	}
	free(b->points);
	free(b);
}

void metrics__stats(struct metrics *m, struct metrics_stats *out)
{
	pthread_mutex_lock(&m->lock);
	*out = m->stats;
	pthread_mutex_unlock(&m->lock);
}

double metric_point__quantile(const struct metric_point *p, double q)
{
	const struct metric_desc *d = p->desc;
	double rank, below = 0, lo, hi;
	size_t i;

	if (!p->count || d->kind != METRIC_HISTOGRAM)
		return NAN;
	rank = q * (double)p->count;
	for (i = 0; i <= d->nbounds; i++) {
		if (!p->buckets[i] || below + (double)p->buckets[i] < rank) {
			below += (double)p->buckets[i];
			continue;
		}
		/* The bucket's edges, narrowed to what was seen: (bounds[i-1], bounds[i]]. */
		lo = i ? d->bounds[i - 1] : p->min;
		hi = i < d->nbounds ? d->bounds[i] : p->max;
		if (lo < p->min)
			lo = p->min;
		if (hi > p->max)
			hi = p->max;
		return lo + (hi - lo) * (rank - below) / (double)p->buckets[i];
	}
	return p->max;
}
