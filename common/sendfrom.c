/* SPDX-License-Identifier: MIT */
#include "common/sendfrom.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/host.h"

int gw_udp_socket_at(const struct sockaddr_storage *addr, socklen_t len)
{
	struct sockaddr_storage a = *addr;
	int fd = socket(a.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	gw_sockaddr_set_port(&a, 0);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, len) != 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

bool gw_udp_source_toward(const struct sockaddr *to, socklen_t tolen, struct sockaddr_storage *out,
			  socklen_t *outlen)
{
	int fd = socket(to->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	bool ok = fd >= 0 && connect(fd, to, tolen) == 0 &&
		  getsockname(fd, (struct sockaddr *)out, outlen) == 0;
	int e = errno;

	if (fd >= 0)
		close(fd);
	errno = e;
	return ok;
}

bool gw_send_from(int fd, const void *msg, size_t len, const struct sockaddr *to, socklen_t tolen,
		  const struct sockaddr_storage *from)
{
	union {
		struct cmsghdr align;
		uint8_t buf[CMSG_SPACE(sizeof(struct in6_pktinfo))];
	} ctl;
	struct iovec iov = { .iov_base = (void *)msg, .iov_len = len };
	struct msghdr mh = {
		.msg_name = (void *)to, .msg_namelen = tolen, .msg_iov = &iov, .msg_iovlen = 1
	};

	memset(&ctl, 0, sizeof(ctl));
	if (from && from->ss_family == AF_INET) {
		/* ipi_spec_dst is the source; ipi_ifindex 0 leaves the route's link. */
		struct in_pktinfo pi = { .ipi_spec_dst =
						 ((const struct sockaddr_in *)from)->sin_addr };
		mh.msg_control = ctl.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(pi));
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = IPPROTO_IP;
		cm->cmsg_type = IP_PKTINFO;
		cm->cmsg_len = CMSG_LEN(sizeof(pi));
		memcpy(CMSG_DATA(cm), &pi, sizeof(pi));
	} else if (from && from->ss_family == AF_INET6) {
		const struct sockaddr_in6 *l6 = (const struct sockaddr_in6 *)from;
		struct in6_pktinfo pi = { .ipi6_addr = l6->sin6_addr,
					  .ipi6_ifindex = l6->sin6_scope_id };
		mh.msg_control = ctl.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(pi));
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = IPPROTO_IPV6;
		cm->cmsg_type = IPV6_PKTINFO;
		cm->cmsg_len = CMSG_LEN(sizeof(pi));
		memcpy(CMSG_DATA(cm), &pi, sizeof(pi));
	}
	return sendmsg(fd, &mh, MSG_DONTWAIT) == (ssize_t)len;
}
