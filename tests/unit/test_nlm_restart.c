/* SPDX-License-Identifier: MIT */
/*
 * The gateway's restart told to the server's statd (gateway/side/nlm/nlm_restart.c),
 * on loopback: the "server" is 127.0.0.1 with a fake portmapper and statd.
 * The state number grows across starts (the file), stays odd, goes past
 * the clock and survives the clock going back; an unwritable file still
 * gives a number from the clock. A start asks the portmapper for NSM v1
 * UDP and sends SM_NOTIFY with the upstream-side address as mon_name and
 * the new state; a second start (the restart) sends a larger state. A
 * server that never answers is given up after the timeout; a reply with a
 * wrong xid is counted and ignored.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
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
#include "gateway/side/nlm/nlm_restart.h"
#include "gateway/side/nlm/nlm_xdr.h"
#include "gateway/side/rpc/portmap.h"

#include "support/loop.h"
#include "support/udp.h"

struct t {
	struct event_base *base;
	struct gw_route route;
	struct gw_counters counters;
	char dir[64], path[128];
	int pmap, statd;
	uint16_t pmap_port, statd_port;
	bool answers, wrong_xid;
	int notifies;
	int getports; /* calls the portmapper received */
	char mon_name[64];
	int32_t state;
};

/* The fake server: its portmapper gives statd's port; statd records SM_NOTIFY. */
static void server_serve(void *arg)
{
	struct t *t = arg;
	uint8_t b[2048], out[256];
	struct sockaddr_in from;
	socklen_t fl = sizeof(from);
	ssize_t r = recvfrom(t->pmap, b, sizeof(b), 0, (struct sockaddr *)&from, &fl);
	struct rpc_call_hdr h;

	if (r > 0)
		t->getports++;
	if (r > 0 && t->answers) {
		assert_int_equal(rpc_call_decode(b, (size_t)r, &h), RPC_HDR_CALL);
		assert_int_equal(h.prog, PMAP_PROG);
		assert_int_equal(xdr_get32(b + h.args_off), NSM_PROG);
		assert_int_equal(xdr_get32(b + h.args_off + 4), 1);
		assert_int_equal(xdr_get32(b + h.args_off + 8), PMAP_IPPROTO_UDP);
		uint32_t xid = t->wrong_xid ? xdr_get32(b) + 1 : xdr_get32(b);
		size_t n = rpc_encode_accept_error(out, sizeof(out), xid, 0, 0, 0);
		xdr_put32(out + n, t->statd_port);
		sendto(t->pmap, out, n + 4, 0, (struct sockaddr *)&from, fl);
	}
	fl = sizeof(from);
	r = recvfrom(t->statd, b, sizeof(b), 0, (struct sockaddr *)&from, &fl);
	if (r <= 0 || !t->answers)
		return;
	assert_int_equal(rpc_call_decode(b, (size_t)r, &h), RPC_HDR_CALL);
	assert_int_equal(h.prog, NSM_PROG);
	assert_int_equal(h.vers, 1);
	assert_int_equal(h.proc, 6); /* SM_NOTIFY */
	uint32_t nl = xdr_get32(b + h.args_off);
	assert_true(nl < sizeof(t->mon_name));
	memcpy(t->mon_name, b + h.args_off + 4, nl);
	t->mon_name[nl] = 0;
	t->state = (int32_t)xdr_get32(b + h.args_off + 4 + xdr_align(nl));
	t->notifies++;
	size_t n = rpc_encode_accept_error(out, sizeof(out), h.xid, 0, 0, 0);
	sendto(t->statd, out, n, 0, (struct sockaddr *)&from, fl);
}

static int setup(void **state)
{
	struct t *t = calloc(1, sizeof(*t));

	t->base = event_base_new();
	t->route.name = "t";
	snprintf(t->dir, sizeof(t->dir), "/tmp/nlm_restart.XXXXXX");
	assert_non_null(mkdtemp(t->dir));
	snprintf(t->path, sizeof(t->path), "%s/t.nsm-state", t->dir);
	t->pmap = gwt_udp_bind(GWT_LOOPBACK, 0, &t->pmap_port);
	t->statd = gwt_udp_bind(GWT_LOOPBACK, 0, &t->statd_port);
	assert_true(t->pmap >= 0 && t->statd >= 0);
	t->answers = true;
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	struct t *t = *state;
	char tmp[160];

	unlink(t->path);
	snprintf(tmp, sizeof(tmp), "%s.tmp", t->path);
	unlink(tmp);
	rmdir(t->dir);
	close(t->pmap);
	close(t->statd);
	event_base_free(t->base);
	free(t);
	return 0;
}

static struct nlm_restart *start_at(struct t *t, uint32_t timeout_ms, uint16_t statd_port)
{
	struct sockaddr_in srv = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001) };
	struct nlm_restart_config c = { .route = &t->route,
					.counters = &t->counters,
					.state_path = t->path,
					.pmap_port = t->pmap_port,
					.statd_port = statd_port,
					.retry_ms = 50,
					.timeout_ms = timeout_ms };
	char err[256];
	struct nlm_restart *nr = nlm_restart_start(t->base, &c, (struct sockaddr *)&srv,
						   sizeof(srv), err, sizeof(err));

	assert_non_null(nr);
	return nr;
}

static struct nlm_restart *start(struct t *t, uint32_t timeout_ms)
{
	return start_at(t, timeout_ms, 0);
}

