# The walking skeleton: `rpcrdma-gw --probe` reaches the kernel NFS server over
# Soft-RoCE (RFC 8797 private data, an RDMA_MSG NULL call to NFSv3, the reply), prints
# the credits the server grants and its inline sizes, and exits 0. Then the error
# paths: nothing listening, and a host that does not exist, each exit non-zero with
# a clear message.
set -u
source "$GW_SRC/tests/e2e/lib/gw-e2e.sh"
gwvm-net
gwvm-nfsd /export rdma

out=$("$GW_BIN" --probe rdma://192.0.2.1:20049 2>&1); rc=$?
echo "$out"
check "probe exits 0 against the kernel NFS server" test "$rc" -eq 0
check "probe saw the server's RFC 8797 private data (send/receive 4096)" \
    grep -q "server private data (RFC 8797): send 4096, receive 4096" <<<"$out"
check "probe reports the credits the Linux server grants (64)" \
    grep -q "credits granted: 64" <<<"$out"
check "probe's NULL call was accepted" grep -q "reply accepted: success" <<<"$out"

out=$("$GW_BIN" --probe rdma://192.0.2.1:20050 --timeout 5000 2>&1); rc=$?
echo "$out"
check "probe of a port with no listener fails" test "$rc" -ne 0
check "... and says the connection was refused" grep -qi "rejected\|unreachable" <<<"$out"

out=$("$GW_BIN" --probe tcp://192.0.2.1:2049 2>&1); rc=$?
check "probe refuses a tcp:// address with a clear message ($out)" \
    test "$rc" -eq 2 -a -n "$(grep -i 'expected an rdma://' <<<"$out")"
e2e_finish
