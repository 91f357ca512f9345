/* SPDX-License-Identifier: MIT */
/*
 * The server's GRANTED callback relayed to its client (gateway/side/nlm/nlm_callback.c),
 * on loopback: the "server" is 127.0.0.1 (the upstream-side address), the
 * route listens on 127.0.0.2, the client host is 127.0.0.3 with a fake
 * portmapper and lockd. The server finds the callback service through the
 * gateway's portmapper, calls GRANTED with the upstream owner, and gets the
 * client's answer; the client sees its own svid and oh, from 127.0.0.2. An
 * unknown owner and a client that does not answer are refused (NLM_DENIED).
 * Where the server finds the route's NLM relay instead (a wildcard route),
 * its GRANTED to the relay is taken from there and answered the same way.
 *
 * The clients' _MSG calls (gateway/side/nlm/nlm_async.c): a LOCK_MSG goes upstream
 * with a cookie of the gateway's, the server's LOCK_RES to the callback
 * service reaches the client's lockd as a LOCK_RES call with the client's
 * cookie and the lock is recorded; a TEST_RES holder is the client's own
 * owner; a result with a cookie of no pending call, or none from the
 * server, is dropped; a full table refuses; an unanswered _MSG is forgotten;
 * a LOCK_RES granted after its LOCK_MSG was forgotten is given back
 * upstream (an UNLOCK, the relay's own call); one client host cannot take
 * more than max_pending_per_client of the table.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
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
#include "gateway/counters/counters.h"
#include "gateway/side/nlm/nlm_async.h"
#include "gateway/side/nlm/nlm_callback.h"
#include "gateway/side/nlm/nlm_relay.h"
#include "gateway/side/rpc/portmap.h"
#include "gateway/side/rpc/side_service.h"

#include "support/loop.h"
#include "support/rpcmsg.h"
#include "support/udp.h"

enum { SERVER = 0x7f000001, LISTEN = 0x7f000002, CLIENT = 0x7f000003 };

static const uint8_t FH[32] = { 9, 8, 7 };

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
	size_t h = gwt_rpc_call_none(b, xid, NLM_PROG, 4, proc), m;
	assert_int_equal(nlm_encode_args(&a, b + h, cap - h, &m), 0);
	return h + m;
}

struct t {
	struct event_base *base;
	struct gw_route route;
	struct gw_counters counters;
	struct nlm_relay *rl;
	struct nlm_callback *cb;
	struct nlm_async *as;
	uint16_t pmap_port;
	uint32_t client_called; /* the gateway's address the client's calls go to (0: not known) */
	int server, cpmap, clockd; /* the server's socket; the client's portmapper, lockd */
	uint16_t clockd_port;
	struct nlm_owner_id up; /* the upstream owner of the client's (42, "own") */
	bool client_answers;
	uint32_t client_getports; /* GETPORTs the client's portmapper received */
	int32_t client_saw_svid;
	char client_saw_oh[16];
	uint32_t client_saw_from;
	uint32_t client_saw_proc, client_saw_stat;
	char client_saw_cookie[16];
	/* The last call the relay sent upstream of its own (a give-back). */
	uint32_t own_calls, own_proc;
	uint8_t own_msg[1024];
	struct nlm_args own;
};

/* The relay's send: the call decoded into t->own (its views into t->own_msg). */
static bool own_sent(void *arg, const uint8_t *msg, size_t len)
{
	struct t *t = arg;
	struct rpc_call_hdr h;

	assert_true(len <= sizeof(t->own_msg));
	memcpy(t->own_msg, msg, len);
	assert_int_equal(rpc_call_decode(t->own_msg, len, &h), RPC_HDR_CALL);
	t->own_calls++;
	t->own_proc = h.proc;
	if (h.proc == NLMPROC_UNLOCK)
		assert_int_equal(nlm_decode_args(h.vers, h.proc, t->own_msg + h.args_off,
						 len - h.args_off, &t->own),
				 0);
	return true;
}

/*
 * A client's @proc (xid @xid, for (42, "own"), cookie "cb") through the
 * relay's call hook, as from @ip:800: the verdict, what goes upstream in
 * @out (*@n bytes), and its arguments in @up (their views into @out).
 */
static enum side_relay_verdict client_call(struct t *t, uint32_t ip, uint32_t xid, uint32_t proc,
					   uint8_t *out, size_t cap, size_t *n, struct nlm_args *up)
{
	uint8_t msg[512];
	size_t len = nlm_call(msg, sizeof(msg), xid, proc, 42,
			      (struct nlm_bytes){ (const uint8_t *)"own", 3 });
	struct side_service_peer p = gwt_side_peer(ip, 800);
	struct rpc_call_hdr h;

	if (t->client_called) {
		struct sockaddr_in l = gwt_sin(t->client_called, 0);
		memcpy(&p.local, &l, sizeof(l));
	}

	assert_int_equal(rpc_call_decode(msg, len, &h), RPC_HDR_CALL);
	enum side_relay_verdict v = nlm_relay_call_hook(t->rl, &p, &h, msg, len, out, cap, n);
	if (v == SIDE_RELAY_REWRITTEN)
		assert_int_equal(nlm_decode_args(4, proc, out + 40, *n - 40, up), 0);
	return v;
}

/* A client's @proc (a _MSG) as client_call() makes it, xid 5. */
static enum side_relay_verdict client_msg(struct t *t, uint32_t ip, uint32_t proc, uint8_t *out,
					  size_t cap, struct nlm_args *up)
{
	size_t n;

	return client_call(t, ip, 5, proc, out, cap, &n, up);
}

/* Its upstream owner (from @up) is the one the server names back: t->up. */
static void upstream_owner(struct t *t, const struct nlm_args *up)
{
	t->up.svid = up->lock.svid;
	memcpy(t->up.oh, up->lock.oh.p, NLM_TOKEN_LEN);
}

/* The gateway's view: a LOCK from the client went through the call hook. */
static void client_locked(struct t *t)
{
	uint8_t out[1024];
	struct nlm_args up;

	assert_int_equal(client_msg(t, CLIENT, NLMPROC_LOCK, out, sizeof(out), &up),
			 SIDE_RELAY_REWRITTEN);
	upstream_owner(t, &up);
}

