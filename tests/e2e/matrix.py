"""What the release matrices share: grpc-go's (grpc_matrix.py, test_grpc_versions.py), the data
stores' (db_matrix.py, test_db_versions.py) and the routers' (router_matrix.py,
test_router_versions.py). A matrix is a list of cells, tuples naming what one build is made of
(a library release, a Go toolchain, a build flavour); each family module says which cells there
are and how one is built, this one how they are run and recorded:

- Go toolchains named as the build scripts take them (grpcmix/build.sh, dbmix/build.sh,
  routers/build.sh): "local", "go1.X.Y" (through the module proxy) or the path of a go command;
  go_version() says which release one really is.
- Module releases: what the module proxy lists, a release's go directive, and a module's offset
  table (offsets/NAME_offsets.json): the row a release without DWARF takes, the releases its
  rows start and end at, every minor's latest patch from its first release on.
- The build cache: <cache>/<program>-<hash of its sources>/<build>/, where <cache> is the
  family's environment variable, else $XDG_CACHE_HOME/gospan, else ~/.cache/gospan; a build is
  made once (cached_build), and a program's homes for other sources go once no run has used
  them for an hour.
- The cells a run takes (COMPAT: GOSPAN_COMPAT=1, `make compat`, runs the full matrix and the
  slice; else the slice CI runs), built and run in the background in order, and the record of
  each, saved after every cell to $GOSPAN_BUILD/e2e/<name>-full.json or -slice.json.
- The family's section of COMPATIBILITY.md, between its BEGIN and END comments, and the command
  line that lists the cells or rewrites the section from a saved run.
"""

import fcntl
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import textwrap
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "COMPATIBILITY.md"
COMPAT = os.environ.get("GOSPAN_COMPAT", "").strip() in ("1", "true", "yes")

# name -> (go build flags, what it means)
FLAVOURS = {
    "plain": ([], "go build"),
    "stripped": (["-ldflags=-s -w"], "-ldflags='-s -w': no symbol table, no DWARF"),
    "pie": (["-buildmode=pie"], "-buildmode=pie: loaded at a random address"),
}


# ---- Go toolchains and modules ------------------------------------------------------------------


def parse(v):
    """(1, 50, 1) from "v1.50.1", "go1.50.1", "1.50"; pre-release suffixes dropped."""
    v = re.sub(r"^(v|go)", "", v).split("-")[0]
    return tuple(int(x) for x in v.split("."))


def go_env(toolchain="local"):
    """The environment of a go command that runs TOOLCHAIN (GOTOOLCHAIN): the caller's, without
    GOROOT and GOFLAGS."""
    env = {k: v for k, v in os.environ.items() if k not in ("GOROOT", "GOFLAGS")}
    env.update(GOTOOLCHAIN=toolchain, GOFLAGS="-mod=mod")
    return env


def _go_command(toolchain):
    """(argv0, GOTOOLCHAIN) of a toolchain as the build scripts take it."""
    return (toolchain, "local") if "/" in toolchain else ("go", toolchain)


_GOVERSION = {}


def go_version(toolchain):
    """The Go release TOOLCHAIN is, "go1.26.8"; fetches a go1.X.Y through the module proxy."""
    if toolchain not in _GOVERSION:
        go, tc = _go_command(toolchain)
        res = subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True,
                             timeout=900, env=go_env(tc), cwd="/")
        if res.returncode != 0 or not res.stdout.startswith("go"):
            raise RuntimeError(f"cannot run Go toolchain '{toolchain}':\n{res.stderr}")
        _GOVERSION[toolchain] = res.stdout.strip()
    return _GOVERSION[toolchain]


def toolchain_label(toolchain):
    """How a toolchain is named in a cache key and on the page: its release, plus "(Debian)" for
    a go command given by path."""
    v = go_version(toolchain)
    return f"{v} (Debian)" if "/" in toolchain else v


