#!/usr/bin/env bash
# Tests of Cordon's own set-up scripts: a failing step must say why in the
# tool's own words and exit non-zero, and daemon.json must never be left
# half-edited. Builds a copy of the tree with a planted compile error, and
# drives scripts/lib.sh's daemon.json editing against temp files with a jq
# that fails on demand.
set -uo pipefail
src=${CORDON_SOURCE_ROOT:?}
work=$(mktemp -d /tmp/cordon-test-scripts.XXXXXX)
trap 'rm -rf "$work"' EXIT
passed=0 failed=0
ok()   { echo "ok: $*"; passed=$((passed + 1)); }
bad()  { echo "FAIL: $*" >&2; failed=$((failed + 1)); }
check() { # check DESCRIPTION COMMAND...
	local d=$1; shift
	if "$@"; then ok "$d"; else bad "$d"; fi
}

# --- scripts/build on a tree with a compile error -------------------------
tree="$work/tree"
mkdir -p "$tree"
tar -C "$src" --exclude='./.git' --exclude='./build*' --exclude='node_modules' \
	-c . | tar -C "$tree" -x
printf '\n#error cordon-planted-error\n' >>"$tree/common/log.c"
out=$("$tree/scripts/build" b -Dtests=false 2>"$work/build.err")
rc=$?
check "build with a compile error exits non-zero (rc=$rc)" test "$rc" -ne 0
check "build prints the compiler's error line on stderr" \
	grep -q 'common/log.c.*error.*cordon-planted-error' "$work/build.err"
check "build prints no directory on stdout when it failed" test -z "$out"

# A bad option on an existing build directory (meson configure path).
out=$("$tree/scripts/build" b -Dno_such_option=1 2>"$work/conf.err")
rc=$?
check "build with an unknown option exits non-zero (rc=$rc)" test "$rc" -ne 0
check "build prints meson's own words about the unknown option" \
	grep -qi 'no_such_option' "$work/conf.err"
# The same on a fresh directory (meson setup path).
out=$("$tree/scripts/build" b2 -Dno_such_option=1 2>"$work/setup.err")
rc=$?
check "fresh build dir with an unknown option exits non-zero (rc=$rc)" test "$rc" -ne 0
check "meson setup's error is shown" grep -qi 'no_such_option' "$work/setup.err"

# --- scripts/lib.sh: daemon.json edits -------------------------------------
bin="$work/bin"
mkdir -p "$bin"
printf '#!/bin/sh\necho "runsc version fake"\n' >"$bin/runsc"
real_jq=$(command -v jq)
# A jq that fails (as a full disk or a bad filter would) when asked to
# write the merged document, and behaves otherwise.
cat >"$bin/jq" <<JQ
#!/bin/sh
case "\$*" in
*'.runtimes = '*|*'del(.runtimes'*)
	if [ -n "\${FAKE_JQ_FAIL:-}" ]; then echo "jq: error: planted failure" >&2; exit 5; fi ;;
esac
exec "$real_jq" "\$@"
JQ
chmod +x "$bin/runsc" "$bin/jq"

# Runs merge_runtime as the set-up scripts do: inside $(...) under set -e.
merge() { # merge DAEMON_JSON NAME ARGS -> prints "rc=N out=..." ; stderr to $work/merge.err
	CORDON_DAEMON_JSON=$1 PATH="$bin:$PATH" bash -c '
		set -euo pipefail
		. "$0/scripts/lib.sh"
		changed=$(merge_runtime "$1" "$2")
		echo "out=$changed"
	' "$src" "$2" "$3" 2>"$work/merge.err"
}

dj="$work/daemon.json"
printf '{"log-level":"warn","runtimes":{"other":{"path":"/x"}}}\n' >"$dj"
res=$(merge "$dj" cordon-offline '["--network=none"]'); rc=$?
check "merge into a good file succeeds (rc=$rc)" test "$rc" -eq 0
check "merge reports the change" test "$res" = "out=changed"
check "merge keeps other keys and runtimes" \
	"$real_jq" -e '."log-level" == "warn" and .runtimes.other.path == "/x" and
		.runtimes["cordon-offline"].runtimeArgs == ["--network=none"]' "$dj"
res=$(merge "$dj" cordon-offline '["--network=none"]'); rc=$?
check "a second identical merge changes nothing" test "$rc" -eq 0 -a "$res" = "out="

cp "$dj" "$work/before.json"
res=$(FAKE_JQ_FAIL=1 merge "$dj" cordon-egress '["--network=host"]'); rc=$?
check "merge with a failing jq exits non-zero (rc=$rc)" test "$rc" -ne 0
check "merge with a failing jq does not print changed" test -z "$res"
check "merge with a failing jq says why, with jq's words" \
	grep -q 'planted failure' "$work/merge.err"
check "merge with a failing jq leaves daemon.json unchanged" cmp -s "$dj" "$work/before.json"
check "merge leaves no temp file behind" test ! -e "$dj.cordon-tmp"

printf '{"runtimes": [1, 2' >"$dj"
cp "$dj" "$work/before.json"
res=$(merge "$dj" cordon-offline '["--network=none"]'); rc=$?
check "merge into malformed JSON exits non-zero (rc=$rc)" test "$rc" -ne 0
check "merge into malformed JSON says so" grep -q 'is not a JSON object' "$work/merge.err"
check "malformed daemon.json is left as it was" cmp -s "$dj" "$work/before.json"

printf '{"runtimes":{"cordon-egress-trial":{"path":"/x"}}}\n' >"$dj"
cp "$dj" "$work/before.json"
CORDON_DAEMON_JSON=$dj FAKE_JQ_FAIL=1 PATH="$bin:$PATH" bash -c '
	set -euo pipefail; . "$0/scripts/lib.sh"; remove_runtime cordon-egress-trial; echo after
' "$src" >"$work/rm.out" 2>"$work/rm.err"; rc=$?
check "remove_runtime with a failing jq exits non-zero (rc=$rc)" test "$rc" -ne 0
check "remove_runtime stops the script" test ! -s "$work/rm.out"
check "remove_runtime says why" grep -q 'planted failure' "$work/rm.err"
check "remove_runtime failure leaves daemon.json unchanged" cmp -s "$dj" "$work/before.json"
CORDON_DAEMON_JSON=$dj PATH="$bin:$PATH" bash -c '
	set -euo pipefail; . "$0/scripts/lib.sh"; remove_runtime cordon-egress-trial
' "$src"; rc=$?
check "remove_runtime removes the runtime (rc=$rc)" \
	"$real_jq" -e '.runtimes | has("cordon-egress-trial") | not' "$dj"

echo "scripts: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
