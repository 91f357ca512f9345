#!/usr/bin/env bash
# bench/vm-workers.sh BUILD_DIR [OUT_DIR]: NULL calls per second through the gateway with
# 1 and 2 worker threads (top-level key "workers"), in one Soft-RoCE guest, the kernel
# NFS server over RDMA only behind a forward route (upstream_connections 0 by default:
# one RDMA connection per client).
#   - clients: NS network namespaces, each with its own veth pair and address
#     (10.7.K.2, the guest's side 10.7.K.1), so that the listeners' steering (a hash of
#     the source address, SO_REUSEPORT with a BPF program: all connections from one
#     address go to one worker) can spread them over the workers; the K are picked so
#     that it spreads them evenly; in each, CONNS bench/share_flood clients keep WINDOW
#     NULL calls outstanding for DURATION seconds, all started together;
#   - for each worker count: the sum of the floods' calls per second; the gateway's CPU
#     time over the run (utime+stime, /proc/PID/stat) and per thread
#     (/proc/PID/task/*/stat), so µs of gateway CPU per RPC; the guest's busy CPU
#     (/proc/stat); and the sessions each worker had (/stats, sessions counted by their
#     "worker" field, sampled two thirds into the run; "n/a" when the build has no
#     such field).
# It prints a markdown table, one row per worker count (kept in OUT_DIR/workers.txt,
# after the details of each run); it never passes or fails on a figure.
#
# What the figures mean here: the guest is emulated (TCG) with two vCPUs, and those two
# vCPUs run everything: the NS x CONNS flood clients, nfsd, Soft-RoCE (rdma_rxe, in
# kernel context, much of it charged to whoever posts or receives: the gateway's system
# time includes the emulated NIC's work for its sends) and the gateway. With one worker
# the gateway's thread can have at most one vCPU; with two it may use both, but so may
# everything else, and "guest busy" near 100% says the machine, not the gateway, is the
# bound: the 2-worker RPC/s is then a lower bound of what two workers do on real cores.
# What to look at: the per-thread CPU split (with 2 workers, two busy threads of about
# equal share, and the sessions split over both workers, say that the load was spread),
# the RPC/s of the two rows, and the gateway's µs per RPC (a rise with 2 workers is the
# cost of the threads sharing two vCPUs with the rest, or contention between them).
# Compare rows of one run, not with hardware.
#
# Environment: WORKER_COUNTS ("1 2"), NS (4), CONNS (4 per namespace), WINDOW (8),
# DURATION (15 s, at least 1: share_flood's SECONDS; not named SECONDS, which is bash's
# own clock), UPSTREAM_CONNECTIONS (0). A build that refuses the "workers" key (from
# before it existed) still runs the 1-worker row, without the key, and skips the
# others; one that takes the key but has no worker threads yet shows, in every row, one
# busy thread and "n/a" sessions by worker.
# Run it alone on the machine (it shares the VM lock with the end-to-end jobs), on a
# Release build:
#   flock /tmp/rpcrdma-vm.lock bench/vm-workers.sh build-rel
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(realpath "${1:?usage: vm-workers.sh BUILD_DIR [OUT_DIR]}")
out=${2:-$build/bench-out}
mkdir -p "$out"; out=$(realpath "$out"); rm -f "$out"/workers.txt "$out"/gw-workers-*.log
job=$(mktemp); env=$(mktemp)
cat >"$env" <<ENV
export GW_SRC=$top GW_BIN=$build/gateway/rpcrdma-gw GW_FLOOD=$build/bench/share_flood
export WORKER_COUNTS="${WORKER_COUNTS:-1 2}" UPSTREAM_CONNECTIONS=${UPSTREAM_CONNECTIONS:-0}
export NS=${NS:-4} CONNS=${CONNS:-4} WINDOW=${WINDOW:-8} DURATION=${DURATION:-15}
ENV
cat >"$job" <<'JOB'
set -eu
gwvm-net >/dev/null
gwvm-nfsd /export rdma >/dev/null
ulimit -n 8192
say() { echo "$*" | tee -a /share/workers.txt; }
clients=$((NS * CONNS))

