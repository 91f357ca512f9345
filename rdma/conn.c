/* SPDX-License-Identifier: MIT */
/*
 * rdma/conn.c - an RDMA connection's life on librdmacm: queues and
 * set-up, the CM events, connect with a reserved source port, accept and
 * listen, the connect timer and the deferred teardown. The data path is in
 * conn_io.c; conn_priv.h holds what the two share.
 */
#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "common/clock.h"
#include "common/log.h"
#include "rdma/conn_priv.h"

static const char *const close_reason_names[] = {
	[RCONN_CLOSE_LOCAL] = "closed locally",
	[RCONN_CLOSE_DISCONNECTED] = "peer disconnected",
	[RCONN_CLOSE_REJECTED] = "connection rejected",
	[RCONN_CLOSE_UNREACHABLE] = "peer unreachable",
	[RCONN_CLOSE_TIMEOUT] = "connect timed out",
	[RCONN_CLOSE_TRANSPORT] = "transport error",
	[RCONN_CLOSE_DEVICE] = "device removed",
	[RCONN_CLOSE_RESOURCES] = "out of resources",
	[RCONN_CLOSE_PROTOCOL] = "protocol violation by the peer",
};

const char *rconn_close_reason_str(enum rconn_close_reason reason)
{
	if ((unsigned)reason < sizeof(close_reason_names) / sizeof(close_reason_names[0]))
		return close_reason_names[reason];
	return "unknown";
}

/* ---- set-up ---- */

static int rconn_setup_queues(struct rconn *c)
{
	c->dev = rdma_ctx_device(c->ctx, c->id->verbs);
	if (!c->dev)
		return -ENODEV;

	const struct rdma_dev_caps *caps = rdma_dev_caps(c->dev);
	if (c->params.max_send_sge > (uint32_t)caps->max_sge)
		c->params.max_send_sge = (uint32_t)caps->max_sge;
	if (c->params.nmw && !caps->mw_type2) {
		gw_err("rdma: %s has no type 2 memory windows; per-RPC exposure needs them",
		       rdma_dev_name(c->dev));
		return -EOPNOTSUPP;
	}

	int cqe = (int)(c->params.send_depth + c->params.recv_count + 16);
	c->cq = ibv_create_cq(c->id->verbs, cqe, &c->cq_handler, rdma_dev_comp_channel(c->dev),
			      rdma_dev_comp_vector(c->dev));
	if (!c->cq)
		return -errno;
	if (ibv_req_notify_cq(c->cq, 0) != 0)
		return -EIO;

	struct ibv_qp_init_attr qa = {
		.send_cq = c->cq,
		.recv_cq = c->cq,
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 0,
		.cap = {
			.max_send_wr = c->params.send_depth,
			.max_recv_wr = c->params.recv_count + 1,
			.max_send_sge = c->params.max_send_sge,
			.max_recv_sge = 1,
		},
	};
	if (rdma_create_qp(c->id, rdma_dev_pd(c->dev), &qa) != 0)
		return -errno;

	c->recvs = calloc(c->params.recv_count, sizeof(*c->recvs));
	c->mws = calloc(c->params.nmw ? c->params.nmw : 1, sizeof(*c->mws));
	if (!c->recvs || !c->mws)
		return -ENOMEM;
	for (uint32_t i = 0; i < c->params.recv_count; i++)
		c->recvs[i].conn = c;
	for (uint32_t i = 0; i < c->params.nmw; i++) {
		struct rconn_mw *m = &c->mws[i];
		m->mw = ibv_alloc_mw(rdma_dev_pd(c->dev), IBV_MW_TYPE_2);
		if (!m->mw)
			return -errno ? -errno : -ENOMEM;
		m->rkey = m->mw->rkey;
		m->next_free = c->mw_free;
		c->mw_free = m;
	}
	/* Receives go up before the connection does: the peer may send at once. */
	rconn_recv_refill(c);
	return 0;
}

static void rconn_fill_conn_param(const struct rconn *c, struct rdma_conn_param *p)
{
	memset(p, 0, sizeof(*p));
	p->private_data = c->params.private_data_len ? c->params.private_data : NULL;
	p->private_data_len = c->params.private_data_len;
	p->responder_resources = c->params.responder_resources;
	p->initiator_depth = c->params.initiator_depth;
	p->retry_count = 7;
	p->rnr_retry_count = 7;
	p->flow_control = 1;
}

/* ---- teardown ---- */

