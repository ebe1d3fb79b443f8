/* ntp.c - see ntp.h.  Packet format: RFC 5905, section 7.3. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "profile/ntp.h"

#define NTP_PACKET 48
#define NTP_UNIX_DELTA 2208988800LL /* 1900-01-01 to 1970-01-01, seconds */
#define NTP_ERA_NS (4294967296LL * 1000000000LL)
#define NS 1000000000LL

/* Offsets of the fields in the 48-byte header. */
#define OFF_LVM 0
#define OFF_STRATUM 1
#define OFF_ROOT_DELAY 4
#define OFF_ROOT_DISP 8
#define OFF_REFID 12
#define OFF_ORIGIN 24
#define OFF_RECEIVE 32
#define OFF_TRANSMIT 40

#define LEAP_UNSYNC 3
#define MODE_CLIENT 3
#define MODE_SERVER 4

static int64_t now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (int64_t)ts.tv_sec * NS + ts.tv_nsec;
}

static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static uint64_t get64(const unsigned char *p)
{
	return (uint64_t)get32(p) << 32 | get32(p + 4);
}

static void put64(unsigned char *p, uint64_t v)
{
	int i;

	for (i = 7; i >= 0; i--) {
		p[i] = v & 0xff;
		v >>= 8;
	}
}

/* NTP short format (16.16 seconds) to nanoseconds. */
static int64_t short_to_ns(uint32_t v)
{
	return (int64_t)(((uint64_t)v * NS + 32768) >> 16);
}

int64_t sh5_ntp_to_ns(uint64_t ntp, int64_t near_ns)
{
	int64_t sec = (int64_t)(ntp >> 32) - NTP_UNIX_DELTA;
	uint64_t lo = ntp & 0xffffffffULL;
	int64_t frac = (int64_t)((lo * NS + (1ULL << 31)) >> 32);
	int64_t ns = sec * NS + frac;

	/* Move by whole eras towards near_ns (at most one step each way
	   for any date within 68 years of near_ns). */
	while (ns - near_ns > NTP_ERA_NS / 2)
		ns -= NTP_ERA_NS;
	while (near_ns - ns > NTP_ERA_NS / 2)
		ns += NTP_ERA_NS;
	return ns;
}

uint64_t sh5_ntp_from_ns(int64_t ns)
{
	int64_t sec = ns / NS, rem = ns % NS;
	uint64_t frac;

	if (rem < 0) {
		rem += NS;
		sec--;
	}
	frac = (((uint64_t)rem << 32) + NS / 2) / NS;
	if (frac > 0xffffffffULL)	/* rem close to 1 s rounds up */
		frac = 0xffffffffULL;
	return (uint64_t)(uint32_t)(sec + NTP_UNIX_DELTA) << 32 | frac;
}

int sh5_ntp_parse_server(const char *spec, char *host, size_t hostlen,
			 int *port, struct sh5_error *errp)
{
	const char *h = spec, *end, *colon = NULL, *p;
	size_t n;
	long v = SH5_NTP_PORT;

	if (!spec || !*spec || !host || hostlen == 0 || !port) {
		errno = EINVAL;
		return sh5_errprintf(errp, "NTP server: empty specification");
	}
	if (*spec == '[') {
		h = spec + 1;
		end = strchr(h, ']');
		if (!end) {
			errno = EINVAL;
			return sh5_errprintf(errp, "%s: missing ']'", spec);
		}
		if (end[1] == ':')
			colon = end + 1;
		else if (end[1]) {
			errno = EINVAL;
			return sh5_errprintf(errp, "%s: junk after ']'", spec);
		}
	} else {
		colon = strchr(spec, ':');
		if (colon && strchr(colon + 1, ':')) {
			errno = EINVAL;
			return sh5_errprintf(errp,
				"%s: write IPv6 addresses as [addr]:port",
				spec);
		}
		end = colon ? colon : spec + strlen(spec);
	}
	n = (size_t)(end - h);
	if (n == 0) {
		errno = EINVAL;
		return sh5_errprintf(errp, "%s: empty host", spec);
	}
	if (n >= hostlen) {
		errno = ENAMETOOLONG;
		return sh5_errprintf(errp, "%s: host name too long", spec);
	}
	if (colon) {
		p = colon + 1;
		if (!*p) {
			errno = EINVAL;
			return sh5_errprintf(errp, "%s: empty port", spec);
		}
		v = 0;
		for (; *p; p++) {
			if (*p < '0' || *p > '9' || v > 65535)
				break;
			v = v * 10 + (*p - '0');
		}
		if (*p || v < 1 || v > 65535) {
			errno = EINVAL;
			return sh5_errprintf(errp, "%s: bad port", spec);
		}
	}
	memcpy(host, h, n);
	host[n] = '\0';
	*port = (int)v;
	return 0;
}

