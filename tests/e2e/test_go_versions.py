"""Every Go release and build flavour the offset tables cover, traced for real: a service built
with one toolchain per minor release (and both ends of a minor where an offset moved inside it),
each plain, stripped and PIE, plus the other build flavours on the newest release; a few requests;
the spans checked. This is what proves a table range and a binary-reading path on a live binary.

Toolchains come from the Go module proxy (golang.org/toolchain), cached in the module cache.
Services built with Go 1.22 and later use examples/httpserver (method and wildcard patterns,
so http.route is checked); older ones use tests/e2e/legacyserver.

When the whole matrix ran, COMPATIBILITY.md at the top of the repository is rewritten from the
results: it is produced by this test, never edited by hand.
"""

import os
import platform
import re
import subprocess
import urllib.request
from pathlib import Path

import pytest

from conftest import REPO, STATUS_ERROR, STATUS_UNSET, Service, _clean_env

# Debian's golang-1.19 package (1.19.8) is not in the tables, which list 1.19.0 and 1.19.13: its
# stripped build is traced through the "nearest release at or below" rule.
DEBIAN_GO = {"1.19.8": Path("/usr/lib/go-1.19/bin/go")}
VERSIONS = [
    "1.17.13", "1.18.10", "1.19.8", "1.19.13", "1.20.14", "1.21.13", "1.22.12", "1.23.12", "1.24.13",
    "1.25.14", "1.26.0", "1.26.11", "1.27.4",
]
NEWEST = VERSIONS[-1]

# name -> (extra environment, go build flags, what it means)
FLAVOURS = {
    "plain": ({}, [], "go build"),
    "stripped": ({}, ["-ldflags=-s -w"], "-ldflags='-s -w': no symbol table, no DWARF"),
    "pie": ({}, ["-buildmode=pie"], "-buildmode=pie: loaded at a random address"),
    "cgo": ({"CGO_ENABLED": "1"}, ["-ldflags=-linkmode=external"],
            "cgo, linked by the system linker"),
    "static": ({"CGO_ENABLED": "1"}, ["-ldflags=-linkmode=external -extldflags=-static"],
               "cgo, statically linked by the system linker"),
    "trimpath": ({}, ["-trimpath"], "-trimpath"),
    "amd64v3": ({"GOAMD64": "v3"}, [], "GOAMD64=v3 (newer instruction encodings)"),
}
EVERY_VERSION = ["plain", "stripped", "pie"]
NEWEST_ONLY = ["cgo", "static", "trimpath", "amd64v3"]
CASES = [(v, f) for v in VERSIONS for f in EVERY_VERSION] + [(NEWEST, f) for f in NEWEST_ONLY]

LEGACY_SRC = REPO / "tests" / "e2e" / "legacyserver"
EXAMPLE_SRC = REPO / "examples" / "httpserver"
CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"
RESULTS = {}  # (version, flavour) -> "verified" or the failure
HITS = {}  # (version, flavour) -> probe hits per request, counted by the kernel


def parse(v):
    return tuple(int(x) for x in v.split("."))


def _go_env(version=None, extra=None):
    env = dict(os.environ)
    # -buildvcs only exists from Go 1.18 on; 1.17 refuses to start with it in GOFLAGS.
    flags = "-mod=mod" if version and parse(version) < (1, 18, 0) else "-mod=mod -buildvcs=false"
    env.update(GOTOOLCHAIN="local", CGO_ENABLED="0", GOFLAGS=flags)
    env.update(extra or {})
    env.pop("GOROOT", None)
    return env


def toolchain(version):
    """The go command of release VERSION. The go command fetches it through the module proxy
    (GOTOOLCHAIN) and caches it in the module cache; unlike `go mod download` of the toolchain
    module, this also makes it executable. Debian's release comes from its package (make deps)."""
    if version in DEBIAN_GO:
        if not os.access(DEBIAN_GO[version], os.X_OK):
            pytest.fail(f"'{DEBIAN_GO[version]}' is missing: install golang-1.19 (make deps)")
        return DEBIAN_GO[version]
    env = _go_env(version)
    env["GOTOOLCHAIN"] = f"go{version}"
    res = subprocess.run(["go", "env", "GOROOT"], capture_output=True, text=True, timeout=600,
                         env=env, cwd="/")
    if res.returncode != 0:
        pytest.fail(f"cannot get Go {version} through the module proxy:\n{res.stderr}")
    go = Path(res.stdout.strip()) / "bin" / "go"
    if not os.access(go, os.X_OK):
        pytest.fail(f"'{go}' is not executable")
    return go


