/* SPDX-License-Identifier: MIT */
/*
 * The server's SM_NOTIFY (its reboot) relayed to the clients that held
 * locks (gateway/side/nlm/nlm_notify.c, wired into gateway/side/nlm/nlm_callback.c), on
 * loopback: the "server" is 127.0.0.1 (the upstream-side address), the
 * route listens on 127.0.0.2, client host A is 127.0.0.3 and B 127.0.0.4,
 * each with a fake portmapper and statd; A holds a lock through the relay,
 * B holds none. The server finds NSM through the gateway's callback
 * portmapper and sends SM_NOTIFY; A's statd gets one from 127.0.0.2 with
 * mon_name "127.0.0.2" and the server's state, B nothing, and the relay's
 * lock records are gone. A repeat of the same state relays nothing; a
 * notification from another address is dropped; a client that does not
 * answer is given up after the timeout. Each re-send comes from a new port
 * (a reply a director sent to another gateway does not pin the next ones).
 * A route on the wildcard address tells each client from the address its
 * lock call reached (127.0.0.5, 127.0.0.6), and names it.
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

#include "common/xdr.h"
#include "conf/config.h"
#include "gateway/counters/counters.h"
#include "gateway/side/nlm/nlm_callback.h"
#include "gateway/side/nlm/nlm_notify.h"
#include "gateway/side/nlm/nlm_relay.h"
#include "gateway/side/rpc/portmap.h"

#include "support/loop.h"
#include "support/rpcmsg.h"
#include "support/udp.h"

enum {
	SERVER = 0x7f000001,
	LISTEN = 0x7f000002,
	CLIENT_A = 0x7f000003,
	CLIENT_B = 0x7f000004,
	VIA_1 = 0x7f000005, /* addresses of this host a client called a wildcard route at */
	VIA_2 = 0x7f000006,
};

static const uint8_t FH[32] = { 9, 8, 7 };

/* A fake client host: its portmapper gives its statd's port; what the statd saw. */
struct host {
	int pmap, statd;
	uint16_t statd_port;
	bool answers;
	bool ignore_first_getport; /* as if its reply had gone to another gateway */
	int getports;		   /* GETPORTs seen, and the source port of the first 8 */
	uint16_t getport_from[8];
	int notifies;
	uint32_t from;
	char mon_name[64];
	int32_t state;
};

struct t {
	struct event_base *base;
	struct gw_route route;
	struct gw_counters counters;
	struct nlm_relay *rl;
	struct nlm_notify *nt;
	struct nlm_callback *cb;
	uint16_t pmap_port;
	int server;
	struct host a, b;
};

static void host_serve(struct host *c)
{
	uint8_t b[2048], out[256];
	struct sockaddr_in from;
	socklen_t fl = sizeof(from);
	ssize_t r = recvfrom(c->pmap, b, sizeof(b), 0, (struct sockaddr *)&from, &fl);
	struct rpc_call_hdr h;

	if (r > 0 && c->getports < 8)
		c->getport_from[c->getports] = ntohs(from.sin_port);
	if (r > 0 && c->getports++ == 0 && c->ignore_first_getport)
		r = 0;
	if (r > 0 && c->answers) {
		assert_int_equal(rpc_call_decode(b, (size_t)r, &h), RPC_HDR_CALL);
		assert_int_equal(xdr_get32(b + h.args_off), NSM_PROG); /* GETPORT of NSM */
		size_t n = rpc_encode_accept_error(out, sizeof(out), xdr_get32(b), 0, 0, 0);
		xdr_put32(out + n, c->statd_port);
		sendto(c->pmap, out, n + 4, 0, (struct sockaddr *)&from, fl);
	}
	fl = sizeof(from);
	r = recvfrom(c->statd, b, sizeof(b), 0, (struct sockaddr *)&from, &fl);
	if (r <= 0 || !c->answers)
		return;
	assert_int_equal(rpc_call_decode(b, (size_t)r, &h), RPC_HDR_CALL);
	assert_int_equal(h.prog, NSM_PROG);
	assert_int_equal(h.proc, 6);
	uint32_t nl = xdr_get32(b + h.args_off);
	assert_true(nl < sizeof(c->mon_name));
	memcpy(c->mon_name, b + h.args_off + 4, nl);
	c->mon_name[nl] = 0;
	c->state = (int32_t)xdr_get32(b + h.args_off + 4 + xdr_align(nl));
	c->from = ntohl(from.sin_addr.s_addr);
	c->notifies++;
	size_t n = rpc_encode_accept_error(out, sizeof(out), h.xid, 0, 0, 0);
	sendto(c->statd, out, n, 0, (struct sockaddr *)&from, fl);
}

