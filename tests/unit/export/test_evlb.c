/* test_evlb.c - the event exports' phase logic, message matching,
 * collective attribution (export/evlb.h), region stack and call
 * durations (export/evstack.h, export/evcounters.h), on steps built in
 * memory. */
#include "config.h"

#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "export/evcounters.h"
#include "export/evlb.h"
#include "export/evstack.h"

#define MS 1000000LL		/* ns */
#define MAXT 4
#define MAXR 64

enum { R_SEND = 1, R_RECV, R_BCAST, R_GATHER, R_WORK, R_INNER };

static struct sh5_evstore_region regions[MAXT][6];
static struct sh5ev_rec recs[MAXT][MAXR];
static struct sh5_evtask tasks[MAXT];
static struct sh5_evnode nodes[2];
static struct sh5_evstep step;

static void def_region(int t, int i, uint32_t id, const char *name,
		       uint32_t flags)
{
	regions[t][i].task = (uint32_t)t;
	regions[t][i].region = id;
	regions[t][i].flags = flags;
	snprintf(regions[t][i].name, sizeof(regions[t][i].name), "%s", name);
}

static void setup(int ntasks)
{
	int t;

	memset(&step, 0, sizeof(step));
	memset(tasks, 0, sizeof(tasks));
	memset(recs, 0, sizeof(recs));
	memset(nodes, 0, sizeof(nodes));
	nodes[0].index = 0;
	nodes[1].index = 1;
	step.nnodes = 2;
	step.nodes = nodes;
	for (t = 0; t < ntasks; t++) {
		def_region(t, 0, R_SEND, "MPI_Send", SH5EV_F_MPI);
		def_region(t, 1, R_RECV, "MPI_Recv", SH5EV_F_MPI);
		def_region(t, 2, R_BCAST, "MPI_Bcast", SH5EV_F_MPI);
		def_region(t, 3, R_GATHER, "MPI_Gather", SH5EV_F_MPI);
		def_region(t, 4, R_WORK, "work", 0);
		def_region(t, 5, R_INNER, "inner", 0);
		tasks[t].task = (uint32_t)t;
		tasks[t].world_rank = t;
		tasks[t].node = (uint32_t)(t % 2);
		tasks[t].ev = recs[t];
		tasks[t].regions = regions[t];
		tasks[t].nregions = 6;
		snprintf(tasks[t].path, sizeof(tasks[t].path), "task%d", t);
	}
	step.ntasks = (size_t)ntasks;
	step.tasks = tasks;
	snprintf(step.step, sizeof(step.step), "0");
}

static void rec(int t, int64_t ms, int kind, uint32_t id, int32_t peer,
		int32_t tag, uint64_t bytes, double value, int op)
{
	struct sh5ev_rec *e = &recs[t][tasks[t].nev++];

	ck_assert_uint_le(tasks[t].nev, MAXR);
	e->time_ns = ms * MS;
	e->kind = (uint8_t)kind;
	e->id = id;
	e->peer = peer;
	e->tag = tag;
	e->bytes = bytes;
	e->value = value;
	e->op = (uint8_t)op;
}

#define ENTER(t, ms, r) rec(t, ms, SH5EV_K_ENTER, r, -1, 0, 0, 0, 0)
#define EXIT(t, ms, r) rec(t, ms, SH5EV_K_EXIT, r, -1, 0, 0, 0, 0)
#define MARK(t, ms, k) rec(t, ms, SH5EV_K_PHASE, k, -1, 0, 0, 0, 0)
#define SEND(t, ms, to, tag, b) rec(t, ms, SH5EV_K_SEND, 0, to, tag, b, 0, 0)
#define RECV(t, ms, fr, tag, b) rec(t, ms, SH5EV_K_RECV, 0, fr, tag, b, 0, 0)
#define CBEGIN(t, ms, op, root, b) \
	rec(t, ms, SH5EV_K_CBEGIN, 0, root, 0, b, 0, op)

static struct sh5_evlb *build(const struct sh5_evlb_windows *w)
{
	struct sh5_error err;
	struct sh5_evlb *m = sh5_evlb_build(&step, w, 1000, &err);

	ck_assert_msg(m != NULL, "%s", err.text);
	return m;
}

static const struct sh5_evlb_edge *edge(const struct sh5_evlb *m,
					int64_t phase, int kind,
					uint32_t from, uint32_t to)
{
	size_t i;

	for (i = 0; i < m->nedges; i++)
		if (m->edges[i].phase == phase && m->edges[i].kind == kind &&
		    m->edges[i].from == from && m->edges[i].to == to)
			return &m->edges[i];
	return NULL;
}

#define EPS 1e-12

