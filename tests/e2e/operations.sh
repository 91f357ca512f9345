# What an operator touches, on a forward route in front of the kernel NFS server:
#  - the upstream RDMA connection comes from a reserved port (source_port "reserved");
#  - counters match the traffic: NFS READ calls equal the client's own count in
#    /proc/self/mountstats, and the bytes moved by Write chunks equal the bytes read;
#  - rpcrdma-gw stat --once (--json) shows the route's and the client's calls/s, the
#    Write-chunk MB/s of a read and the upstream latency, from the stats endpoint;
#  - /metrics parses with the Prometheus client library's parser and agrees with /stats,
#    and promtool check metrics accepts it, per-session histograms included;
#  - an idle session is closed after idle_timeout_s and the client reconnects unharmed;
#  - SIGHUP applies a new client ACL (a new client is refused and counted, the mount
#    keeps working), refuses a broken file, a change that needs a restart and a rule
#    file that does not parse (which --check names with its line and column too), reads
#    a site's own rule file in, and the gateway keeps running throughout;
#  - SIGTERM during a copy drains and exits 0; after a restart the client retransmits
#    and the file on the server is exactly the source: no acknowledged write is lost;
#    a live `rpcrdma-gw stat` rides through the restart and tells the new process.
set -u
source "$GW_SRC/tests/e2e/lib/gw-e2e.sh"
gwvm-net
gwvm-nfsd /export rdma
modprobe nfsv3

cfg=$E2E_WORK/gw.json
write_cfg() { # ALLOWED_CLIENTS_JSON [LISTEN] [MORE_ROUTE_KEYS]
    cat >"$cfg" <<JSON
{ "routes": [ { "name": "nfs", "mode": "forward",
                "listen": "${2:-tcp://192.0.2.2:2049}", "upstream": "rdma://192.0.2.1:20049",
                "idle_timeout_s": 4, "allowed_clients": $1 ${3:-} } ],
  "logging": { "level": "info" },
  "drain_timeout_s": 20,
  "stats": { "listen": "127.0.0.1:9464" } }
JSON
}
write_cfg '["192.0.2.0/24", "127.0.0.1"]'
check "--check accepts the configuration" "$GW_BIN" -c "$cfg" --check
gw_start ops "$cfg" || e2e_finish

m=/mnt/ops; mkdir -p $m
mount -t nfs -o vers=3,proto=tcp,port=2049,rsize=1048576,wsize=1048576 192.0.2.2:/export $m ||
    { fail "mount"; e2e_finish; }

# Reserved source port on the RDMA side.
port=$(gw_jq "s['routes'][0]['sessions'][0]['upstream'].rsplit(':',1)[1]")
check "the upstream RDMA connection uses a reserved port ($port)" test "${port:-9999}" -lt 1024

# Counters against the client's own accounting.
dd if=/dev/urandom of=$m/data bs=1M count=4 oflag=direct status=none
echo 3 >/proc/sys/vm/drop_caches
wbefore=$(gw_jq "s['routes'][0]['totals']['rdma_bytes']['write_chunk']")
dd if=$m/data of=/dev/null bs=1M iflag=direct status=none
wafter=$(gw_jq "s['routes'][0]['totals']['rdma_bytes']['write_chunk']")
check "bytes moved by Write chunks equal the 4 MiB read ($((wafter - wbefore)))" \
    test $((wafter - wbefore)) -eq 4194304
client_reads=$(awk '$1 == "READ:" {print $2}' /proc/self/mountstats | head -1)
gw_reads=$(gw_jq "sum(p['calls'] for p in s['routes'][0]['totals']['procedures'] if p['program']==100003 and p['version']==3 and p['procedure_name']=='READ')")
check "NFS READ calls: gateway $gw_reads, client's mountstats $client_reads" test "$gw_reads" = "$client_reads"
client_writes=$(awk '$1 == "WRITE:" {print $2}' /proc/self/mountstats | head -1)
gw_writes=$(gw_jq "sum(p['calls'] for p in s['routes'][0]['totals']['procedures'] if p['program']==100003 and p['version']==3 and p['procedure_name']=='WRITE')")
check "NFS WRITE calls: gateway $gw_writes, client's mountstats $client_writes" test "$gw_writes" = "$client_writes"

# Prometheus text through a real parser, agreeing with /stats.
gw_read_replies=$(gw_jq "sum(p['replies'] for p in s['routes'][0]['totals']['procedures'] if p['program']==100003 and p['version']==3 and p['procedure_name']=='READ')")
gw_read_timed=$(gw_jq "sum(p['upstream_latency']['count'] for p in s['routes'][0]['totals']['procedures'] if p['program']==100003 and p['version']==3 and p['procedure_name']=='READ')")
check "/stats: every NFS READ reply ($gw_read_replies) was timed by procedure ($gw_read_timed)" \
    test "$gw_read_timed" = "$gw_read_replies" -a "$gw_read_replies" -gt 0
