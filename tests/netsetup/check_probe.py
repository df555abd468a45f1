#!/usr/bin/env python3
"""Checks one probe result (probe.py output) for the netsetup e2e test.
usage: check_probe.py host|sealed CFG.json OUT.json
'host': an unsealed sandbox, so only the host's rules stand between it and
the host; 'sealed': the sandbox's own netns rules are in place too (they
apply only under runsc --network=host). Either way: every TCP connection,
to any address and port, lands on the proxy (the explicit proxy's port on
the explicit proxy, every other on its transparent listener), so it
completes but no real service's marker ever comes back; nothing answers
UDP but DNS, nor ICMP; DNS to any server address is answered by the
proxy's resolver (an A record for the allowed name, NXDOMAIN for the
others, never the test's own DNS servers' marker address); the system
resolver is the proxy's, through the resolv.conf the runner mounts."""
import json, sys

mode, cfg, out = sys.argv[1], json.load(open(sys.argv[2])), None
try:
    out = json.loads(open(sys.argv[3]).read().strip().splitlines()[-1])
except Exception as e:
    print("FAIL: no probe output (%s)" % e)
    sys.exit(1)
gw = cfg["gateway"]
bad = []
def want(cond, what):
    if not cond:
        bad.append(what)
want(out["uid"] == 65534, "not uid 65534: %r" % out["uid"])
want(out["env_proxy"].startswith("http://") and
     out["env_proxy"].endswith("@%s:%d" % (gw, cfg["proxy_port"])), "HTTP_PROXY is %r" % out["env_proxy"])
# The explicit proxy, unchanged (its port is not redirected).
want(out["nocred"].get("status") == 407, "a request without the credential got %r, not 407" % out["nocred"])
a = out["allowed"]
want(a.get("status") == 200 and a.get("body", "").startswith("cordon-upstream-ok"),
     "allowlisted name did not reach the upstream through the proxy: %r" % a)
want(out["denied"].get("status") == 403, "non-allowlisted name did not get 403: %r" % out["denied"])

# TCP: everything completes (on the proxy), nothing says a marker.
not_open = out["tcp_not_open"]
want(not not_open, "TCP connections that did not land on the proxy: %s" %
     {k: (len(v), v[:8]) for k, v in not_open.items()})
want(out["tcp_open"] == out["scanned"], "open %d of %d scanned" % (out["tcp_open"], out["scanned"]))
want(out["tcp_markers"] == [], "a real service answered a sandbox: %r" % out["tcp_markers"])
for t, v in out["other_results"].items():
    want(t not in out["tcp_markers"], "%s answered with a marker (%s)" % (t, v))

# UDP but DNS, and ICMP: nothing answers.
for t, v in out["udp"].items():
    want(not v.startswith("answered"), "UDP %s answered: %s" % (t, v))
for t, v in out["icmp"].items():
    want(not v.startswith("reply"), "ICMP echo to %s answered: %s" % (t, v))
# Where the stack has ping sockets (netstack), they work: loopback replies.
# (Under --network=host gVisor has none: the sandbox cannot send ICMP.)
want(out["icmp_loopback"].startswith("reply") or out["icmp_loopback"].startswith("no ping socket"),
     "ICMP to 127.0.0.1 got %s: the ICMP checks would prove nothing" % out["icmp_loopback"])
for port, v in out["ipv6"].items():
    want(v != "open", "IPv6 [%s]:%s is reachable" % (cfg["bridge_v6"], port))

# DNS to any server address: the proxy's resolver answers.
for key, r in out["dns"].items():
    server, name = key.split(" ", 1)
    if "error" in r:
        want(False, "DNS %s for %s: %s (the proxy's resolver did not answer)" % (server, name, r["error"]))
        continue
    want(cfg["marker_ip"] not in r["a"], "DNS %s for %s came from a test server: %r" % (server, name, r))
    if name == cfg["allowed_name"]:
        want(r["rcode"] == 0 and r["a"], "DNS %s for the allowed %s: %r, not an A record" % (server, name, r))
    else:
        want(r["rcode"] == 3 and not r["a"], "DNS %s for the denied %s: %r, not NXDOMAIN" % (server, name, r))

# The system resolver, through the mounted resolv.conf.
want(out["resolv_conf"] == cfg["resolv_conf"], "/etc/resolv.conf is %r, not %r" %
     (out["resolv_conf"], cfg["resolv_conf"]))
for n, v in out["resolve"].items():
    if n == cfg["allowed_name"]:
        want(v.startswith("resolved "), "the allowed %s did not resolve inside: %s" % (n, v))
    else:
        want(v.startswith("failed"), "%s resolved inside: %s" % (n, v))
if mode == "sealed":
    want("error" in out["udp53_embedded"],
         "Docker's embedded DNS answered a sealed sandbox: %s" % out["udp53_embedded"])
summary = {k: out[k] for k in ("scanned", "scan_seconds", "tcp_markers", "other_results", "udp", "icmp",
                                "icmp_loopback",
                                "ipv6", "resolve", "udp53_embedded")}
summary["tcp_open"] = out["tcp_open"]
summary["tcp_not_open"] = {k: len(v) for k, v in not_open.items()}
summary["tcp_said"] = out["tcp_said"]
summary["dns"] = {k: v for k, v in sorted(out["dns"].items())}
print("%s sandbox: %s" % (mode, json.dumps(summary)))
for b in bad:
    print("FAIL (%s sandbox): %s" % (mode, b))
sys.exit(1 if bad else 0)
