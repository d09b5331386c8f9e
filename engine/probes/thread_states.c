/* thread_states.c — catalog entry for engine/probes/thread_states.bpf.c: every thread of the target
 * at the window's start and at its end, and, for the threads that did not run in between, what
 * they are blocked on and since when. The event-driven probes see context switches: a thread
 * blocked since before the run makes none, and only a snapshot sees it.
 *
 * Owns: the two snapshots — the task iterator (variant `iterator`: read through tfile_read_fd,
 * since its program copies target memory that a stalled file system may hold), or, where the
 * kernel lacks what the iterator needs (sleepable iterators and bpf_copy_from_user_task: 5.18),
 * /proc/PID/task/TID/{stat,schedstat,syscall,stack,wchan} with the stack top and the futex words
 * through tfile's reader (variant `procfs`) —; matching them by thread (switch counts and CPU time
 * that did not move: it did not run in the window); how long a thread has been blocked (the
 * run-queue clock: when it last got a CPU plus that last stretch, against the reading task's own
 * arrival and stretch, both that clock; procfs has no such clock: not said); for the threads it
 * reports (blocked throughout, most blocked first, and the threads their futex words name), the
 * user stack unwound by the stack sampler (CFI/DWARF, the frame-pointer walk over the copy, Python
 * frames read from user space: python_thread_frames), the kernel stack named, the descriptor or
 * path its system call names (/proc/PID/fd links' text; sockets by netowner; a file's file system
 * by fdinfo's mnt_id in mountinfo) and the words at a futex's address, raw (what a glibc mutex's
 * words say is lua/lib/blocked.lua's).
 * Must not: open or stat what a descriptor names (a stalled file system answers neither), read a
 * target's files or memory other than through tfile (the iterator's copies run in tfile's
 * helper), judge the waits, or keep anything past destroy.
 *
 * Why one file (~1,100 lines): the two variants (iterator, /proc) fill the same per-thread record,
 * and matching the snapshots, naming the waits and the results read only that record; split by
 * variant, the record's meaning would be defined twice.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>

#include "plan/catalog.h"
#include "probes/runtime.h"
#include "abi/diag_bpf.h"
#include "abi/diag_unwind.h"
#include "probes/netowner.h"
#include "symbolize/python.h"
#include "probes/stack_sampler.h"
#include "symbolize/stacks.h"
#include "syscall_names.h"
#include "target/target.h"
#include "target/tfile.h"
#include "probes/thread_states.h"
#include "thread_states.skel.h"
#include "symbolize/unwind.h"

#define TS_PATH_MAX 256   /* bytes of a path a system call names, read from the target */
#define TS_NAMED_EXTRA 64 /* threads named by futex words, reported beyond max_reported */
#define NR_FUTEX 202
#define NR_FUTEX_WAIT 454

/* One thread in one snapshot, from either source. */
struct ts_thread {
	uint32_t tgid, tid;
	char comm[17];
	char state;        /* /proc's letters: R S D T t X Z P I */
	uint32_t flags;    /* TS_F_* */
	uint64_t switches; /* context switches (procfs: times it got a CPU) so far */
	uint64_t cpu_ns;   /* CPU time so far */
	int64_t since_ns;  /* since it last ran; -1 not known */
	int64_t syscall;   /* -1 none; -2 running (procfs) */
	uint64_t args[6];
	uint64_t ip, sp, bp;
	uint32_t futex[TS_FUTEX_WORDS];
	size_t n_kstack;
	uint64_t *kstack; /* the details read's kernel frames (owned); NULL before it */
	char **knames;    /* procfs: the kernel frames by name */
	size_t n_knames;
	char wchan[64];
	uint8_t *stack; /* stack_len bytes copied at sp (owned) */
	size_t stack_len;
};

struct snapshot {
	bool taken;
	struct ts_thread *t;
	size_t n, cap;
	uint64_t cut;
	uint64_t took_ns, bytes;
	char why[800]; /* not taken: why */
};

/* What the end snapshot says of one of its threads. */
struct ts_row {
	struct ts_thread *t;
	const struct ts_thread *start; /* NULL: not in the start snapshot (new) */
	bool ran, blocked, reported;
	long row; /* its stack's row in the sampler; -1 none */
};

struct ts_priv {
	struct probe_bpf bpf; /* first: the generic ops use it */
	struct thread_states_bpf *skel;
	struct bpf_link *iter; /* in bpf.links: released with them */
	bool procfs, no_target, detached;
	char why[800]; /* why procfs, or why nothing */
	struct snapshot start, end;
	/* the end snapshot matched with the start one, and the threads reported (pointers into rows) */
	struct ts_thread *starts; /* the start snapshot's threads by tid (shallow copies) */
	struct ts_row *rows;
	struct ts_row **report;
	size_t n_rows, n_report, n_ran, n_new, n_blocked;
	uint64_t details_ns, details_bytes;
};

PROBE_BPF_SKELETON(thread_states)

static const struct option_spec ts_options[] = {
	{ .name = "max_threads",
	  .type = OPT_UINT,
	  .dflt = 4096,
	  .min = 16,
	  .max = 65536,
	  .help = "threads read per snapshot (more are counted in threads_cut)" },
	{ .name = "stack_bytes",
	  .type = OPT_UINT,
	  .dflt = 4096,
	  .min = 0,
	  .max = TS_STACK_MAX,
	  .help = "bytes of a blocked thread's user stack copied at the end of the window, unwound "
		  "by CFI/DWARF (0: no user stacks)" },
	{ .name = "max_reported",
	  .type = OPT_UINT,
	  .dflt = 256,
	  .min = 1,
	  .max = 8192,
	  .help = "threads reported with their stacks (blocked throughout, most blocked first; and "
		  "the threads their futex words name)" },
	{ .name = "python_frames",
	  .type = OPT_BOOL,
	  .dflt = 1,
	  .max = 1,
	  .help = "CPython 3.11-3.13: read a reported thread's Python frames from its memory (through "
		  "the reader's helpers) and show them in place of the evaluation loop's" },
};

static const char *const ts_variants[] = { "iterator", "procfs", NULL };

static const char *const tag_names[] = { "runnable", "sleeping", "uninterruptible", "other" };

/* ---- one thread ------------------------------------------------------------------------------ */

static void thread_free(struct ts_thread *t)
{
	for (size_t i = 0; i < t->n_knames; i++)
		free(t->knames[i]);
	free(t->knames);
	free(t->stack);
	free(t->kstack);
}

