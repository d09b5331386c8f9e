# Production mode: `diagnose approve` writes the lock, production runs only recipes whose files
# and BPF objects still match it, and every run, dry run and refusal leaves one JSON audit line.
# Works on an install in the temp dir (a copy of the binary, recipes/ and lua/: production's trust
# root is the installed recipes); the policy and audit files live there too.
. "$(dirname "$0")/lib.sh"

trust_root "$TMP/p"
DIAG=$PDIAG
LOCK="$P/recipes/approved.lock"
AUDIT="$TMP/audit.jsonl"
export DIAGNOSE_RECIPES="$P/recipes" DIAGNOSE_AUDIT_FILE="$AUDIT"
unset DIAGNOSE_MODE
# Production takes its audit files from the policy alone.
printf 'mode: development\naudit_file: %s\n' "$AUDIT" > "$TMP/dev-policy.yaml"
export DIAGNOSE_POLICY="$TMP/dev-policy.yaml"

runs=0 # commands that must each have appended one end record (a real run also writes a start record)
# expect CODE PATTERN CMD...: exit code, and PATTERN in the output (stderr, or stdout for verify)
expect() {
	want=$1 pat=$2; shift 2
	out=$("$@" 2>&1 >"$TMP/stdout"); rc=$?
	[ "$rc" = "$want" ] || fail "$*: exit $rc, want $want ($out)"
	{ echo "$out"; cat "$TMP/stdout"; } | grep -q -- "$pat" || fail "$*: message '$out' lacks '$pat'"
}
# audited CODE PATTERN CMD...: as expect, for a run; counts the audit line it must write
audited() {
	expect "$@"
	runs=$((runs + 1))
}
# last_audit PYTHON-EXPR: evaluated with `a` bound to the last audit line (parsed as JSON)
last_audit() {
	python3 -c 'import json, sys; a = json.loads(open(sys.argv[1]).read().splitlines()[-1]); print(eval(sys.argv[2]))' \
		"${AUDIT_FILE:-$AUDIT}" "$1"
}
check_audit() { # check_audit ACTION APPROVED MODE
	got=$(last_audit '"%s %s %s" % (a["action"], a["approved"], a["mode"])')
	[ "$got" = "$1 $2 $3" ] || fail "audit line: '$got', want '$1 $2 $3'"
}
# flip FILE: change one byte (the last character of the first comment line)
flip() {
	python3 - "$1" <<'EOF'
import sys
p = sys.argv[1]
lines = open(p, "rb").read().split(b"\n")
for i, l in enumerate(lines):
    if l.startswith(b"#") or l.startswith(b"--"):
        lines[i] = l[:-1] + (b"x" if l[-1:] != b"x" else b"y")
        break
open(p, "wb").write(b"\n".join(lines))
EOF
}

start "$WL/cpu_burner"

# --- approve: the lock, its round trip, verify --------------------------------------------------
"$DIAG" approve high-cpu --by e2e-tester > "$TMP/approve.out" 2>&1 || fail "approve: $(cat "$TMP/approve.out")"
[ -f "$LOCK" ] || fail "approve wrote no $LOCK"
grep -q '^\[recipe high-cpu\]$' "$LOCK" || fail "no [recipe high-cpu] in the lock"
grep -q '^approved_by = e2e-tester$' "$LOCK" || fail "approver not recorded"
for f in 'file recipes/high-cpu.yaml' 'file lua/high-cpu.lua' 'file lua/lib/diag.lua' 'bpf cpu_profile'; do
	grep -q "^$f sha256=[0-9a-f]\{64\}$" "$LOCK" || fail "lock lacks '$f sha256=...'"
