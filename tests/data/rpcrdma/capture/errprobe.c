/* SPDX-License-Identifier: MIT */
/*
 * errprobe: make the kernel NFS server (svcrdma) answer with RDMA_ERROR, to
 * capture real ERR_VERS and ERR_CHUNK headers. It connects to ADDR port
 * 20049 with RFC 8797 private data and sends, one at a time (a new
 * connection has one credit), headers the server must refuse:
 *   a Version Two header            -> ERR_VERS (1, 1)
 *   an unknown rdma_proc (5)        -> ERR_CHUNK
 *   RDMA_MSGP                       -> ERR_CHUNK (svcrdma does not take it)
 * and prints each answer in hex. Not part of the build:
 *   cc -O2 -o errprobe errprobe.c -lrdmacm -libverbs
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

static uint8_t sbuf[256], rbuf[4096];

static void put(uint8_t *p, const uint32_t *w, int n)
{
	for (int i = 0; i < n; i++) {
		uint32_t v = htonl(w[i]);
		memcpy(p + 4 * i, &v, 4);
	}
}

static int probe(struct rdma_cm_id *id, struct ibv_mr *mr, struct ibv_mr *smr, const char *what,
		 const uint32_t *w, int n)
{
	struct ibv_wc wc;

	if (rdma_post_recv(id, NULL, rbuf, sizeof(rbuf), mr))
		return perror("rdma_post_recv"), -1;
	put(sbuf, w, n);
	if (rdma_post_send(id, NULL, sbuf, (size_t)n * 4, smr, 0))
		return perror("rdma_post_send"), -1;
	if (rdma_get_send_comp(id, &wc) <= 0 || wc.status != IBV_WC_SUCCESS)
		return fprintf(stderr, "%s: send failed\n", what), -1;
	if (rdma_get_recv_comp(id, &wc) <= 0 || wc.status != IBV_WC_SUCCESS)
		return fprintf(stderr, "%s: no answer\n", what), -1;
	printf("%s ->", what);
	for (unsigned i = 0; i < wc.byte_len; i += 4)
		printf(" %02x%02x%02x%02x", rbuf[i], rbuf[i + 1], rbuf[i + 2], rbuf[i + 3]);
	printf("\n");
	return 0;
}

int main(int argc, char **argv)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *res;
	struct ibv_qp_init_attr attr = {
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
		.sq_sig_all = 1
	};
	/* RFC 8797: magic, version 1, no R, 4096/4096 */
	const uint8_t pd[8] = { 0xf6, 0xab, 0x0e, 0x18, 1, 0, 3, 3 };
	struct rdma_conn_param cp = { .private_data = pd,
				      .private_data_len = 8,
				      .responder_resources = 1,
				      .initiator_depth = 1,
				      .retry_count = 7,
				      .rnr_retry_count = 7 };
	struct rdma_cm_id *id;
	struct ibv_mr *mr, *smr;

	if (argc != 2)
		return fprintf(stderr, "usage: errprobe ADDR\n"), 2;
	if (rdma_getaddrinfo(argv[1], "20049", &hints, &res))
		return perror("rdma_getaddrinfo"), 1;
	if (rdma_create_ep(&id, res, NULL, &attr))
		return perror("rdma_create_ep"), 1;
	mr = rdma_reg_msgs(id, rbuf, sizeof(rbuf));
	smr = rdma_reg_msgs(id, sbuf, sizeof(sbuf));
	if (!mr || !smr)
		return perror("rdma_reg_msgs"), 1;
	if (rdma_connect(id, &cp))
		return perror("rdma_connect"), 1;
	/* xid, vers, credits, proc, three empty lists, then an RPC NULL call header */
	const uint32_t v2[] = { 0x0e770001, 2,	    1, 0, 0, 0, 0, 0x0e770001, 0,
				2,	    100003, 3, 0, 0, 0, 0, 0 };
	const uint32_t badproc[] = { 0x0e770002, 1, 1, 5, 0, 0, 0 };
	const uint32_t msgp[] = { 0x0e770003, 1, 1,	 2, 4096, 1024, 0, 0, 0, 0x0e770003,
				  0,	      2, 100003, 3, 0,	  0,	0, 0, 0 };
	int rc = 0;
	rc |= probe(id, mr, smr, "version-2", v2, sizeof(v2) / 4);
	rc |= probe(id, mr, smr, "proc-5", badproc, sizeof(badproc) / 4);
	rc |= probe(id, mr, smr, "msgp", msgp, sizeof(msgp) / 4);
	rdma_disconnect(id);
	return rc ? 1 : 0;
}
