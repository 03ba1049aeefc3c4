"""The data store release matrix of test_db_versions.py: which cells, their dbmix builds (cached
across runs by datastores.build_dbmix) and the data store section of COMPATIBILITY.md.

A cell is (library, release, toolchain, flavour):

- ("sql", "go1.X.Y", toolchain, flavour): database/sql through lib/pq v1.10.9 (the pq-only
  dbmix, build.sh's default, the last pq that builds with Go 1.17), built by Go release X.Y:
  every release of test_go_versions.VERSIONS, Debian's 1.19.8 from its package
  (/usr/lib/go-1.19/bin/go), the others through the module proxy (GOTOOLCHAIN=go1.X.Y);
- ("pgx", "v5.X.Y", "local", flavour): pgx's own API (and its database/sql driver) in a dbmix
  built with pgx at that release and the installed Go;
- ("redis", "v9.X.Y", "local", flavour): go-redis at that release, the installed Go;
- ("mysql", "v1.X.Y", "local", flavour): database/sql through go-sql-driver/mysql at that
  release (a dbmix with lib/pq and it), the installed Go, against the session's MariaDB.

The pgx and go-redis releases are every minor's latest patch (the module proxy's list, and the
offset table's releases for the minors the list leaves out: pgx v5.0 to v5.2, go-redis v9.1 and
the retracted v9.15), plus each release an offset table row starts or ends at
(offsets/pgx_offsets.json, offsets/redis_offsets.json, offsets/mysql_offsets.json): the edges of
every layout. go-sql-driver/mysql's table, and so its cells, start at v1.5.0.

Builds are datastores.build_dbmix()'s: <cache>/dbmix-<hash of tests/e2e/dbmix>/<go>-<drivers>
[-<flags hash>]/, where <cache> is $GOSPAN_DBMIX_CACHE, else $XDG_CACHE_HOME/gospan, else
~/.cache/gospan: a cell is built once per machine, and CI can keep the directory.

Run as a program it lists the cells, `python3 tests/e2e/db_matrix.py [--full]`, or rewrites the
data store section of COMPATIBILITY.md from the results a run saved (for a run cut short):
`python3 tests/e2e/db_matrix.py --page build/e2e/db-versions-full.json ["a note"]`. What it
shares with the grpc-go matrix (grpc_matrix.py) is matrix.py's.
"""

import sys
import textwrap
import time

import matrix
from datastores import build_dbmix
from matrix import FLAVOURS, para, parse, shown_result, tally
from test_go_versions import DEBIAN_GO as GO_DEBIAN
from test_go_versions import VERSIONS as GO_VERSIONS

REPO = matrix.REPO
OFFSETS = REPO / "offsets"
DEBIAN_GO = str(GO_DEBIAN["1.19.8"])
PQ_DEFAULT = "v1.10.9"  # build.sh's, when no --pq is given
LIBS = {
    "sql": "database/sql",
    "pgx": "pgx",
    "redis": "go-redis",
    "mysql": "go-sql-driver/mysql",
}
MODULES = {"pgx": "github.com/jackc/pgx/v5", "redis": "github.com/redis/go-redis/v9",
           "mysql": "github.com/go-sql-driver/mysql"}
TABLES = {"pgx": OFFSETS / "pgx_offsets.json", "redis": OFFSETS / "redis_offsets.json",
          "mysql": OFFSETS / "mysql_offsets.json"}

SQL_FLAVOURS = ["plain", "stripped", "pie"]
MODULE_FLAVOURS = ["plain", "stripped", "pie"]

