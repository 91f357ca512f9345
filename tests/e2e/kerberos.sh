# gwvm: kernel 6.12
# Kerberos end to end through forward and reverse routes (issue 30), one guest, Linux 6.12
# (Debian 12's 6.1 refuses krb5p even without the gateway). An MIT KDC in the guest serves a
# throwaway realm GW.TEST; the kernel NFS server (RDMA only, 192.0.2.1, gssproxy for
# RPCSEC_GSS) exports /export with sec=krb5:krb5i:krb5p; the gateway (a dedicated
# forward route, no upstream_connections) listens on 192.0.2.2 = gw.gw.test; the
# kernel client (rpc.gssd) mounts gw.gw.test with sec=krb5, krb5i and krb5p, NFSv4.2
# and NFSv3, and the Kerberos user alice (kinit, uid 4242) writes and reads back a
# file with checksums: the file on the server's disk must be alice's, /proc/mounts must
# show the flavour asked for.
# What an operator must know, shown here: the client asks for a ticket for the name it
# mounts (nfs@gw.gw.test), so the SERVER's keytab holds nfs/gw.gw.test@GW.TEST (the
# gateway holds no key and sees only opaque GSS tokens); the client's keytab holds its
# own machine credential (nfs/client.gw.test@GW.TEST).
# NFSv3's MOUNT goes straight to the server's mountd (mounthost=srv.gw.test, its TCP
# port found with rpcinfo; MOUNT itself is AUTH_UNIX); NFS goes through the gateway.
# Then the same on routes with upstream_connections 2 (NFSv4.2 krb5p and NFSv3 krb5i, two
# clients copying at once), and in reverse mode: the client mounts the gateway over RDMA,
# the server listens on TCP, a dedicated and a shared reverse route; rpc.gssd's context
# connections (TCP to the mounted address and port) reach the server by NAT on the
# gateway's host, as docs/operations.md tells operators.
# A combination that fails through the gateway is tried once more at the end, straight
# to the server over TCP (rpc.gssd cannot make a context over RDMA), so the log says
# whether the gateway is to blame.
#   E2E_KRB_MB sets the file's MiB (4).
set -u
source "$GW_SRC/tests/e2e/lib/gw-e2e.sh"
echo "kernel: $(uname -r)"
if [[ $(uname -r) != 6.12.* ]]; then
    echo "FAIL: the guest runs $(uname -r), not Linux 6.12"; exit 1
fi
MB=${E2E_KRB_MB:-4}
K=$E2E_WORK/krb; mkdir -p "$K"
AUID=4242
gwvm-net # first: it brings up lo, where the KDC listens

# ---- names, realm, KDC (the guest's /etc is a tmpfs overlay: the host's is untouched) ----
hostname client.gw.test
cat >>/etc/hosts <<'HOSTS'
192.0.2.2 gw.gw.test gw
192.0.2.1 srv.gw.test srv
127.0.1.1 client.gw.test client
HOSTS
cat >/etc/krb5.conf <<'CONF'
[libdefaults]
    default_realm = GW.TEST
    dns_lookup_kdc = false
    dns_lookup_realm = false
    rdns = false
[realms]
    GW.TEST = {
        kdc = 127.0.0.1
        admin_server = 127.0.0.1
    }
[domain_realm]
    .gw.test = GW.TEST
    gw.test = GW.TEST
CONF
printf '[General]\nDomain = gw.test\n' >/etc/idmapd.conf
cat >"$K/kdc.conf" <<CONF
[kdcdefaults]
    kdc_ports = 88
    kdc_tcp_ports = 88
[realms]
    GW.TEST = {
        database_name = $K/principal
        key_stash_file = $K/stash
        acl_file = $K/kadm5.acl
    }
[logging]
    kdc = FILE:$GW_OUT/krb5kdc.log
CONF
export KRB5_KDC_PROFILE=$K/kdc.conf
: >"$K/kadm5.acl"
useradd -u $AUID -M -d /tmp -s /bin/sh alice
useradd -u $((AUID + 1)) -M -d /tmp -s /bin/sh bob # a local user with no ticket
kdb5_util create -s -r GW.TEST -P "throwaway-$$" >/dev/null 2>&1
krb5kdc -P "$K/kdc.pid"
kadm() { kadmin.local -r GW.TEST -q "$*" >>"$K/kadmin.log" 2>&1; }
for p in nfs/gw.gw.test nfs/srv.gw.test nfs/client.gw.test alice; do kadm addprinc -randkey "$p@GW.TEST"; done
# The server's keytab: the name the clients mount (the gateway's) and, for the
# comparison without the gateway, its own. The client's: its machine credential.
kadm ktadd -k /etc/krb5.keytab nfs/gw.gw.test@GW.TEST nfs/srv.gw.test@GW.TEST
kadm ktadd -k "$K/client.keytab" nfs/client.gw.test@GW.TEST
kadm ktadd -k "$K/alice.keytab" alice@GW.TEST
chown alice "$K/alice.keytab"
klist -k /etc/krb5.keytab | sed 's/^/  server keytab: /'
check "the KDC is up and gives alice a ticket" \
    setpriv --reuid=$AUID --regid=$AUID --clear-groups kinit -k -t "$K/alice.keytab" alice@GW.TEST
