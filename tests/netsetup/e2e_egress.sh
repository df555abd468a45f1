#!/usr/bin/env bash
# End-to-end test of egress per run (issue 14) with real dockerd, iptables,
# cordon-proxy and gVisor sandboxes, through the real runner (`cordon run
# --net proxy --policy NAME`). Uses its own network, bridge, subnet, state
# dir and allowlist directory (a test config), so it never touches a real
# `cordon net up`. Proves:
#  1. two runs at once with different policies each reach their own host,
#     get 403 not-on-policy for the other's, and each run's "egress" lists
#     exactly its own attempts;
#  2. from inside a run: no credential, a made-up token, and the token of
#     another live run (registered from another address) all get 407;
#  1b. an allowed name that does not resolve is reported as "error" (not
#     "denied") and counted in egress_errors, as in the access log;
#  3. after a run has ended its credential is refused;
#  4. a run over its connection limit gets 429 while another run's
#     requests still succeed; and a run that floods the proxy with idle
#     connections that never send a byte (past the proxy's whole
#     connection limit) cannot make another run's fetch fail: it holds
#     egress_source_max_pending of them, the rest are refused at accept
#     and listed in its own report;
#  6. a reload with a broken policy keeps the old set (`cordon net reload`
#     refuses with FILE:LINE, and a SIGHUP straight to the proxy too);
#  7. a removed policy denies a live run with policy-removed, and a new run
#     naming it is refused before it starts;
#  8. a bash job gets the proxy through the prelude; 8b. the prelude, in
#     the sandbox, runs the code after the runner's fixed-length credential
#     line and refuses a line of any other length;
#  9. a proxy-mode session (cordon serve, POST /v1/sessions net proxy)
#     keeps one proxy identity across calls (state kept too), each call's
#     result has the session's egress so far, PATCH changes its policy
#     live (the next call is judged under the new one), and DELETE ends
#     both its container and its registration (its credential is then
#     refused);
# 10. a warm proxy-mode run from the same service's pool (--pool 1) takes
#     the pooled container, registered only while the run has it;
# 11-13. the proxy's network child SIGKILLed during a run and between a
#     session's calls, and its parent SIGKILLed during a run: the run's
#     next fetch gets 200 within seconds, and its result says
#     proxy_restarts;
# and that the control socket is root-only and no token reaches the
# proxy's log. (5, a tenant limited to nets ["none"], is in serve_e2e.)
# Fails (never skips) when something is missing, unless CORDON_E2E=skip.
# CORDON_E2E_EGRESS_RUNTIME (default cordon-egress) and
# CORDON_E2E_DEBUG_EGRESS_RUNTIME (default cordon-debug-egress) name the
# runtimes to prove; CORDON_E2E_STACK=netstack|host makes the test fail
# unless that runtime really runs that network stack (runsc's own netstack,
# --network=sandbox, or the host kernel's, --network=host): the suites run
# once per stack (tests/netsetup/meson.build).
. "$CORDON_SOURCE_ROOT/tests/lib/e2e.sh" || exit 1
step() { echo "--- $(date +%T) $*"; }

here="$CORDON_SOURCE_ROOT/tests/netsetup"
[ "$(id -u)" = 0 ] || missing "must run as root (iptables, docker networks)"
for t in iptables ip python3; do
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

net='cordon-e2e-eg'
br=cordonE2E1
subnet=10.213.249.0/24
T=$(mktemp -d /tmp/cordon-egtest.XXXXXX)
chmod 755 "$T"
export CORDON_CONFIG="$T/cordon.json"
# require_probe off: the probe has its own suites (netsetup_e2e runs
# `cordon probe --net proxy`); this test is about what the proxy lets
# each run do.
cat >"$CORDON_CONFIG" <<EOF
{"egress_network": "$net", "egress_bridge": "$br", "egress_subnet": "$subnet",
 "state_dir": "$T/state", "runtime_egress": "$rt", "runtime_debug_egress": "$drt",
 "audit_log": "$T/audit.log", "image": {"id": "$img"}, "require_probe": false,
 "egress_default_policy": "pol-a", "egress_run_max_conns": 3,
 "egress_source_max_pending": 8}
EOF
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	# cordon serve removes its containers before it exits, and net down
	# refuses while one is still attached: give it up to 30 s.
	for _ in $(seq 300); do
		alive=0
		for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
		[ $alive = 0 ] && break
		sleep 0.1
	done
	net_teardown
	"$docker" network rm "$net" >/dev/null 2>&1
	rm -rf "$T"
}
trap cleanup EXIT
if "$docker" network inspect "$net" >/dev/null 2>&1 || ip link show "$br" >/dev/null 2>&1; then
	fail "$net / $br exist already (a previous run?): remove them first"
fi
start=$(date +%s)
jget() { python3 -I -c 'import json,sys; d=json.load(open(sys.argv[1])); print(" ".join(str(eval(e, {}, {"d": d})) for e in sys.argv[2:]))' "$@"; }

step "host services: stub DNS on 127.0.0.1, one upstream on 127.0.0.2 for a.example.com and b.example.com"
python3 "$here/hostsvc.py" --out "$T/svc.json" --dns 127.0.0.1 \
	--name a.example.com=127.0.0.2 --name b.example.com=127.0.0.2 --http 127.0.0.2 &
pids+=($!)
for _ in $(seq 300); do [ -s "$T/svc.json" ] && break; sleep 0.1; done
[ -s "$T/svc.json" ] || fail "host services did not start"
read -r dns_port port < <(jget "$T/svc.json" 'd["dns"]' 'd["http"]')
mkdir "$T/lists"
# nx.example.com is on pol-a, but the stub DNS does not know it (NXDOMAIN).
printf 'a.example.com:%s\nnx.example.com:%s\n' "$port" "$port" >"$T/lists/pol-a.list"
printf 'b.example.com:%s\n' "$port" >"$T/lists/pol-b.list"
chmod -R a+rX "$T/lists"
up() {
	"$cordon" net up --allowlist "$T/lists" \
		--proxy-arg=--resolver=127.0.0.1:"$dns_port" \
		--proxy-arg=--allow-address=127.0.0.2 \
		--proxy-arg=--max-connections=64 >"$T/up.txt" 2>&1 ||
		fail "net up: $(cat "$T/up.txt")"
}
step "cordon net up with an allowlist directory (policies pol-a, pol-b)"
up
sock="$T/state/net-$br/control.sock"
plog="$T/state/net-$br/proxy.log"
# The access log, a file of its own (net status names it).
alog="$T/state/net-$br/access.log"
"$cordon" net status >"$T/status.txt" 2>&1 || true
grep -qF "\"access_log\":\"$alog\"" "$T/status.txt" ||
	fail "net status does not name the access log $alog: $(cat "$T/status.txt")"
