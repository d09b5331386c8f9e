/* test_proc_sampler.c — the /proc + cgroup sampler (probe kind proc_context): every parser of
 * engine/target/procfs.c on recorded kernel text (the fixtures are the C strings below), the iostat -x
 * arithmetic, pressure over a window, cgroup v1/v2/hybrid detection, the bounded series and its
 * slope, softnet_stat; then the probe itself on this very process (no root needed for one's own /proc): the
 * sections option, the default cpu result shape high-cpu.lua reads, and a run with every section
 * that grows RSS and writes a file.
 *
 * Why one file (~830 lines): the parsers and the probe that uses them are tested on the same
 * recorded kernel text.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "plan/catalog.h"
#include "target/procfs.h"
#include "plan/shape.h"
#include "target/tfile.h"
#include "common/util.h"

/* ---- recorded text ------------------------------------------------------------------------ */

static const char STAT[] =
	"1234 (my (odd) comm) S 1 1234 1234 0 -1 4194304 100 0 0 0 250 50 0 0 20 0 3 0 12345 "
	"1000000 250 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";

static const char STATUS[] =
	"Name:\tcat\n"
	"Umask:\t0022\n"
	"State:\tR (running)\n"
	"Tgid:\t1234\n"
	"VmPeak:\t    8000 kB\n"
	"VmSize:\t    7000 kB\n"
	"VmHWM:\t    1200 kB\n"
	"VmRSS:\t    1000 kB\n"
	"RssAnon:\t     100 kB\n"
	"RssFile:\t     880 kB\n"
	"RssShmem:\t      20 kB\n"
	"VmData:\t     360 kB\n"
	"VmSwap:\t       8 kB\n"
	"Threads:\t3\n"
	"Cpus_allowed_list:\t0-1\n"
	"voluntary_ctxt_switches:\t5\n"
	"nonvoluntary_ctxt_switches:\t7\n";

/* A kernel thread: no Vm* lines. */
static const char STATUS_KTHREAD[] =
	"Name:\tkworker/0:1\nState:\tI (idle)\nThreads:\t1\n"
	"voluntary_ctxt_switches:\t10\nnonvoluntary_ctxt_switches:\t0\n";

static const char SMAPS_ROLLUP[] =
	"55891d524000-7ffd353e4000 ---p 00000000 00:00 0                          [rollup]\n"
	"Rss:                1632 kB\n"
	"Pss:                 301 kB\n"
	"Pss_Dirty:           112 kB\n"
	"Pss_Anon:            112 kB\n"
	"Pss_File:            189 kB\n"
	"Pss_Shmem:             0 kB\n"
	"Shared_Clean:       1476 kB\n"
	"Shared_Dirty:          0 kB\n"
	"Private_Clean:        44 kB\n"
	"Private_Dirty:       112 kB\n"
	"Referenced:         1632 kB\n"
	"Anonymous:           112 kB\n"
	"LazyFree:              0 kB\n"
	"Swap:                  4 kB\n"
	"SwapPss:               2 kB\n"
	"Locked:                0 kB\n";

static const char PID_IO[] =
	"rchar: 100\nwchar: 200\nsyscr: 3\nsyscw: 4\nread_bytes: 4096\nwrite_bytes: 8192\n"
	"cancelled_write_bytes: 512\n";

static const char PSI_A[] = "some avg10=1.50 avg60=0.50 avg300=0.10 total=1000000\n"
			    "full avg10=0.25 avg60=0.00 avg300=0.00 total=250000\n";
static const char PSI_B[] = "some avg10=9.00 avg60=2.00 avg300=0.40 total=1500000\n"
			    "full avg10=0.50 avg60=0.10 avg300=0.00 total=350000\n";
static const char PSI_CPU_OLD[] = "some avg10=0.00 avg60=0.00 avg300=0.00 total=42\n";

static const char DISKSTATS_A[] =
	"   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
	"   8       0 sda 1000 10 80000 2000 500 50 40000 5000 0 3000 7000 0 0 0 0 0 0\n"
	"   8       1 sda1 900 10 70000 1800 400 50 30000 4000 0 2500 6000\n"
	"   8       2 sda2 1 2 3\n"; /* malformed: skipped */
static const char DISKSTATS_B[] =
	"   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
	"   8       0 sda 1100 20 88000 2400 700 70 56000 6000 2 3500 8000 0 0 0 0 0 0\n"
	"   8       1 sda1 900 10 70000 1800 400 50 30000 4000 0 2500 6000\n";

static const char SNMP[] =
	"Ip: Forwarding DefaultTTL InReceives InHdrErrors\n"
	"Ip: 1 64 1000 2\n"
	"Icmp: InMsgs InErrors\n"
	"Icmp: 5 0\n"
	"Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets "
	"CurrEstab InSegs OutSegs RetransSegs InErrs OutRsts InCsumErrors\n"
	"Tcp: 1 200 120000 -1 10 20 3 4 5 1000 2000 30 1 6 0\n"
	"Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors\n"
	"Udp: 100 1 0 90 0 0 0\n";
static const char NETSTAT[] =
	"TcpExt: SyncookiesSent SyncookiesRecv ListenOverflows ListenDrops TCPTimeouts\n"
	"TcpExt: 0 0 7 8 9\n"
	"IpExt: InNoRoutes InTruncatedPkts\n"
	"IpExt: 0 1\n";

static const char NETDEV[] =
	"Inter-|   Receive                                                |  Transmit\n"
	" face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs "
	"drop fifo colls carrier compressed\n"
	"    lo:    3267      29    0    0    0     0          0         0     3267      29    0    0"
	"    0     0       0          0\n"
	"  eth0:123456789  1000    2    3    4     5          0         6  987654     900    7    8"
	"    9    10      11          0\n";

