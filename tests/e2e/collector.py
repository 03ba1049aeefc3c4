"""A real OpenTelemetry Collector for the end-to-end tests: built from source through the Go
module proxy with the official builder (go.opentelemetry.io/collector/cmd/builder), cached, and run
on loopback with the OTLP/HTTP receiver, and the file exporter writing traces as OTLP JSON lines
and metrics as length-prefixed protobuf (read back with opentelemetry-proto); on request its
prometheus receiver scrapes a target's /metrics into the same metrics pipeline.

The distribution holds the otlp and prometheus receivers, the batch and k8s_attributes
processors, and the debug, otlp_http and file exporters: what the tests' own configuration uses,
and what the Collector configuration of examples/kubernetes/otel-collector.yaml uses
(test_deploy.py validates that one with this binary). All come from the Collector release
COLLECTOR_VERSION: the k8s_attributes processor's module has versions of its own since it went v1
(v1.1.0 is the one released with, and requiring the modules of, v0.162.0;
K8SATTRIBUTES_VERSIONS), and the build fails when the packages it compiles come from modules of
more than one release. The builder's own `go mod tidy` also resolves the test-only imports of
every component, and the module proxy does not serve all of those (the file exporter's tests
import an encoding extension the proxy answers 403 for), so the builder only generates the
sources and go.mod (`--skip-compilation`; its failing tidy leaves both in place) and the fixture
finishes with `go mod tidy -e` and `go build`. v0.162.0 is the newest release whose build
dependencies the proxy serves in full (the otlp receiver of v0.163.0 on imports a module the
proxy refuses). The binary is kept in

    <cache>/otelcol-<version>-<hash>/otelcol, where <cache> is $GOSPAN_OTELCOL_CACHE, else
    $XDG_CACHE_HOME/gospan, else ~/.cache/gospan, and <hash> the first 8 hex digits of the
    SHA-256 of the builder manifest (a binary built from another component list is not reused)

and reused by every later run; build.log beside it says how long the build took. The build is
heavy. The k8s_attributes processor brings the Kubernetes client libraries: from empty Go build
and module caches, on 2 CPUs that other builds loaded (load average 10 to 18), the build took
497 s and 285 CPU-seconds with it against 351 s and 185 CPU-seconds for the otlp receiver,
debug and file exporters alone (142 s on a quieter machine), and the binary was 96 MB against
49 MB. The prometheus receiver brings Prometheus's scrape and discovery code with its cloud SDKs:
1548 packages from 343 modules are compiled against 906 from 206 without it. From an empty Go
build cache (the module cache holding its modules; their download took about 25 s), on the 2
CPUs loaded by other work (load average 2 to 9), it took 761 s and 674 CPU-seconds; with the
build cache of the list without it, 422 s and 521 CPU-seconds, as it moves otelhttp, which most
of the Collector imports, from v0.70.0 to v0.71.0, so little of that build is reused. Linked
with `-s -w` (no symbol table or DWARF; Go's own tracebacks keep working) the binary is 117 MB,
164 MB without.
GOSPAN_OTELCOL_BIN names a ready binary instead. Import the `collector` fixture into a test module
to use it.

Jaeger v2 (jaeger.py) is a Collector distribution too, built and run the same way: it takes from
here the cached build (cached_build), the go commands that make it (run_go), the fixtures'
verdict on a build (built) and the running process (Distribution, running).
"""

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from conftest import ReceivedSpan, _LineReader, attributes
from matrix import cache_dir
from procs import end_process

COLLECTOR_VERSION = os.environ.get("GOSPAN_OTELCOL_VERSION", "v0.162.0")
BUILDER_MODULE = "go.opentelemetry.io/collector/cmd/builder"
BUILD_TIMEOUT = 1200
READY_TIMEOUT = 60.0
STOP_TIMEOUT = 15.0

# The k8s_attributes processor's module version released with each Collector version.
K8SATTRIBUTES_VERSIONS = {"v0.162.0": "v1.1.0"}

