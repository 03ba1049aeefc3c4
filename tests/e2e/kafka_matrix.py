"""The kafka-go release matrix of test_kafka_versions.py: which releases of segmentio/kafka-go,
which Go toolchains, the builds of tests/e2e/kafkamix with kafka-go alone (cached across runs),
and the kafka-go section of COMPATIBILITY.md.

A cell is (client, release, toolchain, flavour):

- client as kafkamix/build.sh names it: kafkago (sarama would be cells of its own; franz-go
  has a CI slice only, franz_slice_cells(), run by test_kafka_franz.py);
- release: every kafka-go release from the first of its offset table (offsets/
  kafkago_offsets.json, v0.4.38) to the newest the module proxy lists. kafka-go has had one
  minor, v0.4, for years, so every patch is a cell; the proxy's list leaves out some releases
  it serves (v0.4.38 to v0.4.41, v0.4.43, v0.4.46), so every patch number between the first
  and the newest is asked for by version (releases());
- toolchain: "local" (the installed Go) or the oldest Go the release's go.mod allows among the
  releases test_go_versions.py builds with (router_matrix.oldest_go), and kafkamix too:
  KAFKAMIX_GO;
- flavour: plain, stripped or pie (matrix.FLAVOURS).

Builds are kafka.build_kafkamix()'s, kept in <cache>/kafkamix-<hash of kafkamix>/<go>-kafkago-
<release>[-<flags hash>]/ (test_kafka.py's build of the newest release is the plain cell's),
where <cache> is $GOSPAN_KAFKAMIX_CACHE, else $XDG_CACHE_HOME/gospan, else ~/.cache/gospan.

Run as a program it lists the cells, `python3 tests/e2e/kafka_matrix.py [--full]`, or rewrites
the kafka-go section of COMPATIBILITY.md from the results a run saved:
`python3 tests/e2e/kafka_matrix.py --page build/e2e/kafka-versions-full.json ["a note"]`.
"""

import json
import subprocess
import sys
import time

import matrix
from kafka import KAFKA_VERSION, build_kafkamix
from matrix import FLAVOURS, go_env, para, parse, shown_result, tally, toolchain_label
from router_matrix import oldest_go, toolchain_id

REPO = matrix.REPO
KAFKAGO = "github.com/segmentio/kafka-go"
TABLE = REPO / "offsets" / "kafkago_offsets.json"
CLIENT = "kafkago"
# The oldest Go kafkamix builds with: main.go uses strings.Cut (Go 1.18); go1.17.13 stops at
# "undefined: strings.Cut".
KAFKAMIX_GO = (1, 18)


def named(release):
    return f"kafka-go {release}"


# ---- cells --------------------------------------------------------------------------------------


def layouts():
    """The releases at which the layout of kafka-go's offset table changes ("v0.4.38",
    "v0.4.39": matrix.layout_starts)."""
    return matrix.layout_starts(TABLE)


def served(version):
    """Whether the module proxy serves kafka-go VERSION when asked for it by name (an answer
    the module cache keeps, so it is asked once a machine)."""
    res = subprocess.run(["go", "list", "-m", "-json", f"{KAFKAGO}@{version}"],
                         capture_output=True, text=True, timeout=300, env=go_env(), cwd="/")
    return res.returncode == 0 and json.loads(res.stdout).get("Version") == version


_RELEASES = []


def releases():
    """Every kafka-go release from the table's first to the newest the proxy lists: those it
    lists, the table's, and each other patch number of the same minor in between that it
    serves; sorted."""
    if not _RELEASES:
        table = ["v" + v for v in matrix.offset_table(TABLE)["versions"]]
        first = min(parse(v) for v in table)
        known = {v for v in matrix.module_releases(KAFKAGO) + table if parse(v) >= first}
        newest = max(parse(v) for v in known)
        if newest[:2] == first[:2]:
            for patch in range(first[2] + 1, newest[2]):
                v = "v" + ".".join(map(str, (*first[:2], patch)))
                if v not in known and served(v):
                    known.add(v)
        _RELEASES.extend(sorted(known, key=parse))
    return list(_RELEASES)