/* Between turns of the loop: both fake hosts answer what came to them. */
static void hosts_serve(void *arg)
{
	struct t *t = arg;

	host_serve(&t->a);
	host_serve(&t->b);
}

/* @fd sends @msg to the server-side address's @port; the reply's length, 0 for none. */
static size_t send_from(struct t *t, int fd, uint16_t port, const uint8_t *msg, size_t len,
			uint8_t *reply, size_t cap)
{
	struct sockaddr_in to = gwt_sin(SERVER, port);

	return gwt_udp_ask(t->base, fd, &to, msg, len, reply, cap, 1000, hosts_serve, t);
}

/*
 * A LOCK from @ip through the relay's hooks, to this host's @via (0:
 * unknown), granted by the server: recorded.
 */
static void client_locked_via(struct t *t, uint32_t ip, uint32_t via)
{
	uint8_t msg[512], out[1024], rep[128];
	struct nlm_args a = {
		.vers = 4,
		.kind = NLM_ARGS_LOCK,
		.cookie = { (const uint8_t *)"ck", 2 },
		.exclusive = true,
		.lock = { .caller = { (const uint8_t *)"host", 4 },
			  .fh = { FH, sizeof(FH) },
			  .oh = { (const uint8_t *)"own", 3 },
			  .svid = 42 },
	};
	size_t h = gwt_rpc_call_none(msg, 5, NLM_PROG, 4, NLMPROC_LOCK), m, n;
	struct side_service_peer p = gwt_side_peer(ip, 800);
	struct rpc_call_hdr ch;

	if (via) {
		struct sockaddr_in l = gwt_sin(via, 4045);
		memcpy(&p.local, &l, sizeof(l));
	}
	assert_int_equal(nlm_encode_args(&a, msg + h, sizeof(msg) - h, &m), 0);
	assert_int_equal(rpc_call_decode(msg, h + m, &ch), RPC_HDR_CALL);
	assert_int_equal(nlm_relay_call_hook(t->rl, &p, &ch, msg, h + m, out, sizeof(out), &n),
			 SIDE_RELAY_REWRITTEN);
	struct relay_call c = { .used = true,
				.peer = p,
				.vers = 4,
				.proc = NLMPROC_LOCK,
				.msg = out,
				.len = (uint32_t)n };
	size_t rh = rpc_encode_accept_error(rep, sizeof(rep), 7, RPCSTAT_SUCCESS, 0, 0);
	rh += gwt_nlm_res(rep + rh, "ck", 2, NLM_GRANTED);
	uint8_t back[1024];
	nlm_relay_reply_hook(t->rl, &c, rep, rh, back, sizeof(back), &n);
}

static void client_locked(struct t *t, uint32_t ip)
{
	client_locked_via(t, ip, 0);
}

/* A fake host on @ip: its portmapper on @pmap, bound, and a statd. */
static void host_open(struct host *c, uint32_t ip, int pmap)
{
	c->pmap = pmap;
	c->statd = gwt_udp_bind(ip, 0, &c->statd_port);
	c->answers = true;
}

