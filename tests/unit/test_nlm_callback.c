/* SPDX-License-Identifier: MIT */
/*
 * The server's GRANTED callback relayed to its client (gateway/nlm_callback.c),
 * on loopback: the "server" is 127.0.0.1 (the upstream-side address), the
 * route listens on 127.0.0.2, the client host is 127.0.0.3 with a fake
 * portmapper and lockd. The server finds the callback service through the
 * gateway's portmapper, calls GRANTED with the upstream owner, and gets the
 * client's answer; the client sees its own svid and oh, from 127.0.0.2. An
 * unknown owner and a client that does not answer are refused (NLM_DENIED).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include <event2/event.h>

#include "common/clock.h"
#include "common/xdr.h"
#include "conf/config.h"
#include "gateway/counters.h"
#include "gateway/nlm_callback.h"
#include "gateway/nlm_relay.h"
#include "gateway/portmap.h"

enum { SERVER = 0x7f000001, LISTEN = 0x7f000002, CLIENT = 0x7f000003 };

static const uint8_t FH[32] = { 9, 8, 7 };

static struct sockaddr_in sin_at(uint32_t ip, uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(ip),
				 .sin_port = htons(port) };
	return a;
}

/* A UDP socket bound to @ip:@port (0: any); its port in *@got. */
static int udp_at(uint32_t ip, uint16_t port, uint16_t *got)
{
	struct sockaddr_in a = sin_at(ip, port);
	socklen_t l = sizeof(a);
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);

	assert_true(fd >= 0);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		close(fd);
		return -1;
	}
	getsockname(fd, (struct sockaddr *)&a, &l);
	if (got)
		*got = ntohs(a.sin_port);
	return fd;
}

static size_t call_hdr(uint8_t *b, uint32_t xid, uint32_t proc)
{
	const uint32_t w[] = { xid, 0, 2, NLM_PROG, 4, proc, 0, 0, 0, 0 };
	for (size_t i = 0; i < 10; i++)
		xdr_put32(b + 4 * i, w[i]);
	return 40;
}

/* An NLM v4 call @proc for (@svid, @oh) on FH. */
static size_t nlm_call(uint8_t *b, size_t cap, uint32_t xid, uint32_t proc, int32_t svid,
		       struct nlm_bytes oh)
{
	struct nlm_args a = {
		.vers = 4,
		.kind = nlm_args_kind(proc),
		.cookie = { (const uint8_t *)"cb", 2 },
		.block = proc == NLMPROC_LOCK,
		.exclusive = true,
		.lock = { .caller = { (const uint8_t *)"host", 4 },
			  .fh = { FH, sizeof(FH) },
			  .oh = oh,
			  .svid = svid },
	};
	size_t h = call_hdr(b, xid, proc), m;
	assert_int_equal(nlm_encode_args(&a, b + h, cap - h, &m), 0);
	return h + m;
}

struct t {
	struct event_base *base;
	struct gw_route route;
	struct gw_counters counters;
	struct nlm_relay *rl;
	struct nlm_callback *cb;
	uint16_t pmap_port;
	int server, cpmap, clockd; /* the server's socket; the client's portmapper, lockd */
	uint16_t clockd_port;
	struct nlm_owner_id up; /* the upstream owner of the client's (42, "own") */
	bool client_answers;
	int32_t client_saw_svid;
	char client_saw_oh[16];
	uint32_t client_saw_from;
};

/* The gateway's view: a LOCK from the client went through the call hook. */
static void client_locked(struct t *t)
{
	uint8_t msg[512], out[1024];
	size_t len = nlm_call(msg, sizeof(msg), 5, NLMPROC_LOCK, 42,
			      (struct nlm_bytes){ (const uint8_t *)"own", 3 }),
	       n;
	struct sidesvc_peer p = { .addrlen = sizeof(struct sockaddr_in) };
	struct sockaddr_in a = sin_at(CLIENT, 800);
	struct rpc_call_hdr h;
	struct nlm_args up;

	memcpy(&p.addr, &a, sizeof(a));
	assert_int_equal(rpc_call_decode(msg, len, &h), RPC_HDR_CALL);
	assert_int_equal(nlm_relay_call_hook(t->rl, &p, &h, msg, len, out, sizeof(out), &n),
			 SIDERELAY_REWRITTEN);
	assert_int_equal(nlm_decode_args(4, NLMPROC_LOCK, out + 40, n - 40, &up), 0);
	t->up.svid = up.lock.svid;
	memcpy(t->up.oh, up.lock.oh.p, NLM_TOKEN_LEN);
}

