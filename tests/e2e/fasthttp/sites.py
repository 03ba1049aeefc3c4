#!/usr/bin/env python3
"""Shows, in fasthttp test program binaries, the instructions around the places SITES.md
proposes for gospan's probes: in fasthttp's (*Server).serveConn (serveConnCounted from v1.7x)
the indirect call of the handler and the direct CALLs around it that take the *RequestCtx
or its Request/Response, with the instructions that load their argument registers; in
(*HostClient).Do the CALL of (*HostClient).do and the first branch after it; where the
request is written (CALL (*Request).Write, bufio Flush); for Fiber the CALLs of ReleaseCtx
and sync.(*Pool).Put in (*App).handler (v2) or requestHandler (v3) and their defer wrappers.
Every CALL is marked e8 (direct CALL rel32, emulated by the kernel) or not. Reads the binaries
with `go tool objdump`, so needs only Go.

    sites.py BINARY...
"""

import re
import subprocess
import sys

F = "github.com/valyala/fasthttp."
LINE = re.compile(r"^\s+(\S+)\s+0x([0-9a-f]+)\s+([0-9a-f]+)\s+(.*?)\s*$")
# Instructions the kernel emulates (x86 uprobes): CALL rel32, JMP, Jcc, NOP, PUSH.
EMULATED = re.compile(r"^(J[A-Z]+|NOP[A-Z]*|PUSHQ)\b")

SERVER = (r"^github.com/valyala/fasthttp.\(\*Server\).serveConn(Counted)?$",
          [F + "(*Request).parseURI", F + "(*Request).readLimitBody",
           F + "(*Request).readBodyStream", F + "writeResponse", F + "(*Response).Write",
           F + "(*Server).releaseCtx"])
CLIENT = [
    (r"^github.com/valyala/fasthttp.\(\*HostClient\).Do$", [F + "(*HostClient).do"], True),
    (r"^github.com/valyala/fasthttp.\(\*Client\).Do$", [F + "(*HostClient).Do"], False),
    (r"^github.com/valyala/fasthttp.\(\*HostClient\).doNonNilReqResp$|"
     r"^github.com/valyala/fasthttp.\(\*transport\).RoundTrip$",
     [F + "(*Request).Write", "bufio.(*Writer).Flush"], False),
]
FIBER = {
    "v2": (r"^github.com/gofiber/fiber/v2.\(\*App\).handler(\.func1|\.deferwrap1)?$",
           ["github.com/gofiber/fiber/v2.(*App).ReleaseCtx", "sync.(*Pool).Put",
            "github.com/gofiber/fiber/v2.(*App).next"]),
    "v3": (r"^github.com/gofiber/fiber/v3.\(\*App\).requestHandler(\.deferwrap1)?$",
           ["github.com/gofiber/fiber/v3.(*App).ReleaseCtx", "sync.(*Pool).Put",
            "github.com/gofiber/fiber/v3.(*App).next"]),
}


def objdump(binary, regexp):
    """[(symbol, [(file:line, addr, hex bytes, asm)])] of the functions REGEXP names."""
    out = subprocess.run(["go", "tool", "objdump", "-s", regexp, binary], capture_output=True,
                         text=True, check=True).stdout
    funcs = []
    for line in out.splitlines():
        if line.startswith("TEXT "):
            funcs.append((line.split()[1], []))
        elif (m := LINE.match(line)) and funcs:
            funcs[-1][1].append((m.group(1), int(m.group(2), 16), m.group(3), m.group(4)))
    return funcs


def show(ins, note=""):
    where, addr, code, asm = ins
    print(f"      {addr:#x}  {code:<22} {asm:<44} {where}{note}")


def calls_to(body, callee):
    return [i for i, x in enumerate(body)
            if x[3].startswith("CALL ") and x[3].split()[1] == callee + "(SB)"]


def is_e8(ins):
    return ins[2].startswith("e8") and len(ins[2]) == 10


