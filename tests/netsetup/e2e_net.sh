#!/usr/bin/env bash
# End-to-end test of `cordon net up|down|status` and proxy mode, with real
# dockerd, iptables, cordon-proxy and gVisor sandboxes. Uses its own network,
# bridge, subnet and state dir (a test config), so it never touches a real
# `cordon net up`. From inside proxy-mode sandboxes it proves: through the
# proxy an allowlisted name reaches an upstream on the host and another name
# gets 403; directly, only gateway:proxy-port is reachable (TCP 1-1024, the
# test's own services on the gateway, on 0.0.0.0 and on a second host
# address, another sandbox, 169.254.169.254, a TEST-NET address); UDP 53 on
# the gateway is silent; names do not resolve. Then idempotency, drift, the
# supervisor's restart, the refusal to go down under a running sandbox, and
# that `net down` leaves nothing. Fails (never skips) when something is
# missing, unless CORDON_E2E=skip.
# CORDON_E2E_EGRESS_RUNTIME (default cordon-egress) and
# CORDON_E2E_DEBUG_EGRESS_RUNTIME (default cordon-debug-egress) name the
# runtimes to prove; CORDON_E2E_STACK=netstack|host makes the test fail
# unless that runtime really runs that network stack (runsc's own netstack,
# --network=sandbox, or the host kernel's, --network=host): the suites run
# once per stack (tests/netsetup/meson.build).
set -u
fail() { echo "FAIL: $*" >&2; exit 1; }
missing() {
	if [ "${CORDON_E2E:-}" = skip ]; then echo "SKIP (CORDON_E2E=skip): $*"; exit 77; fi
	fail "$* (run scripts/setup and 'cordon image build'; set CORDON_E2E=skip only on a laptop)"
}
step() { echo "--- $(date +%T) $*"; }

cordon="$CORDON_BUILD_ROOT/cordon"
proxy="$CORDON_BUILD_ROOT/proxy/cordon-proxy"
here="$CORDON_SOURCE_ROOT/tests/netsetup"
[ "$(id -u)" = 0 ] || missing "must run as root (iptables, docker networks)"
for t in iptables ip6tables ip nsenter python3; do
	command -v "$t" >/dev/null || missing "no $t"
done
docker=$(command -v /usr/bin/docker || command -v docker) || missing "no docker CLI"
"$docker" info >/dev/null 2>&1 || missing "dockerd is not answering"
rt=${CORDON_E2E_EGRESS_RUNTIME:-cordon-egress}
drt=${CORDON_E2E_DEBUG_EGRESS_RUNTIME:-cordon-debug-egress}
want_stack=${CORDON_E2E_STACK:-}
. "$here/stack.sh"
check_stack
img=$("$cordon" image show 2>/dev/null | sed -n 's/.*"id":"\(sha256:[0-9a-f]*\)".*/\1/p')
[ -n "$img" ] || missing "no pinned sandbox image"
[ -x "$proxy" ] || missing "no cordon-proxy at $proxy"
"$proxy" --check --listen 127.0.0.1:0 \
	--allowlist "$CORDON_SOURCE_ROOT/examples/allowlists/default.list" >/dev/null 2>&1 ||
	fail "cordon-proxy --check fails on the shipped default allowlist"

net=cordon-e2e-ns
br=cordonE2E0
subnet=10.213.250.0/24
gw=10.213.250.1
dummy=cordonE2Ev
dummy_addr=10.213.251.1
T=$(mktemp -d /tmp/cordon-nstest.XXXXXX)
chmod 755 "$T"
export CORDON_CONFIG="$T/cordon.json"
cat >"$CORDON_CONFIG" <<EOF
{"egress_network": "$net", "egress_bridge": "$br", "egress_subnet": "$subnet",
 "state_dir": "$T/state", "runtime_egress": "$rt", "runtime_debug_egress": "$drt",
 "audit_log": "$T/audit.log", "image": {"id": "$img"}}
