#!/bin/sh
# install-deps.sh — makes sure the Debian packages the build, tests and benchmarks need are present.
# Installs what is missing when run as root (a fresh CI machine); otherwise lists it and fails.
set -eu

PKGS="clang llvm bpftool libbpf-dev libelf-dev libdw-dev libiberty-dev zlib1g-dev libyaml-dev
      libcyaml-dev liblua5.4-dev lua5.4 libcmocka-dev libclang-rt-14-dev pkg-config make gcc g++
      binutils python3 libc6-dbg xz-utils util-linux libjemalloc2 libjemalloc-dev iproute2 \
      libgoogle-perftools-dev libmimalloc-dev \
      nftables ethtool protobuf-c-compiler libprotobuf-c-dev nettle-dev libjansson-dev \
      systemtap-sdt-dev postgresql-server-dev-15"
# xz-utils: tests/e2e/t_stripped.sh diagnoses xz, whose work is in the stripped liblzma5.
# libjemalloc2: tests/e2e/t_memory.sh probes an allocator other than glibc's. libjemalloc-dev:
# libjemalloc.so, to link tests/workloads/mem_leaker.c against jemalloc (build/workloads/
# mem_leaker_je: jemalloc bound at run time, not preloaded); libgoogle-perftools-dev and
# libmimalloc-dev, the same leaker against tcmalloc and mimalloc (mem_leaker_tc, mem_leaker_mi,
# tests/e2e/t_memory_real.sh). iproute2 (ip netns,
# veth), nftables (numgen drop rules) and ethtool (segmentation offloads off, so that a dropped
# packet is one segment): the network-errors tests build a private lossy network.
# protobuf-c: the pprof writer's code is generated from proto/profile.proto at build time.
# nettle-dev: SHA-256 of recipes, snippets and BPF objects (engine/common/sha256.c). libjansson-dev:
# the JSON reader of reports and of the verdict child's answer (engine/common/json_parse.c).
# systemtap-sdt-dev: sys/sdt.h, for the USDT fixture (tests/unit/fixtures/usdt_app.c).
# postgresql-server-dev-15: PostgreSQL 15's server headers, which tests/unit/test_pg_activity.c
# checks pg_activity's table of the server's shared-memory layout against (tests/unit/pglayout.mk).
# Peers for `make bench`, and GNU time to measure their peak RSS; optional for the build,
# installed alongside when root.
PEER_PKGS="bpftrace libbpf-tools time"
# The tools that consume diagnose's output formats, for the tests only (tests/e2e/t_outputs.sh):
# headless Chromium renders the --flamegraph SVG, `go tool pprof` reads the --pprof profile;
# ansible-playbook runs contrib/ansible/diagnose.yml in tests/e2e/t_fleet.sh; zsh runs the zsh
# completion in tests/e2e/t_completion_zsh.sh. libfuse3: tests/e2e/t_hostile.sh's file system
# that stops answering (tests/workloads/stallfs.c).
# python3.11 and python3.11-dev: Debian 12's own CPython, whose frames t_python.sh reads, and the
# headers tests/unit/test_python.c checks python.c's table of its layout against.
# fio: the real I/O load of tests/e2e/t_io_fio.sh (fsync=1 at full speed through triage).
# libcap2-bin: setcap, for tests/e2e/t_capabilities.sh (a binary given cap_bpf,cap_perfmon run by
# another user).
TEST_PKGS="chromium golang-go ansible zsh libfuse3-dev fuse3 python3.11 python3.11-dev fio libcap2-bin"
# `make check-kernel` (scripts/kernel-guest/run.sh) boots Debian's 6.1 kernels in QEMU: the
# emulator, busybox-static and cpio for the guest's initramfs, jq to read reports there, and
# e2fsprogs (mkfs.ext4) for the file system its io-saturation case writes through.
KERNEL_PKGS="qemu-system-x86 busybox-static cpio jq e2fsprogs"
# Real servers the e2e tests diagnose as a user would, each test starting its own instance from
# the package's binary (tests/e2e/t_postgres.sh: a temporary cluster; t_nginx.sh: a reverse proxy
# on a private config; t_redis.sh: redis-server on a private config, its clients driven with
# redis-tools' redis-cli). nginx: bookworm's full server (nginx-light and nginx-core only add
# modules to it), the proxy module built in. Each package starts its default instance on install
# where invoke-rc.d lets it: stopped below.
SERVER_PKGS="postgresql-15 postgresql-client-15 nginx redis-server"
# The load generators of `make bench-servers` (tests/bench/servers.py), which loads the servers
# above while each recipe runs: wrk (HTTP, for nginx and a Python service) and redis-tools'
# redis-benchmark (named though redis-server depends on it: the bench runs it itself); pgbench
# comes with postgresql-client-15.
BENCH_SERVER_PKGS="wrk redis-tools"
# What `diagnose watch`'s metrics are read by in tests/e2e/t_watch.sh: a real Prometheus scraping
# its endpoint, node_exporter's textfile collector reading its --textfile (each started by the
# test on a private port; the instances the packages start on install are stopped below).
MONITORING_PKGS="prometheus prometheus-node-exporter"
# JIT runtimes whose code high-cpu names from their perf maps (tests/e2e/t_jit.sh): Node.js
# (--perf-basic-prof) and Debian's OpenJDK 17 (javac compiles the test's hot class, jcmd writes
# the JVM's perf map: Compiler.perfmap).
RUNTIME_PKGS="nodejs openjdk-17-jdk-headless"

missing=""
for p in $PKGS $PEER_PKGS $TEST_PKGS $KERNEL_PKGS $SERVER_PKGS $BENCH_SERVER_PKGS $MONITORING_PKGS $RUNTIME_PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing Debian packages:$missing (run 'sudo apt-get install$missing', or make as root)" >&2
	exit 1
fi
echo "install-deps: installing:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >&2
# the tests start the servers they need, each its own instance: none is left running by the install
case " $missing " in *" postgresql-15 "*) service postgresql stop >/dev/null 2>&1 || true ;; esac
case " $missing " in *" nginx "*) service nginx stop >/dev/null 2>&1 || true ;; esac
case " $missing " in *" redis-server "*) service redis-server stop >/dev/null 2>&1 || true ;; esac
case " $missing " in *" prometheus "*) service prometheus stop >/dev/null 2>&1 || true ;; esac
case " $missing " in *" prometheus-node-exporter "*) service prometheus-node-exporter stop >/dev/null 2>&1 || true ;; esac
