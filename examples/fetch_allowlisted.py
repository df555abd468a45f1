# Fetch a URL through Cordon's allowlisting egress proxy with urllib (which
# honours the HTTPS_PROXY/HTTP_PROXY variables that `--net proxy` sets).
# With the proxy up and an allowlist that names the host, e.g.
#   sudo cordon net up --allowlist examples/allowlists/pypi.list
#   cordon run --net proxy < examples/fetch_allowlisted.py
# it prints the status and the start of the page; a host not on the list
# (DENIED_URL) is refused by the proxy, and without --net proxy there is no
# network at all. Change URL to something your allowlist permits.
import os
import sys
import urllib.error
import urllib.request

URL = "https://pypi.org/simple/pip/"
DENIED_URL = "https://example.com/"


def fetch(url, limit=400):
    req = urllib.request.Request(url, headers={"User-Agent": "cordon-example"})
    try:
        with urllib.request.urlopen(req, timeout=15) as r:
            body = r.read(limit).decode("utf-8", "replace")
            return "%s -> HTTP %d, %d bytes shown:\n%s" % (
                url, r.status, len(body), body)
    except urllib.error.HTTPError as e:
        return "%s -> HTTP %d %s" % (url, e.code, e.reason)
    except (urllib.error.URLError, OSError) as e:
        return "%s -> failed: %s" % (url, getattr(e, "reason", e))


proxy = os.environ.get("HTTPS_PROXY") or os.environ.get("https_proxy")
if not proxy:
    print("HTTPS_PROXY is not set: run with `cordon run --net proxy`",
          file=sys.stderr)
print("proxy:", proxy)
print(fetch(URL))
print(fetch(DENIED_URL))
