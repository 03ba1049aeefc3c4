// SPDX-License-Identifier: MIT
/*
 * Unit tests for capture/probes.c against the real BPF object, loaded (root or CAP_BPF +
 * CAP_PERFMON; skipped with the reason elsewhere). Linked with -Wl,--wrap=bpf_map_lookup_elem
 * (Makefile): a lookup can be made to let "BPF" rewrite an entry right after it, the moment a
 * goroutine's probe may run while user space holds a copy of the entry.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <bpf/bpf.h>

#include "capture/probes.h"
#include "core/log.h"
#include "events.h"
#include "helpers.h"

int __real_bpf_map_lookup_elem(int fd, const void *key, void *value);

/* When a lookup of RACE_FD is made, RACE_STATE is written into the entry right after it, once. */
static int race_fd = -1;
static struct goroutine_key race_key;
static struct goroutine_state race_state;

int __wrap_bpf_map_lookup_elem(int fd, const void *key, void *value)
{
	int err = __real_bpf_map_lookup_elem(fd, key, value);

	if (fd == race_fd && !memcmp(key, &race_key, sizeof(race_key))) {
		race_fd = -1;
		assert_int_equal(bpf_map_update_elem(fd, &race_key, &race_state, BPF_ANY), 0);
	}
	return err;
}

static int on_record(void *ctx, const void *data, size_t size)
{
	(void)ctx;
	(void)data;
	(void)size;
	return 0;
}

/* The fd of this process's BPF map NAME, or -1. */
static int map_fd(const char *name)
{
	struct bpf_map_info info;
	__u32 len = sizeof(info);
	struct dirent *d;
	DIR *dir = opendir("/proc/self/fd");
	int fd = -1;

	assert_non_null(dir);
	while (fd < 0 && (d = readdir(dir))) {
		int n = atoi(d->d_name);

		memset(&info, 0, sizeof(info));
		len = sizeof(info);
		if (n > 2 && !bpf_obj_get_info_by_fd(n, &info, &len) && !strcmp(info.name, name))
			fd = n;
	}
	closedir(dir);
	return fd;
}

static int setup(void **state)
{
	struct probes *p;

	log_set_level(TEST_QUIET_LEVEL);
	if (geteuid()) {
		*state = NULL;
		return 0;
	}
	p = probes__load(on_record, NULL, false);
	*state = p;
	return 0;
}

static int teardown(void **state)
{
	probes__destroy(*state);
	return 0;
}

static struct span_ctx span(uint8_t id)
{
	struct span_ctx sc = { .live = 1, .flags = 1 };

	memset(sc.trace_id, id, sizeof(sc.trace_id));
	memset(sc.span_id, id, sizeof(sc.span_id));
	return sc;
}

/*
 * A request panicked (start 100) and user space ends it while the goroutine, which something
 * above ServeHTTP kept alive, starts its next request (start 200, span 3): that request's state
 * must survive, whatever the interleaving. The goroutine's probe is made to run right after
 * anything probes__forget reads of the entry, or after it returns. HAS_PREV: the panicked request
 * was served inside a function span (1), to be gone back to; without one, the entry had nothing
 * left to keep.
 */
static void forget_keeps_a_call_begun_meanwhile(struct probes *p, uint32_t has_prev)
{
	struct goroutine_key key = { .pid = 4242, .goid = 7 + has_prev };
	struct goroutine_state gs = {}, now;
	uint64_t start = 0;
	int fd, ffd;

	fd = map_fd("goroutines");
	assert_true(fd >= 0);
	gs.active = span(2);
	gs.server.start_ns = 100;
	gs.server.req = 0x1000;
	gs.server.panicked = 1;
	gs.server.has_prev = has_prev;
	if (has_prev)
		gs.server.prev = span(1);
	assert_int_equal(bpf_map_update_elem(fd, &key, &gs, BPF_ANY), 0);

	/* What serve_http_entry writes for the next request, as BPF would, in place. */
	race_state = gs;
	race_state.active = span(3);
	race_state.server.start_ns = 200;
	race_state.server.req = 0x2000;
	race_state.server.panicked = 0;
	race_state.server.has_prev = 0;
	race_key = key;
	race_fd = fd;

	probes__forget(p, key.pid, key.goid, 100);
	if (race_fd >= 0) {
		/* Nothing was read: the request begins as probes__forget returns. */
		race_fd = -1;
		assert_int_equal(bpf_map_update_elem(fd, &key, &race_state, BPF_ANY), 0);
	}

	assert_int_equal(__real_bpf_map_lookup_elem(fd, &key, &now), 0);
	assert_int_equal(now.server.start_ns, 200);
	assert_int_equal(now.server.req, 0x2000);
	assert_memory_equal(&now.active, &race_state.active, sizeof(now.active));

	/* Ending call 100 is left to the goroutine's own probes (bpf/include/probe.bpf.h). */
	ffd = map_fd("forgotten");
	assert_true(ffd >= 0);
	assert_int_equal(__real_bpf_map_lookup_elem(ffd, &key, &start), 0);
	assert_int_equal(start, 100);
}

static void test_probes__forget_keeps_a_call_begun_meanwhile(void **state)
{
	if (!*state)
		TEST_SKIP("cannot load the BPF object (%s): root, or CAP_BPF and CAP_PERFMON, needed",
			  geteuid() ? "not root" : "load failed");
	forget_keeps_a_call_begun_meanwhile(*state, 1);
	forget_keeps_a_call_begun_meanwhile(*state, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_probes__forget_keeps_a_call_begun_meanwhile),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
