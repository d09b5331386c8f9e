# The production trust chain, tried as an attacker with a shell on the box would (issue 7): an
# approval cannot certify itself, what is hashed is what runs, files someone else can change are
# refused, root does not take recipes from the current directory, and the audit trail survives
# every way a run ends.
. "$(dirname "$0")/lib.sh"

# The trust root: an install's root-owned copy of recipes/ + lua/, approved (the copied binary's
# PREFIX/share/diagnose); the policy says production and where the audit trail goes.
trust_root "$TMP/trusted"
DIAG=$PDIAG
AUDIT="$TMP/audit.jsonl"
export DIAGNOSE_AUDIT_FILE="$AUDIT"
unset DIAGNOSE_MODE
printf 'mode: production\naudit_file: %s\n' "$AUDIT" > "$TMP/policy.yaml"
export DIAGNOSE_POLICY="$TMP/policy.yaml"
"$DIAG" approve high-cpu --recipes "$P/recipes" --by e2e > /dev/null 2>&1 || fail "approve the trusted copy"
unset DIAGNOSE_RECIPES

expect() { # expect CODE PATTERN CMD...
	want=$1 pat=$2; shift 2
	out=$("$@" 2>&1 >"$TMP/stdout"); rc=$?
	[ "$rc" = "$want" ] || fail "$*: exit $rc, want $want ($out)"
	echo "$out" | grep -q -- "$pat" || fail "$*: message '$out' lacks '$pat'"
}
last_audit() { # last_audit PYTHON-EXPR, with `a` the last audit record
	python3 -c 'import json, sys; a = json.loads(open(sys.argv[1]).read().splitlines()[-1]); print(eval(sys.argv[2]))' "$AUDIT" "$1"
}
run_ok() { # run_ok CMD...: a run that must end with a verdict (0, 4 or 5)
	"$@" > "$TMP/run.out" 2> "$TMP/run.err"; rc=$?
	{ [ "$rc" = 0 ] || [ "$rc" = 4 ] || [ "$rc" = 5 ]; } || fail "$*: exit $rc ($(cat "$TMP/run.err"))"
}
EVIL='return { verdicts = { { id = "pwned", severity = "critical", title = "unapproved code ran", evidence = {}, next_steps = {} } } }'

start "$WL/cpu_burner"

# --- 1. an approval does not certify itself ----------------------------------------------------
# Someone copies the recipes, edits the Lua, approves the copy and points production at it.
X="$TMP/attacker"
mkdir -p "$X"
cp -r "$P/recipes" "$P/lua" "$X/"
echo "$EVIL" > "$X/lua/high-cpu.lua"
"$DIAG" approve high-cpu --recipes "$X/recipes" --by mallory > /dev/null 2>&1 || fail "approve the copy (allowed: it is only a file)"
chown -R 65534:65534 "$X"
expect 3 "runs recipes only from $P/recipes" sh -c "cd '$X' && exec '$DIAG' high-cpu --production --recipes '$X/recipes' --pid $PID --duration 1"
[ "$(last_audit 'a["action"]')" = refused ] || fail "the refusal was not audited"
# $DIAGNOSE_RECIPES and ./recipes are not the trust root: the approved recipe runs, not the copy.
run_ok sh -c "cd '$X' && DIAGNOSE_RECIPES='$X/recipes' exec '$DIAG' high-cpu --production --pid $PID --duration 1 --json"
grep -q pwned "$TMP/run.out" && fail "production ran the attacker's copy"
[ "$(last_audit 'a["recipe"]["path"]')" = "$P/recipes/high-cpu.yaml" ] || fail "audit path: $(last_audit 'a["recipe"]["path"]')"
[ "$(last_audit 'a["approved"]')" = True ] || fail "audit: not approved"
# Without recipes_dir in the policy, the installed recipes are the trust root (a binary not in a
# PREFIX/bin: the compiled-in share directory).
if [ ! -d /usr/local/share/diagnose/recipes ]; then
	expect 3 'recipes directory /usr/local/share/diagnose/recipes (the installed recipes)' \
		env DIAGNOSE_RECIPES="$X/recipes" "$ROOT/$BUILD/diagnose" high-cpu --pid "$PID" --duration 1