gw_metrics >"$E2E_WORK/metrics.txt"
/usr/bin/python3 - "$E2E_WORK/metrics.txt" "$gw_reads" "$gw_read_replies" <<'PY' && ok "/metrics parses (prometheus_client) and agrees with /stats: READ's calls and upstream latency by procedure, the process series" || fail "/metrics"
import sys
from prometheus_client.parser import text_string_to_metric_families
text = open(sys.argv[1]).read()
fams = {f.name: f for f in text_string_to_metric_families(text)}
reads = [s.value for s in fams["rpcrdma_gw_procedure_calls"].samples
         if s.labels.get("procedure") == "READ" and s.labels.get("version") == "3"]
assert reads and int(reads[0]) == int(sys.argv[2]), (reads, sys.argv[2])
assert "rpcrdma_gw_gateway_latency_seconds" in fams
timed = [s.value for s in fams["rpcrdma_gw_procedure_upstream_latency_seconds"].samples
         if s.name.endswith("_count") and s.labels.get("procedure") == "READ"
         and s.labels.get("version") == "3"]
assert timed and int(timed[0]) == int(sys.argv[3]), (timed, sys.argv[3])
import time
start = fams["process_start_time_seconds"].samples[0].value
assert time.time() - 3600 < start <= time.time() + 60, start  # started by this job
assert fams["process_resident_memory_bytes"].samples[0].value > 0
assert fams["process_cpu_seconds"].samples[0].value > 0
PY

# rpcrdma-gw stat: one report of a second of reading, from the stats endpoint alone.
rm -f "$E2E_WORK/stop-reading"
( while [ ! -e "$E2E_WORK/stop-reading" ]; do
      dd if=$m/data of=/dev/null bs=1M iflag=direct status=none
  done ) &
reader=$!
"$GW_BIN" stat --once --json 127.0.0.1:9464 >"$E2E_WORK/stat.json"
"$GW_BIN" stat --once --sessions 5 127.0.0.1:9464 >"$E2E_WORK/stat.txt"
touch "$E2E_WORK/stop-reading"; wait $reader
cp "$E2E_WORK/stat.json" "$E2E_WORK/stat.txt" "$GW_OUT/" 2>/dev/null
/usr/bin/python3 - "$E2E_WORK/stat.json" <<'PY' && ok "stat --once --json: calls/s, Write-chunk MB/s, the client's session, latencies" || fail "stat --json"
import json, sys
rep = json.load(open(sys.argv[1]))
r = rep["routes"][0]
assert r["name"] == "nfs" and r["calls_per_s"] > 0, r
assert r["rdma_mb_per_s"]["write_chunk"] > 0.5, r["rdma_mb_per_s"]
assert r["latency_us"]["upstream"]["count"] > 0 and r["latency_us"]["upstream"]["p50"], r["latency_us"]
s = [x for x in r["sessions"] if x["client"].startswith("192.0.2.2:")]
assert s and s[0]["calls_per_s"] > 0, r["sessions"]
assert 0.5 < rep["interval_s"] < 5, rep["interval_s"]
PY
check "stat --once prints the route and the client's session" \
    grep -q "^  192.0.2.2:" "$E2E_WORK/stat.txt"
check "rpcrdma-gw stat exits 1 when nothing answers" \
    bash -c "! '$GW_BIN' stat --once --timeout 500 127.0.0.1:1"

# promtool's lint of a real scrape, with the per-session series and their histograms.
if command -v promtool >/dev/null; then
    gw_metrics sessions=1 >"$E2E_WORK/metrics-sessions.txt"
    check "promtool check metrics accepts /metrics" bash -c "curl -sf http://127.0.0.1:9464/metrics | promtool check metrics"
    check "promtool check metrics accepts /metrics?sessions=1" bash -c "promtool check metrics <'$E2E_WORK/metrics-sessions.txt'"
    check "/metrics?sessions=1 has the session's upstream latency histogram" \
        grep -q '^rpcrdma_gw_session_upstream_latency_seconds_count{route="nfs",session="[0-9]*"} [1-9]' "$E2E_WORK/metrics-sessions.txt"
else
    fail "promtool is not installed (scripts/install-deps installs prometheus)"
fi

# Idle timeout: the session goes; the client's next call reconnects.
sleep 7
live=$(gw_jq "s['routes'][0]['live_sessions']")
check "an idle session was closed after idle_timeout_s (live sessions: $live)" test "$live" -eq 0
check "the client reconnects after the idle close" cmp -s <(dd if=$m/data bs=1M iflag=direct status=none) <(cat /export/data)

# SIGHUP: a new ACL refuses a new client; the running mount is not touched.
refused0=$(gw_jq "s['routes'][0]['totals']['events']['refused_client']")
write_cfg '["127.0.0.1"]'
kill -HUP "$GW_PID"; sleep 1
check "SIGHUP: reloaded" grep -q "configuration reloaded" "$GW_LOG"
if (exec 3<>/dev/tcp/192.0.2.2/2049 && printf '\x80\x00\x00\x04abcd' >&3 && timeout 3 cat <&3 >/dev/null); then :; fi
refused1=$(gw_jq "s['routes'][0]['totals']['events']['refused_client']")
check "SIGHUP: a client outside the new ACL is refused and counted ($refused0 -> $refused1)" \
    test "$refused1" -gt "$refused0"
