"""Fixtures for gospan's end-to-end tests: the example Go service, a real OTLP/HTTP receiver that
decodes with the official opentelemetry-proto package, and a handle on a running gospan.

These tests load BPF programs and attach uprobes, so they need root and a kernel with BTF and
uprobes. Where those are missing every test skips with the reason; with CI=true a skip is turned
into a failure, because CI has both and must never go green on tests that did not run.
"""

import ctypes
import errno
import gzip
import http.client
import os
import platform
import re
import secrets
import signal
import socket
import subprocess
import threading
import time
import zlib
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from datastores import mariadb_server, postgres_server, redis_server  # noqa: F401 (fixtures)
from kafka import kafka_broker  # noqa: F401 (fixture)
from procs import end_process

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("GOSPAN_BUILD") or REPO / "build").resolve()
EXAMPLE_SRC = REPO / "examples" / "httpserver"
CI = os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")

ATTACHED_PREFIX = "gospan: attached"
SUMMARY_PREFIX = "gospan: summary"
# GOSPAN_TEST_SLOWDOWN: how many times slower than real hardware the machine runs the tests,
# which the deadlines of attaching and of timed loads are multiplied by (tests/vm/run.py's arm64
# boot, emulated by qemu without KVM, sets it).
SLOWDOWN = float(os.environ.get("GOSPAN_TEST_SLOWDOWN") or 1.0)
ATTACH_TIMEOUT = 30.0 * SLOWDOWN
STOP_TIMEOUT = 30.0

# OTLP span kind and status codes, as numbered in opentelemetry/proto/trace/v1/trace.proto.
SPAN_KIND_SERVER = 2
STATUS_UNSET, STATUS_OK, STATUS_ERROR = 0, 1, 2


# ---- skipping, and failing instead of skipping in CI -------------------------------------------


def _bpf_syscall_works():
    """Creates and closes a one-entry BPF array map; returns None or why it failed."""
    nr = {"x86_64": 321, "aarch64": 280}.get(platform.machine())
    if nr is None:
        return f"unsupported architecture '{platform.machine()}'"
    libc = ctypes.CDLL(None, use_errno=True)
    # union bpf_attr for BPF_MAP_CREATE: map_type, key_size, value_size, max_entries, rest zero.
    attr = (ctypes.c_uint32 * 32)(2, 4, 4, 1)  # BPF_MAP_TYPE_ARRAY
    fd = libc.syscall(ctypes.c_long(nr), ctypes.c_int(0), ctypes.byref(attr),
                      ctypes.c_uint(ctypes.sizeof(attr)))
    if fd < 0:
        err = ctypes.get_errno()
        return f"the bpf() syscall is refused: {errno.errorcode.get(err, err)} ({os.strerror(err)})"
    os.close(fd)
    return None


def trace_context_unavailable():
    """Why gospan cannot send trace context out on this host, or None. Its socket-layer writer
    attaches to the traced processes' cgroups in the cgroup v2 hierarchy, so it needs one
    mounted; a cgroup v1-only host has none."""
    try:
        mounts = Path("/proc/self/mountinfo").read_text()
    except OSError as e:
        return f"cannot read /proc/self/mountinfo: {e}"
    if not any(" - cgroup2 " in line for line in mounts.splitlines()):
        return ("no cgroup v2 hierarchy is mounted (a cgroup v1-only host): gospan's "
                "socket-layer writer of trace context attaches to one")
    return None


def bpf_unavailable_reason():
    if os.geteuid() != 0:
        return "needs root to load BPF programs and attach uprobes (run as root: sudo make test)"
    if not Path("/sys/kernel/btf/vmlinux").exists():
        return "the kernel has no BTF (/sys/kernel/btf/vmlinux is missing)"
    if not Path("/sys/bus/event_source/devices/uprobe").exists():
        return "the kernel has no uprobe support (/sys/bus/event_source/devices/uprobe is missing)"
    return _bpf_syscall_works()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if not CI or not report.skipped or hasattr(report, "wasxfail"):
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    report.outcome = "failed"
    report.longrepr = (f"skipped with CI=true, where every end-to-end test must run: {reason}")