MANIFEST = """\
dist:
  name: otelcol
  module: gospan.test/otelcol
  description: OpenTelemetry Collector for gospan's end-to-end tests
  output_path: {out}
receivers:
  - gomod: go.opentelemetry.io/collector/receiver/otlpreceiver {version}
  - gomod: github.com/open-telemetry/opentelemetry-collector-contrib/receiver/prometheusreceiver {version}
processors:
  - gomod: go.opentelemetry.io/collector/processor/batchprocessor {version}
  - gomod: github.com/open-telemetry/opentelemetry-collector-contrib/processor/k8sattributesprocessor {k8sattributes_version}
exporters:
  - gomod: go.opentelemetry.io/collector/exporter/debugexporter {version}
  - gomod: go.opentelemetry.io/collector/exporter/otlphttpexporter {version}
  - gomod: github.com/open-telemetry/opentelemetry-collector-contrib/exporter/fileexporter {version}
"""


def manifest(version, out):
    """The builder manifest for the Collector VERSION, generating its sources into OUT."""
    k8s = os.environ.get("GOSPAN_K8SATTRIBUTES_VERSION") or K8SATTRIBUTES_VERSIONS.get(version)
    if not k8s:
        raise BuildError(f"no k8sattributesprocessor version known for the Collector {version}: "
                         f"add it to K8SATTRIBUTES_VERSIONS or set GOSPAN_K8SATTRIBUTES_VERSION")
    return MANIFEST.format(out=out, version=version, k8sattributes_version=k8s)


def manifest_hash(version):
    """8 hex digits naming the component list of VERSION's build (its manifest, output aside)."""
    return hashlib.sha256(manifest(version, "").encode()).hexdigest()[:8]


# Module path prefixes of the Collector's own releases: their v0 modules all carry the release's
# version (their v1 modules, pdata, component, ..., a version of their own).
RELEASE_MODULES = ("go.opentelemetry.io/collector/",
                   "github.com/open-telemetry/opentelemetry-collector-contrib/")


def mixed_releases(modules, version):
    """The lines of MODULES ("<path> <version>" lines, as `go list -deps` prints them with
    MODULE_FORMAT) naming a v0 module of the Collector's releases at a version other than
    VERSION, once each."""
    bad = []
    for line in modules.splitlines():
        words = line.split()
        if (len(words) >= 2 and words[0].startswith(RELEASE_MODULES)
                and words[1].startswith("v0.") and words[1] != version and line not in bad):
            bad.append(line)
    return bad


# The module of each package `go list -deps` lists; the standard library's have none.
MODULE_FORMAT = "{{with .Module}}{{.Path}} {{.Version}}{{end}}"


# ---- building a Collector distribution, cached --------------------------------------------------


class Unavailable(Exception):
    """A build cannot be had here (no Go, the module proxy unreachable): the tests skip."""


class BuildError(Exception):
    """Building or finding a binary went wrong where it should have worked: the tests fail."""


def _go_env(gobin=None):
    env = dict(os.environ)
    # auto, not local: a distribution's go.mod may ask for a newer Go than the installed one,
    # which then comes through the module proxy like any module.
    env.setdefault("GOTOOLCHAIN", "auto")
    env.update(CGO_ENABLED="0", GOFLAGS="-mod=mod -buildvcs=false")
    if gobin:
        env["GOBIN"] = str(gobin)
    return env


def run_go(argv, what, cwd=None, timeout=BUILD_TIMEOUT, gobin=None):
    """Runs a go command ARGV that builds WHAT ("Jaeger"); raises Unavailable without Go,
    BuildError when it does not finish within TIMEOUT."""
    try:
        return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                              env=_go_env(gobin))
    except FileNotFoundError:
        raise Unavailable(f"'{argv[0]}' is not installed; Go is needed to build {what}") from None
    except subprocess.TimeoutExpired:
        raise BuildError(f"'{' '.join(map(str, argv))}' did not finish within {timeout} s") \
            from None


def module_source(module, version, dest, what):
    """A writable copy of MODULE@VERSION's source at DEST (replacing what was there), for a
    build as the main module: `go install pkg@version` refuses modules with replace or exclude
    directives, and the module cache is read-only, while the build writes go.sum. Raises
    Unavailable when the Go module proxy does not give it."""
    res = run_go(["go", "mod", "download", "-json", f"{module}@{version}"], what, timeout=600)
    if res.returncode != 0:
        raise Unavailable(f"cannot download {module}@{version} through the Go module proxy: "
                          f"{res.stdout.strip()} {res.stderr.strip()}")
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(json.loads(res.stdout)["Dir"], dest)
    for d, _, files in os.walk(dest):
        os.chmod(d, 0o755)
        for f in files:
            os.chmod(os.path.join(d, f), 0o644)
    return dest


