/* approval.h — the approvals lock (recipes/approved.lock): which recipes are approved for
 * production mode, pinned by the SHA-256 of every file and BPF object they use.
 *
 * Owns: computing what a recipe uses (recipe file, Lua snippet, every shared Lua library — as
 * read once into memory —, the compiled BPF objects built into this binary, the engine version), the lock's text format
 * (parse, strict, errors "LOCK:LINE: message"; write, canonical), updating an entry, and
 * comparing an entry with what is on disk now.
 * Must not: decide policy (production or not), print, or run anything.
 *
 * Format (LF endings, blocks sorted by name, lines of a block in fixed order):
 *
 *   # diagnose approved.lock ...            comments and blank lines are ignored
 *   [recipe high-cpu]
 *   engine = 0.1.0
 *   approved_by = alice
 *   approved_at = 2026-11-29T11:00:00Z
 *   file lua/high-cpu.lua sha256=<64 hex>   paths relative to the directory holding recipes/
 *   file lua/lib/diag.lua sha256=<64 hex>
 *   file recipes/high-cpu.yaml sha256=<64 hex>
 *   bpf cpu_profile sha256=<64 hex>         the ELF bytes built into the binary
 *   [end]                                   last line: a truncated lock is detected
 */
#ifndef DIAG_APPROVAL_H
#define DIAG_APPROVAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "plan/plan.h"
#include "recipe/recipe.h"
#include "common/sha256.h"
#include "common/util.h"

#define APPROVAL_LOCK_NAME "approved.lock"

enum approval_item_kind { APPROVAL_FILE, APPROVAL_BPF };

struct approval_item {
	enum approval_item_kind kind;
	char *name;                 /* relative path (file) or probe object name (bpf) */
	char sha256[SHA256_HEX_LEN]; /* "" when the file could not be read (computed entries only) */
	char *error;                /* computed entries: why sha256 is empty; NULL otherwise */
};

struct approval_entry {
	char *recipe;      /* recipe name */
	char *engine;      /* engine version at approval */
	char *approved_by;
	char *approved_at; /* YYYY-MM-DDTHH:MM:SSZ */
	struct approval_item *items; /* sorted: files by path, then bpf by name */
	size_t n_items;
	unsigned line;     /* line of the [recipe] header in the lock, 0 for computed entries */
};

struct approval_lock {
	char *path;
	struct approval_entry *entries; /* sorted by recipe name */
	size_t n;
};

/* Parses lock text (len bytes, need not end in NUL); name is used in messages. Errors: -1 with
 * err->code DIAG_EXIT_USAGE and "NAME:LINE: message". */
int approval_lock_parse(const char *name, const char *text, size_t len, struct approval_lock **out,
			struct diag_err *err);
/* Reads (once, size-capped, no symlink; with trusted, production's ownership checks) and parses
 * a lock file. A missing file is an error too (message says so), unless missing_ok: then *out is
 * an empty lock. */
int approval_lock_read(const char *path, bool missing_ok, bool trusted, struct approval_lock **out,
		       struct diag_err *err);
/* The canonical text (caller frees). */
char *approval_lock_format(const struct approval_lock *lock);
/* Writes atomically (a mkstemp temporary file beside it, mode 0644, fsync, rename); refuses
 * (DIAG_EXIT_USAGE) a lock with an entry approval_entry_problem rejects, writing nothing. */
int approval_lock_write(const struct approval_lock *lock, const char *path, struct diag_err *err);
void approval_lock_free(struct approval_lock *lock);
const struct approval_entry *approval_lock_find(const struct approval_lock *lock, const char *name);

/* The lock that governs a recipe file: approved.lock in the recipe's directory. */
void approval_lock_path_for(const char *recipe_path, char *out, size_t len);

/* What the recipe uses, as an entry (approved_by/approved_at left NULL): the hashes of the bytes
 * in src (read once; the same bytes the run parses and executes), named as src names them
 * (relative to the directory holding recipes/ and lua/), and of the BPF objects the plan loads. */
void approval_compute(const struct recipe_sources *src, const struct plan *plan,
		      struct approval_entry *out);
void approval_entry_free(struct approval_entry *e);

/* Differences between an approved entry and the computed one, one line each ("FILE: sha256
 * approved 1a2b3c4d5e6f, now 9f8e7d6c5b4a"), joined with sep into a malloc'ed string; NULL when
 * they match. */
char *approval_diff(const struct approval_entry *locked, const struct approval_entry *now,
		    const char *sep);

/* Puts `now` into the lock as NAME's entry (takes ownership of its contents). When the existing
 * entry has the same engine and hashes, it is kept unchanged (so approving twice gives the same
 * file) and 0 is returned; else the entry is replaced or added with approved_by/at and 1 is
 * returned. */
int approval_lock_set(struct approval_lock *lock, struct approval_entry *now, const char *by,
		      const char *at);

/* Checks a loaded recipe against the lock in its recipes directory (read with production's
 * ownership checks when trusted). Returns 0 when approved and matching; -1 with err
 * (DIAG_EXIT_REFUSED) saying what did not match and how to get it approved. A lock that is
 * missing, malformed or untrusted refuses too. */
int approval_check(const struct bundle *b, bool trusted, struct diag_err *err);

/* Whether the lock can hold the entry as it is (the parser's own rules: recipe name, engine,
 * approver, date, each file path, BPF name and hash). Returns 0, else -1 with why in buf
 * ("file name \"lua/lib/a b.lua\" cannot go in the approvals lock (allowed: ...)"). The writer
 * refuses such an entry; `approve` checks before it writes anything. */
int approval_entry_problem(const struct approval_entry *e, char *buf, size_t len);

/* The first "cannot read" error of a computed entry, NULL when every file was read. */
const char *approval_entry_error(const struct approval_entry *e);

/* `diagnose approve`: lints every recipe file (as `diagnose lint` does), then records each in
 * its lock (lock_path, or approved.lock next to the recipe) approved by `by` now (UTC). Nothing
 * is approved when any recipe has a problem (printed on stderr, one line each). Prints one line
 * per recipe on out. */
int approval_approve(char *const *paths, size_t n, const char *lock_path, const char *by,
		     FILE *out, struct diag_err *err);
/* `diagnose verify`: checks every entry of the lock against the files and this binary, prints
 * what changed on out. Returns the number of changed entries, -1 (err set) when the lock is
 * missing or malformed. */
int approval_verify(const char *lock_path, FILE *out, struct diag_err *err);
/* For `diagnose list`: a short status of a recipe file against its lock in buf. Returns 0
 * approved and matching, 1 not approved, 2 approved but changed, -1 invalid recipe or lock. */
int approval_status(const char *recipe_path, char *buf, size_t len);

/* SYMPTOM is a path to a recipe file rather than a name (refused in production). */
bool approval_is_adhoc(const char *symptom);

#endif
