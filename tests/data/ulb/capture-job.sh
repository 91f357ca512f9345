#!/usr/bin/env bash
# Guest job (run by tests/data/ulb/recapture in tests/vm/gwvm): the kernel NFS
# client talks to the kernel NFS server over TCP, NFSv3 (with MOUNT, NLM, NSM,
# NFSACL), NFSv4.0, 4.1 and 4.2, while dumpcap records every TCP segment on
# lo and veth0 to /share/ulb.pcapng. A second client in network namespace
# "c2" (its own address, host name and NFSv4 client identifier) opens the
# files the first client holds delegations on, so that the server recalls
# them and the first client sends DELEGRETURN.
set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
SRV=192.0.2.1
OUT=/share

ip link set lo up
ip netns add c2
ip link add veth0 type veth peer name veth1 netns c2
ip addr add $SRV/24 dev veth0
ip link set veth0 up
ip -n c2 link set lo up
ip -n c2 addr add 192.0.2.2/24 dev veth1
ip -n c2 link set veth1 up

# Server: like tests/vm/guest/gwvm-nfsd, but with the shortest lease and grace
# times, so that v4 clients renew during the run and no OPEN waits for grace.
modprobe nfsd
mkdir -p /export /var/lib/nfs/rpc_pipefs /var/lib/nfs/v4recovery
mount -t tmpfs -o mode=0777 tmpfs /export
mount -t nfsd nfsd /proc/fs/nfsd
mount -t rpc_pipefs sunrpc /var/lib/nfs/rpc_pipefs
echo 10 >/proc/fs/nfsd/nfsv4leasetime
echo 10 >/proc/fs/nfsd/nfsv4gracetime
rpcbind -w
rpc.statd --no-notify
exportfs -o rw,no_root_squash,insecure,fsid=0,no_subtree_check,acl "*:/export"
rpc.mountd
rpc.nfsd 4
echo Y >/proc/fs/nfsd/v4_end_grace 2>/dev/null || true
modprobe nfsv3
modprobe nfsv4

dumpcap -q -i lo -i veth0 -f tcp -s 262144 -w $OUT/ulb.pcapng >/tmp/dumpcap.log 2>&1 &
cap=$!
for _ in $(seq 60); do [[ -s $OUT/ulb.pcapng ]] && break; sleep 0.5; done
sleep 2

# A pattern the tests can recognise: byte i of a file is (i * 7 + (i >> 8)) & 0xff.
pattern() { python3 -c "import sys; n=int(sys.argv[1]); sys.stdout.buffer.write(bytes(((i*7+(i>>8))&255) for i in range(n)))" "$1"; }

step() { echo "== $*"; }

workload() { # DIR VERS
	local d=$1/w$2
	step "v$2 create, write, commit, read"
	mkdir "$d"
	pattern 40000 >"$d/pat"           # WRITEs of 16384, 16384, 7232 (rsize/wsize 16384)
	pattern 1001 >"$d/odd"            # a length that is not a multiple of 4
	sync
	python3 - "$d" <<'PY'
import os, sys, fcntl
d = sys.argv[1]
fd = os.open(d + "/excl", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o640)  # exclusive create
os.write(fd, b"x" * 3)
os.fsync(fd)
os.close(fd)
# locks: exclusive, shared on a range, test (F_GETLK), unlock
fd = os.open(d + "/pat", os.O_RDWR)
fcntl.lockf(fd, fcntl.LOCK_EX)
fcntl.lockf(fd, fcntl.LOCK_UN)
fcntl.lockf(fd, fcntl.LOCK_SH, 100, 10)
fcntl.fcntl(fd, fcntl.F_GETLK, b"\0" * 32)
fcntl.lockf(fd, fcntl.LOCK_UN, 100, 10)
os.close(fd)
PY
	flock -x "$d/odd" -c true
	step "v$2 symlink, link, rename, setattr, mknod"
	ln -s "../w$2/odd-target-name-of-odd-length.x" "$d/sym"
	ln -s "$(printf 'p%.0s' $(seq 1 260))" "$d/longsym"
	ln "$d/odd" "$d/hard"
	mv "$d/hard" "$d/hard2"
	chmod 600 "$d/odd"
	truncate -s 1001 "$d/odd"
	touch -d @1000000000 "$d/pat"
	mkfifo "$d/fifo" || true
	mkdir "$d/sub"
	python3 - "$d/odd" <<'PY' || true
import os, sys
p = sys.argv[1]
for name in ("system.posix_acl_access", "system.nfs4_acl"):
    try:
        os.getxattr(p, name)
    except OSError as e:
        print("getxattr", name, e)
import struct
# a POSIX ACL with a named user: SETACL (v3) / SETATTR acl (v4)
acl = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", t, perm, i) for t, perm, i in
      ((0x01, 6, 0xffffffff), (0x02, 4, 1000), (0x04, 4, 0xffffffff), (0x10, 4, 0xffffffff), (0x20, 4, 0xffffffff)))
