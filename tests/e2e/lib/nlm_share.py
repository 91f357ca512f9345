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
import socket, struct, sys, time

NLM, MOUNT, NFS, PMAP = 100021, 100005, 100003, 100000
GRANTED, DENIED, GRACE = 0, 1, 4
SHARE, UNSHARE, FREE_ALL = 20, 21, 23
DENY_NONE, DENY_WRITE = 0, 2
ACCESS_WRITE, ACCESS_RW = 2, 3
gw, name, addr_a, addr_b = sys.argv[1:5]
xid = (int(time.time()) & 0xFFFF) << 8


def opaque(b):
    return struct.pack(">I", len(b)) + b + b"\0" * (-len(b) % 4)


def call(prog, vers, proc, args):
    global xid
    xid += 1
    cred = struct.pack(">I", 0) + opaque(b"c4") + struct.pack(">III", 0, 0, 0)
    return xid, struct.pack(">IIIIII", xid, 0, 2, prog, vers, proc) + \
        struct.pack(">I", 1) + opaque(cred) + struct.pack(">II", 0, 0) + args


def results(r, want_xid):
    """The results of an accepted, successful reply, or None."""
    if len(r) < 24:
        return None
    x, mtype, stat = struct.unpack(">III", r[:12])
    if x != want_xid or mtype != 1 or stat != 0:
        return None
    vlen = struct.unpack(">I", r[16:20])[0]
    off = 20 + vlen + (-vlen % 4)
    if struct.unpack(">I", r[off:off + 4])[0] != 0:
        return None
    return r[off + 4:]


def get_opaque(b, off):
    n = struct.unpack(">I", b[off:off + 4])[0]
    return b[off + 4:off + 4 + n], off + 4 + n + (-n % 4)


def udp_call(src, port, prog, vers, proc, args):
    x, m = call(prog, vers, proc, args)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((src, 0))
    s.settimeout(2)
    for _ in range(3):
        s.sendto(m, (gw, port))
        try:
            r = results(s.recv(65536), x)
            if r is not None:
                return r
        except socket.timeout:
            pass
    print("no answer from %s:%d to program %d procedure %d" % (gw, port, prog, proc))
    sys.exit(2)


def getport(prog, vers):
    return struct.unpack(">I", udp_call(addr_a, 111, PMAP, 2, 3,
                                        struct.pack(">IIII", prog, vers, 17, 0))[:4])[0]


def file_handle():
    r = udp_call(addr_a, getport(MOUNT, 3), MOUNT, 3, 1, opaque(b"/export"))
    if struct.unpack(">I", r[:4])[0] != 0:
        sys.exit(2)
    root, _ = get_opaque(r, 4)
    x, m = call(NFS, 3, 3, opaque(root) + opaque(name.encode()))
    t = socket.create_connection((gw, 2049), timeout=10, source_address=(addr_a, 0))
    t.sendall(struct.pack(">I", 0x80000000 | len(m)) + m)
    data = b""
    while True:
        mark = b""
        while len(mark) < 4:
            got = t.recv(4 - len(mark))
            if not got:
                sys.exit(2)
            mark += got
        n = struct.unpack(">I", mark)[0]
        while n & 0x7FFFFFFF:
            chunk = t.recv(n & 0x7FFFFFFF)
            if not chunk:
                sys.exit(2)
            data += chunk
            n -= len(chunk)
        if n & 0x80000000:
            break
    r = results(data, x)
    if r is None or struct.unpack(">I", r[:4])[0] != 0:
        print("LOOKUP %s failed" % name)
        sys.exit(2)
    fh, _ = get_opaque(r, 4)
    return fh


def share(src, proc, cookie, mode, access, secs=10):
    """SHARE or UNSHARE from @src; its stat once it is not GRACE (or @secs are over)."""
    args = opaque(cookie) + opaque(b"pcnfs-" + src.encode()) + opaque(fh) + \
        opaque(b"share-oh") + struct.pack(">III", mode, access, 0)
    end = time.time() + secs
    while True:
        r = udp_call(src, nport, NLM, 4, proc, args)
        c, off = get_opaque(r, 0)
        stat, seq = struct.unpack(">Ii", r[off:off + 8])
        if c != cookie or len(r) != off + 8:
            print("procedure %d: a shareres %r not ours" % (proc, r))
            sys.exit(1)
        if stat != GRACE or time.time() > end:
            return stat
        time.sleep(1)


fh = file_handle()
nport = getport(NLM, 4)
print("file handle %s, gateway NLM port %d" % (fh.hex(), nport))
st = share(addr_a, SHARE, b"a-share", DENY_WRITE, ACCESS_RW)
print("A: SHARE deny-write -> %d" % st)
if st != GRANTED:
    sys.exit(1)
st = share(addr_b, SHARE, b"b-share", DENY_NONE, ACCESS_WRITE)
print("B: SHARE access-write, the same oh -> %d" % st)
if st != DENIED:
    sys.exit(1)
r = udp_call(addr_a, nport, NLM, 4, FREE_ALL, opaque(b"pcnfs-a") + struct.pack(">i", 2))
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