done
cp "$LOCK" "$TMP/lock.1"
sleep 1.1 # a new date would show if the unchanged entry were rewritten
"$DIAG" approve high-cpu --by someone-else > /dev/null 2>&1 || fail "second approve"
cmp -s "$LOCK" "$TMP/lock.1" || fail "approving an unchanged recipe twice changed the lock: $(diff "$TMP/lock.1" "$LOCK")"
"$DIAG" verify > "$TMP/verify.out" 2>&1 || fail "verify of a fresh lock: $(cat "$TMP/verify.out")"
"$DIAG" list | grep -q 'approval: approved .* matches' || fail "list does not show the approval"
# A name the lock cannot hold (a Lua library "a b.lua") is refused before anything is written:
# approve never writes a lock that verify then rejects.
echo 'return {}' > "$P/lua/lib/a b.lua"
expect 2 'lua/lib/a b.lua" cannot go in the approvals lock' "$DIAG" approve high-cpu --by e2e-tester
cmp -s "$LOCK" "$TMP/lock.1" || fail "approve changed the lock for a library name the lock cannot hold"
rm "$P/lua/lib/a b.lua"
"$DIAG" verify > "$TMP/verify.out" 2>&1 || fail "verify after a refused approve: $(cat "$TMP/verify.out")"

# --- production: the approved recipe runs --------------------------------------------------------
"$DIAG" high-cpu --production --pid "$PID" --duration 1 --json > "$TMP/run.json" 2>"$TMP/run.err"
rc=$?
{ [ "$rc" = 0 ] || [ "$rc" = 4 ] || [ "$rc" = 5 ]; } || fail "approved production run: exit $rc ($(cat "$TMP/run.err"))"
runs=$((runs + 1))
check_audit run True production
[ "$(last_audit 'a["target"]["pid"]')" = "$PID" ] || fail "audit: target pid"
[ "$(last_audit 'a["target"]["comm"]')" = cpu_burner ] || fail "audit: target comm"
[ "$(last_audit 'a["recipe"]["sha256"]')" = "$(json "$TMP/run.json" 'r["recipe"]["sha256"]')" ] || fail "audit: recipe sha256"
[ "$(last_audit 'a["stop_reason"]')" = duration ] || fail "audit: stop_reason"
[ "$(last_audit 'a["params"]["duration"]')" = 1 ] || fail "audit: params.duration"
last_audit 'a["worst_verdict"] in ("ok", "info", "warning", "critical") and "bpf_cpu_pct" in a and a["uid"] == 0 and a["user"] and a["host"] and a["duration_s"] > 0' | grep -q True ||
	fail "audit: verdict/overhead/user/host fields: $(tail -1 "$AUDIT")"

# --- one byte changed in the YAML, the Lua snippet, the shared library: refused, file named -----
for f in recipes/high-cpu.yaml lua/high-cpu.lua lua/lib/diag.lua; do
	cp "$P/$f" "$TMP/orig"
	flip "$P/$f"
	cmp -s "$P/$f" "$TMP/orig" && fail "flip did not change $f"
	audited 3 "$f: sha256 approved [0-9a-f]\{12\}, now [0-9a-f]\{12\}" "$DIAG" high-cpu --production --pid "$PID" --duration 1
	echo "$out" | grep -q 'diagnose approve high-cpu. in a pull request' || fail "refusal does not say how to get approved: $out"
	check_audit refused False production
	expect 3 "$f: sha256 approved" "$DIAG" verify
	grep -q "$f" "$TMP/stdout" || fail "verify does not name $f"
	cp "$TMP/orig" "$P/$f"
done
"$DIAG" verify > /dev/null || fail "verify after restoring the files"

# --- parameters outside the recipe's ranges; ad-hoc and unapproved recipes ----------------------
audited 3 'max_duration_s' "$DIAG" high-cpu --production --pid "$PID" --duration 1000
check_audit refused False production
mkdir -p "$TMP/adhoc/recipes"
ln -s "$P/lua" "$TMP/adhoc/lua"
cp "$P/recipes/high-cpu.yaml" "$TMP/adhoc/recipes/high-cpu.yaml"
audited 3 'by name only' "$DIAG" "$TMP/adhoc/recipes/high-cpu.yaml" --production --pid "$PID" --duration 1
check_audit refused False production
sed 's/^name: high-cpu$/name: other-cpu/' "$P/recipes/high-cpu.yaml" > "$P/recipes/other-cpu.yaml"
audited 3 'recipe other-cpu is not approved.*diagnose approve other-cpu' "$DIAG" other-cpu --production --pid "$PID" --duration 1
check_audit refused False production
"$DIAG" list | grep -A2 '^other-cpu' | grep -q 'approval: not approved' || fail "list: other-cpu not shown as unapproved"

