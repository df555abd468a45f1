#!/usr/bin/env bash
# End-to-end: image profiles and languages (issue 17, part 1) with real
# dockerd and runsc, in a state_dir of its own: the images of the profiles
# minimal, data and node pinned by the ID the operator's config recorded
# (`cordon image build --profile P`; scripts/test builds all three), each
# probed here (records of its own; the host's are never touched).
# minimal runs python and bash and refuses node; data's numpy, pandas
# (a CSV given with --in), matplotlib (Agg, a PNG back through --out) and
# scipy each really run under gVisor; node runs console.log(1), and bash
# and node also through the --out wrapper. A profile with no probe record,
# or a failed one, is refused. A library that fails inside the sandbox
# fails this test with its stderr. Fails (never skips) without Docker, the
# runtime or an image, unless CORDON_E2E=skip.
. "$(dirname "$0")/../lib/e2e.sh" || exit 1
# The set-up hint names the three profiles' images.
missing() {
	if [ "${CORDON_E2E:-}" = skip ]; then echo "SKIP (CORDON_E2E=skip): $*"; exit 77; fi
	fail "$* (run scripts/setup and 'cordon image build --profile P' for minimal, data and node; set CORDON_E2E=skip only on a laptop)"
}
e2e_need_docker
e2e_need_runtime cordon-offline
# The operator's images (CORDON_CONFIG when set, else the default config).
image_id() {
	"$cordon" image show --profile "$1" 2>/dev/null |
		sed -n 's/.*"id":"\(sha256:[0-9a-f]*\)".*/\1/p'
}
min=$(image_id minimal); data=$(image_id data); node=$(image_id node)
[ -n "$min" ] || missing "no image of profile minimal"
[ -n "$data" ] || missing "no image of profile data"
[ -n "$node" ] || missing "no image of profile node"
for id in "$min" "$data" "$node"; do
	"$docker" image inspect "$id" >/dev/null 2>&1 || missing "image $id is not in dockerd"
done

e2e_tmpdir cordon-e2e-profiles
session="e2e-profiles-$$"
cleanup() {
	e2e_rm_containers --filter "label=cordon.session=$session"
}
state="$tmp/state"
mkdir -p "$state"
export CORDON_CONFIG="$tmp/cordon.json"
# tiny: a profile of our own, on minimal's image, that nobody probed.
printf '{"state_dir":"%s","audit_log":"%s/audit.log","image":{"id":"%s","profiles":{"data":{"id":"%s"},"node":{"id":"%s"},"tiny":{"id":"%s"}}}}\n' \
	"$state" "$tmp" "$min" "$data" "$node" "$min" >"$CORDON_CONFIG"

for p in minimal data node; do
	"$cordon" probe --net none --profile "$p" >"$tmp/probe-$p.json" 2>"$tmp/probe-$p.err" ||
		fail "probe of profile $p: $(cat "$tmp/probe-$p.err") $(cat "$tmp/probe-$p.json")"
done
[ -f "$state/probe-none.json" ] && [ -f "$state/probe-none-data.json" ] &&
	[ -f "$state/probe-none-node.json" ] || fail "probe records per profile: $(ls "$state")"
grep -q "\"image\":\"$data\"" "$state/probe-none-data.json" ||
	fail "data's probe record does not name its image"

# crun NAME ARGS... < code: cordon run, stdout/stderr/exit in $tmp/NAME.*
crun() {
	local n=$1; shift
	"$cordon" run --session "$session" --timeout 60 "$@" \
		>"$tmp/$n.out" 2>"$tmp/$n.err"
	echo $? >"$tmp/$n.rc"
}
# ok NAME: the run exited 0 with status ok, else fail with its output
# (a library that fails under gVisor shows its traceback here).
ok() {
	[ "$(cat "$tmp/$1.rc")" = 0 ] || fail "$1: cordon run failed: $(cat "$tmp/$1.err")"
	grep -q '"status":"ok","exit_code":0' "$tmp/$1.out" ||
		fail "$1: the job failed: $(cat "$tmp/$1.out")"
}
# stdout NAME: the job's stdout, decoded from the result.
stdout() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["stdout"], end="")' "$tmp/$1.out"; }
field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$tmp/$1.out" "$2"; }
expect_out() {	# NAME TEXT
	ok "$1"
	[ "$(stdout "$1")" = "$2" ] || fail "$1: stdout '$(stdout "$1")', want '$2'"
}

# minimal: python and bash; node is not there.
echo 'print(1)' | crun py
expect_out py 1
[ "$(field py profile)" = minimal ] && [ "$(field py lang)" = python ] &&
	[ "$(field py image)" = "$min" ] || fail "py: $(cat "$tmp/py.out")"
# bash -s reads its script from stdin line by line: a command that reads
# stdin takes the script's next line (documented).
printf 'x=abc\necho $((6*7)) ${x^^}\nread -r line\nnot a command\necho "read: $line"\n' |
	crun sh --lang bash
expect_out sh "42 ABC
read: not a command"
[ "$(field sh lang)" = bash ] || fail "sh: $(cat "$tmp/sh.out")"
echo 'console.log(1)' | crun nonode --lang node --profile minimal
[ "$(cat "$tmp/nonode.rc")" != 0 ] || fail "node ran in minimal: $(cat "$tmp/nonode.out")"
grep -q "profile 'minimal' has no node" "$tmp/nonode.err" ||
	fail "nonode: $(cat "$tmp/nonode.err")"

