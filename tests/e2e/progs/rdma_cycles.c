/* SPDX-License-Identifier: MIT */
/*
 * rdma_cycles ADDR PORT COUNT EVERY: COUNT RDMA connect/disconnect cycles
 * against a reverse-mode gateway, one after another, each a new CM id and QP
 * (what a client that mounts and unmounts, or crashes and comes back, does).
 * On every EVERY-th cycle the client also sends an NFS NULL call
 * (RPC-over-RDMA Version One, RDMA_MSG) and waits for its reply, so that the
 * gateway's call path (receive buffers, slots, the upstream TCP connection)
 * is used before the connection goes; the others disconnect as soon as the
 * connection is established.
 *
 * It is a plain librdmacm client with the synchronous calls (rdma_create_ep,
 * rdma_connect, rdma_get_recv_comp): it needs nothing from the gateway's own
 * code, so nothing the gateway gets wrong is shared with the test.
 *
 * Prints one line per failure, then "ok: ..." or "FAIL: ..." with the count of
 * cycles, calls answered and the rate, and exits 0 only when every connect
 * and every call succeeded. A cycle that hangs (a call never answered, a
 * disconnect that never completes) ends the program after 30 s (SIGALRM)
 * with the cycle and the step it hung at, status 3.
 */
#include <signal.h>

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>

enum { MSG_SIZE = 4096, CALL_WORDS = 17, RDMA_MSG = 0 };

/* Where the current cycle is, for the report of a cycle that hangs. */
static volatile sig_atomic_t cur_cycle, cur_stage;
static const char *const stage_names[] = { "connect", "send", "reply", "disconnect" };

static void on_alarm(int sig)
{
	char msg[96];
	int n = snprintf(msg, sizeof(msg), "FAIL: cycle %d hung for 30 s at %s\n", (int)cur_cycle,
			 stage_names[cur_stage]);

	(void)sig;
	if (n > 0)
		(void)!write(STDOUT_FILENO, msg, (size_t)n);
	_exit(3);
}

/* RDMA_MSG with three empty lists, then an NFSv3 NULL call with AUTH_NONE. */
static size_t build_null_call(uint32_t *w, uint32_t xid)
{
	const uint32_t words[CALL_WORDS] = {
		xid, 1, 1, RDMA_MSG, 0, 0, 0, /* transport header, 1 credit asked */
		xid, 0, 2, 100003,   3, 0, 0,
		0,   0, 0, /* CALL rpcvers 2, NFS v3 NULL, AUTH_NONE x2 */
	};

	for (int i = 0; i < CALL_WORDS; i++)
		w[i] = htonl(words[i]);
	return sizeof(words);
}

/* An RDMA_MSG carrying an accepted SUCCESS reply to @xid. */
static int null_reply_ok(const uint32_t *w, uint32_t len, uint32_t xid)
{
	/* 7 transport words, then xid, REPLY, MSG_ACCEPTED, verifier (2), accept_stat */
	if (len < 13 * 4)
		return 0;
	return ntohl(w[0]) == xid && ntohl(w[1]) == 1 && ntohl(w[3]) == RDMA_MSG &&
	       ntohl(w[7]) == xid && ntohl(w[8]) == 1 && ntohl(w[9]) == 0 && ntohl(w[12]) == 0;
}

/* One cycle: connect, maybe a NULL call, disconnect. 0 on success. */
static int cycle(struct rdma_addrinfo *ai, uint32_t xid, int with_call, int *answered)
{
	static uint32_t sbuf[MSG_SIZE / 4], rbuf[MSG_SIZE / 4];
	struct ibv_qp_init_attr attr = {
		.cap = { .max_send_wr = 2, .max_recv_wr = 2, .max_send_sge = 1, .max_recv_sge = 1 },
		.sq_sig_all = 1,
		.qp_type = IBV_QPT_RC,
	};
	/* Responder resources: the gateway may RDMA-Read from a client (it refuses 0). */
	struct rdma_conn_param cp = { .responder_resources = 1,
				      .initiator_depth = 1,
				      .retry_count = 7,
				      .rnr_retry_count = 7 };
	struct rdma_cm_id *id = NULL;
	struct ibv_mr *smr = NULL, *rmr = NULL;
	struct ibv_wc wc;
	int rc = -1;

	if (rdma_create_ep(&id, ai, NULL, &attr)) {
		perror("rdma_create_ep");
		return -1;
	}
	if (with_call) {
		smr = rdma_reg_msgs(id, sbuf, sizeof(sbuf));
		rmr = rdma_reg_msgs(id, rbuf, sizeof(rbuf));
		if (!smr || !rmr || rdma_post_recv(id, NULL, rbuf, sizeof(rbuf), rmr)) {
			perror("registering the call's buffers");
			goto out;
		}
	}
	cur_stage = 0;
	if (rdma_connect(id, &cp)) {
		perror("rdma_connect");
		goto out;
	}
	if (with_call) {
		size_t len = build_null_call(sbuf, xid);

		cur_stage = 1;

		if (rdma_post_send(id, NULL, sbuf, len, smr, 0) ||
		    rdma_get_send_comp(id, &wc) <= 0 || wc.status != IBV_WC_SUCCESS) {
			fprintf(stderr, "cycle xid %#x: the call was not sent\n", xid);
			goto disconnect;
		}
		cur_stage = 2;
		if (rdma_get_recv_comp(id, &wc) <= 0 || wc.status != IBV_WC_SUCCESS ||
		    !null_reply_ok(rbuf, wc.byte_len, xid)) {
			fprintf(stderr, "cycle xid %#x: no good reply (status %d, %u bytes)\n", xid,
				wc.status, wc.byte_len);
			goto disconnect;
		}
		(*answered)++;
	}
	rc = 0;
disconnect:
	cur_stage = 3;
	rdma_disconnect(id);
out:
	if (smr)
		rdma_dereg_mr(smr);
	if (rmr)
		rdma_dereg_mr(rmr);
	rdma_destroy_ep(id);
	return rc;
}

int main(int argc, char **argv)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *ai;
	struct timespec t0, t1;
	int count, every, failed = 0, calls = 0, answered = 0;

	if (argc != 5) {
		fprintf(stderr, "usage: rdma_cycles ADDR PORT COUNT EVERY\n");
		return 2;
	}
	count = atoi(argv[3]);
	every = atoi(argv[4]);
	if (count <= 0 || every <= 0) {
		fprintf(stderr, "rdma_cycles: COUNT and EVERY must be positive\n");
		return 2;
	}
	if (rdma_getaddrinfo(argv[1], argv[2], &hints, &ai)) {
		perror("rdma_getaddrinfo");
		return 2;
	}
	signal(SIGALRM, on_alarm);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < count; i++) {
		int with_call = i % every == 0;

		cur_cycle = i;
		alarm(30);
		calls += with_call;
		if (cycle(ai, 0x52000000u + (uint32_t)i, with_call, &answered))
			failed++;
	}
	alarm(0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	rdma_freeaddrinfo(ai);

	double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("%s: %d RDMA connect/disconnect cycles in %.1f s (%.0f/s), %d failed; "
	       "%d of %d NULL calls answered\n",
	       failed || answered != calls ? "FAIL" : "ok", count, secs, count / secs, failed,
	       answered, calls);
	return failed || answered != calls;
}
