#!/usr/bin/env python3
"""dns_stub.py — a DNS server that answers late, for the latency tests' slow resolver.

usage: dns_stub.py ADDRESS DELAY_MS  (UDP port 53 on ADDRESS, e.g. 127.0.0.2)
Every A query gets 10.0.0.1 after DELAY_MS; other types get an empty NOERROR answer after the
same delay. Each query is answered from its own thread, so concurrent lookups all wait DELAY_MS
(DELAY_MS 0: answered at once, inline).
Prints "ready" once listening.
"""
import socket
import struct
import sys
import threading
import time


def answer(sock, query, peer, delay_s):
    if delay_s:
        time.sleep(delay_s)
    if len(query) < 12:
        return
    qid, _flags, qd = struct.unpack(">HHH", query[:6])
    end = 12
    while end < len(query) and query[end] != 0:
        end += query[end] + 1
    end += 1
    if end + 4 > len(query) or qd != 1:
        return
    qtype = struct.unpack(">H", query[end:end + 2])[0]
    question = query[12:end + 4]
    records = b""
    if qtype == 1:  # A
        records = struct.pack(">HHHIH", 0xC00C, 1, 1, 30, 4) + socket.inet_aton("10.0.0.1")
    head = struct.pack(">HHHHHH", qid, 0x8180, 1, 1 if records else 0, 0, 0)
    sock.sendto(head + question + records, peer)


def main():
    addr, delay_ms = sys.argv[1], int(sys.argv[2])
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((addr, 53))
    print("ready", flush=True)
    while True:
        query, peer = sock.recvfrom(512)
        if delay_ms == 0:  # the fast control: answered inline, no thread to start
            answer(sock, query, peer, 0)
        else:
            threading.Thread(target=answer, args=(sock, query, peer, delay_ms / 1000.0), daemon=True).start()


if __name__ == "__main__":
    main()
