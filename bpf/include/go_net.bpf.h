/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Go interface values told apart by their dynamic type without symbols, and a *net.TCPAddr read
 * out of a net.Addr: what grpc.bpf.c and fasthttp.bpf.c both read. A type is known by a method of
 * its itab, whose link-time address user space found in the binary's function table.
 */
#ifndef GOSPAN_GO_NET_BPF_H
#define GOSPAN_GO_NET_BPF_H

#include <stdbool.h>
#include <linux/types.h>
#include <bpf/bpf_helpers.h>

#include "arch.bpf.h"
#include "events.h"
#include "go_types.bpf.h"

/*
 * The load bias of the process this probe fires in: the probe's own address less the link-time
 * address user space placed it at (AT, 0 when it could not say). 0 for executables that do not
 * move.
 */
static __always_inline __u64 load_bias(GO_REGS *ctx, __u64 at)
{
	return at ? GO_IP(ctx) - at : 0;
}

/* Whether the interface whose itab is ITAB has a dynamic type whose method I is FN + BIAS. */
static __always_inline bool itab_is(__u64 itab, __u32 i, __u64 fn, __u64 bias)
{
	return itab && fn && go_read_word((void *)itab, ITAB_FUN0 + 8 * i) == fn + bias;
}

/* The endpoint of the net.Addr interface at ADDR, when it is a *net.TCPAddr. */
static __always_inline void read_endpoint(const struct target_config *cfg, const void *addr,
					  __u64 bias, struct net_endpoint *ep)
{
	struct go_iface a;
	struct go_string ip;

	ep->ip_len = 0;
	ep->port = 0;
	/* net.Addr's methods: Network, String. */
	if (bpf_probe_read_user(&a, sizeof(a), addr) || !a.data ||
	    !itab_is(a.itab, 0, cfg->fn_tcpaddr_network, bias) ||
	    bpf_probe_read_user(&ip, sizeof(ip), (void *)(a.data + cfg->tcpaddr_ip)))
		return;
	if (ip.len == 4 && !bpf_probe_read_user(ep->ip, 4, ip.ptr))
		ep->ip_len = 4;
	else if (ip.len == 16 && !bpf_probe_read_user(ep->ip, 16, ip.ptr))
		ep->ip_len = 16;
	ep->port = (__u16)go_read_word((void *)a.data, cfg->tcpaddr_port);
}

/*
 * The peer of the net.Conn interface at CONN (NULL: none) into EP, when it is a *net.TCPConn (its
 * Close is the itab's first method): its netFD's raddr, a *net.TCPAddr. BIAS: the process's load
 * bias. Another conn (TLS, a listener's own wrapper) leaves EP empty.
 */
static __always_inline void read_conn_peer(const struct target_config *cfg, const void *conn,
					   __u64 bias, struct net_endpoint *ep)
{
	struct go_iface c;
	__u64 fd;

	ep->ip_len = 0;
	ep->port = 0;
	if (!conn || cfg->conn_fd < 0 || cfg->netfd_raddr < 0 ||
	    bpf_probe_read_user(&c, sizeof(c), conn) || !c.data ||
	    !itab_is(c.itab, 0, cfg->fn_tcpconn_close, bias))
		return;
	fd = go_read_word((void *)c.data, cfg->conn_fd);
	if (fd)
		read_endpoint(cfg, (void *)(fd + cfg->netfd_raddr), bias, ep);
}

#endif
