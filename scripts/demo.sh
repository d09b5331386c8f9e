#!/bin/sh
# demo.sh — `make demo`: start the bundled CPU-burning workload (a toy request loop whose time
# goes to compute_checksum), run `diagnose high-cpu` on it as on-call would, then stop it.
set -u
BUILD=${BUILD:-build}
# Files written under build/ and the test directories belong to whoever ran make: do not write
# them with a sudo caller's rights (diagnose does that for --output/--folded under sudo).
unset SUDO_UID SUDO_GID
if [ "$(id -u)" -ne 0 ]; then
	echo "make demo loads BPF programs: run it as root (sudo make demo)" >&2
	exit 3
fi
"$BUILD/workloads/cpu_burner" >/dev/null &
pid=$!
# HUP and PIPE too: `make demo | head` closes the output mid-report, and a shell killed by a
# signal it does not trap runs no EXIT trap (the demo service would burn a CPU on)
trap 'kill $pid 2>/dev/null' EXIT INT TERM HUP PIPE
sleep 0.5
echo "\$ diagnose high-cpu --recipes recipes --pid $pid --folded $BUILD/demo.folded --force"
"$BUILD/diagnose" high-cpu --recipes recipes --pid "$pid" --folded "$BUILD/demo.folded" --force
rc=$?
echo
echo "exit code $rc (0 fine, 4 warning, 5 critical; see README). Folded stacks for flamegraph.pl: $BUILD/demo.folded"
# A verdict of warning or critical is the demo working, not failing.
case $rc in 0|4|5) exit 0 ;; *) exit "$rc" ;; esac
