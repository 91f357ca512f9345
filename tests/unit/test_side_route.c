/* SPDX-License-Identifier: MIT */
/*
 * A route's side services as the engine starts them (gateway/side/side_route.c):
 * what the portmapper advertises for a forward and for a reverse route,
 * and the configurations that are refused (a portmapper on the wildcard
 * listen address, a port already taken); a route on the wildcard address
 * registering the same with the host's rpcbind (a fake one) and
 * unregistering at stop, and starting nothing when no rpcbind answers or
 * the kernel's lockd holds NLM there; the route's NLM keys reaching the relay (the
 * server's lockd at upstream_nlm_port, one client's owners capped at
 * nlm_max_owners_per_client).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include <event2/event.h>

#include "common/xdr.h"
#include "conf/config.h"
#include "gateway/counters/counters.h"
#include "gateway/side/nlm/nlm_xdr.h"
#include "gateway/side/rpc/portmap.h"
#include "gateway/side/side_route.h"

#include "support/fakerpcb.h"
#include "support/loop.h"
#include "support/rpcmsg.h"
#include "support/udp.h"

/* A port free on loopback for UDP and TCP now (the portmapper's, in these tests). */
static uint16_t free_port(void)
{
	for (int i = 0; i < 20; i++) {
		struct sockaddr_in a = { .sin_family = AF_INET,
					 .sin_addr.s_addr = htonl(0x7f000001) };
		socklen_t l = sizeof(a);
		int u = socket(AF_INET, SOCK_DGRAM, 0);
		bind(u, (struct sockaddr *)&a, sizeof(a));
		getsockname(u, (struct sockaddr *)&a, &l);
		int t = socket(AF_INET, SOCK_STREAM, 0);
		int ok = bind(t, (struct sockaddr *)&a, sizeof(a));
		close(u);
		close(t);
		if (ok == 0)
			return ntohs(a.sin_port);
	}
	fail_msg("no free port");
	return 0;
}

static void route_init(struct gw_route *r, enum gw_route_mode mode, uint32_t listen_ip)
{
	memset(r, 0, sizeof(*r));
	r->name = "t";
	r->mode = mode;
	struct sockaddr_in *l = (struct sockaddr_in *)&r->listen.addr;
	l->sin_family = AF_INET;
	l->sin_addr.s_addr = htonl(listen_ip);
	l->sin_port = htons(2049);
	r->listen.addrlen = sizeof(*l);
	r->listen.text = "test";
	struct sockaddr_in *u = (struct sockaddr_in *)&r->upstream.addr;
	u->sin_family = AF_INET;
	u->sin_addr.s_addr = htonl(0x7f000001);
	r->upstream.addrlen = sizeof(*u);
	r->source_port = GW_SOURCE_PORT_ANY;
	r->portmapper_port = free_port();
}

/* GETPORT(@prog, @vers, @prot) over UDP to the portmapper at @port; -1 on no answer. */
static int getport(struct event_base *base, uint16_t port, uint32_t prog, uint32_t vers,
		   uint32_t prot)
{
	struct sockaddr_in a = gwt_sin(GWT_LOOPBACK, port);
	int fd = gwt_udp_bind(GWT_LOOPBACK, 0, NULL);
	int rc;

	assert_true(fd >= 0);
	rc = gwt_pmap_getport(base, fd, &a, 99, prog, vers, prot, 2000, NULL, NULL);
	close(fd);
	return rc;
}

/* The side services of @r on @base, counted in @c, which must start. */
static struct gw_side *side_started(struct event_base *base, const struct gw_route *r,
				    struct gw_counters *c)
{
	char err[256] = "";
	int failed;
	struct gw_side *side = gw_side_start(base, r, c, &failed, err, sizeof(err));

	assert_non_null(side);
	return side;
}