/* The fake client's lockd took a _RES call: what it saw, and the empty reply. */
static void client_took_res(struct t *t, const struct rpc_call_hdr *h, const uint8_t *b, size_t r,
			    const struct sockaddr_in *from, socklen_t fl)
{
	struct nlm_testres res;
	uint8_t out[64];

	assert_int_equal(nlm_decode_testres(4, b + h->args_off, r - h->args_off, &res), 0);
	t->client_saw_stat = res.stat;
	memcpy(t->client_saw_cookie, res.cookie.p, res.cookie.len < 15 ? res.cookie.len : 15);
	if (res.stat == NLM_DENIED && h->proc == NLMPROC_TEST_RES) {
		t->client_saw_svid = res.holder.svid;
		memcpy(t->client_saw_oh, res.holder.oh.p,
		       res.holder.oh.len < 15 ? res.holder.oh.len : 15);
	}
	size_t n = rpc_encode_accept_error(out, sizeof(out), h->xid, 0, 0, 0);
	sendto(t->clockd, out, n, 0, (const struct sockaddr *)from, fl);
}

/* The fake client host: its portmapper gives the lockd port, its lockd grants. */
static void client_serve(void *arg)
{
	struct t *t = arg;
	uint8_t b[2048], out[256];
	struct sockaddr_in from;
	socklen_t fl = sizeof(from);
	ssize_t r = recvfrom(t->cpmap, b, sizeof(b), 0, (struct sockaddr *)&from, &fl);
	struct rpc_call_hdr h;
	struct nlm_args a;

	if (r > 0)
		t->client_getports++;
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
	t->client_saw_proc = h.proc;
	t->client_saw_from = ntohl(from.sin_addr.s_addr);
	if (nlm_async_is_res(h.proc)) {
		client_took_res(t, &h, b, (size_t)r, &from, fl);
		return;
	}
	assert_int_equal(h.proc, NLMPROC_GRANTED);
	assert_int_equal(nlm_decode_args(4, h.proc, b + h.args_off, (size_t)r - h.args_off, &a), 0);
	t->client_saw_svid = a.lock.svid;
	memcpy(t->client_saw_oh, a.lock.oh.p, a.lock.oh.len < 15 ? a.lock.oh.len : 15);
	t->client_saw_from = ntohl(from.sin_addr.s_addr);
	size_t n = rpc_encode_accept_error(out, sizeof(out), h.xid, 0, 0, 0);
	n += gwt_nlm_res(out + n, "cb", 2, NLM_GRANTED); /* the cookie, as its lockd echoes it */
	sendto(t->clockd, out, n, 0, (struct sockaddr *)&from, fl);
}

/* The server sends @msg to @port and waits @ms for the reply: its bytes' count, 0 for none. */
static size_t server_call(struct t *t, uint16_t port, const uint8_t *msg, size_t len,
			  uint8_t *reply, size_t cap, unsigned int ms)
{
	struct sockaddr_in to = gwt_sin(SERVER, port);

	return gwt_udp_ask(t->base, t->server, &to, msg, len, reply, cap, ms, client_serve, t);
}

/* The callback service of t->route (its listen address: where calls to clients leave from). */
static void start_cb(struct t *t)
{
	char err[256];
	struct sockaddr_in srv = gwt_sin(SERVER, 0);
	struct nlm_callback_config cc = { .route = &t->route,
					  .counters = &t->counters,
					  .relay = t->rl,
					  .pmap_port = t->pmap_port,
					  .retry_ms = 100,
					  .timeout_ms = 400,
					  .async = t->as };

	t->cb = nlm_callback_start(t->base, &cc, (struct sockaddr *)&srv, sizeof(srv), err,
				   sizeof(err));
	assert_non_null(t->cb);
	assert_true(nlm_callback_advertised(t->cb));
}

/* @max_pending 0: the module's default limits (64, 16 per client); each stage @timeout_ms. */
static int setup_with(void **state, uint32_t max_pending, uint32_t timeout_ms)
{
	struct t *t = calloc(1, sizeof(*t));
	char err[256];

	t->base = event_base_new();
	t->route.name = "t";
	struct sockaddr_in l = gwt_sin(LISTEN, 2049);
	memcpy(&t->route.listen.addr, &l, sizeof(l));
	t->route.listen.addrlen = sizeof(l);
	/* A port free on both the server's and the client's address, for the portmappers. */
	int pmaps[2];
	assert_int_equal(
		gwt_udp_bind_common((const uint32_t[]){ SERVER, CLIENT }, 2, pmaps, &t->pmap_port),
		0);
	close(pmaps[0]);
	t->cpmap = pmaps[1];
	t->clockd = gwt_udp_bind(CLIENT, 0, &t->clockd_port);
	t->server = gwt_udp_bind(SERVER, 0, NULL);
	struct nlm_relay_config rc = { .route_name = "t",
				       .caller_name = "gw",
				       .counters = &t->counters };
	t->rl = nlm_relay_new(&rc);
	assert_non_null(t->rl);
	nlm_relay_set_send(t->rl, own_sent, t);
	struct nlm_async_config ac = { .route = &t->route,
				       .counters = &t->counters,
				       .relay = t->rl,
				       .pmap_port = t->pmap_port,
				       .max_pending = max_pending,
				       .retry_ms = 100,
				       .timeout_ms = timeout_ms };
	t->as = nlm_async_new(t->base, &ac, err, sizeof(err));
	assert_non_null(t->as);
	nlm_relay_set_async(t->rl, t->as);
	start_cb(t);
	t->client_answers = true;
	*state = t;
	return 0;
}

static int setup(void **state)
{
	return setup_with(state, 2, 400);
}

static int setup_default_limits(void **state)
{
	return setup_with(state, 0, 400);
}

/* Default limits, and stages long enough for every GETPORT a result may send. */
static int setup_default_limits_slow(void **state)
{
	return setup_with(state, 0, 3000);
}

static int teardown(void **state)
{
	struct t *t = *state;

	nlm_callback_stop(t->cb);
	nlm_async_free(t->as);
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
	struct sockaddr_in to = gwt_sin(SERVER, t->pmap_port);
	int port = gwt_pmap_getport(t->base, t->server, &to, 7, NLM_PROG, 4, PMAP_IPPROTO_UDP, 1000,
				    client_serve, t);

	assert_int_equal(port, nlm_callback_port(t->cb));
	return (uint16_t)port;
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
	size_t n = server_call(t, cb_port(t), msg, len, r, sizeof(r), 2000);
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
	size_t n = server_call(t, cb_port(t), msg, len, r, sizeof(r), 2000);
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
	size_t n = server_call(t, port, msg, len, r, sizeof(r), 3000);
	assert_int_equal(reply_stat(r, n), NLM_DENIED);
	assert_true(gw_now_us() - t0 >= 350000);
	assert_int_equal(nlm_callback_stats(t->cb)->timed_out, 1);
	assert_int_equal(nlm_callback_pending(t->cb), 0);
}

