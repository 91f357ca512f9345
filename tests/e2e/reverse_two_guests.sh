# gwvm: two-guests
# Reverse mode across the wire: guest A (192.0.2.1) runs the kernel NFS server on TCP and
# the gateway in reverse mode (RDMA 192.0.2.1:20049 -> TCP 192.0.2.1:2049); guest B
# (192.0.2.2) mounts the gateway with proto=rdma, so RoCEv2 crosses the Ethernet link
# between the guests, and runs the workload for NFSv3 and NFSv4.1 with 1 MiB
# rsize/wsize. B captures the link (udp/4791) with tshark and fails on any malformed or
# erroneous frame, on any RPC-over-RDMA message that is not a known type of Version One,
# and unless the capture shows the gateway's Write chunks, Reply chunks and RDMA_NOMSG
# replies and the client's Read chunks. A checks its counters and drains on SIGTERM.
set -u
source "$GW_SRC/tests/e2e/lib/gw-e2e.sh"
SHARE=$GW_OUT
MB=${E2E_BIG_MB:-8}

wait_for() { # wait_for FILE SECONDS
    local i
    for i in $(seq 1 "$2"); do [[ -e $1 ]] && return 0; sleep 1; done
    return 1
}

case $GWVM_ROLE in
a)
    rm -f "$SHARE"/a-ready "$SHARE"/b-done
    gwvm-net 192.0.2.1
    gwvm-nfsd /export tcp
    cat >"$E2E_WORK/gw.json" <<JSON
{ "routes": [ { "name": "nfs", "mode": "reverse",
                "listen": "rdma://192.0.2.1:20049", "upstream": "tcp://192.0.2.1:2049" } ],
  "stats": { "listen": "127.0.0.1:9464" } }
JSON
    gw_start reverse_a "$E2E_WORK/gw.json" || { touch "$SHARE"/a-ready; e2e_finish; }
    touch "$SHARE"/a-ready
    wait_for "$SHARE"/b-done 1500 || fail "guest B finished its workload"
    tot="s['routes'][0]['totals']"
    check "stats: READ data left by Write chunks ($(gw_jq "$tot['rdma_bytes']['write_chunk']") bytes)" \
        test "$(gw_jq "$tot['rdma_bytes']['write_chunk']")" -ge $((2 * MB * 1048576))
    check "stats: WRITE data came by RDMA Read ($(gw_jq "$tot['rdma_bytes']['read_chunk']") bytes)" \
        test "$(gw_jq "$tot['rdma_bytes']['read_chunk']")" -ge $((2 * MB * 1048576))
    check "stats: every call answered" test "$(gw_jq "$tot['replies']")" -eq "$(gw_jq "$tot['calls']")"
    check "stats: no protocol errors sent or seen" test "$(gw_jq "$tot['events']['err_chunk_sent'] + $tot['events']['err_vers_sent'] + $tot['events']['bad_transport_header']")" -eq 0
    gw_stop
    e2e_finish
    ;;
b)
    gwvm-net 192.0.2.2
    modprobe nfsv3; modprobe nfsv4; modprobe rpcrdma
    wait_for "$SHARE"/a-ready 300 || { fail "guest A's gateway is up"; touch "$SHARE"/b-done; e2e_finish; }
    dev=$(ls /sys/class/net | grep -v -E '^(lo|veth)' | head -1)
    cap=$E2E_WORK/roce.pcap
    tshark -i "$dev" -f 'udp port 4791' -w "$cap" -q 2>/dev/null & tsk=$!
    sleep 3
    for vers in 3 4.1; do
        mnt=/mnt/v$vers; mkdir -p "$mnt"
        if [[ $vers == 3 ]]; then src=192.0.2.1:/export opts=nolock; else src=192.0.2.1:/ opts=; fi
        echo "--- NFSv$vers over RoCEv2 to the gateway on guest A ($(date +%T))"
        ok_mount=0
        for i in $(seq 1 10); do
            mount -t nfs -o vers=$vers,proto=rdma,port=20049,rsize=1048576,wsize=1048576${opts:+,$opts} \
                "$src" "$mnt" && { ok_mount=1; break; }
            sleep 3
        done
        if ((ok_mount == 0)); then fail "mount NFSv$vers over RDMA from guest B"; continue; fi
        check "NFSv$vers mount is RDMA to guest A" grep -q "$mnt nfs.*proto=rdma.*addr=192.0.2.1" /proc/mounts
        d=$mnt/t-$vers; mkdir -p "$d"
        wl_bigfile "$d" "$MB"
        wl_oddsizes "$d"
        wl_symlink "$d"
        wl_rename_setattr "$d"
        wl_locks "$d"
        wl_bigdir "$d" 1000
        wl_concurrent "$d" 4 4
        rm -rf "$d"
        umount "$mnt"
    done
    sleep 2; kill "$tsk"; wait "$tsk" 2>/dev/null
    touch "$SHARE"/b-done

    echo "--- the capture ($(du -h "$cap" | cut -f1), $(date +%T))"
    T=(tshark -r "$cap" -2 -d udp.port==4791,infiniband)
    fields=$E2E_WORK/rpcordma.txt
    "${T[@]}" -Y rpcordma -T fields -E separator=' ' -E occurrence=f -e frame.number -e ip.src \
        -e rpcordma.version -e rpcordma.msg_type -e rpcordma.reads_count \
        -e rpcordma.writes_count -e rpcordma.reply_count >"$fields" 2>/dev/null
    n=$(wc -l <"$fields")
    check "the capture holds RPC-over-RDMA messages ($n)" test "$n" -gt 1000
    bad=$("${T[@]}" -Y '_ws.malformed || _ws.expert.severity >= error' -T fields -e frame.number \
          -e _ws.col.Info 2>/dev/null)
    check "no malformed or erroneous frame ($(grep -c . <<<"$bad") found)" test -z "$bad"
    [[ -n $bad ]] && head -20 <<<"$bad"
    # Every message is Version One and a known type; the gateway (192.0.2.1) sends only
    # RDMA_MSG and RDMA_NOMSG here (no errors in this workload), never MSGP or DONE.
    check "every message is RPC-over-RDMA Version One" \
        test "$(awk '$3 != 1' "$fields" | wc -l)" -eq 0
    check "every message is a known type (MSG, NOMSG, MSGP, DONE, ERROR)" \
        test "$(awk '$4 < 0 || $4 > 4' "$fields" | wc -l)" -eq 0
    check "the gateway sent only RDMA_MSG and RDMA_NOMSG" \
        test "$(awk '$2 == "192.0.2.1" && $4 != 0 && $4 != 1' "$fields" | wc -l)" -eq 0
    check "the gateway returned Write chunks (READ data by RDMA Write)" \
        test "$(awk '$2 == "192.0.2.1" && $6 > 0' "$fields" | wc -l)" -gt 0
    check "the gateway answered with RDMA_NOMSG into Reply chunks" \
        test "$(awk '$2 == "192.0.2.1" && $4 == 1 && $7 > 0' "$fields" | wc -l)" -gt 0
    check "the client sent Read chunks (WRITE data pulled by RDMA Read)" \
        test "$(awk '$2 == "192.0.2.2" && $5 > 0' "$fields" | wc -l)" -gt 0
    nreads=$("${T[@]}" -Y 'infiniband.bth.opcode == 12' 2>/dev/null | wc -l)
    check "RDMA Read requests from the gateway on the wire ($nreads)" test "$nreads" -gt 0
    e2e_finish
    ;;
esac
