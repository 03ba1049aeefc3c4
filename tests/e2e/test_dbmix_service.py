"""dbmix itself, without gospan: the service the database tracing tests drive must do what its
README says against real servers, or a tracer test failing could be the service's fault.

dbmix is built with every driver (lib/pq, pgx, go-redis, modernc.org/sqlite, go-sql-driver/mysql)
by the installed Go and run against the session's PostgreSQL, Redis and MariaDB (datastores.py) and
a SQLite file; every endpoint is called for every driver and its status and body checked exactly,
and what the writes did is read back through psql, a raw Redis connection, Python's sqlite3 or the
mariadb client, not through dbmix. Then the pq-only build, which old toolchains build: with
Debian's Go 1.19 and with go1.21.13 through the module proxy. No BPF and no root needed (PostgreSQL
then runs as the test's own user).
"""

import http.client
import os
import re
import sqlite3
import subprocess
import time

import pytest

from conftest import Service, _clean_env
from datastores import DEBIAN_GO, WITH_ORMS, BuildError, RedisError, build_dbmix

SQL_DRIVERS = ["pq", "pgx", "sqlite", "mysql"]

# What each driver says about `SELEC 1` and about the 100 ms deadline on `pg_sleep(5)` (MySQL:
# `SLEEP(5)`), exactly
# (the server's words for PostgreSQL, through each driver's wrapping; dbmix adds the context's
# error where the driver's text lacks it). lib/pq's wording changed after v1.10.9, the release
# the old-Go builds use.
SYNTAX_ERRORS = {
    "pq": 'pq: syntax error at or near "SELEC" at column 1 (42601)',
    "pq-v1.10.9": 'pq: syntax error at or near "SELEC"',
    "pgx": 'ERROR: syntax error at or near "SELEC" (SQLSTATE 42601)',
    "sqlite": 'SQL logic error: near "SELEC": syntax error (1)',
    "mysql": "Error 1064 (42000): You have an error in your SQL syntax; check the manual that "
             "corresponds to your MariaDB server version for the right syntax to use near "
             "'SELEC 1' at line 1",
}
CANCEL_ERRORS = {
    "pq": "pq: canceling statement due to user request (57014) (context deadline exceeded)",
    "pgx": "timeout: context deadline exceeded",
    "mysql": "context deadline exceeded",
}


@pytest.fixture(scope="session", autouse=True)
def _e2e_prerequisites():
    """Overrides conftest's: no gospan runs here, so neither root nor BPF is needed."""


def _build(**kw):
    try:
        return build_dbmix(None, **kw)
    except BuildError as e:
        pytest.fail(str(e))


@pytest.fixture(scope="module")
def dbmix_bin():
    if not _which("go"):
        pytest.skip("Go is not installed; it is needed to build dbmix")
    return _build(**WITH_ORMS)


def _which(name):
    return any(os.access(os.path.join(d, name), os.X_OK)
               for d in os.environ.get("PATH", "").split(os.pathsep) if d)


@pytest.fixture(scope="module")
def dbmix(dbmix_bin, postgres_server, redis_server, mariadb_server, tmp_path_factory):
    sqlite_file = tmp_path_factory.mktemp("dbmix") / "dbmix.sqlite"
    svc = Service(dbmix_bin, env=_clean_env(),
                  args=("-pg", postgres_server.dsn, "-redis", redis_server.addr,
                        "-sqlite", str(sqlite_file), "-mysql", mariadb_server.dsn))
    svc.sqlite_file = sqlite_file
    yield svc
    assert svc.stop() == 0, f"dbmix exited badly:\n{svc.err.text}"


def get(svc, path, timeout=15.0):
    """(status, body without its final newline) of GET PATH on a connection of its own."""
    c = http.client.HTTPConnection(svc.host, svc.port, timeout=timeout)
    try:
        c.request("GET", path, headers={"Connection": "close"})
        resp = c.getresponse()
        return resp.status, resp.read().decode().removesuffix("\n")
    finally:
        c.close()


def ok(svc, path):
    status, body = get(svc, path)
    assert status == 200, f"GET {path}: {status} {body}"
    return body


def read_back(driver, server, svc, sql):
    """SQL's rows as tuples of strings, read by psql (pq, pgx), the mariadb client (mysql) or
    Python's sqlite3."""
    if driver == "sqlite":
        with sqlite3.connect(svc.sqlite_file) as db:
            return [tuple(str(v) for v in row) for row in db.execute(sql)]
    out = server.query(sql)
    return [tuple(line.split("|")) for line in out.splitlines()] if out else []


