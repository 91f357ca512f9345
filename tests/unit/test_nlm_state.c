/* SPDX-License-Identifier: MIT */
/*
 * The NLM relay's state (gateway/side/nlm/nlm_state.c): two clients with the same
 * svid and owner handle get different upstream owners; an upstream owner
 * (GRANTED callback, TEST holder) maps back to its client and only its
 * client sees its own values; a client's reboot gives UNLOCKs for its locks
 * only, one per (owner, file); UNLOCK forgets what it covers; every bound
 * refuses and counts; a forgotten owner's token is stale; the client list
 * survives a save and load, and a corrupt file is refused with its line.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "gateway/side/nlm/nlm_state.h"

static struct gw_host host4(uint32_t ip)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(700) };
	struct gw_host h;

	sa.sin_addr.s_addr = htonl(ip);
	assert_true(gw_host_from_sockaddr(&h, (struct sockaddr *)&sa, sizeof(sa)));
	return h;
}

static struct nlm_bytes bytes(const char *s)
{
	return (struct nlm_bytes){ (const uint8_t *)s, (uint32_t)strlen(s) };
}

static const uint8_t fh_a[32] = { 1, 2, 3 }, fh_b[32] = { 9, 9, 9 };
#define FH_A ((struct nlm_bytes){ fh_a, sizeof(fh_a) })
#define FH_B ((struct nlm_bytes){ fh_b, sizeof(fh_b) })

static struct nlm_state *new_state(uint32_t owners, uint32_t locks, uint32_t per_client)
{
	struct nlm_state_limits lim = {
		.max_clients = 4,
		.max_owners = owners,
		.max_locks = locks,
		.max_locks_per_client = per_client,
		.max_oh = 64,
	};
	struct nlm_state *st = nlm_state_new(&lim, 0x1122334455667788ull);

	assert_non_null(st);
	return st;
}

static void same_owner_two_clients(void **state)
{
	struct nlm_state *st = new_state(16, 64, 32);
	struct gw_host a = host4(0x0a000001), b = host4(0x0a000002);
	struct nlm_owner_id ia, ib, ia2;

	(void)state;
	assert_int_equal(nlm_state_owner(st, &a, 1234, bytes("1234@box"), &ia), 0);
	assert_int_equal(nlm_state_owner(st, &b, 1234, bytes("1234@box"), &ib), 0);
	assert_int_not_equal(ia.svid, ib.svid);
	assert_true(ia.svid > 0 && ib.svid > 0);
	assert_memory_not_equal(ia.oh, ib.oh, NLM_TOKEN_LEN);
	/* The same owner again is the same upstream owner. */
	assert_int_equal(nlm_state_owner(st, &a, 1234, bytes("1234@box"), &ia2), 0);
	assert_int_equal(ia2.svid, ia.svid);
	assert_memory_equal(ia2.oh, ia.oh, NLM_TOKEN_LEN);
	/* Another svid or oh of the same client is another owner. */
	assert_int_equal(nlm_state_owner(st, &a, 1235, bytes("1234@box"), &ia2), 0);
	assert_int_not_equal(ia2.svid, ia.svid);
	assert_int_equal(nlm_state_owner(st, &a, 1234, bytes("1234@box2"), &ia2), 0);
	assert_int_not_equal(ia2.svid, ia.svid);
	nlm_state_free(st);

	/* Many clients, one (svid, oh): keys that share a hash chain stay apart. */
	struct nlm_state_limits lim = { .max_clients = 200, .max_owners = 200 };
	struct nlm_owner_id ids[200];
	st = nlm_state_new(&lim, 1);
	assert_non_null(st);
	for (uint32_t i = 0; i < 200; i++) {
		struct gw_host h = host4(0x0a000000 + ((i * 2654435761u) & 0xffffff));
		assert_int_equal(nlm_state_owner(st, &h, 1, bytes("1@box"), &ids[i]), 0);
		for (uint32_t k = 0; k < i; k++)
			assert_int_not_equal(ids[k].svid, ids[i].svid);
	}
	nlm_state_free(st);
}

