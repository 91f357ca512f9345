# NFSv4.1/4.2 callbacks through a reverse-mode gateway (RFC 8167 backward direction).
# The kernel NFS server listens on TCP only; client 1 mounts the gateway with
# proto=rdma and holds a file open for reading: the server grants it a delegation.
# Client 2 (its own network namespace and NFSv4 client identity, straight to the
# server over TCP) then writes the file: the server recalls the delegation with
# CB_RECALL on the gateway's TCP connection, which must reach client 1 as an
# RPC-over-RDMA backward call and be answered back (RDMA backward reply -> TCP REPLY
# record). The write must complete well inside the 90 s lease, the server must never
# see the callback path down, and the gateway must count the backward calls. Then a
# contended POSIX lock on NFSv4.1+: the waiter is woken by CB_NOTIFY_LOCK through the
# gateway.
set -u
source "$GW_SRC/tests/e2e/lib/gw-e2e.sh"
gwvm-net
gwvm-nfsd /export tcp
modprobe nfsv4; modprobe rpcrdma
nfsd_wait_grace 192.0.2.1 tcp || fail "the NFS server's grace period did not end"

# Client 2's namespace, reaching the server (listening on every address) at 10.9.0.1.
client2_netns

cat >"$E2E_WORK/gw.json" <<JSON
{ "routes": [ { "name": "nfs", "mode": "reverse",
                "listen": "rdma://192.0.2.2:20049", "upstream": "tcp://192.0.2.1:2049" } ],
  "stats": { "listen": "127.0.0.1:9464" } }
JSON
gw_start reverse "$E2E_WORK/gw.json" || e2e_finish

for vers in 4.1 4.2; do
    echo "--- NFSv$vers"
    m1=/mnt/c1-$vers; mkdir -p "$m1"
    mount -t nfs -o vers=$vers,proto=rdma,port=20049 192.0.2.2:/ "$m1" || { fail "mount $vers"; continue; }
    check "NFSv$vers: client 1 reaches the gateway over RDMA" grep -q "$m1 nfs.*proto=rdma.*addr=192.0.2.2" /proc/mounts
    wl_delegation_recall "$vers" "$m1"
    wl_locks "$m1"
    umount "$m1"
done
undeliv=$(gw_jq "s['routes'][0]['totals']['events'].get('backward_undeliverable', 0)")
check "no backward call was undeliverable ($undeliv)" test "$undeliv" -eq 0
gw_metrics | grep -E 'backward_(calls|replies)_total|backward_undeliverable' | grep -v '^#'
gw_stop
e2e_finish
