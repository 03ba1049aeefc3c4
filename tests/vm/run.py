#!/usr/bin/env python3
"""gospan's end-to-end tests in virtual machines, one per kernel: what `make vm-test` runs.

Each boot is qemu (TCG: no KVM, nested KVM hangs on the machines this runs on) with one of
Debian's kernels (tests/vm/kernels.py fetches them), this machine's / shared read-only over 9p
under an overlay whose writes stay in the guest's memory, and the boot's results directory
shared writable. An arm64 boot's root is Debian's arm64 packages instead (tests/vm/rootfs.py),
with this tree, the build directory and the build cache at their paths, and its gospan is
BUILD/arm64/gospan (make CROSS=arm64). Inside, tests/vm/guest.py hears what gospan says at attach and runs a subset
of tests/e2e with pytest against the gospan built here (GOSPAN_BUILD). The Go services those
tests build are built here first, so the guest's `go build` finds them up to date.

    python3 tests/vm/run.py                     every boot, JOBS at a time
    python3 tests/vm/run.py 6.1 5.10            those boots only
    python3 tests/vm/run.py --slice             CI's slice (SLICE: 6.1 and 6.12-arm64, SLICE_TESTS)
    python3 tests/vm/run.py --jobs 1            one boot at a time (default: one a CPU, JOBS)
    python3 tests/vm/run.py --list              the boots and what each runs
    python3 tests/vm/run.py --table FILE        the table of the results in FILE (results.json)

Results: $GOSPAN_BUILD/vm/<boot>/ (serial.log, console.log, guest.json, gospan.log, junit.xml,
pytest.log) and $GOSPAN_BUILD/vm/results.json (each boot's latest run of its own tests: a run
of some boots updates their rows), with the table in $GOSPAN_BUILD/vm/results.md; a run with
--tests or --slice writes results-tests.json and .md instead. A run of every boot rewrites
COMPATIBILITY.md's kernel section. The exit status is 0 when every boot ran and each did what
it is expected to (BOOTS).
"""

import argparse
import concurrent.futures
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO / "tests" / "e2e"))

import kernels  # noqa: E402
import rootfs  # noqa: E402
from matrix import built_from, para, rewrite_section  # noqa: E402

BUILD = Path(os.environ.get("GOSPAN_BUILD") or REPO / "build").resolve()
QEMU = {"amd64": "qemu-system-x86_64", "arm64": "qemu-system-aarch64"}
# Go's name of each architecture, and the serial console of its qemu machine.
GOARCH = {"amd64": "amd64", "arm64": "arm64"}
CONSOLE = {"amd64": "ttyS0", "arm64": "ttyAMA0"}
MEMORY = "4G"
CPUS = 2
# How TCG runs the guest's CPUs: one host thread each, or all in one thread by turns. amd64
# guests died twice (6.12 and 6.12-cgroup1, 2026-12-07) with "Oops: int3" in __schedule, on a
# static branch the kernel was patching (text_poke_bp) while the other vCPU's thread ran a stale
# translation of it; one thread for both vCPUs cannot race that way. The guest still has two
# CPUs, and with a boot a CPU (JOBS) the host's CPUs stay busy. arm64 guests patch their text
# otherwise and never did this; theirs are the longest boots, so they keep a thread a vCPU.
TCG_THREAD = {"amd64": os.environ.get("GOSPAN_VM_TCG_THREAD", "single"), "arm64": "multi"}
# Boots running at a time: one a CPU of this machine (run_boots says why).
JOBS = os.cpu_count() or 1