static void rconn_release_resources(struct rconn *c)
{
	if (c->timer) {
		event_free(c->timer);
		c->timer = NULL;
	}
	if (c->dev)
		rdma_dev_cancel_wait(c->dev, &c->pool_waiter);
	/*
	 * Windows first: a type 2 window still bound (a call whose reply
	 * never came) holds its queue pair, and rxe's destroy then waits for
	 * that reference for tens of seconds, the whole event loop with it.
	 * Deallocated, no window reaches our memory any more either.
	 */
	for (uint32_t i = 0; c->mws && i < c->params.nmw; i++) {
		if (c->mws[i].mw)
			ibv_dealloc_mw(c->mws[i].mw);
		c->mws[i].mw = NULL;
	}
	if (c->id && c->id->qp) {
		/* After this the device touches none of our memory. */
		rdma_destroy_qp(c->id);
	}
	/* Completions generated before the destroy still carry real statuses. */
	rconn_poll(c);
	while (c->outstanding) {
		struct rconn_wr *wr = c->outstanding;
		rconn_wr_untrack(c, wr);
		wr->done(wr, IBV_WC_WR_FLUSH_ERR);
	}
	c->sq_retired = c->sq_posted;
	for (uint32_t i = 0; c->recvs && i < c->params.recv_count; i++) {
		if (c->recvs[i].buf) {
			gw_buf_put(c->recvs[i].buf);
			c->recvs[i].buf = NULL;
		}
	}
	if (c->cq_more)
		evtimer_del(c->cq_more);
	if (c->cq) {
		ibv_destroy_cq(c->cq);
		c->cq = NULL;
	}
}

static void rconn_teardown_cb(evutil_socket_t fd, short what, void *arg)
{
	struct rconn *c = arg;

	rconn_release_resources(c);
	c->state = RCONN_CLOSED;
	/* The owner may call rconn_destroy() from here. */
	c->ops->closed(c, c->owner, c->reason);
}

/*
 * Start closing: tell the peer (DREQ) and run the teardown from the loop,
 * never from inside a completion or CM handler that is still using @c.
 */
void rconn_fail(struct rconn *c, enum rconn_close_reason reason)
{
	if (c->state >= RCONN_CLOSING)
		return;
	bool was_connected = c->state == RCONN_CONNECTED;
	c->state = RCONN_CLOSING;
	c->reason = reason;
	if (was_connected && c->id)
		rdma_disconnect(c->id);
	event_active(c->teardown, 0, 0);
}

void rconn_close(struct rconn *c)
{
	rconn_fail(c, RCONN_CLOSE_LOCAL);
}

void rconn_destroy(struct rconn *c)
{
	if (!c)
		return;
	if (c->state < RCONN_CLOSED)
		rconn_release_resources(c);
	if (c->id) {
		c->id->context = NULL;
		rdma_destroy_id(c->id);
	}
	if (c->teardown)
		event_free(c->teardown);
	if (c->cq_more)
		event_free(c->cq_more);
	free(c->recvs);
	free(c->mws);
	free(c);
}

/* ---- CM events ---- */

static enum rconn_close_reason reason_for_event(enum rdma_cm_event_type t)
{
	switch (t) {
	case RDMA_CM_EVENT_REJECTED:
		return RCONN_CLOSE_REJECTED;
	case RDMA_CM_EVENT_DISCONNECTED:
		return RCONN_CLOSE_DISCONNECTED;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		return RCONN_CLOSE_DEVICE;
	default:
		return RCONN_CLOSE_UNREACHABLE;
	}
}