fi
# A policy named by $DIAGNOSE_POLICY only restricts: even root-owned, naming a root-owned and
# approved copy (a stale deploy, say) as recipes_dir, it cannot move the trust root there.
R="$TMP/stale"
mkdir -p "$R"
cp -r "$X/recipes" "$X/lua" "$R/"
chown -R 0:0 "$R"
chmod -R go-w "$R"
printf 'mode: production\naudit_file: %s\nrecipes_dir: %s\n' "$AUDIT" "$R/recipes" > "$TMP/policy-moved.yaml"
expect 2 "policy-moved.yaml:3: recipes_dir: only /etc/diagnose/policy.yaml sets production's trust root" \
	env DIAGNOSE_POLICY="$TMP/policy-moved.yaml" "$DIAG" high-cpu --pid "$PID" --duration 1
grep -q pwned "$TMP/stdout" && fail "a policy from the environment moved the trust root: the copy ran"
[ "$(last_audit 'a["action"] + " " + str(a["approved"])')" = "failed False" ] || fail "moved trust root: $(tail -1 "$AUDIT")"
# Nor is a policy read from a pseudo file system, whose owner and mode say nothing of its author
# (/proc/self/environ is root's, 0400, and says what the caller's environment says).
expect 3 '/proc/self/environ: on procfs, a kernel pseudo file system' \
	env DIAGNOSE_POLICY=/proc/self/environ "$DIAG" high-cpu --pid "$PID" --duration 1

# --- 2. root does not search ./recipes -----------------------------------------------------------
printf 'mode: development\n' > "$TMP/dev.yaml"
mkdir -p "$TMP/cwd/recipes" "$TMP/cwd/lua"
cp "$X/recipes/high-cpu.yaml" "$TMP/cwd/recipes/"
cp -r "$X/lua/." "$TMP/cwd/lua/"
out=$(cd "$TMP/cwd" && DIAGNOSE_POLICY="$TMP/dev.yaml" "$DIAG" show high-cpu 2>&1)
echo "$out" | grep -q "$TMP/cwd" && fail "root used ./recipes: $out"
out=$(cd "$TMP/cwd" && DIAGNOSE_POLICY="$TMP/dev.yaml" "$DIAG" show high-cpu --recipes recipes 2>&1) ||
	fail "an explicit --recipes recipes is honoured: $out"
# With no other recipes directory, the error says ./recipes was skipped, why, and how to use it
# (a binary not in a PREFIX/bin, as `sudo ./build/diagnose` from a checkout is).
if [ ! -d /usr/local/share/diagnose/recipes ]; then
	for cmd in "high-cpu --pid $PID --duration 1" list; do
		out=$(cd "$TMP/cwd" && DIAGNOSE_POLICY="$TMP/dev.yaml" "$ROOT/$BUILD/diagnose" $cmd 2>&1); rc=$?
		[ "$rc" = 2 ] || fail "$cmd as root, no recipes directory but ./recipes: exit $rc ($out)"
		echo "$out" | grep -q '\./recipes was not searched: as root, recipes are read only from --recipes, \$DIAGNOSE_RECIPES or the installed directory' ||
			fail "$cmd: the error does not say ./recipes was skipped and why: $out"
		echo "$out" | grep -q -- 'name it: --recipes \./recipes' || fail "$cmd: the error does not say how to use ./recipes: $out"
		echo "$out" | grep -q 'no \./recipes' && fail "$cmd: ./recipes listed as a place looked at: $out"
	done
fi