def module_releases(module):
    """The releases vX.Y.Z of MODULE the module proxy lists (`go list -m -versions` leaves
    retracted releases out; pre-releases are skipped), in its order."""
    res = subprocess.run(["go", "list", "-m", "-versions", module], capture_output=True,
                         text=True, timeout=300, env=go_env(), cwd="/")
    if res.returncode != 0:
        raise RuntimeError(f"go list -m -versions {module} failed:\n{res.stderr}")
    return [v for v in res.stdout.split()[1:] if re.fullmatch(r"v\d+\.\d+\.\d+", v)]


def go_directive(module, version):
    """The go directive of MODULE@VERSION's own go.mod, "1.17", or None where it has none (or no
    go.mod)."""
    res = subprocess.run(["go", "mod", "download", "-json", f"{module}@{version}"],
                         capture_output=True, text=True, timeout=300, env=go_env(), cwd="/")
    if res.returncode != 0:
        raise RuntimeError(f"cannot download {module} {version}:\n{res.stderr}{res.stdout}")
    gomod = Path(json.loads(res.stdout)["GoMod"]).read_text()
    m = re.search(r"^go\s+(\d+\.\d+(?:\.\d+)?)\s*$", gomod, re.M)
    return m.group(1) if m else None


# ---- offset tables of module releases -----------------------------------------------------------


def offset_table(path):
    """The offset table at PATH (offsets/NAME_offsets.json), parsed."""
    return json.loads(Path(path).read_text())


def table_row_version(path, release):
    """The release of the offset table at PATH whose row a binary of RELEASE without DWARF takes:
    the newest at or below it (the newest of all for a newer release, as gospan's lookup does);
    None below the first."""
    vs = sorted(offset_table(path)["versions"], key=parse)
    below = [v for v in vs if parse(v) <= parse(release)]
    return below[-1] if below else None


def table_newest(path):
    """The newest release the offset table at PATH names, "v3.5.0": what a CI slice runs as
    the newest, so that a release published upstream (or one whose dependencies the module
    proxy here does not serve) cannot turn CI red overnight; the full matrices go on to the
    newest the proxy lists."""
    return "v" + max(offset_table(path)["versions"], key=parse)


def layout_starts(path):
    """The releases at which the layout of the offset table at PATH changes: its first, and
    every release a row of any field starts at ("v1.56.0"); sorted. Between two of them every
    field has one offset."""
    starts = {r["from"] for rows in offset_table(path)["fields"].values() for r in rows}
    return sorted({"v" + v for v in starts}, key=parse)


def layout_edges(path):
    """The releases the rows of the offset table at PATH start or end at, "v5.5.3"."""
    edges = set()
    for rows in offset_table(path)["fields"].values():
        for r in rows:
            edges.update((r["from"], r["to"]))
    return {"v" + v for v in edges}


def minor_releases(module, path):
    """Every minor's latest patch of MODULE from the first release of its offset table at PATH
    on (the module proxy's list, and the table's releases for the minors the list leaves out),
    plus the table's layout edges; sorted."""
    table = ["v" + v for v in offset_table(path)["versions"]]
    first = min(parse(v) for v in table)
    latest = {}
    for v in module_releases(module) + table:
        p = parse(v)
        if p >= first and (p[:2] not in latest or p > parse(latest[p[:2]])):
            latest[p[:2]] = v
    return sorted(set(latest.values()) | layout_edges(path), key=parse)


# ---- the build cache ----------------------------------------------------------------------------


def cache_dir(variable):
    """Where builds are kept: $VARIABLE, else $XDG_CACHE_HOME/gospan, else ~/.cache/gospan."""
    if os.environ.get(variable):
        return Path(os.environ[variable])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "gospan"


# A home no run has used for this long belongs to sources or a release no longer in the tree: a
# run of the whole grpc-go matrix leaves 6 GB in one, and a CI machine's disk is not large.
STALE_HOME_SECONDS = 3600


