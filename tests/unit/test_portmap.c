/* SPDX-License-Identifier: MIT */
/*
 * The gateway's portmapper: the codec on hand-made calls (every answer
 * RFC 1833 and RFC 5531 give, bad input included), and the responder on
 * loopback sockets answering libtirpc's own client (pmap and rpcbind
 * versions 2, 3 and 4, TCP and UDP), which decodes the replies with its
 * own XDR routines.
 */
#include <arpa/inet.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <event2/event.h>
#include <rpc/rpc.h>
#include <rpc/pmap_prot.h>
#include <rpc/rpcb_prot.h>

#include "common/xdr.h"
#include "conf/config.h"
#include "gateway/counters/counters.h"
#include "gateway/side/rpc/portmap.h"
#include "gateway/side/rpc/side_service.h"

static void table_init(struct pmap_table *t, uint16_t pm_port)
{
	memset(t, 0, sizeof(*t));
	struct sockaddr_in *sin = (struct sockaddr_in *)&t->addr;
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = htonl(0x7f000001);
	t->addrlen = sizeof(*sin);
	for (uint32_t v = 2; v <= 4; v++) {
		assert_true(pmap_table_add(t, 100000, v, PMAP_IPPROTO_TCP, pm_port));
		assert_true(pmap_table_add(t, 100000, v, PMAP_IPPROTO_UDP, pm_port));
	}
	assert_true(pmap_table_add(t, 100003, 3, PMAP_IPPROTO_TCP, 2049));
	for (uint32_t v = 1; v <= 3; v++) {
		assert_true(pmap_table_add(t, 100005, v, PMAP_IPPROTO_UDP, 20048));
		assert_true(pmap_table_add(t, 100005, v, PMAP_IPPROTO_TCP, 20048));
	}
}

/* A call with AUTH_NONE (or a credential of @cred_len bytes) and @nargs words. */
static size_t make_call(uint8_t *b, uint32_t xid, uint32_t rpcvers, uint32_t prog, uint32_t vers,
			uint32_t proc, uint32_t cred_len, const uint32_t *args, size_t nargs)
{
	size_t o = 0;
	uint32_t hdr[] = { xid, 0, rpcvers, prog, vers, proc, 1 /* AUTH_SYS */, cred_len };
	for (size_t i = 0; i < 8; i++, o += 4)
		xdr_put32(b + o, hdr[i]);
	memset(b + o, 0, xdr_align(cred_len));
	o += xdr_align(cred_len);
	xdr_put32(b + o, 0);
	xdr_put32(b + o + 4, 0);
	o += 8;
	for (size_t i = 0; i < nargs; i++, o += 4)
		xdr_put32(b + o, args[i]);
	return o;
}

/* The accept_stat of an accepted reply to @xid, or -1. */
static int accept_stat(const uint8_t *r, size_t n, uint32_t xid)
{
	if (n < 24 || xdr_get32(r) != xid || xdr_get32(r + 4) != 1 || xdr_get32(r + 8) != 0)
		return -1;
	return (int)xdr_get32(r + 20);
}

