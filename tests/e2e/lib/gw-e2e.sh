# gw-e2e.sh: shared pieces of the end-to-end jobs. Source it inside a guest job:
#   source "$GW_SRC/tests/e2e/lib/gw-e2e.sh"
# Every check prints "ok: ..." or "FAIL: ..."; e2e_finish exits non-zero when anything
# failed, so a job runs all its checks and reports every failure, not just the first.

E2E_FAILS=0
# The mounts of the NFS data jobs (forward_nfs.sh, reverse_nfs.sh) as VERSION:RSIZE
# words: E2E_RUNS when set, else every version of E2E_VERSIONS with every size of
# E2E_SIZES (by default 3, 4.0, 4.1 and 4.2 with 4 KiB and 1 MiB).
e2e_runs() {
    local v s runs=${E2E_RUNS:-}
    if [[ -z $runs ]]; then
        for v in ${E2E_VERSIONS:-3 4.0 4.1 4.2}; do
            for s in ${E2E_SIZES:-4096 1048576}; do runs+="$v:$s "; done
        done
    fi
    echo $runs
}
E2E_WORK=${E2E_WORK:-/tmp/e2e}
mkdir -p "$E2E_WORK"

ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; E2E_FAILS=$((E2E_FAILS + 1)); }
check() { # check DESCRIPTION COMMAND...
    local what=$1; shift
    if "$@"; then ok "$what"; else fail "$what"; fi
}
e2e_finish() {
    if ((E2E_FAILS)); then echo "e2e: $E2E_FAILS checks failed"; exit 1; fi
    echo "e2e: all checks passed"
}

# ---- the gateway ----

# gw_start NAME CONFIG_FILE: run the gateway in the background, log to $GW_OUT/NAME.log,
# and wait until it serves its stats endpoint (so its listeners are up).
gw_start() {
    local name=$1 cfg=$2
    GW_LOG=$GW_OUT/$name.log
    "$GW_BIN" -c "$cfg" >"$GW_LOG" 2>&1 &
    GW_PID=$!
    local i
    for i in $(seq 1 100); do
        if grep -q "running with" "$GW_LOG" 2>/dev/null; then return 0; fi
        kill -0 "$GW_PID" 2>/dev/null || break
        sleep 0.2
    done
    fail "gateway $name did not start"; cat "$GW_LOG"
    return 1
}

# gw_stop: SIGTERM (drain) and expect exit status 0.
gw_stop() {
    kill -TERM "$GW_PID" 2>/dev/null || true
    local rc=0
    wait "$GW_PID" || rc=$?
    check "gateway drained and exited 0 on SIGTERM (status $rc)" test "$rc" -eq 0
}

# gw_stats [QUERY]: the JSON of /stats from the default stats address.
gw_stats() { curl -sf "http://${GW_STATS:-127.0.0.1:9464}/stats${1:+?$1}"; }
gw_metrics() { curl -sf "http://${GW_STATS:-127.0.0.1:9464}/metrics${1:+?$1}"; }

# gw_nlm_restart KEY...: the first route's /stats nlm.gateway_restart figures KEY..., on one
# line (0 for one not there yet); polled while a gateway starts, so each ask is given 5 s.
gw_nlm_restart() {
    curl -sf -m 5 "http://${GW_STATS:-127.0.0.1:9464}/stats?sessions=0" | /usr/bin/python3 -c "
import json, sys
g = json.load(sys.stdin)['routes'][0]['nlm'].get('gateway_restart', {})
print(*(g.get(k, 0) for k in sys.argv[1:]))" "$@"
}

# lock_release_wait PID STOP TRY...: the fcntl lock holder PID lets go (STOP is touched; it is
# killed after 30 s), then TRY... (a process elsewhere trying the lock: status 0 when it gets
# it) is asked once a second, up to 10 times, until it gets the lock. Sets LR_WAITED (the
# tries it took) and LR_GOT (the last one's status). Not in a subshell: PID is reaped here.
lock_release_wait() {
    local pid=$1 stop=$2
    shift 2
    touch "$stop"
    for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
    LR_GOT=1 LR_WAITED=0
    for LR_WAITED in $(seq 1 10); do LR_GOT=0; "$@" || LR_GOT=$?; ((LR_GOT == 0)) && break; sleep 1; done
}

