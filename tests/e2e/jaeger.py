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
    python3 tests/e2e/jaeger.py show --query URL [--service NAME] [--datastores NAME]
                                          the fullest trace of each operation as a tree (the
                                          most spans, the latest of those); with more than one
                                          service, how many traces of the first are one trace
                                          across them, every parent link exact (why not, for the
                                          first few that are not), and each kind of call or
                                          message across (HTTP or gRPC by name, Kafka by topic);
                                          the data store calls of every service, by system and
                                          name, each of which must be the child of a SERVER or
                                          CONSUMER span of its service. With --datastores NAME,
                                          status 3 when NAME made none or one is not under such
                                          a span.

Jaeger v2 is a Collector distribution: collector.py's code builds it (cached) and runs it, as it
does the Collector.

A binary built from the Go module has no web UI (its assets are not in the module; the query
port serves a placeholder page): `ui=no` says so, and `show` prints traces as text instead.
"""

import argparse
import json
import os
import shutil
import signal
import socket
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from collector import (BuildError, Distribution, Unavailable, built, cached_build, executable,
                       module_source, run_go, running)
from matrix import cache_dir
from procs import Stop, free_ports, raise_stop

JAEGER_MODULE = "github.com/jaegertracing/jaeger"
JAEGER_VERSION = os.environ.get("GOSPAN_JAEGER_VERSION", "v1.76.0")
BUILD_TIMEOUT = 1800


def cached_binary(version=JAEGER_VERSION):
    """(path, ready): GOSPAN_JAEGER_BIN, or where the cache keeps VERSION, and whether it is
    there; nothing is built."""
    if os.environ.get("GOSPAN_JAEGER_BIN"):
        path = Path(os.environ["GOSPAN_JAEGER_BIN"])
        return path, executable(path)
    dest = cache_dir("GOSPAN_JAEGER_CACHE") / f"jaeger-{version}" / "jaeger"
    return dest, executable(dest)


def jaeger_binary(version=JAEGER_VERSION):
    """The path of a Jaeger v2 binary of VERSION, building and caching it when missing; raises
    Unavailable or BuildError."""
    dest, ready = cached_binary(version)
    if os.environ.get("GOSPAN_JAEGER_BIN"):
        if not ready:
            raise BuildError(f"GOSPAN_JAEGER_BIN='{dest}' is not an executable")
        return dest
    home = dest.parent

    def build():
        src = module_source(JAEGER_MODULE, version, home / "src", "Jaeger")
        tmp = home / "jaeger.partial"
        t0 = time.monotonic()
        res = run_go(["go", "build", "-o", str(tmp), "./cmd/jaeger"], "Jaeger", cwd=src,
                     timeout=BUILD_TIMEOUT)
        if res.returncode != 0:
            raise BuildError(f"cannot build Jaeger {version} ({JAEGER_MODULE}/cmd/jaeger):\n"
                             f"{res.stderr[-4000:]}")
        os.replace(tmp, dest)
        shutil.rmtree(src, ignore_errors=True)
        (home / "build.log").write_text(
            f"built {JAEGER_MODULE}/cmd/jaeger@{version} in {time.monotonic() - t0:.0f} s\n")

    return cached_build(dest, build)


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


class Jaeger(Distribution, QueryAPI):
    """A running Jaeger: OTLP/HTTP in at `otlp_endpoint`, the HTTP query API at `query_url`."""

    NAME = WHAT = "jaeger"

    def __init__(self, binary, workdir, otlp_port, query_port, query_grpc_port):
        QueryAPI.__init__(self, f"http://127.0.0.1:{query_port}")
        self._otlp_port = otlp_port
        Distribution.__init__(self, binary, workdir, CONFIG.format(
            otlp_port=otlp_port, query_port=query_port, query_grpc_port=query_grpc_port),
            otlp_port)

    # What went to its stderr and stdout.
    output = Distribution.log

    def ready(self):
        return self._query_ok() and self._otlp_ok()

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


@pytest.fixture(scope="session")
def jaeger_bin(bpf_ready):
    return built(jaeger_binary)


@pytest.fixture(scope="module")
def jaeger(jaeger_bin, free_port, tmp_path_factory):
    yield from running(Jaeger, jaeger_bin, 3, free_port, tmp_path_factory)


# ---- reading the query API's JSON -------------------------------------------------------------


def tag(span, key):
    """The value of tag KEY of a span in the query API's JSON, or None."""
    for t in span.get("tags") or []:
        if t.get("key") == key:
            return t.get("value")
    return None


