/* procset.h — a set of target processes as one run uses it: the kernel's copy of their tgids
 * (the map every probe's diag_targets reuses, bpf/diag_bpf.h), kept in step with the target's
 * scans, and a symbolizer per process for their user stacks.
 *
 * Owns: the map's fd and the symbolizers (one per process covered, snapshotted when first seen
 * and again at the end of the collection while the process lives).
 * Must not: decide which processes belong (target.c scans), or load programs.
 */
#ifndef DIAG_PROCSET_H
#define DIAG_PROCSET_H

#include <stdbool.h>

#include "target.h"
#include "util.h"

struct usyms;

/* Processes of a set given a symbolizer, in the order the set first covered them: each holds
 * the symbol tables of the files it maps (nothing is shared between processes yet). */
#define PROCSET_MAX_SYMBOLIZED 64

struct procset {
	struct target *target; /* the plan's; its procs[] and in_kernel flags are updated here */
	int map_fd;
	struct usyms **usyms;  /* parallel to target->procs (grows with it); NULL past the cap */
	size_t n_usyms;
	size_t unsymbolized;   /* processes past PROCSET_MAX_SYMBOLIZED: their frames stay addresses */
};

/* Creates the map and copies the current members into it. */
int procset_open(struct procset *ps, struct target *t, struct diag_err *err);
/* Rescans the target and updates the map: new processes in, gone ones out. Returns how many
 * processes are alive. */
size_t procset_refresh(struct procset *ps);
/* Snapshots the maps of every live process again (call once, at the end of a collection). */
void procset_snapshot_all(struct procset *ps);
/* The symbolizer of process tgid, or NULL when the set never covered it. */
struct usyms *procset_usyms(const struct procset *ps, int tgid);
void procset_close(struct procset *ps);

#endif
