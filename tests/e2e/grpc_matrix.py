"""The grpc-go release matrix of test_grpc_versions.py: which releases, which Go toolchains, the
grpcmix builds (cached across runs), and the gRPC section of COMPATIBILITY.md.

Cells are (grpc-go release, Go toolchain, flavour). A toolchain is named as
tests/e2e/grpcmix/build.sh takes it: "local" (the installed go command, the newest Go here),
"go1.X.Y" (fetched through the Go module proxy, kept in the module cache) or the path of a go
command (Debian's Go 1.19, /usr/lib/go-1.19/bin/go).

Builds are kept in <cache>/grpcmix-<hash of tests/e2e/grpcmix>/<release>-<go>-<flavour>/, where
<cache> is $GOSPAN_GRPCMIX_CACHE, else $XDG_CACHE_HOME/gospan, else ~/.cache/gospan (as the
Collector and Jaeger builds are): a changed grpcmix program or build script (or
tests/e2e/mixbuild.sh, which it runs) gets a directory of its own, and a cell is built once per
machine whatever the checkout. <go> is the version the
toolchain really is (`go env GOVERSION`), so a newer installed Go is never mistaken for the old.

Run as a program it lists the cells, `python3 tests/e2e/grpc_matrix.py [--full]`, or rewrites
the gRPC section of COMPATIBILITY.md from the results a run saved (for a run cut short):
`python3 tests/e2e/grpc_matrix.py --page build/e2e/grpc-versions-full.json ["a note"]`. What
it shares with the data store matrix (db_matrix.py) is matrix.py's.
"""

import fcntl
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time

import matrix
# go_version: datastores.py and db_matrix.py take it from here
from matrix import go_env, go_version, parse, shown_result, tally, toolchain_label  # noqa: F401

REPO = matrix.REPO
GRPCMIX = REPO / "tests" / "e2e" / "grpcmix"
BUILD_SH = GRPCMIX / "build.sh"
DEBIAN_GO = "/usr/lib/go-1.19/bin/go"
OLDEST_MINOR = 50
BUILD_TIMEOUT = 1800

# name -> (go build flags, what it means)
FLAVOURS = {
    **matrix.FLAVOURS,
    "stripped-pie": (["-buildmode=pie", "-ldflags=-s -w"],
                     "-buildmode=pie -ldflags='-s -w': the offset table and the PIE load bias"),
}
FULL_FLAVOURS = ["plain", "stripped", "pie"]

# The CI slice: the oldest and newest release the grpc-go table covers and the first release of
# each of its other layouts (offsets/README.md: 1.60 peer.Peer, 1.66 Stream moved, 1.69
# ServerStream with a *Stream, 1.77 a Stream value), each at its minor's latest patch with one
# toolchain: the oldest Go that builds v1.50 (Debian's 1.19), the installed Go for the newest,
# and, between them, two releases test_go_versions.py builds with anyway (so CI's build cache
# already holds their standard library, plain and PIE): on two cores the builds are what a cold
# run waits for, and each toolchain more costs its standard library twice. Every cell is
# stripped and PIE (no DWARF: the offsets come from the table, the probes are placed through the
# load bias); the oldest and the newest are also plain (offsets from DWARF).
SLICE = [
    ("v1.50.1", DEBIAN_GO, ["plain", "stripped-pie"]),
    ("v1.60.1", "go1.21.13", ["stripped-pie"]),
    ("v1.66.2", "go1.21.13", ["stripped-pie"]),
    ("v1.69.4", "go1.24.13", ["stripped-pie"]),
    ("v1.77.0", "go1.24.13", ["stripped-pie"]),
    ("v1.85.0", "local", ["plain", "stripped-pie"]),
]


def source_hash():
    """What the builds depend on in this tree: grpcmix's programs, go.mod and build.sh, and the
    script build.sh runs."""
    return matrix.source_hash(GRPCMIX, matrix.REPO / "tests" / "e2e" / "mixbuild.sh")


