// SPDX-License-Identifier: MIT
/*
 * Tests for container.c: container id, pod UID and runtime from /proc/PID/cgroup as Docker
 * (both cgroup drivers), containerd (CRI and not), CRI-O, podman and the kubelet (both drivers)
 * leave it, on cgroup v1, hybrid and v2 hosts and as seen from another cgroup namespace; paths
 * of processes in no container; and inputs no kernel writes (ids a digit short or long,
 * upper-case, NUL bytes, lines of a megabyte). Then container__read() on this process's own
 * file, which must agree with the parser on the same text.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/container.h"

#define ID1 "7f0d038f65ceda58eac9833d1f68d317c8c586f2186efd8ee95d149be23194e5"
#define ID2 "e51650a0d02535b20c39ec3981062db66e4f89c59e1d0c18468a45388a91097b"
#define ID3 "547673429ee4c13ddbe5ecbd9feb99f7f5ddef0604db49b39ebb1432801fefdc"
#define UID1 "fdff8daf-43e0-438f-8d9d-78d7c0e0a821"
#define UID1_ "fdff8daf_43e0_438f_8d9d_78d7c0e0a821"

/* Parses TEXT and checks it gave ID, UID and RUNTIME (NULL: none of it). */
static void check_len(const char *text, size_t len, const char *id, const char *uid,
		      const char *runtime)
{
	struct container_info ci;
	int err = container__parse(text, len, &ci);

	if (!id && !uid) {
		if (err != -ENOENT || ci.id[0] || ci.pod_uid[0] || ci.runtime)
			fail_msg("'%.200s': expected nothing, got %d id '%s' pod '%s' runtime '%s'",
				 text, err, ci.id, ci.pod_uid, ci.runtime ? ci.runtime : "");
		return;
	}
	if (err)
		fail_msg("'%.200s': expected id '%s' pod '%s', got %d", text, id ? id : "",
			 uid ? uid : "", err);
	if (strcmp(ci.id, id ? id : ""))
		fail_msg("'%.200s': id '%s', expected '%s'", text, ci.id, id ? id : "");
	if (strcmp(ci.pod_uid, uid ? uid : ""))
		fail_msg("'%.200s': pod '%s', expected '%s'", text, ci.pod_uid, uid ? uid : "");
	if ((!runtime) != (!ci.runtime) || (runtime && strcmp(runtime, ci.runtime)))
		fail_msg("'%.200s': runtime '%s', expected '%s'", text,
			 ci.runtime ? ci.runtime : "(none)", runtime ? runtime : "(none)");
}

static void check(const char *text, const char *id, const char *uid, const char *runtime)
{
	check_len(text, strlen(text), id, uid, runtime);
}

static void test_container__docker(void **state)
{
	(void)state;
	/* Docker 20.10, cgroupfs driver, cgroup v1 host with cgroup2 beside (this CI host). */
	check("9:name=systemd:/docker/" ID1 "\n"
	      "8:pids:/docker/" ID1 "\n"
	      "4:memory:/docker/" ID1 "\n"
	      "1:cpu:/docker/" ID1 "\n"
	      "0::/docker/" ID1 "\n",
	      ID1, NULL, "docker");
	/* systemd driver, cgroup v2 host, and the same from a private cgroup namespace. */
	check("0::/system.slice/docker-" ID2 ".scope\n", ID2, NULL, "docker");
	check("0::/../../system.slice/docker-" ID2 ".scope\n", ID2, NULL, "docker");
	check("0::/../../docker-" ID2 ".scope\n", ID2, NULL, "docker");
	/* systemd driver on a hybrid host: v1 lines name it, "0::" may not. */
	check("12:pids:/system.slice/docker-" ID2 ".scope\n"
	      "1:name=systemd:/system.slice/docker-" ID2 ".scope\n"
	      "0::/\n",
	      ID2, NULL, "docker");
	/* Docker in Docker: the innermost container. */
	check("0::/docker/" ID1 "/docker/" ID2 "\n", ID2, NULL, "docker");
	/* A cgroup of the container's own below it (systemd inside, or a delegated subtree). */
	check("0::/system.slice/docker-" ID1 ".scope/init.scope\n", ID1, NULL, "docker");
	/* No trailing newline. */
	check("0::/docker/" ID3, ID3, NULL, "docker");
}