/* The fake client host: its portmapper gives the lockd port, its lockd grants. */
static void client_serve(struct t *t)
{
	uint8_t b[2048], out[256];
	struct sockaddr_in from;
	socklen_t fl = sizeof(from);
	ssize_t r = recvfrom(t->cpmap, b, sizeof(b), 0, (struct sockaddr *)&from, &fl);
	struct rpc_call_hdr h;
	struct nlm_args a;

	if (r > 0 && t->client_answers) {
		size_t n = rpc_encode_accept_error(out, sizeof(out), xdr_get32(b), 0, 0, 0);
		xdr_put32(out + n, t->clockd_port);
		sendto(t->cpmap, out, n + 4, 0, (struct sockaddr *)&from, fl);
	}
	fl = sizeof(from);
	r = recvfrom(t->clockd, b, sizeof(b), 0, (struct sockaddr *)&from, &fl);
	if (r <= 0 || !t->client_answers)
		return;
	assert_int_equal(rpc_call_decode(b, (size_t)r, &h), RPC_HDR_CALL);
	assert_int_equal(h.proc, NLMPROC_GRANTED);
	assert_int_equal(nlm_decode_args(4, h.proc, b + h.args_off, (size_t)r - h.args_off, &a), 0);
	t->client_saw_svid = a.lock.svid;
	memcpy(t->client_saw_oh, a.lock.oh.p, a.lock.oh.len < 15 ? a.lock.oh.len : 15);
	t->client_saw_from = ntohl(from.sin_addr.s_addr);
	size_t n = rpc_encode_accept_error(out, sizeof(out), h.xid, 0, 0, 0);
	xdr_put32(out + n, 2); /* the cookie, as the client's lockd echoes it */
	memcpy(out + n + 4, "cb\0\0", 4);
	xdr_put32(out + n + 8, NLM_GRANTED);
	sendto(t->clockd, out, n + 12, 0, (struct sockaddr *)&from, fl);
}

/* The server sends @msg to @port and waits for the reply: its bytes' count, 0 for none. */
static size_t server_call(struct t *t, uint16_t port, const uint8_t *msg, size_t len,
			  uint8_t *reply, size_t cap, uint64_t wait_us)
{
	struct sockaddr_in to = sin_at(SERVER, port);
	uint64_t end = gw_now_us() + wait_us;

	sendto(t->server, msg, len, 0, (struct sockaddr *)&to, sizeof(to));
	while (gw_now_us() < end) {
		event_base_loop(t->base, EVLOOP_NONBLOCK);
		client_serve(t);
		struct pollfd p = { .fd = t->server, .events = POLLIN };
		if (poll(&p, 1, 5) == 1) {
			ssize_t r = recv(t->server, reply, cap, 0);
			return r > 0 ? (size_t)r : 0;
		}
	}
	return 0;
}

