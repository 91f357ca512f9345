#!/usr/bin/env bash
# bench/vm-stats-scrape.sh BUILD_DIR [OUT_DIR]: what scraping /stats costs a copy through
# the gateway (issue 32), in one Soft-RoCE guest: the kernel NFS server over RDMA only
# behind a forward route, an NFSv3 mount of the gateway with rsize = wsize = 4 KiB, and
#   - IDLE idle client connections held open to the route (sessions that every /stats
#     document lists: the render's cost grows with them);
#   - a copy of MB MiB written and then read back with O_DIRECT, 4 KiB at a time (dd), so
#     that every 4 KiB is one RPC through the gateway and its latency is the copy's rate;
#   - each copy once with nobody scraping and once while one process (Python, one
#     connection per request as Prometheus makes) GETs /stats RATE times a second; ROUNDS
#     rounds, the two kinds interleaved.
# For every run it prints the write and read rates (MB/s), the scrapes made and their
# mean time; at the end a markdown table of the medians. It checks that the data read back
# equals what was written (a copy that fails that is reported, not timed), and never
# passes or fails on a figure. The guest is emulated (TCG): compare the rows, not with
# hardware.
# Environment: ROUNDS (3), MB (8), IDLE (1000), RATE (20). The defaults take about 6
# minutes in the guest on a 2-core host.
# Run it alone on the machine (one guest at a time), on a Release build:
#   flock /tmp/rpcrdma-vm.lock bench/vm-stats-scrape.sh build-rel
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(realpath "${1:?usage: vm-stats-scrape.sh BUILD_DIR [OUT_DIR]}")
out=${2:-$build/bench-out}
mkdir -p "$out"; out=$(realpath "$out"); rm -f "$out"/stats-scrape.txt "$out"/gw-scrape.log
job=$(mktemp); env=$(mktemp)
cat >"$env" <<ENV
export GW_SRC=$top GW_BIN=$build/gateway/rpcrdma-gw
export ROUNDS=${ROUNDS:-3} MB=${MB:-8} IDLE=${IDLE:-1000} RATE=${RATE:-20}
ENV
cat >"$job" <<'JOB'
set -eu
gwvm-net >/dev/null
gwvm-nfsd /export rdma >/dev/null
modprobe nfsv3
ulimit -n 8192
say() { echo "$*" | tee -a /share/stats-scrape.txt; }
cat >/tmp/gw.json <<JSON
{ "routes": [ { "name": "nfs", "mode": "forward", "max_sessions": $((IDLE + 64)),
                "max_sessions_per_client": $((IDLE + 64)),
                "listen": "tcp://192.0.2.2:2049", "upstream": "rdma://192.0.2.1:20049" } ],
  "stats": { "listen": "127.0.0.1:9464" }, "logging": { "level": "warning" } }
JSON
"$GW_BIN" -c /tmp/gw.json 2>>/share/gw-scrape.log &
gw=$!
for _ in $(seq 50); do curl -fs http://127.0.0.1:9464/healthz >/dev/null && break; sleep 0.2; done
# The idle clients: connected, silent, held until the end (each is a session the
# gateway keeps, with its RDMA connection to the server).
python3 - "$IDLE" >/tmp/idle.out 2>&1 <<'PY' &
import socket, sys, time
held = []
for _ in range(int(sys.argv[1])):
    s = socket.create_connection(("192.0.2.2", 2049))
    held.append(s)
