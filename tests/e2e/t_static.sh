#!/bin/bash
# t_static.sh — a probe that cannot apply to a target does not refuse the run (issue 51): a static
# Go binary (Debian's golang-go, CGO_ENABLED=0: no libc mapped, as Go services ship) and a
# `gcc -static` C program, through every recipe that takes a pid. Each runs (exit 0, 4 or 5); the
# probes with nothing to apply to (latency's resolver probe: no libc; memory-growth's allocations:
# no malloc in the Go binary) are in the report's probes with why (`not_applicable`) and in the
# text report's "Not checked", with no results; the others collect. Before: latency refused the Go
# binary with exit 2 ("the target maps no libc"). Control: the dynamically linked cpu_burner, every
# probe applies.
. "$(dirname "$0")/lib.sh"
command -v go >/dev/null || skip "go is not installed (golang-go: make deps)"
mkdir -p "$ROOT/$BUILD/gocache"
( cd "$TMP" && HOME="$TMP" GOCACHE="$ROOT/$BUILD/gocache" GOPATH="$TMP/gopath" GO111MODULE=off CGO_ENABLED=0 \
	go build -o "$TMP/go_static" "$ROOT/tests/workloads/go_static.go" ) > "$TMP/go.log" 2>&1 ||
	fail "go build: $(tail -3 "$TMP/go.log")"
grep -q ' libc' <(ldd "$TMP/go_static" 2>&1) && fail "the Go binary links libc"
gcc -O2 -static -o "$TMP/static_burner" "$ROOT/tests/workloads/cpu_burner.c" 2> "$TMP/gcc.log" ||
	fail "gcc -static: $(tail -3 "$TMP/gcc.log")"

# every_recipe NAME: each recipe that takes a pid, on $PID; the JSON reports in $TMP/NAME-RECIPE.json
every_recipe() {
	for r in high-cpu latency memory-growth io-saturation network-errors triage; do
		"$DIAG" "$r" --pid "$PID" --duration 2 --json > "$TMP/$1-$r.json" 2> "$TMP/$1-$r.err"; rc=$?
		case $rc in 0 | 4 | 5) ;; *) fail "$1: $r: exit $rc: $(tail -2 "$TMP/$1-$r.err")" ;; esac
	done
	assert_released "$1 through every recipe"
}
na() { json "$1" '" ".join(sorted(p["id"] for p in r["probes"] if "not_applicable" in p))'; }

start "$TMP/go_static"
every_recipe go
[ "$(na "$TMP/go-latency.json")" = lookups ] || fail "go: latency's not-applicable probes: '$(na "$TMP/go-latency.json")'"
check "$TMP/go-latency.json" "'lookups' not in res and res['offcpu']['stacks'] and 'maps no libc' in [p for p in r['probes'] if p['id'] == 'lookups'][0]['not_applicable']" \
	"go: latency did not go on without its resolver probe"
[ "$(na "$TMP/go-memory-growth.json")" = allocs ] || fail "go: memory-growth's not-applicable probes: '$(na "$TMP/go-memory-growth.json")'"
"$DIAG" latency --pid "$PID" --duration 1 > "$TMP/go-latency.txt" 2>&1
grep -A1 '^Not checked' "$TMP/go-latency.txt" | grep -q 'lookups (name_lookups): the target maps no libc' ||
	fail "go: the text report does not say what was not checked: $(grep -A2 'Not checked' "$TMP/go-latency.txt")"
{ kill -9 "$PID"; wait "$PID"; } 2>/dev/null

start "$TMP/static_burner"
every_recipe static
[ "$(na "$TMP/static-latency.json")" = lookups ] || fail "static C: latency's not-applicable probes: '$(na "$TMP/static-latency.json")'"
check "$TMP/static-high-cpu.json" "any(v['id'] in ('cpu-bound-user', 'busy') and 'compute_checksum' in v['title'] for v in r['verdicts'])" \
	"static C: high-cpu does not name its hot function: $(json "$TMP/static-high-cpu.json" '[(v["id"], v["title"]) for v in r["verdicts"]]')"
{ kill -9 "$PID"; wait "$PID"; } 2>/dev/null

# the control: a dynamically linked program, every probe applies
start "$WL/cpu_burner"
"$DIAG" latency --pid "$PID" --duration 2 --json > "$TMP/dyn.json" 2> "$TMP/dyn.err"; rc=$?
case $rc in 0 | 4 | 5) ;; *) fail "control: exit $rc: $(tail -2 "$TMP/dyn.err")" ;; esac
[ -z "$(na "$TMP/dyn.json")" ] || fail "control: probes not applicable to a dynamically linked program: $(na "$TMP/dyn.json")"
check "$TMP/dyn.json" "'lookups' in res" "control: no resolver results"
assert_released "the control"
echo "ok: a static Go binary and a static C program run through every recipe, the probes with nothing to apply to noted"
