/* source.h — the bytes a run trusts, read once: a recipe file, its Lua snippet and the shared Lua
 * libraries, each opened once (no symlink at the last component, regular file, size cap), hashed
 * from the buffer, and then parsed, compared with the approvals lock and run from that same
 * buffer. Nothing reads these files again by path, so a file replaced during a run changes
 * nothing.
 *
 * Owns: reading one file safely (source_read), the trust checks of production mode (the file and
 * every directory above it root-owned, not group- or world-writable; a root-owned sticky
 * directory such as /tmp is allowed above), and the bundle of one recipe (recipe, snippet, libs:
 * the lib list is fixed when the bundle is read).
 * Must not: parse YAML or Lua, decide whether a recipe is approved, or print.
 */
#ifndef DIAG_SOURCE_H
#define DIAG_SOURCE_H

#include <stdbool.h>
#include <stddef.h>

#include "common/sha256.h"
#include "common/util.h"

#define SOURCE_MAX_BYTES (1u << 20) /* recipes, snippets, libraries and locks: 1 MiB each */
#define SOURCE_MAX_LIBS 64

/* One file as read. data holds len bytes plus a terminating NUL. */
struct source_file {
	char *path;  /* the path it was opened by (for messages) */
	char *name;  /* its name in the approvals lock, "recipes/x.yaml", "lua/lib/diag.lua"; may be NULL */
	char *data;
	size_t len;
	char sha256[SHA256_HEX_LEN];
};

/* Reads path once. Refuses (DIAG_EXIT_USAGE, "PATH: why") a symlink at the last component, a
 * FIFO, device or directory, a file on a kernel pseudo file system (procfs, sysfs, debugfs,
 * tracefs, securityfs, cgroup, configfs, efivarfs, bpffs; DIAG_EXIT_REFUSED when trusted), and a
 * file over max_bytes (0 = SOURCE_MAX_BYTES) — without blocking on a FIFO. With trusted set, also refuses (DIAG_EXIT_REFUSED) a file that is not owned by root
 * or is group/world-writable, or below a directory that is. */
int source_read(const char *path, bool trusted, size_t max_bytes, struct source_file *out,
		struct diag_err *err);
void source_free(struct source_file *f);

/* Production's check of a directory and every directory above it: owned by root, not group- or
 * world-writable (a root-owned directory with the sticky bit may be world-writable). Returns -1
 * (DIAG_EXIT_REFUSED, naming the directory and what is wrong). */
int source_check_trusted_dir(const char *dir, struct diag_err *err);

/* A recipe and everything its verdict runs, read once. root is the directory that holds recipes/
 * and lua/ (the recipe's directory's parent); lua is root/lua/<snippet>, libs are root/lua/lib/
 * *.lua in name order. */
struct recipe_sources {
	char *root;
	struct source_file recipe, lua;
	struct source_file *libs;
	size_t n_libs;
};

/* Reads the recipe file (call first: its bytes tell which snippet to read). */
int sources_read_recipe(struct recipe_sources *s, const char *recipe_path, bool trusted,
			struct diag_err *err);
/* Reads the snippet (as written in the recipe's `lua:` field) and the libraries. */
int sources_read_lua(struct recipe_sources *s, const char *lua_name, bool trusted,
		     struct diag_err *err);
void sources_free(struct recipe_sources *s);

#endif
