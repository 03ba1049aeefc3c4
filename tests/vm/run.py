#!/usr/bin/env python3
"""gospan's end-to-end tests in virtual machines, one per kernel: what `make vm-test` runs.

Each boot is qemu (TCG: no KVM, nested KVM hangs on the machines this runs on) with one of
Debian's kernels (tests/vm/kernels.py fetches them), this machine's / shared read-only over 9p
under an overlay whose writes stay in the guest's memory, and the boot's results directory
shared writable. Inside, tests/vm/guest.py hears what gospan says at attach and runs a subset
of tests/e2e with pytest against the gospan built here (GOSPAN_BUILD). The Go services those
tests build are built here first, so the guest's `go build` finds them up to date.

    python3 tests/vm/run.py                     every boot, one after the other
    python3 tests/vm/run.py 6.1 5.10            those boots only
    python3 tests/vm/run.py --slice             CI's slice (6.1, no lockdown, cgroup v2)
    python3 tests/vm/run.py --list              the boots and what each runs
    python3 tests/vm/run.py --table FILE        the table of the results in FILE (results.json)

Results: $GOSPAN_BUILD/vm/<boot>/ (serial.log, console.log, guest.json, gospan.log, junit.xml,
pytest.log) and $GOSPAN_BUILD/vm/results.json, with the table in $GOSPAN_BUILD/vm/results.md.
The exit status is 0 when every boot ran and each did what it is expected to (BOOTS).
"""

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO / "tests" / "e2e"))

import kernels  # noqa: E402

BUILD = Path(os.environ.get("GOSPAN_BUILD") or REPO / "build").resolve()
QEMU = {"amd64": "qemu-system-x86_64"}
MEMORY = "4G"
CPUS = 2

# The end-to-end tests run inside: what a kernel changes for gospan (BPF loading and
# verification, uprobes, the ring buffer, sockops and sk_msg, cgroups), at a cost TCG affords.
SUBSET = (
    "tests/e2e/test_http_server.py",
    "tests/e2e/test_distributed.py",
)


@dataclass
class Boot:
    name: str
    kernel: str  # a name of kernels.KERNELS
    cmdline: str = ""
    cgroup: str = "v2"
    tests: tuple = SUBSET
    # Whether gospan is to attach: False where it must refuse (below its kernel floor).
    attaches: bool = True
    timeout: int = 900  # seconds, the whole boot
    notes: list = field(default_factory=list)


BOOTS = {b.name: b for b in (
    Boot("6.1", "6.1"),
    Boot("5.10", "5.10", attaches=False, tests=()),
    Boot("6.12-bpo", "6.12-bpo"),
    Boot("6.12", "6.12"),
    Boot("6.1-lockdown", "6.1", cmdline="lockdown=integrity"),
    Boot("6.1-cgroup1", "6.1", cgroup="v1"),
)}
SLICE = ("6.1",)


class RunError(Exception):
    pass


def log(msg):
    print(f"vm: {msg}", flush=True)


# ---- the services the tests build, built here -------------------------------------------------


def prebuild():
    """The Go programs SUBSET's fixtures build, built by the same functions into BUILD/e2e."""
    import conftest
    import test_distributed
    t0 = time.monotonic()
    env = conftest._go_env()
    go_version = subprocess.run(["go", "env", "GOVERSION"], check=True, capture_output=True,
                                text=True, env=env).stdout.strip()
    out = BUILD / "e2e" / "httpserver"
    out.parent.mkdir(parents=True, exist_ok=True)
    res = subprocess.run(["go", "build", "-o", str(out), "."], cwd=conftest.EXAMPLE_SRC,
                         capture_output=True, text=True, env=env)
    if res.returncode:
        raise RunError(f"cannot build {conftest.EXAMPLE_SRC}:\n{res.stderr}")
    for src in (test_distributed.FRONTEND_SRC, test_distributed.BACKEND_SRC):
        test_distributed.build_example(src, BUILD, go_version)
    log(f"services built with {go_version} in {time.monotonic() - t0:.1f} s")


# ---- one boot ---------------------------------------------------------------------------------


def job_script(out, boot):
    """The shell script the guest's init runs, chrooted into the overlay: this machine's
    environment, then guest.py."""
    python = Path(sys.executable).resolve()
    path = ":".join([str(python.parent), os.environ.get("PATH", "/usr/bin:/bin")])
    env = {"PATH": path, "HOME": str(Path.home()), "GOSPAN_BUILD": str(BUILD), "LANG": "C.UTF-8",
           "GOTOOLCHAIN": "local", "GOPROXY": "off", "GOFLAGS": "-mod=mod"}
    for k in ("GOPATH", "GOROOT", "GOCACHE", "GOMODCACHE", "XDG_CACHE_HOME"):
        if os.environ.get(k):
            env[k] = os.environ[k]
    lines = ["set -e"] + [f"export {k}={shlex.quote(v)}" for k, v in env.items()]
    lines.append(f"cd {shlex.quote(str(REPO))}")
    lines.append(shlex.join([str(python), str(HERE / "guest.py"), "/vmout", *boot.tests]))
    return "\n".join(lines) + "\n"


