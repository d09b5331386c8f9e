#!/bin/bash
# t_hostile.sh — a target anyone may control cannot hang, steer or escape root's runs
# (engine/target/tfile.c: every file a target names is opened through its mapping or inside its root,
# regular files only, read by a helper process a deadline holds; engine/session/watchdog.c). Each run
# must end (a hang detector kills it otherwise: exit 137 is a failure), exit 0, 4 or 5, leave no
# BPF link or program, and write both audit records; targets run as nobody where they can.
# (a) .gnu_debuglink naming a FIFO next to a binary whose code has no CFI (DWARF unwinding asks
#     for the debug file): high-cpu --param unwind=dwarf. Before: blocked in open() for ever,
#     SIGINT ignored, 18 links attached.
# (b) .gnu_debuglink "../../canary": no file outside the binary's directory is opened for reading
#     (fanotify on the canary, an ELF file it would otherwise read, says who opens it).
# (c) in its own user + mount namespace, a FIFO bind-mounted over the target's own executable:
#     latency still names the target's functions (read through /proc/PID/map_files). Before:
#     blocked in libdwfl's open of /proc/PID/root/... for ever.
#     The same as the waker of another process: latency aimed at its victim ends too.
# (d) a chroot in its own mount namespace (its maps name /tmp/.../root/lib/...): latency, whose
#     resolver probe places uprobes on the chroot's libc, runs and names the function. Before:
#     "cannot open /proc/P/root/tmp/.../root/lib/...".
# (e) its executable on a FUSE file system that stops answering (tests/workloads/stallfs.c):
#     high-cpu ends on time with its CPU verdict, the frames as addresses, and a note naming the
#     stalled file; a SIGINT during such a run stops it at once. Before: hung with probes attached.
# (g) --param jvm_perfmap=yes on a fake JVM whose libjvm.so lives on a FUSE file system that stops
#     answering: the run ends, jcmd refused (no JDK of root's holds that file). Before: find_jcmd()
#     stat()ed the path the target names: diagnose in D state for ever, SIGKILL included.
# (h) a fake JDK tree of nobody's (bin/jcmd a link to /usr/bin/true): nothing is run. Before: "ran:
#     /usr/bin/true ... as uid 65534" (the link's target was root's).
# (i) a real JVM of nobody's in a cgroup of its own (below this test's), whose user SIGSTOPs every
#     jcmd it sees: jcmd ran in the JVM's cgroup and was killed as soon as it was stopped. Before:
#     in diagnose's cgroup, and waited on for its whole 15 s.
# (f) DEBUGINFOD_URLS naming a listener, HOME a fresh directory: no connection is made, nothing is
#     created under HOME. Before: root fetched /buildid/.../debuginfo and wrote ~/.cache.
. "$(dirname "$0")/lib.sh"
command -v gcc >/dev/null && command -v objcopy >/dev/null || fail "gcc and binutils are needed"
[ -c /dev/fuse ] || fail "/dev/fuse is missing: the FUSE case needs it"
[ -x "$WL/stallfs" ] || fail "$WL/stallfs not built"

HX="$TMP/hostile"
FS_PID=""
cleanup() {
	for p in $PIDS $FS_PID; do kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	umount -l "$HX/mnt" 2>/dev/null # a mount whose server is gone fails even a stat
	rm -rf "$TMP"
}
trap cleanup EXIT
mkdir -p "$HX/u/a/b"
chmod 755 "$TMP" "$HX"
chown -R 65534:65534 "$HX/u"
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all)
stop_bg() { kill -9 "$@" 2>/dev/null; wait "$@" 2>/dev/null; }

# run NAME TIMEOUT ARGS...: a run of diagnose ARGS --json into $TMP/NAME.json, killed after TIMEOUT
# seconds (a hang); checks its exit code, its audit records and that nothing of it stays attached.
run() {
	local name=$1 limit=$2
	shift 2
	local before
	before=$(grep -c . "$DIAGNOSE_AUDIT_FILE" 2>/dev/null || echo 0)
	timeout -s KILL "$limit" "$DIAG" "$@" --json > "$TMP/$name.json" 2> "$TMP/$name.err"
	rc=$?
	[ "$rc" != 137 ] || fail "$name: still running after ${limit}s (hung): $(tail -3 "$TMP/$name.err")"
	case $rc in 0 | 4 | 5) ;; *) fail "$name: exit $rc: $(tail -3 "$TMP/$name.err")" ;; esac
	assert_released "$name"
	python3 - "$DIAGNOSE_AUDIT_FILE" "$before" "$name" <<'EOF' || fail "$name: audit records missing"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]).read().splitlines()[int(sys.argv[2]):]]
