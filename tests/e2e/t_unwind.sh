# t_unwind.sh — user-space unwinding of cpu_profile (engine/symbolize/unwind.c) on the gcc-built fixtures
# of tests/unit/unwind.mk (built by `make unit`):
# - leaf: `high-cpu` on leaf_main, whose hot leaf crc32_slice_update (libleaf.so, gcc -O2
#   -fno-omit-frame-pointer: checked with objdump to push no %rbp) hides its caller from the
#   frame-pointer walk; the folded stacks must read main;handle_batch;crc32_slice_update for
#   >= 90% of the leaf's samples, the inserted frame marked "cfi".
# - control: `high-cpu` on cpu_burner (clang, leaf frame pointers): the walk is already right,
#   nothing (<= 1%: a sample on a prologue is a legitimate fix) is inserted, the path is intact.
# - kernel mode: `high-cpu` on syscall_storm: samples taken in the kernel carry the task's user
#   registers, so glibc's frameless write() wrapper keeps its caller log_byte (>= 90%).
# - dwarf: `high-cpu --param unwind=dwarf` (cpu_profile's user_unwind) on nofp_main (-O2
#   -fomit-frame-pointer): >= 90% of user-mode samples unwind to main, frames marked "dwarf", no
#   ring buffer overflow, no missing-frame-pointers verdict; the same binary with fp reaches main
#   in < 50% (what makes the dwarf result mean something).
. "$(dirname "$0")/lib.sh"
FIX="$ROOT/$BUILD/fixtures"
for f in libleaf.so leaf_main nofp_main; do
	[ -f "$FIX/$f" ] || fail "fixture $FIX/$f not built: run make unit"
done
stop_wl() { kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null; }

objdump -d --no-show-raw-insn "$FIX/libleaf.so" |
	awk '/<crc32_slice_update>:/ { f = 1; next } f && /^$/ { exit } f' > "$TMP/leaf.s"
[ -s "$TMP/leaf.s" ] || fail "no crc32_slice_update in libleaf.so"
! grep -q 'push.*%rbp' "$TMP/leaf.s" || fail "crc32_slice_update pushes %rbp: not a frameless leaf any more"

# --- leaf ------------------------------------------------------------------------------------
start "$FIX/leaf_main"
"$DIAG" high-cpu --pid "$PID" --duration 3 --param hz=499 --json --folded "$TMP/leaf.folded" \
	> "$TMP/leaf.json" 2> "$TMP/leaf.err"
