/* diag_bpf.h — what every BPF program of engine/probes/ shares: the per-CPU `stats` map the engine reads for
 * events and drops, the `diag_ctl` switch (a global in its own section) through which the engine
 * moves a probe's programs between count-only and full mode and sets their 1-in-N sampling while
 * they are attached, the filters, log2 slots, the depth of every stack map (engine/symbolize/stacks.c reads
 * them with it), and the counting and latency-total helpers. Included once by each probe's
 * .bpf.c, which gets the map and the switch from here, and by procset.bpf.c (the engine's own
 * program keeping diag_targets current between its rescans).
 * Must not: define probe-specific maps or any program.
 */
#ifndef DIAG_BPF_H
#define DIAG_BPF_H

#define DIAG_HIST_SLOTS 32

/* Frames in every BPF_MAP_TYPE_STACK_TRACE value (value_size = DIAG_STACK_DEPTH * 8): the
 * kernel's default perf_event_max_stack. One depth for all stack probes, so that engine/symbolize/stacks.c
 * reads any probe's stack map the same way. */
#define DIAG_STACK_DEPTH 127

/* Slots of the per-CPU `stats` array every probe has. The engine sums them over CPUs. */
enum diag_stat {
	DIAG_STAT_EVENTS = 0,   /* events that passed the filters */
	DIAG_STAT_MAP_FULL = 1, /* updates refused because a map was full */
	DIAG_STAT_LOST = 2,     /* data lost for another reason (stack walk failed, ...) */
	DIAG_STAT_PROBE_3 = 3,  /* probe-specific */
	DIAG_STAT_PROBE_4 = 4,
	DIAG_STAT_PROBE_5 = 5,
	DIAG_STAT_FIRINGS = 6,  /* count-only mode: program runs (what the probe costs) */
	DIAG_STAT_PASSED = 7,   /* count-only mode: runs that passed the filters (would-be events) */
	DIAG_STAT_NR = 8,
};

/* The engine's switch, one entry, read by every program on each run. The engine attaches a
 * probe in count-only mode for the budget pre-flight (the first preflight_ms of the collection),
 * then switches it to full mode, possibly sampled, or detaches it (refused). */
enum diag_mode {
	DIAG_MODE_FULL = 0,
	DIAG_MODE_COUNT = 1,
};

/* The values of diag_targets (a set of processes): how the tgid got there. The engine's scans
 * decide membership; procset.bpf.c adds a member's new child at fork, before the next scan, with
 * the tgid of the parent whose address space it copied (its symbolizer stands in for the
 * child's), or DIAG_SET_EXECED once the child has exec'd a program of its own. */
#define DIAG_SET_SCANNED 0xffffffffu /* found by the engine's scan of the selection */
#define DIAG_SET_EXECED 0u           /* joined at fork, then exec'd */
/* any other value: joined at fork from that parent tgid, not exec'd since */

/* procset.bpf.c's ring of exec notices: a member that joined at fork exec'd and stays. */
struct diag_set_exec_notice {
	__u32 tgid;
	__u32 again; /* it had exec'd before: the same process, another program */
};

/* procset.bpf.c's counters, in its `stats` (slots it shares with no probe). */
#define DIAG_SET_STAT_JOINED DIAG_STAT_EVENTS     /* processes that joined at fork */
#define DIAG_SET_STAT_LEFT DIAG_STAT_PROBE_3      /* --comm: left at exec under another name */
#define DIAG_SET_STAT_UNSCANNED_NS DIAG_STAT_PROBE_4 /* CPU time of joined processes that exited
						       * (or left at exec) before any scan found them */
#define DIAG_SET_STAT_UNSCANNED DIAG_STAT_PROBE_5 /* how many such processes */

#define DIAG_CTL_SECTION ".data.diag_ctl"

/* Twins: a program NAME may come with a program NAME_compat, the same code without what a kernel
 * before 5.17 refuses even where it is never reached (bpf_loop's callbacks: the Python walk).
 * The engine loads the one the kernel takes (runtime.c: NAME where bpf_loop exists, else the
 * twin, which then stands in skel->progs.NAME): one object for 5.10 to today. */
#define DIAG_COMPAT_SUFFIX "_compat"

/* diag_ctl.flags */
#define DIAG_CTL_NO_STACKS 1u /* the governor dropped the probe's stacks: its events are kept
			       * without call paths (kinds that honour it: probe_kind.drops_stacks) */

struct diag_ctl {
	__u32 mode;         /* enum diag_mode */
	__u32 sample_every; /* full mode: keep 1 event in N at random (0 and 1: every event) */
	__u32 flags;        /* DIAG_CTL_* */
};