static void rconn_cm_event(struct rdma_cm_handler *h, struct rdma_cm_event *ev)
{
	struct rconn *c = (struct rconn *)h;
	enum rdma_cm_event_type type = ev->event;
	int status = ev->status;
	uint8_t pdata[256];
	uint8_t plen = 0;

	if (type == RDMA_CM_EVENT_ESTABLISHED && ev->param.conn.private_data) {
		plen = ev->param.conn.private_data_len;
		memcpy(pdata, ev->param.conn.private_data, plen);
	}
	if (type == RDMA_CM_EVENT_ESTABLISHED && !c->accepted) {
		/* What the server granted for our RDMA Reads at it. */
		c->initiator_depth = ev->param.conn.initiator_depth;
	}
	/* Acknowledge first: rdma_destroy_id() waits for unacknowledged events. */
	rdma_ack_cm_event(ev);
	gw_debug("rdma: cm event %s (status %d)", rdma_event_str(type), status);

	if (c->state >= RCONN_CLOSING)
		return;

	int err = 0;
	struct rdma_conn_param cp;
	switch (type) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		c->state = RCONN_RESOLVING_ROUTE;
		if (rdma_resolve_route(c->id, (int)c->params.connect_timeout_ms) != 0)
			rconn_fail(c, RCONN_CLOSE_UNREACHABLE);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		c->state = RCONN_CONNECTING;
		err = rconn_setup_queues(c);
		if (err) {
			gw_err("rdma: cannot set up a connection: %s", strerror(-err));
			rconn_fail(c, RCONN_CLOSE_RESOURCES);
			break;
		}
		rconn_fill_conn_param(c, &cp);
		if (rdma_connect(c->id, &cp) != 0) {
			gw_err("rdma: rdma_connect: %s", strerror(errno));
			rconn_fail(c, RCONN_CLOSE_UNREACHABLE);
		}
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		/* An accepted connection may have been established by its first message. */
		if (c->state == RCONN_CONNECTING)
			rconn_established(c, pdata, plen);
		break;
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:
	case RDMA_CM_EVENT_ADDR_CHANGE:
		break;
	default:
		if (type == RDMA_CM_EVENT_REJECTED || type == RDMA_CM_EVENT_UNREACHABLE ||
		    type == RDMA_CM_EVENT_CONNECT_ERROR || type == RDMA_CM_EVENT_ADDR_ERROR ||
		    type == RDMA_CM_EVENT_ROUTE_ERROR)
			gw_info("rdma: connection failed: %s (status %d)", rdma_event_str(type),
				status);
		rconn_fail(c, reason_for_event(type));
		break;
	}
}

void rconn_established(struct rconn *c, const uint8_t *pdata, uint8_t plen)
{
	c->state = RCONN_CONNECTED;
	if (c->timer)
		event_del(c->timer);
	if (c->recvs_owed)
		rconn_recv_refill(c);
	c->ops->established(c, c->owner, pdata, plen);
}

static void rconn_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct rconn *c = arg;

	static const char *const stage[] = {
		[RCONN_RESOLVING_ADDR] = "resolving the address",
		[RCONN_RESOLVING_ROUTE] = "resolving the route",
		[RCONN_CONNECTING] = "waiting for the server's connect reply",
	};

	if (c->state < RCONN_CONNECTED) {
		/*
		 * Which CM step never finished tells a dead route from a stuck
		 * server; accepted connections stay quiet (a client could make
		 * every one of its attempts a log line).
		 */
		if (!c->accepted)
			gw_info("rdma: connect timed out after %u ms while %s",
				c->params.connect_timeout_ms, stage[c->state]);
		rconn_fail(c, RCONN_CLOSE_TIMEOUT);
	}
}

/*
 * The connect deadline, for both sides: a peer that never finishes the CM
 * exchange (a client that never sends its RTU) must not hold a queue pair
 * and its receive buffers for ever.
 */
static void rconn_start_timer(struct rconn *c)
{
	uint32_t ms = c->params.connect_timeout_ms;

	if (!ms)
		return;
	c->timer = evtimer_new(rdma_ctx_base(c->ctx), rconn_timeout, c);
	if (c->timer) {
		struct timeval tv = gw_ms_timeval(ms);
		evtimer_add(c->timer, &tv);
	}
}

static struct rconn *rconn_alloc(struct rdma_ctx *ctx, const struct rconn_params *params,
				 const struct rconn_ops *ops, void *owner)
{
	struct rconn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->cm_handler.handle = rconn_cm_event;
	c->cq_handler.handle = rconn_cq_event;
	c->pool_waiter.fn = rconn_pool_wake;
	c->ctx = ctx;
	c->params = *params;
	c->ops = ops;
	c->owner = owner;
	c->teardown = event_new(rdma_ctx_base(ctx), -1, 0, rconn_teardown_cb, c);
	c->cq_more = evtimer_new(rdma_ctx_base(ctx), rconn_cq_more, c);
	if (!c->teardown || !c->cq_more) {
		if (c->teardown)
			event_free(c->teardown);
		if (c->cq_more)
			event_free(c->cq_more);
		free(c);
		return NULL;
	}
	return c;
}

/*
 * Bind @id to a free port below 1024 (from 1023 down to 512, the range
 * bindresvport uses) on the wildcard address of @dst's family.
 */
