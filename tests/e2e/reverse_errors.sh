# Reverse mode with a misbehaving client, one guest. The kernel NFS client mounts through
# the gateway (NFSv3 over RDMA) and keeps working, checksummed before and after, while
# tests/e2e/progs/rdma_badclient sends on its own connection: a Version Two header
# (ERR_VERS 1..1), an unknown rdma_proc and an RDMA_NOMSG without chunks (ERR_CHUNK),
# RDMA_DONE (no answer, the connection stays), an NFS WRITE whose data length lies (RPC
# GARBAGE_ARGS), RDMA_MSGP (answered as RDMA_MSG), each answer checked byte for byte; a
# client that allows the gateway no RDMA Reads is refused, and so is a client outside a
# route's allowed_clients (counted), and a client that stays silent on a route with
# idle_timeout_s is disconnected. Then, on a second route whose
# upstream accepts calls and never answers, it sends one call more than its credits: the
# gateway closes that connection and counts it. On a third route, the upstream is a test
# server that calls the client back (RFC 8167): a callback too large for the client's
# inline threshold must come back as SYSTEM_ERR, and five others must reach the client
# as backward calls within its backward credits (rdma_badclient backward) and their
# replies come back to the server intact. On a route with connect_timeout_s 2, 200
# connections are answered by the gateway and never established (rdma_badclient
# halfopen): the gateway must end each within the timeout (counted connect_timeout), an
# ordinary client (on another route) must connect and be answered meanwhile and after,
# the kernel client's reads go on, and no session is left. An RDMA Write With Immediate from a client, and a
# call sent by Send With Invalidate, close that client's connection unanswered (the
# first counted protocol_violation; on Soft-RoCE the second fails in the transport
# itself, as the gateway exposes no rkey a client could name).
# A client that keeps exactly its credits outstanding, sending the next call the moment
# an answer comes (rdma_badclient pipelined, thousands of NFS NULL calls, with 64 credits
# and with 1), is never taken for an overrun: every call is answered with its XID and
# the connection stays up. A test upstream that records each of its connections sees how
# the gateway ends them: a FIN when the client leaves normally, a reset when it overran
# its credits or posted a Write With Immediate. On a route with call_timeout_s 2 it never
# answers one call (rdma_badclient timeout): the gateway sends the same XID again on a
# new upstream connection about 2 s later, and after the second timeout closes the
# client's connection (about 4 s after the call), both upstream connections reset and
# call_timeout counted twice. On a route with max_session_memory at its 2 MiB minimum, 16
# calls sent at once that each offer a 768 KiB Reply chunk (rdma_badclient offer) reach
# the upstream two at a time, are all answered, and the wait is counted
# (session_memory_limit). The counters in /stats must show it all.
set -u
source "$GW_SRC/tests/e2e/lib/gw-e2e.sh"
gwvm-net
gwvm-nfsd /export tcp
modprobe nfsv3; modprobe rpcrdma
BAD=$GW_BUILD/tests/rdma_badclient

# bad_client PORT CREDITS "MODE [ARG]" WHAT: run rdma_badclient against the gateway, show
# what it checked, and pass when all its checks held.
bad_client() {
    local out rc=0 mode
    read -ra mode <<<"$3"
    out=$("$BAD" 192.0.2.2 "$1" "$2" "${mode[@]}" 2>&1) || rc=$?
    echo "$out"
    check "rdma_badclient $3: $4 (status $rc)" test "$rc" -eq 0
}

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

# An upstream that calls its client back, as an NFSv4.1 server does on the back channel:
# a CALL record too large for any inline Send, then two callbacks (the gateway may send
# the second only once the first is answered: the client's initial backward grant is 1),
# then three at once (the client's reply grants 4). Every reply must be the client's, byte
# for byte; the large one must be answered SYSTEM_ERR by the gateway.
/usr/bin/python3 - >"$E2E_WORK/callbacker.out" 2>&1 <<'PY' &
import socket, struct, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("192.0.2.1", 2051)); s.listen(1); s.settimeout(300)  # the client comes after the other steps
c, _ = s.accept(); c.settimeout(20)
def call(xid, pad=0):
    body = struct.pack(">10I", xid, 0, 2, 0x40000000, 1, 0, 0, 0, 0, 0) + bytes(pad)
    c.sendall(struct.pack(">I", 0x80000000 | len(body)) + body)