def service_of(trace, span):
    return trace["processes"][span["processID"]]["serviceName"]


def process_tags(trace, span):
    """The resource attributes of SPAN's process, by key."""
    proc = trace["processes"][span["processID"]]
    return {t["key"]: t["value"] for t in proc.get("tags") or []}


def parents(span):
    """The (refType, spanID) pairs of a span's references."""
    return [(r.get("refType"), r.get("spanID")) for r in span.get("references") or []]


# ---- the command line, for examples/demo.sh ------------------------------------------------




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
        signal.signal(sig, raise_stop)
    with tempfile.TemporaryDirectory(prefix="gospan-jaeger.") as tmp:
        try:
            j = Jaeger(binary, args.workdir or tmp, *free_ports(3))
        except Stop:
            return 0
        except (AssertionError, OSError) as e:
            print(f"jaeger.py: cannot start '{binary}': {e}", file=sys.stderr)
            return 1
        try:
            ui = "yes" if j.has_ui() else "no"
            print(f"ready otlp={j.otlp_endpoint} query={j.query_url} ui={ui}", flush=True)
            while j.alive():
                time.sleep(0.2)
        except Stop:
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


# rpc.grpc.status_code by number (google.golang.org/grpc/codes), named as the RPC conventions do.
GRPC_CODES = ("OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
              "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
              "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
              "UNAUTHENTICATED")


def _protocol(span):
    """'gRPC' for the span of an RPC, 'HTTP' for that of an HTTP request or call, 'Kafka' for
    a message sent or processed through Kafka, else None."""
    if tag(span, "rpc.system") == "grpc":
        return "gRPC"
    if tag(span, "http.request.method") is not None:
        return "HTTP"
    if tag(span, "messaging.system") == "kafka":
        return "Kafka"
    return None


def _status(span):
    """The HTTP status code or the gRPC status code's name, then ERROR when the span failed."""
    code = tag(span, "http.response.status_code")
    rpc = tag(span, "rpc.grpc.status_code")
    failed = tag(span, "otel.status_code") == "ERROR" or tag(span, "error") in (True, "true")
    words = []
    if code is not None:
        words.append(str(code))
    elif isinstance(rpc, int):
        words.append(GRPC_CODES[rpc] if 0 <= rpc < len(GRPC_CODES) else str(rpc))
    if failed:
        words.append("ERROR")
    return " ".join(words) or "-"


def _where(span):
    """What a span is about besides its name: the URL an HTTP call went to, the address an RPC
    went to (an RPC's name is its method already), the data store a call went to and its
    address where known, the broker a message went through (and the partition and offset of
    one processed), the path a request asked for."""
    kind = tag(span, "span.kind")
    if kind in ("producer", "consumer"):
        host, port = tag(span, "server.address"), tag(span, "server.port")
        where = f"{host}:{port}" if host and port is not None else host or ""
        words = [tag(span, "messaging.system") or "", where]
        partition = tag(span, "messaging.destination.partition.id")
        offset = tag(span, "messaging.kafka.offset")
        if partition is not None and offset is not None:
            words.append(f"partition {partition} offset {offset}")
        return " ".join(w for w in words if w)
    if kind == "client":
        if tag(span, "url.full"):
            return tag(span, "url.full")
        host, port = tag(span, "server.address"), tag(span, "server.port")
        where = f"{host}:{port}" if host and port is not None else host or ""
        system = tag(span, "db.system.name")
        return f"{system} {where}".strip() if system else where
    return tag(span, "url.path") or ""


def _tree(trace):
    """A trace as a heading and one row per span, (label, status, duration in ms, where), the
    spans in start order, each span's label indented under its parent."""
    spans = sorted(trace["spans"], key=lambda s: s["startTime"])
    ids = {s["spanID"] for s in spans}
    children, roots = {}, []
    for s in spans:
        parent = next((r["spanID"] for r in s.get("references") or []
                       if r.get("spanID") in ids), None)
        (children.setdefault(parent, []) if parent else roots).append(s)
    start = time.strftime("%H:%M:%S", time.localtime(spans[0]["startTime"] / 1e6))
    heading = f"trace {trace['traceID']}  {start}  {len(spans)} span{'s' * (len(spans) != 1)}"
    rows = []

    def walk(span, depth):
        kind = tag(span, "span.kind") or "-"
        label = "  " * depth + f"{service_of(trace, span)}  {kind:<6}  {span['operationName']}"
        rows.append((label, _status(span), span["duration"] / 1000, _where(span)))
        for child in children.get(span["spanID"], []):
            walk(child, depth + 1)

    for root in roots:
        walk(root, 0)
    return heading, rows


