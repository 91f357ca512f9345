# NFSv4.1/4.2 callbacks through a forward-mode gateway (RFC 8167 backward direction).
# Client 1 mounts the gateway over TCP and holds a file open for reading: the server
# grants it a delegation. Client 2 (its own network namespace and NFSv4 client
# identity) then writes the file: the server recalls the delegation with CB_RECALL,
# which must reach client 1 through the gateway (RDMA backward call -> TCP CALL record)
# and be answered back (TCP REPLY record -> RDMA backward reply). The write must
# complete well inside the 90 s lease, the server must report the callback path up,
# and the gateway must count the backward calls.
set -u
source "$GW_SRC/tests/e2e/lib/gw-e2e.sh"
gwvm-net
gwvm-nfsd /export rdma
modprobe nfsv4
nfsd_wait_grace 192.0.2.1 || fail "the NFS server's grace period did not end"

# Client 2's namespace, reaching the gateway at 10.9.0.1.
client2_netns

cat >"$E2E_WORK/gw.json" <<JSON
{ "routes": [ { "name": "nfs", "mode": "forward",
                "listen": "tcp://0.0.0.0:2049", "upstream": "rdma://192.0.2.1:20049" } ],
  "stats": { "listen": "127.0.0.1:9464" } }
JSON
gw_start forward "$E2E_WORK/gw.json" || e2e_finish

for vers in 4.1 4.2; do
    echo "--- NFSv$vers"
    m1=/mnt/c1-$vers; mkdir -p "$m1"
    mount -t nfs -o vers=$vers,proto=tcp,port=2049 192.0.2.2:/ "$m1" || { fail "mount $vers"; continue; }
    wl_delegation_recall "$vers" "$m1"
    umount "$m1"
done
gw_metrics | grep -E 'backward_(calls|replies)_total|backward_undeliverable' | grep -v '^#'
gw_stop
e2e_finish
