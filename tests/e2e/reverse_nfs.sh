# Reverse mode, one guest: the kernel NFS server listens on TCP only (192.0.2.1:2049); the
# gateway listens on RDMA 192.0.2.2:20049 and relays to it; the kernel NFS client mounts
# the gateway with proto=rdma. For NFSv3, 4.0, 4.1 and 4.2, with rsize/wsize 4 KiB and
# 1 MiB: 64 MiB O_DIRECT write and read with checksums, odd file sizes, a 5,000-entry
# directory, symlinks, rename and setattr, POSIX locks (on NFSv4.1+ the blocked waiter
# is woken by CB_NOTIFY_LOCK through the gateway's backchannel), 8 concurrent writers. Then the
# upstream restarts under a mount with I/O running (the gateway reconnects and sends the
# calls in flight again: the I/O completes intact), the counters must show the traffic
# (answers by Send With Invalidate among it: the Linux client offers it),
# and SIGTERM must drain it cleanly. Last, a route with upstream_connections 2 carries
# four or more RDMA clients over two TCP connections to the server
# (shared_upstream_scenario).
#   E2E_VERSIONS="3 4.1" and E2E_SIZES="1048576" narrow the matrix for a quick run, or
#   E2E_RUNS="3:1048576 4.2:4096" names the mounts; E2E_BIG_MB sets the big file's MiB;
#   E2E_WORKLOADS=core keeps the big file, odd sizes and locks, and leaves out the
#   restart and the shared upstream connections (reverse_k612.sh sources this job so).
set -u
source "$GW_SRC/tests/e2e/lib/gw-e2e.sh"
gwvm-net
gwvm-nfsd /export tcp
modprobe nfsv3; modprobe nfsv4; modprobe rpcrdma
check "the NFS server has no RDMA listener" test -z "$(grep rdma /proc/fs/nfsd/portlist)"

cat >"$E2E_WORK/gw.json" <<JSON
{ "routes": [ { "name": "nfs", "mode": "reverse",
                "listen": "rdma://192.0.2.2:20049", "upstream": "tcp://192.0.2.1:2049" } ],
  "stats": { "listen": "127.0.0.1:9464" } }
JSON
gw_start reverse "$E2E_WORK/gw.json" || e2e_finish

