#!/usr/bin/env bash
# `cordon net reload` against a real cordon-proxy in run mode on loopback
# (no docker): a state directory of its own (config state_dir), a net.json
# naming the allowlist directory, the proxy's control socket where net
# reload looks for it. Checks that reload tells the truth:
#  - a broken allowlist: exit 1 with the proxy's FILE:LINE, and the proxy
#    keeps its policies (asked over the control socket);
#  - an allowlist with inject= and a root-only secrets store (0600): the
#    parent rereads it as root, exit 0 with the generation and counts;
#  - a file saved with umask 077 (0600, root): reloaded, the new policy
#    is there;
#  - no proxy: exit 1.
set -uo pipefail
cordon="$CORDON_BUILD_ROOT/cordon"
proxy="$CORDON_BUILD_ROOT/proxy/cordon-proxy"
tmp=$(mktemp -d /tmp/cordon-reload.XXXXXX)
pid=
: >"$tmp/proxy.log" 2>/dev/null || true
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; [ -f "$tmp/proxy.log" ] && tail -n 20 "$tmp/proxy.log"; exit 1; }
[ "$(id -u)" = 0 ] || { echo "FAIL: needs root (the proxy's parent)"; exit 1; }

state="$tmp/net-cdrl0"
mkdir -p "$state" "$tmp/lists"
chmod 700 "$tmp"
printf '{"state_dir":"%s","egress_bridge":"cdrl0","audit_log":"%s/audit.log"}\n' \
	"$tmp" "$tmp" >"$tmp/config.json"
export CORDON_CONFIG="$tmp/config.json"
printf 'example.com\n' >"$tmp/lists/pol-a.list"
printf 'github-token=Bearer cordon-test-secret-value\n' >"$tmp/secrets"
chmod 600 "$tmp/secrets"
printf '{"proxy_argv":["%s","--listen","127.0.0.1:0","--allowlist","%s","--access-log","%s"]}\n' \
	"$proxy" "$tmp/lists" "$tmp/access.log" >"$state/net.json"
"$proxy" --listen 127.0.0.1:0 --allowlist "$tmp/lists" \
	--access-log "$tmp/access.log" \
	--control "$state/control.sock" --secrets "$tmp/secrets" \
	--user nobody >"$tmp/proxy.log" 2>&1 &
pid=$!
for _ in $(seq 100); do grep -q "listening on" "$tmp/proxy.log" && break; sleep 0.1; done
grep -q "listening on" "$tmp/proxy.log" || fail "the proxy did not start"
policies() { python3 -c 'import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.sendall(b"{\"op\":\"policies\"}\n"); print(s.makefile().readline().strip())' "$state/control.sock"; }

# 1. Broken: refused with FILE:LINE, old set kept.
printf 'example.com\n*.com\n' >"$tmp/lists/pol-b.list"
out=$("$cordon" net reload 2>"$tmp/err"); rc=$?
[ $rc = 1 ] || fail "broken allowlist: exit $rc, want 1 ($out)"
grep -q "$tmp/lists/pol-b.list:2: " "$tmp/err" || fail "no FILE:LINE diagnostic: $(cat "$tmp/err")"
grep -q "not reloaded, the proxy keeps the allowlist it has" "$tmp/err" || fail "$(cat "$tmp/err")"
[ "$(policies)" = '{"ok":true,"policies":["pol-a"]}' ] || fail "policies after a broken reload: $(policies)"
echo "ok: broken: $(head -c 200 "$tmp/err")"

# 2. inject= with the root-only store: the parent reads it as root.
printf 'api.example.com:443 inspect inject=Authorization:github-token\n' >"$tmp/lists/pol-b.list"
out=$("$cordon" net reload 2>"$tmp/err"); rc=$?
[ $rc = 0 ] || fail "reload with a root-only secrets store: exit $rc: $(cat "$tmp/err")"
case $out in
"reloaded $tmp/lists: generation 2; policies: pol-a pol-b (2 entries, 1 inspected, 0 raw, 1 secrets)") ;;
*) fail "output: $out" ;;
esac
[ "$(policies)" = '{"ok":true,"policies":["pol-a","pol-b"]}' ] || fail "policies: $(policies)"
! grep -q "cordon-test-secret-value" "$tmp/proxy.log" "$tmp/err" || fail "the secret's value was printed"
echo "ok: $out"

# 3. Saved with umask 077 (root, 0600): reloaded, the policy is in force.
(umask 077; printf 'example.org\n' >"$tmp/lists/pol-c.list")
out=$("$cordon" net reload 2>"$tmp/err"); rc=$?
[ $rc = 0 ] || fail "reload of a 0600 file: exit $rc: $(cat "$tmp/err")"
[ "$(policies)" = '{"ok":true,"policies":["pol-a","pol-b","pol-c"]}' ] || fail "policies: $(policies)"
echo "ok: $out"

# 4. --replay: the access log (and its rotated file) replayed under the
#    edited directory first, then the reload.
printf '%s\n' '{"time":"2026-12-04T09:00:00.000Z","host":"example.org","port":443,"decision":"deny","reason":"not-on-policy pol-a","policy":"pol-a"}' >"$tmp/access.log.1"
printf '%s\n' '{"time":"2026-12-04T10:00:00.000Z","host":"example.com","port":443,"decision":"allow","reason":"allowed-by-entry","policy":"pol-a"}' \
	'{"time":"2026-12-04T10:00:01.000Z","host":"example.org","port":443,"decision":"deny","reason":"not-on-policy pol-a","policy":"pol-a"}' \
	'not json' >>"$tmp/access.log"
printf 'example.org\n' >"$tmp/lists/pol-a.list"
out=$("$cordon" net reload --replay 2>"$tmp/err"); rc=$?
[ $rc = 0 ] || fail "reload --replay: exit $rc: $(cat "$tmp/err")"
head -n1 <<<"$out" | grep -q "^replay of $tmp/access.log under $tmp/lists: 3 request(s), 3 change(s): 2 to allowed, 1 to denied; 1 malformed line(s)$" ||
	fail "reload --replay summary: $out"
grep -qx "  pol-a example.org:443 denied->allowed x2 ($tmp/lists/pol-a.list:1: example.org)" <<<"$out" || fail "reload --replay: $out"
grep -qx "  pol-a example.com:443 allowed->denied x1 (no-match)" <<<"$out" || fail "reload --replay: $out"
tail -n1 <<<"$out" | grep -q "^reloaded $tmp/lists: generation 4" || fail "reload --replay did not reload: $out"
echo "ok: $(head -n1 <<<"$out")"
printf 'example.org\n*.com\n' >"$tmp/lists/pol-a.list"
out=$("$cordon" net reload --replay 2>"$tmp/err"); rc=$?
[ $rc = 1 ] || fail "reload --replay of a broken list: exit $rc"
grep -q "pol-a.list:2: " "$tmp/err" && grep -q "not reloaded" "$tmp/err" || fail "$(cat "$tmp/err")"
[ -z "$out" ] || fail "reload --replay of a broken list printed: $out"
printf 'example.org\n' >"$tmp/lists/pol-a.list"

# 5. No proxy running: said, exit 1.
kill "$pid"; wait "$pid" 2>/dev/null; pid=
out=$("$cordon" net reload 2>"$tmp/err"); rc=$?
[ $rc = 1 ] || fail "no proxy: exit $rc"
grep -q "not reloaded" "$tmp/err" || fail "$(cat "$tmp/err")"
echo "cli_reload: ok"
