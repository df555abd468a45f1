#!/usr/bin/env python3
"""Cordon's include layering, checked (ARCHITECTURE.md, "Layers").

This script is the authority on the layers (LAYERS and LEVEL below; --help
ends with them, lowest first); ARCHITECTURE.md shows the same table, and
`meson test layering` (suite scripts, so scripts/test and CI) runs it.

Reads every C source and header of the tree except tests/ and the fuzz
harnesses (X/fuzz/), resolves each #include "..." as the compiler does
(from the including file's folder, then from the tree's root, meson's
include directory; an #include <...> only from the root, and only when it
names a file of the tree) and fails, naming FILE:LINE and the rule, on:
  up      an include of a part in a higher layer;
  across  an include of another part in the same layer (parts of one layer
          are independent of each other);
  nolayer a file in a folder the table below does not place;
  missing an include that names no file in the tree;
  cycle   an include cycle between modules. A module is x.c and x.h of one
          folder; a header with no .c beside it is passed through, so
          including it counts as including what it includes. The cycle is
          printed as a path of modules, each step with its FILE:LINE.
And on the files' size (STYLE.md: split by responsibility):
  long    a .c over MAX_C_LINES lines (600), at its first line past them.
Usage: layering.py [-h|--help] [ROOT]   (ROOT by default:
$CORDON_SOURCE_ROOT, else the tree this file is in). Exit 0 when clean,
1 on findings (one FILE:LINE line each), 2 on a usage error.
"""
import os
import re
import sys

# The layers, lowest first. A file may include its own part and any part
# of a lower layer, nothing else. Parts are matched by path prefix, the
# longest prefix first (proxy/ctl.h is proxyctl, proxy/conn.h is proxy).
# Derived from the meson libraries: proxyctl links common; proxy links
# allowlist and proxyctl; runner links probe, netsetup and proxyctl;
# serve and mcp link runner; cli links them all.
LAYERS = [
    ("common", ["common/"]),
    ("allowlist", ["allowlist/"]),
    ("proxyctl", ["proxy/ctl.", "proxy/cred.", "proxy/addr."]),
    ("proxy", ["proxy/"]),
    ("probe", ["probe/"]),
    ("netsetup", ["netsetup/"]),
    ("runner", ["runner/"]),
    ("jobs", ["jobs/"]),  # request schema, pools, session table, admission
    ("serve", ["serve/"]),
    ("mcp", ["mcp/"]),
    ("cli", ["cli/"]),
    ("tests", ["tests/"]),  # not checked; bench reuses a test helper
    ("bench", ["bench/"]),
]
# Layer number of each part: parts on one row do not include each other.
LEVEL = {
    "common": 0,
    "allowlist": 1, "proxyctl": 1,
    "proxy": 2, "probe": 2, "netsetup": 2,
    "runner": 3,
    "jobs": 4,
    "serve": 5, "mcp": 5,
    "cli": 6,
    "tests": 7,
    "bench": 8,
}
SKIP_DIRS = {"tests", ".git", "subprojects"}
# Every checked .c (tests/ and the fuzz harnesses are not) stays under
# this many lines: a file past it is split along its responsibilities.
MAX_C_LINES = 600
INCLUDE = re.compile(r'^\s*#\s*include\s*(?:"([^"]+)"|<([^>]+)>)')


def part_of(path):
    """The part (table row) of PATH, or None."""
    best = None
    for name, prefixes in LAYERS:
        for p in prefixes:
            if path.startswith(p) and (best is None or len(p) > len(best[1])):
                best = (name, p)
    return best[0] if best else None


def list_sources(root):
    """Every .c and .h under ROOT that is checked, as sorted relative paths."""
    out = []
    for d, dirs, files in os.walk(root):
        rel = os.path.relpath(d, root)
        parts = [] if rel == "." else rel.split(os.sep)
        dirs[:] = sorted(x for x in dirs if not x.startswith("."))
        if parts and (parts[0] in SKIP_DIRS or parts[0].startswith("build")
                      or "fuzz" in parts):
            dirs[:] = []
            continue
        for f in files:
            if f.endswith((".c", ".h")):
                out.append("/".join(parts + [f]))
    return sorted(out)


def read_includes(root, path):
    """[(line, target)] of PATH's quoted includes; target is resolved."""
    out = []
    with open(os.path.join(root, path), encoding="utf-8",
              errors="replace") as fh:
        for n, text in enumerate(fh, 1):
            m = INCLUDE.match(text)
            if not m:
                continue
            name = m.group(1) or m.group(2)
            cands = [os.path.normpath(name)]
            if m.group(1) is not None:
                cands.insert(0, os.path.normpath(
                    os.path.join(os.path.dirname(path), name)))
            target = None
            for c in cands:
                if os.path.isfile(os.path.join(root, c)):
                    target = c.replace(os.sep, "/")
                    break
            if target is None and m.group(1) is None:
                continue    # a system or library header
            out.append((n, name, target))
    return out


def count_lines(root, path):
    """PATH's number of lines, as wc -l counts them (a last line without
    its newline counts too)."""
    with open(os.path.join(root, path), encoding="utf-8",
              errors="replace") as fh:
        return sum(1 for _ in fh)


def module_of(path, files):
    """x.c and x.h are module "x"; a header with no .c is None (passed)."""
    stem = path[:-2]
    if path.endswith(".h") and stem + ".c" not in files:
        return None
    return stem


