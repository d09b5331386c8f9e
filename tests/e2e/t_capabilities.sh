#!/bin/bash
# t_capabilities.sh — a binary given cap_bpf,cap_perfmon (setcap) runs for any local user: with
# capabilities but not root, diagnose keeps root's trust rules and takes only what the caller
# could ptrace (engine/common/privilege.h, docs/production.md#running-with-capabilities). An
# installed copy (trust_root) with file capabilities, run as nobody:
# (a) --pid 1 (root's): refused, exit 3. Before: profiled root's pid 1.
# (b) no target (the whole host): refused, exit 3.
# (c) --recipes, $DIAGNOSE_RECIPES and ./recipes naming a directory of nobody's, and a recipe file
#     of nobody's: none is read; the installed recipes only. Before: all were honoured.
# (d) tracefs at its default mode (root's alone): the error says so and names what would do,
#     and nothing is mounted. Before: "tracefs is not mounted", and diagnose tried to mount it.
# (e) with cap_dac_read_search too (tracefs readable): nobody's own process is diagnosed, and a
#     --comm run over a process of nobody's and one of root's covers nobody's only.
# (f) without capabilities, the advice names the capabilities and what they allow.
. "$(dirname "$0")/lib.sh"
command -v setcap >/dev/null || skip "setcap is not installed (libcap2-bin: make deps)"
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)
chmod 755 "$TMP"
X="$TMP/prefix"
trust_root "$X"
CAPDIAG="$X/bin/diagnose"
setcap cap_bpf,cap_perfmon+ep "$CAPDIAG" || skip_unsupported "file capabilities cannot be set on $TMP"
unset DIAGNOSE_RECIPES DIAGNOSE_POLICY DIAGNOSE_AUDIT_FILE

# by_nobody NAME ARGS...: ARGS (the capable copy) as nobody, from nobody's directory; exit code in $rc
U="$TMP/u"
mkdir -p "$U/recipes" "$U/lua"
chown -R 65534:65534 "$U"
by_nobody() {
	local name=$1
	shift
	(cd "$U" && exec "${NOBODY[@]}" "$@") > "$TMP/$name.out" 2> "$TMP/$name.err"
	rc=$?
}
refused() { # refused NAME PATTERN: exit 3 and the message
	[ "$rc" = 3 ] || fail "$1: exit $rc, want 3: $(cat "$TMP/$1.err")"
	grep -q -- "$2" "$TMP/$1.err" || fail "$1: the message does not say '$2': $(cat "$TMP/$1.err")"
}

# (a) root's pid 1
by_nobody pid1 "$CAPDIAG" high-cpu --pid 1 --duration 1
refused pid1 "uid 65534 could not ptrace it"
# (b) the whole host
by_nobody host "$CAPDIAG" triage --duration 1
refused host "a run of the whole host needs root or CAP_SYS_PTRACE"

# (c) nobody's recipes: a copy of high-cpu under another name, and its own snippet
cp "$ROOT/recipes/high-cpu.yaml" "$U/recipes/mine.yaml"
cp -r "$ROOT/lua/." "$U/lua/"
sed -i 's/^name: .*/name: mine/' "$U/recipes/mine.yaml"
chown -R 65534:65534 "$U"
by_nobody explicit "$CAPDIAG" high-cpu --recipes "$U/recipes" --pid 1 --duration 1
refused explicit "runs recipes only from $X/share/diagnose/recipes"
by_nobody env env DIAGNOSE_RECIPES="$U/recipes" "$CAPDIAG" mine --pid 1 --duration 1
[ "$rc" = 2 ] && grep -q 'no recipe "mine"' "$TMP/env.err" || fail "\$DIAGNOSE_RECIPES was honoured: exit $rc: $(cat "$TMP/env.err")"
by_nobody cwd "$CAPDIAG" mine --pid 1 --duration 1
[ "$rc" = 2 ] && grep -q 'no recipe "mine"' "$TMP/cwd.err" || fail "./recipes was searched: exit $rc: $(cat "$TMP/cwd.err")"
by_nobody file "$CAPDIAG" "$U/recipes/mine.yaml" --pid 1 --duration 1
refused file "runs the installed recipes by name only"
by_nobody list env DIAGNOSE_RECIPES="$U/recipes" "$CAPDIAG" list
grep -q '^mine' "$TMP/list.out" && fail "list showed nobody's recipes"
grep -q '^high-cpu' "$TMP/list.out" || fail "list: no installed recipes: $(cat "$TMP/list.out" "$TMP/list.err")"

# (d) tracefs readable by root only: said, nothing mounted
cp "$WL/cpu_burner" "$TMP/cpu_burner" # the checkout may be where nobody cannot go
"${NOBODY[@]}" "$TMP/cpu_burner" > /dev/null 2>&1 &
MINE=$!
PIDS="$PIDS $MINE"
"$TMP/cpu_burner" > /dev/null 2>&1 &
ROOTS=$!
PIDS="$PIDS $ROOTS"
sleep 0.3
mounts=$(grep -c tracefs /proc/self/mountinfo)
if [ "$(stat -c %a /sys/kernel/tracing)" = 700 ]; then
	by_nobody tracefs "$CAPDIAG" high-cpu --pid "$MINE" --duration 1
	refused tracefs "tracefs at /sys/kernel/tracing is not readable by uid 65534 (mode 0700)"
	[ "$(grep -c tracefs /proc/self/mountinfo)" = "$mounts" ] || fail "tracefs: a mount was added"
else
	echo "note: (d) not checked: tracefs is mode $(stat -c %a /sys/kernel/tracing) here"
fi

# (e) tracefs readable (cap_dac_read_search): nobody's own process, and only nobody's of a --comm
setcap cap_bpf,cap_perfmon,cap_dac_read_search+ep "$CAPDIAG"
by_nobody mine "$CAPDIAG" high-cpu --pid "$MINE" --duration 1 --json
case $rc in 0 | 4 | 5) ;; *) fail "own process: exit $rc: $(cat "$TMP/mine.err")" ;; esac
check "$TMP/mine.out" 'res["profile"]["samples"] > 0' "own process: no samples"
by_nobody comm "$CAPDIAG" high-cpu --comm cpu_burner --duration 1 --json
case $rc in 0 | 4 | 5) ;; *) fail "--comm: exit $rc: $(cat "$TMP/comm.err")" ;; esac
check "$TMP/comm.out" "[p['pid'] for p in r['target']['processes']] == [$MINE] and r['target'].get('processes_not_permitted') == 1" \
	"--comm: not exactly nobody's process: $(json "$TMP/comm.out" 'r["target"]')"
assert_released "the capable runs"

# (f) no capabilities: the advice
cp "$DIAG" "$TMP/plain-diagnose"
chmod 755 "$TMP/plain-diagnose"
by_nobody plain "$TMP/plain-diagnose" high-cpu --pid "$MINE" --duration 1
refused plain "cap_bpf,cap_perfmon+ep: then any local user runs the installed recipes on the processes they could ptrace"
echo "ok: with capabilities but not root, only the installed recipes run, on processes the caller could ptrace"
