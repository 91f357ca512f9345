# Quality of service (issue 34), one guest: two NFS clients through one forward route,
# the guest's own (192.0.2.x, no class: unlimited) and one in a network namespace
# (10.9.0.2, class "backup": NFS WRITEs held to 4 MB/s). The limited client copies a file
# with O_DIRECT while the other copies its own; the limited client's rate must be within
# a generous band of 4 MB/s (25 %; whether it is within the issue's 10 % is printed),
# the other's rate is printed beside its rate alone, every checksum is intact. On the route with an RDMA connection per client the file is
# E2E_QOS_MB MiB (120: about 31 s at the limit, the issue's 30 s window); on a shared
# route (upstream_connections 2) it is E2E_QOS_SHORT_MB MiB (24: about 6 s, a shorter
# window to keep the job under its budget). Then a SIGHUP raising the limit to 16 MB/s
# applies to the running copy (of twice as much): its rate in the second after the reload
# is well above 4 MB/s. /stats counts the class's calls and bytes and the time its client
# was held.
# Last, a reverse route (RDMA client, TCP server): the guest's kernel NFS client mounts
# the gateway over RDMA (192.0.2.2:20050), the gateway relays over TCP to nfsd
# (192.0.2.1:2049, a TCP listener added for this phase); the client is in class "backup"
# at 4 MB/s and copies E2E_QOS_SHORT_MB MiB (a 6 s window, for the job's budget): its
# rate within the same band, its checksum intact, its time held counted in /stats. The
# same again on a reverse route with shared TCP connections (upstream_connections 2),
# then the SIGHUP step there: the raised limit applies to the RDMA client's running copy.
set -u
source "$GW_SRC/tests/e2e/lib/gw-e2e.sh"
gwvm-net
gwvm-nfsd /export rdma
modprobe nfsv3
LONG_MB=${E2E_QOS_MB:-120}
SHORT_MB=${E2E_QOS_SHORT_MB:-24}
# use_source MIB: the file the copies write ($src, $sum, $MB).
use_source() {
    MB=$1
    src=$(e2e_source "$MB")
    sum=$(sha256sum <"$src" | cut -d' ' -f1)
}
client2_netns # 10.9.0.2 in namespace c2, the gateway's side 10.9.0.1

gw_config() { # gw_config UPSTREAM_CONNECTIONS MB_PER_S
    cat >"$E2E_WORK/gw.json" <<JSON
{ "workers": 1,
  "qos_classes": { "backup": { "clients": ["10.9.0.0/24"], "program": 100003,
                               "procedures": "writes", "to_server_mb_s": $2 } },
  "routes": [ { "name": "nfs", "mode": "forward", "upstream_connections": $1,
                "listen": "tcp://0.0.0.0:2049", "upstream": "rdma://192.0.2.1:20049",
                "qos": ["backup"] } ],
  "stats": { "listen": "127.0.0.1:9464" } }
JSON
}

# now_s: seconds, with nanoseconds.
now_s() { date +%s.%N; }
# rate MIB SECONDS: MB (10^6 bytes) a second.
rate() { /usr/bin/python3 -c "print('%.2f' % ($1 * 1048576 / 1e6 / $2))"; }
# copy_in NS_OR_EMPTY MNT NAME OUT: O_DIRECT copy of the source; "SECONDS STATUS" into OUT.
# In the namespace the mount, the copy and the unmount are one command: `ip netns exec`
# gives each command a mount namespace of its own.
copy_in() {
    local ns=$1 mnt=$2 name=$3 out=$4 t0 t1 rc=0
    if [[ -n $ns ]]; then
        ip netns exec "$ns" bash -c "
            mkdir -p $mnt && mount -t nfs -o vers=3,proto=tcp,port=2049,nolock 10.9.0.1:/export $mnt || exit 9
            t0=\$(date +%s.%N); dd if=$src of=$mnt/$name bs=1M oflag=direct status=none; rc=\$?
            t1=\$(date +%s.%N); umount $mnt; echo \$t0 \$t1 \$rc" >"$out.raw" || echo "0 1 9" >"$out.raw"
        read -r t0 t1 rc <"$out.raw"
    else
        t0=$(now_s)
        dd if="$src" of="$mnt/$name" bs=1M oflag=direct status=none || rc=$?
        t1=$(now_s)
    fi
    echo "$(/usr/bin/python3 -c "print('%.3f' % ($t1 - $t0))") $rc" >"$out"
}
# took OUT NAME: the seconds of a copy_in, its status checked.
took() {
    local secs rc
    read -r secs rc <"$1"
    check "O_DIRECT copy $2 (status $rc)" test "$rc" -eq 0
    echo "$secs" >"$1.s"
}
check_sum() { # check_sum NAME: the server's copy is the source
    check "checksum of $1 on the server" test "$(sha256sum </export/"$1" | cut -d' ' -f1)" = "$sum"
}

