"""A real Jaeger for the end-to-end tests: built from source through the Go module proxy, cached,
run on loopback with in-memory storage, an OTLP/HTTP receiver and the HTTP query API.

The binary is Jaeger v2 (`cmd/jaeger`, an OpenTelemetry Collector distribution), taken from the
module github.com/jaegertracing/jaeger at JAEGER_VERSION; the v2 releases are published in that
module under v1.x tags. `go install pkg@version` refuses the module (its go.mod has replace
directives), so it is downloaded with `go mod download` and built as the main module. The build
takes about 6 minutes on 2 CPUs the first time; the binary is kept in

    <cache>/jaeger-<version>/jaeger, where <cache> is $GOSPAN_JAEGER_CACHE, else
    $XDG_CACHE_HOME/gospan, else ~/.cache/gospan

and reused by every later run (also by CI on the same machine). GOSPAN_JAEGER_BIN names a ready
binary instead. Import the `jaeger` fixture into a test module to use it.

The same file is the demo's way to Jaeger (examples/demo.sh), run as a program:

    python3 tests/e2e/jaeger.py path      where the binary is; status 1 when it is not built yet
    python3 tests/e2e/jaeger.py build     builds it when missing, prints its path
    python3 tests/e2e/jaeger.py serve     runs it on free loopback ports until SIGTERM; prints
                                          "ready otlp=URL query=URL ui=yes|no" once it is ready
    python3 tests/e2e/jaeger.py wait --query URL --spans SERVICE=N ... [--timeout S]
    python3 tests/e2e/jaeger.py show --query URL [--service NAME]

A binary built from the Go module has no web UI (its assets are not in the module; the query
port serves a placeholder page): `ui=no` says so, and `show` prints traces as text instead.
"""

import argparse
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from conftest import _LineReader

JAEGER_MODULE = "github.com/jaegertracing/jaeger"
JAEGER_VERSION = os.environ.get("GOSPAN_JAEGER_VERSION", "v1.76.0")
BUILD_TIMEOUT = 1800
READY_TIMEOUT = 60.0
STOP_TIMEOUT = 15.0


