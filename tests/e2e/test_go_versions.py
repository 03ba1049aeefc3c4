"""Every Go release the offset tables cover, traced for real: a service built with one toolchain
per minor release (and both ends of a minor where an offset moved inside it), a few requests,
and the spans checked. This is what proves a table range on a live binary rather than in JSON.

Toolchains come from the Go module proxy (golang.org/toolchain), cached in the module cache.
Services built with Go 1.22 and later use examples/httpserver (method and wildcard patterns,
so http.route is checked); older ones use tests/e2e/legacyserver.
"""

import json
import os
import subprocess
import urllib.request
from pathlib import Path

import pytest

from conftest import REPO, STATUS_ERROR, STATUS_UNSET, Service, _clean_env

VERSIONS = [
    "1.17.13", "1.18.10", "1.19.13", "1.20.14", "1.21.13", "1.22.12", "1.23.12", "1.24.13",
    "1.25.14", "1.26.0", "1.26.11", "1.27.4",
]
LEGACY_SRC = REPO / "tests" / "e2e" / "legacyserver"
EXAMPLE_SRC = REPO / "examples" / "httpserver"


def _go_env(version=None):
    env = dict(os.environ)
    # -buildvcs only exists from Go 1.18 on; 1.17 refuses to start with it in GOFLAGS.
    flags = "-mod=mod" if version and parse(version) < (1, 18, 0) else "-mod=mod -buildvcs=false"
    env.update(GOTOOLCHAIN="local", CGO_ENABLED="0", GOFLAGS=flags)
    env.pop("GOROOT", None)
    return env


def toolchain(version):
    """The go command of release VERSION, downloaded from the module proxy once and cached."""
    mod = f"golang.org/toolchain@v0.0.1-go{version}.linux-amd64"
    res = subprocess.run(["go", "mod", "download", "-json", mod], capture_output=True, text=True,
                         timeout=600, env=_go_env(), cwd="/")
    if res.returncode != 0:
        pytest.fail(f"cannot download Go {version} ({mod}):\n{res.stdout}\n{res.stderr}")
    go = Path(json.loads(res.stdout)["Dir"]) / "bin" / "go"
    if not os.access(go, os.X_OK):
        pytest.fail(f"'{go}' is not executable")
    return go


def parse(v):
    return tuple(int(x) for x in v.split("."))


@pytest.fixture(scope="module")
def receiver(otlp_receiver):
    return otlp_receiver


@pytest.mark.parametrize("version", VERSIONS)
def test_go_version_is_traced(version, build_dir, start_gospan, receiver, bpf_ready):
    modern = parse(version) >= (1, 22, 0)
    src = EXAMPLE_SRC if modern else LEGACY_SRC
    out = build_dir / "e2e" / f"server-go{version}"
    out.parent.mkdir(parents=True, exist_ok=True)
    go = toolchain(version)
    res = subprocess.run([str(go), "build", "-o", str(out), "."], cwd=src, capture_output=True,
                         text=True, timeout=600, env=_go_env(version))
    assert res.returncode == 0, f"go{version} build failed:\n{res.stderr}"

    svc = Service(out, env=_clean_env())
    try:
        before = len(receiver.snapshot())
        g = start_gospan(svc.pid, receiver)
        attached = g.wait_attached()
        assert f"go{version}" in attached, attached

        slow = "/slow?ms=30" if modern else "/slow"
        requests = [("GET", "/users/1", None, 200), ("POST", "/users/", b"hello", 201),
                    ("GET", "/fail", None, 500), ("GET", slow, None, 200)]
        if modern:
            requests[1] = ("POST", "/users", b"hello", 201)
        for method, path, body, want in requests:
            req = urllib.request.Request(svc.base_url + path, data=body, method=method)
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

    spans = [s for s in receiver.snapshot()[before:] if s.resource.get("process.pid") == svc.pid]
    assert len(spans) == 4, f"go{version}: {len(spans)} spans\n{g.stderr}"
    by_path = {s.attrs["url.path"]: s for s in spans}

    user = by_path["/users/1"]
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

    post = by_path["/users" if modern else "/users/"]
    assert post.attrs["http.request.method"] == "POST"
    assert post.attrs["http.response.status_code"] == 201
    assert post.attrs["http.request.body.size"] == 5

    fail = by_path["/fail"]
    assert fail.attrs["http.response.status_code"] == 500
    assert fail.status_code == STATUS_ERROR
    assert user.status_code == STATUS_UNSET

    slow_span = by_path["/slow"]
    assert slow_span.end_ns - slow_span.start_ns >= 30_000_000
