#!/usr/bin/env python3
# oversize_records.py HOST PORT RECORD_BYTES COUNT: a client that ignores what the server
# advertises. On one connection, COUNT times: an NFS call whose record is RECORD_BYTES
# long (more than the route carries), then a NULL call. Each large call must be answered
# GARBAGE_ARGS under its own XID and the NULL after it SUCCESS, on the same connection:
# the gateway skips the record and answers it rather than resetting the connection
# (which made the Linux client send it again for ever). Prints one line of figures.
import os
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rpc_tcp import GARBAGE_ARGS, SUCCESS, auth_sys, call, read_record, record, reply_status  # noqa: E402

host, port, size, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
s = socket.create_connection((host, port), timeout=30)
big_ok = null_ok = 0
for i in range(count):
    xid = 0x51500000 + 2 * i
    head = call(xid, 100003, 3, 7, cred=auth_sys())  # NFSv3 WRITE
    s.sendall(record(head + b"\x5a" * (size - len(head))))
    rx, mtype, stat, astat = reply_status(read_record(s))
    if (rx, mtype, stat, astat) == (xid, 1, 0, GARBAGE_ARGS):
        big_ok += 1
    else:
        print("large call %#x: answered %#x type %d stat %d accept %d" % (xid, rx, mtype, stat, astat))
    s.sendall(record(call(xid + 1, 100003, 3, 0)))
    rx, mtype, stat, astat = reply_status(read_record(s))
    if (rx, astat) == (xid + 1, SUCCESS):
        null_ok += 1
s.close()
print("oversize: %d of %d large calls answered GARBAGE_ARGS, %d NULLs after them SUCCESS" % (big_ok, count, null_ok))
sys.exit(0 if big_ok == count and null_ok == count else 1)
