/* cmd_counters.c - sh5merge counters: counter statistics and anomalies. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "common/outfile.h"
#include "export/counters.h"
#include "common/json.h"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: sh5merge counters -i JOB.h5 -o STATS.json [--sigma 6]\n"
		"                         [--step S] [--top N] [--pretty] "
		"[--summary]\n"
		"\n"
		"Write Chimbuko-style statistics of every counter (each numeric"
		"\n"
		"field of each series) and the SSTD anomalies of a job file as"
		"\n"
		"one JSON packet (version 2: counter_stats, anomaly_stats).\n"
		"\n"
		"  -i, --input FILE    job file written by sh5merge merge\n"
		"  -o, --output FILE   output JSON (- for standard output)\n"
		"      --sigma S       anomaly threshold in standard deviations"
		"\n"
		"                      (default 6)\n"
		"  -s, --step S        only this step (default: every step)\n"
		"      --top N         anomalies listed by --summary (default "
		"10)\n"
		"      --pretty        indent the JSON\n"
		"      --summary       print totals and the top anomalies\n"
		"  -h, --help          this help\n");
}

static void fmt_ns(int64_t ns, char *buf, size_t size)
{
	time_t s = (time_t)(ns / 1000000000);
	struct tm tm;
	char b[32];

	if (!gmtime_r(&s, &tm) ||
	    !strftime(b, sizeof(b), "%Y-%m-%dT%H:%M:%S", &tm))
		snprintf(buf, size, "%" PRId64, ns);
	else
		snprintf(buf, size, "%s.%03dZ", b,
			 (int)((ns % 1000000000) / 1000000));
}

static void print_summary(FILE *f, const char *out, double sigma,
			  const struct sh5_counters_result *r)
{
	char when[48], task[24];
	size_t i;

	fprintf(f, "counters: %zu steps, %zu counters, %" PRIu64 " samples, %"
	       PRIu64 " values -> %s\n",
	       r->napps, r->ncounters, r->samples, r->values, out);
	fprintf(f, "counters: %" PRIu64 " anomalies beyond %g sigma in %zu "
	       "series\n",
	       r->anomalies, sigma, r->nkeys);
	if (!r->ntop)
		return;
	fprintf(f, "%-24s %-12s %-16s %-6s %-26s %14s %10s\n", "time (UTC)", "app",
	       "node", "task", "counter", "value", "score");
	for (i = 0; i < r->ntop; i++) {
		const struct sh5_counters_anomaly *a = &r->top[i];

		fmt_ns(a->time_ns, when, sizeof(when));
		if (a->task >= 0)
			snprintf(task, sizeof(task), "%" PRId64, a->task);
		else
			snprintf(task, sizeof(task), "-");
		fprintf(f, "%-24s %-12s %-16s %-6s %-26s %14.6g %10.2f\n", when,
		       a->app, a->node, task, a->counter, a->value, a->score);
	}
}

static int parse_double(const char *s, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	return errno || end == s || *end || !isfinite(*out) ? -1 : 0;
}

struct cargs {			/* the command line */
	struct sh5_counters_opts o;
	const char *input, *output;
	int pretty, summary;
};

/* Option c (its argument in optarg) into a: -1 to go on, else the exit
 * status (after the help or what is wrong). */
static int set_opt(int c, struct cargs *a)
{
	double d;

	switch (c) {
	case 'i':
		a->input = optarg;
		break;
	case 'o':
		a->output = optarg;
		break;
	case 'g':
		if (parse_double(optarg, &a->o.sigma) < 0 || a->o.sigma <= 0) {
			fprintf(stderr, "sh5merge: counters: bad "
				"--sigma '%s'\n", optarg);
			return 2;
		}
		break;
	case 's':
		a->o.step = optarg;
		break;
	case 't':
		if (parse_double(optarg, &d) < 0 || d < 0 ||
		    d > 1000000 || d != floor(d)) {
			fprintf(stderr, "sh5merge: counters: bad "
				"--top '%s'\n", optarg);
			return 2;
		}
		a->o.top = (size_t)d;
		break;
	case 'P':
		a->pretty = 1;
		break;
	case 'm':
		a->summary = 1;
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

/* The export into a->output, then the summary; the exit status. */
static int run(const struct cargs *a)
{
	struct sh5_counters_result res;
	struct sh5_error err = { "" };
	struct sh5_outfile out = { .fd = -1 };
	struct sh5_json *j = NULL;
	FILE *fp = NULL;
	int rc = 1;

	memset(&res, 0, sizeof(res));
	if (sh5_infile_check(a->input, &err) < 0)
		goto error;
	if (sh5_outfile_open(&out, a->output, &a->input, 1, &err) < 0)
		goto error;
	if (!(fp = sh5_outfile_fp(&out))) {
		sh5_errprintf(&err, "%s: %s", a->output, strerror(errno));
		goto error;
	}
	j = sh5_json_create_file(fp, a->pretty ? SH5_JSON_PRETTY : 0, &err);
	if (!j)
		goto error;
	sh5_json_set_name(j, strcmp(a->output, "-") ? a->output : "stdout");
	if (sh5_counters_export(a->input, j, &a->o, &res, &err) < 0)
		goto error;
	if (sh5_json_finish(j, &err) < 0)
		goto error;
	if (fputc('\n', fp) == EOF) {
		sh5_errprintf(&err, "%s: write failed: %s", a->output,
			      strerror(errno));
		goto error;
	}
	if (sh5_outfile_commit(&out, &err) < 0)
		goto error;
	if (a->summary)
		print_summary(strcmp(a->output, "-") ? stdout : stderr,
			      a->output, a->o.sigma, &res);
	rc = 0;
	goto out;
error:
	fprintf(stderr, "sh5merge: %s\n", err.text);
out:
	sh5_json_destroy(j);
	sh5_outfile_abort(&out);
	sh5_counters_result_free(&res);
	return rc;
}

int cmd_counters(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "output", required_argument, NULL, 'o' },
		{ "sigma", required_argument, NULL, 'g' },
		{ "step", required_argument, NULL, 's' },
		{ "top", required_argument, NULL, 't' },
		{ "pretty", no_argument, NULL, 'P' },
		{ "summary", no_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cargs a;
	int c, rc;

	memset(&a, 0, sizeof(a));
	a.o.sigma = 6.0;
	a.o.top = 10;
	optind = 1;
	while ((c = getopt_long(argc, argv, "i:o:s:h", longopts, NULL)) !=
	       -1)
		if ((rc = set_opt(c, &a)) >= 0)
			return rc;
	if (optind < argc || !a.input || !a.output) {
		if (optind < argc)
			fprintf(stderr, "sh5merge: counters: unexpected "
				"argument '%s'\n", argv[optind]);
		else
			fprintf(stderr, "sh5merge: counters: -i and -o are "
				"required\n");
		usage(stderr);
		return 2;
	}
	if (!a.summary)
		a.o.top = 0;
	return run(&a);
}