# The namespaces' subnets 10.7.K: the first K (from 1) whose client address 10.7.K.2 the
# listeners' steering gives to a worker that has fewer than its share of namespaces, for
# every count of WORKER_COUNTS at once (tcp_listener_steer_index(), computed here as
# tests/e2e/workers.sh does); where no K up to 250 fits, the next unused ones.
# shellcheck disable=SC2086 # a list of numbers
mapfile -t net < <(python3 - "$NS" $WORKER_COUNTS <<'PY'
import ipaddress, sys
ns, counts = int(sys.argv[1]), [int(c) for c in sys.argv[2:] if int(c) > 1]
def steer(k, n):
    a = int(ipaddress.IPv4Address("10.7.%d.2" % k))
    return ((((0 ^ a) * 0x9E3779B1) & 0xFFFFFFFF) >> 16) % n
load = {n: [0] * n for n in counts}
chosen = []
for k in range(1, 251):
    if len(chosen) == ns:
        break
    if all(load[n][steer(k, n)] < -(-ns // n) for n in counts):
        chosen.append(k)
        for n in counts:
            load[n][steer(k, n)] += 1
chosen += [k for k in range(1, 251) if k not in chosen][:ns - len(chosen)]
print("\n".join(str(k) for k in chosen))
PY
)
# The client namespaces, made once for every worker count: c$i at 10.7.${net[i-1]}.2.
for i in $(seq 1 "$NS"); do
    k=${net[$((i - 1))]}
    ip netns add "c$i"
    ip link add "vh$i" type veth peer name "vn$i" netns "c$i"
    ip addr add "10.7.$k.1/24" dev "vh$i"; ip link set "vh$i" up
    ip -n "c$i" addr add "10.7.$k.2/24" dev "vn$i"; ip -n "c$i" link set "vn$i" up
    ip -n "c$i" link set lo up
done

gw_config() { # WORKERS_KEY: the gateway's configuration, with the given top-level keys
    cat >/tmp/gw.json <<JSON
{ $1 "routes": [ { "name": "nfs", "mode": "forward", "upstream_connections": $UPSTREAM_CONNECTIONS,
                "max_sessions": $((clients + 100)), "max_sessions_per_client": $((CONNS + 32)),
                "listen": "tcp://0.0.0.0:3049", "upstream": "rdma://192.0.2.1:20049" } ],
  "stats": { "listen": "127.0.0.1:9464" }, "logging": { "level": "warning" } }
JSON
}
gw_run() { # WORKERS: start the gateway, wait for its stats; 1 when it did not come up
    "$GW_BIN" -c /tmp/gw.json 2>>/share/gw-workers-"$1".log & gw=$!
    for _ in $(seq 50); do curl -fs http://127.0.0.1:9464/healthz >/dev/null && return 0; sleep 0.2; done
    return 1
}
gw_end() { kill "$gw" 2>/dev/null || true; wait "$gw" 2>/dev/null || true; }

# The guest's busy and idle ticks (/proc/stat, all CPUs), the gateway's (utime + stime,
# threads that ended included) and each of its threads' now, one Python run (a process
# costs tens of milliseconds in the emulated guest).
snap() { # FILE
    python3 - "$gw" >"$1" <<'PY' || true
import os, sys
pid = sys.argv[1]
def ticks(path):
    s = open(path).read()
    f = s[s.rindex(")") + 2:].split()  # f[0] is field 3 (state): utime, stime are 14, 15
    return s[s.index("(") + 1:s.rindex(")")].replace(" ", "_"), int(f[11]) + int(f[12])
v = [int(x) for x in open("/proc/stat").readline().split()[1:9]]
print("guest", v[0] + v[1] + v[2] + v[5] + v[6] + v[7], v[3] + v[4])
print("process", ticks("/proc/%s/stat" % pid)[1])
for t in sorted(os.listdir("/proc/%s/task" % pid), key=int):
    try:
        comm, n = ticks("/proc/%s/task/%s/stat" % (pid, t))
    except OSError:
        continue
    print("thread", t, n, comm)
PY
}

# The row of one worker count, from the snapshots, the floods' lines and /stats; the
# details go to the log (and workers.txt), the row to /tmp/rows.md.
report() { # WORKERS NOTE
    python3 - "$1" "$2" "$(getconf CLK_TCK)" "$(nproc)" "$clients" "$NS" "$CONNS" <<'PY' || echo "| $1 | figures failed: see the log |" >>/tmp/rows.md
import glob, json, re, sys
w, note, hz, ncpu, nclients = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])

def snap(path):
    d = {"threads": {}}
    try:
        for line in open(path):
            f = line.split()
            if f[0] == "guest":
                d["busy"], d["idle"] = int(f[1]), int(f[2])
            elif f[0] == "process":
                d["gw"] = int(f[1])
            elif f[0] == "thread":
                d["threads"][f[1]] = (int(f[2]), f[3])
    except (OSError, IndexError, ValueError):
        pass
    return d

a, b = snap("/tmp/snap-%s.0" % w), snap("/tmp/snap-%s.1" % w)
rate = replies = bad = lost = 0
floods = 0
for path in sorted(glob.glob("/tmp/flood-%s-*.out" % w)):
    txt = open(path).read()
    m = re.search(r"(\d+) replies in ([\d.]+) s: (\d+) calls/s, (\d+) not SUCCESS", txt)
    if m:
        floods += 1
        replies += int(m.group(1)); rate += int(m.group(3)); bad += int(m.group(4))
    lost += "connection lost" in txt or not m
try:
    wall = float(open("/tmp/t1-%s" % w).read()) - float(open("/tmp/t0-%s" % w).read())
except (OSError, ValueError):
    wall = 0.0

def fmt(x, spec):
    return "n/a" if x is None else format(x, spec)

gw_s = (b["gw"] - a["gw"]) / hz if "gw" in a and "gw" in b else None
us_rpc = gw_s * 1e6 / replies if gw_s is not None and replies else None
busy = None
if "busy" in a and "busy" in b:
    t = (b["busy"] - a["busy"]) + (b["idle"] - a["idle"])
    busy = 100.0 * (b["busy"] - a["busy"]) / t if t > 0 else None
# Each thread's CPU over the run (a thread started during the run counts from 0), and
# its share of the gateway's.
threads = []
for tid, (n, comm) in b["threads"].items():
    d = (n - a["threads"].get(tid, (0, comm))[0]) / hz
    threads.append((d, tid, comm))
threads.sort(reverse=True)
busy_threads = [t for t in threads if t[0] > 0]
split = ", ".join("%s/%s %.2f s (%.0f%%)" % (comm, tid, d, 100 * d / gw_s if gw_s else 0)
                  for d, tid, comm in busy_threads) or "n/a"
idle_threads = len(threads) - len(busy_threads)

# Sessions (and their replies so far, and client addresses) by worker, from /stats.
by_worker = "n/a"
detail = "no /stats sample"
try:
    st = json.load(open("/tmp/stats-%s.json" % w))
    sessions = [s for r in st.get("routes", []) for s in r.get("sessions", [])]
    if sessions and all("worker" in s for s in sessions):
        ws = {}
        for s in sessions:
            e = ws.setdefault(s["worker"], [0, 0, set()])
            e[0] += 1
            e[1] += s.get("counters", {}).get("replies", 0)
            e[2].add(s.get("client", "?").rsplit(":", 1)[0])
        by_worker = ", ".join("w%s: %d" % (k, ws[k][0]) for k in sorted(ws))
        detail = "; ".join("worker %s: %d sessions, %d replies so far, from %s" % (
            k, ws[k][0], ws[k][1], " ".join(sorted(ws[k][2]))) for k in sorted(ws))
    else:
        by_worker = "n/a (%d live)" % len(sessions)
        detail = "%d live sessions, %s" % (len(sessions), "no \"worker\" field" if sessions else "none listed")
except (OSError, ValueError, AttributeError, TypeError) as e:
    detail = "no /stats sample (%s)" % e

print("  floods: %d of %d reported, %d replies, %d not SUCCESS, %d lost or silent; run %.1f s" % (
    floods, nclients, replies, bad, lost, wall))
print("  gateway threads: %d, %d with no CPU over the run; by thread (comm/tid, CPU s, share of the gateway's): %s" % (
    len(threads), idle_threads, split))
print("  sessions at two thirds of the run: %s" % detail)
cell_threads = " ".join("%.2f" % d for d, _, _ in busy_threads) or "n/a"
vcpu = "" if gw_s is None or wall <= 0 else " (%.0f%% of a vCPU)" % (100 * gw_s / wall)
row = "| %s%s | %s x %s | %d | %d | %s%s | %s | %s%% of %d vCPUs | %d: %s | %s |" % (
    w, " (%s)" % note if note else "", sys.argv[6], sys.argv[7], replies, rate, fmt(gw_s, ".2f"), vcpu,
    fmt(us_rpc, ".0f"), fmt(busy, ".0f"), ncpu, len(threads), cell_threads, by_worker)
open("/tmp/rows.md", "a").write(row + "\n")
PY
}