# Below this much free space a failed run says the disk may be why: a full disk fails dozens of
# tests with errors from go build and file copies that do not name it.
LOW_DISK_BYTES = 1 << 30


def pytest_terminal_summary(terminalreporter):
    if not (terminalreporter.stats.get("failed") or terminalreporter.stats.get("error")):
        return
    seen = set()
    for where in (BUILD if BUILD.exists() else REPO, Path("/tmp"), Path.home()):
        try:
            dev, st = os.stat(where).st_dev, os.statvfs(where)
        except OSError:
            continue
        if dev in seen:
            continue
        seen.add(dev)
        free = st.f_bavail * st.f_frsize
        if free < LOW_DISK_BYTES:
            terminalreporter.write_line(
                f"gospan e2e: only {free >> 20} MiB free on the file system of '{where}': "
                "errors above may come from a full disk (a test pass needs about 1.5 GB)",
                red=True, bold=True)


@pytest.fixture(scope="session")
def bpf_ready():
    reason = bpf_unavailable_reason()
    if reason:
        pytest.skip(reason)


def out_of_line_page(pid):
    """Whether the kernel has mapped its page for single-stepped probes into process PID: it does
    the first time a probe there cannot be emulated, and never unmaps it."""
    with open(f"/proc/{pid}/maps") as f:
        return "[uprobes]" in f.read()


def kernel_probe_hits(stderr):
    """(all probe hits, {program: hits}) as gospan's last lines give the kernel's counts (with
    kernel.bpf_stats_enabled=1: the bpf_stats fixture)."""
    m = re.search(r"probe hits: (\d+) \(.*?\): (.*)", stderr)
    assert m, stderr
    return int(m.group(1)), {k: int(v) for k, v in
                             (kv.split("=") for kv in m.group(2).split())}


@pytest.fixture
def bpf_stats():
    """kernel.bpf_stats_enabled=1 for the test (the kernel counts probe runs only then)."""
    path = Path("/proc/sys/kernel/bpf_stats_enabled")
    before = path.read_text().strip()
    path.write_text("1")
    yield
    if before != "1":
        path.write_text(before)


@pytest.fixture(scope="session", autouse=True)
def _e2e_prerequisites(bpf_ready):
    """Every test here needs root and BPF: check before building anything."""


# ---- build products --------------------------------------------------------------------------


@pytest.fixture(scope="session")
def build_dir():
    return BUILD


@pytest.fixture(scope="session")
def gospan_bin(build_dir, bpf_ready):
    path = build_dir / "gospan"
    if not os.access(path, os.X_OK):
        pytest.skip(f"'{path}' is not built (run make, or set GOSPAN_BUILD)")
    return path


@pytest.fixture(scope="session")
def go_version():
    """The installed Go toolchain's version, e.g. 'go1.22.12': the example is built with it."""
    try:
        out = subprocess.run(["go", "env", "GOVERSION"], check=True, capture_output=True,
                             text=True, timeout=60, env=_go_env())
    except FileNotFoundError:
        pytest.skip("Go is not installed; it is needed to build the example service")
    return out.stdout.strip()


def _go_env():
    env = dict(os.environ)
    env.update(GOTOOLCHAIN="local", CGO_ENABLED="0", GOFLAGS="-mod=mod -buildvcs=false")
    return env


@pytest.fixture(scope="session")
def example_bin(build_dir, go_version, bpf_ready):
    """examples/httpserver built once per session (go build is incremental across sessions)."""
    out = build_dir / "e2e" / "httpserver"
    out.parent.mkdir(parents=True, exist_ok=True)
    res = subprocess.run(["go", "build", "-o", str(out), "."], cwd=EXAMPLE_SRC,
                         capture_output=True, text=True, timeout=300, env=_go_env())
    if res.returncode != 0:
        pytest.fail(f"cannot build '{EXAMPLE_SRC}' with {go_version}:\n{res.stderr}")
    return out