#ifdef __BPF__
#include <bpf/bpf_core_read.h>

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, DIAG_STAT_NR);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

/* The tgids of a set of processes (diag_tgid_set); max_entries as the engine creates it. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32); /* DIAG_SET_SCANNED, DIAG_SET_EXECED or the parent's tgid */
} diag_targets SEC(".maps");

/* A stack-trace map of DIAG_STACK_DEPTH frames per stack, for bpf_get_stackid (its max_entries
 * is set from the recipe before load). */
#define DIAG_STACK_MAP(name)                                                                      \
	struct {                                                                                  \
		__uint(type, BPF_MAP_TYPE_STACK_TRACE);                                           \
		__uint(key_size, sizeof(__u32));                                                  \
		__uint(value_size, DIAG_STACK_DEPTH * sizeof(__u64));                             \
		__uint(max_entries, 16384);                                                       \
	} name SEC(".maps")

/* The switch is a global variable in a section of its own (libbpf gives it a one-entry array
 * map named DIAG_CTL_SECTION): programs read it with plain loads, no map lookup per event. */
volatile struct diag_ctl diag_ctl SEC(".data.diag_ctl") = { DIAG_MODE_FULL, 1, 0 };

/* Whether the governor dropped this probe's stacks (over its CPU budget with sampling spent):
 * a kind that honours it takes no stack, and sends none, while this is true. */
static __always_inline bool diag_stacks_dropped(void)
{
	return diag_ctl.flags & DIAG_CTL_NO_STACKS;
}

static __always_inline void diag_stat_inc(void *stats_map, __u32 slot)
{
	__u64 *v = bpf_map_lookup_elem(stats_map, &slot);
	if (v)
		*v += 1;
}

/* First thing in every program: true in count-only mode, after counting the run. The program
 * then checks its filters and ends its prologue with diag_admit(count_only, wanted). */
static __always_inline bool diag_count_only(void)
{
	if (diag_ctl.mode != DIAG_MODE_COUNT)
		return false;
	diag_stat_inc(&stats, DIAG_STAT_FIRINGS);
	return true;
}

/* Count-only mode: an event that passed the filters. */
static __always_inline void diag_passed(void)
{
	diag_stat_inc(&stats, DIAG_STAT_PASSED);
}

/* The end of a program's prologue, after diag_count_only() and its filters (wanted: they
 * passed): whether the program goes on to its work. In count-only mode a wanted event is
 * counted as passed and the program stops; an unwanted one stops it in either mode. */
static __always_inline bool diag_admit(bool count_only, bool wanted)
{
	if (!wanted)
		return false;
	if (count_only) {
		diag_passed();
		return false;
	}
	return true;
}

/* Before 5.14 the field was `state`. */
struct task_struct___pre514 {
	long state;
} __attribute__((preserve_access_index));

/* A task's scheduler state (0: runnable; TASK_INTERRUPTIBLE 1, TASK_UNINTERRUPTIBLE 2, ...). */
static __always_inline long diag_task_state(struct task_struct *t)
{
	if (bpf_core_field_exists(t->__state))
		return BPF_CORE_READ(t, __state);
	return BPF_CORE_READ((struct task_struct___pre514 *)t, state);
}

/* The filters a recipe gives a probe (engine/plan/filters.c resolves them; each probe kind's catalog
 * entry says which it honours, and sets them before load with PROBE_SET_FILTERS). 0 / empty:
 * no filter. */
const volatile __u32 diag_tgid = 0;      /* the process (all its threads) */
const volatile __u32 diag_tid = 0;       /* one thread */
const volatile __u64 diag_cgroup_id = 0; /* a cgroup v2 directory's id (its inode number) */
const volatile bool diag_has_comm = false;
/* A set of processes (--comm, --cgroup, --unit, --container): their tgids are the keys of
 * diag_targets, a map the engine creates once per run, shares between every probe (reused
 * before load) and keeps current while the run lasts. */
const volatile bool diag_tgid_set = false;
const volatile char diag_comm[16] = {};  /* a thread name, TASK_COMM_LEN */

static __always_inline bool diag_comm_is(const char *comm)
{
	for (int i = 0; i < 16; i++) {
		if (comm[i] != diag_comm[i])
			return false;
		if (!comm[i])
			break;
	}
	return true;
}

/* A process target, one (diag_tgid) or a set (diag_tgid_set)? For probes that attribute events
 * to the target by what it owns (sockets) rather than by the task running. */
static __always_inline bool diag_has_process_target(void)
{
	return diag_tgid || diag_tgid_set;
}

/* Is process tgid the target, or one of the set? */
static __always_inline bool diag_tgid_targeted(__u32 tgid)
{
	if (diag_tgid)
		return tgid == diag_tgid;
	return diag_tgid_set && bpf_map_lookup_elem(&diag_targets, &tgid);
}

