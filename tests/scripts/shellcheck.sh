#!/usr/bin/env bash
# Every shell script git tracks is clean under `shellcheck -S warning`.
# Scripts are found as `file` finds them (a shell shebang), so a new
# script is covered without being listed, and so are the tracked *.sh
# files without one: the libraries the scripts source (lib.sh, e2e.sh,
# ...), which shellcheck does not report on through the scripts. Prints
# every finding and fails when there is one.
set -uo pipefail
root=${CORDON_SOURCE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$root" || exit 1
command -v shellcheck >/dev/null || { echo "FAIL: no shellcheck (scripts/setup installs it)"; exit 1; }
command -v file >/dev/null || { echo "FAIL: no file(1)"; exit 1; }
files=$(git ls-files -z | xargs -0 file -N | grep -i 'shell script' | cut -d: -f1) ||
	{ echo "FAIL: no shell script found (git ls-files | file) in $root"; exit 1; }
mapfile -t scripts < <({ printf '%s\n' "$files"; git ls-files '*.sh'; } | sort -u)
out=$(shellcheck -S warning -f gcc "${scripts[@]}" 2>&1)
rc=$?
if [ $rc -ne 0 ] || [ -n "$out" ]; then
	printf '%s\n' "$out"
	echo "FAIL: shellcheck -S warning: $(printf '%s\n' "$out" | grep -c ': \(warning\|error\):') findings in ${#scripts[@]} scripts (exit $rc)"
	exit 1
fi
echo "ok - shellcheck -S warning: ${#scripts[@]} scripts, no finding"
