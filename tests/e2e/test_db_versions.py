"""Data store clients across Go releases, driver releases and build flavours, traced for real:
tests/e2e/dbmix built for one cell (db_matrix.py, cached), run against the session's PostgreSQL,
Redis and MariaDB (datastores.py), one gospan on it, a few requests, and every span checked as the
OTLP receiver decoded it, as test_datastores.py checks them:

- database/sql (the pq-only dbmix, lib/pq v1.10.9) built by every Go release gospan supports:
  a SELECT with literals, a prepared statement queried 5 times, a transaction (BEGIN, INSERT,
  SELECT, COMMIT) and a failing query (SQLSTATE 42601), each with server.address/port (lib/pq
  v1.10.9 keeps no host of its own: the peer its socket is connected to);
- pgx v5 at every minor's latest patch and the edges of its offset table's layouts: Query,
  QueryRow, Exec, SendBatch (BATCH, db.operation.batch.size 3, the first query's text from the
  batch's queued queries), a failing Exec, server.address/port; one SELECT through pgx's
  database/sql driver, with server.address/port from its connection; on amd64 the attach line
  must count no single-stepped hit a query (the ends inside pgx's methods, after their inner
  calls, on emulated instructions);
- go-redis v9 likewise: SET, GET, a missing key, a pipeline (batch size 3, every command's
  name), an error reply (error.type ERR), a command that times out (its span as long as its
  context allowed) and one whose retries run out, server.address/port; on amd64 the attach line
  must count no single-stepped hit a command (its ends where its retry loop is over);
- go-sql-driver/mysql at every minor's latest patch from v1.5.0, through database/sql against
  MariaDB: a SELECT with literals, a statement prepared on the server queried 5 times, a
  transaction, a failing query (error.type and db.response.status_code the error number,
  1064, read from *mysql.MySQLError), server.address/port (from the connection's Config.Addr).

Every request carries a traceparent of its own: its trace must hold exactly dbmix's SERVER span
(a child of the caller's span) and one CLIENT span per call, children of it, inside its window.
The attach line must name what the cell built (the Go release, the pgx or go-redis release) and
where the offsets came from: DWARF in a plain build, the table row of the release (or the
nearest below it) in a stripped one. gospan runs with --verbose, whose lines name every function
it probed: for go-redis, (*baseClient).process, or processStartingAt where process is inlined
(v9.23.0 on), and processPipeline and processTxPipeline. At exit nothing may be dropped or left
in flight.

By default (make test, CI) this runs db_matrix.slice_cells(): every database/sql cell, and the
pgx and go-redis releases at the edges of their tables' layouts; with GOSPAN_COMPAT=1 (make
compat) every cell of db_matrix.full_cells() (and the slice), and then rewrites the data store
section of COMPATIBILITY.md. Every run writes its results, cell by cell, to
$GOSPAN_BUILD/e2e/db-versions-full.json (GOSPAN_COMPAT=1) or db-versions-slice.json.
"""

import platform
import re
import signal
import subprocess
import threading
import time

import pytest

import db_matrix
import matrix
from conftest import (BUILD, STATUS_ERROR, STATUS_UNSET, STOP_TIMEOUT, Service, _clean_env,
                      traced_get, wait_until)

# Two builds at a time: most of a build is its serial steps (go mod tidy, the link).
BUILD_JOBS = 2
SPAN_KIND_SERVER, SPAN_KIND_CLIENT = 2, 3
SPAN_TIMEOUT = 15.0
PREPARED_N = 5
SELECT_TEXT = "SELECT id, name FROM items WHERE id = ? AND name = ?"
BY_ID_TEXT = "SELECT name FROM items WHERE id = $1"
MYSQL_BY_ID_TEXT = "SELECT name FROM items WHERE id = ?"
SQL_PART = re.compile(r" \+ SQL \(database/sql; single-stepped hits: (\d+|no probe for) a query\)")
PGX_PART = re.compile(r" \+ pgx \((v[0-9.]+), offsets from (DWARF|table v[0-9.]+|nowhere); "
                      r"single-stepped hits: (\d+|no probe for) a query\)")
