#!/usr/bin/env python3
# nlm_forged.py GATEWAY COUNT: COUNT NLM v4 TESTs to the gateway's NLM relay (its UDP
# port from the gateway's portmapper), each from a forged source address of its own,
# 250 hosts in each of 10.77.0.0/24, 10.77.1.0/24, ..., sent from a raw socket (root)
# and paced at 100 every 50 ms. Nothing is received: the replies go to the forged hosts.
import socket, struct, sys, time

from nlm_udp import NLM, call, getport, opaque

gw, count = sys.argv[1], int(sys.argv[2])
nport = getport(gw, NLM, 4)
raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
for i in range(count):
    # TEST: cookie, exclusive, then the lock: caller, fh, oh, svid, offset, length.
    args = opaque(b"ck") + struct.pack(">I", 1) + opaque(b"forged-%d" % i) + \
        opaque(b"\1" * 32) + opaque(b"owner") + struct.pack(">iQQ", 7, 0, 1)
    _, msg = call(NLM, 4, 1, args)
    udp = struct.pack(">HHHH", 700, nport, 8 + len(msg), 0) + msg
    src = socket.inet_aton("10.77.%d.%d" % (i // 250, 1 + i % 250))
    # IPv4 header; the kernel fills in the checksum of a raw IPPROTO_RAW datagram.
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), i & 0xFFFF, 0, 64, 17, 0,
                     src, socket.inet_aton(gw))
    raw.sendto(ip + udp, (gw, 0))
    if i % 100 == 99:
        time.sleep(0.05)