/* This build machine: v1 controllers, an empty v2 hierarchy at /sys/fs/cgroup/unified. */
static const char CGROUP_HYBRID[] =
	"9:name=systemd:/\n"
	"8:pids:/\n"
	"7:blkio:/\n"
	"4:memory:/process_api/7478832c35d808be4db978ec6eb9a1e4\n"
	"2:cpuacct:/\n"
	"1:cpu:/\n"
	"0::/\n";
/* Debian 10 style: cpu and cpuacct share a hierarchy. */
static const char CGROUP_HYBRID_JOINED[] =
	"12:blkio:/system.slice/db.service\n"
	"5:cpu,cpuacct:/system.slice/db.service\n"
	"3:cpuacct_x:/nope\n"
	"1:name=systemd:/system.slice/db.service\n"
	"0::/system.slice/db.service\n";
static const char CGROUP_V2[] = "0::/system.slice/nginx.service\n";

static const char IO_STAT_V2[] =
	"8:0 rbytes=1024 wbytes=2048 rios=1 wios=2 dbytes=0 dios=0\n"
	"253:0 rbytes=5 wbytes=6 rios=7 wios=8 dbytes=0 dios=0\n";
static const char BLKIO_BYTES_V1[] =
	"8:0 Read 4096\n8:0 Write 8192\n8:0 Sync 0\n8:0 Async 12288\n8:0 Discard 0\n"
	"8:0 Total 12288\n8:16 Read 1\n8:16 Write 0\n8:16 Total 1\nTotal 12289\n";
static const char BLKIO_IOS_V1[] =
	"8:0 Read 1\n8:0 Write 2\n8:0 Sync 0\n8:0 Async 3\n8:0 Discard 0\n8:0 Total 3\n"
	"8:16 Read 1\n8:16 Write 0\nTotal 4\n";

/* ---- parsers ------------------------------------------------------------------------------ */

static void test_key_u64(void **state)
{
	(void)state;
	uint64_t v = 0;
	const char *stat = "rss 100\nrss_huge 7\ncache 5\ntotal_rss 300\n";
	assert_true(procfs_key_u64(stat, "rss", &v));
	assert_int_equal(v, 100);
	assert_true(procfs_key_u64(stat, "rss_huge", &v));
	assert_int_equal(v, 7);
	assert_false(procfs_key_u64(stat, "huge", &v));
	assert_false(procfs_key_u64(stat, "total", &v));
	assert_true(procfs_key_u64(STATUS, "VmSwap", &v));
	assert_int_equal(v, 8 * 1024);
	assert_false(procfs_key_u64(STATUS, "Name", &v)); /* not a number */
	assert_false(procfs_key_u64("", "rss", &v));
}

static void test_stat(void **state)
{
	(void)state;
	struct procfs_stat st;
	assert_int_equal(procfs_parse_stat(STAT, &st), 0);
	assert_string_equal(st.comm, "my (odd) comm");
	assert_int_equal(st.state, 'S');
	assert_int_equal(st.ppid, 1);
	assert_int_equal(st.utime_ticks, 250);
	assert_int_equal(st.stime_ticks, 50);
	assert_int_equal(st.threads, 3);
	assert_int_equal(st.start_ticks, 12345);
	assert_int_equal(procfs_parse_stat("1234 (x) S 1 2 3\n", &st), -1); /* truncated */
	assert_int_equal(procfs_parse_stat("garbage", &st), -1);
}

static void test_status(void **state)
{
	(void)state;
	struct procfs_status s;
	assert_int_equal(procfs_parse_status(STATUS, &s), 0);
	assert_true(s.has_rss && s.has_rss_split && s.has_swap);
	assert_int_equal(s.vm_rss, 1000 * 1024);
	assert_int_equal(s.rss_anon, 100 * 1024);
	assert_int_equal(s.rss_file, 880 * 1024);
	assert_int_equal(s.rss_shmem, 20 * 1024);
	assert_int_equal(s.vm_swap, 8 * 1024);
	assert_int_equal(s.vm_hwm, 1200 * 1024);
	assert_int_equal(s.threads, 3);
	assert_int_equal(s.vol_switches, 5);
	assert_int_equal(s.invol_switches, 7);
	assert_int_equal(procfs_parse_status(STATUS_KTHREAD, &s), 0);
	assert_false(s.has_rss);
	assert_int_equal(s.vol_switches, 10);
	assert_int_equal(procfs_parse_status("", &s), -1);
}

static void test_smaps_rollup(void **state)
{
	(void)state;
	struct procfs_smaps s;
	assert_int_equal(procfs_parse_smaps_rollup(SMAPS_ROLLUP, &s), 0);
	assert_int_equal(s.v[SMAPS_RSS], 1632 * 1024);
	assert_int_equal(s.v[SMAPS_PSS], 301 * 1024); /* not Pss_Dirty */
	assert_int_equal(s.v[SMAPS_PSS_ANON], 112 * 1024);
	assert_int_equal(s.v[SMAPS_PSS_FILE], 189 * 1024);
	assert_int_equal(s.v[SMAPS_SHARED_CLEAN], 1476 * 1024);
	assert_int_equal(s.v[SMAPS_PRIVATE_CLEAN], 44 * 1024);
	assert_int_equal(s.v[SMAPS_PRIVATE_DIRTY], 112 * 1024);
	assert_int_equal(s.v[SMAPS_ANONYMOUS], 112 * 1024);
	assert_int_equal(s.v[SMAPS_SWAP], 4 * 1024);
	assert_int_equal(s.v[SMAPS_SWAP_PSS], 2 * 1024);
	for (int i = 0; i < SMAPS_N; i++)
		assert_true(s.has[i]);
	assert_int_equal(procfs_parse_smaps_rollup("Pss: 1 kB\n", &s), -1); /* no Rss */
}