/* The route listens on @listen (0: the wildcard address; @v6: [::], dual-stack). */
static int setup_at(void **state, uint32_t listen, bool v6)
{
	struct t *t = calloc(1, sizeof(*t));
	char err[256];
	struct sockaddr_in srv = gwt_sin(SERVER, 0);

	t->base = event_base_new();
	t->route.name = "t";
	struct sockaddr_in l = gwt_sin(listen, 2049);
	struct sockaddr_in6 l6 = { .sin6_family = AF_INET6, .sin6_port = htons(2049) };
	if (v6) {
		memcpy(&t->route.listen.addr, &l6, sizeof(l6));
		t->route.listen.addrlen = sizeof(l6);
	} else {
		memcpy(&t->route.listen.addr, &l, sizeof(l));
		t->route.listen.addrlen = sizeof(l);
	}
	/* A port free on the server's and both clients' addresses, for the portmappers. */
	int pmaps[3];
	assert_int_equal(gwt_udp_bind_common((const uint32_t[]){ SERVER, CLIENT_A, CLIENT_B }, 3,
					     pmaps, &t->pmap_port),
			 0);
	close(pmaps[0]);
	host_open(&t->a, CLIENT_A, pmaps[1]);
	host_open(&t->b, CLIENT_B, pmaps[2]);
	t->server = gwt_udp_bind(SERVER, 0, NULL);
	struct nlm_relay_config rc = { .route_name = "t",
				       .caller_name = "gw",
				       .counters = &t->counters };
	t->rl = nlm_relay_new(&rc);
	assert_non_null(t->rl);
	struct nlm_notify_config nc = { .route = &t->route,
					.counters = &t->counters,
					.relay = t->rl,
					.pmap_port = t->pmap_port,
					.retry_ms = 50,
					.timeout_ms = 1000 };
	t->nt = nlm_notify_start(t->base, &nc, (struct sockaddr *)&srv, sizeof(srv), err,
				 sizeof(err));
	assert_non_null(t->nt);
	struct nlm_callback_config cc = { .route = &t->route,
					  .counters = &t->counters,
					  .relay = t->rl,
					  .pmap_port = t->pmap_port,
					  .notify = t->nt };
	t->cb = nlm_callback_start(t->base, &cc, (struct sockaddr *)&srv, sizeof(srv), err,
				   sizeof(err));
	assert_non_null(t->cb);
	*state = t;
	return 0;
}

static int setup(void **state)
{
	return setup_at(state, LISTEN, false);
}

static int setup_wildcard(void **state)
{
	return setup_at(state, 0, false);
}

static int setup_wildcard6(void **state)
{
	return setup_at(state, 0, true);
}

static int teardown(void **state)
{
	struct t *t = *state;

	nlm_callback_stop(t->cb);
	nlm_notify_stop(t->nt);
	nlm_relay_free(t->rl);
	close(t->server);
	close(t->a.pmap);
	close(t->a.statd);
	close(t->b.pmap);
	close(t->b.statd);
	event_base_free(t->base);
	free(t);
	return 0;
}

/* What the server's sm-notify asks first: NSM over UDP at the gateway's portmapper. */
static uint16_t nsm_port(struct t *t)
{
	struct sockaddr_in to = gwt_sin(SERVER, t->pmap_port);
	int port = gwt_pmap_getport(t->base, t->server, &to, 7, NSM_PROG, 1, PMAP_IPPROTO_UDP, 1000,
				    hosts_serve, t);

	assert_int_equal(port, nlm_callback_port(t->cb));
	return (uint16_t)port;
}

/* SM_NOTIFY("server", @state) from @fd; true when answered with success. */
static bool notify_from(struct t *t, int fd, uint16_t port, uint32_t xid, int32_t state)
{
	uint8_t b[128], r[128];
	size_t n = send_from(t, fd, port, b, gwt_sm_notify_call(b, xid, "server", state), r,
			     sizeof(r));
	return n >= 24 && xdr_get32(r) == xid && xdr_get32(r + 20) == RPCSTAT_SUCCESS;
}

