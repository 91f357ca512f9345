/* SPDX-License-Identifier: MIT */
#include "support/qosclasses.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <sys/socket.h>

/* Fill @cls and give them to @route; false on ENOMEM. */
static bool gwt_qos_classes(struct gw_qos_class cls[2], struct gw_route *route)
{
	cls[0] = (struct gw_qos_class){ .name = "backup",
					.program = 100003,
					.procedures = GW_QOS_PROCS_WRITES,
					.to_server_bytes_per_s = 1000000,
					.max_in_flight = 2,
					.burst_ms = 100 };
	cls[0].clients = calloc(1, sizeof(struct gw_cidr));
	if (!cls[0].clients)
		return false;
	cls[0].clients->family = AF_INET;
	cls[0].clients->prefix_len = 24;
	inet_pton(AF_INET, "192.0.2.0", &cls[0].clients->addr.v4);
	cls[0].clients_count = 1;
	cls[1] = (struct gw_qos_class){ .name = "rest", .calls_per_s = 1000, .burst_ms = 10 };
	route->qos = cls;
	route->qos_count = 2;
	route->qos_has_default = true;
	return true;
}

static void gwt_qos_classes_free(struct gw_qos_class cls[2])
{
	free(cls[0].clients);
	cls[0].clients = NULL;
}

bool gwt_qos_route_init(struct gwt_qos_route *q)
{
	if (!gwt_qos_classes(q->classes, &q->cfg))
		return false;
	q->cfg.queue_limit = 64;
	q->rt.cfg = &q->cfg;
	q->rt.qos = &q->map;
	if (!qos_map_init(&q->map, 2, 1)) {
		gwt_qos_classes_free(q->classes);
		return false;
	}
	return true;
}

void gwt_qos_route_fini(struct gwt_qos_route *q)
{
	qos_map_fini(&q->map);
	gwt_qos_classes_free(q->classes);
}
