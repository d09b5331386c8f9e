/* test_pkgdb.c — the owner of a stripped file from a dpkg database (engine/symbolize/pkgdb.c):
 * on a small database written here (never the machine's): list files with and without an
 * architecture, merged-/usr aliases both ways, the version and architecture from status, names
 * outside Debian's syntax refused, symlinked lists not followed; the -dbgsym name and the
 * build-id path. No root.
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

#include "symbolize/pkgdb.h"
#include "common/util.h"

static char dir[64];

static void put(const char *rel, const char *text)
{
	char *p = xasprintf("%s/%s", dir, rel);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	free(p);
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/test_pkgdb.XXXXXX");
	assert_non_null(mkdtemp(dir));
	char *info = xasprintf("%s/info", dir);
	assert_int_equal(mkdir(info, 0755), 0);
	free(info);
	put("info/liblzma5:amd64.list", "/.\n/lib\n/lib/x86_64-linux-gnu\n"
	    "/lib/x86_64-linux-gnu/liblzma.so.5\n/lib/x86_64-linux-gnu/liblzma.so.5.4.1\n"
	    "/usr/share/doc/liblzma5/copyright\n");
	put("info/liblzma5:amd64.md5sums", "/lib/x86_64-linux-gnu/not-this.so\n");
	put("info/xz-utils.list", "/.\n/usr/bin/xz\n/usr/bin/unxz\n");
	put("info/coreutils.list", "/bin/sha256sum\n/usr/bin/env\n");
	put("info/BAD;rm -rf.list", "/usr/bin/evil\n"); /* not a package name: never named */
	put("info/gzip.list", "/bin/gzip\n");
	char *target = xasprintf("%s/info/gzip.list", dir), *link = xasprintf("%s/info/zz.list", dir);
	assert_int_equal(symlink(target, link), 0); /* a symlinked list: not followed */
	free(target);
	free(link);
	put("status",
	    "Package: xz-utils\nStatus: install ok installed\nArchitecture: amd64\nVersion: 5.4.1-1\n\n"
	    "Package: liblzma5\nStatus: install ok installed\nArchitecture: i386\nVersion: 9.9-9\n\n"
	    "Package: liblzma5\nStatus: install ok installed\nMulti-Arch: same\n"
	    "Architecture: amd64\nVersion: 5.4.1-1\nDescription: XZ\n its library\n\n"
	    "Package: coreutils\nArchitecture: amd64\nVersion: 9.1-1; echo pwned\n");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	char *cmd = xasprintf("rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
	free(cmd);
	return 0;
}

static void test_owners(void **state)
{
	(void)state;
	const char *paths[] = {
		"/usr/lib/x86_64-linux-gnu/liblzma.so.5.4.1", /* merged /usr: listed as /lib/... */
		"/usr/bin/xz",
		"/bin/env",                                   /* listed as /usr/bin/env */
		"/usr/bin/sha256sum",
		"/usr/bin/evil",
		"/bin/gzip",
		"/usr/lib/x86_64-linux-gnu/libnothere.so.1",
		"/lib/x86_64-linux-gnu/not-this.so",           /* only in an .md5sums */
	};
	struct pkg_owner o[8];
	assert_int_equal(pkgdb_dpkg_owners(dir, paths, 8, o), 5);
	assert_string_equal(o[0].package, "liblzma5");
	assert_string_equal(o[0].arch, "amd64");
	assert_string_equal(o[0].version, "5.4.1-1"); /* the amd64 stanza, not i386's */
	assert_string_equal(o[1].package, "xz-utils");
	assert_string_equal(o[1].arch, "");
	assert_string_equal(o[1].version, "5.4.1-1");
	assert_string_equal(o[2].package, "coreutils");
	assert_string_equal(o[2].version, ""); /* "9.1-1; echo pwned" is no version */
	assert_string_equal(o[3].package, "coreutils");
	assert_string_equal(o[4].package, "");
	assert_string_equal(o[5].package, "gzip"); /* its own list, not the symlink */
	assert_string_equal(o[6].package, "");
	assert_string_equal(o[7].package, "");

	/* no database there */
	char *none = xasprintf("%s/nothing", dir);
	assert_int_equal(pkgdb_dpkg_owners(none, paths, 1, o), -1);
	free(none);
}

static void test_names(void **state)
{
	(void)state;
	char buf[256];
	assert_int_equal(pkgdb_dbgsym_name("liblzma5", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "liblzma5-dbgsym");
	assert_int_equal(pkgdb_dbgsym_name("xz-utils", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "xz-utils-dbgsym");
	assert_int_equal(pkgdb_dbgsym_name("", buf, sizeof(buf)), -1);
	assert_int_equal(pkgdb_dbgsym_name("liblzma5", buf, 10), -1);

	assert_int_equal(pkgdb_build_id_path("72a44fc3edc93188d045e65d92d28d50e373dbcb", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/usr/lib/debug/.build-id/72/a44fc3edc93188d045e65d92d28d50e373dbcb.debug");
	assert_int_equal(pkgdb_build_id_path("", buf, sizeof(buf)), -1);
	assert_int_equal(pkgdb_build_id_path("7", buf, sizeof(buf)), -1);
	assert_int_equal(pkgdb_build_id_path("72a44/../../etc", buf, sizeof(buf)), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_owners),
		cmocka_unit_test(test_names),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
