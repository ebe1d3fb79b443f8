/*
 * sh5_tracegen - write a synthetic event trace (CSV v1) with known truth.
 *
 * Simulates N processes on M nodes (process p on node p % M).  Every node
 * has one clock:
 *
 *   C(T) = T + offset + drift * (T - T0) + A * sin(2 pi (T - T0) / P + phi)
 *
 * (constant offset, linear drift, and a non-linear wobble).  The program
 * does internal work, point-to-point messages (some answered, so that
 * there are round trips) and collective operations of every class on
 * communicator 0 (all) and 1 (the even ranks).  True message latencies
 * are at least --lat-intra-ns / --lat-inter-ns.  Each node measures its
 * offset (reference minus local, with uniform noise of +-noise) every
 * --meas-interval-ns of true time, starting before the first event and
 * ending after the last, and every location of the node carries these
 * OFFSET lines.
 *
 * Output: the trace (-o), and the true time of every event line, one per
 * line in the same order (-t).  On stdout: a summary, including
 * "offset_error_bound_ns", the largest error the offset interpolation can
 * have on these clocks (noise + h^2/8 * max|C''|, + 1 ns rounding).
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T0 INT64_C(1800000000000000000)

struct opts {
	int nproc, nnode;
	long long events;
	unsigned long long seed;
	const char *out, *truth;
	double offset_max, drift_ppm, wobble, period, interval, noise;
	int64_t lat_intra, lat_inter, work_max;
	int offsets, mu_directives, node_directives;
};

struct clock {
	double offset, drift, amp, period, phase;
};

static uint64_t rng_state;

static uint64_t rnd(void)
{
	/* splitmix64 */
	uint64_t z = (rng_state += 0x9E3779B97F4A7C15ULL);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

static double urand(void)
{
	return (double)(rnd() >> 11) / 9007199254740992.0;
}

static int64_t irand(int64_t lo, int64_t hi)
{
	return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1));
}

/* Deterministic noise of measurement k of node n in [-1, 1]. */
static double mnoise(int n, long k, unsigned long long seed)
{
	uint64_t z = seed * 0x9E3779B97F4A7C15ULL + (uint64_t)n * 1000003u +
		     (uint64_t)k * 0xD1B54A32D192ED03ULL;

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	z ^= z >> 31;
	return 2.0 * ((double)(z >> 11) / 9007199254740992.0) - 1.0;
}

static struct opts O;
static struct clock *clk;
static int64_t *tnow;		/* true time per process */
static int64_t *next_meas;	/* per process: next measurement time */
static long *meas_k;
static FILE *fo, *ft;
static long long nev;

static int64_t local_of(int node, int64_t T)
{
	const struct clock *c = &clk[node];
	double x = (double)(T - T0);

	return T + llround(c->offset + c->drift * x +
			   c->amp * sin(2 * M_PI * x / c->period + c->phase));
}

static int node_of(int p)
{
	return p % O.nnode;
}

static void emit_offsets(int p, int64_t T)
{
	int n = node_of(p);

	if (!O.offsets)
		return;
	while (next_meas[p] <= T) {
		int64_t Tm = next_meas[p], L = local_of(n, Tm);
		int64_t off = (Tm - L) +
			      llround(O.noise * mnoise(n, meas_k[p], O.seed));

		fprintf(fo, "%d,%" PRId64 ",OFFSET,%" PRId64 ",%" PRId64
			",,,\n", p, L, off, (int64_t)(2 * O.noise + 100));
		meas_k[p]++;
		next_meas[p] += (int64_t)O.interval;
	}
}

static void emit(int p, int64_t T, const char *rest)
{
	emit_offsets(p, T);
	fprintf(fo, "%d,%" PRId64 ",%s\n", p, local_of(node_of(p), T), rest);
	fprintf(ft, "%" PRId64 "\n", T);
	nev++;
}

static int64_t lat(int a, int b)
{
	int64_t base = node_of(a) == node_of(b) ? O.lat_intra : O.lat_inter;

	return base + irand(0, base);
}

static int64_t work(void)
{
	return irand(1, O.work_max);
}

static void p2p(int a, int b, int tag)
{
	char buf[96];
	int64_t ts, tr, l;

	tnow[a] += work();
	ts = tnow[a];
	snprintf(buf, sizeof(buf), "SEND,%d,%d,0,,%d", b, tag, 64 * tag);
	emit(a, ts, buf);
	tr = tnow[b] + work();
	l = lat(a, b);
	if (tr < ts + l)
		tr = ts + l;
	tnow[b] = tr;
	snprintf(buf, sizeof(buf), "RECV,%d,%d,0,,%d", a, tag, 64 * tag);
	emit(b, tr, buf);
}

static const char *const ops[] = {
	"BARRIER", "BCAST", "SCATTER", "GATHER", "REDUCE", "ALLREDUCE",
	"ALLGATHER", "ALLTOALL", "REDUCE_SCATTER", "SCAN", "EXSCAN",
};

