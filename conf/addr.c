/* SPDX-License-Identifier: MIT */
/*
 * conf/addr.c - endpoint URLs, HOST:PORT, client networks, and the
 * per-connection client check.
 */
#include "common/host.h"
#include "conf/conf_priv.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { PORT_NFS = 2049, PORT_NFS_RDMA = 20049 };

static const struct {
	const char *prefix;
	enum gw_transport transport;
	uint16_t default_port;
} schemes[] = {
	{ "tcp://", GW_TRANSPORT_TCP, PORT_NFS },
	{ "rdma://", GW_TRANSPORT_RDMA, PORT_NFS_RDMA },
};

bool conf_url_transport(const char *text, enum gw_transport *out)
{
	for (size_t i = 0; i < CONF_ARRAY_SIZE(schemes); i++) {
		if (strncmp(text, schemes[i].prefix, strlen(schemes[i].prefix)) == 0) {
			*out = schemes[i].transport;
			return true;
		}
	}
	return false;
}

/* Digits only, 1..65535: no sign, no spaces, no service names. */
static bool parse_port(const char *s, uint16_t *out)
{
	unsigned long v = 0;

	if (!*s || strlen(s) > 5)
		return false;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			return false;
		v = v * 10 + (unsigned long)(*p - '0');
	}
	if (v == 0 || v > 65535)
		return false;
	*out = (uint16_t)v;
	return true;
}

/* Only the characters of DNS names: the rest is a typo, not a host. */
static bool is_host_name(const char *s)
{
	if (!*s)
		return false;
	for (const char *p = s; *p; p++) {
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '-' || *p == '.' || *p == '_'))
			return false;
	}
	return true;
}

/* Dots and digits only: meant as an IPv4 address, never a name. */
static bool looks_numeric(const char *s)
{
	return *s && strspn(s, "0123456789.") == strlen(s);
}

/* The split of "HOST[:PORT]" or "[V6][:PORT]". */
struct host_port {
	char host[256];
	const char *port; /* into the text; NULL when absent */
	bool bracketed;
};

/* Record what was expected, for the caller's message. */
static void expect(struct conf_why *why, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void expect(struct conf_why *why, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why->expect, sizeof(why->expect), fmt, ap);
	va_end(ap);
	why->detail[0] = '\0';
}

static bool split_host_port(const char *hp, struct host_port *out, struct conf_why *why)
{
	const char *colon;
	size_t hostlen;

	out->port = NULL;
	out->bracketed = hp[0] == '[';
	if (out->bracketed) {
		const char *close = strchr(hp, ']');
		if (!close) {
			expect(why, "a ']' after the IPv6 address");
			return false;
		}
		hostlen = (size_t)(close - hp - 1);
		if (close[1] == ':') {
			out->port = close + 2;
		} else if (close[1] != '\0') {
			expect(why, "\":PORT\" or nothing after the ']'");
			return false;
		}
		hp++;
	} else {
		colon = strchr(hp, ':');
		if (colon && strchr(colon + 1, ':')) {
			expect(why, "an IPv6 address in brackets, as in \"[2001:db8::1]:PORT\"");
			return false;
		}
		hostlen = colon ? (size_t)(colon - hp) : strlen(hp);
		if (colon)
			out->port = colon + 1;
	}
	if (hostlen == 0) {
		expect(why, "a host name or address");
		return false;
	}
	if (hostlen >= sizeof(out->host)) {
		expect(why, "a host name of at most %zu characters", sizeof(out->host) - 1);
		return false;
	}
	memcpy(out->host, hp, hostlen);
	out->host[hostlen] = '\0';
	return true;
}

/*
 * Numeric addresses are taken as written (IPv6 with an optional %zone);
 * anything else is a name for getaddrinfo(), which answers in the order
 * of RFC 6724 and of which the first address is used. The resolver runs
 * at load only; the data path never sees a name.
 */
