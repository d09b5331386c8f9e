# `make install PREFIX=/x` gives a binary that finds /x/share/diagnose whatever prefix it was
# compiled with, and installs the approvals lock beside the recipes: from /, with nothing but a
# production policy, the installed diagnose runs the approved high-cpu (its trust root is the
# installed share directory), and refuses it once an installed file changes.
. "$(dirname "$0")/lib.sh"

X="$TMP/prefix"
san=0
[ "$BUILD" = build-san ] && san=1
make -s -C "$ROOT" install BUILD="$BUILD" SAN=$san PREFIX="$X" > "$TMP/install.log" 2>&1 || fail "make install: $(tail -5 "$TMP/install.log")"
for f in bin/diagnose share/diagnose/recipes/high-cpu.yaml share/diagnose/recipes/approved.lock \
	share/diagnose/lua/high-cpu.lua share/diagnose/lua/lib/diag.lua share/man/man1/diagnose.1; do
	[ -e "$X/$f" ] || fail "make install did not install $f"
done
unset DIAGNOSE_RECIPES DIAGNOSE_MODE
printf 'mode: production\naudit_file: %s\n' "$DIAGNOSE_AUDIT_FILE" > "$TMP/policy.yaml"
export DIAGNOSE_POLICY="$TMP/policy.yaml"
start "$WL/cpu_burner"
cd /
"$X/bin/diagnose" list > "$TMP/list.out" 2>&1 || fail "installed list: $(cat "$TMP/list.out")"
grep -q 'approval: approved .* matches' "$TMP/list.out" || fail "installed list: $(cat "$TMP/list.out")"
"$X/bin/diagnose" verify > "$TMP/verify.out" 2>&1 || fail "installed verify: $(cat "$TMP/verify.out")"
"$X/bin/diagnose" high-cpu --pid "$PID" --duration 1 --json > "$TMP/run.json" 2> "$TMP/run.err"
rc=$?
{ [ "$rc" = 0 ] || [ "$rc" = 4 ] || [ "$rc" = 5 ]; } || fail "installed production run: exit $rc ($(cat "$TMP/run.err"))"
[ "$(json "$TMP/run.json" 'r["recipe"]["path"]')" = "$X/share/diagnose/recipes/high-cpu.yaml" ] ||
	fail "ran $(json "$TMP/run.json" 'r["recipe"]["path"]'), not the installed recipe"
echo '-- changed after install' >> "$X/share/diagnose/lua/high-cpu.lua"
out=$("$X/bin/diagnose" high-cpu --pid "$PID" --duration 1 2>&1 >/dev/null); rc=$?
[ "$rc" = 3 ] || fail "changed installed Lua: exit $rc, want 3 ($out)"
echo "$out" | grep -q 'lua/high-cpu.lua: sha256 approved' || fail "changed installed Lua: '$out'"
assert_released "installed runs"