# gw_jq EXPR: evaluate a Python expression over the /stats JSON bound to `s`.
gw_jq() {
    gw_stats | /usr/bin/python3 -c "import json,sys; s=json.load(sys.stdin); print($1)"
}

# gw_check_quiet [SECONDS]: once every client is gone (unmounted), the gateway holds
# nothing: no live session on any route, and no registered buffer in use on any RDMA
# device (a call, record or window kept past its connection shows up here). Waits up to
# SECONDS (30) for connections that are still closing.
gw_check_quiet() {
    local limit=${1:-30} i state
    for i in $(seq 1 "$limit"); do
        state=$(gw_jq "'%d sessions, %d buffers in use' % (sum(r['live_sessions'] for r in s['routes']), sum(d['buffers_in_use'] for d in s['rdma_devices']))")
        [[ $state == "0 sessions, 0 buffers in use" ]] && break
        sleep 1
    done
    check "nothing left behind once the clients are gone ($state)" \
        test "$state" = "0 sessions, 0 buffers in use"
}

# ---- workloads: each checks data, not exit codes ----

# A random source file of N MiB, made once per size.
e2e_source() {
    local mb=$1 f=$E2E_WORK/src-$1M
    [[ -f $f ]] || dd if=/dev/urandom of="$f" bs=1M count="$mb" status=none
    echo "$f"
}

# wl_bigfile DIR MB: O_DIRECT write and read back, checksums compared.
wl_bigfile() {
    local dir=$1 mb=$2 src want got
    src=$(e2e_source "$mb")
    want=$(md5sum <"$src" | cut -d' ' -f1)
    if ! dd if="$src" of="$dir/big" bs=1M oflag=direct status=none; then
        fail "O_DIRECT write of $mb MiB"; return
    fi
    # Read back with O_DIRECT so the data really comes over the wire again.
    got=$(dd if="$dir/big" bs=1M iflag=direct status=none | md5sum | cut -d' ' -f1)
    check "O_DIRECT write and read back of $mb MiB: checksums match" test "$want" = "$got"
    rm -f "$dir/big"
}

# wl_oddsizes DIR: files whose sizes are not multiples of 4, around the inline and
# page boundaries, written and read back byte for byte.
wl_oddsizes() {
    local dir=$1 sz bad=0
    for sz in 1 2 3 5 7 1021 1023 1025 4093 4095 4097 4099 8191 65533 65537 131071 1048573 1048577; do
        head -c "$sz" "$(e2e_source 2)" >"$E2E_WORK/odd"
        cp "$E2E_WORK/odd" "$dir/odd-$sz"
        if ! cmp -s "$E2E_WORK/odd" <(dd if="$dir/odd-$sz" iflag=direct bs=1M status=none); then
            bad=$((bad + 1)); echo "  size $sz differs"
        fi
        [[ $(stat -c %s "$dir/odd-$sz") == "$sz" ]] || { bad=$((bad + 1)); echo "  size $sz: wrong length"; }
    done
    check "files of odd sizes (1 B .. 1 MiB+1) read back intact" test "$bad" -eq 0
    rm -f "$dir"/odd-*
}

# wl_bigdir DIR N: N entries created and every one listed.
wl_bigdir() {
    local dir=$1/bigdir n=$2
    mkdir -p "$dir"
    (cd "$dir" && seq -f "entry-with-a-long-name-%06g" 1 "$n" | xargs touch)
    # A fresh listing from the server, not the client's cache.
    echo 3 >/proc/sys/vm/drop_caches
    local listed; listed=$(ls -f "$dir" | grep -c '^entry-with-a-long-name-')
    check "directory of $n entries listed completely ($listed)" test "$listed" -eq "$n"
    local sum1 sum2
    sum1=$(seq -f "entry-with-a-long-name-%06g" 1 "$n" | sort | md5sum)
    sum2=$(ls "$dir" | sort | md5sum)
    check "directory listing has exactly the names created" test "$sum1" = "$sum2"
    rm -rf "$dir"
}

