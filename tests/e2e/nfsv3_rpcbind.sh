# gwvm: two-guests
# Plain NFSv3 on the README's minimal configuration: a forward route on the wildcard
# address (tcp://0.0.0.0:2049), no portmapper_port, and rpcbind running on the gateway's
# host. The route registers NFS, MOUNT, NLM and NSM with that rpcbind, as every Linux RPC
# service does, and an unmodified client mounts `GATEWAY:/export` with `-o vers=3`.
# Guest A is the NFS server (kernel nfsd on RDMA only, 192.0.2.1, its rpcbind, mountd,
# statd). Guest B runs the gateway and a fresh rpcbind in its root namespaces (nothing
# mounts NFS there, so the kernel's lockd is not registered with it), and the client in
# namespace c2 (10.9.0.2) with its own mount namespace, rpcbind and rpc.statd. The client
# asks the gateway at 10.9.0.11, a second address of the gateway's link: the route back
# to the client leaves from 10.9.0.1, so a UDP reply of a wildcard-bound side service
# reaches the client only when it is sent from the address asked (IP_PKTINFO).
#  - --check says the route registers with this host's rpcbind; the log says it did;
#    the host's rpcinfo lists NFS 3/4 on TCP 2049, MOUNT 1-3, NLM 1/3/4, NSM 1;
#  - from the client: rpcinfo -p GATEWAY, showmount -e GATEWAY, mount -o
#    vers=3,mountproto=udp (MOUNT over UDP to the wildcard socket), 8 MiB written and
#    read back with checksums and odd sizes, an fcntl lock granted through the NLM relay
#    (a plain vers=3 mount, no nolock) while a process on the server is refused it;
#  - a blocked lock: the client waits for a lock a process on the server holds; when it
#    lets go, the server's GRANTED callback (to the gateway's host, whose rpcbind maps NLM
#    to the route's relay) reaches the client through the relay: granted, and /stats
#    counts the callback granted (the seconds it took are printed);
#  - the gateway's restart while the client holds a lock: SIGTERM, started again with its
#    state directory; it tells the client's statd from 10.9.0.11, the address the client
#    mounted, and names it (the kernel would send from 10.9.0.1, and a route on the
#    wildcard has no address of its own to name): the client's lockd reclaims through the
#    restarted gateway (/stats nlm.gateway_restart), and a process on the server is
#    refused the lock again;
#  - SIGTERM: the gateway exits 0 and the host's rpcbind no longer lists its programs;
#  - without rpcbind, --check says plain NFSv3 is unavailable and why.
set -u
source "$GW_SRC/tests/e2e/lib/gw-e2e.sh"

if [[ $GWVM_ROLE == a ]]; then
    gwvm-net 192.0.2.1
    gwvm-nfsd /export
    pgrep -x rpc.statd >/dev/null || rpc.statd # lockd refuses every lock without statd
    touch "$GW_OUT/server-ready"
    # Answer the client's lock probes: a process here tries the lock on the exported file.
    for _ in $(seq 1 600); do
        [[ -e $GW_OUT/client-done ]] && break
        for req in "$GW_OUT"/lock-probe-*.req; do
            [[ -e $req ]] || continue
            r=0; nlm_lock.py try /export/lockf || r=$?
            echo $r >"${req%.req}.res"; rm -f "$req"
        done
        # Hold the lock a client will wait for, until the client says to let go.
        if [[ -e $GW_OUT/hold-b.req ]]; then
            rm -f "$GW_OUT/hold-b.req"
            timeout -s KILL 120 nlm_lock.py hold /export/lockb "$GW_OUT/hold-b.stop" \
                >"$GW_OUT/hold-b.res" &
        fi
        sleep 0.5
    done
    [[ -e $GW_OUT/client-done ]] || { echo "server: the client never finished"; exit 1; }
    exit 0
fi

