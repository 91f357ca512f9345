# hostile_peers.py: raw TCP peers for tests/e2e/hostile.sh, which do what no kernel client
# does on purpose (hold connections idle, announce a record and trickle it) or does only
# over a long time (connect and disconnect thousands of times).
#
#   hostile_peers.py flood HOST PORT IDLE_SRC IDLE_N TRICKLE_SRC TRICKLE_N SECONDS
#       TRICKLE_N connections from TRICKLE_SRC each send a record mark announcing a
#       1,000,000-byte record, then one byte a second; then IDLE_N connections from
#       IDLE_SRC send nothing. For SECONDS it watches which the gateway closes and when;
#       then prints what it saw as one JSON object (the last line):
#         idle_refused         idle connections closed within REFUSED_S of connecting
#         idle_refused_max_s   the slowest of those closes (a refusal must not hang)
#         idle_held            idle connections still open at the end
#         idle_late            idle connections closed later than REFUSED_S (those let in:
#                              a client that sends nothing is closed at record_timeout)
#         idle_age_min_s, idle_age_max_s   their ages when closed
#         trickle_refused      tricklers closed within REFUSED_S of connecting
#         trickle_timed_out    tricklers closed later, while trickling (a record deadline)
#         trickle_age_min_s, trickle_age_max_s   their ages when closed
#         trickle_open         tricklers still open at the end
#
#   hostile_peers.py cycles HOST PORT SRC COUNT EVERY MAX_SECONDS
#       COUNT TCP connect/close cycles from SRC, one after another; every EVERY-th cycle
#       sends an NFSv3 NULL call and waits for its reply first. A NULL cycle whose
#       connection the gateway refuses (the client's earlier sessions were still being
#       torn down, so it was at its per-client limit) is tried again after 50 ms, up to
#       100 times, and counted. Stops early at MAX_SECONDS. Prints one JSON object:
#       done, seconds, rate, calls, answered, retried.
import json
import os
import selectors
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rpc_tcp import call, read_record, record, reply_status  # noqa: E402

REFUSED_S = 5.0


def connect_from(src, host, port):
    s = socket.socket()
    s.bind((src, 0))
    s.settimeout(10)
    s.connect((host, port))
    s.setblocking(False)
    return s


def is_closed(s):
    """True when the peer closed (EOF or RST); False when nothing is to be read."""
    try:
        return s.recv(4096) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def flood(host, port, idle_src, idle_n, trickle_src, trickle_n, seconds):
    sel = selectors.DefaultSelector()
    opened = {}   # socket -> (kind, time connected)
    closed = {}   # socket -> age at close
    reset = []    # kinds of the connections reset before connect() returned
    t0 = time.time()

    def connect_or_reset(src, kind):
        """A connection, or None when the gateway accepted and reset it before
        connect() returned to us (the reset won the race on a busy guest): one
        closed at once, like any refused connection."""
        try:
            return connect_from(src, host, port)
        except ConnectionResetError:
            reset.append(kind)
            return None

    def watch(s, kind):
        opened[s] = (kind, time.time())
        sel.register(s, selectors.EVENT_READ)

    def close(s):
        closed[s] = time.time() - opened[s][1]
        sel.unregister(s)
        s.close()

    for _ in range(trickle_n):
        s = connect_or_reset(trickle_src, "trickle")
        if s is None:
            continue
        try:
            s.send(struct.pack(">I", 0x80000000 | 1000000))
        except OSError:
            pass
        watch(s, "trickle")
    for _ in range(idle_n):
        s = connect_or_reset(idle_src, "idle")
        if s is not None:
            watch(s, "idle")
    print("flood: %d tricklers and %d idle connections made in %.1f s" %
          (trickle_n, idle_n, time.time() - t0), flush=True)

    next_byte = time.time() + 1
    while time.time() - t0 < seconds:
        for key, _ in sel.select(timeout=0.2):
            if is_closed(key.fileobj):
                close(key.fileobj)
        if time.time() >= next_byte:
            next_byte += 1
            for s, (kind, _) in list(opened.items()):
                if kind == "trickle" and s not in closed:
                    try:
                        s.send(b"x")
                    except OSError:
                        close(s)

    def of(kind):
        return [closed.get(s) for s, (k, _) in opened.items() if k == kind] + \
            [0.0] * reset.count(kind)

    idle, trickle = of("idle"), of("trickle")
    refused = [a for a in idle if a is not None and a <= REFUSED_S]
    timed = [a for a in trickle if a is not None and a > REFUSED_S]
    late = [a for a in idle if a is not None and a > REFUSED_S]
    res = {
        "idle_refused": len(refused),
        "idle_refused_max_s": round(max(refused, default=0), 2),
        "idle_held": sum(a is None for a in idle),
        "idle_late": len(late),
        "idle_age_min_s": round(min(late, default=0), 1),
        "idle_age_max_s": round(max(late, default=0), 1),
        "trickle_refused": sum(a is not None and a <= REFUSED_S for a in trickle),
        "trickle_timed_out": len(timed),
        "trickle_age_min_s": round(min(timed, default=0), 1),
        "trickle_age_max_s": round(max(timed, default=0), 1),
        "trickle_open": sum(a is None for a in trickle),
    }
    for s in opened:
        if s not in closed:
            s.close()
    print(json.dumps(res))


def cycles(host, port, src, count, every, max_seconds):
    t0 = time.time()
    done = calls = answered = retried = 0
    for i in range(count):
        if time.time() - t0 > max_seconds:
            break
        if i % every:
            s = socket.socket()
            s.bind((src, 0))
            s.connect((host, port))
            s.close()
        else:
            calls += 1
            xid = 0x7C000000 + i
            for attempt in range(100):
                s = socket.socket()
                s.bind((src, 0))
                s.settimeout(20)
                s.connect((host, port))
                try:
                    s.sendall(record(call(xid, 100003, 3, 0)))
                    got = reply_status(read_record(s))
                except (RuntimeError, OSError):
                    got = None
                s.close()
                if got is not None:
                    break
                retried += 1
                time.sleep(0.05)
            if got == (xid, 1, 0, 0):
                answered += 1
        done += 1
    secs = time.time() - t0
    print(json.dumps({"done": done, "seconds": round(secs, 1), "rate": round(done / secs, 1),
                      "calls": calls, "answered": answered, "retried": retried}))


if __name__ == "__main__":
    a = sys.argv
    if a[1] == "flood":
        flood(a[2], int(a[3]), a[4], int(a[5]), a[6], int(a[7]), float(a[8]))
    elif a[1] == "cycles":
        cycles(a[2], int(a[3]), a[4], int(a[5]), int(a[6]), float(a[7]))
    else:
        sys.exit("usage: hostile_peers.py flood|cycles ...")
