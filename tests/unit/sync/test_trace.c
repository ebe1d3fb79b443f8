/* test_trace.c - the event-trace CSV: parsing, matching, collective
 * assembly, problems with line numbers, byte-exact round trips. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sync/timesync.h"	/* struct sh5_offset_point */
#include "sync/trace.h"

static struct sh5_trace *rd(const char *s, struct sh5_error *err)
{
	return sh5_trace_read_mem(s, strlen(s), "mem", err);
}

/* Index of the event on line `line`, or -1. */
static long ev_at(const struct sh5_trace *t, uint32_t line)
{
	size_t i;

	for (i = 0; i < t->nev; i++)
		if (sh5_trace_line(t, i) == line)
			return (long)i;
	return -1;
}

static uint32_t loc_idx(const struct sh5_trace *t, int64_t id)
{
	size_t i;

	for (i = 0; i < t->nloc; i++)
		if (t->loc_id[i] == id)
			return (uint32_t)i;
	return SH5_TRACE_NONE;
}

static const char basic[] =
	"#sh5-trace 1\n"			/* 1 */
	"# comment\n"				/* 2 */
	"#comm 4 3 1\n"				/* 3: rank 0 = loc 3 */
	"#node nA 1 3\n"			/* 4 */
	"#mu 1500\n"				/* 5 */
	"#mu-intra 200\n"			/* 6 */
	"\n"					/* 7 */
	"1,10,SEND,3,7,0,,8\n"			/* 8 */
	"1,20,SEND,3,7,0,,8\n"			/* 9 */
	"1,30,SEND,3,8,0,,8\n"			/* 10 */
	"3,15,RECV,1,8,0,,8\n"			/* 11: tag 8 first */
	"3,25,RECV,1,7,0,,8\n"			/* 12: first tag 7 */
	"3,35,RECV,1,7,0,,8\n"			/* 13: second tag 7 */
	"5,5,OFFSET,-3,40,,,\n"			/* 14 */
	"1,40,CBEGIN,BCAST,,4,1,8\n"		/* 15 */
	"3,41,CBEGIN,BCAST,,4,1,0\n"		/* 16 */
	"3,42,CEND,BCAST,,4,1,0\n"		/* 17 */
	"1,43,CEND,BCAST,,4,1,8\n"		/* 18 */
	"5,50,CBEGIN,BARRIER,,0,,0\n"		/* 19 */
	"1,51,CBEGIN,BARRIER,,0,,0\n"		/* 20 */
	"3,52,CBEGIN,BARRIER,,0,,0\n"		/* 21 */
	"3,53,CEND,BARRIER,,0,,0\n"		/* 22 */
	"1,54,CEND,BARRIER,,0,,0\n"		/* 23 */
	"5,55,CEND,BARRIER,,0,,0\n"		/* 24 */
	"5,60,INT,,,,,\n";			/* 25 */

