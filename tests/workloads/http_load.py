#!/usr/bin/env python3
"""http_load.py — an HTTP/1.1 load generator: N keep-alive connections issuing GETs back to back.

usage: http_load.py HOST:PORT [--conns N] [--seconds S] [--pace-ms MS] [--path PATH]
Each of N connections (default 8) sends a GET, reads the whole response, and sends the next one,
for S seconds (0, the default: until SIGTERM or SIGINT). --pace-ms MS: a connection starts its
next request no sooner than MS after the last one started (0: at once), so that a fast server
gets the same request rate as a slow one. A connection that fails is counted and opened again.
At the end it prints one line to stderr:
    http_load: requests N errors E p50_ms X p99_ms Y
(requests: answered with a 2xx; errors: failures and other statuses; latencies of the 2xx ones).
Owns: its client sockets and its threads.
Must not: print anything else, or exit non-zero for a server's errors (the summary says them).
"""
import argparse
import http.client
import signal
import sys
import threading
import time

stop = threading.Event()
lock = threading.Lock()
latencies = []
errors = 0


def connection(host, port, path, pace_s):
    global errors
    conn = None
    mine = []
    while not stop.is_set():
        begin = time.monotonic()
        try:
            if conn is None:
                conn = http.client.HTTPConnection(host, port, timeout=5)
            conn.request("GET", path)
            resp = conn.getresponse()
            resp.read()
            ok = 200 <= resp.status < 300
            if resp.will_close:
                conn.close()
                conn = None
        except (OSError, http.client.HTTPException):
            ok = False
            if conn is not None:
                conn.close()
            conn = None
            stop.wait(0.05)  # a server that is down is not hammered
        took = time.monotonic() - begin
        if ok:
            mine.append(took)
        else:
            with lock:
                errors += 1
        if len(mine) >= 64:
            with lock:
                latencies.extend(mine)
            mine = []
        if pace_s > took:
            stop.wait(pace_s - took)
    with lock:
        latencies.extend(mine)
    if conn is not None:
        conn.close()


def percentile(sorted_values, p):
    if not sorted_values:
        return 0.0
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * p))]


def main():
    ap = argparse.ArgumentParser(description="keep-alive HTTP/1.1 load, N connections back to back")
    ap.add_argument("target", help="HOST:PORT")
    ap.add_argument("--conns", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=0.0)
    ap.add_argument("--pace-ms", type=float, default=0.0)
    ap.add_argument("--path", default="/")
    a = ap.parse_args()
    host, _, port = a.target.rpartition(":")
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    threads = [threading.Thread(target=connection, args=(host, int(port), a.path, a.pace_ms / 1000.0),
                                daemon=True) for _ in range(a.conns)]
    for t in threads:
        t.start()
    end = time.monotonic() + a.seconds if a.seconds > 0 else None
    while not stop.is_set():
        left = None if end is None else end - time.monotonic()
        if left is not None and left <= 0:
            break
        stop.wait(1.0 if left is None else min(left, 1.0))  # wakes for signals
    stop.set()
    for t in threads:
        t.join(6)  # a request in flight ends within its timeout
    with lock:
        values = sorted(latencies)
        errs = errors
    print("http_load: requests %d errors %d p50_ms %.1f p99_ms %.1f"
          % (len(values), errs, percentile(values, 0.5) * 1000, percentile(values, 0.99) * 1000),
          file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
