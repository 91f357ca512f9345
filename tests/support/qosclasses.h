/* SPDX-License-Identifier: MIT */
/*
 * The quality-of-service classes the forward and reverse session tests
 * (test_forward_qos, test_reverse_qos) hold calls to: "backup", the
 * clients of 192.0.2.0/24, NFS (100003) writes, 1 MB/s to the server, 2
 * calls in flight, a 100 ms burst; and the route's default "rest", 1000
 * calls a second, a 10 ms burst.
 */
#ifndef GW_TESTS_SUPPORT_QOSCLASSES_H
#define GW_TESTS_SUPPORT_QOSCLASSES_H

#include <stdbool.h>

#include "conf/config.h"
#include "gateway/core/session.h"
#include "gateway/maps/qosmap.h"

/*
 * A route of the session tests with those classes (qos, qos_count,
 * qos_has_default): its configuration (queue_limit 64), its run-time half
 * pointing at it, and its qos map.
 */
struct gwt_qos_route {
	struct gw_qos_class classes[2];
	struct gw_route cfg;
	struct gw_route_rt rt;
	struct qos_map map;
};

/* Fill @q (zeroed); false on ENOMEM, with nothing left to give back. */
bool gwt_qos_route_init(struct gwt_qos_route *q);
void gwt_qos_route_fini(struct gwt_qos_route *q);

#endif