START_TEST(test_trace_parse_basic)
{
	struct sh5_error err = { "" };
	struct sh5_trace *t = rd(basic, &err);
	uint32_t l1, l3, l5;
	const struct sh5_trace_inst *in;
	size_t c4, c0;

	ck_assert_msg(t != NULL, "%s", err.text);
	ck_assert_uint_eq(t->nproblems, 0);
	ck_assert_uint_eq(t->nev, 17);
	ck_assert_uint_eq(t->nloc, 3);
	ck_assert_uint_eq(t->nlines, 25);
	ck_assert_int_eq(t->mu_inter, 1500);
	ck_assert_int_eq(t->mu_intra, 200);
	l1 = loc_idx(t, 1);
	l3 = loc_idx(t, 3);
	l5 = loc_idx(t, 5);
	ck_assert_uint_ne(l5, SH5_TRACE_NONE);
	/* nodes: 1 and 3 share one, 5 has its own */
	ck_assert_uint_eq(t->loc_node[l1], t->loc_node[l3]);
	ck_assert_uint_ne(t->loc_node[l1], t->loc_node[l5]);
	ck_assert_uint_eq(t->nnode, 2);
	/* non-overtaking matching per (tag, comm) */
	ck_assert_uint_eq(t->nmsg, 3);
	ck_assert_int_eq(t->ev[ev_at(t, 8)].link, ev_at(t, 12));
	ck_assert_int_eq(t->ev[ev_at(t, 9)].link, ev_at(t, 13));
	ck_assert_int_eq(t->ev[ev_at(t, 10)].link, ev_at(t, 11));
	ck_assert_int_eq(t->ev[ev_at(t, 13)].link, ev_at(t, 9));
	/* OFFSET lines are not events */
	ck_assert_int_eq(ev_at(t, 14), -1);
	ck_assert_uint_eq(t->noff, 1);
	ck_assert_uint_eq(t->off_first[l5 + 1] - t->off_first[l5], 1);
	ck_assert_int_eq(t->off[t->off_first[l5]].local_ns, 5);
	ck_assert_int_eq(t->off[t->off_first[l5]].offset_ns, -3);
	/* communicators: 4 in list order, 0 = all with a line, ascending */
	ck_assert_uint_eq(t->ncomm, 2);
	c4 = t->comm_id[0] == 4 ? 0 : 1;
	c0 = 1 - c4;
	ck_assert_int_eq(t->comm_id[c0], 0);
	ck_assert_uint_eq(t->comm_first[c4 + 1] - t->comm_first[c4], 2);
	ck_assert_uint_eq(t->comm_members[t->comm_first[c4]], l3);
	ck_assert_uint_eq(t->comm_members[t->comm_first[c4] + 1], l1);
	ck_assert_uint_eq(t->comm_first[c0 + 1] - t->comm_first[c0], 3);
	ck_assert_int_eq(t->loc_id[t->comm_members[t->comm_first[c0]]], 1);
	ck_assert_int_eq(t->loc_id[t->comm_members[t->comm_first[c0] + 1]],
			 3);
	ck_assert_int_eq(t->loc_id[t->comm_members[t->comm_first[c0] + 2]],
			 5);
	/* collective instances */
	ck_assert_uint_eq(t->ninst, 2);
	in = &t->inst[t->ev[ev_at(t, 15)].ref];
	ck_assert_uint_eq(in->op, SH5_OP_BCAST);
	ck_assert_uint_eq(in->cls, SH5_COLL_1TON);
	ck_assert_uint_eq(in->size, 2);
	ck_assert_uint_eq(in->root_rank, 1);	/* loc 1 is rank 1 */
	ck_assert_int_eq(t->inst_begin[in->first], ev_at(t, 16));
	ck_assert_int_eq(t->inst_begin[in->first + 1], ev_at(t, 15));
	ck_assert_int_eq(t->ev[ev_at(t, 15)].link, ev_at(t, 18));
	ck_assert_uint_eq(t->ev[ev_at(t, 18)].ref, t->ev[ev_at(t, 15)].ref);
	in = &t->inst[t->ev[ev_at(t, 19)].ref];
	ck_assert_uint_eq(in->op, SH5_OP_BARRIER);
	ck_assert_uint_eq(in->cls, SH5_COLL_NTON);
	ck_assert_uint_eq(in->root_rank, SH5_TRACE_NONE);
	ck_assert_int_eq(t->inst_begin[in->first], ev_at(t, 20));
	ck_assert_int_eq(t->inst_begin[in->first + 2], ev_at(t, 19));
	/* events by location, local order */
	ck_assert_uint_eq(t->loc_first[l5 + 1] - t->loc_first[l5], 3);
	ck_assert_int_eq(t->loc_order[t->loc_first[l5]], ev_at(t, 19));
	ck_assert_int_eq(t->loc_order[t->loc_first[l5] + 2], ev_at(t, 25));
	sh5_trace_destroy(t);
}
END_TEST

START_TEST(test_trace_op_classes)
{
	ck_assert_int_eq(sh5_trace_op_class(SH5_OP_BARRIER), SH5_COLL_NTON);
	ck_assert_int_eq(sh5_trace_op_class(SH5_OP_ALLREDUCE), SH5_COLL_NTON);
	ck_assert_int_eq(sh5_trace_op_class(SH5_OP_ALLGATHER), SH5_COLL_NTON);
	ck_assert_int_eq(sh5_trace_op_class(SH5_OP_ALLTOALL), SH5_COLL_NTON);
	ck_assert_int_eq(sh5_trace_op_class(SH5_OP_REDUCE_SCATTER),
			 SH5_COLL_NTON);
	ck_assert_int_eq(sh5_trace_op_class(SH5_OP_BCAST), SH5_COLL_1TON);
	ck_assert_int_eq(sh5_trace_op_class(SH5_OP_SCATTER), SH5_COLL_1TON);
	ck_assert_int_eq(sh5_trace_op_class(SH5_OP_GATHER), SH5_COLL_NTO1);
	ck_assert_int_eq(sh5_trace_op_class(SH5_OP_REDUCE), SH5_COLL_NTO1);
	ck_assert_int_eq(sh5_trace_op_class(SH5_OP_SCAN), SH5_COLL_SCAN);
	ck_assert_int_eq(sh5_trace_op_class(SH5_OP_EXSCAN), SH5_COLL_EXSCAN);
	ck_assert_str_eq(sh5_trace_op_name(SH5_OP_REDUCE_SCATTER),
			 "REDUCE_SCATTER");
}
END_TEST