REDIS_PART = re.compile(r" \+ Redis \(go-redis (v[0-9.]+), offsets from (DWARF|table v[0-9.]+); "
                        r"single-stepped hits: (\d+|no probe for) a command"
                        r"(?:, (?:\d+|no probe for) a pipeline)?\)")
GO_OFFSETS = re.compile(r"\), offsets from (DWARF|table for Go \S+)$")
# --verbose: "gospan:   SYMBOL: entry ..." for every probed function
PROBED = re.compile(r"^gospan:   (\S+): entry ", re.M)
REDIS_RECEIVER = "github.com/redis/go-redis/v9.(*baseClient)."
# database/sql's functions every dbmix calls: the driver's query and exec, a prepared
# statement's query, begin and commit.
SQL_PROBED = ["ctxDriverQuery", "ctxDriverExec", "rowsiFromStatement", "ctxDriverPrepare",
              "(*Stmt).QueryContext", "ctxDriverBegin", "(*Tx).Commit"]


CASES = matrix.cases(db_matrix.full_cells, db_matrix.slice_cells)

# cell -> {"result", "toolchain", "steps", "source", "probed", "why"}; the full matrix's kept
# apart from the slice's.
RESULTS = matrix.Results("db-versions", db_matrix.FIELDS, BUILD, why_width=400)
# Held by the cell whose service is being traced and answering requests.
ACTIVE = threading.Lock()
# Cells in progress at once: one active, the one before it exiting (the kernel removed one
# gospan's probes while another's waited: more would only queue).
RUN_JOBS = 2


@pytest.fixture(scope="module")
def builds(request, bpf_ready):
    """cell -> future of db_matrix.build(cell): every selected cell built in order in the
    background, so the builds overlap the runs of the cells before them."""
    yield from matrix.in_background(db_matrix.build, matrix.selected_cells(request), BUILD_JOBS)


class Requests:
    """Requests to a traced dbmix, each under a trace of its own, checked together: all are made
    first, then their spans awaited at once."""

    def __init__(self, svc, gospan, receiver, where):
        self.svc, self.gospan, self.receiver, self.where = svc, gospan, receiver, where
        self.made = []  # (path, trace id, caller's span id, client spans expected)

    def get(self, path, n, status=200):
        trace_id, parent, req = traced_get(self.svc.port, path, status, f"{self.where} ")
        self.made.append((path, trace_id, parent, n))
        return req.got_body.decode()

    def spans(self):
        """{path: (SERVER span, its CLIENT spans by start)} once every trace is whole; each
        trace checked for parentage and windows."""
        def count(spans, tid):
            return sum(s.trace_id == tid for s in spans)

        def whole():
            got = self.receiver.snapshot()
            return all(count(got, tid) >= n + 1 for _, tid, _, n in self.made)
        wait_until(whole, SPAN_TIMEOUT)
        # Nothing more is coming: a span too many would have come with the others.
        wait_until(lambda: False, 0.3)
        got = self.receiver.snapshot()
        out = {}
        for path, tid, parent, n in self.made:
            mine = [s for s in got if s.trace_id == tid]
            assert len(mine) >= n + 1, (
                f"{self.where} {path}: {len(mine)} spans of {n + 1} arrived within "
                f"{SPAN_TIMEOUT:.0f} s: {[(s.name, s.kind) for s in mine]}\n{self.gospan.stderr}")
            servers = [s for s in mine if s.kind == SPAN_KIND_SERVER]
            clients = [s for s in mine if s.kind == SPAN_KIND_CLIENT]
            assert len(servers) == 1 and len(clients) == n and len(mine) == n + 1, \
                (f"{self.where} {path}: {[(s.name, s.kind, s.attrs) for s in mine]}\n"
                 f"{self.gospan.stderr}")
            server = servers[0]
            assert server.parent_span_id == parent, f"{self.where} {path}: SERVER parent"
            for c in clients:
                assert c.parent_span_id == server.span_id, (self.where, path, c.name, c.attrs)
                assert server.start_ns <= c.start_ns <= c.end_ns <= server.end_ns, \
                    (self.where, path, c.name)
            out[path] = (server, sorted(clients, key=lambda s: s.start_ns))
        return out


