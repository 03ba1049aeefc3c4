"""The router release matrix of test_router_versions.py: which releases of gin, Echo v4, Echo v5,
chi v5 and gorilla/mux, which Go toolchains, the builds of tests/e2e/routers (cached across runs),
what gospan is known to report otherwise than the framework's own instrumentation, and the
routers section of COMPATIBILITY.md.

A cell is (framework, release, toolchain, flavour):

- framework as routers/build.sh names it: gin, echo (v4), echo5, chi (v5), mux (gorilla/mux);
- release: every minor's latest patch from the first release of the framework's offset table
  (offsets/NAME_offsets.json) on, as the module proxy lists them, with the table's releases for
  the minors the list leaves out (retracted or never fetched: Echo v4.3, v5.0 to v5.2, ...),
  and every release a row of the table starts or ends at (matrix.minor_releases);
- toolchain: "local" (the installed Go) or the oldest Go the release's go.mod allows among the
  releases test_go_versions.py builds with (Go 1.17 at least, which the services need; fetched
  through the module proxy, "go1.X.Y", or Debian's 1.19.8 by its path); where that Go fails
  to build it, the next of those releases does (build() records why);
- flavour: plain, stripped or pie (matrix.FLAVOURS).

Builds are kept in <cache>/routers-<hash of tests/e2e/routers>/<framework>-<release>-<go>-
<flavour>/, where <cache> is $GOSPAN_ROUTERS_CACHE, else $XDG_CACHE_HOME/gospan, else
~/.cache/gospan, as the grpcmix and dbmix builds are.

Run as a program it lists the cells, `python3 tests/e2e/router_matrix.py [--full]`, or rewrites
the routers section of COMPATIBILITY.md from the results a run saved:
`python3 tests/e2e/router_matrix.py --page build/e2e/router-versions-full.json ["a note"]`.
"""

import re
import subprocess
import sys
import time

import matrix
from matrix import FLAVOURS, go_env, para, parse, shown_result, tally, toolchain_label
from test_go_versions import DEBIAN_GO as GO_DEBIAN
from test_go_versions import VERSIONS as GO_VERSIONS

REPO = matrix.REPO
ROUTERS = REPO / "tests" / "e2e" / "routers"
BUILD_SH = ROUTERS / "build.sh"
BUILD_TIMEOUT = 1800
# The oldest Go the services build with (routers/README.md).
OLDEST_GO = (1, 17)

# framework -> (its name in gospan's attach line and on the page, module, parameter syntax)
FRAMEWORKS = {
    "gin": ("gin", "github.com/gin-gonic/gin", ":"),
    "echo": ("echo", "github.com/labstack/echo/v4", ":"),
    "echo5": ("echo", "github.com/labstack/echo/v5", ":"),
    "chi": ("chi", "github.com/go-chi/chi/v5", "{}"),
    "mux": ("gorilla/mux", "github.com/gorilla/mux", "{}"),
    "httprouter": ("httprouter", "github.com/julienschmidt/httprouter", ":"),
}
TITLES = {"gin": "gin", "echo": "Echo v4", "echo5": "Echo v5", "chi": "chi v5",
          "mux": "gorilla/mux", "httprouter": "httprouter"}
# Frameworks gospan reads without an offset table (httprouter's Params are {Key, Value string}):
# their releases in range, and what the attach line names as the offsets' source.
NO_TABLE = {"httprouter": (["v1.3.0"], "httprouter.Param")}


def named(fw, release):
    """ "Echo v5.0.4", "gorilla/mux v1.8.1"."""
    return f"{TITLES[fw].split(' v')[0]} {release}"


def table_path(fw):
    return REPO / "offsets" / f"{fw}_offsets.json"


