#!/usr/bin/env bash
# End-to-end test of `cordon net up|down|status` and proxy mode, with real
# dockerd, iptables, cordon-proxy and gVisor sandboxes. Uses its own network,
# bridge, subnet and state dir (a test config), so it never touches a real
# `cordon net up`. Checks that the network is not --internal (sandboxes
# have their default route) yet Docker's own FORWARD rules for it never
# accept first, and that the nat redirect is in place. From inside
# proxy-mode sandboxes it proves: through the proxy an allowlisted name
# reaches an upstream on the host and another name gets 403; every other
# TCP connection (the gateway's ports 1-1024, the test's own services on
# the gateway, on 0.0.0.0, on a second host address and in a namespace
# routed through the host, another sandbox, 169.254.169.254, a TEST-NET
# address) lands on the proxy's transparent listener, never on the real
# service (whose marker never arrives, and whose log never shows a
# sandbox); UDP to anything but port 53 and ICMP get nothing; DNS to any
# server address is answered by the proxy's resolver (an A record for the
# allowed name, NXDOMAIN for the others, never forwarded to the upstream
# stub), and the system resolver is the proxy's through the mounted
# resolv.conf. Then idempotency (filter and nat), drift of either table,
# the supervisor's restart, the refusal to go down under a running
# sandbox, the recreation of an older up's --internal network, and that
# `net down` leaves nothing. Fails (never skips) when something is
# missing, unless CORDON_E2E=skip.
# CORDON_E2E_EGRESS_RUNTIME (default cordon-egress) and
# CORDON_E2E_DEBUG_EGRESS_RUNTIME (default cordon-debug-egress) name the
# runtimes to prove; CORDON_E2E_STACK=netstack|host makes the test fail
# unless that runtime really runs that network stack (runsc's own netstack,
# --network=sandbox, or the host kernel's, --network=host): the suites run
# once per stack (tests/netsetup/meson.build).
. "$CORDON_SOURCE_ROOT/tests/lib/e2e.sh" || exit 1
step() { echo "--- $(date +%T) $*"; }

proxy="$CORDON_BUILD_ROOT/proxy/cordon-proxy"
here="$CORDON_SOURCE_ROOT/tests/netsetup"
[ "$(id -u)" = 0 ] || missing "must run as root (iptables, docker networks)"
for t in iptables ip6tables ip nsenter python3; do
	command -v "$t" >/dev/null || missing "no $t"
done
e2e_need_docker /usr/bin/docker
. "$CORDON_SOURCE_ROOT/tests/netsetup/teardown.sh"
rt=${CORDON_E2E_EGRESS_RUNTIME:-cordon-egress}
drt=${CORDON_E2E_DEBUG_EGRESS_RUNTIME:-cordon-debug-egress}
want_stack=${CORDON_E2E_STACK:-}
. "$here/stack.sh"
check_stack
e2e_need_image
img=$id
[ -x "$proxy" ] || missing "no cordon-proxy at $proxy"
"$proxy" --check --listen 127.0.0.1:0 \
	--allowlist "$CORDON_SOURCE_ROOT/examples/allowlists/default.list" >/dev/null 2>&1 ||
	fail "cordon-proxy --check fails on the shipped default allowlist"

net='cordon-e2e-ns'
br=cordonE2E0
subnet=10.213.250.0/24
gw=10.213.250.1
tport=3129
dummy=cordonE2Ev
dummy_addr=10.213.251.1
# A namespace routed through the host: what a sandbox reaches only if the
# host forwards for it.
farns=cordonE2Efar
farh=cordonE2Ef
farn=cordonE2Eg
far_host=10.213.252.1
far=10.213.252.2
marker_ip=10.99.99.99
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
	"$docker" rm -f nstest-a-host nstest-a-sealed nstest-b nstest-nsfilter nstest-old >/dev/null 2>&1
	net_teardown
	"$docker" network rm "$net" >/dev/null 2>&1
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	ip link del "$dummy" 2>/dev/null
	ip link del "$farh" 2>/dev/null
	ip netns del "$farns" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
if "$docker" network inspect "$net" >/dev/null 2>&1 || ip link show "$br" >/dev/null 2>&1 ||
	ip link show "$farh" >/dev/null 2>&1 || ip netns list | grep -qw "$farns"; then
	fail "$net / $br / $farh / $farns exist already (a previous run?): remove them first"
fi
start=$(date +%s)

