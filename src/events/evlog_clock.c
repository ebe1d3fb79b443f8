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
 * so the two differ only by the rate.  A window: from an anchor (TSC,
 * CLOCK_REALTIME) pair, at most 1 ms of ticks (ANCHOR_NS) extrapolated
 * at the rate measured between pairs 10 ms (RATE0_NS) to about 20 s
 * apart (BASE_NS); then a new pair.
 *
 * Error: the rate's (a pair's midpoint is within ~150 ns: pairs wider
 * than 4x the narrowest are not taken) times 1 ms, a few ns after the
 * first second; an NTP frequency change of d ppm adds d ns at most.
 * Never goes back: where a window ran ahead of the real clock (by its
 * rate's error, a pair's jitter, or a step back of the real clock of
 * at most STEP_NS), the next window starts where this one ended and
 * runs slower by up to 0.1 % (SLEW_MAX), so the lead is absorbed
 * (1 us a millisecond) instead of kept.  A step of the real clock (a
 * pair more than STEP_NS + 61 ppm of the time since the previous pair
 * from where the rate puts it) is taken as is and restarts the rate's
 * bases, keeping the rate.  Before the first rate and where the TSC is
 * not usable: clock_gettime().
 */
#ifdef HAVE_TSC
#define ANCHOR_NS 1000000
#define RATE0_NS 10000000
#define BASE_NS 10000000000ll
#define STEP_NS 20000
#define SLEW_MAX (ANCHOR_NS >> 10)

struct tscclock C;

static int64_t ticks_ns(uint64_t ticks, uint64_t mult)
{
	return (int64_t)(((unsigned __int128)ticks * mult) >> 32);
}

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
	if (w >= 20000)		/* ~5 us at 4 GHz: preempted */
		return -1;
	if (!C.wmin || w < C.wmin)
		C.wmin = w;
	return w <= 4 * C.wmin + 64 ? 0 : -1;
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
	C.bt[1] = C.pt = C.bt[0];
	C.bns[1] = C.pns = C.bns[0];
	C.usable = 1;
}

/* A step of the real clock since the last pair: (t, ns) is not where
 * the rate puts it. */
static int real_step(uint64_t t, int64_t ns)
{
	int64_t el = ns - C.pns, r;

	if (t < C.pt || el < 0)
		return 1;
	r = ns - C.pns - ticks_ns(t - C.pt, C.rate);
	return r > STEP_NS + (el >> 14) || -r > STEP_NS + (el >> 14);
}

/* The rate from the bases, which a step starts again. */
static void measure(uint64_t t, int64_t ns, int step)
{
	if (step || t <= C.bt[0] || ns < C.bns[0]) {
		C.bt[0] = C.bt[1] = t;
		C.bns[0] = C.bns[1] = ns;
		return;
	}
	if (ns - C.bns[0] >= RATE0_NS)
		C.rate = (uint64_t)(((unsigned __int128)(uint64_t)(ns - C.bns[0])
				     << 32) / (t - C.bt[0]));
	if (ns - C.bns[1] >= BASE_NS) {
		C.bt[0] = C.bt[1];
		C.bns[0] = C.bns[1];
		C.bt[1] = t;
		C.bns[1] = ns;
	}
}

/* Out of the window (or no rate yet): a new anchor. */
int64_t __attribute__((noinline)) tsc_anchor(uint64_t now)
{
	uint64_t t, adj;
	int64_t ns, top = INT64_MIN, lead = 0;
	int step;

	if (!C.rate) {
		ns = gettime_ns();
		if (ns - C.bns[0] < RATE0_NS && ns >= C.bns[0])
			return ns;
	}
	/* the most the window has handed out: its end */
	if (C.mult)
		top = C.ns0 + ticks_ns(C.win, C.mult);
	if (tsc_pair(&t, &ns) < 0) {
		ns = gettime_ns();
		return ns > top ? ns : top;	/* the next call anchors again */
	}
	step = C.rate && real_step(t, ns);
	measure(t, ns, step);
	C.pt = t;
	C.pns = ns;
	if (!C.rate)
		return ns;
	if (C.mult && !step)
		lead = top - ns;
	C.t0 = t;
	C.mult = C.rate;
	if (lead > 0) {
		adj = lead < SLEW_MAX ? (uint64_t)lead : SLEW_MAX;
		C.ns0 = top;
		C.mult -= (uint64_t)(((unsigned __int128)C.rate * adj) /
				     ANCHOR_NS);
	} else {
		C.ns0 = ns;
	}
	C.win = (uint64_t)(((unsigned __int128)ANCHOR_NS << 32) / C.rate);
	return C.ns0 + ticks_ns(now > t ? now - t : 0, C.mult);
}
#endif