# What gospan reports otherwise than the framework's own instrumentation would, for a reason in
# the framework's release: (framework, first release, last release, request, the route gospan
# reports, why). A cell expects it, and records it.
KNOWN = [
    ("echo5", "v5.0.0", "v5.1.1", "GET /fail/503", "/fail/:code",
     "Echo v5 before v5.2.0 has no `handler` field in its Context, so gospan cannot tell Echo's "
     "own 405 handler from a route's: it reports the path Echo set, that of the route whose "
     "method did not match"),
]


def known(fw, release, request):
    """(its number, from 1, the route gospan reports) where an entry of KNOWN says FW RELEASE
    answers REQUEST ("GET /nope") otherwise than expected, else None."""
    for n, (f, first, last, req, route, _) in enumerate(KNOWN, 1):
        if f == fw and req == request and parse(first) <= parse(release) <= parse(last):
            return n, route
    return None


def template(fw, route):
    """ROUTE, written as chi writes it ("/users/{id}"), in FW's parameter syntax."""
    if route is None or FRAMEWORKS[fw][2] == "{}":
        return route
    return re.sub(r"\{(\w+)\}", r":\1", route)


# ---- cells --------------------------------------------------------------------------------------

# The CI slice: every row of every framework's offset table (gin: one layout; Echo v4: rows
# change at v4.12.0 and v4.13.0; Echo v5 at v5.2.0; chi at v5.0.1; gorilla/mux at v1.7.0) at a
# release of that row, stripped (no DWARF: the offsets are the table's), the oldest with the
# oldest Go it allows; and the newest release of each, plain, stripped and PIE, with the
# installed Go. The oldest Go of the old releases is go1.17.13, which test_go_versions.py builds
# with anyway. Echo v5.1.1 also shows the 405 of KNOWN.
SLICE = [
    ("gin", "v1.7.0", "oldest", ["stripped"]),
    ("gin", "v1.12.0", "local", ["plain", "stripped", "pie"]),
    ("echo", "v4.0.0", "oldest", ["stripped"]),
    ("echo", "v4.12.0", "local", ["stripped"]),
    ("echo", "v4.13.0", "local", ["stripped"]),
    ("echo", "v4.16.4", "local", ["plain", "stripped", "pie"]),
    ("echo5", "v5.1.1", "local", ["stripped"]),
    ("echo5", "v5.2.0", "local", ["stripped"]),
    ("echo5", "v5.4.5", "local", ["plain", "stripped", "pie"]),
    ("chi", "v5.0.0", "oldest", ["stripped"]),
    ("chi", "v5.0.1", "oldest", ["stripped"]),
    ("chi", "v5.5.0", "local", ["plain", "stripped", "pie"]),
    ("mux", "v1.6.0", "oldest", ["stripped"]),
    ("mux", "v1.7.0", "oldest", ["stripped"]),
    ("mux", "v1.8.1", "local", ["plain", "stripped", "pie"]),
    ("httprouter", "v1.3.0", "oldest", ["stripped"]),
    ("httprouter", "v1.3.0", "local", ["plain", "stripped", "pie"]),
]


def releases(fw):
    if fw in NO_TABLE:
        return NO_TABLE[fw][0]
    return matrix.minor_releases(FRAMEWORKS[fw][1], table_path(fw))


def go_toolchain(release):
    """The toolchain, as build.sh takes it, of Go RELEASE ("1.19.8"): Debian's by its path."""
    return str(GO_DEBIAN[release]) if release in GO_DEBIAN else f"go{release}"


def oldest_go(at_least, newer_than=(0,)):
    """The toolchain of the oldest release of test_go_versions.VERSIONS at or above AT_LEAST and
    above NEWER_THAN ((1, 18) and so on), and above what the services need; None for none."""
    fits = [v for v in GO_VERSIONS
            if parse(v) >= max(at_least, OLDEST_GO) and parse(v) > newer_than]
    return go_toolchain(min(fits, key=parse)) if fits else None


