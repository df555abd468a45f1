# In-sandbox probe for the netsetup end-to-end test (runs under gVisor as
# uid 65534; the test prepends a line `CFG = {...}`). Prints one JSON object
# with what was reachable and what answered. Only sends to the gateway, the
# other sandbox, the test's own host address and namespace, 169.254.169.254
# and TEST-NET-2 (198.51.100.1): the host redirects TCP and DNS to the proxy
# on the gateway and drops everything else from the bridge.
import errno, json, os, select, socket, struct, threading, time, urllib.error, urllib.request

cfg = CFG  # noqa: F821 (prepended by the test)
out = {"uid": os.getuid(), "env_proxy": os.environ.get("HTTP_PROXY", "")}
MARKERS = [m.encode() for m in cfg["markers"]]

def fetch(url, opener=None):
    try:
        with (opener.open if opener else urllib.request.urlopen)(url, timeout=10) as r:
            return {"status": r.status, "body": r.read(200).decode("utf-8", "replace")}
    except urllib.error.HTTPError as e:
        return {"status": e.code}
    except Exception as e:
        return {"error": repr(e)}

# Through the proxy (urllib takes HTTP_PROXY from the environment).
out["allowed"] = fetch(cfg["allowed_url"])
out["denied"] = fetch(cfg["denied_url"])
# Without the credential: a proxy URL that has none.
out["nocred"] = fetch(cfg["allowed_url"], urllib.request.build_opener(urllib.request.ProxyHandler(
    {"http": "http://%s:%d" % (cfg["gateway"], cfg["proxy_port"])})))

def ename(e):
    return errno.errorcode.get(e, str(e))

def scan(targets, timeout, read_window, batch):
    """Non-blocking connects, batch by batch; each connection that
    completes is read for read_window seconds (sending nothing). Returns
    {(host,port): (state, first bytes)}, state 'open', 'refused',
    'timeout' or an errno name."""
    res = {}
    for i in range(0, len(targets), batch):
        socks, done = {}, {}
        for t in targets[i:i + batch]:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setblocking(False)
            rc = s.connect_ex(t)
            if rc in (0, errno.EINPROGRESS):
                socks[s] = t
                if rc == 0:
                    done[s] = "open"
            else:
                res[t] = ("refused" if rc == errno.ECONNREFUSED else ename(rc), b"")
                s.close()
        end = time.monotonic() + timeout
        pending = [s for s in socks if s not in done]
        while pending and time.monotonic() < end:
            _, w, _ = select.select([], pending, [], max(0, end - time.monotonic()))
            for s in w:
                pending.remove(s)
                e = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                done[s] = "open" if e == 0 else ("refused" if e == errno.ECONNREFUSED else ename(e))
        for s in pending:
            done[s] = "timeout"
        # What the open ones say unasked: a real service's marker comes at
        # once; the proxy's transparent listener waits for the client.
        got = {s: b"" for s, v in done.items() if v == "open"}
        end = time.monotonic() + read_window
        waiting = list(got)
        while waiting and time.monotonic() < end:
            r, _, _ = select.select(waiting, [], [], max(0, end - time.monotonic()))
            for s in r:
                try:
                    d = s.recv(64)
                except OSError:
                    d = b""
                got[s] += d
                if not d or len(got[s]) >= 64:
                    waiting.remove(s)
        for s, t in socks.items():
            res[t] = (done[s], got.get(s, b""))
            s.close()
    return res

gw = cfg["gateway"]
targets = [(gw, p) for p in range(1, 1025)] + [(gw, p) for p in cfg["gateway_extra_ports"]]
targets += [tuple(t) for t in cfg["other_targets"]]
t0 = time.monotonic()
r = scan(targets, cfg["scan_timeout"], cfg["read_window"], cfg["scan_batch"])
out["scan_seconds"] = round(time.monotonic() - t0, 2)
out["scanned"] = len(targets)
out["tcp_open"] = sum(1 for v, _ in r.values() if v == "open")
out["tcp_not_open"] = {}
for t, (v, _) in r.items():
    if v != "open":
        out["tcp_not_open"].setdefault(v, []).append("%s:%d" % t)
out["tcp_markers"] = sorted("%s:%d" % t for t, (_, d) in r.items() if any(m in d for m in MARKERS))
# What answered unasked (the proxy's refusals, e.g. 503 source-pending
# past --source-max-pending): each distinct first line once, and a count.
said = {}
for t, (_, d) in r.items():
    if d:
        said.setdefault(d.split(b"\r\n")[0].decode("latin-1"), []).append("%s:%d" % t)
out["tcp_said"] = {k: [len(v)] + v[:3] for k, v in said.items()}
out["other_results"] = {"%s:%d" % tuple(t): r[tuple(t)][0] for t in cfg["other_targets"]}

# UDP to anything but port 53: nothing may answer (the host drops it, or,
# under --network=host, the seal rejects it before it leaves).
def udp_probe(t, timeout):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(timeout)
    try:
        s.sendto(b"cordon-probe", tuple(t))
        d, _ = s.recvfrom(2048)
        return "answered " + d[:40].decode("latin-1")
    except socket.timeout:
        return "no answer"
    except OSError as e:
        return "error " + ename(e.errno)
    finally:
        s.close()
out["udp"] = {}
ths = []
for t in cfg["udp_targets"]:
    def one(t=t):
        out["udp"]["%s:%d" % tuple(t)] = udp_probe(t, cfg["scan_timeout"] * 2)
    ths.append(threading.Thread(target=one, daemon=True))

