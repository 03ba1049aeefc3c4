"""Installable like a C tool: `make install` with PREFIX and DESTDIR, the systemd unit it installs,
and the static build (`make STATIC=1`), whose gospan carries libbpf, libelf, libdw, capstone,
protobuf-c and cJSON inside it and needs of the host only libc, zlib and libcurl.

The static gospan is the one under test when GOSPAN_BUILD is a static build (CI's first pass:
`make test STATIC=1`); otherwise it is built, or found up to date, in the static tree beside
the build under test (build/static for build/ or build/asan). Every test here installs it with
`make install STATIC=1 DESTDIR=<temporary> PREFIX=/usr` and looks at the installed copy.
"""

import json
import os
import re
import shutil
import subprocess
import time
import urllib.request

import pytest

from conftest import BUILD, REPO, Gospan, Service, _clean_env
from test_functions import build as build_functions

PREFIX = "/usr"
UNIT = "gospan@.service"
DOCDIR = f"{PREFIX}/share/doc/gospan"
INSTALLED = {
    f"{PREFIX}/bin/gospan": 0o755,
    f"{PREFIX}/lib/systemd/system/{UNIT}": 0o644,
    f"{DOCDIR}/README.md": 0o644,
    f"{DOCDIR}/COMPATIBILITY.md": 0o644,
    f"{DOCDIR}/docs/configuration.md": 0o644,
    f"{DOCDIR}/docs/troubleshooting.md": 0o644,
    f"{DOCDIR}/docs/functions.md": 0o644,
    f"{DOCDIR}/docs/datastores.md": 0o644,
    f"{DOCDIR}/docs/how-it-works.md": 0o644,
    f"{DOCDIR}/examples/systemd/README.md": 0o644,
    f"{DOCDIR}/examples/systemd/gospan.env": 0o644,
    f"{DOCDIR}/examples/systemd/functions.json": 0o644,
}
# What the static gospan may ask the dynamic loader for: libc (libm, libpthread, libdl and librt
# are parts of glibc, if the linker ever names them), zlib, libcurl.
ALLOWED_NEEDED = {"libc.so.6", "libz.so.1", "libcurl.so.4", "libm.so.6", "libpthread.so.0",
                  "libdl.so.2", "librt.so.1"}
REQUIRED_NEEDED = {"libc.so.6", "libz.so.1", "libcurl.so.4"}
# What it carries inside it, and must never load from the host.
BUILT_IN = ("libbpf", "libelf", "libdw", "libcapstone", "libprotobuf-c", "libcjson", "liblzma",
            "libbz2")
SPAN_KIND_INTERNAL = 1
SPAN_KIND_SERVER = 2
NOBODY = "65534"
SPAN_TIMEOUT = 15.0