def oldest_toolchain(fw, release):
    """The oldest Go among test_go_versions.VERSIONS that FW RELEASE's go.mod allows, and the
    services too: "go1.17.13"."""
    want = parse(matrix.go_directive(FRAMEWORKS[fw][1], release) or "1.17")
    got = oldest_go(want)
    if not got:
        raise RuntimeError(f"{fw} {release} needs Go {'.'.join(map(str, want))}, newer than "
                           f"every release test_go_versions.py builds with")
    return got


_OLDEST = {}


def toolchains(fw, release):
    """The installed Go, and the oldest FW RELEASE allows where it is another release."""
    if (fw, release) not in _OLDEST:
        _OLDEST[fw, release] = oldest_toolchain(fw, release)
    old = _OLDEST[fw, release]
    return ["local"] + ([old] if parse(matrix.go_version(old)) <
                        parse(matrix.go_version("local")) else [])


def full_cells():
    return [(fw, v, tc, f) for fw in FRAMEWORKS for v in releases(fw)
            for tc in toolchains(fw, v) for f in FLAVOURS]


def slice_cells():
    return [(fw, v, tc if tc == "local" else toolchains(fw, v)[-1], f)
            for fw, v, tc, flavours in SLICE for f in flavours]


def toolchain_id(toolchain):
    if toolchain == "local":
        return "local"
    return toolchain_label(toolchain).replace(" (Debian)", "-debian")


def cell_id(cell):
    fw, release, toolchain, flavour = cell
    return f"{fw}-{release}-{toolchain_id(toolchain)}-{flavour}"


# ---- builds -------------------------------------------------------------------------------------

class BuildError(Exception):
    pass


# The cells build() built in this process (the rest came from the cache).
BUILT = []


def source_hash():
    """What the builds depend on in this tree: routers/ (but README.md) and the script build.sh
    runs."""
    return matrix.source_hash(ROUTERS, REPO / "tests" / "e2e" / "mixbuild.sh")


def first_error(stderr):
    """The first compiler error in a failed build's STDERR ("response.go:89:14: undefined:
    http.NewResponseController"), else its last line."""
    m = re.search(r"([^/\s]+\.go:\d+:\d+: .+)$", stderr, re.M)
    return m.group(1) if m else (stderr.strip().splitlines() or ["?"])[-1]


def build(cell):
    """(binary, its build's record) of CELL, built when missing. The record's "toolchain" is the
    Go that built it: where the cell's own (not the installed Go) fails, the next release of
    test_go_versions.VERSIONS is tried, or the oldest that a dependency's "requires go >= X"
    allows, up to three more; "refused" then lists [toolchain, why] of each that failed."""
    fw, release, toolchain, flavour = cell
    home = matrix.build_home("GOSPAN_ROUTERS_CACHE", "routers", source_hash())

    def make(tmp):
        used, refused, t0 = toolchain, [], time.monotonic()
        while True:
            res = subprocess.run([str(BUILD_SH), str(tmp / fw), used, fw, release, "--",
                                  *FLAVOURS[flavour][0]], capture_output=True, text=True,
                                 timeout=BUILD_TIMEOUT, env=go_env())
            if res.returncode == 0:
                break
            needs = re.search(r"requires go >= (1\.\d+(?:\.\d+)?)", res.stderr)
            after = None if used == "local" or len(refused) == 3 else oldest_go(
                parse(needs.group(1)) if needs else (0,), parse(matrix.go_version(used)))
            if not after:
                raise BuildError(f"{fw} {release} with {used} ({flavour}) did not build:\n"
                                 f"{res.stderr[-4000:]}")
            refused.append([toolchain_label(used),
                            needs.group(0) if needs else first_error(res.stderr)])
            used = after
        return {"framework": fw, "release": release, "toolchain": toolchain_label(used),
                "refused": refused, "flavour": flavour, "flags": FLAVOURS[flavour][0],
                "seconds": round(time.monotonic() - t0, 1)}

    dest, record, made = matrix.cached_build(
        home, f"{fw}-{release}-{toolchain_id(toolchain)}-{flavour}", make)
    if made:
        BUILT.append(cell)
    return dest / fw, record