# ICMP echo with an unprivileged ping socket, where the stack has them.
def ping(addr, timeout):
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP)
    except OSError as e:
        return "no ping socket: " + ename(e.errno)
    s.settimeout(timeout)
    try:
        s.sendto(struct.pack(">BBHHH", 8, 0, 0, 0, 1) + b"cordon", (addr, 0))
        d, _ = s.recvfrom(2048)
        return "reply type %d" % d[0]
    except socket.timeout:
        return "no answer"
    except OSError as e:
        return "error " + ename(e.errno)
    finally:
        s.close()
out["icmp"] = {}
# The control: where ping sockets exist, loopback answers, so silence from
# the others is the host's doing.
out["icmp_loopback"] = ping("127.0.0.1", cfg["scan_timeout"] * 2)
for a in cfg["icmp_targets"]:
    def one(a=a):
        out["icmp"][a] = ping(a, cfg["scan_timeout"] * 2)
    ths.append(threading.Thread(target=one, daemon=True))

# IPv6: the network has none, so the bridge's link-local address (and a
# listener on [::]) must be unreachable too.
v6 = {}
for port in cfg["v6_ports"]:
    s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM) if socket.has_ipv6 else None
    if s is None:
        v6[port] = "no IPv6 sockets"
        continue
    s.settimeout(cfg["scan_timeout"])
    try:
        s.connect((cfg["bridge_v6"], port, 0, socket.if_nametoindex("eth0") if hasattr(socket, "if_nametoindex") else 0))
        v6[port] = "open"
    except socket.timeout:
        v6[port] = "timeout"
    except OSError as e:
        v6[port] = "error " + ename(e.errno)
    finally:
        s.close()
out["ipv6"] = v6

# DNS, asked straight of a server address (UDP or TCP), with an OPT record
# so that an answer can carry an Extended DNS Error (RFC 8914).
def dns_query(server, proto, name, timeout=3.0):
    q = struct.pack(">HHHHHH", 0x4242, 0x0100, 1, 0, 0, 1)
    q += b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\0" + struct.pack(">HH", 1, 1)
    q += b"\0" + struct.pack(">HHIH", 41, 1232, 0, 0)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM if proto == "udp" else socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        if proto == "udp":
            s.sendto(q, (server, 53))
            d, _ = s.recvfrom(4096)
        else:
            s.connect((server, 53))
            s.sendall(struct.pack(">H", len(q)) + q)
            d = b""
            while len(d) < 2 or len(d) < 2 + struct.unpack(">H", d[:2])[0]:
                c = s.recv(4096)
                if not c:
                    break
                d += c
            d = d[2:]
        return dns_parse(d)
    except socket.timeout:
        return {"error": "no answer"}
    except OSError as e:
        return {"error": ename(e.errno)}
    finally:
        s.close()

def dns_name_end(d, i):
    while i < len(d):
        n = d[i]
        if n == 0:
            return i + 1
        if n & 0xC0 == 0xC0:
            return i + 2
        i += 1 + n
    raise ValueError("truncated name")

def dns_parse(d):
    if len(d) < 12:
        return {"error": "short answer (%d bytes)" % len(d)}
    _, flags, qd, an, ns, ar = struct.unpack(">HHHHHH", d[:12])
    res = {"rcode": flags & 15, "a": [], "ede": None}
    i = 12
    try:
        for _ in range(qd):
            i = dns_name_end(d, i) + 4
        for k in range(an + ns + ar):
            i = dns_name_end(d, i)
            typ, _, _, rdlen = struct.unpack(">HHIH", d[i:i + 10])
            rd = d[i + 10:i + 10 + rdlen]
            i += 10 + rdlen
            if k < an and typ == 1 and rdlen == 4:
                res["a"].append(socket.inet_ntoa(rd))
            if typ == 41:
                j = 0
                while j + 4 <= len(rd):
                    code, olen = struct.unpack(">HH", rd[j:j + 4])
                    if code == 15 and olen >= 2:
                        res["ede"] = [struct.unpack(">H", rd[j + 4:j + 6])[0],
                                      rd[j + 6:j + 4 + olen].decode("utf-8", "replace")]
                    j += 4 + olen
    except (ValueError, struct.error) as e:
        res["parse_error"] = str(e)
    return res

out["dns"] = {}
for server, proto in cfg["dns_servers"]:
    for name in [cfg["allowed_name"]] + cfg["denied_names"]:
        def one(server=server, proto=proto, name=name):
            out["dns"]["%s/%s %s" % (server, proto, name)] = dns_query(server, proto, name)
        ths.append(threading.Thread(target=one, daemon=True))

# The system resolver (glibc, through the resolv.conf the runner mounts).
resolved = {}
def resolve(name):
    t = time.monotonic()
    try:
        resolved[name] = "resolved " + socket.getaddrinfo(name, 80, socket.AF_INET)[0][4][0]
    except Exception as e:
        resolved[name] = "failed: " + str(e)
    resolved[name] += " (%.1f s)" % (time.monotonic() - t)
for n in cfg["names"]:
    ths.append(threading.Thread(target=resolve, args=(n,), daemon=True))
for t in ths:
    t.start()
out["udp53_embedded"] = dns_query("127.0.0.11", "udp", cfg["names"][-1], 1.5)
try:
    out["resolv_conf"] = open("/etc/resolv.conf").read()
except OSError as e:
    out["resolv_conf"] = str(e)
end = time.monotonic() + 20
for t in ths:
    t.join(max(0, end - time.monotonic()))
out["resolve"] = {n: resolved.get(n, "timeout (still trying after 20 s)") for n in cfg["names"]}
print(json.dumps(out))
