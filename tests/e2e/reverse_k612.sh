# gwvm: kernel 6.12
# Reverse mode (reverse_nfs.sh: the kernel NFS server on TCP only, the gateway's
# RDMA listener, the kernel client mounting it with proto=rdma) on Linux 6.12,
# the kernel of Debian 13 and of most current distributions, whose nfsd, svcrdma and
# xprtrdma differ from Debian 12's 6.1. A short run of that job: NFSv3 with rsize/wsize
# 1 MiB, NFSv4.2 with 4 KiB and 1 MiB; a 16 MiB file, odd file sizes and POSIX locks
# (NFSv4.2's, which cross the gateway; NFSv3's would go to the guest's own lockd, and
# 6.12's NLM client has waited its 30 s retry for them on a loaded host, as in
# forward_k612).
set -u
# A job that ran on another kernel would prove nothing about 6.12: stop at once.
echo "kernel: $(uname -r)"
if [[ $(uname -r) != 6.12.* ]]; then
    echo "FAIL: the guest runs $(uname -r), not Linux 6.12"; exit 1
fi
echo "ok: the guest runs Linux 6.12"
export E2E_RUNS="3:1048576 4.2:4096 4.2:1048576" E2E_BIG_MB=16 E2E_WORKLOADS=core E2E_V3_LOCKS=0
source "$GW_SRC/tests/e2e/reverse_nfs.sh"
