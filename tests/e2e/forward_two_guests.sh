# gwvm: two-guests
# gwvm: host-part
# Forward mode with RoCEv2 on a wire: guest A is the NFS server alone (kernel nfsd on
# RDMA only, 192.0.2.1); guest B runs the gateway (TCP 192.0.2.2:2049 -> RDMA
# 192.0.2.1:20049) and the kernel NFS client, and captures the RDMA traffic between its
# gateway and the server with tshark. A short workload runs for NFSv3 and 4.2 with
# checksums (the full matrix is forward_nfs.sh's). The host then decodes the capture: every captured RPC-over-RDMA message
# must decode, be of a type the gateway may send or receive, and no frame may be
# malformed.
# NFSv3 runs with nolock here: NLM goes to the mount's address, which is the gateway's
# host, not the server (the one-guest job covers NFSv3 locks through the gateway).
set -u
source "$GW_SRC/tests/e2e/lib/gw-e2e.sh"

if [[ $GWVM_ROLE == host ]]; then
    roce_decode "$GW_OUT/roce.pcap" || e2e_finish
    total=$(roce_msgs 1)
    check "tshark decoded the RPC-over-RDMA traffic ($total messages)" test "$total" -gt 1000
    check "every message is Version One" test "$(roce_msgs 'vers != 1')" -eq 0
    # The gateway sends RDMA_MSG/RDMA_NOMSG calls; the server answers RDMA_MSG/RDMA_NOMSG.
    check "only RDMA_MSG and RDMA_NOMSG were exchanged (no RDMA_ERROR, MSGP, DONE)" \
        test "$(roce_msgs 'type != 0 && type != 1')" -eq 0
    # One known dissector fault is told apart, precisely: the Linux server fills a Reply
    # chunk with separate RDMA Writes (head, pages, tail), and Wireshark 4.0 reassembles
    # them short of the length the server reports in its RDMA_NOMSG (by the 8-byte
    # tail), then finds the NFS reply cut. Such a frame is the server's RDMA_NOMSG with a
    # reassembled length below its Reply chunk's; the client's listing of the same
    # directories was checked complete in the guest. Any other malformed frame fails.
    bad=$E2E_WORK/bad.tsv
    awk -F'\t' '$2 == "192.0.2.1" && $3 == 1 && $5 != "" && $5 + 0 < $4 + 0' "$bad" >"$E2E_WORK/short.tsv"
    awk -F'\t' '!($2 == "192.0.2.1" && $3 == 1 && $5 != "" && $5 + 0 < $4 + 0)' "$bad" >"$E2E_WORK/bad-other.tsv"
    if [[ -s $E2E_WORK/short.tsv ]]; then
        echo "Reply chunks that tshark reassembled short of the server's length (its fault):"
        head -5 "$E2E_WORK/short.tsv"
    fi
    nbad=$(grep -c . "$E2E_WORK/bad-other.tsv")
    check "no malformed or erroneous frame in the capture ($nbad)" test "$nbad" -eq 0
    head -20 "$E2E_WORK/bad-other.tsv"
    reads=$(roce_msgs 'reads > 0'); writes=$(roce_msgs 'writes > 0')
    check "Read chunks ($reads) and Write chunks ($writes) crossed the wire" test "$reads" -gt 0 -a "$writes" -gt 0
    # The SETATTR of a 190-user NFSv4 ACL has no DDP-eligible item and exceeds 4 KiB.
    p0=$(roce_msgs 'src == "192.0.2.2" && type == 1 && reads > 0')
    check "the gateway sent Position-Zero long calls (RDMA_NOMSG with a Read chunk: $p0)" test "$p0" -gt 0
    # The capture is kept for a failed run only (it is a few hundred MB).
    ((E2E_FAILS)) || rm -f "$GW_OUT/roce.pcap"
    e2e_finish
    exit 0 # the rest is the guests' part
fi

if [[ $GWVM_ROLE == a ]]; then
    gwvm-net 192.0.2.1
    gwvm-nfsd /export rdma
    touch "$GW_OUT/server-ready"
    for _ in $(seq 1 1500); do [[ -e $GW_OUT/client-done ]] && break; sleep 1; done
    [[ -e $GW_OUT/client-done ]] || { echo "server: the client never finished"; exit 1; }
    exit 0
fi

gwvm-net 192.0.2.2
modprobe nfsv3; modprobe nfsv4
for _ in $(seq 1 120); do [[ -e $GW_OUT/server-ready ]] && break; sleep 1; done
roce_capture_start

cat >"$E2E_WORK/gw.json" <<JSON
{ "routes": [ { "name": "nfs", "mode": "forward",
                "listen": "tcp://192.0.2.2:2049", "upstream": "rdma://192.0.2.1:20049" } ],
  "stats": { "listen": "127.0.0.1:9464" } }
JSON
gw_start forward "$E2E_WORK/gw.json" || { touch "$GW_OUT/client-done"; e2e_finish; }

# A focused run: the full matrix of versions and workloads is forward_nfs.sh's; here
# every kind of RPC-over-RDMA message the gateway exchanges crosses the wire once in
# each direction (Read, Write and Reply chunks, Position-Zero, inline), with data enough
# for tshark to check and no more (the capture is decoded on the host).
for vers in 3 4.2; do
    m=/mnt/v$vers; mkdir -p $m
    echo "--- NFSv$vers over the wire"
    if [[ $vers == 3 ]]; then
        opts=vers=3,proto=tcp,port=2049,nolock,mountaddr=192.0.2.1,mountproto=tcp; src=192.0.2.2:/export
    else
        opts=vers=$vers,proto=tcp,port=2049; src=192.0.2.2:/
    fi
    mount -t nfs -o "$opts,rsize=1048576,wsize=1048576" $src $m || { fail "mount NFSv$vers"; continue; }
    d=$m/w$vers; mkdir -p $d
    wl_bigfile $d 8
    wl_oddsizes $d
    wl_symlink $d
    [[ $vers != 3 ]] && wl_locks $d
    [[ $vers == 3 ]] && wl_bigacl $d 300
    [[ $vers != 3 ]] && wl_nfs4acl $d 190
    wl_bigdir $d 300
    wl_concurrent $d 4 2
    rm -rf $d
    umount $m
done
gw_stop
roce_capture_stop
touch "$GW_OUT/client-done"
e2e_finish
