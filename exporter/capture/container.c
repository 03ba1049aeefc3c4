// SPDX-License-Identifier: MIT
/*
 * Container and pod identity from /proc/PID/cgroup: see container.h. Each line there is
 * "HIERARCHY:CONTROLLERS:PATH", one per cgroup v1 hierarchy plus "0::PATH" for cgroup v2, and
 * the runtimes name a container's cgroup after its 64-hex-digit id:
 *
 *   /docker/ID                                       Docker, cgroupfs driver
 *   /system.slice/docker-ID.scope                    Docker, systemd driver
 *   /kubepods/burstable/podUID/ID                    kubelet, cgroupfs driver (any runtime)
 *   /kubepods.slice/kubepods-burstable.slice/
 *     kubepods-burstable-podUID_WITH_UNDERSCORES.slice/cri-containerd-ID.scope
 *                                                    kubelet, systemd driver, containerd
 *   .../crio-ID.scope, .../crio-ID                   CRI-O (crio-conmon-ID is its monitor)
 *   .../libpod-ID.scope, /libpod_parent/libpod-ID    podman (libpod-conmon-ID is its monitor)
 *   /NAMESPACE/ID                                    containerd without CRI (ctr, nerdctl)
 *
 * From another cgroup namespace the paths start with "/..", which changes nothing here.
 * k8s.container.name is not in any of these paths (the runtimes name cgroups by id only), so
 * it is not reported: only the API server or the kubelet knows it.
 *
 * The names are as trustworthy as the cgroup tree: a process allowed to create cgroups (a
 * delegated subtree, rootless podman) may name one like a container. The attributes describe,
 * they grant nothing, so that is accepted; the parser only has to stay within its input.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/container.h"

/* /proc/PID/cgroup is a dozen short lines; more than this is not a file the kernel wrote. */
#define CGROUP_FILE_MAX (64 << 10)

/* Runtimes that name the cgroup PREFIX-ID[.scope]: the prefix alone says which runtime it is. */
static const struct {
	const char *prefix;
	const char *runtime;
} scope_prefixes[] = {
	{ "docker-", "docker" },
	{ "cri-containerd-", "containerd" },
	{ "crio-", "cri-o" },
	{ "libpod-", "podman" },
	/* nerdctl is containerd's own CLI: its containers are containerd's. */
	{ "nerdctl-", "containerd" },
};