static void test_getport_and_errors(void **state)
{
	(void)state;
	struct pmap_table t;
	struct rpc_call_hdr h;
	uint8_t call[1024], out[2048];
	size_t n, len;

	table_init(&t, 111);
	uint32_t nfs3tcp[] = { 100003, 3, 6, 0 };
	len = make_call(call, 7, 2, 100000, 2, 3, 0, nfs3tcp, 4);
	assert_int_equal(pmap_answer(&t, call, len, out, sizeof(out), &n, &h), PMAP_ANSWERED);
	assert_int_equal(n, 28);
	assert_int_equal(accept_stat(out, n, 7), RPCSTAT_SUCCESS);
	assert_int_equal(xdr_get32(out + 24), 2049);
	assert_int_equal(h.proc, 3);

	/* NFS v2 is not offered; GETPORT answers the highest version there is. */
	uint32_t nfs2tcp[] = { 100003, 2, 6, 0 };
	len = make_call(call, 8, 2, 100000, 2, 3, 0, nfs2tcp, 4);
	pmap_answer(&t, call, len, out, sizeof(out), &n, &h);
	assert_int_equal(xdr_get32(out + 24), 2049);
	/* Nothing of NFS over UDP: port 0. */
	uint32_t nfs3udp[] = { 100003, 3, 17, 0 };
	len = make_call(call, 9, 2, 100000, 2, 3, 0, nfs3udp, 4);
	pmap_answer(&t, call, len, out, sizeof(out), &n, &h);
	assert_int_equal(xdr_get32(out + 24), 0);

	/* Arguments cut short: GARBAGE_ARGS. */
	len = make_call(call, 10, 2, 100000, 2, 3, 0, nfs3tcp, 3);
	assert_int_equal(pmap_answer(&t, call, len, out, sizeof(out), &n, &h), PMAP_GARBAGE);
	assert_int_equal(accept_stat(out, n, 10), RPCSTAT_GARBAGE_ARGS);
	/* Another program: PROG_UNAVAIL; version 5: PROG_MISMATCH 2..4; procedure 77. */
	len = make_call(call, 11, 2, 100099, 1, 0, 0, NULL, 0);
	assert_int_equal(pmap_answer(&t, call, len, out, sizeof(out), &n, &h), PMAP_RPC_ERROR);
	assert_int_equal(accept_stat(out, n, 11), RPCSTAT_PROG_UNAVAIL);
	len = make_call(call, 12, 2, 100000, 5, 0, 0, NULL, 0);
	pmap_answer(&t, call, len, out, sizeof(out), &n, &h);
	assert_int_equal(accept_stat(out, n, 12), RPCSTAT_PROG_MISMATCH);
	assert_int_equal(n, 32);
	assert_int_equal(xdr_get32(out + 24), 2);
	assert_int_equal(xdr_get32(out + 28), 4);
	len = make_call(call, 13, 2, 100000, 2, 77, 0, NULL, 0);
	pmap_answer(&t, call, len, out, sizeof(out), &n, &h);
	assert_int_equal(accept_stat(out, n, 13), RPCSTAT_PROC_UNAVAIL);
	/* CALLIT is not forwarded: PROC_UNAVAIL. */
	len = make_call(call, 14, 2, 100000, 2, 5, 0, NULL, 0);
	pmap_answer(&t, call, len, out, sizeof(out), &n, &h);
	assert_int_equal(accept_stat(out, n, 14), RPCSTAT_PROC_UNAVAIL);
}

static void test_set_unset_refused(void **state)
{
	(void)state;
	struct pmap_table t;
	struct rpc_call_hdr h;
	uint8_t call[256], out[256];
	size_t n, len;
	uint32_t m[] = { 100005, 3, 17, 999 };

	table_init(&t, 111);
	for (uint32_t proc = 1; proc <= 2; proc++) {
		len = make_call(call, proc, 2, 100000, 2, proc, 0, m, 4);
		assert_int_equal(pmap_answer(&t, call, len, out, sizeof(out), &n, &h),
				 PMAP_REFUSED);
		assert_int_equal(accept_stat(out, n, proc), RPCSTAT_SUCCESS);
		assert_int_equal(n, 28);
		assert_int_equal(xdr_get32(out + 24), 0); /* FALSE */
	}
	/* And the table did not change. */
	assert_int_equal(pmap_table_port(&t, 100005, 3, PMAP_IPPROTO_UDP, false), 20048);
}

