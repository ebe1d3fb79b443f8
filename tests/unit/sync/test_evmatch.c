/* test_evmatch.c - message matching (sync/evmatch.h): messages from
 * SEND/RECV records, pairing in order per (src, dst, comm, tag) whatever
 * the input order, unmatched counts, the callback stopping the walk. */
#include "config.h"

#include <check.h>
#include <stdint.h>
#include <string.h>

#include "sync/evmatch.h"

struct m {
	struct sh5_evmsg k;
	int id;			/* which message, to check the pairs */
};

struct pairs {
	int n;
	int s[16], r[16];
	int stop_at;		/* -1: never */
};

static int on_pair(void *arg, void *send, void *recv)
{
	struct pairs *p = arg;
	const struct m *s = send, *r = recv;

	if (p->n == p->stop_at)
		return -1;
	p->s[p->n] = s->id;
	p->r[p->n] = r->id;
	p->n++;
	return 0;
}

static struct m msg(uint32_t src, uint32_t dst, uint64_t comm, int32_t tag,
		    size_t seq, int id)
{
	struct m x;

	memset(&x, 0, sizeof(x));
	x.k.src = src;
	x.k.dst = dst;
	x.k.comm = comm;
	x.k.tag = tag;
	x.k.seq = seq;
	x.id = id;
	return x;
}

START_TEST(test_evmatch_order)
{
	/* key (0,1,0,5): sends 10, 11 (seq 3, 7), recvs 20, 21 (seq 2, 9);
	 * key (0,1,0,6): send 12 alone; key (2,1,0,5): recv 22 alone. */
	struct m s[3], r[3];
	struct pairs p = { .stop_at = -1 };
	uint64_t us = 0, ur = 0;

	s[0] = msg(0, 1, 0, 5, 7, 11);
	s[1] = msg(0, 1, 0, 6, 1, 12);
	s[2] = msg(0, 1, 0, 5, 3, 10);
	r[0] = msg(2, 1, 0, 5, 0, 22);
	r[1] = msg(0, 1, 0, 5, 9, 21);
	r[2] = msg(0, 1, 0, 5, 2, 20);
	ck_assert_int_eq(sh5_evmatch(s, 3, r, 3, sizeof(struct m), on_pair,
				     &p, &us, &ur), 0);
	ck_assert_int_eq(p.n, 2);
	ck_assert_int_eq(p.s[0], 10);
	ck_assert_int_eq(p.r[0], 20);
	ck_assert_int_eq(p.s[1], 11);
	ck_assert_int_eq(p.r[1], 21);
	ck_assert_uint_eq(us, 1);
	ck_assert_uint_eq(ur, 1);
	/* no counters wanted, an empty side */
	p.n = 0;
	ck_assert_int_eq(sh5_evmatch(s, 3, NULL, 0, sizeof(struct m), on_pair,
				     &p, NULL, NULL), 0);
	ck_assert_int_eq(p.n, 0);
}
END_TEST

START_TEST(test_evmatch_stop)
{
	struct m s[2], r[2];
	struct pairs p = { .stop_at = 1 };

	s[0] = msg(3, 4, 9, 0, 0, 1);
	s[1] = msg(3, 4, 9, 0, 1, 2);
	r[0] = msg(3, 4, 9, 0, 5, 3);
	r[1] = msg(3, 4, 9, 0, 6, 4);
	ck_assert_int_eq(sh5_evmatch(s, 2, r, 2, sizeof(struct m), on_pair,
				     &p, NULL, NULL), -1);
	ck_assert_int_eq(p.n, 1);
}
END_TEST

START_TEST(test_evmsg_set)
{
	struct sh5ev_rec ev[2];
	struct sh5_evtask t;
	struct sh5_evmsg k;

	memset(ev, 0, sizeof(ev));
	memset(&t, 0, sizeof(t));
	ev[0].kind = SH5EV_K_SEND;
	ev[0].id = 0;		/* MPI_COMM_WORLD */
	ev[0].tag = 42;
	ev[1].kind = SH5EV_K_RECV;
	ev[1].id = 77;		/* no such communicator */
	ev[1].tag = -3;
	t.task = 5;
	t.world_rank = 5;
	t.nev = 2;
	t.ev = ev;
	sh5_evmsg_set(&k, &t, 0, 5, 8);
	ck_assert_uint_eq(k.src, 5);
	ck_assert_uint_eq(k.dst, 8);
	ck_assert_uint_eq(k.comm, 0);
	ck_assert_int_eq(k.tag, 42);
	ck_assert_uint_eq(k.seq, 0);
	sh5_evmsg_set(&k, &t, 1, 5, 8);
	ck_assert_uint_eq(k.src, 8);
	ck_assert_uint_eq(k.dst, 5);
	ck_assert_uint_eq(k.comm, UINT64_MAX);
	ck_assert_int_eq(k.tag, -3);
	ck_assert_uint_eq(k.seq, 1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("evmatch");
	TCase *tc = tcase_create("evmatch");
	SRunner *sr;
	int nf;

	tcase_add_test(tc, test_evmatch_order);
	tcase_add_test(tc, test_evmatch_stop);
	tcase_add_test(tc, test_evmsg_set);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
