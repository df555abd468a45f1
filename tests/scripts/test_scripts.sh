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

# --- scripts/build: the path it prints, progress only at a terminal -------
# A meson and a ninja that only pretend (setup writes build.ninja; ninja
# prints a progress line), so no compile is needed.
fb="$work/fakebuild"
mkdir -p "$fb"
cat >"$fb/meson" <<'FAKE'
#!/bin/sh
[ "$1" = setup ] && mkdir -p "$2" && : >"$2/build.ninja"
echo "fake meson $*"
FAKE
printf '#!/bin/sh\necho "[1/1] Linking target fake-cordon"\n' >"$fb/ninja"
chmod +x "$fb/meson" "$fb/ninja"
out=$(PATH="$fb:$PATH" "$tree/scripts/build" "$work/abs build" 2>"$work/abs.err"); rc=$?
check "build with an absolute dir prints that dir (rc=$rc, out '$out')" test "$rc" -eq 0 -a "$out" = "$work/abs build"
out=$(PATH="$fb:$PATH" "$tree/scripts/build" rel 2>>"$work/abs.err"); rc=$?
check "build with a relative dir prints it under the root (rc=$rc, out '$out')" test "$rc" -eq 0 -a "$out" = "$tree/rel"
check "build is quiet on stderr when it is not a terminal" test ! -s "$work/abs.err"
# script(1) gives a pty: stdout and stderr both go to the typescript.
PATH="$fb:$PATH" script -qec "$tree/scripts/build '$work/abs build' 2>'$work/tty.err'" /dev/null >"$work/tty.out" </dev/null
PATH="$fb:$PATH" script -qec "$tree/scripts/build '$work/abs build'" /dev/null >"$work/tty.all" </dev/null
check "with stderr at a terminal, build shows ninja's progress" grep -q '^\[1/1\] Linking target fake-cordon' "$work/tty.all"
check "(and not when only stdout is one: the check can fail)" test ! -s "$work/tty.err"
check "and still prints the dir" grep -q "^$work/abs build" "$work/tty.all"

# --- status on stderr only: quickstart's stdout is the run's JSON alone ---
out=$(bash -c '. "$0/scripts/lib.sh"; say "a status line"' "$src" 2>"$work/say.err")
check "scripts/lib.sh's say writes nothing on stdout" test -z "$out"
check "but its line on stderr" grep -qx 'cordon-setup: a status line' "$work/say.err"
for f in quickstart setup egress-runtime runsc-build test fuzz-smoke; do
	# An echo or say of a "cordon-...:" status line with no >&2.
	left=$(grep -nE '^[[:space:]]*(echo|printf) .*(cordon-[a-z]+|runsc-build):' "$src/scripts/$f" | grep -v '>&2' || true)
	check "scripts/$f prints no status line on stdout${left:+: $left}" test -z "$left"
done

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

# --- the debug runtimes: register_debug_runtime and the %ID% wrapper -------
dbg="$work/dbg"
printf '{"runtimes":{"other":{"path":"/x"}}}\n' >"$dj"
mkdir -p "$dbg/logs"
chmod 0755 "$dbg/logs"
# A fake runsc that prints the arguments it got, one per line.
printf '#!/bin/sh\nfor a in "$@"; do printf "%%s\\n" "$a"; done\n' >"$bin/runsc"
regdebug() { # regdebug NAME BASE_ARGS [LOG_DIR] -> prints out=...
	CORDON_DAEMON_JSON=$dj CORDON_DEBUG_LOG_DIR=${3:-$dbg/logs} \
	CORDON_DEBUG_WRAPPER=$dbg/libexec/runsc-debug PATH="$bin:$PATH" bash -c '
		set -euo pipefail
		. "$0/scripts/lib.sh"
		changed=$(register_debug_runtime "$1" "$2")
		echo "out=$changed"
	' "$src" "$1" "$2" 2>"$work/dbg.err"
}
res=$(regdebug cordon-debug '["--network=none"]'); rc=$?
check "register_debug_runtime succeeds (rc=$rc)" test "$rc" -eq 0
check "register_debug_runtime reports the change" test "$res" = "out=changed"
check "the debug runtime is the wrapper with runsc's debug flags" \
	"$real_jq" -e --arg w "$dbg/libexec/runsc-debug" --arg d "$dbg/logs" '
		.runtimes["cordon-debug"] == {path: $w, runtimeArgs: ["--network=none",
		"--debug", "--strace", ("--debug-log=" + $d + "/%ID%/")]} and
		.runtimes.other.path == "/x"' "$dj"
