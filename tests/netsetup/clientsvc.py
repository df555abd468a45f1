#!/usr/bin/python3
"""Host-side services for the clients end-to-end test (e2e_clients.sh):
what real clients in a proxy-mode sandbox reach through the proxy when they
never heard of it. All on --addr (127.0.0.2), ports picked by the kernel:

- dns: a stub upstream resolver on --dns-addr (UDP): every --name NAME
  gets --addr, anything else NXDOMAIN; each question is appended to --log
  as {"svc":"dns","name":...} (the test judges "never forwarded" by it);
- http: "cordon-upstream-ok HOST" for any GET;
- https: the same over TLS (--cert/--key), and static files from --root
  for paths under /simple/, /files/ and /repo.git/ (a pip index and a git
  repository served the "dumb" way);
- echo: a TCP echo;
- ssh: an SSH server (paramiko, Debian's python3-paramiko) that accepts
  the one --ssh-user key and runs `git-upload-pack` on --root/repo.git
  for a git clone over ssh.

Writes {"dns":..,"http":..,"https":..,"echo":..,"ssh":..} to --out, then
serves until killed. Runs under Debian's /usr/bin/python3 (paramiko)."""
import argparse, json, os, socket, ssl, struct, subprocess, threading
import http.server, socketserver

log_lock = threading.Lock()
args = None


def log(rec):
    with log_lock, open(args.log, "a") as f:
        f.write(json.dumps(rec) + "\n")


