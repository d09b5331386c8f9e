# `diagnose doctor`: one line per check with the right verdict for this kernel, one per probe kind
# with the features it needs, one per recipe with what it runs here, exit 0 as root,
# exit 3 naming the missing capability as nobody, and no BPF program or link left behind.
. "$(dirname "$0")/lib.sh"

status_of() { awk -v n="$1" '$2 == n { print $1 }' "$TMP/out"; }

"$DIAG" doctor > "$TMP/out" 2> "$TMP/err"
rc=$?
cat "$TMP/out"
[ "$rc" = 0 ] || fail "doctor as root: exit $rc, want 0 ($(cat "$TMP/err"))"
[ ! -s "$TMP/err" ] || fail "doctor wrote to stderr: $(cat "$TMP/err")"
tail -1 "$TMP/out" | grep -Eq '^doctor: [0-9]+ ok, [0-9]+ missing' || fail "no summary line"

for c in kernel btf privileges tracefs perf_paranoid bpf_jit unpriv_bpf tracepoint raw_tp tp_btf \
	 fentry kprobe uprobe perf_event hw_counters bpf_stats hit_costs task_storage; do
	[ "$(grep -c "^[a-z]* *$c " "$TMP/out")" = 1 ] || fail "not exactly one line for $c"
	grep -E "^[a-z]+ +$c " "$TMP/out" | grep -Eq ': [^:]{10,}$' || fail "$c line lacks a consequence"
done
for c in btf privileges tracefs tracepoint raw_tp tp_btf uprobe perf_event bpf_stats hit_costs; do
	[ "$(status_of $c)" = ok ] || fail "$c: $(status_of $c), want ok"
done
# the per-hit costs the budgets count: a trap costs something, in microseconds
grep -E '^ok +hit_costs +a uprobe trap [0-9.]+ us' "$TMP/out" | grep -qv 'trap 0.0 us' ||
	fail "hit_costs: $(grep hit_costs "$TMP/out")"
for c in kprobe fentry hw_counters; do
	case $(status_of $c) in ok|missing) ;; *) fail "$c: '$(status_of $c)', want ok or missing" ;; esac
done
# One line per probe kind of the catalog (engine/probes/, as $BUILD/catalog_list.h lists it), from the features it declares; here,
# as root, every kind's features work, and its real object loads (doctor_load.c: relocated and
# verified on this kernel, with its attach variant) unless it needs a recipe's option to load.
[ -n "$(catalog_kinds)" ] || fail "no probe kinds in $BUILD/catalog_list.h"
for k in $(catalog_kinds); do
	[ "$(grep -Ec "^[a-z]+ +kind $k +needs " "$TMP/out")" = 1 ] || fail "not exactly one line for probe kind $k"
	grep -Eq "^ok +kind $k +needs .*: (every one works; (its object loads \([a-z_]+\)|its object loads only with a recipe's .[a-z_]+.: not tried)|nothing to check)$" "$TMP/out" ||
		fail "probe kind $k: $(grep -E " kind $k " "$TMP/out")"
done
for k in block_io kernel_allocs off_cpu; do
	grep -Eq "^ok +kind $k +needs .*; its object loads \((raw_tp|tp_btf|tracepoint)\)$" "$TMP/out" ||
		fail "probe kind $k: its object's load not reported: $(grep -E " kind $k " "$TMP/out")"
done
# The kprobe line follows the kprobe PMU; hardware counters follow the CPU PMU.
[ -d /sys/bus/event_source/devices/kprobe ] || [ "$(status_of kprobe)" = missing ] ||
	fail "kprobe ok without a kprobe PMU"
# This VM: no kprobe PMU and no CPU PMU. There kprobes, fentry and hw counters are unavailable.
if [ ! -d /sys/bus/event_source/devices/kprobe ] && [ ! -d /sys/bus/event_source/devices/cpu ]; then
	for c in kprobe fentry hw_counters; do
		[ "$(status_of $c)" = missing ] || fail "$c: $(status_of $c), want missing on this VM"
	done
	grep -q '^missing kprobe .*without kprobes' "$TMP/out" || fail "kprobe line does not say why"
fi

# One line per shipped recipe (the recipe directory: $DIAGNOSE_RECIPES, lib.sh), from its probes'
# kinds above: here every one runs, fully or with kinds only a run's options load; the summary
# counts them. (What an older kernel makes of them: tests/unit/test_doctor_recipes.c.)
for r in "$ROOT"/recipes/*.yaml; do
	r=$(basename "$r" .yaml)
	grep -Eq "^ok +recipe $r +runs( fully: every probe's object loads|: no probe fails; some load only with a run's options or as root \(not tried\))$" "$TMP/out" ||
		fail "recipe $r: $(grep -E " recipe $r " "$TMP/out")"
done
tail -1 "$TMP/out" | grep -Eq "; recipes: [0-9]+ run fully, [0-9]+ run \(some probes not tried\), 0 degraded, 0 cannot run;" ||
	fail "summary does not count the recipes: $(tail -1 "$TMP/out")"
"$DIAG" doctor --recipes "$TMP/no-such-dir" > "$TMP/out2" 2>&1; rc=$?
[ "$rc" = 0 ] || fail "doctor without recipes: exit $rc"
grep -Eq "^warn +recipes +--recipes $TMP/no-such-dir is not a directory: what each recipe runs here is not said$" "$TMP/out2" ||
	fail "doctor without recipes: $(grep recipes "$TMP/out2")"

assert_released "doctor" # its doctor_* programs are among ours (lib.sh)

as_nobody "$NOBODY_DIAG" doctor > "$TMP/out" 2>&1
rc=$?
[ "$rc" = 3 ] || fail "doctor as nobody: exit $rc, want 3: $(cat "$TMP/out")"
grep -q '^missing privileges .*CAP_BPF' "$TMP/out" || fail "nobody: no missing CAP_BPF line"
tail -1 "$TMP/out" | grep -q '^doctor: .*(exit 3)' || fail "nobody: summary does not say exit 3"
exit 0
