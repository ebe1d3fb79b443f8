/*
 * sh5_mpitest.c - a plain MPI program for the tests of the preload library
 * libsh5mpi (tests/tools/mpi_preload.sh) and the end-to-end tests.
 *
 *     sh5_mpitest [-t] [-n ITERATIONS] [-w MS] [-j JSON]
 *
 * -t: start with MPI_Init_thread(MPI_THREAD_FUNNELED), not MPI_Init.
 * -w: each iteration first computes for MS milliseconds on even ranks and
 * 2 x MS on odd ones (an imbalance for the load-balancing exports; it also
 * makes the step long enough to be sampled).
 *
 * Each iteration: MPI_Pcontrol(1) (a phase mark), a ring of MPI_Send /
 * MPI_Recv, a non-blocking exchange with both neighbours (Isend, Irecv,
 * then Waitall, Testall, Waitany, Waitsome, Testany or Testsome), messages
 * to rank 0 (Send, Ssend, Issend or Bsend) received with MPI_ANY_SOURCE /
 * MPI_ANY_TAG (Recv, Irecv + Wait, Irecv + Waitsome),
 * every collective operation libsh5mpi records (the rooted ones with
 * changing roots), and work in communicators from MPI_Comm_split (even /
 * odd ranks) and MPI_Comm_dup; in the first, also in communicators from
 * MPI_Cart_create, MPI_Cart_sub, MPI_Comm_split_type, MPI_Comm_create and
 * MPI_Comm_create_group; in the second, the rarer calls (extras()).
 * Rank 0 prints one deterministic line (a checksum of everything
 * received) and, with -j, writes a JSON file of
 * what the ranks sent: p2p messages and bytes per (from, to) and phase,
 * collective calls per operation and rank, the communicators each rank
 * was rank 0 of, the world size.  With one
 * rank there are no p2p messages.  It calls sh5_ev_region/enter/exit when
 * they are linked in (weak).  Exit 0, 1 on a wrong result, 2 on usage.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

int sh5_ev_region(const char *name) __attribute__((weak));
void sh5_ev_enter(int region) __attribute__((weak));
void sh5_ev_exit(int region) __attribute__((weak));

/* The operations, in the order of enum sh5ev_op (1..11). */
enum op { BARRIER, BCAST, SCATTER, GATHER, REDUCE, ALLREDUCE, ALLGATHER,
	  ALLTOALL, REDUCE_SCATTER, SCAN, EXSCAN, NOPS };
static const char *const op_names[NOPS] = {
	"barrier", "bcast", "scatter", "gather", "reduce", "allreduce",
	"allgather", "alltoall", "reduce_scatter", "scan", "exscan"
};

static int rank, size, iters = 3;
static uint64_t coll[NOPS + 1];	/* my calls per operation, made */
static uint64_t *sent;		/* [phase][to][2]: messages, bytes */
static uint64_t sum;		/* checksum of what I received */
static uint64_t wildcards;	/* wildcard receives (rank 0) */
static uint64_t made;		/* communicators I am rank 0 of */
static long work_ms;		/* -w: compute per iteration */

/* Busy for ms milliseconds (not a sleep: the load is CPU time). */
static void work(long ms)
{
	struct timespec a, b;
	volatile double x = 1.0;

	clock_gettime(CLOCK_MONOTONIC, &a);
	do {
		int i;

		for (i = 0; i < 10000; i++)
			x = x * 1.0000001 + 1e-9;
		clock_gettime(CLOCK_MONOTONIC, &b);
	} while ((b.tv_sec - a.tv_sec) * 1000 +
			 (b.tv_nsec - a.tv_nsec) / 1000000 < ms);
}
static int threaded;		/* -t: MPI_Init_thread */

/* Count comm in `made` when I am its rank 0. */
static void count_made(MPI_Comm comm)
{
	int r;

	if (comm == MPI_COMM_NULL)
		return;
	MPI_Comm_rank(comm, &r);
	if (r == 0)
		made++;
}

