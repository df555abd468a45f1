#!/usr/bin/env bash
# End-to-end: who may run Cordon, with real users this test creates
# (useradd) and removes (also on failure), real dockerd and runsc.
#  - A user outside the `docker` group: `cordon run`, `probe` and `gc` exit
#    1 with one line, "docker-unavailable: cannot reach docker: permission
#    denied on /var/run/docker.sock: run cordon as root, or as a member of
#    the `docker` group ..." (no result, no probe report, no container);
#    `cordon mcp` answers isError "Cordon could not run the code: ..." (not
#    untrusted program output); `cordon doctor` says "FAIL docker:
#    permission denied on the Docker socket", not "not running"; `cordon
#    serve` refuses at start with the same line; `cordon net up` says it
#    needs root.
#  - A user in the `docker` group: refused by the audit rule when its
#    audit log cannot be written, with the host's default config as with
#    its own (the audit check comes before the probe record, so what it
#    sees does not depend on the host's probe state); with config
#    audit_required false the run goes ahead and warns; with an audit log
#    it can write the run succeeds and its line is there. serve refuses
#    at start with the default config (the audit log) and with a socket
#    directory it cannot make (saying who may run it), and serves with
#    directories of its own, as the shipped systemd unit runs it. Its own
#    configs use require_probe false in a state_dir of
#    its own (it cannot write the host's probe records).
# The binary is copied where the users can reach it (CI's clone may sit
# under a directory only root can enter). Fails (never skips) without
# Docker, the runtime or the image, unless CORDON_E2E=skip.
. "$(dirname "$0")/../lib/e2e.sh" || exit 1
sock=/var/run/docker.sock
[ "$(id -u)" = 0 ] || fail "this test creates users: run it as root"
for t in useradd userdel setpriv python3 curl; do
	command -v "$t" >/dev/null || fail "no $t"
done
e2e_need_docker
e2e_need_runtime cordon-offline
getent group docker >/dev/null || fail "no docker group"
[ "$(stat -c %G "$sock")" = docker ] && [ $(( 0$(stat -c %a "$sock") & 6 )) = 0 ] ||
	fail "$sock is not group docker without access for others: $(stat -c '%A %U:%G' "$sock")"
e2e_need_image

e2e_tmpdir cordon-e2e-access
chmod 755 "$tmp"
session="e2e-access-$$"
out="cordon-e2e-o$$"		# outside the docker group
grp="cordon-e2e-g$$"		# in it
made=()
spid=
cleanup() {
	if [ -n "$spid" ]; then kill -TERM "$spid" 2>/dev/null; wait "$spid" 2>/dev/null; fi
	for u in "${made[@]}"; do
		userdel "$u" 2>/dev/null || echo "cleanup: userdel $u failed" >&2
		getent group "$u" >/dev/null && groupdel "$u" 2>/dev/null
	done
	e2e_rm_containers --filter "label=cordon.session=$session"
}
useradd -M -U -d "$tmp/home-$out" -s /usr/sbin/nologin "$out" || fail "useradd $out"
made+=("$out")
useradd -M -U -G docker -d "$tmp/home-$grp" -s /usr/sbin/nologin "$grp" || fail "useradd $grp"
made+=("$grp")
for u in "$out" "$grp"; do
	mkdir -m 700 "$tmp/home-$u" && chown "$u:" "$tmp/home-$u"
done
mkdir -m 755 "$tmp/bin" && cp "$cordon" "$tmp/bin/cordon" && chmod 755 "$tmp/bin/cordon" ||
	fail "cannot copy the binary"