static void test_forward_route_advertises_nfs_and_mount(void **state)
{
	(void)state;
	struct event_base *base = event_base_new();
	struct gw_route r;
	struct gw_counters c = { 0 };
	char err[256] = "";
	int failed;

	route_init(&r, GW_MODE_FORWARD, 0x7f000001);
	struct gw_side *side = gw_side_start(base, &r, &c, &failed, err, sizeof(err));
	assert_non_null(side);
	assert_int_equal(failed, 0);
	/* The NSM state number for the server's SM_NOTIFY, in $STATE_DIRECTORY (main). */
	char path[128];
	snprintf(path, sizeof(path), "%s/t.nsm-state", getenv("STATE_DIRECTORY"));
	assert_int_equal(access(path, R_OK), 0);
	assert_int_equal(getport(base, r.portmapper_port, 100003, 3, PMAP_IPPROTO_TCP), 2049);
	assert_int_equal(getport(base, r.portmapper_port, 100003, 3, PMAP_IPPROTO_UDP), 0);
	int mnt = getport(base, r.portmapper_port, 100005, 3, PMAP_IPPROTO_UDP);
	assert_true(mnt > 0);
	assert_int_equal(getport(base, r.portmapper_port, 100005, 1, PMAP_IPPROTO_TCP), mnt);
	assert_int_equal(getport(base, r.portmapper_port, 100000, 2, PMAP_IPPROTO_UDP),
			 r.portmapper_port);
	/* NLM v1, v3 and v4 at the NLM relay, on both transports; NSM beside it. */
	int nlm = getport(base, r.portmapper_port, 100021, 4, PMAP_IPPROTO_UDP);
	assert_true(nlm > 0);
	assert_int_not_equal(nlm, mnt);
	assert_int_equal(getport(base, r.portmapper_port, 100021, 1, PMAP_IPPROTO_TCP), nlm);
	assert_int_equal(getport(base, r.portmapper_port, 100021, 3, PMAP_IPPROTO_UDP), nlm);
	int nsm = getport(base, r.portmapper_port, 100024, 1, PMAP_IPPROTO_UDP);
	assert_true(nsm > 0);
	assert_int_not_equal(nsm, nlm);
	assert_int_equal(getport(base, r.portmapper_port, 100024, 1, PMAP_IPPROTO_TCP), nsm);
	/* Counted by procedure. */
	struct gw_proc_count *pc = gw_counters_proc(&c, 100000, 2, 3);
	assert_non_null(pc);
	assert_int_equal(pc->calls, 10);
	gw_side_stop(side);
	event_base_free(base);
}

/*
 * A reload gives the side services the route of the new configuration
 * (gw_side_set_route()), and the old one is freed: its allowed_clients no
 * longer apply (10.0.0.0/8 only, so this loopback client is refused), and
 * nothing reads the old route any more (poisoned and freed here; ASan
 * would name a read of it).
 */
static void test_reload_gives_the_side_its_new_route(void **state)
{
	(void)state;
	struct event_base *base = event_base_new();
	struct gw_route *old = malloc(sizeof(*old));
	struct gw_route next;
	struct gw_cidr ten = { .family = AF_INET, .prefix_len = 8 };
	struct gw_counters c = { 0 };

	assert_non_null(old);
	route_init(old, GW_MODE_FORWARD, 0x7f000001);
	struct gw_side *side = side_started(base, old, &c);
	assert_int_equal(getport(base, old->portmapper_port, 100003, 3, PMAP_IPPROTO_TCP), 2049);

	next = *old;
	ten.addr.v4.s_addr = htonl(0x0a000000);
	next.allowed_clients = &ten;
	next.allowed_clients_count = 1;
	gw_side_set_route(side, &next);
	memset(old, 0xa5, sizeof(*old));
	free(old);
	assert_int_equal(getport(base, next.portmapper_port, 100003, 3, PMAP_IPPROTO_TCP), -1);

	/* Allowed again by the next reload. */
	next.allowed_clients_count = 0;
	assert_int_equal(getport(base, next.portmapper_port, 100003, 3, PMAP_IPPROTO_TCP), 2049);
	gw_side_stop(side);
	event_base_free(base);
}

/* RPC-over-RDMA has no portmapper protocol: a reverse route offers MOUNT only. */
static void test_reverse_route_advertises_mount_only(void **state)
{
	(void)state;
	struct event_base *base = event_base_new();
	struct gw_route r;
	struct gw_counters c = { 0 };

	route_init(&r, GW_MODE_REVERSE, 0x7f000001);
	struct gw_side *side = side_started(base, &r, &c);
	assert_int_equal(getport(base, r.portmapper_port, 100003, 3, PMAP_IPPROTO_TCP), 0);
	assert_true(getport(base, r.portmapper_port, 100005, 3, PMAP_IPPROTO_TCP) > 0);
	gw_side_stop(side);
	event_base_free(base);
}

