/* diag_python.h — CPython frames read in BPF: what a stack probe streams after a sample of a
 * Python thread (the interpreter's own frame chain, innermost first), and the layout of the
 * interpreter it needs to read them (engine/symbolize/python.c finds the version and the offsets
 * from the binary, and writes one struct diag_py_proc per Python process into `py_procs`).
 *
 * The walk: the thread's PyThreadState (cached per thread in `py_tstates`, checked against its
 * native thread id every time; else found by walking the main interpreter's thread list), its
 * current _PyInterpreterFrame (through _PyCFrame up to 3.12), then `previous` up to
 * DIAG_PY_MAX_FRAMES frames: each frame's code object and instruction pointer, and whether the
 * frame ends a C-level call of the evaluation loop (3.11: is_entry; 3.12+: the next frame is the
 * loop's own shim, owned by the C stack). Every read is bpf_probe_read_user of the current task:
 * a page not present, a torn list, a cycle or garbage ends the walk (bounded, counted in the
 * record's flags), never the program.
 * Must not: name frames (code objects are read in user space), follow anything but the current
 * task's memory, or define the sample record (diag_unwind.h).
 */
#ifndef DIAG_BPF_PYTHON_H
#define DIAG_BPF_PYTHON_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define DIAG_PY_MAX_FRAMES 64   /* frames per sample; deeper stacks are cut (flags) */
#define DIAG_PY_MAX_THREADS 64  /* thread states walked to find the current thread's */
#define DIAG_PY_NONE 0xffffu    /* an offset the version does not have */

#define DIAG_REC_PY 3 /* a ring buffer record: struct diag_py_rec */

/* entry_kind: how a frame says the evaluation loop's C call it runs in ends there */
#define DIAG_PY_ENTRY_FLAG 1    /* 3.11: a bool at frame_entry, true on the call's first frame */
#define DIAG_PY_ENTRY_SHIM 2    /* 3.12+: a frame whose owner (a char at frame_entry) is
				 * owner_cstack is the loop's shim: the frame below it is the
				 * call's first */

/* Offsets into the interpreter's structures (bytes), as the version found defines them. */
struct diag_py_layout {
	__u16 runtime_interp_head;  /* _PyRuntimeState.interpreters.head */
	__u16 interp_threads_head;  /* PyInterpreterState.threads.head */
	__u16 tstate_next;          /* PyThreadState.next */
	__u16 tstate_native_tid;    /* PyThreadState.native_thread_id */
	__u16 tstate_frame;         /* PyThreadState.cframe (< 3.13) or .current_frame */
	__u16 cframe_current_frame; /* _PyCFrame.current_frame; DIAG_PY_NONE from 3.13 */
	__u16 frame_code;           /* _PyInterpreterFrame.f_code (.f_executable from 3.13) */
	__u16 frame_previous;
	__u16 frame_instr;          /* .prev_instr (< 3.13) or .instr_ptr */
	__u16 frame_entry;          /* .is_entry (3.11) or .owner */
	__u8 entry_kind;            /* DIAG_PY_ENTRY_* */
	__u8 owner_cstack;          /* FRAME_OWNED_BY_CSTACK */
	__u16 pad;
};

/* One Python process: where its runtime state is, and how to read it. */
struct diag_py_proc {
	__u64 runtime; /* the address of _PyRuntime in the process */
	struct diag_py_layout l;
};

#define DIAG_PY_FRAME_ENTRY 1ull /* in code: this frame is the first of a C call of the loop */

/* One frame: its code object (8-aligned: bit 0 is DIAG_PY_FRAME_ENTRY) and instruction pointer. */
struct diag_py_frame {
	__u64 code;
	__u64 instr;
};

#define DIAG_PY_CUT 1       /* flags: more frames than DIAG_PY_MAX_FRAMES */
#define DIAG_PY_NO_TSTATE 2 /* the thread has no thread state (not a Python thread, or not yet) */
#define DIAG_PY_BAD_READ 4  /* a read failed mid-walk: the frames before it are kept */

/* The Python frames of the sample that follows it in the ring buffer from the same thread
 * (struct diag_user_sample with DIAG_SAMPLE_PY), innermost first. */
