/* test_timesync.c - offset interpolation and the controlled logical clock
 * on small hand-made traces with answers worked out by hand (the
 * arithmetic is in the comments). */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sync/timesync.h"
#include "sync/trace.h"

/* ------------------------------------------------------------ helpers */

static struct sh5_trace *rd(const char *s)
{
	struct sh5_error err = { "" };
	struct sh5_trace *t = sh5_trace_read_mem(s, strlen(s), "mem", &err);

	ck_assert_msg(t != NULL, "%s", err.text);
	ck_assert_msg(t->nproblems == 0, "line %u: %s", t->problem[0].line,
		      t->problem[0].text);
	return t;
}

/* Time of the event on `line` in times[]. */
static int64_t at(const struct sh5_trace *t, const int64_t *times,
		  uint32_t line)
{
	size_t i;

	for (i = 0; i < t->nev; i++)
		if (sh5_trace_line(t, i) == line)
			return times[i];
	ck_abort_msg("no event on line %u", line);
	return 0;
}

/* Pre-synchronize, then run the CLC; returns the corrected times. */
static int64_t *run(struct sh5_trace *t, double gamma, double rate,
		    int64_t delta, int64_t mu_intra, int64_t mu_inter,
		    struct sh5_clc_result *res)
{
	struct sh5_clc_params p;
	struct sh5_error err = { "" };
	int64_t *times = malloc((t->nev + 1) * sizeof(*times));

	ck_assert_ptr_nonnull(times);
	sh5_timesync_offset(t, times);
	sh5_clc_params_init(&p);
	p.gamma = gamma;
	p.rate = rate;
	p.delta = delta;
	p.mu_intra = mu_intra;
	p.mu_inter = mu_inter;
	ck_assert_msg(sh5_timesync_clc(t, &p, times, res, &err) == 0, "%s",
		      err.text);
	return times;
}

static void no_violations(const struct sh5_trace *t, const int64_t *times,
			  int64_t mu_intra, int64_t mu_inter)
{
	uint64_t p2p = 1, coll = 1;

	ck_assert_int_eq(sh5_timesync_violations(t, times, mu_intra, mu_inter,
						 &p2p, &coll), 0);
	ck_assert_uint_eq(p2p, 0);
	ck_assert_uint_eq(coll, 0);
}

/* ------------------------------------------------- offset interpolation */

START_TEST(test_timesync_offset_none_and_one)
{
	struct sh5_offset_point one = { 1000, -250 };

	/* no measurement: the clock is the reference */
	ck_assert_int_eq(sh5_timesync_offset_map(NULL, 0, 12345), 12345);
	/* one measurement: a constant shift everywhere, not a no-op */
	ck_assert_int_eq(sh5_timesync_offset_map(&one, 1, 0), -250);
	ck_assert_int_eq(sh5_timesync_offset_map(&one, 1, 1000), 750);
	ck_assert_int_eq(sh5_timesync_offset_map(&one, 1, INT64_C(1) << 60),
			 (INT64_C(1) << 60) - 250);
}
END_TEST

START_TEST(test_timesync_offset_piecewise)
{
	/* offsets 0 at 1000, 100 at 2000, -100 at 3000 */
	struct sh5_offset_point p[3] = { { 1000, 0 }, { 2000, 100 },
					 { 3000, -100 } };

	/* inside: 1500 -> +50; 2500 -> 100 - 200 * 0.5 = 0 */
	ck_assert_int_eq(sh5_timesync_offset_map(p, 3, 1500), 1550);
	ck_assert_int_eq(sh5_timesync_offset_map(p, 3, 2500), 2500);
	/* at the points */
	ck_assert_int_eq(sh5_timesync_offset_map(p, 3, 1000), 1000);
	ck_assert_int_eq(sh5_timesync_offset_map(p, 3, 2000), 2100);
	ck_assert_int_eq(sh5_timesync_offset_map(p, 3, 3000), 2900);
	/* before the first: the first segment's slope 0.1: 0 -> -100 */
	ck_assert_int_eq(sh5_timesync_offset_map(p, 3, 0), -100);
	/* after the last: slope -0.2: 4000 -> -300 */
	ck_assert_int_eq(sh5_timesync_offset_map(p, 3, 4000), 3700);
}
END_TEST

START_TEST(test_timesync_offset_rounding)
{
	/* slope 1/2: 0.5 rounds away from zero on both sides */
	struct sh5_offset_point p[2] = { { 0, 0 }, { 2, 1 } };

	ck_assert_int_eq(sh5_timesync_offset_map(p, 2, 1), 2);	 /* 1 + 0.5 */
	ck_assert_int_eq(sh5_timesync_offset_map(p, 2, -1), -2); /* -1 - .5 */
	ck_assert_int_eq(sh5_timesync_offset_map(p, 2, 3), 5);	 /* 3 + 1.5 */
	/* slope 1/3: 1 -> 1.333 -> 1; 2 -> 2.667 -> 3 */
	p[1].local_ns = 3;
	ck_assert_int_eq(sh5_timesync_offset_map(p, 2, 1), 1);
	ck_assert_int_eq(sh5_timesync_offset_map(p, 2, 2), 3);
}
END_TEST

