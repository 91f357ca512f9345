# gwvm: two-guests
# Forward mode with RoCEv2 on a wire: guest A is the NFS server alone (kernel nfsd on
# RDMA only, 192.0.2.1); guest B runs the gateway (TCP 192.0.2.2:2049 -> RDMA
# 192.0.2.1:20049) and the kernel NFS client, and captures the RDMA traffic between its
# gateway and the server with tshark. The workload runs for NFSv3, 4.1 and 4.2 with
# checksums; then every captured RPC-over-RDMA message must decode, be of a type the
# gateway may send or receive, and no frame may be malformed.
# NFSv3 runs with nolock here: NLM goes to the mount's address, which is the gateway's
# host, not the server (the one-guest job covers NFSv3 locks through the gateway).
set -u
source "$GW_SRC/tests/e2e/lib/gw-e2e.sh"

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
dev=$(ls /sys/class/net | grep -v -E '^(lo|veth)' | head -1)
# A large capture buffer: a dropped packet would break chunk reassembly and show
# up as a malformed frame that the gateway never sent.
tshark -i "$dev" -B 64 -f 'udp port 4791' -w /tmp/roce.pcap -q 2>/tmp/tshark.err &
cap=$!
for _ in $(seq 1 50); do [[ -s /tmp/roce.pcap ]] && break; sleep 0.2; done

cat >"$E2E_WORK/gw.json" <<JSON
{ "routes": [ { "name": "nfs", "mode": "forward",
                "listen": "tcp://192.0.2.2:2049", "upstream": "rdma://192.0.2.1:20049" } ],
  "stats": { "listen": "127.0.0.1:9464" } }
JSON
gw_start forward "$E2E_WORK/gw.json" || { touch "$GW_OUT/client-done"; e2e_finish; }

for vers in 3 4.1 4.2; do
    m=/mnt/v$vers; mkdir -p $m
    echo "--- NFSv$vers over the wire"
    if [[ $vers == 3 ]]; then
        opts=vers=3,proto=tcp,port=2049,nolock,mountaddr=192.0.2.1,mountproto=tcp; src=192.0.2.2:/export
    else
        opts=vers=$vers,proto=tcp,port=2049; src=192.0.2.2:/
    fi
    mount -t nfs -o "$opts,rsize=1048576,wsize=1048576" $src $m || { fail "mount NFSv$vers"; continue; }
    d=$m/w$vers; mkdir -p $d
    wl_bigfile $d 16
    wl_oddsizes $d
    wl_symlink $d
    wl_rename_setattr $d
    [[ $vers != 3 ]] && wl_locks $d
    wl_bigdir $d 1000
    wl_concurrent $d 4 4
    rm -rf $d
    umount $m
done
gw_stop

sleep 1
kill -INT $cap; wait $cap
touch "$GW_OUT/client-done"
grep -i "captured\|dropped" /tmp/tshark.err

# Every RPC-over-RDMA message on the wire, decoded by tshark (with chunk reassembly).
# There is no Ethernet over InfiniBand here: without these two heuristics off, the
# InfiniBand dissector now and then takes an RDMA Write fragment for an Ethernet frame.
T=(tshark -r /tmp/roce.pcap -2 -d udp.port==4791,infiniband
    --disable-heuristic eth_over_ib --disable-heuristic mellanox_eoib)
fields=$("${T[@]}" -Y rpcordma -T fields -e rpcordma.version -e rpcordma.msg_type \
    -e rpcordma.errcode 2>/dev/null)
total=$(wc -l <<<"$fields")
check "tshark decoded the RPC-over-RDMA traffic ($total messages)" test "$total" -gt 1000
check "every message is Version One" test -z "$(awk -F'\t' '$1 != 1' <<<"$fields")"
# The gateway sends RDMA_MSG/RDMA_NOMSG calls; the server answers RDMA_MSG/RDMA_NOMSG.
check "only RDMA_MSG and RDMA_NOMSG were exchanged (no RDMA_ERROR, MSGP, DONE)" \
    test -z "$(awk -F'\t' '$2 != 0 && $2 != 1' <<<"$fields")"
"${T[@]}" -Y '_ws.malformed || _ws.expert.severity >= "error"' -T fields \
    -e frame.number -e ip.src -e rpcordma.msg_type -e rpcordma.rdma_length \
    -e rpcordma.reassembled.length -e frame.protocols -e _ws.expert.message \
    2>/dev/null >/tmp/bad.txt
# One known dissector fault is told apart, precisely: the Linux server fills a Reply
# chunk with separate RDMA Writes (head, pages, tail), and Wireshark 4.0 reassembles
# them short of the length the server reports in its RDMA_NOMSG (by the 8-byte tail),
# then finds the NFS reply cut. Such a frame is the server's RDMA_NOMSG with a
# reassembled length below its Reply chunk's; the client's listing of the same
# directories was checked complete above. Any other malformed frame fails.
: >/tmp/short.txt; : >/tmp/bad-other.txt
awk -F'\t' '{ if ($2 == "192.0.2.1" && $3 == 1 && $5 != "" && $5 + 0 < $4 + 0)
                  print > "/tmp/short.txt"; else print > "/tmp/bad-other.txt" }' /tmp/bad.txt
if [[ -s /tmp/short.txt ]]; then
    echo "Reply chunks that tshark reassembled short of the server's length (its fault):"
    head -5 /tmp/short.txt
fi
bad=$(grep -c . /tmp/bad-other.txt)
check "no malformed or erroneous frame in the capture ($bad)" test "$bad" -eq 0
if ((bad)); then head -20 /tmp/bad-other.txt; cp /tmp/roce.pcap "$GW_OUT/roce.pcap"; fi
chunks=$("${T[@]}" -Y 'rpcordma.reads_count > 0' 2>/dev/null | wc -l)
writes=$("${T[@]}" -Y 'rpcordma.writes_count > 0' 2>/dev/null | wc -l)
check "Read chunks ($chunks) and Write chunks ($writes) crossed the wire" test "$chunks" -gt 0 -a "$writes" -gt 0
e2e_finish
