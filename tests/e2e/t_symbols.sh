# Symbols you can trust, on real processes sampled by high-cpu: glibc's frames named from its
# debug file (libc6-dbg); a g++-built template method and a Rust function (legacy and v0
# mangling, when rustc is installed) demangled; a stripped binary's hot function under one
# "file+0xSTART" (its .eh_frame entry) with its true share; JIT code named from the process's
# perf map (a C workload, also in its own pid and mount namespaces; Node --perf-basic-prof when
# nodejs is installed); a binary deleted while it runs; a process in its own mount namespace
# whose binary path does not exist on the host.
. "$(dirname "$0")/lib.sh"
PERFMAP=""
trap 'for p in $PIDS; do kill -9 $p 2>/dev/null; wait $p 2>/dev/null; done; [ -z "$PERFMAP" ] || rm -f "$PERFMAP"; rm -rf "$TMP"' EXIT

# profile FILE-PREFIX: high-cpu on $PID for 2 s; writes FILE-PREFIX.json and FILE-PREFIX.folded.
profile() {
	"$DIAG" high-cpu --pid "$PID" --duration 2 --json --folded "$1.folded" > "$1.json"
	rc=$?
	[ "$rc" = 4 ] || [ "$rc" = 5 ] || [ "$rc" = 0 ] || fail "$1: exit code $rc"
}
# leaf_share FILE PYTHON-CONDITION-ON-NAME: percentage of samples whose leaf user frame matches.
leaf_share() {
	python3 -c 'import json, sys
r = json.load(open(sys.argv[1])); p = r["results"]["profile"]
ok = lambda name: eval(sys.argv[2])
print(round(100 * sum(s["count"] for s in p["stacks"] if s["user"] and ok(s["user"][0])) / max(1, p["samples"])))' "$1" "$2"
}
stop() { kill -9 "$PID" 2>/dev/null; wait "$PID" 2>/dev/null; }

# 1. A binary deleted after it started (a deploy replaced it); glibc's frames on the way.
mkdir -p "$TMP/del"
cp "$WL/cpu_burner" "$TMP/del/cpu_burner"
start "$TMP/del/cpu_burner"
rm "$TMP/del/cpu_burner"
profile "$TMP/del"
stop
share=$(leaf_share "$TMP/del.json" 'name == "compute_checksum"')
[ "$share" -ge 50 ] || fail "deleted binary: compute_checksum has $share% of samples: $(head -3 "$TMP/del.folded")"
grep -q 'main;serve_requests;handle_request;compute_checksum' "$TMP/del.folded" || fail "deleted binary: call path missing"
if [ -d /usr/lib/debug/.build-id ]; then
	grep -q 'libc\.so\.6+0x' "$TMP/del.folded" && fail "glibc frame left unnamed with libc6-dbg installed: $(grep -m3 'libc\.so\.6+0x' "$TMP/del.folded")"
	grep -q '__libc_start_call_main;main;' "$TMP/del.folded" || fail "glibc's __libc_start_call_main (debug file only) not named: $(head -3 "$TMP/del.folded")"
fi

# 2. Its own mount namespace: the binary lives on a tmpfs only that namespace sees.
mkdir -p "$TMP/ns"
start unshare -m --propagation private sh -c 'mount -t tmpfs tmpfs "$1" && cp "$2" "$1/cpu_burner" && exec "$1/cpu_burner"' sh "$TMP/ns" "$WL/cpu_burner"
sleep 0.3
[ -e "$TMP/ns/cpu_burner" ] && fail "mount namespace: the binary is visible on the host"
grep -q "$TMP/ns/cpu_burner" "/proc/$PID/maps" || fail "mount namespace: workload not running from the tmpfs"
profile "$TMP/ns"
stop
share=$(leaf_share "$TMP/ns.json" 'name == "compute_checksum"')
[ "$share" -ge 50 ] || fail "mount namespace: compute_checksum has $share% of samples: $(head -3 "$TMP/ns.folded")"

# 3. C++: a class template's method, demangled.
start "$WL/cxx_burner"
profile "$TMP/cxx"
stop
share=$(leaf_share "$TMP/cxx.json" 'name.startswith("shop::Checksum<unsigned long>::update(unsigned char const*, unsigned long)")')
[ "$share" -ge 50 ] || fail "C++: the template method has $share% of samples (demangled): $(head -3 "$TMP/cxx.folded")"
grep -q '_ZN' "$TMP/cxx.folded" && fail "C++: mangled names left: $(grep -m3 _ZN "$TMP/cxx.folded")"

