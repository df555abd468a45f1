#!/usr/bin/env python3
"""Checks one probe result (probe.py output) for the netsetup e2e test.
usage: check_probe.py host|sealed CFG.json OUT.json
'host': an unsealed sandbox, so only the host firewall stands between it and
the host (dropped packets: nothing may even be refused). 'sealed': the
sandbox's own netns rules are in place too, and no name may resolve."""
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
want(out["nocred"].get("status") == 407, "a request without the credential got %r, not 407" % out["nocred"])
a = out["allowed"]
want(a.get("status") == 200 and a.get("body", "").startswith("cordon-upstream-ok"),
     "allowlisted name did not reach the upstream through the proxy: %r" % a)
want(out["denied"].get("status") == 403, "non-allowlisted name did not get 403: %r" % out["denied"])
want(out["open"] == ["%s:%d" % (gw, cfg["proxy_port"])],
     "reachable directly (only the proxy may be): %r" % out["open"])
if mode == "host":
    want(out["refused"] == [], "host answered (RST) instead of dropping: %r" % out["refused"][:20])
for t, v in out["other_results"].items():
    want(v != "open", "%s is reachable (%s)" % (t, v))
for port, v in out["ipv6"].items():
    want(v != "open", "IPv6 [%s]:%s is reachable" % (cfg["bridge_v6"], port))
want(out["udp53_gateway"] != "answered" and not out["udp53_gateway"].startswith("answered"),
     "UDP 53 on the gateway answered: %s" % out["udp53_gateway"])
for n in cfg["names"][:-1]:
    want(not out["resolve"][n].startswith("resolved"), "%s resolved inside: %s" % (n, out["resolve"][n]))
if mode == "sealed":
    n = cfg["names"][-1]
    want(not out["resolve"][n].startswith("resolved"), "%s resolved inside a sealed sandbox: %s" % (n, out["resolve"][n]))
    want(not out["udp53_embedded"].startswith("answered"),
         "Docker's embedded DNS answered a sealed sandbox: %s" % out["udp53_embedded"])
summary = {k: out[k] for k in ("scanned", "scan_seconds", "open", "states", "other_results", "ipv6",
                                "udp53_gateway", "udp53_embedded", "resolve")}
summary["refused_count"] = len(out["refused"])
print("%s sandbox: %s" % (mode, json.dumps(summary)))
for b in bad:
    print("FAIL (%s sandbox): %s" % (mode, b))
sys.exit(1 if bad else 0)
