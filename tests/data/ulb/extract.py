#!/usr/bin/env python3
"""Turn a capture of NFS over TCP into the ULB test records.

    extract.py CAPTURE.pcapng OUTDIR

Every TCP stream is reassembled by tshark ("follow,tcp,raw"), split into RPC
records by their record marks, and each call is paired with its reply by
stream and XID. Pairs go to OUTDIR/records/NNN-WHAT.call and .reply (the RPC
message without record mark). At most MAX_PER_KIND pairs of one kind (program,
version, procedure or NFSv4 operation list) are kept, plus every pair whose
DDP-eligible items have a length that is not a multiple of 4.

OUTDIR/MANIFEST lists, for each kept record, what Wireshark's dissector (the
independent oracle) found: program, version, procedure, the NFSv4 operations,
and each DDP-eligible item (RFC 8267) as LENGTH:FNV1A64 of its bytes.
"""
import collections
import os
import re
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET

MAX_PER_KIND = 2

PROGS = {100003: "nfs", 100005: "mount", 100021: "nlm", 100024: "nsm",
         100227: "nfsacl", 100000: "rpcbind", 0x40000000: "nfscb"}

NFS4_OPS = {
    3: "ACCESS", 4: "CLOSE", 5: "COMMIT", 6: "CREATE", 7: "DELEGPURGE", 8: "DELEGRETURN",
    9: "GETATTR", 10: "GETFH", 11: "LINK", 12: "LOCK", 13: "LOCKT", 14: "LOCKU",
    15: "LOOKUP", 16: "LOOKUPP", 17: "NVERIFY", 18: "OPEN", 19: "OPENATTR",
    20: "OPEN_CONFIRM", 21: "OPEN_DOWNGRADE", 22: "PUTFH", 23: "PUTPUBFH", 24: "PUTROOTFH",
    25: "READ", 26: "READDIR", 27: "READLINK", 28: "REMOVE", 29: "RENAME", 30: "RENEW",
    31: "RESTOREFH", 32: "SAVEFH", 33: "SECINFO", 34: "SETATTR", 35: "SETCLIENTID",
    36: "SETCLIENTID_CONFIRM", 37: "VERIFY", 38: "WRITE", 39: "RELEASE_LOCKOWNER",
    40: "BACKCHANNEL_CTL", 41: "BIND_CONN_TO_SESSION", 42: "EXCHANGE_ID",
    43: "CREATE_SESSION", 44: "DESTROY_SESSION", 45: "FREE_STATEID",
    46: "GET_DIR_DELEGATION", 47: "GETDEVICEINFO", 48: "GETDEVICELIST", 49: "LAYOUTCOMMIT",
    50: "LAYOUTGET", 51: "LAYOUTRETURN", 52: "SECINFO_NO_NAME", 53: "SEQUENCE",
    54: "SET_SSV", 55: "TEST_STATEID", 56: "WANT_DELEGATION", 57: "DESTROY_CLIENTID",
    58: "RECLAIM_COMPLETE", 59: "ALLOCATE", 60: "COPY", 61: "COPY_NOTIFY", 62: "DEALLOCATE",
    63: "IO_ADVISE", 64: "LAYOUTERROR", 65: "LAYOUTSTATS", 66: "OFFLOAD_CANCEL",
    67: "OFFLOAD_STATUS", 68: "READ_PLUS", 69: "SEEK", 70: "WRITE_SAME", 71: "CLONE",
    72: "GETXATTR", 73: "SETXATTR", 74: "LISTXATTRS", 75: "REMOVEXATTR"}

NFS3_PROCS = ["NULL", "GETATTR", "SETATTR", "LOOKUP", "ACCESS", "READLINK", "READ", "WRITE",
              "CREATE", "MKDIR", "SYMLINK", "MKNOD", "REMOVE", "RMDIR", "RENAME", "LINK",
              "READDIR", "READDIRPLUS", "FSSTAT", "FSINFO", "PATHCONF", "COMMIT"]

