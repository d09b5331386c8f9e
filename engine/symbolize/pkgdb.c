/* pkgdb.c — the package that owns a file, from dpkg's database of our root (see pkgdb.h).
 *
 * Owns: reading ADMINDIR/info/NAME.list and ADMINDIR/status, bounded, and matching paths in them.
 * Must not: read the target's files (the caller vouches that a path in our root is the mapped
 * file), run a package manager, print, hold state, follow a symlink in the database, or return a
 * name or version outside Debian's syntax.
 */
#include "symbolize/pkgdb.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"

/* A regular file (no symlink, FIFO or device) in directory dfd, whole, at most max bytes:
 * NUL-terminated, or NULL. *budget is what may still be read in all; it goes down. */
static char *read_bounded(int dfd, const char *name, size_t max, size_t *budget, size_t *len)
{
	int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return NULL;
	struct stat st;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size < 0 || (size_t)st.st_size > max ||
	    (size_t)st.st_size > *budget) {
		close(fd);
		return NULL;
	}
	size_t cap = (size_t)st.st_size;
	char *buf = xmalloc(cap + 1);
	size_t n = read_full(fd, buf, cap); /* a file that grew meanwhile: read to its size at the fstat */
	close(fd);
	buf[n] = '\0';
	*budget -= n;
	*len = n;
	return buf;
}

/* Debian's package name syntax: [a-z0-9][a-z0-9+.-]+. */
static bool valid_package(const char *s, size_t n)
{
	if (n < 2 || n >= PKGDB_NAME_MAX || !(islower((unsigned char)s[0]) || isdigit((unsigned char)s[0])))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!islower((unsigned char)s[i]) && !isdigit((unsigned char)s[i]) && !strchr("+.-", s[i]))
			return false;
	return true;
}

/* A version: [0-9A-Za-z.+~:-], starting with a digit. */
static bool valid_version(const char *s, size_t n)
{
	if (!n || n >= PKGDB_VERSION_MAX || !isdigit((unsigned char)s[0]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr(".+~:-", s[i]))
			return false;
	return true;
}

/* An architecture: [a-z0-9-]. */
static bool valid_arch(const char *s, size_t n)
{
	if (!n || n >= sizeof(((struct pkg_owner *)0)->arch))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!islower((unsigned char)s[i]) && !isdigit((unsigned char)s[i]) && s[i] != '-')
			return false;
	return true;
}

/* The merged-/usr twin of path: /usr/lib/x <-> /lib/x (lib*, bin, sbin); "" when none. */
static void usr_alias(const char *path, char *buf, size_t len)
{
	static const char *const dirs[] = { "/lib/", "/lib32/", "/lib64/", "/libx32/", "/bin/", "/sbin/" };
	buf[0] = '\0';
	for (size_t i = 0; i < ARRAY_LEN(dirs); i++) {
		size_t d = strlen(dirs[i]);
		if (!strncmp(path, "/usr", 4) && !strncmp(path + 4, dirs[i], d))
			snprintf(buf, len, "%s", path + 4);
		else if (!strncmp(path, dirs[i], d))
			snprintf(buf, len, "/usr%s", path);
	}
}

struct wanted {
	const char *path;
	char alias[4096];
	size_t len, alias_len;
	bool found;
};

/* The Version of package (of arch, or "all", when arch is set) in the status file text. */
static void status_version(char *text, const char *package, const char *arch, char *version,
			   size_t len)
{
	char *cursor = text;
	bool in = false, arch_ok = !*arch;
	const char *ver = NULL;
	size_t vlen = 0;
	for (;;) {
		char *line = cursor, *nl = cursor ? strchr(cursor, '\n') : NULL;
		size_t n = line ? (nl ? (size_t)(nl - line) : strlen(line)) : 0;
		if (!line || !n) { /* a stanza ends */
			if (in && arch_ok && ver && valid_version(ver, vlen)) {
				snprintf(version, len, "%.*s", (int)vlen, ver);
				return;
			}
			in = false;
			arch_ok = !*arch;
			ver = NULL;
			if (!line || !nl)
				return;
		} else if (!strncmp(line, "Package: ", 9)) {
			in = n - 9 == strlen(package) && !strncmp(line + 9, package, n - 9);
		} else if (!strncmp(line, "Architecture: ", 14)) {
			arch_ok = !*arch || (n - 14 == strlen(arch) && !strncmp(line + 14, arch, n - 14)) ||
				  (n - 14 == 3 && !strncmp(line + 14, "all", 3));
		} else if (!strncmp(line, "Version: ", 9)) {
			ver = line + 9;
			vlen = n - 9;
		}
		cursor = nl ? nl + 1 : NULL;
	}
}