static void test_bad_headers(void **state)
{
	(void)state;
	struct pmap_table t;
	struct rpc_call_hdr h;
	uint8_t call[1024], out[256];
	size_t n, len;

	table_init(&t, 111);
	/* rpcvers 3: MSG_DENIED RPC_MISMATCH 2..2. */
	len = make_call(call, 21, 3, 100000, 2, 0, 0, NULL, 0);
	assert_int_equal(pmap_answer(&t, call, len, out, sizeof(out), &n, &h), PMAP_RPC_ERROR);
	assert_int_equal(n, 24);
	assert_int_equal(xdr_get32(out + 8), 1);
	assert_int_equal(xdr_get32(out + 12), 0);
	assert_int_equal(xdr_get32(out + 16), 2);
	/* A 404-byte credential: AUTH_ERROR AUTH_BADCRED. */
	len = make_call(call, 22, 2, 100000, 2, 0, 404, NULL, 0);
	assert_int_equal(pmap_answer(&t, call, len, out, sizeof(out), &n, &h), PMAP_RPC_ERROR);
	assert_int_equal(n, 20);
	assert_int_equal(xdr_get32(out + 12), 1);
	assert_int_equal(xdr_get32(out + 16), 1);
	/* A credential that claims more than the message holds: dropped. */
	len = make_call(call, 23, 2, 100000, 2, 0, 400, NULL, 0);
	assert_int_equal(pmap_answer(&t, call, len - 404, out, sizeof(out), &n, &h), PMAP_NO_REPLY);
	assert_int_equal(n, 0);
	/* Every prefix of a good call is dropped or answered, never read past. */
	uint32_t args[] = { 100003, 3, 6, 0 };
	len = make_call(call, 24, 2, 100000, 2, 3, 0, args, 4);
	for (size_t cut = 0; cut < len; cut++) {
		uint8_t *copy = malloc(cut ? cut : 1);
		memcpy(copy, call, cut);
		enum pmap_outcome o = pmap_answer(&t, copy, cut, out, sizeof(out), &n, &h);
		assert_true(o == PMAP_NO_REPLY || o == PMAP_GARBAGE);
		free(copy);
	}
	/* A reply is not answered. */
	xdr_put32(call + 4, 1);
	assert_int_equal(pmap_answer(&t, call, len, out, sizeof(out), &n, &h), PMAP_NO_REPLY);
}

/* A DUMP that does not fit the reply buffer: SYSTEM_ERR, within the buffer. */
static void test_dump_too_large(void **state)
{
	(void)state;
	struct pmap_table t;
	struct rpc_call_hdr h;
	uint8_t call[256], out[64];
	size_t n, len;

	table_init(&t, 111);
	len = make_call(call, 31, 2, 100000, 4, 4, 0, NULL, 0);
	assert_int_equal(pmap_answer(&t, call, len, out, sizeof(out), &n, &h), PMAP_TOO_LARGE);
	assert_int_equal(accept_stat(out, n, 31), RPCSTAT_SYSTEM_ERR);
}

static void test_uaddr_and_getport_codec(void **state)
{
	(void)state;
	struct sockaddr_in6 s6 = { .sin6_family = AF_INET6 };
	struct sockaddr_in s4 = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(0x0a090001) };
	char u[64];
	uint8_t b[128];
	uint16_t port;

	assert_true(pmap_uaddr((struct sockaddr *)&s4, 20048, u, sizeof(u)));
	assert_string_equal(u, "10.9.0.1.78.80");
	inet_pton(AF_INET6, "fd00::1", &s6.sin6_addr);
	assert_true(pmap_uaddr((struct sockaddr *)&s6, 111, u, sizeof(u)));
	assert_string_equal(u, "fd00::1.0.111");
	assert_false(pmap_uaddr((struct sockaddr *)&s4, 111, u, 8));

	size_t n = pmap_encode_getport(b, sizeof(b), 77, 100005, 3, 17);
	assert_int_equal(n, 56);
	assert_int_equal(pmap_encode_getport(b, 55, 77, 100005, 3, 17), 0);
	assert_int_equal(rpc_encode_call_hdr(b, 39, 77, 100005, 3, 1), 0);
	struct rpc_call_hdr h;
	assert_int_equal(rpc_call_decode(b, n, &h), RPC_HDR_CALL);
	assert_int_equal(h.prog, 100000);
	assert_int_equal(h.proc, 3);
	/* Its reply, as a portmapper sends it. */
	size_t r = rpc_encode_accept_error(b, sizeof(b), 77, RPCSTAT_SUCCESS, 0, 0);
	xdr_put32(b + r, 20048);
	assert_int_equal(pmap_decode_getport_reply(b, r + 4, &port), 0);
	assert_int_equal(port, 20048);
	assert_int_equal(pmap_decode_getport_reply(b, r + 2, &port), -1);
	xdr_put32(b + r, 70000);
	assert_int_equal(pmap_decode_getport_reply(b, r + 4, &port), -1);
	r = rpc_encode_accept_error(b, sizeof(b), 77, RPCSTAT_PROG_UNAVAIL, 0, 0);
	assert_int_equal(pmap_decode_getport_reply(b, r, &port), -1);
}