def executable(path):
    return path.is_file() and os.access(path, os.X_OK)


def cached_build(dest, build):
    """DEST, made by BUILD() when it is not there yet. One build at a time; whoever else wants
    the same binary waits for it."""
    if executable(dest):
        return dest
    home = dest.parent
    home.mkdir(parents=True, exist_ok=True)
    with open(home / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not executable(dest):
            build()
    return dest


def built(make):
    """A binary fixture's value: what MAKE() returns; skips the tests when the binary cannot be
    had here (Unavailable), fails them when its build went wrong (BuildError)."""
    try:
        return make()
    except Unavailable as e:
        pytest.skip(str(e))
    except BuildError as e:
        pytest.fail(str(e))


def collector_binary(version=COLLECTOR_VERSION):
    """The path of a Collector binary of VERSION, building and caching it when missing; raises
    Unavailable or BuildError."""
    if os.environ.get("GOSPAN_OTELCOL_BIN"):
        path = Path(os.environ["GOSPAN_OTELCOL_BIN"])
        if not os.access(path, os.X_OK):
            raise BuildError(f"GOSPAN_OTELCOL_BIN='{path}' is not an executable")
        return path
    home = cache_dir("GOSPAN_OTELCOL_CACHE") / f"otelcol-{version}-{manifest_hash(version)}"

    def build():
        t0 = time.monotonic()
        tools, src = home / "tools", home / "src"
        shutil.rmtree(src, ignore_errors=True)
        res = run_go(["go", "install", f"{BUILDER_MODULE}@{version}"], "the Collector",
                     gobin=tools, timeout=600)
        if res.returncode != 0:
            raise Unavailable(f"cannot install {BUILDER_MODULE}@{version} through the Go module "
                              f"proxy:\n{res.stderr[-2000:]}")
        manifest_file = home / "manifest.yaml"
        manifest_file.write_text(manifest(version, src))
        # Generates the sources and go.mod; its own tidy may fail on test-only imports (above).
        gen = run_go([str(tools / "builder"), "--config", str(manifest_file), "--skip-compilation"],
                     "the Collector")
        if not (src / "go.mod").exists() or not (src / "main.go").exists():
            raise BuildError(f"the Collector builder generated no sources in '{src}':\n"
                             f"{gen.stderr[-4000:]}")
        res = run_go(["go", "mod", "tidy", "-e"], "the Collector", cwd=src)
        if res.returncode != 0:
            raise BuildError(f"'go mod tidy -e' failed for the Collector {version}:\n"
                             f"{res.stderr[-4000:]}")
        # The modules of the packages built, not the whole module graph (`go list -m all`):
        # the graph also holds modules no built package comes from, such as the
        # pkg/pdatautil v0.157.0 that prometheus/prometheus requires for code of its own the
        # prometheus receiver does not import (and pdatautil has no v0.162.0 to align to).
        res = run_go(["go", "list", "-deps", "-f", MODULE_FORMAT, "."], "the Collector",
                     cwd=src)
        if res.returncode != 0:
            raise BuildError(f"'go list -deps' failed for the Collector {version}:\n"
                             f"{res.stderr[-4000:]}")
        mixed = mixed_releases(res.stdout, version)
        if mixed:
            raise BuildError(f"the Collector {version}'s components resolved modules of other "
                             f"releases:\n" + "\n".join(mixed))
        tmp = home / "otelcol.partial"
        res = run_go(["go", "build", "-trimpath", "-ldflags=-s -w", "-o", str(tmp), "."],
                     "the Collector", cwd=src)
        if res.returncode != 0:
            raise BuildError(f"cannot build the Collector {version}:\n{res.stderr[-4000:]}")
        os.replace(tmp, home / "otelcol")
        shutil.rmtree(src, ignore_errors=True)
        shutil.rmtree(tools, ignore_errors=True)
        (home / "build.log").write_text(
            f"built the Collector {version} (otlp and prometheus receivers; batch and "
            f"k8s_attributes processors; debug, otlp_http and file exporters) with "
            f"{BUILDER_MODULE} in "
            f"{time.monotonic() - t0:.0f} s\n")

    return cached_build(home / "otelcol", build)


CONFIG = """\
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:{otlp_port}
{scrape}exporters:
  file:
    path: {path}
    flush_interval: 100ms
  file/metrics:
    path: {metrics_path}
    format: proto
    flush_interval: 100ms
  debug:
    verbosity: basic
service:
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [file, debug]
    metrics:
      receivers: [{metrics_receivers}]
      exporters: [file/metrics, debug]
  telemetry:
    metrics:
      level: none
    logs:
      level: info
"""

# The job the prometheus receiver scrapes under: the scraped resource's service.name.
SCRAPE_JOB = "scrape"

# The timeout is the interval: Prometheus refuses a longer one.
PROMETHEUS_RECEIVER = """\
  prometheus:
    config:
      scrape_configs:
        - job_name: {job}
          scrape_interval: {interval}
          scrape_timeout: {interval}
          metrics_path: /metrics
          # The target's job and instance labels win over the scrape's: each process gospan
          # serves is a resource of its own, not all of them the one target.
          honor_labels: true
          static_configs:
            - targets: ["{target}"]
"""


class Distribution:
    """A running Collector distribution: BINARY with the configuration CONFIG (written to
    WORKDIR/<NAME>.yaml), OTLP/HTTP in at `otlp_endpoint`; started once ready() says it is ready,
    within READY_TIMEOUT. A subclass names it (NAME, and WHAT in messages) and says when it is
    ready."""

    NAME = "otelcol"
    WHAT = "the Collector"

    def __init__(self, binary, workdir, config, otlp_port):
        self.otlp_endpoint = f"http://127.0.0.1:{otlp_port}"
        self.otlp_url = f"{self.otlp_endpoint}/v1/traces"
        path = Path(workdir) / f"{self.NAME}.yaml"
        path.write_text(config)
        env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
        self.proc = subprocess.Popen([str(binary), "--config", f"file:{path}"], env=env,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.out = _LineReader(self.proc.stdout)
        self.err = _LineReader(self.proc.stderr)
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def log(self):
        return (f"--- {self.NAME} stderr ---\n{self.err.text}\n"
                f"--- {self.NAME} stdout ---\n{self.out.text}")

    def ready(self):
        raise NotImplementedError

    def _wait_ready(self):
        deadline = time.monotonic() + READY_TIMEOUT
        while True:
            if self.proc.poll() is not None:
                self.out.join()
                self.err.join()
                raise AssertionError(f"{self.WHAT} exited with status {self.proc.returncode} "
                                     f"before it was ready\n{self.log()}")
            if self.ready():
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.WHAT} was not ready within {READY_TIMEOUT:.0f} s\n"
                                     f"{self.log()}")
            time.sleep(0.1)

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        end_process(self.proc, (self.out, self.err), timeout=STOP_TIMEOUT)
        return self.proc.returncode


