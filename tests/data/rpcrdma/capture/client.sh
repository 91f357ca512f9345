# gwvm job, host B: kernel NFS client (xprtrdma) against host A, capturing RoCEv2.
set -eu
gwvm-net 192.0.2.2
modprobe nfsv3; modprobe nfsv4
dev=$(ls /sys/class/net | grep -v -E '^(lo|rxe)' | head -1)
tshark -i "$dev" -f 'udp port 4791' -w /tmp/cap.pcap -q 2>/dev/null & cap=$!
for i in $(seq 1 120); do [ -e /share/server_ready ] && break; sleep 1; done
for i in $(seq 1 120); do [ -s /tmp/cap.pcap ] && break; sleep 1; done
workload() { # $1 = mount point
	stat "$1/f" >/dev/null
	ls -l "$1/big" | wc -l
	readlink "$1/link"
	dd if=/dev/urandom of="$1/w" bs=1M count=1 oflag=direct status=none
	dd if="$1/f" of=/dev/null bs=1M count=1 iflag=direct status=none
	dd if="$1/odd" of=/dev/null bs=8k iflag=direct status=none
	head -c 4999 /dev/urandom | dd of="$1/odd-w" bs=8k oflag=direct status=none
	ln -s "$(head -c 3000 /dev/zero | tr '\0' x)" "$1/longlink" 2>/dev/null || true
	rm -f "$1/w" "$1/odd-w" "$1/longlink"
}
mkdir -p /mnt/v3 /mnt/v41
for i in $(seq 1 20); do mount -t nfs -o vers=3,proto=rdma,port=20049,nolock 192.0.2.1:/export /mnt/v3 && break; sleep 3; done
workload /mnt/v3
umount /mnt/v3
mount -t nfs -o vers=4.1,proto=rdma,port=20049 192.0.2.1:/ /mnt/v41
workload /mnt/v41
umount /mnt/v41
sleep 1; kill $cap; wait $cap || true
cp /tmp/cap.pcap /share/cap.pcap
touch /share/client_done
tshark -r /share/cap.pcap -d udp.port==4791,infiniband -Y rpcordma 2>/dev/null | wc -l