/* Phase 0 before the first mark, mark k starts phase k, a skipped id is
 * an empty phase; MPI time of a region across a mark is split. */
START_TEST(test_evlb_phases_from_marks)
{
	struct sh5_evlb *m;
	const struct sh5_evlb_rank *r;

	setup(1);
	ENTER(0, 0, R_WORK);
	EXIT(0, 10, R_WORK);
	ENTER(0, 10, R_SEND);	/* MPI 10..14, the mark at 12 */
	MARK(0, 12, 1);
	EXIT(0, 14, R_SEND);
	ENTER(0, 20, R_RECV);	/* MPI 20..25 */
	EXIT(0, 25, R_RECV);
	MARK(0, 30, 3);		/* phase 2 skipped */
	ENTER(0, 30, R_WORK);
	EXIT(0, 40, R_WORK);
	m = build(NULL);
	ck_assert_int_eq(m->marks, 1);
	ck_assert_int_eq(m->nphases, 4);
	r = sh5_evlb_rank(m, 0);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(r->nreached, 4);
	ck_assert_double_eq_tol(r->cell[0].wall, 0.012, EPS);
	ck_assert_double_eq_tol(r->cell[0].mpi, 0.002, EPS);
	ck_assert_double_eq_tol(r->cell[1].wall, 0.018, EPS);
	ck_assert_double_eq_tol(r->cell[1].mpi, 0.007, EPS);
	ck_assert_double_eq_tol(r->cell[2].wall, 0.0, EPS);
	ck_assert_double_eq_tol(r->cell[3].wall, 0.010, EPS);
	ck_assert_double_eq_tol(sh5_evlb_rank_load(m, 0, 1, -1), 0.011, EPS);
	ck_assert_int_eq(r->cell[2].present, 1);
	/* samples: phase k is (bound[k], bound[k + 1]] */
	ck_assert_int_eq(sh5_evlb_phase_at(m, r, -5 * MS), 0);
	ck_assert_int_eq(sh5_evlb_phase_at(m, r, 12 * MS), 0);
	ck_assert_int_eq(sh5_evlb_phase_at(m, r, 13 * MS), 1);
	ck_assert_int_eq(sh5_evlb_phase_at(m, r, 30 * MS), 1);
	ck_assert_int_eq(sh5_evlb_phase_at(m, r, 31 * MS), 3);
	ck_assert_int_eq(sh5_evlb_phase_at(m, r, 1000 * MS), 3);
	sh5_evlb_free(m);
}
END_TEST

/* Sends and receives pair in order per (source, dest, comm, tag): the
 * edge is in the sender's phase at the send, whatever the receiver's;
 * other tags do not overtake; a send without receive is unmatched. */
START_TEST(test_evlb_match_in_order)
{
	struct sh5_evlb *m;
	const struct sh5_evlb_edge *e;

	setup(2);
	SEND(0, 1, 1, 7, 100);	/* phase 0 */
	SEND(0, 2, 1, 8, 5);	/* another tag, phase 0 */
	MARK(0, 3, 1);
	SEND(0, 4, 1, 7, 200);	/* phase 1 */
	SEND(0, 5, 1, 9, 1);	/* never received */
	MARK(1, 1, 1);
	RECV(1, 6, 0, 7, 100);	/* both receives in the receiver's 1 */
	RECV(1, 7, 0, 8, 5);
	RECV(1, 8, 0, 7, 200);
	RECV(1, 9, 0, 3, 1);	/* never sent */
	m = build(NULL);
	ck_assert_uint_eq(m->p2p_matched, 3);
	ck_assert_uint_eq(m->unmatched_sends, 1);
	ck_assert_uint_eq(m->unmatched_recvs, 1);
	e = edge(m, 0, SH5_EVLB_SENDRECV, 0, 1);
	ck_assert_ptr_nonnull(e);
	ck_assert_int_eq(e->messages, 2);
	ck_assert_double_eq_tol(e->bytes, 105.0, EPS);
	e = edge(m, 1, SH5_EVLB_SENDRECV, 0, 1);
	ck_assert_ptr_nonnull(e);
	ck_assert_int_eq(e->messages, 1);
	ck_assert_double_eq_tol(e->bytes, 200.0, EPS);
	ck_assert_uint_eq(m->nedges, 2);
	/* the receiver is present where it is an endpoint */
	ck_assert_int_eq(sh5_evlb_rank(m, 1)->cell[0].present, 1);
	ck_assert_int_eq(sh5_evlb_rank(m, 0)->cell[1].sent_msgs, 1);
	sh5_evlb_free(m);
}
END_TEST

/* Bcast: Broadcast edges root -> recipient in the root's phase of the
 * same instance, the recipient's bytes; Gather: CollectionToNode from
 * each other member to the root; Allreduce: no edge. */
