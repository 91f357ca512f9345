# gwvm: two-guests
# gwvm: host-part
# Reverse mode across the wire: guest A (192.0.2.1) runs the kernel NFS server on TCP and
# the gateway in reverse mode (RDMA 192.0.2.1:20049 -> TCP 192.0.2.1:2049); guest B
# (192.0.2.2) mounts the gateway with proto=rdma, so RoCEv2 crosses the Ethernet link
# between the guests, and runs a short workload for NFSv3 and NFSv4.1 with 1 MiB
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
# Last, the plain reverse mount (plain_a, plain_b below): the server moves into a network
# namespace on A (tests/e2e/lib/reverse_plain.sh) so that A's address is the gateway's
# alone, portmapper on port 111 included; B, an ordinary client with rpcbind and
# rpc.statd, finds MOUNT, NLM and NSM through the gateway's portmapper (rpcinfo -p,
# showmount -e) and mounts with nothing but vers=3,proto=rdma,port=20049 (MOUNT over
# TCP, then mountproto=udp), locks on. The locks themselves, with a second client host
# (a third guest), are tests/e2e/reverse_locks.sh.
set -u
source "$GW_SRC/tests/e2e/lib/gw-e2e.sh"
source "$GW_SRC/tests/e2e/lib/reverse_plain.sh"
SHARE=$GW_OUT
MB=${E2E_BIG_MB:-8}

wait_for() { # wait_for FILE SECONDS
    local i
    for i in $(seq 1 "$2"); do [[ -e $1 ]] && return 0; sleep 1; done
    return 1
}

# --- the plain reverse mount: vers=3,proto=rdma with locks on, no nolock, no mountport ---
plain_a() {
    if ! rp_server; then
        fail "the NFS server in namespace srv started"; touch "$SHARE"/a2-ready; return
    fi
    cat >"$E2E_WORK/gw-plain.json" <<JSON
{ "routes": [ { "name": "plain", "mode": "reverse", "portmapper_port": 111,
                "listen": "rdma://192.0.2.1:20049", "upstream": "tcp://10.8.0.2:2049" } ],
  "stats": { "listen": "127.0.0.1:9464" } }
JSON
    gw_start reverse_plain "$E2E_WORK/gw-plain.json" || { touch "$SHARE"/a2-ready; return; }
    grep -E "portmapper|MOUNT|NLM|nlm" "$GW_LOG"
    touch "$SHARE"/a2-ready
    wait_for "$SHARE"/b2-done 900 || fail "guest B finished the plain-mount scenario"
    local rt="s['routes'][0]"
    calls() { gw_jq "sum(p['calls'] for p in ${rt}['totals']['procedures'] if p['program_name'] == '$1')"; }
    check "MOUNT calls relayed ($(calls mount))" test "$(calls mount)" -ge 4
    grep -E "nlm (relay|callback)" "$GW_LOG"
    gw_stop
}

plain_b() {
    local gw=192.0.2.1 m=/mnt/plain opts
    wait_for "$SHARE"/a2-ready 300 || { fail "guest A's plain-mount gateway is up"; return; }
    echo "--- the plain reverse mount: rpcbind and rpc.statd on the client ($(date +%T))"
    rpcbind -w && rpc.statd || fail "the client's rpcbind and rpc.statd started"
    rpcinfo -p $gw | tee "$E2E_WORK/rpcinfo-plain.txt"
    for v in 1 2 3; do
        check "rpcinfo -p GATEWAY lists MOUNT v$v on udp and tcp" \
            test "$(grep -cE "100005 +$v +(udp|tcp) +[0-9]+ +mountd" "$E2E_WORK/rpcinfo-plain.txt")" -eq 2
    done
    for v in 1 3 4; do
        check "rpcinfo -p GATEWAY lists NLM v$v on udp and tcp" \
            test "$(grep -cE "100021 +$v +(udp|tcp) +[0-9]+ +nlockmgr" "$E2E_WORK/rpcinfo-plain.txt")" -eq 2
    done
    check "rpcinfo -p GATEWAY lists NSM (status) v1" \
        grep -qE '100024 +1 +udp +[0-9]+ +status' "$E2E_WORK/rpcinfo-plain.txt"
    showmount -e $gw | tee "$E2E_WORK/showmount-plain.txt"
    check "showmount -e GATEWAY lists the server's export" grep -q '^/export ' "$E2E_WORK/showmount-plain.txt"
    mkdir -p $m
    for opts in vers=3,proto=rdma,port=20049 vers=3,proto=rdma,port=20049,mountproto=udp; do
        if ! mount -t nfs -o $opts $gw:/export $m; then fail "plain: mount -o $opts $gw:/export"; continue; fi
        ok "plain: mount -o $opts $gw:/export"
        grep " $m " /proc/mounts
        check "-o $opts: locks on (no nolock)" bash -c "! grep ' $m ' /proc/mounts | grep -q nolock"
        d=$m/plain-$$; mkdir -p $d
        wl_bigfile $d 4
        [[ $opts == *mountproto=udp ]] || wl_oddsizes $d
        rm -rf $d
        check "plain: umount after -o $opts" umount $m
    done
    touch "$SHARE"/b2-done
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
    rm -f "$SHARE"/a-ready "$SHARE"/b-done "$SHARE"/a2-ready "$SHARE"/b2-done
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
    plain_a
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
        # Every kind of message once each way, no more: the full matrix is
        # reverse_nfs.sh's, and the capture is decoded on the host.
        wl_bigfile "$d" "$MB"
        wl_oddsizes "$d"
        wl_symlink "$d"
        wl_locks "$d"
        wl_bigdir "$d" 300
        wl_concurrent "$d" 4 2
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
    plain_b
    e2e_finish
    ;;
esac
