/*
 * ntp.h - a small NTP (version 4, client mode) probe.
 *
 * sh5_ntp_measure() sends a few client requests to one server and keeps
 * the exchange with the smallest round trip (Cristian's method, as MPE's
 * CLOG and Score-P do): the offset it reports has an error of at most
 * half that round trip.  Everything is bounded by one deadline: a dead,
 * slow or misbehaving server makes the call return, with an error, at
 * the latest timeout_ms after it started (name resolution excepted: pass
 * a numeric address, or resolve once with sh5_ntp_resolve() and use
 * sh5_ntp_measure_addr(), for a hard bound).
 *
 * The module keeps no global state, never blocks on a socket, never
 * logs and is safe to call from several threads at once.  Times are
 * nanoseconds: "local" times on CLOCK_REALTIME since the Unix epoch.
 */
#ifndef SH5_NTP_H
#define SH5_NTP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "common/error.h"

/* The NTP port. */
#define SH5_NTP_PORT 123

/* Bounds of the "samples" argument. */
#define SH5_NTP_MAX_SAMPLES 64

/* One measurement: the best (smallest round trip) valid exchange. */
struct sh5_ntp_result {
	int64_t local_ns;	/* local CLOCK_REALTIME at the middle of the
				   exchange (send and receive averaged) */
	int64_t offset_ns;	/* server clock minus local clock, at
				   local_ns */
	int64_t rtt_ns;		/* round trip minus server processing */
	int64_t root_delay_ns;	/* server's round trip to its reference */
	int64_t root_disp_ns;	/* server's dispersion to its reference */
	int stratum;		/* server's stratum, 1..15 */
	int leap;		/* leap indicator of the reply, 0..2 */
	int version;		/* NTP version of the reply */
	uint32_t refid;		/* server's reference id (host order) */
	int sent;		/* requests sent */
	int valid;		/* valid replies received (>= 1 on success) */
};

/*
 * Split "host", "host:port", "[v6addr]" or "[v6addr]:port" into host and
 * port (SH5_NTP_PORT when none is given).  host must hold hostlen bytes.
 * Returns 0, or -1 with errno EINVAL (bad port, empty host, unbalanced
 * bracket) or ENAMETOOLONG and a reason in errp.
 */
int sh5_ntp_parse_server(const char *spec, char *host, size_t hostlen,
			 int *port, struct sh5_error *errp);

/*
 * Resolve host (name or numeric IPv4/IPv6 address) and port into a UDP
 * socket address (the first one getaddrinfo returns).  This may block
 * in DNS for as long as the resolver takes.  Returns 0 with *sa and *len
 * set, or -1 with errno (ENOENT for an unknown name, EINVAL) and a
 * reason in errp.
 */
int sh5_ntp_resolve(const char *host, int port, struct sockaddr_storage *sa,
		    socklen_t *len, struct sh5_error *errp);

/*
 * Measure the local clock's offset to the NTP server at sa: send up to
 * samples (1..SH5_NTP_MAX_SAMPLES) requests one after the other, each
 * waiting at most for its share of what is left of timeout_ms (> 0),
 * check every reply (server mode, version 1-4, origin timestamp equal to
 * the request's transmit timestamp, stratum 1-15, leap indicator not
 * "unsynchronised", sane timestamps) and fill *out from the valid reply
 * with the smallest round trip.  Replies that fail a check are ignored;
 * a kiss-of-death (stratum 0) DENY or RSTR ends the call at once.
 *
 * Returns 0 when at least one reply was valid.  Otherwise -1 with errno:
 * ETIMEDOUT (no reply in time), EPROTO (only invalid replies; errp says
 * why), EACCES (kiss-of-death DENY/RSTR), ECONNREFUSED (nothing listens:
 * ICMP port unreachable), EINVAL (arguments), or the socket call's errno,
 * and a reason naming the server in errp.  *out is only written on
 * success.  Never returns later than timeout_ms (plus scheduling
 * latency) after it was called.
 */
int sh5_ntp_measure_addr(const struct sockaddr *sa, socklen_t len,
			 int samples, int timeout_ms,
			 struct sh5_ntp_result *out, struct sh5_error *errp);

/*
 * sh5_ntp_resolve() then sh5_ntp_measure_addr().  host may be a name
 * (resolution is not bounded by timeout_ms) or a numeric address (no
 * DNS).  port 0 means SH5_NTP_PORT.  Same results as
 * sh5_ntp_measure_addr().
 */
int sh5_ntp_measure(const char *host, int port, int samples, int timeout_ms,
		    struct sh5_ntp_result *out, struct sh5_error *errp);

/*
 * Convert a 64-bit NTP timestamp (seconds since 1900 in the high 32
 * bits, binary fraction in the low 32) to nanoseconds since the Unix
 * epoch, choosing the 136-year NTP era that puts the result closest to
 * near_ns (any time known to be within 68 years, e.g. the local clock).
 */
int64_t sh5_ntp_to_ns(uint64_t ntp, int64_t near_ns);

/*
 * Convert nanoseconds since the Unix epoch to a 64-bit NTP timestamp
 * (the era is dropped, as on the wire).
 */
uint64_t sh5_ntp_from_ns(int64_t ns);

#endif /* SH5_NTP_H */
