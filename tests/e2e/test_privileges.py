"""Least privilege: gospan run as an unprivileged user (nobody) with only the capabilities the
README names, through setpriv (util-linux), traces a service that belongs to root.

The set depends on the kernel: CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE were enough for uprobes
until the fix for CVE-2025-38466, which reserves uprobe creation through perf_event_open to
CAP_SYS_ADMIN. So the test checks what must hold everywhere: with the four capabilities gospan
works; with the three it works or says exactly which capability is missing; with none it stops
with a message, never a crash."""

import shutil
import subprocess
import time
import urllib.request

import pytest

from conftest import Gospan, _clean_env

NOBODY = "65534"
BASE_CAPS = ["bpf", "perfmon", "sys_ptrace"]


def _setpriv(caps):
    spec = ",".join(["-all"] + [f"+{c}" for c in caps])
    return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
            f"--inh-caps={spec}", f"--ambient-caps={spec}", f"--bounding-set={spec}"]


@pytest.fixture(scope="module")
def setpriv():
    if not shutil.which("setpriv"):
        raise AssertionError("setpriv (util-linux) is needed for the least-privilege tests")


def _env(receiver):
    e = _clean_env()
    e["OTEL_BSP_SCHEDULE_DELAY"] = "200"
    e["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = receiver.url
    return e


def _traced_by(caps, gospan_bin, svc, receiver, path):
    g = Gospan(_setpriv(caps) + [str(gospan_bin), "--pid", str(svc.pid)], _env(receiver))
    try:
        deadline = time.monotonic() + 30
        while "gospan: attached" not in g.stderr and g.proc.poll() is None:
            assert time.monotonic() < deadline, g.stderr
            time.sleep(0.05)
        if g.proc.poll() is not None:
            return False, g
        with urllib.request.urlopen(svc.base_url + path, timeout=10) as r:
            assert r.status == 200
        assert g.stop() == 0, g.stderr
    finally:
        if g.proc.poll() is None:
            g.proc.kill()
            g.proc.wait(10)
    return True, g


def _spans(receiver, path):
    return [s for s in receiver.snapshot() if s.attrs.get("url.path") == path]


def test_capabilities_without_root_are_enough(setpriv, gospan_bin, start_service, otlp_receiver):
    svc = start_service()
    ok, g = _traced_by(BASE_CAPS + ["sys_admin"], gospan_bin, svc, otlp_receiver, "/users/cap-4")
    assert ok, f"gospan as nobody with {BASE_CAPS + ['sys_admin']} failed\n{g.stderr}"
    spans = _spans(otlp_receiver, "/users/cap-4")
    assert len(spans) == 1, g.stderr
    assert spans[0].resource["process.pid"] == svc.pid
    assert svc.alive()


def test_without_sys_admin_works_or_names_the_capability(setpriv, gospan_bin, start_service,
                                                         otlp_receiver):
    svc = start_service()
    ok, g = _traced_by(BASE_CAPS, gospan_bin, svc, otlp_receiver, "/users/cap-3")
    if ok:
        assert len(_spans(otlp_receiver, "/users/cap-3")) == 1, g.stderr
    else:
        assert g.proc.returncode == 1, g.stderr
        assert "only CAP_SYS_ADMIN create uprobes" in g.stderr, g.stderr
        assert "Traceback" not in g.stderr and "Sanitizer" not in g.stderr
    assert svc.alive()


def test_no_capabilities_is_refused_with_a_message(setpriv, gospan_bin, start_service,
                                                   otlp_receiver):
    svc = start_service()
    ok, g = _traced_by([], gospan_bin, svc, otlp_receiver, "/users/cap-0")
    assert not ok, "gospan attached with no capabilities at all"
    assert g.proc.returncode == 1, g.stderr
    assert "Permission denied" in g.stderr or "Operation not permitted" in g.stderr, g.stderr
    assert svc.alive()