acts = [l["action"] for l in lines]
ids = {l["run_id"] for l in lines}
sys.exit(0 if acts[:1] == ["start"] and len(acts) == 2 and acts[1] != "start" and len(ids) == 1 else 1)
EOF
}

# A program whose code has no CFI (only the C runtime's), frame pointers omitted: a DWARF unwind
# of its samples needs .debug_frame from its debug file.
nocfi() { # nocfi OUT DEBUGLINK-NAME
	gcc -O2 -g -fomit-frame-pointer -fno-asynchronous-unwind-tables -fno-unwind-tables \
		-o "$1.full" "$ROOT/tests/unit/fixtures/nofp_main.c" || fail "cannot build $1"
	objcopy --only-keep-debug "$1.full" "$1.dbg.real"
	strip --strip-debug --strip-unneeded -o "$1.stripped" "$1.full"
	python3 - "$2" "$1.link" <<'EOF'
import sys, zlib
name = sys.argv[1].encode() + b"\0"
name += b"\0" * (-len(name) % 4)
open(sys.argv[2], "wb").write(name + (0).to_bytes(4, "little"))
EOF
	objcopy --add-section .gnu_debuglink="$1.link" "$1.stripped" "$1"
	rm -f "$1.full" "$1.stripped" "$1.link"
}

# --- (a) a FIFO for a debug file -------------------------------------------------------------
nocfi "$HX/u/a/b/burner" burner.dbg
mkfifo "$HX/u/a/b/burner.dbg"
chown -R 65534:65534 "$HX/u"
"${NOBODY[@]}" "$HX/u/a/b/burner" >/dev/null 2>&1 &
PID=$!
PIDS="$PIDS $PID"
sleep 0.3
run fifo-debuglink 20 high-cpu --pid "$PID" --duration 2 --param unwind=dwarf
check "$TMP/fifo-debuglink.json" 'res["profile"]["samples"] > 0' "fifo-debuglink: no samples"
stop_bg "$PID"

# --- (b) a debuglink that climbs out of the binary's directory -------------------------------
cp "$WL/cpu_burner" "$HX/canary"
nocfi "$HX/u/a/b/climber" ../../../canary
chown -R 65534:65534 "$HX/u"
# fanotify says who opened the canary: only this binary's opens count (another diagnose on the
# machine, an older one, may well fall for the climb)
python3 - "$HX/canary" "$TMP/canary.log" <<'EOF' &
import ctypes, os, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
FAN_CLASS_NOTIF, FAN_MARK_ADD, FAN_OPEN, FAN_ACCESS, AT_FDCWD = 0, 1, 0x20, 0x01, -100
fd = libc.fanotify_init(FAN_CLASS_NOTIF, os.O_RDONLY)
if fd < 0 or libc.fanotify_mark(fd, FAN_MARK_ADD, ctypes.c_uint64(FAN_OPEN | FAN_ACCESS),
                                AT_FDCWD, sys.argv[1].encode()) < 0:
    sys.exit(1)
open(sys.argv[2], "w").write("ready\n")
while True:
    data = os.read(fd, 4096)
    while len(data) >= 24:
        length, _, _, _, _, efd, pid = struct.unpack_from("IBBHQii", data)
        try:
            exe = os.readlink("/proc/%d/exe" % pid)
        except OSError:
            exe = "?"
        if efd >= 0:
            os.close(efd)
        open(sys.argv[2], "a").write("opened by %d %s\n" % (pid, exe))
        data = data[length:]