/*
 * A route on the wildcard address: the client's GRANTED leaves from the
 * address the client's LOCK was sent to (127.0.0.4 here), not from the one
 * the kernel would choose toward it (127.0.0.1).
 */
static void test_granted_leaves_from_the_address_the_client_called(void **state)
{
	struct t *t = *state;
	uint8_t msg[512], r[512];
	struct sockaddr_in any = gwt_sin(0, 2049);

	nlm_callback_stop(t->cb);
	memcpy(&t->route.listen.addr, &any, sizeof(any));
	start_cb(t);
	t->client_called = 0x7f000004;
	client_locked(t);
	size_t len = nlm_call(msg, sizeof(msg), 83, NLMPROC_GRANTED, t->up.svid,
			      (struct nlm_bytes){ t->up.oh, NLM_TOKEN_LEN });
	size_t n = server_call(t, cb_port(t), msg, len, r, sizeof(r), 2000);
	assert_int_equal(reply_stat(r, n), NLM_GRANTED);
	assert_int_equal(t->client_saw_svid, 42);
	assert_int_equal(t->client_saw_from, 0x7f000004);
}

/* The route's NLM relay in the test: counts what reaches it as a client's call. */
static void relay_on_msg(void *arg, struct side_service *svc, const struct side_service_peer *peer,
			 const uint8_t *msg, size_t len)
{
	(void)svc;
	(void)peer;
	(void)msg;
	(void)len;
	(*(unsigned *)arg)++;
}

/*
 * A route whose NLM relay is what the server finds (a wildcard route
 * registered with the host's rpcbind): the server's GRANTED to the
 * relay's port is taken by the callback module (nlm_callback_take(), the
 * relay's divert), relayed to the client and answered through the relay's
 * service, even with the server outside allowed_clients; the server
 * host's own LOCK is left to the relay, where allowed_clients judge it.
 */
static void test_granted_through_the_routes_relay(void **state)
{
	struct t *t = *state;
	uint8_t msg[512], r[512];
	unsigned relayed = 0;
	struct gw_cidr only = { .family = AF_INET, .prefix_len = 32 };
	struct sockaddr_in at = gwt_sin(LISTEN, 0), srv = gwt_sin(SERVER, 0);
	struct side_service_config sc = { .name = "nlm",
					  .route = &t->route,
					  .counters = &t->counters,
					  .max_msg = 4096,
					  .max_conns = 4,
					  .idle_ms = 5000,
					  .max_output = 4096,
					  .on_msg = relay_on_msg,
					  .arg = &relayed };
	struct side_service *svc =
		side_service_start(t->base, (struct sockaddr *)&at, sizeof(at), &sc);

	assert_non_null(svc);
	only.addr.v4.s_addr = htonl(CLIENT);
	t->route.allowed_clients = &only;
	t->route.allowed_clients_count = 1;
	side_service_divert(svc, (struct sockaddr *)&srv, sizeof(srv), nlm_callback_take, t->cb);
	client_locked(t);
	size_t len = nlm_call(msg, sizeof(msg), 81, NLMPROC_GRANTED, t->up.svid,
			      (struct nlm_bytes){ t->up.oh, NLM_TOKEN_LEN });
	struct sockaddr_in to = gwt_sin(LISTEN, side_service_port(svc));
	size_t n =
		gwt_udp_ask(t->base, t->server, &to, msg, len, r, sizeof(r), 2000, client_serve, t);
	assert_int_equal(xdr_get32(r), 81);
	assert_int_equal(reply_stat(r, n), NLM_GRANTED);
	assert_int_equal(t->client_saw_svid, 42);
	assert_int_equal(t->client_saw_from, LISTEN);
	assert_int_equal(nlm_callback_stats(t->cb)->granted, 1);
	assert_int_equal(relayed, 0);
	/* A LOCK from the server's host is not the callback module's: refused as a client. */
	len = nlm_call(msg, sizeof(msg), 82, NLMPROC_LOCK, 7,
		       (struct nlm_bytes){ (const uint8_t *)"srv", 3 });
	sendto(t->server, msg, len, 0, (struct sockaddr *)&to, sizeof(to));
	gwt_spin_for(t->base, 100, NULL, NULL);
	assert_int_equal(relayed, 0);
	assert_int_equal(t->counters.events[GW_EV_REFUSED_CLIENT], 1);
	/* Allowed, the server's host reaches the relay as any client does. */
	t->route.allowed_clients = NULL;
	t->route.allowed_clients_count = 0;
	sendto(t->server, msg, len, 0, (struct sockaddr *)&to, sizeof(to));
	gwt_spin_for(t->base, 100, NULL, NULL);
	assert_int_equal(relayed, 1);
	side_service_stop(svc);
}

/* Only the server may call back: a GRANTED from elsewhere is dropped. */
static void test_call_not_from_the_server_dropped(void **state)
{
	struct t *t = *state;
	uint8_t msg[512];
	struct sockaddr_in to = gwt_sin(SERVER, 0);

	client_locked(t);
	to.sin_port = htons(cb_port(t));
	size_t len = nlm_call(msg, sizeof(msg), 80, NLMPROC_GRANTED, t->up.svid,
			      (struct nlm_bytes){ t->up.oh, NLM_TOKEN_LEN });
	int other = gwt_udp_bind(CLIENT, 0, NULL);
	sendto(other, msg, len, 0, (struct sockaddr *)&to, sizeof(to));
	gwt_spin_for(t->base, 100, NULL, NULL);
	close(other);
	assert_int_equal(nlm_callback_stats(t->cb)->not_from_server, 1);
	assert_int_equal(nlm_callback_pending(t->cb), 0);
}