# The end-to-end tests run inside: what a kernel changes for gospan (BPF loading and
# verification, uprobes, the ring buffer, sockops and sk_msg, cgroups), at a cost TCG affords.
SUBSET_FILES = (
    "tests/e2e/test_http_server.py",
    "tests/e2e/test_distributed.py",
    "tests/e2e/test_grpc.py",
    "tests/e2e/test_functions.py",
    "tests/e2e/test_service_unharmed.py",
    "tests/e2e/test_datastores.py",
)
# Left out of SUBSET: each starts a gospan of its own (an attach takes 4 to 6 s in an amd64
# guest, 19 s in an arm64 one, most of a boot's time) to check what no kernel changes, and runs
# on this machine's kernel in `make test`.
NOT_IN_VMS = (
    # Six attaches under load: the kernel's part (detach, and the cleanup of a SIGKILLed gospan)
    # is in test_service_unharmed_by_attach_detach_and_kill, which stays.
    "test_service_unharmed.py::test_service_unharmed_by_repeated_kills_and_restarts",
    # Settings of the query text: user space alone.
    "test_datastores.py::test_raw_setting_keeps_the_text",
    "test_datastores.py::test_none_setting_drops_the_text",
    # One plain uprobe link per probe forced where uprobe_multi exists: 6.1 has no uprobe_multi,
    # so its boot runs the whole subset with plain links for real.
    "test_datastores.py::test_plain_uprobe_links",
    # What gospan finds in a binary and says at attach: the analysis, in user space.
    "test_functions.py::test_binary_without_net_http",
    "test_functions.py::test_attach_line_counts_functions",
    "test_grpc.py::test_service_without_grpc_gets_no_grpc_probes",
    # Which maps gospan makes for a net/http service: user space's choice.
    "test_http_server.py::test_maps_of_families_the_service_lacks_are_not_made",
)
SUBSET = SUBSET_FILES + tuple(a for t in NOT_IN_VMS for a in ("--deselect", f"tests/e2e/{t}"))
# Where trace context is what changes (lockdown, cgroups): the two-service tests alone.
CONTEXT = ("tests/e2e/test_distributed.py",)
# A slice of tests/e2e/test_go_versions.py's releases for arm64, each built plain, stripped and
# PIE with GOARCH=arm64: the first with arm64's register ABI, then about every third release
# to the newest (the offset tables' layouts change along the way, and Go 1.24's maps).
GO_ARM64 = ("1.18.10", "1.21.13", "1.24.13", "1.27.4")
GO_FLAVOURS = ("plain", "stripped", "pie")
# Its HTTP/2 server cells: the oldest release's writer state, and Go 1.27's (net/http/internal/
# http2, whose requests end at http2Handler.ServeHTTP's RETs).
GO_ARM64_H2 = (("1.18.10", "stripped"), ("1.27.4", "plain"))


def go_versions_tests(versions, h2):
    """test_go_versions.py's cells of VERSIONS in each of GO_FLAVOURS, its HTTP/2 server cells
    H2 ((version, flavour)), and its check that the release before the register ABI is refused:
    pytest arguments."""
    cells = " or ".join(f"{v}-{f}" for v in versions for f in GO_FLAVOURS)
    h2cells = " or ".join(f"{v}-{f}" for v, f in h2)
    return ("tests/e2e/test_go_versions.py", "-k",
            f"(test_go_version_is_traced and ({cells})) or "
            f"(test_go_version_http2_server and ({h2cells})) or "
            "test_go_before_register_abi_is_refused")


@dataclass
class Boot:
    name: str
    kernel: str  # a name of kernels.KERNELS
    cmdline: str = ""
    cgroup: str = "v2"  # v2, hybrid or v1: tests/vm/init mounts the hierarchies so
    tests: tuple = SUBSET
    # Whether gospan is to attach: False where it must refuse (below its kernel floor).
    attaches: bool = True
    timeout: int = 900  # seconds, the whole boot
    # test_go_versions.py's releases built here for the boot (GO_FLAVOURS each), for a guest of
    # another architecture, which has no go
    go_versions: tuple = ()
    go_h2: tuple = ()  # and its HTTP/2 server cells ((version, flavour))
    # Seconds it took, about, two boots at a time on a loaded 2-CPU host (2026-12-07): the
    # order of the first run, before results.json has this host's own (run_boots).
    expect: int = 100


BOOTS = {b.name: b for b in (
    Boot("6.1", "6.1", expect=500),
    Boot("5.10", "5.10", attaches=False, tests=(), expect=50),
    Boot("6.12-bpo", "6.12-bpo", expect=500),
    # The subset ran on 6.12 already (bookworm-backports): hybrid cgroups change the context.
    Boot("6.12", "6.12", cgroup="hybrid", tests=CONTEXT, expect=150),
    Boot("6.12-lockdown", "6.12", cmdline="lockdown=integrity", tests=CONTEXT),
    Boot("6.12-cgroup1", "6.12", cgroup="v1", tests=CONTEXT),
    # arm64: trixie's arm64 kernel on qemu's virt machine, Debian 12's arm64 userland
    # (tests/vm/rootfs.py) as its root, gospan cross-built (make CROSS=arm64).
    Boot("6.12-arm64", "6.12-arm64", timeout=1500, expect=1050),
    Boot("6.12-arm64-go", "6.12-arm64", tests=go_versions_tests(GO_ARM64, GO_ARM64_H2),
         go_versions=GO_ARM64, go_h2=GO_ARM64_H2, expect=320),
)}
# CI's: Debian 12's own kernel (6.1, the oldest gospan is verified on), no lockdown, cgroup v2;
# and arm64.
SLICE = ("6.1", "6.12-arm64")
SLICE_TESTS = ("tests/e2e/test_http_server.py", "tests/e2e/test_distributed.py")