mount_fast() {
    mkdir -p /mnt/fast && mount -t nfs -o vers=3,proto=tcp,port=2049,nolock 192.0.2.2:/export /mnt/fast ||
        fail "mount of the unlimited client"
}

# limited_within LABEL MB_PER_S: the limited client's rate against 4 MB/s: whether it is
# within the issue's 10 % is printed; the check is a generous band (25 %), since the
# guest's two emulated CPUs, shared with other guests, can slow a client below its limit.
limited_within() {
    local in10
    in10=$(/usr/bin/python3 -c "print('within' if 3.6 <= $2 <= 4.4 else 'NOT within')")
    echo "qos $1: $2 MB/s is $in10 10 % of the 4 MB/s limit"
    check "$1: the limited client's rate ($2 MB/s) is within 25 % of 4 MB/s" \
        /usr/bin/python3 -c "import sys; sys.exit(not 3.0 <= $2 <= 5.0)"
}

# phase LABEL: alone, then side by side; prints and checks the rates.
phase() {
    local label=$1 w=$E2E_WORK alone together limited lrate pid
    copy_in "" /mnt/fast "alone-$label" "$w/alone-$label"
    took "$w/alone-$label" "alone-$label"; alone=$(cat "$w/alone-$label.s")
    check_sum "alone-$label"
    copy_in c2 /mnt/slow "slow-$label" "$w/slow-$label" &
    pid=$!
    copy_in "" /mnt/fast "fast-$label" "$w/fast-$label"
    wait "$pid"
    took "$w/fast-$label" "fast-$label"; together=$(cat "$w/fast-$label.s")
    took "$w/slow-$label" "slow-$label"; limited=$(cat "$w/slow-$label.s")
    lrate=$(rate "$MB" "$limited")
    echo "qos $label: limited client $lrate MB/s over ${limited} s (limit 4); unlimited client $(rate "$MB" "$together") MB/s beside it, $(rate "$MB" "$alone") MB/s alone"
    limited_within "$label" "$lrate"
    check_sum "fast-$label"
    check_sum "slow-$label"
    calls=$(gw_jq "s['routes'][0]['qos'][0]['calls']")
    held=$(gw_jq "s['routes'][0]['qos'][0]['throttled_seconds']")
    check "$label: /stats counts the class's calls ($calls) and the time its client was held ($held s)" \
        /usr/bin/python3 -c "import sys; sys.exit(not ($calls >= $MB and $held > 0))"
}

# reload_phase LABEL NS_OR_EMPTY MNT CMD...: a copy twice as long as a phase's, still
# going in the second after the reload; CMD... writes the configuration with the limit
# raised to 16 MB/s, then SIGHUP. The copy's rate in the second before and after it.
reload_phase() {
    local label=$1 ns=$2 mnt=$3 pid b0 b1 b2 t0 t1 t2 before after
    shift 3
    use_source $((2 * SHORT_MB))
    copy_in "$ns" "$mnt" "reload-$label" "$E2E_WORK/reload-$label" &
    pid=$!
    sleep 2
    b0=$(gw_jq "s['routes'][0]['qos'][0]['bytes_to_server']"); t0=$(now_s)
    sleep 1
    "$@"
    b1=$(gw_jq "s['routes'][0]['qos'][0]['bytes_to_server']"); t1=$(now_s)
    kill -HUP "$GW_PID"
    sleep 1
    b2=$(gw_jq "s['routes'][0]['qos'][0]['bytes_to_server']"); t2=$(now_s)
    check "$label SIGHUP: reloaded" grep -q "configuration reloaded" "$GW_LOG"
    wait "$pid"
    took "$E2E_WORK/reload-$label" "reload-$label"
    after=$(/usr/bin/python3 -c "print('%.2f' % (($b2 - $b1) / 1e6 / ($t2 - $t1)))")
    before=$(/usr/bin/python3 -c "print('%.2f' % (($b1 - $b0) / 1e6 / ($t1 - $t0)))")
    echo "qos $label reload: the running copy went at $before MB/s, then $after MB/s in the second after the limit was raised to 16 (from 4)"
    check "$label SIGHUP: the raised limit applies to the running copy ($after MB/s > 6)" \
        /usr/bin/python3 -c "import sys; sys.exit(not $after > 6)"
    check_sum "reload-$label"
}

