#!/usr/bin/python3
# nlm_async.py GW lock NAME     from this host (a network namespace without a lockd), over
#                               UDP through the gateway GW: the NFSv3 handle of NAME in
#                               GW's /export (MOUNT and LOOKUP through the gateway), then
#                               LOCK_MSG (owner svid 4242, oh "async-oh") and TEST_MSG of
#                               another owner of this host. Exit 0 when LOCK_RES says
#                               granted and TEST_RES denied (a holder's oh, if the server
#                               names one, this host's own: "async-oh"), both with our
#                               cookies.
# nlm_async.py GW unlock NAME   UNLOCK_MSG of that lock: exit 0 when UNLOCK_RES says granted.
#
# The results come as calls (the server's X_RES, relayed by the gateway) to the NLM service
# this program serves on a UDP port, advertised by a tiny portmapper of its own on port 111
# of this host's address (GETPORT of NLM only): what an asynchronous NLM client is. Exit 1
# for a wrong or missing result, 2 for an error on the way.
import select, socket, struct, sys, time

from nlm_udp import NLM, PMAP, opaque, get_opaque, udp_call, getport, file_handle

GRANTED, DENIED = 0, 1
gw, op, name = sys.argv[1], sys.argv[2], sys.argv[3]


# This host's NLM service and its portmapper.
me = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
me.connect((gw, 111))
addr = me.getsockname()[0]
me.close()
nlm = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
nlm.bind((addr, 0))
pmap = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
pmap.bind((addr, 111))


def serve_pmap():
    m, frm = pmap.recvfrom(4096)
    x, _, _, prog, _, proc = struct.unpack(">IIIIII", m[:24])
    port = nlm.getsockname()[1] if prog == PMAP and proc == 3 and \
        struct.unpack(">I", m[40:44])[0] == NLM else 0
    pmap.sendto(struct.pack(">IIIIII", x, 1, 0, 0, 0, 0) + struct.pack(">I", port), frm)


def wait_res(proc, cookie, secs=20):
    """The body of the _RES call @proc with @cookie, answered with an empty reply."""
    end = time.time() + secs
    while time.time() < end:
        ready, _, _ = select.select([nlm, pmap], [], [], max(0, end - time.time()))
        if pmap in ready:
            serve_pmap()
        if nlm not in ready:
            continue
        m, frm = nlm.recvfrom(65536)
        x, mtype, _, prog, vers, p = struct.unpack(">IIIIII", m[:24])
        clen = struct.unpack(">I", m[28:32])[0]
        off = 32 + clen + (-clen % 4) + 4
        vlen = struct.unpack(">I", m[off:off + 4])[0]
        body = m[off + 4 + vlen + (-vlen % 4):]
        nlm.sendto(struct.pack(">IIIIII", x, 1, 0, 0, 0, 0), frm)
        print("got NLM v%d procedure %d from %s" % (vers, p, frm[0]))
        c, _ = get_opaque(body, 0)
        if mtype == 0 and prog == NLM and p == proc and c == cookie:
            return body
    print("no NLM procedure %d with cookie %r in %d s" % (proc, cookie, secs))
    sys.exit(1)


def alock(fh, svid, oh):
    return opaque(b"c4") + opaque(fh) + opaque(oh) + struct.pack(">iQQ", svid, 0, 0)


def msg(proc, args):
    r = udp_call(gw, nport, NLM, 4, proc, args, timeout=3)
    if r != b"":
        print("procedure %d: the void reply had results %r" % (proc, r))
        sys.exit(1)


fh = file_handle(gw, name)
nport = getport(gw, NLM, 4)
print("file handle %s, gateway NLM port %d, this host's NLM port %d" %
      (fh.hex(), nport, nlm.getsockname()[1]))
if op == "lock":
    # LOCK_MSG: cookie, block false, exclusive, the lock, reclaim false, state.
    msg(7, opaque(b"c4-lock") + struct.pack(">II", 0, 1) + alock(fh, 4242, b"async-oh") +
        struct.pack(">Ii", 0, 1))
    b = wait_res(12, b"c4-lock")
    stat = struct.unpack(">I", b[-4:])[0]
    print("LOCK_RES stat %d" % stat)
    if stat != GRANTED:
        sys.exit(1)
    msg(6, opaque(b"c4-test") + struct.pack(">I", 1) + alock(fh, 4343, b"other-oh"))
    b = wait_res(11, b"c4-test")
    _, off = get_opaque(b, 0)
    stat = struct.unpack(">I", b[off:off + 4])[0]
    svid, oh = 0, b""
    if stat == DENIED:
        svid = struct.unpack(">i", b[off + 8:off + 12])[0]
        oh, _ = get_opaque(b, off + 12)
    print("TEST_RES stat %d holder svid %d oh %r" % (stat, svid, oh))
    # Linux lockd names no holder's oh ("don't return OH info", nlmsvc_testlock) and its
    # svid is a pid of the server's: the gateway passes such a holder as it is. One with
    # an oh must be this host's own owner, never the gateway's token.
    sys.exit(0 if stat == DENIED and oh in (b"", b"async-oh") else 1)
if op == "unlock":
    msg(9, opaque(b"c4-unlock") + alock(fh, 4242, b"async-oh"))
    b = wait_res(14, b"c4-unlock")
    stat = struct.unpack(">I", b[-4:])[0]
    print("UNLOCK_RES stat %d" % stat)
    sys.exit(0 if stat == GRANTED else 1)
sys.exit(2)
