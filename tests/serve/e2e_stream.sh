#!/usr/bin/env bash
# End-to-end test of the service's live replies (issue 17): `POST /v1/runs`
# with `Accept: application/x-ndjson` against real dockerd + runsc. Output
# events arrive while the run goes on (curl --no-buffer, timestamps), the
# result event equals the plain reply's, a run that is refused keeps its
# HTTP status, a client that stops reading does not grow the service's
# memory (events beyond the bound are dropped and counted), and a client
# that hangs up mid-stream cancels its run. Shared set-up: lib.sh (fails,
# never skips, without Docker, the runtime or the image, unless
# CORDON_E2E=skip).
. "$(dirname "$0")/lib.sh"
client="$(dirname "$0")/live_client.py"
cfgfile="$tmp/cordon.json"
echo "{\"audit_log\": \"$tmp/audit.log\"}" >"$cfgfile"
# Under ASan (CI) the quarantine would keep every dropped event's freed
# memory and hide what the bounded queue holds: measure without it.
[ -z "${ASAN_OPTIONS+x}" ] || export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0"
start
nd='Accept: application/x-ndjson'
body() { python3 -c 'import json,sys; d=json.loads(sys.argv[2]); d["code"]=open(sys.argv[1]).read(); print(json.dumps(d))' "$@"; }

# 1. Ticks a second apart: each event arrives when it is printed, the
# result last; curl --no-buffer shows them as they come.
cat >"$tmp/tick.py" <<'PY'
import sys, time
for i in range(3):
    print("tick", i, flush=True)
    time.sleep(1)
sys.stderr.buffer.write("caf\u00e9 ".encode() + b"\xff\n")
PY
body "$tmp/tick.py" '{"timeout_s": 30}' >"$tmp/tick.json"
curl -sN -D "$tmp/hdr" --max-time 60 --unix-socket "$sock" -H "$nd" \
	--data-binary @"$tmp/tick.json" http://cordon/v1/runs |
	python3 -c 'import sys, time, json
t0 = time.monotonic()
for line in sys.stdin:
    print(json.dumps([round(time.monotonic() - t0, 3), json.loads(line)]))' >"$tmp/ticks" ||
	fail "streamed run: $(cat "$tmp/hdr")"
grep -qi '^Content-Type: application/x-ndjson' "$tmp/hdr" || fail "content type: $(cat "$tmp/hdr")"
grep -qi '^Transfer-Encoding: chunked' "$tmp/hdr" || fail "not chunked: $(cat "$tmp/hdr")"
run "$tmp/plain" "$(cat "$tmp/tick.json")" >"$tmp/plain.code"
[ "$(cat "$tmp/plain.code")" = 200 ] || fail "plain run: $(cat "$tmp/plain")"
python3 - "$tmp/ticks" "$tmp/plain" <<'PY' || fail "ticks: $(cat "$tmp/ticks")"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
plain = json.load(open(sys.argv[2]))
kinds = [e[1]["event"] for e in ev]
assert kinds[-1] == "result" and kinds.count("result") == 1, kinds
outs = [e for e in ev if e[1]["event"] == "stdout"]
assert "".join(e[1]["data"] for e in outs) == "tick 0\ntick 1\ntick 2\n", outs
err = "".join(e[1]["data"] for e in ev if e[1]["event"] == "stderr")
assert err == "caf\u00e9 \ufffd\n", err
t_first, t_result = outs[0][0], ev[-1][0]
print("first stdout event at %.2f s, result at %.2f s" % (t_first, t_result))
assert t_result - t_first > 1.5, (t_first, t_result)
tick2 = [e for e in outs if "tick 2" in e[1]["data"]][0][0]
assert tick2 - t_first > 1.5, (t_first, tick2)
res = dict(ev[-1][1]); del res["event"]
for k in ("container", "duration_ms", "queue_ms", "timing_ms", "warm"):
    res.pop(k, None); plain.pop(k, None)
