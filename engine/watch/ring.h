/* ring.h — `diagnose watch`'s history on disk: the last runs' reports in a bounded ring under the
 * state directory, and its index.
 *
 * Owns: the state directory (created 0700 when missing; refused when it is not a directory owned
 * by this user, or when others may write to it), its runs/ directory with one directory per run
 * (runs/NNNNNN-RECIPE: what the run wrote there), index.json (the runs kept, oldest first: seq,
 * time, recipe, exit code, worst verdict, bytes, the run it followed), the limits (count and
 * bytes: the oldest runs are removed first; a run is not started when the file system is nearly
 * full), and the cleanup of a run cut short before it was indexed. Every path below the state
 * directory is reached from its descriptor, never through a symbolic link.
 * Must not: run anything, decide what a run writes, or read a report's contents (the index holds
 * what watch.c hands it).
 */
#ifndef DIAG_RING_H
#define DIAG_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/util.h"
#include "common/value.h"

struct ring_entry {
	uint64_t seq;        /* 1, 2, ... over the state directory's life */
	int64_t time;        /* start, seconds since the epoch */
	char recipe[64];
	char dir[96];        /* runs/NNNNNN-RECIPE, relative to the state directory */
	int exit_code;
	char worst_severity[16]; /* "" when the run gave no verdict */
	char worst_id[64];
	uint64_t bytes;      /* what its files hold */
	uint64_t followed;   /* the seq of the run whose verdict it followed up; 0: scheduled */
	char follow_verdict[64];
};

struct ring {
	int dirfd, runsfd;   /* the state directory and its runs/ */
	char *path;
	struct ring_entry *entries; /* oldest first */
	size_t n, cap;
	uint64_t next_seq;
	size_t max_runs;
	uint64_t max_bytes;
};

/* Opens (creating it 0700 when missing: its parent must exist) the state directory at path and
 * reads its index; runs/ directories the index does not know (a run cut short) are removed.
 * DIAG_EXIT_USAGE with err for a path that is not a safe directory. */
int ring_open(struct ring *r, const char *path, size_t max_runs, uint64_t max_bytes,
	      struct diag_err *err);
void ring_close(struct ring *r);

/* Whether the file system of the state directory has room for another run (at least 5% or
 * 256 MiB free, whichever is less). */
bool ring_has_room(const struct ring *r);

/* A new run's directory (runs/NNNNNN-RECIPE, 0700): its descriptor (O_PATH-free, O_DIRECTORY),
 * or -1 with err. *e is filled with seq, time, recipe and dir; the caller completes it. */
int ring_begin(struct ring *r, const char *recipe, struct ring_entry *e, struct diag_err *err);

/* A run that never started (its child could not be made): its directory is removed, not left
 * for the next ring_open to find. */
void ring_abandon(struct ring *r, const struct ring_entry *e);

/* The run is over: empty files in its directory are removed, its bytes counted, it joins the
 * index, the oldest runs are removed while over a limit (never the one just added), and the index
 * is rewritten (atomically: a temporary file renamed over it). */
int ring_commit(struct ring *r, struct ring_entry *e, struct diag_err *err);

/* The index as JSON (what index.json holds), for tests and `watch`'s log. */
struct value *ring_index_value(const struct ring *r);

#endif
