"""The statement table (tests/unit/testdata/sql_statements.tsv), which test_dbquery checks
against gospan's statement reader, checked against the databases themselves and then against
gospan's spans.

- Each `run` statement runs on its own database, in the table's order, after a setup that makes
  the tables it uses: PostgreSQL through psql in a scratch database, SQLite through Python's
  sqlite3 (the real SQLite library), MySQL through MariaDB (the `mariadb_server` fixture).
  A statement the database rejects is a wrong case: the table holds only forms that run.
- Where the database names the table a statement writes, that is the case's table: PostgreSQL's
  `EXPLAIN (VERBOSE)` plan ("Insert on public.items"), SQLite's `EXPLAIN` program (the tables
  its OpenWrite instructions open, by root page), MariaDB's `EXPLAIN` (its table column).
- Through dbmix (`/sql/run`) traced by gospan, each PostgreSQL statement on lib/pq, each SQLite
  statement on modernc's driver and each MySQL statement on go-sql-driver/mysql (against the
  MariaDB) makes one CLIENT span whose name, db.operation.name, db.collection.name,
  db.query.summary and db.stored_procedure.name are the table's.
"""

import re
import secrets
import sqlite3
import subprocess
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import STATUS_ERROR, Service, _clean_env, perform, wait_until
from datastores import EVERY_DRIVER, built_dbmix

TABLE = Path(__file__).resolve().parents[1] / "unit" / "testdata" / "sql_statements.tsv"
SPAN_KIND_SERVER, SPAN_KIND_CLIENT = 2, 3
SPAN_TIMEOUT = 15.0
DML = ("INSERT", "UPDATE", "DELETE", "MERGE", "REPLACE")


@dataclass
class Case:
    line: int
    dialect: str
    kind: str
    statement: str
    operation: str
    collection: str
    summary: str
    procedure: str
    note: str

    def __str__(self):
        return f"sql_statements.tsv:{self.line} ({self.dialect}): {self.statement}"


def load_cases():
    cases = []
    for n, line in enumerate(TABLE.read_text().split("\n"), 1):
        if not line or line.startswith("#"):
            continue
        f = line.split("\t")
        assert len(f) in (7, 8), f"sql_statements.tsv:{n}: {len(f)} columns"
        cases.append(Case(n, *f[:7], f[7] if len(f) == 8 else ""))
    return cases


CASES = load_cases()


def cases_of(dialect, kinds=("run",)):
    return [c for c in CASES if c.dialect == dialect and c.kind in kinds]


def ids(cases):
    return [f"L{c.line}" for c in cases]


# The tables every dialect's statements use, made the same in each (types as each spells them).
def _setup(text_t, num_t, quote):
    q = quote
    return [
        f"CREATE TABLE items (id int PRIMARY KEY, name {text_t}, price {num_t})",
        f"CREATE TABLE orders (id int PRIMARY KEY, customer_id int, total {num_t}, "
        "order_date date)",
        f"CREATE TABLE customers (id int PRIMARY KEY, name {text_t})",
        f"CREATE TABLE shipping_details (id int, order_id int, address {text_t})",
        f"CREATE TABLE songs (id int, artist_id int, title {text_t})",
        f"CREATE TABLE artists (id int, name {text_t})",
        f"CREATE TABLE {q[0]}song list{q[-1]} (id int, title {text_t})",
        "INSERT INTO items (id, name, price) VALUES (42, 'widget', 9.99), (7, 'gadget', 19.5), "
        "(1, 'one', 1)",
        "INSERT INTO orders VALUES (1, 1, 12.5, '2026-01-02'), (42, 2, 30, '2026-02-03')",
        "INSERT INTO customers VALUES (1, 'ann'), (2, 'bob')",
    ]