def releases():
    """The latest patch of every grpc-go minor from 1.50 on, as the module proxy lists them
    (`go list -m -versions` leaves retracted releases out; -dev pre-releases are skipped)."""
    latest = {}
    for v in matrix.module_releases("google.golang.org/grpc"):
        major, minor, patch = parse(v)
        if major == 1 and minor >= OLDEST_MINOR:
            latest[minor] = max(latest.get(minor, (0, 0, 0)), (major, minor, patch))
    return ["v%d.%d.%d" % latest[m] for m in sorted(latest)]


def go_directive(version):
    """The go directive of grpc-go VERSION's own go.mod, "1.17"."""
    return matrix.go_directive("google.golang.org/grpc", version) or "1.17"


def oldest_toolchain(version):
    """The oldest Go release VERSION's go.mod allows: Debian's Go 1.19 where the go directive
    allows it (up to 1.19), Go 1.21.0 for the rest of those before 1.21, else the first release
    of the directive ("1.22" is go1.22.0, "1.23.0" go1.23.0). build() moves up to what a
    dependency needs when that is more."""
    d = parse(go_directive(version))
    if d < (1, 21):
        return DEBIAN_GO if d <= (1, 19) and os.access(DEBIAN_GO, os.X_OK) else "go1.21.0"
    return "go%d.%d.%d" % (d + (0,))[:3]


def full_cells():
    """[(release, toolchain, flavour)]: every release, with the installed Go and with the
    oldest it allows, each flavour of FULL_FLAVOURS."""
    cells = []
    for v in releases():
        for tc in ("local", oldest_toolchain(v)):
            cells += [(v, tc, f) for f in FULL_FLAVOURS]
    return cells


def slice_cells():
    return [(v, tc, f) for v, tc, flavours in SLICE for f in flavours]


class BuildError(Exception):
    pass


# The cells build() has built in this process (the rest came from the cache).
BUILT = []


