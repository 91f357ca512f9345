# gwvm: two-guests
# gwvm: host-part
# Reverse mode across the wire: guest A (192.0.2.1) runs the kernel NFS server on TCP and
# the gateway in reverse mode (RDMA 192.0.2.1:20049 -> TCP 192.0.2.1:2049); guest B
# (192.0.2.2) mounts the gateway with proto=rdma, so RoCEv2 crosses the Ethernet link
# between the guests, and runs the workload for NFSv3 and NFSv4.1 with 1 MiB
# rsize/wsize. B captures the link (udp/4791) with tshark; the host decodes the capture
# and fails on any malformed or erroneous frame, on any RPC-over-RDMA message that is not a known type of Version One,
# and unless the capture shows the gateway's Write chunks, Reply chunks and RDMA_NOMSG
# replies and the client's Read chunks. A checks its counters and drains on SIGTERM.
# Then Version Two across the wire: B runs a forward gateway (TCP 192.0.2.2:3049 ->
# RDMA 192.0.2.1:20061) in front of a second reverse route on A, both at
# max_rpcrdma_version 2, and mounts NFSv4.1 through that chain on TCP; a second capture
# covers only this phase. tshark's dissector knows only Version One, so the host reads
# the version word of every RPC-over-RDMA header (the start of each Send) from the raw
# payload: every one in the second capture must say 2, and, as a check on that reader,
# every one in the first capture 1, as many as tshark decoded there.
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
host)
    roce_decode "$GW_OUT/roce.pcap" || e2e_finish
    n=$(roce_msgs 1)
    check "the capture holds RPC-over-RDMA messages ($n)" test "$n" -gt 1000
    nbad=$(grep -c . "$E2E_WORK/bad.tsv")
    check "no malformed or erroneous frame ($nbad found)" test "$nbad" -eq 0
    head -20 "$E2E_WORK/bad.tsv"
    # Every message is Version One and a known type; the gateway (192.0.2.1) sends only
    # RDMA_MSG and RDMA_NOMSG here (no errors in this workload), never MSGP or DONE.
    check "every message is RPC-over-RDMA Version One" test "$(roce_msgs 'vers != 1')" -eq 0
    check "every message is a known type (MSG, NOMSG, MSGP, DONE, ERROR)" \
        test "$(roce_msgs 'type < 0 || type > 4')" -eq 0
    check "the gateway sent only RDMA_MSG and RDMA_NOMSG" \
        test "$(roce_msgs 'src == "192.0.2.1" && type != 0 && type != 1')" -eq 0
    check "the gateway returned Write chunks (READ data by RDMA Write)" \
        test "$(roce_msgs 'src == "192.0.2.1" && writes > 0')" -gt 0
    check "the gateway answered with RDMA_NOMSG into Reply chunks" \
        test "$(roce_msgs 'src == "192.0.2.1" && type == 1 && reply > 0')" -gt 0
    check "the client sent Read chunks (WRITE data pulled by RDMA Read)" \
        test "$(roce_msgs 'src == "192.0.2.2" && reads > 0')" -gt 0
    # BTH opcode 12: RDMA READ Request.
    nreads=$(roce_frames 'src == "192.0.2.1" && op == 12')
    check "RDMA Read requests from the gateway on the wire ($nreads)" test "$nreads" -gt 0
    # The header reader, checked on the Version One capture against tshark's count.
    roce_hdr_words "$GW_OUT/roce.pcap" >"$E2E_WORK/hdr-v1.txt"
    nv1=$(awk '$4 == 1' "$E2E_WORK/hdr-v1.txt" | wc -l)
    check "raw headers of the first capture: all Version One ($nv1 of $(wc -l <"$E2E_WORK/hdr-v1.txt")), as many as tshark decoded ($n) within 1%" \
        test "$nv1" -eq "$(wc -l <"$E2E_WORK/hdr-v1.txt")" -a $(((nv1 - n) * 100)) -le "$n" -a $(((n - nv1) * 100)) -le "$n"
    roce_hdr_words "$GW_OUT/roce-v2.pcap" >"$E2E_WORK/hdr-v2.txt"
    nv2=$(wc -l <"$E2E_WORK/hdr-v2.txt")
    check "the Version Two capture holds RPC-over-RDMA headers from both gateways ($nv2)" \
        test "$nv2" -gt 100 -a "$(awk '$1 == "192.0.2.1"' "$E2E_WORK/hdr-v2.txt" | wc -l)" -gt 0 \
        -a "$(awk '$1 == "192.0.2.2"' "$E2E_WORK/hdr-v2.txt" | wc -l)" -gt 0
    check "every RPC-over-RDMA header on the wire in the chain is Version Two ($(awk '$4 != 2' "$E2E_WORK/hdr-v2.txt" | wc -l) not)" \
        test "$(awk '$4 != 2' "$E2E_WORK/hdr-v2.txt" | wc -l)" -eq 0
    awk '$4 != 2' "$E2E_WORK/hdr-v2.txt" | head -5
    ((E2E_FAILS)) || rm -f "$GW_OUT/roce.pcap" "$GW_OUT/roce-v2.pcap"
    e2e_finish
    exit 0 # the rest is the guests' part
    ;;
