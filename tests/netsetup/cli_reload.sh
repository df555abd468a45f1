#!/usr/bin/env bash
# `cordon net reload` without docker: a state directory of its own (config
# state_dir), a net.json naming the allowlist, a stand-in proxy process
# that records SIGHUP, and a stand-in control socket answering "policies".
# Checks: a broken allowlist is refused with FILE:LINE and exit 1 and the
# proxy is not signalled; a good one signals it and prints the policies.
set -uo pipefail
cordon="$CORDON_BUILD_ROOT/cordon"
tmp=$(mktemp -d /tmp/cordon-reload.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

state="$tmp/net-cdrl0"
mkdir -p "$state"
printf '{"state_dir":"%s","egress_bridge":"cdrl0","audit_log":"%s/audit.log"}\n' \
	"$tmp" "$tmp" >"$tmp/config.json"
export CORDON_CONFIG="$tmp/config.json"
printf 'example.com\n*.com\n' >"$tmp/bad.list"
printf '{"proxy_argv":["/x/cordon-proxy","--listen","10.0.0.1:3128","--allowlist","%s","--user","nobody"]}\n' \
	"$tmp/bad.list" >"$state/net.json"

# The stand-in proxy: counts SIGHUPs into a file. Netsetup signals only a
# process whose comm is cordon-proxy: python under that name.
ln -s "$(python3 -c 'import sys; print(sys.executable)')" "$tmp/cordon-proxy"
"$tmp/cordon-proxy" -c '
import signal, sys, time
n = 0
def hup(*a):
    global n
    n += 1
    open(sys.argv[1], "w").write(str(n))
signal.signal(signal.SIGHUP, hup)
while True:
    time.sleep(0.05)
' "$tmp/hups" &
pids+=($!)
echo "${pids[0]}" >"$state/proxy.pid"
# The stand-in control socket.
python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1]); s.listen(4)
while True:
    c, _ = s.accept()
    line = c.makefile("rb").readline()
    if line == b"{\"op\":\"policies\"}\n":
        c.sendall(b"{\"ok\":true,\"policies\":[\"default\",\"pypi\"]}\n")
    else:
        c.sendall(b"{\"ok\":false,\"error\":\"unexpected\"}\n")
    c.close()
' "$state/control.sock" &
pids+=($!)
for _ in $(seq 50); do [ -S "$state/control.sock" ] && break; sleep 0.1; done

out=$("$cordon" net reload 2>"$tmp/err"); rc=$?
[ $rc = 1 ] || fail "broken allowlist: exit $rc, want 1"
grep -q "^$tmp/bad.list:2: " "$tmp/err" || fail "no FILE:LINE diagnostic: $(cat "$tmp/err")"
grep -q "the proxy keeps the allowlist it has" "$tmp/err" || fail "$(cat "$tmp/err")"
sleep 0.2
[ ! -e "$tmp/hups" ] || fail "the proxy was signalled despite errors"

printf 'example.com\n' >"$tmp/bad.list"
out=$("$cordon" net reload 2>"$tmp/err"); rc=$?
[ $rc = 0 ] || fail "good allowlist: exit $rc: $(cat "$tmp/err")"
[ "$out" = "reloaded $tmp/bad.list; policies: default pypi" ] || fail "output: $out"
for _ in $(seq 20); do [ -e "$tmp/hups" ] && break; sleep 0.1; done
[ "$(cat "$tmp/hups" 2>/dev/null)" = 1 ] || fail "the proxy got no SIGHUP"

# No proxy running: said, exit 1.
kill "${pids[0]}"; wait "${pids[0]}" 2>/dev/null
out=$("$cordon" net reload 2>"$tmp/err"); rc=$?
[ $rc = 1 ] || fail "no proxy: exit $rc"
grep -q "no proxy is running" "$tmp/err" || fail "$(cat "$tmp/err")"
echo "cli_reload: ok"