def build(version, toolchain, flavour):
    """The cached (server, client, toolchain that built them) of a cell, built when missing.
    When a dependency's go.mod needs a newer Go than TOOLCHAIN ("requires go >= 1.22.7"), the
    cell is built with exactly that release, and the toolchain returned says so."""
    key = f"{version}-{toolchain_label(toolchain).replace(' (Debian)', '-debian')}-{flavour}"
    home = matrix.build_home("GOSPAN_GRPCMIX_CACHE", "grpcmix", source_hash())
    dest = home / key

    def ready():
        meta = dest / "built.json"
        if (dest / "server").exists() and (dest / "client").exists() and meta.exists():
            return dest / "server", dest / "client", json.loads(meta.read_text())["toolchain"]
        return None

    got = ready()
    if got:
        return got
    with open(home / f".{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        got = ready()
        if got:
            return got
        tmp = home / f".{key}.partial"
        shutil.rmtree(tmp, ignore_errors=True)
        used, t0 = toolchain, time.monotonic()
        for _ in range(3):
            res = subprocess.run([str(BUILD_SH), version, used, str(tmp),
                                  *FLAVOURS[flavour][0]], capture_output=True, text=True,
                                 timeout=BUILD_TIMEOUT, env=go_env())
            m = re.search(r"requires go >= (1\.\d+(?:\.\d+)?)", res.stderr)
            if res.returncode == 0 or not m:
                break
            used = "go%d.%d.%d" % (parse(m.group(1)) + (0,))[:3]
        if res.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            raise BuildError(f"grpcmix {version} with {toolchain} ({flavour}) did not build:\n"
                             f"{res.stderr[-4000:]}")
        (tmp / "built.json").write_text(json.dumps({
            "grpc": version, "toolchain": toolchain_label(used), "flavour": flavour,
            "flags": FLAVOURS[flavour][0], "seconds": round(time.monotonic() - t0, 1)}) + "\n")
        shutil.rmtree(dest, ignore_errors=True)
        os.replace(tmp, dest)
        BUILT.append((version, toolchain, flavour))
    return ready()


# ---- the gRPC section of COMPATIBILITY.md -------------------------------------------------------

BEGIN = "<!-- BEGIN grpc-go: written by tests/e2e/test_grpc_versions.py (make compat) -->"
END = "<!-- END grpc-go -->"
# A cell's fields in a row of the results a run saves (test_grpc_versions.py).
FIELDS = ("grpc", "requested", "flavour")


def rewrite_section(text, page=matrix.PAGE):
    """Replaces the gRPC section of PAGE with TEXT, or appends it; the rest of the page (the Go
    section, which test_go_versions.py writes) is kept as it is."""
    matrix.rewrite_section(text, BEGIN, END, page)


def load_results(path):
    """The results a run wrote (test_grpc_versions.py: $GOSPAN_BUILD/e2e/grpc-versions-full.json),
    keyed by cell."""
    return matrix.load_results(path, FIELDS)


def _per_rpc(n):
    return f"{n:.2f}".rstrip("0").rstrip(".")


def _hits_text(h, names):
    if not h:
        return "-"
    return _per_rpc(sum(h.values())) + " (" + ", ".join(
        f"{p.removeprefix('grpc_')} {_per_rpc(h.get(p, 0))}" for p in names) + ")"


def page_text(results, cells, kernel=None, note=None):
    """The gRPC section of COMPATIBILITY.md: RESULTS (cell -> what test_grpc_versions.py
    recorded) of CELLS, on KERNEL (this one's release without it); NOTE, when given, says why
    some cells did not run."""
    kernel = kernel or platform.release()
    full = [c for c in cells if c[2] in FULL_FLAVOURS]
    rows = list(dict.fromkeys((v, tc) for v, tc, _ in full))
    progs = {"server": [], "client": []}
    for r in results.values():
        for side, names in progs.items():
            for p in (r.get("hits") or {}).get(side, {}):
                if p not in names:
                    names.append(p)
    fails = {}

    def result(c):
        return shown_result(results, c, fails)

    def label(v, tc):
        for f in FLAVOURS:
            if (results.get((v, tc, f)) or {}).get("toolchain"):
                return results[(v, tc, f)]["toolchain"]
        return toolchain_label(tc)

    def steps(c):
        s = (results.get(c) or {}).get("steps")
        if not s:
            return "-"
        return ", ".join("-" if x is None else str(x) for x in (s["server"][0], s["client"][1]))

    def hits(v, tc):
        for f in FLAVOURS:
            if (results.get((v, tc, f)) or {}).get("hits"):
                return results[(v, tc, f)]["hits"]
        return {}

    versions = sorted({v for v, _, _ in cells}, key=parse)
    lines = [
        "## gRPC (grpc-go)",
        "",
        "Produced by `make compat` (`GOSPAN_COMPAT=1 pytest tests/e2e/test_grpc_versions.py`),",
        "which rewrites only this section (the Go section above is `test_go_versions.py`'s); do",
        "not edit by hand. Each cell is `tests/e2e/grpcmix`'s gRPC server and its client built",
        "against that grpc-go release with that Go and flavour (`tests/e2e/grpcmix/build.sh`),",
        "one gospan attached to each, the scenarios unary_ok, unary_error (14 status codes),",
        "server_stream, bidi and with_traceparent run (18 RPCs), and the spans checked as the",
        "official opentelemetry-proto decoder read them: one CLIENT span per call in the client,",
        "a child of the client's HTTP SERVER span for `/run`; one SERVER span per call in the",
        "server; names, rpc.* attributes and status as `test_grpc.py` requires them, with",
        "server.address/port and client.address/port on the SERVER span; each SERVER span a",
        "child of its CLIENT span in the same trace (gospan adds the traceparent to the call's",
        "HEADERS frame at the socket layer, and the server's answer must show it received exactly",
        "that one); a caller's own traceparent left alone and joined, with its tracestate;",
        "nothing dropped. Both attach lines must say `gRPC server + gRPC client (grpc-go vX,",
        "offsets from ...)`. \"verified (DWARF)\" means grpc-go's struct offsets came from the",
        "binary, \"verified (table vX)\" from the row of `offsets/grpc_offsets.json` for X.",
        "",
        f"Run on Linux {kernel} {platform.machine()}, {time.strftime('%Y-%m-%d')}: grpc-go "
        f"{versions[0]} to {versions[-1]}, {tally(cells, results)}.",
        "Every grpc-go minor from v1.50 to the newest release the Go module proxy serves (its",
        "latest patch; `-dev` pre-releases and retracted releases left out), built with the",
        "installed Go and with the oldest Go the release's go.mod allows: Debian's Go 1.19",
        "(golang-1.19) where its go directive allows it, else that directive's first release.",
    ]
    if note:
        lines += ["", note]
    lines += [
        "",
        "*Single-stepped hits* are those of an RPC served (in the server) and of an RPC made (in",
        "the client), as the attach lines count them, in each flavour (plain / stripped / pie).",
        "The probe hits columns are counted by the kernel (kernel.bpf_stats_enabled=1): each gRPC",
        "program's runs, from gospan's `probe hits:` line at exit, divided by the 18 RPCs, in",
        "the server and in the client, from the plain build. Server: handleStream's entry",
        "(server_entry) and the status written (server_status). Client: newClientStream's entry",
        "(client_entry), the attempt made (client_stream), the HEADERS fields built",
        "(header_fields), the frame handed to the writer (write_header) and the attempt's end",
        "(client_end). client_end runs once for an RPC that ends OK and twice for one that fails",
        "(grpc-go enters csAttempt.finish from clientStream.retryLocked, then again from",
        "clientStream.finish, where it returns at once): 4 OK and 14 failed RPCs make",
        "32 / 18 = 1.78. Where client_entry is above 1 (built with Go before 1.21: Debian's",
        "1.19), the entry probe sits on newClientStream's stack check (its conditional jump to",
        "morestack; the frame is set up without a PUSH to put it on), which runs again when the",
        "call grows the goroutine's stack: 19 or 20 hits in 18 RPCs, both of a pair emulated,",
        "one span. The sk_msg program that writes the traceparent into the frame is not a probe",
        "and is not counted; the client's HTTP programs (the 5 `/run` requests) are left out.",
        "",
        "| grpc-go | Go | " + " | ".join(FULL_FLAVOURS)
        + " | single-stepped hits / RPC served, made | probe hits / RPC: server | client |",
        "|---|---|" + "---|" * (len(FULL_FLAVOURS) + 3),
    ]
    for v, tc in rows:
        cs = [(v, tc, f) for f in FULL_FLAVOURS]
        h = hits(v, tc)
        lines.append(f"| {v} | {label(v, tc)} | " + " | ".join(result(c) for c in cs)
                     + " | " + " / ".join(steps(c) for c in cs) + " | "
                     + _hits_text(h.get("server"), progs["server"]) + " | "
                     + _hits_text(h.get("client"), progs["client"]) + " |")
    slice_ = [c for c in slice_cells() if c in cells]
    if slice_:
        lines += ["", "The CI slice, which `make test` runs: the oldest and newest release and the",
                  "first of each grpc-go layout the table has (offsets/README.md), all stripped",
                  "and PIE (`-buildmode=pie -ldflags='-s -w'`: offsets from the table, probes",
                  "placed through the load bias), the oldest and newest also plain:", "",
                  "| grpc-go | Go | flavour | result | single-stepped hits / RPC served, made |",
                  "|---|---|---|---|---|"]
        for c in slice_:
            lines.append(f"| {c[0]} | {label(c[0], c[1])} | {c[2]} | {result(c)} | {steps(c)} |")
    lines += matrix.failure_lines(fails, lambda c: f"grpc-go {c[0]}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(matrix.main(sys.argv[1:], sys.modules[__name__], FIELDS, lambda c: " ".join(c)))
