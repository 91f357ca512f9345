# RPC-over-RDMA Version Two in reverse mode (draft-cel-nfsv4-rpcrdma-version-two-01), one
# guest, routes with max_rpcrdma_version 2. The kernel NFS/RDMA client (Version One only)
# mounts NFSv3 through the gateway and moves 8 MiB, checksummed: it keeps working, and
# /stats shows its session speaking Version One. tests/e2e/progs/rdma_v2client then
# speaks Version Two on its own connection, each answer checked byte for byte: calls in
# RDMA2_MSG and in a Position-Zero chunk (RDMA2_NOMSG) are answered in RDMA2_MSG with
# direction REPLY, a Version One call on the same connection in Version One, a Version
# Three header gets ERR_VERS 1..2, an unknown optional type RDMA2_ERR_INVAL_OPTION with
# its XID, bad directions, a direction that contradicts the RPC message (inline or in a
# Position-Zero chunk), an optional
# message whose length runs past the message and an RDMA2_MSG without payload get
# RDMA2_ERR_BAD_HEADER, and a responder's optional message, a Version Two "reply" that
# is none and an RDMA2_ERROR from the requester are dropped, the connection serving on.
# While it is connected, /stats and /metrics show its session speaking Version Two. On a
# second route the upstream (a test server) calls the Version Two client back twice: the
# backward calls are RDMA2_MSG with direction CALL, the client's replies (direction
# REPLY) reach the server intact. The chain (the kernel NFS client on TCP -> a forward
# route -> RDMA -> a reverse route -> the kernel NFS server on TCP, both routes at
# max_rpcrdma_version 2) negotiates Version Two, seen in both gateways' sessions, and
# moves NFSv3 and NFSv4.1 data intact; under NFSv4.1 a delegation recall crosses it
# backwards (a second client in its own namespace writes the file straight to the
# server; the forward route counts the backward calls and replies). A forward route with Version Two enabled in front
# of the kernel NFS/RDMA server (Version One only) falls back on its first call
# (counted rpcrdma_version_fallback), its session speaks Version One, and NFSv3 data
# comes through intact; the route remembers it: a second client's new connection opens
# in Version One (counted rpcrdma_version_remembered) with no second ERR_VERS or
# fallback, and its NULL call is answered. The counters in /stats must show it all.
set -u
source "$GW_SRC/tests/e2e/lib/gw-e2e.sh"
gwvm-net
gwvm-nfsd /export tcp+rdma # (RDMA 20049 on every address: the gateway's ports are 2006x)
modprobe nfsv3; modprobe nfsv4; modprobe rpcrdma
V2C=$GW_BUILD/tests/rdma_v2client

# An upstream that answers NFS NULL calls and, after the first, calls its client back
# twice, one at a time (the client's initial backward grant is 1); every reply must be
# the client's, byte for byte.
/usr/bin/python3 - >"$E2E_WORK/callbacker.out" 2>&1 <<'PY' &
import socket, struct, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("192.0.2.1", 2051)); s.listen(1); s.settimeout(300)
c, _ = s.accept(); c.settimeout(20)
def exact(n):
    b = b""
    while len(b) < n:
        k = c.recv(n - len(b))
        if not k: raise EOFError
        b += k
    return b
def record():
    m, = struct.unpack(">I", exact(4))
    return exact(m & 0x7fffffff)
def send(body):
    c.sendall(struct.pack(">I", 0x80000000 | len(body)) + body)
fails = 0
def check(ok, what):
    global fails
    print(("ok: " if ok else "FAIL: ") + what, flush=True); fails += not ok
try:
    call = record()
    xid, mtype = struct.unpack(">II", call[:8])
    check(mtype == 0, "the client's NULL call arrived (xid %#x)" % xid)
    send(struct.pack(">6I", xid, 1, 0, 0, 0, 0))
    for x in (0xB101, 0xB102):
        send(struct.pack(">10I", x, 0, 2, 0x40000000, 1, 0, 0, 0, 0, 0))
        check(record() == struct.pack(">6I", x, 1, 0, 0, 0, 0),
              "callback %#x answered by the client" % x)
except Exception as e:
    check(False, "the callbacks: %r" % e)
sys.exit(1 if fails else 0)
PY
callbacker=$!