START_TEST(test_evlb_collectives)
{
	struct sh5_evlb *m;
	const struct sh5_evlb_edge *e;
	int t;

	setup(3);
	MARK(0, 1, 1);		/* the root is in phase 1 ... */
	for (t = 0; t < 3; t++) {
		CBEGIN(t, 2, SH5EV_OP_ALLREDUCE, -1, 8);
		CBEGIN(t, 3, SH5EV_OP_BCAST, 0, 64);
		CBEGIN(t, 4, SH5EV_OP_GATHER, 2, 16);
	}			/* ... the others in phase 0 */
	MARK(1, 9, 1);
	MARK(2, 9, 1);
	m = build(NULL);
	e = edge(m, 1, SH5_EVLB_BROADCAST, 0, 1);
	ck_assert_ptr_nonnull(e);
	ck_assert_double_eq_tol(e->bytes, 64.0, EPS);
	ck_assert_ptr_nonnull(edge(m, 1, SH5_EVLB_BROADCAST, 0, 2));
	ck_assert_ptr_null(edge(m, 0, SH5_EVLB_BROADCAST, 0, 1));
	ck_assert_ptr_nonnull(edge(m, 1, SH5_EVLB_TONODE, 0, 2));
	ck_assert_ptr_nonnull(edge(m, 0, SH5_EVLB_TONODE, 1, 2));
	ck_assert_ptr_null(edge(m, 0, SH5_EVLB_TONODE, 2, 2));
	ck_assert_uint_eq(m->nedges, 4);
	ck_assert_uint_eq(m->coll_mismatch, 0);
	ck_assert_int_eq(sh5_evlb_rank(m, 1)->cell[0].coll_calls, 3);
	sh5_evlb_free(m);
}
END_TEST

/* Objects: phase = the record's id, loads summed per (task, phase, id),
 * ids from 2^32 dropped; seq_id rule. */
START_TEST(test_evlb_objects)
{
	struct sh5_evlb *m;

	setup(1);
	MARK(0, 0, 1);
	rec(0, 1, SH5EV_K_OBJECT, 2, -1, 0, 5, 0.25, 0);
	rec(0, 2, SH5EV_K_OBJECT, 2, -1, 0, 5, 0.5, 0);
	rec(0, 3, SH5EV_K_OBJECT, 0, -1, 0, (uint64_t)1 << 32, 1.0, 0);
	m = build(NULL);
	ck_assert_int_eq(m->nphases, 3);
	ck_assert_uint_eq(m->nobjects, 1);
	ck_assert_uint_eq(m->objects_dropped, 1);
	ck_assert_double_eq_tol(m->objects[0].load, 0.75, EPS);
	ck_assert_int_eq(m->objects[0].phase, 2);
	ck_assert_int_eq(sh5_evlb_rank(m, 0)->cell[2].present, 1);
	ck_assert_int_eq(sh5_evlb_object_seq(3, 5), (4LL << 32) + 5);
	sh5_evlb_free(m);
}
END_TEST

/* Without marks: windows of the caller; an MPI region across a window
 * boundary is split; messages in the window of the send. */
START_TEST(test_evlb_windows)
{
	struct sh5_evlb_windows w = { 0, 10 * MS, 3 };
	struct sh5_evlb *m;
	const struct sh5_evlb_rank *r;

	setup(2);
	ENTER(0, 5, R_SEND);
	SEND(0, 6, 1, 0, 10);
	EXIT(0, 15, R_SEND);	/* MPI 5..15 over windows 0 and 1 */
	SEND(0, 25, 1, 0, 20);	/* window 2 */
	RECV(1, 26, 0, 0, 10);
	RECV(1, 27, 0, 0, 20);
	m = build(&w);
	ck_assert_int_eq(m->marks, 0);
	ck_assert_int_eq(m->nphases, 3);
	r = sh5_evlb_rank(m, 0);
	ck_assert_double_eq_tol(r->cell[0].mpi, 0.005, EPS);
	ck_assert_double_eq_tol(r->cell[1].mpi, 0.005, EPS);
	ck_assert_double_eq_tol(r->cell[0].wall, 0.005, EPS);
	ck_assert_double_eq_tol(r->cell[1].wall, 0.010, EPS);
	ck_assert_ptr_nonnull(edge(m, 0, SH5_EVLB_SENDRECV, 0, 1));
	ck_assert_ptr_nonnull(edge(m, 2, SH5_EVLB_SENDRECV, 0, 1));
	ck_assert_int_eq(sh5_evlb_rank(m, 1)->cell[0].present, 1);
	sh5_evlb_free(m);
}
END_TEST

