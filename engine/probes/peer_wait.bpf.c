// SPDX-License-Identifier: GPL-2.0
/* peer_wait.bpf.c — how long the target waits for the other end of its stream sockets (TCP,
 * Unix), per peer: as a client, from sending on a connection to the first bytes of the answer;
 * as a server, from a request arriving to the first bytes of its response.
 *
 * Two raw tracepoints: sys_enter notes which transfer (read, recv*, write, send*, sendfile),
 * connect or accept a target thread enters, on which descriptor, in per-thread state (task
 * storage; before 5.11 a hash by thread); sys_exit resolves the descriptor to its socket (the
 * task's file table: file → inode → socket → sock), keeps one record per socket (by inode: its
 * role and the start of the wait open on it), and ends a wait by adding it to its peer's
 * log-linear histogram. close() forgets the socket. The role comes from connect (client), accept
 * (server), user space's reading of /proc before attach (seeded in socks), or else the direction
 * of the first transfer seen (counted as inferred).
 * Descriptors found not to be stream sockets are remembered per process (nonsock), so that a
 * process writing files costs a lookup per write, not a walk of its file table.
 * Sampling is per socket (1 in N by inode), so every wait measured is whole.
 * A thread's sleeps (nanosleep, clock_nanosleep) are placed by what its own last transfer left
 * open: a request of its still unanswered (a delay or back-off inside a request: added to that
 * peer's sleep time too; only on a socket that has carried an answer, or a new connection's
 * first request, not a one-way stream) or none (pacing between requests, a loop with no request),
 * in `sleeps`. A thread keeps one request of each kind: the one it serves, the one it sent.
 * Their reads are timed and placed the same way, in `reads`: a server's read that brings a new
 * request waited for work; a client's that brings the answer to its request waited on the peer.
 * Must not: read payloads, keep per-call records, or act for other processes beyond the filter.
 */
#include "abi/vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "abi/diag_bpf.h"
#include "abi/diag_thread.h"
#include "probes/peer_wait.h"

enum peer_op { PW_NONE = 0, PW_READ, PW_WRITE, PW_CONNECT, PW_ACCEPT, PW_CLOSE, PW_DUP, PW_FORGET_ALL,
	       PW_SLEEP };

#if defined(__TARGET_ARCH_arm64)
#define NR_READ 63
#define NR_WRITE 64
#define NR_READV 65
#define NR_WRITEV 66
#define NR_SENDFILE 71
#define NR_CLOSE 57
#define NR_CONNECT 203
#define NR_ACCEPT 202
#define NR_ACCEPT4 242
#define NR_SENDTO 206
#define NR_RECVFROM 207
#define NR_SENDMSG 211
#define NR_RECVMSG 212
#define NR_RECVMMSG 243
#define NR_SENDMMSG 269
#define NR_DUP2 (-1) /* arm64 has dup3 only */
#define NR_DUP3 24
#define NR_CLOSE_RANGE 436
#define NR_EXECVE 221
#define NR_EXECVEAT 281
#define NR_NANOSLEEP 101
#define NR_CLOCK_NANOSLEEP 115
#else /* x86-64 */
#define NR_READ 0
#define NR_WRITE 1
#define NR_READV 19
#define NR_WRITEV 20
#define NR_SENDFILE 40
#define NR_CLOSE 3
#define NR_CONNECT 42
#define NR_ACCEPT 43
#define NR_ACCEPT4 288
#define NR_SENDTO 44
#define NR_RECVFROM 45
#define NR_SENDMSG 46
#define NR_RECVMSG 47
#define NR_RECVMMSG 299
#define NR_SENDMMSG 307
#define NR_DUP2 33
#define NR_DUP3 292
#define NR_CLOSE_RANGE 436
#define NR_EXECVE 59
#define NR_EXECVEAT 322
#define NR_NANOSLEEP 35
#define NR_CLOCK_NANOSLEEP 230
#endif