/* Lower-case only: every runtime writes ids so, and an upper-case one is not a real cgroup. */
static bool lower_hex(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

static bool has_suffix(const char *s, size_t n, const char *suffix, size_t *rest)
{
	size_t k = strlen(suffix);

	if (n < k || memcmp(s + n - k, suffix, k))
		return false;
	*rest = n - k;
	return true;
}

/*
 * Whether component C (N bytes) is a container's cgroup; if so its id to ID and the runtime the
 * name gives (NULL if it gives none) to *RUNTIME. PARENT (PN bytes) is the component above.
 */
static bool container_component(const char *c, size_t n, const char *parent, size_t pn, char *id,
				const char **runtime)
{
	size_t i, k, len;

	if (n == CONTAINER_ID_LEN && lower_hex(c, n)) {
		memcpy(id, c, n);
		id[n] = '\0';
		/* A bare id is anyone's (kubelet, containerd namespaces) but under /docker. */
		*runtime = pn == 6 && !memcmp(parent, "docker", 6) ? "docker" : NULL;
		return true;
	}
	if (!has_suffix(c, n, ".scope", &len))
		len = n;
	for (i = 0; i < sizeof(scope_prefixes) / sizeof(scope_prefixes[0]); i++) {
		k = strlen(scope_prefixes[i].prefix);
		if (len != k + CONTAINER_ID_LEN || memcmp(c, scope_prefixes[i].prefix, k) ||
		    !lower_hex(c + k, CONTAINER_ID_LEN))
			continue;
		memcpy(id, c + k, CONTAINER_ID_LEN);
		id[CONTAINER_ID_LEN] = '\0';
		*runtime = scope_prefixes[i].runtime;
		return true;
	}
	return false;
}

/*
 * Whether U (36 bytes) is a UID in 8-4-4-4-12 form with SEP between the groups; copied to OUT
 * with dashes. Static pods' cgroups carry a 32-digit hash of their manifest instead, which is
 * not the UID the API server gives their mirror pod: those are not taken.
 */
static bool pod_uid(const char *u, char sep, char *out)
{
	static const size_t dash[] = { 8, 13, 18, 23 };
	size_t i, d = 0;

	for (i = 0; i < POD_UID_LEN; i++) {
		if (d < 4 && i == dash[d]) {
			if (u[i] != sep)
				return false;
			out[i] = '-';
			d++;
			continue;
		}
		if (!lower_hex(u + i, 1))
			return false;
		out[i] = u[i];
	}
	out[POD_UID_LEN] = '\0';
	return true;
}

/* podUID (cgroupfs) or kubepods[-QOS]-podUID_WITH_UNDERSCORES.slice (systemd). */
static bool pod_component(const char *c, size_t n, char *out)
{
	size_t len;

	if (n == 3 + POD_UID_LEN && !memcmp(c, "pod", 3))
		return pod_uid(c + 3, '-', out);
	if (n < 8 || memcmp(c, "kubepods", 8) || !has_suffix(c, n, ".slice", &len) ||
	    len < 8 + 4 + POD_UID_LEN || memcmp(c + len - POD_UID_LEN - 4, "-pod", 4))
		return false;
	return pod_uid(c + len - POD_UID_LEN, '_', out);
}

/* The innermost container and pod named along PATH (N bytes), into *OUT. */
static void parse_path(const char *path, size_t n, struct container_info *out)
{
	const char *c = path, *end = path + n, *slash, *parent = NULL;
	char id[CONTAINER_ID_LEN + 1], uid[POD_UID_LEN + 1];
	const char *runtime;
	size_t len, pn = 0;

	memset(out, 0, sizeof(*out));
	for (; c < end; c = slash + 1) {
		slash = memchr(c, '/', (size_t)(end - c));
		if (!slash)
			slash = end;
		len = (size_t)(slash - c);
		if (container_component(c, len, parent, pn, id, &runtime)) {
			memcpy(out->id, id, sizeof(id));
			out->runtime = runtime;
		} else if (pod_component(c, len, uid)) {
			memcpy(out->pod_uid, uid, sizeof(uid));
		}
		parent = c;
		pn = len;
	}
}

int container__parse(const char *text, size_t len, struct container_info *out)
{
	const char *line = text, *end = text + len, *eol, *c1, *c2;
	struct container_info cur;
	bool found = false, found_id = false, v2;

	memset(out, 0, sizeof(*out));
	for (; line < end; line = eol + 1) {
		eol = memchr(line, '\n', (size_t)(end - line));
		if (!eol)
			eol = end;
		/* The kernel never writes a NUL here: such a line is not its. */
		if (memchr(line, '\0', (size_t)(eol - line)))
			continue;
		c1 = memchr(line, ':', (size_t)(eol - line));
		c2 = c1 ? memchr(c1 + 1, ':', (size_t)(eol - c1 - 1)) : NULL;
		if (!c2)
			continue;
		parse_path(c2 + 1, (size_t)(eol - c2 - 1), &cur);
		if (!cur.id[0] && !cur.pod_uid[0])
			continue;
		/*
		 * Every hierarchy normally gives the same answer. Where they differ, a line
		 * naming a container beats one naming only a pod, then cgroup v2's "0::" line
		 * (the one hierarchy on current hosts) beats v1's, then the first line wins.
		 */
		v2 = c1 - line == 1 && line[0] == '0' && c2 == c1 + 1;
		if (!found || (cur.id[0] && !found_id) || (v2 && (cur.id[0] || !found_id))) {
			*out = cur;
			found = true;
			found_id = cur.id[0];
		}
	}
	return found ? 0 : -ENOENT;
}

int container__read(pid_t pid, struct container_info *out)
{
	size_t len = 0;
	char path[64], *buf;
	ssize_t n;
	int fd, err = 0;

	memset(out, 0, sizeof(*out));
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	buf = malloc(CGROUP_FILE_MAX);
	if (!buf) {
		err = -ENOMEM;
		goto cleanup;
	}
	while (len < CGROUP_FILE_MAX && (n = read(fd, buf + len, CGROUP_FILE_MAX - len)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			goto cleanup;
		}
		len += (size_t)n;
	}
	err = container__parse(buf, len, out);
cleanup:
	free(buf);
	close(fd);
	return err;
}
