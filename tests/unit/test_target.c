/* test_target.c — the pure parts of engine/target/target.c: process names as the kernel keeps them
 * (15 bytes), the cgroup directory names container runtimes give a container id, unit names, and
 * the search of a cgroup tree for a directory (on a tree made in a temporary directory: a match's
 * children are not searched, several matches are counted, symbolic links are not followed).
 * Resolving and scanning real processes and cgroups is tests/e2e/t_targets.sh.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "target/target.h"

#define ID64 "3f2a9c0b7d4e5f60718293a4b5c6d7e8f9a0b1c2d3e4f5061728394a5b6c7d8e"

static void test_comm_matches(void **state)
{
	(void)state;
	assert_true(target_comm_matches("nginx", "nginx"));
	assert_false(target_comm_matches("nginx", "nginx-worker"));
	assert_false(target_comm_matches("nginx-worker", "nginx"));
	assert_false(target_comm_matches("", ""));
	/* the kernel keeps 15 bytes of a name: a longer name matches on those */
	assert_true(target_comm_matches("payments-gateway", "payments-gatewa"));
	assert_true(target_comm_matches("payments-gatewa", "payments-gatewa"));
	assert_false(target_comm_matches("payments-gatewX", "payments-gatewa"));
}

static void test_container_dirs(void **state)
{
	(void)state;
	assert_true(target_container_dir_matches("docker-" ID64 ".scope", "3f2a9c0b7d4e"));
	assert_true(target_container_dir_matches("cri-containerd-" ID64 ".scope", "3f2a9c0b7d4e5f60"));
	assert_true(target_container_dir_matches("crio-" ID64 ".scope", "3F2A9C0B7D4E"));
	assert_true(target_container_dir_matches("libpod-" ID64 ".scope", ID64));
	assert_true(target_container_dir_matches(ID64, "3f2a9c0b7d4e")); /* cgroupfs: /docker/ID */
	assert_false(target_container_dir_matches("docker-" ID64 ".scope", "3f2a9c0b7d4")); /* 11: too short */
	assert_false(target_container_dir_matches("docker-" ID64 ".scope", "3f2a9c0b7d4f"));
	assert_false(target_container_dir_matches("libpod-conmon-" ID64 ".scope", "3f2a9c0b7d4e"));
	assert_false(target_container_dir_matches("docker-3f2a9c0b7d4e.scope", "3f2a9c0b7d4e")); /* not a full id */
	assert_false(target_container_dir_matches("docker-" ID64 ".scope", "3f2a9c0b7d4z"));
	assert_false(target_container_dir_matches("system.slice", "3f2a9c0b7d4e"));
}

static void test_unit_names(void **state)
{
	(void)state;
	char buf[64];
	assert_string_equal(target_unit_dir_name("nginx", buf, sizeof(buf)), "nginx.service");
	assert_string_equal(target_unit_dir_name("nginx.service", buf, sizeof(buf)), "nginx.service");
	assert_string_equal(target_unit_dir_name("session-3.scope", buf, sizeof(buf)), "session-3.scope");
	assert_string_equal(target_unit_dir_name("user.slice", buf, sizeof(buf)), "user.slice");
	assert_null(target_unit_dir_name("", buf, sizeof(buf)));
	assert_null(target_unit_dir_name("../etc", buf, sizeof(buf)));
	assert_null(target_unit_dir_name("a/b", buf, sizeof(buf)));
	assert_null(target_unit_dir_name(".hidden", buf, sizeof(buf)));
	assert_null(target_unit_dir_name("a-very-long-unit-name-indeed", buf, 16)); /* does not fit */
}

static bool is_name(const char *name, const void *arg)
{
	return strcmp(name, arg) == 0;
}

static void mk(const char *root, const char *rel)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	assert_int_equal(mkdir(path, 0755), 0);
}

static void test_find_dir(void **state)
{
	(void)state;
	char root[] = "/tmp/diag-target-XXXXXX";
	assert_non_null(mkdtemp(root));
	mk(root, "system.slice");
	mk(root, "system.slice/nginx.service");
	mk(root, "system.slice/nginx.service/nginx.service"); /* inside a match: not searched */
	mk(root, "user.slice");
	mk(root, "user.slice/user-1000.slice");
	mk(root, "user.slice/user-1000.slice/app.service");
	mk(root, "other");
	mk(root, "other/app.service");
	char link[600], found[512];
	snprintf(link, sizeof(link), "%s/system.slice/linked", root);
	assert_int_equal(symlink("/", link), 0); /* never followed */

	assert_int_equal(target_find_dir(root, is_name, "nginx.service", 8, found, sizeof(found)), 1);
	char want[600];
	snprintf(want, sizeof(want), "%s/system.slice/nginx.service", root);
	assert_string_equal(found, want);
	/* two units of one name: counted, so the caller can refuse the ambiguity */
	assert_int_equal(target_find_dir(root, is_name, "app.service", 8, found, sizeof(found)), 2);
	/* depth-limited */
	assert_int_equal(target_find_dir(root, is_name, "app.service", 2, found, sizeof(found)), 1);
	assert_int_equal(target_find_dir(root, is_name, "nope.service", 8, found, sizeof(found)), 0);
	assert_int_equal(target_find_dir(root, is_name, "etc", 8, found, sizeof(found)), 0);
	assert_int_equal(target_find_dir("/nonexistent-diag", is_name, "x", 8, found, sizeof(found)), 0);

	char cmd[700];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	assert_int_equal(system(cmd), 0);
}

static void test_kind_names(void **state)
{
	(void)state;
	assert_string_equal(target_kind_name(TARGET_COMM), "comm");
	assert_string_equal(target_kind_flag(TARGET_CONTAINER), "--container");
	assert_string_equal(target_kind_name((enum target_kind)99), "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_comm_matches),   cmocka_unit_test(test_container_dirs),
		cmocka_unit_test(test_unit_names),     cmocka_unit_test(test_find_dir),
		cmocka_unit_test(test_kind_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
