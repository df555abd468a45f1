#!/usr/bin/env bash
# Fault: `cordon serve --pool 2` with a session open is SIGKILLed (its own
# pid, from $!), twice (issue 34). After the first, one `cordon gc`
# removes every container it left (the pool's and the session's). After
# the second, a new `cordon serve` removes them itself at start-up, as gc
# does, and says in its log which it removed. Real dockerd + runsc.
. "$(dirname "$0")/lib.sh"

configs 2
json='Content-Type: application/json'

# up: the service with a full pool and a session; prints nothing.
up() {
	serve_start
	wait_idle 2
	st=$(req "$tmp/s.json" -H "$json" -d '{}' http://cordon/v1/sessions)
	[ "$st" = 201 ] || fail "session: HTTP $st $(cat "$tmp/s.json")"
}
# crash: SIGKILL the service by its pid; its containers stay behind.
crash() {
	kill -KILL "$pid"
	wait "$pid" 2>/dev/null
	left=$("$docker" ps -a --filter label=cordon=1 --filter "label=cordon.owner_pid=$pid" --format '{{.Names}}')
	n=$(grep -c . <<<"$left")
	[ "$n" -ge 3 ] || fail "expected the pool's 2 and the session's container left, found $n: $left"
}

# 1. SIGKILL, then cordon gc.
up
crash
echo "ok - serve ($pid) SIGKILLed with a pool and a session: $n containers left"
"$cordon" gc >"$tmp/gc.out" 2>&1 || fail "cordon gc: $(cat "$tmp/gc.out")"
[ -z "$(ours "$pid")" ] || fail "cordon gc left: $(ours "$pid")"
echo "ok - one cordon gc removed them ($(cat "$tmp/gc.out"))"

# 2. SIGKILL, then a new service cleans up by itself.
up
crash
old=$pid
mv "$tmp/serve.log" "$tmp/serve-old.log"
serve_start
[ -z "$(ours "$old")" ] || fail "the new service left its predecessor's containers: $(ours "$old")"
line=$(grep '^cordon: warn: start-up sweep removed [0-9]* container(s) left by a service or run that is gone' "$tmp/serve.log") ||
	fail "no start-up line saying what was removed: $(cat "$tmp/serve.log")"
# Each one left is gone, and named in that line.
for c in $left; do
	gone "$c" || fail "$c still exists"
	grep -qw -- "$c" <<<"$line" || fail "the start-up line does not name $c: $line"
done
echo "ok - a new service removed its predecessor's $n containers at start-up: ${line#cordon: warn: }"
stop
[ -z "$(ours "$pid")" ] || fail "containers left after the service stopped: $(ours "$pid")"
echo "ok - the new service stopped cleanly"