struct diag_py_rec {
	__u32 rec;  /* DIAG_REC_PY */
	__u32 tid;
	__u32 n;    /* frames in f[] */
	__u32 flags;
	__u64 hash; /* of the frames (code objects and instructions): 0 for none */
	struct diag_py_frame f[DIAG_PY_MAX_FRAMES];
};

#ifdef __BPF__
/* The maps a probe that walks Python frames declares (through DIAG_UNWIND_MAPS): the Python
 * processes of the run (written by the engine), the thread states found, and the record's
 * per-CPU scratch. */
#define DIAG_PYTHON_MAPS                                                                          \
	const volatile bool py_walk = false;                                                      \
	struct {                                                                                  \
		__uint(type, BPF_MAP_TYPE_HASH);                                                  \
		__uint(max_entries, 1024);                                                        \
		__type(key, __u32);                                                               \
		__type(value, struct diag_py_proc);                                               \
	} py_procs SEC(".maps");                                                                  \
	struct {                                                                                  \
		__uint(type, BPF_MAP_TYPE_LRU_HASH);                                              \
		__uint(max_entries, 4096);                                                        \
		__type(key, __u32);                                                               \
		__type(value, __u64);                                                             \
	} py_tstates SEC(".maps");                                                                \
	struct {                                                                                  \
		__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);                                          \
		__uint(max_entries, 1);                                                           \
		__type(key, __u32);                                                               \
		__type(value, struct diag_py_rec);                                                \
	} py_scratch SEC(".maps")

static __always_inline __u64 diag_py_read_ptr(__u64 addr, bool *bad)
{
	__u64 v = 0;
	if (!addr || bpf_probe_read_user(&v, sizeof(v), (const void *)addr)) {
		*bad = true;
		return 0;
	}
	return v;
}

/* Whether tstate is thread tid's (its native thread id). */
static __always_inline bool diag_py_tstate_is(__u64 tstate, const struct diag_py_layout *l, __u32 tid)
{
	__u64 native = 0;
	if (!tstate || bpf_probe_read_user(&native, sizeof(native),
					   (const void *)(tstate + l->tstate_native_tid)))
		return false;
	return (__u32)native == tid && native >> 32 == 0;
}

/* bpf_loop's state for the thread list walk. */
struct diag_py_tstate_walk {
	const struct diag_py_layout *l;
	__u64 ts;
	__u32 tid;
	bool found;
};

static long diag_py_tstate_step(__u32 i, void *ctx)
{
	struct diag_py_tstate_walk *w = ctx;
	bool bad = false;
	if (!w->ts)
		return 1;
	if (diag_py_tstate_is(w->ts, w->l, w->tid)) {
		w->found = true;
		return 1;
	}
	w->ts = diag_py_read_ptr(w->ts + w->l->tstate_next, &bad);
	return bad ? 1 : 0;
}

/* The current thread's PyThreadState, or 0. */
static __always_inline __u64 diag_py_tstate(void *tstates, const struct diag_py_proc *pp, __u32 tid)
{
	const struct diag_py_layout *l = &pp->l;
	__u64 *cached = bpf_map_lookup_elem(tstates, &tid);
	if (cached && diag_py_tstate_is(*cached, l, tid))
		return *cached;
	bool bad = false;
	__u64 interp = diag_py_read_ptr(pp->runtime + l->runtime_interp_head, &bad);
	struct diag_py_tstate_walk w = { .l = l, .tid = tid };
	w.ts = bad ? 0 : diag_py_read_ptr(interp + l->interp_threads_head, &bad);
	if (bad || !w.ts)
		return 0;
	bpf_loop(DIAG_PY_MAX_THREADS, diag_py_tstate_step, &w, 0);
	if (!w.found)
		return 0;
	bpf_map_update_elem(tstates, &tid, &w.ts, BPF_ANY);
	return w.ts;
}

/* bpf_loop's state for the frame walk. The count of frames kept is r->n, in the map value: a
 * counter on the stack would be a known, growing value to the verifier, which then checks the
 * callback once per iteration (kernels from 6.8 do, until the states converge) instead of once. */
struct diag_py_frame_walk {
	const struct diag_py_layout *l;
	struct diag_py_rec *r;
	__u64 frame, hash;
	bool bad;
};