setpriv --reuid=$AUID --regid=$AUID --clear-groups klist | sed 's/^/  alice: /'

# ---- the server: gssproxy for nfsd, the kernel NFS server on RDMA only ----
modprobe sunrpc; modprobe auth_rpcgss; modprobe rpcsec_gss_krb5; modprobe nfsd
# gssproxy serves nfsd's RPCSEC_GSS upcalls (it writes 1 to use-gss-proxy) with the
# keytab /etc/krb5.keytab (Debian's /etc/gssproxy/24-nfs-server.conf, the default):
# the interface current distributions use. The legacy rpc.svcgssd (run instead, by
# hand, 2026-12-07) passes the same six mounts on 6.12.
gssproxy -i -d >"$GW_OUT/gssproxy.log" 2>&1 &
for _ in $(seq 1 50); do [[ $(cat /proc/net/rpc/use-gss-proxy 2>/dev/null) == 1 ]] && break; sleep 0.2; done
check "gssproxy serves the kernel NFS server (use-gss-proxy 1)" \
    test "$(cat /proc/net/rpc/use-gss-proxy 2>/dev/null)" = 1
# 1 MiB I/O (the default is 512 KiB): a krb5p READ's reply, encrypted, cannot be sized
# from its call, and at 1 MiB it is larger than the 1 MiB Reply chunk the gateway offered
# before it added the GSS wrapping (issue 30 item 2: ERR_CHUNK, a retry under a new XID
# the GSS checksum refused, for ever).
NFSD_MAX_BLOCK=1048576 gwvm-nfsd /export rdma
check "the NFS server offers 1 MiB reads and writes" test "$(cat /proc/fs/nfsd/max_block_size)" = 1048576
modprobe nfsv3; modprobe nfsv4
check "the NFS server has no TCP listener" test -z "$(ss -Htln 'sport = :2049')"
rpc.idmapd -p /var/lib/nfs/rpc_pipefs
nfsd_wait_grace 192.0.2.1 || fail "the NFS server's grace period ended"
mkdir -p /export/alice; chown $AUID:$AUID /export/alice
exportfs -o rw,no_root_squash,insecure,fsid=0,no_subtree_check,sec=krb5:krb5i:krb5p "*:/export"
exportfs -f
exportfs -v | sed 's/^/  /'

# ---- the client: rpc.gssd with the client's keytab, on gwvm-nfsd's rpc_pipefs ----
rpc.gssd -f -vvv -p /var/lib/nfs/rpc_pipefs -k "$K/client.keytab" >"$GW_OUT/gssd.log" 2>&1 &

# two_routes FILE MODE NAME LISTEN SHARED_NAME SHARED_LISTEN UPSTREAM: a dedicated route and
# one with upstream_connections 2, to the same upstream.
two_routes() {
    cat >"$1" <<JSON
{ "routes": [ { "name": "$3", "mode": "$2", "listen": "$4", "upstream": "$7" },
              { "name": "$5", "mode": "$2", "upstream_connections": 2,
                "listen": "$6", "upstream": "$7" } ],
  "stats": { "listen": "127.0.0.1:9464" } }
JSON
}
two_routes "$E2E_WORK/gw.json" forward nfs tcp://192.0.2.2:2049 shared tcp://192.0.2.2:2050 \
    rdma://192.0.2.1:20049
gw_start forward "$E2E_WORK/gw.json" || e2e_finish

src=$(e2e_source "$MB")
chmod 644 "$src"
mountd_port=$(rpcinfo -p 127.0.0.1 | awk '$2 == 3 && $3 == "tcp" && $5 == "mountd" { print $4; exit }')
echo "server's mountd: TCP port $mountd_port"

# mount_opts VERS SEC HOST PROTO PORT
mount_opts() {
    local o="vers=$1,sec=$2,proto=$4,port=$5"
    [[ $1 == 3 ]] && o+=",nolock,mountproto=tcp,mounthost=srv.gw.test,mountport=$mountd_port"
    echo "$o"
}
# as_alice COMMAND...: run as alice (uid 4242), whose credential cache rpc.gssd finds.
as_alice() { setpriv --reuid=$AUID --regid=$AUID --clear-groups "$@"; }

