# Bad input and vanishing peers on a forward route. While a kernel NFS mount through
# the gateway keeps reading and writing (checksummed), a raw TCP client sends:
#  - a zero-length fragment that is not the last: its connection is closed, counted;
#  - a record mark announcing more than max_record_size: closed, counted;
#  - an NFSv3 WRITE whose data length lies: relayed, the server answers GARBAGE_ARGS;
#  - a call to a program the server does not serve: the server answers PROG_UNAVAIL;
#  - a REPLY for a call nobody made: dropped and counted, the connection stays.
# A route with client_reserved_port (the export's `secure` held at the gateway): an
# AUTH_SYS GETATTR from an ordinary port is answered AUTH_ERROR (AUTH_TOOWEAK), counted
# insecure_port, NULL from that port is answered, the GETATTR from a reserved port
# reaches the server, and the kernel client (reserved ports) copies through the route.
# A second route leads to an RPC-over-RDMA server that answers ERR_VERS, ERR_CHUNK and a
# reply breaking the protocol (tests/e2e/progs/rdma_badserver): the TCP client gets
# SYSTEM_ERR for each, counted, and the server's credit grant is never exceeded; an
# NFSACL reply and an NFSv4.0 GETATTR reply larger than the gateway's estimates are
# retried with a larger Reply chunk.
# The same server speaks Version Two to a route with max_rpcrdma_version 2 and misbehaves
# in it: a message whose direction contradicts its RPC reply, an RDMA2_OPTIONAL of an
# unknown type from the responder, and a Version One reply on the Version Two
# connection are each dropped, logged and counted, and the right reply that follows
# reaches the client; RDMA2_ERR_INVAL_OPTION and RDMA2_ERR_BAD_HEADER are logged by
# name, counted, and end their calls with SYSTEM_ERR; the connection serves on, and a
# second client's connection settles Version Two too. The same server without RFC 8797
# private data (another port): the Version Two connection takes 4096-byte inline
# messages (Version One would take 1024), seen in /stats and in a 3000-byte call that
# the server checks came inline.
# The same server then breaks rules that cost the gateway the connection (each TCP
# client session is an RDMA connection of its own):
#  - RDMA Write With Immediate into a Write chunk the gateway offered, and Send With
#    Invalidate naming the call's own chunk or, with two calls in flight, the other
#    call's (on "bad", remote_invalidation false: not offered): protocol violations,
#    counted; the session is closed and the TCP client gets no reply bytes at all;
#  - the same two Send With Invalidate on "badinv", which offers remote invalidation
#    (the default): the call's own chunk is a reply like any other, its data intact,
#    counted remote_invalidations; the other call's chunk closes the session, no bytes;
#  - reply lengths claimed and never written (a Write chunk, a Write chunk with only
#    its first bytes written, a Reply chunk holding only the RPC header), right after
#    another client moved a pattern through the same route: the client gets zeros
#    where nothing was written, never the other client's bytes;
#  - grants of 0 (taken as 1) and 2^32 - 1 (capped by the credits the gateway asked
#    for), on a route with 8 credits: the server checks what was outstanding;
#  - backward calls far beyond the 2 backward credits granted: at most 2 reach the
#    client, the gateway answers the rest SYSTEM_ERR (counted backward_undeliverable),
#    and the session keeps working;
#  - a call never answered, on a route with call_timeout_s 3: the gateway closes the
#    client's connection after the timeout (counted call_timeout), well within 2x.
#    On a shared upstream connection (upstream_connections 1, at the end) the call is
#    given up alone: another client on the same connection keeps being served and
#    neither connection closes (calls_orphaned 1, the channel still ready).
# A client that stops reading (a third route with 4 credits and a queue of 8): the
# gateway stops sending its calls, then stops reading them, and loses none.
# Then the NFS server goes away (its threads stop, its RDMA connections drop) and
# comes back: the gateway closes the paired client connections (counted), the client
# reconnects and retransmits, and its data is intact. Calls that were in flight when
# the server went are released with their connection: once the client unmounts, the
# gateway holds no session and no registered buffer.
set -u
source "$GW_SRC/tests/e2e/lib/gw-e2e.sh"
gwvm-net
gwvm-nfsd /export rdma
modprobe nfsv4
cat >"$E2E_WORK/gw.json" <<JSON
{ "routes": [ { "name": "nfs", "mode": "forward", "max_record_size": 2097152,
                "listen": "tcp://192.0.2.2:2049", "upstream": "rdma://192.0.2.1:20049" },
              { "name": "bad", "mode": "forward", "remote_invalidation": false,
                "listen": "tcp://192.0.2.2:2050", "upstream": "rdma://192.0.2.1:20050" },
              { "name": "slow", "mode": "forward", "credits": 4, "queue_limit": 8,
                "listen": "tcp://192.0.2.2:2051", "upstream": "rdma://192.0.2.1:20049" },
              { "name": "bad2", "mode": "forward", "credits": 8, "backchannel_credits": 2,
                "call_timeout_s": 3,
                "listen": "tcp://192.0.2.2:2052", "upstream": "rdma://192.0.2.1:20050" },
              { "name": "badv2", "mode": "forward", "max_rpcrdma_version": 2,
                "listen": "tcp://192.0.2.2:2053", "upstream": "rdma://192.0.2.1:20050" },
              { "name": "v2nopd", "mode": "forward", "max_rpcrdma_version": 2,
                "listen": "tcp://192.0.2.2:2054", "upstream": "rdma://192.0.2.1:20051" },
              { "name": "orphan", "mode": "forward", "upstream_connections": 1,
                "call_timeout_s": 3,
                "listen": "tcp://192.0.2.2:2055", "upstream": "rdma://192.0.2.1:20060" },
              { "name": "badinv", "mode": "forward",
                "listen": "tcp://192.0.2.2:2056", "upstream": "rdma://192.0.2.1:20050" },
              { "name": "secure", "mode": "forward", "client_reserved_port": true,
                "listen": "tcp://192.0.2.2:2057", "upstream": "rdma://192.0.2.1:20049" } ],
  "stats": { "listen": "127.0.0.1:9464" } }
