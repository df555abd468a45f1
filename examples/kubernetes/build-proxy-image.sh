#!/usr/bin/env bash
# Builds the cordon-proxy container image with no registry and no base
# image, the way `cordon image build` makes the sandbox image: a root tree
# in a temporary directory, packed with tar and loaded with `docker import`,
# whose printed ID is what to pin. The tree holds only what the proxy needs:
#   /usr/local/bin/cordon-proxy     the binary given
#   every shared library `ldd` lists for it, and the dynamic loader
#   /usr/share/publicsuffix/public_suffix_list.dat   (libpsl's rules: wildcard
#                                   entries are checked against them)
#   /etc/ssl/certs/ca-certificates.crt, also at OpenSSL's default
#                                   /usr/lib/ssl/cert.pem (upstream roots for
#                                   inspected entries)
#   /etc/passwd, /etc/group         root and nobody (65534), as 02-proxy.yaml runs it
# ENTRYPOINT is cordon-proxy and USER 65534:65534; the Deployment's args
# (--listen, --allowlist, ...) are its arguments.
#
#   examples/kubernetes/build-proxy-image.sh [CORDON_PROXY [TAG]]
# CORDON_PROXY: the binary (default build/proxy/cordon-proxy of this tree);
# use a release build. TAG: default cordon-proxy:local. Prints the image ID
# (sha256:...) on stdout and nothing else; progress goes to stderr. Then
#   docker tag ID registry.example.com/cordon/cordon-proxy:0.1.0 && docker push ...
# and pin the pushed digest in 02-proxy.yaml.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${1:-$root/build/proxy/cordon-proxy}
tag=${2:-cordon-proxy:local}
psl=/usr/share/publicsuffix/public_suffix_list.dat
cabundle=/etc/ssl/certs/ca-certificates.crt

say() { echo "build-proxy-image: $*" >&2; }
die() { say "error: $*"; exit 1; }

[ -x "$bin" ] || die "$bin is not an executable (build it: scripts/build build --buildtype=release; or give its path)"
[ -r "$psl" ] || die "$psl is missing (apt-get install publicsuffix): cordon-proxy checks wildcard entries against it"
[ -r "$cabundle" ] || die "$cabundle is missing (apt-get install ca-certificates)"
command -v docker >/dev/null || die "no docker client on PATH"

tree=$(mktemp -d "${TMPDIR:-/tmp}/cordon-proxy-image.XXXXXX")
trap 'rm -rf "$tree"' EXIT

# The libraries: "name => /path (0x...)" lines and the loader's "/path (0x...)".
# A library ldd cannot find is an error, never an image that fails at start.
if ! libs=$(ldd "$bin"); then
	die "ldd $bin failed (a static or foreign binary?)"
fi
if grep -q 'not found' <<<"$libs"; then
	grep 'not found' <<<"$libs" >&2
	die "$bin needs libraries that are not installed"
fi
n=0
while read -r path; do
	[ -n "$path" ] || continue
	mkdir -p "$tree$(dirname "$path")"
	cp -L "$path" "$tree$path"
	n=$((n + 1))
done < <(awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' <<<"$libs")
[ "$n" -gt 0 ] || die "ldd listed no library for $bin"
say "$n shared objects (loader included) from ldd $bin"

install -D -m 0755 "$bin" "$tree/usr/local/bin/cordon-proxy"
install -D -m 0644 "$psl" "$tree$psl"
install -D -m 0644 "$cabundle" "$tree$cabundle"
mkdir -p "$tree/usr/lib/ssl" "$tree/tmp"
chmod 1777 "$tree/tmp"
ln -s "$cabundle" "$tree/usr/lib/ssl/cert.pem"
printf 'root:x:0:0:root:/root:/usr/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' >"$tree/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$tree/etc/group"
chmod 0644 "$tree/etc/passwd" "$tree/etc/group"
# Nothing in it may be setuid or setgid (cordon image build strips them too).
find "$tree" -xdev -type f -perm /6000 -exec chmod ug-s {} +

say "importing $(du -sh "$tree" | cut -f1) as $tag"
id=$(tar --numeric-owner --owner=0 --group=0 -C "$tree" -c . |
	docker import -c 'ENTRYPOINT ["/usr/local/bin/cordon-proxy"]' \
		-c 'USER 65534:65534' -m "cordon-proxy from $bin" - "$tag")
case $id in
sha256:*) ;;
*) die "docker import printed '$id', not an image ID" ;;
esac
say "built $tag; pin $id"
echo "$id"
