#!/usr/bin/env bash
# End-to-end: the host-wide bound on concurrent runs, with real dockerd and
# runsc, in a state_dir of its own (so its slots are its own; the image is
# the host's pinned one). With limits.max_concurrent_runs 2:
#  - five parallel `cordon run` of time.sleep(3): never more than 2 of
#    their containers at once (docker ps, polled), all five succeed;
#  - a run that waits past limits.queue_timeout_s: non-zero exit, a
#    one-line error, and no container of its own ever;
#  - SIGKILL of a slot holder frees its slot for a waiting run;
#  - `cordon serve`, `cordon run` and `cordon mcp` together (two, two and
#    one runs of time.sleep(3) at once) share the same 2 slots.
# Fails (never skips) without Docker, the runtime or the image, unless
# CORDON_E2E=skip.
. "$(dirname "$0")/../lib/e2e.sh" || exit 1
e2e_need_docker
e2e_need_runtime cordon-offline
e2e_need_image

e2e_tmpdir cordon-e2e-slots
tag="e2e-slots-$$"
pids=()
spid=
cleanup() {
	[ -n "$spid" ] && kill -TERM "$spid" 2>/dev/null
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
	wait 2>/dev/null
	# Only this test's containers (its sessions all start with $tag).
	"$docker" ps -a --filter label=cordon=1 \
		--format '{{.ID}} {{.Label "cordon.session"}}' |
		awk -v t="$tag-" 'index($2, t) == 1 { print $1 }' |
		xargs -r "$docker" rm -f >/dev/null 2>&1
}
# config FILE QUEUE_TIMEOUT_S [MORE-KEYS]
config() {
	printf '{"state_dir":"%s/state","audit_log":"%s/audit.log","require_probe":false,"image":{"id":"%s"},"limits":{"max_concurrent_runs":2,"queue_timeout_s":%s}%s}\n' \
		"$tmp" "$tmp" "$id" "$2" "${3:-}" >"$1"
}
config "$tmp/c60.json" 60
config "$tmp/c2.json" 2
export CORDON_CONFIG="$tmp/c60.json"
printf 'import time\ntime.sleep(3)\nprint("done")\n' >"$tmp/sleep3.py"
printf 'import time\ntime.sleep(20)\n' >"$tmp/sleep20.py"
echo 'print(1)' >"$tmp/print.py"
ms() { date +%s%3N; }
# count SESSION: Cordon containers of that session (any state).
count() {
	"$docker" ps -aq --filter label=cordon=1 --filter "label=cordon.session=$1" | wc -l
}
alive() { for p in "$@"; do kill -0 "$p" 2>/dev/null && return 0; done; return 1; }

# 1. Five at once, bound 2.
s1="$tag-five"
t0=$(ms)
five=()
for i in 1 2 3 4 5; do
	"$cordon" run --session "$s1" --timeout 60 <"$tmp/sleep3.py" \
		>"$tmp/r$i.out" 2>"$tmp/r$i.err" &
	five+=($!)
done
pids+=("${five[@]}")
max=0 polls=0
while alive "${five[@]}"; do
	n=$(count "$s1")
	[ "$n" -gt "$max" ] && max=$n
	polls=$((polls + 1))
	[ $(( $(ms) - t0 )) -lt 120000 ] || fail "five runs took more than 120 s"
done
t_five=$(( $(ms) - t0 ))
for i in 1 2 3 4 5; do
	wait "${five[$((i - 1))]}" || fail "run $i failed: $(cat "$tmp/r$i.err")"
	grep -q '"stdout":"done\\n"' "$tmp/r$i.out" || fail "run $i: $(cat "$tmp/r$i.out")"
done
[ "$max" -le 2 ] || fail "$max containers of the five runs at once (bound 2)"
[ "$max" = 2 ] || fail "never 2 at once ($max): the runs did not overlap"
queued=$(sed -n 's/.*"queue_ms":\([0-9]*\).*/\1/p' "$tmp"/r?.out | sort -n | tr '\n' ' ')
echo "ok: five runs of sleep(3), bound 2: at most $max containers at once" \
	"($polls docker ps polls), all done in $t_five ms; queue_ms: $queued"

# 2. Two holders; a waiter with queue_timeout_s 2 gives up, no container.
h1=$tag-h1 h2=$tag-h2 w=$tag-waiter
"$cordon" run --session "$h1" --timeout 60 <"$tmp/sleep20.py" >"$tmp/h1.out" 2>"$tmp/h1.err" &
p1=$!
"$cordon" run --session "$h2" --timeout 60 <"$tmp/sleep20.py" >"$tmp/h2.out" 2>"$tmp/h2.err" &
p2=$!
pids+=("$p1" "$p2")
for _ in $(seq 300); do
	[ "$(count "$h1")" = 1 ] && [ "$(count "$h2")" = 1 ] && break
	sleep 0.1
done
[ "$(count "$h1")" = 1 ] && [ "$(count "$h2")" = 1 ] || fail "the holders did not start"
t0=$(ms)
CORDON_CONFIG="$tmp/c2.json" "$cordon" run --session "$w" <"$tmp/print.py" \
	>"$tmp/w.out" 2>"$tmp/w.err" &
pw=$!
pids+=("$pw")
seen=0
while alive "$pw"; do
	[ "$(count "$w")" = 0 ] || seen=1
	[ $(( $(ms) - t0 )) -lt 30000 ] || fail "the waiter did not give up"