print("holding", len(held), flush=True)
time.sleep(3600)
PY
idle=$!
for _ in $(seq 600); do grep -q holding /tmp/idle.out 2>/dev/null && break; sleep 1; done
sessions=$(curl -fs http://127.0.0.1:9464/stats | python3 -c 'import json,sys; print(json.load(sys.stdin)["routes"][0]["live_sessions"])')
say "gateway sessions: $sessions (idle clients: $IDLE)"
mkdir -p /mnt/g
mount -t nfs -o vers=3,proto=tcp,port=2049,nolock,rsize=4096,wsize=4096 192.0.2.2:/export /mnt/g
head -c $((MB << 20)) /dev/urandom >/tmp/src
sum=$(md5sum </tmp/src)

# scraper SECONDS_FILE: GET /stats RATE times a second until killed; on SIGTERM it
# writes "COUNT MEAN_MS" to the file.
scraper() {
    exec python3 - "$RATE" "$1" <<'PY'
import http.client, signal, sys, time
rate, outf = float(sys.argv[1]), sys.argv[2]
n, spent, stop = 0, 0.0, False
def end(*_):
    global stop
    stop = True
signal.signal(signal.SIGTERM, end)
t_next = time.monotonic()
while not stop:
    t0 = time.monotonic()
    c = http.client.HTTPConnection("127.0.0.1", 9464, timeout=10)
    c.request("GET", "/stats")
    c.getresponse().read()
    c.close()
    spent += time.monotonic() - t0
    n += 1
    t_next += 1 / rate
    time.sleep(max(0, t_next - time.monotonic()))
open(outf, "w").write("%d %.1f\n" % (n, 1000 * spent / max(n, 1)))
PY
}

# run KIND: one copy out and back; prints "KIND WRITE_MBS READ_MBS SCRAPES MEAN_MS".
run() {
    local kind=$1 sp="" t0 t1 t2 w r sc="0 0"
    rm -f /tmp/scrapes
    if [[ $kind == scraped ]]; then scraper /tmp/scrapes & sp=$!; sleep 0.5; fi
    t0=$(date +%s.%N)
    dd if=/tmp/src of=/mnt/g/f bs=4k oflag=direct status=none
    t1=$(date +%s.%N)
    got=$(dd if=/mnt/g/f bs=4k iflag=direct status=none | md5sum)
    t2=$(date +%s.%N)
    if [[ -n $sp ]]; then kill -TERM "$sp"; wait "$sp" || true; sc=$(cat /tmp/scrapes 2>/dev/null || echo "0 0"); fi
    rm -f /mnt/g/f
    if [[ $got != "$sum" ]]; then say "$kind: DATA MISMATCH (not timed)"; return; fi
    w=$(echo "$MB / ($t1 - $t0)" | bc -l); r=$(echo "$MB / ($t2 - $t1)" | bc -l)
    printf '%s %.2f %.2f %s\n' "$kind" "$w" "$r" "$sc" | tee -a /share/runs.txt
}
rm -f /share/runs.txt
for round in $(seq 1 "$ROUNDS"); do
    if ((round % 2)); then run quiet; run scraped; else run scraped; run quiet; fi
done
umount /mnt/g
kill "$idle" 2>/dev/null || true
kill "$gw"; wait "$gw" || true
python3 - "$MB" "$sessions" "$RATE" /share/runs.txt <<'PY' | tee -a /share/stats-scrape.txt
import statistics, sys
mb, sessions, rate = sys.argv[1], sys.argv[2], sys.argv[3]
rows = {}
for line in open(sys.argv[4]):
    k, w, r, n, ms = line.split()
    rows.setdefault(k, []).append((float(w), float(r), int(n), float(ms)))
print("| /stats | runs | write MB/s (4 KiB, O_DIRECT) | read MB/s | scrapes per run | mean scrape ms |")
print("|---|---|---|---|---|---|")
for k, label in (("quiet", "not scraped"), ("scraped", "GET %s times a second" % rate)):
    v = rows.get(k, [])
    if not v:
        continue
    med = lambda i: statistics.median(x[i] for x in v)
    print("| %s | %d | %.2f | %.2f | %s | %s |" % (label, len(v), med(0), med(1),
          "%.0f" % med(2) if k == "scraped" else "-", "%.1f" % med(3) if k == "scraped" else "-"))
print("(%s MiB each way, %s sessions on the route)" % (mb, sessions))
PY
JOB
GWVM_SHARE=$out GWVM_ENV=$env "$top/tests/vm/gwvm" run "$job"
rm -f "$job" "$env"
