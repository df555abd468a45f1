#!/usr/bin/env bash
# End-to-end test of the service's sessions (issue 17, part 4) with real
# dockerd + runsc over the unix socket: state (a variable and a /tmp file)
# kept across 3 calls; another tenant's id is 404; the per-tenant limit
# (429); a concurrent call is 409; the code's process holds neither the
# nonce nor the result stream (a hunt through its objects, frames, memory,
# environment and fds finds nothing; the driver's memory is unreadable),
# frames it forges on every fd it has, now or from a process it leaves
# behind, leave the next call's result its own, and bytes it writes into
# the driver's result stream through /proc end its session (sandbox_error),
# never a forged result; a timeout and an OOM end their session; idle
# expiry removes the container; DELETE removes it; kill-all ends sessions;
# SIGTERM of the service leaves no session container. Fails (never skips)
# when Docker, the runtime, the image or curl is missing, unless
# CORDON_E2E=skip.
# Like e2e_serve.sh it needs a passing `cordon probe --net none` record in
# /var/lib/cordon, and kill-all removes EVERY Cordon container on the host.
. "$(dirname "$0")/lib.sh"

A='Authorization: Bearer aaaaaaaaaaaaaaaa'
B='Authorization: Bearer bbbbbbbbbbbbbbbb'
cat >"$tmp/cordon.json" <<JSON
{"audit_log": "$tmp/audit.log",
 "serve": {"sessions_per_tenant": 2,
  "tenants": [
   {"name": "a", "token": "aaaaaaaaaaaaaaaa"},
   {"name": "b", "token": "bbbbbbbbbbbbbbbb"}]}}
JSON
cfgfile="$tmp/cordon.json"

