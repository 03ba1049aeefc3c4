// SPDX-License-Identifier: GPL-2.0
/*
 * What single BPF operations cost in a uprobe on this machine, to explain gospan's BPF time per
 * hit: bench/floor --ops attaches these next to an empty program at ServeHTTP's entry and RETs
 * (several programs on one uprobe share its trap), and the kernel's run-time counters of each
 * program, minus the empty one's, give the cost of what it does. Each program does one kind of
 * operation gospan's programs do, a fixed number of times.
 */
#include <linux/bpf.h>
#include <asm/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

/* Operations per run of the read program: user memory reads of one word. */
#define READS 8

struct value {
	__u64 words[6]; /* the size of gospan's in-flight record */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, struct value);
} lru SEC(".maps");

/* Read by bench/floor every 50 ms, as gospan reads its own. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);
} ring SEC(".maps");

/* Reservations that failed: a run that has any measured a cheaper path than gospan's. */
__u64 ring_full;

SEC("uprobe")
int ops_empty(void *ctx)
{
	return 0;
}

SEC("uprobe")
int ops_read_words(struct pt_regs *ctx)
{
	const char *sp = (const char *)PT_REGS_SP(ctx);
	__u64 v, sum = 0;
	int i;

	for (i = 0; i < READS; i++) {
		if (bpf_probe_read_user(&v, sizeof(v), sp + i * sizeof(v)))
			return 0;
		sum += v;
	}
	return sum == 1; /* keeps the reads */
}

/* Keyed by thread, as the entry and the RET of one call run on the same thread when unloaded. */
SEC("uprobe")
int ops_map_update(void *ctx)
{
	__u64 key = bpf_get_current_pid_tgid();
	struct value v = {.words = {1}};

	bpf_map_update_elem(&lru, &key, &v, BPF_ANY);
	return 0;
}

SEC("uprobe")
int ops_map_delete(void *ctx)
{
	__u64 key = bpf_get_current_pid_tgid();

	bpf_map_delete_elem(&lru, &key);
	return 0;
}

SEC("uprobe")
int ops_ringbuf(void *ctx)
{
	__u8 *e = bpf_ringbuf_reserve(&ring, 1024, 0);

	if (!e) {
		__sync_fetch_and_add(&ring_full, 1);
		return 0;
	}
	e[0] = 1;
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	return 0;
}
