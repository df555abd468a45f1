#!/usr/bin/env bash
# End-to-end test of the warm pools of bash and node in `cordon serve`
# (serve.pool_bash, serve.pool_node) and of python in profile data
# (serve.pool_profiles) with real dockerd + runsc, in a state_dir of its
# own (minimal, data and node pinned by the operator's image IDs, each
# probed here): each pooled container's one exec is its language's command
# line (/bin/bash -s, /usr/bin/node -, python3 -I -) in its profile's
# image; a bash run, a node run and a python run naming profile data each
# take one ("warm": true, that container), a python run without a profile
# starts cold (its own pool is 0, data's is not its); SIGTERM leaves no
# container; /v1/health and /metrics report each pool; with
# serve.pool_idle_s a pool no run asks for shrinks to 0 and the next run
# wakes it. Fails (never skips) when Docker, the runtime or an image is
# missing, unless CORDON_E2E=skip.
. "$(dirname "$0")/lib.sh"

image_id() {
	"$cordon" image show --profile "$1" 2>/dev/null |
		python3 -c 'import json,sys; print(json.load(sys.stdin).get("id") or "")' 2>/dev/null
}
min=$(image_id minimal); node=$(image_id node); data=$(image_id data)
[ -n "$min" ] || missing "no image of profile minimal"
[ -n "$node" ] || missing "no image of profile node"
[ -n "$data" ] || missing "no image of profile data"
state="$tmp/state"
mkdir -p "$state"
cfgfile="$tmp/cordon.json"
export CORDON_CONFIG="$cfgfile"
printf '{"state_dir":"%s","audit_log":"%s/audit.log","image":{"id":"%s","profiles":{"node":{"id":"%s"},"data":{"id":"%s"}}},"serve":{"pool":0,"pool_bash":1,"pool_node":1,"pool_profiles":{"data":{"python":1}}}}\n' \
	"$state" "$tmp" "$min" "$node" "$data" >"$cfgfile"
for p in minimal node data; do
	"$cordon" probe --net none --profile "$p" >"$tmp/probe-$p.json" 2>"$tmp/probe-$p.err" ||
		fail "probe of profile $p: $(cat "$tmp/probe-$p.err") $(cat "$tmp/probe-$p.json")"
done
echo "ok - minimal, node and data probed in a state_dir of our own"

start
# ready: the service's running pool containers whose one exec the daemon
# knows, as "NAME IMAGE EXEC-ID" lines.
ready() {
	local c
	for c in $("$docker" ps -q --filter label=cordon=1 --filter "label=cordon.owner_pid=$pid" \
		--filter label=cordon.session=pool --filter network=none --filter status=running); do
		"$docker" inspect -f '{{.Name}} {{.Config.Image}} {{range .ExecIDs}}{{.}} {{end}}' "$c" 2>/dev/null
	done | awk 'NF == 3 { sub(/^\//, "", $1); print }'
}
for _ in $(seq 1200); do
	[ "$(ready | wc -l)" -ge 3 ] && break
	sleep 0.1
done
ready >"$tmp/ready"
[ "$(wc -l <"$tmp/ready")" = 3 ] || fail "not one bash, one node and one data container ready in 120 s: $(cat "$tmp/ready"); $(cat "$tmp/serve.log")"
# The pool lists an entry once its exec is spawned, before the daemon
# knows the exec: a little margin.
sleep 0.5
# Each one's exec: its language's command line, in its profile's image.
while read -r name image exec; do
	cmd=$(curl -sf --unix-socket /var/run/docker.sock "http://docker/exec/$exec/json" |
		python3 -c 'import json,sys; p=json.load(sys.stdin)["ProcessConfig"]; print(" ".join([p["entrypoint"]] + p["arguments"]))')
	case "$image $cmd" in
	"$min /bin/bash -s") echo "$name" >"$tmp/bash.name" ;;
	"$node /usr/bin/node -") echo "$name" >"$tmp/node.name" ;;
	"$data python3 -I -") echo "$name" >"$tmp/data.name" ;;
	*) fail "pooled container $name: image $image, exec '$cmd'" ;;
	esac