def check_db_span(span, system, name, text, op, coll=None, where=""):
    a = span.attrs
    assert span.name == name, (where, span.name, a)
    assert a.get("db.system.name") == system, (where, a)
    assert a.get("db.operation.name") == op, (where, a)
    assert a.get("db.query.text") == text, (where, a)
    assert a.get("db.collection.name") == coll, (where, a)


def check_ok(span, where):
    assert span.status_code == STATUS_UNSET, (where, span.name, span.status_message, span.attrs)
    assert "error.type" not in span.attrs, (where, span.attrs)


def check_server(span, host, port, where):
    assert span.attrs.get("server.address") == host, (where, span.attrs)
    assert span.attrs.get("server.port") == port, (where, span.attrs)


def run_sql(r, pg, where):
    """database/sql through lib/pq: the SELECT, the prepared statement, the transaction and the
    failing query of test_datastores.py."""
    r.get("/sql/setup?driver=pq", 6)
    assert r.get("/sql/select?driver=pq", 1) == "1 row: 42 widget\n"
    assert r.get(f"/sql/prepared?driver=pq&n={PREPARED_N}", PREPARED_N) == \
        f"prepared: {PREPARED_N} queries, name widget\n"
    assert r.get("/sql/tx?driver=pq", 4).startswith("tx: committed, items ")
    r.get("/sql/error?driver=pq", 1, status=500)
    got = r.spans()

    _, (span,) = got["/sql/select?driver=pq"]
    check_db_span(span, "postgresql", "SELECT items", SELECT_TEXT, "SELECT", "items", where)
    check_ok(span, where)
    # lib/pq before v1.11 keeps its connections' host in a map: its socket's peer, the IP
    # address the DSN's 127.0.0.1 is, from the Go offsets (DWARF, or the Go table)
    check_server(span, pg.host, pg.port, where)

    _, spans = got[f"/sql/prepared?driver=pq&n={PREPARED_N}"]
    for s in spans:
        check_db_span(s, "postgresql", "SELECT items", BY_ID_TEXT, "SELECT", "items", where)
        check_ok(s, where)
        check_server(s, pg.host, pg.port, where)
    for a, b in zip(spans, spans[1:]):
        assert a.end_ns <= b.start_ns, f"{where}: prepared queries overlap"

    _, (begin, insert, count, commit) = got["/sql/tx?driver=pq"]
    for s, op in ((begin, "BEGIN"), (commit, "COMMIT")):
        assert s.name == op and s.attrs.get("db.operation.name") == op, (where, s.name, s.attrs)
        assert s.attrs.get("db.system.name") == "postgresql", (where, s.attrs)
        assert "db.query.text" not in s.attrs, (where, s.attrs)
        check_ok(s, where)
    check_db_span(insert, "postgresql", "INSERT items",
                  "INSERT INTO items (id, name, price) VALUES (?, ?, ?)", "INSERT", "items", where)
    check_db_span(count, "postgresql", "SELECT items", "SELECT count(*) FROM items", "SELECT",
                  "items", where)
    check_ok(insert, where)
    check_ok(count, where)
    for s in (begin, insert, count, commit):
        check_server(s, pg.host, pg.port, where)

    _, (span,) = got["/sql/error?driver=pq"]
    check_db_span(span, "postgresql", "SELEC", "SELEC ?", "SELEC", None, where)
    assert span.status_code == STATUS_ERROR, (where, span.attrs)
    assert span.attrs.get("error.type") == "42601", (where, span.attrs)
    assert span.attrs.get("db.response.status_code") == "42601", (where, span.attrs)
    # messages may quote values: only with --db-query-text=raw
    assert span.status_message == "", (where, span.status_message)