static int setup(void **state)
{
	struct t *t = calloc(1, sizeof(*t));
	char err[256];
	struct sockaddr_in srv = sin_at(SERVER, 0);

	t->base = event_base_new();
	t->route.name = "t";
	struct sockaddr_in l = sin_at(LISTEN, 2049);
	memcpy(&t->route.listen.addr, &l, sizeof(l));
	t->route.listen.addrlen = sizeof(l);
	/* A port free on both the server's and the client's address, for the portmappers. */
	for (int i = 0; i < 20 && t->cpmap <= 0; i++) {
		int s = udp_at(SERVER, 0, &t->pmap_port);
		t->cpmap = udp_at(CLIENT, t->pmap_port, NULL);
		close(s);
	}
	assert_true(t->cpmap > 0);
	t->clockd = udp_at(CLIENT, 0, &t->clockd_port);
	t->server = udp_at(SERVER, 0, NULL);
	struct nlm_relay_config rc = { .route_name = "t",
				       .caller_name = "gw",
				       .counters = &t->counters };
	t->rl = nlm_relay_new(&rc);
	assert_non_null(t->rl);
	struct nlm_callback_config cc = { .route = &t->route,
					  .counters = &t->counters,
					  .relay = t->rl,
					  .pmap_port = t->pmap_port,
					  .retry_ms = 100,
					  .timeout_ms = 400 };
	t->cb = nlm_callback_start(t->base, &cc, (struct sockaddr *)&srv, sizeof(srv), err,
				   sizeof(err));
	assert_non_null(t->cb);
	assert_true(nlm_callback_advertised(t->cb));
	t->client_answers = true;
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	struct t *t = *state;

	nlm_callback_stop(t->cb);
	nlm_relay_free(t->rl);
	close(t->server);
	close(t->cpmap);
	close(t->clockd);
	event_base_free(t->base);
	free(t);
	return 0;
}

/* The callback service's port, from the gateway's portmapper on the server's side. */
static uint16_t cb_port(struct t *t)
{
	uint8_t b[128], r[128];
	size_t n = pmap_encode_getport(b, sizeof(b), 7, NLM_PROG, 4, PMAP_IPPROTO_UDP);
	uint16_t port = 0;

	n = server_call(t, t->pmap_port, b, n, r, sizeof(r), 1000000);
	assert_true(n > 0);
	assert_int_equal(pmap_decode_getport_reply(r, n, &port), 0);
	assert_int_equal(port, nlm_callback_port(t->cb));
	return port;
}

/* The stat of an NLM reply (cookie "cb"), or -1. */
static int reply_stat(const uint8_t *r, size_t n)
{
	if (n < 24 + 12 || xdr_get32(r + 20) != 0)
		return -1;
	return (int)xdr_get32(r + n - 4);
}

static void test_granted_relayed_with_the_clients_owner(void **state)
{
	struct t *t = *state;
	uint8_t msg[512], r[512];

	client_locked(t);
	size_t len = nlm_call(msg, sizeof(msg), 77, NLMPROC_GRANTED, t->up.svid,
			      (struct nlm_bytes){ t->up.oh, NLM_TOKEN_LEN });
	size_t n = server_call(t, cb_port(t), msg, len, r, sizeof(r), 2000000);
	assert_int_equal(xdr_get32(r), 77);
	assert_int_equal(reply_stat(r, n), NLM_GRANTED);
	/* The client saw its own owner, from the route's listen address. */
	assert_int_equal(t->client_saw_svid, 42);
	assert_string_equal(t->client_saw_oh, "own");
	assert_int_equal(t->client_saw_from, LISTEN);
	assert_int_equal(nlm_callback_stats(t->cb)->granted, 1);
	assert_int_equal(nlm_callback_pending(t->cb), 0);
}

static void test_unknown_owner_refused(void **state)
{
	struct t *t = *state;
	uint8_t msg[512], r[512], oh[NLM_TOKEN_LEN] = { 1 };

	client_locked(t);
	size_t len = nlm_call(msg, sizeof(msg), 78, NLMPROC_GRANTED, t->up.svid ^ 0x5a5a,
			      (struct nlm_bytes){ oh, sizeof(oh) });
	size_t n = server_call(t, cb_port(t), msg, len, r, sizeof(r), 2000000);
	assert_int_equal(reply_stat(r, n), NLM_DENIED);
	assert_int_equal(t->client_saw_svid, 0); /* nothing reached the client */
}

static void test_silent_client_refused_after_timeout(void **state)
{
	struct t *t = *state;
	uint8_t msg[512], r[512];

	client_locked(t);
	t->client_answers = false;
	size_t len = nlm_call(msg, sizeof(msg), 79, NLMPROC_GRANTED, t->up.svid,
			      (struct nlm_bytes){ t->up.oh, NLM_TOKEN_LEN });
	uint16_t port = cb_port(t);
	uint64_t t0 = gw_now_us();
	size_t n = server_call(t, port, msg, len, r, sizeof(r), 3000000);
	assert_int_equal(reply_stat(r, n), NLM_DENIED);
	assert_true(gw_now_us() - t0 >= 350000);
	assert_int_equal(nlm_callback_stats(t->cb)->timed_out, 1);
	assert_int_equal(nlm_callback_pending(t->cb), 0);
}

