"""Runs one command the way a container of docker-compose.yml would see the machine, without a
container engine: test_deploy.py uses it to play the compose demo on the test machine.

    python3 deploy_sandbox.py netns NETNS -- ARGV...
        ARGV in the network namespace NETNS (a /proc/PID/ns/net path): the compose network,
        where every service name resolves to 127.0.0.1.
    python3 deploy_sandbox.py app NETNS ROOTFS UID GID -- ARGV...
        An application container: NETNS, and a mount namespace whose root is ROOTFS (the image's
        files, pivot_root'ed, so /proc/PID/exe reads as the path inside the image, as it does for
        a real container), as UID:GID.
    python3 deploy_sandbox.py gospan NETNS HOSTS READ_ONLY CAPS -- ARGV...
        A gospan container: NETNS, a mount namespace with HOSTS bound over /etc/hosts, /sys
        read-only and without the filesystems mounted on it (tracefs, debugfs, securityfs and
        bpffs are not in a container's /sys), /proc/sys read-only, / read-only when READ_ONLY is
        1, and the capability bounding set cut to CAPS (comma-separated, Docker's spelling: the
        set compose's cap_drop and cap_add leave), so root holds those capabilities and no other.
        The PID namespace stays the machine's (pid: host).

The process is set up here and then replaced by ARGV (exec), so its pid is the command's. Linux
only, and root only.
"""

import ctypes
import os
import platform
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWNET = 0x40000000
MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_REMOUNT = 0x20
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 0x40000
MNT_DETACH = 0x2
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}

# Mounted on /sys of the machine, never on a container's own /sys.
HOST_ONLY_UNDER_SYS = ("/sys/kernel/security", "/sys/kernel/tracing", "/sys/kernel/debug",
                       "/sys/fs/bpf")

_libc = ctypes.CDLL(None, use_errno=True)


def _check(ret, what):
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(src, target, fstype, flags):
    _check(_libc.mount(src.encode() if src else None, target.encode(),
                       fstype.encode() if fstype else None, ctypes.c_ulong(flags), None),
           f"mount '{target}'")


def _enter_netns(path):
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        _check(_libc.setns(fd, CLONE_NEWNET), f"setns '{path}'")
    finally:
        os.close(fd)


def _private_mount_ns():
    _check(_libc.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    _mount(None, "/", None, MS_REC | MS_PRIVATE)


def _read_only(path, extra=0):
    _mount(path, path, None, MS_BIND | MS_REC)
    _mount(None, path, None, MS_BIND | MS_REMOUNT | MS_RDONLY | extra)


def app(rootfs, uid, gid):
    _private_mount_ns()
    _mount(rootfs, rootfs, None, MS_BIND | MS_REC)
    os.chdir(rootfs)
    os.makedirs(".old", exist_ok=True)
    nr = SYS_PIVOT_ROOT.get(platform.machine())
    if nr is None:
        raise OSError(f"no pivot_root syscall number for '{platform.machine()}'")
    _check(_libc.syscall(ctypes.c_long(nr), b".", b".old"), "pivot_root")
    os.chroot(".")
    os.chdir("/")
    _check(_libc.umount2(b"/.old", MNT_DETACH), "umount the old root")
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)


def gospan(hosts, read_only):
    _private_mount_ns()
    _mount(hosts, "/etc/hosts", None, MS_BIND)
    for path in HOST_ONLY_UNDER_SYS:
        _libc.umount2(path.encode(), MNT_DETACH)  # not mounted here: nothing to do
    _mount(None, "/sys", None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV |
           MS_NOEXEC)
    _read_only("/proc/sys")
    if read_only:
        _mount(None, "/", None, MS_BIND | MS_REMOUNT | MS_RDONLY)


def main(argv):
    if "--" not in argv:
        sys.exit("usage: deploy_sandbox.py MODE ARGS... -- COMMAND...")
    sep = argv.index("--")
    mode, args, command = argv[1], argv[2:sep], argv[sep + 1:]
    if not command:
        sys.exit("deploy_sandbox: no command")
    _enter_netns(args[0])
    if mode == "netns" and len(args) == 1:
        pass
    elif mode == "app" and len(args) == 4:
        app(args[1], int(args[2]), int(args[3]))
    elif mode == "gospan" and len(args) == 4:
        gospan(args[1], args[2] == "1")
        caps = ",".join("+" + c.lower().removeprefix("cap_") for c in args[3].split(",") if c)
        # Root gets exactly the bounding set on exec; nothing inheritable, nothing ambient.
        command = ["setpriv", f"--bounding-set=-all{',' + caps if caps else ''}",
                   "--inh-caps=-all", "--", *command]
    else:
        sys.exit(f"deploy_sandbox: bad arguments for mode '{mode}': {args}")
    os.execvp(command[0], command)


if __name__ == "__main__":
    main(sys.argv)