#define EINPROGRESS_ 115
#define S_IFMT_ 0170000
#define S_IFSOCK_ 0140000
#define SOCK_STREAM_ 1
#define IPPROTO_TCP_ 6

/* A thread's call in progress, and what its transfers left open (for its sleeps). */
struct peer_call {
	__u32 op; /* enum peer_op; PW_NONE: not in a call we follow */
	__s32 fd;
	__u64 srv_ino;     /* the socket on which the thread read a request it has not answered; 0: none */
	__u64 cli_ino;     /* the socket on which it sent a request not answered yet; 0: none */
	__u8 last_unfollowed; /* the thread's last transfer was on a socket sampling does not follow */
	__u8 sleep_slot;   /* a sleep in progress: enum peer_sleep_slot of its time */
	__u8 srv_fresh;    /* srv_ino's request came in one read (none since): not a stream's data */
	__u8 pad[5];
	__u64 sleep_ino;   /* a sleep in a request: the socket its request is open on */
	__u64 sleep_from;  /* a sleep in progress: when it started */
	__u64 read_from;   /* a read in progress: when it started */
};

/* Each thread's, between its calls (task storage, or before Linux 5.11 an LRU hash by thread:
 * diag_thread.h, an entry per thread of the target that made one of the calls above). exit and
 * exit_group never return: the calling thread's entry goes at its call (the engine's numbers),
 * so that a thread that later gets its id does not inherit a request open. The other threads an
 * exit_group or a signal ends keep theirs until the LRU evicts them: a new thread with one of
 * their ids (rare within a run) finds a request open on a socket that is gone, which no wait
 * is then timed against. */
DIAG_THREAD_STATE(in_call, struct peer_call);
const volatile __s64 exit_nr = -1, exit_group_nr = -1;

/* The target's sockets by inode number. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384); /* set from the recipe before load (max_sockets) */
	__type(key, __u64);
	__type(value, struct peer_sock);
} socks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256); /* set from the recipe before load (max_peers) */
	__type(key, struct peer_key);
	__type(value, struct peer_hist);
} peers SEC(".maps");

/* Per process, the descriptors below NONSOCK_FDS found not to be stream sockets (a file, a pipe,
 * a datagram socket): their transfers then cost one lookup, not the file-table walk. A bit is
 * cleared when the descriptor is closed or replaced (close, dup2/dup3 onto it), and all of them
 * at close_range and exec (close-on-exec descriptors close without a close call). */
#define NONSOCK_FDS 256
struct nonsock_fds {
	__u8 fd[NONSOCK_FDS]; /* a byte a descriptor: a plain store (atomic or/and are Linux 5.12) */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct nonsock_fds);
} nonsock SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PEER_SLEEP_NR);
	__type(key, __u32);
	__type(value, __u64);
} sleeps SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PEER_READ_NR);
	__type(key, __u32);
	__type(value, __u64);
} reads SEC(".maps");

/* One zeroed histogram to insert new peers from (the stack is too small for one). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct peer_hist);
} zero_hist SEC(".maps");

static __always_inline __u32 op_of(long nr)
{
	switch (nr) {
	case NR_READ: case NR_READV: case NR_RECVFROM: case NR_RECVMSG: case NR_RECVMMSG:
		return PW_READ;
	case NR_WRITE: case NR_WRITEV: case NR_SENDTO: case NR_SENDMSG: case NR_SENDMMSG:
	case NR_SENDFILE:
		return PW_WRITE;
	case NR_CONNECT:
		return PW_CONNECT;
	case NR_ACCEPT: case NR_ACCEPT4:
		return PW_ACCEPT;
	case NR_CLOSE:
		return PW_CLOSE;
	case NR_DUP2: case NR_DUP3:
		return PW_DUP;
	case NR_CLOSE_RANGE: case NR_EXECVE: case NR_EXECVEAT:
		return PW_FORGET_ALL;
	case NR_NANOSLEEP: case NR_CLOCK_NANOSLEEP:
		return PW_SLEEP;
	}
	return PW_NONE;
}

/* The stream socket behind descriptor fd of the current task, and its inode number; NULL for
 * anything else. */
