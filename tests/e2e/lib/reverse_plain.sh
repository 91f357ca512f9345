# reverse_plain.sh: sourced by the reverse-mode lock jobs (after gw-e2e.sh).
#
# rp_server: on guest A, after gwvm-nfsd, the NFS server moves into the network
# namespace "srv" (10.8.0.2, TCP only, its own rpcbind, mountd, statd and lockd), so
# that A's own address 192.0.2.1 is the gateway's alone (RDMA listener, portmapper on
# port 111), and the gateway's address toward the server (10.8.0.1, where the server's
# GRANTED comes to its NLM callback service) is not its listen address. It is the TCP
# server that moves, not an RDMA peer: rdma_rxe in the guests' kernel (6.1) has its UDP
# sockets and route lookups in the initial namespace only.
rp_server() {
    local pidf=$E2E_WORK/srv.pid
    rpc.nfsd 0
    kill "$(pidof rpc.mountd)" "$(pidof rpcbind)" 2>/dev/null
    sleep 1
    ip netns add srv
    ip link add vs0 type veth peer name vs1 netns srv
    ip addr add 10.8.0.1/24 dev vs0; ip link set vs0 up
    ip -n srv addr add 10.8.0.2/24 dev vs1; ip -n srv link set vs1 up; ip -n srv link set lo up
    # Its own /run and its own nfsd instance, whose grace period is cut to 10 s (the
    # default 90 s would hold the clients' first LOCK past the test's patience).
    ip netns exec srv unshare -m --propagation private bash -c '
        mount -t tmpfs srvrun /run && mkdir -p /run/srv-statd/sm /run/srv-statd/sm.bak &&
        umount /proc/fs/nfsd && mount -t nfsd nfsd /proc/fs/nfsd &&
        echo 10 >/proc/fs/nfsd/nfsv4gracetime &&
        rpcbind -w && rpc.statd -P /run/srv-statd &&
        exportfs -o rw,no_root_squash,insecure,no_subtree_check "*:/export" &&
        rpc.mountd && rpc.nfsd 8 && rpcinfo -p 127.0.0.1 &&
        echo $$ >"'"$pidf"'" && exec sleep infinity' &
    for _ in $(seq 1 60); do [[ -s $pidf ]] && return 0; sleep 1; done
    return 1
}

# rp_serve NAME FILE DONE: until DONE exists (at most 10 minutes), do what the files
# $GW_OUT/NAME-*.req ask with the file FILE and answer in NAME-*.res (the exit status):
#   try        take an exclusive fcntl lock without waiting, give it back (1: busy)
#   hold       take it and keep it (0 once held)        release   give it back
#   wait       start a blocking lock (F_SETLKW) in the background
#   waited     0 if that blocking lock has been granted (and given back), 1 if not yet
#   locks N    the gateway's /stats nlm.locks (route 0) is N (on the gateway's guest)
rp_serve() {
    local name=$1 file=$2 done=$3 req cmd r holder='' stop=$E2E_WORK/$1-holder.stop
    for _ in $(seq 1 1200); do
        [[ -e $done ]] && return 0
        for req in "$GW_OUT/$name"-*.req; do
            [[ -e $req ]] || continue
            cmd=$(cat "$req"); r=0
            case $cmd in
            try) nlm_lock.py try "$file" || r=$? ;;
            hold)
                rm -f "$stop"; : >"$E2E_WORK/$name-holder.out"
                nlm_lock.py hold "$file" "$stop" >"$E2E_WORK/$name-holder.out" 2>&1 &
                holder=$!
                for _ in $(seq 1 120); do grep -q . "$E2E_WORK/$name-holder.out" && break; sleep 0.5; done
                grep -q '^held' "$E2E_WORK/$name-holder.out" || r=1 ;;
            release) touch "$stop"; wait "$holder" || r=$? ;;
            wait)
                : >"$E2E_WORK/$name-waiter.out"
                timeout -s KILL 90 nlm_lock.py wait "$file" >"$E2E_WORK/$name-waiter.out" 2>&1 &
                ;;
            waited) grep -q '^granted' "$E2E_WORK/$name-waiter.out" || r=1 ;;
            locks\ *) test "$(gw_jq "s['routes'][0]['nlm']['locks']")" = "${cmd#locks }" || r=1 ;;
            *) r=2 ;;
            esac
            echo "$r" >"${req%.req}.res"; rm -f "$req"
        done
        sleep 0.3
    done
    return 1
}

# rp_req NAME CMD: have NAME's rp_serve do CMD; its exit status (3: no answer in 90 s).
rp_req() {
    local id=$RANDOM$RANDOM
    echo "$2" >"$GW_OUT/$1-$id.tmp"; mv "$GW_OUT/$1-$id.tmp" "$GW_OUT/$1-$id.req"
    for _ in $(seq 1 300); do
        [[ -e $GW_OUT/$1-$id.res ]] && return "$(cat "$GW_OUT/$1-$id.res")"
        sleep 0.3
    done
    echo "$1 did not answer $2"; return 3
}

# rp_expect WHAT RC COMMAND...: COMMAND exits with RC.
rp_expect() {
    local what=$1 want=$2 r=0; shift 2
    "$@" || r=$?
    if ((r == want)); then ok "$what"; else fail "$what (exit $r, wanted $want)"; fi
}