# create OUT [BODY] [HEADER]: POST /v1/sessions, prints the status.
create() { local body=${2:-'{}'}; req "$1" -H "${3:-$A}" -H 'Content-Type: application/json' -d "$body" http://cordon/v1/sessions; }
L='X-Tenant: local (no token)'
# call OUT ID BODY [HEADER]
call() { req "$1" -H "${4:-$A}" -H 'Content-Type: application/json' -d "$3" "http://cordon/v1/sessions/$2/runs"; }
# gone NAME: the container no longer exists (waits up to 10 s).
gone() {
	for _ in $(seq 100); do
		"$docker" inspect "$1" >/dev/null 2>&1 || return 0
		sleep 0.1
	done
	return 1
}
running() { [ "$("$docker" inspect -f '{{.State.Running}}' "$1" 2>/dev/null)" = true ]; }
check() { [ "$1" = "$2" ] || fail "$3: HTTP $2 (wanted $1): $(cat "$tmp/m" 2>/dev/null)"; }

start

# 1. State across 3 calls: a variable, an import and a /tmp file.
t0=$(date +%s%N)
code=$(create "$tmp/s1" '{"idle_timeout_s": 120}')
t1=$(date +%s%N)
if [ "$code" = 503 ] && grep -qi probe "$tmp/s1"; then
	fail "sessions are refused for the probe: $(cat "$tmp/s1") -- run 'cordon probe --net none'"
fi
[ "$code" = 201 ] || fail "create: HTTP $code: $(cat "$tmp/s1")"
id=$(jget "$tmp/s1" id)
ctr=$(jget "$tmp/s1" container)
running "$ctr" || fail "the session's container $ctr is not running"
# The same hardening as a run's container.
"$docker" inspect -f '{{.HostConfig.Runtime}} {{.HostConfig.NetworkMode}} {{.HostConfig.ReadonlyRootfs}} {{.HostConfig.CapDrop}} {{.HostConfig.SecurityOpt}} {{.Config.User}}' "$ctr" >"$tmp/insp"
grep -q '^cordon-offline none true \[ALL\] \[no-new-privileges\] 65534' "$tmp/insp" ||
	fail "session container hardening: $(cat "$tmp/insp")"
echo "ok - session $id created in $(( (t1 - t0) / 1000000 )) ms (container $ctr, hardened)"

check 200 "$(call "$tmp/c1" "$id" '{"code":"import statistics\nxs=[1,2,3]\nopen(\"/tmp/n\",\"w\").write(\"7\")\nprint(len(xs))"}')" "call 1"
[ "$(jget "$tmp/c1" stdout)" = 3 ] || fail "call 1: $(cat "$tmp/c1")"
[ "$(jget "$tmp/c1" session)" = "$id" ] && [ "$(jget "$tmp/c1" session_ended)" = False ] ||
	fail "call 1 result: $(cat "$tmp/c1")"
check 200 "$(call "$tmp/c2" "$id" '{"code":"xs.append(int(open(\"/tmp/n\").read()))\nprint(sum(xs))"}')" "call 2"
[ "$(jget "$tmp/c2" stdout)" = 13 ] || fail "call 2: $(cat "$tmp/c2")"
t0=$(date +%s%N)
check 200 "$(call "$tmp/c3" "$id" '{"code":"print(statistics.mean(xs), xs)"}')" "call 3"
t1=$(date +%s%N)
[ "$(jget "$tmp/c3" stdout)" = "3.25 [1, 2, 3, 7]" ] || fail "call 3: $(cat "$tmp/c3")"
[ "$(jget "$tmp/c3" container)" = "$ctr" ] || fail "call 3 ran elsewhere: $(cat "$tmp/c3")"
echo "ok - state kept across 3 calls (a call: $(( (t1 - t0) / 1000000 )) ms)"

# An exception is the code's result, not the session's end.
check 200 "$(call "$tmp/c4" "$id" '{"code":"1/0"}')" "exception"
[ "$(jget "$tmp/c4" exit_code)" = 1 ] && grep -q ZeroDivisionError "$tmp/c4" &&
	[ "$(jget "$tmp/c4" session_ended)" = False ] || fail "exception: $(cat "$tmp/c4")"
check 200 "$(call "$tmp/c5" "$id" '{"code":"print(xs[-1])"}')" "after exception"
[ "$(jget "$tmp/c5" stdout)" = 7 ] || fail "after exception: $(cat "$tmp/c5")"
echo "ok - an exception gives exit_code 1 and a traceback; the session goes on"

# 2. Another tenant: 404 for the id, for calls and for DELETE.
check 404 "$(call "$tmp/m" "$id" '{"code":"print(xs)"}' "$B")" "tenant b calls a's session"
grep -q 'no such session' "$tmp/m" || fail "tenant b: $(cat "$tmp/m")"
check 404 "$(req "$tmp/m" -H "$B" -X DELETE "http://cordon/v1/sessions/$id")" "tenant b deletes a's session"
running "$ctr" || fail "tenant b's DELETE touched a's container"
check 404 "$(call "$tmp/m" "$id" '{"code":"1"}' "$L")" "the local tenant calls a's session"
check 404 "$(req "$tmp/m" -H "$B" "http://cordon/v1/sessions/$id")" "tenant b reads a's session"
echo "ok - another tenant's session id is 404 (call, GET and DELETE)"

# GET: a tenant sees its own sessions, never another's; no nonce, token
# or output in what it sees.
check 200 "$(req "$tmp/la" -H "$A" http://cordon/v1/sessions)" "list a"
check 200 "$(req "$tmp/lb" -H "$B" http://cordon/v1/sessions)" "list b"
python3 - "$tmp/la" "$tmp/lb" "$id" "$ctr" <<'PY' || fail "session lists: $(cat "$tmp/la" "$tmp/lb")"
import json, sys
a = json.load(open(sys.argv[1]))["sessions"]
b = json.load(open(sys.argv[2]))["sessions"]
mine = [s for s in a if s["id"] == sys.argv[3]]
assert len(mine) == 1 and mine[0]["container"] == sys.argv[4], a
assert mine[0]["state"] == "idle" and mine[0]["net"] == "none" and mine[0]["profile"] == "minimal", mine
assert set(mine[0]) == {"id", "state", "net", "idle_timeout_s", "max_lifetime_s", "container", "profile", "age_s", "idle_s"}, mine
assert not any(s["id"] == sys.argv[3] for s in b), b
PY
check 200 "$(req "$tmp/g1" -H "$A" "http://cordon/v1/sessions/$id")" "GET a's session"
[ "$(jget "$tmp/g1" container) $(jget "$tmp/g1" state)" = "$ctr idle" ] || fail "GET session: $(cat "$tmp/g1")"
check 200 "$(req "$tmp/met" http://cordon/metrics)" "metrics"
grep -q '^cordon_sessions_live [1-9]' "$tmp/met" && grep -q '^cordon_session_calls_total{status="ok"} [1-9]' "$tmp/met" ||
	fail "session metrics: $(grep session "$tmp/met")"
echo "ok - GET /v1/sessions lists only the tenant's own; GET /v1/sessions/ID; session metrics"

# files at creation: read-only at /in for the session's life; bad files 400.
check 201 "$(create "$tmp/sf" '{"files":[{"path":"d/n.txt","content_b64":"NDIK"}]}')" "session with files"
idf=$(jget "$tmp/sf" id)
check 200 "$(call "$tmp/cf" "$idf" '{"code":"v = int(open(\"/in/d/n.txt\").read())\ntry:\n    open(\"/in/d/w\", \"w\")\nexcept OSError as e:\n    print(\"ro\", e.errno in (13, 30))"}')" "read /in"
[ "$(jget "$tmp/cf" stdout)" = "ro True" ] || fail "files in a session (EACCES or EROFS writing /in): $(cat "$tmp/cf")"
check 200 "$(call "$tmp/cf2" "$idf" '{"code":"print(v + 1)"}')" "after /in"
[ "$(jget "$tmp/cf2" stdout)" = 43 ] || fail "files in a session, call 2: $(cat "$tmp/cf2")"
compgen -G "/var/lib/cordon/in/$(jget "$tmp/sf" container).*" >/dev/null || fail "no /in copy of the files session under /var/lib/cordon/in"
check 200 "$(req "$tmp/m" -H "$A" -X DELETE "http://cordon/v1/sessions/$idf")" "DELETE the files session"
check 400 "$(create "$tmp/m" '{"files":[{"path":"../x","content_b64":"NDIK"}]}')" "unsafe files path"
grep -q "'files'" "$tmp/m" || fail "unsafe files path: $(cat "$tmp/m")"
ctrf=$(jget "$tmp/sf" container)
gone "$ctrf" || fail "DELETE left $ctrf"
for _ in $(seq 50); do compgen -G "/var/lib/cordon/in/$ctrf.*" >/dev/null || break; sleep 0.1; done
! compgen -G "/var/lib/cordon/in/$ctrf.*" >/dev/null || fail "the session's /in copy is left after DELETE: $(ls /var/lib/cordon/in)"
echo "ok - files at creation are at /in across calls and not writable there, removed with the session; an unsafe path is 400"

# Bad requests.
check 400 "$(create "$tmp/m" '{"profile":"nosuch"}')" "unknown profile"
grep -q "nosuch" "$tmp/m" || fail "unknown profile: $(cat "$tmp/m")"
check 400 "$(create "$tmp/m" '{"idle_timeout_s":0}')" "idle 0"
check 400 "$(create "$tmp/m" '{"nope":1}')" "unknown field"
check 400 "$(create "$tmp/m" '{"policy":"default"}')" "a policy without net proxy"
grep -q "applies only to net" "$tmp/m" || fail "policy without net proxy: $(cat "$tmp/m")"
# Tenant a has no "nets": only its own net (none); a proxy-mode session
# (tests/netsetup/e2e_egress.sh step 9) is the tenant's to be allowed.
check 403 "$(create "$tmp/m" '{"net":"proxy"}')" "net proxy for tenant a"
grep -q 'may not use net ..proxy' "$tmp/m" || fail "net proxy for tenant a: $(cat "$tmp/m")"
check 400 "$(call "$tmp/m" "$id" '{"code":"1","net":"none"}')" "net on a call"
check 404 "$(call "$tmp/m" ses_0000000000000000 '{"code":"1"}')" "unknown id"
check 405 "$(req "$tmp/m" -H "$A" -d "{}" "http://cordon/v1/sessions/$id")" "POST to a session"
check 405 "$(req "$tmp/m" -H "$A" -X DELETE http://cordon/v1/sessions)" "DELETE all sessions"
echo "ok - bad session requests: 400/403/404/405"

# 3. Per-tenant limit (2), and DELETE removes the container.
check 201 "$(create "$tmp/s2")" "second session"
id2=$(jget "$tmp/s2" id); ctr2=$(jget "$tmp/s2" container)
check 429 "$(create "$tmp/m")" "third session"
check 201 "$(create "$tmp/s3" '{}' "$B")" "tenant b's own session"
idb=$(jget "$tmp/s3" id); ctrb=$(jget "$tmp/s3" container)
check 200 "$(req "$tmp/m" -H "$A" -X DELETE "http://cordon/v1/sessions/$id2")" "DELETE"
gone "$ctr2" || fail "DELETE left $ctr2"
check 404 "$(call "$tmp/m" "$id2" '{"code":"1"}')" "call after DELETE"
echo "ok - per-tenant limit 429; DELETE removes the container; then 404"

# 4. One call at a time: a concurrent call is 409.
call "$tmp/slow" "$id" '{"code":"import time\ntime.sleep(3)\nprint(\"slept\")"}' >"$tmp/slow.code" &
bg=$!
sleep 1
check 409 "$(call "$tmp/m" "$id" '{"code":"print(1)"}')" "concurrent call"
wait $bg
[ "$(cat "$tmp/slow.code")" = 200 ] && [ "$(jget "$tmp/slow" stdout)" = slept ] ||
	fail "the first call: $(cat "$tmp/slow")"
echo "ok - a concurrent call is refused 409; the first completes"

# 5. Session isolation (issue 32, item 7): the code runs in the driver's
# worker process, which holds neither the nonce nor the result stream.
# callf OUT ID FILE: runs FILE's code in session ID.
callf() {
	python3 -c 'import json, sys; print(json.dumps({"code": open(sys.argv[1]).read()}))' "$3" >"$tmp/body.json"
	req "$1" -H "$A" -H 'Content-Type: application/json' -d @"$tmp/body.json" "http://cordon/v1/sessions/$2/runs"
}
# The next call after a forgery attempt: slow enough for a forger left
# behind; its result must be its own.
truecall() {
	check 200 "$(call "$tmp/tr" "$id" '{"code":"import time\ntime.sleep(1.5)\nprint(\"true\", xs[-1])\nraise SystemExit(3)"}')" "$1"
	[ "$(jget "$tmp/tr" stdout)" = "true 7" ] && [ "$(jget "$tmp/tr" exit_code)" = 3 ] &&
		[ "$(jget "$tmp/tr" status)" = ok ] && [ "$(jget "$tmp/tr" session_ended)" = False ] ||
		fail "$1: the next call's result is not its own: $(cat "$tmp/tr")"
}
# 5a. The nonce hunt, in what the code can reach: every object its
# interpreter holds (closures and the frames that called it included),
# its own memory, the driver's memory, the environments and its fds. What
# it finds is kept in the session (cands) for the forgers below.
cat >"$tmp/hunt.py" <<'PY'
import gc, json, os, re, sys
hexre = re.compile(rb'(?<![0-9a-f])[0-9a-f]{32}(?![0-9a-f])')
framere = re.compile(rb'\x00CSF1 ([0-9a-f]{32}) ')
cands = {}
def note(where, v):
    if isinstance(v, str):
        v = v.encode('latin-1', 'replace')
    if isinstance(v, (bytes, bytearray)) and len(v) == 32 and hexre.fullmatch(v):
        cands.setdefault(where, set()).add(bytes(v).decode())
for o in gc.get_objects():
    for r in gc.get_referents(o):
        note('gc', r)
f = sys._getframe()
while f is not None:
    for v in list(f.f_locals.values()) + list(f.f_globals.values()):
        note('frames', v)
    f = f.f_back
def scan_mem(pid, where):
    try:
        maps = open('/proc/%s/maps' % pid).read().splitlines()
        mem = open('/proc/%s/mem' % pid, 'rb', buffering=0)
    except OSError as e:
        return str(e)
    n = 0
    for l in maps:
        a, b = (int(x, 16) for x in l.split()[0].split('-'))
        if l.split()[1][0] != 'r':
            continue
        for at in range(a, b, 1 << 20):
            try:
                mem.seek(at)
                d = mem.read(min(b - at, (1 << 20) + 64))
            except (OSError, ValueError, OverflowError):
                break
            n += len(d)
            for m in framere.finditer(d):
                note(where, m.group(1))
    return '%d bytes read' % n
self_mem = scan_mem('self', 'self-mem')
ppid_mem = scan_mem(os.getppid(), 'driver-mem')
for where, path in (('self-environ', '/proc/self/environ'), ('driver-environ', '/proc/%d/environ' % os.getppid())):
    try:
        for m in hexre.findall(open(path, 'rb').read()):
            note(where, m)
    except OSError:
        pass
for v in os.environ.values():
    for m in hexre.findall(v.encode()):
        note('environ', m)
fds = {}
for fd in os.listdir('/proc/self/fd'):
    try:
        fds[fd] = os.readlink('/proc/self/fd/' + fd)
    except OSError:
        pass
print(json.dumps({'cands': {k: sorted(v) for k, v in cands.items()},
    'host_fds': sorted(fd for fd, t in fds.items() if t.startswith('host:')),
    'fds': fds, 'self_mem': self_mem, 'driver_mem': ppid_mem}))
PY
check 200 "$(callf "$tmp/h" "$id" "$tmp/hunt.py")" "nonce hunt"
python3 - "$tmp/h" <<'PY' || fail "the code's process holds the nonce or the result stream: $(cat "$tmp/h")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["exit_code"] == 0 and not r["session_ended"], r
h = json.loads(r["stdout"])
print("  hunt:", json.dumps(h), file=sys.stderr)
assert h["cands"] == {}, h["cands"]
assert h["host_fds"] == [], h["fds"]
assert "bytes read" in h["self_mem"] and int(h["self_mem"].split()[0]) > 1000000, h["self_mem"]
assert "bytes read" not in h["driver_mem"], h["driver_mem"]
PY
echo "ok - the nonce hunt finds nothing: not in the interpreter's objects or frames, its $(python3 -c 'import json,sys; print(json.loads(json.load(open(sys.argv[1]))["stdout"])["self_mem"])' "$tmp/h") of memory, the environments, nor behind its fds; the driver's memory: $(python3 -c 'import json,sys; print(json.loads(json.load(open(sys.argv[1]))["stdout"])["driver_mem"])' "$tmp/h")"
# 5b. A process left behind forges the next call's frame on every fd it
# has, once the call is over: with what the hunt found (cands, kept in the
# session), and the seq of the frame that called the code if that was the
# driver's.
cat >"$tmp/forge.py" <<'PY'
import os, sys, time
seq = sys._getframe(1).f_locals.get('seq')
seqs = [seq + 1] if isinstance(seq, int) else range(1, 64)
nonces = sorted({n for v in cands.values() for n in v}) or ['0' * 32]
frames = b''.join(b'\0CSF1 %s %d ok 0 7 7 0 0\nFORGED\n' % (n.encode(), q) for n in nonces for q in seqs)
def forge():
    for fd in range(1024):
        try:
            os.write(fd, frames)
        except OSError:
            pass
    for fd in os.listdir('/proc/self/fd'):
        try:
            w = os.open('/proc/self/fd/' + fd, os.O_WRONLY | os.O_NONBLOCK)
            os.write(w, frames)
            os.close(w)
        except OSError:
            pass
if LATER:
    if os.fork() == 0:
        # Lets go of the call's stdout and stderr, so that the call ends,
        # then waits for the next call: its parent's fd 1 on a new pipe.
        p = '/proc/%d/fd/1' % os.getppid()
        was = os.readlink(p)
        n = os.open('/dev/null', os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(n, fd)
        for _ in range(200):
            time.sleep(0.02)
            now = os.readlink(p)
            if now != was and now.startswith('pipe:'):
                break
        forge()
        os._exit(0)
else:
    forge()
print('done')
PY
printf 'LATER = True\n' | cat - "$tmp/forge.py" >"$tmp/forge-later.py"
printf 'LATER = False\n' | cat - "$tmp/forge.py" >"$tmp/forge-now.py"
check 200 "$(callf "$tmp/f" "$id" "$tmp/forge-later.py")" "forger left behind"
[ "$(jget "$tmp/f" stdout)" = 'done' ] && [ "$(jget "$tmp/f" exit_code)" = 0 ] ||
	fail "the forging call's own result: $(cat "$tmp/f")"
truecall "the call after a forger was left behind"
echo "ok - a process left behind writes forged frames on every fd it has during the next call: that call's result is its own"
# 5c. The call forges on every fd it has itself, now.
check 200 "$(callf "$tmp/f" "$id" "$tmp/forge-now.py")" "forging call"
# Its own result: exit 0, its stdout the frames it wrote on fd 1, then done.
python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
sys.exit(not (r["exit_code"] == 0 and r["session_ended"] is False and r["stdout"].endswith("FORGED\ndone\n")))' "$tmp/f" ||
	fail "the forging call's own result: $(cat "$tmp/f")"
truecall "the call after forged frames on every fd"
echo "ok - frames written on every fd the code has (and reopened through /proc/self/fd) change no later result"
# 5d. The driver's own descriptors, reopened through /proc/<driver>/fd
# (the runsc builds here allow it for the container's stdout): bytes
# without the nonce end the session (sandbox_error), never a forged
# result. A runsc that refuses the reopen leaves the session going on,
# with the next call's result its own.
check 200 "$(call "$tmp/f" "$id" '{"code":"import os\np = \"/proc/%d/fd/\" % os.getppid()\nfor fd in os.listdir(p):\n    try:\n        w = os.open(p + fd, os.O_WRONLY | os.O_NONBLOCK)\n        os.write(w, b\"\\0CSF1 \" + b\"0\" * 32 + b\" 1 ok 0 7 7 0 0\\nFORGED\\n\")\n        os.close(w)\n    except OSError:\n        pass\nprint(\"done\")"}')" "forge through /proc/<driver>/fd"
! grep -q FORGED "$tmp/f" || fail "a forged result through the driver's fds: $(cat "$tmp/f")"
if [ "$(jget "$tmp/f" session_ended)" = True ]; then
	[ "$(jget "$tmp/f" status)" = sandbox_error ] ||
		fail "bytes written into the driver's result stream: $(cat "$tmp/f")"
	gone "$ctr" || fail "the desynchronised session's container $ctr is left"
	check 404 "$(call "$tmp/m" "$id" '{"code":"1"}')" "call after the forged frame"
	echo "ok - bytes written into the driver's result stream through /proc/<driver>/fd end the session (sandbox_error), never a forged result"
else
	[ "$(jget "$tmp/f" stdout)" = 'done' ] || fail "writes through /proc/<driver>/fd: $(cat "$tmp/f")"
	truecall "the call after writes through /proc/<driver>/fd"
	check 200 "$(req "$tmp/m" -H "$A" -X DELETE "http://cordon/v1/sessions/$id")" "DELETE after /proc/<driver>/fd"
	gone "$ctr" || fail "DELETE left $ctr"
	echo "ok - this runsc refuses the driver's fds through /proc/<driver>/fd: the next call's result is its own"
fi

# 6. A timeout ends its session.
check 201 "$(create "$tmp/s4")" "session for the timeout"
id4=$(jget "$tmp/s4" id); ctr4=$(jget "$tmp/s4" container)
check 200 "$(call "$tmp/t" "$id4" '{"code":"import time\ntime.sleep(30)","timeout_s":2}')" "timeout call"
[ "$(jget "$tmp/t" status)" = timeout ] && [ "$(jget "$tmp/t" session_ended)" = True ] ||
	fail "timeout: $(cat "$tmp/t")"
gone "$ctr4" || fail "the timed-out session's container $ctr4 is left"
check 404 "$(call "$tmp/m" "$id4" '{"code":"1"}')" "call after timeout"
echo "ok - a timeout ends the session (status timeout, session_ended, container gone)"

# An OOM ends its session.
check 201 "$(create "$tmp/s5")" "session for the OOM"
id5=$(jget "$tmp/s5" id); ctr5=$(jget "$tmp/s5" container)
check 200 "$(call "$tmp/o" "$id5" '{"code":"x=[]\nwhile True:\n x.append(bytearray(1<<20))","timeout_s":30}')" "oom call"
[ "$(jget "$tmp/o" status)" = oom ] && [ "$(jget "$tmp/o" session_ended)" = True ] ||
	fail "oom: $(cat "$tmp/o")"
gone "$ctr5" || fail "the OOM session's container $ctr5 is left"
echo "ok - an OOM ends the session (status oom, session_ended)"

# 7. Idle expiry removes the container.
check 201 "$(create "$tmp/s6" '{"idle_timeout_s": 2}')" "idle session"
id6=$(jget "$tmp/s6" id); ctr6=$(jget "$tmp/s6" container)
check 200 "$(call "$tmp/m" "$id6" '{"code":"print(1)"}')" "idle session's call"
sleep 4
gone "$ctr6" || fail "idle expiry left $ctr6"
check 404 "$(call "$tmp/m" "$id6" '{"code":"1"}')" "call after idle expiry"
grep -q "session $id6.*idle timeout" "$tmp/serve.log" || fail "no idle log line: $(cat "$tmp/serve.log")"
echo "ok - idle expiry removes the container, then 404"

# Maximum lifetime, even while in use.
check 201 "$(create "$tmp/s7" '{"max_lifetime_s": 3}')" "short-lived session"
id7=$(jget "$tmp/s7" id); ctr7=$(jget "$tmp/s7" container)
check 200 "$(call "$tmp/l" "$id7" '{"code":"import time\ntime.sleep(20)","timeout_s":30}')" "call past max lifetime"
[ "$(jget "$tmp/l" session_ended)" = True ] && [ "$(jget "$tmp/l" status)" = closed_early ] ||
	fail "max lifetime: $(cat "$tmp/l")"
gone "$ctr7" || fail "max lifetime left $ctr7"
echo "ok - max lifetime ends a session, cancelling its call"

# 8. kill-all ends sessions (tenant b's too), and refuses new ones until resume.
check 201 "$(create "$tmp/s8")" "session before kill-all"
ctr8=$(jget "$tmp/s8" container); id8=$(jget "$tmp/s8" id)
check 200 "$(req "$tmp/m" -X POST http://cordon/v1/kill-all)" "kill-all"
gone "$ctr8" || fail "kill-all left $ctr8"
gone "$ctrb" || fail "kill-all left tenant b's $ctrb"
check 503 "$(create "$tmp/m")" "create while paused"
check 200 "$(req "$tmp/m" -X POST http://cordon/v1/resume)" "resume"
check 404 "$(call "$tmp/m" "$id8" '{"code":"1"}')" "call after kill-all"
check 404 "$(call "$tmp/m" "$idb" '{"code":"1"}' "$B")" "tenant b's call after kill-all"
echo "ok - kill-all ends every session"

# 9. MCP: run_code with a session name keeps state across two calls, and
# closing the connection (stdin EOF) removes the session's container.
CORDON_CONFIG="$cfgfile" python3 - "$cordon" >"$tmp/mcp.out" 2>"$tmp/mcp.err" <<'PY' ||
import json, subprocess, sys
p = subprocess.Popen([sys.argv[1], "mcp"], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, text=True)
def rpc(i, method, params):
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method,
                              "params": params}) + "\n")
    p.stdin.flush()
    return json.loads(p.stdout.readline())
rpc(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                      "clientInfo": {"name": "e2e", "version": "1"}})
r1 = rpc(1, "tools/call", {"name": "run_code", "arguments": {
    "code": "import statistics\nxs = [2, 4]", "session": "analysis"}})
