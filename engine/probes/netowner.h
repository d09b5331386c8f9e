/* netowner.h — the TCP sockets a process holds now, from /proc, for the network probes that
 * attribute softirq-context events to a target (engine/probes/net_owner.h keeps the sets in the kernel).
 *
 * Owns: reading /proc/PID/fd (socket inodes), /proc/PID/net/tcp and tcp6 (the target's network
 * namespace: inode → addresses, ports, state), /proc/PID/net/unix (roles on connected Unix
 * sockets) and /proc/PID/ns/net; writing the target's
 * connections into an owned-flows map and its listening ports into an owned-ports map. The
 * parser of the tcp/tcp6 text is pure (unit-tested).
 * Must not: load BPF, or know a probe kind; it only sizes (before load) and updates the maps it
 * is given.
 */
#ifndef DIAG_NETOWNER_H
#define DIAG_NETOWNER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct netowner_sock {
	int family;               /* 2 (AF_INET) or 10 (AF_INET6) */
	uint8_t laddr[16], raddr[16]; /* network order; IPv4 in the first 4 bytes */
	uint16_t lport, rport;
	int state;                /* the kernel's TCP state: 1 ESTABLISHED ... 10 LISTEN */
	/* tx_queue:rx_queue; for a listening socket rx_queue is its accept queue (connections
	 * waiting for accept()); its limit is not in these files (ss gets it by netlink) */
	uint32_t tx_queue, rx_queue;
	uint64_t inode;
};

/* Parses the text of /proc/net/tcp (family 2) or tcp6 (family 10) into out (at most max rows);
 * returns the rows parsed. Malformed lines are skipped. */
size_t netowner_parse_tcp(const char *text, int family, struct netowner_sock *out, size_t max);

struct probe_filters;
/* The target a probe's filters name: one process (pid) or a set (pid_set: every process of it
 * alive at the last scan). netowner_has_target: either. netowner_seed_target: netowner_seed
 * for each of its processes (0 processes seeded: -1). netowner_target_listeners:
 * netowner_listeners of each, a socket shared by several (a pre-forked server's) once. */
bool netowner_has_target(const struct probe_filters *f);
int netowner_seed_target(const struct probe_filters *f, int flows_fd, int ports_fd,
			 size_t *n_flows, size_t *n_ports);
size_t netowner_target_listeners(const struct probe_filters *f, struct netowner_sock *out, size_t max);

struct bpf_map;
/* Sizes the ownership maps of engine/probes/net_owner.h before load: max_owned entries with a target
 * (has_target), one without (nothing is owned host-wide). */
void netowner_size_maps(struct bpf_map *socks, struct bpf_map *flows, struct bpf_map *ports,
			bool has_target, uint32_t max_owned);

/* Adds the TCP sockets process pid holds to flows_fd (struct tcpe_flow keys, connections) and
 * ports_fd (struct tcpe_port keys, listening sockets, in its network namespace). Counts what it
 * added in *n_flows and *n_ports (may be NULL). Returns -1 when the process is gone. */
int netowner_seed(int pid, int flows_fd, int ports_fd, size_t *n_flows, size_t *n_ports);

/* The listening TCP sockets of process pid (those among its descriptors, in its network
 * namespace) into out, or with pid 0 those of the host's namespace (pid 1's) whose accept queue
 * is not empty; returns how many (0 when the process is gone). */
size_t netowner_listeners(int pid, struct netowner_sock *out, size_t max);

/* A connected stream socket of a process and the target's role on it, for probes that time a
 * conversation (engine/probes/peer_wait.c): 1 client (it connected), 2 server (accepted on a
 * listening port or Unix socket path). TCP: established (or close-wait) sockets, a server's when
 * its local port is one a socket of its namespace listens on; Unix: connected stream sockets, a
 * server's when it has the path of the listener it was accepted on. */
struct netowner_role {
	uint64_t inode;
	int role;
};

/* Parses /proc/net/unix into out (connected stream sockets only, listening ones skipped):
 * returns the rows. A connected socket with a path was accepted (role 2), without one it
 * connected (role 1). Malformed lines are skipped. */
size_t netowner_parse_unix(const char *text, struct netowner_role *out, size_t max);

/* The roles of the connected stream sockets among the descriptors of the target's processes
 * (each process's network namespace), at most max; 0 when they are gone. */
size_t netowner_target_roles(const struct probe_filters *f, struct netowner_role *out, size_t max);

/* What socket inode of process pid is, from its network namespace's tables: 1 a TCP socket
 * (*tcp: its addresses, ports and state), 2 a Unix socket (unix_path: its path, "" when it has
 * none), 0 neither (or gone). *role: 1 it connected (a client), 2 it was accepted (a server's),
 * 3 listening, 0 not known. */
int netowner_socket(int pid, uint64_t inode, struct netowner_sock *tcp, char *unix_path, size_t len,
		    int *role);

#endif