static void snapshot_free(struct snapshot *s)
{
	for (size_t i = 0; i < s->n; i++)
		thread_free(&s->t[i]);
	free(s->t);
	memset(s, 0, sizeof(*s));
}

static struct ts_thread *snapshot_add(struct snapshot *s)
{
	if (s->n == s->cap)
		s->t = xrealloc(s->t, (s->cap = s->cap ? s->cap * 2 : 64) * sizeof(*s->t));
	struct ts_thread *t = &s->t[s->n++];
	memset(t, 0, sizeof(*t));
	t->since_ns = -1;
	t->syscall = -1;
	return t;
}

/* Thread tid of s, or NULL (s is in the order it was read: a scan). */
static struct ts_thread *snapshot_find(struct snapshot *s, uint32_t tid)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->t[i].tid == tid)
			return &s->t[i];
	return NULL;
}

/* /proc's letter for the scheduler's bits (fs/proc/array.c's task_state_array). */
static char state_letter(uint32_t state, uint32_t exit_state)
{
	if (state == 0x402) /* TASK_IDLE: uninterruptible, not counted in the load */
		return 'I';
	uint32_t s = (state | exit_state) & 0x7f;
	if (!s)
		return state & 0x2 ? 'D' : state ? 'S' : 'R'; /* frozen, RT-lock waits */
	static const char letters[] = "SDTtXZP";
	for (int i = 0; i < 7; i++)
		if (s & (1u << i))
			return letters[i];
	return '?';
}

/* What off_cpu calls the state a thread is off the CPU in (its tags, lua/lib/waits.lua's input). */
static const char *tag_of(char state)
{
	switch (state) {
	case 'R': return tag_names[0];
	case 'S': return tag_names[1];
	case 'D':
	case 'I': return tag_names[2];
	default: return tag_names[3];
	}
}

/* ---- the iterator ---------------------------------------------------------------------------- */

/* The records of buf into s; a details read's go to the thread s already has (or a new one). */
static void parse_records(struct snapshot *s, const char *buf, size_t len, bool details)
{
	size_t head = sizeof(struct ts_rec);
	for (size_t off = 0; off + head <= len;) {
		struct ts_rec r;
		memcpy(&r, buf + off, head);
		if (r.magic != TS_REC_MAGIC || r.size < head || r.size > len - off)
			break; /* never past what was read */
		size_t kn = r.kstack_len <= TS_KSTACK_DEPTH ? r.kstack_len : TS_KSTACK_DEPTH;
		if (kn * 8 > r.size - head)
			kn = (r.size - head) / 8;
		size_t stack = r.size - head - kn * 8;
		if (stack > r.stack_len)
			stack = r.stack_len;
		struct ts_thread *t = details ? snapshot_find(s, r.tid) : NULL;
		if (!t)
			t = snapshot_add(s);
		t->tgid = r.tgid;
		t->tid = r.tid;
		snprintf(t->comm, sizeof(t->comm), "%.*s", (int)sizeof(r.comm), r.comm);
		if (!details) { /* the counts are the states read's: the details read comes later */
			t->state = state_letter(r.state, r.exit_state);
			t->switches = r.nvcsw + r.nivcsw;
			t->cpu_ns = r.sum_exec_ns;
			t->since_ns = -1;
			if (r.flags & TS_F_ON_CPU) {
				t->since_ns = 0;
			} else if ((r.flags & TS_F_SCHED_INFO) && r.last_arrival &&
				   r.now_clock > r.last_arrival) {
				/* it got its CPU at last_arrival and ran slice_ns: off it since their sum */
				uint64_t slice =
					r.slice_ns <= r.now_clock - r.last_arrival ? r.slice_ns : 0;
				t->since_ns = (int64_t)(r.now_clock - r.last_arrival - slice);
			}
			memcpy(t->futex, r.futex, sizeof(t->futex));
		}
		t->flags = (t->flags & TS_F_FUTEX) | r.flags;
		if (r.flags & TS_F_REGS) {
			t->syscall = r.syscall;
			memcpy(t->args, r.args, sizeof(t->args));
			t->ip = r.ip;
			t->sp = r.sp;
			t->bp = r.bp;
		}
		if (details) {
			free(t->kstack);
			t->kstack = kn ? xmalloc(kn * 8) : NULL;
			t->n_kstack = kn;
			memcpy(t->kstack, buf + off + head, kn * 8);
			free(t->stack);
			t->stack = stack ? xmalloc(stack) : NULL;
			memcpy(t->stack, buf + off + head + kn * 8, stack);
			t->stack_len = stack;
		}
		off += r.size;
	}
}

static void snap_iterator(struct probe *p, struct ts_priv *tp, unsigned mode, struct snapshot *s)
{
	struct thread_states_bpf *sk = tp->skel;
	sk->bss->mode = mode;
	sk->bss->written = 0;
	sk->bss->cut = 0;
	int fd = bpf_iter_create(bpf_link__fd(tp->iter));
	if (fd < 0) {
		snprintf(s->why, sizeof(s->why), "the task iterator could not be read: %s",
			 strerror(errno));
		return;
	}
	size_t per = sizeof(struct ts_rec) +
		     (mode == TS_MODE_DETAILS ? TS_KSTACK_DEPTH * 8 + (size_t)probe_opt(p, "stack_bytes")
					      : 0);
	size_t max = (size_t)probe_opt(p, "max_threads") * per + TS_PAGE, len = 0;
	struct diag_err err;
	/* a stall domain of its own per process: what the program copies is that process's memory */
	uint64_t domain = 1ull << 62 | (uint64_t)(unsigned)p->cfg.filter.pid;
	char *buf = tfile_read_fd(p->files, fd, domain, "the threads' snapshot", max, &len, &err);
	close(fd);
	if (!buf) {
		snprintf(s->why, sizeof(s->why), "%s", err.msg);
		return;
	}
	s->bytes += len;
	parse_records(s, buf, len, mode == TS_MODE_DETAILS);
	free(buf);
	if (mode != TS_MODE_DETAILS)
		s->cut = sk->bss->cut;
	s->taken = true;
}

/* ---- /proc ----------------------------------------------------------------------------------- */

static char *read_task_file(struct probe *p, int pid, int tid, const char *name, size_t max)
{
	char rel[64];
	struct diag_err err;
	snprintf(rel, sizeof(rel), "task/%d/%s", tid, name);
	return tfile_read_proc(p->files, pid, rel, max, NULL, &err);
}

/* Up to want bytes of process pid's memory at addr, page by page (a read stops at the end of a
 * mapping): how many were read into buf. */
