"""MySQL CLIENT spans: database/sql through go-sql-driver/mysql, on dbmix (tests/e2e/dbmix, its
?driver=mysql) against a real MariaDB that the session starts (datastores.mariadb_server),
traced by a gospan as test_datastores.py traces the other drivers (its traced_service and start_dbmix).

Besides the calls every driver makes (a query with literals, INSERT/UPDATE/DELETE, a statement
the driver prepares on the server and runs 100 times, a transaction, a syntax error, a query
cancelled by its context, a password literal), the MySQL dialect's quoting rules: statements
sent through /sql/run with backslash escapes in strings, '#' and "-- " comments, "..." strings
holding \\", and a "--" that is no comment (3--1 is 3 - -1). For each, the server's general query
log must show it received exactly the statement sent, and the server's data must show how it
read it (so the form reached and ran on the server as that text); the span's db.query.text must
be the statement with every literal replaced by '?' and the comments dropped, and no secret
written in any of them (nor the DSN's password) may appear in any span.

The error number (error.type and db.response.status_code "1064") and server.address/port need
gospan's reading of the driver's values (*mysql.MySQLError's Number, the connection's
Config.Addr), which came on main on 2026-11-28; their failure messages say so.
"""

import urllib.parse

import pytest

from conftest import STATUS_ERROR, STATUS_UNSET, wait_until
from datastores import EVERY_DRIVER, built_dbmix
from test_datastores import check_db_span, start_dbmix, traced_service

SYSTEM = "mysql"
PASSWORD = "hunter2-SECRET-pw"


@pytest.fixture(scope="module")
def dbmix_bin():
    return built_dbmix(EVERY_DRIVER)


@pytest.fixture(scope="module")
def traced(dbmix_bin, postgres_server, redis_server, mariadb_server, start_gospan, otlp_receiver,
           tmp_path_factory):
    svc = start_dbmix(dbmix_bin, postgres_server, redis_server, tmp_path_factory.mktemp("dbmix"),
                      mysql=mariadb_server)
    with traced_service(svc, start_gospan, otlp_receiver) as t:
        yield t


def no_secret_in_any_span(receiver, *secrets):
    for s in receiver.snapshot():
        blob = repr((s.name, s.attrs, s.status_message, s.resource))
        for secret in secrets:
            assert secret not in blob, (secret, blob)


def test_select_with_literals_is_sanitized(traced):
    _, (span,) = traced.trace("/sql/select?driver=mysql", 1)
    check_db_span(span, SYSTEM, "SELECT items",
                  "SELECT id, name FROM items WHERE id = ? AND name = ?", "SELECT", "items")
    assert span.status_code == STATUS_UNSET


def test_insert_update_delete(traced, mariadb_server):
    for path, op in (("insert", "INSERT"), ("update", "UPDATE"), ("delete", "DELETE")):
        _, (span,) = traced.trace(f"/sql/{path}?driver=mysql", 1)
        assert span.name == f"{op} items", span.attrs
        assert span.attrs["db.system.name"] == SYSTEM
        assert span.attrs["db.operation.name"] == op
        assert span.attrs["db.collection.name"] == "items"
        text = span.attrs["db.query.text"]
        assert text.startswith(op) and not any(ch.isdigit() for ch in text), text
        assert span.status_code == STATUS_UNSET


def test_prepared_statement_reused_100_times(traced, mariadb_server):
    before = len(mariadb_server.general_log(("Prepare", "Execute")))
    _, spans = traced.trace("/sql/prepared?driver=mysql&n=100", 100)
    for s in spans:
        check_db_span(s, SYSTEM, "SELECT items", "SELECT name FROM items WHERE id = ?", "SELECT",
                      "items")
    for a, b in zip(spans, spans[1:]):
        assert a.end_ns <= b.start_ns
    # The driver prepared it on the server once and executed it there 100 times.
    got = mariadb_server.general_log(("Prepare", "Execute"))[before:]
    assert [(e.command, e.text) for e in got] == \
        [("Prepare", "SELECT name FROM items WHERE id = ?")] + \
        [("Execute", "SELECT name FROM items WHERE id = 42")] * 100, got[:3]


def test_transaction(traced, mariadb_server):
    before = len(mariadb_server.general_log())
    _, (begin, insert, count, commit) = traced.trace("/sql/tx?driver=mysql", 4)
    for span, op in ((begin, "BEGIN"), (commit, "COMMIT")):
        # what the driver sends for them (START TRANSACTION, COMMIT) is its own: no text
        assert span.name == op and span.attrs["db.operation.name"] == op, span.attrs
        assert span.attrs["db.system.name"] == SYSTEM and "db.query.text" not in span.attrs
        assert span.status_code == STATUS_UNSET
    assert insert.name == "INSERT items" and insert.attrs["db.operation.name"] == "INSERT"
    assert insert.attrs["db.query.text"] == \
        "INSERT INTO items (id, name, price) VALUES (?, ?, ?)"
    assert count.name == "SELECT items"
    assert count.attrs["db.query.text"] == "SELECT count(*) FROM items"
    sent = [e.text for e in mariadb_server.general_log()[before:]]
    assert sent[0] == "START TRANSACTION" and sent[-1] == "COMMIT", sent


def test_failing_query_has_the_error_number(traced):
    _, (span,) = traced.trace("/sql/error?driver=mysql", 1, status=500)
    assert span.status_code == STATUS_ERROR
    assert span.attrs["db.query.text"] == "SELEC ?"
    # messages may quote values: only with --db-query-text=raw
    assert span.status_message == ""
    # 1064: ER_PARSE_ERROR, as MariaDB and MySQL number it
    assert span.attrs.get("error.type") == "1064", span.attrs
    assert span.attrs.get("db.response.status_code") == "1064", span.attrs


