# Shared by the service's e2e scripts (sourced, not run): preconditions,
# a temporary directory, HTTP over the unix socket with curl, starting
# `cordon serve` and cleaning up after it. The caller sets cfgfile (and may
# change sock) before `start`.
# NOTE: the scripts use kill-all, which removes EVERY Cordon container on
# the host (that is its job): they run with is_parallel false.
# shellcheck shell=bash
# shellcheck source=../lib/e2e.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/e2e.sh" || exit 1
command -v curl >/dev/null || missing "no curl"
command -v python3 >/dev/null || missing "no python3 (reads the JSON replies)"
e2e_need_docker
e2e_need_runtime cordon-offline
e2e_need_image

e2e_tmpdir cordon-serve-e2e
sock="$tmp/serve.sock"
pid=
cleanup() {
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid"; kill -TERM "$pid"; sleep 1; kill -KILL "$pid" 2>/dev/null
	fi
	if [ -n "$pid" ]; then
		e2e_rm_containers --filter "label=cordon.owner_pid=$pid"
	fi
}

# req OUTFILE CURL-ARGS...: prints the HTTP status, body in OUTFILE.
req() { local out=$1; shift; curl -s -o "$out" -w '%{http_code}' --max-time 120 --unix-socket "$sock" "$@"; }
run() { req "$1" -H 'Content-Type: application/json' "${@:3}" -d "$2" http://cordon/v1/runs; }
# jget FILE KEY[.KEY...]: one value of a JSON reply (Python's str()).
jget() { python3 -c 'import json,sys
d=json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."): d=d.get(k) if isinstance(d, dict) else None
print(d)' "$1" "$2"; }
containers() { "$docker" ps -aq --filter label=cordon=1 --filter "label=cordon.owner_pid=$pid"; }
# shellcheck disable=SC2154 # cfgfile is the caller's, set before start
start() {
	"$cordon" serve --config "$cfgfile" --socket "$sock" "$@" \
		>"$tmp/serve.log" 2>&1 &
	pid=$!
	for _ in $(seq 50); do
		[ "$(req "$tmp/h" http://cordon/v1/health 2>/dev/null)" = 200 ] && return 0
		sleep 0.1
	done
	fail "the service did not answer: $(cat "$tmp/serve.log")"
}
# stop: SIGTERM, wait up to 60 s, require exit 0.
stop() {
	kill -TERM "$pid"
	for _ in $(seq 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	kill -0 "$pid" 2>/dev/null && fail "the service did not exit within 60 s of SIGTERM"
	wait "$pid" || fail "the service exited non-zero: $(cat "$tmp/serve.log")"
}