done
wait "$pw" && fail "the waiter exited 0: $(cat "$tmp/w.out")"
t_wait=$(( $(ms) - t0 ))
[ "$seen" = 0 ] || fail "the waiter started a container"
[ "$(count "$w")" = 0 ] || fail "the waiter left a container"
[ ! -s "$tmp/w.out" ] || fail "the waiter printed a result: $(cat "$tmp/w.out")"
[ "$(wc -l <"$tmp/w.err")" = 1 ] || fail "not one line: $(cat "$tmp/w.err")"
grep -q '^cordon run: no run slot became free within 2s: 2 runs are going on this host (limits.max_concurrent_runs)$' \
	"$tmp/w.err" || fail "unexpected error: $(cat "$tmp/w.err")"
[ "$t_wait" -ge 2000 ] || fail "gave up after $t_wait ms, before its 2 s"
echo "ok: a waiter past queue_timeout_s 2 exited non-zero after $t_wait ms," \
	"no container: $(cat "$tmp/w.err")"

# 3. SIGKILL of a holder frees its slot for a waiting run.
t0=$(ms)
"$cordon" run --session "$w" <"$tmp/print.py" >"$tmp/k.out" 2>"$tmp/k.err" &
pk=$!
pids+=("$pk")
sleep 1
kill -0 "$pk" 2>/dev/null || fail "the run did not wait: $(cat "$tmp/k.err" "$tmp/k.out")"
[ "$(count "$w")" = 0 ] || fail "the waiting run has a container before a slot"
kill -KILL "$p1"
t_kill=$(ms)
wait "$pk" || fail "the waiting run failed: $(cat "$tmp/k.err")"
t_done=$(ms)
alive "$p2" || fail "the other holder ended first: the slot was not the killed one's"
grep -q '"status":"ok"' "$tmp/k.out" || fail "waiting run: $(cat "$tmp/k.out")"
q=$(sed -n 's/.*"queue_ms":\([0-9]*\).*/\1/p' "$tmp/k.out")
free_ms=$(( t0 + q - t_kill ))
[ "$free_ms" -lt 1500 ] || fail "the slot came free $free_ms ms after the SIGKILL"
echo "ok: SIGKILL of a holder: the waiting run got its slot ${free_ms} ms after" \
	"the kill (queue_ms $q) and finished $(( t_done - t_kill )) ms after it"
kill -KILL "$p2"

# 4. serve, run and mcp share the slots. The service's tenant name is its
# runs' session.
mix=$tag-mix
tok=mmmmmmmmmmmmmmmmmmmm
config "$tmp/serve.json" 60 ",\"serve\":{\"socket\":\"$tmp/s.sock\",\"tenants\":[{\"name\":\"$mix-srv\",\"token\":\"$tok\",\"max_concurrent\":2}]}"
"$cordon" serve --config "$tmp/serve.json" >"$tmp/serve.log" 2>&1 &
spid=$!
# Its first scheduled probe runs at once and takes a slot: let it end.
for _ in $(seq 600); do
	[ -s "$tmp/state/probe-none.json" ] && [ -S "$tmp/s.sock" ] && break
	sleep 0.1
done
[ -S "$tmp/s.sock" ] || fail "cordon serve did not start: $(cat "$tmp/serve.log")"
sleep 1
code='import time\ntime.sleep(3)\nprint(\"done\")\n'
t0=$(ms)
mixp=()
for i in 1 2; do
	curl -s --max-time 120 --unix-socket "$tmp/s.sock" \
		-H "Authorization: Bearer $tok" -H 'Content-Type: application/json' \
		-d "{\"code\":\"$code\",\"timeout_s\":60}" http://cordon/v1/runs \
		>"$tmp/srv$i.out" 2>&1 &
	mixp+=($!)
	"$cordon" run --session "$mix-cli" --timeout 60 <"$tmp/sleep3.py" \
		>"$tmp/cli$i.out" 2>"$tmp/cli$i.err" &
	mixp+=($!)
done
printf '%s\n%s\n' '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e-slots","version":"1"}}}' \
	'{"jsonrpc":"2.0","method":"notifications/initialized"}' >"$tmp/mcp.in"
printf '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_code","arguments":{"code":"%s","timeout_s":60}}}\n' \
	"$code" >>"$tmp/mcp.in"
"$cordon" mcp --session "$mix-mcp" <"$tmp/mcp.in" >"$tmp/mcp.out" 2>"$tmp/mcp.err" &
mixp+=($!)
pids+=("${mixp[@]}")
max=0
while alive "${mixp[@]}"; do
	n=$("$docker" ps -a --filter label=cordon=1 \
		--format '{{.Label "cordon.session"}}' | grep -c "^$mix-")
	[ "$n" -gt "$max" ] && max=$n
	[ $(( $(ms) - t0 )) -lt 120000 ] || fail "the mixed runs took more than 120 s"
done
t_mix=$(( $(ms) - t0 ))
for f in srv1 srv2 cli1 cli2; do
	grep -q '"stdout":"done\\n"' "$tmp/$f.out" || fail "$f: $(cat "$tmp/$f.out")"
done
grep -q 'done\\\\n' "$tmp/mcp.out" || fail "mcp: $(cat "$tmp/mcp.out" "$tmp/mcp.err")"
[ "$max" -le 2 ] || fail "$max containers of serve, run and mcp at once (bound 2)"
[ "$max" = 2 ] || fail "never 2 at once ($max)"
echo "ok: serve (2), run (2) and mcp (1) runs of sleep(3) at once, bound 2:" \
	"at most $max containers at once, all done in $t_mix ms"
exit 0
