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
# address on lo (gateway-vip, 60-rpcrdma-gw-vip.conf).
#  - which gateway each candidate client hashes to is read from IPVS after one UDP
#    datagram to port 9 of the virtual address; 8 clients are chosen, at least 2 on
#    each gateway, NFSv3 and NFSv4.1 on both; each client's NFS connection (TCP 2049)
#    lands on the gateway its UDP datagram did (one service for every port), as each
#    gateway's /stats shows;
#  - aggregate MB/s of the 8 clients through both gateways, then through one;
#  - gateway B is killed (SIGKILL) in the middle of every client's copy: every copy
#    finishes, equal to its source on the server, no call returns an error, nothing is
#    remounted; the moved clients' longest wait, and the others' latency before and
#    after, are printed;
#  - B comes back: IPVS takes it back after its first good check; no existing client
#    moves (every one still on C after a write), and a new client hashed to B reaches it;
#  - SIGTERM of C in the middle of the copies: its /healthz answers 503 at once while it
#    goes on listening for drain_delay_s (3 s, as deploy/scale-out/gw.json), it exits 0,
#    its clients move to B with no error, their copies are intact.
# NFSv3 mounts with nolock and MOUNT goes to the server itself (as failover.sh): the
# gateways relay NFS only here.
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
    cat >"$E2E_WORK/gw.json" <<JSON
{ "drain_timeout_s": 10, "drain_delay_s": 3,
  "routes": [ { "name": "nfs", "mode": "forward",
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
    for d in /mnt/c*; do umount -f -l "$d" 2>/dev/null; done
    cp "$E2E_WORK"/*.json "$GW_OUT/" 2>/dev/null
    e2e_finish
    exit 1
}
gwvm-net 192.0.2.1
gwvm-nfsd /export rdma
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
declare -A VERS
i=0; for n in "${B[@]}"; do VERS[$n]=$([[ $((i++ % 2)) == 0 ]] && echo 3 || echo 4.1); done
i=0; for n in "${C[@]}"; do VERS[$n]=$([[ $((i++ % 2)) == 0 ]] && echo 4.1 || echo 3); done
mounted=0
for n in "${ALL[@]}"; do
    client_mount $n ${VERS[$n]} && mountpoint -q /mnt/c$n && mounted=$((mounted + 1))
    mkdir -p /mnt/c$n/c$n 2>/dev/null
done
check "8 clients mounted $VIP (B: ${B[*]}; C: ${C[*]}; NFSv3: $(for n in "${ALL[@]}"; do [[ ${VERS[$n]} == 3 ]] && echo -n "$n "; done))" \
    test "$mounted" -eq 8
((mounted == 8)) || fin
python3 "$CL" touch $(client_dirs "${ALL[@]}") >/dev/null
sb=$(gw_clients 192.0.2.2) sc=$(gw_clients 192.0.2.3)
echo "split: gateway B serves $sb; gateway C serves $sc"
want_b=$(for n in "${B[@]}"; do echo 192.0.2.$n; done | sort | xargs) want_c=$(for n in "${C[@]}"; do echo 192.0.2.$n; done | sort | xargs)
check "B's /stats has exactly the clients whose UDP datagram went to B ($sb)" test "$sb" = "$want_b"
check "C's /stats has exactly the clients whose UDP datagram went to C ($sc)" test "$sc" = "$want_c"
sbs=$(curl -sf "http://192.0.2.2:9464/stats?sessions=0" | python3 -c "import json,sys; print(json.load(sys.stdin)['routes'][0]['sessions_by_state'])")
check "B counts its sessions by state ($sbs)" grep -q "'ready': ${#B[@]}" <<<"$sbs"

# ---- throughput through two gateways ----
python3 "$CL" write "$E2E_WORK/tp2.json" 4 $(client_dirs "${ALL[@]}")
tp2=$(python3 -c "import json; print('%.1f' % json.load(open('$E2E_WORK/tp2.json'))['mb_per_s'])")

# ---- SIGKILL of B in the middle of every client's copy ----
# Light copies (8 clients x 128 KiB every 0.5 s: 2 MB/s, well under what guest A moves),
# so that the latencies measure the gateways, not guest A's one CPU; 8 s each.
src=$(e2e_source 2)
python3 "$CL" workload "$E2E_WORK/kill.json" "$src" 0.5 128 kill $(client_dirs "${ALL[@]}") &
wl=$!
sleep 2
t_kill=$(date +%s.%N)
touch "$GW_OUT/b-kill"
wait_file "$GW_OUT/b-killed" 10
for _ in $(seq 1 100); do in_table 192.0.2.2 || break; sleep 0.1; done
check "keepalived took B out of IPVS" bash -c "! ipvsadm -Ln | grep -q -- '-> 192.0.2.2:0'"
wait $wl
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
sc=$(gw_clients 192.0.2.3)
check "C now serves all 8 clients ($sc)" test "$(wc -w <<<"$sc")" -eq 8

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
touch "$GW_OUT/b-start"
wait_file "$GW_OUT/b-started" 60
for _ in $(seq 1 300); do in_table 192.0.2.2 && break; sleep 0.1; done
check "IPVS takes B back after its first good /healthz" in_table 192.0.2.2
check "every existing client still writes" python3 "$CL" touch $(client_dirs "${ALL[@]}")
sb=$(gw_clients 192.0.2.2) sc=$(gw_clients 192.0.2.3)
check "no existing client moved back to B (B: '$sb', C has $(wc -w <<<"$sc"))" \
    test -z "$sb" -a "$(wc -w <<<"$sc")" -eq 8
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
} | tee "$GW_OUT/figures.txt"
ok "$(sed -n 2p "$GW_OUT/figures.txt")"
ok "$(sed -n 3p "$GW_OUT/figures.txt")"
ok "$(sed -n 4p "$GW_OUT/figures.txt")"

for d in /mnt/c*; do umount "$d" 2>/dev/null || umount -f -l "$d"; done
ipvsadm -Ln >"$GW_OUT/ipvs-end.txt"
kill "$KA_PID" 2>/dev/null
cp "$E2E_WORK"/*.json "$GW_OUT/" 2>/dev/null
touch "$GW_OUT/a-done"
e2e_finish