def _make(*args, timeout=1800):
    """make in the repository, with none of an enclosing make's settings: under `make test
    SANITIZE=1`, MAKEFLAGS carries SANITIZE=1 and make exports SANITIZE=1 itself to what its
    recipes run (a variable set on its command line), either of which would make this a
    sanitized build."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "SANITIZE",
                        "STATIC", "BUILD", "OUTPUT")}
    res = subprocess.run(["make", "--no-print-directory", "-C", str(REPO), *args],
                         capture_output=True, text=True, timeout=timeout, env=env)
    assert res.returncode == 0, f"make {' '.join(args)} failed:\n{res.stdout}\n{res.stderr}"
    return res


def _build_root():
    """The BUILD directory the build under test came from: make puts the sanitized and the
    static builds in asan/ and static/ under it."""
    return BUILD.parent if BUILD.name in ("asan", "static") else BUILD


def _install(destdir):
    _make(f"BUILD={_build_root()}", "STATIC=1", "install", f"DESTDIR={destdir}",
          f"PREFIX={PREFIX}")


@pytest.fixture(scope="module")
def destdir(tmp_path_factory):
    d = tmp_path_factory.mktemp("destdir")
    _install(d)
    return d


@pytest.fixture(scope="module")
def installed_gospan(destdir):
    return destdir / PREFIX.lstrip("/") / "bin" / "gospan"


def _unit(destdir):
    return (destdir / PREFIX.lstrip("/") / "lib/systemd/system" / UNIT).read_text()


def _unit_values(text, key):
    return [line.split("=", 1)[1] for line in text.splitlines() if line.startswith(f"{key}=")]


# ---- make install -----------------------------------------------------------------------------


def test_install_puts_the_files_under_destdir_and_prefix(destdir):
    files = {"/" + str(p.relative_to(destdir)): p.stat().st_mode & 0o7777
             for p in destdir.rglob("*") if p.is_file()}
    for path, mode in INSTALLED.items():
        assert path in files, f"'{path}' is not installed; installed: {sorted(files)}"
        assert files[path] == mode, f"'{path}' has mode {files[path]:o}, not {mode:o}"
    outside = [p for p in files if not p.startswith(PREFIX + "/")]
    assert not outside, f"installed outside PREFIX={PREFIX}: {outside}"
    docs = [p for p in files if p.startswith(DOCDIR + "/")]
    assert all(files[p] == 0o644 for p in docs), {p: oct(files[p]) for p in docs}
    # The example functions file is one gospan accepts (the attach test below uses it).
    funcs = json.loads((destdir / DOCDIR.lstrip("/") / "examples/systemd/functions.json")
                       .read_text())
    assert funcs["functions"], funcs


def test_installed_docs_link_to_each_other(destdir):
    """The links of README and of the systemd example into docs/ lead to installed pages."""
    doc = destdir / DOCDIR.lstrip("/")
    for page in ("README.md", "examples/systemd/README.md"):
        links = set(re.findall(r"\]\(([^)#\s]*docs/[\w.-]+\.md)(?:#[^)]*)?\)",
                               (doc / page).read_text()))
        assert links, f"no link into docs/ in {page}"
        missing = sorted(link for link in links if not ((doc / page).parent / link).is_file())
        assert not missing, f"{page} links to pages not installed: {missing}"


def test_the_unit_names_the_installed_paths(destdir):
    unit = _unit(destdir)
    assert _unit_values(unit, "ExecStart") == [f"{PREFIX}/bin/gospan --exe %f"], unit
    assert _unit_values(unit, "Restart") == ["on-failure"], unit
    assert _unit_values(unit, "NoNewPrivileges") == ["yes"], unit
    assert "/usr/local" not in "\n".join(
        line for line in unit.splitlines() if not line.startswith("#")), unit
    doc = _unit_values(unit, "Documentation")[0]
    assert doc.startswith("file:") and (destdir / doc[len("file:"):].lstrip("/")).is_file(), doc
    assert _unit_values(unit, "AmbientCapabilities") == _unit_values(unit,
                                                                     "CapabilityBoundingSet")


def test_systemd_accepts_the_unit(destdir, installed_gospan, tmp_path):
    """systemd-analyze verify on an instance of the installed unit, whose ExecStart is pointed at
    the installed gospan under DESTDIR (verify checks that the command exists on this host)."""
    if not shutil.which("systemd-analyze"):
        pytest.skip("systemd-analyze (systemd) is not installed")
    unit = _unit(destdir).replace(f"ExecStart={PREFIX}/bin/gospan",
                                  f"ExecStart={installed_gospan}")
    instance = tmp_path / "gospan@usr-local-bin-checkout.service"
    instance.write_text(unit)
    res = subprocess.run(["systemd-analyze", "verify", str(instance)], capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0 and not res.stderr.strip(), res.stdout + res.stderr


def test_uninstall_removes_what_install_put(tmp_path):
    _install(tmp_path)
    _make(f"BUILD={_build_root()}", "STATIC=1", "uninstall", f"DESTDIR={tmp_path}",
          f"PREFIX={PREFIX}")
    left = [str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if not p.is_dir()]
    assert not left, left


# ---- the static build ---------------------------------------------------------------------------


def test_static_gospan_needs_only_libc_zlib_and_libcurl(installed_gospan):
    dyn = subprocess.run(["readelf", "-d", str(installed_gospan)], capture_output=True,
                         text=True, check=True, timeout=60).stdout
    needed = set(re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", dyn))
    assert REQUIRED_NEEDED <= needed <= ALLOWED_NEEDED, f"NEEDED: {sorted(needed)}"
    # ldd lists what the loader maps, libcurl's own libraries too (TLS, HTTP/2, IDN, ...): those
    # come with the host's libcurl package. Nothing else may be there.
    ldd = subprocess.run(["ldd", str(installed_gospan)], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    libcurl = re.search(r"libcurl\.so\.4 => (\S+)", ldd)
    assert libcurl, ldd
    curl_ldd = subprocess.run(["ldd", libcurl.group(1)], capture_output=True, text=True,
                              check=True, timeout=60).stdout
    names = lambda out: {m.group(1) for m in re.finditer(r"^\s*(\S+\.so[.\d]*) ", out, re.M)}
    loaded = names(ldd)
    extra = loaded - ALLOWED_NEEDED - names(curl_ldd) - {"linux-vdso.so.1"}
    assert not extra, f"ldd lists more than libc, zlib, libcurl and libcurl's own: {extra}\n{ldd}"
    built_in = [n for n in loaded if n.startswith(BUILT_IN)]
    assert not built_in, f"loaded from the host, though linked in: {built_in}\n{ldd}"
    print(f"static gospan: NEEDED {sorted(needed)}\n{ldd}")


def test_static_gospan_runs(installed_gospan):
    res = subprocess.run([str(installed_gospan), "--version"], capture_output=True, text=True,
                         timeout=30)
    assert res.returncode == 0 and re.fullmatch(r"gospan \d+\.\d+\.\d+\n", res.stdout), res
    res = subprocess.run([str(installed_gospan), "--help"], capture_output=True, text=True,
                         timeout=30)
    assert res.returncode == 0 and "--exe" in res.stdout, res


@pytest.fixture(scope="module")
def functions_bin(build_dir, go_version):
    """examples/functions, which the example functions file is written for."""
    return build_functions(build_dir, "functions")


def _caps(unit):
    """The unit's AmbientCapabilities as setpriv names them (cap_bpf -> bpf)."""
    caps = _unit_values(unit, "AmbientCapabilities")[0].split()
    assert caps and all(c.startswith("CAP_") for c in caps), caps
    return [c[len("CAP_"):].lower() for c in caps]


