#!/usr/bin/env bash
# End-to-end test of the warm pool of `cordon serve` with real dockerd +
# runsc: pooled containers carry the same hardening as a cold one (compared
# from `docker inspect`), concurrent runs of two tenants each get a
# container no other run had (marker file + hostname + name), the pool
# refills and replaces containers past their max age, a warm run is held to
# its deadline and memory limit, kill-all empties the pool and keeps it
# empty until resume, SIGTERM leaves no container. Fails (never skips) when
# Docker, the runtime, the image or curl is missing, unless CORDON_E2E=skip.
# Like e2e_serve.sh it needs a passing `cordon probe --net none` in
# /var/lib/cordon.
. "$(dirname "$0")/lib.sh"

A='Authorization: Bearer aaaaaaaaaaaaaaaa'
B='Authorization: Bearer bbbbbbbbbbbbbbbb'
cfgfile="$tmp/cordon.json"
cat >"$cfgfile" <<JSON
{"audit_log": "$tmp/audit.log",
 "serve": {"global_limit": 4, "queue_max": 16, "pool": 1, "pool_max_age_s": 600,
  "tenants": [
   {"name": "a", "token": "aaaaaaaaaaaaaaaa", "max_concurrent": 2},
   {"name": "b", "token": "bbbbbbbbbbbbbbbb", "max_concurrent": 2}]}}
JSON
N=2
t0=$(date +%s.%N)

