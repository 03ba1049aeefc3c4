"""The fasthttp and Fiber release matrix of test_fasthttp_versions.py: which releases of fasthttp,
Fiber v2 and Fiber v3, which Go toolchains, the builds of tests/e2e/fasthttp (cached across
runs), and the fasthttp section of COMPATIBILITY.md.

A cell is (program, release, toolchain, flavour):

- program as fasthttp/build.sh names it: fasthttp (a plain fasthttp.Server), fiber2 (Fiber v2)
  or fiber3 (Fiber v3); a Fiber program gets the fasthttp release its Fiber release requires;
- release, of fasthttp or of Fiber: every minor's latest patch from the first release of the
  program's offset table (offsets/fasthttp_offsets.json, fiber2_..., fiber3_...) on, as the
  module proxy lists them, with the table's releases for the minors the list leaves out, and
  every release a row of the table starts or ends at (matrix.minor_releases);
- toolchain: "local" (the installed Go) or the oldest Go the release's go.mod allows among the
  releases test_go_versions.py builds with (router_matrix.oldest_go: Go 1.17 at least, which
  the services need); where that Go fails to build it, the next of those releases does (build()
  records why);
- flavour: plain, stripped or pie (matrix.FLAVOURS).

Builds are kept in <cache>/fasthttp-<hash of the services>/<program>-<release>-<go>-<flavour>/,
where <cache> is $GOSPAN_FASTHTTP_CACHE, else $XDG_CACHE_HOME/gospan, else ~/.cache/gospan.

Run as a program it lists the cells, `python3 tests/e2e/fasthttp_matrix.py [--full]`, or rewrites
the fasthttp section of COMPATIBILITY.md from the results a run saved:
`python3 tests/e2e/fasthttp_matrix.py --page build/e2e/fasthttp-versions-full.json ["a note"]`.
"""

import re
import subprocess
import sys
import time

import matrix
import router_matrix
from matrix import FLAVOURS, go_env, para, parse, shown_result, tally, toolchain_label
from router_matrix import first_error, oldest_go, toolchain_id

REPO = matrix.REPO
SERVICES = REPO / "tests" / "e2e" / "fasthttp"
BUILD_SH = SERVICES / "build.sh"
BUILD_TIMEOUT = 1800
FASTHTTP = "github.com/valyala/fasthttp"

# program -> (module, title, its offset table)
PROGRAMS = {
    "fasthttp": (FASTHTTP, "fasthttp", "fasthttp"),
    "fiber2": ("github.com/gofiber/fiber/v2", "Fiber v2", "fiber2"),
    "fiber3": ("github.com/gofiber/fiber/v3", "Fiber v3", "fiber3"),
}


def table_path(prog):
    return REPO / "offsets" / f"{PROGRAMS[prog][2]}_offsets.json"


def named(prog, release):
    """ "fasthttp v1.40.0", "Fiber v2.52.15"."""
    return f"{PROGRAMS[prog][1].split(' v')[0]} {release}"


# ---- cells --------------------------------------------------------------------------------------


def layouts(prog):
    """The releases at which the layout of PROG's offset table changes (matrix.layout_starts)."""
    return matrix.layout_starts(table_path(prog))


def releases(prog):
    return matrix.minor_releases(PROGRAMS[prog][0], table_path(prog))


_OLDEST = {}


def toolchains(prog, release):
    """The installed Go, and the oldest PROG RELEASE's go.mod allows where it is another."""
    if (prog, release) not in _OLDEST:
        want = parse(matrix.go_directive(PROGRAMS[prog][0], release) or "1.17")
        got = oldest_go(want)
        if not got:
            raise RuntimeError(f"{named(prog, release)} needs Go {'.'.join(map(str, want))}, "
                               f"newer than every release test_go_versions.py builds with")
        _OLDEST[prog, release] = got
    old = _OLDEST[prog, release]
    return ["local"] + ([old] if parse(matrix.go_version(old)) <
                        parse(matrix.go_version("local")) else [])


