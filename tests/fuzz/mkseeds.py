#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Regenerates the seed corpora in tests/fuzz/corpus/ from real inputs.

    python3 tests/fuzz/mkseeds.py            # from the repository root; needs go, cc, objcopy

Real Go binaries are megabytes, too big for a corpus libFuzzer mutates at speed, so each one is
cut down to a small ELF file that keeps what gospan reads, at the addresses the Go linker chose:
the first functions of .text with their symbols, the Go function table rewritten to list only
those functions (same format, same header, names and records copied from the original), the
buildinfo (and, in the pre-1.18 format, the strings it points at), runtime.moduledata where the
table needs it (Go 1.26), and a DWARF .debug_info holding one unit with the structs gospan reads
and a few functions with the types they reference (entries copied byte for byte, references
moved). The binaries are built from tests/unit/testdata with the
installed Go and, through GOTOOLCHAIN, older releases; a release that cannot be had is skipped.

The other corpora come from the project's own inputs: offsets/go_offsets.json, settings as a
process receives them, --functions files as docs/functions.md writes them, OTLP responses
encoded by the official opentelemetry-proto package, ring-buffer records written by
tests/fuzz/seeds/records.c from the events.h structs, and SQL queries in each dialect's quoting.

Regression inputs (regress-*) are crashes the fuzzers found; they are kept as they are.
"""
import bisect
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "fuzz" / "corpus"
NFUNCS = 24  # functions kept from the start of .text

SHT_PROGBITS, SHT_SYMTAB, SHT_STRTAB, SHT_NOBITS = 1, 2, 3, 8
SHF_ALLOC, SHF_COMPRESSED = 0x2, 0x800
PT_LOAD = 1

# Structs whose members gospan reads (exporter/analysis/fields.c, go_field_names).
WANTED_STRUCTS = {
    "runtime.g", "net/http.Request", "net/http.pattern", "net/url.URL", "net/http.response",
    "net/http.Response", "bufio.Writer", "runtime.hmap", "internal/runtime/maps.Map",
    "internal/runtime/maps.table", "internal/runtime/maps.groupsReference",
}
# Functions kept with their parameters, for dwarf__read_funcs (fuzz_dwarf looks them up).
WANTED_FUNCS = {
    "net/http.serverHandler.ServeHTTP", "main.main", "net/http.(*conn).serve",
    "net/url.(*URL).String", "net/http.Header.Get", "net/http.(*Request).Context",
    "fmt.Fprintln", "net/http.HandleFunc",
}
TYPE_HOPS = 3  # how far references from the wanted entries are followed


# ---- reading ELF --------------------------------------------------------------------------------

class Elf:
    """A 64-bit little-endian ELF file: the only kind gospan's targets are."""

    def __init__(self, path):
        self.raw = Path(path).read_bytes()
        r = self.raw
        assert r[:4] == b"\x7fELF" and r[4] == 2 and r[5] == 1, f"{path}: not ELF64 LE"
        (self.type, self.machine, _, self.entry, phoff, shoff, _, _, phentsize, phnum,
         shentsize, shnum, shstrndx) = struct.unpack_from("<HHIQQQIHHHHHH", r, 16)
        self.phdrs = [struct.unpack_from("<IIQQQQQQ", r, phoff + i * phentsize)
                      for i in range(phnum)]
        self.sections = []
        for i in range(shnum):
            (name, typ, flags, addr, off, size, link, info, align,
             entsize) = struct.unpack_from("<IIQQQQIIQQ", r, shoff + i * shentsize)
            self.sections.append(dict(name_off=name, type=typ, flags=flags, addr=addr, offset=off,
                                      size=size, link=link, info=info, align=align,
                                      entsize=entsize, index=i))
        strtab = self.sections[shstrndx]
        for s in self.sections:
            start = strtab["offset"] + s["name_off"]
            s["name"] = r[start:r.index(b"\0", start)].decode()

    def section(self, name):
        for s in self.sections:
            if s["name"] == name:
                return s
        return None

    def data(self, s):
        return b"" if s["type"] == SHT_NOBITS else self.raw[s["offset"]:s["offset"] + s["size"]]

    def contents(self, name):
        """The bytes of section NAME, inflated when compressed (SHF_COMPRESSED or .zdebug)."""
        s = self.section(name) or self.section(".z" + name[1:])
        if not s:
            return None
        d = self.data(s)
        if s["flags"] & SHF_COMPRESSED:
            return zlib.decompress(d[24:])
        if s["name"].startswith(".zdebug") and d[:4] == b"ZLIB":
            return zlib.decompress(d[12:])
        return d

    def read(self, addr, n):
        for (typ, _, off, vaddr, _, filesz, _, _) in self.phdrs:
            if typ == PT_LOAD and vaddr <= addr and addr + n <= vaddr + filesz:
                return self.raw[off + addr - vaddr:off + addr - vaddr + n]
        raise KeyError(hex(addr))


# ---- writing ELF --------------------------------------------------------------------------------

