# rpc_tcp.py: a few lines of ONC RPC over TCP (RFC 5531 record marking) for the
# end-to-end jobs' raw clients, which send what a kernel client never would.
#   sys.path.insert(0, os.environ["GW_SRC"] + "/tests/e2e/lib"); from rpc_tcp import *
import struct

SUCCESS, PROG_UNAVAIL, GARBAGE_ARGS, SYSTEM_ERR = 0, 1, 4, 5


def record(body):
    """One record, one last fragment."""
    return struct.pack(">I", 0x80000000 | len(body)) + body


def xdr_opaque(b):
    return struct.pack(">I", len(b)) + b + b"\0" * (-len(b) % 4)


def auth_sys(machine=b"gw-e2e", uid=0, gid=0):
    body = struct.pack(">I", 0) + xdr_opaque(machine) + struct.pack(">III", uid, gid, 0)
    return struct.pack(">I", 1) + xdr_opaque(body)


def call(xid, prog, vers, proc, args=b"", cred=None):
    """An RPC call message: AUTH_NONE unless @cred (flavor and body, as auth_sys())."""
    cred = cred if cred is not None else struct.pack(">II", 0, 0)
    return struct.pack(">IIIIII", xid, 0, 2, prog, vers, proc) + cred + \
        struct.pack(">II", 0, 0) + args


def read_exact(s, n):
    b = b""
    while len(b) < n:
        chunk = s.recv(n - len(b))
        if not chunk:
            raise RuntimeError("connection closed after %d of %d bytes" % (len(b), n))
        b += chunk
    return b


def read_record(s):
    """The next record's body (a single fragment, as servers and the gateway send)."""
    n = struct.unpack(">I", read_exact(s, 4))[0] & 0x7FFFFFFF
    return read_exact(s, n)


def reply_status(body):
    """(xid, msg_type, reply_stat, accept_stat) of an accepted reply with AUTH_NONE."""
    xid, mtype, stat, _, _, astat = struct.unpack(">IIIIII", body[:24])
    return xid, mtype, stat, astat