JSON
gw_start forward "$E2E_WORK/gw.json" || e2e_finish
m=/mnt/err; mkdir -p $m
mount -t nfs -o vers=4.2,proto=tcp,port=2049 192.0.2.2:/ $m || { fail mount; e2e_finish; }
src=$(e2e_source 4)
cp "$src" $m/keep
healthy() { cmp -s "$src" <(dd if=$m/keep bs=1M iflag=direct status=none); }
ev() { gw_jq "s['routes'][0]['totals']['events']['$1']"; }

malformed0=$(ev malformed_record)
/usr/bin/python3 - <<'PY' && ok "raw clients got the answers the standard gives" || fail "raw clients"
import os, socket, struct, sys
sys.path.insert(0, os.environ["GW_SRC"] + "/tests/e2e/lib")
from rpc_tcp import *

def conn():
    return socket.create_connection(("192.0.2.2", 2049), timeout=20)

def closed_by_peer(s):
    try:
        return s.recv(4) == b""
    except (ConnectionResetError, socket.timeout):
        return True

fails = []
# A zero-length fragment that is not the last one.
s = conn(); s.sendall(struct.pack(">I", 0)); 
if not closed_by_peer(s): fails.append("zero-length fragment: still open")
# A fragment larger than max_record_size (2 MiB).
s = conn(); s.sendall(struct.pack(">I", 0x80000000 | (64 << 20)))
if not closed_by_peer(s): fails.append("oversize record: still open")

s = conn()
# NFSv3 WRITE (proc 7): an 8-byte handle, offset, count, stable, then data that
# claims 1,000,000 bytes and brings 8.
args = struct.pack(">I8sQIII8s", 8, b"\x01" * 8, 0, 8, 0, 1000000, b"x" * 8)
s.sendall(record(call(0x1001, 100003, 3, 7, args)))
got = reply_status(read_record(s))
if got != (0x1001, 1, 0, GARBAGE_ARGS):
    fails.append("lying WRITE: reply %r, want GARBAGE_ARGS" % (got,))
# A program nobody serves.
s.sendall(record(call(0x1002, 399999, 1, 0)))
got = reply_status(read_record(s))
if got != (0x1002, 1, 0, PROG_UNAVAIL):
    fails.append("unknown program: reply %r, want PROG_UNAVAIL" % (got,))
# A reply to nothing: dropped, the connection stays usable.
s.sendall(record(struct.pack(">IIIIII", 0x7777, 1, 0, 0, 0, 0)))
s.sendall(record(call(0x1003, 100003, 3, 0)))  # NULL
if reply_status(read_record(s))[0] != 0x1003:
    fails.append("after a stray reply: no answer to NULL")
s.close()
if fails:
    print("\n".join(fails)); sys.exit(1)
PY
malformed1=$(ev malformed_record)
check "malformed records counted ($malformed0 -> $malformed1)" test "$malformed1" -ge $((malformed0 + 2))

# client_reserved_port, the export's `secure` held at the gateway (route "secure"): from an
# ordinary port an AUTH_SYS GETATTR is answered AUTH_ERROR (AUTH_TOOWEAK) and NULL is
# answered; from a reserved port (root here) the same GETATTR reaches the server, which
# answers it (accepted); a kernel mount (reserved ports by default) copies through it.
/usr/bin/python3 - <<'PY' && ok "client_reserved_port: a GETATTR from an ordinary port refused AUTH_TOOWEAK, NULL answered, from a reserved port answered by the server" || fail "client_reserved_port with raw clients"
import errno, os, random, socket, struct, sys
sys.path.insert(0, os.environ["GW_SRC"] + "/tests/e2e/lib")
from rpc_tcp import *

GETATTR = struct.pack(">I8s", 8, b"\x01" * 8)  # a handle the server does not know
fails = []
s = socket.create_connection(("192.0.2.2", 2057), timeout=20)
assert s.getsockname()[1] >= 1024
s.sendall(record(call(0x2001, 100003, 3, 1, GETATTR, cred=auth_sys())))
got = struct.unpack(">IIIII", read_record(s)[:20])
if got != (0x2001, 1, 1, 1, 5):
    fails.append("GETATTR from port %d: reply %r, want MSG_DENIED AUTH_ERROR AUTH_TOOWEAK"
                 % (s.getsockname()[1], got))