static size_t read_mem_pages(struct probe *p, int pid, uint64_t addr, uint8_t *buf, size_t want)
{
	size_t len = 0;
	struct diag_err err;
	while (len < want) {
		uint64_t at = addr + len;
		size_t n = TS_PAGE - (size_t)(at & (TS_PAGE - 1));
		if (n > want - len)
			n = want - len;
		if (tfile_read_mem(p->files, pid, at, n, buf + len, &err))
			break;
		len += n;
	}
	return len;
}

/* "[<0>] futex_wait_queue+0x60/0x90" lines: the names, offsets cut. */
static void parse_kernel_stack(struct ts_thread *t, const char *text)
{
	size_t cap = 0;
	for (const char *line = text; line && *line;) {
		const char *eol = strchr(line, '\n');
		size_t len = eol ? (size_t)(eol - line) : strlen(line);
		const char *name = memchr(line, ']', len);
		if (name && t->n_knames < TS_KSTACK_DEPTH) {
			name++;
			while (*name == ' ')
				name++;
			size_t n = strcspn(name, "+ \n");
			if (n && (size_t)(name - line) + n <= len) {
				if (t->n_knames == cap)
					t->knames = xrealloc(t->knames, (cap = cap ? cap * 2 : 16) *
										sizeof(char *));
				t->knames[t->n_knames++] = xasprintf("%.*s", (int)n, name);
			}
		}
		line = eol ? eol + 1 : NULL;
	}
}

/* One thread's stat, schedstat and syscall (and in TS_MODE_STATES its futex's words) into a new
 * entry of s. */
static void procfs_thread(struct probe *p, int pid, int tid, unsigned mode, struct snapshot *s)
{
	char *stat = read_task_file(p, pid, tid, "stat", 4096);
	const char *open = stat ? strchr(stat, '(') : NULL, *close = stat ? strrchr(stat, ')') : NULL;
	if (!open || !close || close < open || close[1] != ' ' || !close[2]) {
		free(stat);
		return; /* gone */
	}
	struct ts_thread *t = snapshot_add(s);
	t->tgid = (uint32_t)pid;
	t->tid = (uint32_t)tid;
	snprintf(t->comm, sizeof(t->comm), "%.*s", (int)(close - open - 1), open + 1);
	t->state = close[2];
	free(stat);
	char *sched = read_task_file(p, pid, tid, "schedstat", 256);
	unsigned long long exec = 0, delay = 0, runs = 0;
	if (sched && sscanf(sched, "%llu %llu %llu", &exec, &delay, &runs) == 3) {
		t->cpu_ns = exec;
		t->switches = runs; /* times it got a CPU: moves exactly when it ran */
	}
	free(sched);
	char *sc = read_task_file(p, pid, tid, "syscall", 512);
	long long nr;
	unsigned long long a[6], sp, pc;
	if (sc && !strncmp(sc, "running", 7)) {
		t->syscall = -2;
	} else if (sc && sscanf(sc, "%lld %llx %llx %llx %llx %llx %llx %llx %llx", &nr, &a[0],
				&a[1], &a[2], &a[3], &a[4], &a[5], &sp, &pc) == 9) {
		t->syscall = nr;
		for (int i = 0; i < 6; i++)
			t->args[i] = a[i];
		t->sp = sp;
		t->ip = pc;
		t->flags |= TS_F_REGS;
	} else if (sc && sscanf(sc, "%lld %llx %llx", &nr, &sp, &pc) == 3) { /* -1 sp pc: not in one */
		t->syscall = -1;
		t->sp = sp;
		t->ip = pc;
		t->flags |= TS_F_REGS;
	}
	free(sc);
	if (mode == TS_MODE_STATES && t->state != 'R' &&
	    (t->syscall == NR_FUTEX || t->syscall == NR_FUTEX_WAIT) && t->args[0] &&
	    read_mem_pages(p, pid, t->args[0], (uint8_t *)t->futex, sizeof(t->futex)) == sizeof(t->futex))
		t->flags |= TS_F_FUTEX;
}

