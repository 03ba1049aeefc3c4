"""Debian's kernels for the virtual machine runs, and the initramfs each boots with.

A kernel comes from Debian's packages through apt with a configuration of its own (its sources,
lists and archives under the cache), so the machine's apt sources are never changed: the suites
it lacks (bullseye, trixie, backports) are added here only. The package is unpacked, its
vmlinuz and the few modules a boot needs (virtio PCI, 9p over virtio, overlayfs) kept, the rest
thrown away. The initramfs is busybox-static, those modules (decompressed, in load order) and
tests/vm/init; it is built per kernel and kept beside it.

    python3 tests/vm/kernels.py fetch [NAME...]     fetch kernels (all when none is named)
    python3 tests/vm/kernels.py list                the kernels known, and which are cached
"""

import argparse
import gzip
import lzma
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "e2e"))

from matrix import cache_dir  # noqa: E402

MIRROR = "http://deb.debian.org/debian"
SUITES = ("bullseye", "bookworm", "bookworm-backports", "trixie")
BUSYBOX = Path("/bin/busybox")

# What the initramfs loads, by module name; their dependencies come from each .ko's modinfo.
# virtio_pci: the 9p devices are virtio PCI devices; 9pnet_virtio and 9p: the machine's files;
# overlay: a writable root over them, the writes kept in the guest's memory.
BOOT_MODULES = ("virtio_pci", "9pnet_virtio", "9p", "overlay")


@dataclass(frozen=True)
class Kernel:
    name: str  # how runs and results name it: "6.1", "5.10", ...
    suite: str  # the Debian suite whose linux-image-<flavour> metapackage picks it
    arch: str = "amd64"  # Debian's architecture name
    flavour: str = "amd64"  # the metapackage's suffix: amd64, cloud-amd64, arm64

    @property
    def meta(self):
        return f"linux-image-{self.flavour}"


KERNELS = {k.name: k for k in (
    Kernel("5.10", "bullseye"),
    Kernel("6.1", "bookworm"),
    Kernel("6.12-bpo", "bookworm-backports"),
    Kernel("6.12", "trixie"),
    Kernel("6.12-arm64", "trixie", arch="arm64", flavour="arm64"),
)}


class FetchError(Exception):
    pass


def vm_cache():
    return cache_dir("GOSPAN_VM_CACHE") / "vm"


def _run(argv, **kw):
    res = subprocess.run(argv, capture_output=True, text=True, **kw)
    if res.returncode != 0:
        raise FetchError(f"'{' '.join(map(str, argv))}' failed ({res.returncode}):\n"
                         f"{res.stderr.strip()[-2000:]}")
    return res.stdout


class Apt:
    """apt-get and apt-cache with a configuration of their own under the cache, for ARCH."""

    def __init__(self, arch, suites=SUITES, name=None):
        self.root = vm_cache() / f"apt-{name or arch}"
        self.suites = suites
        self.sources = self.root / "sources.list"
        self.lists = self.root / "lists"
        self.archives = self.root / "archives"
        self.arch = arch

    def opts(self):
        return ["-o", f"Dir::Etc::sourcelist={self.sources}", "-o", "Dir::Etc::sourceparts=-",
                "-o", f"Dir::State::lists={self.lists}",
                "-o", f"Dir::Cache::archives={self.archives}",
                "-o", "Dir::State::status=/dev/null", "-o", "Debug::NoLocking=1",
                "-o", f"APT::Architecture={self.arch}", "-o", f"APT::Architectures={self.arch}",
                # root runs apt here; its sandbox user could not write the cache.
                "-o", "APT::Sandbox::User=root"]

    def update(self):
        (self.lists / "partial").mkdir(parents=True, exist_ok=True)
        (self.archives / "partial").mkdir(parents=True, exist_ok=True)
        self.sources.write_text("".join(f"deb {MIRROR} {s} main\n" for s in self.suites))
        _run(["apt-get", *self.opts(), "-qq", "update"], timeout=600)

    def image_package(self, kernel):
        """linux-image-<version>-<flavour> the suite's metapackage depends on, and its version."""
        if not any(self.lists.glob("*_Packages*")):
            self.update()
        out = _run(["apt-cache", *self.opts(), "show", f"{kernel.meta}/{kernel.suite}"])
        m = re.search(r"^Depends:.*?\b(linux-image-\S+) \(= ([^)]+)\)", out, re.M)
        if not m:
            raise FetchError(f"{kernel.meta}/{kernel.suite} depends on no linux-image: {out}")
        return m.group(1), m.group(2)

    def download(self, package, version, into):
        _run(["apt-get", *self.opts(), "-qq", "download", f"{package}={version}"], cwd=into,
             timeout=900)
        debs = list(Path(into).glob(f"{package}_*.deb"))
        if len(debs) != 1:
            raise FetchError(f"apt-get download {package}={version} left {debs} in {into}")
        return debs[0]


    def download_closure(self, packages, log=print):
        """The .deb files of PACKAGES and of everything they depend on (recommends left out),
        downloaded into the archives when missing."""
        argv = ["apt-get", *self.opts(), "-qq", "-y", "--no-install-recommends", "install"]
        sim = _run([*argv, "-s", *packages], timeout=600)
        wanted = re.findall(r"^Inst (\S+) \((\S+) ", sim, re.M)
        if not wanted:
            raise FetchError(f"apt-get install -s {' '.join(packages)} chose nothing:\n{sim}")
        debs = [self.archives / f"{p}_{v.replace(':', '%3a')}_{a}.deb"
                for p, v, a in ((p.split(":")[0], v, self.arch) for p, v in wanted)]
        missing = [d for d in debs if not d.exists()]
        if missing:
            log(f"vm: downloading {len(missing)} packages ({self.arch})")
            _run([*argv, "-d", *packages], timeout=1800)
        # Architecture-independent packages are named _all.deb.
        found = []
        for d in debs:
            if not d.exists():
                d = d.with_name(d.name.rsplit("_", 1)[0] + "_all.deb")
            if not d.exists():
                raise FetchError(f"apt-get download left no {d.name} in {self.archives}")
            found.append(d)
        return found