class Collector(Distribution):
    """A running Collector: OTLP/HTTP in at `otlp_endpoint` (traces and metrics); every traces
    batch one OTLP JSON line in `output`, every metrics batch one length-prefixed protobuf
    message in `metrics_output` (the file exporter's proto format: 4 bytes of big-endian length,
    then the MetricsData, which is an ExportMetricsServiceRequest on the wire). With SCRAPE
    ("host:port"), the prometheus receiver also scrapes http://SCRAPE/metrics every
    SCRAPE_INTERVAL (a Prometheus duration) as job SCRAPE_JOB, into the same metrics pipeline.
    Scraping starts about 5 s after the Collector does (Prometheus's discovery manager hands
    targets over on a 5 s tick). What it forwards: one resource per target (service.name the
    job, service.instance.id "host:port", target_info's labels as attributes), `up` and the
    scrape_* gauges, and the target's families under their exposed names (`_total` kept),
    histograms with per-bucket counts; start times are 0 unless the target exposes `_created`
    (this receiver release leaves start-time adjustment to the metricstarttime processor)."""

    def __init__(self, binary, workdir, otlp_port, scrape=None, scrape_interval="1s"):
        self.output = Path(workdir) / "traces.jsonl"
        self.metrics_output = Path(workdir) / "metrics.pb"
        receivers = ["otlp"]
        prometheus = ""
        if scrape:
            receivers.append("prometheus")
            prometheus = PROMETHEUS_RECEIVER.format(job=SCRAPE_JOB, interval=scrape_interval,
                                                    target=scrape)
        self.scrape = scrape
        self.otlp_metrics_url = f"http://127.0.0.1:{otlp_port}/v1/metrics"
        super().__init__(binary, workdir, CONFIG.format(
            otlp_port=otlp_port, path=self.output, metrics_path=self.metrics_output,
            scrape=prometheus, metrics_receivers=", ".join(receivers)), otlp_port)

    def ready(self):
        """When an empty export is answered 200 for traces and for metrics: the receiver and
        both pipelines are up."""
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        for url in (self.otlp_url, self.otlp_metrics_url):
            try:
                req = urllib.request.Request(url, data=b"", method="POST",
                                             headers={"Content-Type": "application/x-protobuf"})
                with opener.open(req, timeout=2.0) as resp:
                    if resp.status != 200:
                        return False
            except (OSError, urllib.error.HTTPError):
                return False
        return True

    def spans(self):
        """Every span the file exporter has written so far."""
        try:
            text = self.output.read_text()
        except FileNotFoundError:
            return []
        got = []
        # The last piece is a line still being written (or empty): the next read has it whole.
        for line in text.split("\n")[:-1]:
            if line.strip():
                got.extend(spans_of_json(json.loads(line)))
        return got

    def wait_for_spans(self, n, timeout):
        """Waits until at least N spans were written; returns them all."""
        deadline = time.monotonic() + timeout
        while True:
            got = self.spans()
            if len(got) >= n or time.monotonic() > deadline:
                return got
            time.sleep(0.1)

    def metrics_requests(self):
        """Every metrics batch the file exporter has written so far, in order, each an
        ExportMetricsServiceRequest decoded by opentelemetry-proto (skips the test without it)."""
        try:
            data = self.metrics_output.read_bytes()
        except FileNotFoundError:
            return []
        return metrics_requests_of(data)

    def resource_metrics(self):
        """The ResourceMetrics of every batch written so far, in order."""
        return [rm for req in self.metrics_requests() for rm in req.resource_metrics]

    def metric_points(self, name=None):
        """Every data point written so far (of the metric NAME only, when given), in order, as
        MetricPoint."""
        return [p for req in self.metrics_requests() for p in metric_points_of(req)
                if name is None or p.name == name]

    def wait_for_points(self, until, timeout, name=None):
        """Waits until UNTIL(points) holds for metric_points(NAME), or TIMEOUT seconds passed;
        returns those points either way."""
        deadline = time.monotonic() + timeout
        while True:
            got = self.metric_points(name)
            if until(got) or time.monotonic() > deadline:
                return got
            time.sleep(0.1)


