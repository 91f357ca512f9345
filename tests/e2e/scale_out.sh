# gwvm: three-guests
# Active-active gateways behind Linux IPVS (deploy/scale-out/, issue 33), set up as
# docs/operations.md ("Scale-out") says, with the shipped files.
# Guest A (192.0.2.1, a bridge over its links to B and C) is the NFS server (kernel nfsd,
# RDMA only), the IPVS director (keepalived-director.conf: the virtual address
# 192.0.2.100, the firewall-mark service 49 with the mh scheduler, direct routing, the
# gateways' /healthz as the check; director-fwmark.nft) and the client hosts: network
# namespaces whose veth ends are ports of A's bridge, so that each is a host of its own
# on the segment (its own address, which is what IPVS hashes) and the gateways answer
# it directly. Guests B (192.0.2.2) and C (192.0.2.3) are the two gateways, the virtual
# address on lo (gateway-vip, 60-rpcrdma-gw-vip.conf), the route with portmapper_port
# 111 (as deploy/scale-out/gw.json), its state directory the default
# /var/lib/rpcrdma-gw/, kept across the kill and restart below.
#  - which gateway each candidate client hashes to is read from IPVS after one UDP
#    datagram to port 9 of the virtual address; 8 clients are chosen, at least 2 on
#    each gateway, NFSv3 and NFSv4.1 on both; each client's NFS connection (TCP 2049)
#    lands on the gateway its UDP datagram did (one service for every port), as each
#    gateway's /stats shows;
#  - a ninth client hashed to B, the lock client, mounts $VIP:/export as an unmodified
#    NFSv3 client does (no nolock, no mountaddr; its own rpcbind and rpc.statd) and a
#    process there holds an fcntl lock: a process on the server is refused it; its
#    MOUNT (MNT), NLM (LOCK; NULL over UDP) and NSM (NULL over UDP) calls are counted
#    by B, none by C: all the ports of a client kept together, UDP and TCP;
#  - aggregate MB/s of the 8 clients through both gateways, then through one;
#  - gateway B is killed (SIGKILL) in the middle of every client's copy: every copy
#    finishes, equal to its source on the server, no call returns an error, nothing is
#    remounted; the moved clients' longest wait, and the others' latency before and
#    after, are printed; B's NFSv3 clients run RENAME, REMOVE, MKDIR and RMDIR back to
#    back meanwhile, and the calls that ran twice (ENOENT or EEXIST: the retransmission
#    came from C's address, which the server's reply cache does not know) are counted
#    and printed, with the server's reply cache hits and misses (a measurement, never a
#    failure); B's saved client list names the lock client; while B is away a process
#    on the server is still refused the lock (held under B's address), and the lock
#    client's NFS goes on through C;
#  - B comes back: IPVS takes it back after its first good check; its start tells the
#    server's statd (which frees B's locks) and the lock client (from $VIP, each send
#    from a new port, so that the answers reach B once IPVS has it back, not only C):
#    /stats nlm.gateway_restart shows it delivered and the reclaim turned into a LOCK;
#    a process on the server is refused the lock again while the client's process
#    still holds it, and gets it once the client lets go; the times until B was back in
#    IPVS and until the reclaim are printed; no existing client moves (every one still
#    on C after a write), and a new client hashed to B reaches it;
#  - SIGTERM of C in the middle of the copies: its /healthz answers 503 at once while it
#    goes on listening for drain_delay_s (3 s, as deploy/scale-out/gw.json), it exits 0,
#    its clients move to B with no error, their copies are intact.
# The 8 clients' NFSv3 mounts use nolock and MOUNT goes to the server itself (as
# failover.sh): their data, not their side protocols, is what the kill measures.
set -u
source "$GW_SRC/tests/e2e/lib/gw-e2e.sh"
VIP=192.0.2.100
SO=$GW_SRC/deploy/scale-out
CL=$GW_SRC/tests/e2e/lib/scale_clients.py

wait_file() { # FILE SECONDS: false at the timeout, or once A gave up
    local i
    for i in $(seq 1 $(($2 * 10))); do
        [[ -e $1 ]] && return 0
        [[ -e $GW_OUT/a-done ]] && return 1
        sleep 0.1
    done
    return 1
}