try:
    os.setxattr(p, "system.posix_acl_access", acl)
    os.getxattr(p, "system.posix_acl_access")
except OSError as e:
    print("acl", e)
try:
    os.setxattr(p, "user.ulb", b"value")
    os.getxattr(p, "user.ulb")
    os.listxattr(p)
except OSError as e:
    print("user xattr", e)
PY
	step "v$2 4.2 ops"
	fallocate -l 65536 "$d/alloc" || true
	fallocate -p -o 4096 -l 8192 "$d/alloc" || true
	python3 - "$d" <<'PY' || true
import os, sys
d = sys.argv[1]
fd = os.open(d + "/alloc", os.O_RDONLY)
try:
    os.lseek(fd, 0, os.SEEK_HOLE)
    os.lseek(fd, 4096, os.SEEK_DATA)
except OSError as e:
    print("seek", e)
out = os.open(d + "/copy", os.O_CREAT | os.O_WRONLY, 0o644)
src = os.open(d + "/pat", os.O_RDONLY)
try:
    os.copy_file_range(src, out, 40000)
except OSError as e:
    print("copy", e)
os.close(src); os.close(out); os.close(fd)
PY
	sync
	step "v$2 read back after dropping caches"
	echo 3 >/proc/sys/vm/drop_caches
	cat "$d/pat" "$d/odd" >/dev/null
	readlink "$d/sym" "$d/longsym" >/dev/null
	ls -la "$d" >/dev/null
	stat "$d/fifo" >/dev/null 2>&1 || true
	df "$1" >/dev/null
	step "v$2 remove"
	rm -f "$d/hard2" "$d/fifo" "$d/copy"
	rmdir "$d/sub"
}

# c2 opens a file for writing, which makes the server recall the first
# client's read delegation on it.
conflict() { # VERS PATH-UNDER-EXPORT
	ip netns exec c2 unshare -u bash -c '
		hostname ulb-c2
		echo ulb-c2-id >/sys/fs/nfs/net/nfs_client/identifier 2>/dev/null
		mkdir -p /mnt/c2
		mount -t nfs -o vers='"$1"',proto=tcp,clientaddr=192.0.2.2 '"$SRV"':/ /mnt/c2 &&
		{ echo more >>/mnt/c2/'"$2"'; umount /mnt/c2; }'
}

for v in 3 4.0 4.1 4.2; do
	m=/mnt/v$v
	mkdir -p "$m"
	step "mount v$v"
	if [[ $v == 3 ]]; then
		mount -t nfs -o vers=3,proto=tcp,mountproto=tcp,rsize=16384,wsize=16384 $SRV:/export "$m" || continue
	else
		mount -t nfs -o vers=$v,proto=tcp,rsize=16384,wsize=16384,clientaddr=$SRV $SRV:/ "$m" || continue
	fi
	workload "$m" "$v"
	if [[ $v == 3 ]]; then
		# READDIR (not PLUS) needs a mount without readdirplus
		mkdir -p /mnt/v3r
		mount -t nfs -o vers=3,proto=tcp,mountproto=tcp,nordirplus,nosharecache $SRV:/export /mnt/v3r &&
			{ ls -la /mnt/v3r/w3 >/dev/null; umount /mnt/v3r; }
	else
		step "v$v delegation"
		f=w$v/deleg
		echo data >"$m/$f"
		sync
		for _ in 1 2 3; do cat "$m/$f" >/dev/null; sleep 2; done
		python3 -c "import sys; f=open(sys.argv[1]); f.read(); import time; time.sleep(1); f.close()" "$m/$f"
		conflict "$v" "$f"
		sleep 1
		cat "$m/$f" >/dev/null
		grep -E '^\s+(DELEGRETURN|OPEN|LOCK|READ|WRITE):' /proc/self/mountstats | tr -s ' ' | head -20
	fi
	[[ $v == 4.0 ]] && sleep 12    # let the lease run out once: RENEW
	nfsstat -c -$( [[ $v == 3 ]] && echo 3 || echo 4 ) 2>/dev/null | head -40
	step "umount v$v"
	umount "$m"
done

sleep 2
kill -INT $cap
wait $cap
ls -la $OUT/ulb.pcapng
