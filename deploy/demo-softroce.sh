# The demo job (scripts/run-demo on a machine without RDMA): inside a Soft-RoCE guest,
# the kernel NFS server listens on RDMA only; rpcrdma-gw in forward mode relays to it;
# the unmodified kernel NFS client mounts the gateway over TCP, writes and reads a file
# with checksums, and the gateway's traffic statistics are shown.
set -eu
export PATH=$GW_SRC/tests/vm/guest:$PATH
gwvm-net
gwvm-nfsd /export rdma >/dev/null
modprobe nfsv3; modprobe nfsv4
cat >/tmp/demo.json <<JSON
{ "routes": [ { "name": "nfs", "mode": "forward",
                "listen": "tcp://192.0.2.2:2049", "upstream": "rdma://192.0.2.1:20049" } ],
  "stats": { "listen": "127.0.0.1:9464" } }
JSON
echo "== the kernel NFS server listens on RDMA only:"; cat /proc/fs/nfsd/portlist
echo "== rpcrdma-gw --probe rdma://192.0.2.1:20049"
"$GW_BIN" --probe rdma://192.0.2.1:20049
echo "== rpcrdma-gw -c /tmp/demo.json (forward: tcp://192.0.2.2:2049 -> rdma://192.0.2.1:20049)"
"$GW_BIN" -c /tmp/demo.json 2>/tmp/gw.log & gw=$!
for i in $(seq 50); do grep -q "running with" /tmp/gw.log && break; sleep 0.2; done
mkdir -p /mnt/nfs
mount -t nfs -o vers=4.2,proto=tcp,port=2049 192.0.2.2:/ /mnt/nfs
grep " /mnt/nfs " /proc/mounts
dd if=/dev/urandom of=/tmp/data bs=1M count=32 status=none
echo "== 32 MiB through the gateway (O_DIRECT write, then read back):"
dd if=/tmp/data of=/mnt/nfs/data bs=1M oflag=direct 2>&1 | tail -1
dd if=/mnt/nfs/data of=/tmp/back bs=1M iflag=direct 2>&1 | tail -1
md5sum /tmp/data /tmp/back /export/data
umount /mnt/nfs
echo "== the gateway's counters (curl http://127.0.0.1:9464/metrics):"
curl -s http://127.0.0.1:9464/metrics | grep -E '^rpcrdma_gw_(rpc_calls|rpc_replies|rdma_bytes)_total'
kill -TERM $gw; wait $gw
echo "== gateway log:"; cat /tmp/gw.log
[ "$(md5sum </tmp/data)" = "$(md5sum </tmp/back)" ] && echo "demo: data intact"
