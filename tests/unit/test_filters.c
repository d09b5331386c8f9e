/* test_filters.c — the filter parsers and checks of engine/plan/filters.c: the cgroup v2 mount from
 * mountinfo (pure v2 and hybrid hosts), a process's v2 path from /proc/PID/cgroup (v1 lines
 * ignored), dev_t from a sysfs dev file, device names, ports, addresses, and filters_resolve's
 * refusals: a filter the kind does not honour, bad values, "target" without --pid. Resolving a
 * real cgroup and device is covered by tests/e2e/t_filters.sh.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <string.h>

#include "plan/filters.h"

static void test_cgroup2_mount(void **state)
{
	(void)state;
	char out[256];
	const char *hybrid =
		"24 30 0:22 / /sys rw,nosuid shared:7 - sysfs sysfs rw\n"
		"31 24 0:26 / /sys/fs/cgroup ro,nosuid shared:9 - tmpfs tmpfs ro,mode=755\n"
		"32 31 0:27 / /sys/fs/cgroup/unified rw,nosuid shared:10 - cgroup2 cgroup2 rw,nsdelegate\n"
		"33 31 0:28 / /sys/fs/cgroup/memory rw shared:11 - cgroup cgroup rw,memory\n";
	assert_int_equal(filters_cgroup2_mount(hybrid, out, sizeof(out)), 0);
	assert_string_equal(out, "/sys/fs/cgroup/unified");
	const char *pure = "30 24 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw";
	assert_int_equal(filters_cgroup2_mount(pure, out, sizeof(out)), 0);
	assert_string_equal(out, "/sys/fs/cgroup");
	const char *v1only = "33 31 0:28 / /sys/fs/cgroup/memory rw shared:11 - cgroup cgroup rw,memory\n";
	assert_int_equal(filters_cgroup2_mount(v1only, out, sizeof(out)), -1);
	assert_int_equal(filters_cgroup2_mount("", out, sizeof(out)), -1);
	assert_int_equal(filters_cgroup2_mount(pure, out, 5), -1); /* does not fit */
}

static void test_cgroup2_path(void **state)
{
	(void)state;
	char out[256];
	assert_int_equal(filters_cgroup2_path("12:memory:/a\n1:name=systemd:/b\n0::/test/x\n", out, sizeof(out)), 0);
	assert_string_equal(out, "/test/x");
	assert_int_equal(filters_cgroup2_path("0::/\n", out, sizeof(out)), 0);
	assert_string_equal(out, "/");
	assert_int_equal(filters_cgroup2_path("12:memory:/a\n", out, sizeof(out)), -1);
	assert_int_equal(filters_cgroup2_path("0::relative\n", out, sizeof(out)), -1);
}

static void test_dev(void **state)
{
	(void)state;
	uint32_t dev = 0;
	assert_int_equal(filters_parse_dev("253:0\n", &dev), 0);
	assert_int_equal(dev, 253u << 20);
	assert_int_equal(filters_parse_dev("259:3", &dev), 0);
	assert_int_equal(dev, (259u << 20) | 3);
	assert_int_equal(filters_parse_dev("8", &dev), -1);
	assert_int_equal(filters_parse_dev("8:1x", &dev), -1);
	assert_int_equal(filters_parse_dev("4096:0", &dev), -1); /* 12-bit major */
	assert_string_equal(filters_device_name("/dev/vda"), "vda");
	assert_string_equal(filters_device_name("nvme0n1p2"), "nvme0n1p2");
	assert_null(filters_device_name("/dev/mapper/x"));
	assert_null(filters_device_name(".."));
	assert_null(filters_device_name(""));
	assert_null(filters_device_name("/etc/passwd"));
}

static void test_ports_addrs(void **state)
{
	(void)state;
	uint16_t port;
	struct filter_addr a;
	assert_int_equal(filters_parse_port("5432", &port), 0);
	assert_int_equal(port, 5432);
	assert_int_equal(filters_parse_port("0", &port), -1);
	assert_int_equal(filters_parse_port("65536", &port), -1);
	assert_int_equal(filters_parse_port("80x", &port), -1);
	assert_int_equal(filters_parse_addr("10.1.2.3", &a), 0);
	assert_int_equal(a.family, AF_INET);
	assert_memory_equal(a.bytes, "\x0a\x01\x02\x03", 4);
	assert_int_equal(filters_parse_addr("2001:db8::1", &a), 0);
	assert_int_equal(a.family, AF_INET6);
	assert_int_equal(a.bytes[0], 0x20);
	assert_int_equal(a.bytes[15], 1);
	assert_int_equal(filters_parse_addr("10.0.0.0/8", &a), -1);
	assert_int_equal(filters_parse_addr("db.internal", &a), -1);
}

static void test_resolve(void **state)
{
	(void)state;
	struct probe_filters f;
	struct diag_err err = { 0 };
	struct filter_text t = { .pid = "target", .comm = "nginx", .remote_port = "443" };
	unsigned all = FILTER_ALL;
	assert_int_equal(filters_resolve(&t, all, 1234, true, &f, &err), 0);
	assert_int_equal(f.pid, 1234);
	assert_string_equal(f.comm, "nginx");
	assert_int_equal(f.remote_port, 443);

	/* a filter the kind does not honour */
	assert_int_equal(filters_resolve(&t, FILTER_PID | FILTER_COMM, 1234, true, &f, &err), -1);
	assert_int_equal(err.code, DIAG_EXIT_USAGE);
	assert_string_equal(err.msg, "filters.remote_port: this probe kind does not support this filter");

	/* "target" without --pid: an error when running, fine when linting */
	struct filter_text tp = { .pid = "target" };
	assert_int_equal(filters_resolve(&tp, all, 0, true, &f, &err), -1);
	assert_string_equal(err.msg, "filters.pid: \"target\" needs --pid");
	assert_int_equal(filters_resolve(&tp, all, 0, false, &f, &err), 0);

	struct filter_text bad[] = {
		{ .pid = "-3" }, { .tid = "abc" }, { .comm = "a-thread-name-too-long" },
		{ .cgroup = "relative/path" }, { .cgroup = "/a/../b" }, { .device = "/dev/mapper/x" },
		{ .local_port = "70000" }, { .remote_addr = "localhost" },
	};
	const char *want[] = { "filters.pid:", "filters.tid:", "filters.comm:", "filters.cgroup:",
			       "filters.cgroup:", "filters.device:", "filters.local_port:", "filters.remote_addr:" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(filters_resolve(&bad[i], all, 1, false, &f, &err), -1);
		assert_int_equal(strncmp(err.msg, want[i], strlen(want[i])), 0);
	}
	/* a device that does not exist on this machine: only when resolving */
	struct filter_text dev = { .device = "nosuchdisk9" };
	assert_int_equal(filters_resolve(&dev, all, 1, false, &f, &err), 0);
	assert_int_equal(filters_resolve(&dev, all, 1, true, &f, &err), -1);
	assert_string_equal(err.msg, "filters.device: no block device nosuchdisk9 (see lsblk)");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cgroup2_mount),
		cmocka_unit_test(test_cgroup2_path),
		cmocka_unit_test(test_dev),
		cmocka_unit_test(test_ports_addrs),
		cmocka_unit_test(test_resolve),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
