/* jcmd.c — `jcmd PID Compiler.perfmap` as the JVM's own user (see jcmd.h).
 * Must not: run unasked, run as another user than the JVM's, use PATH or our environment, print,
 * or read the perf map it makes the JVM write.
 */
#include "jcmd.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "usyms.h"

/* Whether real (a real path: no symlink, no "..") is a root-owned executable regular file that
 * only root can replace: the file and every directory above it root's, none of them writable by
 * group or others. */
static bool root_only(const char *real)
{
	char p[PATH_MAX];
	struct stat st;
	snprintf(p, sizeof(p), "%s", real);
	if (stat(p, &st) || !S_ISREG(st.st_mode) || st.st_uid ||
	    (st.st_mode & (S_IWGRP | S_IWOTH)) || !(st.st_mode & S_IXOTH))
		return false;
	for (char *slash = strrchr(p, '/'); slash; slash = strrchr(p, '/')) {
		*slash = '\0';
		if (stat(*p ? p : "/", &st) || !S_ISDIR(st.st_mode) || st.st_uid ||
		    (st.st_mode & (S_IWGRP | S_IWOTH)))
			return false;
		if (!*p)
			break;
	}
	return true;
}

/* The jcmd to run, into real: the JDK's own (JAVA_HOME/lib/server/libjvm.so → JAVA_HOME/bin/jcmd)
 * when the libjvm.so the process maps is the very file at that path in our root, else
 * /usr/bin/jcmd; either only when root_only. -1 when neither is. */