# wl_symlink DIR: symlink create and readlink, short and long targets.
wl_symlink() {
    local dir=$1 long
    long=$(printf 'd%.0s' $(seq 1 200))/$(printf 'e%.0s' $(seq 1 200))/target-of-odd-length-x
    # Longer than a 4 KiB inline threshold leaves room for: the path goes by a Read
    # chunk (SYMLINK, CREATE) and comes back in a Reply chunk (READLINK).
    huge=$(for i in $(seq 1 39); do printf 'component-%03d-%s/' "$i" "$(printf 'x%.0s' $(seq 1 86))"; done)end-x
    ln -s "short/target" "$dir/ln1"
    ln -s "$long" "$dir/ln2"
    ln -s "$huge" "$dir/ln3"
    echo 3 >/proc/sys/vm/drop_caches
    check "readlink of a short symlink" test "$(readlink "$dir/ln1")" = "short/target"
    check "readlink of a ${#long}-byte symlink" test "$(readlink "$dir/ln2")" = "$long"
    check "readlink of a ${#huge}-byte symlink" test "$(readlink "$dir/ln3")" = "$huge"
    rm -f "$dir/ln1" "$dir/ln2" "$dir/ln3"
}

# wl_bigacl DIR N: a POSIX ACL of N named users set on a file and read back fresh from
# the server, entry for entry. On NFSv3 the ACL travels by NFSACL (SETACL, GETACL: 12
# bytes an entry). The Linux 6.1 client and server refuse (EIO) a SETACL of much more
# than 300 entries even over plain TCP: its arguments must fit a page.
wl_bigacl() {
    local f=$1/acl n=$2
    : >"$f"
    /usr/bin/python3 - "$f" "$n" <<'PY' && ok "a POSIX ACL of $n entries set and read back intact" || fail "a POSIX ACL of $n entries"
import os, struct, sys
path, n = sys.argv[1], int(sys.argv[2])
# system.posix_acl_access: version 2, then (tag, perm, id) little-endian, in the order
# the kernel keeps them: USER_OBJ, USER by id, GROUP_OBJ, MASK, OTHER.
entries = [(0x01, 6, 0xFFFFFFFF)] + [(0x02, 4, 5000 + i) for i in range(n)] + \
          [(0x04, 4, 0xFFFFFFFF), (0x10, 4, 0xFFFFFFFF), (0x20, 0, 0xFFFFFFFF)]
acl = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *e) for e in entries)
os.setxattr(path, "system.posix_acl_access", acl)
with open("/proc/sys/vm/drop_caches", "w") as dc:
    dc.write("3")
got = os.getxattr(path, "system.posix_acl_access")
if got != acl:
    sys.exit("read back %d bytes, want %d" % (len(got), len(acl)))
PY
    rm -f "$f"
}

