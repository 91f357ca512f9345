/*
 * share_flood: the flooding client of bench/vm-share.sh's fairness runs.
 *
 *   share_flood HOST PORT WINDOW [SECONDS]
 *
 * One TCP connection that keeps WINDOW NFSv3 NULL calls outstanding (one new call for
 * every reply) until SIGTERM, SIGINT or SECONDS, then prints the replies it counted and
 * their rate.
 *
 * Why C: the fairness figure compares a probe client's latency alone and beside this
 * flood, in an emulated guest of two vCPUs that also runs the gateway, the NFS server
 * and Soft-RoCE. The Python flood it replaces spent more CPU per call than the path it
 * loaded, so the probe was slowed by the machine rather than by the gateway. This
 * client costs a read and a write per batch of replies: the call is encoded once (with
 * libtirpc's xdr_callmsg) and only its xid is patched; replies are counted by their
 * record marks, never buffered whole; nothing is allocated.
 */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <rpc/rpc.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { NFS_PROG = 100003, NFS_V3 = 3, MAX_WINDOW = 4096, CALL_MAX = 64 };
enum { LAST_FRAG = 0x80000000u, REPLY_HEAD = 24 };

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

struct flood {
	int fd;
	unsigned char call[CALL_MAX]; /* one record: mark + NULL call */
	size_t call_len;
	uint32_t next_xid;
	unsigned char out[MAX_WINDOW * CALL_MAX]; /* the calls of one write */
	/* reply parser: the 4-byte mark, then the first REPLY_HEAD bytes, the rest skipped */
	unsigned char head[4 + REPLY_HEAD];
	size_t head_have;
	uint32_t frag_left; /* body bytes of the current fragment still to come */
	int frag_last;
	int msg_start; /* the fragment is a message's first: its head is parsed */
	unsigned long replies, not_success;
};

/* The NULL call record, encoded once; fill_calls patches the xid of each copy. */
static int encode_call(struct flood *f)
{
	struct rpc_msg msg = { 0 };
	XDR xdr;

	msg.rm_direction = CALL;
	msg.rm_call.cb_rpcvers = RPC_MSG_VERSION;
	msg.rm_call.cb_prog = NFS_PROG;
	msg.rm_call.cb_vers = NFS_V3;
	msg.rm_call.cb_proc = 0;
	msg.rm_call.cb_cred = _null_auth;
	msg.rm_call.cb_verf = _null_auth;
	xdrmem_create(&xdr, (char *)f->call + 4, CALL_MAX - 4, XDR_ENCODE);
	if (!xdr_callmsg(&xdr, &msg))
		return -1;
	uint32_t body = xdr_getpos(&xdr);
	xdr_destroy(&xdr);
	uint32_t mark = htonl(LAST_FRAG | body);
	memcpy(f->call, &mark, 4);
	f->call_len = 4 + body;
	return 0;
}

/* Writes @n new calls in one send: the pipelined writes the flood relies on. */
static int send_calls(struct flood *f, unsigned long n)
{
	unsigned char *p = f->out;

	for (unsigned long i = 0; i < n; i++, p += f->call_len) {
		uint32_t xid = htonl(f->next_xid++);

		memcpy(p, f->call, f->call_len);
		memcpy(p + 4, &xid, 4);
	}
	size_t len = (size_t)(p - f->out), done = 0;
	while (done < len) {
		ssize_t w = write(f->fd, f->out + done, len - done);
		if (w < 0 && errno == EINTR && !stop)
			continue;
		if (w <= 0)
			return -1;
		done += (size_t)w;
	}
	return 0;
}

/* A reply's first 24 bytes: xid, REPLY, MSG_ACCEPTED, AUTH_NONE verifier, accept_stat. */
static void count_reply(struct flood *f)
{
	uint32_t w[6];

	memcpy(w, f->head + 4, sizeof(w));
	f->replies++;
	if (ntohl(w[1]) != REPLY || ntohl(w[2]) != MSG_ACCEPTED || ntohl(w[5]) != SUCCESS)
		f->not_success++;
}

