#!/usr/bin/env python3
"""Test for examples/fetch_allowlisted.py, run on the host (no Docker) the
way `cordon run --net proxy` runs it: HTTPS_PROXY names a proxy on
127.0.0.1 with a run's credential in it. The stand-in proxy refuses every
CONNECT with 403, as cordon-proxy refuses a denied host, and records what
it was asked. Checks that the output never holds the credential (user,
token, or its Basic form), that both URLs went through the proxy with the
credential, and, with the real `cordon allowlist explain`, that the
example's DENIED_URL is denied and its URL allowed by the shipped lists."""
import base64
import os
import re
import socket
import subprocess
import sys
import threading
import unittest

ROOT = os.environ.get("CORDON_SOURCE_ROOT",
                      os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("CORDON_BUILD_ROOT", os.path.join(ROOT, "build"))
CORDON = os.environ.get("CORDON_BIN", os.path.join(BUILD, "cordon"))
EXAMPLE = os.path.join(ROOT, "examples", "fetch_allowlisted.py")
LISTS = os.path.join(ROOT, "examples", "allowlists")

USER = "cordon-run-5f2a9c"
TOKEN = "t0ken-Zq81xYw"


class RefusingProxy:
    """Accepts on 127.0.0.1, reads one request head per connection,
    answers 403 and closes. heads: every head received."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.heads = []
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            with c:
                c.settimeout(10)
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = c.recv(4096)
                    if not chunk:
                        break
                    data += chunk
                self.heads.append(data.decode("latin-1"))
                c.sendall(b"HTTP/1.1 403 Forbidden\r\n"
                          b"Content-Length: 0\r\nConnection: close\r\n\r\n")

    def close(self):
        self.sock.close()


def example_urls():
    src = open(EXAMPLE).read()
    url = re.search(r'^URL = "([^"]+)"', src, re.M).group(1)
    denied = re.search(r'^DENIED_URL = "([^"]+)"', src, re.M).group(1)
    return url, denied


def explain(lst, url):
    r = subprocess.run([CORDON, "allowlist", "explain",
                        os.path.join(LISTS, lst), url, "--secrets="],
                       capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout + r.stderr


class FetchAllowlisted(unittest.TestCase):
    def test_output_never_holds_the_credential(self):
        proxy = RefusingProxy()
        try:
            env = {k: v for k, v in os.environ.items()
                   if "proxy" not in k.lower()}
            env["HTTPS_PROXY"] = "http://%s:%s@127.0.0.1:%d" % (
                USER, TOKEN, proxy.port)
            env["HTTP_PROXY"] = env["HTTPS_PROXY"]
            env["PYTHONDONTWRITEBYTECODE"] = "1"
            r = subprocess.run([sys.executable, EXAMPLE], env=env,
                               capture_output=True, text=True, timeout=60)
        finally:
            proxy.close()
        out = r.stdout + r.stderr
        self.assertEqual(r.returncode, 0, out)
        basic = base64.b64encode(("%s:%s" % (USER, TOKEN)).encode()).decode()
        for secret in (TOKEN, USER, basic):
            self.assertNotIn(secret, out)
        self.assertIn("proxy: http://127.0.0.1:%d (credential not shown)"
                      % proxy.port, out)
        url, denied = example_urls()
        for u in (url, denied):
            self.assertRegex(out, re.escape(u) + r" -> failed: .*403")
        # Both went to the proxy, as CONNECTs carrying the credential.
        hosts = [h.split()[1] for h in proxy.heads if h]
        self.assertEqual(sorted(hosts), sorted(
            "%s:443" % re.match(r"https://([^/]+)/", u).group(1)
            for u in (url, denied)))
        for h in proxy.heads:
            self.assertIn("Proxy-Authorization: Basic " + basic, h)

    def test_denied_url_is_denied_by_the_shipped_lists(self):
        url, denied = example_urls()
        for lst in ("default.list", "pypi.list"):
            code, out = explain(lst, denied)
            self.assertEqual(code, 1, "%s %s: %s" % (lst, denied, out))
            self.assertTrue(out.startswith("deny "), out)
        code, out = explain("pypi.list", url)
        self.assertEqual(code, 0, out)
        self.assertTrue(out.startswith("allow "), out)


if __name__ == "__main__":
    unittest.main(verbosity=2)