static bool resolve_host(const struct host_port *hp, struct sockaddr_storage *ss, socklen_t *len,
			 struct conf_why *why)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM };
	struct addrinfo *res = NULL;
	int rc;

	memset(ss, 0, sizeof(*ss));
	if (hp->bracketed) {
		hints.ai_family = AF_INET6;
		hints.ai_flags = AI_NUMERICHOST;
	} else if (looks_numeric(hp->host)) {
		/* inet_pton, not getaddrinfo: "10.1" must not mean 10.0.0.1. */
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;
		if (inet_pton(AF_INET, hp->host, &sin->sin_addr) != 1) {
			expect(why, "a dotted IPv4 address a.b.c.d");
			return false;
		}
		sin->sin_family = AF_INET;
		*len = sizeof(*sin);
		return true;
	} else if (!is_host_name(hp->host)) {
		expect(why, "a host name, an IPv4 address or an IPv6 address in brackets");
		return false;
	} else {
		/*
		 * No AI_ADDRCONFIG: glibc ignores loopback addresses for it,
		 * so "localhost" would not resolve on a host with no other
		 * address. The RFC 6724 sort already puts destinations this
		 * host cannot reach last.
		 */
		hints.ai_family = AF_UNSPEC;
	}

	rc = getaddrinfo(hp->host, NULL, &hints, &res);
	if (rc != 0 || !res) {
		if (res)
			freeaddrinfo(res);
		if (hp->bracketed) {
			expect(why, "an IPv6 address inside the brackets");
			return false;
		}
		expect(why, "a host name that resolves");
		snprintf(why->detail, sizeof(why->detail), "%s",
			 rc ? gai_strerror(rc) : "no address");
		return false;
	}
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*len = res->ai_addrlen;
	freeaddrinfo(res);
	return true;
}

bool gw_addr_is_wildcard(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ((const struct sockaddr_in *)ss)->sin_addr.s_addr == htonl(INADDR_ANY);
	return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)ss)->sin6_addr);
}

bool conf_parse_url(const char *text, bool to_connect, struct gw_endpoint *ep, struct conf_why *why)
{
	struct host_port hp;
	uint16_t port = 0;
	size_t i;

	for (i = 0; i < CONF_ARRAY_SIZE(schemes); i++) {
		if (strncmp(text, schemes[i].prefix, strlen(schemes[i].prefix)) == 0)
			break;
	}
	if (i == CONF_ARRAY_SIZE(schemes)) {
		expect(why, "\"tcp://HOST:PORT\" or \"rdma://HOST:PORT\"");
		return false;
	}
	if (!split_host_port(text + strlen(schemes[i].prefix), &hp, why))
		return false;
	if (!hp.port) {
		port = schemes[i].default_port;
	} else if (!parse_port(hp.port, &port)) {
		expect(why, "a port 1..65535 after the ':'");
		return false;
	}
	if (!resolve_host(&hp, &ep->addr, &ep->addrlen, why))
		return false;
	if (to_connect && gw_addr_is_wildcard(&ep->addr)) {
		expect(why, "an address to connect to, not the wildcard address");
		return false;
	}
	gw_sockaddr_set_port(&ep->addr, port);
	ep->transport = schemes[i].transport;
	return true;
}

bool conf_parse_host_port(const char *text, struct sockaddr_storage *ss, socklen_t *len,
			  struct conf_why *why)
{
	struct host_port hp;
	uint16_t port;

	if (strstr(text, "://")) {
		expect(why, "\"HOST:PORT\" without a scheme");
		return false;
	}
	if (!split_host_port(text, &hp, why))
		return false;
	if (!hp.port) {
		expect(why, "\"HOST:PORT\" with a port");
		return false;
	}
	if (!parse_port(hp.port, &port)) {
		expect(why, "a port 1..65535 after the ':'");
		return false;
	}
	if (!resolve_host(&hp, ss, len, why))
		return false;
	gw_sockaddr_set_port(ss, port);
	return true;
}

/* ---- client networks ---------------------------------------------------- */

static const uint8_t v4mapped_prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

/* Whether the first @bits bits of @a and @b agree. */
static bool prefix_match(const uint8_t *a, const uint8_t *b, unsigned bits)
{
	unsigned whole = bits / 8, rest = bits % 8;

	if (memcmp(a, b, whole) != 0)
		return false;
	if (rest == 0)
		return true;
	uint8_t mask = (uint8_t)(0xff00u >> rest);
	return ((a[whole] ^ b[whole]) & mask) == 0;
}

/* Whether any bit after the first @bits of @a (of @size bytes) is set. */
static bool host_bits_set(const uint8_t *a, size_t size, unsigned bits)
{
	for (unsigned i = bits; i < size * 8; i++) {
		if (a[i / 8] & (0x80u >> (i % 8)))
			return true;
	}
	return false;
}

