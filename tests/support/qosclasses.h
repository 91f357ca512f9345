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

/* Fill @cls and give them to @route (qos, qos_count, qos_has_default); false on ENOMEM. */
bool gwt_qos_classes(struct gw_qos_class cls[2], struct gw_route *route);
/* Give back what gwt_qos_classes() allocated. */
void gwt_qos_classes_free(struct gw_qos_class cls[2]);

#endif