# ---- the routers section of COMPATIBILITY.md ---------------------------------------------------

BEGIN = "<!-- BEGIN routers: written by tests/e2e/test_router_versions.py (make compat) -->"
END = "<!-- END routers -->"
# A cell's fields in a row of the results a run saves (test_router_versions.py).
FIELDS = ("framework", "release", "requested", "flavour")

SITES = [
    ("gin", "`(*Engine).ServeHTTP`'s CALL of `sync.(*Pool).Put`, which puts the request's "
     "`*gin.Context` back; the route is its `fullPath` (empty where no route matched)."),
    ("Echo v4", "`(*Echo).ServeHTTP`'s CALL of `sync.(*Pool).Put`; the route is the context's "
     "`path`, unless its `handler` is one of Echo's own (not found, method not allowed)."),
    ("Echo v5", "the CALL of `sync.(*Pool).Put` in `(*Echo).serveHTTP.deferwrap1`, the "
     "closure Go makes of `defer e.contextPool.Put(c)` (serveHTTP itself calls it through a "
     "func value); the route is `Context.path`, checked against `Context.handler` from v5.2.0."),
    ("chi v5", "`(*Mux).ServeHTTP`'s CALL of `sync.(*Pool).Put`; the route is "
     "`Context.RoutePatterns` joined as chi's `RoutePattern()` joins them, where "
     "`routePattern` says the last router matched."),
    ("gorilla/mux", "`(*Router).ServeHTTP`'s call that stores the matched `*Route` in the "
     "request's context (`requestWithRoute`, or before it the second call of `contextSet`), "
     "made only when a route matched; the route is its path regexp's `template`."),
    ("httprouter", "the first emulated instruction after `(*Router).ServeHTTP`'s CALL of "
     "`(*node).getValue`, whose results are still in their registers: the handle (none: no "
     "route) and the parameters, whose values lie in the request's path; httprouter keeps no "
     "template, and gospan puts each parameter's name back where its value was (no offset "
     "table: `Params` are Go strings)."),
]


def rewrite_section(text, page=matrix.PAGE):
    """Replaces the routers section of PAGE with TEXT, or appends it; the rest of the page is
    kept as it is."""
    matrix.rewrite_section(text, BEGIN, END, page)