static void test_refused_configurations(void **state)
{
	(void)state;
	struct event_base *base = event_base_new();
	struct gw_route r;
	struct gw_counters c = { 0 };
	char err[256] = "";
	int failed;

	/* No portmapper_port: nothing, and no failure. */
	route_init(&r, GW_MODE_FORWARD, 0x7f000001);
	r.portmapper_port = 0;
	assert_null(gw_side_start(base, &r, &c, &failed, err, sizeof(err)));
	assert_int_equal(failed, 0);
	/* A portmapper of its own on the wildcard address. */
	route_init(&r, GW_MODE_FORWARD, 0);
	assert_null(gw_side_start(base, &r, &c, &failed, err, sizeof(err)));
	assert_int_equal(failed, 1);
	assert_non_null(strstr(err, "registers with the host's rpcbind"));
	/* The port taken (by a first route on the same address). */
	route_init(&r, GW_MODE_FORWARD, 0x7f000001);
	struct gw_side *first = gw_side_start(base, &r, &c, &failed, err, sizeof(err));
	assert_non_null(first);
	assert_null(gw_side_start(base, &r, &c, &failed, err, sizeof(err)));
	assert_int_equal(failed, 1);
	assert_non_null(strstr(err, "cannot start the portmapper"));
	assert_non_null(strstr(err, "host rpcbind"));
	gw_side_stop(first);
	event_base_free(base);
}

/* The mappings of a forward route on the wildcard, in @f: "0.0.0.0.H.L" of each. */
static uint16_t mapped_port(const struct gwt_rpcb *f, uint32_t prog, uint32_t vers,
			    const char *netid)
{
	const char *u = gwt_rpcb_lookup(f, prog, vers, netid);
	unsigned hi, lo;

	if (!u || sscanf(u, "0.0.0.0.%u.%u", &hi, &lo) != 2)
		return 0;
	return (uint16_t)(hi << 8 | lo);
}

/*
 * The README's minimal route (forward, the wildcard, no portmapper_port)
 * with an rpcbind on the host: NFS 3 and 4 and NFSACL at the route's
 * port over TCP, MOUNT 1-3, NLM 1, 3, 4 and NSM 1 over UDP and TCP at the
 * ports of its services, no portmapper of its own; all of it removed at
 * stop, and nothing else.
 */