/* The filters on the task running now: for events that happen in the task's own context. */
static __always_inline bool diag_current_wanted(void)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	if (diag_tgid && tgid != diag_tgid)
		return false;
	if (diag_tgid_set && !bpf_map_lookup_elem(&diag_targets, &tgid))
		return false;
	if (diag_tid && (__u32)id != diag_tid)
		return false;
	if (diag_cgroup_id && bpf_get_current_cgroup_id() != diag_cgroup_id)
		return false;
	if (diag_has_comm) {
		char comm[16];
		bpf_get_current_comm(comm, sizeof(comm));
		if (!diag_comm_is(comm))
			return false;
	}
	return true;
}

/* The filters on another task (the one woken, switched out...): its own ids, its cgroup in the
 * v2 hierarchy. */
static __always_inline bool diag_task_wanted(struct task_struct *t)
{
	__u32 tgid = BPF_CORE_READ(t, tgid);
	if (diag_tgid && tgid != diag_tgid)
		return false;
	if (diag_tgid_set && !bpf_map_lookup_elem(&diag_targets, &tgid))
		return false;
	if (diag_tid && BPF_CORE_READ(t, pid) != diag_tid)
		return false;
	if (diag_cgroup_id && BPF_CORE_READ(t, cgroups, dfl_cgrp, kn, id) != diag_cgroup_id)
		return false;
	if (diag_has_comm) {
		char comm[16];
		BPF_CORE_READ_STR_INTO(&comm, t, comm);
		if (!diag_comm_is(comm))
			return false;
	}
	return true;
}

/* Full mode, after the filters, for probes that may be sampled: false for the events that 1-in-N
 * sampling drops. */
static __always_inline bool diag_sampled_in(void)
{
	__u32 n = diag_ctl.sample_every;
	return n <= 1 || bpf_get_prandom_u32() % n == 0;
}

/* Adds 1 to the count of key in a hash map, inserting it at 1; a full map is counted in the
 * stats map as DIAG_STAT_MAP_FULL, so no hit is lost silently. */
static __always_inline void diag_count_key(void *counts_map, const void *key, void *stats_map)
{
	__u64 one = 1, *count = bpf_map_lookup_elem(counts_map, key);
	if (count) {
		__sync_fetch_and_add(count, 1);
		return;
	}
	if (bpf_map_update_elem(counts_map, key, &one, BPF_NOEXIST) == 0)
		return;
	/* another CPU may have inserted the key meanwhile */
	count = bpf_map_lookup_elem(counts_map, key);
	if (count)
		__sync_fetch_and_add(count, 1);
	else
		diag_stat_inc(stats_map, DIAG_STAT_MAP_FULL);
}

/* The value of key in a hash map, inserted as *zero when absent (another CPU may insert it
 * meanwhile: either way, the one in the map); NULL when the map is full, counted in the stats
 * map as DIAG_STAT_MAP_FULL. */
static __always_inline void *diag_lookup_or_init(void *map, const void *key, const void *zero)
{
	void *v = bpf_map_lookup_elem(map, key);
	if (v)
		return v;
	bpf_map_update_elem(map, key, zero, BPF_NOEXIST);
	v = bpf_map_lookup_elem(map, key);
	if (!v)
		diag_stat_inc(&stats, DIAG_STAT_MAP_FULL);
	return v;
}

/* totals maps hold [0] a sum and [1] a maximum of what a probe measures. */
static __always_inline void diag_add_total(void *totals_map, __u64 v)
{
	__u32 sum_idx = 0, max_idx = 1;
	__u64 *sum = bpf_map_lookup_elem(totals_map, &sum_idx);
	__u64 *max = bpf_map_lookup_elem(totals_map, &max_idx);
	if (sum)
		__sync_fetch_and_add(sum, v);
	if (max && v > *max)
		*max = v; /* racy max: good enough for "longest" */
}

/* floor(log2(v)) for v > 0, 0 for v == 0; branch-free enough for the verifier. */
static __always_inline __u32 diag_log2(__u64 v)
{
	__u32 r = 0, shift;
	shift = (v > 0xFFFFFFFFULL) << 5; v >>= shift; r |= shift;
	shift = (v > 0xFFFF) << 4; v >>= shift; r |= shift;
	shift = (v > 0xFF) << 3; v >>= shift; r |= shift;
	shift = (v > 0xF) << 2; v >>= shift; r |= shift;
	shift = (v > 0x3) << 1; v >>= shift; r |= shift;
	r |= (v >> 1);
	return r;
}
#endif

#endif
