# gwvm: three-guests
# Reverse mode, locks between two RDMA client hosts through the gateway (issue 13).
# Guest A (192.0.2.1, a bridge over its links to B and C) runs the gateway in reverse
# mode (RDMA 192.0.2.1:20049, portmapper on port 111) and, in its network namespace
# "srv" (10.8.0.2), the TCP NFS server with rpcbind, mountd, statd and lockd. Guests B
# (192.0.2.2) and C (192.0.2.3) are ordinary NFS clients, each with rpcbind and
# rpc.statd, mounting `vers=3,proto=rdma,port=20049` with locks (NLM through the
# gateway's relay, found through its portmapper). RDMA client hosts have to be guests
# of their own: rdma_rxe (kernel 6.1) works in the initial network namespace only, and
# A's own namespace would reach the gateway from its own address.
#  - B's exclusive fcntl lock is refused to C through the gateway and to a process on
#    the server directly.
#  - C's blocking lock (F_SETLKW) waits, and is granted within seconds of B's release,
#    well under C's 30 s LOCK re-send: the server's GRANTED reaches the gateway's
#    callback service and is relayed to C (192.0.2.3).
#  - B's reboot: B's process holds the lock, B runs sm-notify -f; its SM_NOTIFY reaches
#    the gateway's NSM service, which releases B's lock on the server: C gets the lock
#    while B's process still "holds" it (/stats nlm.locks 1 before, 0 after).
set -u
source "$GW_SRC/tests/e2e/lib/gw-e2e.sh"
source "$GW_SRC/tests/e2e/lib/reverse_plain.sh"
gw=192.0.2.1 m=/mnt/plain

wait_for() { # wait_for FILE SECONDS
    for _ in $(seq 1 "$2"); do [[ -e $1 ]] && return 0; sleep 1; done
    return 1
}

# client_up ADDR: rpcbind, rpc.statd and the plain mount of the gateway's export.
client_up() {
    gwvm-net "$1"
    modprobe nfsv3; modprobe rpcrdma
    rpcbind -w && rpc.statd || fail "$GWVM_ROLE: rpcbind and rpc.statd started"
    wait_for "$GW_OUT/a-ready" 300 || { fail "$GWVM_ROLE: guest A's gateway is up"; return 1; }
    mkdir -p $m
    for _ in $(seq 1 5); do
        mount -t nfs -o vers=3,proto=rdma,port=20049 $gw:/export $m && break
        sleep 2
    done
    check "$GWVM_ROLE: mount -o vers=3,proto=rdma,port=20049 $gw:/export (locks on)" \
        bash -c "grep ' $m nfs .*proto=rdma' /proc/mounts | grep -qv nolock"
    grep -q " $m nfs " /proc/mounts # without the mount, the lock checks would test a local file
}

