# Fetch a URL through Cordon's allowlisting egress proxy with urllib (which
# honours the HTTPS_PROXY/HTTP_PROXY variables that `--net proxy` sets).
# With the proxy up and an allowlist that names the host, e.g.
#   sudo cordon net up --allowlist examples/allowlists/pypi.list
#   cordon run --net proxy < examples/fetch_allowlisted.py
# it prints the status and the start of the page; a host not on the list
# (DENIED_URL, which neither the shipped default.list nor pypi.list allows)
# is refused by the proxy, and without --net proxy there is no network at
# all. Change URL to something your allowlist permits.
#
# The proxy URL carries this run's credential (user and token): it is never
# printed, since this output is what the caller (often an LLM) reads.
import os
import sys
import urllib.error
import urllib.parse
import urllib.request

URL = "https://pypi.org/simple/pip/"
DENIED_URL = "https://example.net/"


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


def without_credential(proxy):
    """The proxy URL with its user and token left out, and a function that
    blanks them wherever they might appear in a message."""
    p = urllib.parse.urlsplit(proxy)
    secrets = [s for s in (p.username, p.password) if s]
    for s in list(secrets):
        secrets.append(urllib.parse.unquote(s))

    def redact(text):
        for s in secrets:
            text = text.replace(s, "***")
        return text
    host = p.hostname or ""
    if ":" in host:
        host = "[%s]" % host
    shown = "%s://%s%s" % (p.scheme, host,
                           ":%d" % p.port if p.port else "")
    return shown, redact


proxy = os.environ.get("HTTPS_PROXY") or os.environ.get("https_proxy")
if not proxy:
    print("HTTPS_PROXY is not set: run with `cordon run --net proxy`",
          file=sys.stderr)
    shown, redact = "(none)", str
else:
    shown, redact = without_credential(proxy)
print("proxy:", shown, "(credential not shown)" if proxy else "")
print(redact(fetch(URL)))
print(redact(fetch(DENIED_URL)))