/* A phase id past the limit is refused, naming the task. */
START_TEST(test_evlb_too_many_phases)
{
	struct sh5_error err;

	setup(1);
	MARK(0, 1, 5000);
	ck_assert_ptr_null(sh5_evlb_build(&step, NULL, 1000, &err));
	ck_assert_ptr_nonnull(strstr(err.text, "task0"));
}
END_TEST

/* Phases x tasks past SH5_EVLB_MAX_CELLS are refused before any
 * allocation (a phase id written by a task bounds nothing else). */
START_TEST(test_evlb_too_many_cells)
{
	struct sh5_error err;

	setup(2);
	MARK(0, 1, 1u << 24);
	ck_assert_ptr_null(sh5_evlb_build(&step, NULL, 1 << 30, &err));
	ck_assert_ptr_nonnull(strstr(err.text, "task-phases"));
}
END_TEST

/* The stack: EXIT pops its region and any unclosed region above it; an
 * EXIT without ENTER is ignored. */
START_TEST(test_evstack_unclosed)
{
	struct sh5_evstack st = { 0 };
	struct sh5_evstack_ent e;

	ck_assert_int_eq(sh5_evstack_push(&st, 1, SH5EV_F_MPI, 10, 0), 0);
	ck_assert_int_eq(sh5_evstack_push(&st, 2, 0, 20, 1), 0);
	ck_assert_int_eq(sh5_evstack_push(&st, 3, SH5EV_F_MPI, 30, 2), 0);
	ck_assert_uint_eq(st.nmpi, 2);
	ck_assert_int_eq(sh5_evstack_pop(&st, 9, &e), 0);
	ck_assert_int_eq(sh5_evstack_pop(&st, 2, &e), 1);
	ck_assert_int_eq(e.t, 20);
	ck_assert_uint_eq(st.n, 1);
	ck_assert_uint_eq(st.nmpi, 1);
	ck_assert_uint_eq(st.dropped, 2);
	ck_assert_int_eq(sh5_evstack_pop(&st, 1, &e), 1);
	ck_assert_uint_eq(st.n, 0);
	ck_assert_uint_eq(st.nmpi, 0);
	sh5_evstack_free(&st);
}
END_TEST

/* Call durations with nesting; counters "MPI.<name>" / "Region.<name>";
 * statistics per counter over all tasks. */
START_TEST(test_evcounters_nested)
{
	struct sh5_error err;
	struct sh5_evstats *st;
	size_t i;
	int found = 0;

	setup(2);
	ENTER(0, 0, R_WORK);
	ENTER(0, 1, R_INNER);
	EXIT(0, 3, R_INNER);
	ENTER(0, 4, R_SEND);
	EXIT(0, 5, R_SEND);
	EXIT(0, 10, R_WORK);
	ENTER(1, 0, R_WORK);
	EXIT(1, 20, R_WORK);
	EXIT(1, 21, R_WORK);	/* ignored */
	st = sh5_evstats_build(&step, &err);
	ck_assert_msg(st != NULL, "%s", err.text);
	ck_assert_uint_eq(sh5_evstats_count(st), 3);
	ck_assert_uint_eq(sh5_evstats_calls(st), 4);
	for (i = 0; i < sh5_evstats_count(st); i++) {
		const struct sh5_runstats *rs = sh5_evstats_stats(st, i);
		const char *n = sh5_evstats_name(st, i);

		if (!strcmp(n, "Region.work")) {
			ck_assert_uint_eq(sh5_runstats_count(rs), 2);
			ck_assert_double_eq_tol(sh5_runstats_mean(rs), 0.015,
						EPS);
			found++;
		} else if (!strcmp(n, "Region.inner")) {
			ck_assert_double_eq_tol(sh5_runstats_mean(rs), 0.002,
						EPS);
			found++;
		} else if (!strcmp(n, "MPI.MPI_Send")) {
			ck_assert_double_eq_tol(sh5_runstats_mean(rs), 0.001,
						EPS);
			found++;
		}
	}
	ck_assert_int_eq(found, 3);
	sh5_evstats_free(st);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("evlb");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_evlb_phases_from_marks);
	tcase_add_test(tc, test_evlb_match_in_order);
	tcase_add_test(tc, test_evlb_collectives);
	tcase_add_test(tc, test_evlb_objects);
	tcase_add_test(tc, test_evlb_windows);
	tcase_add_test(tc, test_evlb_too_many_phases);
	tcase_add_test(tc, test_evlb_too_many_cells);
	tcase_add_test(tc, test_evstack_unclosed);
	tcase_add_test(tc, test_evcounters_nested);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int nf;

	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? EXIT_FAILURE : EXIT_SUCCESS;
}
