/* jcmd.c — `jcmd PID Compiler.perfmap` as the JVM's own user (see jcmd.h).
 * Must not: run unasked, run as another user than the JVM's, stat, open or resolve a path the
 * target names, use PATH or our environment, print, or read the perf map it makes the JVM write.
 *
 * Choices:
 * - The JDK is found from our side, never from the JVM's: the JDK homes under a few install
 *   roots (JCMD_JDK_ROOTS) are listed, and the one whose lib/server/libjvm.so is the file the
 *   process maps (device and inode, from its maps) is its JDK. The path the process names for
 *   libjvm.so is never looked at: it may lead to a FUSE file system its owner serves, where a
 *   stat() waits for ever, even through SIGKILL, or to a tree of its own whose bin/jcmd links to
 *   any program of root's.
 * - Every step of those paths, from "/", is a directory (then the file) that is root's and
 *   writable by root only, checked by statx(AT_STATX_DONT_SYNC | AT_SYMLINK_NOFOLLOW) before it
 *   is entered by openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS): no symlink is followed, no
 *   directory that another user owns is entered, and a mount another user made (a FUSE file
 *   system's root is its owner's) answers from its cached attributes, without a request to its
 *   server. The binary checked is the one run: execveat() of that very descriptor.
 * - The child joins the JVM's own cgroups (each hierarchy's, written by the child itself before
 *   it drops root, to descriptors opened beforehand), its descriptor limit goes back to the
 *   default, and it runs with the JVM's uid and gid and nothing of ours but its output pipe:
 *   what the JVM's user can do to it (ptrace it, signal it) gains nothing they did not have. A
 *   child stopped by a signal is killed at once (its user can stop it; we do not wait on it), and
 *   the run's stop signal (the reader's stop descriptor) ends the wait.
 */
#include "probes/jcmd.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/openat2.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "target/procfs.h"
#include "target/tfile.h"
#include "symbolize/usyms.h"

#define JCMD_MAX_CGROUPS 16   /* hierarchies joined */
#define JCMD_HOMES_MAX 256    /* entries of an install root looked at */
#define JCMD_CHILD_NOFILE 1024 /* the default soft limit of descriptors */
#define JCMD_EXIT_SETUP 126   /* the child could not become the JVM's user */
#define JCMD_EXIT_CGROUP 125  /* the child could not join the JVM's cgroups */

/* Where JDKs are installed: Debian and Ubuntu, Fedora/RHEL/SUSE, Oracle's RPMs, /opt tarballs
 * (Eclipse Temurin's images: /opt/java/openjdk). A home is an entry of one of these. */
static const char *const JCMD_JDK_ROOTS[] = { "/usr/lib/jvm", "/usr/lib64/jvm", "/usr/java", "/opt",
					      "/opt/java" };

/* What a path must lead to. */
enum want { WANT_DIR, WANT_FILE, WANT_EXEC };

/* name in directory dir is root's, writable by root only, and what want says (a regular file; an
 * executable one); *sx gets its attributes. A symlink is none of them. Cached attributes: a file
 * system's server is never asked (see the top). */
static bool root_only_at(int dir, const char *name, enum want want, struct statx *sx)
{
	if (statx(dir, name, AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC | AT_NO_AUTOMOUNT,
		  STATX_TYPE | STATX_MODE | STATX_UID | STATX_INO, sx))
		return false;
	if (sx->stx_uid != 0 || (sx->stx_mode & (S_IWGRP | S_IWOTH)))
		return false;
	if (want == WANT_DIR)
		return S_ISDIR(sx->stx_mode);
	return S_ISREG(sx->stx_mode) && (want == WANT_FILE || (sx->stx_mode & S_IXOTH));
}

/* Opens rel (components separated by '/', relative) beneath directory dir (O_PATH), each
 * component root_only_at first: directories, the last one what want says. Returns the
 * descriptor or -1; *sx: the last component's attributes. */