static void callback_and_holder_map_back(void **state)
{
	struct nlm_state *st = new_state(16, 64, 32);
	struct gw_host a = host4(0x0a000001), b = host4(0x0a000002);
	struct nlm_owner_id ia, ib;
	struct nlm_client_owner co;

	(void)state;
	assert_int_equal(nlm_state_owner(st, &a, 77, bytes("77@a"), &ia), 0);
	assert_int_equal(nlm_state_owner(st, &b, 77, bytes("77@b"), &ib), 0);

	/* GRANTED for B's owner goes to B with B's own svid and oh. */
	assert_true(nlm_state_lookup_upstream(st, ib.svid, (struct nlm_bytes){ ib.oh, 16 }, &co));
	assert_int_equal(co.host.addr[3], 2);
	assert_int_equal(co.svid, 77);
	assert_int_equal(co.oh.len, 4);
	assert_memory_equal(co.oh.p, "77@b", 4);
	/* The svid of one owner with the token of another is nobody's. */
	assert_false(nlm_state_lookup_upstream(st, ia.svid, (struct nlm_bytes){ ib.oh, 16 }, &co));

	/* A TEST holder: A's own lock shows A's values to A ... */
	struct nlm_holder h = { .svid = ia.svid, .oh = { ia.oh, 16 } };
	nlm_state_holder_view(st, &a, &h);
	assert_int_equal(h.svid, 77);
	assert_memory_equal(h.oh.p, "77@a", 4);
	/* ... and only the gateway's token to B. */
	h = (struct nlm_holder){ .svid = ia.svid, .oh = { ia.oh, 16 } };
	nlm_state_holder_view(st, &b, &h);
	assert_int_equal(h.svid, ia.svid);
	assert_int_equal(h.oh.len, 16);
	assert_memory_equal(h.oh.p, ia.oh, 16);
	/* A holder that is not the gateway's (a local process) passes unchanged. */
	h = (struct nlm_holder){ .svid = 4321, .oh = bytes("server-local") };
	nlm_state_holder_view(st, &a, &h);
	assert_int_equal(h.svid, 4321);
	/* Only the mismatched svid and token above counted as stale. */
	assert_int_equal(nlm_state_stats(st)->stale_owner, 1);
	nlm_state_free(st);
}

static void reboot_unlocks_only_that_client(void **state)
{
	struct nlm_state *st = new_state(16, 64, 32);
	struct gw_host a = host4(0x0a000001), b = host4(0x0a000002);
	struct nlm_owner_id ia1, ia2, ib;
	const struct nlm_unlock *u;

	(void)state;
	assert_int_equal(nlm_state_owner(st, &a, 1, bytes("1@a"), &ia1), 0);
	assert_int_equal(nlm_state_owner(st, &a, 2, bytes("2@a"), &ia2), 0);
	assert_int_equal(nlm_state_owner(st, &b, 1, bytes("1@a"), &ib), 0);
	/* A: two ranges of one file by owner 1 (one UNLOCK), one by owner 2, one other file. */
	assert_int_equal(nlm_state_record_lock(st, &ia1, 4, FH_A, 0, 10), 0);
	assert_int_equal(nlm_state_record_lock(st, &ia1, 4, FH_A, 20, 10), 0);
	assert_int_equal(nlm_state_record_lock(st, &ia1, 4, FH_A, 20, 10), 0); /* again */
	assert_int_equal(nlm_state_record_lock(st, &ia2, 4, FH_A, 40, 1), 0);
	assert_int_equal(nlm_state_record_lock(st, &ia1, 3, FH_B, 0, 0), 0);
	assert_int_equal(nlm_state_record_lock(st, &ib, 4, FH_A, 100, 1), 0);
	assert_int_equal(nlm_state_client_locks(st, &a), 4);
	assert_int_equal(nlm_state_client_locks(st, &b), 1);
	/* What /stats shows as held. */
	assert_int_equal(nlm_state_clients(st), 2);
	assert_int_equal(nlm_state_owners(st), 3);
	assert_int_equal(nlm_state_locks(st), 5);

	size_t n = nlm_state_client_rebooted(st, &a, &u);
	assert_int_equal(n, 3);
	int seen_a1 = 0, seen_a2 = 0, seen_b1 = 0;
	for (size_t i = 0; i < n; i++) {
		assert_int_not_equal(u[i].owner.svid, ib.svid);
		if (u[i].owner.svid == ia1.svid && u[i].fh_len == 32 && u[i].fh[0] == 1)
			seen_a1++, assert_int_equal(u[i].vers, 4);
		if (u[i].owner.svid == ia2.svid)
			seen_a2++, assert_memory_equal(u[i].owner.oh, ia2.oh, 16);
		if (u[i].owner.svid == ia1.svid && u[i].fh[0] == 9)
			seen_b1++, assert_int_equal(u[i].vers, 3);
	}
	assert_true(seen_a1 == 1 && seen_a2 == 1 && seen_b1 == 1);
	assert_int_equal(nlm_state_client_locks(st, &a), 0);
	assert_int_equal(nlm_state_client_locks(st, &b), 1);
	assert_int_equal(nlm_state_locks(st), 1);
	assert_int_equal(nlm_state_clients(st), 1);
	assert_int_equal(nlm_state_owners(st), 1);
	/* A's owners are forgotten: a late GRANTED for them is stale, B's still maps. */
	struct nlm_client_owner co;
	assert_false(
		nlm_state_lookup_upstream(st, ia1.svid, (struct nlm_bytes){ ia1.oh, 16 }, &co));
	assert_int_equal(nlm_state_stats(st)->stale_owner, 1);
	assert_true(nlm_state_lookup_upstream(st, ib.svid, (struct nlm_bytes){ ib.oh, 16 }, &co));
	assert_int_equal(nlm_state_record_lock(st, &ia1, 4, FH_A, 0, 1), -ENOENT);
	/* A new owner in a reused slot has a new upstream svid. */
	struct nlm_owner_id again;
	assert_int_equal(nlm_state_owner(st, &a, 1, bytes("1@a"), &again), 0);
	assert_int_not_equal(again.svid, ia1.svid);
	assert_int_not_equal(again.svid, ia2.svid);
	/* A second reboot of A has nothing to unlock. */
	assert_int_equal(nlm_state_client_rebooted(st, &a, &u), 0);
	nlm_state_free(st);
}

