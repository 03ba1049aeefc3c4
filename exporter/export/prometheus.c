// SPDX-License-Identifier: MIT
/*
 * The Prometheus exporter: the metrics store rendered as the text exposition format 0.0.4 on
 * GET /metrics, by a small HTTP/1.1 server. One thread serves every connection through poll(),
 * each connection with a deadline, so a client that sends half a request or never reads its
 * answer holds one of a few slots for a while and never the next scrape. The store is collected
 * per scrape, outside anything the ring-buffer reader waits on.
 *
 * The translation follows the OpenTelemetry specification's "Prometheus and OpenMetrics
 * compatibility" (OTLP metric points to Prometheus): names sanitized, the unit as a suffix
 * ("s" -> _seconds, "{span}" -> nothing), _total on monotonic sums, other sums as gauges,
 * histograms as cumulative _bucket{le} series with _sum and _count, attributes as sanitized
 * labels, the scope as otel_scope_name/otel_scope_version, and per resource a target_info gauge
 * whose labels are the resource's attributes. One gospan serves many processes (resources), and a
 * scrape is one target to Prometheus: the job and instance labels the specification derives from
 * each resource keep their series apart, as the Collector's Prometheus exporter does.
 */
#include <errno.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/version.h"
#include "export/prometheus.h"
#include "model/metrics.h"
#include "model/semconv.h"

#define MAX_LISTEN 4 /* addresses a host name resolves to that are listened on */
/*
 * Connections served at once. Prometheus scrapes one at a time; a few more let a second scraper
 * or a curl by hand in while a silent client waits for its deadline.
 */
#define MAX_CONNS 16
#define TIMEOUT_MS_DEFAULT 10000 /* Prometheus's own default scrape_timeout */
#define LINGER_MS 1000		 /* reading what a client still sends after its answer */
#define ACCEPT_PAUSE_MS 100	 /* out of file descriptors: try again after this */
#define NAME_MAX_LEN 256	 /* a metric or label name, translated */
#define NUM_LEN 32		 /* a number as text */
#define MAX_LABELS (RESOURCE_MAX_ATTRS + 4)

/* ---- text ---------------------------------------------------------------------------------- */

/* A growing string; a failed allocation is remembered and reported once, at the end. */
struct buf {
	char *p;
	size_t len, cap;
	bool failed;
};