def run_pgx(r, pg, where):
    """pgx's own API through its pool, and one SELECT through its database/sql driver."""
    r.get("/sql/setup?driver=pq", 6)
    assert r.get("/pgx/query", 1) == "1 row: 42 widget\n"
    assert r.get("/pgx/queryrow", 1) == "queryrow: widget\n"
    assert r.get("/pgx/exec", 1) == "exec: UPDATE 1\n"
    assert r.get("/pgx/batch", 1) == "batch: widget, 42, UPDATE 1\n"
    r.get("/pgx/error", 1, status=500)
    assert r.get("/sql/select?driver=pgx", 1) == "1 row: 42 widget\n"
    got = r.spans()

    for path, name, text, op in (
            ("/pgx/query", "SELECT items", SELECT_TEXT, "SELECT"),
            ("/pgx/queryrow", "SELECT items", BY_ID_TEXT, "SELECT"),
            ("/pgx/exec", "UPDATE items", "UPDATE items SET price = ? WHERE id = ?", "UPDATE")):
        _, (span,) = got[path]
        check_db_span(span, "postgresql", name, text, op, "items", f"{where} {path}")
        check_ok(span, f"{where} {path}")
        check_server(span, pg.host, pg.port, f"{where} {path}")

    _, (span,) = got["/pgx/batch"]
    # Of a batch the text is its first query's (read through Batch.QueuedQueries and
    # QueuedQuery.SQL, or before v5.5.3 queuedQueries and query), marked truncated.
    check_db_span(span, "postgresql", "BATCH", BY_ID_TEXT, "BATCH", None, f"{where} batch")
    assert span.attrs.get("db.operation.batch.size") == 3, (where, span.attrs)
    assert span.attrs.get("gospan.truncated") == "db.query.text", (where, span.attrs)
    check_ok(span, f"{where} batch")
    check_server(span, pg.host, pg.port, f"{where} batch")

    _, (span,) = got["/pgx/error"]
    check_db_span(span, "postgresql", "SELEC", "SELEC ?", "SELEC", None, f"{where} error")
    assert span.status_code == STATUS_ERROR, (where, span.attrs)
    assert span.attrs.get("error.type") == "42601", (where, span.attrs)
    assert span.attrs.get("db.response.status_code") == "42601", (where, span.attrs)
    assert span.status_message == "", (where, span.status_message)
    check_server(span, pg.host, pg.port, f"{where} error")

    _, (span,) = got["/sql/select?driver=pgx"]
    check_db_span(span, "postgresql", "SELECT items", SELECT_TEXT, "SELECT", "items",
                  f"{where} database/sql")
    check_ok(span, f"{where} database/sql")
    # from the driver's connection: stdlib.Conn's *pgx.Conn and its configuration
    check_server(span, pg.host, pg.port, f"{where} database/sql")


