#!/usr/bin/env python3
"""Captures real TLS ClientHellos as test fixtures for proxy/tlshello.c.

A listener on 127.0.0.1 saves the first bytes of each connection (up to the
end of the first handshake message) and closes; each client below connects
to it once. Run from this directory; writes hello-*.bin here. The fixtures
are committed: re-running is only needed to add clients (the bytes differ on
every run, the random and key shares change).
"""
import os
import socket
import ssl
import subprocess
import threading

HERE = os.path.dirname(os.path.abspath(__file__))


def read_hello(conn):
    """Reads records until the first handshake message is complete."""
    conn.settimeout(5)
    raw = b""
    hs = b""
    while True:
        while len(raw) < 5 or len(raw) < 5 + int.from_bytes(raw[3:5], "big"):
            chunk = conn.recv(65536)
            if not chunk:
                return raw
            raw += chunk
            if raw[0] != 0x16:
                return raw
        # Walk the records held so far.
        hs = b""
        off = 0
        while off + 5 <= len(raw):
            n = int.from_bytes(raw[off + 3:off + 5], "big")
            if off + 5 + n > len(raw):
                break
            hs += raw[off + 5:off + 5 + n]
            off += 5 + n
        if len(hs) >= 4 and len(hs) >= 4 + int.from_bytes(hs[1:4], "big"):
            return raw
        chunk = conn.recv(65536)
        if not chunk:
            return raw
        raw += chunk


def capture(name, client):
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    got = {}

    def accept():
        conn, _ = srv.accept()
        got["raw"] = read_hello(conn)
        conn.close()

    t = threading.Thread(target=accept)
    t.start()
    try:
        client(port)
    except Exception:
        pass  # the listener closes without answering
    t.join(10)
    srv.close()
    raw = got.get("raw", b"")
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(raw)
    print(f"{name}: {len(raw)} bytes")


def py_client(server_hostname, maxver=None, check=True):
    def run(port):
        ctx = ssl.create_default_context()
        if not check:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        if maxver is not None:
            ctx.maximum_version = maxver
        s = socket.create_connection(("127.0.0.1", port))
        s.settimeout(5)
        ctx.wrap_socket(s, server_hostname=server_hostname)
    return run


def openssl_client(*args):
    def run(port):
        subprocess.run(["openssl", "s_client", "-connect",
                        f"127.0.0.1:{port}", *args],
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=10)
    return run


def curl_client(host):
    def run(port):
        args = ["curl", "-s", "-o", "/dev/null", "--max-time", "5"]
        if host is not None:
            args += ["--resolve", f"{host}:{port}:127.0.0.1",
                     f"https://{host}:{port}/"]
        else:
            args += [f"https://127.0.0.1:{port}/"]
        subprocess.run(args, stdin=subprocess.DEVNULL, timeout=10)
    return run


def main():
    capture("hello-python-pypi.bin", py_client("pypi.org"))
    capture("hello-python-tls12.bin",
            py_client("files.pythonhosted.org", ssl.TLSVersion.TLSv1_2))
    capture("hello-python-nosni.bin", py_client(None, check=False))
    capture("hello-python-dot.bin", py_client("PyPI.org.", check=False))
    capture("hello-openssl-github.bin",
            openssl_client("-servername", "api.github.com"))
    capture("hello-openssl-nosni.bin", openssl_client("-noservername"))
    capture("hello-openssl-echo.bin",
            openssl_client("-servername", "echo.cordon-test.net"))
    capture("hello-curl-pypi.bin", curl_client("pypi.org"))
    capture("hello-curl-ip.bin", curl_client(None))


if __name__ == "__main__":
    main()
