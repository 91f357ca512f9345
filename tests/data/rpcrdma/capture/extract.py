#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Extract RPC-over-RDMA messages (transport header + following RPC bytes)
from a RoCEv2 capture, and tshark's decode of each, for the codec's tests.

    extract.py CAPTURE.pcap OUTDIR [--all] [--types=4,...] [--first=N --append]

Sends are reassembled per (source address, destination QP) from the RC
SEND First/Middle/Last/Only opcodes (with Immediate or Invalidate), pad
bytes and ICRC removed. One file per message kind is kept (--all: every
message), named NNN-<proc>-<chunks>-<program><procedure or ops>-<call|reply>.bin, and OUTDIR/tshark.tsv gets one line
per kept file with tshark's rpcordma fields for the frame that carries the
header, so that tests need no tshark. --types keeps only messages of those
rdma_proc values; --first numbers the files from N and --append adds to an
existing tshark.tsv (to add a second capture to the same directory).
"""
import os
import struct
import subprocess
import sys

SEND_FIRST, SEND_MIDDLE = 0x00, 0x01
SEND_LAST = {0x02: 0, 0x03: 4, 0x16: 4}  # opcode -> extra header bytes (ImmDt / IETH)
SEND_ONLY = {0x04: 0, 0x05: 4, 0x17: 4}

FIELDS = ["frame.number", "rpcordma.xid", "rpcordma.version", "rpcordma.flow_control",
          "rpcordma.msg_type", "rpcordma.reads_count", "rpcordma.writes_count",
          "rpcordma.reply_count", "rpcordma.segment_count", "rpcordma.position",
          "rpcordma.rdma_handle", "rpcordma.rdma_length", "rpcordma.rdma_offset",
          "rpcordma.errcode", "rpcordma.vers_low", "rpcordma.vers_high",
          "rpc.program", "rpc.procedure", "nfs.opcode", "rpc.msgtyp"]


def packets(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] == b"\x0a\x0d\x0d\x0a":  # pcapng: let editcap rewrite it as pcap
        data = subprocess.run(["editcap", "-F", "pcap", path, "-"], capture_output=True,
                              check=True).stdout
    magic = struct.unpack("<I", data[:4])[0]
    if magic != 0xa1b2c3d4:
        sys.exit("only little-endian microsecond pcap is handled (tshark -F pcap)")
    linktype = struct.unpack("<I", data[20:24])[0]
    if linktype != 1:
        sys.exit("link type %d is not Ethernet" % linktype)
    off, frame = 24, 0
    while off + 16 <= len(data):
        _, _, incl, _ = struct.unpack("<IIII", data[off:off + 16])
        off += 16
        frame += 1
        yield frame, data[off:off + incl]
        off += incl


def bth_payloads(path):
    for frame, pkt in packets(path):
        if len(pkt) < 14 or pkt[12:14] != b"\x08\x00":
            continue
        ihl = (pkt[14] & 0x0f) * 4
        ip = pkt[14:]
        src = ip[12:16]
        if ip[9] != 17:
            continue
        udp = ip[ihl:]
        if struct.unpack(">H", udp[2:4])[0] != 4791:
            continue
        bth = udp[8:]
        opcode = bth[0]
        padcnt = (bth[1] >> 4) & 3
        dqp = struct.unpack(">I", bth[4:8])[0] & 0xffffff
        psn = struct.unpack(">I", bth[8:12])[0] & 0xffffff
        payload = bth[12:len(bth) - 4]  # ICRC
        if padcnt:
            payload = payload[:-padcnt]
        yield frame, src, dqp, psn, opcode, payload


def messages(path):
    partial = {}
    seen = set()
    for frame, src, dqp, psn, op, payload in bth_payloads(path):
        key = (src, dqp)
        if (key, psn) in seen:  # a retransmission
            continue
        seen.add((key, psn))
        if op in SEND_ONLY:
            yield frame, frame, payload[SEND_ONLY[op]:]
        elif op == SEND_FIRST:
            partial[key] = (frame, bytearray(payload))
        elif op == SEND_MIDDLE and key in partial:
            partial[key][1].extend(payload)
        elif op in SEND_LAST and key in partial:
            first, buf = partial.pop(key)
            buf.extend(payload[SEND_LAST[op]:])
            yield first, frame, bytes(buf)


def tshark_decode(path):
    cmd = ["tshark", "-r", path, "-d", "udp.port==4791,infiniband", "-Y", "rpcordma",
           "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=,"]
    for f in FIELDS:
        cmd += ["-e", f]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    rows = {}
    for line in out.splitlines():
        cols = line.split("\t")
        rows[int(cols[0])] = dict(zip(FIELDS, cols))
    return rows


PROCS = {0: "msg", 1: "nomsg", 2: "msgp", 3: "done", 4: "error"}


def describe(row):
    proc = PROCS.get(int(row["rpcordma.msg_type"] or 0), "x")
    what = []
    if row["rpcordma.reads_count"] not in ("", "0"):
        what.append("read%s" % row["rpcordma.reads_count"])
    if row["rpcordma.writes_count"] not in ("", "0"):
        what.append("write%s" % row["rpcordma.writes_count"])
    if row["rpcordma.reply_count"] not in ("", "0"):
        what.append("replych")
    err = {"1": "errvers", "2": "errchunk"}.get(row["rpcordma.errcode"])
    if err:
        what.append(err)
    prog = row["rpc.program"].split(",")[0]
    kind = {"100003": "nfs", "100227": "nfsacl", "100005": "mount"}.get(prog, "")
    if kind:
        ops = row["nfs.opcode"].replace(",", ".") or row["rpc.procedure"].split(",")[0]
        what.append("%s%s" % (kind, ops))
    mt = row["rpc.msgtyp"].split(",")[0]
    if mt:
        what.append("call" if mt == "0" else "reply")
    return proc, "-".join(what) or "plain"


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    cap, outdir = sys.argv[1], sys.argv[2]
    keep_all = "--all" in sys.argv
    opts = dict(a[2:].split("=", 1) for a in sys.argv[3:] if "=" in a)
    types = [int(t) for t in opts["types"].split(",")] if "types" in opts else None
    number = int(opts.get("first", "1"))
    rows = tshark_decode(cap)
    os.makedirs(outdir, exist_ok=True)
    kept, kinds, n, unmatched = [], set(), 0, 0
    for first, last, msg in messages(cap):
        n += 1
        row = rows.get(first) or rows.get(last)  # tshark decodes a multi-packet Send at its end
        if row is None:
            unmatched += 1
            continue
        if types is not None and int(row["rpcordma.msg_type"] or -1) not in types:
            continue
        proc, what = describe(row)
        sig = (proc, what)
        if sig in kinds and not keep_all:
            continue
        kinds.add(sig)
        name = "%03d-%s-%s.bin" % (len(kept) + number, proc, what)
        with open(os.path.join(outdir, name), "wb") as f:
            f.write(msg)
        kept.append((name, row))
    append = "--append" in sys.argv
    with open(os.path.join(outdir, "tshark.tsv"), "a" if append else "w") as f:
        if not append:
            f.write("# file\t" + "\t".join(FIELDS[1:16]) + "\n")
        for name, row in kept:
            f.write(name + "\t" + "\t".join(row[k] for k in FIELDS[1:16]) + "\n")
    print("%d messages, %d kept, %d without a tshark decode" % (n, len(kept), unmatched))


if __name__ == "__main__":
    main()