# --- 3. files that someone else can change are refused -----------------------------------------
refused_because() { # refused_because PATTERN: a production run is refused with PATTERN
	expect 3 "$1" "$DIAG" high-cpu --production --pid "$PID" --duration 1
}
chown 65534 "$P/lua/lib/diag.lua"
refused_because "lua/lib/diag.lua: file is not owned by root"
chown 0 "$P/lua/lib/diag.lua"
chmod g+w "$P/recipes/high-cpu.yaml"
refused_because "recipes/high-cpu.yaml: file is group-writable"
chmod g-w "$P/recipes/high-cpu.yaml"
chmod o+w "$P/lua"
refused_because "$P/lua: directory is world-writable"
chmod o-w "$P/lua"
chown 65534 "$P"
refused_because "$P: directory is not owned by root"
chown 0 "$P"
mv "$P/lua/high-cpu.lua" "$P/lua/high-cpu.lua.real"
ln -s "$P/lua/high-cpu.lua.real" "$P/lua/high-cpu.lua"
refused_because "lua/high-cpu.lua: a symbolic link"
rm "$P/lua/high-cpu.lua"
mv "$P/lua/high-cpu.lua.real" "$P/lua/high-cpu.lua"
ln -s "$TMP/elsewhere.jsonl" "$TMP/audit-link.jsonl"
printf 'mode: production\naudit_file: %s\n' "$TMP/audit-link.jsonl" > "$TMP/policy-link.yaml"
expect 3 "audit file $TMP/audit-link.jsonl .*: a symbolic link" env DIAGNOSE_POLICY="$TMP/policy-link.yaml" "$DIAG" high-cpu --pid "$PID" --duration 1
[ -e "$TMP/elsewhere.jsonl" ] && fail "the audit record went through a symlink"
run_ok "$DIAG" high-cpu --production --pid "$PID" --duration 1

# --- 4. what is hashed is what runs: files replaced during the run change nothing ---------------
cp "$P/lua/high-cpu.lua" "$TMP/high-cpu.lua.orig"
"$DIAG" high-cpu --production --pid "$PID" --duration 2 --json > "$TMP/swap.json" 2> "$TMP/swap.err" &
dpid=$!
sleep 1
echo "$EVIL" > "$P/lua/high-cpu.lua"
echo 'error("zz.lua was loaded")' > "$P/lua/lib/zz.lua"
wait $dpid; rc=$?
{ [ "$rc" = 0 ] || [ "$rc" = 4 ] || [ "$rc" = 5 ]; } || fail "run with files swapped during it: exit $rc ($(cat "$TMP/swap.err"))"
grep -q pwned "$TMP/swap.json" && fail "a Lua file replaced during the run was executed"
grep -q 'zz.lua' "$TMP/swap.json" "$TMP/swap.err" && fail "a library added during the run was loaded"
expect 3 'lua/high-cpu.lua: sha256 approved' "$DIAG" high-cpu --production --pid "$PID" --duration 1
rm "$P/lua/lib/zz.lua"
cp "$TMP/high-cpu.lua.orig" "$P/lua/high-cpu.lua"
echo 'return {}' > "$P/lua/lib/zz.lua"
expect 3 'lua/lib/zz.lua: used now but not approved' "$DIAG" high-cpu --production --pid "$PID" --duration 1
rm "$P/lua/lib/zz.lua"

# --- 5. the audit trail survives ------------------------------------------------------------------
# A closed stdout: SIGPIPE must not end the run before its end record.
"$DIAG" high-cpu --production --pid "$PID" --duration 1 --json 2>/dev/null | head -c 1 > /dev/null
[ "$(last_audit 'a["action"]')" = run ] || fail "stdout closed early: last audit record is $(tail -1 "$AUDIT")"
# Two SIGTERMs, one during the collection and one just after: the end record is still written.
"$DIAG" high-cpu --production --pid "$PID" --duration 5 > /dev/null 2>&1 &
dpid=$!
sleep 1.2
kill -TERM $dpid; sleep 0.05; kill -TERM $dpid 2>/dev/null
wait $dpid
[ "$(last_audit 'a["action"] + " " + str(a["stop_reason"])')" = "run signal" ] || fail "after SIGTERM: $(tail -1 "$AUDIT")"
# SIGKILL cannot be held: the start record, written before anything loaded, is the trace left.
"$DIAG" high-cpu --production --pid "$PID" --duration 5 > /dev/null 2>&1 &
dpid=$!
sleep 1.2
kill -KILL $dpid
wait $dpid 2>/dev/null
[ "$(last_audit 'a["action"]')" = start ] || fail "after SIGKILL the last record is $(tail -1 "$AUDIT")"
last_audit 'a["recipe"]["files"]["lua/high-cpu.lua"]' | grep -q '^[0-9a-f]\{64\}$' || fail "start record without hashes"
assert_released "runs ended by signals"
# No audit file and no syslog: production refuses; with a syslog listening, it runs and logs.
if [ ! -e /dev/log ]; then
	printf 'mode: production\n' > "$TMP/policy-noaudit.yaml"
	expect 3 'syslog is not reachable (/dev/log' env -u DIAGNOSE_AUDIT_FILE DIAGNOSE_POLICY="$TMP/policy-noaudit.yaml" "$DIAG" high-cpu --pid "$PID" --duration 1
	python3 - "$TMP/syslog.out" "$TMP/syslog.ready" <<'EOF' &
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("/dev/log")
open(sys.argv[2], "w").close()
s.settimeout(20)
with open(sys.argv[1], "w") as out:
    try:
        while True:
            msg = s.recv(65536).decode()
            out.write(msg + "\n"); out.flush()
            if '"action":"start"' not in msg:
                break
    finally:
        os.unlink("/dev/log")