# ---- one upstream connection per client ----
use_source "$LONG_MB"
gw_config 0 4
gw_start own "$E2E_WORK/gw.json" || e2e_finish
mount_fast
phase own
umount /mnt/fast
gw_check_quiet
gw_stop

# ---- shared upstream connections; then SIGHUP raises the limit under a running copy ----
use_source "$SHORT_MB"
gw_config 2 4
gw_start shared "$E2E_WORK/gw.json" || e2e_finish
mount_fast
phase shared
reload_phase shared c2 /mnt/slow gw_config 2 16
umount /mnt/fast
gw_stop
grep -E "error|warning" "$GW_LOG" | head -20

# ---- a reverse route: the RDMA client limited, nfsd reached over TCP ----
echo "tcp 2049" >/proc/fs/nfsd/portlist || fail "a TCP listener for nfsd"
rev_config() { # rev_config UPSTREAM_CONNECTIONS MB_PER_S
    cat >"$E2E_WORK/gw.json" <<JSON
{ "workers": 1,
  "qos_classes": { "backup": { "clients": ["192.0.2.0/24"], "program": 100003,
                               "procedures": "writes", "to_server_mb_s": $2 } },
  "routes": [ { "name": "rev", "mode": "reverse", "upstream_connections": $1,
                "listen": "rdma://192.0.2.2:20050", "upstream": "tcp://192.0.2.1:2049",
                "qos": ["backup"] } ],
  "stats": { "listen": "127.0.0.1:9464" } }
JSON
}
# rev_phase LABEL UPSTREAM_CONNECTIONS [reload]: the RDMA client's copy at 4 MB/s; with
# "reload", the SIGHUP step after it.
rev_phase() {
    local label=$1 conns=$2 secs lrate calls held
    rev_config "$conns" 4
    use_source "$SHORT_MB"
    gw_start "$label" "$E2E_WORK/gw.json" || return
    mkdir -p /mnt/rev
    if mount -t nfs -o vers=3,proto=rdma,port=20050 192.0.2.2:/export /mnt/rev; then
        check "$label: the mount is RDMA to the gateway" grep -q "/mnt/rev nfs.*proto=rdma.*addr=192.0.2.2" /proc/mounts
        copy_in "" /mnt/rev "$label" "$E2E_WORK/$label"
        took "$E2E_WORK/$label" "$label"
        secs=$(cat "$E2E_WORK/$label.s"); lrate=$(rate "$MB" "$secs")
        echo "qos $label: the RDMA client went at $lrate MB/s over $secs s (limit 4)"
        limited_within "$label" "$lrate"
        check_sum "$label"
        calls=$(gw_jq "s['routes'][0]['qos'][0]['calls']")
        held=$(gw_jq "s['routes'][0]['qos'][0]['throttled_seconds']")
        check "$label: /stats counts the class's calls ($calls) and the time its client was held ($held s)" \
            /usr/bin/python3 -c "import sys; sys.exit(not ($calls >= $MB and $held > 0))"
        [[ ${3:-} == reload ]] && reload_phase "$label" "" /mnt/rev rev_config "$conns" 16
        umount /mnt/rev
    else
        fail "$label: mount NFSv3 over RDMA through the gateway"
    fi
    gw_check_quiet
    gw_stop
    grep -E "error|warning" "$GW_LOG" | head -20
}
rev_phase reverse 0
rev_phase reverse-shared 2 reload
e2e_finish
