/* netowner.c — the TCP and Unix stream sockets a process holds, from /proc (see netowner.h).
 * Must not: load BPF, or know a probe kind.
 */
#include "probes/netowner.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plan/filters.h"
#include "target/target.h"
#include "probes/tcp_flow.h"
#include "common/util.h"

/* "0100007F:1F90": the kernel prints each 32-bit word of the address as the integer it holds in
 * memory, so copying the parsed word back gives network order on this machine. */
static int parse_addr(const char *s, int family, uint8_t *addr, uint16_t *port)
{
	int words = family == 10 ? 4 : 1;
	for (int w = 0; w < words; w++) {
		char hex[9];
		memcpy(hex, s + 8 * w, 8);
		hex[8] = '\0';
		char *end;
		uint32_t v = (uint32_t)strtoul(hex, &end, 16);
		if (*end)
			return -1;
		memcpy(addr + 4 * w, &v, 4);
	}
	if (s[8 * words] != ':')
		return -1;
	char *end;
	unsigned long p = strtoul(s + 8 * words + 1, &end, 16);
	if (end == s + 8 * words + 1 || p > 65535)
		return -1;
	*port = (uint16_t)p;
	return 0;
}

size_t netowner_parse_tcp(const char *text, int family, struct netowner_sock *out, size_t max)
{
	size_t n = 0;
	const char *line = text;
	size_t addr_len = family == 10 ? 32 : 8;
	while (line && *line && n < max) {
		const char *eol = strchr(line, '\n');
		char buf[512];
		size_t len = eol ? (size_t)(eol - line) : strlen(line);
		if (len < sizeof(buf)) {
			char local[64], remote[64];
			unsigned state;
			unsigned long long inode;
			memcpy(buf, line, len);
			buf[len] = '\0';
			struct netowner_sock s = { .family = family };
			if (sscanf(buf, " %*[0-9]: %63s %63s %x %x:%x %*s %*s %*s %*s %llu", local, remote,
				   &state, &s.tx_queue, &s.rx_queue, &inode) == 6 &&
			    strlen(local) == addr_len + 5 && strlen(remote) == addr_len + 5 &&
			    parse_addr(local, family, s.laddr, &s.lport) == 0 &&
			    parse_addr(remote, family, s.raddr, &s.rport) == 0) {
				s.state = (int)state;
				s.inode = inode;
				out[n++] = s;
			}
		}
		line = eol ? eol + 1 : NULL;
	}
	return n;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

#define MAX_SOCKS 16384

/* The socket inodes among the descriptors of pid, sorted; NULL when it is gone. */
static uint64_t *socket_inodes(int pid, size_t *n)
{
	char path[64];
	size_t ni = 0, cap = 256;
	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	DIR *d = opendir(path);
	if (!d)
		return NULL;
	uint64_t *inodes = xmalloc(cap * sizeof(*inodes));
	struct dirent *e;
	while ((e = readdir(d)) && ni < MAX_SOCKS) {
		char link[300], target[64];
		snprintf(link, sizeof(link), "/proc/%d/fd/%s", pid, e->d_name);
		ssize_t len = readlink(link, target, sizeof(target) - 1);
		unsigned long long ino;
		if (len <= 0)
			continue;
		target[len] = '\0';
		if (sscanf(target, "socket:[%llu]", &ino) != 1)
			continue;
		if (ni == cap)
			inodes = xrealloc(inodes, (cap *= 2) * sizeof(*inodes));
		inodes[ni++] = ino;
	}
	closedir(d);
	qsort(inodes, ni, sizeof(*inodes), cmp_u64);
	*n = ni;
	return inodes;
}

static const struct { const char *file; int family; } tables[] = {
	{ "net/tcp", 2 }, { "net/tcp6", 10 },
};

/* The sockets of /proc/PID/net/tcp and tcp6 (pid's namespace) into a new array. */
static struct netowner_sock *read_tables(int pid, size_t *n)
{
	char path[64];
	struct netowner_sock *socks = xmalloc(MAX_SOCKS * sizeof(*socks));
	*n = 0;
	for (size_t t = 0; t < ARRAY_LEN(tables); t++) {
		snprintf(path, sizeof(path), "/proc/%d/%s", pid, tables[t].file);
		char *text = read_file(path, NULL);
		if (!text)
			continue;
		*n += netowner_parse_tcp(text, tables[t].family, socks + *n, MAX_SOCKS - *n);
		free(text);
	}
	return socks;
}

static bool has_inode(const uint64_t *inodes, size_t ni, uint64_t inode)
{
	return inode && ni && bsearch(&inode, inodes, ni, sizeof(*inodes), cmp_u64);
}

int netowner_seed(int pid, int flows_fd, int ports_fd, size_t *n_flows, size_t *n_ports)
{
	char path[64];
	size_t nf = 0, np = 0, ni = 0, n = 0;
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/ns/net", pid);
	if (stat(path, &st))
		return -1;
	uint32_t netns = (uint32_t)st.st_ino;
	uint64_t *inodes = socket_inodes(pid, &ni);
	if (!inodes)
		return -1;
	struct netowner_sock *socks = ni ? read_tables(pid, &n) : NULL;
	for (size_t i = 0; i < n; i++) {
		const struct netowner_sock *s = &socks[i];
		uint8_t one = 1;
		if (!has_inode(inodes, ni, s->inode))
			continue;
		if (s->state == 10) { /* LISTEN */
			struct tcpe_port k = { .netns = netns, .port = s->lport };
			if (bpf_map_update_elem(ports_fd, &k, &one, BPF_ANY) == 0)
				np++;
			continue;
		}
		struct tcpe_flow k = { .family = (__u16)s->family, .sport = s->lport, .dport = s->rport };
		memcpy(k.saddr, s->laddr, 16);
		memcpy(k.daddr, s->raddr, 16);
		if (bpf_map_update_elem(flows_fd, &k, &one, BPF_ANY) == 0)
			nf++;
	}
	free(socks);
	free(inodes);
	if (n_flows)
		*n_flows = nf;
	if (n_ports)
		*n_ports = np;
	return 0;
}

size_t netowner_listeners(int pid, struct netowner_sock *out, size_t max)
{
	size_t ni = 0, n = 0, k = 0;
	uint64_t *inodes = NULL;
	if (pid > 0 && !(inodes = socket_inodes(pid, &ni)))
		return 0;
	struct netowner_sock *socks = read_tables(pid > 0 ? pid : 1, &n);
	for (size_t i = 0; i < n && k < max; i++) {
		if (socks[i].state != 10)
			continue;
		if (pid > 0 ? !has_inode(inodes, ni, socks[i].inode) : socks[i].rx_queue == 0)
			continue;
		out[k++] = socks[i];
	}
	free(socks);
	free(inodes);
	return k;
}

void netowner_size_maps(struct bpf_map *socks, struct bpf_map *flows, struct bpf_map *ports,
			bool has_target, uint32_t max_owned)
{
	uint32_t owned = has_target ? max_owned : 1;
	bpf_map__set_max_entries(socks, owned);
	bpf_map__set_max_entries(flows, owned);
	if (!has_target)
		bpf_map__set_max_entries(ports, 1);
}

bool netowner_has_target(const struct probe_filters *f)
{
	return f->pid > 0 || (f->pid_set && f->target);
}

int netowner_seed_target(const struct probe_filters *f, int flows_fd, int ports_fd,
			 size_t *n_flows, size_t *n_ports)
{
	int pids[TARGET_MAX_PROCS];
	size_t n = filters_live_pids(f, pids, TARGET_MAX_PROCS), seeded = 0, nf = 0, np = 0;
	for (size_t i = 0; i < n; i++) {
		size_t a = 0, b = 0;
		if (netowner_seed(pids[i], flows_fd, ports_fd, &a, &b) == 0) {
			seeded++;
			nf += a;
			np += b;
		}
	}
	if (n_flows)
		*n_flows = nf;
	if (n_ports)
		*n_ports = np;
	return seeded ? 0 : -1;
}

size_t netowner_target_listeners(const struct probe_filters *f, struct netowner_sock *out, size_t max)
{
	int pids[TARGET_MAX_PROCS];
	size_t n = filters_live_pids(f, pids, TARGET_MAX_PROCS), k = 0;
	if (!netowner_has_target(f))
		return netowner_listeners(0, out, max);
	for (size_t i = 0; i < n && k < max; i++) {
		size_t base = k, got = netowner_listeners(pids[i], out + base, max - base);
		for (size_t j = 0; j < got; j++) { /* a listener the processes share, once */
			struct netowner_sock sock = out[base + j];
			bool seen = false;
			for (size_t e = 0; e < k && !seen; e++)
				seen = out[e].inode == sock.inode;
			if (!seen)
				out[k++] = sock; /* k <= base + j: nothing unread is overwritten */
		}
	}
	return k;
}

size_t netowner_parse_unix(const char *text, struct netowner_role *out, size_t max)
{
	size_t n = 0;
	for (const char *line = text, *next; line && *line && n < max; line = next) {
		next = strchr(line, '\n');
		if (next)
			next++;
		unsigned long refs, proto, flags, type, st;
		unsigned long long inode;
		char num[32];
		int used = 0;
		if (sscanf(line, "%31s %lx %lx %lx %lx %lx %llu%n", num, &refs, &proto, &flags, &type, &st,
			   &inode, &used) != 7 || !strchr(num, ':'))
			continue;
		if (type != 1 || st != 3 || (flags & 0x10000)) /* SOCK_STREAM, SS_CONNECTED, not listening */
			continue;
		const char *rest = line + used;
		while (*rest == ' ' || *rest == '\t')
			rest++;
		bool has_path = *rest && *rest != '\n';
		out[n].inode = inode;
		out[n].role = has_path ? 2 : 1;
		n++;
	}
	return n;
}

/* The roles of pid's connected stream sockets, appended to out from *n. */
static void roles_of(int pid, struct netowner_role *out, size_t *n, size_t max)
{
	size_t ni = 0, ns = 0;
	uint64_t *inodes = socket_inodes(pid, &ni);
	if (!inodes)
		return;
	struct netowner_sock *socks = ni ? read_tables(pid, &ns) : NULL;
	for (size_t i = 0; i < ns && *n < max; i++) {
		const struct netowner_sock *s = &socks[i];
		if ((s->state != 1 && s->state != 8) || !has_inode(inodes, ni, s->inode))
			continue;
		bool server = false;
		for (size_t j = 0; j < ns && !server; j++)
			server = socks[j].state == 10 && socks[j].lport == s->lport;
		out[*n].inode = s->inode;
		out[*n].role = server ? 2 : 1;
		(*n)++;
	}
	free(socks);
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/net/unix", pid);
	char *text = ni ? read_file(path, NULL) : NULL;
	if (text) {
		size_t cap = MAX_SOCKS, got;
		struct netowner_role *all = xmalloc(cap * sizeof(*all));
		got = netowner_parse_unix(text, all, cap);
		for (size_t i = 0; i < got && *n < max; i++)
			if (has_inode(inodes, ni, all[i].inode))
				out[(*n)++] = all[i];
		free(all);
		free(text);
	}
	free(inodes);
}

/* The line of /proc/PID/net/unix for a socket inode: its type, state, and path (after the
 * columns; "" when none). true when found. */
static bool unix_line(const char *text, uint64_t want, unsigned long *type, unsigned long *st,
		      unsigned long *flags, char *path, size_t len)
{
	for (const char *line = text, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			next++;
		unsigned long refs, proto;
		unsigned long long inode;
		char num[32];
		int used = 0;
		if (sscanf(line, "%31s %lx %lx %lx %lx %lx %llu%n", num, &refs, &proto, flags, type, st,
			   &inode, &used) != 7 || !strchr(num, ':') || inode != want)
			continue;
		const char *rest = line + used;
		while (*rest == ' ' || *rest == '\t')
			rest++;
		size_t n = strcspn(rest, "\n");
		snprintf(path, len, "%.*s", (int)n, rest);
		return true;
	}
	return false;
}

int netowner_socket(int pid, uint64_t inode, struct netowner_sock *tcp, char *unix_path, size_t len,
		    int *role)
{
	size_t n = 0;
	*role = 0;
	struct netowner_sock *socks = read_tables(pid, &n);
	int kind = 0;
	for (size_t i = 0; i < n && !kind; i++) {
		if (socks[i].inode != inode)
			continue;
		*tcp = socks[i];
		kind = 1;
		if (tcp->state == 10) {
			*role = 3;
			break;
		}
		bool server = false;
		for (size_t j = 0; j < n && !server; j++)
			server = socks[j].state == 10 && socks[j].lport == tcp->lport;
		*role = server ? 2 : 1;
	}
	free(socks);
	if (kind)
		return kind;
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/net/unix", pid);
	char *text = read_file(path, NULL);
	unsigned long type, st, flags;
	if (text && unix_line(text, inode, &type, &st, &flags, unix_path, len)) {
		kind = 2;
		*role = (flags & 0x10000) ? 3 : st != 3 ? 0 : unix_path[0] ? 2 : 1;
	}
	free(text);
	return kind;
}

size_t netowner_target_roles(const struct probe_filters *f, struct netowner_role *out, size_t max)
{
	int pids[TARGET_MAX_PROCS];
	size_t n = filters_live_pids(f, pids, TARGET_MAX_PROCS), k = 0;
	for (size_t i = 0; i < n && k < max; i++)
		roles_of(pids[i], out, &k, max);
	return k;
}