step "host services: stub DNS on 127.0.0.1, upstream on 127.0.0.2, a listener on 0.0.0.0"
python3 "$here/hostsvc.py" --out "$T/svc1.json" --log "$T/svc1.log" --dns 127.0.0.1 \
	--name allowed.example.com=127.0.0.2 --name denied.example.com=127.0.0.2 \
	--http 127.0.0.2 --tcp 0.0.0.0 &
pids+=($!)
for _ in $(seq 300); do [ -s "$T/svc1.json" ] && break; sleep 0.1; done
[ -s "$T/svc1.json" ] || fail "host services did not start"
# jget FILE EXPR...: one value per EXPR (d is the JSON), one python start.
jget() { python3 -I -c 'import json,sys; d=json.load(open(sys.argv[1])); print(" ".join(str(eval(e, {}, {"d": d})) for e in sys.argv[2:]))' "$@"; }
read -r dns_port http_port any_port < <(jget "$T/svc1.json" 'd["dns"]' 'd["http"]' 'd["tcp"]["0.0.0.0"]')
printf '# e2e allowlist\nallowed.example.com:%s\n' "$http_port" >"$T/allow.list"

step "cordon net status before up: not set up, exit 3, one line"
rc=0; "$cordon" net status >"$T/st0.json" 2>"$T/st0.err" || rc=$?
[ "$rc" = 3 ] || fail "status before up exited $rc, not 3: $(cat "$T/st0.err")"
[ "$(wc -l <"$T/st0.err")" = 1 ] && grep -q "not set up.*run 'cordon net up'" "$T/st0.err" ||
	fail "status before up did not say 'not set up' in one line: $(cat "$T/st0.err")"
[ "$(jget "$T/st0.json" 'd["set_up"]' 'd["ok"]')" = "False False" ] || fail "status JSON: $(cat "$T/st0.json")"
echo "ok: $(cat "$T/st0.err")"

# nothing_left WHAT: no trace of an up on this bridge: network, chains of
# either family (any table), proxy or supervisor, state dir.
nothing_left() {
	local left p
	! "$docker" network inspect "$net" >/dev/null 2>&1 || fail "$1: network $net left"
	! ip link show "$br" >/dev/null 2>&1 || fail "$1: bridge $br left"
	left=$( (iptables-save; ip6tables-save) | grep -e "CORDON-[A-Z]*-$br")
	[ -z "$left" ] || fail "$1: firewall left: $left"
	for p in $(pgrep -x cordon-netsuper; pgrep -x cordon-proxy); do
		if tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q -- "$T/"; then
			fail "$1: process left: $(ps -o pid=,comm=,args= -p "$p")"
		fi
	done
	[ ! -e "$T/state/net-$br" ] || fail "$1: state left: $(ls -A "$T/state/net-$br")"
}

step "net up refuses before it creates anything: an allowlist typo, a reserved --proxy-arg"
printf '# e2e allowlist with a typo\nallowed.example.com:%s\nbad.example.com:99999\n' "$http_port" >"$T/typo.list"
rc=0; "$cordon" net up --allowlist "$T/typo.list" >"$T/upt.txt" 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "up with a typo exited $rc: $(cat "$T/upt.txt")"
nothing_left "up with a typo"
grep -q "$T/typo.list:3: port 99999 is out of range.*nothing changed" "$T/upt.txt" ||
	fail "up with a typo did not name FILE:LINE: $(cat "$T/upt.txt")"
echo "ok: $(grep typo.list:3 "$T/upt.txt")"
rc=0; "$cordon" net up --allowlist "$T/allow.list" --proxy-arg --help >"$T/uph.txt" 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "up --proxy-arg --help exited $rc: $(cat "$T/uph.txt")"
grep -q "^cordon net up: --proxy-arg '--help': not for a running proxy" "$T/uph.txt" &&
	! grep -q '^usage: cordon-proxy' "$T/uph.txt" || fail "up --proxy-arg --help: $(cat "$T/uph.txt")"
nothing_left "up --proxy-arg --help"
echo "ok: $(cat "$T/uph.txt")"

