#!/usr/bin/env bash
# bench/vm-throughput.sh BUILD_DIR [OUT_DIR]: the kernel NFS client against the kernel
# NFS server in one Soft-RoCE guest, over three paths -- directly over RDMA, directly
# over TCP, and through the gateway (forward mode: TCP to the gateway, RDMA to the
# server) -- for NFSv3 and NFSv4.2:
#   - O_DIRECT writes and reads, one I/O at a time (dd), at I/O sizes 4 KiB to 1 MiB
#     (the mount's rsize/wsize are the negotiated maximum, so one I/O is one RPC);
#   - a metadata run: create, stat and remove META_FILES files (also timed: the create
#     loop alone, and the GETATTRs the server counted).
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
# After the rounds, unless PROFILE=0: the gateway's system calls per RPC (strace -c) for
# 4 KiB I/O, in OUT_DIR/strace-4k.txt, and where the guest's CPU goes for the same I/O
# (perf samples, bench/vm-cpu-split.py: the gateway's and nfsd's CPU per RPC with the
# emulated NIC's share apart), in OUT_DIR/cpu-split-4k.txt.
# Environment: ROUNDS (2), META_FILES (600), SIZES ("4096 16384 65536 262144 1048576"),
# PROFILE (1), SCALE (1: each I/O size moves 4, 8, 8, 16 and 16 MiB per run, times SCALE),
# GATEWAY_B (unset: three paths): route options, as JSON members (for instance
# '"remote_invalidation": false'), of a second route of the same gateway on port 3050,
# run as a fourth path ("gateway B") in the same rounds, and profiled the same way
# (OUT_DIR/strace-4k-b.txt): a change measured against the defaults on the same host load.
# REVERSE (0): 1 adds the gateway in reverse mode as a path ("reverse": the client over
# RDMA to the gateway, the gateway over TCP to the server), and with GATEWAY_B a reverse
# route with those options too ("reverse B").
# The defaults take about 10 minutes in the guest on a 2-core host.
# Run it alone on the machine (it shares the VM lock with the end-to-end jobs):
#   flock /tmp/rpcrdma-vm.lock bench/vm-throughput.sh build-rel
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(realpath "${1:?usage: vm-throughput.sh BUILD_DIR [OUT_DIR]}")
out=${2:-$build/bench-out}
mkdir -p "$out"; out=$(realpath "$out"); rm -f "$out"/runs.tsv "$out"/strace-*.txt "$out"/cpu-split-*.txt
job=$(mktemp); env=$(mktemp)
cat >"$env" <<ENV
export GW_SRC=$top GW_BIN=$build/gateway/rpcrdma-gw
export ROUNDS=${ROUNDS:-2} META_FILES=${META_FILES:-600} PROFILE=${PROFILE:-1} SCALE=${SCALE:-1}
export SIZES="${SIZES:-4096 16384 65536 262144 1048576}"
export GATEWAY_B='${GATEWAY_B:-}' REVERSE=${REVERSE:-0}
ENV
cat >"$job" <<'JOB'
set -eu
gwvm-net >/dev/null
# TCP 2049 and RDMA 20049, so that the client can reach the server both ways.
gwvm-nfsd /export tcp+rdma >/dev/null
modprobe nfsv3; modprobe nfsv4
paths="rdma tcp gateway"; route_b=""
if [[ -n $GATEWAY_B ]]; then
    paths+=" gateway-b"
    route_b=", { \"name\": \"nfs-b\", \"mode\": \"forward\", \"listen\": \"tcp://192.0.2.2:3050\",
                \"upstream\": \"rdma://192.0.2.1:20049\", $GATEWAY_B }"
fi
if [[ $REVERSE == 1 ]]; then
    paths+=" reverse"
    route_b+=", { \"name\": \"rev\", \"mode\": \"reverse\", \"listen\": \"rdma://192.0.2.2:20050\",
                \"upstream\": \"tcp://192.0.2.1:2049\" }"
    if [[ -n $GATEWAY_B ]]; then
        paths+=" reverse-b"
        route_b+=", { \"name\": \"rev-b\", \"mode\": \"reverse\", \"listen\": \"rdma://192.0.2.2:20051\",
                    \"upstream\": \"tcp://192.0.2.1:2049\", $GATEWAY_B }"
    fi
