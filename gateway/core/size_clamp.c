/* SPDX-License-Identifier: MIT */
/*
 * gateway/core/size_clamp.c - sizes a route can carry, told to the clients
 * (size_clamp.h).
 */
#include "gateway/core/size_clamp.h"

#include <stdio.h>

#include "common/log.h"
#include "gateway/core/session.h"

void gw_size_caps(const struct gw_route *r, struct ulb_size_caps *caps)
{
	uint32_t rec = r->max_record_size;
	uint32_t io = rec > 2 * GW_IO_HEADROOM ? rec - GW_IO_HEADROOM : rec / 2;

	/* Whole pages where there is a page to keep; the Linux client's floor is 1 KiB. */
	io = io >= 4096 ? io & ~4095u : io & ~511u;
	caps->io_max = io < 512 ? 512 : io;
	caps->msg_max = rec;
}

void gw_clamp_reply(struct gw_session *s, const struct ulb_call *u, uint8_t *msg, uint32_t len,
		    uint32_t moved)
{
	struct gw_route_rt *rt = s->route;
	struct ulb_size_caps caps;
	struct ulb_clamp_report rep;

	gw_size_caps(rt->cfg, &caps);
	if (!ulb_clamp_reply(u, msg, len, moved, &caps, &rep))
		return;
	gw_count_event(s, GW_EV_SIZE_CLAMPED);
	if (rt->sizes_logged)
		return;
	rt->sizes_logged = true;
	char what[256];
	size_t n = 0;
	what[0] = '\0';
	for (unsigned f = 0; f < ULB_CLAMP_NFIELDS && n < sizeof(what); f++) {
		if (!(rep.fields & (1u << f)))
			continue;
		int w = snprintf(what + n, sizeof(what) - n, "%s%s %llu -> %llu", n ? ", " : "",
				 ulb_clamp_field_name((enum ulb_clamp_field)f),
				 (unsigned long long)rep.advertised[f],
				 (unsigned long long)rep.clamped[f]);
		if (w < 0 || (size_t)w >= sizeof(what) - n)
			break; /* what did not fit is left out: the counter has them all */
		n += (size_t)w;
	}
	gw_warn("route %s: %s: the server advertises more than the route carries (max_record_size "
		"%u): %s for its clients; raise max_record_size to carry more (counted "
		"size_clamped; "
		"logged once)",
		rt->cfg->name, s->client, rt->cfg->max_record_size, what);
}