def _ko_bytes(path):
    data = path.read_bytes()
    if path.suffix == ".xz":
        return lzma.decompress(data)
    if path.suffix == ".zst":
        return subprocess.run(["zstd", "-dc", str(path)], check=True, capture_output=True).stdout
    if path.suffix == ".gz":
        return gzip.decompress(data)
    return data


def _modinfo(ko, field):
    """FIELD from the .modinfo strings of the module image KO (bytes)."""
    m = re.search(rb"(?:^|\0)" + field.encode() + rb"=([^\0]*)\0", ko)
    return m.group(1).decode() if m else ""


def _module_files(tree):
    """{name: path} of every module under TREE (lib/modules/<release>/), '-' read as '_'."""
    found = {}
    for p in tree.rglob("*.ko*"):
        found[re.sub(r"\.ko(\.\w+)?$", "", p.name).replace("-", "_")] = p
    return found


def _builtin(tree):
    path = tree / "modules.builtin"
    if not path.exists():
        return set()
    return {Path(line.strip()).name.split(".ko")[0].replace("-", "_")
            for line in path.read_text().splitlines() if line.strip()}


def boot_modules(tree, wanted=BOOT_MODULES):
    """[(name, module bytes)] for WANTED and what they depend on, each after its dependencies;
    modules built into the kernel are left out."""
    files, builtin = _module_files(tree), _builtin(tree)
    order, seen = [], set()

    def visit(name):
        if name in seen or name in builtin:
            return
        seen.add(name)
        if name not in files:
            raise FetchError(f"module '{name}' is neither built in nor under {tree}")
        ko = _ko_bytes(files[name])
        for dep in filter(None, _modinfo(ko, "depends").split(",")):
            visit(dep.replace("-", "_"))
        order.append((name, ko))

    for name in wanted:
        visit(name)
    return order


def kernel_dir(kernel):
    return vm_cache() / "kernels" / f"{kernel.name}-{kernel.arch}"