class RunError(Exception):
    pass


def log(msg):
    print(f"vm: {msg}", flush=True)


def said(msg):
    """kernels.py's and rootfs.py's lines, which carry their own "vm: "."""
    print(msg, flush=True)


# ---- the services the tests build, built here -------------------------------------------------


HOST_ARCH = {"x86_64": "amd64", "aarch64": "arm64"}.get(os.uname().machine, os.uname().machine)


def arch_build(arch):
    """Where the gospan a guest of ARCH runs is built: BUILD for this machine's architecture,
    BUILD/<arch> for another (make CROSS=arm64)."""
    return BUILD if arch == HOST_ARCH else BUILD / arch


def prebuilt_list(arch):
    return BUILD / "vm" / ("prebuilt" if arch == HOST_ARCH else f"prebuilt-{arch}")


def go_version():
    import conftest
    return subprocess.run(["go", "env", "GOVERSION"], check=True, capture_output=True,
                          text=True, env=conftest._go_env()).stdout.strip()


def prebuild(arch):
    """The Go programs SUBSET's fixtures build, built for ARCH (GOARCH) by the same functions
    into arch_build(ARCH)/e2e, and listed in prebuilt_list(ARCH) for the guest's go
    (tests/vm/bin/go)."""
    import conftest
    import test_distributed
    t0 = time.monotonic()
    build = arch_build(arch)
    # The tests' build functions take the environment as it is: GOARCH picks the architecture
    # (and dbmix's cache key, datastores.build_dbmix). This machine's own is built as the
    # tests build it, with no GOARCH: the guest's tests look for the same key (with GOARCH=amd64
    # here, a fresh cache had no dbmix under theirs, and the 6.1 guest spent 130 s building it).
    saved = os.environ.pop("GOARCH", None)
    if arch != HOST_ARCH:
        os.environ["GOARCH"] = GOARCH[arch]
    try:
        env = conftest._go_env()
        version = go_version()
        out = build / "e2e" / "httpserver"
        out.parent.mkdir(parents=True, exist_ok=True)
        res = subprocess.run(["go", "build", "-o", str(out), "."], cwd=conftest.EXAMPLE_SRC,
                             capture_output=True, text=True, env=env)
        if res.returncode:
            raise RunError(f"cannot build {conftest.EXAMPLE_SRC}:\n{res.stderr}")
        for src in (test_distributed.FRONTEND_SRC, test_distributed.BACKEND_SRC):
            test_distributed.build_example(src, build, version)
        import test_functions
        import test_grpc
        test_grpc.build_grpcmix(build)
        test_functions.build(build, "functions")
        test_functions.build(build, "functions-stripped", ["-ldflags=-s -w"])
        res = subprocess.run(["go", "build", "-o", str(build / "e2e" / "fn-nohttp"), "."],
                             cwd=test_functions.SRC / "nohttp", capture_output=True, text=True,
                             env=env)
        if res.returncode:
            raise RunError(f"cannot build {test_functions.SRC / 'nohttp'}:\n{res.stderr}")
        # dbmix (test_datastores.py) is kept in the build cache, where the guest finds it.
        import test_datastores
        test_datastores.built_dbmix(test_datastores.EVERY_DRIVER)
        built = [build / "e2e" / n for n in (
            "httpserver", "frontend", "backend", "functions", "functions-stripped",
            "fn-nohttp", "grpcmix/grpcmix-server", "grpcmix/grpcmix-client")]
        # test_go_versions.py's services, for a guest without go (another architecture).
        if arch != HOST_ARCH:
            import test_go_versions as tgv
            for v in dict.fromkeys(v for b in BOOTS.values() for v in b.go_versions
                                   if kernels.KERNELS[b.kernel].arch == arch):
                for f in GO_FLAVOURS:
                    out = build / "e2e" / f"server-go{v}-{f}"
                    tgv.build(v, f, out)
                    built.append(out)
            for v, f in dict.fromkeys(c for b in BOOTS.values() for c in b.go_h2
                                      if kernels.KERNELS[b.kernel].arch == arch):
                out = build / "e2e" / f"h2server-go{v}-{f}"
                tgv.build(v, f, out, tgv.H2_SRC)
                built.append(out)
            refused = tgv.BEFORE_REGABI[arch][0]
            out = build / "e2e" / f"server-go{refused}"
            res = subprocess.run([str(tgv.toolchain(refused)), "build", "-o", str(out), "."],
                                 cwd=tgv.LEGACY_SRC, capture_output=True, text=True,
                                 env=tgv._go_env(refused))
            if res.returncode:
                raise RunError(f"cannot build {tgv.LEGACY_SRC} with go{refused}:\n"
                               f"{res.stderr}")
            built.append(out)
    finally:
        os.environ.pop("GOARCH", None)
        if saved is not None:
            os.environ["GOARCH"] = saved
    listed = prebuilt_list(arch)
    listed.parent.mkdir(parents=True, exist_ok=True)
    listed.write_text("".join(f"{p}\n" for p in built))
    log(f"services built for {arch} with {version} in {time.monotonic() - t0:.1f} s")


