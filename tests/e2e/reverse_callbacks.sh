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
ip netns add c2
ip link add vc1 type veth peer name vc2 netns c2
ip addr add 10.9.0.1/24 dev vc1; ip link set vc1 up
ip -n c2 addr add 10.9.0.2/24 dev vc2; ip -n c2 link set vc2 up; ip -n c2 link set lo up

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
    f=deleg-$vers
    # Made on the server, so that no client holds it open for writing: nfsd does
    # not delegate a file that is open for write.
    echo "original" >/export/$f
    /usr/bin/python3 - "$m1/$f" <<'PY' &
import glob, sys, time
deadline = time.time() + 30
while time.time() < deadline:
    f = open(sys.argv[1]); f.read()
    if any("type: deleg" in open(p).read() for p in glob.glob("/proc/fs/nfsd/clients/*/states")):
        break
    f.close(); time.sleep(1)
time.sleep(60)
PY
    holder=$!
    has_deleg=no
    for i in $(seq 1 70); do
        if grep -qs "type: deleg" /proc/fs/nfsd/clients/*/states; then has_deleg=yes; break; fi
        sleep 0.5
    done
    check "NFSv$vers: the server granted client 1 a delegation" test "$has_deleg" = yes
    calls_before=$(gw_jq "s['routes'][0]['totals']['backward_calls']")

    start=$(date +%s%N)
    ip netns exec c2 unshare -u bash -c "
        hostname gw-client-2
        echo gw-client-2-id >/sys/fs/nfs/net/nfs_client/identifier
        mkdir -p /mnt/c2 && mount -t nfs -o vers=$vers,proto=tcp,port=2049 10.9.0.1:/ /mnt/c2 &&
        echo changed-by-client-2 >/mnt/c2/$f && umount /mnt/c2"
    rc=$?
    took=$(( ($(date +%s%N) - start) / 1000000 ))
    check "NFSv$vers: client 2's conflicting write succeeded" test "$rc" -eq 0
    check "NFSv$vers: it completed promptly (${took} ms, lease 90 s)" test "$took" -lt 20000
    check "NFSv$vers: the delegation was returned" \
        test -z "$(grep -s 'type: deleg' /proc/fs/nfsd/clients/*/states)"
    calls_after=$(gw_jq "s['routes'][0]['totals']['backward_calls']")
    replies=$(gw_jq "s['routes'][0]['totals']['backward_replies']")
    check "NFSv$vers: the gateway relayed backward calls ($calls_before -> $calls_after, $replies replies)" \
        test "$calls_after" -gt "$calls_before" -a "$replies" -gt 0
    check "NFSv$vers: the server never saw the callback path down" \
        test -z "$(grep -si 'callback.*down' /proc/fs/nfsd/clients/*/info)"
    kill "$holder" 2>/dev/null; wait "$holder" 2>/dev/null
    echo 3 >/proc/sys/vm/drop_caches
    check "NFSv$vers: client 1 reads client 2's change" grep -q changed-by-client-2 "$m1/$f"
    grep -h "callback" /proc/fs/nfsd/clients/*/info | sort | uniq -c
    wl_locks "$m1"
    umount "$m1"
done
undeliv=$(gw_jq "s['routes'][0]['totals']['events'].get('backward_undeliverable', 0)")
check "no backward call was undeliverable ($undeliv)" test "$undeliv" -eq 0
gw_metrics | grep -E 'backward_(calls|replies)_total|backward_undeliverable' | grep -v '^#'
gw_stop
e2e_finish