step "a first net up that fails after creating things undoes them: the proxy's port is taken"
# Bound on the gateway's address before the bridge has it (IP_FREEBIND):
# the firewall, the network and the supervisor are up when the proxy
# finds its port taken.
python3 -I -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_IP, 15, 1)
s.bind((sys.argv[1], 3128)); s.listen(1); open(sys.argv[2], "w").write("up")
time.sleep(600)' "$gw" "$T/squat.ready" &
squat=$!
pids+=("$squat")
for _ in $(seq 100); do [ -s "$T/squat.ready" ] && break; sleep 0.1; done
[ -s "$T/squat.ready" ] || fail "cannot take $gw:3128"
rc=0; "$cordon" net up --allowlist "$T/allow.list" >"$T/upp.txt" 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "up with the port taken exited $rc: $(cat "$T/upp.txt")"
grep -q "created network $net" "$T/upp.txt" && grep -q "started proxy supervisor" "$T/upp.txt" ||
	fail "up did not get as far as the proxy: $(cat "$T/upp.txt")"
nothing_left "up with the port taken"
grep -q "the proxy is not listening on $gw:3128.*Address already in use.*undone: nothing of it is left" "$T/upp.txt" ||
	fail "up with the port taken did not say why, or that it undid it: $(cat "$T/upp.txt")"
kill "$squat"; wait "$squat" 2>/dev/null
echo "ok: $(grep 'cordon net up:' "$T/upp.txt")"

step "cordon net up"
iptables -S >"$T/ipt0.txt"; iptables -t nat -S >"$T/nat0.txt"; ip6tables -S >"$T/ip6t0.txt"
"$cordon" net up --allowlist "$T/allow.list" \
	--proxy-arg=--resolver=127.0.0.1:"$dns_port" \
	--proxy-arg=--allow-address=127.0.0.2 >"$T/up1.txt" 2>&1 ||
	fail "net up: $(cat "$T/up1.txt")"
cat "$T/up1.txt"
iptables -S >"$T/ipt1.txt"; ip6tables -S >"$T/ip6t1.txt"; iptables -t nat -S >"$T/nat1.txt"
"$cordon" net up --allowlist "$T/allow.list" \
	--proxy-arg=--resolver=127.0.0.1:"$dns_port" \
	--proxy-arg=--allow-address=127.0.0.2 >"$T/up2.txt" 2>&1 ||
	fail "second net up: $(cat "$T/up2.txt")"
grep -q '^already up' "$T/up2.txt" || fail "second up changed something: $(cat "$T/up2.txt")"
iptables -S | diff "$T/ipt1.txt" - >/dev/null || fail "second up changed iptables"
ip6tables -S | diff "$T/ip6t1.txt" - >/dev/null || fail "second up changed ip6tables"
iptables -t nat -S | diff "$T/nat1.txt" - >/dev/null || fail "second up changed the nat table"
echo "ok: second up: $(cat "$T/up2.txt"), filter, nat and ip6tables rules unchanged"
"$cordon" net status >"$T/status1.json" 2>&1 || fail "net status after up: $(cat "$T/status1.json")"
echo "ok: status is clean"
iptables -S | grep -- "$br"
iptables -t nat -S | grep -- "$br"

step "the network has a default route to the gateway, and Docker's rules for it never accept first"
"$docker" network inspect "$net" >"$T/net.json" || fail "cannot inspect $net"
read -r internal masq icc < <(jget "$T/net.json" 'd[0]["Internal"]' \
	'd[0]["Options"].get("com.docker.network.bridge.enable_ip_masquerade")' \
	'd[0]["Options"].get("com.docker.network.bridge.enable_icc")')
[ "$internal/$masq/$icc" = False/false/false ] ||
	fail "network $net: Internal $internal, enable_ip_masquerade $masq, enable_icc $icc"
[ "$(cat /proc/sys/net/ipv4/ip_forward)" = 1 ] || fail "ip_forward is off: the FORWARD checks below would prove nothing"
# FORWARD: Docker's own rules for a network that is not internal include
# ACCEPTs for the bridge; ours (drop everything from and to it) come first,
# and only jumps to DOCKER-USER (where ours are first too) or Docker's
# isolation chains (drops and returns) may precede them.
iptables -S FORWARD >"$T/fwd.txt"
iptables -S DOCKER-USER >"$T/du.txt"
python3 -I - "$br" "$T/fwd.txt" "$T/du.txt" <<'PY' || fail "Docker's rules could accept before ours: $(cat "$T/fwd.txt" "$T/du.txt")"
import sys
br, fwd, du = sys.argv[1], open(sys.argv[2]).read().split("\n"), open(sys.argv[3]).read().split("\n")
ours = {"-A FORWARD -i %s -j CORDON-FWD-%s" % (br, br), "-A FORWARD -o %s -j CORDON-FWD-%s" % (br, br)}
rules = [l for l in fwd if l.startswith("-A FORWARD")]
pos = [i for i, l in enumerate(rules) if l in ours]
assert len(pos) == 2, "our FORWARD jumps: %r" % pos
docker_accepts = [i for i, l in enumerate(rules) if br in l and l.endswith("-j ACCEPT")]
assert docker_accepts, "Docker added no ACCEPT for %s (is the network internal?)" % br
assert max(pos) < min(docker_accepts), "an ACCEPT for %s comes before our jumps" % br
for l in rules[:max(pos)]:
    assert l in ours or l.endswith(("-j DOCKER-USER", "-j DOCKER-ISOLATION-STAGE-1")), "before ours: " + l
