/*
 * test_evclock.c - the recording thread's clock (evlog_clock.c):
 * CLOCK_REALTIME extrapolated from the TSC where the kernel keeps time
 * with it.  It follows the real clock within 1 us and never goes back;
 * a wrong rate, a lead over the real clock and a step of the real clock
 * (each made by changing the clock's state, as a long-running process
 * could have found it) are recovered from.  Each test runs in a forked
 * child of its own (a fresh log).
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include <check.h>

#include "events/evlog_int.h"
#include "evtest.h"

static int64_t real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

struct follow {
	int64_t worst;		/* ns outside the real clock read around */
	int64_t back;		/* the largest step back */
	long reads;
};

/* Read sh5_evlog_now() between two reads of CLOCK_REALTIME for dur ns;
 * the error counts only after settle ns; prev: the last value read
 * before (INT64_MIN: none). */
static void follow(int64_t dur, int64_t settle, int64_t prev,
		   struct follow *f)
{
	int64_t a, b, x, start = real_ns();

	f->worst = f->back = 0;
	f->reads = 0;
	do {
		a = real_ns();
		x = sh5_evlog_now();
		b = real_ns();
		if (prev != INT64_MIN && prev - x > f->back)
			f->back = prev - x;
		prev = x;
		f->reads++;
		if (a - start < settle)
			continue;
		if (a - x > f->worst)
			f->worst = a - x;
		if (x - b > f->worst)
			f->worst = x - b;
	} while (b - start < dur);
}

/* Has the clock a measured rate (TSC clocksource, 10 ms in)? */
static int tsc_running(void)
{
#ifdef HAVE_TSC
	return C.usable && C.rate != 0;
#else
	return 0;
#endif
}

/* Within 1 us of CLOCK_REALTIME read around it, and never back, over
 * 200 ms (the first 10 ms by clock_gettime). */
START_TEST(test_evclock_follows_realtime)
{
	struct follow f;

	evtest_start(NULL, NULL);
	follow(200000000, 0, INT64_MIN, &f);
	ck_assert_msg(f.worst <= 1000, "%ld reads: off by up to %lld ns",
		      f.reads, (long long)f.worst);
	ck_assert_msg(f.back == 0, "went back by %lld ns", (long long)f.back);
	sh5_evlog_close();
}
END_TEST

/* What is changed: 0 a rate 0.25 % fast (the old clock kept one such,
 * measured over a 1 ms base, against every later measurement), 1 a lead
 * of 15 us over the real clock (the old clock kept every lead under
 * 1 ms), 2 the real clock stepped back by 200 us (every pair taken so
 * far 200 us ahead of it). */
START_TEST(test_evclock_recovers)
{
	struct follow f;
	int64_t prev = INT64_MIN;

	evtest_start(NULL, NULL);
	follow(30000000, 0, INT64_MIN, &f);
	ck_assert_int_eq(f.back, 0);
	if (!tsc_running()) {	/* clock_gettime() itself: nothing to change */
		follow(100000000, 0, INT64_MIN, &f);
		ck_assert_int_le(f.worst, 1000);
		sh5_evlog_close();
		return;
	}
#ifdef HAVE_TSC
	{	/* just after an anchor, so that the change is handed out */
		uint64_t t0 = C.t0;

		while (C.t0 == t0)
			(void)sh5_evlog_now();
	}
	switch (_i) {
	case 0:
		C.rate += C.rate / 400;
		C.mult = C.rate;
		break;
	case 1:
		C.ns0 += 15000;
		break;
	default:
		C.ns0 += 200000;
		C.pns += 200000;
		C.bns[0] += 200000;
		C.bns[1] += 200000;
		break;
	}
	prev = sh5_evlog_now();
#endif
	follow(200000000, 20000000, prev, &f);
	ck_assert_msg(f.worst <= 1000, "case %d, %ld reads: off by up to %lld "
		      "ns 20 ms after the change", _i, f.reads,
		      (long long)f.worst);
	if (_i < 2)
		ck_assert_msg(f.back == 0, "case %d: went back by %lld ns", _i,
			      (long long)f.back);
	else	/* a step of the real clock is taken as is */
		ck_assert_msg(f.back > 150000 && f.back < 250000,
			      "stepped back by %lld ns, not ~200 us",
			      (long long)f.back);
	sh5_evlog_close();
}
END_TEST

static Suite *evclock_suite(void)
{
	Suite *s = suite_create("evclock");
	TCase *tc = tcase_create("evclock");

	tcase_add_checked_fixture(tc, evtest_setup, evtest_teardown);
	tcase_add_test(tc, test_evclock_follows_realtime);
	tcase_add_loop_test(tc, test_evclock_recovers, 0, 3);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(evclock_suite());
	int failed;

	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
