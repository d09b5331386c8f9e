# Bad input, as a user would give it: hostile or broken Lua snippets, broken recipes, refused
# budgets and bad arguments, each run through the real binary against a real process. Every case
# asserts the documented exit code, one clear line on stderr (with file:line where there is one)
# and that no BPF link or program of ours is left behind.
. "$(dirname "$0")/lib.sh"

start "$WL/cpu_burner"
TARGET=$PID

# mkcase NAME [YAML-SED-SCRIPT]: $TMP/NAME/recipes/x.yaml (the base recipe below, edited by the
# sed script) and $TMP/NAME/lua/lib (the shared libraries); sets $C. The snippet is the caller's.
mkcase() {
	C="$TMP/$1"
	mkdir -p "$C/recipes" "$C/lua"
	cp -r "$ROOT/lua/lib" "$C/lua/lib"
	cat > "$C/recipes/x.yaml" <<'EOF'
# base recipe of t_bad_input.sh: every case edits one thing
name: x
symptom: testing bad input
summary: One sampling probe and the process context
lua: x.lua
target: pid
duration_s: 1
budgets:
  max_duration_s: 10
  max_sample_hz: 999
  max_cpu_pct: 50
  max_map_bytes: 67108864
probes:
  - id: profile
    kind: cpu_profile
    filters:
      pid: target
    options:
      frequency_hz: 99
      max_stacks: 1024
      max_stack_counts: 1024
  - id: context
    kind: proc_context
    filters:
      pid: target
EOF
	if [ $# -ge 2 ]; then # the edit must change something, or the case tests nothing
		cp "$C/recipes/x.yaml" "$C/base.yaml"
		sed -i -e "$2" "$C/recipes/x.yaml"
		! cmp -s "$C/recipes/x.yaml" "$C/base.yaml" || fail "$1: sed '$2' changed nothing"
	fi
}
# lua TEXT: the case's snippet.
lua() { printf '%s\n' "$1" > "$C/lua/x.lua"; }
# line PATTERN: the line number of the first line of x.yaml matching PATTERN.
line() {
	local n
	n=$(grep -n -m1 -- "$1" "$C/recipes/x.yaml" | cut -d: -f1)
	[ -n "$n" ] || fail "case $C: no line matches '$1' in x.yaml"
	echo "$n"
}

# expect NAME CODE PATTERN [ARGS...]: runs `diagnose x` of case NAME against the workload for
# one second (ARGS replace the default --pid/--duration when given); checks the exit code, that
# stderr is one line matching PATTERN (grep -E), and that nothing of ours stays loaded.
expect() {
	local name=$1 want=$2 pat=$3 rc lines
	shift 3
	[ $# -gt 0 ] || set -- --pid "$TARGET" --duration 1
	"$DIAG" x --recipes "$C/recipes" "$@" > "$C/stdout" 2> "$C/stderr"
	rc=$?
	[ "$rc" = "$want" ] || fail "$name: exit $rc, want $want; stderr: $(head -c 2000 "$C/stderr")"
	# Usage errors may add the "try 'diagnose --help'" hint; nothing else.
	lines=$(grep -v -c -e '^$' -e "^try 'diagnose --help'$" "$C/stderr")
	[ "$lines" = 1 ] || fail "$name: want one line on stderr, got $lines: $(head -c 2000 "$C/stderr")"
	grep -Eq -- "$pat" "$C/stderr" || fail "$name: message '$(cat "$C/stderr")' lacks /$pat/"
	grep -q '^diagnose: ' "$C/stderr" || fail "$name: message not prefixed 'diagnose: '"
	assert_released "$name"
	echo "ok   $name: exit $rc: $(head -1 "$C/stderr")"
}

# ---- control: the base recipe and a well-behaved snippet run cleanly -----------------------------
mkcase control
lua 'return { verdicts = { diag.verdict("fine", "info", "samples: " .. tostring(results.profile and results.profile.samples), {}, {}) } }'
"$DIAG" x --recipes "$C/recipes" --pid "$TARGET" --duration 1 > "$C/stdout" 2> "$C/stderr"
rc=$?
[ "$rc" = 0 ] || fail "control: exit $rc: $(cat "$C/stderr")"
grep -q 'samples: [1-9]' "$C/stdout" || fail "control: no samples in the report: $(cat "$C/stdout")"
[ ! -s "$C/stderr" ] || fail "control: stderr not empty: $(cat "$C/stderr")"
assert_released control
echo "ok   control: exit 0"

# ---- hostile Lua: collection runs, the verdict layer fails cleanly (exit 1) --------------------
mkcase lua-loop
lua 'local n = 0
while true do n = n + 1 end'
expect lua-loop 1 'x\.lua:2: instruction limit exceeded'
grep -q 'raw results' "$C/stdout" || fail "lua-loop: raw results not printed on stdout"
grep -q '"profile"' "$C/stdout" || fail "lua-loop: raw results lack the profile probe"

mkcase lua-membomb
lua 'local t = {}
for i = 1, 1e9 do t[i] = ("x"):rep(1000) .. i end'
expect lua-membomb 1 'memory limit exceeded'
grep -q 'raw results' "$C/stdout" || fail "lua-membomb: raw results not printed on stdout"

# Time spent inside one C library call is not counted by the instruction limit: the verdict
# phase's wall-clock deadline (a child process, killed) still ends it, with the raw results kept.
mkcase lua-backtrack
lua 'return { verdicts = { diag.verdict("x", "info", tostring(string.find(("a"):rep(60), ("a*"):rep(7) .. "b")), {}, {}) } }'
expect lua-backtrack 1 'verdict phase over its time limit of [0-9]+ ms \(killed\)'
grep -q 'raw results' "$C/stdout" || fail "lua-backtrack: raw results not printed on stdout"
pgrep -P $$ -f 'diagnose x' > /dev/null && fail "lua-backtrack: a verdict child outlived its run"

mkcase lua-dag
lua 'local t = {}
for i = 1, 100000 do t[i] = results end
return { verdicts = {}, report = { { kind = "text", title = "t", lines = t } } }'
expect lua-dag 1 'result too large'

mkcase lua-os
lua 'os.execute("id > '"$C"'/pwned")
return { verdicts = {} }'
expect lua-os 1 "x\.lua:1: .*global 'os'"
[ ! -e "$C/pwned" ] || fail "lua-os: os.execute ran"

mkcase lua-io
lua 'local f = io.open("/etc/passwd")
return { verdicts = { diag.verdict("leak", "info", f:read("l"), {}, {}) } }'
expect lua-io 1 "x\.lua:1: .*global 'io'"

mkcase lua-dump
lua 'local f = load(string.dump(function() return 1 end))
return { verdicts = {} }'
expect lua-dump 1 "x\.lua:1: .*'dump'"

mkcase lua-load
lua 'local f = load("return 1")
return { verdicts = {} }'
expect lua-load 1 "x\.lua:1: .*global 'load'"

mkcase lua-bytecode # the snippet file itself is a precompiled chunk
printf '\033LuaT\000\031\223\r\n\032\n\004\b\b' > "$C/lua/x.lua"
# Lua's own message does not name the file here (luaL_loadfilex in "t" mode); verdict.c could
# prefix it. Until then the assertion is on the refusal itself.
# Refused before anything is attached (the snippet is compiled first): exit 2.
expect lua-bytecode 2 "binary chunk \(mode is 't'\)"

mkcase lua-syntax
lua '-- a snippet with a syntax error on line 3
local a = 1
local b = = 2
return { verdicts = {} }'
# Compiled before anything is attached: exit 2, naming the Lua file and line.
expect lua-syntax 2 'x\.lua:3:'
# lint catches it before anything is attached: exit 2, naming the Lua file and line.
out=$("$DIAG" lint "$C/recipes" 2>&1)
rc=$?
[ "$rc" = 2 ] || fail "lua-syntax lint: exit $rc, want 2 ($out)"
echo "$out" | grep -q 'recipes/x\.yaml: lua: .*x\.lua:3:' || fail "lua-syntax lint: '$out' does not name x.lua:3"
echo "ok   lua-syntax lint: exit 2: $(echo "$out" | grep 'x\.lua:3:')"

# ---- broken recipes: refused before anything is loaded (exit 2) --------------------------------
mkcase lua-missing # no x.lua
expect lua-missing 2 'x\.yaml: lua: cannot read .*/lua/x\.lua: No such file'

mkcase yaml-malformed 's/^  max_cpu_pct: 50$/  max_cpu_pct: [50/'
expect yaml-malformed 2 "x\.yaml:[0-9]+: invalid YAML"
n=$(line 'max_cpu_pct'); grep -Eq "x\.yaml:($n|$((n + 1))|$((n + 2))):" "$C/stderr" ||
	fail "yaml-malformed: line not near $n: $(cat "$C/stderr")"

mkcase yaml-alias-bomb
cat >> "$C/recipes/x.yaml" <<'EOF'
thresholds:
  l0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]
  l1: &a1 [*a0, *a0, *a0, *a0, *a0, *a0, *a0, *a0, *a0, *a0]
  l2: &a2 [*a1, *a1, *a1, *a1, *a1, *a1, *a1, *a1, *a1, *a1]
  l3: &a3 [*a2, *a2, *a2, *a2, *a2, *a2, *a2, *a2, *a2, *a2]
  l4: &a4 [*a3, *a3, *a3, *a3, *a3, *a3, *a3, *a3, *a3, *a3]
  l5: &a5 [*a4, *a4, *a4, *a4, *a4, *a4, *a4, *a4, *a4, *a4]
  l6: &a6 [*a5, *a5, *a5, *a5, *a5, *a5, *a5, *a5, *a5, *a5]
  l7: &a7 [*a6, *a6, *a6, *a6, *a6, *a6, *a6, *a6, *a6, *a6]
  l8: &a8 [*a7, *a7, *a7, *a7, *a7, *a7, *a7, *a7, *a7, *a7]
  l9: &a9 [*a8, *a8, *a8, *a8, *a8, *a8, *a8, *a8, *a8, *a8]
EOF
lua 'return { verdicts = {} }'
expect yaml-alias-bomb 2 "x\.yaml:$(line 'l0: &a0'): thresholds\.l0: YAML anchors are not allowed"

mkcase unknown-kind 's/kind: proc_context/kind: no_such_probe/'
lua 'return { verdicts = {} }'
expect unknown-kind 2 "x\.yaml:$(line '  - id: context'): probes\.context\.kind: unknown probe kind \"no_such_probe\" \(known: .*cpu_profile.*proc_context"

mkcase duration-negative 's/^duration_s: 1$/duration_s: -5/'
lua 'return { verdicts = {} }'
expect duration-negative 2 "x\.yaml:$(line '^duration_s'): duration_s: expected an unsigned integer"

mkcase duration-huge 's/^duration_s: 1$/duration_s: 99999999999999999999999/'
lua 'return { verdicts = {} }'
expect duration-huge 2 "x\.yaml:$(line '^duration_s'): duration_s: .*too large"

mkcase duration-out-of-range 's/^duration_s: 1$/duration_s: 5000/'
lua 'return { verdicts = {} }'
expect duration-out-of-range 2 "x\.yaml:$(line '^duration_s'): duration_s: 5000 is out of range"

mkcase duration-over-budget-in-recipe 's/^duration_s: 1$/duration_s: 20/'
lua 'return { verdicts = {} }'
expect duration-over-budget-in-recipe 2 "x\.yaml:$(line '^duration_s'): duration_s: 20 exceeds budgets\.max_duration_s \(10\)"

mkcase max-stacks-too-small 's/max_stacks: 1024/max_stacks: 1/'
lua 'return { verdicts = {} }'
expect max-stacks-too-small 2 "x\.yaml:$(line 'max_stacks:'): probes\.profile\.options\.max_stacks: .*1"

# ---- over budget: refused (exit 3) --------------------------------------------------------------
mkcase duration-flag-over-budget
lua 'return { verdicts = {} }'
expect duration-flag-over-budget 3 'max_duration_s = 10' --pid "$TARGET" --duration 11

mkcase frequency-over-budget 's/frequency_hz: 99/frequency_hz: 5000/'
lua 'return { verdicts = {} }'
expect frequency-over-budget 3 "x\.yaml:$(line '  - id: profile'): probes\.profile: sampling at 5000 Hz is over the budget max_sample_hz = 999"

mkcase maps-over-budget 's/max_map_bytes: 67108864/max_map_bytes: 4096/'
lua 'return { verdicts = {} }'
expect maps-over-budget 3 'x\.yaml: maps need [0-9]+ bytes, over the budget max_map_bytes = 4096'

# ---- bad arguments (exit 2) ---------------------------------------------------------------------
mkcase args
lua 'return { verdicts = {} }'
expect param-unknown 2 'recipe x has no parameter foo \(known: pid, duration' --pid "$TARGET" --duration 1 --param foo=1
expect param-no-value 2 'KEY=VALUE' --pid "$TARGET" --duration 1 --param foo
expect pid-text 2 'not a pid.*abc' --pid abc --duration 1
expect pid-zero 2 'not a pid' --pid 0 --duration 1
expect pid-negative 2 'not a pid' --pid -7 --duration 1
expect pid-huge 2 'not a pid' --pid 99999999999999999999 --duration 1
expect pid-gone 2 'no process with pid 999999999' --pid 999999999 --duration 1
expect duration-zero 2 'not a positive number' --pid "$TARGET" --duration 0
expect duration-nan 2 'not a positive number' --pid "$TARGET" --duration nan
# Numbers on the command line are what recipes accept: decimal, no hex, sign, blank or leading
# zero (strtod took --duration 0x10 as 16 s; strtol took --pid " +12").
expect duration-hex 2 '^diagnose: --duration: not a positive number of seconds \(decimal, such as 5 or 2\.5\): 0x10$' --pid "$TARGET" --duration 0x10
expect duration-sign 2 '^diagnose: --duration: not a positive number of seconds \(decimal' --pid "$TARGET" --duration +1
expect duration-blank 2 '^diagnose: --duration: not a positive number of seconds \(decimal' --pid "$TARGET" --duration ' 1'
expect duration-inf 2 '^diagnose: --duration: not a positive number of seconds \(decimal' --pid "$TARGET" --duration infinity
expect pid-hex 2 "^diagnose: --pid: not a pid \\(a positive decimal number\\): 0x$(printf %x "$TARGET")\$" --pid "0x$(printf %x "$TARGET")" --duration 1
expect pid-sign 2 '^diagnose: --pid: not a pid' --pid "+$TARGET" --duration 1
expect pid-blank 2 '^diagnose: --pid: not a pid' --pid " $TARGET" --duration 1
expect pid-leading-zero 2 '^diagnose: --pid: not a pid' --pid "0$TARGET" --duration 1
expect param-pid-hex 2 '^diagnose: --param pid: not a pid' --param "pid=0x$(printf %x "$TARGET")" --duration 1
expect param-duration-hex 2 '^diagnose: --param duration: not a positive number of seconds \(decimal' --pid "$TARGET" --param duration=0x1
# a typed parameter: checked by the same rule, and used as checked (010 was checked as 10 and
# planned as octal 8)
mkcase param-typed 's/frequency_hz: 99/frequency_hz: ${hz}/; $a\
params:\
  - name: hz\
    type: integer\
    default: 99\
    min: 1\
    max: 999'
lua 'return { verdicts = {} }'
"$DIAG" x --recipes "$C/recipes" --pid "$TARGET" --duration 1 --param hz=49 --json > "$C/ok.json" 2> "$C/stderr" ||
	fail "param-typed control: exit $?: $(cat "$C/stderr")"
[ "$(json "$C/ok.json" 'r["results"]["profile"]["frequency_hz"]')" = 49 ] || fail "param-typed control: hz=49 not used"
for bad in 0x31 010 +49 ' 49' 4.9e1; do
	expect "param-typed-'$bad'" 2 "^diagnose: --param hz=.*: expected an integer" --pid "$TARGET" --duration 1 --param "hz=$bad"
done

kill -0 "$TARGET" 2>/dev/null || fail "the workload died during the test"
assert_released "bad input"

# ---- files that are not plain recipe files: refused at once, never read without bound ------------
mkfifo "$TMP/fifo.yaml"
for f in /dev/zero "$TMP/fifo.yaml"; do
	out=$(timeout 10 "$DIAG" lint "$f" 2>&1); rc=$?
	[ "$rc" = 2 ] || fail "lint $f: exit $rc, want 2 ($out)"
	echo "$out" | grep -q "$f: not a regular file" || fail "lint $f: '$out'"
	echo "ok   lint $f: exit 2: $(echo "$out" | head -1)"
done
head -c 2000000 /dev/zero | tr '\0' '#' > "$TMP/huge.yaml"
out=$("$DIAG" lint "$TMP/huge.yaml" 2>&1); rc=$?
[ "$rc" = 2 ] && echo "$out" | grep -q 'over the limit of 1048576' || fail "lint of a 2 MB file: exit $rc: $out"