/* Every operation name parses to its operation; near misses do not. */
START_TEST(test_trace_op_names)
{
	struct sh5_error err = { "" };
	char buf[256];
	struct sh5_trace *t;
	unsigned op = (unsigned)_i + 1;
	int rooted = sh5_trace_op_class(op) == SH5_COLL_1TON ||
		     sh5_trace_op_class(op) == SH5_COLL_NTO1;
	const char *name = sh5_trace_op_name(op);

	snprintf(buf, sizeof(buf), "#sh5-trace 1\n0,1,CBEGIN,%s,,0,%s,0\n"
		 "0,2,CEND,%s,,0,%s,0\n", name, rooted ? "0" : "", name,
		 rooted ? "0" : "");
	t = rd(buf, &err);
	ck_assert_msg(t != NULL, "%s", err.text);
	ck_assert_msg(t->nproblems == 0, "%s: %s", name, t->problem[0].text);
	ck_assert_uint_eq(t->ev[0].op, op);
	ck_assert_uint_eq(t->ninst, 1);
	sh5_trace_destroy(t);
	/* the name with its last letter changed is unknown */
	snprintf(buf, sizeof(buf), "#sh5-trace 1\n0,1,CBEGIN,%.*sQ,,0,,0\n",
		 (int)strlen(name) - 1, name);
	t = rd(buf, &err);
	ck_assert_msg(t != NULL, "%s", err.text);
	ck_assert_uint_eq(t->nproblems, 1);
	ck_assert_ptr_nonnull(strstr(t->problem[0].text, "unknown collective"));
	sh5_trace_destroy(t);
}
END_TEST

/* Written back byte for byte when the times do not change. */
static const char *const roundtrip[] = {
	basic,
	"#sh5-trace 1\n0,5,INT,,,,,\n0,6,INT,,,,,",	/* no final LF */
	"#sh5-trace 1\r\n0,5,INT,,,,,\r\n\r\n# x\r\n",	/* CRLF kept */
	"#sh5-trace 1\n\n\n#c\n \n0,-5,INT,,,,,\n\n",
	"#sh5-trace 1\n7,1800000000000000001,OFFSET,-9,3,,,\n"
	"7,1800000000000000002,INT,,,,,\n"
	"7,9223372036854775807,INT,,,,,\n",
};

START_TEST(test_trace_roundtrip)
{
	struct sh5_error err = { "" };
	const char *in = roundtrip[_i];
	struct sh5_trace *t = rd(in, &err);
	char *out = NULL;
	size_t len = 0;

	ck_assert_msg(t != NULL, "%s", err.text);
	ck_assert_msg(t->nproblems == 0, "%s", t->problem[0].text);
	ck_assert_int_eq(sh5_trace_write_mem(t, in, strlen(in), t->time,
					     &out, &len, &err), 0);
	ck_assert_uint_eq(len, strlen(in));
	ck_assert_msg(!memcmp(out, in, len), "round trip differs:\n%s", out);
	free(out);
	sh5_trace_destroy(t);
}
END_TEST

START_TEST(test_trace_write_times)
{
	static const char in[] =
		"#sh5-trace 1\n# keep\n3,100,INT,,,,,\n3,200,OFFSET,5,1,,,\n"
		"4,-7,SEND,3,1,2,,64\n3,300,RECV,4,1,2,,64\n";
	static const char want[] =
		"#sh5-trace 1\n# keep\n3,1800000000000000000,INT,,,,,\n"
		"3,200,OFFSET,5,1,,,\n4,-9223372036854775808,SEND,3,1,2,,64\n"
		"3,42,RECV,4,1,2,,64\n";
	struct sh5_error err = { "" };
	struct sh5_trace *t = rd(in, &err);
	int64_t times[3] = { INT64_C(1800000000000000000), INT64_MIN, 42 };
	char *out = NULL;
	size_t len = 0;

	ck_assert_msg(t != NULL, "%s", err.text);
	ck_assert_uint_eq(t->nev, 3);
	ck_assert_int_eq(sh5_trace_write_mem(t, in, strlen(in), times, &out,
					     &len, &err), 0);
	ck_assert_str_eq(out, want);
	free(out);
	sh5_trace_destroy(t);
}
END_TEST

/* Line numbers come from the list of non-event lines: check them around
 * comments, blank lines, OFFSET lines and a malformed line. */
START_TEST(test_trace_line_numbers)
{
	static const char in[] =
		"#sh5-trace 1\n"		/* 1 */
		"3,100,INT,,,,,\n"		/* 2: event 0 */
		"# note\n\n"			/* 3, 4 */
		"3,150,INT,,,,,\n"		/* 5: event 1 */
		"3,200,OFFSET,5,1,,,\n"		/* 6 */
		"3,300,INT,,,,,\n"		/* 7: event 2 */
		"3,x,INT,,,,,\n"		/* 8: malformed */
		"4,1,INT,,,,,\n"		/* 9: event 3 */
		"4,2,INT,,,,,\n";		/* 10: event 4 */
	static const uint32_t want[] = { 2, 5, 7, 9, 10 };
	struct sh5_error err = { "" };
	struct sh5_trace *t = rd(in, &err);
	size_t i;

	ck_assert_msg(t != NULL, "%s", err.text);
	ck_assert_uint_eq(t->nev, 5);
	ck_assert_uint_eq(t->nother, 5);
	ck_assert_uint_eq(t->nproblems, 1);
	ck_assert_uint_eq(t->problem[0].line, 8);
	for (i = 0; i < t->nev; i++)
		ck_assert_uint_eq(sh5_trace_line(t, i), want[i]);
	sh5_trace_destroy(t);
}
END_TEST

