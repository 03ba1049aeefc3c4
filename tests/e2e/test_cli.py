"""How a user starts gospan: --exe waiting for its first process, the OpenTelemetry Go
auto-instrumentation variables naming the target, the clear refusals of bad settings and
binaries gospan cannot trace; and how it stops: the termination signals taken by the main thread
only, a second one cutting a stuck final export short, a closed stdout not killing it."""

import os
import re
import shutil
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

from conftest import Gospan, Service, _LineReader, _clean_env
from test_backends import HANG, fault_receivers  # noqa: F401 - fixture


def _env(receiver, **extra):
    e = _clean_env()
    e["OTEL_BSP_SCHEDULE_DELAY"] = "200"
    e["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = receiver.url
    e.update(extra)
    return e


def _wait_for(g, text, timeout=15.0):
    """Until gospan has said TEXT (it loads its BPF programs first); fails if it exits."""
    deadline = time.monotonic() + timeout
    while text not in g.stderr:
        assert g.proc.poll() is None, g.stderr
        assert time.monotonic() < deadline, f"gospan did not say {text!r}\n{g.stderr}"
        time.sleep(0.05)


def _get(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        r.read()
        return r.status


def test_exe_waits_for_the_first_process(gospan_bin, example_bin, build_dir, otlp_receiver):
    # A private copy: --exe follows the file, and other tests run the shared one.
    exe = build_dir / "e2e" / "httpserver-exe"
    shutil.copy2(example_bin, exe)
    g = Gospan([str(gospan_bin), "--exe", str(exe)], _env(otlp_receiver))
    svc = None
    try:
        _wait_for(g, "waiting for a process running")
        assert "gospan: attached" not in g.stderr

        svc = Service(exe, env=_clean_env())
        line = g.wait_attached()
        assert f"pid {svc.pid}," in line and "'httpserver-exe'" in line, line
        before = len(otlp_receiver.snapshot())
        assert _get(svc.base_url + "/users/exe-1") == 200
        assert g.stop() == 0, g.stderr
    finally:
        if svc:
            svc.stop()
        if g.proc.poll() is None:
            g.proc.kill()
    spans = [s for s in otlp_receiver.snapshot()[before:]
             if s.attrs.get("url.path") == "/users/exe-1"]
    assert len(spans) == 1
    assert spans[0].resource["process.pid"] == svc.pid
    assert spans[0].resource["service.name"] == "httpserver-exe"


def test_exe_follows_restarts_and_forgets_exited_processes(gospan_bin, example_bin, build_dir,
                                                           otlp_receiver):
    """A service restarted again and again under --exe: the first request of each new process
    gets its span, with that process's pid, and gospan forgets each process that exited."""
    exe = build_dir / "e2e" / "httpserver-restarts"
    shutil.copy2(example_bin, exe)
    g = Gospan([str(gospan_bin), "--exe", str(exe)], _env(otlp_receiver, OTEL_LOG_LEVEL="debug"))
    pids = []
    try:
        for i in range(4):
            svc = Service(exe, env=_clean_env())
            pids.append(svc.pid)
            if i == 0:
                g.wait_attached()
            # At once: the probes sit on the file, so a new process is traced from its start.
            assert _get(svc.base_url + f"/users/restart-{i}") == 200
            svc.stop()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not all(
                f"process {pid} exited: forgotten" in g.stderr for pid in pids):
            time.sleep(0.2)
        assert g.proc.poll() is None, g.stderr
        assert g.stop() == 0, g.stderr
    finally:
        if g.proc.poll() is None:
            g.proc.kill()
    for pid in pids:
        assert f"process {pid} exited: forgotten" in g.stderr, (pid, g.stderr)
    got = {s.attrs.get("url.path"): s.resource["process.pid"] for s in otlp_receiver.snapshot()
           if str(s.attrs.get("url.path", "")).startswith("/users/restart-")}
    assert got == {f"/users/restart-{i}": pid for i, pid in enumerate(pids)}, got


def test_several_targets_at_once(gospan_bin, example_bin, build_dir, otlp_receiver):
    """--exe and --pid repeated: two processes of one binary (--exe) and a process of another
    binary (--pid), each span with its own process.pid and service.name. The --pid target
    exiting does not end gospan while an --exe target remains."""
    alpha = build_dir / "e2e" / "svc-alpha"
    beta = build_dir / "e2e" / "svc-beta"
    shutil.copy2(example_bin, alpha)
    shutil.copy2(example_bin, beta)
    procs = []
    g = None
    try:
        for name, exe in (("alpha", alpha), ("alpha", alpha), ("beta", beta)):
            procs.append(Service(exe, env={**_clean_env(), "OTEL_SERVICE_NAME": name}))
        b = procs[2]
        g = Gospan([str(gospan_bin), "--exe", str(alpha), "--pid", str(b.pid)],
                   _env(otlp_receiver))
        g.wait_attached()
        _wait_for(g, f"attached: pid {b.pid},")
        _wait_for(g, "executable 'svc-alpha'")
        assert g.stderr.count("gospan: attached") == 2, g.stderr
        for i, svc in enumerate(procs):
            assert _get(svc.base_url + f"/users/multi-{i}") == 200
        b.stop()
        _wait_for(g, f"target process {b.pid} exited")
        time.sleep(0.6)
        assert g.proc.poll() is None, f"gospan ended with an --exe target left\n{g.stderr}"
        assert _get(procs[0].base_url + "/users/multi-after") == 200
        assert g.stop() == 0, g.stderr
    finally:
        for svc in procs:
            svc.stop()
        if g and g.proc.poll() is None:
            g.proc.kill()
    got = {s.attrs.get("url.path"): (s.resource["process.pid"], s.resource["service.name"])
           for s in otlp_receiver.snapshot()
           if str(s.attrs.get("url.path", "")).startswith("/users/multi-")}
    want = {f"/users/multi-{i}": (svc.pid, name)
            for i, (svc, name) in enumerate(zip(procs, ("alpha", "alpha", "beta")))}
    want["/users/multi-after"] = (procs[0].pid, "alpha")
    assert got == want, got


def test_exe_in_another_mount_namespace(gospan_bin, example_bin, build_dir, otlp_receiver):
    """--exe with the path a container sees: the binary lives on a tmpfs mounted only in the
    service's own mount namespace, so the path does not exist where gospan runs."""
    if not shutil.which("unshare"):
        raise AssertionError("unshare (util-linux) is needed for this test")
    mnt = build_dir / "e2e" / "ctr-root"
    mnt.mkdir(exist_ok=True)
    inner = mnt / "svc"
    assert not inner.exists()
    script = (f"mount -t tmpfs gospan-test {mnt} && cp {example_bin} {inner} && "
              f"exec {inner} -addr 127.0.0.1:0")
    g = Gospan([str(gospan_bin), "--exe", str(inner)], _env(otlp_receiver))
    proc = None
    try:
        _wait_for(g, "not in this mount namespace")
        proc = subprocess.Popen(["unshare", "-m", "--propagation", "private", "sh", "-c", script],
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=_clean_env())
        out = _LineReader(proc.stdout, "listening on ")
        err = _LineReader(proc.stderr)
        assert out.matched.wait(15.0), f"the namespaced service did not start\n{err.text}"
        base = "http://" + out.match.split()[-1]
        line = g.wait_attached()
        assert f"pid {proc.pid}," in line and "'svc'" in line, line
        assert f"found '{inner}' in the mount namespace of process {proc.pid}" in g.stderr
        assert not inner.exists(), "the tmpfs leaked into gospan's mount namespace"
        before = len(otlp_receiver.snapshot())
        assert _get(base + "/users/ns-1") == 200
        assert g.stop() == 0, g.stderr
    finally:
        if proc and proc.poll() is None:
            proc.terminate()
            proc.wait(10)
        if g.proc.poll() is None:
            g.proc.kill()
    spans = [s for s in otlp_receiver.snapshot()[before:]
             if s.attrs.get("url.path") == "/users/ns-1"]
    assert len(spans) == 1, g.stderr
    assert spans[0].resource["process.pid"] == proc.pid
    assert spans[0].attrs.get("http.response.status_code") == 200


def test_target_and_service_name_from_the_environment(gospan_bin, start_service, otlp_receiver):
    # The target's own OTEL_SERVICE_NAME names the service when gospan has none.
    env = _clean_env()
    env["OTEL_SERVICE_NAME"] = "checkout"
    svc = start_service(env=env)
    g = Gospan([str(gospan_bin)],
               _env(otlp_receiver, OTEL_GO_AUTO_TARGET_PID=str(svc.pid),
                    OTEL_RESOURCE_ATTRIBUTES="deployment.environment=test,team=a%20b"))
    try:
        assert f"pid {svc.pid}," in g.wait_attached()
        before = len(otlp_receiver.snapshot())
        assert _get(svc.base_url + "/users/env-1") == 200
        assert g.stop() == 0, g.stderr
    finally:
        if g.proc.poll() is None:
            g.proc.kill()
    spans = [s for s in otlp_receiver.snapshot()[before:]
             if s.attrs.get("url.path") == "/users/env-1"]
    assert len(spans) == 1
    res = spans[0].resource
    assert res["service.name"] == "checkout"
    assert res["deployment.environment"] == "test"
    assert res["team"] == "a b"


def test_target_process_exit_ends_gospan(gospan_bin, start_service, otlp_receiver):
    svc = start_service()
    g = Gospan([str(gospan_bin), "--pid", str(svc.pid)], _env(otlp_receiver))
    try:
        g.wait_attached()
        svc.stop()
        g.proc.wait(10)
    finally:
        if g.proc.poll() is None:
            g.proc.kill()
    g.stop()
    assert g.returncode == 0, g.stderr
    assert f"target process {svc.pid} exited" in g.stderr
    assert g.summary_line() is not None


def _refusal(gospan_bin, args, env):
    res = subprocess.run([str(gospan_bin), *args], env={**_clean_env(), **env},
                         capture_output=True, text=True, timeout=60)
    assert res.returncode != 0, res.stderr
    assert "gospan: attached" not in res.stderr
    return res.stderr


def test_bad_settings_stop_gospan_at_start(gospan_bin, start_service):
    svc = start_service()
    pid = str(svc.pid)
    cases = [
        ({"OTEL_BSP_SCHEDULE_DELAY": "soon"}, "OTEL_BSP_SCHEDULE_DELAY 'soon'"),
        ({"OTEL_TRACES_EXPORTER": "zipkin"}, "OTEL_TRACES_EXPORTER 'zipkin'"),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "localhost:4318"}, "OTEL_EXPORTER_OTLP_ENDPOINT"),
        ({"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "OTEL_EXPORTER_OTLP_PROTOCOL 'grpc'"),
        ({"OTEL_BSP_MAX_QUEUE_SIZE": "-5"}, "OTEL_BSP_MAX_QUEUE_SIZE '-5'"),
    ]
    for env, want in cases:
        err = _refusal(gospan_bin, ["--pid", pid], env)
        assert want in err, err
    assert "--pid" in _refusal(gospan_bin, [], {})
    assert "unknown option '--pdi'" in _refusal(gospan_bin, ["--pdi", pid], {})
    assert "no such process" in _refusal(gospan_bin, ["--pid", "999999999"], {})
    assert svc.alive()


def test_binaries_gospan_cannot_trace_are_refused(gospan_bin, build_dir):
    # A C program: not Go.
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        err = _refusal(gospan_bin, ["--pid", str(sleeper.pid)], {})
        assert "not a Go binary" in err, err
    finally:
        sleeper.kill()
        sleeper.wait()


def test_exe_that_is_no_go_program_is_refused_at_once(gospan_bin, example_bin, tmp_path):
    """--exe naming a file here that gospan cannot trace is refused with the reason, not awaited
    for a process that would change nothing; a path not here is still awaited (a container's)."""
    truncated = tmp_path / "truncated"
    truncated.write_bytes(Path(example_bin).read_bytes()[:3_000_000])
    truncated.chmod(0o755)
    for exe, why in (("/bin/ls", "not a Go binary"), (str(truncated), "truncated")):
        t0 = time.monotonic()
        err = _refusal(gospan_bin, ["--exe", exe], {})
        assert why in err and "waiting for a process" not in err, err
        assert time.monotonic() - t0 < 10, err


# ---- signals ------------------------------------------------------------------------------------


def _blocked_signals(pid, tid):
    """The signals thread TID of process PID blocks (SigBlk in its status)."""
    with open(f"/proc/{pid}/task/{tid}/status") as f:
        for line in f:
            if line.startswith("SigBlk:"):
                mask = int(line.split()[1], 16)
                return {s for s in signal.Signals if mask >> (s - 1) & 1}
    raise AssertionError(f"no SigBlk in /proc/{pid}/task/{tid}/status")


def test_termination_signals_reach_the_main_thread_only(gospan_bin, start_service, otlp_receiver):
    """Every thread but the main one (the export thread, and the threads it starts, libcurl's
    resolver among them) blocks SIGINT and SIGTERM, so that the thread that stops gospan is the
    one that takes them, whatever it is doing."""
    svc = start_service()
    g = Gospan([str(gospan_bin), "--pid", str(svc.pid)], _env(otlp_receiver))
    try:
        g.wait_attached()
        assert _get(svc.base_url + "/users/mask-1") == 200
        assert otlp_receiver.wait_for_spans(1, 15.0), g.stderr  # the export thread has worked
        pid = g.proc.pid
        tids = sorted(int(t) for t in os.listdir(f"/proc/{pid}/task"))
        assert len(tids) >= 2, f"no export thread in {tids}"
        for tid in tids:
            blocked = _blocked_signals(pid, tid) & {signal.SIGINT, signal.SIGTERM}
            if tid == pid:
                assert not blocked, f"the main thread blocks {blocked}"
            else:
                assert blocked == {signal.SIGINT, signal.SIGTERM}, (
                    f"thread {tid} takes {({signal.SIGINT, signal.SIGTERM} - blocked)}")
        assert g.stop() == 0, g.stderr
    finally:
        if g.proc.poll() is None:
            g.proc.kill()


def test_second_signal_cuts_the_final_export_short(gospan_bin, start_service, fault_receivers):
    """SIGTERM with a collector that takes the request and never answers: gospan waits for it
    (OTEL_EXPORTER_OTLP_TIMEOUT, 10 s by default); a second SIGTERM a second later stops it at
    once, saying how many spans were not exported: the batch in the request and the two queued
    behind it."""
    rx = fault_receivers(lambda n: HANG)
    svc = start_service()
    g = Gospan([str(gospan_bin), "--pid", str(svc.pid)], _env(rx))
    try:
        g.wait_attached()
        assert _get(svc.base_url + "/users/cut-1") == 200
        assert rx.wait_attempts(1, 15.0), f"no export reached the receiver\n{g.stderr}"
        for i in (2, 3):
            assert _get(svc.base_url + f"/users/cut-{i}") == 200
        time.sleep(0.5)  # read from the ring buffer and queued behind the stuck batch
        g.proc.send_signal(signal.SIGTERM)
        time.sleep(1.0)
        assert g.proc.poll() is None, f"gospan did not wait for the collector\n{g.stderr}"
        t0 = time.monotonic()
        g.proc.send_signal(signal.SIGTERM)
        try:
            g.proc.wait(5.0)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"gospan still running 5 s after a second SIGTERM\n{g.stderr}")
        took = time.monotonic() - t0
    finally:
        if g.proc.poll() is None:
            g.proc.kill()
            g.proc.wait(10)
    g.err.join()
    assert took < 2.0, f"gospan took {took:.1f} s to stop after the second SIGTERM\n{g.stderr}"
    assert "gospan: second signal: stopping now, 3 spans not exported" in g.stderr, g.stderr
    assert g.proc.returncode == 1, g.stderr
    summary = g.summary_line()
    assert summary and re.search(r"dropped 3 \(not_flushed=3\)", summary), g.stderr


def test_closed_stdout_does_not_kill_gospan(gospan_bin, start_service):
    """OTEL_TRACES_EXPORTER=console with stdout a pipe whose reader went away (gospan | head):
    the write fails with EPIPE instead of killing gospan with SIGPIPE; gospan says so, counts the
    spans as not exported, and still stops cleanly."""
    svc = start_service()
    env = {**_clean_env(), "OTEL_TRACES_EXPORTER": "console", "OTEL_BSP_SCHEDULE_DELAY": "200"}
    proc = subprocess.Popen([str(gospan_bin), "--pid", str(svc.pid)], env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    err = _LineReader(proc.stderr, "gospan: attached")
    try:
        assert err.matched.wait(30.0), err.text
        proc.stdout.close()
        assert _get(svc.base_url + "/users/pipe-1") == 200
        deadline = time.monotonic() + 10.0
        while ("cannot write traces" not in err.text and proc.poll() is None
               and time.monotonic() < deadline):
            time.sleep(0.05)
        assert proc.poll() is None, (
            f"gospan died ({'SIGPIPE' if proc.returncode == -signal.SIGPIPE else proc.returncode})"
            f"\n{err.text}")
        proc.send_signal(signal.SIGTERM)
        proc.wait(30.0)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    err.join()
    assert proc.returncode == 0, err.text
    assert "gospan: cannot write traces to the console: Broken pipe" in err.text, err.text
    summary = [line for line in err.lines if line.startswith("gospan: summary")]
    assert summary and re.search(r"export_failed=1\b", summary[0]), err.text
    assert svc.alive()
