// SPDX-License-Identifier: MIT
/*
 * bench/feed: drives a running gospan's user-space half faster than uprobes can. A BPF program
 * (feed.bpf.c), run by BPF_PROG_TEST_RUN, writes ServeHTTP start and end records into gospan's
 * own ring buffer; gospan reads them, builds spans and exports them as it does any others. The
 * records name a process gospan traces, so they are spans of that process to gospan: a request
 * of the example service (GET /users/42, route /users/{id}, status 200), each with its own
 * goroutine id, times and ids.
 *
 *   feed --ring MAP_ID --pid TARGET [--rate SPANS_PER_S] [--seconds S]
 *
 * MAP_ID is gospan's ring buffer, its map named "events" (bench/run finds it among the maps
 * gospan's process holds); TARGET is a process gospan traces (its first target: attach cookie
 * 0). --rate 0 is flat out.
 * Prints "feed: wrote N spans in T s: R/s, ring buffer full F times" at the end. A full ring
 * buffer is gospan falling behind: the feed then waits a millisecond instead of counting on.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>

#include "analysis/embed.h"
#include "feed.h"
#include "feed.skel.h"
#include "analysis/offsets.h"
#include "capture/process.h"
#include "analysis/target.h"

/* A run writes at most this many spans: the ring buffer (2 MiB) holds about 1,200. */
#define CHUNK 256

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* An fd of ring buffer map ID; negative errno when there is none, or it is not a ring buffer. */
static int ring_buffer(unsigned int id)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	int fd, err;

	fd = bpf_map_get_fd_by_id(id);
	if (fd < 0)
		return -errno;
	err = bpf_obj_get_info_by_fd(fd, &info, &len);
	if (err || info.type != BPF_MAP_TYPE_RINGBUF) {
		close(fd);
		return err ? -errno : -EINVAL;
	}
	return fd;
}

static void set_str(char *dst, size_t cap, __u32 *len, const char *s)
{
	*len = strlen(s);
	memcpy(dst, s, *len < cap ? *len : cap);
}

/* The records' fixed part: what the example service's probes record for GET /users/42. */
static int fill_template(struct feed_bpf *skel, pid_t pid)
{
	struct feed_template t = {};
	struct offsets *tables;
	struct target *tg;
	char path[64];
	__u32 zero = 0;
	int err;

	/* The writer's itab, as the return probe reads it: what says the status is meaningful. */
	tables = offsets__parse(gospan_offsets_json, gospan_offsets_json_end - gospan_offsets_json);
	if (!tables)
		return -errno;
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	/* No grpc-go table: the template is a ServeHTTP span. */
	tg = target__analyse(path, NULL, tables, NULL, true);
	if (!tg) {
		err = -errno;
		offsets__free(tables);
		return err;
	}
	if (tg->response_itab)
		t.end.rw_itab = tg->response_itab + process__load_bias(pid, tg->link_base);
	target__free(tg);
	offsets__free(tables);

	t.start.hdr.type = EVENT_HTTP_SERVER_START;
	t.start.hdr.pid = pid;
	t.start.ids.flags = 1; /* sampled */
	t.start.content_length = -1;
	set_str(t.start.method, MAX_METHOD_LEN, &t.start.method_len, "GET");
	set_str(t.start.path, MAX_PATH_LEN, &t.start.path_len, "/users/42");
	set_str(t.start.host, MAX_HOST_LEN, &t.start.host_len, "127.0.0.1:8080");
	set_str(t.start.remote_addr, MAX_ADDR_LEN, &t.start.remote_addr_len, "127.0.0.1:40112");
	set_str(t.start.proto, MAX_PROTO_LEN, &t.start.proto_len, "HTTP/1.1");
	t.end.hdr.type = EVENT_HTTP_SERVER_END;
	t.end.hdr.pid = pid;
	t.end.status = 200;
	t.end.cpu_ns = ~0ULL;
	set_str(t.end.pattern, MAX_PATTERN_LEN, &t.end.pattern_len, "GET /users/{id}");
	err = bpf_map__update_elem(skel->maps.template, &zero, sizeof(zero), &t, sizeof(t), 0);
	return err;
}