[ -S "$sock" ] || fail "no control socket at $sock: $(cat "$T/up.txt")"
[ "$(stat -c '%a %U' "$sock")" = "600 root" ] || fail "control socket is $(stat -c '%a %U' "$sock"), not 600 root"
echo "ok: control socket $(stat -c '%a %U' "$sock")"
# ctl LINE: one request over the control socket, the answer on stdout.
ctl() { python3 -I -c 'import socket,sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(sys.argv[2].encode() + b"\n")
print(s.makefile().readline().strip())' "$sock" "$1"; }
ctl '{"op":"policies"}' | grep -q '"policies":\["pol-a","pol-b"\]' ||
	fail "the proxy's policies: $(ctl '{"op":"policies"}')"

# A job that fetches a list of hosts through the proxy (as any urllib
# client does, from HTTP_PROXY) after sleeping, and prints status and
# X-Cordon-Error for each.
fetch_job() {  # SLEEP HOST...
	local s=$1; shift
	cat <<PY
import time, urllib.request, urllib.error
time.sleep($s)
for h in "$*".split():
    try:
        r = urllib.request.urlopen("http://%s:$port/" % h, timeout=10)
        print(h, r.status, r.read().decode().split()[0])
    except urllib.error.HTTPError as e:
        print(h, e.code, e.headers.get("X-Cordon-Error"))
    except Exception as e:
        print(h, "error", repr(e))
PY
}

step "1. two runs at once, policies pol-a and pol-b"
fetch_job 2 a.example.com b.example.com >"$T/a.py"
fetch_job 2 b.example.com a.example.com >"$T/b.py"
"$cordon" run --net proxy --policy pol-a <"$T/a.py" >"$T/a.json" 2>"$T/a.err" &
ra=$!
"$cordon" run --net proxy --policy pol-b <"$T/b.py" >"$T/b.json" 2>"$T/b.err" &
rb=$!
# A cold proxy-mode run goes over the Engine API: while it lives, it has
# no `docker run` child (the CLI path has one for the whole run).
ticks=0 kids=0
while kill -0 "$ra" 2>/dev/null && [ $ticks -lt 40 ]; do
	ticks=$((ticks + 1))
	for c in $(pgrep -P "$ra"); do
		tr '\0' ' ' <"/proc/$c/cmdline" 2>/dev/null |
			grep -Eq '^([^ ]*/)?docker run ' && kids=$((kids + 1))
	done
	sleep 0.1
done
[ $ticks -ge 10 ] || fail "run A lasted only $ticks ticks of 100 ms"
[ $kids = 0 ] || fail "run A had a docker run child on $kids of $ticks ticks: not the API path"
echo "ok: run A over the Engine API (no docker run child in $ticks ticks)"
wait "$ra" || fail "run A: $(cat "$T/a.err" "$T/a.json")"
wait "$rb" || fail "run B: $(cat "$T/b.err" "$T/b.json")"
check_pair() {  # RESULT POLICY OWN OTHER
	local out
	out=$(jget "$1" 'd["stdout"]')
	echo "$out" | grep -qx "$3 200 cordon-upstream-ok" || fail "run $2 did not reach $3: $(cat "$1")"
	echo "$out" | grep -qx "$4 403 not-on-policy $2" || fail "run $2 was not refused $4 with not-on-policy: $(cat "$1")"
	[ "$(jget "$1" 'd["policy"]')" = "$2" ] || fail "result does not name policy $2: $(cat "$1")"
	[ "$(jget "$1" 'len(d["egress"])' \
		'[(e["host"], e["port"], e["decision"], e["status"]) for e in d["egress"]]' \
		'd["egress"][1]["reason"]')" = \
		"2 [('$3', $port, 'allowed', 200), ('$4', $port, 'denied', 403)] not-on-policy $2" ] ||
		fail "run $2's egress is not exactly its own two attempts: $(jget "$1" 'd["egress"]')"
	[ "$(jget "$1" 'd["egress"][0]["bytes_down"] > 0')" = True ] || fail "no bytes counted: $(jget "$1" 'd["egress"]')"
}
check_pair "$T/a.json" pol-a a.example.com b.example.com
check_pair "$T/b.json" pol-b b.example.com a.example.com
ca=$(jget "$T/a.json" 'd["container"]'); cb=$(jget "$T/b.json" 'd["container"]')
grep -q "\"run\":\"$ca\".*\"policy\":\"pol-a\"\|\"policy\":\"pol-a\".*\"run\":\"$ca\"" "$alog" ||
	fail "the access log has no line with run $ca and policy pol-a: $(tail -n5 "$alog")"
! grep -q '"decision":' "$plog" || fail "access-log lines in the proxy's diagnostic log: $(grep -m2 '"decision":' "$plog")"
grep -q "\"egress_allowed\":1" "$T/audit.log" && grep -q "\"egress_denied\":1" "$T/audit.log" ||
	fail "the audit log has no egress counts: $(tail -n2 "$T/audit.log")"
echo "ok: A ($ca) and B ($cb) each reached their own host, got not-on-policy for the other, egress lists exactly their attempts"

step "1b. an allowed name that does not resolve is an error, not a denial"
fetch_job 0 nx.example.com >"$T/nx.py"
"$cordon" run --net proxy --policy pol-a <"$T/nx.py" >"$T/nx.json" 2>"$T/nx.err" ||
	fail "run nx: $(cat "$T/nx.err" "$T/nx.json")"
jget "$T/nx.json" 'd["stdout"]' | grep -qx "nx.example.com 502 dns-nxdomain" ||
	fail "the nx run did not get 502 dns-nxdomain: $(cat "$T/nx.json")"
[ "$(jget "$T/nx.json" '[(e["host"], e["decision"], e["reason"], e["status"]) for e in d["egress"]]' \
	'd["egress_allowed"]' 'd["egress_denied"]' 'd["egress_errors"]')" = \
	"[('nx.example.com', 'error', 'dns-nxdomain', 502)] 0 0 1" ] ||
	fail "the nx run's egress does not report one error: $(cat "$T/nx.json")"
cn=$(jget "$T/nx.json" 'd["container"]')
grep "\"run\":\"$cn\"" "$alog" | grep -q '"decision":"error"' ||
	fail "the access log has no error line for run $cn: $(tail -n3 "$alog")"
grep "\"container\":\"$cn\"" "$T/audit.log" | grep -q '"egress_denied":0,"egress_errors":1' ||
	fail "the audit line of run $cn does not count one error: $(tail -n1 "$T/audit.log")"
echo "ok: nx.example.com reported as error (dns-nxdomain) in the result, the access log and the audit line"

step "2. inside a run: no credential, a made-up token, another live run's token"
other_token=$(python3 -I -c 'import secrets; print(secrets.token_hex(32))')
deadline=$(( $(date +%s%3N) + 120000 ))
ctl "{\"op\":\"register\",\"run\":\"e2e-other\",\"addr\":\"10.213.249.250\",\"policy\":\"pol-a\",\"token\":\"$other_token\",\"deadline_ms\":$deadline}" |
	grep -q '"ok":true' || fail "cannot register the other run"
cat >"$T/auth.py" <<PY
import base64, os, socket
from urllib.parse import urlsplit
u = urlsplit(os.environ["HTTP_PROXY"])
def req(label, auth):
    s = socket.create_connection((u.hostname, u.port), timeout=10)
    h = "GET http://a.example.com:$port/ HTTP/1.1\r\nHost: a.example.com:$port\r\nConnection: close\r\n"
    if auth:
        h += "Proxy-Authorization: Basic %s\r\n" % base64.b64encode(auth.encode()).decode()
    s.sendall((h + "\r\n").encode())
    data = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        data += b
    head = data.split(b"\r\n\r\n")[0].decode().split("\r\n")
    err = [l.split(":", 1)[1].strip() for l in head if l.lower().startswith("x-cordon-error:")]
    print(label, head[0].split()[1], err[0] if err else "-")
req("none", None)
req("madeup", u.username + ":" + "0" * 64)
req("other", "e2e-other:$other_token")
req("own", u.username + ":" + u.password)
print("me", u.username, u.password)
PY
"$cordon" run --net proxy --policy pol-a <"$T/auth.py" >"$T/auth.json" 2>"$T/auth.err" ||
	fail "auth run: $(cat "$T/auth.err" "$T/auth.json")"
out=$(jget "$T/auth.json" 'd["stdout"]')
echo "$out" | grep -v '^me '
echo "$out" | grep -qx "none 407 credential-missing" || fail "no credential: $out"
echo "$out" | grep -qx "madeup 407 credential-unknown" || fail "made-up token: $out"
echo "$out" | grep -qx "other 407 credential-wrong-source" || fail "other run's token: $out"
echo "$out" | grep -qx "own 200 -" || fail "own credential: $out"
read -r _ old_run old_token < <(echo "$out" | grep '^me ')
[ -n "$old_token" ] || fail "the run did not see its credential: $out"
echo "ok: 407 without a credential, with a made-up token and with another run's token"

step "3. after the run ended, its credential is refused"
cat >"$T/old.py" <<PY
import base64, os, socket
from urllib.parse import urlsplit
u = urlsplit(os.environ["HTTP_PROXY"])
s = socket.create_connection((u.hostname, u.port), timeout=10)
a = base64.b64encode(b"$old_run:$old_token").decode()
s.sendall(("CONNECT a.example.com:$port HTTP/1.1\r\nHost: a.example.com:$port\r\nProxy-Authorization: Basic %s\r\n\r\n" % a).encode())
print(s.recv(65536).decode().split("\r\n")[0])
PY
"$cordon" run --net proxy --policy pol-a <"$T/old.py" >"$T/old.json" 2>"$T/old.err" ||
	fail "old-credential run: $(cat "$T/old.err" "$T/old.json")"
jget "$T/old.json" 'd["stdout"]' | grep -q '^HTTP/1.1 407' || fail "an ended run's credential was accepted: $(cat "$T/old.json")"
echo "ok: $(jget "$T/old.json" 'd["stdout"].strip()')"
for t in "$old_token" "$other_token"; do
	! grep -q "$t" "$plog" "$alog" || fail "a token is in the proxy's logs"
done
! grep -q "$old_token" "$T/audit.log" || fail "a token is in the audit log"
echo "ok: no token in the proxy's log or the audit log"

step "4. one run over its connection limit (3), another run unaffected"
cat >"$T/hog.py" <<PY
import base64, os, socket, time
from urllib.parse import urlsplit
u = urlsplit(os.environ["HTTP_PROXY"])
a = base64.b64encode(("%s:%s" % (u.username, u.password)).encode()).decode()
held = []
for i in range(5):
    s = socket.create_connection((u.hostname, u.port), timeout=10)
    s.sendall(("CONNECT a.example.com:$port HTTP/1.1\r\nHost: a.example.com:$port\r\nProxy-Authorization: Basic %s\r\n\r\n" % a).encode())
    head = s.recv(65536).decode().split("\r\n")
    err = [l.split(":", 1)[1].strip() for l in head if l.lower().startswith("x-cordon-error:")]
    print(i, head[0].split()[1], err[0] if err else "-", flush=True)
    held.append(s)
time.sleep(6)
PY
fetch_job 2 b.example.com >"$T/b2.py"
"$cordon" run --net proxy --policy pol-a <"$T/hog.py" >"$T/hog.json" 2>"$T/hog.err" &
rh=$!
sleep 1
"$cordon" run --net proxy --policy pol-b <"$T/b2.py" >"$T/b2.json" 2>"$T/b2.err" || fail "run B2: $(cat "$T/b2.err")"
wait "$rh" || fail "hog run: $(cat "$T/hog.err" "$T/hog.json")"
out=$(jget "$T/hog.json" 'd["stdout"]')
echo "$out"
[ "$(echo "$out" | grep -c ' 200 -$')" = 3 ] || fail "not exactly 3 tunnels allowed: $out"
[ "$(echo "$out" | grep -c ' 429 run-connection-limit$')" = 2 ] || fail "not 2 refused with 429: $out"
jget "$T/b2.json" 'd["stdout"]' | grep -qx "b.example.com 200 cordon-upstream-ok" ||
	fail "the other run was affected: $(cat "$T/b2.json")"
echo "ok: 3 tunnels, 2 x 429 run-connection-limit; the other run got 200 meanwhile"

step "4b. one run floods the proxy with 150 idle connections (its limit is 64), another run's fetches all succeed"
cat >"$T/flood.py" <<PY
import os, socket, time
from urllib.parse import urlsplit
u = urlsplit(os.environ["HTTP_PROXY"])
held, refused, other = [], 0, 0
for i in range(150):
    s = socket.create_connection((u.hostname, u.port), timeout=10)
    held.append(s)
time.sleep(1)
for s in held:
    s.settimeout(0.05)
    try:
        d = s.recv(4096)
        if b" 503 " in d.split(b"\r\n")[0] and b"source-pending-limit" in d:
            refused += 1
        else:
            other += 1
    except socket.timeout:
        pass
print("refused", refused, "other", other, "held", len(held) - refused - other, flush=True)
time.sleep(8)
PY
"$cordon" run --net proxy --policy pol-a <"$T/flood.py" >"$T/flood.json" 2>"$T/flood.err" &
rf=$!
sleep 4
fetch_job 0 b.example.com b.example.com b.example.com b.example.com b.example.com >"$T/b4.py"
"$cordon" run --net proxy --policy pol-b <"$T/b4.py" >"$T/b4.json" 2>"$T/b4.err" || fail "run B4: $(cat "$T/b4.err")"
wait "$rf" || fail "flood run: $(cat "$T/flood.err" "$T/flood.json")"
out=$(jget "$T/flood.json" 'd["stdout"]')
echo "flood run: $out"
[ "$out" = "refused 142 other 0 held 8" ] || fail "the flood was not capped at 8 pending: $out"
[ "$(jget "$T/b4.json" 'd["stdout"]' | grep -cx "b.example.com 200 cordon-upstream-ok")" = 5 ] ||
	fail "the other run's fetches failed during the flood: $(cat "$T/b4.json")"
[ "$(jget "$T/flood.json" '[(e["host"], e["reason"], e["count"]) for e in d["egress"] if e["reason"] == "source-pending-limit"]')" = \
	"[('-', 'source-pending-limit', 142)]" ] ||
	fail "the flood's refusals are not in its own report: $(jget "$T/flood.json" 'd["egress"]')"
echo "ok: 8 idle connections held, 142 refused at accept and in the flooding run's report; the other run's 5 fetches got 200"

step "6. a reload with a broken policy keeps the old set"
printf 'b.example.com:%s\nthis is not an entry\n' "$port" >"$T/lists/pol-b.list"
if "$cordon" net reload >"$T/reload1.txt" 2>&1; then fail "net reload accepted a broken policy: $(cat "$T/reload1.txt")"; fi
grep -q "pol-b.list:2:" "$T/reload1.txt" || fail "net reload did not say FILE:LINE: $(cat "$T/reload1.txt")"
echo "ok: net reload refused: $(grep -m1 'pol-b.list:2:' "$T/reload1.txt")"
# The proxy itself, told to reload the broken set, keeps the old one. (net
# reload's refusal above logged a 'reload failed' too: wait for one more.)
nf=$(grep -c 'reload failed' "$plog" || true)
kill -HUP "$(cat "$T/state/net-$br/proxy.pid")"
for _ in $(seq 50); do [ "$(grep -c 'reload failed' "$plog" || true)" -gt "$nf" ] && break; sleep 0.1; done
[ "$(grep -c 'reload failed' "$plog" || true)" -gt "$nf" ] || fail "the proxy did not report the failed reload: $(tail -n3 "$plog")"
fetch_job 0 b.example.com >"$T/b3.py"
"$cordon" run --net proxy --policy pol-b <"$T/b3.py" >"$T/b3.json" 2>"$T/b3.err" ||
	fail "run B3: $(cat "$T/b3.err"); the proxy's log: $(tail -n8 "$plog"); net status: $("$cordon" net status 2>&1 | tail -n5)"
jget "$T/b3.json" 'd["stdout"]' | grep -qx "b.example.com 200 cordon-upstream-ok" ||
	fail "the old pol-b is gone after a broken reload: $(cat "$T/b3.json")"
echo "ok: after a broken reload pol-b still allows b.example.com"

step "7. a removed policy: a live run is denied with policy-removed, a new run is refused"
printf 'b.example.com:%s\n' "$port" >"$T/lists/pol-b.list"
fetch_job 6 b.example.com >"$T/late.py"
"$cordon" run --net proxy --policy pol-b <"$T/late.py" >"$T/late.json" 2>"$T/late.err" &
rl=$!
for _ in $(seq 100); do
	[ -n "$("$docker" ps -q --filter label=cordon=1 --filter network="$net")" ] && break
	sleep 0.1
done
sleep 2
rm "$T/lists/pol-b.list"
"$cordon" net reload >"$T/reload2.txt" 2>&1 || fail "net reload: $(cat "$T/reload2.txt")"
grep -q pol-b "$T/reload2.txt" && fail "pol-b still listed after the reload: $(cat "$T/reload2.txt")"
wait "$rl" || fail "late run: $(cat "$T/late.err" "$T/late.json")"
jget "$T/late.json" 'd["stdout"]' | grep -qx "b.example.com 403 policy-removed" ||
	fail "the live run was not denied with policy-removed: $(cat "$T/late.json")"
echo "ok: the live run got 403 policy-removed"
if "$cordon" run --net proxy --policy pol-b <"$T/b3.py" >"$T/gone.json" 2>"$T/gone.err"; then
	fail "a run with a removed policy started: $(cat "$T/gone.json")"
fi
grep -q 'unknown egress policy "pol-b" (policies: pol-a)' "$T/gone.err" ||
	fail "the refusal does not name the policies: $(cat "$T/gone.err")"
echo "ok: $(cat "$T/gone.err")"

step "8. a bash job in proxy mode: the prelude execs bash, its children get the proxy"
cat >"$T/sh.sh" <<SH
case "\$HTTP_PROXY" in http://cordon-*@*) echo proxy-set ;; *) echo "no proxy: \$HTTP_PROXY" ;; esac
python3 -I - <<'PY'
$(fetch_job 0 a.example.com)
PY
SH
"$cordon" run --net proxy --policy pol-a --lang bash <"$T/sh.sh" >"$T/sh.json" 2>"$T/sh.err" ||
	fail "bash run: $(cat "$T/sh.err")"
[ "$(jget "$T/sh.json" 'd["lang"]' 'd["stdout"].split()')" = \
	"bash ['proxy-set', 'a.example.com', '200', 'cordon-upstream-ok']" ] ||
	fail "bash in proxy mode: $(cat "$T/sh.json")"
echo "ok: bash got the run's proxy credential and reached a.example.com through it"

step "8b. the prelude in a real sandbox: the writer's fixed-length line passes, a line of any other length is refused before the code runs"
# The job reruns its own prelude (from /proc/self/cmdline) with its own
# credential line, padded to 256 bytes as the runner writes it (egress.h:
# RUNNER_EGRESS_CRED_LEN), unpadded, one byte short and one byte long.
cat >"$T/pre.py" <<'PY'
import os,subprocess,sys
a=open('/proc/self/cmdline','rb').read().split(b'\0')
pre=a[a.index(b'-c')+1].decode()
u=os.environ['HTTP_PROXY'].encode()
code=b"print('ran')\n"+b'#'*300+b'\n'
def go(line):
    r=subprocess.run([sys.executable,'-I','-c',pre,'-'],input=line+code,capture_output=True)
    return '%d:%s:%s'%(r.returncode,r.stdout.strip().decode(),b'no proxy settings' in r.stderr)
print(go(u.ljust(255)+b'\n'),go(u+b'\n'),go(u.ljust(254)+b'\n'),go(u.ljust(256)+b'\n'))
PY
"$cordon" run --net proxy --policy pol-a <"$T/pre.py" >"$T/pre.json" 2>"$T/pre.err" ||
	fail "prelude run: $(cat "$T/pre.err")"
[ "$(jget "$T/pre.json" 'd["stdout"].strip()')" = "0:ran:False 1::True 1::True 1::True" ] ||
	fail "the prelude in the sandbox: $(cat "$T/pre.json")"
echo "ok: 256-byte line ran the code; unpadded, 255 and 257 bytes refused, the code not run"

step "9. a proxy-mode session (cordon serve): one proxy identity across calls, each result has the session's egress so far, the credential ends with the session"
"$cordon" serve --socket "$T/serve.sock" --pool 1 >"$T/serve.log" 2>&1 &
spid=$!
pids+=("$spid")
# sreq OUT CURL-ARGS...: HTTP over the service's socket; prints the status.
sreq() { local o=$1; shift; curl -s -o "$o" -w '%{http_code}' --max-time 120 --unix-socket "$T/serve.sock" "$@"; }
for _ in $(seq 100); do [ "$(sreq "$T/h" http://cordon/v1/health 2>/dev/null)" = 200 ] && break; sleep 0.1; done
[ "$(sreq "$T/h" http://cordon/v1/health)" = 200 ] || fail "cordon serve did not answer: $(cat "$T/serve.log")"
code=$(sreq "$T/s.json" -H 'Content-Type: application/json' -d '{"net":"proxy","policy":"pol-a","idle_timeout_s":120}' http://cordon/v1/sessions)
[ "$code" = 201 ] || fail "proxy-mode session create: HTTP $code: $(cat "$T/s.json") $(tail -n3 "$T/serve.log")"
read -r sid sctr snet spol < <(jget "$T/s.json" 'd["id"]' 'd["container"]' 'd["net"]' 'd["policy"]')
[ "$snet $spol" = "proxy pol-a" ] || fail "session settings: $(cat "$T/s.json")"
[ "$("$docker" inspect -f '{{.HostConfig.Runtime}} {{.HostConfig.NetworkMode}} {{.HostConfig.ReadonlyRootfs}} {{.HostConfig.CapDrop}}' "$sctr")" = "$rt $net true [ALL]" ] ||
	fail "session container: $("$docker" inspect -f '{{.HostConfig.Runtime}} {{.HostConfig.NetworkMode}} {{.HostConfig.ReadonlyRootfs}} {{.HostConfig.CapDrop}}' "$sctr")"
# scall OUT FILE: runs FILE's code in the session.
scall() { python3 -I -c 'import json,sys; print(json.dumps({"code": open(sys.argv[1]).read(), "timeout_s": 30}))' "$2" >"$T/body.json"
	sreq "$1" -H 'Content-Type: application/json' -d @"$T/body.json" "http://cordon/v1/sessions/$sid/runs"; }
cat >"$T/s1.py" <<PY
import os, urllib.request, urllib.error
from urllib.parse import urlsplit
me = urlsplit(os.environ["HTTP_PROXY"])
def get(h):
    try:
        r = urllib.request.urlopen("http://%s:$port/" % h, timeout=10)
        return "%s %d %s" % (h, r.status, r.read().decode().split()[0])
    except urllib.error.HTTPError as e:
        return "%s %d %s" % (h, e.code, e.headers.get("X-Cordon-Error"))
print(get("a.example.com"))
PY
printf 'print(get("b.example.com"))\nprint("me", me.username, me.password)\n' >"$T/s2.py"
code=$(scall "$T/c1.json" "$T/s1.py")
[ "$code" = 200 ] || fail "session call 1: HTTP $code: $(cat "$T/c1.json")"
[ "$(jget "$T/c1.json" 'd["stdout"].strip()' 'd["policy"]' 'len(d["egress"])')" = "a.example.com 200 cordon-upstream-ok pol-a 1" ] ||
	fail "session call 1: $(cat "$T/c1.json")"
code=$(scall "$T/c2.json" "$T/s2.py")
[ "$code" = 200 ] || fail "session call 2: HTTP $code: $(cat "$T/c2.json")"
out=$(jget "$T/c2.json" 'd["stdout"]')
echo "$out" | grep -qx "b.example.com 403 not-on-policy pol-a" || fail "session call 2 (the function from call 1, a host off its policy): $out"
read -r _ srun stoken < <(echo "$out" | grep '^me ')
[ "$srun" = "$sctr" ] || fail "the session's proxy identity is '$srun', not its container $sctr"
[ "$(jget "$T/c2.json" '[(e["host"], e["decision"], e["status"]) for e in d["egress"]]' 'd["egress_allowed"]' 'd["egress_denied"]')" = \
	"[('a.example.com', 'allowed', 200), ('b.example.com', 'denied', 403)] 1 1" ] ||
	fail "call 2's egress is not the session's two attempts so far: $(jget "$T/c2.json" 'd["egress"]')"
[ "$(grep -c "\"run\":\"$sctr\"" "$alog")" -ge 2 ] || fail "the access log does not show both calls under run $sctr: $(tail -n4 "$alog")"
ctl "{\"op\":\"report\",\"run\":\"$sctr\"}" | grep -q '"ok":true' || fail "the session is not registered with the proxy between calls"
echo "ok: session $sid ($sctr): call 1 reached a.example.com, call 2 used call 1's function and got not-on-policy, one run identity, egress so far in each result"
# The session's policy changed live (PATCH): the next call is judged
# under the new one; a name no policy has, and another field, are refused.
# (pol-b went in step 7: pol-c is added for this.)
printf 'b.example.com:%s\n' "$port" >"$T/lists/pol-c.list"
"$cordon" net reload >"$T/reload-c.txt" 2>&1 || fail "net reload with pol-c: $(cat "$T/reload-c.txt")"
code=$(sreq "$T/p.json" -X PATCH -H 'Content-Type: application/json' -d '{"policy":"pol-c"}' "http://cordon/v1/sessions/$sid")
[ "$code" = 200 ] || fail "PATCH the session's policy: HTTP $code: $(cat "$T/p.json") $(tail -n3 "$T/serve.log")"
[ "$(jget "$T/p.json" 'd["policy"]' 'd["was"]' 'd["closed"]')" = "pol-c pol-a []" ] || fail "PATCH answer: $(cat "$T/p.json")"
printf 'print(get("a.example.com"))\nprint(get("b.example.com"))\n' >"$T/s3.py"
code=$(scall "$T/c3.json" "$T/s3.py")
[ "$code" = 200 ] || fail "session call 3: HTTP $code: $(cat "$T/c3.json")"
[ "$(jget "$T/c3.json" 'd["stdout"]')" = "a.example.com 403 not-on-policy pol-c
b.example.com 200 cordon-upstream-ok" ] || fail "session call 3 after the change to pol-c: $(cat "$T/c3.json")"
[ "$(jget "$T/c3.json" 'd["policy"]')" = pol-c ] || fail "call 3's result does not carry pol-c: $(cat "$T/c3.json")"
code=$(sreq "$T/g.json" "http://cordon/v1/sessions/$sid")
[ "$code" = 200 ] && [ "$(jget "$T/g.json" 'd["policy"]')" = pol-c ] || fail "GET session after PATCH: $(cat "$T/g.json")"
code=$(sreq "$T/p2.json" -X PATCH -d '{"policy":"nope"}' "http://cordon/v1/sessions/$sid")
[ "$code" = 400 ] && grep -q 'unknown policy' "$T/p2.json" || fail "PATCH to an unknown policy: HTTP $code: $(cat "$T/p2.json")"
code=$(sreq "$T/p3.json" -X PATCH -d '{"policy":"pol-a","net":"none"}' "http://cordon/v1/sessions/$sid")
[ "$code" = 400 ] || fail "PATCH with another field: HTTP $code: $(cat "$T/p3.json")"
ctl "{\"op\":\"report\",\"run\":\"$sctr\"}" | grep -q '"ok":true' || fail "the session is not registered after the refused PATCHes"
echo "ok: PATCH {\"policy\":\"pol-c\"}: the next call got a.example.com 403 not-on-policy pol-c and b.example.com 200; unknown policy and extra field refused (400)"
# The same through cordon mcp: a later run_code naming another policy in
# a proxy-mode session changes it from that call on.
python3 -I - "$T/s1.py" >"$T/mcp.in" <<'PY'
import json, sys
first = open(sys.argv[1]).read()
msgs = [
    {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "e2e-egress", "version": "1"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "run_code", "arguments": {"code": first, "session": "live", "network": "proxy", "policy": "pol-a", "timeout_s": 60}}},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "run_code", "arguments": {"code": 'print(get("a.example.com"))\nprint(get("b.example.com"))\n', "session": "live", "network": "proxy", "policy": "pol-c", "timeout_s": 60}}},
]
for m in msgs:
    print(json.dumps(m))
