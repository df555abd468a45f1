# In-sandbox probe for the netsetup end-to-end test (runs under gVisor as
# uid 65534; the test prepends a line `CFG = {...}`). Prints one JSON object
# with what was reachable. Only connects to the gateway, the other sandbox,
# the test's dummy address, 169.254.169.254 and TEST-NET-2 (198.51.100.1),
# whose packets the host drops (the network is --internal).
import errno, json, os, select, socket, struct, threading, time, urllib.error, urllib.request

cfg = CFG  # noqa: F821 (prepended by the test)
out = {"uid": os.getuid(), "env_proxy": os.environ.get("HTTP_PROXY", "")}

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

def scan(targets, timeout, batch=180):
    """Non-blocking connects; returns {(host,port): 'open'|'refused'|'timeout'|errname}."""
    res = {}
    for i in range(0, len(targets), batch):
        socks = {}
        for t in targets[i:i + batch]:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setblocking(False)
            rc = s.connect_ex(t)
            if rc in (0, errno.EINPROGRESS):
                socks[s] = t
                if rc == 0:
                    res[t] = "open"
            else:
                res[t] = "refused" if rc == errno.ECONNREFUSED else errno.errorcode.get(rc, str(rc))
                s.close()
        end = time.monotonic() + timeout
        pending = {s: t for s, t in socks.items() if t not in res}
        while pending and time.monotonic() < end:
            _, w, _ = select.select([], list(pending), [], max(0, end - time.monotonic()))
            for s in w:
                t = pending.pop(s)
                e = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                res[t] = "open" if e == 0 else ("refused" if e == errno.ECONNREFUSED else errno.errorcode.get(e, str(e)))
        for t in pending.values():
            res[t] = "timeout"
        for s in socks:
            s.close()
    return res

gw = cfg["gateway"]
targets = [(gw, p) for p in range(1, 1025)] + [(gw, p) for p in cfg["gateway_extra_ports"]]
targets += [tuple(t) for t in cfg["other_targets"]]
t0 = time.monotonic()
r = scan(targets, cfg["scan_timeout"])
out["scan_seconds"] = round(time.monotonic() - t0, 2)
out["scanned"] = len(targets)
out["open"] = sorted("%s:%d" % t for t, v in r.items() if v == "open")
out["refused"] = sorted("%s:%d" % t for t, v in r.items() if v == "refused")
out["other_results"] = {"%s:%d" % tuple(t): r[tuple(t)] for t in cfg["other_targets"]}
out["states"] = sorted(set(r.values()))

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
        v6[port] = "error " + errno.errorcode.get(e.errno, str(e.errno))
    finally:
        s.close()
out["ipv6"] = v6

def udp_query(addr, name, timeout=1.5):
    q = struct.pack(">HHHHHH", 0x4242, 0x0100, 1, 0, 0, 0)
    q += b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\0" + struct.pack(">HH", 1, 1)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(timeout)
    try:
        s.sendto(q, addr)
        d, _ = s.recvfrom(2048)
        return "answered rcode=%d ancount=%d" % (d[3] & 15, struct.unpack(">H", d[6:8])[0])
    except socket.timeout:
        return "no answer"
    except OSError as e:
        return "error " + errno.errorcode.get(e.errno, str(e.errno))
    finally:
        s.close()

dns = {}
def resolve(name):
    try:
        dns[name] = "resolved " + socket.getaddrinfo(name, 80, socket.AF_INET)[0][4][0]
    except Exception as e:
        dns[name] = "failed: " + str(e)
ths = [threading.Thread(target=resolve, args=(n,), daemon=True) for n in cfg["names"]]
for t in ths:
    t.start()
out["udp53_gateway"] = udp_query((gw, 53), cfg["names"][0])
out["udp53_embedded"] = udp_query(("127.0.0.11", 53), cfg["names"][-1])
try:
    out["resolv_conf"] = open("/etc/resolv.conf").read().split("\n")
except OSError as e:
    out["resolv_conf"] = str(e)
end = time.monotonic() + 15
for t in ths:
    t.join(max(0, end - time.monotonic()))
out["resolve"] = {n: dns.get(n, "timeout (still trying after 15 s)") for n in cfg["names"]}
print(json.dumps(out))