def run_mysql(r, my, where):
    """database/sql through go-sql-driver/mysql, as run_sql's calls, and server.address/port,
    which gospan reads from the driver's connection."""
    q = "driver=mysql"
    r.get(f"/sql/setup?{q}", 6)
    assert r.get(f"/sql/select?{q}", 1) == "1 row: 42 widget\n"
    assert r.get(f"/sql/prepared?{q}&n={PREPARED_N}", PREPARED_N) == \
        f"prepared: {PREPARED_N} queries, name widget\n"
    assert r.get(f"/sql/tx?{q}", 4).startswith("tx: committed, items ")
    r.get(f"/sql/error?{q}", 1, status=500)
    got = r.spans()

    _, (span,) = got[f"/sql/select?{q}"]
    check_db_span(span, "mysql", "SELECT items", SELECT_TEXT, "SELECT", "items", where)
    check_ok(span, where)

    _, spans = got[f"/sql/prepared?{q}&n={PREPARED_N}"]
    for s in spans:
        check_db_span(s, "mysql", "SELECT items", MYSQL_BY_ID_TEXT, "SELECT", "items", where)
        check_ok(s, where)
    for a, b in zip(spans, spans[1:]):
        assert a.end_ns <= b.start_ns, f"{where}: prepared queries overlap"

    _, (begin, insert, count, commit) = got[f"/sql/tx?{q}"]
    for s, op in ((begin, "BEGIN"), (commit, "COMMIT")):
        assert s.name == op and s.attrs.get("db.operation.name") == op, (where, s.name, s.attrs)
        assert s.attrs.get("db.system.name") == "mysql", (where, s.attrs)
        assert "db.query.text" not in s.attrs, (where, s.attrs)
        check_ok(s, where)
    check_db_span(insert, "mysql", "INSERT items",
                  "INSERT INTO items (id, name, price) VALUES (?, ?, ?)", "INSERT", "items", where)
    check_db_span(count, "mysql", "SELECT items", "SELECT count(*) FROM items", "SELECT",
                  "items", where)
    check_ok(insert, where)
    check_ok(count, where)

    _, (error,) = got[f"/sql/error?{q}"]
    check_db_span(error, "mysql", "SELEC", "SELEC ?", "SELEC", None, where)
    assert error.status_code == STATUS_ERROR, (where, error.attrs)
    assert error.status_message == "", (where, error.status_message)
    # Checked last: they need gospan to read the driver's values (*mysql.MySQLError's Number,
    # the connection's Config.Addr), which came with the BPF change of 2026-11-28 on main.
    needs = "needs gospan's reading of *mysql.MySQLError and Config.Addr (main, 2026-11-28)"
    assert error.attrs.get("error.type") == "1064", (where, needs, error.attrs)
    assert error.attrs.get("db.response.status_code") == "1064", (where, needs, error.attrs)
    for s in [span, *spans, insert, count, error]:
        check_server(s, my.host, my.port, f"{where} {s.name}: {needs}")


def run_redis(r, rd, where):
    assert r.get("/redis/set", 1) == "set: OK\n"
    assert r.get("/redis/get", 1) == "dbmix-value\n"
    assert r.get("/redis/missing", 1) == "nil\n"
    assert r.get("/redis/pipeline", 1) == "pipeline: OK 2 2\n"
    r.get("/redis/error", 2, status=500)
    # The command's other ways out: a timeout (not retried) and retries run out
    r.get("/redis/timeout", 1, status=500)
    r.get("/redis/retries", 1, status=500)
    got = r.spans()

    for path, name, text in (("/redis/set", "SET", "SET ? ?"), ("/redis/get", "GET", "GET ?"),
                             ("/redis/missing", "GET", "GET ?")):
        _, (span,) = got[path]
        check_db_span(span, "redis", name, text, name, None, f"{where} {path}")
        check_ok(span, f"{where} {path}")
        check_server(span, rd.host, rd.port, f"{where} {path}")

    _, (span,) = got["/redis/pipeline"]
    check_db_span(span, "redis", "PIPELINE", "SET ? ?; INCR ?; GET ?", "PIPELINE", None,
                  f"{where} pipeline")
    assert span.attrs.get("db.operation.batch.size") == 3, (where, span.attrs)
    check_ok(span, f"{where} pipeline")
    check_server(span, rd.host, rd.port, f"{where} pipeline")

    _, (setup, span) = got["/redis/error"]
    check_db_span(setup, "redis", "SET", "SET ? ?", "SET", None, f"{where} error")
    check_ok(setup, f"{where} error")
    check_db_span(span, "redis", "INCR", "INCR ?", "INCR", None, f"{where} error")
    assert span.status_code == STATUS_ERROR, (where, span.attrs)
    assert span.attrs.get("error.type") == "ERR", (where, span.attrs)
    assert span.attrs.get("db.response.status_code") == "ERR", (where, span.attrs)
    check_server(span, rd.host, rd.port, f"{where} error")

    _, (span,) = got["/redis/timeout"]
    check_db_span(span, "redis", "BLPOP", "BLPOP ? ?", "BLPOP", None, f"{where} timeout")
    assert span.status_code == STATUS_ERROR, (where, span.attrs)
    # it ends when the command gave up (its context's 100 ms), not at BLPOP's second
    assert 0.09e9 <= span.end_ns - span.start_ns < 0.9e9, (where, span)
    _, (span,) = got["/redis/retries"]
    check_db_span(span, "redis", "GET", "GET ?", "GET", None, f"{where} retries")
    assert span.status_code == STATUS_ERROR, (where, span.attrs)
    check_server(span, "127.0.0.1", 1, f"{where} retries")


