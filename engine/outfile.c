/* outfile.c — output files created safely on behalf of the invoking user (see outfile.h).
 *
 * Owns: the open file, its temporary name under --force, and the cleanup of what it created.
 * Must not: print, follow a symbolic link at the target path, write into an existing file (it is
 * replaced by rename(2), so a hard link elsewhere keeps its content), or leave a partial file
 * behind on failure.
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
 *   the user.
 * - Without --force the file is created under its final name (O_EXCL) at once, so that an
 *   existing file is refused before a collection window, not after it.
 * - Removal on failure checks that the path still names the inode we created.
 */
#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
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
	char *path;     /* the target */
	char *tmp_path; /* --force: the file being written, renamed over path at close; else NULL */
	dev_t dev;      /* identity of the file we created, for removal on failure */
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

/* Removes the file we created, if its name still leads to it. */
static void outfile_remove(const struct outfile *of)
{
	const char *name = of->tmp_path ? of->tmp_path : of->path;
	struct stat st;
	if (invoker_enter(&of->who, NULL, name, NULL))
		return;
	if (!lstat(name, &st) && st.st_dev == of->dev && st.st_ino == of->ino)
		unlink(name);
	invoker_leave(&of->who);
}

static void outfile_free(struct outfile *of)
{
	free(of->label);
	free(of->path);
	free(of->tmp_path);
	free(of);
}

/* Creates path itself, refusing anything already there. as_user: what to add to a system
 * error when the check was made with the sudo user's rights. */
static int create_exclusive(const char *label, const char *path, const char *as_user,
			    struct diag_err *err)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0600);
	if (fd >= 0)
		return fd;
	int e = errno;
	struct stat st;
	if (e == EEXIST && !lstat(path, &st)) {
		const char *kind = refused_kind(st.st_mode);
		if (kind)
			return outfile_fail(err, DIAG_EXIT_USAGE, label, path, "%s", kind);
		return outfile_fail(err, DIAG_EXIT_USAGE, label, path,
				    "exists%s; use --force to overwrite",
				    S_ISLNK(st.st_mode) ? " (a symbolic link, never followed)" : "");
	}
	return outfile_fail(err, DIAG_EXIT_USAGE, label, path, "%s%s", strerror(e), as_user);
}

/* Creates a temporary file next to path (same directory, so rename(2) can replace path), after
 * checking that what is at path may be replaced. */
static int create_replacement(const char *label, const char *path, const char *as_user,
			      char **tmp_path, struct diag_err *err)
{
	struct stat st;
	if (!lstat(path, &st)) {
		const char *kind = refused_kind(st.st_mode);
		if (kind)
			return outfile_fail(err, DIAG_EXIT_USAGE, label, path, "%s", kind);
	} else if (errno != ENOENT) {
		return outfile_fail(err, DIAG_EXIT_USAGE, label, path, "%s%s", strerror(errno),
				    as_user);
	}
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	if (!*base || !strcmp(base, ".") || !strcmp(base, ".."))
		return outfile_fail(err, DIAG_EXIT_USAGE, label, path, "is a directory");
	int dirlen = slash ? (int)(slash - path + 1) : 0;
	/* mkstemp: O_CREAT|O_EXCL (a symlink planted at the name is not followed), mode 0600. */
	char *tmp = xasprintf("%.*s.%.64s.XXXXXX", dirlen, path, base);
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		free(tmp);
		return outfile_fail(err, DIAG_EXIT_USAGE, label, path,
				    "cannot create a temporary file next to it: %s%s", strerror(e),
				    as_user);
	}
	*tmp_path = tmp;
	return fd;
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
	of->who = invoker_get();
	of->label = xstrdup(label ? label : "");
	of->path = xstrdup(path);
	if (invoker_enter(&of->who, label, path, err)) {
		outfile_free(of);
		return NULL;
	}
	char as_user[96] = "";
	if (of->who.active)
		snprintf(as_user, sizeof(as_user),
			 " (checked with the rights of the sudo user, uid %u)", (unsigned)of->who.uid);
	int fd = force ? create_replacement(label, path, as_user, &of->tmp_path, err)
		       : create_exclusive(label, path, as_user, err);
	invoker_leave(&of->who);
	if (fd < 0) {
		outfile_free(of);
		return NULL;
	}
	struct stat st;
	if (fstat(fd, &st)) {
		outfile_fail(err, DIAG_EXIT_RUNTIME, label, path, "fstat: %s", strerror(errno));
		close(fd);
		outfile_free(of); /* identity unknown: nothing removed */
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
	else if (of->tmp_path && fsync(fileno(of->stream))) /* complete before it replaces */
		e = errno, what = "fsync";
	if (fclose(of->stream) && !e)
		e = errno, what = "close";
	of->stream = NULL;
	if (!e && of->tmp_path) {
		if (invoker_enter(&of->who, NULL, of->path, NULL))
			e = EPERM, what = "cannot act as the sudo user";
		else if (rename(of->tmp_path, of->path))
			e = errno, what = of->who.active ? "rename, as the sudo user" : "rename";
		invoker_leave(&of->who);
	}
	if (e) {
		rc = outfile_fail(err, DIAG_EXIT_RUNTIME, of->label, of->path, "%s: %s", what,
				  strerror(e));
		outfile_remove(of);
	}
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