def write_elf(path, machine, etype, sections, loads=()):
    """Writes an ELF file with SECTIONS (dicts: name, type, flags, addr, data, and optionally
    link (a section name), info, align, entsize). Each allocated section gets a PT_LOAD segment at
    its address, and so does each (addr, bytes) of LOADS, which no section covers."""
    names = b"\0"
    name_off = {}
    for s in sections + [dict(name=".shstrtab")]:
        name_off[s["name"]] = len(names)
        names += s["name"].encode() + b"\0"
    segs = [(s["addr"], s) for s in sections if s["flags"] & SHF_ALLOC and s["type"] != SHT_NOBITS]
    segs += [(addr, dict(data=data)) for addr, data in loads]
    phoff = 64
    pos = phoff + 56 * len(segs)
    blobs = []
    for s in sections:
        pos = (pos + 15) & ~15
        s["offset"] = pos
        blobs.append((pos, s.get("data", b"")))
        if s["type"] != SHT_NOBITS:
            pos += len(s["data"])
    for _, extra in segs:
        if "offset" not in extra:
            pos = (pos + 15) & ~15
            extra["offset"] = pos
            blobs.append((pos, extra["data"]))
            pos += len(extra["data"])
    shstr_off = pos
    pos += len(names)
    shoff = (pos + 7) & ~7
    index = {s["name"]: i + 1 for i, s in enumerate(sections)}
    out = bytearray(shoff + 64 * (len(sections) + 2))
    out[0:16] = b"\x7fELF\x02\x01\x01" + bytes(9)
    struct.pack_into("<HHIQQQIHHHHHH", out, 16, etype, machine, 1, 0, phoff, shoff, 0, 64, 56,
                     len(segs), 64, len(sections) + 2, len(sections) + 1)
    for i, (addr, s) in enumerate(segs):
        size = len(s["data"])
        struct.pack_into("<IIQQQQQQ", out, phoff + 56 * i, PT_LOAD, 5, s["offset"], addr, addr,
                         size, size, 1)
    for off, data in blobs:
        out[off:off + len(data)] = data
    out[shstr_off:shstr_off + len(names)] = names
    for i, s in enumerate(sections, start=1):
        size = s.get("size", len(s.get("data", b"")))
        struct.pack_into("<IIQQQQIIQQ", out, shoff + 64 * i, name_off[s["name"]], s["type"],
                         s["flags"], s.get("addr", 0), s["offset"], size,
                         index.get(s.get("link"), 0), s.get("info", 0), s.get("align", 1),
                         s.get("entsize", 0))
    struct.pack_into("<IIQQQQIIQQ", out, shoff + 64 * (len(sections) + 1),
                     name_off[".shstrtab"], SHT_STRTAB, 0, 0, shstr_off, len(names), 0, 0, 1, 0)
    Path(path).write_bytes(out)


# ---- the Go function table ----------------------------------------------------------------------

def reduce_pclntab(elf, nfuncs):
    """The function table of ELF cut to its first NFUNCS functions. Returns (bytes, text_base,
    end_entry, magic) where text_base + end_entry is where the last kept function ends."""
    sec = elf.section(".gopclntab")
    d = elf.data(sec)
    magic, ptrsize = struct.unpack_from("<I", d)[0], d[7]
    assert ptrsize == 8
    if magic == 0xfffffffa:  # Go 1.16-1.17: absolute uintptr entries
        nwords, fs = 7, 8
        word = lambda i: struct.unpack_from("<Q", d, 8 + 8 * i)[0]
        nfunc, funcname_off, pcln_off, text_start = word(0), word(2), word(6), 0
    else:  # 1.18 on: uint32 entries relative to the text start
        nwords, fs = 8, 4
        word = lambda i: struct.unpack_from("<Q", d, 8 + 8 * i)[0]
        nfunc, text_start, funcname_off, pcln_off = word(0), word(2), word(3), word(7)
    fmt = "<Q" if fs == 8 else "<I"
    pair = "<QQ" if fs == 8 else "<II"
    ft = lambda i: struct.unpack_from(fmt, d, pcln_off + i * fs)[0]
    hdr_len = 8 + 8 * nwords
    keep = [i for i in range(nfunc) if ft(2 * i + 1) != (1 << (8 * fs)) - 1][:nfuncs]
    assert keep == list(range(len(keep))), "a gap among the first functions"
    names, nameoffs = bytearray(), []
    for i in keep:
        rec = pcln_off + ft(2 * i + 1)
        nameoff = struct.unpack_from("<I", d, rec + fs)[0]
        start = funcname_off + nameoff
        nameoffs.append(len(names))
        names += d[start:d.index(b"\0", start) + 1]
    new_funcname = hdr_len
    new_pcln = (new_funcname + len(names) + 7) & ~7
    n = len(keep)
    ftab = bytearray()
    recs = bytearray()
    rec_base = (2 * n + 2) * fs
    rec_len = 48 if fs == 8 else 44
    for k, i in enumerate(keep):
        rec = pcln_off + ft(2 * i + 1)
        body = bytearray(d[rec:rec + rec_len])
        struct.pack_into("<I", body, fs, nameoffs[k])
        ftab += struct.pack(pair, ft(2 * i), rec_base + len(recs))
        recs += body
    end_entry = ft(2 * n)
    ftab += struct.pack(pair, end_entry, 0)
    words = [n, 0]
    if magic == 0xfffffffa:
        words += [new_funcname] + [new_pcln] * 4
    else:
        words += [text_start, new_funcname] + [new_pcln] * 4
    out = bytearray(d[:8]) + struct.pack("<%dQ" % nwords, *words) + names
    out += bytes(new_pcln - len(out)) + ftab + recs
    info = dict(addr=sec["addr"], magic=magic, text_start=text_start, funcname_off=new_funcname,
                names_len=len(names), pcln_off=new_pcln, pcln_len=len(ftab) + len(recs), nfunc=n,
                first=ft(0), end=end_entry)
    return bytes(out), info


