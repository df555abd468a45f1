# Shared helpers for Cordon's set-up scripts (sourced, not run).
# shellcheck shell=bash

CORDON_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DAEMON_JSON=${CORDON_DAEMON_JSON:-/etc/docker/daemon.json}
# shellcheck disable=SC2034 # used by the scripts that source this file
STATE_DIR=${CORDON_STATE_DIR:-/var/lib/cordon}
DOCKERD_LOG=/var/log/cordon-dockerd.log
# The host's daemon: the one set-up reloads. Other dockerds (a test's own,
# with its own --pidfile) are never signalled.
DOCKERD_PIDFILE=${CORDON_DOCKERD_PIDFILE:-/var/run/docker.pid}
# The runsc debug runtimes (cordon-debug, cordon-debug-egress): their logs
# (strace shows what jobs read and write) go under a root-only directory,
# one subdirectory per container, through the %ID% wrapper.
DEBUG_LOG_DIR=${CORDON_DEBUG_LOG_DIR:-/var/log/cordon/runsc-debug}
DEBUG_WRAPPER=${CORDON_DEBUG_WRAPPER:-/usr/local/libexec/cordon/runsc-debug}
# Keep set -e inside $(...) too, so a failing step there is not ignored.
shopt -s inherit_errexit

# Status goes to stderr: stdout stays for what callers capture (quickstart's
# result JSON, register_* functions' answers).
say()  { printf 'cordon-setup: %s\n' "$*" >&2; }
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
		# A daemon keeps every descriptor it inherits for its whole
		# life (a caller's lock file, a pipe its caller waits on):
		# close all but 0-2 first.
		(
			for fd in /proc/$BASHPID/fd/*; do
				fd=${fd##*/}
				[ "$fd" -gt 2 ] && eval "exec $fd>&-"
			done
			exec setsid dockerd >>"$DOCKERD_LOG" 2>&1 </dev/null
		) &
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
		signal_dockerd HUP
	fi
	sleep 1
	wait_dockerd 30
}

# Sends a signal to the host's dockerd, the process named in its pidfile,
# never to every process called dockerd.
signal_dockerd() {
	local pid
	pid=$(cat "$DOCKERD_PIDFILE" 2>/dev/null) ||
		die "no $DOCKERD_PIDFILE: cannot tell which dockerd to signal"
	case $pid in '' | *[!0-9]*) die "$DOCKERD_PIDFILE does not hold a pid: '$pid'" ;; esac
	[ "$(cat "/proc/$pid/comm" 2>/dev/null)" = dockerd ] ||
		die "process $pid from $DOCKERD_PIDFILE is not dockerd"
	kill -"$1" "$pid" || die "could not signal dockerd ($pid)"
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

# Merges one runtime into daemon.json, keeping every other key and runtime:
# merge_runtime NAME ARGS_JSON [PATH] (PATH: runsc by default). Prints
# "changed" when the file was modified; dies (non-zero, message on stderr,
# file unchanged) when it cannot be.
merge_runtime() {
	local name=$1 args_json=$2 path=${3:-} want cur err
	if [ -z "$path" ]; then
		path=$(command -v runsc) || die "runsc not installed"
	fi
	mkdir -p "$(dirname "$DAEMON_JSON")" || die "cannot create $(dirname "$DAEMON_JSON")"
	if [ ! -s "$DAEMON_JSON" ]; then
		echo '{}' >"$DAEMON_JSON" || die "cannot write $DAEMON_JSON"
	fi
	err=$(jq -e 'type == "object"' "$DAEMON_JSON" 2>&1 >/dev/null) ||
		die "$DAEMON_JSON is not a JSON object; fix it by hand first (jq: ${err:-not an object})"
	cur=$(jq -c --arg n "$name" '.runtimes[$n] // null' "$DAEMON_JSON") ||
		die "could not read $DAEMON_JSON"
	want=$(jq -c -n --arg p "$path" --argjson a "$args_json" '{path: $p, runtimeArgs: $a}') ||
		die "bad runtime arguments for $name: $args_json"
	if [ "$cur" = "$want" ]; then
		return 0
	fi
	daemon_json_edit --arg n "$name" --argjson rt "$want" \
		'.runtimes = ((.runtimes // {}) + {($n): $rt})'
	echo changed
}

