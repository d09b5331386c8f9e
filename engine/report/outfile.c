/* outfile.c — output files created safely on behalf of the invoking user (see outfile.h).
 *
 * Owns: the open file, its temporary name next to the target, the rename that completes it, and
 * the cleanup of what it created.
 * Must not: print, follow a symbolic link at the target path, write into an existing file (it is
 * replaced by rename(2), so a hard link elsewhere keeps its content), give the target's name to
 * anything incomplete, or leave a partial file behind on failure.
 *
 * Choices:
 * - Under sudo (euid 0, SUDO_UID and SUDO_GID plain numbers) every operation on the path —
 *   create, lstat, rename, unlink — runs with the invoking user's filesystem identity
 *   (setfsuid/setfsgid, this thread only; the kernel drops CAP_DAC_OVERRIDE and friends while
 *   fsuid is not 0). So a user allowed to run diagnose through sudo creates or replaces only what
 *   they could themselves: not /etc/ld.so.preload, not another user's file in /tmp. Supplementary
 *   groups stay root's (usually just root). The new file is then fchown'ed to SUDO_UID:SUDO_GID.
 *   A root shell opened with `sudo -s` still carries SUDO_UID: its outputs are the user's too.
 * - Only the last component is protected from symlinks (O_NOFOLLOW, O_EXCL, rename): the
 *   directories on the way are resolved with the invoking user's rights, as they would be for
 *   the user, once: the directory is held open (O_PATH) and every later step is relative to it,
 *   so a directory swapped on the way after the check changes nothing.
 * - The content is written to a temporary file in the same directory (".NAME.XXXXXX", created
 *   O_EXCL|O_NOFOLLOW, mode 0600 until settled), which takes the target's name by rename(2) only
 *   once complete (flushed, fsync'ed): a run that dies (SIGKILL, power loss) leaves no empty or
 *   half file under the name the next run would refuse, at most the hidden temporary one.
 * - The check for an existing target is made up front, so that it is refused before a
 *   collection window, not after it; without --force the rename is renameat2(RENAME_NOREPLACE)
 *   (link(2) where the filesystem lacks it), so whatever appeared at the path meanwhile — a file,
 *   a symlink planted in /tmp — is never replaced. With --force rename(2) replaces what is there:
 *   a symlink itself, never its target. In a sticky directory (/tmp) under sudo, the rename as
 *   the user cannot replace another user's file (the kernel's sticky rule).
 * - Removal on failure checks that the temporary name still names the inode we created.
 */
#include "report/outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/fsuid.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#define OUTFILE_MODE 0644

