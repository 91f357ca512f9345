#!/usr/bin/python3
# nlm_share.py GW NAME ADDR_A ADDR_B   DOS share reservations through the gateway GW from two
#                                      client hosts, ADDR_A and ADDR_B (two addresses of this
#                                      network namespace: the gateway tells hosts apart by
#                                      address), over UDP, NLM v4:
#   1. the NFSv3 handle of NAME in GW's /export (MOUNT and LOOKUP through the gateway);
#   2. A: SHARE deny-write, access read-write, owner handle "share-oh" -> granted;
#   3. B: SHARE deny-none, access write, the same owner handle -> denied: Linux lockd
#      (fs/lockd/svcshare.c) checks a share against the other owners' shares, and the
#      gateway makes A's and B's owners differ upstream (without its rewriting both would
#      be the gateway's "share-oh", taken as A's share updated, and granted);
#   4. A: FREE_ALL (A's reboot, no NSM) -> void reply; the gateway UNSHAREs A's share
#      upstream through its release queue (it never relays FREE_ALL, which would free
#      every client's);
#   5. B: the same SHARE again -> granted within 10 s; then B's UNSHARE -> granted.
# DENIED_GRACE_PERIOD (the server's grace) is waited out. Exit 0 when all of that holds,
# 1 for a wrong result, 2 for an error on the way. Under 30 s.
import struct, sys, time

from nlm_udp import NLM, opaque, get_opaque, udp_call, getport, file_handle

GRANTED, DENIED, GRACE = 0, 1, 4
SHARE, UNSHARE, FREE_ALL = 20, 21, 23
DENY_NONE, DENY_WRITE = 0, 2
ACCESS_WRITE, ACCESS_RW = 2, 3
gw, name, addr_a, addr_b = sys.argv[1:5]


def share(src, proc, cookie, mode, access, secs=10):
    """SHARE or UNSHARE from @src; its stat once it is not GRACE (or @secs are over)."""
    args = opaque(cookie) + opaque(b"pcnfs-" + src.encode()) + opaque(fh) + \
        opaque(b"share-oh") + struct.pack(">III", mode, access, 0)
    end = time.time() + secs
    while True:
        r = udp_call(gw, nport, NLM, 4, proc, args, src)
        c, off = get_opaque(r, 0)
        stat, seq = struct.unpack(">Ii", r[off:off + 8])
        if c != cookie or len(r) != off + 8:
            print("procedure %d: a shareres %r not ours" % (proc, r))
            sys.exit(1)
        if stat != GRACE or time.time() > end:
            return stat
        time.sleep(1)


fh = file_handle(gw, name, addr_a)
nport = getport(gw, NLM, 4, addr_a)
print("file handle %s, gateway NLM port %d" % (fh.hex(), nport))
st = share(addr_a, SHARE, b"a-share", DENY_WRITE, ACCESS_RW)
print("A: SHARE deny-write -> %d" % st)
if st != GRANTED:
    sys.exit(1)
st = share(addr_b, SHARE, b"b-share", DENY_NONE, ACCESS_WRITE)
print("B: SHARE access-write, the same oh -> %d" % st)
if st != DENIED:
    sys.exit(1)
r = udp_call(gw, nport, NLM, 4, FREE_ALL, opaque(b"pcnfs-a") + struct.pack(">i", 2), addr_a)
print("A: FREE_ALL -> void reply %r" % r)
if r != b"":
    sys.exit(1)
end = time.time() + 10
while True:
    st = share(addr_b, SHARE, b"b-share", DENY_NONE, ACCESS_WRITE, secs=0)
    print("B: SHARE after A's FREE_ALL -> %d" % st)
    if st == GRANTED:
        break
    if time.time() > end:
        sys.exit(1)
    time.sleep(1)
st = share(addr_b, UNSHARE, b"b-unshare", DENY_NONE, ACCESS_WRITE)
print("B: UNSHARE -> %d" % st)
sys.exit(0 if st == GRANTED else 1)