done <"$tmp/ready"
[ -s "$tmp/bash.name" ] && [ -s "$tmp/node.name" ] && [ -s "$tmp/data.name" ] ||
	fail "not one of each: $(cat "$tmp/ready")"
echo "ok - pooled: bash -s in minimal's image, node - in node's, python3 -I - in data's, one of each"

# warm LANG BODY STDOUT MEMBER VALUE: a run of LANG answers 200 with
# STDOUT and MEMBER = VALUE, warm, in the container its pool held.
warm() {
	local lang=$1 out="$tmp/$1" code
	code=$(run "$out" "$2")
	[ "$code" = 200 ] || fail "$lang run: HTTP $code $(cat "$out")"
	[ "$(jget "$out" stdout)" = "$3" ] && [ "$(jget "$out" "$4")" = "$5" ] ||
		fail "$lang run: $(cat "$out")"
	[ "$(jget "$out" warm)" = True ] && [ "$(jget "$out" container)" = "$(cat "$tmp/$lang.name")" ] ||
		fail "the $lang run was not warm in $(cat "$tmp/$lang.name"): $(cat "$out")"
}
warm bash '{"code":"echo $((6*7)) $(uname -r)","language":"bash"}' "42 4.4.0" lang bash
echo "ok - a bash run takes the pooled bash container (warm, under gVisor)"
warm node '{"code":"console.log(6*7)","language":"node"}' 42 profile node
echo "ok - a node run takes the pooled node container (warm, profile node)"
warm data '{"code":"import numpy; print(numpy.int64(6) * 7)","profile":"data"}' 42 profile data
echo "ok - a python run in profile data takes the pooled data container (warm, numpy there)"

code=$(run "$tmp/p" '{"code":"print(1)"}')
[ "$code" = 200 ] && [ "$(jget "$tmp/p" stdout)" = 1 ] && [ "$(jget "$tmp/p" warm)" = False ] &&
	[ "$(jget "$tmp/p" profile)" = minimal ] ||
	fail "python with no python pool: HTTP $code $(cat "$tmp/p")"
echo "ok - python without a profile starts cold (serve.pool 0; data's pool is not its)"

# health NAME: /v1/health into $tmp/NAME.
health() { [ "$(req "$tmp/$1" http://cordon/v1/health)" = 200 ] || fail "/v1/health: $(cat "$tmp/$1")"; }
health h1
[ "$(jget "$tmp/h1" pools.bash.hits)" = 1 ] && [ "$(jget "$tmp/h1" pools.node.hits)" = 1 ] &&
	[ "$(jget "$tmp/h1" pools.python@data.hits)" = 1 ] &&
	[ "$(jget "$tmp/h1" pools.python@data.misses)" = 0 ] &&
	[ "$(jget "$tmp/h1" pools.python@data.profile)" = data ] &&
	[ "$(jget "$tmp/h1" pools.node.profile)" = node ] &&
	[ "$(jget "$tmp/h1" pools.python)" = None ] && [ "$(jget "$tmp/h1" pool.enabled)" = False ] ||
	fail "/v1/health's pools: $(cat "$tmp/h1")"
[ "$(req "$tmp/m1" http://cordon/metrics)" = 200 ] || fail "/metrics: $(cat "$tmp/m1")"
grep -qx 'cordon_pool_lang_hits_total{lang="bash",profile="minimal"} 1' "$tmp/m1" &&
	grep -qx 'cordon_pool_lang_hits_total{lang="node",profile="node"} 1' "$tmp/m1" &&
	grep -qx 'cordon_pool_lang_hits_total{lang="python",profile="data"} 1' "$tmp/m1" &&
	grep -q '^cordon_pool_idle{lang="node",profile="node",net="none"} ' "$tmp/m1" &&
	! grep -q 'lang="python",profile="minimal"' "$tmp/m1" ||
	fail "/metrics has not each pool's lines: $(grep cordon_pool "$tmp/m1")"