def exact(n):
    b = b""
    while len(b) < n:
        k = c.recv(n - len(b))
        if not k: raise EOF
        b += k
    return b
def record():
    m, = struct.unpack(">I", exact(4))
    return exact(m & 0x7fffffff)
fails = 0
def check(ok, what):
    global fails
    print(("ok: " if ok else "FAIL: ") + what, flush=True); fails += not ok
def reply_is(rec, xid, stat):
    return rec == struct.pack(">6I", xid, 1, 0, 0, 0, stat)
try:
    call(0xB001, 6000)
    check(reply_is(record(), 0xB001, 5), "a 6 KiB callback is answered SYSTEM_ERR by the gateway")
    call(0xB002); call(0xB003)
    got = sorted(record() for _ in range(2))
    check(got == sorted(struct.pack(">6I", x, 1, 0, 0, 0, 0) for x in (0xB002, 0xB003)),
          "callbacks 0xb002, 0xb003 answered by the client")
    for x in (0xB004, 0xB005, 0xB006): call(x)
    got = sorted(record() for _ in range(3))
    check(got == sorted(struct.pack(">6I", x, 1, 0, 0, 0, 0) for x in (0xB004, 0xB005, 0xB006)),
          "callbacks 0xb004..0xb006 answered by the client")
except Exception as e:
    check(False, "the callbacks: %r" % e)
sys.exit(1 if fails else 0)
PY
callbacker=$!

# An upstream that writes down what each of its connections carried and how it ended:
# "T N open", "T N call XID", "T N end eof|reset|..." (T in seconds, N the connection's
# number from 1). It answers NFS NULL calls SUCCESS, except the XIDs 0x2000..0x2fff
# (rdma_badclient overrun's) and 0x7000..0x7fff (timeout's), which it never answers,
# and 0x40000000..0x4fffffff (offer's), which it answers 0.3 s later ("T N answer XID").
rec_log=$E2E_WORK/recorder.log
/usr/bin/python3 - "$rec_log" >"$E2E_WORK/recorder.out" 2>&1 <<'PY' &
import socket, struct, sys, threading, time
log = open(sys.argv[1], "w")
lock = threading.Lock()
def note(n, what):
    with lock:
        log.write("%.3f %d %s\n" % (time.monotonic(), n, what)); log.flush()
def exact(c, n):
    b = b""
    while len(b) < n:
        k = c.recv(n - len(b))
        if not k: raise EOFError
        b += k
    return b
send_lock = threading.Lock()
def answer_later(c, n, xid):
    try:
        note(n, "answer %#x" % xid)
        with send_lock:
            c.sendall(struct.pack(">7I", 0x80000018, xid, 1, 0, 0, 0, 0))
    except OSError:
        pass
def serve(c, n):
    try:
        while True:
            m, = struct.unpack(">I", exact(c, 4))
            body = exact(c, m & 0x7fffffff)
            xid, mtype = struct.unpack(">II", body[:8])
            if mtype != 0:
                continue
            note(n, "call %#x" % xid)
            if 0x2000 <= xid <= 0x2fff or 0x7000 <= xid <= 0x7fff:
                continue
            if 0x40000000 <= xid <= 0x4fffffff:
                threading.Timer(0.3, answer_later, args=(c, n, xid)).start()
                continue
            with send_lock:
                c.sendall(struct.pack(">7I", 0x80000018, xid, 1, 0, 0, 0, 0))
    except EOFError:
        note(n, "end eof")
    except ConnectionResetError:
        note(n, "end reset")
    except Exception as e:
        note(n, "end %s" % type(e).__name__)
    c.close()
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("192.0.2.1", 2052)); s.listen(8)
n = 0
while True:
    c, _ = s.accept(); n += 1
    note(n, "open")
    threading.Thread(target=serve, args=(c, n), daemon=True).start()
PY
recorder=$!

