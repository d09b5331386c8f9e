# A process whose CPU goes to the kernel through one small syscall in a tight loop: the top
# verdict is "CPU-bound in the kernel" and names write.
. "$(dirname "$0")/lib.sh"
start "$WL/syscall_storm"
"$DIAG" high-cpu --pid "$PID" --duration 3 --json > "$TMP/r.json"
rc=$?
[ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "exit code $rc, want 4 or 5"
[ "$(json "$TMP/r.json" 'r["verdicts"][0]["id"]')" = cpu-bound-kernel ] || fail "top verdict: $(json "$TMP/r.json" 'r["verdicts"][0]')"
json "$TMP/r.json" 'r["verdicts"][0]["title"] + " ".join(r["verdicts"][0]["evidence"])' | grep -q 'write' || fail "kernel verdict does not name write: $(json "$TMP/r.json" 'r["verdicts"][0]')"
[ "$(json "$TMP/r.json" 'r["results"]["syscalls"]["syscalls"][0]["name"]')" = write ] || fail "top syscall is not write"
assert_released "a kernel-bound run"