static void clear_host_bits(uint8_t *a, size_t size, unsigned bits)
{
	for (unsigned i = bits; i < size * 8; i++)
		a[i / 8] &= (uint8_t) ~(0x80u >> (i % 8));
}

/* One to three digits, at most @maxbits: no sign, no spaces. */
static bool parse_prefix(const char *p, unsigned maxbits, unsigned long *out)
{
	size_t n = strlen(p);

	if (n == 0 || n > 3 || strspn(p, "0123456789") != n)
		return false;
	*out = strtoul(p, NULL, 10);
	return *out <= maxbits;
}

bool conf_parse_cidr(const char *text, struct gw_cidr *out, struct conf_why *why)
{
	char addr[INET6_ADDRSTRLEN + 8];
	const char *slash = strchr(text, '/');
	size_t alen = slash ? (size_t)(slash - text) : strlen(text);
	unsigned long prefix = 0;
	unsigned maxbits;
	uint8_t *bytes;
	size_t size;

	memset(out, 0, sizeof(*out));
	if (alen == 0 || alen >= sizeof(addr)) {
		expect(why, "an IPv4 or IPv6 network, as in \"192.0.2.0/24\" or \"2001:db8::/32\"");
		return false;
	}
	memcpy(addr, text, alen);
	addr[alen] = '\0';
	if (inet_pton(AF_INET, addr, &out->addr.v4) == 1) {
		out->family = AF_INET;
		maxbits = 32;
	} else if (inet_pton(AF_INET6, addr, &out->addr.v6) == 1) {
		out->family = AF_INET6;
		maxbits = 128;
	} else {
		expect(why, "an IPv4 or IPv6 network, as in \"192.0.2.0/24\" or \"2001:db8::/32\"");
		return false;
	}
	if (!slash) {
		prefix = maxbits;
	} else if (!parse_prefix(slash + 1, maxbits, &prefix)) {
		expect(why, "a prefix length 0..%u after the '/'", maxbits);
		return false;
	}
	bytes = out->family == AF_INET ? (uint8_t *)&out->addr.v4 : out->addr.v6.s6_addr;
	size = out->family == AF_INET ? 4 : 16;
	if (host_bits_set(bytes, size, (unsigned)prefix)) {
		char net[INET6_ADDRSTRLEN];
		clear_host_bits(bytes, size, (unsigned)prefix);
		inet_ntop(out->family, bytes, net, sizeof(net));
		expect(why, "a network with no host bits set, as in \"%s/%lu\"", net, prefix);
		return false;
	}
	out->prefix_len = (uint8_t)prefix;
	/* A mapped network can only ever match IPv4 peers: store it as IPv4. */
	if (out->family == AF_INET6 && prefix >= 96 &&
	    memcmp(out->addr.v6.s6_addr, v4mapped_prefix, 12) == 0) {
		struct in_addr v4;
		memcpy(&v4, out->addr.v6.s6_addr + 12, 4);
		out->family = AF_INET;
		out->addr.v4 = v4;
		out->prefix_len = (uint8_t)(prefix - 96);
	}
	return true;
}

bool conf_cidr_equal(const struct gw_cidr *a, const struct gw_cidr *b)
{
	if (a->family != b->family || a->prefix_len != b->prefix_len)
		return false;
	if (a->family == AF_INET)
		return a->addr.v4.s_addr == b->addr.v4.s_addr;
	return memcmp(&a->addr.v6, &b->addr.v6, sizeof(a->addr.v6)) == 0;
}

/* Whether @peer is in one of the @n networks of @list (an AF_IB peer never is). */
static bool cidrs_contain(const struct gw_cidr *list, size_t n, const struct sockaddr *peer)
{
	const uint8_t *bytes;
	sa_family_t family = peer->sa_family;

	if (family == AF_INET) {
		bytes = (const uint8_t *)&((const struct sockaddr_in *)peer)->sin_addr;
	} else if (family == AF_INET6) {
		bytes = ((const struct sockaddr_in6 *)peer)->sin6_addr.s6_addr;
		/* A dual-stack listener shows IPv4 clients as ::ffff:a.b.c.d. */
		if (memcmp(bytes, v4mapped_prefix, 12) == 0) {
			bytes += 12;
			family = AF_INET;
		}
	} else {
		/* AF_IB and the like: no network of the list can name them. */
		return false;
	}
	for (size_t i = 0; i < n; i++) {
		const struct gw_cidr *c = &list[i];
		const uint8_t *net =
			c->family == AF_INET ? (const uint8_t *)&c->addr.v4 : c->addr.v6.s6_addr;
		if (c->family == family && prefix_match(bytes, net, c->prefix_len))
			return true;
	}
	return false;
}