# wl_nfs4acl DIR N: an NFSv4 ACL (system.nfs4_acl, on an NFSv4 mount) that allows N
# users set and read back fresh from the server: every user must be in the ACL it
# returns. With N = 190 the SETATTR that carries it exceeds a 4 KiB inline threshold
# with nothing DDP-eligible in it: a long call (a Position-Zero Read chunk); the
# GETATTR reply is as long.
wl_nfs4acl() {
    local f=$1/acl4 n=$2
    : >"$f"
    /usr/bin/python3 - "$f" "$n" <<'PY' && ok "an NFSv4 ACL of $n users set and read back" || fail "an NFSv4 ACL of $n users"
import os, struct, sys
path, n = sys.argv[1], int(sys.argv[2])

def utf8str(b):
    return struct.pack(">I", len(b)) + b + b"\0" * (-len(b) % 4)

# ALLOW ACEs: the owner, N users by nine-digit number (the server does not map names), the
# group and everyone: what a POSIX ACL of N named users looks like to NFSv4.
users = [str(100000000 + i).encode() for i in range(n)]
aces = [(0, 0, 0x001F01FF, b"OWNER@")] + [(0, 0, 0x00120089, u) for u in users] + \
       [(0, 0x40, 0x00120089, b"GROUP@"), (0, 0, 0x00120089, b"EVERYONE@")]
acl = struct.pack(">I", len(aces)) + \
    b"".join(struct.pack(">III", t, fl, m) + utf8str(w) for t, fl, m, w in aces)
os.setxattr(path, "system.nfs4_acl", acl)
with open("/proc/sys/vm/drop_caches", "w") as dc:
    dc.write("3")
got = os.getxattr(path, "system.nfs4_acl")
count, pos, allowed = struct.unpack(">I", got[:4])[0], 4, set()
for _ in range(count):
    t, fl, m, wl = struct.unpack(">IIII", got[pos:pos + 16])
    who = got[pos + 16:pos + 16 + wl]
    pos += 16 + wl + (-wl % 4)
    if t == 0:
        allowed.add(who)
missing = [u for u in users if u not in allowed]
if missing or pos != len(got):
    sys.exit("%d of %d users missing from the %d ACEs read back" % (len(missing), n, count))
PY
    rm -f "$f"
}

# wl_rename_setattr DIR: rename, chmod, truncate, utimes, seen fresh from the server.
wl_rename_setattr() {
    local dir=$1
    echo "rename me" >"$dir/a"
    mv "$dir/a" "$dir/b"
    chmod 0640 "$dir/b"
    truncate -s 12345 "$dir/b"
    touch -d "2001-02-03 04:05:06" "$dir/b"
    echo 3 >/proc/sys/vm/drop_caches
    check "rename: old name gone" test ! -e "$dir/a"
    check "rename: new name present" test -e "$dir/b"
    check "setattr: mode 0640" test "$(stat -c %a "$dir/b")" = "640"
    check "setattr: size 12345" test "$(stat -c %s "$dir/b")" = "12345"
    check "setattr: mtime" test "$(stat -c %Y "$dir/b")" = "$(date -d '2001-02-03 04:05:06' +%s)"
    rm -f "$dir/b"
}

# wl_locks DIR: a POSIX lock held by one process blocks another, and is released.
wl_locks() {
    local dir=$1
    : >"$dir/lockfile"
    /usr/bin/python3 - "$dir/lockfile" <<'PY' && ok "POSIX locks: exclusive, conflicting, released" || fail "POSIX locks"
import fcntl, os, sys, time
path = sys.argv[1]
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    fd = os.open(path, os.O_RDWR)
    fcntl.lockf(fd, fcntl.LOCK_EX)
    os.write(w, b"L")
    time.sleep(2)
    fcntl.lockf(fd, fcntl.LOCK_UN)
    os._exit(0)
os.read(r, 1)
fd = os.open(path, os.O_RDWR)
try:
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    sys.exit("lock was granted while another process held it")
except OSError:
    pass
t = time.time()
fcntl.lockf(fd, fcntl.LOCK_EX)       # waits for the child's unlock
fcntl.lockf(fd, fcntl.LOCK_UN)
os.waitpid(pid, 0)
sys.exit(0 if time.time() - t < 30 else "lock took too long")
PY
    rm -f "$dir/lockfile"
}