PG_SETUP = _setup("text", "numeric", '""') + [
    'CREATE TABLE "Mixed Case" (id int)',
    "CREATE PROCEDURE add_item(i int, n text) LANGUAGE SQL "
    "AS $$ INSERT INTO items (id, name) VALUES (i, n) $$",
]
SQLITE_SETUP = _setup("text", "numeric", "[]")
MYSQL_SETUP = _setup("varchar(100)", "decimal(10, 2)", "``") + [
    "CREATE TABLE events (id int, note varchar(100)) ENGINE=MyISAM",
    "CREATE PROCEDURE add_item(IN i int, IN n varchar(100)) "
    "INSERT INTO items (id, name) VALUES (i, n)",
]
MYSQL_DB = "shop"  # the cases' schema-qualified MySQL names say shop.items


def unquote(name):
    """schema.table as a database prints it, quotes of any kind taken off."""
    return ".".join(p.strip('"`[]') for p in re.findall(r'"[^"]*"|`[^`]*`|\[[^]]*\]|[^.]+',
                                                          name))


def first_target(case):
    """The first table after the case's own operation in its summary, quotes off."""
    parts = re.findall(r'"[^"]*"(?:\.\S+)?|`[^`]*`(?:\.\S+)?|\[[^]]*\](?:\.\S+)?|\S+',
                       case.summary)
    i = parts.index(case.operation)
    rest = parts[i + 1:]
    return unquote(rest[0]) if rest and not rest[0].isupper() else None


def same_table(named, want):
    """Whether the database's NAMED (schema.table) is WANT (table, or schema.table)."""
    return named == want if "." in want else named.rsplit(".", 1)[-1] == want


# ---- PostgreSQL -----------------------------------------------------------------------------