def build_home(variable, program, key):
    """<cache>/<program>-<key> (a hash of the sources or a release), made if missing and marked
    as used now. PROGRAM's other homes that no run has used for STALE_HOME_SECONDS are removed:
    the hour spares a run of another checkout that is using its own at the same time."""
    home = cache_dir(variable) / f"{program}-{key}"
    home.mkdir(parents=True, exist_ok=True)
    os.utime(home)
    now = time.time()
    for other in home.parent.glob(f"{program}-*"):
        try:
            stale = other != home and other.is_dir() and \
                now - other.stat().st_mtime > STALE_HOME_SECONDS
        except FileNotFoundError:
            continue
        if stale:
            shutil.rmtree(other, ignore_errors=True)
    return home


def cached_build(home, key, make):
    """HOME/KEY, a build's directory, and the record of it: made when missing by MAKE(TMP), which
    builds into the fresh directory TMP and returns what to record (a dict, kept as
    TMP/built.json); TMP then becomes HOME/KEY in one rename, so that a build cut short leaves
    nothing that looks built. One process at a time makes a KEY (a lock file in HOME). Returns
    (HOME/KEY, the record, whether this call made it); what MAKE raises goes to the caller."""
    dest = home / key
    meta = dest / "built.json"
    if meta.exists():
        return dest, json.loads(meta.read_text()), False
    with open(home / f".{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if meta.exists():
            return dest, json.loads(meta.read_text()), False
        tmp = home / f".{key}.partial"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        try:
            record = make(tmp)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        (tmp / "built.json").write_text(json.dumps(record) + "\n")
        shutil.rmtree(dest, ignore_errors=True)
        os.replace(tmp, dest)
    return dest, record, True


def source_hash(folder, *also):
    """What the builds of the program in FOLDER depend on in this tree: its files but README.md,
    and the files ALSO (a script its build script runs)."""
    h = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        if p.is_file() and p.name != "README.md":
            h.update(str(p.relative_to(folder)).encode() + b"\0" + p.read_bytes() + b"\0")
    for p in also:
        h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:12]


# ---- running a matrix ---------------------------------------------------------------------------


def every_cell(full_cells, slice_cells):
    """The full matrix and the slice cells it lacks."""
    cells = full_cells()
    return cells + [c for c in slice_cells() if c not in cells]


def cases(full_cells, slice_cells):
    """The cells a run takes: every cell under COMPAT, else the slice."""
    return every_cell(full_cells, slice_cells) if COMPAT else slice_cells()


def selected_cells(request):
    """The cells of the test module of REQUEST (a module fixture's) this session runs, in order:
    the "cell" parameters of its collected tests."""
    cells = [item.callspec.params["cell"] for item in request.session.items
             if item.module is request.module and hasattr(item, "callspec")
             and "cell" in item.callspec.params]
    return list(dict.fromkeys(cells))


def in_background(fn, cells, jobs):
    """A fixture's body: yields {cell: future of FN(cell)}, every cell submitted in order to a
    pool of JOBS threads; what has not started by the end is cancelled."""
    pool = ThreadPoolExecutor(max_workers=jobs)
    futures = {c: pool.submit(fn, c) for c in cells}
    yield futures
    for f in futures.values():
        f.cancel()
    pool.shutdown(wait=True)


def built_and_run(build, run, cells, build_jobs, run_jobs):
    """A fixture's body: yields {cell: future of RUN(cell, future of BUILD(cell))}, every one of
    CELLS built in order by a pool of BUILD_JOBS threads and run in order by one of RUN_JOBS, so
    that the builds overlap the runs of the cells before them."""
    builds = in_background(build, cells, build_jobs)
    futures = next(builds)
    yield from in_background(lambda c: run(c, futures[c]), cells, run_jobs)
    next(builds, None)  # cancels what has not started, and waits for the rest