# wl_concurrent DIR N MB: N writers at once, each its own file, all checksummed.
wl_concurrent() {
    local dir=$1 n=$2 mb=$3 i src bad=0
    src=$(e2e_source "$mb")
    local pids=()
    for i in $(seq 1 "$n"); do
        dd if="$src" of="$dir/par-$i" bs=256k oflag=direct status=none &
        pids+=($!)
    done
    # Only these: a bare `wait` would also wait for the gateway.
    for i in "${pids[@]}"; do wait "$i" || bad=$((bad + 1)); done
    local want; want=$(md5sum <"$src" | cut -d' ' -f1)
    for i in $(seq 1 "$n"); do
        [[ $(dd if="$dir/par-$i" bs=1M iflag=direct status=none | md5sum | cut -d' ' -f1) == "$want" ]] ||
            { bad=$((bad + 1)); echo "  writer $i: data differs"; }
    done
    check "$n concurrent writers of $mb MiB each: all intact" test "$bad" -eq 0
    rm -f "$dir"/par-*
}

# nfsd_wait_grace SERVER [PROTO]: wait (up to 150 s) until the NFS server's grace periods
# are over: during NFSv4's, OPENs are refused with NFS4ERR_GRACE, and during it or lockd's
# (10 s, set by gwvm-nfsd) no delegation is granted. A throwaway NFSv4.2 mount straight
# to the server over PROTO (rdma, the default, or tcp; never through a gateway) retries
# an open until it succeeds.
nfsd_wait_grace() {
    local srv=$1 proto=${2:-rdma} m=/mnt/.grace t0 port=20049
    local started; started=$(cat /run/gwvm-nfsd.started 2>/dev/null || date +%s)
    while (($(date +%s) - started < 12)); do sleep 1; done
    mkdir -p $m
    echo probe >/export/.grace-probe
    [[ $proto == tcp ]] && port=2049
    mount -t nfs -o vers=4.2,proto=$proto,port=$port "$srv":/ $m || return 1
    t0=$(date +%s)
    until timeout 5 cat $m/.grace-probe >/dev/null 2>&1; do
        (($(date +%s) - t0 > 150)) && { umount $m; return 1; }
        sleep 1
    done
    echo "nfsd grace period over after $(($(date +%s) - t0)) s"
    umount $m
    rm -f /export/.grace-probe
}

# client2_netns: a network namespace "c2" for a second NFS client with its own
# identity, at 10.9.0.2, reaching this guest at 10.9.0.1.
client2_netns() {
    ip netns add c2
    ip link add vc1 type veth peer name vc2 netns c2
    ip addr add 10.9.0.1/24 dev vc1; ip link set vc1 up
    ip -n c2 addr add 10.9.0.2/24 dev vc2; ip -n c2 link set vc2 up; ip -n c2 link set lo up
}