int sh5_ntp_resolve(const char *host, int port, struct sockaddr_storage *sa,
		    socklen_t *len, struct sh5_error *errp)
{
	struct addrinfo hints, *res = NULL;
	char service[16];
	int rc;

	if (!host || !*host || port < 0 || port > 65535 || !sa || !len) {
		errno = EINVAL;
		return sh5_errprintf(errp, "NTP server: bad host or port");
	}
	snprintf(service, sizeof(service), "%d", port ? port : SH5_NTP_PORT);
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_DGRAM;
	hints.ai_flags = AI_NUMERICSERV;
	rc = getaddrinfo(host, service, &hints, &res);
	if (rc != 0 || !res) {
		errno = rc == EAI_SYSTEM ? errno : ENOENT;
		return sh5_errprintf(errp, "%s: cannot resolve: %s", host,
				     rc == EAI_SYSTEM ? strerror(errno)
						      : gai_strerror(rc));
	}
	if (res->ai_addrlen > sizeof(*sa)) {
		freeaddrinfo(res);
		errno = EINVAL;
		return sh5_errprintf(errp, "%s: address too long", host);
	}
	memcpy(sa, res->ai_addr, res->ai_addrlen);
	*len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

/* "addr:port" or "[addr]:port" for messages. */
static void format_addr(const struct sockaddr *sa, char *buf, size_t n)
{
	char host[64] = "?", serv[16] = "?";

	getnameinfo(sa, sa->sa_family == AF_INET6 ?
		    sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in),
		    host, sizeof(host), serv, sizeof(serv),
		    NI_NUMERICHOST | NI_NUMERICSERV);
	snprintf(buf, n, sa->sa_family == AF_INET6 ? "[%s]:%s" : "%s:%s",
		 host, serv);
}

/* A request nonce: unpredictable, so stray or forged packets do not
   match the origin timestamp the server must echo. */
static uint64_t nonce(int64_t t1)
{
	uint32_t r;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
		r = (uint32_t)now_ns(CLOCK_MONOTONIC) ^
		    (uint32_t)getpid() * 2654435761u;
	/* Whole seconds of T1, random fraction: looks like a timestamp. */
	return (sh5_ntp_from_ns(t1) & 0xffffffff00000000ULL) | r;
}

struct exchange {
	int64_t t1, t2, t3, t4;	/* client send, server receive, server
				   send, client receive (ns) */
};

/* Requests of one call: the nonce each carried and when it left. */
struct requests {
	uint64_t nonce[SH5_NTP_MAX_SAMPLES];
	int64_t t1[SH5_NTP_MAX_SAMPLES];
	char answered[SH5_NTP_MAX_SAMPLES];
	int n;
};

/*
 * Check one reply against the requests sent so far.  Returns the index
 * of the request it answers (x->t1..t3 filled) if valid, -2 if it answers
 * none of them (stray, late duplicate: ignore), -1 with a reason in why
 * (and *kod set for DENY/RSTR) if it is invalid.
 */
