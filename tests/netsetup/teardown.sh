# Sourced by the e2e tests on an egress network (egress, clients, inspect,
# net): net_teardown, their cleanup's part that takes the network down.
# Needs $docker, $cordon, $net, $br and $T (state dir $T/state).
# shellcheck shell=bash
# shellcheck disable=SC2154 # docker, cordon, net and br are the sourcing suite's

# net_teardown: removes what is still attached to $net, runs `net down`
# (its error printed), then stops a supervisor or proxy it left running.
net_teardown() {
	local left pf pp
	# What a failed run left attached would make net down refuse, and the
	# next suite would find this network. A removal can fail while dockerd
	# is still tearing a sandbox down: again, for up to 30 s.
	for _ in $(seq 30); do
		left=$("$docker" ps -aq --filter network="$net")
		[ -z "$left" ] && break
		echo "$left" | xargs "$docker" rm -f >/dev/null 2>&1; sleep 1
	done
	if ! "$cordon" net down >"$T/cleanup-down.txt" 2>&1; then
		echo "cleanup: net down failed: $(cat "$T/cleanup-down.txt")" >&2
	fi
	# A proxy that net down did not stop keeps the gateway's ports bound
	# (the address goes with the bridge, the sockets stay): the next
	# suite's net up on this subnet failed with "Address already in use".
	for pf in "$T/state/net-$br/supervisor.pid" "$T/state/net-$br/proxy.pid"; do
		pp=$(cat "$pf" 2>/dev/null) || continue
		# Only a cordon process (a stale file's pid may be another's now);
		# the supervisor is asked first (it stops its proxy).
		case $(cat "/proc/$pp/comm" 2>/dev/null) in
		cordon*)
			kill -TERM "$pp" 2>/dev/null
			for _ in $(seq 50); do [ -d "/proc/$pp" ] || break; sleep 0.1; done
			kill -KILL "$pp" 2>/dev/null
			echo "cleanup: stopped $(basename "$pf" .pid) $pp, left running by net down" >&2 ;;
		esac
	done
}
