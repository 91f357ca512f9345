#!/usr/bin/env bash
# bench/vm-throughput.sh BUILD_DIR [OUT_DIR]: the kernel NFS client against the kernel
# NFS server in one Soft-RoCE guest, over three paths -- directly over RDMA, directly
# over TCP, and through the gateway (forward mode: TCP to the gateway, RDMA to the
# server) -- for NFSv3 and NFSv4.2:
#   - O_DIRECT writes and reads, one I/O at a time (dd), at I/O sizes 4 KiB to 1 MiB
#     (the mount's rsize/wsize are the negotiated maximum, so one I/O is one RPC);
#   - a metadata run: create, stat and remove META_FILES files.
# For every run it records the wall time, the RPCs the kernel NFS server counted
# (/proc/net/rpc/nfsd), the CPU time of the nfsd threads and of the gateway process
# (utime+stime from /proc/PID/stat; the gateway's user and system time apart, and how
# often its main thread went to sleep, voluntary_ctxt_switches of /proc/PID/status), the
# gateway's calls and TCP bytes (/metrics), and the guest's busy CPU time (/proc/stat).
# Runs are interleaved over ROUNDS rounds; the report (bench/vm-report.py) gives the
# median rate and the CPU ratios of the summed runs, and a PNG plot of MB/s against
# I/O size when gnuplot is installed.
# It prints figures; it never passes or fails. The guest is emulated (TCG), so the
# figures compare the paths on the same machine, not with hardware.
#
# Environment: ROUNDS (3), META_FILES (600), SIZES ("4096 16384 65536 262144 1048576").
# Run it alone on the machine (it shares the VM lock with the end-to-end jobs):
#   flock /tmp/rpcrdma-vm.lock bench/vm-throughput.sh build-rel
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(realpath "${1:?usage: vm-throughput.sh BUILD_DIR [OUT_DIR]}")
out=${2:-$build/bench-out}
mkdir -p "$out"; out=$(realpath "$out"); rm -f "$out/runs.tsv"
job=$(mktemp); env=$(mktemp)
cat >"$env" <<ENV
export GW_SRC=$top GW_BIN=$build/gateway/rpcrdma-gw
export ROUNDS=${ROUNDS:-3} META_FILES=${META_FILES:-600}
export SIZES="${SIZES:-4096 16384 65536 262144 1048576}"
ENV
cat >"$job" <<'JOB'
set -eu
gwvm-net >/dev/null
# TCP 2049 and RDMA 20049, so that the client can reach the server both ways.
gwvm-nfsd /export tcp+rdma >/dev/null
modprobe nfsv3; modprobe nfsv4
cat >/tmp/gw.json <<JSON
{ "routes": [ { "name": "nfs", "mode": "forward", "listen": "tcp://192.0.2.2:3049",
                "upstream": "rdma://192.0.2.1:20049" } ],
  "stats": { "listen": "127.0.0.1:9464" }, "logging": { "level": "warning" } }
JSON
"$GW_BIN" -c /tmp/gw.json & gw=$!
for _ in $(seq 50); do curl -fs http://127.0.0.1:9464/healthz >/dev/null && break; sleep 0.2; done
dd if=/dev/urandom of=/tmp/src bs=1M count=32 status=none