START_TEST(test_timesync_offset_large)
{
	/* Epoch-scale times with a 20 s offset drifting by 100 us over an
	 * hour: the products exceed 64 bits, the answer is still exact. */
	const int64_t T = INT64_C(1800000000000000000);
	const int64_t H = INT64_C(3600000000000);
	struct sh5_offset_point p[2] = { { T, INT64_C(20000000000) },
					 { T + H, INT64_C(20000100000) } };
	int64_t t = T + H / 3;	/* offset 20e9 + 100000/3 = +33333.33 */

	ck_assert_int_eq(sh5_timesync_offset_map(p, 2, t),
			 t + INT64_C(20000033333));
	/* extrapolated 100 hours later: +10 ms of drift */
	ck_assert_int_eq(sh5_timesync_offset_map(p, 2, T + 100 * H),
			 T + 100 * H + INT64_C(20010000000));
	/* huge offsets and distances saturate instead of wrapping */
	p[1].offset_ns = INT64_MAX / 2;
	ck_assert_int_eq(sh5_timesync_offset_map(p, 2, INT64_MAX - 10),
			 INT64_MAX);
}
END_TEST

START_TEST(test_timesync_offset_duplicates)
{
	/* two measurements at 1000: the last one holds from there on */
	struct sh5_offset_point p[3] = { { 1000, 10 }, { 1000, 20 },
					 { 2000, 30 } };
	struct sh5_offset_point same[2] = { { 5, 1 }, { 5, 7 } };

	ck_assert_int_eq(sh5_timesync_offset_map(p, 3, 1000), 1020);
	ck_assert_int_eq(sh5_timesync_offset_map(p, 3, 1500), 1525);
	ck_assert_int_eq(sh5_timesync_offset_map(p, 3, 0), 10);  /* 0 + 20 - 10 */
	/* all at one time: a constant shift by the last */
	ck_assert_int_eq(sh5_timesync_offset_map(same, 2, 100), 107);
}
END_TEST

START_TEST(test_timesync_offset_array)
{
	struct sh5_offset_point p[4] = { { 0, 0 }, { 1000, 50 },
					 { 3000, -50 }, { 4000, 0 } };
	int64_t in[9] = { -500, 0, 1, 999, 1000, 2500, 3999, 4000, 9000 };
	int64_t rev[9], out[9], out2[9];
	struct sh5_error err;
	int i;

	sh5_timesync_offset_map_array(p, 4, in, out, 9);
	for (i = 0; i < 9; i++) {
		ck_assert_int_eq(out[i], sh5_timesync_offset_map(p, 4, in[i]));
		rev[i] = in[8 - i];
	}
	/* unsorted input takes the slow path, same answers */
	sh5_timesync_offset_map_array(p, 4, rev, out2, 9);
	for (i = 0; i < 9; i++)
		ck_assert_int_eq(out2[i], out[8 - i]);
	/* in place */
	sh5_timesync_offset_map_array(p, 4, in, in, 9);
	ck_assert_int_eq(memcmp(in, out, sizeof(in)), 0);
	ck_assert_int_eq(sh5_timesync_offset_check(p, 4, &err), 0);
	p[2].local_ns = 500;
	ck_assert_int_eq(sh5_timesync_offset_check(p, 4, &err), -1);
	ck_assert_int_eq(errno, EINVAL);
}
END_TEST

/* The trace's OFFSET lines drive the pre-synchronization. */
START_TEST(test_timesync_offset_trace)
{
	struct sh5_trace *t = rd("#sh5-trace 1\n"
				 "0,100,INT,,,,,\n"		/* 2 */
				 "0,1000,OFFSET,10,5,,,\n"
				 "0,1500,INT,,,,,\n"		/* 4 */
				 "0,2000,OFFSET,20,5,,,\n"
				 "1,7,INT,,,,,\n");		/* 6 */
	int64_t times[3];

	sh5_timesync_offset(t, times);
	ck_assert_int_eq(at(t, times, 2), 101);		/* 10 - 0.9*10 */
	ck_assert_int_eq(at(t, times, 4), 1515);
	ck_assert_int_eq(at(t, times, 6), 7);
	sh5_trace_destroy(t);
}
END_TEST

/* ------------------------------------------------ forward amortization */

