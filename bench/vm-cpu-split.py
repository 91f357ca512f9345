#!/usr/bin/env python3
"""bench/vm-cpu-split.py PERF_SCRIPT RPCS [HZ]: where the guest's CPU went while NFSv3
4 KiB O_DIRECT I/O ran through the gateway (bench/vm-throughput.sh, PROFILE=1), from
system-wide cpu-clock samples with kernel call chains (`perf record -a -g`, printed by
`perf script`), and RPCS, the calls the gateway relayed meanwhile.

Why: the gateway's CPU time per RPC (utime + stime) in the Soft-RoCE guest includes
the emulated NIC's work. rxe runs its requester in the context of the process that
rings the send doorbell, so building, checksumming and sending every packet the gateway
posts -- and, through the loopback, receiving it for the server in softirq -- is
charged to the gateway, where a hardware NIC does it off the CPU. Comparing that with
the nfsd threads' time, which leave out most of their own rxe work (done in softirq and
kworkers), says little. The samples' call chains tell the emulated NIC's share apart.

A sample of a gateway thread (comm rpcrdma-gw or gw-worker-N) is counted as:
  Soft-RoCE (emulated NIC)  any kernel frame of rxe (rxe_*): posting, packets, and the
                            server's side of them received in softirq on this CPU
  verbs system calls        the uverbs layer without rxe under it: the completion
                            channel's read, arming the CQ, the doorbell's own entry
  TCP socket                the client's TCP: reads, sendmsg, their softirq
  epoll                     the event loop's wait
  kernel, other             system call entry and exit, scheduling, timekeeping
  gateway code              rpcrdma-gw itself (user space)
  libevent, verbs library,  user-space libraries (rdma-core's libibverbs and its rxe
  libc, other user space    provider; libc)
The same rules split the nfsd threads' samples, so that the gateway's CPU per RPC less
its emulated NIC can be set against nfsd's less its own. Every group is printed with
its share of all samples (idle included) so that nothing is left out.
It prints figures; it never passes or fails.
"""
import collections
import re
import sys

HEADER = re.compile(r"^(\S.*?)\s+(\d+)(?:/\d+)?\s+(?:\[\d+\]\s+)?[\d.]+:")
FRAME = re.compile(r"^\s+[0-9a-f]+\s+(.*?)\s+\((.*)\)\s*$")

USER_ORDER = ["gateway code", "libevent", "verbs library", "libc", "other user space"]
KERNEL_ORDER = ["Soft-RoCE (emulated NIC)", "verbs system calls", "TCP socket", "epoll",
                "kernel, other"]


def group_of(comm):
    if comm.startswith("rpcrdma-gw") or comm.startswith("gw-worker"):
        return "gateway"
    if comm == "nfsd":
        return "nfsd"
    if comm.startswith("swapper"):
        return "idle"
    if comm == "dd":
        return "client (dd and the NFS client in its context)"
    if comm.startswith("kworker") or comm.startswith("ksoftirqd") or comm.startswith("rpciod"):
        return "kernel threads (kworker, ksoftirqd, rpciod)"
    return "other processes"


def is_kernel(dso):
    return dso.startswith("[kernel") or dso.endswith(".ko") or dso.startswith("[")


def classify(frames):
    """frames: [(sym, dso)] leaf first."""
    if not frames:
        return "other user space"
    sym, dso = frames[0]
    if not is_kernel(dso):
        base = dso.rsplit("/", 1)[-1]
        if base.startswith("rpcrdma-gw"):
            return "gateway code"
        if base.startswith("libevent"):
            return "libevent"
        if base.startswith("libibverbs") or base.startswith("librxe") or "rdmav" in base:
            return "verbs library"
        if base.startswith("libc") or base.startswith("ld-linux"):
            return "libc"
        return "other user space"
    kern = [s for s, d in frames if is_kernel(d)]
    if any(s.startswith("rxe_") for s in kern):
        return "Soft-RoCE (emulated NIC)"
    if any(s.startswith("ib_") or s.startswith("uverbs") for s in kern):
        return "verbs system calls"
    if any(s.startswith(p) for s in kern for p in ("tcp_", "sock_", "inet_", "__sys_sendmsg",
                                                    "__sys_recvmsg", "sk_", "skb_")):
        return "TCP socket"
    if any(s.startswith("ep_") or "epoll" in s for s in kern):
        return "epoll"
    return "kernel, other"


def samples(path):
    comm = None
    frames = []
    with open(path, errors="replace") as f:
        for line in f:
            if not line.strip():
                if comm is not None:
                    yield comm, frames
                comm, frames = None, []
                continue
            m = HEADER.match(line)
            if m and not line[0].isspace():
                if comm is not None:
                    yield comm, frames
                comm, frames = m.group(1).strip(), []
                continue
            fm = FRAME.match(line)
            if fm and comm is not None:
                sym = fm.group(1).split("+0x")[0]
                frames.append((sym, fm.group(2)))
    if comm is not None:
        yield comm, frames


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    path, rpcs = sys.argv[1], int(sys.argv[2])
    hz = float(sys.argv[3]) if len(sys.argv) > 3 else 1000.0
    by_group = collections.Counter()
    split = {"gateway": collections.Counter(), "nfsd": collections.Counter()}
    total = 0
    for comm, frames in samples(path):
        g = group_of(comm)
        by_group[g] += 1
        total += 1
        if g in split:
            split[g][classify(frames)] += 1
    if total == 0:
        print("no samples")
        return
    us = 1e6 / hz  # one sample stands for this much CPU time
    print(f"{total} samples at {hz:.0f} Hz over all vCPUs; {rpcs} RPCs relayed by the gateway")
    print()
    print("| the guest's CPU, by process | share of samples | us per RPC |")
    print("|---|---|---|")
    for g, n in by_group.most_common():
        print(f"| {g} | {100 * n / total:.1f} % | {n * us / max(rpcs, 1):.0f} |")
    for g in ("gateway", "nfsd"):
        c = split[g]
        n = sum(c.values())
        if not n:
            continue
        print()
        print(f"| {g}: where its CPU went | share of its samples | us per RPC |")
        print("|---|---|---|")
        for k in KERNEL_ORDER + USER_ORDER:
            if c[k]:
                print(f"| {k} | {100 * c[k] / n:.1f} % | {c[k] * us / max(rpcs, 1):.0f} |")
        nic = c["Soft-RoCE (emulated NIC)"]
        print(f"| **all but the emulated NIC** | {100 * (n - nic) / n:.1f} % | "
              f"{(n - nic) * us / max(rpcs, 1):.0f} |")


if __name__ == "__main__":
    main()