static void fail(const char *what)
{
	fprintf(stderr, "sh5_mpitest: rank %d: %s\n", rank, what);
	MPI_Abort(MPI_COMM_WORLD, 1);
}

/* Order-independent: wildcard receives arrive in any order. */
static void mix(uint64_t v)
{
	sum += ((v ^ (v >> 7)) + 0x9e3779b97f4a7c15ull) * 0x100000001b3ull;
}

/* Count a message of n ints to world rank `to` in phase `phase`. */
static void count_send(int phase, int to, int n)
{
	uint64_t *p = sent + ((size_t)phase * size + to) * 2;

	p[0]++;
	p[1] += (uint64_t)n * sizeof(int);
}

/* A message: n ints derived from (from, to, it, tag). */
static void fill(int *buf, int n, int from, int to, int it, int tag)
{
	int i;

	for (i = 0; i < n; i++)
		buf[i] = from * 1000003 + to * 10007 + it * 101 + tag * 7 + i;
}

static void check(const int *buf, int n, int from, int to, int it, int tag)
{
	int i;

	for (i = 0; i < n; i++)
		if (buf[i] != from * 1000003 + to * 10007 + it * 101 +
				      tag * 7 + i)
			fail("received data differs from what was sent");
	for (i = 0; i < n; i++)
		mix((uint64_t)(unsigned)buf[i]);
}

#define MAXN 4096
/* MPI_Bsend's buffer: one message at a time. */
#define BSEND_SIZE (4 * (MAXN * (int)sizeof(int) + MPI_BSEND_OVERHEAD))
static void *bsend_buf;

static int msglen(int from, int to, int it)
{
	return 16 + (from * 7 + to * 3 + it * 5) % 200;
}

/* The ring: even ranks send first, odd ranks receive first. */
static void ring(int it, int phase)
{
	static int sbuf[MAXN], rbuf[MAXN];
	int right = (rank + 1) % size, left = (rank + size - 1) % size;
	int ns = msglen(rank, right, it), nr = msglen(left, rank, it);
	int k;

	fill(sbuf, ns, rank, right, it, 1);
	for (k = 0; k < 2; k++) {
		if ((k == 0) == (rank % 2 == 0)) {
			MPI_Send(sbuf, ns, MPI_INT, right, 1, MPI_COMM_WORLD);
			count_send(phase, right, ns);
		} else {
			MPI_Status st;

			MPI_Recv(rbuf, nr, MPI_INT, left, 1, MPI_COMM_WORLD,
				 &st);
			check(rbuf, nr, left, rank, it, 1);
		}
	}
}

/* Both neighbours, non-blocking; the completion call varies. */
static void exchange(int it, int phase)
{
	static int sbuf[2][MAXN], rbuf[2][MAXN];
	int right = (rank + 1) % size, left = (rank + size - 1) % size;
	int to[2] = { right, left }, from[2] = { left, right };
	int tag[2] = { 10, 11 }, n, i, done, idx, out, ids[4];
	MPI_Request req[4];
	MPI_Status st[4];

	for (i = 0; i < 2; i++) {
		n = msglen(from[i], rank, it + 50);
		MPI_Irecv(rbuf[i], n, MPI_INT, from[i], tag[i],
			  MPI_COMM_WORLD, &req[i]);
	}
	for (i = 0; i < 2; i++) {
		n = msglen(rank, to[i], it + 50);
		fill(sbuf[i], n, rank, to[i], it, tag[i]);
		MPI_Isend(sbuf[i], n, MPI_INT, to[i], tag[i], MPI_COMM_WORLD,
			  &req[2 + i]);
		count_send(phase, to[i], n);
	}
	switch (it % 6) {
	case 0:
		MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
		break;
	case 1:
		do
			MPI_Testall(4, req, &done, st);
		while (!done);
		break;
	case 2:
		for (i = 0; i < 4; i++)
			MPI_Waitany(4, req, &idx, MPI_STATUS_IGNORE);
		break;
	case 3:
		for (done = 0; done < 4; done += out)
			MPI_Waitsome(4, req, &out, ids, st);
		break;
	case 4:
		for (done = 0; done < 4;) {
			MPI_Testany(4, req, &idx, &i, MPI_STATUS_IGNORE);
			if (i && idx != MPI_UNDEFINED)
				done++;
		}
		break;
	default:
		for (done = 0; done < 4; done += out)
			MPI_Testsome(4, req, &out, ids, MPI_STATUSES_IGNORE);
		break;
	}
	for (i = 0; i < 2; i++)
		check(rbuf[i], msglen(from[i], rank, it + 50), from[i], rank,
		      it, tag[i]);
}

