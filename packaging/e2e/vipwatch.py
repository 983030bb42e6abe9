#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Usage: vipwatch.py VIP CLIENT_NETNS NAME=NETNS...   (as root)
#
# The witness of migrate.sh, from outside the containers: every
# --sample seconds it asks each NETNS (a /proc/PID/ns/net or /run/netns
# path) over netlink which of them has VIP, and from CLIENT_NETNS it pings
# VIP every --ping seconds. It runs until SIGTERM or SIGINT, then prints
# one JSON object: the holder changes, the time with two or more holders,
# the longest time without a reply, the lost pings, and the timeline (in
# seconds from start_unix).
#
# Netlink and a raw ICMP socket, not ip(8) and ping(8) per sample: three
# processes every 20 ms would load a 2-core machine enough to blur the
# timing being measured. Each socket is opened in its namespace (setns in
# the main thread, before any other thread starts) and stays there.

import argparse
import ctypes
import json
import os
import signal
import socket
import struct
import sys
import threading
import time

CLONE_NEWNET = 0x40000000
RTM_GETADDR = 22
RTM_NEWADDR = 20
NLM_F_REQUEST = 1
NLM_F_DUMP = 0x300
NLMSG_DONE = 3
NLMSG_ERROR = 2
IFA_ADDRESS = 1
IFA_LOCAL = 2

libc = ctypes.CDLL(None, use_errno=True)


def setns(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            e = ctypes.get_errno()
            raise OSError(e, "setns %s: %s" % (path, os.strerror(e)))
    finally:
        os.close(fd)


def in_netns(path, make):
    """make() run in the network namespace at path; back to ours after."""
    home = os.open("/proc/self/task/%d/ns/net" % threading.get_native_id(), os.O_RDONLY)
    try:
        setns(path)
        return make()
    finally:
        libc.setns(home, CLONE_NEWNET)
        os.close(home)


class Addrs:
    """IPv4 addresses of one network namespace, by netlink dump."""

    def __init__(self, path):
        self.sock = in_netns(path, lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE))
        self.sock.bind((0, 0))
        self.seq = 0

    def v4(self):
        self.seq += 1
        req = struct.pack("=LHHLL", 16 + 8, RTM_GETADDR, NLM_F_REQUEST | NLM_F_DUMP, self.seq, 0)
        req += struct.pack("=BBBBL", socket.AF_INET, 0, 0, 0, 0)
        self.sock.send(req)
        out = set()
        while True:
            data = self.sock.recv(65536)
            off = 0
            while off + 16 <= len(data):
                length, typ, _, seq, _ = struct.unpack_from("=LHHLL", data, off)
                if length < 16:
                    return out
                if seq == self.seq:
                    if typ in (NLMSG_DONE, NLMSG_ERROR):
                        return out
                    if typ == RTM_NEWADDR:
                        a = off + 16 + 8
                        while a + 4 <= off + length:
                            alen, atyp = struct.unpack_from("=HH", data, a)
                            if alen < 4:
                                break
                            if atyp in (IFA_LOCAL, IFA_ADDRESS) and alen == 8:
                                out.add(socket.inet_ntoa(data[a + 4:a + 8]))
                            a += (alen + 3) & ~3
                off += (length + 3) & ~3