/*
 * Asking an IPv6 peer's rpcbind where a UDP service is: rpcbind v3 GETADDR of "udp6"
 * (GETPORT would give the IPv4 socket's port), answered here by the gateway's own
 * responder with an IPv6 table; an IPv4 peer still gets GETPORT.
 */
static void test_udp_lookup_ipv6(void **state)
{
	(void)state;
	struct pmap_table t = { 0 };
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&t.addr;
	struct rpc_call_hdr h;
	uint8_t b[256], out[512];
	size_t n, r;
	uint16_t port = 1;

	s6->sin6_family = AF_INET6;
	inet_pton(AF_INET6, "fd00:2::1", &s6->sin6_addr);
	t.addrlen = sizeof(*s6);
	assert_true(pmap_table_add(&t, 100005, 3, PMAP_IPPROTO_UDP, 45763));
	assert_true(pmap_table_add(&t, 100005, 3, PMAP_IPPROTO_TCP, 41000));

	n = pmap_encode_udp_lookup(b, sizeof(b), 5, AF_INET6, 100005, 3);
	assert_int_equal(n, 64);
	assert_int_equal(pmap_encode_udp_lookup(b, 63, 5, AF_INET6, 100005, 3), 0);
	assert_int_equal(rpc_call_decode(b, n, &h), RPC_HDR_CALL);
	assert_int_equal(h.prog, 100000);
	assert_int_equal(h.vers, 3);
	assert_int_equal(h.proc, 3); /* GETADDR */
	assert_int_equal(pmap_answer(&t, b, n, out, sizeof(out), &r, &h), PMAP_ANSWERED);
	assert_int_equal(pmap_decode_udp_lookup_reply(out, r, AF_INET6, &port), 0);
	assert_int_equal(port, 45763); /* the UDP entry's, "fd00:2::1.178.195" */

	/* Not registered: rpcbind's empty address, port 0. */
	n = pmap_encode_udp_lookup(b, sizeof(b), 6, AF_INET6, 100021, 4);
	assert_int_equal(pmap_answer(&t, b, n, out, sizeof(out), &r, &h), PMAP_ANSWERED);
	assert_int_equal(pmap_decode_udp_lookup_reply(out, r, AF_INET6, &port), 0);
	assert_int_equal(port, 0);

	/* Universal addresses without a port, or with a part out of range, are refused. */
	const char *bad[] = { "fd00::1.178", "fd00::1.256.1", "fd00::1.1.x", ".1.2", "fd00::1..1" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t k = strlen(bad[i]);
		r = rpc_encode_accept_error(out, sizeof(out), 7, RPCSTAT_SUCCESS, 0, 0);
		xdr_put32(out + r, (uint32_t)k);
		memset(out + r + 4, 0, (k + 3) & ~(size_t)3);
		memcpy(out + r + 4, bad[i], k);
		assert_int_equal(pmap_decode_udp_lookup_reply(out, r + 4 + ((k + 3) & ~(size_t)3),
							      AF_INET6, &port),
				 -1);
	}
	/* A string longer than the reply: refused. */
	r = rpc_encode_accept_error(out, sizeof(out), 7, RPCSTAT_SUCCESS, 0, 0);
	xdr_put32(out + r, 40);
	assert_int_equal(pmap_decode_udp_lookup_reply(out, r + 8, AF_INET6, &port), -1);

	/* IPv4: GETPORT (portmapper v2) as before. */
	n = pmap_encode_udp_lookup(b, sizeof(b), 8, AF_INET, 100005, 3);
	assert_int_equal(n, 56);
	assert_int_equal(rpc_call_decode(b, n, &h), RPC_HDR_CALL);
	assert_int_equal(h.vers, 2);
	r = rpc_encode_accept_error(out, sizeof(out), 8, RPCSTAT_SUCCESS, 0, 0);
	xdr_put32(out + r, 20048);
	assert_int_equal(pmap_decode_udp_lookup_reply(out, r + 4, AF_INET, &port), 0);
	assert_int_equal(port, 20048);
}