/* A reported thread's kernel stack (or wchan) and the top of its user stack. */
static void procfs_details(struct probe *p, struct ts_thread *t)
{
	int pid = (int)t->tgid, tid = (int)t->tid;
	t->flags |= TS_F_DETAILS;
	char *stack = read_task_file(p, pid, tid, "stack", 16384);
	if (stack)
		parse_kernel_stack(t, stack);
	free(stack);
	if (!t->n_knames) {
		char *w = read_task_file(p, pid, tid, "wchan", 128);
		if (w && w[0] && strcmp(w, "0"))
			snprintf(t->wchan, sizeof(t->wchan), "%.*s", (int)strcspn(w, "\n"), w);
		free(w);
	}
	size_t want = (size_t)probe_opt(p, "stack_bytes");
	if (t->state != 'R' && (t->flags & TS_F_REGS) && t->sp && want) {
		t->stack = xmalloc(want);
		t->stack_len = read_mem_pages(p, pid, t->sp, t->stack, want);
		if (t->stack_len < want)
			t->flags |= TS_F_STACK_CUT;
	}
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

static void snap_procfs(struct probe *p, unsigned mode, struct snapshot *s)
{
	int pids[TARGET_MAX_PROCS];
	size_t np = filters_live_pids(&p->cfg.filter, pids, TARGET_MAX_PROCS);
	size_t max = (size_t)probe_opt(p, "max_threads");
	for (size_t i = 0; i < np; i++) {
		char dir[64];
		snprintf(dir, sizeof(dir), "/proc/%d/task", pids[i]);
		DIR *d = opendir(dir); /* our root's /proc: a listing, nothing of the target's is read */
		if (!d)
			continue;
		int *tids = NULL;
		size_t nt = 0, cap = 0;
		for (struct dirent *e; (e = readdir(d));) {
			int tid = atoi(e->d_name);
			if (tid <= 0)
				continue;
			if (nt == cap)
				tids = xrealloc(tids, (cap = cap ? cap * 2 : 64) * sizeof(*tids));
			tids[nt++] = tid;
		}
		closedir(d);
		qsort(tids, nt, sizeof(*tids), cmp_int);
		for (size_t k = 0; k < nt; k++) {
			if (s->n >= max) {
				s->cut++;
				continue;
			}
			procfs_thread(p, pids[i], tids[k], mode, s);
		}
		free(tids);
	}
	s->taken = true;
}

static void take(struct probe *p, struct ts_priv *tp, unsigned mode, struct snapshot *s)
{
	uint64_t t0 = mono_ns();
	if (tp->procfs)
		snap_procfs(p, mode, s);
	else
		snap_iterator(p, tp, mode, s);
	s->took_ns = mono_ns() - t0;
}

/* ---- matching the snapshots, and the threads reported ------------------------------------------ */

static int cmp_tid(const void *a, const void *b)
{
	const struct ts_thread *x = a, *y = b;
	return (x->tid > y->tid) - (x->tid < y->tid);
}

static int cmp_report(const void *a, const void *b)
{
	const struct ts_row *x = *(struct ts_row *const *)a, *y = *(struct ts_row *const *)b;
	int64_t sx = x->t->since_ns < 0 ? INT64_MAX : x->t->since_ns;
	int64_t sy = y->t->since_ns < 0 ? INT64_MAX : y->t->since_ns;
	if (sx != sy)
		return sx < sy ? 1 : -1;
	return (x->t->tid > y->t->tid) - (x->t->tid < y->t->tid);
}

/* The end snapshot matched with the start one: a thread whose switches and CPU time did not move
 * did not run in between (blocked throughout); those are reported, most blocked first (at most
 * max_reported), with the threads their futex words name. */
static void select_reported(struct probe *p, struct ts_priv *tp)
{
	const struct snapshot *a = &tp->start, *b = &tp->end;
	size_t n = b->n, max_rep = (size_t)probe_opt(p, "max_reported");
	if (a->n) {
		tp->starts = xmalloc(a->n * sizeof(*tp->starts));
		memcpy(tp->starts, a->t, a->n * sizeof(*tp->starts)); /* shallow: only counts are read */
		qsort(tp->starts, a->n, sizeof(*tp->starts), cmp_tid);
	}
	tp->rows = xcalloc(n ? n : 1, sizeof(*tp->rows));
	tp->report = xcalloc(n ? n : 1, sizeof(*tp->report));
	tp->n_rows = n;
	size_t nr = 0;
	for (size_t i = 0; i < n; i++) {
		struct ts_row *r = &tp->rows[i];
		r->t = &b->t[i];
		r->row = -1;
		r->start = tp->starts ? bsearch(r->t, tp->starts, a->n, sizeof(*tp->starts), cmp_tid)
				      : NULL;
		r->ran = !r->start || r->start->switches != r->t->switches ||
			 r->start->cpu_ns != r->t->cpu_ns;
		r->blocked = !r->ran;
		tp->n_new += !r->start;
		tp->n_ran += r->ran;
		tp->n_blocked += r->blocked;
		if (r->blocked)
			tp->report[nr++] = r;
	}
	qsort(tp->report, nr, sizeof(*tp->report), cmp_report);
	if (nr > max_rep)
		nr = max_rep;
	for (size_t i = 0; i < nr; i++)
		tp->report[i]->reported = true;
	/* the threads a reported thread's futex words name (a lock's owner, whatever its state) */
	size_t named_until = nr;
	for (size_t i = 0; i < named_until; i++) {
		const struct ts_thread *t = tp->report[i]->t;
		if (!(t->flags & TS_F_FUTEX))
			continue;
		for (int w = 0; w < TS_FUTEX_WORDS; w++) {
			uint32_t tid = t->futex[w] & 0x3fffffffu;
			for (size_t k = 0; tid && k < n && nr < max_rep + TS_NAMED_EXTRA; k++)
				if (!tp->rows[k].reported && tp->rows[k].t->tid == tid &&
				    tp->rows[k].t->tgid == t->tgid) {
					tp->rows[k].reported = true;
					tp->report[nr++] = &tp->rows[k];
				}
		}
	}
	tp->n_report = nr;
}

/* The reported threads' kernel stacks and stack tops: a second read of those threads only. */
static void take_details(struct probe *p, struct ts_priv *tp)
{
	uint64_t t0 = mono_ns();
	if (tp->procfs) {
		for (size_t i = 0; i < tp->n_report; i++)
			procfs_details(p, tp->report[i]->t);
	} else if (tp->n_report) {
		int fd = bpf_map__fd(tp->skel->maps.want);
		for (size_t i = 0; i < tp->n_report; i++) {
			__u32 tid = tp->report[i]->t->tid;
			__u8 one = 1;
			bpf_map_update_elem(fd, &tid, &one, BPF_ANY);
		}
		struct snapshot *s = &tp->end;
		uint64_t before = s->bytes;
		snap_iterator(p, tp, TS_MODE_DETAILS, s);
		tp->details_bytes = s->bytes - before;
	}
	tp->details_ns = mono_ns() - t0;
}

/* ---- the kind's ops -------------------------------------------------------------------------- */

static int ts_load(struct probe *p, struct diag_err *err)
{
	struct ts_priv *tp = p->priv;
	struct variant_tries tries = { "" };
	if (!p->cfg.filter.pid && !p->cfg.filter.pid_set) {
		tp->no_target = true;
		snprintf(tp->why, sizeof(tp->why), "no target process: nothing to take a snapshot of");
		p->variant = "procfs";
		return 0;
	}
	for (const char *const *v = p->cfg.variants; *v; v++) {
		if (!strcmp(*v, "procfs")) {
			tp->procfs = true;
			probe_bpf_destroy(p); /* a variant tried before */
			tp->skel = NULL;
			snprintf(tp->why, sizeof(tp->why), "%s",
				 tries.first_failure[0] ? tries.first_failure
							: "the procfs variant was asked for");
			probe_variant_loaded(p, &tries, *v, 0);
			return 0;
		}
		if (strcmp(*v, "iterator"))
			continue;
		if (!(tp->skel = thread_states_skel_open(p, err)))
			return -1;
		tp->skel->rodata->stack_bytes = (__u32)probe_opt(p, "stack_bytes");
		tp->skel->rodata->max_threads = (__u32)probe_opt(p, "max_threads");
		bpf_map__set_max_entries(tp->skel->maps.want,
					 (__u32)probe_opt(p, "max_reported") + TS_NAMED_EXTRA);
		probe_bpf_select_variant(tp->skel->obj, *v);
		if (probe_variant_loaded(p, &tries, *v, thread_states_bpf__load(tp->skel)))
			return 0;
	}
	return probe_no_variant(&tries, "thread snapshots", err);
}

static int ts_attach(struct probe *p, struct diag_err *err)
{
	struct ts_priv *tp = p->priv;
	if (tp->no_target)
		return 0;
	if (!tp->procfs) {
		/* one process: the kernel walks its threads only (6.1+); a set, or an older kernel
		 * that refuses the parameter: every task, the program keeps the target's */
		union bpf_iter_link_info info = { 0 };
		LIBBPF_OPTS(bpf_iter_attach_opts, opts);
		struct bpf_link *link = NULL;
		if (p->cfg.filter.pid > 0) {
			info.task.pid = (__u32)p->cfg.filter.pid;
			opts.link_info = &info;
			opts.link_info_len = sizeof(info);
			link = bpf_program__attach_iter(tp->skel->progs.iterator_threads, &opts);
		}
		if (!link)
			link = bpf_program__attach_iter(tp->skel->progs.iterator_threads, NULL);
		if (probe_bpf_link(p, link, "the task iterator", err))
			return -1;
		tp->iter = link;
	}
	take(p, tp, TS_MODE_COUNTS, &tp->start);
	return 0;
}

/* The end snapshot, at the window's edge (before any probe's uprobes are released). */
static void ts_window_end(struct probe *p)
{
	struct ts_priv *tp = p->priv;
	if (!tp->detached && !tp->end.taken && tp->start.taken && (tp->procfs || tp->iter)) {
		take(p, tp, TS_MODE_STATES, &tp->end);
		if (tp->end.taken) {
			select_reported(p, tp);
			take_details(p, tp);
		}
	}
}

static void ts_detach(struct probe *p)
{
	struct ts_priv *tp = p->priv;
	ts_window_end(p); /* the governor stopped it (no window_end): the snapshot when it stops */
	tp->detached = true;
	tp->iter = NULL;
	probe_bpf_detach(p);
}

static void ts_destroy(struct probe *p)
{
	struct ts_priv *tp = p->priv;
	probe_bpf_destroy(p);
	tp->skel = NULL;
	tp->iter = NULL;
	snapshot_free(&tp->start);
	snapshot_free(&tp->end);
	free(tp->starts);
	free(tp->rows);
	free(tp->report);
	tp->starts = NULL;
	tp->rows = NULL;
	tp->report = NULL;
	tp->n_rows = tp->n_report = 0;
}

/* ---- what a thread waits on ------------------------------------------------------------------ */

/* Syscalls (x86-64) whose first argument is the descriptor they wait on: read, write, ioctl,
 * pread64, pwrite64, readv, writev, sendfile, connect, accept, sendto, recvfrom, sendmsg, recvmsg,
 * fcntl, flock, fsync, fdatasync, ftruncate, getdents64, splice, tee, sync_file_range,
 * fallocate, accept4, preadv, pwritev, recvmmsg, syncfs, copy_file_range. */
static const int16_t FD_CALLS[] = { 0,   1,   16,  17,  18,  19,  20,  40,  42,  43,
				    44,  45,  46,  47,  72,  73,  74,  75,  77,  217,
				    275, 276, 277, 285, 288, 295, 296, 299, 306, 326 };
/* Those whose argument 0 is a path (open, stat, lstat, access, execve, chdir, rename, mkdir, rmdir,
 * unlink, chmod, chown, statfs, chroot, mount, umount2, setxattr, getxattr, listxattr), and
 * argument 1 (openat, newfstatat, unlinkat, fchmodat, faccessat, execveat, statx, openat2,
 * faccessat2). */
static const int16_t PATH0_CALLS[] = { 2,  4,  6,   21,  59,  80,  82,  83,  84, 87,
				       90, 92, 137, 161, 165, 166, 188, 191, 194 };
static const int16_t PATH1_CALLS[] = { 257, 262, 263, 268, 269, 322, 332, 437, 439 };

static bool in_calls(const int16_t *calls, size_t n, int64_t nr)
{
	for (size_t i = 0; i < n; i++)
		if (calls[i] == nr)
			return true;
	return false;
}

static bool fd_syscall(int64_t nr)
{
	return in_calls(FD_CALLS, ARRAY_LEN(FD_CALLS), nr);
}

/* The argument that is a path, or -1. */
static int path_arg(int64_t nr)
{
	return in_calls(PATH0_CALLS, ARRAY_LEN(PATH0_CALLS), nr)   ? 0
	       : in_calls(PATH1_CALLS, ARRAY_LEN(PATH1_CALLS), nr) ? 1
								   : -1;
}

static const char *role_name(int role)
{
	return role == 1 ? "client" : role == 2 ? "server" : role == 3 ? "listening" : NULL;
}

/* The mount a descriptor's file is on (fdinfo's mnt_id in mountinfo): its file system type and
 * mount point. */
static void fd_mount(struct probe *p, int pid, int fd, struct value *out)
{
	char rel[64];
	struct diag_err err;
	snprintf(rel, sizeof(rel), "fdinfo/%d", fd);
	char *info = tfile_read_proc(p->files, pid, rel, 4096, NULL, &err);
	const char *at = info ? strstr(info, "mnt_id:") : NULL;
	int mnt = at ? atoi(at + 7) : -1;
	free(info);
	if (mnt < 0)
		return;
	char *mi = tfile_read_proc(p->files, pid, "mountinfo", 1 << 20, NULL, &err);
	for (char *line = mi, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		int id;
		char point[PATH_MAX];
		if (sscanf(line, "%d %*d %*s %*s %4095s", &id, point) != 2 || id != mnt)
			continue;
		const char *dash = strstr(line, " - ");
		char fs[64];
		if (dash && sscanf(dash + 3, "%63s", fs) == 1)
			value_set_str(out, "fs", fs);
		value_set_str(out, "mount", point);
		break;
	}
	free(mi);
}

static void format_addr(const struct netowner_sock *s, const uint8_t *addr, uint16_t port,
			char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN] = "?";
	inet_ntop(s->family == 10 ? AF_INET6 : AF_INET, addr, a, sizeof(a));
	snprintf(buf, len, s->family == 10 ? "[%s]:%u" : "%s:%u", a, port);
}