def fetch(kernel, log=print):
    """The kernel's directory in the cache, fetched and unpacked when missing: vmlinuz, config,
    release (the package and version), modules/<name>.ko and modules/order."""
    home = kernel_dir(kernel)
    if (home / "release").exists():
        return home
    apt = Apt(kernel.arch)
    package, version = apt.image_package(kernel)
    log(f"vm: fetching {package} {version} ({kernel.suite})")
    shutil.rmtree(home, ignore_errors=True)
    with tempfile.TemporaryDirectory(dir=vm_cache()) as tmp:
        deb = apt.download(package, version, tmp)
        tree = Path(tmp) / "tree"
        _run(["dpkg-deb", "-x", str(deb), str(tree)])
        vmlinuz = sorted((tree / "boot").glob("vmlinu*"))
        config = sorted((tree / "boot").glob("config-*"))
        # trixie's packages have merged /usr: the modules are under usr/lib.
        modules = next((p for p in (tree / "lib" / "modules", tree / "usr" / "lib" / "modules")
                        if p.is_dir()), tree / "lib" / "modules")
        releases = sorted(modules.iterdir()) if modules.is_dir() else []
        if len(vmlinuz) != 1 or len(config) != 1 or len(releases) != 1:
            raise FetchError(f"{deb.name}: expected one kernel, config and module tree, found "
                             f"{vmlinuz}, {config}, {releases}")
        staging = home.with_name(home.name + ".new")
        shutil.rmtree(staging, ignore_errors=True)
        (staging / "modules").mkdir(parents=True)
        shutil.copy(vmlinuz[0], staging / "vmlinuz")
        shutil.copy(config[0], staging / "config")
        mods = boot_modules(releases[0])
        for name, ko in mods:
            (staging / "modules" / f"{name}.ko").write_bytes(ko)
        (staging / "modules" / "order").write_text("".join(f"{n}\n" for n, _ in mods))
        (staging / "release").write_text(f"{package} {version} {releases[0].name}\n")
        staging.rename(home)
    return home


# ---- the initramfs: a cpio archive in the kernel's "newc" format, written here ----------------


def _cpio_entry(name, mode, data=b"", ino=1):
    name_b = name.encode() + b"\0"
    fields = (ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(name_b), 0)
    head = b"070701" + b"".join(b"%08X" % f for f in fields)
    pad = lambda n: b"\0" * (-n % 4)  # noqa: E731
    return head + name_b + pad(len(head) + len(name_b)) + data + pad(len(data))


def write_initramfs(path, files, dirs=(), links=()):
    """A gzipped newc cpio at PATH: DIRS, then FILES {name: (mode, bytes)}, then LINKS
    {name: target} (symbolic)."""
    out, ino = [], 1
    for d in dirs:
        out.append(_cpio_entry(d, 0o040755, ino=ino))
        ino += 1
    for name, (mode, data) in files.items():
        out.append(_cpio_entry(name, 0o100000 | mode, data, ino))
        ino += 1
    for name, target in links.items():
        out.append(_cpio_entry(name, 0o120777, target.encode(), ino))
        ino += 1
    out.append(_cpio_entry("TRAILER!!!", 0, ino=0))
    tmp = Path(str(path) + ".tmp")
    with gzip.open(tmp, "wb", compresslevel=1) as f:
        f.write(b"".join(out))
    tmp.rename(path)


def initramfs(kernel):
    """The kernel's initramfs (busybox, its boot modules, tests/vm/init), rebuilt when the init
    script or busybox is newer than it."""
    home = fetch(kernel)
    path = home / "initramfs.cpio.gz"
    init = HERE / "init"
    busybox = BUSYBOX
    if kernel.arch != "amd64":
        import rootfs  # the other architecture's busybox-static, from its guest's tree
        busybox = rootfs.make() / "bin" / "busybox"
    if not busybox.exists():
        raise FetchError(f"'{busybox}' is missing (Debian's busybox-static)")
    if path.exists() and path.stat().st_mtime > max(init.stat().st_mtime,
                                                     busybox.stat().st_mtime):
        return path
    order = (home / "modules" / "order").read_text().split()
    files = {"init": (0o755, init.read_bytes()), "bin/busybox": (0o755, busybox.read_bytes()),
             "modules/order": (0o644, "".join(f"{n}\n" for n in order).encode())}
    for n in order:
        files[f"modules/{n}.ko"] = (0o644, (home / "modules" / f"{n}.ko").read_bytes())
    dirs = ("bin", "dev", "proc", "sys", "modules", "lower", "upper", "newroot", "hostfs")
    write_initramfs(path, files, dirs, {"bin/sh": "busybox"})
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("fetch")
    f.add_argument("names", nargs="*")
    sub.add_parser("list")
    args = ap.parse_args()
    if args.cmd == "list":
        for k in KERNELS.values():
            rel = kernel_dir(k) / "release"
            print(f"{k.name:10} {k.suite:20} {rel.read_text().strip() if rel.exists() else '-'}")
        return 0
    try:
        for name in args.names or KERNELS:
            if name not in KERNELS:
                raise FetchError(f"unknown kernel '{name}' (known: {', '.join(KERNELS)})")
            print(f"{name}: {initramfs(KERNELS[name])}")
    except FetchError as e:
        print(f"vm: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