static void test_pid_io(void **state)
{
	(void)state;
	struct procfs_io io;
	assert_int_equal(procfs_parse_io(PID_IO, &io), 0);
	assert_int_equal(io.rchar, 100);
	assert_int_equal(io.wchar, 200);
	assert_int_equal(io.syscr, 3);
	assert_int_equal(io.syscw, 4);
	assert_int_equal(io.read_bytes, 4096);
	assert_int_equal(io.write_bytes, 8192);
	assert_int_equal(io.cancelled_write_bytes, 512);
	assert_int_equal(procfs_parse_io("", &io), -1);
}

static void test_psi(void **state)
{
	(void)state;
	struct procfs_psi a, b, old;
	assert_int_equal(procfs_parse_psi(PSI_A, &a), 0);
	assert_int_equal(procfs_parse_psi(PSI_B, &b), 0);
	assert_true(a.has_full && b.has_full);
	assert_int_equal(a.some_total_us, 1000000);
	assert_int_equal(b.full_total_us, 350000);
	assert_true(fabs(b.some_avg10 - 9.0) < 1e-9);
	double some, full;
	/* 0.5 s of "some" and 0.1 s of "full" stall in a 2 s window; avg10 (9 %) is ignored. */
	procfs_psi_window(&a, &b, 2.0, &some, &full);
	assert_true(fabs(some - 25.0) < 1e-9);
	assert_true(fabs(full - 5.0) < 1e-9);
	procfs_psi_window(&b, &a, 2.0, &some, &full); /* backwards: 0, not negative */
	assert_true(some == 0 && full == 0);
	assert_int_equal(procfs_parse_psi(PSI_CPU_OLD, &old), 0);
	assert_false(old.has_full);
	assert_int_equal(old.some_total_us, 42);
	procfs_psi_window(&old, &old, 1.0, &some, &full);
	assert_true(some == 0 && full == 0);
	assert_int_equal(procfs_parse_psi("full avg10=0 avg60=0 avg300=0 total=1\n", &old), -1);
}

/* /proc/stat's cpu line: two readings 1 s apart on a 2-CPU VM whose hypervisor took half of it. */
static void test_cpu_times_steal(void **state)
{
	(void)state;
	struct procfs_cpu_times a, b, old;
	assert_int_equal(procfs_parse_cpu_times("cpu  17086 0 5117 68352 600 0 1190 381 0 0\n"
						"cpu0 8000 0 2500 34000 300 0 600 190 0 0\n", &a), 0);
	assert_true(a.has_steal);
	assert_int_equal(a.steal_ticks, 381);
	assert_int_equal(a.total_ticks, 17086 + 5117 + 68352 + 600 + 1190 + 381); /* guest not again */
	assert_int_equal(a.idle_ticks, 68352 + 600);
	/* +200 ticks of two CPUs: 60 user, 40 idle, 100 stolen */
	assert_int_equal(procfs_parse_cpu_times("cpu  17146 0 5117 68392 600 0 1190 481 0 0", &b), 0);
	assert_true(fabs(procfs_steal_pct(&a, &b) - 50.0) < 1e-9);
	assert_true(procfs_steal_pct(&b, &a) < 0); /* backwards: cannot be told */
	assert_true(procfs_steal_pct(&a, &a) < 0); /* no time passed */
	/* a kernel older than the steal column: parsed, steal unknown */
	assert_int_equal(procfs_parse_cpu_times("cpu 10 0 5 100 2 0 1\n", &old), 0);
	assert_false(old.has_steal);
	assert_true(procfs_steal_pct(&old, &old) < 0);
	assert_int_equal(procfs_parse_cpu_times("cpu0 1 2 3 4 5 6 7 8\n", &old), -1);
	assert_int_equal(procfs_parse_cpu_times("cpu  1 2 3\n", &old), -1);
	assert_int_equal(procfs_parse_cpu_times("cpu  1 2 x 4 5\n", &old), -1);
	assert_int_equal(procfs_parse_cpu_times("", &old), -1);
}

static void test_diskstats_iostat(void **state)
{
	(void)state;
	struct procfs_disk a[8], b[8];
	size_t na = procfs_parse_diskstats(DISKSTATS_A, a, 8);
	size_t nb = procfs_parse_diskstats(DISKSTATS_B, b, 8);
	assert_int_equal(na, 3);
	assert_int_equal(nb, 3);
	assert_string_equal(a[1].name, "sda");
	assert_int_equal(a[1].major, 8);
	assert_int_equal(a[1].minor, 0);
	assert_int_equal(a[2].time_in_queue, 6000); /* a partition line without discard fields */
	assert_int_equal(procfs_parse_diskstats(DISKSTATS_A, a, 2), 2);

	/* 2 s apart: what iostat -x prints for sda over that interval. */
	struct procfs_iostat s;
	procfs_iostat(&a[1], &b[1], 2.0, &s);
	assert_true(fabs(s.r_s - 50) < 1e-9);      /* 100 reads */
	assert_true(fabs(s.w_s - 100) < 1e-9);     /* 200 writes */
	assert_true(fabs(s.rkb_s - 2000) < 1e-9);  /* 8000 sectors = 4000 kB */
	assert_true(fabs(s.wkb_s - 4000) < 1e-9);  /* 16000 sectors */
	assert_true(fabs(s.rrqm_s - 5) < 1e-9);
	assert_true(fabs(s.wrqm_s - 10) < 1e-9);
	assert_true(fabs(s.r_await_ms - 4) < 1e-9); /* 400 ms over 100 reads */
	assert_true(fabs(s.w_await_ms - 5) < 1e-9); /* 1000 ms over 200 writes */
	assert_true(fabs(s.rareq_kb - 40) < 1e-9);
	assert_true(fabs(s.wareq_kb - 40) < 1e-9);
	assert_true(fabs(s.aqu_sz - 0.5) < 1e-9);   /* 1000 weighted ms in 2000 ms */
	assert_true(fabs(s.util_pct - 25) < 1e-9);  /* 500 ms busy in 2000 ms */
	assert_int_equal(s.reads, 100);
	assert_int_equal(s.write_bytes, 16000 * 512);
	/* An idle device: zeros, no division by zero. */
	procfs_iostat(&a[0], &b[0], 2.0, &s);
	assert_true(s.r_s == 0 && s.r_await_ms == 0 && s.util_pct == 0 && s.aqu_sz == 0);
	procfs_iostat(&a[1], &b[1], 0, &s); /* no interval: per-request figures only */
	assert_true(s.r_s == 0 && fabs(s.r_await_ms - 4) < 1e-9);
}