static void test_server_reboot_relayed_to_the_client_with_locks(void **state)
{
	struct t *t = *state;
	struct gw_host ha;
	struct sockaddr_in sa = gwt_sin(CLIENT_A, 0);

	client_locked(t, CLIENT_A);
	assert_true(gw_host_from_sockaddr(&ha, (struct sockaddr *)&sa, sizeof(sa)));
	assert_int_equal(nlm_state_client_locks(nlm_relay_state(t->rl), &ha), 1);
	assert_true(notify_from(t, t->server, nsm_port(t), 90, 5));
	gwt_spin_for(t->base, 300, hosts_serve, t);
	assert_int_equal(t->a.notifies, 1);
	assert_string_equal(t->a.mon_name, "127.0.0.2");
	assert_int_equal(t->a.state, 5);
	assert_int_equal(t->a.from, LISTEN);
	assert_int_equal(t->b.notifies, 0); /* no locks: nothing to reclaim */
	assert_int_equal(nlm_state_locks(nlm_relay_state(t->rl)), 0);
	assert_int_equal(nlm_notify_stats(t->nt)->received, 1);
	assert_int_equal(nlm_notify_stats(t->nt)->delivered, 1);
	assert_int_equal(nlm_notify_pending(t->nt), 0);

	/* A reclaim records the lock again; the same state again relays nothing. */
	client_locked(t, CLIENT_A);
	assert_int_equal(nlm_state_locks(nlm_relay_state(t->rl)), 1);
	assert_true(notify_from(t, t->server, nsm_port(t), 91, 5));
	gwt_spin_for(t->base, 200, hosts_serve, t);
	assert_int_equal(t->a.notifies, 1);
	assert_int_equal(nlm_state_locks(nlm_relay_state(t->rl)), 1);
	assert_int_equal(nlm_notify_stats(t->nt)->repeated, 1);

	/* The next reboot, a new state: told again. */
	assert_true(notify_from(t, t->server, nsm_port(t), 92, 7));
	gwt_spin_for(t->base, 300, hosts_serve, t);
	assert_int_equal(t->a.notifies, 2);
	assert_int_equal(t->a.state, 7);
}

/* Only the server may say it rebooted: from the client's address, dropped. */
static void test_notify_not_from_the_server_dropped(void **state)
{
	struct t *t = *state;
	int other = gwt_udp_bind(CLIENT_B, 0, NULL);

	client_locked(t, CLIENT_A);
	assert_false(notify_from(t, other, nsm_port(t), 93, 9));
	close(other);
	gwt_spin_for(t->base, 100, hosts_serve, t);
	assert_int_equal(t->a.notifies, 0);
	assert_int_equal(nlm_state_locks(nlm_relay_state(t->rl)), 1);
	assert_int_equal(nlm_notify_stats(t->nt)->not_from_server, 1);
	assert_int_equal(nlm_notify_stats(t->nt)->received, 0);
}

static void test_silent_client_given_up_after_timeout(void **state)
{
	struct t *t = *state;

	client_locked(t, CLIENT_A);
	t->a.answers = false;
	assert_true(notify_from(t, t->server, nsm_port(t), 94, 11));
	gwt_spin_for(t->base, 200, hosts_serve, t);
	assert_int_equal(nlm_notify_pending(t->nt), 1); /* still being re-sent */
	gwt_spin_for(t->base, 1300, hosts_serve, t);
	assert_int_equal(nlm_notify_pending(t->nt), 0);
	assert_int_equal(nlm_notify_stats(t->nt)->not_delivered, 1);
	assert_int_equal(nlm_notify_stats(t->nt)->delivered, 0);
}

/*
 * The gateway's own restart: the hosts of the saved list (A and B, neither
 * holding a lock in this instance) are told with the gateway's state, from
 * the listen address, mon_name that address; the relay's records are not
 * touched, and a later server SM_NOTIFY still counts as a new reboot.
 */
