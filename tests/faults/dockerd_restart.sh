#!/usr/bin/env bash
# Fault: dockerd stops and starts again under `cordon serve --pool 2` with
# a session open (issue 34). While it is down: a run through the service
# is refused 503 with code docker-unavailable, and `cordon run` fails with
# docker-unavailable, each within 5 s; so is a new session; the open
# session, whose container died, is ended with a reason (its id answers
# 404 with "ended" and why) and leaves the list; a run in flight ends at
# once (not at its deadline), and not as ok. Once `docker info` answers
# again: a run succeeds within 10 s, the pool refills, and no container
# of the service is left but its idle pool. dockerd is stopped
# with SIGTERM to the pid in its pidfile (never a pattern) and started the
# way scripts/setup starts it; it is started again on any exit. This
# affects every other user of the host's dockerd: run it alone. Real
# dockerd + runsc.
. "$(dirname "$0")/lib.sh"

configs 2
echo 'print(1)' >"$tmp/p.py"
json='Content-Type: application/json'

serve_start
wait_idle 2
st=$(req "$tmp/s.json" -H "$json" -d '{}' http://cordon/v1/sessions)
[ "$st" = 201 ] || fail "session: HTTP $st $(cat "$tmp/s.json")"
sid=$(jget "$tmp/s.json" id)
st=$(req "$tmp/c.json" -H "$json" -d '{"code":"x = 41"}' "http://cordon/v1/sessions/$sid/runs")
[ "$st" = 200 ] || fail "session call: HTTP $st $(cat "$tmp/c.json")"
echo "ok - serve --pool 2 full, session $sid open"

# A run in flight (warm: the pool's) when dockerd goes.
run "$tmp/fl.json" '{"code":"import time; time.sleep(25)","timeout_s":40}' >"$tmp/fl.code" &
flpid=$!
for _ in $(seq 50); do
	req "$tmp/h" http://cordon/v1/health >/dev/null
	[ "$(jget "$tmp/h" pool.none)" = 1 ] && break
	sleep 0.1
done

# 1. dockerd stops.
dockerd_stopped=1
t0=$(now)
"$faults/dockerd.sh" stop || fail "could not stop dockerd"
echo "ok - dockerd stopped in $(since "$t0") s"
wait "$flpid"
took=$(since "$t0")
[ "$(cat "$tmp/fl.code")" = 200 ] || fail "the run in flight: HTTP $(cat "$tmp/fl.code") $(cat "$tmp/fl.json")"
st=$(jget "$tmp/fl.json" status)
[ "$st" != ok ] && [ "$st" != timeout ] || fail "the run in flight when dockerd stopped: $(head -c 400 "$tmp/fl.json")"
le "$took" 10 || fail "the run in flight returned $took s after dockerd began to stop"
echo "ok - a run in flight ended $took s after dockerd began to stop: $st, exit_code $(jget "$tmp/fl.json" exit_code)"

t0=$(now)
st=$(run "$tmp/r1.json" '{"code":"print(1)"}')
took=$(since "$t0")
[ "$st" = 503 ] && [ "$(jget "$tmp/r1.json" code)" = docker-unavailable ] ||
	fail "a run while dockerd is down: HTTP $st $(cat "$tmp/r1.json")"
le "$took" 5 || fail "the service took $took s to refuse a run while dockerd is down"
echo "ok - serve: 503 docker-unavailable in $took s ($(jget "$tmp/r1.json" error))"

t0=$(now)
if CORDON_CONFIG="$tmp/api.json" "$cordon" run <"$tmp/p.py" >"$tmp/r2.json" 2>"$tmp/r2.err"; then
	fail "cordon run succeeded while dockerd is down: $(cat "$tmp/r2.json")"
fi
took=$(since "$t0")
grep -q '^cordon run: docker-unavailable: ' "$tmp/r2.err" || fail "cordon run's error: $(cat "$tmp/r2.err")"
le "$took" 5 || fail "cordon run took $took s to fail while dockerd is down"
echo "ok - cordon run: docker-unavailable in $took s"

st=$(req "$tmp/s2.json" -H "$json" -d '{}' http://cordon/v1/sessions)
[ "$st" = 503 ] && [ "$(jget "$tmp/s2.json" code)" = docker-unavailable ] ||
	fail "a new session while dockerd is down: HTTP $st $(cat "$tmp/s2.json")"
echo "ok - a new session: 503 docker-unavailable"

# The open session's container died with dockerd: ended, with why.
for _ in $(seq 50); do
	st=$(req "$tmp/g.json" "http://cordon/v1/sessions/$sid")
	[ "$st" = 404 ] && break
	sleep 0.1
done
[ "$st" = 404 ] && [ "$(jget "$tmp/g.json" ended)" = True ] ||
	fail "the dead session is still there (or has no reason): HTTP $st $(cat "$tmp/g.json")"
grep -q 'container is gone' <<<"$(jget "$tmp/g.json" reason)" ||
	fail "the dead session's reason: $(cat "$tmp/g.json")"
req "$tmp/l.json" http://cordon/v1/sessions >/dev/null
[ "$(jget "$tmp/l.json" sessions)" = "[]" ] || fail "the session list: $(cat "$tmp/l.json")"
grep -q "session $sid (tenant [a-z]*): ended (its container is gone" "$tmp/serve.log" ||
	fail "no log line for the session's end: $(cat "$tmp/serve.log")"
echo "ok - the session whose container died is ended: $(jget "$tmp/g.json" reason)"

# 2. dockerd starts again.
t0=$(now)
"$faults/dockerd.sh" start >/dev/null || fail "could not start dockerd again"
dockerd_stopped=
tup=$(now)
echo "ok - dockerd answers again ($(since "$t0") s)"
ok='' tries=0 before=''
for _ in $(seq 40); do
	tries=$((tries + 1))
	st=$(run "$tmp/r3.json" '{"code":"print(1)"}')
	if [ "$st" = 200 ] && [ "$(jget "$tmp/r3.json" status)" = ok ]; then ok=1; break; fi
	before="$before [HTTP $st $(head -c 160 "$tmp/r3.json")]"
	sleep 0.25
done
took=$(since "$tup")
[ -n "$ok" ] || fail "no run succeeded in 10 s after dockerd came back: HTTP $st $(cat "$tmp/r3.json")"
le "$took" 10 || fail "the first run succeeded only $took s after dockerd came back"
echo "ok - a run succeeded $took s after docker info answered (attempt $tries, $(jget "$tmp/r3.json" duration_ms) ms, warm $(jget "$tmp/r3.json" warm))${before:+; before it:$before}"
wait_idle 2
echo "ok - the pool refilled ($(since "$tup") s after the restart)"
n=$(ours "$pid" | grep -c .)
[ "$n" = 2 ] || fail "the service owns $n containers after the restart, not its 2 idle ones: $("$docker" ps -a --filter label=cordon=1 --filter "label=cordon.owner_pid=$pid" --format '{{.Names}} {{.Status}} session={{.Label "cordon.session"}}')"
echo "ok - nothing left of before the restart: only the 2 idle pool containers"
stop
[ -z "$(ours "$pid")" ] || fail "containers left after the service stopped: $(ours "$pid")"
echo "ok - the service stopped cleanly"