def build(version, flavour, out):
    env, flags, _ = FLAVOURS[flavour]
    src = EXAMPLE_SRC if parse(version) >= (1, 22, 0) else LEGACY_SRC
    res = subprocess.run([str(toolchain(version)), "build", *flags, "-o", str(out), "."],
                         cwd=src, capture_output=True, text=True, timeout=600,
                         env=_go_env(version, env))
    assert res.returncode == 0, f"go{version} {flavour} build failed:\n{res.stderr}"


def check_spans(spans, version, svc, modern, gospan_err):
    assert len(spans) == 4, f"go{version}: {len(spans)} spans\n{gospan_err}"
    by_path = {s.attrs["url.path"]: s for s in spans}

    user = by_path["/users/1"]
    assert user.trace_id.hex() == CALLER_TRACE, f"go{version}: traceparent not joined"
    assert user.parent_span_id.hex() == CALLER_SPAN
    assert user.proto.trace_state == "vendor=opaque"
    assert by_path["/fail"].trace_id.hex() != CALLER_TRACE  # no traceparent: its own trace
    assert user.attrs["http.request.method"] == "GET"
    assert user.attrs["http.response.status_code"] == 200
    assert user.attrs["network.protocol.version"] == "1.1"
    assert user.attrs["server.port"] == svc.port
    assert user.resource["process.runtime.version"] == f"go{version}"
    if modern:
        assert user.attrs["http.route"] == "/users/{id}"
        assert user.name == "GET /users/{id}"
    else:
        assert "http.route" not in user.attrs
        assert user.name == "GET"
    assert user.status_code == STATUS_UNSET

    post = by_path["/users" if modern else "/users/"]
    assert post.attrs["http.request.method"] == "POST"
    assert post.attrs["http.response.status_code"] == 201
    assert post.attrs["http.request.body.size"] == 5

    fail = by_path["/fail"]
    assert fail.attrs["http.response.status_code"] == 500
    assert fail.status_code == STATUS_ERROR

    slow = by_path["/slow"]
    assert slow.attrs["http.response.status_code"] == 200
    assert slow.end_ns - slow.start_ns >= 30_000_000


@pytest.fixture(scope="module")
def bpf_stats(bpf_ready):
    """Has the kernel count BPF program runs while this module runs (restored afterwards)."""
    path = Path("/proc/sys/kernel/bpf_stats_enabled")
    old = path.read_text().strip()
    path.write_text("1")
    yield
    path.write_text(old)


@pytest.mark.parametrize("version,flavour", CASES, ids=[f"{v}-{f}" for v, f in CASES])
def test_go_version_is_traced(version, flavour, build_dir, start_gospan, otlp_receiver,
                              bpf_ready, bpf_stats):
    RESULTS[(version, flavour)] = "failed"
    modern = parse(version) >= (1, 22, 0)
    out = build_dir / "e2e" / f"server-go{version}-{flavour}"
    out.parent.mkdir(parents=True, exist_ok=True)
    build(version, flavour, out)

    svc = Service(out, env=_clean_env())
    try:
        before = len(otlp_receiver.snapshot())
        g = start_gospan(svc.pid, otlp_receiver)
        attached = g.wait_attached()
        assert f"go{version}" in attached, attached

        slow = "/slow?ms=30" if modern else "/slow"
        requests = [("GET", "/users/1", None, 200),
                    ("POST", "/users" if modern else "/users/", b"hello", 201),
                    ("GET", "/fail", None, 500), ("GET", slow, None, 200)]
        for method, path, body, want in requests:
            req = urllib.request.Request(svc.base_url + path, data=body, method=method)
            if path == "/users/1":
                # Read from the Header map inside the entry probe: buckets up to Go 1.23,
                # Swiss tables from 1.24. Other headers around it make the map non-trivial.
                for i in range(12):
                    req.add_header(f"X-Filler-{i}", "x" * i)
                req.add_header("traceparent", f"00-{CALLER_TRACE}-{CALLER_SPAN}-01")
                req.add_header("tracestate", "vendor=opaque")
            try:
                with urllib.request.urlopen(req, timeout=10) as r:
                    got = r.status
                    r.read()
            except urllib.error.HTTPError as e:
                got = e.code
            assert got == want, f"{method} {path}: {got}"
        assert g.stop() == 0, g.stderr
    finally:
        svc.stop()

    spans = [s for s in otlp_receiver.snapshot()[before:]
             if s.resource.get("process.pid") == svc.pid]
    check_spans(spans, version, svc, modern, g.stderr)
    source = "DWARF" if "offsets from DWARF" in g.stderr else "table"
    RESULTS[(version, flavour)] = f"verified ({source})"
    m = re.search(r"probe hits: (\d+)", g.stderr)
    assert m, f"gospan printed no probe hit count:\n{g.stderr}"
    HITS[(version, flavour)] = int(m.group(1)) / len(requests)


