# Sizes the route can carry, one guest. The kernel NFS server advertises 1 MiB READs and
# WRITEs (max_block_size) on TCP 2049 and RDMA 20049. Three routes in front of it: forward "small"
# (records of 260 KiB), forward "default" (1 MiB + 4 KiB) and reverse "rsmall" (260 KiB).
# Clients mount each with their defaults (no rsize/wsize) over NFSv3 and NFSv4.2: the
# gateway lowers what the server advertises (FSINFO, maxread/maxwrite, CREATE_SESSION) to
# what the route carries, so the client's sizes fit the route and 16 MiB go in and out
# intact (without it the first large WRITE on a small route is refused, the client
# reconnects and sends it again for ever). Then a raw client that ignores the server
# sends records larger than the route: each is answered GARBAGE_ARGS on a connection that
# stays, and the log has a line per second at most, not one per record.
set -u
source "$GW_SRC/tests/e2e/lib/gw-e2e.sh"
gwvm-net
NFSD_MAX_BLOCK=1048576 gwvm-nfsd /export tcp+rdma
modprobe nfsv3; modprobe nfsv4; modprobe rpcrdma
echo "kernel $(uname -r); nfsd max_block_size $(cat /proc/fs/nfsd/max_block_size)"

cat >"$E2E_WORK/gw.json" <<JSON
{ "routes": [
    { "name": "small", "mode": "forward", "max_record_size": 266240,
      "listen": "tcp://192.0.2.2:2051", "upstream": "rdma://192.0.2.1:20049" },
    { "name": "default", "mode": "forward",
      "listen": "tcp://192.0.2.2:2050", "upstream": "rdma://192.0.2.1:20049" },
    { "name": "rsmall", "mode": "reverse", "max_record_size": 266240,
      "listen": "rdma://192.0.2.2:20050", "upstream": "tcp://192.0.2.1:2049" } ],
  "stats": { "listen": "127.0.0.1:9464" } }
JSON
gw_start sizes "$E2E_WORK/gw.json" || e2e_finish

# copy_through ROUTE PROTO PORT VERS WANT: mount with the client's defaults, check the
# sizes it took, 16 MiB in and out with checksums. Soft mounts: a size the route cannot
# carry fails the copy in seconds instead of hanging the job.
src=$(e2e_source 16)
want=$(md5sum <"$src" | cut -d' ' -f1)
copy_through() {
    local route=$1 proto=$2 port=$3 vers=$4 expect=$5 mnt=/mnt/$1-$4 exp rs ws got
    mkdir -p "$mnt"
    if [[ $vers == 3 ]]; then exp=192.0.2.2:/export; else exp=192.0.2.2:/; fi
    echo "--- route $route: NFSv$vers over $proto with the client's defaults ($(date +%T))"
    if ! mount -t nfs -o vers=$vers,proto=$proto,port=$port,soft,timeo=100,retrans=2 "$exp" "$mnt"; then
        fail "route $route: mount NFSv$vers"; return
    fi
    rs=$(grep " $mnt " /proc/mounts | sed -n 's/.*rsize=\([0-9]*\).*/\1/p')
    ws=$(grep " $mnt " /proc/mounts | sed -n 's/.*wsize=\([0-9]*\).*/\1/p')
    check "route $route NFSv$vers: the client took rsize $rs, wsize $ws (at most $expect)" \
        test "${rs:-0}" -gt 0 -a "${rs:-0}" -le "$expect" -a "${ws:-0}" -gt 0 -a "${ws:-0}" -le "$expect"
    if timeout 300 dd if="$src" of="$mnt/f" bs=1M oflag=direct status=none; then
        got=$(timeout 300 dd if="$mnt/f" bs=1M iflag=direct status=none | md5sum | cut -d' ' -f1)
        check "route $route NFSv$vers: 16 MiB written and read back intact" test "$want" = "$got"
        got=$(md5sum </export/f | cut -d' ' -f1)
        check "route $route NFSv$vers: the server's file is the one written" test "$want" = "$got"
    else
        fail "route $route NFSv$vers: the 16 MiB write did not complete"
    fi
    rm -f "$mnt/f"
    umount -f "$mnt" || umount -l "$mnt"
}
for vers in 3 4.2; do
    copy_through small tcp 2051 $vers 262144
    copy_through default tcp 2050 $vers 1048576
    copy_through rsmall rdma 20050 $vers 262144
done

ev() { gw_jq "[r for r in s['routes'] if r['name']=='$1'][0]['totals']['events'].get('$2', 0)"; }
for route in small rsmall; do
    n=$(ev $route size_clamped)
    check "route $route: replies whose advertised sizes were lowered counted (size_clamped $n)" test "${n:-0}" -ge 2
done
check "the metric says so too" grep -q 'kind="size_clamped"} [1-9]' <(gw_metrics)
check "the first lowering of each forward route is logged once, with the key to raise" \
    test "$(grep -c 'route small: .*advertises more than the route carries.*max_record_size' "$GW_LOG")" -eq 1

# A client that ignores the server: 300 KiB records on the small route.
check "records larger than the route are answered GARBAGE_ARGS, the connection kept" \
    oversize_records.py 192.0.2.2 2051 307200 200
n=$(ev small record_too_large_answered)
check "those records counted (record_too_large_answered $n)" test "${n:-0}" -eq 200
lines=$(grep -c 'larger than the route carries' "$GW_LOG")
check "the log has at most a line a second for them, not one a record ($lines lines)" test "$lines" -le 10
gw_check_quiet
gw_stop
grep -E "error|warning" "$GW_LOG" | head -20
e2e_finish