def test_query_cancelled_by_its_context(traced):
    _, (span,) = traced.trace("/sql/cancel?driver=mysql", 1, status=500)
    assert span.status_code == STATUS_ERROR
    assert span.attrs["db.query.text"] == "SELECT SLEEP(?)"
    assert span.attrs["error.type"], span.attrs
    # the 100 ms deadline ended it (the driver closes the connection), not the 5 s sleep
    assert 90e6 <= span.end_ns - span.start_ns < 3e9, span.end_ns - span.start_ns
    # and the pool goes on
    _, (span,) = traced.trace("/sql/select?driver=mysql", 1)
    assert span.status_code == STATUS_UNSET


def test_password_literal_never_leaves(traced, mariadb_server):
    _, (span,) = traced.trace("/sql/password?driver=mysql", 1)
    assert span.attrs["db.query.text"] == "UPDATE users SET password = ? WHERE name = ?"
    assert mariadb_server.query("SELECT password FROM users WHERE name = 'admin'") == PASSWORD
    no_secret_in_any_span(traced.receiver, "hunter2", "SECRET", mariadb_server.password)


def test_goroutine_started_by_the_handler(traced):
    _, (span,) = traced.trace("/sql/goroutine?driver=mysql", 1)
    assert span.name == "SELECT" and span.attrs["db.query.text"] == "SELECT ?"


def test_server_address_and_port(traced, mariadb_server):
    _, (span,) = traced.trace("/sql/select?driver=mysql", 1)
    # go-sql-driver/mysql's Config.Addr, from the DSN's tcp(host:port)
    assert span.attrs.get("server.address") == mariadb_server.host, span.attrs
    assert span.attrs.get("server.port") == mariadb_server.port, span.attrs


# ---- the dialect's quoting rules, on the wire -------------------------------------------------

# (id, statement sent, db.query.text expected, SQL reading what the statement did, its result).
# Each statement holds secrets (S3CRET-x) in its literals and comments, and each form is one a
# sanitizer with another dialect's rules would read differently: PostgreSQL ends '...' at the
# quote after a backslash, takes "..." for an identifier and "--1" for a comment, and has no '#'
# comments; the quotes inside the comments would open strings to a lexer that missed them.
DIALECT_CASES = [
    ("backslash-escapes",
     r"UPDATE users SET password = 'it\'s a \\ S3CRET-a' WHERE name = 'admin'",
     "UPDATE users SET password = ? WHERE name = ?",
     "SELECT password FROM users WHERE name = 'admin'", "it's a \\ S3CRET-a"),
    ("hash-comment",
     "UPDATE users SET password = 'S3CRET-b' # it's S3CRET-c\nWHERE name = 'guest'",
     "UPDATE users SET password = ? \nWHERE name = ?",
     "SELECT password FROM users WHERE name = 'guest'", "S3CRET-b"),
    ("dash-dash-space-comment",
     "UPDATE users SET password = 'S3CRET-d' -- it's S3CRET-e\nWHERE name = 'guest'",
     "UPDATE users SET password = ? \nWHERE name = ?",
     "SELECT password FROM users WHERE name = 'guest'", "S3CRET-d"),
    ("double-quoted-string",
     r'UPDATE users SET password = "S3CRET-f \" quoted \"" WHERE name = "admin"',
     "UPDATE users SET password = ? WHERE name = ?",
     "SELECT password FROM users WHERE name = 'admin'", 'S3CRET-f " quoted "'),
    # 3--1 is 3 - -1 = 4: only the guest's id changes (were "--1 ..." a comment, every id
    # would be 3).
    ("minus-minus-not-a-comment",
     "UPDATE users SET id = 3--1 WHERE name = 'guest' OR password = 'S3CRET-g'",
     "UPDATE users SET id = ?--? WHERE name = ? OR password = ?",
     "SELECT name, id FROM users ORDER BY name", "admin|1\nguest|4"),
]


@pytest.mark.parametrize("sent,text,check,want", [c[1:] for c in DIALECT_CASES],
                         ids=[c[0] for c in DIALECT_CASES])
def test_dialect_quoting_on_the_wire(traced, mariadb_server, sent, text, check, want):
    mariadb_server.query("UPDATE users SET id = 1, password = 'initial-pw' WHERE name = 'admin'")
    mariadb_server.query("UPDATE users SET id = 2, password = 'guest-pw' WHERE name = 'guest'")
    before = len(mariadb_server.general_log())
    # run, not a helper dbmix has for it: the statement goes to ExecContext as it is
    _, (span,) = traced.trace("/sql/run?" + urllib.parse.urlencode({"driver": "mysql",
                                                                     "q": sent}), 1)
    # the server received exactly that text, and read it as MySQL does
    assert wait_until(lambda: any(e.text == sent
                                  for e in mariadb_server.general_log()[before:]), 5.0), \
        (sent, mariadb_server.general_log()[before:])
    assert mariadb_server.query(check) == want
    assert span.status_code == STATUS_UNSET, span.attrs
    assert span.attrs["db.system.name"] == SYSTEM
    assert span.attrs["db.operation.name"] == "UPDATE"
    assert span.name.startswith("UPDATE"), span.name
    assert span.attrs["db.query.text"] == text, span.attrs
    no_secret_in_any_span(traced.receiver, "S3CRET")
