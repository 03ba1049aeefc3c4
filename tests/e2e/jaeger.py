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
"""

import fcntl
import json
import os
import shutil
import socket
import subprocess
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


def _run(argv, cwd=None, timeout=BUILD_TIMEOUT):
    try:
        return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                              env=_go_env())
    except FileNotFoundError:
        pytest.skip("Go is not installed; it is needed to build Jaeger")
    except subprocess.TimeoutExpired:
        pytest.fail(f"'{' '.join(argv)}' did not finish within {timeout} s")


def jaeger_binary(version=JAEGER_VERSION):
    """The path of a Jaeger v2 binary of VERSION, building and caching it when missing."""
    if os.environ.get("GOSPAN_JAEGER_BIN"):
        path = Path(os.environ["GOSPAN_JAEGER_BIN"])
        if not os.access(path, os.X_OK):
            pytest.fail(f"GOSPAN_JAEGER_BIN='{path}' is not an executable")
        return path
    home = cache_dir() / f"jaeger-{version}"
    dest = home / "jaeger"
    if os.access(dest, os.X_OK):
        return dest
    home.mkdir(parents=True, exist_ok=True)
    # One build at a time, whoever else wants the same version waits for it.
    with open(home / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.access(dest, os.X_OK):
            return dest
        res = _run(["go", "mod", "download", "-json", f"{JAEGER_MODULE}@{version}"], timeout=600)
        if res.returncode != 0:
            pytest.skip(f"cannot download {JAEGER_MODULE}@{version} through the Go module "
                        f"proxy: {res.stdout.strip()} {res.stderr.strip()}")
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
            pytest.fail(f"cannot build Jaeger {version} ({JAEGER_MODULE}/cmd/jaeger):\n"
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


class Jaeger:
    """A running Jaeger: OTLP/HTTP in at `otlp_endpoint`, the HTTP query API at `query_url`."""

    def __init__(self, binary, workdir, otlp_port, query_port, query_grpc_port):
        self.otlp_endpoint = f"http://127.0.0.1:{otlp_port}"
        self.otlp_url = f"{self.otlp_endpoint}/v1/traces"
        self.query_url = f"http://127.0.0.1:{query_port}"
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

    def find_traces(self, service, tags, limit=20):
        """Traces of SERVICE having a span with every tag in TAGS (a dict)."""
        got = self.get("/api/traces", service=service, tags=json.dumps(tags), limit=limit,
                       lookback="1h")
        return (got or {}).get("data") or []

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
    return jaeger_binary()


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
