#include "support/httpc.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "support/loop.h"

int gwt_http_connect(const struct sockaddr *addr, socklen_t addrlen)
{
	int fd = socket(addr->sa_family, SOCK_STREAM, 0);

	if (fd < 0)
		return -1;
	if (connect(fd, addr, addrlen) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

int gwt_http_send_all(int fd, const char *text)
{
	size_t len = strlen(text);

	while (len) {
		ssize_t n = send(fd, text, len, MSG_NOSIGNAL);
		if (n <= 0)
			return -1;
		text += n;
		len -= (size_t)n;
	}
	return 0;
}

char *gwt_http_pump_read(struct event_base *base, int fd, double timeout_s, size_t *len,
			 bool *closed)
{
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);
	double deadline = gwt_now_s() + timeout_s;

	if (!buf)
		abort();
	*closed = false;
	*len = 0;
	while (gwt_now_s() < deadline) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };

		event_base_loop(base, EVLOOP_NONBLOCK);
		if (poll(&pfd, 1, 5) <= 0)
			continue;
		if (cap - n < 2048) {
			cap *= 2;
			buf = realloc(buf, cap);
			if (!buf)
				abort();
		}
		ssize_t got = recv(fd, buf + n, cap - n - 1, MSG_DONTWAIT);
		if (got == 0 || (got < 0 && errno == ECONNRESET)) {
			*closed = true;
			break;
		}
		if (got < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			free(buf);
			return NULL;
		}
		n += (size_t)got;
	}
	buf[n] = '\0';
	*len = n;
	return buf;
}

int gwt_http_parse(char *raw, size_t len, struct gwt_http_answer *a)
{
	char *end = strstr(raw, "\r\n\r\n");

	if (!end) {
		free(raw);
		return -1;
	}
	*end = '\0';
	a->head = raw;
	a->body = end + 4;
	a->body_len = len - (size_t)(a->body - raw);
	if (sscanf(raw, "HTTP/1.%*d %d", &a->status) != 1) {
		gwt_http_answer_free(a);
		return -1;
	}
	return 0;
}

int gwt_http_fetch_raw(struct event_base *base, const struct sockaddr *addr, socklen_t addrlen,
		       const char *request, struct gwt_http_answer *a)
{
	int fd = gwt_http_connect(addr, addrlen);
	size_t len;
	bool closed;
	char *raw;

	if (fd < 0)
		return -1;
	if (gwt_http_send_all(fd, request) != 0) {
		close(fd);
		return -1;
	}
	raw = gwt_http_pump_read(base, fd, 10, &len, &closed);
	close(fd);
	if (!raw)
		return -1;
	if (!closed) {
		free(raw);
		return -1;
	}
	return gwt_http_parse(raw, len, a);
}

const char *gwt_http_header(const struct gwt_http_answer *a, const char *name, char *out,
			    size_t size)
{
	size_t nlen = strlen(name);

	for (const char *line = strstr(a->head, "\r\n"); line; line = strstr(line, "\r\n")) {
		line += 2;
		if (strncasecmp(line, name, nlen) == 0 && line[nlen] == ':') {
			const char *v = line + nlen + 1;
			size_t vlen;
			v += strspn(v, " ");
			vlen = strcspn(v, "\r");
			if (vlen >= size)
				vlen = size - 1;
			memcpy(out, v, vlen);
			out[vlen] = '\0';
			return out;
		}
	}
	return NULL;
}

void gwt_http_answer_free(struct gwt_http_answer *a)
{
	free(a->head);
	memset(a, 0, sizeof(*a));
}