/* Equations (3) and (4) without backward amortization (rate 0). */
START_TEST(test_timesync_clc_forward)
{
	struct sh5_trace *t = rd("#sh5-trace 1\n"
				 "0,1000,SEND,1,0,0,,8\n"	/* 2 */
				 "1,900,RECV,0,0,0,,8\n"	/* 3 */
				 "1,1000,INT,,,,,\n"		/* 4 */
				 "1,5000,INT,,,,,\n"		/* 5 */
				 "1,100000,INT,,,,,\n");	/* 6 */
	struct sh5_clc_result res;
	int64_t *lc = run(t, 0.99, 0, -1, 0, 100, &res);

	/* (3): recv = max(send + mu, C) = max(1100, 900) */
	ck_assert_int_eq(at(t, lc, 3), 1100);
	/* (4): max(C, LC' + delta, LC' + gamma * dC) = 1100 + 99 */
	ck_assert_int_eq(at(t, lc, 4), 1199);
	ck_assert_int_eq(at(t, lc, 5), 1199 + 3960);
	/* caught up: C wins again */
	ck_assert_int_eq(at(t, lc, 6), 100000);
	ck_assert_int_eq(at(t, lc, 2), 1000);
	ck_assert_uint_eq(res.jumps, 1);
	ck_assert_int_eq(res.max_jump, 200);
	no_violations(t, lc, 0, 100);
	/* the same with caller-provided working memory */
	{
		struct sh5_clc_params p;
		struct sh5_error err;
		int64_t w[5], tm[5];

		sh5_clc_params_init(&p);
		p.rate = 0;
		p.mu_inter = 100;
		p.work = w;
		sh5_timesync_offset(t, tm);
		ck_assert_int_eq(sh5_timesync_clc(t, &p, tm, NULL, &err), 0);
		ck_assert_int_eq(memcmp(tm, lc, sizeof(tm)), 0);
	}
	free(lc);
	/* gamma 0.5: the clock after the jump runs at half speed */
	lc = run(t, 0.5, 0, -1, 0, 100, &res);
	ck_assert_int_eq(at(t, lc, 4), 1150);
	ck_assert_int_eq(at(t, lc, 5), 5000);
	free(lc);
	sh5_trace_destroy(t);
}
END_TEST

/* delta: the minimum spacing, when gamma lets the clock nearly stop. */
START_TEST(test_timesync_clc_delta)
{
	struct sh5_trace *t = rd("#sh5-trace 1\n"
				 "0,1000,SEND,1,0,0,,8\n"	/* 2 */
				 "1,900,RECV,0,0,0,,8\n"	/* 3 */
				 "1,910,INT,,,,,\n"		/* 4 */
				 "1,920,INT,,,,,\n");		/* 5 */
	int64_t *lc = run(t, 0.01, 0, 7, 0, 100, NULL);

	ck_assert_int_eq(at(t, lc, 3), 1100);
	ck_assert_int_eq(at(t, lc, 4), 1107);	/* 1100 + max(7, 0.1) */
	ck_assert_int_eq(at(t, lc, 5), 1114);
	free(lc);
	sh5_trace_destroy(t);
}
END_TEST

/* A trace without violations is left exactly as pre-synchronized, even
 * with equal local times (automatic delta = 0 there). */
START_TEST(test_timesync_clc_noop)
{
	struct sh5_trace *t = rd("#sh5-trace 1\n"
				 "0,1000,SEND,1,0,0,,8\n"
				 "0,1000,INT,,,,,\n"
				 "1,2000,RECV,0,0,0,,8\n"
				 "1,2000,INT,,,,,\n"
				 "1,2001,INT,,,,,\n");
	struct sh5_clc_result res;
	int64_t *lc = run(t, 0.99, 0.01, -1, 0, 1000, &res);

	ck_assert_int_eq(lc[0], 1000);
	ck_assert_int_eq(lc[1], 1000);
	ck_assert_int_eq(lc[2], 2000);
	ck_assert_int_eq(lc[3], 2000);
	ck_assert_int_eq(lc[4], 2001);
	ck_assert_uint_eq(res.jumps, 0);
	ck_assert_uint_eq(res.amortized, 0);
	free(lc);
	sh5_trace_destroy(t);
}
END_TEST

/* ------------------------------------------------ backward amortization */