# ---- one boot ---------------------------------------------------------------------------------


# What the job hands the guest of this machine's environment: where Go and the caches are.
CACHE_VARS = ("GOPATH", "GOROOT", "GOCACHE", "GOMODCACHE", "XDG_CACHE_HOME")


def binds():
    """The machine's directories a guest whose root is not the machine's own needs at the same
    paths: the tree, the build directory, the build cache (dbmix)."""
    import matrix
    paths = sorted({REPO, BUILD, matrix.cache_dir("GOSPAN_DBMIX_CACHE")})
    return [p for p in paths if not any(q != p and q in p.parents for q in paths)]


def job_script(out, boot):
    """The shell script the guest's init runs, chrooted into the overlay: this machine's
    environment, then guest.py. A guest of another architecture runs its own tree's Python, and
    no go: what the tests build is built here (prebuild), and tests/vm/bin/go answers for it."""
    arch = kernels.KERNELS[boot.kernel].arch
    if arch == HOST_ARCH:
        python = Path(sys.executable).resolve()
        path = ":".join([str(HERE / "bin"), str(python.parent),
                         os.environ.get("PATH", "/usr/bin:/bin")])
        # A boot beside another on a loaded host (both vCPUs in one thread): an attach once took
        # over the tests' 30 s in the 6.12-bpo boot, where it takes 4 to 6 s on a quiet one.
        env = {"GOSPAN_VM_GO": shutil.which("go") or "go", "GOSPAN_TEST_SLOWDOWN": "2"}
    else:
        python = Path("/usr/bin/python3")
        path = f"{HERE / 'bin'}:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
        # TCG runs an arm64 guest slower than an amd64 one on this machine: a gospan's attach
        # to the services of test_distributed.py took more than the tests' 30 s, five attaches
        # in a row more than test_service_unharmed.py's 120 s of load.
        env = {"GOSPAN_VM_GOVERSION": go_version(), "GOARCH": GOARCH[arch],
               "GOSPAN_TEST_SLOWDOWN": "4"}
    env.update({"PATH": path, "HOME": str(Path.home()), "GOSPAN_BUILD": str(arch_build(arch)),
                "LANG": "C.UTF-8", "GOTOOLCHAIN": "local", "GOPROXY": "off",
                "GOFLAGS": "-mod=mod"})
    if prebuilt_list(arch).exists():
        env["GOSPAN_VM_PREBUILT"] = str(prebuilt_list(arch))
    for k in CACHE_VARS:
        if os.environ.get(k):
            env[k] = os.environ[k]
    lines = ["set -e"] + [f"export {k}={shlex.quote(v)}" for k, v in env.items()]
    lines.append(f"cd {shlex.quote(str(REPO))}")
    lines.append(shlex.join([str(python), str(HERE / "guest.py"), "/vmout", *boot.tests]))
    return "\n".join(lines) + "\n"


# The guest's own, in memory (tests/vm/init): the checkout, the build and the caches are kept
# through them.
GUEST_TMP = (Path("/tmp"), Path("/run"), Path("/var/tmp"))


