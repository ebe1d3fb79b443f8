/* cmd_extract.c - sh5merge extract: series or totals of a job file as CSV. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli_util.h"
#include "common/outfile.h"
#include "commands.h"
#include "common/error.h"
#include "merge/extract.h"

static void usage(FILE *f)
{
	fprintf(f,
"Usage: sh5merge extract -i JOB.h5 [OPTIONS]\n"
"\n"
"Write series or totals of a job file as CSV with a header row.\n"
"\n"
"  -i, --input FILE     the job file (ours or sh5util's)\n"
"  -s, --step S         only step S (number, batch, extern, ...)\n"
"  -S, --series NAME    Tasks (default), Energy, Filesystem, Network or\n"
"                       another series name\n"
"  -n, --node N         only node N\n"
"  -t, --task T         only task T (series Tasks; or the member T of\n"
"                       another series group)\n"
"  -F, --field F        only field F: one column per node (per task for\n"
"                       Tasks), rows aligned by EpochTime\n"
"  -l, --level L        timeseries (default) or totals\n"
"  -o, --output FILE    the CSV file (default: standard output)\n"
"  -h, --help           this help\n"
"\n"
"Exit status: 0 ok, 1 error, 2 usage.\n");
}

static const char *key_name(const struct sh5_extract *o)
{
	return strcmp(o->series, "Tasks") ? "Series" : "Task";
}

static void warn_cb(void *arg, const char *msg)
{
	(void)arg;
	cli_warn(NULL, "%s", msg);
}

static void progress_cb(void *arg, size_t done, size_t total)
{
	(void)arg;
	cli_progress("extracting", done, total);
}

/* The options into o.  -1 go on, else the exit status (help, usage). */
static int parse_opts(int argc, char **argv, struct sh5_extract *o)
{
	static const struct option lopts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "step", required_argument, NULL, 's' },
		{ "series", required_argument, NULL, 'S' },
		{ "node", required_argument, NULL, 'n' },
		{ "task", required_argument, NULL, 't' },
		{ "field", required_argument, NULL, 'F' },
		{ "level", required_argument, NULL, 'l' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	memset(o, 0, sizeof(*o));
	o->series = "Tasks";
	optind = 1;
	while ((c = getopt_long(argc, argv, "i:s:S:n:t:F:l:o:h", lopts,
				NULL)) != -1) {
		switch (c) {
		case 'i': o->input = optarg; break;
		case 's': o->step = optarg; break;
		case 'S': o->series = optarg; break;
		case 'n': o->node = optarg; break;
		case 't': o->task = optarg; break;
		case 'F': o->field = optarg; break;
		case 'l':
			if (!strcmp(optarg, "totals") ||
			    !strcasecmp(optarg, "Node:Totals"))
				o->totals = 1;
			else if (strcmp(optarg, "timeseries") &&
				 strcasecmp(optarg, "Node:TimeSeries")) {
				cli_error(NULL,
					  "--level: timeseries or totals");
				return 2;
			}
			break;
		case 'o': o->output = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc || !o->input) {
		cli_error(NULL, "extract: %s", optind < argc ?
			  "unexpected argument" : "-i JOB.h5 is required");
		usage(stderr);
		return 2;
	}
	if (o->field && o->totals) {
		cli_error(NULL, "--field works on time series only");
		return 2;
	}
	return -1;
}

/* The header every entry's ops write (malloc'd in *first): all the same
 * unless --field.  0, or -1 reported. */
static int common_header(const struct sh5_extract *o,
			 const struct sh5_extract_sel *v, size_t n,
			 char **first)
{
	size_t i;

	*first = sh5_extract_header(&v[0], o->totals);
	for (i = 1; i < n && !o->field; i++) {
		char *h;
		int same;

		/* Same file type, ops and group as the one before (which
		 * matched): the same header. */
		if (v[i].tkind >= 0 && v[i].tkind == v[i - 1].tkind &&
		    !strcmp(v[i].e.parent, v[i - 1].e.parent))
			continue;
		h = sh5_extract_header(&v[i], o->totals);
		same = h && *first && !strcmp(h, *first);

		free(h);
		if (!same) {
			cli_error(o->input, "%s/%s/%s: fields differ from "
				  "%s/%s/%s (select one step or node)",
				  v[i].e.step, v[i].e.node, v[i].e.path,
				  v[0].e.step, v[0].e.node, v[0].e.path);
			return -1;
		}
	}
	return 0;
}

/* The CSV into the open output file: header row, then the rows.  0, or
 * -1 reported. */
static int write_csv(struct sh5_extract *o, hid_t f,
		     struct sh5_extract_sel *v, size_t n, const char *first,
		     struct sh5_outfile *of)
{
	static char obuf[1 << 20];
	struct sh5_error err = { "" };
	FILE *out = sh5_outfile_fp(of);

	if (!out) {
		cli_error(o->output, "%s", strerror(errno));
		return -1;
	}
	setvbuf(out, obuf, _IOFBF, sizeof(obuf));
	if (!o->field)
		fprintf(out, "Step,Node,%s%s%s", o->group ? key_name(o) : "",
			o->group ? "," : "", first ? first : "\n");
	if (o->field ? sh5_extract_aligned(o, v, n, out, &err) :
	    o->totals ? sh5_extract_totals(o, f, v, n, out, &err) :
	    sh5_extract_timeseries(o, v, n, out, &err)) {
		cli_error(NULL, "%s", err.text);
		return -1;
	}
	errno = 0;
	if (fflush(out) != 0 || ferror(out) || o->out_errno) {
		int e = o->out_errno ? o->out_errno : errno;

		cli_error(o->output ? o->output : "stdout", "write failed: %s",
			  strerror(e ? e : EIO));
		return -1;
	}
	return 0;
}

/* The input checked and opened (f), its series selected (v, n).  0, or
 * the exit status (reported). */
static int open_input(struct sh5_extract *o, hid_t *f,
		      struct sh5_extract_sel **v, size_t *n)
{
	struct sh5_error err = { "" };

	if (sh5_infile_check(o->input, &err) < 0 ||
	    (o->output && sh5_outfile_same(o->output, &o->input, 1) &&
	     sh5_errprintf(&err, "%s: is also the input; refusing to "
			   "overwrite it", o->output))) {
		cli_error(NULL, "%s", err.text);
		return 1;
	}
	sh5_error_h5_silence();
	if ((*f = H5Fopen(o->input, H5F_ACC_RDONLY, H5P_DEFAULT)) < 0) {
		sh5_errprintf_h5(&err, "cannot open");
		cli_error(o->input, "%s", err.text);
		return 1;
	}
	o->warn = warn_cb;
	o->progress = progress_cb;
	if (sh5_extract_select(*f, o, v, n, &err) < 0) {
		cli_error(NULL, "%s", err.text);
		return 1;
	}
	if (o->task && !o->group) {
		cli_error(NULL, "--task needs a series group such as Tasks");
		return 2;
	}
	if (!*n) {
		cli_error(o->input, "no series %s%s%s%s%s%s%s", o->series,
			  o->step ? " in step " : "", o->step ? o->step : "",
			  o->node ? " on node " : "", o->node ? o->node : "",
			  o->task ? " of task " : "", o->task ? o->task : "");
		return 1;
	}
	return 0;
}

int cmd_extract(int argc, char **argv)
{
	struct sh5_extract o;
	struct sh5_extract_sel *v = NULL;
	size_t n = 0;
	hid_t f = -1;
	struct sh5_outfile of = { .fd = -1 };
	struct sh5_error oerr = { "" };
	char *first = NULL;
	int status;

	/* The process ends with this command, and with it the input (open
	 * read-only, nothing to write back): no teardown of HDF5 at exit
	 * (before its first call; see out:). */
	H5dont_atexit();
	if ((status = parse_opts(argc, argv, &o)) >= 0)
		return status;
	cli_heap_hugepages(32u << 20);
	if ((status = open_input(&o, &f, &v, &n)) != 0 ||
	    (status = 1, common_header(&o, v, n, &first) < 0))
		goto out;
	if (sh5_outfile_open(&of, o.output ? o.output : "-", &o.input, 1,
			     &oerr) < 0) {
		cli_error(NULL, "%s", oerr.text);
		goto out;
	}
	/* Its own temporary file (not a descriptor shared with others):
	 * written without the page cache. */
	o.out_private = of.tmp != NULL;
	if (write_csv(&o, f, v, n, first, &of) < 0)
		goto out;
	if (sh5_outfile_commit(&of, &oerr) < 0) {
		cli_error(NULL, "%s", oerr.text);
		goto out;
	}
	status = 0;
out:
	sh5_outfile_abort(&of);
	free(first);
	/* The output is committed or removed by now.  The datasets and the
	 * file are left open for the exit to release: closing 256 datasets
	 * one by one, then the file, then HDF5's free lists cost a tenth of
	 * the CPU of a 230k-row extraction (doc/performance.md). */
	sh5_extract_free(v, n, 0);
	return status;
}
