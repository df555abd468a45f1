#!/bin/sh
# A fake docker CLI for the runner's process-handling tests. Every call is
# appended (one line, arguments joined by spaces) to $FAKE_LOG; what `run`
# does is chosen by $FAKE_MODE. `run` also leaves a marker $FAKE_LOG.NAME
# (removed by `rm`), so that `inspect --format={{.State.Status}}` says
# "running" for a started container, or "created" while the marker is
# younger than $FAKE_START_DELAY seconds (a slow start), else "No such".
# With $FAKE_CREATE_DELAY (seconds) the marker appears only that long after
# `run`, from a detached process that outlives the CLI (dockerd goes on
# creating after its client is killed: issue 22), and until then `rm` says
# "No such". `exec` behaves as `run` by $FAKE_MODE, with no marker.
# FAKE_RM_BUSY=N makes the first N `rm` of each name fail as a removal
# already in progress.
# FAKE_MODE=stuck is dockerd relaying an endless flood: the job looks for
# a kill only between chunks, so `kill` (and `rm -f`, which kills first)
# is held up for as long as nobody reads the run's stdout and stderr.
printf '%s\n' "$*" >> "$FAKE_LOG"
cmd=$1
# FAKE_MODE=denied / down: every call fails as the docker CLI does for a
# user who may not use the daemon's socket, or with no daemon running
# (docker 28.2's words; `docker run` exits 126 and 125 for them, other
# commands 1).
case "${FAKE_MODE:-}" in
denied)
	[ "$cmd" = run ] && p="docker: " || p=
	echo "${p}permission denied while trying to connect to the Docker daemon socket at unix:///var/run/docker.sock: Head \"http://%2Fvar%2Frun%2Fdocker.sock/_ping\": dial unix /var/run/docker.sock: connect: permission denied" >&2
	[ "$cmd" = run ] && { echo; echo "Run 'docker run --help' for more information"; } >&2
	[ "$cmd" = run ] && exit 126
	exit 1 ;;
down)
	[ "$cmd" = run ] && p="docker: " || p=
	echo "${p}Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?" >&2
	[ "$cmd" = run ] && exit 125
	exit 1 ;;
esac
# FAKE_BREAK_AUDIT=PATH: `run` puts a directory where the audit log is,
# so that the run's audit line cannot be written after its admission.
if [ "$cmd" = run ] && [ -n "${FAKE_BREAK_AUDIT:-}" ]; then
	rm -f "$FAKE_BREAK_AUDIT"; mkdir -p "$FAKE_BREAK_AUDIT"
fi
# `kill NAME` in mode stuck: asks the job to end, and waits until it did
# (at most 60 s, as if dockerd's kill had a bound).
stuck_kill() {
	[ "$FAKE_MODE" = stuck ] || return 0
	: > "$FAKE_LOG.$1.kill"
	i=0
	while [ ! -e "$FAKE_LOG.$1.dead" ] && [ $i -lt 1200 ]; do
		sleep 0.05; i=$((i + 1))
	done
}
# What `run` (and the warm pool's `exec`) does, by $FAKE_MODE.
job() {
	case "$FAKE_MODE" in
	ok)	# echo the code back, as a program printing its source would
		cat; echo "to-stderr" >&2; exit 3 ;;
	hang)	# a docker run that never starts the container
		exec sleep 1000 ;;
	close)	# closes its outputs early, then hangs
		exec >/dev/null 2>&1; exec sleep 1000 ;;
	oom|kill137)
		cat >/dev/null; exit 137 ;;
	flood)
		cat >/dev/null
		head -c 200000000 /dev/zero &
		head -c 200000000 /dev/zero >&2
		wait; exit 0 ;;
	stuck)
		cat >/dev/null
		while [ ! -e "$FAKE_LOG.$name.kill" ]; do
			head -c 65536 /dev/zero
			head -c 65536 /dev/zero >&2
		done
		: > "$FAKE_LOG.$name.dead"
		exit 137 ;;
	refuse)
		echo "docker: Error response from daemon: Unknown runtime specified cordon-offline." >&2
		exit 125 ;;
	user125)
		cat >/dev/null; echo "docker: looks like docker" >&2; exit 125 ;;
	python)	# the container's command (from "python3" on) on this host
		while [ $# -gt 0 ] && [ "$1" != python3 ]; do shift; done
		exec "$@" ;;
	esac
	exit 99
}
name=
case "$cmd" in
run)
	prev=
	for a in "$@"; do
		[ "$prev" = "--name" ] && name=$a
		if [ "$prev" = "--name" ] && [ -n "${FAKE_CREATE_DELAY:-}" ]; then
			setsid sh -c 'sleep "$1"; : > "$2"' _ \
			    "$FAKE_CREATE_DELAY" "$FAKE_LOG.$a" </dev/null \
			    >/dev/null 2>&1 &
		elif [ "$prev" = "--name" ]; then
			: > "$FAKE_LOG.$a"
		fi
		prev=$a
	done
	job "$@" ;;