bool gw_route_client_allowed(const struct gw_route *route, const struct sockaddr *peer)
{
	return route->allowed_clients_count == 0 ||
	       cidrs_contain(route->allowed_clients, route->allowed_clients_count, peer);
}

bool gw_qos_class_matches(const struct gw_qos_class *c, const struct sockaddr *peer, uint32_t prog,
			  bool reads, bool writes)
{
	if (c->program != 0 && c->program != prog)
		return false;
	switch (c->procedures) {
	case GW_QOS_PROCS_ANY:
		break;
	case GW_QOS_PROCS_READS:
		if (!reads)
			return false;
		break;
	case GW_QOS_PROCS_WRITES:
		if (!writes)
			return false;
		break;
	case GW_QOS_PROCS_METADATA:
		if (reads || writes)
			return false;
		break;
	}
	return c->clients_count == 0 || cidrs_contain(c->clients, c->clients_count, peer);
}

/* ---- comparing socket addresses ------------------------------------------ */

/* The IPv4 address behind an IPv4 or IPv4-mapped IPv6 socket address. */
static bool as_v4(const struct sockaddr_storage *ss, struct in_addr *out)
{
	if (ss->ss_family == AF_INET) {
		*out = ((const struct sockaddr_in *)ss)->sin_addr;
		return true;
	}
	const struct in6_addr *a6 = &((const struct sockaddr_in6 *)ss)->sin6_addr;
	if (ss->ss_family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(a6)) {
		memcpy(out, a6->s6_addr + 12, 4);
		return true;
	}
	return false;
}

bool conf_sockaddr_equal(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family || gw_sockaddr_port(a) != gw_sockaddr_port(b))
		return false;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)a;
	const struct sockaddr_in6 *b6 = (const struct sockaddr_in6 *)b;
	return memcmp(&a6->sin6_addr, &b6->sin6_addr, sizeof(a6->sin6_addr)) == 0 &&
	       a6->sin6_scope_id == b6->sin6_scope_id;
}

/*
 * Linux refuses a listener on a port that an overlapping listener
 * holds: the same address, or a wildcard that covers the other one. The
 * IPv6 wildcard is taken to cover IPv4 as well, because listeners on
 * [::] are dual-stack unless told otherwise.
 */
bool conf_listen_overlap(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	/* Zeroed: as_v4() writes only when it returns true, which GCC cannot see. */
	struct in_addr a4 = { 0 }, b4 = { 0 };
	bool a_v4 = as_v4(a, &a4), b_v4 = as_v4(b, &b4);

	if (gw_sockaddr_port(a) != gw_sockaddr_port(b))
		return false;
	if ((a->ss_family == AF_INET6 && gw_addr_is_wildcard(a)) ||
	    (b->ss_family == AF_INET6 && gw_addr_is_wildcard(b)))
		return true;
	if (a_v4 && b_v4)
		return a4.s_addr == htonl(INADDR_ANY) || b4.s_addr == htonl(INADDR_ANY) ||
		       a4.s_addr == b4.s_addr;
	if (a_v4 != b_v4)
		return false;
	return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
		      &((const struct sockaddr_in6 *)b)->sin6_addr, sizeof(struct in6_addr)) == 0;
}

int gw_endpoint_parse(const char *text, enum gw_transport want, struct gw_endpoint *out, char *err,
		      size_t errlen)
{
	struct conf_why why = { "", "" };

	memset(out, 0, sizeof(*out));
	if (!conf_parse_url(text, true, out, &why)) {
		snprintf(err, errlen, "\"%s\": expected %s%s%s", text,
			 why.expect[0] ? why.expect : "an address", why.detail[0] ? ": " : "",
			 why.detail);
		return -1;
	}
	if (out->transport != want) {
		snprintf(err, errlen, "\"%s\": expected an %s:// address", text,
			 want == GW_TRANSPORT_RDMA ? "rdma" : "tcp");
		return -1;
	}
	out->text = strdup(text);
	if (!out->text) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}

void gw_endpoint_free(struct gw_endpoint *ep)
{
	free(ep->text);
	ep->text = NULL;
}
