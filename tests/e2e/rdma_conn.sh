# rdma/conn on real Soft-RoCE: private data, send/receive, per-RPC windows (remote read,
# remote write, fencing), flush on teardown, buffers all returned. See
# tests/e2e/progs/rconn_check.c for the steps.
set -eu
gwvm-net
"$GW_BUILD/tests/rconn_check" 192.0.2.1