static __always_inline struct sock *stream_sock_of(int fd, __u64 *ino)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	struct fdtable *fdt = BPF_CORE_READ(t, files, fdt);
	struct file **fds, *f = NULL;

	if (fd < 0 || !fdt || (unsigned int)fd >= BPF_CORE_READ(fdt, max_fds))
		return NULL;
	fds = BPF_CORE_READ(fdt, fd);
	if (bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]) || !f)
		return NULL;
	struct inode *in = BPF_CORE_READ(f, f_inode);
	if (!in || (BPF_CORE_READ(in, i_mode) & S_IFMT_) != S_IFSOCK_)
		return NULL;
	struct socket *so = BPF_CORE_READ(f, private_data);
	struct sock *sk = BPF_CORE_READ(so, sk);
	if (!sk || BPF_CORE_READ(sk, sk_type) != SOCK_STREAM_)
		return NULL;
	__u16 family = BPF_CORE_READ(sk, __sk_common.skc_family);
	if (family == PEER_AF_INET || family == PEER_AF_INET6) {
		if (BPF_CORE_READ(sk, sk_protocol) != IPPROTO_TCP_)
			return NULL;
	} else if (family != PEER_AF_UNIX) {
		return NULL;
	}
	*ino = BPF_CORE_READ(in, i_ino);
	return sk;
}

static __always_inline bool known_nonsock(__u32 tgid, int fd)
{
	if (fd < 0 || fd >= NONSOCK_FDS)
		return false;
	struct nonsock_fds *n = bpf_map_lookup_elem(&nonsock, &tgid);
	return n && n->fd[(__u32)fd & (NONSOCK_FDS - 1)];
}

static __always_inline void mark_nonsock(__u32 tgid, int fd, bool set)
{
	if (fd < 0 || fd >= NONSOCK_FDS)
		return;
	struct nonsock_fds *n = bpf_map_lookup_elem(&nonsock, &tgid);
	if (!n) {
		if (!set)
			return;
		struct nonsock_fds zero = {};
		bpf_map_update_elem(&nonsock, &tgid, &zero, BPF_NOEXIST);
		n = bpf_map_lookup_elem(&nonsock, &tgid);
		if (!n)
			return;
	}
	n->fd[(__u32)fd & (NONSOCK_FDS - 1)] = set;
}

static __always_inline void unix_path(struct sock *usk, char *path)
{
	struct unix_address *a = BPF_CORE_READ((struct unix_sock *)usk, addr);
	if (!a)
		return;
	const char *p = (const char *)&a->name[0].sun_path[0];
	char first = 0;
	bpf_probe_read_kernel(&first, 1, p);
	if (first) {
		bpf_probe_read_kernel_str(path, PEER_PATH_LEN, p);
	} else { /* abstract: "@name" */
		path[0] = '@';
		bpf_probe_read_kernel_str(path + 1, PEER_PATH_LEN - 1, p + 1);
	}
}

