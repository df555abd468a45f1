#!/usr/bin/env bash
# Stop stress of `cordon serve --pool 2` with real dockerd + runsc (issue
# 22): CYCLES (default 5; scripts/stress-pool runs 20) times start the
# service, make a few warm runs, and send SIGTERM at a random moment: while
# the pool first fills, 0-40 ms after a warm run's reply (its refill start
# is then in flight: where issue 22's leftover came from; two cycles in
# five), while a run is in flight, or idle. Each time the service must exit 0, and no container it
# created (label cordon.owner_pid = its pid, seen through `docker events`)
# may be left, at exit nor 3 s later (a start whose `docker run` was killed
# can still be created by the daemon), nor any runsc or containerd-shim
# process naming one of them. Also checks the service's log lines (start-up,
# pool fill, given-up start, signal, summary; kill-all and resume against a
# fake docker CLI, so that no real container is touched; --log-level warn
# silences info; never the code).
# Prints one line per cycle and the figures; fails if any cycle left
# something. CORDON_STRESS_SEED repeats a sequence of moments;
# CORDON_STRESS_NOLOG=1 skips the log checks (to measure a build from
# before the service logged).
. "$(dirname "$0")/lib.sh"

cycles=${CORDON_STRESS_CYCLES:-5}
seed=${CORDON_STRESS_SEED:-$$}
RANDOM=$seed
N=2
cfgfile="$tmp/cordon.json"
cat >"$cfgfile" <<JSON
{"audit_log": "$tmp/audit.log",
 "serve": {"global_limit": 4, "queue_max": 16, "pool_max_age_s": 600}}
JSON