START_TEST(test_timesync_clc_backward_ramp)
{
	struct sh5_trace *t = rd("#sh5-trace 1\n"
				 "1,0,INT,,,,,\n"		/* 2 */
				 "1,500,INT,,,,,\n"		/* 3 */
				 "1,1000,RECV,0,0,0,,8\n"	/* 4 */
				 "0,1100,SEND,1,0,0,,8\n");	/* 5 */
	struct sh5_clc_result res;
	/* jump at the RECV: 1200 - max(1000, 500 + 495) = 200.
	 * rate 0.1: LA = 2000, ramp from (-800, 0) to (1200, 200). */
	int64_t *lc = run(t, 0.99, 0.1, -1, 0, 100, &res);

	ck_assert_int_eq(at(t, lc, 4), 1200);
	ck_assert_int_eq(at(t, lc, 3), 630);	/* 500 + 200*1300/2000 */
	ck_assert_int_eq(at(t, lc, 2), 80);	/* 0 + 200*800/2000 */
	ck_assert_uint_eq(res.amortized, 2);
	free(lc);
	/* rate 0.01: LA = 20000, t0 = -18800 */
	lc = run(t, 0.99, 0.01, -1, 0, 100, &res);
	ck_assert_int_eq(at(t, lc, 3), 693);	/* + 200*19300/20000 */
	ck_assert_int_eq(at(t, lc, 2), 188);	/* + 200*18800/20000 */
	free(lc);
	sh5_trace_destroy(t);
}
END_TEST

/* A send in the amortization interval limits the ramp: it must stay at
 * least mu before its receive; the ramp becomes the lower convex hull. */
START_TEST(test_timesync_clc_backward_bounded)
{
	struct sh5_trace *t = rd("#sh5-trace 1\n"
				 "1,0,INT,,,,,\n"		/* 2 */
				 "1,400,SEND,2,0,0,,8\n"	/* 3 */
				 "2,450,RECV,1,0,0,,8\n"	/* 4 */
				 "1,1000,RECV,0,0,0,,8\n"	/* 5 */
				 "0,1100,SEND,1,0,0,,8\n");	/* 6 */
	/* mu 10: the SEND at 400 may move 450 - 10 - 400 = 40; the
	 * ideal ramp (-800,0)-(1200,200) would give it 120.  Hull:
	 * (-800,0) (400,40) (1200,200): INT 0 -> 40*800/1200 = 26.7 */
	int64_t *lc = run(t, 0.99, 0.1, -1, 0, 10, NULL);

	ck_assert_int_eq(at(t, lc, 5), 1110);	/* jump 110 this time */
	free(lc);
	sh5_trace_destroy(t);
	t = rd("#sh5-trace 1\n"
	       "1,0,INT,,,,,\n"			/* 2 */
	       "1,400,SEND,2,0,0,,8\n"		/* 3 */
	       "2,450,RECV,1,0,0,,8\n"		/* 4 */
	       "1,1000,RECV,0,0,0,,8\n"		/* 5 */
	       "0,1190,SEND,1,0,0,,8\n");	/* 6 */
	/* RECV: 1200 (jump 200) as in the ramp test */
	lc = run(t, 0.99, 0.1, -1, 0, 10, NULL);
	ck_assert_int_eq(at(t, lc, 5), 1200);
	ck_assert_int_eq(at(t, lc, 3), 440);	/* bound reached exactly */
	ck_assert_int_eq(at(t, lc, 2), 26);	/* floor(26.67) */
	ck_assert_int_eq(at(t, lc, 4), 450);
	no_violations(t, lc, 10, 10);
	free(lc);
	sh5_trace_destroy(t);
}
END_TEST

/* ---------------------------------------------------------- collectives */

/* N-to-N: every end >= every begin + mu (own begin: intra mu). */
START_TEST(test_timesync_clc_nton)
{
	struct sh5_trace *t = rd("#sh5-trace 1\n"
				 "0,100,CBEGIN,ALLREDUCE,,0,,8\n"  /* 2 */
				 "1,200,CBEGIN,ALLREDUCE,,0,,8\n"  /* 3 */
				 "2,300,CBEGIN,ALLREDUCE,,0,,8\n"  /* 4 */
				 "0,350,CEND,ALLREDUCE,,0,,8\n"	   /* 5 */
				 "1,250,CEND,ALLREDUCE,,0,,8\n"	   /* 6 */
				 "2,500,CEND,ALLREDUCE,,0,,8\n");  /* 7 */
	int64_t *lc = run(t, 0.99, 0, -1, 0, 100, NULL);
	uint64_t p2p, coll;

	ck_assert_int_eq(at(t, lc, 5), 400);	/* 300 + 100 */
	ck_assert_int_eq(at(t, lc, 6), 400);
	ck_assert_int_eq(at(t, lc, 7), 500);	/* own begin: 300 + 0 */
	no_violations(t, lc, 0, 100);
	/* before: ends 0 and 1 violate */
	ck_assert_int_eq(sh5_timesync_violations(t, t->time, 0, 100, &p2p,
						 &coll), 0);
	ck_assert_uint_eq(coll, 2);
	ck_assert_uint_eq(p2p, 0);
	free(lc);
	sh5_trace_destroy(t);
}
END_TEST

