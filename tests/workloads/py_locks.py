"""py_locks.py — a Python service's threads blocked on threading's locks before anyone looks, for the
stuck-threads tests (tests/e2e/t_stuck.sh). Run by Debian's python3.11 (its frames are read).

  py_locks.py deadlock   transfer() holds `accounts` and waits for `audit`; audit_books() holds
                         `audit` and waits for `accounts`: both threading.Lock, for ever
  py_locks.py idle       a ThreadPoolExecutor of 4 workers with no work (each parked on its
                         queue), and a consumer thread waiting on a queue.Queue that stays empty

The main thread then waits for the others in join() (never returns). Prints "ready" once every
thread is parked. Must not: wake a parked thread, or use timeouts.
"""
import concurrent.futures
import queue
import sys
import threading

accounts = threading.Lock()
audit = threading.Lock()
both_hold = threading.Barrier(3)


def transfer():
    with accounts:
        both_hold.wait()
        with audit:  # never
            pass


def audit_books():
    with audit:
        both_hold.wait()
        with accounts:  # never
            pass


def consume(q):
    while True:
        q.get()


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "deadlock"
    threads = []
    if mode == "deadlock":
        threads = [threading.Thread(target=transfer, name="transfer"),
                   threading.Thread(target=audit_books, name="audit")]
        for t in threads:
            t.start()
        both_hold.wait()
    elif mode == "idle":
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=4)
        for f in [pool.submit(lambda: None) for _ in range(8)]:
            f.result()
        threads = [threading.Thread(target=consume, args=(queue.Queue(),), name="consumer", daemon=True)]
        threads[0].start()
    else:
        sys.exit("usage: py_locks.py deadlock|idle")
    print("ready", flush=True)
    for t in threads:
        t.join()


main()
