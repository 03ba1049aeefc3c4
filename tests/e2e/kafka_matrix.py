"""The Kafka clients' release matrices: which releases of segmentio/kafka-go, IBM/sarama and
twmb/franz-go, which Go toolchains, the builds of tests/e2e/kafkamix with one client alone
(cached across runs), and each client's section of COMPATIBILITY.md.

A cell is (client, release, toolchain, flavour):

- client as kafkamix/build.sh names it: kafkago, sarama or franz, each a Client below (KAFKAGO,
  SARAMA, FRANZ) that says its releases, its CI slice, its offset table and its section;
- release:
  - kafka-go: every release from the first of its offset table (offsets/kafkago_offsets.json,
    v0.4.38) to the newest the module proxy lists. kafka-go has had one minor, v0.4, for years,
    so every patch is a cell; the proxy's list leaves out some releases it serves (v0.4.38 to
    v0.4.41, v0.4.43, v0.4.46), so every patch number between the first and the newest is
    asked for by version (KafkaGo.releases());
  - sarama: every minor's latest patch from the first release of its offset table
    (offsets/sarama_offsets.json, v1.41.0, the first under github.com/IBM/sarama) to the
    newest the proxy lists, and the first and last release of every row of the table
    (matrix.minor_releases);
  - franz-go: every release from the first of its offset table (offsets/franz_offsets.json,
    v1.21.0) to the newest the proxy lists, those it lists and the table's;
- toolchain: "local" (the installed Go); for kafka-go also the oldest Go the release's go.mod
  allows among the releases test_go_versions.py builds with (router_matrix.oldest_go), and
  kafkamix too: KAFKAMIX_GO. sarama and franz-go are built with the installed Go alone;
- flavour: plain, stripped or pie (matrix.FLAVOURS).

test_kafka_versions.py runs the kafka-go and sarama cells, test_kafka_franz.py (test_release)
the franz-go ones; a run saves each client's results to $GOSPAN_BUILD/e2e/<its RESULTS>-full.json
(GOSPAN_COMPAT=1) or -slice.json, and a COMPAT run that ran all of a client's cells rewrites its
section of COMPATIBILITY.md.

Builds are kafka.build_kafkamix()'s, kept in <cache>/kafkamix-<hash of kafkamix>/<go>-<client>-
<release>[-<flags hash>]/ (test_kafka.py's build of the newest kafka-go release is that plain
cell's), where <cache> is $GOSPAN_KAFKAMIX_CACHE, else $XDG_CACHE_HOME/gospan, else
~/.cache/gospan.

Run as a program it lists every client's cells, `python3 tests/e2e/kafka_matrix.py [--full]`,
or rewrites the section of each client whose results a run saved:
`python3 tests/e2e/kafka_matrix.py --page build/e2e/sarama-versions-full.json ["a note"]`.
"""

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import matrix
from kafka import KAFKA_VERSION, build_kafkamix
from matrix import FLAVOURS, go_env, para, parse, shown_result, tally, toolchain_label
from router_matrix import oldest_go, toolchain_id

REPO = matrix.REPO
# A cell's fields in a row of the results a run saves.
FIELDS = ("client", "release", "requested", "flavour")

# The cells build() built in this process (the rest came from the cache).
BUILT = []


def cell_id(cell):
    client, release, toolchain, flavour = cell
    return f"{client}-{release}-{toolchain_id(toolchain)}-{flavour}"


def build(cell):
    """(binary, its build's record) of CELL: kafkamix with its client alone, from the cache or
    built now (kafka.build_kafkamix, which raises BuildError with build.sh's output). The
    record's "toolchain" is the Go that built it, "go1.18.10"."""
    client, release, toolchain, flavour = cell
    t0 = time.time()
    binary = build_kafkamix(None, toolchain, flags=tuple(FLAVOURS[flavour][0]),
                            **{client: release})
    meta = binary.parent / "built.json"
    if meta.stat().st_mtime >= t0 - 1:
        BUILT.append(cell)
    return binary, json.loads(meta.read_text())