@pytest.mark.parametrize("driver", SQL_DRIVERS)
def test_sql_routes(dbmix, postgres_server, mariadb_server, driver):
    q = f"driver={driver}"
    server = mariadb_server if driver == "mysql" else postgres_server

    def read(sql):
        return read_back(driver, server, dbmix, sql)

    assert ok(dbmix, f"/sql/setup?{q}") == "setup: items 3 rows, users 2 rows"
    assert ok(dbmix, f"/sql/setup?{q}") == "setup: items 3 rows, users 2 rows"  # idempotent
    assert read("SELECT id, name FROM items ORDER BY id") == [
        ("7", "gadget"), ("8", "gizmo"), ("42", "widget")]
    assert ok(dbmix, f"/sql/select?{q}") == "1 row: 42 widget"

    body = ok(dbmix, f"/sql/insert?{q}")
    m = re.fullmatch(r"insert: 1 row \(id (\d+)\)", body)
    assert m, body
    new = int(m.group(1))
    assert 1000 <= new < 1001000
    assert [(n, float(p)) for n, p in read(f"SELECT name, price FROM items WHERE id = {new}")] \
        == [("inserted", 1.25)]
    assert ok(dbmix, f"/sql/update?{q}") == f"update: 1 row (id {new})"
    assert [float(p) for p, in read(f"SELECT price FROM items WHERE id = {new}")] == [2.5]
    assert ok(dbmix, f"/sql/delete?{q}") == f"delete: 1 row (id {new})"
    assert read(f"SELECT id FROM items WHERE id = {new}") == []
    assert ok(dbmix, f"/sql/delete?{q}") == f"delete: 0 rows (id {new})"
    assert ok(dbmix, f"/sql/update?{q}&id=42") == "update: 1 row (id 42)"

    assert ok(dbmix, f"/sql/prepared?{q}") == "prepared: 100 queries, name widget"
    assert ok(dbmix, f"/sql/prepared?{q}&n=7") == "prepared: 7 queries, name widget"

    # Three rows from setup, the inserted one deleted: the transaction's own insert is the 4th.
    assert ok(dbmix, f"/sql/tx?{q}") == "tx: committed, items 4"
    assert ok(dbmix, f"/sql/tx?{q}") == "tx: committed, items 5"
    assert read("SELECT count(*) FROM items WHERE name = 'tx'") == [("2",)]

    assert get(dbmix, f"/sql/error?{q}") == (500, SYNTAX_ERRORS[driver])

    if driver == "sqlite":
        assert get(dbmix, f"/sql/cancel?{q}") == (
            400, "cancel: driver 'sqlite' has no sleep statement")
    else:
        t0 = time.monotonic()
        got = get(dbmix, f"/sql/cancel?{q}")
        took = time.monotonic() - t0
        assert got == (500, CANCEL_ERRORS[driver])
        # Not a timing test: the sleep ending on its own would take 5 s; this says it was
        # cut short by the 100 ms deadline.
        assert took < 4.0, f"/sql/cancel took {took:.1f} s"
        # The pool is usable after the cancelled call.
        assert ok(dbmix, f"/sql/select?{q}") == "1 row: 42 widget"

    assert read("SELECT password FROM users WHERE name = 'admin'") == [("initial-pw",)]
    assert ok(dbmix, f"/sql/password?{q}") == "password: 1 row"
    assert read("SELECT password FROM users WHERE name = 'admin'") == [("hunter2-SECRET-pw",)]
    assert read("SELECT password FROM users WHERE name = 'guest'") == [("guest-pw",)]

    assert ok(dbmix, f"/sql/goroutine?{q}") == "goroutine: 1"


def test_sql_driver_choice(dbmix):
    assert ok(dbmix, "/sql/goroutine") == "goroutine: 1"  # pq by default
    assert get(dbmix, "/sql/select?driver=oracle") == (
        400, "driver 'oracle' is not built in (built in: mysql, pgx, pq, sqlite)")
    assert get(dbmix, "/sql/update?driver=pq&id=x")[0] == 400


def test_pgx_routes(dbmix, postgres_server):
    assert ok(dbmix, "/sql/setup?driver=pgx") == "setup: items 3 rows, users 2 rows"
    postgres_server.query("UPDATE items SET price = 1 WHERE id = 42")
    assert ok(dbmix, "/pgx/query") == "1 row: 42 widget"
    assert ok(dbmix, "/pgx/queryrow") == "queryrow: widget"
    assert ok(dbmix, "/pgx/exec") == "exec: UPDATE 1"
    assert postgres_server.query("SELECT price FROM items WHERE id = 42") == "9.99"
    postgres_server.query("UPDATE items SET price = 1 WHERE id = 42")
    assert ok(dbmix, "/pgx/batch") == "batch: widget, 42, UPDATE 1"
    assert postgres_server.query("SELECT price FROM items WHERE id = 42") == "9.99"
    assert get(dbmix, "/pgx/error") == (500, SYNTAX_ERRORS["pgx"])
    assert get(dbmix, "/pgx/nothing")[0] == 404