static void test_snmp_netstat(void **state)
{
	(void)state;
	struct procfs_counter c[64];
	size_t n = procfs_parse_snmp(SNMP, c, 64);
	assert_int_equal(n, 4 + 2 + 15 + 7);
	const struct procfs_counter *x = procfs_counter_find(c, n, "Tcp", "RetransSegs");
	assert_non_null(x);
	assert_int_equal(x->value, 30);
	assert_int_equal(procfs_counter_find(c, n, "Tcp", "MaxConn")->value, 0); /* -1 */
	assert_int_equal(procfs_counter_find(c, n, "Tcp", "OutRsts")->value, 6);
	assert_int_equal(procfs_counter_find(c, n, "Tcp", "AttemptFails")->value, 3);
	assert_int_equal(procfs_counter_find(c, n, "Ip", "InHdrErrors")->value, 2);
	assert_int_equal(procfs_counter_find(c, n, "Udp", "NoPorts")->value, 1);
	assert_null(procfs_counter_find(c, n, "Udp", "RetransSegs"));
	size_t m = procfs_parse_snmp(NETSTAT, c + n, 64 - n);
	assert_int_equal(m, 7);
	assert_int_equal(procfs_counter_find(c, n + m, "TcpExt", "ListenOverflows")->value, 7);
	assert_int_equal(procfs_counter_find(c, n + m, "TcpExt", "ListenDrops")->value, 8);
	assert_int_equal(procfs_counter_find(c, n + m, "TcpExt", "TCPTimeouts")->value, 9);
	assert_int_equal(procfs_counter_find(c, n + m, "IpExt", "InTruncatedPkts")->value, 1);
	assert_int_equal(procfs_parse_snmp(SNMP, c, 5), 5); /* bounded */
	/* A names line without its values line is ignored. */
	assert_int_equal(procfs_parse_snmp("Tcp: A B\nUdp: 1 2\n", c, 64), 0);
}

static void test_netdev(void **state)
{
	(void)state;
	struct procfs_netdev d[4];
	assert_int_equal(procfs_parse_netdev(NETDEV, d, 4), 2);
	assert_string_equal(d[0].name, "lo");
	assert_int_equal(d[0].rx_bytes, 3267);
	assert_string_equal(d[1].name, "eth0");
	assert_int_equal(d[1].rx_bytes, 123456789);
	assert_int_equal(d[1].rx_packets, 1000);
	assert_int_equal(d[1].rx_errs, 2);
	assert_int_equal(d[1].rx_drop, 3);
	assert_int_equal(d[1].rx_fifo, 4);
	assert_int_equal(d[1].rx_frame, 5);
	assert_int_equal(d[1].tx_bytes, 987654);
	assert_int_equal(d[1].tx_packets, 900);
	assert_int_equal(d[1].tx_errs, 7);
	assert_int_equal(d[1].tx_drop, 8);
	assert_int_equal(d[1].tx_fifo, 9);
	assert_int_equal(d[1].tx_colls, 10);
	assert_int_equal(d[1].tx_carrier, 11);
}

/* /proc/net/softnet_stat of a 2-CPU machine (columns in hexadecimal: processed, dropped,
 * time_squeeze, then more), summed over CPUs. */
static void test_softnet(void **state)
{
	(void)state;
	struct procfs_softnet sn;
	const char *text =
		"0000043a 00000002 00000010 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000\n"
		"00000100 00000001 00000001 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000001 00000000 00000000\n";
	assert_int_equal(procfs_parse_softnet(text, &sn), 2);
	assert_int_equal(sn.processed, 0x43a + 0x100);
	assert_int_equal(sn.dropped, 3);
	assert_int_equal(sn.time_squeeze, 0x11);
	assert_int_equal(procfs_parse_softnet("", &sn), 0);
	assert_int_equal(sn.dropped, 0);
}

/* mountinfo of a hybrid host (cgroup v1 hierarchies, an empty v2 at unified) and of a pure v2 one,
 * with a bind mount of a subtree (root not "/") that must not be taken for the hierarchy. */
static const char MOUNTINFO_HYBRID[] =
	"31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
	"32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
	"33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
	"35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
	"38 31 0:35 / /sys/fs/cgroup/blkio rw,relatime - cgroup cgroup rw,blkio\n"
	"90 31 0:32 /process_api /mnt/mem rw,relatime - cgroup cgroup rw,memory\n"
	"40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
	"41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