EOF
WATCH=$!
PIDS="$PIDS $WATCH"
for i in $(seq 50); do [ -s "$TMP/canary.log" ] && break; sleep 0.1; done
grep -q ready "$TMP/canary.log" || fail "climb: the fanotify watcher did not start"
"${NOBODY[@]}" "$HX/u/a/b/climber" >/dev/null 2>&1 &
PID=$!
PIDS="$PIDS $PID"
sleep 0.3
run climb 20 high-cpu --pid "$PID" --duration 2 --param unwind=dwarf
sleep 0.2
! grep -q "opened by .* $DIAG\$" "$TMP/canary.log" ||
	fail "climb: a file outside the target's directory was opened: $(grep opened "$TMP/canary.log" | head -2)"
stop_bg "$PID" "$WATCH"

# --- (c) a FIFO over its own executable, in its own user + mount namespace -------------------
# A machine where an unprivileged user cannot make a user namespace (a container's seccomp,
# kernel.unprivileged_userns_clone=0, a chroot): the attack needs one, so it cannot be made there.
# (The case's lines are not indented inside the if: their here-documents end at column 0.)
if ! "${NOBODY[@]}" unshare -Urm true 2>/dev/null; then
echo "note: (c) not run: nobody cannot create a user namespace here ($("${NOBODY[@]}" unshare -Urm true 2>&1 | head -1))"
else
cp "$WL/lock_contention" "$HX/u/lc"
mkfifo "$HX/u/over.fifo"
chown -R 65534:65534 "$HX/u"
cat > "$HX/u/ns.sh" <<'EOF'
#!/bin/sh
# in a user + mount namespace of its own: the program runs, then a FIFO covers its executable
"$1" & echo $! > "$2"
sleep 0.3
mount --bind "$3" "$1" && echo bound >> "$2.ok"
wait
EOF
chmod 755 "$HX/u/ns.sh"
"${NOBODY[@]}" unshare -Urm --propagation private "$HX/u/ns.sh" "$HX/u/lc" "$HX/u/lc.pid" "$HX/u/over.fifo" \
	>/dev/null 2>&1 &
PIDS="$PIDS $!"
for i in $(seq 50); do [ -s "$HX/u/lc.pid.ok" ] && break; sleep 0.1; done
PID=$(cat "$HX/u/lc.pid" 2>/dev/null)
[ -n "$PID" ] && [ -s "$HX/u/lc.pid.ok" ] || fail "fifo-over-exe: the namespace did not start (unprivileged user namespaces?)"
PIDS="$PIDS $PID"
[ -p "/proc/$PID/root$HX/u/lc" ] || fail "fifo-over-exe: the target's executable is not a FIFO in its namespace"
run fifo-over-exe 25 latency --pid "$PID" --duration 2
check "$TMP/fifo-over-exe.json" \
	'any("worker" in f for s in res["offcpu"]["stacks"] for f in s.get("user", []))' \
	"fifo-over-exe: the target's function worker() is not named (its file was not read through its mapping)"
stop_bg "$PID"
# the same process as the waker of another one: a run aimed at its victim unwinds its stacks
cp "$(command -v yes)" "$HX/u/yes"
mkfifo "$HX/u/yes.fifo"
chown -R 65534:65534 "$HX/u"
cat > "$HX/u/ns-waker.sh" <<'EOF'
#!/bin/sh
# in a namespace of its own: a writer that wakes its reader; a FIFO then covers the writer
"$1" | cat > /dev/null &
echo $! > "$2"
sleep 0.3
mount --bind "$3" "$1" && echo bound >> "$2.ok"
wait
EOF
chmod 755 "$HX/u/ns-waker.sh"
"${NOBODY[@]}" unshare -Urm --propagation private "$HX/u/ns-waker.sh" "$HX/u/yes" "$HX/u/cat.pid" \
	"$HX/u/yes.fifo" >/dev/null 2>&1 &
PIDS="$PIDS $!"
for i in $(seq 50); do [ -s "$HX/u/cat.pid.ok" ] && break; sleep 0.1; done
PID=$(cat "$HX/u/cat.pid" 2>/dev/null)
[ -n "$PID" ] && [ -s "$HX/u/cat.pid.ok" ] || fail "waker: the namespace did not start"
PIDS="$PIDS $PID"
run waker 25 latency --pid "$PID" --duration 2
check "$TMP/waker.json" 'res["wakers"]["stacks"]' "waker: no waker stacks (the writer was not seen waking its reader)"
stop_bg "$PID"
pkill -9 -f "$HX/u/yes"
fi

