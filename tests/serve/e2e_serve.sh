#!/usr/bin/env bash
# End-to-end test of `cordon serve` with real dockerd + runsc, over its unix
# socket with curl: a run, two tenants with different limits (429 with
# Retry-After), malformed requests, nets and egress policies a tenant may
# not use (403 before any container starts), the TCP listener's tokens, kill-all with
# a run in flight, SIGTERM with a run in flight. Fails (never skips) when
# Docker, the runtime, the image or curl is missing, unless CORDON_E2E=skip.
#
# State: the test config keeps state_dir at its default, /var/lib/cordon,
# because that is where the probe record lives, with require_probe on: the
# service must find a passing `cordon probe --net none` there (run it if
# this test reports a stale or missing probe). Everything else (socket,
# audit log, staged files) is under a temporary directory.
# NOTE: kill-all removes EVERY Cordon container on the host (that is its
# job), so do not run this suite alongside other e2e suites. Shared set-up
# and helpers: lib.sh. The warm pool has its own script, e2e_pool.sh.
. "$(dirname "$0")/lib.sh"
port=$((20000 + RANDOM % 20000))

A='Authorization: Bearer aaaaaaaaaaaaaaaa'
B='Authorization: Bearer bbbbbbbbbbbbbbbb'
cat >"$tmp/cordon.json" <<JSON
{"audit_log": "$tmp/audit.log",
 "serve": {"global_limit": 4, "queue_max": 4, "body_max": "64k",
  "tenants": [
   {"name": "a", "token": "aaaaaaaaaaaaaaaa", "max_concurrent": 1, "max_queue": 0},
   {"name": "b", "token": "bbbbbbbbbbbbbbbb", "max_concurrent": 2},
   {"name": "c", "token": "cccccccccccccccc", "nets": ["none"]},
   {"name": "d", "token": "dddddddddddddddd", "nets": ["none", "proxy"], "policies": ["pypi"]}]}}
JSON
C='Authorization: Bearer cccccccccccccccc'
D='Authorization: Bearer dddddddddddddddd'

wait_container() {
	for _ in $(seq 100); do [ -n "$(containers)" ] && return 0; sleep 0.1; done
	fail "no container of the service appeared"
}
cfgfile="$tmp/cordon.json"

# A container left by a previous instance (its owner is dead) is swept at
# start-up.
image=$("$cordon" image show 2>/dev/null | sed -n 's/.*"id":"\(sha256:[0-9a-f]*\)".*/\1/p')
true & dead=$!; wait $dead
stale="cordon-e2e$(printf '%06x' $((RANDOM * 32 + RANDOM % 32)))"
"$docker" create --name "$stale" --label cordon=1 --label "cordon.owner_pid=$dead" \
	--label "cordon.deadline=$(( $(date +%s) + 3600 ))" --network none "$image" true >/dev/null ||
	fail "cannot create a stale container"

t0=$(date +%s.%N)
start --listen "127.0.0.1:$port"
if "$docker" inspect "$stale" >/dev/null 2>&1; then
	"$docker" rm -f "$stale" >/dev/null 2>&1
	fail "the start-up sweep left $stale"
fi
echo "ok - start-up sweep removed a stale container"
grep -q '"probe_none":' "$tmp/h" || fail "health: $(cat "$tmp/h")"
echo "ok - started (pid $pid, tcp port $port)"

# 1. A run answers with the runner's result JSON.
code=$(run "$tmp/r1" '{"code":"print(6*7)"}')
if [ "$code" = 503 ] && grep -qi probe "$tmp/r1"; then
	fail "runs are refused for the probe: $(cat "$tmp/r1") -- run 'cordon probe --net none'"
fi
[ "$code" = 200 ] || fail "run: HTTP $code: $(cat "$tmp/r1")"
[ "$(jget "$tmp/r1" stdout)" = 42 ] || fail "run: stdout: $(cat "$tmp/r1")"
[ "$(jget "$tmp/r1" status)" = ok ] || fail "run: status: $(cat "$tmp/r1")"
for k in exit_code stderr duration_ms container code_sha256 net stdout_truncated; do
	grep -q "\"$k\":" "$tmp/r1" || fail "run: no '$k' in $(cat "$tmp/r1")"