static const char MOUNTINFO_JOINED[] =
	"32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:9 - cgroup cgroup rw,cpu,cpuacct\n"
	"40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,xattr,name=systemd\n"
	"41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw,nsdelegate\n";
static const char MOUNTINFO_V2[] = "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n";

static void test_cgroup_dirs(void **state)
{
	(void)state;
	struct procfs_cgroup_dir d[8];
	/* every hierarchy mounted here, in the order of /proc/PID/cgroup; pids is not mounted */
	assert_int_equal(procfs_cgroup_dirs(MOUNTINFO_HYBRID, CGROUP_HYBRID, d, 8), 6);
	assert_string_equal(d[0].mount, "/sys/fs/cgroup/systemd");
	assert_string_equal(d[0].path, "/");
	assert_string_equal(d[1].mount, "/sys/fs/cgroup/blkio");
	assert_string_equal(d[2].mount, "/sys/fs/cgroup/memory"); /* not the subtree at /mnt/mem */
	assert_string_equal(d[2].path, "/process_api/7478832c35d808be4db978ec6eb9a1e4");
	assert_string_equal(d[3].mount, "/sys/fs/cgroup/cpuacct");
	assert_string_equal(d[4].mount, "/sys/fs/cgroup/cpu");
	assert_string_equal(d[5].mount, "/sys/fs/cgroup/unified");
	/* a hierarchy of two controllers is the mount naming both; cpuacct_x is no such mount */
	assert_int_equal(procfs_cgroup_dirs(MOUNTINFO_JOINED, CGROUP_HYBRID_JOINED, d, 8), 3);
	assert_string_equal(d[0].mount, "/sys/fs/cgroup/cpu,cpuacct");
	assert_string_equal(d[0].path, "/system.slice/db.service");
	assert_string_equal(d[1].mount, "/sys/fs/cgroup/systemd");
	assert_string_equal(d[2].mount, "/sys/fs/cgroup/unified");
	assert_string_equal(d[2].path, "/system.slice/db.service");
	/* pure v2; at most max; a malformed line */
	assert_int_equal(procfs_cgroup_dirs(MOUNTINFO_V2, CGROUP_V2, d, 8), 1);
	assert_string_equal(d[0].mount, "/sys/fs/cgroup");
	assert_string_equal(d[0].path, "/system.slice/nginx.service");
	assert_int_equal(procfs_cgroup_dirs(MOUNTINFO_HYBRID, CGROUP_HYBRID, d, 2), 2);
	assert_int_equal(procfs_cgroup_dirs(MOUNTINFO_V2, "0:/x\n", d, 8), -1);
	assert_int_equal(procfs_cgroup_dirs(MOUNTINFO_V2, "", d, 8), 0);
}

static void test_cgroup_locate(void **state)
{
	(void)state;
	struct procfs_cgroup cg;
	const char *u = "/sys/fs/cgroup/unified";
	/* hybrid: memory is a v1 controller, io is nowhere in v1: the (empty) v2 hierarchy. */
	assert_int_equal(procfs_cgroup_locate(CGROUP_HYBRID, "memory", "/sys/fs/cgroup/memory", u, &cg), 0);
	assert_int_equal(cg.version, 1);
	assert_string_equal(cg.path, "/process_api/7478832c35d808be4db978ec6eb9a1e4");
	assert_string_equal(cg.dir, "/sys/fs/cgroup/memory/process_api/7478832c35d808be4db978ec6eb9a1e4");
	assert_int_equal(procfs_cgroup_locate(CGROUP_HYBRID, "blkio", "/sys/fs/cgroup/blkio", u, &cg), 0);
	assert_int_equal(cg.version, 1);
	assert_string_equal(cg.path, "/");
	assert_string_equal(cg.dir, "/sys/fs/cgroup/blkio");
	assert_int_equal(procfs_cgroup_locate(CGROUP_HYBRID, "cpu", "/sys/fs/cgroup/cpu", u, &cg), 0);
	assert_int_equal(cg.version, 1);
	assert_int_equal(procfs_cgroup_locate(CGROUP_HYBRID, "io", "/sys/fs/cgroup/io", u, &cg), 0);
	assert_int_equal(cg.version, 2);
	assert_string_equal(cg.dir, "/sys/fs/cgroup/unified");
	/* "cpu,cpuacct" lists cpu; "cpuacct_x" does not. */
	assert_int_equal(procfs_cgroup_locate(CGROUP_HYBRID_JOINED, "cpu", "/sys/fs/cgroup/cpu", u, &cg), 0);
	assert_int_equal(cg.version, 1);
	assert_string_equal(cg.dir, "/sys/fs/cgroup/cpu/system.slice/db.service");
	assert_int_equal(procfs_cgroup_locate(CGROUP_HYBRID_JOINED, "cpuacct_", "/x", u, &cg), 0);
	assert_int_equal(cg.version, 2);
	assert_int_equal(procfs_cgroup_locate(CGROUP_HYBRID_JOINED, "systemd", "/x", u, &cg), 0);
	assert_int_equal(cg.version, 2); /* name=systemd is not a controller called systemd */
	/* pure v2 */
	assert_int_equal(procfs_cgroup_locate(CGROUP_V2, "memory", "/sys/fs/cgroup/memory", "/sys/fs/cgroup", &cg), 0);
	assert_int_equal(cg.version, 2);
	assert_string_equal(cg.path, "/system.slice/nginx.service");
	assert_string_equal(cg.dir, "/sys/fs/cgroup/system.slice/nginx.service");
	assert_int_equal(procfs_cgroup_locate("", "memory", "/m", "/v2", &cg), -1);
	assert_int_equal(procfs_cgroup_locate("3:memory\n", "memory", "/m", "/v2", &cg), -1);
}