cat >"$E2E_WORK/gw.json" <<JSON
{ "defaults": { "max_rpcrdma_version": 2 },
  "routes": [
    { "name": "v2", "mode": "reverse",
      "listen": "rdma://192.0.2.2:20061", "upstream": "tcp://192.0.2.1:2049" },
    { "name": "v2cb", "mode": "reverse", "source_port": "any",
      "listen": "rdma://192.0.2.2:20062", "upstream": "tcp://192.0.2.1:2051" },
    { "name": "edge", "mode": "forward",
      "listen": "tcp://192.0.2.1:3049", "upstream": "rdma://192.0.2.2:20063" },
    { "name": "core", "mode": "reverse",
      "listen": "rdma://192.0.2.2:20063", "upstream": "tcp://192.0.2.1:2049" },
    { "name": "fb", "mode": "forward",
      "listen": "tcp://192.0.2.2:3050", "upstream": "rdma://192.0.2.1:20049" } ],
  "stats": { "listen": "127.0.0.1:9464" } }
JSON
gw_start rpcrdma_v2 "$E2E_WORK/gw.json" || e2e_finish

# session_versions ROUTE: the rpcrdma_version of each live session on ROUTE, sorted.
session_versions() {
    gw_jq "' '.join(sorted(str(x['rpcrdma_version']) for x in [r for r in s['routes'] if r['name']=='$1'][0]['sessions']))"
}

echo "--- the kernel NFS/RDMA client (Version One) through a route with Version Two enabled"
mnt=/mnt/v2; mkdir -p "$mnt"
mount -t nfs -o vers=3,proto=rdma,port=20061 192.0.2.2:/export "$mnt" || fail "mount NFSv3 over RDMA"
src=$(e2e_source 8); want=$(md5sum <"$src" | cut -d' ' -f1)
dd if="$src" of="$mnt/v2file" bs=1M oflag=direct status=none
check "the kernel client writes and reads 8 MiB intact" \
    test "$(dd if="$mnt/v2file" bs=1M iflag=direct status=none | md5sum | cut -d' ' -f1)" = "$want"
check "stats: the kernel client's session speaks Version One ($(session_versions v2))" \
    test "$(session_versions v2)" = "1"

echo "--- a Version Two client on its own connection"
"$V2C" 192.0.2.2 20061 64 responder 6 >"$E2E_WORK/v2client.out" 2>&1 &
v2c=$!
for _ in $(seq 1 100); do
    grep -q "^lingering" "$E2E_WORK/v2client.out" && break
    sleep 0.3
done
check "stats: while it is connected, its session speaks Version Two ($(session_versions v2))" \
    test "$(session_versions v2)" = "1 2"
check "metrics: rpcrdma_gw_session_rpcrdma_version shows 1 and 2" \
    test "$(gw_metrics sessions=1 | awk '/^rpcrdma_gw_session_rpcrdma_version\{.*route="v2"/ { print $2 }' | sort | xargs)" = "1 2"
rc=0; wait "$v2c" || rc=$?
cat "$E2E_WORK/v2client.out"
check "rdma_v2client responder: every answer as the draft says (status $rc)" test "$rc" -eq 0

echo "--- callbacks to a Version Two client"
rc=0; "$V2C" 192.0.2.2 20062 64 backward >"$E2E_WORK/v2back.out" 2>&1 || rc=$?
cat "$E2E_WORK/v2back.out"
check "rdma_v2client backward: backward calls in Version Two, answered (status $rc)" test "$rc" -eq 0
rc=0; wait "$callbacker" || rc=$?
cat "$E2E_WORK/callbacker.out"
check "the test server got the client's replies to its callbacks (status $rc)" test "$rc" -eq 0

check "the kernel client's file is intact after" \
    test "$(dd if="$mnt/v2file" bs=1M iflag=direct status=none | md5sum | cut -d' ' -f1)" = "$want"
umount "$mnt"

# No delegation is granted in the server's grace period: wait for its end first,
# while nothing else is mounted.
nfsd_wait_grace 192.0.2.1 || fail "the NFS server's grace period did not end"
for vers in 3 4.1; do
    echo "--- the chain in Version Two: NFSv$vers on TCP -> forward -> RDMA -> reverse -> TCP"
    cm=/mnt/chain-$vers; mkdir -p "$cm"
    if [[ $vers == 3 ]]; then sp=192.0.2.1:/export; else sp=192.0.2.1:/; fi
    if ! mount -t nfs -o vers=$vers,proto=tcp,port=3049,rsize=1048576,wsize=1048576 "$sp" "$cm"; then
        fail "mount NFSv$vers through the chain"; continue
    fi
    mkdir -p "$cm/v2chain"
    wl_bigfile "$cm/v2chain" 8
    wl_oddsizes "$cm/v2chain"
    if [[ $vers == 4.1 ]]; then
        # A delegation recall (CB_RECALL) crosses the chain backwards in Version Two.
        client2_netns
        wl_delegation_recall 4.1 "$cm" edge
    fi
    check "stats: the forward session speaks Version Two ($(session_versions edge))" \
        test "$(session_versions edge)" = "2"
    check "stats: the reverse session speaks Version Two ($(session_versions core))" \
        test "$(session_versions core)" = "2"
    rm -rf "$cm/v2chain"
    umount "$cm"