static void test_wildcard_route_registers_with_host_rpcbind(void **state)
{
	(void)state;
	struct event_base *base = event_base_new();
	struct gw_route r;
	struct gw_counters c = { 0 };
	struct gwt_rpcb f;
	char err[256] = "", line[512];
	int failed;

	gwt_rpcb_init(&f);
	gwt_rpcb_map(&f, 100000, 2, "udp", 111); /* rpcbind's own */
	route_init(&r, GW_MODE_FORWARD, 0);
	r.portmapper_port = 0;
	assert_int_equal(gw_side_way(&r), GW_SIDE_HOST_RPCBIND);
	assert_true(gw_side_describe(&r, &f.ops, line, sizeof(line)));
	assert_non_null(strstr(line, "registers with this host's rpcbind, which answers"));
	struct gw_side *side = gw_side_start_with(base, &r, &c, &f.ops, &failed, err, sizeof(err));
	assert_non_null(side);
	assert_int_equal(failed, 0);
	assert_int_equal(mapped_port(&f, 100003, 3, "tcp"), 2049);
	assert_int_equal(mapped_port(&f, 100003, 4, "tcp"), 2049);
	assert_int_equal(mapped_port(&f, 100227, 3, "tcp"), 2049);
	assert_null(gwt_rpcb_lookup(&f, 100003, 3, "udp")); /* no NFS over UDP */
	uint16_t mnt = mapped_port(&f, 100005, 3, "udp");
	assert_true(mnt > 0);
	uint16_t nlm = mapped_port(&f, 100021, 4, "udp");
	uint16_t nsm = mapped_port(&f, 100024, 1, "udp");
	assert_true(nlm > 0 && nsm > 0 && nlm != mnt && nsm != nlm);
	for (uint32_t v = 1; v <= 3; v++) {
		assert_int_equal(mapped_port(&f, 100005, v, "udp"), mnt);
		assert_int_equal(mapped_port(&f, 100005, v, "tcp"), mnt);
	}
	for (uint32_t v = 1; v <= 4; v += v == 1 ? 2 : 1) {
		assert_int_equal(mapped_port(&f, 100021, v, "udp"), nlm);
		assert_int_equal(mapped_port(&f, 100021, v, "tcp"), nlm);
	}
	assert_null(gwt_rpcb_lookup(&f, 100021, 2, "udp"));
	assert_int_equal(mapped_port(&f, 100024, 1, "tcp"), nsm);
	assert_int_equal(f.nmap, 1 + 3 + 6 + 6 + 2);
	/* The MOUNT service is there, on the wildcard: asked at 127.0.0.1. */
	int u = gwt_udp_bind(GWT_LOOPBACK, 0, NULL);
	struct sockaddr_in m = gwt_sin(GWT_LOOPBACK, mnt);
	uint8_t b[128];
	size_t n = gwt_rpc_call_none(b, 7, 100005, 9, 0); /* a version it does not relay */
	assert_int_equal(sendto(u, b, n, 0, (struct sockaddr *)&m, sizeof(m)), (ssize_t)n);
	assert_true(gwt_spin_until_readable(base, u, 2000, NULL, NULL));
	assert_true(recv(u, b, sizeof(b), 0) >= 24);
	assert_int_equal(xdr_get32(b), 7);
	close(u);
	gw_side_stop(side);
	assert_int_equal(f.nmap, 1);
	assert_non_null(gwt_rpcb_lookup(&f, 100000, 2, "udp"));
	event_base_free(base);
}

/* A reverse route on the wildcard: MOUNT, NLM, NSM, no NFS (RPC-over-RDMA has no netid here). */
static void test_wildcard_reverse_route_registers_no_nfs(void **state)
{
	(void)state;
	struct event_base *base = event_base_new();
	struct gw_route r;
	struct gw_counters c = { 0 };
	struct gwt_rpcb f;
	char err[256] = "";
	int failed;

	gwt_rpcb_init(&f);
	route_init(&r, GW_MODE_REVERSE, 0);
	r.portmapper_port = 0;
	struct gw_side *side = gw_side_start_with(base, &r, &c, &f.ops, &failed, err, sizeof(err));
	assert_non_null(side);
	assert_null(gwt_rpcb_lookup(&f, 100003, 3, "tcp"));
	assert_true(mapped_port(&f, 100005, 3, "tcp") > 0);
	assert_int_equal(f.nmap, 6 + 6 + 2);
	gw_side_stop(side);
	assert_int_equal(f.nmap, 0);
	event_base_free(base);
}

/*
 * No rpcbind answers, or the kernel's lockd holds NLM: the route starts
 * without side services (not a failure: its NFS goes on), --check's line
 * says what is missing, and nothing is mapped or removed.
 */
static void test_wildcard_route_without_rpcbind_or_with_lockd(void **state)
{
	(void)state;
	struct event_base *base = event_base_new();
	struct gw_route r;
	struct gw_counters c = { 0 };
	struct gwt_rpcb f;
	char err[256] = "", line[512];
	int failed;

	gwt_rpcb_init(&f);
	f.down = true;
	route_init(&r, GW_MODE_FORWARD, 0);
	r.portmapper_port = 0;
	assert_false(gw_side_describe(&r, &f.ops, line, sizeof(line)));
	assert_non_null(strstr(line, "plain NFSv3 unavailable"));
	assert_non_null(strstr(line, "no rpcbind answers"));
	assert_null(gw_side_start_with(base, &r, &c, &f.ops, &failed, err, sizeof(err)));
	assert_int_equal(failed, 0);
	assert_int_equal(f.nlog, 0);

	gwt_rpcb_init(&f);
	gwt_rpcb_map(&f, 100021, 4, "udp", 4045);
	f.held[0] = 4045;
	assert_null(gw_side_start_with(base, &r, &c, &f.ops, &failed, err, sizeof(err)));
	assert_int_equal(failed, 0);
	assert_int_equal(f.nlog, 0);
	assert_int_equal(f.nmap, 1);
	/* One address without portmapper_port: no side services, said so. */
	route_init(&r, GW_MODE_FORWARD, 0x7f000001);
	r.portmapper_port = 0;
	assert_int_equal(gw_side_way(&r), GW_SIDE_NONE);
	assert_true(gw_side_describe(&r, &f.ops, line, sizeof(line)));
	assert_non_null(strstr(line, "no plain NFSv3 side services"));
	event_base_free(base);
}