# 4. Stripped: one hot function, one name (its entry, from .eh_frame), its true share.
read -r entry size <<EOF2
$(python3 - "$WL/cpu_burner" <<'PY'
import subprocess, sys
nm = subprocess.run(["nm", "-S", sys.argv[1]], capture_output=True, text=True).stdout.split("\n")
addr, size = next((int(l.split()[0], 16), int(l.split()[1], 16)) for l in nm if l.endswith(" compute_checksum"))
for l in subprocess.run(["readelf", "-lW", sys.argv[1]], capture_output=True, text=True).stdout.split("\n"):
    f = l.split()
    if f and f[0] == "LOAD" and int(f[2], 16) <= addr < int(f[2], 16) + int(f[4], 16):
        print(hex(addr - int(f[2], 16) + int(f[1], 16)), size)
PY
)
EOF2
[ -n "$entry" ] || fail "stripped: cannot find compute_checksum in the unstripped binary"
start "$WL/cpu_burner_stripped"
profile "$TMP/strip"
stop
share=$(leaf_share "$TMP/strip.json" "name == 'cpu_burner_stripped+$entry'")
[ "$share" -ge 50 ] || fail "stripped: cpu_burner_stripped+$entry has $share% of samples: $(head -5 "$TMP/strip.folded")"
inside=$(leaf_share "$TMP/strip.json" "name.startswith('cpu_burner_stripped+0x') and $entry < int(name.split('+')[1], 16) < $entry + $size")
[ "$inside" = 0 ] || fail "stripped: $inside% of samples inside compute_checksum are not under its entry"

# 5. JIT: code in an anonymous executable mapping, named by /tmp/perf-PID.map.
if [ "$(uname -m)" = x86_64 ]; then
	start "$WL/jit_burner"
	PERFMAP="/tmp/perf-$PID.map"
	profile "$TMP/jit"
	stop
	rm -f "$PERFMAP"
	share=$(leaf_share "$TMP/jit.json" 'name == "jit_hot_loop"')
	[ "$share" -ge 50 ] || fail "JIT: jit_hot_loop has $share% of samples: $(head -3 "$TMP/jit.folded")"
fi
# 5b. JIT in a container: own pid and mount namespaces, a private /tmp. The process writes
# /tmp/perf-1.map in its /tmp (pid 1 in its namespace); the host has no such file for it.
if [ "$(uname -m)" = x86_64 ]; then
	# The binary is opened before the tmpfs hides /tmp (the checkout may live there, as in CI)
	# and run from that descriptor.
	start unshare -m -p -f --kill-child --mount-proc sh -c 'exec 3< "$1" && mount -t tmpfs tmpfs /tmp && exec /proc/self/fd/3' sh "$WL/jit_burner"
	NS_HOLDER=$PID
	sleep 0.3
	PID=$(cat "/proc/$NS_HOLDER/task/$NS_HOLDER/children" | awk '{print $1}')
	[ -n "$PID" ] || fail "JIT in a container: no child of unshare"
	grep -q '^NSpid:.*[[:space:]]1$' "/proc/$PID/status" || fail "JIT in a container: not pid 1 in its namespace"
	[ -e "/tmp/perf-$PID.map" ] && fail "JIT in a container: its perf map is visible on the host"
	profile "$TMP/jitns"
	kill -9 "$PID"
	PID=$NS_HOLDER
	stop
	share=$(leaf_share "$TMP/jitns.json" 'name == "jit_hot_loop"')
	[ "$share" -ge 50 ] || fail "JIT in a container: jit_hot_loop has $share% of samples: $(head -3 "$TMP/jitns.folded")"
fi

# 6. Node with --perf-basic-prof, when nodejs is installed: the hot JS function is named.
if command -v node >/dev/null; then
	printf '%s\n' 'function hotLoop(n) { let h = 0; for (let i = 0; i < n; i++) h = (h ^ i) * 16777619 | 0; return h; }' \
		'let s = 0; for (;;) s += hotLoop(1e6);' > "$TMP/hot.js"
	# from $TMP: V8 writes an isolate-*-v8.log into its working directory
	start sh -c 'cd "$1" && exec node --perf-basic-prof "$2"' sh "$TMP" "$TMP/hot.js"
	PERFMAP="/tmp/perf-$PID.map"
	sleep 0.7 # let V8 compile hotLoop
	profile "$TMP/node"
	stop
	rm -f "$PERFMAP"
	share=$(leaf_share "$TMP/node.json" '"hotLoop" in name')
	[ "$share" -ge 50 ] || fail "Node: hotLoop has $share% of samples: $(sort -t' ' -k2 -nr "$TMP/node.folded" | head -3 | cut -c1-300)"
fi
# 7. Rust, legacy and v0 mangling, when rustc is installed: rust_burner::shop::hot_loop, without
# the legacy hash or the v0 crate disambiguator.
if command -v rustc >/dev/null; then
	for mangling in legacy v0; do
		# legacy is rustc's default (naming it needs -Z unstable-options)
		rustc -O -g -C force-frame-pointers=yes $( [ $mangling = v0 ] && echo -C symbol-mangling-version=v0) \
			-o "$TMP/rust_burner" "$ROOT/tests/workloads/rust_burner.rs" 2>"$TMP/rustc.err" ||
			fail "rustc ($mangling): $(head -3 "$TMP/rustc.err")"
		nm "$TMP/rust_burner" | grep -q "$( [ $mangling = v0 ] && echo ' _RNv' || echo ' _ZN11rust_burner4shop8hot_loop17h')" ||
			fail "rustc did not use $mangling mangling"
		start "$TMP/rust_burner"
		profile "$TMP/rust_$mangling"
		stop
		share=$(leaf_share "$TMP/rust_$mangling.json" 'name == "rust_burner::shop::hot_loop"')
		[ "$share" -ge 50 ] || fail "Rust ($mangling): rust_burner::shop::hot_loop has $share% of samples: $(sort -t' ' -k2 -nr "$TMP/rust_$mangling.folded" | head -3 | cut -c1-300)"
	done
fi
assert_released "the symbol runs"