/* The key of a socket's waits: the peer (client) or the service (server). */
static __always_inline void name_sock(struct sock *sk, struct peer_sock *s)
{
	struct peer_key *k = &s->key;
	k->role = s->role;
	k->family = BPF_CORE_READ(sk, __sk_common.skc_family);
	k->netns = BPF_CORE_READ(sk, __sk_common.skc_net.net, ns.inum);
	if (k->family == PEER_AF_UNIX) {
		struct sock *end = sk;
		if (s->role == PEER_ROLE_CLIENT)
			end = BPF_CORE_READ((struct unix_sock *)sk, peer);
		if (end)
			unix_path(end, k->path);
	} else if (s->role == PEER_ROLE_CLIENT) {
		k->port = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
		if (k->family == PEER_AF_INET) {
			__u32 a = BPF_CORE_READ(sk, __sk_common.skc_daddr);
			__builtin_memcpy(k->addr, &a, 4);
		} else {
			BPF_CORE_READ_INTO(&k->addr, sk, __sk_common.skc_v6_daddr.in6_u.u6_addr8);
		}
	} else {
		k->port = BPF_CORE_READ(sk, __sk_common.skc_num);
		if (k->family == PEER_AF_INET) {
			__u32 a = BPF_CORE_READ(sk, __sk_common.skc_rcv_saddr);
			__builtin_memcpy(k->addr, &a, 4);
		} else {
			BPF_CORE_READ_INTO(&k->addr, sk, __sk_common.skc_v6_rcv_saddr.in6_u.u6_addr8);
		}
	}
	s->named = 1;
}

/* 0..3 ns: slots 0..3; then 4 slots per power of two. */
static __always_inline __u32 hist_slot(__u64 v)
{
	if (v < 4)
		return (__u32)v;
	__u32 l = diag_log2(v);
	__u32 s = (l - 1) * PEER_HIST_SUB + (__u32)((v >> (l - 2)) & 3);
	return s < PEER_HIST_SLOTS ? s : PEER_HIST_SLOTS - 1;
}

/* The histogram of peer k, inserted empty when new; NULL when the map is full (counted). */
static __always_inline struct peer_hist *peer_hist_of(const struct peer_key *k)
{
	struct peer_hist *h = bpf_map_lookup_elem(&peers, k);
	if (h)
		return h;
	__u32 zero = 0;
	struct peer_hist *z = bpf_map_lookup_elem(&zero_hist, &zero);
	if (!z)
		return NULL;
	bpf_map_update_elem(&peers, k, z, BPF_NOEXIST);
	h = bpf_map_lookup_elem(&peers, k);
	if (!h)
		diag_stat_inc(&stats, DIAG_STAT_MAP_FULL);
	return h;
}

static __always_inline void record_wait(const struct peer_key *k, __u64 ns)
{
	struct peer_hist *h = peer_hist_of(k);
	if (!h)
		return;
	__u32 slot = hist_slot(ns);
	__sync_fetch_and_add(&h->count, 1);
	__sync_fetch_and_add(&h->sum_ns, ns);
	if (ns > h->max_ns)
		h->max_ns = ns; /* racy max: good enough for "longest" */
	/* the compiler folds the clamp in hist_slot into this check unless told not to, and the
	 * verifier then sees an unbounded index */
	asm volatile("" : "+r"(slot));
	if (slot < PEER_HIST_SLOTS)
		__sync_fetch_and_add(&h->slots[slot], 1);
	diag_stat_inc(&stats, DIAG_STAT_EVENTS);
}

static __always_inline void slot_add(void *map, __u32 slot, __u64 v)
{
	__u64 *c = bpf_map_lookup_elem(map, &slot);
	if (c)
		*c += v;
}

/* A sleep starts: placed by what the thread's last transfer left open (its request still
 * unanswered on that socket, or nothing). */
static __always_inline void sleep_begins(struct peer_call *c)
{
	c->sleep_from = bpf_ktime_get_ns();
	c->sleep_ino = 0;
	c->sleep_slot = PEER_SLEEP_BETWEEN_NS;
	if (c->last_unfollowed) {
		c->sleep_slot = PEER_SLEEP_UNPLACED_NS;
		return;
	}
	/* an open wait is a request only on a socket that has carried an answer, or, serving, on a
	 * new connection's first request read whole: one that only ever sends (a log shipper, an
	 * upload) or only ever receives (a log receiver) is a stream, and its sleeps pace it */
	__u64 ino = c->srv_ino;
	struct peer_sock *s = ino ? bpf_map_lookup_elem(&socks, &ino) : NULL;
	if (!(s && s->since_ns && (s->answered || c->srv_fresh))) {
		ino = c->cli_ino;
		s = ino ? bpf_map_lookup_elem(&socks, &ino) : NULL;
		if (!(s && s->since_ns && s->answered))
			return;
	}
	c->sleep_slot = PEER_SLEEP_IN_REQUEST_NS;
	c->sleep_ino = ino;
}