case $GWVM_ROLE in
a)
    rm -f "$GW_OUT"/a-ready "$GW_OUT"/b-done "$GW_OUT"/c-up "$GW_OUT"/*.req "$GW_OUT"/*.res
    gwvm-net 192.0.2.1
    gwvm-nfsd /export tcp
    if ! rp_server; then fail "the NFS server in namespace srv started"; touch "$GW_OUT"/a-ready; e2e_finish; fi
    cat >"$E2E_WORK/gw.json" <<JSON
{ "routes": [ { "name": "plain", "mode": "reverse", "portmapper_port": 111,
                "listen": "rdma://192.0.2.1:20049", "upstream": "tcp://10.8.0.2:2049" } ],
  "stats": { "listen": "127.0.0.1:9464" } }
JSON
    gw_start reverse_locks "$E2E_WORK/gw.json" || { touch "$GW_OUT"/a-ready; e2e_finish; }
    touch "$GW_OUT"/a-ready
    rp_serve srv /export/lockf "$GW_OUT"/b-done || fail "guest B finished"
    check "the gateway relayed the server's GRANTED to C (192.0.2.3)" \
        grep -q "nlm callback: GRANTED for client 192.0.2.3: relayed, taken" "$GW_LOG"
    check "the gateway's NSM service took B's SM_NOTIFY and released its lock upstream" \
        grep -q "nlm relay: a client rebooted (SM_NOTIFY): 1 of its 1 locks" "$GW_LOG"
    cb() { gw_jq "s['routes'][0]['nlm']['granted_callbacks']['$1']"; }
    check "GRANTED callbacks in /stats: relayed $(cb relayed), granted $(cb granted), not_from_server $(cb not_from_server)" \
        test "$(cb relayed)" -ge 1 -a "$(cb granted)" -ge 1 -a "$(cb not_from_server)" = 0
    check "no lock left in the relay's record ($(gw_jq "s['routes'][0]['nlm']['locks']"))" \
        test "$(gw_jq "s['routes'][0]['nlm']['locks']")" = 0
    grep -E "nlm (relay|callback)" "$GW_LOG"
    gw_stop
    e2e_finish
    ;;
c)
    if client_up 192.0.2.3; then
        touch "$GW_OUT"/c-up
        rp_serve c $m/lockf "$GW_OUT"/b-done || fail "guest B finished"
        check "C: umount" timeout -s KILL 30 umount $m
    else
        touch "$GW_OUT"/c-up
    fi
    e2e_finish
    ;;
b)
    stop=$E2E_WORK/b-holder.stop
    hold() { # B's process takes the lock and keeps it until $stop exists
        rm -f "$stop"; : >"$E2E_WORK/holder.out"
        nlm_lock.py hold $m/lockf "$stop" >"$E2E_WORK/holder.out" 2>&1 &
        holder=$!
        for _ in $(seq 1 120); do grep -q . "$E2E_WORK/holder.out" && break; sleep 0.5; done
        grep -q '^held' "$E2E_WORK/holder.out"
    }
    if client_up 192.0.2.2 && wait_for "$GW_OUT"/c-up 300; then
        echo "--- B's exclusive lock ($(date +%T))"
        check "B takes an exclusive fcntl lock through the gateway (NLM LOCK)" hold
        rp_expect "C is refused it through the gateway" 1 rp_req c try
        rp_expect "a process on the server is refused it" 1 rp_req srv try
        echo "--- C's blocking lock, granted through the relayed GRANTED ($(date +%T))"
        rp_expect "C's blocking lock (F_SETLKW) starts" 0 rp_req c wait
        sleep 3 # C's LOCK (block set) reaches the server and is answered BLOCKED
        rp_expect "C's blocking lock waits" 1 rp_req c waited
        touch "$stop"; wait "$holder"; t0=$(date +%s)
        got=1
        for _ in $(seq 1 20); do rp_req c waited && { got=0; break; }; sleep 0.5; done
        waited=$(($(date +%s) - t0))
        # Without the callback C gets it only when its lockd re-sends the LOCK (30 s).
        check "C gets the lock ${waited} s after B's release (< 10 s: the GRANTED callback)" \
            test $got -eq 0 -a $waited -lt 10
        echo "--- B's reboot: its SM_NOTIFY releases its lock on the server ($(date +%T))"
        check "B takes the lock again" hold
        rp_expect "C is refused it" 1 rp_req c try
        rp_expect "the relay records B's lock (/stats nlm.locks 1)" 0 rp_req srv "locks 1"
        check "sm-notify -f on B: SM_NOTIFY to the gateway answered" timeout 30 sm-notify -f -d
        got=1
        for _ in $(seq 1 10); do rp_req c try && { got=0; break; }; sleep 1; done
        check "after B's SM_NOTIFY, C gets the lock while B's process still holds it" test $got -eq 0
        rp_expect "B's SM_NOTIFY forgot its lock (/stats nlm.locks 0)" 0 rp_req srv "locks 0"
        touch "$stop"; wait "$holder"
        check "B: umount" timeout -s KILL 30 umount $m
    else
        fail "B and C mounted the gateway"
    fi
    touch "$GW_OUT"/b-done
    e2e_finish
    ;;
esac