def full_cells():
    return [(p, v, tc, f) for p in PROGRAMS for v in releases(p)
            for tc in toolchains(p, v) for f in FLAVOURS]


def slice_cells():
    """The CI slice: for each program, the first release of every layout of its offset table
    (fasthttp: ten, from v1.40.0 to v1.77.0; Fiber v2: one; Fiber v3: v3.0.0, v3.3.0, v3.4.0,
    v3.5.0), stripped (no DWARF: the offsets are the table's), the first with the oldest Go it
    allows (fasthttp v1.40.0 with go1.17.13, whose writeResponse is inlined; Fiber v2.40.0 with
    Debian's Go 1.19, where ReleaseCtx is still called); then the newest release the table
    names (matrix.table_newest), plain, stripped and PIE, with the installed Go."""
    cells = []
    for p in PROGRAMS:
        starts = layouts(p)
        for v in starts:
            cells.append((p, v, toolchains(p, v)[-1] if v == starts[0] else "local",
                          "stripped"))
        newest = matrix.table_newest(table_path(p))
        cells += [(p, newest, "local", f) for f in FLAVOURS]
    return list(dict.fromkeys(cells))


def cell_id(cell):
    prog, release, toolchain, flavour = cell
    return f"{prog}-{release}-{toolchain_id(toolchain)}-{flavour}"


# ---- builds -------------------------------------------------------------------------------------

class BuildError(Exception):
    pass


# The cells build() built in this process (the rest came from the cache).
BUILT = []


def source_hash():
    """What the builds depend on in this tree: the services, what they share, the go.mod
    build.sh takes the module path from, build.sh and the script it runs (not fields/,
    sites.py and the notes beside them)."""
    h = matrix.source_hash(SERVICES / "internal", BUILD_SH, SERVICES / "go.mod",
                           REPO / "tests" / "e2e" / "mixbuild.sh",
                           *(SERVICES / p / "main.go" for p in PROGRAMS))
    return h


def linked(binary, module):
    """The release of MODULE BINARY links, from its build information (kept when stripped)."""
    res = subprocess.run(["go", "version", "-m", str(binary)], capture_output=True, text=True,
                         timeout=60, env=go_env(), cwd="/")
    m = re.search(rf"^\s*dep\s+{re.escape(module)}\s+(v\S+)", res.stdout, re.M)
    if not m:
        raise BuildError(f"{binary} links no {module}:\n{res.stdout}{res.stderr}")
    return m.group(1)


def build(cell):
    """(binary, its build's record) of CELL, built when missing. The record's "toolchain" is the
    Go that built it and "fasthttp" the fasthttp release it links: where the cell's own Go (not
    the installed one) fails, the next release of test_go_versions.VERSIONS is tried, or the
    oldest that a dependency's "requires go >= X" allows, up to three more; "refused" then
    lists [toolchain, why] of each that failed."""
    prog, release, toolchain, flavour = cell
    home = matrix.build_home("GOSPAN_FASTHTTP_CACHE", "fasthttp", source_hash())

    def make(tmp):
        used, refused, t0 = toolchain, [], time.monotonic()
        while True:
            res = subprocess.run([str(BUILD_SH), str(tmp / prog), used, prog, release, "--",
                                  *FLAVOURS[flavour][0]], capture_output=True, text=True,
                                 timeout=BUILD_TIMEOUT, env=go_env())
            if res.returncode == 0:
                break
            needs = re.search(r"requires go >= (1\.\d+(?:\.\d+)?)", res.stderr)
            after = None if used == "local" or len(refused) == 3 else oldest_go(
                parse(needs.group(1)) if needs else (0,), parse(matrix.go_version(used)))
            if not after:
                raise BuildError(f"{named(prog, release)} with {used} ({flavour}) did not "
                                 f"build:\n{res.stderr[-4000:]}")
            refused.append([toolchain_label(used),
                            needs.group(0) if needs else first_error(res.stderr)])
            used = after
        return {"program": prog, "release": release, "toolchain": toolchain_label(used),
                "fasthttp": linked(tmp / prog, FASTHTTP), "refused": refused,
                "flavour": flavour, "flags": FLAVOURS[flavour][0],
                "seconds": round(time.monotonic() - t0, 1)}

    dest, record, made = matrix.cached_build(home, cell_id(cell), make)
    if made:
        BUILT.append(cell)
    return dest / prog, record