def cache_dir():
    if os.environ.get("GOSPAN_JAEGER_CACHE"):
        return Path(os.environ["GOSPAN_JAEGER_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "gospan"


def _go_env():
    env = dict(os.environ)
    # auto, not local: Jaeger's go.mod may ask for a newer Go than the installed one, which then
    # comes through the module proxy like any module.
    env.setdefault("GOTOOLCHAIN", "auto")
    env.update(CGO_ENABLED="0", GOFLAGS="-mod=mod -buildvcs=false")
    return env


class Unavailable(Exception):
    """Jaeger cannot be had here (no Go, the module proxy unreachable): the tests skip."""


class BuildError(Exception):
    """Building or finding Jaeger went wrong where it should have worked: the tests fail."""


def _run(argv, cwd=None, timeout=BUILD_TIMEOUT):
    try:
        return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                              env=_go_env())
    except FileNotFoundError:
        raise Unavailable("Go is not installed; it is needed to build Jaeger") from None
    except subprocess.TimeoutExpired:
        raise BuildError(f"'{' '.join(argv)}' did not finish within {timeout} s") from None


def _executable(path):
    return path.is_file() and os.access(path, os.X_OK)


def cached_binary(version=JAEGER_VERSION):
    """(path, ready): GOSPAN_JAEGER_BIN, or where the cache keeps VERSION, and whether it is
    there; nothing is built."""
    if os.environ.get("GOSPAN_JAEGER_BIN"):
        path = Path(os.environ["GOSPAN_JAEGER_BIN"])
        return path, _executable(path)
    dest = cache_dir() / f"jaeger-{version}" / "jaeger"
    return dest, _executable(dest)


def jaeger_binary(version=JAEGER_VERSION):
    """The path of a Jaeger v2 binary of VERSION, building and caching it when missing; raises
    Unavailable or BuildError."""
    dest, ready = cached_binary(version)
    if os.environ.get("GOSPAN_JAEGER_BIN"):
        if not ready:
            raise BuildError(f"GOSPAN_JAEGER_BIN='{dest}' is not an executable")
        return dest
    if ready:
        return dest
    home = dest.parent
    home.mkdir(parents=True, exist_ok=True)
    # One build at a time, whoever else wants the same version waits for it.
    with open(home / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _executable(dest):
            return dest
        res = _run(["go", "mod", "download", "-json", f"{JAEGER_MODULE}@{version}"], timeout=600)
        if res.returncode != 0:
            raise Unavailable(f"cannot download {JAEGER_MODULE}@{version} through the Go "
                              f"module proxy: {res.stdout.strip()} {res.stderr.strip()}")
        src = home / "src"
        shutil.rmtree(src, ignore_errors=True)
        # The module cache is read-only; the build writes go.sum updates into its main module.
        shutil.copytree(json.loads(res.stdout)["Dir"], src)
        for d, _, files in os.walk(src):
            os.chmod(d, 0o755)
            for f in files:
                os.chmod(os.path.join(d, f), 0o644)
        tmp = home / "jaeger.partial"
        t0 = time.monotonic()
        res = _run(["go", "build", "-o", str(tmp), "./cmd/jaeger"], cwd=src)
        if res.returncode != 0:
            raise BuildError(f"cannot build Jaeger {version} ({JAEGER_MODULE}/cmd/jaeger):\n"
                             f"{res.stderr[-4000:]}")
        os.replace(tmp, dest)
        shutil.rmtree(src, ignore_errors=True)
        (home / "build.log").write_text(
            f"built {JAEGER_MODULE}/cmd/jaeger@{version} in {time.monotonic() - t0:.0f} s\n")
    return dest


CONFIG = """\
service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_query:
    enable_tracing: false
    storage:
      traces: memstore
    http:
      endpoint: 127.0.0.1:{query_port}
    grpc:
      endpoint: 127.0.0.1:{query_grpc_port}
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 100000
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:{otlp_port}
processors:
  batch:
    timeout: 100ms
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
"""


class QueryAPI:
    """Jaeger's HTTP query API at QUERY_URL, e.g. http://127.0.0.1:16686."""

    def __init__(self, query_url):
        self.query_url = query_url.rstrip("/")

    def get(self, path, **params):
        """GET PATH on the query API with PARAMS; the decoded JSON, or None on 404."""
        url = self.query_url + path
        if params:
            url += "?" + urllib.parse.urlencode(params)
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(url, timeout=10.0) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return None
            raise

    def services(self):
        return (self.get("/api/services") or {}).get("data") or []

    def trace(self, trace_id_hex):
        """The trace with that id, as the query API gives it, or None."""
        got = self.get(f"/api/traces/{trace_id_hex}")
        data = (got or {}).get("data") or []
        return data[0] if data else None

    def find_traces(self, service, tags=None, limit=20):
        """Traces of SERVICE (having a span with every tag in TAGS, a dict, when given)."""
        params = dict(service=service, limit=limit, lookback="1h")
        if tags:
            params["tags"] = json.dumps(tags)
        got = self.get("/api/traces", **params)
        return (got or {}).get("data") or []

    def has_ui(self):
        """Whether the query port serves the web UI rather than the placeholder page a binary
        built without the UI assets shows."""
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(self.query_url + "/", timeout=10.0) as resp:
                page = resp.read().decode("utf-8", "replace")
        except OSError:
            return False
        return not any(m in page for m in ("placeholder for the Jaeger UI",
                                           "not compiled with the UI assets"))


class Jaeger(QueryAPI):
    """A running Jaeger: OTLP/HTTP in at `otlp_endpoint`, the HTTP query API at `query_url`."""

    def __init__(self, binary, workdir, otlp_port, query_port, query_grpc_port):
        super().__init__(f"http://127.0.0.1:{query_port}")
        self.otlp_endpoint = f"http://127.0.0.1:{otlp_port}"
        self.otlp_url = f"{self.otlp_endpoint}/v1/traces"
        self._otlp_port = otlp_port
        config = Path(workdir) / "jaeger.yaml"
        config.write_text(CONFIG.format(otlp_port=otlp_port, query_port=query_port,
                                        query_grpc_port=query_grpc_port))
        env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
        self.proc = subprocess.Popen([str(binary), "--config", f"file:{config}"], env=env,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.out = _LineReader(self.proc.stdout)
        self.err = _LineReader(self.proc.stderr)
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def output(self):
        return f"--- jaeger stderr ---\n{self.err.text}\n--- jaeger stdout ---\n{self.out.text}"

    def _wait_ready(self):
        deadline = time.monotonic() + READY_TIMEOUT
        while True:
            if self.proc.poll() is not None:
                self.out.join()
                self.err.join()
                raise AssertionError(f"jaeger exited with status {self.proc.returncode} before "
                                     f"it was ready\n{self.output()}")
            if self._query_ok() and self._otlp_ok():
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"jaeger was not ready within {READY_TIMEOUT:.0f} s\n"
                                     f"{self.output()}")
            time.sleep(0.1)

    def _query_ok(self):
        try:
            self.get("/api/services")
            return True
        except (OSError, ValueError):
            return False

    def _otlp_ok(self):
        try:
            with socket.create_connection(("127.0.0.1", self._otlp_port), timeout=1.0):
                return True
        except OSError:
            return False

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.out.join()
        self.err.join()
        return self.proc.returncode


@pytest.fixture(scope="session")
def jaeger_bin(bpf_ready):
    try:
        return jaeger_binary()
    except Unavailable as e:
        pytest.skip(str(e))
    except BuildError as e:
        pytest.fail(str(e))


@pytest.fixture(scope="module")
def jaeger(jaeger_bin, free_port, tmp_path_factory):
    j = Jaeger(jaeger_bin, tmp_path_factory.mktemp("jaeger"), free_port(), free_port(),
               free_port())
    yield j
    j.stop()


# ---- reading the query API's JSON -------------------------------------------------------------


def tag(span, key):
    """The value of tag KEY of a span in the query API's JSON, or None."""
    for t in span.get("tags") or []:
        if t.get("key") == key:
            return t.get("value")
    return None


def service_of(trace, span):
    return trace["processes"][span["processID"]]["serviceName"]


def parents(span):
    """The (refType, spanID) pairs of a span's references."""
    return [(r.get("refType"), r.get("spanID")) for r in span.get("references") or []]


# ---- the command line, for examples/demo.sh ------------------------------------------------


class _Stop(Exception):
    """A signal asked `serve` to stop."""


def _on_signal(signum, frame):
    raise _Stop(signum)


def _free_ports(n):
    """N distinct loopback TCP ports nothing listens on (all held until every one is chosen)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            socks.append(s)
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _cmd_path(args):
    path, ready = cached_binary()
    print(path)
    return 0 if ready else 1


def _cmd_build(args):
    try:
        path = jaeger_binary()
    except (Unavailable, BuildError) as e:
        print(f"jaeger.py: {e}", file=sys.stderr)
        return 1
    print(path)
    return 0


def _cmd_serve(args):
    if args.binary:
        binary = Path(args.binary)
    else:
        binary, ready = cached_binary()
        if not ready:
            print(f"jaeger.py: '{binary}' is not built: run '{sys.argv[0]} build' first",
                  file=sys.stderr)
            return 1
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, _on_signal)
    with tempfile.TemporaryDirectory(prefix="gospan-jaeger.") as tmp:
        try:
            j = Jaeger(binary, args.workdir or tmp, *_free_ports(3))
        except _Stop:
            return 0
        except (AssertionError, OSError) as e:
            print(f"jaeger.py: cannot start '{binary}': {e}", file=sys.stderr)
            return 1
        try:
            ui = "yes" if j.has_ui() else "no"
            print(f"ready otlp={j.otlp_endpoint} query={j.query_url} ui={ui}", flush=True)
            while j.alive():
                time.sleep(0.2)
        except _Stop:
            for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                signal.signal(sig, signal.SIG_IGN)
            j.stop()
            return 0
        rc = j.stop()
        print(f"jaeger.py: jaeger exited with status {rc}\n{j.output()}", file=sys.stderr)
        return 1


def _span_counts(api, services, limit):
    """{service: how many spans of it the query API finds}."""
    counts = {}
    for svc in services:
        counts[svc] = sum(1 for t in api.find_traces(svc, limit=limit) for s in t["spans"]
                          if service_of(t, s) == svc)
    return counts


def _cmd_wait(args):
    api = QueryAPI(args.query)
    want = {}
    for item in args.spans:
        svc, _, n = item.rpartition("=")
        if not svc or not n.isdigit():
            print(f"jaeger.py: --spans '{item}' is not SERVICE=COUNT", file=sys.stderr)
            return 2
        want[svc] = int(n)
    limit = max([1000, *want.values()])
    deadline = time.monotonic() + args.timeout
    got, error = {}, None
    while True:
        try:
            got, error = _span_counts(api, want, limit), None
        except (OSError, ValueError) as e:
            error = e
        if all(got.get(s, 0) >= n for s, n in want.items()) or time.monotonic() > deadline:
            break
        time.sleep(0.25)
    print("spans in Jaeger: " + ", ".join(f"{s} {got.get(s, 0)} of {n}"
                                          for s, n in want.items()))
    if error is not None:
        print(f"jaeger.py: cannot query '{api.query_url}': {error}", file=sys.stderr)
    return 0 if all(got.get(s, 0) >= n for s, n in want.items()) else 1


def _status(span):
    code = tag(span, "http.response.status_code")
    failed = tag(span, "otel.status_code") == "ERROR" or tag(span, "error") in (True, "true")
    words = [str(code)] if code is not None else []
    if failed:
        words.append("ERROR")
    return " ".join(words) or "-"


def _tree_lines(trace):
    """A trace as text, one line per span, each span indented under its parent."""
    spans = sorted(trace["spans"], key=lambda s: s["startTime"])
    ids = {s["spanID"] for s in spans}
    children, roots = {}, []
    for s in spans:
        parent = next((r["spanID"] for r in s.get("references") or []
                       if r.get("spanID") in ids), None)
        (children.setdefault(parent, []) if parent else roots).append(s)
    start = time.strftime("%H:%M:%S", time.localtime(spans[0]["startTime"] / 1e6))
    lines = [f"trace {trace['traceID']}  {start}  {len(spans)} span{'s' * (len(spans) != 1)}"]

    def walk(span, depth):
        kind = tag(span, "span.kind") or "-"
        where = tag(span, "url.full") if kind == "client" else tag(span, "url.path")
        label = "  " * depth + f"{service_of(trace, span)}  {kind:<6}  {span['operationName']}"
        lines.append(f"  {label:<44} {_status(span):<9} {span['duration'] / 1000:>8.3f} ms  "
                     f"{where or ''}".rstrip())
        for child in children.get(span["spanID"], []):
            walk(child, depth + 1)

    for root in roots:
        walk(root, 0)
    return lines


def _latest_by_root(traces):
    """The latest trace of each root operation, in the order of the operations' names."""
    latest = {}
    for t in traces:
        first = min(t["spans"], key=lambda s: s["startTime"])
        op = f"{service_of(t, first)} {first['operationName']}"
        if op not in latest or first["startTime"] > latest[op][0]:
            latest[op] = (first["startTime"], t)
    return [latest[op][1] for op in sorted(latest)]


def _joined(trace, first):
    """Whether TRACE crosses services with every link right: each SERVER span of another service
    than FIRST is the child of a CLIENT span of another service, itself the child of a SERVER
    span of FIRST; and there is at least one such crossing."""
    by_id = {s["spanID"]: s for s in trace["spans"]}
    crossings = 0
    for s in trace["spans"]:
        if service_of(trace, s) == first or tag(s, "span.kind") != "server":
            continue
        refs = [r for r in parents(s) if r[0] == "CHILD_OF"]
        client = by_id.get(refs[0][1]) if len(refs) == 1 else None
        if client is None or tag(client, "span.kind") != "client" or \
                service_of(trace, client) == service_of(trace, s):
            return False
        up = [by_id.get(r[1]) for r in parents(client) if r[0] == "CHILD_OF"]
        if len(up) != 1 or up[0] is None or tag(up[0], "span.kind") != "server" or \
                service_of(trace, up[0]) != first:
            return False
        crossings += 1
    return crossings > 0


def _cmd_show(args):
    api = QueryAPI(args.query)
    try:
        services = args.service or api.services()
        by_service = {svc: api.find_traces(svc, limit=args.limit) for svc in services}
    except (OSError, ValueError) as e:
        print(f"jaeger.py: cannot query '{api.query_url}': {e}", file=sys.stderr)
        return 1
    if not services:
        print("Jaeger holds no traces")
        return 0
    names = {svc: {t["traceID"] for t in traces} for svc, traces in by_service.items()}
    first = services[0]
    shown = set()
    for svc in services:
        # A trace is shown once, under the first service it has spans of.
        mine = [t for t in by_service[svc] if t["traceID"] not in shown]
        if not mine:
            continue
        if svc == first:
            print(f"the latest trace of each {svc} operation "
                  f"(of {len(names[svc])} traces with {svc} spans):")
        else:
            print(f"traces that start at {svc}, the latest of each operation "
                  f"(of {len(mine)} with no span of {', '.join(services[:services.index(svc)])}):")
        for t in _latest_by_root(mine):
            print("\n".join(_tree_lines(api.trace(t["traceID"]) or t)))
        shown |= {t["traceID"] for t in mine}
    common = set.intersection(*names.values())
    counts = ", ".join(f"{len(ids)} with spans of {svc}" for svc, ids in names.items())
    line = f"traces in Jaeger: {counts}"
    if len(services) > 1:
        line += f"; {len(common)} with spans of {' and '.join(services)}"
    print(line)
    if len(services) > 1:
        joined = [t for t in common if _joined(api.trace(t) or {"spans": []}, first)]
        print(f"joined traces: {len(joined)} of {len(names[first])} {first} traces are one trace "
              f"across services, every {'/'.join(services[1:])} SERVER span a child of the "
              f"{first} CLIENT span that called it, itself a child of a {first} SERVER span")
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(prog="jaeger.py", description="Jaeger for gospan's demo: "
                                 "build it, run it on loopback, read traces back.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("path", help="print where the binary is; status 1 when it is not built")
    sub.add_parser("build", help=f"build Jaeger {JAEGER_VERSION} when missing (about 6 minutes "
                   f"the first time), print its path")
    p = sub.add_parser("serve", help="run Jaeger on free loopback ports until SIGTERM")
    p.add_argument("--binary", help="the Jaeger binary (default: the cached one)")
    p.add_argument("--workdir", help="where to write its configuration (default: a temporary "
                   "directory)")
    p = sub.add_parser("wait", help="wait until Jaeger holds a number of spans of each service")
    p.add_argument("--query", required=True, help="the query API's base URL")
    p.add_argument("--spans", action="append", required=True, metavar="SERVICE=COUNT")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds (default 30)")
    p = sub.add_parser("show", help="print the latest trace of each operation as a tree")
    p.add_argument("--query", required=True, help="the query API's base URL")
    p.add_argument("--service", action="append", help="a service to show (repeatable; "
                   "default: every service Jaeger knows)")
    p.add_argument("--limit", type=int, default=1000, help="traces read per service")
    args = ap.parse_args(argv)
    return {"path": _cmd_path, "build": _cmd_build, "serve": _cmd_serve, "wait": _cmd_wait,
            "show": _cmd_show}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
