#!/usr/bin/env bash
# End-to-end: Cordon on a dockerd with userns-remap, proven with a second,
# test-owned daemon that never touches the host's: its own --data-root,
# --exec-root, --pidfile, unix socket, managed containerd, --cgroup-parent,
# no bridge and no iptables rules, started in a private mount namespace
# where /etc/subuid and /etc/subgid are bind-mounted copies giving `nobody`
# a range (so the host's files are never edited). The pinned image goes
# in with `docker save | docker load` (same ID). Then: doctor names the
# mode and range, `cordon probe` passes every control, runs work (print,
# --in), a memory bomb ends in oom, nproc holds, and runsc's gofer runs as
# the remapped uid instead of host root. Afterwards it stops the daemon
# and checks that nothing is left: no process, mount, cgroup or file.
# Needs root. Fails (never skips) without dockerd, runsc or the pinned
# image, unless CORDON_E2E=skip.
. "$(dirname "$0")/../lib/e2e.sh" || exit 1
[ "$(id -u)" = 0 ] || missing "not root (it starts a dockerd)"
for t in dockerd unshare nsenter runsc docker; do
	command -v "$t" >/dev/null || missing "no $t"
done
docker=$(command -v docker)
runsc=$(command -v runsc)
"$docker" info >/dev/null 2>&1 || missing "the host's dockerd is not answering (the image comes from it)"
id=$(env -u CORDON_CONFIG "$cordon" image show 2>/dev/null |
	sed -n 's/.*"id":"\(sha256:[0-9a-f]*\)".*/\1/p')
[ -n "$id" ] || missing "no pinned sandbox image"

T=$(mktemp -d /tmp/cordon-e2e-userns.XXXXXX)
# The remapped root must be able to pass through to its data root.
chmod 0711 "$T"
cg=$(basename "$T")
start=900000 count=65536
sock="unix://$T/docker.sock"
dpid=
ms() { date +%s%3N; }
D() { "$docker" -H "$sock" "$@"; }

