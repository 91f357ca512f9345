#!/usr/bin/env bash
# Guest job, run by hand to refresh the canned documents of this directory:
#   flock /tmp/rpcrdma-vm.lock tests/e2e/run-e2e tests/data/stats/capture-job.sh BUILD
# then copy BUILD/e2e-out/capture-job/{stats-1,stats-2}.json and metrics*.txt here.
# A forward route in front of the kernel NFS server over Soft-RoCE; the kernel NFS
# client writes and reads through it (NFSv3 and NFSv4.2 mounts: two sessions) while
# /stats is fetched twice, one second apart, and /metrics once.
set -u
source "$GW_SRC/tests/e2e/lib/gw-e2e.sh"
gwvm-net
gwvm-nfsd /export rdma
modprobe nfsv3
modprobe nfsv4
cfg=$E2E_WORK/gw.json
cat >"$cfg" <<JSON
{ "routes": [ { "name": "nfs", "mode": "forward",
                "listen": "tcp://192.0.2.2:2049", "upstream": "rdma://192.0.2.1:20049" } ],
  "stats": { "listen": "127.0.0.1:9464" } }
JSON
gw_start capture "$cfg" || e2e_finish
mkdir -p /mnt/v3 /mnt/v4
mount -t nfs -o vers=3,proto=tcp,port=2049,rsize=1048576,wsize=1048576 192.0.2.2:/export /mnt/v3 || fail "mount v3"
mount -t nfs -o vers=4.2,proto=tcp 192.0.2.2:/ /mnt/v4 || fail "mount v4"
dd if=/dev/urandom of=/mnt/v3/seed bs=1M count=8 oflag=direct status=none
( end=$((SECONDS + 6))
  while ((SECONDS < end)); do
      dd if=/mnt/v3/seed of=/dev/null bs=1M iflag=direct status=none
      dd if=/dev/zero of=/mnt/v3/w bs=1M count=4 oflag=direct status=none
      ls -l /mnt/v4 >/dev/null; dd if=/dev/zero of=/mnt/v4/small bs=4k count=16 oflag=direct status=none
  done ) &
load=$!
sleep 2
gw_stats >"$GW_OUT/stats-1.json"
sleep 1
gw_stats >"$GW_OUT/stats-2.json"
gw_metrics >"$GW_OUT/metrics.txt"
gw_metrics sessions=1 >"$GW_OUT/metrics-sessions.txt"
wait $load
check "captured /stats twice" test -s "$GW_OUT/stats-2.json"
umount /mnt/v3 /mnt/v4
gw_stop
e2e_finish