/* Only the server may call back: a GRANTED from elsewhere is dropped. */
static void test_call_not_from_the_server_dropped(void **state)
{
	struct t *t = *state;
	uint8_t msg[512];
	struct sockaddr_in to = sin_at(SERVER, 0);

	client_locked(t);
	to.sin_port = htons(cb_port(t));
	size_t len = nlm_call(msg, sizeof(msg), 80, NLMPROC_GRANTED, t->up.svid,
			      (struct nlm_bytes){ t->up.oh, NLM_TOKEN_LEN });
	int other = udp_at(CLIENT, 0, NULL);
	sendto(other, msg, len, 0, (struct sockaddr *)&to, sizeof(to));
	for (int i = 0; i < 50; i++) {
		event_base_loop(t->base, EVLOOP_NONBLOCK);
		usleep(2000);
	}
	close(other);
	assert_int_equal(nlm_callback_stats(t->cb)->not_from_server, 1);
	assert_int_equal(nlm_callback_pending(t->cb), 0);
}

/*
 * A blocked lock whose GRANTED the client never answers: the server is told
 * DENIED and unlocks it, and the relay's record of it goes too.
 */
static void test_failed_callback_forgets_the_blocked_record(void **state)
{
	struct t *t = *state;
	uint8_t msg[512], r[512], up[1024], rep[64], back[1024];
	size_t len = nlm_call(msg, sizeof(msg), 6, NLMPROC_LOCK, 42,
			      (struct nlm_bytes){ (const uint8_t *)"own", 3 }),
	       n;
	struct sidesvc_peer p = { .addrlen = sizeof(struct sockaddr_in) };
	struct sockaddr_in a = sin_at(CLIENT, 800);
	struct rpc_call_hdr h;
	struct nlm_args upa;

	/* The client's LOCK, answered BLOCKED by the server: recorded. */
	memcpy(&p.addr, &a, sizeof(a));
	assert_int_equal(rpc_call_decode(msg, len, &h), RPC_HDR_CALL);
	assert_int_equal(nlm_relay_call_hook(t->rl, &p, &h, msg, len, up, sizeof(up), &n),
			 SIDERELAY_REWRITTEN);
	assert_int_equal(nlm_decode_args(4, NLMPROC_LOCK, up + 40, n - 40, &upa), 0);
	t->up.svid = upa.lock.svid;
	memcpy(t->up.oh, upa.lock.oh.p, NLM_TOKEN_LEN);
	struct relay_call c = { .used = true,
				.peer = p,
				.vers = 4,
				.proc = NLMPROC_LOCK,
				.msg = up,
				.len = (uint32_t)n };
	size_t rh = rpc_encode_accept_error(rep, sizeof(rep), 7, RPCSTAT_SUCCESS, 0, 0);
	xdr_put32(rep + rh, 2);
	memcpy(rep + rh + 4, "cb\0\0", 4);
	xdr_put32(rep + rh + 8, NLM_BLOCKED);
	nlm_relay_reply_hook(t->rl, &c, rep, rh + 12, back, sizeof(back), &n);
	assert_int_equal(nlm_state_locks(nlm_relay_state(t->rl)), 1);

	/* Its GRANTED goes unanswered: DENIED to the server, the record gone. */
	t->client_answers = false;
	len = nlm_call(msg, sizeof(msg), 81, NLMPROC_GRANTED, t->up.svid,
		       (struct nlm_bytes){ t->up.oh, NLM_TOKEN_LEN });
	n = server_call(t, cb_port(t), msg, len, r, sizeof(r), 3000000);
	assert_int_equal(reply_stat(r, n), NLM_DENIED);
	assert_int_equal(nlm_state_locks(nlm_relay_state(t->rl)), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_granted_relayed_with_the_clients_owner, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_unknown_owner_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_silent_client_refused_after_timeout, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_failed_callback_forgets_the_blocked_record,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_call_not_from_the_server_dropped, setup,
						teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