/* Run the loop until @fd has a datagram, into @b (its sender in @from); its length, 0: none in 2 s.
 */
static size_t loop_recv(struct event_base *base, int fd, uint8_t *b, size_t cap,
			struct sockaddr_storage *from, socklen_t *fromlen)
{
	ssize_t n;

	if (!gwt_spin_until_readable(base, fd, 2000, NULL, NULL))
		return 0;
	*fromlen = sizeof(*from);
	n = recvfrom(fd, b, cap, 0, (struct sockaddr *)from, fromlen);
	return n > 0 ? (size_t)n : 0;
}

/* An NLM v4 LOCK by (@svid, "oh") on one file, from the client "client". */
static size_t nlm_lock_call(uint8_t *b, size_t cap, uint32_t xid, int32_t svid)
{
	static const uint8_t fh[32] = { 1, 2, 3 };
	struct nlm_args a = {
		.vers = 4,
		.kind = NLM_ARGS_LOCK,
		.cookie = { (const uint8_t *)"ck", 2 },
		.exclusive = true,
		.lock = { .caller = { (const uint8_t *)"client", 6 },
			  .fh = { fh, sizeof(fh) },
			  .oh = { (const uint8_t *)"oh", 2 },
			  .svid = svid },
	};
	size_t h = rpc_encode_call_hdr(b, cap, xid, NLM_PROG, 4, NLMPROC_LOCK), m;

	assert_true(h > 0);
	assert_int_equal(nlm_encode_args(&a, b + h, cap - h, &m), 0);
	return h + m;
}

/* The lockd's answer to the call @call: LCK_GRANTED, with the call's cookie. */
static size_t granted_reply(const uint8_t *call, size_t len, uint8_t *b, size_t cap)
{
	struct rpc_call_hdr h;
	struct nlm_args a;

	assert_int_equal(rpc_call_decode(call, len, &h), RPC_HDR_CALL);
	assert_int_equal(h.prog, NLM_PROG);
	assert_int_equal(nlm_decode_args(h.vers, h.proc, call + h.args_off, len - h.args_off, &a),
			 0);
	size_t n = rpc_encode_accept_error(b, cap, h.xid, RPCSTAT_SUCCESS, 0, 0);

	return n + gwt_nlm_res(b + n, a.cookie.p, a.cookie.len, NLM_GRANTED);
}

/*
 * A route with upstream_nlm_port, upstream_nsm_port and
 * nlm_max_owners_per_client 2: the gateway's SM_NOTIFY goes to that statd
 * port and the client's LOCKs to that lockd port (no portmapper there to ask),
 * its state files are in its state_directory,
 * and with two owners holding locks its third owner is refused by the
 * gateway (DENIED_NOLOCKS) without reaching the server.
 */