/* The descriptor thread t's system call names: {num, kind, what, role?, fs?, mount?}. */
static struct value *fd_value(struct probe *p, const struct ts_thread *t, int fd)
{
	char link[64], target[PATH_MAX];
	snprintf(link, sizeof(link), "/proc/%u/fd/%d", t->tgid, fd);
	ssize_t n = readlink(link, target, sizeof(target) - 1); /* the link's text: nothing is opened */
	if (n <= 0)
		return NULL;
	target[n] = '\0';
	struct value *v = value_obj();
	value_set_int(v, "num", fd);
	unsigned long long ino;
	if (sscanf(target, "socket:[%llu]", &ino) == 1) {
		struct netowner_sock s;
		char path[PATH_MAX], what[PATH_MAX + 128];
		int role = 0;
		int kind = netowner_socket((int)t->tgid, ino, &s, path, sizeof(path), &role);
		value_set_str(v, "kind", "socket");
		if (kind == 1) {
			char l[80], r[80];
			format_addr(&s, s.laddr, s.lport, l, sizeof(l));
			format_addr(&s, s.raddr, s.rport, r, sizeof(r));
			if (role == 3)
				snprintf(what, sizeof(what), "TCP listening on %s", l);
			else
				snprintf(what, sizeof(what), "TCP %s → %s", l, r);
			value_set_str(v, "peer", r);
		} else if (kind == 2) {
			snprintf(what, sizeof(what), "Unix socket%s%s", path[0] ? " " : "", path);
		} else {
			snprintf(what, sizeof(what), "%s", target);
		}
		value_set_str(v, "what", what);
		if (role_name(role))
			value_set_str(v, "role", role_name(role));
	} else if (!strncmp(target, "pipe:", 5)) {
		value_set_str(v, "kind", "pipe");
		value_set_str(v, "what", target);
	} else if (!strncmp(target, "anon_inode:", 11)) {
		value_set_str(v, "kind", "anon");
		value_set_str(v, "what", target + 11);
	} else if (target[0] == '/') {
		value_set_str(v, "kind", !strncmp(target, "/dev/", 5) ? "device" : "file");
		value_set_str(v, "what", target);
		fd_mount(p, (int)t->tgid, fd, v);
	} else {
		value_set_str(v, "kind", "other");
		value_set_str(v, "what", target);
	}
	return v;
}