du_rules = [l for l in du if l.startswith("-A DOCKER-USER")]
assert set(du_rules[:2]) == {"-A DOCKER-USER -i %s -j CORDON-FWD-%s" % (br, br),
                              "-A DOCKER-USER -o %s -j CORDON-FWD-%s" % (br, br)}, du_rules
print("ok: FORWARD: our jumps at %s, Docker's ACCEPTs for %s at %s; DOCKER-USER starts with ours" %
      (pos, br, docker_accepts))
PY
first_pre=$(iptables -t nat -S PREROUTING | sed -n 2p)
[ "$first_pre" = "-A PREROUTING -i $br -j CORDON-NAT-$br" ] || fail "nat PREROUTING starts with: $first_pre"
iptables -t nat -S "CORDON-NAT-$br" | tail -n +2 >"$T/natchain.txt"
printf '%s\n' "-A CORDON-NAT-$br -d $gw/32 -p tcp -m tcp --dport 3128 -j RETURN" \
	"-A CORDON-NAT-$br -p udp -m udp --dport 53 -j REDIRECT --to-ports 53" \
	"-A CORDON-NAT-$br -p tcp -m tcp --dport 53 -j REDIRECT --to-ports 53" \
	"-A CORDON-NAT-$br -p tcp -j REDIRECT --to-ports $tport" | diff - "$T/natchain.txt" ||
	fail "the nat chain is not the planned one"
echo "ok: nat PREROUTING starts with our jump; CORDON-NAT-$br holds the four planned rules"
rc="$T/state/net-$br/resolv.conf"
[ "$(cat "$rc")" = "$(printf 'nameserver %s\noptions edns0 ndots:1' "$gw")" ] || fail "$rc: $(cat "$rc")"
[ "$(stat -c %a "$rc")" = 644 ] || fail "$rc has mode $(stat -c %a "$rc")"
read -r tl dl < <(jget "$T/status1.json" 'd["proxy"]["transparent_listening"]' 'd["proxy"]["dns_listening"]')
[ "$tl/$dl" = True/True ] || fail "status: transparent_listening $tl, dns_listening $dl"
echo "ok: $rc (0644) names $gw; status: the proxy listens on $gw:3128, :$tport and :53 (UDP and TCP)"

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
import socket, urllib.request, urllib.error
for name in ("allowed.example.com", "denied.example.com"):
    try:
        r = urllib.request.urlopen("http://%s:$http_port/" % name, timeout=10)
        print(name, r.status, r.read().decode().strip())
    except urllib.error.HTTPError as e:
        print(name, e.code, e.headers.get("X-Cordon-Error"))
    except Exception as e:
        print(name, "error", e)
print("resolv.conf", repr(open("/etc/resolv.conf").read()))
for name in ("allowed.example.com", "denied.example.com"):
    try:
        print("getaddrinfo", name, "resolved", socket.getaddrinfo(name, 80, socket.AF_INET)[0][4][0])
    except OSError as e:
        print("getaddrinfo", name, "failed", e)
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
# The runner mounts net up's resolv.conf; glibc asks the proxy's resolver.
echo "$out" | grep -qxF "resolv.conf 'nameserver $gw\noptions edns0 ndots:1\n'" ||
	fail "the run's /etc/resolv.conf is not net up's: $out"
echo "$out" | grep -q "^getaddrinfo allowed.example.com resolved " ||
	fail "the allowed name did not resolve in a cold run: $out"
echo "$out" | grep -q "^getaddrinfo denied.example.com failed " ||
	fail "a denied name resolved in a cold run: $out"
echo "ok: cordon run --net proxy: /etc/resolv.conf names $gw; the allowed name resolves, the other does not"

mapfile -t runargs < <("$cordon" net run-args) || true
[ "${#runargs[@]}" -gt 4 ] || fail "net run-args gave nothing"
echo "run args: ${runargs[*]}"
hard=(--cap-drop=ALL --read-only --user 65534:65534 --security-opt=no-new-privileges
	--label cordon=1 --label cordon.test=netsetup)

