#!/usr/bin/python3
# scale_clients.py: the NFS clients of tests/e2e/scale_out.sh, one thread each, driven
# from one process (each client is a mount made from its own network namespace; the
# mount keeps that namespace, so any process may use it).
#
# scale_clients.py write OUT MIB DIR...
#     every DIR at once: MIB MiB of O_DIRECT 1 MiB writes into DIR/bulk, then fsync;
#     OUT (JSON): seconds, bytes, the aggregate MB/s, and per DIR the sha256 of what
#     was written or the error.
# scale_clients.py workload OUT SRC PACE KIB TAG DIR...
#     every DIR at once: SRC copied into DIR/copy-TAG, KIB KiB every PACE seconds
#     (O_DIRECT), while a probe writes 4 KiB (O_DIRECT, one WRITE call) into
#     DIR/probe-TAG every 0.1 s, and goes on 3 s after the last copy ended; OUT (JSON)
#     per DIR: the copy's end time and error, and each probe's start and end
#     (time.time()) or error. Errors are recorded, never raised: a hard mount must
#     show none.
# scale_clients.py report OUT T DIR...
#     from a workload's OUT and the time T of an event (a gateway killed or stopped),
#     with DIR... the clients that gateway served (they move): prints one line
#     "moved=SECONDS unaffected_before=MS unaffected_after=MS unaffected_max_before=MS
#     unaffected_max_after=MS errors=N copy_errors=N": the longest a moved client waited
#     for a reply after T (from T to the end of its slowest probe), the unaffected
#     clients' median probe latency before and after T and their slowest before and
#     after T.
# scale_clients.py touch DIR...
#     one probe write into each DIR; exit 0 when each succeeded.
import json, mmap, os, sys, threading, time, hashlib

MIB = 1 << 20


def aligned(n):
    buf = mmap.mmap(-1, n)  # page-aligned, as O_DIRECT wants
    return buf


def probe_once(path, buf):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_DIRECT, 0o644)
    try:
        os.pwrite(fd, buf, 0)
    finally:
        os.close(fd)


def write_bulk(d, mib, res, seed):
    buf = aligned(MIB)
    h = hashlib.sha256()
    try:
        fd = os.open(os.path.join(d, "bulk"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_DIRECT, 0o644)
        for i in range(mib):
            buf.seek(0)
            chunk = hashlib.sha256(b"%d-%d" % (seed, i)).digest() * (MIB // 32)
            buf.write(chunk)
            h.update(chunk)
            os.pwrite(fd, buf, i * MIB)
        os.fsync(fd)
        os.close(fd)
        res[d] = {"sha256": h.hexdigest()}
    except OSError as e:
        res[d] = {"error": str(e)}


def cmd_write(out, mib, dirs):
    res = {}
    threads = [threading.Thread(target=write_bulk, args=(d, mib, res, n)) for n, d in enumerate(dirs)]
    t0 = time.time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    secs = time.time() - t0
    total = mib * MIB * len(dirs)
    json.dump({"seconds": secs, "bytes": total, "mb_per_s": total / secs / 1e6, "clients": res},
              open(out, "w"))


def copy(src, d, tag, pace, chunk, rec):
    buf = aligned(chunk)
    try:
        with open(src, "rb") as f:
            data = f.read()
        fd = os.open(os.path.join(d, "copy-" + tag), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_DIRECT, 0o644)
        for off in range(0, len(data), chunk):
            t = time.time()
            buf.seek(0)
            buf.write(data[off:off + chunk])
            os.pwrite(fd, buf, off)
            left = pace - (time.time() - t)
            if left > 0:
                time.sleep(left)
        os.fsync(fd)
        os.close(fd)
    except OSError as e:
        rec["copy_error"] = str(e)
    rec["copy_end"] = time.time()


def probe(d, tag, rec, stop):
    buf = aligned(4096)
    path = os.path.join(d, "probe-" + tag)
    while not stop.is_set():
        t0 = time.time()
        try:
            probe_once(path, buf)
            rec["probes"].append([t0, time.time()])
        except OSError as e:
            rec["errors"].append([t0, str(e)])
        left = 0.1 - (time.time() - t0)
        if left > 0:
            time.sleep(left)


def cmd_workload(out, src, pace, chunk, tag, dirs):
    recs = {d: {"probes": [], "errors": []} for d in dirs}
    stop = threading.Event()
    probes = [threading.Thread(target=probe, args=(d, tag, recs[d], stop)) for d in dirs]
    copies = [threading.Thread(target=copy, args=(src, d, tag, pace, chunk, recs[d])) for d in dirs]
    for t in probes + copies:
        t.start()
    for t in copies:
        t.join()
    time.sleep(3)
    stop.set()
    for t in probes:
        t.join()
    json.dump(recs, open(out, "w"))


def median(v):
    v = sorted(v)
    return v[len(v) // 2] if v else float("nan")


def cmd_report(out, t, moved):
    recs = json.load(open(out))
    pause = 0.0
    before, after = [], []
    for d, r in recs.items():
        if d in moved:
            for t0, t1 in r["probes"]:
                if t1 > t:
                    pause = max(pause, t1 - max(t0, t))
        else:
            for t0, t1 in r["probes"]:
                (before if t1 <= t else after).append(t1 - t0)
    errors = sum(len(r["errors"]) for r in recs.values())
    copy_errors = sum(1 for r in recs.values() if "copy_error" in r)
    print("moved=%.2f unaffected_before=%.1f unaffected_after=%.1f unaffected_max_before=%.1f "
          "unaffected_max_after=%.1f errors=%d copy_errors=%d" %
          (pause, 1000 * median(before), 1000 * median(after), 1000 * max(before or [0]),
           1000 * max(after or [0]), errors, copy_errors))


def cmd_touch(dirs):
    buf = aligned(4096)
    bad = 0
    for d in dirs:
        try:
            probe_once(os.path.join(d, "probe-touch"), buf)
        except OSError as e:
            print("%s: %s" % (d, e))
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    op = sys.argv[1]
    if op == "write":
        cmd_write(sys.argv[2], int(sys.argv[3]), sys.argv[4:])
    elif op == "workload":
        cmd_workload(sys.argv[2], sys.argv[3], float(sys.argv[4]), int(sys.argv[5]) * 1024,
                     sys.argv[6], sys.argv[7:])
    elif op == "report":
        cmd_report(sys.argv[2], float(sys.argv[3]), set(sys.argv[4:]))
    elif op == "touch":
        sys.exit(cmd_touch(sys.argv[2:]))
    else:
        sys.exit("usage: see the head of %s" % sys.argv[0])