echo "ok - /v1/health and /metrics report the bash, node and python@data pools, each on its own"

stop
left=$("$docker" ps -aq --filter label=cordon=1 --filter "label=cordon.owner_pid=$pid")
[ -z "$left" ] || fail "containers left after SIGTERM: $left"
pid=
echo "ok - SIGTERM leaves no container"

# serve.pool_idle_s: a pool no run asks for shrinks to 0, and the next
# run (cold) refills it.
printf '{"state_dir":"%s","audit_log":"%s/audit.log","image":{"id":"%s","profiles":{"node":{"id":"%s"}}},"serve":{"pool":0,"pool_bash":1,"pool_idle_s":3}}\n' \
	"$state" "$tmp" "$min" "$node" >"$cfgfile"
start
# pooled: the service's pool containers (any state), one per line.
pooled() { "$docker" ps -aq --filter label=cordon=1 --filter "label=cordon.owner_pid=$pid" --filter label=cordon.session=pool; }
for _ in $(seq 1500); do
	health h2
	[ "$(jget "$tmp/h2" pools.bash.dormant.none)" = True ] && break
	sleep 0.1
done
[ "$(jget "$tmp/h2" pools.bash.dormant.none)" = True ] && [ "$(jget "$tmp/h2" pools.bash.none)" = 0 ] &&
	[ "$(jget "$tmp/h2" pools.bash.shrinks)" = 1 ] && [ "$(jget "$tmp/h2" pools.bash.started)" = 1 ] ||
	fail "the bash pool did not fill and shrink in 150 s: $(cat "$tmp/h2"); $(cat "$tmp/serve.log")"
for _ in $(seq 100); do [ -z "$(pooled)" ] && break; sleep 0.1; done
[ -z "$(pooled)" ] || fail "pool containers left after the shrink: $(pooled)"
grep -q 'pool bash --net none: no run asked for it in 3 s: shrunk to 0' "$tmp/serve.log" ||
	fail "no shrink line in the log: $(cat "$tmp/serve.log")"
sleep 2
health h3
[ "$(jget "$tmp/h3" pools.bash.started)" = 1 ] && [ "$(jget "$tmp/h3" pools.bash.starting)" = 0 ] &&
	[ -z "$(pooled)" ] || fail "a dormant pool started containers: $(cat "$tmp/h3") $(pooled)"
echo "ok - a bash pool no run asked for in 3 s shrinks to 0, its container removed, none started"

code=$(run "$tmp/b1" '{"code":"echo $((6*7))","language":"bash"}')
[ "$code" = 200 ] && [ "$(jget "$tmp/b1" stdout)" = 42 ] && [ "$(jget "$tmp/b1" warm)" = False ] ||
	fail "a bash run on the shrunk pool: HTTP $code $(cat "$tmp/b1")"
for _ in $(seq 1200); do
	health h4
	[ "$(jget "$tmp/h4" pools.bash.none)" = 1 ] && break
	sleep 0.1
done
[ "$(jget "$tmp/h4" pools.bash.none)" = 1 ] && [ "$(jget "$tmp/h4" pools.bash.dormant.none)" = False ] ||
	fail "the bash pool did not refill after a run asked: $(cat "$tmp/h4"); $(cat "$tmp/serve.log")"
code=$(run "$tmp/b2" '{"code":"echo $((6*7))","language":"bash"}')
[ "$code" = 200 ] && [ "$(jget "$tmp/b2" stdout)" = 42 ] && [ "$(jget "$tmp/b2" warm)" = True ] ||
	fail "a bash run on the refilled pool: HTTP $code $(cat "$tmp/b2")"
echo "ok - the next bash run starts cold and wakes the pool; it refills and the run after is warm"
stop
[ -z "$("$docker" ps -aq --filter label=cordon=1 --filter "label=cordon.owner_pid=$pid")" ] ||
	fail "containers left after SIGTERM"
pid=
echo "PASS"