# --- (d) a chroot in its own mount namespace --------------------------------------------------
CH="$HX/root"
mkdir -p "$CH/bin"
cp "$WL/lock_contention" "$CH/bin/lc"
for lib in $(ldd "$WL/lock_contention" | grep -o '/[^ ]*'); do
	mkdir -p "$CH$(dirname "$lib")"
	cp "$lib" "$CH$lib"
done
unshare -m --propagation private chroot "$CH" /bin/lc >/dev/null 2>&1 &
PID=$!
PIDS="$PIDS $PID"
sleep 0.5
grep -q "$CH/bin/lc" "/proc/$PID/maps" || grep -q " /bin/lc" "/proc/$PID/maps" || fail "chroot: target not running"
run chroot 25 latency --pid "$PID" --duration 2
check "$TMP/chroot.json" '"lookups" in res and not any("lookups" in n for n in r["notes"])' "chroot: the resolver probe did not run"
check "$TMP/chroot.json" \
	'any("worker" in f for s in res["offcpu"]["stacks"] for f in s.get("user", []))' \
	"chroot: the target's function worker() is not named"
stop_bg "$PID"

# --- (e) a FUSE file system that stops answering ----------------------------------------------
mkdir -p "$HX/mnt"
"$WL/stallfs" "$HX/mnt" "$WL/cpu_burner" "$HX/stall" >/dev/null 2>&1 &
FS_PID=$!
for i in $(seq 50); do [ -x "$HX/mnt/bin" ] && break; sleep 0.1; done
[ -x "$HX/mnt/bin" ] || fail "fuse: stallfs did not mount"
"$HX/mnt/bin" >/dev/null 2>&1 &
PID=$!
PIDS="$PIDS $PID"
sleep 1 # its pages are in: it runs on while the file system answers nothing more
touch "$HX/stall"
run fuse 25 high-cpu --pid "$PID" --duration 2
check "$TMP/fuse.json" 'any("stalled" in n and "/mnt/bin" in n for n in r["notes"])' \
	"fuse: no note names the stalled file"
check "$TMP/fuse.json" 'any(v["id"] == "cpu-bound-user" for v in r["verdicts"])' \
	"fuse: the CPU verdict was lost"
# a stop while the file system holds a read
"$DIAG" high-cpu --pid "$PID" --duration 30 --json > "$TMP/fuse-int.json" 2> "$TMP/fuse-int.err" &
RUN=$!
sleep 3
kill -INT "$RUN"
for i in $(seq 100); do kill -0 "$RUN" 2>/dev/null || break; sleep 0.1; done
kill -0 "$RUN" 2>/dev/null && { kill -9 "$RUN"; fail "fuse: SIGINT did not stop the run within 10 s"; }
wait "$RUN"
rc=$?
case $rc in 0 | 4 | 5) ;; *) fail "fuse: SIGINT: exit $rc: $(tail -3 "$TMP/fuse-int.err")" ;; esac
check "$TMP/fuse-int.json" 'r["stop_reason"] == "signal"' "fuse: SIGINT: not stopped by the signal"
assert_released "fuse: SIGINT"
stop_bg "$PID" "$FS_PID"
wait "$FS_PID" 2>/dev/null
umount -l "$HX/mnt" 2>/dev/null
FS_PID=""

# --- (g) a JVM's libjvm.so on a FUSE file system that stops answering --------------------------
printf 'int jvm_marker(void) { return 1; }\n' | gcc -shared -fPIC -x c -o "$HX/fakejvm.so" - ||
	fail "jvm-fuse: cannot build a shared library"