/* Intra- and inter-node mu: locations 0 and 1 share a node. */
START_TEST(test_timesync_clc_nton_nodes)
{
	struct sh5_trace *t = rd("#sh5-trace 1\n"
				 "#node n 0 1\n"
				 "0,100,CBEGIN,BARRIER,,0,,0\n"	/* 3 */
				 "1,200,CBEGIN,BARRIER,,0,,0\n"	/* 4 */
				 "2,50,CBEGIN,BARRIER,,0,,0\n"	/* 5 */
				 "0,110,CEND,BARRIER,,0,,0\n"	/* 6 */
				 "1,201,CEND,BARRIER,,0,,0\n"	/* 7 */
				 "2,60,CEND,BARRIER,,0,,0\n");	/* 8 */
	int64_t *lc = run(t, 0.99, 0, -1, 10, 100, NULL);

	/* 0: max(200 + 10 intra, 50 + 100 inter) = 210 */
	ck_assert_int_eq(at(t, lc, 6), 210);
	ck_assert_int_eq(at(t, lc, 7), 210);
	/* 2: max(50 + 10, 200 + 100) = 300 */
	ck_assert_int_eq(at(t, lc, 8), 300);
	no_violations(t, lc, 10, 100);
	free(lc);
	sh5_trace_destroy(t);
}
END_TEST

/* 1-to-N: non-root ends after the root's begin; the root's end free. */
START_TEST(test_timesync_clc_1ton)
{
	struct sh5_trace *t = rd("#sh5-trace 1\n"
				 "0,100,CBEGIN,BCAST,,0,1,8\n"	/* 2 */
				 "1,200,CBEGIN,BCAST,,0,1,8\n"	/* 3 */
				 "2,300,CBEGIN,BCAST,,0,1,8\n"	/* 4 */
				 "0,150,CEND,BCAST,,0,1,8\n"	/* 5 */
				 "1,250,CEND,BCAST,,0,1,8\n"	/* 6 */
				 "2,310,CEND,BCAST,,0,1,8\n");	/* 7 */
	int64_t *lc = run(t, 0.99, 0, -1, 0, 100, NULL);

	ck_assert_int_eq(at(t, lc, 5), 300);	/* 200 + 100 */
	ck_assert_int_eq(at(t, lc, 6), 250);	/* root: unconstrained */
	ck_assert_int_eq(at(t, lc, 7), 310);
	no_violations(t, lc, 0, 100);
	free(lc);
	sh5_trace_destroy(t);
}
END_TEST

/* N-to-1: the root's end after every begin; the others free. */
START_TEST(test_timesync_clc_nto1)
{
	struct sh5_trace *t = rd("#sh5-trace 1\n"
				 "0,100,CBEGIN,REDUCE,,0,0,8\n"	/* 2 */
				 "1,200,CBEGIN,REDUCE,,0,0,8\n"	/* 3 */
				 "2,300,CBEGIN,REDUCE,,0,0,8\n"	/* 4 */
				 "0,150,CEND,REDUCE,,0,0,8\n"	/* 5 */
				 "1,210,CEND,REDUCE,,0,0,8\n"	/* 6 */
				 "2,310,CEND,REDUCE,,0,0,8\n");	/* 7 */
	int64_t *lc = run(t, 0.99, 0, -1, 0, 100, NULL);

	ck_assert_int_eq(at(t, lc, 5), 400);	/* 300 + 100 */
	ck_assert_int_eq(at(t, lc, 6), 210);
	ck_assert_int_eq(at(t, lc, 7), 310);
	no_violations(t, lc, 0, 100);
	free(lc);
	sh5_trace_destroy(t);
}
END_TEST

/* SCAN: end_i after begin_j for j <= i (rank order = #comm order). */
START_TEST(test_timesync_clc_scan)
{
	struct sh5_trace *t = rd("#sh5-trace 1\n"
				 "#comm 3 2 0 1\n"		/* ranks: 2,0,1 */
				 "2,100,CBEGIN,SCAN,,3,,8\n"	/* 3: rank 0 */
				 "0,300,CBEGIN,SCAN,,3,,8\n"	/* 4: rank 1 */
				 "1,200,CBEGIN,SCAN,,3,,8\n"	/* 5: rank 2 */
				 "2,150,CEND,SCAN,,3,,8\n"	/* 6 */
				 "0,320,CEND,SCAN,,3,,8\n"	/* 7 */
				 "1,250,CEND,SCAN,,3,,8\n");	/* 8 */
	int64_t *lc = run(t, 0.99, 0, -1, 0, 100, NULL);

	ck_assert_int_eq(at(t, lc, 6), 150);	/* >= 100 + 0 */
	ck_assert_int_eq(at(t, lc, 7), 320);	/* >= max(200, 300) */
	ck_assert_int_eq(at(t, lc, 8), 400);	/* >= max(200,400,200) */
	no_violations(t, lc, 0, 100);
	free(lc);
	sh5_trace_destroy(t);
}
END_TEST

