# gwvm: two-guests
# Failover between two gateways with keepalived (deploy/ha/), as docs/operations.md
# sets it up: the shipped keepalived configurations, the gateway's /healthz as the
# health check, a virtual address the clients mount.
# Guest A (192.0.2.1) is the NFS server (kernel nfsd, RDMA only) and the second gateway
# gw2; guest B (192.0.2.2) is the first gateway gw1 and the kernel NFS client. (Two
# guests are what the harness has: the server shares gw2's host, and gw2 reaches it
# over rxe's loopback.) Both gateways run the same configuration.
#  - gw1 takes the virtual address 192.0.2.100 (higher priority); an NFSv3 and an
#    NFSv4.1 mount (hard, TCP) through it carry traffic over gw1;
#  - gw1 is killed (SIGKILL) in the middle of an NFSv3 copy while the NFSv4.1 client
#    holds a file open with a POSIX lock on it;
#  - keepalived moves the address to guest A; the clients reconnect to gw2 by
#    themselves; the copy finishes, equal to the source on the server; the NFSv4.1
#    file is still open and locked (a direct RDMA mount on A, another NFS client, is
#    refused the lock until B lets it go), and writes through it land;
#  - the failover time (SIGKILL to the first call through gw2) is printed.
# NFSv3 mounts with nolock: NLM goes to the mount's address (see nfsv3_plain.sh).
set -u
source "$GW_SRC/tests/e2e/lib/gw-e2e.sh"
VIP=192.0.2.100

gw_cfg() { # STATS_ADDR
    cat >"$E2E_WORK/gw.json" <<JSON
{ "routes": [ { "name": "nfs", "mode": "forward",
                "listen": "tcp://0.0.0.0:2049", "upstream": "rdma://192.0.2.1:20049" } ],
  "stats": { "listen": "$1:9464" } }
JSON
}

# keepalived with a shipped configuration, the interface name put in.
keepalived_start() { # CONF
    local dev conf=$E2E_WORK/keepalived.conf
    dev=$(ls /sys/class/net | grep -v -E '^(lo|veth)' | head -1)
    sed "s/eth0/$dev/g" "$GW_SRC/deploy/ha/$1" >"$conf"
    keepalived -t -f "$conf" || fail "keepalived -t accepts $1"
    keepalived --dont-fork --log-console --log-detail --vrrp -f "$conf" \
        -p /run/ka.pid -r /run/ka-vrrp.pid >"$GW_OUT/keepalived-$GWVM_ROLE.log" 2>&1 &
    KA_PID=$!
}

has_vip() { ip -4 addr show | grep -q "inet $VIP/"; }

wait_file() { # FILE SECONDS: false at the timeout, or when the other guest gave up
    local i
    for i in $(seq 1 "$2"); do
        [[ -e $1 ]] && return 0
        [[ -e $GW_OUT/b-done ]] && return 1
        sleep 1
    done
    return 1
}

if [[ $GWVM_ROLE == a ]]; then
    gwvm-net 192.0.2.1
    gwvm-nfsd /export rdma
    gw_cfg 0.0.0.0 # 127.0.0.1 for keepalived's check, 192.0.2.1 for guest B's watch
    gw_start gw2 "$E2E_WORK/gw.json" || { touch "$GW_OUT/a-failed"; exit 1; }
    # gw1 is started first and owns the address; gw2 joins as the backup (nopreempt).
    wait_file "$GW_OUT/b-has-vip" 180 || { echo "A: gw1 never took the address"; exit 1; }
    keepalived_start keepalived-gw2.conf
    touch "$GW_OUT/a-ready"
    # The lock check: another NFS client (this host, straight to the server over RDMA)
    # may not take the NFSv4.1 client's lock while it holds it, and may once it is gone.
    wait_file "$GW_OUT/locked-after-failover" 600 || { echo "A: B never got there"; exit 1; }
    modprobe rpcrdma
    mkdir -p /mnt/direct
    mount -t nfs -o vers=4.1,proto=rdma,port=20049 192.0.2.1:/ /mnt/direct
    python3 - /mnt/direct/locked >"$GW_OUT/lock-while-held" 2>&1 <<'PY'