/* The path argument of t's system call, read from its memory (a NUL within TS_PATH_MAX). */
static char *path_value(struct probe *p, const struct ts_thread *t, int arg)
{
	uint8_t buf[TS_PATH_MAX + 1];
	size_t got = read_mem_pages(p, (int)t->tgid, t->args[arg], buf, TS_PATH_MAX);
	buf[got] = '\0';
	size_t len = strnlen((const char *)buf, got);
	return len && len < got ? xasprintf("%s", (const char *)buf) : NULL;
}

/* ---- collect ----------------------------------------------------------------------------------- */

struct sample_ctx {
	struct ts_row **report;
	size_t n;
};

/* The sampler's hook: the row each reported thread's sample went to. */
static void on_sample(void *arg, const void *data, size_t size, long row)
{
	struct sample_ctx *c = arg;
	const struct diag_user_sample *rec = data;
	(void)size;
	for (size_t i = 0; i < c->n; i++)
		if (c->report[i]->t->tid == rec->tid && c->report[i]->row < 0) {
			c->report[i]->row = row;
			return;
		}
}

/* The user stacks of the reported threads, through the sampler: unwound, Python frames in. */
static struct stack_sampler *unwind_reported(struct probe *p, struct ts_row **report, size_t n,
					     struct sample_ctx *sc, struct python_procs **py_out)
{
	struct stack_sampler *smp = stack_sampler_new(-1, true, false, n ? n : 1, tag_names,
						      ARRAY_LEN(tag_names), 0, p->files);
	struct python_procs *py = NULL;
	if (probe_opt(p, "python_frames")) {
		py = python_procs_new(p->files);
		stack_sampler_set_python(smp, py, -1); /* the sampler owns it */
	}
	*py_out = py;
	sc->report = report;
	sc->n = n;
	stack_sampler_set_own_records(smp, NULL, on_sample, sc);
	struct diag_user_sample *rec = xmalloc(sizeof(*rec));
	struct diag_py_rec *pyr = py ? xmalloc(sizeof(*pyr)) : NULL;
	for (size_t i = 0; i < n; i++) {
		const struct ts_thread *t = report[i]->t;
		if (!(t->flags & TS_F_REGS) || !t->ip || t->state == 'R')
			continue;
		memset(rec, 0, offsetof(struct diag_user_sample, stack));
		rec->rec = DIAG_REC_SAMPLE;
		rec->tag = 0;
		rec->tgid = t->tgid;
		rec->tid = t->tid;
		rec->user_stack_id = -1;
		rec->kernel_stack_id = -1;
		memcpy(rec->comm, t->comm, sizeof(rec->comm));
		rec->weight = 1;
		rec->ip = t->ip;
		rec->sp = t->sp;
		rec->bp = t->bp;
		size_t len = t->stack_len <= DIAG_MAX_STACK_BYTES ? t->stack_len : DIAG_MAX_STACK_BYTES;
		memcpy(rec->stack, t->stack, len);
		rec->stack_len = (uint32_t)len;
		if (t->flags & TS_F_STACK_CUT)
			rec->flags |= DIAG_SAMPLE_CUT;
		if (pyr && python_thread_frames(py, (int)t->tgid, (int)t->tid, pyr) == 0) {
			stack_sampler_add(smp, pyr,
					  offsetof(struct diag_py_rec, f) + pyr->n * sizeof(pyr->f[0]));
			rec->flags |= DIAG_SAMPLE_PY;
		}
		stack_sampler_add(smp, rec, offsetof(struct diag_user_sample, stack) + len);
	}
	free(pyr);
	free(rec);
	return smp;
}