# ---- ports ----------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def free_port():
    """Returns a function giving a loopback TCP port nothing listens on (never the same twice)."""
    given = set()

    def alloc():
        for _ in range(100):
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
            if port not in given:
                given.add(port)
                return port
        raise RuntimeError("no free loopback port found")

    return alloc


# ---- output readers -------------------------------------------------------------------------


class _LineReader:
    """Reads a pipe in a thread, keeping every line and signalling the first matching PREFIX."""

    def __init__(self, pipe, prefix=None):
        self.lines = []
        self.match = None
        self.matched = threading.Event()
        self._prefix = prefix
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, args=(pipe,), daemon=True)
        self._thread.start()

    def _run(self, pipe):
        with pipe:
            for raw in iter(pipe.readline, b""):
                line = raw.decode("utf-8", "replace").rstrip("\n")
                with self._lock:
                    self.lines.append(line)
                if self._prefix and self.match is None and line.startswith(self._prefix):
                    self.match = line
                    self.matched.set()

    def join(self, timeout=5.0):
        self._thread.join(timeout)

    @property
    def text(self):
        with self._lock:
            return "\n".join(self.lines)


# ---- the example service --------------------------------------------------------------------


class Service:
    """A Go service of this repository's, started on ADDR with extra command-line ARGS; PREFIX:
    a command that execs it (its arguments follow PREFIX), in the same process."""

    def __init__(self, binary, addr="127.0.0.1:0", env=None, args=(), prefix=()):
        self.name = Path(binary).name
        self.proc = subprocess.Popen([*prefix, str(binary), "-addr", addr, *args],
                                     stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        self.pid = self.proc.pid
        self.out = _LineReader(self.proc.stdout, "listening on ")
        self.err = _LineReader(self.proc.stderr)
        if not self.out.matched.wait(15.0):
            self.stop()
            raise AssertionError(f"{self.name} did not start listening within 15 s:\n"
                                 f"{self.out.text}\n{self.err.text}")
        self.host, port = self.out.match.split()[-1].rsplit(":", 1)
        self.port = int(port)
        self.base_url = f"http://{self.host}:{self.port}"

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        end_process(self.proc, (self.out, self.err), timeout=10)
        return self.proc.returncode


def _clean_env():
    """The test runner's environment without OTEL_* settings, so only what a test sets counts;
    but OTEL_METRICS_EXPORTER=none: gospan's metrics (test_metrics.py tests them) would otherwise
    go to http://localhost:4318/v1/metrics, whatever a test runs there, or nothing."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["OTEL_METRICS_EXPORTER"] = "none"
    return env


@pytest.fixture(scope="module")
def start_service(example_bin):
    """start_service() -> Service: the example on a free loopback port, stopped after the test."""
    started = []

    def start(env=None):
        svc = Service(example_bin, env=env if env is not None else _clean_env())
        started.append(svc)
        return svc

    yield start
    for svc in started:
        svc.stop()


# ---- the OTLP/HTTP receiver -----------------------------------------------------------------


def any_value(v):
    """An OTLP AnyValue as a plain Python value."""
    kind = v.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [any_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in v.kvlist_value.values}
    return getattr(v, kind)


def attributes(kvs):
    return {kv.key: any_value(kv.value) for kv in kvs}


def received_spans(req):
    """Every span of a decoded ExportTraceServiceRequest, as ReceivedSpan, in order."""
    got = []
    for rs in req.resource_spans:
        res = attributes(rs.resource.attributes)
        for ss in rs.scope_spans:
            for s in ss.spans:
                got.append(ReceivedSpan(
                    name=s.name, kind=s.kind, trace_id=s.trace_id, span_id=s.span_id,
                    parent_span_id=s.parent_span_id, start_ns=s.start_time_unix_nano,
                    end_ns=s.end_time_unix_nano, attrs=attributes(s.attributes),
                    status_code=s.status.code, status_message=s.status.message,
                    resource=res, scope_name=ss.scope.name, scope_version=ss.scope.version,
                    proto=s))
    return got


def decode_request(pb, encoding, body):
    """The spans of an OTLP/HTTP protobuf body sent with Content-Encoding ENCODING, decoded by
    the official package PB (trace_service_pb2). Raises on anything malformed."""
    enc = encoding.lower()
    if enc == "gzip":
        body = gzip.decompress(body)
    elif enc == "deflate":
        body = zlib.decompress(body)
    elif enc != "identity":
        raise ValueError(f"content encoding '{encoding}'")
    req = pb.ExportTraceServiceRequest()
    req.ParseFromString(body)
    return received_spans(req)


def call(svc, method, path, body=None, timeout=10.0):
    """One request to the service on a connection of its own; returns the status."""
    c = http.client.HTTPConnection(svc.host, svc.port, timeout=timeout)
    try:
        c.request(method, path, body=body, headers={"Connection": "close"})
        resp = c.getresponse()
        resp.read()
        return resp.status
    finally:
        c.close()


def perform(req, port, conn=None, method="GET", target="/", body=None, headers=None,
            timeout=15.0):
    """Sends one request on CONN (keep-alive) or, without CONN or with REQ.new_conn, on a
    connection of its own, and records on REQ what a span must match: local_port (the client's
    port), t0 and t1 (the wall-clock window, ns), got_status, got_body (bytes) and error."""
    own = conn is None or getattr(req, "new_conn", False)
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout) if own else conn
    headers = dict(headers or {}, **({"Connection": "close"} if own else {}))
    try:
        if c.sock is None:
            c.connect()
        req.local_port = c.sock.getsockname()[1]
        req.t0 = time.time_ns()
        c.request(method, target, body=body, headers=headers)
        resp = c.getresponse()
        req.got_body = resp.read()
        req.t1 = time.time_ns()
        req.got_status = resp.status
    except (OSError, http.client.HTTPException) as e:
        req.t1 = time.time_ns()
        req.error = repr(e)
        c.close()
    finally:
        if own:
            c.close()


def traced_get(port, path, status=200, where="", method="GET"):
    """GET PATH (or another METHOD, a POST with an empty body) from the service on PORT under a
    trace of its own, the caller's span made up; fails the test unless it answers STATUS, naming
    WHERE (a build, say) first. Returns (trace id, the caller's span id, req), the ids as bytes,
    req as perform() left it."""
    trace_id, parent = secrets.token_hex(16), secrets.token_hex(8)

    class Req:
        error = None
    req = Req()
    perform(req, port, method=method, target=path, body=b"" if method == "POST" else None,
            headers={"traceparent": f"00-{trace_id}-{parent}-01"})
    assert req.error is None, f"{where}{path}: {req.error}"
    assert req.got_status == status, f"{where}{path}: {req.got_status} {req.got_body!r}"
    return bytes.fromhex(trace_id), bytes.fromhex(parent), req


def wait_until(pred, timeout, step=0.05):
    """True as soon as PRED() is; False after TIMEOUT seconds."""
    deadline = time.monotonic() + timeout
    while True:
        if pred():
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(step)


def counter(line, name):
    """N from '... NAME N ...' in gospan's summary line."""
    m = re.search(rf"{name} (\d+)", line)
    assert m, f"'{name} N' is not in the summary: {line}"
    return int(m.group(1))


def trace_context_counters(line):
    """The outgoing trace-context counters of gospan's summary LINE, by name."""
    m = re.search(r"trace context sent (\d+) \(not sent: already set (\d+), request line not in "
                  r"the first write (\d+), not HTTP/1 (\d+), https (\d+), socket not tracked "
                  r"(\d+), HTTP/2 frames not whole (\d+), scratch busy (\d+)\)", line or "")
    assert m, f"no trace-context counters in {line!r}"
    keys = ("sent", "already_set", "no_room", "not_http1", "https", "untracked", "h2_not_whole",
            "scratch_busy")
    return dict(zip(keys, map(int, m.groups())))


def drop_reasons(line):
    """{'queue_full': 3, ...} from '... dropped N (queue_full=3 export_failed=1); ...'."""
    m = re.search(r"dropped \d+ \(([^)]*)\)", line)
    if not m:
        return {}
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(1))}