PY
"$cordon" mcp <"$T/mcp.in" >"$T/mcp.out" 2>"$T/mcp.err" || fail "cordon mcp: $(cat "$T/mcp.err")"
python3 -I - "$T/mcp.out" <<'PY' || fail "cordon mcp's live policy change: $(cat "$T/mcp.out" "$T/mcp.err")"
import json, sys
res = {}
for line in open(sys.argv[1]):
    m = json.loads(line)
    if m.get("id") in (1, 2):
        res[m["id"]] = m["result"]["structuredContent"]
assert res[1]["stdout"] == "a.example.com 200 cordon-upstream-ok\n", res[1]
assert res[1]["policy"] == "pol-a", res[1]
assert res[2]["stdout"] == "a.example.com 403 not-on-policy pol-c\nb.example.com 200 cordon-upstream-ok\n", res[2]
assert res[2]["policy"] == "pol-c", res[2]
PY
echo "ok: cordon mcp: run_code naming pol-c in a pol-a session: a.example.com 403 not-on-policy pol-c, b.example.com 200"
code=$(sreq "$T/d.json" -X DELETE "http://cordon/v1/sessions/$sid")
[ "$code" = 200 ] || [ "$code" = 204 ] || fail "DELETE session: HTTP $code: $(cat "$T/d.json")"
for _ in $(seq 100); do "$docker" inspect "$sctr" >/dev/null 2>&1 || break; sleep 0.1; done
! "$docker" inspect "$sctr" >/dev/null 2>&1 || fail "the session's container $sctr is still there after DELETE"
ctl "{\"op\":\"report\",\"run\":\"$sctr\"}" | grep -q 'unknown run' || fail "the proxy still knows the ended session: $(ctl "{\"op\":\"report\",\"run\":\"$sctr\"}")"
sed -e "s/$old_run/$srun/; s/$old_token/$stoken/" "$T/old.py" >"$T/sold.py"
"$cordon" run --net proxy --policy pol-a <"$T/sold.py" >"$T/sold.json" 2>"$T/sold.err" ||
	fail "ended-session credential run: $(cat "$T/sold.err" "$T/sold.json")"
