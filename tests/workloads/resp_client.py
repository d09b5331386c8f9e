#!/usr/bin/env python3
"""resp_client.py — a Redis client speaking RESP over one blocking TCP socket, for the e2e tests
of a real Redis (tests/e2e/t_redis.sh): the process whose threads wait on their peer.

usage: resp_client.py --port P [--host 127.0.0.1] [--ops-per-s N] [--seconds S]
                      [--command get|incr|set] [--pace sleep|select]
                      [--keys unique|cycle:K] [--value-bytes B] [--key-prefix PREFIX]
Sends GET key (or INCR counter) in a loop, N a second (paced by waiting until each one is due: in
nanosleep, a rate-limited loop, or with --pace select in select() with no fds, as a client that
waits for its next piece of work; an op that comes due late is sent at once, the lost ones are not
sent in a burst after; N 0: back to back), each reply read whole before the next is sent, for S
seconds (0: until killed).
--command set (or --cmd set): SET PREFIXi value instead (PREFIX "key:" by default, value B bytes,
100 by default), i the op's number: with --keys unique (the default) a new key every op, so that
Redis's keyspace grows by N keys a second, a cache with no bound; with --keys cycle:K the same K
keys (PREFIX0 .. PREFIX<K-1>) overwritten round robin, so that the keyspace stops at K keys and
the server's memory stays flat after the first pass (bounded churn: each SET frees the value it
replaces). --keys, --value-bytes and --key-prefix are for set only.
Prints "ready" on stdout once connected and answered (get, incr: SET key, the value GET reads;
set: PING, so that the keyspace holds only its own keys); at the end, or on SIGTERM / SIGINT, one
summary line on stderr: ops, errors, rate, p50 / p99 / max of the op latency (send to reply read),
and for set the distinct keys it wrote.
Owns nothing but its one connection: it must not start a server, write any key but its own (key,
counter; PREFIXi with set), or open a second socket (the peer-wait probe times this one).
"""
import argparse
import select
import signal
import socket
import sys
import time


class RespError(Exception):
    pass


def command(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def read_reply(f):
    """One whole RESP2 reply from the buffered reader f; an error reply raises RespError."""
    line = f.readline()
    if not line.endswith(b"\r\n"):
        raise ConnectionError("the server closed the connection")
    kind, rest = line[:1], line[1:-2]
    if kind == b"+":
        return rest
    if kind == b"-":
        raise RespError(rest.decode(errors="replace"))
    if kind == b":":
        return int(rest)
    if kind == b"$":
        n = int(rest)
        if n < 0:
            return None
        data = f.read(n + 2)
        if len(data) != n + 2:
            raise ConnectionError("the server closed the connection within a reply")
        return data[:-2]
    if kind == b"*":
        n = int(rest)
        return None if n < 0 else [read_reply(f) for _ in range(n)]
    raise ConnectionError("not a RESP reply: %r" % line[:40])


def percentile(sorted_ns, p):
    if not sorted_ns:
        return 0
    return sorted_ns[min(len(sorted_ns) - 1, int(len(sorted_ns) * p / 100))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--ops-per-s", type=float, default=200)
    ap.add_argument("--seconds", type=float, default=0)
    ap.add_argument("--command", "--cmd", choices=("get", "incr", "set"), default="get")
    ap.add_argument("--pace", choices=("sleep", "select"), default="sleep")
    ap.add_argument("--keys", default=None, help="set: unique (default) or cycle:K")
    ap.add_argument("--value-bytes", type=int, default=None, help="set: the value's size (100)")
    ap.add_argument("--key-prefix", default=None, help='set: the keys\' prefix ("key:")')
    a = ap.parse_args()
    cycle = 0  # set: 0 for unique keys, else the number of keys overwritten round robin
    if a.command != "set":
        if a.keys is not None or a.value_bytes is not None or a.key_prefix is not None:
            ap.error("--keys, --value-bytes and --key-prefix are for --command set")
    else:
        keys = a.keys if a.keys is not None else "unique"
        if keys.startswith("cycle:") and keys[6:].isdigit() and int(keys[6:]) > 0:
            cycle = int(keys[6:])
        elif keys != "unique":
            ap.error("--keys: unique or cycle:K (K > 0), not %r" % keys)
        if a.value_bytes is None:
            a.value_bytes = 100
        if a.value_bytes < 0:
            ap.error("--value-bytes must be 0 or more")
        prefix = (a.key_prefix if a.key_prefix is not None else "key:").encode()
        value = b"v" * a.value_bytes

    sock = socket.create_connection((a.host, a.port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as Redis clients do
    f = sock.makefile("rb")
    if a.command == "set":
        sock.sendall(command("PING"))
        read_reply(f)
        op = None
    else:
        sock.sendall(command("SET", "key", "v" * 64))
        read_reply(f)
        op = command("GET", "key") if a.command == "get" else command("INCR", "counter")

    lat = []
    errors = 0
    begin = time.monotonic()

    def summary(*_):
        took = max(time.monotonic() - begin, 1e-9)
        s = sorted(lat)
        keys = "" if op else ", %d keys" % (min(len(lat), cycle) if cycle else len(lat))
        print("resp_client: %d ops, %d errors in %.1f s (%.1f/s), p50 %.3f ms, p99 %.3f ms, max %.3f ms%s" %
              (len(lat), errors, took, len(lat) / took, percentile(s, 50) / 1e6, percentile(s, 99) / 1e6,
               (s[-1] if s else 0) / 1e6, keys), file=sys.stderr, flush=True)
        sys.exit(0 if errors == 0 else 1)

    signal.signal(signal.SIGTERM, summary)
    signal.signal(signal.SIGINT, summary)
    print("ready", flush=True)

    interval = 1.0 / a.ops_per_s if a.ops_per_s > 0 else 0
    due = begin = time.monotonic()
    end = begin + a.seconds if a.seconds > 0 else None
    while end is None or time.monotonic() < end:
        if interval:
            now = time.monotonic()
            if now < due:
                if a.pace == "sleep":
                    time.sleep(due - now)
                else:
                    select.select([], [], [], due - now)
                due += interval
            else:
                due = now + interval  # late: no burst to catch up
        if op:
            req = op
        else:
            n = len(lat) % cycle if cycle else len(lat)
            req = command(b"SET", prefix + str(n).encode(), value)
        t0 = time.monotonic_ns()
        sock.sendall(req)
        try:
            read_reply(f)
        except RespError as e:
            errors += 1
            print("resp_client: error reply: %s" % e, file=sys.stderr, flush=True)
        lat.append(time.monotonic_ns() - t0)
    summary()


if __name__ == "__main__":
    main()