EOF
	lpid=$!
	for i in 1 2 3 4 5 6 7 8 9 10; do [ -e "$TMP/syslog.ready" ] && break; sleep 0.1; done
	run_ok env -u DIAGNOSE_AUDIT_FILE DIAGNOSE_POLICY="$TMP/policy-noaudit.yaml" "$DIAG" high-cpu --pid "$PID" --duration 1
	wait $lpid
	grep -q '^<8[56]>.* diagnose\[[0-9]*\]: {.*"action":"start"' "$TMP/syslog.out" || fail "no start record on syslog: $(cat "$TMP/syslog.out")"
	grep -q '"action":"run"' "$TMP/syslog.out" || fail "no end record on syslog: $(cat "$TMP/syslog.out")"
fi

# --- 6. a production dry run of a recipe that is not approved attaches nothing -------------------
mkdir -p "$TMP/adhoc/recipes"
cp "$P/recipes/high-cpu.yaml" "$TMP/adhoc/recipes/"
ln -s "$P/lua" "$TMP/adhoc/lua"
"$DIAG" "$TMP/adhoc/recipes/high-cpu.yaml" --production --pid "$PID" --dry-run --json > "$TMP/dry.json" 2>/dev/null || fail "ad-hoc dry run"
json "$TMP/dry.json" 'r["plan"]["preflight"]' | grep -q 'not measured' || fail "dry run measured (attached): $(cat "$TMP/dry.json")"
assert_released "trust chain"

# --- 7. outputs written as root: never through a symlink, never over a file unless --force --------
export DIAGNOSE_POLICY="$TMP/dev.yaml" DIAGNOSE_RECIPES="$P/recipes"
echo 'precious' > "$TMP/victim"
ln -s "$TMP/victim" "$TMP/out.folded"
expect 2 "exists (a symbolic link, never followed)" "$DIAG" high-cpu --pid "$PID" --duration 1 --folded "$TMP/out.folded"
[ "$(cat "$TMP/victim")" = precious ] || fail "--folded wrote through a symlink"
run_ok "$DIAG" high-cpu --pid "$PID" --duration 1 --folded "$TMP/out.folded" --output "$TMP/out.json" --force
[ "$(cat "$TMP/victim")" = precious ] || fail "--force wrote through a symlink"
[ -L "$TMP/out.folded" ] && fail "--force left the symlink in place"
grep -q compute_checksum "$TMP/out.folded" || fail "no folded stacks written"
[ "$(stat -c %a "$TMP/out.json")" = 644 ] || fail "--output mode $(stat -c %a "$TMP/out.json")"
expect 2 "out.json: exists; use --force" "$DIAG" high-cpu --pid "$PID" --duration 1 --output "$TMP/out.json"
json "$TMP/out.json" 'r["tool"]' | grep -q diagnose || fail "the refused run clobbered the earlier report"
assert_released "outputs"