done
echo "ok - print(6*7) -> 42"

# Files arrive under /in (base64 in the request).
code=$(run "$tmp/r2" '{"code":"import sys; sys.stdout.write(open(\"/in/d/f.txt\").read())","files":[{"path":"d/f.txt","content_b64":"aGVsbG8="}]}')
[ "$code" = 200 ] && [ "$(jget "$tmp/r2" stdout)" = hello ] || fail "files: HTTP $code: $(cat "$tmp/r2")"
echo "ok - files staged under /in"

# 2. Malformed requests: 400/413/404/405/401 with a JSON error, and the
# service keeps serving.
check() {
	local want=$1 got=$2 what=$3
	[ "$got" = "$want" ] || fail "$what: HTTP $got, want $want: $(cat "$tmp/m")"
}
check 400 "$(run "$tmp/m" '{"code":')" "bad JSON"
grep -q '"error":' "$tmp/m" || fail "bad JSON: no JSON error: $(cat "$tmp/m")"
check 400 "$(run "$tmp/m" '{"code":"1","skip_probe_check":true}')" "unknown field"
check 400 "$(run "$tmp/m" '{"code":1}')" "wrong type"
check 400 "$(run "$tmp/m" '{"code":"1","timeout_s":"5"}')" "wrong type"
check 400 "$(run "$tmp/m" '{"code":"1","files":[{"path":"a","content_b64":"!!"}]}')" "bad base64"
check 400 "$(run "$tmp/m" '{"code":"1","files":[{"path":"../a","content_b64":""}]}')" "bad path"
check 400 "$(run "$tmp/m" '[]')" "not an object"
head -c 70000 /dev/zero | tr '\0' ' ' >"$tmp/big"
check 413 "$(req "$tmp/m" --data-binary @"$tmp/big" http://cordon/v1/runs)" "oversize"
python3 -c 'import json; print(json.dumps({"code": "#" * 66000}))' >"$tmp/big"
check 413 "$(req "$tmp/m" --data-binary @"$tmp/big" http://cordon/v1/runs)" "oversize"
check 404 "$(req "$tmp/m" http://cordon/v2/nothing)" "unknown path"
check 405 "$(req "$tmp/m" http://cordon/v1/runs)" "GET runs"
check 401 "$(run "$tmp/m" '{"code":"1"}' -H 'Authorization: Bearer wrongwrongwrongwrong')" "bad token"
# TCP: a token is required; the kill switch is not served there.
tcp() { curl -s -o "$tmp/m" -w '%{http_code}' --max-time 30 "$@"; }
check 401 "$(tcp "http://127.0.0.1:$port/v1/health")" "tcp without token"
check 200 "$(tcp -H "$A" "http://127.0.0.1:$port/v1/health")" "tcp with token"
check 403 "$(tcp -H "$A" -X POST "http://127.0.0.1:$port/v1/kill-all")" "tcp kill-all"
code=$(run "$tmp/r3" '{"code":"print(1)"}')
[ "$code" = 200 ] || fail "a run after malformed requests: HTTP $code"
echo "ok - malformed requests refused, service still serving"
# Languages (issue 17): bash in the minimal profile runs; a language the
# named profile lacks is a 400 before anything is queued.
code=$(run "$tmp/r4" '{"code":"echo $((6*7))","language":"bash"}')
[ "$code" = 200 ] && [ "$(jget "$tmp/r4" stdout)" = 42 ] && [ "$(jget "$tmp/r4" lang)" = bash ] ||
	fail "a bash run: HTTP $code: $(cat "$tmp/r4")"
check 400 "$(run "$tmp/m" '{"code":"1","language":"node","profile":"minimal"}')" "node in minimal"
grep -q "profile 'minimal' has no node" "$tmp/m" || fail "node in minimal: $(cat "$tmp/m")"
echo "ok - language bash runs; a language the profile lacks is a 400"