a)
    rm -f "$SHARE"/a-ready "$SHARE"/b-done
    gwvm-net 192.0.2.1
    gwvm-nfsd /export tcp
    cat >"$E2E_WORK/gw.json" <<JSON
{ "routes": [ { "name": "nfs", "mode": "reverse",
                "listen": "rdma://192.0.2.1:20049", "upstream": "tcp://192.0.2.1:2049" },
              { "name": "v2core", "mode": "reverse", "max_rpcrdma_version": 2,
                "listen": "rdma://192.0.2.1:20061", "upstream": "tcp://192.0.2.1:2049" } ],
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
    v2="s['routes'][1]['totals']"
    check "stats: the Version Two route answered every call ($(gw_jq "$v2['calls']")), no protocol errors" \
        test "$(gw_jq "$v2['calls']")" -gt 0 -a "$(gw_jq "$v2['replies']")" -eq "$(gw_jq "$v2['calls']")" \
        -a "$(gw_jq "$v2['events']['err_chunk_sent'] + $v2['events']['err_vers_sent'] + $v2['events']['bad_transport_header']")" -eq 0
    gw_stop
    e2e_finish
    ;;
b)
    gwvm-net 192.0.2.2
    modprobe nfsv3; modprobe nfsv4; modprobe rpcrdma
    wait_for "$SHARE"/a-ready 300 || { fail "guest A's gateway is up"; touch "$SHARE"/b-done; e2e_finish; }
    roce_capture_start
    sleep 2
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
    roce_capture_stop
    echo "--- Version Two: NFSv4.1 on TCP -> B's forward gateway -> RoCEv2 -> A's reverse gateway ($(date +%T))"
    cat >"$E2E_WORK/gw-b.json" <<JSON
{ "routes": [ { "name": "v2edge", "mode": "forward", "max_rpcrdma_version": 2,
                "listen": "tcp://192.0.2.2:3049", "upstream": "rdma://192.0.2.1:20061" } ],
  "stats": { "listen": "127.0.0.1:9464" } }
JSON
    if gw_start forward_b "$E2E_WORK/gw-b.json"; then
        roce_capture_start roce-v2.pcap
        cm=/mnt/chain; mkdir -p "$cm"
        if mount -t nfs -o vers=4.1,proto=tcp,port=3049,rsize=1048576,wsize=1048576 192.0.2.2:/ "$cm"; then
            mkdir -p "$cm/v2"
            wl_bigfile "$cm/v2" 4
            wl_oddsizes "$cm/v2"
            check "stats: B's forward session speaks Version Two" \
                test "$(gw_jq "' '.join(str(x['rpcrdma_version']) for x in s['routes'][0]['sessions'])")" = "2"
            rm -rf "$cm/v2"
            umount "$cm"
        else
            fail "mount NFSv4.1 through the Version Two chain"
        fi
        roce_capture_stop
        check "stats: no fallback, no bad transport header on B ($(gw_jq "s['routes'][0]['totals']['events']['rpcrdma_version_fallback'] + s['routes'][0]['totals']['events']['bad_transport_header']"))" \
            test "$(gw_jq "s['routes'][0]['totals']['events']['rpcrdma_version_fallback'] + s['routes'][0]['totals']['events']['bad_transport_header']")" -eq 0
        gw_check_quiet
        gw_stop
    fi
    touch "$SHARE"/b-done
    e2e_finish
    ;;
esac
