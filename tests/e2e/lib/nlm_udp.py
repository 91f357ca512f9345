# nlm_udp.py: what the raw NLM clients of the end-to-end jobs (nlm_async.py, nlm_share.py)
# share: ONC RPC calls over UDP to the gateway (AUTH_SYS, machine name "c4"), the
# portmapper's GETPORT, and an NFSv3 file handle by MOUNT (UDP) and LOOKUP (TCP) through
# the gateway. A call with no answer after three tries, or a handle not found, exits 2
# (an error on the way, not a wrong result).
#   from nlm_udp import *       (the scripts' own directory is on sys.path)
import socket, struct, sys, time

NLM, MOUNT, NFS, PMAP = 100021, 100005, 100003, 100000
_xid = [(int(time.time()) & 0xFFFF) << 8]


def opaque(b):
    return struct.pack(">I", len(b)) + b + b"\0" * (-len(b) % 4)


def get_opaque(b, off):
    n = struct.unpack(">I", b[off:off + 4])[0]
    return b[off + 4:off + 4 + n], off + 4 + n + (-n % 4)


def call(prog, vers, proc, args):
    """(xid, message) of a call with AUTH_SYS c4, uid 0."""
    _xid[0] += 1
    body = struct.pack(">I", 0) + opaque(b"c4") + struct.pack(">III", 0, 0, 0)
    return _xid[0], struct.pack(">IIIIII", _xid[0], 0, 2, prog, vers, proc) + \
        struct.pack(">I", 1) + opaque(body) + struct.pack(">II", 0, 0) + args


def results(r, want_xid):
    """The results of an accepted, successful reply to @want_xid, or None."""
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


def udp_call(gw, port, prog, vers, proc, args, src=None, timeout=2):
    """The results of a call to @gw:@port, from address @src if given."""
    x, m = call(prog, vers, proc, args)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    if src:
        s.bind((src, 0))
    s.settimeout(timeout)
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


def getport(gw, prog, vers, src=None):
    """The UDP port of @prog @vers at @gw, by its portmapper (version 2 GETPORT)."""
    r = udp_call(gw, 111, PMAP, 2, 3, struct.pack(">IIII", prog, vers, 17, 0), src)
    return struct.unpack(">I", r[:4])[0]


def _tcp_reply(t):
    """One whole record's body from @t (all its fragments)."""
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
            return data


def file_handle(gw, name, src=None):
    """The NFSv3 handle of @name in @gw's /export: MOUNT over UDP, LOOKUP over TCP."""
    r = udp_call(gw, getport(gw, MOUNT, 3, src), MOUNT, 3, 1, opaque(b"/export"), src)
    if struct.unpack(">I", r[:4])[0] != 0:
        sys.exit(2)
    root, _ = get_opaque(r, 4)
    x, m = call(NFS, 3, 3, opaque(root) + opaque(name.encode()))
    t = socket.create_connection((gw, 2049), timeout=10,
                                 source_address=(src, 0) if src else None)
    t.sendall(struct.pack(">I", 0x80000000 | len(m)) + m)
    r = results(_tcp_reply(t), x)
    t.close()
    if r is None or struct.unpack(">I", r[:4])[0] != 0:
        print("LOOKUP %s failed" % name)
        sys.exit(2)
    fh, _ = get_opaque(r, 4)
    return fh
