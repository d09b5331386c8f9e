/* httpd.c — `diagnose watch`'s metrics endpoint. Contract: httpd.h. Owns its sockets, their
 * deadlines and what serving them costs; must not build metrics or serve anything but /metrics,
 * and must not leave its listening socket readable and unaccepted (the loop would spin). */
#include "watch/httpd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define NS_PER_MS 1000000ull
#define ACCEPTS_PER_CALL (2 * HTTPD_MAX_CONNS) /* more wait: the next call takes them */
#define ACCEPT_PAUSE_MS 100 /* no descriptor left for an accept: listening paused this long */

static void init(struct httpd *h, httpd_body_fn body, void *ctx)
{
	memset(h, 0, sizeof(*h));
	h->listen_fd = -1;
	for (size_t i = 0; i < HTTPD_MAX_CONNS; i++)
		h->conns[i].fd = -1;
	h->body = body;
	h->ctx = ctx;
}

/* "127.0.0.1:9464", "[::1]:9464" */
static void addr_text(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN] = "?";
	const struct sockaddr_in *s4 = (const struct sockaddr_in *)ss;
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;
	bool v6 = ss->ss_family == AF_INET6;
	inet_ntop(ss->ss_family, v6 ? (const void *)&s6->sin6_addr : (const void *)&s4->sin_addr,
		  host, sizeof(host));
	snprintf(buf, len, "%s%s%s:%u", v6 ? "[" : "", host, v6 ? "]" : "",
		 (unsigned)ntohs(v6 ? s6->sin6_port : s4->sin_port));
}

/* The address /proc/net/tcp{,6} prints (hex digits of the 32-bit words as the kernel holds them)
 * into bytes. */
static bool proc_addr(const char *hex, size_t words, unsigned char *out)
{
	for (size_t i = 0; i < words; i++) {
		char w[9];
		memcpy(w, hex + 8 * i, 8);
		w[8] = '\0';
		if (strspn(w, "0123456789ABCDEFabcdef") != 8)
			return false;
		uint32_t v = (uint32_t)strtoul(w, NULL, 16);
		memcpy(out + 4 * i, &v, 4);
	}
	return true;
}

