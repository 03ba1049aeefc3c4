"""Debian's arm64 userland for the arm64 boot, which is also the sysroot gospan is cross-built
against (make CROSS=arm64).

This machine's / cannot be an arm64 guest's root, so the arm64 boot gets a tree of its own: the
packages below and everything they depend on, from Debian's arm64 archive through apt with a
configuration of its own (as kernels.py does it: the machine's apt sources are never changed),
each unpacked with dpkg-deb -x. Nothing in them runs: no maintainer script, no emulator. What
their scripts would have made and a test needs (the postgres user, /bin/sh, PAM's rules for
runuser) is written here. The same tree holds the -dev packages, so the gospan built against it
and the libraries the guest loads are the same versions. opentelemetry-proto (pure Python, not
packaged by Debian) comes from PyPI as a wheel, unzipped into the tree.

    python3 tests/vm/rootfs.py make      the tree (kept in the cache; remade when PACKAGES change)
    python3 tests/vm/rootfs.py path      where it is
"""

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import kernels  # noqa: E402

ARCH = "arm64"
# Debian 12, as on the machines gospan is built on: the same libbpf (1.1) and Python (3.11).
SUITE = "bookworm"
PACKAGES = (
    # the guest's init (busybox-static, for the initramfs) and a shell for job.sh
    "busybox-static", "dash", "bash", "coreutils", "util-linux", "procps", "findutils", "grep",
    "sed", "base-files", "libpam-modules", "tzdata",
    # the tests, run by Debian's Python
    "python3", "python3-pytest", "python3-protobuf", "python3-yaml",
    # test_datastores.py's servers, started by the tests' fixtures as on the host
    "postgresql-15", "redis-server",
    # guest.py loads each BPF object with bpftool where gospan is refused
    "bpftool",
    # test_go_versions.py's HTTP/2 server cells send their requests with curl
    "curl",
    # gospan's libraries, and what building against them needs (the sysroot)
    "libbpf-dev", "libelf-dev", "libdw-dev", "libcapstone-dev", "libprotobuf-c-dev",
    "libcurl4-openssl-dev", "libcjson-dev", "zlib1g-dev", "libc6-dev", "libgcc-12-dev",
    "linux-libc-dev",
)
# The newest opentelemetry-proto whose generated code accepts Debian 12's protobuf (3.21):
# from 1.26 on it asks for protobuf 5.
OTEL_PROTO = "opentelemetry-proto==1.25.0"
TRIPLET = "aarch64-linux-gnu"


class RootfsError(Exception):
    pass


# Raised when _finish() writes something new: a tree made before is then made again.
FORMAT = 1


def _key():
    text = json.dumps([SUITE, PACKAGES, OTEL_PROTO, FORMAT])
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def path():
    return kernels.vm_cache() / f"rootfs-{ARCH}-{SUITE}-{_key()}"


def _relative_links(root):
    """Absolute symbolic links made relative to ROOT, so that they resolve inside the tree both
    where it is the guest's / and where it is a sysroot on this machine (libz.so pointing at
    /lib/... would otherwise name this machine's amd64 library)."""
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            if not p.is_symlink():
                continue
            target = os.readlink(p)
            if target.startswith("/"):
                p.unlink()
                p.symlink_to(os.path.relpath(root / target.lstrip("/"), p.parent))


def _write(root, rel, text, mode=0o644):
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    p.chmod(mode)


def _finish(root):
    """What the packages' maintainer scripts would have made, as far as the tests need it."""
    _write(root, "etc/passwd", "root:x:0:0:root:/root:/bin/bash\n"
           "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
           "postgres:x:102:104:PostgreSQL administrator:/var/lib/postgresql:/bin/bash\n"
           "redis:x:103:105::/var/lib/redis:/usr/sbin/nologin\n")
    _write(root, "etc/group", "root:x:0:\nnogroup:x:65534:\npostgres:x:104:\nredis:x:105:\n")
    _write(root, "etc/hosts", "127.0.0.1 localhost gospan-vm\n::1 localhost\n")
    _write(root, "etc/hostname", "gospan-vm\n")
    # runuser (util-linux) asks PAM; Debian's rules include common-* files that pam-auth-update
    # writes at install. Root running a command as another user needs no more than these.
    _write(root, "etc/pam.d/runuser", "auth sufficient pam_rootok.so\n"
           "account required pam_permit.so\nsession required pam_permit.so\n")
    for rel, target in (("bin/sh", "dash"), ("usr/bin/python3", "python3.11")):
        p = root / rel
        if not p.exists() and not p.is_symlink():
            p.symlink_to(target)
    for d in ("proc", "sys", "dev", "run", "tmp", "var/tmp", "root", "vmout", "mnt"):
        (root / d).mkdir(parents=True, exist_ok=True)
    (root / "tmp").chmod(0o1777)
    (root / "var" / "tmp").chmod(0o1777)


def _otel_proto(root, tmp):
    wheels = Path(tmp) / "wheels"
    res = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                          "--disable-pip-version-check", "--only-binary=:all:", "-d", str(wheels),
                          OTEL_PROTO], capture_output=True, text=True, timeout=600)
    if res.returncode:
        raise RootfsError(f"pip download {OTEL_PROTO} failed:\n{res.stderr.strip()[-2000:]}")
    site = root / "usr" / "lib" / "python3" / "dist-packages"
    for whl in wheels.glob("*.whl"):
        with zipfile.ZipFile(whl) as z:
            z.extractall(site)


def make(log=print):
    """The tree, made when missing: every package of PACKAGES and its dependencies unpacked."""
    root = path()
    if (root / ".done").exists():
        return root
    apt = kernels.Apt(ARCH, suites=(SUITE,), name=f"{ARCH}-{SUITE}")
    apt.update()
    staging = root.with_name(root.name + ".new")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    with tempfile.TemporaryDirectory(dir=kernels.vm_cache()) as tmp:
        debs = apt.download_closure(PACKAGES, log)
        log(f"vm: unpacking {len(debs)} {SUITE} {ARCH} packages into {root}")
        for deb in debs:
            kernels._run(["dpkg-deb", "-x", str(deb), str(staging)])
        _otel_proto(staging, tmp)
    _relative_links(staging)
    _finish(staging)
    (staging / ".packages").write_text("".join(f"{d.name}\n" for d in debs))
    (staging / ".done").write_text("")
    shutil.rmtree(root, ignore_errors=True)
    staging.rename(root)
    for other in root.parent.glob(f"rootfs-{ARCH}-*"):
        if other != root and not other.name.endswith(".new"):
            shutil.rmtree(other, ignore_errors=True)
    return root


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cmd", choices=("make", "path"))
    args = ap.parse_args()
    if args.cmd == "path":
        print(path())
        return 0
    try:
        print(make(lambda m: print(m, file=sys.stderr)))
    except (RootfsError, kernels.FetchError) as e:
        print(f"vm: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