static void unlock_forgets_what_it_covers(void **state)
{
	struct nlm_state *st = new_state(16, 64, 32);
	struct gw_host a = host4(0x0a000001);
	struct nlm_owner_id o;

	(void)state;
	assert_int_equal(nlm_state_owner(st, &a, 1, bytes("1@a"), &o), 0);
	assert_int_equal(nlm_state_record_lock(st, &o, 4, FH_A, 0, 10), 0);
	assert_int_equal(nlm_state_record_lock(st, &o, 4, FH_A, 20, 10), 0);
	assert_int_equal(nlm_state_record_lock(st, &o, 4, FH_A, 50, 0), 0);
	nlm_state_unlocked(st, &o, FH_B, 0, 0); /* another file */
	assert_int_equal(nlm_state_client_locks(st, &a), 3);
	nlm_state_unlocked(st, &o, FH_A, 5, 10); /* cuts [0,10): kept */
	assert_int_equal(nlm_state_client_locks(st, &a), 3);
	nlm_state_unlocked(st, &o, FH_A, 0, 10);
	assert_int_equal(nlm_state_client_locks(st, &a), 2);
	nlm_state_unlocked(st, &o, FH_A, 20, UINT64_MAX); /* to the end, without overflow */
	assert_int_equal(nlm_state_client_locks(st, &a), 0);
	assert_int_equal(nlm_state_locks(st), 0);
	nlm_state_free(st);
}

static void limits_refuse_and_count(void **state)
{
	struct nlm_state *st = new_state(3, 4, 3);
	struct gw_host a = host4(1), b = host4(2), c = host4(3), d = host4(4), e = host4(5);
	struct nlm_owner_id o[3], x;
	char big[66];

	(void)state;
	memset(big, 'o', 65); /* max_oh is 64 */
	big[65] = '\0';
	assert_int_equal(nlm_state_owner(st, &a, 9, bytes(big), &x), -E2BIG);
	assert_int_equal(nlm_state_stats(st)->oh_too_long, 1);
	big[64] = '\0';
	assert_int_equal(nlm_state_owner(st, &a, 9, bytes(big), &x), 0);

	/* Owners: three slots; a fourth owner reclaims the idle one, not one with locks. */
	assert_int_equal(nlm_state_owner(st, &a, 1, bytes("1"), &o[0]), 0);
	assert_int_equal(nlm_state_owner(st, &a, 2, bytes("2"), &o[1]), 0);
	assert_int_equal(nlm_state_record_lock(st, &o[0], 4, FH_A, 0, 1), 0);
	assert_int_equal(nlm_state_record_lock(st, &o[1], 4, FH_A, 1, 1), 0);
	assert_int_equal(nlm_state_owner(st, &a, 3, bytes("3"), &o[2]), 0); /* reclaims big */
	assert_int_equal(nlm_state_record_lock(st, &o[2], 4, FH_A, 2, 1), 0);
	assert_int_equal(nlm_state_owner(st, &b, 1, bytes("1"), &x), -ENOSPC);
	assert_int_equal(nlm_state_stats(st)->owners_full, 1);

	/* Locks per client, then in all. */
	assert_int_equal(nlm_state_record_lock(st, &o[2], 4, FH_A, 3, 1), -ENOSPC);
	assert_int_equal(nlm_state_stats(st)->client_locks_full, 1);
	const struct nlm_unlock *u;
	assert_int_equal(nlm_state_client_rebooted(st, &a, &u), 3);
	struct nlm_owner_id ob, oc;
	assert_int_equal(nlm_state_owner(st, &b, 1, bytes("1"), &ob), 0);
	assert_int_equal(nlm_state_owner(st, &c, 1, bytes("1"), &oc), 0);
	for (uint64_t i = 0; i < 3; i++)
		assert_int_equal(nlm_state_record_lock(st, &ob, 4, FH_A, i, 1), 0);
	assert_int_equal(nlm_state_record_lock(st, &oc, 4, FH_A, 0, 1), 0);
	assert_int_equal(nlm_state_record_lock(st, &oc, 4, FH_A, 1, 1), -ENOSPC);
	assert_int_equal(nlm_state_stats(st)->locks_full, 1);

	nlm_state_free(st);

	/*
	 * Clients: four, each with a call in flight (none to reclaim). A client
	 * that rebooted leaves room for another.
	 */
	st = new_state(16, 64, 32);
	const struct gw_host four[] = { a, b, c, d };
	for (size_t i = 0; i < 4; i++) {
		assert_int_equal(nlm_state_owner(st, &four[i], 1, bytes("1"), &x), 0);
		assert_true(nlm_state_call_begin(st, &x));
	}
	assert_int_equal(nlm_state_owner(st, &e, 1, bytes("1"), &x), -ENOSPC);
	assert_int_equal(nlm_state_stats(st)->clients_full, 1);
	assert_int_equal(nlm_state_client_rebooted(st, &b, &u), 0);
	assert_int_equal(nlm_state_owner(st, &e, 1, bytes("1"), &x), 0);
	nlm_state_free(st);

	struct nlm_state_limits bad = { .max_owners = 70000 };
	assert_null(nlm_state_new(&bad, 1));
	assert_int_equal(errno, EINVAL);
}