# Stops the daemon (its containers first) and removes everything it made.
cleanup() {
	local i p
	if [ -n "$dpid" ] && kill -0 "$dpid" 2>/dev/null; then
		D ps -aq 2>/dev/null | xargs -r "$docker" -H "$sock" rm -f >/dev/null 2>&1
		kill -TERM "$dpid"
		i=0
		while kill -0 "$dpid" 2>/dev/null && [ $i -lt 120 ]; do
			sleep 0.25
			i=$((i + 1))
		done
		kill -0 "$dpid" 2>/dev/null && kill -KILL "$dpid"
	fi
	# Anything still running from the test's directory (a shim, runsc).
	for p in $(pgrep -f -- "$T"); do kill -KILL "$p" 2>/dev/null; done
	for i in /sys/fs/cgroup/*/"$cg"; do
		[ -d "$i" ] && find "$i" -depth -type d -exec rmdir {} + 2>/dev/null
	done
	rm -rf -- "$T"
}
trap cleanup EXIT

printf 'nobody:%s:%s\n' "$start" "$count" >"$T/subuid"
cp "$T/subuid" "$T/subgid"
cat >"$T/daemon.json" <<EOF
{"userns-remap": "nobody:nogroup", "bridge": "none", "iptables": false,
 "ip-masq": false,
 "runtimes": {"cordon-offline": {"path": "$runsc", "runtimeArgs": ["--network=none"]}}}
EOF

t0=$(ms)
unshare -m --propagation private sh -c '
	mount --bind "$1/subuid" /etc/subuid && mount --bind "$1/subgid" /etc/subgid &&
	exec dockerd --config-file "$1/daemon.json" --data-root "$1/data" \
		--exec-root "$1/exec" --pidfile "$1/docker.pid" -H "unix://$1/docker.sock" \
		--cgroup-parent "$2"' sh "$T" "$cg" >"$T/dockerd.log" 2>&1 </dev/null &
dpid=$!
for ((i = 0; i < 240; i++)); do
	D info >/dev/null 2>&1 && break
	kill -0 "$dpid" 2>/dev/null || fail "the test dockerd exited: $(tail -n 5 "$T/dockerd.log")"
	sleep 0.25
done
D info >/dev/null 2>&1 || fail "the test dockerd did not answer in 60 s: $(tail -n 5 "$T/dockerd.log")"
t_up=$(( $(ms) - t0 ))
[ "$(cat "$T/docker.pid")" = "$dpid" ] || fail "pidfile $(cat "$T/docker.pid") is not dockerd $dpid"
info=$(D info --format '{{json .SecurityOptions}} {{.DockerRootDir}}')
grep -q '"name=userns"' <<<"$info" || fail "the test daemon is not in userns-remap mode: $info"
[ "${info##* }" = "$T/data/$start.$start" ] || fail "unexpected remapped root dir: $info"
echo "ok: test dockerd up in ${t_up} ms, userns-remap ($info)"

t0=$(ms)
"$docker" save "$id" | D load >"$T/load.out" 2>&1 || fail "docker load: $(cat "$T/load.out")"
t_load=$(( $(ms) - t0 ))
D image inspect --format '{{.Id}}' "$id" >/dev/null 2>&1 || fail "$id is not in the test daemon: $(cat "$T/load.out")"
echo "ok: pinned image $id loaded in ${t_load} ms (same ID)"

mkdir -p "$T/state"
export DOCKER_HOST=$sock CORDON_CONFIG="$T/cordon.json"
printf '{"state_dir":"%s/state","audit_log":"%s/audit.log","image":{"id":"%s"}}\n' \
	"$T" "$T" "$id" >"$CORDON_CONFIG"
jfield() { python3 -c 'import json,sys; v=json.load(open(sys.argv[1])).get(sys.argv[2]); print("" if v is None else v)' "$1" "$2"; }

# The doctor, as an operator of that daemon sees it (its /etc/subuid).
nsenter -t "$dpid" -m "$cordon" doctor >"$T/doctor.txt" 2>&1
want="OK   daemon: userns-remap: container root is host uid $start, gid $start ($count ids: $start-$((start + count - 1)))"
grep -qF "$want" "$T/doctor.txt" || fail "doctor: $(grep daemon "$T/doctor.txt")"
echo "ok: doctor: $(grep '^OK   daemon' "$T/doctor.txt")"

t0=$(ms)
"$cordon" probe >"$T/probe.json" 2>"$T/probe.err" || fail "cordon probe: $(cat "$T/probe.err" "$T/probe.json")"
t_probe=$(( $(ms) - t0 ))
[ "$(jfield "$T/probe.json" pass)" = True ] || fail "probe: $(cat "$T/probe.json")"
n=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["controls"]))' "$T/probe.json")
echo "ok: cordon probe: all $n controls pass under userns-remap (${t_probe} ms)"

times=""
for i in 1 2 3; do
	t0=$(ms)
	echo 'print(1)' | "$cordon" run >"$T/run$i.json" 2>"$T/run$i.err" || fail "run: $(cat "$T/run$i.err")"
	times="$times $(( $(ms) - t0 ))"
	grep -q '"status":"ok","exit_code":0,"stdout":"1\\n"' "$T/run$i.json" || fail "run: $(cat "$T/run$i.json")"
done
echo "ok: cordon run print(1):$times ms"

echo "from the host" >"$T/in.txt"
echo 'print(open("/in/in.txt").read().strip())' | "$cordon" run --in "$T/in.txt" >"$T/in.json" 2>&1 ||
	fail "run --in: $(cat "$T/in.json")"
[ "$(jfield "$T/in.json" stdout)" = "from the host" ] || fail "run --in: $(cat "$T/in.json")"
echo "ok: --in files are readable by the remapped sandbox user"

cat >"$T/bomb.py" <<'PY'
b = []
for i in range(12):
    b.append(bytearray(50 << 20))
print("allocated", len(b) * 50, "MiB")
PY
"$cordon" run --timeout 60 <"$T/bomb.py" >"$T/bomb.json" 2>&1 || fail "memory bomb: $(cat "$T/bomb.json")"
[ "$(jfield "$T/bomb.json" status)" = oom ] || fail "600 MiB under limits.memory 256m did not end in oom: $(cat "$T/bomb.json")"
cat >"$T/fork.py" <<'PY'
import os, time
n = 0
try:
    for i in range(200):
        if os.fork() == 0:
            time.sleep(2)
            os._exit(0)
        n += 1
except OSError as e:
    print("fork stopped at", n, e.errno)
PY
"$cordon" run --timeout 30 <"$T/fork.py" >"$T/fork.json" 2>&1 || fail "fork: $(cat "$T/fork.json")"
grep -q '"stdout":"fork stopped at 6[0-9] 11\\n"' "$T/fork.json" || fail "nproc did not hold: $(cat "$T/fork.json")"
echo "ok: limits hold: 600 MiB -> oom; $(jfield "$T/fork.json" stdout)"

# Who runsc's processes are on the host while a job runs.
echo 'import time; time.sleep(5)' | "$cordon" run --timeout 30 >"$T/sleep.json" 2>&1 &
spid=$!
cid=
for ((i = 0; i < 80 && ${#cid} == 0; i++)); do
	cid=$(D ps -q --no-trunc --filter label=cordon=1 | head -n 1)
	sleep 0.1
done
[ -n "$cid" ] || fail "the sleeping job's container did not show up"
sleep 1
ps -eo uid=,args= | awk -v c="$cid" '$2 ~ /^runsc-(gofer|sandbox)$/ && index($0, c) { print $1, $2 }' >"$T/procs.txt"
wait "$spid"
grep -q ' runsc-gofer$' "$T/procs.txt" || fail "no runsc-gofer seen for $cid: $(cat "$T/procs.txt")"
grep -q '^0 ' "$T/procs.txt" && fail "a runsc process runs as host root: $(cat "$T/procs.txt")"
grep -qx "$start runsc-gofer" "$T/procs.txt" || fail "runsc-gofer is not the remapped root $start: $(cat "$T/procs.txt")"
echo "ok: on the host: $(tr '\n' ';' <"$T/procs.txt") (without userns-remap the gofer is uid 0)"

# Stop it all and check that nothing is left.
unset DOCKER_HOST
pid=$dpid
trap - EXIT
cleanup
kill -0 "$pid" 2>/dev/null && fail "the test dockerd $pid still runs"
left=$(pgrep -a -f -- "$T")
[ -z "$left" ] || fail "processes left: $left"
grep -qF -- "$T" /proc/self/mountinfo && fail "mounts left: $(grep -F -- "$T" /proc/self/mountinfo)"
ls -d /sys/fs/cgroup/*/"$cg" 2>/dev/null && fail "cgroups left: $(ls -d /sys/fs/cgroup/*/"$cg")"
[ -e "$T" ] && fail "$T is still there"
[ -s /etc/subuid ] && grep -q "^nobody:$start:" /etc/subuid && fail "the host's /etc/subuid was changed"
echo "ok: nothing left behind (process, mount, cgroup, directory, /etc/subuid)"
echo "latency: test daemon start ${t_up} ms, image load ${t_load} ms, probe ${t_probe} ms, print(1):$times ms"
exit 0
