# Shared by the service's e2e scripts (sourced, not run): preconditions,
# a temporary directory, HTTP over the unix socket with curl, starting
# `cordon serve` and cleaning up after it. The caller sets cfgfile (and may
# change sock) before `start`.
# NOTE: the scripts use kill-all, which removes EVERY Cordon container on
# the host (that is its job): they run with is_parallel false.
# shellcheck shell=bash
set -u
fail() { echo "FAIL: $*" >&2; exit 1; }
missing() {
	if [ "${CORDON_E2E:-}" = skip ]; then echo "SKIP (CORDON_E2E=skip): $*"; exit 77; fi
	fail "$* (run scripts/setup and 'cordon image build'; set CORDON_E2E=skip only on a laptop)"
}
cordon="$CORDON_BUILD_ROOT/cordon"
command -v curl >/dev/null || missing "no curl"
command -v python3 >/dev/null || missing "no python3 (reads the JSON replies)"
docker=$(command -v docker) || missing "no docker CLI"
"$docker" info >/dev/null 2>&1 || missing "dockerd is not answering"
"$docker" info --format '{{json .Runtimes}}' | grep -q '"cordon-offline"' ||
	missing "runtime cordon-offline is not registered with dockerd"
"$cordon" image show >/dev/null 2>&1 || missing "no pinned sandbox image"

tmp=$(mktemp -d /tmp/cordon-serve-e2e.XXXXXX)
sock="$tmp/serve.sock"
pid=
cleanup() {
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid"; kill -TERM "$pid"; sleep 1; kill -KILL "$pid" 2>/dev/null
	fi
	if [ -n "$pid" ]; then
		"$docker" ps -aq --filter label=cordon=1 --filter "label=cordon.owner_pid=$pid" |
			xargs -r "$docker" rm -f >/dev/null 2>&1
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT

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