# --- 8. an audit path from the environment cannot aim root's writes ------------------------------
# A target whose comm is shell code, and $DIAGNOSE_AUDIT_FILE naming a file a shell would source,
# a copy of /etc/passwd, or a directory others can change: as root, such a path is used only as
# NAME.jsonl in a directory root alone can change, created new or already an audit log.
export DIAGNOSE_POLICY="$TMP/dev.yaml"
COMM='`sh /tmp/x`"\'$'\t\e' # 15 bytes: the kernel's most
start python3 -c 'import ctypes, sys, time
ctypes.CDLL(None).prctl(15, sys.argv[1].encode(), 0, 0, 0)
while True: time.sleep(1)' "$COMM"
comm_set() { [ "$(cat /proc/$PID/comm)" = "$COMM" ]; }
for i in $(seq 50); do comm_set && break; sleep 0.1; done
comm_set || fail "the target's comm is $(od -c < /proc/$PID/comm)"
E="$TMP/etc"
mkdir -p "$E/profile.d" "$TMP/nobodys" # root's, 0755, as /etc and /etc/profile.d are
cp /etc/passwd "$E/passwd"
chmod 644 "$E/passwd"
cp "$E/passwd" "$TMP/passwd.orig"
printf '{"a": 1}\n' > "$E/data.jsonl"
mkdir -m 1777 "$TMP/shared"
chown 65534 "$TMP/nobodys"
ln -s "$E" "$TMP/etc-link"
# A new NAME.jsonl in a directory root alone can change is created (0640); the comm is escaped.
run_ok env DIAGNOSE_AUDIT_FILE="$E/audit.jsonl" "$DIAG" high-cpu --pid "$PID" --duration 1
grep -q 'cannot use the audit file' "$TMP/run.err" && fail "refused a fresh audit file in a directory of root's: $(cat "$TMP/run.err")"
[ "$(stat -c %a "$E/audit.jsonl")" = 640 ] || fail "audit file mode $(stat -c %a "$E/audit.jsonl")"
run_ok env DIAGNOSE_AUDIT_FILE="$E/audit.jsonl" "$DIAG" high-cpu --pid "$PID" --dry-run # an audit log already: appended to
python3 - "$E/audit.jsonl" "$COMM" <<'EOF' || fail "audit lines with the hostile comm: $(cat "$E/audit.jsonl")"
import json, sys
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
recs = [json.loads(l) for l in lines]
assert [r["action"] for r in recs] == ["start", "run", "dry-run"], [r["action"] for r in recs]
assert recs[1]["target"]["comm"] == sys.argv[2], recs[1]["target"]
assert '"comm":"`sh /tmp/x`\\"\\\\\\t\\u001b"' in lines[1], lines[1]
EOF
ln "$E/audit.jsonl" "$E/hard.jsonl"
for f in "$E/profile.d/zz.sh" "$E/passwd" "$E/data.jsonl" "$E/hard.jsonl" "$TMP/shared/audit.jsonl" \
	"$TMP/nobodys/audit.jsonl" "$TMP/etc-link/new.jsonl" "$E/../etc/new.jsonl"; do
	run_ok env DIAGNOSE_AUDIT_FILE="$f" "$DIAG" high-cpu --pid "$PID" --dry-run
	grep -qF "warning: cannot use the audit file $f (\$DIAGNOSE_AUDIT_FILE): " "$TMP/run.err" ||
		fail "\$DIAGNOSE_AUDIT_FILE=$f was not refused: $(cat "$TMP/run.err")"
done
rm "$E/hard.jsonl"
[ -e "$E/profile.d/zz.sh" ] && fail "root created $E/profile.d/zz.sh from \$DIAGNOSE_AUDIT_FILE: $(cat "$E/profile.d/zz.sh")"
cmp -s "$E/passwd" "$TMP/passwd.orig" || fail "root appended to a copy of /etc/passwd: $(tail -1 "$E/passwd")"
[ "$(cat "$E/data.jsonl")" = '{"a": 1}' ] || fail "root appended to a .jsonl that is not an audit log"
[ "$(wc -l < "$E/audit.jsonl")" = 3 ] || fail "root appended to an audit log through another hard link"
for f in "$TMP/shared/audit.jsonl" "$TMP/nobodys/audit.jsonl" "$E/new.jsonl"; do
	[ -e "$f" ] && fail "root created $f from \$DIAGNOSE_AUDIT_FILE"
done
assert_released "runs with audit paths from the environment"