static void test_limits_and_cgroup_io(void **state)
{
	(void)state;
	uint64_t b;
	bool unl;
	assert_int_equal(procfs_parse_limit("max\n", &b, &unl), 0);
	assert_true(unl);
	assert_int_equal(procfs_parse_limit("9223372036854771712\n", &b, &unl), 0);
	assert_true(unl); /* v1 "no limit" */
	assert_int_equal(procfs_parse_limit("536870912\n", &b, &unl), 0);
	assert_false(unl);
	assert_int_equal(b, 536870912);
	assert_int_equal(procfs_parse_limit("maximum\n", &b, &unl), -1);

	struct procfs_cgio io[4];
	assert_int_equal(procfs_parse_io_stat(IO_STAT_V2, io, 4), 2);
	assert_int_equal(io[0].major, 8);
	assert_int_equal(io[0].rbytes, 1024);
	assert_int_equal(io[0].wbytes, 2048);
	assert_int_equal(io[0].rios, 1);
	assert_int_equal(io[0].wios, 2);
	assert_int_equal(io[1].major, 253);
	assert_int_equal(io[1].wios, 8);
	assert_int_equal(procfs_parse_blkio_v1(BLKIO_BYTES_V1, BLKIO_IOS_V1, io, 4), 2);
	assert_int_equal(io[0].rbytes, 4096);
	assert_int_equal(io[0].wbytes, 8192);
	assert_int_equal(io[0].rios, 1);
	assert_int_equal(io[0].wios, 2);
	assert_int_equal(io[1].minor, 16);
	assert_int_equal(io[1].rbytes, 1);
	assert_int_equal(io[1].rios, 1);
	assert_int_equal(procfs_parse_blkio_v1(NULL, NULL, io, 4), 0);

	/* limits: v2 io.max merges into the io.stat slots and adds a device of its own */
	size_t n = procfs_parse_io_stat(IO_STAT_V2, io, 4);
	n = procfs_parse_io_limits("8:0 rbps=1048576 wbps=max riops=max wiops=200\n"
				   "7:3 rbps=max wbps=4096 riops=max wiops=max\n",
				   NULL, NULL, NULL, NULL, io, n, 4);
	assert_int_equal(n, 3);
	assert_int_equal(io[0].rbps_max, 1048576);
	assert_int_equal(io[0].wbps_max, 0);
	assert_int_equal(io[0].wiops_max, 200);
	assert_int_equal(io[0].rbytes, 1024); /* the counters are kept */
	assert_int_equal(io[1].rbps_max, 0);
	assert_int_equal(io[2].major, 7);
	assert_int_equal(io[2].wbps_max, 4096);
	/* v1: one file per limit, "MAJ:MIN VALUE" */
	n = procfs_parse_blkio_v1(BLKIO_BYTES_V1, BLKIO_IOS_V1, io, 4);
	n = procfs_parse_io_limits(NULL, "8:0 2097152\n", NULL, "8:16 50\n", "garbage\n", io, n, 4);
	assert_int_equal(n, 2);
	assert_int_equal(io[0].rbps_max, 2097152);
	assert_int_equal(io[1].riops_max, 50);
	assert_int_equal(io[1].wiops_max, 0);
	assert_int_equal(procfs_parse_io_limits(NULL, NULL, NULL, NULL, NULL, io, 0, 4), 0);
}

static void test_slope_and_series(void **state)
{
	(void)state;
	double t[] = { 0, 1, 2, 3, 4 }, v[] = { 7, 10, 13, 16, 19 }, s;
	assert_true(procfs_slope(t, v, 5, &s));
	assert_true(fabs(s - 3) < 1e-9);
	double noisy[] = { 101, 149, 201, 249, 301 }; /* 100 + 50 t, +-1 */
	assert_true(procfs_slope(t, noisy, 5, &s));
	assert_true(fabs(s - 50) < 0.5);
	assert_false(procfs_slope(t, v, 1, &s));
	double same[] = { 2, 2, 2 };
	assert_false(procfs_slope(same, v, 3, &s));

	struct procfs_series *ser = xcalloc(1, sizeof(*ser));
	for (int i = 0; i < 3; i++)
		procfs_series_push(ser, i, 2.0 * i);
	assert_int_equal(ser->n, 3);
	for (int i = 3; i < 2000; i++) {
		procfs_series_push(ser, i, 2.0 * i);
		assert_true(ser->n >= 1 && ser->n <= PROCFS_SERIES_MAX);
		assert_true(ser->t[ser->n - 1] == i); /* always ends at the latest push */
	}
	assert_true(ser->n >= PROCFS_SERIES_MAX / 2);
	assert_true(ser->stride >= 2);
	assert_true(ser->t[0] == 0);
	double gap_max = 0;
	for (size_t i = 1; i < ser->n; i++) {
		assert_true(ser->t[i] > ser->t[i - 1]);
		if (ser->t[i] - ser->t[i - 1] > gap_max)
			gap_max = ser->t[i] - ser->t[i - 1];
	}
	assert_true(gap_max <= ser->stride); /* evenly spread */
	assert_true(procfs_slope(ser->t, ser->v, ser->n, &s));
	assert_true(fabs(s - 2) < 1e-9);
	free(ser);
}

/* ---- the probe kind on this process ------------------------------------------------------- */

static const struct probe_kind *kind(void)
{
	const struct probe_kind *k = catalog_find("proc_context");
	assert_non_null(k);
	return k;
}

