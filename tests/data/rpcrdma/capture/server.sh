# gwvm job, host A: kernel NFS server over RDMA (svcrdma) at 192.0.2.1.
# Run with client.sh as host B: GWVM_SHARE=DIR tests/vm/gwvm run2 server.sh client.sh
set -eu
gwvm-net 192.0.2.1
gwvm-nfsd /export
dd if=/dev/urandom of=/export/f bs=1M count=2 status=none
head -c 5001 /dev/urandom >/export/odd
mkdir /export/big
for i in $(seq 1 400); do : >"/export/big/a-rather-long-file-name-for-readdir-$i"; done
ln -s /this/is/the/target/of/a/symbolic/link/that/readlink/returns /export/link
rm -f /share/client_done; touch /share/server_ready
for i in $(seq 1 240); do [ -e /share/client_done ] && break; sleep 1; done
rm -f /share/server_ready