static void test_portmapper_answers_only_the_server(void **state)
{
	struct t *t = *state;
	uint8_t getport[128], dump[64], r[2048];
	size_t gl = pmap_encode_getport(getport, sizeof(getport), 9, NLM_PROG, 4, PMAP_IPPROTO_UDP);
	size_t dl = gwt_rpc_call_none(dump, 10, 100000, 2, 4); /* PMAPPROC_DUMP */
	struct sockaddr_in to = gwt_sin(SERVER, t->pmap_port);
	/* Another host, or a forged source (a reflector's victim): no answer at all. */
	int other = gwt_udp_bind(0x7f000004u, 0, NULL);

	sendto(other, getport, gl, 0, (struct sockaddr *)&to, sizeof(to));
	sendto(other, dump, dl, 0, (struct sockaddr *)&to, sizeof(to));
	assert_false(gwt_spin_until_readable(t->base, other, 200, NULL, NULL));
	assert_int_equal(recv(other, r, sizeof(r), MSG_DONTWAIT), -1);
	close(other);
	assert_int_equal(nlm_callback_stats(t->cb)->not_from_server, 2);
	assert_int_equal(t->counters.events[GW_EV_REFUSED_CLIENT], 2);
	/* The server still finds the callback service. */
	assert_int_not_equal(cb_port(t), 0);
}

/* ---- the clients' _MSG calls -------------------------------------------------- */

/* The server's @proc (a _RES, v4) with @cookie and @stat (and a TEST_RES holder). */
static size_t server_res(uint8_t *b, size_t cap, uint32_t xid, uint32_t proc,
			 struct nlm_bytes cookie, uint32_t stat, const struct nlm_holder *holder)
{
	struct nlm_testres r = { .cookie = cookie, .stat = stat };
	size_t h = gwt_rpc_call_none(b, xid, NLM_PROG, 4, proc), m;

	if (holder)
		r.holder = *holder;
	assert_int_equal(nlm_encode_testres(4, &r, b + h, cap - h, &m), 0);
	return h + m;
}

static void test_lock_msg_result_reaches_the_client(void **state)
{
	struct t *t = *state;
	uint8_t out[1024], msg[512], r[128];
	struct nlm_args up;

	assert_int_equal(client_msg(t, CLIENT, NLMPROC_LOCK_MSG, out, sizeof(out), &up),
			 SIDE_RELAY_REWRITTEN);
	/* Upstream: the gateway's owner and a cookie of its own, not the client's "cb". */
	assert_int_equal(up.lock.oh.len, NLM_TOKEN_LEN);
	assert_int_equal(up.cookie.len, NLM_ASYNC_COOKIE_LEN);
	assert_int_equal(nlm_async_pending(t->as), 1);
	size_t len =
		server_res(msg, sizeof(msg), 90, NLMPROC_LOCK_RES, up.cookie, NLM_GRANTED, NULL);
	size_t n = server_call(t, cb_port(t), msg, len, r, sizeof(r), 1000);
	assert_int_equal(n, 24); /* the empty reply a _RES call gets */
	assert_int_equal(xdr_get32(r), 90);
	gwt_spin_for(t->base, 300, client_serve, t);
	assert_int_equal(t->client_saw_proc, NLMPROC_LOCK_RES);
	assert_int_equal(t->client_saw_stat, NLM_GRANTED);
	assert_string_equal(t->client_saw_cookie, "cb");
	assert_int_equal(t->client_saw_from, LISTEN);
	/* Recorded as a synchronous LOCK's grant is: the client's reboot releases it. */
	assert_int_equal(nlm_state_locks(nlm_relay_state(t->rl)), 1);
	assert_int_equal(nlm_async_stats(t->as)->delivered, 1);
	assert_int_equal(nlm_async_pending(t->as), 0);
}

/* Two clients' equal cookies differ upstream; a result for neither is dropped. */
static void test_res_with_unknown_cookie_dropped(void **state)
{
	struct t *t = *state;
	uint8_t out1[1024], out2[1024], msg[512], r[128];
	struct nlm_args up1, up2;

	assert_int_equal(client_msg(t, CLIENT, NLMPROC_LOCK_MSG, out1, sizeof(out1), &up1),
			 SIDE_RELAY_REWRITTEN);
	assert_int_equal(client_msg(t, LISTEN, NLMPROC_LOCK_MSG, out2, sizeof(out2), &up2),
			 SIDE_RELAY_REWRITTEN);
	assert_memory_not_equal(up1.cookie.p, up2.cookie.p, NLM_ASYNC_COOKIE_LEN);
	uint8_t forged[NLM_ASYNC_COOKIE_LEN];
	memcpy(forged, up1.cookie.p, sizeof(forged));
	forged[7] ^= 1; /* the right slot, another generation */
	size_t len = server_res(msg, sizeof(msg), 91, NLMPROC_LOCK_RES,
				(struct nlm_bytes){ forged, sizeof(forged) }, NLM_GRANTED, NULL);
	server_call(t, cb_port(t), msg, len, r, sizeof(r), 1000);
	/* The right cookie, the wrong procedure. */
	len = server_res(msg, sizeof(msg), 92, NLMPROC_UNLOCK_RES, up1.cookie, NLM_GRANTED, NULL);
	server_call(t, cb_port(t), msg, len, r, sizeof(r), 1000);
	gwt_spin_for(t->base, 200, client_serve, t);
	assert_int_equal(t->client_saw_proc, 0);
	assert_int_equal(nlm_async_stats(t->as)->unknown_cookie, 2);
	assert_int_equal(nlm_state_locks(nlm_relay_state(t->rl)), 0);
	assert_int_equal(nlm_async_pending(t->as), 2);
}

/* A TEST_RES whose holder is the asking client's own owner shows it as the client's. */
static void test_test_res_holder_is_the_clients_own(void **state)
{
	struct t *t = *state;
	uint8_t out[1024], msg[512], r[128];
	struct nlm_args up;

	client_locked(t);
	assert_int_equal(client_msg(t, CLIENT, NLMPROC_TEST_MSG, out, sizeof(out), &up),
			 SIDE_RELAY_REWRITTEN);
	struct nlm_holder h = { .exclusive = true,
				.svid = t->up.svid,
				.oh = { t->up.oh, NLM_TOKEN_LEN } };
	size_t len = server_res(msg, sizeof(msg), 93, NLMPROC_TEST_RES, up.cookie, NLM_DENIED, &h);
	server_call(t, cb_port(t), msg, len, r, sizeof(r), 1000);
	gwt_spin_for(t->base, 300, client_serve, t);
	assert_int_equal(t->client_saw_proc, NLMPROC_TEST_RES);
	assert_int_equal(t->client_saw_stat, NLM_DENIED);
	assert_int_equal(t->client_saw_svid, 42);
	assert_string_equal(t->client_saw_oh, "own");
}