static int open_root_only(int dir, const char *rel, enum want want, struct statx *sx)
{
	char comp[NAME_MAX + 1];
	int fd = dup(dir);
	while (fd >= 0 && *rel) {
		size_t n = strcspn(rel, "/");
		const char *next = rel + n + (rel[n] == '/');
		if (n == 0 || n > NAME_MAX) {
			close(fd);
			return -1;
		}
		memcpy(comp, rel, n);
		comp[n] = '\0';
		bool last = !*next;
		enum want w = last ? want : WANT_DIR;
		struct open_how how = { .flags = O_PATH | O_CLOEXEC | O_NOFOLLOW | (w == WANT_DIR ? O_DIRECTORY : 0),
					.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };
		int sub = root_only_at(fd, comp, w, sx)
				  ? (int)syscall(SYS_openat2, fd, comp, &how, sizeof(how))
				  : -1;
		close(fd);
		fd = sub;
		rel = next;
	}
	return fd;
}

/* An install root (absolute) opened from "/", every directory on the way root-only; -1: none. */
static int open_install_root(const char *abs)
{
	struct statx sx;
	int top = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (top < 0)
		return -1;
	int fd = root_only_at(top, ".", WANT_DIR, &sx) ? open_root_only(top, abs + 1, WANT_DIR, &sx) : -1;
	close(top);
	return fd;
}

/* The JDK home (an entry of an install root) whose lib/server/libjvm.so is the file dev:ino, into
 * home, and its bin/jcmd opened (O_PATH) into *jcmd_fd (-1: the home has none, a JRE).
 * Returns 0, or -1 when no home under the install roots holds that file. */