# data: each library does real work inside the sandbox.
cat >"$tmp/numpy.py" <<'PY'
import numpy as np
a = np.array([[2.0, 1.0], [1.0, 3.0]])
x = np.linalg.solve(a, np.array([3.0, 5.0]))
print([round(float(v), 6) for v in x], int(np.arange(10**6, dtype=np.int64).sum()))
print(round(float(np.linalg.det(a)), 6), np.__version__ != "")
PY
crun numpy --profile data <"$tmp/numpy.py"
expect_out numpy "[0.8, 1.4] 499999500000
5.0 True"
[ "$(field numpy profile)" = data ] && [ "$(field numpy image)" = "$data" ] ||
	fail "numpy: $(cat "$tmp/numpy.out")"

mkdir -p "$tmp/in"
printf 'region,units,price\nnorth,3,2.5\nsouth,5,1.0\nnorth,1,2.5\neast,2,4.0\n' >"$tmp/in/sales.csv"
cat >"$tmp/pandas.py" <<'PY'
import pandas as pd
df = pd.read_csv("/in/sales.csv")
df["total"] = df.units * df.price
s = df.groupby("region")["total"].sum().sort_index()
print(len(df), ",".join(f"{k}={v:g}" for k, v in s.items()))
PY
crun pandas --profile data --in "$tmp/in/sales.csv" <"$tmp/pandas.py"
expect_out pandas "4 east=8,north=10,south=5"

mkdir -p "$tmp/out"
cat >"$tmp/plot.py" <<'PY'
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
fig, ax = plt.subplots(figsize=(3, 2))
ax.plot([0, 1, 2, 3], [0, 1, 4, 9])
fig.savefig("/tmp/out/plot.png")
print(matplotlib.get_backend())
PY
crun plot --profile data --out "$tmp/out" <"$tmp/plot.py"
ok plot
stdout plot | grep -qi '^agg$' || fail "plot: backend $(stdout plot)"
[ -s "$tmp/out/plot.png" ] || fail "plot: no PNG came back: $(cat "$tmp/plot.out")"
head -c 8 "$tmp/out/plot.png" | od -An -tx1 | tr -d ' \n' | grep -qx '89504e470d0a1a0a' ||
	fail "plot: not a PNG: $(head -c 16 "$tmp/out/plot.png" | od -c)"
png_bytes=$(stat -c %s "$tmp/out/plot.png")

cat >"$tmp/scipy.py" <<'PY'
from scipy import integrate, optimize, linalg
import numpy as np
print(round(integrate.quad(lambda x: x * x, 0, 3)[0], 6))
print(round(optimize.brentq(lambda x: x * x - 2, 0, 2), 6))
print(round(float(linalg.det(np.array([[1.0, 2.0], [3.0, 4.0]]))), 6))
PY
crun scipy --profile data <"$tmp/scipy.py"
expect_out scipy "9.0
1.414214
-2.0"

# node: --lang node picks the node profile by itself.
echo 'console.log(1)' | crun js --lang node
expect_out js 1
[ "$(field js profile)" = node ] && [ "$(field js image)" = "$node" ] ||
	fail "js: $(cat "$tmp/js.out")"
echo 'let s = 0; for (let i = 1; i <= 100; i++) s += i; console.log(s, typeof process.version)' |
	crun js2 --lang node --profile node
expect_out js2 "5050 string"
# node, python and bash in the node profile share python3 (the probe's).
echo 'import sys; print(sys.version_info[0])' | crun nodepy --profile node
expect_out nodepy 3

# bash and node through the --out wrapper (its child is their interpreter).
mkdir -p "$tmp/out2" "$tmp/out3"
printf 'echo hi >/tmp/out/b.txt\necho done\n' | crun shout --lang bash --out "$tmp/out2"
expect_out shout 'done'
[ "$(cat "$tmp/out2/b.txt")" = hi ] || fail "shout: b.txt: $(ls -la "$tmp/out2")"
echo 'require("fs").writeFileSync("/tmp/out/n.txt", "node"); console.log("w")' |
	crun jsout --lang node --out "$tmp/out3"
expect_out jsout w
[ "$(cat "$tmp/out3/n.txt")" = node ] || fail "jsout: n.txt: $(ls -la "$tmp/out3")"

# tiny was never probed: refused, and not probed by the run either.
echo 'print(1)' | crun tiny --profile tiny
[ "$(cat "$tmp/tiny.rc")" != 0 ] || fail "tiny ran unprobed: $(cat "$tmp/tiny.out")"
grep -q 'no probe has run for --net none' "$tmp/tiny.err" || fail "tiny: $(cat "$tmp/tiny.err")"
[ -f "$state/probe-none-tiny.json" ] && fail "tiny: the run probed"
# A failed record for tiny: refused; the other profiles still run.
printf '{"mode":"none","pass":false,"at_ms":%s,"image":"%s","controls":[],"failed":"capabilities"}\n' \
	"$(date +%s%3N)" "$min" >"$state/probe-none-tiny.json"
echo 'print(1)' | crun tiny2 --profile tiny
[ "$(cat "$tmp/tiny2.rc")" != 0 ] || fail "tiny ran with a failed probe"
grep -q 'failed (capabilities)' "$tmp/tiny2.err" || fail "tiny2: $(cat "$tmp/tiny2.err")"
echo 'print(2)' | crun py2
expect_out py2 2

echo "ok: minimal python+bash (node refused), data numpy/pandas(--in)/matplotlib(PNG" \
	"$png_bytes bytes via --out)/scipy, node console.log, bash and node via --out," \
	"unprobed and failed profile refused"
for n in py sh numpy pandas plot scipy js; do
	echo "duration_ms $n: $(field $n duration_ms)"
done
exit 0