# Fields holding DDP-eligible items, per (NFS version, message type).
ELIGIBLE = {(3, 0): ("nfs.data", "nfs.symlink.to"),
            (3, 1): ("nfs.data", "nfs.readlink.data"),
            (4, 0): ("nfs.data", "nfs.symlink.linktext"),
            (4, 1): ("nfs.data", "nfs.symlink.linktext")}


def fnv1a64(b):
    h = 0xcbf29ce484222325
    for x in b:
        h = ((h ^ x) * 0x100000001b3) & 0xffffffffffffffff
    return h


def tshark(*args):
    return subprocess.run(["tshark", *args], check=True, capture_output=True).stdout


def streams(cap):
    out = tshark("-r", cap, "-T", "fields", "-e", "tcp.stream", "-Y", "tcp.len > 0")
    return sorted({int(x) for x in out.split()})


def follow(cap, n):
    """The bytes each side of TCP stream n sent: (initiator, responder)."""
    out = tshark("-r", cap, "-q", "-z", "follow,tcp,raw,%d" % n).decode()
    sides = [bytearray(), bytearray()]
    body = out.split("=" * 67)[1] if "=" * 67 in out else out
    for line in body.splitlines():
        if not line.strip() or re.match(r"^(Follow|Filter|Node \d):", line):
            continue
        side = 1 if line.startswith("\t") else 0
        sides[side] += bytes.fromhex(line.strip())
    return sides


def records(data):
    """RPC messages in one direction of a stream (record marking, RFC 5531)."""
    msgs, pos, cur = [], 0, bytearray()
    while pos + 4 <= len(data):
        mark = struct.unpack_from(">I", data, pos)[0]
        n = mark & 0x7fffffff
        if pos + 4 + n > len(data):
            break
        cur += data[pos + 4:pos + 4 + n]
        pos += 4 + n
        if mark & 0x80000000:
            msgs.append(bytes(cur))
            cur = bytearray()
    return msgs


def take(elem, names, cur):
    for f in elem.iter("field"):
        if f.get("name") in names:
            b = bytes.fromhex(f.get("value") or "")
            if int(f.get("size")) != len(b):
                sys.exit("oracle: %s truncated" % f.get("name"))
            cur["items"].append(b)


def oracle(cap):
    """(stream, xid, msgtype) -> dict from Wireshark's dissection."""
    pdml = subprocess.run(["tshark", "-r", cap, "-T", "pdml", "-Y", "rpc"], check=True,
                          capture_output=True).stdout
    found = {}
    for pkt in ET.fromstring(pdml).iter("packet"):
        stream, cur = None, None
        for proto in pkt.findall("proto"):
            name = proto.get("name")
            if name == "tcp":
                f = proto.find(".//field[@name='tcp.stream']")
                stream = int(f.get("show"))
            elif name == "rpc":
                def val(field):
                    f = proto.find(".//field[@name='%s']" % field)
                    return None if f is None else int(f.get("show"), 0)
                cur = {"xid": val("rpc.xid"), "type": val("rpc.msgtyp"), "ops": [],
                       "items": []}
                found[(stream, cur["xid"], cur["type"])] = cur
            elif name == "nfs" and cur is not None:
                v4 = proto.find(".//field[@name='nfs.procedure_v4']") is not None or \
                    proto.find(".//field[@name='nfs.main_opcode']") is not None
                if v4:
                    # only inside the eligible operations (RFC 8267 section 5)
                    want_ops = (38, 6) if cur["type"] == 0 else (25, 27)
                    for op in proto.iter("field"):
                        if op.get("name") != "nfs.opcode":
                            continue
                        cur["ops"].append(int(op.get("show")))
                        if int(op.get("show")) in want_ops:
                            take(op, ELIGIBLE[(4, cur["type"])], cur)
                else:
                    proc = proto.find(".//field[@name='nfs.procedure_v3']")
                    want = (7, 10) if cur["type"] == 0 else (6, 5)
                    if proc is not None and int(proc.get("show")) in want:
                        take(proto, ELIGIBLE[(3, cur["type"])], cur)
    return found


