#!/usr/bin/env python3
# A data-analysis session against `cordon serve` (POST /v1/sessions) in the
# `data` image profile (numpy, pandas, matplotlib, scipy): the CSV goes in
# with the session's creation (`files`: read-only at /in for the session's
# life), the first call loads it into a pandas DataFrame, the
# second summarises that DataFrame, the third draws a bar chart of the
# summary with matplotlib into /tmp (which persists too) and sends the PNG
# back base64-encoded on stdout; this script checks its PNG signature and
# writes it to --plot. Then the session is ended (DELETE). The client side
# uses the standard library only.
#   python3 examples/session_analysis.py [--socket /run/cordon/serve.sock]
#       [--token TOKEN] [--profile data] [--plot session_plot.png]
# The data profile is built with `cordon image build --profile data` and
# probed with `cordon probe --net none --profile data`.
# What comes back from a call is data produced by sandboxed code, exactly
# as untrusted as that code: it is shown and decoded, never followed.
import argparse
import base64
import csv
import http.client
import io
import json
import random
import socket
import sys

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


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


# Call 1: load the CSV that came with the session, once.
LOAD = r'''
import pandas as pd
df = pd.read_csv("/in/sales.csv")
print(len(df), "rows loaded")
'''

# Call 2: uses `df` from call 1.
STATS = r'''
summary = df.groupby("region")["units"].agg(["count", "mean", "std"])
for name, row in summary.iterrows():
    print("%-6s n=%3d mean=%5.1f stdev=%4.1f" % (
        name, row["count"], row["mean"], row["std"]))
'''

# Call 3: uses `summary` from call 2; the PNG stays in /tmp and comes back
# base64-encoded between two marker lines.
PLOT = r'''
import base64
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
fig, ax = plt.subplots(figsize=(4, 3), dpi=80)
ax.bar(summary.index, summary["mean"], yerr=summary["std"], capsize=4)
ax.set_ylabel("units per day")
ax.set_title("mean units by region")
fig.tight_layout()
fig.savefig("/tmp/plot.png")
print("-----BEGIN PNG-----")
print(base64.b64encode(open("/tmp/plot.png", "rb").read()).decode())
print("-----END PNG-----")
'''


def sales_csv():
    """A day-by-region sales table (in real use: the agent's data)."""
    rnd = random.Random(7)
    out = io.StringIO()
    w = csv.writer(out)
    w.writerow(["day", "region", "units"])
    for day in range(300):
        region = rnd.choice(["north", "south", "west"])
        mean = 40 if region == "west" else 30
        w.writerow([day, region, max(0, round(rnd.gauss(mean, 8)))])
    return out.getvalue().encode()


def png_of(stdout):
    """The PNG between the marker lines of call 3's output."""
    try:
        b64 = stdout.split("-----BEGIN PNG-----\n", 1)[1].split(
            "\n-----END PNG-----", 1)[0]
        png = base64.b64decode(b64, validate=True)
    except (IndexError, ValueError):
        sys.exit("call 3 sent no PNG: %r" % stdout[:200])
    if not png.startswith(PNG_SIGNATURE):
        sys.exit("call 3 sent something that is not a PNG: %r" % png[:16])
    return png


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--socket", default="/run/cordon/serve.sock")
    p.add_argument("--token", default="")
    p.add_argument("--profile", default="data")
    p.add_argument("--plot", default="session_plot.png")
    args = p.parse_args()
    files = [{"path": "sales.csv",
              "content_b64": base64.b64encode(sales_csv()).decode()}]
    s = request(args, "POST", "/v1/sessions",
                {"idle_timeout_s": 120, "profile": args.profile,
                 "files": files})
    print("session %s (container %s, profile %s, started in %d ms)" % (
        s["id"], s["container"], s["profile"], s["start_ms"]))
    try:
        for code in (LOAD, STATS, PLOT):
            r = request(args, "POST", "/v1/sessions/%s/runs" % s["id"],
                        {"code": code, "timeout_s": 60})
            if r["status"] != "ok" or r["exit_code"] != 0:
                sys.exit("call failed: %s %s" % (r["status"], r["stderr"]))
            if code is PLOT:
                png = png_of(r["stdout"])
                with open(args.plot, "wb") as f:
                    f.write(png)
                print("plot %s: %d bytes of PNG" % (args.plot, len(png)))
            else:
                # Untrusted output: shown, never interpreted.
                sys.stdout.write(r["stdout"])
    finally:
        request(args, "DELETE", "/v1/sessions/%s" % s["id"])


if __name__ == "__main__":
    main()