static struct value *thread_value(struct probe *p, const struct collect_ctx *ctx, struct ts_row *r,
				  struct stack_sampler *smp, struct python_procs *py, uint64_t window_ns)
{
	const struct ts_thread *t = r->t, *s = r->start;
	struct value *v = value_obj();
	value_set_int(v, "tid", t->tid);
	value_set_int(v, "tgid", t->tgid);
	value_set_str(v, "comm", t->comm);
	char st[2] = { t->state, 0 }, st0[2] = { s ? s->state : '-', 0 };
	value_set_str(v, "state", st);
	value_set_str(v, "state_start", st0);
	value_set_bool(v, "ran", r->ran);
	value_set_bool(v, "blocked_throughout", r->blocked);
	value_set_str(v, "tag", tag_of(t->state));
	value_set_int(v, "weight", r->blocked ? (int64_t)window_ns : 0);
	value_set_int(v, "count", 1);
	if (t->since_ns >= 0)
		value_set_int(v, "blocked_ns", t->since_ns);
	value_set_int(v, "switches",
		      s && t->switches >= s->switches ? (int64_t)(t->switches - s->switches) : 0);
	value_set_int(v, "cpu_ns", s && t->cpu_ns >= s->cpu_ns ? (int64_t)(t->cpu_ns - s->cpu_ns) : 0);
	if (t->syscall >= 0) {
		const char *name = (uint64_t)t->syscall < ARRAY_LEN(syscall_names)
					   ? syscall_names[t->syscall]
					   : NULL;
		if (name)
			value_set_str(v, "syscall", name);
		value_set_int(v, "syscall_nr", t->syscall);
		struct value *args = value_obj_set(v, "args", value_arr());
		for (int i = 0; i < 6; i++)
			value_arr_push(args, value_int((int64_t)t->args[i]));
	}
	if (t->wchan[0])
		value_set_str(v, "wchan", t->wchan);
	if (t->flags & TS_F_FUTEX) {
		struct value *f = value_obj_set(v, "futex", value_obj());
		value_set_int(f, "addr", (int64_t)t->args[0]);
		value_set_int(f, "op", (int64_t)(t->args[1] & 0xffffffffu));
		struct value *w = value_obj_set(f, "words", value_arr());
		for (int i = 0; i < TS_FUTEX_WORDS; i++)
			value_arr_push(w, value_int(t->futex[i]));
	}
	if (t->syscall >= 0 && r->blocked) {
		int pa = path_arg(t->syscall);
		char *path = pa >= 0 ? path_value(p, t, pa) : NULL;
		if (path)
			value_set_str(v, "path", path);
		free(path);
		if (fd_syscall(t->syscall) && t->args[0] < 1u << 30) {
			struct value *fd = fd_value(p, t, (int)t->args[0]);
			if (fd)
				value_obj_set(v, "fd", fd);
		}
	}
	if (t->n_knames) {
		struct value *k = value_obj_set(v, "kernel", value_arr());
		for (size_t i = 0; i < t->n_knames; i++)
			value_arr_push(k, value_str(t->knames[i]));
	} else {
		value_obj_set(v, "kernel",
			      stacks_frames_value(ctx, 0, t->kstack, NULL, t->n_kstack, true, NULL, NULL));
	}
	const uint64_t *ips = NULL;
	const uint8_t *from = NULL;
	size_t n = r->row >= 0 ? stack_sampler_row_frames(smp, (size_t)r->row, &ips, &from) : 0;
	value_obj_set(v, "user",
		      stacks_frames_value(ctx, (int)t->tgid, ips, from, n, false,
					  py ? python_stack_namer : NULL, py));
	if (n) {
		struct value *uf = value_obj_set(v, "user_from", value_arr());
		for (size_t i = 0; i < n; i++)
			value_arr_push(uf, value_str(frame_origin_name((enum frame_origin)from[i])));
	}
	return v;
}

static int ts_collect(struct probe *p, const struct collect_ctx *ctx, struct value **out,
		      struct diag_err *err)
{
	struct ts_priv *tp = p->priv;
	(void)err;
	struct value *res = value_obj();
	*out = res;
	value_set_str(res, "how", tp->no_target ? "none" : tp->procfs ? "procfs" : "iterator");
	if (tp->why[0] && (tp->no_target || tp->procfs))
		value_set_str(res, "why", tp->why);
	value_set_str(res, "since_clock", tp->procfs || tp->no_target ? "none" : "run-queue");
	const struct snapshot *a = &tp->start, *b = &tp->end;
	if (!tp->no_target && (!a->taken || !b->taken)) {
		const char *why = !a->taken ? a->why : b->why;
		why = why[0] ? why : "the probe was not attached for the window";
		value_set_str(res, "why", why);
		value_set_str(res, "not_taken", why);
	}
	struct value *snaps = value_obj_set(res, "snapshots", value_obj());
	const struct snapshot *both[2] = { a, b };
	const char *names[2] = { "start", "end" };
	for (int i = 0; i < 2; i++) {
		struct value *sv = value_obj_set(snaps, names[i], value_obj());
		value_set_int(sv, "threads", (int64_t)both[i]->n);
		value_set_num(sv, "took_ms", both[i]->took_ns / 1e6);
		value_set_int(sv, "bytes", (int64_t)(both[i]->bytes - (i ? tp->details_bytes : 0)));
	}
	struct value *dv = value_obj_set(snaps, "details", value_obj());
	value_set_int(dv, "threads", (int64_t)tp->n_report);
	value_set_num(dv, "took_ms", tp->details_ns / 1e6);
	value_set_int(dv, "bytes", (int64_t)tp->details_bytes);
	uint64_t window_ns = (uint64_t)(ctx && ctx->wall_s > 0 ? ctx->wall_s * 1e9 : 0);
	value_set_int(res, "threads_seen", (int64_t)tp->n_rows);
	value_set_int(res, "threads_ran", (int64_t)tp->n_ran);
	value_set_int(res, "threads_new", (int64_t)tp->n_new);
	value_set_int(res, "threads_blocked", (int64_t)tp->n_blocked);
	value_set_int(res, "threads_cut", (int64_t)(a->cut > b->cut ? a->cut : b->cut));
	value_set_int(res, "threads_reported", (int64_t)tp->n_report);
	struct sample_ctx sc;
	struct python_procs *py = NULL;
	struct stack_sampler *smp = unwind_reported(p, tp->report, tp->n_report, &sc, &py);
	struct value *threads = value_obj_set(res, "threads", value_arr());
	for (size_t i = 0; i < tp->n_report; i++)
		value_arr_push(threads, thread_value(p, ctx, tp->report[i], smp, py, window_ns));
	stack_sampler_report(smp, res, probe_opt(p, "stack_bytes"), tp->n_report, 0);
	stack_sampler_free(smp);
	return 0;
}