# Nets and egress policies: refused with 403 (400 for a policy with net
# none) and a JSON error before the run is queued, so no container starts
# and nothing reaches the audit log. None of these touches the egress
# network.
n_ctr=$("$docker" ps -aq --filter label=cordon=1 | wc -l)
n_audit=$(wc -l <"$tmp/audit.log")
forbid() {
	local want=$1 body=$2 hdr=$3 says=$4
	check "$want" "$(run "$tmp/m" "$body" -H "$hdr")" "tenant rules: $body"
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(not (list(d) == ["error"] and sys.argv[2] in d["error"]))' \
		"$tmp/m" "$says" || fail "tenant rules: $body: $(cat "$tmp/m"), want an error saying: $says"
}
forbid 403 '{"code":"print(1)","net":"proxy"}' "$C" "tenant 'c' may not use net \"proxy\" (its nets: \"none\")"
forbid 403 '{"code":"print(1)","net":"proxy","policy":"pypi"}' "$C" "may not use net \"proxy\""
forbid 403 '{"code":"print(1)","net":"proxy"}' "$A" "tenant 'a' may not use net \"proxy\""
forbid 403 '{"code":"print(1)","net":"proxy","policy":"github"}' "$D" "tenant 'd' may not use egress policy 'github' (its policies: pypi)"
forbid 403 '{"code":"print(1)","net":"proxy"}' "$D" "may not use egress policy 'default' (its policies: pypi)"
forbid 400 '{"code":"print(1)","net":"none","policy":"pypi"}' "$D" "'policy' applies only to net \"proxy\""
forbid 400 '{"code":"print(1)","policy":"pypi"}' "$C" "'policy' applies only to net \"proxy\""
forbid 400 '{"code":"print(1)","net":"proxy","policy":"../pypi"}' "$D" "'policy' must be a policy name"
forbid 400 '{"code":"print(1)","net":"proxy","policy":7}' "$D" "'policy' must be a policy name"
[ "$("$docker" ps -aq --filter label=cordon=1 | wc -l)" = "$n_ctr" ] ||
	fail "a refused run started a container: $("$docker" ps -a --filter label=cordon=1)"
[ "$(wc -l <"$tmp/audit.log")" = "$n_audit" ] || fail "a refused run reached the audit log: $(tail -n 3 "$tmp/audit.log")"
req "$tmp/metrics" http://cordon/metrics >/dev/null
grep -q '^cordon_requests_refused_total{reason="forbidden"} 5$' "$tmp/metrics" ||
	fail "metrics: $(grep refused "$tmp/metrics")"
# The same tenant's allowed net still runs.
code=$(run "$tmp/r5" '{"code":"print(7)","net":"none"}' -H "$C")
[ "$code" = 200 ] && [ "$(jget "$tmp/r5" stdout)" = 7 ] || fail "tenant c, net none: HTTP $code: $(cat "$tmp/r5")"
echo "ok - nets and policies a tenant may not use: 403/400 with a JSON error, no container, no audit line"