def _print_trees(trees):
    """Prints (heading, rows) trees with their columns aligned across all of them."""
    rows = [r for _, rs in trees for r in rs]
    label_w = max([44, *(len(r[0]) + 1 for r in rows)])
    status_w = max([9, *(len(r[1]) for r in rows)])
    for heading, rs in trees:
        print(heading)
        for label, status, ms, where in rs:
            print(f"  {label:<{label_w}} {status:<{status_w}} {ms:>8.3f} ms  {where}".rstrip())


def _fullest_by_root(traces):
    """The fullest trace of each root operation (the most spans, the latest of those), in the
    order of the operations' names: a request that missed a cache, say, rather than the latest,
    which may have hit it."""
    best = {}
    for t in traces:
        first = min(t["spans"], key=lambda s: s["startTime"])
        op = f"{service_of(t, first)} {first['operationName']}"
        rank = (len(t["spans"]), first["startTime"])
        if op not in best or rank > best[op][0]:
            best[op] = (rank, t)
    return [best[op][1] for op in sorted(best)]


def _started(item):
    """The start of a (trace, anything) pair's trace, to sort them by."""
    return min((s["startTime"] for s in item[0].get("spans") or []), default=0)


def _hops(trace, first):
    """(hops, None) when TRACE is one trace across services with every parent link exact, hops
    being the calls and messages from one service to another, as (caller, callee, protocol,
    name) tuples (for a message the topic is its name); else (None, what is wrong). Exact: a
    single root, a SERVER span of FIRST; every other span the CHILD_OF one span of the trace;
    every CLIENT span the child of a SERVER or CONSUMER span of its service (the request or
    message it works for), and when it is a call to a service (HTTP or gRPC) the parent of
    exactly one span, the SERVER span of another service that served the call (the same
    protocol, and for gRPC the same method); every other SERVER span the child of such a CLIENT
    span; every PRODUCER span the child of a SERVER or CONSUMER span of its service and the
    parent of at least one span, each the CONSUMER span of a service that processed the message
    (the same topic); every CONSUMER span the child of such a PRODUCER span; and at least one
    call from FIRST."""
    spans = trace.get("spans") or []
    by_id = {s["spanID"]: s for s in spans}

    def name(span):
        return f"the {service_of(trace, span)} {(tag(span, 'span.kind') or '-').upper()} span " \
               f"{span['operationName']} ({span['spanID']})"

    parent, children, roots = {}, {}, []
    for s in spans:
        refs = parents(s)
        if not refs:
            roots.append(s)
            continue
        if len(refs) != 1 or refs[0][0] != "CHILD_OF" or refs[0][1] not in by_id:
            return None, f"{name(s)} has references {refs}, not one CHILD_OF a span of the trace"
        parent[s["spanID"]] = by_id[refs[0][1]]
        children.setdefault(refs[0][1], []).append(s)
    if len(roots) != 1 or service_of(trace, roots[0]) != first or \
            tag(roots[0], "span.kind") != "server":
        return None, f"its roots are {', '.join(map(name, roots)) or 'none'}, not one {first} " \
                     f"SERVER span"

    def kind(span):
        return tag(span, "span.kind") if span is not None else None

    def same_service(a, b):
        return a is not None and b is not None and service_of(trace, a) == service_of(trace, b)

    def working(s):  # the child of a SERVER or CONSUMER span of its own service
        up = parent.get(s["spanID"])
        return kind(up) in ("server", "consumer") and same_service(up, s)

    hops = []
    for s in spans:
        svc, up, down = service_of(trace, s), parent.get(s["spanID"]), children.get(s["spanID"], [])
        proto = _protocol(s)
        if kind(s) == "client":
            if not working(s):
                return None, f"{name(s)} is not the child of a {svc} SERVER or CONSUMER span"
            if proto is None:  # a data store call: nothing traced answers it
                continue
            if len(down) != 1:
                return None, f"{name(s)} has {len(down)} children, not the one SERVER span of " \
                             f"the service it called"
            callee = down[0]
            if kind(callee) != "server" or same_service(callee, s) or \
                    _protocol(callee) != proto or \
                    (proto == "gRPC" and callee["operationName"] != s["operationName"]):
                return None, f"{name(s)} has the child {name(callee)}, not the SERVER span of " \
                             f"the call"
            hops.append((svc, service_of(trace, callee), proto, s["operationName"]))
        elif kind(s) == "server" and s is not roots[0]:
            if kind(up) != "client" or same_service(up, s):
                return None, f"{name(s)} is not the child of another service's CLIENT span"
        elif kind(s) == "producer":
            topic = tag(s, "messaging.destination.name")
            if not working(s):
                return None, f"{name(s)} is not the child of a {svc} SERVER or CONSUMER span"
            if not down:
                return None, f"{name(s)} has no child: no CONSUMER span processed its message"
            for c in down:
                if kind(c) != "consumer" or _protocol(c) != proto or \
                        tag(c, "messaging.destination.name") != topic:
                    return None, f"{name(s)} has the child {name(c)}, not the CONSUMER span " \
                                 f"of a message it sent"
                hops.append((svc, service_of(trace, c), proto, topic))
        elif kind(s) == "consumer" and kind(up) != "producer":
            return None, f"{name(s)} is not the child of the PRODUCER span that sent its message"
    if not any(h[0] == first for h in hops):
        return None, f"no {first} CLIENT span called another service traced here"
    return hops, None


