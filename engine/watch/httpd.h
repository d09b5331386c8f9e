/* httpd.h — the metrics endpoint of `diagnose watch`: a minimal HTTP/1.0 responder for
 * Prometheus's scrapes, served from watch's own event loop (no thread).
 *
 * Owns: the listening socket (an address literal and a port, IPv4 or IPv6; no name lookup), at
 * most HTTPD_MAX_CONNS connections at once (more wait in the kernel's backlog), each bounded in
 * request size (8 KiB) and time (5 s from accept to the last byte written); `GET /metrics` gets
 * the exposition the callback builds, any other path 404, any other method 405. Nonblocking:
 * a slow client never stalls watch.
 * Must not: build metrics, read more than the request line's path, or serve files.
 */
#ifndef DIAG_HTTPD_H
#define DIAG_HTTPD_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

#define HTTPD_MAX_CONNS 8

/* Builds the body for a scrape: *body malloc'd (the caller of the callback frees it). */
typedef void (*httpd_body_fn)(void *ctx, char **body, size_t *len);

struct httpd_conn {
	int fd;              /* -1: free */
	uint64_t deadline_ns;
	char req[8192];
	size_t req_len;
	char *resp;
	size_t resp_len, resp_off;
};

struct httpd {
	int listen_fd;       /* -1: not listening */
	char addr[80];       /* as bound, "127.0.0.1:9464" */
	struct httpd_conn conns[HTTPD_MAX_CONNS];
	httpd_body_fn body;
	void *ctx;
	uint64_t scrapes;    /* /metrics answered */
};

/* Listens on spec ("ADDR:PORT", "[ADDR6]:PORT"). DIAG_EXIT_USAGE for a spec that is not one,
 * DIAG_EXIT_RUNTIME when the bind fails (the port in use). */
int httpd_open(struct httpd *h, const char *spec, httpd_body_fn body, void *ctx, struct diag_err *err);
void httpd_close(struct httpd *h);

/* The descriptors to poll (up to 1 + HTTPD_MAX_CONNS): returns how many were written to fds. */
size_t httpd_pollfds(const struct httpd *h, struct pollfd *fds);
/* After poll: accepts, reads, answers and closes what is ready or past its deadline. */
void httpd_service(struct httpd *h, const struct pollfd *fds, size_t n);

#endif