/* Results only after an accepted SUCCESS, past a verifier of any allowed length. */
static void test_reply_results(void **state)
{
	uint8_t m[64];
	size_t off = 0;
	const uint32_t w[] = { 5, 1, 0, 6, 8, 0xaa, 0xbb, 0, 0x1234 };

	(void)state;
	for (size_t i = 0; i < 9; i++)
		xdr_put32(m + 4 * i, w[i]);
	assert_true(rpc_reply_results(m, 36, &off));
	assert_int_equal(off, 32);
	assert_int_equal(xdr_get32(m + off), 0x1234);
	assert_false(rpc_reply_results(m, 28, &off)); /* no accept_stat */
	xdr_put32(m + 16, RPC_AUTH_MAX + 4);	      /* a verifier longer than allowed */
	assert_false(rpc_reply_results(m, 36, &off));
	xdr_put32(m + 16, 8);
	xdr_put32(m + 28, RPCSTAT_GARBAGE_ARGS);
	assert_false(rpc_reply_results(m, 36, &off));
	xdr_put32(m + 28, RPCSTAT_SUCCESS);
	xdr_put32(m + 8, 1); /* denied */
	assert_false(rpc_reply_results(m, 36, &off));
	xdr_put32(m + 8, 0);
	xdr_put32(m + 4, 0); /* a call */
	assert_false(rpc_reply_results(m, 36, &off));
}

/*
 * A refusal that would come again: MSG_DENIED, or accepted with
 * PROG_UNAVAIL .. GARBAGE_ARGS; not SUCCESS, SYSTEM_ERR, a stat past it, a
 * call, or anything cut short or with a verifier longer than allowed.
 */
static void test_reply_refused(void **state)
{
	uint8_t m[64];
	const uint32_t w[] = { 5, 1, 0, 6, 8, 0xaa, 0xbb, RPCSTAT_GARBAGE_ARGS };

	(void)state;
	for (size_t i = 0; i < 8; i++)
		xdr_put32(m + 4 * i, w[i]);
	assert_true(rpc_reply_refused(m, 32));
	for (size_t n = 0; n < 32; n++)
		assert_false(rpc_reply_refused(m, n));
	for (uint32_t st = RPCSTAT_PROG_UNAVAIL; st <= RPCSTAT_GARBAGE_ARGS; st++) {
		xdr_put32(m + 28, st);
		assert_true(rpc_reply_refused(m, 32));
	}
	xdr_put32(m + 28, RPCSTAT_SUCCESS);
	assert_false(rpc_reply_refused(m, 32));
	xdr_put32(m + 28, RPCSTAT_SYSTEM_ERR);
	assert_false(rpc_reply_refused(m, 32));
	xdr_put32(m + 28, 99);
	assert_false(rpc_reply_refused(m, 32));
	xdr_put32(m + 28, RPCSTAT_GARBAGE_ARGS);
	xdr_put32(m + 16, RPC_AUTH_MAX + 4); /* a verifier longer than allowed */
	assert_false(rpc_reply_refused(m, 32));
	xdr_put32(m + 8, 1); /* denied: refused whatever follows */
	assert_true(rpc_reply_refused(m, 12));
	assert_false(rpc_reply_refused(m, 11));
	xdr_put32(m + 4, 0); /* a call */
	assert_false(rpc_reply_refused(m, 32));
}