/* Every rank but 0 sends one message; rank 0 takes them in any order. */
static void wildcard(int it, int phase)
{
	static int buf[MAXN], rb[64][MAXN];
	MPI_Request req[64];
	MPI_Status st;
	int i, n, got, out, ids[64];
	MPI_Status sts[64];

	if (rank != 0) {
		n = msglen(rank, 0, it + 90);
		fill(buf, n, rank, 0, it, 100 + rank);
		/* each kind of send in turn */
		switch ((it + rank) % 4) {
		case 0:
			MPI_Send(buf, n, MPI_INT, 0, 100 + rank,
				 MPI_COMM_WORLD);
			break;
		case 1:
			MPI_Ssend(buf, n, MPI_INT, 0, 100 + rank,
				  MPI_COMM_WORLD);
			break;
		case 2: {
			MPI_Request r;

			MPI_Issend(buf, n, MPI_INT, 0, 100 + rank,
				   MPI_COMM_WORLD, &r);
			MPI_Wait(&r, MPI_STATUS_IGNORE);
			break;
		}
		default:
			MPI_Bsend(buf, n, MPI_INT, 0, 100 + rank,
				  MPI_COMM_WORLD);
			break;
		}
		count_send(phase, 0, n);
		return;
	}
	if (size - 1 > 64 || it % 3 == 0 || it % 3 == 1) {
		for (i = 1; i < size; i++) {
			if (it % 3 == 1) {
				MPI_Request r;

				MPI_Irecv(buf, MAXN, MPI_INT, MPI_ANY_SOURCE,
					  MPI_ANY_TAG, MPI_COMM_WORLD, &r);
				MPI_Wait(&r, &st);
			} else {
				MPI_Recv(buf, MAXN, MPI_INT, MPI_ANY_SOURCE,
					 MPI_ANY_TAG, MPI_COMM_WORLD, &st);
			}
			MPI_Get_count(&st, MPI_INT, &n);
			if (st.MPI_TAG != 100 + st.MPI_SOURCE)
				fail("wildcard receive: wrong tag");
			check(buf, n, st.MPI_SOURCE, 0, it, st.MPI_TAG);
			wildcards++;
		}
		return;
	}
	for (i = 1; i < size; i++)
		MPI_Irecv(rb[i - 1], MAXN, MPI_INT, MPI_ANY_SOURCE,
			  MPI_ANY_TAG, MPI_COMM_WORLD, &req[i - 1]);
	for (got = 0; got < size - 1; got += out) {
		MPI_Waitsome(size - 1, req, &out, ids, sts);
		for (i = 0; i < out; i++) {
			MPI_Get_count(&sts[i], MPI_INT, &n);
			check(rb[ids[i]], n, sts[i].MPI_SOURCE, 0, it,
			      sts[i].MPI_TAG);
			wildcards++;
		}
	}
}

/* Every collective operation once on comm (rank r of n), roots moving
 * with it. */
