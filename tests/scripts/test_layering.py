#!/usr/bin/env python3
"""Tests of tests/scripts/layering.py itself, on small trees made here:
each rule (a .c's size included) must report what it is for (FILE:LINE,
exit 1), a clean tree must pass (exit 0), and a header with no .c beside it must be passed
through (a cycle through it is still one; including it alone is not).
Prints one "ok"/"not ok" line per case; exit 0 only when all pass.
"""
import os
import subprocess
import sys
import tempfile

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                      "layering.py")

# A clean tree: common < allowlist < runner < cli, runner.h over result.h.
BASE = {
    "common/util.h": "",
    "common/util.c": '#include "common/util.h"\n',
    "allowlist/allowlist.h": '#include "common/util.h"\n',
    "allowlist/parse.c": '#include "allowlist/allowlist.h"\n',
    "proxy/ctl.h": '#include "common/util.h"\n',
    "proxy/ctl.c": '#include "proxy/ctl.h"\n',
    "proxy/conn.c": '#include "proxy/ctl.h"\n#include "allowlist/allowlist.h"\n',
    "runner/result.h": '#include <stdio.h>\n#include "common/util.h"\n',
    "runner/result.c": '#include "runner/result.h"\n',
    "runner/internal.h": '#include "runner/result.h"\n',
    "runner/runner.h": '#include "runner/result.h"\n',
    "runner/runner.c": '#include "runner/runner.h"\n'
                       '#include "runner/internal.h"\n',
    "cli/main.c": '#include "runner/runner.h"\n',
    "tests/t.c": '#include "cli/anything.h"\n',   # tests/ is not checked
    "runner/fuzz/f.c": '#include "cli/x.h"\n',     # nor fuzz harnesses
}

# name, changes to BASE, expected exit, lines the output must contain.
CASES = [
    ("clean", {}, 0, ["layering: ok:"]),
    ("up", {"common/util.c": '#include "common/util.h"\n'
            '#include "runner/runner.h"\n'}, 1,
     ['common/util.c:2: up: common (layer 0) includes "runner/runner.h" '
      "of runner (layer 3)"]),
    ("up, angle brackets", {"allowlist/parse.c": "#include <runner/result.h>\n"},
     1, ['allowlist/parse.c:1: up: allowlist (layer 1) includes '
         '"runner/result.h"']),
    ("across", {"proxy/ctl.c": '#include "proxy/ctl.h"\n'
                '#include "allowlist/allowlist.h"\n'}, 1,
     ['proxy/ctl.c:2: across: proxyctl includes "allowlist/allowlist.h" '
      "of allowlist"]),
    ("nolayer", {"jobz/x.c": '#include "common/util.h"\n'}, 1,
     ["jobz/x.c:1: nolayer:"]),
    ("missing", {"runner/result.c": '#include "runner/result.h"\n'
                 '#include "runner/gone.h"\n'}, 1,
     ['runner/result.c:2: missing: #include "runner/gone.h"']),
    ("cycle", {"runner/result.h": '#include "runner/runner.h"\n'}, 1,
     ["runner/result.h:1: cycle: runner/result -> runner/runner -> "
      "runner/result",
      "  runner/result -> runner/runner  (runner/result.h:1)",
      "  runner/runner -> runner/result  (runner/runner.c:2 via "
      "runner/internal.h:1)"]),
    ("cycle through a pass-through header",
     {"runner/result.c": '#include "runner/result.h"\n'
      '#include "runner/internal2.h"\n',
      "runner/internal2.h": '#include "runner/runner.h"\n'}, 1,
     ["runner/result.c:2: cycle: runner/result -> runner/runner -> "
      "runner/result",
      "  runner/result -> runner/runner  (runner/result.c:2 via "
      "runner/internal2.h:1)"]),
    # The size of a .c: 600 lines pass, 601 do not; headers, tests/ and
    # fuzz harnesses are not measured.
    ("600 lines", {"runner/result.c": '#include "runner/result.h"\n'
                   + "\n" * 599}, 0, ["layering: ok:"]),
    ("long", {"runner/result.c": '#include "runner/result.h"\n'
              + "\n" * 599 + "int x;"}, 1,
     ["runner/result.c:601: long: 601 lines, over 600: split it along its "
      "responsibilities"]),
    ("long: headers, tests/ and fuzz/ are not measured",
     {"runner/result.h": "\n" * 700, "tests/t.c": "\n" * 700,
      "runner/fuzz/f.c": "\n" * 700}, 0, ["layering: ok:"]),
    # internal.h has no .c: not a module of its own, so result.c's
    # including it (and it result.h) is result including itself.
    ("a header-only header is no module",
     {"runner/result.c": '#include "runner/result.h"\n'
      '#include "runner/internal.h"\n'}, 0, ["layering: ok:"]),
]


def make_tree(root, files):
    for path, text in files.items():
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w", encoding="utf-8") as fh:
            fh.write(text)


def run(argv):
    p = subprocess.run([sys.executable, SCRIPT] + argv, capture_output=True,
                       text=True, check=False)
    return p.returncode, p.stdout + p.stderr


def main():
    failed = 0
    n = 0
    for name, change, want_rc, want in CASES:
        n += 1
        with tempfile.TemporaryDirectory(prefix="cordon-layering.") as root:
            make_tree(root, {**BASE, **change})
            rc, out = run([root])
        bad = [w for w in want if w not in out]
        if rc != want_rc or bad:
            failed += 1
            print(f"not ok {n} - {name}: exit {rc} (want {want_rc}); "
                  f"missing {bad!r}\n--- output:\n{out}---")
        else:
            print(f"ok {n} - {name}")
    # The command line: --help works, a bad option or ROOT is a usage
    # error (2), not a finding.
    for argv, want_rc, want in ((["--help"], 0, "Layers, lowest first"),
                                (["-h"], 0, "Usage: layering.py"),
                                (["--bogus"], 2, "usage: layering.py"),
                                (["/nonexistent/cordon"], 2,
                                 "not a directory"),
                                (["a", "b"], 2, "usage: layering.py")):
        n += 1
        rc, out = run(argv)
        if rc != want_rc or want not in out:
            failed += 1
            print(f"not ok {n} - {' '.join(argv)}: exit {rc} (want "
                  f"{want_rc})\n--- output:\n{out}---")
        else:
            print(f"ok {n} - layering.py {' '.join(argv)}")
    print(f"{n - failed}/{n} passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