static int check_reply(const unsigned char *p, ssize_t n,
		       struct requests *rq, struct exchange *x, char *why,
		       size_t whylen, int *kod)
{
	int leap, version, mode, stratum, k;
	uint64_t origin, recv, xmit;
	char code[5];

	if (n < NTP_PACKET) {
		snprintf(why, whylen, "short reply (%zd bytes)", n);
		return -1;
	}
	leap = p[OFF_LVM] >> 6;
	version = (p[OFF_LVM] >> 3) & 7;
	mode = p[OFF_LVM] & 7;
	stratum = p[OFF_STRATUM];
	origin = get64(p + OFF_ORIGIN);
	if (mode != MODE_SERVER) {
		snprintf(why, whylen, "reply in mode %d, not server (4)", mode);
		return -1;
	}
	if (version < 1 || version > 4) {
		snprintf(why, whylen, "reply with NTP version %d", version);
		return -1;
	}
	for (k = rq->n - 1; k >= 0; k--)
		if (rq->nonce[k] == origin && !rq->answered[k])
			break;
	if (k < 0) {
		/* A server must echo our transmit timestamp; one that
		   echoes nothing we sent is broken, not merely late. */
		for (int j = 0; j < rq->n; j++)
			if (rq->nonce[j] == origin)
				return -2;
		snprintf(why, whylen,
			 "origin timestamp matches no request");
		return -1;
	}
	rq->answered[k] = 1;
	if (stratum == 0) {
		memcpy(code, p + OFF_REFID, 4);
		code[4] = '\0';
		for (int i = 0; i < 4; i++)
			if (code[i] < 0x20 || code[i] > 0x7e)
				code[i] = '?';
		snprintf(why, whylen, "kiss-of-death %s", code);
		*kod = !strcmp(code, "DENY") || !strcmp(code, "RSTR");
		return -1;
	}
	if (stratum > 15) {
		snprintf(why, whylen, "server unsynchronised (stratum %d)",
			 stratum);
		return -1;
	}
	if (leap == LEAP_UNSYNC) {
		snprintf(why, whylen,
			 "server unsynchronised (leap indicator 3)");
		return -1;
	}
	recv = get64(p + OFF_RECEIVE);
	xmit = get64(p + OFF_TRANSMIT);
	if (recv == 0 || xmit == 0) {
		snprintf(why, whylen, "reply without %s timestamp",
			 recv == 0 ? "receive" : "transmit");
		return -1;
	}
	x->t1 = rq->t1[k];
	x->t2 = sh5_ntp_to_ns(recv, x->t1);
	x->t3 = sh5_ntp_to_ns(xmit, x->t1);
	if (x->t3 < x->t2) {
		snprintf(why, whylen, "server sent before it received");
		return -1;
	}
	if ((x->t4 - x->t1) - (x->t3 - x->t2) < 0) {
		snprintf(why, whylen, "negative round trip");
		return -1;
	}
	return k;
}

/* Keep x in *best if its round trip is the smallest so far. */
static void keep_best(struct sh5_ntp_result *best, const struct exchange *x,
		      const unsigned char *p)
{
	int64_t rtt = (x->t4 - x->t1) - (x->t3 - x->t2);

	best->valid++;
	if (best->rtt_ns >= 0 && rtt >= best->rtt_ns)
		return;
	best->rtt_ns = rtt;
	best->local_ns = x->t1 + (x->t4 - x->t1) / 2;
	best->offset_ns = ((x->t2 - x->t1) + (x->t3 - x->t4)) / 2;
	best->root_delay_ns = short_to_ns(get32(p + OFF_ROOT_DELAY));
	best->root_disp_ns = short_to_ns(get32(p + OFF_ROOT_DISP));
	best->stratum = p[OFF_STRATUM];
	best->leap = p[OFF_LVM] >> 6;
	best->version = (p[OFF_LVM] >> 3) & 7;
	best->refid = get32(p + OFF_REFID);
}

/* One measurement's state: the socket, the requests sent, the best
 * exchange so far and what went wrong. */
struct probe {
	int fd;
	struct requests rq;
	struct sh5_ntp_result best;
	char why[96];
	int kod, refused, invalid;
};

/* Send the next request; 0, or -1 with errno (ECONNREFUSED: p->refused
 * is set instead and 0 returned). */
static int send_request(struct probe *p)
{
	unsigned char req[NTP_PACKET];
	struct requests *rq = &p->rq;

	memset(req, 0, sizeof(req));
	req[OFF_LVM] = 0 << 6 | 4 << 3 | MODE_CLIENT;
	rq->t1[rq->n] = now_ns(CLOCK_REALTIME);
	rq->nonce[rq->n] = nonce(rq->t1[rq->n]);
	put64(req + OFF_TRANSMIT, rq->nonce[rq->n]);
	rq->n++;
	if (send(p->fd, req, sizeof(req), 0) < 0) {
		if (errno != ECONNREFUSED)
			return -1;
		p->refused = 1;
		return 0;
	}
	p->best.sent++;
	return 0;
}

/* Wait until `until` (CLOCK_MONOTONIC ns) for the reply to the last
 * request; replies to earlier ones arriving late are still good
 * exchanges.  0, or -1 with errno on a socket error. */