# ---- B and C: a gateway each, doing what A asks through files in GW_OUT ----
if [[ $GWVM_ROLE == b || $GWVM_ROLE == c ]]; then
    me=$GWVM_ROLE
    addr=192.0.2.2; [[ $me == c ]] && addr=192.0.2.3
    gwvm-net $addr
    sysctl -q -p "$SO/60-rpcrdma-gw-vip.conf"
    "$SO/gateway-vip" up $VIP
    # The route's portmapper takes port 111 of the virtual address, its callback service
    # that of the upstream-side address: no host rpcbind here (as nfsv3_plain.sh).
    pkill -x rpcbind 2>/dev/null; sleep 0.5
    # The state directory (nfs.nsm-state, nfs.nlm-clients) is the default
    # /var/lib/rpcrdma-gw/, kept across the gateway's kill and restart on this guest.
    cat >"$E2E_WORK/gw.json" <<JSON
{ "drain_timeout_s": 10, "drain_delay_s": 3,
  "routes": [ { "name": "nfs", "mode": "forward", "portmapper_port": 111,
                "listen": "tcp://$VIP:2049", "upstream": "rdma://192.0.2.1:20049" } ],
  "stats": { "listen": "$addr:9464" } }
JSON
    wait_file "$GW_OUT/a-nfsd" 300 || exit 1
    gw_start gw-$me "$E2E_WORK/gw.json" || { touch "$GW_OUT/$me-failed"; exit 1; }
    touch "$GW_OUT/$me-ready"
    n=1
    while [[ ! -e $GW_OUT/a-done ]]; do
        if [[ -e $GW_OUT/$me-kill && ! -e $GW_OUT/$me-killed ]]; then
            kill -KILL "$GW_PID"; wait "$GW_PID" 2>/dev/null
            cp /var/lib/rpcrdma-gw/nfs.nlm-clients "$GW_OUT/$me-nlm-clients-at-kill" 2>/dev/null
            touch "$GW_OUT/$me-killed"
        fi
        if [[ -e $GW_OUT/$me-start && ! -e $GW_OUT/$me-started ]]; then
            n=$((n + 1))
            gw_start gw-$me-$n "$E2E_WORK/gw.json"
            touch "$GW_OUT/$me-started"
        fi
        if [[ -e $GW_OUT/$me-term && ! -e $GW_OUT/$me-termed ]]; then
            kill -TERM "$GW_PID"
            curl -s -m 2 -o /dev/null -w '%{http_code}\n' "http://$addr:9464/healthz" \
                >"$GW_OUT/$me-healthz-after-term"
            # drain_delay_s: still listening while the director takes it out.
            if timeout 2 bash -c "exec 3<>/dev/tcp/$VIP/2049"; then
                echo listening >"$GW_OUT/$me-listen-after-term"
            else
                echo closed >"$GW_OUT/$me-listen-after-term"
            fi
            rc=0; wait "$GW_PID" || rc=$?
            echo "$rc" >"$GW_OUT/$me-term-status"
            touch "$GW_OUT/$me-termed"
        fi
        sleep 0.1
    done
    [[ -e $GW_OUT/$me-termed ]] || gw_stop
    e2e_finish
    exit 0
fi