/* "LABEL PATH: why" (or "PATH: why"), returns -1. */
static int outfile_fail(struct diag_err *err, int code, const char *label, const char *path,
			const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static int outfile_fail(struct diag_err *err, int code, const char *label, const char *path,
			const char *fmt, ...)
{
	char why[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return diag_fail(err, code, "%s%s%s: %s", label && *label ? label : "",
			 label && *label ? " " : "", path, why);
}

/* What a non-regular file is, for "is a directory" style refusals. NULL for a regular file or a
 * symlink (the two things --force may replace). */
static const char *refused_kind(mode_t mode)
{
	if (S_ISDIR(mode))
		return "is a directory";
	if (S_ISFIFO(mode))
		return "is a FIFO, not a regular file";
	if (S_ISSOCK(mode))
		return "is a socket, not a regular file";
	if (S_ISCHR(mode))
		return "is a character device, not a regular file";
	if (S_ISBLK(mode))
		return "is a block device, not a regular file";
	if (S_ISREG(mode) || S_ISLNK(mode))
		return NULL;
	return "is not a regular file";
}

/* A decimal id from the environment (SUDO_UID, SUDO_GID): digits only, below (unsigned)-1, which
 * fchown reads as "unchanged". */
static bool sudo_id(const char *name, unsigned *id)
{
	const char *s = getenv(name);
	if (!s || !*s)
		return false;
	unsigned long long v = 0;
	for (const char *c = s; *c; c++) {
		if (*c < '0' || *c > '9')
			return false;
		v = v * 10 + (unsigned)(*c - '0');
		if (v >= UINT_MAX)
			return false;
	}
	*id = (unsigned)v;
	return true;
}

/* The user root acts for: SUDO_UID and SUDO_GID when euid is 0 and both are plain numbers. */
struct invoker {
	bool active;
	uid_t uid;
	gid_t gid;
};

static struct invoker invoker_get(void)
{
	struct invoker who = { 0 };
	unsigned uid, gid;
	if (geteuid() == 0 && sudo_id("SUDO_UID", &uid) && sudo_id("SUDO_GID", &gid))
		who = (struct invoker){ true, (uid_t)uid, (gid_t)gid };
	return who;
}

/* Path operations from here on are checked as the invoker (no-op when not under sudo). */
static int invoker_enter(const struct invoker *who, const char *label, const char *path,
			 struct diag_err *err)
{
	if (!who->active)
		return 0;
	setfsgid(who->gid);
	setfsuid(who->uid);
	/* setfsuid reports the previous id, never an error: an invalid id reads the current one. */
	if ((uid_t)setfsuid((uid_t)-1) == who->uid && (gid_t)setfsgid((gid_t)-1) == who->gid)
		return 0;
	setfsuid(0);
	setfsgid(getegid());
	return outfile_fail(err, DIAG_EXIT_RUNTIME, label, path,
			    "cannot act as the sudo user (uid %u, gid %u)", (unsigned)who->uid,
			    (unsigned)who->gid);
}

static void invoker_leave(const struct invoker *who)
{
	if (!who->active)
		return;
	int e = errno;
	setfsuid(geteuid());
	setfsgid(getegid());
	errno = e;
}

struct outfile {
	FILE *stream;
	struct invoker who; /* under sudo: whose rights the path operations use */
	char *label;    /* for messages; "" when none */
	char *path;     /* the target, as given */
	int dirfd;      /* its directory, held from the check to the rename (O_PATH) */
	char *base;     /* the target's name in dirfd */
	char *tmp;      /* the temporary file's name in dirfd, renamed to base at close */
	bool force;     /* replace what is at base */
	dev_t dev;      /* identity of the temporary file, checked before rename and removal */
	ino_t ino;
};

/* Mode and owner of a freshly created file (as root: the fd is ours). */
static int outfile_settle(int fd, const struct invoker *who, const char *label, const char *path,
			  struct diag_err *err)
{
	if (who->active && fchown(fd, who->uid, who->gid))
		return outfile_fail(err, DIAG_EXIT_RUNTIME, label, path,
				    "cannot give the file to the sudo user (uid %u, gid %u): %s",
				    (unsigned)who->uid, (unsigned)who->gid, strerror(errno));
	if (fchmod(fd, OUTFILE_MODE))
		return outfile_fail(err, DIAG_EXIT_RUNTIME, label, path, "chmod: %s", strerror(errno));
	return 0;
}

/* Whether the temporary name still leads to the file we created (as the invoker). */
static bool tmp_is_ours(const struct outfile *of)
{
	struct stat st;
	return !fstatat(of->dirfd, of->tmp, &st, AT_SYMLINK_NOFOLLOW) && st.st_dev == of->dev &&
	       st.st_ino == of->ino;
}

/* Removes the temporary file, if its name still leads to it. */
static void outfile_remove(const struct outfile *of)
{
	if (!of->tmp || invoker_enter(&of->who, NULL, of->path, NULL))
		return;
	if (tmp_is_ours(of))
		unlinkat(of->dirfd, of->tmp, 0);
	invoker_leave(&of->who);
}

static void outfile_free(struct outfile *of)
{
	if (of->dirfd >= 0)
		close(of->dirfd);
	free(of->label);
	free(of->path);
	free(of->base);
	free(of->tmp);
	free(of);
}

/* Opens the directory of path (O_PATH) and sets of->base; checks what is at the path now: a
 * directory, FIFO, socket or device is refused, and anything at all without force. as_user: what
 * to add to a system error when the check was made with the sudo user's rights. */
static int check_target(struct outfile *of, const char *label, const char *as_user,
			struct diag_err *err)
{
	const char *path = of->path, *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	if (!*base || !strcmp(base, ".") || !strcmp(base, ".."))
		return outfile_fail(err, DIAG_EXIT_USAGE, label, path, "is a directory");
	char *dir = slash ? xasprintf("%.*s", slash == path ? 1 : (int)(slash - path), path)
			  : xstrdup(".");
	of->dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	int e = errno;
	free(dir);
	if (of->dirfd < 0)
		return outfile_fail(err, DIAG_EXIT_USAGE, label, path, "%s%s", strerror(e), as_user);
	of->base = xstrdup(base);
	struct stat st;
	if (fstatat(of->dirfd, base, &st, AT_SYMLINK_NOFOLLOW)) {
		if (errno == ENOENT)
			return 0;
		return outfile_fail(err, DIAG_EXIT_USAGE, label, path, "%s%s", strerror(errno), as_user);
	}
	const char *kind = refused_kind(st.st_mode);
	if (kind)
		return outfile_fail(err, DIAG_EXIT_USAGE, label, path, "%s", kind);
	if (!of->force)
		return outfile_fail(err, DIAG_EXIT_USAGE, label, path,
				    "exists%s; use --force to overwrite",
				    S_ISLNK(st.st_mode) ? " (a symbolic link, never followed)" : "");
	return 0;
}

/* Creates the temporary file ".BASE.XXXXXX" in the directory: O_CREAT|O_EXCL (a symlink planted
 * at the name is not followed), mode 0600 until settled. Sets of->tmp; returns the fd. */
static int create_temporary(struct outfile *of, const char *label, const char *as_user,
			    struct diag_err *err)
{
	static const char chars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	int e = EEXIST;
	for (int attempt = 0; attempt < 100 && e == EEXIST; attempt++) {
		unsigned char rnd[6];
		if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
			uint64_t t = mono_ns() ^ ((uint64_t)getpid() << 20) ^ (uint64_t)attempt;
			memcpy(rnd, &t, sizeof(rnd));
		}
		char suffix[sizeof(rnd) + 1];
		for (size_t i = 0; i < sizeof(rnd); i++)
			suffix[i] = chars[rnd[i] % (sizeof(chars) - 1)];
		suffix[sizeof(rnd)] = '\0';
		char *name = xasprintf(".%.64s.%s", of->base, suffix);
		int fd = openat(of->dirfd, name,
				O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0600);
		if (fd >= 0) {
			of->tmp = name;
			return fd;
		}
		e = errno;
		free(name);
	}
	return outfile_fail(err, DIAG_EXIT_USAGE, label, of->path,
			    "cannot create a temporary file next to it: %s%s", strerror(e), as_user);
}

struct outfile *outfile_create(const char *label, const char *path, bool force,
			       struct diag_err *err)
{
	if (!path || !*path) {
		diag_fail(err, DIAG_EXIT_USAGE, "%s%sempty path", label && *label ? label : "",
			  label && *label ? ": " : "");
		return NULL;
	}
	struct outfile *of = xcalloc(1, sizeof(*of));
	of->dirfd = -1;
	of->who = invoker_get();
	of->label = xstrdup(label ? label : "");
	of->path = xstrdup(path);
	of->force = force;
	if (invoker_enter(&of->who, label, path, err)) {
		outfile_free(of);
		return NULL;
	}
	char as_user[96] = "";
	if (of->who.active)
		snprintf(as_user, sizeof(as_user),
			 " (checked with the rights of the sudo user, uid %u)", (unsigned)of->who.uid);
	int fd = check_target(of, label, as_user, err) ? -1 : create_temporary(of, label, as_user, err);
	invoker_leave(&of->who);
	if (fd < 0) {
		outfile_free(of);
		return NULL;
	}
	struct stat st;
	if (fstat(fd, &st)) {
		outfile_fail(err, DIAG_EXIT_RUNTIME, label, path, "fstat: %s", strerror(errno));
		close(fd);
		free(of->tmp); /* identity unknown: nothing removed */
		of->tmp = NULL;
		outfile_free(of);
		return NULL;
	}
	of->dev = st.st_dev;
	of->ino = st.st_ino;
	bool settled = !outfile_settle(fd, &of->who, label, path, err);
	if (settled && !(of->stream = fdopen(fd, "w")))
		outfile_fail(err, DIAG_EXIT_RUNTIME, label, path, "%s", strerror(errno));
	if (!of->stream) {
		close(fd);
		outfile_remove(of);
		outfile_free(of);
		return NULL;
	}
	return of;
}

FILE *outfile_stream(const struct outfile *of)
{
	return of->stream;
}

#define NOT_OURS (-1) /* put_in_place: the temporary name no longer leads to our file */

/* Gives the complete temporary file the target's name: without force only if nothing is there
 * (renameat2 RENAME_NOREPLACE; link + unlink where the filesystem lacks it). Returns 0, NOT_OURS
 * or an errno, with *what saying which step failed. */
static int put_in_place(struct outfile *of, const char **what)
{
	if (!tmp_is_ours(of))
		return NOT_OURS;
	*what = of->who.active ? "rename, as the sudo user" : "rename";
	if (of->force)
		return renameat(of->dirfd, of->tmp, of->dirfd, of->base) ? errno : 0;
	if (!renameat2(of->dirfd, of->tmp, of->dirfd, of->base, RENAME_NOREPLACE))
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return errno;
	*what = of->who.active ? "link, as the sudo user" : "link";
	if (linkat(of->dirfd, of->tmp, of->dirfd, of->base, 0))
		return errno;
	unlinkat(of->dirfd, of->tmp, 0);
	return 0;
}

int outfile_close(struct outfile *of, struct diag_err *err)
{
	if (!of)
		return 0;
	int rc = 0, e = 0;
	const char *what = "write";
	errno = 0;
	if (fflush(of->stream))
		e = errno ? errno : EIO;
	else if (ferror(of->stream)) /* an earlier write failed; its errno is gone */
		e = EIO;
	else if (fsync(fileno(of->stream))) /* complete before it takes the name */
		e = errno, what = "fsync";
	if (fclose(of->stream) && !e)
		e = errno, what = "close";
	of->stream = NULL;
	if (!e) {
		if (invoker_enter(&of->who, NULL, of->path, NULL))
			e = EPERM, what = "cannot act as the sudo user";
		else
			e = put_in_place(of, &what);
		invoker_leave(&of->who);
	}
	if (e == EEXIST && !of->force)
		rc = outfile_fail(err, DIAG_EXIT_RUNTIME, of->label, of->path,
				  "appeared while the file was written; not replaced (use --force to "
				  "replace it)");
	else if (e == NOT_OURS)
		rc = outfile_fail(err, DIAG_EXIT_RUNTIME, of->label, of->path, "its temporary file %s "
				  "was replaced while it was written; not used", of->tmp);
	else if (e)
		rc = outfile_fail(err, DIAG_EXIT_RUNTIME, of->label, of->path, "%s: %s", what,
				  strerror(e));
	if (e && e != NOT_OURS)
		outfile_remove(of);
	outfile_free(of);
	return rc;
}

void outfile_discard(struct outfile *of)
{
	if (!of)
		return;
	fclose(of->stream);
	outfile_remove(of);
	outfile_free(of);
}