def checksum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return ~s & 0xFFFF


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("vip")
    ap.add_argument("client")
    ap.add_argument("nodes", nargs="+")
    ap.add_argument("--sample", type=float, default=0.02)
    ap.add_argument("--ping", type=float, default=0.01)
    ap.add_argument("--ready", help="a file created once both loops run")
    args = ap.parse_args()

    nodes = []
    for spec in args.nodes:
        name, path = spec.split("=", 1)
        nodes.append((name, Addrs(path)))
    icmp = in_netns(args.client, lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP))
    icmp.settimeout(0.2)

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())

    samples = []  # (monotonic time, holders tuple)
    sent = {}  # seq -> send time
    replies = {}  # seq -> receive time
    ident = os.getpid() & 0xFFFF
    lock = threading.Lock()

    cur = [0]  # the last sequence number sent, not wrapped

    def pinger():
        nxt = time.monotonic()
        body = b"vipwatch" * 4
        while not stop.is_set():
            seq = cur[0] + 1
            hdr = struct.pack("!BBHHH", 8, 0, 0, ident, seq & 0xFFFF)
            pkt = struct.pack("!BBHHH", 8, 0, checksum(hdr + body), ident, seq & 0xFFFF) + body
            with lock:
                sent[seq] = time.monotonic()
                cur[0] = seq
            try:
                icmp.sendto(pkt, (args.vip, 0))
            except OSError:
                pass  # no route or no neighbour for a moment: counted as lost
            nxt += args.ping
            time.sleep(max(0.0, nxt - time.monotonic()))

    def receiver():
        while not stop.is_set() or time.monotonic() < stop_at[0]:
            try:
                data, src = icmp.recvfrom(2048)
            except socket.timeout:
                continue
            now = time.monotonic()
            ihl = (data[0] & 0x0F) * 4
            if src[0] != args.vip or len(data) < ihl + 8:
                continue
            typ, _, _, rid, rseq = struct.unpack_from("!BBHHH", data, ihl)
            if typ == 0 and rid == ident:
                with lock:
                    # The 16-bit number on the wire, back to the sent one.
                    full = cur[0] - ((cur[0] - rseq) & 0xFFFF)
                    replies.setdefault(full, now)

    stop_at = [float("inf")]
    threads = [threading.Thread(target=pinger), threading.Thread(target=receiver)]
    for t in threads:
        t.start()
    start = time.monotonic()
    start_unix = time.time()
    if args.ready:
        open(args.ready, "w").close()
    nxt = start
    while not stop.is_set():
        now = time.monotonic()
        held = tuple(name for name, a in nodes if args.vip in a.v4())
        samples.append((now, held))
        nxt += args.sample
        time.sleep(max(0.0, nxt - time.monotonic()))
    end = time.monotonic()
    # The replies to the last pings, sent just before the stop.
    stop_at[0] = end + 0.5
    for t in threads:
        t.join()

    moves = 0
    two = 0.0
    two_samples = 0
    none_samples = 0
    timeline = []
    prev = None
    for i, (t, held) in enumerate(samples):
        dt = (samples[i + 1][0] if i + 1 < len(samples) else end) - t
        if len(held) >= 2:
            two += dt
            two_samples += 1
        if not held:
            none_samples += 1
        if held != prev:
            if prev is not None:
                moves += 1
            timeline.append({"t": round(t - start, 3), "holders": list(held)})
            prev = held
    with lock:
        seqs = [s for s in sent if sent[s] <= end]
        rtimes = sorted(replies[s] for s in seqs if s in replies)
    # The longest time the client went without a reply, from the start of
    # the watch to the end.
    longest = 0.0
    at = 0.0
    last = start
    gaps = []  # every gap of more than 5 pings, to place it in time
    for r in rtimes + [end]:
        if r - last > longest:
            longest, at = r - last, last - start
        if r - last > 5 * args.ping:
            gaps.append([round(last - start, 3), round((r - last) * 1000, 1)])
        last = r
    out = {
        "start_unix": round(start_unix, 3),
        "duration_s": round(end - start, 3),
        "samples": len(samples),
        "sample_interval_max_ms": round(max((b[0] - a[0] for a, b in zip(samples, samples[1:])), default=0) * 1000, 1),
        "moves": moves,
        "two_holder_samples": two_samples,
        "two_holder_s": round(two, 3),
        "no_holder_samples": none_samples,
        "final_holders": list(samples[-1][1]) if samples else [],
        "pings_sent": len(seqs),
        "pings_answered": len(rtimes),
        "pings_lost": len(seqs) - len(rtimes),
        "longest_gap_ms": round(longest * 1000, 1),
        "longest_gap_at_s": round(at, 3),
        "gaps_ms": gaps,
        "timeline": timeline,
    }
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