import fcntl, sys
with open(sys.argv[1], "r+b") as f:
    try:
        fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        print("granted")
    except OSError as e:
        print("refused", e.errno)
PY
    touch "$GW_OUT/lock-tested"
    wait_file "$GW_OUT/unlocked" 120
    python3 - /mnt/direct/locked >"$GW_OUT/lock-after-release" 2>&1 <<'PY'
import fcntl, sys
with open(sys.argv[1], "r+b") as f:
    fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    print("granted")
PY
    sha256sum </export/copy | cut -d' ' -f1 >"$GW_OUT/server-copy.sha"
    umount /mnt/direct
    touch "$GW_OUT/a-done"
    wait_file "$GW_OUT/b-done" 300
    kill "$KA_PID" 2>/dev/null
    gw_stop
    exit 0
fi

gwvm-net 192.0.2.2
modprobe nfsv3; modprobe nfsv4; modprobe rpcrdma
gw_cfg 127.0.0.1
gw_start gw1 "$E2E_WORK/gw.json" || { touch "$GW_OUT/b-done"; e2e_finish; }
keepalived_start keepalived-gw1.conf
for _ in $(seq 1 30); do has_vip && break; sleep 1; done
check "keepalived gave gw1 the virtual address $VIP" has_vip
touch "$GW_OUT/b-has-vip"
wait_file "$GW_OUT/a-ready" 180 || { fail "guest A ready"; touch "$GW_OUT/b-done"; e2e_finish; }
sleep 3 # gw2's keepalived hears gw1's advertisements and stays the backup
check "gw1 keeps the address when gw2's keepalived starts" has_vip
check "gw2 on guest A is up and healthy (its /healthz)" curl -fsS -m 2 -o /dev/null http://192.0.2.1:9464/healthz

m3=/mnt/v3; m4=/mnt/v41; mkdir -p $m3 $m4
# MOUNT goes to the server itself (the gateways relay NFS only, on a wildcard address).
mount -t nfs -o vers=3,proto=tcp,port=2049,nolock,hard,timeo=50,mountaddr=192.0.2.1,mountproto=tcp \
    $VIP:/export $m3 || fail "NFSv3 mount of $VIP"
mount -t nfs -o vers=4.1,proto=tcp,port=2049,hard,timeo=50 $VIP:/ $m4 || fail "NFSv4.1 mount of $VIP"
if ! mountpoint -q $m3 || ! mountpoint -q $m4; then
    umount $m3 $m4 2>/dev/null; touch "$GW_OUT/b-done"; e2e_finish
fi
live=$(gw_jq "s['routes'][0]['live_sessions']")
check "both mounts go through gw1 ($live sessions)" test "$live" -ge 2

# The NFSv4.1 client opens a file and locks it, and keeps both across the failover.
mkfifo "$E2E_WORK/go"
python3 - $m4/locked "$E2E_WORK/go" >"$GW_OUT/holder.log" 2>&1 <<'PY' &
import fcntl, os, sys
f = open(sys.argv[1], "w+b")
f.write(b"before\n"); f.flush(); os.fsync(f.fileno())
fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
print("locked", flush=True)
open(sys.argv[2]).read()          # until the failover is over
f.write(b"after\n"); f.flush(); os.fsync(f.fileno())
print("wrote after the failover", flush=True)
open(sys.argv[2]).read()          # until the other client has tried the lock
fcntl.lockf(f, fcntl.LOCK_UN)
f.close()
print("unlocked and closed", flush=True)
PY
holder=$!
for _ in $(seq 1 30); do grep -q locked "$GW_OUT/holder.log" && break; sleep 1; done
check "the NFSv4.1 client holds its lock through gw1" grep -q locked "$GW_OUT/holder.log"