rc=$?
stop_wl
[ "$rc" = 0 ] || [ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "leaf: exit $rc: $(cat "$TMP/leaf.err")"
grep -q 'main;handle_batch;crc32_slice_update' "$TMP/leaf.folded" ||
	fail "leaf: folded stacks lack main;handle_batch;crc32_slice_update: $(sort -t' ' -k2 -nr "$TMP/leaf.folded" | head -3)"
CHECK_LET='p = res["profile"]; L = [s for s in p["stacks"] if s["user"][:1] == ["crc32_slice_update"]]
with_caller = sum(s["count"] for s in L if s["user"][1:2] == ["handle_batch"]); leaf = sum(s["count"] for s in L)'
check "$TMP/leaf.json" 'p["user_unwind"] == "fp" and p["unwind"]["leaf_fixup"] and p["unwind"]["fixed_leaves"] > 0' "leaf: no leaf fixed"
check "$TMP/leaf.json" 'leaf > 0.5 * p["samples"] and with_caller >= 0.9 * leaf' "leaf: handle_batch missing under crc32_slice_update"
check "$TMP/leaf.json" 'all(s.get("user_from", [""] * 2)[1] == "cfi" for s in L if s["user"][1:2] == ["handle_batch"])' "leaf: inserted frames not marked cfi"
# (a consumer that falls behind on a loaded machine may lose a few to a full ring: 2% at most)
check "$TMP/leaf.json" 'p["unwind"]["ring_full"] <= 0.02 * p["unwind"]["sent"] and p["unwind"]["unwound"] >= 0.98 * p["unwind"]["sent"]' "leaf: samples lost on the way"
assert_released "the leaf run"

# --- control ---------------------------------------------------------------------------------
start "$WL/cpu_burner"
"$DIAG" high-cpu --pid "$PID" --duration 2 --param hz=499 --json --folded "$TMP/ctl.folded" \
	> "$TMP/ctl.json" 2> "$TMP/ctl.err"
rc=$?
stop_wl
[ "$rc" = 0 ] || [ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "control: exit $rc: $(cat "$TMP/ctl.err")"
CHECK_LET='p = res["profile"]; u = p["unwind"]'
check "$TMP/ctl.json" 'u["fixed_leaves"] <= 0.01 * p["samples"] and u["leaf_frame_ok"] > 0.5 * p["samples"]' "control: frames inserted into frame-pointer stacks"
grep -q 'main;serve_requests;handle_request;compute_checksum' "$TMP/ctl.folded" || fail "control: call path lost"

# --- kernel-mode samples: the user registers are the task's, so the libc syscall wrapper (a
# frameless leaf in glibc) gets its caller too ----------------------------------------------
start "$WL/syscall_storm"
"$DIAG" high-cpu --pid "$PID" --duration 2 --param hz=499 --json > "$TMP/sys.json" 2> "$TMP/sys.err"
rc=$?
stop_wl
[ "$rc" = 0 ] || [ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "syscalls: exit $rc: $(cat "$TMP/sys.err")"
CHECK_LET='p = res["profile"]; W = [s for s in p["stacks"] if s["user"][:1] == ["write"]]
w = sum(s["count"] for s in W); wk = sum(s["count"] for s in W if s["in_kernel"])
called = sum(s["count"] for s in W if s["user"][1:2] == ["log_byte"])'
check "$TMP/sys.json" 'wk > 0 and called >= 0.9 * w' "syscalls: write() without its caller log_byte in kernel-mode samples"

# --- dwarf -----------------------------------------------------------------------------------
for mode in dwarf fp; do
	start "$FIX/nofp_main"
	"$DIAG" high-cpu --pid "$PID" --duration 3 --param hz=499 --param unwind=$mode --json \
		> "$TMP/$mode.json" 2> "$TMP/$mode.err"
	rc=$?
	stop_wl
	[ "$rc" = 0 ] || [ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "$mode: exit $rc: $(cat "$TMP/$mode.err")"
done
CHECK_LET='p = res["profile"]; U = [s for s in p["stacks"] if not s["in_kernel"]]
to_main = sum(s["count"] for s in U if "main" in s["user"]); user = sum(s["count"] for s in U)'
check "$TMP/dwarf.json" 'p["user_unwind"] == "dwarf" and user > 0 and to_main >= 0.9 * user' "dwarf: < 90% of user samples unwound to main"
check "$TMP/dwarf.json" 'p["unwind"]["ring_full"] <= 0.02 * p["unwind"]["sent"] and p["unwind"]["dwarf_complete"] >= 0.9 * p["unwind"]["unwound"]' "dwarf: samples refused by the ring buffer, or unwinds not complete"
check "$TMP/dwarf.json" 'any(s["user"][:4] == ["mix_block", "process_job", "run_jobs", "main"] and set(s["user_from"]) == {"dwarf"} for s in U)' "dwarf: no mix_block;process_job;run_jobs;main stack marked dwarf"
check "$TMP/dwarf.json" 'not any(v["id"] == "missing-frame-pointers" for v in r["verdicts"])' "dwarf: the missing-frame-pointers verdict fired on full stacks"
check "$TMP/fp.json" 'user > 0 and to_main < 0.5 * user' "fp on -fomit-frame-pointer code reaches main: the dwarf test proves nothing"
assert_released "the dwarf runs"