exec)	# the warm pool's job, in a running (fake) container
	job "$@" ;;
inspect)
	case "$*" in
	*"{{.State.Status}}"*)
		for name in "$@"; do :; done
		if [ ! -e "$FAKE_LOG.$name" ]; then
			echo "Error: No such container: $name" >&2; exit 1
		fi
		age=$(( $(date +%s) - $(stat -c %Y "$FAKE_LOG.$name") ))
		if [ "$age" -lt "${FAKE_START_DELAY:-0}" ]; then
			echo created
		else
			echo running
		fi
		exit 0 ;;
	esac
	case "$FAKE_MODE" in
	oom)	echo "true 137 2026-11-29T10:00:00.1Z"; exit 0 ;;
	kill137) echo "false 137 2026-11-29T10:00:00.1Z"; exit 0 ;;
	user125) echo "false 125 2026-11-29T10:00:00.1Z"; exit 0 ;;
	refuse) echo "Error: No such object: x" >&2; exit 1 ;;
	esac
	echo "false 0 2026-11-29T10:00:00.1Z"; exit 0 ;;
rm)
	shift
	for a in "$@"; do
		case "$a" in
		-*) ;;
		*)	stuck_kill "$a"
			# FAKE_RM_FAIL=NAME: every removal of NAME fails (a
			# daemon that cannot kill its sandbox).
			if [ "$a" = "${FAKE_RM_FAIL:-}" ]; then
				echo "Error response from daemon: Could not kill running container $a, cannot remove" >&2
				exit 1
			fi
			# FAKE_RM_BUSY=N: the first N removals of a name find
			# another removal in progress (dockerd's 409).
			if [ -n "${FAKE_RM_BUSY:-}" ]; then
				b=$(cat "$FAKE_LOG.busy.$a" 2>/dev/null || echo 0)
				if [ "$b" -lt "$FAKE_RM_BUSY" ]; then
					echo $((b + 1)) > "$FAKE_LOG.busy.$a"
					echo "Error response from daemon: removal of container $a is already in progress" >&2
					exit 1
				fi
			fi
			if [ -n "${FAKE_CREATE_DELAY:-}" ] && [ ! -e "$FAKE_LOG.$a" ]; then
				echo "Error: No such container: $a" >&2; exit 1
			fi
			rm -f "$FAKE_LOG.$a"
			touch "$FAKE_LOG.gone.$a" ;;
		esac
	done
	exit 0 ;;
kill)
	stuck_kill "$2"
	exit 0 ;;
info)
	echo '{"runc":{"path":"runc"}}'; exit 0 ;;
image)
	echo "sha256:x"; exit 0 ;;
ps)	# FAKE_PS_MINE=NAME: also lists NAME as left by the caller (owner
	# label: this script's parent, the cordon process that asks) until an
	# `rm` of it succeeds (FAKE_RM_BUSY holds it there).
	[ -z "${FAKE_PS_MINE:-}" ] || [ -e "$FAKE_LOG.gone.$FAKE_PS_MINE" ] ||
		printf '%s\t%s\t0\n' "$FAKE_PS_MINE" "$PPID"
	cat "$FAKE_PS"; exit 0 ;;
esac
exit 98
