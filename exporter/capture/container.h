/* SPDX-License-Identifier: MIT */
/*
 * Which container, and which Kubernetes pod, a traced process runs in, read from the cgroup
 * paths container runtimes give their containers (/proc/PID/cgroup), never from the process's
 * memory. The parser takes the file's text, so the unit tests and the fuzzer feed it whatever
 * they like; container__read() is the /proc read around it.
 */
#ifndef GOSPAN_CONTAINER_H
#define GOSPAN_CONTAINER_H

#include <stddef.h>
#include <sys/types.h>

#define CONTAINER_ID_LEN 64 /* hex digits: every runtime below names containers this way */
#define POD_UID_LEN 36	    /* 8-4-4-4-12, with dashes */

struct container_info {
	char id[CONTAINER_ID_LEN + 1]; /* "" when not in a container */
	char pod_uid[POD_UID_LEN + 1]; /* "" when not in a Kubernetes pod */
	const char *runtime; /* "docker", "containerd", "cri-o", "podman"; NULL if unsure */
};

/*
 * Reads TEXT (LEN bytes, the contents of a /proc/PID/cgroup file; no NUL needed) into *OUT.
 * 0 when a container id or a pod UID was found, -ENOENT when neither was (*OUT is then empty).
 */
int container__parse(const char *text, size_t len, struct container_info *out);
/* The same for process PID; -errno when its /proc/PID/cgroup cannot be read. */
int container__read(pid_t pid, struct container_info *out);

#endif