def test_gospan_run_as_the_unit_runs_it_traces_a_service(destdir, installed_gospan, functions_bin,
                                            otlp_receiver):
    """The installed static gospan, run as the unit runs it: not root, with exactly the unit's
    capabilities and no new privileges, `--exe` on the service's path, the installed example
    functions file; a service of root's that started first. Its SERVER span and its function
    span with the arguments the example file names arrive."""
    if not shutil.which("setpriv"):
        raise AssertionError("setpriv (util-linux) is needed to run gospan as the unit does")
    unit = _unit(destdir)
    spec = ",".join(["-all"] + [f"+{c}" for c in _caps(unit)])
    cmd = _unit_values(unit, "ExecStart")[0].replace(f"{PREFIX}/bin/gospan",
                                                     str(installed_gospan))
    argv = cmd.replace("%f", str(functions_bin)).split()
    env = _clean_env()
    env.update(OTEL_BSP_SCHEDULE_DELAY="200",
               OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=otlp_receiver.url,
               GOSPAN_FUNCTIONS_FILE=str(destdir / DOCDIR.lstrip("/") /
                                         "examples/systemd/functions.json"))
    svc = Service(functions_bin, env=_clean_env(), args=["-tick", "0"])
    g = Gospan(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                f"--inh-caps={spec}", f"--ambient-caps={spec}", f"--bounding-set={spec}",
                "--no-new-privs", *argv], env)
    try:
        attached = g.wait_attached()
        assert f"pid {svc.pid}" in attached, g.stderr
        with urllib.request.urlopen(f"{svc.base_url}/order?id=42&name=ada", timeout=10) as r:
            assert r.status == 200
        deadline = time.monotonic() + SPAN_TIMEOUT
        while time.monotonic() < deadline:
            spans = otlp_receiver.snapshot()
            server = [s for s in spans if s.kind == SPAN_KIND_SERVER
                      and s.attrs.get("url.path") == "/order"]
            order = [s for s in spans if s.name == "main.handleOrder"]
            if server and order:
                break
            time.sleep(0.1)
        assert len(server) == 1 and len(order) == 1, (spans, g.stderr)
        assert order[0].kind == SPAN_KIND_INTERNAL
        assert order[0].parent_span_id == server[0].span_id
        assert order[0].attrs["gospan.arg.o.ID"] == 42, order[0].attrs
        assert order[0].attrs["gospan.arg.o.Customer.Name"] == "ada", order[0].attrs
        assert order[0].attrs["gospan.arg.o.Express"] is True, order[0].attrs
        assert server[0].resource["process.pid"] == svc.pid
        assert g.stop() == 0, g.stderr
        assert not re.search(r"\b[A-Za-z]*Sanitizer\b", g.stderr), g.stderr
        assert svc.alive()
    finally:
        if g.proc.poll() is None:
            g.proc.kill()
            g.proc.wait(10)
        svc.stop()