health() { req "$tmp/h" http://cordon/v1/health >/dev/null; }
# idle: the service's idle offline containers, by its own count.
idle() { health; jget "$tmp/h" pool.none; }
wait_full() {
	for _ in $(seq 1200); do
		[ "$(idle)" = "$N" ] && return 0
		sleep 0.1
	done
	fail "the pool did not reach $N idle containers in 120 s: $(cat "$tmp/h")"
}
# Names of the idle pool containers, from Docker (session label "pool").
pool_names() {
	"$docker" ps --filter label=cordon=1 --filter "label=cordon.owner_pid=$pid" \
		--filter label=cordon.session=pool --filter network=none --format '{{.Names}}' | sort
}

# --pool overrides serve.pool (1 in the file).
start --pool "$N"
wait_full
names=$(pool_names)
[ "$(grep -c . <<<"$names")" -ge "$N" ] || fail "docker shows no pool containers: $names"
echo "ok - the pool filled to $N ($(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}') s)"
# serve.pool_starts 0 (the default): one start in flight per online CPU.
cpus=$(getconf _NPROCESSORS_ONLN)
[ "$cpus" -le 16 ] || cpus=16
[ "$(jget "$tmp/h" pool.starts_max)" = "$cpus" ] ||
	fail "pool.starts_max is not the online CPUs ($cpus): $(cat "$tmp/h")"
echo "ok - the refill starts up to $cpus container(s) at once (pool.starts_max)"

# 1. Same hardening as a cold container: compare what Docker recorded. A
# run with a file always starts cold (its /in mount is fixed at start).
# The hardening Docker recorded, as one line (Env sorted: Docker does not
# keep its order).
inspect_hard() {
	"$docker" inspect "$1" | python3 -c 'import json, sys
c = json.load(sys.stdin)[0]; h = c["HostConfig"]; k = c["Config"]
print(json.dumps([h[f] for f in ("Runtime", "NetworkMode", "ReadonlyRootfs",
    "CapDrop", "CapAdd", "SecurityOpt", "Privileged", "Memory", "MemorySwap",
    "NanoCpus", "PidsLimit", "Ulimits", "Tmpfs", "IpcMode", "LogConfig",
    "Binds", "Devices")] + [k[f] for f in ("User", "WorkingDir", "Image",
    "OpenStdin")] + [sorted(k["Env"])], sort_keys=True))'
}
# A pooled container runs the holder; the job is its one exec, which adds
# nothing to the container's controls: not privileged, the container's
# user (Docker fills it in), the cold run's command.
warm1=$(head -1 <<<"$names")
warm_cmd=$("$docker" inspect -f '{{json .Config.Cmd}}' "$warm1")
[ "$warm_cmd" = '["python3","-I","-c","import sys; sys.stdin.buffer.read()"]' ] ||
	fail "a pooled container's command: $warm_cmd"
execs=$("$docker" inspect -f '{{range .ExecIDs}}{{.}} {{end}}' "$warm1")
[ "$(wc -w <<<"$execs")" = 1 ] || fail "a pooled container has execs: '$execs'"
warm_user=$("$docker" inspect -f '{{.Config.User}}' "$warm1")
curl -sf --unix-socket /var/run/docker.sock "http://docker/exec/${execs% }/json" |
	python3 -c 'import json, sys
x = json.load(sys.stdin); p = x["ProcessConfig"]
want = {"privileged": False, "user": sys.argv[1], "entrypoint": "python3",
    "arguments": ["-I", "-"], "tty": False}
got = {k: p.get(k) for k in want}
sys.exit(0 if got == want and x["OpenStdin"] and x["Running"] else
    "exec: %s" % json.dumps(x))' "$warm_user" || fail "the pooled container's exec is not the job's bare command"
echo "ok - a pooled container holds; its one exec is the job's command, no option"
warm_hard=$(inspect_hard "$warm1")
run "$tmp/c1" '{"code":"import time; time.sleep(6)","files":[{"path":"f","content_b64":"eA=="}]}' \
	-H "$A" >"$tmp/c1.code" & bg=$!
cold=
for _ in $(seq 100); do
	cold=$("$docker" ps --filter label=cordon=1 --filter "label=cordon.owner_pid=$pid" \
		--filter label=cordon.session=a --format '{{.Names}}' | head -1)
	[ -n "$cold" ] && break
	sleep 0.1
done
[ -n "$cold" ] || fail "the cold run's container did not appear"
cold_hard=$(inspect_hard "$cold")
# While it runs it counts against the refill's starts (pool.cold).
health
[ "$(jget "$tmp/h" pool.cold)" = 1 ] || fail "pool.cold during a cold run: $(cat "$tmp/h")"
wait $bg
[ "$(cat "$tmp/c1.code")" = 200 ] || fail "cold run: $(cat "$tmp/c1")"
[ "$(jget "$tmp/c1" warm)" = False ] || fail "a run with files was warm: $(cat "$tmp/c1")"
health
[ "$(jget "$tmp/h" pool.cold)" = 0 ] || fail "pool.cold after the cold run: $(cat "$tmp/h")"
[ "$warm_hard" = "$cold_hard" ] ||
	fail "a pooled container differs from a cold one:
warm: $warm_hard
cold: $cold_hard"
grep -q '"none", true, \["ALL"\], null, \["no-new-privileges"\], false' <<<"$warm_hard" ||
	fail "unexpected hardening: $warm_hard"
echo "ok - pooled and cold containers have the same hardening ($warm_hard)"

# The probe through a warm container: all controls hold there too.
"$cordon" probe --net none --warm >"$tmp/probe.json" 2>&1 ||
	fail "probe --net none --warm: $(cat "$tmp/probe.json")"
grep -q '"warm":true' "$tmp/probe.json" || fail "the warm probe was not warm: $(cat "$tmp/probe.json")"
echo "ok - cordon probe --warm: every control holds in a pooled container"

# 2. Never reused: 12 concurrent runs from two tenants (2 running each, the
# rest queued). Each leaves a marker in /tmp and reports whether it found
# one, its hostname and its container.
wait_full
code='import os, socket\nseen = os.path.exists(\"/tmp/.e2e-used\")\nopen(\"/tmp/.e2e-used\", \"w\").write(\"x\")\nprint(socket.gethostname(), seen)'
bgs=
for i in $(seq 12); do
	if [ $((i % 2)) = 0 ]; then h=$A; else h=$B; fi
	run "$tmp/n$i" "{\"code\":\"$code\"}" -H "$h" >"$tmp/n$i.code" & bgs="$bgs $!"
done
wait $bgs
warm=0
for i in $(seq 12); do
	[ "$(cat "$tmp/n$i.code")" = 200 ] && [ "$(jget "$tmp/n$i" status)" = ok ] ||
		fail "run $i: HTTP $(cat "$tmp/n$i.code"): $(cat "$tmp/n$i")"
	[ "$(jget "$tmp/n$i" warm)" = True ] && warm=$((warm + 1))
	read -r host marker _ <<<"$(jget "$tmp/n$i" stdout)"
	[ "$marker" = False ] || fail "run $i found the marker of an earlier run: $(cat "$tmp/n$i")"
	echo "$host" >>"$tmp/hosts"
	jget "$tmp/n$i" container >>"$tmp/names"
done
[ "$(sort -u "$tmp/hosts" | wc -l)" = 12 ] || fail "hostnames repeat: $(sort "$tmp/hosts" | uniq -d)"
[ "$(sort -u "$tmp/names" | wc -l)" = 12 ] || fail "containers repeat: $(sort "$tmp/names" | uniq -d)"
[ "$warm" -ge "$N" ] || fail "only $warm of 12 runs were warm with $N pooled"
req "$tmp/metrics" http://cordon/metrics >/dev/null
hits=$(sed -n 's/^cordon_pool_hits_total //p' "$tmp/metrics")
misses=$(sed -n 's/^cordon_pool_misses_total //p' "$tmp/metrics")
[ "$hits" = "$warm" ] || fail "metrics say $hits hits, the results $warm: $(cat "$tmp/metrics")"
[ $((hits + misses)) = 13 ] || fail "hits $hits + misses $misses != 13 runs"
for n in $(cat "$tmp/names"); do
	"$docker" inspect "$n" >/dev/null 2>&1 && fail "the container of a finished run is still there: $n"
done
echo "ok - 12 concurrent runs, 12 distinct containers and hostnames, no marker seen ($warm warm)"

# 3. A warm run is held to its deadline and its memory limit.
wait_full
run "$tmp/t1" '{"code":"while True: pass","timeout_s":2}' >/dev/null
[ "$(jget "$tmp/t1" status)" = timeout ] && [ "$(jget "$tmp/t1" warm)" = True ] ||
	fail "warm endless loop: $(cat "$tmp/t1")"
"$docker" inspect "$(jget "$tmp/t1" container)" >/dev/null 2>&1 && fail "the timed-out warm container is still there"
wait_full
run "$tmp/o1" '{"code":"b = []\nwhile True: b.append(bytearray(64 << 20))","timeout_s":60}' >/dev/null
[ "$(jget "$tmp/o1" status)" = oom ] && [ "$(jget "$tmp/o1" warm)" = True ] ||
	fail "warm memory bomb: $(cat "$tmp/o1")"
echo "ok - warm runs: endless loop -> timeout, memory bomb -> oom"

# A warm run answers before its container is removed, and says only what
# it knows: a job that kills itself (137, sandbox alive) is ok with 137,
# a self-chosen 130 is ok with 130; a warm container removed from outside
# mid-run is a sandbox error, never ok; so is a job that kills the holder
# (pid 1), which ends its sandbox.
wait_full
run "$tmp/k1" '{"code":"import os, signal\nprint(1, flush=True)\nos.kill(os.getpid(), signal.SIGKILL)"}' >/dev/null
[ "$(jget "$tmp/k1" status)" = ok ] && [ "$(jget "$tmp/k1" exit_code)" = 137 ] &&
	[ "$(jget "$tmp/k1" warm)" = True ] || fail "warm self-kill: $(cat "$tmp/k1")"
wait_full
run "$tmp/k2" '{"code":"import sys\nsys.exit(130)"}' >/dev/null
[ "$(jget "$tmp/k2" status)" = ok ] && [ "$(jget "$tmp/k2" exit_code)" = 130 ] &&
	[ "$(jget "$tmp/k2" warm)" = True ] || fail "warm exit 130: $(cat "$tmp/k2")"
wait_full
run "$tmp/k3" '{"code":"import os, signal, time\nfor s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):\n    try: os.kill(1, s)\n    except OSError as e: print(e)\ntime.sleep(1)\nprint(\"after\")"}' >/dev/null
[ "$(jget "$tmp/k3" status)" = sandbox_error ] && [ "$(jget "$tmp/k3" warm)" = True ] ||
	fail "warm job signalling pid 1: $(cat "$tmp/k3")"
echo "ok - a warm job that kills the holder (pid 1): sandbox_error"
wait_full
before=$(pool_names)
run "$tmp/r1" '{"code":"import time\ntime.sleep(100)","timeout_s":120}' >/dev/null & bg=$!
sleep 3
# Every container that was idle: the run's is one of them.
"$docker" rm -f $before >/dev/null
wait $bg
[ "$(jget "$tmp/r1" status)" = sandbox_error ] && [ "$(jget "$tmp/r1" warm)" = True ] ||
	fail "warm container removed from outside: $(cat "$tmp/r1")"
echo "ok - warm runs: self-kill -> ok 137, exit 130 -> ok 130, removed from outside -> sandbox_error"

# 5. kill-all: the pool is emptied and stays empty until resume.
wait_full
[ "$(req "$tmp/m" -X POST http://cordon/v1/kill-all)" = 200 ] || fail "kill-all: $(cat "$tmp/m")"
for _ in $(seq 100); do [ -z "$(containers)" ] && break; sleep 0.1; done
[ -z "$(containers)" ] || fail "containers left after kill-all: $(containers)"
sleep 3
[ -z "$(containers)" ] || fail "the pool refilled while paused: $(containers)"
[ "$(idle)" = 0 ] || fail "health while paused: $(cat "$tmp/h")"
[ "$(req "$tmp/m" -X POST http://cordon/v1/resume)" = 200 ] || fail "resume"
wait_full
echo "ok - kill-all empties the pool; resume refills it"

# 6. SIGTERM: exit 0 and no container left, pooled ones included.
stop
left=$("$docker" ps -aq --filter label=cordon=1 --filter "label=cordon.owner_pid=$pid")
[ -z "$left" ] || fail "containers left after SIGTERM: $left"
echo "ok - SIGTERM removed the pool"

# 4. Max age: every idle container is replaced. A service of its own with
# a 12 s max age: with it in the sections above, a pooled container could
# expire between the pool filling and the concurrent runs taking it, so
# that fewer than N of them were warm on a loaded machine.
sed -i 's/"pool_max_age_s": 600/"pool_max_age_s": 12/' "$cfgfile"
start --pool "$N"
wait_full
before=$(pool_names)
for _ in $(seq 600); do
	sleep 0.1
	now=$(pool_names)
	[ -z "$(comm -12 <(echo "$before") <(echo "$now"))" ] && [ "$(idle)" = "$N" ] && break
done
[ -z "$(comm -12 <(echo "$before") <(echo "$now"))" ] || fail "idle containers outlived the max age: $now"
for n in $before; do
	"$docker" inspect "$n" >/dev/null 2>&1 && fail "an expired pool container is still there: $n"
done
echo "ok - containers past the max age replaced"
stop
awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "all passed in %.1f s\n", b-a}'