/*
 * Linux lockd's v4 TEST_RES with a holder leaves out its last word, l_len
 * (encode_nlm4_holder reserves 8 bytes for two hypers): taken as length 0,
 * and the client gets a whole TEST_RES.
 */
static void test_linux_short_test_res_taken(void **state)
{
	struct t *t = *state;
	uint8_t out[1024], msg[512], r[128];
	struct nlm_args up;

	assert_int_equal(client_msg(t, CLIENT, NLMPROC_TEST_MSG, out, sizeof(out), &up),
			 SIDE_RELAY_REWRITTEN);
	struct nlm_holder h = { .svid = -173, .offset = 0, .len = 0 };
	size_t len = server_res(msg, sizeof(msg), 96, NLMPROC_TEST_RES, up.cookie, NLM_DENIED, &h);
	size_t n = server_call(t, cb_port(t), msg, len - 8, r, sizeof(r), 1000);
	assert_int_equal(n, 24);
	assert_int_equal(xdr_get32(r + 20), RPCSTAT_SUCCESS);
	gwt_spin_for(t->base, 300, client_serve, t);
	assert_int_equal(t->client_saw_proc, NLMPROC_TEST_RES);
	assert_int_equal(t->client_saw_stat, NLM_DENIED);
	assert_int_equal(t->client_saw_svid, -173);
	assert_int_equal(nlm_async_stats(t->as)->delivered, 1);
}

/* Only the server's results count: the same LOCK_RES from the client's host is dropped. */
static void test_res_not_from_the_server_dropped(void **state)
{
	struct t *t = *state;
	uint8_t out[1024], msg[512];
	struct nlm_args up;
	struct sockaddr_in to = gwt_sin(SERVER, 0);

	assert_int_equal(client_msg(t, CLIENT, NLMPROC_LOCK_MSG, out, sizeof(out), &up),
			 SIDE_RELAY_REWRITTEN);
	to.sin_port = htons(cb_port(t));
	size_t len =
		server_res(msg, sizeof(msg), 94, NLMPROC_LOCK_RES, up.cookie, NLM_GRANTED, NULL);
	int other = gwt_udp_bind(CLIENT, 0, NULL);
	sendto(other, msg, len, 0, (struct sockaddr *)&to, sizeof(to));
	gwt_spin_for(t->base, 100, client_serve, t);
	close(other);
	assert_int_equal(t->client_saw_proc, 0);
	assert_int_equal(nlm_state_locks(nlm_relay_state(t->rl)), 0);
	assert_int_equal(nlm_callback_stats(t->cb)->not_from_server, 1);
}

/* max_pending (2 here) _MSG calls at once; then SYSTEM_ERR; a result never sent is forgotten. */
static void test_table_bounded_and_entries_expire(void **state)
{
	struct t *t = *state;
	uint8_t out[1024];
	struct nlm_args up;

	assert_int_equal(client_msg(t, CLIENT, NLMPROC_LOCK_MSG, out, sizeof(out), &up),
			 SIDE_RELAY_REWRITTEN);
	assert_int_equal(client_msg(t, CLIENT, NLMPROC_UNLOCK_MSG, out, sizeof(out), &up),
			 SIDE_RELAY_REWRITTEN);
	assert_int_equal(client_msg(t, CLIENT, NLMPROC_TEST_MSG, out, sizeof(out), &up),
			 SIDE_RELAY_ANSWERED);
	assert_int_equal(xdr_get32(out + 20), RPCSTAT_SYSTEM_ERR);
	assert_int_equal(nlm_async_stats(t->as)->full, 1);
	gwt_spin_for(t->base, 600, client_serve, t); /* timeout_ms 400 */
	assert_int_equal(nlm_async_pending(t->as), 0);
	assert_int_equal(nlm_async_stats(t->as)->timed_out, 2);
	assert_int_equal(client_msg(t, CLIENT, NLMPROC_TEST_MSG, out, sizeof(out), &up),
			 SIDE_RELAY_REWRITTEN);
}

/*
 * An UNLOCK_MSG of an owner the relay does not know is relayed, not answered
 * on the spot as a synchronous UNLOCK is: only the server's UNLOCK_RES can
 * give the client the result it waits for.
 */
static void test_unlock_msg_of_unknown_owner_relayed(void **state)
{
	struct t *t = *state;
	uint8_t out[1024];
	struct nlm_args up;

	assert_int_equal(client_msg(t, CLIENT, NLMPROC_UNLOCK_MSG, out, sizeof(out), &up),
			 SIDE_RELAY_REWRITTEN);
	assert_int_equal(up.cookie.len, NLM_ASYNC_COOKIE_LEN);
	assert_int_equal(nlm_async_pending(t->as), 1);
}

/* A client's _RES answers nothing the gateway asked: the empty reply, counted, dropped. */
static void test_res_from_a_client_dropped(void **state)
{
	struct t *t = *state;
	uint8_t msg[512], out[128];
	size_t len = server_res(msg, sizeof(msg), 95, NLMPROC_GRANTED_RES,
				(struct nlm_bytes){ (const uint8_t *)"cb", 2 }, NLM_GRANTED, NULL),
	       n;
	struct side_service_peer p = gwt_side_peer(CLIENT, 800);
	struct rpc_call_hdr h;

	assert_int_equal(rpc_call_decode(msg, len, &h), RPC_HDR_CALL);
	assert_int_equal(nlm_relay_call_hook(t->rl, &p, &h, msg, len, out, sizeof(out), &n),
			 SIDE_RELAY_ANSWERED);
	assert_int_equal(n, 24);
	assert_int_equal(xdr_get32(out + 20), RPCSTAT_SUCCESS);
	assert_int_equal(nlm_async_stats(t->as)->from_client, 1);
}

/*
 * A blocked lock whose GRANTED the client never answers: the server is told
 * DENIED and unlocks it, and the relay's record of it goes too.
 */