static void buf_add(struct buf *b, const char *s, size_t n)
{
	size_t cap;
	char *p;

	if (b->failed)
		return;
	if (b->len + n + 1 > b->cap) {
		cap = b->cap ? b->cap : 4096;
		while (cap < b->len + n + 1)
			cap *= 2;
		p = realloc(b->p, cap);
		if (!p) {
			b->failed = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void buf_str(struct buf *b, const char *s)
{
	buf_add(b, s, strlen(s));
}

/* A label value: backslash, double quote and line feed escaped, as 0.0.4 asks. */
static void buf_label_value(struct buf *b, const char *s)
{
	const char *run = s;

	for (; *s; s++) {
		const char *esc = *s == '\\'   ? "\\\\"
				  : *s == '"'  ? "\\\""
				  : *s == '\n' ? "\\n"
					       : NULL;

		if (!esc)
			continue;
		buf_add(b, run, (size_t)(s - run));
		buf_str(b, esc);
		run = s + 1;
	}
	buf_add(b, run, (size_t)(s - run));
}

/* HELP text: backslash and line feed escaped (a double quote is itself there). */
static void buf_help(struct buf *b, const char *s)
{
	const char *run = s;

	for (; *s; s++) {
		if (*s != '\\' && *s != '\n')
			continue;
		buf_add(b, run, (size_t)(s - run));
		buf_str(b, *s == '\\' ? "\\\\" : "\\n");
		run = s + 1;
	}
	buf_add(b, run, (size_t)(s - run));
}

/*
 * V as the shortest text that reads back as V, written as Go's strconv.FormatFloat(v, 'g', -1)
 * writes it, which is what Prometheus's own clients put in le labels: "10", "0.005", "1e+06".
 * A le label is compared as text, so the same bound must be spelled the same way everywhere.
 */
static void fmt_double(double v, char *out, size_t cap)
{
	char e[NUM_LEN];
	int prec, exp;

	if (isnan(v)) {
		snprintf(out, cap, "NaN");
		return;
	}
	if (isinf(v)) {
		snprintf(out, cap, v > 0 ? "+Inf" : "-Inf");
		return;
	}
	for (prec = 1; prec < 17; prec++) {
		snprintf(e, sizeof(e), "%.*e", prec - 1, v);
		if (strtod(e, NULL) == v)
			break;
	}
	snprintf(e, sizeof(e), "%.*e", prec - 1, v);
	exp = atoi(strchr(e, 'e') + 1);
	/* Go's rule for the shortest form: an exponent below -4 or from 6 up. */
	if (exp < -4 || exp >= 6)
		snprintf(out, cap, "%s", e);
	else
		snprintf(out, cap, "%.*f", prec - 1 - exp > 0 ? prec - 1 - exp : 0, v);
}

/* An attribute's value as the specification's attribute-to-string rules have it. */
static const char *attr_text(const struct attr *a, char *tmp, size_t cap)
{
	switch (a->type) {
	case ATTR_STRING:
		return a->s;
	case ATTR_INT:
		snprintf(tmp, cap, "%lld", (long long)a->i);
		return tmp;
	case ATTR_BOOL:
		return a->b ? "true" : "false";
	case ATTR_DOUBLE:
		fmt_double(a->d, tmp, cap);
		return tmp;
	}
	return "";
}

/* ---- names --------------------------------------------------------------------------------- */

static bool is_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/*
 * Appends S to OUT (CAP bytes, N used) with every character a Prometheus name cannot hold
 * replaced by '_' (':' kept in metric names, COLONS) and runs of '_' made one, as the
 * specification asks of both metric and label names. Returns the new length; cut at CAP.
 */
static size_t sanitize(char *out, size_t cap, size_t n, const char *s, bool colons)
{
	char c;

	for (; *s && n + 1 < cap; s++) {
		c = is_alnum(*s) || *s == '_' || (colons && *s == ':') ? *s : '_';
		if (c == '_' && n && out[n - 1] == '_')
			continue;
		out[n++] = c;
	}
	out[n] = '\0';
	return n;
}

/* A label name for attribute KEY: sanitized, and never starting with a digit. */
static void label_name(const char *key, char *out, size_t cap)
{
	size_t n = 0;

	/* "key_" is what the Collector's translation puts before a leading digit. */
	if (*key >= '0' && *key <= '9')
		n = sanitize(out, cap, 0, "key_", false);
	sanitize(out, cap, n, key, false);
}

struct unit_name {
	const char *ucum, *prom;
};

static const struct unit_name units[] = {
	{ "d", "days" },	 { "h", "hours" },	   { "min", "minutes" },
	{ "s", "seconds" },	 { "ms", "milliseconds" }, { "us", "microseconds" },
	{ "ns", "nanoseconds" }, { "By", "bytes" },	   { "KiBy", "kibibytes" },
	{ "MiBy", "mebibytes" }, { "GiBy", "gibibytes" },  { "TiBy", "tebibytes" },
	{ "KBy", "kilobytes" },	 { "MBy", "megabytes" },   { "GBy", "gigabytes" },
	{ "TBy", "terabytes" },	 { "m", "meters" },	   { "V", "volts" },
	{ "A", "amperes" },	 { "J", "joules" },	   { "W", "watts" },
	{ "g", "grams" },	 { "Cel", "celsius" },	   { "Hz", "hertz" },
	{ "%", "percent" },	 { "1", "ratio" },
};

/* After a slash: "/s" is "per_second". */
static const struct unit_name per_units[] = {
	{ "s", "second" }, { "m", "minute" }, { "h", "hour" }, { "d", "day" },
	{ "w", "week" },   { "mo", "month" }, { "y", "year" },
};

static const char *unit_word(const char *u, bool per)
{
	const struct unit_name *t = per ? per_units : units;
	size_t i, n = per ? sizeof(per_units) / sizeof(*t) : sizeof(units) / sizeof(*t);

	for (i = 0; i < n; i++)
		if (!strcmp(u, t[i].ucum))
			return t[i].prom;
	return u;
}

/*
 * The Prometheus unit of UCUM unit UCUM into OUT ("" for none): annotations in braces dropped
 * (a count of spans is unitless), abbreviations spelled out, "a/b" as a_per_b.
 */
static void prom_unit(const char *ucum, char *out, size_t cap)
{
	char plain[NAME_MAX_LEN], *per;
	size_t n = 0, depth = 0;

	out[0] = '\0';
	for (; ucum && *ucum && n + 1 < sizeof(plain); ucum++) {
		if (*ucum == '{')
			depth++;
		else if (*ucum == '}' && depth)
			depth--;
		else if (!depth && *ucum != ' ')
			plain[n++] = *ucum;
	}
	plain[n] = '\0';
	per = strchr(plain, '/');
	if (per)
		*per++ = '\0';
	n = sanitize(out, cap, 0, unit_word(plain, false), false);
	if (per && *per) {
		n = sanitize(out, cap, n, n ? "_per_" : "per_", false);
		n = sanitize(out, cap, n, unit_word(per, true), false);
	}
	/* What sanitizing left at either end ("{x}/" is nothing). */
	while (n && out[n - 1] == '_')
		out[--n] = '\0';
	if (out[0] == '_')
		memmove(out, out + 1, n);
}

/* Whether NAME holds WORD as whole '_'-separated words. */
static bool has_words(const char *name, const char *word)
{
	size_t wl = strlen(word);
	const char *p;

	for (p = strstr(name, word); p; p = strstr(p + 1, word))
		if ((p == name || p[-1] == '_') && (p[wl] == '\0' || p[wl] == '_'))
			return true;
	return false;
}

enum family_type {
	FAMILY_GAUGE,
	FAMILY_COUNTER,
	FAMILY_HISTOGRAM,
};

static enum family_type family_type(const struct metric_desc *d)
{
	if (d->kind == METRIC_HISTOGRAM)
		return FAMILY_HISTOGRAM;
	return d->monotonic ? FAMILY_COUNTER : FAMILY_GAUGE;
}

/*
 * D's name in Prometheus: http.server.request.duration, in s, is
 * http_server_request_duration_seconds; a counter of {span} named a.b is a_b_total.
 */
static void metric_name(const struct metric_desc *d, char *out, size_t cap)
{
	char unit[NAME_MAX_LEN];
	size_t n = 0;

	if (d->name[0] >= '0' && d->name[0] <= '9')
		n = sanitize(out, cap, 0, "_", true);
	n = sanitize(out, cap, n, d->name, true);
	prom_unit(d->unit, unit, sizeof(unit));
	/* The unit comes before the type's suffix, and not twice ("..._seconds" as s). */
	if (unit[0] && !has_words(out, unit)) {
		n = sanitize(out, cap, n, "_", true);
		n = sanitize(out, cap, n, unit, true);
	}
	if (family_type(d) == FAMILY_COUNTER && (n < 6 || strcmp(out + n - 6, "_total"))) {
		n = sanitize(out, cap, n, "_", true);
		sanitize(out, cap, n, "total", true);
	}
}

/* ---- labels -------------------------------------------------------------------------------- */

struct label {
	char name[NAME_MAX_LEN];
	const char *key; /* the attribute's own name: the order of values merged under one name */
	const char *value;
};

/* Label names the exporter sets itself; an attribute translated to one is renamed exported_X. */
static const char *const reserved[] = { "job", "instance", "le", "otel_scope_name",
					"otel_scope_version" };

static void add_label(struct label *l, size_t *n, const char *key, const char *value, bool attr)
{
	size_t i;

	label_name(key, l[*n].name, sizeof(l[*n].name));
	for (i = 0; attr && i < sizeof(reserved) / sizeof(reserved[0]); i++)
		if (!strcmp(l[*n].name, reserved[i])) {
			/* What Prometheus does to a scraped label that clashes with its own. */
			snprintf(l[*n].name, sizeof(l[*n].name), "exported_%s", reserved[i]);
			break;
		}
	l[*n].key = key;
	l[*n].value = value;
	(*n)++;
}

static int label_cmp(const void *a, const void *b)
{
	const struct label *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : strcmp(x->key, y->key);
}

/*
 * Labels L (N) as name="value",... sorted by name. Two attributes whose names translate to one
 * label have their values joined by ';' in the order of their own names, as the specification
 * says, so that no label is written twice.
 */
static void buf_labels(struct buf *b, struct label *l, size_t n)
{
	size_t i;

	qsort(l, n, sizeof(*l), label_cmp);
	for (i = 0; i < n; i++) {
		if (i && !strcmp(l[i].name, l[i - 1].name)) {
			buf_str(b, ";");
		} else {
			if (i)
				buf_str(b, "\",");
			buf_str(b, l[i].name);
			buf_str(b, "=\"");
		}
		buf_label_value(b, l[i].value);
	}
	if (n)
		buf_str(b, "\"");
}

/* ---- rendering ----------------------------------------------------------------------------- */

/* One process of the batch as Prometheus tells it apart: its job and instance. */
struct target {
	const struct resource *res;
	char *job, *instance;
};

/*
 * job: <service.namespace>/<service.name>, or <service.name>. instance: service.instance.id when
 * the resource has one (OTEL_RESOURCE_ATTRIBUTES can set it). gospan's own resources carry none,
 * and the specification's fallback, an empty instance, would give two processes of one service
 * (two replicas on a host, or a restart that overlaps the last scrape of the process before)
 * the same series, which a scraper rejects whole. So the instance is what tells processes
 * apart where gospan runs: <host.name>:<process.pid>, the pid as gospan sees it, unique on the
 * host at any one time.
 */
static int target_init(struct target *t, const struct resource *r)
{
	const struct attr *ns = resource__get(r, SC_SERVICE_NAMESPACE);
	const struct attr *name = resource__get(r, SC_SERVICE_NAME);
	const struct attr *id = resource__get(r, SC_SERVICE_INSTANCE_ID);
	const struct attr *host = resource__get(r, SC_HOST_NAME);
	const struct attr *pid = resource__get(r, SC_PROCESS_PID);
	char t1[NUM_LEN], t2[NUM_LEN];
	const char *n = name ? attr_text(name, t1, sizeof(t1)) : "unknown_service";
	const char *s;
	int len;

	t->res = r;
	s = ns ? attr_text(ns, t2, sizeof(t2)) : "";
	len = *s ? asprintf(&t->job, "%s/%s", s, n) : asprintf(&t->job, "%s", n);
	if (len < 0)
		return -ENOMEM;
	if (id)
		len = asprintf(&t->instance, "%s", attr_text(id, t1, sizeof(t1)));
	else if (host && pid)
		len = asprintf(&t->instance, "%s:%s", attr_text(host, t1, sizeof(t1)),
			       attr_text(pid, t2, sizeof(t2)));
	else if (pid)
		len = asprintf(&t->instance, "%s", attr_text(pid, t1, sizeof(t1)));
	else
		len = asprintf(&t->instance, "%s", "");
	if (len < 0) {
		free(t->job);
		t->job = NULL;
		return -ENOMEM;
	}
	return 0;
}

/*
 * Makes T's (job, instance) differ from those of the N targets before it: a process that exits
 * and a new one that gets its pid before the old one's last scrape would otherwise share them.
 */
static int target_unique(struct target *t, const struct target *before, size_t n)
{
	char *base = t->instance, *alt;
	int k = 1;
	size_t i;

	for (i = 0; i < n; i++) {
		if (strcmp(before[i].job, t->job) || strcmp(before[i].instance, t->instance))
			continue;
		if (asprintf(&alt, "%s#%d", base, ++k) < 0)
			return -ENOMEM;
		if (t->instance != base)
			free(t->instance);
		t->instance = alt;
		i = (size_t)-1; /* again from the first: the new name may be taken too */
	}
	if (t->instance != base)
		free(base);
	return 0;
}

static bool resource_label(const char *key)
{
	/* In job and instance already, which target_info carries as well. */
	return strcmp(key, SC_SERVICE_NAME) && strcmp(key, SC_SERVICE_NAMESPACE) &&
	       strcmp(key, SC_SERVICE_INSTANCE_ID);
}

/* target_info, one line a process: what the resource says, under the same job and instance. */
static void render_target_info(struct buf *b, const struct target *t, size_t nt)
{
	char tmp[RESOURCE_MAX_ATTRS][NUM_LEN];
	struct label l[MAX_LABELS];
	const struct attr *a;
	size_t i, j, n;

	buf_str(b, "# HELP target_info Target metadata\n# TYPE target_info gauge\n");
	for (i = 0; i < nt; i++) {
		n = 0;
		add_label(l, &n, "job", t[i].job, false);
		add_label(l, &n, "instance", t[i].instance, false);
		for (j = 0; j < t[i].res->nattrs; j++) {
			a = &t[i].res->attrs[j];
			if (resource_label(a->key))
				add_label(l, &n, a->key, attr_text(a, tmp[j], sizeof(tmp[j])),
					  true);
		}
		buf_str(b, "target_info{");
		buf_labels(b, l, n);
		buf_str(b, "} 1\n");
	}
}

/* One metric family of the scrape: every point whose metric translates to NAME. */
struct family {
	char name[NAME_MAX_LEN];
	const struct metric_desc *desc; /* the first point's: HELP and TYPE */
	enum family_type type;
	/* The le labels of le_desc's bounds, written once a family, not once a series. */
	const struct metric_desc *le_desc;
	char le[METRIC_MAX_BOUNDS][NUM_LEN];
};

/* P's labels: its attributes, then job, instance and the scope, into LAB. */
static void point_labels(struct buf *lab, const struct metric_point *p, const struct target *t)
{
	char tmp[METRIC_MAX_ATTRS][NUM_LEN];
	struct label l[MAX_LABELS];
	size_t i, n = 0;

	lab->len = 0;
	for (i = 0; i < p->nattrs; i++)
		add_label(l, &n, p->attrs[i].key, attr_text(&p->attrs[i], tmp[i], sizeof(tmp[i])),
			  true);
	add_label(l, &n, "job", t->job, false);
	add_label(l, &n, "instance", t->instance, false);
	/* The one scope gospan's points have, as its OTLP export names it. */
	add_label(l, &n, "otel_scope_name", GOSPAN_NAME, false);
	add_label(l, &n, "otel_scope_version", GOSPAN_VERSION, false);
	buf_labels(lab, l, n);
}

static void render_sample(struct buf *b, const char *name, const char *suffix,
			  const struct buf *lab, const char *le, const char *value)
{
	buf_str(b, name);
	buf_str(b, suffix);
	buf_str(b, "{");
	buf_add(b, lab->p ? lab->p : "", lab->len);
	if (le) {
		buf_str(b, lab->len ? ",le=\"" : "le=\"");
		buf_str(b, le);
		buf_str(b, "\"");
	}
	buf_str(b, "} ");
	buf_str(b, value);
	buf_str(b, "\n");
}

static void render_point(struct buf *b, struct family *f, const struct metric_point *p,
			 const struct buf *lab)
{
	const struct metric_desc *d = p->desc;
	char num[NUM_LEN];
	uint64_t cum = 0;
	size_t i;

	if (f->type != FAMILY_HISTOGRAM) {
		snprintf(num, sizeof(num), "%lld", (long long)p->value);
		render_sample(b, f->name, "", lab, NULL, num);
		return;
	}
	if (f->le_desc != d) {
		for (i = 0; i < d->nbounds; i++)
			fmt_double(d->bounds[i], f->le[i], sizeof(f->le[i]));
		f->le_desc = d;
	}
	for (i = 0; i < d->nbounds; i++) {
		cum += p->buckets[i];
		snprintf(num, sizeof(num), "%llu", (unsigned long long)cum);
		render_sample(b, f->name, "_bucket", lab, f->le[i], num);
	}
	snprintf(num, sizeof(num), "%llu", (unsigned long long)p->count);
	render_sample(b, f->name, "_bucket", lab, "+Inf", num);
	fmt_double(p->sum, num, sizeof(num));
	render_sample(b, f->name, "_sum", lab, NULL, num);
	snprintf(num, sizeof(num), "%llu", (unsigned long long)p->count);
	render_sample(b, f->name, "_count", lab, NULL, num);
}

/* The family of P, made when new; -1 when P cannot be shown. Families are few: a linear look. */
static int family_of(struct family **fams, size_t *nfams, const struct metric_point *p)
{
	char name[NAME_MAX_LEN];
	struct family *f;
	size_t i;

	for (i = 0; i < *nfams; i++)
		if ((*fams)[i].desc == p->desc)
			return (int)i;
	metric_name(p->desc, name, sizeof(name));
	for (i = 0; i < *nfams; i++)
		if (!strcmp((*fams)[i].name, name))
			/* One TYPE a name: a metric of another type under it is left out whole. */
			return (*fams)[i].type == family_type(p->desc) ? (int)i : -1;
	f = realloc(*fams, (*nfams + 1) * sizeof(*f));
	if (!f)
		return -ENOMEM;
	*fams = f;
	f = &f[*nfams];
	memset(f, 0, sizeof(*f));
	memcpy(f->name, name, sizeof(name));
	f->desc = p->desc;
	f->type = family_type(p->desc);
	return (int)(*nfams)++;
}

static const char *const type_names[] = {
	[FAMILY_GAUGE] = "gauge",
	[FAMILY_COUNTER] = "counter",
	[FAMILY_HISTOGRAM] = "histogram",
};

char *prometheus__render(const struct metrics_batch *b, size_t *len, size_t *dropped)
{
	struct target *targets = NULL;
	struct family *fams = NULL;
	struct buf out = {}, lab = {};
	size_t i, j, nt = 0, nfams = 0, left_out = 0;
	int *fam_of = NULL, *tgt_of = NULL;
	int err = 0;

	fam_of = calloc(b->n ? b->n : 1, sizeof(*fam_of));
	tgt_of = calloc(b->n ? b->n : 1, sizeof(*tgt_of));
	targets = calloc(b->n ? b->n : 1, sizeof(*targets));
	if (!fam_of || !tgt_of || !targets) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (i = 0; i < b->n; i++) {
		const struct metric_point *p = &b->points[i];

		/* Points come grouped by resource: a new one is a new process. */
		if (!nt || targets[nt - 1].res != p->res) {
			err = target_init(&targets[nt], p->res);
			err = err ?: target_unique(&targets[nt], targets, nt);
			if (err)
				goto cleanup;
			nt++;
		}
		tgt_of[i] = (int)nt - 1;
		/* A pull exporter shows cumulative streams: the store is cumulative for it. */
		fam_of[i] = p->delta ? -1 : family_of(&fams, &nfams, p);
		if (fam_of[i] == -ENOMEM) {
			err = -ENOMEM;
			goto cleanup;
		}
		if (fam_of[i] < 0)
			left_out++;
	}
	if (nt)
		render_target_info(&out, targets, nt);
	for (j = 0; j < nfams; j++) {
		if (fams[j].desc->description && *fams[j].desc->description) {
			buf_str(&out, "# HELP ");
			buf_str(&out, fams[j].name);
			buf_str(&out, " ");
			buf_help(&out, fams[j].desc->description);
			buf_str(&out, "\n");
		}
		buf_str(&out, "# TYPE ");
		buf_str(&out, fams[j].name);
		buf_str(&out, " ");
		buf_str(&out, type_names[fams[j].type]);
		buf_str(&out, "\n");
		for (i = 0; i < b->n; i++) {
			if (fam_of[i] != (int)j)
				continue;
			point_labels(&lab, &b->points[i], &targets[tgt_of[i]]);
			render_point(&out, &fams[j], &b->points[i], &lab);
		}
	}
	if (!out.p)
		buf_str(&out, ""); /* an empty store: an empty answer, not NULL */
	if (out.failed || lab.failed)
		err = -ENOMEM;
cleanup:
	for (i = 0; i < nt; i++) {
		free(targets[i].job);
		free(targets[i].instance);
	}
	free(targets);
	free(tgt_of);
	free(fam_of);
	free(fams);
	free(lab.p);
	if (err) {
		free(out.p);
		errno = -err;
		return NULL;
	}
	*len = out.len;
	if (dropped)
		*dropped = left_out;
	return out.p;
}

/* ---- requests ------------------------------------------------------------------------------ */

static bool is_tchar(unsigned char c)
{
	return is_alnum((char)c) || (c && strchr("!#$%&'*+-.^_`|~", c));
}

/*
 * The line starting at POS: its end (without CR LF or LF) in *END and where the next starts in
 * *NEXT. False when its LF has not come yet.
 */
static bool next_line(const char *buf, size_t len, size_t pos, size_t *end, size_t *next)
{
	const char *lf = memchr(buf + pos, '\n', len - pos);

	if (!lf)
		return false;
	*next = (size_t)(lf - buf) + 1;
	*end = (size_t)(lf - buf);
	if (*end > pos && buf[*end - 1] == '\r')
		(*end)--;
	return true;
}

/* Whether the request target T (N bytes) names /metrics: origin form, or absolute form. */
static bool target_is_metrics(const char *t, size_t n)
{
	const char *path = t, *slash;
	size_t plen, skip = 0;

	if (n >= 7 && !strncasecmp(t, "http://", 7))
		skip = 7;
	else if (n >= 8 && !strncasecmp(t, "https://", 8))
		skip = 8;
	if (skip) {
		path = memchr(t + skip, '/', n - skip);
		if (!path)
			return false; /* "http://host": the path is "/" */
	} else if (*t != '/') {
		return false; /* "*", or an authority: not a resource here */
	}
	plen = n - (size_t)(path - t);
	slash = memchr(path, '?', plen);
	if (slash)
		plen = (size_t)(slash - path);
	slash = memchr(path, '#', plen);
	if (slash)
		plen = (size_t)(slash - path);
	return plen == 8 && !memcmp(path, "/metrics", 8);
}

/* The request line in [POS, END): method SP target SP HTTP/1.x, nothing else. */
static int parse_request_line(const char *buf, size_t pos, size_t end,
			      struct prometheus_request *req)
{
	size_t m = pos, t;

	while (m < end && is_tchar((unsigned char)buf[m]))
		m++;
	if (m == pos || m == end || buf[m] != ' ')
		return -EBADMSG;
	t = m + 1;
	while (t < end && buf[t] > ' ' && buf[t] < 0x7f)
		t++;
	if (t == m + 1 || t == end || buf[t] != ' ')
		return -EBADMSG;
	if (end - (t + 1) != 8 || memcmp(buf + t + 1, "HTTP/1.", 7) || buf[t + 8] < '0' ||
	    buf[t + 8] > '9')
		return -EBADMSG;
	if (m - pos == 3 && !memcmp(buf + pos, "GET", 3))
		req->method = PROMETHEUS_GET;
	else if (m - pos == 4 && !memcmp(buf + pos, "HEAD", 4))
		req->method = PROMETHEUS_HEAD;
	else
		req->method = PROMETHEUS_OTHER;
	req->metrics = target_is_metrics(buf + m + 1, t - (m + 1));
	return 0;
}

/* A header field line in [POS, END): a token, a colon, then no control character but HT. */
static int parse_header(const char *buf, size_t pos, size_t end)
{
	size_t i = pos;
	unsigned char c;

	while (i < end && is_tchar((unsigned char)buf[i]))
		i++;
	/* A folded line (starting with SP or HT) is obsolete and refused, as RFC 9112 allows. */
	if (i == pos || i == end || buf[i] != ':')
		return -EBADMSG;
	for (i++; i < end; i++) {
		c = (unsigned char)buf[i];
		if ((c < ' ' && c != '\t') || c == 0x7f)
			return -EBADMSG;
	}
	return 0;
}

int prometheus__parse_request(const char *buf, size_t len, struct prometheus_request *req)
{
	size_t pos = 0, end, next, n = len < PROMETHEUS_REQUEST_MAX ? len : PROMETHEUS_REQUEST_MAX;
	bool first = true;
	int err;

	/* Empty lines before the request line are skipped (RFC 9112, 2.2). */
	for (;;) {
		if (pos < n && buf[pos] == '\n')
			pos++;
		else if (pos + 1 < n && buf[pos] == '\r' && buf[pos + 1] == '\n')
			pos += 2;
		else
			break;
	}
	while (next_line(buf, n, pos, &end, &next)) {
		/* A CR anywhere but before the LF ending a line is a bare CR: refused. */
		if (memchr(buf + pos, '\r', end - pos))
			return -EBADMSG;
		if (first) {
			err = parse_request_line(buf, pos, end, req);
			first = false;
		} else if (end == pos) {
			return (int)next; /* the empty line: the head is whole */
		} else {
			err = parse_header(buf, pos, end);
		}
		if (err)
			return err;
		pos = next;
	}
	/* Not whole within the bound: it never will be. */
	return len >= PROMETHEUS_REQUEST_MAX ? -EMSGSIZE : 0;
}

/* ---- the server ---------------------------------------------------------------------------- */

enum conn_state {
	CONN_FREE,
	CONN_READING,
	CONN_WRITING,
	CONN_LINGERING, /* answered: reading what the client still sends, until it closes */
};

struct conn {
	int fd;
	enum conn_state state;
	uint64_t deadline_ms; /* CLOCK_MONOTONIC */
	bool scrape;	      /* counted as a scrape once sent whole */
	size_t in_len;
	char in[PROMETHEUS_REQUEST_MAX];
	char head[256];
	size_t head_len;
	char *body;
	size_t body_len; /* what is sent of it: 0 for HEAD */
	size_t sent;
};

struct prometheus {
	struct metrics *metrics;
	int timeout_ms;
	int port;
	int listen_fds[MAX_LISTEN];
	size_t nlisten;
	int wake_fd;
	bool stopping; /* atomic */
	bool started;
	pthread_t thread;
	pthread_mutex_t lock; /* stats */
	struct prometheus_stats stats;
	uint64_t accept_pause_until; /* ms, CLOCK_MONOTONIC */
	struct conn conns[MAX_CONNS];
};

static uint64_t mono_ms(void)
{
	return clock__mono_now() / 1000000;
}

static void count(struct prometheus *p, uint64_t *counter)
{
	pthread_mutex_lock(&p->lock);
	(*counter)++;
	pthread_mutex_unlock(&p->lock);
}

static void conn_close(struct conn *c)
{
	close(c->fd);
	free(c->body);
	c->body = NULL;
	c->fd = -1;
	c->state = CONN_FREE;
}

/*
 * Sets C's answer: STATUS with BODY (malloc'ed, taken), sent without its body for a HEAD.
 * EXTRA: more header lines, each ending in CR LF.
 */
static void conn_answer(struct prometheus *p, struct conn *c, int status, const char *reason,
			const char *ctype, const char *extra, char *body, size_t len, bool head)
{
	int n;

	n = snprintf(c->head, sizeof(c->head),
		     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s"
		     "Connection: close\r\n\r\n",
		     status, reason, ctype, len, extra);
	c->head_len = n > 0 && (size_t)n < sizeof(c->head) ? (size_t)n : 0;
	c->body = body;
	c->body_len = head ? 0 : len;
	c->sent = 0;
	c->state = CONN_WRITING;
	c->deadline_ms = mono_ms() + (uint64_t)p->timeout_ms;
	/* Every reason above fits: an empty head is a bug, and closing says so to the client. */
	if (!c->head_len)
		conn_close(c);
}

static void conn_error(struct prometheus *p, struct conn *c, int status, const char *reason,
		       const char *extra, const char *text, bool head)
{
	char *body = strdup(text);

	if (!body) {
		conn_close(c);
		return;
	}
	conn_answer(p, c, status, reason, "text/plain; charset=utf-8", extra, body, strlen(body),
		    head);
}

/* The answer to C's whole request head (RC and REQ from the parser). */
static void conn_respond(struct prometheus *p, struct conn *c, int rc,
			 const struct prometheus_request *req)
{
	bool head = rc > 0 && req->method == PROMETHEUS_HEAD;
	struct metrics_batch *b;
	size_t len, dropped;
	char *text;

	if (rc < 0 || !req->metrics || req->method == PROMETHEUS_OTHER)
		count(p, &p->stats.bad_requests);
	if (rc == -EMSGSIZE)
		return conn_error(p, c, 431, "Request Header Fields Too Large", "",
				  "request head too large\n", false);
	if (rc < 0)
		return conn_error(p, c, 400, "Bad Request", "", "malformed request\n", false);
	if (!req->metrics)
		return conn_error(p, c, 404, "Not Found", "",
				  "not found: metrics are at /metrics\n", head);
	if (req->method == PROMETHEUS_OTHER)
		return conn_error(p, c, 405, "Method Not Allowed", "Allow: GET, HEAD\r\n",
				  "method not allowed: GET or HEAD /metrics\n", false);
	b = metrics__collect(p->metrics, clock__unix_now(), false);
	text = b ? prometheus__render(b, &len, &dropped) : NULL;
	metrics_batch__free(b);
	if (!text) {
		pr_err("cannot answer a Prometheus scrape: %s", strerror(errno));
		count(p, &p->stats.failures);
		return conn_error(p, c, 500, "Internal Server Error", "",
				  "cannot collect metrics: out of memory\n", head);
	}
	if (dropped)
		pr_debug("prometheus: %zu points left out of a scrape (delta, or a metric name "
			 "taken by a metric of another type)",
			 dropped);
	c->scrape = !head; /* a scrape is a GET: a HEAD asks only what one would get */
	conn_answer(p, c, 200, "OK", "text/plain; version=0.0.4; charset=utf-8", "", text, len,
		    head);
}

static void conn_read(struct prometheus *p, struct conn *c)
{
	struct prometheus_request req = {};
	ssize_t n;
	int rc;

	n = recv(c->fd, c->in + c->in_len, sizeof(c->in) - c->in_len, 0);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (n <= 0) {
		conn_close(c); /* gone before asking, or an error: nobody to answer */
		return;
	}
	c->in_len += (size_t)n;
	rc = prometheus__parse_request(c->in, c->in_len, &req);
	if (rc)
		conn_respond(p, c, rc, &req);
}

static void conn_write(struct prometheus *p, struct conn *c)
{
	size_t total = c->head_len + c->body_len;
	struct iovec iov[2];
	struct msghdr mh = { .msg_iov = iov };
	ssize_t n;

	if (c->sent < c->head_len) {
		iov[0] = (struct iovec){ c->head + c->sent, c->head_len - c->sent };
		iov[1] = (struct iovec){ c->body, c->body_len };
		mh.msg_iovlen = c->body_len ? 2 : 1;
	} else {
		iov[0] = (struct iovec){ c->body + (c->sent - c->head_len), total - c->sent };
		mh.msg_iovlen = 1;
	}
	n = sendmsg(c->fd, &mh, MSG_NOSIGNAL);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (n < 0) {
		conn_close(c); /* the client went away (EPIPE, ECONNRESET) */
		return;
	}
	c->sent += (size_t)n;
	/* A slow reader keeps its connection while it makes progress. */
	c->deadline_ms = mono_ms() + (uint64_t)p->timeout_ms;
	if (c->sent < total)
		return;
	if (c->scrape)
		count(p, &p->stats.scrapes);
	free(c->body);
	c->body = NULL;
	/*
	 * Closing with unread bytes (a body after the head) would reset the connection, and the
	 * client could lose the answer still in flight: half-close, and read until it closes.
	 */
	if (shutdown(c->fd, SHUT_WR)) {
		conn_close(c);
		return;
	}
	c->state = CONN_LINGERING;
	c->deadline_ms = mono_ms() + LINGER_MS;
}

static void conn_linger(struct conn *c)
{
	char sink[1024];
	ssize_t n = recv(c->fd, sink, sizeof(sink), 0);

	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (n <= 0)
		conn_close(c);
}

static void accept_all(struct prometheus *p, int lfd)
{
	struct conn *c;
	size_t i;
	int fd;

	for (;;) {
		for (i = 0; i < MAX_CONNS && p->conns[i].state != CONN_FREE; i++)
			;
		if (i == MAX_CONNS)
			return; /* the rest wait in the backlog for a free slot */
		fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM) {
				/* Still pending: poll would wake at once, again and again. */
				pr_debug("prometheus: cannot accept a connection: %s",
					 strerror(errno));
				p->accept_pause_until = mono_ms() + ACCEPT_PAUSE_MS;
			}
			return; /* EAGAIN, or a connection that failed before it was accepted */
		}
		c = &p->conns[i];
		c->fd = fd;
		c->state = CONN_READING;
		c->in_len = 0;
		c->scrape = false;
		c->deadline_ms = mono_ms() + (uint64_t)p->timeout_ms;
	}
}

static void *server_thread(void *arg)
{
	struct pollfd fds[1 + MAX_LISTEN + MAX_CONNS];
	int slot[1 + MAX_LISTEN + MAX_CONNS];
	struct prometheus *p = arg;
	bool accepting, warned = false;
	uint64_t now, wait;
	size_t i, n;
	int timeout;

	for (;;) {
		now = mono_ms();
		timeout = -1;
		n = 0;
		fds[n++] = (struct pollfd){ .fd = p->wake_fd, .events = POLLIN };
		accepting = now >= p->accept_pause_until;
		for (i = 0; accepting && i < p->nlisten; i++)
			fds[n++] = (struct pollfd){ .fd = p->listen_fds[i], .events = POLLIN };
		if (!accepting)
			timeout = (int)(p->accept_pause_until - now);
		for (i = 0; i < MAX_CONNS; i++) {
			struct conn *c = &p->conns[i];

			if (c->state == CONN_FREE)
				continue;
			slot[n] = (int)i;
			fds[n++] = (struct pollfd){ .fd = c->fd,
						    .events = c->state == CONN_WRITING ? POLLOUT
										       : POLLIN };
			wait = c->deadline_ms > now ? c->deadline_ms - now : 0;
			if (timeout < 0 || wait < (uint64_t)timeout)
				timeout = (int)wait;
		}
		if (poll(fds, n, timeout) < 0) {
			if (errno == EINTR)
				continue;
			/* ENOMEM: the kernel's, for a moment; the others would be a bug here. */
			if (!warned)
				pr_warn("prometheus: poll failed: %s", strerror(errno));
			warned = true;
			usleep(ACCEPT_PAUSE_MS * 1000);
			continue;
		}
		if (__atomic_load_n(&p->stopping, __ATOMIC_ACQUIRE))
			break;
		for (i = 1; i < n; i++) {
			struct conn *c;

			if (!fds[i].revents)
				continue;
			if (i <= (accepting ? p->nlisten : 0)) {
				accept_all(p, fds[i].fd);
				continue;
			}
			c = &p->conns[slot[i]];
			if (c->state == CONN_READING)
				conn_read(p, c);
			else if (c->state == CONN_WRITING)
				conn_write(p, c);
			else if (c->state == CONN_LINGERING)
				conn_linger(c);
		}
		now = mono_ms();
		for (i = 0; i < MAX_CONNS; i++) {
			struct conn *c = &p->conns[i];

			if (c->state == CONN_FREE || c->deadline_ms > now)
				continue;
			if (c->state != CONN_LINGERING)
				count(p, &p->stats.timeouts);
			conn_close(c);
		}
	}
	for (i = 0; i < MAX_CONNS; i++)
		if (p->conns[i].state != CONN_FREE)
			conn_close(&p->conns[i]);
	return NULL;
}

/* ADDR as "127.0.0.1:9464" or "[::1]:9464", for messages. */
static void addr_text(const struct sockaddr *addr, socklen_t len, char *out, size_t cap)
{
	char host[NI_MAXHOST], serv[NI_MAXSERV];

	if (getnameinfo(addr, len, host, sizeof(host), serv, sizeof(serv),
			NI_NUMERICHOST | NI_NUMERICSERV)) {
		snprintf(out, cap, "(an address of family %d)", addr->sa_family);
		return;
	}
	snprintf(out, cap, addr->sa_family == AF_INET6 ? "[%s]:%s" : "%s:%s", host, serv);
}

static void set_port(struct sockaddr *addr, int port)
{
	if (addr->sa_family == AF_INET)
		((struct sockaddr_in *)addr)->sin_port = htons((uint16_t)port);
	else if (addr->sa_family == AF_INET6)
		((struct sockaddr_in6 *)addr)->sin6_port = htons((uint16_t)port);
}

/* A listening socket on AI's address; BOTH: IPv4 is listened on apart, so IPv6 only. */
static int listen_on(const struct addrinfo *ai, bool both)
{
	int fd, one = 1, err;

	fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
	if (fd < 0)
		return -errno;
	/* A restarted gospan must not wait out the last one's TIME_WAIT connections. */
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    (ai->ai_family == AF_INET6 && both &&
	     setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one))) ||
	    bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 64)) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