# wl_delegation_recall VERS M1 [ROUTE]: client 1, mounted at M1 through the gateway, holds a
# file open for reading until the server grants it a delegation; client 2 (namespace
# c2, its own NFSv4 client identity, NFS over TCP at 10.9.0.1:2049) then writes the
# file. The server recalls the delegation with CB_RECALL, which must cross the gateway
# and be answered: the write completes well inside the 90 s lease, the delegation is
# returned, the gateway (route ROUTE, by name; the first route unless given) counts
# backward calls and replies, and the server never sees the callback path down.
wl_delegation_recall() {
    local vers=$1 m1=$2 f i holder has_deleg calls_before calls_after replies start rc took
    local rt="s['routes'][0]"
    [[ -n ${3:-} ]] && rt="[r for r in s['routes'] if r['name'] == '$3'][0]"
    f=deleg-$vers
    # Made on the server, so that no client holds it open for writing: nfsd does
    # not delegate a file that is open for write.
    echo "original" >/export/$f
    # Client 1 opens it for reading until a delegation shows in the server's state,
    # then holds it open.
    /usr/bin/python3 - "$m1/$f" <<'PY' &
import glob, sys, time
deadline = time.time() + 30
while time.time() < deadline:
    f = open(sys.argv[1]); f.read()
    if any("type: deleg" in open(p).read() for p in glob.glob("/proc/fs/nfsd/clients/*/states")):
        break
    f.close(); time.sleep(1)
time.sleep(60)
PY
    holder=$!
    has_deleg=no
    for i in $(seq 1 70); do
        if grep -qs "type: deleg" /proc/fs/nfsd/clients/*/states; then has_deleg=yes; break; fi
        sleep 0.5
    done
    check "NFSv$vers: the server granted client 1 a delegation" test "$has_deleg" = yes
    calls_before=$(gw_jq "$rt['totals']['backward_calls']")

    start=$(date +%s%N)
    ip netns exec c2 unshare -u bash -c "
        hostname gw-client-2
        echo gw-client-2-id >/sys/fs/nfs/net/nfs_client/identifier
        mkdir -p /mnt/c2 && mount -t nfs -o vers=$vers,proto=tcp,port=2049 10.9.0.1:/ /mnt/c2 &&
        echo changed-by-client-2 >/mnt/c2/$f && umount /mnt/c2"
    rc=$?
    took=$(( ($(date +%s%N) - start) / 1000000 ))
    check "NFSv$vers: client 2's conflicting write succeeded" test "$rc" -eq 0
    check "NFSv$vers: it completed promptly (${took} ms, lease 90 s)" test "$took" -lt 20000
    check "NFSv$vers: the delegation was returned" \
        test -z "$(grep -s 'type: deleg' /proc/fs/nfsd/clients/*/states)"
    calls_after=$(gw_jq "$rt['totals']['backward_calls']")
    replies=$(gw_jq "$rt['totals']['backward_replies']")
    check "NFSv$vers: the gateway relayed backward calls ($calls_before -> $calls_after, $replies replies)" \
        test "$calls_after" -gt "$calls_before" -a "$replies" -gt 0
    check "NFSv$vers: the server never saw the callback path down" \
        test -z "$(grep -si 'callback.*down' /proc/fs/nfsd/clients/*/info)"
    kill "$holder" 2>/dev/null; wait "$holder" 2>/dev/null
    echo 3 >/proc/sys/vm/drop_caches
    check "NFSv$vers: client 1 reads client 2's change" grep -q changed-by-client-2 "$m1/$f"
    grep -h "callback" /proc/fs/nfsd/clients/*/info | sort | uniq -c
}

# ---- RoCEv2 captures (two-guest jobs) ----
# A guest captures the link with roce_capture_start and hands the file to the host with
# roce_capture_stop; the job's host part (run-e2e's "# gwvm: host-part") decodes it with
# roce_decode, natively: tshark with chunk reassembly over a few hundred thousand
# frames takes minutes under emulation, seconds on the host.

# roce_capture_start [NAME]: capture RoCEv2 (udp/4791) on the guest's Ethernet link into
# a RAM file (NAME, roce.pcap unless given). A large capture buffer: a dropped packet
# would break chunk reassembly and show up as a malformed frame that no peer sent.
roce_capture_start() {
    local dev; dev=$(ls /sys/class/net | grep -v -E '^(lo|veth|vc)' | head -1)
    ROCE_PCAP=$E2E_WORK/${1:-roce.pcap}
    tshark -i "$dev" -B 64 -f 'udp port 4791' -w "$ROCE_PCAP" -q 2>"$E2E_WORK/tshark.err" &
    ROCE_CAP_PID=$!
    local i
    for i in $(seq 1 150); do [[ -s $ROCE_PCAP ]] && return 0; sleep 0.2; done
    fail "tshark started capturing on $dev"
}

# roce_capture_stop: end the capture and leave it in GW_OUT, under its name, for the
# host part.
roce_capture_stop() {
    sleep 1
    kill -INT "$ROCE_CAP_PID" 2>/dev/null; wait "$ROCE_CAP_PID" 2>/dev/null
    grep -i "captured\|dropped" "$E2E_WORK/tshark.err"
    cp "$ROCE_PCAP" "$GW_OUT/${ROCE_PCAP##*/}" || fail "the capture was handed to the host"
    rm -f "$ROCE_PCAP"
}