def check(root):
    files = set(list_sources(root))
    incs = {f: read_includes(root, f) for f in sorted(files)}
    findings = []

    for f in sorted(files):
        p = part_of(f)
        if p is None:
            findings.append(f"{f}:1: nolayer: folder not in the layer table "
                            f"of tests/scripts/layering.py")
            continue
        for n, name, target in incs[f]:
            if target is None:
                findings.append(f'{f}:{n}: missing: #include "{name}" names '
                                f"no file in the tree")
                continue
            q = part_of(target)
            if q is None or q == p:
                continue
            if LEVEL[q] > LEVEL[p]:
                findings.append(f'{f}:{n}: up: {p} (layer {LEVEL[p]}) '
                                f'includes "{name}" of {q} (layer {LEVEL[q]})')
            elif LEVEL[q] == LEVEL[p]:
                findings.append(f'{f}:{n}: across: {p} includes "{name}" of '
                                f"{q}, a part of the same layer {LEVEL[p]}")

    for f in sorted(files):
        if f.endswith(".c"):
            n = count_lines(root, f)
            if n > MAX_C_LINES:
                findings.append(f"{f}:{MAX_C_LINES + 1}: long: {n} lines, "
                                f"over {MAX_C_LINES}: split it along its "
                                f"responsibilities")

    # Module graph: an edge per module pair, with the first include that
    # makes it (FILE:LINE, and the pass-through headers it went through).
    def expand(f, seen):
        """Modules F reaches by its includes: {module: (where, via)}."""
        reach = {}
        for n, _name, target in incs.get(f, []):
            if target is None or target not in files:
                continue
            m = module_of(target, files)
            if m is not None:
                reach.setdefault(m, (f"{f}:{n}", []))
            elif target not in seen:
                seen.add(target)
                for m2, (w2, via2) in expand(target, seen).items():
                    reach.setdefault(m2, (f"{f}:{n}", [w2] + via2))
        return reach

    edges = {}
    for f in sorted(files):
        m = module_of(f, files)
        if m is None:
            continue
        for m2, where in expand(f, {f}).items():
            if m2 != m:
                edges.setdefault(m, {}).setdefault(m2, where)

    for cyc in find_cycles(edges):
        steps = []
        for a, b in zip(cyc, cyc[1:]):
            where, via = edges[a][b]
            hop = where + ("" if not via else " via " + ", ".join(via))
            steps.append(f"  {a} -> {b}  ({hop})")
        first = edges[cyc[0]][cyc[1]][0]
        findings.append(f"{first}: cycle: " + " -> ".join(cyc) + "\n"
                        + "\n".join(steps))
    return findings


def find_cycles(edges):
    """Cycle paths [a, ..., a]: in each strongly connected component of
    more than one module (Tarjan, iterative), the shortest cycle through
    each of its modules, each distinct cycle once."""
    index, low, on, stack, comps = {}, {}, set(), [], []
    counter = [0]
    nodes = sorted(set(edges) | {b for v in edges.values() for b in v})
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, {}))))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(edges.get(nxt, {})))))
                elif nxt in on:
                    low[v] = min(low[v], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    comps.append(sorted(comp))
    cycles, seen = [], set()
    for comp in comps:
        for start in comp:
            path = shortest_cycle(edges, set(comp), start)
            key = frozenset(zip(path, path[1:]))
            if key not in seen:
                seen.add(key)
                cycles.append(path)
    return cycles


def shortest_cycle(edges, inside, start):
    """The shortest path start -> ... -> start within INSIDE (breadth-first;
    neighbours in sorted order, so the answer is stable)."""
    prev, queue = {start: None}, [start]
    while queue:
        nq = []
        for v in queue:
            for w in sorted(edges.get(v, {})):
                if w not in inside:
                    continue
                if w == start:
                    path = [start]
                    while v is not None:
                        path.append(v)
                        v = prev[v]
                    return path[::-1]
                if w not in prev:
                    prev[w] = v
                    nq.append(w)
        queue = nq
    return [start, start]


USAGE = "usage: layering.py [-h|--help] [ROOT]"


def main(argv):
    args = argv[1:]
    if args in (["-h"], ["--help"]):
        print(__doc__.strip())
        print("\nLayers, lowest first: a part includes its own files and "
              "parts of lower layers,\nnever a part of its own layer or "
              "above.")
        for lvl in sorted(set(LEVEL.values())):
            names = [n for n, _ in LAYERS if LEVEL[n] == lvl]
            print(f"  {lvl}  " + ", ".join(
                f"{n} ({' '.join(dict(LAYERS)[n])})" for n in names)
)
        return 0
    if len(args) > 1 or (args and args[0].startswith("-")):
        print(USAGE, file=sys.stderr)
        return 2
    root = (args[0] if args else os.environ.get("CORDON_SOURCE_ROOT")
            or os.path.dirname(os.path.dirname(os.path.dirname(
                os.path.abspath(__file__)))))
    if not os.path.isdir(root):
        print(f"layering: {root}: not a directory", file=sys.stderr)
        return 2
    n = len(list_sources(root))
    if n == 0:
        print(f"layering: {root}: no C files found", file=sys.stderr)
        return 2
    findings = check(root)
    for f in findings:
        print(f)
    if findings:
        print(f"layering: FAIL: {len(findings)} finding(s) in {n} files")
        return 1
    print(f"layering: ok: {n} files, includes go down, no module cycle, "
          f"no .c over {MAX_C_LINES} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