static void test_gateway_restart_tells_the_saved_clients(void **state)
{
	struct t *t = *state;
	struct nlm_peer hosts[2] = { 0 };
	struct sockaddr_in sa = gwt_sin(CLIENT_A, 0), sb = gwt_sin(CLIENT_B, 0);

	assert_true(gw_host_from_sockaddr(&hosts[0].host, (struct sockaddr *)&sa, sizeof(sa)));
	assert_true(gw_host_from_sockaddr(&hosts[1].host, (struct sockaddr *)&sb, sizeof(sb)));
	/* The list is a file: B's address called, not the route's, is not taken. */
	struct sockaddr_in v1 = gwt_sin(VIA_1, 0);
	assert_true(gw_host_from_sockaddr(&hosts[1].via, (struct sockaddr *)&v1, sizeof(v1)));
	client_locked(t, CLIENT_A); /* a reclaim already back: stays recorded */
	assert_int_equal(nlm_notify_gateway_restarted(t->nt, hosts, 2, 1234567), 2);
	gwt_spin_for(t->base, 300, hosts_serve, t);
	assert_int_equal(t->a.notifies, 1);
	assert_int_equal(t->b.notifies, 1);
	assert_int_equal(t->a.state, 1234567);
	assert_int_equal(t->b.state, 1234567);
	assert_string_equal(t->b.mon_name, "127.0.0.2");
	assert_int_equal(t->b.from, LISTEN);
	assert_int_equal(nlm_state_locks(nlm_relay_state(t->rl)), 1);
	assert_int_equal(nlm_notify_stats(t->nt)->restart_clients, 2);
	assert_int_equal(nlm_notify_stats(t->nt)->restart_delivered, 2);
	assert_int_equal(nlm_notify_stats(t->nt)->received, 0);
	assert_int_equal(nlm_notify_pending(t->nt), 0);

	/* Bounded: with max_clients 1024, 2000 hosts tell 1024 and count the rest. */
	static struct nlm_peer many[2000];
	for (size_t i = 0; i < 2000; i++)
		many[i] = hosts[i % 2];
	assert_int_equal(nlm_notify_gateway_restarted(t->nt, many, 2000, 1234569), 1024);
	assert_int_equal(nlm_notify_stats(t->nt)->clients_full, 2000 - 1024);
}

/*
 * Behind an IPVS director, a client's reply to the listen address (a
 * virtual one) sent while this gateway was not in the director's table
 * went to another gateway, and the director keeps the pair of ports there:
 * so the re-send comes from a new port. A's portmapper ignores the first
 * GETPORT; the re-send, from another port of the listen address, is
 * answered, and A is told.
 */
static void test_resend_from_a_new_port(void **state)
{
	struct t *t = *state;
	struct nlm_peer host = { 0 };
	struct sockaddr_in sa = gwt_sin(CLIENT_A, 0);

	assert_true(gw_host_from_sockaddr(&host.host, (struct sockaddr *)&sa, sizeof(sa)));
	t->a.ignore_first_getport = true;
	assert_int_equal(nlm_notify_gateway_restarted(t->nt, &host, 1, 1234571), 1);
	gwt_spin_for(t->base, 300, hosts_serve, t);
	assert_true(t->a.getports >= 2);
	assert_int_not_equal(t->a.getport_from[0], t->a.getport_from[1]);
	assert_int_equal(t->a.notifies, 1);
	assert_int_equal(t->a.from, LISTEN);
	assert_int_equal(t->a.state, 1234571);
	assert_int_equal(nlm_notify_stats(t->nt)->restart_delivered, 1);
	assert_int_equal(nlm_notify_pending(t->nt), 0);
}

/*
 * A route on the wildcard address: a client's statd knows its server by
 * the address it mounted, one of this host's several. The server's reboot
 * reaches A from the address its lock call reached, named as mon_name;
 * the gateway's restart tells each saved host from the address saved with
 * it, and one saved without (a list of the previous version), or with an
 * address not this host's, from the address the kernel sends from toward
 * it, named likewise, never "0.0.0.0".
 */