def psql(server, sql, database):
    """SQL's result through psql (stdin empty: COPY FROM STDIN reads no rows)."""
    cmd = [str(server.bindir / "psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
           "-h", server.host, "-p", str(server.port), "-U", server.user, "-d", database,
           "-c", sql]
    res = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 0, f"psql -c {sql!r} failed: {res.stderr.strip()}"
    return res.stdout.rstrip("\n")


def fresh_pg_database(server, name):
    server.query(f"DROP DATABASE IF EXISTS {name}")
    server.query(f"CREATE DATABASE {name}")
    for sql in PG_SETUP:
        server.query(sql, database=name)


def pg_written_table(server, case, database):
    """The table PostgreSQL's plan says the statement writes: 'Insert on public.items'."""
    plan = psql(server, f"EXPLAIN (VERBOSE, COSTS OFF) {case.statement}", database)
    part = r'(?:"[^"]*"|[^\s."]+)'
    m = re.match(rf"\s*(Insert|Update|Delete|Merge) on ({part}(?:\.{part})*)", plan)
    assert m, f"{case}: no 'X on table' in the plan:\n{plan}"
    return unquote(m.group(2))


def test_postgresql_runs_every_statement(postgres_server):
    """Every PostgreSQL statement runs, in order, and the plan's table is the case's."""
    db = "sql_dialects_direct"
    fresh_pg_database(postgres_server, db)
    checked = 0
    for case in cases_of("postgresql"):
        if case.operation in DML:
            named = pg_written_table(postgres_server, case, db)
            want = case.collection or first_target(case)
            assert want and same_table(named, want), f"{case}: the plan writes {named}"
            checked += 1
        try:
            psql(postgres_server, case.statement, db)
        except AssertionError as e:
            raise AssertionError(f"{case}: {e}") from None
    assert checked >= 10


# ---- SQLite ---------------------------------------------------------------------------------


def fresh_sqlite(path):
    path.unlink(missing_ok=True)
    con = sqlite3.connect(path, isolation_level=None)
    for sql in SQLITE_SETUP:
        con.execute(sql)
    return con


def sqlite_written_tables(con, sql):
    """The tables SQLite's program for SQL opens for writing (OpenWrite on a table's root)."""
    roots = {r: n for n, r in con.execute(
        "SELECT name, rootpage FROM sqlite_schema WHERE type = 'table'")}
    prog = con.execute(f"EXPLAIN {sql}").fetchall()
    # columns: addr, opcode, p1, p2, p3, p4, p5, comment
    return {roots[p2] for _, op, _, p2, *_ in prog if op == "OpenWrite" and p2 in roots}


def test_sqlite_runs_every_statement(tmp_path):
    con = fresh_sqlite(tmp_path / "direct.sqlite")
    checked = 0
    try:
        for case in cases_of("sqlite"):
            if case.operation in DML:
                want = case.collection or first_target(case)
                written = sqlite_written_tables(con, case.statement)
                assert {want.rsplit(".", 1)[-1]} == written, f"{case}: writes {written}"
                checked += 1
            try:
                con.execute(case.statement).fetchall()
            except sqlite3.Error as e:
                raise AssertionError(f"{case}: {e}") from None
    finally:
        con.close()
    assert checked >= 10


# ---- MySQL (MariaDB) ------------------------------------------------------------------------


def mysql_rows(out):
    return [re.split(r"\t|\|", line) for line in out.splitlines() if line]


def fresh_mysql_database(server, name):
    # The fixture's database is dbmix's other tests': one of ours, which its user may use.
    server.fresh_database(name)
    for sql in MYSQL_SETUP:
        server.query(sql, database=name)


def test_mysql_runs_every_statement(mariadb_server):
    fresh_mysql_database(mariadb_server, MYSQL_DB)
    checked = 0
    for case in cases_of("mysql"):
        if case.operation in DML and case.collection:
            # MariaDB's EXPLAIN of a write lists the tables it reads and writes by name
            rows = mysql_rows(mariadb_server.query(f"EXPLAIN {case.statement}", database=MYSQL_DB))
            assert any(case.collection.rsplit(".", 1)[-1] in r for r in rows), (str(case), rows)
            checked += 1
        try:
            mariadb_server.query(case.statement, database=MYSQL_DB)
        except AssertionError as e:
            raise AssertionError(f"{case}: {e}") from None
    assert checked >= 10


# ---- through gospan -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dbmix_bin():
    # The build test_datastores makes (every driver dbmix has), so that the cache serves both.
    return built_dbmix(EVERY_DRIVER)


class Traced:
    """dbmix with a gospan on it, exporting to RECEIVER."""

    def __init__(self, svc, gospan, receiver):
        self.svc, self.gospan, self.receiver = svc, gospan, receiver
        self.runs = {}  # trace id -> the statement run under it

    def get(self, path):
        """GET PATH under a trace of its own, whatever it answers: (trace id, req)."""
        trace_id, parent = secrets.token_hex(16), secrets.token_hex(8)

        class Req:
            error = None
        req = Req()
        perform(req, self.svc.port, target=path,
                headers={"traceparent": f"00-{trace_id}-{parent}-01"})
        assert req.error is None, f"{path}: {req.error}"
        return bytes.fromhex(trace_id), req

    def run(self, driver, statement):
        """STATEMENT through /sql/run on DRIVER: its one CLIENT span, and the request."""
        trace_id, req = self.get(f"/sql/run?driver={driver}&q="
                                 f"{urllib.parse.quote(statement, safe='')}")

        def mine():
            return [s for s in self.receiver.snapshot() if s.trace_id == trace_id]
        self.runs[trace_id] = statement
        assert wait_until(lambda: len(mine()) >= 2, SPAN_TIMEOUT), \
            (f"{statement}: {req.got_status} {req.got_body!r}, spans "
             f"{[(s.name, s.kind) for s in mine()]}\n{self.gospan.stderr}")
        # A span too many would come with the others; stop_traced() counts them all again once
        # gospan has sent everything.
        clients = [s for s in mine() if s.kind == SPAN_KIND_CLIENT]
        assert len(clients) == 1, (statement, [(s.name, s.attrs) for s in mine()])
        return clients[0], req


def start_traced(binary, args, start_gospan, receiver):
    svc = Service(binary, env=_clean_env(), args=args)
    try:
        g = start_gospan(svc.pid, receiver)
        line = g.wait_attached()
        assert " + SQL (database/sql" in line, line
    except BaseException:
        svc.stop()
        raise
    return Traced(svc, g, receiver)


def stop_traced(t):
    """Stops gospan (which sends what it holds first) and dbmix; then every statement run must
    have made exactly one CLIENT span, none dropped."""
    try:
        assert t.gospan.stop() == 0, t.gospan.stderr
        summary = t.gospan.summary_line()
        assert summary and " dropped 0;" in summary, summary
        clients = {}
        for s in t.receiver.snapshot():
            if s.trace_id in t.runs and s.kind == SPAN_KIND_CLIENT:
                clients[s.trace_id] = clients.get(s.trace_id, 0) + 1
        extra = [(t.runs[tid], n) for tid, n in clients.items() if n != 1]
        assert not extra, f"statements with more than one CLIENT span: {extra}"
    finally:
        t.svc.stop()


@pytest.fixture(scope="module")
def traced(dbmix_bin, postgres_server, start_gospan, otlp_receiver, tmp_path_factory):
    """dbmix on a scratch PostgreSQL database and SQLite file, both set up, with gospan on it."""
    db = "sql_dialects_spans"
    fresh_pg_database(postgres_server, db)
    lite = tmp_path_factory.mktemp("sql_dialects") / "spans.sqlite"
    fresh_sqlite(lite).close()
    dsn = (f"postgres://{postgres_server.user}@{postgres_server.host}:{postgres_server.port}/"
           f"{db}?sslmode=disable")
    t = start_traced(dbmix_bin, ("-pg", dsn, "-sqlite", str(lite)), start_gospan,
                     otlp_receiver)
    yield t
    stop_traced(t)


def check_span(span, case, system):
    a = span.attrs
    got = (span.name, a.get("db.operation.name", ""), a.get("db.collection.name", ""),
           a.get("db.query.summary", ""), a.get("db.stored_procedure.name", ""))
    want = (case.summary or case.operation or system, case.operation, case.collection,
            case.summary, case.procedure)
    assert got == want, (f"{case}: span (name, operation, collection, summary, procedure) "
                         f"{got}, want {want}")
    assert a["db.system.name"] == system, a


@pytest.mark.parametrize("case", cases_of("postgresql"), ids=ids(cases_of("postgresql")))
def test_postgresql_span(traced, case):
    span, req = traced.run("pq", case.statement)
    check_span(span, case, "postgresql")
    if req.got_status != 200:
        # lib/pq declines COPY FROM STDIN through Exec: the failure is on the span
        assert case.statement.startswith("COPY") and span.status_code == STATUS_ERROR, \
            (str(case), req.got_status, req.got_body)


@pytest.mark.parametrize("case", cases_of("sqlite"), ids=ids(cases_of("sqlite")))
def test_sqlite_span(traced, case):
    span, req = traced.run("sqlite", case.statement)
    assert req.got_status == 200, (str(case), req.got_body)
    check_span(span, case, "sqlite")


@pytest.fixture(scope="module")
def traced_mysql(dbmix_bin, mariadb_server, start_gospan, otlp_receiver):
    """A dbmix of its own on MariaDB (so that PostgreSQL's and SQLite's never depend on it)."""
    fresh_mysql_database(mariadb_server, MYSQL_DB)
    dsn = f"{mariadb_server.user}:{mariadb_server.password}@tcp({mariadb_server.host}:{mariadb_server.port})/{MYSQL_DB}"
    t = start_traced(dbmix_bin, ("-mysql", dsn), start_gospan, otlp_receiver)
    yield t
    stop_traced(t)


@pytest.mark.parametrize("case", cases_of("mysql"), ids=ids(cases_of("mysql")))
def test_mysql_span(traced_mysql, case):
    span, req = traced_mysql.run("mysql", case.statement)
    assert req.got_status == 200, (str(case), req.got_body)
    check_span(span, case, "mysql")