# ---- reading the file exporter's protobuf metrics ----------------------------------------------


def metrics_pb():
    """opentelemetry-proto's metrics_service_pb2; the test skips without the package."""
    return pytest.importorskip("opentelemetry.proto.collector.metrics.v1.metrics_service_pb2",
                               reason="opentelemetry-proto is not installed")


def metrics_requests_of(data):
    """The ExportMetricsServiceRequests in DATA, the bytes of a file exporter's proto output:
    each message preceded by its length in 4 big-endian bytes. A message cut short at the end
    is one still being written: the next read has it whole."""
    pb = metrics_pb()
    got, at = [], 0
    while at + 4 <= len(data):
        size = int.from_bytes(data[at:at + 4], "big")
        if at + 4 + size > len(data):
            break
        req = pb.ExportMetricsServiceRequest()
        req.ParseFromString(data[at + 4:at + 4 + size])
        got.append(req)
        at += 4 + size
    return got


@dataclass
class MetricPoint:
    """One data point of a decoded metric, with what it belongs to. KIND is the Metric's data
    oneof: "sum", "gauge", "histogram", "exponential_histogram" or "summary"; POINT the
    opentelemetry-proto data point (NumberDataPoint, HistogramDataPoint, ...), METRIC the
    Metric it is in (for temporality, monotonicity, description)."""

    name: str
    unit: str
    kind: str
    attrs: dict
    resource: dict
    scope_name: str
    scope_version: str
    point: object = field(repr=False)
    metric: object = field(repr=False)

    @property
    def value(self):
        """A number point's value (as_int or as_double, whichever is set)."""
        return getattr(self.point, self.point.WhichOneof("value"))