mkdir -p "$HX/jmnt"
"$WL/stallfs" "$HX/jmnt" "$HX/fakejvm.so" "$HX/jstall" jdk/lib/server/libjvm.so >/dev/null 2>&1 &
FS_PID=$!
for i in $(seq 50); do [ -f "$HX/jmnt/jdk/lib/server/libjvm.so" ] && break; sleep 0.1; done
[ -f "$HX/jmnt/jdk/lib/server/libjvm.so" ] || fail "jvm-fuse: stallfs did not mount"
# fakejvm: a process as nobody that maps LIB and sleeps
fakejvm() {
	"${NOBODY[@]}" python3 -c 'import ctypes, sys, time
ctypes.CDLL(sys.argv[1])
time.sleep(600)' "$1" >/dev/null 2>&1 &
	PID=$!
	PIDS="$PIDS $PID"
	for i in $(seq 50); do grep -q "$1" "/proc/$PID/maps" 2>/dev/null && return; sleep 0.1; done
	fail "fakejvm: $1 is not mapped"
}
fakejvm "$HX/jmnt/jdk/lib/server/libjvm.so"
touch "$HX/jstall"
# not run(): a run stuck in the kernel does not die of SIGKILL; the file system's end frees it
"$DIAG" high-cpu --pid "$PID" --duration 1 --param jvm_perfmap=yes --json > "$TMP/jvm-fuse.json" \
	2> "$TMP/jvm-fuse.err" &
RUN=$!
for i in $(seq 250); do kill -0 "$RUN" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$RUN" 2>/dev/null; then
	stop_bg "$FS_PID"
	umount -l "$HX/jmnt"
	stop_bg "$RUN"
	fail "jvm-fuse: still running after 25 s (stuck on the JVM's file system: $(cat "/proc/$RUN/wchan" 2>/dev/null))"
fi
wait "$RUN"
rc=$?
case $rc in 0 | 4 | 5) ;; *) fail "jvm-fuse: exit $rc: $(tail -3 "$TMP/jvm-fuse.err")" ;; esac
assert_released "jvm-fuse"
check "$TMP/jvm-fuse.json" 'res["profile"].get("jvm_perfmap", "").startswith("failed: no jcmd to trust")' \
	"jvm-fuse: jcmd not refused: $(json "$TMP/jvm-fuse.json" 'r["results"]["profile"].get("jvm_perfmap")')"
stop_bg "$PID" "$FS_PID"
umount -l "$HX/jmnt" 2>/dev/null
FS_PID=""

# --- (h) a JDK tree of the target's own, its bin/jcmd a link to a program of root's ------------
mkdir -p "$HX/u/jdk/lib/server" "$HX/u/jdk/bin"
cp "$HX/fakejvm.so" "$HX/u/jdk/lib/server/libjvm.so"
ln -s /usr/bin/true "$HX/u/jdk/bin/jcmd"
chown -R 65534:65534 "$HX/u"
fakejvm "$HX/u/jdk/lib/server/libjvm.so"
run jvm-tree 25 high-cpu --pid "$PID" --duration 1 --param jvm_perfmap=yes
check "$TMP/jvm-tree.json" 'res["profile"].get("jvm_perfmap", "").startswith("failed: no jcmd to trust")' \
	"jvm-tree: $(json "$TMP/jvm-tree.json" 'r["results"]["profile"].get("jvm_perfmap")')"
stop_bg "$PID"

# --- (i) a real JVM whose user stops the jcmd run for it -----------------------------------------
command -v javac >/dev/null && command -v jcmd >/dev/null ||
	fail "javac and jcmd are needed (openjdk-17-jdk-headless: make deps)"
JCG="" # a cgroup of the JVM's own, in the pids hierarchy below ours (v1), else v2's
OWNPIDS=$(awk -F: '$2 == "pids" { print $3; exit }' /proc/self/cgroup)
V2=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
if [ -d /sys/fs/cgroup/pids ] && [ -n "$OWNPIDS" ]; then
	JCG="/sys/fs/cgroup/pids${OWNPIDS%/}/diag-e2e-jvm-$$"
elif [ -n "$V2" ]; then
	JCG="$V2$(sed -n 's/^0:://p' /proc/self/cgroup | sed 's:/$::')/diag-e2e-jvm-$$"
fi
[ -n "$JCG" ] && mkdir "$JCG" || fail "jvm-stop: cannot make a cgroup below this test's own"
mkdir "$HX/java" && javac -d "$HX/java" "$ROOT/tests/workloads/HotRows.java" 2> "$TMP/javac.err" ||
	fail "jvm-stop: javac: $(head -3 "$TMP/javac.err")"
chmod 777 "$HX/java" && chmod a+r "$HX/java/HotRows.class"
(echo "$BASHPID" > "$JCG/cgroup.procs" && cd "$HX/java" &&
	exec "${NOBODY[@]}" java -XX:-UsePerfData -cp "$HX/java" HotRows > /dev/null 2>&1) &