gwvm-net 192.0.2.2
modprobe nfsv3; modprobe rpcrdma
client2_netns
ip addr add 10.9.0.11/24 dev vc1 # a second address: the one the client asks
# A fresh rpcbind of the gateway host's own, nothing registered but itself.
pkill -x rpc.statd 2>/dev/null; pkill -x rpcbind 2>/dev/null; sleep 0.5
rm -f /run/rpcbind/*.xdr # no warm start: nothing registered but rpcbind itself
rpcbind || fail "rpcbind started on the gateway host"
check "the gateway host's rpcbind has no NLM (no kernel lockd registered)" \
    bash -c "! rpcinfo -p 127.0.0.1 | grep -q nlockmgr"
for _ in $(seq 1 120); do [[ -e $GW_OUT/server-ready ]] && break; sleep 1; done

# The README's minimal configuration.
cat >"$E2E_WORK/gw.json" <<JSON
{ "routes": [
    { "name": "nfs", "mode": "forward", "listen": "tcp://0.0.0.0:2049", "upstream": "rdma://192.0.2.1:20049" } ],
  "stats": { "listen": "127.0.0.1:9464" } }
JSON
"$GW_BIN" -c "$E2E_WORK/gw.json" --check >"$E2E_WORK/check.txt" 2>&1
cat "$E2E_WORK/check.txt"
check "--check: the route registers with this host's rpcbind" \
    grep -q "route nfs: plain NFSv3: registers with this host's rpcbind, which answers" "$E2E_WORK/check.txt"
gw_start forward "$E2E_WORK/gw.json" || { touch "$GW_OUT/client-done"; e2e_finish; }
grep -E "plain NFSv3|MOUNT|NLM" "$GW_LOG"
check "the log says the route registered with this host's rpcbind" \
    grep -q "nfs: plain NFSv3: registered with this host's rpcbind" "$GW_LOG"
rpcinfo -p 127.0.0.1 | tee "$E2E_WORK/host-rpcinfo.txt"
check "the host's rpcbind lists NFS v3 and v4 on TCP 2049" \
    test "$(grep -cE '100003 +[34] +tcp +2049 +nfs' "$E2E_WORK/host-rpcinfo.txt")" -eq 2

cat >"$E2E_WORK/client.sh" <<'CLIENT'
set -u
source "$GW_SRC/tests/e2e/lib/gw-e2e.sh"
mount -t tmpfs c2run /run && mkdir -p /run/c2-statd/sm /run/c2-statd/sm.bak &&
    rpcbind && rpc.statd -P /run/c2-statd || fail "the client's rpcbind and rpc.statd started"
gw=10.9.0.11
rpcinfo -p $gw | tee "$E2E_WORK/rpcinfo.txt"
check "rpcinfo -p GATEWAY lists NFS v3 on TCP 2049" grep -qE '100003 +3 +tcp +2049 +nfs' "$E2E_WORK/rpcinfo.txt"
for v in 1 2 3; do for p in udp tcp; do
    check "rpcinfo -p GATEWAY lists MOUNT v$v on $p" grep -qE "100005 +$v +$p +[0-9]+ +mountd" "$E2E_WORK/rpcinfo.txt"
done; done
for v in 1 3 4; do
    check "rpcinfo -p GATEWAY lists NLM v$v on udp and tcp" \
        test "$(grep -cE "100021 +$v +(udp|tcp) +[0-9]+ +nlockmgr" "$E2E_WORK/rpcinfo.txt")" -eq 2
done
check "rpcinfo -p GATEWAY lists NSM (status) v1 on udp" grep -qE '100024 +1 +udp +[0-9]+ +status' "$E2E_WORK/rpcinfo.txt"
check "rpcinfo -T udp: MOUNT v3 answers NULL from the address asked" rpcinfo -T udp $gw 100005 3
showmount -e $gw | tee "$E2E_WORK/showmount.txt"
check "showmount -e GATEWAY lists the server's export" grep -q '^/export ' "$E2E_WORK/showmount.txt"
m=/mnt/v3; mkdir -p $m
if timeout -s KILL 60 mount -t nfs -o vers=3,mountproto=udp $gw:/export $m; then
    ok "mount -o vers=3,mountproto=udp $gw:/export"
    grep " $m " /proc/mounts
    d=$m/plain-$$; mkdir -p $d
    wl_bigfile $d 8
    wl_oddsizes $d
    rm -rf $d
    # An fcntl lock through the NLM relay, held while a process on the server tries it.
    stop=$E2E_WORK/lock-stop; rm -f "$stop"
    timeout -s KILL 90 nlm_lock.py hold $m/lockf "$stop" >"$E2E_WORK/hold.txt" &
    holder=$!
    for _ in $(seq 1 120); do grep -q held "$E2E_WORK/hold.txt" 2>/dev/null && break; sleep 0.5; done
    check "the client holds an fcntl lock through the gateway (NLM)" grep -q held "$E2E_WORK/hold.txt"
    id=$RANDOM$RANDOM; touch "$GW_OUT/lock-probe-$id.req"
    for _ in $(seq 1 60); do [[ -e $GW_OUT/lock-probe-$id.res ]] && break; sleep 0.5; done
    check "a process on the server is refused the client's lock (try: $(cat "$GW_OUT/lock-probe-$id.res" 2>/dev/null))" \
        test "$(cat "$GW_OUT/lock-probe-$id.res" 2>/dev/null)" = 1
    touch "$stop"; wait $holder
    # A blocked lock: a process on the server holds lockb, the client waits for it
    # (NLM LOCK with block set, answered BLOCKED); when the server's process lets go,
    # the server's lockd grants it with a GRANTED_MSG callback to the gateway's host,
    # whose rpcbind gives the route's NLM relay: the relay hands the server's call to
    # the callback service, which grants the client's lock. Without that, the client
    # would get it only at its LOCK re-sent 30 s later (the gateway's /stats tells).
    touch "$GW_OUT/hold-b.req"
    for _ in $(seq 1 60); do grep -q held "$GW_OUT/hold-b.res" 2>/dev/null && break; sleep 0.5; done
    check "a process on the server holds lockb" grep -q held "$GW_OUT/hold-b.res"
    timeout -s KILL 90 nlm_lock.py wait $m/lockb >"$E2E_WORK/wait.txt" 2>&1 &
    waiter=$!
    sleep 3 # the client's LOCK is blocked at the server meanwhile
    check "the client's process waits for lockb" bash -c "! grep -q granted '$E2E_WORK/wait.txt'"
    t0=$(date +%s.%N); touch "$GW_OUT/hold-b.stop"
    wait $waiter
    t1=$(date +%s.%N)
    check "the client's blocked lock is granted once the server's process lets go" \
        grep -q granted "$E2E_WORK/wait.txt"
    /usr/bin/python3 -c "print('%.1f' % ($t1 - $t0))" >"$E2E_WORK/blocked-wait.txt"
    echo "the blocked lock was granted $(cat "$E2E_WORK/blocked-wait.txt") s after the server's process let go"
    # The gateway restarts while the client holds a lock (the root namespace does it).
    stop=$E2E_WORK/lock-stop-2; rm -f "$stop"
    timeout -s KILL 150 nlm_lock.py hold $m/lockf "$stop" >"$E2E_WORK/hold-2.txt" &
    holder=$!
    for _ in $(seq 1 120); do grep -q held "$E2E_WORK/hold-2.txt" 2>/dev/null && break; sleep 0.5; done
    check "the client holds an fcntl lock before the gateway's restart" grep -q held "$E2E_WORK/hold-2.txt"
    touch "$E2E_WORK/restart.req"
    end=$((SECONDS + 120))
    while ((SECONDS < end)); do [[ -e $E2E_WORK/restart.done ]] && break; sleep 0.5; done
    check "the restarted gateway told the client from the address it mounted, and its lockd reclaimed through it ($(cat "$E2E_WORK/restart.done" 2>/dev/null))" \
        grep -q '^reclaimed' "$E2E_WORK/restart.done"
    id=$RANDOM$RANDOM; touch "$GW_OUT/lock-probe-$id.req"
    for _ in $(seq 1 60); do [[ -e $GW_OUT/lock-probe-$id.res ]] && break; sleep 0.5; done
    check "after the restart a process on the server is refused the client's lock (try: $(cat "$GW_OUT/lock-probe-$id.res" 2>/dev/null))" \
        test "$(cat "$GW_OUT/lock-probe-$id.res" 2>/dev/null)" = 1
    check "the client's process still holds its lock" kill -0 $holder
    touch "$stop"; wait $holder
    check "umount" timeout -s KILL 30 umount $m
else
    fail "mount -o vers=3,mountproto=udp $gw:/export"
fi
e2e_finish
CLIENT
ip netns exec c2 unshare -m --propagation private bash "$E2E_WORK/client.sh" &
client=$!
# The gateway's restart, when the client asks: SIGTERM (which saves its client list),
# started again; then until its /stats counts the client's reclaim (or 60 s).
granted=
while kill -0 $client 2>/dev/null; do
    if [[ -e $E2E_WORK/restart.req ]]; then
        rm -f "$E2E_WORK/restart.req"
        granted=$(gw_jq "s['routes'][0]['nlm']['granted_callbacks']['granted']") # the counters restart
        echo "--- the gateway restarts ($(date +%T)); its saved client list: $(tail -n +2 /var/lib/rpcrdma-gw/nfs.nlm-clients 2>/dev/null | xargs)"
        gw_stop
        echo "    after the stop: $(tail -n +2 /var/lib/rpcrdma-gw/nfs.nlm-clients 2>/dev/null | xargs)"
        t0=$(date +%s.%N)
        gw_start forward-2 "$E2E_WORK/gw.json"
        end=$((SECONDS + 60))
        while ((SECONDS < end)); do [[ $(gw_nlm_restart reclaims_converted) -ge 1 ]] 2>/dev/null && break; sleep 0.5; done
        t1=$(date +%s.%N)
        grep -E "nlm (restart|notify)" "$GW_LOG"
        read -r told cdel recl < <(gw_nlm_restart clients_told clients_delivered reclaims_converted)
        what="clients_told ${told:-}, clients_delivered ${cdel:-}, reclaims_converted ${recl:-}"
        if [[ ${recl:-0} -ge 1 ]]; then
            echo "reclaimed $(/usr/bin/python3 -c "print('%.1f' % ($t1 - $t0))") s after the start: $what" >"$E2E_WORK/restart.done"
        else
            echo "no reclaim in 60 s: $what" >"$E2E_WORK/restart.done"
        fi
        cat "$E2E_WORK/restart.done"
    fi
    sleep 0.5
done
rc=0; wait $client || rc=$?
check "the client scenario in namespace c2 (status $rc)" test $rc -eq 0

[[ -n $granted ]] || granted=$(gw_jq "s['routes'][0]['nlm']['granted_callbacks']['granted']")
check "the server's GRANTED came through the route's NLM relay and was relayed (granted_callbacks.granted before the restart: $granted)" \
    test "${granted:-0}" -ge 1
check "the log says the server's callbacks come to the route's relays" \
    grep -q "the server's GRANTED callbacks and SM_NOTIFY to .* come to them" "$GW_LOG"

gw_stop
grep -E "unregistered" "$GW_LOG"
rpcinfo -p 127.0.0.1 | tee "$E2E_WORK/host-rpcinfo-after.txt"
check "after the stop the host's rpcbind lists none of the gateway's programs" \
    bash -c "! grep -qE 'nfs|mountd|nlockmgr|status' '$E2E_WORK/host-rpcinfo-after.txt'"
check "after the stop the host's rpcbind still answers for itself" \
    grep -qE '100000 +2 +udp +111 +portmapper' "$E2E_WORK/host-rpcinfo-after.txt"

# No rpcbind: --check says what is missing.
pkill -x rpcbind; sleep 0.5
"$GW_BIN" -c "$E2E_WORK/gw.json" --check >"$E2E_WORK/check-norpcbind.txt" 2>&1
cat "$E2E_WORK/check-norpcbind.txt"
check "--check without rpcbind: plain NFSv3 unavailable, no rpcbind answers" \
    grep -q "warning: route nfs: plain NFSv3 unavailable: .*no rpcbind answers here" \
    "$E2E_WORK/check-norpcbind.txt"
touch "$GW_OUT/client-done"
e2e_finish