def redis_symbols(binary):
    """The (*baseClient).process* functions in BINARY's symbol table (go tool nm), for a
    failure's message."""
    res = subprocess.run(["go", "tool", "nm", str(binary)], capture_output=True, text=True,
                         timeout=120)
    if res.returncode != 0:
        return f"(go tool nm: {res.stderr.strip()[:200]})"
    names = sorted({ln.split()[-1] for ln in res.stdout.splitlines()
                    if REDIS_RECEIVER + "process" in ln})
    return ", ".join(n.removeprefix(REDIS_RECEIVER) for n in names) or "none"


def steps_of(m, group):
    x = m.group(group)
    return None if x == "no probe for" else int(x)


def check_attach(cell, line, built_with, binary):
    """What the attach LINE says of CELL: the Go release and the library's, where their offsets
    came from; returns (offsets source, single-stepped hits a query or command)."""
    lib, release, _, flavour = cell
    where = db_matrix.cell_id(cell)
    assert f", {built_with}, " in line, f"{where}: not {built_with}:\n{line}"
    sql = SQL_PART.search(line)
    assert sql, f"{where}: the attach line does not say database/sql is traced:\n{line}"
    go = GO_OFFSETS.search(line)
    assert go, f"{where}: where the Go offsets came from:\n{line}"
    want = "DWARF" if flavour != "stripped" else "table for Go "
    assert go.group(1).startswith(want), f"{where}: Go offsets from {go.group(1)}\n{line}"
    if lib in ("sql", "mysql"):
        # go-sql-driver/mysql has no probe of its own: its calls are database/sql's
        assert " + pgx (" not in line and " + Redis (" not in line, line
        return go.group(1), steps_of(sql, 1)
    if lib == "pgx":
        m = PGX_PART.search(line)
        assert m, f"{where}: the attach line does not say pgx is traced:\n{line}"
    else:
        m = REDIS_PART.search(line)
        assert m, (f"{where}: the attach line does not say go-redis is traced; the binary's "
                   f"(*baseClient).process* functions: {redis_symbols(binary)}\n{line}")
    version, source, steps = m.group(1), m.group(2), steps_of(m, 3)
    assert version == release, f"{where}: {db_matrix.LIBS[lib]} {version} read, {release} built"
    if flavour == "stripped":
        row = db_matrix.table_row_version(lib, release.lstrip("v"))
        assert source == f"table v{row}", f"{where}: offsets from {source}, not row {row}"
    else:
        assert source == "DWARF", f"{where}: offsets from {source}\n{line}"
    return source, steps


def check_probed(cell, stderr, binary):
    """The functions gospan's --verbose lines say it probed, of those that vary by release:
    go-redis's command processor and pipeline processors (none for the others, whose functions
    must all be there)."""
    lib = cell[0]
    where = db_matrix.cell_id(cell)
    probed = PROBED.findall(stderr)
    for fn in SQL_PROBED:
        assert f"database/sql.{fn}" in probed, (where, fn, probed)
    if lib == "pgx":
        for fn in ("Query", "Exec", "SendBatch"):
            assert f"github.com/jackc/pgx/v5.(*Conn).{fn}" in probed, (where, fn, probed)
    if lib != "redis":
        return []
    mine = [p.removeprefix(REDIS_RECEIVER) for p in probed if p.startswith(REDIS_RECEIVER)]
    processor = [p for p in mine if p in ("process", "processStartingAt")]
    assert len(processor) == 1, f"{where}: command processor probed: {mine}"
    for fn in ("processPipeline", "processTxPipeline"):
        assert fn in mine, (f"{where}: {fn} not probed ({mine}); the binary's "
                            f"(*baseClient).process* functions: {redis_symbols(binary)}")
    return mine