MB=${E2E_BIG_MB:-64}
RUNS=$(e2e_runs); nruns=$(wc -w <<<"$RUNS")
WORKLOADS=${E2E_WORKLOADS:-all}
runs_1m=0
for run in $RUNS; do
    vers=${run%:*} size=${run#*:}
    mnt=/mnt/v$vers-$size; mkdir -p "$mnt"
    if [[ $vers == 3 ]]; then src=192.0.2.2:/export; else src=192.0.2.2:/; fi
    echo "--- NFSv$vers rsize=wsize=$size over RDMA through the gateway ($(date +%T))"
    if ! mount -t nfs -o vers=$vers,proto=rdma,port=20049,rsize=$size,wsize=$size "$src" "$mnt"; then
        fail "mount NFSv$vers over RDMA through the gateway"; continue
    fi
    check "NFSv$vers mount is RDMA to the gateway" grep -q "$mnt nfs.*proto=rdma.*addr=192.0.2.2" /proc/mounts
    d=$mnt/t-$vers-$size; mkdir -p "$d"
    wl_bigfile "$d" "$MB"
    wl_oddsizes "$d"
    if [[ $WORKLOADS == all ]]; then
        wl_symlink "$d"
        wl_rename_setattr "$d"
    fi
    # NFSv3 locks here go to the guest's own lockd over IP, not through the gateway (this
    # route has no side services: nfsv3_plain and reverse_locks have those);
    # E2E_V3_LOCKS=0 leaves them out.
    [[ $vers == 3 && ${E2E_V3_LOCKS:-1} == 0 ]] || wl_locks "$d"
    if [[ $WORKLOADS == all ]]; then
        [[ $vers == 3 && $size == 4096 ]] && wl_bigacl "$d" 300
        [[ $vers != 3 && $size == 4096 ]] && wl_nfs4acl "$d" 190
        if [[ $size == 1048576 ]]; then
            wl_bigdir "$d" 5000
            wl_concurrent "$d" 8 8
            runs_1m=$((runs_1m + 1))
        fi
    fi
    rm -rf "$d"
    umount "$mnt"
done

# The upstream restarts while a client has I/O in flight through the gateway: the
# gateway reconnects, sends the calls in flight again, and the I/O completes intact.
echo "--- upstream restart under load ($(date +%T))"
mnt=/mnt/restart; mkdir -p "$mnt"
if [[ $WORKLOADS != all ]]; then
    echo "(left out: E2E_WORKLOADS=$WORKLOADS)"
elif mount -t nfs -o vers=3,proto=rdma,port=20049,rsize=1048576,wsize=1048576 192.0.2.2:/export "$mnt"; then
    src=$(e2e_source 16); want=$(md5sum <"$src" | cut -d' ' -f1)
    dd if="$src" of="$mnt/restart" bs=64k oflag=direct status=none & writer=$!
    sleep 1
    t0=$(date +%s)
    rpc.nfsd 0; sleep 3; rpc.nfsd 8
    wait "$writer"; rc=$?
    t=$(($(date +%s) - t0))
    check "a writer with I/O in flight across the server restart finished (status $rc)" test "$rc" -eq 0
    # Without the resend the calls in flight would wait for the client's retransmit
    # timeout (60 s for proto=rdma) and a reconnect.
    check "... without waiting for the client to time out (${t} s)" test "$t" -lt 40
    got=$(dd if="$mnt/restart" bs=1M iflag=direct status=none | md5sum | cut -d' ' -f1)
    check "... and its file is intact" test "$want" = "$got"
    echo "later call" >"$mnt/after"
    check "a later call goes through" test "$(cat "$mnt/after")" = "later call"
    rm -f "$mnt/restart" "$mnt/after"
    umount "$mnt"
else
    fail "mount for the restart test"
fi

# The counters saw what was sent: READ data left by Write chunks, WRITE data came by
# RDMA Read, long replies (READDIR) by the Reply chunk, and the restart was noticed.
tot="s['routes'][0]['totals']"
reads=$(gw_jq "sum(p['calls'] for p in $tot['procedures'] if p['procedure_name']=='READ')")
replies=$(gw_jq "$tot['replies']")
calls=$(gw_jq "$tot['calls']")
wbytes=$(gw_jq "$tot['rdma_bytes']['write_chunk']")
rbytes=$(gw_jq "$tot['rdma_bytes']['read_chunk']")
rcbytes=$(gw_jq "$tot['rdma_bytes']['reply_chunk']")
reconnects=$(gw_jq "$tot['events']['upstream_reconnect']")
overruns=$(gw_jq "$tot['events']['credit_overrun']")
rinv=$(gw_jq "$tot['remote_invalidations']")
echo "stats: calls $calls replies $replies READ $reads write_chunk $wbytes read_chunk $rbytes reply_chunk $rcbytes reconnects $reconnects"
check "stats: NFS READ calls counted ($reads)" test "${reads:-0}" -gt 0
check "stats: every call answered ($replies of $calls)" test "${replies:-0}" -ge "$((${calls:-1} * 99 / 100))"
check "stats: bytes moved by Write chunks ($wbytes) >= the data read back" \
    test "${wbytes:-0}" -ge $((MB * nruns * 1048576))
check "stats: bytes moved by Read chunks ($rbytes) >= the data written" \
    test "${rbytes:-0}" -ge $((MB * nruns * 1048576))
# The long replies (READDIR of the big directory) and the restart are in the full job only.
if [[ $WORKLOADS == all ]]; then
    check "stats: long replies went by the Reply chunk ($rcbytes bytes)" test "${rcbytes:-0}" -gt 0
    check "stats: the upstream restart was a reconnect ($reconnects)" test "${reconnects:-0}" -ge 1
fi
check "stats: no client overran its credits ($overruns)" test "${overruns:-1}" -eq 0
check "stats: the client's regions invalidated by the gateway's answers (Send With Invalidate: $rinv), of $reads READs" \
    test "${rinv:-0}" -gt 0
gw_check_quiet
gw_stop
grep -E "error|warning" "$GW_LOG" | head -20

# ---- shared upstream connections (route key upstream_connections, issue 17) ----
# A reverse route with upstream_connections 2: NFSv3, v4.0, v4.1 and v4.2 mounts (four
# RDMA client connections at least; nconnect=2 on v4.1 adds one where the kernel honours
# it over RDMA) write and read back checksummed files at once, and the server sees
# exactly two TCP connections from the gateway; a delegation of the NFSv4.1 client is
# recalled through the shared connection (CB_RECALL routed by its session). A gateway
# without the feature refuses the route (and, if it took it, would open one connection
# per client).
shared_upstream_scenario() {
    echo "--- shared upstream connections ($(date +%T))"
    cat >"$E2E_WORK/gw-shared.json" <<JSON
{ "routes": [ { "name": "shared", "mode": "reverse", "listen": "rdma://192.0.2.2:20051",
                "upstream": "tcp://192.0.2.1:2049", "upstream_connections": 2 } ],
  "stats": { "listen": "127.0.0.1:9464" } }
JSON
    gw_start reverse-shared "$E2E_WORK/gw-shared.json" || return
    local vers mnt opts from src want pids=() mnts=() i
    src=$(e2e_source 16); want=$(md5sum <"$src" | cut -d' ' -f1)
    for vers in 3 4.0 4.1 4.2; do
        mnt=/mnt/shared-$vers; mkdir -p "$mnt"
        opts=vers=$vers,proto=rdma,port=20051,rsize=1048576,wsize=1048576
        [[ $vers == 4.1 ]] && opts+=,nconnect=2
        if [[ $vers == 3 ]]; then from=192.0.2.2:/export; else from=192.0.2.2:/; fi
        if mount -t nfs -o "$opts" "$from" "$mnt"; then
            mnts+=("$mnt")
        else
            fail "mount NFSv$vers through the shared route"
        fi
    done
    for mnt in "${mnts[@]}"; do
        ( f=$mnt/shared-${mnt##*-}
          for i in 1 2; do
              dd if="$src" of="$f" bs=1M oflag=direct status=none || exit 1
              [[ $(dd if="$f" bs=1M iflag=direct status=none | md5sum | cut -d' ' -f1) == "$want" ]] || exit 2
          done
          rm -f "$f" ) &
        pids+=($!)
    done
    sleep 2
    # The gateway's side of each connection to the server: the server's port as peer.
    local during sessions
    during=$(ss -Htn state established '( dport = :2049 )' | wc -l)
    sessions=$(gw_jq "s['routes'][0]['live_sessions']")
    for i in "${!pids[@]}"; do
        wait "${pids[$i]}"
        check "shared route: ${mnts[$i]}: two 16 MiB writes read back with matching checksums, all mounts at once" test $? -eq 0
    done
    check "shared route: at least 4 RDMA clients ($sessions sessions)" test "${sessions:-0}" -ge 4
    check "shared route: the server sees exactly 2 TCP connections from the gateway under load ($during)" \
        test "$during" -eq 2
    local nch clients inflight
    nch=$(gw_jq "len(s['routes'][0]['shared_upstream']['channels'])")
    clients=$(gw_jq "sum(c['clients'] for c in s['routes'][0]['shared_upstream']['channels'])")
    inflight=$(gw_jq "s['routes'][0]['shared_upstream']['xid_map']['new']")
    check "shared route: /stats shows 2 shared connections ($nch) carrying every client ($clients of $sessions)" \
        test "$nch" = 2 -a "$clients" = "$sessions"
    check "shared route: /stats counts calls mapped to wire XIDs ($inflight)" test "${inflight:-0}" -gt 0
    check "shared route: /metrics has rpcrdma_gw_shared_channel_clients" \
        bash -c 'curl -sf http://127.0.0.1:9464/metrics | grep -q "^rpcrdma_gw_shared_channel_clients"'
    # Callbacks on a shared connection: the server's CB_RECALL is routed by its
    # CB_SEQUENCE session to the NFSv4.1 client that made the session.
    # The other mounts go first: their clients' callback state is not this test's.
    for mnt in "${mnts[@]}"; do [[ $mnt == /mnt/shared-4.1 ]] || umount "$mnt"; done
    if grep -q " /mnt/shared-4.1 nfs" /proc/mounts; then
        ip netns list | grep -qw c2 || client2_netns
        wl_delegation_recall 4.1 /mnt/shared-4.1 shared
        umount /mnt/shared-4.1
    fi
    gw_check_quiet
    check "shared route: the server's connections stay at 2 with no client ($(ss -Htn state established '( dport = :2049 )' | wc -l))" \
        test "$(ss -Htn state established '( dport = :2049 )' | wc -l)" -eq 2
    gw_stop
    grep -E "error|warning" "$GW_LOG" | head -20
}
[[ $WORKLOADS == all ]] && shared_upstream_scenario
# ---- end of shared upstream connections ----
e2e_finish