# ---- A: the NFS server, the director and the clients ----
fin() { # give up: end B and C, unmount what can be
    touch "$GW_OUT/a-done"
    [[ -s ${LK_PID:-} ]] && lk umount -f -l /mnt/lk 2>/dev/null
    for d in /mnt/c*; do umount -f -l "$d" 2>/dev/null; done
    cp "$E2E_WORK"/*.json "$GW_OUT/" 2>/dev/null
    e2e_finish
    exit 1
}
gwvm-net 192.0.2.1
gwvm-nfsd /export rdma
# lockd monitors each host that locks (SM_MON): without statd it refuses every lock.
pgrep -x rpc.statd >/dev/null || rpc.statd
touch /export/lockf /export/lk-data; chmod 666 /export/lockf /export/lk-data
touch "$GW_OUT/a-nfsd"
modprobe nfsv3; modprobe nfsv4; modprobe ip_vs; modprobe ip_vs_mh
sysctl -q -p "$SO/60-rpcrdma-gw-director.conf"
check "the shipped nft rules load (mark 49 on the virtual address)" nft -f "$SO/director-fwmark.nft"
sed "s/interface eth0/interface br0/; s/dev eth0/dev br0/" "$SO/keepalived-director.conf" \
    >"$E2E_WORK/keepalived.conf"
check "keepalived -t accepts keepalived-director.conf" keepalived -t -f "$E2E_WORK/keepalived.conf"
keepalived --dont-fork --log-console --log-detail -f "$E2E_WORK/keepalived.conf" \
    -p /run/ka.pid -r /run/ka-vrrp.pid -c /run/ka-check.pid >"$GW_OUT/keepalived.log" 2>&1 &
KA_PID=$!

real_servers() { ipvsadm -Ln | grep -c -- '-> 192.0.2.[23]:0 *Route'; }
in_table() { ipvsadm -Ln | grep -q -- "-> $1:0 *Route"; }
wait_file "$GW_OUT/b-ready" 300 && wait_file "$GW_OUT/c-ready" 60 ||
    { fail "both gateways started"; fin; }
for _ in $(seq 1 300); do [[ $(real_servers) == 2 ]] && break; sleep 0.1; done
check "IPVS has both gateways after their first good /healthz ($(real_servers))" test "$(real_servers)" = 2
check "the service is the firewall mark 49, scheduler mh" bash -c "ipvsadm -Ln | grep -Eq '^FWM +49 +mh'"
ip -4 addr show dev br0 | grep -q "inet $VIP/" || sleep 3
check "keepalived put $VIP on the director" bash -c "ip -4 addr show dev br0 | grep -q 'inet $VIP/'"
ipvsadm -Ln >"$GW_OUT/ipvs-start.txt"

# A client host: namespace cN, address 192.0.2.N, a port of A's bridge.
client_add() {
    ip netns add c$1
    ip link add vc$1 type veth peer name eth0 netns c$1
    ip link set vc$1 master br0 up
    ip -n c$1 addr add 192.0.2.$1/24 dev eth0
    ip -n c$1 link set eth0 up; ip -n c$1 link set lo up
}
# Which gateway IPVS sends client N to: one UDP datagram to port 9, then its entry.
client_gateway() {
    nsenter --net=/run/netns/c$1 bash -c "echo probe >/dev/udp/$VIP/9" 2>/dev/null
    sleep 0.2
    ipvsadm -Lnc | awk -v s="192.0.2.$1:" '$1 == "UDP" && index($4, s) == 1 { split($6, d, ":"); print d[1]; exit }'
}
client_mount() { # N VERSION
    local m=/mnt/c$1 o=vers=4.1,proto=tcp,port=2049,hard,timeo=50 what=$VIP:/
    [[ $2 == 3 ]] && { o=vers=3,proto=tcp,port=2049,nolock,hard,timeo=50,mountaddr=192.0.2.1,mountproto=tcp; what=$VIP:/export; }
    mkdir -p $m /export/c$1; chmod 777 /export/c$1
    # its own host name: an NFSv4 client's identity on the server
    nsenter --net=/run/netns/c$1 unshare --uts bash -c "hostname scale-c$1; mount -t nfs -o $o $what $m"
}
client_dirs() { local n; for n in "$@"; do echo /mnt/c$n/c$n; done; }
# Each gateway's sessions by client address: "192.0.2.N ..." on one line.
gw_clients() { # GATEWAY_ADDR
    curl -sf -m 5 "http://$1:9464/stats" | python3 -c "
import json, sys
s = json.load(sys.stdin)
print(' '.join(sorted({x['client'].rsplit(':', 1)[0] for x in s['routes'][0].get('sessions', [])})))"
}

# The lock client: namespace cN with its own rpcbind and rpc.statd in a mount namespace
# of its own (its own /run, as nfsv3_plain.sh's second host), mounting $VIP:/export as
# an unmodified NFSv3 client does (no nolock, no mountaddr: MOUNT, NLM and NSM through
# the gateways' portmapper on the virtual address). Its anchor process's pid is in LK_PID.
LK_PID=$E2E_WORK/lk.pid LK_STOP=$E2E_WORK/lk.stop
lk() { nsenter -t "$(cat "$LK_PID")" -m -n -u "$@"; }
lk_mount() { # N
    ip netns exec c$1 unshare -m -u --propagation private bash -c '
        hostname scale-lk && mount -t tmpfs lkrun /run &&
        mkdir -p /run/lk-statd/sm /run/lk-statd/sm.bak /mnt/lk &&
        rpcbind && rpc.statd -P /run/lk-statd &&
        mount -t nfs -o vers=3,proto=tcp,hard,timeo=50 '$VIP':/export /mnt/lk &&
        echo $$ >"'$LK_PID'" && exec sleep infinity' >"$GW_OUT/lk-mount.log" 2>&1 &
    for _ in $(seq 1 60); do [[ -s $LK_PID ]] && break; sleep 1; done
    [[ -s $LK_PID ]]
}
# srv_try: a process on the server tries the lock the lock client takes (lockd's locks
# are the file's own POSIX locks): 0 granted (and given back), 1 held by another owner.
srv_try() { local r=0; timeout -s KILL 30 nlm_lock.py try /export/lockf >/dev/null || r=$?; return $r; }
# side_calls GATEWAY_ADDR PROGRAM[:PROCEDURE]...: the calls of each that the gateway
# counted (every procedure of the program without one), on one line.
side_calls() {
    local gw=$1; shift
    curl -sf -m 5 "http://$gw:9464/stats?sessions=0" | python3 -c "
import json, sys
p = json.load(sys.stdin)['routes'][0]['totals']['procedures']
out = []
for a in sys.argv[1:]:
    g, r = (list(map(int, a.split(':'))) + [-1])[:2]
    out.append(sum(x['calls'] for x in p if x['program'] == g and (r < 0 or x['procedure'] == r)))
print(*out)" "$@"
}
# gw_restart KEY...: B's nlm.gateway_restart figures, on one line.
gw_restart() { GW_STATS=192.0.2.2:9464 gw_nlm_restart "$@"; }

on_b=() on_c=()
for n in $(seq 11 26); do
    client_add $n
    case $(client_gateway $n) in
    192.0.2.2) on_b+=($n) ;;
    192.0.2.3) on_c+=($n) ;;
    esac
done
echo "candidates: on B ${on_b[*]}; on C ${on_c[*]}"
check "the UDP datagrams of 16 candidates were scheduled on both gateways (${#on_b[@]} on B, ${#on_c[@]} on C)" \
    test $((${#on_b[@]} + ${#on_c[@]})) -eq 16 -a ${#on_b[@]} -ge 2 -a ${#on_c[@]} -ge 2
# 8 clients, as evenly as the hash allows, NFSv3 and NFSv4.1 alternately on each gateway.
nb=4; ((${#on_b[@]} < 4)) && nb=${#on_b[@]}; nc=$((8 - nb)); ((nc > ${#on_c[@]})) && { nc=${#on_c[@]}; nb=$((8 - nc)); }
B=("${on_b[@]:0:nb}") C=("${on_c[@]:0:nc}")
ALL=("${B[@]}" "${C[@]}") ORIG=("${B[@]}" "${C[@]}")
# The lock client: a ninth host hashed to B (a spare candidate, else a new address).
L=${on_b[nb]:-}
if [[ -z $L ]]; then
    for n in $(seq 41 60); do
        client_add $n
        [[ $(client_gateway $n) == 192.0.2.2 ]] && { L=$n; break; }
    done
fi
[[ -n $L ]] || { fail "none of 20 more addresses was hashed to B (for the lock client)"; fin; }
declare -A VERS
# (Not $((i++)) inside $(...): a subshell's i++ is lost, and every client of B was NFSv3.)
i=0; for n in "${B[@]}"; do VERS[$n]=3; ((i++ % 2)) && VERS[$n]=4.1; done
i=0; for n in "${C[@]}"; do VERS[$n]=4.1; ((i++ % 2)) && VERS[$n]=3; done
mounted=0
for n in "${ALL[@]}"; do
    client_mount $n ${VERS[$n]} && mountpoint -q /mnt/c$n && mounted=$((mounted + 1))
    mkdir -p /mnt/c$n/c$n 2>/dev/null
done
check "8 clients mounted $VIP (B: ${B[*]}; C: ${C[*]}; NFSv3: $(for n in "${ALL[@]}"; do [[ ${VERS[$n]} == 3 ]] && echo -n "$n "; done))" \
    test "$mounted" -eq 8
((mounted == 8)) || fin
check "the lock client (192.0.2.$L, hashed to B) mounts $VIP:/export with vers=3, no nolock" lk_mount $L
[[ -s $LK_PID ]] || fin
python3 "$CL" touch $(client_dirs "${ALL[@]}") >/dev/null
rm -f "$LK_STOP"
lk nlm_lock.py hold /mnt/lk/lockf "$LK_STOP" >"$E2E_WORK/lk-holder.out" 2>&1 &
LK_HOLDER=$!
for _ in $(seq 1 90); do grep -q . "$E2E_WORK/lk-holder.out" && break; sleep 0.5; done
check "the lock client's process takes an fcntl lock through $VIP ($(cat "$E2E_WORK/lk-holder.out"))" \
    grep -q '^held' "$E2E_WORK/lk-holder.out"
r=0; srv_try || r=$?
check "a process on the server is refused that lock (try: $r)" test $r -eq 1
# UDP side protocols too: NULL to MOUNT, NLM and NSM over UDP (rpcinfo asks the portmapper
# on $VIP over UDP for each port first). The client's statd has nothing to tell a server
# until it reboots, so this NULL is its only NSM traffic toward the gateway.
for p in 100005:3 100021:4 100024:1; do
    check "the lock client: rpcinfo -T udp $VIP ${p%:*} ${p#*:} answers" lk rpcinfo -T udp $VIP ${p%:*} ${p#*:}
done
read -r mnt lck nnull snull < <(side_calls 192.0.2.2 100005:1 100021:2 100021:0 100024:0)
check "B relayed the lock client's side calls (MOUNT MNT ${mnt:-}, NLM LOCK ${lck:-}, NLM NULL ${nnull:-}, NSM NULL ${snull:-})" \
    test "${mnt:-0}" -ge 1 -a "${lck:-0}" -ge 1 -a "${nnull:-0}" -ge 1 -a "${snull:-0}" -ge 1
csides=$(side_calls 192.0.2.3 100000 100005 100021 100024)
check "C saw none of them (portmapper, MOUNT, NLM, NSM calls: $csides)" test "$csides" = "0 0 0 0"
sb=$(gw_clients 192.0.2.2) sc=$(gw_clients 192.0.2.3)
echo "split: gateway B serves $sb; gateway C serves $sc"
want_b=$(for n in "${B[@]}" $L; do echo 192.0.2.$n; done | sort | xargs) want_c=$(for n in "${C[@]}"; do echo 192.0.2.$n; done | sort | xargs)
check "B's /stats has exactly the clients whose UDP datagram went to B, the lock client's NFS connection too ($sb)" test "$sb" = "$want_b"
check "C's /stats has exactly the clients whose UDP datagram went to C ($sc)" test "$sc" = "$want_c"
sbs=$(curl -sf "http://192.0.2.2:9464/stats?sessions=0" | python3 -c "import json,sys; print(json.load(sys.stdin)['routes'][0]['sessions_by_state'])")
check "B counts its sessions by state ($sbs)" grep -q "'ready': $((${#B[@]} + 1))" <<<"$sbs"

# ---- throughput through two gateways ----
python3 "$CL" write "$E2E_WORK/tp2.json" 4 $(client_dirs "${ALL[@]}")
tp2=$(python3 -c "import json; print('%.1f' % json.load(open('$E2E_WORK/tp2.json'))['mb_per_s'])")

# ---- SIGKILL of B in the middle of every client's copy ----
# Light copies (8 clients x 128 KiB every 0.5 s: 2 MB/s, well under what guest A moves),
# so that the latencies measure the gateways, not guest A's one CPU; 8 s each.
src=$(e2e_source 2)
# Non-idempotent calls in flight at the loss: B's NFSv3 clients also run RENAME, REMOVE,
# MKDIR and RMDIR back to back; one that the server ran but whose reply died with B is
# retransmitted through C, misses the server's reply cache (it keys on the caller's
# address, now C's) and runs again: the client sees ENOENT or EEXIST for a call that did
# what it asked. Counted, not judged (a measurement).
NI=() ; for n in "${B[@]}"; do [[ ${VERS[$n]} == 3 ]] && NI+=($n); done
rc_before=$(awk '$1 == "rc" { print $2, $3 }' /proc/net/rpc/nfsd)
rm -f "$E2E_WORK/ni.stop"; NI_PIDS=()
for n in "${NI[@]}"; do
    python3 - /mnt/c$n/c$n/ni "$E2E_WORK/ni.stop" "$E2E_WORK/ni-$n.json" <<'PY' &
import errno, json, os, sys, time
d, stop, out = sys.argv[1:4]
os.makedirs(d, exist_ok=True)
open(out + ".started", "w").close()
r = {"ops": 0, "twice": 0, "other_errors": 0, "twice_by_call": {}}
f, g, sub = d + "/f", d + "/g", d + "/sub"
def op(name, fn, *args, again=None):
    r["ops"] += 1
    try:
        fn(*args)
    except OSError as e:
        if e.errno == again: # what a second run of a call that ran returns
            r["twice"] += 1
            r["twice_by_call"][name] = r["twice_by_call"].get(name, 0) + 1
        else:
            r["other_errors"] += 1
while not os.path.exists(stop):
    os.close(os.open(f, os.O_CREAT | os.O_WRONLY, 0o644))
    op("RENAME", os.rename, f, g, again=errno.ENOENT)
    op("REMOVE", os.unlink, g, again=errno.ENOENT)
    op("MKDIR", os.mkdir, sub, again=errno.EEXIST)
    op("RMDIR", os.rmdir, sub, again=errno.ENOENT)
    time.sleep(0.01) # leave guest A's one CPU to the copies
json.dump(r, open(out, "w"))
PY
    NI_PIDS+=($!)
done
for n in "${NI[@]}"; do wait_file "$E2E_WORK/ni-$n.json.started" 30; done
python3 "$CL" workload "$E2E_WORK/kill.json" "$src" 0.5 128 kill $(client_dirs "${ALL[@]}") &
wl=$!
sleep 2
t_kill=$(date +%s.%N)
touch "$GW_OUT/b-kill"
wait_file "$GW_OUT/b-killed" 10
for _ in $(seq 1 100); do in_table 192.0.2.2 || break; sleep 0.1; done
check "keepalived took B out of IPVS" bash -c "! ipvsadm -Ln | grep -q -- '-> 192.0.2.2:0'"
wait $wl
touch "$E2E_WORK/ni.stop"; wait "${NI_PIDS[@]}"
rc_after=$(awk '$1 == "rc" { print $2, $3 }' /proc/net/rpc/nfsd)
ni=$(python3 - "$rc_before" "$rc_after" $(for n in "${NI[@]}"; do echo "$E2E_WORK/ni-$n.json"; done) <<'PY'
import json, sys
b, a = [list(map(int, x.split())) for x in sys.argv[1:3]]
ops = twice = other = 0; by = {}
for f in sys.argv[3:]:
    r = json.load(open(f)); ops += r["ops"]; twice += r["twice"]; other += r["other_errors"]
    for k, v in r["twice_by_call"].items(): by[k] = by.get(k, 0) + v
print("clients=%d ops=%d twice=%d %s other_errors=%d server_reply_cache_hits=%d misses=%d" % (
    len(sys.argv) - 3, ops, twice, json.dumps(by, sort_keys=True).replace(" ", ""), other, a[0] - b[0], a[1] - b[1]))
PY
)
echo "non-idempotent calls across B's loss: $ni"
ok "non-idempotent calls across B's loss (a measurement): $ni"
rep=$(python3 "$CL" report "$E2E_WORK/kill.json" "$t_kill" $(client_dirs "${B[@]}"))
echo "SIGKILL of B: $rep"
check "no client call returned an error across B's loss ($rep)" grep -q 'errors=0 copy_errors=0' <<<"$rep"
copies_ok() { # TAG N...: every copy equal to the source on the server
    local n want bad=0
    want=$(sha256sum <"$src" | cut -d' ' -f1)
    local tag=$1; shift
    for n in "$@"; do
        [[ $(sha256sum </export/c$n/copy-$tag | cut -d' ' -f1) == "$want" ]] || { echo "c$n: copy-$tag differs"; bad=1; }
    done
    return $bad
}
check "every client's copy is equal to its source on the server" copies_ok kill "${ALL[@]}"
check "no client was remounted (8 mounts of $VIP)" test "$(grep -c " /mnt/c[0-9]* nfs" /proc/mounts)" -eq 8
# The lock client: B's saved list named it; while B is away the server holds its lock
# under B's address, so a process there is still refused it; its NFS goes on through C.
check "B's saved client list named the lock client at the kill ($(xargs <"$GW_OUT/b-nlm-clients-at-kill" 2>/dev/null))" \
    grep -qx "192.0.2.$L" "$GW_OUT/b-nlm-clients-at-kill"
r=0; srv_try || r=$?
check "while B is away, a process on the server is refused the lock held through B (try: $r)" test $r -eq 1
check "the lock client writes through C" \
    lk dd if=/dev/zero of=/mnt/lk/lk-data bs=4096 count=1 oflag=direct conv=notrunc status=none
sc=$(gw_clients 192.0.2.3)
check "C now serves all 8 clients and the lock client ($sc)" test "$(wc -w <<<"$sc")" -eq 9

# ---- throughput through one gateway ----
python3 "$CL" write "$E2E_WORK/tp1.json" 4 $(client_dirs "${ALL[@]}")
tp1=$(python3 -c "import json; print('%.1f' % json.load(open('$E2E_WORK/tp1.json'))['mb_per_s'])")
bulk_ok() { # JSON: each client's bulk file on the server as written
    python3 - "$1" <<'PY'
import hashlib, json, sys
r = json.load(open(sys.argv[1]))
bad = 0
for d, c in r["clients"].items():
    srv = "/export/" + d.rsplit("/", 1)[1] + "/bulk"
    if "error" in c or hashlib.sha256(open(srv, "rb").read()).hexdigest() != c["sha256"]:
        print(d, c); bad = 1
sys.exit(bad)
PY
}
check "the bulk writes through two gateways landed intact" bulk_ok "$E2E_WORK/tp2.json"
check "the bulk writes through one gateway landed intact" bulk_ok "$E2E_WORK/tp1.json"

# ---- B comes back: no existing client moves, a new one reaches it ----
# B starts with the same upstream-side address and state directory: its start sends the
# server's statd SM_NOTIFY (mon_name 192.0.2.2, a new state), so the server's lockd frees
# every lock taken through B, and sends each client host of its saved list SM_NOTIFY from
# $VIP. That client's replies (its portmapper's, its statd's) come back through the
# director, so they reach B only once IPVS has B back.
t_bstart=$(date +%s.%N)
touch "$GW_OUT/b-start"
wait_file "$GW_OUT/b-started" 60
for _ in $(seq 1 300); do in_table 192.0.2.2 && break; sleep 0.1; done
t_intable=$(date +%s.%N)
check "IPVS takes B back after its first good /healthz" in_table 192.0.2.2
end=$((SECONDS + 60))
while ((SECONDS < end)); do [[ $(gw_restart reclaims_converted) -ge 1 ]] 2>/dev/null && break; sleep 0.25; done
t_reclaim=$(date +%s.%N)
grep -E "nlm (restart|notify)" "$GW_OUT"/gw-b-2.log
read -r g_del g_told g_cdel g_recl < <(gw_restart delivered clients_told clients_delivered reclaims_converted)
gr="server told: delivered ${g_del:-}; clients_told ${g_told:-}, clients_delivered ${g_cdel:-}, reclaims_converted ${g_recl:-}"
check "B's start told the server's statd it restarted ($gr)" test "${g_del:-}" = 1
check "B's start told the lock client, whose lockd reclaimed through B ($gr)" \
    test "${g_told:-}" = 1 -a "${g_cdel:-}" = 1 -a "${g_recl:-0}" -ge 1
reclaim_s=$(python3 -c "print('%.1f' % ($t_reclaim - $t_bstart))")
intable_s=$(python3 -c "print('%.1f' % ($t_intable - $t_bstart))")
echo "B's restart: back in IPVS ${intable_s} s after its start, the lock client's reclaim through B at ${reclaim_s} s"
r=0; srv_try || r=$?
check "after the reclaim, a process on the server is refused the lock again (try: $r)" test $r -eq 1
check "the lock client's process still holds its lock" kill -0 "$LK_HOLDER"
check "every existing client still writes" python3 "$CL" touch $(client_dirs "${ALL[@]}")
sb=$(gw_clients 192.0.2.2) sc=$(gw_clients 192.0.2.3)
check "no existing client moved back to B (B: '$sb', C has $(wc -w <<<"$sc"), the lock client's NFS too)" \
    test -z "$sb" -a "$(wc -w <<<"$sc")" -eq 9
new=
for n in $(seq 31 40); do
    client_add $n
    [[ $(client_gateway $n) == 192.0.2.2 ]] && { new=$n; break; }
done
if [[ -n $new ]]; then
    client_mount $new 4.1; mkdir -p /mnt/c$new/c$new
    python3 "$CL" touch /mnt/c$new/c$new >/dev/null
    check "a new client (192.0.2.$new) reaches B" test "$(gw_clients 192.0.2.2)" = "192.0.2.$new"
    ALL+=($new)
else
    fail "none of 10 new addresses was hashed to B"
fi

# The lock client lets go (UNLOCK through B): the server-side process gets the lock.
lock_release_wait "$LK_HOLDER" "$LK_STOP" srv_try
waited=$LR_WAITED got=$LR_GOT
check "once the lock client released it, a process on the server gets the lock (${waited} s, try: $got)" \
    test $got -eq 0
check "the lock client unmounts" timeout -s KILL 30 nsenter -t "$(cat "$LK_PID")" -m -n -u umount /mnt/lk

# ---- SIGTERM of C in the middle of the copies ----
python3 "$CL" workload "$E2E_WORK/term.json" "$src" 0.5 128 term $(client_dirs "${ALL[@]}") &
wl=$!
sleep 2
t_term=$(date +%s.%N)
touch "$GW_OUT/c-term"
wait $wl
wait_file "$GW_OUT/c-termed" 30
rep2=$(python3 "$CL" report "$E2E_WORK/term.json" "$t_term" $(client_dirs "${ORIG[@]}"))
echo "SIGTERM of C: $rep2"
# 503 at once, the director's check fails; for drain_delay_s (3 s) C goes on listening
# and relaying, so that its clients, closed by the drain after it, reconnect to B.
hz=$(cat "$GW_OUT/c-healthz-after-term" 2>/dev/null)
check "C's /healthz right after SIGTERM: 503 draining ($hz)" test "$hz" = 503
check "C still listened right after SIGTERM (drain_delay_s)" \
    grep -q listening "$GW_OUT/c-listen-after-term"
check "C logged its drain" grep -q "draining" "$GW_OUT"/gw-c.log
check "C drained and exited 0 (status $(cat "$GW_OUT/c-term-status" 2>/dev/null))" \
    test "$(cat "$GW_OUT/c-term-status" 2>/dev/null)" = 0
check "no client saw an error across C's SIGTERM ($rep2)" grep -q 'errors=0 copy_errors=0' <<<"$rep2"
check "every client's copy during the SIGTERM is equal to its source" copies_ok term "${ALL[@]}"
sb=$(gw_clients 192.0.2.2)
check "B serves every client now ($(wc -w <<<"$sb") of ${#ALL[@]})" test "$(wc -w <<<"$sb")" -eq ${#ALL[@]}

moved=$(sed 's/.*moved=\([0-9.]*\).*/\1/' <<<"$rep") ub=$(sed 's/.*unaffected_before=\([0-9.na]*\).*/\1/' <<<"$rep")
ua=$(sed 's/.*unaffected_after=\([0-9.na]*\).*/\1/' <<<"$rep") um=$(sed 's/.*unaffected_max_after=\([0-9.na]*\).*/\1/' <<<"$rep")
umb=$(sed 's/.*unaffected_max_before=\([0-9.na]*\).*/\1/' <<<"$rep")
moved2=$(sed 's/.*moved=\([0-9.]*\).*/\1/' <<<"$rep2")
{
    echo "scale_out figures, $(date -u +%F), three Soft-RoCE guests under qemu TCG, 1 vCPU each (A: the NFS server, the director and the 8 clients; B, C: a gateway each)"
    echo "aggregate MB/s of 8 clients, O_DIRECT 1 MiB writes: through 2 gateways $tp2, through 1 gateway $tp1"
    echo "SIGKILL of a gateway: its clients' longest wait ${moved} s; the other gateway's clients' median latency ${ub} ms before, ${ua} ms after (slowest: ${umb} ms before, ${um} ms after)"
    echo "SIGTERM of a gateway: its clients' longest wait ${moved2} s"
    echo "non-idempotent NFSv3 calls (RENAME, REMOVE, MKDIR, RMDIR back to back) across a gateway's SIGKILL: $ni"
    echo "a lost gateway's restart: back in IPVS ${intable_s} s after its start; the NFSv3 lock held through it reclaimed through it at ${reclaim_s} s"
} | tee "$GW_OUT/figures.txt"
ok "$(sed -n 2p "$GW_OUT/figures.txt")"
ok "$(sed -n 3p "$GW_OUT/figures.txt")"
ok "$(sed -n 4p "$GW_OUT/figures.txt")"
ok "$(sed -n 5p "$GW_OUT/figures.txt")"
ok "$(sed -n 6p "$GW_OUT/figures.txt")"

for d in /mnt/c*; do umount "$d" 2>/dev/null || umount -f -l "$d"; done
ipvsadm -Ln >"$GW_OUT/ipvs-end.txt"
kill "$KA_PID" 2>/dev/null
cp "$E2E_WORK"/*.json "$GW_OUT/" 2>/dev/null
touch "$GW_OUT/a-done"
e2e_finish
