"""Route templates across router framework releases, Go toolchains and build flavours, traced
for real: the service of tests/e2e/routers for one framework, built for one cell
(router_matrix.py, cached), one gospan on it, five requests, and their spans checked as the
OTLP receiver decoded them:

- GET /users/42: one SERVER span named "GET /users/:id" (gin, Echo) or "GET /users/{id}" (chi,
  gorilla/mux), with that http.route;
- GET /orders/7/items/9: the route of the group (gin, Echo), mounted router (chi) or subrouter
  (gorilla/mux), its prefix included: /orders/:oid/items/:iid or /orders/{oid}/items/{iid};
- POST /fail/503: the route /fail/:code or /fail/{code}, status code 503, status ERROR;
- GET /nope (the framework's 404) and GET /fail/503 (its 405): no http.route, named "GET".

Every request carries a traceparent of its own, and its trace must hold exactly one span, a
child of the caller's, with the request's method, path and status. Where a release is known to
make gospan report otherwise (router_matrix.KNOWN: Echo v5 before v5.2.0 names its 405 after the
route whose method did not match), the cell expects that and records it. The attach line must
say "NAME routes (vX.Y.Z, offsets from DWARF|table vA.B.C; single-stepped hits: 0 a request)"
for the release built, with the offsets from DWARF in plain and PIE builds and from the table
row of the release in stripped ones; at exit nothing may be dropped or left in flight.

By default (make test, CI) this runs router_matrix.slice_cells(): a release of every row of
each framework's offset table, stripped, and the newest release of each, plain, stripped and
PIE; with GOSPAN_COMPAT=1 (make compat) every cell of router_matrix.full_cells() (and the
slice), and then rewrites the routers section of COMPATIBILITY.md. Every run writes its results,
cell by cell, to $GOSPAN_BUILD/e2e/router-versions-full.json (GOSPAN_COMPAT=1) or
router-versions-slice.json.
"""

import re

import pytest

import matrix
import router_matrix
from conftest import (BUILD, STATUS_ERROR, STATUS_UNSET, Service, _clean_env, traced_get,
                      wait_until)

# Two builds at a time: most of a build is its serial steps (go mod tidy, the link).
BUILD_JOBS = 2
# Cells traced at once: each its own service, gospan and traces, so they do not mix; two keep
# both CPUs busy while a gospan analyses its target or waits for the kernel at exit.
RUN_JOBS = 2
SPAN_SERVER = 2
SPAN_TIMEOUT = 15.0
ATTACH_PART = re.compile(r" \+ (gin|echo|chi|gorilla/mux|httprouter) routes \((v[0-9.]+), offsets "
                         r"from (DWARF|table v[0-9.]+|httprouter\.Param); single-stepped hits: "
                         r"(\d+|no probe for) a "
                         r"request\)")

# (method, path, status, route in chi's syntax or None where no route matched)
REQUESTS = [
    ("GET", "/users/42", 200, "/users/{id}"),
    ("GET", "/orders/7/items/9", 200, "/orders/{oid}/items/{iid}"),
    ("POST", "/fail/503", 503, "/fail/{code}"),
    ("GET", "/nope", 404, None),
    ("GET", "/fail/503", 405, None),
]

CASES = matrix.cases(router_matrix.full_cells, router_matrix.slice_cells)

# cell -> {"result", "toolchain", "source", "steps", "notes", "why"}; the full matrix's kept
# apart from the slice's.
RESULTS = matrix.Results("router-versions", router_matrix.FIELDS, BUILD, why_width=400)


def check_attach(cell, line, built_with):
    """What the attach LINE says of CELL's framework: (where its offsets came from, single-
    stepped hits a request)."""
    fw, release, _, flavour = cell
    where = router_matrix.cell_id(cell)
    assert f", {built_with.split()[0]}, " in line, f"{where}: not {built_with}:\n{line}"
    parts = ATTACH_PART.findall(line)
    assert len(parts) == 1, f"{where}: the attach line names {len(parts)} routers:\n{line}"
    name, version, source, steps = parts[0]
    assert name == router_matrix.FRAMEWORKS[fw][0], f"{where}: {name} routes:\n{line}"
    assert version == release, f"{where}: {name} {version} read, {release} built:\n{line}"
    if fw in router_matrix.NO_TABLE:
        want = router_matrix.NO_TABLE[fw][1]
        assert source == want, f"{where}: offsets from {source}, not {want}:\n{line}"
    elif flavour == "stripped":
        row = matrix.table_row_version(router_matrix.table_path(fw), release)
        assert source == f"table v{row}", f"{where}: offsets from {source}, not row {row}"
    else:
        assert source == "DWARF", f"{where}: offsets from {source}:\n{line}"
    return source, None if steps == "no probe for" else int(steps)