static int await_reply(struct probe *p, int64_t until)
{
	unsigned char buf[512];
	struct exchange x;
	ssize_t n;
	int k;

	for (;;) {
		struct pollfd pfd = { .fd = p->fd, .events = POLLIN };
		int64_t left = until - now_ns(CLOCK_MONOTONIC);
		int ms, rc;

		if (left <= 0)
			return 0;
		ms = (int)((left + 999999) / 1000000);
		rc = poll(&pfd, 1, ms);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc < 0)
			return -1;
		if (rc == 0)
			continue;	/* re-check the bound */
		n = recv(p->fd, buf, sizeof(buf), 0);
		x.t4 = now_ns(CLOCK_REALTIME);
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK ||
			    errno == EINTR)
				continue;
			if (errno != ECONNREFUSED)
				return -1;
			p->refused = 1;
			return 0;
		}
		k = check_reply(buf, n, &p->rq, &x, p->why, sizeof(p->why),
				&p->kod);
		if (k == -2)
			continue;	/* duplicate */
		if (k == -1) {
			/* Taken as this request's answer. */
			p->invalid++;
			return 0;
		}
		keep_best(&p->best, &x, buf);
		if (k == p->rq.n - 1)
			return 0;
	}
}

/* The error of a measurement without a valid exchange; -1. */
static int probe_failed(const struct probe *p, const char *who,
			int timeout_ms, struct sh5_error *errp)
{
	if (p->kod) {
		errno = EACCES;
		return sh5_errprintf(errp, "%s: NTP server refused us: %s",
				     who, p->why);
	}
	if (p->refused) {
		errno = ECONNREFUSED;
		return sh5_errprintf(errp, "%s: no NTP server (port unreachable)",
				     who);
	}
	if (p->invalid) {
		errno = EPROTO;
		return sh5_errprintf(errp,
			"%s: no valid NTP reply (%d invalid, %d requests; last: %s)",
			who, p->invalid, p->best.sent, p->why);
	}
	errno = ETIMEDOUT;
	return sh5_errprintf(errp, "%s: no NTP reply within %d ms (%d requests)",
			     who, timeout_ms, p->best.sent);
}

int sh5_ntp_measure_addr(const struct sockaddr *sa, socklen_t len,
			 int samples, int timeout_ms,
			 struct sh5_ntp_result *out, struct sh5_error *errp)
{
	char who[96];
	struct probe p;
	int64_t deadline, now, until;
	int i, err;

	if (!sa || !out || samples < 1 || samples > SH5_NTP_MAX_SAMPLES ||
	    timeout_ms < 1) {
		errno = EINVAL;
		return sh5_errprintf(errp,
			"NTP: bad arguments (samples 1-%d, timeout > 0 ms)",
			SH5_NTP_MAX_SAMPLES);
	}
	format_addr(sa, who, sizeof(who));
	deadline = now_ns(CLOCK_MONOTONIC) + (int64_t)timeout_ms * 1000000;
	memset(&p, 0, sizeof(p));
	p.best.rtt_ns = -1;

	p.fd = socket(sa->sa_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		      0);
	if (p.fd < 0) {
		err = errno;
		goto fail_errno;
	}
	/* Connected: the kernel drops datagrams from other peers and
	   reports ICMP port unreachable as ECONNREFUSED. */
	if (connect(p.fd, sa, len) < 0) {
		err = errno;
		goto fail_errno;
	}

	for (i = 0; i < samples && !p.kod && !p.refused; i++) {
		now = now_ns(CLOCK_MONOTONIC);
		if (now >= deadline)
			break;
		/* This exchange's share of the time left. */
		until = now + (deadline - now) / (samples - i);
		if (send_request(&p) < 0 ||
		    (!p.refused && await_reply(&p, until) < 0)) {
			err = errno;
			goto fail_errno;
		}
	}
	close(p.fd);

	if (p.best.valid > 0) {
		*out = p.best;
		return 0;
	}
	return probe_failed(&p, who, timeout_ms, errp);

fail_errno:
	if (p.fd >= 0)
		close(p.fd);
	errno = err;
	return sh5_errprintf(errp, "%s: NTP socket: %s", who, strerror(err));
}

int sh5_ntp_measure(const char *host, int port, int samples, int timeout_ms,
		    struct sh5_ntp_result *out, struct sh5_error *errp)
{
	struct sockaddr_storage sa;
	socklen_t len;

	if (sh5_ntp_resolve(host, port, &sa, &len, errp) < 0)
		return -1;
	return sh5_ntp_measure_addr((struct sockaddr *)&sa, len, samples,
				    timeout_ms, out, errp);
}
