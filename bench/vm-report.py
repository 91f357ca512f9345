#!/usr/bin/env python3
"""bench/vm-report.py OUT_DIR: the table of bench/vm-throughput.sh from OUT_DIR/runs.tsv,
and OUT_DIR/throughput.png (MB/s against I/O size, per path) when gnuplot is installed.

Rates are medians over the rounds. CPU figures are ratios of sums over the rounds
(total CPU time over total RPCs), so that the clock-tick resolution of /proc/PID/stat
(10 ms) averages out over the runs:
  nfsd us/RPC   nfsd threads' utime+stime / RPCs nfsd counted
  gw us/RPC     gateway process' utime+stime / calls it relayed (/metrics)
  gw us/MiB     the same time / MiB it carried on TCP, both directions
  gw % sys      the share of that time spent in the kernel (system calls, and in the
                guest Soft-RoCE's own work done in the caller's context)
  gw sleeps/RPC how often its main thread blocked (voluntary context switches) per call
  guest us/RPC  the guest's busy CPU time (client, server, Soft-RoCE, gateway) / RPCs
A second table gives, for the metadata runs, the create loop's length and the GETATTRs
the server counted: a create loop longer than the client's attribute cache timeout
(acregmin, 3 s) makes the stat loop revalidate the older files, one GETATTR each.
"""
import csv
import os
import shutil
import statistics
import subprocess
import sys
from collections import defaultdict

PATHS = ["rdma", "tcp", "gateway", "gateway-b", "reverse", "reverse-b"]
PATH_NAMES = {"rdma": "direct RDMA", "tcp": "direct TCP", "gateway": "gateway",
              "gateway-b": "gateway B", "reverse": "reverse gateway",
              "reverse-b": "reverse gateway B"}
# The paths through the gateway: its CPU is counted for these.
GATEWAY_PATHS = {"gateway", "gateway-b", "reverse", "reverse-b"}


def size_name(n):
    return f"{n // 1048576} MiB" if n >= 1048576 else f"{n // 1024} KiB"


def load(out):
    clk = 100
    try:
        with open(os.path.join(out, "clk")) as f:
            clk = int(f.read().split()[1])
    except (OSError, IndexError, ValueError):
        pass
    runs = defaultdict(list)
    with open(os.path.join(out, "runs.tsv")) as f:
        for r in csv.DictReader(f, delimiter="\t"):
            if not r["seconds"]:
                continue
            runs[(r["vers"], r["workload"], int(r["size"]), r["path"])].append(r)
    return clk, runs


def summarise(clk, rows):
    us = 1e6 / clk
    tot = lambda k: sum(int(r[k]) for r in rows)
    secs = [float(r["seconds"]) for r in rows]
    mib = int(rows[0]["mib"])
    s = {
        "seconds": statistics.median(secs),
        "mbs": statistics.median(mib * 1.048576 / t for t in secs if t > 0) if mib else None,
        "rpcs": tot("nfsd_rpcs") / len(rows),
        "nfsd": tot("nfsd_ticks") * us / max(tot("nfsd_rpcs"), 1),
        "guest": tot("guest_ticks") * us / max(tot("nfsd_rpcs"), 1),
        "gw": None,
        "gw_mib": None,
        "gw_sys": None,
        "gw_sleeps": None,
    }
    if rows[0]["path"] in GATEWAY_PATHS:
        gw = tot("gw_uticks") + tot("gw_sticks")
        calls = max(tot("gw_calls"), 1)
        s["gw"] = gw * us / calls
        s["gw_sys"] = 100 * tot("gw_sticks") / gw if gw else None
        s["gw_sleeps"] = tot("gw_sleeps") / calls
    if rows[0]["path"] in GATEWAY_PATHS and mib:
        mibs = tot("gw_tcp_bytes") / 1048576
        s["gw_mib"] = (tot("gw_uticks") + tot("gw_sticks")) * us / mibs if mibs else None
    return s


def fmt(v, spec):
    return "—" if v is None else format(v, spec)


