#!/bin/bash
# run.sh — `make check-kernel KERNEL=5.10|6.1|6.1-rt|6.12`: boots a Debian kernel (11's 5.10, 12's
# 6.1 and 6.1-rt, 13's 6.12) in a QEMU guest and runs the smoke set (tests/kernel/smoke.sh) there
# on the binary and workloads built here.
#
# Owns: fetching the Debian kernel package (apt-get download into build/kernels/, unpacked there,
# never installed; another release's suite through an apt configuration of its own in
# build/kernels/apt-SUITE/, the machine's sources untouched), the modules of either layout
# (/lib/modules or Debian 13's /usr/lib/modules, .ko or .ko.xz), the initramfs (busybox-static, the host's own binaries and the libraries ldd
# names for them, the kernel modules the smoke set loads and their dependencies, the tree's
# recipes/, lua/ and build/), the bounded QEMU boot (TCG single-threaded unless a hardware
# hypervisor is there), and unpacking the guest's results into build/kernels/KERNEL/logs/.
# Must not: touch /boot or the host's modules, leave a QEMU or a temporary file behind (trap), or
# judge the results itself: the guest's smoke.sh does, and its status is this script's.
# Exit: 0 every smoke case passed, 1 a case failed, 2 the guest did not finish (boot, timeout).
set -euo pipefail

KERNEL=${1:-${KERNEL:-6.1}}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-build}
TIMEOUT=${KERNEL_TIMEOUT:-1500} # seconds for the whole guest run (TCG: ~6x slower than the host)
HERE="$ROOT/scripts/kernel-guest"
OUT="$ROOT/$BUILD/kernels/$KERNEL"

SUITE="" # empty: the machine's own (Debian 12's) sources
case "$KERNEL" in
5.10) META=linux-image-cloud-amd64 SUITE=bullseye ;; # Debian 11's kernel for VMs
6.1) META=linux-image-cloud-amd64 ;; # Debian 12's kernel for VMs: virtio and serial built in
6.1-rt) META=linux-image-rt-amd64 ;; # PREEMPT_RT
6.12) META=linux-image-cloud-amd64 SUITE=trixie ;; # Debian 13's
*) echo "check-kernel: KERNEL=$KERNEL: want 5.10, 6.1, 6.1-rt or 6.12" >&2; exit 2 ;;
esac

for tool in qemu-system-x86_64 busybox cpio apt-get dpkg-deb jq bpftool losetup mkfs.ext4 ethtool nft ip xz; do
	command -v "$tool" >/dev/null || { echo "check-kernel: $tool missing (make deps installs it)" >&2; exit 2; }
done