s.sendall(record(call(0x2002, 100003, 3, 0)))
got = reply_status(read_record(s))
if got != (0x2002, 1, 0, SUCCESS):
    fails.append("NULL from an ordinary port: reply %r, want SUCCESS" % (got,))
s.close()
r = None
for port in random.sample(range(600, 1024), 40):
    r = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        r.bind(("192.0.2.2", port))
        break
    except OSError as e:
        r.close(); r = None
        if e.errno != errno.EADDRINUSE:
            raise
r.settimeout(20)
r.connect(("192.0.2.2", 2057))
r.sendall(record(call(0x2003, 100003, 3, 1, GETATTR, cred=auth_sys())))
got = reply_status(read_record(r))
if got[:3] != (0x2003, 1, 0):
    fails.append("GETATTR from port %d: reply %r, want one accepted" % (r.getsockname()[1], got))
r.close()
if fails:
    print("\n".join(fails)); sys.exit(1)
PY
ms=/mnt/secure; mkdir -p $ms
if mount -t nfs -o vers=4.2,proto=tcp,port=2057 192.0.2.2:/ $ms; then
    cp "$src" $ms/secure-copy
    check "client_reserved_port: the kernel client copies through the route, intact" \
        cmp -s "$src" <(dd if=$ms/secure-copy bs=1M iflag=direct status=none)
    rm -f $ms/secure-copy
    umount $ms
else
    fail "client_reserved_port: mount through the route"
fi
sec=$(gw_jq "[r for r in s['routes'] if r['name']=='secure'][0]['totals']['events']['insecure_port']")
check "client_reserved_port: the refusal counted insecure_port ($sec)" test "$sec" -eq 1
check "a stray reply was counted" test "$(ev unmatched_reply)" -ge 1
check "the mount kept working through all of it" healthy

# Back-pressure both ways, on a route with 4 credits and 8 calls' queue: a client sends
# 64 NFSv4.0 READs of 256 KiB at once and reads nothing for a while. The gateway must stop
# sending its calls once its replies pile up (calls wait, none in flight) and stop
# reading its calls once its queue is full (fewer than 64 taken), lose none of them,
# and when the client reads, every reply must come, with the file's bytes.
/usr/bin/python3 - "$src" <<'PY' && ok "a client that did not read its replies got them all, intact, when it did" || fail "back-pressure on a client that does not read"
import json, os, socket, struct, sys, threading, time, urllib.request
sys.path.insert(0, os.environ["GW_SRC"] + "/tests/e2e/lib")
from rpc_tcp import *
# 256 KiB: what the Linux server returns at most to an NFSv4.0 READ over RDMA.
N, SIZE = 64, 256 << 10
data = open(sys.argv[1], "rb").read()

def compound_read(xid, off):
    # COMPOUND, NFSv4.0: PUTROOTFH, LOOKUP "keep", READ with the anonymous stateid
    args = struct.pack(">II", 0, 0) + struct.pack(">I", 3) + struct.pack(">I", 24) + \
        struct.pack(">I", 15) + xdr_opaque(b"keep") + \
        struct.pack(">I", 25) + b"\0" * 16 + struct.pack(">QI", off, SIZE)
    return record(call(xid, 100003, 4, 1, args, cred=auth_sys()))

s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
s.connect(("192.0.2.2", 2051))
port = s.getsockname()[1]
calls = b"".join(compound_read(0x5000 + i, (i % 16) * SIZE) for i in range(N))
sender = threading.Thread(target=s.sendall, args=(calls,))
sender.start()
time.sleep(10)
st = json.load(urllib.request.urlopen("http://127.0.0.1:9464/stats"))
me = [x for r in st["routes"] if r["name"] == "slow" for x in r["sessions"]
      if x["client"].endswith(":%d" % port)]
fails = []
if len(me) != 1:
    fails.append("no session for the client: %r" % me)
else:
    cr, taken = me[0]["credits"], me[0]["counters"]["calls"]
    print("  while the client does not read: %d calls taken, %d waiting, %d in flight" %
          (taken, cr["queued"], cr["in_use"]))
    if not (cr["queued"] > 0 and cr["in_use"] == 0):
        fails.append("calls should wait with none in flight: %r" % cr)
    if not taken < N:
        fails.append("the gateway took all %d calls from a client that does not read" % taken)
seen = set()
for _ in range(N):
    body = read_record(s)
    xid, mtype, rstat = struct.unpack(">III", body[:12])
    i = xid - 0x5000
    off = (i % 16) * SIZE
    # RPC header (24), COMPOUND status and empty tag (8), 3 results: PUTROOTFH and
    # LOOKUP (8 each), READ (op, status, eof: 12), then the data's length and bytes.
    (count,) = struct.unpack(">I", body[64:68])
    if not (0 <= i < N) or i in seen or mtype != 1 or rstat != 0 or count != SIZE or \
            body[68:68 + count] != data[off:off + count]:
        fails.append("reply xid %#x: %d bytes, count %d, data %s" % (xid, len(body), count,
                     "intact" if body[68:68 + count] == data[off:off + count] else "wrong"))
    seen.add(i)
sender.join()
s.close()
if fails:
    print("\n".join(fails)); sys.exit(1)
PY