# What CI runs (make test): every database/sql cell, and this slice of the pgx and go-redis cells.
# database/sql is cheap: a pq-only dbmix builds in 1 to 2 s once the toolchain's standard
# library is in Go's build cache, which test_go_versions.py's builds with the same toolchains
# and flavours need anyway, and a cell runs in about 1.3 s (39 cells: about a minute of builds
# and a minute of runs, overlapped). Each pgx or go-redis release compiles its module afresh
# (6 to 18 s on two cores), so CI takes these, (library, release, flavours): pgx's first and
# last release of each layout of its table (5.5.3 renamed a batch's queries and a queued query's
# text); go-redis's first and last release of each of its table's two layouts (9.22.0 moved
# baseClient.opt), where 9.23.0 is also the first whose (*baseClient).process is inlined into
# its method value, so that gospan probes processStartingAt instead. Each stripped (traced from
# the pclntab and the table row alone), the oldest and newest also plain (offsets from DWARF);
# the newest pgx also PIE, where database/sql's probes take the load bias from their cookies to
# tell the driver's connection by its methods' addresses. go-sql-driver/mysql (table from
# v1.5.0, the first with a go.mod; mysqlConn.cfg moved in v1.8.0 and v1.9.0): a release of each
# layout stripped, the newest also plain.
SLICE = [
    ("pgx", "v5.0.0", ["plain", "stripped"]),
    ("pgx", "v5.5.2", ["stripped"]),
    ("pgx", "v5.5.3", ["stripped"]),
    ("pgx", "v5.12.0", ["plain", "stripped", "pie"]),
    ("redis", "v9.0.0", ["plain", "stripped"]),
    ("redis", "v9.21.0", ["stripped"]),
    ("redis", "v9.22.0", ["stripped"]),
    ("redis", "v9.23.0", ["plain", "stripped"]),
    ("mysql", "v1.5.0", ["stripped"]),
    ("mysql", "v1.8.1", ["stripped"]),
    ("mysql", "v1.10.1", ["plain", "stripped"]),
]


def sql_toolchain(release):
    """The toolchain build.sh takes for Go RELEASE ("go1.19.8"): Debian's package for 1.19.8."""
    return DEBIAN_GO if release == "go1.19.8" else release


def sql_releases():
    return ["go" + v for v in GO_VERSIONS]


def table_row_version(lib, release):
    """The table release whose row a binary of RELEASE without DWARF takes
    (matrix.table_row_version)."""
    return matrix.table_row_version(TABLES[lib], release)


def module_releases(lib):
    """Every minor's latest patch of the module (the proxy's list, and the table's releases for
    the minors the list leaves out), plus the table's layout edges; sorted."""
    return matrix.minor_releases(MODULES[lib], TABLES[lib])


def sql_cells():
    return [("sql", r, sql_toolchain(r), f) for r in sql_releases() for f in SQL_FLAVOURS]


def full_cells():
    cells = sql_cells()
    for lib in ("pgx", "redis", "mysql"):
        cells += [(lib, v, "local", f) for v in module_releases(lib) for f in MODULE_FLAVOURS]
    return cells


def slice_cells():
    """What CI runs: every database/sql cell, and SLICE."""
    return sql_cells() + [(lib, r, "local", f) for lib, r, flavours in SLICE for f in flavours]


def cell_id(cell):
    lib, release, toolchain, flavour = cell
    if lib == "sql":
        return f"sql-{release}{'-debian' if toolchain == DEBIAN_GO else ''}-{flavour}"
    return f"{lib}-{release}-{flavour}"


# The cells build() built in this process (the rest came from the cache).
BUILT = []


def build(cell):
    """The cached dbmix binary of CELL, built when missing: pq-only for database/sql, with pgx
    alone, go-redis alone or go-sql-driver/mysql alone (and the always-present lib/pq) for the
    others."""
    lib, release, toolchain, flavour = cell
    t0 = time.time()
    kw = {lib: release} if lib in MODULES else {}
    binary = build_dbmix(None, toolchain, flags=tuple(FLAVOURS[flavour][0]), **kw)
    if (binary.parent / "built.json").stat().st_mtime >= t0 - 1:
        BUILT.append(cell)
    return binary


# ---- the data store section of COMPATIBILITY.md ------------------------------------------------

BEGIN = "<!-- BEGIN data stores: written by tests/e2e/test_db_versions.py (make compat) -->"
END = "<!-- END data stores -->"
# A cell's fields in a row of the results a run saves (test_db_versions.py).
FIELDS = ("lib", "release", "requested", "flavour")


def rewrite_section(text, page=matrix.PAGE):
    """Replaces the data store section of PAGE with TEXT, or appends it at the end; the rest of
    the page (the Go section of test_go_versions.py, the gRPC section of test_grpc_versions.py)
    is kept as it is."""
    matrix.rewrite_section(text, BEGIN, END, page)


def load_results(path):
    """The results a run wrote (test_db_versions.py: $GOSPAN_BUILD/e2e/db-versions-full.json),
    keyed by cell."""
    return matrix.load_results(path, FIELDS)


