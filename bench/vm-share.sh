#!/usr/bin/env bash
# bench/vm-share.sh BUILD_DIR [OUT_DIR]: shared upstream connections (route key
# upstream_connections, issue 17) in one Soft-RoCE guest, the kernel NFS server over
# RDMA behind the gateway, in forward mode:
#   - memory per idle TCP client: N clients (bench/share_clients.py idle) each make one
#     NULL call and stay connected; the gateway's resident memory (VmRSS) and registered
#     memory (/stats rdma_devices registered_bytes) before the first client and with N,
#     for upstream_connections 2 at SHARED_CLIENTS (200 and 1000) and, for comparison,
#     upstream_connections 0 at OWN_CLIENTS (50: each costs megabytes there);
#   - fairness: on a route with one shared connection, a client's NULL latency (PROBES
#     calls one at a time) alone, then while another client (bench/share_flood, in C)
#     keeps FLOOD NULL calls outstanding (more than its credits: the rest wait in the
#     gateway's fair queue); with the queue-time histograms of both clients (/stats
#     latency.queue) and the flood's calls per second; then the same on a route with a
#     connection per client (upstream_connections 0), the control.
# MEMORY=0 skips the memory runs, FAIRNESS=0 the fairness runs.
# It prints figures (and keeps them in OUT_DIR/share.txt); it never passes or fails.
# The guest is emulated (TCG): latencies compare the two runs, not hardware.
# Run it alone on the machine (it shares the VM lock with the end-to-end jobs), on a
# Release build (ASan's shadow memory would be counted):
#   flock /tmp/rpcrdma-vm.lock bench/vm-share.sh build-rel
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(realpath "${1:?usage: vm-share.sh BUILD_DIR [OUT_DIR]}")
out=${2:-$build/bench-out}
mkdir -p "$out"; out=$(realpath "$out"); rm -f "$out"/share.txt
job=$(mktemp); env=$(mktemp)
cat >"$env" <<ENV
export GW_SRC=$top GW_BIN=$build/gateway/rpcrdma-gw
export SHARED_CLIENTS="${SHARED_CLIENTS-200 1000}" OWN_CLIENTS="${OWN_CLIENTS-50}"
export PROBES=${PROBES:-300} FLOOD=${FLOOD:-160}
export MEMORY=${MEMORY:-1} FAIRNESS=${FAIRNESS:-1} GW_FLOOD=$build/bench/share_flood
ENV
cat >"$job" <<'JOB'
set -eu
gwvm-net >/dev/null
gwvm-nfsd /export rdma >/dev/null
ulimit -n 8192
clients=$GW_SRC/bench/share_clients.py
say() { echo "$*" | tee -a /share/share.txt; }

