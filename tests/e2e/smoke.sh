#!/usr/bin/env bash
# End-to-end smoke test: one container of the pinned image under the
# cordon-offline runtime, non-root, read-only root. Proves from inside that
# the kernel is gVisor's, not the host's. Fails (never skips) when Docker,
# the runtime or the image is missing, unless CORDON_E2E=skip.
set -u
fail() { echo "FAIL: $*" >&2; exit 1; }
missing() {
	if [ "${CORDON_E2E:-}" = skip ]; then echo "SKIP (CORDON_E2E=skip): $*"; exit 77; fi
	fail "$* (run scripts/setup and 'cordon image build'; set CORDON_E2E=skip only on a laptop)"
}
cordon="$CORDON_BUILD_ROOT/cordon"
docker=$(command -v /usr/bin/docker || command -v docker) || missing "no docker CLI"
"$docker" info >/dev/null 2>&1 || missing "dockerd is not answering"
"$docker" info --format '{{json .Runtimes}}' | grep -q '"cordon-offline"' ||
	missing "runtime cordon-offline is not registered with dockerd"
id=$("$cordon" image show 2>/dev/null | sed -n 's/.*"id":"\(sha256:[0-9a-f]*\)".*/\1/p')
[ -n "$id" ] || missing "no pinned sandbox image"

name="cordon-smoke-$$-$RANDOM"
probe='
import os, platform, json
r = {"uid": os.getuid(), "release": platform.release()}
# gVisor statvfs() hides ST_RDONLY, and as uid 65534 a write fails with
# EACCES before EROFS could show: /proc/mounts is the reliable view.
for line in open("/proc/mounts"):
    f = line.split()
    if f[1] == "/":
        r["rootfs"] = f[3].split(",")[0]
print(json.dumps(r))
'
out=$(timeout 120 "$docker" run --rm -i --name "$name" --label cordon=1 \
	--runtime=cordon-offline --network=none --read-only --cap-drop=ALL \
	--security-opt=no-new-privileges --user 65534:65534 "$id" \
	sh -c 'python3 -I - ; echo "dmesg:$(dmesg 2>&1 | tr "\n" "|")"' <<<"$probe" 2>&1)
rc=$?
"$docker" rm -f "$name" >/dev/null 2>&1
[ $rc -eq 0 ] || fail "container failed (exit $rc): $out"
echo "$out"
host_release=$(uname -r)
json=$(echo "$out" | head -n1)
echo "$json" | grep -q '"uid": 65534' || fail "not running as uid 65534: $json"
echo "$json" | grep -q '"rootfs": "ro"' || fail "root filesystem not mounted read-only: $json"
release=$(echo "$json" | sed -n 's/.*"release": "\([^"]*\)".*/\1/p')
[ -n "$release" ] || fail "no kernel release reported"
[ "$release" != "$host_release" ] || fail "kernel release $release is the host's: not gVisor"
echo "$out" | grep -q '^dmesg:.*Starting gVisor' || fail "dmesg does not show gVisor booting"
echo "ok: uid 65534, read-only root, kernel $release (host $host_release), dmesg shows gVisor"