static int find_jcmd(const char *libjvm, uint64_t dev, uint64_t ino, char *real, size_t len)
{
	char home[PATH_MAX], cand[PATH_MAX + 16];
	struct stat st;
	snprintf(home, sizeof(home), "%s", libjvm);
	for (int up = 0; up < 3; up++) { /* libjvm.so, server, lib */
		char *slash = strrchr(home, '/');
		if (!slash)
			break;
		*slash = '\0';
	}
	const char *own = NULL;
	if (home[0] == '/' && !stat(libjvm, &st) && st.st_ino == ino &&
	    st.st_dev == makedev((unsigned)(dev >> 32), (unsigned)(dev & 0xffffffffu))) {
		snprintf(cand, sizeof(cand), "%s/bin/jcmd", home);
		own = cand;
	}
	const char *const tries[] = { own, "/usr/bin/jcmd" };
	for (size_t i = 0; i < ARRAY_LEN(tries); i++) {
		char buf[PATH_MAX];
		if (tries[i] && realpath(tries[i], buf) && root_only(buf) && strlen(buf) < len) {
			snprintf(real, len, "%s", buf);
			return 0;
		}
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

/* The effective uid and gid of process pid from /proc/PID/status (the second of each line's four
 * ids), or -1. */
static int status_ids(int pid, uid_t *uid, gid_t *gid)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/status", pid);
	char *s = read_file(p, NULL), *u = s ? strstr(s, "\nUid:") : NULL,
	     *g = s ? strstr(s, "\nGid:") : NULL;
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

/* The child: as uid/gid, no descriptor but the output pipe, a cleared signal mask, dying with us.
 * Only async-signal-safe calls between fork and exec. */
static void child_exec(const char *real, char *const argv[], char *const envp[], int out, uid_t uid, gid_t gid)
{
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	sigaction(SIGPIPE, &dfl, NULL);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (null < 0 || dup2(null, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
		_exit(126);
	syscall(SYS_close_range, 3u, ~0u, 0u);
	if (setgroups(1, &gid) || setgid(gid) || setuid(uid) || (uid && (setuid(0) == 0)))
		_exit(126);
	if (chdir("/"))
		_exit(126);
	execve(real, argv, envp);
	_exit(127);
}

int jcmd_perfmap(int pid, const struct usyms *us, uint64_t deadline_ns, char *what, size_t len,
		 struct diag_err *err)
{
	const char *libjvm;
	uint64_t dev, ino;
	char real[PATH_MAX], proc[64], pidtext[16];
	struct stat owner;
	if (!us || usyms_mapped_file(us, "libjvm.so", &libjvm, &dev, &ino))
		return diag_fail(err, DIAG_EXIT_RUNTIME,
				 "process %d is not a JVM (no libjvm.so mapped)", pid);
	snprintf(proc, sizeof(proc), "/proc/%d", pid);
	if (stat(proc, &owner))
		return diag_fail(err, DIAG_EXIT_RUNTIME, "process %d: %s", pid, strerror(errno));
	/* A process that is not dumpable has a /proc of root's: never run jcmd as root for it. */
	uid_t euid;
	gid_t egid;
	if (status_ids(pid, &euid, &egid) || euid != owner.st_uid || egid != owner.st_gid)
		return diag_fail(err, DIAG_EXIT_RUNTIME,
				 "process %d: /proc/%d is owned by uid %u gid %u, "
				 "not by the user it runs as (not dumpable?): jcmd not run",
				 pid, pid, (unsigned)owner.st_uid, (unsigned)owner.st_gid);
	if (find_jcmd(libjvm, dev, ino, real, sizeof(real)))
		return diag_fail(err, DIAG_EXIT_RUNTIME,
				 "no jcmd to trust: neither the JDK's own (beside %s) "
				 "nor /usr/bin/jcmd is a root-owned file only root can write",
				 libjvm);
	snprintf(pidtext, sizeof(pidtext), "%d", pid);
	char *const argv[] = { "jcmd", pidtext, "Compiler.perfmap", NULL };
	char *const envp[] = { "PATH=/usr/bin:/bin", "LC_ALL=C", NULL };

	int fds[2];
	if (pipe2(fds, O_CLOEXEC))
		return diag_fail(err, DIAG_EXIT_RUNTIME, "pipe: %s", strerror(errno));
	pid_t child = fork();
	if (child < 0) {
		int e = errno;
		close(fds[0]);
		close(fds[1]);
		return diag_fail(err, DIAG_EXIT_RUNTIME, "fork: %s", strerror(e));
	}
	if (child == 0)
		child_exec(real, argv, envp, fds[1], owner.st_uid, owner.st_gid);
	close(fds[1]);

	char out[JCMD_OUTPUT_MAX];
	size_t n = 0;
	bool open_pipe = true, exited = false, timed_out = false;
	int status = 0;
	while (!exited || open_pipe) {
		exited = exited || waitpid(child, &status, WNOHANG) == child;
		uint64_t now = mono_ns();
		if (!exited && now >= deadline_ns) {
			kill(child, SIGKILL);
			waitpid(child, &status, 0);
			timed_out = true;
			break;
		}
		if (!open_pipe) { /* the pipe closed and it still runs: poll its exit */
			struct timespec ts = { 0, 10 * 1000000 };
			nanosleep(&ts, NULL);
			continue;
		}
		/* once it exited, only what is already in the pipe (a descendant may hold it open) */
		struct pollfd pfd = { .fd = fds[0], .events = POLLIN };
		int pr = poll(&pfd, 1, exited ? 0 : 100);
		if (pr == 0 && exited)
			break;
		if (pr < 0 && errno != EINTR)
			open_pipe = false;
		if (pr <= 0)
			continue;
		char buf[1024];
		ssize_t r = read(fds[0], buf, sizeof(buf));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			open_pipe = false;
			continue;
		}
		size_t k = (size_t)r; /* keep the last JCMD_OUTPUT_MAX bytes: the error is at the end */
		if (n + k > sizeof(out)) {
			size_t drop = n + k - sizeof(out);
			memmove(out, out + drop, n - drop);
			n -= drop;
		}
		memcpy(out + n, buf, k);
		n += k;
	}
	close(fds[0]);
	if (timed_out)
		return diag_fail(err, DIAG_EXIT_RUNTIME,
				 "%s %d Compiler.perfmap did not finish in %llu s: killed", real,
				 pid, (unsigned long long)(JCMD_TIMEOUT_NS / 1000000000));
	char line[200];
	last_line(out, n, line, sizeof(line));
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		if (WIFEXITED(status) && WEXITSTATUS(status) == 126)
			return diag_fail(err, DIAG_EXIT_RUNTIME, "could not become uid %u gid %u to run %s",
					 (unsigned)owner.st_uid, (unsigned)owner.st_gid, real);
		return diag_fail(err, DIAG_EXIT_RUNTIME, "%s %d Compiler.perfmap (as uid %u) %s %d%s%s",
				 real, pid, (unsigned)owner.st_uid,
				 WIFEXITED(status) ? "exited with" : "was killed by signal",
				 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
				 line[0] ? ": " : "", line);
	}
	snprintf(what, len, "%s %d Compiler.perfmap as uid %u gid %u", real, pid,
		 (unsigned)owner.st_uid, (unsigned)owner.st_gid);
	return 0;
}