EOF
pids=()
cleanup() {
	"$docker" rm -f nstest-a-host nstest-a-sealed nstest-b nstest-nsfilter >/dev/null 2>&1
	"$cordon" net down >/dev/null 2>&1
	"$docker" network rm "$net" >/dev/null 2>&1
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	ip link del "$dummy" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
if "$docker" network inspect "$net" >/dev/null 2>&1 || ip link show "$br" >/dev/null 2>&1; then
	fail "$net / $br exist already (a previous run?): remove them first"
fi
start=$(date +%s)

step "host services: stub DNS on 127.0.0.1, upstream on 127.0.0.2, a listener on 0.0.0.0"
python3 "$here/hostsvc.py" --out "$T/svc1.json" --dns 127.0.0.1 \
	--name allowed.example.com=127.0.0.2 --name denied.example.com=127.0.0.2 \
	--http 127.0.0.2 --tcp 0.0.0.0 &
pids+=($!)
for _ in $(seq 300); do [ -s "$T/svc1.json" ] && break; sleep 0.1; done
[ -s "$T/svc1.json" ] || fail "host services did not start"
# jget FILE EXPR...: one value per EXPR (d is the JSON), one python start.
jget() { python3 -I -c 'import json,sys; d=json.load(open(sys.argv[1])); print(" ".join(str(eval(e, {}, {"d": d})) for e in sys.argv[2:]))' "$@"; }
read -r dns_port http_port any_port < <(jget "$T/svc1.json" 'd["dns"]' 'd["http"]' 'd["tcp"]["0.0.0.0"]')
printf '# e2e allowlist\nallowed.example.com:%s\n' "$http_port" >"$T/allow.list"

step "cordon net up"
"$cordon" net up --allowlist "$T/allow.list" \
	--proxy-arg=--resolver=127.0.0.1:"$dns_port" \
	--proxy-arg=--allow-address=127.0.0.2 >"$T/up1.txt" 2>&1 ||
	fail "net up: $(cat "$T/up1.txt")"
cat "$T/up1.txt"
iptables -S >"$T/ipt1.txt"; ip6tables -S >"$T/ip6t1.txt"
"$cordon" net up --allowlist "$T/allow.list" \
	--proxy-arg=--resolver=127.0.0.1:"$dns_port" \
	--proxy-arg=--allow-address=127.0.0.2 >"$T/up2.txt" 2>&1 ||
	fail "second net up: $(cat "$T/up2.txt")"
grep -q '^already up' "$T/up2.txt" || fail "second up changed something: $(cat "$T/up2.txt")"
iptables -S | diff "$T/ipt1.txt" - >/dev/null || fail "second up changed iptables"
ip6tables -S | diff "$T/ip6t1.txt" - >/dev/null || fail "second up changed ip6tables"
echo "ok: second up: $(cat "$T/up2.txt"), rules unchanged"
"$cordon" net status >"$T/status1.json" 2>&1 || fail "net status after up: $(cat "$T/status1.json")"
echo "ok: status is clean"
iptables -S | grep -- "$br"

step "cordon probe --net proxy and cordon run --net proxy (the real runner path)"
"$cordon" probe --net proxy >"$T/probe.json" 2>&1 || fail "probe --net proxy: $(cat "$T/probe.json")"
echo "ok: probe --net proxy passed"
grep -q "\"network_stack\":\"$rt_stack\"" "$T/probe.json" ||
	fail "the probe report does not say network_stack $rt_stack: $(cat "$T/probe.json")"
echo "ok: the probe report says network_stack $rt_stack"
# The warm pool's path: a pre-started proxy-mode container, sealed before
# it is handed out, then given its program (what `cordon serve --pool` does).
"$cordon" probe --net proxy --warm >"$T/probe-warm.json" 2>&1 ||
	fail "probe --net proxy --warm: $(cat "$T/probe-warm.json")"
grep -q '"warm":true' "$T/probe-warm.json" || fail "the warm probe was not warm: $(cat "$T/probe-warm.json")"
echo "ok: probe --net proxy --warm passed"
# The debug twin (cordon-debug-egress: runsc --debug --strace, same network
# mode) holds the same controls; its report is not recorded.
"$cordon" probe --net proxy --debug >"$T/probe-debug.json" 2>&1 ||
	fail "probe --net proxy --debug: $(cat "$T/probe-debug.json")"
grep -q '"debug":true' "$T/probe-debug.json" || fail "the debug probe was not a debug one: $(cat "$T/probe-debug.json")"
grep -q "runtime $drt (runsc)" "$T/probe-debug.json" ||
	fail "the debug probe did not run in $drt: $(cat "$T/probe-debug.json")"
dlog=$(jget "$T/probe-debug.json" 'd["debug_log"]')
case $dlog in /*/[0-9a-f]*) rm -rf -- "$dlog" ;; esac
echo "ok: probe --net proxy --debug passed"
cat >"$T/fetch.py" <<PY
import urllib.request, urllib.error
for name in ("allowed.example.com", "denied.example.com"):
    try:
        r = urllib.request.urlopen("http://%s:$http_port/" % name, timeout=10)
        print(name, r.status, r.read().decode().strip())
    except urllib.error.HTTPError as e:
        print(name, e.code, e.headers.get("X-Cordon-Error"))
    except Exception as e:
        print(name, "error", e)
PY
"$cordon" run --net proxy <"$T/fetch.py" >"$T/run.json" 2>&1 || fail "cordon run --net proxy: $(cat "$T/run.json")"
out=$(jget "$T/run.json" 'd["stdout"]')
echo "$out"
echo "$out" | grep -q "^allowed.example.com 200 cordon-upstream-ok allowed.example.com:$http_port" ||
	fail "allowlisted fetch through cordon run --net proxy failed: $(cat "$T/run.json")"
echo "$out" | grep -q "^denied.example.com 403 not-on-policy default" ||
	fail "non-allowlisted fetch was not refused with 403: $(cat "$T/run.json")"
[ "$(jget "$T/run.json" 'd["net"]')" = proxy ] || fail "result does not say net proxy"
echo "ok: cordon run --net proxy: allowlisted name 200, other name 403"

mapfile -t runargs < <("$cordon" net run-args) || true
[ "${#runargs[@]}" -gt 4 ] || fail "net run-args gave nothing"
echo "run args: ${runargs[*]}"
hard=(--cap-drop=ALL --read-only --user 65534:65534 --security-opt=no-new-privileges
	--label cordon=1 --label cordon.test=netsetup)

step "another sandbox on the network, listening on 8080"
"$docker" run -d --name nstest-b "${hard[@]}" "${runargs[@]}" "$img" python3 -I -c '
import socket, time
s = socket.socket(); s.bind(("0.0.0.0", 8080)); s.listen(8)
while True: time.sleep(60)' >/dev/null || fail "cannot start sandbox B"
b_ip=$("$docker" inspect -f "{{(index .NetworkSettings.Networks \"$net\").IPAddress}}" nstest-b)
[ -n "$b_ip" ] || fail "sandbox B has no address"

step "more host services: on the gateway and on a second host address ($dummy_addr)"
# A veth pair (no dummy module everywhere): one host address the test owns.
ip link add "$dummy" type veth peer name "${dummy}p" && ip addr add "$dummy_addr/32" dev "$dummy" &&
	ip link set "$dummy" up && ip link set "${dummy}p" up || fail "cannot create the veth pair"
# The bridge's IPv6 link-local address, if the kernel gave it one.
# (It appears once a container gives the bridge a carrier, after DAD.)
for _ in $(seq 30); do
	br_v6=$(ip -6 -o addr show dev "$br" scope link 2>/dev/null |
		sed -n 's/.* inet6 \(fe80::[0-9a-f:]*\)\/.*/\1/p' | head -n1)
	[ -n "$br_v6" ] && break
	sleep 0.2
done
v6_listen=()
if [ -n "$br_v6" ]; then v6_listen=(--tcp ::); else br_v6=fe80::1; fi
echo "bridge IPv6 link-local: $br_v6"
python3 "$here/hostsvc.py" --out "$T/svc2.json" --tcp "$gw" --tcp "$dummy_addr" "${v6_listen[@]}" &
pids+=($!)
for _ in $(seq 300); do [ -s "$T/svc2.json" ] && break; sleep 0.1; done
[ -s "$T/svc2.json" ] || fail "gateway services did not start"
read -r gw_port dummy_port v6_port < <(jget "$T/svc2.json" "d['tcp']['$gw']" "d['tcp']['$dummy_addr']" "d['tcp'].get('::', 22)")

cat >"$T/cfg.json" <<EOF
{"gateway": "$gw", "proxy_port": 3128,
 "allowed_url": "http://allowed.example.com:$http_port/",
 "denied_url": "http://denied.example.com:$http_port/",
 "gateway_extra_ports": [$any_port, $gw_port, 3128],
 "other_targets": [["$b_ip", 8080], ["$dummy_addr", $dummy_port], ["$dummy_addr", $any_port],
                   ["169.254.169.254", 80], ["198.51.100.1", 80], ["198.51.100.1", 443]],
 "bridge_v6": "$br_v6", "v6_ports": [$v6_port, 3128, 53],
 "names": ["allowed.example.com", "example.com", "nstest-b"],
 "scan_timeout": 1.0}
EOF

# ctl LINE: one request over the proxy's control socket; the answer.
ctl() { python3 -I -c 'import socket,sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(sys.argv[2].encode() + b"\n")
print(s.makefile().readline().strip())' "$T/state/net-$br/control.sock" "$1"; }

# Runs the probe in a fresh proxy-mode sandbox, the way the runner does:
# start with stdin open, (seal,) then write the code.
run_probe() {
	local name=$1 mode=$2 fifo="$T/fifo-$1" pid
	mkfifo "$fifo"
	timeout 120 "$docker" run -i --rm --name "$name" "${hard[@]}" "${runargs[@]}" \
		"$img" python3 -I - <"$fifo" >"$T/$name.out" 2>"$T/$name.err" &
	pid=$!
	exec 7>"$fifo"
	for _ in $(seq 300); do
		[ "$("$docker" inspect -f '{{.State.Running}}' "$name" 2>/dev/null)" = true ] && break
		sleep 0.1
	done
	check_container_stack "$name"
	if [ "$mode" = sealed ]; then
		"$cordon" net seal "$name" || { exec 7>&-; fail "net seal $name"; }
	fi
	# As the runner does: register the sandbox with the proxy (its
	# address, a fresh token), and hand it the credential ahead of the
	# code (here as the first line of the program).
	local ip token
	ip=$("$docker" inspect -f "{{(index .NetworkSettings.Networks \"$net\").IPAddress}}" "$name")
	token=$(python3 -I -c 'import secrets; print(secrets.token_hex(32))')
	ctl "{\"op\":\"register\",\"run\":\"$name\",\"addr\":\"$ip\",\"policy\":\"default\",\"token\":\"$token\",\"deadline_ms\":$(( $(date +%s%3N) + 120000 ))}" |
		grep -q '"ok":true' || { exec 7>&-; fail "cannot register $name ($ip) with the proxy"; }
	{ printf 'CFG = %s\n' "$(tr -d '\n' <"$T/cfg.json")"
	  printf 'import os\nos.environ["HTTP_PROXY"] = "http://%s:%s@%s:3128"\n' "$name" "$token" "$gw"
	  cat "$here/probe.py"; } >&7
	exec 7>&-
	wait "$pid" || fail "probe sandbox $name failed: $(cat "$T/$name.err" "$T/$name.out")"
	python3 "$here/check_probe.py" "$mode" "$T/cfg.json" "$T/$name.out" ||
		fail "probe in $mode sandbox (full output: $(cat "$T/$name.out"))"
}

step "probe from an unsealed proxy-mode sandbox (host firewall only)"
run_probe nstest-a-host host
step "probe from a sealed proxy-mode sandbox (as the runner runs jobs)"
run_probe nstest-a-sealed sealed

step "does the container's netns filter this stack? (what the seal can add)"
# A rule in the sandbox's own network namespace that rejects the proxy
# port. With the host kernel's stack (--network=host) it applies and the
# proxy becomes unreachable: the seal's rules work there. With gVisor's
# netstack it does not (gVisor issue 7168: netstack's packets bypass the
# netns's netfilter), so under netstack only the host-side rules count.
fifo="$T/fifo-nsfilter"
mkfifo "$fifo"
timeout 60 "$docker" run -i --rm --name nstest-nsfilter "${hard[@]}" "${runargs[@]}" \
	"$img" python3 -I - <"$fifo" >"$T/nsfilter.out" 2>&1 &
nspid=$!
exec 7>"$fifo"
for _ in $(seq 300); do
	[ "$("$docker" inspect -f '{{.State.Running}}' nstest-nsfilter 2>/dev/null)" = true ] && break
	sleep 0.1
done
key=$("$docker" inspect -f '{{.NetworkSettings.SandboxKey}}' nstest-nsfilter)
nsenter --net="$key" -- iptables -w -I OUTPUT -p tcp -d "$gw" --dport 3128 -j REJECT ||
	{ exec 7>&-; fail "cannot add the rule in nstest-nsfilter's netns"; }
printf 'import socket\ns = socket.socket(); s.settimeout(5)\ntry:\n    s.connect(("%s", 3128)); print("connected")\nexcept Exception as e:\n    print("blocked", e)\n' "$gw" >&7
exec 7>&-
wait "$nspid"
got=$(tail -n1 "$T/nsfilter.out")
case $rt_stack in
host) [ "${got%% *}" = blocked ] || fail "host stack: a rule in the container's netns did not apply: $got" ;;
netstack) [ "$got" = connected ] || fail "netstack: expected the netns rule to be bypassed (gVisor 7168), got: $got" ;;
esac
echo "ok: $rt_stack stack, a REJECT rule for gateway:3128 in the container's netns -> $got"

