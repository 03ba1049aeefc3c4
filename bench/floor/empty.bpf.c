// SPDX-License-Identifier: GPL-2.0
/*
 * The cost floor of gospan's probes: programs that do nothing, attached by bench/floor at exactly
 * the sites gospan attaches to. What a request pays with these is the price of the uprobe traps
 * alone; what gospan adds beyond it is the price of its own work. One program per role, as in
 * bpf/http.bpf.c, so the kernel's run counters say which site fired.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

SEC("uprobe")
int floor_serve_entry(void *ctx)
{
	return 0;
}

SEC("uprobe")
int floor_serve_return(void *ctx)
{
	return 0;
}

SEC("uprobe")
int floor_panic(void *ctx)
{
	return 0;
}

SEC("uprobe")
int floor_client_entry(void *ctx)
{
	return 0;
}

SEC("uprobe")
int floor_client_return(void *ctx)
{
	return 0;
}

SEC("uprobe")
int floor_inject(void *ctx)
{
	return 0;
}

SEC("uprobe")
int floor_route(void *ctx)
{
	return 0;
}

SEC("uprobe")
int floor_goroutine(void *ctx)
{
	return 0;
}