# The runtimeArgs of a registered runtime as compact JSON, or nothing.
runtime_args() {
	[ -s "$DAEMON_JSON" ] || return 0
	jq -c --arg n "$1" '.runtimes[$n].runtimeArgs // empty' "$DAEMON_JSON" ||
		die "could not read $DAEMON_JSON"
}

# The path of a registered runtime, or nothing.
runtime_path() {
	[ -s "$DAEMON_JSON" ] || return 0
	jq -r --arg n "$1" '.runtimes[$n].path // empty' "$DAEMON_JSON" ||
		die "could not read $DAEMON_JSON"
}

# The debug wrapper's path for a runsc: $DEBUG_WRAPPER for Debian's (the
# one on PATH), $DEBUG_WRAPPER-built for any other (the one
# scripts/runsc-build installs).
debug_wrapper_for() {
	local runsc=${1:-} deb
	deb=$(command -v runsc) || die "runsc not installed"
	if [ -z "$runsc" ] || [ "$runsc" = "$deb" ]; then
		echo "$DEBUG_WRAPPER"
	else
		echo "$DEBUG_WRAPPER-built"
	fi
}

# Installs the %ID% wrapper (scripts/runsc-debug) for a runsc (default: the
# one found on PATH) at debug_wrapper_for's path; prints "changed" when it
# wrote it. install_debug_wrapper [RUNSC]
install_debug_wrapper() {
	local runsc=${1:-} wrapper want
	if [ -z "$runsc" ]; then
		runsc=$(command -v runsc) || die "runsc not installed"
	fi
	wrapper=$(debug_wrapper_for "$runsc")
	want=$(sed "s|@RUNSC@|$runsc|" "$CORDON_ROOT/scripts/runsc-debug") ||
		die "cannot read $CORDON_ROOT/scripts/runsc-debug"
	if [ -x "$wrapper" ] && [ "$(cat "$wrapper")" = "$want" ]; then
		return 0
	fi
	mkdir -p "$(dirname "$wrapper")" || die "cannot create $(dirname "$wrapper")"
	printf '%s\n' "$want" >"$wrapper.tmp" &&
		chmod 0755 "$wrapper.tmp" &&
		mv "$wrapper.tmp" "$wrapper" ||
		die "cannot install $wrapper"
	echo changed
}

# The debug log directory: root's only (0700), whatever was there before
# (the tests of this file, not root, get their own user's).
debug_log_dir_prepare() {
	# shellcheck disable=SC2174 # parents keep the default mode; chmod below sets this one
	mkdir -p -m 0700 "$DEBUG_LOG_DIR" || die "cannot create $DEBUG_LOG_DIR"
	if [ "$(id -u)" = 0 ]; then
		chown root:root "$DEBUG_LOG_DIR" || die "cannot chown $DEBUG_LOG_DIR to root"
	fi
	chmod 0700 "$DEBUG_LOG_DIR" || die "cannot make $DEBUG_LOG_DIR mode 0700"
}

# Registers a debug runtime: the wrapper, with the base runtime's
# arguments (its network mode) plus runsc's debug flags.
# register_debug_runtime NAME BASE_ARGS_JSON [RUNSC]; prints "changed" or
# nothing. RUNSC: the base runtime's runsc (default: the one on PATH).
register_debug_runtime() {
	local name=$1 base=$2 runsc=${3:-} args
	case $DEBUG_LOG_DIR in
	/*) ;;
	*) die "the debug log directory must be an absolute path: $DEBUG_LOG_DIR" ;;
	esac
	case $DEBUG_LOG_DIR in
	*[!A-Za-z0-9/_.-]*) die "the debug log directory may hold only [A-Za-z0-9/_.-]: $DEBUG_LOG_DIR" ;;
	esac
	debug_log_dir_prepare
	install_debug_wrapper "$runsc" >/dev/null
	args=$(jq -c -n --argjson b "$base" --arg d "$DEBUG_LOG_DIR" \
		'$b + ["--debug", "--strace", ("--debug-log=" + $d + "/%ID%/")]') ||
		die "bad base arguments for $name: $base"
	merge_runtime "$name" "$args" "$(debug_wrapper_for "$runsc")"
}

# Removes one runtime from daemon.json (no-op when it is not there).
remove_runtime() {
	daemon_json_edit --arg n "$1" 'del(.runtimes[$n])'
}