static int find_home(uint64_t dev, uint64_t ino, char *home, size_t len, int *jcmd_fd)
{
	*jcmd_fd = -1;
	for (size_t r = 0; r < ARRAY_LEN(JCMD_JDK_ROOTS); r++) {
		int root = open_install_root(JCMD_JDK_ROOTS[r]);
		int list = root >= 0 ? openat(root, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
		DIR *d = list >= 0 ? fdopendir(list) : NULL;
		if (!d && list >= 0)
			close(list);
		struct dirent *e;
		for (size_t seen = 0; d && seen < JCMD_HOMES_MAX && (e = readdir(d)); seen++) {
			if (e->d_name[0] == '.' || (e->d_type != DT_DIR && e->d_type != DT_UNKNOWN))
				continue;
			char rel[NAME_MAX + 32];
			struct statx sx;
			snprintf(rel, sizeof(rel), "%s/lib/server/libjvm.so", e->d_name);
			int jvm = open_root_only(root, rel, WANT_FILE, &sx);
			if (jvm < 0)
				continue;
			close(jvm);
			if (sx.stx_ino != ino || makedev(sx.stx_dev_major, sx.stx_dev_minor) !=
							 makedev((unsigned)(dev >> 32), (unsigned)(dev & 0xffffffffu)))
				continue;
			snprintf(rel, sizeof(rel), "%s/bin/jcmd", e->d_name);
			*jcmd_fd = open_root_only(root, rel, WANT_EXEC, &sx);
			snprintf(home, len, "%s/%s", JCMD_JDK_ROOTS[r], e->d_name);
			closedir(d);
			close(root);
			return 0;
		}
		if (d)
			closedir(d);
		if (root >= 0)
			close(root);
	}
	return -1;
}

/* The last non-empty line of out (n bytes), cut at 160 bytes, control bytes as '?'. */
static void last_line(const char *out, size_t n, char *line, size_t len)
{
	while (n && (out[n - 1] == '\n' || out[n - 1] == '\r' || out[n - 1] == ' '))
		n--;
	size_t start = n;
	while (start && out[start - 1] != '\n')
		start--;
	size_t k = 0;
	for (size_t i = start; i < n && k + 1 < len && k < 160; i++)
		line[k++] = (unsigned char)out[i] < 0x20 || out[i] == 0x7f ? '?' : out[i];
	line[k] = '\0';
}

/* The effective uid and gid of process pid from its status (the second of each line's four ids),
 * read through the reader. -1 when unreadable. */
static int status_ids(struct tfile_reader *files, int pid, uid_t *uid, gid_t *gid)
{
	struct diag_err err;
	char *s = tfile_read_proc(files, pid, "status", 1 << 16, NULL, &err);
	char *u = s ? strstr(s, "\nUid:") : NULL, *g = s ? strstr(s, "\nGid:") : NULL;
	unsigned long ru, eu, rg, eg;
	int rc = -1;
	if (u && g && sscanf(u + 5, "%lu %lu", &ru, &eu) == 2 && sscanf(g + 5, "%lu %lu", &rg, &eg) == 2) {
		*uid = (uid_t)eu;
		*gid = (gid_t)eg;
		rc = 0;
	}
	free(s);
	return rc;
}

/* The cgroup.procs files of every cgroup process pid is in (each hierarchy mounted here), opened
 * for writing into fds (*n of them). 0, or -1 with err: one that cannot be opened means jcmd
 * would run outside the JVM's limits. */
static int open_cgroups(struct tfile_reader *files, int pid, int *fds, size_t *n, struct diag_err *err)
{
	*n = 0;
	char *info = read_file("/proc/self/mountinfo", NULL);
	char *cg = tfile_read_proc(files, pid, "cgroup", 1 << 16, NULL, err);
	struct procfs_cgroup_dir dirs[JCMD_MAX_CGROUPS];
	int k = info && cg ? procfs_cgroup_dirs(info, cg, dirs, ARRAY_LEN(dirs)) : -1;
	free(info);
	free(cg);
	if (k < 0)
		return diag_fail(err, DIAG_EXIT_RUNTIME, "process %d: its cgroups could not be read", pid);
	for (int i = 0; i < k; i++) {
		char rel[sizeof(dirs[i].path) + 16];
		snprintf(rel, sizeof(rel), "%s/cgroup.procs", dirs[i].path[1] ? dirs[i].path + 1 : "");
		if (!dirs[i].path[1])
			snprintf(rel, sizeof(rel), "cgroup.procs");
		int mnt = open(dirs[i].mount, O_PATH | O_DIRECTORY | O_CLOEXEC);
		struct open_how how = { .flags = O_WRONLY | O_CLOEXEC,
					.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
						   RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV };
		int fd = mnt >= 0 ? (int)syscall(SYS_openat2, mnt, rel, &how, sizeof(how)) : -1;
		int e = errno;
		if (mnt >= 0)
			close(mnt);
		if (fd < 0) {
			for (size_t j = 0; j < *n; j++)
				close(fds[j]);
			*n = 0;
			return diag_fail(err, DIAG_EXIT_RUNTIME, "process %d's cgroup %s%s: %s: jcmd not run",
					 pid, dirs[i].mount, dirs[i].path, strerror(e));
		}
		fds[(*n)++] = fd;
	}
	return 0;
}

/* What the child is given: all opened and computed before the fork. */
struct child_setup {
	int exe;               /* the jcmd checked (O_PATH) */
	int out;               /* its stdout and stderr */
	const int *cgroups;    /* cgroup.procs files to join */
	size_t n_cgroups;
	uid_t uid;
	gid_t gid;
};

/* The child: in the JVM's cgroups, as its uid/gid, no descriptor but the output pipe, default
 * descriptor limit, a cleared signal mask, dying with us. Only async-signal-safe calls between
 * fork and exec. */
static void child_exec(const struct child_setup *cs, char *const argv[], char *const envp[])
{
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	sigaction(SIGPIPE, &dfl, NULL);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	for (size_t i = 0; i < cs->n_cgroups; i++)
		if (write(cs->cgroups[i], "0\n", 2) != 2)
			_exit(JCMD_EXIT_CGROUP);
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (null < 0 || dup2(null, 0) < 0 || dup2(cs->out, 1) < 0 || dup2(cs->out, 2) < 0 ||
	    dup2(cs->exe, 3) < 0 || fcntl(3, F_SETFD, FD_CLOEXEC) < 0)
		_exit(JCMD_EXIT_SETUP);
	syscall(SYS_close_range, 4u, ~0u, 0u);
	struct rlimit nofile;
	if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur > JCMD_CHILD_NOFILE) {
		nofile.rlim_cur = JCMD_CHILD_NOFILE;
		setrlimit(RLIMIT_NOFILE, &nofile);
	}
	gid_t gid = cs->gid;
	if (setgroups(1, &gid) || setgid(cs->gid) || setuid(cs->uid) || (cs->uid && setuid(0) == 0))
		_exit(JCMD_EXIT_SETUP);
	if (chdir("/"))
		_exit(JCMD_EXIT_SETUP);
	syscall(SYS_execveat, 3, "", argv, envp, AT_EMPTY_PATH);
	_exit(127);
}

