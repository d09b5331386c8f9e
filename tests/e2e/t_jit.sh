# JIT code in the language's terms (issue 26), on real runtimes from Debian's packages:
# (a) Node.js with --perf-basic-prof burning its CPU in checksumRows() (tests/workloads/jit_rows.js):
#     high-cpu's verdict names "JS function checksumRows()", never "unsymbolized";
# (b) the same without the flag: the next steps are node's (--perf-basic-prof-only-functions,
#     --perf-basic-prof, --interpreted-frames-native-stack), never a -dbgsym package;
# (c) OpenJDK 17 running HotRows.checksumRows(int[]) (tests/workloads/HotRows.java, compiled here
#     with javac) as nobody, once its JIT compiled it: without a perf map the steps say jcmd PID
#     Compiler.perfmap, --param jvm_perfmap=yes and -XX:+PreserveFramePointer, and diagnose runs
#     nothing (no map appears); with --param jvm_perfmap=yes diagnose runs jcmd as nobody, says
#     so, and the verdict names "Java method HotRows.checksumRows(int[])";
# (d) the control: node idle in a timer gets no cpu-bound verdict.
# The CPU verdict is cpu-bound-user, or busy when a loaded machine gives the workload less than
# busy_cpu_pct: both name the hot function and give the same steps for unnamed JIT code.
. "$(dirname "$0")/lib.sh"
command -v node >/dev/null || skip "node is not installed (nodejs: make deps)"
command -v javac >/dev/null && command -v jcmd >/dev/null ||
	skip "javac and jcmd are not installed (openjdk-17-jdk-headless: make deps)"
LEFT="" # files the runtimes write in /tmp, removed at exit
trap 'for p in $PIDS; do kill -9 $p 2>/dev/null; wait $p 2>/dev/null; done; for f in $LEFT; do rm -f "$f"; done; rm -rf "$TMP"' EXIT
stop() { kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null; }

# cpu_verdict FILE FIELD: of the verdict that says where the CPU goes (cpu-bound-user or busy),
# its id, title, evidence or steps (lines); fails without one.
cpu_verdict() {
	python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
v = next((v for v in r["verdicts"] if v["id"] in ("cpu-bound-user", "busy")), None)
if v is None:
    sys.exit("no cpu-bound-user or busy verdict: " + ", ".join(x["id"] + " " + x["title"] for x in r["verdicts"]))
print({"id": v["id"], "title": v["title"], "evidence": "\n".join(v["evidence"]),
       "steps": "\n".join(v["next_steps"])}[sys.argv[2]])' "$1" "$2"
}
JS="$ROOT/tests/workloads/jit_rows.js"

# (a) Node with its perf map: the JS function named. From $TMP: V8 may write logs in its cwd.
# --no-turbo-inlining: the optimized top-level loop would otherwise inline checksumRows (as the
# JVM's dontinline below: the test asserts one function's name).
start sh -c 'cd "$1" && exec node --no-turbo-inlining --perf-basic-prof "$2" hot' sh "$TMP" "$JS"
LEFT="$LEFT /tmp/perf-$PID.map"
sleep 1 # V8 optimizes checksumRows
collect "$TMP/node-map.json" high-cpu --pid "$PID" --duration 3
stop
title=$(cpu_verdict "$TMP/node-map.json" title) || fail "node --perf-basic-prof: $title"
echo "$title" | grep -q 'JS function checksumRows() at .*jit_rows\.js:' ||
	fail "node --perf-basic-prof: the verdict does not name the JS function: $title"
echo "$title" | grep -qi unsymbolized && fail "node --perf-basic-prof: a perf map's name called unsymbolized: $title"
[ "$(json "$TMP/node-map.json" 'r["results"]["profile"].get("runtime")')" = node ] || fail "node: runtime not detected"
# V8's code kinds: JS: from Node 20 (nodesource's), LazyCompile: and Function: in Debian 12's Node 18
json "$TMP/node-map.json" 'any(n.startswith(("JS:", "LazyCompile:", "Function:")) and "checksumRows" in n for n in r["results"]["profile"].get("jit_frames", []))' |
	grep -q True || fail "node: checksumRows is not among the profile's jit_frames: $(json "$TMP/node-map.json" 'r["results"]["profile"].get("jit_frames")')"
cpu_verdict "$TMP/node-map.json" steps | grep -qi dbgsym && fail "node --perf-basic-prof: a step says dbgsym"
rm -f "/tmp/perf-$PID.map"

# (b) Node without a perf map: node's own way to names, not debug symbols.
start sh -c 'cd "$1" && exec node --no-turbo-inlining "$2" hot' sh "$TMP" "$JS"
sleep 1
[ -e "/tmp/perf-$PID.map" ] && fail "node without --perf-basic-prof wrote a perf map"
collect "$TMP/node-nomap.json" high-cpu --pid "$PID" --duration 3
stop
title=$(cpu_verdict "$TMP/node-nomap.json" title) || fail "node: $title"
steps=$(cpu_verdict "$TMP/node-nomap.json" steps)
echo "$title" | grep -q 'JIT-compiled JavaScript without a perf map' || fail "node without a perf map: title: $title"
echo "$steps" | grep -q -- '--perf-basic-prof-only-functions (or --perf-basic-prof)' || fail "node without a perf map: no --perf-basic-prof step: $steps"
echo "$steps" | grep -q -- '--interpreted-frames-native-stack' || fail "node without a perf map: no --interpreted-frames-native-stack step: $steps"
echo "$steps" | grep -qi dbgsym && fail "node without a perf map: a step says dbgsym: $steps"

