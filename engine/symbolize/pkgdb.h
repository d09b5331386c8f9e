/* pkgdb.h — which installed package owns a file, and the package that carries its debug symbols:
 * what a report names when a stripped file's code shows up as "module+0xOFF".
 *
 * Owns: the lookup of paths in dpkg's database of our own root (ADMINDIR/info/NAME.list, the owner's
 * version and architecture from ADMINDIR/status), with merged-/usr aliases (/lib/x.so is
 * /usr/lib/x.so); the Debian name of the debug symbols package (PACKAGE-dbgsym); the path of a
 * build-id's separate debug file.
 * Must not: look at the target's root (a path is looked up only when the caller knows that the
 * file at it in our root is the mapped file), run dpkg or rpm, use the network, print, hold state,
 * or read without bounds: at most PKGDB_MAX_LISTS list files, each at most PKGDB_MAX_FILE_BYTES,
 * PKGDB_MAX_TOTAL_BYTES in all; names and versions that are not Debian's syntax are not returned
 * (they end up in commands a reader may paste).
 */
#ifndef DIAG_PKGDB_H
#define DIAG_PKGDB_H

#include <stddef.h>

#define PKGDB_DPKG_ADMINDIR "/var/lib/dpkg"
#define PKGDB_MAX_LISTS 65536
#define PKGDB_MAX_FILE_BYTES ((size_t)64 << 20)
#define PKGDB_MAX_TOTAL_BYTES ((size_t)512 << 20)

#define PKGDB_NAME_MAX 128
#define PKGDB_VERSION_MAX 128

/* One path's owner; package[0] == '\0' when none was found. */
struct pkg_owner {
	char package[PKGDB_NAME_MAX];
	char arch[32];                    /* "" when the list file names none */
	char version[PKGDB_VERSION_MAX];  /* "" when the status file does not say */
};

/* The owners of n absolute paths in the dpkg database at admindir (PKGDB_DPKG_ADMINDIR), in one
 * pass over its list files, into out[0..n). Returns how many were found, or -1 when there is no
 * readable database there (errno set). */
int pkgdb_dpkg_owners(const char *admindir, const char *const *paths, size_t n,
		      struct pkg_owner *out);

/* The debug symbols package of a Debian binary package: "PACKAGE-dbgsym" into buf. -1 when it
 * does not fit or package is empty. */
int pkgdb_dbgsym_name(const char *package, char *buf, size_t len);

/* Where a separate debug file is found by build-id (hex, at least 2 bytes):
 * /usr/lib/debug/.build-id/XX/REST.debug into buf. -1 when build_id is too short or not hex. */
int pkgdb_build_id_path(const char *build_id, char *buf, size_t len);

#endif