step "net down refuses while a sandbox is attached"
if "$cordon" net down >"$T/down0.txt" 2>&1; then fail "net down went ahead with B attached"; fi
grep -q 'still attached' "$T/down0.txt" || fail "unexpected refusal: $(cat "$T/down0.txt")"
"$cordon" net status >/dev/null 2>&1 || fail "the refused down removed something"
echo "ok: $(cat "$T/down0.txt")"

step "drift: delete the INPUT jump by hand"
iptables -w -D INPUT -i "$br" -j "CORDON-IN-$br" || fail "could not delete the rule"
if "$cordon" net status >"$T/st2.json" 2>"$T/st2.err"; then fail "status did not notice the missing rule"; fi
grep -q "rule missing: -A INPUT -i $br -j CORDON-IN-$br" "$T/st2.err" ||
	fail "status did not name the rule: $(cat "$T/st2.err")"
echo "ok: $(cat "$T/st2.err")"
"$cordon" net up --allowlist "$T/allow.list" \
	--proxy-arg=--resolver=127.0.0.1:"$dns_port" \
	--proxy-arg=--allow-address=127.0.0.2 >"$T/up3.txt" 2>&1 || fail "repairing up: $(cat "$T/up3.txt")"
grep -q "added -A INPUT -i $br" "$T/up3.txt" || fail "up did not re-add the rule: $(cat "$T/up3.txt")"
"$cordon" net status >/dev/null 2>&1 || fail "status not clean after the repair"
iptables -S | diff "$T/ipt1.txt" - >/dev/null || fail "repaired rules differ from the original ones"
echo "ok: up re-applied it: $(cat "$T/up3.txt")"