WORK=$(mktemp -d /tmp/diagnose-kernel.XXXXXX)
QEMU_PID=""
cleanup() {
	[ -n "$QEMU_PID" ] && kill -9 "$QEMU_PID" 2>/dev/null && wait "$QEMU_PID" 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 2' INT TERM HUP

# ---- the kernel package: the metapackage's current image, downloaded once ---------------------
mkdir -p "$OUT"
APT_OPTS=()
if [ -n "$SUITE" ]; then
	# Another release's suite: its own sources, lists and cache under build/kernels/apt-SUITE,
	# signed by the keys Debian 12's debian-archive-keyring carries for it (11 and 13 both).
	A="$ROOT/$BUILD/kernels/apt-$SUITE"
	mkdir -p "$A/lists/partial" "$A/cache/archives/partial"
	printf 'deb http://deb.debian.org/debian %s main\ndeb http://deb.debian.org/debian-security %s-security main\n' \
		"$SUITE" "$SUITE" > "$A/sources.list"
	APT_OPTS=(-o "Dir::Etc::SourceList=$A/sources.list" -o "Dir::Etc::SourceParts=/nonexistent"
		  -o "Dir::State::Lists=$A/lists" -o "Dir::Cache=$A/cache" -o "Dir::State::status=/var/lib/dpkg/status"
		  -o "APT::Architecture=amd64" -o "APT::Architectures=amd64")
	if [ -z "$(find "$A/lists" -name '*Packages*' -mtime -7 2>/dev/null | head -1)" ]; then
		apt-get "${APT_OPTS[@]}" update >&2 2>/dev/null ||
			{ echo "check-kernel: apt-get update of $SUITE failed" >&2; exit 2; }
	fi
fi
PKG=$(apt-cache "${APT_OPTS[@]}" depends "$META" 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-[0-9].*\)$/\1/p' | head -1)
[ -n "$PKG" ] || { echo "check-kernel: apt-cache names no image for $META (apt-get update?)" >&2; exit 2; }
DEB=$(ls "$ROOT/$BUILD/kernels/${PKG}_"*.deb 2>/dev/null | head -1 || true)
if [ -z "$DEB" ]; then
	(cd "$ROOT/$BUILD/kernels" && apt-get "${APT_OPTS[@]}" download "$PKG" >&2 2>/dev/null) ||
		{ echo "check-kernel: apt-get download $PKG failed" >&2; exit 2; }
	DEB=$(ls "$ROOT/$BUILD/kernels/${PKG}_"*.deb | head -1)
fi
KROOT="$OUT/root"
if [ ! -f "$KROOT/.unpacked-$(basename "$DEB")" ]; then
	rm -rf "$KROOT" && mkdir -p "$KROOT"
	dpkg-deb -x "$DEB" "$KROOT"
	touch "$KROOT/.unpacked-$(basename "$DEB")"
fi
VMLINUZ=$(ls "$KROOT"/boot/vmlinuz-* | head -1)
KVER=${VMLINUZ##*/vmlinuz-}
echo "check-kernel: $PKG ($KVER)" >&2

# ---- the initramfs --------------------------------------------------------------------------
RFS="$WORK/rootfs"
mkdir -p "$RFS"/{bin,sbin,etc,proc,sys,dev,tmp,run,mnt,root,var/run,lib/modules/"$KVER"}
cp "$(command -v busybox)" "$RFS/bin/busybox"
for applet in $("$RFS/bin/busybox" --list); do
	[ -e "$RFS/bin/$applet" ] || ln -s busybox "$RFS/bin/$applet"
done
# A binary of the host and every library ldd names for it, at the same paths.
copy_with_libs() {
	local f lib
	for f in "$@"; do
		mkdir -p "$RFS$(dirname "$f")" && cp -L "$f" "$RFS$f"
		for lib in $(ldd "$f" 2>/dev/null | grep -o '/[^ ]*'); do
			[ -e "$RFS$lib" ] && continue
			mkdir -p "$RFS$(dirname "$lib")" && cp -L "$lib" "$RFS$lib"
		done
	done
}
copy_with_libs "$(command -v bpftool)" "$(command -v jq)" "$(command -v ip)" "$(command -v nft)" \
	"$(command -v ethtool)" "$(command -v losetup)" "$(command -v mkfs.ext4)" /lib64/ld-linux-x86-64.so.2
cc -static -O2 -Wall -Wextra -Werror -o "$RFS/bin/guest_exit" "$HERE/guest_exit.c"
mkdir -p "$RFS/tree/$BUILD"
cp -r "$ROOT/recipes" "$ROOT/lua" "$RFS/tree/"
cp "$ROOT/$BUILD/diagnose" "$RFS/tree/$BUILD/"
cp -r "$ROOT/$BUILD/workloads" "$RFS/tree/$BUILD/"
mkdir -p "$RFS/tree/$BUILD/tests" && cp "$ROOT/$BUILD/tests/test_core_btf" "$RFS/tree/$BUILD/tests/"
copy_with_libs "$ROOT/$BUILD/diagnose" "$ROOT/$BUILD/tests/test_core_btf" $(find "$ROOT/$BUILD/workloads" -type f -perm -u+x)
mkdir -p "$RFS/tree/tests/kernel" && cp "$ROOT/tests/kernel/smoke.sh" "$RFS/tree/tests/kernel/"
cp "$HERE/init" "$RFS/init" && chmod 755 "$RFS/init"
echo "root:x:0:0:root:/root:/bin/sh" > "$RFS/etc/passwd"
echo "root:x:0:" > "$RFS/etc/group"
echo "nobody:x:65534:" >> "$RFS/etc/group"
echo "nobody:x:65534:65534:nobody:/:/bin/false" >> "$RFS/etc/passwd"

# The modules the smoke set loads (network-errors: veth, nftables numgen; io-saturation: loop,
# ext4),
# each after its dependencies (its .modinfo's depends=), listed in load order in /lib/modules/load.
MODDIR="$KROOT/lib/modules/$KVER"
[ -d "$MODDIR" ] || MODDIR="$KROOT/usr/lib/modules/$KVER" # Debian 13: merged /usr
declare -A seen=()
mod_path() { find "$MODDIR" -name "$1.ko" -o -name "$1.ko.xz" | head -1; }
# a module as busybox's insmod takes it: uncompressed
mod_bytes() { case "$1" in *.xz) xz -dc "$1" ;; *) cat "$1" ;; esac; }
add_mod() {
	local name=${1//-/_} path dep ko
	[ -n "${seen[$name]:-}" ] && return 0
	seen[$name]=1
	path=$(mod_path "$1")
	[ -n "$path" ] || path=$(mod_path "${1//_/-}")
	[ -n "$path" ] || return 0 # built in
	# a module's .modinfo holds NUL-separated "key=value" strings, "depends=a,b" among them
	for dep in $(mod_bytes "$path" | tr '\0' '\n' | sed -n 's/^depends=//p' | tr ',' ' '); do add_mod "$dep"; done
	ko=$(basename "$path" .xz)
	mod_bytes "$path" > "$RFS/lib/modules/$KVER/$ko"
	echo "$ko" >> "$RFS/lib/modules/load"
}
: > "$RFS/lib/modules/load"
# crc32c_generic first: libcrc32c and ext4 ask the crypto API for "crc32c" at run time (no
# depends= names it), and where it is a module (the rt kernel) nothing else would load it.
for m in crc32c_generic loop ext4 veth nf_tables nft_numgen; do add_mod "$m"; done

INITRD="$WORK/initrd.cpio.gz"
(cd "$RFS" && find . | cpio -o -H newc --quiet | gzip -1) > "$INITRD"
echo "check-kernel: initramfs $(du -h "$INITRD" | cut -f1)" >&2

# ---- the boot -------------------------------------------------------------------------------
# KVM only on a real hardware hypervisor: vmx/svm in the CPU flags, and no software kvm (kvm_pvm
# emulates the guest's ring 0 and takes minutes to boot). TCG single-threaded otherwise: with
# thread=multi QEMU 7.2 livelocked 6.1 guests when probes attached and detached (docs/testing.md).
ACCEL="tcg,thread=single"
if grep -qwE 'vmx|svm' /proc/cpuinfo && [ -w /dev/kvm ] && [ ! -d /sys/module/kvm_pvm ]; then
	ACCEL=kvm
fi
rm -rf "$OUT/logs" && mkdir -p "$OUT/logs"
RESULTS="$WORK/results.txt"
echo "check-kernel: booting $KVER ($ACCEL), at most ${TIMEOUT}s; console in $OUT/logs/console.txt" >&2
set +e
nice -n 10 timeout --foreground -k 10 "$TIMEOUT" qemu-system-x86_64 \
	-accel "$ACCEL" -m 2G -smp 2 -nographic -no-reboot -nodefaults \
	-kernel "$VMLINUZ" -initrd "$INITRD" \
	-append "console=ttyS0 panic=-1 oops=panic quiet loglevel=4 rdinit=/init" \
	-serial "file:$OUT/logs/console.txt" -serial "file:$RESULTS" \
	-device isa-debug-exit,iobase=0xf4,iosize=0x04 </dev/null &
QEMU_PID=$!
wait "$QEMU_PID"
qemu_rc=$?
QEMU_PID=""
set -e

# The guest's results: its summary lines, then its logs as a base64 tar between two markers.
tr -d '\r' < "$RESULTS" > "$WORK/results.unix"
sed -n '/^=== logs begin ===$/,/^=== logs end ===$/p' "$WORK/results.unix" | sed '1d;$d' | base64 -d 2>/dev/null |
	tar -xzf - -C "$OUT/logs" 2>/dev/null || echo "check-kernel: the guest sent no logs" >&2
sed '/^=== logs begin ===$/,$d' "$WORK/results.unix" > "$OUT/logs/summary.txt"
cat "$OUT/logs/summary.txt"
# isa-debug-exit: the guest writes N, QEMU exits (N << 1) | 1: 1 passed, 3 failed.
case $qemu_rc in
1) echo "check-kernel $KERNEL: passed (logs in $OUT/logs)"; exit 0 ;;
3) echo "check-kernel $KERNEL: FAILED (logs in $OUT/logs)"; exit 1 ;;
124 | 137) echo "check-kernel $KERNEL: the guest did not finish within ${TIMEOUT}s (console: $OUT/logs/console.txt)"; exit 2 ;;
*) echo "check-kernel $KERNEL: the guest ended without a result (QEMU exit $qemu_rc; console: $OUT/logs/console.txt)"; tail -20 "$OUT/logs/console.txt"; exit 2 ;;
esac
