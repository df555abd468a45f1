#!/usr/bin/env bash
# End-to-end test of TLS inspection (issue 15 part 2) with real dockerd,
# iptables, cordon-proxy and a gVisor sandbox, through the real runner
# (`cordon run --net proxy`). Own network, bridge, subnet, state dir,
# allowlist and secrets store (a test config). Proves:
#  1. `net up` makes the egress CA (key 0600 root, cert and bundle 0644) and
#     a second `net up` keeps it;
#  2. Python urllib inside the sandbox, with HTTPS_PROXY, reaches a local TLS
#     upstream (certificate from a test CA made here) on an inspected entry:
#     it verifies the proxy's leaf from the mounted bundle, and upstream sees
#     the secret as Authorization (the client's own header replaced); a path
#     outside the entry gets 403 path-not-allowed inside TLS;
#  3. the secret is in neither `docker inspect`'s env, nor the mounted
#     files, nor /proc/self/environ inside, nor the proxy's log;
#  4. an SNI-mismatch attempt from inside appears in the run's egress report
#     (made first: the report keeps one reason per host, port and decision).
# Fails (never skips) when something is missing, unless CORDON_E2E=skip.
. "$CORDON_SOURCE_ROOT/tests/lib/e2e.sh" || exit 1
step() { echo "--- $(date +%T) $*"; }

here="$CORDON_SOURCE_ROOT/tests/netsetup"
[ "$(id -u)" = 0 ] || missing "must run as root (iptables, docker networks)"
for t in iptables ip python3 openssl; do
	command -v "$t" >/dev/null || missing "no $t"
done
e2e_need_docker /usr/bin/docker
. "$CORDON_SOURCE_ROOT/tests/netsetup/teardown.sh"
e2e_need_runtime cordon-egress
e2e_need_image
img=$id

net='cordon-e2e-in'
br=cordonE2E3
subnet=10.213.247.0/24
secret="Bearer e2e-$(python3 -I -c 'import secrets; print(secrets.token_hex(12))')"
T=$(mktemp -d /tmp/cordon-intest.XXXXXX)
chmod 755 "$T"
export CORDON_CONFIG="$T/cordon.json"
cat >"$CORDON_CONFIG" <<EOF
{"egress_network": "$net", "egress_bridge": "$br", "egress_subnet": "$subnet",
 "state_dir": "$T/state", "runtime_egress": "cordon-egress",
 "audit_log": "$T/audit.log", "image": {"id": "$img"}, "require_probe": false,
 "egress_default_policy": "pol", "egress_secrets": "$T/secrets"}
EOF
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
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

step "a test CA and an upstream certificate for api.example.com"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
	-subj /CN=cordon-e2e-test-ca -keyout "$T/tca.key" -out "$T/tca.pem" \
	-addext basicConstraints=critical,CA:TRUE 2>"$T/openssl.err" ||
	fail "openssl: $(cat "$T/openssl.err")"
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	-subj /CN=api.example.com -keyout "$T/up.key" -out "$T/up.csr" 2>>"$T/openssl.err" &&
	printf 'subjectAltName=DNS:api.example.com\n' >"$T/up.ext" &&
	openssl x509 -req -in "$T/up.csr" -CA "$T/tca.pem" -CAkey "$T/tca.key" \
		-CAcreateserial -days 2 -extfile "$T/up.ext" -out "$T/up.pem" 2>>"$T/openssl.err" ||
	fail "openssl: $(cat "$T/openssl.err")"
chmod 644 "$T/tca.pem"

step "host services: stub DNS, a TLS upstream on 127.0.0.2 that records Authorization"
python3 "$here/hostsvc.py" --out "$T/svc.json" --dns 127.0.0.1 \
	--name api.example.com=127.0.0.2 &
pids+=($!)
cat >"$T/tlsup.py" <<'PY'
import http.server, json, ssl, sys
out, cert, key, log = sys.argv[1:5]
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        with open(log, "a") as f:
            f.write(json.dumps({"path": self.path,
                "auth": self.headers.get_all("Authorization")}) + "\n")
        body = b"ok-tls"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
