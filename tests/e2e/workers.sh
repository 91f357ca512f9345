# Worker threads (top-level key `workers`, issue 16), one guest. The gateway runs two
# workers, each with its own event loop, RDMA resources and sessions. Two NFS clients,
# each in its own network namespace with an address that the listeners' steering gives
# to a different worker (tcp_listener_steer_index(), computed here the same way), mount
# through a route with a connection per client (NFSv3, nconnect=2) and through a shared
# route (NFSv4.1, upstream_connections 1), and copy files in and out with checksums, all
# at once, while /stats and /metrics are read again and again (each read parks the other
# worker while it renders). Then:
#  - every connection of a client is on the worker its address names, and both workers
#    serve (the sessions' "worker" in /stats);
#  - a route's totals are the sum of its sessions over both workers;
#  - the shared route has a channel per worker (2), and the server sees 2 RDMA
#    connections for it;
#  - SIGHUP reloads with both workers, and the mounts keep working;
#  - once the clients are gone nothing is held on either worker, and SIGTERM drains
#    both and exits 0;
#  - then a reverse route with two workers: kernel NFS/RDMA mounts through two gateway
#    addresses whose connections the steering gives to workers 0 and 1; worker 0's RDMA
#    listener hands worker 1's over, every copy reads back intact, and each client's
#    connections are all on its worker.
set -u
source "$GW_SRC/tests/e2e/lib/gw-e2e.sh"
gwvm-net
gwvm-nfsd /export rdma
modprobe nfsv3; modprobe nfsv4
MB=${E2E_WORKERS_MB:-8}

# The worker the listeners' group gives a client address to (tcp/listener.h).
steer() { # steer ADDR COUNT
    /usr/bin/python3 - "$1" "$2" <<'PY'
import ipaddress, sys
a = int(ipaddress.IPv4Address(sys.argv[1]))
n = int(sys.argv[2])
h = ((0 ^ a) * 0x9E3779B1) & 0xffffffff  # one 32-bit word for IPv4
print((h >> 16) % n)
PY
}

# sessions_on ADDR WORKER: "N WRONG", the live sessions of client address ADDR over all
# routes, and how many of them are not on WORKER.
sessions_on() {
    gw_jq "(lambda xs: '%d %d' % (len(xs), len([x for x in xs if x['worker'] != $2])))([x for r in s['routes'] for x in r.get('sessions', []) if x['client'].startswith('$1:')])"
}

# Two client subnets whose addresses go to workers 0 and 1.
declare -A net_of
for k in $(seq 1 40); do
    w=$(steer 10.8.$k.2 2)
    [[ -z ${net_of[$w]:-} ]] && net_of[$w]=$k
    [[ -n ${net_of[0]:-} && -n ${net_of[1]:-} ]] && break
done
check "two client addresses that the steering gives to workers 0 and 1 (10.8.${net_of[0]:-?}.2, 10.8.${net_of[1]:-?}.2)" \
    test -n "${net_of[0]:-}" -a -n "${net_of[1]:-}"

cat >"$E2E_WORK/gw.json" <<JSON
{ "workers": 2,
  "routes": [
    { "name": "nfs", "mode": "forward", "listen": "tcp://0.0.0.0:2049",
      "upstream": "rdma://192.0.2.1:20049" },
    { "name": "shared", "mode": "forward", "upstream_connections": 1,
      "listen": "tcp://0.0.0.0:2050", "upstream": "rdma://192.0.2.1:20049" } ],
  "logging": { "level": "info" },
  "stats": { "listen": "127.0.0.1:9464" } }