def patch_moduledata(elf, info):
    """The .go.module section with runtime.moduledata pointing at the reduced table, for releases
    whose table header leaves the text start out (Go 1.26). None when not needed."""
    sec = elf.section(".go.module")
    if info["magic"] == 0xfffffffa or info["text_start"] or not sec:
        return None
    d = bytearray(elf.data(sec))
    words = lambda off: list(struct.unpack_from("<23Q", d, off))
    for off in range(0, len(d) - 23 * 8 + 1, 8):
        w = words(off)
        if w[0] != info["addr"]:
            continue
        text = w[22]
        a = info["addr"]
        w[1:4] = [a + info["funcname_off"], info["names_len"], info["names_len"]]
        for i in (4, 7, 10):
            w[i:i + 3] = [a + info["pcln_off"], 0, 0]
        w[13:16] = [a + info["pcln_off"], info["pcln_len"], info["pcln_len"]]
        w[16:19] = [a + info["pcln_off"], info["nfunc"] + 1, info["nfunc"] + 1]
        w[20], w[21] = text + info["first"], text + info["end"]
        struct.pack_into("<23Q", d, off, *w)
        info["text_start"] = text
        return dict(name=".go.module", type=SHT_PROGBITS, flags=sec["flags"], addr=sec["addr"],
                    data=bytes(d), align=32)
    raise SystemExit("no runtime.moduledata in .go.module")


# ---- DWARF --------------------------------------------------------------------------------------

def uleb(b, pos):
    v = shift = 0
    while True:
        c = b[pos]
        pos += 1
        v |= (c & 0x7f) << shift
        shift += 7
        if c < 0x80:
            return v, pos


def parse_abbrevs(b):
    abbrevs, pos = {}, 0
    while pos < len(b):
        code, pos = uleb(b, pos)
        if not code:
            break
        tag, pos = uleb(b, pos)
        children = b[pos]
        pos += 1
        attrs = []
        while True:
            at, pos = uleb(b, pos)
            form, pos = uleb(b, pos)
            if form == 0x21:  # DW_FORM_implicit_const
                _, pos = uleb(b, pos)
            if not at and not form:
                break
            attrs.append((at, form))
        abbrevs[code] = (tag, children, attrs)
    return abbrevs


FIXED_FORMS = {0x05: 2, 0x06: 4, 0x07: 8, 0x0b: 1, 0x0c: 1, 0x0e: 4, 0x10: 4, 0x11: 1, 0x12: 2,
               0x13: 4, 0x14: 8, 0x17: 4, 0x19: 0, 0x1c: 4, 0x1d: 4, 0x1e: 16, 0x1f: 4, 0x20: 8,
               0x21: 0, 0x25: 1, 0x26: 2, 0x27: 3, 0x28: 4, 0x29: 1, 0x2a: 2, 0x2b: 3, 0x2c: 4}
ULEB_FORMS = {0x0d, 0x0f, 0x15, 0x1a, 0x1b, 0x22, 0x23}


def skip_form(b, pos, form):
    if form in FIXED_FORMS:
        return pos + FIXED_FORMS[form]
    if form in ULEB_FORMS:
        return uleb(b, pos)[1]
    if form == 0x01:
        return pos + 8
    if form == 0x08:
        return b.index(b"\0", pos) + 1
    if form == 0x0a:
        return pos + 1 + b[pos]
    if form == 0x03:
        return pos + 2 + struct.unpack_from("<H", b, pos)[0]
    if form == 0x04:
        return pos + 4 + struct.unpack_from("<I", b, pos)[0]
    if form in (0x09, 0x18):
        n, pos = uleb(b, pos)
        return pos + n
    if form == 0x16:
        f, pos = uleb(b, pos)
        return skip_form(b, pos, f)
    raise SystemExit(f"DWARF form 0x{form:x} not handled")


def read_die(b, pos, abbrevs):
    """(end of this DIE's attributes, tag, has children, name or None)."""
    code, pos = uleb(b, pos)
    if not code:
        return pos, 0, False, None
    tag, children, attrs = abbrevs[code]
    name = None
    for at, form in attrs:
        if at == 0x03 and form == 0x08:  # DW_AT_name, inline string
            name = b[pos:b.index(b"\0", pos)].decode(errors="replace")
        pos = skip_form(b, pos, form)
    return pos, tag, bool(children), name


def skip_subtree(b, pos, abbrevs):
    """The offset after the DIE at POS and all its children."""
    pos, tag, children, _ = read_die(b, pos, abbrevs)
    if tag and children:
        while b[pos] != 0:
            pos = skip_subtree(b, pos, abbrevs)
        pos += 1
    return pos


