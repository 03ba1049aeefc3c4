"""`make demo` keeps working: examples/demo.sh is run as a user would, with a short load, and what
it prints is checked. With Jaeger it must show the frontend's traces read back from Jaeger as
trees, the backend's spans in those same traces (where no context can go out, in traces of
their own, saying why), both gospans' summaries with every span exported, a last word saying
every request is one trace across both services, and leave nothing running. Without Jaeger
(GOSPAN_DEMO_JAEGER=0) the gospans print the spans. On a terminal it keeps everything running
with the load going until Ctrl-C, which must stop it all the same way and exit 0.
"""

import os
import pty
import re
import select
import socket
import subprocess
import time


from conftest import BUILD, REPO
from jaeger import jaeger_bin  # noqa: F401 (fixture)
from test_distributed import NO_PROPAGATION

DEMO = REPO / "examples" / "demo.sh"
REQUESTS = 8  # two rounds of /direct, /spawn, /both, /backend-fail
BACKEND_CALLS = 10  # /both calls the backend twice, the others once
RUN_TIMEOUT = 300  # building the three Go programs the first time included
OPS = ("GET /direct/{id}", "GET /spawn/{id}", "GET /both/{id}", "GET /backend-fail")


def demo_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "GOSPAN_DEMO_"))}
    env.update(GOSPAN_BUILD=str(BUILD), GOSPAN_DEMO_REQUESTS=str(REQUESTS),
               GOSPAN_DEMO_INTERVAL="50ms", GOSPAN_DEMO_KEEP="0")
    env.update(extra)
    return env


def run_demo(env):
    """Runs the demo with stdout a pipe (not a terminal); its exit status and output."""
    res = subprocess.run([str(DEMO)], env=env, stdin=subprocess.DEVNULL, capture_output=True,
                         text=True, timeout=RUN_TIMEOUT)
    return res.returncode, res.stdout + res.stderr


def pids_started(out):
    """The pids the demo says it started: the services, the gospans, Jaeger's wrapper."""
    return [int(p) for p in re.findall(r"^demo: [\w ]+: pid (\d+)", out, re.M)]


def assert_all_stopped(out):
    pids = pids_started(out)
    assert len(pids) >= 4, out
    for pid in pids:
        assert not os.path.exists(f"/proc/{pid}"), f"pid {pid} still runs after the demo\n{out}"


def assert_summaries(out, fe_spans, be_spans):
    for svc, n in (("frontend", fe_spans), ("backend", be_spans)):
        m = re.search(rf"^demo: gospan on {svc}, exit status 0:\n\s+(gospan: summary: .*)$", out,
                      re.M)
        assert m, f"no summary of the gospan on {svc}:\n{out}"
        assert f"spans captured {n}, exported {n}, dropped 0;" in m.group(1), out


def check_traces(out):
    """The trees `jaeger.py show` printed, against what REQUESTS requests must give."""
    lines = out.splitlines()
    for op in OPS:
        i = next((i for i, line in enumerate(lines)
                  if re.match(rf"\s+frontend  server  {re.escape(op)}\s", line)), None)
        assert i is not None, f"no trace of frontend's '{op}' shown:\n{out}"
        assert lines[i - 1].lstrip().startswith("trace "), out
        # The client call is indented under the request that made it.
        root_indent = len(lines[i]) - len(lines[i].lstrip())
        child = lines[i + 1]
        assert child.lstrip().startswith("frontend  client  GET"), f"{op}:\n{out}"
        assert len(child) - len(child.lstrip()) > root_indent, f"{op}:\n{out}"
    assert re.search(r"frontend  server  GET /backend-fail\s+502 ERROR", out), out
    assert re.search(r"frontend  client  GET\s+500 ERROR\s.*/fail$", out, re.M), out
    m = re.search(r"traces in Jaeger: (\d+) with spans of frontend, (\d+) with spans of backend; "
                  r"(\d+) with spans of frontend and backend", out)
    assert m, out
    fe, be, both = map(int, m.groups())
    assert fe == REQUESTS, out
    if NO_PROPAGATION:
        assert (be, both) == (BACKEND_CALLS, 0), out
        assert "demo: the backend's spans start their own trace: gospan could not send " \
               "trace context" in out, out
        assert re.search(r"^\s+backend  server  GET /work/\{id\}\s+200 ", out, re.M), out
        assert re.search(r"^\s+backend  server  GET /fail\s+500 ERROR", out, re.M), out
    else:
        assert (be, both) == (REQUESTS, REQUESTS), out
        assert f"joined traces: {REQUESTS} of {REQUESTS} frontend traces are one trace" in out, out
        # The demo's last word, after the gospans' summaries.
        tail = out[out.rindex("gospan: summary"):]
        assert (f"demo: all {REQUESTS} frontend requests are one trace across both services, "
                f"read back from") in tail, out
        # The backend's span sits under the frontend's client span.
        assert re.search(r"^(\s+)frontend  client  GET .*\n\1  backend  server  GET /work/\{id\}",
                         out, re.M), out


def query_port_closed(out):
    m = re.search(r"query API http://127\.0\.0\.1:(\d+)", out)
    assert m, out
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", int(m.group(1)))) != 0