def traces(receiver, wanted, gospan, where):
    """{trace id: its spans} of the traces WANTED, (trace id, how many spans it must have)
    pairs, once each has them (and a moment more, for a stray one to show)."""
    def whole():
        got = {}
        for s in receiver.snapshot():
            got[s.trace_id] = got.get(s.trace_id, 0) + 1
        return all(got.get(tid, 0) >= n for tid, n in wanted)
    assert wait_until(whole, SPAN_TIMEOUT), (
        f"{where}: not every request's spans arrived within {SPAN_TIMEOUT:.0f} s\n"
        f"{gospan.stderr}")
    wait_until(lambda: False, 0.3)
    by_trace = {tid: [] for tid, _ in wanted}
    for s in receiver.snapshot():
        if s.trace_id in by_trace:
            by_trace[s.trace_id].append(s)
    return by_trace


def check_span(cell, request, spans, parent):
    """REQUEST's spans: exactly one SERVER span, a child of PARENT, as REQUEST should be named,
    routed and answered. Returns (request, the route) where router_matrix.KNOWN made it expect
    another route than the framework's own instrumentation reports, else None."""
    fw, release = cell[:2]
    method, path, status, route = request
    what = f"{router_matrix.cell_id(cell)}: {method} {path}"
    assert len(spans) == 1 and spans[0].kind == SPAN_SERVER, (
        f"{what}: {[(s.name, s.kind, s.attrs) for s in spans]}")
    s = spans[0]
    want = router_matrix.template(fw, route)
    known = router_matrix.known(fw, release, f"{method} {path}")
    if known:
        want = known[1]
    name = f"{method} {want}" if want else method
    assert (s.name, s.attrs.get("http.route")) == (name, want), (
        f"{what}: name {s.name!r}, http.route {s.attrs.get('http.route')!r}; want {name!r}, "
        f"{want!r}")
    assert s.parent_span_id == parent, f"{what}: parent {s.parent_span_id.hex()}"
    a = s.attrs
    assert (a.get("http.request.method"), a.get("url.path"), a.get("http.response.status_code")
            ) == (method, path, status), f"{what}: {a}"
    assert s.status_code == (STATUS_ERROR if status >= 500 else STATUS_UNSET), (
        f"{what}: status {s.status_code} {s.status_message!r}")
    return (f"{method} {path}", want) if known else None


def run_cell(cell, build, start_gospan, receiver):
    """Runs CELL once its build is done; raises what failed."""
    where = router_matrix.cell_id(cell)
    with RESULTS.record(cell) as rec:
        binary, built = build.result()
        built_with = rec["toolchain"] = built["toolchain"]
        rec["refused"] = built.get("refused", [])
        svc = Service(binary, env=_clean_env())
        try:
            g = start_gospan(svc.pid, receiver)
            line = g.wait_attached()
            source, steps = check_attach(cell, line, built_with)
            rec.update(source=source, steps=steps)
            sent = [traced_get(svc.port, p, status, f"{where}: {m} ", method=m)[:2]
                    for m, p, status, _ in REQUESTS]
            got = traces(receiver, [(tid, 1) for tid, _ in sent], g, where)
            g.stop_cleanly()
        finally:
            svc.stop()
        rec["notes"] = [n for n in (check_span(cell, r, got[tid], parent)
                                    for r, (tid, parent) in zip(REQUESTS, sent)) if n]
        summary = g.summary_line() or ""
        # every request a span: nothing dropped, nothing left in flight
        assert " dropped 0;" in summary and " in flight 0," in summary, f"{where}: {summary}"
        assert steps == 0, f"{where}: single-stepped probes on a request's path:\n{line}"
        rec["result"] = f"verified ({source})"


@pytest.fixture(scope="module")
def runs(request, bpf_ready, start_gospan, otlp_receiver):
    """cell -> future of run_cell(cell): every selected cell built (router_matrix.build) and run
    in order in the background, the builds ahead of the runs."""
    yield from matrix.built_and_run(
        router_matrix.build, lambda c, built: run_cell(c, built, start_gospan, otlp_receiver),
        matrix.selected_cells(request), BUILD_JOBS, RUN_JOBS)


@pytest.mark.parametrize("cell", CASES, ids=[router_matrix.cell_id(c) for c in CASES])
def test_router_version_is_traced(cell, runs):
    runs[cell].result()


@pytest.fixture(scope="module", autouse=True)
def _write_compatibility():
    yield from matrix.write_compatibility(router_matrix, RESULTS, CASES, "routers-*")