# show's exit status when a --datastores service made no data store call, or one not under a
# SERVER or CONSUMER span of its own (1 is for a query that failed, 2 for a bad command line).
SHOW_DATASTORES_WRONG = 3


def _datastore_calls(traces, svc):
    """SVC's data store calls (its CLIENT spans with db.system.name) in TRACES: ({(system,
    name): calls}, {(system, name): traces with such a call}, [(trace, what is wrong)] for the
    calls that are not the child of a SERVER or CONSUMER span of SVC in their trace)."""
    calls, in_traces, wrong = {}, {}, []
    for t in traces:
        by_id = {s["spanID"]: s for s in t.get("spans") or []}
        seen = set()
        for s in by_id.values():
            system = tag(s, "db.system.name")
            if service_of(t, s) != svc or tag(s, "span.kind") != "client" or not system:
                continue
            key = (system, s["operationName"])
            calls[key] = calls.get(key, 0) + 1
            seen.add(key)
            refs = [by_id.get(ref) for kind, ref in parents(s) if kind == "CHILD_OF"]
            if len(refs) != 1 or refs[0] is None or service_of(t, refs[0]) != svc or \
                    tag(refs[0], "span.kind") not in ("server", "consumer"):
                wrong.append((t, f"the {svc} CLIENT span {s['operationName']} ({s['spanID']}, "
                                 f"{system}) is not the child of a {svc} SERVER or CONSUMER "
                                 f"span"))
        for key in seen:
            in_traces[key] = in_traces.get(key, 0) + 1
    return calls, in_traces, wrong


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
    for svc in args.datastores or []:
        if svc not in services:
            print(f"jaeger.py: --datastores '{svc}' is not a --service", file=sys.stderr)
            return 2
    if args.since is not None:
        by_service = {svc: [t for t in traces if _started((t,)) >= args.since * 1e6]
                      for svc, traces in by_service.items()}
    if args.ignore_path:
        # A trace is left out when the request it starts with asked for one of those paths.
        def root_path(t):
            spans = t.get("spans") or [{}]
            return tag(min(spans, key=lambda s: s.get("startTime", 0)), "url.path")

        ignored = {svc: sum(root_path(t) in args.ignore_path for t in traces)
                   for svc, traces in by_service.items()}
        by_service = {svc: [t for t in traces if root_path(t) not in args.ignore_path]
                      for svc, traces in by_service.items()}
        print("left out: " + ", ".join(f"{n} {svc} traces" for svc, n in ignored.items()) +
              f" of requests for {', '.join(args.ignore_path)}")
    names = {svc: {t["traceID"] for t in traces} for svc, traces in by_service.items()}
    first = services[0]
    shown = set()
    try:
        for svc in services:
            # A trace is shown once, under the first service it has spans of.
            mine = [t for t in by_service[svc] if t["traceID"] not in shown]
            if not mine:
                continue
            if svc == first:
                print(f"the fullest trace of each {svc} operation, the most spans and the latest "
                      f"of those (of {len(names[svc])} traces with {svc} spans):")
            else:
                print(f"traces that start at {svc}, the fullest of each operation (of {len(mine)} "
                      f"with no span of {', '.join(services[:services.index(svc)])}):")
            _print_trees([_tree(api.trace(t["traceID"]) or t) for t in _fullest_by_root(mine)])
            shown |= {t["traceID"] for t in mine}
        counts = ", ".join(f"{len(ids)} with spans of {svc}" for svc, ids in names.items())
        line = f"traces in Jaeger: {counts}"
        if len(services) > 1:
            line += "; " + ", ".join(f"{len(names[first] & names[svc])} with spans of {first} "
                                     f"and {svc}" for svc in services[1:])
        print(line)
        if len(services) > 1:
            joined, unjoined = {}, []
            for t in sorted(names[first]):
                trace = api.trace(t) or {"traceID": t, "spans": []}
                hops, problem = _hops(trace, first)
                if hops is None:
                    unjoined.append((trace, problem))
                else:
                    joined[t] = hops
            messages = any(hop[2] == "Kafka" for h in joined.values() for hop in h)
            print(f"joined traces: {len(joined)} of {len(names[first])} {first} traces are one "
                  f"trace across services, every parent link exact: every CLIENT span the child "
                  f"of a SERVER or CONSUMER span of its service and, for a call, the parent of "
                  f"the SERVER span that served it" +
                  ("; every PRODUCER span the parent of the CONSUMER spans that processed its "
                   "message" if messages else ""))
            # Why not, for the first few that are not (all of them, when nothing went out).
            if len(unjoined) < len(names[first]):
                for trace, problem in sorted(unjoined, key=_started)[:5]:
                    print(f"  not joined: trace {trace['traceID']}: {problem}")
            # Each kind of call across, and in how many of the joined traces it is.
            calls, traces = {}, {}
            for t, h in joined.items():
                for hop in h:
                    calls[hop] = calls.get(hop, 0) + 1
                for hop in set(h):
                    traces[hop] = traces.get(hop, 0) + 1
            def order(svc):
                return services.index(svc) if svc in services else len(services)

            for hop in sorted(calls, key=lambda h: (order(h[0]), order(h[1]), h)):
                caller, callee, proto, name = hop
                what = "messages" if proto == "Kafka" else "calls"
                print(f"hop {caller} -> {callee}, {proto} {name}: {calls[hop]} {what}, in "
                      f"{traces[hop]} of the joined traces")
        # Each service's data store calls, in all the traces it has spans in.
        failed = False
        for svc in services:
            calls, traces, wrong = _datastore_calls(by_service[svc], svc)
            for system, name in sorted(calls, key=lambda k: (-calls[k], k)):
                print(f"db {svc} -> {system} {name}: {calls[system, name]} calls, in "
                      f"{traces[system, name]} traces")
            for trace, problem in sorted(wrong, key=_started)[:5]:
                print(f"  not under a SERVER or CONSUMER span of {svc}: trace "
                      f"{trace['traceID']}: {problem}")
            if svc in (args.datastores or []):
                if not calls:
                    print(f"no data store calls of {svc}: no {svc} CLIENT span with "
                          f"db.system.name in {len(names[svc])} traces")
                failed = failed or not calls or bool(wrong)
    except (OSError, ValueError) as e:
        print(f"jaeger.py: cannot query '{api.query_url}': {e}", file=sys.stderr)
        return 1
    return SHOW_DATASTORES_WRONG if failed else 0


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
    p.add_argument("--datastores", action="append", metavar="SERVICE",
                   help="a service that must have made data store calls, each the child of one "
                   "of its SERVER or CONSUMER spans: status 3 otherwise (repeatable)")
    p.add_argument("--limit", type=int, default=1000, help="traces read per service")
    p.add_argument("--ignore-path", action="append", metavar="PATH",
                   help="leave out the traces of requests for PATH, such as health checks, "
                   "which call no other service (repeatable)")
    p.add_argument("--since", type=float, metavar="UNIX_SECONDS",
                   help="only the traces that start at or after this time (a demo whose load "
                   "began before every service was traced)")
    args = ap.parse_args(argv)
    return {"path": _cmd_path, "build": _cmd_build, "serve": _cmd_serve, "wait": _cmd_wait,
            "show": _cmd_show}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