cat >"$E2E_WORK/gw.json" <<JSON
{ "routes": [
    { "name": "nfs", "mode": "reverse",
      "listen": "rdma://192.0.2.2:20049", "upstream": "tcp://192.0.2.1:2049" },
    { "name": "silent", "mode": "reverse", "credits": 8,
      "listen": "rdma://192.0.2.2:20050", "upstream": "tcp://192.0.2.1:2050" },
    { "name": "callbacks", "mode": "reverse", "source_port": "any",
      "listen": "rdma://192.0.2.2:20051", "upstream": "tcp://192.0.2.1:2051" },
    { "name": "acl", "mode": "reverse", "allowed_clients": ["198.51.100.0/24"],
      "listen": "rdma://192.0.2.2:20052", "upstream": "tcp://192.0.2.1:2049" },
    { "name": "idle", "mode": "reverse", "idle_timeout_s": 2,
      "listen": "rdma://192.0.2.2:20053", "upstream": "tcp://192.0.2.1:2049" },
    { "name": "half", "mode": "reverse", "credits": 8, "connect_timeout_s": 2,
      "max_sessions_per_client": 400,
      "listen": "rdma://192.0.2.2:20054", "upstream": "tcp://192.0.2.1:2049" },
    { "name": "rules", "mode": "reverse",
      "listen": "rdma://192.0.2.2:20055", "upstream": "tcp://192.0.2.1:2049" },
    { "name": "pipe", "mode": "reverse",
      "listen": "rdma://192.0.2.2:20056", "upstream": "tcp://192.0.2.1:2049" },
    { "name": "pipe1", "mode": "reverse", "credits": 1,
      "listen": "rdma://192.0.2.2:20059", "upstream": "tcp://192.0.2.1:2049" },
    { "name": "rec", "mode": "reverse", "credits": 8,
      "listen": "rdma://192.0.2.2:20057", "upstream": "tcp://192.0.2.1:2052" },
    { "name": "slow", "mode": "reverse", "call_timeout_s": 2,
      "listen": "rdma://192.0.2.2:20058", "upstream": "tcp://192.0.2.1:2052" },
    { "name": "mem", "mode": "reverse", "credits": 16, "max_session_memory": 2097152,
      "listen": "rdma://192.0.2.2:20060", "upstream": "tcp://192.0.2.1:2052" } ],
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
bad_client 20049 64 errors "every answer as the standard says"

echo "--- the bad client: a client that allows the gateway no RDMA Reads"
bad_client 20049 64 noreads "refused"

echo "--- a client outside allowed_clients"
bad_client 20052 64 refused "not in allowed_clients"

echo "--- a client that stays silent on a route with idle_timeout_s"
bad_client 20053 64 idle "disconnected after the idle timeout"

echo "--- the bad client: more calls than credits on the silent route"
bad_client 20050 8 overrun "disconnected"

echo "--- a client that keeps every credit in use, on routes to the NFS server"
# Every answer frees a credit as it is posted, so the first burst and each call after an
# answer find the grant exactly full: a credit leaked, counted one too many, granted
# beyond what is admitted, or given back only when the answer's Send completes (with 64
# credits the next call comes before that completion within the first answers) ends the
# connection here. (A call that finds all 2 x credits slots held waits for one; that
# takes as many Sends uncompleted as credits, which Soft-RoCE does not show here:
# tests/unit/test_reverse_plan.c models it.)
bad_client 20056 64 "pipelined 3000" "never taken for an overrun, every call answered"
bad_client 20059 1 "pipelined 1000" "never taken for an overrun, every call answered"

# rec_conns: how many connections the recording upstream has had.
rec_conns() { awk '$3 == "open"' "$rec_log" | wc -l; }
# rec_ends FROM: once every connection after the FROMth has ended (20 s at most), how
# each ended, "N:eof N:reset ...", in order.
rec_ends() {
    local opened ended
    for _ in $(seq 1 100); do
        opened=$(awk -v f="$1" '$3 == "open" && $2 > f' "$rec_log" | wc -l)
        ended=$(awk -v f="$1" '$3 == "end" && $2 > f' "$rec_log" | wc -l)
        ((opened > 0 && opened == ended)) && break
        sleep 0.2
    done
    awk -v f="$1" '$3 == "end" && $2 > f { print $2 ":" $4 }' "$rec_log" | sort -n | xargs
}
# rec_carried N XID: the Nth upstream connection carried the call XID.
rec_carried() { awk -v n="$1" -v x="$2" '$2 == n && $3 == "call" && $4 == x' "$rec_log" | grep -q .; }

echo "--- how the upstream connection ends: a normal close for a client that leaves"
n0=$(rec_conns)
bad_client 20057 8 "pipelined 20" "calls answered, then the client disconnects"
ends=$(rec_ends "$n0")
check "a client that leaves: its upstream connection ended with a FIN ($ends)" \
    test "$ends" = "$((n0 + 1)):eof"

echo "--- a reset for a client that breaks the rules"
n0=$(rec_conns)
bad_client 20057 8 "overrun warm" "disconnected"
ends=$(rec_ends "$n0")
check "a client that overran its credits: its upstream connection was reset ($ends)" \
    test "$ends" = "$((n0 + 1)):reset"
# (The calls beyond the NULL call never reach it: the reset drops them unsent.)
check "    (that connection carried the client's first call)" rec_carried $((n0 + 1)) 0x1f01
n0=$(rec_conns)
bad_client 20057 8 "writeimm warm" "closed at the Write With Immediate"
ends=$(rec_ends "$n0")
check "a client that posted a Write With Immediate: its upstream connection was reset ($ends)" \
    test "$ends" = "$((n0 + 1)):reset"
check "    (that connection carried the client's first call)" rec_carried $((n0 + 1)) 0x1f01

echo "--- a call the upstream never answers, on a route with call_timeout_s 2"
n0=$(rec_conns)
bad_client 20058 64 "timeout 2" "the connection closed after two call timeouts"
ends=$(rec_ends "$n0")
# Each upstream connection that carried it, and when: "N T" lines.
seen=$(awk -v f="$n0" '$2 > f && $3 == "call" && $4 == "0x7001" { print $2, $1 }' "$rec_log")
echo "$seen" | sed 's/^/    xid 0x7001 on upstream connection /'
check "the unanswered call went again on a new upstream connection, once ($ends)" \
    test "$(echo "$seen" | awk '{ print $1 }' | xargs)" = "$((n0 + 1)) $((n0 + 2))"
gap=$(echo "$seen" | awk 'NR == 1 { t = $2 } NR == 2 { printf "%.1f", $2 - t }')
check "    after one call timeout: ${gap:-?} s (1.8..6 allowed)" \
    awk -v g="${gap:--1}" 'BEGIN { exit !(g >= 1.8 && g <= 6) }'
check "both upstream connections were reset: the server stopped answering ($ends)" \
    test "$ends" = "$((n0 + 1)):reset $((n0 + 2)):reset"

echo "--- the bad client: callbacks from the upstream (RFC 8167 backward calls)"
bad_client 20051 64 backward "backward calls within the grant, answered"
cbrc=0; wait "$callbacker" || cbrc=$?
cat "$E2E_WORK/callbacker.out"
check "the upstream's callbacks: SYSTEM_ERR for the large one, the client's replies for the rest (status $cbrc)" \
    test "$cbrc" -eq 0

echo "--- max_session_memory: calls whose offers hold more than the session may"
# Each NULL call offers a 768 KiB Reply chunk: with the inline threshold, two such
# replies fit the route's 2 MiB and a third does not, so of the 16 calls sent at once
# the upstream must see two at a time (all 16 without the limit), and every one answered.
bad_client 20060 16 "offer 16" "every call answered, the connection kept"
most=$(awk '$4 ~ /^0x4/ && length($4) == 10 { if ($3 == "call") { n++; if (n > m) m = n }
                                       else if ($3 == "answer") n-- } END { print m + 0 }' "$rec_log")
calls=$(awk '$3 == "call" && $4 ~ /^0x4/ && length($4) == 10' "$rec_log" | wc -l)
check "the upstream saw the 16 calls ($calls), at most two at a time ($most)" \
    test "$calls" -eq 16 -a "$most" -eq 2

echo "--- 200 connections that never finish, on a route with connect_timeout_s 2"
( while [[ ! -e $E2E_WORK/stop-io ]]; do
      dd if="$mnt/before" bs=1M iflag=direct status=none | md5sum | cut -d' ' -f1
  done ) >"$E2E_WORK/io.txt" &
io=$!
t0=$(date +%s)
# The ordinary client goes to the "rules" route: on "half", its own upstream connect
# would have the same 2 s limit, which the teardown of 200 connections in one event loop
# can outlast on an emulated machine (about 30 ms each).
out=$("$BAD" 192.0.2.2 20054 64 halfopen 200 20055 2>&1); rc=$?
echo "$out"
check "rdma_badclient halfopen: half-open connections ended; ordinary clients served meanwhile and after (status $rc)" \
    test "$rc" -eq 0
echo "    ($(( $(date +%s) - t0 )) s)"
touch "$E2E_WORK/stop-io"; wait "$io"
check "the kernel client's reads meanwhile were intact ($(wc -l <"$E2E_WORK/io.txt") reads)" \
    test -s "$E2E_WORK/io.txt" -a -z "$(grep -v -x "$want" "$E2E_WORK/io.txt")"

echo "--- RDMA Write With Immediate and Send With Invalidate from a client"
bad_client 20055 64 writeimm "closed at the Write With Immediate"
bad_client 20055 64 sendinv "closed at the Send With Invalidate"

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
check "stats: no overrun at full credit ($(ev pipe credit_overrun), $(ev pipe1 credit_overrun))" \
    test "$(ev pipe credit_overrun)" -eq 0 -a "$(ev pipe1 credit_overrun)" -eq 0
check "stats: the overrun counted on the recorded route ($(ev rec credit_overrun))" \
    test "$(ev rec credit_overrun)" -eq 1
check "stats: two call timeouts ($(ev slow call_timeout)), none elsewhere ($(ev rec call_timeout), $(ev pipe call_timeout))" \
    test "$(ev slow call_timeout)" -eq 2 -a "$(ev rec call_timeout)" -eq 0 -a "$(ev pipe call_timeout)" -eq 0
check "stats: the Write With Immediate on the recorded route ($(ev rec protocol_violation))" \
    test "$(ev rec protocol_violation)" -eq 1
tot() { gw_jq "[r for r in s['routes'] if r['name']=='$1'][0]['totals']['$2']"; }
check "stats: backward calls ($(tot callbacks backward_calls)) and replies ($(tot callbacks backward_replies))" \
    test "$(tot callbacks backward_calls)" -eq 5 -a "$(tot callbacks backward_replies)" -eq 5
check "stats: the refused client counted on the acl route ($(ev acl refused_client))" \
    test "$(ev acl refused_client)" -eq 1 -a "$(ev nfs refused_client)" -eq 0
live=$(gw_jq "[r for r in s['routes'] if r['name']=='idle'][0]['live_sessions']")
check "stats: the idle client's session is gone ($live live)" test "$live" -eq 0
check "the gateway logged the idle close" grep -q "idle: session .* idle for" "$GW_LOG"
check "stats: the undeliverable callback ($(ev callbacks backward_undeliverable))" \
    test "$(ev callbacks backward_undeliverable)" -eq 1
live=$(gw_jq "[r for r in s['routes'] if r['name']=='silent'][0]['live_sessions']")
check "stats: the overrunning client's session is gone ($live live)" test "$live" -eq 0
live=$(gw_jq "[r for r in s['routes'] if r['name']=='nfs'][0]['live_sessions']")
check "stats: the kernel client's session lives on ($live live)" test "$live" -eq 1
check "stats: the half-open connections timed out ($(ev half connect_timeout))" \
    test "$(ev half connect_timeout)" -eq 200
check "stats: the Write With Immediate was a protocol violation ($(ev rules protocol_violation))" \
    test "$(ev rules protocol_violation)" -ge 1
check "stats: the memory limit counted on its route ($(ev mem session_memory_limit)), not elsewhere ($(ev pipe session_memory_limit))" \
    test "$(ev mem session_memory_limit)" -ge 1 -a "$(ev pipe session_memory_limit)" -eq 0
for r in half rules pipe pipe1 rec slow mem; do
    live=$(gw_jq "[r for r in s['routes'] if r['name']=='$r'][0]['live_sessions']")
    n=$(gw_jq "len([r for r in s['routes'] if r['name']=='$r'][0]['sessions'])")
    check "stats: no session left on $r ($live live, $n listed)" test "$live" -eq 0 -a "$n" -eq 0
done

umount "$mnt"
kill "$hole" "$recorder" 2>/dev/null; wait "$hole" "$recorder" 2>/dev/null
gw_check_quiet
gw_stop
grep -E "error|warning" "$GW_LOG" | head -20
e2e_finish
