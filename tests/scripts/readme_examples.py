#!/usr/bin/env python3
"""README's checked examples, run against the built `cordon`.

A checked example in README.md is a fenced block opened by "```console" on
the line right after a line starting "<!-- readme-test". In it, a line
"$ cordon ARGS" is a command; the lines after it, up to the next "$ " line
or the fence, are what it prints (stdout, then stderr, as a pipe gets them:
stderr is unbuffered), and an optional last line "[exit N]" is its exit
status (0 when absent). Each command is split like a shell word list (no
shell runs it), "cordon" is replaced by the built binary, and it runs from
the source tree with stdin empty. Any difference in output or status is a
failure, as is a README without any checked block or a command that is not
`cordon`.
    readme_examples.py [README]   (default: README.md of the source tree)
Environment: CORDON_SOURCE_ROOT, CORDON_BIN (else CORDON_BUILD_ROOT/cordon).
"""
import difflib
import os
import re
import shlex
import subprocess
import sys

ROOT = os.environ.get("CORDON_SOURCE_ROOT",
                      os.path.join(os.path.dirname(__file__), "..", ".."))
CORDON = os.environ.get("CORDON_BIN") or os.path.join(
    os.environ.get("CORDON_BUILD_ROOT", os.path.join(ROOT, "build")), "cordon")
EXIT = re.compile(r"^\[exit (\d+)\]$")


def blocks(path):
    """Yields (line number, [lines]) for every checked block."""
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        if lines[i].startswith("<!-- readme-test"):
            if i + 1 >= len(lines) or lines[i + 1] != "```console":
                raise SystemExit("%s:%d: a readme-test mark must be followed "
                                 "by a ```console block" % (path, i + 1))
            start, body = i + 3, []
            i += 2
            while i < len(lines) and lines[i] != "```":
                body.append(lines[i])
                i += 1
            if i == len(lines):
                raise SystemExit("%s:%d: unclosed block" % (path, start - 1))
            yield start, body
        i += 1


def commands(path, start, body):
    """Yields (line number, argv, expected output, expected status)."""
    cmd = None
    for n, line in enumerate(body, start):
        if line.startswith("$ "):
            if cmd is not None:
                yield cmd
            argv = shlex.split(line[2:])
            if not argv or argv[0] != "cordon":
                raise SystemExit("%s:%d: only cordon commands are run: %s"
                                 % (path, n, line))
            cmd = [n, argv, [], 0]
        elif cmd is None:
            raise SystemExit("%s:%d: output before any '$ ' command"
                             % (path, n))
        elif EXIT.match(line):
            cmd[3] = int(EXIT.match(line).group(1))
        else:
            if cmd[3] != 0:
                raise SystemExit("%s:%d: output after [exit N]" % (path, n))
            cmd[2].append(line)
    if cmd is None:
        raise SystemExit("%s:%d: a checked block without commands"
                         % (path, start))
    yield cmd


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT,
                                                              "README.md")
    if not os.access(CORDON, os.X_OK):
        raise SystemExit("readme_examples: %s is not an executable (set "
                         "CORDON_BIN or CORDON_BUILD_ROOT)" % CORDON)
    ran = failed = 0
    for start, body in blocks(path):
        for n, argv, want, status in commands(path, start, body):
            r = subprocess.run([CORDON] + argv[1:], cwd=ROOT,
                               stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=120)
            got = r.stdout.decode("utf-8", "replace").split("\n")
            if got and got[-1] == "":
                got.pop()
            ran += 1
            if got == want and r.returncode == status:
                print("ok   %s:%d: %s" % (path, n, shlex.join(argv)))
                continue
            failed += 1
            print("FAIL %s:%d: %s" % (path, n, shlex.join(argv)))
            if r.returncode != status:
                print("     exit %d, README says %d" % (r.returncode, status))
            for d in difflib.unified_diff(want, got, "README", "cordon",
                                          lineterm=""):
                print("     " + d)
    if ran == 0:
        raise SystemExit("%s: no checked examples (<!-- readme-test --> "
                         "before a ```console block)" % path)
    print("%d of %d README commands print what README says" % (ran - failed,
                                                               ran))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