def unlisted():
    """The releases of releases() the module proxy serves but does not list."""
    listed = set(matrix.module_releases(KAFKAGO))
    return [v for v in releases() if v not in listed]


_OLDEST = {}


def toolchains(release):
    """The installed Go, and the oldest RELEASE's go.mod (and kafkamix) allows where it is
    another release."""
    if release not in _OLDEST:
        want = max(parse(matrix.go_directive(KAFKAGO, release) or "1.17"), KAFKAMIX_GO)
        got = oldest_go(want)
        if not got:
            raise RuntimeError(f"{named(release)} needs Go {'.'.join(map(str, want))}, newer "
                               f"than every release test_go_versions.py builds with")
        _OLDEST[release] = got
    old = _OLDEST[release]
    return ["local"] + ([old] if parse(matrix.go_version(old)) <
                        parse(matrix.go_version("local")) else [])


def full_cells():
    return [(CLIENT, v, tc, f) for v in releases() for tc in toolchains(v) for f in FLAVOURS]


def slice_cells():
    """The CI slice: the first release of every layout of the offset table (v0.4.38, with the
    oldest Go it allows, and v0.4.39), stripped (no DWARF: the offsets are the table's); then
    the newest release the table names (matrix.table_newest), plain, stripped and PIE, with
    the installed Go."""
    starts = layouts()
    cells = [(CLIENT, v, toolchains(v)[-1] if v == starts[0] else "local", "stripped")
             for v in starts]
    cells += [(CLIENT, matrix.table_newest(TABLE), "local", f) for f in FLAVOURS]
    return list(dict.fromkeys(cells))


# ---- franz-go: the CI slice only ------------------------------------------------------------

FRANZ = "github.com/twmb/franz-go"
FRANZ_TABLE = REPO / "offsets" / "franz_offsets.json"
FRANZ_CLIENT = "franz"


def franz_slice_cells():
    """franz-go's CI slice (test_kafka_franz.py): the first release of every layout of its
    offset table (v1.21.0, v1.22.0), stripped (the offsets are the table's), with the installed
    Go (every franz-go release the table covers needs Go 1.25 or later); the newest release the
    table names plain and PIE is test_kafka_franz.py's own build. No COMPATIBILITY.md section
    is written from the results yet."""
    return [(FRANZ_CLIENT, v, "local", "stripped") for v in matrix.layout_starts(FRANZ_TABLE)]


def franz_full_cells():
    """franz-go's full matrix (GOSPAN_COMPAT=1): every release from the table's first to the
    newest the proxy lists, those it lists and the table's, each plain, stripped and PIE, with
    the installed Go."""
    table = ["v" + v for v in matrix.offset_table(FRANZ_TABLE)["versions"]]
    first = min(parse(v) for v in table)
    known = {v for v in matrix.module_releases(FRANZ) + table if parse(v) >= first}
    return [(FRANZ_CLIENT, v, "local", f) for v in sorted(known, key=parse) for f in FLAVOURS]


def build_franz(cell):
    """The binary of franz-go CELL: kafkamix with franz-go alone (kafka.build_kafkamix)."""
    _, release, toolchain, flavour = cell
    return build_kafkamix(None, toolchain, franz=release, flags=tuple(FLAVOURS[flavour][0]))


def cell_id(cell):
    client, release, toolchain, flavour = cell
    return f"{client}-{release}-{toolchain_id(toolchain)}-{flavour}"


# ---- builds -------------------------------------------------------------------------------------

# The cells build() built in this process (the rest came from the cache).
BUILT = []


