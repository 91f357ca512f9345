/* SPDX-License-Identifier: MIT */
/*
 * gateway/core/size_clamp.h - sizes a route can carry, told to the clients.
 *
 * A server advertises the largest READ and WRITE it takes (NFSv3 FSINFO,
 * NFSv4 maxread/maxwrite) and, for an NFSv4.1 session, the largest call and
 * reply (CREATE_SESSION's fore channel). A client sizes its I/O by those
 * numbers alone, so a server that advertises more than a route carries (a
 * record of max_record_size) has every large WRITE refused, sent again and
 * refused again for ever. Both modes lower those numbers, in the replies
 * they relay, to what the route carries: ulb_clamp_reply() does the
 * rewriting; this module says what the route carries, counts each reply it
 * changed (size_clamped) and logs the first one of each route with the
 * numbers and the key to raise.
 */
#ifndef GW_GATEWAY_SIZE_CLAMP_H
#define GW_GATEWAY_SIZE_CLAMP_H

#include <stdint.h>

#include "conf/config.h"
#include "ulb-rules/ulb.h"

struct gw_session;

/*
 * What a route of @r carries: whole messages up to max_record_size, and
 * READ/WRITE/READDIR data up to the record less GW_IO_HEADROOM for the RPC
 * and NFS headers, in whole 4 KiB pages (the Linux client rounds rsize and
 * wsize down to pages): 1 MiB for the default record of 1 MiB + 4 KiB.
 */
enum { GW_IO_HEADROOM = 4096 };
void gw_size_caps(const struct gw_route *r, struct ulb_size_caps *caps);

/*
 * Lower, in the reply @msg (@len bytes, writable; @moved as for
 * ulb_parse_reply()) to @s's call @u, the sizes its server advertises
 * above what @s's route carries; counted and, the first time on the route,
 * logged. Only for calls with u->advertises_sizes.
 */
void gw_clamp_reply(struct gw_session *s, const struct ulb_call *u, uint8_t *msg, uint32_t len,
		    uint32_t moved);

#endif
