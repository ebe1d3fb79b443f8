/* test_ntp.c - the NTP probe against a real chronyd started here, a
 * silent port, a closed port, and in-process responders that answer
 * wrongly, late, twice or with a known offset. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "profile/ntp.h"

#define NS 1000000000LL
#define MS 1000000LL
#define CHRONYD "/usr/sbin/chronyd"

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * NS + ts.tv_nsec;
}

static int64_t real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * NS + ts.tv_nsec;
}

/* A UDP socket bound to 127.0.0.1 on a kernel-chosen port. */
static int udp_bound(int *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

/* ------------------------------------------------------------ conversions */

START_TEST(test_ntp_timestamp_roundtrip)
{
	/* 1970, 2001, now-ish, just before and after the 2036 era wrap,
	   2100; all to the nanosecond and back. */
	static const int64_t secs[] = { 0, 978307200, 1795305600,
					2085978495, 2085978496, 2085978497,
					4102444800 };
	static const int64_t frac_ns[] = { 0, 1, 499999999, 999999999 };

	for (size_t i = 0; i < sizeof(secs) / sizeof(secs[0]); i++) {
		for (size_t j = 0; j < 4; j++) {
			int64_t t = secs[i] * NS + frac_ns[j];
			uint64_t ntp = sh5_ntp_from_ns(t);
			int64_t back = sh5_ntp_to_ns(ntp, t + 3600 * NS);

			ck_assert_msg(llabs(back - t) <= 1,
				      "t=%lld back=%lld", (long long)t,
				      (long long)back);
		}
	}
	/* The wire value of 2036-02-07T06:28:16Z is second 0 of era 1. */
	ck_assert_uint_eq(sh5_ntp_from_ns(2085978496LL * NS) >> 32, 0);
	/* Fraction 0x80000000 is half a second. */
	ck_assert_int_eq(sh5_ntp_to_ns((2208988800ULL << 32) | 0x80000000u, 0),
			 NS / 2);
}
END_TEST

START_TEST(test_ntp_parse_server)
{
	static const struct {
		const char *spec, *host;
		int port, err;
	} c[] = {
		{ "ntp.example.org", "ntp.example.org", 123, 0 },
		{ "10.0.0.1:1234", "10.0.0.1", 1234, 0 },
		{ "[::1]", "::1", 123, 0 },
		{ "[fe80::1]:999", "fe80::1", 999, 0 },
		{ "::1", NULL, 0, EINVAL },
		{ "host:", NULL, 0, EINVAL },
		{ "host:0", NULL, 0, EINVAL },
		{ "host:65536", NULL, 0, EINVAL },
		{ "host:12x", NULL, 0, EINVAL },
		{ ":123", NULL, 0, EINVAL },
		{ "[::1", NULL, 0, EINVAL },
		{ "[::1]x", NULL, 0, EINVAL },
		{ "", NULL, 0, EINVAL },
		{ "a-very-long-host-name-that-does-not-fit-in-sixteen", NULL, 0,
		  ENAMETOOLONG },
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct sh5_error err = { "" };
		char host[16];
		int port = -1;
		int rc = sh5_ntp_parse_server(c[i].spec, host, sizeof(host),
					      &port, &err);

		if (c[i].err == 0) {
			ck_assert_msg(rc == 0, "%s: %s", c[i].spec, err.text);
			ck_assert_str_eq(host, c[i].host);
			ck_assert_int_eq(port, c[i].port);
		} else {
			ck_assert_msg(rc == -1, "%s accepted", c[i].spec);
			ck_assert_int_eq(errno, c[i].err);
			ck_assert_msg(err.text[0], "%s: no reason", c[i].spec);
		}
	}
}
END_TEST

START_TEST(test_ntp_bad_arguments)
{
	struct sh5_ntp_result r;
	struct sh5_error err;

	ck_assert_int_eq(sh5_ntp_measure("127.0.0.1", 123, 0, 100, &r, &err), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(sh5_ntp_measure("127.0.0.1", 123, 65, 100, &r, &err), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(sh5_ntp_measure("127.0.0.1", 123, 1, 0, &r, &err), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(sh5_ntp_measure("no-such-host.invalid", 123, 1, 100,
					 &r, &err), -1);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_ptr_nonnull(strstr(err.text, "no-such-host.invalid"));
}
END_TEST

/* ------------------------------------------------------------ real chronyd */

static char chrony_dir[64];
static pid_t chrony_pid = -1;
static int chrony_port;

/* Start chronyd (no clock control, local stratum 8) on 127.0.0.1 and
   wait until it answers; runs once, in Check's parent process. */
static void chrony_setup(void)
{
	struct sh5_ntp_result r;
	char conf[128];
	FILE *f;
	int fd, tries;

	ck_assert_msg(access(CHRONYD, X_OK) == 0,
		      CHRONYD " missing (Debian package chrony)");
	snprintf(chrony_dir, sizeof(chrony_dir), "/tmp/sh5-test-ntp-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(chrony_dir));
	/* A free port: bind one, release it, hand it to chronyd. */
	fd = udp_bound(&chrony_port);
	close(fd);
	snprintf(conf, sizeof(conf), "%s/chrony.conf", chrony_dir);
	f = fopen(conf, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "port %d\nbindaddress 127.0.0.1\nallow all\n"
		"local stratum 8\ncmdport 0\nbindcmdaddress /\n"
		"pidfile %s/chronyd.pid\ndriftfile %s/drift\nlogdir %s\n",
		chrony_port, chrony_dir, chrony_dir, chrony_dir);
	ck_assert_int_eq(fclose(f), 0);

	chrony_pid = fork();
	ck_assert_int_ge(chrony_pid, 0);
	if (chrony_pid == 0) {
		char log[128];
		int lfd;

		snprintf(log, sizeof(log), "%s/chronyd.log", chrony_dir);
		lfd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
		if (lfd >= 0) {
			dup2(lfd, 1);
			dup2(lfd, 2);
		}
		if (getuid() == 0)
			execl(CHRONYD, "chronyd", "-x", "-d", "-u", "root",
			      "-F", "0", "-f", conf, (char *)NULL);
		else
			execl(CHRONYD, "chronyd", "-x", "-d", "-U", "-F", "0",
			      "-f", conf, (char *)NULL);
		_exit(127);
	}
	for (tries = 0; tries < 50; tries++) {
		if (sh5_ntp_measure("127.0.0.1", chrony_port, 1, 200, &r,
				    NULL) == 0)
			return;
		ck_assert_msg(waitpid(chrony_pid, NULL, WNOHANG) == 0,
			      "chronyd exited; see %s/chronyd.log", chrony_dir);
		usleep(100000);
	}
	ck_abort_msg("chronyd on port %d did not answer in 10 s", chrony_port);
}

static void chrony_teardown(void)
{
	char cmd[128];
	int i;

	if (chrony_pid > 0) {
		kill(chrony_pid, SIGTERM);
		for (i = 0; i < 50; i++) {
			if (waitpid(chrony_pid, NULL, WNOHANG) == chrony_pid)
				break;
			usleep(100000);
		}
		if (i == 50) {
			kill(chrony_pid, SIGKILL);
			waitpid(chrony_pid, NULL, 0);
		}
		chrony_pid = -1;
	}
	if (chrony_dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", chrony_dir);
		ck_assert_int_eq(system(cmd), 0);
	}
}

START_TEST(test_ntp_chronyd_measure)
{
	struct sh5_ntp_result r;
	struct sh5_error err = { "" };
	int64_t before = real_ns(), after;

	ck_assert_msg(sh5_ntp_measure("127.0.0.1", chrony_port, 4, 2000, &r,
				      &err) == 0, "%s", err.text);
	after = real_ns();
	ck_assert_int_eq(r.stratum, 8);
	ck_assert_int_eq(r.version, 4);
	ck_assert_int_ne(r.leap, 3);
	ck_assert_int_ge(r.valid, 1);
	ck_assert_int_le(r.valid, r.sent);
	ck_assert_int_le(r.sent, 4);
	ck_assert_int_ge(r.local_ns, before);
	ck_assert_int_le(r.local_ns, after);
	ck_assert_int_ge(r.rtt_ns, 0);
	ck_assert_int_le(r.rtt_ns, after - before);
	/* Same clock on both sides: the true offset is 0, and Cristian's
	   error bound is half the round trip (plus the server's timestamp
	   resolution, well under a millisecond). */
	ck_assert_msg(llabs(r.offset_ns) <= r.rtt_ns / 2 + MS,
		      "offset %lld ns, rtt %lld ns", (long long)r.offset_ns,
		      (long long)r.rtt_ns);
}
END_TEST

START_TEST(test_ntp_chronyd_one_sample)
{
	struct sh5_ntp_result r;
	struct sh5_error err = { "" };

	ck_assert_msg(sh5_ntp_measure("localhost", chrony_port, 1, 1000, &r,
				      &err) == 0 ||
		      /* localhost may resolve to ::1 first, where chronyd
			 does not listen: that must fail cleanly. */
		      errno == ECONNREFUSED, "%s", err.text);
	ck_assert_msg(sh5_ntp_measure("127.0.0.1", chrony_port, 1, 1000, &r,
				      &err) == 0, "%s", err.text);
	ck_assert_int_eq(r.sent, 1);
	ck_assert_int_eq(r.valid, 1);
}
END_TEST

/* ------------------------------------------------------------ no server */

/* A bound socket nobody reads: requests vanish, no ICMP error. */
START_TEST(test_ntp_silent_port_times_out)
{
	struct sh5_ntp_result r;
	struct sh5_error err = { "" };
	int port, fd = udp_bound(&port);
	int64_t t0 = mono_ns(), dt;

	ck_assert_int_eq(sh5_ntp_measure("127.0.0.1", port, 4, 300, &r, &err),
			 -1);
	dt = mono_ns() - t0;
	ck_assert_int_eq(errno, ETIMEDOUT);
	ck_assert_ptr_nonnull(strstr(err.text, "no NTP reply within 300 ms"));
	/* The hard bound (generous scheduling slack on a loaded host). */
	ck_assert_msg(dt < 300 * MS + 700 * MS, "took %lld ms",
		      (long long)(dt / MS));
	close(fd);
}
END_TEST

START_TEST(test_ntp_closed_port_refused)
{
	struct sh5_ntp_result r;
	struct sh5_error err = { "" };
	int port, fd = udp_bound(&port);
	int64_t t0 = mono_ns(), dt;

	close(fd);	/* nothing listens there now */
	ck_assert_int_eq(sh5_ntp_measure("127.0.0.1", port, 4, 2000, &r, &err),
			 -1);
	dt = mono_ns() - t0;
	ck_assert_int_eq(errno, ECONNREFUSED);
	ck_assert_ptr_nonnull(strstr(err.text, "port unreachable"));
	ck_assert_msg(dt < 2000 * MS + 700 * MS, "took %lld ms",
		      (long long)(dt / MS));
}
END_TEST

/* ------------------------------------------------------------ responders */

enum reply_kind {
	R_GOOD,		/* correct, offset +5 s, stratum 3, root delay 1 s */
	R_TWICE,	/* correct, each reply sent twice */
	R_MIN_RTT,	/* request 2 answered at once with offset +1 s, the
			   others after 80 ms with offset +2 s */
	R_LATE,		/* every reply delayed past its exchange's share */
	R_SHORT,	/* 40-byte reply */
	R_MODE,		/* echoes the request (mode 3) */
	R_ORIGIN,	/* origin timestamp not ours */
	R_STRATUM16,	/* stratum 16 */
	R_LEAP3,	/* leap indicator 3 */
	R_KOD_DENY,	/* stratum 0, DENY */
	R_KOD_RATE,	/* stratum 0, RATE */
	R_NOXMIT,	/* transmit timestamp 0 */
	R_VERSION0,	/* version 0 */
	R_BACKWARDS,	/* server transmit before its receive */
};

struct responder {
	int fd, port;
	enum reply_kind kind;
	volatile int stop;
	pthread_t thread;
	int requests;
};

static void put64(unsigned char *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = v & 0xff;
}

static void *respond(void *arg)
{
	struct responder *rs = arg;
	unsigned char q[128], a[48];
	struct sockaddr_storage from;
	socklen_t flen;
	ssize_t n;

	while (!rs->stop) {
		struct pollfd pfd = { .fd = rs->fd, .events = POLLIN };
		int64_t off = 5 * NS, delay = 0;
		uint8_t stratum = 3, lvm = 0 << 6 | 4 << 3 | 4;

		if (poll(&pfd, 1, 50) <= 0)
			continue;
		flen = sizeof(from);
		n = recvfrom(rs->fd, q, sizeof(q), 0,
			     (struct sockaddr *)&from, &flen);
		if (n < 48)
			continue;
		rs->requests++;
		memset(a, 0, sizeof(a));
		memcpy(a + 24, q + 40, 8);	/* origin = their transmit */
		a[4] = 0; a[5] = 1;		/* root delay 1.0 s */
		a[10] = 0x80;			/* root dispersion 0.5 ms-ish */
		memcpy(a + 12, "GPS\0", 4);
		switch (rs->kind) {
		case R_MIN_RTT:
			off = rs->requests == 2 ? NS : 2 * NS;
			delay = rs->requests == 2 ? 0 : 80 * MS;
			break;
		case R_LATE:
			delay = 150 * MS;
			break;
		case R_ORIGIN:
			a[31] ^= 0x5a;
			break;
		case R_STRATUM16:
			stratum = 16;
			break;
		case R_LEAP3:
			lvm = 3 << 6 | 4 << 3 | 4;
			break;
		case R_KOD_DENY:
			stratum = 0;
			memcpy(a + 12, "DENY", 4);
			break;
		case R_KOD_RATE:
			stratum = 0;
			memcpy(a + 12, "RATE", 4);
			break;
		case R_VERSION0:
			lvm = 0 << 6 | 0 << 3 | 4;
			break;
		default:
			break;
		}
		if (delay)
			usleep(delay / 1000);
		a[0] = lvm;
		a[1] = stratum;
		put64(a + 32, sh5_ntp_from_ns(real_ns() + off));
		put64(a + 40, sh5_ntp_from_ns(real_ns() + off));
		if (rs->kind == R_NOXMIT)
			memset(a + 40, 0, 8);
		if (rs->kind == R_BACKWARDS)
			put64(a + 40, sh5_ntp_from_ns(real_ns() + off - NS));
		if (rs->kind == R_MODE) {
			sendto(rs->fd, q, 48, 0, (struct sockaddr *)&from, flen);
			continue;
		}
		sendto(rs->fd, a, rs->kind == R_SHORT ? 40 : 48, 0,
		       (struct sockaddr *)&from, flen);
		if (rs->kind == R_TWICE)
			sendto(rs->fd, a, 48, 0, (struct sockaddr *)&from,
			       flen);
	}
	return NULL;
}

static void responder_start(struct responder *rs, enum reply_kind kind)
{
	memset(rs, 0, sizeof(*rs));
	rs->kind = kind;
	rs->fd = udp_bound(&rs->port);
	ck_assert_int_eq(pthread_create(&rs->thread, NULL, respond, rs), 0);
}

static void responder_stop(struct responder *rs)
{
	rs->stop = 1;
	pthread_join(rs->thread, NULL);
	close(rs->fd);
}

START_TEST(test_ntp_known_offset)
{
	struct responder rs;
	struct sh5_ntp_result r;
	struct sh5_error err = { "" };

	responder_start(&rs, R_GOOD);
	ck_assert_msg(sh5_ntp_measure("127.0.0.1", rs.port, 3, 2000, &r,
				      &err) == 0, "%s", err.text);
	responder_stop(&rs);
	/* Server = local + 5 s: the offset is reference minus local. */
	ck_assert_msg(llabs(r.offset_ns - 5 * NS) <= r.rtt_ns / 2 + MS,
		      "offset %lld", (long long)r.offset_ns);
	ck_assert_int_eq(r.stratum, 3);
	ck_assert_int_eq(r.root_delay_ns, NS);
	ck_assert_uint_eq(r.refid, 0x47505300u);	/* "GPS\0" */
	ck_assert_int_eq(r.sent, 3);
	ck_assert_int_eq(r.valid, 3);
}
END_TEST

START_TEST(test_ntp_duplicate_replies_ignored)
{
	struct responder rs;
	struct sh5_ntp_result r;
	struct sh5_error err = { "" };

	responder_start(&rs, R_TWICE);
	ck_assert_msg(sh5_ntp_measure("127.0.0.1", rs.port, 4, 2000, &r,
				      &err) == 0, "%s", err.text);
	responder_stop(&rs);
	ck_assert_int_eq(r.sent, 4);
	ck_assert_int_eq(r.valid, 4);	/* duplicates not counted */
}
END_TEST

START_TEST(test_ntp_keeps_smallest_round_trip)
{
	struct responder rs;
	struct sh5_ntp_result r;
	struct sh5_error err = { "" };

	responder_start(&rs, R_MIN_RTT);
	ck_assert_msg(sh5_ntp_measure("127.0.0.1", rs.port, 3, 3000, &r,
				      &err) == 0, "%s", err.text);
	responder_stop(&rs);
	ck_assert_int_eq(r.valid, 3);
	/* The quick exchange (offset +1 s) wins over the slow ones. */
	ck_assert_msg(llabs(r.offset_ns - NS) < 40 * MS, "offset %lld rtt %lld",
		      (long long)r.offset_ns, (long long)r.rtt_ns);
	ck_assert_int_lt(r.rtt_ns, 80 * MS);
}
END_TEST

/* Replies that come after their exchange's share of the time still
   count when they arrive while a later exchange waits. */
START_TEST(test_ntp_late_replies_used)
{
	struct responder rs;
	struct sh5_ntp_result r;
	struct sh5_error err = { "" };

	responder_start(&rs, R_LATE);
	/* 4 requests in 600 ms: shares of ~150 ms; replies take 150 ms. */
	ck_assert_msg(sh5_ntp_measure("127.0.0.1", rs.port, 4, 600, &r,
				      &err) == 0, "%s", err.text);
	responder_stop(&rs);
	ck_assert_int_ge(r.valid, 1);
	ck_assert_int_ge(r.rtt_ns, 150 * MS);
	ck_assert_msg(llabs(r.offset_ns - 5 * NS) <= r.rtt_ns / 2 + MS,
		      "offset %lld", (long long)r.offset_ns);
}
END_TEST

static const struct {
	enum reply_kind kind;
	int err;
	const char *why;
} bad[] = {
	{ R_SHORT, EPROTO, "short reply (40 bytes)" },
	{ R_MODE, EPROTO, "mode 3" },
	{ R_ORIGIN, EPROTO, "origin timestamp" },
	{ R_STRATUM16, EPROTO, "stratum 16" },
	{ R_LEAP3, EPROTO, "leap indicator 3" },
	{ R_KOD_DENY, EACCES, "kiss-of-death DENY" },
	{ R_KOD_RATE, EPROTO, "kiss-of-death RATE" },
	{ R_NOXMIT, EPROTO, "without transmit" },
	{ R_VERSION0, EPROTO, "version 0" },
	{ R_BACKWARDS, EPROTO, "sent before it received" },
};

START_TEST(test_ntp_malformed_replies_rejected)
{
	struct responder rs;
	struct sh5_ntp_result r = { .stratum = -7 };
	struct sh5_error err = { "" };
	int64_t t0 = mono_ns(), dt;
	int rc, e;

	responder_start(&rs, bad[_i].kind);
	rc = sh5_ntp_measure("127.0.0.1", rs.port, 3, 1000, &r, &err);
	e = errno;
	dt = mono_ns() - t0;
	responder_stop(&rs);
	ck_assert_int_eq(rc, -1);
	ck_assert_msg(e == bad[_i].err, "kind %d: errno %d (%s)", bad[_i].kind,
		      e, err.text);
	ck_assert_msg(strstr(err.text, bad[_i].why), "kind %d: '%s'",
		      bad[_i].kind, err.text);
	ck_assert_ptr_nonnull(strstr(err.text, "127.0.0.1:"));
	ck_assert_int_eq(r.stratum, -7);	/* untouched on failure */
	ck_assert_msg(dt < 1000 * MS + 700 * MS, "took %lld ms",
		      (long long)(dt / MS));
	/* DENY stops at the first reply. */
	if (bad[_i].kind == R_KOD_DENY)
		ck_assert_int_eq(rs.requests, 1);
}
END_TEST

static Suite *ntp_suite(void)
{
	Suite *s = suite_create("ntp");
	TCase *tc;

	tc = tcase_create("format");
	tcase_add_test(tc, test_ntp_timestamp_roundtrip);
	tcase_add_test(tc, test_ntp_parse_server);
	tcase_add_test(tc, test_ntp_bad_arguments);
	suite_add_tcase(s, tc);

	tc = tcase_create("chronyd");
	tcase_add_unchecked_fixture(tc, chrony_setup, chrony_teardown);
	tcase_add_test(tc, test_ntp_chronyd_measure);
	tcase_add_test(tc, test_ntp_chronyd_one_sample);
	tcase_set_timeout(tc, 30);
	suite_add_tcase(s, tc);

	tc = tcase_create("faults");
	tcase_add_test(tc, test_ntp_silent_port_times_out);
	tcase_add_test(tc, test_ntp_closed_port_refused);
	tcase_add_test(tc, test_ntp_known_offset);
	tcase_add_test(tc, test_ntp_duplicate_replies_ignored);
	tcase_add_test(tc, test_ntp_keeps_smallest_round_trip);
	tcase_add_test(tc, test_ntp_late_replies_used);
	tcase_add_loop_test(tc, test_ntp_malformed_replies_rejected, 0,
			    sizeof(bad) / sizeof(bad[0]));
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(ntp_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
