/*
 * A plain HTTP/1.1 client on a socket, for the tests of an endpoint served on
 * the test's own event loop (the stats endpoint): while it waits for the
 * answer it turns that loop, so that the server runs in the same thread.
 */
#ifndef GW_TESTS_SUPPORT_HTTPC_H
#define GW_TESTS_SUPPORT_HTTPC_H

#include <stdbool.h>
#include <stddef.h>

#include <event2/event.h>
#include <sys/socket.h>

/* An answer, read whole. */
struct gwt_http_answer {
	int status;
	char *head; /* status line and headers */
	char *body;
	size_t body_len;
};

/*
 * A socket connected to @addr: on loopback the handshake completes in the
 * kernel, before the server's accept(). The socket, or -1.
 */
int gwt_http_connect(const struct sockaddr *addr, socklen_t addrlen);

/* All of @text on @fd: 0, or -1. */
int gwt_http_send_all(int fd, const char *text);

/*
 * Turns @base while waiting for @fd: what it read until the server closed the
 * connection (*@closed true; a reset counts), or what came by @timeout_s
 * (*@closed false), '\0'-terminated, its length in *@len; the caller frees
 * it. NULL when reading fails otherwise.
 */
char *gwt_http_pump_read(struct event_base *base, int fd, double timeout_s, size_t *len,
			 bool *closed);

/*
 * @raw (@len bytes from gwt_http_pump_read(), which @a then owns) as an
 * answer: 0, or -1 when it is not one (@raw freed).
 */
int gwt_http_parse(char *raw, size_t len, struct gwt_http_answer *a);

/*
 * @request on a fresh connection to @addr, the answer read until the server
 * closes the connection after it: 0, or -1 when the connection fails, the
 * server does not close it within 10 s or the answer is not HTTP.
 */
int gwt_http_fetch_raw(struct event_base *base, const struct sockaddr *addr, socklen_t addrlen,
		       const char *request, struct gwt_http_answer *a);

/* The value of header @name (any case), copied into @out; NULL when there is none. */
const char *gwt_http_header(const struct gwt_http_answer *a, const char *name, char *out,
			    size_t size);

void gwt_http_answer_free(struct gwt_http_answer *a);

#endif
