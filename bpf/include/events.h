/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The one contract between the BPF programs and user space: ring-buffer records, the per-target
 * configuration map, and drop counters. Fixed-width types only, no pointers that user space would
 * dereference, every bounded string next to its bound and its real length.
 */
#ifndef GOSPAN_EVENTS_H
#define GOSPAN_EVENTS_H

#include <linux/types.h>

/* String bounds. Path gets the most room: it is what people search by. */
#define MAX_METHOD_LEN 16
#define MAX_PATH_LEN 256
#define MAX_HOST_LEN 128
#define MAX_ADDR_LEN 64
#define MAX_PROTO_LEN 16
#define MAX_PATTERN_LEN 128

/* How many targets (binaries) one gospan can hold at once; index = attach cookie. */
#define MAX_TARGETS 64

enum event_type {
	EVENT_HTTP_SERVER_START = 1,
	EVENT_HTTP_SERVER_END = 2,
	EVENT_GO_PANIC = 3,
};

/* Why a record was not delivered; index into the drops map. */
enum drop_reason {
	DROP_RINGBUF_FULL = 0, /* bpf_ringbuf_reserve() failed */
	DROP_INFLIGHT_FULL,    /* in-flight map update failed */
	DROP_NO_CONFIG,	       /* probe fired with a cookie that has no target config */
	DROP__COUNT,
};

/*
 * Offsets for one target, filled by user space from the offset tables (or DWARF). A negative
 * offset means "this Go version has no such field". Register slots are 1-based indexes into the
 * Go internal ABI integer argument sequence (amd64: RAX RBX RCX RDI RSI R8 R9 R10 R11; arm64:
 * X0..X15).
 */
struct target_config {
	__s64 g_goid;
	__s64 req_method;
	__s64 req_url;
	__s64 req_proto;
	__s64 req_host;
	__s64 req_remote_addr;
	__s64 req_content_length;
	__s64 req_tls;
	__s64 req_pattern; /* Request.Pattern string, Go 1.23+ */
	__s64 req_pat;	   /* Request.pat *pattern, Go 1.22+ */
	__s64 pattern_str; /* pattern.str string */
	__s64 url_path;
	__s64 response_status; /* http.response.status int */
	__u32 arg_rw_itab;     /* ServeHTTP's ResponseWriter interface: type word */
	__u32 arg_rw_data;     /* ... and data word */
	__u32 arg_req;	       /* ServeHTTP's *Request */
	__u32 _pad;
};

/* Key of the in-flight map: goroutine ids are only unique within one process. */
struct goroutine_key {
	__u32 pid;
	__u32 _pad;
	__u64 goid;
};

/* Value of the in-flight map: what a RET needs that its registers no longer hold. */
struct inflight_call {
	__u64 start_ns;
	__u64 req;
	__u64 rw_itab;
	__u64 rw_data;
	__u32 panicked;
	__u32 _pad;
};

struct record_header {
	__u32 type; /* enum event_type */
	__u32 pid;  /* tgid of the traced process */
	__u64 goid;
	__u64 start_ns; /* CLOCK_MONOTONIC at ServeHTTP entry: with pid and goid, names one call */
};

/* Emitted at serverHandler.ServeHTTP entry: what arrived, before the handler could change it. */
struct http_server_start {
	struct record_header hdr;
	__s64 content_length;
	__u32 cookie; /* target index */
	__u8 tls;     /* Request.TLS != nil */
	__u8 _pad[3];
	/* Real lengths of the Go strings; the arrays hold min(len, MAX_*) bytes. */
	__u32 method_len;
	__u32 path_len;
	__u32 host_len;
	__u32 remote_addr_len;
	__u32 proto_len;
	__u32 _pad2;
	char method[MAX_METHOD_LEN];
	char path[MAX_PATH_LEN];
	char host[MAX_HOST_LEN];
	char remote_addr[MAX_ADDR_LEN];
	char proto[MAX_PROTO_LEN];
};

/* Emitted at every RET of serverHandler.ServeHTTP. */
struct http_server_end {
	struct record_header hdr;
	__u64 end_ns;
	__u64 rw_itab; /* lets user space check the writer really is *http.response */
	__s64 status;  /* http.response.status; 0 = nothing written (200 on the wire) */
	__u32 pattern_len;
	__u32 _pad;
	char pattern[MAX_PATTERN_LEN];
};

/* Emitted by runtime.gopanic while a request is in flight on that goroutine. */
struct go_panic {
	struct record_header hdr;
	__u64 panic_ns;
	__u32 pattern_len; /* the route, matched before the handler ran */
	__u32 _pad;
	char pattern[MAX_PATTERN_LEN];
};

#endif
