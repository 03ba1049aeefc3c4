#!/usr/bin/env python3
"""Finds loops in gospan's BPF objects that older kernels' verifiers refuse before they verify
anything: a loop closed by falling through into its head rather than by a jump.

Linux before 6.4 or so (Debian 12's 6.1 among them) walks a program's control flow depth first,
fall-through edge before branch, and accepts an edge back to an instruction still on the walk
only where that edge is a jump ("back-edge from insn X to Y", EINVAL, whatever the loop's
bounds). Newer kernels accept either, so this machine's verifier never says so; clang lays some
loops out that way (entered by a jump into the middle, the latch placed above the head). This
walks each function of each object as that verifier does and names every such edge.

    python3 tests/bpf_back_edges.py build/bpf/*.bpf.o build/bpf/arm64/*.bpf.o
"""

import re
import subprocess
import sys

LABEL = re.compile(r"^[0-9a-f]+ <(\S+)>:$")
INSN = re.compile(r"^\s*(\d+):\s+(.*)$")
JUMP = re.compile(r"\bgoto ([+-]\d+)\b")


def functions(obj):
    """{(section, function): {index: instruction text}} from llvm-objdump's listing."""
    listing = subprocess.run(["llvm-objdump", "-d", "--no-show-raw-insn", obj], check=True,
                             capture_output=True, text=True).stdout
    found, section, insns = {}, None, None
    for line in listing.splitlines():
        if line.startswith("Disassembly of section "):
            section, insns = line[len("Disassembly of section "):].rstrip(":"), None
            continue
        m = LABEL.match(line)
        if m:
            if not m.group(1).startswith("LBB"):  # a function, not a block inside one
                insns = found.setdefault((section, m.group(1)), {})
            continue
        m = INSN.match(line)
        if m and insns is not None:
            insns[int(m.group(1))] = m.group(2).strip()
    return found


def successors(insns, t):
    """(successor, whether the edge is a jump) in the verifier's order: fall-through first."""
    text = insns[t]
    if text == "exit":
        return []
    nxt = t + 2 if text.endswith(" ll") else t + 1  # a 64-bit immediate takes two slots
    m = JUMP.search(text)
    if not m:
        return [(nxt, False)]  # calls included: their fall-through is not a jump either
    target = t + int(m.group(1)) + 1
    if text.startswith("goto "):
        return [(target, True)]
    return [(nxt, True), (target, True)]


def fall_through_back_edges(insns):
    if not insns:
        return []
    on_walk, done, bad = set(), set(), []
    # Iterative depth-first walk: each frame is an instruction and its successors not yet tried.
    start = min(insns)
    stack = [(start, iter(successors(insns, start)))]
    on_walk.add(start)
    while stack:
        t, succ = stack[-1]
        for w, is_jump in succ:
            if w not in insns:
                continue
            if w in on_walk and not is_jump:
                bad.append((t, w))
            elif w not in on_walk and w not in done:
                on_walk.add(w)
                stack.append((w, iter(successors(insns, w))))
                break
        else:
            stack.pop()
            on_walk.discard(t)
            done.add(t)
    return bad


def main(objs):
    if not objs:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    found = 0
    for obj in objs:
        for (section, name), insns in functions(obj).items():
            for t, w in fall_through_back_edges(insns):
                print(f"{obj}: {section} {name}: instruction {t} ({insns[t]}) falls through "
                      f"into {w}, the head of a loop: Linux 6.1 refuses the object "
                      f"(\"back-edge from insn\")", file=sys.stderr)
                found += 1
    if found:
        return 1
    print(f"bpf_back_edges: no loop closed by a fall-through in {len(objs)} objects")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
