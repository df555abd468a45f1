#!/usr/bin/env python3
# A data-analysis session against `cordon serve` (POST /v1/sessions), with
# the standard library only, on both sides: the first call loads a CSV into
# a variable of the session's interpreter, the second computes statistics
# on that variable and draws a text bar chart, the third writes an SVG plot
# to /tmp (which persists too) and reads it back. Then the session is
# ended (DELETE). The image has no plotting library, so the plot is drawn
# by hand.
#   python3 examples/session_analysis.py [--socket /run/cordon/serve.sock]
#                                        [--token TOKEN]
# What comes back from a call is data produced by sandboxed code, exactly
# as untrusted as that code: print it, do not follow it.
import argparse
import http.client
import json
import socket
import sys


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout=120):
        super().__init__("cordon", timeout=timeout)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.path)


def request(args, method, path, body=None):
    conn = UnixHTTPConnection(args.socket)
    headers = {"Content-Type": "application/json"}
    if args.token:
        headers["Authorization"] = "Bearer " + args.token
    conn.request(method, path, json.dumps(body) if body is not None else None,
                 headers)
    r = conn.getresponse()
    data = json.loads(r.read() or b"{}")
    conn.close()
    if r.status >= 300:
        sys.exit("%s %s: HTTP %d: %s" % (method, path, r.status,
                                         data.get("error", data)))
    return data


# Call 1: make (or, in real use, receive) a CSV and parse it once.
LOAD = r'''
import csv, io, random
rnd = random.Random(7)
buf = io.StringIO()
w = csv.writer(buf)
w.writerow(["day", "region", "units"])
for day in range(300):
    region = rnd.choice(["north", "south", "west"])
    w.writerow([day, region, max(0, int(rnd.gauss(40 if region == "west" else 30, 8)))])
open("/tmp/sales.csv", "w").write(buf.getvalue())
rows = list(csv.DictReader(open("/tmp/sales.csv")))
print(len(rows), "rows loaded")
'''

# Call 2: uses `rows` from call 1.
STATS = r'''
import statistics
by_region = {}
for r in rows:
    by_region.setdefault(r["region"], []).append(int(r["units"]))
means = {k: statistics.mean(v) for k, v in sorted(by_region.items())}
for k, v in sorted(by_region.items()):
    print("%-6s n=%3d mean=%5.1f stdev=%4.1f %s" % (
        k, len(v), means[k], statistics.stdev(v), "#" * round(means[k])))
'''

# Call 3: uses `means` from call 2; the plot file stays in /tmp.
PLOT = r'''
bars = "".join(
    '<rect x="%d" y="%d" width="40" height="%d"/><text x="%d" y="195">%s</text>'
    % (20 + 60 * i, 180 - 3 * m, 3 * m, 20 + 60 * i, k)
    for i, (k, m) in enumerate(sorted((k, round(v)) for k, v in means.items())))
open("/tmp/plot.svg", "w").write(
    '<svg xmlns="http://www.w3.org/2000/svg" width="220" height="200">%s</svg>' % bars)
import os
print("plot.svg", os.path.getsize("/tmp/plot.svg"), "bytes;", open("/tmp/plot.svg").read()[:40])
'''


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--socket", default="/run/cordon/serve.sock")
    p.add_argument("--token", default="")
    args = p.parse_args()
    s = request(args, "POST", "/v1/sessions", {"idle_timeout_s": 120})
    print("session %s (container %s, started in %d ms)" % (
        s["id"], s["container"], s["start_ms"]))
    try:
        for code in (LOAD, STATS, PLOT):
            r = request(args, "POST", "/v1/sessions/%s/runs" % s["id"],
                        {"code": code, "timeout_s": 30})
            if r["status"] != "ok" or r["exit_code"] != 0:
                sys.exit("call failed: %s %s" % (r["status"], r["stderr"]))
            # Untrusted output: shown, never interpreted.
            sys.stdout.write(r["stdout"])
    finally:
        request(args, "DELETE", "/v1/sessions/%s" % s["id"])


if __name__ == "__main__":
    main()