static bool all_zero(const unsigned char *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

int httpd_port_holder(const char *table, const struct sockaddr *sa, uid_t *uid)
{
	bool want6 = sa->sa_family == AF_INET6;
	const unsigned char *want =
		want6 ? ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr
		      : (const unsigned char *)&((const struct sockaddr_in *)sa)->sin_addr;
	unsigned port = ntohs(want6 ? ((const struct sockaddr_in6 *)sa)->sin6_port
				    : ((const struct sockaddr_in *)sa)->sin_port);
	size_t wlen = want6 ? 16 : 4;
	static const unsigned char mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	int found = 0;
	for (const char *line = table; line && *line;
	     line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
		/* "  0: 0100007F:2458 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000 ..." */
		char local[40], st[3];
		unsigned lport, u;
		if (sscanf(line, " %*u: %39[0-9A-Fa-f]:%x %*39[0-9A-Fa-f]:%*x %2s %*x:%*x %*x:%*x %*x %u",
			   local, &lport, st, &u) != 4 ||
		    lport != port)
			continue;
		size_t llen = strlen(local) / 2;
		unsigned char a[16];
		if ((llen != 4 && llen != 16) || !proc_addr(local, llen / 4, a))
			continue;
		bool match =
			all_zero(a, llen) || all_zero(want, wlen) || /* a wildcard either side */
			(llen == wlen && !memcmp(a, want, wlen)) ||
			(llen == 16 && wlen == 4 && !memcmp(a, mapped, 12) && !memcmp(a + 12, want, 4)) ||
			(llen == 4 && wlen == 16 && !memcmp(want, mapped, 12) && !memcmp(want + 12, a, 4));
		if (!match || !strcmp(st, "06")) /* TIME_WAIT holds nothing against SO_REUSEADDR */
			continue;
		if (!found || !strcmp(st, "0A")) { /* a listening socket above all */
			*uid = (uid_t)u;
			found = 1;
			if (!strcmp(st, "0A"))
				return 1;
		}
	}
	return found;
}

/* Why the port is taken, naming whose socket holds it when /proc/net/tcp{,6} says. */
static int port_taken(const struct sockaddr_storage *ss, const char *where, struct diag_err *err)
{
	uid_t uid = 0;
	int found = 0;
	/* the table of the address's own family first: the other's holds only what a wildcard or a
	 * dual-stack socket blocks */
	static const char *const tables[] = { "/proc/net/tcp", "/proc/net/tcp6" };
	for (size_t i = 0; i < 2 && !found; i++) {
		char *text = read_file(tables[(i + (ss->ss_family == AF_INET6)) % 2], NULL);
		found = text ? httpd_port_holder(text, (const struct sockaddr *)ss, &uid) : 0;
		free(text);
	}
	if (!found)
		return diag_fail(err, DIAG_EXIT_RUNTIME,
				 "--listen %s: %s: another program may be serving "
				 "metrics in diagnose's place; see docs/watch.md (socket activation)",
				 where, strerror(EADDRINUSE));
	if (uid == geteuid())
		return diag_fail(err, DIAG_EXIT_RUNTIME,
				 "--listen: %s is taken by a socket of uid %u, this "
				 "user's (another diagnose watch?)",
				 where, (unsigned)uid);
	return diag_fail(err, DIAG_EXIT_RUNTIME,
			 "--listen: %s is taken by a socket of uid %u: another "
			 "user may be serving metrics in diagnose's place; see docs/watch.md (socket "
			 "activation)",
			 where, (unsigned)uid);
}

int httpd_open(struct httpd *h, const char *spec, httpd_body_fn body, void *ctx, struct diag_err *err)
{
	init(h, body, ctx);
	char host[64];
	const char *colon = strrchr(spec, ':');
	uint64_t port;
	if (!colon || !decimal_uint(colon + 1, 65535, &port) || port == 0)
		return diag_fail(err, DIAG_EXIT_USAGE, "--listen %s: not ADDRESS:PORT (127.0.0.1:9464, "
				 "[::1]:9464)", spec);
	size_t hl = (size_t)(colon - spec);
	if (hl >= 2 && spec[0] == '[' && spec[hl - 1] == ']') {
		spec++;
		hl -= 2;
	}
	if (hl == 0 || hl >= sizeof(host))
		return diag_fail(err, DIAG_EXIT_USAGE, "--listen %s: no address", spec);
	memcpy(host, spec, hl);
	host[hl] = '\0';
	struct sockaddr_storage ss = { 0 };
	socklen_t sl;
	struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
	if (inet_pton(AF_INET, host, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
		sl = sizeof(*s4);
	} else if (inet_pton(AF_INET6, host, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		sl = sizeof(*s6);
	} else {
		return diag_fail(err, DIAG_EXIT_USAGE, "--listen %s: not an IPv4 or IPv6 address "
				 "(no names are looked up)", host);
	}
	char where[80];
	addr_text(&ss, where, sizeof(where));
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&ss, sl) || listen(fd, 16)) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		if (e == EADDRINUSE)
			return port_taken(&ss, where, err);
		return diag_fail(err, DIAG_EXIT_RUNTIME, "--listen %s: %s", where, strerror(e));
	}
	h->listen_fd = fd;
	snprintf(h->addr, sizeof(h->addr), "%s", where);
	return 0;
}

int httpd_inherit(struct httpd *h, httpd_body_fn body, void *ctx, struct diag_err *err)
{
	init(h, body, ctx);
	const char *pid_s = getenv("LISTEN_PID"), *fds_s = getenv("LISTEN_FDS");
	uint64_t pid = 0, nfds = 0;
	bool ours = pid_s && fds_s && decimal_uint(pid_s, UINT32_MAX, &pid) &&
		    pid == (uint64_t)getpid() && decimal_uint(fds_s, 1024, &nfds);
	/* the protocol's variables are this process's alone: its children must not take them */
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	if (!ours || nfds == 0)
		return 0;
	if (nfds != 1)
		return diag_fail(err, DIAG_EXIT_USAGE,
				 "socket activation: %llu sockets passed (LISTEN_FDS); "
				 "diagnose watch takes one, its metrics endpoint's (one ListenStream= in its "
				 ".socket unit)",
				 (unsigned long long)nfds);
	int fd = HTTPD_LISTEN_FDS_START, domain = 0, type = 0, listening = 0;
	socklen_t l = sizeof(int);
	struct sockaddr_storage ss = { 0 };
	socklen_t sl = sizeof(ss);
	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &l) ||
	    (l = sizeof(int), getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l)) ||
	    (l = sizeof(int), getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &l)) ||
	    (domain != AF_INET && domain != AF_INET6) || type != SOCK_STREAM || !listening ||
	    getsockname(fd, (struct sockaddr *)&ss, &sl))
		return diag_fail(err, DIAG_EXIT_USAGE,
				 "socket activation: descriptor %d is not a listening "
				 "TCP socket (ListenStream=ADDRESS:PORT in the .socket unit)",
				 fd);
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) || fcntl(fd, F_SETFD, FD_CLOEXEC))
		return diag_fail(err, DIAG_EXIT_RUNTIME, "socket activation: descriptor %d: %s", fd,
				 strerror(errno));
	h->listen_fd = fd;
	addr_text(&ss, h->addr, sizeof(h->addr));
	return 1;
}