# 3. Two tenants: a (1 at a time, no queue) gets 429 on its second
# concurrent run while b's two runs proceed.
run "$tmp/a1" '{"code":"import time; time.sleep(8); print(\"a1\")","timeout_s":60}' -H "$A" >"$tmp/a1.code" &
bg_a1=$!
wait_container
code=$(curl -s -D "$tmp/hdr" -o "$tmp/a2" -w '%{http_code}' --unix-socket "$sock" \
	-H "$A" -d '{"code":"print(2)"}' http://cordon/v1/runs)
[ "$code" = 429 ] || fail "tenant a's second run: HTTP $code, want 429"
grep -qi '^Retry-After: [0-9]' "$tmp/hdr" || fail "429 without Retry-After: $(cat "$tmp/hdr")"
grep -q '"error":' "$tmp/a2" || fail "429 without a JSON error"
run "$tmp/b1" '{"code":"print(\"b1\")"}' -H "$B" >"$tmp/b1.code" & bg_b1=$!
run "$tmp/b2" '{"code":"print(\"b2\")"}' -H "$B" >"$tmp/b2.code" & bg_b2=$!
# b's third run waits in b's queue (limit 2) and runs when a slot frees.
sleep 0.3
run "$tmp/b3" '{"code":"print(\"b3\")"}' -H "$B" >"$tmp/b3.code" & bg_b3=$!
wait $bg_b1 $bg_b2 $bg_b3
kill -0 $bg_a1 2>/dev/null || fail "tenant b's runs did not proceed while a's run was in flight"
for r in b1 b2 b3; do
	[ "$(cat "$tmp/$r.code")" = 200 ] && [ "$(jget "$tmp/$r" stdout)" = $r ] ||
		fail "tenant b run $r: $(cat "$tmp/$r.code") $(cat "$tmp/$r")"
done
wait $bg_a1
[ "$(cat "$tmp/a1.code")" = 200 ] && [ "$(jget "$tmp/a1" stdout)" = a1 ] ||
	fail "tenant a's first run: $(cat "$tmp/a1.code") $(cat "$tmp/a1")"
req "$tmp/metrics" http://cordon/metrics >/dev/null
grep -q '^cordon_requests_refused_total{reason="over_limit"} 1$' "$tmp/metrics" ||
	fail "metrics: $(cat "$tmp/metrics")"
grep -q '^cordon_runs_total{status="ok"} 9$' "$tmp/metrics" || fail "metrics: $(cat "$tmp/metrics")"
grep -q '^cordon_run_latency_seconds_count 9$' "$tmp/metrics" || fail "metrics: $(cat "$tmp/metrics")"
grep -q '^cordon_queue_depth 0$' "$tmp/metrics" || fail "metrics: $(cat "$tmp/metrics")"
[ "$(grep -c '"session":"b"' "$tmp/audit.log")" = 3 ] && grep -q '"session":"a"' "$tmp/audit.log" ||
	fail "the audit log does not name the tenants: $(cat "$tmp/audit.log")"
echo "ok - tenants: 429 + Retry-After for a; b runs two, queues a third; metrics count them"

# A client that hangs up cancels its run: the container goes at once, not
# at the run's deadline.
curl -s -o /dev/null --max-time 60 --unix-socket "$sock" -d '{"code":"import time; time.sleep(60)","timeout_s":120}' \
	http://cordon/v1/runs & bg_c=$!
wait_container
kill $bg_c; wait $bg_c 2>/dev/null
for _ in $(seq 150); do [ -z "$(containers)" ] && break; sleep 0.1; done
[ -z "$(containers)" ] || fail "the run of a client that hung up was not cancelled"
req "$tmp/metrics" http://cordon/metrics >/dev/null
grep -q '^cordon_runs_total{status="closed_early"} 1$' "$tmp/metrics" || fail "metrics: $(cat "$tmp/metrics")"
echo "ok - a client that hangs up cancels its run"

# 4. kill-all with a run in flight: the run ends, its container is gone,
# new runs get 503 until resume.
run "$tmp/k1" '{"code":"import time; time.sleep(60)","timeout_s":120}' >"$tmp/k1.code" &
bg_k=$!
wait_container
check 200 "$(req "$tmp/m" -X POST http://cordon/v1/kill-all)" "kill-all"
grep -q '"removed":' "$tmp/m" || fail "kill-all: $(cat "$tmp/m")"
for _ in $(seq 300); do kill -0 $bg_k 2>/dev/null || break; sleep 0.1; done
kill -0 $bg_k 2>/dev/null && fail "the run in flight did not end after kill-all"
wait $bg_k
[ "$(cat "$tmp/k1.code")" = 200 ] || fail "killed run: HTTP $(cat "$tmp/k1.code"): $(cat "$tmp/k1")"
st=$(jget "$tmp/k1" status)
[ "$st" = closed_early ] || [ "$st" = sandbox_error ] || fail "killed run: status $st"
[ -z "$(containers)" ] || fail "containers left after kill-all: $(containers)"
check 503 "$(run "$tmp/m" '{"code":"print(1)"}')" "run while paused"
grep -q resume "$tmp/m" || fail "503 does not say how to resume: $(cat "$tmp/m")"
[ "$(jget "$tmp/h" status)" ] && req "$tmp/h" http://cordon/v1/health >/dev/null
[ "$(jget "$tmp/h" status)" = paused ] || fail "health while paused: $(cat "$tmp/h")"
check 200 "$(req "$tmp/m" -X POST http://cordon/v1/resume)" "resume"
code=$(run "$tmp/r4" '{"code":"print(5)"}')
[ "$code" = 200 ] && [ "$(jget "$tmp/r4" stdout)" = 5 ] || fail "run after resume: HTTP $code"
echo "ok - kill-all ends the run in flight, 503 until resume"

# 5. SIGTERM with a run in flight: the run finishes and is answered, the
# process exits, none of its containers is left, the socket is gone.
run "$tmp/s1" '{"code":"import time; time.sleep(3); print(\"done\")","timeout_s":30}' >"$tmp/s1.code" &
bg_s=$!
wait_container
kill -TERM "$pid"
for _ in $(seq 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$pid" 2>/dev/null && fail "the service did not exit within 60 s of SIGTERM"
wait "$pid"; rc=$?
[ $rc -eq 0 ] || fail "the service exited with $rc: $(cat "$tmp/serve.log")"
wait $bg_s
[ "$(cat "$tmp/s1.code")" = 200 ] && [ "$(jget "$tmp/s1" stdout)" = 'done' ] ||
	fail "run in flight at SIGTERM: HTTP $(cat "$tmp/s1.code"): $(cat "$tmp/s1")"
left=$("$docker" ps -a --filter label=cordon=1 --filter name=cordon- \
	--filter "label=cordon.owner_pid=$pid" -q)
[ -z "$left" ] || fail "containers left after SIGTERM: $left"
[ -e "$sock" ] && fail "the socket is still there"
echo "ok - SIGTERM: in-flight run answered, exit 0, no container left"
# 6. The scheduled probe: with no probe recorded (a fresh state dir holding
# only the image record), runs are refused with 503 naming the probe until
# the probe the service starts at once has passed.
mkdir "$tmp/state"
cp /var/lib/cordon/image.json "$tmp/state/" || fail "no /var/lib/cordon/image.json"
cat >"$tmp/cordon2.json" <<JSON
{"audit_log": "$tmp/audit.log", "state_dir": "$tmp/state"}
JSON
cfgfile="$tmp/cordon2.json"
sock="$tmp/serve2.sock"
start
code=$(run "$tmp/p1" '{"code":"print(1)"}')
[ "$code" = 503 ] && grep -q "probe" "$tmp/p1" || fail "run before any probe: HTTP $code: $(cat "$tmp/p1")"
for _ in $(seq 240); do
	req "$tmp/h" http://cordon/v1/health >/dev/null
	[ "$(jget "$tmp/h" probe_none)" = pass ] && break
	grep -q '"probe_none":"fail' "$tmp/h" && fail "the scheduled probe failed: $(cat "$tmp/h")"
	sleep 0.5
done
[ "$(jget "$tmp/h" probe_none)" = pass ] || fail "the scheduled probe did not pass in 120 s: $(cat "$tmp/h")"
[ -s "$tmp/state/probe-none.json" ] || fail "the scheduled probe recorded nothing"
code=$(run "$tmp/p2" '{"code":"print(1)"}')
[ "$code" = 200 ] || fail "run after the scheduled probe: HTTP $code: $(cat "$tmp/p2")"
stop
[ -z "$(containers)" ] || fail "containers left: $(containers)"
echo "ok - runs refused (503) until the scheduled probe passed"
printf 'all passed in %.1f s\n' "$(echo "$(date +%s.%N) - $t0" | bc 2>/dev/null || echo 0)"