class Results(dict):
    """Cell -> what a run recorded of it ({"result": "verified (...)" or "FAILED", "why": ...}),
    saved after every cell to <build>/e2e/NAME-full.json (COMPAT) or NAME-slice.json, as rows
    of the cell's FIELDS and then its record."""

    def __init__(self, name, fields, build, why_width):
        super().__init__()
        self.fields, self.why_width = fields, why_width
        self.out = build / "e2e"
        self.file = self.out / f"{name}-{'full' if COMPAT else 'slice'}.json"
        self.lock = threading.RLock()

    def save(self):
        with self.lock:
            self.out.mkdir(parents=True, exist_ok=True)
            rows = [dict(zip(self.fields, cell), **r) for cell, r in self.items()]
            self.file.write_text(json.dumps(rows, indent=1) + "\n")

    @contextmanager
    def record(self, cell):
        """Yields CELL's record, FAILED until the block ends without an exception (the block
        sets the result); the first line of what stopped it is the record's "why". Saved
        either way."""
        rec = {"result": "FAILED", "why": "did not finish"}
        with self.lock:
            self[cell] = rec
        try:
            yield rec
            rec.pop("why")
        except BaseException as e:
            rec["why"] = str(e).splitlines()[0][:self.why_width] if str(e) else type(e).__name__
            raise
        finally:
            self.save()


def load_results(path, fields):
    """The results a run saved (Results.save), keyed by cell."""
    rows = json.loads(Path(path).read_text())
    return {tuple(r[f] for f in fields): r for r in rows}


def write_compatibility(family, results, cells, cache_glob):
    """A module fixture's body: when a COMPAT run has every one of CELLS in RESULTS (not a
    partial run, -k), rewrites FAMILY's section of COMPATIBILITY.md with FAMILY.page_text(),
    noting how long the run took and how many builds it made (FAMILY.BUILT)."""
    t0 = time.monotonic()
    yield
    if not COMPAT or any(c not in results for c in cells):
        return  # the slice, or a partial run (-k), leaves the record of the full matrix alone
    took = (time.monotonic() - t0) / 60
    family.rewrite_section(family.page_text(results, cells, note=(
        f"This run took {took:.0f} minutes on {os.cpu_count()} CPUs and built "
        f"{len(family.BUILT)} of its {len(cells)} cells; the others were cached "
        f"(~/.cache/gospan/{cache_glob}). {built_from()}")))


def built_from():
    """Which gospan a run verified: the commit of this tree, and whether the sources gospan is
    built from differed from it."""
    def git(*args):
        return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True,
                              timeout=30)

    head = git("rev-parse", "--short", "HEAD")
    if head.returncode != 0:
        return "gospan was built outside a git checkout."
    changed = git("status", "--porcelain", "--", "exporter", "bpf", "offsets", "proto",
                  "Makefile").stdout.strip()
    return (f"gospan was built from commit {head.stdout.strip()}"
            + (" with uncommitted changes." if changed else "."))


# ---- the page -----------------------------------------------------------------------------------


def rewrite_section(text, begin, end, page=PAGE):
    """Replaces the section of PAGE between the lines BEGIN and END with TEXT, or appends it; the
    rest of the page (the other sections) is kept as it is."""
    old = page.read_text() if page.exists() else ""
    section = f"{begin}\n{text.rstrip()}\n{end}\n"
    if begin in old and end in old:
        head, rest = old.split(begin, 1)
        tail = rest.split(end, 1)[1].lstrip("\n")
        new = head + section + ("\n" + tail if tail else "")  # a blank line before the next
    else:
        new = old.rstrip("\n") + ("\n\n" if old else "") + section
    page.write_text(new)


def para(text, **kw):
    """TEXT as the page's lines: 95 columns, words kept whole (textwrap.wrap's KW)."""
    return textwrap.wrap(text, 95, break_on_hyphens=False, **kw)


def shown_result(results, cell, fails):
    """What the page says of CELL: its result, "FAILED" (then noted in FAILS) or "not run"."""
    r = results.get(cell)
    if not r:
        return "not run"
    if r["result"] == "FAILED":
        fails[cell] = r
        return "FAILED"
    return r["result"]


