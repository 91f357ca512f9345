# Reverse mode with a misbehaving client, one guest. The kernel NFS client mounts through
# the gateway (NFSv3 over RDMA) and keeps working, checksummed before and after, while
# tests/e2e/progs/rdma_badclient sends on its own connection: a Version Two header
# (ERR_VERS 1..1), an unknown rdma_proc and an RDMA_NOMSG without chunks (ERR_CHUNK),
# RDMA_DONE (no answer, the connection stays), an NFS WRITE whose data length lies (RPC
# GARBAGE_ARGS), RDMA_MSGP (answered as RDMA_MSG), each answer checked byte for byte; a
# client that allows the gateway no RDMA Reads is refused. Then, on a second route whose
# upstream accepts calls and never answers, it sends one call more than its credits: the
# gateway closes that connection and counts it. The counters in /stats must show it all.
set -u
source "$GW_SRC/tests/e2e/lib/gw-e2e.sh"
gwvm-net
gwvm-nfsd /export tcp
modprobe nfsv3; modprobe rpcrdma
BAD=$GW_BUILD/tests/rdma_badclient

# An upstream that takes calls and answers none, so that calls stay outstanding.
/usr/bin/python3 - <<'PY' &
import socket, threading
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("192.0.2.1", 2050)); s.listen(8)
def sink(c):
    while c.recv(65536):
        pass
while True:
    c, _ = s.accept()
    threading.Thread(target=sink, args=(c,), daemon=True).start()
PY
hole=$!

cat >"$E2E_WORK/gw.json" <<JSON
{ "routes": [
    { "name": "nfs", "mode": "reverse",
      "listen": "rdma://192.0.2.2:20049", "upstream": "tcp://192.0.2.1:2049" },
    { "name": "silent", "mode": "reverse", "credits": 8,
      "listen": "rdma://192.0.2.2:20050", "upstream": "tcp://192.0.2.1:2050" } ],
  "stats": { "listen": "127.0.0.1:9464" } }
JSON
gw_start reverse_errors "$E2E_WORK/gw.json" || e2e_finish

mnt=/mnt/r3; mkdir -p "$mnt"
mount -t nfs -o vers=3,proto=rdma,port=20049 192.0.2.2:/export "$mnt" || fail "mount NFSv3 over RDMA"
src=$(e2e_source 8); want=$(md5sum <"$src" | cut -d' ' -f1)
dd if="$src" of="$mnt/before" bs=1M oflag=direct status=none
check "the kernel client's I/O works before" \
    test "$(dd if="$mnt/before" bs=1M iflag=direct status=none | md5sum | cut -d' ' -f1)" = "$want"

echo "--- the bad client: protocol errors on the NFS route"
out=$("$BAD" 192.0.2.2 20049 64 errors 2>&1); rc=$?
echo "$out"
check "rdma_badclient errors: every answer as the standard says (status $rc)" test "$rc" -eq 0

echo "--- the bad client: a client that allows the gateway no RDMA Reads"
out=$("$BAD" 192.0.2.2 20049 64 noreads 2>&1); rc=$?
echo "$out"
check "rdma_badclient noreads: refused (status $rc)" test "$rc" -eq 0

echo "--- the bad client: more calls than credits on the silent route"
out=$("$BAD" 192.0.2.2 20050 8 overrun 2>&1); rc=$?
echo "$out"
check "rdma_badclient overrun: disconnected (status $rc)" test "$rc" -eq 0

check "the kernel client's file is intact after" \
    test "$(dd if="$mnt/before" bs=1M iflag=direct status=none | md5sum | cut -d' ' -f1)" = "$want"
dd if="$src" of="$mnt/after" bs=1M oflag=direct status=none
check "the kernel client's new I/O works after" \
    test "$(dd if="$mnt/after" bs=1M iflag=direct status=none | md5sum | cut -d' ' -f1)" = "$want"

ev() { gw_jq "[r for r in s['routes'] if r['name']=='$1'][0]['totals']['events']['$2']"; }
check "stats: ERR_VERS sent ($(ev nfs err_vers_sent))" test "$(ev nfs err_vers_sent)" -eq 1
check "stats: ERR_CHUNK sent ($(ev nfs err_chunk_sent))" test "$(ev nfs err_chunk_sent)" -eq 2
check "stats: bad transport headers ($(ev nfs bad_transport_header))" test "$(ev nfs bad_transport_header)" -eq 2
check "stats: RDMA_DONE dropped ($(ev nfs rdma_done_dropped))" test "$(ev nfs rdma_done_dropped)" -eq 1
check "stats: GARBAGE_ARGS ($(ev nfs garbage_args))" test "$(ev nfs garbage_args)" -eq 1
check "stats: RPC error replies made by the gateway ($(ev nfs rpc_error_reply))" test "$(ev nfs rpc_error_reply)" -eq 1
check "stats: no overrun on the NFS route ($(ev nfs credit_overrun))" test "$(ev nfs credit_overrun)" -eq 0
check "stats: the overrun counted on the silent route ($(ev silent credit_overrun))" test "$(ev silent credit_overrun)" -eq 1
live=$(gw_jq "[r for r in s['routes'] if r['name']=='silent'][0]['live_sessions']")
check "stats: the overrunning client's session is gone ($live live)" test "$live" -eq 0
live=$(gw_jq "[r for r in s['routes'] if r['name']=='nfs'][0]['live_sessions']")
check "stats: the kernel client's session lives on ($live live)" test "$live" -eq 1

umount "$mnt"
kill "$hole" 2>/dev/null; wait "$hole" 2>/dev/null
gw_stop
grep -E "error|warning" "$GW_LOG" | head -20
e2e_finish