step "drift: a rule of ours moved below an ACCEPT"
iptables -w -I FORWARD 1 -i "$br" -p udp --dport 9 -j ACCEPT
if "$cordon" net status >/dev/null 2>"$T/st3.err"; then fail "status did not notice"; fi
grep -q "rule not first in FORWARD" "$T/st3.err" || fail "status: $(cat "$T/st3.err")"
iptables -w -D FORWARD -i "$br" -p udp --dport 9 -j ACCEPT
echo "ok: $(head -n1 "$T/st3.err")"

step "privilege separation: who listens on the proxy port, and what it can open"
old=$(cat "$T/state/net-$br/proxy.pid")
sup=$(cat "$T/state/net-$br/supervisor.pid")
# The processes holding gateway:port (ss names each pid): the parent keeps
# the socket to hand it to a restarted child and never accepts on it; the
# child is the one that accepts.
lpids=$(ss -Hltnp "src $gw:3128" | grep -o 'pid=[0-9]*' | cut -d= -f2 | sort -u)
[ -n "$lpids" ] || fail "nothing listens on $gw:3128: $(ss -ltnp)"
lpid=$(echo "$lpids" | grep -vx "$old" | head -n1)
[ "$(echo "$lpids" | wc -l)" = 2 ] && [ -n "$lpid" ] ||
	fail "the holders of $gw:3128 are $(echo $lpids), not the parent $old and its child"
st() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }
[ "$(st "$lpid" Uid)" = 65534 ] || fail "the listening process $lpid runs as uid $(st "$lpid" Uid), not nobody"
[ "$(st "$lpid" NoNewPrivs)" = 1 ] || fail "the listening process $lpid has NoNewPrivs $(st "$lpid" NoNewPrivs)"
[ "$(readlink "/proc/$lpid/root")" = /run/cordon-proxy-root ] ||
	fail "the listening process's root is $(readlink "/proc/$lpid/root")"
[ "$(awk '{ print $4 }' "/proc/$lpid/stat")" = "$old" ] || fail "the listener $lpid is not the child of the proxy $old"
[ "$(st "$old" Uid)" = 0 ] || fail "the proxy's parent $old is not root"
key="$T/state/egress-ca/ca.key"
[ -f "$key" ] || fail "no CA key at $key"
# As the listener's user: the CA key is out of reach (and it is not in
# the listener's root at all).
if setpriv --reuid=65534 --regid=65534 --clear-groups cat "$key" >/dev/null 2>&1; then
	fail "uid 65534 can read $key"
fi
! grep -q "PRIVATE KEY" "/proc/$lpid/environ" 2>/dev/null || fail "a key in the listener's environment"
echo "ok: listener pid $lpid: uid 65534, NoNewPrivs 1, root /run/cordon-proxy-root; parent $old: uid 0; $key unreadable as uid 65534"

