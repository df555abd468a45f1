#!/usr/bin/env bash
# Replay predicts the reloaded proxy: a real cordon-proxy on loopback
# (standalone, its access log in a file) judges a set of requests under
# one allowlist; the allowlist is edited; `cordon allowlist replay` over
# that log predicts what changes; the proxy reloads (SIGHUP) and judges
# the same requests again. Every request's new verdict must be exactly
# the predicted one, and the edit must change verdicts both ways (so the
# test can fail). One allowed request goes to a real upstream on
# 127.0.0.2 (--allow-address); names resolve through a resolver that is
# not there, so an allowed name ends in dns-error after the allow, which
# replay counts as allowed.
set -euo pipefail
cordon="$CORDON_BUILD_ROOT/cordon"
proxy="$CORDON_BUILD_ROOT/proxy/cordon-proxy"
t=$(mktemp -d /tmp/cordon-replay-proxy.XXXXXX)
pid='' upid=''
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && { wait "$pid" 2>/dev/null || true; }
	[ -n "$upid" ] && kill "$upid" 2>/dev/null && { wait "$upid" 2>/dev/null || true; }
	[ -n "${KEEP:-}" ] || rm -rf "$t"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [ -f "$t/proxy.out" ] && tail -n 20 "$t/proxy.out" >&2; exit 1; }
[ "$(id -u)" = 0 ] || fail "needs root (the proxy's parent)"
chmod 755 "$t"

# A real upstream for the allowed address.
python3 -m http.server --bind 127.0.0.2 0 --directory "$t" >"$t/up.out" 2>&1 &
upid=$!
for _ in $(seq 100); do grep -q "Serving HTTP" "$t/up.out" && break; sleep 0.1; done
up=$(sed -n 's/.*port \([0-9]*\).*/\1/p' "$t/up.out" | head -n1)
[ -n "$up" ] || fail "no upstream: $(cat "$t/up.out")"

printf 'a.example.com\nc.example.org\n127.0.0.2:%s\n!d.example.net\n' "$up" >"$t/pol.list"
"$proxy" --listen 127.0.0.1:0 --allowlist "$t/pol.list" \
	--access-log "$t/access.log" --resolver 127.0.0.1:9 --dns-timeout 1 \
	--allow-address "127.0.0.2:$up" >"$t/proxy.out" 2>&1 &
pid=$!
for _ in $(seq 100); do grep -q "listening on" "$t/proxy.out" && break; sleep 0.1; done
port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$t/proxy.out" | head -n1)
[ -n "$port" ] || fail "the proxy did not start"

targets=(a.example.com b.example.com c.example.org:8443 d.example.net
	"127.0.0.2:$up" 169.254.169.254 e.example.com:22)
ask() {
	for h in "${targets[@]}"; do
		curl -s -o /dev/null --max-time 10 -x "http://127.0.0.1:$port" "http://$h/" || true
		curl -s -o /dev/null --max-time 10 -p -x "http://127.0.0.1:$port" "https://$h/" || true
	done
}
lines() { [ -f "$t/access.log" ] && wc -l <"$t/access.log" || echo 0; }
ask
n1=$(lines)
[ "$n1" -ge $((2 * ${#targets[@]})) ] || fail "access log has $n1 lines after the first round"
head -n "$n1" "$t/access.log" >"$t/before.log"

# The edit: a.example.com out, b.example.com in, c.example.org on 8443,
# d.example.net's deny lifted by an allow, e.example.com on 22.
printf 'c.example.org:80,443,8443\n127.0.0.2:%s\nb.example.com\nd.example.net\ne.example.com:22\n' "$up" >"$t/new.list"
rc=0
"$cordon" allowlist replay --log "$t/before.log" "$t/new.list" >"$t/replay.json" || rc=$?
[ "$rc" = 1 ] || fail "replay: exit $rc, want 1 (changes): $(cat "$t/replay.json")"

cp "$t/new.list" "$t/pol.list"
kill -HUP "$pid"
for _ in $(seq 100); do grep -q "reload" "$t/proxy.out" && break; sleep 0.1; done
grep -qi "reloaded\|generation 2\|allowlist reload" "$t/proxy.out" || fail "no reload line"
sleep 0.3
ask
tail -n +"$((n1 + 1))" "$t/access.log" >"$t/after.log"

python3 - "$t/before.log" "$t/after.log" "$t/replay.json" "$up" <<'PY'
import json, sys
POLICY = ("not-on-policy", "no-match", "port-not-allowed", "denied-by-entry",
          "wildcard-crosses-public-suffix")
def verdict(e):
    """The policy verdict of a log line, or None when not the allowlist's."""
    r = (e.get("reason") or "").split(" ")[0]
    if e["decision"] == "allow":
        return "allowed"
    if e["decision"] == "error" and r.startswith(("dns-", "connect-", "upstream-")):
        return "allowed"
    if e["decision"] == "deny" and r in POLICY:
        return "denied"
    return None
def load(p):
    out = {}
    for l in open(p):
        e = json.loads(l)
        out[(e["method"], e["host"], e["port"])] = verdict(e)
    return out
before, after = load(sys.argv[1]), load(sys.argv[2])
rep = json.load(open(sys.argv[3]))
assert set(before) == set(after), (sorted(before), sorted(after))
changed = {(c["host"], c["port"]): c["to"] for c in rep["changes"]}
flips = {"allowed": 0, "denied": 0}
for k, v in before.items():
    if v is None:
        assert after[k] is None, (k, after[k])
        continue
    want = changed.get((k[1], k[2]), v)
    assert after[k] == want, f"{k}: replay predicted {want}, the proxy said {after[k]}"
    if want != v:
        flips[want] += 1
assert flips["allowed"] >= 4 and flips["denied"] >= 2, flips
# The upstream request was really let through both times.
assert before[("GET", "127.0.0.2", int(sys.argv[4]))] == "allowed"
assert rep["changed"] == sum(flips.values()), (rep["changed"], flips)
print("replay_proxy: %d requests, %d predicted changes (%d to allowed, %d to denied), all as the proxy decided"
      % (len(before), sum(flips.values()), flips["allowed"], flips["denied"]))
PY
