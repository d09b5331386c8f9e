/* peer_wait.h — layout shared by engine/probes/peer_wait.bpf.c and engine/probes/peer_wait.c. */
#ifndef DIAG_PEER_WAIT_H
#define DIAG_PEER_WAIT_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Wait times in log-linear buckets: 4 per power of two (within 19% of the value), from 1 ns to
 * 2^40 ns (18 minutes); longer waits land in the last. */
#define PEER_HIST_SUB 4
#define PEER_HIST_SLOTS (40 * PEER_HIST_SUB)

#define PEER_PATH_LEN 64 /* a Unix socket's path, cut (an abstract name starts with '@') */

/* Who the target is on a connection: it sent first and waits for answers (a client of an
 * upstream, a database, a cache), or answers what arrives (a server). */
enum peer_role {
	PEER_ROLE_UNKNOWN = 0,
	PEER_ROLE_CLIENT = 1,
	PEER_ROLE_SERVER = 2,
};

#define PEER_AF_UNIX 1
#define PEER_AF_INET 2
#define PEER_AF_INET6 10

/* What one histogram aggregates: a role and the other end, named from the socket. Client: the
 * peer's address and port, or the path of the Unix socket it listens on. Server: the target's
 * own address and port (the service; its clients are many), or its socket's path. */
struct peer_key {
	__u8 role;   /* enum peer_role */
	__u8 family; /* PEER_AF_* */
	__u16 port;  /* host order; 0 for Unix sockets */
	__u32 netns; /* the socket's network namespace (its inode number) */
	__u8 addr[16]; /* network order; IPv4 in the first 4 bytes */
	char path[PEER_PATH_LEN];
};

struct peer_hist {
	__u64 count;  /* waits that ended in the window */
	__u64 sum_ns;
	__u64 max_ns;
	__u64 sleeps;   /* sleeps (nanosleep, clock_nanosleep) of a thread while its request on this */
	__u64 sleep_ns; /* peer or service was open: a back-off, a delay inside the request */
	__u64 slots[PEER_HIST_SLOTS];
};

/* The sleeps of the target's threads (nanosleep, clock_nanosleep), by what the thread had open
 * when it went to sleep: slots of the per-CPU `sleeps` array. In a request: the last transfer of
 * the thread opened a wait (a client's request sent, a server's request read) that is still
 * open; between requests: none open (a paced client between its requests, a loop with no
 * request); unplaced: the thread's last transfer was on a socket sampling does not follow. */
enum peer_sleep_slot {
	PEER_SLEEP_IN_REQUEST_NS = 0,
	PEER_SLEEP_IN_REQUEST,
	PEER_SLEEP_BETWEEN_NS,
	PEER_SLEEP_BETWEEN,
	PEER_SLEEP_UNPLACED_NS,
	PEER_SLEEP_UNPLACED,
	PEER_SLEEP_NR,
};

/* The target's threads' time in reads on its stream sockets (entry to exit of a read that
 * returned data), by what the data was: slots of the per-CPU `reads` array. For work: a server's
 * read that brought a new request (none was open: the thread waited for its client's next
 * request, idle, on a keep-alive connection for one); for an answer: a client's read that brought
 * the answer to its open request (waiting on the peer); other: the rest (more of a request or an
 * answer already under way, data with no request open). */
enum peer_read_slot {
	PEER_READ_FOR_WORK_NS = 0,
	PEER_READ_FOR_WORK,
	PEER_READ_FOR_ANSWER_NS,
	PEER_READ_FOR_ANSWER,
	PEER_READ_OTHER_NS,
	PEER_READ_OTHER,
	PEER_READ_NR,
};

/* One of the target's sockets, by inode: its role and whether a wait is open on it. */
struct peer_sock {
	__u64 since_ns;  /* when the open wait started (bpf_ktime_get_ns); 0: none open */
	__u8 role;       /* enum peer_role; UNKNOWN until the first transfer or a seeded role */
	__u8 inferred;   /* the role came from the direction of the first transfer seen */
	__u8 named;      /* key is filled */
	__u8 answered;   /* a wait on it ended: it carries requests and answers, not a one-way stream */
	__u8 pad[4];
	struct peer_key key;
};

/* Per-CPU counters in `stats` beyond the common ones. */
#define PEER_STAT_NOT_SOCKET 3 /* transfers on descriptors that are not stream sockets */
#define PEER_STAT_INFERRED 4   /* sockets whose role was inferred from the first transfer */

#endif