static int rconn_bind_reserved(struct rdma_cm_id *id, const struct sockaddr *dst)
{
	struct sockaddr_storage ss;

	for (uint16_t port = 1023; port >= 512; port--) {
		memset(&ss, 0, sizeof(ss));
		ss.ss_family = dst->sa_family;
		if (dst->sa_family == AF_INET6)
			((struct sockaddr_in6 *)&ss)->sin6_port = htons(port);
		else
			((struct sockaddr_in *)&ss)->sin_port = htons(port);
		if (rdma_bind_addr(id, (struct sockaddr *)&ss) == 0)
			return 0;
		/* rdma_cm says EADDRNOTAVAIL for a port that is taken. */
		if (errno != EADDRINUSE && errno != EADDRNOTAVAIL)
			return -errno;
	}
	return -EADDRINUSE;
}

struct rconn *rconn_connect(struct rdma_ctx *ctx, const struct sockaddr *dst,
			    const struct sockaddr *src, const struct rconn_params *params,
			    const struct rconn_ops *ops, void *owner)
{
	struct rconn *c = rconn_alloc(ctx, params, ops, owner);

	if (!c)
		return NULL;
	if (rdma_create_id(rdma_ctx_cm_channel(ctx), &c->id, &c->cm_handler, RDMA_PS_TCP) != 0) {
		gw_err("rdma: rdma_create_id: %s", strerror(errno));
		c->id = NULL;
		rconn_destroy(c);
		return NULL;
	}
	c->state = RCONN_RESOLVING_ADDR;
	rconn_start_timer(c);
	if (params->reserved_port && !src) {
		int err = rconn_bind_reserved(c->id, dst);
		if (err) {
			gw_err("rdma: no reserved source port free: %s", strerror(-err));
			rconn_fail(c, RCONN_CLOSE_RESOURCES);
			return c;
		}
	}
	if (rdma_resolve_addr(
		    c->id, (struct sockaddr *)src, (struct sockaddr *)dst,
		    (int)(params->connect_timeout_ms ? params->connect_timeout_ms : 5000)) != 0) {
		gw_err("rdma: rdma_resolve_addr: %s", strerror(errno));
		rconn_fail(c, RCONN_CLOSE_UNREACHABLE);
	}
	return c;
}

bool rconn_is_connected(const struct rconn *c)
{
	return c->state == RCONN_CONNECTED;
}

struct rdma_dev *rconn_device(const struct rconn *c)
{
	return c->dev;
}

const struct sockaddr *rconn_peer_addr(const struct rconn *c)
{
	return c->id ? rdma_get_peer_addr(c->id) : NULL;
}

const struct sockaddr *rconn_local_addr(const struct rconn *c)
{
	return c->id ? rdma_get_local_addr(c->id) : NULL;
}

void rconn_set_owner(struct rconn *c, const struct rconn_ops *ops, void *owner)
{
	c->ops = ops;
	c->owner = owner;
}

uint8_t rconn_initiator_depth(const struct rconn *c)
{
	return c->initiator_depth;
}

struct ibv_qp *rconn_qp(const struct rconn *c)
{
	return c->state == RCONN_CONNECTED && c->id ? c->id->qp : NULL;
}

void rconn_get_stats(const struct rconn *c, struct rconn_stats *out)
{
	*out = c->stats;
	out->sq_used = (uint32_t)(c->sq_posted - c->sq_retired);
	out->mw_in_use = c->mw_in_use;
}

/* ---- listening ---- */

struct rconn_request {
	struct rdma_cm_id *id;
	struct rdma_conn_param param; /* its private data pointer cleared: see pdata */
	uint8_t pdata[256];	      /* the CM's limit for a REQ's private data */
	uint8_t plen;
};

const struct sockaddr *rconn_request_peer(const struct rconn_request *r)
{
	return rdma_get_peer_addr(r->id);
}

int rconn_request_migrate(struct rconn_request *r, struct rdma_ctx *to)
{
	if (rdma_migrate_id(r->id, rdma_ctx_cm_channel(to)) != 0)
		return errno ? -errno : -EIO;
	return 0;
}

void rconn_request_reject(struct rconn_request *r)
{
	rdma_reject(r->id, NULL, 0);
	rdma_destroy_id(r->id);
	free(r);
}

/*
 * The event is acknowledged before the owner is asked (or the request
 * handed to another thread): the CM keeps the request's private data only
 * until then, so it is copied first.
 */
static struct rconn_request *rconn_request_take(struct rdma_cm_event *ev)
{
	struct rconn_request *r = calloc(1, sizeof(*r));
	struct rdma_cm_id *id = ev->id;