check "the log directory is made mode 0700" \
	test "$(stat -c %a "$dbg/logs")" = 700
check "the wrapper is installed, runsc's path filled in" \
	grep -qx "RUNSC=$bin/runsc" "$dbg/libexec/runsc-debug"
check "the wrapper is executable" test -x "$dbg/libexec/runsc-debug"
res=$(regdebug cordon-debug '["--network=none"]'); rc=$?
check "a second registration changes nothing (rc=$rc)" test "$rc" -eq 0 -a "$res" = "out="
res=$(regdebug cordon-debug-egress '["--network=host"]')
check "the egress twin keeps its own network argument" \
	"$real_jq" -e '.runtimes["cordon-debug-egress"].runtimeArgs[0] == "--network=host"' "$dj"
cp "$dj" "$work/before.json"
res=$(regdebug cordon-debug '["--network=none"]' "logs/rel"); rc=$?
check "a relative log directory is refused (rc=$rc)" test "$rc" -ne 0
check "and said so" grep -q 'must be an absolute path' "$work/dbg.err"
res=$(regdebug cordon-debug '["--network=none"]' "$dbg/a b"); rc=$?
check "a log directory with a space is refused (rc=$rc)" test "$rc" -ne 0
check "daemon.json is unchanged after the refusals" cmp -s "$dj" "$work/before.json"

# The wrapper, called as containerd's shim calls a runtime.
w="$dbg/libexec/runsc-debug"
id=0123abcdef
logp=/run/docker/containerd/daemon/io.containerd.runtime.v2.task/moby/$id/log.json
out=$("$w" --network=none --debug-log=/L/%ID%/ --root /r --log "$logp" \
	--log-format json create --bundle "/b/$id" --pid-file /p "$id")
check "the wrapper puts the container's ID for %ID%" \
	grep -qx -- "--debug-log=/L/$id/" <<<"$out"
want=$(printf '%s\n' --network=none "--debug-log=/L/$id/" --root /r --log "$logp" \
	--log-format json create --bundle "/b/$id" --pid-file /p "$id")
check "the wrapper passes every other argument as it was, in order" \
	test "$out" = "$want"
out=$("$w" --debug-log=/L/%ID%/%ID% --log="$logp" "a b" state "$id")
check "the --log=PATH form, every %ID% of an argument" \
	grep -qx -- "--debug-log=/L/$id/$id" <<<"$out"
check "an argument with a space stays one argument" grep -qx 'a b' <<<"$out"
out=$("$w" --debug-log=/L/%ID%/ --version)
check "no --log: the logs go to 'unknown'" grep -qx -- "--debug-log=/L/unknown/" <<<"$out"
out=$("$w" --debug-log=/L/%ID%/ --log '/x/../log.json' kill "$id")
check "a --log path whose directory is .. gives 'unknown'" \
	grep -qx -- "--debug-log=/L/unknown/" <<<"$out"
out=$("$w" --debug-log=/L/%ID%/ --log '/x/a%ID%b/log.json' kill "$id")
check "an ID that is not a plain name gives 'unknown'" \
	grep -qx -- "--debug-log=/L/unknown/" <<<"$out"
mkdir -p "$dbg/u" && (cd "$dbg/u" && umask 022 &&
	printf '#!/bin/sh\numask\n' >"$bin/runsc" && "$w" --log "$logp" >"$dbg/u/mask")
check "the wrapper runs runsc with umask 077" grep -qx 0077 "$dbg/u/mask"