s = http.server.ThreadingHTTPServer(("127.0.0.2", 0), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
s.socket = ctx.wrap_socket(s.socket, server_side=True)
open(out + ".tmp", "w").write(str(s.server_address[1]))
import os; os.rename(out + ".tmp", out)
s.serve_forever()
PY
python3 "$T/tlsup.py" "$T/tlsport" "$T/up.pem" "$T/up.key" "$T/upstream.log" &
pids+=($!)
for _ in $(seq 300); do [ -s "$T/svc.json" ] && [ -s "$T/tlsport" ] && break; sleep 0.1; done
[ -s "$T/svc.json" ] && [ -s "$T/tlsport" ] || fail "host services did not start"
dns_port=$(jget "$T/svc.json" 'd["dns"]')
port=$(cat "$T/tlsport")

mkdir "$T/lists"
printf 'api.example.com:%s inspect methods=GET paths=/v1/* inject=Authorization:api-key\n' \
	"$port" >"$T/lists/pol.list"
chmod -R a+rX "$T/lists"
printf 'api-key=%s\n' "$secret" >"$T/secrets"
chmod 600 "$T/secrets"

up() {
	"$cordon" net up --allowlist "$T/lists" \
		--proxy-arg=--resolver=127.0.0.1:"$dns_port" \
		--proxy-arg=--allow-address=127.0.0.2 \
		--proxy-arg=--upstream-ca="$T/tca.pem" >"$T/up.txt" 2>&1 ||
		fail "net up: $(cat "$T/up.txt")"
}
step "1. cordon net up makes the egress CA; again keeps it"
up
cadir="$T/state/egress-ca"
[ "$(stat -c '%a %U' "$cadir/ca.key")" = "600 root" ] || fail "ca.key is $(stat -c '%a %U' "$cadir/ca.key")"
[ "$(stat -c '%a' "$cadir/ca.crt") $(stat -c '%a' "$cadir/ca-bundle.pem")" = "644 644" ] ||
	fail "ca.crt/ca-bundle.pem modes: $(stat -c '%a' "$cadir/ca.crt" "$cadir/ca-bundle.pem")"
sum1=$(sha256sum <"$cadir/ca.key")
up
[ "$(sha256sum <"$cadir/ca.key")" = "$sum1" ] || fail "a second net up made a new CA key"
tail -c 2000 "$cadir/ca-bundle.pem" | grep -q "END CERTIFICATE" || fail "bundle has no CA"
echo "ok: CA made once, modes 600/644/644"

step "2-4. a run: urllib through HTTPS_PROXY, a refused path, an SNI mismatch, the secret nowhere inside"
cat >"$T/job.py" <<PY
import os, socket, ssl, time, urllib.request, urllib.error
from urllib.parse import urlsplit
secret = "$secret"
# Domain fronting: CONNECT the allowed name, then TLS naming another.
p = urlsplit(os.environ["HTTPS_PROXY"])
s = socket.create_connection((p.hostname, p.port), timeout=20)
import base64
cred = base64.b64encode(("%s:%s" % (p.username, p.password)).encode()).decode()
s.sendall(("CONNECT api.example.com:$port HTTP/1.1\r\nHost: x\r\n"
    "Proxy-Authorization: Basic %s\r\n\r\n" % cred).encode())
print("connect", s.recv(4096).split(b"\r\n")[0].decode())
try:
    ssl.create_default_context().wrap_socket(s, server_hostname="other.example.net")
    print("fronting passed")
except Exception as e:
    print("fronting refused")
req = urllib.request.Request("https://api.example.com:$port/v1/items?q=1",
    headers={"Authorization": "Bearer from-the-sandbox"})
try:
    r = urllib.request.urlopen(req, timeout=20)
    print("allowed", r.status, r.read().decode())
except Exception as e:
    print("allowed error", repr(e))
try:
    urllib.request.urlopen("https://api.example.com:$port/admin", timeout=20)
    print("refused 200")
except urllib.error.HTTPError as e:
    print("refused", e.code, e.headers.get("X-Cordon-Error"))
except Exception as e:
    print("refused error", repr(e))
env = open("/proc/self/environ", "rb").read().decode(errors="replace")
files = ""
for d, _, names in os.walk("/etc/cordon"):
    for n in names:
        files += open(os.path.join(d, n), errors="replace").read()
print("secret in environ", secret in env, "in files", secret in files,
      "bundle vars", os.environ.get("SSL_CERT_FILE"), os.environ.get("REQUESTS_CA_BUNDLE"))
open("/tmp/ready", "w").close()
print("READY", flush=True)
time.sleep(4)
PY
"$cordon" run --net proxy <"$T/job.py" >"$T/run.json" 2>"$T/run.err" &
rr=$!
# While the job sleeps: its container's configuration.
for _ in $(seq 200); do
	cid=$("$docker" ps -q --filter label=cordon=1 --filter network="$net" | head -1)
	[ -n "$cid" ] && break
	sleep 0.1
done
[ -n "$cid" ] || fail "no running container on $net"
sleep 2
"$docker" inspect "$cid" >"$T/inspect.json" || fail "docker inspect $cid"
wait "$rr" || fail "run: $(cat "$T/run.err" "$T/run.json")"
out=$(jget "$T/run.json" 'd["stdout"]')
echo "$out"
echo "$out" | grep -qx "allowed 200 ok-tls" || fail "the inspected request did not get through: $(cat "$T/run.json")"
echo "$out" | grep -qx "refused 403 path-not-allowed" || fail "no 403 path-not-allowed: $out"
echo "$out" | grep -qx "connect HTTP/1.1 200 Connection established" || fail "CONNECT: $out"
echo "$out" | grep -qx "fronting refused" || fail "domain fronting passed: $out"
echo "$out" | grep -qx "secret in environ False in files False bundle vars /etc/cordon/ca-bundle.pem /etc/cordon/ca-bundle.pem" ||
	fail "secret or bundle inside: $out"
python3 -I -c 'import json,sys; a=[json.loads(l) for l in open(sys.argv[1])]
sys.exit(0 if len(a) == 1 and a[0]["path"] == "/v1/items?q=1" and a[0]["auth"] == [sys.argv[2]] else 1)' \
	"$T/upstream.log" "$secret" || fail "upstream saw: $(cat "$T/upstream.log")"
echo "ok: upstream saw exactly one request, with the injected secret only"
grep -qF "${secret#Bearer }" "$T/inspect.json" && fail "the secret is in docker inspect"
grep -q '"Destination": "/etc/cordon/ca-bundle.pem"' "$T/inspect.json" || fail "no bundle mount in docker inspect"
grep -q '"RW": false' "$T/inspect.json" || fail "the bundle mount is not read-only"
plog="$T/state/net-$br/proxy.log"
alog="$T/state/net-$br/access.log"
grep -qF "${secret#Bearer }" "$plog" "$alog" && fail "the secret is in the proxy's logs"
grep -q '"path":"/v1/items","inspected":true' "$alog" || fail "no inspected line in the access log: $(tail -n5 "$alog")"
echo "ok: the secret is in neither docker inspect, the mounted files, /proc/self/environ nor the proxy log"
# The report keys entries by (host, port, decision) with the first
# attempt's reason: the fronting attempt came first, the 403 counts with it.
jget "$T/run.json" '[(e["host"], e["decision"], e.get("reason"), e["count"]) for e in d["egress"]]' >"$T/egress.txt"
grep -qF "('api.example.com', 'denied', 'sni-mismatch', 2)" "$T/egress.txt" ||
	fail "no sni-mismatch (with the 403) in the run's egress: $(cat "$T/egress.txt")"
grep -qF "('api.example.com', 'allowed', 'allowed-by-entry'" "$T/egress.txt" ||
	fail "no allowed entry in the run's egress: $(cat "$T/egress.txt")"
echo "ok: egress report: $(cat "$T/egress.txt")"
"$cordon" net down >"$T/down.txt" 2>&1 || fail "net down: $(cat "$T/down.txt")"
[ -f "$cadir/ca.key" ] || fail "net down removed the egress CA"
echo "ok: net down keeps the CA"
echo "PASS in $(( $(date +%s) - start )) s"