step "the supervisor restarts a killed proxy"
kill -9 "$old"
ok=
for _ in $(seq 50); do
	sleep 0.2
	new=$(cat "$T/state/net-$br/proxy.pid" 2>/dev/null)
	if [ -n "$new" ] && [ "$new" != "$old" ] && "$cordon" net status >/dev/null 2>&1; then ok=1; break; fi
done
[ -n "$ok" ] || fail "proxy not back after 10 s: $(tail -n5 "$T/state/net-$br/proxy.log")"
echo "ok: proxy $old killed, supervisor $sup started $new"

step "net down leaves nothing"
"$docker" rm -f nstest-b >/dev/null
"$cordon" net down >"$T/down1.txt" 2>&1 || fail "net down: $(cat "$T/down1.txt")"
cat "$T/down1.txt"
left=$( (iptables -S; ip6tables -S) | grep -e "$br" -e "CORDON-IN-$br" -e "CORDON-FWD-$br")
[ -z "$left" ] || fail "rules left: $left"
! "$docker" network inspect "$net" >/dev/null 2>&1 || fail "network $net left"
! ip link show "$br" >/dev/null 2>&1 || fail "bridge $br left"
# A zombie is gone too: its parent (init here) may be slow to reap it.
for p in "$sup" "$new"; do
	st=$(ps -o stat= -p "$p" 2>/dev/null)
	[ -z "$st" ] || [ "${st#Z}" != "$st" ] || fail "process $p left: $(ps -o pid=,stat=,user=,args= -p "$p")"
done
[ ! -e "$T/state/net-$br/supervisor.pid" ] && [ ! -e "$T/state/net-$br/proxy.pid" ] ||
	fail "pid files left"
# Only what up added went: Docker's own chains are still there.
iptables -S | grep -q -- '-N DOCKER-USER' || fail "down removed Docker's DOCKER-USER"
"$cordon" net down | grep -q '^already down' || fail "second down was not a no-op"
if "$cordon" net status >/dev/null 2>&1; then fail "status is clean with nothing up"; fi
echo "ok: no chain, rule, network or process left"

step "a wrong network of the same name: up refuses, down leaves it alone"
"$docker" network create --driver=bridge --subnet="$subnet" \
	--opt com.docker.network.bridge.name="$br" "$net" >/dev/null || fail "cannot create the decoy network"
if "$cordon" net up --allowlist "$T/allow.list" >"$T/up4.txt" 2>&1; then fail "up adopted a wrong network"; fi
grep -q "exists but is wrong: .*not --internal.*inter-container communication is on" "$T/up4.txt" ||
	fail "up did not say what is wrong: $(cat "$T/up4.txt")"
echo "ok: $(grep 'is wrong' "$T/up4.txt")"
if "$cordon" net status >/dev/null 2>"$T/st4.err"; then fail "status is clean with a wrong network"; fi
grep -q "network wrong: not --internal" "$T/st4.err" || fail "status: $(cat "$T/st4.err")"
"$cordon" net down >"$T/down2.txt" 2>&1 || fail "down: $(cat "$T/down2.txt")"
grep -q "left network $net alone" "$T/down2.txt" || fail "down: $(cat "$T/down2.txt")"
"$docker" network inspect "$net" >/dev/null 2>&1 || fail "down removed a network Cordon did not create"
[ -z "$( (iptables -S; ip6tables -S) | grep -e "CORDON-IN-$br" -e "CORDON-FWD-$br")" ] ||
	fail "down left rules behind"
"$docker" network rm "$net" >/dev/null || fail "cannot remove the decoy network"
echo "ok: refused, reported as drift, and left alone by down"
echo "PASS in $(( $(date +%s) - start )) s"
