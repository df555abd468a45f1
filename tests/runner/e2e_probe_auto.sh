#!/usr/bin/env bash
# End-to-end: probe records that refresh themselves, with real dockerd and
# runsc, in a state_dir of its own (the host's records are never touched).
# A stale passing record: two `cordon run` at once, exactly one probes (it
# says so on stderr), both run; the record is fresh afterwards. A failed
# record, no record, or probe_auto off: refused, nothing probed. Prints
# the latency the probe added to the run that triggered it. A fresh record
# made in another image than the pinned one is refreshed the same way. Fails (never
# skips) without Docker, the runtime or the image, unless CORDON_E2E=skip.
. "$(dirname "$0")/../lib/e2e.sh" || exit 1
e2e_need_docker
e2e_need_runtime cordon-offline
e2e_need_image

e2e_tmpdir cordon-e2e-probe-auto
session="e2e-probe-auto-$$"
cleanup() {
	e2e_rm_containers --filter "label=cordon.session=$session"
}
state="$tmp/state"
mkdir -p "$state"
export CORDON_CONFIG="$tmp/cordon.json"
config() {
	printf '{"state_dir":"%s","audit_log":"%s/audit.log","image":{"id":"%s"}%s}\n' \
		"$state" "$tmp" "$id" "${1:-}" >"$CORDON_CONFIG"
}
config
rec="$state/probe-none.json"
# record PASS AGE_S [IMAGE]: a record of the shape probe_state_write
# leaves, made in the pinned image unless told.
record() {
	local at=$(( $(date +%s%3N) - $2 * 1000 )) failed=""
	[ "$1" = true ] || failed="capabilities"
	printf '{"mode":"none","pass":%s,"at_ms":%s,"image":"%s","controls":[],"failed":"%s"}\n' \
		"$1" "$at" "${3:-$id}" "$failed" >"$rec"
}
ms() { date +%s%3N; }
# crun NAME: cordon run of print(1), stdout/stderr/exit into $tmp/NAME.*
crun() {
	echo 'print(1)' | "$cordon" run --session "$session" \
		>"$tmp/$1.out" 2>"$tmp/$1.err"
	echo $? >"$tmp/$1.rc"
}
expect_refused() {	# NAME TEXT
	[ "$(cat "$tmp/$1.rc")" != 0 ] || fail "$1: ran: $(cat "$tmp/$1.out")"
	grep -q "$2" "$tmp/$1.err" || fail "$1: stderr lacks '$2': $(cat "$tmp/$1.err")"
	grep -q 'probing before the run' "$tmp/$1.err" && fail "$1: it probed"
	return 0
}

# No record at all: a person runs the first probe.
crun none
expect_refused none "no probe has run for --net none"

# Failed record, even an old one: refused, never probed by a run.
record false 7200
crun failed
expect_refused failed "latest probe for --net none failed (capabilities)"

# probe_auto off: a stale record is refused as before.
config ',"probe_auto":false'
record true 7200
crun off
expect_refused off "older than 3600s"
config

# Stale: two runs at once; one probes, the other waits for its result.
record true 7200
t0=$(ms)
crun a & pa=$!
crun b & pb=$!
wait $pa $pb
t_auto=$(( $(ms) - t0 ))
for n in a b; do
	[ "$(cat "$tmp/$n.rc")" = 0 ] || fail "run $n failed: $(cat "$tmp/$n.err")"
	grep -q '"status":"ok"' "$tmp/$n.out" || fail "run $n: $(cat "$tmp/$n.out")"
done
probed=$(cat "$tmp/a.err" "$tmp/b.err" | grep -c 'probing before the run')
[ "$probed" = 1 ] || fail "expected exactly one probe, saw $probed: $(cat "$tmp"/[ab].err)"
waited=$(cat "$tmp/a.err" "$tmp/b.err" | grep -c 'passed in another run')
[ "$waited" = 1 ] || fail "the other run did not wait for that probe: $(cat "$tmp"/[ab].err)"
grep -q '"pass":true' "$rec" || fail "the record did not pass: $(cat "$rec")"
at=$(sed -n 's/.*"at_ms":\([0-9]*\).*/\1/p' "$rec")
[ "$at" -ge "$t0" ] || fail "the record was not refreshed ($at < $t0)"
probe_ms=$(sed -n 's/.*passed in \([0-9]*\) ms.*/\1/p' "$tmp/a.err" "$tmp/b.err")

grep -q "\"image\":\"$id\"" "$rec" || fail "the record does not name the image: $(cat "$rec")"

# A fresh record made in another image (a re-pin since): probes first.
record true 0 "sha256:$(printf '%064d' 0)"
crun n
[ "$(cat "$tmp/n.rc")" = 0 ] || fail "run n failed: $(cat "$tmp/n.err")"
grep -q 'ran in image sha256:000000000000, not the pinned .*: probing before the run' \
	"$tmp/n.err" || fail "run n did not probe the new image: $(cat "$tmp/n.err")"
grep -q "\"image\":\"$id\"" "$rec" || fail "the record does not name the image: $(cat "$rec")"

# Fresh, same image: the next run does not probe.
t1=$(ms)
crun c
t_plain=$(( $(ms) - t1 ))
[ "$(cat "$tmp/c.rc")" = 0 ] || fail "run c failed: $(cat "$tmp/c.err")"
[ -s "$tmp/c.err" ] && fail "run c printed: $(cat "$tmp/c.err")"
sed 's/^/stderr: /' "$tmp/a.err" "$tmp/b.err"
echo "ok: stale record refreshed by one automatic probe for two runs; a record" \
	"of another image refreshed; failed, missing and probe_auto off refused"
echo "latency: probe ${probe_ms} ms inside the run; triggering runs ${t_auto} ms" \
	"wall, a run with a fresh record ${t_plain} ms"
exit 0