static void collective(int comm)
{
	int members[4096], n = 0, i, j, root = -1, rr = 0;
	int op = (int)irand(0, 10);
	const char *name = ops[op];
	int64_t b[4096], e[4096];
	char buf[96], rootbuf[16] = "";

	for (i = 0; i < O.nproc && n < 4096; i++)
		if (comm == 0 || i % 2 == 0)
			members[n++] = i;
	if (op >= 1 && op <= 4) {
		rr = (int)irand(0, n - 1);
		root = members[rr];
		snprintf(rootbuf, sizeof(rootbuf), "%d", root);
	}
	for (i = 0; i < n; i++)
		b[i] = tnow[members[i]] + work();
	for (i = 0; i < n; i++) {
		int64_t m = b[i] + irand(1, 50);

		/* the happened-before relations of the class */
		for (j = 0; j < n; j++) {
			int dep;
			int64_t v;

			if (op == 1 || op == 2)		/* 1-to-N */
				dep = j == rr && i != rr;
			else if (op == 3 || op == 4)	/* N-to-1 */
				dep = i == rr;
			else if (op == 9)		/* SCAN */
				dep = j <= i;
			else if (op == 10)		/* EXSCAN */
				dep = j < i;
			else
				dep = 1;
			if (!dep)
				continue;
			v = b[j] + (j == i ? 1 : lat(members[j], members[i]));
			if (v > m)
				m = v;
		}
		e[i] = m + irand(0, 200);
	}
	for (i = 0; i < n; i++) {
		snprintf(buf, sizeof(buf), "CBEGIN,%s,,%d,%s,%d", name, comm,
			 rootbuf, 8);
		emit(members[i], b[i], buf);
	}
	for (i = 0; i < n; i++) {
		snprintf(buf, sizeof(buf), "CEND,%s,,%d,%s,%d", name, comm,
			 rootbuf, 8);
		emit(members[i], e[i], buf);
		tnow[members[i]] = e[i];
	}
}

