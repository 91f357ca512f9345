#include "support/udp.h"

#include <arpa/inet.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gateway/side/rpc/portmap.h"

struct sockaddr_in gwt_sin(uint32_t ip, uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(ip),
				 .sin_port = htons(port) };
	return a;
}

int gwt_udp_bind(uint32_t ip, uint16_t port, uint16_t *got)
{
	struct sockaddr_in a = gwt_sin(ip, port);
	socklen_t l = sizeof(a);
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);

	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &l) != 0) {
		close(fd);
		return -1;
	}
	if (got)
		*got = ntohs(a.sin_port);
	return fd;
}

int gwt_udp_bind_common(const uint32_t *ips, size_t n, int *fds, uint16_t *port)
{
	for (int tries = 0; tries < 20; tries++) {
		size_t bound = 0;

		fds[0] = gwt_udp_bind(ips[0], 0, port);
		if (fds[0] < 0)
			continue;
		for (bound = 1; bound < n; bound++) {
			fds[bound] = gwt_udp_bind(ips[bound], *port, NULL);
			if (fds[bound] < 0)
				break;
		}
		if (bound == n)
			return 0;
		while (bound > 0)
			close(fds[--bound]);
	}
	return -1;
}

size_t gwt_udp_ask(struct event_base *base, int fd, const struct sockaddr_in *to, const void *msg,
		   size_t len, void *reply, size_t cap, unsigned int ms, gwt_between_fn *between,
		   void *arg)
{
	ssize_t r;

	sendto(fd, msg, len, 0, (const struct sockaddr *)to, sizeof(*to));
	if (!gwt_spin_until_readable(base, fd, ms, between, arg))
		return 0;
	r = recv(fd, reply, cap, 0);
	return r > 0 ? (size_t)r : 0;
}

int gwt_pmap_getport(struct event_base *base, int fd, const struct sockaddr_in *to, uint32_t xid,
		     uint32_t prog, uint32_t vers, uint32_t prot, unsigned int ms,
		     gwt_between_fn *between, void *arg)
{
	uint8_t b[128], r[128];
	size_t n = pmap_encode_getport(b, sizeof(b), xid, prog, vers, prot);
	uint16_t port;

	n = gwt_udp_ask(base, fd, to, b, n, r, sizeof(r), ms, between, arg);
	if (n == 0 || pmap_decode_getport_reply(r, n, &port) != 0)
		return -1;
	return port;
}

struct side_service_peer gwt_side_peer(uint32_t ip, uint16_t port)
{
	struct side_service_peer p = { .addrlen = sizeof(struct sockaddr_in) };
	struct sockaddr_in a = gwt_sin(ip, port);

	memcpy(&p.addr, &a, sizeof(a));
	return p;
}