static void collectives(MPI_Comm comm, int it)
{
	int r, n, i, root, *a, *b, *cnt, *dis, total;
	double d[4], e[4];

	MPI_Comm_rank(comm, &r);
	MPI_Comm_size(comm, &n);
	a = calloc((size_t)n * 8, sizeof(int));
	b = calloc((size_t)n * 8, sizeof(int));
	cnt = calloc((size_t)n, sizeof(int));
	dis = calloc((size_t)n, sizeof(int));
	if (!a || !b || !cnt || !dis)
		fail("out of memory");
	for (i = 0, total = 0; i < n; i++) {
		cnt[i] = 1 + (i + it) % 3;
		dis[i] = total;
		total += cnt[i];
	}
	for (i = 0; i < n * 8; i++)
		a[i] = r * 31 + i + it;

	MPI_Barrier(comm);
	coll[BARRIER]++;
	root = it % n;
	MPI_Bcast(a, 4, MPI_INT, root, comm);
	coll[BCAST]++;
	mix((uint64_t)a[3]);
	root = (it + 1) % n;
	MPI_Scatter(a, 2, MPI_INT, b, 2, MPI_INT, root, comm);
	coll[SCATTER]++;
	mix((uint64_t)b[1]);
	MPI_Scatterv(a, cnt, dis, MPI_INT, b, cnt[r], MPI_INT, root, comm);
	coll[SCATTER]++;
	mix((uint64_t)b[0]);
	root = (it + 2) % n;
	MPI_Gather(a, 2, MPI_INT, b, 2, MPI_INT, root, comm);
	coll[GATHER]++;
	if (r == root)
		mix((uint64_t)b[2 * n - 1]);
	MPI_Gatherv(a, cnt[r], MPI_INT, b, cnt, dis, MPI_INT, root, comm);
	coll[GATHER]++;
	if (r == root)
		mix((uint64_t)b[total - 1]);
	for (i = 0; i < 4; i++)
		d[i] = r + i * 0.5 + it;
	MPI_Reduce(d, e, 4, MPI_DOUBLE, MPI_SUM, root, comm);
	coll[REDUCE]++;
	if (r == root)
		mix((uint64_t)(e[3] * 2));
	if (it % 2) {
		MPI_Allreduce(MPI_IN_PLACE, d, 4, MPI_DOUBLE, MPI_MAX, comm);
		mix((uint64_t)(d[2] * 2));
	} else {
		MPI_Allreduce(d, e, 4, MPI_DOUBLE, MPI_MAX, comm);
		mix((uint64_t)(e[2] * 2));
	}
	coll[ALLREDUCE]++;
	MPI_Allgather(a, 1, MPI_INT, b, 1, MPI_INT, comm);
	coll[ALLGATHER]++;
	mix((uint64_t)b[n - 1]);
	MPI_Allgatherv(a, cnt[r], MPI_INT, b, cnt, dis, MPI_INT, comm);
	coll[ALLGATHER]++;
	mix((uint64_t)b[total - 1]);
	MPI_Alltoall(a, 2, MPI_INT, b, 2, MPI_INT, comm);
	coll[ALLTOALL]++;
	mix((uint64_t)b[2 * n - 1]);
	for (i = 0; i < n; i++)
		dis[i] = i * 8;
	for (i = 0; i < n; i++)
		cnt[i] = 1 + (r + i) % 4;
	{
		int rc[n], rd[n];

		for (i = 0; i < n; i++) {
			rc[i] = 1 + (i + r) % 4;
			rd[i] = i * 8;
		}
		MPI_Alltoallv(a, cnt, dis, MPI_INT, b, rc, rd, MPI_INT, comm);
		coll[ALLTOALL]++;
		mix((uint64_t)b[(n - 1) * 8]);
		for (i = 0; i < n; i++)
			rc[i] = 1;
		MPI_Reduce_scatter(a, b, rc, MPI_INT, MPI_SUM, comm);
		coll[REDUCE_SCATTER]++;
		mix((uint64_t)b[0]);
	}
	MPI_Scan(a, b, 2, MPI_INT, MPI_SUM, comm);
	coll[SCAN]++;
	mix((uint64_t)b[1]);
	b[0] = b[1] = 0;
	MPI_Exscan(a, b, 2, MPI_INT, MPI_SUM, comm);
	coll[EXSCAN]++;
	if (r > 0)
		mix((uint64_t)b[1]);
	free(a);
	free(b);
	free(cnt);
	free(dis);
}