@pytest.fixture(scope="module")
def otlp_proto():
    return pytest.importorskip("opentelemetry.proto.collector.trace.v1.trace_service_pb2",
                               reason="the opentelemetry-proto package is needed (make deps)")


@dataclass
class ReceivedSpan:
    name: str
    kind: int
    trace_id: bytes
    span_id: bytes
    parent_span_id: bytes
    start_ns: int
    end_ns: int
    attrs: dict
    status_code: int
    status_message: str
    resource: dict
    scope_name: str
    scope_version: str
    proto: object = field(repr=False)


class OtlpReceiver:
    """Accepts OTLP/HTTP protobuf exports on POST /v1/traces and keeps every decoded span."""

    def __init__(self):
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

        self._pb = trace_service_pb2
        self.spans = []
        self.requests = []  # (path, headers dict) of every POST received
        self.errors = []  # why a request was refused
        self._cond = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, fmt, *args):  # keep pytest output quiet
                pass

            def do_POST(self):
                receiver._handle(self)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.url = f"{self.endpoint}/v1/traces"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def _reply(self, h, code, body=b"", ctype="application/x-protobuf"):
        h.send_response(code)
        h.send_header("Content-Type", ctype)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)

    def _refuse(self, h, code, why):
        with self._cond:
            self.errors.append(why)
            self._cond.notify_all()
        self._reply(h, code, why.encode(), "text/plain")

    def _handle(self, h):
        length = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in h.headers.items()}
        with self._cond:
            self.requests.append((h.path, headers))
        if h.path != "/v1/traces":
            return self._refuse(h, 404, f"POST to '{h.path}', not /v1/traces")
        ctype = headers.get("content-type", "")
        if ctype.split(";")[0].strip() != "application/x-protobuf":
            return self._refuse(h, 415, f"content type '{ctype}', not application/x-protobuf")
        enc = headers.get("content-encoding", "identity").lower()
        try:
            if enc == "gzip":
                body = gzip.decompress(body)
            elif enc == "deflate":
                body = zlib.decompress(body)
            elif enc != "identity":
                return self._refuse(h, 415, f"content encoding '{enc}'")
            req = self._pb.ExportTraceServiceRequest()
            req.ParseFromString(body)
        except Exception as e:  # noqa: BLE001 - any decoding failure is the exporter's fault
            return self._refuse(h, 400, f"cannot decode ExportTraceServiceRequest: {e!r}")
        got = received_spans(req)
        with self._cond:
            self.spans.extend(got)
            self._cond.notify_all()
        self._reply(h, 200, self._pb.ExportTraceServiceResponse().SerializeToString())

    def wait_for_spans(self, n, timeout):
        """Waits until at least N spans arrived; returns how many did."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while len(self.spans) < n:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
            return len(self.spans)

    def snapshot(self):
        with self._cond:
            return list(self.spans)

    def close(self):
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture(scope="module")
def otlp_receiver():
    pytest.importorskip("opentelemetry.proto.collector.trace.v1.trace_service_pb2",
                        reason="the opentelemetry-proto package is needed (make deps)")
    rx = OtlpReceiver()
    yield rx
    rx.close()


# ---- gospan ---------------------------------------------------------------------------------

# What a sanitizer prints on stderr: under `make test SANITIZE=1` gospan is built with ASan and
# UBSan, and a leak ("ERROR: LeakSanitizer: detected memory leaks"), a memory error or undefined
# behaviour is reported there and makes the exit status non-zero.
SANITIZER_REPORT = re.compile(r"\b[A-Za-z]*Sanitizer\b")


class Gospan:
    def __init__(self, argv, env):
        self.argv = argv
        self.proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.out = _LineReader(self.proc.stdout)
        self.err = _LineReader(self.proc.stderr, ATTACHED_PREFIX)
        self.returncode = None

    def _output(self):
        return (f"--- gospan stderr ---\n{self.err.text}\n"
                f"--- gospan stdout ---\n{self.out.text}")

    def wait_attached(self, timeout=ATTACH_TIMEOUT):
        """Waits for the 'gospan: attached' line; fails the test if gospan exits or is late."""
        deadline = time.monotonic() + timeout
        while not self.err.matched.wait(0.05):
            if self.proc.poll() is not None:
                self.err.join()
                self.out.join()
                if self.err.match:
                    break
                raise AssertionError(f"gospan exited with status {self.proc.returncode} before "
                                     f"attaching ({' '.join(self.argv)})\n{self._output()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"gospan did not print '{ATTACHED_PREFIX}' within "
                                     f"{timeout:.0f} s\n{self._output()}")
        return self.err.match

    def stop(self, sig=signal.SIGTERM, timeout=STOP_TIMEOUT):
        """Sends SIG, waits for the exit and all output; returns the exit status."""
        if not end_process(self.proc, (self.out, self.err), sig, timeout):
            raise AssertionError(f"gospan did not exit within {timeout:.0f} s of "
                                 f"{signal.Signals(sig).name}\n{self._output()}")
        self.returncode = self.proc.returncode
        return self.returncode

    def assert_ended_cleanly(self):
        """Fails the test unless gospan, once stopped, exited with status 0 and printed no
        sanitizer report: how every test that stops a gospan on purpose must see it end."""
        assert self.returncode is not None, f"gospan was not stopped ({' '.join(self.argv)})"
        report = SANITIZER_REPORT.search(self.err.text)
        assert self.returncode == 0 and report is None, (
            f"gospan ({' '.join(self.argv)}) exited with status {self.returncode}"
            f"{', with a sanitizer report' if report else ''}\n{self._output()}")

    def stop_cleanly(self, sig=signal.SIGTERM, timeout=STOP_TIMEOUT):
        """stop(SIG), then assert_ended_cleanly(); returns the exit status (0)."""
        self.stop(sig, timeout)
        self.assert_ended_cleanly()
        return self.returncode

    @property
    def stderr(self):
        return self.err.text

    @property
    def stdout(self):
        return self.out.text

    def summary_line(self):
        for line in self.err.lines:
            if line.startswith(SUMMARY_PREFIX):
                return line
        return None


def stop_cleanly(gospans):
    """Stops every gospan of GOSPANS ({name: Gospan}) with SIGTERM, all of them even when one
    fails, then fails the test naming each that did not end cleanly (Gospan.stop_cleanly)."""
    problems = []
    for name, g in gospans.items():
        try:
            g.stop_cleanly()
        except AssertionError as e:
            problems.append(f"gospan on {name}: {e}")
    assert not problems, "\n".join(problems)


@pytest.fixture(scope="module")
def start_gospan(gospan_bin):
    """start_gospan(pid, receiver=None, env=None) -> Gospan, started and not yet waited for.

    gospan gets the test runner's environment without any OTEL_* variable, then
    OTEL_BSP_SCHEDULE_DELAY=200, the receiver's traces URL when one is given, then ENV.
    Anything still running at the end of the test is killed.
    """
    started = []

    def start(pid, receiver=None, env=None, args=()):
        e = _clean_env()
        e["OTEL_BSP_SCHEDULE_DELAY"] = "200"
        if SLOWDOWN > 1:
            # A slow machine's receiver (an arm64 guest under TCG, a loaded host) once took
            # over the default 10 s to answer an export it had taken: gospan sent it again,
            # as OTLP allows, and the tests, which count spans, saw a span twice.
            e["OTEL_EXPORTER_OTLP_TIMEOUT"] = str(int(10000 * SLOWDOWN))
        if receiver is not None:
            e["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = receiver.url
        e.update(env or {})
        g = Gospan([str(gospan_bin), "--pid", str(pid), *args], e)
        started.append(g)
        return g

    yield start
    for g in started:
        if g.proc.poll() is None:
            g.proc.kill()
            g.proc.wait(10)