# ---- the fasthttp section of COMPATIBILITY.md ---------------------------------------------------

BEGIN = "<!-- BEGIN fasthttp: written by tests/e2e/test_fasthttp_versions.py (make compat) -->"
END = "<!-- END fasthttp -->"
# A cell's fields in a row of the results a run saves (test_fasthttp_versions.py).
FIELDS = ("program", "release", "requested", "flavour")

# What makes cells fail, for the page: (program, first release, what gospan does wrong and why).
# Cells it explains are strict xfails: a gospan bug, not the framework's behaviour. The first run
# found one, Fiber v3.3.0 and later without routes (their request handler was split in two),
# fixed since in routers.c (fiber3_site).
FINDINGS = []



def finding(cell):
    """The text of FINDINGS that says why CELL fails, else None."""
    return next((text for p, v, text in FINDINGS
                 if cell[0] == p and parse(cell[1]) >= parse(v)), None)


SITES = [
    ("fasthttp server", "in the server loop (`(*Server).serveConn`, `serveConnCounted` from "
     "v1.78), the `CALL` that reads the request's body (`readLimitBody`, or `parseURI` before "
     "it from v1.69) starts the span, and the `CALL` of `writeResponse` (of "
     "`(*Response).Write` where writeResponse is inlined, v1.40 and v1.41) ends it."),
    ("fasthttp client", "in `(*HostClient).Do`, the `CALL` of `(*HostClient).do` and the first "
     "emulated instruction after it, once per attempt; the request's bytes at its `CALL` of "
     "`(*Request).Write`."),
    ("Fiber v2 and v3 routes", "the route the context holds when Fiber releases it (`CALL "
     "(*App).ReleaseCtx`, or Fiber v2's `deferwrap1` where Go 1.22 and later inline it); no "
     "route where the last matched route is a middleware's (404, 405)."),
]


def rewrite_section(text, page=matrix.PAGE):
    """Replaces the fasthttp section of PAGE with TEXT, or appends it; the rest of the page is
    kept as it is."""
    matrix.rewrite_section(text, BEGIN, END, page)