/* SCAN across nodes: each pair takes the mu of its link class. */
START_TEST(test_timesync_clc_scan_nodes)
{
	struct sh5_trace *t = rd("#sh5-trace 1\n"
				 "#node a 0 1\n"
				 "#comm 3 0 2 1\n"		/* ranks: 0,2,1 */
				 "0,100,CBEGIN,SCAN,,3,,8\n"	/* 4: rank 0 */
				 "2,150,CBEGIN,SCAN,,3,,8\n"	/* 5: rank 1 */
				 "1,300,CBEGIN,SCAN,,3,,8\n"	/* 6: rank 2 */
				 "0,105,CEND,SCAN,,3,,8\n"	/* 7 */
				 "2,160,CEND,SCAN,,3,,8\n"	/* 8 */
				 "1,305,CEND,SCAN,,3,,8\n");	/* 9 */
	uint64_t p2p, coll;
	int64_t *lc;

	/* before: all three ends violate */
	ck_assert_int_eq(sh5_timesync_violations(t, t->time, 10, 100, &p2p,
						 &coll), 0);
	ck_assert_uint_eq(coll, 3);
	lc = run(t, 0.99, 0, -1, 10, 100, NULL);
	ck_assert_int_eq(at(t, lc, 7), 110);	/* own begin + 10 */
	ck_assert_int_eq(at(t, lc, 8), 200);	/* loc 0, other node */
	ck_assert_int_eq(at(t, lc, 9), 310);	/* max(110, 250, 310) */
	no_violations(t, lc, 10, 100);
	free(lc);
	sh5_trace_destroy(t);
}
END_TEST

/* SCAN bounds from the prefix's largest begins: the largest elsewhere
 * plus mu_inter can exceed the largest on the end's node plus mu_intra;
 * with mu_intra > mu_inter every begin counts (the loop). */
START_TEST(test_timesync_clc_scan_top2)
{
	static const char in[] = "#sh5-trace 1\n"
				 "#node a 0 1\n"
				 "#comm 3 0 2 1\n"	/* ranks: 0,2,1 */
				 "0,100,CBEGIN,SCAN,,3,,8\n"	/* 4: rank 0 */
				 "2,250,CBEGIN,SCAN,,3,,8\n"	/* 5: rank 1 */
				 "1,300,CBEGIN,SCAN,,3,,8\n"	/* 6: rank 2 */
				 "0,105,CEND,SCAN,,3,,8\n"	/* 7 */
				 "2,260,CEND,SCAN,,3,,8\n"	/* 8 */
				 "1,305,CEND,SCAN,,3,,8\n";	/* 9 */
	struct sh5_trace *t = rd(in);
	int64_t *lc = run(t, 0.99, 0, -1, 10, 100, NULL);

	ck_assert_int_eq(at(t, lc, 8), 260);	/* max(200, 260) */
	ck_assert_int_eq(at(t, lc, 9), 350);	/* max(110, 350, 310) */
	no_violations(t, lc, 10, 100);
	free(lc);
	sh5_trace_destroy(t);
	t = rd(in);
	lc = run(t, 0.99, 0, -1, 100, 10, NULL);
	ck_assert_int_eq(at(t, lc, 8), 350);	/* max(110, 250 + 100) */
	ck_assert_int_eq(at(t, lc, 9), 400);	/* max(200, 260, 400) */
	no_violations(t, lc, 100, 10);
	free(lc);
	sh5_trace_destroy(t);
}
END_TEST

/* Backward amortization with distances whose products need 128 bits
 * (the hull's 64-bit path cannot take them): the same shift as the
 * exact formula, floor(D * (te - t0) / LA) with LA capped at 4e18. */
START_TEST(test_timesync_clc_backward_big)
{
	struct sh5_trace *t = rd("#sh5-trace 1\n"
				 "1,0,INT,,,,,\n"			/* 2 */
				 "1,1000000000000000000,INT,,,,,\n"	/* 3 */
				 "0,4000000000000000000,SEND,1,0,0,,8\n"
				 "1,2000000000000000000,RECV,0,0,0,,8\n");
	int64_t *lc = run(t, 0.99, 0.01, -1, 100, 100, NULL);

	ck_assert_int_eq(at(t, lc, 2), 0);
	ck_assert_int_eq(at(t, lc, 3), INT64_C(1499999999999999974));
	ck_assert_int_eq(at(t, lc, 5), INT64_C(4000000000000000100));
	no_violations(t, lc, 100, 100);
	free(lc);
	sh5_trace_destroy(t);
}
END_TEST

