# The /proc + cgroup sampler (probe kind proc_context) with every section, on a workload of known
# behaviour (tests/workloads/mem_grower.c: RSS grows RATE KiB/s, a file is appended to and synced):
# (a) the RSS slope is within a factor of 2 of RATE, the series has one point per reading and
#     the deltas agree with it; smaps_rollup and the cgroup (v1 or v2, whichever the target is in)
#     are reported;
# (b) wchar/syscw grew by what the workload wrote, write_bytes too unless the file is on tmpfs;
#     the disk table and pressure figures are well-formed; net counters come from the target's
#     namespace;
# (c) without a sections option the probe reads the cpu section only (what high-cpu uses);
# (d) an unknown section is refused at plan time with exit 2.
# The recipes live in a temporary directory; their Lua returns nothing: the JSON results are what
# is checked.
. "$(dirname "$0")/lib.sh"

WORKLOAD="$WL/mem_grower"
[ -x "$WORKLOAD" ] || fail "$WORKLOAD missing: run make"
RATE_KIB=8192


CHECK_LET='c = res["ctx"]' # for check (lib.sh): `c` is the sampler's results

# ---- (a) + (b): every section --------------------------------------------------------------
start "$WORKLOAD" "$RATE_KIB" "$TMP/written"
R=$(test_recipe sampler-all 4 <<EOF
  - id: ctx
    kind: proc_context
    filters: {pid: target}
    options: {sections: "cpu,memory,io,net"}
EOF
)
"$DIAG" "$R" --pid "$PID" --json > "$TMP/all.json" 2> "$TMP/all.err"
rc=$?
[ "$rc" = 0 ] || fail "exit code $rc, want 0: $(cat "$TMP/all.err")"
J="$TMP/all.json"
RATE=$((RATE_KIB * 1024))
check "$J" 'c["sections"] == "cpu,memory,io,net" and not c["exited"]' "sections"
check "$J" 'c["readings"] >= 4 and 3.5 <= c["wall_s"] <= 5' "too few readings, or a wrong window"
# (a) memory
check "$J" "$RATE / 2 <= c['memory']['rss_slope_bytes_per_s'] <= $RATE * 2" \
	"RSS slope not within a factor of 2 of $RATE bytes/s"
check "$J" "$RATE / 2 * c['wall_s'] <= c['memory']['rss_delta_bytes'] <= $RATE * 2 * c['wall_s']" \
	"RSS delta does not match the rate"
check "$J" 'c["memory"]["rss_anon_delta_bytes"] > 0 and c["memory"]["rss_bytes"] >= c["memory"]["rss_delta_bytes"]' \
	"RssAnon did not grow"
check "$J" 'len(c["memory"]["rss_series"]) == c["readings"] and c["memory"]["rss_series"][0]["t_s"] == 0' \
	"series: not one point per reading"
check "$J" 'all(a["t_s"] < b["t_s"] and a["bytes"] <= b["bytes"] for a, b in zip(c["memory"]["rss_series"], c["memory"]["rss_series"][1:]))' \
	"series: not increasing"
check "$J" 'c["memory"]["rss_series"][-1]["bytes"] - c["memory"]["rss_series"][0]["bytes"] == c["memory"]["rss_delta_bytes"]' \
	"series: ends differ from the delta"
check "$J" 'c["memory"]["smaps_rollup"]["pss_anon_delta_bytes"] > 0 and c["memory"]["smaps_rollup"]["private_dirty_bytes"] > 0' \
	"smaps_rollup: no anonymous growth"
check "$J" '"cgroup" not in c["memory"] or (c["memory"]["cgroup"]["version"] in (1, 2) and c["memory"]["cgroup"]["dir"].startswith("/sys/fs/cgroup") and c["memory"]["cgroup"]["current_bytes"] > 0 and "oom_kill" in c["memory"]["cgroup"]["events"])' \
	"memory cgroup malformed"
# The cgroup the target is in, as /proc/PID/cgroup says: v1 when a v1 hierarchy lists memory.
if grep -Eq '^[0-9]+:([^:]*,)?memory(,[^:]*)?:' "/proc/$PID/cgroup"; then
	check "$J" 'c["memory"]["cgroup"]["version"] == 1 and c["memory"]["cgroup"]["current_delta_bytes"] > 0' \
		"memory cgroup: want v1 and growing (its usage includes the target's RSS)"
fi
check "$J" 'all(0 <= c[s]["pressure"]["some_pct"] <= 100 for s in ("memory", "io")) and 0 <= c["psi"]["some_pct"] <= 100' \
	"pressure not a share of the window"
# (b) io: 16 KiB every 20 ms at most; at least a quarter of that in the window.
check "$J" 'c["io"]["wchar"] >= 16384 * 50 / 4 * c["wall_s"] and c["io"]["syscw"] >= 50 / 4 * c["wall_s"]' \
	"wchar/syscw did not grow by what was written"
if [ "$(stat -f -c %T "$TMP")" != tmpfs ]; then
	check "$J" 'c["io"]["write_bytes"] > 0' "write_bytes did not grow (file synced on $(stat -f -c %T "$TMP"))"
	check "$J" 'any(d["w_s"] > 0 and d["wkb_s"] > 0 and 0 <= d["util_pct"] <= 100 for d in c["io"]["disks"])' \
		"no disk with writes in the window"
fi
check "$J" 'all(d["aqu_sz"] >= 0 and d["w_await_ms"] >= 0 for d in c["io"]["disks"])' "disk table malformed"
check "$J" '"RetransSegs" in c["net"]["counters"]["Tcp"] and any(i["name"] == "lo" for i in c["net"]["interfaces"])' \
	"net: no Tcp counters or no lo interface"
check "$J" 'c["cpu_pct"] >= 0 and c["voluntary_ctxt_switches"] > 0' "cpu section"
{ kill -9 "$PID"; wait "$PID"; } 2>/dev/null

# ---- (c) the default: cpu only -------------------------------------------------------------
start "$WORKLOAD" 1024 "$TMP/written2"
R=$(test_recipe sampler-default 1 <<EOF
  - id: ctx
    kind: proc_context
    filters: {pid: target}
EOF
)
"$DIAG" "$R" --pid "$PID" --json > "$TMP/def.json" 2> "$TMP/def.err"
rc=$?
[ "$rc" = 0 ] || fail "default: exit code $rc, want 0: $(cat "$TMP/def.err")"
J="$TMP/def.json"
check "$J" 'c["sections"] == "cpu" and all(k not in c for k in ("memory", "io", "net"))' "default: not cpu only"
check "$J" 'all(k in c for k in ("utime_s", "stime_s", "cpu_pct", "threads", "voluntary_ctxt_switches", "nonvoluntary_ctxt_switches", "wall_s", "ncpus"))' \
	"default: a field high-cpu reads is missing"

# ---- (d) an unknown section ----------------------------------------------------------------
R=$(test_recipe sampler-bad 1 <<EOF
  - id: ctx
    kind: proc_context
    filters: {pid: target}
    options: {sections: "cpu,disk"}
EOF
)
"$DIAG" "$R" --pid "$PID" --json > /dev/null 2> "$TMP/bad.err"
rc=$?
[ "$rc" = 2 ] || fail "bad section: exit code $rc, want 2: $(cat "$TMP/bad.err")"
grep -q 'sections: "cpu,disk": expected a comma-separated list of cpu, memory, io, net' "$TMP/bad.err" ||
	fail "bad section: unclear message: $(cat "$TMP/bad.err")"
exit 0
