#include "support/udp.h"

#include <arpa/inet.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

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

struct side_service_peer gwt_side_peer(uint32_t ip, uint16_t port)
{
	struct side_service_peer p = { .addrlen = sizeof(struct sockaddr_in) };
	struct sockaddr_in a = gwt_sin(ip, port);

	memcpy(&p.addr, &a, sizeof(a));
	return p;
}