def steps_of(text):
    return None if text == "no probe for" else int(text)


class Client:
    """One client's matrix, as a family of matrix.py: its cells (full_cells, slice_cells), how
    the attach line names it, and its section of COMPATIBILITY.md (page_text, rewrite_section),
    which a subclass fills with what its cells check (checked_text), where gospan probes (SITES)
    and which releases there are (releases_text)."""

    ID = NAME = MODULE = TABLE = None
    # The results' name (matrix.Results) and the command whose COMPAT run writes the section.
    RESULTS = COMMAND = None
    # What the attach line says gospan traces of it, and the single-stepped hits it counts: "a
    # send", ...
    PARTS = "Kafka producer + Kafka consumer"
    STEPS = ()
    SITES = []
    SLICE_TEXT = ""
    # What makes cells fail, for the page: (first release, what gospan does wrong and why).
    # Cells it explains are strict xfails (a gospan limitation, not the client's behaviour).
    FINDINGS = []

    def named(self, release):
        return f"{self.NAME} {release}"

    @property
    def BUILT(self):
        return [c for c in BUILT if c[0] == self.ID]

    def releases(self):
        raise NotImplementedError

    def toolchains(self, release):
        return ["local"]

    def full_cells(self):
        return [(self.ID, v, tc, f) for v in self.releases() for tc in self.toolchains(v)
                for f in FLAVOURS]

    def slice_cells(self):
        """The CI slice: the first release of every layout of the offset table, stripped (no
        DWARF: the offsets are the table's), the first with the oldest Go it allows; then the
        newest release the table names (matrix.table_newest), plain, stripped and PIE, with
        the installed Go."""
        starts = matrix.layout_starts(self.TABLE)
        cells = [(self.ID, v, self.toolchains(v)[-1] if v == starts[0] else "local",
                  "stripped") for v in starts]
        cells += [(self.ID, matrix.table_newest(self.TABLE), "local", f) for f in FLAVOURS]
        return list(dict.fromkeys(cells))

    def finding(self, cell):
        """The text of FINDINGS that says why CELL fails, else None."""
        return next((text for v, text in self.FINDINGS if parse(cell[1]) >= parse(v)), None)

    def results(self, build_dir):
        """The record of this client's cells a run keeps (matrix.Results)."""
        return matrix.Results(self.RESULTS, FIELDS, build_dir, why_width=400)

    def offsets_source(self, cell):
        """Where gospan must take CELL's struct offsets from: "DWARF", or in a stripped build
        "table v1.41.0", the row of the offset table for its release."""
        if cell[3] != "stripped":
            return "DWARF"
        return "table v" + matrix.table_row_version(self.TABLE, cell[1])

    def read_attach(self, cell, line, built):
        """What the attach LINE says of CELL's build BUILT, checked (AssertionError): where the
        offsets came from ("DWARF", "table v0.4.39") and the single-stepped hits the line
        counts (STEPS)."""
        where = cell_id(cell)
        hits = ", ".join(rf"(\d+|no probe for) a {s}" for s in self.STEPS)
        pattern = (rf" \+ {re.escape(self.PARTS)} \({re.escape(self.NAME)} (v[0-9.]+), "
                   rf"offsets from (DWARF|table v[0-9.]+); single-stepped hits: {hits}\)")
        assert f", {built['toolchain']}, " in line, f"{where}: not {built['toolchain']}:\n{line}"
        parts = re.findall(pattern, line)
        assert len(parts) == 1, (f"{where}: no {self.PARTS} ({self.NAME}) in the attach "
                                 f"line:\n{line}")
        version, source, *steps = parts[0]
        assert version == cell[1], f"{where}: {self.NAME} {version} read, {cell[1]} built:\n{line}"
        want = self.offsets_source(cell)
        assert source == want, f"{where}: offsets from {source}, not {want}:\n{line}"
        return source, [steps_of(s) for s in steps]

    # ---- the section of COMPATIBILITY.md ----

    @property
    def begin(self):
        return f"<!-- BEGIN {self.NAME}: written by {self.COMMAND.split()[0]} (make compat) -->"

    @property
    def end(self):
        return f"<!-- END {self.NAME} -->"

    def rewrite_section(self, text, page=matrix.PAGE):
        """Replaces this client's section of PAGE with TEXT, or appends it; the rest of the page
        is kept as it is."""
        matrix.rewrite_section(text, self.begin, self.end, page)

    def checked_text(self):
        raise NotImplementedError

    def releases_text(self):
        raise NotImplementedError

    def notes(self, results, cells):
        """The page's lines on what the run found beyond pass and fail; none by default."""
        return []

    def page_text(self, results, cells, kernel=None, note=None):
        """This client's section of COMPATIBILITY.md: RESULTS (cell -> what the test recorded)
        of CELLS, on KERNEL (this one's release without it); NOTE, when given, says how the run
        went."""
        fails = {}

        def rec(c):
            return results.get(c) or {}

        def steps_text(r):
            steps = r.get("steps")
            return ", ".join("-" if s is None else str(s) for s in steps) if steps else ""

        lines = [f"## Kafka ({self.NAME})", ""]
        lines += para(f"Produced by `GOSPAN_COMPAT=1 pytest {self.COMMAND}`, which rewrites "
                      f"only this section; do not edit by hand. " + self.checked_text())
        lines += [""] + para("Where gospan probes:") + [""]
        lines += matrix.site_lines(self.SITES)
        lines += [""] + para(self.releases_text())
        lines += matrix.run_lines(cells, results, kernel, note)
        lines += self.notes(results, cells)

        mine = sorted(cells, key=lambda c: (parse(c[1]), c[2] == "local",
                                            list(FLAVOURS).index(c[3])))
        if mine:
            lines += ["", f"### {self.NAME} (`{self.MODULE}`): {mine[0][1]} to {mine[-1][1]}, "
                      f"{tally(mine, results)}", "",
                      f"| release | Go | flavour | result | single-stepped hits: "
                      f"{', '.join(self.STEPS)} |",
                      "|---|---|---|---|---|"]
            for c in mine:
                go = rec(c).get("toolchain") or toolchain_label(c[2])
                lines.append(f"| {c[1]} | {go} | {c[3]} | {shown_result(results, c, fails)} | "
                             f"{steps_text(rec(c))} |")

        lines += matrix.slice_lines(self.SLICE_TEXT, [c for c in self.slice_cells() if c in cells],
                                    lambda c: self.named(c[1]))
        found = [(v, text) for v, text in self.FINDINGS
                 if any(parse(c[1]) >= parse(v) for c in fails)]
        if found:
            lines += ["", "Why cells fail:", ""]
            for _, text in found:
                lines += para(text, initial_indent="- ", subsequent_indent="  ")
        lines += matrix.failure_lines(fails, lambda c: self.named(c[1]))
        return "\n".join(lines) + "\n"


