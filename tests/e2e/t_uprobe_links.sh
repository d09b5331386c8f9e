# t_uprobe_links.sh — a --pid target that forks gets a uprobe link a site, not one multi-uprobe
# link a program: a child forked while a multi-uprobe link is attached keeps its breakpoints, and
# every call of a probed function in it traps with no program run to count it (a postmaster's
# new backends under memory-growth --pid: pgbench lost 30% while the report said 2%,
# docs/performance.md). memory-growth's allocations probe on:
# (a) a Python process without children: "multi" where the kernel has multi-uprobe links (its
#     BTF names BPF_TRACE_UPROBE_MULTI: 6.6+), "per-site" where it has not;
# (b) the same with a child (a forking server's shape) → "per-site: the target forks" where (a)
#     was multi, "per-site" where it was not.
# Nothing stays attached after either run.
. "$(dirname "$0")/lib.sh"

command -v python3 >/dev/null || skip "python3 is not installed"
links_of() { json "$1" "next(x.get('uprobe_links') for x in r['probes'] if x['id'] == 'allocs')"; }

# (a) alone
start python3 -c 'import time; time.sleep(600)'
collect "$TMP/alone.json" memory-growth --pid "$PID" --duration 1
assert_released "memory-growth on a process without children"
alone=$(links_of "$TMP/alone.json")
case $alone in multi | per-site) ;; *) fail "a target without children: uprobe_links is $alone: $(json "$TMP/alone.json" 'r["probes"]')" ;; esac

# (b) a parent whose child sleeps (and exits at the end of its sleep, not into the parent's code)
start python3 -c 'import os, time
if os.fork() == 0:
    time.sleep(600)
    os._exit(0)
time.sleep(600)'
end=$(($(date +%s) + 10))
until CHILD=$(pgrep -P "$PID"); do
	[ "$(date +%s)" -le "$end" ] || fail "the python child did not start"
	sleep 0.1
done
PIDS="$PIDS $CHILD"
collect "$TMP/forks.json" memory-growth --pid "$PID" --duration 1
assert_released "memory-growth on a process with a child"
want="per-site: the target forks"
[ "$alone" = multi ] || want=per-site
[ "$(links_of "$TMP/forks.json")" = "$want" ] ||
	fail "a forking target: uprobe_links is $(links_of "$TMP/forks.json"), not $want: $(json "$TMP/forks.json" 'r["probes"]')"
exit 0