# roce_decode PCAP: (host part) decode the capture once with chunk reassembly into
#   $E2E_WORK/frames.tsv   every frame: number, ip.src, BTH opcode, and for a frame that
#                          carries an RPC-over-RDMA header: version, msg_type, errcode,
#                          reads_count, writes_count, reply_count, rdma_length,
#                          reassembled.length (empty otherwise)
#   $E2E_WORK/bad.tsv      every malformed frame or one with an expert error: number,
#                          ip.src, msg_type, rdma_length, reassembled.length, protocols,
#                          expert message
# There is no Ethernet over InfiniBand here: without those two heuristics off, the
# InfiniBand dissector now and then takes an RDMA Write fragment for an Ethernet frame.
roce_decode() {
    local pcap=$1
    local T=(tshark -r "$pcap" -2 -d udp.port==4791,infiniband
             --disable-heuristic eth_over_ib --disable-heuristic mellanox_eoib)
    [[ -s $pcap ]] || { fail "a capture to decode ($pcap)"; return 1; }
    "${T[@]}" -T fields -E occurrence=f -e frame.number -e ip.src -e infiniband.bth.opcode \
        -e rpcordma.version -e rpcordma.msg_type -e rpcordma.errcode -e rpcordma.reads_count \
        -e rpcordma.writes_count -e rpcordma.reply_count -e rpcordma.rdma_length \
        -e rpcordma.reassembled.length >"$E2E_WORK/frames.tsv" 2>"$E2E_WORK/tshark-decode.err" ||
        { fail "tshark decoded $pcap"; cat "$E2E_WORK/tshark-decode.err"; return 1; }
    "${T[@]}" -Y '_ws.malformed || _ws.expert.severity >= "error"' -T fields -E occurrence=f \
        -e frame.number -e ip.src -e rpcordma.msg_type -e rpcordma.rdma_length \
        -e rpcordma.reassembled.length -e frame.protocols -e _ws.expert.message \
        >"$E2E_WORK/bad.tsv" 2>/dev/null
    echo "capture: $(wc -l <"$E2E_WORK/frames.tsv") frames, $(du -h "$pcap" | cut -f1)"
}

# roce_frames AWK-CONDITION: how many frames in frames.tsv meet the condition, over the
# fields named src op vers type err reads writes reply len rlen (vers is empty in a
# frame that carries no RPC-over-RDMA header). roce_msgs: the same, over messages only.
roce_frames() {
    awk -F'\t' "{ src=\$2; op=\$3; vers=\$4; type=\$5; err=\$6; reads=\$7; writes=\$8;
                  reply=\$9; len=\$10; rlen=\$11 }
                $1 { n++ } END { print n + 0 }" "$E2E_WORK/frames.tsv"
}
roce_msgs() { roce_frames "vers != \"\" && ($1)"; }

# roce_hdr_words PCAP: (host part) the first words of every RPC-over-RDMA header in the
# capture, read from the raw RoCEv2 payload rather than by tshark's dissector, which
# knows only Version One: one line per Send that starts a message (BTH opcode SEND_FIRST,
# SEND_ONLY, and SEND_ONLY with Immediate or Invalidate, whose 4-byte extension header
# comes first), "ip.src opcode xid vers credits proc" in decimal.
roce_hdr_words() {
    tshark -r "$1" -2 -T fields -e ip.src -e udp.payload 'udp.port == 4791' 2>/dev/null |
        /usr/bin/python3 -c '
import sys
EXT = {0x00: 0, 0x04: 0, 0x05: 4, 0x17: 4}  # RC opcodes that start a Send: extension bytes
for line in sys.stdin:
    src, _, hexb = line.rstrip("\n").partition("\t")
    b = bytes.fromhex(hexb.replace(":", ""))
    if len(b) < 12 or b[0] not in EXT:
        continue
    p = b[12 + EXT[b[0]]:len(b) - 4]  # after the BTH and its extension, before the ICRC
    if len(p) >= 16:
        print(src, b[0], *(int.from_bytes(p[i:i + 4], "big") for i in (0, 4, 8, 12)))
'
}