# ---- kafka-go -----------------------------------------------------------------------------------

# The oldest Go kafkamix builds with: main.go uses strings.Cut (Go 1.18); go1.17.13 stops at
# "undefined: strings.Cut".
KAFKAMIX_GO = (1, 18)


class KafkaGo(Client):
    ID, NAME, MODULE = "kafkago", "kafka-go", "github.com/segmentio/kafka-go"
    TABLE = REPO / "offsets" / "kafkago_offsets.json"
    RESULTS, COMMAND = "kafka-versions", "tests/e2e/test_kafka_versions.py"
    STEPS = ("send", "message")
    SITES = [
        ("send", "`(*Writer).WriteMessages`: its entry (or its callers' `CALL`s of it, where "
         "its own first instruction would be single-stepped) and the instruction after each of "
         "those `CALL`s, where its error is in the result registers."),
        ("process", "inside `(*Reader).FetchMessage` and `ReadMessage` (amd64): the emulated "
         "instructions on their way to the RET that returns a `Message` (a JE after their last "
         "call, or the CALL of `runtime.duffcopy` that copies it), else right after the "
         "application's CALLs of them, the `Message` at the caller's stack pointer; the message "
         "ends at the goroutine's next `FetchMessage` (the entry), its `CommitMessages` or the "
         "reader's `Close`."),
        ("trace context", "the produce request on its way out (sk_msg, as for HTTP and gRPC "
         "calls): each record `WriteMessages` marked gets a `traceparent` header naming the "
         "PRODUCER span, its lengths and the batch's CRC-32C made right."),
    ]
    SLICE_TEXT = (
        "What CI runs (`make test`, `tests/e2e/kafka_matrix.py` lists them): the first release "
        "of every layout of the offset table, stripped, the oldest with the oldest Go it "
        "allows, and the newest release the table names with the installed Go, plain, "
        "stripped and PIE: ")

    def __init__(self):
        self._releases, self._oldest = [], {}

    def served(self, version):
        """Whether the module proxy serves VERSION when asked for it by name (an answer the
        module cache keeps, so it is asked once a machine)."""
        res = subprocess.run(["go", "list", "-m", "-json", f"{self.MODULE}@{version}"],
                             capture_output=True, text=True, timeout=300, env=go_env(),
                             cwd="/")
        return res.returncode == 0 and json.loads(res.stdout).get("Version") == version

    def releases(self):
        """Every release from the table's first to the newest the proxy lists: those it lists,
        the table's, and each other patch number of the same minor in between that it serves;
        sorted."""
        if not self._releases:
            table = ["v" + v for v in matrix.offset_table(self.TABLE)["versions"]]
            first = min(parse(v) for v in table)
            known = {v for v in matrix.module_releases(self.MODULE) + table
                     if parse(v) >= first}
            newest = max(parse(v) for v in known)
            if newest[:2] == first[:2]:
                for patch in range(first[2] + 1, newest[2]):
                    v = "v" + ".".join(map(str, (*first[:2], patch)))
                    if v not in known and self.served(v):
                        known.add(v)
            self._releases.extend(sorted(known, key=parse))
        return list(self._releases)

    def unlisted(self):
        """The releases of releases() the module proxy serves but does not list."""
        listed = set(matrix.module_releases(self.MODULE))
        return [v for v in self.releases() if v not in listed]

    def toolchains(self, release):
        """The installed Go, and the oldest RELEASE's go.mod (and kafkamix) allows where it is
        another release."""
        if release not in self._oldest:
            want = max(parse(matrix.go_directive(self.MODULE, release) or "1.17"), KAFKAMIX_GO)
            got = oldest_go(want)
            if not got:
                raise RuntimeError(f"{self.named(release)} needs Go "
                                   f"{'.'.join(map(str, want))}, newer than every release "
                                   f"test_go_versions.py builds with")
            self._oldest[release] = got
        old = self._oldest[release]
        return ["local"] + ([old] if parse(matrix.go_version(old)) <
                            parse(matrix.go_version("local")) else [])

    def checked_text(self):
        return (
            "Each cell is `tests/e2e/kafkamix` with kafka-go alone, built against that release "
            "with that Go and flavour (`tests/e2e/kafkamix/build.sh`), both producing (on "
            "request) and consuming a topic of its own in a group (`(*Reader).ReadMessage`, a "
            f"GET of a local URL for each message) against a real Apache Kafka {KAFKA_VERSION} "
            "broker, with one gospan attached. After one message to warm the consumer up, one "
            "`POST /kafkago/produce` under a traceparent of its own must make one trace, checked "
            "as the official opentelemetry-proto decoder read it: exactly a SERVER span (a child "
            "of the caller's), a PRODUCER span `send <topic>` (a child of the SERVER span, "
            "inside it), a CONSUMER span `process <topic>` (a child of the PRODUCER span) and "
            "the consumer's CLIENT GET (a child of the CONSUMER span, inside it); "
            "messaging.system, messaging.destination.name and operation on both, "
            "messaging.kafka.offset, partition and consumer group on the CONSUMER span equal to "
            "what the produce answered; the record the consumer read holding the value sent and "
            "exactly one header, the `traceparent` naming the PRODUCER span, which gospan put in "
            "at the socket layer; nothing dropped, both records counted as given trace context. "
            "The attach line must say `Kafka producer + Kafka consumer (kafka-go vX.Y.Z, offsets "
            "from ...)` for the release built: \"verified (DWARF)\" means the struct offsets "
            "came from the binary, \"verified (table vX)\" from the row of "
            "`offsets/kafkago_offsets.json` for X (a stripped build must use it). "
            "*Single-stepped hits* are those of a send and of a message, as the attach line "
            "counts them.")

    def releases_text(self):
        hidden = self.unlisted()
        return (
            f"Releases: every kafka-go release from the first the offset table covers "
            f"({self.releases()[0]}) to the newest the Go module proxy lists"
            + (f" (its list leaves out {', '.join(hidden)}, which it serves when asked for by "
               f"version)" if hidden else "")
            + ". Each is built with the installed Go and with the oldest Go its go.mod allows "
            "among the releases `test_go_versions.py` builds with, and kafkamix too (Go 1.18: "
            "go1.17 lacks `strings.Cut`), plain, stripped (`-ldflags='-s -w'`) and PIE "
            "(`-buildmode=pie`).")

    def notes(self, results, cells):
        """The page's paragraph on which Go releases' builds cost a single-stepped hit a
        message (the attach lines' counts in RESULTS of CELLS); none where no build does."""
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
            + " (docs/messaging.md: where no probe inside ReadMessage could be shown right, the "
            "probe after its CALL is single-stepped where the caller copies the `Message` it "
            "returned before any instruction the kernel emulates).")


