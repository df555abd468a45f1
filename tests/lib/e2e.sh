# The preamble of the shell end-to-end suites (sourced, not run), one copy:
# set -u, fail and missing (CORDON_E2E=skip turns a missing precondition
# into exit 77, otherwise it fails), the built cordon, the preconditions
# on dockerd, its runtimes and the pinned image, and a temporary directory
# removed at exit after the suite's own cleanup (a function named cleanup,
# when the suite defines one).
#   . "$CORDON_SOURCE_ROOT/tests/lib/e2e.sh"     (or relative to the script)
# shellcheck shell=bash
set -u
fail() { echo "FAIL: $*" >&2; exit 1; }
missing() {
	if [ "${CORDON_E2E:-}" = skip ]; then echo "SKIP (CORDON_E2E=skip): $*"; exit 77; fi
	fail "$* (run scripts/setup and 'cordon image build'; set CORDON_E2E=skip only on a laptop)"
}
cordon="$CORDON_BUILD_ROOT/cordon"
tmp=

# e2e_need_docker [PATH]: docker (the CLI, PATH first when given) and a
# dockerd that answers.
e2e_need_docker() {
	docker=$(command -v "${1:-docker}" || command -v docker) || missing "no docker CLI"
	"$docker" info >/dev/null 2>&1 || missing "dockerd is not answering"
}
# e2e_need_runtime RUNTIME...: each is registered with dockerd.
e2e_need_runtime() {
	local rts rt
	rts=$("$docker" info --format '{{json .Runtimes}}')
	for rt in "$@"; do
		grep -q "\"$rt\"" <<<"$rts" || missing "runtime $rt is not registered with dockerd"
	done
}
# e2e_need_image: id, the image the host's config pins.
e2e_need_image() {
	id=$(env -u CORDON_CONFIG "$cordon" image show 2>/dev/null |
		sed -n 's/.*"id":"\(sha256:[0-9a-f]*\)".*/\1/p')
	[ -n "$id" ] || missing "no pinned sandbox image"
}
# e2e_tmpdir NAME: tmp, a new /tmp/NAME.XXXXXX, removed at exit.
e2e_tmpdir() {
	tmp=$(mktemp -d "/tmp/$1.XXXXXX") || fail "mktemp"
	trap e2e_exit EXIT
}
# e2e_rm_containers FILTER...: removes Cordon's containers that docker ps
# finds with these filters (this suite's own).
e2e_rm_containers() {
	"$docker" ps -aq --filter label=cordon=1 "$@" | xargs -r "$docker" rm -f >/dev/null 2>&1
}
e2e_exit() {
	if [ "$(type -t cleanup)" = function ]; then cleanup; fi
	if [ -n "$tmp" ]; then rm -rf "$tmp"; fi
}
