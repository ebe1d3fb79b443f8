/* test_clc_inline.c - the CLC's backward amortization inside the forward
 * pass (clc.c: a jump is amortized 1024 events after it in file order,
 * once every event its hull reads is done): the same answers as
 * test_timesync.c's bounded ramp when the receiver the hull needs comes
 * thousands of events later in the file, before or after the end. */
#include "config.h"

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sync/timesync.h"
#include "sync/trace.h"

/*
 * test_timesync_clc_backward_bounded's second trace with `gap` INT lines
 * of location 3 between the jump (the RECV at location 1) and the receive
 * at location 2 of the SEND in the jump's interval, and `tail` more
 * after it.  Lines: 2 INT, 3 SEND, 4 SEND (to the jump), 5 RECV (the
 * jump), 6 .. 5+gap fillers, 6+gap the RECV at location 2.
 */
static char *bounded_far(size_t gap, size_t tail)
{
	size_t cap = (gap + tail) * 32 + 512, n, i;
	char *s = malloc(cap);

	ck_assert_ptr_nonnull(s);
	n = (size_t)snprintf(s, cap, "#sh5-trace 1\n"
			     "1,0,INT,,,,,\n"
			     "1,400,SEND,2,0,0,,8\n"
			     "0,1190,SEND,1,0,0,,8\n"
			     "1,1000,RECV,0,0,0,,8\n");
	for (i = 0; i < gap; i++)
		n += (size_t)snprintf(s + n, cap - n, "3,%zu,INT,,,,,\n", i);
	n += (size_t)snprintf(s + n, cap - n, "2,450,RECV,1,0,0,,8\n");
	for (i = 0; i < tail; i++)
		n += (size_t)snprintf(s + n, cap - n, "3,%zu,INT,,,,,\n",
				      gap + i);
	ck_assert_uint_lt(n, cap);
	return s;
}

/* The bounded ramp's answers on bounded_far(gap, tail). */
static void check_bounded_far(size_t gap, size_t tail)
{
	struct sh5_error err = { "" };
	char *s = bounded_far(gap, tail);
	struct sh5_trace *t = sh5_trace_read_mem(s, strlen(s), "mem", &err);
	struct sh5_clc_params p;
	struct sh5_clc_result res;
	int64_t *tm;

	ck_assert_msg(t != NULL, "%s", err.text);
	ck_assert_uint_eq(t->nproblems, 0);
	ck_assert_uint_eq(t->nev, 5 + gap + tail);
	tm = malloc(t->nev * sizeof(*tm));
	ck_assert_ptr_nonnull(tm);
	sh5_timesync_offset(t, tm);
	sh5_clc_params_init(&p);
	p.gamma = 0.99;
	p.rate = 0.1;
	p.mu_intra = 0;
	p.mu_inter = 10;
	ck_assert_msg(sh5_timesync_clc(t, &p, tm, &res, &err) == 0, "%s",
		      err.text);
	ck_assert_uint_eq(res.jumps, 1);
	ck_assert_int_eq(tm[3], 1200);	/* the jump: 1190 + 10 */
	ck_assert_int_eq(tm[1], 440);	/* the SEND: its bound exactly */
	ck_assert_int_eq(tm[0], 26);	/* hull (-800,0) (400,40): 26.67 */
	ck_assert_int_eq(tm[4 + gap], 450);	/* the receive */
	ck_assert_uint_eq(res.amortized, 2);
	free(tm);
	sh5_trace_destroy(t);
	free(s);
}

/* Receiver close by: the amortization runs at its first try. */
START_TEST(test_clc_inline_near)
{
	check_bounded_far(0, 3000);
	check_bounded_far(500, 3000);
}
END_TEST

/* Receiver 2000 events after the jump: the first tries find it not done,
 * a later one in the loop runs it. */
START_TEST(test_clc_inline_deferred)
{
	check_bounded_far(2000, 1000);
	check_bounded_far(5000, 200);
}
END_TEST

/* Receiver the last event: the amortization runs after the loop. */
START_TEST(test_clc_inline_at_end)
{
	check_bounded_far(2000, 0);
	check_bounded_far(10, 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("clc_inline");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int nf;

	tcase_add_test(tc, test_clc_inline_near);
	tcase_add_test(tc, test_clc_inline_deferred);
	tcase_add_test(tc, test_clc_inline_at_end);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
