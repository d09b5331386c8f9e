/* httpd.c — `diagnose watch`'s metrics endpoint. Contract: httpd.h. Owns its sockets; must not
 * build metrics or serve anything but /metrics. */
#include "httpd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define CONN_TIMEOUT_NS (5ull * 1000000000ull)

int httpd_open(struct httpd *h, const char *spec, httpd_body_fn body, void *ctx, struct diag_err *err)
{
	memset(h, 0, sizeof(*h));
	h->listen_fd = -1;
	for (size_t i = 0; i < HTTPD_MAX_CONNS; i++)
		h->conns[i].fd = -1;
	h->body = body;
	h->ctx = ctx;
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
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&ss, sl) || listen(fd, 16)) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return diag_fail(err, DIAG_EXIT_RUNTIME, "--listen %s:%u: %s", host, (unsigned)port,
				 strerror(e));
	}
	h->listen_fd = fd;
	snprintf(h->addr, sizeof(h->addr), "%s%s%s:%u", ss.ss_family == AF_INET6 ? "[" : "", host,
		 ss.ss_family == AF_INET6 ? "]" : "", (unsigned)port);
	return 0;
}

static void conn_close(struct httpd_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->resp);
	c->fd = -1;
	c->resp = NULL;
	c->req_len = c->resp_len = c->resp_off = 0;
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
	fds[n++] = (struct pollfd){ .fd = h->listen_fd, .events = POLLIN };
	for (size_t i = 0; i < HTTPD_MAX_CONNS; i++)
		if (h->conns[i].fd >= 0)
			fds[n++] = (struct pollfd){ .fd = h->conns[i].fd,
						    .events = h->conns[i].resp ? POLLOUT : POLLIN };
	return n;
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

/* A whole request head is in: answer it from its request line. */
static void handle(struct httpd *h, struct httpd_conn *c)
{
	static const char text[] = "text/plain; charset=utf-8";
	char *sp = memchr(c->req, ' ', c->req_len);
	if (!sp || (size_t)(sp - c->req) != 3 || memcmp(c->req, "GET", 3) != 0) {
		respond(c, 405, "Method Not Allowed", text, (char *)"GET only\n", 9);
		return;
	}
	const char *path = sp + 1;
	size_t plen = strcspn(path, " ?\r\n");
	if (plen == 8 && memcmp(path, "/metrics", 8) == 0) {
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

void httpd_service(struct httpd *h, const struct pollfd *fds, size_t n)
{
	uint64_t now = mono_ns();
	for (size_t k = 0; k < n; k++) {
		if (fds[k].fd == h->listen_fd) {
			if (!(fds[k].revents & POLLIN))
				continue;
			for (size_t i = 0; i < HTTPD_MAX_CONNS; i++) {
				if (h->conns[i].fd >= 0)
					continue;
				int fd = accept4(h->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
				if (fd < 0)
					break;
				h->conns[i].fd = fd;
				h->conns[i].deadline_ns = now + CONN_TIMEOUT_NS;
			}
			continue;
		}
		struct httpd_conn *c = NULL;
		for (size_t i = 0; i < HTTPD_MAX_CONNS; i++)
			if (h->conns[i].fd == fds[k].fd)
				c = &h->conns[i];
		if (!c || !fds[k].revents)
			continue;
		if (!c->resp) {
			ssize_t got = read(c->fd, c->req + c->req_len, sizeof(c->req) - 1 - c->req_len);
			if (got <= 0) {
				if (got == 0 || (errno != EAGAIN && errno != EINTR))
					conn_close(c);
				continue;
			}
			c->req_len += (size_t)got;
			c->req[c->req_len] = '\0';
			if (strstr(c->req, "\r\n\r\n") || strstr(c->req, "\n\n"))
				handle(h, c);
			else if (c->req_len == sizeof(c->req) - 1)
				respond(c, 431, "Request Header Fields Too Large", "text/plain", NULL, 0);
		}
		if (c->resp) {
			ssize_t put = send(c->fd, c->resp + c->resp_off, c->resp_len - c->resp_off, MSG_NOSIGNAL);
			if (put > 0)
				c->resp_off += (size_t)put;
			if ((put < 0 && errno != EAGAIN && errno != EINTR) || c->resp_off == c->resp_len)
				conn_close(c);
		}
	}
	for (size_t i = 0; i < HTTPD_MAX_CONNS; i++)
		if (h->conns[i].fd >= 0 && now > h->conns[i].deadline_ns)
			conn_close(&h->conns[i]);
}
