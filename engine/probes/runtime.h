/* runtime.h — what every probe kind shares at run time, below the catalog's contract
 * (catalog.h): its BPF object opened from the skeleton built into the binary with the filters
 * set, its links kept and released (uprobe sites gathered into multi-uprobe links where the
 * kernel has them, released from several threads), its attach variants tried in order, the
 * count-only / full switch and the 1-in-N sampling of engine/abi/diag_bpf.h, the `stats` map
 * summed, log2 histograms read, and its options' values as the plan resolved them.
 * Must not: know a kind, a recipe, a session's order, Lua or reports.
 */
#ifndef DIAG_PROBES_RUNTIME_H
#define DIAG_PROBES_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "plan/catalog.h"
#include "kernel/tp_btf.h"
#include "common/util.h"
#include "common/value.h"

struct bpf_link;
struct bpf_map;
struct bpf_object;
struct bpf_program;
struct kernel_btf;

/* Sets the filter rodata every probe object gets from engine/abi/diag_bpf.h (diag_tgid, diag_tid,
 * diag_cgroup_id, diag_comm) from a probe's resolved filters; between open and load. */
#define PROBE_SET_FILTERS(skel, p)                                                                \
	do {                                                                                      \
		const struct probe_filters *f_ = &(p)->cfg.filter;                               \
		(skel)->rodata->diag_tgid = (__u32)f_->pid;                                      \
		(skel)->rodata->diag_tid = (__u32)f_->tid;                                       \
		(skel)->rodata->diag_cgroup_id = f_->cgroup_id;                                  \
		(skel)->rodata->diag_tgid_set = f_->pid_set;                                     \
		(skel)->rodata->diag_has_comm = f_->comm != NULL;                                \
		if (f_->comm)                                                                     \
			strncpy((char *)(skel)->rodata->diag_comm, f_->comm,                      \
				sizeof((skel)->rodata->diag_comm) - 1);                           \
	} while (0)

/* The BPF half of a probe's private state: the FIRST member of every kind with BPF programs, so
 * that the engine's generic ops below reach its object and release its links without knowing
 * the kind. Filled by NAME_skel_open (PROBE_BPF_SKELETON) and probe_bpf_link. */
struct probe_link {
	struct bpf_link *link;            /* libbpf's, or NULL: */
	int fd;                           /* a link made by the engine (a multi-uprobe link) */
};
struct uprobe_batch;
struct probe_bpf {
	void *skel;                       /* the kind's skeleton, struct NAME_bpf */
	void (*destroy_skel)(void *skel);
	struct bpf_object *obj;
	struct probe_link *links;         /* released last first (attach returns before entries) */
	size_t n_links, cap_links;
	struct uprobe_batch *pending;     /* uprobe sites gathered for one multi link */
};

/* Defines, in engine/probes/NAME.c, `static struct NAME_bpf *NAME_skel_open(p, err)`: opens
 * the skeleton built into the binary, sets the filters (PROBE_SET_FILTERS) and hands it to the
 * probe's struct probe_bpf (destroying one opened before: attach variants reopen). NULL + err
 * on failure. */