static void conn_close(struct httpd_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->resp);
	c->fd = -1;
	c->resp = NULL;
	c->req_len = c->resp_len = c->resp_off = 0;
	c->deadline_ns = c->active_ns = 0;
}

void httpd_close(struct httpd *h)
{
	for (size_t i = 0; i < HTTPD_MAX_CONNS; i++)
		conn_close(&h->conns[i]);
	if (h->listen_fd >= 0)
		close(h->listen_fd);
	h->listen_fd = -1;
}

size_t httpd_pollfds(const struct httpd *h, struct pollfd *fds)
{
	size_t n = 0;
	if (h->listen_fd < 0)
		return 0;
	if (h->paused_until_ns <= mono_ns())
		fds[n++] = (struct pollfd){ .fd = h->listen_fd, .events = POLLIN };
	for (size_t i = 0; i < HTTPD_MAX_CONNS; i++)
		if (h->conns[i].fd >= 0)
			fds[n++] = (struct pollfd){ .fd = h->conns[i].fd,
						    .events = h->conns[i].resp ? POLLOUT : POLLIN };
	return n;
}

int httpd_timeout_ms(const struct httpd *h, int max_ms)
{
	uint64_t now = mono_ns(), next = UINT64_MAX;
	if (h->listen_fd < 0)
		return max_ms;
	if (h->paused_until_ns > now)
		next = h->paused_until_ns;
	for (size_t i = 0; i < HTTPD_MAX_CONNS; i++)
		if (h->conns[i].fd >= 0 && h->conns[i].deadline_ns < next)
			next = h->conns[i].deadline_ns;
	if (next == UINT64_MAX)
		return max_ms;
	uint64_t ms = next > now ? (next - now + NS_PER_MS - 1) / NS_PER_MS : 0;
	return ms < (uint64_t)max_ms ? (int)ms : max_ms;
}

static void respond(struct httpd_conn *c, int status, const char *reason,
		    const char *type, char *body, size_t len)
{
	char head[256];
	int hn = snprintf(head, sizeof(head), "HTTP/1.0 %d %s\r\nContent-Type: %s\r\n"
			  "Content-Length: %zu\r\nConnection: close\r\n\r\n", status, reason, type, len);
	c->resp = xmalloc((size_t)hn + len);
	memcpy(c->resp, head, (size_t)hn);
	if (len)
		memcpy(c->resp + hn, body, len);
	c->resp_len = (size_t)hn + len;
	c->resp_off = 0;
}

enum httpd_head httpd_parse_head(const char *buf, size_t len, size_t *head_len)
{
	*head_len = 0;
	size_t n = len < HTTPD_HEAD_MAX ? len : HTTPD_HEAD_MAX;
	const char *crlf = memmem(buf, n, "\r\n\r\n", 4), *lf = memmem(buf, n, "\n\n", 2);
	size_t end = SIZE_MAX;
	if (crlf)
		end = (size_t)(crlf - buf) + 4;
	if (lf && (size_t)(lf - buf) + 2 < end)
		end = (size_t)(lf - buf) + 2;
	if (end == SIZE_MAX)
		return len >= HTTPD_HEAD_MAX ? HTTPD_HEAD_TOO_LARGE : HTTPD_HEAD_PARTIAL;
	*head_len = end;
	if (end < 4 || memcmp(buf, "GET ", 4) != 0)
		return HTTPD_HEAD_BAD_METHOD;
	size_t p = 4, plen = 0; /* the head ends in LF: the path does before it */
	while (p + plen < end && !memchr(" ?\r\n", buf[p + plen], 5)) /* 5: NUL too */
		plen++;
	return plen == 8 && memcmp(buf + p, "/metrics", 8) == 0 ? HTTPD_HEAD_METRICS : HTTPD_HEAD_NOT_FOUND;
}

/* A request head has come in whole, or too large: its answer. */
static void answer(struct httpd *h, struct httpd_conn *c, enum httpd_head head)
{
	static const char text[] = "text/plain; charset=utf-8";
	if (head == HTTPD_HEAD_TOO_LARGE) {
		respond(c, 431, "Request Header Fields Too Large", "text/plain", NULL, 0);
	} else if (head == HTTPD_HEAD_BAD_METHOD) {
		respond(c, 405, "Method Not Allowed", text, (char *)"GET only\n", 9);
	} else if (head == HTTPD_HEAD_METRICS) {
		char *body = NULL;
		size_t len = 0;
		h->body(h->ctx, &body, &len);
		respond(c, 200, "OK", "text/plain; version=0.0.4; charset=utf-8", body, len);
		free(body);
		h->scrapes++;
	} else {
		respond(c, 404, "Not Found", text, (char *)"diagnose watch: see /metrics\n", 29);
	}
}