idle() { req "$tmp/h" http://cordon/v1/health >/dev/null; jget "$tmp/h" pool.none; }
wait_full() {
	for _ in $(seq 600); do
		[ "$(idle)" = "$N" ] && return 0
		sleep 0.1
	done
	fail "the pool did not reach $N idle containers in 60 s: $(cat "$tmp/h")"
}
# rsleep MAX_MS: sleeps a random 0..MAX_MS ms.
rsleep() { sleep "$(awk -v r="$RANDOM" -v m="$1" 'BEGIN{printf "%.3f", r / 32767 * m / 1000}')"; }
# warm_runs K: K sequential runs that must succeed.
warm_runs() {
	for _ in $(seq "$1"); do
		[ "$(run "$tmp/r" '{"code":"print(1)"}')" = 200 ] &&
			[ "$(jget "$tmp/r" status)" = ok ] || fail "run: $(cat "$tmp/r")"
		served=$((served + 1))
	done
}
# procs ID...: host processes whose argv names one of the containers.
procs() {
	local id
	for id in "$@"; do
		grep -las -- "$id" /proc/[0-9]*/cmdline 2>/dev/null |
			sed 's|/proc/\([0-9]*\)/cmdline|\1|'
	done | sort -u | while read -r p; do
		[ -r "/proc/$p/cmdline" ] && echo "$p $(tr '\0' ' ' <"/proc/$p/cmdline" | cut -c1-120)"
	done | grep -v '^[0-9]* grep '
}
ms() { date +%s%3N; }

# check_log CYCLE MOMENT RUNS: the lines of one cycle's service log.
check_log() {
	local log=$tmp/serve.log
	[ -n "${CORDON_STRESS_NOLOG:-}" ] && return 0
	grep -q "^cordon: info: cordon serve [0-9.]*: socket $sock, listen none, pool $N per net mode, tenants 0, image sha256:[0-9a-f]\{64\}$" "$log" ||
		fail "cycle $1: no start-up line: $(cat "$log")"
	grep -q "^cordon: info: signal 15: draining" "$log" || fail "cycle $1: no signal line: $(cat "$log")"
	grep -q "^cordon: info: shutdown: served $3 run(s) .*, leftovers found 0$" "$log" ||
		fail "cycle $1: no summary with $3 runs and no leftover: $(cat "$log")"
	[ "$2" = fill ] || grep -q "^cordon: info: pool --net none: filled, $N of $N idle" "$log" ||
		fail "cycle $1: no pool fill line: $(cat "$log")"
	! grep -q -e 'print(' -e 'time.sleep' "$log" || fail "cycle $1: code in the log: $(cat "$log")"
	# (The start-up sweep may remove the containers of another, dead
	# owner on this host: that warning is not ours.)
	grep -v -e '^cordon: info: ' -e '^cordon: warn: start-up sweep ' "$log" | grep . &&
		fail "cycle $1: unexpected lines (warnings?): $(cat "$log")"
	grep -q 'given up' "$log" && gaveup=$((gaveup + 1))
	return 0
}

# A failing cycle exits through lib.sh's cleanup (e2e_exit): stop the
# listener too.
evpid=
trap '[ -n "$evpid" ] && kill "$evpid" 2>/dev/null; e2e_exit' EXIT

moments=(fill refill run refill idle)
gaveup=0
bad=0 left_total=0 proc_total=0 served=0 sum_cycle=0 max_stop=0 sum_stop=0
t_all=$(ms)
echo "# $cycles cycles, seed $seed"
for i in $(seq "$cycles"); do
	t0=$(ms)
	moment=${moments[$(( (i - 1) % ${#moments[@]} ))]}
	# Every container the service will create, with its owner's pid.
	"$docker" events --filter type=container --filter event=create \
		--filter label=cordon=1 \
		--format '{{.ID}} {{index .Actor.Attributes "cordon.owner_pid"}}' \
		>"$tmp/events" 2>&1 & evpid=$!
	sleep 0.2
	start --pool "$N"
	bg='' served0=$served
	case $moment in
	fill) rsleep 2500 ;;
	refill)
		# The last run's reply is checked after the stop: SIGTERM
		# must come while the refill's `docker run` is young.
		wait_full; warm_runs $((RANDOM % 3))
		run "$tmp/last" '{"code":"print(1)"}' >"$tmp/last.code"
		rsleep 40 ;;
	run)
		wait_full; warm_runs $((RANDOM % 3))
		run "$tmp/long" '{"code":"import time; time.sleep(2); print(2)"}' \
			>"$tmp/long.code" & bg=$!
		sleep 0.3; rsleep 1200 ;;
	idle) wait_full; warm_runs $((1 + RANDOM % 3)); wait_full ;;
	esac
	ts=$(ms)
	stop
	tstop=$(( $(ms) - ts ))
	if [ "$moment" = refill ]; then
		[ "$(cat "$tmp/last.code")" = 200 ] && [ "$(jget "$tmp/last" status)" = ok ] ||
			fail "cycle $i: the last warm run: $(cat "$tmp/last")"
		served=$((served + 1))
	fi
	if [ -n "$bg" ]; then
		wait "$bg"
		# Started before SIGTERM: it runs to its end and is answered.
		[ "$(cat "$tmp/long.code")" = 200 ] && [ "$(jget "$tmp/long" stdout)" = 2 ] ||
			fail "cycle $i: the run in flight at SIGTERM: $(cat "$tmp/long.code") $(cat "$tmp/long")"
		served=$((served + 1))
	fi
	left=$(containers)
	sleep 3
	late=$(containers | grep -vxF -e "${left:-none}" || true)
	kill "$evpid" 2>/dev/null; wait "$evpid" 2>/dev/null; evpid=
	ids=$(awk -v p="$pid" '$2 == p { print $1 }' "$tmp/events")
	made=$(grep -c . <<<"$ids")
	pr=$( [ -n "$ids" ] && procs $ids )
	nleft=$(grep -c . <<<"$left$late")
	npr=$(grep -c . <<<"$pr")
	if [ "$nleft" -gt 0 ] || [ "$npr" -gt 0 ]; then
		bad=$((bad + 1))
		echo "# cycle $i ($moment): LEFT $nleft container(s), $npr process(es)"
		for c in $left $late; do
			"$docker" ps -a --filter "id=$c" --format '#   {{.ID}} {{.Names}} {{.Status}} created {{.CreatedAt}}'
		done
		[ -n "$pr" ] && sed 's/^/#   /' <<<"$pr"
		echo "#   service log:"; sed 's/^/#   | /' "$tmp/serve.log"
		"$docker" rm -f $left $late >/dev/null 2>&1
	fi
	check_log "$i" "$moment" $((served - served0))
	left_total=$((left_total + nleft))
	proc_total=$((proc_total + npr))
	dt=$(( $(ms) - t0 ))
	sum_cycle=$((sum_cycle + dt)) sum_stop=$((sum_stop + tstop))
	[ "$tstop" -gt "$max_stop" ] && max_stop=$tstop
	echo "cycle $i: SIGTERM $moment, $made container(s) made, exit in $tstop ms, left $nleft, processes $npr, $dt ms"
	pid=
done
total=$(( $(ms) - t_all ))
echo "cycles $cycles, cycles that left something $bad, containers left $left_total," \
	"processes left $proc_total, runs $served, starts given up at SIGTERM $gaveup," \
	"per cycle $((sum_cycle / cycles)) ms, SIGTERM to exit mean $((sum_stop / cycles)) ms max $max_stop ms," \
	"total $((total / 1000)) s"
[ "$bad" = 0 ] || fail "$bad of $cycles cycles left containers or processes (seed $seed)"
echo "ok - $cycles SIGTERM cycles left no container and no process"
[ -n "${CORDON_STRESS_NOLOG:-}" ] && exit 0

# --log-level warn: a cycle (fill, a warm run, SIGTERM) says nothing.
start --pool "$N" --log-level warn
wait_full; warm_runs 1
stop
grep -q -e ': info: ' -e ': debug: ' "$tmp/serve.log" &&
	fail "--log-level warn still logged: $(cat "$tmp/serve.log")"
pid=
echo "ok - --log-level warn silences the info lines"

# kill-all and resume, with a docker CLI that lists no container (the real
# kill-all would remove every Cordon container on the host).
printf '#!/bin/sh\nexit 0\n' >"$tmp/docker" && chmod +x "$tmp/docker"
cat >"$tmp/fake.json" <<JSON
{"audit_log": "$tmp/audit.log", "docker": "$tmp/docker", "serve": {"pool": 0}}
JSON
cfgfile="$tmp/fake.json"
start
[ "$(req "$tmp/k" -X POST http://cordon/v1/kill-all)" = 200 ] || fail "kill-all: $(cat "$tmp/k")"
[ "$(req "$tmp/k" -X POST http://cordon/v1/resume)" = 200 ] || fail "resume: $(cat "$tmp/k")"
stop
for l in "kill-all: cancelling 0 running run(s), refusing 0 queued" \
	"kill-all: removed 0 container(s); paused until resume" \
	"resume: accepting runs again" "shutdown: served 0 run(s)"; do
	grep -qF "cordon: info: $l" "$tmp/serve.log" || fail "no line '$l': $(cat "$tmp/serve.log")"
done
echo "ok - kill-all and resume are logged"
