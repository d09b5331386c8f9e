"""py_gc.py — a Python service with a heap of 200,000 long-lived objects whose requests allocate
N objects each: with --cycles, objects that refer to themselves (containers the garbage collector
tracks, and only it can free: collections of every generation run, generation 2 walking the whole
heap); without, the same number of strings (not tracked: reference counting frees them, no
collection runs) — the healthy control.

    python3 py_gc.py [--cycles] [--objects N] [--pause-ms MS]
"""
import argparse
import time


class Node:
    pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cycles", action="store_true")
    ap.add_argument("--objects", type=int, default=200000)
    ap.add_argument("--pause-ms", type=float, default=10)
    a = ap.parse_args()
    keep = [Node() for _ in range(200000)]  # a long-lived heap, as a service has
    while True:
        batch = []
        for i in range(a.objects):
            if a.cycles:
                n = Node()
                n.self = n
            else:
                n = "request-%d" % i
            batch.append(n)
        del batch
        time.sleep(a.pause_ms / 1000)
    return keep


if __name__ == "__main__":
    main()
