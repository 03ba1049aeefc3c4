#!/usr/bin/env python3
"""Shows, in router test service binaries, the instructions around the CALLs gospan's router
probes are planned at (SITES.md says which and why): for each binary, each CALL of the planned
callee in the planned function, whether it is a direct CALL rel32 (opcode e8), the
instructions before it that load RAX, RBX and RCX, and for gorilla/mux the instructions after
(*Router).Match returns up to its first branch or call. Also which of the frameworks'
middleware-chain functions are left as functions (not inlined everywhere) and how many direct
CALLs reach them. Reads the binaries with `go tool objdump`, so needs only Go.

    sites.py FRAMEWORK BINARY...      FRAMEWORK: gin, echo, echo5, chi or mux
"""

import re
import subprocess
import sys

PUT = "sync.(*Pool).Put"
# framework -> (function regexp for objdump, callees to show, function names to check inlining)
PLAN = {
    "gin": (r"^github.com/gin-gonic/gin.\(\*Engine\).ServeHTTP$", [PUT],
            [r"github.com/gin-gonic/gin.\(\*Context\).Next"]),
    "echo": (r"^github.com/labstack/echo/v4.\(\*Echo\).ServeHTTP$", [PUT],
             [r"github.com/labstack/echo/v4.applyMiddleware"]),
    "echo5": (r"^github.com/labstack/echo/v5.\(\*Echo\).serveHTTP", [PUT],
              [r"github.com/labstack/echo/v5.applyMiddleware"]),
    "chi": (r"^github.com/go-chi/chi/v5.\(\*Mux\).ServeHTTP$", [PUT],
            [r"github.com/go-chi/chi/v5.\(\*Mux\).routeHTTP"]),
    "mux": (r"^github.com/gorilla/mux.\(\*Router\).ServeHTTP$",
            ["github.com/gorilla/mux.(*Router).Match", "github.com/gorilla/mux.requestWithRoute",
             "github.com/gorilla/mux.contextSet",
             "github.com/gorilla/mux.setCurrentRoute"],
            [r"github.com/gorilla/mux.requestWithRoute", r"github.com/gorilla/mux.setCurrentRoute"]),
}
LINE = re.compile(r"^\s+(\S+)\s+0x([0-9a-f]+)\s+([0-9a-f]+)\s+(.*?)\s*$")
BRANCH = re.compile(r"^(J[A-Z]+|CALL|RET)\b")


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


def show(ins, pad=""):
    where, addr, code, asm = ins
    print(f"{pad}    {addr:#x}  {code:<22} {asm:<60} {where}")


def provenance(body, i):
    """Where RCX's value at the CALL body[i] comes from: the last write to CX before it and,
    when that is a load from a stack slot, every store to that slot in the function, each
    with the instruction before it (the call whose result it keeps)."""
    for j in range(i - 1, -1, -1):
        m = re.match(r"(MOVQ|LEAQ) (.+), CX$", body[j][3])
        if m:
            break
    else:
        return
    src = m.group(2)
    print(f"   RCX: {body[j][3]} at {body[j][1]:#x}")
    if m.group(1) == "MOVQ" and re.fullmatch(r"0x[0-9a-f]+\(SP\)", src):
        for k, x in enumerate(body):
            if re.fullmatch(rf"MOVQ [A-Z0-9]+, {re.escape(src)}", x[3]):
                print(f"   {src} written by:")
                for y in body[max(0, k - 2):k + 1]:
                    show(y, "  ")


def report(framework, binary):
    fregexp, callees, inlined = PLAN[framework]
    ver = subprocess.run(["go", "version", "-m", binary], capture_output=True, text=True).stdout
    gov = ver.split()[1] if ver else "?"
    mod = re.search(r"dep\s+(github.com/(?:gin-gonic/gin|labstack/echo/v[45]|go-chi/chi/v5|"
                    r"gorilla/mux))\s+(v\S+)", ver)
    print(f"== {binary}: {gov}, {mod.group(1) + ' ' + mod.group(2) if mod else '?'}")
    funcs = objdump(binary, fregexp)
    if not funcs:
        print("   planned function not found")
    for name, body in funcs:
        for callee in callees:
            calls = [i for i, x in enumerate(body) if x[3].startswith("CALL ")
                     and x[3].split()[1] == callee + "(SB)"]
            if not calls:
                continue
            print(f"  {name}: {len(calls)} CALL {callee}")
            for i in calls:
                direct = body[i][2].startswith("e8") and len(body[i][2]) == 10
                print(f"   at {body[i][1]:#x}: {'direct CALL rel32' if direct else 'NOT e8 rel32'}")
                for x in body[max(0, i - 6):i + 1]:
                    show(x)
                provenance(body, i)
                if callee.endswith("Match"):
                    print("   after it returns, to the first branch or call:")
                    for x in body[i + 1:i + 12]:
                        show(x)
                        if BRANCH.match(x[3]):
                            break
        indirect = [x for x in body if re.match(r"CALL [A-Z0-9]+$", x[3])]
        if indirect:
            print(f"  {name}: indirect calls: " +
                  ", ".join(f"{x[1]:#x} {x[3]}" for x in indirect))
    # Inlining: is the function still there, and how many direct CALLs reach it?
    syms = subprocess.run(["go", "tool", "nm", binary], capture_output=True, text=True).stdout
    for fn in inlined:
        plain = fn.replace("\\", "")
        present = any(line.split()[-1] == plain for line in syms.splitlines() if line.strip())
        callers = subprocess.run(
            ["go", "tool", "objdump", "-s", r"github.com/(gin-gonic|labstack|go-chi|gorilla)|^main\.",
             binary], capture_output=True, text=True).stdout if present else ""
        n = sum(1 for line in callers.splitlines() if f"CALL {plain}(SB)" in line)
        print(f"  {plain}: {'a function, ' + str(n) + ' direct CALLs to it' if present else 'no symbol (inlined everywhere, or unused)'}")


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in PLAN:
        sys.exit(__doc__)
    for binary in sys.argv[2:]:
        report(sys.argv[1], binary)
        print()


if __name__ == "__main__":
    main()
