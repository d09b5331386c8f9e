#!/usr/bin/env python3
"""slow_upstream.py — an HTTP/1.1 backend that answers late, for the latency tests' slow upstream.

usage: slow_upstream.py [--port PORT] [--delay-ms MS]
Listens on 127.0.0.1:PORT (0, the default: a free port) and prints the port it listens on as the
first line of stdout, once listening. Every GET is answered after MS milliseconds (0: at once)
with a small text body, from its own thread (ThreadingHTTPServer: concurrent requests all wait
MS), keep-alive as HTTP/1.1 allows.
Owns: its listening socket and the connections it accepts; runs until killed.
Must not: log requests (a test reads its diagnose reports, not this), or listen beyond loopback.
"""
import argparse
import http.server
import sys
import time

BODY = b"slow upstream\n"


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: every answer says its Content-Length
    # headers and body are two writes: without TCP_NODELAY the body waits for the client's
    # delayed ACK (40 ms on Linux), a latency of the test's own making
    disable_nagle_algorithm = True
    delay_s = 0.0

    def do_GET(self):
        if self.delay_s:
            time.sleep(self.delay_s)
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)

    def log_message(self, *args):
        pass


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # the default 5 drops a proxy's burst of connects: 1 s SYN retries


def main():
    ap = argparse.ArgumentParser(description="an HTTP/1.1 upstream that answers after a delay")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--delay-ms", type=float, default=0.0)
    a = ap.parse_args()
    Handler.delay_s = a.delay_ms / 1000.0
    srv = Server(("127.0.0.1", a.port), Handler)
    print(srv.server_address[1], flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
