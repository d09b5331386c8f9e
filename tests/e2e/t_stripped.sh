# A real stripped Debian program busy on CPU: xz compressing, its work in liblzma5's stripped
# liblzma.so.5 (no debug file installed). The hot code is grouped as one .eh_frame function
# (liblzma.so.5.X.Y+0xSTART), and the verdict names what would name it: the package that owns
# the file (liblzma5, from dpkg's database), its -dbgsym package and the build-id path that
# installs (the build-id readelf reads); perf and objdump get the file and the address, never an
# empty `perf annotate`. xz is started through a symlink of another name: the report names it
# both by /proc/PID/exe (xz) and as started (the symlink). Control: the same binary idle (xz
# opening a FIFO nobody writes) gets no CPU verdict and no hint. Nothing stays attached.
. "$(dirname "$0")/lib.sh"
XZ=$(command -v xz) || skip "xz is not installed (xz-utils: make deps)"
XZ=$(readlink -f "$XZ")
command -v dpkg-query >/dev/null || skip_unsupported "not a Debian system (no dpkg database)"
LZMA=$(ldd "$XZ" | awk '/liblzma/ { print $3 }')
[ -n "$LZMA" ] || skip_unsupported "$XZ does not link liblzma dynamically"
LZMA=$(readlink -f "$LZMA")
BUILD_ID=$(readelf -n "$LZMA" | awk '/Build ID:/ { print $3 }')
[ -n "$BUILD_ID" ] || skip_unsupported "$LZMA has no build-id"
DEBUG_PATH="/usr/lib/debug/.build-id/$(echo "$BUILD_ID" | cut -c1-2)/$(echo "$BUILD_ID" | cut -c3-).debug"
[ ! -e "$DEBUG_PATH" ] || skip_unsupported "liblzma5's debug file is installed ($DEBUG_PATH): it is not stripped here"
readelf -S "$LZMA" | grep -q ' \.symtab' && skip_unsupported "$LZMA has a .symtab: not stripped"

mkdir "$TMP/sym" && ln -s "$XZ" "$TMP/sym/squeeze" # a name xz does not read as a mode
head -c 24000000 /dev/urandom > "$TMP/in"
start "$TMP/sym/squeeze" -9e -T1 -c "$TMP/in"
collect "$TMP/r.json" high-cpu --pid "$PID" --duration 3
[ "$collected_rc" = 4 ] || [ "$collected_rc" = 5 ] || fail "exit code $collected_rc, want 4 or 5: $(json "$TMP/r.json" 'r["verdicts"]')"
assert_shapes "$TMP/r.json"
[ "$(json "$TMP/r.json" 'r["verdicts"][0]["id"]')" = cpu-bound-user ] || fail "top verdict: $(json "$TMP/r.json" 'r["verdicts"][0]')"
title=$(json "$TMP/r.json" 'r["verdicts"][0]["title"]')
echo "$title" | grep -Eq 'unsymbolized function \(liblzma\.so\.5[.0-9]*\+0x[0-9a-f]+\)' ||
	fail "title does not name liblzma's function: $title"
# grouped: most user-mode samples are in liblzma's functions, each shown by its entry
share=$(json "$TMP/r.json" 'round(100 * sum(s["count"] for s in r["results"]["profile"]["stacks"] if not s["in_kernel"] and s["user"] and s["user"][0].startswith("liblzma.so.5")) / max(1, r["results"]["profile"]["user_samples"]))')
[ "$share" -ge 80 ] || fail "liblzma's functions have $share% of user samples, want >= 80%"
hint() { json "$TMP/r.json" "[h for h in r['results']['profile']['debug_hints'] if h['path'] == '$LZMA'][0]$1"; }
[ "$(hint '["package"]')" = liblzma5 ] || fail "liblzma's owner: $(hint '')"
[ "$(hint '["dbgsym_package"]')" = liblzma5-dbgsym ] || fail "liblzma's dbgsym package: $(hint '')"
[ "$(hint '["build_id"]')" = "$BUILD_ID" ] || fail "liblzma's build-id: $(hint '') (readelf: $BUILD_ID)"
[ "$(hint '["debug_path"]')" = "$DEBUG_PATH" ] || fail "liblzma's debug path: $(hint '')"
[ "$(hint '["package_version"]')" = "$(dpkg-query -W -f '${Version}' liblzma5)" ] || fail "liblzma5's version: $(hint '')"
[ "$(json "$TMP/r.json" 'r["results"]["profile"]["debug_hints"][0]["path"]')" = "$LZMA" ] ||
	fail "the heaviest stripped file is not liblzma's: $(json "$TMP/r.json" 'r["results"]["profile"]["debug_hints"]')"
steps=$(json "$TMP/r.json" '"\n".join(r["verdicts"][0]["next_steps"])')
echo "$steps" | grep -q "apt install liblzma5-dbgsym" || fail "next steps do not name liblzma5-dbgsym: $steps"
echo "$steps" | grep -qF "$DEBUG_PATH" || fail "next steps do not name the build-id path: $steps"
echo "$steps" | grep -Eq "objdump -d --start-address=0x[0-9a-f]+ --stop-address=0x[0-9a-f]+ $LZMA" ||
	fail "next steps give no objdump of liblzma's function: $steps"
echo "$steps" | grep -q -- "--dsos liblzma.so.5" || fail "next steps do not name liblzma to perf: $steps"
echo "$steps" | grep -Eq 'perf annotate *($|[,;)])' && fail "an empty perf annotate: $steps"
# the process as started: /proc/PID/exe is xz, cmdline[0] the symlink
[ "$(json "$TMP/r.json" 'r["target"]["exe"]')" = "$XZ" ] || fail "target exe: $(json "$TMP/r.json" 'r["target"]')"
[ "$(json "$TMP/r.json" 'r["target"]["started_as"]')" = "$TMP/sym/squeeze" ] || fail "target started_as: $(json "$TMP/r.json" 'r["target"]')"
"$DIAG" high-cpu --pid "$PID" --duration 1 > "$TMP/r.txt" 2>/dev/null
head -1 "$TMP/r.txt" | grep -qF "$XZ (started as $TMP/sym/squeeze)" || fail "text report's target line: $(head -1 "$TMP/r.txt")"
grep -q "apt install liblzma5-dbgsym" "$TMP/r.txt" || fail "the text report lacks the dbgsym step"
assert_released "runs on a stripped program"
kill "$PID"

# Control: the same binary, idle (blocked opening a FIFO): no CPU verdict, no hint, and started
# by its own name it has no started_as.
mkfifo "$TMP/fifo"
start "$XZ" -c "$TMP/fifo"
collect "$TMP/idle.json" high-cpu --pid "$PID" --duration 2
[ "$collected_rc" = 0 ] || fail "idle xz: exit $collected_rc, want 0: $(json "$TMP/idle.json" 'r["verdicts"]')"
json "$TMP/idle.json" '[v["id"] for v in r["verdicts"]]' | grep -q 'cpu-bound' && fail "idle xz called CPU-bound: $(json "$TMP/idle.json" 'r["verdicts"]')"
[ "$(json "$TMP/idle.json" '"debug_hints" in r["results"]["profile"]')" = False ] || fail "idle xz has debug hints: $(json "$TMP/idle.json" 'r["results"]["profile"]["debug_hints"]')"
[ "$(json "$TMP/idle.json" '"started_as" in r["target"]')" = False ] || fail "xz started by its path has a started_as: $(json "$TMP/idle.json" 'r["target"]')"
assert_shapes "$TMP/idle.json"
assert_released "a run on an idle stripped program"