static void test_container__kubernetes(void **state)
{
	(void)state;
	/* kubelet, systemd driver, containerd, cgroup v2. */
	check("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID1_
	      ".slice/cri-containerd-" ID1 ".scope\n",
	      ID1, UID1, "containerd");
	/* Guaranteed QoS has no QoS slice. */
	check("0::/kubepods.slice/kubepods-pod" UID1_ ".slice/cri-containerd-" ID2 ".scope\n", ID2,
	      UID1, "containerd");
	/* CRI-O, systemd driver, v1; its conmon's scope is not the container. */
	check("11:memory:/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID1_
	      ".slice/crio-" ID3 ".scope\n",
	      ID3, UID1, "cri-o");
	check("0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID1_
	      ".slice/crio-conmon-" ID3 ".scope\n",
	      NULL, UID1, NULL);
	/* CRI-O with crun puts the process one level below the container's scope. */
	check("0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID1_
	      ".slice/crio-" ID3 ".scope/container\n",
	      ID3, UID1, "cri-o");
	/* CRI-O, cgroupfs driver. */
	check("0::/kubepods/besteffort/pod" UID1 "/crio-" ID3 "\n", ID3, UID1, "cri-o");
	/* kubelet, cgroupfs driver: a bare id, whichever runtime made it. */
	check("12:cpuset:/kubepods/burstable/pod" UID1 "/" ID1 "\n"
	      "0::/kubepods/burstable/pod" UID1 "/" ID1 "\n",
	      ID1, UID1, NULL);
	check("0::/kubepods/pod" UID1 "/" ID1 "\n", ID1, UID1, NULL);
	/* A pod in kind: the node is a Docker container, the pod's container is inside it. */
	check("0::/docker/" ID2 "/kubepods/burstable/pod" UID1 "/" ID1 "\n", ID1, UID1, NULL);
	/* Seen from the pod's own cgroup namespace only "/" is left: nothing to say. */
	check("0::/\n", NULL, NULL, NULL);
	/* Static pods: a manifest hash, not a UID. */
	check("0::/kubepods/besteffort/pod6fb7a2c3d4e5f60718293a4b5c6d7e8f/" ID1 "\n", ID1, NULL,
	      NULL);
}

static void test_container__other_runtimes(void **state)
{
	(void)state;
	check("0::/machine.slice/libpod-" ID1 ".scope\n", ID1, NULL, "podman");
	check("0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ID1
	      ".scope/container\n",
	      ID1, NULL, "podman");
	check("0::/machine.slice/libpod-conmon-" ID1 ".scope\n", NULL, NULL, NULL);
	check("11:pids:/libpod_parent/libpod-" ID2 "\n", ID2, NULL, "podman");
	/* containerd without CRI: /NAMESPACE/ID, and nerdctl's systemd scope. */
	check("0::/default/" ID3 "\n", ID3, NULL, NULL);
	check("0::/buildkit/" ID3 "\n", ID3, NULL, NULL);
	check("0::/system.slice/nerdctl-" ID3 ".scope\n", ID3, NULL, "containerd");
}

static void test_container__not_in_one(void **state)
{
	(void)state;
	check("0::/user.slice/user-1000.slice/session-3.scope\n", NULL, NULL, NULL);
	check("0::/system.slice/ssh.service\n", NULL, NULL, NULL);
	check("0::/system.slice/docker.service\n", NULL, NULL, NULL);
	check("0::/system.slice/containerd.service\n", NULL, NULL, NULL);
	check("0::/\n", NULL, NULL, NULL);
	check("9:name=systemd:/\n8:pids:/\n4:memory:/process_api/d5865e4a8f146db42bf1b312612917f6\n"
	      "0::/\n",
	      NULL, NULL, NULL);
	check("", NULL, NULL, NULL);
	check("\n\n\n", NULL, NULL, NULL);
}