flood_run() { # WORKERS
    local w=$1 key note="" i k n pids=()
    key="\"workers\": $w,"
    gw_config "$key"
    if ! "$GW_BIN" -c /tmp/gw.json --check >/tmp/check.out 2>&1; then
        if [[ $w == 1 ]]; then # a build from before the key: one engine is one worker
            say "workers $w: the build refuses \"workers\" ($(tail -1 /tmp/check.out)); run without the key"
            key="" note="no workers key"; gw_config ""
        else
            say "workers $w: the build refuses \"workers\" ($(tail -1 /tmp/check.out)); skipped"
            echo "| $w | refused by the build | | | | | | | | |" >>/tmp/rows.md
            return 0
        fi
    fi
    say "== workers $w${note:+ ($note)}: $NS namespaces x $CONNS floods of $WINDOW outstanding NULL calls, $DURATION s, upstream_connections $UPSTREAM_CONNECTIONS"
    if ! gw_run "$w"; then
        say "  the gateway did not come up (/share/gw-workers-$w.log)"
        echo "| $w | the gateway did not come up | | | | | | | | |" >>/tmp/rows.md
        gw_end; return 0
    fi
    # Every flood waits for its line on a FIFO, so that all start together once all
    # exist (each namespace's process costs tens of milliseconds to start here).
    rm -f /tmp/go /tmp/ready-* /tmp/flood-"$w"-*.out; mkfifo /tmp/go
    exec 4<>/tmp/go # held open here too: the writes below never wait for a reader
    for i in $(seq 1 "$NS"); do
        for k in $(seq 1 "$CONNS"); do
            ip netns exec "c$i" bash -c "exec 3<>/tmp/go; touch /tmp/ready-$i-$k
                read -r -t 120 _ <&3 || exit 1; exec 3<&-
                exec \"$GW_FLOOD\" 10.7.${net[$((i - 1))]}.1 3049 $WINDOW $DURATION" >"/tmp/flood-$w-$i-$k.out" 2>&1 &
            pids+=($!)
        done
    done
    for _ in $(seq 300); do
        n=$(find /tmp -maxdepth 1 -name 'ready-*' | wc -l)
        [[ $n -ge $clients ]] && break
        sleep 0.2
    done
    sleep 0.5
    snap /tmp/snap-"$w".0
    date +%s.%N >/tmp/t0-"$w"
    for _ in $(seq 1 "$clients"); do echo go; done >&4
    # /stats while every flood is connected: the sessions, by worker.
    sleep $((DURATION * 2 / 3))
    curl -fs http://127.0.0.1:9464/stats >/tmp/stats-"$w".json || true
    wait "${pids[@]}" 2>/dev/null || true # the floods, not the gateway
    snap /tmp/snap-"$w".1
    date +%s.%N >/tmp/t1-"$w"
    exec 4>&-; rm -f /tmp/go
    report "$w" "$note" | tee -a /share/workers.txt
    gw_end
    sleep 1
}

say "== $(date -u +%F) $(nproc) vCPUs; gateway $GW_BIN"
rm -f /tmp/rows.md
for w in $WORKER_COUNTS; do
    flood_run "$w" || say "workers $w: the run failed"
done
say ""
say "| workers | clients (ns x conns) | replies | RPC/s (sum of floods) | gateway CPU s | gateway µs/RPC | guest busy | gateway threads: CPU s of each busy one | sessions by worker |"
say "|---|---|---|---|---|---|---|---|---|"
if [[ -e /tmp/rows.md ]]; then tee -a /share/workers.txt </tmp/rows.md; fi
JOB
rc=0
GWVM_SHARE=$out GWVM_ENV=$env GWVM_TIMEOUT=${GWVM_TIMEOUT:-900} "$top/tests/vm/gwvm" run "$job" || rc=$?
rm -f "$job" "$env"
cat "$out/workers.txt" 2>/dev/null || echo "vm-workers.sh: no figures (see the guest's output above)"
exit "$rc"