def page_text(results, cells, kernel=None, note=None):
    """The routers section of COMPATIBILITY.md: RESULTS (cell -> what test_router_versions.py
    recorded) of CELLS, on KERNEL (this one's release without it); NOTE, when given, says how
    the run went."""
    fails = {}

    def rec(c):
        return results.get(c) or {}

    lines = ["## Routers (gin, Echo v4 and v5, chi v5, gorilla/mux, httprouter)", ""]
    lines += para(
        "Produced by `make compat` (`GOSPAN_COMPAT=1 pytest tests/e2e/test_router_versions.py`), "
        "which rewrites only this section; do not edit by hand. Each cell is that framework's "
        "service of `tests/e2e/routers` built against that release with that Go and flavour "
        "(`tests/e2e/routers/build.sh`), one gospan attached, and five requests, each with a "
        "traceparent of its own, checked as the official opentelemetry-proto decoder read their "
        "spans: exactly one SERVER span each, a child of the caller's span; `GET /users/42` named "
        "`GET /users/:id` (gin, Echo, httprouter) or `GET /users/{id}` (chi, gorilla/mux) with that "
        "http.route; `GET /orders/7/items/9` the full template of the route on the group (gin, "
        "Echo), mounted router (chi) or subrouter (gorilla/mux), `/orders/:oid/items/:iid` or "
        "`/orders/{oid}/items/{iid}`; `POST /fail/503` the route `/fail/:code` or "
        "`/fail/{code}`, status 503 and ERROR; the framework's own 404 (`GET /nope`) and 405 "
        "(`GET /fail/503`) no http.route and the method alone as their name; nothing dropped. "
        "The attach line must say `NAME routes (vX.Y.Z, offsets from ...; single-stepped hits: "
        "0 a request)` for the release built: \"verified (DWARF)\" means the framework's struct "
        "offsets came from the binary, \"verified (table vX)\" from the row of "
        "`offsets/NAME_offsets.json` for X (a stripped build must use it).")
    lines += [""] + para(
        "gospan reads each framework's route at one probe a request, on a direct `CALL` (the "
        "kernel emulates it: no single-step, as every attach line of the run says):")
    lines += [""]
    lines += matrix.site_lines(SITES)
    lines += [""] + para(
        "Releases: every minor's latest patch from the first release each offset table covers "
        "(gin v1.7.0, Echo v4.0.0, Echo v5.0.0, chi v5.0.0, gorilla/mux v1.6.0) to the newest "
        "the Go module proxy serves (with the table's releases for the minors its list leaves "
        "out), and every release a row of a table starts or ends at. Each is built with the "
        "installed Go and with the oldest Go its go.mod allows (Go 1.17 at least) among the "
        "releases `test_go_versions.py` builds with (Debian's golang-1.19 for 1.19.8, the "
        "others through the module proxy), plain, stripped (`-ldflags='-s -w'`) and PIE "
        "(`-buildmode=pie`). Where that Go does not build the release after all, the next of "
        "those releases that does builds the cell, and *notes* says why the older did not.")
    lines += matrix.run_lines(cells, results, kernel, note)

    if KNOWN:
        lines += ["", "Where gospan reports otherwise, as the *notes* column says:", ""]
        for n, (fw, first, last, request, route, why) in enumerate(KNOWN, 1):
            lines += para(
                f"{n}. {named(fw, first)} to {last}, `{request}`: http.route `{route}`, name "
                f"`{request.split()[0]} {route}`. {why}.", subsequent_indent="   ")

    lines += matrix.refused_lines(results, cells, lambda c: named(c[0], c[1]),
                                  lambda c: FRAMEWORKS[c[0]][1])

    def note_refs(c):
        return "; ".join(matrix.refused_notes(results, c)
                         + [f"{request}: `{route}` ({(known(c[0], c[1], request) or '?')[0]})"
                            for request, route in rec(c).get("notes") or []])

    for fw in FRAMEWORKS:
        mine = [c for c in cells if c[0] == fw]
        if not mine:
            continue
        rs = sorted({c[1] for c in mine}, key=parse)
        lines += ["", f"### {TITLES[fw]} (`{FRAMEWORKS[fw][1]}`): {rs[0]} to {rs[-1]}, "
                  f"{tally(mine, results)}", "",
                  "| release | Go | flavour | result | single-stepped hits / request | notes |",
                  "|---|---|---|---|---|---|"]
        for c in sorted(mine, key=lambda c: (parse(c[1]), c[2] == "local",
                                             list(FLAVOURS).index(c[3]))):
            go = rec(c).get("toolchain") or toolchain_label(c[2])
            steps = rec(c).get("steps")
            lines.append(f"| {c[1]} | {go} | {c[3]} | {shown_result(results, c, fails)} | "
                         f"{'-' if steps is None else steps} | {note_refs(c)} |")

    lines += matrix.slice_lines(
        "What CI runs (`make test`, `tests/e2e/router_matrix.py` lists them): a release of every "
        "row of each framework's offset table, stripped, the oldest with the oldest Go it "
        "allows, and the newest release of each with the installed Go, plain, stripped and PIE: ",
        [c for c in slice_cells() if c in cells], lambda c: named(c[0], c[1]))
    lines += matrix.failure_lines(fails, lambda c: named(c[0], c[1]))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(matrix.main(sys.argv[1:], sys.modules[__name__], FIELDS, cell_id))