# --- a debug twin for another runsc (the one scripts/runsc-build installs)
built="$work/built/runsc"
mkdir -p "$(dirname "$built")"
printf '#!/bin/sh\necho built\n' >"$built"
chmod +x "$built"
cp "$dbg/libexec/runsc-debug" "$work/wrapper-before"
res=$(CORDON_DAEMON_JSON=$dj CORDON_DEBUG_LOG_DIR=$dbg/logs \
	CORDON_DEBUG_WRAPPER=$dbg/libexec/runsc-debug PATH="$bin:$PATH" bash -c '
	set -euo pipefail; . "$0/scripts/lib.sh"
	changed=$(register_debug_runtime "$1" "$2" "$3"); echo "out=$changed"
' "$src" cordon-debug-egress '["--network=sandbox"]' "$built" 2>"$work/dbg.err"); rc=$?
check "register_debug_runtime with another runsc succeeds (rc=$rc)" test "$rc" -eq 0 -a "$res" = "out=changed"
check "its wrapper is a second one, naming that runsc" \
	grep -qx "RUNSC=$built" "$dbg/libexec/runsc-debug-built"
check "the runtime's path is that second wrapper, its arguments the netstack ones" \
	"$real_jq" -e --arg w "$dbg/libexec/runsc-debug-built" '.runtimes["cordon-debug-egress"].path == $w and
		.runtimes["cordon-debug-egress"].runtimeArgs[0] == "--network=sandbox"' "$dj"
check "the wrapper for the runsc on PATH is left as it was" cmp -s "$dbg/libexec/runsc-debug" "$work/wrapper-before"
got=$(CORDON_DAEMON_JSON=$dj bash -c '. "$0/scripts/lib.sh"; runtime_path cordon-debug-egress' "$src")
check "runtime_path reads a runtime's path" test "$got" = "$dbg/libexec/runsc-debug-built"

# --- scripts/egress-runtime: bad requests are refused before anything -----
out=$(CORDON_DAEMON_JSON=$dj "$src/scripts/egress-runtime" --stack bogus 2>&1); rc=$?
check "egress-runtime --stack bogus exits non-zero (rc=$rc)" test "$rc" -ne 0
check "and names the allowed stacks" grep -q "must be auto, netstack or host, not 'bogus'" <<<"$out"
out=$(CORDON_DAEMON_JSON=$dj "$src/scripts/egress-runtime" --name 'a b' 2>&1); rc=$?
check "egress-runtime with a bad runtime name exits non-zero (rc=$rc)" test "$rc" -ne 0
check "and says so" grep -q "bad runtime name 'a b'" <<<"$out"
out=$(CORDON_DAEMON_JSON=$dj "$src/scripts/egress-runtime" --frob 2>&1); rc=$?
check "egress-runtime with an unknown option prints its usage (rc=$rc)" \
	test "$rc" -ne 0 -a -n "$(grep 'usage: scripts/egress-runtime' <<<"$out")"

# --- the e2e tests' stack detection (tests/netsetup/stack.sh) -------------
stk() { bash -c '. "$0/tests/netsetup/stack.sh"; stack_of_args "$1"' "$src" "$1"; }
check "runsc with no --network runs its netstack" test "$(stk '--root /r boot x')" = netstack
check "--network=sandbox is netstack" test "$(stk '--network=sandbox --root /r boot')" = netstack
check "--network=host is the host stack" test "$(stk '--root /r --network=host boot')" = host
check "--network=none is none" test "$(stk '--network=none')" = none
check "--network=hostile is not taken for host" test "$(stk '--network=hostile')" = netstack

# --- scripts/runsc-build: the patch and --check ----------------------------
patch="$src/scripts/runsc/gvisor-10704-root-netns.patch"
check "the runsc patch is upstream commit 19f6b0c07" \
	grep -q '^From 19f6b0c07fcdf8c3ac4d6d4bc5eafff9585e1e6b ' "$patch"
check "it touches runsc/sandbox/network.go only" \
	test "$(grep '^+++ ' "$patch")" = "+++ b/runsc/sandbox/network.go"
check "it replaces the rmem_default check by dev_weight" \
	test -n "$(grep -Fxe '-	err := unix.Access("/proc/sys/net/core/rmem_default", unix.F_OK)' "$patch")" \
	-a -n "$(grep -Fxe '+	err := unix.Access("/proc/sys/net/core/dev_weight", unix.F_OK)' "$patch")"
rb() { RUNSC_OUT=$work/rb/runsc RUNSC_CACHE=$work/rb/cache "$src/scripts/runsc-build" "$@" >"$work/rb.out" 2>&1; }
rb --check; rc=$?
check "runsc-build --check with nothing built exits 3 (rc=$rc)" test "$rc" -eq 3
check "and says it is not built" grep -q 'is not built: run scripts/runsc-build' "$work/rb.out"
mkdir -p "$work/rb"
printf '#!/bin/sh\n' >"$work/rb/runsc"
chmod +x "$work/rb/runsc"
printf '{"fingerprint":"0000","sha256":"0000"}\n' >"$work/rb/runsc.json"
rb --check; rc=$?
check "runsc-build --check with a stale build exits 3 (rc=$rc)" test "$rc" -eq 3
check "and says it is stale" grep -q 'is stale' "$work/rb.out"
check "--check builds and installs nothing" test ! -e "$work/rb/cache" -a "$(cat "$work/rb/runsc")" = '#!/bin/sh'
rb --frob; rc=$?
check "runsc-build with an unknown option exits non-zero (rc=$rc)" test "$rc" -ne 0 -a "$rc" -ne 3
check "and prints its usage" grep -q 'usage: scripts/runsc-build' "$work/rb.out"

# --- signal_dockerd: the pidfile's dockerd only ---------------------------
fake="$work/sig"
mkdir -p "$fake"
cat >"$fake/dockerd" <<'SH'
#!/bin/bash
trap 'echo hup >>"$0.got"' HUP
while :; do sleep 0.05; done
SH
chmod +x "$fake/dockerd"
"$fake/dockerd" & d1=$!
"$fake/dockerd" & d2=$!
sleep 0.3
sigd() { # sigd PIDFILE
	CORDON_DOCKERD_PIDFILE=$1 bash -c 'set -euo pipefail; . "$0/scripts/lib.sh"; signal_dockerd HUP' \
		"$src" 2>"$work/sig.err"
}
echo "$d1" >"$fake/pid"
sigd "$fake/pid"; rc=$?
sleep 0.3
check "signal_dockerd signals the pidfile's dockerd (rc=$rc)" grep -q hup "$fake/dockerd.got"
check "and only that one" test "$(grep -c hup "$fake/dockerd.got")" = 1
sigd "$fake/none"; rc=$?
check "no pidfile: refused (rc=$rc)" test "$rc" -ne 0
check "no pidfile: said so" grep -q 'cannot tell which dockerd' "$work/sig.err"
echo $$ >"$fake/pid"
sigd "$fake/pid"; rc=$?
check "a pidfile naming another program: refused (rc=$rc)" test "$rc" -ne 0
check "and said so" grep -q 'is not dockerd' "$work/sig.err"
kill "$d1" "$d2" 2>/dev/null
wait "$d1" "$d2" 2>/dev/null

# --- start_dockerd: the caller's lock is not passed on to dockerd ---------
# `flock FILE CMD` hands CMD the lock's descriptor; a dockerd started with
# it held the host's e2e lock for as long as it ran (seen: 40 min).
fake="$work/start"
mkdir -p "$fake/bin"
cat >"$fake/bin/dockerd" <<'SH'
#!/bin/bash
ls -l /proc/$$/fd >"$UP_DIR/fds"
: >"$UP_DIR/up"
SH
chmod +x "$fake/bin/dockerd"
UP_DIR=$fake PATH="$fake/bin:$PATH" flock "$fake/lock" bash -c 'set -euo pipefail
	. "$0/scripts/lib.sh"; DOCKERD_LOG=$UP_DIR/log
	have_systemd() { false; }; docker_up() { [ -e "$UP_DIR/up" ]; }
	start_dockerd' "$src" >"$work/start.out" 2>&1; rc=$?
check "start_dockerd with a fake dockerd (rc=$rc)" test "$rc" -eq 0 -a -s "$fake/fds"
check "and dockerd did not get the caller's lock" sh -c '! grep -q "$0" "$1"' "$fake/lock" "$fake/fds"
check "(the lock is on an fd flock passes on: the check can fail)" sh -c \
	'flock "$0" ls -l /proc/self/fd | grep -q "$0"' "$fake/lock"

echo "scripts: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