/* One frame: kept (code, instruction, the entry mark), or a shim that marks the one kept last. */
static long diag_py_frame_step(__u32 i, void *ctx)
{
	struct diag_py_frame_walk *w = ctx;
	const struct diag_py_layout *l = w->l;
	struct diag_py_rec *r = w->r;
	__u32 n = r->n;
	if (!w->frame)
		return 1;
	if (n >= DIAG_PY_MAX_FRAMES) {
		r->flags |= DIAG_PY_CUT;
		return 1;
	}
	__u64 code = diag_py_read_ptr(w->frame + l->frame_code, &w->bad);
	__u64 instr = diag_py_read_ptr(w->frame + l->frame_instr, &w->bad);
	__u64 prev = diag_py_read_ptr(w->frame + l->frame_previous, &w->bad);
	__u8 entry = 0;
	if (bpf_probe_read_user(&entry, 1, (const void *)(w->frame + l->frame_entry)))
		w->bad = true;
	if (w->bad)
		return 1;
	w->frame = prev;
	if (l->entry_kind == DIAG_PY_ENTRY_SHIM && entry == l->owner_cstack) {
		/* the loop's shim: the frame below it (the last one kept) was the call's first */
		if (n > 0)
			r->f[(n - 1) & (DIAG_PY_MAX_FRAMES - 1)].code |= DIAG_PY_FRAME_ENTRY;
		return 0;
	}
	struct diag_py_frame *f = &r->f[n & (DIAG_PY_MAX_FRAMES - 1)];
	f->code = code & ~7ull;
	if (l->entry_kind == DIAG_PY_ENTRY_FLAG && entry)
		f->code |= DIAG_PY_FRAME_ENTRY;
	f->instr = instr;
	w->hash = (w->hash ^ f->code ^ (instr << 1)) * 0x100000001b3ull; /* FNV-1a's prime */
	r->n = n + 1;
	return 0;
}

/* Fills scratch's record with the current thread's Python frames when its process is in procs.
 * Returns the record (n may be 0, with flags saying why), or NULL when the process is not a
 * Python one (or scratch is missing). Both walks are bpf_loop callbacks: verified once, whatever
 * the bounds. */
static __noinline struct diag_py_rec *diag_py_walk(void *procs, void *tstates, void *scratch,
							__u32 tgid, __u32 tid)
{
	const struct diag_py_proc *pp = bpf_map_lookup_elem(procs, &tgid);
	__u32 zero = 0;
	struct diag_py_rec *r = pp ? bpf_map_lookup_elem(scratch, &zero) : NULL;
	if (!r)
		return NULL;
	const struct diag_py_layout *l = &pp->l;
	r->rec = DIAG_REC_PY;
	r->tid = tid;
	r->n = 0;
	r->flags = 0;
	r->hash = 0;
	__u64 ts = diag_py_tstate(tstates, pp, tid);
	if (!ts) {
		r->flags = DIAG_PY_NO_TSTATE;
		return r;
	}
	struct diag_py_frame_walk w = { .l = l, .r = r, .hash = 0xcbf29ce484222325ull };
	w.frame = diag_py_read_ptr(ts + l->tstate_frame, &w.bad);
	if (l->cframe_current_frame != DIAG_PY_NONE)
		w.frame = diag_py_read_ptr(w.frame + l->cframe_current_frame, &w.bad);
	if (!w.bad)
		bpf_loop(DIAG_PY_MAX_FRAMES * 2, diag_py_frame_step, &w, 0); /* shims take no slot */
	if (w.bad)
		r->flags |= DIAG_PY_BAD_READ;
	r->hash = r->n ? (w.hash ? w.hash : 1) : 0;
	return r;
}

/* Sends the record through ring buffer rb (no wakeup: the sample after it decides). 0 or -1. */
static __always_inline int diag_py_output(void *rb, struct diag_py_rec *r)
{
	__u64 n = r->n;
	if (n > DIAG_PY_MAX_FRAMES)
		n = DIAG_PY_MAX_FRAMES;
	__u64 size = __builtin_offsetof(struct diag_py_rec, f) + n * sizeof(struct diag_py_frame);
	if (size > sizeof(*r))
		size = sizeof(*r);
	return bpf_ringbuf_output(rb, r, size, BPF_RB_NO_WAKEUP) ? -1 : 0;
}
#endif

#endif