START_TEST(test_trace_big_numbers)
{
	static const char in[] =
		"#sh5-trace 1\n"
		"0,-9223372036854775808,INT,,,,,\n"
		"0,1799999999999999999,INT,,,,,\n"
		"0,9223372036854775807,INT,,,,,\n"
		"1,12345678,INT,,,,,\n";
	struct sh5_error err = { "" };
	struct sh5_trace *t = rd(in, &err);

	ck_assert_msg(t != NULL, "%s", err.text);
	ck_assert_uint_eq(t->nproblems, 0);
	ck_assert_int_eq(t->time[0], INT64_MIN);
	ck_assert_int_eq(t->time[1], INT64_C(1799999999999999999));
	ck_assert_int_eq(t->time[2], INT64_MAX);
	ck_assert_int_eq(t->time[3], 12345678);
	sh5_trace_destroy(t);
}
END_TEST

/* Problems: the line number and a piece of the reason. */
static const struct {
	const char *body;	/* after "#sh5-trace 1\n" */
	uint32_t line;
	const char *text;
} bad[] = {
	{ "0,10,SEND,1,0,0,,8\n1,5,INT,,,,,\n", 2, "unmatched SEND" },
	{ "1,5,INT,,,,,\n1,10,RECV,0,3,0,,8\n", 3, "unmatched RECV" },
	{ "0,10,INT,,,,,\n0,9,INT,,,,,\n", 3, "time goes backwards" },
	{ "0,10,INT,,,,,\n0,11,BOGUS,,,,,\n", 3, "unknown kind 'BOGUS'" },
	{ "0,10,INT,,,,\n", 2, "want 8 comma-separated fields, got 7" },
	{ "0,10,INT,,,,,,\n", 2, "more than 8" },
	{ "0,ten,INT,,,,,\n", 2, "bad time" },
	{ "0,9223372036854775808,INT,,,,,\n", 2, "bad time" },
	/* 19 characters, one not a digit: '/' and ':' border '0'..'9' */
	{ "0,18000000/0000000000,INT,,,,,\n", 2, "bad time" },
	{ "0,180000000000000:000,INT,,,,,\n", 2, "bad time" },
	{ "0,1800000000000000:00,INT,,,,,\n", 2, "bad time" },
	{ "x,10,INT,,,,,\n", 2, "bad location" },
	{ "0,10,SEND,,0,0,,8\n", 2, "malformed SEND" },
	{ "0,10,OFFSET,5,,,,\n", 2, "malformed OFFSET" },
	{ "0,10,CBEGIN,NOPE,,0,,0\n", 2, "unknown collective operation" },
	{ "0,10,CBEGIN,GATHER,,0,,0\n", 2, "GATHER needs a root" },
	{ "0,10,CBEGIN,BARRIER,,0,3,0\n", 2, "BARRIER takes no root" },
	{ "#comm 2 0 1\n0,10,CBEGIN,BARRIER,,2,,0\n0,11,CEND,BARRIER,,2,,0\n"
	  "1,10,INT,,,,,\n", 3, "member 1 never calls it" },
	{ "0,10,CBEGIN,BARRIER,,0,,0\n0,11,CEND,BARRIER,,0,,0\n"
	  "1,10,CBEGIN,ALLREDUCE,,0,,0\n1,11,CEND,ALLREDUCE,,0,,0\n", 4,
	  "ALLREDUCE here but BARRIER at line 2" },
	{ "0,10,CBEGIN,BARRIER,,0,,0\n0,11,CBEGIN,BARRIER,,0,,0\n"
	  "0,12,CEND,BARRIER,,0,,0\n", 3, "before the CEND" },
	{ "0,10,CEND,BARRIER,,0,,0\n", 2, "without a CBEGIN" },
	{ "0,10,CBEGIN,BARRIER,,0,,0\n", 2, "CBEGIN without a CEND" },
	{ "0,10,CBEGIN,SCAN,,0,,0\n0,11,CEND,EXSCAN,,0,,0\n", 3,
	  "does not repeat" },
	{ "0,10,CBEGIN,BARRIER,,9,,0\n0,11,CEND,BARRIER,,9,,0\n", 2,
	  "undeclared communicator 9" },
	{ "#comm 2 1\n0,10,CBEGIN,BARRIER,,2,,0\n0,11,CEND,BARRIER,,2,,0\n",
	  3, "not a member of communicator 2" },
	{ "0,10,INT,,,,,\n#node a 0\n", 3, "directive after" },
	{ "#mu x\n", 2, "malformed #mu" },
	{ "#comm 1 0 0\n", 2, "listed twice" },
	{ "#node a 0\n#node b 0\n", 3, "on two nodes" },
};

