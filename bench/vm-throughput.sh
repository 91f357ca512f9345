#!/usr/bin/env bash
# bench/vm-throughput.sh BUILD_DIR: throughput of the kernel NFS client against the
# kernel NFS server in a Soft-RoCE guest, directly over RDMA and through the gateway
# (forward mode, TCP to the gateway), for 1 MiB and 4 KiB rsize/wsize, O_DIRECT. It
# prints a table; it never passes or fails. The guest is emulated (TCG), so the
# figures compare the two paths on the same machine, not with hardware.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(realpath "${1:?usage: vm-throughput.sh BUILD_DIR}")
job=$(mktemp); env=$(mktemp)
echo "export GW_SRC=$top GW_BIN=$build/gateway/rpcrdma-gw" >"$env"
cat >"$job" <<'JOB'
set -eu
gwvm-net; gwvm-nfsd /export rdma >/dev/null; modprobe nfsv4
cat >/tmp/gw.json <<JSON
{ "routes": [ { "name": "nfs", "mode": "forward", "listen": "tcp://192.0.2.2:2049",
                "upstream": "rdma://192.0.2.1:20049" } ], "stats": { "enabled": false },
  "logging": { "level": "warning" } }
JSON
"$GW_BIN" -c /tmp/gw.json & gw=$!; sleep 2
dd if=/dev/urandom of=/tmp/src bs=1M count=64 status=none
rate() { # DD-ARGS... -> MB/s
    dd "$@" 2>&1 | awk '/copied/ {for (i = 1; i <= NF; i++) if ($i ~ /s,$/) t = $(i-1); print int(64 / t)}'
}
printf '%-22s %8s %12s %12s\n' path rsize "write MB/s" "read MB/s"
for size in 1048576 4096; do
    for path in direct gateway; do
        mkdir -p /mnt/b
        if [[ $path == direct ]]; then o="proto=rdma,port=20049"; a=192.0.2.1; else o="proto=tcp,port=2049"; a=192.0.2.2; fi
        mount -t nfs -o vers=4.2,$o,rsize=$size,wsize=$size $a:/ /mnt/b
        w=$(rate if=/tmp/src of=/mnt/b/f bs=1M oflag=direct)
        r=$(rate if=/mnt/b/f of=/dev/null bs=1M iflag=direct)
        printf '%-22s %8s %12s %12s\n' "$path" "$size" "$w" "$r"
        rm -f /mnt/b/f; umount /mnt/b
    done
done
kill $gw; wait $gw || true
JOB
GWVM_ENV=$env "$top/tests/vm/gwvm" run "$job"
rm -f "$job" "$env"