/*
 * Listens on every address HOST has: "localhost" is 127.0.0.1 and ::1, and a scraper may ask for
 * either. With port 0 the first address gets a port from the kernel and the others the same.
 * An address of a family this host does not have is passed over; any other failure is an error.
 */
static int listen_all(struct prometheus *p, const struct prometheus_opts *o)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
	const char *host = o->host && *o->host ? o->host : NULL;
	const char *origin = o->origin ? o->origin : "the Prometheus exporter's settings";
	struct addrinfo *res, *ai, *prev;
	char port[16], shown[NI_MAXHOST + NI_MAXSERV + 4] = "";
	bool v4 = false, v6 = false, dup;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int rc, fd, err = -EADDRNOTAVAIL;

	snprintf(port, sizeof(port), "%d", o->port);
	rc = getaddrinfo(host, port, &hints, &res);
	if (rc) {
		pr_err("cannot serve metrics for Prometheus on '%s' port %d (%s): cannot resolve "
		       "'%s': %s",
		       host ? host : "*", o->port, origin, host ? host : "*",
		       rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(rc));
		return rc == EAI_SYSTEM && errno ? -errno : -EADDRNOTAVAIL;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		v4 |= ai->ai_family == AF_INET;
		v6 |= ai->ai_family == AF_INET6;
	}
	for (ai = res; ai && p->nlisten < MAX_LISTEN; ai = ai->ai_next) {
		if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6)
			continue;
		if (p->port)
			set_port(ai->ai_addr, p->port);
		/* /etc/hosts may list an address twice ("localhost" on two lines). */
		for (dup = false, prev = res; prev != ai && !dup; prev = prev->ai_next)
			dup = prev->ai_addrlen == ai->ai_addrlen &&
			      !memcmp(prev->ai_addr, ai->ai_addr, ai->ai_addrlen);
		if (dup)
			continue;
		addr_text(ai->ai_addr, ai->ai_addrlen, shown, sizeof(shown));
		fd = listen_on(ai, v4 && v6);
		if (fd == -EADDRNOTAVAIL || fd == -EAFNOSUPPORT) {
			pr_debug("prometheus: not listening on %s: %s", shown, strerror(-fd));
			err = fd;
			continue;
		}
		if (fd < 0) {
			err = fd;
			goto fail;
		}
		p->listen_fds[p->nlisten++] = fd;
		if (p->port)
			continue;
		if (getsockname(fd, (struct sockaddr *)&ss, &sl)) {
			err = -errno;
			goto fail;
		}
		p->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
							 : ((struct sockaddr_in *)&ss)->sin_port);
	}
	if (p->nlisten) {
		freeaddrinfo(res);
		return 0;
	}
