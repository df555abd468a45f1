#!/usr/bin/env bash
# End-to-end: debug runs with real dockerd and runsc, in a state_dir of its
# own. `cordon probe --debug` passes every control in the debug runtime
# (cordon-debug: runsc --debug --strace) and records nothing; a debug run
# still needs the plain probe's record; `cordon run --debug` of a job that
# opens a file returns debug_log, a root-only directory whose strace log
# names that openat; a plain run has no debug_log; a caller who is not
# root is refused and no container starts; `cordon doctor` shows the debug
# runtime. Needs root (the log directory is root's). Fails (never skips)
# without Docker, the runtimes or the image, unless CORDON_E2E=skip.
. "$(dirname "$0")/../lib/e2e.sh" || exit 1
[ "$(id -u)" = 0 ] || missing "not root (debug runs are root's only)"
e2e_need_docker
e2e_need_runtime cordon-offline cordon-debug
e2e_need_image

e2e_tmpdir cordon-e2e-debug
chmod 0755 "$tmp"
session="e2e-debug-$$"
logs=()
cleanup() {
	e2e_rm_containers --filter "label=cordon.session=$session"
	# This test's own runsc logs only (they can be MBs each).
	for d in "${logs[@]}"; do rm -rf -- "$d"; done
}
state="$tmp/state"
mkdir -p "$state"
export CORDON_CONFIG="$tmp/cordon.json"
printf '{"state_dir":"%s","audit_log":"%s/audit.log","image":{"id":"%s"}}\n' \
	"$state" "$tmp" "$id" >"$CORDON_CONFIG"
chmod 0644 "$CORDON_CONFIG"
jfield() { python3 -c 'import json,sys; v=json.load(open(sys.argv[1])).get(sys.argv[2]); print("" if v is None else v)' "$1" "$2"; }
ms() { date +%s%3N; }
keep_log() {	# FILE: remember its debug_log for the cleanup
	local d
	d=$(jfield "$1" debug_log)
	[ -n "$d" ] && logs+=("$d")
	return 0
}

# 1. The probe, in the debug runtime: every control passes; nothing recorded.
t0=$(ms)
"$cordon" probe --debug >"$tmp/probe.json" 2>"$tmp/probe.err"
rc=$?
t_probe=$(( $(ms) - t0 ))
keep_log "$tmp/probe.json"
[ $rc = 0 ] || fail "cordon probe --debug failed (rc=$rc): $(cat "$tmp/probe.err" "$tmp/probe.json")"
[ "$(jfield "$tmp/probe.json" pass)" = True ] || fail "debug probe did not pass: $(cat "$tmp/probe.json")"
[ "$(jfield "$tmp/probe.json" debug)" = True ] || fail "the probe was not a debug one: $(cat "$tmp/probe.json")"
grep -q '"observed":"[^"]*runtime cordon-debug (runsc)' "$tmp/probe.json" ||
	fail "the probe's container did not run in cordon-debug: $(cat "$tmp/probe.json")"
ncontrols=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["controls"]))' "$tmp/probe.json")
[ -e "$state/probe-none.json" ] && fail "a debug probe wrote the record: $(cat "$state/probe-none.json")"
pdir=$(jfield "$tmp/probe.json" debug_log)
[ -d "$pdir" ] || fail "the debug probe's log directory '$pdir' does not exist"
echo "ok: cordon probe --debug: all $ncontrols controls pass in cordon-debug (${t_probe} ms), nothing recorded"

# 2. A debug run needs the plain probe's record like any run.
echo 'print(1)' | "$cordon" run --debug --session "$session" >"$tmp/norec.out" 2>"$tmp/norec.err"
[ $? != 0 ] || fail "a debug run went ahead with no probe record: $(cat "$tmp/norec.out")"
grep -q 'no probe has run for --net none' "$tmp/norec.err" ||
	fail "refusal without a record: $(cat "$tmp/norec.err")"
"$cordon" probe >"$tmp/plain-probe.json" 2>&1 || fail "cordon probe: $(cat "$tmp/plain-probe.json")"
echo "ok: a debug run without a probe record is refused; the plain probe passes"

# 3. A job that opens a file: its strace names that openat.
marker="cordon-debug-marker-$$-$RANDOM"
cat >"$tmp/job.py" <<PY
with open("/tmp/$marker", "w") as f:
    f.write("x")
