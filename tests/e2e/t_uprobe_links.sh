# t_uprobe_links.sh — a --pid target that forks gets a uprobe link a site, not one multi-uprobe
# link a program: a child forked while a multi-uprobe link is attached keeps its breakpoints, and
# every call of a probed function in it traps with no program run to count it (a postmaster's
# new backends under memory-growth --pid: pgbench lost 30% while the report said 2%,
# docs/performance.md). memory-growth's allocations probe on:
# (a) a Python process with a child (a forking server's shape) → probes[].uprobe_links is
#     "per-site: the target forks";
# (b) the control, the same process without a child → "multi" where the kernel has multi-uprobe
#     links (6.6+: what diagnose doctor says), "per-site" where it has not.
# Nothing stays attached after either run.
. "$(dirname "$0")/lib.sh"

command -v python3 >/dev/null || skip "python3 is not installed"
links_of() { json "$1" "next(x.get('uprobe_links') for x in r['probes'] if x['id'] == 'allocs')"; }

# (a) a parent whose child sleeps
start python3 -c 'import os, time
if os.fork() == 0:
    time.sleep(600)
time.sleep(600)'
sleep 0.5
collect "$TMP/forks.json" memory-growth --pid "$PID" --duration 1
assert_released "memory-growth on a process with a child"
[ "$(links_of "$TMP/forks.json")" = "per-site: the target forks" ] ||
	fail "a forking target: uprobe_links is $(links_of "$TMP/forks.json"): $(json "$TMP/forks.json" 'r["probes"]')"
pkill -9 -P "$PID" 2>/dev/null

# (b) the same without a child
start python3 -c 'import time; time.sleep(600)'
collect "$TMP/alone.json" memory-growth --pid "$PID" --duration 1
assert_released "memory-growth on a process without children"
want=per-site
uname -r | awk -F. '{ exit !($1 > 6 || ($1 == 6 && $2 >= 6)) }' && want=multi
[ "$(links_of "$TMP/alone.json")" = "$want" ] ||
	fail "a target without children: uprobe_links is $(links_of "$TMP/alone.json"), not $want"
exit 0