def die_refs(b, pos, abbrevs, cu_off):
    """The references in the subtree at POS: (position of the value, form, absolute target)."""
    refs = []
    depth = 0
    while True:
        code, p = uleb(b, pos)
        if not code:
            pos = p
            depth -= 1
            if depth <= 0:
                return refs, pos
            continue
        tag, children, attrs = abbrevs[code]
        for at, form in attrs:
            if form == 0x10:  # DW_FORM_ref_addr
                refs.append((p, form, struct.unpack_from("<I", b, p)[0]))
            elif form == 0x13:  # DW_FORM_ref4, unit-relative
                refs.append((p, form, cu_off + struct.unpack_from("<I", b, p)[0]))
            elif form in (0x11, 0x12, 0x14, 0x15):
                raise SystemExit(f"DWARF reference form 0x{form:x} not handled")
            p = skip_form(b, p, form)
        pos = p
        if children:
            depth += 1
        elif depth == 0:
            return refs, pos


def reduce_dwarf(elf):
    """(.debug_abbrev, .debug_info, what was kept) with one unit: the first unit's own entry,
    the wanted structs and functions, and the types they reference up to TYPE_HOPS away, copied
    byte for byte with their references moved; a reference to anything left out points at one
    base type instead. None when the binary has no DWARF."""
    info, abbrev = elf.contents(".debug_info"), elf.contents(".debug_abbrev")
    if not info or not abbrev:
        return None
    abbrevs = parse_abbrevs(abbrev)
    pos, first_hdr, first_die = 0, None, None
    tops = []  # (start, end, unit offset, tag, name) of every top-level entry
    while pos < len(info):
        length, version = struct.unpack_from("<IH", info, pos)
        hdr_len = 12 if version >= 5 else 11
        end = pos + 4 + length
        abbrev_off = struct.unpack_from("<I", info, pos + (8 if version >= 5 else 6))[0]
        assert abbrev_off == 0, "one abbrev table"
        die = pos + hdr_len
        die_end, _, _, _ = read_die(info, die, abbrevs)
        if first_hdr is None:
            first_hdr = info[pos + 4:pos + hdr_len]
            first_die = info[die:die_end]
        child = die_end
        while child < end and info[child] != 0:
            _, tag, _, name = read_die(info, child, abbrevs)
            nxt = skip_subtree(info, child, abbrevs)
            tops.append((child, nxt, pos, tag, name))
            child = nxt
        pos = end
    starts = [t[0] for t in tops]

    def top_of(off):
        i = bisect.bisect_right(starts, off) - 1
        return i if i >= 0 and off < tops[i][1] else None

    keep, seen_names, frontier = [], set(), []
    placeholder = None
    for i, (a, b, cu, tag, name) in enumerate(tops):
        if placeholder is None and tag == 0x24:  # DW_TAG_base_type
            placeholder = i
        wanted = (tag == 0x13 and name in WANTED_STRUCTS) or (tag == 0x2e and name in WANTED_FUNCS)
        if wanted and (tag, name) not in seen_names:
            seen_names.add((tag, name))
            frontier.append(i)
    kept = {placeholder: 0}
    keep.append(placeholder)
    hops = 0
    while frontier and hops <= TYPE_HOPS:
        nxt = []
        for i in frontier:
            if i in kept:
                continue
            kept[i] = 0
            keep.append(i)
            refs, _ = die_refs(info, tops[i][0], abbrevs, tops[i][2])
            nxt += [t for t in (top_of(r[2]) for r in refs) if t is not None and t not in kept]
        frontier = nxt
        hops += 1
    # Lay the copies out and move every reference.
    out = bytearray(struct.pack("<I", 0) + first_hdr + first_die)
    for i in keep:
        kept[i] = len(out)
        out += info[tops[i][0]:tops[i][1]]
    out += b"\0"
    for i in keep:
        refs, _ = die_refs(info, tops[i][0], abbrevs, tops[i][2])
        for vpos, form, target in refs:
            t = top_of(target)
            new = kept[t] + target - tops[t][0] if t in kept else kept[placeholder]
            struct.pack_into("<I", out, kept[i] + vpos - tops[i][0], new)
    struct.pack_into("<I", out, 0, len(out) - 4)
    names = sorted(tops[i][4] for i in keep if tops[i][3] in (0x13, 0x2e) and tops[i][4] in
                   WANTED_STRUCTS | WANTED_FUNCS)
    return abbrev, bytes(out), names


# ---- one reduced binary -------------------------------------------------------------------------