# krb_run VERS SEC HOST PROTO PORT LABEL: mount, alice's file in and out, owner, flavour.
krb_run() {
    local vers=$1 sec=$2 host=$3 proto=$4 port=$5 label=$6 mnt d rc owner path before=$E2E_FAILS
    mnt=/mnt/$label-$vers-$sec; mkdir -p "$mnt"
    path=/alice; [[ $vers == 3 ]] && path=/export/alice
    echo "--- NFSv$vers sec=$sec $label ($(date +%T))"
    if ! timeout 60 mount -t nfs -o "$(mount_opts "$vers" "$sec" "$host" "$proto" "$port")" "$host:$path" "$mnt"; then
        fail "NFSv$vers sec=$sec: mount $host:$path $label"; return 1
    fi
    check "NFSv$vers sec=$sec: /proc/mounts shows sec=$sec $label" \
        grep -qE "^$host:$path $mnt nfs4? .*,sec=${sec}[, ]" /proc/mounts
    check "NFSv$vers sec=$sec: the client reads 1 MiB at a time $label" \
        grep -qE "^$host:$path $mnt nfs4? .*,rsize=1048576," /proc/mounts
    d=$mnt/t-$label-$vers-$sec
    # The data test, gw-e2e.sh's, run as alice: its ok/FAIL lines print from there.
    rc=0
    as_alice bash -c 'source "$GW_SRC/tests/e2e/lib/gw-e2e.sh"; mkdir -p "$1" && wl_bigfile "$1" "$2"; exit $E2E_FAILS' \
        _ "$d" "$MB" || rc=$?
    ((rc == 0)) || E2E_FAILS=$((E2E_FAILS + 1))
    as_alice cp "$src" "$d/kept" 2>/dev/null
    owner=$(stat -c %u "/export/alice/t-$label-$vers-$sec/kept" 2>/dev/null)
    check "NFSv$vers sec=$sec: alice's file on the server's disk is owned by uid ${owner:-none} (want $AUID)" \
        test "${owner:-none}" = $AUID
    check "NFSv$vers sec=$sec: the server's copy matches" cmp -s "$src" "/export/alice/t-$label-$vers-$sec/kept"
    # The same uid by AUTH_SYS would own the file as well: a local user with no
    # Kerberos ticket (bob) must be refused, so the identity came from alice's ticket.
    check "NFSv$vers sec=$sec: a user without a ticket is refused" \
        setpriv --reuid=$((AUID + 1)) --regid=$((AUID + 1)) --clear-groups bash -c "! ls '$d' >/dev/null 2>&1"
    rm -rf "/export/alice/t-$label-$vers-$sec"
    umount "$mnt" || fail "NFSv$vers sec=$sec: umount $label"
    ((E2E_FAILS == before))
}

failed=()
for vers in 4.2 3; do
    for sec in krb5 krb5i krb5p; do
        krb_run "$vers" "$sec" gw.gw.test tcp 2049 gw || failed+=("$vers:$sec")
    done
done

# The KDC's record: the tickets asked for are for the gateway's name.
for who in alice@GW.TEST nfs/client.gw.test@GW.TEST; do
    check "the KDC issued $who a ticket for nfs/gw.gw.test@GW.TEST (the gateway's name)" \
        grep -q "ISSUE: .*, $who for nfs/gw.gw.test@GW.TEST" "$GW_OUT/krb5kdc.log"
done
calls=$(gw_jq "sum(p['calls'] for r in s['routes'] for p in r['totals']['procedures'])")
toolarge=$(gw_jq "s['routes'][0]['totals'].get('record_too_large_answered', 0)")
echo "gateway: $calls calls relayed, $toolarge records too large"
gw_check_quiet
# After the check of what the dedicated route left: a shared route's connections stay
# up, with their receives posted, once its clients are gone.
# A shared route (upstream_connections 2): every call goes on a connection many clients
# share, and a GSS call keeps its own XID there (wirexid_map_own_xid()); before, every
# flavour's mount was refused ("access denied by server").
# Two clients at once: the NFSv4.2 and the NFSv3 mount (two TCP connections, two sessions
# of the route) copy at the same time, their GSS calls interleaved on the shared connections.
two_at_once() { # PROTO PORT LABEL
    local run pids=() runs=(4.2:krb5p 3:krb5i) i
    for run in "${runs[@]}"; do
        krb_run "${run%:*}" "${run#*:}" gw.gw.test "$1" "$2" "$3" & pids+=($!)
    done
    for i in "${!pids[@]}"; do
        wait "${pids[$i]}" || { E2E_FAILS=$((E2E_FAILS + 1)); failed+=("${runs[$i]}:$3"); }
    done
}
two_at_once tcp 2050 shared
shared_calls=$(gw_jq "sum(p['calls'] for r in s['routes'] if r['name'] == 'shared' for p in r['totals']['procedures'])")
check "the shared route relayed the GSS mounts' calls ($shared_calls)" test "${shared_calls:-0}" -gt 0
gw_stop
grep -E "error|warning" "$GW_LOG" | head -20

