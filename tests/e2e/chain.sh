# The chain, one guest: the kernel NFS client on TCP -> a forward-mode gateway (TCP
# 192.0.2.1:3049, RDMA requester) -> a reverse-mode gateway (RDMA 192.0.2.2:20049, RDMA
# responder) -> the kernel NFS server on TCP 192.0.2.1:2049. Both gateways are separate
# processes. NFSv3 and NFSv4.1 with 1 MiB rsize/wsize: O_DIRECT write and read with
# checksums, odd sizes, symlinks, rename and setattr, a directory, concurrent writers.
# The data must come through intact, and each gateway's counters must show it crossing
# the RDMA hop both ways (Read chunks for WRITE data, Write chunks for READ data).
set -u
source "$GW_SRC/tests/e2e/lib/gw-e2e.sh"
gwvm-net
gwvm-nfsd /export tcp
modprobe nfsv3; modprobe nfsv4

cat >"$E2E_WORK/rev.json" <<JSON
{ "routes": [ { "name": "core", "mode": "reverse",
                "listen": "rdma://192.0.2.2:20049", "upstream": "tcp://192.0.2.1:2049" } ],
  "stats": { "listen": "127.0.0.1:9464" } }
JSON
cat >"$E2E_WORK/fwd.json" <<JSON
{ "routes": [ { "name": "edge", "mode": "forward",
                "listen": "tcp://192.0.2.1:3049", "upstream": "rdma://192.0.2.2:20049" } ],
  "stats": { "listen": "127.0.0.1:9465" } }
JSON
gw_start chain_reverse "$E2E_WORK/rev.json" || e2e_finish
REV_PID=$GW_PID
gw_start chain_forward "$E2E_WORK/fwd.json" || e2e_finish
FWD_PID=$GW_PID

MB=${E2E_BIG_MB:-32}
for vers in 3 4.1; do
    mnt=/mnt/chain-$vers; mkdir -p "$mnt"
    if [[ $vers == 3 ]]; then src=192.0.2.1:/export; else src=192.0.2.1:/; fi
    echo "--- NFSv$vers over TCP -> forward gateway -> RDMA -> reverse gateway -> TCP ($(date +%T))"
    if ! mount -t nfs -o vers=$vers,proto=tcp,port=3049,rsize=1048576,wsize=1048576 "$src" "$mnt"; then
        fail "mount NFSv$vers through the chain"; continue
    fi
    check "NFSv$vers mount is TCP to the forward gateway" grep -q "$mnt nfs.*proto=tcp.*port=3049" /proc/mounts
    d=$mnt/chain; mkdir -p "$d"
    wl_bigfile "$d" "$MB"
    wl_oddsizes "$d"
    wl_symlink "$d"
    wl_rename_setattr "$d"
    wl_bigdir "$d" 2000
    wl_concurrent "$d" 4 8
    rm -rf "$d"
    umount "$mnt"
done

# Both ends of the RDMA hop moved the bulk data by RDMA, and agree on how much.
hop() { GW_STATS=$1 gw_jq "s['routes'][0]['totals']$2"; }
f_read=$(hop 127.0.0.1:9465 "['rdma_bytes']['read_chunk']")
r_read=$(hop 127.0.0.1:9464 "['rdma_bytes']['read_chunk']")
f_write=$(hop 127.0.0.1:9465 "['rdma_bytes']['write_chunk']")
r_write=$(hop 127.0.0.1:9464 "['rdma_bytes']['write_chunk']")
f_calls=$(hop 127.0.0.1:9465 "['calls']")
r_calls=$(hop 127.0.0.1:9464 "['calls']")
r_replies=$(hop 127.0.0.1:9464 "['replies']")
echo "forward: calls $f_calls read_chunk $f_read write_chunk $f_write"
echo "reverse: calls $r_calls replies $r_replies read_chunk $r_read write_chunk $r_write"
check "WRITE data crossed by Read chunks ($r_read bytes) >= the data written" \
    test "${r_read:-0}" -ge $((2 * MB * 1048576))
check "READ data crossed by Write chunks ($r_write bytes) >= the data read" \
    test "${r_write:-0}" -ge $((2 * MB * 1048576))
check "both gateways count the same Read chunk bytes ($f_read, $r_read)" test "$f_read" = "$r_read"
check "both gateways count the same Write chunk bytes ($f_write, $r_write)" test "$f_write" = "$r_write"
check "every call relayed by the forward gateway reached the reverse one ($f_calls, $r_calls)" \
    test "$f_calls" = "$r_calls"
check "the reverse gateway answered them all ($r_replies)" test "$r_replies" = "$r_calls"

GW_PID=$FWD_PID gw_stop
GW_PID=$REV_PID gw_stop
grep -E "error|warning" "$GW_OUT"/chain_*.log | head -20
e2e_finish
