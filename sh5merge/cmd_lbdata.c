/* cmd_lbdata.c - sh5merge lbdata: export a job file as vt LBDatafiles. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "commands.h"
#include "export/lbdata.h"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: sh5merge lbdata -i JOB.h5 -o DIR [--step S] [--stem data]\n"
		"                       [--phase-length SECONDS] "
		"[--compress none|brotli]\n"
		"                       [--not-migratable] [--summary]\n"
		"\n"
		"Export one step of a job file as vt LBDatafiles (VOM): one\n"
		"DIR/<stem>.<rank>.json per Slurm task, every rank with the "
		"same phases.\n"
		"\n"
		"  -i, --input FILE        job file written by sh5merge merge\n"
		"  -o, --output DIR        output directory (created if missing)\n"
		"  -s, --step S            step to export (default: the first)\n"
		"      --stem NAME         file name stem (default: data)\n"
		"  -p, --phase-length SEC  phase window in seconds (default 60;"
		"\n"
		"                          0: one phase for the whole step)\n"
		"  -c, --compress MODE     none (default) or brotli (one stream"
		"\n"
		"                          per file, still named .json)\n"
		"      --not-migratable    mark task entities not migratable\n"
		"      --summary           print load imbalance per phase\n"
		"  -h, --help              this help\n");
}

/* Parse a finite, non-negative number of seconds. */
static int parse_seconds(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v < 0)
		return -1;
	*out = v;
	return 0;
}

static void fmt_time(double t, char *buf, size_t size)
{
	time_t s = (time_t)floor(t);
	struct tm tm;

	if (!gmtime_r(&s, &tm) ||
	    !strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm))
		snprintf(buf, size, "%.3f", t);
}

static double imbalance(double max, double avg)
{
	return avg > 0 ? max / avg - 1.0 : 0.0;
}

static void print_summary(const char *dir, const char *stem,
			  const struct sh5_lbdata_summary *s)
{
	char when[32];
	int64_t k;

	printf("lbdata: step %s: %" PRId64 " rank files %s/%s.<rank>.json "
	       "(%" PRId64 " tasks with data), %zu nodes, %" PRId64
	       " phases", s->step, s->nranks, dir, stem, s->ntasks, s->nnodes,
	       s->nphases);
	if (s->marks)
		printf(" (application phase marks)\n");
	else
		printf(" of %g s\n", s->phase_length);
	printf("lbdata: %" PRIu64 " samples, %" PRIu64 " bytes of JSON, %"
	       PRIu64 " bytes written\n",
	       s->samples, s->json_bytes, s->file_bytes);
	if (s->events)
		printf("lbdata: events: phases from %s, %" PRIu64
		       " communications (%" PRIu64 " matched messages, %"
		       PRIu64 " sends/receives unmatched), %" PRIu64
		       " objects\n", s->marks ? "marks" : "windows",
		       s->comm_edges, s->p2p_matched, s->unmatched,
		       s->objects);
	if (!s->phases)
		return;
	printf("%-6s %-19s %12s %12s %9s %8s %12s %12s %9s %s\n", "phase",
	       "start (UTC)", "rank max s", "rank avg s", "imbal", "rank",
	       "node max s", "node avg s", "imbal", "node");
	for (k = 0; k < s->nphases; k++) {
		const struct sh5_lbdata_phase_summary *p = &s->phases[k];

		if (s->marks)	/* bounds differ from rank to rank */
			snprintf(when, sizeof(when), "-");
		else
			fmt_time(p->start, when, sizeof(when));
		printf("%-6" PRId64 " %-19s %12.3f %12.3f %9.3f %8" PRId64
		       " %12.3f %12.3f %9.3f %s(%" PRId64 ")\n",
		       p->id, when, p->rank_max, p->rank_avg,
		       imbalance(p->rank_max, p->rank_avg), p->rank_argmax,
		       p->node_max, p->node_avg,
		       imbalance(p->node_max, p->node_avg), p->node_name,
		       p->node_argmax);
	}
}

/* Option c (its argument in optarg) into o and *input: -1 to go on,
 * else the exit status (after the help or what is wrong). */
static int set_opt(int c, struct sh5_lbdata_opts *o, const char **input)
{
	switch (c) {
	case 'i':
		*input = optarg;
		break;
	case 'o':
		o->dir = optarg;
		break;
	case 's':
		o->step = optarg;
		break;
	case 'S':
		if (!optarg[0] || strchr(optarg, '/')) {
			fprintf(stderr, "sh5merge: lbdata: bad --stem "
				"'%s'\n", optarg);
			return 2;
		}
		o->stem = optarg;
		break;
	case 'p':
		if (parse_seconds(optarg, &o->phase_length) < 0) {
			fprintf(stderr, "sh5merge: lbdata: bad "
				"--phase-length '%s'\n", optarg);
			return 2;
		}
		break;
	case 'c':
		if (!strcmp(optarg, "none")) {
			o->compress = SH5_LBDATA_PLAIN;
		} else if (!strcmp(optarg, "brotli")) {
			o->compress = SH5_LBDATA_BROTLI;
		} else {
			fprintf(stderr, "sh5merge: lbdata: bad "
				"--compress '%s' (none or brotli)\n", optarg);
			return 2;
		}
		break;
	case 'M':
		o->migratable = 0;
		break;
	case 'm':
		o->summary = 1;
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

int cmd_lbdata(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "output", required_argument, NULL, 'o' },
		{ "step", required_argument, NULL, 's' },
		{ "stem", required_argument, NULL, 'S' },
		{ "phase-length", required_argument, NULL, 'p' },
		{ "compress", required_argument, NULL, 'c' },
		{ "not-migratable", no_argument, NULL, 'M' },
		{ "summary", no_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct sh5_lbdata_opts o;
	struct sh5_lbdata_summary sum;
	struct sh5_error err = { "" };
	const char *input = NULL;
	int c, rc;

	memset(&o, 0, sizeof(o));
	o.stem = "data";
	o.phase_length = 60.0;
	o.compress = SH5_LBDATA_PLAIN;
	o.migratable = 1;
	optind = 1;
	while ((c = getopt_long(argc, argv, "i:o:s:p:c:h", longopts,
				NULL)) != -1)
		if ((rc = set_opt(c, &o, &input)) >= 0)
			return rc;
	if (optind < argc || !input || !o.dir) {
		if (optind < argc)
			fprintf(stderr, "sh5merge: lbdata: unexpected "
				"argument '%s'\n", argv[optind]);
		else
			fprintf(stderr, "sh5merge: lbdata: -i and -o are "
				"required\n");
		usage(stderr);
		return 2;
	}
	if (mkdir(o.dir, 0777) < 0 && errno != EEXIST) {
		fprintf(stderr, "sh5merge: %s: %s\n", o.dir, strerror(errno));
		return 1;
	}
	if (sh5_lbdata_export(input, &o, &sum, &err) < 0) {
		fprintf(stderr, "sh5merge: %s\n", err.text);
		return 1;
	}
	if (o.summary)
		print_summary(o.dir, o.stem, &sum);
	sh5_lbdata_summary_free(&sum);
	return 0;
}
