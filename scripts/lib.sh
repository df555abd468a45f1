# Shared helpers for Cordon's set-up scripts (sourced, not run).
# shellcheck shell=bash

CORDON_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DAEMON_JSON=${CORDON_DAEMON_JSON:-/etc/docker/daemon.json}
STATE_DIR=${CORDON_STATE_DIR:-/var/lib/cordon}
DOCKERD_LOG=/var/log/cordon-dockerd.log
# Keep set -e inside $(...) too, so a failing step there is not ignored.
shopt -s inherit_errexit

say()  { printf 'cordon-setup: %s\n' "$*"; }
die()  { printf 'cordon-setup: error: %s\n' "$*" >&2; exit 1; }

need_root() {
	[ "$(id -u)" = 0 ] || die "run as root (it installs packages and configures dockerd)"
}

# The docker CLI to use: Debian's, matching its daemon, when present.
docker_cli() {
	if [ -x /usr/bin/docker ]; then echo /usr/bin/docker; else command -v docker; fi
}

docker_up() {
	"$(docker_cli)" info >/dev/null 2>&1
}

have_systemd() {
	[ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1
}

# Starts dockerd when it is not answering and waits for `docker info`.
start_dockerd() {
	if docker_up; then
		return 0
	fi
	if have_systemd; then
		say "starting docker.service (systemd)"
		systemctl start docker || die "systemctl start docker failed: see 'journalctl -u docker'"
	else
		command -v dockerd >/dev/null || die "dockerd not installed (apt-get install docker.io)"
		say "starting dockerd in the background (log: $DOCKERD_LOG)"
		(setsid dockerd >>"$DOCKERD_LOG" 2>&1 </dev/null &)
	fi
	wait_dockerd 60
}

wait_dockerd() {
	local limit=$1 i
	for ((i = 0; i < limit * 4; i++)); do
		docker_up && return 0
		sleep 0.25
	done
	die "dockerd did not answer 'docker info' within ${limit}s; last log lines:
$(tail -n 20 "$DOCKERD_LOG" 2>/dev/null)"
}

# Makes dockerd re-read daemon.json (runtimes reload on SIGHUP).
reload_dockerd() {
	if ! docker_up; then
		start_dockerd
		return
	fi
	if have_systemd && systemctl is-active --quiet docker; then
		systemctl reload docker
	else
		pkill -HUP -x dockerd || die "could not signal dockerd"
	fi
	sleep 1
	wait_dockerd 30
}

# Writes daemon.json from a jq filter over it, atomically: on any failure
# the file is left exactly as it was and the caller dies with jq's or mv's
# own words. (A bare `jq ... && mv` inside $(...) would not stop: bash
# turns set -e off there.)
daemon_json_edit() {
	local tmp="$DAEMON_JSON.cordon-tmp" err
	if ! err=$(jq "$@" "$DAEMON_JSON" 2>&1 >"$tmp"); then
		rm -f "$tmp"
		die "could not edit $DAEMON_JSON (left unchanged): jq: $err"
	fi
	if ! err=$(mv "$tmp" "$DAEMON_JSON" 2>&1); then
		rm -f "$tmp"
		die "could not replace $DAEMON_JSON (left unchanged): $err"
	fi
}

# Merges one runtime into daemon.json, keeping every other key and runtime.
# Prints "changed" when the file was modified; dies (non-zero, message on
# stderr, file unchanged) when it cannot be.
merge_runtime() {
	local name=$1 args_json=$2 runsc want cur err
	runsc=$(command -v runsc) || die "runsc not installed"
	mkdir -p "$(dirname "$DAEMON_JSON")" || die "cannot create $(dirname "$DAEMON_JSON")"
	if [ ! -s "$DAEMON_JSON" ]; then
		echo '{}' >"$DAEMON_JSON" || die "cannot write $DAEMON_JSON"
	fi
	err=$(jq -e 'type == "object"' "$DAEMON_JSON" 2>&1 >/dev/null) ||
		die "$DAEMON_JSON is not a JSON object; fix it by hand first (jq: ${err:-not an object})"
	cur=$(jq -c --arg n "$name" '.runtimes[$n] // null' "$DAEMON_JSON") ||
		die "could not read $DAEMON_JSON"
	want=$(jq -c -n --arg p "$runsc" --argjson a "$args_json" '{path: $p, runtimeArgs: $a}') ||
		die "bad runtime arguments for $name: $args_json"
	if [ "$cur" = "$want" ]; then
		return 0
	fi
	daemon_json_edit --arg n "$name" --argjson rt "$want" \
		'.runtimes = ((.runtimes // {}) + {($n): $rt})'
	echo changed
}

# Removes one runtime from daemon.json (no-op when it is not there).
remove_runtime() {
	daemon_json_edit --arg n "$1" 'del(.runtimes[$n])'
}