/* Why the wait ended early, if it did. */
enum wait_end { WAIT_EXITED, WAIT_DEADLINE, WAIT_STOPPED, WAIT_SIGNALLED };

/* Reads the child's output (its last JCMD_OUTPUT_MAX bytes into out, *n) until it exits and its
 * pipe has nothing more, the deadline, our stop descriptor, or the child being stopped (then it
 * is killed). The child is reaped: *status. */
static enum wait_end wait_child(pid_t child, int pipe_fd, int stop_fd, uint64_t deadline_ns, char *out,
				size_t *n, int *status)
{
	bool open_pipe = true, exited = false;
	enum wait_end end = WAIT_EXITED;
	*n = 0;
	while (!exited || open_pipe) {
		if (!exited) {
			pid_t w = waitpid(child, status, WNOHANG | WUNTRACED);
			if (w == child && WIFSTOPPED(*status))
				end = WAIT_STOPPED;
			else
				exited = w == child;
		}
		if (!exited && end == WAIT_EXITED && mono_ns() >= deadline_ns)
			end = WAIT_DEADLINE;
		if (end != WAIT_EXITED) {
			kill(child, SIGKILL);
			waitpid(child, status, 0);
			return end;
		}
		/* once it exited, only what is already in the pipe (a descendant may hold it open) */
		struct pollfd pfd[2] = { { .fd = open_pipe ? pipe_fd : -1, .events = POLLIN },
					 { .fd = exited ? -1 : stop_fd, .events = POLLIN } };
		int pr = poll(pfd, 2, exited ? 0 : open_pipe ? 100 : 10);
		if (pr < 0 && errno != EINTR)
			open_pipe = false;
		if (pr > 0 && (pfd[1].revents & POLLIN)) { /* the run is asked to stop: left for its owner */
			end = WAIT_SIGNALLED;
			continue;
		}
		if (pr == 0 && exited)
			break;
		if (pr <= 0 || !pfd[0].revents)
			continue;
		char buf[1024];
		ssize_t r = read(pipe_fd, buf, sizeof(buf));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			open_pipe = false;
			continue;
		}
		size_t k = (size_t)r; /* keep the last JCMD_OUTPUT_MAX bytes: the error is at the end */
		if (*n + k > JCMD_OUTPUT_MAX) {
			size_t drop = *n + k - JCMD_OUTPUT_MAX;
			memmove(out, out + drop, *n - drop);
			*n -= drop;
		}
		memcpy(out + *n, buf, k);
		*n += k;
	}
	return end;
}

/* Forks and runs the checked jcmd for pid as the setup says; its outcome into err or what. */
static int run_jcmd(const struct child_setup *setup, const char *jcmd, int pid, int stop_fd,
		    uint64_t deadline_ns, char *what, size_t len, struct diag_err *err)
{
	char pidtext[16];
	snprintf(pidtext, sizeof(pidtext), "%d", pid);
	char *const argv[] = { "jcmd", pidtext, "Compiler.perfmap", NULL };
	char *const envp[] = { "PATH=/usr/bin:/bin", "LC_ALL=C", NULL };
	int fds[2];
	if (pipe2(fds, O_CLOEXEC))
		return diag_fail(err, DIAG_EXIT_RUNTIME, "pipe: %s", strerror(errno));
	struct child_setup cs = *setup;
	cs.out = fds[1];
	pid_t child = fork();
	if (child < 0) {
		int e = errno;
		close(fds[0]);
		close(fds[1]);
		return diag_fail(err, DIAG_EXIT_RUNTIME, "fork: %s", strerror(e));
	}
	if (child == 0)
		child_exec(&cs, argv, envp);
	close(fds[1]);
	char out[JCMD_OUTPUT_MAX];
	size_t n = 0;
	int status = 0;
	enum wait_end end = wait_child(child, fds[0], stop_fd, deadline_ns, out, &n, &status);
	close(fds[0]);
	unsigned uid = (unsigned)setup->uid, gid = (unsigned)setup->gid;
	if (end == WAIT_DEADLINE)
		return diag_fail(err, DIAG_EXIT_RUNTIME, "%s %d Compiler.perfmap did not finish in time: killed",
				 jcmd, pid);
	if (end == WAIT_STOPPED)
		return diag_fail(err, DIAG_EXIT_RUNTIME, "%s %d Compiler.perfmap (as uid %u) was stopped by a "
				 "signal (its user's?): killed", jcmd, pid, uid);
	if (end == WAIT_SIGNALLED)
		return diag_fail(err, DIAG_EXIT_RUNTIME, "%s %d Compiler.perfmap: the run was asked to stop: "
				 "killed", jcmd, pid);
	char line[200];
	last_line(out, n, line, sizeof(line));
	if (WIFEXITED(status) && WEXITSTATUS(status) == JCMD_EXIT_SETUP)
		return diag_fail(err, DIAG_EXIT_RUNTIME, "could not become uid %u gid %u to run %s", uid, gid,
				 jcmd);
	if (WIFEXITED(status) && WEXITSTATUS(status) == JCMD_EXIT_CGROUP)
		return diag_fail(err, DIAG_EXIT_RUNTIME, "could not join process %d's cgroups to run %s",
				 pid, jcmd);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		return diag_fail(err, DIAG_EXIT_RUNTIME, "%s %d Compiler.perfmap (as uid %u) %s %d%s%s", jcmd,
				 pid, uid, WIFEXITED(status) ? "exited with" : "was killed by signal",
				 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
				 line[0] ? ": " : "", line);
	snprintf(what, len, "%s %d Compiler.perfmap as uid %u gid %u", jcmd, pid, uid, gid);
	return 0;
}

