#!/usr/bin/env python3
"""Host-side services for the netsetup end-to-end tests: a stub DNS server
(UDP, answers A records from --name NAME=IP, or every A question with
--wildcard IP, NXDOMAIN otherwise), an HTTP upstream that returns a marker,
plain TCP listeners that send a marker line on accept, and UDP echoes that
answer with the marker. Binds port 0 (DNS: --dns-port), writes
{"dns": port, "http": port, "tcp": {"ADDR": port}, "udp": {"ADDR": port}}
to --out, then serves until killed. With --log FILE it appends one JSON
line per accepted connection, datagram and DNS question (service, local
address, peer address, name), so a test can prove a service never saw a
sandbox. Only ever binds the addresses it is given."""
import argparse, json, os, socket, struct, threading, http.server, socketserver

log_lock = threading.Lock()
log_path = None

def log(svc, sock, peer, **kw):
    if not log_path:
        return
    local = sock.getsockname()
    rec = {"svc": svc, "local": "%s:%d" % local[:2], "peer": "%s:%d" % peer[:2]}
    rec.update(kw)
    with log_lock, open(log_path, "a") as f:
        f.write(json.dumps(rec) + "\n")

def dns_answer(q, names, wildcard):
    if len(q) < 12:
        return None, None
    tid, flags, qd = struct.unpack(">HHH", q[:6])
    if qd != 1:
        return None, None
    i, labels = 12, []
    while i < len(q) and q[i] != 0:
        n = q[i]; labels.append(q[i + 1:i + 1 + n].decode("ascii", "replace")); i += 1 + n
    i += 1
    if i + 4 > len(q):
        return None, None
    qtype, qclass = struct.unpack(">HH", q[i:i + 4])
    question = q[12:i + 4]
    name = ".".join(labels).lower().rstrip(".")
    ip = names.get(name, wildcard)
    if ip is None:
        return struct.pack(">HHHHHH", tid, 0x8183, 1, 0, 0, 0) + question, name
    if qtype != 1:  # no AAAA etc.: NOERROR, no answer
        return struct.pack(">HHHHHH", tid, 0x8180, 1, 0, 0, 0) + question, name
    ans = b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 5, 4) + socket.inet_aton(ip)
    return struct.pack(">HHHHHH", tid, 0x8180, 1, 1, 0, 0) + question + ans, name

def serve_dns(sock, names, wildcard):
    while True:
        q, peer = sock.recvfrom(2048)
        r, name = dns_answer(q, names, wildcard)
        log("dns", sock, peer, name=name)
        if r:
            sock.sendto(r, peer)

class Upstream(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"cordon-upstream-ok " + self.headers.get("Host", "").encode() + b"\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass

class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True

def accept_forever(sock, marker):
    while True:
        c, peer = sock.accept()
        log("tcp", sock, peer)
        try:
            c.sendall(marker.encode() + b"\n")
        except OSError:
            pass
        finally:
            c.close()

def echo_forever(sock, marker):
    while True:
        d, peer = sock.recvfrom(2048)
        log("udp", sock, peer)
        sock.sendto(marker.encode() + b" " + d[:64], peer)

def main():
    global log_path
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--dns", help="ADDR to serve DNS on (UDP)")
    ap.add_argument("--dns-port", type=int, default=0)
    ap.add_argument("--name", action="append", default=[])
    ap.add_argument("--wildcard", help="answer every other A question with this IP")
    ap.add_argument("--http", help="ADDR for the HTTP upstream")
    ap.add_argument("--tcp", action="append", default=[])
    ap.add_argument("--udp", action="append", default=[])
    ap.add_argument("--marker", default="host-service")
    ap.add_argument("--log")
    a = ap.parse_args()
    log_path = a.log
    res = {"tcp": {}, "udp": {}}
    if a.dns:
        names = dict(n.split("=", 1) for n in a.name)
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind((a.dns, a.dns_port))
        res["dns"] = s.getsockname()[1]
        threading.Thread(target=serve_dns, args=(s, names, a.wildcard), daemon=True).start()
    if a.http:
        srv = Server((a.http, 0), Upstream)
        res["http"] = srv.server_address[1]
        threading.Thread(target=srv.serve_forever, daemon=True).start()
    for addr in a.tcp:
        s = socket.socket(socket.AF_INET6 if ":" in addr else socket.AF_INET)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((addr, 0) if ":" not in addr else (addr, 0, 0, 0))
        s.listen(64)
        res["tcp"][addr] = s.getsockname()[1]
        threading.Thread(target=accept_forever, args=(s, a.marker), daemon=True).start()
    for addr in a.udp:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind((addr, 0))
        res["udp"][addr] = s.getsockname()[1]
        threading.Thread(target=echo_forever, args=(s, a.marker), daemon=True).start()
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(res, f)
    os.rename(tmp, a.out)
    threading.Event().wait()

main()
