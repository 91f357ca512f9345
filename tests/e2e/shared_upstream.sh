# Shared upstream connections (route key upstream_connections, issue 17), one guest.
# The kernel NFS server listens on RDMA only; the gateway relays TCP clients to it.
# First, as a control, upstream_connections 0: four TCP connections from this guest's
# client (NFSv3 and NFSv4.1 mounts, nconnect=2) make four RDMA connections at the
# server. Then upstream_connections 2: the same mounts plus three more NFS clients, each
# in its own network namespace with its own NFSv4 identity (NFSv3 and NFSv4.1 mounts,
# so 10 TCP connections in all), copy files in and out with checksums, all at once;
# meanwhile the server's own view (`rdma res show cm_id`: its connected RDMA endpoints
# on 20049) counts exactly 2 connections, and the gateway relays every call with no
# reply lost or misdelivered. Last, a delegation recall between two NFSv4.1 clients on
# the shared route: the CB_RECALL reaches the holder by its session, and is answered.
# A REMOVE retransmitted after its client reconnected from the same port is answered
# from the server's duplicate request cache (lib/drc_retransmit.py), not executed again,
# also when another client's flood of calls has filled the route's XID map meanwhile.
# A client whose connection carrying its session's back channel is reset gets its
# callbacks on the connection it makes again (the back channel kept for it).
# Last of all, the server drops its connections mid-copy (threads to 0 and back): the gateway
# connects its channels again and re-sends the calls in flight, and the client's TCP
# connection is kept.
set -u
source "$GW_SRC/tests/e2e/lib/gw-e2e.sh"
gwvm-net
gwvm-nfsd /export rdma
modprobe nfsv3; modprobe nfsv4
NS=3 MB=${E2E_SHARE_MB:-8}

# The server's RDMA connections on its NFS port, as the server's RDMA stack lists them.
server_conns() { rdma res show cm_id | grep -v LISTEN | grep -c 'src-addr 192.0.2.1:20049'; }

# One worker: this job counts the server's connections of one set of channels (each worker
# keeps its own: the job `workers` covers that).
gw_config() {
    cat >"$E2E_WORK/gw.json" <<JSON
{ "workers": 1,
  "routes": [ { "name": "nfs", "mode": "forward", "upstream_connections": $1,
                "max_sessions": 32,
                "listen": "tcp://0.0.0.0:2049", "upstream": "rdma://192.0.2.1:20049" } ],
  "stats": { "listen": "127.0.0.1:9464" } }
JSON
}

mount_main() { # the guest's own client: 2 TCP connections per mount
    mkdir -p /mnt/m3 /mnt/m41
    mount -t nfs -o vers=3,proto=tcp,port=2049,nolock,nconnect=2 192.0.2.2:/export /mnt/m3 &&
        mount -t nfs -o vers=4.1,proto=tcp,port=2049,nconnect=2 192.0.2.2:/ /mnt/m41
}

# ---- control: one RDMA connection per TCP client ----
gw_config 0
gw_start control "$E2E_WORK/gw.json" || e2e_finish
if mount_main; then
    ls /mnt/m3 /mnt/m41 >/dev/null
    n=$(server_conns)
    check "control, upstream_connections 0: the server has one RDMA connection per TCP client ($n, more than 2)" test "$n" -gt 2
    umount /mnt/m3 /mnt/m41
else
    fail "control: mount through the gateway"
fi
gw_stop