fi
cat >/tmp/gw.json <<JSON
{ "routes": [ { "name": "nfs", "mode": "forward", "listen": "tcp://192.0.2.2:3049",
                "upstream": "rdma://192.0.2.1:20049" } $route_b ],
  "stats": { "listen": "127.0.0.1:9464" }, "logging": { "level": "warning" } }
JSON
"$GW_BIN" -c /tmp/gw.json & gw=$!
for _ in $(seq 50); do curl -fs http://127.0.0.1:9464/healthz >/dev/null && break; sleep 0.2; done
dd if=/dev/urandom of=/tmp/src bs=1M count=$((16 * SCALE)) status=none

nfsd_pids=$(pgrep -x nfsd | tr '\n' ' ')
# One awk over /proc (each process costs tens of milliseconds in the emulated guest),
# then the gateway's counters; the window of a run ends at the /proc/stat read.
snap() { # nfsd-ticks nfsd-rpcs gw-utime gw-stime guest-busy-ticks gw-sleeps nfsd-getattrs
    #      gw-calls gw-tcp-bytes
    local n
    # nfsd-getattrs: NFSv3 GETATTR calls plus NFSv4 GETATTR operations (any compound),
    # the attribute revalidations of a metadata run.
    # shellcheck disable=SC2086 # the pids are words
    awk -v g=/proc/$gw/stat -v gs=/proc/$gw/status '
        FILENAME == "/proc/stat" { if ($1 == "cpu") busy = $2 + $3 + $4 + $7 + $8 + $9; next }
        FILENAME == "/proc/net/rpc/nfsd" {
            if ($1 == "rpc") rpcs = $2
            if ($1 == "proc3") ga += $4     # proc3 COUNT null getattr ...
            if ($1 == "proc4ops") ga += $12 # proc4ops COUNT op0 ... op9 = OP_GETATTR
            next }
        FILENAME == g { gu = $14; gst = $15; next }
        FILENAME == gs { if ($1 == "voluntary_ctxt_switches:") sl = $2; next }
        { nt += $14 + $15 } # an nfsd thread: comm "(nfsd)" has no spaces
        END { printf "%d %d %d %d %d %d %d", nt, rpcs, gu, gst, busy, sl, ga }' \
        $(for n in $nfsd_pids; do echo /proc/$n/stat; done) /proc/net/rpc/nfsd /proc/$gw/stat \
        /proc/$gw/status /proc/stat
    curl -fs http://127.0.0.1:9464/metrics | awk '
        index($0, "rpcrdma_gw_rpc_calls_total{") == 1 { c += $NF }
        index($0, "rpcrdma_gw_tcp_bytes_total{") == 1 { b += $NF }
        END { printf " %.0f %.0f\n", c, b }'
}
record() { # VERS PATH WORKLOAD SIZE ROUND SECONDS MIB BEFORE AFTER [CREATE_SECONDS]
    local -a b=($8) a=($9); local i d=""
    for i in 0 1 2 3 4 5 6 7 8; do d+=$'\t'$((a[i] - b[i])); done
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s%s\t%s\n' "$1" "$2" "$3" "$4" "$5" "$6" "$7" "$d" "${10:-}" \
        >>/share/runs.tsv
}
dd_secs() { dd "$@" 2>&1 | awk '/copied/ {for (i = 1; i <= NF; i++) if ($i ~ /^s,?$/) print $(i - 1)}'; }
mib_for() { case $1 in 4096) echo $((4 * SCALE)) ;; 16384|65536) echo $((8 * SCALE)) ;; *) echo $((16 * SCALE)) ;; esac; }
meta() { # DIR -> "SECONDS CREATE_SECONDS": create, stat, remove of META_FILES files, and
    # the create loop alone (shell builtins but one rm, so that the guest's CPU time is
    # the file system's, not process start-up). The create loop's length matters: a file
    # whose attributes are older than the client's attribute cache timeout (acregmin,
    # 3 s by default) when it is stat'ed costs a GETATTR (docs/performance.md).
    local i t0=$EPOCHREALTIME t1
    mkdir "$1"
    for ((i = 0; i < META_FILES; i++)); do : >"$1/f$i"; done
    t1=$EPOCHREALTIME
    for ((i = 0; i < META_FILES; i++)); do [[ -e $1/f$i ]]; done
    rm -r "$1"
    echo "$EPOCHREALTIME $t0 $t1" | awk '{printf "%.3f %.3f", $1 - $2, $3 - $2}'
}