def test_go_before_register_abi_is_refused(build_dir, gospan_bin, bpf_ready):
    """Go 1.16 passed arguments on the stack: gospan must say so and stop, not guess."""
    out = build_dir / "e2e" / "server-go1.16.15"
    res = subprocess.run([str(toolchain("1.16.15")), "build", "-o", str(out), "."],
                         cwd=LEGACY_SRC, capture_output=True, text=True, timeout=600,
                         env=_go_env("1.16.15"))
    assert res.returncode == 0, res.stderr
    svc = Service(out, env=_clean_env())
    try:
        res = subprocess.run([str(gospan_bin), "--pid", str(svc.pid)], env=_clean_env(),
                             capture_output=True, text=True, timeout=60)
        assert svc.alive()
    finally:
        svc.stop()
    assert res.returncode != 0
    assert "go1.16.15; gospan needs Go 1.17 or later" in res.stderr, res.stderr
    assert "gospan: attached" not in res.stderr


@pytest.fixture(scope="module", autouse=True)
def _write_compatibility():
    yield
    if len(RESULTS) != len(CASES):
        return  # a partial run (-k) must not rewrite the record of the full one
    lines = [
        "# Compatibility",
        "",
        "Produced by `tests/e2e/test_go_versions.py` (part of `make test`): each cell is a real",
        "service built with that Go release and flavour, traced by gospan, with its spans checked",
        "(status codes, route on Go 1.22+, body size, duration). \"verified (table)\" means the",
        "struct offsets came from `offsets/go_offsets.json`, \"verified (DWARF)\" from the binary.",
        "Do not edit by hand: run `make test` (or `pytest tests/e2e/test_go_versions.py`).",
        "",
        f"Run on {platform.system()} {platform.release()} {platform.machine()}.",
        "",
        "The last column is the probe hits one server request costs (ServeHTTP's entry and its",
        "return; an incoming traceparent is read inside the entry probe, at no extra hit),",
        "counted by the kernel (kernel.bpf_stats_enabled) over the plain build's requests.",
        "",
        "| Go | " + " | ".join(EVERY_VERSION) + " | probe hits / request |",
        "|---|" + "---|" * (len(EVERY_VERSION) + 1),
    ]
    for v in VERSIONS:
        hits = HITS.get((v, "plain"))
        cells = [RESULTS[(v, f)] for f in EVERY_VERSION] + [f"{hits:g}" if hits else "-"]
        lines.append(f"| {v}{' (Debian)' if v in DEBIAN_GO else ''} | " + " | ".join(cells) + " |")
    lines += ["", f"Other build flavours, on Go {NEWEST}:", "", "| flavour | how it is built | result |",
              "|---|---|---|"]
    for f in NEWEST_ONLY:
        lines.append(f"| {f} | {FLAVOURS[f][2]} | {RESULTS[(NEWEST, f)]} |")
    lines += [
        "",
        "## arm64",
        "",
        "Not run: this machine is amd64 and cannot run arm64 programs. What is verified for arm64:",
        "`make` compiles the BPF programs for arm64 (`build/bpf/arm64/`, Go's arm64 register ABI:",
        "arguments in X0-X15, g in X28); the return-instruction finder matches `go tool objdump` on",
        "every `net/http` function of a `GOARCH=arm64` build (`tests/unit/test_disasm.c`); the",
        "function table reader and the DWARF reader give the same answers on `GOARCH=arm64` builds",
        "(`tests/unit/test_pclntab.c`, `tests/unit/test_dwarf.c`). Loading and attaching on an",
        "arm64 kernel has not been tried.",
        "",
        "## Not traced",
        "",
        "Go before 1.17 (arguments on the stack; refused with a message), binaries without",
        "`net/http` (nothing to trace), and Go releases newer than the tables whose binaries carry",
        "no DWARF (refused with a message saying to regenerate the tables).",
        "",
    ]
    (REPO / "COMPATIBILITY.md").write_text("\n".join(lines))
