/* procset.h — a set of target processes as one run uses it: the kernel's copy of their tgids
 * (the map every probe's diag_targets reuses, engine/abi/diag_bpf.h), kept in step with the target's
 * scans, and a symbolizer per process for their user stacks.
 *
 * Owns: the map's fd, the fork follower (engine/session/procset.bpf.c: a member's new child joins the map at
 * fork, before the next scan; the scans then confirm it or drop it), and the symbolizers (one per
 * process covered, sharing one cache of ELF files, snapshotted when first seen and again at the
 * end of the collection while the process lives; a child that joined at fork and exec'd is
 * snapshotted at its exec notice and once more a few milliseconds later, when the dynamic loader
 * has mapped its libraries: short-lived programs are gone long before the next scan).
 * Must not: decide which processes belong (target.c scans), or load probes.
 */
#ifndef DIAG_PROCSET_H
#define DIAG_PROCSET_H

#include <linux/types.h>
#include <stdbool.h>
#include <stdint.h>

#include "target/target.h"
#include "common/util.h"

struct usyms;

/* Processes of a set given a symbolizer of their own, in the order the set first covered them
 * (a forked child that has not exec'd borrows its parent's): each holds its mappings, the ELF
 * files' symbol tables are shared. */
#define PROCSET_MAX_SYMBOLIZED 1024
/* How long after an exec notice the new program's mappings are read again. */
#define PROCSET_RESNAP_NS 3000000ull

struct procset_bpf;
struct ring_buffer;
struct elf_cache;

/* A child that joined at fork and exec'd a program of its own: its symbolizer, made at the
 * notice (by tgid: the latest one wins should the pid come back). */
struct procset_execd {
	__u32 tgid;
	struct usyms *usyms;
};
/* A symbolizer to snapshot again at `due` (mono_ns), in notice order. */
struct procset_resnap {
	__u32 tgid;
	uint64_t due;
};

/* Children that joined at fork and left the map, with the parent whose symbols serve for them. */
#define PROCSET_MAX_LINEAGE 4096
struct procset_lineage {
	__u32 child, parent;
};

struct procset {
	struct target *target; /* the plan's; its procs[] and in_kernel flags are updated here */
	int map_fd;
	struct procset_bpf *follower; /* NULL until procset_follow_forks, or when it failed */
	const char *core_btf;         /* given: the BTF to relocate against (core_btf.h; NULL: the kernel's) */
	struct ring_buffer *notices;  /* the follower's exec notices (NULL without it) */
	struct elf_cache *files;      /* shared by every symbolizer below */
	struct procset_execd *execd;
	size_t n_execd;
	struct procset_resnap *resnap; /* a queue: [resnap_head, n_resnap) pending */
	size_t n_resnap, resnap_head;
	__u32 *strays;         /* tgids the kernel added at fork that the last scan did not find */
	size_t n_strays;
	uint64_t joined_seen;  /* joins at fork when the map was last walked */
	struct procset_lineage *lineage;
	size_t n_lineage;
	struct usyms **usyms;  /* parallel to target->procs (grows with it); NULL past the cap */
	/* parallel: USYMS_EXECD: the exec notice's symbolizer (execd[]) serves */
	enum { USYMS_NONE, USYMS_OWN, USYMS_BORROWED, USYMS_OVER_CAP, USYMS_EXECD } *usyms_state;
	size_t n_usyms;
	size_t n_symbolized;   /* symbolizers made, scanned and exec'd (at most PROCSET_MAX_SYMBOLIZED) */
	size_t unsymbolized;   /* processes past PROCSET_MAX_SYMBOLIZED: their frames stay addresses */
};

/* The fork follower's BPF object, as approvals hash it (under PROCSET_BPF_NAME). */
#define PROCSET_BPF_NAME "procset"
const void *procset_bpf_bytes(size_t *size);

/* Creates the map and copies the current members into it. */
struct tfile_reader;
/* reader: how the set's files are read (tfile.h; not owned). */
int procset_open(struct procset *ps, struct target *t, struct tfile_reader *reader,
		 struct diag_err *err);
/* Attaches the fork follower: from now on a member's new child is in the map from its fork.
 * Optional: on failure (err set) members still join at the next rescan. */
int procset_follow_forks(struct procset *ps, struct diag_err *err);
/* The exec notices' fd to poll (-1: none), and the work when it is readable: symbolizers for the
 * new programs, snapshotted now. */
int procset_wake_fd(const struct procset *ps);
void procset_drain(struct procset *ps);
/* When the next snapshot is due (mono_ns; UINT64_MAX: none), and taking those due by now. */
uint64_t procset_due_ns(const struct procset *ps);
void procset_settle(struct procset *ps, uint64_t now);
/* Exec notices the follower's ring had no room for (those programs' frames stay addresses). */
uint64_t procset_notices_lost(const struct procset *ps);
/* Processes that joined the map at fork so far (0 without the follower). */
uint64_t procset_joined_at_fork(const struct procset *ps);
/* Processes that joined at fork and exited before any scan found them, and their CPU time (no
 * /proc reading ever showed it). */
void procset_unscanned(const struct procset *ps, uint64_t *processes, uint64_t *cpu_ns);
/* Rescans the target and updates the map: new processes in, gone ones out, and children the
 * kernel added at fork that two scans in a row did not find (gone, or no longer of the
 * selection) out too. Returns how many processes are alive. */
size_t procset_refresh(struct procset *ps);
/* Snapshots the maps of every live process again, the pending exec notices' included (call once,
 * at the end of a collection). */
void procset_snapshot_all(struct procset *ps);
/* The symbolizer of process tgid, or of the member it was forked from (and has not exec'd since),
 * or NULL when the set never covered it. */
struct usyms *procset_usyms(const struct procset *ps, int tgid);
void procset_close(struct procset *ps);

#endif