printf 'vers\tpath\tworkload\tsize\tround\tseconds\tmib\tnfsd_ticks\tnfsd_rpcs\tgw_uticks\tgw_sticks\tguest_ticks\tgw_sleeps\tnfsd_getattrs\tgw_calls\tgw_tcp_bytes\tcreate_seconds\n' \
    >/share/runs.tsv
echo "CLK_TCK $(getconf CLK_TCK)" >/share/clk
m=/mnt/b; mkdir -p $m
# NFSv4 opens wait out the server's grace period (10 s after start-up).
while (($(date +%s) < $(cat /run/gwvm-nfsd.started) + 12)); do sleep 1; done
for round in $(seq "$ROUNDS"); do
    for vers in 3 4.2; do
        for path in $paths; do
            case $path in
            rdma)      o="proto=rdma,port=20049"; a=192.0.2.1 ;;
            tcp)       o="proto=tcp,port=2049";   a=192.0.2.1 ;;
            gateway)   o="proto=tcp,port=3049";   a=192.0.2.2 ;;
            gateway-b) o="proto=tcp,port=3050";   a=192.0.2.2 ;;
            reverse)   o="proto=rdma,port=20050"; a=192.0.2.2 ;;
            reverse-b) o="proto=rdma,port=20051"; a=192.0.2.2 ;;
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
            record $vers $path meta "$META_FILES" $round "${s% *}" 0 "$b" "$a2" "${s#* }"
            umount $m
            echo "round $round NFSv$vers $path done ($(date +%T))"
        done
    done
done

calls() { curl -fs http://127.0.0.1:9464/metrics | awk 'index($0, "rpcrdma_gw_rpc_calls_total{") == 1 { c += $NF } END { printf "%.0f", c }'; }
io() { # SIZE COUNT: O_DIRECT write then read through the mount
    dd if=/tmp/src of=$m/f bs="$1" count="$2" oflag=direct status=none
    dd if=$m/f of=/dev/null bs="$1" count="$2" iflag=direct status=none
}
# Where the gateway's time goes (NFSv3 through the gateway): its system calls per RPC
# (strace -c over every thread) for 4 KiB I/O, in a file next to runs.tsv. Not in the
# table: strace slows what it watches.
if [[ ${PROFILE:-1} == 1 ]]; then
    for port in $([[ -n $GATEWAY_B ]] && echo 3050) 3049; do
        mount -t nfs -o vers=3,proto=tcp,port=$port,nolock 192.0.2.2:/export $m
        io 4096 64
        st_out=/share/strace-4k.txt
        if [[ $port == 3050 ]]; then st_out=/share/strace-4k-b.txt; fi
        c0=$(calls)
        strace -c -f -o $st_out $(for t in /proc/$gw/task/*; do echo -p "${t##*/}"; done) 2>/dev/null & st=$!
        sleep 2; io 4096 512; sleep 1; kill -INT $st; wait $st || true
        echo "gateway RPC calls during the trace: $(($(calls) - c0))" >>$st_out
        rm -f $m/f
        [[ $port == 3049 ]] || umount $m
    done
    # Where the guest's CPU goes, by process and, for the gateway and nfsd, by code:
    # system-wide cpu-clock samples with kernel call chains (bench/vm-cpu-split.py says
    # how they are split; the emulated NIC's share apart).
    if perf version >/dev/null 2>&1; then
        c0=$(calls) hz=1000
        # perf samples every CPU for as long as the I/O (io, in a shell of its own) runs.
        perf record -q -a -g -F $hz -e cpu-clock -o /tmp/perf.data -- \
            bash -c "m=$m; $(declare -f io); io 4096 1024" 2>/dev/null || true
        perf script -i /tmp/perf.data -F comm,tid,cpu,time,ip,sym,dso 2>/dev/null >/tmp/perf.txt || true
        python3 "$GW_SRC/bench/vm-cpu-split.py" /tmp/perf.txt "$(($(calls) - c0))" $hz \
            >/share/cpu-split-4k.txt 2>&1 || true
    fi
    rm -f $m/f; umount $m
fi
kill $gw; wait $gw || true
JOB
GWVM_SHARE=$out GWVM_ENV=$env GWVM_TIMEOUT=${GWVM_TIMEOUT:-1000} "$top/tests/vm/gwvm" run "$job"
rm -f "$job" "$env"
python3 "$top/bench/vm-report.py" "$out"