# The copy is paced (a MiB every 0.2 s, about 12 s in all) so that the kill lands in
# its middle whatever the guest's speed.
src=$(e2e_source 48)
(for i in $(seq 0 47); do
    dd if="$src" of=$m3/copy bs=1M skip=$i seek=$i count=1 conv=notrunc oflag=direct status=none || exit 1
    sleep 0.2
done) &
copier=$!
sleep 4
kill -0 "$copier" 2>/dev/null || fail "the copy was still running when gw1 was killed"
t0=$(date +%s.%N)
kill -KILL "$GW_PID"
wait "$GW_PID" 2>/dev/null
# The first call through gw2, as gw2 counts it.
t1=
for _ in $(seq 1 1200); do
    n=$(curl -sf http://192.0.2.1:9464/stats?sessions=0 |
        python3 -c "import json,sys; print(json.load(sys.stdin)['routes'][0]['totals']['replies'])" 2>/dev/null)
    if [[ ${n:-0} -gt 0 ]]; then t1=$(date +%s.%N); break; fi
    sleep 0.1
done
check "the virtual address left guest B" bash -c "! ip -4 addr show | grep -q 'inet $VIP/'"
if [[ -n $t1 ]]; then
    ok "failover: SIGKILL of gw1 to the first reply through gw2 in $(python3 -c "print('%.1f' % ($t1 - $t0))") s"
else
    # The hard mounts would wait for ever: give up on them and end both guests.
    fail "no reply through gw2 within 120 s"
    kill "$copier" "$holder" 2>/dev/null
    umount -f -l $m3 $m4
    touch "$GW_OUT/b-done"
    e2e_finish
fi
rc=0; wait "$copier" || rc=$?
t2=$(date +%s.%N)
check "the NFSv3 copy finished after the failover (dd status $rc, $(python3 -c "print('%.1f' % ($t2 - $t0))") s after the kill)" test "$rc" -eq 0
echo go >"$E2E_WORK/go"
for _ in $(seq 1 60); do grep -q 'wrote after' "$GW_OUT/holder.log" && break; sleep 1; done
check "the NFSv4.1 client wrote through its open file after the failover" grep -q 'wrote after' "$GW_OUT/holder.log"
touch "$GW_OUT/locked-after-failover"
wait_file "$GW_OUT/lock-tested" 120
check "another client is refused the lock the NFSv4.1 client still holds ($(cat "$GW_OUT/lock-while-held" 2>/dev/null))" \
    grep -q '^refused' "$GW_OUT/lock-while-held"
echo go >"$E2E_WORK/go"
wait "$holder"; rc=$?
check "the NFSv4.1 client unlocked and closed its file (status $rc)" test "$rc" -eq 0
touch "$GW_OUT/unlocked"
wait_file "$GW_OUT/a-done" 120
check "the other client gets the lock once it is let go" grep -q '^granted' "$GW_OUT/lock-after-release"
want=$(sha256sum <"$src" | cut -d' ' -f1)
check "the server's copy equals the source" test "$(cat "$GW_OUT/server-copy.sha" 2>/dev/null)" = "$want"
check "the NFSv4.1 file holds what was written before and after" \
    test "$(cat $m4/locked)" = "$(printf 'before\nafter')"
sessions=$(curl -sf http://192.0.2.1:9464/stats?sessions=0 |
    python3 -c "import json,sys; print(json.load(sys.stdin)['routes'][0]['live_sessions'])")
check "both mounts now go through gw2 ($sessions sessions)" test "${sessions:-0}" -ge 2
umount $m3 $m4
kill "$KA_PID" 2>/dev/null
cp "$GW_OUT"/keepalived-*.log "$GW_OUT"/gw*.log "$E2E_WORK/" 2>/dev/null
touch "$GW_OUT/b-done"
e2e_finish
