#!/usr/bin/env bash
# `cordon allowlist replay` and `suggest` as a user runs them: a policy directory before and
# after an edit, an access log with noise, and the exit codes of diff
# (0 nothing changes, 1 something does, 2 error), the JSON report's
# counts and groups, --since, stdin, and a broken allowlist refused with
# FILE:LINE.
set -euo pipefail
cordon="$CORDON_BUILD_ROOT/cordon"
t=$(mktemp -d /tmp/cordon-replay.XXXXXX)
trap 'rm -rf "$t"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

mkdir "$t/old" "$t/new" "$t/bad"
printf 'example.com\nold.example.org\n' > "$t/old/default.list"
printf 'example.com\nnew.example.org\n' > "$t/new/default.list"
printf 'example.com\n*.com\n' > "$t/bad/default.list"
now=$(date -u +%Y-%m-%dT%H:%M:%S.000Z)
cat > "$t/access.log" <<LOG
{"time":"2020-01-01T00:00:00.000Z","method":"CONNECT","host":"old.example.org","port":443,"decision":"allow","reason":"allowed-by-entry","policy":"default"}
{"time":"$now","method":"CONNECT","host":"old.example.org","port":443,"decision":"allow","reason":"allowed-by-entry","policy":"default"}
{"time":"$now","method":"CONNECT","host":"example.com","port":443,"decision":"allow","reason":"allowed-by-entry","policy":"default"}
{"time":"$now","method":"CONNECT","host":"new.example.org","port":443,"decision":"deny","reason":"not-on-policy default","policy":"default"}
cordon-netsetup: not a log line
{"time":"$now","method":"CONNECT","host":"169.254.169.254","port":80,"decision":"deny","reason":"address-blocked","policy":"default"}
LOG

# Under the policy that wrote it, nothing changes: exit 0.
rc=0; out=$("$cordon" allowlist replay --log "$t/access.log" "$t/old") || rc=$?
[ "$rc" = 0 ] || fail "replay under the old policy: exit $rc ($out)"
python3 - "$out" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
assert r["replayed"] == 4 and r["changed"] == 0 and r["changes"] == [], r
assert r["malformed"] == 1 and r["malformed_lines"] == [5], r
assert r["skipped"] == {"address-blocked": 1}, r
PY

# Under the edit: two groups change, exit 1.
rc=0; out=$("$cordon" allowlist replay --log "$t/access.log" "$t/new") || rc=$?
[ "$rc" = 1 ] || fail "replay under the new policy: exit $rc ($out)"
python3 - "$out" "$t/new/default.list" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
c = r["changes"]
assert r["changed"] == 3 and len(c) == 2, r
assert c[0]["host"] == "new.example.org" and c[0]["from"] == "denied" \
    and c[0]["to"] == "allowed" and c[0]["count"] == 1, c
assert c[0]["rule"] == sys.argv[2] + ":2: new.example.org", c
assert c[1]["host"] == "old.example.org" and c[1]["from"] == "allowed" \
    and c[1]["to"] == "denied" and c[1]["count"] == 2, c
assert c[1]["first"] == "2020-01-01T00:00:00.000Z", c
assert c[1]["reason"] == "no-match", c
PY

# --since 1h leaves the 2020 line out; stdin works as a log.
rc=0; out=$("$cordon" allowlist replay --since 1h "$t/new" < "$t/access.log") || rc=$?
[ "$rc" = 1 ] || fail "replay --since from stdin: exit $rc ($out)"
python3 - "$out" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
assert r["before_since"] == 1 and r["changed"] == 2, r
PY

# Errors: exit 2 with the reason, nothing on stdout.
rc=0; err=$("$cordon" allowlist replay --log "$t/access.log" "$t/bad" 2>&1 >/dev/null) || rc=$?
[ "$rc" = 2 ] || fail "broken allowlist: exit $rc"
grep -q "default.list:2:" <<<"$err" || fail "broken allowlist without FILE:LINE: $err"
rc=0; err=$("$cordon" allowlist replay --log "$t/nope.log" "$t/new" 2>&1 >/dev/null) || rc=$?
[ "$rc" = 2 ] && grep -q "nope.log: No such file" <<<"$err" || fail "missing log: exit $rc: $err"
rc=0; "$cordon" allowlist replay --since soon "$t/new" </dev/null 2>/dev/null || rc=$?
[ "$rc" = 2 ] || fail "bad --since: exit $rc"
rc=0; out=$("$cordon" allowlist replay --help) || rc=$?
[ "$rc" = 0 ] && grep -q "^usage: cordon allowlist replay" <<<"$out" || fail "--help: exit $rc"

# suggest: from the same log and from a run result, for policy default.
cat > "$t/run.json" <<'JSON'
{"status":"ok","policy":"default","egress":[
 {"host":"files.example.net","port":443,"decision":"denied","reason":"not-on-policy default","status":403,"count":4},
 {"host":"ok.example.net","port":443,"decision":"allowed","reason":"allowed-by-entry","status":200,"count":1},
 {"host":"169.254.169.254","port":80,"decision":"denied","reason":"not-on-policy default","status":403,"count":1}]}
JSON
rc=0; out=$("$cordon" allowlist suggest --log "$t/access.log" --result "$t/run.json" --policy default 2>"$t/err") || rc=$?
[ "$rc" = 0 ] || fail "suggest: exit $rc: $(cat "$t/err")"
grep -qx 'new.example.org:443  # 1 denied, e.g. .* CONNECT new.example.org:443' <<<"$out" || fail "suggest: no line for new.example.org: $out"
grep -q '^files.example.net:443  # 4 denied, e.g. run result ' <<<"$out" || fail "suggest: no line from the result: $out"
grep -q '^# not suggested: 169.254.169.254 (an internal address' <<<"$out" || fail "suggest: metadata address: $out"
grep -q '^ok.example.net' <<<"$out" && fail "suggest: an allowed host suggested: $out"
printf '%s\n' "$out" > "$t/suggested.list"
"$cordon" allowlist check "$t/suggested.list" >/dev/null || fail "suggest's output does not pass check"
rc=0; "$cordon" allowlist suggest --log "$t/access.log" 2>/dev/null || rc=$?
[ "$rc" = 2 ] || fail "suggest without --policy: exit $rc"
rc=0; "$cordon" allowlist suggest --result "$t/access.log" --policy default 2>/dev/null || rc=$?
[ "$rc" = 2 ] || fail "suggest with a result that is not JSON: exit $rc"
echo "replay_cli: ok"