def reduce_binary(path, out_dir, stem):
    """Writes STEM.elf (everything) and a few variants into the corpora; returns what was kept."""
    elf = Elf(path)
    sections, loads = [], []
    table, info = reduce_pclntab(elf, NFUNCS)
    md = patch_moduledata(elf, info)
    text = elf.section(".text")
    base = info["text_start"] if info["magic"] != 0xfffffffa else 0
    text_end = base + info["end"]
    sections.append(dict(name=".text", type=SHT_PROGBITS, flags=text["flags"], addr=text["addr"],
                         data=elf.read(text["addr"], text_end - text["addr"]), align=64))
    sections.append(dict(name=".gopclntab", type=SHT_PROGBITS, flags=SHF_ALLOC,
                         addr=info["addr"], data=table, align=32))
    bi = elf.section(".go.buildinfo")
    bi_data = elf.data(bi)
    sections.append(dict(name=".go.buildinfo", type=SHT_PROGBITS, flags=bi["flags"],
                         addr=bi["addr"], data=bi_data, align=16))
    if not bi_data[15] & 2:  # before Go 1.18: pointers to string headers elsewhere
        for ptr in struct.unpack_from("<2Q", bi_data, 16):
            hdr = elf.read(ptr, 16)
            data, length = struct.unpack("<2Q", hdr)
            loads += [(ptr, hdr), (data, elf.read(data, length))]
    if md:
        sections.append(md)
    symtab = elf.section(".symtab")
    if symtab:
        strtab = elf.sections[symtab["link"]]
        sd, st = elf.data(symtab), elf.data(strtab)
        syms, strs = bytearray(24), bytearray(b"\0")
        for off in range(24, len(sd), 24):
            name, info_b, other, shndx, value, size = struct.unpack_from("<IBBHQQ", sd, off)
            if info_b & 0xf != 2 or not text["addr"] <= value < text_end:
                continue
            nm = st[name:st.index(b"\0", name) + 1]
            syms += struct.pack("<IBBHQQ", len(strs), info_b, other, 1, value, size)
            strs += nm
        sections.append(dict(name=".symtab", type=SHT_SYMTAB, flags=0, addr=0, data=bytes(syms),
                             link=".strtab", info=1, align=8, entsize=24))
        sections.append(dict(name=".strtab", type=SHT_STRTAB, flags=0, addr=0, data=bytes(strs)))
    dwarf = reduce_dwarf(elf)
    if dwarf:
        abbrev, dinfo, structs = dwarf
        sections.append(dict(name=".debug_abbrev", type=SHT_PROGBITS, flags=0, data=abbrev))
        sections.append(dict(name=".debug_info", type=SHT_PROGBITS, flags=0, data=dinfo))
    whole = out_dir / f"{stem}.elf"
    write_elf(whole, elf.machine, elf.type, sections, loads)
    return whole, dwarf is not None


def objcopy(src, dst, *args):
    subprocess.run(["objcopy", *args, str(src), str(dst)], check=True)
    os.chmod(dst, 0o644)


def go_build(tmp, name, env=None, flags=(), toolchain=None, src="httpserver"):
    out = Path(tmp) / name
    # -buildvcs is Go 1.18's; the module directories are not repositories anyway.
    e = dict(os.environ, CGO_ENABLED="0", GOFLAGS="-mod=mod" if toolchain == "go1.17.13" else
             "-buildvcs=false", **(env or {}))
    if toolchain:
        e["GOTOOLCHAIN"] = toolchain
        e.pop("GOROOT", None)
    r = subprocess.run(["go", "build", *flags, "-o", str(out), "."], env=e,
                       cwd=ROOT / "tests" / "unit" / "testdata" / src, capture_output=True,
                       text=True)
    if r.returncode:
        print(f"mkseeds: skipping {name}: {r.stderr.strip()[:200]}", file=sys.stderr)
        return None
    return out


def fresh(name):
    d = CORPUS / name
    d.mkdir(parents=True, exist_ok=True)
    for f in d.iterdir():
        if not f.name.startswith("regress-"):
            f.unlink()
    return d