def kept_dirs(arch):
    """The run's directories that lie under GUEST_TMP, for init to keep: a CI checkout in /tmp,
    and Go's and the build's caches where the environment puts them there (without them the
    guest's `go build` cannot find the services built here up to date, and has no proxy). A
    guest of another architecture has only what binds() puts in its root, and no Go."""
    if arch != HOST_ARCH:
        dirs = binds()
    else:
        dirs = [REPO, BUILD, *(Path(os.environ[k]) for k in CACHE_VARS if os.environ.get(k))]
    under = {d.resolve() for d in dirs
             if d.is_dir() and any(d == t or t in d.parents for t in GUEST_TMP)}
    return [str(d) for d in sorted(under) if not any(q != d and q in d.parents for q in under)]


def qemu_argv(kernel_home, initrd, out, boot):
    arch = kernels.KERNELS[boot.kernel].arch
    cmdline = (f"console={CONSOLE[arch]} panic=-1 quiet gospan.cgroup={boot.cgroup} "
               f"{boot.cmdline}").strip()
    keep = kept_dirs(arch)
    if keep:
        if any("," in d or " " in d for d in keep):
            raise RunError(f"cannot share {keep} with the guest: a comma or a space in the path")
        cmdline += " gospan.keep=" + ",".join(keep)
    root = "/"
    machine = []
    extra = []
    if arch != HOST_ARCH:
        root = str(rootfs.make())
        cmdline += " gospan.binds=" + ",".join(str(p) for p in binds())
        extra = ["-virtfs", "local,path=/,mount_tag=hostfs,security_model=none,readonly=on,"
                            "multidevs=remap"]
    if arch == "arm64":
        machine = ["-M", "virt"]
    return [QEMU[arch], *machine, "-accel", f"tcg,thread={TCG_THREAD[arch]}", "-cpu", "max",
            "-smp", str(CPUS), "-m", MEMORY,
            "-nographic", "-no-reboot", "-kernel", str(kernel_home / "vmlinuz"),
            "-initrd", str(initrd), "-append", cmdline,
            "-virtfs", f"local,path={root},mount_tag=host,security_model=none,readonly=on,"
                       "multidevs=remap", *extra,
            "-virtfs", f"local,path={out},mount_tag=out,security_model=none"]


def junit_results(path):
    """{test id: 'passed' | 'failed' | 'skipped' | 'error'} from pytest's junit.xml."""
    got = {}
    if not path.exists():
        return got
    for case in ET.parse(path).getroot().iter("testcase"):
        name = f"{case.get('classname', '').rsplit('.', 1)[-1]}::{case.get('name')}"
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed"}.get(child.tag, child.tag)
        got[name] = outcome
    return got


def prepare(boots):
    """Each boot's kernel, initramfs and (another architecture's) root, fetched and made one
    after the other before any boot starts: the boots run side by side, and these share apt's
    state and the cache. {kernel name: (kernel's directory, initramfs)}."""
    ready = {}
    for b in boots:
        kernel = kernels.KERNELS[b.kernel]
        if b.kernel not in ready:
            ready[b.kernel] = (kernels.fetch(kernel, said), kernels.initramfs(kernel))
        if kernel.arch != HOST_ARCH:
            rootfs.make(said)
    return ready


def last_results():
    """{boot name: its latest result} from the last results.json (runs of the boots' own tests)."""
    path = BUILD / "vm" / "results.json"
    if not path.exists():
        return {}
    return {r["boot"]: r for r in json.loads(path.read_text()) if r["boot"] in BOOTS}


def run_boots(boots, ready, jobs):
    """BOOTS' results in BOOTS' order, JOBS of them running at a time, the longest first. A
    guest under TCG keeps about one of this machine's CPUs busy on average (its tests wait on
    services, exports and timers), so one boot a CPU keeps the CPUs busy without slowing each
    boot down by much."""
    t0 = time.monotonic()
    # How long each took in the last run of its own tests, else what it is expected to take:
    # the longest start first, so the last to end is not a long one started late.
    last = last_results()
    order = sorted(boots, key=lambda b: last.get(b.name, {}).get("seconds") or b.expect,
                   reverse=True)
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {b.name: pool.submit(run_boot, b, *ready[b.kernel]) for b in order}
        results = [futures[b.name].result() for b in boots]
    wall = round(time.monotonic() - t0, 1)
    for r in results:
        r["run"] = {"wall_seconds": wall, "jobs": jobs, "boots": len(boots)}
    log(f"{len(boots)} boots in {wall} s, {jobs} at a time")
    return results