static void test_failed_callback_forgets_the_blocked_record(void **state)
{
	struct t *t = *state;
	uint8_t msg[512], r[512], up[1024], rep[64], back[1024];
	size_t len, n;
	struct nlm_args upa;

	/* The client's LOCK, answered BLOCKED by the server: recorded. */
	assert_int_equal(client_call(t, CLIENT, 6, NLMPROC_LOCK, up, sizeof(up), &n, &upa),
			 SIDE_RELAY_REWRITTEN);
	upstream_owner(t, &upa);
	struct relay_call c = { .used = true,
				.peer = gwt_side_peer(CLIENT, 800),
				.vers = 4,
				.proc = NLMPROC_LOCK,
				.msg = up,
				.len = (uint32_t)n };
	size_t rh = rpc_encode_accept_error(rep, sizeof(rep), 7, RPCSTAT_SUCCESS, 0, 0);
	rh += gwt_nlm_res(rep + rh, "cb", 2, NLM_BLOCKED);
	nlm_relay_reply_hook(t->rl, &c, rep, rh, back, sizeof(back), &n);
	assert_int_equal(nlm_state_locks(nlm_relay_state(t->rl)), 1);

	/* Its GRANTED goes unanswered: DENIED to the server, the record gone. */
	t->client_answers = false;
	len = nlm_call(msg, sizeof(msg), 81, NLMPROC_GRANTED, t->up.svid,
		       (struct nlm_bytes){ t->up.oh, NLM_TOKEN_LEN });
	n = server_call(t, cb_port(t), msg, len, r, sizeof(r), 3000);
	assert_int_equal(reply_stat(r, n), NLM_DENIED);
	assert_int_equal(nlm_state_locks(nlm_relay_state(t->rl)), 0);
}

/*
 * A LOCK_MSG from the client, left unanswered past the async table's
 * timeout (timeout_ms 400: forgotten); its cookie upstream in @cookie, its
 * upstream arguments in @up, pointing into @out (the caller's).
 */
static void lock_msg_timed_out(struct t *t, uint8_t cookie[NLM_ASYNC_COOKIE_LEN],
			       struct nlm_args *up, uint8_t out[1024])
{
	assert_int_equal(client_msg(t, CLIENT, NLMPROC_LOCK_MSG, out, 1024, up),
			 SIDE_RELAY_REWRITTEN);
	memcpy(cookie, up->cookie.p, NLM_ASYNC_COOKIE_LEN);
	gwt_spin_for(t->base, 600, client_serve, t);
}

/*
 * A LOCK_MSG whose LOCK_RES (granted) comes after the gateway forgot it:
 * the server holds a lock nothing records, so it is given back - an
 * UNLOCK of that upstream owner, file and range, with the gateway's name -
 * and the client is told nothing. The same result again gives nothing
 * back twice.
 */
static void test_late_lock_res_given_back(void **state)
{
	struct t *t = *state;
	uint8_t out[1024], msg[512], r[128], cookie[NLM_ASYNC_COOKIE_LEN];
	struct nlm_args up;

	lock_msg_timed_out(t, cookie, &up, out);
	assert_int_equal(nlm_async_pending(t->as), 0);
	assert_int_equal(nlm_async_stats(t->as)->timed_out, 1);
	assert_int_equal(t->own_calls, 0);

	size_t len = server_res(msg, sizeof(msg), 97, NLMPROC_LOCK_RES,
				(struct nlm_bytes){ cookie, sizeof(cookie) }, NLM_GRANTED, NULL);
	size_t n = server_call(t, cb_port(t), msg, len, r, sizeof(r), 1000);
	assert_int_equal(n, 24); /* the server's call still gets its empty reply */
	gwt_spin_for(t->base, 200, client_serve, t);
	assert_int_equal(t->own_calls, 1);
	assert_int_equal(t->own_proc, NLMPROC_UNLOCK);
	assert_int_equal(t->own.lock.svid, up.lock.svid);
	assert_memory_equal(t->own.lock.oh.p, up.lock.oh.p, NLM_TOKEN_LEN);
	assert_int_equal(t->own.lock.fh.len, sizeof(FH));
	assert_memory_equal(t->own.lock.fh.p, FH, sizeof(FH));
	assert_true(t->own.lock.offset == up.lock.offset && t->own.lock.len == up.lock.len);
	assert_int_equal(t->own.lock.caller.len, 2);
	assert_memory_equal(t->own.lock.caller.p, "gw", 2);
	assert_int_equal(nlm_async_stats(t->as)->late_given_back, 1);
	assert_int_equal(t->client_saw_proc, 0);
	assert_int_equal(nlm_state_locks(nlm_relay_state(t->rl)), 0);

	/* The server resends it: nothing more to give back, dropped. */
	server_call(t, cb_port(t), msg, len, r, sizeof(r), 1000);
	gwt_spin_for(t->base, 100, client_serve, t);
	assert_int_equal(t->own_calls, 1);
	assert_int_equal(nlm_async_stats(t->as)->unknown_cookie, 1);
	assert_int_equal(t->client_saw_proc, 0);
}

/* A late LOCK_RES that refused the lock holds nothing: nothing to give back. */
static void test_late_lock_res_denied_gives_nothing_back(void **state)
{
	struct t *t = *state;
	uint8_t out[1024], msg[512], r[128], cookie[NLM_ASYNC_COOKIE_LEN];
	struct nlm_args up;

	lock_msg_timed_out(t, cookie, &up, out);
	size_t len =
		server_res(msg, sizeof(msg), 98, NLMPROC_LOCK_RES,
			   (struct nlm_bytes){ cookie, sizeof(cookie) }, NLM_DENIED_NOLOCKS, NULL);
	server_call(t, cb_port(t), msg, len, r, sizeof(r), 1000);
	gwt_spin_for(t->base, 100, client_serve, t);
	assert_int_equal(t->own_calls, 0);
	assert_int_equal(nlm_async_stats(t->as)->late_given_back, 0);
	assert_int_equal(nlm_async_stats(t->as)->unknown_cookie, 1);
	assert_int_equal(t->client_saw_proc, 0);
}

/*
 * A LOCK_MSG then sent again by the client after the first timed out (its
 * cookie in @first; the second's upstream arguments in @up).
 */
static void lock_msg_sent_again(struct t *t, uint8_t first[NLM_ASYNC_COOKIE_LEN],
				struct nlm_args *up, uint8_t out[1024])
{
	lock_msg_timed_out(t, first, up, out);
	assert_int_equal(client_msg(t, CLIENT, NLMPROC_LOCK_MSG, out, 1024, up),
			 SIDE_RELAY_REWRITTEN);
}

/*
 * The client sent its LOCK_MSG again after the first went unanswered: the
 * first's late LOCK_RES is not given back (the UNLOCK could take away the
 * lock the second's result gives the client); the second's result is
 * recorded and reaches the client.
 */
