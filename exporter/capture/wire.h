/* SPDX-License-Identifier: MIT */
/*
 * The socket-layer writer of outgoing trace context (bpf/wire.bpf.c): loading it beside the
 * uprobes, attaching its sockops program to the traced processes' cgroups (cgroup v2) and its
 * sk_msg program to the sockhash of their client sockets, and adding the client connections a
 * process had open before gospan came (a warm keep-alive pool), which no sockops event announces.
 * Everything it attaches dies with gospan's file descriptors, SIGKILL included.
 */
#ifndef GOSPAN_WIRE_H
#define GOSPAN_WIRE_H

#include <sys/types.h>

struct bpf_object;
struct target_config;
struct wire;

/*
 * Loads the writer, sharing the maps of the uprobes' object HTTP_OBJ. NULL with errno set when
 * this kernel or host cannot have it; the reason is logged as a warning.
 */
struct wire *wire__load(struct bpf_object *http_obj);
/*
 * Starts tracking the client sockets of process PID, a target configured as CFG: its cgroup gets
 * the sockops program (once per cgroup), its open client connections go into the sockhash.
 */
int wire__add_process(struct wire *w, pid_t pid, const struct target_config *cfg);
/* Tracks the processes the uprobes found making their first client call since the last sync. */
void wire__sync(struct wire *w);
/*
 * Loads the writer's Kafka part (bpf/kafka_wire.bpf.c), which puts trace context into produce
 * requests: once, when a traced process has a Kafka producer (its verification is paid only then).
 * A failure is said once, and costs only the messages' context.
 */
int wire__enable_kafka(struct wire *w);
void wire__destroy(struct wire *w);
/*
 * PATH, a cgroup as /proc/PID/cgroup gives it, as a path below the top of a cgroup v2 mount
 * whose top is ROOT (the mount's root field in mountinfo; both are against gospan's cgroup
 * namespace, so in a pod both may start with "/.."): "" for ROOT itself, NULL when PATH is not
 * below ROOT.
 */
const char *wire__cgroup_below(const char *path, const char *root);

struct cgroup2_mount {
	char mnt[4096];	      /* mount point */
	char root[4096];      /* the cgroup at its top, against gospan's cgroup namespace */
	char super_opts[256]; /* the hierarchy's options, "rw,nsdelegate,..." */
};

/*
 * The first cgroup2 mount listed in MOUNTINFO (a /proc/PID/mountinfo file) into *OUT; -ENOENT
 * when there is none, -errno when the file cannot be read. Where gospan runs in a cgroup
 * namespace of its own (a Kubernetes pod with the host's /sys/fs/cgroup), ROOT is a path like
 * "/../.." that /proc/PID/cgroup paths are given against too; on a host it is "/".
 */
int wire__find_cgroup2(const char *mountinfo, struct cgroup2_mount *out);

#endif