def build(cell):
    """(binary, its build's record) of CELL: kafkamix with kafka-go alone, from the cache or
    built now (kafka.build_kafkamix, which raises BuildError with build.sh's output). The
    record's "toolchain" is the Go that built it, "go1.18.10"."""
    _, release, toolchain, flavour = cell
    t0 = time.time()
    binary = build_kafkamix(None, toolchain, kafkago=release, flags=tuple(FLAVOURS[flavour][0]))
    meta = binary.parent / "built.json"
    if meta.stat().st_mtime >= t0 - 1:
        BUILT.append(cell)
    return binary, json.loads(meta.read_text())


# ---- the kafka-go section of COMPATIBILITY.md ---------------------------------------------------

BEGIN = "<!-- BEGIN kafka-go: written by tests/e2e/test_kafka_versions.py (make compat) -->"
END = "<!-- END kafka-go -->"
# A cell's fields in a row of the results a run saves (test_kafka_versions.py).
FIELDS = ("client", "release", "requested", "flavour")

# What makes cells fail, for the page: (first release, what gospan does wrong and why). Cells
# it explains are strict xfails (a gospan limitation, not kafka-go's behaviour). None so far.
FINDINGS = []


def finding(cell):
    """The text of FINDINGS that says why CELL fails, else None."""
    return next((text for v, text in FINDINGS if parse(cell[1]) >= parse(v)), None)


SITES = [
    ("send", "`(*Writer).WriteMessages`: its entry (or its callers' `CALL`s of it, where its "
     "own first instruction would be single-stepped) and the instruction after each of those "
     "`CALL`s, where its error is in the result registers."),
    ("process", "`(*Reader).ReadMessage`, and the application's own `FetchMessage` calls, "
     "right after they return, the `Message` at the caller's stack pointer; the message ends "
     "at the goroutine's next `FetchMessage` (the entry), its `CommitMessages` or the "
     "reader's `Close`."),
    ("trace context", "the produce request on its way out (sk_msg, as for HTTP and gRPC "
     "calls): each record `WriteMessages` marked gets a `traceparent` header naming the "
     "PRODUCER span, its lengths and the batch's CRC-32C made right."),
]


def rewrite_section(text, page=matrix.PAGE):
    """Replaces the kafka-go section of PAGE with TEXT, or appends it; the rest of the page is
    kept as it is."""
    matrix.rewrite_section(text, BEGIN, END, page)


def steps_text(rec):
    steps = rec.get("steps")
    return ", ".join("-" if s is None else str(s) for s in steps) if steps else ""


def message_steps_lines(results, cells):
    """The page's paragraph on which Go releases' builds cost a single-stepped hit a message
    (the attach lines' counts in RESULTS of CELLS); none where no build does."""
    by_go = {}
    for c in cells:
        r = results.get(c) or {}
        if r.get("steps") and r["steps"][1] is not None:
            by_go.setdefault(r.get("toolchain") or toolchain_label(c[2]), set()).add(
                r["steps"][1])
    costly = sorted(go for go, steps in by_go.items() if steps != {0})
    if not costly:
        return []
    free = sorted(go for go, steps in by_go.items() if steps == {0})

    def hits(go):
        return " or ".join(map(str, sorted(by_go[go])))

    return [""] + para(
        "A message costs " + "; ".join(f"{hits(go)} single-stepped hit in the builds of {go}"
                                       for go in costly)
        + (f", none in those of {' and '.join(free)}" if free else "")
        + " (docs/messaging.md: the probe after the CALL of ReadMessage is single-stepped where "
        "the caller copies the `Message` it returned before any instruction the kernel "
        "emulates).")