def describe(call):
    xid, _, _, prog, vers, proc = struct.unpack_from(">6I", call, 0)
    name = PROGS.get(prog, "prog%d" % prog)
    if prog == 100003 and vers == 3 and proc < len(NFS3_PROCS):
        return "%s%d-%s" % (name, vers, NFS3_PROCS[proc]), prog, vers, proc
    return "%s%d-%d" % (name, vers, proc), prog, vers, proc


def minorversion(call):
    """The minorversion of an NFSv4 COMPOUND call (after the header and the tag)."""
    pos = 24
    for _ in range(2):  # credential, verifier
        pos += 8 + ((struct.unpack_from(">I", call, pos + 4)[0] + 3) & ~3)
    pos += 4 + ((struct.unpack_from(">I", call, pos)[0] + 3) & ~3)
    return struct.unpack_from(">I", call, pos)[0]


def main():
    cap, outdir = sys.argv[1], sys.argv[2]
    recdir = os.path.join(outdir, "records")
    os.makedirs(recdir, exist_ok=True)
    for f in os.listdir(recdir):
        os.unlink(os.path.join(recdir, f))
    truth = oracle(cap)
    pairs = []
    for s in streams(cap):
        sides = follow(cap, s)
        calls, replies = {}, {}
        for side in sides:
            for m in records(side):
                if len(m) < 8:
                    continue
                xid, mtype = struct.unpack_from(">II", m, 0)
                (calls if mtype == 0 else replies)[xid] = m
        for xid, call in calls.items():
            if xid in replies and len(call) >= 24:
                pairs.append((s, xid, call, replies[xid]))

    kinds = collections.Counter()
    manifest = []
    n = 0
    for s, xid, call, reply in pairs:
        what, prog, vers, proc = describe(call)
        tc = truth.get((s, xid, 0), {"ops": [], "items": []})
        tr = truth.get((s, xid, 1), {"ops": [], "items": []})
        minor = None
        if prog == 100003 and vers == 4 and proc == 1:
            ops = tc["ops"]
            minor = minorversion(call)
            what = "nfs4.%d-%s" % (minor, "+".join(NFS4_OPS.get(o, str(o)) for o in ops))
        else:
            ops = []
        odd = any(len(b) % 4 for b in tc["items"] + tr["items"])
        # A kind is a procedure (NFSv4: a minor version's operation list) with items
        # of given lengths: each minor version and each shape of item is kept.
        sizes = tuple(len(b) for b in tc["items"] + tr["items"])
        kind = (prog, vers, proc, minor, tuple(ops), sizes)
        kinds[kind] += 1
        if kinds[kind] > MAX_PER_KIND and not odd:
            continue
        n += 1
        what = what[:72]
        base = "%03d-%s" % (n, what)
        for ext, msg in (("call", call), ("reply", reply)):
            with open(os.path.join(recdir, base + "." + ext), "wb") as f:
                f.write(msg)
        for ext, t in (("call", tc), ("reply", tr)):
            items = ",".join("%d:%016x" % (len(b), fnv1a64(b)) for b in t["items"]) or "-"
            manifest.append("%s.%s %d %d %d %s %s" % (
                base, ext, prog, vers, proc, ",".join(map(str, ops)) or "-", items))
    with open(os.path.join(outdir, "MANIFEST"), "w") as f:
        f.write("# FILE PROG VERS PROC NFS4-OPS ITEMS(LENGTH:FNV1A64, Wireshark's dissection)\n")
        f.write("\n".join(manifest) + "\n")
    print("%d pairs kept of %d" % (n, len(pairs)))


if __name__ == "__main__":
    main()
