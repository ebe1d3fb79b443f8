/* cmd_events.c - sh5merge events: a step's application events of a job
 * file as event-trace CSV v1 (doc/sh5merge.md, "events"). */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_util.h"
#include "common/outfile.h"
#include "commands.h"
#include "sync/jobevents.h"

static void usage(FILE *f)
{
	fprintf(f,
"Usage: sh5merge events [-i] JOB.h5 -o OUT.csv [--raw] [--step S]\n"
"\n"
"Write the application events of one step of a job file as an event\n"
"trace (CSV, version 1: see `sh5merge sync`).\n"
"\n"
"  -i, --input FILE    the job file (or as the only argument)\n"
"  -o, --output FILE   where to write the trace (required)\n"
"  -r, --raw           the times as recorded (each node's own clock), with\n"
"                      the nodes' clock-offset measurements as OFFSET lines;\n"
"                      default: the corrected times `merge --sync clc` stored\n"
"  -s, --step S        the step (default: the only step with events)\n"
"  -h, --help          this help\n");
}

struct csv_arg {
	const struct sh5_evstep *s;
	int raw;
};

/* The trace as CSV (a cli_writer_fn). */
static int write_csv(void *arg, FILE *f, const char *name,
		     struct sh5_error *errp)
{
	const struct csv_arg *a = arg;

	return sh5_evstep_write_csv(a->s, f, name, !a->raw, errp);
}

int cmd_events(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "input", required_argument, NULL, 'i' },
		{ "raw", no_argument, NULL, 'r' },
		{ "step", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const char *in = NULL, *out = NULL, *step = NULL;
	struct sh5_evstep *s = NULL;
	struct csv_arg ca;
	hid_t f = -1;
	int raw = 0, c, rc = 1;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "o:i:rs:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 'i':
			in = optarg;
			break;
		case 'r':
			raw = 1;
			break;
		case 's':
			step = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			fprintf(stderr, "sh5merge: events: bad option '%s'\n",
				argv[optind - 1]);
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc - (in ? 0 : 1) || !out) {
		fprintf(stderr, "sh5merge: events: %s\n",
			optind != argc - (in ? 0 : 1) ?
			"want exactly one job file" : "-o OUT.csv is required");
		usage(stderr);
		return 2;
	}
	if (!in)
		in = argv[optind];
	if (sh5_outfile_same(out, &in, 1)) {
		cli_error(out, "is also the input; refusing to overwrite it");
		return 1;
	}
	if (!(s = cli_read_events(in, step, raw, &f)))
		return 1;
	ca.s = s;
	ca.raw = raw;
	if (cli_write_out(in, out, write_csv, &ca) < 0)
		goto out;
	rc = 0;
out:
	sh5_evstep_free(s);
	H5Fclose(f);
	return rc;
}