def show_call(body, i, before=5, after=0):
    print(f"    at {body[i][1]:#x}: {'direct CALL rel32' if is_e8(body[i]) else 'NOT e8 rel32'}")
    for x in body[max(0, i - before):i + 1 + after]:
        show(x, "  (emulated)" if EMULATED.match(x[3]) else "")


def first_emulated_after(body, i, limit=8):
    print("    after it returns, to the first emulated instruction:")
    for x in body[i + 1:i + 1 + limit]:
        e = bool(EMULATED.match(x[3]))
        show(x, "  (emulated)" if e else "")
        if e or x[3].startswith("CALL"):
            break


def handler_call(body, src_line):
    """The indirect CALL on the source line of s.Handler(ctx), and the last emulated
    instruction before it."""
    hits = [i for i, x in enumerate(body) if x[0].endswith(f"server.go:{src_line}")
            and re.match(r"CALL [A-Z0-9]+$", x[3])]
    for i in hits:
        print(f"    s.Handler(ctx) at {body[i][1]:#x}: {body[i][3]} (indirect, not emulated)")
        j = i - 1
        while j > 0 and not (EMULATED.match(body[j][3]) or body[j][3].startswith("CALL")):
            j -= 1
        for x in body[j:i + 1]:
            show(x, "  (emulated)" if EMULATED.match(x[3]) else "")


def module_version(binary, module):
    out = subprocess.run(["go", "version", "-m", binary], capture_output=True, text=True).stdout
    m = re.search(rf"dep\s+{re.escape(module)}\s+(v\S+)", out)
    return (out.split()[1] if out else "?"), (m.group(1) if m else None)


def source_line(module, version, file, text):
    gomodcache = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True,
                                text=True).stdout.strip()
    try:
        with open(f"{gomodcache}/{module}@{version}/{file}") as f:
            for n, line in enumerate(f, 1):
                if line.strip() == text:
                    return n
    except OSError:
        pass
    return None


def report(binary):
    gov, fh = module_version(binary, "github.com/valyala/fasthttp")
    _, f2 = module_version(binary, "github.com/gofiber/fiber/v2")
    _, f3 = module_version(binary, "github.com/gofiber/fiber/v3")
    print(f"== {binary}: {gov}, fasthttp {fh}" + (f", fiber {f2}" if f2 else "")
          + (f", fiber {f3}" if f3 else ""))

    hline = source_line("github.com/valyala/fasthttp", fh, "server.go", "s.Handler(ctx)")
    for name, body in objdump(binary, SERVER[0]):
        if not any(x[3].startswith("CALL") for x in body):
            continue
        print(f"  {name}:")
        if hline:
            handler_call(body, hline)
        for callee in SERVER[1]:
            for i in calls_to(body, callee):
                print(f"   CALL {callee}")
                show_call(body, i)
    for regexp, callees, after in CLIENT:
        for name, body in objdump(binary, regexp):
            print(f"  {name}: prologue {' ; '.join(x[3] for x in body[:2])}")
            for callee in callees:
                for i in calls_to(body, callee):
                    print(f"   CALL {callee}")
                    show_call(body, i, before=3)
                    if after:
                        first_emulated_after(body, i)
    for ver, (regexp, callees) in FIBER.items():
        if (ver == "v2" and not f2) or (ver == "v3" and not f3):
            continue
        for name, body in objdump(binary, regexp):
            print(f"  {name}: prologue {' ; '.join(x[3] for x in body[:2])}")
            for callee in callees:
                for i in calls_to(body, callee):
                    print(f"   CALL {callee}")
                    show_call(body, i, before=4)
                    if callee.endswith(".next"):
                        first_emulated_after(body, i)
            ind = [x for x in body if re.match(r"CALL [A-Z0-9]+$", x[3])]
            if ind:
                print("   indirect: " + ", ".join(f"{x[1]:#x} {x[3]}" for x in ind))


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for binary in sys.argv[1:]:
        report(binary)
        print()


if __name__ == "__main__":
    main()