def dns_loop(sock, names):
    while True:
        q, peer = sock.recvfrom(2048)
        if len(q) < 12:
            continue
        tid, _, qd = struct.unpack(">HHH", q[:6])
        if qd != 1:
            continue
        i, labels = 12, []
        while i < len(q) and q[i] != 0:
            n = q[i]
            labels.append(q[i + 1:i + 1 + n].decode("ascii", "replace"))
            i += 1 + n
        i += 1
        if i + 4 > len(q):
            continue
        qtype = struct.unpack(">H", q[i:i + 2])[0]
        question = q[12:i + 4]
        name = ".".join(labels).lower()
        log({"svc": "dns", "name": name, "type": qtype})
        if name not in names:
            r = struct.pack(">HHHHHH", tid, 0x8183, 1, 0, 0, 0) + question
        elif qtype != 1:
            r = struct.pack(">HHHHHH", tid, 0x8180, 1, 0, 0, 0) + question
        else:
            r = (struct.pack(">HHHHHH", tid, 0x8180, 1, 1, 0, 0) + question +
                 b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 30, 4) +
                 socket.inet_aton(args.addr))
        sock.sendto(r, peer)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        path = self.path.split("?")[0]
        body = None
        if path.startswith(("/simple/", "/files/", "/repo.git/")):
            fs = os.path.realpath(os.path.join(args.root, path.lstrip("/")))
            if fs.startswith(os.path.realpath(args.root) + "/"):
                if os.path.isdir(fs):
                    fs = os.path.join(fs, "index.html")
                if os.path.isfile(fs):
                    with open(fs, "rb") as f:
                        body = f.read()
            if body is None:
                self.send_error(404)
                return
        else:
            body = ("cordon-upstream-ok %s\n" %
                    self.headers.get("Host", "")).encode()
        log({"svc": "https" if self.server.tls else "http", "path": path,
             "host": self.headers.get("Host", "")})
        self.send_response(200)
        self.send_header("Content-Type", "text/html" if path.startswith(
            "/simple/") else "application/octet-stream" if path.startswith(
            ("/files/", "/repo.git/")) else "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    tls = False


def echo_conn(c):
    with c:
        while True:
            b = c.recv(65536)
            if not b:
                return
            c.sendall(b)


def echo_loop(sock):
    while True:
        c, peer = sock.accept()
        log({"svc": "echo", "peer": peer[0]})
        threading.Thread(target=echo_conn, args=(c,), daemon=True).start()


def ssh_loop(sock):
    import paramiko

    host_key = paramiko.RSAKey.generate(2048)
    # The one key allowed: an authorized_keys line ("ssh-ed25519 AAAA...").
    with open(args.ssh_user) as f:
        blob = f.read().split()[1]

    class Srv(paramiko.ServerInterface):
        def __init__(self):
            self.cmd = None
            self.ready = threading.Event()

        def check_auth_publickey(self, username, key):
            ok = key.get_base64() == blob
            return paramiko.AUTH_SUCCESSFUL if ok else paramiko.AUTH_FAILED

        def get_allowed_auths(self, username):
            return "publickey"

        def check_channel_request(self, kind, chanid):
            return paramiko.OPEN_SUCCEEDED if kind == "session" else \
                paramiko.OPEN_FAILED_ADMINISTRATIVELY_PROHIBITED

        def check_channel_exec_request(self, channel, command):
            self.cmd = command.decode("utf-8", "replace")
            self.ready.set()
            return True

    def serve(c):
        t = paramiko.Transport(c)
        t.add_server_key(host_key)
        s = Srv()
        try:
            t.start_server(server=s)
            ch = t.accept(20)
            if ch is None or not s.ready.wait(20):
                return
            log({"svc": "ssh", "cmd": s.cmd})
            # git-upload-pack '/repo.git': only that, on our repository.
            if not s.cmd.startswith("git-upload-pack"):
                ch.send_exit_status(1)
                return
            p = subprocess.Popen(["git-upload-pack",
                                  os.path.join(args.root, "repo.git")],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE)

            def pump_in():
                while True:
                    b = ch.recv(65536)
                    if not b:
                        break
                    p.stdin.write(b)
                    p.stdin.flush()
                p.stdin.close()
            threading.Thread(target=pump_in, daemon=True).start()
            while True:
                b = p.stdout.read1(65536)
                if not b:
                    break
                ch.sendall(b)
            ch.send_exit_status(p.wait())
            ch.close()
            # The client closes the connection once it has the channel's
            # close: closing it first races ssh, which then prints
            # "Connection to ... closed by remote host" before the
            # clone's output (seen in CI). Wait for its close, briefly.
            t.join(10)
        except Exception as e:
            log({"svc": "ssh", "error": repr(e)})
        finally:
            t.close()

    while True:
        c, _ = sock.accept()
        threading.Thread(target=serve, args=(c,), daemon=True).start()


def listen(kind=socket.SOCK_STREAM, addr=None):
    s = socket.socket(socket.AF_INET, kind)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr or args.addr, 0))
    if kind == socket.SOCK_STREAM:
        s.listen(64)
    return s


def main():
    global args
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--addr", default="127.0.0.2")
    p.add_argument("--dns-addr", default="127.0.0.1")
    p.add_argument("--name", action="append", default=[])
    p.add_argument("--cert", required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--root", required=True)
    p.add_argument("--ssh-user", required=True)
    args = p.parse_args()
    dns = listen(socket.SOCK_DGRAM, args.dns_addr)
    threading.Thread(target=dns_loop, args=(dns, set(args.name)),
                     daemon=True).start()
    srv = {"dns": dns.getsockname()[1]}
    h = Server((args.addr, 0), Handler)
    threading.Thread(target=h.serve_forever, daemon=True).start()
    srv["http"] = h.server_address[1]
    hs = Server((args.addr, 0), Handler)
    hs.tls = True
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(args.cert, args.key)
    hs.socket = ctx.wrap_socket(hs.socket, server_side=True)
    threading.Thread(target=hs.serve_forever, daemon=True).start()
    srv["https"] = hs.server_address[1]
    e = listen()
    threading.Thread(target=echo_loop, args=(e,), daemon=True).start()
    srv["echo"] = e.getsockname()[1]
    s = listen()
    threading.Thread(target=ssh_loop, args=(s,), daemon=True).start()
    srv["ssh"] = s.getsockname()[1]
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(srv, f)
    os.rename(tmp, args.out)
    threading.Event().wait()


if __name__ == "__main__":
    main()