step "another sandbox on the network: TCP 8080 and UDP 8081, both answering with a marker"
"$docker" run -d --name nstest-b "${hard[@]}" "${runargs[@]}" "$img" python3 -I -c '
import socket, threading
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(("0.0.0.0", 8081))
def echo():
    while True:
        d, p = u.recvfrom(2048); u.sendto(b"sandbox-b " + d[:64], p)
threading.Thread(target=echo, daemon=True).start()
s = socket.socket(); s.bind(("0.0.0.0", 8080)); s.listen(8)
while True:
    c, _ = s.accept(); c.sendall(b"sandbox-b\n"); c.close()' >/dev/null || fail "cannot start sandbox B"
b_ip=$("$docker" inspect -f "{{(index .NetworkSettings.Networks \"$net\").IPAddress}}" nstest-b)
[ -n "$b_ip" ] || fail "sandbox B has no address"

step "more host services: on the gateway, on a second host address ($dummy_addr) and in a namespace behind the host ($far)"
# A veth pair (no dummy module everywhere): one host address the test owns.
ip link add "$dummy" type veth peer name "${dummy}p" && ip addr add "$dummy_addr/32" dev "$dummy" &&
	ip link set "$dummy" up && ip link set "${dummy}p" up || fail "cannot create the veth pair"
# The namespace: reached from the bridge only if the host forwarded for it
# (it routes its answers back through the host).
ip netns add "$farns" && ip link add "$farh" type veth peer name "$farn" netns "$farns" &&
	ip addr add "$far_host/30" dev "$farh" && ip link set "$farh" up &&
	ip -n "$farns" addr add "$far/30" dev "$farn" && ip -n "$farns" link set "$farn" up &&
	ip -n "$farns" link set lo up && ip -n "$farns" route add default via "$far_host" ||
	fail "cannot create the namespace $farns"
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
# Their DNS servers answer every name with $marker_ip: an answer with it
# came from them, not from the proxy.
python3 "$here/hostsvc.py" --out "$T/svc2.json" --log "$T/svc2.log" --tcp "$gw" --tcp "$dummy_addr" \
	"${v6_listen[@]}" --udp "$gw" --udp "$dummy_addr" --dns "$dummy_addr" --dns-port 53 --wildcard "$marker_ip" &
pids+=($!)
ip netns exec "$farns" python3 "$here/hostsvc.py" --out "$T/svc3.json" --log "$T/svc3.log" \
	--tcp "$far" --udp "$far" --dns "$far" --dns-port 53 --wildcard "$marker_ip" &
pids+=($!)
for _ in $(seq 300); do [ -s "$T/svc2.json" ] && [ -s "$T/svc3.json" ] && break; sleep 0.1; done
[ -s "$T/svc2.json" ] && [ -s "$T/svc3.json" ] || fail "gateway and namespace services did not start"
read -r gw_port dummy_port v6_port gw_udp dummy_udp < <(jget "$T/svc2.json" "d['tcp']['$gw']" \
	"d['tcp']['$dummy_addr']" "d['tcp'].get('::', 22)" "d['udp']['$gw']" "d['udp']['$dummy_addr']")
read -r far_port far_udp < <(jget "$T/svc3.json" "d['tcp']['$far']" "d['udp']['$far']")
# They answer the host, so their silence towards a sandbox means something.
python3 -I - "$gw:$gw_port" "$dummy_addr:$dummy_port" "$far:$far_port" "$any_port" \
	"$gw:$gw_udp" "$far:$far_udp" "$dummy_addr" "$far" "$marker_ip" <<'PY' || fail "a test service does not answer the host"
import socket, struct, sys
def hp(s):
    h, p = s.rsplit(":", 1)
    return h, int(p)
for t in sys.argv[1:4] + ["127.0.0.1:" + sys.argv[4]]:
    c = socket.create_connection(hp(t), timeout=3)
    assert c.recv(64).startswith(b"host-service"), t
    c.close()
for t in sys.argv[5:7]:
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.settimeout(3)
    u.sendto(b"x", hp(t))
    assert u.recv(64).startswith(b"host-service"), t
for server in sys.argv[7:9]:
    q = struct.pack(">HHHHHH", 7, 0x100, 1, 0, 0, 0) + b"\x07allowed\x07example\x03com\x00" + struct.pack(">HH", 1, 1)
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.settimeout(3)
    u.sendto(q, (server, 53))
    assert socket.inet_aton(sys.argv[9]) in u.recv(512), server
