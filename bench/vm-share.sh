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
#     calls one at a time) alone, then while another client keeps FLOOD NULL calls
#     outstanding (more than its credits: the rest wait in the gateway's fair queue);
#     with the queue-time histograms of both clients (/stats latency.queue).
# It prints figures (and keeps them in OUT_DIR/share.txt); it never passes or fails.
# The guest is emulated (TCG): latencies compare the two runs, not hardware.
# Run it alone on the machine (it shares the VM lock with the end-to-end jobs), on a
# Release build (ASan's shadow memory would be counted):
#   flock /tmp/rpcrdma-vm.lock bench/vm-share.sh build-rel
# FAIRNESS=0 runs the memory part only.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(realpath "${1:?usage: vm-share.sh BUILD_DIR [OUT_DIR]}")
out=${2:-$build/bench-out}
mkdir -p "$out"; out=$(realpath "$out"); rm -f "$out"/share.txt
job=$(mktemp); env=$(mktemp)
cat >"$env" <<ENV
export GW_SRC=$top GW_BIN=$build/gateway/rpcrdma-gw
export SHARED_CLIENTS="${SHARED_CLIENTS-200 1000}" OWN_CLIENTS="${OWN_CLIENTS-50}"
export PROBES=${PROBES:-300} FLOOD=${FLOOD:-160} FAIRNESS=${FAIRNESS:-1}
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
for k, v in rss.most_common(5):
    print("  resident %.1f MiB in %d mapping(s): %s" % (v / 1024, n[k], k))
PY
}
memory_run() { # UPSTREAM_CONNECTIONS N...
    local conns=$1 n b a; shift
    for n in "$@"; do
        gw_run "$conns"
        b=$(mem)
        coproc idle { python3 "$clients" idle 192.0.2.2 3049 "$n"; }
        read -r line <&"${idle[0]}"
        sleep 1
        a=$(mem)
        local live
        live=$(stats "?sessions=0" | python3 -c 'import json,sys; print(json.load(sys.stdin)["routes"][0]["live_sessions"])')
        echo "$conns $n $live $b $a" | awk '{
            rss0 = $4; reg0 = $5; rss = $6; reg = $7; n = $2
            printf "upstream_connections %d, %d idle clients (%d live sessions): RSS %.1f MiB (%.1f before the first), registered %.1f MiB (%.1f); per client: %.1f KiB in all ((RSS + registered) / clients), %.1f KiB over the empty gateway\n",
                $1, n, $3, rss / 1024, rss0 / 1024, reg / 1048576, reg0 / 1048576,
                (rss + reg / 1024) / n, ((rss - rss0) + (reg - reg0) / 1024) / n }' | tee -a /share/share.txt
        smaps_top | tee -a /share/share.txt
        eval "exec ${idle[1]}>&-"
        wait "$idle_PID" 2>/dev/null || true
        gw_end
    done
}

say "== $(date -u +%F) memory per idle client"
# shellcheck disable=SC2086 # lists of numbers
[[ -n $SHARED_CLIENTS ]] && memory_run 2 $SHARED_CLIENTS
# shellcheck disable=SC2086
[[ -n $OWN_CLIENTS ]] && memory_run 0 $OWN_CLIENTS
if [[ $FAIRNESS == 0 ]]; then exit 0; fi

# A NULL is answered faster than a Python client in the emulated guest sends the next,
# so with the server's 64 credits the flood's calls would wait in its own socket, not in
# the gateway. With 4 credits (2 per client at most) the gateway holds them queued.
say "== fairness: one shared connection of 4 credits, NULL latency in us ($PROBES calls)"
gw_run 1 '"credits": 4,'
python3 "$clients" probe 192.0.2.2 3049 20 >/dev/null # the channel is up
say "alone:                     $(python3 "$clients" probe 192.0.2.2 3049 "$PROBES")"
python3 "$clients" flood 192.0.2.2 3049 "$FLOOD" & flood=$!
sleep 3
for _ in 1 2 3; do
q=$(stats "?sessions=0" | python3 -c 'import json,sys; c=json.load(sys.stdin)["routes"][0]["shared_upstream"]["channels"][0]; print("%d in flight, %d queued, grant %d" % (c["calls_in_flight"], c["calls_queued"], c["credits_granted"]))')
say "flood of $FLOOD outstanding: $q"
sleep 1
done
say "beside the flood:          $(python3 "$clients" probe 192.0.2.2 3049 "$PROBES")"
stats | python3 -c '
import json, sys
r = json.load(sys.stdin)["routes"][0]
for s in r["sessions"]:
    q = s["counters"]["latency"]["queue"]
    if q["count"]:
        print("queue time of %s: %d calls, mean %.0f us" % (s["client"], q["count"], q["sum_us"] / q["count"]))
q = r["totals"]["latency"]["queue"]
print("queue time of the route: %d calls, mean %.0f us" % (q["count"], q["sum_us"] / q["count"]))
' | tee -a /share/share.txt
kill "$flood"; wait "$flood" 2>/dev/null || true
gw_end
JOB
GWVM_SHARE=$out GWVM_ENV=$env GWVM_TIMEOUT=${GWVM_TIMEOUT:-900} "$top/tests/vm/gwvm" run "$job"
rm -f "$job" "$env"
cat "$out/share.txt"
