/* test_outfile.c — output files written on the user's behalf (engine/report/outfile.c): no overwrite
 * without --force, a symlink at the path is never followed (its target keeps its content, in both
 * modes), --force replaces by rename (a hard link elsewhere keeps the old content), mode 0644
 * whatever the umask, directories and FIFOs refused, nothing left behind on discard, the path
 * empty until the file is complete (a SIGKILL'ed writer leaves nothing in the next run's way;
 * what appears there meanwhile is not replaced without --force), and under
 * sudo (root with SUDO_UID / SUDO_GID) the path is handled with the invoking user's rights and
 * the file belongs to them. No root needed; the sudo test runs fully only as root.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "report/outfile.h"

static char tmpdir[64];

static char *in_tmp(const char *name)
{
	return xasprintf("%s/%s", tmpdir, name);
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static void assert_content(const char *path, const char *want)
{
	char *got = read_file(path, NULL);
	if (!got)
		fail_msg("%s: %s", path, strerror(errno));
	if (strcmp(got, want))
		fail_msg("%s holds \"%s\", want \"%s\"", path, got, want);
	free(got);
}

/* Entries of tmpdir (temporary files must not stay behind). */
static int entries(void)
{
	DIR *d = opendir(tmpdir);
	assert_non_null(d);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

/* Creates path with content through outfile; returns 0 or -1 with err. */
static int write_out(const char *path, bool force, const char *content, struct diag_err *err)
{
	struct outfile *of = outfile_create("--output", path, force, err);
	if (!of)
		return -1;
	fputs(content, outfile_stream(of));
	return outfile_close(of, err);
}

static void assert_refused(const char *path, bool force, const char *needle)
{
	struct diag_err err = { 0 };
	struct outfile *of = outfile_create("--output", path, force, &err);
	if (of) {
		outfile_discard(of);
		fail_msg("%s (force %d): accepted", path, force);
	}
	assert_int_equal(err.code, DIAG_EXIT_USAGE);
	char *prefix = xasprintf("--output %s: ", path);
	if (strncmp(err.msg, prefix, strlen(prefix)) || !strstr(err.msg, needle))
		fail_msg("\"%s\": want \"%s...%s...\"", err.msg, prefix, needle);
	assert_null(strchr(err.msg, '\n'));
	free(prefix);
}

static void assert_mode(const char *path, mode_t want)
{
	struct stat st;
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	if ((st.st_mode & 07777) != want)
		fail_msg("%s: mode %o, want %o", path, st.st_mode & 07777, want);
}

static void test_new_file(void **state)
{
	(void)state;
	char *path = in_tmp("new.json"), *forced = in_tmp("forced.json");
	struct diag_err err = { 0 };
	mode_t old = umask(077); /* stricter umask: the file is still 0644, as documented */
	assert_int_equal(write_out(path, false, "{}\n", &err), 0);
	assert_int_equal(write_out(forced, true, "[]\n", &err), 0);
	umask(0); /* laxer: not more than 0644 either */
	char *lax = in_tmp("lax.json");
	assert_int_equal(write_out(lax, false, "x", &err), 0);
	umask(old);
	assert_content(path, "{}\n");
	assert_content(forced, "[]\n");
	assert_mode(path, 0644);
	assert_mode(forced, 0644);
	assert_mode(lax, 0644);
	assert_int_equal(entries(), 3); /* no temporary file left */
	unlink(path), unlink(forced), unlink(lax);
	free(path), free(forced), free(lax);
}

static void test_existing_refused_without_force(void **state)
{
	(void)state;
	char *path = in_tmp("report.json");
	write_text(path, "old");
	assert_refused(path, false, "exists; use --force to overwrite");
	assert_content(path, "old");
	unlink(path);
	free(path);
}

/* --force replaces by rename: the content is new, a hard link to the old file keeps the old
 * content (nothing is written through an existing inode), no temporary file stays. */
static void test_force_replaces(void **state)
{
	(void)state;
	char *path = in_tmp("report.json"), *other = in_tmp("hardlink");
	write_text(path, "old");
	assert_int_equal(link(path, other), 0);
	struct diag_err err = { 0 };
	assert_int_equal(write_out(path, true, "new", &err), 0);
	assert_content(path, "new");
	assert_content(other, "old");
	assert_mode(path, 0644);
	assert_int_equal(entries(), 2);
	unlink(path), unlink(other);
	free(path), free(other);
}

/* A symlink planted at the output path: refused without --force, replaced (not followed) with
 * it; the file it points to is never touched. A dangling symlink does not create its target. */
static void test_symlink_not_followed(void **state)
{
	(void)state;
	char *victim = in_tmp("victim"), *path = in_tmp("out.folded"), *absent = in_tmp("absent");
	write_text(victim, "precious");
	assert_int_equal(symlink(victim, path), 0);

	assert_refused(path, false, "exists");
	assert_content(victim, "precious");

	struct diag_err err = { 0 };
	assert_int_equal(write_out(path, true, "stacks", &err), 0);
	assert_content(victim, "precious");
	assert_content(path, "stacks");
	assert_mode(path, 0644); /* lstat: a regular file now, the link is gone */

	unlink(path);
	assert_int_equal(symlink(absent, path), 0);
	assert_refused(path, false, "exists");
	assert_int_equal(access(absent, F_OK), -1);
	assert_int_equal(write_out(path, true, "x", &err), 0);
	assert_int_equal(access(absent, F_OK), -1);
	assert_content(path, "x");

	unlink(path), unlink(victim);
	free(victim), free(path), free(absent);
}

static void test_not_regular_refused(void **state)
{
	(void)state;
	char *dir = in_tmp("adir"), *fifo = in_tmp("afifo"), *slash = NULL;
	assert_int_equal(mkdir(dir, 0755), 0);
	assert_int_equal(mkfifo(fifo, 0644), 0);
	slash = xasprintf("%s/", dir);
	for (int force = 0; force < 2; force++) {
		assert_refused(dir, force, "is a directory");
		assert_refused(slash, force, "directory");
		assert_refused(fifo, force, "is a FIFO");
		assert_refused("/dev/null", force, "character device");
	}
	assert_refused("/nonexistent-dir/x.json", false, "No such file or directory");
	assert_refused("/nonexistent-dir/x.json", true, "No such file or directory");
	struct diag_err err = { 0 };
	assert_null(outfile_create("--folded", "", true, &err));
	assert_string_equal(err.msg, "--folded: empty path");
	struct stat st;
	assert_int_equal(lstat(fifo, &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
	assert_int_equal(entries(), 2);
	rmdir(dir), unlink(fifo);
	free(dir), free(fifo), free(slash);
}

/* Discard removes what was created; with --force the old file stays as it was. */
static void test_discard(void **state)
{
	(void)state;
	char *path = in_tmp("partial");
	struct diag_err err = { 0 };
	struct outfile *of = outfile_create(NULL, path, false, &err);
	assert_non_null(of);
	fputs("half", outfile_stream(of));
	outfile_discard(of);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(entries(), 0);

	write_text(path, "old");
	of = outfile_create(NULL, path, true, &err);
	assert_non_null(of);
	fputs("half", outfile_stream(of));
	outfile_discard(of);
	assert_content(path, "old");
	assert_int_equal(entries(), 1);

	/* No label: "PATH: why". */
	assert_null(outfile_create(NULL, path, false, &err));
	char *want = xasprintf("%s: exists; use --force to overwrite", path);
	assert_string_equal(err.msg, want);
	unlink(path);
	free(path), free(want);
	outfile_discard(NULL);
	assert_int_equal(outfile_close(NULL, &err), 0);
}

/* A run killed while it writes (SIGKILL: no cleanup runs) leaves nothing at the path: the file
 * takes its name only once complete, so the next run is not refused for a 0-byte leftover. */
static void test_killed_mid_write_leaves_no_file(void **state)
{
	(void)state;
	char *path = in_tmp("report.json");
	for (int force = 0; force < 2; force++) {
		pid_t child = fork();
		assert_true(child >= 0);
		if (child == 0) {
			struct diag_err e = { 0 };
			struct outfile *of = outfile_create("--output", path, force, &e);
			if (!of)
				_exit(3);
			fputs("{\"half\":", outfile_stream(of));
			fflush(outfile_stream(of));
			raise(SIGKILL);
			_exit(4);
		}
		int status;
		assert_int_equal(waitpid(child, &status, 0), child);
		assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
		if (access(path, F_OK) == 0)
			fail_msg("force %d: a killed run left %s behind", force, path);
	}
	struct diag_err err = { 0 };
	assert_int_equal(write_out(path, false, "whole", &err), 0); /* not "exists" */
	assert_content(path, "whole");
	unlink(path);
	free(path);
	/* what the killed runs left is hidden and named after the file: .report.json.XXXXXX */
	DIR *d = opendir(tmpdir);
	assert_non_null(d);
	int left = 0;
	for (struct dirent *e; (e = readdir(d));) {
		if (!strncmp(e->d_name, ".report.json.", 13)) {
			char *t = in_tmp(e->d_name);
			unlink(t);
			free(t);
			left++;
		}
	}
	closedir(d);
	assert_int_equal(left, 2);
	assert_int_equal(entries(), 0);
}

/* Between the check and the rename, something appears at the path: without --force it is never
 * replaced (the run says so, its temporary file goes); with --force a symlink there is replaced,
 * its target untouched. While the file is written, the path does not exist yet. */
static void test_appeared_meanwhile(void **state)
{
	(void)state;
	char *path = in_tmp("out.json"), *victim = in_tmp("victim");
	write_text(victim, "precious");
	struct diag_err err = { 0 };
	struct outfile *of = outfile_create("--output", path, false, &err);
	assert_non_null(of);
	assert_int_equal(access(path, F_OK), -1); /* not there until complete */
	fputs("ours", outfile_stream(of));
	assert_int_equal(symlink(victim, path), 0);
	assert_int_equal(outfile_close(of, &err), -1);
	assert_int_equal(err.code, DIAG_EXIT_RUNTIME);
	if (!strstr(err.msg, "appeared while the file was written; not replaced (use --force"))
		fail_msg("message: %s", err.msg);
	assert_content(victim, "precious");
	struct stat st;
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_int_equal(entries(), 2); /* the link and the victim: no temporary file */

	unlink(path);
	of = outfile_create("--output", path, true, &err);
	assert_non_null(of);
	fputs("forced", outfile_stream(of));
	assert_int_equal(symlink(victim, path), 0);
	assert_int_equal(outfile_close(of, &err), 0);
	assert_content(path, "forced");
	assert_content(victim, "precious");
	assert_mode(path, 0644);
	assert_int_equal(entries(), 2);

	/* a regular file planted meanwhile keeps its content without --force */
	unlink(path);
	of = outfile_create("--output", path, false, &err);
	assert_non_null(of);
	fputs("ours", outfile_stream(of));
	write_text(path, "theirs");
	assert_int_equal(outfile_close(of, &err), -1);
	assert_content(path, "theirs");
	assert_int_equal(entries(), 2);
	unlink(path), unlink(victim);
	free(path), free(victim);
}

static void assert_owner(const char *path, uid_t uid, gid_t gid)
{
	struct stat st;
	assert_int_equal(lstat(path, &st), 0);
	if (st.st_uid != uid || st.st_gid != gid)
		fail_msg("%s: owner %u:%u, want %u:%u", path, (unsigned)st.st_uid,
			 (unsigned)st.st_gid, (unsigned)uid, (unsigned)gid);
}

#define NOBODY 65534
#define NOGROUP 65533

/* Root under sudo acts with the invoking user's rights: the file is theirs (new or replaced, in
 * a directory they own); a directory they cannot write is refused, and so is replacing root's
 * file in a sticky world-writable directory; ids that are not plain numbers are ignored (root's
 * file, 0644). Not root: SUDO_* change nothing and fail nothing. */
static void test_sudo_user(void **state)
{
	(void)state;
	struct diag_err err = { 0 };
	if (geteuid() != 0) {
		char *a = in_tmp("a");
		setenv("SUDO_UID", "65534", 1);
		setenv("SUDO_GID", "65533", 1);
		assert_int_equal(write_out(a, false, "a", &err), 0);
		unsetenv("SUDO_UID");
		unsetenv("SUDO_GID");
		assert_owner(a, geteuid(), getegid());
		unlink(a);
		free(a);
		print_message("  not root: acting for the sudo user not checked\n");
		return;
	}
	char *user_dir = in_tmp("user"), *sticky = in_tmp("sticky");
	char *a = xasprintf("%s/a", user_dir), *b = xasprintf("%s/b", user_dir);
	char *root_only = in_tmp("root-only"), *victim = xasprintf("%s/victim", sticky);
	char *c = in_tmp("c");
	assert_int_equal(chmod(tmpdir, 0755), 0);
	assert_int_equal(mkdir(user_dir, 0755), 0);
	assert_int_equal(chown(user_dir, NOBODY, NOGROUP), 0);
	assert_int_equal(mkdir(sticky, 0755), 0);
	assert_int_equal(chmod(sticky, 01777), 0);
	write_text(b, "root's");
	write_text(victim, "precious");

	setenv("SUDO_UID", "65534", 1);
	setenv("SUDO_GID", "65533", 1);
	assert_int_equal(write_out(a, false, "a", &err), 0);
	assert_int_equal(write_out(b, true, "b", &err), 0);
	assert_refused(root_only, false, "Permission denied");
	assert_refused(root_only, true, "Permission denied");
	/* sticky: the temporary file can be made, the rename over root's file cannot */
	struct outfile *of = outfile_create("--output", victim, true, &err);
	assert_non_null(of);
	fputs("evil", outfile_stream(of));
	assert_int_equal(outfile_close(of, &err), -1);
	assert_int_equal(err.code, DIAG_EXIT_RUNTIME);
	assert_non_null(strstr(err.msg, "Operation not permitted"));

	setenv("SUDO_UID", "65534x", 1);
	setenv("SUDO_GID", "-1", 1);
	assert_int_equal(write_out(c, false, "c", &err), 0);
	unsetenv("SUDO_UID");
	unsetenv("SUDO_GID");

	assert_owner(a, NOBODY, NOGROUP);
	assert_owner(b, NOBODY, NOGROUP);
	assert_owner(c, 0, getegid());
	assert_mode(a, 0644);
	assert_mode(b, 0644);
	assert_mode(c, 0644);
	assert_content(b, "b");
	assert_content(victim, "precious");
	assert_int_equal(access(root_only, F_OK), -1);
	DIR *d = opendir(sticky); /* the temporary file did not stay */
	int n = 0;
	for (struct dirent *e; d && (e = readdir(d));)
		n += e->d_name[0] != '.' || strlen(e->d_name) > 2;
	closedir(d);
	assert_int_equal(n, 1);
	/* back to root's rights for the rest */
	assert_int_equal(write_out(root_only, false, "r", &err), 0);
	assert_owner(root_only, 0, getegid());

	unlink(a), unlink(b), unlink(c), unlink(victim), unlink(root_only);
	rmdir(user_dir), rmdir(sticky);
	free(user_dir), free(sticky), free(a), free(b), free(c), free(root_only), free(victim);
}

static int setup(void **state)
{
	(void)state;
	unsetenv("SUDO_UID"); /* the tests run under sudo too */
	unsetenv("SUDO_GID");
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_outfile.XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st, (void)ftw;
	return type == FTW_DP ? rmdir(path) : unlink(path);
}

static int teardown(void **state) /* also after a failed test left files behind */
{
	(void)state;
	return nftw(tmpdir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_new_file),
		cmocka_unit_test(test_existing_refused_without_force),
		cmocka_unit_test(test_force_replaces),
		cmocka_unit_test(test_symlink_not_followed),
		cmocka_unit_test(test_not_regular_refused),
		cmocka_unit_test(test_discard),
		cmocka_unit_test(test_killed_mid_write_leaves_no_file),
		cmocka_unit_test(test_appeared_meanwhile),
		cmocka_unit_test(test_sudo_user),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