/* Work in sub-communicators: even / odd ranks, and a duplicate. */
/*
 * The rarer calls (second iteration, two ranks or more): MPI_Rsend and
 * MPI_Irsend to a posted receive, MPI_Ibsend, MPI_Request_free of a send,
 * a cancelled receive (no RECV), an intercommunicator (not recorded: a
 * Barrier on it is no collective in the report) merged into an
 * intracommunicator, and the graph constructors.
 */
static void extras(int it, int phase)
{
	int right = (rank + 1) % size, left = (rank + size - 1) % size;
	int sv[4] = { rank, it, 1, 2 }, rv[4][4], dummy, i, flag, top[2];
	int edges[2] = { left, right }, deg = 2, wts[2] = { 1, 1 };
	MPI_Request req[4], sreq, cr;
	MPI_Status st;
	MPI_Comm half, inter, merged, graph, dg, dga;

	/* Rsend / Irsend need the receive posted: a barrier between */
	MPI_Irecv(rv[0], 4, MPI_INT, left, 20, MPI_COMM_WORLD, &req[0]);
	MPI_Irecv(rv[1], 4, MPI_INT, left, 21, MPI_COMM_WORLD, &req[1]);
	MPI_Irecv(rv[2], 4, MPI_INT, left, 22, MPI_COMM_WORLD, &req[2]);
	MPI_Irecv(rv[3], 4, MPI_INT, left, 23, MPI_COMM_WORLD, &req[3]);
	MPI_Irecv(&dummy, 1, MPI_INT, left, 99, MPI_COMM_WORLD, &cr);
	MPI_Barrier(MPI_COMM_WORLD);
	coll[BARRIER]++;
	MPI_Rsend(sv, 4, MPI_INT, right, 20, MPI_COMM_WORLD);
	MPI_Irsend(sv, 4, MPI_INT, right, 21, MPI_COMM_WORLD, &sreq);
	MPI_Wait(&sreq, MPI_STATUS_IGNORE);
	MPI_Ibsend(sv, 4, MPI_INT, right, 22, MPI_COMM_WORLD, &sreq);
	MPI_Wait(&sreq, MPI_STATUS_IGNORE);
	MPI_Isend(sv, 4, MPI_INT, right, 23, MPI_COMM_WORLD, &sreq);
	MPI_Request_free(&sreq);
	for (i = 0; i < 4; i++)
		count_send(phase, right, 4);
	MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
	for (i = 0; i < 4; i++)
		mix((uint64_t)rv[i][0] + (uint64_t)i);
	MPI_Cancel(&cr);
	MPI_Wait(&cr, &st);
	MPI_Test_cancelled(&st, &flag);
	if (!flag)
		fail("receive not cancelled");
	/* the Isend freed above has been received: safe to go on */
	MPI_Barrier(MPI_COMM_WORLD);
	coll[BARRIER]++;

	/* halves of even and odd ranks, ordered by world rank; leaders:
	 * world ranks 0 and 1 */
	MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
	count_made(half);
	MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank % 2 ? 0 : 1, 30,
			     &inter);
	MPI_Barrier(inter);	/* not recorded: not counted */
	MPI_Intercomm_merge(inter, rank % 2, &merged);
	count_made(merged);
	top[0] = rank;
	MPI_Allreduce(top, top + 1, 1, MPI_INT, MPI_MAX, merged);
	coll[ALLREDUCE]++;
	mix((uint64_t)top[1]);

	/* graphs: a ring, each rank its own node (no reorder) */
	{
		int n = size, *gi = malloc(sizeof(int) * (size_t)n);
		int *ge = malloc(sizeof(int) * 2 * (size_t)n);

		if (!gi || !ge)
			fail("out of memory");
		for (i = 0; i < n; i++) {
			gi[i] = 2 * (i + 1);
			ge[2 * i] = (i + n - 1) % n;
			ge[2 * i + 1] = (i + 1) % n;
		}
		MPI_Graph_create(MPI_COMM_WORLD, n, gi, ge, 0, &graph);
		count_made(graph);
		free(gi);
		free(ge);
	}
	MPI_Dist_graph_create(MPI_COMM_WORLD, 1, &rank, &deg, edges, wts,
			      MPI_INFO_NULL, 0, &dg);
	count_made(dg);
	MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, edges, wts, 2,
				       edges, wts, MPI_INFO_NULL, 0, &dga);
	count_made(dga);
	MPI_Barrier(dga);
	coll[BARRIER]++;
	MPI_Comm_free(&dga);
	MPI_Comm_free(&dg);
	MPI_Comm_free(&graph);
	MPI_Comm_free(&merged);
	MPI_Comm_free(&inter);
	MPI_Comm_free(&half);
}

