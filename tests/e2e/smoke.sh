#!/usr/bin/env bash
# End-to-end smoke test: one container of the pinned image under the
# cordon-offline runtime, non-root, read-only root. Proves from inside that
# the kernel is gVisor's, not the host's. Fails (never skips) when Docker,
# the runtime or the image is missing, unless CORDON_E2E=skip.
. "$(dirname "$0")/../lib/e2e.sh" || exit 1
e2e_need_docker /usr/bin/docker
e2e_need_runtime cordon-offline
e2e_need_image

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
