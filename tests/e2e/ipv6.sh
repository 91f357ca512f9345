# IPv6 end to end, one guest. The Soft-RoCE veth pair gets fd00:2::1 (the server's side,
# rxe0) and fd00:2::2 (the gateway's, rxe1) beside 192.0.2.1/.2; rxe takes IPv6 GIDs from
# them, so the gateway reaches the kernel NFS server (RDMA only) over RoCEv2 on IPv6:
# upstream rdma://[fd00:2::1]:20049 (nfsd's "rdma 20049" listens on IPv4 and IPv6).
# A forward route listens on tcp://[fd00:2::2]:2049 with its portmapper (port 111),
# MOUNT and NLM relays; its /stats listens on [fd00:2::2]:9464. The client sits in the
# network namespace c6, whose only link address is fd00:3::2 (routed to the guest's
# fd00:3::1), with its own rpcbind and rpc.statd. From there:
#  - NFSv4.2: mount [fd00:2::2]:/, 16 MiB written and read back with checksums; /stats
#    lists the session with the client's IPv6 address and an IPv6 RDMA connection;
#  - plain NFSv3 with mount's defaults: rpcbind v4 over IPv6 gives the MOUNT relay's IPv6
#    universal address; mount [fd00:2::2]:/export (MOUNT through the relay, which finds
#    the server's mountd by rpcbind GETADDR of udp6), 16 MiB with checksums, and an fcntl
#    lock (NLM through the relay to the server's lockd over IPv6) that a process on the
#    server is refused until the client releases it; the server's statd got the route's
#    SM_NOTIFY at start.
# The server's rpcbind must leave port 111 on fd00:2::2 to the gateway: it gets no TCP6
# listener (its own /etc/netconfig) and its UDP on the server's addresses only (-h).
# The lock is a non-blocking one: a blocked lock would wait for the server's GRANTED,
# whose callback service here shares the host rpcbind with the server's own lockd
# (docs/forward-mode.md, GRANTED callbacks) and so waits for the client's 30 s re-send.
set -u
source "$GW_SRC/tests/e2e/lib/gw-e2e.sh"
gwvm-net
# Then reverse mode over IPv6: this guest's own NFS client mounts a reverse route over RDMA
# on IPv6 (proto=rdma6), the route reaches the server over TCP on IPv6; data with
# checksums, /stats shows both IPv6 ends.
# nodad: usable at once, no duplicate address detection to wait for.
ip addr add fd00:2::1/64 dev veth0 nodad
ip addr add fd00:2::2/64 dev veth1 nodad
# The server's rpcbind reads a netconfig without tcp6 (bound over /etc/netconfig for it
# alone: the client's mount.nfs needs tcp6 there), so it keeps no [::]:111 over TCP.
grep -v '^tcp6[[:space:]]' /etc/netconfig >"$E2E_WORK/netconfig-no-tcp6"
unshare -m sh -c "mount --bind '$E2E_WORK/netconfig-no-tcp6' /etc/netconfig &&
    exec rpcbind -w -h 192.0.2.1 -h fd00:2::1"