assert res == plain, (res, plain)
PY
echo "ok - events arrive as printed (ticks 1 s apart), result last and equal to the plain reply"

# 2. A request the service refuses, or a run that cannot start, keeps its
# status and JSON error.
code=$(req "$tmp/m" -H "$nd" -d '{"code":1}' http://cordon/v1/runs)
[ "$code" = 400 ] && grep -q '"error":' "$tmp/m" || fail "bad request with ndjson: HTTP $code: $(cat "$tmp/m")"
echo "ok - a refused request answers 400 with a JSON error"

# 3. A client that reads nothing while 32 MiB of output are produced: the
# service holds the run's capped output (2 x 16 MiB, as for any run) and at
# most the queue's bound (4 MiB) of events, not the events themselves; the
# rest is dropped, counted in the result and announced by a "dropped"
# event. The result keeps the output as usual.
cat >"$tmp/flood.py" <<'PY'
import sys, time
b = b'o' * (1 << 20)
for i in range(16):
    sys.stdout.buffer.write(b)
    sys.stderr.buffer.write(b)
sys.stdout.flush(); sys.stderr.flush()
time.sleep(5)
PY
body "$tmp/flood.py" '{"timeout_s": 60, "max_output": 16777216}' >"$tmp/flood.json"
python3 "$client" "$sock" "$tmp/flood.json" stall 4.5 "$pid" >"$tmp/stall" || fail "stalled client"
python3 - "$tmp/stall" <<'PY' || fail "stalled client: $(head -c 2000 "$tmp/stall")"
import json, os, sys
d = json.load(open(sys.argv[1]))
ev = [e[1] for e in d["events"]]
assert d["status"] == 200, d["status"]
res = ev[-1]
assert res["event"] == "result" and res["status"] == "ok", res["status"]
assert len(res["stdout"]) == 16 << 20 and len(res["stderr"]) == 16 << 20
shown = sum(len(e.get("data", "")) for e in ev[:-1])
gaps = sum(e["bytes"] for e in ev if e["event"] == "dropped")
assert res["stream_dropped"] > 0 and gaps == res["stream_dropped"], (gaps, res.get("stream_dropped"))
assert shown + gaps == 32 << 20, (shown, gaps)
rss = d["rss_kb"]
base, plateau = rss[0], max(rss)
print("service RSS %d KiB before, %d KiB at most while the client read nothing; "
      "%d bytes shown live, %d dropped" % (base, plateau, shown, gaps))
# The run's own buffers are 32 MiB; the queue adds at most 4 MiB (plus
# allocator and sanitizer slack). Keeping every event would add 32 MiB.
slack = 48 if "quarantine_size_mb=0" in os.environ.get("ASAN_OPTIONS", "") else 12
assert plateau - base < (32 + 4 + slack) * 1024, rss
PY
echo "ok - a client that stops reading: bounded memory, dropped events counted and announced"

# 4. A client that hangs up mid-stream cancels its run at once.
body "$tmp/tick.py" '{"timeout_s": 120}' | sed 's/range(3)/range(100)/' >"$tmp/long.json"
curl -sN --max-time 3 --unix-socket "$sock" -H "$nd" --data-binary @"$tmp/long.json" \
	http://cordon/v1/runs >"$tmp/cut" 2>/dev/null
grep -q '"event":"stdout"' "$tmp/cut" || fail "no event before the hang-up: $(cat "$tmp/cut")"
for _ in $(seq 150); do [ -z "$(containers)" ] && break; sleep 0.1; done
[ -z "$(containers)" ] || fail "the run of a client that hung up mid-stream was not cancelled"
req "$tmp/metrics" http://cordon/metrics >/dev/null
grep -q '^cordon_runs_total{status="closed_early"} 1$' "$tmp/metrics" || fail "metrics: $(grep runs_total "$tmp/metrics")"
echo "ok - a client that hangs up mid-stream cancels its run"

stop
echo "ok - stopped cleanly"