print("ok: the test's services answer the host (TCP and UDP markers, DNS answers %s)" % sys.argv[9])
PY
# Those checks came from the host: start the logs afresh for the sandboxes.
: >"$T/svc2.log"; : >"$T/svc3.log"

cat >"$T/cfg.json" <<EOF
{"gateway": "$gw", "proxy_port": 3128,
 "allowed_url": "http://allowed.example.com:$http_port/",
 "denied_url": "http://denied.example.com:$http_port/",
 "gateway_extra_ports": [$any_port, $gw_port, 3128, $tport],
 "other_targets": [["$b_ip", 8080], ["$dummy_addr", $dummy_port], ["$dummy_addr", $any_port],
                   ["$far", $far_port], ["$far", 22],
                   ["169.254.169.254", 80], ["198.51.100.1", 80], ["198.51.100.1", 443]],
 "markers": ["host-service", "sandbox-b"],
 "udp_targets": [["$gw", $gw_udp], ["$gw", 123], ["$dummy_addr", $dummy_udp], ["$far", $far_udp],
                 ["$b_ip", 8081], ["169.254.169.254", 9], ["198.51.100.1", 9]],
 "icmp_targets": ["$gw", "$dummy_addr", "$far", "$b_ip", "198.51.100.1"],
 "dns_servers": [["$gw", "udp"], ["$gw", "tcp"], ["$dummy_addr", "udp"], ["$far", "udp"], ["$far", "tcp"],
                 ["169.254.169.254", "udp"], ["198.51.100.1", "udp"]],
 "allowed_name": "allowed.example.com",
 "denied_names": ["denied.example.com", "x7f3a9c.exfil.example.net"],
 "marker_ip": "$marker_ip",
 "resolv_conf": "nameserver $gw\\noptions edns0 ndots:1\\n",
 "bridge_v6": "$br_v6", "v6_ports": [$v6_port, 3128, 53],
 "names": ["allowed.example.com", "example.com", "nstest-b"],
 "scan_timeout": 1.0, "read_window": 0.5, "scan_batch": 64}
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
	# As the runner does when a run ends: its address goes to the next
	# sandbox, which the proxy must not take for this one.
	ctl "{\"op\":\"unregister\",\"run\":\"$name\"}" | grep -q '"ok":true' ||
		fail "cannot unregister $name"
	python3 "$here/check_probe.py" "$mode" "$T/cfg.json" "$T/$name.out" ||
		fail "probe in $mode sandbox (full output: $(cat "$T/$name.out"))"
}

step "probe from an unsealed proxy-mode sandbox (host firewall only)"
run_probe nstest-a-host host
step "probe from a sealed proxy-mode sandbox (as the runner runs jobs)"
run_probe nstest-a-sealed sealed

step "the real services never saw a sandbox, and the upstream resolver never a denied name"
python3 -I - "$subnet" "$T/svc1.log" "$T/svc2.log" "$T/svc3.log" <<'PY' || fail "see above"
import ipaddress, json, sys
net = ipaddress.ip_network(sys.argv[1])
bad, n = [], 0
for path in sys.argv[2:]:
    try:
        lines = open(path).read().splitlines()
    except FileNotFoundError:
        lines = []
    for l in lines:
        r = json.loads(l)
        n += 1
        if ipaddress.ip_address(r["peer"].rsplit(":", 1)[0]) in net:
            bad.append("%s: %s" % (path.rsplit("/", 1)[1], l))
        # svc1's stub on 127.0.0.1 is the proxy's upstream: only a name a
        # policy allows may ever be asked there.
        if r["svc"] == "dns" and path.endswith("svc1.log") and r.get("name") != "allowed.example.com":
            bad.append("forwarded upstream: %s" % l)
for b in bad:
    print("FAIL:", b)
print("%d service log lines; %d from the sandboxes' subnet or a denied name upstream" % (n, len(bad)))
sys.exit(1 if bad else 0)
PY

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
rc=0; "$cordon" net status >"$T/st2.json" 2>"$T/st2.err" || rc=$?
[ "$rc" = 1 ] || fail "status with the rule missing exited $rc, not 1 (drift): $(cat "$T/st2.err")"
grep -q "rule missing: -A INPUT -i $br -j CORDON-IN-$br" "$T/st2.err" ||
	fail "status did not name the rule: $(cat "$T/st2.err")"