static void clients_survive_restart(void **state)
{
	struct nlm_state *st = new_state(16, 64, 32);
	struct gw_host a = host4(0x0a000001), idle = host4(0x0a000003), via = host4(0xc0000202);
	struct sockaddr_in6 s6 = { .sin6_family = AF_INET6 };
	struct gw_host v6;
	struct nlm_peer got[8];
	struct nlm_owner_id o;
	char dir[] = "/tmp/nlmstateXXXXXX", path[256], err[256];
	size_t n;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/clients", dir);
	inet_pton(AF_INET6, "fd00::5", &s6.sin6_addr);
	assert_true(gw_host_from_sockaddr(&v6, (struct sockaddr *)&s6, sizeof(s6)));
	assert_int_equal(nlm_state_load_clients(path, got, 8, &n, err, sizeof(err)), -ENOENT);
	/* An IPv4 client seen through a dual-stack socket is the same host. */
	struct gw_host mapped;
	s6.sin6_addr = (struct in6_addr){ 0 };
	inet_pton(AF_INET6, "::ffff:10.0.0.1", &s6.sin6_addr);
	assert_true(gw_host_from_sockaddr(&mapped, (struct sockaddr *)&s6, sizeof(s6)));
	assert_memory_equal(&mapped, &a, sizeof(a));

	assert_int_equal(nlm_state_owner(st, &a, 1, bytes("1"), &o), 0);
	assert_int_equal(nlm_state_record_lock(st, &o, 4, FH_A, 0, 1), 0);
	nlm_state_client_via(st, &o, &via, true); /* the address of the gateway's it called */
	struct gw_host forged = host4(0xc00002ff);
	nlm_state_client_via(st, &o, &forged, false); /* a datagram does not replace it */
	assert_int_equal(nlm_state_owner(st, &v6, 1, bytes("1"), &o), 0);
	assert_int_equal(nlm_state_record_lock(st, &o, 4, FH_A, 1, 1), 0);
	assert_int_equal(nlm_state_owner(st, &idle, 1, bytes("1"), &o), 0); /* no lock */
	assert_int_equal(nlm_state_save_clients(st, path, err, sizeof(err)), 0);
	nlm_state_free(st);

	assert_int_equal(nlm_state_load_clients(path, got, 8, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 2);
	assert_memory_equal(&got[0].host, &a, sizeof(a));
	assert_memory_equal(&got[0].via, &via, sizeof(via));
	assert_memory_equal(&got[1].host, &v6, sizeof(v6));
	assert_int_equal(got[1].via.family, 0); /* not known: none saved */
	assert_int_equal(nlm_state_load_clients(path, got, 1, &n, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, ":3: more than 1"));

	FILE *f = fopen(path, "a");
	fputs("10.0.0.9 192.0.2.300\n", f);
	fclose(f);
	assert_int_equal(nlm_state_load_clients(path, got, 8, &n, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, ":4: not an address and the address called: \"10.0.0.9 "));
	assert_int_equal(n, 0);

	/* The previous version's list, addresses only, is read: the address called unknown. */
	f = fopen(path, "w");
	fputs("rpcrdma-gw nlm clients 1\n10.0.0.1\n", f);
	fclose(f);
	assert_int_equal(nlm_state_load_clients(path, got, 8, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 1);
	assert_memory_equal(&got[0].host, &a, sizeof(a));
	assert_int_equal(got[0].via.family, 0);
	f = fopen(path, "a");
	fputs("10.0.0.2 192.0.2.2\n", f); /* version 1 has no second address */
	fclose(f);
	assert_int_equal(nlm_state_load_clients(path, got, 8, &n, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, ":3: not an address: "));

	f = fopen(path, "w");
	fputs("10.0.0.1\n", f);
	fclose(f);
	assert_int_equal(nlm_state_load_clients(path, got, 8, &n, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, ":1: not a client list"));

	f = fopen(path, "w");
	fputs("rpcrdma-gw nlm clients 1\n10.0.0.1", f); /* cut short */
	fclose(f);
	assert_int_equal(nlm_state_load_clients(path, got, 8, &n, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, ":2: line too long or unterminated"));

	unlink(path);
	rmdir(dir);
}

/*
 * The saved client list is rewritten only when the set of clients holding
 * locks changes: a client's first lock and its last release mark it, a
 * second lock, an owner without locks, or a partial unlock do not; taking
 * the mark clears it.
 */
static void clients_dirty_only_when_the_set_changes(void **state)
{
	struct nlm_state *st = new_state(16, 64, 32);
	struct gw_host a = host4(0x0a000001), b = host4(0x0a000002);
	struct nlm_owner_id oa, ob;
	const struct nlm_unlock *u;

	(void)state;
	assert_false(nlm_state_take_clients_dirty(st));
	assert_int_equal(nlm_state_owner(st, &a, 1, bytes("1"), &oa), 0);
	assert_false(nlm_state_take_clients_dirty(st)); /* an owner holds nothing */
	assert_int_equal(nlm_state_record_lock(st, &oa, 4, FH_A, 0, 1), 0);
	assert_true(nlm_state_take_clients_dirty(st));
	assert_false(nlm_state_take_clients_dirty(st)); /* taken */
	assert_int_equal(nlm_state_record_lock(st, &oa, 4, FH_B, 0, 1), 0);
	assert_false(nlm_state_take_clients_dirty(st)); /* a's second lock */
	nlm_state_unlocked(st, &oa, FH_A, 0, 1);
	assert_false(nlm_state_take_clients_dirty(st)); /* a still holds FH_B */
	nlm_state_unlocked(st, &oa, FH_B, 0, 0);
	assert_true(nlm_state_take_clients_dirty(st)); /* a holds nothing now */
	assert_int_equal(nlm_state_owner(st, &b, 1, bytes("1"), &ob), 0);
	assert_int_equal(nlm_state_record_lock(st, &ob, 4, FH_A, 0, 1), 0);
	assert_true(nlm_state_take_clients_dirty(st));
	assert_int_equal(nlm_state_client_rebooted(st, &b, &u), 1);
	assert_true(nlm_state_take_clients_dirty(st)); /* b's reboot released it */
	nlm_state_free(st);
}

/*
 * One client may not hold every owner: at max_owners_per_client its own
 * idle owner is reused; with none idle it is refused, and others are not.
 */
/*
 * The same SM_NOTIFY state within sm-notify's 15 minutes of retries is a
 * retransmission; later it is another reboot (a statd that does not keep
 * its state across boots), whose locks must go.
 */
static void repeated_notify_state_is_new_after_the_window(void **state)
{
	struct nlm_state *st = new_state(8, 8, 8);
	struct gw_host a = host4(1), b = host4(2);
	uint64_t t0 = 1000000;

	(void)state;
	assert_true(nlm_state_client_notified(st, &a, 5, t0));
	assert_false(nlm_state_client_notified(st, &a, 5, t0 + 60 * 1000000ULL));
	assert_true(nlm_state_client_notified(st, &b, 5, t0 + 60 * 1000000ULL));
	assert_true(nlm_state_client_notified(st, &a, 7, t0 + 120 * 1000000ULL));
	assert_false(nlm_state_client_notified(st, &a, 7, t0 + 120 * 1000000ULL + 1));
	assert_true(
		nlm_state_client_notified(st, &a, 7, t0 + 120 * 1000000ULL + NLM_NOTIFY_REPEAT_US));
	assert_int_equal(nlm_state_stats(st)->notify_repeated, 2);
	nlm_state_free(st);
}

static void owners_per_client_bounded(void **state)
{
	struct nlm_state_limits lim = {
		.max_clients = 4,
		.max_owners = 16,
		.max_locks = 64,
		.max_locks_per_client = 32,
		.max_owners_per_client = 2,
	};
	struct nlm_state *st = nlm_state_new(&lim, 7);
	struct gw_host a = host4(1), b = host4(2);
	struct nlm_owner_id o1, o2, x;

	(void)state;
	assert_non_null(st);
	assert_int_equal(nlm_state_owner(st, &a, 1, bytes("1"), &o1), 0);
	assert_int_equal(nlm_state_owner(st, &a, 2, bytes("2"), &o2), 0);
	assert_int_equal(nlm_state_record_lock(st, &o1, 4, FH_A, 0, 1), 0);
	/* The idle owner 2 goes for owner 3. */
	assert_int_equal(nlm_state_owner(st, &a, 3, bytes("3"), &x), 0);
	assert_int_equal(nlm_state_owners(st), 2);
	assert_int_equal(nlm_state_record_lock(st, &x, 4, FH_A, 1, 1), 0);
	/* Both hold locks: a third is refused, and counted. */
	assert_int_equal(nlm_state_owner(st, &a, 4, bytes("4"), &x), -ENOSPC);
	assert_int_equal(nlm_state_stats(st)->client_owners_full, 1);
	/* Another client is not held back. */
	assert_int_equal(nlm_state_owner(st, &b, 4, bytes("4"), &x), 0);
	nlm_state_free(st);

	struct nlm_state_limits bad = { .max_owners = 8, .max_owners_per_client = 9 };
	assert_null(nlm_state_new(&bad, 1));
}

/*
 * A host whose only owner is reclaimed to make room for its own new one
 * keeps its place: the new owner is found again, its host counted once,
 * and the table's indexes still find every host (a second host is added
 * and found; the first one's reboot finds it).
 */
static void client_taken_again_after_its_last_owner_went(void **state)
{
	struct nlm_state_limits lim = {
		.max_clients = 4,
		.max_owners = 1,
		.max_locks = 8,
		.max_locks_per_client = 8,
	};
	struct nlm_state *st = nlm_state_new(&lim, 9);
	struct gw_host a = host4(0x0a000001), b = host4(0x0a000002);
	struct nlm_owner_id o1, o2, x;
	const struct nlm_unlock *u;

	(void)state;
	assert_non_null(st);
	assert_int_equal(nlm_state_owner(st, &a, 1, bytes("1"), &o1), 0);
	nlm_state_call_begin(st, &o1);
	nlm_state_call_end(st, &o1, false); /* unanswered: idle, kept */
	assert_int_equal(nlm_state_clients(st), 1);
	/* Owner 1 goes (the only slot), and with it, for a moment, host a. */
	assert_int_equal(nlm_state_owner(st, &a, 2, bytes("2"), &o2), 0);
	assert_int_equal(nlm_state_clients(st), 1);
	assert_int_equal(nlm_state_owners(st), 1);
	assert_int_equal(nlm_state_find_owner(st, &a, 2, bytes("2"), &x), 0);
	assert_int_equal(x.svid, o2.svid);
	assert_int_equal(nlm_state_find_owner(st, &a, 1, bytes("1"), &x), -ENOENT);
	assert_int_equal(nlm_state_record_lock(st, &o2, 4, FH_A, 0, 1), 0);
	/* No owner slot for b: refused, and b leaves no host behind. */
	assert_int_equal(nlm_state_owner(st, &b, 1, bytes("1"), &x), -ENOSPC);
	assert_int_equal(nlm_state_clients(st), 1);
	assert_int_equal(nlm_state_client_rebooted(st, &a, &u), 1);
	assert_int_equal(nlm_state_clients(st), 0);
	/* Both places free again: b, then a, each found. */
	assert_int_equal(nlm_state_owner(st, &b, 1, bytes("1"), &x), 0);
	assert_int_equal(nlm_state_find_owner(st, &b, 1, bytes("1"), &o1), 0);
	assert_int_equal(nlm_state_clients(st), 1);
	nlm_state_free(st);
}

/*
 * An owner lives while it holds a lock or has a call in flight: the end of
 * its last call, answered, gives it back at once with its client; one
 * with a lock, or another call in flight, stays; a LOCK given up
 * unanswered (not settled) leaves it idle, found again by the client's
 * retransmission. A stale owner's end (its client rebooted) changes
 * nothing.
 */
static void owners_live_while_they_hold_or_wait(void **state)
{
	struct nlm_state *st = new_state(16, 64, 32);
	struct gw_host a = host4(0x0a000001);
	struct nlm_owner_id o, again;
	const struct nlm_unlock *u;

	(void)state;
	/* A TEST: its owner, and the client, gone at the answer. */
	assert_int_equal(nlm_state_owner(st, &a, 1, bytes("1"), &o), 0);
	assert_true(nlm_state_call_begin(st, &o));
	assert_int_equal(nlm_state_clients(st), 1);
	nlm_state_call_end(st, &o, true);
	assert_int_equal(nlm_state_owners(st), 0);
	assert_int_equal(nlm_state_clients(st), 0);
	assert_false(nlm_state_call_begin(st, &o)); /* stale now */

	/* Two calls in flight: the first end keeps it; a lock keeps it past the last. */
	assert_int_equal(nlm_state_owner(st, &a, 1, bytes("1"), &o), 0);
	assert_true(nlm_state_call_begin(st, &o));
	assert_true(nlm_state_call_begin(st, &o));
	nlm_state_call_end(st, &o, true);
	assert_int_equal(nlm_state_owners(st), 1);
	assert_int_equal(nlm_state_record_lock(st, &o, 4, FH_A, 0, 1), 0);
	nlm_state_call_end(st, &o, true);
	assert_int_equal(nlm_state_owners(st), 1);
	nlm_state_call_end(st, &o, true); /* one end too many: no underflow */
	assert_int_equal(nlm_state_owners(st), 1);
	/* Its last lock unlocked, no call in flight: given back. */
	nlm_state_unlocked(st, &o, FH_A, 0, 0);
	assert_int_equal(nlm_state_owners(st), 0);
	assert_int_equal(nlm_state_clients(st), 0);

	/* A LOCK given up unanswered: the owner stays, the same for the resend. */
	assert_int_equal(nlm_state_owner(st, &a, 1, bytes("1"), &o), 0);
	assert_true(nlm_state_call_begin(st, &o));
	nlm_state_call_end(st, &o, false);
	assert_int_equal(nlm_state_owners(st), 1);
	assert_int_equal(nlm_state_owner(st, &a, 1, bytes("1"), &again), 0);
	assert_int_equal(again.svid, o.svid);

	/* The client reboots with a call in flight: its late end is stale. */
	assert_true(nlm_state_call_begin(st, &o));
	assert_int_equal(nlm_state_client_rebooted(st, &a, &u), 0);
	assert_int_equal(nlm_state_owners(st), 0);
	assert_int_equal(nlm_state_owner(st, &a, 1, bytes("1"), &again), 0);
	assert_true(nlm_state_call_begin(st, &again));
	nlm_state_call_end(st, &o, true);
	assert_int_equal(nlm_state_owners(st), 1);
	nlm_state_call_end(st, &again, true);
	assert_int_equal(nlm_state_owners(st), 0);
	nlm_state_free(st);
}

/*
 * A full client table takes the least recently used client that holds
 * nothing and has no call in flight for a new host; one with a lock or a
 * call in flight is never taken, and with only those left a new host is
 * refused.
 */
static void idle_clients_reclaimed_lru(void **state)
{
	struct nlm_state *st = new_state(16, 64, 32);
	struct gw_host h[7];
	struct nlm_owner_id o[7], x;
	struct nlm_client_owner co;

	(void)state;
	for (uint32_t i = 0; i < 7; i++)
		h[i] = host4(0x0a000001 + i);
	/* Four idle clients (owners kept across a server reboot, say): 0 .. 3. */
	for (int i = 0; i < 4; i++)
		assert_int_equal(nlm_state_owner(st, &h[i], 1, bytes("1"), &o[i]), 0);
	/* 0 used again: 1 is the least recently used now. */
	assert_int_equal(nlm_state_find_owner(st, &h[0], 1, bytes("1"), &x), 0);
	/* 2 holds a lock, 3 has a call in flight: never taken. */
	assert_int_equal(nlm_state_record_lock(st, &o[2], 4, FH_A, 0, 1), 0);
	assert_true(nlm_state_call_begin(st, &o[3]));

	assert_int_equal(nlm_state_owner(st, &h[4], 1, bytes("1"), &o[4]), 0);
	assert_false(nlm_state_lookup_upstream(st, o[1].svid,
					       (struct nlm_bytes){ o[1].oh, NLM_TOKEN_LEN }, &co));
	assert_true(nlm_state_lookup_upstream(st, o[0].svid,
					      (struct nlm_bytes){ o[0].oh, NLM_TOKEN_LEN }, &co));
	/* Then 0, then 4: the idle ones, oldest first. */
	assert_int_equal(nlm_state_owner(st, &h[5], 1, bytes("1"), &o[5]), 0);
	assert_false(nlm_state_lookup_upstream(st, o[0].svid,
					       (struct nlm_bytes){ o[0].oh, NLM_TOKEN_LEN }, &co));
	assert_true(nlm_state_call_begin(st, &o[5]));
	assert_int_equal(nlm_state_owner(st, &h[6], 1, bytes("1"), &o[6]), 0);
	assert_false(nlm_state_lookup_upstream(st, o[4].svid,
					       (struct nlm_bytes){ o[4].oh, NLM_TOKEN_LEN }, &co));
	assert_int_equal(nlm_state_stats(st)->clients_reclaimed, 3);
	assert_int_equal(nlm_state_stats(st)->clients_full, 0);
	/* 2 holds a lock, 3 and 5 wait for answers; 6 too from now ... */
	assert_true(nlm_state_call_begin(st, &o[6]));
	/* ... so nothing is idle: the next new host is refused. */
	assert_int_equal(nlm_state_owner(st, &h[1], 1, bytes("1"), &x), -ENOSPC);
	assert_int_equal(nlm_state_stats(st)->clients_full, 1);
	assert_int_equal(nlm_state_client_locks(st, &h[2]), 1);
	nlm_state_free(st);
}

/*
 * One /24 (IPv4) or /64 (IPv6) holds at most max_clients_per_prefix client
 * hosts: a new host of a full prefix takes an idle one of its own prefix,
 * or is refused (client_prefix_full), while other prefixes still get in.
 * The default share is a quarter of max_clients, never under 256 (a whole
 * /24), never over max_clients.
 */
static void prefix_share_bounded(void **state)
{
	struct nlm_state_limits lim = { .max_clients = 8, .max_clients_per_prefix = 2 };
	struct nlm_state *st = nlm_state_new(&lim, 3);
	struct gw_host a1 = host4(0x0a000101), a2 = host4(0x0a000102), a3 = host4(0x0a0001fe);
	struct gw_host b1 = host4(0x0a000201);
	struct nlm_owner_id o1, o2, x;

	(void)state;
	assert_non_null(st);
	assert_int_equal(nlm_state_owner(st, &a1, 1, bytes("1"), &o1), 0);
	assert_true(nlm_state_call_begin(st, &o1));
	assert_int_equal(nlm_state_owner(st, &a2, 1, bytes("1"), &o2), 0);
	assert_int_equal(nlm_state_record_lock(st, &o2, 4, FH_A, 0, 1), 0);
	assert_int_equal(nlm_state_owner(st, &a3, 1, bytes("1"), &x), -ENOSPC);
	assert_int_equal(nlm_state_stats(st)->client_prefix_full, 1);
	assert_int_equal(nlm_state_stats(st)->clients_full, 0);
	assert_int_equal(nlm_state_owner(st, &b1, 1, bytes("1"), &x), 0);
	/* a1's LOCK given up unanswered: idle, so a3 takes its place in the prefix. */
	nlm_state_call_end(st, &o1, false);
	assert_int_equal(nlm_state_owner(st, &a3, 1, bytes("1"), &x), 0);
	assert_int_equal(nlm_state_stats(st)->clients_reclaimed, 1);
	assert_int_equal(nlm_state_clients(st), 3);

	/* IPv6: the /64 is the prefix. */
	struct sockaddr_in6 s6 = { .sin6_family = AF_INET6 };
	struct gw_host v6[3];
	const char *addrs[] = { "fd00:1:2:3::1", "fd00:1:2:3:ffff::2", "fd00:1:2:4::1" };
	for (int i = 0; i < 3; i++) {
		assert_int_equal(inet_pton(AF_INET6, addrs[i], &s6.sin6_addr), 1);
		assert_true(gw_host_from_sockaddr(&v6[i], (struct sockaddr *)&s6, sizeof(s6)));
	}
	struct gw_host v6c = v6[0];
	v6c.addr[15] = 3;
	for (int i = 0; i < 2; i++) {
		assert_int_equal(nlm_state_owner(st, &v6[i], 1, bytes("1"), &x), 0);
		assert_true(nlm_state_call_begin(st, &x));
	}
	assert_int_equal(nlm_state_owner(st, &v6c, 1, bytes("1"), &x), -ENOSPC);
	assert_int_equal(nlm_state_stats(st)->client_prefix_full, 2);
	assert_int_equal(nlm_state_owner(st, &v6[2], 1, bytes("1"), &x), 0);
	nlm_state_free(st);

	/* The defaults, and a share over the table refused. */
	lim = (struct nlm_state_limits){ 0 };
	st = nlm_state_new(&lim, 3);
	assert_int_equal(nlm_state_limits(st)->max_clients_per_prefix, 256);
	nlm_state_free(st);
	lim = (struct nlm_state_limits){ .max_clients = 4096 };
	st = nlm_state_new(&lim, 3);
	assert_int_equal(nlm_state_limits(st)->max_clients_per_prefix, 1024);
	nlm_state_free(st);
	lim = (struct nlm_state_limits){ .max_clients = 100 };
	st = nlm_state_new(&lim, 3);
	assert_int_equal(nlm_state_limits(st)->max_clients_per_prefix, 100);
	nlm_state_free(st);
	lim = (struct nlm_state_limits){ .max_clients = 100, .max_clients_per_prefix = 101 };
	assert_null(nlm_state_new(&lim, 3));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(same_owner_two_clients),
		cmocka_unit_test(callback_and_holder_map_back),
		cmocka_unit_test(reboot_unlocks_only_that_client),
		cmocka_unit_test(unlock_forgets_what_it_covers),
		cmocka_unit_test(limits_refuse_and_count),
		cmocka_unit_test(clients_survive_restart),
		cmocka_unit_test(clients_dirty_only_when_the_set_changes),
		cmocka_unit_test(owners_per_client_bounded),
		cmocka_unit_test(client_taken_again_after_its_last_owner_went),
		cmocka_unit_test(repeated_notify_state_is_new_after_the_window),
		cmocka_unit_test(owners_live_while_they_hold_or_wait),
		cmocka_unit_test(idle_clients_reclaimed_lru),
		cmocka_unit_test(prefix_share_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