def table(clk, runs):
    rounds = max(len(v) for v in runs.values())
    print(f"medians of {rounds} round(s); CPU per RPC from the summed runs")
    print("| NFS | workload | size | path | MB/s (meta: s) | RPCs/run | nfsd µs/RPC "
          "| gateway µs/RPC | gateway µs/MiB | gateway % sys | gateway sleeps/RPC "
          "| guest µs/RPC |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    order = {"write": 0, "read": 1, "meta": 2}
    for key in sorted(runs, key=lambda k: (k[0], order[k[1]], k[2], PATHS.index(k[3]))):
        vers, wl, size, path = key
        s = summarise(clk, runs[key])
        rate = f"{s['mbs']:.1f}" if wl != "meta" else f"{s['seconds']:.2f} s"
        sz = size_name(size) if wl != "meta" else f"{size} files"
        print(f"| v{vers} | {wl} | {sz} | {PATH_NAMES[path]} | {rate} | {s['rpcs']:.0f} "
              f"| {s['nfsd']:.0f} | {fmt(s['gw'], '.0f')} | {fmt(s['gw_mib'], '.0f')} "
              f"| {fmt(s['gw_sys'], '.0f')} | {fmt(s['gw_sleeps'], '.2f')} | {s['guest']:.0f} |")


def _median_of(rows, key):
    vals = [float(r[key]) for r in rows if r.get(key)]
    return statistics.median(vals) if vals else None


def meta_table(runs):
    """The metadata runs' phases (runs.tsv of before 2026-11-24 has no such columns)."""
    keys = [k for k in runs if k[1] == "meta"]
    if not keys or "create_seconds" not in runs[keys[0]][0]:
        return
    print()
    print("metadata runs, medians: the create loop, and the GETATTRs the server counted "
          "(NFSv4: operations in any compound, OPEN's and CLOSE's included)")
    print("| NFS | files | path | s | create loop s | RPCs/run | GETATTRs/run |")
    print("|---|---|---|---|---|---|---|")
    for key in sorted(keys, key=lambda k: (k[0], k[2], PATHS.index(k[3]))):
        vers, _, files, path = key
        rows = runs[key]
        print(f"| v{vers} | {files} | {PATH_NAMES[path]} | {_median_of(rows, 'seconds'):.2f} "
              f"| {fmt(_median_of(rows, 'create_seconds'), '.2f')} "
              f"| {_median_of(rows, 'nfsd_rpcs'):.0f} "
              f"| {fmt(_median_of(rows, 'nfsd_getattrs'), '.0f')} |")


def plot(out, clk, runs):
    gp = shutil.which("gnuplot")
    if not gp:
        print("(gnuplot not installed: no plot)")
        return
    files = []
    paths = [p for p in PATHS if any(k[3] == p for k in runs)]
    for vers in sorted({k[0] for k in runs}):
        for wl in ("write", "read"):
            sizes = sorted({k[2] for k in runs if k[0] == vers and k[1] == wl})
            name = os.path.join(out, f"v{vers}-{wl}.dat")
            with open(name, "w") as f:
                for size in sizes:
                    vals = []
                    for p in paths:
                        rows = runs.get((vers, wl, size, p))
                        vals.append(f"{summarise(clk, rows)['mbs']:.2f}" if rows else "NaN")
                    f.write(f"{size // 1024} " + " ".join(vals) + "\n")
            files.append((vers, wl, name))
    script = [
        "set terminal pngcairo size 1100,800 font ',10' noenhanced" if _has_cairo(gp)
        else "set terminal png size 1100,800 noenhanced",
        f"set output '{os.path.join(out, 'throughput.png')}'",
        "set multiplot layout 2,2 title 'O_DIRECT, one I/O at a time, Soft-RoCE guest (TCG)'",
        "set logscale x 2; set xtics (4,16,64,256,1024); set xlabel 'I/O size (KiB)'",
        "set ylabel 'MB/s'; set yrange [0:*]; set key top left; set grid",
    ]
    for vers, wl, name in files:
        script.append(f"set title 'NFSv{vers} {wl}'")
        script.append(", ".join(
            f"'{name}' using 1:{i + 2} with linespoints title '{PATH_NAMES[p]}'"
            for i, p in enumerate(paths)).join(["plot ", ""]))
    script.append("unset multiplot")
    subprocess.run([gp], input="\n".join(script) + "\n", text=True, check=True)
    print(f"plot: {os.path.join(out, 'throughput.png')}")


def _has_cairo(gp):
    r = subprocess.run([gp, "-e", "set terminal"], capture_output=True, text=True)
    return "pngcairo" in (r.stdout + r.stderr)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    clk, runs = load(out)
    if not runs:
        sys.exit("vm-report: no runs in " + os.path.join(out, "runs.tsv"))
    table(clk, runs)
    meta_table(runs)
    plot(out, clk, runs)


if __name__ == "__main__":
    main()