static const struct result_field ts_results[] = {
	{ "how", RT_STRING, NULL, false,
	  "how the snapshots were taken: iterator (a BPF task iterator), procfs (/proc/PID/task), or "
	  "none (no target process)" },
	{ "why", RT_STRING, NULL, true, "why the iterator was not used, or why no snapshot was taken" },
	{ "not_taken", RT_STRING, NULL, true,
	  "why a snapshot (at the window's start or end) was not taken: without it, what the threads "
	  "blocked throughout wait on is not known" },
	{ "since_clock", RT_STRING, NULL, false,
	  "what blocked_ns is measured in: run-queue (the scheduler's clock, within a few ms), or none "
	  "(not measured)" },
	{ "snapshots", RT_OBJECT, NULL, false, "the two snapshots" },
	{ "snapshots.start", RT_OBJECT, NULL, false, "at the window's start: counts and states" },
	{ "snapshots.start.threads", RT_INTEGER, "count", false, "threads read" },
	{ "snapshots.start.took_ms", RT_NUMBER, "ms", false, "time to take it" },
	{ "snapshots.start.bytes", RT_INTEGER, "bytes", false, "bytes the iterator wrote" },
	{ "snapshots.end", RT_OBJECT, NULL, false, "at the window's end: counts, states, stacks, system calls" },
	{ "snapshots.end.threads", RT_INTEGER, "count", false, "threads read" },
	{ "snapshots.end.took_ms", RT_NUMBER, "ms", false, "time to take it" },
	{ "snapshots.end.bytes", RT_INTEGER, "bytes", false, "bytes the iterator wrote" },
	{ "snapshots.details", RT_OBJECT, NULL, false,
	  "the reported threads read again in full: kernel stacks, stack tops" },
	{ "snapshots.details.threads", RT_INTEGER, "count", false, "threads read" },
	{ "snapshots.details.took_ms", RT_NUMBER, "ms", false, "time to read them" },
	{ "snapshots.details.bytes", RT_INTEGER, "bytes", false, "bytes the iterator wrote" },
	{ "threads_seen", RT_INTEGER, "count", false, "threads at the end (both snapshots taken)" },
	{ "threads_ran", RT_INTEGER, "count", false,
	  "threads that ran in the window, or appeared in it (the off-CPU probes see them)" },
	{ "threads_new", RT_INTEGER, "count", false, "threads that appeared during the window" },
	{ "threads_blocked", RT_INTEGER, "count", false,
	  "threads that did not run between the snapshots: blocked since before the window" },
	{ "threads_cut", RT_INTEGER, "count", false, "threads over max_threads, not read" },
	{ "threads_reported", RT_INTEGER, "count", false, "threads in `threads`" },
	{ "threads", RT_ARRAY, NULL, false,
	  "threads blocked throughout (most blocked first, max_reported), then the threads their futex "
	  "words name" },
	{ "threads[]", RT_OBJECT, NULL, false, "one thread, as the end snapshot saw it" },
	{ "threads[].tid", RT_INTEGER, NULL, false, "thread id" },
	{ "threads[].tgid", RT_INTEGER, NULL, false, "process id" },
	{ "threads[].comm", RT_STRING, NULL, false, "thread name" },
	{ "threads[].state", RT_STRING, NULL, false, "state at the end: R S D T t X Z P I, as /proc" },
	{ "threads[].state_start", RT_STRING, NULL, false, "state at the start (- : not there yet)" },
	{ "threads[].ran", RT_BOOLEAN, NULL, false, "it ran in the window" },
	{ "threads[].blocked_throughout", RT_BOOLEAN, NULL, false,
	  "it did not run between the snapshots (neither switches nor CPU time moved)" },
	{ "threads[].tag", RT_STRING, NULL, false,
	  "the off-CPU state its state is: runnable, sleeping, uninterruptible, other" },
	{ "threads[].weight", RT_INTEGER, "ns", false,
	  "its time in the window spent blocked there: the window when blocked throughout, else 0" },
	{ "threads[].count", RT_INTEGER, "count", false, "1" },
	{ "threads[].blocked_ns", RT_INTEGER, "ns", true,
	  "since it last ran, at the end (since_clock); absent when not measured" },
	{ "threads[].switches", RT_INTEGER, "count", false, "context switches in the window" },
	{ "threads[].cpu_ns", RT_INTEGER, "ns", false, "CPU time in the window" },
	{ "threads[].syscall", RT_STRING, NULL, true, "the system call it is in" },
	{ "threads[].syscall_nr", RT_INTEGER, NULL, true, "its number (x86-64)" },
	{ "threads[].args", RT_ARRAY, NULL, true, "its six arguments" },
	{ "threads[].args[]", RT_INTEGER, NULL, false, "an argument" },
	{ "threads[].wchan", RT_STRING, NULL, true, "procfs without a kernel stack: where it sleeps" },
	{ "threads[].futex", RT_OBJECT, NULL, true, "in a futex call: the words at its address" },
	{ "threads[].futex.addr", RT_INTEGER, NULL, false, "the futex's address" },
	{ "threads[].futex.op", RT_INTEGER, NULL, false, "the futex operation (its second argument)" },
	{ "threads[].futex.words", RT_ARRAY, NULL, false,
	  "32-bit words from the address on (a glibc mutex: __lock, __count, __owner, __nusers, "
	  "__kind, __spins)" },
	{ "threads[].futex.words[]", RT_INTEGER, NULL, false, "a word" },
	{ "threads[].path", RT_STRING, NULL, true, "the path its system call names (open, stat...)" },
	{ "threads[].fd", RT_OBJECT, NULL, true, "the descriptor its system call names" },
	{ "threads[].fd.num", RT_INTEGER, NULL, false, "the descriptor" },
	{ "threads[].fd.kind", RT_STRING, NULL, false, "socket, pipe, file, device, anon or other" },
	{ "threads[].fd.what", RT_STRING, NULL, false,
	  "what it is: the file's path, the socket's addresses, the pipe's inode" },
	{ "threads[].fd.role", RT_STRING, NULL, true, "a socket: client, server or listening" },
	{ "threads[].fd.peer", RT_STRING, NULL, true, "a TCP socket: the other end's address" },
	{ "threads[].fd.fs", RT_STRING, NULL, true, "a file: its file system's type" },
	{ "threads[].fd.mount", RT_STRING, NULL, true, "a file: where that file system is mounted" },
	{ "threads[].kernel", RT_ARRAY, NULL, false, "kernel frames, leaf first" },
	{ "threads[].kernel[]", RT_STRING, NULL, false, "a symbol" },
	{ "threads[].user", RT_ARRAY, NULL, false, "user frames, leaf first" },
	{ "threads[].user[]", RT_STRING, NULL, false, "a symbol, or 0xADDRESS when unknown" },
	{ "threads[].user_from", RT_ARRAY, NULL, true, "where each user frame came from" },
	{ "threads[].user_from[]", RT_STRING, NULL, false, "fp, cfi, dwarf or python" },
	STACK_SAMPLER_RESULT_FIELDS,
};
static const char *const ts_features[] = { NULL };

const struct probe_kind probe_kind_thread_states = {
	.name = "thread_states",
	.summary = "every thread of the target at the window's start and end: those that did not run "
		   "in between, their state, stacks, system call and since when they are blocked",
	.options = ts_options,
	.n_options = ARRAY_LEN(ts_options),
	.filters = FILTER_PID,
	.variants = ts_variants,
	.private_size = sizeof(struct ts_priv),
	.results = ts_results,
	.n_results = ARRAY_LEN(ts_results),
	.features = ts_features,
	.load = ts_load,
	.attach = ts_attach,
	.window_end = ts_window_end,
	.detach = ts_detach,
	.collect = ts_collect,
	.destroy = ts_destroy,
	.object = probe_bpf_object,
	.bpf_bytes = thread_states_bpf__elf_bytes,
};
