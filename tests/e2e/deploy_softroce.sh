# deploy/setup-softroce on a host that has no RDMA NIC: it adds a Soft-RoCE device on
# an Ethernet interface (idempotently), the gateway's probe reaches the kernel NFS
# server over it, and --remove takes it away again.
set -u
source "$GW_SRC/tests/e2e/lib/gw-e2e.sh"
modprobe veth
ip link add eth-a type veth peer name eth-b
ip addr add 192.0.2.1/24 dev eth-a; ip addr add 192.0.2.2/24 dev eth-b
ip link set lo up
check "no RDMA device before" test -z "$(ls /sys/class/infiniband 2>/dev/null)"
a=$("$GW_SRC/deploy/setup-softroce" eth-a)
b=$("$GW_SRC/deploy/setup-softroce" eth-b)
check "setup-softroce added rxe_eth-a ($a) and rxe_eth-b ($b)" test "$a" = rxe_eth-a -a "$b" = rxe_eth-b
again=$("$GW_SRC/deploy/setup-softroce" eth-a)
check "running it again changes nothing ($again)" test "$again" = rxe_eth-a -a "$(ls /sys/class/infiniband | wc -l)" -eq 2
out=$("$GW_SRC/deploy/setup-softroce" nosuch0 2>&1); rc=$?
check "a missing interface is a clear error ($out)" \
    test "$rc" -ne 0 -a -n "$(grep 'no network interface nosuch0' <<<"$out")"
gwvm-nfsd /export rdma
out=$("$GW_BIN" --probe rdma://192.0.2.1:20049 2>&1); rc=$?
echo "$out"
check "the probe reaches the NFS server over the new device" test "$rc" -eq 0
"$GW_SRC/deploy/setup-softroce" --remove eth-b >/dev/null
check "--remove takes the device away" test ! -e /sys/class/infiniband/rxe_eth-b
e2e_finish