static void test_late_lock_res_kept_while_a_resend_is_pending(void **state)
{
	struct t *t = *state;
	uint8_t out[1024], msg[512], r[128], first[NLM_ASYNC_COOKIE_LEN];
	struct nlm_args up;

	lock_msg_sent_again(t, first, &up, out);
	size_t len = server_res(msg, sizeof(msg), 99, NLMPROC_LOCK_RES,
				(struct nlm_bytes){ first, sizeof(first) }, NLM_GRANTED, NULL);
	server_call(t, cb_port(t), msg, len, r, sizeof(r), 1000);
	gwt_spin_for(t->base, 100, client_serve, t);
	assert_int_equal(t->own_calls, 0);
	assert_int_equal(nlm_async_stats(t->as)->late_given_back, 0);
	len = server_res(msg, sizeof(msg), 100, NLMPROC_LOCK_RES, up.cookie, NLM_GRANTED, NULL);
	server_call(t, cb_port(t), msg, len, r, sizeof(r), 1000);
	gwt_spin_for(t->base, 300, client_serve, t);
	assert_int_equal(t->client_saw_proc, NLMPROC_LOCK_RES);
	assert_int_equal(t->client_saw_stat, NLM_GRANTED);
	assert_int_equal(nlm_state_locks(nlm_relay_state(t->rl)), 1);
	assert_int_equal(t->own_calls, 0);
}

/*
 * The resend was answered and taken before the first LOCK_MSG's late
 * LOCK_RES came: the owner holds the lock, so the late one must not be
 * given back (its UNLOCK would free the client's lock on the server).
 */
static void test_late_lock_res_kept_when_the_owner_holds_the_file(void **state)
{
	struct t *t = *state;
	uint8_t out[1024], msg[512], r[128], first[NLM_ASYNC_COOKIE_LEN];
	struct nlm_args up;

	lock_msg_sent_again(t, first, &up, out);
	size_t len =
		server_res(msg, sizeof(msg), 100, NLMPROC_LOCK_RES, up.cookie, NLM_GRANTED, NULL);
	server_call(t, cb_port(t), msg, len, r, sizeof(r), 1000);
	gwt_spin_for(t->base, 300, client_serve, t);
	assert_int_equal(t->client_saw_stat, NLM_GRANTED);
	assert_int_equal(nlm_state_locks(nlm_relay_state(t->rl)), 1);
	len = server_res(msg, sizeof(msg), 99, NLMPROC_LOCK_RES,
			 (struct nlm_bytes){ first, sizeof(first) }, NLM_GRANTED, NULL);
	server_call(t, cb_port(t), msg, len, r, sizeof(r), 1000);
	gwt_spin_for(t->base, 100, client_serve, t);
	assert_int_equal(t->own_calls, 0);
	assert_int_equal(nlm_async_stats(t->as)->late_given_back, 0);
	assert_int_equal(nlm_state_locks(nlm_relay_state(t->rl)), 1);
}

/*
 * Default limits (64 pending, 16 per client host). A client whose
 * portmapper never answers sends 64 LOCK_MSGs, all answered by the server:
 * 16 are held (waiting for its portmapper), 48 refused with SYSTEM_ERR as
 * for a full table; another client's LOCK_MSG is still relayed.
 */
static void test_one_client_cannot_take_the_table(void **state)
{
	struct t *t = *state;
	uint8_t out[1024], msg[512], r[128];
	struct nlm_args up;
	uint32_t relayed = 0;
	uint16_t port = cb_port(t);

	t->client_answers = false;
	for (uint32_t i = 0; i < 64; i++) {
		enum side_relay_verdict v =
			client_msg(t, CLIENT, NLMPROC_LOCK_MSG, out, sizeof(out), &up);
		if (v != SIDE_RELAY_REWRITTEN) {
			assert_int_equal(v, SIDE_RELAY_ANSWERED);
			assert_int_equal(xdr_get32(out + 20), RPCSTAT_SYSTEM_ERR);
			continue;
		}
		relayed++;
		size_t len = server_res(msg, sizeof(msg), 100 + i, NLMPROC_LOCK_RES, up.cookie,
					NLM_DENIED_NOLOCKS, NULL);
		assert_int_equal(server_call(t, port, msg, len, r, sizeof(r), 1000), 24);
		assert_int_equal(xdr_get32(r + 20), RPCSTAT_SUCCESS);
	}
	assert_int_equal(relayed, 16);
	assert_int_equal(nlm_async_stats(t->as)->refused_client_cap, 48);
	assert_int_equal(nlm_async_stats(t->as)->full, 0);
	assert_int_equal(nlm_async_pending(t->as), 16);
	gwt_spin_for(t->base, 100, client_serve,
		     t); /* its 16 results wait at its silent portmapper */
	assert_int_equal(nlm_async_pending(t->as), 16);
	assert_int_equal(client_msg(t, LISTEN, NLMPROC_LOCK_MSG, out, sizeof(out), &up),
			 SIDE_RELAY_REWRITTEN);
	assert_int_equal(nlm_async_pending(t->as), 17);
}

/* Host @n (0..) of network @net: 127.1.net.n+1, nobody's portmapper. */
static uint32_t forged(uint32_t net, uint32_t n)
{
	return 0x7f010001u + (net << 8) + n;
}

/* The server answers the _MSG of @up on the callback port @port: its result starts out. */
static void server_answers(struct t *t, uint16_t port, uint32_t xid, const struct nlm_args *up)
{
	uint8_t msg[512], r[128];
	size_t len = server_res(msg, sizeof(msg), xid, NLMPROC_LOCK_RES, up->cookie,
				NLM_DENIED_NOLOCKS, NULL);

	assert_int_equal(server_call(t, port, msg, len, r, sizeof(r), 1000), 24);
	assert_int_equal(xdr_get32(r + 20), RPCSTAT_SUCCESS);
}

/*
 * Issue 32 item 4. Forged LOCK_MSGs from four networks' hosts, whose
 * results wait for portmappers that never answer, fill the table (64): a
 * real client's LOCK_MSG still goes, in the place of one of them, and its
 * result reaches it. One network holds at most half of the table.
 */