def elf_seeds(tmp):
    dirs = {n: fresh(n) for n in ("elf", "gobin", "pclntab", "dwarf")}
    builds = [
        ("go-plain", {}, ["-ldflags=-compressdwarf=false"], None, "httpserver"),
        ("go-stripped", {}, ["-ldflags=-s -w"], None, "httpserver"),
        ("go-pie", {}, ["-buildmode=pie"], None, "httpserver"),
        ("go-arm64", {"GOARCH": "arm64"}, ["-ldflags=-w"], None, "httpserver"),
        ("go-withdeps", {}, ["-ldflags=-w"], None, "withdeps"),
        ("go1.22", {}, [], "go1.22.12", "httpserver"),
        ("go1.18", {}, ["-ldflags=-s -w"], "go1.18.10", "httpserver"),
        ("go1.17", {}, [], "go1.17.13", "httpserver"),
    ]
    for stem, env, flags, toolchain, src in builds:
        binary = go_build(tmp, stem, env, flags, toolchain, src)
        if not binary:
            continue
        whole, has_dwarf = reduce_binary(binary, Path(tmp), stem)
        for d in ("elf", "gobin", "pclntab"):
            shutil.copy(whole, dirs[d] / whole.name)
        if has_dwarf:
            shutil.copy(whole, dirs["dwarf"] / whole.name)
            objcopy(whole, dirs["dwarf"] / f"{stem}-zlib.elf", "--compress-debug-sections=zlib")
            objcopy(whole, dirs["dwarf"] / f"{stem}-zdebug.elf",
                    "--compress-debug-sections=zlib-gnu")
        if stem == "go-plain":
            # The table where external linkers leave it: inside .data.rel.ro, found by scanning.
            objcopy(whole, dirs["pclntab"] / "go-scanned.elf",
                    "--rename-section", ".gopclntab=.data.rel.ro")
            # A truncated copy: headers that point past the end of the file.
            raw = whole.read_bytes()
            (dirs["elf"] / "go-truncated.elf").write_bytes(raw[:len(raw) // 2])
            # Without section headers.
            (dirs["elf"] / "go-no-sections.elf").write_bytes(
                raw[:40] + bytes(8) + raw[48:60] + bytes(4) + raw[64:])


def disasm_seeds():
    """Whole functions from the reduced binaries, by their .symtab entries (x86-64 and arm64),
    each with the target of its first direct call (x86 CALL rel32), or none."""
    d = fresh("disasm")
    for src in sorted((CORPUS / "elf").glob("go-*.elf")):
        try:
            elf = Elf(src)
        except (AssertionError, struct.error, IndexError, ValueError):
            continue  # the truncated and section-less variants
        text, symtab = elf.section(".text"), elf.section(".symtab")
        if not text or not symtab:
            continue
        arm = elf.machine == 183  # EM_AARCH64
        sd, picked = elf.data(symtab), 0
        for off in range(24, len(sd), 24):
            _, _, _, _, value, size = struct.unpack_from("<IBBHQQ", sd, off)
            if not 16 <= size <= 4096 or picked == 3:
                continue
            code = elf.read(value, size)
            target = 0
            for i in range(len(code) - 5):
                if not arm and code[i] == 0xe8:
                    target = (i + 5 + struct.unpack_from("<i", code, i + 1)[0]) & (2**64 - 1)
                    break
            (d / f"{src.stem}-{picked}.bin").write_bytes(bytes([1 if arm else 0]) +
                                                         struct.pack("<Q", target) + code)
            picked += 1
    # Whole net/http functions, too big for the reduced binaries: tests/fuzz/seeds/disasm-*.bin,
    # e.g. (*Transport).roundTrip with its persistConn.roundTrip call (sites.c's success exit).
    for seed in sorted((ROOT / "tests" / "fuzz" / "seeds").glob("disasm-*.bin")):
        (d / seed.name[len("disasm-"):]).write_bytes(seed.read_bytes())


def offsets_seeds():
    d = fresh("offsets")
    text = (ROOT / "offsets" / "go_offsets.json").read_text()
    (d / "go_offsets.json").write_text(text)
    table = json.loads(text)
    versions = table["versions"]
    for name, keep in (("two-versions", versions[:2]), ("one-version", versions[-1:])):
        fields = {}
        for f, ranges in table["fields"].items():
            rs = [r for r in ranges if r["from"] in keep and r["to"] in keep]
            if rs:
                fields[f] = rs
        (d / f"{name}.json").write_text(json.dumps(dict(table, versions=keep, fields=fields),
                                                   indent=1))
    (d / "wrong-schema.json").write_text('{"schema": 2, "versions": ["1.22.0"], "fields": {}}')
    (d / "bad-range.json").write_text(
        '{"schema": 1, "versions": ["1.21.0", "1.22.0"], "fields": {"runtime.g.goid": '
        '[{"from": "1.22.0", "to": "1.21.0", "offset": 152}, {"from": "1.21.0", "to": "1.21.0",'
        ' "offset": 1e300}]}}')


def config_seeds():
    d = fresh("config")
    seeds = {
        "defaults": [],
        "mackerel": ["OTEL_EXPORTER_OTLP_ENDPOINT=https://otlp-vaxila.mackerelio.com",
                     "OTEL_EXPORTER_OTLP_HEADERS=Mackerel-Api-Key=k%20ey,Accept=*/*",
                     "OTEL_EXPORTER_OTLP_COMPRESSION=gzip", "OTEL_SERVICE_NAME=checkout",
                     "", "--pid", "4242"],
        "everything": ["OTEL_GO_AUTO_TARGET_EXE=/usr/local/bin/app",
                       "OTEL_RESOURCE_ATTRIBUTES=deployment.environment=prod,team=a%2Cb",
                       "OTEL_TRACES_EXPORTER=console", "OTEL_EXPORTER_OTLP_PROTOCOL=http/json",
                       "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://[::1]:4318/v1/traces",
                       "OTEL_EXPORTER_OTLP_TRACES_HEADERS=x-a=1,,  x-b = 2 ",
                       "OTEL_EXPORTER_OTLP_TIMEOUT=2500", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT=99",
                       "OTEL_BSP_SCHEDULE_DELAY=100", "OTEL_BSP_EXPORT_TIMEOUT=1000",
                       "OTEL_BSP_MAX_QUEUE_SIZE=16", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE=8",
                       "OTEL_LOG_LEVEL=debug", "OTEL_TRACES_SAMPLER=parentbased_traceidratio",
                       "OTEL_TRACES_SAMPLER_ARG=0.25", "OTEL_SDK_DISABLED=false",
                       "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION=none",
                       "OTEL_EXPORTER_OTLP_CERTIFICATE=ca.pem",
                       "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE=c.pem",
                       "OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY=k.pem",
                       "OTEL_EXPORTER_OTLP_INSECURE=true", "GOSPAN_FOLLOW_GOROUTINES=1",
                       "", "--exe=/srv/a", "--pid", "1", "--exe", "/srv/b", "-v",
                       "--follow-goroutines"],
        "refused": ["OTEL_EXPORTER_OTLP_PROTOCOL=grpc", "", "--pid", "-3", "--bogus", "x"],
        "help": ["OTEL_EXPORTER_OTLP_HEADERS=a=%zz", "", "--help", "--version", "-h"],
    }
    for name, strings in seeds.items():
        (d / name).write_bytes(b"\0".join(s.encode() for s in strings))


def functions_seeds():
    """--functions files: the documented example and the other forms docs/functions.md lists."""
    d = fresh("functions")
    seeds = {
        "documented.json": {"functions": [
            {"symbol": "github.com/free5gc/amf/internal/gmm.HandleRegistrationRequest"},
            {"symbol": "main.(*Store).Get", "args": ["key", "s.cfg.Limit"]},
            {"symbol": "main.handleOrder", "args": ["o.ID", "o.Customer.Name"]},
            {"pattern": "main.(\\*Store).*", "max": 20},
            {"symbol": "main.process", "binary": "checkout",
             "params": ["string", "int", "bool", "float64", "int8"],
             "args": [{"name": "level", "position": 5, "type": "int8"}]}]},
        "types.json": {"functions": [
            {"symbol": "main.f", "params": ["uint16", "float32", "complex128", "[]byte",
                                            "map[string]int", "*main.T", "uintptr", "int64",
                                            "any", "chan int", "func()", "rune", "error"],
             "args": [{"name": "p", "position": 6, "type": "*main.T"},
                      {"name": "s", "position": 4, "type": "[]byte"}]},
            {"pattern": "*.func?", "binary": "svc"}]},
        "empty.json": {"functions": []},
        "refused.json": {"functions": [{"symbol": "a", "pattern": "b"}, {"max": -1}],
                         "extra": 1},
    }
    for name, doc in seeds.items():
        (d / name).write_text(json.dumps(doc, indent=1))


def response_seeds():
    d = fresh("response")
    try:
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2 as ts
    except ImportError:
        raise SystemExit("mkseeds: needs the opentelemetry-proto package (make deps)")
    full = ts.ExportTraceServiceResponse()
    full.partial_success.rejected_spans = 3
    full.partial_success.error_message = "3 spans had no name \u2603"
    empty_ps = ts.ExportTraceServiceResponse()
    empty_ps.partial_success.SetInParent()
    seeds = {
        "pb-partial": b"\0" + full.SerializeToString(),
        "pb-empty-partial": b"\0" + empty_ps.SerializeToString(),
        "pb-empty": b"\0",
        "json-partial": b"\1" + json.dumps({"partialSuccess": {
            "rejectedSpans": "3", "errorMessage": "3 spans had no name"}}).encode(),
        "json-number": b"\1" + b'{"partialSuccess": {"rejectedSpans": 2.0}}',
        "json-empty": b"\1{}",
    }
    for name, data in seeds.items():
        (d / name).write_bytes(data)


def dbquery_seeds():
    """SQL as services send it, one file per dialect's quoting; byte 0 is the dialect (bits 0-1:
    generic, postgresql, mysql, sqlite) and bit 2 a capture cut short, as fuzz_dbquery reads it."""
    d = fresh("dbquery")
    generic, pg, mysql, sqlite, cut = 0, 1, 2, 3, 4
    seeds = {
        "pg-update": (pg, "UPDATE users SET password = 'hunter2', pin = 1.5e3 WHERE id = $1"),
        "pg-escapes": (pg, "INSERT INTO \"Public\".t(a, b) VALUES (E'it\\'s', U&'d\\0061t') "
                           "RETURNING id /* a /* nested */ comment */"),
        "pg-dollar": (pg, "CREATE FUNCTION f() RETURNS int AS $body$ SELECT 'x'; $$ $body$ "
                          "LANGUAGE sql; SELECT $$a$$, $tag$b$tag$, a::int, arr[1]"),
        "pg-cut": (pg | cut, "SELECT * FROM orders o JOIN items i ON i.o = o.id WHERE note = 'ab"),
        "mysql-select": (mysql, "SELECT `id`, \"name\" FROM `shop`.`users` # it's\n"
                                "WHERE pw = 'a\\'b' AND n = 0x1F AND x = 1--1\n-- end"),
        "mysql-insert": (mysql, "INSERT IGNORE INTO t (a, b) VALUES (?, N'x') "
                                "ON DUPLICATE KEY UPDATE b = VALUES(b)"),
        "sqlite-select": (sqlite, "SELECT [my col], \"q\", X'00ff' FROM t WHERE a = ?1 AND "
                                  "b = :b AND c = $c"),
        "generic-with": (generic, "WITH x AS (SELECT * FROM t WHERE a IN (1, 2)) "
                                  "DELETE FROM u WHERE b = 'C:\\dir' -- note\n"),
        "generic-ambiguous": (generic, "SELECT 'a\\', 'b' FROM t # '\n[it's] $$ ' $$"),
        "generic-ddl": (generic | cut, "CREATE TABLE IF NOT EXISTS events (id bigint, at "
                                      "timestamp DEFAULT now(), note text DEFAULT 'x"),
    }
    for name, (flags, sql) in seeds.items():
        (d / name).write_bytes(bytes([flags]) + sql.encode())


def container_seeds():
    """/proc/PID/cgroup files as the kernel writes them for processes in containers and pods (the
    forms container.c names) and in none, as fuzz_container reads them: the text as is."""
    d = fresh("container")
    cid, cid2 = "7f0d038f65ceda58eac9833d1f68d317c8c586f2186efd8ee95d149be23194e5", "e5" * 32
    uid = "fdff8daf-43e0-438f-8d9d-78d7c0e0a821"
    v1 = ["name=systemd", "pids", "blkio", "freezer", "devices", "memory", "cpuset", "cpuacct",
          "cpu"]

    def hybrid(path, v2=None):
        lines = [f"{9 - i}:{c}:{path}" for i, c in enumerate(v1)]
        return "\n".join(lines + [f"0::{path if v2 is None else v2}"]) + "\n"

    seeds = {
        "docker-cgroupfs-v1": hybrid(f"/docker/{cid}"),
        "docker-systemd-hybrid": hybrid(f"/system.slice/docker-{cid}.scope", "/"),
        "docker-systemd-v2": f"0::/system.slice/docker-{cid}.scope\n",
        "docker-other-ns": f"0::/../../docker-{cid}.scope\n",
        "docker-in-docker": f"0::/docker/{cid2}/docker/{cid}\n",
        "k8s-systemd-containerd": "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-"
                                  f"pod{uid.replace('-', '_')}.slice/cri-containerd-{cid}.scope\n",
        "k8s-cgroupfs": hybrid(f"/kubepods/burstable/pod{uid}/{cid}"),
        "crio": f"0::/kubepods.slice/kubepods-pod{uid.replace('-', '_')}.slice/crio-{cid}.scope"
                "/container\n",
        "crio-conmon": f"0::/kubepods.slice/crio-conmon-{cid}.scope\n",
        "podman": f"0::/machine.slice/libpod-{cid}.scope/container\n",
        "containerd-namespace": f"0::/default/{cid}\n",
        "host-process": hybrid("/", "/user.slice/user-1000.slice/session-3.scope"),
    }
    for name, text in seeds.items():
        (d / name).write_bytes(text.encode())


def prometheus_seeds():
    """What clients send to the metrics port, as fuzz_prometheus reads it: the bytes as they
    arrived. Prometheus's own scrape (its Accept header, as 2.x sends it), curl, a HEAD, a POST
    with a body, a request on LF line ends and an absolute-form target, and malformed heads."""
    d = fresh("prometheus")
    seeds = {
        "prometheus-scrape": "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:9464\r\n"
                             "User-Agent: Prometheus/2.53.0\r\nAccept: application/openmetrics-"
                             "text;version=1.0.0,application/openmetrics-text;version=0.0.1;"
                             "q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1\r\n"
                             "Accept-Encoding: gzip\r\nX-Prometheus-Scrape-Timeout-Seconds: 10"
                             "\r\n\r\n",
        "curl": "GET /metrics HTTP/1.1\r\nHost: localhost:9464\r\nUser-Agent: curl/7.88.1\r\n"
                "Accept: */*\r\n\r\n",
        "head": "HEAD /metrics?x=1 HTTP/1.0\r\n\r\n",
        "post-body": "POST /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello",
        "lf-absolute": "\r\nGET http://h:9464/metrics#top HTTP/1.1\nHost: h\n\n",
        "options-star": "OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n",
        "folded": "GET /metrics HTTP/1.1\r\nX: a\r\n b\r\n\r\n",
        "bare-cr": "GET /metrics HTTP/1.1\rHost: h\r\n\r\n",
        "http2-preface": "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
        "partial": "GET /metr",
    }
    for name, text in seeds.items():
        (d / name).write_bytes(text.encode())


def records_seeds(tmp):
    d = fresh("records")
    exe = Path(tmp) / "records"
    subprocess.run(["cc", "-Wall", "-Wextra", "-Werror", f"-I{ROOT / 'bpf' / 'include'}",
                    str(ROOT / "tests" / "fuzz" / "seeds" / "records.c"), "-o", str(exe)],
                   check=True)
    subprocess.run([str(exe), str(d)], check=True)


def main():
    with tempfile.TemporaryDirectory(prefix="gospan-seeds-") as tmp:
        elf_seeds(tmp)
        records_seeds(tmp)
    disasm_seeds()
    offsets_seeds()
    config_seeds()
    functions_seeds()
    response_seeds()
    dbquery_seeds()
    container_seeds()
    prometheus_seeds()
    total = 0
    for f in sorted(CORPUS.rglob("*")):
        if f.is_file():
            total += f.stat().st_size
            if f.stat().st_size > 200 << 10:
                print(f"mkseeds: {f} is {f.stat().st_size} bytes", file=sys.stderr)
    print(f"mkseeds: {sum(1 for f in CORPUS.rglob('*') if f.is_file())} seeds, {total} bytes")


if __name__ == "__main__":
    main()
