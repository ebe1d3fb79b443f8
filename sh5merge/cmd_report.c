/* cmd_report.c - sh5merge report: a self-contained HTML report. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_util.h"
#include "common/outfile.h"
#include "commands.h"
#include "export/report.h"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: sh5merge report JOB.h5 -o REPORT.html [--step S]\n"
		"                       [--bins N] [--sigma S]\n"
		"\n"
		"Write one self-contained HTML file (inline SVG, CSS and script,"
		"\n"
		"nothing fetched) with the job's summary, time series per node"
		"\n"
		"and task, clock offsets, application events (timeline, phases,"
		"\n"
		"imbalance, communication matrix) and counter anomalies.\n"
		"\n"
		"  -o, --output FILE   the HTML file (written whole or not at "
		"all)\n"
		"  -s, --step S        only this step (default: every step)\n"
		"      --bins N        time bins of the line plots (default "
		"600)\n"
		"      --sigma S       anomaly threshold in standard deviations"
		"\n"
		"                      (default 6)\n"
		"  -h, --help          this help\n");
}

static void progress(void *arg, const char *what, size_t done,
		     size_t total)
{
	(void)arg;
	cli_progress(what, done, total);
}

struct report_arg {
	const char *in;
	const struct sh5_report_opts *o;
	struct sh5_report_result *res;
};

/* The report of the job file (a cli_writer_fn). */
static int write_report(void *arg, FILE *f, const char *name,
			struct sh5_error *errp)
{
	const struct report_arg *a = arg;

	return sh5_report_write(a->in, f, name, a->o, a->res, errp);
}

/* Option c (its argument in optarg) into o and *out: -1 to go on, else
 * the exit status (after the help or what is wrong). */
static int set_opt(int c, struct sh5_report_opts *o, const char **out)
{
	char *end;

	switch (c) {
	case 'o':
		*out = optarg;
		break;
	case 's':
		o->step = optarg;
		break;
	case 'b':
		errno = 0;
		o->bins = strtoul(optarg, &end, 10);
		if (errno || *end || o->bins < 16 || o->bins > 10000) {
			cli_error(NULL, "--bins: want 16..10000, not '%s'",
				  optarg);
			return 2;
		}
		break;
	case 'g':
		o->sigma = strtod(optarg, &end);
		if (*end || !(o->sigma > 0)) {
			cli_error(NULL, "--sigma: want a positive number, "
				  "not '%s'", optarg);
			return 2;
		}
		break;
	case 'h':
		usage(stdout);
		return 0;
	default:
		usage(stderr);
		return 2;
	}
	return -1;
}

int cmd_report(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "step", required_argument, NULL, 's' },
		{ "bins", required_argument, NULL, 'b' },
		{ "sigma", required_argument, NULL, 'g' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct sh5_report_opts o = { .progress = progress };
	struct sh5_report_result res;
	struct report_arg ra;
	const char *out = NULL, *in;
	size_t i;
	int c, rc;

	optind = 1;
	while ((c = getopt_long(argc, argv, "o:s:h", opts, NULL)) != -1)
		if ((rc = set_opt(c, &o, &out)) >= 0)
			return rc;
	if (optind != argc - 1 || !out) {
		usage(stderr);
		return 2;
	}
	in = argv[optind];
	{
		struct sh5_error err = { "" };

		if (sh5_infile_check(in, &err) < 0) {
			cli_error(NULL, "%s", err.text);
			return 1;
		}
	}
	if (sh5_outfile_same(out, &in, 1)) {
		cli_error(out, "is the input; refusing to overwrite it");
		return 1;
	}
	ra.in = in;
	ra.o = &o;
	ra.res = &res;
	if (cli_write_out(in, out, write_report, &ra) < 0)
		return 1;
	for (i = 0; i < res.nmissing && i < 16; i++)
		cli_warn(in, "%s", res.missing[i]);
	if (!sh5merge_quiet)
		fprintf(stderr, "sh5merge: %s: report: %zu steps, %zu nodes, "
			"%zu tasks, %zu counters, %llu samples, %llu events "
			"-> %s\n", in, res.nsteps, res.nnodes, res.ntasks,
			res.nseries, (unsigned long long)res.samples,
			(unsigned long long)res.events, out);
	return 0;
}