int pkgdb_dpkg_owners(const char *admindir, const char *const *paths, size_t n,
		      struct pkg_owner *out)
{
	char dir[4096];
	snprintf(dir, sizeof(dir), "%s/info", admindir);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (dfd < 0)
		return -1;
	DIR *d = fdopendir(dfd);
	if (!d) {
		int e = errno;
		close(dfd);
		errno = e;
		return -1;
	}
	struct wanted *w = xcalloc(n ? n : 1, sizeof(*w));
	for (size_t i = 0; i < n; i++) {
		memset(&out[i], 0, sizeof(out[i]));
		w[i].path = paths[i];
		w[i].len = strlen(paths[i]);
		usr_alias(paths[i], w[i].alias, sizeof(w[i].alias));
		w[i].alias_len = strlen(w[i].alias);
	}
	size_t budget = PKGDB_MAX_TOTAL_BYTES, lists = 0, found = 0;
	struct dirent *e;
	while (found < n && lists < PKGDB_MAX_LISTS && (e = readdir(d))) {
		size_t nl = strlen(e->d_name);
		if (nl <= 5 || strcmp(e->d_name + nl - 5, ".list"))
			continue;
		lists++;
		/* "liblzma5:amd64.list" or "xz-utils.list" */
		const char *colon = memchr(e->d_name, ':', nl - 5);
		size_t plen = colon ? (size_t)(colon - e->d_name) : nl - 5;
		size_t alen = colon ? nl - 5 - plen - 1 : 0;
		if (!valid_package(e->d_name, plen) || (colon && !valid_arch(colon + 1, alen)))
			continue;
		size_t len;
		char *text = read_bounded(dfd, e->d_name, PKGDB_MAX_FILE_BYTES, &budget, &len);
		if (!text)
			continue;
		for (char *line = text, *end; line < text + len && found < n; line = end + 1) {
			end = strchr(line, '\n');
			if (!end)
				end = text + len;
			size_t ll = (size_t)(end - line);
			for (size_t i = 0; i < n; i++) {
				if (w[i].found ||
				    !((ll == w[i].len && !memcmp(line, w[i].path, ll)) ||
				      (w[i].alias_len && ll == w[i].alias_len && !memcmp(line, w[i].alias, ll))))
					continue;
				w[i].found = true;
				found++;
				snprintf(out[i].package, sizeof(out[i].package), "%.*s", (int)plen, e->d_name);
				snprintf(out[i].arch, sizeof(out[i].arch), "%.*s", (int)alen, colon ? colon + 1 : "");
			}
		}
		free(text);
	}
	closedir(d); /* closes dfd */
	if (found) {
		int afd = open(admindir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		size_t len, sbudget = PKGDB_MAX_FILE_BYTES * 2;
		char *status = afd >= 0 ? read_bounded(afd, "status", PKGDB_MAX_FILE_BYTES * 2, &sbudget, &len)
					: NULL;
		if (afd >= 0)
			close(afd);
		for (size_t i = 0; status && i < n; i++)
			if (out[i].package[0])
				status_version(status, out[i].package, out[i].arch, out[i].version,
					       sizeof(out[i].version));
		free(status);
	}
	free(w);
	return (int)found;
}

int pkgdb_dbgsym_name(const char *package, char *buf, size_t len)
{
	if (!package || !*package)
		return -1;
	int n = snprintf(buf, len, "%s-dbgsym", package);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

int pkgdb_build_id_path(const char *build_id, char *buf, size_t len)
{
	size_t n = build_id ? strlen(build_id) : 0;
	if (n < 4 || n % 2)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)build_id[i]))
			return -1;
	int w = snprintf(buf, len, "/usr/lib/debug/.build-id/%.2s/%s.debug", build_id, build_id + 2);
	return w < 0 || (size_t)w >= len ? -1 : 0;
}
