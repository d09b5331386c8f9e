"""py_service.py — a small Python "service" with a known cause, for tests/e2e/t_python.sh.

  --hot    requests spend their time in checksum_rows() (pure Python arithmetic): high-cpu must
           name checksum_rows and this file
  --idle   the same request loop, each request a few microseconds of work and a 50 ms sleep in
           wait_for_work(): the healthy control (no CPU-bound verdict)
  --lock   fetch_row() waits for a threading.Lock that a background thread, flush_batch(),
           holds for 200 ms at a time: latency's off-CPU stacks must show fetch_row
  --grow   remember_rows() appends 500 new strings of ~200 bytes to a module-level list every
           10 ms and never drops them: memory-growth must name remember_rows
  --churn  the same rows built every 10 ms and dropped (a bounded working set): the control
Runs until --seconds pass (default 60) or it is killed.
"""
import argparse
import threading
import time


def checksum_rows(n):
    total = 0
    for i in range(n):
        total = (total * 31 + i) % 1000003
    return total


def handle_request():
    return checksum_rows(20000)


def wait_for_work():
    time.sleep(0.05)


LOCK = threading.Lock()


def flush_batch():
    while True:
        with LOCK:
            time.sleep(0.2)
        time.sleep(0.001)


def fetch_row():
    with LOCK:
        return 1


ROWS = []


def remember_rows(n):
    for i in range(n):
        ROWS.append("row-%d-%s" % (i, "x" * 200))


def build_rows(n):
    batch = []
    for i in range(n):
        batch.append("row-%d-%s" % (i, "x" * 200))
    return len(batch)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hot", action="store_true")
    ap.add_argument("--idle", action="store_true")
    ap.add_argument("--lock", action="store_true")
    ap.add_argument("--grow", action="store_true")
    ap.add_argument("--churn", action="store_true")
    ap.add_argument("--seconds", type=float, default=60)
    a = ap.parse_args()
    end = time.monotonic() + a.seconds
    if a.lock:
        threading.Thread(target=flush_batch, daemon=True).start()
    while time.monotonic() < end:
        if a.hot:
            handle_request()
        elif a.lock:
            fetch_row()
        elif a.grow or a.churn:
            remember_rows(500) if a.grow else build_rows(500)
            time.sleep(0.01)
        else:
            checksum_rows(10)
            wait_for_work()


main()