	if (r) {
		r->id = id;
		r->param = ev->param.conn;
		if (r->param.private_data && r->param.private_data_len) {
			r->plen = r->param.private_data_len;
			memcpy(r->pdata, r->param.private_data, r->plen);
		}
		r->param.private_data = NULL;
		r->param.private_data_len = 0;
	}
	rdma_ack_cm_event(ev);
	if (!r) {
		rdma_reject(id, NULL, 0);
		rdma_destroy_id(id);
	}
	return r;
}

void rlistener_accept_request(struct rlistener *l, struct rconn_request *r)
{
	struct rdma_cm_id *id = r->id;
	struct rdma_conn_param req = r->param;

	/*
	 * The connection exists before the owner is asked, so that an owner
	 * made by the accept callback always gets its closed() callback.
	 */
	struct rconn *c = rconn_alloc(l->ctx, &l->defaults, NULL, NULL);
	if (!c) {
		rconn_request_reject(r);
		return;
	}
	struct rconn_params params = l->defaults;
	const struct rconn_ops *ops = NULL;
	void *owner = NULL;
	if (!l->ops->accept(l, l->owner, rdma_get_peer_addr(id), r->pdata, r->plen, &req, &params,
			    &ops, &owner)) {
		rconn_request_reject(r);
		rconn_destroy(c);
		return;
	}
	free(r);
	c->params = params;
	rconn_set_owner(c, ops, owner);
	c->id = id;
	c->accepted = true;
	id->context = &c->cm_handler;
	c->state = RCONN_CONNECTING;
	rconn_start_timer(c);

	/*
	 * The CM reports the request from this side: its initiator_depth is
	 * the client's responder resources, i.e. the RDMA Reads we may have
	 * outstanding at it, and its responder_resources the client's
	 * initiator depth, its Reads at us. Our own limits bound both.
	 */
	uint8_t ord = req.initiator_depth;
	if (ord > c->params.initiator_depth)
		ord = c->params.initiator_depth;
	c->initiator_depth = ord;

	int err = rconn_setup_queues(c);
	if (err) {
		gw_err("rdma: cannot set up an accepted connection: %s", strerror(-err));
		rdma_reject(id, NULL, 0);
		rconn_fail(c, RCONN_CLOSE_RESOURCES);
		return;
	}
	struct rdma_conn_param cp;
	rconn_fill_conn_param(c, &cp);
	cp.initiator_depth = ord;
	cp.responder_resources = req.responder_resources < c->params.responder_resources
					 ? req.responder_resources
					 : c->params.responder_resources;
	if (rdma_accept(id, &cp) != 0) {
		gw_err("rdma: rdma_accept: %s", strerror(errno));
		rconn_fail(c, RCONN_CLOSE_RESOURCES);
	}
}

static void rlistener_connect_request(struct rlistener *l, struct rdma_cm_event *ev)
{
	struct rconn_request *r = rconn_request_take(ev);

	if (!r)
		return;
	if (l->ops->steer && l->ops->steer(l, l->owner, rconn_request_peer(r), r))
		return;
	rlistener_accept_request(l, r);
}

static void rlistener_cm_event(struct rdma_cm_handler *h, struct rdma_cm_event *ev)
{
	struct rlistener *l = (struct rlistener *)h;

	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
		rlistener_connect_request(l, ev);
		return;
	}
	gw_warn("rdma: listener event %s", rdma_event_str(ev->event));
	rdma_ack_cm_event(ev);
}

struct rlistener *rlistener_create(struct rdma_ctx *ctx, const struct sockaddr *addr, int backlog,
				   const struct rconn_params *defaults,
				   const struct rlistener_ops *ops, void *owner)
{
	struct rlistener *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->cm_handler.handle = rlistener_cm_event;
	l->ctx = ctx;
	l->defaults = *defaults;
	l->ops = ops;
	l->owner = owner;
	if (!addr)
		return l; /* takes handed-over requests only */
	if (rdma_create_id(rdma_ctx_cm_channel(ctx), &l->id, &l->cm_handler, RDMA_PS_TCP) != 0) {
		gw_err("rdma: rdma_create_id: %s", strerror(errno));
		free(l);
		return NULL;
	}
	if (rdma_bind_addr(l->id, (struct sockaddr *)addr) != 0 ||
	    rdma_listen(l->id, backlog) != 0) {
		gw_err("rdma: cannot listen: %s", strerror(errno));
		rdma_destroy_id(l->id);
		free(l);
		return NULL;
	}
	return l;
}

void rlistener_destroy(struct rlistener *l)
{
	if (!l)
		return;
	if (l->id)
		rdma_destroy_id(l->id);
	free(l);
}
