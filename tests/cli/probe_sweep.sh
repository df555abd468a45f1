#!/bin/sh
# `cordon probe` removes what its own pid left running before it exits
# (a pooled probe container has been seen Up after the probe passed), and
# only that: against the fake docker CLI, whose `ps` lists one container
# owned by the probe's own pid and one owned by another, the probe (which
# fails here: the fake echoes the program back) names and removes the first
# and never asks to remove the second. Then, with the daemon's removal of
# its container pending (every `rm` answers "already in progress" and `ps`
# keeps listing it), it says so by name after waiting, not "removed"; and
# the same when the removal fails outright. Those two, and only those, are
# on lines marked "cordon probe: warning: " (RUNNER_PROBE_WARNING), the
# mark serve's scheduled probe logs a warning by. Last, a report whose
# result cannot be recorded is printed, and that reason is marked too.
set -eu
cordon=${1:?usage: probe_sweep.sh CORDON}
src=${CORDON_SOURCE_ROOT:?}
T=$(mktemp -d /tmp/cordon-probe-sweep.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "probe_sweep: FAIL: $*" >&2; exit 1; }
mine=cordon-5eed5eed5eed5eed other=cordon-07e407e407e407e4
printf '{"docker":"%s/tests/runner/fake-docker.sh","require_probe":false,"state_dir":"%s/state","audit_log":"%s/audit/audit.log","image":{"id":"sha256:%064d"}}\n' \
	"$src" "$T" "$T" 7 > "$T/config.json"
printf '%s\t1\t0\n' "$other" > "$T/ps"
probe() {  # FAKE_RM_BUSY value [FAKE_RM_FAIL]; the probe's stderr in $T/err
	rc=0
	rm -f "$T"/calls.log*
	CORDON_CONFIG=$T/config.json FAKE_LOG=$T/calls.log FAKE_MODE=ok \
		FAKE_PS=$T/ps FAKE_PS_MINE=$mine FAKE_RM_BUSY=$1 FAKE_RM_FAIL=${2:-} \
		"$cordon" probe > "$T/out" 2> "$T/err" || rc=$?
	[ "$rc" -eq 1 ] || { cat "$T/err" >&2; fail "exit $rc, want 1 (the fake cannot pass a probe)"; }
}
probe 0
grep -q "^cordon probe: 1 leftover container(s) of this probe found, removal asked: $mine\$" "$T/err" ||
	{ cat "$T/err" >&2; fail "no line naming $mine on stderr"; }
grep -q "^cordon probe: leftover container(s) removed after 0 s\$" "$T/err" ||
	{ cat "$T/err" >&2; fail "no line saying $mine was removed"; }
grep -q "^rm .*$mine" "$T/calls.log" || { cat "$T/calls.log" >&2; fail "$mine was not removed"; }
! grep -q "^cordon probe: warning: " "$T/err" || { cat "$T/err" >&2; fail "a warning although $mine was removed"; }
! grep "^rm .*$other" "$T/calls.log" >/dev/null || fail "$other (another owner's) was removed"
echo "probe_sweep: removed: ok" >&2

probe 100000
grep -q "^cordon probe: warning: 1 container(s) of this probe still there 5 s after their removal was asked (pending in the daemon: a runtime slow to stop the sandbox): $mine\$" "$T/err" ||
	{ cat "$T/err" >&2; fail "no line saying $mine's removal is pending"; }
! grep -q "removed after" "$T/err" || { cat "$T/err" >&2; fail "said removed while the fake still lists $mine"; }
echo "probe_sweep: pending: ok" >&2

# The removal itself fails: the container is still named (not "cannot
# look") with docker's own words for why, and waited for.
probe 0 "$mine"
grep -q "^cordon probe: warning: leftover container(s) of this probe found, their removal failed (.*): $mine\$" "$T/err" ||
	{ cat "$T/err" >&2; fail "no line naming $mine with its failed removal"; }
grep -q "their removal failed (.* rm -f. failed: Error response from daemon: Could not kill running container $mine, cannot remove): " "$T/err" ||
	{ cat "$T/err" >&2; fail "the failed removal's line does not say docker's words"; }
grep -q "^cordon probe: warning: 1 container(s) of this probe still there 5 s after" "$T/err" ||
	{ cat "$T/err" >&2; fail "no line saying $mine is still there"; }
echo "probe_sweep: removal failed: ok" >&2

# A report whose result cannot be recorded (here the record's path is a
# directory) is printed all the same, and the reason is a marked line.
printf '' > "$T/ps"
rm -f "$T/state/probe-none.json"
mkdir -p "$T/state/probe-none.json/x"
probe 0
grep -q "^cordon probe: warning: cannot record the result in $T/state: " "$T/err" ||
	{ cat "$T/err" >&2; fail "the record's failure is not a marked warning"; }
grep -q '"controls"' "$T/out" || fail "no report when the record failed"
echo "probe_sweep: not recorded: ok" >&2
