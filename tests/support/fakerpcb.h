/*
 * A fake host rpcbind behind struct rpcb_reg_ops (gateway/side/rpc/rpcb_reg.h),
 * for the tests of the registration and of a route on the wildcard address:
 * a table of mappings the test may fill beforehand (another service's),
 * whether it answers at all, which ports "a live service" holds, a SET to
 * refuse, and a log of the SET and UNSET calls in order.
 */
#ifndef GW_TESTS_SUPPORT_FAKERPCB_H
#define GW_TESTS_SUPPORT_FAKERPCB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gateway/side/rpc/rpcb_reg.h"

enum { GWT_RPCB_MAX = 96, GWT_RPCB_LOG = 256 };

struct gwt_rpcb_map {
	uint32_t prog, vers;
	char netid[8];
	char uaddr[48];
};

struct gwt_rpcb {
	struct rpcb_reg_ops ops; /* what the code under test is given; arg is this */
	bool down;		 /* no rpcbind answers */
	uint16_t held[8];	 /* ports a live service holds (0: unused) */
	int refuse_set_at;	 /* the SET numbered so (from 1) fails; 0: none */
	int sets;		 /* SETs so far */
	struct gwt_rpcb_map map[GWT_RPCB_MAX];
	size_t nmap;
	/* "set PROG VERS NETID UADDR" / "unset PROG VERS NETID", in order. */
	char log[GWT_RPCB_LOG][80];
	size_t nlog;
};

/* An empty, answering rpcbind. */
void gwt_rpcb_init(struct gwt_rpcb *f);

/* A mapping there already (another service's), at @port of the IPv4 wildcard. */
void gwt_rpcb_map(struct gwt_rpcb *f, uint32_t prog, uint32_t vers, const char *netid,
		  uint16_t port);

/* The mapping of @prog @vers over @netid: its universal address, NULL: none. */
const char *gwt_rpcb_lookup(const struct gwt_rpcb *f, uint32_t prog, uint32_t vers,
			    const char *netid);

/* Whether @line is in the call log; its index in *@at unless NULL. */
bool gwt_rpcb_logged(const struct gwt_rpcb *f, const char *line, size_t *at);

#endif