# An RPC-over-RDMA server that answers RDMA_ERROR and breaks the protocol on demand
# (tests/e2e/progs/rdma_badserver): each call ends with the RPC error reply the
# gateway makes, the connection keeps working, and the server's grant is never
# exceeded (it checks that; it grants 2 and holds its replies, so calls queue).
"$GW_BUILD/tests/rdma_badserver" 192.0.2.1 20050 >"$E2E_WORK/badserver.out" 2>&1 &
badsrv=$!
for _ in $(seq 1 50); do grep -q listening "$E2E_WORK/badserver.out" && break; sleep 0.2; done
/usr/bin/python3 - <<'PY' && ok "a TCP client got the RPC answers for the server's RDMA errors" || fail "a TCP client through the bad server's route"
import os, socket, struct, sys
sys.path.insert(0, os.environ["GW_SRC"] + "/tests/e2e/lib")
from rpc_tcp import *

def null_call(xid):
    return call(xid, 100003, 3, 0)

def read_reply(s):
    xid, mtype, stat, astat = reply_status(read_record(s))
    return xid, (mtype, stat, astat)

s = socket.create_connection(("192.0.2.2", 2050), timeout=30)
fails = []
# Six calls at once: the server grants 2, so four wait for credits in the gateway.
s.sendall(b"".join(record(null_call(0x3101 + i)) for i in range(6)))
got = dict(read_reply(s) for _ in range(6))
if got != {0x3101 + i: (1, 0, 0) for i in range(6)}:
    fails.append("pipelined NULL calls: %r" % got)
# SYSTEM_ERR (5) for ERR_VERS, ERR_CHUNK and a reply that breaks the protocol;
# then a normal answer on the same connection.
for xid, want, what in ((0x3201, SYSTEM_ERR, "ERR_VERS"), (0x3202, SYSTEM_ERR, "ERR_CHUNK"),
                        (0x3203, SYSTEM_ERR, "a Write chunk never offered"),
                        (0x3204, SUCCESS, "a NULL reply")):
    s.sendall(record(null_call(xid)))
    rxid, (mtype, stat, astat) = read_reply(s)
    if (rxid, mtype, stat, astat) != (xid, 1, 0, want):
        fails.append("%s: reply %#x %r, want accept_stat %d" % (what, rxid, (mtype, stat, astat), want))
# An NFSACL GETACL whose 12 KiB reply exceeds the gateway's 8 KiB estimate: the server
# refuses the first Reply chunk (ERR_CHUNK), the gateway retries with a larger one
# under its own XID, and the client gets the whole reply under its XID.
# The same for an NFSv4.0 GETATTR estimated small enough to come inline (no Reply
# chunk offered at first).
want = bytes((i * 7 + 3) & 0xFF for i in range(24, 12288))
getacl = call(0x3301, 100227, 3, 1, struct.pack(">I8sI", 8, b"\x02" * 8, 0xf))
getattr4 = call(0x3302, 100003, 4, 1, struct.pack(">IIIIIII", 0, 0, 2, 24, 9, 1, 0x0010011a))
for xid, msg, what in ((0x3301, getacl, "GETACL"), (0x3302, getattr4, "NFSv4.0 GETATTR")):
    s.sendall(record(msg))
    body = read_record(s)
    n, rxid = len(body), struct.unpack(">I", body[:4])[0]
    if n != 12288 or rxid != xid or body[20:24] != b"\0" * 4 or body[24:] != want:
        fails.append("%s after a Reply chunk retry: %d bytes, xid %#x" % (what, n, rxid))
s.close()
if fails:
    print("\n".join(fails)); sys.exit(1)
PY

# The same server in Version Two (route badv2): its bad messages are dropped and the
# replies after them delivered; its two Version Two errors end their calls.
/usr/bin/python3 - <<'PY' && ok "Version Two: every call answered as the gateway's design says" || fail "Version Two through the bad server's route"
import json, os, socket, struct, sys, urllib.request
sys.path.insert(0, os.environ["GW_SRC"] + "/tests/e2e/lib")
from rpc_tcp import *
fails = []
s = socket.create_connection(("192.0.2.2", 2053), timeout=30)
for xid, want, what in ((0x3d00, SUCCESS, "the first call, settling Version Two"),
                        (0x3d01, SUCCESS, "after a message whose direction contradicts it"),
                        (0x3d02, SUCCESS, "after an unknown RDMA2_OPTIONAL from the server"),
                        (0x3d03, SUCCESS, "after a Version One reply"),
                        (0x3d04, SYSTEM_ERR, "RDMA2_ERR_INVAL_OPTION"),
                        (0x3d05, SYSTEM_ERR, "RDMA2_ERR_BAD_HEADER"),
                        (0x3d06, SUCCESS, "the connection serves on")):
    s.sendall(record(call(xid, 100003, 3, 0)))
    got = reply_status(read_record(s))
    if got != (xid, 1, 0, want):
        fails.append("%s: reply %r, want accept_stat %d" % (what, got, want))
# RDMA2_ERR_BAD_HEADER for a call whose reply is only estimated (an NFSv4.0 GETATTR):
# no Reply chunk retry, which Version One's ERR_CHUNK (the same value) would make.
s.sendall(record(call(0x3d07, 100003, 4, 1, struct.pack(">IIIIIII", 0, 0, 2, 24, 9, 1, 0x0010011a))))
got = reply_status(read_record(s))
if got != (0x3d07, 1, 0, SYSTEM_ERR):
    fails.append("RDMA2_ERR_BAD_HEADER on a GETATTR: reply %r, want SYSTEM_ERR" % (got,))