/* What the client sent: once its head is whole, the answer; the answer's deadline from then. */
static void conn_read(struct httpd *h, struct httpd_conn *c, uint64_t now)
{
	ssize_t got = read(c->fd, c->req + c->req_len, sizeof(c->req) - c->req_len);
	if (got <= 0) {
		if (got == 0 || (errno != EAGAIN && errno != EINTR))
			conn_close(c);
		return;
	}
	c->active_ns = now;
	c->req_len += (size_t)got;
	size_t head_len;
	enum httpd_head head = httpd_parse_head(c->req, c->req_len, &head_len);
	if (head == HTTPD_HEAD_PARTIAL)
		return;
	answer(h, c, head);
	c->deadline_ns = now + HTTPD_ANSWER_MS * NS_PER_MS;
}

static void conn_write(struct httpd_conn *c, uint64_t now)
{
	ssize_t put = send(c->fd, c->resp + c->resp_off, c->resp_len - c->resp_off, MSG_NOSIGNAL);
	if (put > 0) {
		c->resp_off += (size_t)put;
		c->active_ns = now;
	}
	if ((put < 0 && errno != EAGAIN && errno != EINTR) || c->resp_off == c->resp_len)
		conn_close(c);
}

/* The slot for a new connection: a free one, or the one idle longest, a connection still sending
 * its request head before one being answered — an idle crowd sheds itself, a scrape (its head
 * sent at once, answered at once) is never the idlest for long. */
static struct httpd_conn *slot_for_new(struct httpd *h)
{
	struct httpd_conn *idlest = NULL;
	for (size_t i = 0; i < HTTPD_MAX_CONNS; i++) {
		struct httpd_conn *c = &h->conns[i];
		if (c->fd < 0)
			return c;
		if (!idlest || (!c->resp && idlest->resp) ||
		    (!c->resp == !idlest->resp && c->active_ns < idlest->active_ns))
			idlest = c;
	}
	conn_close(idlest);
	h->shed++;
	return idlest;
}

/* Accepts what waits in the backlog — always: a listening socket left readable would wake the
 * loop at once, again and again — reading at once what each new client sent. */
static void accept_waiting(struct httpd *h, uint64_t now)
{
	for (size_t k = 0; k < ACCEPTS_PER_CALL; k++) {
		int fd = accept4(h->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED || errno == EPERM || errno == EPROTO)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK) /* EMFILE, ENFILE, ENOBUFS, ENOMEM */
				h->paused_until_ns = now + ACCEPT_PAUSE_MS * NS_PER_MS;
			return;
		}
		struct httpd_conn *c = slot_for_new(h);
		c->fd = fd;
		c->active_ns = now;
		c->deadline_ns = now + HTTPD_HEAD_MS * NS_PER_MS;
		conn_read(h, c, now);
		if (c->fd >= 0 && c->resp)
			conn_write(c, now);
	}
}

static void service(struct httpd *h, const struct pollfd *fds, size_t n)
{
	uint64_t now = mono_ns();
	bool listen_ready = false;
	/* the connections first: one closed here frees its descriptor's number, which an accept
	 * below may reuse, and fds[] must not then be read as the new connection's */
	for (size_t k = 0; k < n; k++) {
		if (fds[k].fd == h->listen_fd) {
			listen_ready = fds[k].revents != 0;
			continue;
		}
		struct httpd_conn *c = NULL;
		for (size_t i = 0; i < HTTPD_MAX_CONNS; i++)
			if (h->conns[i].fd == fds[k].fd)
				c = &h->conns[i];
		if (!c || !fds[k].revents)
			continue;
		if (!c->resp)
			conn_read(h, c, now);
		if (c->fd >= 0 && c->resp)
			conn_write(c, now);
	}
	for (size_t i = 0; i < HTTPD_MAX_CONNS; i++)
		if (h->conns[i].fd >= 0 && now > h->conns[i].deadline_ns)
			conn_close(&h->conns[i]);
	if (listen_ready)
		accept_waiting(h, now);
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void httpd_service(struct httpd *h, const struct pollfd *fds, size_t n)
{
	if (h->listen_fd < 0)
		return;
	h->serving_from = thread_cpu_ns();
	h->serving = true;
	service(h, fds, n);
	uint64_t to = thread_cpu_ns();
	h->cpu_ns += to > h->serving_from ? to - h->serving_from : 0;
	h->serving = false;
}

uint64_t httpd_cpu_ns(const struct httpd *h)
{
	uint64_t now = h->serving ? thread_cpu_ns() : 0;
	return h->cpu_ns + (now > h->serving_from ? now - h->serving_from : 0);
}