# ---- sarama -------------------------------------------------------------------------------------


class Sarama(Client):
    ID, NAME, MODULE = "sarama", "sarama", "github.com/IBM/sarama"
    TABLE = REPO / "offsets" / "sarama_offsets.json"
    RESULTS, COMMAND = "sarama-versions", "tests/e2e/test_kafka_versions.py"
    PARTS = "Kafka producer + Kafka consumer"
    STEPS = ("send", "message")
    SITES = [
        ("send", "`(*syncProducer).SendMessage` and `(*syncProducer).SendMessages`, which the "
         "application calls through the `SyncProducer` interface: their entries and their "
         "RETs, but `SendMessage`'s end where it tests the `*ProducerError` its expectation "
         "brought, a JE from which each way goes straight to a RET (from v1.62 in "
         "`SendMessageContext`, whose other RETs stay). The "
         "`AsyncProducer`: the CALLs of `runtime.chansend1` and `runtime.selectgo` in "
         "the application's own code, whose channel is a producer's input "
         "(`newAsyncProducer`'s RETs, the dispatcher's receive tell which), to the entries of "
         "`returnSuccesses`, `returnErrors` and `returnError`."),
        ("trace context", "the produce request on its way out (sk_msg, as for kafka-go): each "
         "record a send marked gets a `traceparent` header naming the PRODUCER span."),
        ("process", "the application's `ConsumeClaim` methods (and the functions of their "
         "package they call): each CALL of the Go runtime's channel receive or select and the "
         "first emulated instruction after it; `(*consumerGroupSession).consume`'s entry, "
         "`(*consumer).ConsumePartition`'s RETs and `MarkMessage`'s entry tell the claim's "
         "channel (docs/messaging.md)."),
    ]
    SLICE_TEXT = (
        "What CI runs (`make test`, `tests/e2e/kafka_matrix.py` lists them): the first release "
        "of every layout of the offset table, stripped, and the newest release the table names, "
        "plain, stripped and PIE, with the installed Go: ")

    def releases(self):
        return matrix.minor_releases(self.MODULE, self.TABLE)

    def checked_text(self):
        return (
            "Each cell is `tests/e2e/kafkamix` with sarama alone, built against that release "
            "with the installed Go and that flavour (`tests/e2e/kafkamix/build.sh`), producing "
            "on request through a `SyncProducer` and consuming a topic of its own in a group (a "
            "`ConsumerGroup` whose `ConsumeClaim` ranges over `claim.Messages()`, a GET of a "
            f"local URL for each message) against a real Apache Kafka {KAFKA_VERSION} broker, "
            "with one gospan attached, after which the group joins again (its claims begin in "
            "gospan's view). After one message to warm the consumer up, one `POST "
            "/sarama/produce` of one message (`SendMessage`), one of two with a key "
            "(`SendMessages`) and one of two through an `AsyncProducer` (each sent on "
            "`Input()`, its result awaited on `Successes()`), each under a traceparent of its "
            "own, must each make one trace, checked as the official opentelemetry-proto decoder "
            "read it: a SERVER span (a child of the caller's) and PRODUCER spans `send <topic>` "
            "(children of the SERVER span, inside it), one a call, or one a message for the "
            "`AsyncProducer`; messaging.system, messaging.destination.name and operation on the "
            "PRODUCER spans, with the partition and offset of the message (`SendMessage`, the "
            "`AsyncProducer`), or messaging.batch.message_count 2 for `SendMessages`; for each "
            "record a CONSUMER span `process <topic>`, a child of its PRODUCER span, with the record's "
            "offset, partition and the consumer group, and the consumer's GET inside it; each "
            "record the consumer read (kafkamix's report of what it processed) holding the "
            "value sent and exactly one header, the `traceparent` naming its PRODUCER span, "
            "which gospan put in at the socket layer; nothing dropped, the six records counted "
            "as given trace context. The attach line must say `Kafka producer + Kafka consumer "
            "(sarama vX.Y.Z, offsets from ...)` for the release built: \"verified (DWARF)\" "
            "means the struct offsets came from the binary, \"verified (table vX)\" from the "
            "row of `offsets/sarama_offsets.json` for X (a stripped build must use it). "
            "*Single-stepped hits* are those of a send and of a message, as the attach line "
            "counts them.")

    def releases_text(self):
        table = matrix.offset_table(self.TABLE)["versions"]
        return (
            f"Releases: every sarama minor's latest patch from the first release the offset "
            f"table covers (v{min(table, key=parse)}, the first under `{self.MODULE}`; older "
            f"ones are `github.com/Shopify/sarama`) to the newest the Go module proxy lists, "
            f"and the first and last release of the table's rows: "
            f"{', '.join(self.releases())}. Each is built with the installed Go, plain, "
            f"stripped (`-ldflags='-s -w'`) and PIE (`-buildmode=pie`).")


