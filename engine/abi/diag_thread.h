/* diag_thread.h — the state a probe keeps for a thread between two of its events (a syscall's
 * entry and exit, a request open on a socket): in task storage where the kernel has it (Linux
 * 5.11), else in an LRU hash by thread id, preallocated (no allocation per event), its size and
 * the choice set by the engine before load (engine/probes/runtime.h's probe_thread_state). The
 * map not chosen is not created, and the branches that use it are dead code to the verifier.
 * Must not: know what the state holds, or when a thread's state ends (the probe says: NAME_drop).
 */
#ifndef DIAG_BPF_THREAD_H
#define DIAG_BPF_THREAD_H

#ifdef __BPF__
/* Defines, for per-thread state of type TYPE: the maps NAME (task storage) and NAME_by_tid (the
 * hash), the knob NAME_in_hash (rodata: the hash is used), and
 *   TYPE *NAME_get(bool create)   the current thread's state; created zeroed when create (NULL:
 *                                 none, or the map is full)
 *   void NAME_drop(void)          its end in the hash (a thread id is reused: a new thread must
 *                                 not find its dead predecessor's state; exit and exit_group
 *                                 never return, the LRU evicts what they leave); task storage
 *                                 goes with its task, and a caller resets what it keeps there. */
#define DIAG_THREAD_STATE(NAME, TYPE)                                                             \
	struct {                                                                                  \
		__uint(type, BPF_MAP_TYPE_TASK_STORAGE);                                          \
		__uint(map_flags, BPF_F_NO_PREALLOC);                                             \
		__type(key, int);                                                                 \
		__type(value, TYPE);                                                              \
	} NAME SEC(".maps");                                                                      \
	struct {                                                                                  \
		__uint(type, BPF_MAP_TYPE_LRU_HASH);                                              \
		__uint(max_entries, 1);                                                           \
		__type(key, __u32);                                                               \
		__type(value, TYPE);                                                              \
	} NAME##_by_tid SEC(".maps");                                                             \
	const volatile bool NAME##_in_hash = false;                                               \
	static __always_inline TYPE *NAME##_get(bool create)                                      \
	{                                                                                         \
		if (!NAME##_in_hash)                                                              \
			return bpf_task_storage_get(&NAME, bpf_get_current_task_btf(), 0,         \
						    create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0); \
		__u32 tid = (__u32)bpf_get_current_pid_tgid();                                    \
		TYPE *e = bpf_map_lookup_elem(&NAME##_by_tid, &tid);                              \
		if (e || !create)                                                                 \
			return e;                                                                 \
		TYPE zero = {};                                                                   \
		bpf_map_update_elem(&NAME##_by_tid, &tid, &zero, BPF_NOEXIST);                    \
		return bpf_map_lookup_elem(&NAME##_by_tid, &tid);                                 \
	}                                                                                         \
	static __always_inline void NAME##_drop(void)                                             \
	{                                                                                         \
		if (NAME##_in_hash) {                                                             \
			__u32 tid = (__u32)bpf_get_current_pid_tgid();                            \
			bpf_map_delete_elem(&NAME##_by_tid, &tid);                                \
		}                                                                                 \
	}
#endif

#endif