static void usage(FILE *f)
{
	fprintf(f,
"Usage: sh5_tracegen -o TRACE.csv -t TRUTH.txt [-n PROCS] [-m NODES]\n"
"         [-e EVENTS] [-s SEED] [--offset-max-ns X] [--drift-ppm X]\n"
"         [--wobble-ns X] [--period-ns X] [--meas-interval-ns X]\n"
"         [--noise-ns X] [--lat-intra-ns X] [--lat-inter-ns X]\n"
"         [--work-max-ns X] [--no-offsets] [--mu-directives]\n"
"         [--no-node-directives]\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "offset-max-ns", required_argument, NULL, 1 },
		{ "drift-ppm", required_argument, NULL, 2 },
		{ "wobble-ns", required_argument, NULL, 3 },
		{ "period-ns", required_argument, NULL, 4 },
		{ "meas-interval-ns", required_argument, NULL, 5 },
		{ "noise-ns", required_argument, NULL, 6 },
		{ "lat-intra-ns", required_argument, NULL, 7 },
		{ "lat-inter-ns", required_argument, NULL, 8 },
		{ "work-max-ns", required_argument, NULL, 9 },
		{ "no-offsets", no_argument, NULL, 10 },
		{ "mu-directives", no_argument, NULL, 11 },
		{ "no-node-directives", no_argument, NULL, 12 },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int c, p, n;
	int64_t tmax;
	double bound, curv = 0;
	char *buf;

	O.nproc = 8;
	O.nnode = 2;
	O.events = 10000;
	O.seed = 1;
	O.offset_max = 20e9;		/* up to 20 s */
	O.drift_ppm = 100;
	O.wobble = 5000;
	O.period = 10e6;		/* 10 ms */
	O.interval = 2.5e6;		/* 2.5 ms */
	O.noise = 400;
	O.lat_intra = 300;
	O.lat_inter = 1000;
	O.work_max = 20000;
	O.offsets = 1;
	O.node_directives = 1;
	while ((c = getopt_long(argc, argv, "o:t:n:m:e:s:h", lo, NULL)) != -1) {
		switch (c) {
		case 'o': O.out = optarg; break;
		case 't': O.truth = optarg; break;
		case 'n': O.nproc = (int)strtol(optarg, NULL, 10); break;
		case 'm': O.nnode = (int)strtol(optarg, NULL, 10); break;
		case 'e': O.events = strtoll(optarg, NULL, 10); break;
		case 's': O.seed = strtoull(optarg, NULL, 10); break;
		case 1: O.offset_max = strtod(optarg, NULL); break;
		case 2: O.drift_ppm = strtod(optarg, NULL); break;
		case 3: O.wobble = strtod(optarg, NULL); break;
		case 4: O.period = strtod(optarg, NULL); break;
		case 5: O.interval = strtod(optarg, NULL); break;
		case 6: O.noise = strtod(optarg, NULL); break;
		case 7: O.lat_intra = strtoll(optarg, NULL, 10); break;
		case 8: O.lat_inter = strtoll(optarg, NULL, 10); break;
		case 9: O.work_max = strtoll(optarg, NULL, 10); break;
		case 10: O.offsets = 0; break;
		case 11: O.mu_directives = 1; break;
		case 12: O.node_directives = 0; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!O.out || !O.truth || O.nproc < 2 || O.nproc > 4096 ||
	    O.nnode < 1 || O.nnode > O.nproc || O.events < 1 ||
	    O.work_max < 1 || O.interval < 1 || O.period < 1) {
		usage(stderr);
		return 2;
	}
	rng_state = O.seed;
	clk = calloc((size_t)O.nnode, sizeof(*clk));
	tnow = calloc((size_t)O.nproc, sizeof(*tnow));
	next_meas = calloc((size_t)O.nproc, sizeof(*next_meas));
	meas_k = calloc((size_t)O.nproc, sizeof(*meas_k));
	if (!clk || !tnow || !next_meas || !meas_k)
		return 1;
	for (n = 0; n < O.nnode; n++) {
		/* node 0 is the reference's neighbour: small offset */
		clk[n].offset = (2 * urand() - 1) * O.offset_max;
		clk[n].drift = (2 * urand() - 1) * O.drift_ppm * 1e-6;
		clk[n].amp = O.wobble * (0.5 + 0.5 * urand());
		clk[n].period = O.period * (0.7 + 0.6 * urand());
		clk[n].phase = 2 * M_PI * urand();
		{
			double w = 2 * M_PI / clk[n].period;
			double k = clk[n].amp * w * w;

			if (k > curv)
				curv = k;
		}
	}
	fo = fopen(O.out, "w");
	ft = fopen(O.truth, "w");
	if (!fo || !ft) {
		fprintf(stderr, "sh5_tracegen: %s\n", strerror(errno));
		return 1;
	}
	buf = malloc(1 << 20);
	if (buf)
		setvbuf(fo, buf, _IOFBF, 1 << 20);
	fprintf(fo, "#sh5-trace 1\n# generated by sh5_tracegen seed %llu: "
		"%d processes on %d nodes\n", O.seed, O.nproc, O.nnode);
	fprintf(fo, "#comm 1");
	for (p = 0; p < O.nproc; p += 2)
		fprintf(fo, " %d", p);
	fprintf(fo, "\n");
	if (O.node_directives) {
		for (n = 0; n < O.nnode; n++) {
			fprintf(fo, "#node node%d", n);
			for (p = n; p < O.nproc; p += O.nnode)
				fprintf(fo, " %d", p);
			fprintf(fo, "\n");
		}
	}
	if (O.mu_directives)
		fprintf(fo, "#mu %" PRId64 "\n#mu-intra %" PRId64 "\n",
			O.lat_inter, O.lat_intra);
	fprintf(fo, "\n");
	for (p = 0; p < O.nproc; p++) {
		tnow[p] = T0 + irand(1000, 5000);
		next_meas[p] = T0;
	}
	while (nev < O.events) {
		int r = (int)irand(0, 99);

		if (r < 45) {
			p = (int)irand(0, O.nproc - 1);
			tnow[p] += work();
			emit(p, tnow[p], "INT,,,,,");
		} else if (r < 90) {
			int a = (int)irand(0, O.nproc - 1);
			int b = (int)irand(0, O.nproc - 2), tag;

			if (b >= a)
				b++;
			tag = (int)irand(0, 3);
			p2p(a, b, tag);
			if (r < 70)
				p2p(b, a, tag);
		} else {
			collective(r < 95 ? 0 : 1);
		}
	}
	/* Bring every location to the same end, then the last offsets. */
	tmax = tnow[0];
	for (p = 0; p < O.nproc; p++)
		if (tnow[p] > tmax)
			tmax = tnow[p];
	for (p = 0; p < O.nproc; p++) {
		/* the final measurement is at or after every event */
		int64_t last = next_meas[p];

		while (last <= tmax)
			last += (int64_t)O.interval;
		if (O.offsets)
			emit_offsets(p, last);
	}
	/* Linear interpolation of a function with |f''| <= curv between
	 * points h apart errs by at most h^2/8 curv (here over local time,
	 * which runs at most 1 + drift + wobble slope faster: 1.01 covers
	 * it), the noise enters as a convex combination (<= noise), and two
	 * roundings to whole ns. */
	bound = O.noise + 1.01 * O.interval * O.interval / 8 * curv + 2;
	if (!O.offsets)
		bound = -1;
	printf("events %lld\nprocesses %d\nnodes %d\nlat_intra_ns %" PRId64
	       "\nlat_inter_ns %" PRId64 "\noffset_error_bound_ns %.0f\n"
	       "duration_ns %" PRId64 "\n", nev, O.nproc, O.nnode,
	       O.lat_intra, O.lat_inter, ceil(bound), tmax - T0);
	if (fclose(fo) || fclose(ft)) {
		fprintf(stderr, "sh5_tracegen: %s\n", strerror(errno));
		return 1;
	}
	free(buf);
	free(clk);
	free(tnow);
	free(next_meas);
	free(meas_k);
	return 0;
}
