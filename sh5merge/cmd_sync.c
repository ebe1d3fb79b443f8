/* cmd_sync.c - sh5merge sync: synchronize the timestamps of an event
 * trace (CSV contract v1).  See doc/sh5merge-sync.md. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "commands.h"
#include "common/outfile.h"
#include "sync/timesync.h"
#include "sync/trace.h"
#include "sync/syncrun.h"
#include "common/sort.h"

static void usage(FILE *f)
{
	fprintf(f,
"Usage: sh5merge sync IN.csv -o OUT.csv [--method offset|clc] [--mu-ns N]\n"
"                     [--mu-intra-ns N] [--gamma G] [--stats]\n"
"                     [--allow-partial]\n"
"\n"
"Put the events of an event trace (CSV, version 1) on the reference clock.\n"
"\n"
"  -o, --output FILE     where to write the corrected trace (required)\n"
"  -m, --method M        offset: piecewise-linear interpolation of each\n"
"                        location's OFFSET measurements only;\n"
"                        clc (default): offset, then the controlled\n"
"                        logical clock (no clock-condition violation left)\n"
"      --mu-ns N         minimum message latency in ns for every link\n"
"                        (overrides #mu and #mu-intra)\n"
"      --mu-intra-ns N   minimum latency within a node (overrides\n"
"                        #mu-intra and --mu-ns for intra-node links)\n"
"      --gamma G         forward amortization factor, 0 < G <= 1\n"
"                        (default 0.99)\n"
"  -s, --stats           print violations, moves and interval changes\n"
"      --allow-partial   correct what can be corrected, report the rest\n"
"      --timing          print the time each phase took on stderr\n"
"  -h, --help            this help\n");
}

static double now(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* System CPU seconds of this process so far; page faults in *flt. */
static double sys_now(double *flt)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) < 0)
		return 0;
	*flt = (double)ru.ru_minflt + (double)ru.ru_majflt;
	return (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

/* --timing: wall-clock, CPU and system CPU seconds and page faults of
 * each phase on stderr (t0: the four at the end of the previous phase) */
static void phase(int on, const char *name, double *t0)
{
	double w, c, y, f;

	if (!on)
		return;
	w = now(CLOCK_MONOTONIC);
	c = now(CLOCK_PROCESS_CPUTIME_ID);
	y = sys_now(&f);
	fprintf(stderr, "sh5merge: sync: %-8s %.3f s (cpu %.3f s, sys %.3f "
		"s, %.0f page faults)\n", name, w - t0[0], c - t0[1],
		y - t0[2], f - t0[3]);
	t0[0] = w;
	t0[1] = c;
	t0[2] = y;
	t0[3] = f;
}

static void phase_cb(void *arg, const char *name)
{
	phase(1, name, arg);
}

static int parse_ns(const char *s, int64_t *v)
{
	char *end;
	long long x;

	errno = 0;
	x = strtoll(s, &end, 10);
	if (errno || end == s || *end || x < 0)
		return -1;
	*v = x;
	return 0;
}

static int cmp_problem(const void *a, const void *b)
{
	const struct sh5_trace_problem *x = a, *y = b;

	return x->line < y->line ? -1 : x->line > y->line;
}

/* The kept problems, by line number. */
static void print_problems(struct sh5_trace *t, const char *in,
			   const char *what)
{
	size_t i, n = t->nproblems < SH5_TRACE_MAX_PROBLEMS ?
		      t->nproblems : SH5_TRACE_MAX_PROBLEMS;

	sh5_qsort(t->problem, n, sizeof(t->problem[0]), cmp_problem);
	for (i = 0; i < n; i++) {
		if (t->problem[i].line)
			fprintf(stderr, "sh5merge: %s:%u: %s%s\n", in,
				t->problem[i].line, what, t->problem[i].text);
		else
			fprintf(stderr, "sh5merge: %s: %s%s\n", in, what,
				t->problem[i].text);
	}
	if (t->nproblems > n)
		fprintf(stderr, "sh5merge: %s: ... and %zu more problems\n",
			in, t->nproblems - n);
}

static void print_stats(const struct sh5_trace *t,
			const struct sh5_sync_stage *st, int nst,
			int64_t mu_intra, enum sh5_mu_source si,
			int64_t mu_inter, enum sh5_mu_source se,
			const struct sh5_clc_result *cr)
{
	static const char *const names[3] = { "input", "offset", "clc" };
	static const char *const bk[SH5_SYNC_NBUCKET] = {
		"unchanged", "<=0.01%", "<=0.1%", "<=1%", "<=10%",
		"<=100%", ">100%"
	};
	int i, b;

	printf("events %zu, messages %zu, collective instances %zu, "
	       "locations %zu, nodes %zu\n", t->nev, t->nmsg, t->ninst,
	       t->nloc, t->nnode);
	printf("mu: intra-node %" PRId64 " ns (%s), inter-node %" PRId64
	       " ns (%s)\n", mu_intra, sh5_syncrun_mu_source(si), mu_inter,
	       sh5_syncrun_mu_source(se));
	printf("%-34s", "");
	for (i = 0; i < nst; i++)
		printf(" %14s", names[i]);
	printf("\n%-34s", "p2p clock-condition violations");
	for (i = 0; i < nst; i++)
		printf(" %14" PRIu64, st[i].viol_p2p);
	printf("\n%-34s", "collective violations (ends)");
	for (i = 0; i < nst; i++)
		printf(" %14" PRIu64, st[i].viol_coll);
	printf("\n%-34s", "events moved (vs previous stage)");
	for (i = 0; i < nst; i++)
		if (i == 0)
			printf(" %14s", "-");
		else
			printf(" %14" PRIu64, st[i].moved);
	printf("\n%-34s", "largest correction (ns)");
	for (i = 0; i < nst; i++)
		if (i == 0)
			printf(" %14s", "-");
		else
			printf(" %14" PRId64, st[i].max_corr);
	printf("\nlocal intervals changed (vs input, share of %" PRIu64
	       "):\n", st[0].nintervals);
	for (b = 0; b < SH5_SYNC_NBUCKET; b++) {
		printf("  %-32s", bk[b]);
		for (i = 0; i < nst; i++)
			printf(" %13.4f%%", st[i].nintervals ?
			       100.0 * (double)st[i].bucket[b] /
			       (double)st[i].nintervals : 0.0);
		printf("\n");
	}
	if (cr)
		printf("clc: %" PRIu64 " receiving events put forward "
		       "(largest jump %" PRId64 " ns), %" PRIu64 " events "
		       "amortized backward, %" PRIu64 " constraints released\n",
		       cr->jumps, cr->max_jump, cr->amortized, cr->released);
}

static const struct option opts[] = {
	{ "output", required_argument, NULL, 'o' },
	{ "method", required_argument, NULL, 'm' },
	{ "mu-ns", required_argument, NULL, 'M' },
	{ "mu-intra-ns", required_argument, NULL, 'I' },
	{ "gamma", required_argument, NULL, 'g' },
	{ "stats", no_argument, NULL, 's' },
	{ "allow-partial", no_argument, NULL, 'p' },
	{ "timing", no_argument, NULL, 'T' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

/* Option c (getopt_long's return, value in optarg) into so, *out or
 * *timing.  Returns -1 to go on, else the exit status (0 after --help,
 * 2 for bad usage, said on stderr). */
static int one_opt(int c, char **argv, struct sh5_syncrun_opts *so,
		   const char **out, int *timing)
{
	switch (c) {
	case 'o':
		*out = optarg;
		break;
	case 'm':
		if (!strcmp(optarg, "clc")) {
			so->clc = 1;
		} else if (!strcmp(optarg, "offset")) {
			so->clc = 0;
		} else {
			fprintf(stderr, "sh5merge: sync: unknown "
				"method '%s' (offset or clc)\n", optarg);
			return 2;
		}
		break;
	case 'M':
	case 'I':
		if (parse_ns(optarg, c == 'M' ? &so->mu_ns :
			     &so->mu_intra_ns) < 0) {
			fprintf(stderr, "sh5merge: sync: --%s wants "
				"an integer >= 0, not '%s'\n",
				c == 'M' ? "mu-ns" : "mu-intra-ns", optarg);
			return 2;
		}
		break;
	case 'g': {
		char *end;

		errno = 0;
		so->gamma = strtod(optarg, &end);
		if (errno || end == optarg || *end ||
		    !(so->gamma > 0 && so->gamma <= 1)) {
			fprintf(stderr, "sh5merge: sync: --gamma "
				"wants a number in (0,1], not '%s'\n",
				optarg);
			return 2;
		}
		break;
	}
	case 's':
		so->stats = 1;
		break;
	case 'p':
		so->allow_partial = 1;
		break;
	case 'T':
		*timing = 1;
		break;
	case 'h':
		usage(stdout);
		return 0;
	default:
		fprintf(stderr, "sh5merge: sync: bad option '%s'\n",
			argv[optind - 1]);
		usage(stderr);
		return 2;
	}
	return -1;
}

/* The command line into so, *out, *timing; argv[optind] is then the
 * input.  Returns -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, struct sh5_syncrun_opts *so,
		      const char **out, int *timing)
{
	int c, rc;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "o:m:sh", opts, NULL)) != -1)
		if ((rc = one_opt(c, argv, so, out, timing)) >= 0)
			return rc;
	if (optind != argc - 1 || !*out) {
		fprintf(stderr, "sh5merge: sync: %s\n", optind != argc - 1 ?
			"want exactly one input trace" : "-o OUT.csv is "
			"required");
		usage(stderr);
		return 2;
	}
	return -1;
}

/* Refuse an input that is unreadable, not a regular file (it is read
 * twice: parse, then copy with new times) or also the output.  Returns
 * 0, or 1 (said on stderr). */
static int check_files(const char *in, const char *out)
{
	struct sh5_error err = { "" };
	struct stat st;

	if (sh5_infile_check(in, &err) < 0) {
		fprintf(stderr, "sh5merge: %s\n", err.text);
		return 1;
	}
	if (sh5_outfile_same(out, &in, 1)) {
		fprintf(stderr, "sh5merge: %s: is also the input; refusing to "
			"overwrite it\n", out);
		return 1;
	}
	/* The input is read twice (parse, then copy with new times). */
	if (stat(in, &st) == 0 && !S_ISREG(st.st_mode)) {
		fprintf(stderr, "sh5merge: %s: not a regular file (the "
			"input is read twice)\n", in);
		return 1;
	}
	return 0;
}

int cmd_sync(int argc, char **argv)
{
	const char *in, *out = NULL;
	int rc = 1, timing = 0;
	double t0[4] = { now(CLOCK_MONOTONIC),
			 now(CLOCK_PROCESS_CPUTIME_ID), 0, 0 };
	struct sh5_error err = { "" };
	struct sh5_trace *t = NULL;
	int64_t *times = NULL;
	struct sh5_syncrun_opts so;
	struct sh5_syncrun_result res;

	sh5_syncrun_opts_init(&so);
	if ((rc = parse_args(argc, argv, &so, &out, &timing)) >= 0)
		return rc;
	rc = 1;
	in = argv[optind];
	t0[2] = sys_now(&t0[3]);
	if (check_files(in, out))
		return 1;

	t = sh5_trace_read(in, &err);
	if (!t) {
		fprintf(stderr, "sh5merge: %s\n", err.text);
		return 1;
	}
	phase(timing, "read", t0);
	if (t->nproblems && !so.allow_partial) {
		print_problems(t, in, "");
		fprintf(stderr, "sh5merge: %s: %zu problem%s, nothing "
			"written (--allow-partial corrects the rest)\n", in,
			t->nproblems, t->nproblems == 1 ? "" : "s");
		goto out;
	}
	so.phase = timing ? phase_cb : NULL;
	so.phase_arg = t0;
	if (sh5_syncrun(t, &so, &res, &err) < 0) {
		print_problems(t, in, "");
		fprintf(stderr, "sh5merge: %s: %s; nothing written\n", in,
			err.text);
		goto out;
	}
	times = res.times;
	if (sh5_trace_write(t, in, times, out, &err) < 0) {
		fprintf(stderr, "sh5merge: %s\n", err.text);
		goto out;
	}
	phase(timing, "write", t0);
	if (t->nproblems) {
		print_problems(t, in, "left uncorrected: ");
		fprintf(stderr, "sh5merge: %s: %zu problem%s left "
			"uncorrected (--allow-partial)\n", in, t->nproblems,
			t->nproblems == 1 ? "" : "s");
	}
	if (so.stats)
		print_stats(t, res.st, res.nst, res.mu_intra, res.src_intra,
			    res.mu_inter, res.src_inter,
			    so.clc ? &res.cr : NULL);
	rc = 0;
out:
	free(times);
	sh5_trace_destroy(t);
	return rc;
}