static void test_container__hostile(void **state)
{
	static const char nul_line[] = "0::/docker/" ID1 "\0\n";
	static const char nul_in_id[] = "0::/docker/7f0d038f65ceda58eac9833d1f68d317c8c586f2186\0"
					"fd8ee95d149be23194e5\n";
	static const char nul_then_good[] = "5:pids:/docker/\0" ID2 "\n0::/docker/" ID1 "\n";
	size_t big = 1 << 20, n;
	char *text;

	(void)state;
	/* A digit short or long, upper case, a non-hex digit. */
	check("0::/docker/"
	      "7f0d038f65ceda58eac9833d1f68d317c8c586f2186efd8ee95d149be23194e\n",
	      NULL, NULL, NULL);
	check("0::/docker/" ID1 "5\n", NULL, NULL, NULL);
	check("0::/system.slice/docker-" ID1 "5.scope\n", NULL, NULL, NULL);
	check(
	    "0::/system.slice/docker-7f0d038f65ceda58eac9833d1f68d317c8c586f2186efd8ee95d149be2319"
	    ".scope\n",
	    NULL, NULL, NULL);
	check("0::/docker/7F0D038F65CEDA58EAC9833D1F68D317C8C586F2186EFD8EE95D149BE23194E5\n", NULL,
	      NULL, NULL);
	check("0::/docker/7f0d038f65ceda58eac9833d1f68d317c8c586f2186efd8ee95d149be23194eg\n", NULL,
	      NULL, NULL);
	/* Wrong suffixes and prefixes. */
	check("0::/system.slice/docker-" ID1 ".scopex\n", NULL, NULL, NULL);
	check("0::/system.slice/docker-" ID1 ".slice\n", NULL, NULL, NULL);
	check("0::/system.slice/" ID1 ".scope\n", NULL, NULL, NULL);
	check("0::/system.slice/dockerx" ID1 ".scope\n", NULL, NULL, NULL);
	/* pod with no UID, a short one, a mixed separator, upper case. */
	check("0::/kubepods/burstable/pod/" ID1 "\n", ID1, NULL, NULL);
	check("0::/kubepods/burstable/pod\n", NULL, NULL, NULL);
	check("0::/kubepods/burstable/podfdff8daf-43e0-438f-8d9d-78d7c0e0a82\n", NULL, NULL, NULL);
	check("0::/kubepods/burstable/podfdff8daf_43e0-438f-8d9d-78d7c0e0a821\n", NULL, NULL, NULL);
	check("0::/kubepods/burstable/podFDFF8DAF-43E0-438F-8D9D-78D7C0E0A821\n", NULL, NULL, NULL);
	check("0::/kubepods.slice/kubepods-pod.slice\n", NULL, NULL, NULL);
	check("0::/kubepods.slice/kubepods-pod" UID1 ".slice\n", NULL, NULL, NULL);
	check("0::/kubepods.slice/kubepods-burstablepod" UID1_ ".slice\n", NULL, NULL, NULL);
	/* Lines without their colons. */
	check("/docker/" ID1 "\n", NULL, NULL, NULL);
	check("0:/docker/" ID1 "\n", NULL, NULL, NULL);
	/* A NUL anywhere in a line makes it not the kernel's; other lines still count. */
	check_len(nul_line, sizeof(nul_line) - 1, NULL, NULL, NULL);
	check_len(nul_in_id, sizeof(nul_in_id) - 1, NULL, NULL, NULL);
	check_len(nul_then_good, sizeof(nul_then_good) - 1, ID1, NULL, "docker");
	/* The length given is the end, wherever a NUL or newline may be. */
	check_len("0::/docker/" ID1 "\n", 11 + 63, NULL, NULL, NULL);

	/* A megabyte-long line of slashes and near-ids, then a real one; and one cut short. */
	text = malloc(big + 256);
	assert_non_null(text);
	memcpy(text, "0::", 3);
	for (n = 3; n + 66 < big; n += 65) {
		text[n] = '/';
		memcpy(text + n + 1, ID2, 64);
		text[n + 64] = 'X';
	}
	n += (size_t)sprintf(text + n, "/docker/" ID1 "\n");
	check_len(text, n, ID1, NULL, "docker");
	check_len(text, n - 2, NULL, NULL, NULL);
	free(text);
}

/* container__read() on this very process: what the parser gives for the same text. */
static void test_container__read_self(void **state)
{
	struct container_info got, want;
	char buf[65536];
	size_t n;
	FILE *f;
	int err;

	(void)state;
	f = fopen("/proc/self/cgroup", "re");
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	err = container__parse(buf, n, &want);
	assert_int_equal(container__read(getpid(), &got), err);
	assert_string_equal(got.id, want.id);
	assert_string_equal(got.pod_uid, want.pod_uid);
	assert_ptr_equal(got.runtime, want.runtime);
	/* A process that is not there. */
	assert_int_equal(container__read(-1, &got), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_container__docker),
	    cmocka_unit_test(test_container__kubernetes),
	    cmocka_unit_test(test_container__other_runtimes),
	    cmocka_unit_test(test_container__not_in_one),
	    cmocka_unit_test(test_container__hostile),
	    cmocka_unit_test(test_container__read_self),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