/*
 * Consumes @len received bytes; returns the replies completed in them. A record may be
 * cut anywhere between reads, so the parser keeps its place across calls.
 */
static unsigned long parse(struct flood *f, const unsigned char *b, size_t len)
{
	unsigned long done = 0;

	while (len > 0) {
		if (f->frag_left == 0 && f->head_have < 4) { /* the record mark */
			f->head[f->head_have++] = *b++;
			len--;
			if (f->head_have < 4)
				continue;
			uint32_t mark;
			memcpy(&mark, f->head, 4);
			mark = ntohl(mark);
			f->frag_last = (mark & LAST_FRAG) != 0;
			f->frag_left = mark & ~LAST_FRAG;
		}
		if (f->msg_start && f->head_have < sizeof(f->head) && f->frag_left > 0) {
			f->head[f->head_have++] = *b++;
			f->frag_left--;
			len--;
			if (f->head_have == sizeof(f->head))
				count_reply(f);
			else if (f->frag_left > 0)
				continue;
		} else {
			size_t skip = len < f->frag_left ? len : f->frag_left;
			b += skip;
			len -= skip;
			f->frag_left -= (uint32_t)skip;
		}
		if (f->frag_left == 0) { /* the fragment ends */
			if (f->msg_start && f->head_have < sizeof(f->head)) {
				f->replies++; /* shorter than any accepted reply */
				f->not_success++;
			}
			if (f->frag_last)
				done++;
			f->msg_start = f->frag_last;
			f->head_have = 0;
		}
	}
	return done;
}

static int connect_to(const char *host, const char *port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	int fd = -1, one = 1;

	if (getaddrinfo(host, port, &hints, &ai) != 0)
		return -1;
	fd = socket(ai->ai_family, SOCK_STREAM, 0);
	if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
		close(fd);
		fd = -1;
	}
	freeaddrinfo(ai);
	if (fd >= 0)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	static unsigned char in[65536];
	static struct flood f = { .next_xid = 1, .msg_start = 1 };
	struct sigaction sa = { .sa_handler = on_signal }; /* no SA_RESTART: read returns */

	if (argc < 4 || argc > 5) {
		fprintf(stderr, "usage: share_flood HOST PORT WINDOW [SECONDS]\n");
		return 2;
	}
	long window = strtol(argv[3], NULL, 10);
	long seconds = argc == 5 ? strtol(argv[4], NULL, 10) : 0;
	if (window < 1 || window > MAX_WINDOW || seconds < 0) {
		fprintf(stderr, "share_flood: WINDOW 1..%d, SECONDS >= 0\n", MAX_WINDOW);
		return 2;
	}
	if (encode_call(&f) != 0)
		return 1;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGALRM, &sa, NULL);
	f.fd = connect_to(argv[1], argv[2]);
	if (f.fd < 0) {
		fprintf(stderr, "share_flood: cannot connect to %s:%s\n", argv[1], argv[2]);
		return 1;
	}
	if (seconds > 0)
		alarm((unsigned)seconds);
	double t0 = now_s();
	int rc = send_calls(&f, (unsigned long)window);
	while (rc == 0 && !stop) {
		ssize_t r = read(f.fd, in, sizeof(in));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			rc = -1;
			break;
		}
		unsigned long n = parse(&f, in, (size_t)r);
		if (n > 0 && !stop)
			rc = send_calls(&f, n); /* one more call for every reply */
	}
	double t = now_s() - t0;
	printf("%lu replies in %.1f s: %.0f calls/s, %lu not SUCCESS%s\n", f.replies, t,
	       t > 0 ? (double)f.replies / t : 0.0, f.not_success,
	       rc != 0 ? " (connection lost)" : "");
	close(f.fd);
	return rc != 0 ? 1 : 0;
}
