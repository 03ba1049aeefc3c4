// SPDX-License-Identifier: MIT
/* Capabilities: the effective set by capget(2), and the names users know them by. */
#include <ctype.h>
#include <errno.h>
#include <linux/capability.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/caps.h"

/* Indexed by number, as in linux/capability.h. */
static const char *const names[] = {
	"CAP_CHOWN",	       "CAP_DAC_OVERRIDE",   "CAP_DAC_READ_SEARCH", "CAP_FOWNER",
	"CAP_FSETID",	       "CAP_KILL",	     "CAP_SETGID",	    "CAP_SETUID",
	"CAP_SETPCAP",	       "CAP_LINUX_IMMUTABLE", "CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST",
	"CAP_NET_ADMIN",       "CAP_NET_RAW",	     "CAP_IPC_LOCK",	    "CAP_IPC_OWNER",
	"CAP_SYS_MODULE",      "CAP_SYS_RAWIO",	     "CAP_SYS_CHROOT",	    "CAP_SYS_PTRACE",
	"CAP_SYS_PACCT",       "CAP_SYS_ADMIN",	     "CAP_SYS_BOOT",	    "CAP_SYS_NICE",
	"CAP_SYS_RESOURCE",    "CAP_SYS_TIME",	     "CAP_SYS_TTY_CONFIG",  "CAP_MKNOD",
	"CAP_LEASE",	       "CAP_AUDIT_WRITE",    "CAP_AUDIT_CONTROL",   "CAP_SETFCAP",
	"CAP_MAC_OVERRIDE",    "CAP_MAC_ADMIN",	     "CAP_SYSLOG",	    "CAP_WAKE_ALARM",
	"CAP_BLOCK_SUSPEND",   "CAP_AUDIT_READ",     "CAP_PERFMON",	    "CAP_BPF",
	"CAP_CHECKPOINT_RESTORE",
};

int caps__effective(uint64_t *set)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};

	/* glibc has no capget wrapper, and libcap is not worth a dependency for one call. */
	if (syscall(SYS_capget, &hdr, data))
		return -errno;
	*set = (uint64_t)data[1].effective << 32 | data[0].effective;
	return 0;
}

/* Appends S to BUF (of SIZE) at *LEN as far as it fits; *LEN grows by all of S. */
static void append(char *buf, size_t size, size_t *len, const char *s)
{
	size_t n = strlen(s), room;

	if (*len + 1 < size) {
		room = size - *len - 1;
		if (n < room)
			room = n;
		memcpy(buf + *len, s, room);
		buf[*len + room] = '\0';
	}
	*len += n;
}

size_t caps__list(uint64_t set, enum caps_style style, char *buf, size_t size)
{
	int cap, left = __builtin_popcountll(set);
	size_t len = 0;
	char item[32], *p;

	if (size)
		buf[0] = '\0';
	for (cap = 0; cap < 64; cap++) {
		if (!(set & CAPS_BIT(cap)))
			continue;
		if (len)
			append(buf, size, &len,
			       style == CAPS_SETCAP ? "," :
			       style == CAPS_SYSTEMD ? " " :
			       left == 1	     ? " and " :
						       ", ");
		left--;
		if (cap < (int)(sizeof(names) / sizeof(names[0])))
			snprintf(item, sizeof(item), "%s", names[cap]);
		else
			snprintf(item, sizeof(item), "CAP_%d", cap);
		if (style == CAPS_SETCAP)
			for (p = item; *p; p++)
				*p = (char)tolower((unsigned char)*p);
		append(buf, size, &len, item);
	}
	return len;
}
