#!/usr/bin/env bash
# Hostile and careless clients against the real `cordon serve` (issue 39):
# fd exhaustion under a lowered descriptor limit (1100 idle connections
# from one address, then 200 from twenty), SIGHUP, pre-auth bodies,
# refused 15.8 MiB bodies, the refusal rate, what /metrics and /v1/health
# show over TCP, NUL strings (serve and cordon mcp), then with real
# dockerd + runsc: an unread ~200 MB reply, session slot starvation, a
# session call whose client hangs up, the fields a session call refuses,
# and SIGTERM after a reply whose write failed. Each bound is asserted, and
# a witness asks the unix socket and the other tenant for /v1/health every
# 100 ms throughout (tests/serve/hostile.py does the work). 127.0.0.x and
# unix sockets only, bounded loops. Its services run on their own sockets
# and state; it does no kill-all. Fails (never skips) when Docker, the
# runtime, the image or curl is missing, unless CORDON_E2E=skip.
. "$(dirname "$0")/lib.sh"
python3 "$(dirname "$0")/hostile.py" "$cordon" "$tmp" "$@"