def test_orm_routes(dbmix, postgres_server):
    pg = postgres_server.query
    assert ok(dbmix, "/sql/setup") == "setup: items 3 rows, users 2 rows"
    assert ok(dbmix, "/orm/setup") == "setup: orm_items 0 rows"
    body = ok(dbmix, "/orm/gorm/create")
    m = re.fullmatch(r"create: id (\d+)", body)
    assert m, body
    new = int(m.group(1))
    assert pg(f"SELECT name, price FROM orm_items WHERE id = {new}") == "gorm-widget|9.99"
    assert ok(dbmix, "/orm/gorm/first") == f"first: id {new}, gorm-widget 9.99"
    assert ok(dbmix, "/orm/gorm/update") == f"update: 1 row (id {new})"
    assert pg(f"SELECT price FROM orm_items WHERE id = {new}") == "2.50"
    assert ok(dbmix, "/orm/gorm/delete") == f"delete: 1 row (id {new})"
    assert pg("SELECT count(*) FROM orm_items") == "0"
    assert get(dbmix, "/orm/gorm/first") == (500, "record not found")
    assert ok(dbmix, "/orm/sqlx/get") == "get: 42 widget 9.99"
    assert ok(dbmix, "/orm/sqlx/select") == "select: 3 rows: 7 gadget; 8 gizmo; 42 widget"
    body = ok(dbmix, "/orm/sqlx/namedexec")
    m = re.fullmatch(r"namedexec: 1 row \(id (\d+)\)", body)
    assert m, body
    assert pg(f"SELECT name, price FROM items WHERE id = {m.group(1)}") == "named|5.50"


def test_redis_routes(dbmix, redis_server):
    r = redis_server.command
    r("DEL", "dbmix:key", "dbmix:missing", "dbmix:counter", "dbmix:text")
    assert ok(dbmix, "/redis/get") == "nil"
    assert ok(dbmix, "/redis/set") == "set: OK"
    assert r("GET", "dbmix:key") == "dbmix-value"
    assert ok(dbmix, "/redis/get") == "dbmix-value"
    assert ok(dbmix, "/redis/pipeline") == "pipeline: OK 2 2"
    assert ok(dbmix, "/redis/pipeline") == "pipeline: OK 2 2"  # SET first: the same each time
    assert r("GET", "dbmix:counter") == "2"
    assert get(dbmix, "/redis/error") == (500, "ERR value is not an integer or out of range")
    assert r("GET", "dbmix:text") == "not a number"
    assert ok(dbmix, "/redis/missing") == "nil"
    assert r("EXISTS", "dbmix:missing") == 0
    assert isinstance(r("INCR", "dbmix:text"), RedisError)  # the raw client sees errors too


def test_without_servers(dbmix_bin):
    """Flags left out: the routes of the missing servers say which flag they need."""
    svc = Service(dbmix_bin, env=_clean_env())
    try:
        assert get(svc, "/sql/select") == (400, "driver 'pq' needs -pg")
        assert get(svc, "/sql/select?driver=pgx") == (400, "driver 'pgx' needs -pg")
        assert get(svc, "/sql/select?driver=sqlite") == (400, "driver 'sqlite' needs -sqlite")
        assert get(svc, "/sql/select?driver=mysql") == (400, "driver 'mysql' needs -mysql")
        assert get(svc, "/pgx/query") == (400, "pgx needs -pg")
        assert get(svc, "/redis/get") == (400, "redis needs -redis")
        assert get(svc, "/orm/gorm/first") == (400, "orm needs -pg")
    finally:
        assert svc.stop() == 0, svc.err.text


@pytest.mark.parametrize("toolchain", [DEBIAN_GO, "go1.21.13"], ids=["debian-go1.19", "go1.21.13"])
def test_pq_only_build_with_old_go(postgres_server, toolchain):
    if "/" in toolchain and not os.access(toolchain, os.X_OK):
        pytest.skip(f"'{toolchain}' is missing: make deps installs Debian's golang-1.19 package")
    if "/" not in toolchain and not _which("go"):
        pytest.skip("Go is not installed; it fetches go1.21.13 through the module proxy")
    binary = _build(toolchain=toolchain)
    want = "go1.19" if "/" in toolchain else toolchain
    built_with = subprocess.run(["go", "version", str(binary)], capture_output=True, text=True,
                                check=True).stdout
    assert f": {want}" in built_with, built_with
    svc = Service(binary, env=_clean_env(), args=("-pg", postgres_server.dsn))
    try:
        assert ok(svc, "/sql/setup") == "setup: items 3 rows, users 2 rows"
        assert ok(svc, "/sql/select") == "1 row: 42 widget"
        assert get(svc, "/sql/error") == (500, SYNTAX_ERRORS["pq-v1.10.9"])
        # Only pq is built in.
        assert get(svc, "/sql/select?driver=pgx") == (
            400, "driver 'pgx' is not built in (built in: pq)")
        assert get(svc, "/pgx/query")[0] == 404
        assert get(svc, "/redis/get")[0] == 404
    finally:
        assert svc.stop() == 0, svc.err.text