static int32_t file_state(const char *path)
{
	FILE *f = fopen(path, "r");
	int v = -1;

	assert_non_null(f);
	assert_int_equal(fscanf(f, "%d", &v), 1);
	fclose(f);
	return v;
}

static void test_state_number_grows_odd_and_persists(void **state)
{
	struct t *t = *state;
	char err[256];
	int32_t s;

	assert_int_equal(nlm_restart_next_state(t->path, 1000, &s, err, sizeof(err)), 0);
	assert_int_equal(s, 1001);
	assert_int_equal(file_state(t->path), 1001);
	/* The same second again (a quick restart): still past the last one. */
	assert_int_equal(nlm_restart_next_state(t->path, 1000, &s, err, sizeof(err)), 0);
	assert_int_equal(s, 1003);
	/* Later: the clock wins; then the clock goes back: the file wins. */
	assert_int_equal(nlm_restart_next_state(t->path, 5000, &s, err, sizeof(err)), 0);
	assert_int_equal(s, 5001);
	assert_int_equal(nlm_restart_next_state(t->path, 10, &s, err, sizeof(err)), 0);
	assert_int_equal(s, 5003);
	assert_int_equal(file_state(t->path), 5003);
	/* A corrupt file is not trusted: the clock's number, written anew. */
	FILE *f = fopen(t->path, "w");
	assert_non_null(f);
	fputs("99999x\n", f);
	fclose(f);
	assert_int_equal(nlm_restart_next_state(t->path, 2000, &s, err, sizeof(err)), 0);
	assert_int_equal(s, 2001);
	assert_int_equal(file_state(t->path), 2001);
}

static void test_unwritable_state_file_uses_the_clock(void **state)
{
	struct t *t = *state;
	char err[256] = "", path[160];
	int32_t s = 0;

	snprintf(path, sizeof(path), "%s/no/such/dir/t.nsm-state", t->dir);
	assert_true(nlm_restart_next_state(path, 7000, &s, err, sizeof(err)) < 0);
	assert_int_equal(s, 7001);
	assert_non_null(strstr(err, path));
}

static void test_start_notifies_the_server_statd_and_restart_goes_higher(void **state)
{
	struct t *t = *state;
	struct nlm_restart *nr = start(t, 2000);

	gwt_spin_for(t->base, 300, server_serve, t);
	assert_int_equal(t->getports, 1); /* statd's port asked of the portmapper */
	assert_int_equal(t->notifies, 1);
	/* What Linux lockd monitors the gateway by: its upstream-side address. */
	assert_string_equal(t->mon_name, "127.0.0.1");
	const struct nlm_restart_stats *st = nlm_restart_stats(nr);
	assert_int_equal(t->state, st->state);
	assert_int_equal(st->state & 1, 1);
	assert_int_equal(st->persisted, 1);
	assert_int_equal(st->delivered, 1);
	assert_int_equal(st->not_delivered, 0);
	assert_int_equal(file_state(t->path), st->state);
	int32_t first = st->state;
	nlm_restart_stop(nr);

	/* The gateway restarts: the server's statd sees a new, larger state. */
	nr = start(t, 2000);
	gwt_spin_for(t->base, 300, server_serve, t);
	assert_int_equal(t->notifies, 2);
	assert_true(t->state > first);
	assert_int_equal(nlm_restart_stats(nr)->delivered, 1);
	nlm_restart_stop(nr);
}

/* The route's upstream_nsm_port: SM_NOTIFY straight to it, the portmapper never asked. */
static void test_configured_statd_port_skips_the_portmapper(void **state)
{
	struct t *t = *state;
	struct nlm_restart *nr = start_at(t, 2000, t->statd_port);

	gwt_spin_for(t->base, 300, server_serve, t);
	assert_int_equal(t->getports, 0);
	assert_int_equal(t->notifies, 1);
	assert_string_equal(t->mon_name, "127.0.0.1");
	assert_int_equal(t->state, nlm_restart_stats(nr)->state);
	assert_int_equal(nlm_restart_stats(nr)->delivered, 1);
	nlm_restart_stop(nr);
}

static void test_silent_server_given_up_after_timeout(void **state)
{
	struct t *t = *state;
	struct nlm_restart *nr;

	t->answers = false;
	nr = start(t, 300);
	gwt_spin_for(t->base, 600, server_serve, t);
	const struct nlm_restart_stats *st = nlm_restart_stats(nr);
	assert_int_equal(t->notifies, 0);
	assert_int_equal(st->delivered, 0);
	assert_int_equal(st->not_delivered, 1);
	assert_true(st->sent >= 3); /* resent before giving up */
	assert_int_equal(t->counters.events[GW_EV_CALL_TIMEOUT], 1);
	nlm_restart_stop(nr);
}

static void test_reply_with_another_xid_ignored(void **state)
{
	struct t *t = *state;
	struct nlm_restart *nr;

	t->wrong_xid = true;
	nr = start(t, 300);
	gwt_spin_for(t->base, 600, server_serve, t);
	assert_int_equal(t->notifies, 0);
	assert_true(t->counters.events[GW_EV_UNMATCHED_REPLY] >= 1);
	assert_int_equal(nlm_restart_stats(nr)->not_delivered, 1);
	nlm_restart_stop(nr);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_state_number_grows_odd_and_persists, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_unwritable_state_file_uses_the_clock, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_start_notifies_the_server_statd_and_restart_goes_higher, setup,
			teardown),
		cmocka_unit_test_setup_teardown(test_configured_statd_port_skips_the_portmapper,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_silent_server_given_up_after_timeout, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_reply_with_another_xid_ignored, setup,
						teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