def failure_lines(fails, name):
    """The page's list of FAILS (cell -> its record, as shown_result() noted them), each named by
    NAME(cell), then the Go that built it and the flavour (the cell's last two fields): lines
    to add, none without a failure."""
    lines = ["", "Failures:", ""] if fails else []
    for c, r in fails.items():
        lines.append(f"- {name(c)}, {r.get('toolchain') or c[-2]}, {c[-1]}: "
                     + r.get("why", "?").replace("|", "\\|"))
    return lines


def run_lines(cells, results, kernel, note):
    """The page's line saying where and when the run was and how its CELLS went (RESULTS), on
    KERNEL (this one's release without it), and NOTE's paragraph when given."""
    kernel = kernel or platform.release()
    lines = ["", f"Run on Linux {kernel} {platform.machine()}, {time.strftime('%Y-%m-%d')}: "
             f"{tally(cells, results)}."]
    return lines + ([""] + para(note) if note else [])


def site_lines(sites):
    """SITES, (name, text) pairs, as the page's list of where gospan probes."""
    lines = []
    for name, text in sites:
        lines += para(f"**{name}**: {text}", initial_indent="- ", subsequent_indent="  ")
    return lines


def refused(results, cell):
    """The (toolchain, reason) pairs of the Go releases that did not build CELL (RESULTS)."""
    return (results.get(cell) or {}).get("refused") or []


def refused_notes(results, cell):
    """CELL's notes on the older Go releases that did not build it, each reason once."""
    return list(dict.fromkeys(f"older Go did not build it: `{why}`"
                              for _, why in refused(results, cell)))


def refused_lines(results, cells, name, module):
    """The page's paragraph on the cells the oldest Go a release's go.mod allows did not build,
    each release by NAME(cell) with the go directive of MODULE(cell) at it; none when all
    built."""
    seen = {}  # (program, release, reason) -> the toolchains that failed with it, and a cell
    for c in cells:
        for go, why in refused(results, c):
            gos = seen.setdefault((c[0], c[1], why), ([], c))[0]
            gos += [go] if go not in gos else []
    if not seen:
        return []
    lines = [""] + para("Where the oldest Go a release's go.mod allows does not build it, and "
                        "the cell was built with a newer one:") + [""]
    for (_, release, why), (gos, c) in seen.items():
        lines += para(f"- {name(c)}: {', '.join(gos)} stop at `{why}`; its go.mod says go "
                      f"{go_directive(module(c), release)}.", subsequent_indent="  ")
    return lines


def slice_lines(intro, cells, name):
    """The page's paragraph on what CI runs: INTRO, then each of CELLS named by NAME(cell) with
    its flavour and, where not the installed one, its Go."""
    if not cells:
        return []
    return [""] + para(intro + ", ".join(
        f"{name(c)} {c[3]}" + ("" if c[2] == "local" else f" ({toolchain_label(c[2])})")
        for c in cells) + ".")


def tally(cells, results):
    """ "N cells, K verified", then how many failed and how many did not run, where any did."""
    ran = [c for c in cells if c in results]
    ok = [c for c in ran if results[c]["result"].startswith("verified")]
    return (f"{len(cells)} cells, {len(ok)} verified"
            + (f", {len(ran) - len(ok)} failed" if len(ran) > len(ok) else "")
            + (f", {len(cells) - len(ran)} not run" if len(cells) > len(ran) else ""))


def main(argv, family, fields, show):
    """A family module's command line: `--page RESULTS.json [NOTE]` rewrites its section of
    COMPATIBILITY.md from a saved run of the full matrix (FIELDS name a row's cell); else the
    cells of the slice, or with --full of the full matrix, one a line as SHOW gives it."""
    if argv[:1] == ["--page"]:
        res = load_results(argv[1], fields)
        cells = every_cell(family.full_cells, family.slice_cells)
        family.rewrite_section(family.page_text(res, cells,
                                                note=argv[2] if len(argv) > 2 else None))
        return 0
    for c in family.full_cells() if "--full" in argv else family.slice_cells():
        print(show(c))
    return 0