def finish(g):
    """GOSPAN's exit status once it has exited after the SIGTERM it was sent (Gospan.stop()
    would send another), with all its output read."""
    try:
        g.proc.wait(STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        g.proc.kill()
        g.proc.wait(10)
        raise AssertionError(f"gospan did not exit within {STOP_TIMEOUT:.0f} s of SIGTERM\n"
                             f"{g.stderr}") from None
    finally:
        g.out.join()
        g.err.join()
    g.returncode = g.proc.returncode
    return g.returncode


def run_cell(cell, build, start_gospan, receiver, pg, rd, my):
    """Runs CELL once its build is done; raises what failed. Only one cell at a time has its
    service and gospan attached and answering (they share the databases' rows and keys); its
    gospan's exit, which waits for the kernel to remove its probes (0.8 s with uprobe_multi
    links, 4 to 6 s with a plain link per probe), overlaps the next cell's run."""
    lib, release, toolchain, flavour = cell
    where = db_matrix.cell_id(cell)
    with RESULTS.record(cell) as rec:
        binary = build.result()
        built_with = matrix.go_version(toolchain)
        rec["toolchain"] = matrix.toolchain_label(toolchain)
        if lib == "sql":
            assert built_with == release, (where, built_with)
        args = ("-pg", pg.dsn) + (("-redis", rd.addr) if lib == "redis" else ()) + \
            (("-mysql", my.dsn) if lib == "mysql" else ())
        svc = g = None
        took = rec["seconds"] = {}
        try:
            with ACTIVE:
                t0 = time.monotonic()
                svc = Service(binary, env=_clean_env(), args=args)
                g = start_gospan(svc.pid, receiver, args=("--verbose",))
                line = g.wait_attached()
                t1 = time.monotonic()
                took["attach"] = round(t1 - t0, 2)
                source, steps = check_attach(cell, line, built_with, binary)
                rec.update(source=source, steps=steps)
                # pgx's ends are inside its methods, after their inner calls, where amd64
                # emulates the instruction (arm64 single-steps the entries instead)
                if lib == "pgx" and platform.machine() == "x86_64":
                    assert steps == 0, f"{where}: a pgx query is single-stepped:\n{line}"
                # go-redis's where its retry loop is over, on emulated instructions too
                if lib == "redis" and platform.machine() == "x86_64":
                    assert steps == 0, f"{where}: a go-redis command is single-stepped:\n{line}"
                r = Requests(svc, g, receiver, where)
                if lib == "sql":
                    run_sql(r, pg, where)
                elif lib == "pgx":
                    run_pgx(r, pg, where)
                elif lib == "mysql":
                    run_mysql(r, my, where)
                else:
                    run_redis(r, rd, where)
                g.proc.send_signal(signal.SIGTERM)
                t2 = time.monotonic()
                took["requests"] = round(t2 - t1, 2)
            status = finish(g)
            took["exit"] = round(time.monotonic() - t2, 2)
            assert status == 0, f"{where}: gospan exited {g.returncode}\n{g.stderr}"
        finally:
            if g is not None and g.proc.poll() is None:
                g.proc.kill()
            if svc is not None:
                svc.stop()
        rec["probed"] = check_probed(cell, g.stderr, binary)
        summary = g.summary_line() or ""
        # every call a span: nothing dropped, nothing left in flight
        assert " dropped 0;" in summary and " in flight 0," in summary, f"{where}: {summary}"
        rec["result"] = f"verified ({source})"


@pytest.fixture(scope="module")
def runs(request, builds, start_gospan, otlp_receiver, postgres_server, redis_server,
         mariadb_server):
    """cell -> future of run_cell(cell), every selected cell submitted in order."""
    def run(c):
        return run_cell(c, builds[c], start_gospan, otlp_receiver, postgres_server, redis_server,
                        mariadb_server)
    yield from matrix.in_background(run, matrix.selected_cells(request), RUN_JOBS)


@pytest.mark.parametrize("cell", CASES, ids=[db_matrix.cell_id(c) for c in CASES])
def test_db_version_is_traced(cell, runs):
    runs[cell].result()


@pytest.fixture(scope="module", autouse=True)
def _write_compatibility():
    yield from matrix.write_compatibility(db_matrix, RESULTS, CASES, "dbmix-*")