def page_text(results, cells, kernel=None, note=None):
    """The kafka-go section of COMPATIBILITY.md: RESULTS (cell -> what test_kafka_versions.py
    recorded) of CELLS, on KERNEL (this one's release without it); NOTE, when given, says how
    the run went."""
    fails = {}

    def rec(c):
        return results.get(c) or {}

    lines = ["## Kafka (kafka-go)", ""]
    lines += para(
        "Produced by `GOSPAN_COMPAT=1 pytest tests/e2e/test_kafka_versions.py`, which rewrites "
        "only this section; do not edit by hand. Each cell is `tests/e2e/kafkamix` with "
        "kafka-go alone, built against that release with that Go and flavour "
        "(`tests/e2e/kafkamix/build.sh`), both producing (on request) and consuming a topic "
        "of its own in a group (`(*Reader).ReadMessage`, a GET of a local URL for each message) "
        f"against a real Apache Kafka {KAFKA_VERSION} broker, with one gospan attached. After "
        "one message "
        "to warm the consumer up, one `POST /kafkago/produce` under a traceparent of its own "
        "must make one trace, checked as the official opentelemetry-proto decoder read it: "
        "exactly a SERVER span (a child of the caller's), a PRODUCER span `send <topic>` (a "
        "child of the SERVER span, inside it), a CONSUMER span `process <topic>` (a child of "
        "the PRODUCER span) and the consumer's CLIENT GET (a child of the CONSUMER span, inside "
        "it); messaging.system, messaging.destination.name and operation on both, "
        "messaging.kafka.offset, partition and consumer group on the CONSUMER span equal to "
        "what the produce answered; the record the consumer read holding the value sent and "
        "exactly one header, the `traceparent` naming the PRODUCER span, which gospan put in "
        "at the socket layer; nothing dropped, both records counted as given trace context. "
        "The attach line must say `Kafka producer + Kafka consumer (kafka-go vX.Y.Z, offsets "
        "from ...)` for the release built: \"verified (DWARF)\" means the struct offsets came "
        "from the binary, \"verified (table vX)\" from the row of `offsets/kafkago_offsets.json` "
        "for X (a stripped build must use it). *Single-stepped hits* are those of a send and "
        "of a message, as the attach line counts them.")
    lines += [""] + para("Where gospan probes:") + [""]
    lines += matrix.site_lines(SITES)
    hidden = unlisted()
    lines += [""] + para(
        f"Releases: every kafka-go release from the first the offset table covers "
        f"({releases()[0]}) to the newest the Go module proxy lists"
        + (f" (its list leaves out {', '.join(hidden)}, which it serves when asked for by "
           f"version)" if hidden else "")
        + ". Each is built with the installed Go and with the oldest Go its go.mod allows "
        "among the releases `test_go_versions.py` builds with, and kafkamix too (Go 1.18: "
        "go1.17 lacks `strings.Cut`), plain, stripped (`-ldflags='-s -w'`) and PIE "
        "(`-buildmode=pie`).")
    lines += matrix.run_lines(cells, results, kernel, note)
    lines += message_steps_lines(results, cells)

    mine = sorted(cells, key=lambda c: (parse(c[1]), c[2] == "local",
                                        list(FLAVOURS).index(c[3])))
    if mine:
        lines += ["", f"### kafka-go (`{KAFKAGO}`): {mine[0][1]} to {mine[-1][1]}, "
                  f"{tally(mine, results)}", "",
                  "| release | Go | flavour | result | single-stepped hits: send, message |",
                  "|---|---|---|---|---|"]
        for c in mine:
            go = rec(c).get("toolchain") or toolchain_label(c[2])
            lines.append(f"| {c[1]} | {go} | {c[3]} | {shown_result(results, c, fails)} | "
                         f"{steps_text(rec(c))} |")

    lines += matrix.slice_lines(
        "What CI runs (`make test`, `tests/e2e/kafka_matrix.py` lists them): the first release "
        "of every layout of the offset table, stripped, the oldest with the oldest Go it "
        "allows, and the newest release the table names with the installed Go, plain, stripped "
        "and PIE: ",
        [c for c in slice_cells() if c in cells], lambda c: named(c[1]))
    found = [(v, text) for v, text in FINDINGS if any(parse(c[1]) >= parse(v) for c in fails)]
    if found:
        lines += ["", "Why cells fail:", ""]
        for _, text in found:
            lines += para(text, initial_indent="- ", subsequent_indent="  ")
    lines += matrix.failure_lines(fails, lambda c: named(c[1]))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(matrix.main(sys.argv[1:], sys.modules[__name__], FIELDS, cell_id))