START_TEST(test_trace_problems)
{
	struct sh5_error err = { "" };
	char buf[512];
	struct sh5_trace *t;

	snprintf(buf, sizeof(buf), "#sh5-trace 1\n%s", bad[_i].body);
	t = rd(buf, &err);
	ck_assert_msg(t != NULL, "%s", err.text);
	ck_assert_msg(t->nproblems >= 1, "case %d: no problem found", _i);
	ck_assert_msg(t->problem[0].line == bad[_i].line,
		      "case %d: line %u, want %u (%s)", _i, t->problem[0].line,
		      bad[_i].line, t->problem[0].text);
	ck_assert_msg(strstr(t->problem[0].text, bad[_i].text) != NULL,
		      "case %d: '%s' lacks '%s'", _i, t->problem[0].text,
		      bad[_i].text);
	sh5_trace_destroy(t);
}
END_TEST

/* --allow-partial semantics of the reader: the bad constraint is left
 * out, the rest is kept. */
START_TEST(test_trace_partial_flags)
{
	static const char in[] =
		"#sh5-trace 1\n"
		"0,10,SEND,1,0,0,,8\n"		/* 2: matched */
		"0,20,SEND,1,0,0,,8\n"		/* 3: unmatched */
		"1,30,RECV,0,0,0,,8\n"		/* 4 */
		"1,25,INT,,,,,\n"		/* 5: backwards, clamped */
		"1,40,CBEGIN,BARRIER,,0,,0\n"	/* 6: 0 never calls it */
		"1,41,CEND,BARRIER,,0,,0\n";	/* 7 */
	struct sh5_error err = { "" };
	struct sh5_trace *t = rd(in, &err);

	ck_assert_msg(t != NULL, "%s", err.text);
	ck_assert_uint_eq(t->nproblems, 3);
	ck_assert_uint_eq(t->nmsg, 1);
	ck_assert_int_eq(t->ev[0].link, 2);
	ck_assert(t->ev[1].flags & SH5_EVF_FREE);
	ck_assert(t->ev[3].flags & SH5_EVF_CLAMPED);
	ck_assert_int_eq(t->time[3], 30);
	ck_assert(t->ev[4].flags & SH5_EVF_FREE);
	ck_assert_uint_eq(t->ev[4].ref, SH5_TRACE_NONE);
	ck_assert(t->ev[5].flags & SH5_EVF_FREE);
	ck_assert_uint_eq(t->ninst, 0);
	sh5_trace_destroy(t);
}
END_TEST

START_TEST(test_trace_not_a_trace)
{
	struct sh5_error err = { "" };

	ck_assert_ptr_null(rd("loc,time\n0,1,INT,,,,,\n", &err));
	ck_assert_ptr_nonnull(strstr(err.text, "mem:1: not an event trace"));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(rd("#sh5-trace 2\n", &err));
	ck_assert_ptr_nonnull(strstr(err.text, "version '2'"));
	ck_assert_ptr_null(rd("", &err));
	ck_assert_ptr_null(sh5_trace_read("/nonexistent/x.csv", &err));
	ck_assert_ptr_nonnull(strstr(err.text, "/nonexistent/x.csv"));
	sh5_trace_destroy(NULL);
}
END_TEST

/* Many communicators (the arrays of their ids and members grow many
 * times); each keeps its id and members, and a collective on the last
 * one is assembled. */
START_TEST(test_trace_many_comms)
{
	struct sh5_error err = { "" };
	struct sh5_trace *t;
	char *buf;
	size_t len = 0, cap = 1 << 16, i;
	int n = 200, c;

	buf = malloc(cap);
	ck_assert_ptr_nonnull(buf);
	len += (size_t)snprintf(buf + len, cap - len, "#sh5-trace 1\n");
	for (c = 1; c <= n; c++)
		len += (size_t)snprintf(buf + len, cap - len,
					"#comm %d %d %d\n", c * 7, c % 3,
					(c + 1) % 3);
	for (i = 0; i < 2; i++) {
		int l = (int)((n + i) % 3);

		len += (size_t)snprintf(buf + len, cap - len,
					"%d,%zu,CBEGIN,BARRIER,,%d,,0\n"
					"%d,%zu,CEND,BARRIER,,%d,,0\n",
					l, 10 + i, n * 7, l, 20 + i, n * 7);
	}
	t = sh5_trace_read_mem(buf, len, "mem", &err);
	ck_assert_msg(t != NULL, "%s", err.text);
	ck_assert_uint_eq(t->nproblems, 0);
	ck_assert_uint_ge(t->ncomm, (size_t)n);
	for (c = 1; c <= n; c++) {
		size_t k;

		for (k = 0; k < t->ncomm; k++)
			if (t->comm_id[k] == c * 7)
				break;
		ck_assert_uint_lt(k, t->ncomm);
		ck_assert_uint_eq(t->comm_first[k + 1] - t->comm_first[k], 2);
		ck_assert_int_eq(t->loc_id[t->comm_members[t->comm_first[k]]],
				 c % 3);
	}
	ck_assert_uint_eq(t->ninst, 1);
	sh5_trace_destroy(t);
	free(buf);
}
END_TEST