gw_run() { # UPSTREAM_CONNECTIONS [MORE_ROUTE_KEYS]: start the gateway, wait for its stats
    cat >/tmp/gw.json <<JSON
{ "routes": [ { "name": "nfs", "mode": "forward", "upstream_connections": $1, ${2:-}
                "max_sessions": 1100, "max_sessions_per_client": 1100,
                "listen": "tcp://192.0.2.2:3049", "upstream": "rdma://192.0.2.1:20049" } ],
  "stats": { "listen": "127.0.0.1:9464" }, "logging": { "level": "warning" } }
JSON
    "$GW_BIN" -c /tmp/gw.json & gw=$!
    for _ in $(seq 50); do curl -fs http://127.0.0.1:9464/healthz >/dev/null && break; sleep 0.2; done
}
gw_end() { kill "$gw"; wait "$gw" || true; }
stats() { curl -fs "http://127.0.0.1:9464/stats${1:-}"; }
mem() { # "RSS_KIB REGISTERED_BYTES" of the gateway now
    local rss reg
    rss=$(awk '$1 == "VmRSS:" { print $2 }' /proc/"$gw"/status)
    reg=$(stats "?sessions=0" | python3 -c 'import json,sys; print(sum(d["registered_bytes"] for d in json.load(sys.stdin)["rdma_devices"]))')
    echo "$rss $reg"
}
smaps_top() { # where the gateway's resident memory is: by mapping name, or anonymous by size
    python3 - /proc/"$gw"/smaps <<'PY'
import collections, sys
rss, n, key = collections.Counter(), collections.Counter(), None
for line in open(sys.argv[1]):
    f = line.split()
    if "-" in f[0] and len(f) >= 5:
        lo, hi = (int(x, 16) for x in f[0].split("-"))
        key = f[5] if len(f) > 5 else "anonymous, %d KiB each" % ((hi - lo) // 1024)
    elif f[0] == "Rss:":
        rss[key] += int(f[1])
        n[key] += 1
for k, v in rss.most_common(8):
    print("  resident %.1f MiB in %d mapping(s): %s" % (v / 1024, n[k], k))
PY
}
memory_run() { # UPSTREAM_CONNECTIONS N...
    local conns=$1 n b a; shift
    for n in "$@"; do
        gw_run "$conns"
        b=$(mem)
        if [[ $n == "$1" ]]; then # the empty gateway's fixed part, once a run
            echo "the empty gateway, before the first client:" | tee -a /share/share.txt
            smaps_top | tee -a /share/share.txt
        fi
        coproc idle { python3 "$clients" idle 192.0.2.2 3049 "$n"; }
        read -r line <&"${idle[0]}"
        # Read 1 s and 3 s after the last client came up: a client idle for a second
        # gives its call slots' pages back at the next once-a-second sweep, so the
        # first reading still holds some of the latest clients' pages.
        local live idle_s=0 w
        for w in 1 2; do
            sleep "$w"; idle_s=$((idle_s + w))
            a=$(mem)
            live=$(stats "?sessions=0" | python3 -c 'import json,sys; print(json.load(sys.stdin)["routes"][0]["live_sessions"])')
            echo "$conns $n $live $b $a $idle_s" | awk '{
                rss0 = $4; reg0 = $5; rss = $6; reg = $7; n = $2
                printf "upstream_connections %d, %d idle clients (%d live sessions), %d s after the last came up: RSS %.1f MiB (%.1f before the first), registered %.1f MiB (%.1f); per client: %.1f KiB in all ((RSS + registered) / clients), %.1f KiB over the empty gateway\n",
                    $1, n, $3, $8, rss / 1024, rss0 / 1024, reg / 1048576, reg0 / 1048576,
                    (rss + reg / 1024) / n, ((rss - rss0) + (reg - reg0) / 1024) / n }' | tee -a /share/share.txt
            smaps_top | tee -a /share/share.txt
        done
        eval "exec ${idle[1]}>&-"
        wait "$idle_PID" 2>/dev/null || true
        gw_end
    done
}

say "== $(date -u +%F)"
if [[ $MEMORY == 1 ]]; then
say "== memory per idle client"
# shellcheck disable=SC2086 # lists of numbers
[[ -n $SHARED_CLIENTS ]] && memory_run 2 $SHARED_CLIENTS
# shellcheck disable=SC2086
[[ -n $OWN_CLIENTS ]] && memory_run 0 $OWN_CLIENTS
fi