def run_boot(boot, home, initrd):
    out = BUILD / "vm" / boot.name
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    (out / "job.sh").write_text(job_script(out, boot))
    argv = qemu_argv(home, initrd, out, boot)
    (out / "qemu.argv").write_text(shlex.join(argv) + "\n")
    log(f"{boot.name}: booting {(home / 'release').read_text().split()[0]}"
        f"{' ' + boot.cmdline if boot.cmdline else ''}, cgroup {boot.cgroup}")
    t0 = time.monotonic()
    timed_out = False
    with open(out / "serial.log", "wb") as serial:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=serial,
                                stderr=subprocess.STDOUT)
        try:
            proc.wait(boot.timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            proc.kill()
            proc.wait()
    seconds = round(time.monotonic() - t0, 1)
    guest = {}
    if (out / "guest.json").exists():
        guest = json.loads((out / "guest.json").read_text())
    tests = junit_results(out / "junit.xml")
    result = {"boot": boot.name, "kernel": boot.kernel, "seconds": seconds,
              "timed_out": timed_out, "qemu_exit": proc.returncode, "facts": guest.get("facts"),
              "gospan": guest.get("gospan"), "verifier": guest.get("verifier"),
              "times": guest.get("times"),
              "pytest_exit": guest.get("pytest_exit"), "tests": tests,
              "package": (home / "release").read_text().strip(), "cgroup": boot.cgroup,
              "cmdline": boot.cmdline, "date": time.strftime("%Y-%m-%d"),
              "tests_run": list(boot.tests)}
    result["problems"] = problems(boot, result)
    (out / "result.json").write_text(json.dumps(result, indent=1) + "\n")
    counts = {}
    for o in tests.values():
        counts[o] = counts.get(o, 0) + 1
    log(f"{boot.name}: {seconds} s, tests {counts or 'none'}"
        f"{'; ' + '; '.join(result['problems']) if result['problems'] else ''}")
    return result


def merged(results):
    """RESULTS with the latest result of each other boot from the last results.json, in BOOTS'
    order: a run of some boots updates their rows and keeps the others'."""
    by_boot = last_results()
    by_boot.update({r["boot"]: r for r in results})
    return [by_boot[b] for b in BOOTS if b in by_boot]


def problems(boot, r):
    """What makes the boot a failure, in words; [] when it did what BOOTS expects."""
    found = []
    if r["timed_out"]:
        found.append(f"the machine did not power off within {boot.timeout} s")
    g = r["gospan"]
    if g is None:
        found.append("the guest wrote no guest.json (see serial.log)")
        return found
    if g.get("hung"):
        found.append(f"gospan {g['hung']}")
    if boot.attaches and not g.get("attached"):
        found.append(f"gospan did not attach (exit {g.get('exit')})")
    if not boot.attaches and g.get("attached"):
        found.append("gospan attached where it was expected to refuse")
    if not boot.attaches and g.get("exit") in (0, None) or (g.get("exit") or 0) < 0:
        found.append(f"gospan ended with status {g.get('exit')}")
    if boot.tests:
        bad = sorted(t for t, o in r["tests"].items() if o in ("failed", "error"))
        if bad:
            found.append(f"{len(bad)} tests failed: {', '.join(bad[:8])}"
                         f"{' ...' if len(bad) > 8 else ''}")
        if not r["tests"]:
            found.append(f"pytest ran no test (exit {r['pytest_exit']}, see pytest.log)")
    return found


# ---- the table --------------------------------------------------------------------------------


def table(results):
    """A Markdown table of RESULTS: a row per boot."""
    rows = ["| boot | kernel | arch | lockdown | cgroup | gospan | tests | off, and why | time |",
            "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        f, g = r.get("facts") or {}, r.get("gospan") or {}
        tests = ", ".join(f"{n} {o}" for o, n in sorted(_counts(r["tests"]).items())) or "-"
        rows.append(f"| {r['boot']} | {f.get('release', r['kernel'])} | {f.get('arch', '?')} | "
                    f"{f.get('lockdown', '?')} | {r['cgroup']} | {_cell(_state(g))} | {tests} | "
                    f"{_cell('<br>'.join(_off(r)) or '-')} | {r['seconds']} s |")
    return "\n".join(rows) + "\n"


PAGE_BEGIN = "<!-- BEGIN kernels: written by tests/vm/run.py (make vm-test) -->"
PAGE_END = "<!-- END kernels -->"


def page_text(results, note=""):
    """COMPATIBILITY.md's kernel section for RESULTS (a full run's results.json)."""
    lines = ["## Kernels", ""]
    lines += para(
        "Each row is one boot of one of Debian's kernels (its package from Debian's archive) "
        "in qemu without KVM (TCG, 2 CPUs, 4 GB), this machine's files shared read-only over "
        "9p: inside, gospan is attached to examples/httpserver (what it says is off is quoted "
        "from its stderr), then the end-to-end tests listed run against the gospan built "
        "here: server and client spans (test_http_server.py), trace context across two "
        "services (test_distributed.py), gRPC (test_grpc.py), function spans "
        "(test_functions.py), attach, detach and kill under load (test_service_unharmed.py), "
        "PostgreSQL, SQLite and Redis calls (test_datastores.py, the servers run in the guest). "
        "The arm64 rows boot Debian's arm64 kernel on qemu's virt machine (TCG, `-cpu max`), "
        "with Debian 12's arm64 packages as the root (python3, PostgreSQL, Redis, gospan's "
        "libraries: tests/vm/rootfs.py), gospan cross-built against them (`make CROSS=arm64`) "
        "and the Go services built here with GOARCH=arm64; the `-go` row runs "
        "test_go_versions.py's cells of Go " + ", ".join(GO_ARM64) + " (plain, stripped, PIE: "
        "spans, an incoming traceparent joined, one sent at the socket layer) and its check "
        "that Go 1.17, before arm64's register ABI, is refused. On arm64 gospan's entry probes "
        "are single-stepped (the function's first instruction, a load) and its RET probes "
        "simulated, as its attach line says. "
        "Where the kernel refuses gospan's BPF programs, the verifier's own reason is given, "
        "from gospan's debug log and from bpftool loading each object (gospan's message names "
        "only the errno, and its debug log cuts each libbpf message at 1 kB, where the "
        "verifier's reason often comes later). Do not edit by hand: run `make vm-test`.")
    lines += ["", "| kernel | package | lockdown | cgroup | gospan | tests | off, and why |",
              "|---|---|---|---|---|---|---|"]
    for r in results:
        f, g = r.get("facts") or {}, r.get("gospan") or {}
        tests = ", ".join(f"{n} {o}" for o, n in sorted(_counts(r["tests"]).items()))
        files = sorted({t.split("::")[0] for t in r["tests"]})
        tests = f"{tests} ({', '.join(files)})" if tests else "-"
        pkg = r["package"].split()
        state = _state(g)
        lines.append(f"| {f.get('release', r['kernel'])} {f.get('arch', '')} | "
                     f"{pkg[0]} {pkg[1]} | {f.get('lockdown', '?')} | {r['cgroup']} | "
                     f"{_cell(state)} | {tests} | {_cell('<br>'.join(_off(r)) or '-')} |")
    bad = [r for r in results if r["problems"]]
    if bad:
        lines += ["", "Failures:", ""]
        lines += [f"- {r['boot']}: " + "; ".join(r["problems"]).replace("|", "\\|")
                  for r in bad]
    return "\n".join(lines + ([""] + para(note) if note else [])) + "\n"


def page_note(results):
    dates = sorted({r.get("date", "?") for r in results})
    took = sum(r["seconds"] for r in results) / 60
    runs = {json.dumps(r["run"], sort_keys=True) for r in results if r.get("run")}
    if len(runs) == 1 and all(r.get("run") for r in results):
        run = results[0]["run"]
        how = (f"{run['wall_seconds'] / 60:.1f} minutes, {run['jobs']} boots at a time "
               f"({took:.0f} minutes of boots added up)")
    elif runs:
        how = f"{took:.0f} minutes of boots added up, from {len(runs)} runs"
    else:
        how = f"{took:.0f} minutes of boots added up"
    return (f"Run on {', '.join(dates)}: {len(results)} boots in {how}, on a host of "
            f"{os.cpu_count()} CPUs. {built_from()}")


def _counts(tests):
    counts = {}
    for o in tests.values():
        counts[o] = counts.get(o, 0) + 1
    return counts


def _cell(text):
    return text.replace("|", "\\|")


def _state(g):
    if g.get("attached"):
        return f"attached in {g['attach_seconds']} s"
    last = [x for x in g.get("stderr", []) if x.startswith("gospan")][-1:]
    return f"refused (exit {g.get('exit')}): {last[0] if last else ''}"


def _off(r):
    """What gospan said was off, then why the verifier refused what it refused: as gospan's
    debug log has it, and each object loaded by bpftool."""
    g = r.get("gospan") or {}
    off = list(g.get("off", []))
    # Where gospan did not attach, what the verifier said in its debug log (its own lines only
    # name the errno).
    said = [x for x in g.get("debug") or [] if not x.startswith("gospan")]
    if said:
        off.append("gospan's debug log: " + "; ".join(dict.fromkeys(said)))
    for obj, v in (r.get("verifier") or {}).items():
        where = f" at `{v['source']}`" if v.get("source") else ""
        off.append(f"verifier refuses {obj} ({v['program']}){where}: {v['reason']}")
    return off


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("boots", nargs="*", help=f"boots to run (default: all: {', '.join(BOOTS)})")
    ap.add_argument("--slice", action="store_true", help="CI's slice: " + ", ".join(SLICE))
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--table", metavar="FILE", help="print the table of a results.json")
    ap.add_argument("--page", metavar="FILE",
                    help="rewrite COMPATIBILITY.md's kernel section from a results.json")
    ap.add_argument("--no-prebuild", action="store_true")
    ap.add_argument("--jobs", type=int, default=JOBS,
                    help=f"boots running at a time (default: {JOBS}, one a CPU)")
    ap.add_argument("--tests", nargs="*", metavar="ARG",
                    help="pytest arguments instead of each boot's tests (none: gospan alone)")
    args = ap.parse_args()
    if args.list:
        for b in BOOTS.values():
            files = " ".join(Path(t).name for t in b.tests if t.endswith(".py"))
            left = b.tests.count("--deselect")
            print(f"{b.name:14} kernel {b.kernel:9} cgroup {b.cgroup} {b.cmdline:20} "
                  f"{files or '(gospan alone)'}{f' ({left} tests left out)' if left else ''}")
        return 0
    if args.table:
        print(table(json.loads(Path(args.table).read_text())), end="")
        return 0
    if args.page:
        results = json.loads(Path(args.page).read_text())
        rewrite_section(page_text(results, page_note(results)), PAGE_BEGIN, PAGE_END)
        return 0
    names = list(SLICE) if args.slice else args.boots or list(BOOTS)
    for n in names:
        if n not in BOOTS:
            print(f"vm: unknown boot '{n}' (known: {', '.join(BOOTS)})", file=sys.stderr)
            return 2
    boots = [BOOTS[n] for n in names]
    arches = list(dict.fromkeys(kernels.KERNELS[b.kernel].arch for b in boots))
    for arch in arches:
        gospan = arch_build(arch) / "gospan"
        if not os.access(gospan, os.X_OK):
            how = "make" if arch == HOST_ARCH else f"make CROSS={arch}"
            print(f"vm: '{gospan}' is not built ({how})", file=sys.stderr)
            return 2
    try:
        if not args.no_prebuild:
            for arch in arches:
                prebuild(arch)
        for b in boots:
            if args.tests is not None:
                b.tests = tuple(args.tests)
            elif args.slice:
                b.tests = SLICE_TESTS
        ready = prepare(boots)
        results = run_boots(boots, ready, max(1, min(args.jobs, len(boots))))
    except (RunError, kernels.FetchError, rootfs.RootfsError) as e:
        print(f"vm: {e}", file=sys.stderr)
        return 1
    # A run with other tests than the boots' own (--tests, --slice) is kept apart.
    own = args.tests is None and not args.slice
    name = "results" if own else "results-tests"
    shown = merged(results) if own else results
    (BUILD / "vm" / f"{name}.json").write_text(json.dumps(shown, indent=1) + "\n")
    (BUILD / "vm" / f"{name}.md").write_text(table(shown))
    print(table(shown), end="")
    if not args.boots and not args.slice and args.tests is None:
        rewrite_section(page_text(results, page_note(results)), PAGE_BEGIN, PAGE_END)
    failed = [r["boot"] for r in results if r["problems"]]
    if failed:
        log(f"failed: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
