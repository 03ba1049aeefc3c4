#!/usr/bin/env python3
"""Checks the include graph of exporter/ against the layering docs/how-it-works.md describes.

A module is a .c and its .h (exporter/PART/NAME). Module A depends on B when A.c or A.h includes
"PART/B.h". Fails, naming each offence, when:
- a part includes a part it must not (core: none; analysis, model: core; capture: core, analysis,
  model; export: core, model; main.c: any);
- the module graph has a cycle (two modules that include each other, directly or around a loop);
- an include of an exporter header does not name its part ("log.h" instead of "core/log.h").

Run by `make test` (target `layering`); `python3 tests/include_graph.py [EXPORTER_DIR]` by hand.
"""
import os
import re
import sys

ALLOWED = {
    "core": {"core"},
    "analysis": {"core", "analysis"},
    "model": {"core", "model"},
    "capture": {"core", "analysis", "model", "capture"},
    "export": {"core", "model", "export"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def modules(root):
    """{module: set of modules it includes}, module = 'part/name' or 'main'."""
    headers = {}
    for part in ALLOWED:
        for f in os.listdir(os.path.join(root, part)):
            if f.endswith(".h"):
                headers[f] = part
    graph, errors = {}, []
    for dirpath, _, files in os.walk(root):
        for f in sorted(files):
            if not f.endswith((".c", ".h")):
                continue
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, root)
            mod = os.path.splitext(rel)[0]
            deps = graph.setdefault(mod, set())
            with open(path, encoding="utf-8") as fh:
                for inc in INCLUDE.findall(fh.read()):
                    if "/" not in inc and inc in headers:
                        errors.append(f"{rel}: includes \"{inc}\": name its part, "
                                      f"\"{headers[inc]}/{inc}\"")
                        inc = f"{headers[inc]}/{inc}"
                    dep = os.path.splitext(inc)[0]
                    if dep.split("/")[0] in ALLOWED and dep != mod:
                        deps.add(dep)
    return graph, errors


def layering_errors(graph):
    errors = []
    for mod, deps in sorted(graph.items()):
        part = mod.split("/")[0]
        if part not in ALLOWED:
            continue  # main.c sits on top and may use every part
        for dep in sorted(deps):
            if dep.split("/")[0] not in ALLOWED[part]:
                errors.append(f"{mod}: {part}/ must not depend on {dep} "
                              f"({part}/ may use: {', '.join(sorted(ALLOWED[part]))})")
    return errors


def cycles(graph):
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            node, it = work[-1]
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    break
                if nxt in on:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        m = stack.pop()
                        on.discard(m)
                        comp.append(m)
                        if m == node:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "exporter")
    graph, errors = modules(root)
    errors += layering_errors(graph)
    for comp in cycles(graph):
        errors.append("include cycle: " + " <-> ".join(comp))
    for e in errors:
        print(f"include_graph: {e}", file=sys.stderr)
    if errors:
        return 1
    print(f"include_graph: {len(graph)} modules, "
          f"{sum(len(d) for d in graph.values())} dependencies, layering kept, no cycle")
    return 0


if __name__ == "__main__":
    sys.exit(main())