# --- dry runs of unapproved recipes are allowed everywhere --------------------------------------
audited 0 'a real run would be refused' "$DIAG" other-cpu --production --pid "$PID" --dry-run
check_audit dry-run False production
audited 0 '' "$DIAG" "$TMP/adhoc/recipes/high-cpu.yaml" --production --pid "$PID" --dry-run
check_audit dry-run False production
audited 0 '' "$DIAG" other-cpu --pid "$PID" --dry-run
check_audit dry-run False development

# --- a corrupt, truncated or missing lock: clear error, production refuses everything -----------
cp "$LOCK" "$TMP/lock.good"
head -c 300 "$TMP/lock.good" > "$LOCK"
expect 2 'approved.lock:[0-9]*: truncated' "$DIAG" verify
audited 3 'approvals lock is unusable: .*approved.lock:[0-9]*: truncated' "$DIAG" high-cpu --production --pid "$PID" --duration 1
check_audit refused False production
sed '/^\[end\]$/d' "$TMP/lock.good" > "$LOCK"
expect 2 'approved.lock:[0-9]*: truncated: no `\[end\]`' "$DIAG" verify
sed 's/^\(file lua\/high-cpu.lua sha256=\)./\1Z/' "$TMP/lock.good" > "$LOCK"
line=$(grep -n '^file lua/high-cpu.lua' "$LOCK" | cut -d: -f1)
expect 2 "approved.lock:$line: sha256 must be 64 lowercase hex digits" "$DIAG" verify
audited 3 "approved.lock:$line: sha256" "$DIAG" high-cpu --production --pid "$PID" --duration 1
check_audit refused False production
sed 's/^approved_by = /approver = /' "$TMP/lock.good" > "$LOCK"
expect 2 'approved.lock:[0-9]*: unknown key "approver"' "$DIAG" verify
rm -f "$LOCK"
expect 2 'no approvals lock' "$DIAG" verify
audited 3 'no approvals lock' "$DIAG" high-cpu --production --pid "$PID" --duration 1
check_audit refused False production
cp "$TMP/lock.good" "$LOCK"

# --- a policy file saying production cannot be overridden ---------------------------------------
printf 'mode: production\naudit_file: %s\n' "$AUDIT" > "$TMP/policy.yaml"
export DIAGNOSE_POLICY="$TMP/policy.yaml"
flip "$P/lua/high-cpu.lua"
# In production $DIAGNOSE_AUDIT_FILE is ignored (with a warning): the trail is the policy's.
audited 3 'DIAGNOSE_AUDIT_FILE.*ignored: in production mode the audit files are the policy' \
	env DIAGNOSE_AUDIT_FILE="$TMP/env-audit.jsonl" "$DIAG" high-cpu --pid "$PID" --duration 1
echo "$out" | grep -q 'lua/high-cpu.lua: sha256 approved' || fail "production policy: $out"
check_audit refused False production
[ -e "$TMP/env-audit.jsonl" ] && fail "production wrote the \$DIAGNOSE_AUDIT_FILE: $(cat "$TMP/env-audit.jsonl")"
audited 3 'lua/high-cpu.lua: sha256 approved' env DIAGNOSE_MODE=development "$DIAG" high-cpu --pid "$PID" --duration 1
cp "$ROOT/lua/high-cpu.lua" "$P/lua/high-cpu.lua"
"$DIAG" high-cpu --pid "$PID" --duration 1 > /dev/null 2>"$TMP/run.err"
rc=$?
{ [ "$rc" = 0 ] || [ "$rc" = 4 ] || [ "$rc" = 5 ]; } || fail "approved run under a production policy: exit $rc ($(cat "$TMP/run.err"))"
runs=$((runs + 1))
check_audit run True production
# The audit trail must be writable in production: else the run is refused.
printf 'mode: production\naudit_file: %s\n' "$TMP/no-such-dir/audit.jsonl" > "$TMP/policy-lost.yaml"
audited 3 'cannot use the audit file' env DIAGNOSE_POLICY="$TMP/policy-lost.yaml" "$DIAG" high-cpu --pid "$PID" --duration 1
runs=$((runs - 1)) # that line could not be written to $AUDIT
# A malformed policy fails closed (production: the trail is the audit_file read before the error).
printf 'audit_file: %s\nmode: production\nmode: development\n' "$AUDIT" > "$TMP/policy.yaml"
audited 2 'policy.yaml:3: key given twice' "$DIAG" high-cpu --pid "$PID" --duration 1
printf 'audit_file: %s\nmode: prod\n' "$AUDIT" > "$TMP/policy.yaml"
audited 2 'policy.yaml:2: mode: expected production or development' "$DIAG" high-cpu --pid "$PID" --dry-run
printf 'audit_file: %s\nmode: production\nextra: 1\n' "$AUDIT" > "$TMP/policy.yaml"
audited 2 'policy.yaml:3: unknown key' "$DIAG" high-cpu --pid "$PID" --duration 1
export DIAGNOSE_POLICY="$TMP/dev-policy.yaml"
# Outside production an unwritable audit file is a warning, not a refusal.
DIAGNOSE_AUDIT_FILE="$TMP/no-such-dir/audit.jsonl" "$DIAG" high-cpu --pid "$PID" --dry-run > /dev/null 2>"$TMP/warn.err" ||
	fail "development dry run with an unwritable audit file: $(cat "$TMP/warn.err")"