def page_text(results, cells, kernel=None, note=None):
    """The fasthttp section of COMPATIBILITY.md: RESULTS (cell -> what test_fasthttp_versions.py
    recorded) of CELLS, on KERNEL (this one's release without it); NOTE, when given, says how
    the run went."""
    fails = {}

    def rec(c):
        return results.get(c) or {}

    lines = ["## fasthttp and Fiber (fasthttp, Fiber v2, Fiber v3)", ""]
    lines += para(
        "Produced by `GOSPAN_COMPAT=1 pytest tests/e2e/test_fasthttp_versions.py`, which "
        "rewrites only this section; do not edit by hand. Each cell is one service of "
        "`tests/e2e/fasthttp` (a plain `fasthttp.Server`, Fiber v2 or Fiber v3) built against "
        "that release with that Go and flavour (`tests/e2e/fasthttp/build.sh`; a Fiber release "
        "with the fasthttp it requires, the *fasthttp* column), one gospan attached, and four "
        "requests, each with a traceparent of its own, checked as the official "
        "opentelemetry-proto decoder read their spans: exactly one SERVER span each, a child of "
        "the caller's span, with exactly the attributes net/http's span has; `GET /users/42` "
        "named `GET /users/:id` with that http.route (Fiber) or `GET` (fasthttp), status code "
        "200; `POST /fail/503` 503 and ERROR; `GET /nope` 404 with no http.route, named `GET`; "
        "`GET /call/1` also one CLIENT span (`fasthttp.Client` calling a local backend), a "
        "child of the SERVER span, whose id the backend got in its traceparent; nothing "
        "dropped. The attach line must say `fasthttp server + fasthttp client (fasthttp vX.Y.Z, "
        "offsets from ...; single-stepped hits: 0 a request served, 0 a call made)` for the "
        "fasthttp linked and, for Fiber, `fiber routes (vX.Y.Z, offsets from ...; "
        "single-stepped hits: 0 a request)` for the release built: \"verified (DWARF)\" means "
        "the struct offsets came from the binary, \"verified (table ...)\" from the row of "
        "`offsets/fasthttp_offsets.json` (and `fiber2_`, `fiber3_`) for that release (a "
        "stripped build must use it).")
    lines += [""] + para("Where gospan probes (every site a direct `CALL` or another "
                         "instruction the kernel emulates: no single-step):") + [""]
    lines += matrix.site_lines(SITES)
    lines += [""] + para(
        "Releases: every minor's latest patch from the first release each offset table covers "
        "(fasthttp v1.40.0, Fiber v2.40.0, Fiber v3.0.0) to the newest the table has (with the "
        "Go module proxy's releases where it lists a later patch), and every release a row of a "
        "table starts or ends at; fasthttp v1.75.0 is not served by the proxy. Each is built "
        "with the installed Go and with the oldest Go its go.mod allows (Go 1.17 at least) "
        "among the releases `test_go_versions.py` builds with (Debian's golang-1.19 for "
        "1.19.8, the others through the module proxy), plain, stripped (`-ldflags='-s -w'`) "
        "and PIE (`-buildmode=pie`). Where that Go does not build the release after all, the "
        "next of those releases that does builds the cell, and *notes* says why the older did "
        "not.")
    lines += matrix.run_lines(cells, results, kernel, note)

    lines += matrix.refused_lines(results, cells, lambda c: named(c[0], c[1]),
                                  lambda c: PROGRAMS[c[0]][0])

    def notes(c):
        return "; ".join(matrix.refused_notes(results, c))

    for prog in PROGRAMS:
        mine = [c for c in cells if c[0] == prog]
        if not mine:
            continue
        rs = sorted({c[1] for c in mine}, key=parse)
        lines += ["", f"### {PROGRAMS[prog][1]} (`{PROGRAMS[prog][0]}`): {rs[0]} to {rs[-1]}, "
                  f"{tally(mine, results)}", "",
                  "| release | fasthttp | Go | flavour | result | notes |",
                  "|---|---|---|---|---|---|"]
        for c in sorted(mine, key=lambda c: (parse(c[1]), c[2] == "local",
                                             list(FLAVOURS).index(c[3]))):
            go = rec(c).get("toolchain") or toolchain_label(c[2])
            fh = rec(c).get("fasthttp") or "?"
            lines.append(f"| {c[1]} | {fh if prog != 'fasthttp' else '-'} | {go} | {c[3]} | "
                         f"{shown_result(results, c, fails)} | {notes(c)} |")

    lines += matrix.slice_lines(
        "What CI runs (`make test`, `tests/e2e/fasthttp_matrix.py` lists them): the first "
        "release of every layout of each offset table, stripped, the oldest with the oldest Go "
        "it allows, and the newest release each table names with the installed Go, plain, "
        "stripped and "
        "PIE: ", [c for c in slice_cells() if c in cells], lambda c: named(c[0], c[1]))
    found = [(p, v, text) for p, v, text in FINDINGS
             if any(c[0] == p and parse(c[1]) >= parse(v) for c in fails)]
    if found:
        lines += ["", "Why cells fail:", ""]
        for _, _, text in found:
            lines += para(text, initial_indent="- ", subsequent_indent="  ")
    lines += matrix.failure_lines(fails, lambda c: named(c[0], c[1]))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(matrix.main(sys.argv[1:], sys.modules[__name__], FIELDS, cell_id))