done

ev() { gw_jq "[r for r in s['routes'] if r['name']=='$1'][0]['totals']['events']['$2']"; }
tot() { gw_jq "[r for r in s['routes'] if r['name']=='$1'][0]['totals']['$2']"; }
# nfs_null HOST PORT: one NFSv3 NULL call on a new TCP connection, answered SUCCESS.
nfs_null() {
    /usr/bin/python3 - "$1" "$2" <<'PY'
import socket, struct, sys
c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=20)
body = struct.pack(">10I", 0x5EED0001, 0, 2, 100003, 3, 0, 0, 0, 0, 0)
c.sendall(struct.pack(">I", 0x80000000 | len(body)) + body)
b = b""
while len(b) < 28:
    k = c.recv(28 - len(b))
    if not k: break
    b += k
sys.exit(0 if b == struct.pack(">7I", 0x80000018, 0x5EED0001, 1, 0, 0, 0, 0) else 1)
PY
}

echo "--- a forward route with Version Two enabled in front of the kernel NFS/RDMA server"
fm=/mnt/fallback; mkdir -p "$fm"
if mount -t nfs -o vers=3,proto=tcp,port=3050,rsize=1048576,wsize=1048576 192.0.2.2:/export "$fm"; then
    mkdir -p "$fm/fb"
    wl_bigfile "$fm/fb" 8
    check "stats: the forward session fell back to Version One ($(session_versions fb))" \
        test "$(session_versions fb)" = "1"
    rm -rf "$fm/fb"
    umount "$fm"
    # The route remembers the fallback: another client's connection opens in Version One.
    fb1=$(ev fb rpcrdma_version_fallback); ev1=$(ev fb err_vers_received)
    check "a second client, on its own connection, gets its NULL call answered" \
        nfs_null 192.0.2.2 3050
    check "stats: its connection opened in Version One, remembered ($(ev fb rpcrdma_version_remembered))" \
        test "$(ev fb rpcrdma_version_remembered)" -ge 1
    check "stats: ... without another fallback or ERR_VERS ($fb1 -> $(ev fb rpcrdma_version_fallback), $ev1 -> $(ev fb err_vers_received))" \
        test "$(ev fb rpcrdma_version_fallback)" -eq "$fb1" -a "$(ev fb err_vers_received)" -eq "$ev1"
else
    fail "mount NFSv3 through the forward route to the kernel NFS/RDMA server"
fi

check "stats: ERR_VERS sent once ($(ev v2 err_vers_sent))" test "$(ev v2 err_vers_sent)" -eq 1
check "stats: RDMA2_ERR_INVAL_OPTION sent once ($(ev v2 err_inval_option_sent))" \
    test "$(ev v2 err_inval_option_sent)" -eq 1
check "stats: RDMA2_ERR_BAD_HEADER sent five times ($(ev v2 err_chunk_sent))" \
    test "$(ev v2 err_chunk_sent)" -eq 5
check "stats: eight bad transport headers ($(ev v2 bad_transport_header))" \
    test "$(ev v2 bad_transport_header)" -eq 8
check "stats: two backward calls and replies ($(tot v2cb backward_calls), $(tot v2cb backward_replies))" \
    test "$(tot v2cb backward_calls)" -eq 2 -a "$(tot v2cb backward_replies)" -eq 2
check "stats: the fallback counted on the route to the kernel server ($(ev fb rpcrdma_version_fallback))" \
    test "$(ev fb rpcrdma_version_fallback)" -ge 1
check "stats: ... and ERR_VERS received as often ($(ev fb err_vers_received))" \
    test "$(ev fb err_vers_received)" -eq "$(ev fb rpcrdma_version_fallback)"
check "stats: no fallback in the chain ($(ev edge rpcrdma_version_fallback))" \
    test "$(ev edge rpcrdma_version_fallback)" -eq 0
check "stats: no bad transport header in the chain ($(ev edge bad_transport_header), $(ev core bad_transport_header))" \
    test "$(ev edge bad_transport_header)" -eq 0 -a "$(ev core bad_transport_header)" -eq 0
check "gateway: the fallback logged" grep -q "Version 1 from now on" "$GW_LOG"
gw_check_quiet
gw_stop
grep -E "error|warning" "$GW_LOG" | head -30
e2e_finish