/* EXSCAN: end_i after begin_j for j < i; rank 0 unconstrained. */
START_TEST(test_timesync_clc_exscan)
{
	struct sh5_trace *t = rd("#sh5-trace 1\n"
				 "#comm 3 2 0 1\n"
				 "2,100,CBEGIN,EXSCAN,,3,,8\n"	/* 3: rank 0 */
				 "0,300,CBEGIN,EXSCAN,,3,,8\n"	/* 4: rank 1 */
				 "1,200,CBEGIN,EXSCAN,,3,,8\n"	/* 5: rank 2 */
				 "2,101,CEND,EXSCAN,,3,,8\n"	/* 6 */
				 "0,301,CEND,EXSCAN,,3,,8\n"	/* 7 */
				 "1,250,CEND,EXSCAN,,3,,8\n");	/* 8 */
	int64_t *lc = run(t, 0.99, 0, -1, 0, 100, NULL);

	ck_assert_int_eq(at(t, lc, 6), 101);	/* rank 0: free */
	ck_assert_int_eq(at(t, lc, 7), 301);	/* >= 100 + 100 */
	ck_assert_int_eq(at(t, lc, 8), 400);	/* >= 300 + 100 */
	no_violations(t, lc, 0, 100);
	free(lc);
	sh5_trace_destroy(t);
}
END_TEST

/* Backward amortization bounded by collective begins: a begin may not
 * move past (the earliest dependent end) - mu. */
START_TEST(test_timesync_clc_backward_collective)
{
	struct sh5_trace *t = rd("#sh5-trace 1\n"
				 "#comm 5 1 2\n"
				 "1,0,CBEGIN,BARRIER,,5,,0\n"	/* 3 */
				 "2,10,CBEGIN,BARRIER,,5,,0\n"	/* 4 */
				 "1,120,CEND,BARRIER,,5,,0\n"	/* 5 */
				 "2,110,CEND,BARRIER,,5,,0\n"	/* 6 */
				 "1,1000,RECV,0,0,0,,8\n"	/* 7 */
				 "0,1100,SEND,1,0,0,,8\n");	/* 8 */
	/* loc 1 jumps 200 at its RECV; ramp (-800,0)-(1200,200).  The
	 * CBEGIN at 0 may move 110 - 100 - 0 = 10 (loc 2's end), not 80:
	 * hull (-800,0) (0,10) (1200,200); its CEND at 120 gets
	 * 10 + 190*120/1200 = 29. */
	int64_t *lc = run(t, 0.99, 0.1, -1, 0, 100, NULL);

	ck_assert_int_eq(at(t, lc, 6), 110);
	ck_assert_int_eq(at(t, lc, 3), 10);
	ck_assert_int_eq(at(t, lc, 5), 149);
	ck_assert_int_eq(at(t, lc, 7), 1200);
	no_violations(t, lc, 0, 100);
	free(lc);
	sh5_trace_destroy(t);
}
END_TEST

/* ----------------------------------------------------------- latencies */

START_TEST(test_timesync_mu_estimate)
{
	/* 0 is the reference; 1 runs 4000 ahead on another node; 2 shares
	 * node with 0.  True latencies: 1000 between nodes, 300 inside.
	 * Round trip 0->1->0: (2500 - 0) - (5500 - 5000) = 2000 -> 1000 */
	struct sh5_trace *t = rd("#sh5-trace 1\n"
				 "#node a 0 2\n"
				 "0,0,SEND,1,0,0,,8\n"
				 "1,5000,RECV,0,0,0,,8\n"
				 "1,5500,SEND,0,0,0,,8\n"
				 "0,2500,RECV,1,0,0,,8\n"
				 "0,3000,SEND,2,0,0,,8\n"
				 "2,3300,RECV,0,0,0,,8\n");
	int64_t times[6], a, e;
	enum sh5_mu_source sa, se;
	struct sh5_error err;

	sh5_timesync_offset(t, times);
	ck_assert_int_eq(sh5_timesync_mu_estimate(t, times, &a, &sa, &e, &se,
						  &err), 0);
	ck_assert_int_eq(a, 300);
	ck_assert_int_eq(sa, SH5_MU_ESTIMATED);
	ck_assert_int_eq(e, 1000);
	ck_assert_int_eq(se, SH5_MU_ESTIMATED);
	sh5_trace_destroy(t);
	/* no messages at all */
	t = rd("#sh5-trace 1\n0,1,INT,,,,,\n");
	ck_assert_int_eq(sh5_timesync_mu_estimate(t, times, &a, &sa, &e, &se,
						  &err), 0);
	ck_assert_int_eq(sa, SH5_MU_NODATA);
	ck_assert_int_eq(se, SH5_MU_NODATA);
	ck_assert_int_eq(a + e, 0);
	sh5_trace_destroy(t);
}
END_TEST

