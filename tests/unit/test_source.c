/* test_source.c — files read once (engine/recipe/source.c): no symlink, no FIFO or device, a size cap,
 * the hash of the bytes returned; production's ownership checks on the file and the directories
 * above it; a recipe's bundle (snippet and libraries) named as the approvals lock names them.
 * The ownership cases need root (chown) and are skipped otherwise.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "recipe/load.h"
#include "recipe/recipe.h"
#include "recipe/source.h"

static char dir[] = "/tmp/test_source.XXXXXX";

static char *put(const char *name, const char *text)
{
	char *path = xasprintf("%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return path;
}

static int setup(void **state)
{
	(void)state;
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	char *cmd = xasprintf("rm -rf '%s'", dir);
	int rc = system(cmd);
	free(cmd);
	return rc;
}

static void test_read_hashes_the_bytes(void **state)
{
	(void)state;
	char *path = put("a.txt", "abc");
	struct source_file f;
	struct diag_err err = { 0 };
	assert_int_equal(source_read(path, false, 0, &f, &err), 0);
	assert_int_equal(f.len, 3);
	assert_string_equal(f.data, "abc");
	/* SHA-256("abc"), FIPS 180-4's first example */
	assert_string_equal(f.sha256, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	source_free(&f);
	free(path);
}

static void test_refuses_what_is_not_a_plain_file(void **state)
{
	(void)state;
	struct source_file f;
	struct diag_err err = { 0 };
	char *target = put("t.yaml", "name: x\n");
	char *link = xasprintf("%s/link.yaml", dir);
	assert_int_equal(symlink(target, link), 0);
	assert_int_equal(source_read(link, false, 0, &f, &err), -1);
	assert_non_null(strstr(err.msg, "a symbolic link (not followed)"));
	assert_int_equal(err.code, DIAG_EXIT_USAGE);
	assert_int_equal(source_read(link, true, 0, &f, &err), -1);
	assert_int_equal(err.code, DIAG_EXIT_REFUSED);

	/* A FIFO with no writer: refused at once, not waited on. */
	char *fifo = xasprintf("%s/fifo.yaml", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(source_read(fifo, false, 0, &f, &err), -1);
	assert_non_null(strstr(err.msg, "not a regular file"));
	assert_int_equal(source_read("/dev/zero", false, 0, &f, &err), -1);
	assert_non_null(strstr(err.msg, "/dev/zero: not a regular file"));
	assert_int_equal(source_read(dir, false, 0, &f, &err), -1);

	/* Over the cap. */
	char *big = put("big.yaml", "0123456789");
	assert_int_equal(source_read(big, false, 9, &f, &err), -1);
	assert_non_null(strstr(err.msg, "10 bytes, over the limit of 9"));
	assert_int_equal(source_read(big, false, 10, &f, &err), 0);
	source_free(&f);

	/* The recipe loader and `diagnose lint` take the same road for /dev/zero and FIFOs. */
	struct recipe *r;
	assert_int_equal(recipe_load("/dev/zero", &r, &err), -1);
	assert_int_equal(recipe_load(fifo, &r, &err), -1);
	free(target);
	free(link);
	free(fifo);
	free(big);
}

static void test_trusted_ownership(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	struct source_file f;
	struct diag_err err = { 0 };
	char *path = put("owned.yaml", "x: 1\n");
	/* mkdtemp made dir 0700 root; /tmp above is root's and sticky. */
	assert_int_equal(source_read(path, true, 0, &f, &err), 0);
	source_free(&f);

	assert_int_equal(chmod(path, 0664), 0);
	assert_int_equal(source_read(path, true, 0, &f, &err), -1);
	assert_non_null(strstr(err.msg, "file is group-writable"));
	assert_int_equal(err.code, DIAG_EXIT_REFUSED);
	assert_int_equal(chmod(path, 0646), 0);
	assert_int_equal(source_read(path, true, 0, &f, &err), -1);
	assert_non_null(strstr(err.msg, "file is world-writable"));
	assert_int_equal(chmod(path, 0644), 0);
	assert_int_equal(chown(path, 65534, 65534), 0);
	assert_int_equal(source_read(path, true, 0, &f, &err), -1);
	assert_non_null(strstr(err.msg, "file is not owned by root"));
	/* Untrusted reads do not care. */
	assert_int_equal(source_read(path, false, 0, &f, &err), 0);
	source_free(&f);
	assert_int_equal(chown(path, 0, 0), 0);

	/* A directory above that someone else can change. */
	assert_int_equal(chmod(dir, 0777), 0);
	assert_int_equal(source_read(path, true, 0, &f, &err), -1);
	assert_non_null(strstr(err.msg, "directory is world-writable"));
	assert_non_null(strstr(err.msg, dir));
	assert_int_equal(chmod(dir, 01777), 0); /* sticky and root's: allowed, as /tmp is */
	assert_int_equal(source_read(path, true, 0, &f, &err), 0);
	source_free(&f);
	assert_int_equal(chmod(dir, 0700), 0);
	assert_int_equal(chown(dir, 65534, 0), 0);
	assert_int_equal(source_check_trusted_dir(dir, &err), -1);
	assert_non_null(strstr(err.msg, "not owned by root"));
	assert_int_equal(chown(dir, 0, 0), 0);
	assert_int_equal(source_check_trusted_dir(dir, &err), 0);
	free(path);
}

static void test_bundle_names_and_libs(void **state)
{
	(void)state;
	char *sub = xasprintf("%s/tree", dir), *cmd = xasprintf("mkdir -p '%s/recipes' '%s/lua/lib'", sub, sub);
	assert_int_equal(system(cmd), 0);
	free(cmd);
	char *rp = put("tree/recipes/x.yaml", "name: x\n");
	free(put("tree/lua/x.lua", "return {}\n"));
	free(put("tree/lua/lib/b.lua", "return 2\n"));
	free(put("tree/lua/lib/a.lua", "return 1\n"));
	free(put("tree/lua/lib/.hidden.lua", "error()\n"));
	free(put("tree/lua/lib/notes.txt", "x\n"));
	struct recipe_sources s;
	struct diag_err err = { 0 };
	assert_int_equal(sources_read_recipe(&s, rp, false, &err), 0);
	assert_string_equal(s.recipe.name, "recipes/x.yaml");
	assert_int_equal(sources_read_lua(&s, "x.lua", false, &err), 0);
	assert_string_equal(s.lua.name, "lua/x.lua");
	assert_string_equal(s.lua.data, "return {}\n");
	assert_int_equal(s.n_libs, 2);
	assert_string_equal(s.libs[0].name, "lua/lib/a.lua");
	assert_string_equal(s.libs[1].name, "lua/lib/b.lua");
	assert_string_equal(s.libs[1].data, "return 2\n");
	sources_free(&s);
	/* A snippet name that climbs out of lua/ is refused. */
	assert_int_equal(sources_read_recipe(&s, rp, false, &err), 0);
	assert_int_equal(sources_read_lua(&s, "../recipes/x.yaml", false, &err), -1);
	assert_non_null(strstr(err.msg, "must be a file name below lua/"));
	sources_free(&s);
	free(rp);
	free(sub);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read_hashes_the_bytes),
		cmocka_unit_test(test_refuses_what_is_not_a_plain_file),
		cmocka_unit_test(test_trusted_ownership),
		cmocka_unit_test(test_bundle_names_and_libs),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
