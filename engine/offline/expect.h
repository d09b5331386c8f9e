/* expect.h — what a recorded incident must still give when replayed: the NAME.expect file beside
 * each recorded incident (RECIPE/NAME.json), read by `diagnose test` (incidents.h).
 *
 * Owns: the .expect format — reading it (bounded, one-line "FILE:LINE: what" errors) — and
 * comparing a replay's outcome with it (the differences as lines a recipe author can act on).
 * Must not: run anything, read the report, or print.
 *
 * The format: one statement a line; blank lines and lines starting with '#' are ignored; words
 * are separated by blanks (spaces or tabs); trailing blanks are ignored. At most 64 KiB, lines of
 * at most 1024 bytes, no control characters but tabs.
 *
 *   # latency/lock.json: lock_contention 4 — a mutex held by compact_state()
 *   exit 4
 *   verdict lock-contention warning
 *   ruled_out cpu-starvation
 *   evidence-contains lock-contention compact_state
 *
 *   exit N                    required, once: the exit code the replay gives (0, 4 or 5 for the
 *                             worst verdict's severity; 1 when the Lua fails).
 *   verdict ID SEVERITY       every verdict, in the report's order (worst first): the replay must
 *                             give exactly these, no more, no fewer. None: no verdict expected.
 *   ruled_out ID              optional, any number: the replay's ruled_out has an item with this
 *                             id (others may be there too).
 *   evidence-contains ID TEXT optional, any number: verdict ID's title or one of its evidence
 *                             lines contains TEXT (the rest of the line, blanks inside kept;
 *                             compared byte for byte).
 * An ID is 1 to 128 printable ASCII characters without blanks; SEVERITY one of ok, info,
 * warning, critical.
 */
#ifndef DIAG_EXPECT_H
#define DIAG_EXPECT_H

#include <stddef.h>

#include "common/util.h"
#include "common/value.h"

#define EXPECT_MAX_BYTES (64u << 10)
#define EXPECT_MAX_LINE 1024
#define EXPECT_MAX_ID 128

struct expect_verdict {
	char *id, *severity;
};

struct expect_contains {
	char *id, *text;
};

struct expectations {
	int exit_code;
	struct expect_verdict *verdicts;
	size_t n_verdicts;
	char **ruled_out;
	size_t n_ruled_out;
	struct expect_contains *contains;
	size_t n_contains;
};

/* Parses len bytes of text read from path (named in errors). 0, or -1 with err
 * (DIAG_EXIT_USAGE, "PATH:LINE: what", or "PATH: what" for the file as a whole) and *out empty. */
int expect_parse(const char *path, const char *text, size_t len, struct expectations *out,
		 struct diag_err *err);
/* Reads path (no symlink, a regular file of at most EXPECT_MAX_BYTES: source.h) and parses it. */
int expect_read(const char *path, struct expectations *out, struct diag_err *err);
void expect_free(struct expectations *e);

/* How a replay went against e: exit_code the replay's; report the replayed report, or NULL when
 * it failed with error (its message). Returns an array of strings (caller frees), one line each,
 * empty when everything matched. The lines quote what the report says as is (the caller escapes
 * them for a terminal); a verdict list that differs comes as "- verdict ID SEV" (expected, not
 * given), "+ verdict ID SEV" (given, not expected) and "  verdict ID SEV" (both) lines. */
struct value *expect_compare(const struct expectations *e, int exit_code,
			     const struct value *report, const char *error);

#endif