static void test_nlm_keys_reach_the_relay(void **state)
{
	(void)state;
	struct event_base *base = event_base_new();
	struct gw_route r;
	struct gw_counters c = { 0 };
	struct gw_stats_nlm st;
	uint8_t b[2048], out[2048];
	uint16_t lockd_port, client_port, statd_port;

	route_init(&r, GW_MODE_FORWARD, 0x7f000001);
	int lockd = gwt_udp_bind(GWT_LOOPBACK, 0, &lockd_port);
	int client = gwt_udp_bind(GWT_LOOPBACK, 0, &client_port);
	int statd = gwt_udp_bind(GWT_LOOPBACK, 0, &statd_port);
	assert_true(lockd >= 0 && client >= 0 && statd >= 0);
	r.upstream_nlm_port = lockd_port;
	r.upstream_nsm_port = statd_port;
	/* A state directory of the route's own, made by the gateway. */
	char top[] = "/tmp/test_side_route_sd.XXXXXX", dir[64], path[96];
	assert_non_null(mkdtemp(top));
	snprintf(dir, sizeof(dir), "%s/state", top);
	r.state_directory = dir;
	r.nlm_max_owners_per_client = 2;
	struct gw_side *side = side_started(base, &r, &c);
	/* The gateway's restart told to the statd at the configured port. */
	struct sockaddr_storage sfrom;
	socklen_t sfl;
	size_t sn = loop_recv(base, statd, b, sizeof(b), &sfrom, &sfl);
	struct rpc_call_hdr sh;
	assert_int_equal(rpc_call_decode(b, sn, &sh), RPC_HDR_CALL);
	assert_int_equal(sh.prog, NSM_PROG);
	assert_int_equal(sh.proc, 6); /* SM_NOTIFY */
	snprintf(path, sizeof(path), "%s/t.nsm-state", dir);
	assert_int_equal(access(path, R_OK), 0);
	int nlm = getport(base, r.portmapper_port, NLM_PROG, 4, PMAP_IPPROTO_UDP);
	assert_true(nlm > 0);
	struct sockaddr_in to = gwt_sin(GWT_LOOPBACK, (uint16_t)nlm);

	for (int32_t svid = 1; svid <= 3; svid++) {
		struct sockaddr_storage from;
		socklen_t fl;
		size_t n = nlm_lock_call(b, sizeof(b), 100 + (uint32_t)svid, svid);

		assert_int_equal(sendto(client, b, n, 0, (struct sockaddr *)&to, sizeof(to)),
				 (ssize_t)n);
		if (svid <= 2) {
			/* At the configured port: no portmapper was asked (none is there). */
			n = loop_recv(base, lockd, b, sizeof(b), &from, &fl);
			assert_true(n > 0);
			n = granted_reply(b, n, out, sizeof(out));
			assert_int_equal(sendto(lockd, out, n, 0, (struct sockaddr *)&from, fl),
					 (ssize_t)n);
		}
		n = loop_recv(base, client, b, sizeof(b), &from, &fl);
		assert_true(n >= 4);
		assert_int_equal(xdr_get32(b), 100 + (uint32_t)svid);
		assert_int_equal(xdr_get32(b + n - 4),
				 svid <= 2 ? NLM_GRANTED : NLM_DENIED_NOLOCKS);
	}
	/* The third never reached the server; two owners are recorded. */
	struct pollfd p = { .fd = lockd, .events = POLLIN };
	assert_int_equal(poll(&p, 1, 0), 0);
	assert_true(gw_side_nlm_stats(side, &st));
	assert_int_equal(st.owners, 2);
	assert_int_equal(st.locks, 2);
	assert_int_equal(st.client_owners_full, 1);
	gw_side_stop(side);
	close(lockd);
	close(client);
	close(statd);
	/* The client list was saved there at stop, beside the NSM state. */
	assert_int_equal(unlink(path), 0);
	snprintf(path, sizeof(path), "%s/t.nlm-clients", dir);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(dir), 0);
	assert_int_equal(rmdir(top), 0);
	event_base_free(base);
}

int main(void)
{
	/* The routes' NSM state files (gateway/side/nlm/nlm_restart.h): not in the host's /var/lib.
	 */
	char dir[] = "/tmp/test_side_route.XXXXXX";
	assert_non_null(mkdtemp(dir));
	setenv("STATE_DIRECTORY", dir, 1);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_forward_route_advertises_nfs_and_mount),
		cmocka_unit_test(test_reload_gives_the_side_its_new_route),
		cmocka_unit_test(test_reverse_route_advertises_mount_only),
		cmocka_unit_test(test_refused_configurations),
		cmocka_unit_test(test_wildcard_route_registers_with_host_rpcbind),
		cmocka_unit_test(test_wildcard_reverse_route_registers_no_nfs),
		cmocka_unit_test(test_wildcard_route_without_rpcbind_or_with_lockd),
		cmocka_unit_test(test_nlm_keys_reach_the_relay),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	char path[64];
	snprintf(path, sizeof(path), "%s/t.nsm-state", dir);
	unlink(path);
	rmdir(dir);
	return rc;
}