# ---- shared: every client over 2 RDMA connections ----
gw_config 2
gw_start shared "$E2E_WORK/gw.json" || e2e_finish
src=$(e2e_source "$MB")
sum=$(sha256sum <"$src" | cut -d' ' -f1)
mount_main || fail "mount through the shared route"
rm -f "$E2E_WORK"/ready-* "$E2E_WORK/go" "$E2E_WORK"/result-*
pids=()
for i in $(seq 1 $NS); do
    ip netns add c$i
    ip link add vh$i type veth peer name vn$i netns c$i
    ip addr add 10.9.$i.1/24 dev vh$i; ip link set vh$i up
    ip -n c$i addr add 10.9.$i.2/24 dev vn$i; ip -n c$i link set vn$i up; ip -n c$i link set lo up
    # Mount, say so, wait for the count, copy in and out with checksums, unmount.
    ip netns exec c$i unshare -u bash -c "
        hostname gw-share-$i
        echo gw-share-$i-id >/sys/fs/nfs/net/nfs_client/identifier
        mkdir -p /mnt/c$i-3 /mnt/c$i-41
        mount -t nfs -o vers=3,proto=tcp,port=2049,nolock 10.9.$i.1:/export /mnt/c$i-3 || exit 1
        mount -t nfs -o vers=4.1,proto=tcp,port=2049 10.9.$i.1:/ /mnt/c$i-41 || exit 1
        touch $E2E_WORK/ready-$i
        for _ in \$(seq 1 120); do [[ -e $E2E_WORK/go ]] && break; sleep 0.5; done
        rc=0
        for m in /mnt/c$i-3 /mnt/c$i-41; do
            for k in 1 2; do
                f=\$m/share-$i-\$(basename \$m)-\$k
                dd if=$src of=\$f bs=1M oflag=direct status=none || rc=1
                got=\$(dd if=\$f bs=1M iflag=direct status=none | sha256sum | cut -d' ' -f1)
                [[ \$got == $sum ]] || { echo \"client $i: \$f checksum \$got\"; rc=1; }
                rm -f \$f
            done
        done
        umount /mnt/c$i-3 /mnt/c$i-41 || rc=1
        echo \$rc >$E2E_WORK/result-$i
    " >"$GW_OUT/client-$i.log" 2>&1 &
    pids+=($!)
done
for _ in $(seq 1 120); do
    [[ $(ls "$E2E_WORK"/ready-* 2>/dev/null | wc -l) -eq $NS ]] && break
    sleep 0.5
done
check "$NS namespace clients mounted NFSv3 and NFSv4.1 through the shared route" \
    test "$(ls "$E2E_WORK"/ready-* 2>/dev/null | wc -l)" -eq $NS
sessions=$(gw_jq "s['routes'][0]['live_sessions']")
n=$(server_conns)
rdma res show cm_id | grep -v LISTEN
check "the gateway relays $sessions TCP connections (more than 2)" test "${sessions:-0}" -gt 2
check "the server sees exactly 2 RDMA connections from the gateway ($n)" test "$n" -eq 2
touch "$E2E_WORK/go"
# The guest's own client copies at the same time as the namespaces.
for m in /mnt/m3 /mnt/m41; do
    f=$m/share-main-$(basename $m)
    dd if="$src" of="$f" bs=1M oflag=direct status=none
    got=$(dd if="$f" bs=1M iflag=direct status=none | sha256sum | cut -d' ' -f1)
    check "guest client: $f read back intact" test "$got" = "$sum"
    rm -f "$f"
done
wait "${pids[@]}" # not the gateway's
for i in $(seq 1 $NS); do
    check "namespace client $i: NFSv3 and NFSv4.1 copies read back intact" \
        test "$(cat "$E2E_WORK/result-$i" 2>/dev/null)" = 0
    cat "$GW_OUT/client-$i.log"
done
n=$(server_conns)
check "after the copies, still exactly 2 RDMA connections at the server ($n)" test "$n" -eq 2
# ---- callbacks over the shared connections ----
# The guest's NFSv4.1 client holds a read delegation; client 2 (namespace c2, made again
# as client2_netns has it, its own NFSv4 identity, also through the shared route) writes
# the file. The server's CB_RECALL comes on a shared connection and must reach the
# guest's client, found by the session its CB_SEQUENCE names, and be answered there.
ip netns del c2
client2_netns
nfsd_wait_grace 192.0.2.1 || fail "the NFS server's grace period did not end"
ev="s['routes'][0]['totals']['events']"
before=$(gw_jq "$ev.get('backward_undeliverable', 0) + $ev.get('backward_no_session', 0)")
wl_delegation_recall 4.1 /mnt/m41
after=$(gw_jq "$ev.get('backward_undeliverable', 0) + $ev.get('backward_no_session', 0)")
check "no backward call refused during the recall (undeliverable + no_session: $before -> $after)" \
    test "$after" -eq "$before"
holder=$(gw_jq "sum(x['counters'].get('backward_calls', 0) for x in s['routes'][0].get('sessions', []) if x['client'].startswith('192.0.2.'))")
check "the callbacks went to the holder's own connections ($holder backward calls)" test "${holder:-0}" -gt 0
# ---- a client's connection reset: its callbacks found again ----
# The guest's client loses the TCP connection that carries its session's back channel
# (reset from the client's side: the connection the callbacks above went to) and
# connects again, from a new source port: a new gateway client, while the server, whose
# RDMA connections are the gateway's, sees nothing. The Linux client goes on with its
# session and never binds it again (BIND_CONN_TO_SESSION answers only the server's
# CB_PATH_DOWN, which nfsd raises when the connection carrying the back channel closes:
# here it never does). Without help the server's next CB_RECALL would find no holder at
# the gateway and be refused, and nfsd 6.1 would drop it (the conflicting open waiting a
# lease). The gateway kept the gone connection's back channel (gateway/maps/bc_orphans.h);
# the new connection from that address, the only one made since that goes on with the
# session, takes it when the recall comes (backchannel_adopted), and the recall is
# answered: the conflicting write completes promptly. (The job's other connection of
# that mount, made before, is not a candidate: Linux takes callbacks on the first
# transport of an nconnect mount only.)
gsess() { gw_jq "sorted(x['id'] for x in s['routes'][0].get('sessions', []) if x['client'].startswith('192.0.2.'))"; }
hport=$(gw_jq "max((x for x in s['routes'][0].get('sessions', []) if x['client'].startswith('192.0.2.')), key=lambda x: x['counters'].get('backward_calls', 0))['client'].rsplit(':', 1)[1]")
ids0=$(gsess)
adopted0=$(gw_jq "$ev.get('backchannel_adopted', 0)")
refused0=$(gw_jq "$ev.get('backward_no_session', 0)")
ss -K dst 192.0.2.2 dport = :2049 sport = :"$hport" >/dev/null
# Calls of the mount's own, spread over its two transports, bring the lost one back.
for _ in $(seq 1 6); do echo 3 >/proc/sys/vm/drop_caches; ls -l /mnt/m41 >/dev/null; done
ids1=$(gsess)
check "the back channel's connection (port $hport) was reset and made again: a new gateway client ($ids0 -> $ids1)" \
    test "$ids1" != "$ids0"
f=deleg-reset
echo original >/export/$f
/usr/bin/python3 - "/mnt/m41/$f" <<'PY' &
import glob, os, sys, time
deadline = time.time() + 30
while time.time() < deadline:
    f = open(sys.argv[1]); f.read()
    if any("type: deleg" in l and os.path.basename(sys.argv[1]) in l
           for p in glob.glob("/proc/fs/nfsd/clients/*/states") for l in open(p)):
        break
    f.close(); time.sleep(1)
time.sleep(40)
PY
holder=$!
deleg_of() { grep -hs "type: deleg" /proc/fs/nfsd/clients/*/states | grep -q "$1"; }
for _ in $(seq 1 70); do deleg_of $f && break; sleep 0.5; done
check "after the reset: the server granted the guest's client a delegation of $f" deleg_of $f
start=$(date +%s%N)
ip netns exec c2 unshare -u bash -c "
    hostname gw-client-2
    echo gw-client-2-id >/sys/fs/nfs/net/nfs_client/identifier
    mkdir -p /mnt/c2 && mount -t nfs -o vers=4.1,proto=tcp,port=2049 10.9.0.1:/ /mnt/c2 &&
    echo changed-by-client-2 >/mnt/c2/$f && umount /mnt/c2"
rc=$?
took=$(( ($(date +%s%N) - start) / 1000000 ))
adopted=$(gw_jq "$ev.get('backchannel_adopted', 0)")
refused=$(gw_jq "$ev.get('backward_no_session', 0)")
check "the reconnected connection took the session's back channel (backchannel_adopted $adopted0 -> $adopted)" \
    test "$adopted" -gt "$adopted0"
check "no backward call refused ($refused0 -> $refused)" test "$refused" -eq "$refused0"
check "client 2's conflicting write completed promptly after the recall (status $rc, ${took} ms, lease 90 s)" \
    test "$rc" -eq 0 -a "$took" -lt 20000
check "the delegation was returned" test -z "$(grep -s "type: deleg.*$f" /proc/fs/nfsd/clients/*/states)"
kill "$holder" 2>/dev/null; wait "$holder" 2>/dev/null
check "the guest's client reads client 2's change" grep -q changed-by-client-2 "/mnt/m41/$f"
dd if="$src" of=/mnt/m41/after-reset bs=1M oflag=direct status=none
got=$(dd if=/mnt/m41/after-reset bs=1M iflag=direct status=none | sha256sum | cut -d' ' -f1)
check "after the reset, the guest's NFSv4.1 copy reads back intact" test "$got" = "$sum"
rm -f /mnt/m41/after-reset
umount /mnt/m3 /mnt/m41
unmatched=$(gw_jq "s['routes'][0]['totals']['events'].get('unmatched_reply', 0)")
check "no reply went unmatched ($unmatched)" test "${unmatched:-1}" -eq 0
calls=$(gw_jq "s['routes'][0]['totals']['calls']")
echo "calls relayed over the shared connections: $calls"
# Every call that went on a channel (all but retransmissions absorbed) had its wait
# in the fair queue counted.
sent=$(gw_jq "s['routes'][0]['totals']['calls'] - s['routes'][0]['totals']['events'].get('retransmit_absorbed', 0)")
queued=$(gw_jq "s['routes'][0]['totals']['latency']['queue']['count']")
check "queue time counted for every call sent on a channel ($queued of $sent)" \
    test "${queued:-0}" -ge "${sent:-1}" -a "${sent:-0}" -gt 0
# ---- a retransmission after a reconnect reaches the server's duplicate request cache ----
# An NFSv3 REMOVE from a fixed port, the connection reset before the reply, the same call
# (same XID) again from a new connection on the same port: the server answers from its
# cache (NFS3_OK, as the first time), not by removing again (NFS3ERR_NOENT, the answer
# the control REMOVE under a fresh XID gets). lib/drc_retransmit.py says how.
# The third time, a neighbour (from 127.0.0.1) sends more NULL calls than the route's XID
# map holds (max_sessions 32 keeps it at its floor, 16,384) between the reset and the
# reconnect: its calls, which only read, recycle each other's places, never the REMOVE's.
xm="s['routes'][0]['shared_upstream']['xid_map']"
before=$(gw_jq "'%d %d %d' % ($xm['retransmit_answered'] + $xm['retransmit_in_flight'], $xm['evicted_safe_twice'], $xm['evicted_own'] + $xm['evicted_other'])")
size=$(gw_jq "$xm['entries']")
check "a REMOVE retransmitted after the client's reconnect is answered from the server's cache (also after a neighbour's $((size + 2048)) calls)" \
    python3 "$GW_SRC/tests/e2e/lib/drc_retransmit.py" 192.0.2.2 2049 /export drc-remove 29049 \
        $((size + 2048)) 127.0.0.1
after=$(gw_jq "'%d %d %d' % ($xm['retransmit_answered'] + $xm['retransmit_in_flight'], $xm['evicted_safe_twice'], $xm['evicted_own'] + $xm['evicted_other'])")
read -r rb eb ob <<<"$before"; read -r ra ea oa <<<"$after"
check "the gateway mapped them as retransmissions ($rb -> $ra)" test "$ra" -eq $((rb + 3))
check "the neighbour's calls recycled their own places ($eb -> $ea evicted, safe to run twice), nothing else ($ob -> $oa)" \
    test "$ea" -ge $((eb + 2048)) -a "$oa" -eq "$ob"
check "the files the REMOVEs named are gone" \
    test ! -e /export/drc-remove-1 -a ! -e /export/drc-remove-2 -a ! -e /export/drc-remove-3
# Once the clients are gone no session is left, and the only registered buffers in use
# are the receives the two channels keep posted (credits 64 + backchannel 16 each).
for _ in $(seq 1 30); do
    state=$(gw_jq "'%d %d' % (s['routes'][0]['live_sessions'], sum(d['buffers_in_use'] for d in s['rdma_devices']))")
    [[ ${state% *} == 0 && ${state#* } -le 160 ]] && break
    sleep 1
done
check "clients gone: no session, buffers in use only the channels' receives ($state)" \
    test "${state% *}" = 0 -a "${state#* }" -le 160
# ---- a lost channel is made again, its clients kept ----
# The server stops (its threads to 0: it drops every RDMA connection) in the middle of
# a paced NFSv3 copy and starts again 2 s later. The gateway connects both channels
# again and sends the calls that were in flight again; the client's TCP connection to
# the gateway is the same gateway session (never closed) before and after, and the copy
# reads back intact.
mount -t nfs -o vers=3,proto=tcp,port=2049,nolock 192.0.2.2:/export /mnt/m3 ||
    fail "mount for the connection cut"
ids() { gw_jq "sorted(x['id'] for x in s['routes'][0].get('sessions', []))"; }
chan_sum() { gw_jq "sum(c['$1'] for c in s['routes'][0]['shared_upstream']['channels'])"; }
ls /mnt/m3 >/dev/null
ids0=$(ids)
# The gateway's ends of its connections, as the server lists them: the same ports
# again after the cut, for the server's duplicate request cache keys on them.
gw_ports() { rdma res show cm_id | grep -v LISTEN | grep 'src-addr 192.0.2.1:20049' | grep -o 'dst-addr [^ ]*' | sort | tr '\n' ' '; }
ports0=$(gw_ports)
csrc=$(e2e_source 24)
(for i in $(seq 0 23); do
    dd if="$csrc" of=/mnt/m3/cut bs=1M skip=$i seek=$i count=1 conv=notrunc oflag=direct status=none || exit 1
    sleep 0.2
done) &
copier=$!
sleep 2
echo 0 >/proc/fs/nfsd/threads
sleep 2
echo "rdma 20049" >/proc/fs/nfsd/portlist
echo 8 >/proc/fs/nfsd/threads
wait "$copier"
rc=$?
check "the copy across the cut finished (status $rc)" test "$rc" -eq 0
check "and reads back intact" cmp -s "$csrc" /mnt/m3/cut
for _ in $(seq 1 20); do [[ $(server_conns) -eq 2 ]] && break; sleep 0.5; done
n=$(server_conns)
check "the server has its 2 RDMA connections again ($n)" test "$n" -eq 2
ports1=$(gw_ports)
check "from the same source ports ($ports0-> $ports1)" test -n "$ports0" -a "$ports0" = "$ports1"
rec=$(chan_sum reconnects) resent=$(chan_sum calls_resent) ids1=$(ids)
echo "channel reconnects $rec, calls sent again $resent, sessions $ids0 -> $ids1"
check "both channels were connected again ($rec reconnects)" test "${rec:-0}" -ge 2
check "the client's TCP connection was kept: the same gateway session ($ids0 -> $ids1)" \
    test "$ids0" = "$ids1" -a "$ids0" != "[]"
rm -f /mnt/m3/cut
umount /mnt/m3
gw_stop
grep -E "error|warning" "$GW_LOG" | head -20
e2e_finish