print("wrote")
PY
t0=$(ms)
"$cordon" run --debug --session "$session" <"$tmp/job.py" >"$tmp/run.json" 2>"$tmp/run.err"
rc=$?
t_debug=$(( $(ms) - t0 ))
keep_log "$tmp/run.json"
[ $rc = 0 ] || fail "cordon run --debug failed (rc=$rc): $(cat "$tmp/run.err")"
grep -q '"status":"ok"' "$tmp/run.json" || fail "debug run: $(cat "$tmp/run.json")"
[ "$(jfield "$tmp/run.json" stdout)" = wrote ] || fail "debug run output: $(cat "$tmp/run.json")"
dir=$(jfield "$tmp/run.json" debug_log)
[ -n "$dir" ] || fail "no debug_log in the result: $(cat "$tmp/run.json")"
[ -d "$dir" ] || fail "debug_log $dir is not a directory"
parent=$(dirname "$dir")
[ "$(stat -c '%u %a' "$parent")" = "0 700" ] ||
	fail "the log directory $parent is not root's with mode 0700: $(stat -c '%U %a' "$parent")"
others=$(find "$dir" -perm /077 | head -n 3)
[ -z "$others" ] || fail "log files readable by others than root: $others"
hits=$(grep -h "openat(.*/tmp/$marker" "$dir"/*.txt)
[ -n "$hits" ] || fail "no openat of /tmp/$marker in the strace logs of $dir: $(ls -l "$dir")"
grep -q "$(jfield "$tmp/run.json" container)" "$tmp/audit.log" || fail "no audit line"
grep "$(jfield "$tmp/run.json" container)" "$tmp/audit.log" | grep -q "\"debug_log\":\"$dir\"" ||
	fail "the audit line does not name the debug log: $(tail -n1 "$tmp/audit.log")"
size=$(du -sk "$dir" | cut -f1)
echo "ok: cordon run --debug: debug_log $dir ($(ls "$dir" | wc -l) files, ${size} KiB), strace shows:"
head -n 2 <<<"$hits" | sed 's/^/    /'

# 4. A plain run: no debug_log, no debug runtime.
t0=$(ms)
echo 'print(1)' | "$cordon" run --session "$session" >"$tmp/plain.json" 2>"$tmp/plain.err" ||
	fail "plain run: $(cat "$tmp/plain.err")"
t_plain=$(( $(ms) - t0 ))
grep -q '"debug_log' "$tmp/plain.json" && fail "a plain run has debug fields: $(cat "$tmp/plain.json")"
echo "ok: a plain run has no debug_log"

# 5. Not root: refused before any container.
before=$("$docker" ps -aq --filter "label=cordon.session=$session-nobody" | wc -l)
echo 'print(1)' | setpriv --reuid=65534 --regid=65534 --clear-groups \
	"$cordon" run --debug --session "$session-nobody" >"$tmp/nobody.out" 2>"$tmp/nobody.err"
rc=$?
[ $rc != 0 ] || fail "a debug run as uid 65534 went ahead: $(cat "$tmp/nobody.out")"
grep -q -- '--debug is for root only' "$tmp/nobody.err" || fail "uid 65534: $(cat "$tmp/nobody.err")"
[ -s "$tmp/nobody.out" ] && fail "uid 65534 got a result: $(cat "$tmp/nobody.out")"
after=$("$docker" ps -aq --filter "label=cordon.session=$session-nobody" | wc -l)
[ "$before" = "$after" ] || fail "a container was created for uid 65534"
setpriv --reuid=65534 --regid=65534 --clear-groups "$cordon" probe --debug \
	>"$tmp/nobody-probe.out" 2>"$tmp/nobody-probe.err" && fail "cordon probe --debug ran as uid 65534"
grep -q -- '--debug is for root only' "$tmp/nobody-probe.err" ||
	fail "probe as uid 65534: $(cat "$tmp/nobody-probe.err")"
echo "ok: uid 65534 is refused ('$(cat "$tmp/nobody.err")'), no container"

# 6. The doctor shows the debug runtime.
"$cordon" doctor >"$tmp/doctor.txt" 2>&1
grep -q '^OK   debug runtime cordon-debug: .*--debug --strace --debug-log=.*%ID%/ (logs in .*, root only)' "$tmp/doctor.txt" ||
	fail "doctor does not show cordon-debug: $(grep -i debug "$tmp/doctor.txt")"
echo "ok: doctor: $(grep 'debug runtime cordon-debug:' "$tmp/doctor.txt")"
echo "latency: cordon run --debug ${t_debug} ms, plain cordon run ${t_plain} ms;" \
	"cordon probe --debug ${t_probe} ms ($(du -sk "$pdir" | cut -f1) KiB of logs)"
exit 0