/* A sleep ends: its time to its slot, and a sleep in a request to that request's peer. */
static __always_inline void sleep_ends(struct peer_call *c)
{
	__u64 now = bpf_ktime_get_ns(), ns = now > c->sleep_from ? now - c->sleep_from : 0;
	__u32 slot = c->sleep_slot;
	if (slot != PEER_SLEEP_IN_REQUEST_NS && slot != PEER_SLEEP_UNPLACED_NS)
		slot = PEER_SLEEP_BETWEEN_NS;
	slot_add(&sleeps, slot, ns);
	slot_add(&sleeps, slot + 1, 1);
	__u64 ino = c->sleep_ino;
	if (slot != PEER_SLEEP_IN_REQUEST_NS || !ino)
		return;
	struct peer_sock *s = bpf_map_lookup_elem(&socks, &ino);
	if (!s || !s->named)
		return;
	struct peer_hist *h = peer_hist_of(&s->key);
	if (!h)
		return;
	__sync_fetch_and_add(&h->sleeps, 1);
	__sync_fetch_and_add(&h->sleep_ns, ns);
}

static __always_inline bool socket_sampled_in(__u64 ino)
{
	__u32 n = diag_ctl.sample_every;
	return n <= 1 || (ino * 0x9E3779B97F4A7C15ull >> 32) % n == 0;
}

SEC("raw_tp/sys_enter")
int BPF_PROG(peer_sys_enter, struct pt_regs *regs, long nr)
{
	bool count_only = diag_count_only();
	__u32 op = op_of(nr);

	if (in_call_in_hash && (nr == exit_nr || nr == exit_group_nr)) {
		if (diag_current_wanted()) /* in count-only mode too: the pre-flight's exits */
			in_call_drop();
		return 0;
	}
	/* the syscall first: most of the host's calls are none of these, and cost only this test */
	if (!diag_admit(count_only, op != PW_NONE && diag_current_wanted()))
		return 0;
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	int fd = (int)PT_REGS_PARM1_CORE_SYSCALL(regs);
	if (op == PW_CLOSE) {
		__u64 ino = 0;
		mark_nonsock(tgid, fd, false);
		if (stream_sock_of(fd, &ino))
			bpf_map_delete_elem(&socks, &ino);
		return 0;
	}
	if (op == PW_DUP) {
		mark_nonsock(tgid, (int)PT_REGS_PARM2_CORE_SYSCALL(regs), false);
		return 0;
	}
	if (op == PW_FORGET_ALL) {
		bpf_map_delete_elem(&nonsock, &tgid);
		return 0;
	}
	if ((op == PW_READ || op == PW_WRITE) && known_nonsock(tgid, fd))
		return 0;
	struct peer_call *c = in_call_get(true);
	if (!c) {
		diag_stat_inc(&stats, DIAG_STAT_MAP_FULL);
		return 0;
	}
	c->op = op;
	c->fd = fd;
	if (op == PW_SLEEP)
		sleep_begins(c);
	else if (op == PW_READ)
		c->read_from = bpf_ktime_get_ns();
	return 0;
}