# (d) The control: node asleep in a timer is not CPU-bound.
start sh -c 'cd "$1" && exec node "$2" idle' sh "$TMP" "$JS"
sleep 0.5
collect "$TMP/node-idle.json" high-cpu --pid "$PID" --duration 3
stop
ids=$(json "$TMP/node-idle.json" '" ".join(v["id"] for v in r["verdicts"])')
case " $ids " in *" cpu-bound-"* | *" busy "* | *" futex-contention "*) fail "idle node: a CPU verdict: $ids" ;; esac
case " $ids " in *" not-busy "*) ;; *) fail "idle node: no not-busy verdict: $ids" ;; esac
assert_released "the node runs"

# (c) A JVM, as nobody, its hot method compiled by C2 (tier 4) before sampling.
mkdir "$TMP/java" && javac -d "$TMP/java" "$ROOT/tests/workloads/HotRows.java" 2> "$TMP/javac.err" ||
	fail "javac: $(head -3 "$TMP/javac.err")"
chmod 711 "$TMP" && chmod 777 "$TMP/java" && chmod a+r "$TMP/java/HotRows.class" # jcmd's .attach_pid goes here
(cd "$TMP/java" && exec setpriv --reuid=65534 --regid=65534 --clear-groups java -XX:-UsePerfData \
	-XX:CompileCommand=quiet -XX:CompileCommand=dontinline,HotRows::checksumRows -XX:+PrintCompilation \
	-cp "$TMP/java" HotRows > "$TMP/java/compilation.log" 2>&1) &
PID=$!
PIDS="$PIDS $PID"
LEFT="$LEFT /tmp/perf-$PID.map /tmp/.java_pid$PID /tmp/.attach_pid$PID"
end=$(($(date +%s) + 30))
until grep -Eq '[[:space:]]4[[:space:]]+HotRows::checksumRows' "$TMP/java/compilation.log" 2>/dev/null; do
	kill -0 "$PID" 2>/dev/null || fail "java exited: $(head -5 "$TMP/java/compilation.log")"
	[ "$(date +%s)" -le "$end" ] || fail "HotRows.checksumRows not compiled by C2 in 30 s: $(tail -5 "$TMP/java/compilation.log")"
	sleep 0.2
done
[ "$(stat -c %u "/proc/$PID")" = 65534 ] || fail "java does not run as nobody"
rm -f "/tmp/perf-$PID.map"

# (c1) No perf map and no --param: the steps say how to get one; diagnose runs nothing.
collect "$TMP/jvm-nomap.json" high-cpu --pid "$PID" --duration 3
[ -e "/tmp/perf-$PID.map" ] && fail "a perf map appeared without --param jvm_perfmap=yes: jcmd ran unasked"
[ "$(json "$TMP/jvm-nomap.json" 'r["results"]["profile"].get("runtime")')" = jvm ] || fail "java: runtime not detected"
[ "$(json "$TMP/jvm-nomap.json" '"jvm_perfmap" in r["results"]["profile"]')" = False ] || fail "java: jvm_perfmap reported without the param"
title=$(cpu_verdict "$TMP/jvm-nomap.json" title) || fail "java: $title"
steps=$(cpu_verdict "$TMP/jvm-nomap.json" steps)
echo "$title" | grep -q 'JIT-compiled Java without a perf map' || fail "java without a perf map: title: $title"
echo "$steps" | grep -q "jcmd $PID Compiler.perfmap" || fail "java without a perf map: no jcmd step: $steps"
echo "$steps" | grep -q -- "--param jvm_perfmap=yes" || fail "java without a perf map: --param jvm_perfmap=yes not offered: $steps"
echo "$steps" | grep -q -- "-XX:+PreserveFramePointer" || fail "java without a perf map: no PreserveFramePointer step: $steps"
echo "$steps" | grep -qi dbgsym && fail "java without a perf map: a step says dbgsym: $steps"

# (c2) --param jvm_perfmap=yes: jcmd runs as nobody at the end of the window; the method is named.
collect "$TMP/jvm-map.json" high-cpu --pid "$PID" --duration 3 --param jvm_perfmap=yes
[ "$(stat -c %u "/tmp/perf-$PID.map" 2>/dev/null)" = 65534 ] || fail "jcmd did not make the JVM write its perf map as nobody"
ran=$(json "$TMP/jvm-map.json" 'r["results"]["profile"].get("jvm_perfmap")')
case $ran in "ran: "*" $PID Compiler.perfmap as uid 65534 gid 65534") ;; *) fail "jvm_perfmap: $ran" ;; esac
json "$TMP/jvm-map.json" '"\n".join(r["notes"])' | grep -q "jvm_perfmap: ran: .*jcmd $PID Compiler.perfmap as uid 65534" ||
	fail "the report's notes do not say jcmd ran: $(json "$TMP/jvm-map.json" 'r["notes"]')"
title=$(cpu_verdict "$TMP/jvm-map.json" title) || fail "java with jvm_perfmap: $title"
echo "$title" | grep -qF 'Java method HotRows.checksumRows(int[])' || fail "java with jvm_perfmap: the verdict does not name the Java method: $title"
echo "$title" | grep -qi unsymbolized && fail "java with jvm_perfmap: a perf map's name called unsymbolized: $title"
cpu_verdict "$TMP/jvm-map.json" evidence | grep -q "diagnose ran .*jcmd $PID Compiler.perfmap" ||
	fail "java with jvm_perfmap: the verdict's evidence does not say jcmd ran: $(cpu_verdict "$TMP/jvm-map.json" evidence)"
stop
assert_released "the JVM runs"