PID=$!
PIDS="$PIDS $PID"
for i in $(seq 100); do [ -e "/proc/$PID" ] && [ "$(stat -c %u "/proc/$PID")" = 65534 ] && break; sleep 0.1; done
sleep 2 # the JVM is up: its attach listener answers
# its user: every jcmd of nobody's, as soon as seen, has its cgroups noted (once: a later look,
# after diagnose killed it, would find nothing and empty the note), then is stopped (this JVM's
# jcmd only: "jcmd PID Compiler.perfmap"; another test's JVM may have one of its own)
"${NOBODY[@]}" bash -c 'while :; do for p in $(pgrep -u 65534 -f "^jcmd $2 Compiler.perfmap"); do
	[ -s "$1/jcmd.$p" ] || cat /proc/$p/cgroup > "$1/jcmd.$p" 2>/dev/null
	kill -STOP "$p" 2>/dev/null; done; sleep 0.02; done' sh "$HX/java" "$PID" &
STOPPER=$!
PIDS="$PIDS $STOPPER"
run jvm-stop 40 high-cpu --pid "$PID" --duration 1 --param jvm_perfmap=yes
stop_bg "$STOPPER"
check "$TMP/jvm-stop.json" '"was stopped by a signal" in res["profile"].get("jvm_perfmap", "")' \
	"jvm-stop: a stopped jcmd was not killed at once: $(json "$TMP/jvm-stop.json" 'r["results"]["profile"].get("jvm_perfmap")')"
seen=$(grep -l "^0::" "$HX/java"/jcmd.* 2>/dev/null | head -1)
[ -n "$seen" ] || fail "jvm-stop: no jcmd was seen running"
# the hierarchy of the JVM's own cgroup (this machine may move processes in others by itself)
JLINE=$(grep -F "/diag-e2e-jvm-$$" "/proc/$PID/cgroup")
[ -n "$JLINE" ] || fail "jvm-stop: the JVM is not in $JCG"
grep -qxF "$JLINE" "$seen" || fail "jvm-stop: jcmd did not run in the JVM's cgroup ($JLINE): $(tr '\n' ' ' < "$seen")"
stop_bg "$PID"
rm -f "/tmp/perf-$PID.map" "/tmp/.java_pid$PID" "/tmp/.attach_pid$PID" "$HX/java/.attach_pid$PID"
rmdir "$JCG" 2>/dev/null

# --- (f) no network, nothing under HOME -------------------------------------------------------
python3 - "$TMP/debuginfod.log" "$TMP/debuginfod.port" <<'EOF' &
import socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(8)
open(sys.argv[2], "w").write(str(s.getsockname()[1]))
while True:
    c, _ = s.accept()  # never answers
    open(sys.argv[1], "a").write("connection\n")
EOF
PIDS="$PIDS $!"
for i in $(seq 50); do [ -s "$TMP/debuginfod.port" ] && break; sleep 0.1; done
nocfi "$HX/nodebug" nodebug.dbg # its debug file is nowhere: a debuginfod client would ask for it
rm -f "$HX/nodebug.dbg.real"
"$HX/nodebug" >/dev/null 2>&1 &
PID=$!
PIDS="$PIDS $PID"
sleep 0.3
mkdir -p "$TMP/home"
DEBUGINFOD_URLS="http://127.0.0.1:$(cat "$TMP/debuginfod.port")" HOME="$TMP/home" XDG_CACHE_HOME= \
	run debuginfod 20 high-cpu --pid "$PID" --duration 2 --param unwind=dwarf
[ ! -s "$TMP/debuginfod.log" ] || fail "debuginfod: a connection was made to DEBUGINFOD_URLS"
[ -z "$(ls -A "$TMP/home")" ] || fail "debuginfod: files created under HOME: $(find "$TMP/home" | head -3)"
echo "ok: a FIFO debug file, a climbing debuglink, a FIFO over the executable, a chroot, a stalled FUSE file system, a JVM's own JDK tree or stalled libjvm.so, a stopped jcmd and DEBUGINFOD_URLS neither hang, steer nor escape a run"