t = socket.create_connection(("192.0.2.2", 2053), timeout=30)
t.sendall(record(call(0x3d00, 100003, 3, 0)))
if reply_status(read_record(t)) != (0x3d00, 1, 0, SUCCESS):
    fails.append("a second client's connection")
s.close(); t.close()
# Without the server's private data (route v2nopd): 4096 bytes inline each way once
# Version Two is settled, and a 3000-byte call (to a program the gateway does not
# know) goes inline; the server checks that.
u = socket.create_connection(("192.0.2.2", 2054), timeout=30)
for xid, prog, args in ((0x3d00, 100003, b""), (0x3d10, 0x20000099, b"\xa5" * 2960)):
    u.sendall(record(call(xid, prog, 1 if prog != 100003 else 3, 0 if xid == 0x3d00 else 1, args)))
    got = reply_status(read_record(u))
    if got != (xid, 1, 0, SUCCESS):
        fails.append("without private data: call %#x: reply %r" % (xid, got))
st = json.load(urllib.request.urlopen("http://127.0.0.1:9464/stats", timeout=10))
ses = [x for r in st["routes"] if r["name"] == "v2nopd" for x in r["sessions"]]
seen = [(x["rpcrdma_version"], x["inline_send"], x["inline_recv"]) for x in ses]
if seen != [(2, 4096, 4096)]:
    fails.append("without private data: sessions (version, inline send, receive) %r, "
                 "want [(2, 4096, 4096)]" % seen)
else:
    print("v2nopd session: Version %d, inline %d/%d" % seen[0])
u.close()
if fails:
    print("\n".join(fails)); sys.exit(1)
PY

# The same server breaks the rules in ways that cost the gateway its connection, on the
# "bad" route and on "bad2" (8 credits, 2 backward credits, a 3 s call timeout). Each
# TCP client session is an RDMA connection of its own.
/usr/bin/python3 - <<'PY' && ok "hostile server: no client saw bytes it should not, every broken session was closed" || fail "hostile server"
import os, socket, struct, sys, threading, time
sys.path.insert(0, os.environ["GW_SRC"] + "/tests/e2e/lib")
from rpc_tcp import *
PATTERN, LAZY_HEAD, FLOOD, BC_GRANT = b"OTHER-CLIENT-SECRET-", b"LAZY-HEAD-BYTES!", 10, 2
fails = []

def expect(cond, what):
    print(("  ok: " if cond else "  FAIL: ") + what, flush=True)
    if not cond:
        fails.append(what)

def conn(port=2050):
    return socket.create_connection(("192.0.2.2", port), timeout=20)

def read3(xid, count=32768):
    """An NFSv3 READ: the gateway offers a Write chunk for its data."""
    return record(call(xid, 100003, 3, 6, struct.pack(">I8sQI", 8, b"\x03" * 8, 0, count)))

def getacl(xid):
    """An NFSACL GETACL: the gateway offers a Reply chunk."""
    return record(call(xid, 100227, 3, 1, struct.pack(">I8sI", 8, b"\x02" * 8, 0xf)))

def null(xid):
    return record(call(xid, 100003, 3, 0))

