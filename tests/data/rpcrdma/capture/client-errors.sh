# gwvm job, host B: provoke RDMA_ERROR answers from host A's svcrdma with
# errprobe (built into $GWVM_SHARE beforehand), capturing RoCEv2.
#   cc -O2 -o SHARE/errprobe errprobe.c -lrdmacm -libverbs
#   GWVM_SHARE=SHARE tests/vm/gwvm run2 server.sh client-errors.sh
set -eu
gwvm-net 192.0.2.2
dev=$(ls /sys/class/net | grep -v -E '^(lo|rxe)' | head -1)
tshark -i "$dev" -f 'udp port 4791' -w /tmp/cap.pcap -q 2>/dev/null & cap=$!
for i in $(seq 1 120); do [ -e /share/server_ready ] && break; sleep 1; done
# tshark takes a while to start in an emulated guest: wait for its file
for i in $(seq 1 120); do [ -s /tmp/cap.pcap ] && break; sleep 1; done
sleep 2
/share/errprobe 192.0.2.1 || echo "errprobe failed"
sleep 1; kill $cap; wait $cap || true
cp /tmp/cap.pcap /share/cap-errors.pcap
touch /share/client_done