bin="$tmp/bin/cordon"
# as USER [VAR=VALUE...] ARGS...: runs the copied cordon as USER with its
# own groups (the docker group's membership included) and home.
as() {
	local u=$1; shift
	local vars=()
	while [ $# -gt 0 ] && [[ $1 == *=* ]]; do vars+=("$1"); shift; done
	setpriv --reuid="$u" --regid="$(id -g "$u")" --init-groups \
		env -u CORDON_CONFIG HOME="$tmp/home-$u" USER="$u" "${vars[@]}" "$bin" "$@"
}
containers() {
	"$docker" ps -aq --filter label=cordon=1 --filter "label=cordon.session=$session" | wc -l
}
# one_line NAME FILE PATTERN: FILE is one line matching the ERE PATTERN.
one_line() {
	[ "$(wc -l <"$2")" = 1 ] || fail "$1: not one line: $(cat "$2")"
	grep -Eq -- "$3" "$2" || fail "$1: $(cat "$2")"
}
denied='docker-unavailable: cannot reach docker: permission denied on /var/run/docker.sock: run cordon as root, or as a member of the `docker` group \(root-equivalent; README "Who may run Cordon" has the audit rule\)$'
as "$out" -h >/dev/null 2>&1
[ $? = 126 ] && fail "$out cannot execute $bin"

# 1. Outside the docker group.
echo 'print(1)' | as "$out" run --session "$session" >"$tmp/run.out" 2>"$tmp/run.err"
rc=$?
[ $rc = 1 ] || fail "run as $out: exit $rc, stdout $(cat "$tmp/run.out"), stderr $(cat "$tmp/run.err")"
[ -s "$tmp/run.out" ] && fail "run as $out printed a result: $(cat "$tmp/run.out")"
one_line "run" "$tmp/run.err" "^cordon run: $denied"
echo "ok: run: exit 1, $(cat "$tmp/run.err")"

as "$out" probe >"$tmp/probe.out" 2>"$tmp/probe.err"
rc=$?
[ $rc = 1 ] || fail "probe as $out: exit $rc"
[ -s "$tmp/probe.out" ] && fail "probe as $out printed a report: $(head -c 300 "$tmp/probe.out")"
one_line "probe" "$tmp/probe.err" "^cordon probe: $denied"
echo "ok: probe: exit 1, no report of failed controls"

as "$out" gc >"$tmp/gc.out" 2>"$tmp/gc.err"
rc=$?
[ $rc = 1 ] || fail "gc as $out: exit $rc"
one_line "gc" "$tmp/gc.err" "^cordon gc: ${denied%\$} \(removed 0\)$"
echo "ok: gc: exit 1, the whole line"

as "$out" doctor >"$tmp/doctor.out" 2>&1
rc=$?
[ $rc = 1 ] || fail "doctor as $out: exit $rc: $(cat "$tmp/doctor.out")"
head -n 1 "$tmp/doctor.out" | grep -q '^FAIL docker: permission denied on the Docker socket' ||
	fail "doctor as $out: $(cat "$tmp/doctor.out")"
grep -q 'not running' "$tmp/doctor.out" && fail "doctor as $out says not running: $(cat "$tmp/doctor.out")"
sed -n 2p "$tmp/doctor.out" | grep -q '^     hint: run cordon as root, or as a member of the `docker` group' ||
	fail "doctor's hint: $(cat "$tmp/doctor.out")"
echo "ok: doctor: $(head -n 1 "$tmp/doctor.out" | cut -c1-100)..."

as "$out" net up >"$tmp/net.out" 2>"$tmp/net.err"
rc=$?
[ $rc = 1 ] || fail "net up as $out: exit $rc"
one_line "net up" "$tmp/net.err" '^cordon net up: needs root \(.*\): run it as root$'
[ -s "$tmp/net.out" ] && fail "net up as $out: $(cat "$tmp/net.out")"
as "$out" serve --socket "$tmp/serve.sock" >"$tmp/serve.out" 2>"$tmp/serve.err"
rc=$?
[ $rc = 1 ] || fail "serve as $out: exit $rc"
one_line "serve" "$tmp/serve.err" "^cordon serve: $denied"
[ -e "$tmp/serve.sock" ] && fail "serve as $out made its socket"
echo "ok: net up needs root; serve refuses at start with the docker line"

printf '%s\n' \
	'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}' \
	'{"jsonrpc":"2.0","method":"notifications/initialized"}' \
	"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"run_code\",\"arguments\":{\"code\":\"print(1)\",\"session\":\"$session\"}}}" |
	as "$out" mcp >"$tmp/mcp.out" 2>"$tmp/mcp.err"
python3 - "$tmp/mcp.out" "${denied%\$}" <<'PY' || fail "mcp as $out: $(cat "$tmp/mcp.out" "$tmp/mcp.err")"
import json, re, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
r = [m for m in lines if m.get("id") == 2][0]["result"]
assert r["isError"] is True, r
texts = [c["text"] for c in r["content"]]
assert len(texts) == 1 and "structuredContent" not in r, r
assert re.match("^Cordon could not run the code: " + sys.argv[2], texts[0]), texts
assert "Untrusted" not in texts[0], texts
PY
echo "ok: mcp: isError, Cordon could not run the code: docker-unavailable: ..."
[ "$(containers)" = 0 ] || fail "a container was created for $out"

# 2. In the docker group.
mkdir -m 755 "$tmp/rootonly" "$tmp/state-grp" "$tmp/audit-grp"
chown "$grp:" "$tmp/state-grp" "$tmp/audit-grp"
cfg() {	# cfg FILE AUDIT_LOG AUDIT_REQUIRED
	printf '{"state_dir":"%s/state-grp","audit_log":"%s","audit_required":%s,"require_probe":false,"image":{"id":"%s"}}\n' \
		"$tmp" "$2" "$3" "$id" >"$1"
	chmod 644 "$1"
}
cfg "$tmp/c-refused.json" "$tmp/rootonly/audit.log" true
cfg "$tmp/c-optional.json" "$tmp/rootonly/audit.log" false
cfg "$tmp/c-ok.json" "$tmp/audit-grp/audit.log" true

echo 'print(1)' | as "$grp" run --session "$session" >"$tmp/g0.out" 2>"$tmp/g0.err"
rc=$?
[ $rc = 1 ] || fail "run as $grp, default config: exit $rc: $(cat "$tmp/g0.out" "$tmp/g0.err")"
one_line "run as $grp, default config" "$tmp/g0.err" \
	'^cordon run: cannot write the audit log /var/log/cordon/audit.log: .*: no run without its audit line \(.*audit_required.*\)$'
echo "ok: $grp, default config: $(cat "$tmp/g0.err")"

echo 'print(1)' | as "$grp" CORDON_CONFIG="$tmp/c-refused.json" run --session "$session" \
	>"$tmp/g1.out" 2>"$tmp/g1.err"
rc=$?
[ $rc = 1 ] || fail "run as $grp, audit log not writable: exit $rc: $(cat "$tmp/g1.out" "$tmp/g1.err")"
[ -s "$tmp/g1.out" ] && fail "a refused run printed a result: $(cat "$tmp/g1.out")"
one_line "run as $grp" "$tmp/g1.err" \
	"^cordon run: cannot write the audit log $tmp/rootonly/audit.log: Permission denied: no run without its audit line"
[ "$(containers)" = 0 ] || fail "a container was created for a refused run"
echo "ok: $grp, audit log not writable: refused, no container"

echo 'print(1)' | as "$grp" CORDON_CONFIG="$tmp/c-optional.json" run --session "$session" \
	>"$tmp/g2.out" 2>"$tmp/g2.err"
rc=$?
[ $rc = 0 ] || fail "run as $grp, audit_required false: exit $rc: $(cat "$tmp/g2.err")"
grep -q '^{"status":"ok","exit_code":0,"stdout":"1\\n"' "$tmp/g2.out" ||
	fail "run as $grp, audit_required false: $(cat "$tmp/g2.out")"
one_line "its warning" "$tmp/g2.err" \
	"^cordon run: warning: audit log $tmp/rootonly/audit.log: Permission denied$"
[ -e "$tmp/rootonly/audit.log" ] && fail "an audit log appeared in a root-only directory"
echo "ok: $grp, audit_required false: ran, warned"

echo 'print(1)' | as "$grp" CORDON_CONFIG="$tmp/c-ok.json" run --session "$session" \
	>"$tmp/g3.out" 2>"$tmp/g3.err"
rc=$?
[ $rc = 0 ] || fail "run as $grp, writable audit log: exit $rc: $(cat "$tmp/g3.err")"
[ -s "$tmp/g3.err" ] && fail "run as $grp, writable audit log, said: $(cat "$tmp/g3.err")"
name=$(sed -n 's/.*"container":"\(cordon-[0-9a-f]*\)".*/\1/p' "$tmp/g3.out")
[ -n "$name" ] || fail "no container in $(cat "$tmp/g3.out")"
grep -q "\"container\":\"$name\"" "$tmp/audit-grp/audit.log" ||
	fail "no audit line for $name: $(cat "$tmp/audit-grp/audit.log" 2>&1)"
echo "ok: $grp, writable audit log: ran, audit line for $name"

as "$grp" doctor >"$tmp/gdoctor.out" 2>&1
head -n 1 "$tmp/gdoctor.out" | grep -q '^OK   docker: dockerd ' ||
	fail "doctor as $grp: $(head -n 3 "$tmp/gdoctor.out")"
# serve: the default config's audit log refuses it at start; a socket
# directory it cannot make says who may run it; with directories of its
# own (what examples/systemd/cordon-serve.service sets up) it serves.
as "$grp" serve --socket "$tmp/serve.sock" >/dev/null 2>"$tmp/gserve0.err"
[ $? = 1 ] || fail "serve ran as $grp with the default config"
one_line "serve as $grp" "$tmp/gserve0.err" '^cordon serve: cannot write the audit log /var/log/cordon/audit.log: '
as "$grp" CORDON_CONFIG="$tmp/c-ok.json" serve --socket "$tmp/rootonly/s/serve.sock" \
	>/dev/null 2>"$tmp/gserve1.err"
[ $? = 1 ] || fail "serve ran as $grp with a root-only socket directory"
one_line "serve as $grp" "$tmp/gserve1.err" \
	"^cordon serve: $tmp/rootonly/s: Permission denied: cordon serve needs root, or a user in the \`docker\` group that owns"
mkdir -m 750 "$tmp/sock-grp" && chown "$grp:" "$tmp/sock-grp"
# Not through as(): $! must be cordon's own pid (setpriv and env exec).
# Its state_dir has no probe record, so it probes at once (as this user),
# and a TERM waits for that probe to end.
setpriv --reuid="$grp" --regid="$(id -g "$grp")" --init-groups \
	env -u CORDON_CONFIG HOME="$tmp/home-$grp" USER="$grp" CORDON_CONFIG="$tmp/c-ok.json" \
	"$bin" serve --socket "$tmp/sock-grp/serve.sock" >/dev/null 2>"$tmp/gserve2.err" &
spid=$!
for _ in $(seq 100); do [ -S "$tmp/sock-grp/serve.sock" ] && break; sleep 0.2; done
code=$(curl -s -o "$tmp/health.json" -w '%{http_code}' --max-time 20 \
	--unix-socket "$tmp/sock-grp/serve.sock" http://cordon/v1/health)
kill -TERM "$spid"
wait "$spid"
src=$?
spid=
[ "$code" = 200 ] || fail "serve as $grp: /v1/health $code: $(cat "$tmp/health.json" "$tmp/gserve2.err")"
[ $src = 0 ] || fail "serve as $grp exited $src on TERM: $(cat "$tmp/gserve2.err")"
pgrep -u "$grp" >/dev/null && fail "processes of $grp left: $(pgrep -a -u "$grp")"
echo "ok: $grp: doctor sees docker; serve says who may run it, and serves with its own directories"
[ "$(containers)" = 0 ] || fail "containers left: $(containers)"
exit 0