static void subcomms(int it, int phase)
{
	MPI_Comm half, dup;
	int r, n, to, from, sv[8], rv[8], i, v;
	MPI_Status st;

	MPI_Comm_split(MPI_COMM_WORLD, rank % 2, size - rank, &half);
	count_made(half);
	MPI_Comm_rank(half, &r);
	MPI_Comm_size(half, &n);
	to = (r + 1) % n;
	from = (r + n - 1) % n;
	for (i = 0; i < 8; i++)
		sv[i] = rank * 100 + i + it;
	if (it % 2) {
		memcpy(rv, sv, sizeof(rv));
		MPI_Sendrecv_replace(rv, 8, MPI_INT, to, 5, from, 5, half,
				     MPI_STATUS_IGNORE);
	} else {
		MPI_Sendrecv(sv, 8, MPI_INT, to, 5, rv, 8, MPI_INT, from, 5,
			     half, &st);
	}
	{
		/* the world rank of `to` in half: ranks sorted by key
		 * size - rank, so descending world rank of my parity */
		MPI_Group hg, wg;
		int w;

		MPI_Comm_group(half, &hg);
		MPI_Comm_group(MPI_COMM_WORLD, &wg);
		MPI_Group_translate_ranks(hg, 1, &to, wg, &w);
		MPI_Group_free(&hg);
		MPI_Group_free(&wg);
		count_send(phase, w, 8);
	}
	mix((uint64_t)rv[7]);
	v = rank + it;
	MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_SUM, half);
	coll[ALLREDUCE]++;
	mix((uint64_t)v);
	if (it % 2)
		MPI_Comm_dup_with_info(half, MPI_INFO_NULL, &dup);
	else
		MPI_Comm_dup(half, &dup);
	count_made(dup);
	collectives(dup, it + 7);
	MPI_Comm_free(&dup);
	MPI_Comm_free(&half);
}

/* The other constructors: a periodic 1-D Cartesian grid of all ranks and
 * its MPI_Cart_sub, the ranks of this node, and the first half of the
 * ranks from MPI_Comm_create and MPI_Comm_create_group. */