grep -q 'warning: cannot use the audit file' "$TMP/warn.err" || fail "no warning about the audit file"
runs=$((runs + 1)) # recorded in the policy's audit_file, $AUDIT

# --- every run, dry run and refusal wrote one end record, each valid JSON; every start record ----
# --- (written before anything loaded) has its end record with the same run_id --------------------
n=$(grep -vc '"action":"start"' "$AUDIT")
[ "$n" = "$runs" ] || fail "$n audit end records for $runs runs"
python3 - "$AUDIT" <<'EOF' || fail "audit lines are not all valid JSON with the required keys"
import json, sys
keys = {"time", "user", "uid", "host", "mode", "action", "exit", "recipe", "approved", "params",
        "target", "duration_s", "stop_reason", "worst_verdict", "bpf_cpu_pct", "run_id"}
started = {}
for n, line in enumerate(open(sys.argv[1]), 1):
    a = json.loads(line)
    missing = keys - a.keys()
    if missing:
        sys.exit("line %d lacks %s" % (n, sorted(missing)))
    if a["action"] == "start":
        files = a["recipe"].get("files", {})
        if not {"recipes/high-cpu.yaml", "lua/high-cpu.lua", "lua/lib/diag.lua"} <= files.keys():
            sys.exit("line %d: start record without the hashes of the files: %s" % (n, files))
        started[a["run_id"]] = n
    else:
        started.pop(a["run_id"], None)
if started:
    sys.exit("start records without an end record: lines %s" % sorted(started.values()))
EOF
[ "$(stat -c %a "$AUDIT")" = 640 ] || fail "audit file mode $(stat -c %a "$AUDIT"), want 640"
assert_released "production mode"

# Without CAP_SYS_ADMIN the governor cannot measure (BPF run-time statistics), so production mode
# refuses rather than run without its CPU budget; outside production the run goes on with a note.
if command -v capsh >/dev/null; then
	start "$WL/cpu_burner"
	out=$(capsh --drop=cap_sys_admin -- -c "'$DIAG' high-cpu --recipes '$P/recipes' --pid $PID --duration 1 --production" 2>&1 >/dev/null); rc=$?
	[ "$rc" = 3 ] || fail "production without CAP_SYS_ADMIN: exit $rc, want 3 ($out)"
	echo "$out" | grep -q 'cannot enforce max_cpu_pct' || fail "production without CAP_SYS_ADMIN: '$out'"
	capsh --drop=cap_sys_admin -- -c "'$DIAG' high-cpu --recipes '$ROOT/recipes' --pid $PID --duration 1 --json" > "$TMP/nostats.json" 2>/dev/null
	json "$TMP/nostats.json" '" ".join(r["notes"])' | grep -q 'statistics unavailable' || fail "no note about the governor being off"
	assert_released "runs without CAP_SYS_ADMIN"
fi