ticks() { # PID... -> utime+stime, clock ticks (comm of nfsd and rpcrdma-gw has no spaces)
    local p t=0
    for p in "$@"; do t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done
    echo $t
}
metric() { # NAME -> the sum of its series in /metrics
    curl -fs http://127.0.0.1:9464/metrics | awk -v n="$1" 'index($0, n "{") == 1 {s += $NF} END {printf "%.0f", s}'
}
snap() { # nfsd-ticks nfsd-rpcs gw-utime gw-stime gw-calls gw-tcp-bytes guest-busy-ticks gw-sleeps
    echo "$(ticks $(pgrep -x nfsd)) $(awk '$1 == "rpc" {print $2}' /proc/net/rpc/nfsd)" \
         "$(awk '{print $14, $15}' /proc/$gw/stat)" \
         "$(metric rpcrdma_gw_rpc_calls_total) $(metric rpcrdma_gw_tcp_bytes_total)" \
         "$(awk '$1 == "cpu" {print $2 + $3 + $4 + $7 + $8 + $9}' /proc/stat)" \
         "$(awk '$1 == "voluntary_ctxt_switches:" {print $2}' /proc/$gw/status)"
}
record() { # VERS PATH WORKLOAD SIZE ROUND SECONDS MIB BEFORE AFTER
    local -a b=($8) a=($9); local i d=""
    for i in 0 1 2 3 4 5 6 7; do d+=$'\t'$((a[i] - b[i])); done
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s%s\n' "$1" "$2" "$3" "$4" "$5" "$6" "$7" "$d" >>/share/runs.tsv
}
dd_secs() { dd "$@" 2>&1 | awk '/copied/ {for (i = 1; i <= NF; i++) if ($i ~ /^s,?$/) print $(i - 1)}'; }
mib_for() { case $1 in 4096) echo 8 ;; 16384|65536) echo 16 ;; *) echo 32 ;; esac; }
meta() { # DIR -> seconds for create, stat, remove of META_FILES files
    python3 - "$1" "$META_FILES" <<'PY'
import os, sys, time
d, n = sys.argv[1], int(sys.argv[2])
os.mkdir(d)
t = time.monotonic()
for i in range(n):
    os.close(os.open(f"{d}/f{i}", os.O_CREAT | os.O_WRONLY, 0o644))
for i in range(n):
    os.stat(f"{d}/f{i}")
for i in range(n):
    os.unlink(f"{d}/f{i}")
print(f"{time.monotonic() - t:.3f}")
os.rmdir(d)
PY
}

printf 'vers\tpath\tworkload\tsize\tround\tseconds\tmib\tnfsd_ticks\tnfsd_rpcs\tgw_uticks\tgw_sticks\tgw_calls\tgw_tcp_bytes\tguest_ticks\tgw_sleeps\n' >/share/runs.tsv
echo "CLK_TCK $(getconf CLK_TCK)" >/share/clk
m=/mnt/b; mkdir -p $m
# NFSv4 opens wait out the server's grace period (10 s after start-up).
while (($(date +%s) < $(cat /run/gwvm-nfsd.started) + 12)); do sleep 1; done
for round in $(seq "$ROUNDS"); do
    for vers in 3 4.2; do
        for path in rdma tcp gateway; do
            case $path in
            rdma)    o="proto=rdma,port=20049"; a=192.0.2.1 ;;
            tcp)     o="proto=tcp,port=2049";   a=192.0.2.1 ;;
            gateway) o="proto=tcp,port=3049";   a=192.0.2.2 ;;
            esac
            if [[ $vers == 3 ]]; then o+=",nolock"; e=$a:/export; else e=$a:/; fi
            mount -t nfs -o vers=$vers,$o $e $m
            for size in $SIZES; do
                mib=$(mib_for "$size"); n=$((mib * 1048576 / size))
                b=$(snap); s=$(dd_secs if=/tmp/src of=$m/f bs=$size count=$n oflag=direct); a2=$(snap)
                record $vers $path write $size $round "$s" $mib "$b" "$a2"
                b=$(snap); s=$(dd_secs if=$m/f of=/dev/null bs=$size count=$n iflag=direct); a2=$(snap)
                record $vers $path read $size $round "$s" $mib "$b" "$a2"
                rm -f $m/f
            done
            b=$(snap); s=$(meta $m/meta); a2=$(snap)
            record $vers $path meta "$META_FILES" $round "$s" 0 "$b" "$a2"
            umount $m
            echo "round $round NFSv$vers $path done ($(date +%T))"
        done
    done
done
kill $gw; wait $gw || true
JOB
GWVM_SHARE=$out GWVM_ENV=$env GWVM_TIMEOUT=${GWVM_TIMEOUT:-1000} "$top/tests/vm/gwvm" run "$job"
rm -f "$job" "$env"
python3 "$top/bench/vm-report.py" "$out"