def metric_points_of(req):
    """Every data point of a decoded ExportMetricsServiceRequest (or MetricsData), in order."""
    got = []
    for rm in req.resource_metrics:
        res = attributes(rm.resource.attributes)
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                kind = m.WhichOneof("data")
                if kind is None:
                    continue
                for p in getattr(m, kind).data_points:
                    got.append(MetricPoint(
                        name=m.name, unit=m.unit, kind=kind, attrs=attributes(p.attributes),
                        resource=res, scope_name=sm.scope.name, scope_version=sm.scope.version,
                        point=p, metric=m))
    return got


# ---- reading the OTLP JSON encoding (ids in hex, 64-bit integers as strings) -------------------


def json_any_value(v):
    if "stringValue" in v:
        return v["stringValue"]
    if "boolValue" in v:
        return bool(v["boolValue"])
    if "intValue" in v:
        return int(v["intValue"])
    if "doubleValue" in v:
        return float(v["doubleValue"])
    if "bytesValue" in v:
        return v["bytesValue"]
    if "arrayValue" in v:
        return [json_any_value(x) for x in v["arrayValue"].get("values") or []]
    if "kvlistValue" in v:
        return json_attributes(v["kvlistValue"].get("values") or [])
    return None


def json_attributes(kvs):
    return {kv["key"]: json_any_value(kv.get("value") or {}) for kv in kvs or []}


def spans_of_json(doc):
    """The spans of one OTLP JSON TracesData document, as conftest.ReceivedSpan."""
    got = []
    for rs in doc.get("resourceSpans") or []:
        res = json_attributes((rs.get("resource") or {}).get("attributes"))
        for ss in rs.get("scopeSpans") or []:
            scope = ss.get("scope") or {}
            for s in ss.get("spans") or []:
                status = s.get("status") or {}
                got.append(ReceivedSpan(
                    name=s.get("name", ""), kind=int(s.get("kind", 0)),
                    trace_id=bytes.fromhex(s.get("traceId", "")),
                    span_id=bytes.fromhex(s.get("spanId", "")),
                    parent_span_id=bytes.fromhex(s.get("parentSpanId", "")),
                    start_ns=int(s.get("startTimeUnixNano", 0)),
                    end_ns=int(s.get("endTimeUnixNano", 0)),
                    attrs=json_attributes(s.get("attributes")),
                    status_code=int(status.get("code", 0)),
                    status_message=status.get("message", ""), resource=res,
                    scope_name=scope.get("name", ""), scope_version=scope.get("version", ""),
                    proto=s))
    return got


# ---- fixtures ---------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def collector_bin(bpf_ready):
    return built(collector_binary)


def running(cls, binary, ports, free_port, tmp_path_factory):
    """A module fixture's body: yields CLS (a Distribution) run from BINARY in a directory of
    its own, on PORTS free ports (its __init__'s), stopped afterwards."""
    d = cls(binary, tmp_path_factory.mktemp(cls.NAME), *(free_port() for _ in range(ports)))
    yield d
    d.stop()


@pytest.fixture(scope="module")
def collector(collector_bin, free_port, tmp_path_factory):
    yield from running(Collector, collector_bin, 1, free_port, tmp_path_factory)


@pytest.fixture
def start_collector(collector_bin, free_port, tmp_path):
    """Returns start(scrape=None, scrape_interval="1s"): a Collector of the test's own (see
    Collector), in a directory of its own; all are stopped at the end of the test."""
    started = []

    def start(scrape=None, scrape_interval="1s"):
        workdir = tmp_path / f"otelcol-{len(started)}"
        workdir.mkdir()
        c = Collector(collector_bin, workdir, free_port(), scrape=scrape,
                      scrape_interval=scrape_interval)
        started.append(c)
        return c

    yield start
    for c in started:
        c.stop()