START_TEST(test_trace_file_write_atomic)
{
	char dir[] = "/tmp/test_trace.XXXXXX", in[300], out[300], buf[256];
	static const char text[] = "#sh5-trace 1\n0,1,INT,,,,,\n# end\n";
	struct sh5_error err = { "" };
	struct sh5_trace *t;
	int64_t times[1] = { 99 };
	FILE *f;
	size_t n;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(in, sizeof(in), "%s/in.csv", dir);
	snprintf(out, sizeof(out), "%s/out.csv", dir);
	f = fopen(in, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
	t = sh5_trace_read(in, &err);
	ck_assert_msg(t != NULL, "%s", err.text);
	ck_assert_int_eq(sh5_trace_write(t, in, times, out, &err), 0);
	f = fopen(out, "r");
	ck_assert_ptr_nonnull(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	ck_assert_str_eq(buf, "#sh5-trace 1\n0,99,INT,,,,,\n# end\n");
	/* an unwritable destination fails and leaves nothing */
	snprintf(out, sizeof(out), "%s/no/such/dir/out.csv", dir);
	ck_assert_int_eq(sh5_trace_write(t, in, times, out, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.text, "no/such/dir"));
	sh5_trace_destroy(t);
	snprintf(out, sizeof(out), "%s/out.csv", dir);
	ck_assert_int_eq(unlink(out), 0);
	ck_assert_int_eq(unlink(in), 0);
	ck_assert_int_eq(rmdir(dir), 0);	/* nothing else left */
}
END_TEST

/* A trace larger than the reader's blocks (lines across block ends, a
 * directive longer than a block, CRLF lines, the last line without a
 * '\n' in loop 1): the file and the memory readers agree, and writing
 * puts exactly the new times in, from either source. */
START_TEST(test_trace_blocks)
{
	char dir[] = "/tmp/test_trace.XXXXXX", in[300], out[300];
	struct sh5_error err = { "" };
	struct sh5_trace *tm, *tf, *tr;
	size_t cap = 4u << 20, len = 0, i, olen, flen;
	char *text = malloc(cap), *mo = NULL, *fo;
	int64_t *times;
	FILE *f;
	int k;

	ck_assert_ptr_nonnull(text);
	len += (size_t)snprintf(text + len, cap - len, "#sh5-trace 1\n#comm 5");
	for (k = 0; k < 70000; k++)	/* about 420 KB */
		len += (size_t)snprintf(text + len, cap - len, " %d", k);
	len += (size_t)snprintf(text + len, cap - len, "\n");
	for (k = 0; k < 60000; k++) {
		int l = k % 7;

		if (k % 5 == 0)
			len += (size_t)snprintf(text + len, cap - len,
						"%d,%d,OFFSET,%d,10,,,\n", l,
						1000 + k, k % 11 - 5);
		else if (k % 13 == 0)
			len += (size_t)snprintf(text + len, cap - len,
						"%d,%d,INT,,,,,\r\n", l,
						1000 + k);
		else if (k % 17 == 0)
			len += (size_t)snprintf(text + len, cap - len,
						"# note %d\n\n", k);
		else
			len += (size_t)snprintf(text + len, cap - len,
						"%d,%d,INT,,,,,\n", l,
						1000 + k);
	}
	if (_i == 1)
		len--;	/* no '\n' after the last line */
	ck_assert_uint_lt(len, cap);

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(in, sizeof(in), "%s/in.csv", dir);
	snprintf(out, sizeof(out), "%s/out.csv", dir);
	f = fopen(in, "w");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(text, 1, len, f), len);
	fclose(f);
	tm = sh5_trace_read_mem(text, len, "mem", &err);
	ck_assert_msg(tm != NULL, "%s", err.text);
	tf = sh5_trace_read(in, &err);
	ck_assert_msg(tf != NULL, "%s", err.text);
	ck_assert_uint_eq(tm->nproblems, 0);
	ck_assert_uint_eq(tf->nproblems, 0);
	ck_assert_uint_eq(tm->nlines, tf->nlines);
	ck_assert_uint_eq(tm->nev, tf->nev);
	ck_assert_uint_eq(tm->noff, tf->noff);
	ck_assert_uint_eq(tm->noff, 12000);
	ck_assert_uint_eq(tm->comm_first[1] - tm->comm_first[0], 70000);
	for (i = 0; i < tm->nev; i++) {
		ck_assert_uint_eq(sh5_trace_line(tm, i), sh5_trace_line(tf, i));
		ck_assert_int_eq(tm->time[i], tf->time[i]);
	}
	times = malloc(tm->nev * sizeof(*times));
	ck_assert_ptr_nonnull(times);
	/* new times keep each location's order (OFFSET lines, unchanged,
	 * then read as going backwards, are ignored on the re-read) */
	for (i = 0; i < tm->nev; i++)
		times[i] = tm->time[i] * 1000003 + 7;
	ck_assert_int_eq(sh5_trace_write_mem(tm, text, len, times, &mo, &olen,
					     &err), 0);
	ck_assert_int_eq(sh5_trace_write(tf, in, times, out, &err), 0);
	fo = malloc(olen + 2);
	ck_assert_ptr_nonnull(fo);
	f = fopen(out, "r");
	ck_assert_ptr_nonnull(f);
	flen = fread(fo, 1, olen + 1, f);
	fclose(f);
	ck_assert_uint_eq(flen, olen);
	ck_assert(memcmp(fo, mo, olen) == 0);
	ck_assert_int_eq(mo[olen - 1] == '\n', _i == 0);
	tr = sh5_trace_read_mem(mo, olen, "out", &err);
	ck_assert_msg(tr != NULL, "%s", err.text);
	ck_assert_uint_eq(tr->nev, tm->nev);
	ck_assert_uint_eq(tr->nlines, tm->nlines);
	for (i = 0; i < tr->nev; i++)
		ck_assert_int_eq(tr->time[i], times[i]);
	sh5_trace_destroy(tr);
	sh5_trace_destroy(tm);
	sh5_trace_destroy(tf);
	free(times);
	free(mo);
	free(fo);
	free(text);
	ck_assert_int_eq(unlink(out), 0);
	ck_assert_int_eq(unlink(in), 0);
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/* The writer's digit conversions (SSE2 and scalar): 19-digit times
 * written over 19-digit ones (in place, from a file) and times of other
 * lengths (line by line), against snprintf; locations of one and two
 * digits, line ends near and far from the time. */
START_TEST(test_trace_write_digits)
{
	static const char *const tails[4] = {
		"INT,,,,,", "SEND,1,0,0,,123456789012345678",
		"CBEGIN,REDUCE_SCATTER,,0,,123456789012345678",
		"CEND,REDUCE_SCATTER,,0,,123456789012345678" };
	char dir[] = "/tmp/sh5_tdigXXXXXX", in[64], out[64];
	size_t cap = 1 << 20, len = 0, elen = 0, n = 4000, i, olen, flen;
	char *text = malloc(cap), *exp = malloc(cap), *mo, *fo;
	int64_t *times = malloc(n * sizeof(*times));
	uint64_t s = 88172645463325252ULL;
	struct sh5_error err;
	struct sh5_trace *t;
	FILE *f;

	ck_assert(text && exp && times);
	len = (size_t)snprintf(text, cap, "#sh5-trace 1\n");
	memcpy(exp, text, len);
	elen = len;
	for (i = 0; i < n; i++) {
		int64_t v;

		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		/* mostly 19 digits; every 8th line another length */
		v = (int64_t)(1000000000000000000ULL +
			      s % 8000000000000000000ULL);
		if (i % 8 == 3)
			v = (int64_t)(s % 100000000000000000ULL);
		if (i % 16 == 5)
			v = -v;
		times[i] = i % 4 == 0 ? (int64_t)(9999999999999999999ULL >> 1)
				      : v;
		len += (size_t)snprintf(text + len, cap - len, "%zu,%lld,%s\n",
					i % 15, 1800000000000000000LL +
					(long long)i, tails[i % 4]);
		elen += (size_t)snprintf(exp + elen, cap - elen,
					 "%zu,%lld,%s\n", i % 15,
					 (long long)times[i], tails[i % 4]);
	}
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(in, sizeof(in), "%s/in.csv", dir);
	snprintf(out, sizeof(out), "%s/out.csv", dir);
	f = fopen(in, "w");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(text, 1, len, f), len);
	fclose(f);
	t = sh5_trace_read(in, &err);
	ck_assert_msg(t != NULL, "%s", err.text);
	ck_assert_uint_eq(t->nev, n);
	ck_assert_int_eq(sh5_trace_write(t, in, times, out, &err), 0);
	ck_assert_int_eq(sh5_trace_write_mem(t, text, len, times, &mo, &olen,
					     &err), 0);
	ck_assert_uint_eq(olen, elen);
	ck_assert(memcmp(mo, exp, elen) == 0);
	fo = malloc(elen + 2);
	f = fopen(out, "r");
	ck_assert(fo && f);
	flen = fread(fo, 1, elen + 1, f);
	fclose(f);
	ck_assert_uint_eq(flen, elen);
	ck_assert(memcmp(fo, exp, elen) == 0);
	sh5_trace_destroy(t);
	ck_assert_int_eq(unlink(out), 0);
	ck_assert_int_eq(unlink(in), 0);
	ck_assert_int_eq(rmdir(dir), 0);
	free(text);
	free(exp);
	free(times);
	free(mo);
	free(fo);
}
END_TEST

/* Matching in file order per channel (RECVs before their SENDs too),
 * the leftovers left out with their messages, channel by channel. */
START_TEST(test_trace_match_order)
{
	static const char in[] =
		"#sh5-trace 1\n"
		"1,5,RECV,0,7,0,,8\n"	/* 0 */
		"0,1,SEND,1,7,0,,8\n"	/* 1 */
		"0,2,SEND,1,7,0,,8\n"	/* 2 */
		"0,3,SEND,1,9,0,,8\n"	/* 3 */
		"1,6,RECV,0,9,0,,8\n"	/* 4 */
		"1,7,RECV,0,7,0,,8\n"	/* 5 */
		"0,4,SEND,1,7,0,,8\n"	/* 6: unmatched */
		"1,8,RECV,0,9,0,,8\n";	/* 7: unmatched */
	static const uint32_t link[8] = { 1, 0, 5, 4, 3, 2, SH5_TRACE_NONE,
					  SH5_TRACE_NONE };
	struct sh5_error err;
	struct sh5_trace *t = sh5_trace_read_mem(in, strlen(in), "m", &err);
	size_t i;

	ck_assert_msg(t != NULL, "%s", err.text);
	ck_assert_uint_eq(t->nev, 8);
	ck_assert_uint_eq(t->nmsg, 3);
	for (i = 0; i < 8; i++) {
		ck_assert_uint_eq(t->ev[i].link, link[i]);
		ck_assert_int_eq(!!(t->ev[i].flags & SH5_EVF_FREE), i >= 6);
	}
	ck_assert_uint_eq(t->nproblems, 2);
	ck_assert_uint_eq(t->problem[0].line, 8);
	ck_assert_str_eq(t->problem[0].text, "unmatched SEND from 0 to 1 "
			 "(tag 7, comm 0): no matching RECV");
	ck_assert_uint_eq(t->problem[1].line, 9);
	ck_assert_str_eq(t->problem[1].text, "unmatched RECV at 1 from 0 "
			 "(tag 9, comm 0): no matching SEND");
	sh5_trace_destroy(t);
}
END_TEST

/* The channel cache: location pairs with the same low bits (1 and 257)
 * and messages of one pair and tag on two communicators keep their own
 * channels. */
START_TEST(test_trace_match_alias)
{
	static const char in[] =
		"#sh5-trace 1\n"
		"1,1,SEND,2,0,0,,8\n"		/* 0 */
		"257,1,SEND,258,0,0,,8\n"	/* 1 */
		"258,5,RECV,257,0,0,,8\n"	/* 2 */
		"1,2,SEND,2,0,3,,8\n"		/* 3: comm 3 */
		"2,5,RECV,1,0,0,,8\n"		/* 4 */
		"2,6,RECV,1,0,3,,8\n";		/* 5 */
	static const uint32_t link[6] = { 4, 2, 1, 5, 0, 3 };
	struct sh5_error err;
	struct sh5_trace *t = sh5_trace_read_mem(in, strlen(in), "m", &err);
	size_t i;

	ck_assert_msg(t != NULL, "%s", err.text);
	ck_assert_uint_eq(t->nmsg, 3);
	ck_assert_uint_eq(t->nproblems, 0);
	for (i = 0; i < 6; i++)
		ck_assert_uint_eq(t->ev[i].link, link[i]);
	ck_assert_uint_ne(t->ev[0].ref, t->ev[1].ref);
	ck_assert_uint_ne(t->ev[0].ref, t->ev[3].ref);
	ck_assert_uint_eq(t->ev[0].ref, t->ev[4].ref);
	ck_assert_uint_eq(t->ev[3].ref, t->ev[5].ref);
	sh5_trace_destroy(t);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("trace");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int nf;

	tcase_add_test(tc, test_trace_parse_basic);
	tcase_add_test(tc, test_trace_op_classes);
	tcase_add_loop_test(tc, test_trace_op_names, 0, SH5_OP_COUNT - 1);
	tcase_add_loop_test(tc, test_trace_roundtrip, 0,
			    sizeof(roundtrip) / sizeof(roundtrip[0]));
	tcase_add_test(tc, test_trace_write_times);
	tcase_add_test(tc, test_trace_write_digits);
	tcase_add_test(tc, test_trace_match_order);
	tcase_add_test(tc, test_trace_match_alias);
	tcase_add_test(tc, test_trace_big_numbers);
	tcase_add_test(tc, test_trace_line_numbers);
	tcase_add_loop_test(tc, test_trace_problems, 0,
			    sizeof(bad) / sizeof(bad[0]));
	tcase_add_test(tc, test_trace_partial_flags);
	tcase_add_test(tc, test_trace_not_a_trace);
	tcase_add_test(tc, test_trace_file_write_atomic);
	tcase_add_test(tc, test_trace_many_comms);
	tcase_add_loop_test(tc, test_trace_blocks, 0, 2);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
