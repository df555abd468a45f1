#!/usr/bin/env bash
# Stops or starts the host's dockerd for the fault suite, the way
# scripts/setup does (scripts/lib.sh): stop sends SIGTERM to the process
# named in the daemon's pidfile (never to every dockerd) and waits for it
# to exit; start starts it as setup does and waits for `docker info`.
#   dockerd.sh stop|start
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../../scripts/lib.sh
. "$here/../../scripts/lib.sh"
case ${1:-} in
stop)
	have_systemd && die "dockerd runs under systemd here: the fault suite restarts only a dockerd that scripts/setup started"
	pid=$(cat "$DOCKERD_PIDFILE")
	signal_dockerd TERM
	for _ in $(seq 600); do
		[ -d "/proc/$pid" ] || exit 0
		# Reaped by its parent (init) once it exits.
		[ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" = Z ] && exit 0
		sleep 0.1
	done
	die "dockerd ($pid) did not exit within 60 s of SIGTERM"
	;;
start)
	start_dockerd
	;;
*)
	echo "usage: dockerd.sh stop|start" >&2
	exit 2
	;;
esac