static void test_sections_option(void **state)
{
	(void)state;
	const struct probe_kind *k = kind();
	int i = catalog_option_index(k, "sections");
	assert_true(i >= 0);
	const struct option_spec *o = &k->options[i];
	assert_int_equal(o->type, OPT_STRING);
	assert_string_equal(o->dflt_str, "cpu");
	assert_null(o->check("cpu"));
	assert_null(o->check("cpu,memory,io,net"));
	assert_null(o->check("net, io"));
	assert_non_null(o->check(""));
	assert_non_null(o->check("cpu,disk"));
	assert_non_null(o->check("cpu,,io"));
}

struct live {
	struct probe p;
	struct value *res;
};

static void live_start(struct live *l, const char *sections)
{
	memset(l, 0, sizeof(*l));
	l->p.kind = kind();
	l->p.cfg.id = "context";
	l->p.cfg.filter.pid = getpid();
	if (sections)
		l->p.cfg.str[catalog_option_index(l->p.kind, "sections")] = sections;
	l->p.priv = xcalloc(1, l->p.kind->private_size);
	l->p.files = tfile_reader_new(); /* as the session gives every probe */
	struct diag_err err = { 0 };
	assert_int_equal(l->p.kind->load(&l->p, &err), 0);
	assert_int_equal(l->p.kind->attach(&l->p, &err), 0);
}

static void live_collect(struct live *l)
{
	struct diag_err err = { 0 };
	struct collect_ctx ctx = { .ncpus = 2 };
	assert_int_equal(l->p.kind->collect(&l->p, &ctx, &l->res, &err), 0);
	l->p.kind->destroy(&l->p);
	free(l->p.priv);
	tfile_reader_free(l->p.files);
}

static const struct value *path(const struct value *v, const char *a, const char *b)
{
	v = value_get(v, a);
	return b ? value_get(v, b) : v;
}

static void test_live_cpu_default(void **state)
{
	(void)state;
	struct live l;
	live_start(&l, NULL); /* the default: cpu, as high-cpu uses it */
	volatile uint64_t x = 0;
	for (uint64_t i = 0; i < 50000000; i++)
		x += i;
	(void)x;
	live_collect(&l);
	const struct value *r = l.res;
	/* What lua/high-cpu.lua reads. */
	const char *fields[] = { "pid", "comm", "threads", "wall_s", "utime_s", "stime_s", "cpu_pct",
				 "ncpus", "voluntary_ctxt_switches", "nonvoluntary_ctxt_switches",
				 "exited" };
	for (size_t i = 0; i < ARRAY_LEN(fields); i++)
		assert_non_null(value_get(r, fields[i]));
	assert_int_equal(value_get_num(r, "pid", 0), getpid());
	assert_string_equal(value_get_str(r, "sections"), "cpu");
	assert_true(value_get_num(r, "cpu_pct", 0) > 0);
	if (access("/proc/pressure/cpu", R_OK) == 0) {
		assert_non_null(path(r, "psi", "some_total_us"));
		assert_non_null(path(r, "psi", "some_pct"));
		assert_non_null(path(r, "psi", "some_avg10"));
	}
	const struct value *cg = value_get(r, "cgroup");
	if (cg) {
		int v = (int)value_get_num(cg, "version", 0);
		assert_true(v == 1 || v == 2);
		assert_non_null(value_get(cg, "nr_periods"));
		assert_non_null(value_get_str(cg, "cpu_max"));
	}
	assert_null(value_get(r, "memory"));
	assert_null(value_get(r, "io"));
	assert_null(value_get(r, "net"));
	value_free(l.res);
}