jget "$T/sold.json" 'd["stdout"]' | grep -q '^HTTP/1.1 407' || fail "an ended session's credential was accepted: $(cat "$T/sold.json")"
! grep -q "$stoken" "$plog" "$alog" "$T/audit.log" "$T/serve.log" || fail "the session's token is in a log"
echo "ok: DELETE removed $sctr and its registration; its credential then gets $(jget "$T/sold.json" 'd["stdout"].strip()'); no token in the logs"
step "10. a warm proxy-mode run (the same service's --pool 1): the pooled container registers only when a run takes it"
for _ in $(seq 300); do
	sreq "$T/h" http://cordon/v1/health >/dev/null
	[ "$(jget "$T/h" 'd["pool"]["proxy"]')" = 1 ] && break
	sleep 0.1
done
[ "$(jget "$T/h" 'd["pool"]["proxy"]')" = 1 ] || fail "no warm proxy-mode container in 30 s: $(cat "$T/h") $(tail -n5 "$T/serve.log")"
wctr=$("$docker" ps -q --filter label=cordon=1 --filter network="$net" --filter "label=cordon.owner_pid=$spid" | head -1)
[ -n "$wctr" ] || fail "no pooled container on $net"
wname=$("$docker" inspect -f '{{.Name}}' "$wctr"); wname=${wname#/}
ctl "{\"op\":\"report\",\"run\":\"$wname\"}" | grep -q 'unknown run' || fail "an idle pooled container $wname is registered with the proxy"
fetch_job 0 a.example.com b.example.com >"$T/w.py"
python3 -I -c 'import json,sys; print(json.dumps({"code": open(sys.argv[1]).read(), "net": "proxy", "policy": "pol-a", "timeout_s": 60}))' "$T/w.py" >"$T/wbody.json"
code=$(sreq "$T/w.json" -H 'Content-Type: application/json' -d @"$T/wbody.json" http://cordon/v1/runs)
[ "$code" = 200 ] || fail "warm proxy run: HTTP $code: $(cat "$T/w.json")"
[ "$(jget "$T/w.json" 'd["warm"]' 'd["container"]' 'd["policy"]')" = "True $wname pol-a" ] || fail "the proxy-mode run was not the warm one ($wname): $(cat "$T/w.json")"
out=$(jget "$T/w.json" 'd["stdout"]')
echo "$out" | grep -qx "a.example.com 200 cordon-upstream-ok" && echo "$out" | grep -qx "b.example.com 403 not-on-policy pol-a" ||
	fail "warm proxy run: $out"
[ "$(jget "$T/w.json" '[(e["host"], e["decision"]) for e in d["egress"]]')" = "[('a.example.com', 'allowed'), ('b.example.com', 'denied')]" ] ||
	fail "warm proxy run's egress: $(jget "$T/w.json" 'd["egress"]')"
ctl "{\"op\":\"report\",\"run\":\"$wname\"}" | grep -q 'unknown run' || fail "the warm run $wname is still registered after its answer"
echo "ok: warm proxy-mode run in $wname (policy pol-a): a allowed, b not-on-policy, its egress exactly those two; unregistered before and after"

# The proxy's processes: the parent (proxy.pid, the supervisor's child)
# and its network child.
ppid_file="$T/state/net-$br/proxy.pid"
netchild() { local p; p=$(cat "$ppid_file" 2>/dev/null) || return 1
	awk '{ print $1 }' "/proc/$p/task/$p/children" 2>/dev/null; }
# A job that fetches a.example.com once, then again every 0.2 s until one
# works more than 4 s in (the kill comes after the first) or 25 s pass, printing
# the first and that later outcome.
cat >"$T/kill.py" <<PY
import time, urllib.request
def get():
    try:
        r = urllib.request.urlopen("http://a.example.com:$port/", timeout=5)
        return str(r.status)
    except Exception as e:
        return type(e).__name__
print("first", get(), flush=True)
t0 = time.time()
while time.time() - t0 < 25:
    time.sleep(0.2)
    g = get()
    if g == "200" and time.time() - t0 > 4:
        print("later", g, round(time.time() - t0, 1), flush=True)
        break
PY
# kill_during WHO LABEL: runs kill.py, kills WHO (child or parent) after its first fetch,
# checks the later fetch got 200 and the report counts the restart.
kill_during() {
	local who=$1 label=$2 rj victim n0
	n0=$(grep -c '"host":"a.example.com"' "$alog" || true)
	"$cordon" run --net proxy --policy pol-a --timeout 60 <"$T/kill.py" >"$T/k-$label.json" 2>"$T/k-$label.err" &
	rj=$!
	# The kill comes after the run's first fetch reached the proxy (a
	# fixed delay could land before the run was registered, and then
	# nothing it had was lost).
	for _ in $(seq 300); do
		[ "$(grep -c '"host":"a.example.com"' "$alog" || true)" -gt "$n0" ] && break
		sleep 0.1
	done
	[ "$(grep -c '"host":"a.example.com"' "$alog" || true)" -gt "$n0" ] ||
		fail "$label: the run's first fetch never reached the proxy: $(cat "$T/k-$label.err")"
	if [ "$who" = child ]; then victim=$(netchild); else victim=$(cat "$ppid_file"); fi
	[ -n "$victim" ] || fail "$label: no proxy $who to kill"
	kill -9 "$victim"
	wait "$rj" || fail "$label: the run failed: $(cat "$T/k-$label.err" "$T/k-$label.json")"
	out=$(jget "$T/k-$label.json" 'd["stdout"]')
	echo "$out" | grep -qx "first 200" || fail "$label: the first fetch: $out"
	echo "$out" | grep -q "^later 200 " || fail "$label: no fetch worked after the $who was killed: $out"
	[ "$(jget "$T/k-$label.json" 'd.get("proxy_restarts", 0) >= 1')" = True ] ||
		fail "$label: the result does not say the proxy restarted: $(jget "$T/k-$label.json" 'd.get("egress")' 'd.get("proxy_restarts")')"
	echo "ok: $label: killed the proxy's $who $victim; the run's fetches: $(echo "$out" | tr '\n' ' '); proxy_restarts $(jget "$T/k-$label.json" 'd["proxy_restarts"]')"
}

step "11. the proxy's network child is SIGKILLed during a run: the run's next fetch gets 200, its result says the proxy restarted"
kill_during child child-run
grep -q '"reason":"proxy-restarted"' "$alog" || fail "the access log does not say the proxy restarted"

step "12. the proxy's network child is SIGKILLed between a session's calls: the next call's fetch gets 200"
code=$(sreq "$T/s3.json" -H 'Content-Type: application/json' -d '{"net":"proxy","policy":"pol-a","idle_timeout_s":120}' http://cordon/v1/sessions)
[ "$code" = 201 ] || fail "session create: HTTP $code: $(cat "$T/s3.json")"
sid=$(jget "$T/s3.json" 'd["id"]')
code=$(scall "$T/c3.json" "$T/s1.py")
[ "$(jget "$T/c3.json" 'd["stdout"].strip()')" = "a.example.com 200 cordon-upstream-ok" ] || fail "session call before the kill: $(cat "$T/c3.json")"
victim=$(netchild)
kill -9 "$victim"
ok=
for _ in $(seq 20); do
	code=$(scall "$T/c4.json" "$T/s2.py")
	[ "$code" = 200 ] || fail "session call after the kill: HTTP $code: $(cat "$T/c4.json")"
	jget "$T/c4.json" 'd["stdout"]' | grep -q "^a.example.com 200" && { ok=1; break; }
	printf 'print(get("a.example.com"))\n' >"$T/s2.py"
	sleep 0.2
done
[ -n "$ok" ] || fail "the session's fetches fail after the child was killed: $(cat "$T/c4.json")"
[ "$(jget "$T/c4.json" 'd.get("proxy_restarts", 0) >= 1')" = True ] || fail "the session's result does not say the proxy restarted: $(cat "$T/c4.json")"
echo "ok: session $sid: killed the network child $victim; the next call fetched a.example.com with 200, proxy_restarts $(jget "$T/c4.json" 'd["proxy_restarts"]')"
code=$(sreq "$T/d3.json" -X DELETE "http://cordon/v1/sessions/$sid")

step "13. the proxy's parent is SIGKILLed during a run (the supervisor restarts it): the run's next fetch gets 200"
kill_during parent parent-run

# The service's own scheduled probes use this network too: stop it (SIGTERM
# waits for what it started) before the cleanup's `net down`, which
# refuses while a container is attached.
kill -TERM "$spid"
for _ in $(seq 600); do kill -0 "$spid" 2>/dev/null || break; sleep 0.1; done
! kill -0 "$spid" 2>/dev/null || fail "cordon serve did not exit within 60 s of SIGTERM: $(tail -n5 "$T/serve.log")"
wait "$spid" || fail "cordon serve exited non-zero: $(tail -n5 "$T/serve.log")"
# A container the service's scheduled probe left because the runtime was
# slow to stop its sandbox (seen in CI: its removal pending in the daemon
# for about 100 s) is said so in serve's log by name; such a one must then
# go on its own. One nobody reported is a leak.
for c in $("$docker" ps -a --filter network="$net" --format '{{.Names}}'); do
	grep -q "scheduled probe --net [a-z]* said: .*$c" "$T/serve.log" || continue
	# How long it took is the point: a runtime that needs nearly the
	# 180 s (about 100 s was seen in CI) is one to look into.
	left_t0=$(date +%s)
	for _ in $(seq 180); do
		[ -z "$("$docker" ps -aq --filter name="^$c\$")" ] && break
		sleep 1
	done
	[ -z "$("$docker" ps -aq --filter name="^$c\$")" ] ||
		fail "$c, reported by serve's probe as left, is still there 180 s later: $(grep "said: .*$c" "$T/serve.log")"
	echo "note: leftover $c went after $(( $(date +%s) - left_t0 )) s (reported by serve's probe: $(grep -o "said: .*${c}[^;]*" "$T/serve.log" | head -n1))"
done
left=$("$docker" ps -aq --filter network="$net")
if [ -n "$left" ]; then
	# Who made it (the owner pid label: serve's $spid, or a `cordon run`),
	# and what serve said as it stopped.
	fail "containers left on $net: $("$docker" ps -a --filter network="$net" --format '{{.Names}} {{.Status}} created {{.CreatedAt}} owner={{.Label "cordon.owner_pid"}}') (serve was $spid; its last lines: $(tail -n4 "$T/serve.log"); audit: $(grep -h "$("$docker" ps -a --filter network="$net" --format '{{.Names}}' | head -n1)" "$T/audit.log" 2>/dev/null | tail -n2))"
fi
echo "PASS in $(( $(date +%s) - start )) s"
