# Forward mode, one guest: the kernel NFS server listens on RDMA only (192.0.2.1:20049);
# the gateway listens on TCP 192.0.2.2:2049 and relays to it; the kernel NFS client mounts
# the gateway over TCP. For NFSv3, 4.0, 4.1 and 4.2, with rsize/wsize 4 KiB and 1 MiB:
# 64 MiB O_DIRECT write and read with checksums, odd file sizes, a 5,000-entry directory,
# symlinks (one longer than the inline threshold), rename and setattr, POSIX locks, 8
# concurrent writers; on NFSv3 a POSIX ACL of 300 entries (NFSACL), on NFSv4 an ACL of
# 190 users (a SETATTR longer than the inline threshold: a Position-Zero long call).
# Then the gateway's counters must show the traffic (the server's Send With Invalidate
# among it: remote invalidation is offered by default), and SIGTERM must drain it cleanly.
#   E2E_VERSIONS, E2E_SIZES or E2E_RUNS ("3:1048576 4.2:4096") narrow the mounts,
#   E2E_BIG_MB sets the big file's MiB; E2E_WORKLOADS=core keeps the big file, odd sizes
#   and locks (forward_k612.sh sources this job so).
set -u
source "$GW_SRC/tests/e2e/lib/gw-e2e.sh"
gwvm-net
gwvm-nfsd /export rdma
modprobe nfsv3; modprobe nfsv4
check "the NFS server has no TCP listener" test -z "$(ss -Htln 'sport = :2049')"

cat >"$E2E_WORK/gw.json" <<JSON
{ "routes": [ { "name": "nfs", "mode": "forward",
                "listen": "tcp://192.0.2.2:2049", "upstream": "rdma://192.0.2.1:20049" } ],
  "stats": { "listen": "127.0.0.1:9464" } }
JSON
gw_start forward "$E2E_WORK/gw.json" || e2e_finish

MB=${E2E_BIG_MB:-64}
RUNS=$(e2e_runs); nruns=$(wc -w <<<"$RUNS")
WORKLOADS=${E2E_WORKLOADS:-all}
runs_rp=0
for run in $RUNS; do
    vers=${run%:*} size=${run#*:}
    mnt=/mnt/v$vers-$size; mkdir -p "$mnt"
    if [[ $vers == 3 ]]; then src=192.0.2.2:/export; else src=192.0.2.2:/; fi
    echo "--- NFSv$vers rsize=wsize=$size through the gateway ($(date +%T))"
    if ! mount -t nfs -o vers=$vers,proto=tcp,port=2049,rsize=$size,wsize=$size "$src" "$mnt"; then
        fail "mount NFSv$vers through the gateway"; continue
    fi
    check "NFSv$vers mount is TCP to the gateway" grep -q "$mnt nfs.*proto=tcp.*addr=192.0.2.2" /proc/mounts
    d=$mnt/t-$vers-$size; mkdir -p "$d"
    wl_bigfile "$d" "$MB"
    wl_oddsizes "$d"
    if [[ $WORKLOADS == all ]]; then
        wl_symlink "$d"
        wl_rename_setattr "$d"
    fi
    # NFSv3 locks here go to the guest's own lockd, not through the gateway (this route
    # has no side services: nfsv3_plain has those); E2E_V3_LOCKS=0 leaves them out.
    [[ $vers == 3 && ${E2E_V3_LOCKS:-1} == 0 ]] || wl_locks "$d"
    if [[ $WORKLOADS == all ]]; then
        [[ $vers == 3 && $size == 4096 ]] && wl_bigacl "$d" 300
        [[ $vers != 3 && $size == 4096 ]] && wl_nfs4acl "$d" 190
        if [[ $size == 1048576 ]]; then
            wl_bigdir "$d" 5000
            wl_concurrent "$d" 8 8
        fi
    fi
    # A client that reads NFSv4.2 with READ_PLUS (Linux 6.12's; 6.1's is built without
    # it) gets its data by Reply chunk: READ_PLUS is not DDP-eligible (docs/ulb-rules.md).
    rp=$(awk -v m="$mnt" '$1 == "device" { on = ($5 == m) } on && $1 == "READ_PLUS:" { print $2 }' /proc/self/mountstats)
    if ((${rp:-0} > 0)); then
        echo "NFSv$vers read with READ_PLUS ($rp calls)"; runs_rp=$((runs_rp + 1))
    fi
    rm -rf "$d"
    umount "$mnt"
done

# The counters saw what was sent: NFS READs were answered, with data in Write chunks.
reads=$(gw_jq "sum(p['calls'] for r in s['routes'] for p in r['totals']['procedures'] if p['procedure_name']=='READ')")
wbytes=$(gw_jq "s['routes'][0]['totals']['rdma_bytes']['write_chunk']")
rbytes=$(gw_jq "s['routes'][0]['totals']['rdma_bytes']['read_chunk']")
rcbytes=$(gw_jq "s['routes'][0]['totals']['rdma_bytes']['reply_chunk']")
check "stats: NFS READ calls counted ($reads)" test "${reads:-0}" -gt 0
check "stats: bytes moved by Write chunks ($wbytes) >= the data read back" test "${wbytes:-0}" -ge $((MB * (nruns - runs_rp) * 1048576))
if ((runs_rp > 0)); then
    check "stats: bytes moved by Reply chunks ($rcbytes) >= the data read back by READ_PLUS ($runs_rp mounts)" \
        test "${rcbytes:-0}" -ge $((MB * runs_rp * 1048576))
fi
check "stats: bytes moved by Read chunks ($rbytes) >= the data written" test "${rbytes:-0}" -ge $((MB * nruns * 1048576))
rinv=$(gw_jq "s['routes'][0]['totals']['remote_invalidations']")
check "stats: windows the server invalidated with its reply (Send With Invalidate: $rinv), of $reads READs" \
    test "${rinv:-0}" -gt 0
gw_check_quiet
gw_stop
grep -E "error|warning" "$GW_LOG" | head -20
e2e_finish