static void test_live_all_sections(void **state)
{
	(void)state;
	struct live l;
	live_start(&l, "net,io,memory,cpu");
	const size_t grow = 48u << 20;
	/* mmap, not malloc: the compiler may drop a malloc'ed buffer nobody reads. */
	char *mem = mmap(NULL, grow, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(mem != MAP_FAILED);
	memset(mem, 1, grow / 2);
	l.p.kind->tick(&l.p);
	memset(mem + grow / 2, 1, grow - grow / 2);
	char tmpl[] = "/tmp/test_proc_sampler.XXXXXX";
	int fd = mkstemp(tmpl);
	assert_true(fd >= 0);
	unlink(tmpl);
	static char buf[1 << 16];
	for (int i = 0; i < 16; i++)
		assert_int_equal(write(fd, buf, sizeof(buf)), sizeof(buf));
	close(fd);
	l.p.kind->tick(&l.p);
	live_collect(&l);
	const struct value *r = l.res;
	assert_string_equal(value_get_str(r, "sections"), "cpu,memory,io,net");
	assert_int_equal(value_get_num(r, "readings", 0), 4); /* attach, 2 ticks, end */
	assert_true(value_get_num(path(r, "memory", NULL), "rss_delta_bytes", 0) >= (double)grow * 0.9);
	assert_true(value_get_num(path(r, "memory", NULL), "rss_anon_delta_bytes", 0) >= (double)grow * 0.9);
	assert_non_null(path(r, "memory", "rss_slope_bytes_per_s"));
	const struct value *series = path(r, "memory", "rss_series");
	assert_non_null(series);
	assert_int_equal(series->type, V_ARR);
	assert_int_equal(series->arr.len, 4);
	assert_true(value_get_num(series->arr.items[0], "t_s", -1) == 0);
	assert_non_null(path(r, "memory", "smaps_rollup"));
	assert_non_null(value_get(path(r, "memory", "smaps_rollup"), "pss_delta_bytes"));
	assert_true(value_get_num(path(r, "io", NULL), "wchar", 0) >= 16 * 65536);
	assert_true(value_get_num(path(r, "io", NULL), "syscw", 0) >= 16);
	assert_non_null(path(r, "io", "disks"));
	assert_non_null(path(r, "net", "counters"));
	assert_non_null(path(r, "net", "interfaces"));
	const struct value *mcg = path(r, "memory", "cgroup");
	if (mcg) {
		int v = (int)value_get_num(mcg, "version", 0);
		assert_true(v == 1 || v == 2);
		assert_non_null(value_get(mcg, "current_bytes"));
		assert_non_null(value_get(mcg, "events"));
	}
	munmap(mem, grow);
	value_free(l.res);
}

/* Without a pid (a target: optional-pid recipe run without --pid): host-wide files only, no
 * process fields, and the results still match the declaration. */
static void test_live_host_wide(void **state)
{
	(void)state;
	struct live l;
	memset(&l, 0, sizeof(l));
	l.p.kind = kind(); /* no pid filter */
	l.p.cfg.id = "context";
	l.p.cfg.str[catalog_option_index(l.p.kind, "sections")] = "cpu,memory,io,net";
	l.p.priv = xcalloc(1, l.p.kind->private_size);
	l.p.files = tfile_reader_new();
	struct diag_err err = { 0 };
	assert_int_equal(l.p.kind->load(&l.p, &err), 0);
	assert_int_equal(l.p.kind->attach(&l.p, &err), 0);
	l.p.kind->tick(&l.p);
	live_collect(&l);
	const struct value *r = l.res;
	assert_true(value_get(r, "host") && value_get(r, "host")->type == V_BOOL && value_get(r, "host")->b);
	assert_null(value_get(r, "pid"));
	assert_null(value_get(r, "comm"));
	assert_null(value_get(r, "threads"));
	assert_null(value_get(r, "utime_s"));
	assert_null(path(r, "io", "rchar"));
	assert_null(path(r, "io", "cgroup"));
	assert_non_null(path(r, "io", "disks"));
	assert_non_null(path(r, "net", "interfaces"));
	assert_int_equal(value_get_num(r, "readings", 0), 3);
	char msg[256];
	assert_int_equal(shape_check(l.p.kind, "context", r, msg, sizeof(msg)), 0);
	value_free(l.res);
}

/* /proc/PID/maps lines, read in place: the permissions (x, r, w, shared), anonymous, a path with
 * spaces and a " (deleted)" suffix kept for the caller, malformed lines refused. */
static void test_maps_lines(void **state)
{
	(void)state;
	char text[] = "55d0c0a00000-55d0c0a21000 r-xp 00002000 fd:01 1318 /usr/bin/my app (deleted)\n"
		      "7f0000000000-7f0000021000 rw-p 00000000 00:00 0 \n"
		      "7f0000021000-7f0000022000 -w-s 00000000 00:01 7 /dev/zero (deleted)\n"
		      "garbage\n"
		      "7fff00000000-7ffe00000000 r-xp 00000000 00:00 0 [vdso]\n"
		      "7ffd0000000-7ffd0001000 r-xp 00000000 00:00 0 [vdso]";
	char *cursor = text, *line;
	struct procfs_maps_line m;
	assert_non_null(line = procfs_next_line(&cursor));
	assert_int_equal(procfs_parse_maps_line(line, &m), 0);
	assert_true(m.exec);
	assert_true(m.read);
	assert_false(m.write);
	assert_false(m.shared);
	assert_int_equal(m.start, 0x55d0c0a00000ull);
	assert_int_equal(m.end, 0x55d0c0a21000ull);
	assert_int_equal(m.offset, 0x2000);
	assert_int_equal(m.major, 0xfd);
	assert_int_equal(m.minor, 1);
	assert_int_equal(m.inode, 1318);
	assert_string_equal(m.path, "/usr/bin/my app (deleted)");
	assert_non_null(line = procfs_next_line(&cursor));
	assert_int_equal(procfs_parse_maps_line(line, &m), 0);
	assert_false(m.exec);
	assert_true(m.read && m.write && !m.shared);
	assert_string_equal(m.path, "");
	assert_non_null(line = procfs_next_line(&cursor));
	assert_int_equal(procfs_parse_maps_line(line, &m), 0);
	assert_true(!m.read && m.write && m.shared && !m.exec);
	assert_non_null(line = procfs_next_line(&cursor));
	assert_int_equal(procfs_parse_maps_line(line, &m), -1);
	assert_non_null(line = procfs_next_line(&cursor));
	assert_int_equal(procfs_parse_maps_line(line, &m), -1); /* end before start */
	assert_non_null(line = procfs_next_line(&cursor));       /* the last line has no newline */
	assert_int_equal(procfs_parse_maps_line(line, &m), 0);
	assert_string_equal(m.path, "[vdso]");
	assert_null(procfs_next_line(&cursor));
	assert_null(procfs_next_line(&cursor));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_key_u64),
		cmocka_unit_test(test_stat),
		cmocka_unit_test(test_maps_lines),
		cmocka_unit_test(test_status),
		cmocka_unit_test(test_smaps_rollup),
		cmocka_unit_test(test_pid_io),
		cmocka_unit_test(test_psi),
		cmocka_unit_test(test_cpu_times_steal),
		cmocka_unit_test(test_diskstats_iostat),
		cmocka_unit_test(test_snmp_netstat),
		cmocka_unit_test(test_netdev),
		cmocka_unit_test(test_softnet),
		cmocka_unit_test(test_cgroup_locate),
		cmocka_unit_test(test_cgroup_dirs),
		cmocka_unit_test(test_limits_and_cgroup_io),
		cmocka_unit_test(test_slope_and_series),
		cmocka_unit_test(test_sections_option),
		cmocka_unit_test(test_live_cpu_default),
		cmocka_unit_test(test_live_all_sections),
		cmocka_unit_test(test_live_host_wide),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