echo "ok: $(cat "$T/st2.err")"
# A proxy-mode run checks the network while its container starts: on this
# drift it is refused with the check's own reason, before any code runs,
# and the container it started is removed.
before=$("$docker" ps -aq --filter "network=$net" | wc -l)
rc=0; echo 'print("RAN")' | "$cordon" run --net proxy >"$T/drun.json" 2>"$T/drun.err" || rc=$?
[ "$rc" != 0 ] || fail "a run went ahead on a drifted network: $(cat "$T/drun.json")"
grep -q "egress network is not ready (ipv4: rule missing: -A INPUT -i $br" "$T/drun.json" "$T/drun.err" ||
	fail "the refused run did not say why: $(cat "$T/drun.json" "$T/drun.err")"
! grep -q RAN "$T/drun.json" || fail "the code ran: $(cat "$T/drun.json")"
after=$("$docker" ps -aq --filter "network=$net" | wc -l)
[ "$after" = "$before" ] || fail "$before containers on $net before the refused run, $after after"
echo "ok: run on the drifted network refused: $(head -c 300 "$T/drun.err")"
"$cordon" net up --allowlist "$T/allow.list" \
	--proxy-arg=--resolver=127.0.0.1:"$dns_port" \
	--proxy-arg=--allow-address=127.0.0.2 >"$T/up3.txt" 2>&1 || fail "repairing up: $(cat "$T/up3.txt")"
grep -q "added -A INPUT -i $br" "$T/up3.txt" || fail "up did not re-add the rule: $(cat "$T/up3.txt")"
"$cordon" net status >/dev/null 2>&1 || fail "status not clean after the repair"
iptables -S | diff "$T/ipt1.txt" - >/dev/null || fail "repaired rules differ from the original ones"
echo "ok: up re-applied it: $(cat "$T/up3.txt")"

step "drift in the nat table: the PREROUTING jump deleted, a redirect of ours changed"
iptables -w -t nat -D PREROUTING -i "$br" -j "CORDON-NAT-$br" || fail "could not delete the nat jump"
iptables -w -t nat -R "CORDON-NAT-$br" 4 -p tcp -j REDIRECT --to-ports 8 || fail "could not replace the nat rule"
if "$cordon" net status >/dev/null 2>"$T/st5.err"; then fail "status did not notice the nat drift"; fi
grep -q "ipv4 nat: rule missing: -A PREROUTING -i $br -j CORDON-NAT-$br" "$T/st5.err" ||
	fail "status did not name the nat jump: $(cat "$T/st5.err")"
grep -q "ipv4 nat: chain CORDON-NAT-$br does not hold exactly Cordon's rules" "$T/st5.err" ||
	fail "status did not name the nat chain: $(cat "$T/st5.err")"
"$cordon" net up --allowlist "$T/allow.list" \
	--proxy-arg=--resolver=127.0.0.1:"$dns_port" \
	--proxy-arg=--allow-address=127.0.0.2 >"$T/up5.txt" 2>&1 || fail "repairing up: $(cat "$T/up5.txt")"
grep -q "ipv4 nat: rewrote chain CORDON-NAT-$br" "$T/up5.txt" &&
	grep -q "ipv4 nat: added -A PREROUTING -i $br -j CORDON-NAT-$br" "$T/up5.txt" ||
	fail "up did not repair the nat table: $(cat "$T/up5.txt")"
"$cordon" net status >/dev/null 2>&1 || fail "status not clean after the nat repair"
iptables -t nat -S | diff "$T/nat1.txt" - >/dev/null || fail "repaired nat rules differ from the original ones"
echo "ok: $(tr '\n' ';' <"$T/st5.err") -> $(tr '\n' ';' <"$T/up5.txt")"

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
# no_rules_left: no chain or jump of ours in either table or family.
no_rules_left() {
	local left
	left=$( (iptables -S; iptables -t nat -S; ip6tables -S) | grep -e "CORDON-IN-$br" \
		-e "CORDON-FWD-$br" -e "CORDON-NAT-$br")
	[ -z "$left" ] || fail "rules left: $left"
}
no_rules_left
# With the network gone, Docker's rules for the bridge went too.
left=$( (iptables -S; iptables -t nat -S; ip6tables -S) | grep -e "$br")
[ -z "$left" ] || fail "rules for $br left: $left"
# Exactly what up added went, and nothing else: the tables are as before it.
iptables -S | diff "$T/ipt0.txt" - || fail "the filter table differs from before net up"
iptables -t nat -S | diff "$T/nat0.txt" - || fail "the nat table differs from before net up"
ip6tables -S | diff "$T/ip6t0.txt" - || fail "ip6tables differs from before net up"
! "$docker" network inspect "$net" >/dev/null 2>&1 || fail "network $net left"
! ip link show "$br" >/dev/null 2>&1 || fail "bridge $br left"
[ ! -e "$T/state/net-$br/resolv.conf" ] || fail "resolv.conf left"
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
rc=0; "$cordon" net status >/dev/null 2>"$T/st9.err" || rc=$?
[ "$rc" = 3 ] || fail "status after down exited $rc, not 3 (not set up): $(cat "$T/st9.err")"
echo "ok: no chain, rule (filter, nat, ip6tables), network, resolv.conf or process left"