fail:
	pr_err("cannot serve metrics for Prometheus on %s (%s): %s", shown[0] ? shown : port,
	       origin, strerror(-err));
	freeaddrinfo(res);
	return err;
}

struct prometheus *prometheus__new(const struct prometheus_opts *opts)
{
	struct prometheus *p;
	sigset_t all, old;
	size_t i;
	int err;

	if (!opts->metrics || opts->port < 0 || opts->port > 65535 || opts->timeout_ms < 0) {
		errno = EINVAL;
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->metrics = opts->metrics;
	p->timeout_ms = opts->timeout_ms ? opts->timeout_ms : TIMEOUT_MS_DEFAULT;
	p->port = opts->port;
	p->wake_fd = -1;
	for (i = 0; i < MAX_CONNS; i++)
		p->conns[i].fd = -1;
	err = pthread_mutex_init(&p->lock, NULL);
	if (err) {
		free(p);
		errno = err;
		return NULL;
	}
	err = listen_all(p, opts);
	if (err)
		goto fail;
	p->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (p->wake_fd < 0) {
		err = -errno;
		pr_err("cannot start the Prometheus exporter: eventfd: %s", strerror(-err));
		goto fail;
	}
	/* As the other exporters' threads: the stop signals are the main thread's. */
	sigfillset(&all);
	err = -pthread_sigmask(SIG_BLOCK, &all, &old);
	if (!err) {
		err = -pthread_create(&p->thread, NULL, server_thread, p);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	if (err) {
		pr_err("cannot start the Prometheus exporter's thread: %s", strerror(-err));
		goto fail;
	}
	p->started = true;
	return p;
fail:
	prometheus__free(p);
	errno = -err;
	return NULL;
}

int prometheus__port(const struct prometheus *p)
{
	return p->port;
}

void prometheus__stats(struct prometheus *p, struct prometheus_stats *out)
{
	pthread_mutex_lock(&p->lock);
	*out = p->stats;
	pthread_mutex_unlock(&p->lock);
}

void prometheus__free(struct prometheus *p)
{
	uint64_t one = 1;
	size_t i;

	if (!p)
		return;
	if (p->started) {
		__atomic_store_n(&p->stopping, true, __ATOMIC_RELEASE);
		/* An eventfd write of 1 fails only past 2^64 - 2: never with one writer. */
		if (write(p->wake_fd, &one, sizeof(one)) != sizeof(one))
			pr_warn("prometheus: cannot wake the server's thread: %s", strerror(errno));
		pthread_join(p->thread, NULL);
	}
	for (i = 0; i < p->nlisten; i++)
		close(p->listen_fds[i]);
	if (p->wake_fd >= 0)
		close(p->wake_fd);
	pthread_mutex_destroy(&p->lock);
	free(p);
}