static void topologies(int it, int phase)
{
	int dims[1] = { size }, periods[1] = { 1 }, remain[1] = { 1 };
	int range[1][3] = { { 0, (size + 1) / 2 - 1, 1 } };
	int r, n, src, dst, w, v[4], u[4], i;
	MPI_Comm cart, line, node, part, grp = MPI_COMM_NULL;
	MPI_Group wg, g;
	MPI_Status st;

	MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &cart);
	count_made(cart);
	MPI_Cart_sub(cart, remain, &line);
	count_made(line);
	MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0,
			    MPI_INFO_NULL, &node);
	count_made(node);
	MPI_Comm_group(MPI_COMM_WORLD, &wg);
	MPI_Group_range_incl(wg, 1, range, &g);
	MPI_Comm_create(MPI_COMM_WORLD, g, &part);
	count_made(part);
	if (rank < (size + 1) / 2) {
		MPI_Comm_create_group(MPI_COMM_WORLD, g, 7, &grp);
		count_made(grp);
	}

	/* a shift by 2 along the grid (world ranks: no reorder) */
	MPI_Cart_shift(cart, 0, 2, &src, &dst);
	for (i = 0; i < 4; i++)
		v[i] = rank + i + it;
	MPI_Sendrecv(v, 4, MPI_INT, dst, 3, u, 4, MPI_INT, src, 3, cart, &st);
	count_send(phase, dst, 4);
	mix((uint64_t)u[3]);
	/* a Bcast from the last rank of the line, not rank 0 */
	MPI_Comm_size(line, &n);
	MPI_Comm_rank(line, &r);
	v[0] = r == n - 1 ? 1000 + it : 0;
	MPI_Bcast(v, 1, MPI_INT, n - 1, line);
	coll[BCAST]++;
	mix((uint64_t)v[0]);
	v[0] = 1;
	MPI_Allreduce(MPI_IN_PLACE, v, 1, MPI_INT, MPI_SUM, node);
	coll[ALLREDUCE]++;
	if (part != MPI_COMM_NULL) {
		MPI_Barrier(part);
		coll[BARRIER]++;
		MPI_Comm_free(&part);
	}
	if (grp != MPI_COMM_NULL) {
		/* root: world rank 0 is rank 0 of grp; use the last one */
		MPI_Comm_size(grp, &n);
		v[0] = rank;
		MPI_Reduce(v, u, 1, MPI_INT, MPI_MAX, n - 1, grp);
		coll[REDUCE]++;
		MPI_Comm_rank(grp, &r);
		if (r == n - 1) {
			w = (size + 1) / 2 - 1;
			if (u[0] != w)
				fail("reduce on MPI_Comm_create_group");
			mix((uint64_t)u[0]);
		}
		MPI_Comm_free(&grp);
	}
	MPI_Group_free(&g);
	MPI_Group_free(&wg);
	MPI_Comm_free(&node);
	MPI_Comm_free(&line);
	MPI_Comm_free(&cart);
}