# ---- franz-go -----------------------------------------------------------------------------------


class Franz(Client):
    ID, NAME, MODULE = "franz", "franz-go", "github.com/twmb/franz-go"
    TABLE = REPO / "offsets" / "franz_offsets.json"
    RESULTS = "franz-versions"
    COMMAND = "tests/e2e/test_kafka_franz.py -k test_release"
    STEPS = ("sync send", "record")
    SITES = [
        ("send", "`(*Client).ProduceSync`: its entry and the first emulated instruction "
         "after each of the application's CALLs of it, where its results are (its RETs where "
         "it is reached another way); `(*Client).produce` (what the inlined `Produce` and "
         "`TryProduce` call) at its entry, an asynchronous send ending at the entry of "
         "`(*Client).finishRecordPromise`."),
        ("process", "`(*FetchesRecordIter).Next` handing a record over (`Fetches.EachRecord` "
         "calls it for each): at its last CALL, of `prepareNext`, the `*Record` it returns "
         "saved on its stack there (else after its CALLs, or at its RETs); the record ends at "
         "the goroutine's next `Next`, the return of `EachRecord` or its next poll."),
        ("trace context", "the produce request on its way out (sk_msg, as for kafka-go), when "
         "its batch is not compressed: each record gets a `traceparent` header naming the "
         "PRODUCER span."),
    ]
    SLICE_TEXT = (
        "What CI runs (`make test`, `tests/e2e/kafka_matrix.py` lists them): the first release "
        "of every layout of the offset table, stripped, with the installed Go (the rest of "
        "`test_kafka_franz.py` runs the newest release kafkamix pins plain, and stripped PIE): ")

    def releases(self):
        """Every release from the table's first to the newest the proxy lists, those it lists
        and the table's."""
        table = ["v" + v for v in matrix.offset_table(self.TABLE)["versions"]]
        first = min(parse(v) for v in table)
        known = {v for v in matrix.module_releases(self.MODULE) + table if parse(v) >= first}
        return sorted(known, key=parse)

    def slice_cells(self):
        """The first release of every layout of the offset table, stripped (the offsets are the
        table's), with the installed Go (every franz-go release the table covers needs Go 1.25
        or later); the newest release kafkamix pins, plain and PIE, is test_kafka_franz.py's
        own build."""
        return [(self.ID, v, "local", "stripped") for v in matrix.layout_starts(self.TABLE)]

    def checked_text(self):
        return (
            "Each cell is `tests/e2e/kafkamix` with franz-go alone, built against that release "
            "with the installed Go and that flavour (`tests/e2e/kafkamix/build.sh`), producing "
            "on request and consuming a topic of its own in a group (`PollFetches`, "
            "`Fetches.EachRecord`, a GET of a local URL for each record) against a real Apache "
            f"Kafka {KAFKA_VERSION} broker, with one gospan attached. After one record to warm "
            "the consumer up, one `POST /franz/produce` (`ProduceSync` of one record, through "
            "a client made with `kgo.NoCompression()`) under a traceparent of its own must make "
            "one trace, checked as the official opentelemetry-proto decoder read it: exactly a "
            "SERVER span (a child of the caller's), a PRODUCER span `send <topic>` (a child of "
            "the SERVER span, inside it), a CONSUMER span `process <topic>` (a child of the "
            "PRODUCER span) with the consumer group, and the consumer's CLIENT GET (a child of "
            "the CONSUMER span, inside it); messaging.system, messaging.destination.name and "
            "operation on both, the CONSUMER span's offset the one the produce answered; the "
            "record the consumer read holding the value sent and exactly one header, the "
            "`traceparent` naming the PRODUCER span, which gospan put in at the socket layer; "
            "nothing dropped. The attach line must say `Kafka producer + Kafka consumer "
            "(franz-go vX.Y.Z, offsets from ...)` for the release built: \"verified (DWARF)\" "
            "means the struct offsets came from the binary, \"verified (table vX)\" from the row "
            "of `offsets/franz_offsets.json` for X (a stripped build must use it). "
            "*Single-stepped hits* are those of a `ProduceSync` call and of a record, as the "
            "attach line counts them.")

    def releases_text(self):
        return (
            f"Releases: every franz-go release from the first the offset table covers "
            f"({self.releases()[0]}) to the newest the Go module proxy lists, those it lists "
            f"and the table's: {', '.join(self.releases())}. Each is built with the installed "
            f"Go (every one needs Go 1.25 or later), plain, stripped (`-ldflags='-s -w'`) and "
            f"PIE (`-buildmode=pie`).")


KAFKAGO, SARAMA, FRANZ = KafkaGo(), Sarama(), Franz()
CLIENTS = {c.ID: c for c in (KAFKAGO, SARAMA, FRANZ)}


def client(cell):
    return CLIENTS[cell[0]]


def main(argv):
    """Lists every client's cells (matrix.main), or with --page rewrites the section of each
    client the saved results hold."""
    if argv[:1] == ["--page"]:
        ids = dict.fromkeys(r["client"] for r in json.loads(Path(argv[1]).read_text()))
        for i in ids:
            matrix.main(argv, CLIENTS[i], FIELDS, cell_id)
        return 0
    for c in CLIENTS.values():
        matrix.main(argv, c, FIELDS, cell_id)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
