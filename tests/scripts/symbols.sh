#!/usr/bin/env bash
# Every external symbol of Cordon's static libraries is defined once, and
# carries a prefix owned by its part (so which definition the linker takes
# never depends on archive order, and a name says where it lives). The
# table below is the list of prefixes each library may export.
set -uo pipefail
build=${CORDON_BUILD_ROOT:?}
declare -A allowed=(
	[cordon_common]='cbuf_ config_ json_ log_ proc_ prom_ sha256_ time_ util_ fatal fatalx'
	[cordon_allowlist]='allowlist_ al_'
	[cordon_proxy]='proxy_'
	[cordon_proxyctl]='proxy_ctl_ proxy_cred_ proxy_addr_'
	[cordon_probe]='probe_'
	[cordon_netsetup]='netsetup_ nssuper_ fw_ fwa_ dnet_ sdunit_'
	[cordon_runner]='runner_ apirun_ container_ docker_ dockerapi_ dargv_ doctor_ files_ image_ outwrap_ stage_'
	[cordon_jobs]='jobs_'
	[cordon_mcp]='mcp_'
	[cordon_serve]='serve_'
)
syms=$(mktemp)
trap 'rm -f "$syms"' EXIT
nlibs=0
while IFS= read -r lib; do
	name=$(basename "$lib" .a)
	name=${name#lib}
	nlibs=$((nlibs + 1))
	# Defined, external: text, data, bss, read-only data, common. ASan
	# adds one __odr_asan.NAME per global NAME (NAME itself is checked).
	nm -g --defined-only "$lib" | awk -v L="$name" 'NF == 3 && $2 ~ /^[TDBRCVW]$/ &&
		$3 !~ /^__odr_asan[.]/ { print L, $3 }' >>"$syms" ||
		{ echo "FAIL: nm $lib"; exit 1; }
done < <(find "$build" -name 'libcordon_*.a' -not -path '*/build-fuzz/*' | sort)
bad=0
[ "$nlibs" -ge 10 ] || { echo "FAIL: found $nlibs libcordon_*.a under $build, expected 10"; exit 1; }
dups=$(awk '{ print $2 }' "$syms" | sort | uniq -d)
if [ -n "$dups" ]; then
	for d in $dups; do
		echo "FAIL: $d is defined in $(awk -v S="$d" '$2 == S { printf "%s ", $1 }' "$syms")"
	done
	bad=1
fi
while read -r lib sym; do
	list=${allowed[$lib]:-}
	[ -n "$list" ] || { echo "FAIL: library $lib has no prefix list in $0"; bad=1; continue; }
	ok=0
	for p in $list; do
		case $p in
		*_) [[ $sym == "$p"* ]] && ok=1 ;;
		*) [[ $sym == "$p" ]] && ok=1 ;;
		esac
	done
	[ $ok = 1 ] || { echo "FAIL: $lib exports $sym (allowed prefixes: $list)"; bad=1; }
done <"$syms"
echo "symbols: $(wc -l <"$syms") external symbols in $nlibs libraries checked"
[ $bad = 0 ] && echo "symbols: 1 passed, 0 failed" || echo "symbols: 0 passed, 1 failed"
exit $bad