echo "broken {" >"$cfg"
kill -HUP "$GW_PID"; sleep 1
check "SIGHUP with a broken file: error logged, old configuration kept" \
    grep -q "has errors; keeping the running configuration" "$GW_LOG"
write_cfg '["192.0.2.0/24"]' tcp://192.0.2.2:2050
kill -HUP "$GW_PID"; sleep 1
check "SIGHUP with a new listen address: refused, restart needed" \
    grep -q "need a restart" "$GW_LOG"
# A rule file that does not parse: --check names it, with its line and column, and a
# reload is refused the same way; a good one of a site's own program is read in.
echo '{ "ulb-rules": 1, "programs": [ oops ] }' >"$E2E_WORK/bad-rules.json"
write_cfg '["192.0.2.0/24", "127.0.0.1"]' "" ", \"ulb_rules\": [\"$E2E_WORK/bad-rules.json\"]"
out=$("$GW_BIN" -c "$cfg" --check 2>&1); rc=$?
check "--check refuses a rule file that does not parse (status $rc: $out)" \
    test "$rc" -ne 0 -a -n "$(grep -F "ulb_rules: $E2E_WORK/bad-rules.json:1:" <<<"$out")"
kill -HUP "$GW_PID"; sleep 1
check "SIGHUP with a broken rule file: refused with its position, old rules kept" \
    grep -q "bad-rules.json:1:.*keeping the running configuration" "$GW_LOG"
write_cfg '["192.0.2.0/24", "127.0.0.1"]' "" ", \"ulb_rules\": [\"$GW_SRC/tests/data/conf/rules/nfs.json\"]"
kill -HUP "$GW_PID"; sleep 1
check "SIGHUP with a site's own rule file: read in (15 bindings)" \
    grep -q "nfs: 15 ULB bindings for new sessions" "$GW_LOG"
write_cfg '["192.0.2.0/24", "127.0.0.1"]'
kill -HUP "$GW_PID"; sleep 1
check "the gateway is still serving after the bad reloads" \
    cmp -s <(dd if=$m/data bs=1M iflag=direct status=none) <(cat /export/data)

# SIGTERM during a copy: drain, exit 0, restart; nothing acknowledged is lost.
# A live `stat --json` watches throughout: it must say the endpoint went away, keep
# asking, tell the new process by its start time and report again from it.
pid_before=$(gw_jq "s['process']['pid']")
check "/stats names the gateway process (pid $pid_before)" test "$pid_before" = "$GW_PID"
"$GW_BIN" stat --json -i 0.5 --timeout 400 127.0.0.1:9464 >"$E2E_WORK/stat-live.jsonl" 2>"$E2E_WORK/stat-live.err" &
statpid=$!
src=$(e2e_source 32)
dd if="$src" of=$m/copy bs=1M oflag=direct status=none &
copier=$!
sleep 3
kill -TERM "$GW_PID"
rc=0; wait "$GW_PID" || rc=$?
check "SIGTERM during a copy: the gateway drained and exited 0 (status $rc)" test "$rc" -eq 0
check "the drain was logged" grep -q "draining" "$GW_LOG"
mv "$GW_LOG" "$GW_OUT/ops-before-restart.log"
sleep 1.2 # more than stat's interval: the endpoint is away for at least one fetch
gw_start ops "$cfg"
rc=0; wait "$copier" || rc=$?
check "the copy finished after the restart (dd status $rc)" test "$rc" -eq 0
sleep 1.5
check "stat's live view is still running after the restart" kill -0 "$statpid"
kill "$statpid" 2>/dev/null; wait "$statpid" 2>/dev/null
cp "$E2E_WORK/stat-live.jsonl" "$E2E_WORK/stat-live.err" "$GW_OUT/" 2>/dev/null
/usr/bin/python3 - "$E2E_WORK/stat-live.jsonl" "$pid_before" "$GW_PID" <<'PY' && ok "stat --json rode through the restart: unreachable, restarted (new pid), reports from the new process" || fail "stat live view across the restart"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
before, after = int(sys.argv[2]), int(sys.argv[3])
events = [l.get("event") for l in lines]
print("stat lines:", [l.get("event") or "report pid %s" % l.get("process", {}).get("pid") for l in lines])
assert "unreachable" in events and "restarted" in events, events
i = events.index("restarted")
assert events.index("unreachable") < i
assert any(l.get("process", {}).get("pid") == before for l in lines[:i] if "event" not in l)
later = [l for l in lines[i + 1:] if "event" not in l]
assert later and all(l["process"]["pid"] == after for l in later), later
assert all(l["process"]["cpu_percent"] >= 0 for l in later)
PY
check "no acknowledged write was lost: the server's file equals the source" \
    cmp -s "$src" /export/copy
umount $m
gw_stop
e2e_finish
