# Shared by the fault suite (sourced, not run): the service helpers of
# tests/serve/lib.sh (preconditions, a temporary directory, curl over the
# unix socket, start/stop of `cordon serve`), plus timing, result checks,
# and a cleanup that also covers every service a script started and, when
# a script stopped it, dockerd. Injected kills name real pids ($!, or a
# pid read back from a file the target wrote), never a pattern.
# shellcheck shell=bash
. "$(dirname "${BASH_SOURCE[0]}")/../serve/lib.sh"
faults=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
pids_all=()		# every `cordon serve` this script started
dockerd_stopped=	# set while this script holds dockerd down
faults_cleanup() {
	local rc=$? p
	if [ -n "$dockerd_stopped" ]; then
		"$faults/dockerd.sh" start >&2 || echo "FAIL: dockerd could not be started again" >&2
	fi
	for p in "${pids_all[@]}"; do
		if kill -0 "$p" 2>/dev/null; then kill -KILL "$p"; fi
		e2e_rm_containers --filter "label=cordon.owner_pid=$p"
	done
	e2e_exit
	exit $rc
}
trap faults_cleanup EXIT
# configs POOL: the service's config ($cfgfile, with a pool of POOL) and
# `cordon run`'s ($tmp/api.json: the default cold path, the Engine API),
# both with the audit log in $tmp.
configs() {
	cfgfile="$tmp/cordon.json"
	printf '{"audit_log": "%s/audit.log", "serve": {"pool": %d, "pool_max_age_s": 600}}\n' \
		"$tmp" "$1" >"$cfgfile"
	printf '{"audit_log": "%s/audit.log"}\n' "$tmp" >"$tmp/api.json"
}
# serve_start ARGS...: start (tests/serve/lib.sh) and remember the pid.
serve_start() { start "$@"; pids_all+=("$pid"); }
now() { date +%s.%N; }
# since T0: seconds since T0, 2 decimals.
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
# le A B: A <= B (decimals).
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }'; }
# wait_idle N [SECONDS]: until the service's pool holds N idle offline
# containers (default 60 s), else fail.
wait_idle() {
	local i
	for ((i = 0; i < ${2:-60} * 10; i++)); do
		req "$tmp/h" http://cordon/v1/health >/dev/null
		[ "$(jget "$tmp/h" pool.none)" = "$1" ] && return 0
		sleep 0.1
	done
	fail "the pool did not reach $1 idle in ${2:-60} s: $(cat "$tmp/h")"
}
# ours PID: the containers labelled with that owner pid.
ours() { "$docker" ps -aq --filter label=cordon=1 --filter "label=cordon.owner_pid=$1"; }
# gone NAME: no container of that name (any state) is left.
gone() { [ -z "$("$docker" ps -aq --filter "name=^/$1\$")" ]; }
# The flood: 1 MiB chunks to stdout and stderr, without end, so that
# every run below meets its deadline or its cap while writing.
# shellcheck disable=SC2034 # used by flood.sh, which sources this file
flood='import os
b = b"x" * (1 << 20)
while True:
    os.write(1, b)
    os.write(2, b)
'
# check_stopped FILE: a result of a run stopped at its deadline: status
# timeout, both streams kept as --keep both keeps them (head, marker,
# tail of what was read before the stop), and timing_ms with every step
# that happened (-1 only for the CLI's exit and the inspection, which a
# stopped run does not have).
check_stopped() {
	python3 - "$1" <<'PY' || fail "stopped run's result: $(head -c 600 "$1")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["status"] == "timeout", d["status"]
assert d["exit_code"] == -1, d["exit_code"]
for s in ("stdout", "stderr"):
    assert d[s + "_truncated"] is True, s
    assert d[s].startswith("x" * 1000), s
    assert "bytes dropped here]" in d[s], s
    assert d[s].endswith("x" * 1000), s
t = d["timing_ms"]
for k in ("stdin", "run", "exit", "stop", "remove"):
    assert t[k] >= 0, (k, t)
assert t["cli"] == -1 and t["inspect"] == -1, t
assert t["stop"] < 2000, t
PY
}
# check_cut FILE CAP: a --keep head run ended at a cap: output_truncated,
# a stream past its cap (whichever got there first) holds exactly the
# cap's head, the other what was read before the stop, the stop timed.
check_cut() {
	python3 - "$1" "$2" <<'PY' || fail "cut run's result: $(head -c 600 "$1")"
import json, sys
d = json.load(open(sys.argv[1]))
cap = int(sys.argv[2])
assert d["status"] == "output_truncated", d["status"]
assert d["exit_code"] == -1, d["exit_code"]
assert d["stdout_truncated"] or d["stderr_truncated"], "nothing cut"
for s in ("stdout", "stderr"):
    assert d[s] == "x" * len(d[s]) and len(d[s]) <= cap, (s, len(d[s]))
    assert not d[s + "_truncated"] or len(d[s]) == cap, (s, len(d[s]))
assert d["timing_ms"]["stop"] >= 0, d["timing_ms"]
PY
}