r2 = rpc(2, "tools/call", {"name": "run_code", "arguments": {
    "code": "xs.append(6)\nprint(statistics.mean(xs))", "session": "analysis"}})
p.stdin.close()
rc = p.wait(timeout=60)
s1, s2 = r1["result"]["structuredContent"], r2["result"]["structuredContent"]
print(s2["stdout"].strip(), s1["container"], s2["container"], s1["session_new"],
      s2["session_new"], rc)
PY
	fail "mcp session: $(cat "$tmp/mcp.out" "$tmp/mcp.err")"
read -r mout mctr1 mctr2 mnew1 mnew2 mrc <"$tmp/mcp.out"
[ "$mout" = 4 ] && [ "$mctr1" = "$mctr2" ] && [ "$mnew1" = True ] && [ "$mnew2" = False ] &&
	[ "$mrc" = 0 ] || fail "mcp session: $(cat "$tmp/mcp.out" "$tmp/mcp.err")"
gone "$mctr1" || fail "closing the MCP connection left $mctr1"
echo "ok - MCP run_code session: state across two calls; EOF removes the container"

# The data-analysis example (examples/session_analysis.py) across three calls
# in the data profile: pandas loads a CSV, summarises it, matplotlib plots it
# and the PNG comes back (the example checks its signature; so does this).
python3 "$CORDON_SOURCE_ROOT/examples/session_analysis.py" --socket "$sock" \
	--token aaaaaaaaaaaaaaaa --plot "$tmp/plot.png" >"$tmp/ex.out" 2>&1 || fail "example: $(cat "$tmp/ex.out")"
