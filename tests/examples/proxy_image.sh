#!/usr/bin/env bash
# examples/kubernetes/build-proxy-image.sh against real dockerd: builds the
# cordon-proxy image from this build's binary with no registry, then runs
# it as 02-proxy.yaml does (uid 65534, read-only root, no capabilities, no
# network) with `--check` on an allowlist: it must start (every shared
# library present), read the public suffix list (the wildcard warning only
# comes from libpsl's rules) and load the policy. The image is removed
# afterwards. Fails (never skips) without dockerd, unless CORDON_E2E=skip.
set -u
fail() { echo "FAIL: $*" >&2; exit 1; }
missing() {
	if [ "${CORDON_E2E:-}" = skip ]; then echo "SKIP (CORDON_E2E=skip): $*"; exit 77; fi
	fail "$*"
}
src=${CORDON_SOURCE_ROOT:?}
bin="$CORDON_BUILD_ROOT/proxy/cordon-proxy"
docker=$(command -v docker) || missing "no docker CLI"
"$docker" info >/dev/null 2>&1 || missing "dockerd is not answering"

T=$(mktemp -d /tmp/cordon-proxyimg.XXXXXX)
tag="cordon-proxy-test:$$-$RANDOM"
id=
cleanup() {
	[ -n "$id" ] && "$docker" image rm -f "$id" >/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

id=$("$src/examples/kubernetes/build-proxy-image.sh" "$bin" "$tag" 2>"$T/build.err") ||
	fail "build-proxy-image.sh failed: $(cat "$T/build.err")"
cat "$T/build.err"
case $id in sha256:*) ;; *) fail "it printed '$id', not an image ID" ;; esac
"$docker" images --no-trunc "${tag%%:*}" | grep -q "${id#sha256:}" ||
	fail "docker images does not list $tag as $id"
echo "docker images: $("$docker" images "${tag%%:*}" --format '{{.Repository}}:{{.Tag}} {{.ID}} {{.Size}}')"
[ "$("$docker" image inspect -f '{{json .Config.Entrypoint}} {{.Config.User}}' "$id")" = \
	'["/usr/local/bin/cordon-proxy"] 65534:65534' ] || fail "wrong entrypoint or user"

mkdir "$T/allowlist"
printf '*.amazonaws.com\npypi.org:443\n' >"$T/allowlist/default.list"
chmod -R a+rX "$T"
out=$(timeout 120 "$docker" run --rm --network=none --read-only --cap-drop=ALL \
	--security-opt=no-new-privileges -v "$T/allowlist:/etc/cordon/allowlist:ro" \
	"$id" --check --listen 0.0.0.0:3128 --allowlist /etc/cordon/allowlist 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || fail "cordon-proxy --check in the image exited $rc"
grep -q "wildcard-crosses-public-suffix" <<<"$out" ||
	fail "no public-suffix warning: the image's libpsl rules were not read"
grep -q "configuration OK: 1 policies" <<<"$out" || fail "the allowlist did not load"
echo "PASS: the proxy image builds without a registry and its cordon-proxy runs"