static void test_wildcard_route_notifies_from_the_address_called(void **state)
{
	struct t *t = *state;
	char from[INET_ADDRSTRLEN];

	client_locked_via(t, CLIENT_A, VIA_1);
	assert_true(notify_from(t, t->server, nsm_port(t), 96, 13));
	gwt_spin_for(t->base, 300, hosts_serve, t);
	assert_int_equal(t->a.notifies, 1);
	assert_int_equal(t->a.from, VIA_1);
	assert_string_equal(t->a.mon_name, "127.0.0.5");

	struct nlm_peer hosts[2] = { 0 };
	struct sockaddr_in sa = gwt_sin(CLIENT_A, 0), sb = gwt_sin(CLIENT_B, 0);
	struct sockaddr_in v2 = gwt_sin(VIA_2, 0);
	assert_true(gw_host_from_sockaddr(&hosts[0].host, (struct sockaddr *)&sa, sizeof(sa)));
	assert_true(gw_host_from_sockaddr(&hosts[0].via, (struct sockaddr *)&v2, sizeof(v2)));
	assert_true(gw_host_from_sockaddr(&hosts[1].host, (struct sockaddr *)&sb, sizeof(sb)));
	assert_int_equal(nlm_notify_gateway_restarted(t->nt, hosts, 2, 1234573), 2);
	gwt_spin_for(t->base, 300, hosts_serve, t);
	assert_int_equal(t->a.notifies, 2);
	assert_int_equal(t->a.from, VIA_2);
	assert_string_equal(t->a.mon_name, "127.0.0.6");
	assert_int_equal(t->b.notifies, 1);
	struct in_addr bf = { htonl(t->b.from) };
	assert_non_null(inet_ntop(AF_INET, &bf, from, sizeof(from)));
	assert_string_equal(t->b.mon_name, from);
	assert_string_not_equal(t->b.mon_name, "0.0.0.0");
	assert_int_equal(nlm_notify_stats(t->nt)->restart_delivered, 2);

	struct sockaddr_in foreign = gwt_sin(0xc0000263, 0); /* 192.0.2.99: not this host's */
	assert_true(
		gw_host_from_sockaddr(&hosts[0].via, (struct sockaddr *)&foreign, sizeof(foreign)));
	assert_int_equal(nlm_notify_gateway_restarted(t->nt, hosts, 1, 1234575), 1);
	gwt_spin_for(t->base, 300, hosts_serve, t);
	assert_int_equal(t->a.notifies, 3);
	assert_int_equal(t->a.from, t->b.from); /* the kernel's choice toward 127/8 */
	assert_string_equal(t->a.mon_name, from);
}

/*
 * A route on [::] (dual-stack) whose client reached it over IPv4: told
 * over IPv4, from and naming the address the kernel sends from toward it
 * when the list names none.
 */
static void test_dual_stack_route_tells_an_ipv4_client(void **state)
{
	struct t *t = *state;
	struct nlm_peer host = { 0 };
	struct sockaddr_in sa = gwt_sin(CLIENT_A, 0);

	assert_true(gw_host_from_sockaddr(&host.host, (struct sockaddr *)&sa, sizeof(sa)));
	assert_int_equal(nlm_notify_gateway_restarted(t->nt, &host, 1, 1234577), 1);
	gwt_spin_for(t->base, 300, hosts_serve, t);
	assert_int_equal(t->a.notifies, 1);
	assert_int_equal(t->a.state, 1234577);
	struct in_addr af = { htonl(t->a.from) }; /* named as sent, not "::" */
	char from[INET_ADDRSTRLEN];
	assert_non_null(inet_ntop(AF_INET, &af, from, sizeof(from)));
	assert_string_equal(t->a.mon_name, from);
	assert_int_equal(nlm_notify_stats(t->nt)->restart_delivered, 1);
}

/* Bad arguments: GARBAGE_ARGS, nothing relayed. */
static void test_garbage_notify_refused(void **state)
{
	struct t *t = *state;
	uint8_t b[128], r[128];
	size_t h = gwt_rpc_call_none(b, 95, NSM_PROG, 1, 6);

	client_locked(t, CLIENT_A);
	xdr_put32(b + h, 2000); /* mon_name over SM_MAXSTRLEN */
	size_t n = send_from(t, t->server, nsm_port(t), b, h + 4, r, sizeof(r));
	assert_true(n >= 24);
	assert_int_equal(xdr_get32(r + 20), RPCSTAT_GARBAGE_ARGS);
	assert_int_equal(nlm_state_locks(nlm_relay_state(t->rl)), 1);
	assert_int_equal(nlm_notify_stats(t->nt)->received, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_server_reboot_relayed_to_the_client_with_locks,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_notify_not_from_the_server_dropped, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_silent_client_given_up_after_timeout, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_garbage_notify_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_resend_from_a_new_port, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gateway_restart_tells_the_saved_clients, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_wildcard_route_notifies_from_the_address_called, setup_wildcard,
			teardown),
		cmocka_unit_test_setup_teardown(test_dual_stack_route_tells_an_ipv4_client,
						setup_wildcard6, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