def test_demo_with_jaeger(gospan_bin, jaeger_bin):  # noqa: F811 (fixture)
    rc, out = run_demo(demo_env(GOSPAN_JAEGER_BIN=str(jaeger_bin)))
    assert rc == 0, out
    assert "demo: done" in out, out
    assert re.search(r"^demo: Jaeger: pid \d+, OTLP/HTTP receiver http://127\.0\.0\.1:\d+, "
                     r"query API http://127\.0\.0\.1:\d+$", out, re.M), out
    for svc in ("backend", "frontend"):
        assert re.search(rf"^\s+gospan: attached: pid \d+, executable '{svc}'", out, re.M), out
    assert (f"loadgen: {REQUESTS} requests: {REQUESTS * 3 // 4} 2xx, 0 4xx, {REQUESTS // 4} 5xx, "
            f"0 without answer") in out, out
    fe_spans = REQUESTS + BACKEND_CALLS
    assert (f"spans in Jaeger: frontend {fe_spans} of {fe_spans}, "
            f"backend {BACKEND_CALLS} of {BACKEND_CALLS}") in out, out
    check_traces(out)
    assert_summaries(out, fe_spans, BACKEND_CALLS)
    assert_all_stopped(out)
    assert query_port_closed(out), f"Jaeger still answers after the demo\n{out}"


def test_demo_without_jaeger_prints_spans(gospan_bin):
    rc, out = run_demo(demo_env(GOSPAN_DEMO_JAEGER="0"))
    assert rc == 0, out
    assert "demo: GOSPAN_DEMO_JAEGER=0: no Jaeger" in out, out
    assert "OTEL_TRACES_EXPORTER=console" in out, out
    for svc in ("backend", "frontend"):
        assert re.search(rf"^\s+gospan: attached: pid \d+, executable '{svc}'", out, re.M), out
    fe, be = out.split("demo: spans of frontend")[1].split("demo: spans of backend")
    for op in OPS:
        assert op in fe, out
    assert "GET /work/{id}" in be and "GET /fail" in be, out
    both = 0 if NO_PROPAGATION else REQUESTS
    be_traces = BACKEND_CALLS if NO_PROPAGATION else REQUESTS
    assert (f"demo: traces printed: {REQUESTS} with spans of frontend, {be_traces} with spans of "
            f"backend; {both} with spans of both") in out, out
    if not NO_PROPAGATION:
        assert (f"demo: all {REQUESTS} frontend requests are one trace across both services: "
                f"gospan put") in out, out
    assert_summaries(out, REQUESTS + BACKEND_CALLS, BACKEND_CALLS)
    assert_all_stopped(out)


class Terminal:
    """A program run on a pseudo-terminal of its own, as from a shell: Ctrl-C reaches it."""

    def __init__(self, argv, env):
        self.master, slave = pty.openpty()
        # setsid --ctty: a new session whose controlling terminal is the pty on stdin.
        self.proc = subprocess.Popen(["setsid", "--ctty", *argv], env=env, stdin=slave,
                                     stdout=slave, stderr=slave, close_fds=True)
        os.close(slave)
        self.text = ""

    def _read(self, timeout):
        """Adds what arrives within TIMEOUT seconds to self.text; False at the end of output."""
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return True
        try:
            data = os.read(self.master, 65536)
        except OSError:  # EIO: every holder of the terminal has closed it
            return False
        self.text += data.decode("utf-8", "replace").replace("\r\n", "\n")
        return bool(data)

    def read_until(self, pattern, timeout):
        """Reads output until PATTERN (a regular expression) is in it; False when the time is
        up or the output ended first."""
        deadline = time.monotonic() + timeout
        while not re.search(pattern, self.text, re.M):
            left = deadline - time.monotonic()
            if left <= 0 or not self._read(min(left, 0.5)):
                return bool(re.search(pattern, self.text, re.M))
        return True

    def read_to_end(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self._read(0.2):
            pass

    def ctrl_c(self):
        os.write(self.master, b"\x03")

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        os.close(self.master)


def test_demo_on_a_terminal_runs_until_ctrl_c(gospan_bin, jaeger_bin):  # noqa: F811 (fixture)
    term = Terminal([str(DEMO)], demo_env(GOSPAN_JAEGER_BIN=str(jaeger_bin),
                                          GOSPAN_DEMO_KEEP="1"))
    try:
        assert term.read_until(r"^demo: Ctrl-C to stop", RUN_TIMEOUT), term.text
        assert "demo: everything keeps running" in term.text, term.text
        assert re.search(r"^demo: Jaeger's query API: http://127\.0\.0\.1:\d+/api/services",
                         term.text, re.M), term.text
        assert ("no Jaeger UI" in term.text) or ("Jaeger's UI:" in term.text), term.text
        # The load goes on: loadgen sums up every 50 requests, one every 50 ms.
        assert term.read_until(r"^loadgen: last 50 requests: ", 30), term.text
        assert all(os.path.exists(f"/proc/{pid}") for pid in pids_started(term.text)), term.text
        term.ctrl_c()
        term.read_to_end(90)
        assert term.proc.wait(10) == 0, term.text
    finally:
        term.close()
    out = term.text
    for svc in ("frontend", "backend"):
        assert re.search(rf"^demo: gospan on {svc}, exit status 0:\n\s+gospan: summary: spans "
                         rf"captured (\d+), exported \1, dropped 0;", out, re.M), out
    assert_all_stopped(out)
    assert query_port_closed(out), f"Jaeger still answers after Ctrl-C\n{out}"