/* ---- libtirpc's client against the responder on loopback --------------- */

struct server {
	struct event_base *base;
	struct side_service *svc;
	struct pmap_table table;
	struct gw_route route;
	struct gw_counters counters;
	atomic_bool stop;
	pthread_t thread;
	uint8_t out[8192];
};

static void on_call(void *arg, struct side_service *svc, const struct side_service_peer *peer,
		    const uint8_t *msg, size_t len)
{
	struct server *s = arg;
	struct rpc_call_hdr h;
	size_t n;

	pmap_answer(&s->table, msg, len, s->out, sizeof(s->out), &n, &h);
	if (n)
		side_service_reply(svc, peer, s->out, n);
}

static void tick(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
}

static void *serve(void *arg)
{
	struct server *s = arg;
	struct event *t = event_new(s->base, -1, EV_PERSIST, tick, NULL);
	struct timeval tv = { 0, 20000 };

	event_add(t, &tv);
	while (!atomic_load(&s->stop))
		event_base_loop(s->base, EVLOOP_ONCE);
	event_free(t);
	return NULL;
}

static struct server *server_start(void)
{
	struct server *s = calloc(1, sizeof(*s));
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001) };

	s->base = event_base_new();
	s->route.name = "t";
	struct side_service_config sc = {
		.name = "rpcbind",
		.route = &s->route,
		.counters = &s->counters,
		.max_msg = 4096,
		.max_conns = 4,
		.idle_ms = 5000,
		.max_output = 65536,
		.on_msg = on_call,
		.arg = s,
	};
	s->svc = side_service_start(s->base, (struct sockaddr *)&a, sizeof(a), &sc);
	assert_non_null(s->svc);
	table_init(&s->table, side_service_port(s->svc));
	pthread_create(&s->thread, NULL, serve, s);
	return s;
}

static void server_stop(struct server *s)
{
	atomic_store(&s->stop, true);
	pthread_join(s->thread, NULL);
	side_service_stop(s->svc);
	event_base_free(s->base);
	free(s);
}

static CLIENT *client(struct server *s, bool tcp, u_long vers)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(0x7f000001),
				 .sin_port = htons(side_service_port(s->svc)) };
	struct timeval wait = { 1, 0 };
	int sock = RPC_ANYSOCK;
	CLIENT *c = tcp ? clnttcp_create(&a, PMAPPROG, vers, &sock, 0, 0)
			: clntudp_create(&a, PMAPPROG, vers, wait, &sock);
	assert_non_null(c);
	return c;
}

static const struct timeval call_tv = { 5, 0 };

/* xdr_void has no parameters, and a cast of it to xdrproc_t is refused by -Wcast-function-type. */
static bool_t xdr_nothing(XDR *x, ...)
{
	(void)x;
	return TRUE;
}

static void test_libtirpc_pmap2(void **state)
{
	(void)state;
	struct server *s = server_start();

	for (int tcp = 0; tcp <= 1; tcp++) {
		CLIENT *c = client(s, tcp, PMAPVERS);
		struct pmaplist *list = NULL;
		enum clnt_stat st = clnt_call(c, PMAPPROC_DUMP, (xdrproc_t)xdr_nothing, NULL,
					      (xdrproc_t)xdr_pmaplist_ptr, (char *)&list, call_tv);
		if (!tcp) {
			/* The list is many times its call: over UDP, SYSTEM_ERR (no reflector). */
			assert_int_equal(st, RPC_SYSTEMERROR);
			assert_int_equal(s->counters.events[GW_EV_UDP_REPLY_TOO_LARGE], 1);
		} else {
			assert_int_equal(st, RPC_SUCCESS);
		}
		size_t count = tcp ? 0 : s->table.count;
		bool mount3udp = false;
		for (struct pmaplist *p = list; p; p = p->pml_next, count++)
			mount3udp |= p->pml_map.pm_prog == 100005 && p->pml_map.pm_vers == 3 &&
				     p->pml_map.pm_prot == IPPROTO_UDP &&
				     p->pml_map.pm_port == 20048;
		assert_int_equal(count, s->table.count);
		assert_true(mount3udp || !tcp);
		xdr_free((xdrproc_t)xdr_pmaplist_ptr, (char *)&list);

		struct pmap q = { 100003, 3, IPPROTO_TCP, 0 };
		u_long port = 0;
		assert_int_equal(clnt_call(c, PMAPPROC_GETPORT, (xdrproc_t)xdr_pmap, (char *)&q,
					   (xdrproc_t)xdr_u_long, (char *)&port, call_tv),
				 RPC_SUCCESS);
		assert_int_equal(port, 2049);
		bool_t set = TRUE;
		assert_int_equal(clnt_call(c, PMAPPROC_SET, (xdrproc_t)xdr_pmap, (char *)&q,
					   (xdrproc_t)xdr_bool, (char *)&set, call_tv),
				 RPC_SUCCESS);
		assert_false(set);
		clnt_destroy(c);
	}
	server_stop(s);
}