SEC("raw_tp/sys_exit")
int BPF_PROG(peer_sys_exit, struct pt_regs *regs, long ret)
{
	if (diag_count_only() || !diag_current_wanted())
		return 0;
	struct peer_call *c = in_call_get(false);
	if (!c || c->op == PW_NONE)
		return 0;
	__u32 op = c->op;
	int fd = c->fd;
	c->op = PW_NONE;
	if (op == PW_SLEEP) { /* slept its time, or woken early by a signal (-EINTR): either way */
		sleep_ends(c);
		return 0;
	}

	if (op == PW_ACCEPT) {
		if (ret < 0)
			return 0;
		fd = (int)ret;
	} else if (op == PW_CONNECT) {
		if (ret != 0 && ret != -EINPROGRESS_)
			return 0;
	} else if (ret <= 0) {
		return 0;
	}
	__u64 ino = 0;
	struct sock *sk = stream_sock_of(fd, &ino);
	if (!sk) {
		if (op == PW_READ || op == PW_WRITE) {
			diag_stat_inc(&stats, PEER_STAT_NOT_SOCKET);
			mark_nonsock(bpf_get_current_pid_tgid() >> 32, fd, true);
		}
		return 0;
	}
	if (!socket_sampled_in(ino)) {
		if (op == PW_READ || op == PW_WRITE)
			c->last_unfollowed = 1;
		return 0;
	}
	if (op == PW_READ || op == PW_WRITE)
		c->last_unfollowed = 0;

	struct peer_sock *s = bpf_map_lookup_elem(&socks, &ino);
	if (op == PW_CONNECT || op == PW_ACCEPT || !s) {
		struct peer_sock fresh = {};
		if (op == PW_CONNECT)
			fresh.role = PEER_ROLE_CLIENT;
		else if (op == PW_ACCEPT)
			fresh.role = PEER_ROLE_SERVER;
		if (bpf_map_update_elem(&socks, &ino, &fresh, BPF_ANY)) {
			diag_stat_inc(&stats, DIAG_STAT_MAP_FULL);
			return 0;
		}
		s = bpf_map_lookup_elem(&socks, &ino);
		if (!s || op == PW_CONNECT || op == PW_ACCEPT)
			return 0;
	}
	if (s->role == PEER_ROLE_UNKNOWN) {
		s->role = op == PW_WRITE ? PEER_ROLE_CLIENT : PEER_ROLE_SERVER;
		s->inferred = 1;
		diag_stat_inc(&stats, PEER_STAT_INFERRED);
	}
	if (!s->named)
		name_sock(sk, s);

	__u64 now = bpf_ktime_get_ns();
	/* The wait opens on what the target sends (client) or receives (server), and closes on the
	 * first transfer the other way. */
	bool opens = (s->role == PEER_ROLE_CLIENT) == (op == PW_WRITE);
	/* the thread's requests, serving and sent: open from the transfer that opens a wait to the
	 * one that closes it, one of each kind (a handler calling an upstream keeps both) */
	if (s->role == PEER_ROLE_SERVER) {
		if (opens && !s->since_ns) {
			c->srv_ino = ino;
			c->srv_fresh = 1;
		} else if (opens && c->srv_ino == ino) {
			c->srv_fresh = 0; /* more data on the open request: part of it, or a stream */
		} else if (!opens && c->srv_ino == ino) {
			c->srv_ino = 0;
		}
	} else if (opens) {
		/* a stream's write (stdout to journald) does not take the place of a request */
		if (s->answered || !c->cli_ino)
			c->cli_ino = ino;
	} else if (c->cli_ino == ino) {
		c->cli_ino = 0;
	}
	if (op == PW_READ) { /* what the thread waited for in it: work, an answer, or neither */
		__u32 slot = PEER_READ_OTHER_NS;
		if (opens && !s->since_ns)
			slot = PEER_READ_FOR_WORK_NS;
		else if (!opens && s->since_ns)
			slot = PEER_READ_FOR_ANSWER_NS;
		slot_add(&reads, slot, now > c->read_from ? now - c->read_from : 0);
		slot_add(&reads, slot + 1, 1);
	}
	if (opens) {
		if (!s->since_ns)
			s->since_ns = now;
	} else if (s->since_ns) {
		__u64 since = s->since_ns;
		s->since_ns = 0;
		s->answered = 1;
		if (now > since)
			record_wait(&s->key, now - since);
	}
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
