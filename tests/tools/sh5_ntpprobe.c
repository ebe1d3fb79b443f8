/* sh5_ntpprobe - test helper: one sh5_ntp_measure() call, printed.
 *
 * usage: sh5_ntpprobe HOST[:PORT] SAMPLES TIMEOUT_MS
 * prints "offset_ns rtt_ns stratum local_ns valid sent" on stdout;
 * exit 0 on success, 1 (reason on stderr) on failure, 2 on usage. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/ntp.h"

static int number(const char *s, long lo, long hi, long *v)
{
	char *end;

	*v = strtol(s, &end, 10);
	return *s && !*end && *v >= lo && *v <= hi;
}

int main(int argc, char **argv)
{
	struct sh5_ntp_result r;
	struct sh5_error err;
	char host[256];
	long samples, timeout;
	int port;

	if (argc != 4 || !number(argv[2], 1, SH5_NTP_MAX_SAMPLES, &samples) ||
	    !number(argv[3], 1, 600000, &timeout)) {
		fprintf(stderr, "usage: sh5_ntpprobe HOST[:PORT] SAMPLES TIMEOUT_MS\n");
		return 2;
	}
	if (sh5_ntp_parse_server(argv[1], host, sizeof(host), &port, &err) < 0 ||
	    sh5_ntp_measure(host, port, (int)samples, (int)timeout, &r,
			    &err) < 0) {
		fprintf(stderr, "sh5_ntpprobe: %s\n", err.text);
		return 1;
	}
	printf("%lld %lld %d %lld %d %d\n", (long long)r.offset_ns,
	       (long long)r.rtt_ns, r.stratum, (long long)r.local_ns, r.valid,
	       r.sent);
	return 0;
}
