#!/usr/bin/env bash
# Fault: an output flood against the deadline (issue 34). A job writing 1
# MiB chunks to stdout and stderr without end, with --timeout 5 and a cap
# of 64 KiB, returns within 7 s on every path: cold over the CLI and over
# the Engine API, warm from `serve --pool`, and in a session (also when
# the code floods the session's result stream); with --keep head it ends
# at its cap, long before the deadline, with output_truncated. Nothing is
# left behind. Before the fix, the CLI path returned after 35 s (docker's
# kill waited on the unread pipe) and every timing_ms field was -1. Real
# dockerd + runsc.
. "$(dirname "$0")/lib.sh"

configs 1
printf '{"docker_api": "never", "audit_log": "%s/audit.log"}\n' "$tmp" >"$tmp/cli.json"
printf '%s' "$flood" >"$tmp/flood.py"
cap=65536
# check_flood FILE KEEP SECONDS WHAT: the flood's result on one path,
# returned within 7 s; --keep head ends at its cap, well before the
# deadline.
check_flood() {
	le "$3" 7 || fail "$4, --keep $2: returned after $3 s (timeout 5)"
	if [ "$2" = both ]; then
		check_stopped "$1"
	else
		check_cut "$1" $cap
		le "$3" 4.5 || fail "$4, --keep head: not ended at its cap ($3 s)"
	fi
}

# 1. Cold runs: both paths, both --keep modes.
for path in cli api; do
	for keep in both head; do
		t0=$(now)
		CORDON_CONFIG="$tmp/$path.json" "$cordon" run --timeout 5 --max-output $cap \
			--keep $keep <"$tmp/flood.py" >"$tmp/r-$path-$keep.json" 2>"$tmp/r.err" ||
			fail "cordon run ($path, --keep $keep): $(cat "$tmp/r.err")"
		took=$(since "$t0")
		check_flood "$tmp/r-$path-$keep.json" $keep "$took" "cold $path path"
		name=$(jget "$tmp/r-$path-$keep.json" container)
		gone "$name" || fail "$path path, --keep $keep: $name was left behind"
		echo "ok - cold $path path, --keep $keep: $(jget "$tmp/r-$path-$keep.json" status) in $took s, timing_ms $(jget "$tmp/r-$path-$keep.json" timing_ms)"
	done
done

# 2. Warm (a pooled container's exec) and a session, through the service.
serve_start
code=$(python3 -c 'import json,sys; print(json.dumps(sys.stdin.read()))' <"$tmp/flood.py")
for keep in both head; do
	wait_idle 1	# filled, or refilled after the previous warm run
	t0=$(now)
	st=$(run "$tmp/w-$keep.json" "{\"code\":$code,\"timeout_s\":5,\"max_output\":$cap,\"keep\":\"$keep\"}")
	took=$(since "$t0")
	[ "$st" = 200 ] || fail "warm flood run: HTTP $st $(head -c 300 "$tmp/w-$keep.json")"
	[ "$(jget "$tmp/w-$keep.json" warm)" = True ] || fail "the flood run was not warm: $(jget "$tmp/w-$keep.json" warm)"
	check_flood "$tmp/w-$keep.json" $keep "$took" warm
	echo "ok - warm, --keep $keep: $(jget "$tmp/w-$keep.json" status) in $took s"
done
st=$(req "$tmp/s.json" -H 'Content-Type: application/json' -d '{}' http://cordon/v1/sessions)
[ "$st" = 201 ] || fail "session: HTTP $st $(cat "$tmp/s.json")"
sid=$(jget "$tmp/s.json" id)
t0=$(now)
st=$(req "$tmp/sc.json" -H 'Content-Type: application/json' \
	-d "{\"code\":$code,\"timeout_s\":5,\"max_output\":$cap}" "http://cordon/v1/sessions/$sid/runs")
took=$(since "$t0")
[ "$st" = 200 ] || fail "session flood call: HTTP $st $(head -c 300 "$tmp/sc.json")"
[ "$(jget "$tmp/sc.json" status)" = timeout ] && [ "$(jget "$tmp/sc.json" session_ended)" = True ] ||
	fail "session flood call: $(head -c 300 "$tmp/sc.json")"
le "$took" 7 || fail "session flood call: returned after $took s (timeout 5)"
echo "ok - session call: timeout in $took s, the session ended"
# Code that floods the session's result stream (the container's stdout,
# which the worker running the code reopens through /proc/<driver>/fd/1)
# is cut at the host's bound (the stream is not a frame) and the session
# ends, the container killed while that stream is still read. A runsc
# that refuses the reopen leaves nothing to flood: said so, and the call
# must then be a plain result.
st=$(req "$tmp/s.json" -H 'Content-Type: application/json' -d '{}' http://cordon/v1/sessions)
[ "$st" = 201 ] || fail "session: HTTP $st $(cat "$tmp/s.json")"
sid=$(jget "$tmp/s.json" id)
t0=$(now)
st=$(req "$tmp/sf.json" -H 'Content-Type: application/json' \
	-d '{"code":"import os, sys\ntry:\n    fd = os.open(\"/proc/%d/fd/1\" % os.getppid(), os.O_WRONLY)\nexcept OSError as e:\n    print(\"REFUSED\", e)\n    sys.exit(0)\nb = b\"x\" * (1 << 20)\nwhile True:\n    os.write(fd, b)\n","timeout_s":5}' \
	"http://cordon/v1/sessions/$sid/runs")
took=$(since "$t0")
[ "$st" = 200 ] || fail "session result-stream flood: HTTP $st $(head -c 300 "$tmp/sf.json")"
le "$took" 7 || fail "session result-stream flood: returned after $took s (timeout 5)"
if grep -q REFUSED <<<"$(jget "$tmp/sf.json" stdout)"; then
	[ "$(jget "$tmp/sf.json" status)" = ok ] || fail "session call: $(head -c 300 "$tmp/sf.json")"
	echo "ok - session call: this runsc refuses reopening the result stream ($(jget "$tmp/sf.json" stdout | head -c 120)): nothing to flood"
else
	[ "$(jget "$tmp/sf.json" status)" = sandbox_error ] &&
		[ "$(jget "$tmp/sf.json" session_ended)" = True ] ||
		fail "session result-stream flood: $(head -c 300 "$tmp/sf.json")"
	echo "ok - session call flooding its result stream: sandbox_error in $took s, the session ended"
fi
stop
[ -z "$(ours "$pid")" ] || fail "containers left after the service stopped: $(ours "$pid")"
echo "ok - nothing left behind"
