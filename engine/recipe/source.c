/* source.c — recipe, snippet and library bytes read once, and production's trust checks.
 * Contracts: source.h.
 */
#include "recipe/source.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <linux/magic.h>
#ifndef CONFIGFS_MAGIC
#define CONFIGFS_MAGIC 0x62656570 /* fs/configfs/mount.c; not in every uapi linux/magic.h */
#endif

/* Owned by root and writable by nobody else. A sticky root-owned directory may be world-writable
 * (/tmp): others cannot rename or remove what root owns in it. */
static const char *untrusted_why(const struct stat *st, bool is_dir)
{
	if (st->st_uid != 0)
		return "not owned by root";
	if ((st->st_mode & S_IWOTH) && !(is_dir && (st->st_mode & S_ISVTX)))
		return "world-writable";
	if ((st->st_mode & S_IWGRP) && !(is_dir && (st->st_mode & S_ISVTX)))
		return "group-writable";
	return NULL;
}

int source_check_trusted_dir(const char *dir, struct diag_err *err)
{
	char real[PATH_MAX];
	if (!realpath(dir, real))
		return diag_fail(err, DIAG_EXIT_REFUSED, "%s: %s", dir, strerror(errno));
	/* Walk from the directory itself up to /: each one must be root's alone. */
	for (;;) {
		struct stat st;
		if (lstat(real, &st))
			return diag_fail(err, DIAG_EXIT_REFUSED, "%s: %s", real, strerror(errno));
		if (!S_ISDIR(st.st_mode))
			return diag_fail(err, DIAG_EXIT_REFUSED, "%s: not a directory", real);
		const char *why = untrusted_why(&st, true);
		if (why)
			return diag_fail(err, DIAG_EXIT_REFUSED,
					 "%s: directory is %s (mode %04o, uid %u): production mode trusts "
					 "only root-owned files that no one else can change",
					 real, why, (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid);
		char *slash = strrchr(real, '/');
		if (!slash || slash == real) {
			if (strcmp(real, "/") == 0)
				return 0;
			real[1] = '\0'; /* "/x" -> "/" */
			continue;
		}
		*slash = '\0';
	}
}

/* Files the kernel writes from some process's state (procfs: /proc/self/environ is root's, mode
 * 0400, and says whatever the caller's environment says): their owner and mode say nothing about
 * who chose their bytes. NULL for any other file system. */
static const char *pseudo_fs(int fd)
{
	static const struct {
		unsigned long magic;
		const char *name;
	} fs[] = {
		{ PROC_SUPER_MAGIC, "procfs" },      { SYSFS_MAGIC, "sysfs" },
		{ DEBUGFS_MAGIC, "debugfs" },        { TRACEFS_MAGIC, "tracefs" },
		{ SECURITYFS_MAGIC, "securityfs" },  { CGROUP_SUPER_MAGIC, "cgroupfs" },
		{ CGROUP2_SUPER_MAGIC, "cgroup2fs" }, { CONFIGFS_MAGIC, "configfs" },
		{ EFIVARFS_MAGIC, "efivarfs" },      { BPF_FS_MAGIC, "bpffs" },
	};
	struct statfs sf;
	if (fstatfs(fd, &sf))
		return NULL;
	for (size_t i = 0; i < ARRAY_LEN(fs); i++)
		if ((unsigned long)sf.f_type == fs[i].magic)
			return fs[i].name;
	return NULL;
}

int source_read(const char *path, bool trusted, size_t max_bytes, struct source_file *out,
		struct diag_err *err)
{
	memset(out, 0, sizeof(*out));
	if (!max_bytes)
		max_bytes = SOURCE_MAX_BYTES;
	/* O_NONBLOCK: opening a FIFO for reading must not wait for a writer. */
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0 && errno == ELOOP)
		return diag_fail(err, trusted ? DIAG_EXIT_REFUSED : DIAG_EXIT_USAGE,
				 "cannot read %s: a symbolic link (not followed)", path);
	if (fd < 0)
		return diag_fail(err, DIAG_EXIT_USAGE, "cannot read %s: %s", path, strerror(errno));
	struct stat st;
	int rc = 0;
	const char *pseudo = pseudo_fs(fd);
	if (fstat(fd, &st))
		rc = diag_fail(err, DIAG_EXIT_USAGE, "%s: %s", path, strerror(errno));
	else if (pseudo)
		rc = diag_fail(err, trusted ? DIAG_EXIT_REFUSED : DIAG_EXIT_USAGE,
			       "%s: on %s, a kernel pseudo file system: not read (its owner and mode say "
			       "nothing about who chose what it says)", path, pseudo);
	else if (!S_ISREG(st.st_mode))
		rc = diag_fail(err, DIAG_EXIT_USAGE, "%s: not a regular file", path);
	else if ((uint64_t)st.st_size > max_bytes)
		rc = diag_fail(err, DIAG_EXIT_USAGE, "%s: %lld bytes, over the limit of %zu", path,
			       (long long)st.st_size, max_bytes);
	else if (trusted) {
		const char *why = untrusted_why(&st, false);
		if (why)
			rc = diag_fail(err, DIAG_EXIT_REFUSED,
				       "%s: file is %s (mode %04o, uid %u): production mode trusts only "
				       "root-owned files that no one else can change",
				       path, why, (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid);
		else {
			char dir[PATH_MAX];
			snprintf(dir, sizeof(dir), "%s", path);
			char *slash = strrchr(dir, '/');
			if (!slash)
				snprintf(dir, sizeof(dir), ".");
			else if (slash == dir)
				dir[1] = '\0';
			else
				*slash = '\0';
			rc = source_check_trusted_dir(dir, err);
		}
	}
	if (rc) {
		close(fd);
		return -1;
	}
	/* The size may change between fstat and read: read at most max_bytes + 1 to notice. */
	size_t cap = (size_t)st.st_size + 1, len = 0;
	char *buf = xmalloc(cap + 1);
	for (;;) {
		if (len == cap) {
			if (cap > max_bytes)
				break;
			cap = cap * 2 > max_bytes + 1 ? max_bytes + 1 : cap * 2;
			buf = xrealloc(buf, cap + 1);
		}
		ssize_t n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = diag_fail(err, DIAG_EXIT_USAGE, "%s: %s", path, strerror(errno));
			break;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (rc == 0 && len > max_bytes)
		rc = diag_fail(err, DIAG_EXIT_USAGE, "%s: grew over the limit of %zu bytes while read", path,
			       max_bytes);
	if (rc) {
		free(buf);
		return -1;
	}
	buf[len] = '\0';
	out->path = xstrdup(path);
	out->data = buf;
	out->len = len;
	sha256_hex(buf, len, out->sha256);
	return 0;
}

void source_free(struct source_file *f)
{
	if (!f)
		return;
	free(f->path);
	free(f->name);
	free(f->data);
	memset(f, 0, sizeof(*f));
}

/* ---- one recipe's bundle ------------------------------------------------------------------ */

static void split_dir(const char *path, char *dir, size_t dlen, const char **base)
{
	const char *slash = strrchr(path, '/');
	if (!slash) {
		snprintf(dir, dlen, ".");
		*base = path;
	} else {
		snprintf(dir, dlen, "%.*s", slash == path ? 1 : (int)(slash - path), path);
		*base = slash + 1;
	}
}

int sources_read_recipe(struct recipe_sources *s, const char *recipe_path, bool trusted,
			struct diag_err *err)
{
	memset(s, 0, sizeof(*s));
	char dir[PATH_MAX], real[PATH_MAX];
	const char *base;
	split_dir(recipe_path, dir, sizeof(dir), &base);
	if (!realpath(dir, real))
		return diag_fail(err, DIAG_EXIT_USAGE, "%s: %s", dir, strerror(errno));
	if (source_read(recipe_path, trusted, 0, &s->recipe, err))
		return -1;
	/* root = the recipes directory's parent; names in the lock are relative to it. */
	char *slash = strrchr(real, '/');
	const char *recipes_base = slash ? slash + 1 : real;
	s->recipe.name = xasprintf("%s/%s", *recipes_base ? recipes_base : ".", base);
	if (slash && slash != real)
		*slash = '\0';
	else
		snprintf(real, sizeof(real), "/");
	s->root = xstrdup(real);
	return 0;
}

static int is_lua_lib(const struct dirent *d)
{
	size_t n = strlen(d->d_name);
	return d->d_name[0] != '.' && n > 4 && strcmp(d->d_name + n - 4, ".lua") == 0;
}

int sources_read_lua(struct recipe_sources *s, const char *lua_name, bool trusted,
		     struct diag_err *err)
{
	if (strstr(lua_name, "..") || lua_name[0] == '/')
		return diag_fail(err, DIAG_EXIT_USAGE, "%s: lua: \"%s\" must be a file name below lua/",
				 s->recipe.path, lua_name);
	char *path = xasprintf("%s/lua/%s", s->root, lua_name);
	int rc = source_read(path, trusted, 0, &s->lua, err);
	free(path);
	if (rc)
		return -1;
	s->lua.name = xasprintf("lua/%s", lua_name);

	char *lib_dir = xasprintf("%s/lua/lib", s->root);
	struct dirent **ents;
	int n = scandir(lib_dir, &ents, is_lua_lib, alphasort);
	if (n < 0) {
		rc = errno == ENOENT ? 0
				     : diag_fail(err, DIAG_EXIT_USAGE, "cannot read Lua library directory %s: %s",
						 lib_dir, strerror(errno));
		free(lib_dir);
		return rc;
	}
	if (n > SOURCE_MAX_LIBS)
		rc = diag_fail(err, DIAG_EXIT_USAGE, "%s: %d libraries, over the limit of %d", lib_dir, n,
			       SOURCE_MAX_LIBS);
	if (rc == 0 && trusted)
		rc = source_check_trusted_dir(lib_dir, err);
	s->libs = xcalloc(n ? (size_t)n : 1, sizeof(*s->libs));
	for (int i = 0; i < n; i++) {
		if (rc == 0) {
			char *p = xasprintf("%s/%s", lib_dir, ents[i]->d_name);
			rc = source_read(p, trusted, 0, &s->libs[s->n_libs], err);
			free(p);
			if (rc == 0)
				s->libs[s->n_libs++].name = xasprintf("lua/lib/%s", ents[i]->d_name);
		}
		free(ents[i]);
	}
	free(ents);
	free(lib_dir);
	return rc;
}

void sources_free(struct recipe_sources *s)
{
	if (!s)
		return;
	source_free(&s->recipe);
	source_free(&s->lua);
	for (size_t i = 0; i < s->n_libs; i++)
		source_free(&s->libs[i]);
	free(s->libs);
	free(s->root);
	memset(s, 0, sizeof(*s));
}
