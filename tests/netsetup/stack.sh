# Sourced by the netsetup e2e tests: which network stack the egress runtime
# under test ($rt) runs, and the proof that it is the one asked for
# ($want_stack: netstack, host or empty for "whatever it is"). Needs
# $docker, fail and missing.
# shellcheck shell=bash
# shellcheck disable=SC2154 # docker and rt are the sourcing suite's

# stack_of_args "ARGS...": netstack, host or none, as runsc reads --network
# (its default is sandbox, runsc's own netstack).
stack_of_args() {
	case " $1 " in
	*" --network=host "*) echo host ;;
	*" --network=none "*) echo none ;;
	*" --network=sandbox "* | *) echo netstack ;;
	esac
}

# check_stack: $rt is registered, and runs $want_stack if that is set.
check_stack() {
	local info
	info=$("$docker" info --format '{{json .Runtimes}}') || missing "docker info failed"
	rt_desc=$(python3 -I -c 'import json,sys
r = json.loads(sys.argv[1]).get(sys.argv[2])
if r is None: sys.exit(1)
print(r.get("path", ""), " ".join(r.get("runtimeArgs") or []))' "$info" "$rt") || {
		if [ "$want_stack" = netstack ]; then
			echo "!!! ============================================================== !!!"
			echo "!!! runtime $rt is not registered: the egress boundary is NOT     !!!"
			echo "!!! proven under gVisor's netstack. Build it: scripts/runsc-build, !!!"
			echo "!!! then scripts/egress-runtime --name $rt --stack netstack        !!!"
			echo "!!! ============================================================== !!!"
		fi
		missing "runtime $rt is not registered with dockerd (scripts/egress-runtime${want_stack:+ --name $rt --stack $want_stack})"
	}
	rt_stack=$(stack_of_args "${rt_desc#* }")
	if [ -n "$want_stack" ] && [ "$rt_stack" != "$want_stack" ]; then
		fail "runtime $rt ($rt_desc) runs the $rt_stack stack, not $want_stack (scripts/egress-runtime --name $rt --stack $want_stack)"
	fi
	echo "egress runtime under test: $rt = $rt_desc ($rt_stack)"
}

# check_container_stack NAME: the running container's sandbox process was
# started with the network mode of $rt_stack (seen from the host, so a
# runtime registered one way cannot run another unnoticed).
check_container_stack() {
	local id line pid args got exe
	id=$("$docker" inspect -f '{{.Id}}' "$1") || fail "cannot inspect $1"
	line=$(ps -eo pid=,args= | grep -F -- "$id" | grep -F -e ' boot ' | grep -v grep | head -n1)
	[ -n "$line" ] || fail "no runsc boot process for $1 ($id)"
	read -r pid args <<<"$line"
	got=$(stack_of_args "$args")
	[ "$got" = "$rt_stack" ] || fail "$1 runs the $got stack, its runtime $rt says $rt_stack: $args"
	# The sandbox is the runsc the runtime names (the built one, say).
	exe=$(readlink "/proc/$pid/exe") || fail "cannot read /proc/$pid/exe"
	[ "$exe" = "${rt_desc%% *}" ] || fail "$1's sandbox is $exe, its runtime $rt names ${rt_desc%% *}"
	echo "ok: $1's sandbox ($exe) runs the $got stack ($(printf '%s' "$args" | grep -o -- '--network=[a-z]*' || echo 'default network'))"
}