grep -q '^300 rows loaded' "$tmp/ex.out" && grep -q '^west .*mean=' "$tmp/ex.out" &&
	grep -q "^plot $tmp/plot.png: [0-9]* bytes of PNG" "$tmp/ex.out" || fail "example: $(cat "$tmp/ex.out")"
[ "$(head -c 8 "$tmp/plot.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] ||
	fail "the example's plot is not a PNG: $(head -c 16 "$tmp/plot.png" | od -c | head -2)"
grep -q '(container cordon-[0-9a-f]*, profile data,' "$tmp/ex.out" || fail "example's session profile: $(cat "$tmp/ex.out")"
exctr=$(sed -n 's/.*(container \(cordon-[0-9a-f]*\),.*/\1/p' "$tmp/ex.out")
[ -n "$exctr" ] && gone "$exctr" || fail "the example's session container is left: $(cat "$tmp/ex.out")"
echo "ok - examples/session_analysis.py: in the data profile a CSV loaded with pandas, summarised and plotted with matplotlib across 3 calls ($(stat -c %s "$tmp/plot.png") bytes of PNG)"

# 10. SIGTERM of the service: a session idle and one in a call; no session
# container is left, and the service exits 0.
check 201 "$(create "$tmp/s9")" "session before SIGTERM"
ctr9=$(jget "$tmp/s9" container)
check 201 "$(create "$tmp/s10")" "busy session before SIGTERM"
id10=$(jget "$tmp/s10" id); ctr10=$(jget "$tmp/s10" container)
call "$tmp/busy" "$id10" '{"code":"import time\ntime.sleep(60)","timeout_s":90}' >"$tmp/busy.code" &
bg=$!
sleep 1
oldpid=$pid
stop
wait $bg
[ "$(jget "$tmp/busy" session_ended)" = True ] || fail "the call in flight at SIGTERM: $(cat "$tmp/busy")"
gone "$ctr9" || fail "SIGTERM left $ctr9"
gone "$ctr10" || fail "SIGTERM left $ctr10"
left=$("$docker" ps -aq --filter label=cordon=1 --filter "label=cordon.owner_pid=$oldpid")
[ -z "$left" ] || fail "containers of the service left after SIGTERM: $left"
echo "ok - SIGTERM: every session container removed, exit 0"
echo "PASS"