static void test_forged_hosts_cannot_hold_the_table(void **state)
{
	struct t *t = *state;
	uint8_t out[1024];
	struct nlm_args up;
	uint16_t port = cb_port(t);
	uint32_t xid = 100;

	/* One network: two hosts' 16 each, then a third host of it is refused. */
	for (uint32_t n = 0; n < 3; n++) {
		for (uint32_t i = 0; i < 16; i++) {
			enum side_relay_verdict v = client_msg(t, forged(0, n), NLMPROC_LOCK_MSG,
							       out, sizeof(out), &up);
			if (n == 2) {
				assert_int_equal(v, SIDE_RELAY_ANSWERED);
				assert_int_equal(xdr_get32(out + 20), RPCSTAT_SYSTEM_ERR);
				continue;
			}
			assert_int_equal(v, SIDE_RELAY_REWRITTEN);
			server_answers(t, port, xid++, &up);
		}
	}
	assert_int_equal(nlm_async_stats(t->as)->refused_client_cap, 16);
	/* A second network takes the other half. */
	for (uint32_t n = 0; n < 2; n++) {
		for (uint32_t i = 0; i < 16; i++) {
			assert_int_equal(client_msg(t, forged(1, n), NLMPROC_LOCK_MSG, out,
						    sizeof(out), &up),
					 SIDE_RELAY_REWRITTEN);
			server_answers(t, port, xid++, &up);
		}
	}
	assert_int_equal(nlm_async_pending(t->as), 64);

	/* The real client's call takes a silent host's place, and its result comes. */
	assert_int_equal(client_msg(t, CLIENT, NLMPROC_LOCK_MSG, out, sizeof(out), &up),
			 SIDE_RELAY_REWRITTEN);
	assert_int_equal(nlm_async_stats(t->as)->yielded, 1);
	assert_int_equal(nlm_async_stats(t->as)->full, 0);
	assert_int_equal(nlm_async_pending(t->as), 64);
	server_answers(t, port, xid++, &up);
	gwt_spin_for(t->base, 300, client_serve, t);
	assert_int_equal(t->client_saw_proc, NLMPROC_LOCK_RES);
	assert_int_equal(t->client_saw_stat, NLM_DENIED_NOLOCKS);
	assert_string_equal(t->client_saw_cookie, "cb");
	assert_int_equal(nlm_async_stats(t->as)->delivered, 1);
}

/* GETPORTs a silent portmapper at forged(2, 0) received within @ms. */
static uint32_t getports_seen(struct t *t, int pmap, unsigned int ms)
{
	uint8_t b[256];
	uint32_t n = 0;

	gwt_spin_for(t->base, ms, client_serve, t);
	while (recv(pmap, b, sizeof(b), MSG_DONTWAIT) > 0)
		n++;
	return n;
}

/*
 * A result for a host whose portmapper does not answer costs that host at
 * most three GETPORTs (retry_ms, then twice that, apart), and one while it
 * is known silent; a portmapper that answered is not asked again for the
 * next result.
 */
static void test_getports_bounded_and_remembered(void **state)
{
	struct t *t = *state;
	uint8_t out[1024];
	struct nlm_args up;
	uint16_t port = cb_port(t);
	int silent = gwt_udp_bind(forged(2, 0), t->pmap_port, NULL);

	assert_true(silent > 0);
	assert_int_equal(client_msg(t, forged(2, 0), NLMPROC_LOCK_MSG, out, sizeof(out), &up),
			 SIDE_RELAY_REWRITTEN);
	server_answers(t, port, 200, &up);
	assert_int_equal(getports_seen(t, silent, 1200), 3); /* at 0, 100 and 300 ms */
	assert_int_equal(nlm_async_stats(t->as)->portmapper_silent, 1);
	assert_int_equal(nlm_async_pending(t->as), 0);

	assert_int_equal(client_msg(t, forged(2, 0), NLMPROC_LOCK_MSG, out, sizeof(out), &up),
			 SIDE_RELAY_REWRITTEN);
	server_answers(t, port, 201, &up);
	assert_int_equal(getports_seen(t, silent, 800), 1);
	assert_int_equal(nlm_async_stats(t->as)->portmapper_silent, 2);
	close(silent);

	/* The answering client: one GETPORT for two results. */
	for (uint32_t i = 0; i < 2; i++) {
		assert_int_equal(client_msg(t, CLIENT, NLMPROC_LOCK_MSG, out, sizeof(out), &up),
				 SIDE_RELAY_REWRITTEN);
		server_answers(t, port, 300 + i, &up);
		gwt_spin_for(t->base, 300, client_serve, t);
	}
	assert_int_equal(nlm_async_stats(t->as)->delivered, 2);
	assert_int_equal(t->client_getports, 1);

	/*
	 * Its lockd restarts on another port: the result sent to the port
	 * remembered goes unanswered, the portmapper is asked again after
	 * retry_ms, and the result reaches the new lockd.
	 */
	close(t->clockd);
	t->clockd = gwt_udp_bind(CLIENT, 0, &t->clockd_port);
	assert_int_equal(client_msg(t, CLIENT, NLMPROC_LOCK_MSG, out, sizeof(out), &up),
			 SIDE_RELAY_REWRITTEN);
	server_answers(t, port, 302, &up);
	gwt_spin_for(t->base, 600, client_serve, t);
	assert_int_equal(nlm_async_stats(t->as)->delivered, 3);
	assert_int_equal(t->client_getports, 2);
	assert_int_equal(nlm_async_pending(t->as), 0);
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
		cmocka_unit_test_setup_teardown(test_granted_through_the_routes_relay, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_granted_leaves_from_the_address_the_client_called, setup, teardown),
		cmocka_unit_test_setup_teardown(test_call_not_from_the_server_dropped, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_portmapper_answers_only_the_server, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_lock_msg_result_reaches_the_client, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_res_with_unknown_cookie_dropped, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_test_res_holder_is_the_clients_own, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_res_not_from_the_server_dropped, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_linux_short_test_res_taken, setup, teardown),
		cmocka_unit_test_setup_teardown(test_table_bounded_and_entries_expire, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_res_from_a_client_dropped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unlock_msg_of_unknown_owner_relayed, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_late_lock_res_given_back, setup, teardown),
		cmocka_unit_test_setup_teardown(test_late_lock_res_denied_gives_nothing_back, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_late_lock_res_kept_while_a_resend_is_pending,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_late_lock_res_kept_when_the_owner_holds_the_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_one_client_cannot_take_the_table,
						setup_default_limits, teardown),
		cmocka_unit_test_setup_teardown(test_forged_hosts_cannot_hold_the_table,
						setup_default_limits_slow, teardown),
		cmocka_unit_test_setup_teardown(test_getports_bounded_and_remembered,
						setup_default_limits_slow, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
