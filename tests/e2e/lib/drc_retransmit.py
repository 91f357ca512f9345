# drc_retransmit.py GATEWAY PORT EXPORT NAME SRCPORT [FLOOD FLOODADDR]: a non-idempotent
# call retransmitted after the client reconnected is answered from the NFS server's
# duplicate request cache.
#
# As a Linux NFSv3 client does after a lost connection: an NFSv3 REMOVE goes to the
# gateway from source port SRCPORT, the connection is reset before the reply is read, a
# new connection is made from the same address and port, and the very same call (same
# XID, same bytes) is sent again. The gateway must send it again on the same shared
# RDMA connection under the same wire XID, so that the server finds it in its cache and
# answers as it did the first time: NFS3_OK (the file is already gone; executed again,
# the REMOVE would answer NFS3ERR_NOENT). The control, the same REMOVE under a fresh
# XID, does answer NFS3ERR_NOENT: the server really executes what it does not recognise.
# The root file handle comes from the server's own mountd (rpcbind on 127.0.0.1): the
# handle is the server's, whoever relays the NFS calls. Prints one line per step and
# exits 0 when every answer is as expected, 1 otherwise. Done twice: NAME-1 with the
# reset after the reply reached the gateway, NAME-2 with the reset (and the reconnect)
# straight after the call, while it is still on its way to the server.
# With FLOOD, a third time (NAME-3) with a busy neighbour between the reset and the
# reconnect: another client, connected from FLOODADDR (another address), sends FLOOD NULL
# calls through the gateway, more than the shared route's XID map holds. The gateway must
# keep the REMOVE's answered entry (a call that must not run twice, kept for its client)
# and let the neighbour's calls, which only read, recycle their own places.
# Where the reply was answered before the reset, the server's own count says how the
# retransmission was served: its reply cache's hits (/proc/net/rpc/nfsd "rc") move by
# exactly one. The server runs in the same guest.
import os
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rpc_tcp import SUCCESS, auth_sys, call, read_record, record, xdr_opaque  # noqa: E402

NFS_PROG, MOUNT_PROG, PMAP_PROG = 100003, 100005, 100000
NFS3_OK, NFS3ERR_NOENT = 0, 2
NFSPROC3_CREATE, NFSPROC3_REMOVE = 8, 12


def accepted_body(body, xid):
    """The results after an accepted, successful reply header with an AUTH_NONE verifier."""
    rxid, mtype, stat, vflavor, vlen = struct.unpack(">IIIII", body[:20])
    if rxid != xid or mtype != 1 or stat != 0:
        raise RuntimeError("xid %#x: reply xid %#x type %d stat %d" % (xid, rxid, mtype, stat))
    off = 20 + vlen + (-vlen % 4)
    astat = struct.unpack(">I", body[off:off + 4])[0]
    if astat != SUCCESS:
        raise RuntimeError("xid %#x: accept_stat %d" % (xid, astat))
    return body[off + 4:]


def rpc(sock, msg, xid):
    sock.sendall(record(msg))
    return accepted_body(read_record(sock), xid)


def root_handle(export):
    s = socket.create_connection(("127.0.0.1", 111), timeout=10)
    port = struct.unpack(">I", rpc(s, call(1, PMAP_PROG, 2, 3,
                                             struct.pack(">IIII", MOUNT_PROG, 3, 6, 0)), 1))[0]
    s.close()
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    res = rpc(s, call(2, MOUNT_PROG, 3, 1, xdr_opaque(export.encode()), auth_sys()), 2)
    s.close()
    status, n = struct.unpack(">II", res[:8])
    if status != 0:
        raise RuntimeError("MNT %s: status %d" % (export, status))
    return res[8:8 + n]


def connect_from(gw, port, srcport):
    """A connection from a fixed source port: the client as the server's cache knows it."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.settimeout(10)
    for _ in range(50):  # the port may be in TIME_WAIT a moment from an earlier run
        try:
            s.bind(("0.0.0.0", srcport))
            break
        except OSError:
            time.sleep(0.1)
    s.connect((gw, port))
    return s


def reset(s):
    """Close with an RST (SO_LINGER 0): no TIME_WAIT, so the port is free at once."""
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()


def nfs_status(res):
    return struct.unpack(">I", res[:4])[0]


def cache_hits():
    """The server's reply cache hits (the first field of the "rc" line)."""
    with open("/proc/net/rpc/nfsd") as f:
        for line in f:
            if line.startswith("rc "):
                return int(line.split()[1])
    raise RuntimeError("/proc/net/rpc/nfsd has no rc line")


