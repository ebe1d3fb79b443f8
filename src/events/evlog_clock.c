/*
 * evlog_clock.c - the event log's clock: CLOCK_REALTIME, extrapolated
 * from the TSC on the owner thread (sh5_evlog_now() is in evlog.c).
 */
#include "config.h"

#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "events/evlog_int.h"

int64_t gettime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/*
 * The owner thread's clock: CLOCK_REALTIME extrapolated from the TSC.
 * Only where the kernel itself keeps time with the TSC (clocksource
 * "tsc": invariant and synchronized across CPUs, checked by the kernel),
 * so the two differ only by the rate.  An anchor (TSC, CLOCK_REALTIME)
 * pair is taken at least every millisecond (ANCHOR_NS); in between,
 * time is anchor + ticks * rate, the rate measured between anchors at
 * least 1 ms and at most about 20 s apart.  Error: the rate's error
 * (anchor jitter ~50 ns over the base) times 1 ms: <= 50 ns in the
 * first milliseconds, a few ns after a second; an NTP frequency change
 * of d ppm adds d ns at most.  Never goes back by less than a window
 * (an overshoot is absorbed at the next anchor); a step of the real
 * clock is taken as is.  Before the first rate and where the TSC is not
 * usable: clock_gettime().
 */
#ifdef HAVE_TSC
#define ANCHOR_NS 1000000
#define BASE_NS 10000000000ll

struct tscclock C;

/* A (TSC, ns) pair taken close together; -1 when it was not. */
static int tsc_pair(uint64_t *t, int64_t *ns)
{
	uint64_t a, b, w = UINT64_MAX;
	int64_t x;
	int i;

	for (i = 0; i < 3; i++) {	/* the narrowest of 3 */
		a = rdtsc();
		x = gettime_ns();
		b = rdtsc();
		if (b >= a && b - a < w) {
			w = b - a;
			*t = a + w / 2;
			*ns = x;
		}
	}
	return w < 20000 ? 0 : -1;	/* ~5 us at 4 GHz: preempted */
}

void tsc_init(void)
{
	char buf[16];
	ssize_t n;
	int fd;

	memset(&C, 0, sizeof(C));
	fd = open("/sys/devices/system/clocksource/clocksource0/"
		  "current_clocksource", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n != 4 || memcmp(buf, "tsc\n", 4) != 0)
		return;
	if (tsc_pair(&C.bt[0], &C.bns[0]) < 0)
		return;
	C.bt[1] = C.bt[0];
	C.bns[1] = C.bns[0];
	C.usable = 1;
}

/* Out of the window (or no rate yet): a new anchor. */
int64_t __attribute__((noinline)) tsc_anchor(uint64_t now)
{
	uint64_t t, dt;
	int64_t ns, dns, ext = 0;
	unsigned __int128 m;

	if (tsc_pair(&t, &ns) < 0)
		return gettime_ns();
	if (C.mult) {
		/* where the old window would put t; values handed out so far
		 * were at most that */
		ext = C.ns0 + (int64_t)(((unsigned __int128)(t - C.t0) *
					 C.mult) >> 32);
	}
	dt = t - C.bt[0];
	dns = ns - C.bns[0];
	if (t > C.bt[0] && dns >= ANCHOR_NS) {
		m = ((unsigned __int128)(uint64_t)dns << 32) / dt;
		if (C.mult && (m > C.mult + (C.mult >> 10) ||
			       m < C.mult - (C.mult >> 10))) {
			/* > 0.1 % off: the real clock was stepped; start the
			 * rate bases again, keep the rate */
			C.bt[0] = C.bt[1] = t;
			C.bns[0] = C.bns[1] = ns;
			ext = 0;
		} else {
			C.mult = (uint64_t)m;
		}
	}
	if (ns - C.bns[1] >= BASE_NS) {
		C.bt[0] = C.bt[1];
		C.bns[0] = C.bns[1];
		C.bt[1] = t;
		C.bns[1] = ns;
	}
	if (!C.mult)
		return ns;	/* the next call anchors again */
	if (ext > ns && ext - ns < ANCHOR_NS)
		ns = ext;
	C.t0 = t;
	C.ns0 = ns;
	C.win = (uint64_t)(((unsigned __int128)ANCHOR_NS << 32) / C.mult);
	(void)now;
	return C.ns0 + (int64_t)(((now > t ? now - t : 0) * C.mult) >> 32);
}
#endif
