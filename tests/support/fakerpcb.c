#include "support/fakerpcb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void log_line(struct gwt_rpcb *f, const char *line)
{
	if (f->nlog < GWT_RPCB_LOG)
		snprintf(f->log[f->nlog++], sizeof(f->log[0]), "%s", line);
}

static struct gwt_rpcb_map *find(struct gwt_rpcb *f, uint32_t prog, uint32_t vers,
				 const char *netid)
{
	for (size_t i = 0; i < f->nmap; i++) {
		struct gwt_rpcb_map *m = &f->map[i];
		if (m->prog == prog && m->vers == vers && strcmp(m->netid, netid) == 0)
			return m;
	}
	return NULL;
}

static bool f_reachable(void *arg)
{
	return !((struct gwt_rpcb *)arg)->down;
}

static uint16_t f_getport(void *arg, uint32_t prog, uint32_t vers, uint32_t proto)
{
	struct gwt_rpcb_map *m = find(arg, prog, vers, proto == 17 ? "udp" : "tcp");
	unsigned a, b, c, d, hi, lo;

	if (!m || sscanf(m->uaddr, "%u.%u.%u.%u.%u.%u", &a, &b, &c, &d, &hi, &lo) != 6)
		return 0;
	return (uint16_t)(hi << 8 | lo);
}

static bool f_port_in_use(void *arg, uint32_t proto, uint16_t port)
{
	struct gwt_rpcb *f = arg;

	(void)proto;
	for (size_t i = 0; i < sizeof(f->held) / sizeof(f->held[0]); i++) {
		if (f->held[i] && f->held[i] == port)
			return true;
	}
	return false;
}

static bool f_set(void *arg, uint32_t prog, uint32_t vers, const char *netid, const char *uaddr)
{
	struct gwt_rpcb *f = arg;
	char line[80];

	snprintf(line, sizeof(line), "set %u %u %s %s", prog, vers, netid, uaddr);
	log_line(f, line);
	if (++f->sets == f->refuse_set_at || find(f, prog, vers, netid) || f->nmap >= GWT_RPCB_MAX)
		return false; /* rpcbind's SET fails on a mapping that exists */
	struct gwt_rpcb_map *m = &f->map[f->nmap++];
	m->prog = prog;
	m->vers = vers;
	snprintf(m->netid, sizeof(m->netid), "%s", netid);
	snprintf(m->uaddr, sizeof(m->uaddr), "%s", uaddr);
	return true;
}

static bool f_unset(void *arg, uint32_t prog, uint32_t vers, const char *netid)
{
	struct gwt_rpcb *f = arg;
	char line[80];
	struct gwt_rpcb_map *m = find(f, prog, vers, netid);

	snprintf(line, sizeof(line), "unset %u %u %s", prog, vers, netid);
	log_line(f, line);
	if (!m)
		return false;
	*m = f->map[--f->nmap];
	return true;
}

void gwt_rpcb_init(struct gwt_rpcb *f)
{
	memset(f, 0, sizeof(*f));
	f->ops = (struct rpcb_reg_ops){ .reachable = f_reachable,
					.getport = f_getport,
					.port_in_use = f_port_in_use,
					.set = f_set,
					.unset = f_unset,
					.arg = f };
}

void gwt_rpcb_map(struct gwt_rpcb *f, uint32_t prog, uint32_t vers, const char *netid,
		  uint16_t port)
{
	char uaddr[48];

	snprintf(uaddr, sizeof(uaddr), "0.0.0.0.%u.%u", port >> 8, port & 0xff);
	f_set(f, prog, vers, netid, uaddr);
	f->sets = 0;
	f->nlog = 0;
}

const char *gwt_rpcb_lookup(const struct gwt_rpcb *f, uint32_t prog, uint32_t vers,
			    const char *netid)
{
	struct gwt_rpcb_map *m = find((struct gwt_rpcb *)f, prog, vers, netid);

	return m ? m->uaddr : NULL;
}

bool gwt_rpcb_logged(const struct gwt_rpcb *f, const char *line, size_t *at)
{
	for (size_t i = 0; i < f->nlog; i++) {
		if (strcmp(f->log[i], line) == 0) {
			if (at)
				*at = i;
			return true;
		}
	}
	return false;
}
