#!/usr/bin/env python3
"""A client of `cordon serve`'s NDJSON replies, for e2e_stream.sh.

live_client.py SOCKET BODYFILE timed
    Sends the run, reads events as they come; prints one JSON object:
    {"status": HTTP status, "type": content type, "events": [[t, event]...]}
    (t: seconds since the request was sent).
live_client.py SOCKET BODYFILE stall SECONDS PID
    Sends the run and reads nothing for SECONDS (the reply piles up in the
    service), sampling the service's (PID) VmRSS meanwhile; then reads it
    all. Prints {"status", "events", "rss_kb": [samples]}.
"""
import json
import socket
import sys
import time


def rss_kb(pid):
    with open("/proc/%s/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def main():
    sock, body, mode = sys.argv[1], open(sys.argv[2], "rb").read(), sys.argv[3]
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock)
    t0 = time.monotonic()
    s.sendall(b"POST /v1/runs HTTP/1.1\r\nHost: cordon\r\n"
              b"Accept: application/x-ndjson\r\nConnection: close\r\n"
              b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n"
              % len(body) + body)
    samples = []
    if mode == "stall":
        end = time.monotonic() + float(sys.argv[4])
        while time.monotonic() < end:
            samples.append(rss_kb(sys.argv[5]))
            time.sleep(0.2)
    f = s.makefile("rb")
    status = int(f.readline().split()[1])
    headers = {}
    while True:
        line = f.readline().strip()
        if not line:
            break
        k, _, v = line.decode().partition(":")
        headers[k.strip().lower()] = v.strip()
    events, buf = [], b""
    chunked = headers.get("transfer-encoding") == "chunked"
    while True:
        if chunked:
            n = int(f.readline().strip(), 16)
            if n == 0:
                break
            data = f.read(n)
            f.readline()
        else:
            data = f.read()
            if not data:
                break
        buf += data
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            events.append([round(time.monotonic() - t0, 3),
                           json.loads(line)])
    out = {"status": status, "type": headers.get("content-type"),
           "events": events}
    if not chunked and buf:
        out["body"] = json.loads(buf)
    if samples:
        out["rss_kb"] = samples
    print(json.dumps(out))


main()