def cyc(n):
    return (PATTERN * (n // len(PATTERN) + 1))[:n]

def read_data(body):
    """The data of an NFSv3 READ reply (status, no attributes, count, eof, data)."""
    status, _, count, _, n = struct.unpack(">IIIII", body[24:44])
    return status, count, body[44:44 + n] if len(body) >= 44 + n else None

def until_closed(s, limit):
    """Bytes received until the gateway closed the connection, and when (None: still open)."""
    got, t0 = b"", time.monotonic()
    s.settimeout(limit)
    try:
        while True:
            b = s.recv(65536)
            if not b:
                return got, time.monotonic() - t0
            got += b
    except ConnectionResetError:
        return got, time.monotonic() - t0
    except socket.timeout:
        return got, None

# f. A call the server never answers, on bad2 (call_timeout_s 3), meanwhile.
timeout_result = {}
def never_answered():
    s = conn(2052)
    s.sendall(null(0x3901))
    timeout_result["r"] = until_closed(s, 15)
t_timeout = threading.Thread(target=never_answered)
t_timeout.start()

# c. One client moves PATTERN through the route: READ data written into Write chunks and
# GETACL replies into Reply chunks; those buffers go back to the gateway's pool.
s = conn()
s.sendall(b"".join(read3(0x3601 + i) for i in range(4)) + getacl(0x3605) + getacl(0x3606))
for _ in range(6):
    body = read_record(s)
    xid = struct.unpack(">I", body[:4])[0]
    if xid in (0x3605, 0x3606):
        ok = body[24:] == cyc(len(body) - 24) and len(body) > 1024
    else:
        st, count, data = read_data(body)
        ok = st == 0 and data == cyc(count) and count > 1024
    expect(ok, "another client's data, xid %#x: %d bytes of PATTERN delivered" % (xid, len(body)))
s.close()
time.sleep(0.5)
# Then a second client's calls are answered with lengths the server never wrote.
s = conn()
for xid, msg, head in ((0x3701, read3(0x3701), b""), (0x3702, read3(0x3702), LAZY_HEAD),
                       (0x3703, getacl(0x3703), None)):
    s.sendall(msg)
    try:
        body = read_record(s)
    except Exception as e:
        expect(False, "xid %#x: a reply (%r)" % (xid, e))
        break
    if head is None:
        data, what = body[24:], "Reply chunk (RDMA_NOMSG) beyond the RPC header"
        ok = body[:24] == struct.pack(">6I", xid, 1, 0, 0, 0, 0)
    else:
        st, count, data = read_data(body)
        what = "Write chunk" + (" beyond %d bytes written" % len(head) if head else "")
        ok = st == 0 and data is not None and data[:len(head)] == head
        data = data[len(head):] if data is not None else b""
    expect(ok and len(data) > 1024 and data.count(0) == len(data) and PATTERN[:8] not in body,
           "xid %#x: %d bytes claimed in a %s and not written: %s" %
           (xid, len(data), what, "zeros" if data.count(0) == len(data) else
            "another client's PATTERN" if PATTERN[:8] in body else "not zeros: %r" % data[:32]))
s.close()

# d. Credits 0 (read as 1) and 2^32 - 1 (capped by the 8 the gateway asks for), on bad2;
# the server checks what was outstanding.
s = conn(2052)
fine = True
for batch in ([0x3800], list(range(0x3810, 0x3816)), [0x3820], list(range(0x3830, 0x3844)),
              [0x3850]):
    s.sendall(b"".join(null(x) for x in batch))
    got = sorted(reply_status(read_record(s)) for _ in batch)
    fine &= got == [(x, 1, 0, SUCCESS) for x in batch]
expect(fine, "grants of 0 and 2^32 - 1: every call answered, in turn")
s.close()

# e. A flood of backward calls, on bad2 (2 backward credits): at most 2 reach the client,
# the server gets SYSTEM_ERR for the rest from the gateway (it counts them), and the
# session keeps working.
# The client answers at once: the gateway answers SYSTEM_ERR itself for a backward call
# the client leaves unanswered for call_timeout_s.
s = conn(2052)
s.sendall(null(0x3c01))
s.settimeout(1)
bcalls, replies = [], []
try:  # until the flood is over: nothing more for a second
    while True:
        body = read_record(s)
        xid, mtype = struct.unpack(">II", body[:8])
        (bcalls if mtype == 0 else replies).append(xid)
except (socket.timeout, RuntimeError):
    pass
s.settimeout(20)
expect(replies == [0x3c01] and 1 <= len(bcalls) <= BC_GRANT,
       "%d backward calls sent at once: %d reached the client (%d granted)" %
       (FLOOD, len(bcalls), BC_GRANT))
delivered = len(bcalls)
def answer_calls(xids):
    s.sendall(b"".join(record(struct.pack(">6I", x, 1, 0, 0, 0, 0)) for x in xids))
answer_calls(bcalls)
s.sendall(null(0x3c02))
got = None
try:  # calls the gateway held back may come now that the client has answered
    while got is None:
        body = read_record(s)
        xid, mtype = struct.unpack(">II", body[:8])
        if mtype == 0:
            delivered += 1
            answer_calls([xid])
        else:
            got = reply_status(body)
except Exception as e:
    got = repr(e)
expect(got == (0x3c02, 1, 0, SUCCESS), "after the flood a call is answered (%r)" % (got,))
s.close()
print("  backward calls delivered: %d" % delivered)
open(os.environ.get("E2E_WORK", "/tmp/e2e") + "/bc_delivered", "w").write("%d\n" % delivered)

# a, b. Write With Immediate into the call's Write chunk; Send With Invalidate naming the
# call's own chunk; and, with two calls in flight, the other call's chunk: the gateway
# closes the session, and the client gets no reply bytes at all.
for what, first, calls in (("RDMA Write With Immediate", b"", [read3(0x3a01, 65536)]),
                           ("Send With Invalidate of the call's own chunk", b"", [read3(0x3b01)]),
                           ("Send With Invalidate of the other call's chunk", null(0x3b00),
                            [read3(0x3b11), read3(0x3b12)])):
    try:
        s = conn()
        if first:
            s.sendall(first)
            read_record(s)  # two credits from here on: both READs go at once
        s.sendall(b"".join(calls))
        got, t = until_closed(s, 10)
        s.close()
    except Exception as e:  # the gateway stopped answering: the next cases still run
        got, t = repr(e).encode(), None
    expect(t is not None and got == b"",
           "%s: the client's connection is closed (%s) with no reply bytes (%d)" %
           (what, "%.1f s" % t if t is not None else "still open", len(got)))

# c. The same on badinv, which offers remote invalidation: the call's own chunk is
# allowed, and its reply reaches the client; another call's chunk is not.
try:
    s = conn(2056)
    s.sendall(read3(0x3b01))
    st, count, data = read_data(read_record(s))
    expect(st == 0 and count > 1024 and data == cyc(count),
           "Send With Invalidate of the call's own chunk, offered: the READ's %d bytes "
           "reached the client intact" % count)
    s.close()
except Exception as e:
    expect(False, "Send With Invalidate of the call's own chunk, offered: %r" % e)
try:
    s = conn(2056)
    s.sendall(null(0x3b00))
    read_record(s)
    s.sendall(read3(0x3b11) + read3(0x3b12))
    got, t = until_closed(s, 10)
    s.close()
except Exception as e:
    got, t = repr(e).encode(), None
expect(t is not None and got == b"",
       "Send With Invalidate of the other call's chunk, offered: the client's connection "
       "is closed (%s) with no reply bytes (%d)" %
       ("%.1f s" % t if t is not None else "still open", len(got)))

t_timeout.join()
got, t = timeout_result["r"]
expect(t is not None and 2.5 <= t <= 7 and got == b"",
       "a call never answered (call_timeout_s 3): the client's connection closed after %s, "
       "no reply bytes (%d)" % ("%.1f s" % t if t is not None else "more than 15 s", len(got)))

# The end: the server stops once this session is gone.
s = conn()
s.sendall(null(0x3fff))
expect(reply_status(read_record(s)) == (0x3fff, 1, 0, SUCCESS), "the stop call answered")
s.close()
sys.exit(1 if fails else 0)
PY
( sleep 20; kill -TERM "$badsrv" 2>/dev/null ) &
watchdog=$!
bad_rc=0; wait "$badsrv" || bad_rc=$?
kill "$watchdog" 2>/dev/null
dmesg | grep -iE "rxe|timed out waiting" | tail -5
cat "$E2E_WORK/badserver.out"
check "the bad server's own checks passed (status $bad_rc)" test "$bad_rc" -eq 0
bev() { gw_jq "[r for r in s['routes'] if r['name']=='bad'][0]['totals']['events']['$1']"; }
bqueued=$(gw_jq "[r for r in s['routes'] if r['name']=='bad'][0]['totals']['calls_queued_for_credits']")
check "stats: ERR_VERS received ($(bev err_vers_received))" test "$(bev err_vers_received)" -eq 1
check "stats: ERR_CHUNK received, one answered and two retried ($(bev err_chunk_received))" \
    test "$(bev err_chunk_received)" -eq 3
check "stats: the reply that broke the protocol ($(bev bad_transport_header))" test "$(bev bad_transport_header)" -eq 1
check "stats: the gateway's own error replies ($(bev rpc_error_reply))" test "$(bev rpc_error_reply)" -eq 3
check "stats: two Reply chunk retries ($(bev reply_chunk_retry))" \
    test "$(bev reply_chunk_retry)" -eq 2
check "stats: calls waited for credits ($bqueued)" test "$bqueued" -ge 1
b2ev() { gw_jq "[r for r in s['routes'] if r['name']=='bad2'][0]['totals']['events']['$1']"; }
check "stats: protocol violations on bad ($(bev protocol_violation))" test "$(bev protocol_violation)" -eq 3
iev() { gw_jq "[r for r in s['routes'] if r['name']=='badinv'][0]['totals']$1"; }
check "stats: on badinv, one protocol violation ($(iev "['events']['protocol_violation']")) and one window the server invalidated ($(iev "['remote_invalidations']"))" \
    test "$(iev "['events']['protocol_violation']")" -eq 1 -a "$(iev "['remote_invalidations']")" -eq 1
check "stats: on bad (not offered), no window the server invalidated counted ($(gw_jq "[r for r in s['routes'] if r['name']=='bad'][0]['totals']['remote_invalidations']"))" \
    test "$(gw_jq "[r for r in s['routes'] if r['name']=='bad'][0]['totals']['remote_invalidations']")" -eq 0
check "stats: call timeouts on bad2 ($(b2ev call_timeout))" test "$(b2ev call_timeout)" -eq 1
bc_delivered=$(cat "$E2E_WORK/bc_delivered" 2>/dev/null || echo 0)
check "stats: the backward calls not delivered ($(b2ev backward_undeliverable)) are the 10 sent less the $bc_delivered delivered" \
    test "$(b2ev backward_undeliverable)" -eq $((10 - bc_delivered))
vev() { gw_jq "[r for r in s['routes'] if r['name']=='badv2'][0]['totals']['events']['$1']"; }
check "stats: Version Two: three bad messages dropped ($(vev bad_transport_header))" \
    test "$(vev bad_transport_header)" -eq 3
check "stats: Version Two: RDMA2_ERR_INVAL_OPTION ($(vev err_inval_option_received)) once and RDMA2_ERR_BAD_HEADER ($(vev err_chunk_received)) twice received, no Reply chunk retry ($(vev reply_chunk_retry))" \
    test "$(vev err_inval_option_received)" -eq 1 -a "$(vev err_chunk_received)" -eq 2 -a "$(vev reply_chunk_retry)" -eq 0
check "stats: Version Two: the gateway's own error replies ($(vev rpc_error_reply)), no fallback ($(vev rpcrdma_version_fallback))" \
    test "$(vev rpc_error_reply)" -eq 3 -a "$(vev rpcrdma_version_fallback)" -eq 0
for what in "direction_mismatch" "unknown_option_reply" "in Version 1 on a connection speaking Version 2" \
            "answered RDMA2_ERR_INVAL_OPTION for xid 0x3d04" "answered RDMA2_ERR_BAD_HEADER for xid 0x3d05"; do
    check "gateway log: $what" grep -q "$what" "$GW_LOG"
done
for r in bad bad2 badv2 v2nopd; do
    live=$(gw_jq "[r for r in s['routes'] if r['name']=='$r'][0]['live_sessions']")
    check "stats: no session left on $r ($live live)" test "$live" -eq 0
done
check "the mount kept working meanwhile" healthy

# The NFS server goes away and comes back, with calls in flight: a reader keeps
# reading the file while it happens.
want=$(md5sum <"$src" | cut -d' ' -f1)
( while [[ ! -e $E2E_WORK/stop-reading ]]; do
      dd if=$m/keep bs=1M iflag=direct status=none | md5sum | cut -d' ' -f1
  done ) >"$E2E_WORK/reads.txt" &
reader=$!
sleep 2
lost0=$(ev connection_lost)
echo 0 >/proc/fs/nfsd/threads
sleep 3
check "the server's departure was noticed ($(ev connection_lost) connections lost)" \
    test "$(ev connection_lost)" -gt "$lost0"
echo "rdma 20049" >/proc/fs/nfsd/portlist
echo 8 >/proc/fs/nfsd/threads
nfsd_wait_grace 192.0.2.1 >/dev/null || true
check "after the server's restart the client reconnects and reads its data intact" healthy
touch "$E2E_WORK/stop-reading"; wait "$reader"
check "every read across the restart returned the file intact ($(wc -l <"$E2E_WORK/reads.txt") reads)" \
    test -s "$E2E_WORK/reads.txt" -a -z "$(grep -v -x "$want" "$E2E_WORK/reads.txt")"
dd if="$src" of=$m/after bs=1M oflag=direct status=none
check "and writes again" cmp -s "$src" /export/after
umount $m
gw_check_quiet

# A call never answered on a shared channel (route "orphan", upstream_connections 1,
# call_timeout_s 3, a bad server of its own: its channel stays open, so it runs after
# the check above). Client B is answered first (the grant becomes 2: the orphan's
# credit stays held, one is left); client A's call is swallowed. After A's timeout, B
# is still served on the same channel and neither connection is closed: the call is
# given up alone, counted, and the channel is not reset.
"$GW_BUILD/tests/rdma_badserver" 192.0.2.1 20060 >"$E2E_WORK/badserver2.out" 2>&1 &
badsrv2=$!
for _ in $(seq 1 50); do grep -q listening "$E2E_WORK/badserver2.out" && break; sleep 0.2; done
/usr/bin/python3 - <<'PY' && ok "a call never answered on a shared channel is given up alone" || fail "a call never answered on a shared channel"
import os, socket, sys, time
sys.path.insert(0, os.environ["GW_SRC"] + "/tests/e2e/lib")
from rpc_tcp import *

def conn():
    return socket.create_connection(("192.0.2.2", 2055), timeout=5)

def null(xid):
    return record(call(xid, 100003, 3, 0))

def still_open(s):
    s.settimeout(0.2)
    try:
        return s.recv(1) is None
    except socket.timeout:
        return True
    except OSError:
        return False

fails = []
b = conn()
b.sendall(null(0x4001))
if reply_status(read_record(b))[0] != 0x4001:
    fails.append("B's first call not answered")
a = conn()
a.sendall(record(call(0x3901, 0x20003900, 1, 0)))  # PROG_SWALLOW: never answered
t0, xid, served = time.monotonic(), 0x4002, 0
while time.monotonic() - t0 < 8:  # past A's timeout (3 s, swept once a second)
    try:
        b.settimeout(5)
        b.sendall(null(xid))
        if reply_status(read_record(b))[0] == xid:
            served += 1
    except Exception as e:
        fails.append("B's call %#x after %.1f s: %r" % (xid, time.monotonic() - t0, e))
        break
    xid += 1
    time.sleep(0.5)
if served < 10:
    fails.append("B served %d calls in 8 s" % served)
if not still_open(b):
    fails.append("B's connection closed")
if not still_open(a):
    fails.append("A's connection closed (the channel was reset)")
print("  B: %d calls answered across A's call timeout; failures: %r" % (served, fails))
sys.exit(1 if fails else 0)
PY
oev() { gw_jq "[r for r in s['routes'] if r['name']=='orphan'][0]['$1']"; }
check "stats: one call orphaned on the shared channel ($(oev "shared_upstream']['channels'][0]['calls_orphaned"))" \
    test "$(oev "shared_upstream']['channels'][0]['calls_orphaned")" -eq 1
check "stats: one call timeout on orphan ($(oev "totals']['events']['call_timeout"))" \
    test "$(oev "totals']['events']['call_timeout")" -eq 1
check "stats: the channel was not reset ($(oev "shared_upstream']['channels'][0]['state"))" \
    test "$(oev "shared_upstream']['channels'][0]['state")" = ready
check "metrics: rpcrdma_gw_shared_channel_calls_orphaned_total is 1" \
    grep -qE '^rpcrdma_gw_shared_channel_calls_orphaned_total\{.*route="orphan".*\} 1$' \
    <(gw_metrics)
gw_stop
kill -TERM "$badsrv2" 2>/dev/null; wait "$badsrv2" 2>/dev/null
e2e_finish