#define PROBE_BPF_SKELETON(name)                                                                  \
	static void name##_skel_destroy(void *skel) { name##_bpf__destroy(skel); }                \
	static struct name##_bpf *name##_skel_open(struct probe *p, struct diag_err *err)         \
	{                                                                                         \
		LIBBPF_OPTS(bpf_object_open_opts, opts_, .btf_custom_path = p->core_btf);         \
		tp_btf_install();                                                                 \
		struct name##_bpf *skel = name##_bpf__open_opts(&opts_);                          \
		if (!skel) {                                                                      \
			diag_fail(err, DIAG_EXIT_RUNTIME, "opening BPF object: %s", strerror(errno)); \
			return NULL;                                                              \
		}                                                                                 \
		PROBE_SET_FILTERS(skel, p);                                                       \
		probe_bpf_adopt(p, skel, name##_skel_destroy, skel->obj);                         \
		probe_bpf_pick_twins(p, skel->skeleton);                                          \
		if (probe_bpf_share_targets(p, skel->maps.diag_targets, err))                     \
			return NULL;                                                              \
		return skel;                                                                      \
	}

void probe_bpf_adopt(struct probe *p, void *skel, void (*destroy_skel)(void *), struct bpf_object *obj);
/* Twins (diag_bpf.h's DIAG_COMPAT_SUFFIX): for each program NAME of the skeleton s with a program
 * NAME_compat, the one this kernel loads keeps autoload (NAME where bpf_loop exists, else the
 * twin, which then stands in the skeleton's pointer for NAME); p->degraded says what the twin
 * lacks. probe_bpf_select_variant keeps to the same choice. */
struct bpf_object_skeleton;
void probe_bpf_pick_twins(struct probe *p, struct bpf_object_skeleton *s);
/* Per-thread state (engine/abi/diag_thread.h's DIAG_THREAD_STATE NAME: storage is NAME, by_tid
 * NAME_by_tid): in task storage where the kernel has it (5.11), else in the hash of `threads`
 * entries; the map not used (both when !used) is not created. Returns whether the hash is used —
 * the caller's NAME_in_hash rodata — and says so in p->note (`what` the state is: "a timed
 * syscall's start"). Before load. */
bool probe_thread_state(struct probe *p, struct bpf_map *storage, struct bpf_map *by_tid, bool used,
			uint32_t threads, const char *what);
/* DIAGNOSE_TEST_COMPAT_PROGRAMS=1 in the environment: the tests' way to run, on a kernel that has
 * them, the programs meant for kernels without bpf_loop (5.17) or BPF cookies (5.15)
 * (docs/testing.md). It only takes features away. */
bool probe_test_compat(void);
struct bpf_map;
/* A set of processes (filter.pid_set): the probe's diag_targets map becomes the run's shared
 * one (before load). Nothing to do otherwise. */
int probe_bpf_share_targets(struct probe *p, struct bpf_map *map, struct diag_err *err);
/* Keeps a link the probe attached (released by probe_bpf_detach). A NULL link is an error
 * "attaching WHAT: <errno>", returned as -1. */
int probe_bpf_link(struct probe *p, struct bpf_link *link, const char *what, struct diag_err *err);

/* A uprobe site: prog on a file's offset (path: as the kernel opens it, /proc/self/fd/N for the
 * very file read), in process pid (<= 0: every process), an entry or a return, with a cookie and a
 * USDT semaphore's offset (0: none). Where the probe's programs were loaded for multi-uprobe links
 * (p->uprobe_multi), sites of one program, file, pid and direction are gathered and attached as
 * one link by probe_bpf_uprobes_flush (or by the next site that differs); else each is a uprobe
 * of its own at once. what names the site in an error. */
struct uprobe_site {
	struct bpf_program *prog;
	const char *path;
	uint64_t offset, cookie, ref_ctr_offset;
	int pid;
	bool retprobe;
};
int probe_bpf_uprobe(struct probe *p, const struct uprobe_site *site, const char *what,
		     struct diag_err *err);
/* Attaches the sites gathered so far (the end of a kind's attach, or before sites whose order
 * matters: returns before entries). */
int probe_bpf_uprobes_flush(struct probe *p, struct diag_err *err);
/* Attaches every program of the object that is set to load and to attach, where its section
 * says (libbpf's autoattach: a probe turns it off for a program it attaches itself, later or only
 * when needed). */
int probe_bpf_attach_all(struct probe *p, struct diag_err *err);
/* Attach variants as program names: loads only the programs named VARIANT_* (tp_btf_switch,
 * raw_tp_switch, ...), so that loading the object is the feature probe of that variant. */
void probe_bpf_select_variant(struct bpf_object *obj, const char *variant);
/* Trying attach variants in order: after loading variant v with result rc (0 = loaded),
 * returns true when it loaded (p->variant set, and p->note says what failed before it);
 * false to try the next, keeping the first failure for the error once none is left. */
struct variant_tries {
	char first_failure[160];
};
bool probe_variant_loaded(struct probe *p, struct variant_tries *t, const char *v, int rc);
int probe_no_variant(struct variant_tries *t, const char *what, struct diag_err *err);
/* The kernel's BTF for a kind's load: the run's (p->kernel_btf), else read into *own (zeroed
 * first; kernel_btf_close(own) after use releases it, and does nothing when the run's was used).
 * NULL with err when it cannot be read. */
const struct kernel_btf *probe_kernel_btf(const struct probe *p, struct kernel_btf *own,
					  struct diag_err *err);
/* Generic ops for kinds built on struct probe_bpf: */
void probe_bpf_detach(struct probe *p);
void probe_bpf_destroy(struct probe *p);
struct bpf_object *probe_bpf_object(struct probe *p);

/* Value of option `name` in cfg (the spec default when the kind has none such). */
uint64_t probe_opt(const struct probe *p, const char *name);
/* What one kept event of a sampling probe stands for: its sample_scale when the governor changed
 * its sampling mid-run, else its sample-every option (at least 1). Every collect() scales its
 * counts by it. */
double probe_scale(const struct probe *p);
/* The report's `sampled_1_in`: probe_scale rounded; 1 when nothing was sampled. */
int64_t probe_sampled_1_in(const struct probe *p);
/* Text of OPT_STRING option `name`; NULL when unset. */
const char *probe_opt_str(const struct probe *p, const char *name);

/* The declarations of probe_log2_buckets' array, under `name` ("buckets"): unit of lo and hi. */
#define LOG2_BUCKET_FIELDS(name, unit)                                                           \
	{ name, RT_ARRAY, NULL, false, "non-empty log2 slots, shortest first" },                 \
	{ name "[]", RT_OBJECT, NULL, false, "one slot: values in [lo, hi]" },                    \
	{ name "[].lo", RT_INTEGER, unit, false, "lowest value of the slot (0 or a power of 2)" }, \
	{ name "[].hi", RT_INTEGER, unit, false, "highest value of the slot" },       \
	{ name "[].count", RT_INTEGER, "count", false, "values that fell in the slot" }

/* The nonzero slots of an in-memory log2 histogram (slot k: values in [2^k, 2^(k+1)), slot 0
 * also 0) as probe_log2_buckets gives them; the last slot of n < 64 holds everything above. */
struct value *probe_log2_slots_value(const uint64_t *slots, unsigned n);
/* Sum over the CPUs of slot of a per-CPU array of __u64 (fd < 0 or a failed lookup: 0). */
uint64_t probe_percpu_sum(int fd, unsigned slot);
/* Sum of the per-CPU `stats` array slot every probe object carries (see engine/abi/diag_bpf.h). */
uint64_t probe_stat_sum(struct bpf_object *obj, unsigned slot);
/* Reads a BPF array of log2 slots (slot k counts values in [2^k, 2^(k+1)), slot 0 also 0) into
 * [{lo, hi, count}] for the nonzero slots, and a [sum, max] totals array; *count gets the sum of
 * the counts, *sum and *max the totals. The results shape every latency probe shares. */
struct value *probe_log2_buckets(int hist_fd, unsigned slots, int totals_fd, uint64_t *count,
				 uint64_t *sum, uint64_t *max);
/* Events of a probe so far: its `events` op, else the EVENTS slot of its stats map. */
uint64_t probe_events(struct probe *p);
/* Switches a loaded probe's programs (engine/abi/diag_bpf.h's diag_ctl): count_only, or full mode
 * keeping 1 event in sample_every. -1 when the probe has no such switch (no BPF object, or one
 * built without diag_bpf.h). */
int probe_set_mode(struct probe *p, bool count_only, uint64_t sample_every);
/* What its programs counted in count-only mode: runs, and runs that passed the filters. */
void probe_count_only_totals(struct probe *p, uint64_t *firings, uint64_t *passed);

#endif