# ---- reverse mode: the client mounts the gateway over RDMA, the server listens on TCP ----
# The server's TCP listener (a wildcard bind of port 2049) can only come once the forward
# gateway has let go of 192.0.2.2:2049.
echo "tcp 2049" >/proc/fs/nfsd/portlist
# rpc.gssd makes a context by a user-space RPC over TCP to port 2049 of the address the
# client mounts, also for an RDMA mount of another port (Debian 12's nfs-utils on Linux
# 6.12: the upcall's info says "protocol: rdma", "port: 20051", and the context's
# connection goes to 2049, as this job's counters showed): here the gateway's address,
# where no NFS server listens on a gateway host. A context is the server's, whatever
# connection made it, so the gateway's host sends that TCP on to the server by NAT
# (docs/operations.md, "Kerberos (RPCSEC_GSS)"). Here the client is local (the output
# hook), and the server's own TCP listener, a wildcard one, would take the connection
# even without it: the rule's counter shows that the contexts' connections took it.
# The gateway's RDMA ports are 20051 and 20052: the server's own RDMA listener (for the
# forward routes above) holds port 20049 on every address of this guest.
nft -f - <<'NFT'
table ip gw_krb {
    chain out { type nat hook output priority -100; policy accept;
        ip daddr 192.0.2.2 tcp dport 2049 counter dnat to 192.0.2.1:2049
    }
}
NFT
check "the gateway host sends TCP for its port 2049 on to the server (nft)" nft list table ip gw_krb
two_routes "$E2E_WORK/gw-rev.json" reverse rev rdma://192.0.2.2:20051 \
    revshared rdma://192.0.2.2:20052 tcp://192.0.2.1:2049
modprobe rpcrdma
gw_start reverse "$E2E_WORK/gw-rev.json" || e2e_finish
for vers in 4.2 3; do
    for sec in krb5 krb5i krb5p; do
        krb_run "$vers" "$sec" gw.gw.test rdma 20051 rev || failed+=("$vers:$sec:rev")
    done
done
two_at_once rdma 20052 revshared
rev_calls=$(gw_jq "sum(p['calls'] for r in s['routes'] if r['name'] == 'rev' for p in r['totals']['procedures'])")
revs_calls=$(gw_jq "sum(p['calls'] for r in s['routes'] if r['name'] == 'revshared' for p in r['totals']['procedures'])")
check "the reverse routes relayed the GSS mounts' calls (dedicated $rev_calls, shared $revs_calls)" \
    test "${rev_calls:-0}" -gt 0 -a "${revs_calls:-0}" -gt 0
natted=$(nft list table ip gw_krb | sed -n 's/.*counter packets \([0-9]*\).*/\1/p')
check "rpc.gssd's contexts went to the server through the NAT ($natted packets)" test "${natted:-0}" -gt 0
gw_stop
grep -E "error|warning" "$GW_LOG" | head -20
nft delete table ip gw_krb

# Without the gateway: each combination that failed through it, straight to the server.
# Over TCP: rpc.gssd makes its context over TCP to the server, even for an RDMA
# mount, so a krb5 mount of a server that listens on RDMA only fails whatever the
# gateway does ("Connection refused" in gssd.log).
if ((${#failed[@]})); then
    for run in "${failed[@]}"; do
        run=${run%:rev*}
        vers=${run%:*} sec=${run#*:} saved=$E2E_FAILS
        if krb_run "$vers" "$sec" srv.gw.test tcp 2049 direct; then
            echo "  NFSv$vers sec=$sec works straight to the server over TCP: the gateway is at fault"
        else
            echo "  NFSv$vers sec=$sec fails straight to the server over TCP too"
        fi
        E2E_FAILS=$saved
    done
fi
grep -ciE "error|fail" "$GW_OUT/gssd.log" | sed 's/^/gssd log lines with error or fail: /'
kill "$(cat "$K/kdc.pid")" 2>/dev/null
e2e_finish