int jcmd_perfmap(int pid, const struct usyms *us, struct tfile_reader *files, uint64_t deadline_ns,
		 char *what, size_t len, struct diag_err *err)
{
	const char *libjvm;
	uint64_t dev, ino;
	struct stat owner;
	char proc[64], home[PATH_MAX];
	if (!us || usyms_mapped_file(us, "libjvm.so", &libjvm, &dev, &ino))
		return diag_fail(err, DIAG_EXIT_RUNTIME,
				 "process %d is not a JVM (no libjvm.so mapped)", pid);
	snprintf(proc, sizeof(proc), "/proc/%d", pid);
	if (stat(proc, &owner))
		return diag_fail(err, DIAG_EXIT_RUNTIME, "process %d: %s", pid, strerror(errno));
	/* A process that is not dumpable has a /proc of root's: never run jcmd as root for it. */
	uid_t euid;
	gid_t egid;
	if (status_ids(files, pid, &euid, &egid) || euid != owner.st_uid || egid != owner.st_gid)
		return diag_fail(err, DIAG_EXIT_RUNTIME,
				 "process %d: /proc/%d is owned by uid %u gid %u, "
				 "not by the user it runs as (not dumpable?): jcmd not run",
				 pid, pid, (unsigned)owner.st_uid, (unsigned)owner.st_gid);
	int jcmd_fd;
	if (find_home(dev, ino, home, sizeof(home), &jcmd_fd))
		return diag_fail(err, DIAG_EXIT_RUNTIME,
				 "no jcmd to trust: the libjvm.so process %d maps is not the lib/server/"
				 "libjvm.so of a JDK under /usr/lib/jvm, /usr/lib64/jvm, /usr/java, /opt or "
				 "/opt/java whose every directory is root's and writable by root only",
				 pid);
	if (jcmd_fd < 0)
		return diag_fail(err, DIAG_EXIT_RUNTIME,
				 "no jcmd to trust: the JVM's JDK %s has no bin/jcmd that is root's and "
				 "writable by root only (a runtime without the JDK's tools?)", home);
	struct child_setup setup = { .exe = jcmd_fd, .out = -1, .uid = owner.st_uid, .gid = owner.st_gid };
	int cgroups[JCMD_MAX_CGROUPS];
	int rc = open_cgroups(files, pid, cgroups, &setup.n_cgroups, err);
	if (rc == 0) {
		char jcmd[PATH_MAX + 16];
		snprintf(jcmd, sizeof(jcmd), "%s/bin/jcmd", home);
		uint64_t until = tfile_reader_deadline(files);
		setup.cgroups = cgroups;
		rc = run_jcmd(&setup, jcmd, pid, tfile_reader_stop_fd(files),
			      until && until < deadline_ns ? until : deadline_ns, what, len, err);
	}
	for (size_t i = 0; i < setup.n_cgroups; i++)
		close(cgroups[i]);
	close(jcmd_fd);
	return rc;
}