JSON
gw_start workers "$E2E_WORK/gw.json" || e2e_finish
check "the gateway runs 2 workers" grep -q "2 workers" "$GW_LOG"
names=$(cat /proc/"$GW_PID"/task/*/comm | sort | tr '\n' ' ')
check "its threads: the main one (worker 0) and one named gw-worker-1 ($names)" \
    test "$(grep -o 'gw-worker-[0-9]*' <<<"$names" | tr '\n' ' ')" = "gw-worker-1 "

src=$(e2e_source "$MB")
sum=$(sha256sum <"$src" | cut -d' ' -f1)
rm -f "$E2E_WORK"/result-* "$E2E_WORK"/reload-result-* "$E2E_WORK/reloaded" "$E2E_WORK/unmount"
pids=()
for w in 0 1; do
    k=${net_of[$w]}
    ip netns add c$w
    ip link add vh$w type veth peer name vn$w netns c$w
    ip addr add 10.8.$k.1/24 dev vh$w; ip link set vh$w up
    ip -n c$w addr add 10.8.$k.2/24 dev vn$w; ip -n c$w link set vn$w up; ip -n c$w link set lo up
    ip netns exec c$w unshare -u bash -c "
        hostname gw-worker-$w
        echo gw-worker-$w-id >/sys/fs/nfs/net/nfs_client/identifier
        mkdir -p /mnt/w$w-3 /mnt/w$w-41
        mount -t nfs -o vers=3,proto=tcp,port=2049,nolock,nconnect=2 10.8.$k.1:/export /mnt/w$w-3 || exit 1
        mount -t nfs -o vers=4.1,proto=tcp,port=2050 10.8.$k.1:/ /mnt/w$w-41 || exit 1
        rc=0
        for m in /mnt/w$w-3 /mnt/w$w-41; do
            for r in 1 2; do
                f=\$m/worker-$w-\$(basename \$m)-\$r
                dd if=$src of=\$f bs=1M oflag=direct status=none || rc=1
                got=\$(dd if=\$f bs=1M iflag=direct status=none | sha256sum | cut -d' ' -f1)
                [[ \$got == $sum ]] || { echo \"client $w: \$f checksum \$got\"; rc=1; }
                rm -f \$f
            done
        done
        echo \$rc >$E2E_WORK/result-$w
        # After the SIGHUP below: write through both mounts again. (ip netns exec makes
        # a mount namespace of its own: the mounts are reachable from this shell only.)
        for _ in \$(seq 1 240); do [[ -e $E2E_WORK/reloaded ]] && break; sleep 0.5; done
        echo after-reload-$w >/mnt/w$w-41/reload-$w && echo after-reload-$w >/mnt/w$w-3/reload3-$w
        echo \$? >$E2E_WORK/reload-result-$w
        # Stay mounted until the checks below have read /stats.
        for _ in \$(seq 1 240); do [[ -e $E2E_WORK/unmount ]] && break; sleep 0.5; done
        umount /mnt/w$w-3 /mnt/w$w-41
    " >"$GW_OUT/client-$w.log" 2>&1 &
    pids+=($!)
done
# Meanwhile, the stats endpoint read again and again: every read parks the other worker.
reads=0 bad=0
while [[ ! -e $E2E_WORK/result-0 || ! -e $E2E_WORK/result-1 ]]; do
    kill -0 "$GW_PID" 2>/dev/null || break
    gw_stats >/dev/null && gw_metrics >/dev/null || bad=$((bad + 1))
    reads=$((reads + 1))
    ((reads > 3000)) && break
done
check "the stats endpoint answered all $reads reads of /stats and /metrics during the copies ($bad failed)" \
    test "$bad" -eq 0 -a "$reads" -gt 0
for w in 0 1; do
    check "client $w: NFSv3 (nconnect=2) and NFSv4.1 copies read back intact" \
        test "$(cat "$E2E_WORK/result-$w" 2>/dev/null)" = 0
done

# Every session of a client on the worker its address names; both workers used.
placed=$(gw_jq "sorted(set((x['client'].rsplit(':', 1)[0], x['worker']) for r in s['routes'] for x in r.get('sessions', [])))")
echo "sessions (client, worker): $placed"
for w in 0 1; do
    k=${net_of[$w]}
    read -r n wrong < <(sessions_on "10.8.$k.2" "$w")
    check "client 10.8.$k.2: its $n connections (NFSv3 x2, NFSv4.1) all on worker $w ($wrong elsewhere)" \
        test "$n" -ge 3 -a "$wrong" -eq 0
done
# A route's totals over both workers: the sum of its sessions' (none has closed yet).
for r in 0 1; do
    sums=$(gw_jq "(s['routes'][$r]['totals']['calls'], sum(x['counters']['calls'] for x in s['routes'][$r].get('sessions', [])), s['routes'][$r]['totals']['sessions_closed'])")
    read -r tot ses closed < <(tr -d '(),' <<<"$sums")
    check "route $r: totals merged over the workers ($tot calls = the sessions' $ses, $closed closed)" \
        test "$tot" -gt 0 -a "$closed" -eq 0 -a "$tot" -eq "$ses"
done
chans=$(gw_jq "len(s['routes'][1]['shared_upstream']['channels'])")
check "the shared route keeps a channel per worker (2: $chans)" test "$chans" -eq 2
srv=$(rdma res show cm_id | grep -v LISTEN | grep -c 'src-addr 192.0.2.1:20049')
check "the server sees the connections of both workers ($srv: 4 of route nfs and 2 shared)" \
    test "$srv" -eq 6
promtool_ok=$(gw_metrics | /usr/bin/python3 -c "
import sys
from prometheus_client.parser import text_string_to_metric_families
fams = {f.name: f for f in text_string_to_metric_families(sys.stdin.read())}
calls = sum(s.value for s in fams['rpcrdma_gw_rpc_calls'].samples if s.name.endswith('_total') and s.labels.get('route') == 'nfs')
print(int(calls))")
jcalls=$(gw_jq "s['routes'][0]['totals']['calls']")
check "/metrics parses and counts route nfs's calls as /stats does ($promtool_ok, $jcalls)" \
    test -n "$promtool_ok" -a "${promtool_ok:-0}" -ge "$jcalls"

# SIGHUP with two workers: every worker takes the new configuration, the mounts go on.
sed -i 's/"level": "info"/"level": "debug"/' "$E2E_WORK/gw.json"
kill -HUP "$GW_PID"
for _ in $(seq 1 50); do grep -q "configuration reloaded" "$GW_LOG" && break; sleep 0.2; done
check "SIGHUP reloaded the configuration with 2 workers" grep -q "configuration reloaded" "$GW_LOG"
touch "$E2E_WORK/reloaded"
for _ in $(seq 1 60); do
    [[ -e $E2E_WORK/reload-result-0 && -e $E2E_WORK/reload-result-1 ]] && break
    sleep 0.5
done
landed=$(cat /export/reload-0 /export/reload3-0 /export/reload-1 /export/reload3-1 2>/dev/null | tr '\n' ' ')
check "after the reload, both clients' writes through both routes landed ($landed)" \
    test "$landed" = "after-reload-0 after-reload-0 after-reload-1 after-reload-1 "

touch "$E2E_WORK/unmount"
wait "${pids[@]}"
# Every session gone on both workers (the shared route's channels stay open, with their
# receive buffers posted, so the buffers in use are not all given back here; ASan checks
# at exit that nothing leaked).
for _ in $(seq 1 30); do
    live=$(gw_jq "sum(r['live_sessions'] for r in s['routes'])")
    [[ $live == 0 ]] && break
    sleep 1
done
check "once the clients are gone, no session is left on either worker ($live)" test "$live" = 0
gw_stop
check "the gateway's log names no error" test -z "$(grep ' error: ' "$GW_LOG")"

# ---- Reverse mode with two workers ----
# A reverse route's RDMA listener is worker 0's (an RDMA CM port has one listener); it
# hands each connection request to the worker the client's address hashes to
# (gateway/core/handoff.h), where it is accepted with that worker's RDMA resources. The kernel
# NFS client mounts through two addresses of the gateway on this guest, each the only
# address of its own subnet on veth1 (rxe1): a connection to it comes from it, so the
# two mounts' connections come from addresses that the steering gives to workers 0
# and 1. NFSv3 (nconnect=2) through both, NFSv4.1 (its back channel on a handed-over
# connection) through worker 1's.
declare -A raddr_of
for k in $(seq 1 60); do
    w=$(steer 10.9.$k.1 2)
    [[ -z ${raddr_of[$w]:-} ]] && raddr_of[$w]=10.9.$k.1
    [[ -n ${raddr_of[0]:-} && -n ${raddr_of[1]:-} ]] && break
done
for w in 0 1; do ip addr add "${raddr_of[$w]}/24" dev veth1; done
# The upstream for the reverse route: nfsd on TCP too, now that the forward route's
# listener on port 2049 is gone.
echo "tcp 2049" >/proc/fs/nfsd/portlist
check "nfsd listens on TCP 2049 for the reverse route" grep -q "^tcp 2049" /proc/fs/nfsd/portlist
cat >"$E2E_WORK/gw-rev.json" <<JSON
{ "workers": 2,
  "routes": [
    { "name": "rev", "mode": "reverse", "listen": "rdma://0.0.0.0:20051",
      "upstream": "tcp://192.0.2.1:2049" } ],
  "logging": { "level": "info" },
  "stats": { "listen": "127.0.0.1:9464" } }
JSON
gw_start workers-reverse "$E2E_WORK/gw-rev.json" || e2e_finish
check "the reverse-only gateway runs 2 workers" grep -q "2 workers" "$GW_LOG"
rev_ok=()
for w in 0 1; do
    a=${raddr_of[$w]}
    mkdir -p /mnt/r$w-3 /mnt/r$w-41
    mount -t nfs -o vers=3,proto=rdma,port=20051,nolock,nconnect=2 "$a:/export" /mnt/r$w-3 ||
        fail "NFSv3 mount through $a"
done
mount -t nfs -o vers=4.1,proto=rdma,port=20051 "${raddr_of[1]}:/" /mnt/r1-41 ||
    fail "NFSv4.1 mount through ${raddr_of[1]}"
rpids=()
for m in /mnt/r0-3 /mnt/r1-3 /mnt/r1-41; do
    (
        f=$m/rev-$(basename "$m")
        dd if="$src" of="$f" bs=1M oflag=direct status=none || exit 1
        got=$(dd if="$f" bs=1M iflag=direct status=none | sha256sum | cut -d' ' -f1)
        [[ $got == "$sum" ]] || { echo "$f: checksum $got"; exit 1; }
    ) >"$GW_OUT/rev-$(basename "$m").log" 2>&1 &
    rpids+=($!)
done
for i in 0 1 2; do
    rc=0; wait "${rpids[$i]}" || rc=$?
    check "reverse copy $i (NFSv3 via ${raddr_of[0]}, NFSv3 and NFSv4.1 via ${raddr_of[1]}) read back intact" \
        test "$rc" -eq 0
done
placed=$(gw_jq "sorted(set((x['client'].rsplit(':', 1)[0], x['worker']) for r in s['routes'] for x in r.get('sessions', [])))")
echo "reverse sessions (client, worker): $placed"
for w in 0 1; do
    a=${raddr_of[$w]}
    read -r n wrong < <(sessions_on "$a" "$w")
    want=2 how="kept by worker 0's listener"
    ((w == 1)) && want=3 how="handed over by worker 0's listener"
    check "RDMA client $a: its $n connections all on worker $w ($wrong elsewhere; $how)" \
        test "$n" -ge "$want" -a "$wrong" -eq 0
done
rdma res show cm_id | grep -v LISTEN | grep 20051 || true
check "no connection request was refused" test -z "$(grep 'cannot hand its connection' "$GW_LOG")"
umount /mnt/r0-3 /mnt/r1-3 /mnt/r1-41
gw_check_quiet
gw_stop
check "the reverse gateway's log names no error" test -z "$(grep ' error: ' "$GW_LOG")"
e2e_finish