def qemu_argv(kernel_home, initrd, out, boot):
    cmdline = f"console=ttyS0 panic=-1 quiet gospan.cgroup={boot.cgroup} {boot.cmdline}".strip()
    return [QEMU[kernels.KERNELS[boot.kernel].arch],
            "-accel", "tcg,thread=multi", "-cpu", "max", "-smp", str(CPUS), "-m", MEMORY,
            "-nographic", "-no-reboot", "-kernel", str(kernel_home / "vmlinuz"),
            "-initrd", str(initrd), "-append", cmdline,
            "-virtfs", "local,path=/,mount_tag=host,security_model=none,readonly=on,"
                       "multidevs=remap",
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


def run_boot(boot):
    kernel = kernels.KERNELS[boot.kernel]
    home = kernels.fetch(kernel, log)
    initrd = kernels.initramfs(kernel)
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
              "gospan": guest.get("gospan"), "verifier": guest.get("verifier"), "times": guest.get("times"),
              "pytest_exit": guest.get("pytest_exit"), "tests": tests,
              "package": (home / "release").read_text().strip(), "cgroup": boot.cgroup,
              "cmdline": boot.cmdline}
    result["problems"] = problems(boot, result)
    (out / "result.json").write_text(json.dumps(result, indent=1) + "\n")
    counts = {}
    for o in tests.values():
        counts[o] = counts.get(o, 0) + 1
    log(f"{boot.name}: {seconds} s, tests {counts or 'none'}"
        f"{'; ' + '; '.join(result['problems']) if result['problems'] else ''}")
    return result


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
    rows = ["| kernel | arch | lockdown | cgroup | gospan | tests | off, as gospan says | time |",
            "|---|---|---|---|---|---|---|---|"]
    for r in results:
        f, g = r.get("facts") or {}, r.get("gospan") or {}
        counts = {}
        for o in r["tests"].values():
            counts[o] = counts.get(o, 0) + 1
        tests = ", ".join(f"{n} {o}" for o, n in sorted(counts.items())) or "-"
        if g.get("attached"):
            state = f"attached in {g['attach_seconds']} s"
        else:
            last = [x for x in g.get("stderr", []) if x.startswith("gospan")][-1:]
            state = f"refused (exit {g.get('exit')}): {last[0] if last else ''}"
        off = list(g.get("off", []))
        off += [f"the kernel's verifier refuses {obj} ({v['program']}): {v['reason']}"
                for obj, v in (r.get("verifier") or {}).items()]
        off = "<br>".join(x.replace("|", "\\|") for x in off) or "-"
        rows.append(f"| {f.get('release', r['kernel'])} | {f.get('arch', '?')} | "
                    f"{f.get('lockdown', '?')} | {f.get('cgroup', r['cgroup'])} | "
                    f"{state.replace('|', chr(92) + '|')} | {tests} | {off} | {r['seconds']} s |")
    return "\n".join(rows) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("boots", nargs="*", help=f"boots to run (default: all: {', '.join(BOOTS)})")
    ap.add_argument("--slice", action="store_true", help="CI's slice: " + ", ".join(SLICE))
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--table", metavar="FILE", help="print the table of a results.json")
    ap.add_argument("--no-prebuild", action="store_true")
    ap.add_argument("--tests", nargs="*", metavar="ARG",
                    help="pytest arguments instead of each boot's tests (none: gospan alone)")
    args = ap.parse_args()
    if args.list:
        for b in BOOTS.values():
            print(f"{b.name:14} kernel {b.kernel:9} cgroup {b.cgroup} {b.cmdline:20} "
                  f"{' '.join(Path(t).name for t in b.tests) or '(gospan alone)'}")
        return 0
    if args.table:
        print(table(json.loads(Path(args.table).read_text())), end="")
        return 0
    names = list(SLICE) if args.slice else args.boots or list(BOOTS)
    for n in names:
        if n not in BOOTS:
            print(f"vm: unknown boot '{n}' (known: {', '.join(BOOTS)})", file=sys.stderr)
            return 2
    if not os.access(BUILD / "gospan", os.X_OK):
        print(f"vm: '{BUILD / 'gospan'}' is not built (make)", file=sys.stderr)
        return 2
    try:
        if not args.no_prebuild:
            prebuild()
        boots = [BOOTS[n] for n in names]
        if args.tests is not None:
            for b in boots:
                b.tests = tuple(args.tests)
        results = [run_boot(b) for b in boots]
    except (RunError, kernels.FetchError) as e:
        print(f"vm: {e}", file=sys.stderr)
        return 1
    (BUILD / "vm" / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    (BUILD / "vm" / "results.md").write_text(table(results))
    print(table(results), end="")
    failed = [r["boot"] for r in results if r["problems"]]
    if failed:
        log(f"failed: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
