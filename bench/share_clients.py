# share_clients.py: the TCP clients of bench/vm-share.sh (run inside the guest).
#   idle HOST PORT N      N connections, one NULL call each (answered), then held open
#                         idle; prints "ready" and waits until stdin closes.
#   flood HOST PORT W     one connection that keeps W NULL calls outstanding until killed
#                         (so that, past its credits, the gateway holds the rest queued).
#                         The fairness runs use bench/share_flood (C) instead: this one
#                         spends more of the guest's CPU than the gateway does.
#   probe HOST PORT N [hold]
#                         one connection, N NULL calls one at a time; prints the
#                         latency's median, 90th and 99th percentiles and mean in us,
#                         then the same to the reply's arrival at the probe's own
#                         socket (the kernel's receive time, SO_TIMESTAMPNS): what
#                         the probe's process adds, waiting for a CPU to wake it
#                         up, is the difference;
#                         with "hold", then keeps the connection open until stdin
#                         closes, so that its session's /stats can still be read.
# NULL of NFS version 3: the server answers it at once, so a probe's latency is the
# path through the gateway and the wait for a credit and a turn, nothing else.
import os
import socket
import struct
import sys
import time

sys.path.insert(0, os.environ["GW_SRC"] + "/tests/e2e/lib")
from rpc_tcp import call, read_record, record  # noqa: E402

NFS_PROG = 100003


def null_call(xid):
    return record(call(xid, NFS_PROG, 3, 0))


def connect(host, port):
    s = socket.create_connection((host, port), timeout=60)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def idle(host, port, n):
    conns = []
    for i in range(n):
        s = connect(host, port)
        s.sendall(null_call(i + 1))
        xid = struct.unpack(">I", read_record(s)[:4])[0]
        if xid != i + 1:
            raise RuntimeError("client %d: reply xid %d" % (i, xid))
        conns.append(s)
    print("ready", flush=True)
    sys.stdin.read()


def flood(host, port, window):
    s = connect(host, port)
    xid = 1
    for _ in range(window):
        s.sendall(null_call(xid))
        xid += 1
    while True:  # one more call for every reply: W stay outstanding
        read_record(s)
        s.sendall(null_call(xid))
        xid += 1


def read_record_stamped(s):
    """One record (a single fragment, as the gateway sends) and the kernel's receive
    time (CLOCK_REALTIME ns) of the read that completed it."""
    buf, stamp = b"", None
    need = None
    while need is None or len(buf) < need:
        data, anc, _, _ = s.recvmsg(65536, socket.CMSG_SPACE(16))
        if not data:
            raise RuntimeError("connection closed")
        buf += data
        for level, kind, raw in anc:
            if level == socket.SOL_SOCKET and kind == SCM_TIMESTAMPNS and len(raw) >= 16:
                sec, nsec = struct.unpack("qq", raw[:16])
                stamp = sec * 1_000_000_000 + nsec
        if need is None and len(buf) >= 4:
            need = 4 + (struct.unpack(">I", buf[:4])[0] & 0x7FFFFFFF)
    return buf[4:need], stamp


SO_TIMESTAMPNS = 35  # SCM_TIMESTAMPNS on Linux (asm-generic/socket.h)
SCM_TIMESTAMPNS = SO_TIMESTAMPNS


def summary(lat):
    lat = sorted(lat)
    q = lambda f: lat[min(len(lat) - 1, int(f * len(lat)))]  # noqa: E731
    return "median %.0f p90 %.0f p99 %.0f mean %.0f" % (q(0.5), q(0.9), q(0.99), sum(lat) / len(lat))


def probe(host, port, n, hold=False):
    s = connect(host, port)
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    lat, at_socket = [], []
    for i in range(n):
        t0 = time.perf_counter()
        w0 = time.time_ns()
        s.sendall(null_call(i + 1))
        _, stamp = read_record_stamped(s)
        lat.append((time.perf_counter() - t0) * 1e6)
        if stamp is not None:
            at_socket.append(max(0, stamp - w0) / 1e3)
    line = summary(lat)
    if at_socket:
        line += "; to its socket: " + summary(at_socket)
    print(line, flush=True)
    if hold:
        sys.stdin.read()


if __name__ == "__main__":
    what, host, port, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    if what == "probe":
        probe(host, port, n, sys.argv[5:] == ["hold"])
    else:
        {"idle": idle, "flood": flood}[what](host, port, n)