step "an older up's --internal network: up recreates it, unless a sandbox is attached"
"$docker" network create --driver=bridge --internal --ipv6=false --subnet="$subnet" --gateway="$gw" \
	--opt com.docker.network.bridge.name="$br" --opt com.docker.network.bridge.enable_icc=false \
	--label cordon.netsetup=1 "$net" >/dev/null || fail "cannot create the old network"
"$docker" run -d --name nstest-old --runtime="$rt" --network="$net" "${hard[@]}" "$img" \
	python3 -I -c 'import time; time.sleep(600)' >/dev/null || fail "cannot start a sandbox on the old network"
if "$cordon" net up --allowlist "$T/allow.list" >"$T/up6.txt" 2>&1; then fail "up recreated a network under a sandbox"; fi
grep -q "network $net is wrong: is --internal (made by an older 'cordon net up'.*Not recreating it while 1 container(s) are attached: stop them" "$T/up6.txt" ||
	fail "up did not say what to do: $(cat "$T/up6.txt")"
echo "ok: $(cat "$T/up6.txt")"
if "$cordon" net status >/dev/null 2>"$T/st6.err"; then fail "status is clean with an internal network"; fi
grep -q "network wrong: is --internal" "$T/st6.err" || fail "status: $(cat "$T/st6.err")"
"$docker" rm -f nstest-old >/dev/null
"$cordon" net up --allowlist "$T/allow.list" \
	--proxy-arg=--resolver=127.0.0.1:"$dns_port" \
	--proxy-arg=--allow-address=127.0.0.2 >"$T/up7.txt" 2>&1 || fail "up after the sandbox left: $(cat "$T/up7.txt")"
grep -q "removed network $net (was wrong: is --internal" "$T/up7.txt" && grep -q "created network $net" "$T/up7.txt" ||
	fail "up did not recreate the network: $(cat "$T/up7.txt")"
"$cordon" net status >/dev/null 2>"$T/st7.err" || fail "status after the recreation: $(cat "$T/st7.err")"
[ "$("$docker" network inspect -f '{{.Internal}}' "$net")" = false ] || fail "the recreated network is internal"
"$cordon" net down >"$T/down3.txt" 2>&1 || fail "down: $(cat "$T/down3.txt")"
no_rules_left
echo "ok: refused with a sandbox attached, recreated without"

step "a wrong network of the same name: up refuses, down leaves it alone"
"$docker" network create --driver=bridge --internal --subnet="$subnet" \
	--opt com.docker.network.bridge.name="$br" "$net" >/dev/null || fail "cannot create the decoy network"
if "$cordon" net up --allowlist "$T/allow.list" >"$T/up4.txt" 2>&1; then fail "up adopted a wrong network"; fi
grep -q "exists but is wrong: is --internal.*inter-container communication is on.*IP masquerade is on.*Cordon did not create it" "$T/up4.txt" ||
	fail "up did not say what is wrong: $(cat "$T/up4.txt")"
echo "ok: $(grep 'is wrong' "$T/up4.txt")"
if "$cordon" net status >/dev/null 2>"$T/st4.err"; then fail "status is clean with a wrong network"; fi
grep -q "network wrong: is --internal" "$T/st4.err" || fail "status: $(cat "$T/st4.err")"
"$cordon" net down >"$T/down2.txt" 2>&1 || fail "down: $(cat "$T/down2.txt")"
grep -q "left network $net alone" "$T/down2.txt" || fail "down: $(cat "$T/down2.txt")"
"$docker" network inspect "$net" >/dev/null 2>&1 || fail "down removed a network Cordon did not create"
no_rules_left
"$docker" network rm "$net" >/dev/null || fail "cannot remove the decoy network"
echo "ok: refused, reported as drift, and left alone by down"
echo "PASS in $(( $(date +%s) - start )) s"