def page_text(results, cells, kernel=None, note=None):
    """The data store section of COMPATIBILITY.md: RESULTS (cell -> what test_db_versions.py
    recorded) of CELLS, on KERNEL (this one's release without it); NOTE, when given, says how
    the run went."""
    fails = {}

    def result(c):
        return shown_result(results, c, fails)

    def steps(cs):
        """Per flavour slot (None: a flavour the cell list lacks)."""
        got = [(results.get(c) or {}).get("steps") if c else None for c in cs]
        return " / ".join("-" if s is None else str(s) for s in got)

    def go_label(cs):
        for c in cs:
            if (results.get(c) or {}).get("toolchain"):
                return results[c]["toolchain"]
        return "-"

    def probed(cs):
        seen = [tuple(results[c]["probed"]) for c in cs if (results.get(c) or {}).get("probed")]
        if not seen:
            return "-"
        # one list when every flavour probed the same, else each flavour's
        shown = seen[:1] if len(set(seen)) == 1 else seen
        return " / ".join(", ".join(f"`{s}`" for s in p) for p in shown)

    by_lib = {lib: [c for c in cells if c[0] == lib] for lib in LIBS}

    def releases(lib):
        return sorted({c[1] for c in by_lib[lib]}, key=parse)

    def count(lib):
        return tally(by_lib[lib], results)

    lines = ["## Data stores (database/sql, pgx, go-redis, go-sql-driver/mysql)", ""]
    lines += para(
        "Produced by `make compat` (`GOSPAN_COMPAT=1 pytest tests/e2e/test_db_versions.py`), "
        "which rewrites only this section; do not edit by hand. Each cell is `tests/e2e/dbmix` "
        "built with that driver release, Go and flavour (`tests/e2e/dbmix/build.sh`), run "
        "against a real PostgreSQL and Redis, one gospan attached, and its requests' spans "
        "checked as the official opentelemetry-proto decoder read them, as `test_datastores.py` "
        "checks them (`test_mysql.py` for MySQL, against a real MariaDB): every request carries "
        "a traceparent of its own, and its trace must hold "
        "exactly dbmix's SERVER span and one CLIENT span per call, each a child of the SERVER "
        "span and inside its window, with the exact name, db.system.name, db.operation.name, "
        "db.collection.name and sanitized db.query.text (literals replaced by `?`); nothing "
        "dropped, nothing left in flight.")
    lines += [""]
    for item in (
            "database/sql (lib/pq v1.10.9, the pq-only dbmix): a SELECT with literals; a "
            "prepared statement queried 5 times (its text read through `Stmt.query`); a "
            "transaction: BEGIN, an INSERT, a SELECT and COMMIT; a failing query (`SELEC 1`: "
            "status ERROR, error.type and db.response.status_code `42601`, no message); each "
            "but the failing one with server.address/port (lib/pq v1.10.9 keeps no host of its "
            "own: the peer its socket is connected to).",
            "pgx v5, its own API through a pgxpool: Query, QueryRow, Exec, a SendBatch of three "
            "queries (`BATCH`, db.operation.batch.size 3, the first query's text, marked "
            "truncated: read through the batch's queued queries), a failing Exec (`42601`), "
            "each with server.address/port; and one SELECT through pgx's database/sql driver, "
            "with server.address/port from its connection.",
            "go-redis v9: SET, GET, a GET of a missing key (no failure), a pipeline of SET, "
            "INCR, GET (`PIPELINE`, db.operation.batch.size 3, `SET ? ?; INCR ?; GET ?`), an "
            "INCR of text (status ERROR, error.type `ERR`), each with server.address/port.",
            "go-sql-driver/mysql (database/sql, against MariaDB): a SELECT with literals; a "
            "statement the driver prepares on the server, queried 5 times; a transaction: "
            "BEGIN, an INSERT, a SELECT and COMMIT; a failing query (`SELEC 1`: status ERROR, "
            "error.type and db.response.status_code the error number `1064`, no message); each "
            "with server.address/port."):
        lines += textwrap.wrap(item, 95, initial_indent="- ", subsequent_indent="  ",
                               break_on_hyphens=False)
    lines += [""]
    lines += para(
        "The attach line must name the Go and driver releases built, and say where the "
        "offsets came from: \"verified (DWARF)\" means from the binary, \"verified (table "
        "...)\" from the row of `offsets/go_offsets.json` (database/sql's `Stmt.query`), "
        "`offsets/pgx_offsets.json` or `offsets/redis_offsets.json` for that release (a "
        "stripped build must use it). *Single-stepped hits* are those of one query or command "
        "as the attach line counts them, per flavour (plain / stripped / pie): database/sql's "
        "ends are probed in its callers, on instructions the kernel emulates; pgx's inside its "
        "methods, right after the inner call that does the work, on emulated instructions too "
        "(the RETs of the ways out before it kept: `RETs kept: for the ways out before its "
        "inner calls` in gospan's `--verbose` lines); go-redis's on its functions' RETs "
        "(`RETs kept: wanted`), which it single-steps.")
    lines += matrix.run_lines(cells, results, kernel, note)

    rs = releases("sql")
    lines += ["", f"### database/sql: Go {rs[0][2:]} to {rs[-1][2:]}, {count('sql')}", "",
              "Every Go release `test_go_versions.py` covers (Debian's golang-1.19 package for",
              "1.19.8, the others through the Go module proxy), lib/pq v1.10.9, plain, stripped",
              "(`-ldflags='-s -w'`) and PIE (`-buildmode=pie`).", "",
              "| Go | " + " | ".join(SQL_FLAVOURS) + " | single-stepped hits / query |",
              "|---|" + "---|" * (len(SQL_FLAVOURS) + 1)]
    for r in rs:
        cs = [next((c for c in by_lib["sql"] if c[1] == r and c[3] == f), None)
              for f in SQL_FLAVOURS]
        label = go_label([c for c in cs if c])
        lines.append(f"| {r[2:] if label == '-' else label[2:]} | "
                     + " | ".join(result(c) if c else "-" for c in cs)
                     + f" | {steps(cs)} |")

    mysql_note = ("go-sql-driver/mysql has no probe of its own: gospan traces its "
                  "database/sql calls, and reads its error number (`*mysql.MySQLError`) and "
                  "its connection's address (`mysqlConn.cfg`, `Config.Addr`).")
    for lib, what, probe_note in (
            ("pgx", "pgx v5 (`github.com/jackc/pgx/v5`)",
             "gospan probes `(*Conn).Query`, `(*Conn).Exec` and `(*Conn).SendBatch`; each cell"
             " checks its `--verbose` lines name them."),
            ("redis", "go-redis v9 (`github.com/redis/go-redis/v9`)",
             "*Probed* names the `(*baseClient)` methods gospan attached to, from its"
             " `--verbose` lines (one list where every flavour's was the same): `process` where"
             " the binary has it, else `processStartingAt` (where `process` is inlined into its"
             " method value), and the two pipeline processors."),
            ("mysql", "go-sql-driver/mysql (`github.com/go-sql-driver/mysql`)", mysql_note)):
        if not by_lib[lib]:
            continue
        rs = releases(lib)
        lines += ["", f"### {what}: {rs[0]} to {rs[-1]}, {count(lib)}", ""]
        lines += textwrap.wrap(
            "Every minor's latest patch, and the first and last release of each layout of "
            f"`offsets/{TABLES[lib].name}`, built with the installed Go, plain, stripped and "
            "PIE. " + probe_note, 95, break_on_hyphens=False)
        lines += ["",
                  f"| {LIBS[lib]} | Go | " + " | ".join(MODULE_FLAVOURS)
                  + " | single-stepped hits / " + ("command" if lib == "redis" else "query")
                  + (" | probed |" if lib == "redis" else " |"),
                  "|---|---|" + "---|" * (len(MODULE_FLAVOURS) + 1)
                  + ("---|" if lib == "redis" else "")]
        for r in rs:
            cs = [next((c for c in by_lib[lib] if c[1] == r and c[3] == f), None)
                  for f in MODULE_FLAVOURS]
            present = [c for c in cs if c]
            lines.append(f"| {r} | {go_label(present)} | "
                         + " | ".join(result(c) if c else "-" for c in cs)
                         + f" | {steps(cs)} |"
                         + (f" {probed(present)} |" if lib == "redis" else ""))

    slice_ = [c for c in slice_cells() if c in cells and c[0] != "sql"]
    if slice_:
        lines += [""] + para(
            "What CI runs (`make test`): every database/sql cell above, and of pgx and go-redis "
            "the first and last release of each offset table layout, stripped, the oldest and "
            "newest also plain (go-redis v9.23.0 is also the first traced through "
            "`processStartingAt`), the newest pgx also PIE, and a go-sql-driver/mysql release of "
            "each layout of its table, stripped, the newest also plain; `tests/e2e/db_matrix.py` "
            "lists them (SLICE):")
        lines += ["", "| library | release | Go | flavour | result |", "|---|---|---|---|---|"]
        for c in slice_:
            lines.append(f"| {LIBS[c[0]]} | {c[1]} | {go_label([c])} | {c[3]} | {result(c)} |")
    lines += matrix.failure_lines(fails, lambda c: f"{LIBS[c[0]]} {c[1]}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(matrix.main(sys.argv[1:], sys.modules[__name__], FIELDS, cell_id))