gwvm-nfsd /export rdma
pgrep -x rpc.statd >/dev/null || rpc.statd # the server's lockd monitors who locks
modprobe nfsv3; modprobe nfsv4
rdma res show cm_id | grep -i listen # nfsd's listeners, IPv4 and IPv6
check "rxe1 has the gateway's IPv6 address as a GID" \
    grep -qx 'fd00:0002:0000:0000:0000:0000:0000:0002' <(cat /sys/class/infiniband/rxe1/ports/1/gids/*)

# The IPv6-only client: namespace c6, fd00:3::2 on its veth, nothing of IPv4 but loopback.
ip netns add c6
ip link add vg6 type veth peer name vc6 netns c6
ip addr add fd00:3::1/64 dev vg6 nodad; ip link set vg6 up
ip -n c6 addr add fd00:3::2/64 dev vc6 nodad; ip -n c6 link set vc6 up; ip -n c6 link set lo up
ip -n c6 -6 route add default via fd00:3::1

export GW_STATS='[fd00:2::2]:9464'
cat >"$E2E_WORK/gw.json" <<JSON
{ "routes": [ { "name": "nfs", "mode": "forward", "portmapper_port": 111,
                "listen": "tcp://[fd00:2::2]:2049", "upstream": "rdma://[fd00:2::1]:20049" } ],
  "stats": { "listen": "$GW_STATS" } }
JSON
nfsd_wait_grace 192.0.2.1 || fail "the NFS server's grace period ended"
gw_start forward "$E2E_WORK/gw.json" || e2e_finish
grep -E "listen|portmapper|MOUNT|NLM|nlm callback" "$GW_LOG"

cat >"$E2E_WORK/client.sh" <<'CLIENT'
set -u
source "$GW_SRC/tests/e2e/lib/gw-e2e.sh"
# This host's own /run and /var/lib/nfs, so that its rpcbind and statd are not the server's.
mount -t tmpfs tmpfs /run; mount -t tmpfs tmpfs /var/lib/nfs
mkdir -p /var/lib/nfs/sm /var/lib/nfs/sm.bak
rpcbind -w && rpc.statd || fail "the client's rpcbind and rpc.statd started"
check "the client has no IPv4 address but loopback's" \
    test -z "$(ip -4 -o addr show scope global)"
gw='[fd00:2::2]'
sessions() { # the clients and upstreams of the route's sessions
    gw_jq "' '.join(x['client'] + '>' + x['upstream'] for x in s['routes'][0]['sessions'])"
}
# A session as /stats shows it: the client's address, and the gateway's own end of its
# RDMA connection (here fd00:2::1 too: the kernel picks the destination, a local
# address, as the source; a reserved port).
v6_session() { # every session listed is one, and there is one
    local x
    for x in $1; do grep -qE '^\[fd00:3::2\]:[0-9]+>\[fd00:2::[12]\]:[0-9]+$' <<<"$x" || return 1; done
    test -n "$1"
}

m=/mnt/v42; mkdir -p $m
if mount -t nfs -o vers=4.2 "$gw:/" $m; then
    grep " $m " /proc/mounts
    check "NFSv4.2 mount goes to the gateway over IPv6" \
        grep -q "addr=fd00:2::2" <(grep " $m " /proc/mounts)
    d=$m/v6-42; mkdir -p $d
    wl_bigfile $d 16
    got=$(sessions)
    check "/stats lists the NFSv4.2 session: client fd00:3::2, RDMA over IPv6 ($got)" \
        v6_session "$got"
    rm -rf $d
    check "umount NFSv4.2" umount $m
else
    fail "mount -t nfs -o vers=4.2 $gw:/ $m"
fi

rpcinfo fd00:2::2 | tee "$E2E_WORK/rpcinfo.txt" # rpcbind v4 DUMP over IPv6
check "the gateway's portmapper over IPv6 gives MOUNT v3 at an IPv6 universal address" \
    grep -qE '100005 +3 +(udp|tcp)6? +fd00:2::2\.[0-9]+\.[0-9]+ +mountd' "$E2E_WORK/rpcinfo.txt"
m=/mnt/v3; mkdir -p $m
if mount -t nfs -o vers=3 "$gw:/export" $m; then
    grep " $m " /proc/mounts
    check "NFSv3 mount: NFS and MOUNT at the gateway over IPv6" \
        grep -q "mountaddr=fd00:2::2.*addr=fd00:2::2\|addr=fd00:2::2.*mountaddr=fd00:2::2" \
        <(grep " $m " /proc/mounts)
    d=$m/v6-3; mkdir -p $d
    wl_bigfile $d 16
    got=$(sessions)
    check "/stats lists the NFSv3 session: client fd00:3::2, RDMA over IPv6 ($got)" \
        v6_session "$got"
    rm -rf $d
    # The lock, through the NLM relay: a process on the server (the export is this
    # guest's own tmpfs, seen here too) is refused it while the client holds it.
    stop=$E2E_WORK/lock.stop; rm -f "$stop"
    nlm_lock.py hold $m/lockf "$stop" >"$E2E_WORK/holder.out" 2>&1 &
    holder=$!
    for _ in $(seq 1 90); do grep -q . "$E2E_WORK/holder.out" && break; sleep 0.5; done
    check "NFSv3: the client takes an fcntl lock through the gateway" \
        grep -q '^held' "$E2E_WORK/holder.out"
    r=0; nlm_lock.py try /export/lockf || r=$?
    check "a process on the server is refused the lock the client holds (try: $r)" test $r -eq 1
    n=$(gw_jq "s['routes'][0]['nlm']['locks']")
    check "the NLM relay records the lock (/stats nlm.locks $n)" test "$n" = 1
    touch "$stop"; wait $holder
    r=1
    for _ in $(seq 1 10); do r=0; nlm_lock.py try /export/lockf || r=$?; ((r == 0)) && break; sleep 1; done
    check "released: the process on the server gets the lock (try: $r)" test $r -eq 0
    check "umount NFSv3" timeout -s KILL 30 umount $m
else
    fail "mount -o vers=3 $gw:/export $m"
fi
e2e_finish
CLIENT
check "the IPv6-only client's scenario in namespace c6" ip netns exec c6 bash "$E2E_WORK/client.sh"

# At start the route told the server's statd (found through its rpcbind over IPv6) that
# it restarted.
check "the server's statd answered the gateway's SM_NOTIFY over IPv6" \
    grep -q "the server's statd was told this gateway restarted" "$GW_LOG"
calls() { gw_jq "sum(p['calls'] for p in s['routes'][0]['totals']['procedures'] if p['program_name'] == '$1')"; }
check "MOUNT calls relayed ($(calls mount))" test "$(calls mount)" -ge 1
check "NLM calls relayed ($(calls nlm))" test "$(calls nlm)" -ge 2
gw_check_quiet
gw_stop
grep -E "error|warning" "$GW_LOG" | head -20

# ---- reverse mode over IPv6: an RDMA client over RoCEv2 on IPv6, the server over TCP6 ----
# The client is this guest's initial namespace (rdma_rxe on 6.1 works there only): it
# mounts the gateway at [fd00:2::2]:20050 with proto=rdma6; the gateway relays to the
# server's TCP listener at [fd00:2::1]:2049 (nfsd's "tcp 2049" listens on IPv6 too).
echo "tcp 2049" >/proc/fs/nfsd/portlist
modprobe rpcrdma
cat >"$E2E_WORK/gw-rev.json" <<JSON
{ "routes": [ { "name": "rev6", "mode": "reverse",
                "listen": "rdma://[fd00:2::2]:20050", "upstream": "tcp://[fd00:2::1]:2049" } ],
  "stats": { "listen": "$GW_STATS" } }
JSON
gw_start reverse "$E2E_WORK/gw-rev.json" || e2e_finish
m=/mnt/r6; mkdir -p $m
if mount -t nfs -o vers=4.2,proto=rdma6,port=20050 "[fd00:2::2]:/" $m; then
    grep " $m " /proc/mounts
    check "reverse: the NFSv4.2 mount is RDMA over IPv6 to the gateway" \
        grep -q "proto=rdma6.*addr=fd00:2::2\|addr=fd00:2::2.*proto=rdma6" <(grep " $m " /proc/mounts)
    d=$m/v6-rev; mkdir -p $d
    wl_bigfile $d 8
    got=$(gw_jq "' '.join(x['client'] + '>' + x['upstream'] for x in s['routes'][0]['sessions'])")
    # As above: the client's address, and the gateway's own end of its TCP connection
    # to the server (an IPv6 address of this guest).
    check "reverse: /stats lists the session: an IPv6 RDMA client, the server over TCP6 ($got)" \
        grep -qE '^\[fd00:2::[12]\]:[0-9]+>\[fd00:2::[12]\]:[0-9]+$' <<<"$got"
    rm -rf $d
    check "reverse: umount" umount $m
else
    fail "mount -o vers=4.2,proto=rdma6,port=20050 [fd00:2::2]:/ $m"
fi
gw_check_quiet
gw_stop
grep -E "error|warning" "$GW_LOG" | head -20
e2e_finish