static void usage(FILE *fp)
{
	fprintf(fp, "usage: feed --ring MAP_ID --pid TARGET [--rate SPANS_PER_S] [--seconds S]\n");
}

static long number(const char *s, long max)
{
	char *end;
	long v = strtol(s, &end, 10);

	return *end || v < 0 || v > max ? -1 : v;
}

int main(int argc, char **argv)
{
	long ring_id = 0, pid = 0, rate = 0, seconds = 5;
	unsigned long long written = 0, full = 0;
	struct feed_bpf *skel = NULL;
	double t0, t;
	int i, ring = -1, prog, err = 0;

	for (i = 1; i + 1 < argc; i += 2) {
		long *v = !strcmp(argv[i], "--ring")	? &ring_id :
			  !strcmp(argv[i], "--pid")	? &pid :
			  !strcmp(argv[i], "--rate")	? &rate :
			  !strcmp(argv[i], "--seconds") ? &seconds :
							  NULL;
		if (!v || (*v = number(argv[i + 1], INT_MAX)) < 0) {
			usage(stderr);
			return 2;
		}
	}
	if (i != argc || !ring_id || !pid) {
		usage(stderr);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);

	ring = ring_buffer((unsigned int)ring_id);
	if (ring < 0) {
		fprintf(stderr, "feed: cannot use map %ld as the ring buffer: %s\n", ring_id,
			strerror(-ring));
		return 1;
	}
	skel = feed_bpf__open();
	if (!skel) {
		err = -errno;
		fprintf(stderr, "feed: cannot open the BPF object: %s\n", strerror(-err));
		goto cleanup;
	}
	err = bpf_map__reuse_fd(skel->maps.events, ring);
	if (!err) {
		/* gospan's own threshold: a quarter of the buffer (exporter/capture/probes.c). */
		skel->rodata->wake_threshold = bpf_map__max_entries(skel->maps.events) / 4;
		err = feed_bpf__load(skel);
	}
	if (err) {
		fprintf(stderr, "feed: cannot load the BPF program: %s\n", strerror(-err));
		goto cleanup;
	}
	err = fill_template(skel, (pid_t)pid);
	if (err) {
		fprintf(stderr, "feed: cannot analyse process %ld: %s\n", pid, strerror(-err));
		goto cleanup;
	}
	prog = bpf_program__fd(skel->progs.feed);
	printf("feed: ready: ring buffer %ld, target %ld, %ld spans/s for %ld s\n", ring_id, pid,
	       rate, seconds);

	t0 = now_s();
	while ((t = now_s() - t0) < seconds) {
		/* Paced: as many as the rate allows by now, a chunk at a time. */
		unsigned long long due = rate ? (unsigned long long)(t * rate) : written + CHUNK;
		struct feed_args a = {};
		LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = &a, .ctx_size_in = sizeof(a));

		if (due <= written) {
			usleep(200);
			continue;
		}
		a.seq = written;
		a.count = due - written < CHUNK ? due - written : CHUNK;
		err = bpf_prog_test_run_opts(prog, &opts);
		if (err || opts.retval) {
			fprintf(stderr, "feed: the test run failed: %s\n",
				err ? strerror(-err) : "no template");
			err = err ?: -EINVAL;
			goto cleanup;
		}
		written += a.written;
		full += a.full;
		if (a.full)
			usleep(1000);
	}
	t = now_s() - t0;
	printf("feed: wrote %llu spans in %.3f s: %.0f/s, ring buffer full %llu times\n", written, t,
	       written / t, full);
cleanup:
	feed_bpf__destroy(skel);
	if (ring >= 0)
		close(ring);
	return err ? 1 : 0;
}