def flood(gw, port, addr, n):
    """@n NULL calls from @addr, 64 at a time on one connection; every reply read."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(30)
    s.bind((addr, 0))
    s.connect((gw, port))
    xid, sent, t0 = int.from_bytes(os.urandom(4), "big") & 0x7FF00000, 0, time.monotonic()
    while sent < n:
        k = min(64, n - sent)
        s.sendall(b"".join(record(call(xid + sent + i, NFS_PROG, 3, 0)) for i in range(k)))
        for _ in range(k):
            read_record(s)
        sent += k
    reset(s)
    print("a neighbour at %s sent %d NULL calls in %.1f s" % (addr, n, time.monotonic() - t0))


def remove_twice(gw, port, fh, name, srcport, xid, settle, neighbour=None):
    """CREATE NAME, then REMOVE it, reset, reconnect, the same REMOVE again, and the control.

    @settle: seconds between sending the REMOVE and the reset, and again before the
    reconnect: long enough for the reply to reach the gateway first, or 0, so that the
    client goes while its call is still on the way (and maybe comes back before the reply).
    """
    cred = auth_sys(b"gw-drc")
    diropargs = xdr_opaque(fh) + xdr_opaque(name.encode())
    ok = True
    s = connect_from(gw, port, srcport)
    # CREATE UNCHECKED, mode 0644, nothing else set.
    sattr = struct.pack(">IIIIIIIII", 1, 0o644, 0, 0, 0, 0, 0, 0, 0)
    st = nfs_status(rpc(s, call(xid, NFS_PROG, 3, NFSPROC3_CREATE,
                                diropargs + struct.pack(">I", 0) + sattr, cred), xid))
    print("CREATE %s: status %d" % (name, st))
    ok &= st == NFS3_OK

    remove = call(xid + 1, NFS_PROG, 3, NFSPROC3_REMOVE, diropargs, cred)
    s.sendall(record(remove))
    time.sleep(settle)
    reset(s)
    print("REMOVE %s xid %#x sent from port %d, connection reset %s s later, reply unread"
          % (name, xid + 1, srcport, settle))
    time.sleep(settle)
    if neighbour:
        flood(gw, port, neighbour[1], neighbour[0])

    hits = cache_hits()
    s = connect_from(gw, port, srcport)
    st = nfs_status(rpc(s, remove, xid + 1))
    print("REMOVE %s xid %#x again from port %d after reconnecting: status %d (want %d, from "
          "the server's cache)" % (name, xid + 1, srcport, st, NFS3_OK))
    ok &= st == NFS3_OK
    if settle:
        hits = cache_hits() - hits
        print("the server's reply cache: %d hit(s) for it (want 1: executed once)" % hits)
        ok &= hits == 1

    st = nfs_status(rpc(s, call(xid + 2, NFS_PROG, 3, NFSPROC3_REMOVE, diropargs, cred), xid + 2))
    print("control: REMOVE %s under a fresh xid %#x: status %d (want %d, executed)"
          % (name, xid + 2, st, NFS3ERR_NOENT))
    ok &= st == NFS3ERR_NOENT
    reset(s)
    return ok


def main():
    gw, port, export, name, srcport = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], \
        int(sys.argv[5])
    neighbour = (int(sys.argv[6]), sys.argv[7]) if len(sys.argv) > 7 else None
    fh = root_handle(export)
    xid = int.from_bytes(os.urandom(4), "big") & 0x7FFFFF00
    ok = remove_twice(gw, port, fh, name + "-1", srcport, xid, 0.5)
    ok &= remove_twice(gw, port, fh, name + "-2", srcport, xid + 16, 0)
    if neighbour:
        ok &= remove_twice(gw, port, fh, name + "-3", srcport, xid + 32, 0.5, neighbour)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
