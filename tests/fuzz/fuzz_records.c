// SPDX-License-Identifier: MIT
/*
 * Fuzzes records.c: ring-buffer records (the events.h structs) turned into spans. The input is a
 * sequence of records, each a 2-byte little-endian length and that many bytes, handed one by
 * one to records__handle as the ring buffer would; a length of 0 is a tick of the timer instead
 * (panic grace, calls whose end was lost). Every span that comes out is read whole, as the
 * exporter would.
 *
 * The record's pid decides which process the call belongs to, and records.c asks the kernel
 * whether it still runs: pids are mapped to this process (odd) or to pids above pid_max (even),
 * so a run does not depend on what else runs on the machine.
 */
#include "core/clock.h"
#include "core/config.h"
#include "events.h"
#include "fuzz.h"
#include "analysis/gobin.h"
#include "export/otlp.h"
#include "capture/process.h"
#include "capture/records.h"
#include "model/span.h"
#include "analysis/target.h"

#define COOKIE_PLAIN 0
#define COOKIE_ITAB 1
#define MAX_TICKS 4

static struct config cfg;
static struct target plain, with_itab;
static struct gobin gobin = {.go_version = "go1.22.12", .major = 1, .minor = 22, .patch = 12};
/* --functions: one function with an argument of each kind records.c formats, one without. */
static struct traced_func funcs[] = {
    {.symbol = "example.com/shop/cart.(*Cart).Add",
     .name = "cart.(*Cart).Add",
     .cfg = {.nargs = MAX_FUNC_ARGS},
     .args = {{"qty", GO_TYPE_INT, 4},
	      {"sku", GO_TYPE_STRING, 16},
	      {"price", GO_TYPE_FLOAT, 8},
	      {"gift", GO_TYPE_BOOL, 1}}},
    {.symbol = "main.work",
     .name = "main.work",
     .cfg = {.nargs = 2},
     .args = {{"n", GO_TYPE_UINT, 8}, {"f", GO_TYPE_FLOAT, 4}}},
};
static const struct clock_sync clock_sync = {.offset_ns = 1700000000000000000LL};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char *args[] = {"gospan", NULL};
	char *env[] = {"OTEL_SERVICE_NAME=fuzz",
		       "OTEL_RESOURCE_ATTRIBUTES=deployment.environment=fuzz", NULL};

	(void)argc;
	(void)argv;
	fuzz_init_log();
	if (config__parse(&cfg, 1, args, env))
		exit(1);
	plain.exe_name = "server";
	plain.gobin = &gobin;
	plain.funcs = funcs;
	plain.nfuncs = sizeof(funcs) / sizeof(funcs[0]);
	plain.func_base = 1;
	with_itab = plain;
	with_itab.response_itab = 0x7a1e40;
	return 0;
}

/* Whether S is valid UTF-8 (RFC 3629: no overlong forms, no surrogates, at most U+10FFFF). */
static bool valid_utf8(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		unsigned int c = *p, n, cp, i;

		if (c < 0x80) {
			p++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			n = 1, cp = c & 0x1f;
		else if (c >= 0xe0 && c <= 0xef)
			n = 2, cp = c & 0x0f;
		else if (c >= 0xf0 && c <= 0xf4)
			n = 3, cp = c & 0x07;
		else
			return false;
		for (i = 1; i <= n; i++) {
			if ((p[i] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (p[i] & 0x3f);
		}
		if ((n == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
		    (n == 3 && (cp < 0x10000 || cp > 0x10ffff)))
			return false;
		p += n + 1;
	}
	return true;
}

/*
 * Reads a finished span whole, as the exporter does: every string must be valid UTF-8 (OTLP
 * requires it, and records.c promises it for what the target sent), and it must encode.
 */
static void submit(void *ctx, struct span *s)
{
	size_t i, len, *n = ctx;
	uint8_t *pb;
	char *json;

	if (!s->name || !valid_utf8(s->name)) {
		fprintf(stderr, "fuzz: span name %s\n", s->name ? "is not valid UTF-8" : "missing");
		for (i = 0; s->name && s->name[i]; i++)
			fprintf(stderr, "%02x", (unsigned char)s->name[i]);
		fprintf(stderr, "\n");
		abort();
	}
	for (i = 0; i < s->nattrs; i++) {
		if (!valid_utf8(s->attrs[i].key) ||
		    (s->attrs[i].type == ATTR_STRING && !valid_utf8(s->attrs[i].s))) {
			fprintf(stderr, "fuzz: attribute '%s' is not valid UTF-8\n",
				s->attrs[i].key);
			abort();
		}
	}
	if ((s->status_msg && !valid_utf8(s->status_msg)) ||
	    (s->trace_state && !valid_utf8(s->trace_state))) {
		fprintf(stderr, "fuzz: status message or tracestate is not valid UTF-8\n");
		abort();
	}
	if (!otlp__encode(&s, 1, &pb, &len)) {
		*n += len;
		free(pb);
	}
	if (!otlp__encode_json(&s, 1, &json, &len)) {
		*n += len;
		free(json);
	}
	span__free(s);
}

static void forget(void *ctx, uint32_t pid, uint64_t goid, uint64_t start_ns)
{
	(void)ctx;
	(void)pid;
	(void)goid;
	(void)start_ns;
}

/* Whether BPF still holds a call: for odd goroutines, as if they were long; even ones, lost. */
static int in_flight(void *ctx, uint32_t type, uint32_t pid, uint64_t goid, uint64_t start_ns)
{
	(void)ctx;
	(void)type;
	(void)pid;
	(void)start_ns;
	return (int)(goid & 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct process_table *pt = process_table__new(&cfg);
	struct records_stats st;
	struct records *r = NULL;
	size_t pos = 0, seen = 0;
	uint64_t now = 0;
	int ticks = 0;

	if (!pt || process_table__add_target(pt, COOKIE_PLAIN, &plain) ||
	    process_table__add_target(pt, COOKIE_ITAB, &with_itab))
		goto cleanup;
	r = records__new(&(struct records_opts){
	    .clock = &clock_sync,
	    .processes = pt,
	    .submit = submit,
	    .forget = forget,
	    .in_flight = in_flight,
	    .ctx = &seen,
	    .panic_grace_ns = 1000,
	    .max_pending = 8,
	    .max_pending_age_ns = 1500, /* a few ticks */
	});
	if (!r)
		goto cleanup;
	while (size - pos >= 2) {
		size_t len = data[pos] | (size_t)data[pos + 1] << 8;
		uint8_t *rec;

		pos += 2;
		if (!len) {
			/* A tick walks the whole pending table: a few per input say all there is.
			 */
			now += 600;
			if (ticks++ < MAX_TICKS)
				records__tick(r, now);
			continue;
		}
		if (len > size - pos)
			len = size - pos;
		rec = fuzz_dup(data + pos, len);
		if (!rec)
			break;
		pos += len;
		if (len >= sizeof(struct record_header)) {
			struct record_header *h = (struct record_header *)rec;

			h->pid =
			    h->pid & 1 ? (uint32_t)getpid() : 0x7ffffff0u | (h->pid >> 1 & 0xe);
			if (h->start_ns > now)
				now = h->start_ns;
		}
		records__handle(r, rec, len);
		free(rec);
		records__stats(r, &st);
		if (st.pending > 8)
			abort(); /* the pending bound holds */
	}
	records__stats(r, &st);
	records__flush(r);
	records__stats(r, &st);
	if (st.pending)
		abort(); /* flush leaves nothing in flight */
cleanup:
	records__free(r);
	process_table__free(pt);
	return 0;
}