# Fairness: the probe (a Python client, NULL calls one at a time) alone, then beside a
# flood of FLOOD outstanding NULL calls from bench/share_flood (C: a read and a write per
# batch of replies, so that the flood loads the gateway rather than the guest's vCPUs, as
# the Python flood of the first runs did). Routes: one shared connection of 4 credits
# (2 in flight per client at most: the flood's calls wait in the gateway's fair queue),
# one of the server's usual 64 (32 per client alone, 4 while another client is served:
# shared_client_max_in_flight_contended), and the control, a connection per client
# (upstream_connections 0, 4 credits each): no sharing, so what the probe loses there is
# the worker's loop's, not the shared connection's. The rows "one budget and cap always"
# turn off what holds only while the worker or connection serves more than one client
# (turn_budget_contended = turn_budget, shared_client_max_in_flight_contended 0): the
# behaviour before 2026-11-28, in the same run.
# The probe's line, then, while its connection is still open (its session's counters
# leave /stats with it), each session's time by /stats: in its TCP socket before the
# gateway read it (the kernel's receive time; since 2026-11-25), in the gateway (from the call's
# arrival to its send on RDMA, and from the reply to its write to the client; the fair
# queue's wait included, also shown alone) and at the upstream (RDMA send to reply).
# What the probe measured beyond gateway + upstream was spent outside the gateway's
# process: the guest's TCP stack and its scheduling of the processes.
probe_held() { # LABEL
    local line
    coproc pr { python3 "$clients" probe 192.0.2.2 3049 "$PROBES" hold; }
    read -r line <&"${pr[0]}"
    say "$1 $line"
    stats | python3 -c '
import json, sys
probes = int(sys.argv[1])
for s in json.load(sys.stdin)["routes"][0]["sessions"]:
    l = s["counters"]["latency"]
    mean = lambda h: h["sum_us"] / h["count"] if h["count"] else 0  # noqa: E731
    n = l["gateway"]["count"]
    sock = l.get("socket", {"count": 0, "sum_us": 0})
    print("  %-5s %s: %d replies, mean us: in its socket %.0f, gateway %.0f, upstream %.0f, fair queue %.0f (%d calls); read turns yielded %d" % (
        "probe" if n == probes else "flood", s["client"], n, mean(sock), mean(l["gateway"]), mean(l["upstream"]),
        mean(l["queue"]), l["queue"]["count"], s.get("read_yields", 0)))
' "$PROBES" | tee -a /share/share.txt
    eval "exec ${pr[1]}>&-"
    wait "$pr_PID" 2>/dev/null || true
}
# CPU use, to tell the machine's share of the probe's slow-down: the guest's busy and
# idle ticks (/proc/stat, all CPUs) and the gateway's and the flood's (utime + stime).
cpu_ticks() { # FLOOD_PID: "BUSY IDLE GATEWAY FLOOD"
    local p
    read -r _ u n s i w q sq st _ </proc/stat
    echo -n "$((u + n + s + q + sq + st)) $((i + w))"
    for p in "$gw" "$1"; do awk '{ printf " %d", $14 + $15 }' /proc/"$p"/stat; done
    echo
}
cpu_share() { # BEFORE AFTER: each as a share of the guest's ticks (all CPUs)
    echo "$1 $2 $(nproc)" | awk '{ t = ($5 + $6) - ($1 + $2); if (t <= 0) t = 1
        printf "guest busy %.0f%% of %d vCPUs; gateway %.0f%% of one vCPU, flood %.0f%%\n",
            100 * ($5 - $1) / t, $9, 100 * $9 * ($7 - $3) / t, 100 * $9 * ($8 - $4) / t }'
}
fair_run() { # LABEL UPSTREAM_CONNECTIONS ROUTE_KEYS
    say "== fairness, $1: NULL latency in us ($PROBES calls)"
    gw_run "$2" "$3"
    python3 "$clients" probe 192.0.2.2 3049 20 >/dev/null # the channel is up
    probe_held "alone:           "
    "$GW_FLOOD" 192.0.2.2 3049 "$FLOOD" >/tmp/flood.out & flood=$!
    sleep 3
    for _ in 1 2 3; do
        say "flood of $FLOOD outstanding: $(stats "?sessions=0" | python3 -c '
import json, sys
r = json.load(sys.stdin)["routes"][0]
for c in r.get("shared_upstream", {}).get("channels", []):
    print("channel: %d in flight, %d queued, grant %d, completion passes yielded %d;" % (c["calls_in_flight"], c["calls_queued"], c["credits_granted"], c.get("cq_yields", 0)), end=" ")
print("%d live sessions" % r["live_sessions"])')"
        sleep 1
    done
    local cpu0; cpu0=$(cpu_ticks "$flood")
    probe_held "beside the flood:"
    say "  CPU during the probe beside the flood: $(cpu_share "$cpu0" "$(cpu_ticks "$flood")")"
    kill "$flood"; wait "$flood" 2>/dev/null || true
    say "the flood: $(cat /tmp/flood.out)"
    gw_end
}
if [[ $FAIRNESS == 1 ]]; then
    always='"turn_budget_contended": 16, "shared_client_max_in_flight_contended": 0,'
    fair_run "one shared connection of 4 credits" 1 '"credits": 4,'
    fair_run "one shared connection of 64 credits" 1 '"credits": 64,'
    fair_run "one shared connection of 64 credits, one budget and cap always" 1 "\"credits\": 64, $always"
    fair_run "control: a connection per client, 4 credits each" 0 '"credits": 4,'
    fair_run "control, one budget always" 0 "\"credits\": 4, $always"
fi
JOB
GWVM_SHARE=$out GWVM_ENV=$env GWVM_TIMEOUT=${GWVM_TIMEOUT:-900} "$top/tests/vm/gwvm" run "$job"
rm -f "$job" "$env"
cat "$out/share.txt"