/* ---------------------------------------------------- cycles, partial */

START_TEST(test_timesync_clc_cycle)
{
	static const char in[] = "#sh5-trace 1\n"
				 "0,10,RECV,1,0,0,,8\n"
				 "0,20,SEND,1,1,0,,8\n"
				 "1,10,RECV,0,1,0,,8\n"
				 "1,20,SEND,0,0,0,,8\n";
	struct sh5_trace *t = rd(in);
	struct sh5_clc_params p;
	struct sh5_clc_result res;
	struct sh5_error err = { "" };
	int64_t times[4];

	sh5_clc_params_init(&p);
	sh5_timesync_offset(t, times);
	ck_assert_int_eq(sh5_timesync_clc(t, &p, times, &res, &err), -1);
	ck_assert_int_eq(errno, EDEADLK);
	ck_assert_ptr_nonnull(strstr(err.text, "line 2"));
	ck_assert_uint_eq(t->nproblems, 1);
	ck_assert_ptr_nonnull(strstr(t->problem[0].text, "cyclic"));
	sh5_trace_destroy(t);

	t = rd(in);
	p.allow_partial = 1;
	sh5_timesync_offset(t, times);
	ck_assert_int_eq(sh5_timesync_clc(t, &p, times, &res, &err), 0);
	ck_assert_uint_eq(res.released, 1);
	/* the remaining message is satisfied: 1,10 RECV after 0,20 SEND */
	ck_assert_int_ge(times[2], times[1]);
	ck_assert_int_ge(times[3], times[2]);
	sh5_trace_destroy(t);
}
END_TEST

/* ---------------------------------------------------------------- stats */

START_TEST(test_timesync_stage_stats)
{
	struct sh5_trace *t = rd("#sh5-trace 1\n"
				 "0,0,INT,,,,,\n0,100000,INT,,,,,\n"
				 "0,200000,INT,,,,,\n0,300000,INT,,,,,\n"
				 "0,400000,INT,,,,,\n0,500000,INT,,,,,\n"
				 "0,600000,INT,,,,,\n0,700000,INT,,,,,\n");
	/* intervals 100000, 100005, 100050, 100500, 105000, 150000,
	 * 300000: one in each bucket */
	int64_t cur[8] = { 0, 100000, 200005, 300055, 400555, 505555,
			   655555, 955555 };
	struct sh5_sync_stage st;
	int b;

	ck_assert_int_eq(sh5_timesync_stage_stats(t, cur, t->time, 0, 0, &st),
			 0);
	ck_assert_uint_eq(st.nintervals, 7);
	for (b = 0; b < SH5_SYNC_NBUCKET; b++)
		ck_assert_msg(st.bucket[b] == 1, "bucket %d: %llu", b,
			      (unsigned long long)st.bucket[b]);
	ck_assert_uint_eq(st.moved, 6);
	ck_assert_int_eq(st.max_corr, 255555);
	ck_assert_uint_eq(st.viol_p2p + st.viol_coll, 0);
	sh5_trace_destroy(t);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("timesync");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int nf;

	tcase_add_test(tc, test_timesync_offset_none_and_one);
	tcase_add_test(tc, test_timesync_offset_piecewise);
	tcase_add_test(tc, test_timesync_offset_rounding);
	tcase_add_test(tc, test_timesync_offset_large);
	tcase_add_test(tc, test_timesync_offset_duplicates);
	tcase_add_test(tc, test_timesync_offset_array);
	tcase_add_test(tc, test_timesync_offset_trace);
	tcase_add_test(tc, test_timesync_clc_forward);
	tcase_add_test(tc, test_timesync_clc_delta);
	tcase_add_test(tc, test_timesync_clc_noop);
	tcase_add_test(tc, test_timesync_clc_backward_ramp);
	tcase_add_test(tc, test_timesync_clc_backward_bounded);
	tcase_add_test(tc, test_timesync_clc_nton);
	tcase_add_test(tc, test_timesync_clc_nton_nodes);
	tcase_add_test(tc, test_timesync_clc_1ton);
	tcase_add_test(tc, test_timesync_clc_nto1);
	tcase_add_test(tc, test_timesync_clc_scan);
	tcase_add_test(tc, test_timesync_clc_scan_nodes);
	tcase_add_test(tc, test_timesync_clc_scan_top2);
	tcase_add_test(tc, test_timesync_clc_backward_big);
	tcase_add_test(tc, test_timesync_clc_exscan);
	tcase_add_test(tc, test_timesync_clc_backward_collective);
	tcase_add_test(tc, test_timesync_mu_estimate);
	tcase_add_test(tc, test_timesync_clc_cycle);
	tcase_add_test(tc, test_timesync_stage_stats);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