static int write_json(const char *path, const uint64_t *allsent,
		      const uint64_t *allcoll)
{
	char tmp[4096];
	FILE *f;
	int p, a, b, o, first;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -1;
	f = fopen(tmp, "w");
	if (!f)
		return -1;
	fprintf(f, "{\n  \"world_size\": %d,\n  \"iterations\": %d,\n",
		size, iters);
	fprintf(f, "  \"wildcard_receives\": %" PRIu64 ",\n", wildcards);
	fprintf(f, "  \"init_thread\": %s,\n", threaded ? "true" : "false");
	fprintf(f, "  \"p2p\": [");
	first = 1;
	for (a = 0; a < size; a++)
		for (p = 0; p <= iters; p++)
			for (b = 0; b < size; b++) {
				const uint64_t *x = allsent +
					(((size_t)a * (iters + 1) + p) * size +
					 b) * 2;

				if (!x[0])
					continue;
				fprintf(f,
					"%s\n    {\"from\": %d, \"to\": %d, "
					"\"phase\": %d, \"messages\": %" PRIu64
					", \"bytes\": %" PRIu64 "}",
					first ? "" : ",", a, b, p, x[0], x[1]);
				first = 0;
			}
	fprintf(f, "\n  ],\n  \"collectives\": {");
	for (o = 0; o < NOPS; o++) {
		fprintf(f, "%s\n    \"%s\": [", o ? "," : "", op_names[o]);
		for (a = 0; a < size; a++)
			fprintf(f, "%s%" PRIu64, a ? ", " : "",
				allcoll[(size_t)a * (NOPS + 1) + o]);
		fprintf(f, "]");
	}
	fprintf(f, "\n  },\n  \"communicators_made\": [");
	for (a = 0; a < size; a++)
		fprintf(f, "%s%" PRIu64, a ? ", " : "",
			allcoll[(size_t)a * (NOPS + 1) + NOPS]);
	fprintf(f, "]\n}\n");
	if (fflush(f) != 0 || ferror(f)) {
		fclose(f);
		unlink(tmp);
		return -1;
	}
	if (fclose(f) != 0 || rename(tmp, path) != 0) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *json = NULL;
	uint64_t *allsent = NULL, *allcoll = NULL, total;
	int c, it, region = -1;
	size_t nsent;

	for (c = 1; c < argc; c++)
		if (strcmp(argv[c], "-t") == 0)
			threaded = 1;
	if (threaded) {
		MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &c);
	} else {
		MPI_Init(&argc, &argv);
	}
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	while ((c = getopt(argc, argv, "n:j:tw:")) != -1) {
		char *end;

		switch (c) {
		case 'n':
			errno = 0;
			iters = (int)strtol(optarg, &end, 10);
			if (errno || *end || iters < 1 || iters > 100000)
				goto usage;
			break;
		case 'j':
			json = optarg;
			break;
		case 'w':
			errno = 0;
			work_ms = strtol(optarg, &end, 10);
			if (errno || *end || work_ms < 0 || work_ms > 60000)
				goto usage;
			break;
		case 't':
			break;
		default:
			goto usage;
		}
	}
	if (optind != argc)
		goto usage;
	if (sh5_ev_region)
		region = sh5_ev_region("mpitest_iteration");
	bsend_buf = malloc(BSEND_SIZE);
	if (!bsend_buf)
		fail("out of memory");
	MPI_Buffer_attach(bsend_buf, BSEND_SIZE);
	nsent = (size_t)(iters + 1) * size * 2;
	sent = calloc(nsent, sizeof(*sent));
	if (!sent)
		fail("out of memory");
	for (it = 0; it < iters; it++) {
		MPI_Pcontrol(1);
		if (sh5_ev_enter)
			sh5_ev_enter(region);
		if (work_ms)
			work(work_ms * (1 + rank % 2));
		if (size > 1) {
			ring(it, it + 1);
			exchange(it, it + 1);
			wildcard(it, it + 1);
		}
		collectives(MPI_COMM_WORLD, it);
		subcomms(it, it + 1);
		if (it == 0)
			topologies(it, it + 1);
		if (it == 1 && size > 1)
			extras(it, it + 1);
		if (sh5_ev_exit)
			sh5_ev_exit(region);
	}
	/* The report: two gathers and one reduce, counted first. */
	coll[GATHER] += 2;
	coll[REDUCE] += 1;
	if (rank == 0) {
		allsent = calloc(nsent * size, sizeof(*allsent));
		allcoll = calloc((size_t)(NOPS + 1) * size,
				 sizeof(*allcoll));
		if (!allsent || !allcoll)
			fail("out of memory");
	}
	MPI_Gather(sent, (int)nsent, MPI_UINT64_T, allsent, (int)nsent,
		   MPI_UINT64_T, 0, MPI_COMM_WORLD);
	coll[NOPS] = made;
	MPI_Gather(coll, NOPS + 1, MPI_UINT64_T, allcoll, NOPS + 1,
		   MPI_UINT64_T, 0, MPI_COMM_WORLD);
	MPI_Reduce(&sum, &total, 1, MPI_UINT64_T, MPI_BXOR, 0,
		   MPI_COMM_WORLD);
	if (rank == 0) {
		printf("sh5_mpitest: ranks %d iterations %d checksum "
		       "%016" PRIx64 "\n", size, iters, total);
		if (json && write_json(json, allsent, allcoll) < 0) {
			fprintf(stderr, "sh5_mpitest: %s: cannot write: %s\n",
				json, strerror(errno));
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
	}
	MPI_Buffer_detach(&bsend_buf, &c);
	free(bsend_buf);
	free(allsent);
	free(allcoll);
	free(sent);
	MPI_Finalize();
	return 0;
usage:
	if (rank == 0)
		fprintf(stderr, "usage: sh5_mpitest [-t] [-n ITERATIONS] "
				"[-w MS] [-j JSON]\n");
	MPI_Finalize();
	return 2;
}