static void test_libtirpc_rpcb34(void **state)
{
	(void)state;
	struct server *s = server_start();

	for (u_long vers = 3; vers <= 4; vers++) {
		for (int tcp = 0; tcp <= 1; tcp++) {
			CLIENT *c = client(s, tcp, vers);
			struct rpcb q = { 100005, 3, tcp ? "tcp" : "udp", "", "" };
			char *uaddr = NULL;
			assert_int_equal(clnt_call(c, RPCBPROC_GETADDR, (xdrproc_t)xdr_rpcb,
						   (char *)&q, (xdrproc_t)xdr_wrapstring,
						   (char *)&uaddr, call_tv),
					 RPC_SUCCESS);
			assert_string_equal(uaddr, "127.0.0.1.78.80");
			xdr_free((xdrproc_t)xdr_wrapstring, (char *)&uaddr);
			/* No NFS over UDP: the empty string. */
			struct rpcb q2 = { 100003, 3, "udp", "", "" };
			assert_int_equal(clnt_call(c, RPCBPROC_GETADDR, (xdrproc_t)xdr_rpcb,
						   (char *)&q2, (xdrproc_t)xdr_wrapstring,
						   (char *)&uaddr, call_tv),
					 RPC_SUCCESS);
			assert_string_equal(uaddr, "");
			xdr_free((xdrproc_t)xdr_wrapstring, (char *)&uaddr);

			rpcblist_ptr list = NULL;
			enum clnt_stat st =
				clnt_call(c, RPCBPROC_DUMP, (xdrproc_t)xdr_nothing, NULL,
					  (xdrproc_t)xdr_rpcblist_ptr, (char *)&list, call_tv);
			/* Over UDP the list is many times its call: SYSTEM_ERR, no reflector. */
			assert_int_equal(st, tcp ? RPC_SUCCESS : RPC_SYSTEMERROR);
			size_t count = tcp ? 0 : s->table.count;
			for (rpcblist_ptr p = list; p; p = p->rpcb_next, count++)
				if (p->rpcb_map.r_prog == 100003)
					assert_string_equal(p->rpcb_map.r_addr, "127.0.0.1.8.1");
			assert_int_equal(count, s->table.count);
			xdr_free((xdrproc_t)xdr_rpcblist_ptr, (char *)&list);
			clnt_destroy(c);
		}
	}
	server_stop(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_getport_and_errors),
		cmocka_unit_test(test_set_unset_refused),
		cmocka_unit_test(test_bad_headers),
		cmocka_unit_test(test_dump_too_large),
		cmocka_unit_test(test_uaddr_and_getport_codec),
		cmocka_unit_test(test_reply_results),
		cmocka_unit_test(test_reply_refused),
		cmocka_unit_test(test_libtirpc_pmap2),
		cmocka_unit_test(test_libtirpc_rpcb34),
		cmocka_unit_test(test_udp_lookup_ipv6),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
